// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * One end of a peer-to-peer pair, written the way an outside program is:
 * one event channel; poll(2) on channel->fd with a 100 ms
 * timeout, then a BLOCKING rdma_get_cm_event; a listener on the same port
 * on each address; per iteration: create id, resolve address and route,
 * create QP, post a receive, rdma_connect with peer2peer_mode = 1, wait for
 * ESTABLISHED, one message each way, rdma_disconnect, wait for
 * DISCONNECTED, destroy.  Both ends are started together.
 *
 *   p2p_pair_test pair MY_ADDR PEER_ADDR PORT ITERATIONS [PEER_PORT]
 *
 * (PEER_PORT: the peer's listening port when it is not PORT.)  Under load
 * (the VM scenario pair-load): P2P_PAIR_SKEW_MS and P2P_PAIR_SKEW_EVERY
 * skew the ends' connects (skew() below), P2P_PAIR_ONE_PORT=1 says both
 * ends listen on one port of one device (refused_by_the_kernel()).
 *
 * Any other event, a lost message or a hang (the watchdog, re-armed per
 * iteration) fails; so does a CONNECT_REQUEST, which in p2p mode must
 * never reach the application.  The `restart` scenario below kills and
 * restarts one end; `forked` forks one end's process mid-loop.
 */
#include <config.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "harness.h"

#define MSG_LEN 64
/*
 * Address and route resolution may take seconds with every CPU busy and
 * the peer in another guest (ARP over the emulated link): what the
 * scenarios judge is the pairing, not the neighbour table's speed.
 */
#define RESOLVE_MS 10000

/* The next event: poll with a 100 ms timeout until readable, then block. */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch,
					enum rdma_cm_event_type want)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;
	int n;

	do
		n = poll(&pfd, 1, 100);
	while (n == 0 || (n < 0 && errno == EINTR));
	CHECK(n > 0, "poll: %s", strerror(errno));
	CHECK_OK(rdma_get_cm_event(ch, &ev));
	CHECK(ev->event == want && !ev->status, "want %s, got %s status %d",
	      rdma_event_str(want), rdma_event_str(ev->event), ev->status);
	return ev;
}

static void await(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	rdma_ack_cm_event(next_event(ch, want));
}

/*
 * Wait for @sends send and @recvs receive completions on @cq, in whatever
 * order they come (busy, bounded by the watchdog); more send completions
 * are fine.
 */
static void await_completions(struct ibv_cq *cq, int sends, int recvs, int i,
			      int initiator)
{
	struct ibv_wc wc;
	int n;

	while (sends > 0 || recvs > 0) {
		hx_stage("iteration %d: exchange, initiator %d, waiting for "
			 "%d send and %d receive completions",
			 i, initiator, sends, recvs);
		n = ibv_poll_cq(cq, 1, &wc);
		if (n == 0)
			continue;
		CHECK(n == 1 && wc.status == IBV_WC_SUCCESS,
		      "completion: %d, status %s, opcode %d", n,
		      n == 1 ? ibv_wc_status_str(wc.status) : "-",
		      (int)wc.opcode);
		if (wc.opcode == IBV_WC_SEND && sends > 0)
			sends--;
		else if (wc.opcode == IBV_WC_RECV)
			recvs--;
		/* The initiator's own send may complete: not waited for. */
		CHECK(recvs >= 0, "a second receive completion");
	}
}

/* One connection and what the test hangs on it. */
struct conn {
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_mr *mr_in, *mr_out;
	char in[MSG_LEN], out[MSG_LEN];
	int initiator;
};

/*
 * Create an id, resolve, make a CQ and QP, post a receive and connect in
 * p2p mode.  Returns the event that ended the connect (ESTABLISHED, or a
 * failure a caller may retry), unacked; @c holds the id either way.
 */
static struct rdma_cm_event *try_connect(struct rdma_event_channel *ch,
					 struct sockaddr_storage *me,
					 struct sockaddr_storage *peer,
					 struct conn *c)
{
	struct rdma_conn_param param = {.responder_resources = 1,
					.initiator_depth = 1,
					.retry_count = 7,
					.rnr_retry_count = 7,
					.peer2peer_mode = 1};
	struct ibv_qp_init_attr attr = {.cap = {.max_send_wr = 2,
						.max_recv_wr = 2,
						.max_send_sge = 1,
						.max_recv_sge = 1},
					.qp_type = IBV_QPT_RC};
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;
	int n;

	memset(c, 0, sizeof(*c));
	CHECK_OK(rdma_create_id(ch, &c->id, NULL, RDMA_PS_TCP));
	CHECK_OK(rdma_resolve_addr(c->id, (struct sockaddr *)me,
				   (struct sockaddr *)peer, RESOLVE_MS));
	await(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK_OK(rdma_resolve_route(c->id, RESOLVE_MS));
	await(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);

	c->cq = ibv_create_cq(c->id->verbs, 4, NULL, NULL, 0);
	CHECK(c->cq, "ibv_create_cq: %s", strerror(errno));
	attr.send_cq = attr.recv_cq = c->cq;
	CHECK_OK(rdma_create_qp(c->id, NULL, &attr));
	c->mr_in = ibv_reg_mr(c->id->pd, c->in, sizeof(c->in),
			      IBV_ACCESS_LOCAL_WRITE);
	c->mr_out = ibv_reg_mr(c->id->pd, c->out, sizeof(c->out), 0);
	CHECK(c->mr_in && c->mr_out, "ibv_reg_mr: %s", strerror(errno));
	CHECK_OK(rdma_post_recv(c->id, NULL, c->in, sizeof(c->in), c->mr_in));
	CHECK_OK(rdma_connect(c->id, &param));
	do
		n = poll(&pfd, 1, 100);
	while (n == 0 || (n < 0 && errno == EINTR));
	CHECK(n > 0, "poll: %s", strerror(errno));
	CHECK_OK(rdma_get_cm_event(ch, &ev));
	return ev;
}

static void exchange(struct conn *c, int i)
{
	/* iWARP without MPA RTR: the end whose request formed it sends first. */
	CHECK_OK(rdma_get_option(c->id, RDMA_OPTION_ID,
				 RDMA_OPTION_ID_INITIATOR, &c->initiator,
				 sizeof(c->initiator)));
	if (!c->initiator)
		await_completions(c->cq, 0, 1, i, c->initiator);
	snprintf(c->out, sizeof(c->out), "iteration %d", i);
	CHECK_OK(rdma_post_send(c->id, NULL, c->out, sizeof(c->out), c->mr_out,
				IBV_SEND_SIGNALED));
	/*
	 * The initiator's message arrived: the peer replies only after it.
	 * Its send completion is not waited for, only the peer's is: on
	 * Soft-RoCE (Linux 6.1) an ACK lost now and then is never made up
	 * for (tests/system/BUGS.md rxe-lost-ack), with or without p2p mode.
	 */
	await_completions(c->cq, c->initiator ? 0 : 1, c->initiator ? 1 : 0, i,
			  c->initiator);
	CHECK(!strcmp(c->in, c->out), "received \"%.*s\", want \"%s\"", MSG_LEN,
	      c->in, c->out);
}

static void teardown(struct conn *c)
{
	rdma_destroy_qp(c->id);
	if (c->mr_in)
		ibv_dereg_mr(c->mr_in);
	if (c->mr_out)
		ibv_dereg_mr(c->mr_out);
	ibv_destroy_cq(c->cq);
	CHECK_OK(rdma_destroy_id(c->id));
}

/*
 * P2P_PAIR_SKEW_MS=S (and P2P_PAIR_SKEW_EVERY=K, default 1): before one
 * iteration in K, at random, one end waits a random 0..S ms, else
 * 0..S/100 ms, so the two ends' connects meet in every order.  The ends
 * take turns (@my_turn: this end's, by the iteration's parity), so that
 * an iteration costs one end's wait, not the longer of two.
 */
static void skew(bool my_turn)
{
	static unsigned int seed;
	const char *v = getenv("P2P_PAIR_SKEW_MS");
	unsigned int ms = v ? (unsigned int)atoi(v) : 0, every;

	if (!ms || !my_turn)
		return;
	if (!seed)
		seed = (unsigned int)getpid();
	v = getenv("P2P_PAIR_SKEW_EVERY");
	every = v && atoi(v) > 0 ? (unsigned int)atoi(v) : 1;
	if (rand_r(&seed) % every)
		ms /= 100;
	usleep((useconds_t)(rand_r(&seed) % (ms + 1)) * 1000);
}

/*
 * With two listeners on one port, on two addresses of one device, the
 * kernel refuses now and then a request before any library sees it (IB CM
 * reason 28, BUGS.md rxe-two-listeners-rej28): that attempt may fail, on
 * the end that sent it, but never two in a row: the pair's next attempt
 * must form.
 */
static bool refused_by_the_kernel(const struct rdma_cm_event *ev)
{
	return getenv("P2P_PAIR_ONE_PORT") &&
	       ev->event == RDMA_CM_EVENT_REJECTED && ev->status == 28;
}

/*
 * 0: iteration @i done; 1: its connect refused by the kernel (above).
 * @odd: this end skews odd iterations (else even ones).
 */
static int one_iteration(struct rdma_event_channel *ch,
			 struct sockaddr_storage *me,
			 struct sockaddr_storage *peer, int i, bool may_fail,
			 bool odd)
{
	struct rdma_cm_event *ev;
	struct conn c;

	hx_stage("iteration %d: connect", i);
	skew((i & 1) == odd);
	ev = try_connect(ch, me, peer, &c);
	if (may_fail && refused_by_the_kernel(ev)) {
		hx_note("iteration %d: refused by the kernel (REJ 28), again",
			i);
		rdma_ack_cm_event(ev);
		teardown(&c);
		return 1;
	}
	CHECK(ev->event == RDMA_CM_EVENT_ESTABLISHED && !ev->status,
	      "want ESTABLISHED, got %s status %d", rdma_event_str(ev->event),
	      ev->status);
	rdma_ack_cm_event(ev);
	hx_stage("iteration %d: exchange", i);
	exchange(&c, i);
	/*
	 * The end that sent last disconnects first: the peer posts its
	 * receive completion before its ACK goes out (rxe), and a QP moved
	 * to error in between leaves our send without a completion.
	 */
	hx_stage("iteration %d: disconnect", i);
	if (c.initiator) {
		await(ch, RDMA_CM_EVENT_DISCONNECTED);
		rdma_disconnect(
			c.id); /* may say EINVAL: already disconnected */
	} else {
		CHECK_OK(rdma_disconnect(c.id));
		await(ch, RDMA_CM_EVENT_DISCONNECTED);
	}
	teardown(&c);
	return 0;
}

/* This end's channel, with a p2p-ready listener on @me. */
static struct rdma_event_channel *open_end(struct sockaddr_storage *me)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *listener;

	CHECK(ch, "rdma_create_event_channel: %s", strerror(errno));
	CHECK_OK(rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP));
	CHECK_OK(rdma_bind_addr(listener, (struct sockaddr *)me));
	CHECK_OK(rdma_listen(listener, 16));
	return ch;
}

/*
 * Iterations @from to @to of a pair's loop on @ch; the number of attempts
 * the kernel refused (each followed by one that must form).
 */
static int pair_loop(struct rdma_event_channel *ch,
		     struct sockaddr_storage *any,
		     struct sockaddr_storage *peer, int from, int to, bool odd)
{
	int i, refused = 0;

	for (i = from; i <= to; i++) {
		hx_watchdog(hx_timeout_s());
		if (one_iteration(ch, any, peer, i, true, odd)) {
			refused++;
			CHECK(!one_iteration(ch, any, peer, i, false, odd),
			      "unreachable");
		}
	}
	return refused;
}

static int pair(int argc, char **argv)
{
	struct sockaddr_storage me, peer, any;
	unsigned short port;
	int n, refused;

	if (argc != 5 && argc != 6)
		hx_fail("usage: pair MY_ADDR PEER_ADDR PORT ITERATIONS "
			"[PEER_PORT]");
	port = (unsigned short)atoi(argv[3]);
	n = atoi(argv[4]);
	hx_parse_addr(argv[1], port, &me);
	hx_parse_addr(argv[2], argc == 6 ? (unsigned short)atoi(argv[5]) : port,
		      &peer);
	hx_parse_addr(argv[1], 0, &any);
	hx_set_name("pair/%s", argv[1]);

	/* The two ends' listening addresses differ: one of them is less. */
	refused = pair_loop(open_end(&me), &any, &peer, 1, n,
			    memcmp(&me, &peer, sizeof(me)) < 0);
	hx_note("%d iterations, one connection each, %d attempts refused by "
		"the kernel",
		n, refused);
	return 0; /* exits without cleaning up, as programs do */
}

/*
 * A process forks in the middle of its p2p work:
 *
 *   forked MY_ADDR PEER_ADDR PORT ITERATIONS PEER_PORT CHILD_PORT
 *          PEER_CHILD_PORT
 *
 * The parent loops as `pair` does with the peer's end at PEER_PORT and
 * forks after its first iteration (its listener open, the peer's next
 * REQ on its way).  The child, another process on the same kernel file,
 * makes an end of its own at CHILD_PORT, loops with the peer's second end
 * at PEER_CHILD_PORT and exits without cleaning up, while the parent goes
 * on.  Every connection of both loops must form: neither process's p2p
 * work may act on the other's (rdma_cm_p2p(7)).  The peer runs two
 * `pair` ends.
 */
static int forked(int argc, char **argv)
{
	struct sockaddr_storage me, peer, any, child_me, child_peer;
	struct rdma_event_channel *ch;
	int n, status;
	pid_t pid;

	if (argc != 8)
		hx_fail("usage: forked MY_ADDR PEER_ADDR PORT ITERATIONS "
			"PEER_PORT CHILD_PORT PEER_CHILD_PORT");
	n = atoi(argv[4]);
	hx_parse_addr(argv[1], (unsigned short)atoi(argv[3]), &me);
	hx_parse_addr(argv[2], (unsigned short)atoi(argv[5]), &peer);
	hx_parse_addr(argv[1], (unsigned short)atoi(argv[6]), &child_me);
	hx_parse_addr(argv[2], (unsigned short)atoi(argv[7]), &child_peer);
	hx_parse_addr(argv[1], 0, &any);
	hx_set_name("forked/%s", argv[1]);

	ch = open_end(&me);
	pair_loop(ch, &any, &peer, 1, 1, memcmp(&me, &peer, sizeof(me)) < 0);
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (!pid) {
		hx_set_name("forked-child/%s", argv[1]);
		pair_loop(open_end(&child_me), &any, &child_peer, 1, n,
			  memcmp(&child_me, &child_peer, sizeof(me)) < 0);
		hx_note("child: %d iterations at its own end", n);
		return 0; /* exits without cleaning up */
	}
	pair_loop(ch, &any, &peer, 2, n, memcmp(&me, &peer, sizeof(me)) < 0);
	hx_stage("waiting for the child");
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		      !WEXITSTATUS(status),
	      "the child failed (wait status %#x)", status);
	hx_note("parent: %d iterations, the child's %d beside them", n, n);
	return 0;
}

/*
 * Connect until a connect forms: around a peer's restart, a connect may
 * meet the dead process, or fail when the new one shows up (-ECONNRESET);
 * a program retries those.
 */
static void connect_retrying(struct rdma_event_channel *ch,
			     struct sockaddr_storage *me,
			     struct sockaddr_storage *peer, struct conn *c)
{
	struct rdma_cm_event *ev;
	int attempt;

	for (attempt = 1;; attempt++) {
		hx_stage("connect, attempt %d", attempt);
		ev = try_connect(ch, me, peer, c);
		if (ev->event == RDMA_CM_EVENT_ESTABLISHED && !ev->status)
			break;
		CHECK(attempt < 20 &&
			      (ev->event == RDMA_CM_EVENT_REJECTED ||
			       ev->event == RDMA_CM_EVENT_UNREACHABLE ||
			       ev->event == RDMA_CM_EVENT_CONNECT_ERROR),
		      "connect: %s status %d", rdma_event_str(ev->event),
		      ev->status);
		hx_note("connect attempt %d: %s status %d, again", attempt,
			rdma_event_str(ev->event), ev->status);
		rdma_ack_cm_event(ev);
		teardown(c);
		usleep(200000);
	}
	rdma_ack_cm_event(ev);
}

/* Print a line the script waits for. */
static void say(const char *word)
{
	printf("%s\n", word);
	fflush(stdout);
}

/*
 * A peer restarted on the same address and port:
 *
 *   restart survivor MY_ADDR MY_PORT PEER_ADDR PEER_PORT GO_FILE
 *   restart peer     MY_ADDR MY_PORT PEER_ADDR PEER_PORT
 *   restart peer2    MY_ADDR MY_PORT PEER_ADDR PEER_PORT
 *
 * The survivor and the peer connect and exchange; the peer says READY and
 * is killed (SIGKILL) by the script, which starts peer2 in its place.  The
 * survivor sees DISCONNECTED, connects again until it forms with peer2,
 * exchanges, says REFORMED and waits for GO_FILE (the script counts its
 * kernel cm_ids meanwhile: the listener and one connection), then
 * disconnects.
 */
static int restart(int argc, char **argv)
{
	struct sockaddr_storage me, peer, any;
	struct rdma_event_channel *ch;
	const char *role;
	struct conn c;

	if (argc < 6)
		hx_fail("usage: restart ROLE MY_ADDR MY_PORT PEER_ADDR "
			"PEER_PORT [GO_FILE]");
	role = argv[1];
	hx_parse_addr(argv[2], (unsigned short)atoi(argv[3]), &me);
	hx_parse_addr(argv[4], (unsigned short)atoi(argv[5]), &peer);
	hx_parse_addr(argv[2], 0, &any);
	hx_set_name("restart/%s", role);
	ch = open_end(&me);

	connect_retrying(ch, &any, &peer, &c);
	exchange(&c, 1);
	if (!strcmp(role, "peer")) {
		say("READY");
		alarm(0);
		for (;;)
			pause(); /* until the script kills it */
	}
	if (!strcmp(role, "peer2")) {
		hx_stage("waiting for the survivor's disconnect");
		await(ch, RDMA_CM_EVENT_DISCONNECTED);
		teardown(&c);
		return 0;
	}
	CHECK(!strcmp(role, "survivor") && argc == 7, "unknown role %s", role);
	hx_stage("waiting for the peer's death");
	await(ch, RDMA_CM_EVENT_DISCONNECTED);
	teardown(&c);
	hx_watchdog(hx_timeout_s());
	connect_retrying(ch, &any, &peer, &c);
	exchange(&c, 1);
	say("REFORMED");
	hx_stage("waiting for %s", argv[6]);
	while (access(argv[6], F_OK))
		usleep(100000);
	CHECK_OK(rdma_disconnect(c.id));
	await(ch, RDMA_CM_EVENT_DISCONNECTED);
	teardown(&c);
	return 0;
}

static const struct hx_scenario scenarios[] = {
	{"pair", "MY_ADDR PEER_ADDR PORT ITERATIONS [PEER_PORT]", pair},
	{"restart", "ROLE MY_ADDR MY_PORT PEER_ADDR PEER_PORT [GO_FILE]",
	 restart},
	{"forked",
	 "MY_ADDR PEER_ADDR PORT ITERATIONS PEER_PORT CHILD_PORT "
	 "PEER_CHILD_PORT",
	 forked},
};

int main(int argc, char **argv)
{
	return hx_main(argc, argv, scenarios,
		       sizeof(scenarios) / sizeof(scenarios[0]));
}
