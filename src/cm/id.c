// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Life cycle of communication identifiers.
 *
 * The kernel counts the events it has handed out for each id; an id (and a
 * multicast group) may only be freed once the application has acked that
 * many, because an unacked event still points at it.  Destroy and migrate
 * therefore wait on events_completed.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cma.h"
#include "p2p/p2p_hooks.h"
#include "ucma_abi.h"

int cma_check_id(const struct rdma_cm_id *id)
{
	return id ? 0 : cma_err(EINVAL);
}

int cma_ps_qp_type(enum rdma_port_space ps, enum ibv_qp_type *qp_type)
{
	switch (ps) {
	case RDMA_PS_TCP:
	case RDMA_PS_IB:
		*qp_type = IBV_QPT_RC;
		return 0;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		*qp_type = IBV_QPT_UD;
		return 0;
	}
	return cma_err(EINVAL);
}

struct cma_id_private *cma_id_alloc(struct rdma_event_channel *channel,
				    void *context, enum rdma_port_space ps,
				    enum ibv_qp_type qp_type)
{
	struct cma_id_private *id_priv;

	id_priv = cma_zalloc(sizeof(*id_priv));
	if (!id_priv) {
		errno = ENOMEM;
		return NULL;
	}
	if (!channel) {
		channel = cma_channel_create();
		if (!channel) {
			free(id_priv);
			return NULL;
		}
		id_priv->sync = true;
	}
	id_priv->id.channel = channel;
	id_priv->id.context = context;
	id_priv->id.ps = ps;
	id_priv->id.qp_type = qp_type;
	id_priv->initiator = -1;
	pthread_mutex_init(&id_priv->mut, NULL);
	pthread_mutex_init(&id_priv->qp_lock, NULL);
	return id_priv;
}

/* Under the id's mut when the id is reachable by other threads. */
static int cma_id_create_kernel_locked(struct cma_id_private *id_priv)
{
	uint32_t handle;

	if (ucma_cmd_create_id(cma_id_fd(id_priv), (uint64_t)(uintptr_t)id_priv,
			       (uint16_t)id_priv->id.ps,
			       (uint8_t)id_priv->id.qp_type, &handle))
		return -1;
	/* Atomic: cma_id_kernel looks without the lock. */
	__atomic_store_n(&id_priv->handle, handle, __ATOMIC_RELEASE);
	cma_tsan_release(id_priv); /* the handle is written (cma.h) */
	return 0;
}

int cma_id_create_kernel(struct cma_id_private *id_priv)
{
	int ret;

	pthread_mutex_lock(&id_priv->mut);
	ret = cma_id_create_kernel_locked(id_priv);
	pthread_mutex_unlock(&id_priv->mut);
	return ret;
}

/*
 * In a process that declared p2p mode on a listener, an id's kernel id is
 * made by the first command that needs it.  The end of a p2p connection
 * that adopts the peer's request connects on that request's kernel id
 * (p2p_connect.c) and resolves nothing itself (p2p_resolve.c): its own
 * would be made and destroyed unused, two of the costliest commands, once
 * per adopted connection of a mesh.  Other processes keep rdma-core's
 * order, the kernel id made by rdma_create_id.
 */
static bool cma_id_may_defer_kernel(const struct cma_id_private *id_priv)
{
	return !id_priv->sync && cma_p2p_peer_listening();
}

int cma_id_kernel(struct cma_id_private *id_priv)
{
	int ret = 0;

	if (!id_priv->kernel_lazy)
		return 0; /* made by rdma_create_id, never taken away */
	/* One there is used as it is; only making one takes the lock. */
	if (__atomic_load_n(&id_priv->handle, __ATOMIC_ACQUIRE) !=
	    CMA_NO_KERNEL_ID)
		return 0;
	pthread_mutex_lock(&id_priv->mut);
	if (id_priv->handle == CMA_NO_KERNEL_ID)
		ret = cma_id_create_kernel_locked(id_priv);
	pthread_mutex_unlock(&id_priv->mut);
	return ret;
}

struct cma_id_rare *cma_id_rare(struct cma_id_private *id_priv)
{
	struct cma_id_rare *rare = cma_id_rare_of(id_priv), *none = NULL;

	if (rare)
		return rare;
	rare = cma_zalloc(sizeof(*rare));
	if (!rare) {
		cma_err(ENOMEM);
		return NULL;
	}
	/* Two threads may make one at once: the first stays. */
	if (!__atomic_compare_exchange_n(&id_priv->rare, &none, rare, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		free(rare);
		rare = none;
	}
	return rare;
}

static void cma_id_rare_free(struct cma_id_rare *rare)
{
	if (!rare)
		return;
	free(rare->ep_listen);
	free(rare->acm_answer);
	free(rare->peer);
	free(rare->connect_data);
	if (rare->resolved_ai)
		rdma_freeaddrinfo(rare->resolved_ai);
	free(rare);
}

void cma_id_free(struct cma_id_private *id_priv)
{
	if (id_priv->p2p)
		cma_p2p_free(id_priv);
	if (id_priv->sync)
		cma_channel_destroy(id_priv->id.channel);
	cma_device_put(id_priv->cma_dev);
	free(id_priv->id.route.path_rec);
	free(id_priv->ece);
	cma_id_rare_free(id_priv->rare);
	if (id_priv->cond) {
		pthread_cond_destroy(id_priv->cond);
		free(id_priv->cond);
	}
	pthread_mutex_destroy(&id_priv->mut);
	pthread_mutex_destroy(&id_priv->qp_lock);
	free(id_priv);
}

int cma_id_set_device(struct cma_id_private *id_priv, struct cma_device *dev)
{
	struct ibv_pd *pd = NULL;

	if (id_priv->cma_dev == dev) {
		cma_device_put(dev); /* the caller's reference is redundant */
		return 0;
	}
	/*
	 * rdma-core hands every id its device's shared PD as soon as the id
	 * is bound, and programs rely on it: UCX creates its QPs on
	 * id->pd right after route resolution, without rdma_create_qp.
	 */
	if (dev) {
		pd = cma_device_default_pd(dev);
		if (!pd) {
			cma_device_put(dev);
			return cma_err(ENOMEM);
		}
	}
	cma_device_put(id_priv->cma_dev);
	id_priv->cma_dev = dev;
	id_priv->id.verbs = dev ? dev->verbs : NULL;
	if (!id_priv->id.qp && !id_priv->id.srq)
		id_priv->id.pd = pd;
	return 0;
}

void cma_id_wait_locked(struct cma_id_private *id_priv)
{
	if (!id_priv->cond) {
		pthread_cond_t *cond = malloc(sizeof(*cond));

		if (!cond) {
			/* No memory for a condition: poll instead of failing. */
			pthread_mutex_unlock(&id_priv->mut);
			usleep(1000);
			pthread_mutex_lock(&id_priv->mut);
			return;
		}
		pthread_cond_init(cond, NULL);
		id_priv->cond = cond;
	}
	pthread_cond_wait(id_priv->cond, &id_priv->mut);
}

/* Wait until the application has acked @reported events of this id. */
static void cma_id_wait_events(struct cma_id_private *id_priv,
			       uint32_t reported)
{
	pthread_mutex_lock(&id_priv->mut);
	while (id_priv->events_completed < reported || id_priv->lib_events)
		cma_id_wait_locked(id_priv);
	pthread_mutex_unlock(&id_priv->mut);
}

/* Ack the event a synchronous call left in id->event. */
static void cma_id_release_sync_event(struct cma_id_private *id_priv)
{
	if (id_priv->id.event) {
		rdma_ack_cm_event(id_priv->id.event);
		id_priv->id.event = NULL;
	}
}

/*
 * A synchronous call waits for its own completion event; the event stays
 * in id->event (so callers can read private data) until the next call.
 */
int cma_id_wait_sync(struct cma_id_private *id_priv)
{
	struct rdma_cm_event *event;

	cma_id_release_sync_event(id_priv);
	if (rdma_get_cm_event(id_priv->id.channel, &id_priv->id.event))
		return -1;
	event = id_priv->id.event;
	if (!event->status)
		return 0;
	if (event->event == RDMA_CM_EVENT_REJECTED)
		return cma_err(ECONNREFUSED);
	return cma_err(event->status < 0 ? -event->status : event->status);
}

static int cma_create_id_common(struct rdma_event_channel *channel,
				struct rdma_cm_id **id, void *context,
				enum rdma_port_space ps,
				enum ibv_qp_type qp_type)
{
	struct cma_id_private *id_priv;

	id_priv = cma_id_alloc(channel, context, ps, qp_type);
	if (!id_priv)
		return -1;
	if (cma_id_may_defer_kernel(id_priv)) {
		id_priv->kernel_lazy = true;
		id_priv->handle = CMA_NO_KERNEL_ID;
	} else if (cma_id_create_kernel(id_priv)) {
		int err = errno;

		cma_id_free(id_priv);
		return cma_err(err);
	}
	*id = &id_priv->id;
	return 0;
}

CMA_EXPORT int rdma_create_id(struct rdma_event_channel *channel,
			      struct rdma_cm_id **id, void *context,
			      enum rdma_port_space ps)
{
	enum ibv_qp_type qp_type;

	if (!id || cma_ps_qp_type(ps, &qp_type))
		return cma_err(EINVAL);
	if (cma_init())
		return -1;
	return cma_create_id_common(channel, id, context, ps, qp_type);
}

/* rdma_create_ep may ask for a QP type other than the port space's default. */
int cma_create_id_qp_type(struct rdma_event_channel *channel,
			  struct rdma_cm_id **id, void *context,
			  enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	if (cma_init())
		return -1;
	return cma_create_id_common(channel, id, context, ps, qp_type);
}

CMA_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cma_id_private *id_priv = cma_id_priv(id);
	uint32_t reported = 0;

	if (cma_check_id(id))
		return -1;
	cma_mcast_leave_all(id_priv);
	cma_p2p_detach(id_priv); /* the handle no longer changes after this */
	cma_sendto_release(id_priv);
	if (id_priv->handle != CMA_NO_KERNEL_ID &&
	    ucma_cmd_destroy_id(cma_id_fd(id_priv), id_priv->handle, &reported))
		return -1;
	cma_id_release_sync_event(id_priv);
	cma_ai_cancel(id_priv); /* its lookups' events are dropped next */
	cma_channel_drop_events(id_priv);
	cma_id_wait_events(id_priv, id_priv->events_base + reported);
	cma_id_free(id_priv);
	return 0;
}

CMA_EXPORT int rdma_migrate_id(struct rdma_cm_id *id,
			       struct rdma_event_channel *channel)
{
	struct cma_id_private *id_priv = cma_id_priv(id);
	struct rdma_event_channel *old = id ? id->channel : NULL;
	bool sync = !channel;
	uint32_t reported;

	if (cma_check_id(id) || cma_id_kernel(id_priv))
		return -1;
	if (sync) {
		channel = cma_channel_create();
		if (!channel)
			return -1;
	}
	/*
	 * The kernel hands the id's events to the new channel's readers as
	 * soon as the command is done, and reading one issues commands on
	 * id->channel's fd: publish the channel under mut, which the event
	 * path takes before it handles an event (cma_bind_event_subject).
	 */
	/*
	 * The service thread may be handling an event of the id, which uses
	 * id->channel's fd, under the id's qp_lock: change it under that too.
	 */
	pthread_mutex_lock(&id_priv->qp_lock);
	pthread_mutex_lock(&id_priv->mut);
	if (ucma_cmd_migrate_id(cma_channel_kernel_fd(channel), id_priv->handle,
				cma_channel_kernel_fd(old), &reported)) {
		int err = errno;

		pthread_mutex_unlock(&id_priv->mut);
		pthread_mutex_unlock(&id_priv->qp_lock);
		if (sync)
			cma_channel_destroy(channel);
		return cma_err(err);
	}
	id->channel = channel;
	pthread_mutex_unlock(&id_priv->mut);
	pthread_mutex_unlock(&id_priv->qp_lock);
	cma_channel_move_events(id_priv, old);
	if (id_priv->sync) {
		/* The old channel was ours; nobody else can read from it. */
		cma_id_release_sync_event(id_priv);
		cma_channel_destroy(old);
	}
	/* A p2p listener's channel must not wake for what it holds. */
	cma_p2p_listen_may_hold(id_priv);
	pthread_mutex_lock(&id_priv->mut);
	id_priv->sync = sync;
	/*
	 * Every event given to the application is acked; those the service
	 * thread queued and nobody received moved with the id (held).
	 */
	while (id_priv->events_completed + id_priv->events_held <
	       id_priv->events_base + reported)
		cma_id_wait_locked(id_priv);
	pthread_mutex_unlock(&id_priv->mut);
	return 0;
}
