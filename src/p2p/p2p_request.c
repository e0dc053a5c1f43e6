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

/* A request kept out of sight, held or asked about; NULL without memory. */
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

/* --- asking the sender (p2p_verify.c) ------------------------------------ */

/* Requests whose senders are being asked about them, oldest first. */
static struct cma_list p2p_asking;
static uint64_t p2p_asking_serial;

/*
 * Must this REQ's sender say it is current before we hold or adopt it?
 * Every numbered REQ from a QP on IB and RoCE with IP addressing: iWARP
 * connects are TCP connects (no copies, no QP number), version 1 headers
 * have no number, and AF_IB has no route reply to ask through
 * (rdma_cm_p2p(7), LATE COPIES).
 */
static bool cma_p2p_must_ask(const struct cma_id_private *listen_priv,
			     const struct cma_p2p_hdr *hdr, uint32_t qpn,
			     bool has_route)
{
	return hdr->number && hdr->incarnation && qpn && has_route &&
	       !cma_id_is_iwarp(listen_priv);
}

/*
 * Under p2p_lock: keep the request while its sender is asked about it;
 * NULL (to be refused for now) past the limits of held requests, which
 * bound what a peer can make us ask too, or without memory.
 */
static struct cma_p2p_held *
cma_p2p_asking_new(struct cma_p2p_listener *lis, uint32_t handle,
		   const struct cma_p2p_key *key, const struct cma_p2p_hdr *hdr,
		   const struct rdma_ucm_event_resp *resp,
		   const struct rdma_ucm_query_route_resp *route)
{
	unsigned int max = cma_p2p_max_held();
	struct cma_p2p_held *h;

	if (lis->asking >= max || p2p_asking.len >= 4 * (size_t)max)
		return NULL;
	h = cma_p2p_held_new(lis, handle, key, hdr, resp, route);
	if (!h)
		return NULL;
	h->serial = ++p2p_asking_serial;
	cma_list_append(&p2p_asking, &h->lnode);
	lis->asking++;
	return h;
}

static struct cma_p2p_held *cma_p2p_asking_find(uint64_t serial)
{
	struct cma_p2p_held *h;

	for (h = cma_list_first(&p2p_asking, struct cma_p2p_held, lnode); h;
	     h = cma_list_next(h, lnode))
		if (h->serial == serial)
			return h;
	return NULL;
}

/*
 * Under p2p_lock: @h is no longer asked about; an answer still to come
 * is ignored (one being delivered finds @h gone).
 */
static void cma_p2p_asking_unlink(struct cma_p2p_held *h)
{
	cma_list_unlink(&p2p_asking, &h->lnode);
	h->lis->asking--;
	cma_p2p_query_cancel(h->serial);
}

void cma_p2p_asking_drop(struct cma_p2p_listener *lis)
{
	struct cma_p2p_held *h, *next;

	for (h = cma_list_first(&p2p_asking, struct cma_p2p_held, lnode); h;
	     h = next) {
		next = cma_list_next(h, lnode);
		if (h->lis != lis)
			continue;
		cma_p2p_asking_unlink(h);
		cma_p2p_held_drop(h);
	}
}

/*
 * The sender answered (p2p_verify.c, the service thread, no lock held):
 * a current REQ is held or adopted as if it had just come; a late copy
 * is refused for good, an unanswered question for now (a live sender
 * sends again, and is asked again).
 */
static void cma_p2p_answered(uint64_t serial, enum cma_p2p_liveness verdict)
{
	static const char *const says[] = {"no answer", "current", "stale"};
	struct cma_p2p_adoption a; /* filled by a claim, if any */
	char kb[CMA_P2P_KEY_STRLEN];
	struct cma_p2p_held *h;
	int lfd;

	a.conn = NULL;
	cma_p2p_lock();
	h = cma_p2p_asking_find(serial);
	if (h) {
		cma_p2p_asking_unlink(h);
		lfd = cma_id_fd(h->lis->id_priv);
		cma_p2p_dbg("request %s, handle %u, REQ %u: %s",
			    cma_p2p_key_str(&h->key, kb, sizeof(kb)), h->handle,
			    h->hdr.number, says[verdict]);
		if (verdict == CMA_P2P_LIVE)
			cma_p2p_settle(h->lis, h->handle, &h->key, &h->hdr,
				       &h->resp, &h->route, &a);
		else
			cma_p2p_refuse(lfd, h->handle,
				       verdict == CMA_P2P_STALE
					       ? CMA_P2P_REJ_STALE
					       : CMA_P2P_REJ_RETRY,
				       &h->key);
		free(h);
	}
	cma_p2p_unlock();
	if (a.conn)
		cma_p2p_adopt_finish(&a, false);
}

/* An IPv4 or IPv6 address's port (host order @port). */
static void cma_p2p_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

/*
 * Without p2p_lock: ask the sender of the request @serial names, which
 * came from QP @qpn with @hdr and has @route's ends, at its listener's
 * port.  The request may be dropped meanwhile: only @serial finds it.
 */
static void cma_p2p_ask(uint64_t serial,
			const struct rdma_ucm_query_route_resp *route,
			const struct cma_p2p_hdr *hdr, uint32_t qpn)
{
	struct sockaddr_storage src, dst;
	struct cma_p2p_held *h;

	memset(&src, 0, sizeof(src));
	memset(&dst, 0, sizeof(dst));
	memcpy(&src, &route->src_addr, sizeof(route->src_addr));
	memcpy(&dst, &route->dst_addr, sizeof(route->dst_addr));
	cma_p2p_set_port(&src, 0);
	cma_p2p_set_port(&dst, hdr->port);
	if (!cma_p2p_query_start((struct sockaddr *)&src,
				 (struct sockaddr *)&dst, hdr, qpn,
				 cma_p2p_answered, serial))
		return;
	cma_p2p_lock();
	h = cma_p2p_asking_find(serial);
	if (h) {
		cma_p2p_asking_unlink(h);
		cma_p2p_held_drop(h); /* refused for now: it comes again */
	}
	cma_p2p_unlock();
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
	bool has_route;
	struct cma_p2p_held *ask = NULL;
	uint64_t serial = 0;
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
		if (!cma_p2p_must_ask(listen_priv, &hdr, kp->qp_num, has_route))
			cma_p2p_settle(lis, resp->id, &key, &hdr, resp,
				       has_route ? &route : NULL, &a);
		else if (!(ask = cma_p2p_asking_new(lis, resp->id, &key, &hdr,
						    resp, &route)))
			cma_p2p_refuse(lfd, resp->id, CMA_P2P_REJ_RETRY, &key);
		else
			serial = ask->serial;
	}
	cma_p2p_unlock();
	if (ask) /* from here on only @serial may name it */
		cma_p2p_ask(serial, &route, &hdr, kp->qp_num);
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
