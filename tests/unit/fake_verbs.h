/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * A fake libibverbs device for unit tests that need the library bound to a
 * device: ids that resolve, QPs the CM moves through their states, PDs,
 * CQs and AHs.  Linking fake_verbs.o into a test program interposes the
 * ibv_* calls the library makes (the program's own definitions win over
 * libibverbs.so), so no RDMA device or kernel is needed.  Pair it with
 * fake_ucma, whose route answers name this device's GUID.
 */
#ifndef FAKE_VERBS_H
#define FAKE_VERBS_H

#include <stdbool.h>
#include <infiniband/verbs.h>

#define FAKE_VERBS_MAX_STATES 16
#define FAKE_VERBS_MAX_RECVS 1024

/* The last send posted on a QP, as posted (its SGL not kept). */
struct fake_send {
	enum ibv_wr_opcode opcode;
	uint64_t wr_id;
	unsigned int send_flags;
	__be32 imm_data;
	uint32_t len; /* bytes in its SGL */
	uint64_t remote_addr;
	uint32_t rkey;
	struct ibv_ah *ah;
	uint32_t remote_qpn, remote_qkey;
};

/* A posted receive. */
struct fake_recv {
	uint64_t wr_id;
	struct ibv_sge sge; /* the first; length 0 when none */
};

/* What the fake records about a QP (at the start of its allocation). */
struct fake_qp {
	struct ibv_qp qp; /* must stay first */
	enum ibv_qp_state states[FAKE_VERBS_MAX_STATES]; /* every move */
	int nstates;
	struct ibv_qp_attr last[IBV_QPS_ERR + 1]; /* attr of each move */
	int last_mask[IBV_QPS_ERR + 1];
	int posted_sends;
	struct fake_send last_send;
	bool sq_sig_all;
	int mcast_attached; /* dropped with the QP, as the kernel does */
	/* Receives posted and not yet consumed by the peer, oldest first. */
	struct fake_recv recvs[FAKE_VERBS_MAX_RECVS];
	int recv_head, nrecvs;
	int posted_recvs; /* ever */
	struct fake_qp *peer; /* fake_verbs_connect */
	bool hold; /* sends queue until fake_verbs_release */
	struct ibv_send_wr *held; /* copies, oldest first */
};

/* Live objects of each kind, for leak checks. */
struct fake_verbs_counts {
	int contexts, pds, cqs, channels, qps, srqs, ahs, mcast_attached, mrs;
};

/*
 * Reset and present one device ("fake0") whose port 1 is RoCE (Ethernet
 * link layer) or InfiniBand; tells fake_ucma to report its GUID.
 */
void fake_verbs_install(bool roce);
struct fake_verbs_counts fake_verbs_counts(void);
/*
 * One more device in the list (fake1, fake2, ...): InfiniBand, or an
 * iWARP RNIC.  fake_ucma keeps reporting fake0's GUID unless a test sets
 * a route naming this one (fake_verbs_guid).
 */
struct ibv_device *fake_verbs_add_device(bool iwarp);
/*
 * What ibv_query_port and ibv_query_gid_table report for a device's port 1
 * (the ACM path builder reads them).  Zeroes are the defaults: the link
 * layer fake_verbs_install chose, an active port, no LIDs, width 1X and
 * speed SDR, an empty GID table.
 */
#define FAKE_VERBS_MAX_GIDS 4
struct fake_verbs_port {
	uint8_t link_layer; /* IBV_LINK_LAYER_*; 0: the install's */
	enum ibv_port_state state; /* 0: IBV_PORT_ACTIVE */
	uint16_t lid, sm_lid;
	uint8_t active_width, active_speed;
	int ngids;
	union ibv_gid gids[FAKE_VERBS_MAX_GIDS];
	/* ibv_query_device's; 0 makes rsockets take their smallest queues. */
	int max_qp_wr;
};
/* Set the port of @device (NULL: fake0); reset by fake_verbs_install. */
void fake_verbs_set_port(struct ibv_device *device,
			 const struct fake_verbs_port *port);
/* What an AH of the fake was created with. */
struct ibv_ah_attr fake_verbs_ah_attr(struct ibv_ah *ah);
/* Take a device out of the list, as a hot-unplug does; it stays valid. */
void fake_verbs_unplug(struct ibv_device *device);
/* A device's GUID in host order. */
uint64_t fake_verbs_guid(struct ibv_device *device);
/* The fake behind a QP the library or the test created. */
static inline struct fake_qp *fake_qp_of(struct ibv_qp *qp)
{
	return (struct fake_qp *)qp;
}
/* The next ibv_modify_qp to this state fails with err (once). */
void fake_verbs_fail_modify(enum ibv_qp_state state, int err);
/*
 * Raise a completion event on @cq's channel (a real, blocking eventfd: a
 * thread asleep in ibv_get_cq_event wakes).  The fake CQs never hold
 * completions: ibv_poll_cq always finds none.
 */
void fake_verbs_cq_event(struct ibv_cq *cq);
/*
 * Call @fn at the start of every ibv_modify_qp that moves a state (in the
 * calling thread), to hold the move at a chosen point; NULL removes it.
 */
void fake_verbs_on_modify(void (*fn)(struct ibv_qp *qp, enum ibv_qp_state to,
				     void *arg),
			  void *arg);

/*
 * A wire between two RC QPs in this process: from now on what one posts
 * reaches the other as real hardware would do it.  An RDMA write copies
 * its SGL to remote_addr (the peer's memory is this process's memory),
 * with immediate data it consumes the peer's oldest receive and completes
 * it (IBV_WC_RECV_RDMA_WITH_IMM); a SEND copies into that receive's SGE.
 * A signaled request (or every one with sq_sig_all) completes on the
 * sender's CQ.  A CQ armed by ibv_req_notify_cq raises one event on its
 * channel at its next completion.  A request that needs a receive the
 * peer has not posted waits (with everything behind it) for the peer's
 * next ibv_post_recv, as RNR retries do with rnr_retry_count 7 (unlimited,
 * as rsockets ask).  A request carried while either QP is in ERR completes
 * with an error (IBV_WC_WR_FLUSH_ERR when the sender's, else
 * IBV_WC_RETRY_EXC_ERR), and the sender's QP goes to ERR; moving a QP to
 * ERR flushes its receives.  On an iWARP device the wire is a TCP
 * connection: moving either QP to SQD (a graceful close) or ERR also
 * moves the other to ERR.
 */
void fake_verbs_connect(struct ibv_qp *a, struct ibv_qp *b);
/*
 * A fabric for UD QPs: from now on (until install) a datagram posted on a
 * UD QP of this process reaches the UD QP whose number it names (any AH
 * will do), behind a zeroed 40-byte GRH in that QP's oldest receive, and
 * completes with IBV_WC_GRH and the sender's QP number.  With no such QP,
 * no receive or too small a one the datagram is lost, as on a fabric.
 */
void fake_verbs_ud_fabric(bool on);
/*
 * While held, what @qp posts waits (in order) instead of crossing the
 * wire: a test then sees the sender's state with its requests in flight.
 * fake_verbs_release delivers up to @n of them (all when n < 0; held or
 * not, but never past one waiting for a receive) and returns how many.
 */
void fake_verbs_hold(struct ibv_qp *qp, bool hold);
int fake_verbs_release(struct ibv_qp *qp, int n);
/*
 * Keep destroyed CQs for reuse (on), or free them (off, the default): for
 * fuzz targets that make a CQ per connection.  A use after destroy is then
 * no longer caught by AddressSanitizer.
 */
void fake_verbs_reuse_cqs(bool on);
/* Put a completion on @cq directly (raising its event if armed). */
void fake_verbs_complete(struct ibv_cq *cq, const struct ibv_wc *wc);
/* Completions on @cq not yet polled. */
int fake_verbs_cq_depth(struct ibv_cq *cq);
/* The next ibv_post_send / ibv_post_recv fails with err (once). */
void fake_verbs_fail_post(int err);

#endif /* FAKE_VERBS_H */
