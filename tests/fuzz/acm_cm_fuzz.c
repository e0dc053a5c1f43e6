// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// FUZZ_SOURCES: @library tests/unit/fake_ucma.c tests/unit/fake_verbs.c
/*
 * The CM calls with the ACM resolver on (RDMA_CM_USE_IB_ACM=1), where
 * src/acm/acm_cm.c puts its answers to use and src/acm/acm_path.c builds paths
 * from the local ports: rdma_getaddrinfo of names, numeric addresses and
 * services with any hints, rdma_create_ep on its answer, and
 * rdma_resolve_addr / rdma_resolve_route of ids (which hand ACM's path to
 * the kernel with RDMA_OPTION_IB_PATH, or fall back), on the fake kernel
 * and verbs devices.
 *
 * What ACM knows comes from the input through its real sources:
 *  - the ibacm service: RDMA_CM_ACM_SERVICE names a Unix socket that this
 *    harness serves (connect(2) on that path is interposed: the library's
 *    socket becomes one end of a socket pair whose other end holds the
 *    input's answer, a header and up to 8 records: paths with GIDs of the
 *    local ports, the address file's or any, and any other fields; source
 *    addresses; names; unknown types), or refuses;
 *  - the address file (RDMA_CM_ACM_HOSTS, written once: names and
 *    addresses of RoCE and InfiniBand peers), with paths built from the
 *    local port (acm_path.c) whose link layer, LIDs, MTU, rate and GIDs
 *    are the input's;
 *  - the cache, between the calls of one input (emptied for each input).
 * The kernel resolves every address and route at once; the GIDs it
 * reports for an id (which ACM's path must match) are the input's, and it
 * may refuse the path.  The environment is the harness's (secure_getenv
 * is interposed): the log goes to /dev/null, the service timeout is 1 ms.
 * getaddrinfo(3) is interposed too, to be numeric only: no name reaches
 * DNS.
 *
 * Checked: every rdma_getaddrinfo entry has its addresses where its
 * lengths say, of the family it claims (AF_IB ones a sockaddr_ib), a
 * route of whole path records only when RAI_NOROUTE is not set, and a
 * NUL-terminated name; every call fails only with -1 and errno; ids and
 * endpoints are destroyed with no kernel id left (LeakSanitizer checks
 * the memory, and that each service exchange closed its socket).
 *
 * Input: a flags byte (bit 0: InfiniBand port, else RoCE; bits 1-3: the
 * sources, cache, service, table; bit 4: the service refuses), the port
 * (lid, sm_lid, an unused byte, width, speed, a byte of two GID
 * selectors), then operations: one byte (mod 4) and its arguments.
 */
#include <config.h>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "acm/acm.h"
#include "cm/cma.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "fuzz_input.h"
#include "cm/test_hooks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SERVICE_PATH "/nonexistent/rdma-acm-fuzz.sock"

static uint8_t flags;
static unsigned long sink;

/* --- GIDs: this host's ports, the address file's peers, any ------------------ */

static const char *const gids[] = {
	"::ffff:192.0.2.1", /* us, RoCE (an IPv4 address's GID) */
	"::ffff:192.0.2.2", /* roce4 in the file */
	"2001:db8::1", /* us, RoCE IPv6 */
	"2001:db8::2", /* roce6 */
	"fe80::2:c903:1", /* us, InfiniBand */
	"fe80::2:c903:2", /* ibnode */
	"fe80::5", /* nobody */
};
#define NGIDS (sizeof(gids) / sizeof(gids[0]))

static void gid_of(uint8_t sel, uint8_t raw[16])
{
	if (sel < 0xf0) {
		inet_pton(AF_INET6, gids[sel % NGIDS], raw);
		return;
	}
	take(raw, 16);
}

/* --- the environment: what cma_env reads --------------------------------------- */

static char hosts_path[64], sources[32], last_sources[32] = "-";

char *secure_getenv(const char *name)
{
	if (!strcmp(name, "RDMA_CM_USE_IB_ACM"))
		return "1";
	if (!strcmp(name, "RDMA_CM_ACM_SOURCES"))
		return sources;
	if (!strcmp(name, "RDMA_CM_ACM_SERVICE"))
		return "unix:" SERVICE_PATH;
	if (!strcmp(name, "RDMA_CM_ACM_HOSTS"))
		return hosts_path;
	if (!strcmp(name, "RDMA_CM_ACM_TIMEOUT_MS"))
		return "1";
	if (!strcmp(name, "RDMA_CM_ACM_LOG"))
		return "/dev/null";
	return NULL;
}

/* --- the ibacm service ---------------------------------------------------------- */

/* The service's end of the last exchange, closed after each operation. */
static int service_end = -1;

/* The answer to the next service exchange, built from the input. */
static void service_answer(uint8_t *buf, size_t *len)
{
	struct cma_acm_wire_hdr hdr;
	struct cma_acm_wire_ep ep;
	uint8_t n = take8(), i, sel, g;

	memset(&hdr, 0, sizeof(hdr));
	hdr.version = n & 0x80 ? take8() : CMA_ACM_VERSION;
	hdr.opcode = CMA_ACM_OP_RESOLVE | CMA_ACM_OP_ACK;
	hdr.status = n & 0x40 ? 1 : 0;
	*len = CMA_ACM_HDR_LEN;
	for (i = 0; i < (n & 7) + (n & 8 ? 1 : 0); i++) {
		sel = take8();
		memset(&ep, 0, sizeof(ep));
		ep.flags = take8();
		switch (sel & 3) {
		case 0: /* a path: GIDs, then the input's other fields */
			ep.type = CMA_ACM_INFO_PATH;
			take(&ep.info.path, sizeof(ep.info.path));
			g = take8();
			gid_of(g & 0xf, ep.info.path.sgid.raw);
			gid_of(g >> 4, ep.info.path.dgid.raw);
			if (sel & 4)
				ep.info.path.mtu = IBV_MTU_1024 | 0x80;
			if (sel & 8)
				ep.info.path.pkey = 0xffff;
			break;
		case 1:
			ep.type = sel & 4 ? CMA_ACM_INFO_IP6 : CMA_ACM_INFO_IP;
			take(ep.info.addr, 16);
			break;
		case 2:
			ep.type = CMA_ACM_INFO_NAME;
			take(ep.info.name, 8);
			break;
		default:
			ep.type = take8();
			take(&ep.info, sizeof(ep.info));
		}
		memcpy(buf + *len, &ep, sizeof(ep));
		*len += sizeof(ep);
	}
	hdr.length = (uint16_t)*len;
	if (n & 0x20)
		hdr.length = take8(); /* a length that lies */
	memcpy(buf, &hdr, sizeof(hdr));
}

/*
 * connect(2): the service's path is served here.  The library's socket
 * becomes one end of a socket pair; the other holds the answer, then says
 * no more (so a short answer ends the exchange at once).  Every other
 * connect is the system's.
 */
int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	const struct sockaddr_un *sun = (const struct sockaddr_un *)addr;
	uint8_t answer[CMA_ACM_MSG_MAX + 64];
	size_t n;
	int sv[2];

	if (addr->sa_family != AF_UNIX || strcmp(sun->sun_path, SERVICE_PATH))
		return (int)syscall(SYS_connect, fd, addr, len);
	if (flags & 0x10) {
		errno = ECONNREFUSED;
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	if (dup3(sv[0], fd, O_CLOEXEC) != fd)
		abort();
	close(sv[0]);
	service_answer(answer, &n);
	if (write(sv[1], answer, n) != (ssize_t)n)
		abort();
	shutdown(sv[1], SHUT_WR);
	/* Open for the request (never read) until the operation ends. */
	if (service_end >= 0)
		close(service_end);
	service_end = sv[1];
	return 0;
}

/*
 * getaddrinfo(3): what ACM does not know goes there; no name may reach
 * DNS (a run would wait on the network), so every lookup is numeric.
 */
int getaddrinfo(const char *node, const char *service,
		const struct addrinfo *hints, struct addrinfo **res)
{
	static int (*real)(const char *, const char *, const struct addrinfo *,
			   struct addrinfo **);
	struct addrinfo h;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "getaddrinfo");
	memset(&h, 0, sizeof(h));
	if (hints)
		h = *hints;
	h.ai_flags |= AI_NUMERICHOST;
	return real(node, service, &h, res);
}

/* --- the local port --------------------------------------------------------------- */

static void set_port(void)
{
	struct fake_verbs_port port;
	uint8_t b[5], g;

	memset(&port, 0, sizeof(port));
	take(b, sizeof(b));
	g = take8();
	port.link_layer =
		flags & 1 ? IBV_LINK_LAYER_INFINIBAND : IBV_LINK_LAYER_ETHERNET;
	port.lid = b[0];
	port.sm_lid = b[1];
	port.active_width = b[3];
	port.active_speed = b[4];
	port.ngids = 2;
	gid_of(g & 0xf, port.gids[0].raw);
	gid_of(g >> 4, port.gids[1].raw);
	(void)b[2];
	fake_verbs_set_port(NULL, &port);
}

static uint64_t dev_guid;

/* The GIDs the kernel reports for an id (ACM's path must have them). */
static void set_route(void)
{
	struct fake_ucma_route route = {
		.node_guid = htobe64(dev_guid),
		.port_num = 1,
		.pkey = 0xffff,
	};
	uint8_t g = take8();

	gid_of(g & 0xf, route.sgid);
	gid_of(g >> 4, route.dgid);
	fake_ucma_set_route(&route);
}

/* --- the calls --------------------------------------------------------------------- */

static const char *const nodes[] = {
	"roce4",       "ROCE6",	     "ibnode",	       "unknown", "192.0.2.2",
	"2001:db8::2", "192.0.2.77", "fe80::2:c903:2", NULL,
};
static const char *const services[] = {NULL, "7471", "0", "65536", "x1"};

static void check_addr(const struct sockaddr *sa, socklen_t len)
{
	if (!len) {
		if (sa)
			abort();
		return;
	}
	if (!sa)
		abort();
	switch (sa->sa_family) {
	case AF_INET:
		if (len != sizeof(struct sockaddr_in))
			abort();
		break;
	case AF_INET6:
		if (len != sizeof(struct sockaddr_in6))
			abort();
		break;
	case AF_IB:
		if (len != sizeof(struct sockaddr_ib))
			abort();
		break;
	default:
		abort(); /* a family no caller can use */
	}
	sink += ((const uint8_t *)sa)[len - 1];
}

static void check_ai(const struct rdma_addrinfo *ai, int hint_flags)
{
	for (; ai; ai = ai->ai_next) {
		check_addr(ai->ai_src_addr, ai->ai_src_len);
		check_addr(ai->ai_dst_addr, ai->ai_dst_len);
		if (ai->ai_route_len % sizeof(struct ibv_path_data) ||
		    !ai->ai_route != !ai->ai_route_len)
			abort();
		if (ai->ai_route_len && (hint_flags & RAI_NOROUTE))
			abort(); /* a route nobody asked for */
		if (ai->ai_route_len)
			sink += ((const uint8_t *)
					 ai->ai_route)[ai->ai_route_len - 1];
		if (ai->ai_connect_len &&
		    !((const uint8_t *)ai->ai_connect)[ai->ai_connect_len - 1])
			sink++;
		if (ai->ai_src_canonname)
			sink += strlen(ai->ai_src_canonname);
		if (ai->ai_dst_canonname)
			sink += strlen(ai->ai_dst_canonname);
	}
}

static void source_of(uint8_t sel, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	*len = 0;
	switch (sel % 4) {
	case 1:
		sin->sin_family = AF_INET;
		inet_pton(AF_INET, "192.0.2.1", &sin->sin_addr);
		*len = sizeof(*sin);
		break;
	case 2:
		sin6->sin6_family = AF_INET6;
		inet_pton(AF_INET6, "2001:db8::1", &sin6->sin6_addr);
		*len = sizeof(*sin6);
		break;
	case 3:
		sin6->sin6_family = AF_INET6;
		inet_pton(AF_INET6, "fe80::2:c903:1", &sin6->sin6_addr);
		*len = sizeof(*sin6);
		break;
	}
}

/* rdma_getaddrinfo with the input's node, service and hints. */
static struct rdma_addrinfo *lookup(struct rdma_addrinfo *hints)
{
	static const int families[] = {AF_UNSPEC, AF_INET, AF_INET6, AF_IB};
	static const int spaces[] = {0, RDMA_PS_TCP, RDMA_PS_UDP, RDMA_PS_IB};
	uint8_t n = take8(), h = take8(), s = take8();
	struct sockaddr_storage src;
	struct rdma_addrinfo *res = NULL;
	const char *node = nodes[n % (sizeof(nodes) / sizeof(nodes[0]))];
	char name[17];

	memset(hints, 0, sizeof(*hints));
	hints->ai_flags =
		h & (RAI_PASSIVE | RAI_NUMERICHOST | RAI_NOROUTE | RAI_FAMILY);
	hints->ai_family = families[(h >> 4) & 3];
	hints->ai_port_space = spaces[h >> 6];
	source_of(s >> 4, &src, &hints->ai_src_len);
	hints->ai_src_addr = hints->ai_src_len ? (struct sockaddr *)&src : NULL;
	if (n & 0x80) { /* a name of the input's */
		take(name, sizeof(name) - 1);
		name[sizeof(name) - 1] = 0;
		node = name;
	}
	if (!node && !(hints->ai_flags & RAI_PASSIVE))
		node = "roce4";
	if (rdma_getaddrinfo(node, services[s % 5], hints, &res)) {
		if (!errno)
			abort();
		return NULL;
	}
	check_ai(res, hints->ai_flags);
	return res;
}

static void op_getaddrinfo(void)
{
	struct rdma_addrinfo hints, *res = lookup(&hints);

	rdma_freeaddrinfo(res);
}

static void op_create_ep(void)
{
	struct rdma_addrinfo hints, *res = lookup(&hints);
	struct rdma_cm_id *id = NULL;

	if (!res)
		return;
	if (take8() & 1)
		fake_ucma_fail_next(RDMA_USER_CM_CMD_SET_OPTION, EINVAL);
	if (!rdma_create_ep(&id, res, NULL, NULL))
		rdma_destroy_ep(id);
	rdma_freeaddrinfo(res);
}

/* An id resolved to the input's destination: ACM's path or the kernel's. */
static void op_resolve(void)
{
	uint8_t d = take8(), s = take8();
	struct sockaddr_storage src, dst;
	struct sockaddr_in6 *dst6 = (struct sockaddr_in6 *)&dst;
	struct sockaddr_in *dst4 = (struct sockaddr_in *)&dst;
	struct rdma_cm_id *id;
	socklen_t srclen;

	memset(&dst, 0, sizeof(dst));
	if (d & 1) {
		dst6->sin6_family = AF_INET6;
		dst6->sin6_port = htons(7471);
		inet_pton(AF_INET6, d & 2 ? "2001:db8::2" : "fe80::2:c903:2",
			  &dst6->sin6_addr);
	} else {
		dst4->sin_family = AF_INET;
		dst4->sin_port = htons(7471);
		inet_pton(AF_INET, d & 2 ? "192.0.2.2" : "192.0.2.77",
			  &dst4->sin_addr);
	}
	source_of(s, &src, &srclen);
	set_route();
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP))
		return;
	if (d & 4)
		fake_ucma_fail_next(RDMA_USER_CM_CMD_SET_OPTION, EINVAL);
	if (!rdma_resolve_addr(id, srclen ? (struct sockaddr *)&src : NULL,
			       (struct sockaddr *)&dst, 100))
		(void)rdma_resolve_route(id, 100);
	if (rdma_destroy_id(id))
		abort();
}

/* --- the run ------------------------------------------------------------------------ */

static void setup_once(void)
{
	static const char hosts[] = "# the address file\n"
				    "roce4 ::ffff:192.0.2.2\n"
				    "roce6 2001:db8::2 0x48\n"
				    "ibnode fe80::2:c903:2 72\n"
				    "192.0.2.2 ::ffff:192.0.2.2\n"
				    "192.0.2.1 fe80::2:c903:1\n"
				    "2001:db8::2 2001:db8::2\n";
	char tmpl[] = "/tmp/acm-cm-fuzz.XXXXXX";
	int fd;

	if (hosts_path[0])
		return;
	fd = mkstemp(tmpl);
	if (fd < 0 || write(fd, hosts, sizeof(hosts) - 1) < 0)
		abort();
	close(fd);
	strcpy(hosts_path, tmpl);
	cma_acm_service_set_trusted_uid(getuid());
}

__attribute__((destructor)) static void remove_hosts(void)
{
	if (hosts_path[0])
		unlink(hosts_path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int ops = 0;
	int n;

	if (!size)
		return 0;
	setup_once();
	fuzz_input(data, size);
	flags = take8();
	n = snprintf(sources, sizeof(sources), "%s%s%s",
		     flags & 2 ? "cache," : "", flags & 4 ? "service," : "",
		     flags & 8 ? "table," : "");
	if (n && sources[n - 1] == ',')
		sources[n - 1] = 0;
	fake_ucma_install();
	fake_verbs_install(!(flags & 1));
	fake_ucma_answer(RDMA_USER_CM_CMD_RESOLVE_ADDR,
			 RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	fake_ucma_answer(RDMA_USER_CM_CMD_RESOLVE_ROUTE,
			 RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	/* The kernel takes a path the way it resolves a route. */
	fake_ucma_answer(RDMA_USER_CM_CMD_SET_OPTION,
			 RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	if (!dev_guid) {
		struct ibv_device **list = ibv_get_device_list(NULL);

		if (!list || !list[0])
			abort();
		dev_guid = fake_verbs_guid(list[0]);
		ibv_free_device_list(list);
	}
	set_port();
	/*
	 * Other sources than the last input's: the environment is read
	 * again (the log reopened, cache, file and ports forgotten).
	 */
	if (strcmp(sources, last_sources)) {
		cma_acm_reconfigure();
		strcpy(last_sources, sources);
	}

	while (fuzz_in.left && ops++ < 16) {
		switch (take8() % 4) {
		case 0:
		case 1:
			op_getaddrinfo();
			break;
		case 2:
			op_create_ep();
			break;
		default:
			op_resolve();
			break;
		}
		if (service_end >= 0)
			close(service_end);
		service_end = -1;
	}
	fake_ucma_fail_next(0, 0);
	for (n = 1; fake_ucma_kid(n); n++)
		if (fake_ucma_kid_live(n, 0))
			abort(); /* an id outlived its destroy */
	/*
	 * What ACM learnt in this input goes now, not at the next one's
	 * start: an input that ends holding memory makes libFuzzer look for
	 * leaks after it, which costs more than the input.  The address
	 * file, the same in every input, stays loaded.
	 */
	cma_acm_cache_flush();
	cma_acm_ports_forget();
	return 0;
}
