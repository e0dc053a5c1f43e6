// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * QPs and SRQs created through the CM, and the QP states the CM drives.
 *
 * A connected QP is moved to INIT when it is created, to RTR and RTS when
 * the connection forms (by rdma_accept on the passive side, on the
 * CONNECT_RESPONSE event on the active side), and to ERR when it ends.  The
 * kernel supplies the attributes for each state (path, PSNs, P_Key index),
 * except on iWARP, where the kernel's iw_cm moves the QP itself after INIT.
 * Datagram QPs need nothing from a peer, so they go straight to RTS.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "abi_convert.h"
#include "cma.h"
#include "ucma_abi.h"

static int cma_kernel_qp_attr(struct cma_id_private *id_priv,
			      enum ibv_qp_state state, struct ibv_qp_attr *attr,
			      int *mask)
{
	struct ib_uverbs_qp_attr resp;

	if (cma_id_kernel(id_priv) ||
	    ucma_cmd_init_qp_attr(cma_id_fd(id_priv), id_priv->handle,
				  (uint32_t)state, &resp))
		return -1;
	cma_qp_attr_from_kern(attr, mask, &resp);
	return 0;
}

/* ibv_modify_qp returns a positive errno; the library's convention is -1. */
static int cma_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	int ret = ibv_modify_qp(qp, attr, mask);

	return ret ? cma_err(ret > 0 ? ret : -ret) : 0;
}

/*
 * The INIT attributes of a connected QP created before its id connects are
 * known here: the kernel would answer with port, P_Key index and no remote
 * access (granted at RTR).  On RoCE the P_Key table is the one default
 * entry, so that saves the INIT_QP_ATTR round trip.  IB (P_Key lookup),
 * iWARP, datagram QPs (Q_Key) and ids the IB CM already knows ask the kernel.
 */
static bool cma_local_init_attr(struct cma_id_private *id_priv,
				struct ibv_qp_attr *attr, int *mask)
{
	struct cma_device *dev = id_priv->cma_dev;

	if (!dev || dev->is_iwarp || id_priv->cm_started ||
	    (id_priv->id.qp_type != IBV_QPT_RC &&
	     id_priv->id.qp_type != IBV_QPT_UC) ||
	    !cma_device_port_is_roce(dev, id_priv->id.port_num))
		return false;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = IBV_QPS_INIT;
	attr->pkey_index = 0;
	attr->port_num = id_priv->id.port_num;
	attr->qp_access_flags = 0;
	*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		IBV_QP_ACCESS_FLAGS;
	return true;
}

int cma_qp_to_init(struct cma_id_private *id_priv, struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	int mask;

	if (!cma_local_init_attr(id_priv, &attr, &mask) &&
	    cma_kernel_qp_attr(id_priv, IBV_QPS_INIT, &attr, &mask))
		return -1;
	return cma_modify_qp(qp, &attr, mask);
}

int cma_qp_rtr_attr(struct cma_id_private *id_priv, uint8_t resp_res,
		    struct cma_qp_psns *psns, struct cma_qp_move *move)
{
	struct ibv_qp_attr *attr = &move->attr;

	if (cma_kernel_qp_attr(id_priv, IBV_QPS_RTR, attr, &move->mask))
		return -1;
	if (resp_res != RDMA_MAX_RESP_RES)
		attr->max_dest_rd_atomic = resp_res;
	if (psns && psns->dictated)
		attr->rq_psn = psns->rq;
	else if (psns)
		psns->rq = attr->rq_psn;
	/*
	 * An active side moves its QP to INIT before the IB CM knows the
	 * connection, when the kernel can only grant no remote access.  Grant
	 * now what the CM grants a responder (access flags are optional on
	 * INIT->RTR), which saves the INIT->INIT round trip to the kernel.
	 */
	if (!(move->mask & IBV_QP_ACCESS_FLAGS)) {
		attr->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		if (attr->max_dest_rd_atomic)
			attr->qp_access_flags |= IBV_ACCESS_REMOTE_READ |
						 IBV_ACCESS_REMOTE_ATOMIC;
		move->mask |= IBV_QP_ACCESS_FLAGS;
	}
	return 0;
}

int cma_qp_rts_attr(struct cma_id_private *id_priv, uint8_t init_depth,
		    struct cma_qp_psns *psns, struct cma_qp_move *move)
{
	struct ibv_qp_attr *attr = &move->attr;

	if (cma_kernel_qp_attr(id_priv, IBV_QPS_RTS, attr, &move->mask))
		return -1;
	if (init_depth != RDMA_MAX_INIT_DEPTH)
		attr->max_rd_atomic = init_depth;
	if (psns && psns->dictated)
		attr->sq_psn = psns->sq;
	else if (psns)
		psns->sq = attr->sq_psn;
	return 0;
}

int cma_qp_move(struct cma_id_private *id_priv, struct cma_qp_move *move)
{
	return cma_modify_qp(id_priv->id.qp, &move->attr, move->mask);
}

int cma_qp_to_rtr(struct cma_id_private *id_priv, uint8_t resp_res,
		  struct cma_qp_psns *psns)
{
	struct cma_qp_move move;

	if (cma_qp_rtr_attr(id_priv, resp_res, psns, &move))
		return -1;
	return cma_qp_move(id_priv, &move);
}

int cma_qp_to_rts(struct cma_id_private *id_priv, uint8_t init_depth,
		  struct cma_qp_psns *psns)
{
	struct cma_qp_move move;

	if (cma_qp_rts_attr(id_priv, init_depth, psns, &move))
		return -1;
	return cma_qp_move(id_priv, &move);
}

static int cma_qp_to_state(struct cma_id_private *id_priv,
			   enum ibv_qp_state state)
{
	struct ibv_qp_attr attr = {.qp_state = state};

	if (!id_priv->id.qp)
		return 0;
	return cma_modify_qp(id_priv->id.qp, &attr, IBV_QP_STATE);
}

int cma_qp_to_err(struct cma_id_private *id_priv)
{
	return cma_qp_to_state(id_priv, IBV_QPS_ERR);
}

int cma_qp_to_sqd(struct cma_id_private *id_priv)
{
	return cma_qp_to_state(id_priv, IBV_QPS_SQD);
}

static int cma_qp_ud_to_rts(struct cma_id_private *id_priv, struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_RTR};

	if (cma_qp_to_init(id_priv, qp))
		return -1;
	if (cma_modify_qp(qp, &attr, IBV_QP_STATE))
		return -1;
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	return cma_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static void cma_destroy_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq && id->recv_cq != id->send_cq)
		ibv_destroy_cq(id->recv_cq);
	if (id->send_cq)
		ibv_destroy_cq(id->send_cq);
	if (id->recv_cq_channel && id->recv_cq_channel != id->send_cq_channel)
		ibv_destroy_comp_channel(id->recv_cq_channel);
	if (id->send_cq_channel)
		ibv_destroy_comp_channel(id->send_cq_channel);
	id->recv_cq = id->send_cq = NULL;
	id->recv_cq_channel = id->send_cq_channel = NULL;
}

static struct ibv_cq *cma_create_cq(struct rdma_cm_id *id, uint32_t depth,
				    struct ibv_comp_channel **channel)
{
	*channel = ibv_create_comp_channel(id->verbs);
	if (!*channel)
		return NULL;
	return ibv_create_cq(id->verbs, depth ? (int)depth : 1, id, *channel,
			     0);
}

/*
 * The caller gave no CQs: make one per direction, each with its own
 * completion channel, for the rdma_get_*_comp() helpers of rdma_verbs.h.
 */
static int cma_create_cqs(struct cma_id_private *id_priv, uint32_t send_size,
			  uint32_t recv_size)
{
	struct rdma_cm_id *id = &id_priv->id;

	if (recv_size) {
		id->recv_cq =
			cma_create_cq(id, recv_size, &id->recv_cq_channel);
		if (!id->recv_cq)
			goto fail;
	}
	if (send_size) {
		id->send_cq =
			cma_create_cq(id, send_size, &id->send_cq_channel);
		if (!id->send_cq)
			goto fail;
	}
	id_priv->owns_cqs = true;
	return 0;
fail:
	cma_destroy_cqs(id);
	return cma_err(ENOMEM);
}

static int cma_move_new_qp(struct cma_id_private *id_priv, struct ibv_qp *qp)
{
	if (id_priv->id.qp_type == IBV_QPT_UD)
		return cma_qp_ud_to_rts(id_priv, qp);
	return cma_qp_to_init(id_priv, qp);
}

/* iWARP has no UD QPs: refused before the provider (or a PD) is asked. */
static int cma_check_qp_transport(struct cma_id_private *id_priv,
				  enum ibv_qp_type type)
{
	if (cma_check_ud_transport(id_priv))
		return -1;
	if (type == IBV_QPT_UD && cma_id_is_iwarp(id_priv))
		return cma_err(EOPNOTSUPP);
	return 0;
}

CMA_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id,
				 struct ibv_qp_init_attr_ex *attr)
{
	struct cma_id_private *id_priv = cma_id_priv(id);
	bool made_cqs = false;
	struct ibv_qp *qp;
	int err;

	if (cma_check_id(id) || !attr)
		return cma_err(EINVAL);
	if (!id->verbs || id->qp)
		return cma_err(EINVAL); /* not bound to a device, or has a QP */
	if (cma_check_qp_transport(id_priv, attr->qp_type))
		return -1;
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		/*
		 * No PD given: the device's shared one, as rdma-core (which
		 * takes id->pd; that may be a PD the application has freed
		 * since its last QP, the shared one never is).
		 */
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = cma_device_default_pd(id_priv->cma_dev);
	}
	if (!attr->pd || attr->pd->context != id->verbs)
		return cma_err(EINVAL);
	if (!attr->srq && id->srq)
		attr->srq = id->srq;
	if (!attr->send_cq || !attr->recv_cq) {
		if (id->send_cq || id->recv_cq)
			return cma_err(EINVAL);
		if (cma_create_cqs(id_priv,
				   attr->send_cq ? 0 : attr->cap.max_send_wr,
				   attr->recv_cq ? 0 : attr->cap.max_recv_wr))
			return -1;
		made_cqs = true;
		if (!attr->send_cq)
			attr->send_cq = id->send_cq;
		if (!attr->recv_cq)
			attr->recv_cq = id->recv_cq;
	}

	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp) {
		err = errno ? errno : ENOMEM;
		goto fail;
	}
	if (cma_move_new_qp(id_priv, qp)) {
		err = errno;
		ibv_destroy_qp(qp);
		goto fail;
	}
	id->qp = qp;
	id->pd = attr->pd;
	return 0;
fail:
	if (made_cqs) {
		cma_destroy_cqs(id);
		id_priv->owns_cqs = false;
	}
	return cma_err(err);
}

CMA_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			      struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex attr_ex;
	int ret;

	if (cma_check_id(id) || !qp_init_attr || !id->verbs)
		return cma_err(EINVAL);
	if (cma_check_qp_transport(cma_id_priv(id), qp_init_attr->qp_type))
		return -1;
	if (!pd) {
		pd = cma_device_default_pd(cma_id_priv(id)->cma_dev);
		if (!pd)
			return cma_err(ENOMEM);
	}
	memset(&attr_ex, 0, sizeof(attr_ex));
	memcpy(&attr_ex, qp_init_attr, sizeof(*qp_init_attr));
	attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr_ex.pd = pd;
	ret = rdma_create_qp_ex(id, &attr_ex);
	if (ret)
		return ret;
	/* Report what the provider actually granted, as ibv_create_qp does. */
	qp_init_attr->cap = attr_ex.cap;
	return 0;
}

CMA_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct cma_id_private *id_priv = cma_id_priv(id);

	if (!id)
		return;
	/* Not while an event of the id is moving the QP (qp_lock). */
	pthread_mutex_lock(&id_priv->qp_lock);
	if (!id->qp) {
		pthread_mutex_unlock(&id_priv->qp_lock);
		return;
	}
	/* rdma_sendto's AHs hold the PD the application frees next. */
	cma_sendto_release(id_priv);
	ibv_destroy_qp(id->qp);
	id->qp = NULL;
	pthread_mutex_unlock(&id_priv->qp_lock);
	if (id_priv->owns_cqs) {
		cma_destroy_cqs(id);
		id_priv->owns_cqs = false;
	}
}

int cma_create_ep_qp(struct cma_id_private *id_priv, struct ibv_pd *pd,
		     const struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr copy = *attr;

	return rdma_create_qp(&id_priv->id, pd, &copy);
}

CMA_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id,
				  struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;

	if (cma_check_id(id) || !attr || !id->verbs || id->srq)
		return cma_err(EINVAL);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = cma_device_default_pd(cma_id_priv(id)->cma_dev);
		if (!attr->pd)
			return cma_err(ENOMEM);
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE)) {
		attr->srq_type = IBV_SRQT_BASIC;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_TYPE;
	}
	srq = ibv_create_srq_ex(id->verbs, attr);
	if (!srq)
		return cma_err(errno ? errno : ENOMEM);
	id->srq = srq;
	id->pd = attr->pd;
	return 0;
}

CMA_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
			       struct ibv_srq_init_attr *attr)
{
	struct ibv_srq *srq;

	if (cma_check_id(id) || !attr || !id->verbs || id->srq)
		return cma_err(EINVAL);
	if (!pd) {
		pd = cma_device_default_pd(cma_id_priv(id)->cma_dev);
		if (!pd)
			return cma_err(ENOMEM);
	}
	srq = ibv_create_srq(pd, attr);
	if (!srq)
		return cma_err(errno ? errno : ENOMEM);
	id->srq = srq;
	id->pd = pd;
	return 0;
}

CMA_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (!id || !id->srq)
		return;
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
}

CMA_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id,
				 struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	if (cma_check_id(id) || !qp_attr || !qp_attr_mask)
		return cma_err(EINVAL);
	return cma_kernel_qp_attr(cma_id_priv(id), qp_attr->qp_state, qp_attr,
				  qp_attr_mask);
}
