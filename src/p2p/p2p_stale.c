// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer-to-peer mode, the higher end: what NOTICEs said is dead
 * (p2p_notice.c; rdma_cm_p2p(7), LATE COPIES).
 *
 * A NOTICE names the REQs from one QP of one incarnation of a peer, up to
 * a number.  Held ones are refused at once; an adoption of one whose
 * connection is not established is undone (cma_p2p_unadopt), waiting for
 * one under way to be done first; and a copy still on its way when the
 * NOTICE came is refused when it comes.  For that the highest number
 * named per QP is kept, CMA_P2P_FLOORS of them, the oldest replaced when
 * they are full: a floor forgotten costs the peer one NOTICE more, never
 * a wrong outcome, and no peer can make the table grow.  REQ numbers
 * wrap after 2^24 - 1 REQs of one process; a floor compares them plainly.
 */
#include <config.h>

#include <stdbool.h>
#include <stdint.h>

#include "cm/cma.h"
#include "p2p_table.h"
#include "p2p_wire.h"

#define CMA_P2P_FLOORS 64

/* The REQs one NOTICE names (a floor is one kept). */
struct cma_p2p_dead {
	struct cma_p2p_ident from; /* the peer's address and listening port */
	uint64_t incarnation; /* 0: an unused floor */
	uint32_t qpn, number;
};

/* Under p2p_lock. */
static struct cma_p2p_dead floors[CMA_P2P_FLOORS];
static unsigned int floors_next; /* the floor replaced next */

static bool cma_p2p_dead_names(const struct cma_p2p_dead *d,
			       const struct cma_p2p_ident *from,
			       const struct cma_p2p_hdr *req, uint32_t qpn)
{
	return req->number && req->number <= d->number &&
	       req->incarnation == d->incarnation && qpn == d->qpn &&
	       !cma_p2p_ident_cmp(from, &d->from);
}

static struct cma_p2p_dead *cma_p2p_floor_of(const struct cma_p2p_ident *from,
					     uint64_t incarnation, uint32_t qpn)
{
	unsigned int i;

	for (i = 0; i < CMA_P2P_FLOORS; i++)
		if (floors[i].incarnation == incarnation &&
		    floors[i].qpn == qpn &&
		    !cma_p2p_ident_cmp(from, &floors[i].from))
			return &floors[i];
	return NULL;
}

static void cma_p2p_floor_raise(const struct cma_p2p_dead *d)
{
	struct cma_p2p_dead *f =
		cma_p2p_floor_of(&d->from, d->incarnation, d->qpn);

	if (!f) {
		f = &floors[floors_next];
		floors_next = (floors_next + 1) % CMA_P2P_FLOORS;
		*f = *d;
		return;
	}
	if (d->number > f->number)
		f->number = d->number;
}

bool cma_p2p_req_dead(const struct cma_p2p_ident *from,
		      const struct cma_p2p_hdr *req, uint32_t qpn)
{
	const struct cma_p2p_dead *f;

	if (!req->incarnation || !req->number)
		return false; /* no NOTICE can name it */
	f = cma_p2p_floor_of(from, req->incarnation, qpn);
	return f && cma_p2p_dead_names(f, from, req, qpn);
}

static bool cma_p2p_held_dead(const struct cma_p2p_held *h, const void *arg)
{
	return cma_p2p_dead_names(arg, &h->key.remote, &h->hdr,
				  h->resp.param.conn.qp_num);
}

/*
 * Under p2p_lock: a connect of ours whose adoption of a request @d names
 * is under way, or done and not established; NULL if none.
 */
static struct cma_p2p_conn *cma_p2p_dead_adoption(const struct cma_p2p_dead *d)
{
	struct cma_p2p_conn *conn;

	for (conn = cma_p2p_conn_next_of(NULL, &d->from); conn;
	     conn = cma_p2p_conn_next_of(conn, &d->from))
		if ((conn->state == CMA_P2P_ADOPTING ||
		     cma_p2p_adoption_open(conn)) &&
		    cma_p2p_dead_names(d, &conn->key.remote, &conn->claimed_hdr,
				       conn->claimed_qpn))
			return conn;
	return NULL;
}

/*
 * Under p2p_lock, dropped meanwhile: undo @conn's adoption under its id's
 * qp_lock (the lock order: qp_lock first), if it is still what @d names.
 * False if it could not be undone (no kernel id to take its place).
 */
static bool cma_p2p_dead_undo(struct cma_p2p_conn *conn,
			      const struct cma_p2p_dead *d)
{
	struct cma_id_private *id_priv = conn->id_priv;
	bool undone = true;

	cma_p2p_busy_get(&conn->busy); /* rdma_destroy_id waits for us */
	cma_p2p_unlock();
	pthread_mutex_lock(&id_priv->qp_lock);
	cma_p2p_lock();
	cma_p2p_busy_put(&conn->busy);
	if (cma_p2p_dead_adoption(d) == conn &&
	    conn->state == CMA_P2P_CONNECTED)
		undone = !cma_p2p_unadopt(conn);
	pthread_mutex_unlock(&id_priv->qp_lock);
	cma_p2p_idle();
	return undone;
}

void cma_p2p_dead_reqs(const struct cma_p2p_ident *from, uint64_t incarnation,
		       uint32_t qpn, uint32_t number)
{
	struct cma_p2p_dead d = {.from = *from,
				 .incarnation = incarnation,
				 .qpn = qpn,
				 .number = number};
	struct cma_p2p_conn *conn;

	cma_p2p_lock();
	cma_p2p_floor_raise(&d);
	cma_p2p_held_refuse_if(cma_p2p_held_dead, &d, CMA_P2P_REJ_STALE);
	/*
	 * Each undone adoption waits for the peer again, or adopts a held
	 * request the floor spares: none is named twice.
	 */
	while ((conn = cma_p2p_dead_adoption(&d))) {
		if (conn->state == CMA_P2P_ADOPTING ||
		    cma_p2p_busy(&conn->busy))
			cma_p2p_wait_idle(); /* its answer goes out first */
		else if (!cma_p2p_dead_undo(conn, &d))
			break; /* its REP's retries end it */
	}
	cma_p2p_unlock();
}
