/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * State shared by the library's modules.  Public names are rdma_*; internal
 * ones are cma_* (library logic) or ucma_* (the kernel ABI, ucma_abi.h).
 *
 * Which file holds which concern: the Layout table of docs/architecture.md
 * (kept in one place).  Each section below names the file whose functions it
 * lists.
 */
#ifndef CMA_H
#define CMA_H

/* Ownership rules and lock order: docs/architecture.md. */

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <infiniband/ib.h>
#include <rdma/rdma_cma.h>
#include "kern_abi.h"
/* CMA_EXPORT, cma_err and cma_channel_create: the part rsocket uses. */
#include "cma_rs.h"

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
	/* Contexts a credential change retired (device.c: kept open). */
	struct cma_retired_context *retired;
};

/* One-time library set-up: checks the kernel ABI.  0 or -1/errno. */
int cma_init(void);

/* The device with this node GUID, opened; rescans once if unknown. */
struct cma_device *cma_device_get_by_guid(__be64 guid);
void cma_device_put(struct cma_device *dev);
struct ibv_pd *cma_device_default_pd(struct cma_device *dev);
void cma_device_mark_removed(struct cma_device *dev);
void cma_device_forget_contexts(void);
/* Whether @port of @dev has an Ethernet link layer (RoCE); cached. */
bool cma_device_port_is_roce(struct cma_device *dev, uint8_t port);

/* --- id.c and channel.c ------------------------------------------------ */

struct cma_multicast;
struct cma_acm_answer;

/* A datagram destination rdma_sendto can reach, with its cached AH. */
struct cma_ud_dest {
	bool valid;
	struct ibv_ah_attr ah_attr;
	uint32_t qpn;
	uint32_t qkey;
	struct ibv_ah *ah; /* created on first use, on the QP's PD */
};

/* The values of id-level options set so far, for rdma_get_option. */
struct cma_id_opts {
	bool tos_set, afonly_set, ack_timeout_set;
	uint8_t tos;
	uint8_t ack_timeout;
	int reuseaddr;
	int afonly;
};

/* struct ibv_ece without its comp_mask, which is always 0: 8 bytes, not 12. */
struct cma_ece {
	uint32_t vendor_id;
	uint32_t options;
};

/* Few devices have ECE, so an id keeps these out of line (cma_ece_of). */
struct cma_ece_pair {
	struct cma_ece local;
	struct cma_ece remote;
};

/* rdma_create_ep's listener attributes, for rdma_get_request's QPs. */
struct cma_ep_listen {
	struct ibv_qp_init_attr attr;
	struct ibv_pd *pd;
};

/*
 * One per rdma_cm_id.  Every id pays for every byte here (the benchmark
 * counts heap bytes per id against rdma-core's), so state that few ids use
 * lives out of line behind a pointer, and small fields fill the holes.
 */
/*
 * What few ids have, out of line so that every id does not pay for it:
 * an id is kept no larger than rdma-core's (made by cma_id_rare on first
 * use, freed with the id).
 */
struct cma_id_rare {
	struct cma_ep_listen *ep_listen; /* rdma_create_ep listeners */
	/* The UD peer of an ESTABLISHED SIDR. */
	struct cma_ud_dest *peer;
	struct rdma_addrinfo *resolved_ai; /* rdma_resolve_addrinfo result */
	struct cma_acm_answer *acm_answer; /* ACM's path, rdma_resolve_addr */
	/*
	 * rdma_create_ep's ai_connect (connect_len bytes, allocated only
	 * then): sent ahead of rdma_connect's data.
	 */
	uint8_t *connect_data;
	/* IB_MCMEMBER_MISMATCH: fields the last verified join lacked */
	uint64_t mc_mismatch;
};

struct cma_id_private {
	struct rdma_cm_id id; /* must stay first: the public handle */
	struct cma_device *cma_dev;
	uint32_t handle; /* the kernel's id, CMA_NO_KERNEL_ID until made */
	bool sync; /* created without a channel: calls block */
	bool connect_error; /* the library failed the connection itself */
	bool cm_started; /* connect sent or request received: the IB CM owns
			    the QP attributes from now on */
	bool owns_cqs; /* rdma_create_qp made the CQs */
	bool ai_cancel; /* being destroyed: lookups post no event */
	bool kernel_lazy; /* created without its kernel id (cma_id_kernel) */
	uint16_t ai_pending; /* rdma_resolve_addrinfo lookups running */

	pthread_mutex_t mut;
	/*
	 * id.qp against rdma_destroy_qp while another thread, in
	 * rdma_get_cm_event, moves that QP for one of the id's events (RTR,
	 * RTS and the RTU on a CONNECT_RESPONSE; ERR on a failure): held
	 * around the handling of each event of the id and around the QP's
	 * destruction.  Taken before p2p_lock and mut, never across a wait.
	 */
	pthread_mutex_t qp_lock;
	/* Made by the first waiter (cma_id_wait_locked): most ids never wait. */
	pthread_cond_t *cond;
	uint32_t events_completed; /* events acked by the application */
	uint32_t lib_events; /* library-made events not yet acked */
	/* Events reported by kernel ids an adoption replaced (all acked). */
	uint32_t events_base;
	/*
	 * Kernel events the service thread queued for the application and
	 * not yet delivered (under mut): rdma_migrate_id does not wait for
	 * their acks.
	 */
	uint32_t events_held;
	bool dying; /* rdma_destroy_id: nothing more is queued (under mut) */

	uint8_t initiator_depth;
	uint8_t responder_resources;
	uint8_t connect_len;
	bool passive; /* made from a CONNECT_REQUEST */
	/*
	 * RDMA_OPTION_ID_INITIATOR: 1 when this end's connection request
	 * formed the connection (the iWARP MPA initiator, which sends first),
	 * 0 when it answered the peer's; -1 until ESTABLISHED.
	 */
	int8_t initiator;

	struct cma_id_opts opts;

	/* ECE: made when the application sets one or a peer sends one. */
	struct cma_ece_pair *ece;
	struct cma_multicast *mc_list;
	/* What few ids have (cma_id_rare), NULL until one needs it. */
	struct cma_id_rare *rare;

	/*
	 * Peer-to-peer mode's state (src/p2p), opaque here: made by the
	 * first p2p option, listen or connect on the id, freed with it.
	 */
	struct cma_p2p_id *p2p;
};

/*
 * Zeroed memory for what is allocated per event, id or connect.  glibc's
 * calloc (2.36, Debian 12's) never reuses a chunk from the thread's cache
 * of freed ones and, once a process has a second thread (the service
 * thread), takes the arena's lock each time; malloc takes the chunk the
 * last free of that size left, in about a quarter of the instructions.
 */
static inline void *cma_zalloc(size_t size)
{
	void *p = malloc(size);

	/* Hidden from the compiler, which would make the pair a calloc. */
	__asm__("" : "+r"(p));
	if (p)
		memset(p, 0, size);
	return p;
}

/* The id's rare block, made on first use (any thread); NULL/ENOMEM. */
struct cma_id_rare *cma_id_rare(struct cma_id_private *id_priv);
/* The rare block if the id has one: for reading, never makes it. */
static inline struct cma_id_rare *
cma_id_rare_of(const struct cma_id_private *id_priv)
{
	return __atomic_load_n(&id_priv->rare, __ATOMIC_ACQUIRE);
}

static inline struct cma_id_private *cma_id_priv(struct rdma_cm_id *id)
{
	return (struct cma_id_private *)id;
}

/* Whether the id is bound to an iWARP device (iw_cm: no UD, no multicast). */
static inline bool cma_id_is_iwarp(const struct cma_id_private *id_priv)
{
	return id_priv->cma_dev && id_priv->cma_dev->is_iwarp;
}

/*
 * What iWARP cannot do: datagram ids (RDMA_PS_UDP, RDMA_PS_IPOIB) connect,
 * listen, accept and get QPs only on IB and RoCE.  -1/EOPNOTSUPP for such
 * an id on an iWARP device, else 0.  (iw_cm would otherwise be asked for a
 * TCP connection on the datagram id's behalf.)
 */
static inline int cma_check_ud_transport(const struct cma_id_private *id_priv)
{
	if (id_priv->id.qp_type == IBV_QPT_UD && cma_id_is_iwarp(id_priv))
		return cma_err(EOPNOTSUPP);
	return 0;
}

/*
 * ThreadSanitizer and the kernel: an id's address is the uid of its kernel
 * events.  The kernel orders a command on an id before the events it
 * causes, but ThreadSanitizer cannot see the kernel: every command on an
 * id releases it (cma_id_fd; after the create command, which writes the
 * handle) and the thread that binds an event to the id acquires it
 * (event.c).  No-ops without ThreadSanitizer.
 */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define cma_tsan_acquire(p) __tsan_acquire((void *)(p))
#define cma_tsan_release(p) __tsan_release((void *)(p))
#else
#define cma_tsan_acquire(p) ((void)(p))
#define cma_tsan_release(p) ((void)(p))
#endif

/* The kernel fd behind a channel (channel->fd may be an epoll set). */
int cma_channel_kernel_fd(const struct rdma_event_channel *channel);

/* The fd every command on the id goes to: see cma_tsan_release. */
static inline int cma_id_fd(const struct cma_id_private *id_priv)
{
	cma_tsan_release(id_priv);
	return cma_channel_kernel_fd(id_priv->id.channel);
}

/* Allocate the library side of an id, then create the kernel one. */
struct cma_id_private *cma_id_alloc(struct rdma_event_channel *channel,
				    void *context, enum rdma_port_space ps,
				    enum ibv_qp_type qp_type);
/* Create the kernel id for an allocated id.  0 or -1/errno. */
int cma_id_create_kernel(struct cma_id_private *id_priv);
/*
 * The handle of an id whose kernel id is not made yet.  The kernel gives
 * each new id the lowest free number, so it never reaches this one.
 */
#define CMA_NO_KERNEL_ID UINT32_MAX
/*
 * Before every command on the id's own kernel id: make it if the id was
 * created without one (id.c).  0, or -1/errno.
 */
int cma_id_kernel(struct cma_id_private *id_priv);
void cma_id_free(struct cma_id_private *id_priv);
/*
 * Point the id at a device, taking over the caller's reference and dropping
 * any old one; id->verbs and id->pd (the device's shared PD) follow.
 * 0, or -1/ENOMEM (the reference is dropped then too).
 */
int cma_id_set_device(struct cma_id_private *id_priv, struct cma_device *dev);
/*
 * Keep the ECE a peer sent (vendor_id/attr_mod of an event).  Nothing is
 * allocated for an all-zero ECE, which is what reading back gives anyway.
 * 0, or -1/ENOMEM.
 */
int cma_store_remote_ece(struct cma_id_private *id_priv, uint32_t vendor_id,
			 uint32_t options);
/* Wait for the id's condition to be signalled; called with mut held. */
void cma_id_wait_locked(struct cma_id_private *id_priv);
/* Wake the id's waiters, if any; called with mut held. */
static inline void cma_id_wake_locked(struct cma_id_private *id_priv)
{
	if (id_priv->cond)
		pthread_cond_broadcast(id_priv->cond);
}
/* Block for the next event of a synchronous id; -1/errno on failure. */
int cma_id_wait_sync(struct cma_id_private *id_priv);
/* Map an rdma_port_space to the QP type the kernel expects. */
int cma_ps_qp_type(enum rdma_port_space ps, enum ibv_qp_type *qp_type);
/* rdma_create_id with a QP type other than the port space's default. */
int cma_create_id_qp_type(struct rdma_event_channel *channel,
			  struct rdma_cm_id **id, void *context,
			  enum rdma_port_space ps, enum ibv_qp_type qp_type);
/* Validate a public id pointer (NULL check). 0 or -1/EINVAL. */
int cma_check_id(const struct rdma_cm_id *id);

/* Destroy a channel made by cma_channel_create (cma_rs.h). */
void cma_channel_destroy(struct rdma_event_channel *channel);

struct cma_channel;
/*
 * The library may post events to @channel from another thread (its
 * timers): a private channel then waits with poll(2) rather than a
 * blocking read, so that such an event wakes it.
 */
void cma_channel_expect_posts(struct rdma_event_channel *channel);
/*
 * The library will post events to @channel: make what that needs now (the
 * wake-up eventfd), not at the first post.
 */
void cma_channel_prepare_posts(struct rdma_event_channel *channel);
uint64_t cma_now_ns(void); /* CLOCK_MONOTONIC */
/* CLOCK_MONOTONIC_COARSE: timers' deadlines, never ahead of cma_now_ns. */
uint64_t cma_now_coarse_ns(void);
/*
 * fault.c: RDMA_CM_FAULT_DELAY_MS=N, a random 0..N ms wait before each
 * kernel event is handled and each timer expires (tests under load).
 */
void cma_fault_delay(void);

/*
 * Timers run in the library's service thread (timer.c), with no other
 * library lock held; one that has something to report posts an event.
 * @channel in cma_timer_start is where its events will go.
 *
 * Lifetime: a timer lives inside the object it serves (a p2p listener or
 * connect), and its expire() runs after the timer lock is dropped.  So
 * the owner must not be freed while expire() may still run: stop the
 * timer, make expire() find nothing to do (unlink the owner from whatever
 * expire() looks it up in), then cma_timer_sync() before freeing.
 * cma_timer_stop() never waits, so it may be called under any lock;
 * cma_timer_sync() waits, so it must be called with no lock that expire()
 * takes (p2p_lock in particular).  Lock order: p2p_lock, then the timer
 * lock; the timer lock, then nothing.
 */
struct cma_timer {
	struct cma_timer *next;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC */
	void (*expire)(struct cma_timer *timer);
	bool armed;
	bool running; /* expire() is being called, by runner */
	pthread_t runner;
};
void cma_timer_start(struct rdma_event_channel *channel,
		     struct cma_timer *timer, unsigned int ms);
/* Disarm; an expire() already under way may still be running. */
void cma_timer_stop(struct cma_timer *timer);
/*
 * Start the service thread now, ahead of the first timer: a p2p listener
 * does (rdma_listen), so that its process's first connects do not pay for
 * it.
 */
void cma_timer_prestart(void);
/* Disarm, and wait for an expire() under way in another thread to return. */
void cma_timer_sync(struct cma_timer *timer);

struct cma_event;
struct rdma_ucm_event_resp;
/*
 * An event the library makes itself; the kernel does not count it, so
 * the id counts it in lib_events until it is acked.
 */
struct cma_event *cma_event_new(struct cma_id_private *id_priv,
				enum rdma_cm_event_type type, int status);
/* Queue it on its id's channel, ahead of kernel events read later. */
void cma_event_post(struct cma_event *evt);
/* An acked library event: uncount it. */
void cma_event_release_lib(struct cma_event *evt);
/* Discard the queued, undelivered library events of an id. */
void cma_channel_drop_events(struct cma_id_private *id_priv);
/*
 * After a migration: carry the id's queued library events from @from and
 * make the new channel notice the kernel events that moved with it.
 */
void cma_channel_move_events(struct cma_id_private *id_priv,
			     struct rdma_event_channel *from);
/* Discard the queued, undelivered events of a group being left. */
void cma_channel_drop_mc_events(struct cma_multicast *mc);
/* Whether the application made the channel (pub.fd is an epoll set). */
bool cma_channel_pollable(const struct rdma_event_channel *channel);
/*
 * Served channels: the service thread reads the kernel fd, handles each
 * event and queues what is for the application, so pub.fd is readable
 * only while an event is there.  A channel is served once it may hold a
 * p2p request the application must not see (a p2p listener or a p2p
 * connect is on it: cma_channel_may_hold) and the process has shown p2p
 * activity (cma_channel_serve_all); channel.c says why.
 */
void cma_channel_may_hold(struct rdma_event_channel *channel);
/* p2p activity: serve every channel that may hold, now and from now on. */
void cma_channel_serve_all(void);
/* Around a read of the kernel fd and the delivery or queueing of it. */
void cma_channel_reader_lock(struct rdma_event_channel *channel);
void cma_channel_reader_unlock(struct rdma_event_channel *channel);
/* Non-blocking read of a pollable channel's kernel fd; -1/EAGAIN if empty. */
int cma_channel_read_kernel(struct rdma_event_channel *channel,
			    struct rdma_ucm_event_resp *resp);
/* The oldest queued event (library-made or read by the thread), or NULL. */
struct cma_event *cma_channel_pop_event(struct rdma_event_channel *channel);
/* Queue a kernel event the service thread read; false if its id is dying. */
bool cma_channel_admit(struct cma_event *evt);
/*
 * Wait for the channel's fd; 0, or -1/EAGAIN when it is non-blocking.  On
 * a served channel the caller may become a waiter reading the kernel fd
 * itself (*waiting set): it calls cma_channel_waiter_leave before it
 * returns from rdma_get_cm_event.
 */
int cma_channel_wait_ready(struct rdma_event_channel *channel, bool *waiting);
void cma_channel_waiter_leave(struct rdma_event_channel *channel);
/* timer.c: the service thread watches / forgets a served kernel fd. */
int cma_service_add(struct rdma_event_channel *channel, int kfd);
/*
 * The same for a channel of the library's own: the thread calls @handle
 * when @fd is readable, which reads the channel as an application would
 * (rdma_get_cm_event on a non-blocking fd) and returns whether to watch
 * @fd again.
 */
int cma_service_add_handler(struct rdma_event_channel *channel, int fd,
			    bool (*handle)(struct rdma_event_channel *channel));
void cma_service_remove(struct rdma_event_channel *channel, int kfd);
void cma_service_recheck(struct rdma_event_channel *channel);
/* Stop the service thread and wait for it; it restarts when needed. */
void cma_service_stop(void);
/*
 * event.c: the service thread's handling of a readable served channel;
 * false if an application thread waits on its kernel fd (it reads it).
 */
bool cma_event_serve(struct rdma_event_channel *channel);
/*
 * creds.c's part of a channel, reader lock held.  Swap: the kernel fd's
 * number comes to stand for @newfd's file, and the old file stays open
 * as the newest stale file (-1/EAGAIN when CMA_CHANNEL_STALE_MAX are
 * open already); @newfd is the channel's or closed, whatever the result.
 * Restore undoes it.  Adopt: a request read from the channel joins the
 * kernel fd's file from the stale file it was born in, and stale files
 * whose requests have all been read are closed.
 */
#define CMA_CHANNEL_STALE_MAX 8
int cma_channel_swap_kernel_file(struct rdma_event_channel *channel, int newfd);
void cma_channel_restore_kernel_file(struct rdma_event_channel *channel);
int cma_channel_newest_stale(const struct rdma_event_channel *channel);
void cma_channel_adopt_request(struct rdma_event_channel *channel,
			       uint32_t handle);
/* Whether the service thread reads the channel's kernel fd. */
bool cma_channel_served(const struct rdma_event_channel *channel);
/* A private channel the library may post events to from other threads. */
bool cma_channel_posted(const struct rdma_event_channel *channel);
/* An application thread waits in rdma_get_cm_event on the kernel fd. */
bool cma_channel_has_waiter(struct rdma_event_channel *channel);
/* Count a kernel event as acked. */
void cma_event_complete(struct cma_event *evt);
/* Count an undelivered kernel event as acked and free it. */
void cma_event_discard(struct cma_event *evt);
/*
 * The next event of a private channel: a library event in *lib, or else
 * a kernel event in *resp (*lib NULL).  0 or -1/errno.
 */
int cma_channel_next(struct rdma_event_channel *channel,
		     struct rdma_ucm_event_resp *resp, struct cma_event **lib);

/* --- event.c ----------------------------------------------------------- */

/*
 * A connected QP's packet sequence numbers.  The CM derives them from
 * the REQ and REP it carried; a p2p answer that reuses a QP already at
 * RTS dictates its own instead (p2p_connect.c).  Given to a move with
 * @dictated, they replace the CM's; every move writes back the one it
 * set (rq at RTR, sq at RTS).
 */
struct cma_qp_psns {
	bool dictated;
	uint32_t rq, sq;
};

struct cma_event {
	struct rdma_cm_event event; /* must stay first: what users see */
	uint8_t private_data[RDMA_MAX_PRIVATE_DATA];
	struct cma_id_private *id_priv; /* the id whose counter the ack bumps */
	struct cma_multicast *mc;
	struct cma_event *next; /* a channel's queue of library events */
	bool lib; /* made by the library, not read from the kernel */
	/* A CONNECT_RESPONSE's PSNs, if p2p's filter found them dictated. */
	struct cma_qp_psns psns;
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
/* getaddrinfo() for a node/service, typed by the template.  NULL/errno. */
struct rdma_addrinfo *cma_ai_lookup(const char *node, const char *service,
				    const struct rdma_addrinfo *tmpl);
/* Deep copy of a list, freed with rdma_freeaddrinfo(). */
struct rdma_addrinfo *cma_ai_dup_list(const struct rdma_addrinfo *list);

/* rdma_getaddrinfo; RAI_SA from the port owning @sgid (NULL: any). */
int cma_getaddrinfo_from(const char *node, const char *service,
			 const struct rdma_addrinfo *hints,
			 const union ibv_gid *sgid, struct rdma_addrinfo **res);

/* --- addrinfo_sa.c: RAI_SA, ServiceRecords from the IB SA ---------------- */

/* The service asked for: a numeric service ID, or else a name. */
struct cma_sa_svc {
	bool by_id;
	uint64_t id; /* host order */
	char name[64]; /* NUL-padded */
};
struct cma_acm_port;
/* rdma_getaddrinfo's service string.  0 or -1/EINVAL. */
int cma_sa_svc_parse_service(const char *service, struct cma_sa_svc *svc);
/* The 256-byte SubnAdmGetTable(ServiceRecord) MAD for @svc. */
void cma_sa_svc_build(uint8_t mad[256], uint64_t tid,
		      const struct cma_sa_svc *svc);
/*
 * Decode a GetTableResp(ServiceRecord) of @len bytes into AF_IB entries
 * typed by @tmpl, with @port's GID as the source (when @port is given).
 * 0 with *res set, or -1/errno: EPROTO (not the answer, malformed),
 * ENOENT (no such service), EIO (any other SA error), ENOMEM.
 */
int cma_sa_svc_parse(const uint8_t *mad, size_t len, uint64_t tid,
		     const struct rdma_addrinfo *tmpl,
		     const struct cma_acm_port *port,
		     struct rdma_addrinfo **res);
/*
 * rdma_getaddrinfo with RAI_SA: from the port owning @sgid, or the first
 * InfiniBand port with a subnet manager when @sgid is NULL.
 */
int cma_sa_getaddrinfo(const char *node, const char *service,
		       const struct rdma_addrinfo *tmpl,
		       const union ibv_gid *sgid, struct rdma_addrinfo **res);

/* --- addrinfo_resolve.c: rdma_resolve_addrinfo -------------------------- */

/* The lookup rdma_resolve_addrinfo runs (tests replace it). */
extern int (*cma_ai_resolver)(const char *node, const char *service,
			      const struct rdma_addrinfo *hints,
			      const union ibv_gid *sgid,
			      struct rdma_addrinfo **res);
/* rdma_destroy_id: wait for the id's lookups, which then post nothing. */
void cma_ai_cancel(struct cma_id_private *id_priv);

/* --- addr.c ------------------------------------------------------------ */

/* Bring the id's addresses, device, port and GIDs up to date. */
int cma_query_addr_info(struct cma_id_private *id_priv);
/* Bring the id's path records up to date after route resolution. */
int cma_query_route_info(struct cma_id_private *id_priv);
/*
 * The same from a QUERY_ROUTE answer already at hand for the id's kernel
 * id (IP addressing only).
 */
struct rdma_ucm_query_route_resp;
int cma_apply_ip_route(struct cma_id_private *id_priv,
		       const struct rdma_ucm_query_route_resp *resp);
/* Give the id @count path records @paths (owned from now; NULL, 0: none). */
int cma_store_paths(struct cma_id_private *id_priv,
		    struct ibv_sa_path_rec *paths, int count);
/*
 * rdma_resolve_addr's and rdma_resolve_route's work in the kernel (with
 * ACM's, when it is on): 0 when the command is out (the event follows),
 * or -1/errno.  The caller (conn.c) checked the arguments and waits for a
 * synchronous id's event.
 */
int cma_resolve_addr_kernel(struct cma_id_private *id_priv,
			    const struct sockaddr *src, socklen_t src_len,
			    const struct sockaddr *dst, socklen_t dst_len,
			    uint32_t timeout_ms);
int cma_resolve_route_kernel(struct cma_id_private *id_priv,
			     uint32_t timeout_ms);
socklen_t cma_addr_len(const struct sockaddr *addr);
int cma_is_af_ib(const struct cma_id_private *id_priv);

/* --- conn.c ------------------------------------------------------------ */

/* A CONNECT_REQUEST arrived: build the new id.  0 or -1/errno. */
int cma_process_conn_req(struct cma_event *evt,
			 struct cma_id_private *listen_priv, uint32_t handle,
			 const struct rdma_ucm_event_resp *resp);
/*
 * A CONNECT_RESPONSE arrived on an id with a QP: finish the handshake.
 * @psns: NULL, or PSNs the answer dictates (its QP's; see qp.c).
 */
int cma_process_conn_resp(struct cma_id_private *id_priv,
			  const struct cma_qp_psns *psns);

/* --- qp.c -------------------------------------------------------------- */

int cma_qp_to_init(struct cma_id_private *id_priv, struct ibv_qp *qp);
/*
 * A move of the id's QP whose attributes were taken from the kernel id
 * beforehand: p2p's adoption takes both while the request is known
 * alive, before it resets a QP (the reset must never be for nothing).
 */
struct cma_qp_move {
	struct ibv_qp_attr attr;
	int mask;
};
/* @psns may be NULL in these four. */
int cma_qp_rtr_attr(struct cma_id_private *id_priv, uint8_t resp_res,
		    struct cma_qp_psns *psns, struct cma_qp_move *move);
int cma_qp_rts_attr(struct cma_id_private *id_priv, uint8_t init_depth,
		    struct cma_qp_psns *psns, struct cma_qp_move *move);
int cma_qp_move(struct cma_id_private *id_priv, struct cma_qp_move *move);
int cma_qp_to_rtr(struct cma_id_private *id_priv, uint8_t resp_res,
		  struct cma_qp_psns *psns);
int cma_qp_to_rts(struct cma_id_private *id_priv, uint8_t init_depth,
		  struct cma_qp_psns *psns);
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

/*
 * One option of rdma_set_option / rdma_get_option.  len is the exact size
 * of the value, or 0 when check() judges the size.  check() validates a
 * value for set without touching any id (it must be pure: the unit tests
 * and fuzz targets call it, through cma_check_option).  set() validates
 * what it applies itself (calling its check(), or parsing the value into
 * what it applies), so that rdma_set_option reads a value once.  set/get
 * are NULL when the option cannot be set / read.
 */
struct cma_option {
	int level;
	int optname;
	size_t len;
	int (*check)(int level, int optname, const void *optval, size_t optlen);
	int (*set)(struct cma_id_private *id_priv, int level, int optname,
		   const void *optval, size_t optlen);
	int (*get)(struct cma_id_private *id_priv, int level, int optname,
		   void *optval, size_t optlen);
};

struct cma_option_table {
	const struct cma_option *opts;
	size_t count;
};

/*
 * Each module's options; options.c lists the tables it searches.  conn.c's
 * are the connection modes' (peer-to-peer mode's, handled in src/p2p).
 */
extern const struct cma_option_table cma_mcast_option_table;
extern const struct cma_option_table cma_conn_option_table;

/* Validate an rdma_set_option call: 0, or -1 with errno. */
int cma_check_option(int level, int optname, const void *optval, size_t optlen);

/* --- conn.c: private data ------------------------------------------------ */

/* The kernel's length byte: at most 255 of RDMA_MAX_PRIVATE_DATA bytes. */
#define CMA_PRIV_DATA_MAX 255

/* The messages that carry private data, each with its own room. */
enum cma_priv_msg {
	CMA_PRIV_REQ, /* rdma_connect: REQ, SIDR REQ, MPA request */
	CMA_PRIV_REP, /* rdma_accept: REP, SIDR REP, MPA reply */
	CMA_PRIV_REJ, /* rdma_reject */
};

/*
 * The one length check for private data: @len bytes, every header the
 * library adds included, fit @msg on @id_priv's transport.  0, or -1 with
 * EINVAL.
 */
int cma_check_priv_len(const struct cma_id_private *id_priv, size_t len,
		       enum cma_priv_msg msg);

/* --- mcast.c ----------------------------------------------------------- */

enum cma_mc_state {
	CMA_MC_JOINING, /* the kernel has not answered yet */
	CMA_MC_JOINED,
	CMA_MC_FAILED, /* MULTICAST_ERROR, or the group failed verification */
};

struct cma_multicast {
	struct cma_multicast *next;
	struct cma_id_private *id_priv;
	void *context;
	uint32_t handle;
	uint32_t events_completed;
	pthread_cond_t cond;
	uint16_t join_flags;
	bool attached; /* the id's QP is attached to the group */
	bool leaving; /* under id_priv->mut: nothing more is queued */
	union ibv_gid mgid;
	uint16_t mlid;
	struct sockaddr_storage addr;
	socklen_t addr_len;

	enum cma_mc_state state; /* under id_priv->mut */
	bool verify; /* an IB_ADD_MEMBERSHIP join: check want */
	struct ib_mreq want;
	uint8_t link_layer; /* IBV_LINK_LAYER_*, 0 if unknown */
	uint8_t port_mtu; /* enum ibv_mtu of the port, 0 if unknown */
	struct ib_sa_mcmember_rec rec; /* the group as joined */
	struct cma_ud_dest dest; /* rdma_sendto's view of the group */
};

/* How a join is asked for (rdma_join_multicast_ex or an option). */
struct cma_mc_join_req {
	const struct sockaddr *addr;
	socklen_t addr_len;
	uint16_t join_flags;
	void *context;
	const struct ib_mreq *want; /* IB_ADD_MEMBERSHIP: verify these */
};

/* Join a group: 0 (the event follows) or -1/errno. */
int cma_mc_join(struct cma_id_private *id_priv,
		const struct cma_mc_join_req *req);
/* Leave one group found with cma_mc_find*: 0 or -1/errno. */
int cma_mc_leave_group(struct cma_id_private *id_priv,
		       struct cma_multicast *mc);
/* The group joined at @addr's IP address (ports ignored), under mut. */
struct cma_multicast *cma_mc_find_addr(struct cma_id_private *id_priv,
				       const struct sockaddr *addr);
/* The group with this MGID (as asked for, or as joined), under mut. */
struct cma_multicast *cma_mc_find_mgid(struct cma_id_private *id_priv,
				       const union ibv_gid *mgid);
/* A MULTICAST_JOIN arrived: verify, attach the QP and fill the event. */
int cma_process_join(struct cma_event *evt);
/* A MULTICAST_ERROR arrived for a group. */
void cma_process_join_error(struct cma_event *evt);
/* Leave every group of an id being destroyed. */
void cma_mcast_leave_all(struct cma_id_private *id_priv);

/* --- mcast_mreq.c (no state: unit-tested and fuzzed) ------------------- */

/* A membership option, parsed. */
struct cma_mreq {
	bool join; /* add (true) or drop membership */
	bool is_ib; /* RDMA_OPTION_IB_MCAST: ib holds the request */
	struct sockaddr_storage group; /* IP levels: the group */
	socklen_t group_len;
	struct in_addr ifaddr; /* IPv4: INADDR_ANY or the interface's address */
	int ifindex; /* 0: any interface */
	struct ib_mreq ib;
	uint16_t join_flags; /* RDMA_MC_JOIN_FLAG_* */
};

/* Parse a membership option's value.  0, or -1 with errno. */
int cma_mreq_parse(int level, int optname, const void *optval, size_t optlen,
		   struct cma_mreq *mreq);
/*
 * The group address the kernel is asked to join for an MGID, given the
 * id's address family and link layer.  0, or -1/EINVAL.
 */
int cma_mgid_to_sockaddr(const union ibv_gid *mgid, int id_family,
			 uint8_t link_layer, struct sockaddr_storage *ss,
			 socklen_t *len);

/* What the kernel told us about a joined group, plus the port's facts. */
struct cma_mc_join_info {
	const struct ibv_ah_attr *ah_attr;
	uint32_t qkey;
	uint16_t pkey; /* host order */
	uint8_t mtu; /* enum ibv_mtu, 0 if unknown */
	const union ibv_gid *port_gid;
	uint8_t join_state; /* IB_MC_JOIN_STATE_* */
};

void cma_mcrec_build(const struct cma_mc_join_info *info,
		     struct ib_sa_mcmember_rec *rec);
/* The requested components the record does not satisfy (0: all do). */
ib_sa_comp_mask cma_mcrec_mismatch(const struct ib_mreq *want,
				   const struct ib_sa_mcmember_rec *got);
/* An ibv_rate in Mb/s, 0 if unknown. */
unsigned int cma_rate_mbps(uint8_t rate);

/* --- sendto.c ---------------------------------------------------------- */

/* An ESTABLISHED event of a UD id: remember the peer for rdma_sendto. */
void cma_sendto_set_peer(struct cma_id_private *id_priv,
			 const struct rdma_ud_param *ud);
/* Destroy an AH cached for rdma_sendto (the QP or group is going away). */
void cma_ud_dest_drop_ah(struct cma_ud_dest *dest);
/* Destroy every cached AH of an id (its QP is being destroyed). */
void cma_sendto_release(struct cma_id_private *id_priv);

#endif /* CMA_H */
