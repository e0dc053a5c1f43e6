// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for connection establishment (src/cm/conn.c, src/cm/qp.c and the
 * device binding of src/cm/id.c) against the fake kernel (fake_ucma) and the
 * fake device (fake_verbs); and ECE values, kept out of line.  The tests use the public API the way an
 * outside program does: poll(2) on channel->fd, then a blocking
 * rdma_get_cm_event; the test plays the kernel and the remote peer.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"

static struct rdma_event_channel *ch;

static void setup(void)
{
	ch = unit_fakes_open(true);
}

static void teardown(void)
{
	unit_fakes_close(ch);
}

/* As an outside program waits: poll first, then a blocking read. */
static struct rdma_cm_event *expect_event(enum rdma_cm_event_type type)
{
	return unit_expect_event(ch, type);
}

static void expect_and_ack(enum rdma_cm_event_type type)
{
	ck_assert_int_eq(rdma_ack_cm_event(expect_event(type)), 0);
}

static uint32_t kid_of(struct rdma_cm_id *id)
{
	struct fake_kid *kid = fake_ucma_kid_of(id);

	ck_assert_ptr_nonnull(kid);
	return kid->handle;
}

/* An active id with its address and route resolved. */
static struct rdma_cm_id *resolved_id(enum rdma_port_space ps)
{
	struct sockaddr_in dst = unit_ipv4("192.0.2.2", 7471);

	return unit_resolved_id(ch, ps, (struct sockaddr *)&dst);
}

static struct rdma_cm_id *listening_id(enum rdma_port_space ps)
{
	struct sockaddr_in src = unit_ipv4("192.0.2.1", 7471);
	struct rdma_cm_id *id;

	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, ps), 0);
	ck_assert_int_eq(rdma_bind_addr(id, (struct sockaddr *)&src), 0);
	ck_assert_int_eq(rdma_listen(id, 8), 0);
	return id;
}

/* A CONNECT_REQUEST for the listener; the event is left unacked. */
static struct rdma_cm_event *incoming(struct rdma_cm_id *listen)
{
	struct rdma_ucm_event_resp *r;
	struct rdma_cm_event *ev;
	uint32_t child;

	fake_ucma_hold(); /* the library's thread reads the listener's fd */
	r = fake_ucma_conn_req(kid_of(listen), &child);
	ck_assert_ptr_nonnull(r);
	r->param.conn.responder_resources = 4;
	r->param.conn.initiator_depth = 4;
	r->param.conn.qp_num = 0x77;
	fake_ucma_release();
	ev = expect_event(RDMA_CM_EVENT_CONNECT_REQUEST);
	ck_assert_ptr_eq(ev->listen_id, listen);
	return ev;
}

static struct ibv_qp *external_qp(struct rdma_cm_id *id, enum ibv_qp_type t)
{
	struct ibv_cq *cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
	struct ibv_qp_init_attr attr = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = t,
		.cap = {.max_send_wr = 4,
			.max_recv_wr = 4,
			.max_send_sge = 1,
			.max_recv_sge = 1},
	};
	struct ibv_qp *qp;

	ck_assert_ptr_nonnull(cq);
	/* The pattern of UCX and others: the id's own PD, no rdma_create_qp. */
	ck_assert_ptr_nonnull(id->pd);
	qp = ibv_create_qp(id->pd, &attr);
	ck_assert_ptr_nonnull(qp);
	return qp;
}

/* Move an application's QP as rdma_init_qp_attr says (rdma_cm(7)). */
static void move_qp(struct rdma_cm_id *id, struct ibv_qp *qp,
		    enum ibv_qp_state state)
{
	struct ibv_qp_attr attr = {.qp_state = state};
	int mask;

	ck_assert_int_eq(rdma_init_qp_attr(id, &attr, &mask), 0);
	ck_assert_int_eq(attr.qp_state, state);
	ck_assert(mask & IBV_QP_STATE);
	ck_assert_int_eq(ibv_modify_qp(qp, &attr, mask), 0);
}

static void destroy_external_qp(struct ibv_qp *qp)
{
	struct ibv_cq *cq = qp->send_cq;

	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

/* rdma-core binds the device's PD to the id with the device (UCX needs it). */
START_TEST(pd_comes_with_the_device)
{
	struct rdma_cm_id *a, *b;

	ck_assert_int_eq(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP), 0);
	ck_assert_ptr_null(a->verbs);
	ck_assert_ptr_null(a->pd);
	rdma_destroy_id(a);

	a = resolved_id(RDMA_PS_TCP);
	b = resolved_id(RDMA_PS_TCP);
	ck_assert_ptr_nonnull(a->verbs);
	ck_assert_ptr_nonnull(a->pd);
	ck_assert_ptr_eq(a->pd->context, a->verbs);
	ck_assert_ptr_eq(a->pd, b->pd); /* one shared PD per device */
	rdma_destroy_id(a);
	rdma_destroy_id(b);
}
END_TEST

START_TEST(bound_listener_and_its_requests_have_the_pd)
{
	struct rdma_cm_id *listen = listening_id(RDMA_PS_TCP);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	ck_assert_ptr_nonnull(listen->pd);
	ev = incoming(listen);
	id = ev->id;
	ck_assert_ptr_nonnull(id->verbs);
	ck_assert_ptr_eq(id->pd, listen->pd);
	ck_assert_ptr_eq(id->channel, ch);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(id);
	rdma_destroy_id(listen);
}
END_TEST

/* rdma_create_qp(id, NULL, ...) and rdma_create_qp_ex without a PD. */
START_TEST(qp_without_pd_uses_the_shared_one)
{
	struct rdma_cm_id *id = resolved_id(RDMA_PS_TCP);
	struct ibv_qp_init_attr_ex ex = {
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 2,
			.max_recv_wr = 2,
			.max_send_sge = 1,
			.max_recv_sge = 1},
	};
	struct ibv_pd *shared = id->pd;

	ck_assert_int_eq(rdma_create_qp_ex(id, &ex), 0);
	ck_assert_ptr_eq(id->qp->pd, shared);
	ck_assert_ptr_eq(id->pd, shared);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
}
END_TEST

/* The library's own QP: INIT at creation, RTR+RTS and the RTU on the reply. */
START_TEST(active_connect_with_library_qp)
{
	struct rdma_cm_id *id = resolved_id(RDMA_PS_TCP);
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);
	struct rdma_conn_param param = {.responder_resources = 1,
					.initiator_depth = 1};
	const struct rdma_ucm_connect *sent;
	struct fake_qp *f;

	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), 0);
	f = fake_qp_of(id->qp);
	ck_assert_int_eq(f->nstates, 1);
	ck_assert_int_eq(f->states[0], IBV_QPS_INIT);
	ck_assert_int_eq(rdma_connect(id, &param), 0);
	sent = (const void *)fake_ucma_last(RDMA_USER_CM_CMD_CONNECT)->body;
	ck_assert_uint_eq(sent->conn_param.qp_num, id->qp->qp_num);

	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	expect_and_ack(RDMA_CM_EVENT_ESTABLISHED);
	ck_assert_int_eq(f->nstates, 3);
	ck_assert_int_eq(f->states[1], IBV_QPS_RTR);
	ck_assert_int_eq(f->states[2], IBV_QPS_RTS);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_ACCEPT), 1);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
}
END_TEST

/*
 * Found by the stress suite (p2p_churn under ThreadSanitizer): one thread
 * destroys an id's QP while another, in rdma_get_cm_event, moves that QP
 * for the id's CONNECT_RESPONSE.  The fake holds the move to RTR and
 * starts rdma_destroy_qp in a thread: it must not finish while the move
 * is under way (it did: ibv_destroy_qp freed the QP under the move).
 */
struct qp_race {
	struct rdma_cm_id *id;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool started, destroyed, destroyed_during_move;
};

static void *qp_race_destroy(void *arg)
{
	struct qp_race *r = arg;

	rdma_destroy_qp(r->id);
	pthread_mutex_lock(&r->mu);
	r->destroyed = true;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

static void qp_race_hold_rtr(struct ibv_qp *qp, enum ibv_qp_state to, void *arg)
{
	struct qp_race *r = arg;
	struct timespec until;

	if (to != IBV_QPS_RTR || r->started)
		return;
	r->started = true;
	ck_assert_int_eq(pthread_create(&r->thread, NULL, qp_race_destroy, r),
			 0);
	/* Every chance to finish; with the QP in use it must not. */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 300000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&r->mu);
	while (!r->destroyed &&
	       pthread_cond_timedwait(&r->cond, &r->mu, &until) != ETIMEDOUT)
		;
	r->destroyed_during_move = r->destroyed;
	pthread_mutex_unlock(&r->mu);
	(void)qp;
}

START_TEST(destroy_qp_waits_for_an_event_moving_it)
{
	struct qp_race r = {.mu = PTHREAD_MUTEX_INITIALIZER,
			    .cond = PTHREAD_COND_INITIALIZER};
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);
	struct rdma_conn_param param = {.responder_resources = 1,
					.initiator_depth = 1};

	r.id = resolved_id(RDMA_PS_TCP);
	ck_assert_int_eq(rdma_create_qp(r.id, NULL, &attr), 0);
	ck_assert_int_eq(rdma_connect(r.id, &param), 0);
	fake_verbs_on_modify(qp_race_hold_rtr, &r);
	fake_ucma_event(kid_of(r.id), RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	expect_and_ack(RDMA_CM_EVENT_ESTABLISHED);
	fake_verbs_on_modify(NULL, NULL);
	ck_assert(r.started);
	ck_assert_int_eq(pthread_join(r.thread, NULL), 0);
	ck_assert_msg(!r.destroyed_during_move,
		      "rdma_destroy_qp freed the QP while an event moved it");
	ck_assert_ptr_null(r.id->qp);
	ck_assert_int_eq(fake_verbs_counts().qps, 0);
	rdma_destroy_id(r.id);
}
END_TEST

/*
 * Active side of an external QP (as UCX uses it): moved by the
 * application; CONNECT_RESPONSE reaches it, rdma_establish sends the RTU.
 */
START_TEST(active_connect_with_external_qp)
{
	struct rdma_cm_id *id = resolved_id(RDMA_PS_TCP);
	struct ibv_qp *qp = external_qp(id, IBV_QPT_RC);
	struct rdma_conn_param param = {.responder_resources = 1,
					.initiator_depth = 1,
					.qp_num = qp->qp_num};
	const struct rdma_ucm_connect *sent;
	struct rdma_cm_event *ev;

	move_qp(id, qp, IBV_QPS_INIT);
	ck_assert_int_eq(rdma_connect(id, &param), 0);
	sent = (const void *)fake_ucma_last(RDMA_USER_CM_CMD_CONNECT)->body;
	ck_assert_uint_eq(sent->conn_param.qp_num, qp->qp_num);
	ck_assert_uint_eq(sent->conn_param.valid, 1);

	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	ev = expect_event(RDMA_CM_EVENT_CONNECT_RESPONSE);
	ck_assert_int_eq(ev->status, 0);
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_ACCEPT), 0);
	move_qp(id, qp, IBV_QPS_RTR);
	move_qp(id, qp, IBV_QPS_RTS);
	ck_assert_int_eq(rdma_establish(id), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_ACCEPT), 1);
	ck_assert_uint_eq(fake_ucma_last(RDMA_USER_CM_CMD_ACCEPT)->handle,
			  kid_of(id));
	ck_assert_int_eq(fake_qp_of(qp)->nstates, 3);

	/* The library leaves a QP it does not own alone, even on errors. */
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_DISCONNECTED, 0);
	expect_and_ack(RDMA_CM_EVENT_DISCONNECTED);
	ck_assert_int_eq(rdma_disconnect(id), 0);
	ck_assert_int_eq(fake_qp_of(qp)->nstates, 3);
	destroy_external_qp(qp);
	rdma_destroy_id(id);
}
END_TEST

/* Item 1, passive side: the QP is moved to RTS, accept carries its number. */
START_TEST(passive_accept_with_external_qp)
{
	struct rdma_cm_id *listen = listening_id(RDMA_PS_TCP);
	struct rdma_cm_event *ev = incoming(listen);
	struct rdma_cm_id *id = ev->id;
	struct rdma_conn_param param = {.responder_resources = 1,
					.initiator_depth = 1};
	const struct rdma_ucm_accept *sent;
	struct ibv_qp *qp;

	rdma_ack_cm_event(ev);
	qp = external_qp(id, IBV_QPT_RC);
	move_qp(id, qp, IBV_QPS_INIT);
	move_qp(id, qp, IBV_QPS_RTR);
	move_qp(id, qp, IBV_QPS_RTS);
	param.qp_num = qp->qp_num;
	ck_assert_int_eq(rdma_accept(id, &param), 0);
	sent = (const void *)fake_ucma_last(RDMA_USER_CM_CMD_ACCEPT)->body;
	ck_assert_uint_eq(sent->conn_param.qp_num, qp->qp_num);
	ck_assert_uint_eq(sent->uid, (uint64_t)(uintptr_t)id);
	ck_assert_int_eq(fake_qp_of(qp)->nstates, 3); /* untouched */

	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_ESTABLISHED, 0);
	expect_and_ack(RDMA_CM_EVENT_ESTABLISHED);
	destroy_external_qp(qp);
	rdma_destroy_id(id);
	rdma_destroy_id(listen);
}
END_TEST

/*
 * Item 2: a UD request accepted on its child id with a QP the library
 * made; the SIDR reply needs no further event, and nothing fails.
 */
START_TEST(ud_accept_on_child_id)
{
	struct rdma_cm_id *listen = listening_id(RDMA_PS_UDP);
	struct rdma_cm_event *ev = incoming(listen);
	struct rdma_cm_id *id = ev->id;
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_UD);
	struct rdma_conn_param param = {0};
	const struct rdma_ucm_accept *sent;
	struct fake_qp *f;

	ck_assert_int_eq(id->qp_type, IBV_QPT_UD);
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), 0);
	f = fake_qp_of(id->qp);
	ck_assert_int_eq(f->nstates, 3);
	ck_assert_int_eq(f->states[2], IBV_QPS_RTS);
	ck_assert_uint_eq(f->last[IBV_QPS_INIT].qkey, RDMA_UDP_QKEY);
	ck_assert_int_eq(rdma_accept(id, &param), 0);
	sent = (const void *)fake_ucma_last(RDMA_USER_CM_CMD_ACCEPT)->body;
	ck_assert_uint_eq(sent->conn_param.qp_num, id->qp->qp_num);
	ck_assert_uint_eq(sent->conn_param.qkey, RDMA_UDP_QKEY);
	ck_assert(!unit_readable(ch->fd)); /* no event follows a SIDR reply */
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_REJECT), 0);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_id(listen);
}
END_TEST

/* rdma-core's contract: the fd is readable exactly when an event waits. */
START_TEST(channel_fd_readable_only_with_an_event)
{
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;

	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	ck_assert(!unit_readable(ch->fd));
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT);
	ck_assert(unit_readable(ch->fd));
	ck_assert_int_eq(rdma_get_cm_event(ch, &ev), 0);
	ck_assert(!unit_readable(ch->fd));
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(rdma_write_cm_event(id, RDMA_CM_EVENT_USER, 0, 7), 0);
	ck_assert(unit_readable(ch->fd));
	ck_assert_int_eq(rdma_get_cm_event(ch, &ev), 0);
	ck_assert_uint_eq(ev->param.arg, 7);
	rdma_ack_cm_event(ev);
	ck_assert(!unit_readable(ch->fd));
	rdma_destroy_id(id);
}
END_TEST

/*
 * rdma-core's rules for the caller's connection parameters
 * (rdma_connect(3), rdma_accept(3), rdma_establish(3)): qp_num and srq are
 * read only when the id has no QP of the library's; the library touches no
 * QP it did not make.
 */
static struct rdma_conn_param ext_param(uint32_t qp_num, uint8_t srq)
{
	struct rdma_conn_param p = {.qp_num = qp_num,
				    .srq = srq,
				    .responder_resources = 1,
				    .initiator_depth = 1,
				    .retry_count = 7,
				    .rnr_retry_count = 7};

	return p;
}

static const struct rdma_ucm_conn_param *sent_param(uint32_t cmd)
{
	const struct fake_cmd *c = fake_ucma_last(cmd);

	ck_assert_ptr_nonnull(c);
	if (cmd == RDMA_USER_CM_CMD_CONNECT)
		return &((const struct rdma_ucm_connect *)c->body)->conn_param;
	return &((const struct rdma_ucm_accept *)c->body)->conn_param;
}

START_TEST(connect_sends_the_callers_qp_num_and_srq)
{
	struct rdma_cm_id *id = resolved_id(RDMA_PS_TCP);
	struct rdma_conn_param p = ext_param(0x123456, 1);
	const struct rdma_ucm_conn_param *k;

	/* Neither a QP nor a QP number: nothing to connect. */
	ck_assert_int_eq(rdma_connect(id, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 0);
	ck_assert_int_eq(rdma_connect(id, &p), 0);
	k = sent_param(RDMA_USER_CM_CMD_CONNECT);
	ck_assert_uint_eq(k->qp_num, 0x123456);
	ck_assert_uint_eq(k->srq, 1);
	ck_assert_uint_eq(k->responder_resources, 1);
	ck_assert_uint_eq(k->initiator_depth, 1);
	ck_assert_uint_eq(k->valid, 1);
	rdma_destroy_id(id);
}
END_TEST

START_TEST(a_library_qp_wins_over_the_parameter)
{
	struct rdma_cm_id *id = resolved_id(RDMA_PS_TCP);
	struct rdma_conn_param p = ext_param(5, 1);
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);

	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), 0);
	ck_assert_int_eq(rdma_connect(id, &p), 0);
	ck_assert_uint_eq(sent_param(RDMA_USER_CM_CMD_CONNECT)->qp_num,
			  id->qp->qp_num);
	ck_assert_uint_eq(sent_param(RDMA_USER_CM_CMD_CONNECT)->srq, 0);
	/* The library finished this one itself: rdma_establish refuses. */
	ck_assert_int_eq(rdma_establish(id), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_ACCEPT), 0);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
}
END_TEST

START_TEST(accept_without_qp_or_param_is_refused)
{
	struct rdma_cm_id *listen = listening_id(RDMA_PS_TCP);
	struct rdma_cm_event *ev = incoming(listen);
	struct rdma_cm_id *id = ev->id;
	struct rdma_conn_param p = ext_param(0x42, 1);
	const struct rdma_ucm_conn_param *k;

	rdma_ack_cm_event(ev);
	/* rdma-core 44 crashes here; a clear error is better. */
	ck_assert_int_eq(rdma_accept(id, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_ACCEPT), 0);
	ck_assert_int_eq(rdma_accept(id, &p), 0);
	k = sent_param(RDMA_USER_CM_CMD_ACCEPT);
	ck_assert_uint_eq(k->qp_num, 0x42);
	ck_assert_uint_eq(k->srq, 1);
	ck_assert_uint_eq(k->valid, 1);
	rdma_destroy_id(id);
	rdma_destroy_id(listen);
}
END_TEST

/* The owner flushes an external QP; the library only ends the connection. */
START_TEST(disconnect_touches_no_external_qp)
{
	struct rdma_cm_id *id = resolved_id(RDMA_PS_TCP);
	struct ibv_qp *qp = external_qp(id, IBV_QPT_RC);

	fake_ucma_clear_log();
	ck_assert_int_eq(rdma_disconnect(id), 0);
	ck_assert_int_eq(fake_ucma_ncmds(), 1);
	ck_assert_uint_eq(fake_ucma_cmd(0)->cmd, RDMA_USER_CM_CMD_DISCONNECT);
	ck_assert_int_eq(fake_qp_of(qp)->nstates, 0);
	destroy_external_qp(qp);
	rdma_destroy_id(id);
}
END_TEST

/* ECE lives out of line: nothing is allocated until a value is set or
 * arrives, and reading back before that gives zeros. */
START_TEST(ece_is_kept_out_of_line)
{
	struct cma_id_private *id_priv = calloc(1, sizeof(*id_priv));
	struct ibv_ece ece = {.vendor_id = 1},
		       local = {.vendor_id = 0x15b3, .options = 9};

	ck_assert_ptr_nonnull(id_priv);
	ck_assert_int_eq(rdma_get_remote_ece(&id_priv->id, &ece), 0);
	ck_assert_uint_eq(ece.vendor_id, 0);
	ck_assert_int_eq(cma_store_remote_ece(id_priv, 0, 0), 0);
	ck_assert_ptr_null(id_priv->ece);

	ck_assert_int_eq(cma_store_remote_ece(id_priv, 0x15b3, 7), 0);
	ck_assert_ptr_nonnull(id_priv->ece);
	ck_assert_int_eq(rdma_get_remote_ece(&id_priv->id, &ece), 0);
	ck_assert_uint_eq(ece.vendor_id, 0x15b3);
	ck_assert_uint_eq(ece.options, 7);
	ck_assert_uint_eq(ece.comp_mask, 0);

	ck_assert_int_eq(rdma_set_local_ece(&id_priv->id, &local), 0);
	ck_assert_uint_eq(id_priv->ece->local.vendor_id, 0x15b3);
	ck_assert_uint_eq(id_priv->ece->local.options, 9);
	/* A later all-zero ECE from the peer replaces the stored one. */
	ck_assert_int_eq(cma_store_remote_ece(id_priv, 0, 0), 0);
	ck_assert_int_eq(rdma_get_remote_ece(&id_priv->id, &ece), 0);
	ck_assert_uint_eq(ece.vendor_id, 0);
	local.comp_mask = 1;
	ck_assert_int_eq(rdma_set_local_ece(&id_priv->id, &local), -1);
	ck_assert_int_eq(errno, EINVAL);
	free(id_priv->ece);
	free(id_priv);
}
END_TEST

Suite *conn_suite(void)
{
	Suite *s = suite_create("conn");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, pd_comes_with_the_device);
	tcase_add_test(tc, bound_listener_and_its_requests_have_the_pd);
	tcase_add_test(tc, qp_without_pd_uses_the_shared_one);
	tcase_add_test(tc, active_connect_with_library_qp);
	tcase_add_test(tc, active_connect_with_external_qp);
	tcase_add_test(tc, passive_accept_with_external_qp);
	tcase_add_test(tc, ud_accept_on_child_id);
	tcase_add_test(tc, channel_fd_readable_only_with_an_event);
	tcase_add_test(tc, destroy_qp_waits_for_an_event_moving_it);
	suite_add_tcase(s, tc);
	tc = tcase_create("connection parameters");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, connect_sends_the_callers_qp_num_and_srq);
	tcase_add_test(tc, a_library_qp_wins_over_the_parameter);
	tcase_add_test(tc, accept_without_qp_or_param_is_refused);
	tcase_add_test(tc, disconnect_touches_no_external_qp);
	suite_add_tcase(s, tc);
	tc = tcase_create("ece");
	tcase_add_test(tc, ece_is_kept_out_of_line);
	suite_add_tcase(s, tc);
	return s;
}
