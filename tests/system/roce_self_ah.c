// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * A test-only LD_PRELOAD shim that lets Debian's librdmacm (rdma-core 44)
 * open datagram rsockets on Soft-RoCE, so that our datagram rsockets can be
 * tested against it on the wire.
 *
 * rdma-core gives every datagram QP an address handle to itself, built from
 * the port's LID alone.  RoCE ports have no LIDs and every packet needs a
 * GRH, so the kernel refuses that handle (EINVAL) and the library's rconnect
 * and rbind-then-receive paths fail (BUGS.md debian-udpong-grh).  This wrapper
 * gives such a handle a GRH aimed at one of the port's own RoCE v2 IPv4
 * GIDs: rxe loops the packet back to the device, where the QP number alone
 * picks the QP, which is all a handle to oneself needs.  Handles that already
 * carry a GRH, and every handle on InfiniBand, pass through untouched.
 */
#include <config.h>

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

typedef struct ibv_ah *(*create_ah_fn)(struct ibv_pd *, struct ibv_ah_attr *);

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);

/* The first RoCE v2 GID of @port holding an IPv4-mapped address, or -1. */
static int self_gid(struct ibv_context *ctx, uint8_t port, union ibv_gid *gid)
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0,    0,
					     0, 0, 0, 0, 0xff, 0xff};
	struct ibv_port_attr pattr;
	struct ibv_gid_entry e;
	int i;

	if (ibv_query_port(ctx, port, &pattr))
		return -1;
	for (i = 0; i < pattr.gid_tbl_len; i++) {
		if (ibv_query_gid_ex(ctx, port, (uint32_t)i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    !memcmp(e.gid.raw, v4mapped, sizeof(v4mapped))) {
			*gid = e.gid;
			return i;
		}
	}
	return -1;
}

static bool needs_grh(struct ibv_pd *pd, const struct ibv_ah_attr *attr)
{
	struct ibv_port_attr pattr;

	return !attr->is_global &&
	       !ibv_query_port(pd->context, attr->port_num, &pattr) &&
	       pattr.link_layer == IBV_LINK_LAYER_ETHERNET;
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	create_ah_fn real = (create_ah_fn)dlsym(RTLD_NEXT, "ibv_create_ah");
	struct ibv_ah_attr fixed;
	int idx;

	if (!real)
		return NULL;
	if (!needs_grh(pd, attr))
		return real(pd, attr);
	fixed = *attr;
	idx = self_gid(pd->context, attr->port_num, &fixed.grh.dgid);
	if (idx < 0)
		return real(pd, attr);
	fixed.is_global = 1;
	fixed.grh.sgid_index = (uint8_t)idx;
	fixed.grh.hop_limit = 64;
	fprintf(stderr,
		"roce_self_ah: gave a LID-only address handle a GRH "
		"(GID index %d)\n",
		idx);
	return real(pd, &fixed);
}
