// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Where the CM calls use ACM answers (only when RDMA_CM_USE_IB_ACM=1):
 *
 * rdma_getaddrinfo: a host name is first asked of ACM (cache, service,
 *   address table).  A GID that carries an IP address (RoCE) comes back
 *   as that IP address; one that does not (InfiniBand) as an AF_IB
 *   address, unless the hints insist on IP.  Either way the entry carries
 *   the path records in ai_route.  Names ACM does not know, and numeric
 *   addresses, go through getaddrinfo(3) as usual; the first entry then
 *   gets ACM's route if ACM has one.
 *
 * rdma_resolve_addr: the kernel still resolves the address (on RoCE every
 *   packet needs the neighbour's MAC, which only it knows); ACM's answer
 *   for the pair is looked up here and kept on the id.
 *
 * rdma_resolve_route: ACM's path, checked against the GIDs the kernel
 *   resolved for the id, goes to the kernel with RDMA_OPTION_IB_PATH: the
 *   kernel then reports ROUTE_RESOLVED itself, with no SA query, exactly
 *   the event RESOLVE_ROUTE would have produced.  Any miss, mismatch or
 *   refusal falls back to RESOLVE_ROUTE.
 *
 * So the application sees the same events in the same order; the worst
 * extra delay is one service timeout plus one SA timeout per new
 * destination (negative answers are cached).
 */
#include <config.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acm.h"
#include "cm/cma.h"
#include "cm/ucma_abi.h"

static bool acm_is_numeric(const char *node)
{
	uint8_t buf[16];

	return inet_pton(AF_INET, node, buf) == 1 ||
	       inet_pton(AF_INET6, node, buf) == 1;
}

static int acm_ep_from_name(struct cma_acm_ep *ep, const char *node)
{
	size_t i, len = strlen(node);

	memset(ep, 0, sizeof(*ep));
	if (!len || len >= CMA_ACM_NAME_MAX)
		return -1;
	for (i = 0; i < len; i++)
		ep->name[i] = (char)tolower((unsigned char)node[i]);
	ep->type = CMA_ACM_EP_NAME;
	return 0;
}

static int acm_attach_route(struct rdma_addrinfo *rai,
			    const struct cma_acm_answer *ans)
{
	size_t len = (size_t)ans->num_paths * sizeof(ans->paths[0]);

	if (!len || rai->ai_route)
		return 0;
	rai->ai_route = malloc(len);
	if (!rai->ai_route)
		return -1;
	memcpy(rai->ai_route, ans->paths, len);
	rai->ai_route_len = len;
	return 0;
}

/* The primary path of an answer (the one the kernel will use). */
static const struct ibv_path_record *
acm_primary(const struct cma_acm_answer *ans)
{
	int i;

	for (i = 0; i < ans->num_paths; i++)
		if (ans->paths[i].flags & IBV_PATH_FLAG_PRIMARY)
			return &ans->paths[i].path;
	return &ans->paths[0].path;
}

static uint16_t acm_service_port(const char *service)
{
	unsigned long v;
	char *end;

	if (!service)
		return 0;
	v = strtoul(service, &end, 10);
	return *end || v > 65535 ? 0 : (uint16_t)v;
}

static struct sockaddr_ib *acm_sib(const union ibv_gid *gid, __be16 pkey,
				   const struct rdma_addrinfo *tmpl,
				   uint16_t port)
{
	struct sockaddr_ib *sib = calloc(1, sizeof(*sib));
	uint64_t ps = tmpl->ai_port_space == RDMA_PS_UDP ? RDMA_IB_IP_PS_UDP
							 : RDMA_IB_IP_PS_TCP;

	if (!sib)
		return NULL;
	sib->sib_family = AF_IB;
	sib->sib_pkey = pkey;
	memcpy(&sib->sib_addr, gid, 16);
	if (port) {
		sib->sib_sid = htobe64(ps | port);
		sib->sib_sid_mask = htobe64(~0ULL);
	}
	return sib;
}

/* An InfiniBand answer: AF_IB source and destination from the path. */
static struct rdma_addrinfo *acm_ai_ib(const char *node, const char *service,
				       const struct rdma_addrinfo *tmpl,
				       const struct cma_acm_answer *ans)
{
	const struct ibv_path_record *p = acm_primary(ans);
	struct rdma_addrinfo *rai;

	rai = cma_ai_dup_list(tmpl);
	if (!rai)
		return NULL;
	rai->ai_family = AF_IB;
	free(rai->ai_src_addr);
	free(rai->ai_dst_addr);
	rai->ai_src_addr =
		(struct sockaddr *)acm_sib(&p->sgid, p->pkey, tmpl, 0);
	rai->ai_dst_addr = (struct sockaddr *)acm_sib(
		&p->dgid, p->pkey, tmpl, acm_service_port(service));
	rai->ai_src_len = sizeof(struct sockaddr_ib);
	rai->ai_dst_len = sizeof(struct sockaddr_ib);
	rai->ai_dst_canonname = strdup(node);
	if (!rai->ai_src_addr || !rai->ai_dst_addr || !rai->ai_dst_canonname) {
		rdma_freeaddrinfo(rai);
		errno = ENOMEM;
		return NULL;
	}
	return rai;
}

/* A numeric service's port; -1 for a name (which needs a lookup). */
static int acm_numeric_port(const char *service)
{
	unsigned long v;
	char *end;

	if (!service)
		return 0;
	if (!*service || service[0] < '0' || service[0] > '9')
		return -1;
	v = strtoul(service, &end, 10);
	return *end || v > 65535 ? -1 : (int)v;
}

/*
 * The entry for the IP address behind a RoCE GID.  With a numeric (or no)
 * service it is built here without getaddrinfo(), which keeps a cached
 * answer free of any system call; a service name is looked up.
 */
static struct rdma_addrinfo *acm_ai_ip_entry(const char *node,
					     const char *service,
					     const struct rdma_addrinfo *tmpl,
					     const struct cma_acm_ep *ip)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	int port = acm_numeric_port(service);
	struct addrinfo ai;

	if (port < 0)
		return NULL;
	memset(&ss, 0, sizeof(ss));
	memset(&ai, 0, sizeof(ai));
	if (ip->type == CMA_ACM_EP_IP4) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		memcpy(&sin->sin_addr, ip->ip4, 4);
		ai.ai_addrlen = sizeof(*sin);
	} else {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		memcpy(&sin6->sin6_addr, ip->ip6, 16);
		ai.ai_addrlen = sizeof(*sin6);
	}
	ai.ai_family = ss.ss_family;
	ai.ai_addr = (struct sockaddr *)&ss;
	return cma_ai_from_addrinfo(&ai, node, tmpl);
}

/* A RoCE answer: the IP address behind the GID. */
static struct rdma_addrinfo *acm_ai_ip(const char *node, const char *service,
				       const struct rdma_addrinfo *tmpl,
				       const struct cma_acm_ep *ip)
{
	char str[INET6_ADDRSTRLEN];
	struct rdma_addrinfo t = *tmpl, *rai;

	if (acm_numeric_port(service) >= 0)
		return acm_ai_ip_entry(node, service, tmpl, ip);
	inet_ntop(ip->type == CMA_ACM_EP_IP4 ? AF_INET : AF_INET6, ip->ip6, str,
		  sizeof(str));
	t.ai_flags |= RAI_NUMERICHOST;
	rai = cma_ai_lookup(str, service, &t);
	if (!rai)
		return NULL;
	rdma_freeaddrinfo(rai->ai_next);
	rai->ai_next = NULL;
	free(rai->ai_dst_canonname);
	rai->ai_dst_canonname = strdup(node);
	if (!rai->ai_dst_canonname) {
		rdma_freeaddrinfo(rai);
		errno = ENOMEM;
		return NULL;
	}
	return rai;
}

static bool acm_family_ok(const struct rdma_addrinfo *tmpl, int family)
{
	if (tmpl->ai_family == AF_UNSPEC || tmpl->ai_family == family)
		return true;
	return tmpl->ai_family == AF_IB && !(tmpl->ai_flags & RAI_FAMILY);
}

/* The entry for a name ACM resolved, or NULL (then getaddrinfo decides). */
static struct rdma_addrinfo *
acm_ai_from_answer(const char *node, const char *service,
		   const struct rdma_addrinfo *tmpl,
		   const struct cma_acm_answer *ans)
{
	struct rdma_addrinfo *rai = NULL;
	struct cma_acm_ep ip;

	if (!cma_acm_gid_to_ip(&ans->dgid, &ip)) {
		if (acm_family_ok(tmpl, ip.type == CMA_ACM_EP_IP4 ? AF_INET
								  : AF_INET6))
			rai = acm_ai_ip(node, service, tmpl, &ip);
	} else if (acm_family_ok(tmpl, AF_IB) && tmpl->ai_family != AF_INET &&
		   tmpl->ai_family != AF_INET6) {
		rai = acm_ai_ib(node, service, tmpl, ans);
	}
	if (!rai)
		return NULL;
	if (!(tmpl->ai_flags & RAI_NOROUTE) && acm_attach_route(rai, ans)) {
		rdma_freeaddrinfo(rai);
		errno = ENOMEM;
		return NULL;
	}
	return rai;
}

/* ACM's route for the first entry of an ordinary lookup, if it has one. */
static void acm_ai_add_route(struct rdma_addrinfo *rai)
{
	struct cma_acm_answer ans;
	struct cma_acm_query q;

	memset(&q, 0, sizeof(q));
	if (rai->ai_route ||
	    cma_acm_ep_from_sockaddr(&q.dst, rai->ai_dst_addr) ||
	    q.dst.type == CMA_ACM_EP_NONE)
		return;
	if (rai->ai_src_addr)
		cma_acm_ep_from_sockaddr(&q.src, rai->ai_src_addr);
	if (!cma_acm_resolve(&q, &ans))
		acm_attach_route(rai,
				 &ans); /* no memory: no route, still fine */
}

struct rdma_addrinfo *cma_acm_ai_lookup(const char *node, const char *service,
					const struct rdma_addrinfo *tmpl)
{
	struct rdma_addrinfo *list;
	struct cma_acm_answer ans;
	struct cma_acm_query q;

	memset(&q, 0, sizeof(q));
	if (tmpl->ai_src_addr)
		cma_acm_ep_from_sockaddr(&q.src, tmpl->ai_src_addr);
	if (node && !(tmpl->ai_flags & RAI_NUMERICHOST) &&
	    !acm_is_numeric(node) && !acm_ep_from_name(&q.dst, node) &&
	    !cma_acm_resolve(&q, &ans)) {
		list = acm_ai_from_answer(node, service, tmpl, &ans);
		if (list)
			return list;
	}
	list = cma_ai_lookup(node, service, tmpl);
	if (list && !(tmpl->ai_flags & (RAI_NOROUTE | RAI_PASSIVE)))
		acm_ai_add_route(list);
	return list;
}

/* --- ids -------------------------------------------------------------------------- */

static void acm_id_keep(struct cma_id_private *id_priv,
			const struct cma_acm_answer *ans)
{
	struct cma_id_rare *rare =
		ans ? cma_id_rare(id_priv) : cma_id_rare_of(id_priv);

	if (!rare)
		return; /* nothing kept: the route is asked for again */
	free(rare->acm_answer);
	rare->acm_answer = NULL;
	if (!ans)
		return;
	rare->acm_answer = malloc(sizeof(*ans));
	if (rare->acm_answer)
		memcpy(rare->acm_answer, ans, sizeof(*ans));
}

void cma_acm_resolve_addr(struct cma_id_private *id_priv,
			  const struct sockaddr *src,
			  const struct sockaddr *dst)
{
	struct cma_acm_answer ans;
	struct cma_acm_query q;

	acm_id_keep(id_priv, NULL);
	memset(&q, 0, sizeof(q));
	if (cma_acm_ep_from_sockaddr(&q.dst, dst) ||
	    (src && src->sa_family && cma_acm_ep_from_sockaddr(&q.src, src)))
		return;
	if (!cma_acm_resolve(&q, &ans))
		acm_id_keep(id_priv, &ans);
}

static void acm_log_route(const struct cma_id_private *id_priv,
			  const char *what)
{
	const struct rdma_addr *a = &id_priv->id.route.addr;
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, a->addr.ibaddr.sgid.raw, s, sizeof(s));
	inet_ntop(AF_INET6, a->addr.ibaddr.dgid.raw, d, sizeof(d));
	cma_acm_log("route %s -> %s: %s", s, d, what);
}

/* An answer for the id's resolved addresses: the kept one or a new one. */
static int acm_id_answer(struct cma_id_private *id_priv,
			 struct cma_acm_answer *ans)
{
	const struct cma_id_rare *rare = cma_id_rare_of(id_priv);
	struct rdma_addr *a = &id_priv->id.route.addr;
	struct cma_acm_query q;

	if (rare && rare->acm_answer) {
		*ans = *rare->acm_answer;
		return 0;
	}
	memset(&q, 0, sizeof(q));
	if (cma_acm_ep_from_sockaddr(&q.dst, &a->dst_addr) ||
	    cma_acm_ep_from_sockaddr(&q.src, &a->src_addr))
		return -1;
	return cma_acm_resolve(&q, ans);
}

int cma_acm_resolve_route(struct cma_id_private *id_priv)
{
	const union ibv_gid *sgid = &id_priv->id.route.addr.addr.ibaddr.sgid;
	const union ibv_gid *dgid = &id_priv->id.route.addr.addr.ibaddr.dgid;
	const struct ibv_path_record *p;
	struct cma_acm_answer ans;
	char what[64];

	if (acm_id_answer(id_priv, &ans)) {
		acm_log_route(id_priv, "source=kernel (ACM has no path)");
		return -1;
	}
	acm_id_keep(id_priv, NULL);
	p = acm_primary(&ans);
	if (memcmp(&p->sgid, sgid, 16) || memcmp(&p->dgid, dgid, 16)) {
		acm_log_route(id_priv,
			      "source=kernel (ACM's path has other GIDs)");
		return -1;
	}
	if (cma_id_kernel(id_priv) ||
	    ucma_cmd_set_option(
		    cma_id_fd(id_priv), id_priv->handle, RDMA_OPTION_IB,
		    RDMA_OPTION_IB_PATH, ans.paths,
		    (uint32_t)(ans.num_paths * sizeof(ans.paths[0])))) {
		snprintf(what, sizeof(what), "source=kernel (IB_PATH: %s)",
			 strerror(errno));
		acm_log_route(id_priv, what);
		return -1;
	}
	snprintf(what, sizeof(what), "source=%s",
		 cma_acm_source_name(ans.source));
	acm_log_route(id_priv, what);
	return 0;
}
