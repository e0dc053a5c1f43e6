// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer-to-peer mode: late copies of a REQ and the NOTICE that clears them
 * (rdma_cm_p2p(7), LATE COPIES).
 *
 * The IB CM sends a REQ again when no answer came within its response
 * timeout.  A copy of a REQ whose first copy was refused before a library
 * saw it (nobody listened yet: reason 8; the kernel's reason 28; reason
 * 10) can reach the higher end after the lower end sent its QP's next
 * REQ.  The higher end holds or adopts it as any REQ: nothing in it tells
 * it apart, and asking about every REQ cost a round trip on every
 * connect.  Its kernel id then holds the lower end's QP number, and the
 * higher end's CM refuses every later REQ from that QP with reason 10
 * (stale connection) until that id is gone.  Only the lower end sees that
 * refusal, and it is exact: so the lower end, before its REQ goes out
 * again, tells the higher end "every REQ from QP q of incarnation i
 * numbered up to n is dead" (a NOTICE), over SIDR, the CM's
 * request/reply service on the datagram port space, at a companion
 * listener on the address and port its REQs went to.  The higher end
 * refuses such held requests, un-adopts such an adoption that is not
 * established (p2p_stale.c; the QP stays bound, so no posted receive is
 * lost), and answers; the lower end's next REQ then passes.
 *
 * No clock decides: the REQ goes out again when the answer says the way
 * is clear.  A NOTICE nobody hears (a peer without a companion) lets it
 * go out after the usual delay; the connect's bound ends the wait.
 *
 * Both roles run on one event channel of the library's own, read by the
 * service thread (timer.c, cma_service_add_handler) as an application
 * reads its channel: non-blocking rdma_get_cm_event, then the calls the
 * event asks for.  Its ids are ordinary datagram ids: p2p never looks at
 * them.  verify_lock covers the lists and the channel pointer only; no
 * library call and no p2p_lock is ever taken under it.  A NOTICE's events
 * are read by one thread at a time (the channel's reader), so its steps
 * need no lock; its callback is read under verify_lock.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm/cma.h"
#include "util/fd_high.h"
#include "p2p_table.h"
#include "p2p_wire.h"

#define CMA_P2P_COMPANION_BACKLOG 1024
/* How long resolving the lower end's address and route may take. */
#define CMA_P2P_VERIFY_RESOLVE_MS 2000

/*
 * A datagram listener hearing NOTICEs for a p2p listener's port, on the
 * address the peers' REQs come to.
 */
struct cma_p2p_companion {
	struct cma_p2p_companion *next;
	sa_family_t family;
	uint8_t addr[16];
	uint16_t port;
	struct rdma_cm_id *id;
};

enum cma_p2p_notice_step {
	CMA_P2P_N_ADDR, /* resolving the higher end's address */
	CMA_P2P_N_ROUTE, /* resolving the route to it */
	CMA_P2P_N_SENT, /* the SIDR REQ is out */
};

struct cma_p2p_notice {
	struct cma_p2p_notice *next;
	struct rdma_cm_id *id;
	enum cma_p2p_notice_step step;
	struct cma_p2p_hdr hdr; /* the NOTICE */
	cma_p2p_notice_fn done;
	uint64_t serial; /* what the sender names it by */
	/*
	 * cma_p2p_notice_send is still inside rdma_resolve_addr: a NOTICE
	 * over before it returns (its events read on the service thread) is
	 * ended by it, not under its feet.  Under verify_lock.
	 */
	bool starting, over;
	bool heard;
};

/* An id whose destroy the kernel refused: tried again on the next read. */
struct cma_p2p_orphan {
	struct cma_p2p_orphan *next;
	struct rdma_cm_id *id;
};

static pthread_mutex_t verify_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t make_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rdma_event_channel *verify_ch;
static struct cma_p2p_companion *companions;
static struct cma_p2p_notice *notices;
static struct cma_p2p_orphan *orphans;

/*
 * Destroy one of our ids; if the kernel refuses, keep it to try again
 * (cma_p2p_orphans_retry): nothing of ours is dropped on the floor.
 */
static void cma_p2p_id_destroy(struct rdma_cm_id *id)
{
	struct cma_p2p_orphan *o;

	if (!rdma_destroy_id(id))
		return;
	o = malloc(sizeof(*o));
	if (!o)
		return;
	o->id = id;
	pthread_mutex_lock(&verify_lock);
	o->next = orphans;
	orphans = o;
	pthread_mutex_unlock(&verify_lock);
}

static void cma_p2p_orphans_retry(void)
{
	struct cma_p2p_orphan *o, *next;

	pthread_mutex_lock(&verify_lock);
	o = orphans;
	orphans = NULL;
	pthread_mutex_unlock(&verify_lock);
	for (; o; o = next) {
		next = o->next;
		cma_p2p_id_destroy(o->id);
		free(o);
	}
}

/* --- the channel -------------------------------------------------------- */

static bool cma_p2p_verify_serve(struct rdma_event_channel *channel);

/*
 * A forked child is another process: the channel, its ids and the
 * NOTICEs are its parent's (the kernel's file is shared), so it forgets
 * them without a command, and makes its own when it needs them; the
 * parent's go on answering for the parent.
 */
static void cma_p2p_verify_atfork_child(void)
{
	struct cma_p2p_companion *c;

	pthread_mutex_init(&verify_lock, NULL);
	pthread_mutex_init(&make_lock, NULL);
	while ((c = companions)) {
		companions = c->next;
		free(c);
	}
	/* The parent's NOTICEs: its connects, not ours, wait on them. */
	notices = NULL;
	verify_ch = NULL; /* its memory and descriptors stay, unused */
}

static void cma_p2p_verify_once(void)
{
	pthread_atfork(NULL, NULL, cma_p2p_verify_atfork_child);
}

static struct rdma_event_channel *cma_p2p_verify_channel_make(void)
{
	struct rdma_event_channel *ch;
	int flags;

	ch = rdma_create_event_channel();
	if (!ch)
		return NULL;
	/* Ours, not the application's: out of its way, as the others. */
	ch->fd = cma_fd_move_high(ch->fd, fcntl, close);
	flags = fcntl(ch->fd, F_GETFL);
	if (flags < 0 || fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) ||
	    cma_service_add_handler(ch, ch->fd, cma_p2p_verify_serve)) {
		rdma_destroy_event_channel(ch);
		return NULL;
	}
	pthread_mutex_lock(&verify_lock);
	verify_ch = ch;
	pthread_mutex_unlock(&verify_lock);
	return ch;
}

/*
 * The library's own channel, made and handed to the service thread once
 * (under make_lock, inside which only verify_lock is taken).
 */
static struct rdma_event_channel *cma_p2p_verify_channel(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct rdma_event_channel *ch;

	pthread_once(&once, cma_p2p_verify_once);
	pthread_mutex_lock(&make_lock);
	pthread_mutex_lock(&verify_lock);
	ch = verify_ch;
	pthread_mutex_unlock(&verify_lock);
	if (!ch)
		ch = cma_p2p_verify_channel_make();
	pthread_mutex_unlock(&make_lock);
	return ch;
}

/* --- the higher end: hearing ------------------------------------------- */

static void cma_p2p_sockaddr(sa_family_t family, const uint8_t addr[16],
			     uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, addr + 12, 4);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, addr, 16);
	}
}

static struct cma_p2p_companion *cma_p2p_companion_find(sa_family_t family,
							const uint8_t addr[16],
							uint16_t port)
{
	struct cma_p2p_companion *c;

	for (c = companions; c; c = c->next)
		if (c->port == port && c->family == family &&
		    !memcmp(c->addr, addr, 16))
			return c;
	return NULL;
}

int cma_p2p_companion_ensure(sa_family_t family, const uint8_t addr[16],
			     uint16_t port)
{
	struct rdma_event_channel *ch;
	struct cma_p2p_companion *c;
	struct sockaddr_storage ss;
	struct rdma_cm_id *id;
	bool have;
	int err;

	if (family != AF_INET && family != AF_INET6)
		return 0; /* AF_IB: no NOTICE (rdma_cm_p2p(7), LATE COPIES) */
	pthread_mutex_lock(&verify_lock);
	have = cma_p2p_companion_find(family, addr, port);
	pthread_mutex_unlock(&verify_lock);
	if (have)
		return 0;
	ch = cma_p2p_verify_channel();
	c = calloc(1, sizeof(*c));
	if (!ch || !c || rdma_create_id(ch, &id, NULL, RDMA_PS_UDP))
		goto fail;
	cma_p2p_sockaddr(family, addr, port, &ss);
	/*
	 * Many peers may send at once in a mesh, and a NOTICE the kernel
	 * finds no room for in the backlog is dropped unheard: the most the
	 * kernel allows (net.rdma_ucm.max_backlog, 1024 by default).
	 */
	if (rdma_bind_addr(id, (struct sockaddr *)&ss) ||
	    rdma_listen(id, CMA_P2P_COMPANION_BACKLOG)) {
		err = errno;
		cma_p2p_id_destroy(id);
		errno = err;
		goto fail;
	}
	c->family = family;
	memcpy(c->addr, addr, 16);
	c->port = port;
	c->id = id;
	pthread_mutex_lock(&verify_lock);
	have = cma_p2p_companion_find(family, addr, port);
	if (!have) {
		c->next = companions;
		companions = c;
	}
	pthread_mutex_unlock(&verify_lock);
	if (have) { /* another connect made it meanwhile */
		cma_p2p_id_destroy(id);
		free(c);
	}
	return 0;
fail:
	err = errno ? errno : ENOMEM;
	free(c);
	cma_p2p_dbg("port %u: no companion listener (%s)", port, strerror(err));
	return cma_err(err);
}

void cma_p2p_companions_drop(uint16_t port)
{
	struct cma_p2p_companion **pp, *c, *gone = NULL;

	pthread_mutex_lock(&verify_lock);
	for (pp = &companions; (c = *pp);) {
		if (c->port != port) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		c->next = gone;
		gone = c;
	}
	pthread_mutex_unlock(&verify_lock);
	while ((c = gone)) {
		gone = c->next;
		cma_p2p_id_destroy(c->id);
		free(c);
	}
}

/* The address a NOTICE came from, as a 16-byte identity address. */
static int cma_p2p_notice_sender(struct rdma_cm_id *req, uint8_t addr[16])
{
	return cma_p2p_addr16(rdma_get_peer_addr(req),
			      sizeof(struct sockaddr_storage), addr);
}

/* A NOTICE came: act on it, answer that it was, then let it go. */
static void cma_p2p_notice_heard(struct rdma_cm_event *ev)
{
	const struct rdma_ud_param *ud = &ev->param.ud;
	struct rdma_cm_id *req = ev->id;
	struct cma_p2p_hdr n, a = {.kind = CMA_P2P_ANSWER};
	struct cma_p2p_ident from = {0};
	uint8_t buf[CMA_P2P_HDR_MAX];
	size_t len;

	if (cma_p2p_hdr_parse(ud->private_data, ud->private_data_len, &n) !=
		    CMA_P2P_OK ||
	    n.kind != CMA_P2P_NOTICE || !n.port ||
	    cma_p2p_notice_sender(req, from.addr)) {
		rdma_ack_cm_event(ev);
		rdma_reject(req, NULL, 0);
		cma_p2p_id_destroy(req);
		return;
	}
	rdma_ack_cm_event(ev);
	from.port = n.port;
	cma_p2p_dead_reqs(&from, n.incarnation, n.qpn, n.number);
	a.qpn = n.qpn;
	a.incarnation = n.incarnation;
	a.number = n.number;
	len = cma_p2p_hdr_encode(&a, buf);
	rdma_reject(req, buf, (uint8_t)len);
	cma_p2p_id_destroy(req);
}

/* --- the lower end: telling --------------------------------------------- */

/* Unlink @n (verify_lock held). */
static void cma_p2p_notice_unlink(struct cma_p2p_notice *n)
{
	struct cma_p2p_notice **pp;

	for (pp = &notices; *pp; pp = &(*pp)->next)
		if (*pp == n) {
			*pp = n->next;
			break;
		}
}

/* Over: @n's id goes, then its sender hears whether it was heard. */
static void cma_p2p_notice_end(struct cma_p2p_notice *n, bool heard)
{
	pthread_mutex_lock(&verify_lock);
	cma_p2p_notice_unlink(n);
	pthread_mutex_unlock(&verify_lock);
	cma_p2p_id_destroy(n->id);
	n->done(n->serial, heard);
	free(n);
}

int cma_p2p_notice_send(sa_family_t family, const struct cma_p2p_key *key,
			const struct cma_p2p_hdr *notice,
			cma_p2p_notice_fn done, uint64_t serial)
{
	struct rdma_event_channel *ch = cma_p2p_verify_channel();
	struct cma_p2p_notice *n = calloc(1, sizeof(*n));
	struct sockaddr_storage src, dst;
	bool over;
	int err;

	if (!ch || !n || rdma_create_id(ch, &n->id, n, RDMA_PS_UDP)) {
		err = errno ? errno : ENOMEM;
		free(n);
		return cma_err(err);
	}
	n->hdr = *notice;
	n->hdr.kind = CMA_P2P_NOTICE;
	n->done = done;
	n->serial = serial;
	n->step = CMA_P2P_N_ADDR;
	n->starting = true;
	pthread_mutex_lock(&verify_lock);
	n->next = notices;
	notices = n;
	pthread_mutex_unlock(&verify_lock);
	/* From where our REQs came, to where they went. */
	cma_p2p_sockaddr(family, key->local.addr, 0, &src);
	cma_p2p_sockaddr(family, key->remote.addr, key->remote.port, &dst);
	/* Its events may be read at once, on the service thread. */
	if (rdma_resolve_addr(n->id, (struct sockaddr *)&src,
			      (struct sockaddr *)&dst,
			      CMA_P2P_VERIFY_RESOLVE_MS)) {
		err = errno;
		pthread_mutex_lock(&verify_lock);
		cma_p2p_notice_unlink(n);
		pthread_mutex_unlock(&verify_lock);
		cma_p2p_id_destroy(n->id);
		free(n);
		return cma_err(err);
	}
	pthread_mutex_lock(&verify_lock);
	n->starting = false;
	over = n->over;
	pthread_mutex_unlock(&verify_lock);
	if (over) /* ended before we got here: ours to end */
		cma_p2p_notice_end(n, n->heard);
	return 0;
}

/*
 * The next step of @n after @ev, or whether it was heard (then true: it
 * is over).  Only the channel's reader runs it: no lock.
 */
static bool cma_p2p_notice_step(struct cma_p2p_notice *n,
				const struct rdma_cm_event *ev, bool *heard)
{
	const struct rdma_ud_param *ud = &ev->param.ud;
	struct rdma_conn_param cp = {0};
	uint8_t buf[CMA_P2P_HDR_MAX];
	struct cma_p2p_hdr a;

	*heard = false;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		n->step = CMA_P2P_N_ROUTE;
		return !!rdma_resolve_route(n->id, CMA_P2P_VERIFY_RESOLVE_MS);
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		n->step = CMA_P2P_N_SENT;
		cp.private_data = buf;
		cp.private_data_len = (uint8_t)cma_p2p_hdr_encode(&n->hdr, buf);
		return !!rdma_connect(n->id, &cp);
	case RDMA_CM_EVENT_UNREACHABLE:
		/* The answer travels in a SIDR reply that refuses. */
		*heard = n->step == CMA_P2P_N_SENT &&
			 cma_p2p_hdr_parse(ud->private_data,
					   ud->private_data_len,
					   &a) == CMA_P2P_OK &&
			 a.kind == CMA_P2P_ANSWER && a.qpn == n->hdr.qpn &&
			 a.incarnation == n->hdr.incarnation &&
			 a.number == n->hdr.number;
		return true;
	default: /* errors, a reply that accepts: not heard */
		return true;
	}
}

static void cma_p2p_notice_event(struct rdma_cm_event *ev)
{
	struct cma_p2p_notice *n = ev->id->context;
	bool over, starting, heard;

	/* What cma_p2p_notice_send wrote before linking @n is seen here. */
	pthread_mutex_lock(&verify_lock);
	pthread_mutex_unlock(&verify_lock);
	over = cma_p2p_notice_step(n, ev, &heard);
	if (over && !heard)
		cma_p2p_dbg("NOTICE of REQs up to %u of QP %u not heard: %s, "
			    "status %d",
			    n->hdr.number, n->hdr.qpn,
			    rdma_event_str(ev->event), ev->status);
	rdma_ack_cm_event(ev);
	if (!over)
		return;
	pthread_mutex_lock(&verify_lock);
	starting = n->starting;
	if (starting) {
		n->over = true;
		n->heard = heard;
	}
	pthread_mutex_unlock(&verify_lock);
	if (!starting)
		cma_p2p_notice_end(n, heard);
}

/* The service thread: the channel's fd is readable. */
static bool cma_p2p_verify_serve(struct rdma_event_channel *channel)
{
	struct rdma_cm_event *ev;
	int i;

	cma_p2p_orphans_retry();
	for (i = 0; i < 16; i++) {
		if (rdma_get_cm_event(channel, &ev))
			return true; /* drained (EAGAIN) */
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			cma_p2p_notice_heard(ev);
		else if (ev->id->context)
			cma_p2p_notice_event(ev);
		else
			rdma_ack_cm_event(
				ev); /* a companion's: nothing to do */
	}
	return true;
}

/* For tests whose service thread is parked: read the channel now. */
void cma_p2p_verify_serve_now(void)
{
	struct rdma_event_channel *ch;

	pthread_mutex_lock(&verify_lock);
	ch = verify_ch;
	pthread_mutex_unlock(&verify_lock);
	if (ch)
		cma_p2p_verify_serve(ch);
}

/*
 * For fuzz targets, which run many inputs in one process on a fresh fake
 * kernel each: the channel, its ids and the NOTICEs go, unheard.
 */
void cma_p2p_verify_reset(void)
{
	struct cma_p2p_companion *c, *cn;
	struct cma_p2p_notice *n, *nn;
	struct rdma_event_channel *ch;

	pthread_mutex_lock(&verify_lock);
	c = companions;
	n = notices;
	ch = verify_ch;
	companions = NULL;
	notices = NULL;
	verify_ch = NULL;
	pthread_mutex_unlock(&verify_lock);
	for (; c; c = cn) {
		cn = c->next;
		cma_p2p_id_destroy(c->id);
		free(c);
	}
	for (; n; n = nn) {
		nn = n->next;
		cma_p2p_id_destroy(n->id);
		free(n);
	}
	cma_p2p_orphans_retry();
	if (ch) {
		cma_service_remove(ch, ch->fd);
		rdma_destroy_event_channel(ch);
	}
}
