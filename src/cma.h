/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * State shared by the library's modules.  Public names are rdma_*; internal
 * ones are cma_* (library logic) or ucma_* (the kernel ABI, ucma_abi.h).
 *
 * Module map (one concern per file):
 *   ucma_abi.c     kernel command marshalling; the only write() to the device
 *   abi_convert.c  kernel <-> verbs structure conversions
 *   device.c       RDMA device list, lazily opened contexts, default PDs
 *   channel.c      event channels, the private channels of synchronous ids
 *   id.c           id life cycle: create, destroy, migrate, event accounting
 *   event.c        reading kernel events and turning them into rdma_cm_event
 *   addr.c         bind, address and route resolution, address queries
 *   conn.c         connect, listen, accept, reject, disconnect, ECE
 *   qp.c           QP/SRQ creation and the QP states the CM drives
 *   endpoint.c     rdma_create_ep / rdma_destroy_ep
 *   addrinfo.c     rdma_getaddrinfo and the RDMACM_1.4 addrinfo calls
 *   mcast.c        multicast joins and leaves
 *   options.c      rdma_set_option validation
 */
#ifndef CMA_H
#define CMA_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <infiniband/ib.h>
#include <rdma/rdma_cma.h>
#include "kern_abi.h"

#define CMA_EXPORT __attribute__((visibility("default")))

/* Set errno and return -1: the error convention of every public call. */
static inline int cma_err(int err)
{
	errno = err;
	return -1;
}

/* --- device.c ---------------------------------------------------------- */

struct cma_device {
	struct ibv_device *ibdev;
	struct ibv_context *verbs; /* opened on first use */
	struct ibv_pd *pd; /* default PD, allocated on first use */
	__be64 guid;
	uint8_t max_initiator_depth;
	uint8_t max_responder_resources;
	bool is_iwarp;
	int refcnt; /* ids bound to this device */
	uint64_t eth_ports_known; /* bit n: port n's link layer was queried */
	uint64_t eth_ports; /* bit n: port n is Ethernet (RoCE) */
	bool removed; /* DEVICE_REMOVAL seen: close when unused */
	bool gone; /* removed or no longer listed: never handed out again */
};

/* One-time library set-up: checks the kernel ABI.  0 or -1/errno. */
int cma_init(void);

/* The device with this node GUID, opened; rescans once if unknown. */
struct cma_device *cma_device_get_by_guid(__be64 guid);
void cma_device_put(struct cma_device *dev);
struct ibv_pd *cma_device_default_pd(struct cma_device *dev);
void cma_device_mark_removed(struct cma_device *dev);
/* Whether @port of @dev has an Ethernet link layer (RoCE); cached. */
bool cma_device_port_is_roce(struct cma_device *dev, uint8_t port);

/* --- id.c and channel.c ------------------------------------------------ */

struct cma_multicast;

/* struct ibv_ece without its comp_mask, which is always 0: 8 bytes, not 12. */
struct cma_ece {
	uint32_t vendor_id;
	uint32_t options;
};

struct cma_id_private {
	struct rdma_cm_id id; /* must stay first: the public handle */
	struct cma_device *cma_dev;
	uint32_t handle; /* the kernel's id */
	bool sync; /* created without a channel: calls block */
	bool connect_error; /* the library failed the connection itself */
	bool cm_started; /* connect sent or request received: the IB CM owns
			    the QP attributes from now on */

	pthread_mutex_t mut;
	pthread_cond_t cond;
	uint32_t events_completed; /* events acked by the application */

	uint8_t initiator_depth;
	uint8_t responder_resources;
	bool owns_cqs; /* rdma_create_qp made the CQs */
	uint8_t connect_len;
	struct ibv_qp_init_attr *listen_qp_attr; /* rdma_create_ep listeners */
	struct ibv_pd *listen_pd;

	struct cma_multicast *mc_list;

	struct cma_ece local_ece;
	struct cma_ece remote_ece;

	struct rdma_addrinfo *resolved_ai; /* rdma_resolve_addrinfo result */

	/*
	 * rdma_create_ep's ai_connect (connect_len bytes, allocated only then):
	 * sent ahead of rdma_connect's data.  Kept out of line because few ids
	 * have it, and every id would pay for the whole private data size.
	 */
	uint8_t *connect_data;
};

static inline struct cma_id_private *cma_id_priv(struct rdma_cm_id *id)
{
	return (struct cma_id_private *)id;
}

/* The kernel fd behind a channel. */
static inline int cma_id_fd(const struct cma_id_private *id_priv)
{
	return id_priv->id.channel->fd;
}

/* Allocate the library side of an id, then create the kernel one. */
struct cma_id_private *cma_id_alloc(struct rdma_event_channel *channel,
				    void *context, enum rdma_port_space ps,
				    enum ibv_qp_type qp_type);
/* Create the kernel id for an allocated id.  0 or -1/errno. */
int cma_id_create_kernel(struct cma_id_private *id_priv);
void cma_id_free(struct cma_id_private *id_priv);
/* Point the id at a device (taking a reference), dropping any old one. */
void cma_id_set_device(struct cma_id_private *id_priv, struct cma_device *dev);
/* Wait until the application has acked @reported events of this id. */
void cma_id_wait_events(struct cma_id_private *id_priv, uint32_t reported);
/* Block for the next event of a synchronous id; -1/errno on failure. */
int cma_id_wait_sync(struct cma_id_private *id_priv);
/* Ack the event a synchronous call left in id->event. */
void cma_id_release_sync_event(struct cma_id_private *id_priv);
/* Map an rdma_port_space to the QP type the kernel expects. */
int cma_ps_qp_type(enum rdma_port_space ps, enum ibv_qp_type *qp_type);
/* rdma_create_id with a QP type other than the port space's default. */
int cma_create_id_qp_type(struct rdma_event_channel *channel,
			  struct rdma_cm_id **id, void *context,
			  enum rdma_port_space ps, enum ibv_qp_type qp_type);
/* Validate a public id pointer (NULL check). 0 or -1/EINVAL. */
int cma_check_id(const struct rdma_cm_id *id);

struct rdma_event_channel *cma_channel_create(void);
void cma_channel_destroy(struct rdma_event_channel *channel);

/* --- event.c ----------------------------------------------------------- */

struct cma_event {
	struct rdma_cm_event event; /* must stay first: what users see */
	uint8_t private_data[RDMA_MAX_PRIVATE_DATA];
	struct cma_id_private *id_priv; /* the id whose counter the ack bumps */
	struct cma_multicast *mc;
};

/* Copy the kernel's connection or datagram parameters into an event. */
void cma_event_copy_param(struct cma_event *evt,
			  const struct cma_id_private *id_priv,
			  const struct rdma_ucm_event_resp *resp);

/* --- addrinfo.c -------------------------------------------------------- */

struct addrinfo;
/* errno for a getaddrinfo() EAI_* failure code. */
int cma_gai_errno(int gai_err);
/* One rdma_addrinfo from one addrinfo entry, typed by the template. */
struct rdma_addrinfo *cma_ai_from_addrinfo(const struct addrinfo *ai,
					   const char *canonname,
					   const struct rdma_addrinfo *tmpl);
/* A whole getaddrinfo() result, without duplicates. */
struct rdma_addrinfo *cma_ai_convert(const struct addrinfo *res,
				     const struct rdma_addrinfo *tmpl);
/* Deep copy of a list, freed with rdma_freeaddrinfo(). */
struct rdma_addrinfo *cma_ai_dup_list(const struct rdma_addrinfo *list);

/* --- addr.c ------------------------------------------------------------ */

/* Bring the id's addresses, device, port and GIDs up to date. */
int cma_query_addr_info(struct cma_id_private *id_priv);
/* Bring the id's path records up to date after route resolution. */
int cma_query_route_info(struct cma_id_private *id_priv);
socklen_t cma_addr_len(const struct sockaddr *addr);
int cma_is_af_ib(const struct cma_id_private *id_priv);

/* --- conn.c ------------------------------------------------------------ */

/* A CONNECT_REQUEST arrived: build the new id.  0 or -1/errno. */
int cma_process_conn_req(struct cma_event *evt,
			 struct cma_id_private *listen_priv, uint32_t handle,
			 const struct rdma_ucm_event_resp *resp);
/* A CONNECT_RESPONSE arrived on an id with a QP: finish the handshake. */
int cma_process_conn_resp(struct cma_id_private *id_priv);

/* --- qp.c -------------------------------------------------------------- */

int cma_qp_to_init(struct cma_id_private *id_priv, struct ibv_qp *qp);
int cma_qp_to_rtr(struct cma_id_private *id_priv, uint8_t resp_res);
int cma_qp_to_rts(struct cma_id_private *id_priv, uint8_t init_depth);
int cma_qp_to_err(struct cma_id_private *id_priv);
int cma_qp_to_sqd(struct cma_id_private *id_priv);
/* The QP the CM drives for this id, or NULL if the user manages it. */
static inline struct ibv_qp *cma_id_qp(struct cma_id_private *id_priv)
{
	return id_priv->id.qp;
}
/* Create a QP for an id accepted by an rdma_create_ep listener. */
int cma_create_ep_qp(struct cma_id_private *id_priv, struct ibv_pd *pd,
		     const struct ibv_qp_init_attr *attr);

/* --- options.c --------------------------------------------------------- */

/* Validate an rdma_set_option call: 0, or -1 with errno. */
int cma_check_option(int level, int optname, const void *optval, size_t optlen);

/* --- mcast.c ----------------------------------------------------------- */

struct cma_multicast {
	struct cma_multicast *next;
	struct cma_id_private *id_priv;
	void *context;
	uint32_t handle;
	uint32_t events_completed;
	pthread_cond_t cond;
	uint16_t join_flags;
	bool attached; /* the id's QP is attached to the group */
	union ibv_gid mgid;
	uint16_t mlid;
	struct sockaddr_storage addr;
	socklen_t addr_len;
};

/* A MULTICAST_JOIN arrived: attach the QP and fill the event. */
int cma_process_join(struct cma_event *evt);
/* Leave every group of an id being destroyed. */
void cma_mcast_leave_all(struct cma_id_private *id_priv);

#endif /* CMA_H */
