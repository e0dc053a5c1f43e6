// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Multicast as socket-style options: the RDMA_OPTION_IP, RDMA_OPTION_IPV6
 * and RDMA_OPTION_IB_MCAST levels of rdma_set_option / rdma_get_option.
 *
 * A membership option becomes a join or leave of mcast.c on the id; the
 * join completes asynchronously with MULTICAST_JOIN (alias
 * RDMA_CM_EVENT_JOIN_COMPLETE) or MULTICAST_ERROR, exactly like
 * rdma_join_multicast.  Parsing the option values is mcast_mreq.c's job.
 */
#include <config.h>

#include <ifaddrs.h>
#include <net/if.h>
#include <string.h>

#include "cm/cma.h"

/* --- which interface --------------------------------------------------- */

static bool cma_same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	if (!a || !b || a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr,
			       sizeof(struct in6_addr));
	return false;
}

/* The index of the interface carrying the id's source address, or 0. */
static unsigned int cma_src_ifindex(struct cma_id_private *id_priv)
{
	const struct sockaddr *src = rdma_get_local_addr(&id_priv->id);
	struct ifaddrs *list, *ifa;
	unsigned int index = 0;

	if (getifaddrs(&list))
		return 0;
	for (ifa = list; ifa && !index; ifa = ifa->ifa_next)
		if (cma_same_ip(ifa->ifa_addr, src))
			index = if_nametoindex(ifa->ifa_name);
	freeifaddrs(list);
	return index;
}

/*
 * The interface an IP membership names must be the id's: the id is bound
 * to one device and port, and its QP receives only there.
 */
static int cma_mcast_check_iface(struct cma_id_private *id_priv,
				 const struct cma_mreq *mreq)
{
	const struct sockaddr_in *src =
		(const struct sockaddr_in *)rdma_get_local_addr(&id_priv->id);

	if (mreq->ifaddr.s_addr != htonl(INADDR_ANY) &&
	    (src->sin_family != AF_INET ||
	     src->sin_addr.s_addr != mreq->ifaddr.s_addr))
		return cma_err(ENODEV);
	if (mreq->ifindex &&
	    (unsigned int)mreq->ifindex != cma_src_ifindex(id_priv))
		return cma_err(ENODEV);
	return 0;
}

/* --- joining and leaving ------------------------------------------------- */

static uint8_t cma_id_link_layer(struct cma_id_private *id_priv)
{
	struct ibv_port_attr attr;

	if (!id_priv->id.verbs ||
	    ibv_query_port(id_priv->id.verbs, id_priv->id.port_num, &attr))
		return IBV_LINK_LAYER_UNSPECIFIED;
	return attr.link_layer;
}

/* IB_ADD_MEMBERSHIP: the address whose join yields rec.mgid. */
static int cma_mcast_ib_group(struct cma_id_private *id_priv,
			      struct cma_mreq *mreq)
{
	uint8_t link_layer = cma_id_link_layer(id_priv);

	/*
	 * On InfiniBand the kernel keeps the group's MTU to itself, so an
	 * MTU request could be neither honoured nor checked.
	 */
	if (link_layer != IBV_LINK_LAYER_ETHERNET &&
	    (mreq->ib.comp_mask &
	     (IB_SA_MCMEMBER_REC_MTU | IB_SA_MCMEMBER_REC_MTU_SELECTOR)))
		return cma_err(EOPNOTSUPP);
	return cma_mgid_to_sockaddr(
		&mreq->ib.rec.mgid,
		rdma_get_local_addr(&id_priv->id)->sa_family, link_layer,
		&mreq->group, &mreq->group_len);
}

static bool cma_mcast_joined(struct cma_id_private *id_priv,
			     const struct cma_mreq *mreq)
{
	bool found;

	pthread_mutex_lock(&id_priv->mut);
	found = cma_mc_find_addr(id_priv,
				 (const struct sockaddr *)&mreq->group) ||
		(mreq->is_ib && cma_mc_find_mgid(id_priv, &mreq->ib.rec.mgid));
	pthread_mutex_unlock(&id_priv->mut);
	return found;
}

static int cma_mcast_add(struct cma_id_private *id_priv, struct cma_mreq *mreq)
{
	struct cma_mc_join_req req = {.join_flags = mreq->join_flags};

	if (!id_priv->id.verbs)
		return cma_err(EINVAL); /* not bound to a device yet */
	if (mreq->is_ib ? cma_mcast_ib_group(id_priv, mreq)
			: cma_mcast_check_iface(id_priv, mreq))
		return -1;
	if (cma_mcast_joined(id_priv, mreq))
		return cma_err(EADDRINUSE);
	req.addr = (const struct sockaddr *)&mreq->group;
	req.addr_len = mreq->group_len;
	req.want = mreq->is_ib ? &mreq->ib : NULL;
	return cma_mc_join(id_priv, &req);
}

static int cma_mcast_drop(struct cma_id_private *id_priv,
			  const struct cma_mreq *mreq)
{
	struct cma_multicast *mc;

	pthread_mutex_lock(&id_priv->mut);
	if (mreq->is_ib)
		mc = cma_mc_find_mgid(id_priv, &mreq->ib.rec.mgid);
	else
		mc = cma_mc_find_addr(id_priv,
				      (const struct sockaddr *)&mreq->group);
	pthread_mutex_unlock(&id_priv->mut);
	if (!mc)
		return cma_err(EADDRNOTAVAIL);
	return cma_mc_leave_group(id_priv, mc);
}

static int cma_mcast_check(int level, int optname, const void *optval,
			   size_t optlen)
{
	struct cma_mreq mreq;

	return cma_mreq_parse(level, optname, optval, optlen, &mreq);
}

static int cma_mcast_set(struct cma_id_private *id_priv, int level, int optname,
			 const void *optval, size_t optlen)
{
	struct cma_mreq mreq;

	if (cma_mreq_parse(level, optname, optval, optlen, &mreq))
		return -1;
	if (cma_id_is_iwarp(id_priv))
		return cma_err(EOPNOTSUPP); /* iWARP has no multicast */
	if (id_priv->id.qp_type != IBV_QPT_UD)
		return cma_err(EPROTOTYPE);
	return mreq.join ? cma_mcast_add(id_priv, &mreq)
			 : cma_mcast_drop(id_priv, &mreq);
}

/* --- reading records ----------------------------------------------------- */

static struct cma_multicast *
cma_mcast_find_record(struct cma_id_private *id_priv,
		      const struct rdma_mcast_record *q)
{
	const struct sockaddr *group = (const struct sockaddr *)&q->group;
	const struct sockaddr_ib *sib = (const struct sockaddr_ib *)&q->group;
	struct cma_multicast *mc;

	if (group->sa_family == AF_UNSPEC)
		return cma_mc_find_mgid(id_priv, &q->rec.mgid);
	mc = cma_mc_find_addr(id_priv, group);
	/* An MGID names a group whichever address joined it. */
	if (!mc && group->sa_family == AF_IB)
		mc = cma_mc_find_mgid(id_priv,
				      (const union ibv_gid *)&sib->sib_addr);
	return mc;
}

static int cma_mcast_get_record(struct cma_id_private *id_priv, int level,
				int optname, void *optval, size_t optlen)
{
	struct rdma_mcast_record *q = optval;
	struct cma_multicast *mc;
	int err = 0;

	(void)level;
	(void)optname;
	(void)optlen;
	pthread_mutex_lock(&id_priv->mut);
	mc = cma_mcast_find_record(id_priv, q);
	if (!mc)
		err = EADDRNOTAVAIL;
	else if (mc->state == CMA_MC_JOINING)
		err = EAGAIN;
	else if (!mc->dest.valid)
		err = ENOTCONN; /* MULTICAST_ERROR: the kernel made no group */
	else
		q->rec = mc->rec;
	pthread_mutex_unlock(&id_priv->mut);
	return err ? cma_err(err) : 0;
}

static int cma_mcast_get_mismatch(struct cma_id_private *id_priv, int level,
				  int optname, void *optval, size_t optlen)
{
	const struct cma_id_rare *rare = cma_id_rare_of(id_priv);
	ib_sa_comp_mask mask = 0;

	(void)level;
	(void)optname;
	(void)optlen;
	pthread_mutex_lock(&id_priv->mut);
	if (rare)
		mask = rare->mc_mismatch;
	pthread_mutex_unlock(&id_priv->mut);
	memcpy(optval, &mask, sizeof(mask));
	return 0;
}

static const struct cma_option cma_mcast_options[] = {
	{RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, 0, cma_mcast_check, cma_mcast_set,
	 NULL},
	{RDMA_OPTION_IP, IP_DROP_MEMBERSHIP, 0, cma_mcast_check, cma_mcast_set,
	 NULL},
	{RDMA_OPTION_IPV6, IPV6_JOIN_GROUP, 0, cma_mcast_check, cma_mcast_set,
	 NULL},
	{RDMA_OPTION_IPV6, IPV6_LEAVE_GROUP, 0, cma_mcast_check, cma_mcast_set,
	 NULL},
	{RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP, sizeof(struct ib_mreq),
	 cma_mcast_check, cma_mcast_set, NULL},
	{RDMA_OPTION_IB_MCAST, IB_DROP_MEMBERSHIP, sizeof(struct ib_mreq),
	 cma_mcast_check, cma_mcast_set, NULL},
	{RDMA_OPTION_IB_MCAST, IB_MCMEMBER_RECORD,
	 sizeof(struct rdma_mcast_record), NULL, NULL, cma_mcast_get_record},
	{RDMA_OPTION_IB_MCAST, IB_MCMEMBER_MISMATCH, sizeof(ib_sa_comp_mask),
	 NULL, NULL, cma_mcast_get_mismatch},
};

const struct cma_option_table cma_mcast_option_table = {
	.opts = cma_mcast_options,
	.count = sizeof(cma_mcast_options) / sizeof(cma_mcast_options[0]),
};
