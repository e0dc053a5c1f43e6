// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer-to-peer mode, the connecting side (rdma_cm_p2p(7)): a p2p
 * rdma_connect draws its key and tag, then adopts a held request of the
 * peer's or sends its own REQ (on iWARP only the lower end does); the
 * connect's timer bounds how long it waits.  Adoption answers a request's
 * kernel id with the connecting id's QP and makes that kernel id the id's
 * own.  The table it works on is p2p.c's (p2p_table.h).
 */
#include <config.h>

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cma.h"
#include "p2p.h"
#include "p2p_table.h"
#include "p2p_wire.h"
#include "ucma_abi.h"

/* --- keys and tags --------------------------------------------------------- */

/* The lowest ordinal given back, taken out of the list; 0 for none. */
static uint64_t cma_p2p_take_freed(struct cma_p2p_counter *c)
{
	unsigned int i, min = 0;
	uint64_t tag;

	if (!c->nfreed)
		return 0;
	for (i = 1; i < c->nfreed; i++)
		if (c->freed[i] < c->freed[min])
			min = i;
	tag = c->freed[min];
	c->freed[min] = c->freed[--c->nfreed];
	return tag;
}

/*
 * The n-th p2p connect of this process towards @remote gets tag n, so the
 * two ends' n-th connects pair up.  A connect that failed gives its n back
 * (cma_p2p_ordinal_release) and the next connect reuses it: the peer's
 * n-th failed too, or still waits for ours, and either way the pair stays
 * in step.
 */
static int cma_p2p_next_tag(const struct cma_p2p_ident *remote, uint64_t *tag)
{
	struct cma_p2p_counter *c = cma_p2p_counter_get(remote, true);

	if (!c)
		return -1;
	*tag = cma_p2p_take_freed(c);
	if (!*tag)
		*tag = ++c->count;
	return 0;
}

void cma_p2p_ordinal_release(struct cma_p2p_conn *conn)
{
	struct cma_p2p_counter *c;
	uint64_t *grown;

	if (!conn->ordinal || conn->established)
		return;
	conn->ordinal = false;
	c = cma_p2p_counter_of(&conn->key.remote);
	if (!c)
		return;
	/* At most one entry per connect outstanding: bounded by those. */
	grown = realloc(c->freed, (c->nfreed + 1) * sizeof(*grown));
	if (!grown)
		return; /* the ordinal is lost: later connects use explicit tags */
	c->freed = grown;
	c->freed[c->nfreed++] = conn->key.tag;
}

/*
 * This connect's key; the tag is drawn by the caller under the lock.
 * @lis_holds: whether the listener it announces holds p2p requests.
 */
static int cma_p2p_connect_key(struct cma_id_private *id_priv,
			       struct cma_p2p_key *key, bool *lis_holds)
{
	struct rdma_addr *a = &id_priv->id.route.addr;
	struct cma_p2p_listener *lis;

	memset(key, 0, sizeof(*key));
	if (cma_p2p_addr16(&a->src_storage, sizeof(a->src_storage),
			   key->local.addr) ||
	    cma_p2p_addr16(&a->dst_storage, sizeof(a->dst_storage),
			   key->remote.addr))
		return cma_err(EAFNOSUPPORT);
	key->remote.port = be16toh(rdma_get_dst_port(&id_priv->id));
	lis = cma_p2p_listener_for(id_priv->id.ps, &a->src_addr);
	if (!lis)
		return cma_err(EADDRNOTAVAIL); /* no listener to announce */
	key->local.port = lis->port;
	*lis_holds = cma_p2p_listener_mode(lis) == CMA_P2P_HOLD_PEER;
	if (id_priv->p2p_tag_set) {
		key->explicit_tag = true;
		key->tag = id_priv->p2p_tag;
		return 0;
	}
	return cma_p2p_next_tag(&key->remote, &key->tag);
}

/* --- adoption -------------------------------------------------------------- */

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
 * Under p2p_lock: how much longer than usual a connect waits for its peer.
 * A process with many p2p connects waiting is wiring up a mesh, and its
 * peers, as busy as itself, come to the REQ or the answer that concerns
 * us later: one step more per CMA_P2P_MESH_STEP connects waiting (this
 * one included), at most CMA_P2P_MESH_MAX_STEPS.  In a 64-rank mesh in
 * one loaded guest, messages took 5 to 15 s, the first-contact waits ran
 * out before the lower ends' REQs came, nearly every pair crossed, and
 * the crossings outlasted the connects' bounds (tests/system/BUGS.md,
 * Open #7).  The count is the most that waited at once since none did,
 * not those waiting now: the last connects of a mesh wait for the peers
 * that are busiest (a lower end sends its REQs one after another), and
 * they would otherwise lose the patience the mesh gave them as the other
 * connects form (at 32 ranks, 20 to 50 pairs crossed per mesh).
 */
static unsigned int cma_p2p_mesh_steps(void)
{
	unsigned int n =
		(cma_p2p_conns_waiting_peak() + CMA_P2P_MESH_STEP - 1) /
		CMA_P2P_MESH_STEP;

	if (!n)
		return 1;
	return n > CMA_P2P_MESH_MAX_STEPS ? CMA_P2P_MESH_MAX_STEPS : n;
}

/*
 * How long our REQ may go unanswered.  A peer that holds it answers when
 * its application connects; one that reports it (hold time over) answers
 * when its application accepts.  Give both about a hold time, so that a
 * peer that never does cannot keep us waiting for the kernel's patience
 * (an MRA asks for about 68 s per retry, and the CM retries 15 times);
 * in a mesh, that many times longer.
 */
static unsigned int cma_p2p_pending_ms(void)
{
	return (2 * cma_p2p_wait_ms() + CMA_P2P_PROBE_MS) *
	       cma_p2p_mesh_steps();
}

/*
 * How often a REQ that found no listener at the peer goes out again: a
 * refused iWARP connect, an IB REQ refused with CM reason 8.
 */
#define CMA_P2P_RETRY_MS 200
/* The resolve timeouts of such a REQ's fresh kernel id, if the id had none. */
#define CMA_P2P_RESOLVE_MS 2000

/* How long the peer's REQ may take once a REJ said it would come. */
static unsigned int cma_p2p_peer_due_ms(void)
{
	return cma_p2p_wait_ms() * cma_p2p_mesh_steps();
}

static unsigned int cma_p2p_bound_ms(enum cma_p2p_bound bound)
{
	switch (bound) {
	case CMA_P2P_BOUND_FIRST:
		return cma_p2p_first_wait_now();
	case CMA_P2P_BOUND_ANSWER:
		return cma_p2p_pending_ms();
	case CMA_P2P_BOUND_PEER:
		return cma_p2p_peer_due_ms();
	case CMA_P2P_BOUND_NONE:
		break;
	}
	return 0;
}

/* Under p2p_lock: @conn waits from now, as long as @bound allows. */
static void cma_p2p_bound_start(struct cma_p2p_conn *conn,
				enum cma_p2p_bound bound)
{
	conn->bound = bound;
	conn->bound_ns = cma_p2p_now_ns();
	cma_timer_start(conn->id_priv->id.channel, &conn->timer,
			cma_p2p_bound_ms(bound));
}

/* When @conn's wait runs out, its patience reckoned now (p2p_lock held). */
static uint64_t cma_p2p_bound_due_ns(const struct cma_p2p_conn *conn)
{
	return conn->bound_ns +
	       (uint64_t)cma_p2p_bound_ms(conn->bound) * 1000000;
}

/*
 * Under p2p_lock, the conn's timer fired: true if its wait goes on, as
 * its patience reckoned now is longer than when the wait began (more
 * connects of the process wait now), the timer armed for the rest.
 */
static bool cma_p2p_bound_goes_on(struct cma_p2p_conn *conn)
{
	uint64_t due, now;

	if (conn->bound == CMA_P2P_BOUND_NONE)
		return false;
	due = cma_p2p_bound_due_ns(conn);
	now = cma_p2p_now_ns();
	if (now >= due)
		return false;
	cma_timer_start(conn->id_priv->id.channel, &conn->timer,
			(unsigned int)((due - now) / 1000000) + 1);
	return true;
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

/*
 * Back out of a failed adoption: the connect keeps its own kernel id (or
 * none, if it had none yet).
 */
static void cma_p2p_adopt_undo(struct cma_p2p_conn *conn, uint32_t old,
			       bool qp_moved,
			       const struct cma_p2p_addressing *saved)
{
	struct cma_id_private *id_priv = conn->id_priv;
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_RESET};

	cma_p2p_set_handle(id_priv, old);
	if (qp_moved && !ibv_modify_qp(id_priv->id.qp, &attr, IBV_QP_STATE))
		cma_qp_to_init(id_priv, id_priv->id.qp);
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
	/* Registered, so that a duplicate meanwhile is refused (decide). */
	cma_p2p_conn_register(conn, CMA_P2P_ADOPTING);
	conn->first_wait = false; /* the peer's REQ came: ours never goes */
	cma_timer_stop(&conn->timer);
	conn->busy++;
	lis->busy++;
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
		cma_p2p_refuse(lfd, a->handle, CMA_P2P_REJ_LOST, &conn->key);
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
	if (!id_priv->cma_dev->is_iwarp) {
		qp_moved = true;
		if (cma_qp_to_rtr(id_priv, id_priv->responder_resources) ||
		    cma_qp_to_rts(id_priv, id_priv->initiator_depth))
			goto undo;
	}
	rep.port = conn->key.local.port;
	rep.tag = conn->key.tag;
	rep.flags = conn->key.explicit_tag ? CMA_P2P_F_EXPLICIT_TAG : 0;
	rep.data_len = kp.private_data_len;
	cma_p2p_put_hdr(&kp, &rep);
	kp.responder_resources = id_priv->responder_resources;
	kp.initiator_depth = id_priv->initiator_depth;

	/*
	 * Never while our own REQ is out (cma_p2p_decide holds a crossing
	 * request until the peer refused ours): the REP goes first, so that
	 * a failure leaves the id on its own kernel id as before.
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
	cma_p2p_refuse(fd, a->handle, CMA_P2P_REJ_LOST, &conn->key);
	cma_p2p_adopt_undo(conn, old, qp_moved, &saved);
	return cma_err(err);
}

int cma_p2p_adopt_finish(struct cma_p2p_adoption *a, bool qp_locked)
{
	struct cma_p2p_conn *conn = a->conn;
	struct cma_id_private *id_priv = conn->id_priv;
	int ret;

	if (!qp_locked)
		pthread_mutex_lock(&id_priv->qp_lock);
	ret = cma_p2p_adopt_answer(a);
	cma_p2p_lock();
	if (!ret) {
		cma_p2p_save_peer_data(conn, &a->resp.param.conn, &a->hdr);
		conn->adopted = true;
		conn->reply_p2p = true;
		conn->route = CMA_P2P_ROUTE_KERNEL; /* the request's */
		cma_p2p_conn_set_state(conn, CMA_P2P_CONNECTED);
	} else {
		/* The peer may try again: wait for it, bounded as always. */
		cma_p2p_conn_set_state(conn, CMA_P2P_WAIT_PEER);
		cma_p2p_bound_start(conn, CMA_P2P_BOUND_PEER);
	}
	if (conn->peer_gone) /* it restarted meanwhile: the timer acts */
		cma_p2p_chores_soon(conn);
	conn->busy--;
	a->lis->busy--;
	cma_p2p_idle();
	cma_p2p_unlock();
	if (!qp_locked)
		pthread_mutex_unlock(&id_priv->qp_lock);
	a->conn = NULL;
	return ret;
}

/* Claim the held request with @conn's key into @a: true if there was one. */
static bool cma_p2p_claim_held(struct cma_p2p_conn *conn,
			       struct cma_p2p_adoption *a)
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

void cma_p2p_wait_for_peer(struct cma_p2p_conn *conn, int status,
			   struct cma_p2p_adoption *a)
{
	cma_p2p_conn_set_state(conn, CMA_P2P_WAIT_PEER);
	conn->wait_status = status;
	/*
	 * Held: adopted once the caller dropped p2p_lock (a failed adoption
	 * goes back to waiting).  None held: wait for the peer's REQ,
	 * bounded as always.
	 */
	if (!cma_p2p_claim_held(conn, a))
		cma_p2p_bound_start(conn, CMA_P2P_BOUND_PEER);
}

/*
 * Under p2p_lock: the IB CM refused our REQ with reason 8, no listener on
 * the service ID: the peer's process does not listen yet, or did not when
 * our REQ came.  Its REQ is claimed if it crossed ours, as for any "the
 * peer will connect" refusal.  Otherwise ours goes out again every
 * CMA_P2P_RETRY_MS (cma_p2p_send_again) rather than presuming the peer
 * connects: the peer may be waiting for ours, having been told it would
 * come (we refused its crossing REQ as the lower end, or our later REQs
 * said our listener holds, so it skipped its own), and then both ends
 * would wait until their bounds (BUGS.md Open #6).  The bound is the
 * peer's REQ's, reckoned from the first refusal: a peer that never
 * listens fails the connect as late as before, REJECTED with status 8.
 */
void cma_p2p_wait_unheard(struct cma_p2p_conn *conn, struct cma_p2p_adoption *a)
{
	cma_p2p_conn_set_state(conn, CMA_P2P_WAIT_PEER);
	conn->wait_status = CMA_IB_REJ_INVALID_SERVICE_ID;
	if (cma_p2p_claim_held(conn, a))
		return;
	conn->unheard = true;
	if (!conn->unheard_ns)
		conn->unheard_ns = cma_p2p_now_ns();
	conn->bound = CMA_P2P_BOUND_PEER;
	conn->bound_ns = conn->unheard_ns;
	cma_timer_start(conn->id_priv->id.channel, &conn->timer,
			CMA_P2P_RETRY_MS);
}

/* --- sending our REQ ----------------------------------------------------- */

/*
 * iWARP cannot let two requests cross: each side's QP would be tied to
 * its own outgoing connection (siw refuses to accept with such a QP once
 * that connect is withdrawn).  So on iWARP only the end with the lower
 * identity sends a request (the one that would win a crossing anyway);
 * the other end waits for it and adopts it, with a QP no connect ever
 * used.  A connect refused at once (the peer does not listen yet: iWARP
 * connects are TCP connects) is tried again every CMA_P2P_RETRY_MS
 * until the peer's hold time has passed, then fails with REJECTED,
 * -ECONNREFUSED.
 */
static bool cma_p2p_iw_higher_end(const struct cma_p2p_conn *conn)
{
	return cma_id_is_iwarp(conn->id_priv) &&
	       cma_p2p_ident_cmp(&conn->key.local, &conn->key.remote) > 0;
}

/*
 * On IB and RoCE the higher end sends no REQ either when the peer's
 * requests said its listener holds ours until its application connects
 * (CMA_P2P_X_HOLDS): then a REQ of ours forms a connection only once the
 * peer's application connects too, and the peer, the lower end, sends its
 * own REQ when it does (it holds none of ours to adopt).  Waiting for
 * that REQ saves the crossing (two REQs, a REJ and the round trip the
 * adoption waits for, BUGS.md #5).  A listener that would hand our
 * request to its application (not a p2p listener) never says so: connects
 * to it are not delayed.
 */
enum cma_p2p_expect cma_p2p_expect_req(const struct cma_p2p_ident *local,
				       const struct cma_p2p_ident *remote,
				       bool lis_holds)
{
	const struct cma_p2p_counter *c;

	if (cma_p2p_ident_cmp(local, remote) < 0)
		return CMA_P2P_EXPECT_NONE; /* the lower end sends */
	c = cma_p2p_counter_of(remote);
	if (c && c->holds)
		return CMA_P2P_EXPECT_KNOWN;
	/*
	 * At first contact (nothing heard from the peer's process yet) a
	 * higher end whose own listener holds presumes the peer is a
	 * program like this one: its application connects to us too, and
	 * it sends the REQ, being the lower end.  In a mesh whose ranks all
	 * connect at once, waiting briefly for that REQ saves the crossing
	 * every pair would otherwise go through.  It is a presumption: if no
	 * REQ comes within RDMA_CM_P2P_FIRST_WAIT_MS (an ordinary listener,
	 * or a peer whose first REQ found no listener here and now waits for
	 * ours), ours goes out and the crossing rules apply as ever.  A
	 * process whose listener does not hold never waits: it is not known
	 * to run in p2p mode.
	 */
	if (lis_holds && cma_p2p_first_wait_ms() &&
	    (!c || (!c->incarnation && !c->heard)))
		return CMA_P2P_EXPECT_PRESUMED;
	return CMA_P2P_EXPECT_NONE;
}

/*
 * How long a first contact waits for the peer's REQ (under p2p_lock, the
 * connect registered): RDMA_CM_P2P_FIRST_WAIT_MS per mesh step, at most a
 * minute.
 */
unsigned int cma_p2p_first_wait_now(void)
{
	uint64_t ms = (uint64_t)cma_p2p_first_wait_ms() * cma_p2p_mesh_steps();

	return ms > CMA_P2P_MAX_FIRST_WAIT_MS ? CMA_P2P_MAX_FIRST_WAIT_MS
					      : (unsigned int)ms;
}

static enum cma_p2p_expect cma_p2p_conn_expects(const struct cma_p2p_conn *conn)
{
	if (cma_id_is_iwarp(conn->id_priv))
		return CMA_P2P_EXPECT_NONE; /* its own rules: iw_higher_end */
	return cma_p2p_expect_req(&conn->key.local, &conn->key.remote,
				  conn->lis_holds);
}

/* Both locks held: a refused iWARP connect's time is up. */
static void cma_p2p_iw_refused_for_good(struct cma_p2p_conn *conn)
{
	struct cma_event *evt;

	cma_qp_to_err(conn->id_priv);
	evt = cma_event_new(conn->id_priv, RDMA_CM_EVENT_REJECTED,
			    -ECONNREFUSED);
	if (evt)
		cma_event_post(evt);
}

/*
 * Both locks held: a REQ sent after rdma_connect returned (an iWARP
 * retry, the end of a first contact's wait) could not go out.
 */
void cma_p2p_deferred_failed(struct cma_p2p_conn *conn, int err)
{
	struct cma_event *evt;

	if (conn->iw_refused) {
		cma_p2p_iw_refused_for_good(conn);
		return;
	}
	cma_qp_to_err(conn->id_priv);
	evt = cma_event_new(conn->id_priv, RDMA_CM_EVENT_UNREACHABLE, -err);
	if (evt)
		cma_event_post(evt);
}

/*
 * After the header and our data, when the message has room: whether the
 * listener our REQ announces holds the peer's requests (the peer's higher
 * end then need not send its own, cma_p2p_expect_req).
 */
static void cma_p2p_put_ext(const struct cma_p2p_conn *conn,
			    struct rdma_ucm_conn_param *req)
{
	size_t len = (size_t)req->private_data_len + CMA_P2P_EXT_LEN;

	if (!conn->lis_holds || len > sizeof(req->private_data) ||
	    cma_check_priv_len(conn->id_priv, len, CMA_PRIV_REQ))
		return;
	cma_p2p_ext_encode(CMA_P2P_X_HOLDS,
			   req->private_data + req->private_data_len);
	req->private_data_len = (uint8_t)len;
}

/*
 * Under the id's qp_lock (which every change of the key and of kparam
 * holds): @conn's REQ, its header first, made when it goes out (a retry
 * or the end of a first contact's wait sends the same one again).
 */
static void cma_p2p_make_req(const struct cma_p2p_conn *conn,
			     struct rdma_ucm_conn_param *req)
{
	struct cma_p2p_hdr hdr = {.kind = CMA_P2P_REQ};

	*req = conn->kparam;
	hdr.port = conn->key.local.port;
	hdr.tag = conn->key.tag;
	hdr.flags = conn->key.explicit_tag ? CMA_P2P_F_EXPLICIT_TAG : 0;
	hdr.data_len = req->private_data_len;
	cma_p2p_put_hdr(req, &hdr);
	cma_p2p_put_ext(conn, req);
}

/*
 * Send @conn's REQ (cma_p2p_make_req), PENDING: under the id's
 * qp_lock (its answer waits for us), without p2p_lock (an iWARP connect
 * is a TCP connect and may wait for the network).  A peer's request that
 * arrives meanwhile finds the conn PENDING, as it should.  0, or -1/errno
 * with the conn out of the table.
 */
int cma_p2p_send_req(struct cma_p2p_conn *conn, bool deferred)
{
	struct cma_id_private *id_priv = conn->id_priv;
	struct rdma_ucm_conn_param req;
	char kb[CMA_P2P_KEY_STRLEN];
	int ret, err;

	cma_p2p_lock();
	conn->busy++;
	cma_p2p_unlock();
	ret = cma_id_kernel(id_priv);
	if (!ret) {
		cma_p2p_make_req(conn, &req);
		ret = ucma_cmd_connect(cma_id_fd(id_priv), id_priv->handle,
				       &req, &conn->ece);
	}
	err = errno;
	cma_p2p_lock();
	if (!ret) {
		conn->iw_refused = false;
		cma_p2p_bound_start(conn, CMA_P2P_BOUND_ANSWER);
	} else if (err == ECONNREFUSED && cma_id_is_iwarp(id_priv) &&
		   (!conn->iw_refused ||
		    cma_p2p_now_ns() < conn->iw_deadline_ns)) {
		cma_p2p_dbg("connect %s: refused (no listener yet), retrying",
			    cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
		if (!conn->iw_refused) {
			conn->iw_refused = true;
			conn->iw_deadline_ns =
				cma_p2p_now_ns() +
				(uint64_t)cma_p2p_wait_ms() * 1000000;
		}
		conn->bound = CMA_P2P_BOUND_NONE; /* iw_deadline_ns bounds it */
		cma_timer_start(id_priv->id.channel, &conn->timer,
				CMA_P2P_RETRY_MS);
		ret = 0;
	} else {
		cma_p2p_dbg("connect %s: REQ failed: %s",
			    cma_p2p_key_str(&conn->key, kb, sizeof(kb)),
			    strerror(err));
		cma_p2p_conn_unregister(conn);
		if (deferred) /* rdma_connect has returned: an event tells */
			cma_p2p_deferred_failed(conn, err);
	}
	if (conn->peer_gone)
		cma_p2p_chores_soon(conn);
	conn->busy--;
	cma_p2p_idle();
	cma_p2p_unlock();
	errno = err;
	return ret;
}

int cma_p2p_send_or_resolve(struct cma_p2p_conn *conn, bool deferred)
{
	if (!cma_p2p_route_later(conn))
		return cma_p2p_send_req(conn, deferred);
	return cma_p2p_resolve_now(conn, deferred);
}

/* --- rdma_connect ---------------------------------------------------------- */

/*
 * Under p2p_lock: draw the key and claim a held request into @a (1), or
 * register the conn for its REQ (0: PENDING, or WAIT_PEER for an iWARP
 * higher end and for a higher end whose peer sends), or fail (-1/errno).
 */
static int cma_p2p_connect_start(struct cma_p2p_conn *conn,
				 const struct rdma_ucm_conn_param *kparam,
				 const struct rdma_ucm_ece *ece,
				 struct cma_p2p_adoption *a)
{
	struct cma_id_private *id_priv = conn->id_priv;
	char kb[CMA_P2P_KEY_STRLEN];
	enum cma_p2p_expect expect;

	if (conn->registered)
		return cma_err(EISCONN);
	/* Left for later needs ROUTE_RESOLVED first, as the kernel's route. */
	if (conn->route != CMA_P2P_ROUTE_KERNEL &&
	    conn->route != CMA_P2P_ROUTE_LATER)
		return cma_err(EINVAL);
	if (cma_p2p_connect_key(id_priv, &conn->key, &conn->lis_holds))
		return -1;
	conn->ordinal = !conn->key.explicit_tag;
	conn->established = false;
	conn->kparam = *kparam;
	conn->ece = *ece;
	conn->gave_up = false;
	conn->peer_gone = false;
	conn->iw_refused = false;
	conn->unheard = false;
	conn->unheard_ns = 0;
	conn->skipped_req = false;
	conn->first_wait = false;
	conn->bound = CMA_P2P_BOUND_NONE;
	conn->resolve_due = false;
	conn->wait_status = -ECONNREFUSED;
	if (cma_p2p_claim_held(conn, a)) {
		cma_p2p_dbg("connect %s: adopting the held request",
			    cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
		return 1;
	}
	if (cma_p2p_iw_higher_end(conn)) {
		cma_p2p_dbg("connect %s: iWARP, higher end: waiting for the "
			    "peer's REQ",
			    cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
		cma_p2p_conn_register(conn, CMA_P2P_WAIT_PEER);
		cma_p2p_bound_start(conn, CMA_P2P_BOUND_ANSWER);
		return 0;
	}
	expect = cma_p2p_conn_expects(conn);
	if (expect == CMA_P2P_EXPECT_KNOWN) {
		cma_p2p_dbg("connect %s: the peer's listener holds, waiting "
			    "for its REQ",
			    cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
		/* Bounded as our REQ would be, and reported the same way. */
		conn->skipped_req = true;
		cma_p2p_conn_register(conn, CMA_P2P_WAIT_PEER);
		cma_p2p_bound_start(conn, CMA_P2P_BOUND_ANSWER);
		return 0;
	}
	if (expect == CMA_P2P_EXPECT_PRESUMED) {
		conn->first_wait = true;
		cma_p2p_conn_register(conn, CMA_P2P_WAIT_PEER);
		cma_p2p_bound_start(conn, CMA_P2P_BOUND_FIRST);
		cma_p2p_dbg("connect %s: first contact, waiting up to %u ms "
			    "for the peer's REQ",
			    cma_p2p_key_str(&conn->key, kb, sizeof(kb)),
			    cma_p2p_bound_ms(CMA_P2P_BOUND_FIRST));
		return 0;
	}
	cma_p2p_dbg("connect %s: sending a REQ%s",
		    cma_p2p_key_str(&conn->key, kb, sizeof(kb)),
		    cma_p2p_route_later(conn) ? " once the route is resolved"
					      : "");
	/*
	 * A route left for later is resolved first: meanwhile the peer's
	 * REQ, should it come, is adopted (WAIT_PEER), and no timer runs
	 * (the kernel bounds the resolution).
	 */
	cma_p2p_conn_register(conn, cma_p2p_route_later(conn)
					    ? CMA_P2P_WAIT_PEER
					    : CMA_P2P_PENDING);
	conn->resolve_due = cma_p2p_route_later(conn);
	return 0;
}

/* With the id's qp_lock: the connect, once p2p_lock showed what to do. */
static int cma_p2p_connect_locked(struct cma_p2p_conn *conn,
				  const struct rdma_ucm_conn_param *kparam,
				  const struct rdma_ucm_ece *ece)
{
	struct cma_p2p_adoption a; /* filled by a claim, if any */
	bool send, later;
	int ret;

	a.conn = NULL;
	cma_p2p_lock();
	/* What the last attempt left (a QP to fail, old ids) goes first. */
	cma_p2p_chores_now(conn);
	ret = cma_p2p_connect_start(conn, kparam, ece, &a);
	/*
	 * Read here: once p2p_lock is dropped, another thread (the service
	 * thread, with the peer's request) may claim the conn.  Our REQ
	 * then still goes out, and the adoption's chores withdraw it.
	 */
	send = !ret && (conn->state == CMA_P2P_PENDING || conn->resolve_due);
	later = !ret && conn->first_wait;
	cma_p2p_unlock();
	if (ret < 0)
		return -1;
	if (ret > 0) {
		if (!cma_p2p_adopt_finish(&a, true))
			return 0;
		/*
		 * Refused (the peer gave that attempt up): wait for its
		 * next REQ, as a connect that lost a crossing would, unless
		 * another request was claimed meanwhile.
		 */
		cma_p2p_lock();
		ret = conn->state == CMA_P2P_WAIT_PEER &&
		      !cma_p2p_iw_higher_end(conn);
		if (ret && !cma_p2p_route_later(conn))
			cma_p2p_conn_set_state(conn, CMA_P2P_PENDING);
		cma_p2p_unlock();
		if (!ret)
			return 0;
	} else if (!send && !later) {
		return 0; /* a higher end that waits for the peer's REQ */
	}
	if (later)
		return 0; /* sent by the timer (our qp_lock keeps it out) */
	return cma_p2p_send_or_resolve(conn, false);
}

int cma_p2p_connect(struct cma_id_private *id_priv,
		    const struct rdma_ucm_conn_param *kparam,
		    const struct rdma_ucm_ece *ece)
{
	struct cma_p2p_conn *conn;
	int ret;

	if (!id_priv->id.qp)
		return cma_err(EINVAL); /* adoption moves the id's own QP */
	if (cma_check_priv_len(
		    id_priv, (size_t)kparam->private_data_len + CMA_P2P_HDR_LEN,
		    CMA_PRIV_REQ))
		return -1;
	conn = cma_p2p_conn_get(id_priv);
	if (!conn)
		return -1;
	/* Its events may come from other threads (timers, other channels). */
	cma_channel_expect_posts(id_priv->id.channel);
	pthread_mutex_lock(&id_priv->qp_lock);
	/*
	 * The REQ may be answered, and the id adopted (under its qp_lock, on
	 * the service thread), before the call returns: marked started
	 * first, under that lock (TSan).
	 */
	id_priv->cm_started = true;
	ret = cma_p2p_connect_locked(conn, kparam, ece);
	pthread_mutex_unlock(&id_priv->qp_lock);
	return ret;
}

/* --- the connect's timer --------------------------------------------------- */

/* The conn a timer is part of: alive until cma_p2p_free has synced it. */
static struct cma_p2p_conn *cma_p2p_timer_conn(struct cma_timer *timer)
{
	return (struct cma_p2p_conn *)((char *)timer -
				       offsetof(struct cma_p2p_conn, timer));
}

/*
 * Our REQ went unanswered too long: withdraw it and report UNREACHABLE,
 * ETIMEDOUT.  On Linux, destroying the kernel id is what withdraws a REQ:
 * it cancels the retries and sends a REJ the peer's CM acts on, so the
 * peer's hold check drops its copy.  (A REJ sent with rdma_reject for an
 * outgoing REQ is not matched by the peer, and leaves the REQ's retries
 * running: destroying the id later would block until the last one.)  The
 * id gets a kernel id of its own again (cma_p2p_renew_kernel_id), so that
 * the application can still use or destroy it.
 * Under p2p_lock; the QP and the old kernel id are chores, done under the
 * id's qp_lock: destroying a connecting iWARP id waits in the kernel until
 * its connect is answered or the MPA exchange times out (seconds), and
 * the event, posted first, must not wait for that.
 */
static void cma_p2p_give_up(struct cma_p2p_conn *conn, int status)
{
	struct cma_id_private *id_priv = conn->id_priv;
	uint32_t old = id_priv->handle;
	struct cma_event *evt;

	conn->gave_up = true;
	conn->qp_err_due = true;
	evt = cma_event_new(id_priv, RDMA_CM_EVENT_UNREACHABLE, status);
	if (evt)
		cma_event_post(evt);
	if (!cma_p2p_renew_kernel_id(id_priv))
		cma_p2p_retire(conn, old);
	else /* no memory: the best we can do without losing the id */
		ucma_cmd_reject(cma_id_fd(id_priv), old, NULL, 0, 0);
}

/*
 * Both locks held, the timer fired: our REQ, refused for want of a
 * listener (cma_p2p_wait_unheard), goes out again while the bound lasts.
 * On a fresh kernel id (one whose REQ was refused cannot send another),
 * resolved out of the application's sight like a route left for later
 * (p2p_resolve.c); the old kernel id is retired, and the caller's chores
 * destroy it before the resolution binds the same source address.  True
 * if the caller sends the REQ again.
 */
static bool cma_p2p_send_again(struct cma_p2p_conn *conn)
{
	struct cma_id_private *id_priv = conn->id_priv;
	uint32_t old = id_priv->handle;
	char kb[CMA_P2P_KEY_STRLEN];

	if (cma_p2p_renew_kernel_id(id_priv)) {
		cma_timer_start(id_priv->id.channel, &conn->timer,
				CMA_P2P_RETRY_MS);
		return false;
	}
	cma_p2p_dbg("connect %s: our REQ found no listener, sending it again",
		    cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
	cma_p2p_retire(conn, old);
	conn->unheard = false;
	conn->kernel_unbound = true;
	conn->route = CMA_P2P_ROUTE_LATER;
	if (!conn->addr_ms)
		conn->addr_ms = CMA_P2P_RESOLVE_MS;
	if (!conn->route_ms)
		conn->route_ms = CMA_P2P_RESOLVE_MS;
	return true;
}

/*
 * The connect waited long enough: for an answer to its REQ (PENDING), or
 * for the peer's REQ after being told it would come (WAIT_PEER, failed as
 * the REJ said).  Both locks held; true if our REQ is due now (a
 * refused iWARP REQ again, or a first contact's wait is over), sent by
 * the caller without p2p_lock.
 */
static bool cma_p2p_conn_timeout(struct cma_p2p_conn *conn)
{
	char kb[CMA_P2P_KEY_STRLEN];
	struct cma_event *evt;

	if (conn->state == CMA_P2P_WAIT_PEER && conn->unheard &&
	    cma_p2p_now_ns() < cma_p2p_bound_due_ns(conn))
		return cma_p2p_send_again(conn);
	if (cma_p2p_bound_goes_on(conn))
		return false;
	if (conn->state == CMA_P2P_WAIT_PEER && conn->first_wait) {
		cma_p2p_dbg("connect %s: no REQ from the peer, sending ours",
			    cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
		conn->first_wait = false;
		/* A route left for later: the peer's REQ is still welcome. */
		if (!cma_p2p_route_later(conn))
			cma_p2p_conn_set_state(conn, CMA_P2P_PENDING);
		return true;
	}

	if (conn->state == CMA_P2P_PENDING && conn->iw_refused) {
		if (cma_p2p_now_ns() < conn->iw_deadline_ns)
			return true;
		cma_p2p_dbg("connect %s: still refused, REJECTED",
			    cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
		cma_p2p_conn_unregister(conn);
		cma_p2p_iw_refused_for_good(conn);
		return false;
	}
	cma_p2p_dbg("connect %s: %s",
		    cma_p2p_key_str(&conn->key, kb, sizeof(kb)),
		    conn->state == CMA_P2P_PENDING
			    ? "no answer to our REQ, UNREACHABLE"
			    : "the peer's REQ never came, REJECTED");
	if (conn->state == CMA_P2P_PENDING) {
		cma_p2p_conn_unregister(conn);
		cma_p2p_give_up(conn, -ETIMEDOUT);
		return false;
	}
	cma_p2p_conn_unregister(conn);
	cma_qp_to_err(conn->id_priv); /* ours: the caller has its qp_lock */
	/* No REQ went out: the peer never connected, as a REQ would show. */
	evt = conn->skipped_req
		      ? cma_event_new(conn->id_priv, RDMA_CM_EVENT_UNREACHABLE,
				      -ETIMEDOUT)
		      : cma_event_new(conn->id_priv, RDMA_CM_EVENT_REJECTED,
				      conn->wait_status);
	if (evt)
		cma_event_post(evt);
	return false;
}

static void cma_p2p_peer_gone(struct cma_p2p_conn *conn);

/*
 * Neither the conn nor its id is freed before the timer is synced
 * (cma_p2p_free), so both may be used before p2p_lock is taken.  The id's
 * qp_lock comes first (lock order, cma.h): an expiry moves the QP the
 * application may be destroying.  Besides the connect's time bounds, the
 * timer does the conn's chores (armed at 0 for them).
 */
void cma_p2p_conn_timer_expire(struct cma_timer *timer)
{
	struct cma_p2p_conn *conn = cma_p2p_timer_conn(timer);
	struct cma_id_private *id_priv = conn->id_priv;
	struct cma_p2p_chores c;
	bool resend = false, chores;

	pthread_mutex_lock(&id_priv->qp_lock);
	cma_p2p_lock();
	if (conn->peer_gone)
		cma_p2p_peer_gone(conn);
	else if (conn->registered && (conn->state == CMA_P2P_WAIT_PEER ||
				      conn->state == CMA_P2P_PENDING))
		resend = cma_p2p_conn_timeout(conn);
	chores = cma_p2p_take_chores(conn, &c);
	cma_p2p_unlock();
	if (chores)
		cma_p2p_do_chores(conn, &c);
	if (resend)
		cma_p2p_send_or_resolve(conn, true);
	pthread_mutex_unlock(&id_priv->qp_lock);
}

/* --- a restarted peer --------------------------------------------------------- */

/*
 * @conn was formed, or was forming, with a process of the peer's that is
 * gone: a formed connection is disconnected (the kernel reports
 * DISCONNECTED once the old peer's CM answered the DREQ or it timed out);
 * a connect still waiting fails now, with -ECONNRESET, its REQ withdrawn.
 * Under p2p_lock, on a conn nobody is busy with: the QP and the old
 * kernel id are left to its chores (another id's qp_lock is not ours).
 */
static void cma_p2p_peer_gone(struct cma_p2p_conn *conn)
{
	struct cma_id_private *id_priv = conn->id_priv;
	struct cma_event *evt = NULL;

	conn->peer_gone = false;
	conn->ordinal = false; /* the old numbering is over */
	switch (conn->state) {
	case CMA_P2P_CONNECTED:
		ucma_cmd_disconnect(cma_id_fd(id_priv), id_priv->handle);
		break;
	case CMA_P2P_PENDING:
		cma_p2p_give_up(conn, -ECONNRESET);
		break;
	case CMA_P2P_WAIT_PEER:
		evt = cma_event_new(id_priv, RDMA_CM_EVENT_REJECTED,
				    -ECONNRESET);
		conn->qp_err_due = true;
		break;
	case CMA_P2P_NO_MATCH:
	case CMA_P2P_ADOPTING: /* busy: never called then */
		break;
	}
	cma_p2p_conn_unregister(conn);
	if (evt)
		cma_event_post(evt);
	if (conn->nretired || conn->qp_err_due)
		cma_p2p_chores_soon(conn);
}

/*
 * Drop what the peer at @remote's previous process left here (but @keep).
 * A conn someone is busy with (an adoption, a REQ going out) is marked:
 * its timer acts once the work is done.
 */
static void cma_p2p_forget_peer(const struct cma_p2p_ident *remote,
				const struct cma_p2p_conn *keep)
{
	struct cma_p2p_conn *conn, *next;

	cma_p2p_held_drop_from(remote);
	for (conn = cma_p2p_conn_next_of(NULL, remote); conn; conn = next) {
		next = cma_p2p_conn_next_of(conn, remote);
		if (conn == keep)
			continue;
		conn->ordinal = false; /* the old numbering is over */
		if (conn->busy)
			conn->peer_gone = true;
		else
			cma_p2p_peer_gone(conn);
	}
}

struct cma_p2p_counter *cma_p2p_peer_seen(const struct cma_p2p_ident *remote,
					  uint64_t incarnation,
					  const struct cma_p2p_conn *keep)
{
	struct cma_p2p_counter *c;
	char kb[CMA_P2P_KEY_STRLEN];
	struct cma_p2p_key k = {.remote = *remote};

	if (!incarnation)
		return NULL; /* a version 1 peer: it does not say */
	c = cma_p2p_counter_get(remote, false);
	if (!c || c->incarnation == incarnation)
		return c;
	if (c->incarnation) {
		cma_p2p_dbg("%s: new incarnation %016llx (was %016llx), "
			    "the peer restarted",
			    cma_p2p_key_str(&k, kb, sizeof(kb)),
			    (unsigned long long)incarnation,
			    (unsigned long long)c->incarnation);
		cma_p2p_forget_peer(remote, keep);
		c->count = 0;
		c->nfreed = 0;
		c->holds = false; /* the new process says for itself */
	}
	c->incarnation = incarnation;
	return c;
}

void cma_p2p_peer_answered(const struct cma_p2p_ident *remote)
{
	struct cma_p2p_counter *c = cma_p2p_counter_of(remote);

	if (c)
		c->heard = true;
}

void cma_p2p_peer_holds(struct cma_p2p_counter *peer, uint8_t ext)
{
	if (peer)
		peer->holds = ext & CMA_P2P_X_HOLDS;
}
