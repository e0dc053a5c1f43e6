// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// FUZZ_SOURCES: src/rsocket/wire.c src/rsocket/spin.c src/acm/acm_cache.c src/acm/acm_table.c src/preload/config.c
/*
 * Every parser of settings the process's environment and configuration
 * files hand the libraries: the rsockets' tunables (RDMA_RS_* and the
 * files of /etc/rdma/rsocket/), the preload's RDMA_RSOCKET_* variables,
 * and the ACM resolver's RDMA_CM_ACM_* and RDMA_CM_USE_IB_ACM.  (The p2p
 * ones are read by src/p2p/p2p.c, RDMA_CM_ACM_SERVICE by the acm_service
 * target, RDMA_CM_ACM_HOSTS's file by acm_table.)
 *
 * The parsers are static: this file includes their sources and calls the
 * readers directly; secure_getenv (what cma_env reads) answers with the
 * fuzzer's strings and the rsocket files are served from the input by an
 * fopen macro.
 * Whatever the strings, what comes out must be in the documented ranges.
 * Variables that name files to create (RDMA_RSOCKET_LOG, RDMA_CM_ACM_LOG)
 * are never set.  Every value is also parsed as a line of the preload's
 * preload_config (rsp_parse_rule), whose result must be a known domain,
 * type and protocol.
 *
 * Input: records of a selector byte (bits 0-4: the variable, mod the
 * count below; bit 7: for an rsocket tunable, its file instead), a length
 * byte and that many bytes of value.
 */
#define fopen rs_fuzz_fopen
#include "../../src/rsocket/table.c"
#undef fopen
#include "../../src/preload/init.c"
#include "../../src/acm/acm.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const vars[] = {
	"RDMA_RS_POLLING_TIME",
	"RDMA_RS_POLLING_MAX",
	"RDMA_RS_INLINE",
	"RDMA_RS_SQSIZE",
	"RDMA_RS_RQSIZE",
	"RDMA_RS_MEM",
	"RDMA_RS_WMEM",
	"RDMA_RS_IOMAP_SIZE",
	/* the preload's */
	"RDMA_RSOCKET_DISABLE",
	"RDMA_RSOCKET_SQSIZE",
	"RDMA_RSOCKET_RQSIZE",
	"RDMA_RSOCKET_INLINE",
	"RDMA_RSOCKET_SNDBUF",
	"RDMA_RSOCKET_RCVBUF",
	"RDMA_RSOCKET_PORTS",
	/* the ACM resolver's */
	"RDMA_CM_USE_IB_ACM",
	"RDMA_CM_ACM_SOURCES",
	"RDMA_CM_ACM_CACHE_TTL",
	"RDMA_CM_ACM_NEG_TTL",
	"RDMA_CM_ACM_TIMEOUT_MS",
	"RDMA_CM_ACM_SA_TIMEOUT_MS",
	/* an rsocket tunable without a file here (it is past the first 8) */
	"RDMA_RS_MAX_DGRAM_DEST",
};
#define NVARS (sizeof(vars) / sizeof(vars[0]))

/* The rsocket files, in the order of the first eight variables. */
static const char *const files[] = {
	"polling_time",	  "polling_max", "inline_default", "sqsize_default",
	"rqsize_default", "mem_default", "wmem_default",   "iomap_size",
};
static char file_data[8][256];
static size_t file_len[8];
static bool file_set[8];

/*
 * The environment, as cma_env (env.h) reads it: the input's values for
 * the variables above, nothing else.  (setenv would keep every value ever
 * set: glibc never frees them, and a long run would grow without bound.)
 */
static char env_value[NVARS][256];
static bool env_set[NVARS];

char *secure_getenv(const char *name)
{
	size_t i;

	for (i = 0; i < NVARS; i++)
		if (env_set[i] && !strcmp(name, vars[i]))
			return env_value[i];
	return NULL;
}

/* fopen of table.c: the input's files for RS_CONF_DIR, nothing else. */
FILE *rs_fuzz_fopen(const char *path, const char *mode)
{
	size_t i, n = strlen(RS_CONF_DIR "/");

	if (strncmp(path, RS_CONF_DIR "/", n))
		abort();
	for (i = 0; i < 8; i++)
		if (file_set[i] && !strcmp(path + n, files[i]))
			return fmemopen(file_data[i],
					file_len[i] ? file_len[i] : 1, "r");
	errno = ENOENT;
	return NULL;
}

/* What acm.c needs from the library beyond the included modules. */
void cma_acm_ports_forget(void)
{
}

int cma_acm_service_resolve(const struct cma_acm_query *q,
			    struct cma_acm_answer *ans)
{
	return cma_err(ENODATA);
}

int cma_acm_port_by_gid(const union ibv_gid *gid, struct cma_acm_port *port)
{
	return cma_err(ENODEV);
}

int cma_acm_route_source(const struct cma_acm_ep *dst, struct cma_acm_ep *src)
{
	return cma_err(ENETUNREACH);
}

int cma_acm_path_build(const struct cma_acm_port *port,
		       const union ibv_gid *dgid, struct ibv_path_data *out)
{
	return cma_err(ENODATA);
}

int cma_acm_sa_query(const struct cma_acm_port *port, const union ibv_gid *dgid,
		     struct ibv_path_data *out)
{
	return cma_err(ENODATA);
}

/* init.c writes what the image's start did; this target runs none. */
void rsp_exec_roles_log(void)
{
}

/* init.c's fork handler makes fork mode's lock afresh; none here. */
void rsp_twins_forked(void)
{
}

int rsetsockopt(int socket, int level, int optname, const void *optval,
		socklen_t optlen)
{
	return cma_err(ENOTSOCK);
}

void rs_stream_free(struct rsocket *rs)
{
}

void ds_free(struct rsocket *rs)
{
}

static void check_rs_defaults(void)
{
	if (rs_def.mem < RS_SNDLOWAT * 2 || rs_def.mem > 1u << 30 ||
	    rs_def.wmem < RS_SNDLOWAT * 2 || rs_def.wmem > 1u << 30 ||
	    rs_def.sqsize > RS_QP_MAX_SIZE || rs_def.rqsize > RS_QP_MAX_SIZE ||
	    rs_def.polling_time > 1000000 || rs_def.polling_max > 1000000 ||
	    rs_def.iomap_size > 0x7f00 || !rs_def.max_dgram_dest ||
	    rs_def.max_dgram_dest > 1u << 20 ||
	    rs_iomap_size_from_wire(rs_iomap_size_to_wire(rs_def.iomap_size)) !=
		    rs_def.iomap_size)
		abort();
}

static void check_preload(void)
{
	int i;

	if (rsp_config.sqsize < 0 || rsp_config.rqsize < 0 ||
	    rsp_config.inline_size < 0 || rsp_config.sndbuf < 0 ||
	    rsp_config.rcvbuf < 0 || rsp_config.nports < 0 ||
	    rsp_config.nports > 32 || rsp_config.log_fd != -1)
		abort();
	for (i = 0; i < rsp_config.nports; i++)
		if (rsp_config.ports[i].lo > rsp_config.ports[i].hi)
			abort();
}

static void check_acm(void)
{
	if ((acm_conf.sources & ~ACM_USE_ALL) || !acm_conf.service_timeout_ms ||
	    acm_conf.service_timeout_ms > 60000 || !acm_conf.sa_timeout_ms ||
	    acm_conf.sa_timeout_ms > 60000 || acm_conf.ttl_ms > 86400u * 1000 ||
	    acm_conf.neg_ttl_ms > 86400u * 1000 || acm_conf.log_fd != -1)
		abort();
}

static const struct rs_defaults rs_def_initial = {
	.sqsize = 384,
	.rqsize = 384,
	.inline_size = 64,
	.mem = 1 << 17,
	.wmem = 1 << 17,
	.polling_time = 10,
	.polling_max = RS_POLLING_MAX_DEFAULT,
	.max_dgram_dest = RS_MAX_DGRAM_DEST_DEFAULT,
};

/* One line of preload_config: a rule names only what the preload knows. */
static void check_rule(const char *line)
{
	struct rsp_rule r;
	int ret = rsp_parse_rule(line, &r);

	if (ret < -1 || ret > 1 || !memchr(r.prog, 0, sizeof(r.prog)) ||
	    (ret == 0 &&
	     ((r.domain && r.domain != AF_INET && r.domain != AF_INET6 &&
	       r.domain != AF_IB) ||
	      (r.type && r.type != SOCK_STREAM && r.type != SOCK_DGRAM) ||
	      (r.protocol && r.protocol != IPPROTO_TCP &&
	       r.protocol != IPPROTO_UDP))))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool quiet;
	char value[256];

	if (!quiet) {
		/* The preload's complaints go to stdio's stderr; reports don't */
		stderr = fopen("/dev/null", "w");
		quiet = true;
	}
	memset(file_set, 0, sizeof(file_set));
	memset(env_set, 0, sizeof(env_set));
	while (size >= 2) {
		uint8_t sel = data[0];
		size_t len = data[1] < size - 2 ? data[1] : size - 2;

		memcpy(value, data + 2, len);
		value[len] = '\0';
		data += 2 + len;
		size -= 2 + len;
		check_rule(value);
		if ((sel & 0x80) && sel % 32 < 8) {
			memcpy(file_data[sel % 32], value, len);
			file_len[sel % 32] = len;
			file_set[sel % 32] = true;
		} else {
			memcpy(env_value[(sel & 0x1f) % NVARS], value, len + 1);
			env_set[(sel & 0x1f) % NVARS] = true;
		}
	}

	rs_def = rs_def_initial;
	rs_configure_once();
	check_rs_defaults();

	memset(&rsp_config, 0, sizeof(rsp_config));
	rsp_config.log_fd = -1;
	read_config();
	check_preload();

	acm_read_config();
	check_acm();

	return 0;
}
