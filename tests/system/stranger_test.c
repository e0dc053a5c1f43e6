// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Flows other people's programs use, written the way such a program would
 * (UCX, storage stacks): its own poll loop (poll(2) on channel->fd,
 * then a blocking rdma_get_cm_event), its own PD, CQs and QPs, its own
 * error handling.  Each scenario is a pair of processes: the program forks
 * before it touches librdmacm or libibverbs, the parent is the passive
 * side, the child the active one; the only thing they share is a pipe on
 * which the server tells the client its port.
 *
 *   stranger_test extqp SERVER_ADDR CLIENT_ADDR
 *   stranger_test extqp_srq SERVER_ADDR CLIENT_ADDR
 *   stranger_test ud_accept SERVER_ADDR CLIENT_ADDR
 *
 * Only RDMACM_1.0 calls are used, so the same binary runs on rdma-core's
 * library (LD_LIBRARY_PATH): a failure there means the test is wrong.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "harness.h"

/* rdma-core's versions of the two calls whose ABI this fork extended. */
__asm__(".symver rdma_connect, rdma_connect@RDMACM_1.0");
__asm__(".symver rdma_accept, rdma_accept@RDMACM_1.0");

#define MSG_LEN 64
#define ROUNDS 4

/* What one end of a connection owns: all of it made by the test itself. */
struct end {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	bool own_pd; /* ibv_alloc_pd'd here, not the id's shared one */
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	bool ext_qp; /* made with ibv_create_qp, not rdma_create_qp */
	bool iwarp; /* the iw_cm moves the QP past INIT itself */
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	uint32_t remote_qpn, remote_qkey;
	bool stashed; /* a receive completed while waiting for a send */
	struct ibv_wc stash;
	/* send buffer, then receive buffer with room for a GRH */
	char buf[MSG_LEN + HX_GRH_LEN + MSG_LEN];
};

struct flow {
	bool srq; /* receives through an SRQ (conn_param.srq = 1) */
	bool own_pd; /* a PD of the test's own instead of id->pd */
};

static char *send_buf(struct end *e)
{
	return e->buf;
}

static char *recv_buf(struct end *e)
{
	return e->buf + MSG_LEN;
}

/* --- verbs helpers -------------------------------------------------------- */

/*
 * The public fields a program reads from a bound id before it has a QP
 * (rdma-core fills them at binding): device, PD, port, addresses.
 */
static void check_bound_id(struct rdma_cm_id *id, enum rdma_port_space ps)
{
	struct sockaddr *src = rdma_get_local_addr(id);
	struct sockaddr *dst = rdma_get_peer_addr(id);

	hx_stage("checking the bound id's fields");
	CHECK(id->verbs, "id->verbs is NULL on a bound id");
	CHECK(id->ps == ps, "id->ps %d, want %d", id->ps, ps);
	CHECK(id->port_num >= 1, "id->port_num %u", id->port_num);
	CHECK(src->sa_family == AF_INET || src->sa_family == AF_INET6,
	      "local address family %u", src->sa_family);
	CHECK(dst->sa_family == src->sa_family,
	      "peer address family %u, local %u", dst->sa_family,
	      src->sa_family);
	CHECK(rdma_get_src_port(id) && rdma_get_dst_port(id), "ports %u -> %u",
	      ntohs(rdma_get_src_port(id)), ntohs(rdma_get_dst_port(id)));
}

static void make_verbs(struct end *e, struct rdma_cm_id *id,
		       const struct flow *f)
{
	check_bound_id(id,
		       id->qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP);
	hx_stage("PD, CQ and MR");
	/*
	 * rdma-core gives every id bound to a device the device's shared PD;
	 * programs (UCX) make their QPs on it right after route resolution.
	 */
	CHECK(id->pd, "id->pd is NULL on an id bound to %s",
	      ibv_get_device_name(id->verbs->device));
	CHECK(id->pd->context == id->verbs, "id->pd is not on id->verbs");
	if (f && f->own_pd) {
		e->pd = ibv_alloc_pd(id->verbs);
		CHECK(e->pd, "ibv_alloc_pd: %s", strerror(errno));
		e->own_pd = true;
	} else {
		e->pd = id->pd;
	}
	e->cq = ibv_create_cq(id->verbs, 16, NULL, NULL, 0);
	CHECK(e->cq, "ibv_create_cq: %s", strerror(errno));
	e->mr = ibv_reg_mr(e->pd, e->buf, sizeof(e->buf),
			   IBV_ACCESS_LOCAL_WRITE);
	CHECK(e->mr, "ibv_reg_mr: %s", strerror(errno));
}

static void post_recv(struct end *e, size_t off, size_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(recv_buf(e) + off),
		.length = (uint32_t)len,
		.lkey = e->mr->lkey,
	};
	struct ibv_recv_wr wr = {.wr_id = 2, .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *bad;
	int ret;

	memset(recv_buf(e), 0, MSG_LEN + HX_GRH_LEN);
	if (e->srq)
		ret = ibv_post_srq_recv(e->srq, &wr, &bad);
	else
		ret = ibv_post_recv(e->qp, &wr, &bad);
	CHECK(!ret, "posting a receive: %s", strerror(ret));
}

static void post_send(struct end *e, const char *text)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)send_buf(e),
		.length = MSG_LEN,
		.lkey = e->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 1,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;
	int ret;

	memset(send_buf(e), 0, MSG_LEN);
	snprintf(send_buf(e), MSG_LEN, "%s", text);
	if (e->ah) {
		wr.wr.ud.ah = e->ah;
		wr.wr.ud.remote_qpn = e->remote_qpn;
		wr.wr.ud.remote_qkey = e->remote_qkey;
	}
	ret = ibv_post_send(e->qp, &wr, &bad);
	CHECK(!ret, "posting a send: %s", strerror(ret));
}

/*
 * Wait for the send (wr 1) and/or the receive (wr 2) completion, in
 * whichever order the device reports them (a reply can complete before
 * the acknowledgement of what it answers); the receive's is kept in *wc.
 * The watchdog ends a wait that never completes.
 */
static void wait_wc(struct end *e, bool send, bool recv, struct ibv_wc *wc)
{
	struct timespec nap = {.tv_nsec = 200000};
	struct ibv_wc one;
	int n;

	hx_stage("waiting for the%s%s completion", send ? " send" : "",
		 recv ? " receive" : "");
	if (recv && e->stashed) {
		*wc = e->stash;
		e->stashed = false;
		recv = false;
	}
	while (send || recv) {
		n = ibv_poll_cq(e->cq, 1, &one);
		if (n == 0) {
			nanosleep(&nap, NULL);
			continue;
		}
		CHECK(n == 1, "ibv_poll_cq: %d", n);
		CHECK(one.status == IBV_WC_SUCCESS,
		      "work completion %s (wr %llu)",
		      ibv_wc_status_str(one.status),
		      (unsigned long long)one.wr_id);
		if (one.wr_id == 1 && send) {
			send = false;
		} else if (one.wr_id == 2 && recv) {
			recv = false;
			*wc = one;
		} else if (one.wr_id == 2 && !e->stashed) {
			/* The peer's next message overtook our send's ack. */
			e->stash = one;
			e->stashed = true;
		} else {
			hx_fail("unexpected completion of wr %llu",
				(unsigned long long)one.wr_id);
		}
	}
}

static void expect_text(struct end *e, size_t off, const char *want)
{
	CHECK(!strncmp(recv_buf(e) + off, want, MSG_LEN),
	      "received '%.*s', want '%s'", MSG_LEN, recv_buf(e) + off, want);
}

/* --- external RC QPs ---------------------------------------------------- */

/* The attributes of either end's QP: 8 work requests each way, its CQ. */
static struct ibv_qp_init_attr qp_attr(const struct end *e,
				       enum ibv_qp_type type)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = e->cq,
		.recv_cq = e->cq,
		.qp_type = type,
		.cap = {.max_send_wr = 8,
			.max_recv_wr = 8,
			.max_send_sge = 1,
			.max_recv_sge = 1},
	};

	return attr;
}

static void ext_create_qp(struct end *e, struct rdma_cm_id *id,
			  const struct flow *f)
{
	struct ibv_qp_init_attr attr;

	make_verbs(e, id, f);
	attr = qp_attr(e, IBV_QPT_RC);
	e->iwarp = id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
	if (f->srq) {
		struct ibv_srq_init_attr sattr = {
			.attr = {.max_wr = 8, .max_sge = 1}};

		e->srq = ibv_create_srq(e->pd, &sattr);
		CHECK(e->srq, "ibv_create_srq: %s", strerror(errno));
		attr.srq = e->srq;
	}
	hx_stage("ibv_create_qp on %s", f->own_pd ? "our PD" : "id->pd");
	e->qp = ibv_create_qp(e->pd, &attr);
	CHECK(e->qp, "ibv_create_qp: %s", strerror(errno));
	e->ext_qp = true;
	CHECK(!id->qp, "id->qp set by the library for an external QP");
}

static const char *qp_state_name(enum ibv_qp_state s)
{
	static const char *const names[] = {"RESET", "INIT", "RTR", "RTS",
					    "SQD",   "SQE",  "ERR"};

	return (unsigned int)s < 7 ? names[s] : "?";
}

/* Move the QP with the attributes the CM hands out for @state. */
static void ext_move(struct end *e, struct rdma_cm_id *id,
		     enum ibv_qp_state state)
{
	struct ibv_qp_attr attr;
	int mask = 0, ret;

	hx_stage("QP to %s", qp_state_name(state));
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = state;
	CHECK_OK(rdma_init_qp_attr(id, &attr, &mask));
	CHECK(mask & IBV_QP_STATE, "rdma_init_qp_attr(%s): no state in mask",
	      qp_state_name(state));
	ret = ibv_modify_qp(e->qp, &attr, mask);
	CHECK(!ret, "ibv_modify_qp to %s (mask 0x%x): %s", qp_state_name(state),
	      mask, strerror(ret));
}

/*
 * The ECE handshake of an external QP: the QP's options go into the CM
 * message, the peer's come back and are set on the QP.  Soft-RoCE has no
 * ECE: ibv_query_ece/ibv_set_ece answer EOPNOTSUPP, which is tolerated
 * (and nothing is set locally then), as rdma-core's own tests do.
 */
static void ece_offer(struct end *e, struct rdma_cm_id *id)
{
	struct ibv_ece ece;
	int ret;

	hx_stage("ECE offer");
	memset(&ece, 0, sizeof(ece));
	ret = ibv_query_ece(e->qp, &ece);
	/*
	 * Nothing to offer then: a portable program makes no call (rdma-core
	 * refuses a vendor id of 0, this library takes it as "no offer";
	 * rdma_set_local_ece(3), NOTES).
	 */
	if (ret == EOPNOTSUPP)
		return;
	CHECK(!ret, "ibv_query_ece: %s", strerror(ret));
	CHECK_OK(rdma_set_local_ece(id, &ece));
}

static void ece_take(struct end *e, struct rdma_cm_id *id)
{
	struct ibv_ece ece;
	int ret;

	hx_stage("ECE answer");
	memset(&ece, 0xab, sizeof(ece));
	CHECK_OK(rdma_get_remote_ece(id, &ece));
	CHECK(!ece.comp_mask, "remote ECE comp_mask %u", ece.comp_mask);
	if (!ece.vendor_id)
		return; /* the peer made no offer */
	ret = ibv_set_ece(e->qp, &ece);
	CHECK(!ret || ret == EOPNOTSUPP, "ibv_set_ece: %s", strerror(ret));
}

static void fill_param(struct rdma_conn_param *p, const struct end *e,
		       const struct flow *f)
{
	memset(p, 0, sizeof(*p));
	p->responder_resources = 1;
	p->initiator_depth = 1;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
	p->qp_num = e->qp->qp_num;
	p->srq = f->srq;
}

/* Messages both ways, each checked; a fresh receive before each. */
static void exchange(struct end *e, bool first, const char *who)
{
	char text[MSG_LEN], want[MSG_LEN];
	struct ibv_wc wc;
	int i;

	for (i = 0; i < ROUNDS; i++) {
		snprintf(want, sizeof(want), "%s %d from the %s", "message", i,
			 first ? "server" : "client");
		snprintf(text, sizeof(text), "%s %d from the %s", "message", i,
			 who);
		if (first) {
			post_send(e, text);
			wait_wc(e, true, true, &wc);
			expect_text(e, 0, want);
			post_recv(e, 0, MSG_LEN);
		} else {
			wait_wc(e, false, true, &wc);
			expect_text(e, 0, want);
			post_recv(e, 0, MSG_LEN);
			post_send(e, text);
			wait_wc(e, true, false, &wc);
		}
	}
}

static void end_verbs_free(struct end *e)
{
	hx_stage("freeing verbs objects");
	if (e->ah)
		CHECK(!ibv_destroy_ah(e->ah), "ibv_destroy_ah");
	if (e->ext_qp)
		CHECK(!ibv_destroy_qp(e->qp), "ibv_destroy_qp");
	if (e->srq)
		CHECK(!ibv_destroy_srq(e->srq), "ibv_destroy_srq");
	if (e->mr)
		CHECK(!ibv_dereg_mr(e->mr), "ibv_dereg_mr");
}

static void end_cq_pd_free(struct end *e)
{
	if (e->cq)
		CHECK(!ibv_destroy_cq(e->cq), "ibv_destroy_cq");
	if (e->own_pd)
		CHECK(!ibv_dealloc_pd(e->pd), "ibv_dealloc_pd");
}

/* Flush an external QP: the library leaves it to its owner. */
static void ext_to_err(struct end *e)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
	int ret = ibv_modify_qp(e->qp, &attr, IBV_QP_STATE);

	CHECK(!ret, "ibv_modify_qp to ERR: %s", strerror(ret));
}

/* --- the two processes ----------------------------------------------------- */

struct pair {
	const char *server_addr, *client_addr;
	int port_pipe[2];
	pid_t child;
};

static void server_listen(struct end *e, struct pair *p,
			  enum rdma_port_space ps)
{
	struct sockaddr_storage ss;
	uint16_t port;

	hx_stage("listening on %s", p->server_addr);
	e->ch = rdma_create_event_channel();
	CHECK(e->ch, "rdma_create_event_channel: %s", strerror(errno));
	CHECK_OK(rdma_create_id(e->ch, &e->listen, NULL, ps));
	hx_parse_addr(p->server_addr, 0, &ss);
	CHECK_OK(rdma_bind_addr(e->listen, (struct sockaddr *)&ss));
	CHECK_OK(rdma_listen(e->listen, 4));
	port = ntohs(rdma_get_src_port(e->listen));
	CHECK(port, "no port after rdma_listen");
	CHECK(write(p->port_pipe[1], &port, sizeof(port)) == sizeof(port),
	      "telling the client the port: %s", strerror(errno));
	close(p->port_pipe[1]);
}

/* Resolve address and route to the server; returns with id bound. */
static void client_resolve(struct end *e, struct pair *p,
			   enum rdma_port_space ps)
{
	struct sockaddr_storage src, dst;
	struct rdma_cm_event *ev;
	uint16_t port;
	ssize_t n;

	hx_stage("reading the server's port");
	n = read(p->port_pipe[0], &port, sizeof(port));
	CHECK(n == sizeof(port), "the server never listened");
	close(p->port_pipe[0]);
	e->ch = rdma_create_event_channel();
	CHECK(e->ch, "rdma_create_event_channel: %s", strerror(errno));
	CHECK_OK(rdma_create_id(e->ch, &e->id, NULL, ps));
	hx_parse_addr(p->client_addr, 0, &src);
	hx_parse_addr(p->server_addr, port, &dst);
	hx_stage("resolving %s port %u", p->server_addr, port);
	CHECK_OK(rdma_resolve_addr(e->id, (struct sockaddr *)&src,
				   (struct sockaddr *)&dst, 2000));
	ev = hx_expect_event(e->ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	rdma_ack_cm_event(ev);
	CHECK_OK(rdma_resolve_route(e->id, 2000));
	ev = hx_expect_event(e->ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	rdma_ack_cm_event(ev);
}

static void end_ids_free(struct end *e)
{
	hx_stage("destroying ids and channel");
	if (e->id)
		CHECK_OK(rdma_destroy_id(e->id));
	if (e->listen)
		CHECK_OK(rdma_destroy_id(e->listen));
	rdma_destroy_event_channel(e->ch);
}

/*
 * Both ends see DISCONNECTED.  The end that sent the last message starts
 * it, once that send has completed: a peer that disconnected as soon as the
 * message arrived could make siw complete the delivered send with an error
 * (tests/system/BUGS.md siw-send-error).
 */
static void ext_disconnect(struct end *e, bool initiate)
{
	struct rdma_cm_event *ev;

	if (initiate) {
		hx_stage("rdma_disconnect");
		CHECK_OK(rdma_disconnect(e->id));
	}
	ev = hx_expect_event(e->ch, RDMA_CM_EVENT_DISCONNECTED);
	rdma_ack_cm_event(ev);
	if (!initiate) {
		hx_stage("rdma_disconnect after DISCONNECTED");
		CHECK_OK(rdma_disconnect(e->id));
	}
	ext_to_err(e);
}

static int extqp_server(struct pair *p, const struct flow *f)
{
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;
	struct end e = {0};

	server_listen(&e, p, RDMA_PS_TCP);
	ev = hx_expect_event(e.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	e.id = ev->id;
	CHECK(ev->listen_id == e.listen, "listen_id is not the listener");
	/* iWARP's MPA request carries no QP number. */
	CHECK(ev->param.conn.qp_num || e.id->verbs->device->transport_type ==
					       IBV_TRANSPORT_IWARP,
	      "the request carries no QP number");
	rdma_ack_cm_event(ev);

	ext_create_qp(&e, e.id, f);
	ece_take(&e, e.id);
	ece_offer(&e, e.id);
	ext_move(&e, e.id, IBV_QPS_INIT);
	post_recv(&e, 0, MSG_LEN);
	if (!e.iwarp) {
		ext_move(&e, e.id, IBV_QPS_RTR);
		ext_move(&e, e.id, IBV_QPS_RTS);
	}
	fill_param(&param, &e, f);
	hx_stage("rdma_accept with qp_num %u", param.qp_num);
	CHECK_OK(rdma_accept(e.id, &param));
	ev = hx_expect_event(e.ch, RDMA_CM_EVENT_ESTABLISHED);
	rdma_ack_cm_event(ev);

	exchange(&e, false, "server");
	ext_disconnect(&e, true);
	end_verbs_free(&e);
	end_ids_free(&e);
	end_cq_pd_free(&e);
	return 0;
}

static int extqp_client(struct pair *p, const struct flow *f)
{
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;
	struct end e = {0};

	client_resolve(&e, p, RDMA_PS_TCP);
	ext_create_qp(&e, e.id, f);
	ext_move(&e, e.id, IBV_QPS_INIT);
	post_recv(&e, 0, MSG_LEN);
	ece_offer(&e, e.id);
	/*
	 * Without a QP of the library's, the QP number is not optional.  (Not
	 * tried on the passive side: rdma-core 44's rdma_accept(id, NULL)
	 * dereferences the NULL parameter of an id without a QP.)
	 */
	hx_stage("rdma_connect without parameters");
	EXPECT_ERR(rdma_connect(e.id, NULL), EINVAL);
	fill_param(&param, &e, f);
	hx_stage("rdma_connect with qp_num %u", param.qp_num);
	CHECK_OK(rdma_connect(e.id, &param));
	if (e.iwarp) {
		/* iWARP: the iw_cm moved the QP; the connection is up. */
		ev = hx_expect_event(e.ch, RDMA_CM_EVENT_ESTABLISHED);
		rdma_ack_cm_event(ev);
	} else {
		ev = hx_expect_event(e.ch, RDMA_CM_EVENT_CONNECT_RESPONSE);
		CHECK(ev->param.conn.qp_num,
		      "the response carries no QP number");
		rdma_ack_cm_event(ev);
		ece_take(&e, e.id);
		ext_move(&e, e.id, IBV_QPS_RTR);
		ext_move(&e, e.id, IBV_QPS_RTS);
		hx_stage("rdma_establish");
		CHECK_OK(rdma_establish(e.id));
	}

	exchange(&e, true, "client");
	ext_disconnect(&e, false);
	end_verbs_free(&e);
	end_ids_free(&e);
	end_cq_pd_free(&e);
	return 0;
}

/* --- UD: a request accepted on the child id ------------------------------ */

static void ud_create_qp(struct end *e, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr;

	make_verbs(e, id, NULL);
	attr = qp_attr(e, IBV_QPT_UD);
	hx_stage("rdma_create_qp (UD)");
	CHECK_OK(rdma_create_qp(id, e->pd, &attr));
	e->qp = id->qp;
}

static void ud_check(struct end *e, const char *want, struct ibv_wc *wc)
{
	CHECK(wc->wc_flags & IBV_WC_GRH, "no GRH on a RoCE datagram");
	CHECK(wc->byte_len == HX_GRH_LEN + MSG_LEN, "datagram of %u bytes",
	      wc->byte_len);
	expect_text(e, HX_GRH_LEN, want);
}

static int ud_server(struct pair *p, const struct flow *f)
{
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;
	struct end e = {0};
	struct ibv_wc wc;
	char text[MSG_LEN];
	int i;

	(void)f;
	server_listen(&e, p, RDMA_PS_UDP);
	ev = hx_expect_event(e.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	e.id = ev->id;
	CHECK(e.id->qp_type == IBV_QPT_UD, "child id's qp_type %d",
	      e.id->qp_type);
	rdma_ack_cm_event(ev);

	ud_create_qp(&e, e.id);
	post_recv(&e, 0, HX_GRH_LEN + MSG_LEN);
	memset(&param, 0, sizeof(param));
	param.qp_num = e.qp->qp_num;
	hx_stage("rdma_accept (UD)");
	CHECK_OK(rdma_accept(e.id, &param));
	/* No event follows a datagram accept: straight to the data. */
	for (i = 0; i < ROUNDS; i++) {
		snprintf(text, sizeof(text), "datagram %d from the client", i);
		wait_wc(&e, false, true, &wc);
		ud_check(&e, text, &wc);
		if (!e.ah) {
			hx_stage("ibv_create_ah_from_wc");
			e.ah = ibv_create_ah_from_wc(
				e.pd, &wc, (struct ibv_grh *)recv_buf(&e),
				e.id->port_num);
			CHECK(e.ah, "ibv_create_ah_from_wc: %s",
			      strerror(errno));
			e.remote_qpn = wc.src_qp;
			e.remote_qkey = RDMA_UDP_QKEY;
		}
		post_recv(&e, 0, HX_GRH_LEN + MSG_LEN);
		snprintf(text, sizeof(text), "datagram %d from the server", i);
		post_send(&e, text);
		wait_wc(&e, true, false, &wc);
	}
	/* A datagram accept completes without any event on either id. */
	hx_stage("checking that no event is pending");
	hx_expect_no_event(e.ch);
	end_verbs_free(&e);
	hx_stage("rdma_destroy_qp");
	rdma_destroy_qp(e.id);
	end_ids_free(&e);
	end_cq_pd_free(&e);
	return 0;
}

static int ud_client(struct pair *p, const struct flow *f)
{
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;
	struct end e = {0};
	struct ibv_wc wc;
	char text[MSG_LEN];
	int i;

	(void)f;
	client_resolve(&e, p, RDMA_PS_UDP);
	ud_create_qp(&e, e.id);
	post_recv(&e, 0, HX_GRH_LEN + MSG_LEN);
	memset(&param, 0, sizeof(param));
	hx_stage("rdma_connect (UD)");
	CHECK_OK(rdma_connect(e.id, &param));
	ev = hx_expect_event(e.ch, RDMA_CM_EVENT_ESTABLISHED);
	CHECK(ev->param.ud.qp_num, "ESTABLISHED carries no QP number");
	CHECK(ev->param.ud.qkey == RDMA_UDP_QKEY, "qkey 0x%x",
	      ev->param.ud.qkey);
	hx_stage("ibv_create_ah from ESTABLISHED's ah_attr");
	e.ah = ibv_create_ah(e.pd, &ev->param.ud.ah_attr);
	CHECK(e.ah, "ibv_create_ah: %s", strerror(errno));
	e.remote_qpn = ev->param.ud.qp_num;
	e.remote_qkey = ev->param.ud.qkey;
	rdma_ack_cm_event(ev);

	for (i = 0; i < ROUNDS; i++) {
		snprintf(text, sizeof(text), "datagram %d from the client", i);
		post_send(&e, text);
		wait_wc(&e, true, true, &wc);
		snprintf(text, sizeof(text), "datagram %d from the server", i);
		ud_check(&e, text, &wc);
		post_recv(&e, 0, HX_GRH_LEN + MSG_LEN);
	}
	end_verbs_free(&e);
	hx_stage("rdma_destroy_qp");
	rdma_destroy_qp(e.id);
	end_ids_free(&e);
	end_cq_pd_free(&e);
	return 0;
}

/* --- the pair ------------------------------------------------------------ */

static struct pair the_pair;

/*
 * A server that fails must not leave its client behind.  SIGALRM first:
 * the client's watchdog handler prints where it was.
 */
static void reap_child(void)
{
	struct timespec nap = {.tv_nsec = 10000000};
	int i, status;

	if (the_pair.child <= 0)
		return;
	if (waitpid(the_pair.child, &status, WNOHANG) == the_pair.child) {
		if (WIFSIGNALED(status))
			hx_note("the client died of signal %d",
				WTERMSIG(status));
		return;
	}
	kill(the_pair.child, SIGALRM);
	for (i = 0; i < 100; i++) {
		if (waitpid(the_pair.child, NULL, WNOHANG) == the_pair.child)
			return;
		nanosleep(&nap, NULL);
	}
	kill(the_pair.child, SIGKILL);
	waitpid(the_pair.child, NULL, 0);
}

typedef int (*role_fn)(struct pair *p, const struct flow *f);

static int run_pair(int argc, char **argv, role_fn server, role_fn client,
		    const struct flow *f)
{
	struct pair *p = &the_pair;
	const char *name = argv[0];
	struct sockaddr_storage ss;
	int status;

	if (argc < 3)
		hx_fail("usage: %s SERVER_ADDR CLIENT_ADDR", name);
	p->server_addr = argv[1];
	p->client_addr = argv[2];
	/* Bad addresses fail here, once, before there are two processes. */
	hx_parse_addr(p->server_addr, 0, &ss);
	hx_parse_addr(p->client_addr, 0, &ss);
	CHECK(!pipe(p->port_pipe), "pipe: %s", strerror(errno));
	/* Before any librdmacm or libibverbs call: nothing is shared. */
	p->child = fork();
	CHECK(p->child >= 0, "fork: %s", strerror(errno));
	if (p->child == 0) {
		close(p->port_pipe[1]);
		hx_set_name("%s/client", name);
		hx_watchdog(hx_timeout_s());
		exit(client(p, f));
	}
	close(p->port_pipe[0]);
	atexit(reap_child);
	hx_set_name("%s/server", name);
	server(p, f);
	hx_stage("waiting for the client to finish");
	CHECK(waitpid(p->child, &status, 0) == p->child, "waitpid: %s",
	      strerror(errno));
	p->child = 0;
	hx_set_name("%s", name);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the client failed (status 0x%x)", status);
	return 0;
}

static const struct flow plain = {0};
static const struct flow srq_own_pd = {.srq = true, .own_pd = true};

static int run_extqp(int argc, char **argv)
{
	return run_pair(argc, argv, extqp_server, extqp_client, &plain);
}

static int run_extqp_srq(int argc, char **argv)
{
	return run_pair(argc, argv, extqp_server, extqp_client, &srq_own_pd);
}

static int run_ud_accept(int argc, char **argv)
{
	return run_pair(argc, argv, ud_server, ud_client, &plain);
}

static const struct hx_scenario scenarios[] = {
	{"extqp", "SERVER_ADDR CLIENT_ADDR", run_extqp},
	{"extqp_srq", "SERVER_ADDR CLIENT_ADDR", run_extqp_srq},
	{"ud_accept", "SERVER_ADDR CLIENT_ADDR", run_ud_accept},
};

int main(int argc, char **argv)
{
	return hx_main(argc, argv, scenarios,
		       sizeof(scenarios) / sizeof(scenarios[0]));
}
