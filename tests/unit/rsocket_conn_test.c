// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The rsocket connection handshake (src/rsocket/conn.c) between two
 * non-blocking stream rsockets of this process, the test playing the
 * network between them: it answers the client's resolutions, carries its
 * CONNECT (with rdma-core's connection data) to the server's listener as
 * a CONNECT_REQUEST, carries the server's ACCEPT back as ESTABLISHED, and
 * joins the two QPs by the fake verbs' wire, after which data flows.  As
 * connect(2)/accept(2) on a non-blocking socket: EINPROGRESS, then
 * EALREADY while it goes on, EISCONN once done (and once ended); a
 * refused connect is ECONNREFUSED; a request that is not an rsocket's is
 * refused, one the library drops does not block a non-blocking raccept.
 */
#include <config.h>

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cm/cma.h"
#include "cm/test_hooks.h"
#include "rsocket/rs.h"
#include "rsocket/wire.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"
#include "rs_cm_carry.h"
#include "rs_pair.h"

static int server, client;
static struct sockaddr_in server_addr;

static void setup(void)
{
	fake_ucma_install();
	fake_verbs_install(true);
	server_addr = unit_ipv4("192.0.2.2", 7471);
	server = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	ck_assert_int_ge(server, 0);
	ck_assert_int_eq(rbind(server, (struct sockaddr *)&server_addr,
			       sizeof(server_addr)),
			 0);
	ck_assert_int_eq(rlisten(server, 4), 0);
	client = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	ck_assert_int_ge(client, 0);
}

static void teardown(void)
{
	rclose(client);
	rclose(server);
	ck_assert_int_eq(fake_verbs_counts().qps, 0);
	fake_ucma_uninstall();
}

static int start_connect(void)
{
	return rconnect(client, (struct sockaddr *)&server_addr,
			sizeof(server_addr));
}

/* The network resolves the client's address and route. */
static void resolve_client(void)
{
	ck_assert_int_eq(start_connect(), -1);
	ck_assert_int_eq(errno, EINPROGRESS);
	fake_ucma_event(kid_of(client), RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	ck_assert_int_eq(start_connect(), -1);
	ck_assert_int_eq(errno, EALREADY);
	fake_ucma_event(kid_of(client), RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	ck_assert_int_eq(start_connect(), -1);
	ck_assert_int_eq(errno, EALREADY);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 1);
}

/* The same, read at once (by a shared listener's relay thread, say). */
static uint32_t carry_request(void)
{
	uint32_t child;

	fake_ucma_hold();
	child = carry_request_to(kid_of(server));
	fake_ucma_release();
	return child;
}

/* The same, and the server's end too: both ends ESTABLISHED. */
static void carry_accept(uint32_t child)
{
	carry_accept_to(kid_of(client));
	ck_assert_ptr_nonnull(
		fake_ucma_event(child, RDMA_CM_EVENT_ESTABLISHED, 0));
}

/*
 * Whether @s's registered buffers start on a page and fill whole pages:
 * with fork support, libibverbs hides their pages from a forked child,
 * which must lose nothing else with them (util/page_buf.h).
 */
static bool registered_on_own_pages(int s)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	struct rsocket *rs = rs_get(s);
	bool own;

	ck_assert_ptr_nonnull(rs);
	own = !((uintptr_t)rs->sbuf % page) && !((uintptr_t)rs->rbuf % page) &&
	      !((uintptr_t)rs->target_buf % page);
	rs_put(rs);
	return own;
}

/* The client connected to the server: the accepted socket. */
static int connect_pair(void)
{
	uint32_t child;
	int s;

	resolve_client();
	child = carry_request();
	s = raccept(server, NULL, NULL);
	ck_assert_int_ge(s, 0);
	carry_accept(child);
	fake_verbs_connect(qp_of(client), qp_of(s));
	ck_assert_int_eq(start_connect(), 0);
	return s;
}

START_TEST(handshake_then_data_both_ways)
{
	struct sockaddr_in peer;
	socklen_t len = sizeof(peer);
	uint32_t child;
	char buf[16];
	int s;

	ck_assert_int_eq(raccept(server, NULL, NULL), -1);
	ck_assert_int_eq(errno, EAGAIN);
	resolve_client();
	child = carry_request();
	s = raccept(server, (struct sockaddr *)&peer, &len);
	ck_assert_int_ge(s, 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_ACCEPT), 1);
	carry_accept(child);
	fake_verbs_connect(qp_of(client), qp_of(s));

	ck_assert_int_eq(start_connect(), 0); /* done now */
	ck_assert_int_eq(start_connect(), -1);
	ck_assert_int_eq(errno, EISCONN);
	ck_assert(registered_on_own_pages(client));
	ck_assert(registered_on_own_pages(s));
	ck_assert_int_eq(rsend(client, "hello", 5, 0), 5);
	ck_assert_int_eq(rrecv(s, buf, sizeof(buf), 0), 5);
	ck_assert_mem_eq(buf, "hello", 5);
	ck_assert_int_eq(rsend(s, "back", 4, 0), 4);
	ck_assert_int_eq(rrecv(client, buf, sizeof(buf), 0), 4);
	ck_assert_mem_eq(buf, "back", 4);
	rclose(s);
}
END_TEST

struct blocked_read {
	int s;
	pthread_t thread;
	char buf[16];
	ssize_t ret;
	int err;
};

static void *blocked_read_run(void *arg)
{
	struct blocked_read *r = arg;

	r->ret = rrecv(r->s, r->buf, sizeof(r->buf), 0);
	r->err = errno;
	return NULL;
}

/* A blocking rrecv on @s in another thread, asleep on the CQ by return. */
static void blocked_read_start(struct blocked_read *r, int s)
{
	struct rsocket *rs = rs_get(s);

	ck_assert_ptr_nonnull(rs);
	ck_assert_int_eq(rfcntl(s, F_SETFL, 0), 0);
	r->s = s;
	ck_assert_int_eq(pthread_create(&r->thread, NULL, blocked_read_run, r),
			 0);
	while (!__atomic_load_n(&rs->cq_armed, __ATOMIC_ACQUIRE))
		sched_yield();
	rs_put(rs);
}

/*
 * The server's process ends without a word (it exits, crashes, or closes
 * a socket that never spoke): no DISCONNECT message, only the CM's
 * DISCONNECTED on the client's id.  A client asleep in rrecv wakes with
 * end-of-stream, as a TCP reader would; before, it slept for ever
 * (BUGS.md rsocket-dead-peer).
 */
START_TEST(a_silent_peer_end_wakes_a_blocked_read)
{
	struct blocked_read r;
	int s = connect_pair();

	blocked_read_start(&r, client);
	ck_assert_ptr_nonnull(
		fake_ucma_event(kid_of(client), RDMA_CM_EVENT_DISCONNECTED, 0));
	ck_assert_int_eq(pthread_join(r.thread, NULL), 0);
	ck_assert_int_eq(r.ret, 0);
	/* Writing to a peer that is gone fails, as after a TCP reset. */
	ck_assert_int_eq(rsend(client, "x", 1, 0), -1);
	rclose(s);
}
END_TEST

/* What the peer sent before its end is read first, then end-of-stream. */
START_TEST(data_sent_before_a_silent_end_is_read_first)
{
	struct pollfd p = {.events = POLLIN};
	char buf[16];
	int s = connect_pair();

	ck_assert_int_eq(rsend(s, "last", 4, 0), 4);
	ck_assert_ptr_nonnull(
		fake_ucma_event(kid_of(client), RDMA_CM_EVENT_DISCONNECTED, 0));
	/* rpoll sees the end (the watch's, asynchronous) within its bound. */
	p.fd = client;
	ck_assert_int_eq(rpoll(&p, 1, 5000), 1);
	ck_assert(p.revents & POLLIN);
	ck_assert_int_eq(rfcntl(client, F_SETFL, 0), 0);
	ck_assert_int_eq(rrecv(client, buf, sizeof(buf), 0), 4);
	ck_assert_mem_eq(buf, "last", 4);
	for (int i = 0; i < 500; i++) {
		p.revents = 0;
		if (rpoll(&p, 1, 10) == 1 && (p.revents & POLLHUP))
			break;
	}
	ck_assert(p.revents & POLLHUP);
	ck_assert_int_eq(rrecv(client, buf, sizeof(buf), 0), 0);
	rclose(s);
}
END_TEST

static bool cm_event_pending(int s)
{
	struct rsocket *rs = rs_get(s);
	bool pending;

	ck_assert_ptr_nonnull(rs);
	pending = rs_cm_event_ready(rs);
	rs_put(rs);
	return pending;
}

/* Other CM events leave the connection alone; a close ends the watch. */
START_TEST(other_cm_events_leave_the_connection_alone)
{
	char buf[16];
	int s = connect_pair();

	ck_assert_ptr_nonnull(
		fake_ucma_event(kid_of(client), RDMA_CM_EVENT_ADDR_CHANGE, 0));
	/* The watch reads it off the channel, and goes on watching. */
	for (int i = 0; i < 5000 && cm_event_pending(client); i++)
		usleep(1000);
	ck_assert(!cm_event_pending(client));
	ck_assert_int_eq(rsend(s, "on", 2, 0), 2);
	ck_assert_int_eq(rfcntl(client, F_SETFL, 0), 0);
	ck_assert_int_eq(rrecv(client, buf, sizeof(buf), 0), 2);
	ck_assert_int_eq(rsend(client, "ok", 2, 0), 2);
	rclose(s);
}
END_TEST

static struct rsocket *ending_rs;
static uint32_t ending_kid;

/*
 * The connection made hook: the peer's end reaches the watch before the
 * call's last look at the state (what a thread switch can do anyway).
 */
static void peer_ends_before_the_last_look(struct rsocket *rs)
{
	if (rs != ending_rs)
		return;
	ck_assert_ptr_nonnull(
		fake_ucma_event(ending_kid, RDMA_CM_EVENT_DISCONNECTED, 0));
	for (int i = 0; i < 5000 && rs_state(rs) != RS_DISCONNECTED; i++)
		usleep(1000);
	ck_assert_int_eq(rs_state(rs), RS_DISCONNECTED);
}

/*
 * A client that sends and closes at once (`echo x | nc`): the accepted
 * socket's first call, which makes the connection, finds it already
 * ended.  It reads the bytes, then the end, as on TCP; it used to fail
 * with ENOTCONN (BUGS.md accept-first-call-enotconn).
 */
START_TEST(the_first_read_of_a_connection_already_ended_gets_its_bytes)
{
	char buf[16];
	int s = connect_pair(); /* its first call is still to come */

	ck_assert_int_eq(rsend(client, "last", 4, 0), 4);

	ending_rs = rs_get(s);
	ck_assert_ptr_nonnull(ending_rs);
	rs_put(ending_rs);
	ending_kid = kid_of(s);
	rs_connect_set_made_hook(peer_ends_before_the_last_look);
	ck_assert_int_eq(rrecv(s, buf, sizeof(buf), 0), 4);
	rs_connect_set_made_hook(NULL);
	ck_assert_mem_eq(buf, "last", 4);
	ck_assert_int_eq(rrecv(s, buf, sizeof(buf), 0), 0);
	/* The CM ends the client's side too (it closed). */
	ck_assert_ptr_nonnull(
		fake_ucma_event(kid_of(client), RDMA_CM_EVENT_DISCONNECTED, 0));
	rclose(s);
}
END_TEST

/*
 * A child forked while the parent's sockets are watched: its copies are
 * not (the watch is the parent's), so freeing them there (what rclose's
 * last reference does first) leaves the parent's watch whole.  (The
 * child does not close them through the fake kernel, which one process
 * models.)
 */
START_TEST(a_forked_child_closes_its_copies_of_watched_sockets)
{
	int status, s = connect_pair();
	pid_t pid = fork();
	char buf[16];

	ck_assert_int_ge(pid, 0);
	if (!pid) {
		struct rsocket *rs = rs_get(client);
		bool watched =
			__atomic_load_n(&rs->pw_watched, __ATOMIC_RELAXED);

		rs_peer_unwatch(rs);
		_exit(watched ? 1 : 0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* The parent's watch still ends its reads at the peer's end. */
	ck_assert_ptr_nonnull(
		fake_ucma_event(kid_of(client), RDMA_CM_EVENT_DISCONNECTED, 0));
	ck_assert_int_eq(rfcntl(client, F_SETFL, 0), 0);
	ck_assert_int_eq(rrecv(client, buf, sizeof(buf), 0), 0);
	rclose(s);
}
END_TEST

/*
 * rpoll for input on an accepted socket whose ESTABLISHED comes between
 * arming the sleep set and the look after it: the look ends the connect,
 * and the sleep must then wait on the CQ, not on the CM channel it armed
 * (drained by that look), or the client's data never wakes it; it used to
 * sleep until its timeout so (PostgreSQL's backend under
 * RDMAV_FORK_SAFE waited out its 60 s for the startup packet).
 */
static uint32_t late_child;

static void established_after_arming(void)
{
	rs_poll_set_armed_hook(NULL);
	ck_assert_ptr_nonnull(
		fake_ucma_event(late_child, RDMA_CM_EVENT_ESTABLISHED, 0));
}

struct polled {
	int s;
	pthread_t thread;
	struct pollfd p;
	int ret;
};

static void *poll_run(void *arg)
{
	struct polled *r = arg;

	r->p = (struct pollfd){.fd = r->s, .events = POLLIN};
	r->ret = rpoll(&r->p, 1, 2000);
	return NULL;
}

START_TEST(a_connect_ended_after_arming_still_wakes_rpoll)
{
	struct polled pr;
	struct rsocket *rs;

	resolve_client();
	late_child = carry_request();
	pr.s = raccept(server, NULL, NULL);
	ck_assert_int_ge(pr.s, 0);
	/* the client is connected; the server's ESTABLISHED comes later */
	carry_accept_to(kid_of(client));
	fake_verbs_connect(qp_of(client), qp_of(pr.s));
	ck_assert_int_eq(start_connect(), 0);

	rs_poll_set_armed_hook(established_after_arming);
	ck_assert_int_eq(pthread_create(&pr.thread, NULL, poll_run, &pr), 0);
	rs = rs_get(pr.s);
	ck_assert_ptr_nonnull(rs);
	/* the look after arming connected it; then rpoll goes to sleep */
	while (!(rs_state(rs) & RS_CONNECTED))
		sched_yield();
	rs_put(rs);
	usleep(100 * 1000);
	ck_assert_int_eq(rsend(client, "hi", 2, 0), 2);
	ck_assert_int_eq(pthread_join(pr.thread, NULL), 0);
	ck_assert_int_eq(pr.ret, 1);
	ck_assert(pr.p.revents & POLLIN);
	rclose(pr.s);
}
END_TEST

START_TEST(a_refused_connect_is_econnrefused)
{
	struct pollfd pfd = {.fd = client, .events = POLLOUT};

	resolve_client();
	fake_ucma_event(kid_of(client), RDMA_CM_EVENT_REJECTED, 28);
	ck_assert_int_eq(rpoll(&pfd, 1, 0), 1);
	ck_assert_int_eq(start_connect(), -1);
	ck_assert_int_eq(errno, ECONNREFUSED);
	ck_assert_int_eq(rsend(client, "x", 1, 0), -1);
}
END_TEST

/* A resolution that timed out is tried again (with a longer timeout). */
START_TEST(a_timed_out_resolution_is_retried)
{
	ck_assert_int_eq(start_connect(), -1);
	ck_assert_int_eq(errno, EINPROGRESS);
	fake_ucma_event(kid_of(client), RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT);
	ck_assert_int_eq(start_connect(), -1);
	ck_assert_int_eq(errno, EALREADY);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR), 2);
	/* Any other address error ends the connect. */
	fake_ucma_event(kid_of(client), RDMA_CM_EVENT_ADDR_ERROR, -ENETUNREACH);
	ck_assert_int_eq(start_connect(), -1);
	ck_assert_int_eq(errno, EHOSTUNREACH);
}
END_TEST

/*
 * A connection that ended (the peer's disconnect) cannot be connected
 * again: EISCONN, and no second QP is made over the first (which leaked
 * the first's completion channel and CQ).
 */
START_TEST(an_ended_connection_does_not_connect_again)
{
	struct pollfd pfd = {.fd = client, .events = POLLIN};
	int s = connect_pair();
	char c;

	/* The server's end takes its ESTABLISHED, then closes. */
	ck_assert_int_eq(rrecv(s, &c, 1, MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EAGAIN);
	rclose(s);
	ck_assert_int_eq(rpoll(&pfd, 1, 1000), 1);
	ck_assert_int_eq(rrecv(client, &c, 1, 0), 0);
	errno = 0;
	ck_assert_int_eq(start_connect(), -1);
	ck_assert_int_eq(errno, EISCONN);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR), 1);
	ck_assert_int_eq(fake_verbs_counts().channels, 1); /* the client's */
}
END_TEST

/* Private data that is not an rsocket's: refused, the accept fails. */
START_TEST(a_foreign_request_is_refused)
{
	struct rdma_ucm_event_resp *r;
	uint32_t child;

	r = fake_ucma_conn_req(kid_of(server), &child);
	ck_assert_ptr_nonnull(r);
	memcpy(r->param.conn.private_data, "not an rsocket", 14);
	r->param.conn.private_data_len = 14;
	ck_assert_int_eq(raccept(server, NULL, NULL), -1);
	ck_assert_int_eq(errno, ECONNABORTED);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_REJECT), 1);
	ck_assert_uint_eq(fake_ucma_last(RDMA_USER_CM_CMD_REJECT)->handle,
			  child);
}
END_TEST

/*
 * A request the library reads and drops (the kernel fails the query of
 * its route): a non-blocking raccept that polled the listener readable
 * fails with EAGAIN instead of blocking in the kernel for the next event
 * (the channel's fd was blocking); the next request is accepted.
 */
START_TEST(a_dropped_request_does_not_block_raccept)
{
	struct pollfd pfd = {.fd = server, .events = POLLIN};
	uint32_t child;
	int s;

	ck_assert_ptr_nonnull(fake_ucma_conn_req(kid_of(server), &child));
	fake_ucma_fail_next(RDMA_USER_CM_CMD_QUERY_ROUTE, EIO);
	ck_assert_int_eq(rpoll(&pfd, 1, 0), 1);
	errno = 0;
	ck_assert_int_eq(raccept(server, NULL, NULL), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_ge(fake_ucma_count(RDMA_USER_CM_CMD_QUERY_ROUTE), 1);
	/* The next one goes through as usual. */
	resolve_client();
	child = carry_request();
	s = raccept(server, NULL, NULL);
	ck_assert_int_ge(s, 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_ACCEPT), 1);
	rclose(s);
}
END_TEST

/* The server's answer in an unknown protocol version: not connected. */
START_TEST(an_answer_in_another_version_fails_the_connect)
{
	struct rdma_ucm_event_resp *r;
	struct rs_wire_conn bad;

	resolve_client();
	memset(&bad, 0, sizeof(bad));
	bad.version = 9;
	r = fake_ucma_event(kid_of(client), RDMA_CM_EVENT_ESTABLISHED, 0);
	memcpy(r->param.conn.private_data, &bad, sizeof(bad));
	r->param.conn.private_data_len = sizeof(bad);
	ck_assert_int_eq(start_connect(), -1);
	ck_assert_int_eq(errno, ENOTSUP);
}
END_TEST

START_TEST(bad_connects_are_refused)
{
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	struct sockaddr_in6 short6 = {.sin6_family = AF_INET6};

	ck_assert_int_eq(rconnect(client, NULL, sizeof(server_addr)), -1);
	ck_assert_int_eq(errno, EFAULT);
	ck_assert_int_eq(rconnect(client, (struct sockaddr *)&server_addr, 4),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rconnect(client, (struct sockaddr *)&short6,
				  sizeof(struct sockaddr_in)),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rconnect(client, (struct sockaddr *)&un, sizeof(un)),
			 -1);
	ck_assert_int_eq(errno, EAFNOSUPPORT);
	/* A listener does not connect; a connecting socket does not listen. */
	ck_assert_int_eq(rconnect(server, (struct sockaddr *)&server_addr,
				  sizeof(server_addr)),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(raccept(client, NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rbind(client, NULL, sizeof(server_addr)), -1);
	ck_assert_int_eq(errno, EFAULT);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR), 0);
}
END_TEST

/*
 * An rsocket listener holds no p2p request (RDMA_OPTION_ID_PEER2PEER 0),
 * so its channel is never served, even in a process doing p2p: accept
 * pays no hop through the library's service thread (src/cm/channel.c).
 */
START_TEST(the_listener_is_never_served)
{
	struct rsocket *rs = rs_get(server);
	int opt = -1;

	ck_assert_ptr_nonnull(rs);
	ck_assert_int_eq(rdma_get_option(rs->cm_id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_PEER2PEER, &opt,
					 sizeof(opt)),
			 0);
	ck_assert_int_eq(opt, 0);
	cma_channel_serve_all(); /* as a p2p connect elsewhere would */
	ck_assert(!cma_channel_served(rs->cm_id->channel));
	rs_put(rs);
}
END_TEST

/* --- a listener shared by fork (src/rsocket/handoff.c) ------------------- */

/* Share the listener as a fork does: a child that leaves at once. */
static void fork_and_reap(void)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (!pid)
		_exit(0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
}

/* The relay thread queues what arrives: wait (bounded) until it did. */
static bool listener_ready(int ms)
{
	struct pollfd pfd = {.fd = server, .events = POLLIN};

	return rpoll(&pfd, 1, ms) == 1;
}

/*
 * A socket accepted on a shared listener answers its request when first
 * used: use it once (a look that does not wait) and return the channel
 * its request's kernel id is on now, -1 if none.
 */
static int answered(int s)
{
	struct pollfd pfd = {.fd = s, .events = POLLIN | POLLOUT};
	struct rsocket *rs;
	int fd;

	rpoll(&pfd, 1, 0);
	rs = rs_get(s);
	if (!rs)
		return -1;
	fd = rs->channel ? rs->channel->fd : -1;
	rs_put(rs);
	return fd;
}

START_TEST(a_forked_listener_accepts_through_its_queue)
{
	uint32_t child;
	char buf[8];
	int s, fd;

	fork_and_reap();
	resolve_client();
	child = carry_request();
	ck_assert(listener_ready(5000));
	s = raccept(server, NULL, NULL);
	ck_assert_int_ge(s, 0);
	/* Not answered until used: the request is still the relay's. */
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_MIGRATE_ID), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_ACCEPT), 0);
	/* First use: the kernel id moves to the socket's own channel. */
	fd = answered(s);
	ck_assert_int_eq(fake_ucma_kid(child)->fd, fd);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_MIGRATE_ID), 1);
	ck_assert_uint_eq(fake_ucma_last(RDMA_USER_CM_CMD_MIGRATE_ID)->handle,
			  child);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_ACCEPT), 1);
	carry_accept(child);
	fake_verbs_connect(qp_of(client), qp_of(s));
	ck_assert_int_eq(start_connect(), 0);
	ck_assert_int_eq(rsend(client, "ping", 4, 0), 4);
	ck_assert_int_eq(rrecv(s, buf, sizeof(buf), 0), 4);
	ck_assert_mem_eq(buf, "ping", 4);
	ck_assert_int_eq(rclose(s), 0);
}
END_TEST

START_TEST(the_relay_refuses_a_foreign_request)
{
	struct rdma_ucm_event_resp *r;
	uint32_t child;
	int i;

	fork_and_reap();
	fake_ucma_hold();
	r = fake_ucma_conn_req(kid_of(server), &child);
	ck_assert_ptr_nonnull(r);
	memcpy(r->param.conn.private_data, "not an rsocket", 14);
	r->param.conn.private_data_len = 14;
	fake_ucma_release();
	for (i = 0; i < 500 && !fake_ucma_count(RDMA_USER_CM_CMD_REJECT); i++)
		usleep(10000);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_REJECT), 1);
	ck_assert_uint_eq(fake_ucma_last(RDMA_USER_CM_CMD_REJECT)->handle,
			  child);
	ck_assert(!listener_ready(0));
}
END_TEST

/*
 * Two requests wait (held back) while two children are forked: each
 * child's copy of the fake kernel knows both kernel ids, as the real one
 * would.  Then the relay queues them and each child accepts one: two
 * processes accepting from one listener at once, neither getting both.
 */
START_TEST(two_children_each_accept_one_request)
{
	uint32_t kid[2];
	int p[2], i, c;
	pid_t pid[2];
	uint32_t got[2];

	fork_and_reap(); /* the relay runs in this process from now on */
	ck_assert_int_eq(pipe(p), 0);
	resolve_client(); /* its CONNECT's data, sent twice */
	fake_ucma_hold();
	for (i = 0; i < 2; i++)
		kid[i] = carry_request_to(kid_of(server));
	for (c = 0; c < 2; c++) {
		pid[c] = fork();
		ck_assert_int_ge(pid[c], 0);
		if (!pid[c]) {
			struct rsocket *rs;
			uint32_t mine = 0;
			int s = -1;

			for (i = 0; i < 500 && s < 0; i++) {
				listener_ready(10);
				s = raccept(server, NULL, NULL);
			}
			rs = s >= 0 && answered(s) >= 0 ? rs_get(s) : NULL;
			if (rs)
				mine = fake_ucma_kid_of(rs->cm_id)->handle;
			if (write(p[1], &mine, sizeof(mine)) != sizeof(mine))
				_exit(1);
			_exit(0);
		}
	}
	close(p[1]);
	fake_ucma_release();
	for (c = 0; c < 2; c++) {
		ck_assert_int_eq(read(p[0], &got[c], sizeof(got[c])),
				 sizeof(got[c]));
		ck_assert_int_eq(waitpid(pid[c], NULL, 0), pid[c]);
	}
	ck_assert(got[0] == kid[0] || got[0] == kid[1]);
	ck_assert(got[1] == kid[0] || got[1] == kid[1]);
	ck_assert_uint_ne(got[0], got[1]);
	close(p[0]);
}
END_TEST

/* A stream rsocket with SO_REUSEPORT, bound to @addr and listening. */
static int reuseport_listener(const struct sockaddr_in *addr)
{
	int s = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;

	ck_assert_int_ge(s, 0);
	ck_assert_int_eq(
		rsetsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)), 0);
	ck_assert_int_eq(rbind(s, (const struct sockaddr *)addr, sizeof(*addr)),
			 0);
	ck_assert_int_eq(rlisten(s, 4), 0);
	return s;
}

/* One request to kernel id @l, accepted on @on (polled, bounded). */
static void accept_one_on(uint32_t l, int on)
{
	struct pollfd pfd = {.fd = on, .events = POLLIN};
	uint32_t kid;
	int s, fd;

	fake_ucma_hold();
	kid = carry_request_to(l);
	fake_ucma_release();
	ck_assert_int_eq(rpoll(&pfd, 1, 5000), 1);
	s = raccept(on, NULL, NULL);
	ck_assert_int_ge(s, 0);
	fd = answered(s);
	ck_assert_int_eq(fake_ucma_kid(kid)->fd, fd);
	ck_assert_int_eq(rclose(s), 0);
}

/*
 * SO_REUSEPORT: the second socket bound to the address joins the first
 * one's listener (one kernel listener, as rdma_cm allows), accepts from
 * its queue, and keeps accepting once the first is closed, as on TCP.
 */
START_TEST(reuseport_sockets_share_one_listener)
{
	struct sockaddr_in addr = unit_ipv4("192.0.2.2", 7472), got;
	socklen_t len = sizeof(got);
	int a, b, binds;
	uint32_t kid;

	a = reuseport_listener(&addr);
	kid = kid_of(a);
	binds = fake_ucma_count(RDMA_USER_CM_CMD_BIND);
	b = reuseport_listener(&addr);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_BIND), binds);
	ck_assert_int_eq(rgetsockname(b, (struct sockaddr *)&got, &len), 0);
	ck_assert_uint_eq(got.sin_port, addr.sin_port);
	resolve_client();
	accept_one_on(kid, b);
	ck_assert_int_eq(rclose(a), 0);
	accept_one_on(kid, b);
	ck_assert_int_eq(rclose(b), 0);
}
END_TEST

/*
 * In a child (its own copy of the fake kernel): a request arrives on the
 * listener, which the child must be the relay of by now; accept it.
 * 0 if all went as it should, else the step that failed.
 */
static int child_accepts_as_relay(void)
{
	uint32_t kid;
	int i, s = -1;

	resolve_client();
	kid = carry_request();
	/* Ready may mean "the relay went": the accept then takes over. */
	for (i = 0; i < 50 && s < 0; i++) {
		listener_ready(100);
		s = raccept(server, NULL, NULL);
		if (s < 0 && errno != EAGAIN)
			return 11;
	}
	if (s < 0)
		return 10;
	i = answered(s);
	if (fake_ucma_kid(kid)->fd != i)
		return 12;
	return 0;
}

/* In a child: accept until this process has taken the listener over. */
static bool wait_for_takeover(void)
{
	int i;

	for (i = 0; i < 5000; i++) {
		if (fake_ucma_count(RDMA_USER_CM_CMD_MIGRATE_ID))
			return true;
		raccept(server, NULL, NULL);
		usleep(1000);
	}
	return false;
}

/* The child's result through a pipe: it may be a grandchild. */
static int child_result(int fd)
{
	char r = 99;

	ck_assert_int_eq(read(fd, &r, 1), 1);
	return r;
}

/* A child with a pipe to report through: 0 in the child, as fork(). */
static pid_t fork_reporting(int p[2])
{
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	return pid;
}

static void report_and_exit(int fd, char r)
{
	if (write(fd, &r, 1) != 1)
		_exit(1);
	_exit(0);
}

START_TEST(a_child_takes_over_when_the_relay_closes_the_listener)
{
	int p[2];
	pid_t pid = fork_reporting(p);
	char r;

	if (!pid) {
		/* Until the parent's close resigns, nothing to take. */
		r = wait_for_takeover() ? (char)child_accepts_as_relay() : 9;
		if (!r && fake_ucma_count(RDMA_USER_CM_CMD_MIGRATE_ID) != 2)
			r = 13; /* the listener's, then the request's */
		report_and_exit(p[1], r);
	}
	close(p[1]);
	ck_assert_int_eq(rclose(server), 0);
	server = -1;
	/* The parent's close gave the kernel id up: it was not destroyed. */
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_DESTROY_ID), 0);
	ck_assert_int_eq(child_result(p[0]), 0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
}
END_TEST

/*
 * A server that accepts and forks a child per connection (PostgreSQL's
 * postmaster): the accepted socket is answered by the child, which uses
 * it first, in its own context; the parent's close of its copy leaves
 * the request alone, and its getpeername works before anyone answered.
 */
START_TEST(a_child_answers_the_connection_its_parent_accepted)
{
	struct sockaddr_in peer;
	socklen_t len = sizeof(peer);
	uint32_t kid;
	int p[2], s;
	pid_t pid;

	fork_and_reap();
	resolve_client();
	kid = carry_request();
	ck_assert(listener_ready(5000));
	s = raccept(server, NULL, NULL);
	ck_assert_int_ge(s, 0);
	ck_assert_int_eq(rgetpeername(s, (struct sockaddr *)&peer, &len), 0);
	len = sizeof(peer);
	ck_assert_int_eq(rgetsockname(s, (struct sockaddr *)&peer, &len), 0);
	pid = fork_reporting(p);
	if (!pid) {
		int fd = answered(s);

		report_and_exit(
			p[1],
			fd >= 0 && fake_ucma_kid(kid)->fd == fd &&
					fake_ucma_count(
						RDMA_USER_CM_CMD_ACCEPT) == 1
				? 0
				: 14);
	}
	close(p[1]);
	ck_assert_int_eq(rclose(s), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_MIGRATE_ID), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_REJECT), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_DESTROY_ID), 0);
	ck_assert_int_eq(child_result(p[0]), 0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
}
END_TEST

struct claims {
	struct rsocket *rs;
	bool stop;
};

/* Claims in a loop: most of the time inside the claim's lock. */
static void *claim_again(void *arg)
{
	struct claims *c = arg;

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE))
		rs_handoff_claim(c->rs);
	return NULL;
}

static bool claims_once(void *arg)
{
	return rs_handoff_claim(((struct claims *)arg)->rs) == 0;
}

/*
 * A child forked while a thread of its parent's claims a connection
 * claims its own: the claim's lock that thread may have held is not the
 * child's.
 */
START_TEST(a_child_forked_during_a_claim_claims)
{
	struct claims c = {.rs = rs_get(client)};

	ck_assert_ptr_nonnull(c.rs);
	unit_forks_beside(claim_again, &c, &c.stop, claims_once);
	rs_put(c.rs);
}
END_TEST

static void accept_nothing(void)
{
	raccept(server, NULL, NULL);
}

/*
 * A child forked while a thread of its parent's is in a non-blocking
 * raccept on their shared listener accepts on it itself.
 */
START_TEST(a_child_forked_beside_raccept_accepts)
{
	fork_and_reap();
	unit_forks_beside_calls(accept_nothing);
}
END_TEST

#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
START_TEST(a_grandchild_takes_over_when_the_relay_exits)
{
	int p[2];
	pid_t pid = fork_reporting(p);

	if (!pid) {
		/* The child becomes the relay (the parent resigns)... */
		if (!wait_for_takeover())
			_exit(1);
		/* ...then forks and leaves without a word. */
		if (fork() == 0)
			report_and_exit(p[1], (char)child_accepts_as_relay());
		_exit(0);
	}
	close(p[1]);
	ck_assert_int_eq(rclose(server), 0);
	server = -1;
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	ck_assert_int_eq(child_result(p[0]), 0);
}
END_TEST
#endif

/* The network resolves @s's address and route for a connect to the server. */
static void resolve_socket(int s)
{
	struct sockaddr *to = (struct sockaddr *)&server_addr;

	ck_assert_int_eq(rconnect(s, to, sizeof(server_addr)), -1);
	fake_ucma_event(kid_of(s), RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	ck_assert_int_eq(rconnect(s, to, sizeof(server_addr)), -1);
	fake_ucma_event(kid_of(s), RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	ck_assert_int_eq(rconnect(s, to, sizeof(server_addr)), -1);
	ck_assert_int_eq(errno, EALREADY);
}

static struct ibv_context *verbs_of_socket(int s)
{
	struct rsocket *rs = rs_get(s);
	struct ibv_context *verbs;

	ck_assert_ptr_nonnull(rs);
	verbs = rs->cm_id->verbs;
	rs_put(rs);
	return verbs;
}

static int stale_file_of_socket(int s)
{
	struct rsocket *rs = rs_get(s);
	int fd;

	ck_assert_ptr_nonnull(rs);
	fd = cma_channel_newest_stale(rs->channel);
	rs_put(rs);
	return fd;
}

/*
 * A server listens as root, then becomes a user before it accepts
 * (lighttpd): the kernel refuses the listener's file to the new
 * credentials, also for the requests made on it meanwhile (the fake is
 * strict about which file names an id from then on).  The listener
 * follows (creds.c): a request that was waiting and one that comes after
 * are both accepted, on a device context opened under the new
 * credentials, and nothing of the old file is left open.
 */
START_TEST(a_listener_accepts_after_a_credential_change)
{
	int second = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), s1, s2;
	struct ibv_context *before = verbs_of_socket(server);

	ck_assert_int_ge(second, 0);
	resolve_client();
	resolve_socket(second);
	carry_request();
	fake_ucma_new_creds();
	s1 = raccept(server, NULL, NULL);
	ck_assert_int_ge(s1, 0);
	ck_assert_ptr_ne(verbs_of_socket(s1), before);
	/* Requests born in it may still wait: the old file stays open. */
	ck_assert_int_ge(stale_file_of_socket(server), 0);
	carry_request();
	s2 = raccept(server, NULL, NULL);
	ck_assert_int_ge(s2, 0);
	ck_assert_int_eq(stale_file_of_socket(server), -1);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_ACCEPT), 2);
	ck_assert_int_eq(raccept(server, NULL, NULL), -1);
	ck_assert_int_eq(errno, EAGAIN);
	rclose(s2);
	rclose(s1);
	rclose(second);
}
END_TEST

/*
 * A connection made before the process changed credentials (the rsync
 * daemon's child serving a module as its user): the kernel refuses the
 * old file's commands from then on.  The watch still learns of the
 * peer's silent end (its read follows the credentials), where it used to
 * be refused and wake again at once, for ever.
 */
START_TEST(a_connection_hears_its_peers_end_after_a_credential_change)
{
	struct blocked_read r;
	uint32_t kid;
	int s = connect_pair();

	kid = kid_of(client);
	fake_ucma_new_creds();
	blocked_read_start(&r, client);
	ck_assert_ptr_nonnull(
		fake_ucma_event(kid, RDMA_CM_EVENT_DISCONNECTED, 0));
	ck_assert_int_eq(pthread_join(r.thread, NULL), 0);
	ck_assert_int_eq(r.ret, 0);
	rclose(s);
}
END_TEST

static bool watched(int s)
{
	struct rsocket *rs = rs_get(s);
	bool w;

	ck_assert_ptr_nonnull(rs);
	w = __atomic_load_n(&rs->pw_watched, __ATOMIC_ACQUIRE);
	rs_put(rs);
	return w;
}

static int refuse_moves(const struct fake_cmd *cmd, void *resp, size_t resp_len)
{
	(void)resp;
	(void)resp_len;
	return cmd->cmd == RDMA_USER_CM_CMD_MIGRATE_ID ? ENOMEM
						       : FAKE_UCMA_MODEL;
}

/*
 * The same when the id cannot follow (the kernel refuses the move): the
 * event stays unread, and would wake the watch at once for ever; the
 * socket leaves the watch instead (its reader learns of the end by
 * sending, as before there was a watch).
 */
START_TEST(a_watch_refused_for_good_lets_the_socket_go)
{
	int s = connect_pair();

	ck_assert(watched(client));
	fake_ucma_new_creds();
	fake_ucma_set_hook(refuse_moves);
	ck_assert_ptr_nonnull(
		fake_ucma_event(kid_of(client), RDMA_CM_EVENT_DISCONNECTED, 0));
	for (int i = 0; i < 5000 && watched(client); i++)
		usleep(1000);
	ck_assert(!watched(client));
	fake_ucma_set_hook(NULL);
	/* Its goodbye first, while the peer's QP is there to take it. */
	ck_assert_int_eq(rclose(client), 0);
	client = -1;
	rclose(s);
}
END_TEST

/*
 * ... and its close still destroys its kernel id: a CM call refused for
 * the old credentials follows them and is made again (the id used to be
 * left behind, and the channel's file with it).
 */
START_TEST(a_connection_closes_after_a_credential_change)
{
	int s = connect_pair();
	uint32_t kid = kid_of(s);

	fake_ucma_new_creds();
	ck_assert_ptr_nonnull(
		fake_ucma_event(kid_of(client), RDMA_CM_EVENT_DISCONNECTED, 0));
	ck_assert_int_eq(rclose(s), 0);
	ck_assert(!fake_ucma_kid_live(kid, 0));
}
END_TEST

/*
 * The move fails (the kernel refuses the migration): the listener stays
 * as it was, on its old file, and the accept fails with the kernel's
 * refusal; the next accept tries again, and succeeds.
 */
START_TEST(a_failed_move_leaves_the_listener_as_it_was)
{
	int fd;

	resolve_client();
	carry_request();
	fake_ucma_new_creds();
	fake_ucma_fail_next(RDMA_USER_CM_CMD_MIGRATE_ID, ENOMEM);
	ck_assert_int_eq(raccept(server, NULL, NULL), -1);
	ck_assert_int_eq(errno, EACCES);
	ck_assert_int_eq(stale_file_of_socket(server), -1);
	fd = raccept(server, NULL, NULL);
	ck_assert_int_ge(fd, 0);
	rclose(fd);
}
END_TEST

Suite *rsocket_conn_suite(void)
{
	Suite *s = suite_create("rsocket_conn");
	TCase *tc = tcase_create("handshake");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, handshake_then_data_both_ways);
	tcase_add_test(tc, a_connect_ended_after_arming_still_wakes_rpoll);
	tcase_add_test(tc, a_refused_connect_is_econnrefused);
	tcase_add_test(tc, a_timed_out_resolution_is_retried);
	tcase_add_test(tc, a_foreign_request_is_refused);
	tcase_add_test(tc, a_dropped_request_does_not_block_raccept);
	tcase_add_test(tc, an_ended_connection_does_not_connect_again);
	tcase_add_test(tc, an_answer_in_another_version_fails_the_connect);
	tcase_add_test(tc, bad_connects_are_refused);
	tcase_add_test(tc, the_listener_is_never_served);
	suite_add_tcase(s, tc);

	tc = tcase_create("credentials");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_listener_accepts_after_a_credential_change);
	tcase_add_test(tc, a_failed_move_leaves_the_listener_as_it_was);
	tcase_add_test(
		tc, a_connection_hears_its_peers_end_after_a_credential_change);
	tcase_add_test(tc, a_connection_closes_after_a_credential_change);
	tcase_add_test(tc, a_watch_refused_for_good_lets_the_socket_go);
	suite_add_tcase(s, tc);

	tc = tcase_create("the peer's end");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_silent_peer_end_wakes_a_blocked_read);
	tcase_add_test(tc, data_sent_before_a_silent_end_is_read_first);
	tcase_add_test(tc, other_cm_events_leave_the_connection_alone);
	tcase_add_test(
		tc,
		the_first_read_of_a_connection_already_ended_gets_its_bytes);
	tcase_add_test(tc, a_forked_child_closes_its_copies_of_watched_sockets);
	suite_add_tcase(s, tc);

	tc = tcase_create("shared by fork");
	tcase_add_checked_fixture(tc, setup, teardown);
	/* Each waits 5 s at most itself; a sanitizer's forks are slow. */
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, a_forked_listener_accepts_through_its_queue);
	tcase_add_test(tc, the_relay_refuses_a_foreign_request);
	tcase_add_test(tc, two_children_each_accept_one_request);
	tcase_add_test(tc, reuseport_sockets_share_one_listener);
	tcase_add_test(tc, a_child_answers_the_connection_its_parent_accepted);
	tcase_add_test(tc,
		       a_child_takes_over_when_the_relay_closes_the_listener);
	tcase_add_test(tc, a_child_forked_during_a_claim_claims);
	tcase_add_test(tc, a_child_forked_beside_raccept_accepts);
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
	/*
	 * Its child forks with the relay thread running and the grandchild
	 * starts one: ThreadSanitizer supports no thread after such a fork,
	 * and AddressSanitizer's allocator (GCC 12's) may be copied locked by
	 * the relay then (glibc's malloc is not: it locks its arenas).
	 */
	tcase_add_test(tc, a_grandchild_takes_over_when_the_relay_exits);
#endif
	suite_add_tcase(s, tc);
	return s;
}
