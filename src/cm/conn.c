// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Connection establishment and teardown: the calls that set one up
 * (rdma_resolve_addr and rdma_resolve_route, whose kernel side is addr.c's,
 * connect, listen, accept), reject, disconnect, and the ECE (enhanced
 * connection establishment) options.  Every call peer-to-peer mode
 * changes is here (p2p/p2p_hooks.h).
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "abi_convert.h"
#include "cma.h"
#include "p2p/p2p_hooks.h"
#include "ucma_abi.h"

static uint8_t cma_min_u8(uint8_t a, uint8_t b)
{
	return a < b ? a : b;
}

/*
 * A connected id needs either a QP of its own or a qp_num from the caller;
 * depths beyond what the device supports are refused, RDMA_MAX_* aside.
 */
static int cma_check_conn_param(struct cma_id_private *id_priv,
				const struct rdma_conn_param *param)
{
	struct cma_device *dev = id_priv->cma_dev;

	if (param && param->private_data_len && !param->private_data)
		return cma_err(EINVAL);
	if (id_priv->id.qp_type == IBV_QPT_UD)
		return 0;
	if (!id_priv->id.qp && !param)
		return cma_err(EINVAL);
	if (!param || dev->is_iwarp)
		return 0;
	if (param->responder_resources != RDMA_MAX_RESP_RES &&
	    param->responder_resources > dev->max_responder_resources)
		return cma_err(EINVAL);
	if (param->initiator_depth != RDMA_MAX_INIT_DEPTH &&
	    param->initiator_depth > dev->max_initiator_depth)
		return cma_err(EINVAL);
	return 0;
}

/* Fold the caller's depths into the id's (RDMA_MAX_* keeps the id's). */
static void cma_set_depths(struct cma_id_private *id_priv,
			   const struct rdma_conn_param *param)
{
	if (!param)
		return;
	if (param->initiator_depth != RDMA_MAX_INIT_DEPTH)
		id_priv->initiator_depth = param->initiator_depth;
	if (param->responder_resources != RDMA_MAX_RESP_RES)
		id_priv->responder_resources = param->responder_resources;
}

static void cma_build_kern_param(struct cma_id_private *id_priv,
				 const struct rdma_conn_param *param,
				 struct rdma_ucm_conn_param *kparam)
{
	struct rdma_cm_id *id = &id_priv->id;
	uint32_t qp_num = id->qp ? id->qp->qp_num : (param ? param->qp_num : 0);
	uint8_t srq = id->qp ? (id->srq != NULL) : (param ? param->srq : 0);

	cma_conn_param_to_kern(kparam, param, qp_num, srq,
			       id_priv->responder_resources,
			       id_priv->initiator_depth);
	if (id->qp_type == IBV_QPT_UD)
		kparam->qkey = RDMA_UDP_QKEY;
}

static void cma_ece_to_kern(const struct cma_id_private *id_priv,
			    struct rdma_ucm_ece *ece)
{
	const struct cma_ece_pair *pair = id_priv->ece;

	ece->vendor_id = pair ? pair->local.vendor_id : 0;
	ece->attr_mod = pair ? pair->local.options : 0;
}

/* The id's ECE block, made on first use; NULL/ENOMEM. */
static struct cma_ece_pair *cma_ece_of(struct cma_id_private *id_priv)
{
	if (!id_priv->ece) {
		id_priv->ece = calloc(1, sizeof(*id_priv->ece));
		if (!id_priv->ece)
			cma_err(ENOMEM);
	}
	return id_priv->ece;
}

int cma_store_remote_ece(struct cma_id_private *id_priv, uint32_t vendor_id,
			 uint32_t options)
{
	struct cma_ece_pair *pair;

	if (!vendor_id && !options && !id_priv->ece)
		return 0;
	pair = cma_ece_of(id_priv);
	if (!pair)
		return -1;
	pair->remote.vendor_id = vendor_id;
	pair->remote.options = options;
	return 0;
}

/*
 * What the kernel carries for @msg.  Over iWARP only the length byte
 * bounds it.  The IB CM (InfiniBand and RoCE) sends fixed-size messages,
 * and in a request the kernel puts its own 36-byte header (the IP
 * addresses and port) before the caller's data unless the id is AF_IB:
 * the limits rdma_connect(3) and rdma_accept(3) give.
 */
#define CMA_IB_CM_IP_HDR 36

static size_t cma_priv_room(const struct cma_id_private *id_priv,
			    enum cma_priv_msg msg)
{
	bool ud = id_priv->id.qp_type == IBV_QPT_UD;
	bool af_ib = id_priv->id.route.addr.src_addr.sa_family == AF_IB;

	if (!id_priv->cma_dev || id_priv->cma_dev->is_iwarp)
		return CMA_PRIV_DATA_MAX;
	switch (msg) {
	case CMA_PRIV_REQ:
		return (ud ? 216 : 92) - (af_ib ? 0 : CMA_IB_CM_IP_HDR);
	case CMA_PRIV_REP:
		return ud ? 136 : 196;
	case CMA_PRIV_REJ:
		return ud ? 136 : 148;
	}
	return CMA_PRIV_DATA_MAX;
}

int cma_check_priv_len(const struct cma_id_private *id_priv, size_t len,
		       enum cma_priv_msg msg)
{
	/* Past 255 the length byte would wrap and the peer get nothing. */
	if (len > CMA_PRIV_DATA_MAX || len > cma_priv_room(id_priv, msg))
		return cma_err(EINVAL);
	return 0;
}

static size_t cma_param_len(const struct rdma_conn_param *param)
{
	return param ? param->private_data_len : 0;
}

/*
 * Connection data from rdma_create_ep's ai_connect goes first, the
 * caller's private data after it; together they must fit one message.
 */
static int cma_prepend_connect_data(const struct cma_id_private *id_priv,
				    struct rdma_ucm_conn_param *kparam)
{
	size_t n = id_priv->connect_len;

	if (!n)
		return 0;
	/* cma_connect checked the total against cma_check_priv_len. */
	memmove(kparam->private_data + n, kparam->private_data,
		kparam->private_data_len);
	memcpy(kparam->private_data, cma_id_rare_of(id_priv)->connect_data, n);
	kparam->private_data_len = (uint8_t)(kparam->private_data_len + n);
	return 0;
}

/*
 * The active side's first calls.  p2p mode may answer them itself (an id
 * whose route is left until a REQ needs it: p2p_resolve.c); else the
 * kernel resolves, with ACM's help when it is on (addr.c).
 */
CMA_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id,
				 struct sockaddr *src_addr,
				 struct sockaddr *dst_addr, int timeout_ms)
{
	struct cma_id_private *id_priv = cma_id_priv(id);
	socklen_t dst_len = cma_addr_len(dst_addr);
	socklen_t src_len = cma_addr_len(src_addr);
	int ret;

	if (cma_check_id(id))
		return -1;
	if (!dst_len)
		return cma_err(dst_addr ? EAFNOSUPPORT : EINVAL);
	if (src_addr && src_addr->sa_family && !src_len)
		return cma_err(EAFNOSUPPORT);
	if (timeout_ms < 0)
		return cma_err(EINVAL);
	ret = cma_p2p_resolve_addr(id_priv, src_len ? src_addr : NULL, dst_addr,
				   dst_len, timeout_ms);
	if (ret)
		return ret < 0 ? -1 : 0;
	if (cma_resolve_addr_kernel(id_priv, src_addr, src_len, dst_addr,
				    dst_len, (uint32_t)timeout_ms)) {
		cma_p2p_preset_undo(id_priv);
		return -1;
	}
	return id_priv->sync ? cma_id_wait_sync(id_priv) : 0;
}

CMA_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cma_id_private *id_priv = cma_id_priv(id);
	int ret;

	if (cma_check_id(id))
		return -1;
	if (timeout_ms < 0)
		return cma_err(EINVAL);
	ret = cma_p2p_resolve_route(id_priv, timeout_ms);
	if (ret)
		return ret < 0 ? -1 : 0;
	if (cma_resolve_route_kernel(id_priv, (uint32_t)timeout_ms))
		return -1;
	return id_priv->sync ? cma_id_wait_sync(id_priv) : 0;
}

static int cma_connect(struct rdma_cm_id *id,
		       const struct rdma_conn_param *conn_param, bool p2p)
{
	struct cma_id_private *id_priv = cma_id_priv(id);
	struct rdma_ucm_conn_param kparam;
	struct rdma_ucm_ece ece;
	int ret;

	if (cma_check_id(id))
		return -1;
	if (!id_priv->cma_dev)
		return cma_err(EINVAL); /* route not resolved */
	/* Left until a p2p REQ needs it: nothing else can use it. */
	if (!p2p && cma_p2p_route_deferred(id_priv))
		return cma_err(EINVAL);
	if (cma_check_ud_transport(id_priv))
		return -1;
	if (cma_check_conn_param(id_priv, conn_param))
		return -1;
	if (cma_check_priv_len(
		    id_priv,
		    cma_param_len(conn_param) + id_priv->connect_len +
			    (p2p ? cma_p2p_connect_hdr_len(id_priv) : 0),
		    CMA_PRIV_REQ))
		return -1;
	id_priv->initiator_depth = id_priv->cma_dev->max_initiator_depth;
	id_priv->responder_resources =
		id_priv->cma_dev->max_responder_resources;
	cma_set_depths(id_priv, conn_param);
	cma_build_kern_param(id_priv, conn_param, &kparam);
	if (cma_prepend_connect_data(id_priv, &kparam))
		return -1;
	cma_ece_to_kern(id_priv, &ece);
	if (p2p && id->qp_type != IBV_QPT_UD) {
		/* Its channel may see requests and replies the library eats. */
		cma_channel_serve_all();
		cma_channel_may_hold(id->channel);
		ret = cma_p2p_connect(id_priv, &kparam, &ece);
	} else {
		ret = cma_id_kernel(id_priv);
		if (!ret)
			ret = ucma_cmd_connect(cma_id_fd(id_priv),
					       id_priv->handle, &kparam, &ece);
		/* A p2p connect marks it under the id's qp_lock itself. */
		if (!ret)
			id_priv->cm_started = true;
	}
	if (ret)
		return -1;
	return id_priv->sync ? cma_id_wait_sync(id_priv) : 0;
}

/*
 * Two versions of each call that reads a struct rdma_conn_param.  The
 * RDMACM_1.0 ones serve binaries built against rdma-core's header, where
 * peer2peer_mode's byte is padding and may hold anything: they ignore it.
 * Programs built against this library's header bind to the
 * RDMACM_FORK_1.0 ones, which honour it.  RDMA_CM_PEER2PEER=1 turns p2p
 * mode on for both.
 */
static bool cma_param_p2p(const struct rdma_conn_param *conn_param)
{
	return cma_p2p_env() || (conn_param && conn_param->peer2peer_mode);
}

CMA_EXPORT int cma_connect_v1_0(struct rdma_cm_id *id,
				struct rdma_conn_param *conn_param);
CMA_EXPORT int cma_connect_v1_0(struct rdma_cm_id *id,
				struct rdma_conn_param *conn_param)
{
	return cma_connect(id, conn_param, cma_p2p_env());
}
__asm__(".symver cma_connect_v1_0, rdma_connect@RDMACM_1.0");

CMA_EXPORT int cma_connect_fork(struct rdma_cm_id *id,
				struct rdma_conn_param *conn_param);
CMA_EXPORT int cma_connect_fork(struct rdma_cm_id *id,
				struct rdma_conn_param *conn_param)
{
	return cma_connect(id, conn_param, cma_param_p2p(conn_param));
}
__asm__(".symver cma_connect_fork, rdma_connect@@RDMACM_FORK_1.0");

CMA_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cma_id_private *id_priv = cma_id_priv(id);
	bool known, early;

	if (cma_check_id(id) || cma_check_ud_transport(id_priv) ||
	    cma_id_kernel(id_priv))
		return -1;
	if (backlog < 0)
		backlog = 0;
	/*
	 * A bound listener's p2p record exists before the kernel listens:
	 * another thread may read a request the moment the listen is done,
	 * and without the record a p2p listener would report a p2p request
	 * (found by stress_cm_test p2p_churn).  An unbound one gets its port
	 * from the listen, so nobody can have sent it a request before.
	 */
	known = cma_p2p_listening(id_priv);
	early = rdma_get_src_port(id) != 0;
	if (early) {
		cma_p2p_listen(id_priv);
		cma_p2p_listen_may_hold(id_priv);
	}
	if (ucma_cmd_listen(cma_id_fd(id_priv), id_priv->handle,
			    (uint32_t)backlog)) {
		int err = errno;

		if (early && !known)
			cma_p2p_unlisten(id_priv);
		return cma_err(err);
	}
	if (!early) {
		cma_p2p_listen(id_priv);
		cma_p2p_listen_may_hold(id_priv);
	}
	return 0;
}

/*
 * Build the id of an incoming connection.  It lives on the listener's
 * channel; a synchronous listener's children get a private channel, so
 * that their calls block on their own events.
 */
int cma_process_conn_req(struct cma_event *evt,
			 struct cma_id_private *listen_priv, uint32_t handle,
			 const struct rdma_ucm_event_resp *resp)
{
	struct rdma_cm_id *listen = &listen_priv->id;
	struct cma_id_private *id_priv;
	struct cma_device *dev;
	int err;

	id_priv = cma_id_alloc(listen->channel, listen->context, listen->ps,
			       listen->qp_type);
	if (!id_priv)
		return -1;
	id_priv->handle = handle;
	id_priv->cm_started = true;
	id_priv->passive = true;
	if (cma_query_route_info(id_priv))
		goto fail;
	dev = id_priv->cma_dev;
	if (!dev) {
		errno = ENODEV;
		goto fail;
	}
	if (listen_priv->sync && rdma_migrate_id(&id_priv->id, NULL))
		goto fail;

	cma_event_copy_param(evt, id_priv, resp);
	if (id_priv->id.qp_type != IBV_QPT_UD) {
		const struct rdma_conn_param *p = &evt->event.param.conn;

		/* The kernel reports the depths from our side's view. */
		id_priv->responder_resources = cma_min_u8(
			p->responder_resources, dev->max_responder_resources);
		id_priv->initiator_depth = cma_min_u8(p->initiator_depth,
						      dev->max_initiator_depth);
	}
	if (cma_store_remote_ece(id_priv, resp->ece.vendor_id,
				 resp->ece.attr_mod))
		goto fail;
	evt->event.id = &id_priv->id;
	return 0;
fail:
	err = errno;
	cma_id_free(id_priv);
	return cma_err(err);
}

/* Send the RTU that completes an active-side connection. */
static int cma_send_rtu(struct cma_id_private *id_priv)
{
	return ucma_cmd_accept(cma_id_fd(id_priv), id_priv->handle,
			       (uint64_t)(uintptr_t)id_priv, NULL, NULL);
}

int cma_process_conn_resp(struct cma_id_private *id_priv,
			  const struct cma_qp_psns *psns)
{
	struct cma_qp_psns set = psns ? *psns : (struct cma_qp_psns){0};

	if (cma_qp_to_rtr(id_priv, RDMA_MAX_RESP_RES, &set))
		return -1;
	if (cma_qp_to_rts(id_priv, RDMA_MAX_INIT_DEPTH, &set))
		return -1;
	return cma_send_rtu(id_priv);
}

CMA_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	if (cma_check_id(id))
		return -1;
	if (id->qp)
		return cma_err(EINVAL); /* the library already did it */
	return cma_send_rtu(cma_id_priv(id));
}

CMA_EXPORT int rdma_get_request(struct rdma_cm_id *listen,
				struct rdma_cm_id **id)
{
	struct cma_id_private *listen_priv = cma_id_priv(listen);
	struct rdma_cm_event *event;
	struct cma_id_rare *rare;
	struct rdma_cm_id *new_id;
	int err;

	if (cma_check_id(listen) || !id)
		return cma_err(EINVAL);
	if (!listen_priv->sync)
		return cma_err(
			EINVAL); /* asynchronous ids read their channel */
	if (rdma_get_cm_event(listen->channel, &event))
		return -1;
	if (event->status) {
		err = event->status < 0 ? -event->status : event->status;
		rdma_ack_cm_event(event);
		return cma_err(err);
	}
	if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		rdma_ack_cm_event(event);
		return cma_err(EINVAL);
	}
	new_id = event->id;
	rare = cma_id_rare_of(listen_priv);
	if (rare && rare->ep_listen &&
	    cma_create_ep_qp(cma_id_priv(new_id), rare->ep_listen->pd,
			     &rare->ep_listen->attr)) {
		err = errno;
		rdma_reject(new_id, NULL, 0);
		rdma_ack_cm_event(event);
		rdma_destroy_id(new_id);
		return cma_err(err);
	}
	new_id->event = event;
	*id = new_id;
	return 0;
}

static int cma_accept(struct rdma_cm_id *id,
		      const struct rdma_conn_param *conn_param, bool p2p)
{
	struct cma_id_private *id_priv = cma_id_priv(id);
	struct rdma_ucm_conn_param kparam;
	struct rdma_ucm_ece ece;

	if (cma_check_id(id))
		return -1;
	if (!id_priv->cma_dev)
		return cma_err(EINVAL);
	if (cma_check_ud_transport(id_priv))
		return -1;
	if (cma_check_conn_param(id_priv, conn_param))
		return -1;
	if (cma_check_priv_len(
		    id_priv,
		    cma_param_len(conn_param) +
			    (p2p ? cma_p2p_accept_hdr_len(id_priv) : 0),
		    CMA_PRIV_REP))
		return -1;
	cma_set_depths(id_priv, conn_param);
	if (id->qp && id->qp_type != IBV_QPT_UD &&
	    !id_priv->cma_dev->is_iwarp) {
		if (cma_qp_to_rtr(id_priv, id_priv->responder_resources,
				  NULL) ||
		    cma_qp_to_rts(id_priv, id_priv->initiator_depth, NULL)) {
			int err = errno;

			cma_qp_to_err(id_priv);
			return cma_err(err);
		}
	}
	cma_build_kern_param(id_priv, conn_param, &kparam);
	if (p2p && cma_p2p_accept(id_priv, &kparam)) {
		int err = errno;

		cma_qp_to_err(id_priv);
		return cma_err(err);
	}
	cma_ece_to_kern(id_priv, &ece);
	if (cma_id_kernel(id_priv) ||
	    ucma_cmd_accept(cma_id_fd(id_priv), id_priv->handle,
			    (uint64_t)(uintptr_t)id_priv, &kparam, &ece)) {
		int err = errno;

		cma_qp_to_err(id_priv);
		return cma_err(err);
	}
	/* A datagram accept (SIDR reply) completes with no event. */
	if (!id_priv->sync || id->qp_type == IBV_QPT_UD)
		return 0;
	return cma_id_wait_sync(id_priv);
}

CMA_EXPORT int cma_accept_v1_0(struct rdma_cm_id *id,
			       struct rdma_conn_param *conn_param);
CMA_EXPORT int cma_accept_v1_0(struct rdma_cm_id *id,
			       struct rdma_conn_param *conn_param)
{
	return cma_accept(id, conn_param, cma_p2p_env());
}
__asm__(".symver cma_accept_v1_0, rdma_accept@RDMACM_1.0");

CMA_EXPORT int cma_accept_fork(struct rdma_cm_id *id,
			       struct rdma_conn_param *conn_param);
CMA_EXPORT int cma_accept_fork(struct rdma_cm_id *id,
			       struct rdma_conn_param *conn_param)
{
	return cma_accept(id, conn_param, cma_param_p2p(conn_param));
}
__asm__(".symver cma_accept_fork, rdma_accept@@RDMACM_FORK_1.0");

static int cma_reject(struct rdma_cm_id *id, const void *private_data,
		      uint8_t private_data_len, uint8_t reason)
{
	struct cma_id_private *id_priv = cma_id_priv(id);

	if (cma_check_id(id))
		return -1;
	if (private_data_len && !private_data)
		return cma_err(EINVAL);
	if (cma_check_priv_len(id_priv, private_data_len, CMA_PRIV_REJ) ||
	    cma_id_kernel(id_priv))
		return -1;
	return ucma_cmd_reject(cma_id_fd(id_priv), id_priv->handle,
			       private_data, private_data_len, reason);
}

CMA_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			   uint8_t private_data_len)
{
	return cma_reject(id, private_data, private_data_len, 0);
}

CMA_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			       uint8_t private_data_len)
{
	return cma_reject(id, private_data, private_data_len,
			  UCMA_REJ_VENDOR_OPTION_NOT_SUPPORTED);
}

CMA_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct cma_id_private *id_priv = cma_id_priv(id);

	if (cma_check_id(id) || cma_id_kernel(id_priv))
		return -1;
	return ucma_cmd_notify(cma_id_fd(id_priv), id_priv->handle,
			       (uint32_t)event);
}

CMA_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cma_id_private *id_priv = cma_id_priv(id);
	int ret;

	if (cma_check_id(id))
		return -1;
	/* Flush the QP first so no work completes after the disconnect. */
	if (id_priv->cma_dev && id_priv->cma_dev->is_iwarp)
		ret = cma_qp_to_sqd(id_priv);
	else
		ret = cma_qp_to_err(id_priv);
	if (ret)
		return -1;
	if (cma_id_kernel(id_priv) ||
	    ucma_cmd_disconnect(cma_id_fd(id_priv), id_priv->handle))
		return -1;
	return id_priv->sync ? cma_id_wait_sync(id_priv) : 0;
}

CMA_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	struct cma_ece_pair *pair;

	if (cma_check_id(id) || !ece || ece->comp_mask)
		return cma_err(EINVAL);
	pair = cma_ece_of(cma_id_priv(id));
	if (!pair)
		return -1;
	pair->local.vendor_id = ece->vendor_id;
	pair->local.options = ece->options;
	return 0;
}

CMA_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (cma_check_id(id) || !ece)
		return cma_err(EINVAL);
	memset(ece, 0, sizeof(*ece));
	if (cma_id_priv(id)->ece) {
		ece->vendor_id = cma_id_priv(id)->ece->remote.vendor_id;
		ece->options = cma_id_priv(id)->ece->remote.options;
	}
	return 0;
}

/*
 * Peer-to-peer mode's id options, RDMA_OPTION_ID_PEER2PEER and
 * RDMA_OPTION_ID_P2P_TAG (rdma_cm_p2p(7)): options.c finds them here, and
 * p2p_options.c handles them.
 */
static const struct cma_option cma_conn_options[] = {
	{RDMA_OPTION_ID, RDMA_OPTION_ID_PEER2PEER, sizeof(int),
	 cma_p2p_opt_check, cma_p2p_opt_set, cma_p2p_opt_get},
	{RDMA_OPTION_ID, RDMA_OPTION_ID_P2P_TAG, sizeof(uint64_t),
	 cma_p2p_opt_check, cma_p2p_opt_set, cma_p2p_opt_get},
};

const struct cma_option_table cma_conn_option_table = {
	.opts = cma_conn_options,
	.count = sizeof(cma_conn_options) / sizeof(cma_conn_options[0]),
};
