/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * rsockets: state shared by the modules of src/rsocket/ (which file holds
 * which concern: the Layout table of docs/architecture.md).
 * From the core they use only src/cm/cma_rs.h.
 *
 * An rsocket's number is a kernel file descriptor it owns (its CM event
 * channel, or its UDP socket), so numbers never collide with the process's
 * other descriptors and rpoll can tell the two kinds apart.
 *
 * Ownership rules and lock order: docs/architecture.md.
 */
#ifndef RS_H
#define RS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include "cm/cma_rs.h"
#include "util/list.h"
#include "wire.h"
#include "opts.h"

/* Tunables, after /etc/rdma/rsocket/ and the environment (table.c). */
struct rs_defaults {
	uint16_t sqsize;
	uint16_t rqsize;
	uint16_t inline_size;
	uint16_t iomap_size;
	uint32_t mem; /* receive buffer bytes */
	uint32_t wmem; /* send buffer bytes */
	uint32_t polling_time; /* microseconds to spin before sleeping */
	uint32_t polling_max; /* adaptive polling's ceiling (spin.c) */
	uint32_t max_dgram_dest; /* destinations per datagram socket */
};
extern struct rs_defaults rs_def;

/* Destinations a datagram socket keeps by default (dgram_dest.c). */
#define RS_MAX_DGRAM_DEST_DEFAULT 4096
/* Adaptive polling's default ceiling, in microseconds (spin.c). */
#define RS_POLLING_MAX_DEFAULT 50
#define RS_QP_MIN_SIZE 16
#define RS_QP_MAX_SIZE 0xfffe
#define RS_QP_CTRL_SIZE 4 /* send queue entries kept for control messages */
#define RS_SNDLOWAT 2048
#define RS_OLAP_START_SIZE 2048
#define RS_MAX_TRANSFER 65536
#define RS_CONN_RETRIES 6
/*
 * How long an iWARP close waits for the peer to close too (shutdown.c),
 * unless SO_LINGER sets the time.
 */
#define RS_IWARP_LINGER_MS 2000
/*
 * How long rshutdown/rclose wait for posted sends to complete unless
 * SO_LINGER sets a time (stream.c); then the connection is torn down.
 */
#define RS_CLOSE_LINGER_MS 10000
#define RS_LINGER_MAX_S 3600 /* the longest SO_LINGER time taken */
#define RS_MAX_CTRL_MSG sizeof(struct rs_wire_sge)
/* Signal at least every this many sends (see stream.c). */
#define RS_SIGNAL_EVERY 16

/* Stream states: bits, so readable/writable can be dropped one at a time. */
enum rs_state {
	RS_INIT = 0,
	RS_BOUND = 0x0001,
	RS_LISTENING = 0x0002,
	RS_OPENING = 0x0004,
	RS_RESOLVING_ADDR = RS_OPENING | 0x0010,
	RS_RESOLVING_ROUTE = RS_OPENING | 0x0020,
	RS_CONNECTING = RS_OPENING | 0x0040,
	RS_ACCEPTING = RS_OPENING | 0x0080,
	/*
	 * Accepted on a shared listener, not yet answered: the first process
	 * to use it answers the request (handoff.c).
	 */
	RS_HANDED = RS_OPENING | 0x0008,
	RS_CONNECTED = 0x0100,
	RS_WRITABLE = 0x0200,
	RS_READABLE = 0x0400,
	RS_CONNECT_RDWR = RS_CONNECTED | RS_READABLE | RS_WRITABLE,
	RS_CONNECT_ERROR = 0x0800,
	RS_DISCONNECTED = 0x1000,
	RS_ERROR = 0x2000,
};

/* One received data message not yet fully read. */
struct rs_rmsg {
	uint32_t op;
	uint32_t len;
};

/* A buffer this side exposed with riomap. */
struct rs_iomap_mr {
	struct rs_iomap_mr *next;
	uint64_t offset;
	struct ibv_mr *mr;
	int index; /* slot in the peer's target iomap, -1: local only */
	bool sent; /* the peer has been told */
};

struct ds_qp;
struct ds_dest;
struct rs_handoff;

/* Adaptive polling (spin.c): what a waiter has learnt, in microseconds. */
struct rs_spin {
	uint32_t window_us; /* spin this long before sleeping */
	uint32_t wake_us; /* what a sleep costs, at least */
};

/* One wait in progress. */
struct rs_spin_wait {
	uint64_t start_us; /* from the first clock read */
	uint64_t sleep_us; /* when it went to sleep; 0: it has not */
	uint32_t window_us;
	unsigned int polls;
	/* Polls between clock reads, and before the first (spin.c). */
	unsigned int clock_gap;
	unsigned int clock_reads;
};

struct rsocket {
	int type; /* SOCK_STREAM or SOCK_DGRAM */
	int index; /* the number handed to the application */
	int domain;

	/*
	 * Life time (see the rules at the top): references held, the
	 * table's one included; closing is set once by rclose, and wake_fd
	 * (an eventfd, only while a thread sleeps) then stays readable so
	 * every sleep returns.
	 */
	int refs;
	bool closing;
	pthread_t closer; /* the thread running rclose, once closing */
	pthread_mutex_t wake_lock; /* wake_fd and sleepers; a leaf */
	int wake_fd; /* -1 while nobody sleeps */
	int sleepers; /* threads holding wake_fd */

	/*
	 * Lock order: lock, then map_lock; wait_lock is taken alone, or last
	 * under lock (a stream socket's detach, an rpoll taking its CQ
	 * event).  One sender and one receiver at a time own their side of
	 * a stream socket (rs_side_enter), flags under lock.
	 */
	pthread_mutex_t lock; /* state, counters and the CQ */
	unsigned int sides; /* RS_SIDE_* owned by a call now; lock */
	/*
	 * A stream socket: one thread at a time reads a CQ event; a datagram
	 * socket: one thread at a time sleeps on its epoll set.
	 */
	pthread_mutex_t wait_lock;
	pthread_mutex_t map_lock; /* iomap lists */
	/*
	 * CLOCK_MONOTONIC, with lock: look again.  Broadcast when a stream
	 * socket's completions were processed, its CQ sleeper woke, or an
	 * RDMA_QUIESCE call ended: the waits that did not sleep on the CQ
	 * channel themselves wait here (stream.c, quiesce.c).
	 */
	pthread_cond_t changed;
	unsigned int followers; /* waits on changed now; lock */
	/* rpoll calls asleep on it (poll.c), rung by any progress; lock */
	struct rs_poll_waiter *pollers;

	/*
	 * enum rs_state bits.  Written under rs->lock or by the one thread
	 * driving a connect/accept, read anywhere (rpoll looks without the
	 * lock): always through rs_state() / rs_set_state() /
	 * rs_clear_state(), which are atomic.
	 */
	int state;
	int err; /* SO_ERROR */
	int fd_flags; /* O_NONBLOCK as set by rfcntl */
	uint64_t so_opts, tcp_opts, ipv6_opts; /* boolean options set */
	unsigned int keepalive_time;
	struct rs_opt opt; /* more option values (opts.h) */
	struct rs_ka ka; /* the keepalive timer (keepalive.c) */
	/* Connected stream sockets: the CM watch (peerwatch.c, pw_mut). */
	struct cma_list_node pw_node;
	bool pw_watched; /* atomic reads outside pw_mut */
	bool cq_armed;
	int unacked_events;
	struct rs_spin spin; /* under lock */

	uint16_t sq_size, rq_size, sq_inline;
	uint32_t sbuf_size, rbuf_size;
	void *route; /* RDMA_ROUTE data to use instead of resolving */
	size_t route_len;
	int retries;

	union {
		struct { /* SOCK_STREAM */
			struct rdma_event_channel *channel;
			struct rdma_cm_id *cm_id;
			struct ibv_comp_channel *comp_channel;
			struct ibv_cq *cq;
			bool swap; /* the peer's byte order differs */
			/*
			 * iWARP has no immediate data: each message that would
			 * carry one is a 4-byte SEND instead (see stream.c).
			 */
			bool msg_send;
			/*
			 * iWARP passive side: nothing may be sent before the
			 * first message from the active side has arrived (the
			 * initiator speaks first; siw fails the connection
			 * when an FPDU follows its MPA reply too closely).
			 */
			bool await_peer;
			/*
			 * The peer has ended its side: its DISCONNECT arrived or
			 * its close flushed our receives.  Nothing more will come
			 * from it, so a close need not linger (shutdown.c).
			 */
			bool peer_closed;
			/*
			 * RDMA_QUIESCE (quiesce.c): the peer understands it,
			 * and where this connection's two ends are in it
			 * (enum rs_quiesce bits, under rs->lock).
			 */
			bool peer_can_quiesce;
			uint8_t quiesce;
			/* A thread is in rs_quiesce (under rs->lock). */
			bool quiesce_busy;
			/* A wait sleeps on the CQ channel (under rs->lock). */
			bool cq_sleeper;

			/* sending */
			uint8_t *sbuf; /* + RS_QP_CTRL_SIZE control slots */
			struct ibv_mr *smr;
			uint32_t sbuf_head; /* next byte to fill */
			uint32_t sbuf_bytes_avail;
			int sqe_avail;
			/*
			 * The next chunk size of the send ramp (stream.c):
			 * kept while sends follow sends, restarted small once
			 * the application has received data.  Atomic: the
			 * receiving thread restarts it.
			 */
			uint32_t send_olen;
			unsigned int ctrl_seqno, ctrl_max_seqno;
			uint16_t sseq_no, sseq_comp;
			int target_sge; /* current slot of target_sgl */
			void *target_buf; /* target_sgl, then target_iomap */
			struct ibv_mr *target_mr;
			volatile struct rs_wire_sge *target_sgl;
			volatile struct rs_wire_iomap *target_iomap;
			uint16_t
				target_iomap_size; /* slots the peer may fill */

			/* receiving */
			uint8_t *rbuf;
			struct ibv_mr *rmr;
			uint32_t rbuf_offset; /* next byte to read */
			uint32_t rbuf_free_offset; /* next half to hand out */
			uint32_t
				rbuf_bytes_avail; /* free, not yet handed out */
			struct rs_rmsg *rmsg;
			int rmsg_head, rmsg_tail;
			uint16_t rseq_no, rseq_comp;
			int recv_deficit; /* receives to repost */
			uint32_t recv_slot; /* msg_send: next message slot */

			/*
			 * posted sends, retired in order by completions: a
			 * ring of rs_sent_slots() immediate values
			 */
			uint32_t *sent;
			uint32_t sent_head, sent_tail;
			int unsignaled;

			/* the peer's buffers */
			struct rs_wire_sge remote_sgl;
			int remote_sge;
			struct rs_wire_sge remote_iomap;

			struct rs_iomap_mr
				*iomap_slots; /* remote_iomap.length */
			struct rs_iomap_mr
				*iomap_list; /* local-only mappings */
			bool iomap_pending;

			/*
			 * A listener's connections accepted by a connect of
			 * this process that waited for it (selfconn.c), and
			 * the threads inside raccept; under selfconn.c's lock.
			 */
			struct rsocket *listen_next;
			bool listen_added;
			/*
			 * Shared with forked children (handoff.c): set once,
			 * by the first fork after rlisten or the first
			 * SO_REUSEPORT socket that joins it (atomic).
			 */
			struct rs_handoff *handoff;
			/*
			 * SO_REUSEPORT: a socket bound to the address of a
			 * listener of this process holds a reference to it and
			 * accepts from its queue (handoff.c); the listener
			 * counts such members (atomic).
			 */
			struct rsocket *reuse_of;
			int reuse_members;
			/* RS_HANDED: the request it answers when first used. */
			struct rs_handed *handed;
			bool own_index; /* its number is a descriptor of its own */
			int *acceptq;
			uint32_t acceptq_n, acceptq_cap;
			uint32_t accept_waiters;
		};
		struct { /* SOCK_DGRAM (dgram.h) */
			int udp_sock;
			int epfd; /* the UDP socket and every QP's CQ channel */
			/*
			 * Blocking calls (dgram_io.c): the eventfd that wakes
			 * the one asleep when another call's progress changed
			 * what it waits for (only while ds_sleepers > 0, the
			 * calls between their last look and their wake-up);
			 * ds_gen counts such changes (written under rs->lock,
			 * read atomically under wait_lock).
			 */
			int ds_bell;
			bool ds_bell_rung;
			uint32_t ds_gen;
			uint32_t ds_sleepers;
			bool ds_bound;
			bool ds_shut_rd, ds_shut_wr;
			struct ds_qp *qp_list;
			void *dest_map; /* tsearch tree of struct ds_dest */
			struct cma_list dest_lru;
			/* of which in doubt of their QP number (dgram_dest.c) */
			uint32_t dest_doubts;
			struct ds_dest *conn_dest; /* set by rconnect */
			struct ds_dest **dsslot_dest; /* per send slot */
			uint8_t *dsbuf; /* sq_size send slots of DS_MSG_SIZE */
			uint32_t *dsfree; /* free send slots (a stack) */
			uint32_t dsfree_cnt;
			struct ds_rmsg *dmsg; /* received, unread (ring) */
			uint32_t dmsg_head, dmsg_cnt, dmsg_max;
			uint32_t dmsg_udp; /* of which copies from UDP */
			uint64_t ds_dropped; /* malformed or no room */
		};
	};
};

static inline int rs_state(const struct rsocket *rs)
{
	return __atomic_load_n(&rs->state, __ATOMIC_RELAXED);
}

static inline void rs_set_state(struct rsocket *rs, int state)
{
	__atomic_store_n(&rs->state, state, __ATOMIC_RELAXED);
}

static inline void rs_clear_state(struct rsocket *rs, int bits)
{
	__atomic_and_fetch(&rs->state, ~bits, __ATOMIC_RELAXED);
}

/* --- table.c --------------------------------------------------------------- */

void rs_configure(void);
/* A new socket with one reference (the caller's), in no table yet. */
struct rsocket *rs_alloc(const struct rsocket *inherit, int type);
/* Publish @rs as number @index: the caller's reference becomes the table's. */
int rs_insert(struct rsocket *rs, int index);
/*
 * Take @rs out of the table (if it is still there) and drop the table's
 * reference.  False if another thread took it out first.
 */
bool rs_unpublish(struct rsocket *rs);
/*
 * The socket numbered @socket with a reference for the caller, or NULL
 * with errno EBADF.  Every rs_get is paired with an rs_put.
 */
struct rsocket *rs_get(int socket);
void rs_ref(struct rsocket *rs);
/* table.c: what rs_put does with the last reference. */
void rs_put_last(struct rsocket *rs);
/*
 * Drop a reference; the last one frees the socket (and its number),
 * errno kept.  Inline: every call ends with one.
 */
static inline void rs_put(struct rsocket *rs)
{
	if (rs && __atomic_sub_fetch(&rs->refs, 1, __ATOMIC_ACQ_REL) == 0)
		rs_put_last(rs);
}
/* rclose: unpublish, mark closing, wake every sleeper.  -1/EBADF if raced. */
int rs_close_begin(struct rsocket *rs);

/* Has another thread closed @rs?  Its sleepers then give up (EBADF). */
static inline bool rs_closed_under(const struct rsocket *rs)
{
	return __atomic_load_n(&rs->closing, __ATOMIC_ACQUIRE) &&
	       !pthread_equal(rs->closer, pthread_self());
}

/* A sleep without a wake fd (none could be made) looks this often (ms). */
#define RS_WAKE_SLICE_MS 100

/*
 * The wake fd for one sleep, made if none: poll it beside the sleep's own
 * fd, then rs_wake_release.  -1 (no descriptor left): none to release,
 * sleep in slices and check rs_closed_under().
 */
int rs_wake_hold(struct rsocket *rs);
void rs_wake_release(struct rsocket *rs);
/* Nobody sleeps on @rs and it holds no wake fd (the state at rest). */
bool rs_wake_idle(struct rsocket *rs);

/*
 * Sleep in poll() until @fd is readable or the socket is closed; @fd < 0:
 * only the latter.  1: @fd readable, 0: timed out, -1/EBADF: closed by
 * another thread, -1/other: poll failed (EINTR is retried).
 */
int rs_sleep_fd_or_close(struct rsocket *rs, int fd, short events, int timeout);
/* The same on two fds (@fd2 < 0: unused; POLLIN); 1: either is ready. */
int rs_sleep_fds_or_close(struct rsocket *rs, int fd, int fd2, short events,
			  int timeout);

static inline bool rs_nonblocking(const struct rsocket *rs, int flags)
{
	return (rs->fd_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

/* --- socket.c ------------------------------------------------------------ */

/* rgetpeername on a socket the caller holds. */
int rs_copy_peer(struct rsocket *rs, struct sockaddr *addr, socklen_t *addrlen);

/* --- conn.c -------------------------------------------------------------- */

int rs_stream_init(struct rsocket *rs, int domain);
int rs_stream_bind(struct rsocket *rs, const struct sockaddr *addr,
		   socklen_t len);
int rs_stream_listen(struct rsocket *rs, int backlog);
int rs_stream_accept(struct rsocket *rs, struct sockaddr *addr,
		     socklen_t *addrlen);
int rs_stream_connect(struct rsocket *rs, const struct sockaddr *addr,
		      socklen_t len);
/* Drive a connect or accept in progress; EINPROGRESS if it must wait. */
int rs_do_connect(struct rsocket *rs, bool nonblock);
/* Is a CM event waiting on the socket's channel? */
bool rs_cm_event_ready(struct rsocket *rs);
void rs_stream_free(struct rsocket *rs);
/*
 * peerwatch.c: from its connection on, the CM's word that the peer ended
 * (a peer that sent no DISCONNECT message) ends the socket's reads;
 * unwatch before the channel and the QP go.
 */
void rs_peer_watch(struct rsocket *rs);
void rs_peer_unwatch(struct rsocket *rs);
/*
 * A CM call on @rs's id failed with EACCES: the process changed its
 * credentials since the id's file was opened (the kernel refuses it).
 * The id follows them onto a file opened now (creds.c), the watch with
 * it; the call may then be made again.  0, or -1 with errno EACCES.
 */
int rs_follow_creds(struct rsocket *rs);
/* Take the next connection request off listener @rs: the new socket. */
int rs_accept_one(struct rsocket *rs, bool nonblock);

/* A private, non-blocking CM channel, as every stream rsocket has. */
struct rdma_event_channel *rs_cm_channel(void);
/*
 * Answer the request whose id (@id, already on its own channel @ch) a
 * listener took: the new socket's number, or -1/errno (the request is
 * refused and everything freed).
 */
int rs_accept_id(struct rsocket *l, struct rdma_cm_id *id,
		 struct rdma_event_channel *ch,
		 const struct rs_conn_params *peer);
/* The same for a socket that exists (RS_HANDED's first use): 0 or -1. */
int rs_answer(struct rsocket *rs, struct rdma_cm_id *id,
	      struct rdma_event_channel *ch, const struct rs_conn_params *peer);

/* --- handoff.c: listeners shared by fork() ---------------------------------- */

/* rlisten: the listener is shared with the children of the next fork. */
void rs_handoff_listen(struct rsocket *l);
/* Whether @l is shared (its accepts then go through handoff.c). */
static inline bool rs_handoff_shared(struct rsocket *l)
{
	return __atomic_load_n(&l->handoff, __ATOMIC_ACQUIRE) != NULL;
}
/*
 * rbind with SO_REUSEPORT: joins @rs to a listener of this process on the
 * same address, shared from now on.  False if there is none.
 */
bool rs_handoff_join(struct rsocket *rs, const struct sockaddr *addr);
/* The listener whose requests @rs accepts: its own, or the one it joined. */
static inline struct rsocket *rs_listen_target(struct rsocket *rs)
{
	return rs->reuse_of ? rs->reuse_of : rs;
}
/*
 * An RS_HANDED socket's first use (any process holding it): answers its
 * request here.  0, or -1/errno (ECONNABORTED: another process did, or
 * the peer gave up).
 */
int rs_handoff_claim(struct rsocket *rs);
/* Its peer's and its own address, kept from the request. */
const struct sockaddr *rs_handed_peer(const struct rsocket *rs);
const struct sockaddr *rs_handed_local(const struct rsocket *rs);
/* raccept on a shared listener: the new socket's number, or -1/errno. */
int rs_handoff_accept(struct rsocket *l, bool nonblock);
/* rpoll: is an accept ready; and the fd to sleep on until it may be. */
bool rs_handoff_ready(struct rsocket *l);
int rs_handoff_sleep_fd(struct rsocket *l);
/* rclose: the listener is never shared again nor relayed from here. */
void rs_handoff_close(struct rsocket *l);
/*
 * On free: gives up this process's part of a shared listener (its kernel
 * id and channels included).  False if @l was never shared.
 */
bool rs_handoff_free(struct rsocket *l);

/* --- selfconn.c: one thread connecting to its own listener --------------- */

void rs_listener_add(struct rsocket *rs);
/* Forgets a listener and closes what was accepted for it (on free). */
void rs_listener_remove(struct rsocket *rs);
/*
 * A blocking connect's wait for its next CM event (rs_sleep_fd_or_close's
 * result): meanwhile it accepts for its own process's listener.
 */
int rs_self_wait(struct rsocket *rs);
/* raccept: a socket already accepted for @l, or -1 (then it waits). */
int rs_accept_enter(struct rsocket *l);
/* raccept leaves after rs_accept_enter returned -1. */
void rs_accept_leave(struct rsocket *l);
/* Whether a socket accepted for @l waits (rpoll's POLLIN). */
bool rs_acceptq_ready(struct rsocket *l);

/* --- stream.c ------------------------------------------------------------ */

int rs_create_ep(struct rsocket *rs);
void rs_destroy_ep(struct rsocket *rs);
void rs_get_conn_params(struct rsocket *rs, struct rs_conn_params *p);
void rs_set_conn_params(struct rsocket *rs, const struct rs_conn_params *p);

ssize_t rs_stream_recv(struct rsocket *rs, void *buf, size_t len, int flags);
ssize_t rs_stream_recvv(struct rsocket *rs, const struct iovec *iov, int iovcnt,
			int flags);
ssize_t rs_stream_sendv(struct rsocket *rs, const struct iovec *iov, int iovcnt,
			int flags);
int rs_stream_shutdown(struct rsocket *rs, int how);
/* Whether every posted send completed (or the connection is gone). */
bool rs_all_sends_done(struct rsocket *rs);
/* A control slot is free (or the connection is gone). */
bool rs_can_send_ctrl(struct rsocket *rs);

/* --- quiesce.c: ending the RDMA data path with the peer's agreement ------ */

enum rs_quiesce {
	RS_QSC_SENT = 0x01, /* our QUIESCE went out: no more data from us */
	RS_QSC_HEARD = 0x02, /* the peer's came: no more data from it */
	RS_QSC_DETACHED = 0x04, /* no RDMA resources left, only unread data */
};

/*
 * Both QUIESCE messages crossed: the RDMA path ended by agreement, and
 * what fails on the QP afterwards (the peer freed it) is no error.
 */
static inline bool rs_quiesce_over(const struct rsocket *rs)
{
	return (rs->quiesce & (RS_QSC_SENT | RS_QSC_HEARD)) ==
	       (RS_QSC_SENT | RS_QSC_HEARD);
}

/* rsetsockopt(RDMA_QUIESCE): waits @timeout_ms at most (< 0: no bound). */
int rs_quiesce(struct rsocket *rs, int timeout_ms);
/* rgetsockopt(RDMA_QUIESCE): which directions' RDMA bytes have ended. */
int rs_quiesced(struct rsocket *rs);
/* The peer's QUIESCE came (rs_poll_cq): no more reads or writes over RDMA. */
void rs_quiesce_heard(struct rsocket *rs);
/* Post our QUIESCE in answer to the peer's once a control slot is free. */
void rs_quiesce_answer(struct rsocket *rs);
/*
 * rshutdown or rclose of a quiesced socket: our QUIESCE if still due, its
 * completion (until @deadline_ms), then RS_DISCONNECTED; no DISCONNECT.
 */
void rs_quiesce_close(struct rsocket *rs, uint64_t deadline_ms);

/*
 * The ring of posted sends has one slot more than the send queue: with
 * every request outstanding, a full ring must not look empty.
 */
static inline uint32_t rs_sent_slots(const struct rsocket *rs)
{
	return (uint32_t)rs->sq_size + 1;
}

/*
 * The slot after @i in a ring of @n: every message steps a few rings, and
 * a division by a size known only at run time is the dearest instruction
 * on its path (an emulator's helper call, tens of cycles on hardware).
 */
static inline uint32_t rs_ring_next(uint32_t i, uint32_t n)
{
	return i + 1 == n ? 0 : i + 1;
}

/*
 * The peer was heard from (a receive, or a probe's acknowledgement): the
 * time, only for a socket the keepalive timer looks at.  Inline: every
 * completion says so.
 */
static inline void rs_ka_heard(struct rsocket *rs)
{
	if (__atomic_load_n(&rs->ka.listed, __ATOMIC_RELAXED))
		rs_ka_heard_now(rs);
}

/* Poll the CQ and process what it holds; the caller holds rs->lock. */
int rs_poll_cq(struct rsocket *rs);
/* Post again the receives completions consumed; under rs->lock. */
void rs_flush_recvs(struct rsocket *rs);
/*
 * Receives are reposted a batch at a time, where a call has nothing else
 * to do (a wait about to spin, a send done), off the path from a
 * message's completion to the application's answer; all of them before a
 * sleep and before credits go out (every credit the peer holds is backed
 * by a posted receive, so the ones held back never leave its message
 * without one).
 */
#define RS_REPOST_BATCH 8
static inline void rs_repost_batch(struct rsocket *rs)
{
	if (rs->recv_deficit >= RS_REPOST_BATCH)
		rs_flush_recvs(rs);
}
/* Send credits if due; the caller holds rs->lock. */
void rs_update_credits(struct rsocket *rs);

/* Room for one more message (inline: asked before every send). */
static inline bool rs_can_send(const struct rsocket *rs)
{
	int need = rs->msg_send ? 2 : 1; /* a write and its SEND */

	return !rs->await_peer && rs->sqe_avail >= need &&
	       rs->sbuf_bytes_avail >= RS_SNDLOWAT &&
	       rs->sseq_no != rs->sseq_comp &&
	       rs->target_sgl[rs->target_sge].length != 0;
}

static inline bool rs_have_rdata(const struct rsocket *rs)
{
	return rs->rmsg_head != rs->rmsg_tail;
}
/* Consume a CQ event that poll() reported, unless a wait sleeps on it. */
void rs_consume_cq_event(struct rsocket *rs);
/*
 * Wait on rs->changed once (rs->lock held): 0 when woken (look again),
 * -1/ETIMEDOUT once @deadline_ms (CLOCK_MONOTONIC; 0: none) has passed,
 * -1/EBADF when another thread closed the socket.
 */
int rs_wait_changed(struct rsocket *rs, uint64_t deadline_ms);

/*
 * A stream call owns its side from its start to its end, also while it
 * waits with rs->lock let go, so that one sender's bytes (or one reader's)
 * never interleave with another's; the detach (quiesce.c) owns both.
 * Flags under rs->lock, where mutexes of their own cost every call a
 * second lock.  rs->lock held; entering waits (let go) for the owner.
 */
#define RS_SIDE_SEND 1u
#define RS_SIDE_RECV 2u
void rs_side_wait(struct rsocket *rs, unsigned int sides);

static inline void rs_side_enter(struct rsocket *rs, unsigned int sides)
{
	if (rs->sides & sides)
		rs_side_wait(rs, sides);
	rs->sides |= sides;
}

static inline void rs_side_leave(struct rsocket *rs, unsigned int sides)
{
	rs->sides &= ~sides;
	if (rs->followers)
		pthread_cond_broadcast(&rs->changed);
}
/*
 * The connection is over (its state says how): move the QP to the error
 * state, whose flushed receives wake every thread asleep on the socket.
 */
void rs_flush_qp(struct rsocket *rs);
/* Arm the CQ for rpoll; returns true if something is ready already. */
bool rs_arm_cq(struct rsocket *rs);
bool rs_conn_can_send(struct rsocket *rs);
/*
 * In a send loop, rs->lock held: 1 when there is room to send now, 0 when
 * woken without room (look again), -1/errno (EAGAIN, EPIPE, ...).  The
 * answer without a wait is inline, the rest (stream.c) is not.
 */
int rs_wait_for_room(struct rsocket *rs, bool nonblock);
static inline int rs_wait_sendable(struct rsocket *rs, bool nonblock)
{
	if ((rs_state(rs) & RS_WRITABLE) && rs_can_send(rs))
		return 1;
	return rs_wait_for_room(rs, nonblock);
}
/*
 * The size of the next chunk of a @left-byte send: starts small and
 * doubles in *@olen (so the first bytes leave early), capped by the send
 * buffer space.  Stream sends keep *@olen across calls (rs->send_olen).
 */
uint32_t rs_next_xfer(struct rsocket *rs, uint32_t *olen, size_t left);
bool rs_conn_have_rdata(struct rsocket *rs);
/* Gather @len bytes from an iovec cursor, advancing it. */
void rs_gather(void *dst, const struct iovec **iov, size_t *off, size_t len);
/*
 * Post @len bytes from an iovec cursor as one RDMA write (inline or via the
 * send ring), charging a queue entry and @len ring bytes.  Under rs->lock.
 */
int rs_post_payload(struct rsocket *rs, const struct iovec **iov, size_t *off,
		    uint32_t len, uint32_t msg, bool with_imm, uint64_t addr,
		    uint32_t rkey);
/* Wait, spinning then sleeping, until @ready; rs->lock held. */
int rs_wait_locked(struct rsocket *rs, bool nonblock,
		   bool (*ready)(struct rsocket *));
/*
 * The same with a deadline on the monotonic clock in ms (0: none; past
 * it, ETIMEDOUT).  Both return with rs->lock held.
 */
int rs_wait_until(struct rsocket *rs, bool nonblock,
		  bool (*ready)(struct rsocket *), uint64_t deadline_ms);
/* Arm the CQ once: true if completions came meanwhile (poll again). */
bool rs_arm_cq_once(struct rsocket *rs);
/* A control message slot is free; post one (rs->lock held). */
bool rs_ctrl_avail(struct rsocket *rs);
int rs_post_ctrl(struct rsocket *rs, uint32_t msg);

/* --- iomap.c ------------------------------------------------------------- */

int rs_send_iomaps(struct rsocket *rs, int flags);
void rs_free_iomaps(struct rsocket *rs);

/* --- dgram.c ------------------------------------------------------------- */

/* A received datagram: in a QP's receive slot, or copied from UDP. */
struct ds_rmsg {
	struct ds_qp *qp; /* NULL: @copy holds the payload */
	uint8_t *copy;
	uint32_t slot;
	uint32_t offset; /* payload offset in the slot */
	uint32_t length; /* payload bytes */
	union rs_sockaddr src; /* the sender's rsocket address */
};

int ds_init(struct rsocket *rs, int domain);
void ds_free(struct rsocket *rs);
int ds_bind(struct rsocket *rs, const struct sockaddr *addr, socklen_t len);
int ds_connect(struct rsocket *rs, const struct sockaddr *addr, socklen_t len);
ssize_t ds_recvfrom(struct rsocket *rs, void *buf, size_t len, int flags,
		    struct sockaddr *src, socklen_t *srclen);
/* Receive one datagram scattered over @msg's iovec. */
ssize_t ds_recvmsg(struct rsocket *rs, struct msghdr *msg, int flags);
ssize_t ds_sendto(struct rsocket *rs, const void *buf, size_t len, int flags,
		  const struct sockaddr *dst, socklen_t dstlen);
int ds_shutdown(struct rsocket *rs, int how);
/* rpoll support: readiness, the fd to sleep on, event consumption. */
short ds_poll_events(struct rsocket *rs, short events);
int ds_wait_fd(struct rsocket *rs);
void ds_consume_events(struct rsocket *rs);
/*
 * An rpoll about to sleep on rsockets: its own eventfd (@fd), rung by
 * whichever call's progress changes one of them (processed completions,
 * a datagram queued), since that call may take off the socket what the
 * sleep set would have woken it for (the CQ event, a UDP datagram).  One
 * waiter per socket, on the socket's list under rs->lock, all pointing at
 * the call's bell.  The sleeper drains the fd, then clears @rung
 * (atomic), then looks.
 */
struct rs_bell {
	int fd;
	bool rung;
	pthread_t owner; /* its own looks need no ring */
};
struct rs_poll_waiter {
	struct rs_bell *bell;
	struct rs_poll_waiter *next;
};
void rs_poll_waiter_add(struct rsocket *rs, struct rs_poll_waiter *w);
void rs_poll_waiter_remove(struct rsocket *rs, struct rs_poll_waiter *w);
/* Progress on @rs: ring every other thread's rpoll asleep on it; lock. */
void rs_ring_pollers(struct rsocket *rs);

/* --- spin.c ------------------------------------------------------------- */

/* The monotonic clock, in microseconds and milliseconds. */
uint64_t rs_now_us(void);
static inline uint64_t rs_now_ms(void)
{
	return rs_now_us() / 1000;
}

/* Measure what a clock read costs here (rs_configure, once). */
void rs_spin_configure(void);
void rs_spin_init(struct rs_spin *spin);
/* Start a wait: take the window (no clock read: see spin.c). */
void rs_spin_begin(const struct rs_spin *spin, struct rs_spin_wait *w);
/* After a poll that found nothing: spin on (true) or sleep (false)? */
bool rs_spin_more(struct rs_spin_wait *w);
/* The waiter is about to sleep (the CQ is armed). */
void rs_spin_sleeping(struct rs_spin_wait *w);
/* The wait is over: adapt the window to how long it took. */
void rs_spin_end(struct rs_spin *spin, const struct rs_spin_wait *w);
/*
 * The rules, pure for the unit tests.  The next window after a wait of
 * @wait_us (wake-up excluded) that did or did not sleep, within [floor,
 * ceiling]; the wake-up cost learnt from a sleep of @sleep_us; the
 * ceiling for a given polling_max and wake-up cost.
 */
uint32_t rs_spin_adapt(uint32_t window, uint32_t floor, uint32_t ceiling,
		       uint64_t wait_us, bool slept);
uint32_t rs_spin_wake_estimate(uint32_t wake_us, uint64_t sleep_us);
uint32_t rs_spin_ceiling(uint32_t polling_max, uint32_t wake_us);
/* Polls between a spin's clock reads, for a read costing @read_ns. */
unsigned int rs_spin_clock_gap_for(uint64_t read_ns);

#endif /* RS_H */
