// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer-to-peer mode, the connecting side (rdma_cm_p2p(7)): a p2p
 * rdma_connect from the lower identity of its pair sends a REQ; one from
 * the higher identity never does, it adopts the oldest request of the
 * peer's with its key, held or still to come.  The connect's timer only
 * bounds how long either waits.  Adoption (p2p_adopt.c) answers a
 * request's kernel id with the connecting id's QP and makes that kernel
 * id the id's own.  The connecting id's kernel events come here too (cma_p2p_filter_event before
 * the core handles them, the answer to its REQ after).  The table it works
 * on is p2p.c's (p2p_table.h).
 */
#include <config.h>

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"
#include "p2p_hooks.h"
#include "p2p.h"
#include "p2p_table.h"
#include "p2p_wire.h"
#include "cm/ucma_abi.h"

/* --- keys --------------------------------------------------------------- */

/*
 * This connect's key.  Without an explicit tag the tag is 0: such
 * connects and requests pair with any of the peer's in the order they
 * come, so that no count kept on each side can drift apart.
 */
static int cma_p2p_connect_key(struct cma_id_private *id_priv,
			       struct cma_p2p_key *key)
{
	struct rdma_addr *a = &id_priv->id.route.addr;
	struct cma_p2p_listener *lis;
	struct cma_p2p_id *p;

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
	p = cma_p2p_id_of(id_priv);
	if (p && p->tag_set) {
		key->explicit_tag = true;
		key->tag = p->tag;
	}
	/* Its restarts must be noticed for as long as we connect to it. */
	return cma_p2p_peer_get(&key->remote, true) ? 0 : -1;
}

/* --- bounds ---------------------------------------------------------------- */

/*
 * Under p2p_lock: how much longer than usual a connect may wait for its
 * peer.  A process with many p2p connects waiting is wiring up a mesh, and
 * its peers, as busy as itself, come to the REQ or the answer that
 * concerns us later: one step more per CMA_P2P_MESH_STEP connects waiting
 * (this one included), at most CMA_P2P_MESH_MAX_STEPS.  In a 64-rank mesh
 * in one loaded guest, messages took 5 to 15 s.  The count is the most
 * that waited at once since none did, not those waiting now: the last
 * connects of a mesh wait for the peers that are busiest (a lower end
 * sends its REQs one after another).  This only bounds a wait: which end
 * sends and which attempts pair never depend on it.
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
 * How long our REQ may go unanswered, and the higher end may wait for
 * the peer's.  A peer that holds our REQ answers when its application
 * connects; one that reports it (hold time over) answers when its
 * application accepts.  Give both about a hold time, so that a peer that
 * never does cannot keep us waiting for the kernel's patience (an MRA
 * asks for about 68 s per retry, and the CM retries 15 times); in a mesh,
 * that many times longer.
 */
static unsigned int cma_p2p_pending_ms(void)
{
	return (2 * cma_p2p_wait_ms() + CMA_P2P_PROBE_MS) *
	       cma_p2p_mesh_steps();
}

/*
 * How soon a REQ refused for now goes out again (a refused iWARP connect,
 * an IB REQ refused with CM reason 8): after CMA_P2P_RETRY_MS, the wait
 * doubling with each refusal of the connect up to CMA_P2P_RETRY_MAX_MS.
 * A mesh whose peers start over half a minute would otherwise make every
 * early rank send five REQs a second to each late one: on a host past
 * its means that storm is what kept CM answers beyond the CM's response
 * timeout, and each such answer costs a late copy (p2p_notice.c).
 */
#define CMA_P2P_RETRY_MS 200
#define CMA_P2P_RETRY_MAX_MS 3200
/* The resolve timeouts of such a REQ's fresh kernel id, if the id had none. */
#define CMA_P2P_RESOLVE_MS 2000

/* How long a refused REQ goes on being sent again. */
static unsigned int cma_p2p_refused_ms(void)
{
	return cma_p2p_wait_ms() * cma_p2p_mesh_steps();
}

static unsigned int cma_p2p_bound_ms(enum cma_p2p_bound bound)
{
	switch (bound) {
	case CMA_P2P_BOUND_ANSWER:
		return cma_p2p_pending_ms();
	case CMA_P2P_BOUND_REFUSED:
		return cma_p2p_refused_ms();
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

void cma_p2p_bound_resume(struct cma_p2p_conn *conn)
{
	uint64_t due, now = cma_p2p_now_ns();

	if (conn->bound == CMA_P2P_BOUND_NONE) {
		cma_p2p_bound_start(conn, CMA_P2P_BOUND_ANSWER);
		return;
	}
	due = cma_p2p_bound_due_ns(conn);
	cma_timer_start(conn->id_priv->id.channel, &conn->timer,
			now >= due ? 0
				   : (unsigned int)((due - now) / 1000000) + 1);
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
 * Under p2p_lock: our REQ was refused for now: by the IB CM with reason 8
 * (no listener on the service ID: the peer's process does not listen yet,
 * or did not when our REQ came), or by the peer's library (it could not
 * hold or adopt it).  The higher end never sends, so nothing comes unless
 * ours goes out again: after cma_p2p_resend_delay_ms (cma_p2p_send_again),
 * on a fresh kernel id, with a number of its own, until the bound
 * reckoned from the first refusal.  A peer that never takes it fails the
 * connect then, REJECTED with the last refusal's status.
 */
unsigned int cma_p2p_resend_delay_ms(const struct cma_p2p_conn *conn)
{
	unsigned int ms = CMA_P2P_RETRY_MS, n;

	for (n = 1; n < conn->refusals && ms < CMA_P2P_RETRY_MAX_MS; n++)
		ms *= 2;
	return ms < CMA_P2P_RETRY_MAX_MS ? ms : CMA_P2P_RETRY_MAX_MS;
}

void cma_p2p_wait_resend(struct cma_p2p_conn *conn, int status)
{
	/* The refused REQ is no longer current: a copy of it is stale. */
	conn->req_number = 0;
	cma_p2p_conn_set_state(conn, CMA_P2P_RESEND);
	conn->wait_status = status;
	if (!conn->refused_ns)
		conn->refused_ns = cma_p2p_now_ns();
	conn->bound = CMA_P2P_BOUND_REFUSED;
	conn->bound_ns = conn->refused_ns;
	if (conn->refusals < UINT8_MAX)
		conn->refusals++;
	cma_timer_start(conn->id_priv->id.channel, &conn->timer,
			cma_p2p_resend_delay_ms(conn));
}

/* --- sending our REQ ----------------------------------------------------- */

/*
 * Only the lower identity of a pair ever sends a REQ; the higher end
 * waits for it and adopts it, on every transport.  Requests then never
 * cross: no tie-break, no REP racing the peer's own REQ in its CM (IB CM
 * reject reason 10), and on iWARP no QP tied to a withdrawn connect.
 * Both ends reckon it from the same two identities, so they agree
 * without a message or a timer.
 */
bool cma_p2p_sends_req(const struct cma_p2p_ident *local,
		       const struct cma_p2p_ident *remote)
{
	return cma_p2p_ident_cmp(local, remote) < 0;
}

static bool cma_p2p_higher_end(const struct cma_p2p_conn *conn)
{
	return !cma_p2p_sends_req(&conn->key.local, &conn->key.remote);
}

/*
 * Both locks held: a REQ sent after rdma_connect returned (an iWARP
 * retry, a REQ refused for now going out again) could not go out.  An
 * iWARP connect refused before reports that refusal.
 */
void cma_p2p_deferred_failed(struct cma_p2p_conn *conn, int err)
{
	bool iw_refused = cma_id_is_iwarp(conn->id_priv) && conn->refused_ns;
	struct cma_event *evt;

	cma_qp_to_err(conn->id_priv);
	evt = iw_refused ? cma_event_new(conn->id_priv, RDMA_CM_EVENT_REJECTED,
					 -ECONNREFUSED)
			 : cma_event_new(conn->id_priv,
					 RDMA_CM_EVENT_UNREACHABLE, -err);
	if (evt)
		cma_event_post(evt);
}

/*
 * Under the id's qp_lock (which every change of the key and of kparam
 * holds): @conn's REQ, its header first, made when it goes out (a retry
 * sends the same one again).
 */
static void cma_p2p_make_req(const struct cma_p2p_conn *conn,
			     struct rdma_ucm_conn_param *req)
{
	struct cma_p2p_hdr hdr = {.kind = CMA_P2P_REQ};

	*req = conn->kparam;
	hdr.port = conn->key.local.port;
	hdr.tag = conn->key.tag;
	hdr.flags = conn->key.explicit_tag ? CMA_P2P_F_EXPLICIT_TAG : 0;
	hdr.number = conn->req_number;
	hdr.data_len = req->private_data_len;
	cma_p2p_put_hdr(req, &hdr);
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
	struct cma_p2p_notice_out notice = {0};
	char kb[CMA_P2P_KEY_STRLEN];
	int ret, err;

	cma_p2p_lock();
	cma_p2p_busy_get(&conn->busy);
	/* Current from now: the peer may ask about it before we return. */
	conn->req_number = cma_p2p_next_req_number();
	cma_p2p_unlock();
	ret = cma_id_kernel(id_priv);
	if (!ret) {
		cma_p2p_make_req(conn, &req);
		ret = ucma_cmd_connect(cma_id_fd(id_priv), id_priv->handle,
				       &req, &conn->ece);
	}
	err = errno;
	cma_p2p_lock();
	if (ret)
		conn->req_number = 0; /* it never went out */
	if (!ret) {
		conn->last_number = conn->req_number;
		cma_p2p_conn_set_state(conn, CMA_P2P_PENDING);
		cma_p2p_bound_start(conn, CMA_P2P_BOUND_ANSWER);
	} else if (err == ECONNREFUSED && cma_id_is_iwarp(id_priv)) {
		/* No listener yet: iWARP's refusal for now, on the spot. */
		cma_p2p_dbg("connect %s: refused (no listener yet), retrying",
			    cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
		cma_p2p_wait_resend(conn, -ECONNREFUSED);
		ret = 0;
	} else {
		cma_p2p_dbg("connect %s: REQ failed: %s",
			    cma_p2p_key_str(&conn->key, kb, sizeof(kb)),
			    strerror(err));
		cma_p2p_notice_ended(conn, &notice);
		cma_p2p_conn_unregister(conn);
		if (deferred) /* rdma_connect has returned: an event tells */
			cma_p2p_deferred_failed(conn, err);
	}
	if (conn->peer_gone)
		cma_p2p_chores_soon(conn);
	cma_p2p_busy_put(&conn->busy);
	cma_p2p_idle();
	cma_p2p_unlock();
	cma_p2p_notice_start(&notice);
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
 * Under p2p_lock: take the key, then, the higher end, claim the oldest
 * held request into @a (1) or wait for one (0, WAIT_PEER); the lower end
 * registers for its REQ (0, PENDING); or fail (-1/errno).
 */
static int cma_p2p_connect_start(struct cma_p2p_conn *conn,
				 const struct rdma_ucm_conn_param *kparam,
				 const struct rdma_ucm_ece *ece,
				 struct cma_p2p_adoption *a)
{
	struct cma_id_private *id_priv = conn->id_priv;
	char kb[CMA_P2P_KEY_STRLEN];

	if (cma_p2p_conn_registered(conn))
		return cma_err(EISCONN);
	/* Left for later needs ROUTE_RESOLVED first, as the kernel's route. */
	if (conn->route != CMA_P2P_ROUTE_KERNEL &&
	    conn->route != CMA_P2P_ROUTE_LATER)
		return cma_err(EINVAL);
	if (cma_p2p_connect_key(id_priv, &conn->key))
		return -1;
	conn->kparam = *kparam;
	conn->ece = *ece;
	conn->gave_up = false;
	conn->peer_gone = false;
	conn->refused_ns = 0;
	conn->refusals = 0;
	conn->req_number = 0;
	conn->notice_serial = 0;
	conn->noticed = false;
	conn->last_number = 0;
	conn->unsent = false;
	conn->bound = CMA_P2P_BOUND_NONE;
	conn->wait_status = -ECONNREFUSED;
	if (cma_p2p_higher_end(conn)) {
		if (cma_p2p_claim_held(conn, a)) {
			cma_p2p_dbg(
				"connect %s: adopting the held request",
				cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
			return 1;
		}
		cma_p2p_dbg("connect %s: higher end, waiting for the peer's "
			    "REQ",
			    cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
		cma_p2p_conn_register(conn, CMA_P2P_WAIT_PEER);
		cma_p2p_bound_start(conn, CMA_P2P_BOUND_ANSWER);
		return 0;
	}
	if (cma_p2p_route_later(conn)) /* only the higher end leaves it */
		return cma_err(EINVAL);
	/* Registered first: its place in the window's queue is by seq. */
	cma_p2p_conn_register(conn, CMA_P2P_RESEND);
	if (!cma_p2p_slot_take(conn)) {
		cma_p2p_dbg("connect %s: lower end, its REQ waits for a place "
			    "in the window",
			    cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
		conn->unsent = true;
		cma_p2p_bound_start(conn, CMA_P2P_BOUND_ANSWER);
		return 0;
	}
	cma_p2p_dbg("connect %s: lower end, sending a REQ",
		    cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
	cma_p2p_conn_set_state(conn, CMA_P2P_PENDING);
	return 0;
}

/* With the id's qp_lock: the connect, once p2p_lock showed what to do. */
static int cma_p2p_connect_locked(struct cma_p2p_conn *conn,
				  const struct rdma_ucm_conn_param *kparam,
				  const struct rdma_ucm_ece *ece)
{
	struct cma_p2p_adoption a; /* filled by a claim, if any */
	bool send;
	int ret;

	a.conn = NULL;
	cma_p2p_lock();
	/* What the last attempt left (a QP to fail, old ids) goes first. */
	cma_p2p_chores_now(conn);
	ret = cma_p2p_connect_start(conn, kparam, ece, &a);
	/*
	 * Read here: once p2p_lock is dropped, the peer's answer may come
	 * (on the service thread) before our REQ is even out.
	 */
	send = !ret && conn->state == CMA_P2P_PENDING;
	cma_p2p_unlock();
	if (ret < 0)
		return -1;
	if (ret > 0) /* a failed adoption leaves the connect waiting */
		cma_p2p_adopt_finish(&a, true);
	if (!send)
		return 0;
	return cma_p2p_send_req(conn, false);
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

/* --- the connecting id's events ------------------------------------------- */

/* Private data of nothing but zeros: none was given (IB pads it). */
static bool cma_p2p_no_data(const struct rdma_ucm_conn_param *kp)
{
	unsigned int i;

	for (i = 0; i < kp->private_data_len && i < sizeof(kp->private_data);
	     i++)
		if (kp->private_data[i])
			return false;
	return true;
}

/*
 * A REJ that refuses our REQ for now, so that it may go out again: IB CM
 * reason 8 (invalid service ID: the peer does not listen yet); reason 28
 * with no private data, which is what the kernel's RDMA CM answers when
 * the service ID has a listener but none for the peer's address (two
 * addresses of one device on one port, the peer's listener not up yet);
 * reason 10 (stale connection: the peer's CM still holds an earlier REQ
 * from our QP: a copy our CM retransmitted, which arrived after the
 * first copy was refused and is held or adopted there; it refuses every
 * REQ from our QP until that copy's kernel id is gone, which our NOTICE
 * brings about, cma_p2p_notice_start); or
 * the peer library's "not now" (it could not hold or adopt it).  The
 * bound ends the resends if it never changes.
 */
static bool cma_p2p_refused_for_now(const struct rdma_ucm_event_resp *resp)
{
	const struct rdma_ucm_conn_param *kp = &resp->param.conn;
	struct cma_p2p_hdr hdr;

	if (resp->status == CMA_IB_REJ_INVALID_SERVICE_ID ||
	    ((resp->status == CMA_IB_REJ_CONSUMER_DEFINED ||
	      resp->status == CMA_IB_REJ_STALE_CONN) &&
	     cma_p2p_no_data(kp)))
		return true;
	if (cma_p2p_hdr_parse(kp->private_data, kp->private_data_len, &hdr) !=
	    CMA_P2P_OK)
		return false;
	/* A stale copy's refusal reaches nobody; if it did, we send again. */
	return hdr.kind == CMA_P2P_REJ_RETRY || hdr.kind == CMA_P2P_REJ_STALE;
}

/*
 * The answer to our REQ, from a QP already at RTS for an earlier REQ of
 * ours (p2p_wire.h, CMA_P2P_F_PSNS): the PSNs our QP must take.
 */
static void cma_p2p_rep_psns(const struct rdma_ucm_event_resp *resp,
			     struct cma_qp_psns *psns)
{
	const struct rdma_ucm_conn_param *kp = &resp->param.conn;
	struct cma_p2p_hdr hdr;

	if (resp->event != RDMA_CM_EVENT_CONNECT_RESPONSE ||
	    cma_p2p_hdr_parse(kp->private_data, kp->private_data_len, &hdr) !=
		    CMA_P2P_OK ||
	    hdr.kind != CMA_P2P_REP || !(hdr.flags & CMA_P2P_F_PSNS))
		return;
	/* What the answering QP receives from is what we send from. */
	psns->dictated = true;
	psns->rq = hdr.sq_psn;
	psns->sq = hdr.rq_psn;
}

/*
 * The NOTICE @serial ended (the service thread, no lock held).  Heard
 * for the first time in this connect: the peer let go of the dead REQs
 * its CM held, and ours goes out again at once.  Otherwise (not heard: a
 * peer without a companion, a reply lost; or heard again: the peer's
 * library had not read the copy yet, and refuses it when it does) after
 * the usual delay, which paces the rounds without deciding anything.
 */
static void cma_p2p_noticed(uint64_t serial, bool heard)
{
	struct cma_p2p_conn *conn;
	bool now;

	cma_p2p_lock();
	conn = cma_p2p_conn_of_notice(serial);
	if (conn) {
		conn->notice_serial = 0;
		now = heard && !conn->noticed;
		conn->noticed = conn->noticed || heard;
		if (conn->state == CMA_P2P_RESEND && !cma_p2p_resolving(conn))
			cma_timer_start(conn->id_priv->id.channel, &conn->timer,
					now ? 0
					    : cma_p2p_resend_delay_ms(conn));
	}
	cma_p2p_unlock();
}

/*
 * Under p2p_lock: fill @n, a NOTICE that every REQ from @conn's QP up to
 * @dead is dead; none (serial 0) without IP addressing or on iWARP (TCP
 * connects have no copies).
 */
static void cma_p2p_notice_fill(const struct cma_p2p_conn *conn, uint32_t dead,
				struct cma_p2p_notice_out *n)
{
	static uint64_t serial;
	sa_family_t family = conn->id_priv->id.route.addr.src_addr.sa_family;

	n->serial = 0;
	if (!dead || (family != AF_INET && family != AF_INET6) ||
	    cma_id_is_iwarp(conn->id_priv))
		return;
	n->serial = ++serial;
	n->family = family;
	n->key = conn->key;
	memset(&n->hdr, 0, sizeof(n->hdr));
	n->hdr.kind = CMA_P2P_NOTICE;
	n->hdr.port = conn->key.local.port;
	n->hdr.qpn = conn->kparam.qp_num;
	n->hdr.incarnation = cma_p2p_incarnation();
	n->hdr.number = dead;
}

/*
 * Under p2p_lock: our REQ @dead was refused as stale (IB CM reason 10
 * without data): the peer's CM holds an earlier REQ from our QP, a late
 * copy held or adopted there.  Before ours goes out again the peer hears
 * that every REQ from our QP up to @dead is dead (p2p_notice.c); until
 * that NOTICE ends, the conn's timer measures only its bound.  Fills @n
 * for cma_p2p_notice_start.
 */
static void cma_p2p_notice_prepare(struct cma_p2p_conn *conn, uint32_t dead,
				   struct cma_p2p_notice_out *n)
{
	cma_p2p_notice_fill(conn, dead, n);
	if (!n->serial)
		return;
	conn->notice_serial = n->serial;
	cma_p2p_bound_resume(conn);
}

void cma_p2p_notice_ended(const struct cma_p2p_conn *conn,
			  struct cma_p2p_notice_out *n)
{
	n->serial = 0;
	if (cma_p2p_conn_registered(conn) && conn->state != CMA_P2P_CONNECTED &&
	    !cma_p2p_higher_end(conn))
		cma_p2p_notice_fill(conn, conn->last_number, n);
}

void cma_p2p_notice_start(const struct cma_p2p_notice_out *n)
{
	char kb[CMA_P2P_KEY_STRLEN];

	if (!n->serial)
		return;
	cma_p2p_dbg("connect %s: telling the peer our REQs up to %u are dead",
		    cma_p2p_key_str(&n->key, kb, sizeof(kb)), n->hdr.number);
	if (cma_p2p_notice_send(n->family, &n->key, &n->hdr, cma_p2p_noticed,
				n->serial))
		cma_p2p_noticed(n->serial, false);
}

enum cma_p2p_verdict
cma_p2p_filter_event(struct cma_event *evt,
		     const struct rdma_ucm_event_resp *resp)
{
	struct cma_id_private *id_priv = evt->id_priv;
	struct cma_p2p_conn *conn = cma_p2p_conn_of(id_priv);
	enum cma_p2p_route_step step = CMA_P2P_STEP_NONE;
	struct cma_p2p_notice_out notice = {0};
	char kb[CMA_P2P_KEY_STRLEN];
	bool drop = false;
	uint32_t handle, dead;

	if (!conn)
		return CMA_P2P_PASS;
	/* The application's thread may be making it (cma_id_kernel). */
	handle = __atomic_load_n(&id_priv->handle, __ATOMIC_ACQUIRE);
	cma_p2p_lock();
	cma_p2p_dbg("event %s status %d on %s, handle %u (id's %u), state %d",
		    rdma_event_str((enum rdma_cm_event_type)resp->event),
		    (int)resp->status,
		    cma_p2p_key_str(&conn->key, kb, sizeof(kb)), resp->id,
		    handle, (int)conn->state);
	if (resp->id != handle) {
		drop = true; /* from the kernel id an adoption replaced */
	} else if (conn->gave_up) {
		drop = true; /* the application has its UNREACHABLE */
	} else if (conn->state == CMA_P2P_ADOPTING) {
		drop = true; /* the kernel id an adoption is replacing */
	} else if (cma_p2p_route_event(conn, resp, &step, &notice)) {
		drop = true; /* resolving for our REQ (p2p_resolve.c) */
	} else if (resp->event == RDMA_CM_EVENT_REJECTED &&
		   conn->state == CMA_P2P_PENDING &&
		   cma_p2p_refused_for_now(resp)) {
		/* Ours goes out again: the higher end never sends its own. */
		dead = conn->req_number;
		cma_p2p_wait_resend(conn, (int)resp->status);
		if (resp->status == CMA_IB_REJ_STALE_CONN &&
		    cma_p2p_no_data(&resp->param.conn))
			cma_p2p_notice_prepare(conn, dead, &notice);
		drop = true;
	} else if (resp->event == RDMA_CM_EVENT_REJECTED ||
		   resp->event == RDMA_CM_EVENT_UNREACHABLE ||
		   resp->event == RDMA_CM_EVENT_CONNECT_ERROR) {
		cma_p2p_notice_ended(conn, &notice);
		cma_p2p_conn_unregister(conn); /* failed: a retry may come */
	}
	cma_p2p_unlock();
	cma_p2p_notice_start(&notice);
	/* The event path holds the id's qp_lock (event.c). */
	cma_p2p_route_next(conn, step);
	if (drop)
		return CMA_P2P_TAKEN;
	/* Set only under the id's qp_lock, which the event path holds. */
	if (conn->adopted)
		return CMA_P2P_ADOPTED;
	cma_p2p_rep_psns(resp, &evt->psns);
	return CMA_P2P_PASS;
}

/* The answer to our REQ: take out a p2p header, note the connection. */
void cma_p2p_conn_resp(struct cma_event *evt, struct cma_id_private *id_priv)
{
	struct rdma_conn_param *p = &evt->event.param.conn;
	struct cma_p2p_conn *conn = cma_p2p_conn_of(id_priv);
	struct cma_p2p_hdr hdr;

	/* An adopted request's data is the request's (cma_p2p_established). */
	if (!conn || !cma_p2p_conn_registered(conn) || conn->adopted)
		return;
	cma_p2p_lock();
	cma_p2p_conn_set_state(conn, CMA_P2P_CONNECTED);
	if (!conn->peer_gone) /* else the timer still has that to do */
		cma_timer_stop(&conn->timer);
	cma_p2p_unlock();
	if (cma_p2p_hdr_parse(evt->private_data, p->private_data_len, &hdr) !=
		    CMA_P2P_OK ||
	    hdr.kind != CMA_P2P_REP)
		return; /* an ordinary listener accepted it */
	/* A peer that only ever answered us is known by its replies. */
	cma_p2p_lock();
	cma_p2p_peer_seen(&conn->key.remote, hdr.incarnation, conn);
	cma_p2p_unlock();
	memmove(evt->private_data, evt->private_data + hdr.len, hdr.data_len);
	p->private_data_len = hdr.data_len;
	p->private_data = hdr.data_len ? evt->private_data : NULL;
	p->peer2peer_mode = 1;
	conn->reply_p2p = true;
}

/*
 * The library turned the answer into CONNECT_ERROR (the QP could not move:
 * typically the peer destroyed its id after answering).  That is the
 * connect's one end, as a REJECTED would be: no time bound may report
 * another, and a retry with the same tag may come.
 */
void cma_p2p_conn_resp_failed(struct cma_id_private *id_priv)
{
	struct cma_p2p_conn *conn = cma_p2p_conn_of(id_priv);
	struct cma_p2p_notice_out notice;

	if (!conn)
		return;
	cma_p2p_lock();
	cma_p2p_notice_ended(conn, &notice);
	cma_p2p_conn_unregister(conn);
	cma_p2p_unlock();
	cma_p2p_notice_start(&notice);
}

void cma_p2p_established(struct cma_event *evt, struct cma_id_private *id_priv)
{
	struct rdma_conn_param *p = &evt->event.param.conn;
	struct cma_p2p_conn *conn;

	/* iWARP's active side has no CONNECT_RESPONSE: this is it. */
	if (cma_id_is_iwarp(id_priv))
		cma_p2p_conn_resp(evt, id_priv);
	conn = cma_p2p_conn_of(id_priv);
	if (!conn)
		return;
	if (conn->adopted) {
		/* No NOTICE or restart undoes it now (p2p_stale.c). */
		cma_p2p_lock();
		conn->established = true;
		cma_p2p_unlock();
		memcpy(evt->private_data, conn->peer_data, conn->peer_len);
		p->private_data_len = conn->peer_len;
		p->private_data = conn->peer_len ? evt->private_data : NULL;
	}
	if (conn->reply_p2p)
		p->peer2peer_mode = 1;
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
 * listener (cma_p2p_wait_resend), goes out again while the bound lasts.
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
				cma_p2p_resend_delay_ms(conn));
		return false;
	}
	cma_p2p_dbg("connect %s: our REQ refused for now, sending it again",
		    cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
	cma_p2p_retire(conn, old);
	conn->kernel_unbound = true;
	conn->route = CMA_P2P_ROUTE_LATER;
	if (!conn->addr_ms)
		conn->addr_ms = CMA_P2P_RESOLVE_MS;
	if (!conn->route_ms)
		conn->route_ms = CMA_P2P_RESOLVE_MS;
	return true;
}

/*
 * The connect waited long enough: for an answer to its REQ (PENDING), for
 * the peer's REQ (the higher end, WAIT_PEER), or for a REQ refused for now
 * to be taken (the lower end, RESEND, refused since refused_ns).  Both
 * locks held; true if our REQ is due again now (refused, on IB or
 * iWARP), sent by the caller without p2p_lock.
 */
static bool cma_p2p_conn_timeout(struct cma_p2p_conn *conn,
				 struct cma_p2p_notice_out *notice)
{
	char kb[CMA_P2P_KEY_STRLEN];
	struct cma_event *evt;
	bool refused = conn->refused_ns != 0, pending;

	/*
	 * Waiting for a place in the window: no bound runs, the place comes
	 * with a timer of 0 (p2p_window.c).
	 */
	if (conn->queued)
		return false;
	if (conn->state == CMA_P2P_RESEND && !cma_p2p_resolving(conn) &&
	    cma_p2p_now_ns() < cma_p2p_bound_due_ns(conn)) {
		if (!cma_p2p_slot_take(conn))
			return false; /* queued */
		/* The first REQ, and iWARP's again, go on the id's kernel id. */
		if (conn->unsent) {
			conn->unsent = false;
			return true;
		}
		return cma_id_is_iwarp(conn->id_priv) ||
		       cma_p2p_send_again(conn);
	}
	if (cma_p2p_bound_goes_on(conn))
		return false;
	cma_p2p_dbg("connect %s: %s",
		    cma_p2p_key_str(&conn->key, kb, sizeof(kb)),
		    conn->state == CMA_P2P_PENDING ? "no answer to our REQ"
		    : refused ? "our REQ still refused, REJECTED"
			      : "the peer's REQ never came, UNREACHABLE");
	pending = conn->state == CMA_P2P_PENDING;
	cma_p2p_notice_ended(conn, notice);
	cma_p2p_conn_unregister(conn);
	if (pending) {
		cma_p2p_give_up(conn, -ETIMEDOUT);
		return false;
	}
	cma_qp_to_err(conn->id_priv); /* ours: the caller has its qp_lock */
	evt = refused ? cma_event_new(conn->id_priv, RDMA_CM_EVENT_REJECTED,
				      conn->wait_status)
		      : cma_event_new(conn->id_priv, RDMA_CM_EVENT_UNREACHABLE,
				      -ETIMEDOUT);
	if (evt)
		cma_event_post(evt);
	return false;
}

static void cma_p2p_peer_gone(struct cma_p2p_conn *conn);

/*
 * Neither the conn nor its id is freed before the timer is synced
 * (cma_p2p_free), so both may be used before p2p_lock is taken.  The id's
 * qp_lock comes first (the lock order): an expiry moves the QP the
 * application may be destroying.  Besides the connect's time bounds, the
 * timer does the conn's chores (armed at 0 for them).
 */
void cma_p2p_conn_timer_expire(struct cma_timer *timer)
{
	struct cma_p2p_conn *conn = cma_p2p_timer_conn(timer);
	struct cma_id_private *id_priv = conn->id_priv;
	struct cma_p2p_notice_out notice = {0};
	struct cma_p2p_chores c;
	bool resend = false, chores;

	pthread_mutex_lock(&id_priv->qp_lock);
	cma_p2p_lock();
	if (conn->peer_gone)
		cma_p2p_peer_gone(conn);
	else if (cma_p2p_conn_registered(conn) &&
		 (conn->state == CMA_P2P_WAIT_PEER ||
		  conn->state == CMA_P2P_PENDING ||
		  conn->state == CMA_P2P_RESEND))
		resend = cma_p2p_conn_timeout(conn, &notice);
	chores = cma_p2p_take_chores(conn, &c);
	cma_p2p_unlock();
	/* After the chores: a given-up REQ's kernel id is gone first. */
	if (chores)
		cma_p2p_do_chores(conn, &c);
	cma_p2p_notice_start(&notice);
	if (resend)
		cma_p2p_send_or_resolve(conn, true);
	pthread_mutex_unlock(&id_priv->qp_lock);
}

/* --- a restarted peer --------------------------------------------------------- */

/*
 * The peer's process that @conn may have been formed with is gone: a
 * formed connection is disconnected (the kernel reports DISCONNECTED once
 * the old peer's CM answered the DREQ or it timed out).  A connect still
 * under way is tied to no process of the peer's: a REQ of ours reaches the
 * new one, or the old one's kernel refused it (reason 28 without data:
 * sent again), or its bound ends it; a connect waiting for the peer's REQ
 * adopts the new one's.  Its timer goes back to its bound or its resend
 * (the mark that brought us here used it).  Under p2p_lock, on a conn
 * nobody is busy with: a QP and old kernel ids are left to its chores
 * (another id's qp_lock is not ours).
 */
static void cma_p2p_peer_gone(struct cma_p2p_conn *conn)
{
	struct cma_id_private *id_priv = conn->id_priv;

	conn->peer_gone = false;
	switch (conn->state) {
	case CMA_P2P_CONNECTED:
		if (cma_p2p_adoption_open(conn)) {
			/*
			 * Its REP goes to a process that is gone: undone as a
			 * NOTICE would (the timer holds the id's qp_lock), the
			 * connect waits for the new process's REQ.
			 */
			cma_p2p_unadopt(conn);
			return;
		}
		ucma_cmd_disconnect(cma_id_fd(id_priv), id_priv->handle);
		cma_p2p_conn_unregister(conn);
		break;
	case CMA_P2P_RESEND:
		/* Resolving for the next REQ: that waits within the bound. */
		if (!cma_p2p_resolving(conn)) {
			cma_timer_start(id_priv->id.channel, &conn->timer,
					cma_p2p_resend_delay_ms(conn));
			return;
		}
		/* fall through */
	case CMA_P2P_PENDING:
	case CMA_P2P_WAIT_PEER:
		cma_p2p_bound_resume(conn);
		return;
	case CMA_P2P_NO_MATCH:
	case CMA_P2P_ADOPTING: /* busy: never called then */
		break;
	}
	if (conn->nretired || conn->qp_err_due)
		cma_p2p_chores_soon(conn);
}

/*
 * Drop what the peer at @remote's previous process left here (but @keep):
 * its held requests and the connections formed with it.  A connect under
 * way, sending or waiting, is tied to no process of the peer's and goes
 * on with the new one.  A conn someone is busy with (an adoption, a REQ
 * going out) is marked: its timer acts once the work is done.
 */
static void cma_p2p_forget_peer(const struct cma_p2p_ident *remote,
				const struct cma_p2p_conn *keep)
{
	struct cma_p2p_conn *conn, *next;

	cma_p2p_held_drop_from(remote);
	for (conn = cma_p2p_conn_next_of(NULL, remote); conn; conn = next) {
		next = cma_p2p_conn_next_of(conn, remote);
		if (conn == keep || ((conn->state == CMA_P2P_WAIT_PEER ||
				      conn->state == CMA_P2P_PENDING ||
				      conn->state == CMA_P2P_RESEND) &&
				     !cma_p2p_busy(&conn->busy)))
			continue;
		if (cma_p2p_busy(&conn->busy)) {
			conn->peer_gone = true;
		} else if (cma_p2p_adoption_open(conn)) {
			/* Undoing it needs the id's qp_lock: the timer's. */
			conn->peer_gone = true;
			cma_p2p_chores_soon(conn);
		} else {
			cma_p2p_peer_gone(conn);
		}
	}
}
void cma_p2p_peer_seen(const struct cma_p2p_ident *remote, uint64_t incarnation,
		       const struct cma_p2p_conn *keep)
{
	struct cma_p2p_peer *c;
	char kb[CMA_P2P_KEY_STRLEN];
	struct cma_p2p_key k = {.remote = *remote};

	if (!incarnation)
		return; /* a version 1 peer: it does not say */
	c = cma_p2p_peer_get(remote, false);
	if (!c || c->incarnation == incarnation)
		return;
	if (c->incarnation) {
		cma_p2p_dbg("%s: new incarnation %016llx (was %016llx), "
			    "the peer restarted",
			    cma_p2p_key_str(&k, kb, sizeof(kb)),
			    (unsigned long long)incarnation,
			    (unsigned long long)c->incarnation);
		cma_p2p_forget_peer(remote, keep);
	}
	c->incarnation = incarnation;
}
