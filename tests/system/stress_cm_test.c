// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Connection-manager stress, meant to run under ThreadSanitizer
 * and under AddressSanitizer: ids destroyed, migrated and re-created by
 * one thread while other threads read their channels, and a flood of
 * p2p-tagged requests at an ordinary listener.  Written as an outside
 * program: its own poll loops, QPs and CQs, its own error handling.
 *
 *   stress_cm_test p2p_churn ADDR1 ADDR2 [SECONDS]
 *   stress_cm_test migrate ADDR [SECONDS]
 *   stress_cm_test threads8 ADDR [ROUNDS]
 *   stress_cm_test flood ADDR1 ADDR2 [REQUESTS]
 *
 * What each checks is written above its scenario.  Prints "PASS name" or
 * "FAIL name: why" (tests/system/harness.h); the sanitizers add their
 * own report and exit status.  No timing thresholds: every wait is a
 * bound past which an event counts as lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "harness.h"
#include "stress_cm.h"

/* --- small helpers ------------------------------------------------------- */

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sleep_ms(unsigned int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000,
			      .tv_nsec = (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* A per-thread random number (rand() is not thread-safe). */
unsigned int rnd(unsigned int *seed, unsigned int n)
{
	*seed = *seed * 1103515245u + 12345u;
	return (*seed >> 16) % n;
}

struct sockaddr *sa_port(const char *host, unsigned short port,
			 struct sockaddr_storage *ss)
{
	hx_parse_addr(host, port, ss);
	return (struct sockaddr *)ss;
}

struct rdma_event_channel *channel(bool nonblock)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (!ch)
		hx_fail("rdma_create_event_channel: %s", strerror(errno));
	/*
	 * Channels with p2p ids run the library's timers inside
	 * rdma_get_cm_event: rdma_cm_p2p(7) says to read them non-blocking.
	 */
	if (nonblock &&
	    fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK))
		hx_fail("O_NONBLOCK: %s", strerror(errno));
	return ch;
}

/*
 * The next event on @ch within @ms, or NULL: poll(2) on the fd, then
 * rdma_get_cm_event (blocking unless the fd is O_NONBLOCK).
 */
struct rdma_cm_event *next_event(struct rdma_event_channel *ch, int ms)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	uint64_t end = now_ns() + (uint64_t)ms * 1000000ull;
	struct rdma_cm_event *e;
	uint64_t now;
	int n;

	while ((now = now_ns()) < end) {
		n = poll(&pfd, 1, (int)((end - now) / 1000000) + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			hx_fail("poll: %s", strerror(errno));
		if (n == 0)
			return NULL;
		if (!rdma_get_cm_event(ch, &e))
			return e;
		if (errno != EAGAIN && errno != EINTR)
			hx_fail("rdma_get_cm_event: %s", strerror(errno));
	}
	return NULL;
}

/* The next event that is not a TIMEWAIT_EXIT, or fail naming @what. */
struct rdma_cm_event *must_event(struct rdma_event_channel *ch,
				 const char *what)
{
	struct rdma_cm_event *e;

	for (;;) {
		e = next_event(ch, LOST_MS);
		if (!e)
			hx_fail("%s: no event within %d ms (lost)", what,
				LOST_MS);
		if (e->event != RDMA_CM_EVENT_TIMEWAIT_EXIT)
			return e;
		rdma_ack_cm_event(e);
	}
}

/* Expect @type on @id (any id when NULL); the event is acked. */
void expect_ack(struct rdma_event_channel *ch, struct rdma_cm_id *id,
		enum rdma_cm_event_type type)
{
	struct rdma_cm_event *e = must_event(ch, rdma_event_str(type));

	if (e->event != type || (id && e->id != id))
		hx_fail("want %s, got %s status %d", rdma_event_str(type),
			rdma_event_str(e->event), e->status);
	rdma_ack_cm_event(e);
}

struct rdma_cm_id *new_id(struct rdma_event_channel *ch, void *ctx)
{
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, ctx, RDMA_PS_TCP))
		hx_fail("rdma_create_id: %s", strerror(errno));
	return id;
}

/* Resolve @id (alone on @ch) from @src (may be NULL) to @dst. */
void resolve(struct rdma_event_channel *ch, struct rdma_cm_id *id,
	     struct sockaddr *src, struct sockaddr *dst)
{
	if (rdma_resolve_addr(id, src, dst, 5000))
		hx_fail("rdma_resolve_addr: %s", strerror(errno));
	expect_ack(ch, id, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (rdma_resolve_route(id, 5000))
		hx_fail("rdma_resolve_route: %s", strerror(errno));
	expect_ack(ch, id, RDMA_CM_EVENT_ROUTE_RESOLVED);
}

/* An RC QP on @id with a CQ of the caller's own. */
struct ibv_cq *make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr;
	struct ibv_cq *cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);

	if (!cq)
		hx_fail("ibv_create_cq: %s", strerror(errno));
	memset(&attr, 0, sizeof(attr));
	attr.send_cq = cq;
	attr.recv_cq = cq;
	attr.cap.max_send_wr = 2;
	attr.cap.max_recv_wr = 2;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.qp_type = IBV_QPT_RC;
	if (rdma_create_qp(id, NULL, &attr))
		hx_fail("rdma_create_qp: %s", strerror(errno));
	return cq;
}

/* Destroy @id with its QP and CQ (each may be absent). */
void drop_id(struct rdma_cm_id *id, struct ibv_cq *cq)
{
	if (id->qp)
		rdma_destroy_qp(id);
	if (cq && ibv_destroy_cq(cq))
		hx_fail("ibv_destroy_cq: %s", strerror(errno));
	if (rdma_destroy_id(id))
		hx_fail("rdma_destroy_id: %s", strerror(errno));
}

struct rdma_conn_param conn_param(const void *data, uint8_t len, uint8_t p2p)
{
	struct rdma_conn_param p;

	memset(&p, 0, sizeof(p));
	p.private_data = data;
	p.private_data_len = len;
	p.responder_resources = 1;
	p.initiator_depth = 1;
	p.retry_count = 7;
	p.rnr_retry_count = 7;
	p.peer2peer_mode = p2p;
	return p;
}

struct rdma_cm_id *listen_on(struct rdma_event_channel *ch, struct sockaddr *sa,
			     int p2p, int backlog)
{
	struct rdma_cm_id *id = new_id(ch, NULL);
	int tries;

	if (p2p >= 0 &&
	    rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_PEER2PEER, &p2p,
			    sizeof(p2p)))
		hx_fail("RDMA_OPTION_ID_PEER2PEER: %s", strerror(errno));
	/* A port just released by a destroyed listener may lag briefly. */
	for (tries = 0; rdma_bind_addr(id, sa); tries++) {
		if (errno != EADDRINUSE || tries == 100)
			hx_fail("rdma_bind_addr: %s", strerror(errno));
		sleep_ms(10);
	}
	if (rdma_listen(id, backlog))
		hx_fail("rdma_listen: %s", strerror(errno));
	return id;
}

void start_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
	int ret = pthread_create(t, NULL, fn, arg);

	if (ret)
		hx_fail("pthread_create: %s", strerror(ret));
}

int arg_int(int argc, char **argv, int i, int def, int lo, int hi)
{
	char *end;
	long v;

	if (argc <= i)
		return def;
	v = strtol(argv[i], &end, 10);
	if (*end || v < lo || v > hi)
		hx_fail("argument '%s': want a number in %d..%d", argv[i], lo,
			hi);
	return (int)v;
}

long vmrss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	long kib = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static const struct hx_scenario scenarios[] = {
	{"p2p_churn", "ADDR1 ADDR2 [SECONDS]", run_p2p_churn},
	{"migrate", "ADDR [SECONDS]", run_migrate},
	{"threads8", "ADDR [ROUNDS]", run_threads8},
	{"flood", "ADDR1 ADDR2 [REQUESTS]", run_flood},
};

int main(int argc, char **argv)
{
	return hx_main(argc, argv, scenarios,
		       sizeof(scenarios) / sizeof(scenarios[0]));
}
