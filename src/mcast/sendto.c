// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rdma_sendto: post sends on an id's UD QP to a destination named by its
 * address, the way sendto(2) names one.  The library knows two kinds of
 * destination per id: the multicast groups the id joined (from their
 * MULTICAST_JOIN events) and the unicast peer a SIDR exchange resolved
 * (from the ESTABLISHED event).  The address handle of each is created on
 * first use and cached until the group is left, the QP destroyed or the id
 * destroyed.
 *
 * id_priv->mut is held from the lookup through ibv_post_send, so a
 * concurrent leave cannot destroy the AH a send is using.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"

void cma_ud_dest_drop_ah(struct cma_ud_dest *dest)
{
	if (dest->ah)
		ibv_destroy_ah(dest->ah);
	dest->ah = NULL;
}

void cma_sendto_set_peer(struct cma_id_private *id_priv,
			 const struct rdma_ud_param *ud)
{
	struct cma_id_rare *rare = cma_id_rare(id_priv);
	struct cma_ud_dest *peer = NULL;

	pthread_mutex_lock(&id_priv->mut);
	if (rare && !rare->peer)
		rare->peer = calloc(1, sizeof(*rare->peer));
	if (rare)
		peer = rare->peer;
	if (!peer) { /* no memory: rdma_sendto will not know the peer */
		pthread_mutex_unlock(&id_priv->mut);
		return;
	}
	cma_ud_dest_drop_ah(peer);
	peer->ah_attr = ud->ah_attr;
	peer->qpn = ud->qp_num;
	peer->qkey = ud->qkey;
	peer->valid = true;
	pthread_mutex_unlock(&id_priv->mut);
}

void cma_sendto_release(struct cma_id_private *id_priv)
{
	const struct cma_id_rare *rare = cma_id_rare_of(id_priv);
	struct cma_multicast *mc;

	pthread_mutex_lock(&id_priv->mut);
	if (rare && rare->peer)
		cma_ud_dest_drop_ah(rare->peer);
	for (mc = id_priv->mc_list; mc; mc = mc->next)
		cma_ud_dest_drop_ah(&mc->dest);
	pthread_mutex_unlock(&id_priv->mut);
}

static bool cma_is_multicast(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return IN_MULTICAST(ntohl(
			((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	case AF_INET6:
		return IN6_IS_ADDR_MULTICAST(
			&((const struct sockaddr_in6 *)sa)->sin6_addr);
	case AF_IB:
		return ((const struct sockaddr_ib *)sa)->sib_addr.sib_raw[0] ==
		       0xff;
	}
	return false;
}

static uint16_t cma_port_of(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)sa)->sin_port;
	case AF_INET6:
		return ((const struct sockaddr_in6 *)sa)->sin6_port;
	}
	return 0;
}

/* @to is the id's resolved peer: same address, and port if @to has one. */
static bool cma_is_peer(struct cma_id_private *id_priv,
			const struct sockaddr *to)
{
	const struct sockaddr *peer = rdma_get_peer_addr(&id_priv->id);
	const struct cma_id_rare *rare = cma_id_rare_of(id_priv);
	uint16_t port = cma_port_of(to);

	if (!rare || !rare->peer || !rare->peer->valid ||
	    peer->sa_family != to->sa_family)
		return false;
	if (port && port != cma_port_of(peer))
		return false;
	switch (to->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)to)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)peer)->sin_addr.s_addr;
	case AF_INET6:
		return !memcmp(&((const struct sockaddr_in6 *)to)->sin6_addr,
			       &((const struct sockaddr_in6 *)peer)->sin6_addr,
			       sizeof(struct in6_addr));
	case AF_IB:
		return !memcmp(&((const struct sockaddr_ib *)to)->sib_addr,
			       &((const struct sockaddr_ib *)peer)->sib_addr,
			       sizeof(struct ib_addr));
	}
	return false;
}

static struct cma_multicast *cma_sendto_group(struct cma_id_private *id_priv,
					      const struct sockaddr *to)
{
	const struct sockaddr_ib *sib = (const struct sockaddr_ib *)to;
	struct cma_multicast *mc = cma_mc_find_addr(id_priv, to);

	/* An MGID names a group whichever address joined it. */
	if (!mc && to->sa_family == AF_IB)
		mc = cma_mc_find_mgid(id_priv,
				      (const union ibv_gid *)&sib->sib_addr);
	return mc;
}

/* The destination @to names, under id_priv->mut; NULL with errno set. */
static struct cma_ud_dest *cma_sendto_lookup(struct cma_id_private *id_priv,
					     const struct sockaddr *to)
{
	struct cma_multicast *mc = cma_sendto_group(id_priv, to);

	if (mc) {
		switch (mc->state) {
		case CMA_MC_JOINING:
			errno = EAGAIN;
			return NULL;
		case CMA_MC_FAILED:
			errno = ENOTCONN;
			return NULL;
		case CMA_MC_JOINED:
			return &mc->dest;
		}
	}
	if (cma_is_multicast(to)) {
		errno = EADDRNOTAVAIL; /* not joined, or left */
		return NULL;
	}
	if (cma_is_peer(id_priv, to))
		return cma_id_rare_of(id_priv)->peer;
	errno = EHOSTUNREACH;
	return NULL;
}

static int cma_sendto_check(struct rdma_cm_id *id, struct ibv_send_wr *wr,
			    const struct sockaddr *to)
{
	if (cma_check_id(id))
		return -1;
	/* Datagrams (and so rdma_sendto) are IB and RoCE only. */
	if (cma_id_is_iwarp(cma_id_priv(id)))
		return cma_err(EOPNOTSUPP);
	if (!wr || !to || !id->qp)
		return cma_err(EINVAL);
	if (id->qp->qp_type != IBV_QPT_UD)
		return cma_err(EPROTOTYPE);
	if (to->sa_family != AF_INET && to->sa_family != AF_INET6 &&
	    to->sa_family != AF_IB)
		return cma_err(EAFNOSUPPORT);
	for (; wr; wr = wr->next)
		if (wr->opcode != IBV_WR_SEND &&
		    wr->opcode != IBV_WR_SEND_WITH_IMM)
			return cma_err(EINVAL);
	return 0;
}

static int cma_sendto_post(struct ibv_qp *qp, struct cma_ud_dest *dest,
			   struct ibv_send_wr *send_wr)
{
	struct ibv_send_wr *wr, *bad;
	int ret;

	if (!dest->ah) {
		dest->ah = ibv_create_ah(qp->pd, &dest->ah_attr);
		if (!dest->ah)
			return -1;
	}
	for (wr = send_wr; wr; wr = wr->next) {
		wr->wr.ud.ah = dest->ah;
		wr->wr.ud.remote_qpn = dest->qpn;
		wr->wr.ud.remote_qkey = dest->qkey;
	}
	ret = ibv_post_send(qp, send_wr, &bad);
	return ret ? cma_err(ret > 0 ? ret : -ret) : 0;
}

CMA_EXPORT int rdma_sendto(struct rdma_cm_id *id, struct ibv_send_wr *send_wr,
			   struct sockaddr *to)
{
	struct cma_id_private *id_priv = cma_id_priv(id);
	struct cma_ud_dest *dest;
	int ret = -1;

	if (cma_sendto_check(id, send_wr, to))
		return -1;
	pthread_mutex_lock(&id_priv->mut);
	dest = cma_sendto_lookup(id_priv, to);
	if (dest)
		ret = cma_sendto_post(id->qp, dest, send_wr);
	pthread_mutex_unlock(&id_priv->mut);
	return ret;
}
