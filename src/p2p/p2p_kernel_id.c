// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer-to-peer mode: the kernel ids of a connecting id.  An adoption, a
 * give-up or a REQ sent again replaces the id's kernel id; the old one is
 * retired and destroyed by the conn's chores (its timer, or the next
 * connect), so that no event names an id that was freed.  An id created
 * without a kernel id (id.c) gets none back in place of a retired one.
 */
#include <config.h>

#include <string.h>

#include "cm/cma.h"
#include "p2p.h"
#include "p2p_table.h"
#include "cm/ucma_abi.h"

/*
 * Make @handle the id's kernel id, under its mut (which cma_id_kernel
 * makes a missing one under); the id's kernel id before.
 */
uint32_t cma_p2p_set_handle(struct cma_id_private *id_priv, uint32_t handle)
{
	uint32_t old;

	pthread_mutex_lock(&id_priv->mut);
	old = id_priv->handle;
	__atomic_store_n(&id_priv->handle, handle, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&id_priv->mut);
	return old;
}

/*
 * The id gets a kernel id of its own in place of one that is retired: a
 * fresh one now, or none until a command needs it if the id was created
 * without one.  0, or -1/errno with the id's kernel id unchanged.
 */
int cma_p2p_renew_kernel_id(struct cma_id_private *id_priv)
{
	if (!id_priv->kernel_lazy)
		return cma_id_create_kernel(id_priv);
	cma_p2p_set_handle(id_priv, CMA_NO_KERNEL_ID);
	return 0;
}

/* Destroy kernel id @handle of @id_priv; its events so far stay counted. */
int cma_p2p_destroy_kernel_id(struct cma_id_private *id_priv, uint32_t handle)
{
	uint32_t reported;

	if (handle == CMA_NO_KERNEL_ID)
		return 0; /* it was never made */
	if (ucma_cmd_destroy_id(cma_id_fd(id_priv), handle, &reported))
		return -1;
	pthread_mutex_lock(&id_priv->mut);
	id_priv->events_base += reported;
	pthread_mutex_unlock(&id_priv->mut);
	return 0;
}

/*
 * Under p2p_lock: kernel id @old of @conn's id was replaced (by a fresh
 * one, or an adopted request's); it is destroyed by the conn's chores.
 * Until then it is ours (its events are dropped as stale), so that no
 * event ever names an id that was freed.  The slots are few: when they
 * are full (a kernel that keeps refusing DESTROY_ID) the oldest is
 * destroyed here.
 */
void cma_p2p_retire(struct cma_p2p_conn *conn, uint32_t old)
{
	if (old == CMA_NO_KERNEL_ID)
		return;
	if (conn->nretired == CMA_P2P_MAX_RETIRED) {
		if (cma_p2p_destroy_kernel_id(conn->id_priv, conn->retired[0]))
			cma_p2p_dbg("kernel id %u not destroyed: %m",
				    conn->retired[0]);
		memmove(conn->retired, conn->retired + 1,
			(CMA_P2P_MAX_RETIRED - 1) * sizeof(conn->retired[0]));
		conn->nretired--;
	}
	conn->retired[conn->nretired++] = old;
}

/* Under p2p_lock: let the conn's timer do its chores now. */
void cma_p2p_chores_soon(struct cma_p2p_conn *conn)
{
	cma_timer_start(conn->id_priv->id.channel, &conn->timer, 0);
}

bool cma_p2p_take_chores(struct cma_p2p_conn *conn, struct cma_p2p_chores *c)
{
	c->n = conn->nretired;
	memcpy(c->ids, conn->retired, sizeof(c->ids));
	c->qp_err = conn->qp_err_due;
	conn->nretired = 0;
	conn->qp_err_due = false;
	if (!c->n && !c->qp_err)
		return false;
	cma_p2p_busy_get(&conn->busy);
	return true;
}

void cma_p2p_do_chores(struct cma_p2p_conn *conn, struct cma_p2p_chores *c)
{
	unsigned int i, failed = 0;

	if (c->qp_err)
		cma_qp_to_err(conn->id_priv);
	for (i = 0; i < c->n; i++) {
		if (!cma_p2p_destroy_kernel_id(conn->id_priv, c->ids[i]))
			continue;
		cma_p2p_dbg("kernel id %u not destroyed (%m): kept to retry",
			    c->ids[i]);
		c->ids[failed++] = c->ids[i];
	}
	cma_p2p_lock();
	for (i = 0; i < failed; i++)
		cma_p2p_retire(conn, c->ids[i]);
	if (conn->peer_gone)
		cma_p2p_chores_soon(conn);
	cma_p2p_busy_put(&conn->busy);
	cma_p2p_idle();
	cma_p2p_unlock();
}

/*
 * Under the id's qp_lock and p2p_lock: do what is left to do now, with
 * p2p_lock dropped meanwhile if there is any.
 */
void cma_p2p_chores_now(struct cma_p2p_conn *conn)
{
	struct cma_p2p_chores c;

	if (!cma_p2p_take_chores(conn, &c))
		return;
	cma_p2p_unlock();
	cma_p2p_do_chores(conn, &c);
	cma_p2p_lock();
}
