// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Multicast groups joined through the CM.
 *
 * Each join is a kernel object of its own with its own event count: its
 * MULTICAST_JOIN/ERROR events carry the group (not the id) as uid, and a
 * group may only be freed once those events are acked.  When the join
 * completes, the id's QP is attached to the group for the application.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "cma.h"
#include "ucma_abi.h"

static struct cma_multicast *cma_mc_alloc(struct cma_id_private *id_priv,
					  const struct sockaddr *addr,
					  socklen_t len, uint16_t join_flags,
					  void *context)
{
	struct cma_multicast *mc = calloc(1, sizeof(*mc));

	if (!mc) {
		errno = ENOMEM;
		return NULL;
	}
	mc->id_priv = id_priv;
	mc->context = context;
	mc->join_flags = join_flags;
	memcpy(&mc->addr, addr, len);
	mc->addr_len = len;
	pthread_cond_init(&mc->cond, NULL);
	return mc;
}

static void cma_mc_free(struct cma_multicast *mc)
{
	pthread_cond_destroy(&mc->cond);
	free(mc);
}

static void cma_mc_link(struct cma_id_private *id_priv,
			struct cma_multicast *mc)
{
	pthread_mutex_lock(&id_priv->mut);
	mc->next = id_priv->mc_list;
	id_priv->mc_list = mc;
	pthread_mutex_unlock(&id_priv->mut);
}

/* Remove the group joined at @addr (any group if @addr is NULL). */
static struct cma_multicast *cma_mc_unlink(struct cma_id_private *id_priv,
					   const struct sockaddr *addr,
					   socklen_t len)
{
	struct cma_multicast **pos, *mc = NULL;

	pthread_mutex_lock(&id_priv->mut);
	for (pos = &id_priv->mc_list; *pos; pos = &(*pos)->next) {
		if (!addr || ((*pos)->addr_len == len &&
			      !memcmp(&(*pos)->addr, addr, len))) {
			mc = *pos;
			*pos = mc->next;
			break;
		}
	}
	pthread_mutex_unlock(&id_priv->mut);
	return mc;
}

CMA_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
				      struct rdma_cm_join_mc_attr_ex *attr,
				      void *context)
{
	struct cma_id_private *id_priv = cma_id_priv(id);
	struct cma_multicast *mc;
	socklen_t len;
	int err;

	if (cma_check_id(id) || !attr)
		return cma_err(EINVAL);
	if (attr->comp_mask & ~(RDMA_CM_JOIN_MC_ATTR_RESERVED - 1))
		return cma_err(EOPNOTSUPP);
	if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
	    !(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return cma_err(EINVAL);
	len = cma_addr_len(attr->addr);
	if (!len)
		return cma_err(attr->addr ? EAFNOSUPPORT : EINVAL);
	if (id_priv->cma_dev && id_priv->cma_dev->is_iwarp)
		return cma_err(EOPNOTSUPP); /* iWARP has no multicast */

	mc = cma_mc_alloc(id_priv, attr->addr, len, (uint16_t)attr->join_flags,
			  context);
	if (!mc)
		return -1;
	cma_mc_link(id_priv, mc);
	if (ucma_cmd_join_mcast(cma_id_fd(id_priv), id_priv->handle,
				(uint64_t)(uintptr_t)mc, attr->addr, len,
				mc->join_flags, &mc->handle)) {
		err = errno;
		cma_mc_unlink(id_priv, attr->addr, len);
		cma_mc_free(mc);
		return cma_err(err);
	}
	return id_priv->sync ? cma_id_wait_sync(id_priv) : 0;
}

CMA_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
				   void *context)
{
	struct rdma_cm_join_mc_attr_ex attr = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS |
			     RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = addr,
	};

	return rdma_join_multicast_ex(id, &attr, context);
}

int cma_process_join(struct cma_event *evt)
{
	struct cma_multicast *mc = evt->mc;
	struct rdma_ud_param *ud = &evt->event.param.ud;
	struct ibv_qp *qp = cma_id_qp(mc->id_priv);
	int ret;

	mc->mgid = ud->ah_attr.grh.dgid;
	mc->mlid = ud->ah_attr.dlid;
	/* A send-only member receives nothing, so its QP is not attached. */
	if (!qp || mc->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return 0;
	ret = ibv_attach_mcast(qp, &mc->mgid, mc->mlid);
	if (ret)
		return cma_err(ret > 0 ? ret : -ret);
	mc->attached = true;
	return 0;
}

/* Detach, leave in the kernel, wait for the group's events, free it. */
static int cma_mc_leave(struct cma_id_private *id_priv,
			struct cma_multicast *mc)
{
	uint32_t reported = 0;
	int ret;

	if (mc->attached && id_priv->id.qp)
		ibv_detach_mcast(id_priv->id.qp, &mc->mgid, mc->mlid);
	ret = ucma_cmd_leave_mcast(cma_id_fd(id_priv), mc->handle, &reported);
	pthread_mutex_lock(&id_priv->mut);
	while (!ret && mc->events_completed < reported)
		pthread_cond_wait(&mc->cond, &id_priv->mut);
	pthread_mutex_unlock(&id_priv->mut);
	cma_mc_free(mc);
	return ret;
}

CMA_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id,
				    struct sockaddr *addr)
{
	struct cma_id_private *id_priv = cma_id_priv(id);
	struct cma_multicast *mc;
	socklen_t len = cma_addr_len(addr);

	if (cma_check_id(id) || !addr)
		return cma_err(EINVAL);
	if (!len)
		return cma_err(EAFNOSUPPORT);
	mc = cma_mc_unlink(id_priv, addr, len);
	if (!mc)
		return cma_err(EADDRNOTAVAIL);
	return cma_mc_leave(id_priv, mc);
}

void cma_mcast_leave_all(struct cma_id_private *id_priv)
{
	struct cma_multicast *mc;

	while ((mc = cma_mc_unlink(id_priv, NULL, 0)))
		cma_mc_leave(id_priv, mc);
}
