// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer-to-peer mode: is a REQ still its sender's current one?
 * (rdma_cm_p2p(7), LATE COPIES.)
 *
 * The IB CM sends a REQ again when no answer came within its response
 * timeout.  A copy of a REQ whose first copy was refused before a library
 * saw it (nobody listened yet: reason 8; the kernel's reason 28; reason
 * 10) can reach the higher end after the lower end has sent its QP's next
 * REQ.  Adopting it would bind the application's QP to a dead request in
 * RTR, which only RESET undoes, and RESET drops the receives the
 * application posted.  So the higher end asks before it holds or adopts
 * a REQ: over SIDR, the CM's own request/reply service on the datagram
 * port space, to the lower end's companion listener (the same address
 * and port as the lower end's listener, in RDMA_PS_UDP), naming the REQ
 * by its QP number, the sender's incarnation and the sender's number for
 * it (p2p_wire.h).  The lower end answers from its own table: live when
 * a connect of its still waits for that very REQ's answer.
 *
 * Nothing is counted on both sides and no clock decides: a copy is asked
 * about like any REQ and refused when its sender has moved on, and the
 * REQ the sender waits on is adopted whatever copies came before it.
 * The REQ's own copies never reach the higher end's library while it
 * asks (its kernel id lives, so the CM answers them itself).
 *
 * Both roles run on one event channel of the library's own, read by the
 * service thread (timer.c, cma_service_add_handler) as an application
 * reads its channel: non-blocking rdma_get_cm_event, then the calls the
 * event asks for.  Its ids are ordinary datagram ids: p2p never looks at
 * them.  verify_lock covers the lists and the channel pointer only; it is
 * taken under p2p_lock (a request dropped cancels its question), so no
 * library call and no p2p_lock is ever taken under it.  A question's
 * events are read by one thread at a time (the channel's reader), so its
 * steps need no lock; its verdict callback is read under verify_lock.
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
 * A datagram listener answering for a p2p listener's port, on the address
 * a connect of ours sends its REQs from.
 */
struct cma_p2p_companion {
	struct cma_p2p_companion *next;
	sa_family_t family;
	uint8_t addr[16];
	uint16_t port;
	struct rdma_cm_id *id;
};

enum cma_p2p_query_step {
	CMA_P2P_Q_ADDR, /* resolving the lower end's address */
	CMA_P2P_Q_ROUTE, /* resolving the route to it */
	CMA_P2P_Q_ASKED, /* the SIDR REQ is out */
};

struct cma_p2p_query {
	struct cma_p2p_query *next;
	struct rdma_cm_id *id;
	enum cma_p2p_query_step step;
	struct cma_p2p_hdr ask; /* the QUERY: the REQ it names */
	cma_p2p_liveness_fn done; /* NULL once cancelled */
	uint64_t serial; /* what the asker names it by */
	/*
	 * cma_p2p_query_start is still inside rdma_resolve_addr: a question
	 * over before it returns (its events read on the service thread) is
	 * ended by it, not under its feet.  Under verify_lock.
	 */
	bool starting, over;
	enum cma_p2p_liveness verdict;
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
static struct cma_p2p_query *queries;
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
 * questions are its parent's (the kernel's file is shared), so it forgets
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
	/*
	 * Requests being asked about may still name their questions
	 * (cma_p2p_query_cancel): those stay allocated, answered by nobody.
	 */
	queries = NULL;
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

/* --- the lower end: answering ------------------------------------------- */

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
		return 0; /* AF_IB: not asked (rdma_cm_p2p(7), LATE COPIES) */
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
	 * Every peer asks at once in a mesh, and a question the kernel finds
	 * no room for in the backlog is dropped unanswered: the most the
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

/* A QUERY came: answer it from this process's connects, then let it go. */
static void cma_p2p_answer(struct rdma_cm_event *ev)
{
	const struct rdma_ud_param *ud = &ev->param.ud;
	struct rdma_cm_id *req = ev->id;
	struct cma_p2p_hdr q, a = {.kind = CMA_P2P_ANSWER};
	uint8_t buf[CMA_P2P_HDR_MAX];
	size_t len;

	if (cma_p2p_hdr_parse(ud->private_data, ud->private_data_len, &q) !=
		    CMA_P2P_OK ||
	    q.kind != CMA_P2P_QUERY) {
		rdma_ack_cm_event(ev);
		rdma_reject(req, NULL, 0);
		cma_p2p_id_destroy(req);
		return;
	}
	rdma_ack_cm_event(ev);
	a.qpn = q.qpn;
	a.incarnation = q.incarnation;
	a.number = q.number;
	if (cma_p2p_req_live(q.incarnation, q.qpn, q.number))
		a.flags = CMA_P2P_F_LIVE;
	cma_p2p_dbg("asked about REQ %u of QP %u: %s", q.number, q.qpn,
		    a.flags ? "live" : "stale");
	len = cma_p2p_hdr_encode(&a, buf);
	rdma_reject(req, buf, (uint8_t)len);
	cma_p2p_id_destroy(req);
}

/* --- the higher end: asking --------------------------------------------- */

/* Unlink @q (verify_lock held); its verdict callback, if still wanted. */
static cma_p2p_liveness_fn cma_p2p_query_unlink(struct cma_p2p_query *q)
{
	struct cma_p2p_query **pp;

	for (pp = &queries; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	return q->done;
}

/* Over: @q's id goes, then its asker hears @verdict if it still wants to. */
static void cma_p2p_query_end(struct cma_p2p_query *q,
			      enum cma_p2p_liveness verdict)
{
	cma_p2p_liveness_fn done;

	pthread_mutex_lock(&verify_lock);
	done = cma_p2p_query_unlink(q);
	pthread_mutex_unlock(&verify_lock);
	cma_p2p_id_destroy(q->id);
	if (done)
		done(q->serial, verdict);
	free(q);
}

int cma_p2p_query_start(const struct sockaddr *src, const struct sockaddr *dst,
			const struct cma_p2p_hdr *req, uint32_t qpn,
			cma_p2p_liveness_fn done, uint64_t serial)
{
	struct rdma_event_channel *ch = cma_p2p_verify_channel();
	struct cma_p2p_query *q = calloc(1, sizeof(*q));
	bool over;
	int err;

	if (!ch || !q || rdma_create_id(ch, &q->id, q, RDMA_PS_UDP)) {
		err = errno ? errno : ENOMEM;
		free(q);
		return cma_err(err);
	}
	q->ask.kind = CMA_P2P_QUERY;
	q->ask.qpn = qpn;
	q->ask.incarnation = req->incarnation;
	q->ask.number = req->number;
	q->done = done;
	q->serial = serial;
	q->step = CMA_P2P_Q_ADDR;
	q->starting = true;
	pthread_mutex_lock(&verify_lock);
	q->next = queries;
	queries = q;
	pthread_mutex_unlock(&verify_lock);
	/* Its events may be read at once, on the service thread. */
	if (rdma_resolve_addr(q->id, (struct sockaddr *)src,
			      (struct sockaddr *)dst,
			      CMA_P2P_VERIFY_RESOLVE_MS)) {
		err = errno;
		pthread_mutex_lock(&verify_lock);
		cma_p2p_query_unlink(q);
		pthread_mutex_unlock(&verify_lock);
		cma_p2p_id_destroy(q->id);
		free(q);
		return cma_err(err);
	}
	pthread_mutex_lock(&verify_lock);
	q->starting = false;
	over = q->over;
	pthread_mutex_unlock(&verify_lock);
	if (over) /* answered before we got here: ours to end */
		cma_p2p_query_end(q, q->verdict);
	return 0;
}

void cma_p2p_query_cancel(uint64_t serial)
{
	struct cma_p2p_query *q;

	pthread_mutex_lock(&verify_lock);
	for (q = queries; q; q = q->next)
		if (q->serial == serial)
			q->done = NULL;
	pthread_mutex_unlock(&verify_lock);
}

/*
 * The next step of @q after @ev, or its verdict (then true: it is over).
 * Only the channel's reader runs it: no lock.
 */
static bool cma_p2p_query_step(struct cma_p2p_query *q,
			       const struct rdma_cm_event *ev,
			       enum cma_p2p_liveness *verdict)
{
	const struct rdma_ud_param *ud = &ev->param.ud;
	struct rdma_conn_param cp = {0};
	uint8_t buf[CMA_P2P_HDR_MAX];
	struct cma_p2p_hdr a;

	*verdict = CMA_P2P_UNKNOWN;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		q->step = CMA_P2P_Q_ROUTE;
		return !!rdma_resolve_route(q->id, CMA_P2P_VERIFY_RESOLVE_MS);
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		q->step = CMA_P2P_Q_ASKED;
		cp.private_data = buf;
		cp.private_data_len = (uint8_t)cma_p2p_hdr_encode(&q->ask, buf);
		return !!rdma_connect(q->id, &cp);
	case RDMA_CM_EVENT_UNREACHABLE:
		/* The answer travels in a SIDR reply that refuses. */
		if (q->step == CMA_P2P_Q_ASKED &&
		    cma_p2p_hdr_parse(ud->private_data, ud->private_data_len,
				      &a) == CMA_P2P_OK &&
		    a.kind == CMA_P2P_ANSWER && a.qpn == q->ask.qpn &&
		    a.incarnation == q->ask.incarnation &&
		    a.number == q->ask.number)
			*verdict = a.flags & CMA_P2P_F_LIVE ? CMA_P2P_LIVE
							    : CMA_P2P_STALE;
		return true;
	default: /* errors, a reply that accepts: no answer */
		return true;
	}
}

static void cma_p2p_query_event(struct rdma_cm_event *ev)
{
	struct cma_p2p_query *q = ev->id->context;
	enum cma_p2p_liveness verdict;
	bool over, starting;

	/* What cma_p2p_query_start wrote before linking @q is seen here. */
	pthread_mutex_lock(&verify_lock);
	pthread_mutex_unlock(&verify_lock);
	over = cma_p2p_query_step(q, ev, &verdict);
	if (over && verdict == CMA_P2P_UNKNOWN)
		cma_p2p_dbg("question about REQ %u of QP %u: %s, status %d",
			    q->ask.number, q->ask.qpn,
			    rdma_event_str(ev->event), ev->status);
	rdma_ack_cm_event(ev);
	if (!over)
		return;
	pthread_mutex_lock(&verify_lock);
	starting = q->starting;
	if (starting) {
		q->over = true;
		q->verdict = verdict;
	}
	pthread_mutex_unlock(&verify_lock);
	if (!starting)
		cma_p2p_query_end(q, verdict);
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
			cma_p2p_answer(ev);
		else if (ev->id->context)
			cma_p2p_query_event(ev);
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
 * kernel each: the channel, its ids and the questions go, unanswered.
 */
void cma_p2p_verify_reset(void)
{
	struct cma_p2p_companion *c, *cn;
	struct cma_p2p_query *q, *qn;
	struct rdma_event_channel *ch;

	pthread_mutex_lock(&verify_lock);
	c = companions;
	q = queries;
	ch = verify_ch;
	companions = NULL;
	queries = NULL;
	verify_ch = NULL;
	pthread_mutex_unlock(&verify_lock);
	for (; c; c = cn) {
		cn = c->next;
		cma_p2p_id_destroy(c->id);
		free(c);
	}
	for (; q; q = qn) {
		qn = q->next;
		cma_p2p_id_destroy(q->id);
		free(q);
	}
	cma_p2p_orphans_retry();
	if (ch) {
		cma_service_remove(ch, ch->fd);
		rdma_destroy_event_channel(ch);
	}
}
