// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The ACM resolver's orchestration: its configuration (environment,
 * read once), the order its sources are asked in, and the resolution log.
 *
 *   RDMA_CM_USE_IB_ACM=1        turn it on (unset or 0: off, no effect at all)
 *   RDMA_CM_ACM_SOURCES=list    which of cache,service,table,sa to use
 *   RDMA_CM_ACM_CACHE_TTL=s     answers are kept this long (default 300)
 *   RDMA_CM_ACM_NEG_TTL=s       misses are remembered this long (default 5)
 *   RDMA_CM_ACM_TIMEOUT_MS=ms   bound on one service exchange (default 500)
 *   RDMA_CM_ACM_SA_TIMEOUT_MS=ms  bound on one SA query (default 500)
 *   RDMA_CM_ACM_LOG=stderr|path the resolution log
 * (and RDMA_CM_ACM_SERVICE, acm_service.c; RDMA_CM_ACM_HOSTS, acm_table.c)
 *
 * A query goes to the cache, then the service, then the address table
 * (whose GIDs become paths locally, or through the SA on InfiniBand),
 * then the SA for a destination given as a GID.  The first answer wins
 * and is cached; a miss everywhere is cached as negative and reported as
 * ENODATA, which the callers take as "use the kernel".
 */
#include <config.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acm.h"
#include "cm/cma.h"
#include "cm/test_hooks.h"
#include "util/env.h"
#include "util/fd_high.h"
#include "util/fork_fresh.h"

#define ACM_USE_CACHE (1u << 0)
#define ACM_USE_SERVICE (1u << 1)
#define ACM_USE_TABLE (1u << 2)
#define ACM_USE_SA (1u << 3)
#define ACM_USE_ALL                                                            \
	(ACM_USE_CACHE | ACM_USE_SERVICE | ACM_USE_TABLE | ACM_USE_SA)

static struct {
	bool enabled;
	unsigned int sources;
	unsigned int ttl_ms, neg_ttl_ms;
	unsigned int service_timeout_ms, sa_timeout_ms;
	int log_fd; /* -1: no log */
	bool log_owned; /* opened by us */
} acm_conf = {.log_fd = -1};

static pthread_once_t acm_once = PTHREAD_ONCE_INIT;
/*
 * Made afresh in a forked child (util/fork_fresh.h): a line's write may
 * wait on a pipe, so a fork does not wait for it.  It guards one number.
 */
CMA_FRESH_MUTEX(acm_log_lock)

/* A non-negative integer from the environment, capped; @def if unset/bad. */
static unsigned int acm_env_uint(const char *name, unsigned int def,
				 unsigned int max)
{
	const char *s = cma_env(name);
	unsigned long v;
	char *end;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || s[0] == '-')
		return def;
	return v > max ? max : (unsigned int)v;
}

static unsigned int acm_parse_sources(const char *s)
{
	static const struct {
		const char *name;
		unsigned int bit;
	} names[] = {{"cache", ACM_USE_CACHE},
		     {"service", ACM_USE_SERVICE},
		     {"table", ACM_USE_TABLE},
		     {"sa", ACM_USE_SA}};
	unsigned int bits = 0;
	size_t i, len;

	if (!s || !*s)
		return ACM_USE_ALL;
	while (*s) {
		len = strcspn(s, ",");
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i].name) == len &&
			    !strncmp(s, names[i].name, len))
				bits |= names[i].bit;
		s += len;
		if (*s)
			s++;
	}
	return bits;
}

static void acm_open_log(void)
{
	const char *s = cma_env("RDMA_CM_ACM_LOG");

	acm_conf.log_fd = -1;
	acm_conf.log_owned = false;
	if (!s || !*s)
		return;
	if (!strcmp(s, "stderr")) {
		acm_conf.log_fd = STDERR_FILENO;
		return;
	}
	acm_conf.log_fd = cma_fd_move_high(open(s, CMA_ENV_LOG_FLAGS, 0600),
					   fcntl, close);
	acm_conf.log_owned = acm_conf.log_fd >= 0;
}

static void acm_read_config(void)
{
	acm_conf.enabled = acm_env_uint("RDMA_CM_USE_IB_ACM", 0, 1) != 0;
	acm_conf.sources = acm_parse_sources(cma_env("RDMA_CM_ACM_SOURCES"));
	acm_conf.ttl_ms =
		1000 * acm_env_uint("RDMA_CM_ACM_CACHE_TTL", 300, 86400);
	acm_conf.neg_ttl_ms =
		1000 * acm_env_uint("RDMA_CM_ACM_NEG_TTL", 5, 86400);
	acm_conf.service_timeout_ms =
		acm_env_uint("RDMA_CM_ACM_TIMEOUT_MS", 500, 60000);
	acm_conf.sa_timeout_ms =
		acm_env_uint("RDMA_CM_ACM_SA_TIMEOUT_MS", 500, 60000);
	if (!acm_conf.service_timeout_ms)
		acm_conf.service_timeout_ms = 1;
	if (!acm_conf.sa_timeout_ms)
		acm_conf.sa_timeout_ms = 1;
	if (acm_conf.enabled)
		acm_open_log();
}

static void acm_init_once(void)
{
	acm_read_config();
}

bool cma_acm_enabled(void)
{
	pthread_once(&acm_once, acm_init_once);
	return acm_conf.enabled;
}

void cma_acm_reconfigure(void)
{
	pthread_once(&acm_once, acm_init_once);
	pthread_mutex_lock(&acm_log_lock);
	if (acm_conf.log_owned)
		close(acm_conf.log_fd);
	acm_conf.log_fd = -1;
	acm_read_config();
	pthread_mutex_unlock(&acm_log_lock);
	cma_acm_cache_flush();
	cma_acm_table_forget();
	cma_acm_ports_forget();
}

unsigned int cma_acm_service_timeout_ms(void)
{
	pthread_once(&acm_once, acm_init_once);
	return acm_conf.service_timeout_ms;
}

unsigned int cma_acm_sa_timeout_ms(void)
{
	pthread_once(&acm_once, acm_init_once);
	return acm_conf.sa_timeout_ms;
}

/* --- the log ----------------------------------------------------------------- */

void cma_acm_log(const char *fmt, ...)
{
	char line[512];
	struct timespec ts;
	va_list ap;
	int n, m;

	pthread_once(&acm_once, acm_init_once);
	if (acm_conf.log_fd < 0)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(line, sizeof(line),
		     "rdma_cm acm %lld.%06ld pid %d: ", (long long)ts.tv_sec,
		     ts.tv_nsec / 1000, (int)getpid());
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	pthread_mutex_lock(&acm_log_lock);
	/* A log that cannot be written is not worth failing for. */
	if (acm_conf.log_fd >= 0 && write(acm_conf.log_fd, line, (size_t)n))
		(void)0;
	pthread_mutex_unlock(&acm_log_lock);
}

const char *cma_acm_source_name(enum cma_acm_source src)
{
	switch (src) {
	case CMA_ACM_SRC_CACHE:
		return "cache";
	case CMA_ACM_SRC_SERVICE:
		return "service";
	case CMA_ACM_SRC_TABLE:
		return "table";
	case CMA_ACM_SRC_SA:
		return "sa";
	case CMA_ACM_SRC_KERNEL:
		return "kernel";
	default:
		return "none";
	}
}

/* --- endpoints ----------------------------------------------------------------- */

int cma_acm_ep_from_sockaddr(struct cma_acm_ep *ep, const struct sockaddr *sa)
{
	memset(ep, 0, sizeof(*ep));
	if (!sa)
		return 0;
	switch (sa->sa_family) {
	case AF_INET:
		ep->type = CMA_ACM_EP_IP4;
		memcpy(ep->ip4, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return 0;
	case AF_INET6:
		ep->type = CMA_ACM_EP_IP6;
		memcpy(ep->ip6, &((const struct sockaddr_in6 *)sa)->sin6_addr,
		       16);
		return 0;
	case AF_IB:
		ep->type = CMA_ACM_EP_GID;
		memcpy(ep->gid, &((const struct sockaddr_ib *)sa)->sib_addr,
		       16);
		return 0;
	}
	return cma_err(EAFNOSUPPORT);
}

const char *cma_acm_ep_str(const struct cma_acm_ep *ep, char *buf, size_t len)
{
	switch (ep->type) {
	case CMA_ACM_EP_NAME:
		snprintf(buf, len, "%s", ep->name);
		return buf;
	case CMA_ACM_EP_IP4:
		return inet_ntop(AF_INET, ep->ip4, buf, (socklen_t)len);
	case CMA_ACM_EP_IP6:
		return inet_ntop(AF_INET6, ep->ip6, buf, (socklen_t)len);
	case CMA_ACM_EP_GID:
		if (inet_ntop(AF_INET6, ep->gid, buf + 4, (socklen_t)len - 4))
			memcpy(buf, "gid:", 4);
		return buf;
	}
	snprintf(buf, len, "-");
	return buf;
}

void cma_acm_ip_to_gid(const struct cma_acm_ep *ip, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (ip->type == CMA_ACM_EP_IP4) {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(gid->raw + 12, ip->ip4, 4);
	} else if (ip->type == CMA_ACM_EP_IP6) {
		memcpy(gid->raw, ip->ip6, 16);
	}
}

int cma_acm_gid_to_ip(const union ibv_gid *gid, struct cma_acm_ep *ip)
{
	static const uint8_t v4_prefix[12] = {[10] = 0xff, [11] = 0xff};

	memset(ip, 0, sizeof(*ip));
	if (!memcmp(gid->raw, v4_prefix, 12)) {
		ip->type = CMA_ACM_EP_IP4;
		memcpy(ip->ip4, gid->raw + 12, 4);
		return 0;
	}
	/* Link-local GIDs need an interface to mean anything as IPv6. */
	if (gid->raw[0] == 0xfe && (gid->raw[1] & 0xc0) == 0x80)
		return -1;
	if (!gid->global.subnet_prefix && !gid->global.interface_id)
		return -1;
	ip->type = CMA_ACM_EP_IP6;
	memcpy(ip->ip6, gid->raw, 16);
	return 0;
}

/* --- the sources in order --------------------------------------------------------- */

/* The local port a path to @dgid starts at, given the query's source. */
static int acm_pick_port(const struct cma_acm_query *q,
			 const union ibv_gid *dgid, struct cma_acm_port *port)
{
	struct cma_acm_ep dst_ip, src_ip;
	union ibv_gid sgid;

	if (q->src.type == CMA_ACM_EP_GID) {
		memcpy(sgid.raw, q->src.gid, 16);
		return cma_acm_port_by_gid(&sgid, port);
	}
	if (q->src.type == CMA_ACM_EP_IP4 || q->src.type == CMA_ACM_EP_IP6) {
		src_ip = q->src;
	} else {
		/* No source given: the one the kernel would route from. */
		if (cma_acm_gid_to_ip(dgid, &dst_ip) ||
		    cma_acm_route_source(&dst_ip, &src_ip))
			return cma_err(ENODEV);
	}
	/* A RoCE port carries its IP addresses as GIDs... */
	cma_acm_ip_to_gid(&src_ip, &sgid);
	if (!cma_acm_port_by_gid(&sgid, port))
		return 0;
	/* ...an InfiniBand one is found through the table. */
	if (cma_acm_table_lookup(&src_ip, &sgid))
		return cma_err(ENODEV);
	return cma_acm_port_by_gid(&sgid, port);
}

static void acm_answer_from_path(struct cma_acm_answer *ans,
				 const struct ibv_path_data *path,
				 const struct cma_acm_port *port)
{
	memset(ans, 0, sizeof(*ans));
	ans->num_paths = 1;
	ans->paths[0] = *path;
	ans->dgid = path->path.dgid;
	if (port->link_layer == IBV_LINK_LAYER_ETHERNET)
		cma_acm_gid_to_ip(&port->gid, &ans->src_ip);
}

/* A path to @dgid: built locally when possible, else from the SA. */
static int acm_path_to(const struct cma_acm_query *q, const union ibv_gid *dgid,
		       bool allow_local, struct cma_acm_answer *ans)
{
	struct cma_acm_port port;
	struct ibv_path_data path;

	if (acm_pick_port(q, dgid, &port))
		return -1;
	if (allow_local && !cma_acm_path_build(&port, dgid, &path)) {
		acm_answer_from_path(ans, &path, &port);
		ans->source = CMA_ACM_SRC_TABLE;
		return 0;
	}
	if (!(acm_conf.sources & ACM_USE_SA) ||
	    port.link_layer != IBV_LINK_LAYER_INFINIBAND)
		return cma_err(ENODATA);
	if (cma_acm_sa_query(&port, dgid, &path)) {
		cma_acm_log("sa %s/%u: %m", port.dev_name, port.port_num);
		return -1;
	}
	acm_answer_from_path(ans, &path, &port);
	ans->source = CMA_ACM_SRC_SA;
	return 0;
}

static int acm_from_table(const struct cma_acm_query *q,
			  struct cma_acm_answer *ans)
{
	union ibv_gid dgid;

	if (q->dst.type == CMA_ACM_EP_GID)
		return cma_err(ENODATA); /* nothing for the table to add */
	if (cma_acm_table_lookup(&q->dst, &dgid))
		return -1;
	return acm_path_to(q, &dgid, true, ans);
}

/* A destination given as a GID needs only a path. */
static int acm_from_sa(const struct cma_acm_query *q,
		       struct cma_acm_answer *ans)
{
	union ibv_gid dgid;

	if (q->dst.type != CMA_ACM_EP_GID)
		return cma_err(ENODATA);
	memcpy(dgid.raw, q->dst.gid, 16);
	return acm_path_to(q, &dgid, true, ans);
}

static int acm_from_service(const struct cma_acm_query *q,
			    struct cma_acm_answer *ans)
{
	if (cma_acm_service_resolve(q, ans))
		return -1;
	ans->source = CMA_ACM_SRC_SERVICE;
	return 0;
}

static void acm_log_answer(const struct cma_acm_query *q,
			   const struct cma_acm_answer *ans,
			   enum cma_acm_source via, long us)
{
	char dst[80], src[80], gid[INET6_ADDRSTRLEN];

	cma_acm_ep_str(&q->dst, dst, sizeof(dst));
	cma_acm_ep_str(&q->src, src, sizeof(src));
	inet_ntop(AF_INET6, ans->dgid.raw, gid, sizeof(gid));
	if (via == CMA_ACM_SRC_CACHE)
		cma_acm_log("resolve %s from %s: source=cache (from %s) "
			    "paths=%d dgid=%s us=%ld",
			    dst, src, cma_acm_source_name(ans->source),
			    ans->num_paths, gid, us);
	else
		cma_acm_log(
			"resolve %s from %s: source=%s paths=%d dgid=%s us=%ld",
			dst, src, cma_acm_source_name(ans->source),
			ans->num_paths, gid, us);
}

static long acm_us_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1000000L +
	       (t1.tv_nsec - t0->tv_nsec) / 1000;
}

static int acm_resolve_uncached(const struct cma_acm_query *q,
				struct cma_acm_answer *ans)
{
	unsigned int use = acm_conf.sources;

	if ((use & ACM_USE_SERVICE) && !acm_from_service(q, ans))
		return 0;
	if ((use & ACM_USE_TABLE) && !acm_from_table(q, ans))
		return 0;
	if ((use & ACM_USE_SA) && !acm_from_sa(q, ans))
		return 0;
	return cma_err(ENODATA);
}

int cma_acm_resolve(const struct cma_acm_query *q, struct cma_acm_answer *ans)
{
	bool cache = acm_conf.sources & ACM_USE_CACHE;
	char dst[80], src[80];
	struct timespec t0;
	int hit = 0;
	bool log;

	if (!cma_acm_enabled())
		return cma_err(ENODATA);
	log = acm_conf.log_fd >= 0;
	/*
	 * A cache hit is a few hundred instructions; where the clock is not
	 * in the vDSO (some virtual machines) one clock_gettime would cost
	 * more than the hit itself, so time only what will be logged.
	 */
	if (log)
		clock_gettime(CLOCK_MONOTONIC, &t0);
	if (cache)
		hit = cma_acm_cache_get(q, ans);
	if (hit > 0) {
		if (log)
			acm_log_answer(q, ans, CMA_ACM_SRC_CACHE,
				       acm_us_since(&t0));
		ans->source = CMA_ACM_SRC_CACHE;
		return 0;
	}
	if (!hit && !acm_resolve_uncached(q, ans)) {
		if (cache)
			cma_acm_cache_put(q, ans, acm_conf.ttl_ms);
		if (log)
			acm_log_answer(q, ans, ans->source, acm_us_since(&t0));
		return 0;
	}
	if (!hit && cache)
		cma_acm_cache_put(q, NULL, acm_conf.neg_ttl_ms);
	if (log)
		cma_acm_log("resolve %s from %s: source=none (%s) us=%ld",
			    cma_acm_ep_str(&q->dst, dst, sizeof(dst)),
			    cma_acm_ep_str(&q->src, src, sizeof(src)),
			    hit ? "cached miss" : "no source knows it",
			    acm_us_since(&t0));
	return cma_err(ENODATA);
}
