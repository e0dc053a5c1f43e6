// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rdma_acme: resolve a destination the way an application would, through
 * the library and its ACM resolver, and show what came back and from
 * where (in the spirit of ibacm's ib_acme, but without needing the
 * service).
 *
 * Step 1, rdma_getaddrinfo(): the address (AF_INET/AF_INET6/AF_IB) and
 * whether a route (ai_route) came with it.  Step 2, on a synchronous id,
 * rdma_resolve_addr() and rdma_resolve_route(): the path record the id
 * ends up with.  For each step it names the source that answered: cache,
 * service, table, sa, or kernel.  It learns that from the library's
 * resolution log (RDMA_CM_ACM_LOG), which it points at a scratch file of
 * its own unless the caller set one.
 *
 * With -C N every step runs N times and the average time is printed: a
 * rough measure of what the cache saves (tests/bench/run.sh acm).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/sa.h>

#include "common.h"

struct acme {
	const char *dst, *src, *port;
	unsigned long reps;
	bool no_route, kernel_only, quiet;
	char log_path[64];
	bool own_log;
	struct ex_addr src_addr; /* -s, resolved once */
};

static long log_size(const struct acme *a)
{
	const char *path = getenv("RDMA_CM_ACM_LOG");
	FILE *f;
	long n;

	if (!path || !strcmp(path, "stderr"))
		return -1;
	f = fopen(path, "r");
	if (!f)
		return 0;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fclose(f);
	(void)a;
	return n;
}

/*
 * The source named by the last "<kind> ... source=X" line the library
 * logged after @from, or "kernel" if it logged none (ACM off or unused).
 */
static const char *logged_source(long from, const char *kind, char *buf,
				 size_t len)
{
	const char *path = getenv("RDMA_CM_ACM_LOG");
	char line[600], *p;
	FILE *f;

	/* An empty RDMA_CM_ACM_LOG turns the log off: no way to tell. */
	snprintf(buf, len, "%s", path && !*path ? "unknown" : "kernel");
	if (from < 0 || !path || !*path || !(f = fopen(path, "r")))
		return buf;
	fseek(f, from, SEEK_SET);
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, kind) || !(p = strstr(line, "source=")))
			continue;
		p += strlen("source=");
		p[strcspn(p, " \n")] = '\0';
		snprintf(buf, len, "%s", p);
		if (!strcmp(buf, "none"))
			snprintf(buf, len, "kernel");
	}
	fclose(f);
	return buf;
}

static void print_gid(const char *what, const union ibv_gid *gid)
{
	char s[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, gid->raw, s, sizeof(s));
	printf("    %-8s %s\n", what, s);
}

static void print_path(const struct ibv_sa_path_rec *p)
{
	print_gid("sgid", &p->sgid);
	print_gid("dgid", &p->dgid);
	printf("    dlid     %u\n    slid     %u\n", be16toh(p->dlid),
	       be16toh(p->slid));
	printf("    pkey     0x%04x\n    sl       %u\n", be16toh(p->pkey),
	       p->sl);
	printf("    mtu      %d\n    rate     %u\n", 128 << p->mtu, p->rate);
	printf("    lifetime %u\n    hoplimit %u\n    tclass   %u\n",
	       p->packet_life_time, p->hop_limit, p->traffic_class);
}

static void print_wire_path(const struct ibv_path_data *d)
{
	const struct ibv_path_record *r = &d->path;
	struct ibv_sa_path_rec p;

	memset(&p, 0, sizeof(p));
	p.sgid = r->sgid;
	p.dgid = r->dgid;
	p.dlid = r->dlid;
	p.slid = r->slid;
	p.pkey = r->pkey;
	p.sl = be16toh(r->qosclass_sl) & 0xf;
	p.mtu = r->mtu & 0x3f;
	p.rate = r->rate & 0x3f;
	p.packet_life_time = r->packetlifetime & 0x3f;
	p.hop_limit = (uint8_t)be32toh(r->flowlabel_hoplimit);
	p.traffic_class = r->tclass;
	print_path(&p);
}

static int lookup(struct acme *a, struct rdma_addrinfo **res)
{
	struct rdma_addrinfo hints;
	int ret;

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	if (a->src) {
		hints.ai_src_addr = ex_sa(&a->src_addr);
		hints.ai_src_len = a->src_addr.len;
	}
	ret = rdma_getaddrinfo(a->dst, a->port, &hints, res);
	if (ret) {
		ex_addrinfo_err(ret, a->dst);
		return -1;
	}
	return 0;
}

static int step_getaddrinfo(struct acme *a, struct rdma_addrinfo **res)
{
	char buf[EX_ADDRSTRLEN], srcname[32];
	unsigned long i;
	uint64_t t0, us;
	long from = 0;

	/*
	 * With -C, one untimed lookup first: it opens the devices and fills
	 * the cache, a once-per-process cost the average should not carry.
	 */
	if (a->reps > 1) {
		if (lookup(a, res))
			return -1;
		rdma_freeaddrinfo(*res);
	}
	t0 = ex_now_us();
	for (i = 0; i < a->reps; i++) {
		if (i + 1 == a->reps)
			from = log_size(a);
		if (lookup(a, res))
			return -1;
		if (i + 1 < a->reps)
			rdma_freeaddrinfo(*res);
	}
	us = ex_now_us() - t0;
	printf("rdma_getaddrinfo %s: %s (%s), route %s, source %s\n", a->dst,
	       ex_ntop((*res)->ai_dst_addr, buf, sizeof(buf)),
	       (*res)->ai_family == AF_IB      ? "AF_IB"
	       : (*res)->ai_family == AF_INET6 ? "AF_INET6"
					       : "AF_INET",
	       (*res)->ai_route_len ? "included" : "not included",
	       logged_source(from, "resolve", srcname, sizeof(srcname)));
	if ((*res)->ai_route_len >= sizeof(struct ibv_path_data) && !a->quiet)
		print_wire_path((*res)->ai_route);
	if (a->reps > 1)
		printf("  average %.1f us over %lu\n", (double)us / a->reps,
		       a->reps);
	return 0;
}

/* One synchronous address + route resolution. */
static int resolve_once(struct rdma_addrinfo *res, struct rdma_cm_id **out)
{
	struct rdma_cm_id *id;

	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP)) {
		ex_syserr("rdma_create_id");
		return -1;
	}
	if (rdma_resolve_addr(id, res->ai_src_addr, res->ai_dst_addr,
			      EX_RESOLVE_MS)) {
		ex_syserr("rdma_resolve_addr");
		goto fail;
	}
	if (rdma_resolve_route(id, EX_RESOLVE_MS)) {
		ex_syserr("rdma_resolve_route");
		goto fail;
	}
	*out = id;
	return 0;
fail:
	rdma_destroy_id(id);
	return -1;
}

static int step_route(struct acme *a, struct rdma_addrinfo *res)
{
	uint64_t t0, us;
	struct rdma_cm_id *id = NULL;
	char srcname[32];
	unsigned long i;
	long from = 0;

	/* Untimed warm-up, as in step_getaddrinfo(). */
	if (a->reps > 1) {
		if (resolve_once(res, &id))
			return -1;
		rdma_destroy_id(id);
		id = NULL;
	}
	t0 = ex_now_us();
	for (i = 0; i < a->reps; i++) {
		if (id)
			rdma_destroy_id(id);
		id = NULL;
		if (i + 1 == a->reps)
			from = log_size(a);
		if (resolve_once(res, &id))
			return -1;
	}
	us = ex_now_us() - t0;
	printf("rdma_resolve_addr + rdma_resolve_route: %d path(s), source "
	       "%s\n",
	       id->route.num_paths,
	       logged_source(from, "route", srcname, sizeof(srcname)));
	if (id->route.num_paths && !a->quiet)
		print_path(&id->route.path_rec[0]);
	if (a->reps > 1)
		printf("  average %.1f us over %lu\n", (double)us / a->reps,
		       a->reps);
	rdma_destroy_id(id);
	return 0;
}

static void usage(void)
{
	printf("Usage: %s -d destination [options]\n"
	       "Resolve a destination through librdmacm and its ACM "
	       "resolver.\n\n"
	       "  -d dest   host name, IPv4 or IPv6 address to resolve\n"
	       "  -s src    local address to resolve from\n"
	       "  -p port   port (default 7471)\n"
	       "  -n        address only: no address/route resolution on an "
	       "id\n"
	       "  -K        kernel only: turn ACM off (RDMA_CM_USE_IB_ACM=0)\n"
	       "  -C count  repeat each step count times, print the average\n"
	       "  -q        do not print path records\n"
	       "  -h        show this help\n",
	       ex_prog());
}

static int parse_args(struct acme *a, int argc, char **argv)
{
	int op;

	while ((op = getopt(argc, argv, "d:s:p:nKC:qh")) != -1) {
		switch (op) {
		case 'd':
			a->dst = optarg;
			break;
		case 's':
			a->src = optarg;
			break;
		case 'p':
			a->port = optarg;
			break;
		case 'n':
			a->no_route = true;
			break;
		case 'K':
			a->kernel_only = true;
			break;
		case 'C':
			if (ex_parse_num(optarg, 'C', 1, 10000000, &a->reps))
				return EX_USAGE;
			break;
		case 'q':
			a->quiet = true;
			break;
		case 'h':
			usage();
			exit(0);
		default:
			return ex_usage_hint();
		}
	}
	if (!a->dst || optind != argc) {
		ex_err("a destination (-d) is needed");
		return ex_usage_hint();
	}
	return 0;
}

/* ACM on unless told otherwise, and a log to learn the sources from. */
static void set_environment(struct acme *a)
{
	int fd;

	setenv("RDMA_CM_USE_IB_ACM", a->kernel_only ? "0" : "1",
	       a->kernel_only);
	if (getenv("RDMA_CM_ACM_LOG"))
		return;
	snprintf(a->log_path, sizeof(a->log_path), "/tmp/rdma_acme.XXXXXX");
	fd = mkstemp(a->log_path);
	if (fd < 0)
		return;
	close(fd);
	a->own_log = true;
	setenv("RDMA_CM_ACM_LOG", a->log_path, 1);
}

int main(int argc, char **argv)
{
	struct acme a = {.port = "7471", .reps = 1};
	struct rdma_addrinfo *res = NULL;
	int ret;

	ex_init(argv[0]);
	ret = parse_args(&a, argc, argv);
	if (ret)
		return ret;
	set_environment(&a);
	/* Outside the timed loops: the source is not what is measured. */
	if (a.src &&
	    ex_resolve(a.src, "0", EX_RES_PASSIVE, RDMA_PS_TCP, &a.src_addr))
		return 1;
	ret = step_getaddrinfo(&a, &res) ? 1 : 0;
	if (!ret && !a.no_route)
		ret = step_route(&a, res) ? 1 : 0;
	rdma_freeaddrinfo(res);
	if (a.own_log)
		unlink(a.log_path);
	return ret;
}
