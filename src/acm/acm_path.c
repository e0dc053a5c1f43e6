// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Path records built locally, with no query on the wire.
 *
 * On RoCE a path is fully determined by the two GIDs and the local port:
 * there are no LIDs, the P_Key is the default one, and MTU and rate are
 * the port's.  The kernel fills in the Ethernet details (its neighbour
 * entry) when the path is handed over with RDMA_OPTION_IB_PATH.  On
 * InfiniBand a path needs the destination's LID, which only the SA knows,
 * unless the destination is a local port (loopback); everything else goes
 * to acm_sa.c.
 *
 * The local GIDs and port attributes are kept in a snapshot, refreshed
 * every few seconds or when a GID is not found (at most once a second),
 * so a lookup does not open devices.
 */
#include <config.h>

#include <arpa/inet.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acm.h"
#include "cm/cma.h"
#include "util/fork_fresh.h"

#define ACM_PORTS_MAX_AGE_MS 5000
#define ACM_PORTS_MISS_RETRY_MS 1000
/* The packet lifetime Linux gives RoCE paths it resolves itself. */
#define ACM_ROCE_PACKET_LIFETIME 16
#define ACM_ROCE_HOP_LIMIT 64
#define ACM_SELECTOR_EXACTLY (2 << 6)

/*
 * A leaf held across fork (util/fork_fresh.h): its holders open the local
 * devices and query their ports, and take no lock of this library's.
 */
CMA_LEAF_MUTEX(acm_ports_lock)
static struct cma_acm_port *acm_ports;
static size_t acm_nports;
static uint64_t acm_ports_taken_ms; /* 0: never */

static uint64_t acm_path_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Lane speed in units of 100 Mb/s, by ibv_port_attr.active_speed. */
static unsigned int acm_lane_speed(uint8_t speed)
{
	switch (speed) {
	case 1:
		return 25;
	case 2:
		return 50;
	case 4:
	case 8:
		return 100;
	case 16:
		return 140;
	case 32:
		return 250;
	case 64:
		return 500;
	case 128:
		return 1000;
	}
	return 25;
}

static unsigned int acm_lanes(uint8_t width)
{
	switch (width) {
	case 2:
		return 4;
	case 4:
		return 8;
	case 8:
		return 12;
	case 16:
		return 2;
	}
	return 1;
}

uint8_t cma_acm_rate_code(uint8_t active_width, uint8_t active_speed)
{
	/* IB rate codes and their rates in 100 Mb/s. */
	static const struct {
		uint8_t code;
		unsigned int rate;
	} rates[] = {
		{2, 25},    {5, 50},	{3, 100},   {11, 140},	{6, 200},
		{15, 250},  {19, 280},	{4, 300},   {7, 400},	{20, 500},
		{12, 560},  {8, 600},	{9, 800},   {16, 1000}, {13, 1120},
		{10, 1200}, {14, 1680}, {17, 2000}, {18, 3000}, {21, 4000},
		{22, 6000},
	};
	unsigned int want =
		acm_lane_speed(active_speed) * acm_lanes(active_width);
	uint8_t best = 2;
	size_t i;

	for (i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		if (rates[i].rate <= want)
			best = rates[i].code;
	return best;
}

static int acm_ports_add(struct cma_acm_port **v, size_t *n, size_t *cap,
			 const struct cma_acm_port *p)
{
	struct cma_acm_port *grown;

	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		grown = realloc(*v, *cap * sizeof(**v));
		if (!grown)
			return -1;
		*v = grown;
	}
	(*v)[(*n)++] = *p;
	return 0;
}

/* Every GID of one device, with its port's attributes. */
static void acm_scan_device(struct ibv_context *ctx, struct cma_acm_port **v,
			    size_t *n, size_t *cap)
{
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	struct ibv_gid_entry gids[256];
	struct cma_acm_port p;
	__be16 pkey;
	ssize_t ng, i;
	uint8_t port;

	if (ibv_query_device(ctx, &dattr))
		return;
	ng = ibv_query_gid_table(ctx, gids, 256, 0);
	for (port = 1; port <= dattr.phys_port_cnt; port++) {
		if (ibv_query_port(ctx, port, &pattr) ||
		    pattr.state != IBV_PORT_ACTIVE)
			continue;
		memset(&p, 0, sizeof(p));
		strncpy(p.dev_name, ibv_get_device_name(ctx->device),
			sizeof(p.dev_name) - 1);
		p.port_num = port;
		p.link_layer = pattr.link_layer;
		p.lid = pattr.lid;
		p.sm_lid = pattr.sm_lid;
		p.sm_sl = pattr.sm_sl;
		p.lmc = pattr.lmc;
		p.active_mtu = pattr.active_mtu;
		p.rate = cma_acm_rate_code(pattr.active_width,
					   pattr.active_speed);
		p.pkey = ibv_query_pkey(ctx, port, 0, &pkey) ? 0xffff
							     : be16toh(pkey);
		for (i = 0; i < ng; i++) {
			if (gids[i].port_num != port)
				continue;
			p.gid = gids[i].gid;
			p.gid_index = (int)gids[i].gid_index;
			if (acm_ports_add(v, n, cap, &p))
				return;
		}
	}
}

/* Take a new snapshot.  Locked. */
static void acm_ports_refresh(uint64_t now)
{
	struct cma_acm_port *v = NULL;
	struct ibv_device **list;
	struct ibv_context *ctx;
	size_t n = 0, cap = 0;
	int i, count = 0;

	acm_ports_taken_ms = now;
	list = ibv_get_device_list(&count);
	for (i = 0; list && i < count; i++) {
		ctx = ibv_open_device(list[i]);
		if (!ctx)
			continue;
		acm_scan_device(ctx, &v, &n, &cap);
		ibv_close_device(ctx);
	}
	if (list)
		ibv_free_device_list(list);
	free(acm_ports);
	acm_ports = v;
	acm_nports = n;
}

static const struct cma_acm_port *acm_ports_find(const union ibv_gid *gid)
{
	size_t i;

	for (i = 0; i < acm_nports; i++)
		if (!memcmp(&acm_ports[i].gid, gid, sizeof(*gid)))
			return &acm_ports[i];
	return NULL;
}

int cma_acm_port_by_gid(const union ibv_gid *gid, struct cma_acm_port *port)
{
	const struct cma_acm_port *p;
	uint64_t now = acm_path_now_ms();

	pthread_mutex_lock(&acm_ports_lock);
	if (!acm_ports_taken_ms ||
	    now - acm_ports_taken_ms > ACM_PORTS_MAX_AGE_MS)
		acm_ports_refresh(now);
	p = acm_ports_find(gid);
	if (!p && now - acm_ports_taken_ms > ACM_PORTS_MISS_RETRY_MS) {
		acm_ports_refresh(now);
		p = acm_ports_find(gid);
	}
	if (p)
		*port = *p;
	pthread_mutex_unlock(&acm_ports_lock);
	return p ? 0 : cma_err(ENODEV);
}

int cma_acm_port_first_ib(struct cma_acm_port *port)
{
	uint64_t now = acm_path_now_ms();
	bool found = false;
	size_t i;

	pthread_mutex_lock(&acm_ports_lock);
	if (!acm_ports_taken_ms ||
	    now - acm_ports_taken_ms > ACM_PORTS_MAX_AGE_MS)
		acm_ports_refresh(now);
	for (i = 0; i < acm_nports && !found; i++) {
		if (acm_ports[i].link_layer == IBV_LINK_LAYER_INFINIBAND &&
		    acm_ports[i].sm_lid) {
			*port = acm_ports[i];
			found = true;
		}
	}
	pthread_mutex_unlock(&acm_ports_lock);
	return found ? 0 : cma_err(ENODEV);
}

void cma_acm_ports_forget(void)
{
	pthread_mutex_lock(&acm_ports_lock);
	free(acm_ports);
	acm_ports = NULL;
	acm_nports = 0;
	acm_ports_taken_ms = 0;
	pthread_mutex_unlock(&acm_ports_lock);
}

/*
 * The kernel's choice of source address towards @dst: connect() on a UDP
 * socket only consults the routing table, it sends nothing.
 */
int cma_acm_route_source(const struct cma_acm_ep *dst, struct cma_acm_ep *src)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	int fd, ret, err;

	memset(&ss, 0, sizeof(ss));
	if (dst->type == CMA_ACM_EP_IP4) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(9);
		memcpy(&sin->sin_addr, dst->ip4, 4);
		len = sizeof(*sin);
	} else if (dst->type == CMA_ACM_EP_IP6) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(9);
		memcpy(&sin6->sin6_addr, dst->ip6, 16);
		len = sizeof(*sin6);
	} else {
		return cma_err(EAFNOSUPPORT);
	}
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	ret = connect(fd, (struct sockaddr *)&ss, len);
	if (!ret) {
		len = sizeof(ss);
		ret = getsockname(fd, (struct sockaddr *)&ss, &len);
	}
	err = errno;
	close(fd);
	if (ret)
		return cma_err(err);
	return cma_acm_ep_from_sockaddr(src, (struct sockaddr *)&ss);
}

static void acm_path_common(const struct cma_acm_port *port,
			    const union ibv_gid *dgid,
			    struct ibv_path_data *out)
{
	struct ibv_path_record *p = &out->path;

	memset(out, 0, sizeof(*out));
	out->flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY |
		     IBV_PATH_FLAG_BIDIRECTIONAL;
	p->sgid = port->gid;
	p->dgid = *dgid;
	p->reversible_numpath = 0x80 | 1;
	p->pkey = htobe16(port->pkey ? port->pkey : 0xffff);
	p->mtu = ACM_SELECTOR_EXACTLY | (uint8_t)port->active_mtu;
	p->rate = ACM_SELECTOR_EXACTLY | port->rate;
}

int cma_acm_path_build(const struct cma_acm_port *port,
		       const union ibv_gid *dgid, struct ibv_path_data *out)
{
	struct cma_acm_port dst_port;
	struct ibv_path_record *p = &out->path;

	acm_path_common(port, dgid, out);
	if (port->link_layer == IBV_LINK_LAYER_ETHERNET) {
		p->flowlabel_hoplimit = htobe32(ACM_ROCE_HOP_LIMIT);
		p->packetlifetime =
			ACM_SELECTOR_EXACTLY | ACM_ROCE_PACKET_LIFETIME;
		return 0;
	}
	/* InfiniBand: only a destination on a local port has a known LID. */
	if (cma_acm_port_by_gid(dgid, &dst_port) ||
	    dst_port.link_layer == IBV_LINK_LAYER_ETHERNET)
		return cma_err(ENODATA);
	p->slid = htobe16(port->lid);
	p->dlid = htobe16(dst_port.lid);
	p->packetlifetime = ACM_SELECTOR_EXACTLY | 18;
	return 0;
}
