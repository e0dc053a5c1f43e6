// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer-to-peer mode, adoption (rdma_cm_p2p(7), ADOPTION): the higher
 * end's connect answers the peer's request with the connecting id's QP
 * and makes the request's kernel id the id's own, with no REQ of its
 * own.  A claim (under p2p_lock) takes a held or arriving request for a
 * waiting connect; the answer (without it, under the id's qp_lock) moves
 * the QP and accepts.  A request that turns out dead is refused and the
 * connect moves on to the next one, its QP kept at RTS for a next request
 * from the same QP (cma_p2p_conn.qp_bound).  The rest of the connecting
 * side (sending, its events, bounds) is p2p_connect.c's.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"
#include "p2p.h"
#include "p2p_table.h"
#include "p2p_wire.h"
#include "cm/ucma_abi.h"

static uint8_t cma_p2p_min_u8(uint8_t a, uint8_t b)
{
	return a < b ? a : b;
}

static void cma_p2p_save_peer_data(struct cma_p2p_conn *conn,
				   const struct rdma_ucm_conn_param *kp,
				   const struct cma_p2p_hdr *hdr)
{
	conn->peer_len = hdr->data_len;
	memcpy(conn->peer_data, kp->private_data + hdr->len, hdr->data_len);
}

/*
 * The id's addressing before an adoption: what undoing it puts back when
 * the id's own kernel id was never bound (cma_p2p_bind_like_listener).
 * Such a kernel id knows no addresses, so asking it would leave the id
 * with none, and the REQ of ours that may follow could not be resolved.
 */
struct cma_p2p_addressing {
	struct rdma_addr addr;
	uint8_t port_num;
	bool had_paths; /* resolved late after all: the kernel id knows */
};

static void cma_p2p_addressing_save(const struct cma_id_private *id_priv,
				    struct cma_p2p_addressing *saved)
{
	saved->addr = id_priv->id.route.addr;
	saved->port_num = id_priv->id.port_num;
	saved->had_paths = id_priv->id.route.num_paths > 0;
}

static void cma_p2p_addressing_restore(struct cma_id_private *id_priv,
				       const struct cma_p2p_addressing *saved)
{
	pthread_mutex_lock(&id_priv->mut);
	id_priv->id.route.addr = saved->addr;
	pthread_mutex_unlock(&id_priv->mut);
	id_priv->id.port_num = saved->port_num;
	cma_store_paths(id_priv, NULL, 0); /* the request's: the id had none */
}

/* RESET, then INIT: the QP as rdma_create_qp left it. */
static void cma_p2p_qp_reinit(struct cma_id_private *id_priv)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_RESET};

	if (!ibv_modify_qp(id_priv->id.qp, &attr, IBV_QP_STATE))
		cma_qp_to_init(id_priv, id_priv->id.qp);
}

/*
 * Back out of a failed adoption: the connect keeps its own kernel id (or
 * none, if it had none yet).  A QP that reached RTS stays there, bound
 * (cma_p2p_conn.qp_bound); one left halfway goes back to INIT.
 */
static void cma_p2p_adopt_undo(struct cma_p2p_conn *conn, uint32_t old,
			       bool qp_moved,
			       const struct cma_p2p_addressing *saved)
{
	struct cma_id_private *id_priv = conn->id_priv;

	cma_p2p_set_handle(id_priv, old);
	if (qp_moved && !conn->qp_bound)
		cma_p2p_qp_reinit(id_priv);
	if (conn->kernel_unbound && !saved->had_paths)
		cma_p2p_addressing_restore(id_priv, saved);
	else
		cma_query_route_info(id_priv);
}

void cma_p2p_adopt_claim(struct cma_p2p_adoption *a, struct cma_p2p_conn *conn,
			 struct cma_p2p_listener *lis, uint32_t handle,
			 const struct rdma_ucm_event_resp *resp,
			 const struct cma_p2p_hdr *hdr,
			 const struct rdma_ucm_query_route_resp *route)
{
	a->conn = conn;
	a->lis = lis;
	a->handle = handle;
	a->resp = *resp;
	a->hdr = *hdr;
	a->has_route = route;
	if (route)
		a->route = *route;
	conn->claimed_hdr = *hdr;
	conn->claimed_qpn = resp->param.conn.qp_num;
	conn->established = false;
	/* No longer waiting: the peer's next request waits for another. */
	cma_p2p_conn_register(conn, CMA_P2P_ADOPTING);
	cma_timer_stop(&conn->timer);
	cma_p2p_busy_get(&conn->busy);
	cma_p2p_busy_get(&lis->busy);
}

/*
 * Whether the QP is at RTS for a REQ from @qpn already (an earlier REQ
 * from it turned out dead in this connect): then it is answered as it
 * is.  A QP bound to another QP's REQ, or changed by the application
 * since (ibv_query_qp says), must be reset (*@reset): the one case that
 * loses the receives posted before connecting, as nothing else can free
 * the QP.
 */
static bool cma_p2p_qp_ready(struct cma_p2p_conn *conn, uint32_t qpn,
			     bool *reset)
{
	struct ibv_qp *qp = conn->id_priv->id.qp;
	struct ibv_qp_attr attr = {0};
	struct ibv_qp_init_attr init;

	*reset = false;
	if (!conn->qp_bound)
		return false;
	if (!ibv_query_qp(qp, &attr, IBV_QP_STATE | IBV_QP_DEST_QPN, &init) &&
	    attr.qp_state == IBV_QPS_RTS && attr.dest_qp_num == qpn)
		return true;
	cma_p2p_dbg("QP %u was answering QP %u's REQ: reset for QP %u's",
		    qp->qp_num, attr.dest_qp_num, qpn);
	*reset = true;
	return false;
}

/*
 * Bring the QP to RTR and RTS for the request @a claimed, or find it
 * there already (cma_p2p_qp_ready): then @rep dictates its PSNs.  Both
 * moves' attributes are taken from the request's kernel id first, so a
 * request found dead leaves the QP as it was, bound or not: a QP is
 * never reset for a request that cannot be answered.  Sets *@moved once
 * the QP left INIT: only a QP left at RTR needs INIT again
 * (cma_p2p_adopt_undo).
 */
static int cma_p2p_adopt_qp(struct cma_p2p_adoption *a, struct cma_p2p_hdr *rep,
			    bool *moved)
{
	struct cma_p2p_conn *conn = a->conn;
	struct cma_id_private *id_priv = conn->id_priv;
	uint32_t qpn = a->resp.param.conn.qp_num;
	struct cma_qp_psns psns = {0};
	struct cma_qp_move rtr, rts;
	bool reset;

	if (cma_p2p_qp_ready(conn, qpn, &reset)) {
		rep->flags |= CMA_P2P_F_PSNS;
		rep->rq_psn = conn->bound_psns.rq;
		rep->sq_psn = conn->bound_psns.sq;
		return 0;
	}
	if (cma_qp_rtr_attr(id_priv, id_priv->responder_resources, &psns,
			    &rtr) ||
	    cma_qp_rts_attr(id_priv, id_priv->initiator_depth, &psns, &rts))
		return -1;
	if (reset) {
		conn->qp_bound = false;
		cma_p2p_qp_reinit(id_priv);
	}
	if (cma_qp_move(id_priv, &rtr))
		return -1; /* a move that fails leaves the QP as it was */
	*moved = true;
	if (cma_qp_move(id_priv, &rts))
		return -1;
	conn->qp_bound = true;
	conn->bound_psns = psns;
	return 0;
}

/*
 * Answer the claimed request with the id's QP and make its kernel id the
 * id's own: MIGRATE_ID onto the id's fd, the QP to RTR and RTS (not on
 * iWARP: the kernel does it there), ACCEPT with our header, then the id's
 * old kernel id goes.  0, or -1/errno with the id as before.
 */
static int cma_p2p_adopt_answer(struct cma_p2p_adoption *a)
{
	struct cma_p2p_conn *conn = a->conn;
	struct cma_id_private *id_priv = conn->id_priv;
	int fd = cma_id_fd(id_priv), lfd = cma_id_fd(a->lis->id_priv);
	const struct rdma_ucm_conn_param *req = &a->resp.param.conn;
	struct cma_p2p_hdr rep = {.kind = CMA_P2P_REP};
	struct rdma_ucm_conn_param kp = conn->kparam;
	uint32_t old, reported;
	struct cma_p2p_addressing saved;
	bool qp_moved = false;
	int err;

	if (!id_priv->id.qp || /* destroyed since rdma_connect */
	    cma_check_priv_len(id_priv,
			       (size_t)kp.private_data_len + CMA_P2P_HDR_LEN,
			       CMA_PRIV_REP) ||
	    (fd != lfd && ucma_cmd_migrate_id(fd, a->handle, lfd, &reported))) {
		err = id_priv->id.qp ? errno : EINVAL;
		cma_p2p_refuse(lfd, a->handle, CMA_P2P_REJ_RETRY, &conn->key);
		return cma_err(err);
	}
	cma_p2p_addressing_save(id_priv, &saved);
	old = cma_p2p_set_handle(id_priv, a->handle);
	/* The route the request's ends were learnt from, or a fresh one. */
	if (a->has_route ? cma_apply_ip_route(id_priv, &a->route)
			 : cma_query_route_info(id_priv))
		goto undo;
	/* The request's depths are from our side's view already. */
	id_priv->responder_resources = cma_p2p_min_u8(
		id_priv->responder_resources, req->responder_resources);
	id_priv->initiator_depth =
		cma_p2p_min_u8(id_priv->initiator_depth, req->initiator_depth);
	if (!id_priv->cma_dev->is_iwarp && cma_p2p_adopt_qp(a, &rep, &qp_moved))
		goto undo;
	rep.port = conn->key.local.port;
	rep.tag = conn->key.tag;
	rep.flags |= conn->key.explicit_tag ? CMA_P2P_F_EXPLICIT_TAG : 0;
	rep.data_len = kp.private_data_len;
	cma_p2p_put_hdr(&kp, &rep);
	kp.responder_resources = id_priv->responder_resources;
	kp.initiator_depth = id_priv->initiator_depth;

	/*
	 * The REP goes first, so that a failure (the peer's CM no longer
	 * has that request: it gave the attempt up) leaves the id on its
	 * own kernel id as before.
	 */
	if (ucma_cmd_accept(fd, a->handle, (uint64_t)(uintptr_t)id_priv, &kp,
			    &conn->ece))
		goto undo;
	if (cma_p2p_destroy_kernel_id(id_priv, old)) {
		cma_p2p_lock();
		cma_p2p_retire(conn, old);
		cma_p2p_unlock();
	}
	return 0;
undo:
	err = errno;
	cma_p2p_dbg("adopt handle %u failed (%s): request refused", a->handle,
		    strerror(err));
	cma_p2p_refuse(fd, a->handle, CMA_P2P_REJ_RETRY, &conn->key);
	cma_p2p_adopt_undo(conn, old, qp_moved, &saved);
	return cma_err(err);
}

/*
 * Under p2p_lock, an adoption of @a's request failed (@dead: the request
 * was, EINVAL from the kernel's RTR attributes or ACCEPT; the id still has
 * its QP): the conn claims the next held request with its key into @a
 * (true), or waits for the peer's next one, its bound going on.  A dead
 * request never fails the connect: the peer's next attempt is the one to
 * pair with.  A failure of ours stops at the first (its peer, refused,
 * sends again).
 */
static bool cma_p2p_adopt_next(struct cma_p2p_adoption *a, bool dead)
{
	struct cma_p2p_conn *conn = a->conn;

	cma_p2p_busy_put(&a->lis->busy);
	cma_p2p_conn_set_state(conn, CMA_P2P_WAIT_PEER);
	if (dead && !conn->peer_gone && cma_p2p_claim_held(conn, a)) {
		cma_p2p_busy_put(&conn->busy); /* the claim counted it again */
		return true;
	}
	cma_p2p_bound_resume(conn);
	return false;
}

int cma_p2p_adopt_finish(struct cma_p2p_adoption *a, bool qp_locked)
{
	struct cma_p2p_conn *conn = a->conn;
	struct cma_id_private *id_priv = conn->id_priv;
	bool dead;
	int ret;

	if (!qp_locked)
		pthread_mutex_lock(&id_priv->qp_lock);
	for (;;) {
		ret = cma_p2p_adopt_answer(a);
		dead = ret && errno == EINVAL && id_priv->id.qp;
		cma_p2p_lock();
		if (ret && cma_p2p_adopt_next(a, dead)) {
			cma_p2p_unlock();
			continue;
		}
		break;
	}
	if (!ret) {
		cma_p2p_save_peer_data(conn, &a->resp.param.conn, &a->hdr);
		conn->adopted = true;
		conn->reply_p2p = true;
		conn->route = CMA_P2P_ROUTE_KERNEL; /* the request's */
		cma_p2p_conn_set_state(conn, CMA_P2P_CONNECTED);
		cma_p2p_busy_put(&a->lis->busy);
	}
	if (conn->peer_gone) /* it restarted meanwhile: the timer acts */
		cma_p2p_chores_soon(conn);
	cma_p2p_busy_put(&conn->busy);
	cma_p2p_idle();
	cma_p2p_unlock();
	if (!qp_locked)
		pthread_mutex_unlock(&id_priv->qp_lock);
	a->conn = NULL;
	return ret;
}

/*
 * Under the id's qp_lock, without p2p_lock: the request @conn adopted is
 * dead (a NOTICE said so, p2p_stale.c, or its sender's process is gone)
 * and its connection was never established.  Its kernel id goes now: the
 * kernel refuses it towards a sender that gave it up long ago, and
 * forgets the sender's QP at once, so that QP's next REQ is not refused as
 * stale.  The id takes a fresh kernel id and the connect waits for the
 * peer's next REQ (or adopts one held already), its QP left at RTS bound
 * to that QP (cma_p2p_conn.qp_bound): the next REQ from it is answered as
 * the QP is, and no receive the application posted is lost.
 */
static int cma_p2p_unadopt_now(struct cma_p2p_conn *conn)
{
	struct cma_id_private *id_priv = conn->id_priv;
	uint32_t old = id_priv->handle;
	struct cma_p2p_adoption a; /* filled by a claim, if any */
	bool gone;

	a.conn = NULL;
	if (cma_p2p_renew_kernel_id(id_priv)) {
		/* Its REP's retries end it: UNREACHABLE, as any lost peer. */
		cma_p2p_dbg(
			"dead adoption of handle %u kept: no kernel id (%m)",
			old);
		return -1;
	}
	gone = !cma_p2p_destroy_kernel_id(id_priv, old);
	cma_p2p_lock();
	if (!gone)
		cma_p2p_retire(conn, old);
	conn->adopted = false;
	conn->reply_p2p = false;
	cma_p2p_conn_set_state(conn, CMA_P2P_WAIT_PEER);
	if (conn->peer_gone || !cma_p2p_claim_held(conn, &a))
		cma_p2p_bound_resume(conn);
	cma_p2p_unlock();
	if (a.conn)
		cma_p2p_adopt_finish(&a, true);
	return 0;
}

int cma_p2p_unadopt(struct cma_p2p_conn *conn)
{
	int ret;

	cma_p2p_busy_get(&conn->busy); /* rdma_destroy_id waits for us */
	cma_p2p_unlock();
	ret = cma_p2p_unadopt_now(conn);
	cma_p2p_lock();
	cma_p2p_busy_put(&conn->busy);
	cma_p2p_idle();
	return ret;
}

bool cma_p2p_claim_held(struct cma_p2p_conn *conn, struct cma_p2p_adoption *a)
{
	struct cma_p2p_held *h = cma_p2p_held_find(&conn->key);

	if (!h)
		return false;
	cma_p2p_held_unlink(h);
	/* Its listener's hold timer must not fire for it any more. */
	cma_p2p_arm(h->lis);
	cma_p2p_adopt_claim(a, conn, h->lis, h->handle, &h->resp, &h->hdr,
			    h->has_route ? &h->route : NULL);
	free(h);
	return true;
}
