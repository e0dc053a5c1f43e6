// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Datagram rsockets: destinations.
 *
 * A destination is a peer rsocket's address (its UDP address).  It knows
 * which local QP reaches the peer (the one for the local address routing
 * picks) and, once the peer has told us its QP number over UDP, an address
 * handle to it.  The address handle comes from resolving the peer's address
 * and route through the rdma_cm, as a connection would, so it works on
 * InfiniBand and RoCE alike.
 *
 * Any host can make a destination by sending one datagram from a new
 * source address or port, so they are bounded: a list ordered by use
 * (rs->dest_lru, newest first) finds the one to evict in O(1) steps past
 * the pinned ones.  An evicted destination's address handle goes with it;
 * a peer that speaks again is resolved again.
 */
#include <config.h>

#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dgram.h"
#include "cm/test_hooks.h"

static socklen_t ds_addr_size(int family)
{
	return family == AF_INET ? sizeof(struct sockaddr_in)
				 : sizeof(struct sockaddr_in6);
}

/* Order destinations by family, port, then address. */
static int ds_dest_cmp(const void *a, const void *b)
{
	const union rs_sockaddr *x = &((const struct ds_dest *)a)->addr;
	const union rs_sockaddr *y = &((const struct ds_dest *)b)->addr;

	if (x->sa.sa_family != y->sa.sa_family)
		return x->sa.sa_family < y->sa.sa_family ? -1 : 1;
	if (x->sa.sa_family == AF_INET) {
		if (x->sin.sin_port != y->sin.sin_port)
			return x->sin.sin_port < y->sin.sin_port ? -1 : 1;
		return memcmp(&x->sin.sin_addr, &y->sin.sin_addr,
			      sizeof(x->sin.sin_addr));
	}
	if (x->sin6.sin6_port != y->sin6.sin6_port)
		return x->sin6.sin6_port < y->sin6.sin6_port ? -1 : 1;
	if (x->sin6.sin6_scope_id != y->sin6.sin6_scope_id)
		return x->sin6.sin6_scope_id < y->sin6.sin6_scope_id ? -1 : 1;
	return memcmp(&x->sin6.sin6_addr, &y->sin6.sin6_addr,
		      sizeof(x->sin6.sin6_addr));
}

static bool ds_is_any(const union rs_sockaddr *a)
{
	if (a->sa.sa_family == AF_INET)
		return a->sin.sin_addr.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(&a->sin6.sin6_addr);
}

/*
 * The local address datagrams to @dst leave from: the bound one, or for a
 * wildcard-bound socket the one routing picks (a connected UDP socket
 * learns it), always with the socket's port.
 */
static int ds_src_for(struct rsocket *rs, const union rs_sockaddr *dst,
		      union rs_sockaddr *src)
{
	socklen_t len = sizeof(*src);
	uint16_t port;
	int s, ret;

	if (ds_local_addr(rs, src))
		return -1;
	if (!ds_is_any(src))
		return 0;
	port = src->sa.sa_family == AF_INET ? src->sin.sin_port
					    : src->sin6.sin6_port;
	s = socket(dst->sa.sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	ret = connect(s, &dst->sa, ds_addr_size(dst->sa.sa_family));
	if (!ret)
		ret = getsockname(s, &src->sa, &len);
	close(s);
	if (ret)
		return -1;
	if (src->sa.sa_family == AF_INET)
		src->sin.sin_port = port;
	else
		src->sin6.sin6_port = port;
	return 0;
}

static int ds_check_addr(struct rsocket *rs, const struct sockaddr *addr,
			 socklen_t len)
{
	if (!addr)
		return cma_err(EFAULT);
	if (len < sizeof(sa_family_t))
		return cma_err(EINVAL);
	if (addr->sa_family != rs->domain)
		return cma_err(EAFNOSUPPORT);
	if (len < ds_addr_size(addr->sa_family))
		return cma_err(EINVAL);
	return 0;
}

static void ds_dest_free(void *node)
{
	struct ds_dest *dest = node;

	if (dest->ah)
		ibv_destroy_ah(dest->ah);
	free(dest);
}

static void ds_dest_set_doubt(struct rsocket *rs, struct ds_dest *dest,
			      bool doubt)
{
	if (dest->qpn_doubt == doubt)
		return;
	dest->qpn_doubt = doubt;
	if (doubt)
		rs->dest_doubts++;
	else
		rs->dest_doubts--;
}

/* Make room for one more: evict the oldest unpinned destination. */
static int ds_dest_make_room(struct rsocket *rs)
{
	struct ds_dest *dest;

	if (rs->dest_lru.len < rs_def.max_dgram_dest)
		return 0;
	for (dest = cma_list_last(&rs->dest_lru, struct ds_dest, lru); dest;
	     dest = cma_list_prev(dest, lru)) {
		if (!dest->pins && dest != rs->conn_dest)
			break;
	}
	if (!dest)
		return cma_err(ENOBUFS);
	ds_dest_set_doubt(rs, dest, false);
	cma_list_unlink(&rs->dest_lru, &dest->lru);
	tdelete(dest, &rs->dest_map, ds_dest_cmp);
	ds_dest_free(dest);
	return 0;
}

static struct ds_dest **ds_dest_find(struct rsocket *rs, struct ds_dest *key,
				     const struct sockaddr *addr)
{
	memset(key, 0, sizeof(*key));
	key->addrlen = ds_addr_size(addr->sa_family);
	memcpy(&key->addr, addr, key->addrlen);
	return tfind(key, &rs->dest_map, ds_dest_cmp);
}

int ds_dest_get(struct rsocket *rs, const struct sockaddr *addr, socklen_t len,
		struct ds_dest **out)
{
	struct ds_dest key, *dest, **found;
	union rs_sockaddr src;
	struct ds_qp *qp;

	if (ds_check_addr(rs, addr, len))
		return -1;
	found = ds_dest_find(rs, &key, addr);
	if (found) {
		dest = *found;
		cma_list_unlink(&rs->dest_lru, &dest->lru);
		cma_list_push(&rs->dest_lru, &dest->lru);
		*out = dest;
		return 0;
	}
	if (ds_autobind(rs) || ds_src_for(rs, &key.addr, &src) ||
	    ds_qp_get(rs, &src, &qp) || ds_dest_make_room(rs))
		return -1;
	dest = malloc(sizeof(*dest));
	if (!dest)
		return cma_err(ENOMEM);
	*dest = key;
	dest->qp = qp;
	if (!tsearch(dest, &rs->dest_map, ds_dest_cmp)) {
		free(dest);
		return cma_err(ENOMEM);
	}
	cma_list_push(&rs->dest_lru, &dest->lru);
	*out = dest;
	return 0;
}

uint32_t ds_dest_count(const struct rsocket *rs)
{
	return rs->dest_lru.len;
}

/* The GID table index of @gid; on RoCE, a RoCE v2 entry if there is one. */
static uint8_t ds_sgid_index(struct ibv_context *verbs, uint8_t port,
			     const union ibv_gid *gid)
{
	struct ibv_port_attr pattr;
	struct ibv_gid_entry e;
	int i, first = -1;

	if (ibv_query_port(verbs, port, &pattr))
		return 0;
	for (i = 0; i < pattr.gid_tbl_len && i < 256; i++) {
		if (ibv_query_gid_ex(verbs, port, (uint32_t)i, &e, 0) ||
		    memcmp(&e.gid, gid, sizeof(*gid)))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 ||
		    pattr.link_layer != IBV_LINK_LAYER_ETHERNET)
			return (uint8_t)i;
		if (first < 0)
			first = i;
	}
	return first < 0 ? 0 : (uint8_t)first;
}

/* Address handle attributes for the route @id resolved. */
static int ds_ah_attr(struct ds_qp *qp, struct rdma_cm_id *id,
		      struct ibv_ah_attr *attr)
{
	const struct ibv_sa_path_rec *p = id->route.path_rec;

	if (!p || id->route.num_paths < 1)
		return cma_err(EHOSTUNREACH);
	if (id->verbs != qp->cm_id->verbs)
		return cma_err(EXDEV); /* another device than the QP's */
	memset(attr, 0, sizeof(*attr));
	attr->dlid = ntohs(p->dlid);
	attr->sl = p->sl;
	attr->static_rate = p->rate;
	attr->port_num = id->port_num;
	/* RoCE has no LIDs: every packet needs the GRH to be routed. */
	if (qp->ethernet || p->hop_limit > 1) {
		attr->is_global = 1;
		attr->grh.dgid = p->dgid;
		attr->grh.flow_label = ntohl(p->flow_label);
		attr->grh.hop_limit = p->hop_limit ? p->hop_limit : 64;
		attr->grh.traffic_class = p->traffic_class;
		attr->grh.sgid_index =
			ds_sgid_index(id->verbs, id->port_num, &p->sgid);
	}
	return 0;
}

/*
 * The address handle to @dst from @qp's address, resolved through an id
 * of its own; no lock held (this may take 2 * DS_RESOLVE_MS).
 */
static struct ibv_ah *ds_resolve_ah(struct ds_qp *qp,
				    const union rs_sockaddr *dst)
{
	union rs_sockaddr src = qp->src;
	union rs_sockaddr to = *dst;
	struct rdma_cm_id *id;
	struct ibv_ah_attr attr;
	struct ibv_ah *ah = NULL;
	int ret;

	if (src.sa.sa_family == AF_INET)
		src.sin.sin_port = 0;
	else
		src.sin6.sin6_port = 0;
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP))
		return NULL;
	ret = rdma_resolve_addr(id, &src.sa, &to.sa, DS_RESOLVE_MS);
	if (!ret)
		ret = rdma_resolve_route(id, DS_RESOLVE_MS);
	if (!ret)
		ret = ds_ah_attr(qp, id, &attr);
	if (!ret)
		ah = ibv_create_ah(qp->cm_id->pd, &attr);
	rdma_destroy_id(id);
	return ah;
}

int ds_dest_resolve(struct rsocket *rs, struct ds_dest *dest)
{
	union rs_sockaddr dst = dest->addr;
	struct ds_qp *qp = dest->qp; /* QPs live as long as the socket */
	struct ibv_ah *ah;

	if (dest->resolving || !dest->qpn_known || dest->route_failed)
		return 0;
	dest->resolving = true;
	ds_dest_pin(dest);
	pthread_mutex_unlock(&rs->lock);
	ah = ds_resolve_ah(qp, &dst);
	pthread_mutex_lock(&rs->lock);
	dest->resolving = false;
	ds_dest_unpin(dest);
	if (!ah) {
		dest->route_failed = true;
		return -1;
	}
	if (dest->ah)
		ibv_destroy_ah(dest->ah);
	dest->ah = ah;
	return 0;
}

void ds_dest_claim_qpn(struct rsocket *rs, struct ds_dest *dest, uint32_t qpn)
{
	dest->route_failed = false;
	if (!dest->qpn_known) {
		dest->qpn = qpn;
		dest->qpn_known = true;
	} else if (qpn != dest->qpn) {
		ds_dest_set_doubt(rs, dest, true);
	}
}

void ds_dest_confirm_qpn(struct rsocket *rs, const union rs_sockaddr *src,
			 uint32_t src_qp)
{
	struct ds_dest key, **found;

	if (!rs->dest_doubts) /* the common case: no lookup per datagram */
		return;
	found = ds_dest_find(rs, &key, &src->sa);
	if (found && (*found)->qpn_doubt && (*found)->qpn == src_qp)
		ds_dest_set_doubt(rs, *found, false);
}

void ds_dest_destroy_all(struct rsocket *rs)
{
	tdestroy(rs->dest_map, ds_dest_free);
	rs->dest_map = NULL;
	rs->dest_lru = (struct cma_list){0};
	rs->dest_doubts = 0;
	rs->conn_dest = NULL;
}
