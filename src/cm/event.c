// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Kernel events become rdma_cm_events here, and only here.
 *
 * rdma_get_cm_event() reads one event from the channel, finds the id (or
 * multicast group) the kernel's uid names, and lets the module that owns
 * the event's subject finish the work the CM does on the application's
 * behalf (query the resolved address, move the QP through its states,
 * build the id of a new connection, attach a QP to a group).  When that
 * work fails, the event is turned into the matching error event, so the
 * application always sees one event for each kernel event.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "abi_convert.h"
#include "cma.h"
#include "p2p/p2p_hooks.h"
#include "ucma_abi.h"

static void cma_copy_conn_param(struct cma_event *evt,
				const struct rdma_ucm_conn_param *src)
{
	struct rdma_conn_param *dst = &evt->event.param.conn;
	uint8_t len = src->private_data_len;

	if (len) {
		memcpy(evt->private_data, src->private_data, len);
		dst->private_data = evt->private_data;
		dst->private_data_len = len;
	}
	dst->responder_resources = src->responder_resources;
	dst->initiator_depth = src->initiator_depth;
	dst->flow_control = src->flow_control;
	dst->retry_count = src->retry_count;
	dst->rnr_retry_count = src->rnr_retry_count;
	dst->srq = src->srq;
	dst->qp_num = src->qp_num;
}

static void cma_copy_ud_param(struct cma_event *evt,
			      const struct rdma_ucm_ud_param *src)
{
	struct rdma_ud_param *dst = &evt->event.param.ud;
	uint8_t len = src->private_data_len;

	if (len) {
		memcpy(evt->private_data, src->private_data, len);
		dst->private_data = evt->private_data;
		dst->private_data_len = len;
	}
	cma_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	dst->qp_num = src->qp_num;
	dst->qkey = src->qkey;
}

/* Datagram ids report UD parameters; connected ones, connection ones. */
void cma_event_copy_param(struct cma_event *evt,
			  const struct cma_id_private *id_priv,
			  const struct rdma_ucm_event_resp *resp)
{
	if (id_priv->id.qp_type == IBV_QPT_UD)
		cma_copy_ud_param(evt, &resp->param.ud);
	else
		cma_copy_conn_param(evt, &resp->param.conn);
}

static void cma_event_fail(struct cma_event *evt, enum rdma_cm_event_type type,
			   int err)
{
	evt->event.event = type;
	evt->event.status = -err;
}

enum cma_event_verdict {
	CMA_EVENT_DELIVER,
	CMA_EVENT_DROP, /* consumed by the library; read the next one */
};

static enum cma_event_verdict
cma_handle_conn_req(struct cma_event *evt,
		    const struct rdma_ucm_event_resp *resp)
{
	struct cma_id_private *listen_priv = evt->id_priv;
	enum cma_p2p_verdict p2p;
	uint32_t ignored;

	/* Born in a file the channel had before a credential change? */
	cma_channel_adopt_request(listen_priv->id.channel, resp->id);
	p2p = cma_p2p_conn_req(listen_priv, resp);

	if (p2p == CMA_P2P_TAKEN)
		return CMA_EVENT_DROP; /* held, adopted or refused by p2p.c */
	evt->event.listen_id = &listen_priv->id;
	if (!cma_process_conn_req(evt, listen_priv, resp->id, resp)) {
		if (p2p == CMA_P2P_SURFACE)
			cma_p2p_surfaced(evt);
		return CMA_EVENT_DELIVER;
	}

	/*
	 * The new connection cannot be represented (no memory, device gone):
	 * refuse it so the peer hears a reject, and hide it from the
	 * application, which never saw an id for it.
	 */
	ucma_cmd_reject(cma_id_fd(listen_priv), resp->id, NULL, 0, 0);
	ucma_cmd_destroy_id(cma_id_fd(listen_priv), resp->id, &ignored);
	return CMA_EVENT_DROP;
}

/*
 * RDMA_OPTION_ID_INITIATOR from ESTABLISHED on: whether this end's request
 * formed the connection (not an accepted or a p2p-adopted request:
 * @adopted, from cma_p2p_filter_event).
 */
static void cma_note_initiator(struct cma_id_private *id_priv, bool adopted)
{
	pthread_mutex_lock(&id_priv->mut);
	id_priv->initiator = !id_priv->passive && !adopted;
	pthread_mutex_unlock(&id_priv->mut);
}

static void cma_handle_conn_resp(struct cma_event *evt,
				 struct cma_id_private *id_priv,
				 const struct rdma_ucm_event_resp *resp,
				 bool adopted)
{
	int err;

	cma_copy_conn_param(evt, &resp->param.conn);
	cma_note_initiator(id_priv, adopted);
	if (cma_store_remote_ece(id_priv, resp->ece.vendor_id,
				 resp->ece.attr_mod))
		goto fail;
	if (!cma_id_qp(id_priv))
		return; /* the application finishes with rdma_establish() */
	if (cma_process_conn_resp(id_priv, &evt->psns))
		goto fail;
	evt->event.event = RDMA_CM_EVENT_ESTABLISHED;
	cma_p2p_conn_resp(evt, id_priv);
	return;
fail:
	err = errno;
	cma_qp_to_err(id_priv);
	ucma_cmd_reject(cma_id_fd(id_priv), id_priv->handle, NULL, 0, 0);
	cma_event_fail(evt, RDMA_CM_EVENT_CONNECT_ERROR, err);
	id_priv->connect_error = true;
	cma_p2p_conn_resp_failed(id_priv);
}

/*
 * p2p mode sees each kernel event once before the core handles it: a
 * listener's request (cma_handle_conn_req), or any other event of an id
 * (cma_p2p_filter_event); and once after, where it changes the event the
 * application gets (a surfaced request, the answer to a p2p connect).
 */
static enum cma_event_verdict
cma_handle_event(struct cma_event *evt, const struct rdma_ucm_event_resp *resp)
{
	struct cma_id_private *id_priv = evt->id_priv;
	enum cma_p2p_verdict p2p;

	if (resp->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return cma_handle_conn_req(evt, resp);
	p2p = cma_p2p_filter_event(evt, resp);
	if (p2p == CMA_P2P_TAKEN)
		return CMA_EVENT_DROP;
	switch (resp->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (!cma_p2p_addr_preset(id_priv) &&
		    cma_query_addr_info(id_priv))
			cma_event_fail(evt, RDMA_CM_EVENT_ADDR_ERROR, errno);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (cma_query_route_info(id_priv))
			cma_event_fail(evt, RDMA_CM_EVENT_ROUTE_ERROR, errno);
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		cma_handle_conn_resp(evt, id_priv, resp,
				     p2p == CMA_P2P_ADOPTED);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		cma_event_copy_param(evt, id_priv, resp);
		cma_p2p_established(evt, id_priv);
		cma_note_initiator(id_priv, p2p == CMA_P2P_ADOPTED);
		if (id_priv->id.qp_type == IBV_QPT_UD)
			cma_sendto_set_peer(id_priv, &evt->event.param.ud);
		break;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_DISCONNECTED:
		/*
		 * After the library turned a failed CONNECT_RESPONSE into
		 * CONNECT_ERROR, the peer's answer to our reject is noise:
		 * the application already has its one failure event.
		 */
		if (id_priv->connect_error)
			return CMA_EVENT_DROP;
		/* fall through */
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		cma_event_copy_param(evt, id_priv, resp);
		/*
		 * A connection that never formed: its QP must stop using it.
		 * On DISCONNECTED the QP is left to rdma_disconnect, as
		 * rdma-core does, so the application flushes it when done.
		 */
		if (resp->event != RDMA_CM_EVENT_DISCONNECTED &&
		    id_priv->id.qp_type != IBV_QPT_UD)
			cma_qp_to_err(id_priv);
		break;
	case RDMA_CM_EVENT_MULTICAST_JOIN:
		cma_copy_ud_param(evt, &resp->param.ud);
		evt->event.param.ud.private_data = evt->mc->context;
		if (cma_process_join(evt))
			cma_event_fail(evt, RDMA_CM_EVENT_MULTICAST_ERROR,
				       errno);
		break;
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		evt->event.param.ud.private_data = evt->mc->context;
		cma_process_join_error(evt);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (id_priv->cma_dev)
			cma_device_mark_removed(id_priv->cma_dev);
		break;
	default:
		cma_copy_conn_param(evt, &resp->param.conn);
		break;
	}
	return CMA_EVENT_DELIVER;
}

/*
 * The kernel echoes the uid we gave it: the id for id events, the group
 * for multicast events.  Both are our own pointers.
 */
static void cma_bind_event_subject(struct cma_event *evt,
				   const struct rdma_ucm_event_resp *resp)
{
	if (resp->event == RDMA_CM_EVENT_MULTICAST_JOIN ||
	    resp->event == RDMA_CM_EVENT_MULTICAST_ERROR) {
		evt->mc = (struct cma_multicast *)(uintptr_t)resp->uid;
		evt->id_priv = evt->mc->id_priv;
	} else {
		evt->id_priv = (struct cma_id_private *)(uintptr_t)resp->uid;
	}
	cma_tsan_acquire(evt->id_priv); /* see cma_tsan_release */
	/* A migration that moved this event here has set id->channel. */
	pthread_mutex_lock(&evt->id_priv->mut);
	pthread_mutex_unlock(&evt->id_priv->mut);
	evt->event.id = &evt->id_priv->id;
}

/*
 * Count an event as acked.  The kernel counts a multicast event both for
 * its group and for the group's id, so both counters move.
 */
void cma_event_complete(struct cma_event *evt)
{
	struct cma_id_private *id_priv = evt->id_priv;

	pthread_mutex_lock(&id_priv->mut);
	if (evt->mc) {
		evt->mc->events_completed++;
		pthread_cond_broadcast(&evt->mc->cond);
	}
	id_priv->events_completed++;
	cma_id_wake_locked(id_priv);
	pthread_mutex_unlock(&id_priv->mut);
}

/*
 * A kernel event the application will never get (its id or group is
 * going away): count it as acked.  A request's new id, which nobody will
 * accept or destroy, is destroyed (the kernel rejects the request).
 * Called with no lock held.
 */
void cma_event_discard(struct cma_event *evt)
{
	struct rdma_cm_id *child = NULL;

	if (evt->event.event == RDMA_CM_EVENT_CONNECT_REQUEST &&
	    evt->event.listen_id && evt->event.id != evt->event.listen_id)
		child = evt->event.id;
	cma_event_complete(evt);
	free(evt);
	if (child)
		rdma_destroy_id(child);
}

/* Give one kernel event its id and let the library handle it. */
static enum cma_event_verdict
cma_event_from_kernel(struct cma_event *evt,
		      const struct rdma_ucm_event_resp *resp)
{
	enum cma_event_verdict verdict;

	cma_fault_delay();
	evt->event.event = (enum rdma_cm_event_type)resp->event;
	evt->event.status = (int)resp->status;
	cma_bind_event_subject(evt, resp);
	/* The QP the event moves stays (rdma_destroy_qp waits). */
	pthread_mutex_lock(&evt->id_priv->qp_lock);
	verdict = cma_handle_event(evt, resp);
	pthread_mutex_unlock(&evt->id_priv->qp_lock);
	return verdict;
}

/*
 * The service thread (timer.c): a served channel's kernel fd is readable.
 * Handle what is there, as rdma_get_cm_event would, and queue what is for
 * the application; what the library consumed never wakes it.  A batch at
 * a time, so that one busy channel does not starve the others.
 */
bool cma_event_serve(struct rdma_event_channel *channel)
{
	struct rdma_ucm_event_resp resp;
	struct cma_event *evt;
	bool keep;
	int i;

	for (i = 0; i < 16; i++) {
		/*
		 * An application thread blocked in rdma_get_cm_event reads
		 * the fd itself, without a hop through this thread; it arms
		 * the fd for this thread again when it stops waiting.
		 */
		if (cma_channel_has_waiter(channel))
			return false;
		evt = cma_zalloc(sizeof(*evt));
		if (!evt)
			return true; /* the fd stays readable: tried again */
		cma_channel_reader_lock(channel);
		if (cma_channel_read_kernel(channel, &resp)) {
			cma_channel_reader_unlock(channel);
			free(evt);
			return true;
		}
		keep = cma_event_from_kernel(evt, &resp) == CMA_EVENT_DELIVER;
		if (keep && cma_channel_admit(evt))
			evt = NULL;
		cma_channel_reader_unlock(channel);
		if (!evt)
			continue;
		if (keep) {
			cma_event_discard(evt); /* its id is being destroyed */
		} else {
			cma_event_complete(evt);
			free(evt);
		}
	}
	return true;
}

/*
 * An application channel: whoever reads the kernel fd (this thread or
 * the service thread) holds the channel's reader lock from the read to
 * the event's delivery or queueing, so events keep the kernel's order.
 * Queued events come first; the wait is outside the lock.
 */
static int cma_get_pollable_once(struct rdma_event_channel *channel,
				 struct cma_event **out, bool *waiting)
{
	struct rdma_ucm_event_resp resp;
	struct cma_event *evt;
	int err;

	for (;;) {
		cma_channel_reader_lock(channel);
		evt = cma_channel_pop_event(channel);
		if (evt) {
			cma_channel_reader_unlock(channel);
			*out = evt;
			return 0;
		}
		/* Before the read: a kernel event read is never lost. */
		evt = cma_zalloc(sizeof(*evt));
		if (!evt) {
			cma_channel_reader_unlock(channel);
			return cma_err(ENOMEM);
		}
		if (cma_channel_read_kernel(channel, &resp)) {
			err = errno;
			cma_channel_reader_unlock(channel);
			free(evt);
			if (err != EAGAIN)
				return cma_err(err);
			if (cma_channel_wait_ready(channel, waiting))
				return -1;
			continue;
		}
		if (cma_event_from_kernel(evt, &resp) == CMA_EVENT_DELIVER) {
			cma_channel_reader_unlock(channel);
			*out = evt;
			return 0;
		}
		/*
		 * The library held or refused a request: this process takes
		 * part in p2p, and a channel that may hold one must stop
		 * waking its application for them (channel.c).
		 */
		if (resp.event == RDMA_CM_EVENT_CONNECT_REQUEST)
			cma_channel_serve_all();
		cma_channel_reader_unlock(channel);
		cma_event_complete(evt);
		free(evt);
	}
}

static int cma_get_pollable(struct rdma_event_channel *channel,
			    struct cma_event **out)
{
	bool waiting = false;
	int ret, err;

	ret = cma_get_pollable_once(channel, out, &waiting);
	if (waiting) {
		err = errno;
		cma_channel_waiter_leave(channel);
		errno = err;
	}
	return ret;
}

/*
 * A private channel (synchronous ids, rsockets): its one reader at a
 * time holds the reader lock from the read to the event's handling, for
 * creds.c (an rsocket's channel never blocks in the read).
 */
static int cma_get_private(struct rdma_event_channel *channel,
			   struct cma_event **out)
{
	struct rdma_ucm_event_resp resp;
	struct cma_event *evt, *lib;
	enum cma_event_verdict verdict;

	evt = malloc(sizeof(*evt));
	if (!evt)
		return cma_err(ENOMEM);
	for (;;) {
		memset(evt, 0, sizeof(*evt));
		cma_channel_reader_lock(channel);
		if (cma_channel_next(channel, &resp, &lib)) {
			int err = errno;

			cma_channel_reader_unlock(channel);
			free(evt);
			return cma_err(err);
		}
		if (lib) {
			cma_channel_reader_unlock(channel);
			free(evt);
			*out = lib;
			return 0;
		}
		verdict = cma_event_from_kernel(evt, &resp);
		cma_channel_reader_unlock(channel);
		if (verdict == CMA_EVENT_DELIVER)
			break;
		cma_event_complete(evt);
	}
	*out = evt;
	return 0;
}

CMA_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel,
				 struct rdma_cm_event **event)
{
	struct cma_event *evt;
	int ret;

	if (!channel || !event)
		return cma_err(EINVAL);
	if (cma_channel_pollable(channel))
		ret = cma_get_pollable(channel, &evt);
	else
		ret = cma_get_private(channel, &evt);
	if (ret)
		return -1;
	*event = &evt->event;
	return 0;
}

CMA_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cma_event *evt = (struct cma_event *)event;

	if (!event)
		return cma_err(EINVAL);
	if (evt->lib)
		cma_event_release_lib(evt);
	else
		cma_event_complete(evt);
	free(evt);
	return 0;
}

CMA_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] =
			"RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] =
			"RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] =
			"RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
		[RDMA_CM_EVENT_ADDRINFO_RESOLVED] =
			"RDMA_CM_EVENT_ADDRINFO_RESOLVED",
		[RDMA_CM_EVENT_ADDRINFO_ERROR] = "RDMA_CM_EVENT_ADDRINFO_ERROR",
		[RDMA_CM_EVENT_USER] = "RDMA_CM_EVENT_USER",
		[RDMA_CM_EVENT_INTERNAL] = "RDMA_CM_EVENT_INTERNAL",
	};
	unsigned int i = (unsigned int)event;

	if (i < sizeof(names) / sizeof(names[0]) && names[i])
		return names[i];
	return "UNKNOWN EVENT";
}

/*
 * Linux 6.1, the kernel the project tests on, has no command to inject an
 * event into a channel, so the library queues it itself: it reaches the
 * id's channel like any other event (a poller of channel->fd wakes up),
 * which is what the call is for, waking an event loop from another thread.
 * Only RDMA_CM_EVENT_USER may be written, as in rdma-core: a forged
 * ESTABLISHED or DISCONNECTED would lie about the connection's state.
 */
CMA_EXPORT int rdma_write_cm_event(struct rdma_cm_id *id,
				   enum rdma_cm_event_type event, int status,
				   uint64_t arg)
{
	struct cma_event *evt;

	if (cma_check_id(id))
		return -1;
	if (event != RDMA_CM_EVENT_USER)
		return cma_err(EINVAL);
	evt = cma_event_new(cma_id_priv(id), event, status);
	if (!evt)
		return -1;
	evt->event.param.arg = arg;
	cma_event_post(evt);
	return 0;
}
