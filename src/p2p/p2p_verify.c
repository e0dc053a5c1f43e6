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
 * them.  Everything here is under verify_lock; p2p_lock is taken inside
 * it only to read or report, never the other way round.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"
#include "p2p_table.h"
#include "p2p_wire.h"

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
	void *arg;
};

static pthread_mutex_t verify_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rdma_event_channel *verify_ch;
static struct cma_p2p_companion *companions;
static struct cma_p2p_query *queries;

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

/* The library's own channel, made and handed to the service thread once. */
static struct rdma_event_channel *cma_p2p_verify_channel(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct rdma_event_channel *ch;
	int flags;

	pthread_once(&once, cma_p2p_verify_once);
	if (verify_ch)
		return verify_ch;
	ch = rdma_create_event_channel();
	if (!ch)
		return NULL;
	flags = fcntl(ch->fd, F_GETFL);
	if (flags < 0 || fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) ||
	    cma_service_add_handler(ch, ch->fd, cma_p2p_verify_serve)) {
		rdma_destroy_event_channel(ch);
		return NULL;
	}
	verify_ch = ch;
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

int cma_p2p_companion_ensure(sa_family_t family, const uint8_t addr[16],
			     uint16_t port)
{
	struct cma_p2p_companion *c;
	struct rdma_event_channel *ch;
	struct sockaddr_storage ss;
	struct rdma_cm_id *id;
	int err;

	if (family != AF_INET && family != AF_INET6)
		return 0; /* AF_IB: not asked (rdma_cm_p2p(7), LATE COPIES) */
	pthread_mutex_lock(&verify_lock);
	for (c = companions; c; c = c->next)
		if (c->port == port && c->family == family &&
		    !memcmp(c->addr, addr, 16))
			break;
	if (c) {
		pthread_mutex_unlock(&verify_lock);
		return 0;
	}
	ch = cma_p2p_verify_channel();
	c = calloc(1, sizeof(*c));
	if (!ch || !c || rdma_create_id(ch, &id, NULL, RDMA_PS_UDP))
		goto fail;
	cma_p2p_sockaddr(family, addr, port, &ss);
	if (rdma_bind_addr(id, (struct sockaddr *)&ss) || rdma_listen(id, 64)) {
		err = errno;
		rdma_destroy_id(id);
		errno = err;
		goto fail;
	}
	c->family = family;
	memcpy(c->addr, addr, 16);
	c->port = port;
	c->id = id;
	c->next = companions;
	companions = c;
	pthread_mutex_unlock(&verify_lock);
	return 0;
fail:
	err = errno ? errno : ENOMEM;
	pthread_mutex_unlock(&verify_lock);
	free(c);
	cma_p2p_dbg("port %u: no companion listener (%s)", port,
		    strerror(err));
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
		rdma_destroy_id(c->id);
		free(c);
	}
}

/* A QUERY came: answer it from this process's connects, then let it go. */
static void cma_p2p_answer(struct rdma_cm_event *ev)
{
	const struct rdma_ud_param *ud = &ev->param.ud;
	struct rdma_cm_id *req = ev->id;
	struct cma_p2p_hdr q, a = {.kind = CMA_P2P_ANSWER};
	uint8_t buf[CMA_P2P_HDR_LEN];

	if (cma_p2p_hdr_parse(ud->private_data, ud->private_data_len, &q) !=
		    CMA_P2P_OK ||
	    q.kind != CMA_P2P_QUERY) {
		rdma_ack_cm_event(ev);
		rdma_reject(req, NULL, 0);
		rdma_destroy_id(req);
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
	cma_p2p_hdr_encode(&a, buf);
	rdma_reject(req, buf, sizeof(buf));
	rdma_destroy_id(req);
}

/* --- the higher end: asking --------------------------------------------- */

/* Unlink @q (verify_lock held); its verdict callback, if still wanted. */
static cma_p2p_liveness_fn cma_p2p_query_unlink(struct cma_p2p_query *q,
					       void **arg)
{
	struct cma_p2p_query **pp;

	for (pp = &queries; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	*arg = q->arg;
	return q->done;
}

struct cma_p2p_query *cma_p2p_query_start(const struct sockaddr *src,
					  const struct sockaddr *dst,
					  const struct cma_p2p_hdr *req,
					  uint32_t qpn,
					  cma_p2p_liveness_fn done, void *arg)
{
	struct rdma_event_channel *ch;
	struct cma_p2p_query *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->ask.kind = CMA_P2P_QUERY;
	q->ask.qpn = qpn;
	q->ask.incarnation = req->incarnation;
	q->ask.number = req->number;
	q->done = done;
	q->arg = arg;
	q->step = CMA_P2P_Q_ADDR;
	pthread_mutex_lock(&verify_lock);
	ch = cma_p2p_verify_channel();
	if (!ch || rdma_create_id(ch, &q->id, q, RDMA_PS_UDP)) {
		pthread_mutex_unlock(&verify_lock);
		free(q);
		return NULL;
	}
	q->next = queries;
	queries = q;
	if (rdma_resolve_addr(q->id, (struct sockaddr *)src,
			      (struct sockaddr *)dst,
			      CMA_P2P_VERIFY_RESOLVE_MS)) {
		cma_p2p_query_unlink(q, &arg);
		pthread_mutex_unlock(&verify_lock);
		rdma_destroy_id(q->id);
		free(q);
		return NULL;
	}
	pthread_mutex_unlock(&verify_lock);
	return q;
}

void cma_p2p_query_cancel(struct cma_p2p_query *q)
{
	pthread_mutex_lock(&verify_lock);
	q->done = NULL;
	pthread_mutex_unlock(&verify_lock);
}

/* The next step of @q after @ev, or its verdict (then true: it is over). */
static bool cma_p2p_query_step(struct cma_p2p_query *q,
			       const struct rdma_cm_event *ev,
			       enum cma_p2p_liveness *verdict)
{
	const struct rdma_ud_param *ud = &ev->param.ud;
	struct rdma_conn_param cp = {0};
	uint8_t buf[CMA_P2P_HDR_LEN];
	struct cma_p2p_hdr a;

	*verdict = CMA_P2P_UNKNOWN;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		q->step = CMA_P2P_Q_ROUTE;
		return !!rdma_resolve_route(q->id, CMA_P2P_VERIFY_RESOLVE_MS);
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		q->step = CMA_P2P_Q_ASKED;
		cma_p2p_hdr_encode(&q->ask, buf);
		cp.private_data = buf;
		cp.private_data_len = sizeof(buf);
		return !!rdma_connect(q->id, &cp);
	case RDMA_CM_EVENT_UNREACHABLE:
		/* The answer travels in a SIDR reply that refuses. */
		if (q->step == CMA_P2P_Q_ASKED &&
		    cma_p2p_hdr_parse(ud->private_data, ud->private_data_len,
				      &a) == CMA_P2P_OK &&
		    a.kind == CMA_P2P_ANSWER && a.qpn == q->ask.qpn &&
		    a.incarnation == q->ask.incarnation &&
		    a.number == q->ask.number)
			*verdict = a.flags & CMA_P2P_F_LIVE
					   ? CMA_P2P_LIVE
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
	cma_p2p_liveness_fn done = NULL;
	void *arg = NULL;
	bool over;

	pthread_mutex_lock(&verify_lock);
	over = cma_p2p_query_step(q, ev, &verdict);
	if (over)
		done = cma_p2p_query_unlink(q, &arg);
	pthread_mutex_unlock(&verify_lock);
	rdma_ack_cm_event(ev);
	if (!over)
		return;
	rdma_destroy_id(q->id);
	free(q);
	if (done)
		done(arg, verdict);
}

/* The service thread: the channel's fd is readable. */
static bool cma_p2p_verify_serve(struct rdma_event_channel *channel)
{
	struct rdma_cm_event *ev;
	int i;

	for (i = 0; i < 16; i++) {
		if (rdma_get_cm_event(channel, &ev))
			return true; /* drained (EAGAIN) */
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			cma_p2p_answer(ev);
		else if (ev->id->context)
			cma_p2p_query_event(ev);
		else
			rdma_ack_cm_event(ev); /* a companion's: nothing to do */
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
