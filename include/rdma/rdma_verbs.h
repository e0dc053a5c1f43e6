/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * RDMA connection manager: inline verbs helpers.
 *
 * Thin wrappers that post work requests and reap completions on the QP,
 * SRQ, CQs and completion channels that librdmacm created for a
 * struct rdma_cm_id.  They are static inline, so their names, signatures
 * and behaviour are compiled into applications and must stay identical to
 * rdma-core's <rdma/rdma_verbs.h>.
 *
 * Every int-returning helper reports failure librdmacm-style: -1 with
 * errno set, never a raw verbs error code.  Being compiled into
 * applications, they refuse a NULL id, a NULL pointer the operation needs
 * and an id lacking the PD, QP or CQ the call uses (-1 or NULL, errno
 * EINVAL) instead of handing it to libibverbs, which would dereference it.
 *
 * rdma_create_srq(), rdma_create_srq_ex() and rdma_destroy_srq(), which
 * rdma-core also lists here, are declared in <rdma/rdma_cma.h>.
 */
#ifndef RDMA_VERBS_H
#define RDMA_VERBS_H

#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Verbs calls return 0 or an error number (a few providers hand back a
 * negated one).  Fold any non-zero value into errno and return -1.
 */
static inline int rdma_seterrno(int ret)
{
	if (!ret)
		return 0;
	errno = ret < 0 ? -ret : ret;
	return -1;
}

/*
 * Memory registration on the id's protection domain.  Local write is
 * always granted because received data and RDMA read results land in
 * these buffers.
 */
static inline struct ibv_mr *rdma_reg_msgs(struct rdma_cm_id *id, void *addr,
					   size_t length)
{
	if (!id || !id->pd) {
		errno = EINVAL;
		return NULL;
	}
	return ibv_reg_mr(id->pd, addr, length, IBV_ACCESS_LOCAL_WRITE);
}

static inline struct ibv_mr *rdma_reg_read(struct rdma_cm_id *id, void *addr,
					   size_t length)
{
	if (!id || !id->pd) {
		errno = EINVAL;
		return NULL;
	}
	return ibv_reg_mr(id->pd, addr, length,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
}

static inline struct ibv_mr *rdma_reg_write(struct rdma_cm_id *id, void *addr,
					    size_t length)
{
	if (!id || !id->pd) {
		errno = EINVAL;
		return NULL;
	}
	return ibv_reg_mr(id->pd, addr, length,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
}

static inline int rdma_dereg_mr(struct ibv_mr *mr)
{
	if (!mr)
		return rdma_seterrno(EINVAL);
	return rdma_seterrno(ibv_dereg_mr(mr));
}

/*
 * Scatter/gather forms.  The work request lives on the stack: the
 * provider copies it into the queue before ibv_post_*() returns.  It is
 * cleared first so that fields the opcode does not use never carry
 * stack garbage into the provider.
 */
static inline int rdma_post_recvv(struct rdma_cm_id *id, void *context,
				  struct ibv_sge *sgl, int nsge)
{
	struct ibv_recv_wr wr, *bad_wr;

	if (!id || (!id->srq && !id->qp) || (!sgl && nsge))
		return rdma_seterrno(EINVAL);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)context;
	wr.sg_list = sgl;
	wr.num_sge = nsge;

	/* A QP attached to an SRQ takes its receives from the SRQ. */
	if (id->srq)
		return rdma_seterrno(ibv_post_srq_recv(id->srq, &wr, &bad_wr));
	return rdma_seterrno(ibv_post_recv(id->qp, &wr, &bad_wr));
}

static inline int rdma_post_sendv(struct rdma_cm_id *id, void *context,
				  struct ibv_sge *sgl, int nsge, int flags)
{
	struct ibv_send_wr wr, *bad_wr;

	if (!id || !id->qp || (!sgl && nsge))
		return rdma_seterrno(EINVAL);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)context;
	wr.sg_list = sgl;
	wr.num_sge = nsge;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = (unsigned int)flags;

	return rdma_seterrno(ibv_post_send(id->qp, &wr, &bad_wr));
}

static inline int rdma_post_readv(struct rdma_cm_id *id, void *context,
				  struct ibv_sge *sgl, int nsge, int flags,
				  uint64_t remote_addr, uint32_t rkey)
{
	struct ibv_send_wr wr, *bad_wr;

	if (!id || !id->qp || (!sgl && nsge))
		return rdma_seterrno(EINVAL);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)context;
	wr.sg_list = sgl;
	wr.num_sge = nsge;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.send_flags = (unsigned int)flags;
	wr.wr.rdma.remote_addr = remote_addr;
	wr.wr.rdma.rkey = rkey;

	return rdma_seterrno(ibv_post_send(id->qp, &wr, &bad_wr));
}

static inline int rdma_post_writev(struct rdma_cm_id *id, void *context,
				   struct ibv_sge *sgl, int nsge, int flags,
				   uint64_t remote_addr, uint32_t rkey)
{
	struct ibv_send_wr wr, *bad_wr;

	if (!id || !id->qp || (!sgl && nsge))
		return rdma_seterrno(EINVAL);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)context;
	wr.sg_list = sgl;
	wr.num_sge = nsge;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = (unsigned int)flags;
	wr.wr.rdma.remote_addr = remote_addr;
	wr.wr.rdma.rkey = rkey;

	return rdma_seterrno(ibv_post_send(id->qp, &wr, &bad_wr));
}

/*
 * Single-buffer forms.  Sends and writes accept a NULL mr (lkey 0) so
 * that IBV_SEND_INLINE data, which the HCA never reads through an MR,
 * need not be registered.  Receives and reads always need one.
 */
static inline int rdma_post_recv(struct rdma_cm_id *id, void *context,
				 void *addr, size_t length, struct ibv_mr *mr)
{
	struct ibv_sge sge;

	if (!mr)
		return rdma_seterrno(EINVAL);
	/* Catch buffers that stray outside the region in debug builds. */
	assert((uintptr_t)addr >= (uintptr_t)mr->addr &&
	       (uintptr_t)addr + length <= (uintptr_t)mr->addr + mr->length);

	sge.addr = (uint64_t)(uintptr_t)addr;
	sge.length = (uint32_t)length;
	sge.lkey = mr->lkey;

	return rdma_post_recvv(id, context, &sge, 1);
}

static inline int rdma_post_send(struct rdma_cm_id *id, void *context,
				 void *addr, size_t length, struct ibv_mr *mr,
				 int flags)
{
	struct ibv_sge sge;

	sge.addr = (uint64_t)(uintptr_t)addr;
	sge.length = (uint32_t)length;
	sge.lkey = mr ? mr->lkey : 0;

	return rdma_post_sendv(id, context, &sge, 1, flags);
}

static inline int rdma_post_read(struct rdma_cm_id *id, void *context,
				 void *addr, size_t length, struct ibv_mr *mr,
				 int flags, uint64_t remote_addr, uint32_t rkey)
{
	struct ibv_sge sge;

	if (!mr)
		return rdma_seterrno(EINVAL);
	sge.addr = (uint64_t)(uintptr_t)addr;
	sge.length = (uint32_t)length;
	sge.lkey = mr->lkey;

	return rdma_post_readv(id, context, &sge, 1, flags, remote_addr, rkey);
}

static inline int rdma_post_write(struct rdma_cm_id *id, void *context,
				  void *addr, size_t length, struct ibv_mr *mr,
				  int flags, uint64_t remote_addr,
				  uint32_t rkey)
{
	struct ibv_sge sge;

	sge.addr = (uint64_t)(uintptr_t)addr;
	sge.length = (uint32_t)length;
	sge.lkey = mr ? mr->lkey : 0;

	return rdma_post_writev(id, context, &sge, 1, flags, remote_addr, rkey);
}

/*
 * Datagram send to (ah, remote_qpn).  The Q_Key is the one librdmacm
 * programs into every RDMA_PS_UDP QP, so no caller ever chooses it.
 */
static inline int rdma_post_ud_send(struct rdma_cm_id *id, void *context,
				    void *addr, size_t length,
				    struct ibv_mr *mr, int flags,
				    struct ibv_ah *ah, uint32_t remote_qpn)
{
	struct ibv_send_wr wr, *bad_wr;
	struct ibv_sge sge;

	if (!id || !id->qp || !ah)
		return rdma_seterrno(EINVAL);
	sge.addr = (uint64_t)(uintptr_t)addr;
	sge.length = (uint32_t)length;
	sge.lkey = mr ? mr->lkey : 0;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)context;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = (unsigned int)flags;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = remote_qpn;
	wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;

	return rdma_seterrno(ibv_post_send(id->qp, &wr, &bad_wr));
}

/*
 * Blocking reap of one completion from a CQ that librdmacm created for
 * id (so its cq_context is id).  Arming the CQ and then polling again
 * closes the window where a completion arrives after the first poll
 * but before the arm, which would otherwise never raise an event.
 *
 * Returns the number of completions (1) or -1 with errno set.  A
 * completion with an error status is still returned: the caller must
 * check wc->status.
 */
static inline int __rdma_get_comp(struct rdma_cm_id *id, struct ibv_cq *cq,
				  struct ibv_comp_channel *channel,
				  struct ibv_wc *wc)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int ret;

	if (!cq || !channel || !wc)
		return rdma_seterrno(EINVAL);
	for (;;) {
		ret = ibv_poll_cq(cq, 1, wc);
		if (ret)
			break;

		ret = ibv_req_notify_cq(cq, 0);
		if (ret)
			return rdma_seterrno(ret);

		ret = ibv_poll_cq(cq, 1, wc);
		if (ret)
			break;

		/* Sets errno itself on failure. */
		if (ibv_get_cq_event(channel, &ev_cq, &ev_ctx))
			return -1;
		assert(ev_cq == cq && ev_ctx == (void *)id);
		(void)id;
		ibv_ack_cq_events(ev_cq, 1);
	}

	return ret < 0 ? rdma_seterrno(ret) : ret;
}

static inline int rdma_get_send_comp(struct rdma_cm_id *id, struct ibv_wc *wc)
{
	if (!id)
		return rdma_seterrno(EINVAL);
	return __rdma_get_comp(id, id->send_cq, id->send_cq_channel, wc);
}

static inline int rdma_get_recv_comp(struct rdma_cm_id *id, struct ibv_wc *wc)
{
	if (!id)
		return rdma_seterrno(EINVAL);
	return __rdma_get_comp(id, id->recv_cq, id->recv_cq_channel, wc);
}

#ifdef __cplusplus
}
#endif

#endif /* RDMA_VERBS_H */
