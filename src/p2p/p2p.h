/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Peer-to-peer connection formation: the pure part (identities, keys, the
 * decision taken for an incoming request), separate from p2p.c's table so
 * that the unit tests can drive it.  See rdma_cm_p2p(7) for the model.
 */
#ifndef CMA_P2P_H
#define CMA_P2P_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* One end of a pair: its address on that connection and its listening port. */
struct cma_p2p_ident {
	uint8_t addr[16]; /* IPv6, IPv4-mapped IPv6, or the GID for AF_IB */
	uint16_t port; /* host order */
};

/* A connection seen from this process: which pair, which connection. */
struct cma_p2p_key {
	struct cma_p2p_ident local;
	struct cma_p2p_ident remote;
	uint64_t tag;
	bool explicit_tag;
};

/*
 * Where a local connect stands (rdma_cm_p2p(7), "STATE MACHINE"): the
 * lower end goes PENDING (its REQ out) and, if that REQ is refused for
 * now, RESEND until it goes out again; the higher end waits in
 * WAIT_PEER (the page's WAITING) and passes through ADOPTING for each
 * request it answers.  Both end CONNECTED, or in NO_MATCH (the page's
 * "ended", also where a connect starts).
 */
enum cma_p2p_state {
	CMA_P2P_NO_MATCH, /* no local connect with this key */
	CMA_P2P_PENDING, /* the lower end: our REQ is out, no answer yet */
	CMA_P2P_WAIT_PEER, /* the higher end: waiting for the peer's REQ */
	CMA_P2P_CONNECTED, /* formed, or forming from an adopted request */
	CMA_P2P_ADOPTING, /* answering a request of the peer's right now */
	/*
	 * The lower end: our REQ was refused for now; the next goes out when
	 * the timer fires, on a fresh kernel id resolved first.
	 */
	CMA_P2P_RESEND,
};

/* Where a p2p connect's route comes from (p2p_resolve.c). */
enum cma_p2p_route {
	CMA_P2P_ROUTE_KERNEL, /* resolved as usual, before rdma_connect */
	CMA_P2P_ROUTE_BOUND, /* only bound; ADDR_RESOLVED came from us */
	CMA_P2P_ROUTE_LATER, /* ROUTE_RESOLVED came from us too */
	CMA_P2P_ROUTE_ADDR, /* resolving for our REQ: the address */
	CMA_P2P_ROUTE_PATH, /* resolving for our REQ: the route */
};

enum cma_p2p_action {
	CMA_P2P_HOLD, /* keep it for a local rdma_connect */
	CMA_P2P_ADOPT, /* it becomes the local connect's connection */
	CMA_P2P_REJECT_RETRY, /* from the higher end: ours forms the pair */
	CMA_P2P_REJECT_DUP, /* stale duplicate of a formed connection */
};

/* Order of identities: address bytes, then port.  <0, 0, >0. */
int cma_p2p_ident_cmp(const struct cma_p2p_ident *a,
		      const struct cma_p2p_ident *b);
bool cma_p2p_key_equal(const struct cma_p2p_key *a,
		       const struct cma_p2p_key *b);
/*
 * What to do with a request whose key (seen from here: local = receiver,
 * remote = sender) matched a local connect in @state (cma_p2p_conn_find).
 * Only a request from the lower identity is ever held or adopted.
 */
enum cma_p2p_action cma_p2p_decide(const struct cma_p2p_key *req,
				   enum cma_p2p_state state);
/*
 * The 16-byte identity address of the sockaddr in the @len bytes at @sa;
 * -1 for other families and for one whose structure does not fit @len.
 * @sa needs no alignment: kernel replies place addresses at offsets a
 * struct sockaddr_ib (8-byte aligned) does not have.
 */
int cma_p2p_addr16(const void *sa, size_t len, uint8_t out[16]);

#endif /* CMA_P2P_H */
