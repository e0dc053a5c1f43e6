// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Multicast groups joined through the CM.
 *
 * Each join is a kernel object of its own with its own event count: its
 * MULTICAST_JOIN/ERROR events carry the group (not the id) as uid, and a
 * group may only be freed once those events are acked.  When the join
 * completes, the id's QP is attached to the group for the application,
 * the group's MCMember record is kept for rdma_get_option, and groups
 * joined with IB_ADD_MEMBERSHIP are checked against what was asked for
 * (a group that differs becomes a MULTICAST_ERROR with status -ENOMSG).
 */
#include <config.h>

#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"
#include "cm/ucma_abi.h"

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

/* The port's link layer and MTU, which the kernel's event leaves out. */
static void cma_mc_note_port(struct cma_multicast *mc)
{
	struct rdma_cm_id *id = &mc->id_priv->id;
	struct ibv_port_attr attr;

	if (!id->verbs || !id->port_num ||
	    ibv_query_port(id->verbs, id->port_num, &attr))
		return;
	mc->link_layer = attr.link_layer;
	mc->port_mtu = (uint8_t)attr.active_mtu;
}

int cma_mc_join(struct cma_id_private *id_priv,
		const struct cma_mc_join_req *req)
{
	struct cma_multicast *mc;
	int err;

	if (cma_id_is_iwarp(id_priv))
		return cma_err(EOPNOTSUPP); /* iWARP has no multicast */
	if (cma_id_kernel(id_priv))
		return -1;
	/* Where a verified join's mismatch is kept: made before it can be. */
	if (req->want && !cma_id_rare(id_priv))
		return -1;
	mc = cma_mc_alloc(id_priv, req->addr, req->addr_len, req->join_flags,
			  req->context);
	if (!mc)
		return -1;
	if (req->want) {
		mc->verify = true;
		mc->want = *req->want;
	}
	cma_mc_note_port(mc);
	cma_mc_link(id_priv, mc);
	if (ucma_cmd_join_mcast(cma_id_fd(id_priv), id_priv->handle,
				(uint64_t)(uintptr_t)mc, req->addr,
				req->addr_len, mc->join_flags, &mc->handle)) {
		err = errno;
		cma_mc_unlink(id_priv, req->addr, req->addr_len);
		cma_mc_free(mc);
		return cma_err(err);
	}
	return id_priv->sync ? cma_id_wait_sync(id_priv) : 0;
}

CMA_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
				      struct rdma_cm_join_mc_attr_ex *attr,
				      void *context)
{
	struct cma_mc_join_req req = {.context = context};

	if (cma_check_id(id) || !attr)
		return cma_err(EINVAL);
	if (attr->comp_mask & ~(RDMA_CM_JOIN_MC_ATTR_RESERVED - 1))
		return cma_err(EOPNOTSUPP);
	if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
	    !(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return cma_err(EINVAL);
	req.addr = attr->addr;
	req.addr_len = cma_addr_len(attr->addr);
	if (!req.addr_len)
		return cma_err(attr->addr ? EAFNOSUPPORT : EINVAL);
	req.join_flags = (uint16_t)attr->join_flags;
	return cma_mc_join(cma_id_priv(id), &req);
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

static void cma_mc_set_state(struct cma_multicast *mc, enum cma_mc_state state)
{
	pthread_mutex_lock(&mc->id_priv->mut);
	mc->state = state;
	pthread_mutex_unlock(&mc->id_priv->mut);
}

/* Build the group's record and remember how rdma_sendto reaches it. */
static void cma_mc_record(struct cma_multicast *mc,
			  const struct rdma_ud_param *ud)
{
	struct cma_id_private *id_priv = mc->id_priv;
	struct cma_mc_join_info info = {
		.ah_attr = &ud->ah_attr,
		.qkey = ud->qkey,
		/* RoCE groups carry the default P_Key; IB ones the port's. */
		.pkey = mc->link_layer == IBV_LINK_LAYER_ETHERNET
				? 0xffff
				: be16toh(id_priv->id.route.addr.addr.ibaddr
						  .pkey),
		/* Only on RoCE is the group's MTU the port's (netdev) MTU. */
		.mtu = mc->link_layer == IBV_LINK_LAYER_ETHERNET ? mc->port_mtu
								 : 0,
		.port_gid = &id_priv->id.route.addr.addr.ibaddr.sgid,
		.join_state =
			mc->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
				? IB_MC_JOIN_STATE_SENDONLY_FULL_MEMBER
				: IB_MC_JOIN_STATE_FULL_MEMBER,
	};

	cma_mcrec_build(&info, &mc->rec);
	mc->mgid = ud->ah_attr.grh.dgid;
	mc->mlid = ud->ah_attr.dlid;
	pthread_mutex_lock(&id_priv->mut);
	mc->dest.ah_attr = ud->ah_attr;
	mc->dest.qpn = ud->qp_num;
	mc->dest.qkey = ud->qkey;
	mc->dest.valid = true;
	pthread_mutex_unlock(&id_priv->mut);
}

/* An IB_ADD_MEMBERSHIP join: the group must be what was asked for. */
static int cma_mc_verify(struct cma_multicast *mc)
{
	ib_sa_comp_mask bad;

	if (!mc->verify)
		return 0;
	bad = cma_mcrec_mismatch(&mc->want, &mc->rec);
	pthread_mutex_lock(&mc->id_priv->mut);
	mc->id_priv->rare->mc_mismatch = bad;
	pthread_mutex_unlock(&mc->id_priv->mut);
	return bad ? cma_err(ENOMSG) : 0;
}

int cma_process_join(struct cma_event *evt)
{
	struct cma_multicast *mc = evt->mc;
	struct ibv_qp *qp = cma_id_qp(mc->id_priv);
	int ret;

	cma_mc_record(mc, &evt->event.param.ud);
	if (cma_mc_verify(mc))
		goto failed;
	/* A send-only member receives nothing, so its QP is not attached. */
	if (qp && mc->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER) {
		ret = ibv_attach_mcast(qp, &mc->mgid, mc->mlid);
		if (ret) {
			errno = ret > 0 ? ret : -ret;
			goto failed;
		}
		mc->attached = true;
	}
	cma_mc_set_state(mc, CMA_MC_JOINED);
	return 0;

failed:
	cma_mc_set_state(mc, CMA_MC_FAILED);
	return -1;
}

void cma_process_join_error(struct cma_event *evt)
{
	cma_mc_set_state(evt->mc, CMA_MC_FAILED);
}

/* Same IP (or AF_IB) address; ports and the rest are ignored. */
static bool cma_same_group(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	switch (a->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	case AF_INET6:
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr,
			       sizeof(struct in6_addr));
	case AF_IB:
		return !memcmp(&((const struct sockaddr_ib *)a)->sib_addr,
			       &((const struct sockaddr_ib *)b)->sib_addr,
			       sizeof(struct ib_addr));
	}
	return false;
}

struct cma_multicast *cma_mc_find_addr(struct cma_id_private *id_priv,
				       const struct sockaddr *addr)
{
	struct cma_multicast *mc;

	for (mc = id_priv->mc_list; mc; mc = mc->next)
		if (cma_same_group((struct sockaddr *)&mc->addr, addr))
			return mc;
	return NULL;
}

struct cma_multicast *cma_mc_find_mgid(struct cma_id_private *id_priv,
				       const union ibv_gid *mgid)
{
	struct cma_multicast *mc;

	for (mc = id_priv->mc_list; mc; mc = mc->next) {
		if (mc->verify && !memcmp(&mc->want.rec.mgid, mgid, 16))
			return mc;
		if (mc->state != CMA_MC_JOINING && !memcmp(&mc->mgid, mgid, 16))
			return mc;
	}
	return NULL;
}

/* Detach, leave in the kernel, wait for the group's events, free it. */
static int cma_mc_leave(struct cma_id_private *id_priv,
			struct cma_multicast *mc)
{
	uint32_t reported = 0;
	int ret;

	if (mc->attached && id_priv->id.qp)
		ibv_detach_mcast(id_priv->id.qp, &mc->mgid, mc->mlid);
	cma_ud_dest_drop_ah(&mc->dest);
	ret = ucma_cmd_leave_mcast(cma_id_fd(id_priv), mc->handle, &reported);
	/* Events the service thread read and the application never got. */
	cma_channel_drop_mc_events(mc);
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

int cma_mc_leave_group(struct cma_id_private *id_priv, struct cma_multicast *mc)
{
	struct cma_multicast **pos;
	bool found = false;

	/* Another thread may have left it since the caller found it. */
	pthread_mutex_lock(&id_priv->mut);
	for (pos = &id_priv->mc_list; *pos; pos = &(*pos)->next) {
		if (*pos == mc) {
			*pos = mc->next;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&id_priv->mut);
	if (!found)
		return cma_err(EADDRNOTAVAIL);
	return cma_mc_leave(id_priv, mc);
}

void cma_mcast_leave_all(struct cma_id_private *id_priv)
{
	struct cma_multicast *mc;

	while ((mc = cma_mc_unlink(id_priv, NULL, 0)))
		cma_mc_leave(id_priv, mc);
}
