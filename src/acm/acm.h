/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The in-library ACM resolver (RDMA_CM_USE_IB_ACM=1): names and IP
 * addresses become GIDs and path records without the kernel's neighbour
 * and SA queries.  Sources, asked in this order, each in its own file:
 *
 *   acm_cache.c    process-wide answers with expiry, negative entries too
 *   acm_service.c  the ibacm service, through its client protocol
 *   acm_table.c    an address file (ibacm's hosts format): name/IP -> GID
 *   acm_path.c     path records built locally (RoCE: GID table and port
 *                  attributes; IB: a destination on a local port)
 *   acm_sa.c       on InfiniBand ports, a PathRecord query to the SA
 *   acm.c          the order above, the configuration, the log
 *
 * Anything that misses, times out, or answers nonsense leaves the caller
 * on the kernel's normal resolution: ACM can only ever save work.
 */
#ifndef CMA_ACM_H
#define CMA_ACM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <infiniband/sa.h>
#include <infiniband/verbs.h>

/* Where an answer came from (also the order sources are asked in). */
enum cma_acm_source {
	CMA_ACM_SRC_NONE,
	CMA_ACM_SRC_CACHE,
	CMA_ACM_SRC_SERVICE,
	CMA_ACM_SRC_TABLE,
	CMA_ACM_SRC_SA,
	CMA_ACM_SRC_KERNEL,
};

/* The longest name an address file or the service protocol can carry. */
#define CMA_ACM_NAME_MAX 64
/* Paths in one answer: primary/alternate, CM/data, both directions. */
#define CMA_ACM_MAX_PATHS 6

/* What an endpoint is given as. */
enum cma_acm_ep_type {
	CMA_ACM_EP_NONE,
	CMA_ACM_EP_NAME,
	CMA_ACM_EP_IP4,
	CMA_ACM_EP_IP6,
	CMA_ACM_EP_GID,
};

/* One endpoint of a query.  Fixed size and zero padded: a cache key. */
struct cma_acm_ep {
	uint8_t type; /* enum cma_acm_ep_type */
	uint8_t pad[3];
	union {
		char name[CMA_ACM_NAME_MAX]; /* NUL terminated */
		uint8_t ip4[4]; /* network order */
		uint8_t ip6[16];
		uint8_t gid[16];
	};
};

struct cma_acm_query {
	struct cma_acm_ep src; /* may be CMA_ACM_EP_NONE */
	struct cma_acm_ep dst;
};

struct cma_acm_answer {
	enum cma_acm_source source;
	int num_paths; /* 0: only the address is known */
	struct ibv_path_data paths[CMA_ACM_MAX_PATHS];
	union ibv_gid dgid; /* the destination's GID */
	struct cma_acm_ep src_ip; /* the source IP the path starts at, if any */
};

/* --- acm.c: configuration, orchestration, log -------------------------- */

/* Whether RDMA_CM_USE_IB_ACM asks for ACM (read once per process). */
bool cma_acm_enabled(void);
/*
 * Resolve @q through cache, service, tables and SA.  0 with @ans filled,
 * or -1/errno (ENODATA: no source knows the destination).
 */
int cma_acm_resolve(const struct cma_acm_query *q, struct cma_acm_answer *ans);
/* A line in the resolution log, when RDMA_CM_ACM_LOG is set. */
void cma_acm_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *cma_acm_source_name(enum cma_acm_source src);
/* Set an endpoint from a sockaddr (IPv4/IPv6/AF_IB).  0 or -1/EAFNOSUPPORT. */
int cma_acm_ep_from_sockaddr(struct cma_acm_ep *ep, const struct sockaddr *sa);
/* Printable form of an endpoint (for the log). */
const char *cma_acm_ep_str(const struct cma_acm_ep *ep, char *buf, size_t len);
/* The GID a RoCE port gives an IP address (v4-mapped for IPv4). */
void cma_acm_ip_to_gid(const struct cma_acm_ep *ip, union ibv_gid *gid);
/* The IP address behind a RoCE GID, if it has one.  0 or -1. */
int cma_acm_gid_to_ip(const union ibv_gid *gid, struct cma_acm_ep *ip);
/* Knobs (milliseconds), from the environment. */
unsigned int cma_acm_service_timeout_ms(void);
unsigned int cma_acm_sa_timeout_ms(void);

/* --- acm_cache.c -------------------------------------------------------- */

/* 1: positive hit (@ans filled), 0: miss, -1: negative hit (known absent). */
int cma_acm_cache_get(const struct cma_acm_query *q,
		      struct cma_acm_answer *ans);
/* Remember an answer (@ans NULL: a negative entry) for @ttl_ms. */
void cma_acm_cache_put(const struct cma_acm_query *q,
		       const struct cma_acm_answer *ans, unsigned int ttl_ms);
void cma_acm_cache_flush(void);

/* --- acm_service.c: the ibacm client protocol ----------------------------- */

/*
 * The wire format, defined here from the protocol's documented facts (the
 * header <infiniband/acm.h> ships only with the ibacm daemon package):
 * a 16-byte header, then 72-byte endpoint records; header and record
 * fields in host order, endpoint data (addresses, path records) in network
 * order.  tests/unit/acm_service_test.c checks the layout against that
 * header when it is installed.
 */
#define CMA_ACM_VERSION 1
#define CMA_ACM_OP_RESOLVE 0x01
#define CMA_ACM_OP_ACK 0x80
#define CMA_ACM_HDR_LEN 16
#define CMA_ACM_EP_LEN 72
#define CMA_ACM_MAX_EPS 8
#define CMA_ACM_MSG_MAX (CMA_ACM_HDR_LEN + CMA_ACM_EP_LEN * CMA_ACM_MAX_EPS)
#define CMA_ACM_INFO_NAME 0x0001
#define CMA_ACM_INFO_IP 0x0002
#define CMA_ACM_INFO_IP6 0x0003
#define CMA_ACM_INFO_PATH 0x0010
#define CMA_ACM_FLAG_SOURCE (1u << 0)
#define CMA_ACM_FLAG_DEST (1u << 1)
#define CMA_ACM_FLAG_NODELAY (1u << 30)

struct cma_acm_wire_hdr {
	uint8_t version;
	uint8_t opcode;
	uint8_t status;
	uint8_t data[3];
	uint16_t length; /* of the whole message, header included */
	uint64_t tid;
};

struct cma_acm_wire_ep {
	uint32_t flags;
	uint16_t type;
	uint16_t reserved;
	union {
		uint8_t addr[64];
		char name[64];
		struct ibv_path_record path;
	} info;
};

/* Encode a resolve request.  Its length, or -1/EINVAL. */
int cma_acm_msg_build(const struct cma_acm_query *q, uint64_t tid, uint8_t *buf,
		      size_t size);
/*
 * Decode a service answer of @len bytes.  0 with @ans filled (source left
 * alone); -1 with errno: EPROTO (malformed), ENODATA (the service said
 * no, or gave no usable path).
 */
int cma_acm_msg_parse(const uint8_t *buf, size_t len,
		      struct cma_acm_answer *ans);
/* Ask the service.  0, or -1/errno (ENOENT: no service configured). */
int cma_acm_service_resolve(const struct cma_acm_query *q,
			    struct cma_acm_answer *ans);

/* --- acm_table.c: the address file ---------------------------------------- */

struct cma_acm_table_entry {
	struct cma_acm_ep addr; /* name, IPv4 or IPv6 */
	union ibv_gid gid;
	uint32_t qpn; /* 0 when the line has none */
};

struct cma_acm_table {
	struct cma_acm_table_entry *entries;
	size_t count;
	size_t bad_lines; /* skipped as malformed */
	/*
	 * An open-addressing hash over entries: slot values are entry index
	 * + 1, 0 is empty; nslots is a power of two, at least twice count.
	 * Parsing checks every line for a duplicate, so a linear scan made a
	 * file of n lines cost n^2/2 comparisons.
	 */
	uint32_t *slots;
	size_t nslots;
	size_t probes; /* address comparisons made so far (tests) */
};

/* Parse a whole file's contents.  0, or -1/ENOMEM; bad lines are skipped. */
int cma_acm_table_parse(const char *buf, size_t len, struct cma_acm_table *t);
void cma_acm_table_clear(struct cma_acm_table *t);
const struct cma_acm_table_entry *
cma_acm_table_find(const struct cma_acm_table *t, const struct cma_acm_ep *ep);
/* The process's table (RDMA_CM_ACM_HOSTS), reloaded when the file changes. */
int cma_acm_table_lookup(const struct cma_acm_ep *ep, union ibv_gid *gid);
/* Drop the loaded table (tests, reconfiguration). */
void cma_acm_table_forget(void);

/* --- acm_path.c: local path records -------------------------------------- */

/* A local port, as the path builders need it. */
struct cma_acm_port {
	char dev_name[IBV_SYSFS_NAME_MAX];
	uint8_t port_num;
	uint8_t link_layer; /* IBV_LINK_LAYER_* */
	union ibv_gid gid;
	int gid_index;
	uint16_t lid, sm_lid;
	uint8_t sm_sl;
	uint8_t lmc;
	enum ibv_mtu active_mtu;
	uint8_t rate; /* IB rate code */
	uint16_t pkey; /* host order; index 0 */
};

/* The local port owning @gid.  0 or -1/ENODEV. */
int cma_acm_port_by_gid(const union ibv_gid *gid, struct cma_acm_port *port);
/* The source IP the kernel would use towards @dst.  0 or -1/errno. */
int cma_acm_route_source(const struct cma_acm_ep *dst, struct cma_acm_ep *src);
/* A path record for @port -> @dgid built without any query.  0 or -1. */
int cma_acm_path_build(const struct cma_acm_port *port,
		       const union ibv_gid *dgid, struct ibv_path_data *out);
/* IB rate code from a port's active width and speed. */
uint8_t cma_acm_rate_code(uint8_t active_width, uint8_t active_speed);
/* The first InfiniBand port with a subnet manager.  0 or -1/ENODEV. */
int cma_acm_port_first_ib(struct cma_acm_port *port);
/* Forget the port snapshot (tests, reconfiguration). */
void cma_acm_ports_forget(void);

/* --- acm_sa.c: PathRecord queries ---------------------------------------- */

/* The 256-byte SA Get(PathRecord) MAD for @sgid -> @dgid. */
void cma_acm_sa_build(uint8_t mad[256], uint64_t tid, const union ibv_gid *sgid,
		      const union ibv_gid *dgid, uint16_t pkey);
/* Decode a GetResp(PathRecord).  0 with @path set, or -1/errno. */
int cma_acm_sa_parse(const uint8_t *mad, size_t len, uint64_t tid,
		     struct ibv_path_record *path);
/* Query the SA of @port (an IB port).  0 or -1/errno. */
int cma_acm_sa_query(const struct cma_acm_port *port, const union ibv_gid *dgid,
		     struct ibv_path_data *out);
/*
 * An SA agent on @port, with RMPP when @rmpp (answers of several
 * segments): the umad port id, *agent set; or -1/errno (ENODEV, EACCES).
 * Closed with cma_sa_agent_close.
 */
int cma_sa_agent_open(const struct cma_acm_port *port, bool rmpp, int *agent);
void cma_sa_agent_close(int portid, int agent);

/* --- acm_cm.c: where the CM calls use ACM ------------------------------- */

struct cma_id_private;
struct rdma_addrinfo;
/* rdma_getaddrinfo's lookup with ACM first (active side with a node). */
struct rdma_addrinfo *cma_acm_ai_lookup(const char *node, const char *service,
					const struct rdma_addrinfo *tmpl);
/* Look up and keep ACM's answer for an address resolution. */
void cma_acm_resolve_addr(struct cma_id_private *id_priv,
			  const struct sockaddr *src,
			  const struct sockaddr *dst);
/* Hand ACM's path to the kernel.  0: ROUTE_RESOLVED follows; -1: use
 * the kernel's route resolution. */
int cma_acm_resolve_route(struct cma_id_private *id_priv);

#endif /* CMA_ACM_H */
