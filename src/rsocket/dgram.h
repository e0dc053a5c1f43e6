/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Datagram rsockets: state shared by the dgram*.c files (what each holds:
 * the Layout table of docs/architecture.md).
 *
 * The design is rdma-core's, so the two libraries interoperate.  Each
 * rsocket owns a kernel UDP socket bound to its address and port: the
 * rsocket's number, and the channel through which peers tell each other
 * their UD QP numbers.  The first datagram to a peer whose QP number is not
 * known yet travels over UDP (struct ds_wire_udp_hdr, op RS_OP_DATA); the
 * receiver answers with its own QP number (op RS_OP_CTRL) and both sides
 * resolve an address handle through the rdma_cm.  From then on datagrams go
 * over the UD QPs, each behind struct ds_wire_hdr naming the sender's
 * rsocket address, which rrecvfrom reports.
 *
 * Unlike rdma-core there is no service thread: the UDP socket is read by
 * whichever call makes progress on the rsocket (receives, rpoll, and sends
 * to a peer still unresolved), and a datagram that arrived over UDP is
 * queued directly instead of being looped back through the local QP.
 */
#ifndef RS_DGRAM_H
#define RS_DGRAM_H

#include "rs.h"

/* Each receive slot: the GRH a UD receive always carries, then the data. */
#define DS_RSLOT_SIZE (DS_WIRE_GRH_LEN + DS_MSG_SIZE)
/* Receive work requests are told apart from sends by this wr_id bit. */
#define DS_WR_RECV (1ULL << 63)
/* Datagrams that arrived over UDP and may wait in the queue at once. */
#define DS_UDP_QUEUE 64
/* Milliseconds a peer's address and route may take to resolve. */
#define DS_RESOLVE_MS 2000

/* A UD QP for one local source address (and so one RDMA device). */
struct ds_qp {
	struct ds_qp *next;
	struct rdma_cm_id *cm_id;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	struct ibv_mr *smr; /* the socket's send slots, for this PD */
	struct ibv_mr *rmr;
	uint8_t *rbuf; /* rq_size slots of DS_RSLOT_SIZE */
	union rs_sockaddr src; /* local address, with the socket's port */
	struct ds_wire_hdr hdr; /* ahead of everything sent from here */
	uint32_t hdr_len;
	uint32_t max_msg; /* header + payload the port's MTU carries */
	uint32_t inline_size;
	bool ethernet; /* RoCE: address handles always carry a GRH */
	bool armed; /* a completion event has been requested */
};

/*
 * A peer rsocket, keyed by its address.  All fields are under rs->lock.
 * A socket keeps at most rs_def.max_dgram_dest of them (anyone on the
 * network can make one with a datagram from a new source); a new one
 * evicts the least recently used that nothing pins.  Pinned: a resolution
 * in progress, a send in progress or posted and not completed, the
 * rconnect destination.
 *
 * What the UDP resolver trusts: a UDP message's source address and port
 * can be spoofed, so the first QP number a destination hears of is taken
 * (nothing better exists before a QP number is known), but a later UDP
 * message never changes it.  One that claims another number puts the
 * destination in doubt (qpn_doubt): sends go over UDP, to the address,
 * which a spoofer cannot redirect, until a datagram arrives on our UD QP
 * from the known QP number itself (the device reports the source QP;
 * the datagram's header names the destination), which shows that number
 * is still the peer's.  A peer that restarted behind the same address and
 * port is thus reached over UDP until the destination is evicted.
 */
struct ds_dest {
	union rs_sockaddr addr;
	socklen_t addrlen;
	struct ds_qp *qp; /* the local QP that reaches it */
	struct ibv_ah *ah; /* NULL until resolved */
	uint32_t qpn; /* the peer's QP, once it has told us (qpn_known) */
	bool qpn_known;
	bool qpn_doubt; /* another QP number was claimed over UDP */
	/*
	 * The address did not resolve: sends go over UDP, without trying
	 * again, until the peer's next UDP message.
	 */
	bool route_failed;
	struct cma_list_node lru; /* in rs->dest_lru, newest first */
	uint32_t pins;
	/*
	 * Being resolved by a thread that dropped rs->lock meanwhile: others
	 * skip the resolution and send over UDP until it is done.
	 */
	bool resolving;
};

/* --- dgram.c ------------------------------------------------------------- */

/* Bind the UDP socket to an ephemeral port if the caller has not bound it. */
int ds_autobind(struct rsocket *rs);
/* The socket's bound address (its port is every QP's port). */
int ds_local_addr(struct rsocket *rs, union rs_sockaddr *addr);

/* --- dgram_qp.c ---------------------------------------------------------- */

/* The QP for local address @src, created on first use.  Under rs->lock. */
int ds_qp_get(struct rsocket *rs, const union rs_sockaddr *src,
	      struct ds_qp **qp);
void ds_qp_destroy_all(struct rsocket *rs);
/* Process every completion waiting on every QP.  Under rs->lock. */
void ds_poll_cqs(struct rsocket *rs);
/* Request completion events on every QP before sleeping. */
void ds_arm_cqs(struct rsocket *rs);
/* Take (and acknowledge) whatever completion events are pending. */
void ds_take_cq_events(struct rsocket *rs);
/* Give receive slot @slot of @qp back to the hardware. */
int ds_post_recv(struct rsocket *rs, struct ds_qp *qp, uint32_t slot);

/* --- dgram_dest.c -------------------------------------------------------- */

/*
 * The destination for @addr, created (with its QP) on first use, evicting
 * the least recently used unpinned one at the bound (ENOBUFS if all are
 * pinned).  Under rs->lock; the caller pins it (ds_dest_pin) to keep it
 * across anything that may drop the lock.
 */
int ds_dest_get(struct rsocket *rs, const struct sockaddr *addr, socklen_t len,
		struct ds_dest **dest);
static inline void ds_dest_pin(struct ds_dest *dest)
{
	dest->pins++;
}
static inline void ds_dest_unpin(struct ds_dest *dest)
{
	dest->pins--;
}
/*
 * Resolve an address handle to @dest's peer, whose QP number it knows.
 * Only a sender does this, when it first needs the handle: a datagram
 * from a new source costs the receiver a destination, never a resolution.
 * Called with rs->lock held and @dest pinned; drops the lock for the
 * resolution (up to 2 * DS_RESOLVE_MS) and takes it again.  Returns at
 * once if another thread is resolving @dest already.  A failure marks
 * @dest route_failed (the QP number stays): the peer's next UDP message
 * lets a send try again.
 */
int ds_dest_resolve(struct rsocket *rs, struct ds_dest *dest);
/*
 * The peer behind @dest says over UDP that its QP number is @qpn: taken
 * if none is known, else a different one puts @dest in doubt (see
 * struct ds_dest).  Either way its route may be tried again.
 */
void ds_dest_claim_qpn(struct rsocket *rs, struct ds_dest *dest, uint32_t qpn);
/*
 * A datagram came over our UD QP from QP @src_qp, its header naming @src:
 * if that is the QP number of @src's destination in doubt, the doubt ends.
 */
void ds_dest_confirm_qpn(struct rsocket *rs, const union rs_sockaddr *src,
			 uint32_t src_qp);
void ds_dest_destroy_all(struct rsocket *rs);

/* --- dgram_udp.c --------------------------------------------------------- */

/* Send @len bytes (or none) to @dest over UDP, behind the UDP header. */
ssize_t ds_udp_send(struct rsocket *rs, struct ds_dest *dest, uint8_t op,
		    const void *buf, size_t len);
/* Read and act on what waits on the UDP socket.  Under rs->lock. */
void ds_udp_drain(struct rsocket *rs);

/* --- dgram_io.c ---------------------------------------------------------- */

/* Queue a received datagram; false (and counted) if there is no room. */
bool ds_queue(struct rsocket *rs, const struct ds_rmsg *msg);
/*
 * What waits look for (a datagram queued, a send slot free, a shutdown,
 * a CQ event taken) has changed: wake the blocking call and the rpoll
 * calls asleep on @rs.  Under rs->lock.
 */
void ds_changed(struct rsocket *rs);

#endif /* RS_DGRAM_H */
