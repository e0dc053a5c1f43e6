// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer-to-peer mode, the listening side (rdma_cm_p2p(7)): a p2p request
 * arriving at a listener is matched against the local connects and
 * adopted, refused, or held out of the application's sight; a listener's
 * timer checks that held requests' peers still wait and surfaces those
 * whose hold time is over as ordinary CONNECT_REQUESTs.  The table it
 * works on is p2p.c's (p2p_table.h).
 */
#include <config.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "cm/cma.h"
#include "p2p_hooks.h"
#include "p2p.h"
#include "p2p_table.h"
#include "p2p_wire.h"
#include "cm/ucma_abi.h"

/* --- deciding -------------------------------------------------------------- */

/*
 * Both ends of a request's kernel id, which no id_priv stands for yet.
 * With IP addressing the answer is a QUERY_ROUTE, kept in @route for the
 * adoption (*@has_route), which needs it too.
 */
static int cma_p2p_query_ends(int fd, uint32_t handle, bool af_ib,
			      uint8_t local[16], uint8_t remote[16],
			      struct rdma_ucm_query_route_resp *route,
			      bool *has_route)
{
	*has_route = false;
	if (af_ib) {
		struct rdma_ucm_query_addr_resp r;

		if (ucma_cmd_query_addr(fd, handle, &r))
			return -1;
		if (cma_p2p_addr16(&r.src_addr, sizeof(r.src_addr), local) ||
		    cma_p2p_addr16(&r.dst_addr, sizeof(r.dst_addr), remote))
			return cma_err(EAFNOSUPPORT);
		return 0;
	}
	if (ucma_cmd_query_route(fd, handle, route))
		return -1;
	if (cma_p2p_addr16(&route->src_addr, sizeof(route->src_addr), local) ||
	    cma_p2p_addr16(&route->dst_addr, sizeof(route->dst_addr), remote))
		return cma_err(EAFNOSUPPORT);
	*has_route = true;
	return 0;
}

/* A request kept out of sight; NULL without memory. */
static struct cma_p2p_held *
cma_p2p_held_new(struct cma_p2p_listener *lis, uint32_t handle,
		 const struct cma_p2p_key *key, const struct cma_p2p_hdr *hdr,
		 const struct rdma_ucm_event_resp *resp,
		 const struct rdma_ucm_query_route_resp *route)
{
	struct cma_p2p_held *h = cma_zalloc(sizeof(*h));

	if (!h)
		return NULL;
	h->lis = lis;
	h->handle = handle;
	h->key = *key;
	h->hdr = *hdr;
	h->resp = *resp;
	h->has_route = route;
	if (route)
		h->route = *route;
	return h;
}

static int cma_p2p_hold(struct cma_p2p_listener *lis, uint32_t handle,
			const struct cma_p2p_key *key,
			const struct cma_p2p_hdr *hdr,
			const struct rdma_ucm_event_resp *resp,
			const struct rdma_ucm_query_route_resp *route)
{
	struct cma_p2p_held *h =
		cma_p2p_held_new(lis, handle, key, hdr, resp, route);

	if (!h)
		return cma_err(ENOMEM);
	if (cma_p2p_listener_mode(lis) == CMA_P2P_HOLD_TIMED)
		h->deadline_ns = cma_p2p_now_ns() +
				 (uint64_t)cma_p2p_hold_ms() * 1000000ull;
	cma_p2p_held_link(h);
	cma_p2p_arm(lis);
	return 0;
}

/* Under p2p_lock: an adoption is claimed into @a, finished after it. */
static void cma_p2p_settle(struct cma_p2p_listener *lis, uint32_t handle,
			   const struct cma_p2p_key *key,
			   const struct cma_p2p_hdr *hdr,
			   const struct rdma_ucm_event_resp *resp,
			   const struct rdma_ucm_query_route_resp *route,
			   struct cma_p2p_adoption *a)
{
	int lfd = cma_id_fd(lis->id_priv);
	struct cma_p2p_conn *conn = cma_p2p_conn_find(key);
	enum cma_p2p_state state = conn ? conn->state : CMA_P2P_NO_MATCH;
	enum cma_p2p_action act = cma_p2p_decide(key, state);
	static const char *const acts[] = {"hold", "adopt", "refuse (not now)",
					   "refuse (duplicate)"};
	char kb[CMA_P2P_KEY_STRLEN];

	cma_p2p_dbg("request %s, handle %u, local state %d: %s",
		    cma_p2p_key_str(key, kb, sizeof(kb)), handle, (int)state,
		    acts[act]);
	switch (act) {
	case CMA_P2P_HOLD:
		if (cma_p2p_hold(lis, handle, key, hdr, resp, route))
			cma_p2p_refuse(lfd, handle, CMA_P2P_REJ_RETRY, key);
		break;
	case CMA_P2P_ADOPT:
		cma_p2p_adopt_claim(a, conn, lis, handle, resp, hdr, route);
		break;
	case CMA_P2P_REJECT_RETRY:
		cma_p2p_refuse(lfd, handle, CMA_P2P_REJ_RETRY, key);
		break;
	case CMA_P2P_REJECT_DUP:
		cma_p2p_refuse(lfd, handle, CMA_P2P_REJ_DUP, key);
		break;
	}
}

/*
 * Under p2p_lock: the first request @lis holds or adopts that a NOTICE
 * can name (numbered, from a QP: IB and RoCE) names the address its
 * peers' REQs come to; a companion listener there hears their NOTICEs
 * (p2p_notice.c).  True if the caller makes it, once p2p_lock is
 * dropped.  Not on iWARP (TCP connects have no copies and no QP number)
 * nor without IP addressing (no route to send a NOTICE through).
 */
static bool cma_p2p_wants_companion(struct cma_p2p_listener *lis,
				    const struct cma_p2p_hdr *hdr, uint32_t qpn,
				    bool has_route)
{
	if (lis->companion || !has_route || !qpn || !hdr->number ||
	    !hdr->incarnation || cma_id_is_iwarp(lis->id_priv))
		return false;
	lis->companion = true;
	return true;
}

enum cma_p2p_verdict cma_p2p_conn_req(struct cma_id_private *listen_priv,
				      const struct rdma_ucm_event_resp *resp)
{
	const struct rdma_ucm_conn_param *kp = &resp->param.conn;
	int lfd = cma_id_fd(listen_priv);
	struct cma_p2p_listener *lis;
	struct cma_p2p_key key;
	struct cma_p2p_hdr hdr;
	struct rdma_ucm_query_route_resp route;
	bool has_route, companion = false;
	sa_family_t family = AF_UNSPEC;
	enum cma_p2p_verdict v = CMA_P2P_TAKEN;
	struct cma_p2p_adoption a; /* filled by a claim, if any */

	if (listen_priv->id.qp_type == IBV_QPT_UD)
		return CMA_P2P_PASS;
	a.conn = NULL;
	switch (cma_p2p_hdr_parse(kp->private_data, kp->private_data_len,
				  &hdr)) {
	case CMA_P2P_NONE:
		return CMA_P2P_PASS;
	case CMA_P2P_BAD:
		cma_p2p_dbg("request handle %u: malformed header, refused",
			    resp->id);
		cma_p2p_refuse(lfd, resp->id, CMA_P2P_REJ_BAD, NULL);
		return CMA_P2P_TAKEN;
	case CMA_P2P_OK:
		break;
	}
	if (hdr.kind != CMA_P2P_REQ) {
		cma_p2p_dbg("request handle %u: header kind %u, refused",
			    resp->id, hdr.kind);
		cma_p2p_refuse(lfd, resp->id, CMA_P2P_REJ_BAD, NULL);
		return CMA_P2P_TAKEN;
	}
	memset(&key, 0, sizeof(key));
	key.remote.port = hdr.port;
	key.explicit_tag = hdr.flags & CMA_P2P_F_EXPLICIT_TAG;
	/* Without one, any tag pairs (earlier builds sent ordinals). */
	key.tag = key.explicit_tag ? hdr.tag : 0;
	if (cma_p2p_query_ends(lfd, resp->id, cma_is_af_ib(listen_priv),
			       key.local.addr, key.remote.addr, &route,
			       &has_route)) {
		cma_p2p_dbg("request handle %u: ends unknown (%m), refused",
			    resp->id);
		cma_p2p_refuse(lfd, resp->id, CMA_P2P_REJ_BAD, NULL);
		return CMA_P2P_TAKEN;
	}

	cma_p2p_lock();
	lis = cma_p2p_find_listener(listen_priv);
	if (!lis && cma_p2p_listening(listen_priv)) {
		/*
		 * rdma_destroy_id detached the listener after this request was
		 * read: refuse it as a listener that is not there yet (the
		 * peer waits for our connect), never surface it.
		 */
		cma_p2p_refuse(lfd, resp->id, CMA_P2P_REJ_RETRY, NULL);
	} else if (!lis || cma_p2p_listener_mode(lis) == CMA_P2P_HOLD_NEVER ||
		   (cma_p2p_listener_mode(lis) == CMA_P2P_HOLD_TIMED &&
		    !cma_p2p_hold_ms())) {
		v = CMA_P2P_SURFACE;
	} else {
		key.local.port = lis->port;
		cma_p2p_peer_seen(&key.remote, hdr.incarnation, NULL);
		if (cma_p2p_req_dead(&key.remote, &hdr, kp->qp_num)) {
			/* A copy the NOTICE that named it overtook. */
			cma_p2p_dbg("request handle %u: REQ %u of QP %u is "
				    "dead, refused",
				    resp->id, hdr.number, kp->qp_num);
			cma_p2p_refuse(lfd, resp->id, CMA_P2P_REJ_STALE, &key);
		} else {
			cma_p2p_settle(lis, resp->id, &key, &hdr, resp,
				       has_route ? &route : NULL, &a);
			companion = cma_p2p_wants_companion(
				lis, &hdr, kp->qp_num, has_route);
			family =
				((struct sockaddr *)&route.src_addr)->sa_family;
		}
	}
	cma_p2p_unlock();
	if (companion) /* the request's own kernel id has no claim on it */
		cma_p2p_companion_ensure(family, key.local.addr,
					 key.local.port);
	/*
	 * With the listener's qp_lock (event.c); the connecting id's is
	 * taken next, which the lock order allows.
	 */
	if (a.conn)
		cma_p2p_adopt_finish(&a, false);
	return v;
}

/* --- surfacing ------------------------------------------------------------- */

/*
 * A p2p request reaches the application as an ordinary CONNECT_REQUEST:
 * the header is taken out of the private data and peer2peer_mode is set.
 * The new id remembers the header so that rdma_accept can answer in kind.
 */
void cma_p2p_surfaced(struct cma_event *evt)
{
	struct rdma_conn_param *p = &evt->event.param.conn;
	struct cma_id_private *id_priv = cma_id_priv(evt->event.id);
	struct cma_p2p_conn *conn;
	struct cma_p2p_hdr hdr;

	if (cma_p2p_hdr_parse(evt->private_data, p->private_data_len, &hdr) !=
	    CMA_P2P_OK)
		return;
	memmove(evt->private_data, evt->private_data + hdr.len, hdr.data_len);
	p->private_data_len = hdr.data_len;
	p->private_data = hdr.data_len ? evt->private_data : NULL;
	p->peer2peer_mode = 1;
	conn = cma_p2p_conn_get(id_priv);
	if (!conn)
		return;
	conn->from_request = true;
	conn->req_hdr = hdr;
}

/* Give a held request to the application: its hold time is over. */
static void cma_p2p_surface_held(struct cma_p2p_held *h)
{
	struct cma_id_private *listen_priv = h->lis->id_priv;
	struct cma_event *evt;

	evt = cma_event_new(listen_priv, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (!evt) {
		cma_p2p_held_drop(h);
		return;
	}
	evt->event.listen_id = &listen_priv->id;
	if (cma_process_conn_req(evt, listen_priv, h->handle, &h->resp)) {
		free(evt);
		cma_p2p_held_drop(h);
		return;
	}
	cma_p2p_surfaced(evt);
	cma_event_post(evt);
	free(h);
}

/* --- the listener's timer -------------------------------------------------- */

/*
 * Is the peer still waiting?  The kernel reports nothing on a request the
 * application has not accepted, but once the peer rejected it (it gave up
 * or destroyed its id) the CM has left the request state, and the QP
 * attributes for RTR are no longer available.
 */
static bool cma_p2p_held_alive(const struct cma_p2p_held *h)
{
	struct ib_uverbs_qp_attr attr;

	return !ucma_cmd_init_qp_attr(cma_id_fd(h->lis->id_priv), h->handle,
				      IBV_QPS_RTR, &attr) ||
	       errno != EINVAL;
}

void cma_p2p_timer_expire(struct cma_timer *timer)
{
	struct cma_p2p_held *h, *next;
	struct cma_list due = {0};
	struct cma_p2p_listener *lis;
	uint64_t now = cma_p2p_now_ns();
	char kb[CMA_P2P_KEY_STRLEN];

	cma_p2p_lock();
	lis = cma_p2p_listener_of(timer);
	if (!lis) {
		cma_p2p_unlock();
		return;
	}
	cma_p2p_dbg("listener port %u: hold timer", lis->port);
	for (h = cma_p2p_held_first(lis); h; h = next) {
		next = cma_list_next(h, lnode);
		if (!cma_p2p_held_alive(h)) {
			cma_p2p_dbg("held request %s, handle %u: peer gone, "
				    "dropped",
				    cma_p2p_key_str(&h->key, kb, sizeof(kb)),
				    h->handle);
			cma_p2p_held_unlink(h);
			cma_p2p_held_drop(h);
		} else if (h->deadline_ns && h->deadline_ns <= now) {
			cma_p2p_held_unlink(h);
			cma_list_append(&due, &h->lnode);
		}
	}
	cma_p2p_arm(lis);
	/* Oldest first, as they were held. */
	for (h = cma_list_first(&due, struct cma_p2p_held, lnode); h;
	     h = next) {
		next = cma_list_next(h, lnode);
		cma_p2p_surface_held(h);
	}
	cma_p2p_unlock();
}
