// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Addressing and routing: bind, the kernel's (and ACM's) side of address
 * and route resolution (the calls, which peer-to-peer mode may answer
 * itself, are conn.c's), and the queries that copy what the kernel
 * resolved into the public rdma_cm_id.
 *
 * For IP addresses one QUERY_ROUTE returns everything (device GUID, port,
 * both addresses, GIDs, P_Key and paths); the finer ADDR/GID/PATH queries
 * are only needed for AF_IB, whose addresses do not fit the sockaddr_in6
 * fields of QUERY_ROUTE.  That keeps a connection to few kernel round trips.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "abi_convert.h"
#include "acm/acm.h"
#include "cma.h"
#include "ucma_abi.h"

socklen_t cma_addr_len(const struct sockaddr *addr)
{
	if (!addr)
		return 0;
	switch (addr->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	case AF_IB:
		return sizeof(struct sockaddr_ib);
	}
	return 0;
}

int cma_is_af_ib(const struct cma_id_private *id_priv)
{
	const struct rdma_addr *a = &id_priv->id.route.addr;

	return a->src_addr.sa_family == AF_IB || a->dst_addr.sa_family == AF_IB;
}

/*
 * @src may be @dst itself: a caller may resolve again with the id's own
 * addresses (rdma-core's rsocket passes &id->route.addr.dst_addr).
 */
static void cma_store_addr(struct sockaddr_storage *dst, const void *src,
			   size_t len)
{
	size_t n = len < sizeof(*dst) ? len : sizeof(*dst);

	memmove(dst, src, n);
	memset((uint8_t *)dst + n, 0, sizeof(*dst) - n);
}

/* The kernel reports the device by GUID: bind the id to ours. */
static int cma_adopt_device(struct cma_id_private *id_priv, __be64 guid)
{
	struct cma_device *dev;

	if (!guid)
		return 0; /* bound to a wildcard address: no device yet */
	dev = cma_device_get_by_guid(guid);
	if (!dev)
		return -1;
	return cma_id_set_device(id_priv, dev);
}

int cma_store_paths(struct cma_id_private *id_priv,
		    struct ibv_sa_path_rec *paths, int count)
{
	free(id_priv->id.route.path_rec);
	id_priv->id.route.path_rec = paths;
	id_priv->id.route.num_paths = count;
	return 0;
}

int cma_apply_ip_route(struct cma_id_private *id_priv,
		       const struct rdma_ucm_query_route_resp *resp)
{
	struct rdma_addr *a = &id_priv->id.route.addr;
	struct ibv_sa_path_rec *paths = NULL;
	uint32_t i, n;

	if (cma_adopt_device(id_priv, resp->node_guid))
		return -1;
	id_priv->id.port_num = resp->port_num;
	cma_store_addr(&a->src_storage, &resp->src_addr,
		       sizeof(resp->src_addr));
	cma_store_addr(&a->dst_storage, &resp->dst_addr,
		       sizeof(resp->dst_addr));
	memcpy(a->addr.ibaddr.sgid.raw, resp->ib_route[0].sgid,
	       sizeof(a->addr.ibaddr.sgid));
	memcpy(a->addr.ibaddr.dgid.raw, resp->ib_route[0].dgid,
	       sizeof(a->addr.ibaddr.dgid));
	a->addr.ibaddr.pkey = resp->ib_route[0].pkey;

	n = resp->num_paths > 2 ? 2 : resp->num_paths;
	if (n) {
		paths = calloc(n, sizeof(*paths));
		if (!paths)
			return cma_err(ENOMEM);
		for (i = 0; i < n; i++)
			cma_path_from_user_rec(&paths[i], &resp->ib_route[i]);
	}
	return cma_store_paths(id_priv, paths, (int)n);
}

static int cma_query_ip_route(struct cma_id_private *id_priv)
{
	struct rdma_ucm_query_route_resp resp;

	if (cma_id_kernel(id_priv) ||
	    ucma_cmd_query_route(cma_id_fd(id_priv), id_priv->handle, &resp))
		return -1;
	return cma_apply_ip_route(id_priv, &resp);
}

static int cma_query_ib_addr(struct cma_id_private *id_priv)
{
	struct rdma_ucm_query_addr_resp resp;
	struct rdma_addr *a = &id_priv->id.route.addr;
	const struct sockaddr_ib *sib;

	if (cma_id_kernel(id_priv) ||
	    ucma_cmd_query_addr(cma_id_fd(id_priv), id_priv->handle, &resp))
		return -1;
	if (cma_adopt_device(id_priv, resp.node_guid))
		return -1;
	id_priv->id.port_num = resp.port_num;
	a->addr.ibaddr.pkey = resp.pkey;
	cma_store_addr(&a->src_storage, &resp.src_addr, resp.src_size);
	cma_store_addr(&a->dst_storage, &resp.dst_addr, resp.dst_size);

	/* The GID query reports both ends as sockaddr_ib. */
	if (ucma_cmd_query_gid(cma_id_fd(id_priv), id_priv->handle, &resp))
		return -1;
	sib = (const struct sockaddr_ib *)&resp.src_addr;
	memcpy(a->addr.ibaddr.sgid.raw, &sib->sib_addr, 16);
	sib = (const struct sockaddr_ib *)&resp.dst_addr;
	memcpy(a->addr.ibaddr.dgid.raw, &sib->sib_addr, 16);
	return 0;
}

static int cma_query_ib_paths(struct cma_id_private *id_priv)
{
	struct {
		struct rdma_ucm_query_path_resp hdr;
		struct ib_path_rec_data data[6];
	} resp;
	struct ibv_sa_path_rec *paths;
	uint32_t i, n = 0, count;

	if (cma_id_kernel(id_priv) ||
	    ucma_cmd_query_path(cma_id_fd(id_priv), id_priv->handle, &resp.hdr,
				sizeof(resp)))
		return -1;
	count = resp.hdr.num_paths < 6 ? resp.hdr.num_paths : 6;
	paths = calloc(count ? count : 1, sizeof(*paths));
	if (!paths)
		return cma_err(ENOMEM);
	/* Only paths usable in both directions describe the connection. */
	for (i = 0; i < count; i++) {
		const struct ib_path_rec_data *d = &resp.data[i];

		if ((d->flags & IB_PATH_BIDIRECTIONAL) != IB_PATH_BIDIRECTIONAL)
			continue;
		cma_path_from_wire(&paths[n++],
				   (const struct ibv_path_record *)d->path_rec);
	}
	if (!n) {
		free(paths);
		paths = NULL;
	}
	return cma_store_paths(id_priv, paths, (int)n);
}

int cma_query_addr_info(struct cma_id_private *id_priv)
{
	if (cma_is_af_ib(id_priv))
		return cma_query_ib_addr(id_priv);
	return cma_query_ip_route(id_priv);
}

int cma_query_route_info(struct cma_id_private *id_priv)
{
	if (cma_is_af_ib(id_priv)) {
		if (cma_query_ib_addr(id_priv))
			return -1;
		return cma_query_ib_paths(id_priv);
	}
	return cma_query_ip_route(id_priv);
}

CMA_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cma_id_private *id_priv = cma_id_priv(id);
	socklen_t len = cma_addr_len(addr);

	if (cma_check_id(id))
		return -1;
	if (!len)
		return cma_err(addr ? EAFNOSUPPORT : EINVAL);
	if (cma_id_kernel(id_priv) ||
	    ucma_cmd_bind(cma_id_fd(id_priv), id_priv->handle, addr, len))
		return -1;
	cma_store_addr(&id->route.addr.src_storage, addr, len);
	return cma_query_addr_info(id_priv);
}

/*
 * The id takes the addresses before the command: the kernel may report
 * ADDR_RESOLVED at once, and another thread reading it looks at them
 * (stress-tsan, migrate).  They are copied first, since a caller may pass
 * the id's own (rdma-core's rsocket does), and put back if the kernel
 * refuses.
 */
static int cma_resolve_addr_cmd(struct cma_id_private *id_priv,
				const struct sockaddr *src, socklen_t src_len,
				const struct sockaddr *dst, socklen_t dst_len,
				uint32_t timeout_ms)
{
	struct rdma_addr *a = &id_priv->id.route.addr;
	struct sockaddr_storage new_src, new_dst, old_src = a->src_storage,
						  old_dst = a->dst_storage;

	if (cma_id_kernel(id_priv))
		return -1;
	cma_store_addr(&new_dst, dst, dst_len);
	if (src_len)
		cma_store_addr(&new_src, src, src_len);
	pthread_mutex_lock(&id_priv->mut);
	a->dst_storage = new_dst;
	if (src_len)
		a->src_storage = new_src;
	pthread_mutex_unlock(&id_priv->mut);
	if (!ucma_cmd_resolve_addr(cma_id_fd(id_priv), id_priv->handle,
				   src_len ? (struct sockaddr *)&new_src : NULL,
				   src_len, (struct sockaddr *)&new_dst,
				   dst_len, timeout_ms))
		return 0;
	pthread_mutex_lock(&id_priv->mut);
	a->src_storage = old_src;
	a->dst_storage = old_dst;
	pthread_mutex_unlock(&id_priv->mut);
	return -1;
}

int cma_resolve_addr_kernel(struct cma_id_private *id_priv,
			    const struct sockaddr *src, socklen_t src_len,
			    const struct sockaddr *dst, socklen_t dst_len,
			    uint32_t timeout_ms)
{
	if (cma_acm_enabled())
		cma_acm_resolve_addr(id_priv, src_len ? src : NULL, dst);
	return cma_resolve_addr_cmd(id_priv, src_len ? src : NULL, src_len, dst,
				    dst_len, timeout_ms);
}

int cma_resolve_route_kernel(struct cma_id_private *id_priv,
			     uint32_t timeout_ms)
{
	if (cma_id_kernel(id_priv))
		return -1;
	/* ACM's path makes the kernel report ROUTE_RESOLVED by itself. */
	if (cma_acm_enabled() && !cma_acm_resolve_route(id_priv))
		return 0;
	return ucma_cmd_resolve_route(cma_id_fd(id_priv), id_priv->handle,
				      timeout_ms);
}

static __be16 cma_port_of(const struct sockaddr *addr)
{
	switch (addr->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)addr)->sin_port;
	case AF_INET6:
		return ((const struct sockaddr_in6 *)addr)->sin6_port;
	case AF_IB: {
		const struct sockaddr_ib *sib = (const void *)addr;

		return htobe16((uint16_t)(be64toh(sib->sib_sid) &
					  RDMA_IB_IP_PORT_MASK));
	}
	}
	return 0;
}

/* A NULL id: port 0 and errno EINVAL, as the header's address inlines. */
CMA_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	if (!id) {
		errno = EINVAL;
		return 0;
	}
	return cma_port_of(&id->route.addr.src_addr);
}

CMA_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	if (!id) {
		errno = EINVAL;
		return 0;
	}
	return cma_port_of(&id->route.addr.dst_addr);
}
