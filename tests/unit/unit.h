/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * What every unit test file shares: its suite's declaration (suites.h,
 * run by unit_runner.c), and the few helpers that tests driving the
 * public API through the fakes all need.
 */
#ifndef UNIT_H
#define UNIT_H

#include <arpa/inet.h>
#include <check.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>

/* Each suite's constructor, and each mode the runner runs again in. */
#define UNIT_SUITE(name) Suite *name##_suite(void);
#define UNIT_CHILD(flag, fn) int fn(int argc, char **argv);
#include "suites.h"
#undef UNIT_SUITE
#undef UNIT_CHILD

/*
 * @ms stretched as Check stretches its own bounds where tests share a
 * loaded machine (CK_TIMEOUT_MULTIPLIER, run-all.sh's host lane): such a
 * bound only tells a hung child from a slow one.
 */
static inline long unit_bound_ms(int ms)
{
	const char *m = getenv("CK_TIMEOUT_MULTIPLIER");
	double f = m ? strtod(m, NULL) : 1;

	return f > 1 && f < 1000 ? (long)(ms * f) : ms;
}

/*
 * Child @pid's wait status within @ms milliseconds (unit_bound_ms); one
 * still running then is killed (its status says so), so a hung child
 * fails a test rather than hanging it.
 */
static inline int unit_wait_child(pid_t pid, int ms)
{
	long n, polls = unit_bound_ms(ms) / 10;
	int status = 0;

	for (n = 0; n < polls && !waitpid(pid, &status, WNOHANG); n++)
		usleep(10000);
	if (n == polls) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	return status;
}

/*
 * A child that runs @check alone and exits with its verdict: whether it
 * passed.  A child that hangs is the test's timeout.  @check uses no
 * Check assert (the child may be a copy of a process with other threads).
 */
static inline bool unit_child_passes(bool (*check)(void))
{
	int status;
	pid_t pid = fork();

	if (!pid)
		_exit(check() ? 0 : 1);
	return pid > 0 && waitpid(pid, &status, 0) == pid &&
	       WIFEXITED(status) && !WEXITSTATUS(status);
}

/*
 * Twenty forks while another thread runs @busy(@arg) until *@stop: each
 * child, without that thread (which may have held a lock at the fork),
 * must pass @check(@arg) at once (a second, unit_bound_ms).  1 once one
 * did not (a child that hung is killed; no more forks), 0 if all did, -1
 * if the thread could not start.
 * Without Check's asserts: a preloaded child mode uses it too.
 */
static inline int unit_forks_failing_beside(void *(*busy)(void *), void *arg,
					    bool *stop,
					    bool (*check)(void *arg))
{
	int i, status, failed = 0;
	pthread_t t;
	pid_t pid;

	if (pthread_create(&t, NULL, busy, arg))
		return -1;
	for (i = 0; i < 20 && !failed; i++) {
		pid = fork();
		if (!pid)
			_exit(check(arg) ? 0 : 1);
		status = pid > 0 ? unit_wait_child(pid, 1000) : -1;
		if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			failed++;
	}
	__atomic_store_n(stop, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	return failed;
}

/* The same in a test: every child passes. */
static inline void unit_forks_beside(void *(*busy)(void *), void *arg,
				     bool *stop, bool (*check)(void *arg))
{
	ck_assert_int_eq(unit_forks_failing_beside(busy, arg, stop, check), 0);
}

struct unit_call_loop {
	void (*call)(void);
	bool stop;
};

static inline void *unit_call_again(void *arg)
{
	struct unit_call_loop *l = arg;

	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE))
		l->call();
	return NULL;
}

static inline bool unit_call_once(void *arg)
{
	((struct unit_call_loop *)arg)->call();
	return true;
}

/*
 * The same for one call that takes a lock and returns: another thread
 * makes it in a loop, each child once (and must not hang in it).
 */
static inline void unit_forks_beside_calls(void (*call)(void))
{
	struct unit_call_loop l = {.call = call};

	unit_forks_beside(unit_call_again, &l, &l.stop, unit_call_once);
}

/* Whether @fd is readable right now (an outside program's poll). */
static inline bool unit_readable(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

/* Milliseconds of CLOCK_MONOTONIC since @t0. */
static inline long unit_ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* A small QP of @type with no CQs given (the library makes them). */
static inline struct ibv_qp_init_attr unit_qp_attr(enum ibv_qp_type type)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = type,
		.cap = {.max_send_wr = 2,
			.max_recv_wr = 2,
			.max_send_sge = 1,
			.max_recv_sge = 1},
	};

	return attr;
}

static inline struct sockaddr_in unit_ipv4(const char *addr, uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(port)};

	inet_pton(AF_INET, addr, &sin.sin_addr);
	return sin;
}

/* A loopback TCP connection: *srv accepted, *cli connected; 0 or -1. */
static inline int unit_tcp_pair(int *srv, int *cli)
{
	struct sockaddr_in sin = unit_ipv4("127.0.0.1", 0);
	socklen_t len = sizeof(sin);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(l, 1) || getsockname(l, (struct sockaddr *)&sin, &len))
		return -1;
	*cli = socket(AF_INET, SOCK_STREAM, 0);
	if (*cli < 0 || connect(*cli, (struct sockaddr *)&sin, sizeof(sin)))
		return -1;
	*srv = accept(l, NULL, NULL);
	close(l);
	return *srv < 0 ? -1 : 0;
}

/*
 * The next event on @ch, which must be @type: as an outside program
 * waits, poll(2) on the fd first (bounded), then rdma_get_cm_event.
 */
static inline struct rdma_cm_event *
unit_expect_event(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	ck_assert_int_eq(poll(&pfd, 1, 2000), 1);
	ck_assert_int_eq(rdma_get_cm_event(ch, &ev), 0);
	ck_assert_msg(ev->event == type, "got %s, want %s",
		      rdma_event_str(ev->event), rdma_event_str(type));
	return ev;
}

#ifdef FAKE_UCMA_H
/*
 * Tests on the fake kernel (include fake_ucma.h first): an id of @ps on
 * @ch whose address and route the "kernel" resolved towards @dst, both
 * events read and acked as an application does.
 */
static inline struct rdma_cm_id *unit_resolved_id(struct rdma_event_channel *ch,
						  enum rdma_port_space ps,
						  struct sockaddr *dst)
{
	struct rdma_cm_id *id;
	struct fake_kid *kid;

	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, ps), 0);
	ck_assert_int_eq(rdma_resolve_addr(id, NULL, dst, 2000), 0);
	kid = fake_ucma_kid_of(id);
	ck_assert_ptr_nonnull(kid);
	fake_ucma_event(kid->handle, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	rdma_ack_cm_event(unit_expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	ck_assert_int_eq(rdma_resolve_route(id, 2000), 0);
	fake_ucma_event(kid->handle, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	rdma_ack_cm_event(unit_expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	return id;
}

/*
 * From now on the fake kernel resolves every address at once (or fails
 * it with @addr_status, as ADDR_ERROR) and then every route: for
 * synchronous ids, whose calls wait for the events themselves.
 */
static inline void unit_kernel_resolves(int addr_status)
{
	fake_ucma_answer(RDMA_USER_CM_CMD_RESOLVE_ADDR,
			 addr_status ? RDMA_CM_EVENT_ADDR_ERROR
				     : RDMA_CM_EVENT_ADDR_RESOLVED,
			 addr_status);
	fake_ucma_answer(RDMA_USER_CM_CMD_RESOLVE_ROUTE,
			 RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
}

/*
 * A kernel event's UD parameters as the kernel reports a multicast group
 * or a SIDR peer: @qpn, @qkey and a global AH (DLID 0xc001, DGID ff..03).
 */
static inline void unit_set_ud(struct rdma_ucm_event_resp *r, uint32_t qpn,
			       uint32_t qkey)
{
	ck_assert_ptr_nonnull(r);
	r->param.ud.qp_num = qpn;
	r->param.ud.qkey = qkey;
	r->param.ud.ah_attr.dlid = 0xc001;
	r->param.ud.ah_attr.is_global = 1;
	r->param.ud.ah_attr.grh.dgid[0] = 0xff;
	r->param.ud.ah_attr.grh.dgid[15] = 0x03;
}
#endif

#if defined(FAKE_UCMA_H) && defined(FAKE_VERBS_H)
/*
 * The fixture of tests on both fakes: the kernel and one device (RoCE or
 * InfiniBand) installed afresh, and a new event channel on them.
 */
static inline struct rdma_event_channel *unit_fakes_open(bool roce)
{
	struct rdma_event_channel *ch;

	fake_ucma_install();
	fake_verbs_install(roce);
	ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(ch);
	return ch;
}

static inline void unit_fakes_close(struct rdma_event_channel *ch)
{
	rdma_destroy_event_channel(ch);
	fake_ucma_uninstall();
}

/* A UDP id on @ch resolved towards @dst, with a UD QP of the library's. */
static inline struct rdma_cm_id *unit_ud_id(struct rdma_event_channel *ch,
					    struct sockaddr_in dst)
{
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_UD);
	struct rdma_cm_id *id;

	id = unit_resolved_id(ch, RDMA_PS_UDP, (struct sockaddr *)&dst);
	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), 0);
	return id;
}

/* Destroy unit_ud_id's id (if the test has not) and its QP. */
static inline void unit_ud_id_destroy(struct rdma_cm_id *id)
{
	if (!id)
		return;
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
}
#endif

#endif /* UNIT_H */
