// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * p2pmesh: N processes form a full mesh of RC connections with
 * peer2peer_mode, every pair connecting from both sides at once.
 *
 *   p2pmesh [-p port] [-c conns] [-i iterations] [-s skew_ms] [-t]
 *           [-w wait_ms] [-B | -D] [-S] [-L] [-R] [-A] [-T] [-b dir] [-q]
 *           rank addr0 addr1 ... addrN-1
 *
 * Rank r listens on addr_r, port + r, and calls rdma_connect towards every
 * other rank, c times each.  Each connection must end in exactly one
 * ESTABLISHED on the id rdma_connect was called on, with the id's whole
 * route in place (both ports; both GIDs, but on iWARP); then both sides send
 * one message naming (sender, receiver, connection, iteration) and check
 * the one they receive, so a connection paired with the wrong one of the
 * peer's shows up as a mismatch.  -s sleeps a random 0..skew_ms before the
 * connects of each iteration; -t gives each connection an explicit tag
 * (RDMA_OPTION_ID_P2P_TAG), so that connection k pairs with the peer's
 * connection k; without it a pair's connections pair in the order they
 * come, and each end learns the peer's index from its hello; -w bounds each
 * phase of an iteration (default 120000 ms).  The event channel is read
 * non-blocking after poll(), one event per wake-up (as rping and QEMU
 * do); -D reads every event there is before waiting again (as UCX does);
 * -B reads it blocking instead, one event per wake-up, as programs
 * written for rdma-core's library often do.
 *
 * Each end reads RDMA_OPTION_ID_INITIATOR after ESTABLISHED and puts it in
 * its message; the two ends of a connection must disagree (exactly one
 * request formed it).  -S keeps iWARP's order: only the initiator sends at
 * once, the other end sends after the initiator's message has arrived.
 *
 * Each connection is connected as soon as it is routed (in index order
 * per peer), as connect-on-demand programs do; -A routes every connection
 * first and then connects them all.  Each connecting id sets
 * RDMA_OPTION_ID_PEER2PEER before it resolves, so that the end which
 * adopts the peer's request need not resolve a route of its own; -R
 * resolves every route, as programs that do not say so.  -T prints a
 * line per step ("T rank R STEP peer P at MS", CLOCK_MONOTONIC) on stderr
 * for tests/bench/run.sh mesh-trace.
 *
 * -L forms the same mesh the way programs must without peer2peer_mode
 * (the baseline the benchmark compares with): each rank connects to the
 * higher ranks and accepts the lower ones on an ordinary listener.  That
 * scheme needs every listener up before the first connect: -b DIR is a
 * start barrier (each rank creates DIR/ready.<rank> once it listens and
 * waits for all N).  The final line reports the average time from the
 * start of an iteration to the last connection carrying data both ways,
 * and the part of it spent until every id was routed (resolve_ms); over
 * the same span the process's CPU time (cpu_ms, all its threads), the
 * user-space part of it (usr_ms), its voluntary context switches
 * (sleeps) and its minor page faults (faults).  The loop waits in
 * epoll(7) on the event channel and on every CQ's completion channel, so
 * that a message counts when it arrives; the wait costs the same with 7
 * connections as with 31.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "common.h"

#define MSG_LEN 64
#define WAIT_DEFAULT_MS 120000

struct conn {
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	int peer, index;
	/*
	 * The peer's index of this connection: ours with explicit tags;
	 * without them, connections of a pair pair in the order they come,
	 * and the peer's hello says which of its connections this is.
	 */
	int peer_index;
	int established; /* ESTABLISHED events seen */
	bool passive; /* -L: this rank accepts this connection */
	struct rdma_cm_id *pending; /* -L: next iteration's early request */
	bool routed, sent, received, disconnected;
	bool connecting; /* rdma_connect was called this iteration */
	bool posted; /* our message is on its way */
	enum ibv_wc_status send_error; /* its failed completion, for the log */
	int initiator; /* RDMA_OPTION_ID_INITIATOR, from ESTABLISHED on */
	char send_buf[MSG_LEN];
	char recv_buf[MSG_LEN];
};

struct mesh {
	int rank, n, conns, iter;
	unsigned int port;
	unsigned long iterations, skew_ms, wait_ms;
	bool explicit_tags, blocking, send_order, lower, drain;
	bool resolve_all; /* -R */
	bool trace; /* -T */
	bool all_routed_first; /* -A */
	const char *barrier_dir; /* -b */
	struct ex_addr *addrs;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct conn *c; /* n * conns, the own rank's slots unused */
	int ep; /* epoll: the event channel (NULL), each completion channel */
	int total, errors;
	int proven_by_disconnect; /* sends the peer's disconnect confirmed */
	uint64_t setup_us; /* summed over the iterations */
	uint64_t resolve_us; /* of it, until every id was routed */
	uint64_t cpu_us; /* CPU time of the process over the same span */
	uint64_t usr_us; /* the part of it spent in user space */
	uint64_t sleeps; /* voluntary context switches over the same span */
	uint64_t faults; /* page faults (minor: no I/O) over the same span */
	unsigned long pumps, empty; /* loop turns, wake-ups with no event */
	bool wait_over; /* an iteration failed because -w ran out */
};

static struct conn *slot(struct mesh *m, int peer, int k)
{
	return &m->c[peer * m->conns + k];
}

static void set_port(struct ex_addr *a, unsigned int port)
{
	if (a->ss.ss_family == AF_INET)
		((struct sockaddr_in *)&a->ss)->sin_port =
			htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)&a->ss)->sin6_port =
			htons((uint16_t)port);
}

static int start_listen(struct mesh *m)
{
	struct ex_addr a = m->addrs[m->rank];
	int on = 1;

	set_port(&a, m->port + (unsigned int)m->rank);
	if (rdma_create_id(m->ch, &m->listen, NULL, RDMA_PS_TCP)) {
		ex_syserr("rdma_create_id");
		return -1;
	}
	/* A p2p listener: hold p2p requests until our own connect comes. */
	if (!m->lower &&
	    rdma_set_option(m->listen, RDMA_OPTION_ID, RDMA_OPTION_ID_PEER2PEER,
			    &on, sizeof(on))) {
		ex_syserr("rdma_set_option(PEER2PEER)");
		return -1;
	}
	if (rdma_bind_addr(m->listen, ex_sa(&a)) ||
	    rdma_listen(m->listen, 64)) {
		ex_syserr("bind/listen");
		return -1;
	}
	return 0;
}

static int adopt_request(struct mesh *m, struct conn *c);
static uint64_t now_ms(void);

/* -T: one line per step on stderr, stamped with CLOCK_MONOTONIC ms. */
static void trace(const struct mesh *m, const char *step, int peer)
{
	if (m->trace)
		fprintf(stderr, "T rank %d %s peer %d at %llu\n", m->rank, step,
			peer, (unsigned long long)now_ms());
}

static void reset_conn(struct mesh *m, struct conn *c)
{
	memset(c->send_buf, 0, sizeof(c->send_buf));
	memset(c->recv_buf, 0, sizeof(c->recv_buf));
	c->established = 0;
	c->routed = c->sent = c->received = c->disconnected = false;
	c->posted = false;
	c->send_error = IBV_WC_SUCCESS;
	c->connecting = false;
	c->passive = m->lower && c->peer < m->rank;
}

static int start_connect(struct mesh *m, struct conn *c)
{
	struct ex_addr dst = m->addrs[c->peer];
	struct ex_addr src = m->addrs[m->rank];
	int on = 1;

	reset_conn(m, c);
	if (c->passive) /* its id comes with the peer's request */
		return c->pending ? adopt_request(m, c) : 0;
	set_port(&dst, m->port + (unsigned int)c->peer);
	set_port(&src, 0);
	if (rdma_create_id(m->ch, &c->id, c, RDMA_PS_TCP)) {
		ex_syserr("rdma_create_id");
		return -1;
	}
	/*
	 * Said before resolving: the library may leave the route for later
	 * on the end that adopts the peer's request (rdma_cm_p2p(7)).
	 */
	if (!m->lower && !m->resolve_all &&
	    rdma_set_option(c->id, RDMA_OPTION_ID, RDMA_OPTION_ID_PEER2PEER,
			    &on, sizeof(on))) {
		ex_syserr("rdma_set_option(PEER2PEER)");
		return -1;
	}
	if (m->explicit_tags) {
		/* Both sides name the connection the same: lower rank first. */
		int lo = m->rank < c->peer ? m->rank : c->peer;
		int hi = m->rank ^ c->peer ^ lo;
		uint64_t tag = ((uint64_t)lo << 40) | ((uint64_t)hi << 20) |
			       (uint64_t)(m->iter * m->conns + c->index);

		if (rdma_set_option(c->id, RDMA_OPTION_ID,
				    RDMA_OPTION_ID_P2P_TAG, &tag,
				    sizeof(tag))) {
			ex_syserr("rdma_set_option(P2P_TAG)");
			return -1;
		}
	}
	trace(m, "resolve_addr", c->peer);
	if (rdma_resolve_addr(c->id, ex_sa(&src), ex_sa(&dst), EX_RESOLVE_MS)) {
		ex_syserr("rdma_resolve_addr");
		return -1;
	}
	return 0;
}

/* Watch (or stop watching) the completion channels of @c's CQs. */
static int watch_cqs(struct mesh *m, struct conn *c, int op)
{
	struct ibv_comp_channel *cc[] = {c->id->send_cq_channel,
					 c->id->recv_cq_channel};
	struct epoll_event ev = {.events = EPOLLIN};
	unsigned int i;

	for (i = 0; i < 2; i++) {
		ev.data.ptr = cc[i];
		if (epoll_ctl(m->ep, op, cc[i]->fd, &ev) && op == EPOLL_CTL_ADD)
			return -1;
	}
	return 0;
}

static int on_route(struct mesh *m, struct conn *c)
{
	struct ibv_qp_init_attr attr = {
		.cap = {.max_send_wr = 2,
			.max_recv_wr = 2,
			.max_send_sge = 1,
			.max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};

	if (rdma_create_qp(c->id, NULL, &attr)) {
		ex_syserr("rdma_create_qp");
		return -1;
	}
	if (ibv_req_notify_cq(c->id->send_cq, 0) ||
	    ibv_req_notify_cq(c->id->recv_cq, 0)) {
		ex_syserr("ibv_req_notify_cq");
		return -1;
	}
	if (watch_cqs(m, c, EPOLL_CTL_ADD)) {
		ex_syserr("epoll_ctl");
		return -1;
	}
	c->mr = rdma_reg_msgs(c->id, c, sizeof(*c));
	if (!c->mr) {
		ex_syserr("rdma_reg_msgs");
		return -1;
	}
	if (rdma_post_recv(c->id, NULL, c->recv_buf, MSG_LEN, c->mr)) {
		ex_syserr("rdma_post_recv");
		return -1;
	}
	c->routed = true;
	return 0;
}

/* Connect @c, its hello naming this rank and the connection's index. */
static int connect_one(struct mesh *m, struct conn *c)
{
	struct rdma_conn_param param = {
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 7,
		.rnr_retry_count = 7,
		.peer2peer_mode = !m->lower,
	};
	char hello[32];

	if (c->passive)
		return 0;
	snprintf(hello, sizeof(hello), "hello %d.%d", m->rank, c->index);
	param.private_data = hello;
	param.private_data_len = (uint8_t)(strlen(hello) + 1);
	if (rdma_connect(c->id, &param)) {
		ex_syserr("rdma_connect to rank %d", c->peer);
		return -1;
	}
	return 0;
}

/*
 * The routed connections towards @peer not yet connected, in index order,
 * up to the first one not routed.
 */
static int connect_routed(struct mesh *m, int peer)
{
	struct conn *c;
	int k;

	for (k = 0; k < m->conns; k++) {
		c = slot(m, peer, k);
		if (c->passive || c->connecting)
			continue;
		if (!c->routed)
			return 0;
		c->connecting = true;
		trace(m, "connect", peer);
		if (connect_one(m, c))
			return -1;
	}
	return 0;
}

static int send_msg(struct mesh *m, struct conn *c)
{
	snprintf(c->send_buf, MSG_LEN, "data %d>%d #%d it %d init %d", m->rank,
		 c->peer, c->index, m->iter, c->initiator);
	if (rdma_post_send(c->id, NULL, c->send_buf, MSG_LEN, c->mr, 0)) {
		ex_syserr("rdma_post_send");
		return -1;
	}
	c->posted = true;
	return 0;
}

/* The peer's message, once ours is known: it names the other initiator. */
static int check_recv(struct mesh *m, struct conn *c)
{
	char want[MSG_LEN];

	snprintf(want, MSG_LEN, "data %d>%d #%d it %d init %d", c->peer,
		 m->rank, c->peer_index, m->iter, !c->initiator);
	if (strcmp(c->recv_buf, want)) {
		ex_err("from rank %d conn %d: \"%.*s\", expected \"%s\"",
		       c->peer, c->index, MSG_LEN, c->recv_buf, want);
		return -1;
	}
	return 0;
}

/*
 * Once connected, each end's id shows its whole route, whichever end's
 * request formed the connection and whatever the library left until then
 * (p2p resolution, rdma_cm_p2p(7)): both ports and, on InfiniBand and
 * RoCE, both GIDs (iWARP's are the link addresses, none for a peer on
 * the same host).
 */
static int check_route(const struct conn *c)
{
	const struct rdma_addr *a = &c->id->route.addr;
	static const uint8_t zero[16];
	bool gids = c->id->verbs &&
		    c->id->verbs->device->transport_type != IBV_TRANSPORT_IWARP;

	if (!rdma_get_src_port(c->id) || !rdma_get_dst_port(c->id) ||
	    (gids && (!memcmp(a->addr.ibaddr.sgid.raw, zero, sizeof(zero)) ||
		      !memcmp(a->addr.ibaddr.dgid.raw, zero, sizeof(zero))))) {
		ex_err("rank %d conn %d: ESTABLISHED with an incomplete route "
		       "(ports %u, %u)",
		       c->peer, c->index, be16toh(rdma_get_src_port(c->id)),
		       be16toh(rdma_get_dst_port(c->id)));
		return -1;
	}
	return 0;
}

/*
 * Which of the peer's connections @c is, from the hello in @p: ours with
 * explicit tags (or one connection per pair); without, any of the peer's
 * not yet paired with another of ours this iteration.  -1 if none fits.
 */
static int peer_index_of(struct mesh *m, const struct conn *c,
			 const struct rdma_conn_param *p)
{
	char hello[32] = "";
	int peer, k, j;
	struct conn *o;

	if (m->explicit_tags || m->conns == 1 || !p->private_data)
		return c->index;
	memcpy(hello, p->private_data,
	       p->private_data_len < sizeof(hello) - 1 ? p->private_data_len
						       : sizeof(hello) - 1);
	if (sscanf(hello, "hello %d.%d", &peer, &k) != 2 || peer != c->peer ||
	    k < 0 || k >= m->conns)
		return c->index;
	for (j = 0; j < m->conns; j++) {
		o = slot(m, c->peer, j);
		if (o != c && o->established && o->peer_index == k)
			return -1;
	}
	return k;
}

static int on_established(struct mesh *m, struct conn *c,
			  const struct rdma_conn_param *p)
{
	char want[32];
	size_t len;

	if (++c->established != 1) {
		ex_err("rank %d conn %d: ESTABLISHED #%d", c->peer, c->index,
		       c->established);
		return -1;
	}
	c->peer_index = peer_index_of(m, c, p);
	if (c->peer_index < 0) {
		ex_err("rank %d conn %d: paired with a connection of the "
		       "peer's "
		       "already paired",
		       c->peer, c->index);
		return -1;
	}
	snprintf(want, sizeof(want), "hello %d.%d", c->peer, c->peer_index);
	/*
	 * peer2peer_mode delivers the peer's private data at its length; an
	 * ordinary REP's comes padded to the transport's field size, and the
	 * passive side of -L saw the hello in the request already.
	 */
	len = strlen(want) + 1;
	if (c->passive && !p->peer2peer_mode)
		goto initiator;
	if (p->peer2peer_mode == m->lower ||
	    (m->lower ? p->private_data_len < len
		      : p->private_data_len != len) ||
	    memcmp(p->private_data, want, len)) {
		ex_err("rank %d conn %d: ESTABLISHED p2p=%u with %u bytes, "
		       "expected \"%s\"",
		       c->peer, c->index, p->peer2peer_mode,
		       p->private_data_len, want);
		return -1;
	}
initiator:
	if (check_route(c))
		return -1;
	if (rdma_get_option(c->id, RDMA_OPTION_ID, RDMA_OPTION_ID_INITIATOR,
			    &c->initiator, sizeof(c->initiator))) {
		ex_syserr("rdma_get_option(INITIATOR)");
		return -1;
	}
	if (c->received && check_recv(m, c))
		return -1;
	/* -S: the other end sends once the initiator's message is here. */
	if (m->send_order && !c->initiator && !c->received)
		return 0;
	return send_msg(m, c);
}

/*
 * Which end disconnects once both messages are through: the lower rank, or
 * under -S the end that sent last (it knows its own send has completed).
 */
static bool ends_connection(const struct mesh *m, const struct conn *c)
{
	return m->send_order ? !c->initiator : m->rank < c->peer;
}

/*
 * The other end disconnects only once it holds our message, and its
 * disconnect can overtake our SEND's completion: rxe completes a receive
 * before it sends the ACK, and a sender that never gets the ACK may never
 * complete its SEND; siw fails a SEND that went out whole if the peer's FIN
 * arrives first (tests/system/BUGS.md rxe-lost-ack, siw-send-error).  So on
 * that end a failed or missing send completion is not the verdict; the
 * peer's DISCONNECTED proves delivery.
 */
static bool disconnect_proves_delivery(const struct mesh *m,
				       const struct conn *c)
{
	return c->established == 1 && c->posted && !ends_connection(m, c);
}

static int poll_cqs(struct mesh *m, struct conn *c)
{
	struct ibv_wc wc;

	if (!c->id || !c->id->qp)
		return 0;
	while (ibv_poll_cq(c->id->send_cq, 1, &wc) > 0) {
		if (wc.status && disconnect_proves_delivery(m, c)) {
			c->send_error = wc.status;
			continue;
		}
		if (wc.status) {
			ex_err("send to %d: %s", c->peer,
			       ibv_wc_status_str(wc.status));
			return -1;
		}
		c->sent = true;
	}
	while (ibv_poll_cq(c->id->recv_cq, 1, &wc) > 0) {
		if (wc.status) {
			ex_err("recv from %d: %s", c->peer,
			       ibv_wc_status_str(wc.status));
			return -1;
		}
		c->received = true;
		trace(m, "received", c->peer);
		/* Before our ESTABLISHED, that event checks it. */
		if (c->established != 1)
			continue;
		if (check_recv(m, c))
			return -1;
		if (!c->posted && send_msg(m, c))
			return -1;
	}
	return 0;
}

/*
 * -L: a lower rank's request, "hello <rank>.<index>".  A rank that is
 * done with an iteration may ask for the next one's connection before this
 * rank has torn down the last one: keep such a request until then.
 */
static int on_request(struct mesh *m, struct rdma_cm_event *e)
{
	const struct rdma_conn_param *req = &e->param.conn;
	char hello[32];
	int peer, k;
	struct conn *c;

	memset(hello, 0, sizeof(hello));
	if (req->private_data)
		memcpy(hello, req->private_data,
		       req->private_data_len < sizeof(hello) - 1
			       ? req->private_data_len
			       : sizeof(hello) - 1);
	if (sscanf(hello, "hello %d.%d", &peer, &k) != 2 || peer < 0 ||
	    peer >= m->rank || k < 0 || k >= m->conns ||
	    slot(m, peer, k)->pending) {
		ex_err("unexpected request \"%s\"", hello);
		rdma_reject(e->id, NULL, 0);
		return -1;
	}
	c = slot(m, peer, k);
	c->pending = e->id;
	return c->id ? 0 : adopt_request(m, c);
}

static int adopt_request(struct mesh *m, struct conn *c)
{
	struct rdma_conn_param param = {.responder_resources = 1,
					.initiator_depth = 1,
					.rnr_retry_count = 7};
	char hello[32];

	c->id = c->pending;
	c->pending = NULL;
	c->id->context = c;
	if (on_route(m, c))
		return -1;
	snprintf(hello, sizeof(hello), "hello %d.%d", m->rank, c->index);
	param.private_data = hello;
	param.private_data_len = (uint8_t)(strlen(hello) + 1);
	if (rdma_accept(c->id, &param)) {
		ex_syserr("rdma_accept from rank %d", c->peer);
		return -1;
	}
	return 0;
}

static int handle_event(struct mesh *m, struct rdma_cm_event *e)
{
	struct conn *c = e->id->context;

	trace(m, rdma_event_str(e->event),
	      c && e->id != m->listen ? c->peer : -1);
	if (m->lower && e->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return on_request(m, e);
	if (e->id == m->listen || !c) {
		ex_err("listener: unexpected %s", rdma_event_str(e->event));
		return -1;
	}
	switch (e->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		trace(m, "resolve_route", c->peer);
		if (rdma_resolve_route(c->id, EX_RESOLVE_MS)) {
			ex_syserr("rdma_resolve_route");
			return -1;
		}
		return 0;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (on_route(m, c))
			return -1;
		/* As a connect-on-demand program: each peer once routed. */
		return m->all_routed_first ? 0 : connect_routed(m, c->peer);
	case RDMA_CM_EVENT_ESTABLISHED:
		return on_established(m, c, &e->param.conn);
	case RDMA_CM_EVENT_DISCONNECTED:
		if (!c->established) {
			/* The kernel may end a connection that never formed. */
			ex_err("rank %d conn %d: DISCONNECTED before "
			       "ESTABLISHED",
			       c->peer, c->index);
			return -1;
		}
		c->disconnected = true;
		if (!c->sent && disconnect_proves_delivery(m, c)) {
			c->sent = true;
			m->proven_by_disconnect++;
		}
		return 0;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		return 0;
	default:
		ex_err("rank %d conn %d: %s (status %d)", c->peer, c->index,
		       rdma_event_str(e->event), e->status);
		return -1;
	}
}

/* Take a completion channel's event and ask for the next one. */
static int rearm_cq(struct ibv_comp_channel *cc)
{
	struct ibv_cq *cq;
	void *ctx;

	if (ibv_get_cq_event(cc, &cq, &ctx)) {
		ex_syserr("ibv_get_cq_event");
		return -1;
	}
	ibv_ack_cq_events(cq, 1);
	if (ibv_req_notify_cq(cq, 0)) {
		ex_syserr("ibv_req_notify_cq");
		return -1;
	}
	return 0;
}

/*
 * The channel woke: one event, or with -D every event until EAGAIN.  A
 * wake-up that finds none counts as empty.
 */
static int read_events(struct mesh *m)
{
	struct rdma_cm_event *e;
	int n, ret;

	for (n = 0; n == 0 || m->drain; n++) {
		if (rdma_get_cm_event(m->ch, &e)) {
			if (errno != EAGAIN)
				return -1;
			m->empty += !n;
			return 0;
		}
		ret = handle_event(m, e);
		rdma_ack_cm_event(e);
		if (ret)
			return -1;
	}
	return 0;
}

/*
 * Waits for the event channel and every CQ's completion channel, so that
 * a message is seen when it arrives, not at the next CM event or timeout.
 */
static int pump(struct mesh *m, int timeout_ms)
{
	struct epoll_event evs[16];
	bool cm_ready = false;
	int i, n;

	m->pumps++;
	n = epoll_wait(m->ep, evs, 16, timeout_ms);
	for (i = 0; i < n; i++) {
		if (!evs[i].data.ptr)
			cm_ready = true;
		else if (rearm_cq(evs[i].data.ptr))
			return -1;
	}
	/*
	 * A wake-up with no event (a library timer) still falls through to
	 * the CQs: returning early would starve them for as long as such
	 * wake-ups keep coming.
	 */
	if (cm_ready && read_events(m))
		return -1;
	for (i = 0; i < m->n * m->conns; i++)
		if (poll_cqs(m, &m->c[i]))
			return -1;
	return 0;
}

/* The process's CPU time (all its threads, the library's too). */
static uint64_t cpu_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/*
 * The process's user-space CPU time (cpu_now_us less the kernel's part),
 * its voluntary context switches (each sleep of any of its threads) and
 * its minor page faults (first touches of code and data pages).
 */
static uint64_t usr_now_us(uint64_t *sleeps, uint64_t *faults)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*sleeps = (uint64_t)ru.ru_nvcsw;
	*faults = (uint64_t)ru.ru_minflt;
	return (uint64_t)ru.ru_utime.tv_sec * 1000000 +
	       (uint64_t)ru.ru_utime.tv_usec;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t now_ms(void)
{
	return now_us() / 1000;
}

typedef bool (*conn_pred)(const struct conn *c);

static bool routed(const struct conn *c)
{
	return c->routed || c->passive;
}

static bool exchanged(const struct conn *c)
{
	return c->established == 1 && c->sent && c->received;
}

static bool gone(const struct conn *c)
{
	return c->disconnected;
}

/* Where each connection that did not get there stands, for the log. */
static void report_stuck(const struct mesh *m, conn_pred done)
{
	int p, k;

	for (p = 0; p < m->n; p++)
		for (k = 0; p != m->rank && k < m->conns; k++) {
			const struct conn *c = &m->c[p * m->conns + k];

			if (!done(c))
				ex_err("  stuck: rank %d -> rank %d conn %d: "
				       "routed %d established %d sent %d "
				       "received %d%s%s",
				       m->rank, p, k, c->routed, c->established,
				       c->sent, c->received,
				       c->send_error ? " send: " : "",
				       c->send_error ? ibv_wc_status_str(
							       c->send_error)
						     : "");
		}
}

/* Run the event loop until every connection satisfies @done. */
static int wait_all(struct mesh *m, conn_pred done, const char *what)
{
	uint64_t end = now_ms() + m->wait_ms;
	int p, k, left;

	for (;;) {
		left = 0;
		for (p = 0; p < m->n; p++)
			for (k = 0; p != m->rank && k < m->conns; k++)
				left += !done(slot(m, p, k));
		if (!left)
			return 0;
		if (now_ms() > end) {
			ex_err("iteration %d: %d connections not %s", m->iter,
			       left, what);
			report_stuck(m, done);
			m->wait_over = true;
			return -1;
		}
		if (pump(m, 20))
			return -1;
	}
}

static void teardown(struct mesh *m, struct conn *c)
{
	if (!c->id)
		return;
	if (c->id->qp)
		watch_cqs(m, c, EPOLL_CTL_DEL);
	if (c->mr)
		rdma_dereg_mr(c->mr);
	c->mr = NULL;
	rdma_destroy_qp(c->id);
	rdma_destroy_id(c->id);
	c->id = NULL;
}

/*
 * The measured part of an iteration: every connection formed and carrying
 * a message each way.  A function of its own, so that a profiler can be
 * told to count this span only (valgrind --toggle-collect=form_mesh).
 */
static __attribute__((noinline)) int form_mesh(struct mesh *m, uint64_t t0)
{
	int p, k;

	trace(m, "start", -1);
	for (p = 0; p < m->n; p++)
		for (k = 0; p != m->rank && k < m->conns; k++)
			if (start_connect(m, slot(m, p, k)))
				return -1;
	if (wait_all(m, routed, "resolved"))
		return -1;
	m->resolve_us += now_us() - t0;
	for (p = 0; p < m->n; p++)
		if (p != m->rank && connect_routed(m, p))
			return -1;
	return wait_all(m, exchanged, "established with data both ways");
}

static int run_iteration(struct mesh *m)
{
	uint64_t t0, cpu0, usr0, sleeps0, sleeps, faults0, faults;
	int p, k;

	if (m->skew_ms)
		usleep((useconds_t)(rand() % (int)(m->skew_ms + 1)) * 1000);
	t0 = now_us();
	cpu0 = cpu_now_us();
	usr0 = usr_now_us(&sleeps0, &faults0);
	if (form_mesh(m, t0))
		return -1;
	m->setup_us += now_us() - t0;
	m->cpu_us += cpu_now_us() - cpu0;
	m->usr_us += usr_now_us(&sleeps, &faults) - usr0;
	m->sleeps += sleeps - sleeps0;
	m->faults += faults - faults0;
	/* Both sides got their message: one end of each ends it. */
	for (p = 0; p < m->n; p++)
		for (k = 0; p != m->rank && k < m->conns; k++)
			if (ends_connection(m, slot(m, p, k)) &&
			    rdma_disconnect(slot(m, p, k)->id)) {
				ex_syserr("rdma_disconnect");
				return -1;
			}
	if (wait_all(m, gone, "disconnected"))
		return -1;
	for (p = 0; p < m->n; p++)
		for (k = 0; p != m->rank && k < m->conns; k++) {
			if (!ends_connection(m, slot(m, p, k)))
				rdma_disconnect(slot(m, p, k)->id);
			teardown(m, slot(m, p, k));
			m->total++;
		}
	return 0;
}

/* -b: announce that this rank listens, then wait until all ranks do. */
static int start_barrier(struct mesh *m)
{
	uint64_t end = now_ms() + m->wait_ms;
	char path[4096];
	int r, fd;

	snprintf(path, sizeof(path), "%s/ready.%d", m->barrier_dir, m->rank);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0) {
		ex_syserr("%s", path);
		return -1;
	}
	close(fd);
	for (r = 0; r < m->n; r++) {
		snprintf(path, sizeof(path), "%s/ready.%d", m->barrier_dir, r);
		while (access(path, F_OK)) {
			if (now_ms() > end) {
				ex_err("rank %d never got ready", r);
				return -1;
			}
			usleep(5000);
		}
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: %s [-p port] [-c conns] [-i iterations] [-s skew_ms] "
		"[-t] [-w wait_ms] [-B | -D] [-S] [-L] [-R] [-A] [-T] [-b dir] "
		"[-q] "
		"rank "
		"addr0 addr1 ...\n",
		ex_prog());
	return EX_USAGE;
}

int main(int argc, char **argv)
{
	struct mesh m = {.port = 7470,
			 .conns = 1,
			 .iterations = 1,
			 .wait_ms = WAIT_DEFAULT_MS};
	unsigned long v;
	int opt, i;

	ex_init("p2pmesh");
	while ((opt = getopt(argc, argv, "p:c:i:s:w:b:tBDSLRATqh")) != -1) {
		switch (opt) {
		case 'p':
			if (ex_parse_num(optarg, 'p', 1, 65000, &v))
				return EX_USAGE;
			m.port = (unsigned int)v;
			break;
		case 'c':
			if (ex_parse_num(optarg, 'c', 1, 64, &v))
				return EX_USAGE;
			m.conns = (int)v;
			break;
		case 'i':
			if (ex_parse_num(optarg, 'i', 1, 100000, &m.iterations))
				return EX_USAGE;
			break;
		case 's':
			if (ex_parse_num(optarg, 's', 0, 60000, &m.skew_ms))
				return EX_USAGE;
			break;
		case 'w':
			if (ex_parse_num(optarg, 'w', 1, 3600000, &m.wait_ms))
				return EX_USAGE;
			break;
		case 't':
			m.explicit_tags = true;
			break;
		case 'S':
			m.send_order = true;
			break;
		case 'L':
			m.lower = true;
			break;
		case 'R':
			m.resolve_all = true;
			break;
		case 'A':
			m.all_routed_first = true;
			break;
		case 'T':
			m.trace = true;
			break;
		case 'b':
			m.barrier_dir = optarg;
			break;
		case 'B':
			m.blocking = true;
			break;
		case 'D':
			m.drain = true;
			break;
		case 'q':
			ex_quiet = true;
			break;
		default:
			return usage();
		}
	}
	if (argc - optind < 3 || ex_parse_num(argv[optind], 'r', 0, 1023, &v) ||
	    (m.blocking && m.drain))
		return usage();
	m.rank = (int)v;
	m.n = argc - optind - 1;
	if (m.rank >= m.n)
		return usage();
	m.addrs = calloc((size_t)m.n, sizeof(*m.addrs));
	m.c = calloc((size_t)(m.n * m.conns), sizeof(*m.c));
	if (!m.addrs || !m.c)
		return EX_FAIL;
	for (i = 0; i < m.n; i++)
		if (ex_resolve(argv[optind + 1 + i], NULL, 0, RDMA_PS_TCP,
			       &m.addrs[i]))
			return EX_USAGE;
	for (i = 0; i < m.n * m.conns; i++) {
		m.c[i].peer = i / m.conns;
		m.c[i].index = i % m.conns;
	}
	srand((unsigned int)(getpid() ^ time(NULL)));
	m.ch = rdma_create_event_channel();
	m.ep = epoll_create1(EPOLL_CLOEXEC);
	if (!m.ch || m.ep < 0 ||
	    epoll_ctl(m.ep, EPOLL_CTL_ADD, m.ch->fd,
		      &(struct epoll_event){.events = EPOLLIN})) {
		ex_syserr("event channel");
		return EX_FAIL;
	}
	/*
	 * One loop polls the CQs and the channel: its reads must not block.
	 * Made non-blocking before the listen, the channel is never served
	 * (rdma_cm_p2p(7)): its events take no hop through the library's
	 * thread.  -B keeps it blocking, as programs that poll, then block in
	 * rdma_get_cm_event, do; the channel is then served.
	 */
	if (!m.blocking &&
	    fcntl(m.ch->fd, F_SETFL, fcntl(m.ch->fd, F_GETFL) | O_NONBLOCK)) {
		ex_syserr("fcntl(O_NONBLOCK)");
		return EX_FAIL;
	}
	if (start_listen(&m) || (m.barrier_dir && start_barrier(&m)))
		return EX_FAIL;
	for (m.iter = 0; m.iter < (int)m.iterations; m.iter++) {
		if (run_iteration(&m)) {
			/* When and why: a harness finds the first failure. */
			ex_err("rank %d: FAILED in iteration %d at %llu ms "
			       "(%s)",
			       m.rank, m.iter, (unsigned long long)now_ms(),
			       m.wait_over ? "wait over" : "error");
			return EX_FAIL;
		}
		ex_info("rank %d: iteration %d: %d connections formed", m.rank,
			m.iter, (m.n - 1) * m.conns);
	}
	rdma_destroy_id(m.listen);
	rdma_destroy_event_channel(m.ch);
	printf("p2pmesh rank %d: OK connections=%d iterations=%lu "
	       "setup_ms=%.1f resolve_ms=%.1f cpu_ms=%.1f usr_ms=%.1f "
	       "sleeps=%.1f faults=%.1f polls=%lu "
	       "empty=%lu proven=%d\n",
	       m.rank, m.total, m.iterations,
	       (double)m.setup_us / 1000.0 / (double)m.iterations,
	       (double)m.resolve_us / 1000.0 / (double)m.iterations,
	       (double)m.cpu_us / 1000.0 / (double)m.iterations,
	       (double)m.usr_us / 1000.0 / (double)m.iterations,
	       (double)m.sleeps / (double)m.iterations,
	       (double)m.faults / (double)m.iterations, m.pumps, m.empty,
	       m.proven_by_disconnect);
	return EX_OK;
}
