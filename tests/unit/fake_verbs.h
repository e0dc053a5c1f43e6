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

/* What the fake records about a QP (at the start of its allocation). */
struct fake_qp {
	struct ibv_qp qp; /* must stay first */
	enum ibv_qp_state states[FAKE_VERBS_MAX_STATES]; /* every move */
	int nstates;
	struct ibv_qp_attr last[IBV_QPS_ERR + 1]; /* attr of each move */
	int last_mask[IBV_QPS_ERR + 1];
	int posted_sends;
};

/* Live objects of each kind, for leak checks. */
struct fake_verbs_counts {
	int contexts, pds, cqs, channels, qps, srqs, ahs, mcast_attached;
};

/*
 * Reset and present one device ("fake0") whose port 1 is RoCE (Ethernet
 * link layer) or InfiniBand; tells fake_ucma to report its GUID.
 */
void fake_verbs_install(bool roce);
struct fake_verbs_counts fake_verbs_counts(void);
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

#endif /* FAKE_VERBS_H */
