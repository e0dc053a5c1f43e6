/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * RDMA connection manager: the kernel rdma_ucm command ABI.
 *
 * librdmacm talks to the kernel by write()ing commands to
 * /dev/infiniband/rdma_cm.  Each command is a struct ucma_abi_cmd_hdr
 * (command number, input and output lengths in bytes) immediately
 * followed by the payload the kernel declares as struct rdma_ucm_<name>
 * in <linux/rdma/rdma_user_cm.h>.  The ucma_abi_* structures below are
 * that header and payload laid out back to back, so one write() sends a
 * whole command.  Responses are written by the kernel to the user address
 * passed in the command's "response" field.
 *
 * The names and layouts are those of rdma-core's legacy
 * <rdma/rdma_cma_abi.h>; payload offsets equal the kernel's plus the
 * 8-byte header.  The kernel UAPI header is deliberately not included:
 * its RDMA_PS_* enumerators would clash with <rdma/rdma_cma.h>.
 */
#ifndef RDMA_CMA_ABI_H
#define RDMA_CMA_ABI_H

#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/types.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/ib_user_sa.h>
#include <infiniband/sa.h>

/* ABI versions, read from /sys/class/misc/rdma_cm/abi_version, we accept */
#define RDMA_USER_CM_MIN_ABI_VERSION 3
#define RDMA_USER_CM_MAX_ABI_VERSION 4

/* Same value as the kernel's, so including both headers is harmless. */
#define RDMA_MAX_PRIVATE_DATA 256

/* Command numbers (struct ucma_abi_cmd_hdr.cmd); their values are ABI. */
enum {
	UCMA_CMD_CREATE_ID = 0,
	UCMA_CMD_DESTROY_ID = 1,
	UCMA_CMD_BIND_IP = 2,
	UCMA_CMD_RESOLVE_IP = 3,
	UCMA_CMD_RESOLVE_ROUTE = 4,
	UCMA_CMD_QUERY_ROUTE = 5,
	UCMA_CMD_CONNECT = 6,
	UCMA_CMD_LISTEN = 7,
	UCMA_CMD_ACCEPT = 8,
	UCMA_CMD_REJECT = 9,
	UCMA_CMD_DISCONNECT = 10,
	UCMA_CMD_INIT_QP_ATTR = 11,
	UCMA_CMD_GET_EVENT = 12,
	UCMA_CMD_GET_OPTION = 13,
	UCMA_CMD_SET_OPTION = 14,
	UCMA_CMD_NOTIFY = 15,
	UCMA_CMD_JOIN_IP_MCAST = 16,
	UCMA_CMD_LEAVE_MCAST = 17,
	UCMA_CMD_MIGRATE_ID = 18,
	UCMA_CMD_QUERY = 19,
	UCMA_CMD_BIND = 20,
	UCMA_CMD_RESOLVE_ADDR = 21,
	UCMA_CMD_JOIN_MCAST = 22,
	/* Linux 6.15 and later */
	UCMA_CMD_RESOLVE_IB_SERVICE = 23,
	UCMA_CMD_WRITE_CM_EVENT = 24
};

struct ucma_abi_cmd_hdr {
	__u32 cmd;
	__u16 in; /* payload bytes that follow this header */
	__u16 out; /* bytes the kernel may write at "response" */
};

/*
 * Spelled out in every command rather than nested as a struct, so that
 * callers address cmd.cmd/cmd.in/cmd.out directly, as rdma-core's
 * layout requires.  Undefined again at the end of this file.
 */
#define UCMA_ABI_CMD_HDR_FIELDS_                                               \
	__u32 cmd;                                                             \
	__u16 in;                                                              \
	__u16 out

/*
 * Identifiers.  "uid" is an opaque user cookie the kernel echoes back in
 * every event for the id; "id" is the kernel's handle for it.
 */
struct ucma_abi_create_id {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u64 uid;
	__u64 response; /* struct ucma_abi_create_id_resp */
	__u16 ps; /* enum rdma_port_space */
	__u8 qp_type; /* enum ibv_qp_type */
	__u8 reserved[5];
};

struct ucma_abi_create_id_resp {
	__u32 id;
};

struct ucma_abi_destroy_id {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u64 response; /* struct ucma_abi_destroy_id_resp */
	__u32 id;
	__u32 reserved;
};

/* Lets the caller wait until it has consumed every event it was sent. */
struct ucma_abi_destroy_id_resp {
	__u32 events_reported;
};

struct ucma_abi_migrate_id {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u64 response; /* struct ucma_abi_migrate_resp */
	__u32 id;
	__u32 fd; /* destination rdma_cm file descriptor */
};

struct ucma_abi_migrate_resp {
	__u32 events_reported;
};

/*
 * Address binding and resolution.  The *_IP commands predate AF_IB and
 * carry a fixed sockaddr_in6; their replacements take a sized
 * sockaddr_storage so that any address family fits.
 */
struct ucma_abi_bind_ip {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u64 response;
	struct sockaddr_in6 addr;
	__u32 id;
};

struct ucma_abi_bind {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u32 id;
	__u16 addr_size;
	__u16 reserved;
	struct sockaddr_storage addr;
};

struct ucma_abi_resolve_ip {
	UCMA_ABI_CMD_HDR_FIELDS_;
	struct sockaddr_in6 src_addr;
	struct sockaddr_in6 dst_addr;
	__u32 id;
	__u32 timeout_ms;
};

struct ucma_abi_resolve_addr {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u32 id;
	__u32 timeout_ms;
	__u16 src_size;
	__u16 dst_size;
	__u32 reserved;
	struct sockaddr_storage src_addr;
	struct sockaddr_storage dst_addr;
};

struct ucma_abi_resolve_route {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u32 id;
	__u32 timeout_ms;
};

/*
 * Queries.  UCMA_CMD_QUERY_ROUTE has its own command number and no
 * option; UCMA_CMD_QUERY picks what to report with one of these.
 */
enum {
	UCMA_QUERY_ADDR = 0,
	UCMA_QUERY_PATH = 1,
	UCMA_QUERY_GID = 2,
	UCMA_QUERY_IB_SERVICE = 3 /* struct ucma_abi_query_ib_service_resp */
};

struct ucma_abi_query {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u64 response;
	__u32 id;
	__u32 option; /* UCMA_QUERY_* */
};

/* Reply to UCMA_CMD_QUERY_ROUTE. */
struct ucma_abi_query_route_resp {
	__be64 node_guid;
	struct ib_user_path_rec ib_route[2]; /* primary, alternate */
	struct sockaddr_in6 src_addr;
	struct sockaddr_in6 dst_addr;
	__u32 num_paths;
	__u8 port_num;
	__u8 reserved[3];
	__u32 ibdev_index; /* left untouched by older kernels */
	__u32 reserved1;
};

/* Reply to UCMA_QUERY_ADDR and UCMA_QUERY_GID. */
struct ucma_abi_query_addr_resp {
	__be64 node_guid;
	__u8 port_num;
	__u8 reserved;
	__be16 pkey;
	__u16 src_size;
	__u16 dst_size;
	struct sockaddr_storage src_addr;
	struct sockaddr_storage dst_addr;
	__u32 ibdev_index; /* left untouched by older kernels */
	__u32 reserved1;
};

/*
 * Reply to UCMA_QUERY_PATH: num_paths records follow the header.  A GNU
 * zero-length array rather than a C99 flexible one, because existing
 * code may apply sizeof to path_data.
 */
struct ucma_abi_query_path_resp {
	__u32 num_paths;
	__u32 reserved;
	struct ibv_path_data path_data[0];
};

/*
 * Connection parameters sent with connect and accept and reported in
 * connect-request and established events.  The kernel never owns a user
 * QP, so qp_num and srq describe it.  "valid" marks the parameters as
 * present: connect requires it, accept without it takes the defaults.
 * The kernel reads "reserved" as a Q_Key, and then only for AF_IB ids.
 */
struct ucma_abi_conn_param {
	__u32 qp_num;
	__u32 reserved;
	__u8 private_data[RDMA_MAX_PRIVATE_DATA];
	__u8 private_data_len;
	__u8 srq;
	__u8 responder_resources;
	__u8 initiator_depth;
	__u8 flow_control;
	__u8 retry_count;
	__u8 rnr_retry_count;
	__u8 valid;
};

/*
 * Datagram parameters in UD and multicast events.  reserved2 stands for
 * the 4-byte pad the kernel places after the event union instead; either
 * way struct ucma_abi_event_resp is the same size on 32- and 64-bit.
 */
struct ucma_abi_ud_param {
	__u32 qp_num;
	__u32 qkey;
	struct ib_uverbs_ah_attr ah_attr;
	__u8 private_data[RDMA_MAX_PRIVATE_DATA];
	__u8 private_data_len;
	__u8 reserved[7];
	__u8 reserved2[4];
};

/* Enhanced connection establishment: vendor options negotiated in REQ/REP */
struct ucma_abi_ece {
	__u32 vendor_id;
	__u32 attr_mod;
};

/* Connection management */
struct ucma_abi_connect {
	UCMA_ABI_CMD_HDR_FIELDS_;
	struct ucma_abi_conn_param conn_param;
	__u32 id;
	__u32 reserved;
	struct ucma_abi_ece ece;
};

struct ucma_abi_listen {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u32 id;
	__u32 backlog;
};

struct ucma_abi_accept {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u64 uid; /* new cookie for the accepted id */
	struct ucma_abi_conn_param conn_param;
	__u32 id;
	__u32 reserved;
	struct ucma_abi_ece ece;
};

struct ucma_abi_reject {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u32 id;
	__u8 private_data_len;
	__u8 reason; /* IB CM reject reason, if non-zero */
	__u8 reserved[2];
	__u8 private_data[RDMA_MAX_PRIVATE_DATA];
};

struct ucma_abi_disconnect {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u32 id;
};

/* Response is a struct ib_uverbs_qp_attr for the requested state. */
struct ucma_abi_init_qp_attr {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u64 response;
	__u32 id;
	__u32 qp_state; /* enum ibv_qp_state */
};

/* Forwards an asynchronous QP event (e.g. IBV_EVENT_COMM_EST) to the CM */
struct ucma_abi_notify {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u32 id;
	__u32 event; /* enum ibv_event_type */
};

/*
 * Multicast.  The join commands create a kernel multicast object whose
 * handle comes back as a struct ucma_abi_create_id_resp; LEAVE_MCAST
 * sends that handle in a struct ucma_abi_destroy_id.
 */
struct ucma_abi_join_ip_mcast {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u64 response; /* struct ucma_abi_create_id_resp */
	__u64 uid;
	struct sockaddr_in6 addr;
	__u32 id;
};

struct ucma_abi_join_mcast {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u64 response; /* struct ucma_abi_create_id_resp */
	__u64 uid;
	__u32 id;
	__u16 addr_size;
	__u16 join_flags; /* RDMA_MC_JOIN_FLAG_* */
	struct sockaddr_storage addr;
};

/* Events: GET_EVENT blocks (unless the fd is non-blocking) for the next. */
struct ucma_abi_get_event {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u64 response; /* struct ucma_abi_event_resp */
};

struct ucma_abi_event_resp {
	__u64 uid; /* the id's or multicast join's cookie */
	__u32 id;
	__u32 event; /* enum rdma_cm_event_type */
	__u32 status;
	union {
		struct ucma_abi_conn_param conn;
		struct ucma_abi_ud_param ud;
		__u32 arg32[2]; /* RDMA_CM_EVENT_USER's argument */
	} param;
	struct ucma_abi_ece ece;
};

/* Options: optval points at optlen bytes in the caller's memory. */
struct ucma_abi_set_option {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u64 optval;
	__u32 id;
	__u32 level;
	__u32 optname;
	__u32 optlen;
};

/*
 * InfiniBand service resolution (Linux 6.15): the kernel asks the SA for
 * the ServiceRecords matching an id or a name and reports
 * RDMA_CM_EVENT_ADDRINFO_RESOLVED; UCMA_QUERY_IB_SERVICE then reads them.
 * This library queries the SA itself instead (rdma_getaddrinfo(3), RAI_SA),
 * so these are declared for programs that speak to the kernel directly.
 */
enum {
	UCMA_IB_SERVICE_FLAG_ID = 1 << 0, /* match service_id */
	UCMA_IB_SERVICE_FLAG_NAME = 1 << 1 /* match service_name */
};

#define UCMA_IB_SERVICE_NAME_SIZE 64

struct ucma_abi_ib_service {
	__u64 service_id;
	__u8 service_name[UCMA_IB_SERVICE_NAME_SIZE];
	__u32 flags; /* UCMA_IB_SERVICE_FLAG_* */
	__u32 reserved;
};

struct ucma_abi_resolve_ib_service {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u32 id;
	struct ucma_abi_ib_service ibs;
};

/* One ServiceRecord (IBA 15.2.5.14), network byte order as on the wire. */
struct ucma_user_service_rec {
	__be64 id;
	__u8 gid[16];
	__be16 pkey;
	__u8 reserved[2];
	__be32 lease;
	__u8 key[16];
	__u8 name[64];
	__u8 data_8[16];
	__be16 data_16[8];
	__be32 data_32[4];
	__be64 data_64[2];
};

struct ucma_abi_query_ib_service_resp {
	__u32 num_service_recs;
	struct ucma_user_service_rec recs[];
};

/* Queues an event on the id's file (Linux 6.15): RDMA_CM_EVENT_USER only. */
struct ucma_abi_write_cm_event {
	UCMA_ABI_CMD_HDR_FIELDS_;
	__u32 id;
	__u32 reserved;
	__u32 event;
	__u32 status;
	union {
		struct ucma_abi_conn_param conn;
		struct ucma_abi_ud_param ud;
		__u64 arg;
	} param;
};

#undef UCMA_ABI_CMD_HDR_FIELDS_

#endif /* RDMA_CMA_ABI_H */
