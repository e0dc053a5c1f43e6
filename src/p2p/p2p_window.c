// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer-to-peer mode, the connecting side: the window of REQs a process
 * has out at once (rdma_cm_p2p(7), BOUNDS).
 *
 * A rank of a mesh calls rdma_connect towards every peer at once.  Every
 * REQ of a host's processes lands on its device's CM queue, whose receive
 * ring is a few hundred MADs deep; a burst beyond it is dropped, and each
 * REQ whose answer does not come within the CM's response timeout (about
 * 4 s) leaves copies behind, each of which may cost a NOTICE
 * (p2p_notice.c), round trips on a host already behind.  So a process has at most CMA_P2P_REQ_WINDOW REQs out
 * (PENDING); a connect that would send one more waits for one of them
 * to be answered, refused or given up.  The oldest connect goes first, a
 * refused one included: sent again, it takes its place by when the
 * application connected, not at the back, where the connects made since
 * would keep its peer waiting.  The wait is the process's, not the peer's:
 * a connect's bound stands still while it queues (cma_p2p_queue_remove),
 * or the last connects of a loaded mesh would be given up for the
 * window's slowness while their peers wait for them.  The window decides
 * when a REQ goes out, never which attempts pair, nor whether one fails.
 * Everything here runs under p2p_lock.
 *
 * A forked child's window is its own: the REQs its parent had out and the
 * connects it had queued are the parent's (the child cannot send on their
 * kernel ids), so the child starts with an empty window and queue.  A
 * conn holds a place or a queue entry only while it is registered in
 * this process (p2p.c), so the child's copies of its parent's conns,
 * registered in the parent only, give back nothing the child counted.
 */
#include <config.h>

#include "p2p_table.h"

#define CMA_P2P_REQ_WINDOW 8

static unsigned int p2p_reqs_out;
/* Connects waiting for a place in the window, oldest first. */
static struct cma_list p2p_queue;

void cma_p2p_window_forked(void)
{
	p2p_reqs_out = 0;
	p2p_queue = (struct cma_list){0};
}

/* In registration order (conn->seq): the oldest connect first. */
static void cma_p2p_queue_insert(struct cma_p2p_conn *conn)
{
	struct cma_p2p_conn *pos =
		cma_list_last(&p2p_queue, struct cma_p2p_conn, qnode);

	while (pos && pos->seq > conn->seq)
		pos = cma_list_prev(pos, qnode);
	cma_list_insert_after(&p2p_queue, pos ? &pos->qnode : NULL,
			      &conn->qnode);
	conn->queued = true;
	conn->queued_ns = cma_p2p_now_ns();
}

/* Out of the queue: the time it spent there is added to its bound. */
static void cma_p2p_queue_remove(struct cma_p2p_conn *conn)
{
	uint64_t waited = cma_p2p_now_ns() - conn->queued_ns;

	cma_list_unlink(&p2p_queue, &conn->qnode);
	conn->queued = false;
	conn->bound_ns += waited;
	if (conn->refused_ns)
		conn->refused_ns += waited;
}

bool cma_p2p_slot_take(struct cma_p2p_conn *conn)
{
	if (conn->slot)
		return true;
	if (!conn->queued && p2p_reqs_out < CMA_P2P_REQ_WINDOW) {
		conn->slot = true;
		p2p_reqs_out++;
		return true;
	}
	if (!conn->queued)
		cma_p2p_queue_insert(conn);
	return false;
}

void cma_p2p_slot_release(struct cma_p2p_conn *conn)
{
	struct cma_p2p_conn *next;

	if (!cma_p2p_conn_registered(conn)) /* a parent's: none of ours */
		return;
	if (conn->queued)
		cma_p2p_queue_remove(conn);
	if (!conn->slot)
		return;
	conn->slot = false;
	p2p_reqs_out--;
	next = cma_list_first(&p2p_queue, struct cma_p2p_conn, qnode);
	if (!next)
		return;
	/* Its place is kept for it: its timer sends at once. */
	cma_p2p_queue_remove(next);
	next->slot = true;
	p2p_reqs_out++;
	cma_timer_start(next->id_priv->id.channel, &next->timer, 0);
}

unsigned int cma_p2p_reqs_out(void)
{
	return p2p_reqs_out;
}
