/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * RDMA connection manager: the public API.
 *
 * This header is source- and binary-compatible with rdma-core's
 * <rdma/rdma_cma.h>: every type, constant, enum value and structure layout
 * below is part of the librdmacm.so.1 ABI and must not change.  Fields are
 * documented in the man pages (rdma_cm(7) and one page per call); the
 * comments here only say what a reader of the layout needs to know.
 */
#ifndef RDMA_CMA_H
#define RDMA_CMA_H

#include <errno.h>
#include <stddef.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>
#include <infiniband/sa.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Events reported on an event channel; the numbering is ABI. */
enum rdma_cm_event_type {
	RDMA_CM_EVENT_ADDR_RESOLVED,
	RDMA_CM_EVENT_ADDR_ERROR,
	RDMA_CM_EVENT_ROUTE_RESOLVED,
	RDMA_CM_EVENT_ROUTE_ERROR,
	RDMA_CM_EVENT_CONNECT_REQUEST,
	RDMA_CM_EVENT_CONNECT_RESPONSE,
	RDMA_CM_EVENT_CONNECT_ERROR,
	RDMA_CM_EVENT_UNREACHABLE,
	RDMA_CM_EVENT_REJECTED,
	RDMA_CM_EVENT_ESTABLISHED,
	RDMA_CM_EVENT_DISCONNECTED,
	RDMA_CM_EVENT_DEVICE_REMOVAL,
	RDMA_CM_EVENT_MULTICAST_JOIN,
	RDMA_CM_EVENT_MULTICAST_ERROR,
	RDMA_CM_EVENT_ADDR_CHANGE,
	RDMA_CM_EVENT_TIMEWAIT_EXIT,
	RDMA_CM_EVENT_ADDRINFO_RESOLVED,
	RDMA_CM_EVENT_ADDRINFO_ERROR,
	RDMA_CM_EVENT_USER,
	RDMA_CM_EVENT_INTERNAL,
};

/* Port spaces: bytes 4 and 5 of an IB service ID (IBTA Annex A11). */
enum rdma_port_space {
	RDMA_PS_IPOIB = 0x0002,
	RDMA_PS_TCP = 0x0106,
	RDMA_PS_UDP = 0x0111,
	RDMA_PS_IB = 0x013F,
};

/* Service-ID masks for AF_IB addresses (struct sockaddr_ib). */
#define RDMA_IB_IP_PS_MASK 0xFFFFFFFFFFFF0000ULL
#define RDMA_IB_IP_PORT_MASK 0x000000000000FFFFULL
#define RDMA_IB_IP_PS_TCP 0x0000000001060000ULL
#define RDMA_IB_IP_PS_UDP 0x0000000001110000ULL
#define RDMA_IB_PS_IB 0x00000000013F0000ULL

/* The Q_Key every RDMA_PS_UDP QP and multicast group uses by default. */
#define RDMA_UDP_QKEY 0x01234567

struct rdma_ib_addr {
	union ibv_gid sgid;
	union ibv_gid dgid;
	__be16 pkey;
};

struct rdma_addr {
	union {
		struct sockaddr src_addr;
		struct sockaddr_in src_sin;
		struct sockaddr_in6 src_sin6;
		struct sockaddr_storage src_storage;
	};
	union {
		struct sockaddr dst_addr;
		struct sockaddr_in dst_sin;
		struct sockaddr_in6 dst_sin6;
		struct sockaddr_storage dst_storage;
	};
	union {
		struct rdma_ib_addr ibaddr;
	} addr;
};

struct rdma_route {
	struct rdma_addr addr;
	struct ibv_sa_path_rec *path_rec;
	int num_paths;
};

/* Wraps the file descriptor events are read from: poll it for readiness. */
struct rdma_event_channel {
	int fd;
};

/*
 * The user-visible part of a communication identifier.  The library keeps
 * its own state behind it; only these fields are ABI.
 */
struct rdma_cm_id {
	struct ibv_context *verbs;
	struct rdma_event_channel *channel;
	void *context;
	struct ibv_qp *qp;
	struct rdma_route route;
	enum rdma_port_space ps;
	uint8_t port_num;
	struct rdma_cm_event *event;
	struct ibv_comp_channel *send_cq_channel;
	struct ibv_cq *send_cq;
	struct ibv_comp_channel *recv_cq_channel;
	struct ibv_cq *recv_cq;
	struct ibv_srq *srq;
	struct ibv_pd *pd;
	enum ibv_qp_type qp_type;
};

/* Pass these to mean "as many as the device allows". */
enum { RDMA_MAX_RESP_RES = 0xFF, RDMA_MAX_INIT_DEPTH = 0xFF };

struct rdma_conn_param {
	const void *private_data;
	uint8_t private_data_len;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count; /* not used by rdma_accept */
	uint8_t rnr_retry_count;
	/* srq and qp_num are only read when the id has no QP of its own. */
	uint8_t srq;
	/*
	 * Fork addition in what was padding (offset 15; size and offsets
	 * unchanged): form one connection when both sides connect, see
	 * rdma_cm_p2p(7).  Read only by the RDMACM_FORK_1.0 versions of
	 * rdma_connect and rdma_accept, which programs built with this header
	 * bind to; the older versions ignore the byte.
	 */
	uint8_t peer2peer_mode;
	uint32_t qp_num;
};

struct rdma_ud_param {
	const void *private_data;
	uint8_t private_data_len;
	struct ibv_ah_attr ah_attr;
	uint32_t qp_num;
	uint32_t qkey;
};

struct rdma_cm_event {
	struct rdma_cm_id *id;
	struct rdma_cm_id *listen_id;
	enum rdma_cm_event_type event;
	int status;
	union {
		struct rdma_conn_param conn;
		struct rdma_ud_param ud;
		uint64_t arg; /* RDMA_CM_EVENT_USER */
	} param;
};

/* rdma_addrinfo.ai_flags */
#define RAI_PASSIVE 0x00000001
#define RAI_NUMERICHOST 0x00000002
#define RAI_NOROUTE 0x00000004
#define RAI_FAMILY 0x00000008
/* rdma-core 60: resolve through the InfiniBand SA (ServiceRecords) ... */
#define RAI_SA 0x00000010
/* ... or through DNS (the default); the two exclude each other. */
#define RAI_DNS 0x00000020

struct rdma_addrinfo {
	int ai_flags;
	int ai_family;
	int ai_qp_type;
	int ai_port_space;
	socklen_t ai_src_len;
	socklen_t ai_dst_len;
	struct sockaddr *ai_src_addr;
	struct sockaddr *ai_dst_addr;
	char *ai_src_canonname;
	char *ai_dst_canonname;
	size_t ai_route_len;
	void *ai_route;
	size_t ai_connect_len;
	void *ai_connect;
	struct rdma_addrinfo *ai_next;
};

/* Which members of struct rdma_cm_join_mc_attr_ex are valid. */
enum rdma_cm_join_mc_attr_mask {
	RDMA_CM_JOIN_MC_ATTR_ADDRESS = 1 << 0,
	RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS = 1 << 1,
	RDMA_CM_JOIN_MC_ATTR_RESERVED = 1 << 2,
};

/* Membership kinds for rdma_join_multicast_ex. */
enum rdma_cm_mc_join_flags {
	RDMA_MC_JOIN_FLAG_FULLMEMBER,
	RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER,
	RDMA_MC_JOIN_FLAG_RESERVED,
};

struct rdma_cm_join_mc_attr_ex {
	uint32_t comp_mask; /* enum rdma_cm_join_mc_attr_mask bits */
	uint32_t join_flags; /* one enum rdma_cm_mc_join_flags value */
	struct sockaddr *addr;
};

/* Event channels */
struct rdma_event_channel *rdma_create_event_channel(void);
void rdma_destroy_event_channel(struct rdma_event_channel *channel);

/* Identifiers */
int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
		   void *context, enum rdma_port_space ps);
int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
		   struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr);
void rdma_destroy_ep(struct rdma_cm_id *id);
int rdma_destroy_id(struct rdma_cm_id *id);
int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel);

/* Addressing and routing */
int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr);
int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
		      struct sockaddr *dst_addr, int timeout_ms);
int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms);

/* Queue pairs and shared receive queues the CM drives through their states */
int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr);
int rdma_create_qp_ex(struct rdma_cm_id *id,
		      struct ibv_qp_init_attr_ex *qp_init_attr);
void rdma_destroy_qp(struct rdma_cm_id *id);
int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
		    struct ibv_srq_init_attr *attr);
int rdma_create_srq_ex(struct rdma_cm_id *id,
		       struct ibv_srq_init_attr_ex *attr);
void rdma_destroy_srq(struct rdma_cm_id *id);
int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
		      int *qp_attr_mask);

/* Connections */
int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param);
int rdma_establish(struct rdma_cm_id *id);
int rdma_listen(struct rdma_cm_id *id, int backlog);
int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id);
int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param);
int rdma_reject(struct rdma_cm_id *id, const void *private_data,
		uint8_t private_data_len);
int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
		    uint8_t private_data_len);
int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event);
int rdma_disconnect(struct rdma_cm_id *id);
int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece);
int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece);

/* Multicast */
int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
			void *context);
int rdma_join_multicast_ex(struct rdma_cm_id *id,
			   struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context);
int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr);

/* Events */
int rdma_get_cm_event(struct rdma_event_channel *channel,
		      struct rdma_cm_event **event);
int rdma_ack_cm_event(struct rdma_cm_event *event);
const char *rdma_event_str(enum rdma_cm_event_type event);
int rdma_write_cm_event(struct rdma_cm_id *id, enum rdma_cm_event_type event,
			int status, uint64_t arg);

/* Address accessors */
__be16 rdma_get_src_port(struct rdma_cm_id *id);
__be16 rdma_get_dst_port(struct rdma_cm_id *id);

/*
 * Inline, so they are compiled into applications: a NULL id gives NULL
 * with errno EINVAL rather than a pointer computed from address 0.
 */
static inline struct sockaddr *rdma_get_local_addr(struct rdma_cm_id *id)
{
	if (!id) {
		errno = EINVAL;
		return NULL;
	}
	return &id->route.addr.src_addr;
}

static inline struct sockaddr *rdma_get_peer_addr(struct rdma_cm_id *id)
{
	if (!id) {
		errno = EINVAL;
		return NULL;
	}
	return &id->route.addr.dst_addr;
}

/* Devices */
struct ibv_context **rdma_get_devices(int *num_devices);
void rdma_free_devices(struct ibv_context **list);

/* Options: levels and names for rdma_set_option */
enum { RDMA_OPTION_ID = 0, RDMA_OPTION_IB = 1 };

enum {
	RDMA_OPTION_ID_TOS = 0, /* uint8_t, type of service (RFC 2474) */
	RDMA_OPTION_ID_REUSEADDR = 1, /* int, like SO_REUSEADDR */
	RDMA_OPTION_ID_AFONLY = 2, /* int, like IPV6_V6ONLY */
	RDMA_OPTION_ID_ACK_TIMEOUT = 3 /* uint8_t, local ACK timeout exponent */
};

enum {
	RDMA_OPTION_IB_PATH = 1 /* array of struct ibv_path_data */
};

/*
 * Fork additions at RDMA_OPTION_ID, far above rdma-core's range so that
 * its future options cannot collide; handled by the library, never sent to
 * the kernel.  See rdma_cm_p2p(7).
 */
enum {
	RDMA_OPTION_ID_PEER2PEER =
		0x7020, /* int: listener holds p2p requests */
	RDMA_OPTION_ID_P2P_TAG = 0x7021, /* uint64_t: p2p connection identity */
	RDMA_OPTION_ID_INITIATOR =
		0x7022 /* int, read-only: this end's request formed it */
};

int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
		    size_t optlen);

/*
 * Fork extension (RDMACM_FORK_1.0): multicast through socket-style options,
 * rdma_get_option and rdma_sendto.  See rdma_set_option(3),
 * rdma_get_option(3) and rdma_sendto(3).
 *
 * The kernel's option levels are small numbers (RDMA_OPTION_ID 0,
 * RDMA_OPTION_IB 1), and IPPROTO_IP is 0 too, so the socket levels cannot be
 * reused: the fork's levels start at 0x10000, out of reach of both.
 */
#define RDMA_OPTION_IP 0x10000 /* IP_ADD_MEMBERSHIP, IP_DROP_MEMBERSHIP */
#define RDMA_OPTION_IPV6 0x10001 /* IPV6_JOIN_GROUP, IPV6_LEAVE_GROUP */
#define RDMA_OPTION_IB_MCAST 0x10002 /* IB_ADD_MEMBERSHIP, ... below */
/* The names of the original proposal (2006) for the same levels. */
#define RDMA_PROTO_IP RDMA_OPTION_IP
#define RDMA_PROTO_IPV6 RDMA_OPTION_IPV6
#define RDMA_PROTO_IB RDMA_OPTION_IB_MCAST

/* RDMA_OPTION_IB_MCAST option names */
#define IB_ADD_MEMBERSHIP 1 /* set: struct ib_mreq */
#define IB_DROP_MEMBERSHIP 2 /* set: struct ib_mreq (rec.mgid) */
#define IB_MCMEMBER_RECORD 3 /* get: struct rdma_mcast_record */
#define IB_MCMEMBER_MISMATCH 4 /* get: ib_sa_comp_mask */

/* A join completed; the same value as RDMA_CM_EVENT_MULTICAST_JOIN. */
#define RDMA_CM_EVENT_JOIN_COMPLETE RDMA_CM_EVENT_MULTICAST_JOIN

/*
 * Component mask of an MCMemberRecord, in host byte order: bit n selects
 * component n of the record as the InfiniBand specification numbers them.
 */
typedef uint64_t ib_sa_comp_mask;

#define IB_SA_MCMEMBER_REC_MGID (1ULL << 0)
#define IB_SA_MCMEMBER_REC_PORT_GID (1ULL << 1)
#define IB_SA_MCMEMBER_REC_QKEY (1ULL << 2)
#define IB_SA_MCMEMBER_REC_MLID (1ULL << 3)
#define IB_SA_MCMEMBER_REC_MTU_SELECTOR (1ULL << 4)
#define IB_SA_MCMEMBER_REC_MTU (1ULL << 5)
#define IB_SA_MCMEMBER_REC_TRAFFIC_CLASS (1ULL << 6)
#define IB_SA_MCMEMBER_REC_PKEY (1ULL << 7)
#define IB_SA_MCMEMBER_REC_RATE_SELECTOR (1ULL << 8)
#define IB_SA_MCMEMBER_REC_RATE (1ULL << 9)
#define IB_SA_MCMEMBER_REC_PACKET_LIFE_TIME_SELECTOR (1ULL << 10)
#define IB_SA_MCMEMBER_REC_PACKET_LIFE_TIME (1ULL << 11)
#define IB_SA_MCMEMBER_REC_SL (1ULL << 12)
#define IB_SA_MCMEMBER_REC_FLOW_LABEL (1ULL << 13)
#define IB_SA_MCMEMBER_REC_HOP_LIMIT (1ULL << 14)
#define IB_SA_MCMEMBER_REC_SCOPE (1ULL << 15)
#define IB_SA_MCMEMBER_REC_JOIN_STATE (1ULL << 16)
#define IB_SA_MCMEMBER_REC_PROXY_JOIN (1ULL << 17)

/* join_state bits */
#define IB_MC_JOIN_STATE_FULL_MEMBER 0x1
#define IB_MC_JOIN_STATE_NON_MEMBER 0x2
#define IB_MC_JOIN_STATE_SENDONLY_NON_MEMBER 0x4
#define IB_MC_JOIN_STATE_SENDONLY_FULL_MEMBER 0x8

/* *_selector values */
#define IB_SA_SELECTOR_GREATER_THAN 0
#define IB_SA_SELECTOR_LESS_THAN 1
#define IB_SA_SELECTOR_EXACTLY 2
#define IB_SA_SELECTOR_BEST 3 /* largest MTU/rate, smallest life time */

/*
 * An MCMemberRecord, unpacked: numbers in host byte order, GIDs as on the
 * wire.  mtu is an enum ibv_mtu value, rate an enum ibv_rate value (both
 * use the record's encodings).  56 bytes, 8-byte aligned, no holes:
 *   0 mgid, 16 port_gid, 32 qkey, 36 mlid, 38 mtu_selector, 39 mtu,
 *   40 traffic_class, 41 rate_selector, 42 pkey, 44 rate,
 *   45 packet_life_time_selector, 46 packet_life_time, 47 sl,
 *   48 flow_label, 52 hop_limit, 53 scope, 54 join_state, 55 proxy_join.
 * (<infiniband/sa.h>'s struct ibv_sa_mcmember_rec is a different type.)
 */
struct ib_sa_mcmember_rec {
	union ibv_gid mgid;
	union ibv_gid port_gid;
	uint32_t qkey;
	uint16_t mlid;
	uint8_t mtu_selector;
	uint8_t mtu;
	uint8_t traffic_class;
	uint8_t rate_selector;
	uint16_t pkey;
	uint8_t rate;
	uint8_t packet_life_time_selector;
	uint8_t packet_life_time;
	uint8_t sl;
	uint32_t flow_label;
	uint8_t hop_limit;
	uint8_t scope;
	uint8_t join_state;
	uint8_t proxy_join;
};

/* IB_ADD_MEMBERSHIP / IB_DROP_MEMBERSHIP: 64 bytes, comp_mask at 56. */
struct ib_mreq {
	struct ib_sa_mcmember_rec rec;
	ib_sa_comp_mask comp_mask;
};

/*
 * IB_MCMEMBER_RECORD: group names a joined group (its IPv4 or IPv6
 * address, an AF_IB address holding the MGID, or AF_UNSPEC to look the
 * group up by rec.mgid); rec receives its record.  184 bytes.
 */
struct rdma_mcast_record {
	struct sockaddr_storage group;
	struct ib_sa_mcmember_rec rec;
};

int rdma_get_option(struct rdma_cm_id *id, int level, int optname, void *optval,
		    size_t optlen);
int rdma_sendto(struct rdma_cm_id *id, struct ibv_send_wr *send_wr,
		struct sockaddr *to);

/* Address translation */
int rdma_getaddrinfo(const char *node, const char *service,
		     const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res);
void rdma_freeaddrinfo(struct rdma_addrinfo *res);
int rdma_resolve_addrinfo(struct rdma_cm_id *id, const char *node,
			  const char *service,
			  const struct rdma_addrinfo *hints);
int rdma_query_addrinfo(struct rdma_cm_id *id, struct rdma_addrinfo **info);

#ifdef __cplusplus
}
#endif

#endif /* RDMA_CMA_H */
