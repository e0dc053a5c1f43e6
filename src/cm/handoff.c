// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Handing a connection request to another process.
 *
 * The kernel lets a process write commands to an RDMA CM file only with
 * the credentials that opened it, and a forked child has credentials of
 * its own: so only the process that made a listener can read its
 * requests.  Another process holding the file (inherited, or passed over
 * a UNIX socket) may still pull one of the file's kernel ids into a file
 * of its own: the migrate command is written to the destination, and only
 * names the source.  The kernel reports nothing about a new connection's
 * id until it is accepted, so an unaccepted request's id can change hands
 * this way with no event lost.
 *
 * The reader of a request names its kernel id (cma_id_handle) to the
 * accepting process and gives up its side of the id (cma_id_hand_off);
 * the accepter adopts it (cma_id_adopt): the id moves to the adopter's
 * channel and is bound to the adopter's own device context, as if its
 * request had arrived there.  A listener changes process the same way
 * (cma_id_take_over), when the one reading its requests goes.
 */
#include <config.h>

#include <stdlib.h>

#include "cma.h"
#include "ucma_abi.h"

static uint8_t min_u8(uint8_t a, uint8_t b)
{
	return a < b ? a : b;
}

int cma_id_handle(struct rdma_cm_id *id, uint32_t *handle)
{
	struct cma_id_private *id_priv = cma_id_priv(id);

	if (cma_check_id(id) || id->qp || id_priv->handle == CMA_NO_KERNEL_ID)
		return cma_err(EINVAL);
	*handle = id_priv->handle;
	return 0;
}

void cma_id_hand_off(struct rdma_cm_id *id)
{
	/*
	 * Every event of the id this process read was acked (the caller's
	 * rule), and a request's id has had none: nothing to wait for.
	 */
	cma_id_free(cma_id_priv(id));
}

int cma_id_take_over(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct cma_id_private *id_priv = cma_id_priv(id);
	uint32_t reported;
	int ret;

	if (cma_check_id(id) || !channel)
		return cma_err(EINVAL);
	pthread_mutex_lock(&id_priv->qp_lock);
	pthread_mutex_lock(&id_priv->mut);
	ret = ucma_cmd_migrate_id(
		cma_channel_kernel_fd(channel), id_priv->handle,
		cma_channel_kernel_fd(id->channel), &reported);
	if (!ret) {
		id->channel = channel;
		/*
		 * The events reported so far were read and acked by the
		 * processes that held the id before: none is owed here.
		 */
		id_priv->events_base = 0;
		id_priv->events_completed = reported;
	}
	pthread_mutex_unlock(&id_priv->mut);
	pthread_mutex_unlock(&id_priv->qp_lock);
	return ret;
}

int cma_id_adopt(struct rdma_event_channel *channel, int from_fd,
		 uint32_t handle, void *context,
		 const struct rdma_conn_param *request, struct rdma_cm_id **id)
{
	struct cma_id_private *id_priv;
	uint32_t reported;
	int err;

	if (!channel || from_fd < 0 || !request || !id)
		return cma_err(EINVAL);
	id_priv = cma_id_alloc(channel, context, RDMA_PS_TCP, IBV_QPT_RC);
	if (!id_priv)
		return -1;
	if (ucma_cmd_migrate_id(cma_channel_kernel_fd(channel), handle, from_fd,
				&reported))
		goto fail;
	id_priv->handle = handle;
	id_priv->events_completed = reported; /* none before an accept */
	id_priv->cm_started = true;
	id_priv->passive = true;
	if (cma_query_route_info(id_priv))
		goto fail_kernel;
	if (!id_priv->cma_dev) {
		errno = ENODEV;
		goto fail_kernel;
	}
	/* As for a request read here (conn.c): the depths from our view. */
	id_priv->responder_resources =
		min_u8(request->responder_resources,
		       id_priv->cma_dev->max_responder_resources);
	id_priv->initiator_depth =
		min_u8(request->initiator_depth,
		       id_priv->cma_dev->max_initiator_depth);
	*id = &id_priv->id;
	return 0;
fail_kernel:
	/* It is ours now: rejecting it is the destroy's job. */
	err = errno;
	ucma_cmd_destroy_id(cma_id_fd(id_priv), handle, &reported);
	cma_id_free(id_priv);
	return cma_err(err);
fail:
	err = errno;
	cma_id_free(id_priv);
	return cma_err(err);
}
