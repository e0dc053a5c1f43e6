// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Fault tests of librdmacm over a real RDMA device (the Soft-RoCE VM).
 *
 * Each subcommand provokes one failure and checks that the side that
 * survives gets the event the failure should produce, does not crash, and
 * gives back what it held (fds, and the device itself: the kernel cannot
 * delete an rxe device while a process still holds a context on it).
 *
 *   kill_server <addr>      the passive peer dies holding a connect request
 *   kill_client <addr>      the active peer dies right after rdma_connect
 *   kill_transfer <addr>    the active peer dies while sending messages
 *   threads <addr> [T] [N]  T threads (8) each connect and tear down N (10)
 *                           connections at once, on their own channels
 *   device_removal <addr> <dev> <netdev>
 *                           `rdma link delete` under live ids: every id
 *                           gets DEVICE_REMOVAL, the delete completes once
 *                           they are destroyed; then the device is added
 *                           back and a connection works again in the same
 *                           process (optionally with a decoy rxe
 *                           device on another netdev added in between,
 *                           which takes over the old device's uverbs slot)
 *
 * Peers are separate processes (fork before any library call) so that
 * killing one is a real process death.  Reporting, stages, the watchdog
 * (RDMACM_HX_TIMEOUT s) and event waits are the system-test harness's
 * (harness.h).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "harness.h"

extern char **environ;

#define EVENT_TIMEOUT_MS 20000

/* --- events --------------------------------------------------------------- */

/* Events that end a connection that cannot go on. */
static bool is_end_of_connection(enum rdma_cm_event_type t)
{
	return t == RDMA_CM_EVENT_REJECTED || t == RDMA_CM_EVENT_UNREACHABLE ||
	       t == RDMA_CM_EVENT_CONNECT_ERROR ||
	       t == RDMA_CM_EVENT_DISCONNECTED;
}

/* --- endpoints ------------------------------------------------------------- */

#define MSG_SIZE 4096
#define RECV_DEPTH 16

struct end {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	char buf[RECV_DEPTH][MSG_SIZE];
};

static struct rdma_event_channel *channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (!ch)
		hx_fail("rdma_create_event_channel: %s", strerror(errno));
	return ch;
}

static struct rdma_cm_id *listener(struct rdma_event_channel *ch,
				   const char *addr, uint16_t *port)
{
	struct sockaddr_storage ss;
	struct rdma_cm_id *l;

	hx_stage("listen");
	hx_parse_addr(addr, *port, &ss);
	CHECK_OK(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP));
	CHECK_OK(rdma_bind_addr(l, (struct sockaddr *)&ss));
	CHECK_OK(rdma_listen(l, 16));
	*port = ntohs(rdma_get_src_port(l));
	return l;
}

static void make_qp(struct end *e)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = RECV_DEPTH,
			.max_recv_wr = RECV_DEPTH,
			.max_send_sge = 1,
			.max_recv_sge = 1},
	};
	int i;

	hx_stage("create QP");
	CHECK_OK(rdma_create_qp(e->id, NULL, &attr));
	e->mr = rdma_reg_msgs(e->id, e->buf, sizeof(e->buf));
	if (!e->mr)
		hx_fail("rdma_reg_msgs: %s", strerror(errno));
	for (i = 0; i < RECV_DEPTH; i++)
		CHECK_OK(rdma_post_recv(e->id, (void *)(uintptr_t)i, e->buf[i],
					MSG_SIZE, e->mr));
}

static void destroy_end(struct end *e)
{
	hx_stage("destroy endpoint");
	if (e->mr)
		CHECK_OK(rdma_dereg_mr(e->mr));
	e->mr = NULL;
	if (e->id) {
		if (e->id->qp)
			rdma_destroy_qp(e->id);
		CHECK_OK(rdma_destroy_id(e->id));
	}
	e->id = NULL;
}

/* Client: create, resolve, QP, connect; the caller waits for the answer. */
static void client_connect(struct end *c, const char *addr, uint16_t port)
{
	struct rdma_conn_param cp = {.responder_resources = 1,
				     .initiator_depth = 1,
				     .retry_count = 7,
				     .rnr_retry_count = 7};
	struct sockaddr_storage dst;

	hx_parse_addr(addr, port, &dst);
	hx_stage("client create id");
	CHECK_OK(rdma_create_id(c->ch, &c->id, c, RDMA_PS_TCP));
	hx_stage("client resolve");
	CHECK_OK(rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&dst, 2000));
	hx_expect_ack(c->ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL, "client");
	CHECK_OK(rdma_resolve_route(c->id, 2000));
	hx_expect_ack(c->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, "client");
	make_qp(c);
	hx_stage("client connect");
	CHECK_OK(rdma_connect(c->id, &cp));
}

/* Server: take the next request on @ch into @s, with a QP, and accept. */
static void server_accept(struct end *s, struct rdma_event_channel *ch)
{
	struct rdma_conn_param cp = {.responder_resources = 1,
				     .initiator_depth = 1,
				     .rnr_retry_count = 7};
	struct rdma_cm_event *ev;

	hx_stage("server waits for the request");
	ev = hx_expect_event_for(ch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL,
				 "server");
	s->ch = ch;
	s->id = ev->id;
	rdma_ack_cm_event(ev);
	make_qp(s);
	hx_stage("server accept");
	CHECK_OK(rdma_accept(s->id, &cp));
}

/* One connection inside this process: both ends established. */
static void local_pair(struct end *c, struct end *s,
		       struct rdma_event_channel *sch, const char *addr,
		       uint16_t port)
{
	client_connect(c, addr, port);
	server_accept(s, sch);
	hx_expect_ack(c->ch, RDMA_CM_EVENT_ESTABLISHED, NULL, "client");
	hx_expect_ack(s->ch, RDMA_CM_EVENT_ESTABLISHED, NULL, "server");
}

static void local_disconnect(struct end *c, struct end *s)
{
	hx_stage("disconnect");
	CHECK_OK(rdma_disconnect(c->id));
	hx_expect_ack(s->ch, RDMA_CM_EVENT_DISCONNECTED, NULL, "server");
	CHECK_OK(rdma_disconnect(s->id));
	hx_expect_ack(c->ch, RDMA_CM_EVENT_DISCONNECTED, NULL, "client");
}

/* Wait for a completion on @cq for up to @ms; 1, or 0 on time-out. */
static int poll_cq(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	struct timespec ts = {0, 1000000};
	int i, n;

	for (i = 0; i < ms; i++) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n < 0)
			hx_fail("ibv_poll_cq: %d", n);
		if (n)
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* One message each way. */
static void exchange(struct end *c, struct end *s)
{
	struct end *from[2] = {c, s}, *to[2] = {s, c};
	struct ibv_wc wc;
	int i;

	for (i = 0; i < 2; i++) {
		hx_stage("message exchange");
		snprintf(from[i]->buf[0], 64, "hello %d", i);
		CHECK_OK(rdma_post_send(from[i]->id, NULL, from[i]->buf[0], 64,
					from[i]->mr, IBV_SEND_SIGNALED));
		if (!poll_cq(from[i]->id->send_cq, &wc, 10000) || wc.status)
			hx_fail("send did not complete");
		if (!poll_cq(to[i]->id->recv_cq, &wc, 10000) || wc.status)
			hx_fail("receive did not complete");
		CHECK_OK(rdma_post_recv(to[i]->id, (void *)wc.wr_id,
					to[i]->buf[wc.wr_id], MSG_SIZE,
					to[i]->mr));
	}
}

/* --- peers in other processes ---------------------------------------------- */

/*
 * A peer is this program started again (never a fork: a child of a
 * process that has opened the device would share its verbs context) with
 * "peer <role> <addr> <port>"; it reports progress as single lines on a
 * pipe and dies with its parent.
 */
struct peer {
	pid_t pid;
	FILE *out;
};

static struct peer start_peer(const char *role, const char *addr, uint16_t port)
{
	posix_spawn_file_actions_t fa;
	char portstr[16];
	char *argv[] = {"fault_test", "peer",  (char *)role,
			(char *)addr, portstr, NULL};
	struct peer p;
	int fds[2];

	snprintf(portstr, sizeof(portstr), "%u", port);
	if (pipe(fds))
		hx_fail("pipe: %s", strerror(errno));
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_addclose(&fa, fds[0]);
	fflush(stdout);
	if (posix_spawn(&p.pid, "/proc/self/exe", &fa, NULL, argv, environ))
		hx_fail("cannot start the peer process");
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	p.out = fdopen(fds[0], "r");
	return p;
}

/* The peer's next report line; fails on time-out or early death. */
static void hear_peer(struct peer *p, char *line, size_t len)
{
	struct pollfd pfd = {.fd = fileno(p->out), .events = POLLIN};

	hx_stage("waiting for the peer process");
	if (poll(&pfd, 1, EVENT_TIMEOUT_MS) != 1 ||
	    !fgets(line, (int)len, p->out))
		hx_fail("the peer process did not report in");
	if (!strncmp(line, "FAIL", 4))
		hx_fail("peer: %s", line);
}

static void kill_peer(struct peer *p)
{
	int st;

	hx_stage("killing the peer");
	kill(p->pid, SIGKILL);
	if (waitpid(p->pid, &st, 0) != p->pid)
		hx_fail("waitpid: %s", strerror(errno));
	fclose(p->out);
}

static void __attribute__((noreturn)) peer_report(const char *what)
{
	printf("%s\n", what);
	fflush(stdout);
	for (;;)
		pause();
}

static void peer_stream(struct end *c)
{
	struct ibv_wc wc;

	for (;;)
		if (rdma_post_send(c->id, NULL, c->buf[0], MSG_SIZE, c->mr,
				   IBV_SEND_SIGNALED) ||
		    !poll_cq(c->id->send_cq, &wc, 10000) || wc.status)
			_exit(2);
}

/* The peer's side of the scenarios; it only ends by being killed. */
static int cmd_peer(int argc, char **argv)
{
	const char *role = argv[1], *addr = argv[2];
	uint16_t port = (uint16_t)atoi(argv[3]);
	struct end c = {0};
	char line[32];

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	c.ch = channel();
	if (!strcmp(role, "listen")) {
		listener(c.ch, addr, &port);
		snprintf(line, sizeof(line), "%u", port);
		printf("%s\n", line);
		fflush(stdout);
		rdma_ack_cm_event(hx_expect_event_for(
			c.ch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, "peer"));
		peer_report("R");
	}
	client_connect(&c, addr, port);
	if (!strcmp(role, "connect"))
		peer_report("C");
	hx_expect_ack(c.ch, RDMA_CM_EVENT_ESTABLISHED, NULL, "peer");
	printf("E\n");
	fflush(stdout);
	peer_stream(&c);
	return 2;
}

/*
 * Wait on @e's channel for the event that ends its connection; anything
 * else but ESTABLISHED is a failure.  Returns the type seen.
 */
static enum rdma_cm_event_type expect_end(struct end *e, const char *who)
{
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type t;

	hx_stage("waiting for the connection to end");
	for (;;) {
		ev = hx_next_event_no_timewait(e->ch, 60000);
		if (!ev)
			hx_fail("%s: no event after the peer died", who);
		t = ev->event;
		if (ev->id != e->id)
			hx_fail("%s: %s for another id", who,
				rdma_event_str(t));
		rdma_ack_cm_event(ev);
		if (is_end_of_connection(t))
			break;
		if (t != RDMA_CM_EVENT_ESTABLISHED)
			hx_fail("%s: unexpected %s", who, rdma_event_str(t));
	}
	hx_note("%s got %s", who, rdma_event_str(t));
	return t;
}

/* Everything @e held is given back: fds as before the scenario ran. */
static void check_fds(int before, const char *what)
{
	int after = hx_count_fds();

	if (after != before)
		hx_fail("%s: %d fds before, %d after", what, before, after);
}

/*
 * Every scenario runs twice: the first run opens the device (a context
 * the library keeps for later ids), the second must end with exactly the
 * fds it started with.
 */
static void twice(void (*scenario)(const char *), const char *addr,
		  const char *name)
{
	int fds;

	scenario(addr);
	fds = hx_count_fds();
	scenario(addr);
	check_fds(fds, name);
}

/* The server process dies with the client's request pending. */
static void kill_server_once(const char *addr)
{
	struct end c = {0};
	struct peer p = start_peer("listen", addr, 0);
	char line[32];

	hear_peer(&p, line, sizeof(line));
	c.ch = channel();
	client_connect(&c, addr, (uint16_t)atoi(line));
	hear_peer(&p, line, sizeof(line));
	kill_peer(&p);
	if (expect_end(&c, "client") == RDMA_CM_EVENT_DISCONNECTED)
		hx_fail("client: DISCONNECTED for a connection never made");
	destroy_end(&c);
	rdma_destroy_event_channel(c.ch);
}

/* The client process dies right after sending its request. */
static void kill_client_once(const char *addr)
{
	struct rdma_event_channel *sch = channel();
	struct rdma_cm_id *l;
	struct end s = {0};
	uint16_t port = 0;
	struct peer p;
	char line[32];

	l = listener(sch, addr, &port);
	p = start_peer("connect", addr, port);
	server_accept(&s, sch);
	hear_peer(&p, line, sizeof(line));
	kill_peer(&p);
	expect_end(&s, "server");
	destroy_end(&s);
	CHECK_OK(rdma_destroy_id(l));
	rdma_destroy_event_channel(sch);
}

/* The client process dies while it streams messages to us. */
static void kill_transfer_once(const char *addr)
{
	struct rdma_event_channel *sch = channel();
	struct rdma_cm_id *l;
	struct end s = {0};
	struct ibv_wc wc;
	uint16_t port = 0;
	struct peer p;
	char line[32];
	int got, flushed = 0, received = 0;

	l = listener(sch, addr, &port);
	p = start_peer("stream", addr, port);
	server_accept(&s, sch);
	hx_expect_ack(sch, RDMA_CM_EVENT_ESTABLISHED, NULL, "server");
	hear_peer(&p, line, sizeof(line));
	hx_stage("receiving the stream");
	for (got = 0; got < 20; got++) {
		if (!poll_cq(s.id->recv_cq, &wc, 10000) || wc.status)
			hx_fail("server: no message %d from the peer", got);
		CHECK_OK(rdma_post_recv(s.id, (void *)wc.wr_id, s.buf[wc.wr_id],
					MSG_SIZE, s.mr));
	}
	kill_peer(&p);
	if (expect_end(&s, "server") != RDMA_CM_EVENT_DISCONNECTED)
		hx_fail("server: a connection that was up ended otherwise");
	/* Our side answers; the receives still posted come back flushed. */
	CHECK_OK(rdma_disconnect(s.id));
	hx_stage("draining receives");
	while (poll_cq(s.id->recv_cq, &wc, 2000)) {
		flushed += wc.status == IBV_WC_WR_FLUSH_ERR;
		received += wc.status == IBV_WC_SUCCESS;
	}
	/*
	 * Messages the peer sent before it died may have taken every receive
	 * (CI, 2026-11-25): then none is left to flush.  Any other end is
	 * a receive that never came back.
	 */
	if (flushed + received < RECV_DEPTH)
		hx_fail("server: %d of %d receives came back after the "
			"disconnect (%d flushed)",
			flushed + received, RECV_DEPTH, flushed);
	destroy_end(&s);
	CHECK_OK(rdma_destroy_id(l));
	rdma_destroy_event_channel(sch);
}

static int cmd_kill_server(int argc, char **argv)
{
	twice(kill_server_once, argv[1], "kill_server");
	return 0;
}

static int cmd_kill_client(int argc, char **argv)
{
	twice(kill_client_once, argv[1], "kill_client");
	return 0;
}

static int cmd_kill_transfer(int argc, char **argv)
{
	twice(kill_transfer_once, argv[1], "kill_transfer");
	return 0;
}

/* --- threads ------------------------------------------------------------------ */

struct worker {
	pthread_t thread;
	const char *addr;
	int rounds;
};

/* Each thread: its own channels and listener, rounds of full connections. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct rdma_event_channel *sch = channel();
	struct end c = {0}, s = {0};
	struct rdma_cm_id *l;
	uint16_t port = 0;
	int i;

	l = listener(sch, w->addr, &port);
	c.ch = channel();
	for (i = 0; i < w->rounds; i++) {
		local_pair(&c, &s, sch, w->addr, port);
		exchange(&c, &s);
		local_disconnect(&c, &s);
		destroy_end(&c);
		destroy_end(&s);
	}
	CHECK_OK(rdma_destroy_id(l));
	rdma_destroy_event_channel(c.ch);
	rdma_destroy_event_channel(sch);
	return NULL;
}

static void run_workers(const char *addr, int nthreads, int rounds)
{
	struct worker w[64];
	int i;

	for (i = 0; i < nthreads; i++) {
		w[i].addr = addr;
		w[i].rounds = rounds;
		if (pthread_create(&w[i].thread, NULL, worker_main, &w[i]))
			hx_fail("pthread_create");
	}
	for (i = 0; i < nthreads; i++)
		pthread_join(w[i].thread, NULL);
}

static int cmd_threads(int argc, char **argv)
{
	int nthreads = argc > 2 ? atoi(argv[2]) : 8;
	int rounds = argc > 3 ? atoi(argv[3]) : 10;
	int fds;

	if (nthreads < 1 || nthreads > 64 || rounds < 1)
		hx_fail("bad thread or round count");
	run_workers(argv[1], 1, 1); /* opens the device once */
	fds = hx_count_fds();
	run_workers(argv[1], nthreads, rounds);
	check_fds(fds, "threads");
	hx_note("%d threads x %d connections", nthreads, rounds);
	return 0;
}

/* --- device removal ------------------------------------------------------- */

/* Start `rdma link <args>`; its pid. */
static pid_t rdma_link(const char *verb, const char *dev, const char *netdev)
{
	char *argv[] = {"rdma",
			"link",
			(char *)verb,
			(char *)dev,
			netdev ? "type" : NULL,
			"rxe",
			"netdev",
			(char *)netdev,
			NULL};
	pid_t pid;

	if (posix_spawnp(&pid, "rdma", NULL, NULL, argv, environ))
		hx_fail("cannot run rdma link %s", verb);
	return pid;
}

static int wait_exit(pid_t pid, int secs)
{
	int i, st;

	for (i = 0; i < secs * 10; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
		usleep(100000);
	}
	hx_fail("`rdma link` did not finish within %d s", secs);
}

/* Destroy what DEVICE_REMOVAL names, until all three ids are gone. */
static void await_removal(struct end *c, struct end *s, struct rdma_cm_id **l)
{
	struct rdma_event_channel *chs[2] = {c->ch, s->ch};
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int left = 3, i;

	hx_stage("waiting for DEVICE_REMOVAL");
	while (left) {
		for (i = 0; i < 2 && left; i++) {
			ev = hx_next_event_no_timewait(chs[i], 100);
			if (!ev)
				continue;
			id = ev->id;
			hx_note("%s on the %s", rdma_event_str(ev->event),
				id == *l      ? "listener"
				: id == c->id ? "client"
					      : "server");
			if (ev->event != RDMA_CM_EVENT_DEVICE_REMOVAL) {
				if (!is_end_of_connection(ev->event))
					hx_fail("unexpected %s",
						rdma_event_str(ev->event));
				rdma_ack_cm_event(ev);
				continue;
			}
			rdma_ack_cm_event(ev);
			if (id == *l) {
				CHECK_OK(rdma_destroy_id(*l));
				*l = NULL;
			} else {
				destroy_end(id == c->id ? c : s);
			}
			left--;
		}
	}
}

/* Until the re-added device has its address (GIDs come asynchronously). */
static void await_address(const char *addr, struct rdma_event_channel *ch)
{
	struct sockaddr_storage ss;
	struct rdma_cm_id *id;
	int i;

	hx_stage("waiting for the device to be usable again");
	hx_parse_addr(addr, 0, &ss);
	for (i = 0; i < 100; i++) {
		CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
		if (!rdma_bind_addr(id, (struct sockaddr *)&ss) && id->verbs) {
			CHECK_OK(rdma_destroy_id(id));
			return;
		}
		CHECK_OK(rdma_destroy_id(id));
		usleep(200000);
	}
	hx_fail("%s never became bindable on the re-added device", addr);
}

#define DECOY_DEV "rxedecoy"

static int cmd_device_removal(int argc, char **argv)
{
	const char *addr = argv[1], *dev = argv[2], *netdev = argv[3];
	const char *decoy = argc > 4 ? argv[4] : NULL;
	struct rdma_event_channel *sch = channel();
	struct end c = {.ch = channel()}, s = {0};
	struct ibv_context **list;
	struct rdma_cm_id *l;
	uint16_t port = 0;
	pid_t del;
	int n, rc;

	l = listener(sch, addr, &port);
	local_pair(&c, &s, sch, addr, port);
	exchange(&c, &s);

	hx_stage("rdma link delete");
	del = rdma_link("delete", dev, NULL);
	await_removal(&c, &s, &l);
	/* rxe's delete waits for every user context: ours must be closed. */
	rc = wait_exit(del, 60);
	if (rc)
		hx_fail("rdma link delete %s exited with %d", dev, rc);
	list = rdma_get_devices(&n);
	rdma_free_devices(list);
	if (n)
		hx_fail("rdma_get_devices lists %d devices after the delete",
			n);
	hx_note("%s deleted under live ids: all released", dev);

	/*
	 * A decoy device added first takes the freed uverbs slot, so the
	 * re-added device cannot be reached through the old one's stale
	 * handle by luck: only a fresh device list finds it.
	 */
	if (decoy && wait_exit(rdma_link("add", DECOY_DEV, decoy), 60))
		hx_fail("rdma link add %s on %s failed", DECOY_DEV, decoy);
	hx_stage("rdma link add");
	rc = wait_exit(rdma_link("add", dev, netdev), 60);
	if (rc)
		hx_fail("rdma link add %s exited with %d", dev, rc);
	await_address(addr, sch);
	port = 0;
	l = listener(sch, addr, &port);
	local_pair(&c, &s, sch, addr, port);
	exchange(&c, &s);
	local_disconnect(&c, &s);
	destroy_end(&c);
	destroy_end(&s);
	CHECK_OK(rdma_destroy_id(l));
	hx_note("%s re-added%s: a new connection in the same process works",
		dev, decoy ? " after a decoy device" : "");
	if (decoy && wait_exit(rdma_link("delete", DECOY_DEV, NULL), 60))
		hx_fail("rdma link delete %s failed", DECOY_DEV);
	rdma_destroy_event_channel(c.ch);
	rdma_destroy_event_channel(sch);
	return 0;
}

/* --- main ----------------------------------------------------------------- */

static const struct hx_scenario scenarios[] = {
	{"kill_server", "<addr>", cmd_kill_server},
	{"kill_client", "<addr>", cmd_kill_client},
	{"kill_transfer", "<addr>", cmd_kill_transfer},
	{"threads", "<addr> [<threads> [<rounds>]]", cmd_threads},
	{"device_removal", "<addr> <dev> <netdev> [<decoy-netdev>]",
	 cmd_device_removal},
	{"peer", "<role> <addr> <port> (a peer process of the others)",
	 cmd_peer},
};

int main(int argc, char **argv)
{
	/* The peers are other processes, slower to answer than one's own. */
	hx_set_event_timeout_ms(EVENT_TIMEOUT_MS);
	/* Device removal waits on `rdma link` twice: more than 60 s. */
	hx_set_default_timeout_s(100);
	return hx_main(argc, argv, scenarios,
		       sizeof(scenarios) / sizeof(scenarios[0]));
}
