/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The core's only way into peer-to-peer mode: every call the connection
 * manager's core makes into src/p2p/ is declared here, and nothing else of
 * p2p is visible to it.  Three core files include this header, each for
 * one kind of hook (the sections below): conn.c, where p2p changes what a
 * call does (resolve, connect, accept, listen, its options); event.c,
 * where it changes what a kernel event does (a request held or adopted,
 * an answer to its REQ); and id.c, an id's life (made, moved, destroyed).
 * rdma_cm_p2p(7) describes the protocol; docs/architecture.md the seam.
 */
#ifndef CMA_P2P_HOOKS_H
#define CMA_P2P_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct cma_id_private;
struct cma_event;
struct rdma_ucm_event_resp;
struct rdma_ucm_conn_param;
struct rdma_ucm_ece;

/* --- conn.c: the calls p2p mode changes ---------------------------------- */

/* RDMA_CM_PEER2PEER=1: every connect and accept of the process is p2p. */
bool cma_p2p_env(void);
/*
 * rdma_resolve_addr / rdma_resolve_route of an id that asked for p2p
 * before resolving (p2p_resolve.c): 1 when the library answered (the
 * route is left until a REQ needs it), 0 when the kernel resolves as
 * usual, -1/errno.  @src: the caller's source address or NULL.
 */
int cma_p2p_resolve_addr(struct cma_id_private *id_priv,
			 const struct sockaddr *src, const struct sockaddr *dst,
			 socklen_t dst_len, int timeout_ms);
int cma_p2p_resolve_route(struct cma_id_private *id_priv, int timeout_ms);
/* The kernel refused the resolution: the id gives the device back. */
void cma_p2p_preset_undo(struct cma_id_private *id_priv);
/* The id's route was left for later: it can only connect in p2p mode. */
bool cma_p2p_route_deferred(const struct cma_id_private *id_priv);
/* Bytes p2p mode puts in front of a connect's private data (its header). */
size_t cma_p2p_connect_hdr_len(const struct cma_id_private *id_priv);
/* Bytes it puts in front of an accept's (a reply to a p2p request). */
size_t cma_p2p_accept_hdr_len(const struct cma_id_private *id_priv);
/* rdma_connect in p2p mode: adopt a held request or send a tagged REQ. */
int cma_p2p_connect(struct cma_id_private *id_priv,
		    const struct rdma_ucm_conn_param *kparam,
		    const struct rdma_ucm_ece *ece);
/* rdma_accept in p2p mode of a p2p request: put the reply header in. */
int cma_p2p_accept(struct cma_id_private *id_priv,
		   struct rdma_ucm_conn_param *kparam);
/* A listen (about to be) made: its port is what p2p connects from its
 * address send. */
void cma_p2p_listen(struct cma_id_private *id_priv);
/* The kernel refused the listen cma_p2p_listen was called for. */
void cma_p2p_unlisten(struct cma_id_private *id_priv);
/* Whether the id has a p2p listener record (cma_p2p_listen made one). */
bool cma_p2p_listening(const struct cma_id_private *id_priv);
/*
 * A listener that may hold p2p requests (RDMA_OPTION_ID_PEER2PEER not 0)
 * makes its channel one the library serves: after rdma_listen, when the
 * option changes, and when the listener moves to another channel (id.c).
 */
void cma_p2p_listen_may_hold(struct cma_id_private *id_priv);
/*
 * RDMA_OPTION_ID_PEER2PEER and RDMA_OPTION_ID_P2P_TAG (p2p_options.c):
 * the check, set and get of their entries in conn.c's option table.
 */
int cma_p2p_opt_check(int level, int optname, const void *optval,
		      size_t optlen);
int cma_p2p_opt_set(struct cma_id_private *id_priv, int level, int optname,
		    const void *optval, size_t optlen);
int cma_p2p_opt_get(struct cma_id_private *id_priv, int level, int optname,
		    void *optval, size_t optlen);

/* --- event.c: the kernel events p2p mode changes ------------------------- */

enum cma_p2p_verdict {
	CMA_P2P_PASS, /* not p2p's business: as always */
	CMA_P2P_SURFACE, /* p2p, but for the application now: strip, report */
	/* An event of a p2p connect formed by adopting the peer's request. */
	CMA_P2P_ADOPTED,
	CMA_P2P_TAKEN, /* held, adopted or refused: the application never sees it */
};
/* A CONNECT_REQUEST on a listener, before anything else is done with it. */
enum cma_p2p_verdict cma_p2p_conn_req(struct cma_id_private *listen_priv,
				      const struct rdma_ucm_event_resp *resp);
/* A surfaced p2p CONNECT_REQUEST: strip the header, set peer2peer_mode. */
void cma_p2p_surfaced(struct cma_event *evt);
/*
 * Any other event of an id, before anything else is done with it:
 * CMA_P2P_TAKEN when it is the library's business only, CMA_P2P_ADOPTED
 * when the id is a p2p connect that adopted the peer's request (not the
 * initiator), else CMA_P2P_PASS.  On the answer to a p2p REQ that
 * dictates its QP's PSNs, it sets evt->psns for the core's QP moves.
 */
enum cma_p2p_verdict
cma_p2p_filter_event(struct cma_event *evt,
		     const struct rdma_ucm_event_resp *resp);
/* ADDR_RESOLVED from the kernel needs no query: the id knows its device. */
bool cma_p2p_addr_preset(const struct cma_id_private *id_priv);
/* A CONNECT_RESPONSE the core completed: the answer to our REQ. */
void cma_p2p_conn_resp(struct cma_event *evt, struct cma_id_private *id_priv);
/* The answer to our REQ could not be completed: CONNECT_ERROR ends it. */
void cma_p2p_conn_resp_failed(struct cma_id_private *id_priv);
/* ESTABLISHED (on iWARP's active side, also the answer to our REQ). */
void cma_p2p_established(struct cma_event *evt, struct cma_id_private *id_priv);

/* --- id.c: an id's life -------------------------------------------------- */

/*
 * Whether a listener holds requests for p2p connects (p2p mode declared):
 * then a new id's kernel id is made by the first command that needs it.
 */
bool cma_p2p_peer_listening(void);
/*
 * The id is going away.  Detach (under p2p_lock, never waiting): nothing
 * is matched against it or held for it any more, its held requests are
 * refused, its timers stopped, and its kernel id no longer changes.  Free
 * (with no lock held, after the id's last event was acked): waits for a
 * timer of its that is running in another thread, then frees.
 */
void cma_p2p_detach(struct cma_id_private *id_priv);
void cma_p2p_free(struct cma_id_private *id_priv);

#endif /* CMA_P2P_HOOKS_H */
