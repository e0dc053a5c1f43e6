/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The scripted peer of the p2p unit tests: this process is 192.0.2.1 with
 * a listener on port P2P_PORT on a non-blocking channel (rdma_cm_p2p(7)
 * asks programs that poll to make it so); the test plays a peer at
 * 192.0.2.2 (a higher identity) or 192.0.2.0 (a lower one), listening on
 * P2P_PORT too, whose requests, answers and refusals arrive as kernel
 * events of the fake device (fake_ucma) in the order the test chooses.
 *
 * Included by one test file per program (the state is static): it needs
 * cma.h, fake_ucma.h, fake_verbs.h, p2p_wire.h and unit.h first.
 */
#ifndef P2P_PEER_H
#define P2P_PEER_H

#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#define P2P_PORT 7471

static struct rdma_event_channel *ch;
static struct rdma_cm_id *listener;
/* Header flags of the peer's requests (CMA_P2P_F_EXPLICIT_TAG or 0). */
static uint8_t req_flags;
/* The incarnation the peer's requests state (0: not stated, version 1). */
static uint64_t req_incarnation;
/* The kind the peer's "requests" claim (CMA_P2P_REQ unless a test lies). */
static uint8_t req_kind = CMA_P2P_REQ;
/*
 * The QP number the peer's requests come from, and the number each
 * states (0: none, as iWARP's QP numbers, or version 1's numbers), which
 * a NOTICE names (src/p2p/p2p_stale.c).
 */
static uint32_t req_qpn;
static uint32_t req_number;
/* The listening port the peer's requests claim. */
static uint16_t req_port = P2P_PORT;
/* The address this process's listener is bound to (a test may widen it). */
static const char *listen_addr = "192.0.2.1";

/* The id's kernel id (CMA_NO_KERNEL_ID: not made yet). */
static inline uint32_t kid_of(struct rdma_cm_id *id)
{
	struct cma_id_private *id_priv = cma_id_priv(id);
	uint32_t kid;

	/* The service thread may be making it (cma_id_kernel). */
	pthread_mutex_lock(&id_priv->mut);
	kid = id_priv->handle;
	pthread_mutex_unlock(&id_priv->mut);
	return kid;
}

/*
 * A listener at listen_addr:@port on the channel, or NULL.  Without
 * Check's asserts: a forked child makes its own with it.
 */
static inline struct rdma_cm_id *listening_id(uint16_t port)
{
	struct sockaddr_in me = unit_ipv4(listen_addr, port);
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return NULL;
	if (rdma_bind_addr(id, (struct sockaddr *)&me) || rdma_listen(id, 8)) {
		rdma_destroy_id(id);
		return NULL;
	}
	return id;
}

/* The channel and the listener at listen_addr:P2P_PORT. */
static inline void p2p_peer_setup(void)
{
	int flags;

	ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(ch);
	flags = fcntl(ch->fd, F_GETFL);
	ck_assert_int_eq(fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK), 0);
	listener = listening_id(P2P_PORT);
	ck_assert_ptr_nonnull(listener);
}

/* The fakes installed, then p2p_peer_setup: the usual fixture. */
static inline void p2p_peer_fixture(void)
{
	fake_ucma_install();
	fake_verbs_install(true);
	p2p_peer_setup();
}

static inline void p2p_peer_teardown(void)
{
	fake_ucma_uninstall();
}

/* This process runs in p2p mode: its listener holds the peers' requests. */
static inline void listener_holds(void)
{
	int on = 1;

	ck_assert_int_eq(rdma_set_option(listener, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_PEER2PEER, &on,
					 sizeof(on)),
			 0);
}

/*
 * Up to 5 s for the library to have sent @count commands @cmd, some from
 * its own thread (a timer's work).
 */
static inline void await_cmd(uint32_t cmd, int count)
{
	int i;

	for (i = 0; i < 500 && fake_ucma_count(cmd) < count; i++)
		usleep(10000);
	ck_assert_int_ge(fake_ucma_count(cmd), count);
}

/* The next event the application sees, which must be @type. */
static inline struct rdma_cm_event *expect_event(enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev;

	ck_assert_int_eq(rdma_get_cm_event(ch, &ev), 0);
	ck_assert_msg(ev->event == type, "got %s, want %s",
		      rdma_event_str(ev->event), rdma_event_str(type));
	return ev;
}

/*
 * The next event, which a library timer posts: poll(2) for it as an
 * outside program would (bounded only so that a bug fails the test).
 */
static inline struct rdma_cm_event *await_event(enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev;
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	int tries;

	for (tries = 0; tries < 100; tries++) {
		ck_assert_int_eq(poll(&pfd, 1, 100) >= 0, 1);
		if (!rdma_get_cm_event(ch, &ev))
			break;
		ck_assert_int_eq(errno, EAGAIN);
	}
	ck_assert_msg(tries < 100, "no %s", rdma_event_str(type));
	ck_assert_msg(ev->event == type, "got %s, want %s",
		      rdma_event_str(ev->event), rdma_event_str(type));
	return ev;
}

/* Nothing for the application (the library kept whatever came). */
static inline void expect_nothing(void)
{
	struct rdma_cm_event *ev = NULL;

	ck_assert_int_eq(rdma_get_cm_event(ch, &ev), -1);
	ck_assert_int_eq(errno, EAGAIN);
}

/* The peer's p2p REQ from @from (port req_port), tag @tag, with @data. */
static inline uint32_t peer_request(const char *from, uint64_t tag,
				    const char *data)
{
	struct cma_p2p_hdr hdr = {.kind = req_kind,
				  .flags = req_flags,
				  .port = req_port,
				  .tag = tag,
				  .incarnation = req_incarnation,
				  .number = req_number,
				  .data_len = (uint8_t)strlen(data)};
	struct rdma_ucm_event_resp *r;
	struct sockaddr_in peer = unit_ipv4(from, 40000),
			   me = unit_ipv4("192.0.2.1", P2P_PORT);
	uint32_t child = 0;

	fake_ucma_hold(); /* the library's thread may read a served fd */
	r = fake_ucma_conn_req(kid_of(listener), &child);
	ck_assert_ptr_nonnull(r);
	cma_p2p_hdr_encode(&hdr, r->param.conn.private_data);
	memcpy(r->param.conn.private_data + CMA_P2P_HDR_LEN, data,
	       strlen(data));
	r->param.conn.private_data_len =
		(uint8_t)(CMA_P2P_HDR_LEN + strlen(data));
	r->param.conn.responder_resources = 4;
	r->param.conn.initiator_depth = 4;
	r->param.conn.qp_num = req_qpn;
	fake_ucma_kid(child)->has_peer_qpn = true;
	fake_ucma_kid(child)->peer_qpn = req_qpn;
	memcpy(&fake_ucma_kid(child)->dst, &peer, sizeof(peer));
	/* As the kernel's: the address it came to, even on a wildcard. */
	memcpy(&fake_ucma_kid(child)->src, &me, sizeof(me));
	fake_ucma_release();
	return child;
}

/*
 * An id from this process's address (port @src_port; 0: the kernel's
 * pick) to the peer listening at @to:@port, with a QP, resolved.
 */
static inline struct rdma_cm_id *
connecting_id_from(uint16_t src_port, const char *to, uint16_t port)
{
	struct sockaddr_in src = unit_ipv4("192.0.2.1", src_port),
			   dst = unit_ipv4(to, port);
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);
	struct rdma_cm_id *id;

	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_resolve_addr(id, (struct sockaddr *)&src,
					   (struct sockaddr *)&dst, 2000),
			 0);
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ADDR_RESOLVED));
	ck_assert_int_eq(rdma_resolve_route(id, 2000), 0);
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ROUTE_RESOLVED));
	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), 0);
	return id;
}

/* The same from any source port. */
static inline struct rdma_cm_id *connecting_id_port(const char *to,
						    uint16_t port)
{
	return connecting_id_from(0, to, port);
}

/* The same towards the peer's usual port. */
static inline struct rdma_cm_id *connecting_id(const char *to)
{
	return connecting_id_port(to, P2P_PORT);
}

static inline int p2p_connect(struct rdma_cm_id *id)
{
	struct rdma_conn_param p = {.responder_resources = 1,
				    .initiator_depth = 1,
				    .private_data = "mine",
				    .private_data_len = 4,
				    .peer2peer_mode = 1};

	return rdma_connect(id, &p);
}

/* The p2p header of the last command of a kind that carries one. */
static inline struct cma_p2p_hdr sent_hdr(uint32_t cmd, uint32_t handle)
{
	const struct fake_cmd *c = fake_ucma_last(cmd);
	const uint8_t *data = NULL;
	struct cma_p2p_hdr hdr;
	size_t len = 0;

	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(c->handle, handle);
	if (cmd == RDMA_USER_CM_CMD_CONNECT) {
		const struct rdma_ucm_connect *k = (const void *)c->body;

		data = k->conn_param.private_data;
		len = k->conn_param.private_data_len;
	} else if (cmd == RDMA_USER_CM_CMD_ACCEPT) {
		const struct rdma_ucm_accept *k = (const void *)c->body;

		data = k->conn_param.private_data;
		len = k->conn_param.private_data_len;
	} else {
		const struct rdma_ucm_reject *k = (const void *)c->body;

		data = k->private_data;
		len = k->private_data_len;
	}
	ck_assert_int_eq(cma_p2p_hdr_parse(data, len, &hdr), CMA_P2P_OK);
	return hdr;
}

/* Up to 5 s for @n commands @cmd on kernel id @kid (a timer's work). */
static inline void await_on(uint32_t cmd, uint32_t kid, int n)
{
	int i;

	for (i = 0; i < 500 && fake_ucma_count_on(cmd, kid) < n; i++)
		usleep(10000);
	ck_assert_int_ge(fake_ucma_count_on(cmd, kid), n);
}

/* The peer's library refuses our REQ on kernel id @own with @kind. */
static inline void peer_refuses(uint32_t own, uint8_t kind)
{
	struct cma_p2p_hdr hdr = {.kind = kind, .port = P2P_PORT};
	struct rdma_ucm_event_resp *r;

	fake_ucma_hold();
	r = fake_ucma_event(own, RDMA_CM_EVENT_REJECTED, 28);
	ck_assert_ptr_nonnull(r);
	cma_p2p_hdr_encode(&hdr, r->param.conn.private_data);
	r->param.conn.private_data_len = CMA_P2P_HDR_LEN;
	fake_ucma_release();
}

static inline void peer_refuses_for_now(uint32_t own)
{
	peer_refuses(own, CMA_P2P_REJ_RETRY);
}

/*
 * After a refusal for now, the library's timer sent our REQ again: on a
 * fresh kernel id, whose address and route it resolves first, once the
 * refused one is gone (its source address is taken again).  The new
 * kernel id, its REQ sent.
 */
static inline uint32_t req_sent_again(struct rdma_cm_id *id, uint32_t refused,
				      uint64_t tag)
{
	uint32_t again;

	await_cmd(RDMA_USER_CM_CMD_RESOLVE_ADDR, 1);
	again = fake_ucma_last(RDMA_USER_CM_CMD_RESOLVE_ADDR)->handle;
	ck_assert_uint_ne(again, refused);
	ck_assert_uint_eq(kid_of(id), again);
	ck_assert(!fake_ucma_kid(refused)->live);
	expect_nothing();
	fake_ucma_event(again, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	expect_nothing();
	ck_assert_int_eq(
		fake_ucma_count_on(RDMA_USER_CM_CMD_RESOLVE_ROUTE, again), 1);
	fake_ucma_event(again, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	expect_nothing();
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_CONNECT, again).tag, tag);
	return again;
}

/*
 * The kernel reports @kid established: the application sees it on @id with
 * the peer's @data, without the library's header.
 */
static inline void established_with(struct rdma_cm_id *id, uint32_t kid,
				    const char *data)
{
	struct rdma_cm_event *ev;

	fake_ucma_event(kid, RDMA_CM_EVENT_ESTABLISHED, 0);
	ev = expect_event(RDMA_CM_EVENT_ESTABLISHED);
	ck_assert_ptr_eq(ev->id, id);
	ck_assert_uint_eq(ev->param.conn.private_data_len, strlen(data));
	ck_assert_mem_eq(ev->param.conn.private_data, data, strlen(data));
	rdma_ack_cm_event(ev);
}

/* The same with the peer's usual data, "hers". */
static inline void established_with_her_data(struct rdma_cm_id *id,
					     uint32_t kid)
{
	established_with(id, kid, "hers");
}

/* How many times the QP went through RESET since it was made. */
static inline int resets_of(struct ibv_qp *qp)
{
	const struct fake_qp *f = fake_qp_of(qp);
	int i, n = 0;

	for (i = 1; i < f->nstates; i++) /* the first: made in RESET */
		n += f->states[i] == IBV_QPS_RESET;
	return n;
}

/* Post one receive, as an application does before connecting. */
static inline void post_one_receive(struct ibv_qp *qp)
{
	struct ibv_recv_wr wr = {.wr_id = 7}, *bad;

	ck_assert_int_eq(ibv_post_recv(qp, &wr, &bad), 0);
	ck_assert_int_eq(fake_qp_of(qp)->nrecvs, 1);
}

/*
 * @id's connect answered request @live with its QP as it stood, at RTS
 * since the answer to the dead request @dead: never reset, its one
 * posted receive still there, the REP dictating the PSNs @dead's kernel
 * id gave it; then the connection forms.
 */
static inline void answered_as_it_stood(struct rdma_cm_id *id, uint32_t dead,
					uint32_t live)
{
	const struct fake_qp *f = fake_qp_of(id->qp);
	struct cma_p2p_hdr rep = sent_hdr(RDMA_USER_CM_CMD_ACCEPT, live);

	ck_assert_int_eq(rep.kind, CMA_P2P_REP);
	ck_assert(rep.flags & CMA_P2P_F_PSNS);
	ck_assert_uint_eq(rep.rq_psn, FAKE_UCMA_RQ_PSN(dead));
	ck_assert_uint_eq(rep.sq_psn, FAKE_UCMA_SQ_PSN(dead));
	ck_assert_int_eq(f->qp.state, IBV_QPS_RTS);
	ck_assert_int_eq(resets_of(id->qp), 0);
	ck_assert_int_eq(f->nrecvs, 1);
	established_with_her_data(id, live);
	expect_nothing();
}

#endif /* P2P_PEER_H */
