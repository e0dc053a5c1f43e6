/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Peer-to-peer mode's process-wide table, shared by p2p.c (the table,
 * settings, headers), p2p_connect.c (the connecting side and its events),
 * p2p_resolve.c (its route left for later), p2p_peers.c (what is known of
 * each peer) and p2p_request.c (the listening side).  Everything here is
 * under p2p_lock unless said otherwise.  Internal to those files.
 */
#ifndef CMA_P2P_TABLE_H
#define CMA_P2P_TABLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cm/cma.h"
#include "util/htable.h"
#include "util/list.h"
#include "p2p.h"
#include "p2p_wire.h"

/*
 * Threads of this process at work on a conn or a listener without
 * p2p_lock (a kernel command, an adoption): rdma_destroy_id waits for
 * them.  A forked child has none of its parent's threads, so a count
 * taken before the fork counts for nothing there (p2p.c).
 */
struct cma_p2p_busy {
	unsigned int count;
	unsigned int forks; /* the process's forks when it was taken */
};

/* How often held requests are checked for a peer that gave up. */
#define CMA_P2P_PROBE_MS 2000
#define CMA_P2P_DEFAULT_HOLD_MS 10000
/*
 * A connect's waits for its peer grow by one step per this many of the
 * process's p2p connects waiting, up to so many steps (p2p_connect.c).
 */
#define CMA_P2P_MESH_STEP 8
#define CMA_P2P_MESH_MAX_STEPS 8
/* The IB CM's REJ reason when nobody listens on the service ID. */
#define CMA_IB_REJ_INVALID_SERVICE_ID 8
/*
 * Its reason when a REQ comes from a QP it still holds another REQ or a
 * connection from (p2p_connect.c: cma_p2p_refused_for_now).
 */
#define CMA_IB_REJ_STALE_CONN 10
/* Its reason for a consumer's refusal, and the RDMA CM's own (no data). */
#define CMA_IB_REJ_CONSUMER_DEFINED 28
#define CMA_P2P_KEY_STRLEN 128
/*
 * Held requests a remote peer can make us keep (each holds a kernel id):
 * at most this many per listener (RDMA_CM_P2P_MAX_HELD) and four times
 * that per process; past either, the oldest is refused first.
 */
#define CMA_P2P_DEFAULT_MAX_HELD 1024
/* Peers known only from what they sent: at most this many (p2p_peers.c). */
#define CMA_P2P_MAX_STRANGERS 4096
#define CMA_P2P_MAX_RETIRED 4 /* replaced kernel ids awaiting DESTROY_ID */

struct cma_p2p_listener {
	struct cma_p2p_listener *next;
	struct cma_id_private *id_priv;
	enum rdma_port_space ps;
	sa_family_t family;
	bool wildcard;
	uint8_t addr[16];
	uint16_t port;
	struct cma_timer timer; /* held requests' deadlines and probes */
	/* Its held requests, oldest first: the first one's deadline is due first. */
	struct cma_list held;
	struct cma_p2p_busy busy; /* adoptions from its fd (p2p_lock off) */
	/*
	 * A companion listener hears NOTICEs where its requests come to
	 * (p2p_notice.c): made, or tried, for the address of its first
	 * held or adopted request.
	 */
	bool companion;
};

struct cma_p2p_held {
	struct cma_list_node lnode; /* in the listener's held list */
	struct cma_hnode hnode; /* in the held requests by key */
	struct cma_p2p_listener *lis;
	uint32_t handle; /* the request's kernel id, on the listener's fd */
	struct cma_p2p_key key;
	struct cma_p2p_hdr hdr;
	uint64_t deadline_ns; /* 0: until the peer gives up */
	uint64_t seq; /* the order requests were held in: oldest first */
	struct rdma_ucm_event_resp resp; /* the CONNECT_REQUEST as read */
	/* Its kernel id's QUERY_ROUTE, taken to learn its ends (IP only). */
	struct rdma_ucm_query_route_resp route;
	bool has_route;
};

/*
 * An id's peer-to-peer state: what the core's cma_id_private points to
 * (its p2p), made by the first p2p option, listen or connect on the id
 * (cma_p2p_id_make) and freed with the id (cma_p2p_free).  The pointer
 * is published with release order and read with acquire order: the
 * service thread reads it for the id's events.
 */
struct cma_p2p_id {
	struct cma_p2p_conn *conn; /* p2p connect, or id of a p2p request */
	uint64_t tag; /* RDMA_OPTION_ID_P2P_TAG */
	bool tag_set;
	int8_t listen_opt; /* RDMA_OPTION_ID_PEER2PEER; -1: not set */
	bool listening; /* a p2p listener record exists (p2p.c) */
	/*
	 * The last rdma_resolve_addr took the device, port and GID from the
	 * id's p2p listener: ADDR_RESOLVED needs no query (p2p_resolve.c).
	 * Set before the kernel command, read by whoever reads the event.
	 */
	bool addr_preset;
};

static inline struct cma_p2p_id *
cma_p2p_id_of(const struct cma_id_private *id_priv)
{
	return __atomic_load_n(&id_priv->p2p, __ATOMIC_ACQUIRE);
}

/* The id's p2p connect (or p2p request) state, or NULL. */
static inline struct cma_p2p_conn *
cma_p2p_conn_of(const struct cma_id_private *id_priv)
{
	struct cma_p2p_id *p = cma_p2p_id_of(id_priv);

	return p ? p->conn : NULL;
}

/* RDMA_OPTION_ID_PEER2PEER as set on the id, -1 if it was not. */
static inline int cma_p2p_listen_opt(const struct cma_id_private *id_priv)
{
	struct cma_p2p_id *p = cma_p2p_id_of(id_priv);

	return p ? p->listen_opt : -1;
}

/* The waits a p2p connect's timer bounds (cma_p2p_bound_ms). */
enum cma_p2p_bound {
	CMA_P2P_BOUND_NONE, /* chores, iWARP retries: no wait of the peer's */
	CMA_P2P_BOUND_ANSWER, /* the answer to our REQ, or the peer's REQ */
	CMA_P2P_BOUND_REFUSED, /* our REQ was refused: sent again until then */
};

struct cma_p2p_conn {
	struct cma_list_node node; /* in the list of registered conns */
	struct cma_hnode hnode; /* in the conns by key, while registered */
	uint64_t seq; /* registration order: the oldest waiting pairs first */
	struct cma_id_private *id_priv;
	enum cma_p2p_state state;
	/*
	 * In the table, matchable: 1 + the forks of the process that
	 * registered it (cma_p2p_conn_registered), 0 if none did.
	 */
	unsigned int registered;
	bool adopted; /* ESTABLISHED carries the adopted request's data */
	bool from_request; /* the id of a p2p request given to the app */
	bool reply_p2p; /* the reply carried our header, or we sent one */
	struct cma_p2p_key key;
	struct cma_p2p_hdr req_hdr; /* from_request: the request's header */
	struct rdma_ucm_conn_param kparam; /* rdma_connect's, no header */
	struct rdma_ucm_ece ece;
	uint8_t peer_len;
	uint8_t peer_data[RDMA_MAX_PRIVATE_DATA];
	/*
	 * PENDING: how long our REQ may go unanswered; WAIT_PEER: how long
	 * the peer's REQ may take.  Armed only in those two states, so that
	 * it never wakes the channel for nothing.
	 */
	struct cma_timer timer;
	int wait_status; /* the last refusal's status, reported at the bound */
	/*
	 * Since when our REQ is refused for now (RESEND, see
	 * cma_p2p_wait_resend; on iWARP our connect, refused at once while
	 * the peer does not listen); 0 if it never was in this connect.
	 */
	uint64_t refused_ns;
	/*
	 * The number our REQ out carries (p2p_wire.h), while the peer may
	 * take it for current: set as it goes out, 0 once refused.
	 */
	uint32_t req_number;
	uint8_t refusals; /* refusals for now so far */
	/*
	 * The window of REQs out (p2p_window.c): the conn holds a place in
	 * it, or waits for one (RESEND, in the queue), only while it is
	 * registered in this process; its first REQ has not gone out yet
	 * (it goes on the id's own kernel id).
	 */
	bool slot, queued, unsent;
	struct cma_list_node qnode; /* in the window's queue */
	uint64_t queued_ns; /* since when it queues: its bound stands still */
	bool gave_up; /* PENDING timed out: the id's kernel events are noise */
	/*
	 * The request claimed for adoption (ADOPTING, then CONNECTED when
	 * adopted): its header and QP, which a NOTICE may name dead until
	 * the connection is established (p2p_stale.c).  Under p2p_lock;
	 * @established (adoptions only) is set on the event path, under the
	 * id's qp_lock too.
	 */
	struct cma_p2p_hdr claimed_hdr;
	uint32_t claimed_qpn;
	bool established;
	/*
	 * The lower end: our REQ was refused as stale (IB CM reason 10) and
	 * the NOTICE this serial names is out; the REQ goes out again once
	 * it ends (p2p_connect.c).  0: none.  @noticed: one was heard in
	 * this connect already.
	 */
	uint64_t notice_serial;
	bool noticed;
	/*
	 * The number of the last REQ this connect sent: a connect that ends
	 * unanswered names it and every REQ before it dead in a NOTICE, so
	 * that no late copy of one is left adopted or held at the peer.
	 */
	uint32_t last_number;
	/*
	 * An adoption moved the QP to RTS for a REQ, with @bound_psns (the
	 * REQ's QP is the QP's own RTR destination: ibv_query_qp says).
	 * When that REQ turns out dead (its ACCEPT refused), the QP stays
	 * so: only RESET would undo it, which drops the receives the
	 * application posted.  A later REQ from the same QP is answered
	 * without moving it again, the REP dictating the PSNs; one from
	 * another QP finds it checked and reset (cma_p2p_qp_ready).
	 * Only the adopting thread (the id's qp_lock) reads and writes these.
	 */
	bool qp_bound;
	struct cma_qp_psns bound_psns;
	/*
	 * Chores: kernel work for the id that must not run under p2p_lock or
	 * without the id's qp_lock (cma_p2p_do_chores): replaced kernel ids
	 * to destroy (destroying a connecting iWARP id waits for the
	 * network) and a QP to move to ERROR.  Done by the conn's timer, by
	 * the next rdma_connect, or (the ids) by rdma_destroy_id; until then
	 * the ids are ours, and their events are dropped as stale.
	 */
	uint32_t retired[CMA_P2P_MAX_RETIRED];
	unsigned int nretired;
	bool qp_err_due;
	/*
	 * Kernel work on the id under way without p2p_lock (an adoption,
	 * dropping a replaced kernel id): rdma_destroy_id waits for 0.
	 */
	struct cma_p2p_busy busy;
	/* The peer restarted: the timer, under the id's qp_lock, acts on it. */
	bool peer_gone;
	/*
	 * Which patience the conn's timer measures, and since when: a wait
	 * that runs out is reckoned again with the process's connects waiting
	 * now (p2p_connect.c, cma_p2p_mesh_steps).  An adoption that fails
	 * resumes the same wait: it never restarts it.
	 */
	enum cma_p2p_bound bound;
	uint64_t bound_ns;
	/*
	 * The id's route (p2p_resolve.c): resolved by the kernel as usual,
	 * or left until a REQ of ours must go out (the id asked for p2p
	 * before resolving), and then how far its resolution has come.
	 */
	enum cma_p2p_route route;
	/*
	 * The route was left for later and the id took its device from its
	 * listener: its kernel id is not bound, a late resolution names the
	 * source address.
	 */
	bool kernel_unbound;
	uint32_t addr_ms, route_ms; /* the application's resolve timeouts */
};

/*
 * A held or arriving request claimed for @conn under p2p_lock
 * (cma_p2p_adopt_claim), answered without it (cma_p2p_adopt_finish): the
 * kernel calls run under the connecting id's qp_lock alone.
 */
struct cma_p2p_adoption {
	struct cma_p2p_conn *conn; /* NULL: nothing claimed */
	struct cma_p2p_listener *lis; /* whose fd the request is on */
	uint32_t handle;
	struct cma_p2p_hdr hdr;
	struct rdma_ucm_event_resp resp;
	struct rdma_ucm_query_route_resp route; /* as cma_p2p_held's */
	bool has_route;
};

/*
 * What this process keeps about one peer (address and listening port),
 * in p2p_peers.c's table: the incarnation its messages stated, which
 * tells a restart.
 */
struct cma_p2p_peer {
	struct cma_hnode hnode; /* in the peers by identity */
	/* Until a connect of ours uses it: known only from what it sent. */
	struct cma_list_node snode; /* in the strangers, while one */
	bool kept; /* a connect of ours used it: never forgotten */
	struct cma_p2p_ident remote;
	uint64_t incarnation; /* the last its messages stated; 0: none yet */
};

enum cma_p2p_hold_mode {
	CMA_P2P_HOLD_NEVER, /* RDMA_OPTION_ID_PEER2PEER = 0 */
	CMA_P2P_HOLD_TIMED, /* default: RDMA_CM_P2P_HOLD_MS, then surface */
	CMA_P2P_HOLD_PEER, /* p2p listener: until the peer gives up */
};

/*
 * The table's lock (p2p.c).  Under it only kernel commands that never
 * wait for the network: REJ and DESTROY_ID of a request's kernel id,
 * INIT_QP_ATTR, QUERY.  A connect's REQ, an adoption's MIGRATE_ID and
 * ACCEPT, QP transitions and destroying a connecting id run without it,
 * under the id's qp_lock, with the conn marked busy.
 */
void cma_p2p_lock(void);
void cma_p2p_unlock(void);
/* The forks between the first process and this one (any lock state). */
unsigned int cma_p2p_forks(void);

/* Registered by this process: a forked child's copy of its parent's is not. */
static inline bool cma_p2p_conn_registered(const struct cma_p2p_conn *conn)
{
	return conn->registered == cma_p2p_forks() + 1;
}
/* Under p2p_lock: a busy count taken, dropped, and looked at. */
void cma_p2p_busy_get(struct cma_p2p_busy *b);
void cma_p2p_busy_put(struct cma_p2p_busy *b);
bool cma_p2p_busy(const struct cma_p2p_busy *b);
/* Under p2p_lock: wait until some busy count dropped (cma_p2p_idle). */
void cma_p2p_wait_idle(void);
/* Under p2p_lock: a busy count dropped; wake the waiters. */
void cma_p2p_idle(void);

/* --- p2p.c: settings -------------------------------------------------- */

/* RDMA_CM_P2P_DEBUG=1: one line on stderr (any lock state). */
bool cma_p2p_debug_on(void);
void __attribute__((format(printf, 1, 2)))
cma_p2p_dbg_print(const char *fmt, ...);
/* Its arguments (key strings) are not even formatted when it is off. */
#define cma_p2p_dbg(...)                                                       \
	do {                                                                   \
		if (cma_p2p_debug_on())                                        \
			cma_p2p_dbg_print(__VA_ARGS__);                        \
	} while (0)
const char *cma_p2p_key_str(const struct cma_p2p_key *key, char *buf,
			    size_t len);
uint64_t cma_p2p_now_ns(void);
unsigned int cma_p2p_hold_ms(void);
/* RDMA_CM_P2P_MAX_HELD: held requests per listener (4x per process). */
unsigned int cma_p2p_max_held(void);
/* The hold time a connect's bounds are reckoned from (never 0). */
unsigned int cma_p2p_wait_ms(void);

/* @id's address and port mixed into @h (start with CMA_P2P_HASH_SEED). */
#define CMA_P2P_HASH_SEED 0x243f6a8885a308d3ull
uint64_t cma_p2p_ident_hash(uint64_t h, const struct cma_p2p_ident *id);

/*
 * The peer table (p2p_peers.c), under p2p_lock: the entry for @remote, or
 * NULL; the entry made if missing (NULL/ENOMEM), @keep when a connect of
 * ours uses it (else it is a stranger, forgotten when too many are
 * known).
 */
struct cma_p2p_peer *cma_p2p_peer_of(const struct cma_p2p_ident *remote);
struct cma_p2p_peer *cma_p2p_peer_get(const struct cma_p2p_ident *remote,
				      bool keep);
/* In a forked child (p2p.c's handler): the peer table and list whole. */
void cma_p2p_peers_forked(void);

/* --- p2p.c: the table ------------------------------------------------- */

enum cma_p2p_hold_mode
cma_p2p_listener_mode(const struct cma_p2p_listener *lis);
struct cma_p2p_listener *
cma_p2p_find_listener(const struct cma_id_private *id_priv);
/* The listener a connect from @src in @ps announces: first created wins. */
struct cma_p2p_listener *cma_p2p_listener_for(enum rdma_port_space ps,
					      const struct sockaddr *src);
/* Put @hdr in front of @kp's private data. */
void cma_p2p_put_hdr(struct rdma_ucm_conn_param *kp,
		     const struct cma_p2p_hdr *hdr);
/* Refuse a request quietly, telling a p2p peer why, and forget its id. */
void cma_p2p_refuse(int fd, uint32_t handle, enum cma_p2p_kind why,
		    const struct cma_p2p_key *key);
/* This process's incarnation (40 bits, never 0). */
uint64_t cma_p2p_incarnation(void);
/* The number of our next REQ (p2p_lock held). */
uint32_t cma_p2p_next_req_number(void);
/* The connect waiting on NOTICE @serial (p2p_connect.c), or NULL. */
struct cma_p2p_conn *cma_p2p_conn_of_notice(uint64_t serial);
/* Keep @h (its listener's list and the hash); refuses the oldest held
 * requests first when a cap would be exceeded. */
void cma_p2p_held_link(struct cma_p2p_held *h);
void cma_p2p_held_drop(struct cma_p2p_held *h);
void cma_p2p_held_unlink(struct cma_p2p_held *h);
/* @lis's oldest held request, or NULL. */
static inline struct cma_p2p_held *
cma_p2p_held_first(const struct cma_p2p_listener *lis)
{
	return cma_list_first(&lis->held, struct cma_p2p_held, lnode);
}
/*
 * The oldest held request with this key, through the hash: the peer's
 * attempts are taken in the order they came.
 */
struct cma_p2p_held *cma_p2p_held_find(const struct cma_p2p_key *key);
/*
 * A listener that holds p2p requests listens on @channel: its process is
 * about to connect in p2p mode.  What the first p2p connect would set up
 * inside the connection's time is set up now: the service thread, the
 * channel's wake-up fd, the process's incarnation.
 */
void cma_p2p_prepare(struct rdma_event_channel *channel);
/*
 * The id's p2p state, made on first use (under the id's mut, so with
 * p2p_lock or without it): NULL/ENOMEM.
 */
struct cma_p2p_id *cma_p2p_id_make(struct cma_id_private *id_priv);
/* The id's conn state, made on first use (not under the lock). */
struct cma_p2p_conn *cma_p2p_conn_get(struct cma_id_private *id_priv);
void cma_p2p_conn_register(struct cma_p2p_conn *conn, enum cma_p2p_state state);
void cma_p2p_conn_unregister(struct cma_p2p_conn *conn);
/*
 * The connect a request with @key pairs with: the oldest registered
 * connect with that key waiting for the peer's REQ; for an explicit tag,
 * else any connect with it (the request is then a duplicate).  NULL if
 * none.
 */
struct cma_p2p_conn *cma_p2p_conn_find(const struct cma_p2p_key *key);
/* The most connects waiting at once (their count: test_hooks.h). */
unsigned int cma_p2p_conns_waiting_peak(void);
/* Every change of a conn's state goes through here (the count above). */
void cma_p2p_conn_set_state(struct cma_p2p_conn *conn,
			    enum cma_p2p_state state);
/* The next registered conn after @conn (NULL: the first) with @remote. */
struct cma_p2p_conn *cma_p2p_conn_next_of(struct cma_p2p_conn *conn,
					  const struct cma_p2p_ident *remote);
/* Refuse every held request from @remote. */
void cma_p2p_held_drop_from(const struct cma_p2p_ident *remote);
/* Refuse (@why) every held request @match says so of. */
typedef bool (*cma_p2p_held_pred)(const struct cma_p2p_held *h,
				  const void *arg);
void cma_p2p_held_refuse_if(cma_p2p_held_pred match, const void *arg,
			    enum cma_p2p_kind why);
/* (Re)arm @lis's timer for its held requests, or stop it. */
void cma_p2p_arm(struct cma_p2p_listener *lis);
/* The listener whose timer this is, if it is still in the table. */
struct cma_p2p_listener *cma_p2p_listener_of(struct cma_timer *timer);

/* --- p2p_kernel_id.c -------------------------------------------------- */

/* Make @handle the id's kernel id (under its mut); the one it had. */
uint32_t cma_p2p_set_handle(struct cma_id_private *id_priv, uint32_t handle);
/* A kernel id of its own in place of a retired one (or none: lazy ids). */
int cma_p2p_renew_kernel_id(struct cma_id_private *id_priv);
/* Destroy kernel id @handle of @id_priv; its events so far stay counted. */
int cma_p2p_destroy_kernel_id(struct cma_id_private *id_priv, uint32_t handle);
/* Under p2p_lock: kernel id @old of @conn's id goes with its chores. */
void cma_p2p_retire(struct cma_p2p_conn *conn, uint32_t old);
/*
 * Under the id's qp_lock and p2p_lock: do what is left to do now, with
 * p2p_lock dropped meanwhile if there is any.
 */
void cma_p2p_chores_now(struct cma_p2p_conn *conn);

/* Chores taken out of a conn under p2p_lock, done without it. */
struct cma_p2p_chores {
	uint32_t ids[CMA_P2P_MAX_RETIRED];
	unsigned int n;
	bool qp_err;
};

/* Under p2p_lock: let the conn's timer do its chores now. */
void cma_p2p_chores_soon(struct cma_p2p_conn *conn);
/* Under p2p_lock: @conn's chores into @c (the conn is busy until done). */
bool cma_p2p_take_chores(struct cma_p2p_conn *conn, struct cma_p2p_chores *c);
/*
 * Without p2p_lock, under the id's qp_lock (@qp_err) or not (ids only):
 * do them; an id the kernel would not destroy goes back to the conn.
 */
void cma_p2p_do_chores(struct cma_p2p_conn *conn, struct cma_p2p_chores *c);

/* --- p2p_connect.c ---------------------------------------------------- */

/*
 * A request or reply from the peer at @remote stated @incarnation.  A new
 * one means its process was restarted: the held requests of the old one
 * are refused, connections with it disconnected, connects towards it
 * failed (-ECONNRESET), all but @keep (the connect the reply answers).
 * Called with p2p_lock held.
 */
void cma_p2p_peer_seen(const struct cma_p2p_ident *remote, uint64_t incarnation,
		       const struct cma_p2p_conn *keep);

/*
 * Claim request @handle (on @lis's fd) for @conn: under p2p_lock, the
 * conn becomes ADOPTING and busy.  The caller drops p2p_lock and calls
 * cma_p2p_adopt_finish, which answers the request with the id's QP.
 */
void cma_p2p_adopt_claim(struct cma_p2p_adoption *a, struct cma_p2p_conn *conn,
			 struct cma_p2p_listener *lis, uint32_t handle,
			 const struct rdma_ucm_event_resp *resp,
			 const struct cma_p2p_hdr *hdr,
			 const struct rdma_ucm_query_route_resp *route);
/*
 * Without p2p_lock, with the id's qp_lock if @qp_locked (else taken
 * here).  0: adopted, the conn is CONNECTED.  -1: the request was dead
 * (its sender gave that attempt up) or could not be answered; it was
 * refused, and the conn adopted the next held request with its key, or
 * waits for the peer's next one (WAIT_PEER), its bound going on.
 */
int cma_p2p_adopt_finish(struct cma_p2p_adoption *a, bool qp_locked);
/*
 * Under p2p_lock: @conn adopted a request whose connection is not
 * established: a NOTICE, or its sender's restart, may still undo it.
 */
static inline bool cma_p2p_adoption_open(const struct cma_p2p_conn *conn)
{
	return conn->state == CMA_P2P_CONNECTED && conn->adopted &&
	       !conn->established;
}

/*
 * Under the id's qp_lock and p2p_lock (dropped meanwhile, the conn busy):
 * undo @conn's open adoption (cma_p2p_adoption_open) of a request a
 * NOTICE named dead or whose sender's process is gone, its QP kept bound;
 * the connect waits on.  0, or -1/errno with the adoption as it was (no
 * fresh kernel id).
 */
int cma_p2p_unadopt(struct cma_p2p_conn *conn);
/* Under p2p_lock: claim the oldest held request with @conn's key into @a. */
bool cma_p2p_claim_held(struct cma_p2p_conn *conn, struct cma_p2p_adoption *a);
/*
 * Under p2p_lock: an adoption failed, the connect waits on: its bound,
 * begun when it started waiting (or now, if it adopted at once), is
 * neither restarted nor lost (p2p_connect.c).
 */
void cma_p2p_bound_resume(struct cma_p2p_conn *conn);
/*
 * Under p2p_lock: @conn's REQ was refused for now (IB CM reason 8, 10 or
 * 28 without data, the peer's "not now" refusal; @status): RESEND, it
 * goes out again every so often until the connect's bound.
 */
void cma_p2p_wait_resend(struct cma_p2p_conn *conn, int status);
/* How long RESEND waits before the REQ goes out again (p2p_lock held). */
unsigned int cma_p2p_resend_delay_ms(const struct cma_p2p_conn *conn);
void cma_p2p_conn_timer_expire(struct cma_timer *timer);

/*
 * Whether the end @local of a pair sends the REQ that forms its
 * connection: the lower identity does, the higher one only adopts
 * (rdma_cm_p2p(7), "WHO SENDS").  No other fact decides it.
 */
bool cma_p2p_sends_req(const struct cma_p2p_ident *local,
		       const struct cma_p2p_ident *remote);
/*
 * Under the id's qp_lock, without p2p_lock: send @conn's REQ now
 * (@deferred: rdma_connect has returned, a failure is an event), or first
 * resolve the route it left for later (p2p_resolve.c).  0, or -1/errno
 * with the conn out of the table.
 */
int cma_p2p_send_or_resolve(struct cma_p2p_conn *conn, bool deferred);
/* Both locks held: a REQ due after rdma_connect returned never went out. */
void cma_p2p_deferred_failed(struct cma_p2p_conn *conn, int err);
/* Under the id's qp_lock, without p2p_lock: see cma_p2p_send_or_resolve. */
int cma_p2p_send_req(struct cma_p2p_conn *conn, bool deferred);

/* --- p2p_resolve.c ---------------------------------------------------- */

/* The route of @conn's id is left for later and not resolved yet. */
bool cma_p2p_route_later(const struct cma_p2p_conn *conn);
/* Whether the conn is resolving for a REQ of ours that goes out again. */
bool cma_p2p_resolving(const struct cma_p2p_conn *conn);

/*
 * Without p2p_lock, under the id's qp_lock: resolve the route left for
 * later; the REQ goes out when it is (cma_p2p_route_event).
 * 0, or -1/errno with the conn out of the table.
 */
int cma_p2p_resolve_now(struct cma_p2p_conn *conn, bool deferred);
/*
 * Under p2p_lock: an event of the resolution cma_p2p_resolve_now began.
 * True if it is one (never the application's); then @next says what the
 * caller does once p2p_lock is dropped (cma_p2p_route_next), and @notice
 * is a NOTICE to send then if the connect ended (cma_p2p_notice_ended).
 */
struct cma_p2p_notice_out;
enum cma_p2p_route_step {
	CMA_P2P_STEP_NONE,
	CMA_P2P_STEP_ROUTE, /* the address is resolved: resolve the route */
	CMA_P2P_STEP_SEND, /* the route is resolved: our REQ goes out */
};
bool cma_p2p_route_event(struct cma_p2p_conn *conn,
			 const struct rdma_ucm_event_resp *resp,
			 enum cma_p2p_route_step *next,
			 struct cma_p2p_notice_out *notice);
/* Without p2p_lock, under the id's qp_lock: do @next. */
void cma_p2p_route_next(struct cma_p2p_conn *conn,
			enum cma_p2p_route_step next);

/* --- p2p_window.c ----------------------------------------------------- */

/*
 * A place in the window of REQs out for @conn's next REQ: true if it has
 * one now; else it waits in the queue, and the conn's timer fires at once
 * when it is given one.
 */
bool cma_p2p_slot_take(struct cma_p2p_conn *conn);
/* @conn has no REQ out any more (or left the queue): the next one goes. */
void cma_p2p_slot_release(struct cma_p2p_conn *conn);
/* REQs out now, places kept for woken connects included (tests). */
unsigned int cma_p2p_reqs_out(void);
/* In a forked child (p2p.c's handler): the parent's REQs out not counted. */
void cma_p2p_window_forked(void);

/* --- p2p_notice.c ----------------------------------------------------- */

/* Called once, without any lock, from the service thread. */
typedef void (*cma_p2p_notice_fn)(uint64_t serial, bool heard);

/*
 * The higher end, where a p2p listener's requests come to (@addr, a
 * 16-byte identity address of @family, and port @port): a companion
 * listener hears NOTICEs there.  0, or -1/errno.  Without p2p_lock.
 */
int cma_p2p_companion_ensure(sa_family_t family, const uint8_t addr[16],
			     uint16_t port);
/* The p2p listener on @port goes: its companions with it. */
void cma_p2p_companions_drop(uint16_t port);

/*
 * The lower end: tell the higher end's companion where the REQs of the
 * connect with @key went (its remote address and port, from its local
 * address, in @family) that the REQs @notice names are dead; @done says
 * whether it was heard, naming the NOTICE @serial.  0, or -1/errno if it
 * cannot be sent.  Without p2p_lock.
 */
int cma_p2p_notice_send(sa_family_t family, const struct cma_p2p_key *key,
			const struct cma_p2p_hdr *notice,
			cma_p2p_notice_fn done, uint64_t serial);
/* Tests whose service thread is parked read the channel themselves. */
void cma_p2p_verify_serve_now(void);
/* Fuzz targets start each input afresh: everything of p2p_notice.c goes. */
void cma_p2p_verify_reset(void);

/* A NOTICE about to go out (p2p_connect.c, cma_p2p_notice_start). */
struct cma_p2p_notice_out {
	uint64_t serial; /* 0: none */
	sa_family_t family;
	struct cma_p2p_key key;
	struct cma_p2p_hdr hdr;
};

/*
 * Under p2p_lock, before @conn leaves the table: a connect of the lower
 * end that ends unanswered (refused for good, given up, destroyed) fills
 * @n with a NOTICE naming its REQs dead, or none.
 */
void cma_p2p_notice_ended(const struct cma_p2p_conn *conn,
			  struct cma_p2p_notice_out *n);
/* Without p2p_lock: send the NOTICE @n, if any; one that cannot go is
 * unheard. */
void cma_p2p_notice_start(const struct cma_p2p_notice_out *n);

/* --- p2p_stale.c: what NOTICEs said is dead ------------------------------ */

/*
 * Without any lock (the service thread): the peer at @from says every REQ
 * from its QP @qpn of @incarnation numbered up to @number is dead.  Held
 * ones are refused, an adoption of one not established is undone, and
 * such a REQ still on its way is refused when it comes.
 */
void cma_p2p_dead_reqs(const struct cma_p2p_ident *from, uint64_t incarnation,
		       uint32_t qpn, uint32_t number);
/* Under p2p_lock: whether a NOTICE said this REQ from @from is dead. */
bool cma_p2p_req_dead(const struct cma_p2p_ident *from,
		      const struct cma_p2p_hdr *req, uint32_t qpn);

/* --- p2p_request.c ---------------------------------------------------- */

void cma_p2p_timer_expire(struct cma_timer *timer);

#endif /* CMA_P2P_TABLE_H */
