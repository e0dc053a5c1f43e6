// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The stream data path (rdma-core's rsocket protocol, see wire.h).
 *
 * Receiving: the peer RDMA-writes data into our receive buffer, one half
 * at a time: we hand it a half (an SGE written into its target SGL) when
 * that half is free.  Each write carries immediate data (RS_OP_DATA and the
 * length) which queues an rs_rmsg; the reader copies out of the buffer in
 * order.  Every consumed message is a credit; we return credits in bulk
 * (RS_OP_SGL) once half of them, or half the buffer, is back.
 *
 * Sending: data goes inline when small, else through a registered ring
 * (sbuf).  Only every few work requests is signaled: a completion retires
 * every request posted before it (RC completes in order), which saves the
 * provider a completion per send.  A request is always signaled when the
 * sender could otherwise run out of queue entries or buffer space with no
 * completion on its way.
 *
 * iWARP (rs->msg_send): there is no write with immediate, so each message
 * goes as a plain RDMA write (when it has a payload) followed by a 4-byte
 * inline SEND holding the 32 bits (rdma-core's wire behaviour for iWARP).
 * Receives then take a 4-byte slot each, after the receive buffer.  A data
 * write costs two send queue entries, credits with a buffer two control
 * slots; a message without payload is the SEND alone.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rs.h"
#include "util/page_buf.h"

#define RS_WR_RECV (1ULL << 63)
#define RS_POLL_BATCH 16
/*
 * Receives consumed but not yet posted again, at most, by a reader that
 * never waits: the CQ poll then reposts them itself.
 */
#define RS_REPOST_MAX 32
/*
 * In the sent ring, the SEND that follows a write in msg_send mode: it
 * retires a queue entry or a control slot, never send buffer bytes.  The
 * data bits keep the op of the message it carries.
 */
#define RS_SENT_MSG_SEND(op) rs_msg(RS_OP_RSVD, (uint32_t)(op))

/* --- set-up and tear-down --------------------------------------------- */

static void rs_set_qp_size(struct rsocket *rs)
{
	struct ibv_device_attr attr;
	uint32_t max = RS_QP_MAX_SIZE;

	if (!ibv_query_device(rs->cm_id->verbs, &attr) &&
	    (uint32_t)attr.max_qp_wr < max)
		max = attr.max_qp_wr;
	if (rs->sq_size > max)
		rs->sq_size = max;
	if (rs->rq_size > max)
		rs->rq_size = max;
	if (rs->sq_size < RS_QP_MIN_SIZE)
		rs->sq_size = RS_QP_MIN_SIZE;
	if (rs->rq_size < RS_QP_MIN_SIZE)
		rs->rq_size = RS_QP_MIN_SIZE;
}

static struct ibv_mr *rs_reg(struct rsocket *rs, void *buf, size_t len,
			     int access)
{
	return ibv_reg_mr(rs->cm_id->pd, buf, len,
			  IBV_ACCESS_LOCAL_WRITE | access);
}

/* Bytes of rbuf: the receive buffer, then msg_send's message slots. */
static size_t rs_rbuf_total(const struct rsocket *rs)
{
	return rs->rbuf_size +
	       (rs->msg_send ? (size_t)rs->rq_size * RS_MSG_SEND_SIZE : 0);
}

static int rs_init_bufs(struct rsocket *rs)
{
	size_t len;

	if (rs->rbuf_size < 2 * RS_SNDLOWAT)
		rs->rbuf_size = 2 * RS_SNDLOWAT;
	rs->rbuf_size &= ~1u;
	if (rs->sbuf_size < 2 * RS_SNDLOWAT)
		rs->sbuf_size = 2 * RS_SNDLOWAT;

	rs->rmsg = calloc(rs->rq_size + 1, sizeof(*rs->rmsg));
	/* Registered: on pages of their own (util/page_buf.h says why). */
	rs->sbuf = page_buf_alloc(rs->sbuf_size +
				  RS_MAX_CTRL_MSG * RS_QP_CTRL_SIZE);
	len = sizeof(struct rs_wire_sge) * RS_SGL_SIZE +
	      sizeof(struct rs_wire_iomap) * rs->target_iomap_size;
	rs->target_buf = page_buf_alloc(len);
	rs->rbuf = page_buf_alloc(rs_rbuf_total(rs));
	if (!rs->rmsg || !rs->sbuf || !rs->target_buf || !rs->rbuf)
		return cma_err(ENOMEM);

	rs->smr = rs_reg(rs, rs->sbuf,
			 rs->sbuf_size + RS_MAX_CTRL_MSG * RS_QP_CTRL_SIZE, 0);
	rs->target_mr =
		rs_reg(rs, rs->target_buf, len, IBV_ACCESS_REMOTE_WRITE);
	rs->rmr = rs_reg(rs, rs->rbuf, rs_rbuf_total(rs),
			 IBV_ACCESS_REMOTE_WRITE);
	if (!rs->smr || !rs->target_mr || !rs->rmr)
		return -1;

	rs->target_sgl = rs->target_buf;
	if (rs->target_iomap_size)
		rs->target_iomap =
			(struct rs_wire_iomap *)(rs->target_buf +
						 sizeof(struct rs_wire_sge) *
							 RS_SGL_SIZE);
	rs->sbuf_bytes_avail = rs->sbuf_size;
	rs->sqe_avail = rs->sq_size - RS_QP_CTRL_SIZE;
	rs->rbuf_free_offset = rs->rbuf_size / 2;
	rs->rbuf_bytes_avail = rs->rbuf_size / 2;
	rs->rseq_comp = rs->rq_size / 2;
	return 0;
}

/*
 * Post @count receives: zero-length (the immediate data is the message),
 * or in msg_send mode one message slot each, the slot's index in wr_id.
 */
static int rs_post_recvs(struct rsocket *rs, int count)
{
	struct ibv_recv_wr wrs[32], *bad;
	struct ibv_sge sges[32];
	int i, n;

	while (count > 0) {
		n = count < 32 ? count : 32;
		for (i = 0; i < n; i++) {
			wrs[i].wr_id = RS_WR_RECV;
			wrs[i].sg_list = NULL;
			wrs[i].num_sge = 0;
			wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
			if (!rs->msg_send)
				continue;
			wrs[i].wr_id |= rs->recv_slot;
			sges[i].addr = (uintptr_t)(rs->rbuf + rs->rbuf_size +
						   (size_t)rs->recv_slot *
							   RS_MSG_SEND_SIZE);
			sges[i].length = RS_MSG_SEND_SIZE;
			sges[i].lkey = rs->rmr->lkey;
			wrs[i].sg_list = &sges[i];
			wrs[i].num_sge = 1;
			rs->recv_slot =
				rs_ring_next(rs->recv_slot, rs->rq_size);
		}
		if (ibv_post_recv(rs->cm_id->qp, wrs, &bad))
			return cma_err(EIO);
		count -= n;
	}
	return 0;
}

/* Post again every receive completions consumed (when: rs.h). */
void rs_flush_recvs(struct rsocket *rs)
{
	/* Detached (quiesce.c): no QP left to post on. */
	if (!rs->recv_deficit || !rs->cq || !(rs_state(rs) & RS_CONNECTED))
		return;
	if (rs_post_recvs(rs, rs->recv_deficit)) {
		rs_set_state(rs, RS_ERROR);
		rs->err = EIO;
	}
	rs->recv_deficit = 0;
}

int rs_create_ep(struct rsocket *rs)
{
	struct ibv_qp_init_attr attr;
	int flags;

	rs->msg_send =
		rs->cm_id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
	/* msg_send's SENDs go inline, from the stack. */
	if (rs->msg_send && rs->sq_inline < RS_MSG_SEND_SIZE)
		rs->sq_inline = RS_MSG_SEND_SIZE;
	rs_set_qp_size(rs);
	rs->comp_channel = ibv_create_comp_channel(rs->cm_id->verbs);
	if (!rs->comp_channel)
		return -1;
	/* Read only after poll() said so, but another thread may be first. */
	flags = fcntl(rs->comp_channel->fd, F_GETFL);
	if (flags < 0 ||
	    fcntl(rs->comp_channel->fd, F_SETFL, flags | O_NONBLOCK))
		return -1;
	rs->cq = ibv_create_cq(rs->cm_id->verbs, rs->sq_size + rs->rq_size, rs,
			       rs->comp_channel, 0);
	if (!rs->cq)
		return -1;

	memset(&attr, 0, sizeof(attr));
	attr.qp_context = rs;
	attr.send_cq = rs->cq;
	attr.recv_cq = rs->cq;
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 0;
	attr.cap.max_send_wr = rs->sq_size;
	attr.cap.max_recv_wr = rs->rq_size;
	attr.cap.max_send_sge = 2;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(rs->cm_id, NULL, &attr))
		return -1;
	rs->sq_inline = attr.cap.max_inline_data;
	if (rs->msg_send && rs->sq_inline < RS_MSG_SEND_SIZE)
		return cma_err(ENOTSUP);
	rs->sent = calloc(rs_sent_slots(rs), sizeof(*rs->sent));
	if (!rs->sent)
		return cma_err(ENOMEM);
	if (rs_init_bufs(rs))
		return -1;
	return rs_post_recvs(rs, rs->rq_size);
}

/*
 * The completion channel stays until the socket goes (rs_stream_free): a
 * thread in rpoll may still hold its descriptor after a detach.
 */
void rs_destroy_ep(struct rsocket *rs)
{
	if (rs->cm_id && rs->cm_id->qp)
		rdma_destroy_qp(rs->cm_id);
	if (rs->cq) {
		if (rs->unacked_events)
			ibv_ack_cq_events(rs->cq, rs->unacked_events);
		rs->unacked_events = 0;
		ibv_destroy_cq(rs->cq);
		rs->cq = NULL;
	}
	if (rs->smr)
		ibv_dereg_mr(rs->smr);
	if (rs->target_mr)
		ibv_dereg_mr(rs->target_mr);
	if (rs->rmr)
		ibv_dereg_mr(rs->rmr);
	rs->smr = rs->target_mr = rs->rmr = NULL;
	free(rs->sbuf);
	free(rs->target_buf);
	free(rs->rbuf);
	free(rs->rmsg);
	free(rs->sent);
	rs->sbuf = rs->rbuf = NULL;
	rs->target_buf = NULL;
	rs->rmsg = NULL;
	rs->sent = NULL;
}

void rs_get_conn_params(struct rsocket *rs, struct rs_conn_params *p)
{
	memset(p, 0, sizeof(*p));
	p->credits = rs->rq_size;
	p->iomap_size = rs->target_iomap_size;
	p->target_sgl.addr = (uintptr_t)rs->target_buf;
	p->target_sgl.key = rs->target_mr->rkey;
	p->target_sgl.length = RS_SGL_SIZE;
	p->data_buf.addr = (uintptr_t)rs->rbuf;
	p->data_buf.key = rs->rmr->rkey;
	p->data_buf.length = rs->rbuf_size / 2;
}

void rs_set_conn_params(struct rsocket *rs, const struct rs_conn_params *p)
{
	struct rs_wire_sge *first = (struct rs_wire_sge *)rs->target_sgl;

	rs->remote_sgl = p->target_sgl;
	rs->remote_sge = 1 % p->target_sgl.length;
	rs->swap = p->big_endian != rs_host_big_endian();
	rs->peer_can_quiesce = p->can_quiesce;
	if (p->has_iomap) {
		rs->remote_iomap.addr =
			p->target_sgl.addr +
			sizeof(struct rs_wire_sge) * p->target_sgl.length;
		rs->remote_iomap.length = p->iomap_size;
		rs->remote_iomap.key = p->target_sgl.key;
	}
	*first = p->data_buf;
	rs->target_sge = 0;
	rs->sseq_comp = p->credits;
}

/* --- posting ----------------------------------------------------------- */

/* Record a posted request; signal it when a completion must be pending. */
static uint64_t rs_track(struct rsocket *rs, uint32_t msg, bool *signal)
{
	uint32_t idx = rs->sent_head;

	rs->sent[idx] = msg;
	rs->sent_head = rs_ring_next(idx, rs_sent_slots(rs));
	rs->unsignaled++;
	if (*signal || rs->unsignaled >= RS_SIGNAL_EVERY ||
	    rs->sqe_avail <= RS_SIGNAL_EVERY ||
	    rs->sbuf_bytes_avail < rs->sbuf_size / 2)
		*signal = true;
	if (*signal)
		rs->unsignaled = 0;
	return ((uint64_t)idx << 32) | msg;
}

static bool rs_is_ctrl_op(uint32_t msg)
{
	return rs_msg_op(msg) == RS_OP_SGL || rs_msg_op(msg) == RS_OP_CTRL;
}

static int rs_post_send_wr(struct rsocket *rs, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	if (ibv_post_send(rs->cm_id->qp, wr, &bad)) {
		rs_set_state(rs, RS_ERROR);
		rs->err = EIO;
		return cma_err(EIO);
	}
	return 0;
}

/* msg_send mode: @msg as the payload of an inline SEND, tracked as @track. */
static int rs_post_msg_send(struct rsocket *rs, uint32_t msg, uint32_t track)
{
	uint8_t buf[RS_MSG_SEND_SIZE];
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	bool signal = rs_is_ctrl_op(msg);

	rs_msg_send_encode(buf, msg);
	sge.addr = (uintptr_t)buf;
	sge.length = sizeof(buf);
	sge.lkey = 0;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = rs_track(rs, track, &signal);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_INLINE;
	if (signal)
		wr.send_flags |= IBV_SEND_SIGNALED;
	return rs_post_send_wr(rs, &wr);
}

/* Post a prepared RDMA write with @imm (or none), under rs->lock. */
static int rs_post_write(struct rsocket *rs, struct ibv_sge *sgl, int nsge,
			 uint32_t len, uint32_t msg, bool with_imm,
			 uint64_t addr, uint32_t rkey)
{
	struct ibv_send_wr wr;
	bool signal = rs_is_ctrl_op(msg);
	bool msg_send = with_imm && rs->msg_send;

	/* A message without payload is the SEND alone. */
	if (msg_send && !nsge)
		return rs_post_msg_send(rs, msg, msg);
	/* With a SEND to follow, that SEND is the one that must signal. */
	if (msg_send)
		signal = false;
	/*
	 * Only the fields an RC write's post reads, not the whole request:
	 * clearing all of it was a third of this function's work.
	 */
	wr.wr_id = rs_track(rs, msg, &signal);
	wr.next = NULL;
	wr.sg_list = nsge ? sgl : NULL;
	wr.num_sge = nsge;
	wr.opcode = with_imm && !msg_send ? IBV_WR_RDMA_WRITE_WITH_IMM
					  : IBV_WR_RDMA_WRITE;
	wr.imm_data = with_imm && !msg_send ? htonl(msg) : 0;
	wr.send_flags = len && len <= rs->sq_inline ? IBV_SEND_INLINE : 0;
	if (signal)
		wr.send_flags |= IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	if (rs_post_send_wr(rs, &wr))
		return -1;
	if (!msg_send)
		return 0;
	return rs_post_msg_send(rs, msg, RS_SENT_MSG_SEND(rs_msg_op(msg)));
}

bool rs_ctrl_avail(struct rsocket *rs)
{
	return rs->ctrl_seqno != rs->ctrl_max_seqno;
}

/* Control slots free: the credits message may take two (msg_send). */
static bool rs_credit_ctrl_avail(struct rsocket *rs)
{
	unsigned int need = rs->msg_send ? 2 : 1;

	return rs->ctrl_max_seqno - rs->ctrl_seqno >= need;
}

int rs_post_ctrl(struct rsocket *rs, uint32_t msg)
{
	rs->ctrl_seqno++;
	return rs_post_write(rs, NULL, 0, 0, msg, true, 0, 0);
}

void rs_send_keepalive(struct rsocket *rs)
{
	/* A full control ring counts as a probe gone unanswered. */
	if ((rs->state & RS_CONNECTED) && rs_ctrl_avail(rs) && !rs->await_peer)
		rs_post_ctrl(rs, rs_msg(RS_OP_CTRL, RS_CTRL_KEEPALIVE));
}

/* Hand the peer credits, and our next free half-buffer if there is one. */
static void rs_send_credits(struct rsocket *rs)
{
	uint32_t half = rs->rbuf_size / 2;
	uint32_t msg = rs_msg(RS_OP_SGL, (uint16_t)(rs->rseq_no + rs->rq_size));
	struct rs_wire_sge sge;
	struct ibv_sge ibsge;
	uint64_t raddr;

	rs_flush_recvs(rs);
	rs->rseq_comp = rs->rseq_no + rs->rq_size / 2;
	if (rs->rbuf_bytes_avail < half) {
		rs_post_ctrl(rs, msg);
		return;
	}

	sge.addr = (uintptr_t)(rs->rbuf + rs->rbuf_free_offset);
	sge.key = rs->rmr->rkey;
	sge.length = half;
	if (rs->swap)
		rs_sge_swap(&sge);
	if (rs->sq_inline >= sizeof(sge)) {
		ibsge.addr = (uintptr_t)&sge;
		ibsge.lkey = 0;
	} else {
		uint8_t *slot =
			rs->sbuf + rs->sbuf_size +
			RS_MAX_CTRL_MSG * (rs->ctrl_seqno % RS_QP_CTRL_SIZE);

		memcpy(slot, &sge, sizeof(sge));
		ibsge.addr = (uintptr_t)slot;
		ibsge.lkey = rs->smr->lkey;
	}
	ibsge.length = sizeof(sge);
	raddr = rs->remote_sgl.addr +
		(uint64_t)rs->remote_sge * sizeof(struct rs_wire_sge);
	rs->ctrl_seqno += rs->msg_send ? 2 : 1;
	rs_post_write(rs, &ibsge, 1, sizeof(sge), msg, true, raddr,
		      rs->remote_sgl.key);

	rs->rbuf_bytes_avail -= half;
	rs->rbuf_free_offset += half;
	if (rs->rbuf_free_offset >= rs->rbuf_size)
		rs->rbuf_free_offset = 0;
	rs->remote_sge = (rs->remote_sge + 1) % rs->remote_sgl.length;
}

void rs_update_credits(struct rsocket *rs)
{
	/* Asked after every read and poll, due rarely: that first. */
	if (rs->rbuf_bytes_avail < rs->rbuf_size / 2 &&
	    !rs_seq_reached(rs->rseq_no, rs->rseq_comp))
		return;
	/* Nothing more comes once the peer quiesced (quiesce.c). */
	if (!(rs_state(rs) & RS_CONNECTED) || !rs_credit_ctrl_avail(rs) ||
	    rs->await_peer || (rs->quiesce & (RS_QSC_HEARD | RS_QSC_DETACHED)))
		return;
	rs_send_credits(rs);
}

/* --- completions ------------------------------------------------------- */

static void rs_retire_send(struct rsocket *rs, uint32_t msg)
{
	if (rs_msg_op(msg) == RS_OP_RSVD) { /* RS_SENT_MSG_SEND */
		if (rs_is_ctrl_op(rs_msg(rs_msg_data(msg), 0)))
			rs->ctrl_max_seqno++;
		else
			rs->sqe_avail++;
		return;
	}
	switch (rs_msg_op(msg)) {
	case RS_OP_SGL:
		rs->ctrl_max_seqno++;
		break;
	case RS_OP_CTRL:
		rs->ctrl_max_seqno++;
		if (rs_msg_data(msg) == RS_CTRL_DISCONNECT)
			rs_set_state(rs, RS_DISCONNECTED);
		break;
	case RS_OP_IOMAP_SGL:
		rs->sqe_avail++;
		rs->sbuf_bytes_avail += sizeof(struct rs_wire_iomap);
		break;
	default: /* RS_OP_DATA, RS_OP_WRITE */
		rs->sqe_avail++;
		rs->sbuf_bytes_avail += rs_msg_data(msg);
		break;
	}
}

/* A completion retires its request and every unsignaled one before it. */
static void rs_send_done(struct rsocket *rs, const struct ibv_wc *wc)
{
	uint32_t last = (uint32_t)(wc->wr_id >> 32);

	if (last >= rs_sent_slots(rs))
		return;
	for (;;) {
		uint32_t idx = rs->sent_tail;

		if (idx == rs->sent_head)
			break;
		rs->sent_tail = rs_ring_next(idx, rs_sent_slots(rs));
		rs_retire_send(rs, rs->sent[idx]);
		if (idx == last)
			break;
	}
	if (wc->status == IBV_WC_SUCCESS) {
		rs_ka_heard(rs); /* the peer's NIC acknowledged */
	} else if ((rs_state(rs) & RS_CONNECTED) && !rs_quiesce_over(rs)) {
		rs_set_state(rs, RS_ERROR);
		rs->err = ECONNRESET;
	}
}

static void rs_queue_data(struct rsocket *rs, uint32_t len)
{
	int next = (int)rs_ring_next((uint32_t)rs->rmsg_tail,
				     (uint32_t)rs->rq_size + 1);

	if (next == rs->rmsg_head || len > rs->rbuf_size) {
		/* The peer overran its credits: a protocol violation. */
		rs_set_state(rs, RS_ERROR);
		rs->err = EPROTO;
		return;
	}
	rs->rmsg[rs->rmsg_tail].op = RS_OP_DATA;
	rs->rmsg[rs->rmsg_tail].len = len;
	rs->rmsg_tail = next;
}

static void rs_recv_done(struct rsocket *rs, const struct ibv_wc *wc)
{
	uint32_t msg;

	rs->recv_deficit++;
	if (wc->status != IBV_WC_SUCCESS) {
		rs->peer_closed = true; /* flushed: the connection is gone */
		/* After the peer's QUIESCE, its end is no error (quiesce.c). */
		if ((rs_state(rs) & RS_CONNECTED) &&
		    !(rs->quiesce & RS_QSC_HEARD)) {
			rs_set_state(rs, RS_ERROR);
			rs->err = ECONNRESET;
		}
		return;
	}
	rs->await_peer = false;
	rs_ka_heard(rs);
	if (wc->wc_flags & IBV_WC_WITH_IMM) {
		msg = ntohl(wc->imm_data);
	} else if (rs->msg_send && wc->opcode == IBV_WC_RECV) {
		uint32_t slot = (uint32_t)wc->wr_id % rs->rq_size;

		if (rs_msg_send_decode(rs->rbuf + rs->rbuf_size +
					       (size_t)slot * RS_MSG_SEND_SIZE,
				       wc->byte_len, rs->swap, &msg))
			return;
	} else {
		return;
	}
	switch (rs_msg_op(msg)) {
	case RS_OP_DATA:
		rs_queue_data(rs, rs_msg_data(msg));
		break;
	case RS_OP_SGL:
		rs->sseq_comp = (uint16_t)rs_msg_data(msg);
		break;
	case RS_OP_CTRL:
		if (rs_msg_data(msg) == RS_CTRL_DISCONNECT) {
			rs->peer_closed = true;
			rs_set_state(rs, RS_DISCONNECTED);
		} else if (rs_msg_data(msg) == RS_CTRL_SHUTDOWN) {
			if (rs_state(rs) & RS_WRITABLE)
				rs_clear_state(rs, RS_READABLE);
			else
				rs_set_state(rs, RS_DISCONNECTED);
		} else if (rs_msg_data(msg) == RS_CTRL_QUIESCE) {
			rs_quiesce_heard(rs);
		}
		break;
	case RS_OP_IOMAP_SGL:
		/*
		 * The slot is read from memory when needed.  The sender spent
		 * a credit on it: count it as consumed so credits balance.
		 */
		rs->rseq_no++;
		break;
	default:
		break;
	}
}

int rs_poll_cq(struct rsocket *rs)
{
	struct ibv_wc wc[RS_POLL_BATCH];
	int i, n, done = 0;

	if (!rs->cq)
		return 0;
	do {
		n = ibv_poll_cq(rs->cq, RS_POLL_BATCH, wc);
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id & RS_WR_RECV)
				rs_recv_done(rs, &wc[i]);
			else
				rs_send_done(rs, &wc[i]);
		}
		done += n > 0 ? n : 0;
	} while (n == RS_POLL_BATCH);
	/*
	 * What another thread waits for may have come with these, and its
	 * CQ event gone with them: its wait must look again.
	 */
	if (done && rs->followers)
		pthread_cond_broadcast(&rs->changed);
	if (done && rs->pollers)
		rs_ring_pollers(rs);

	if (rs->recv_deficit >= RS_REPOST_MAX)
		rs_flush_recvs(rs);
	rs_quiesce_answer(rs);
	return n < 0 ? cma_err(EIO) : 0;
}

void rs_flush_qp(struct rsocket *rs)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};

	/* The flushed receives raise a CQ event: sleepers wake and see it. */
	if (rs->cm_id && rs->cm_id->qp)
		ibv_modify_qp(rs->cm_id->qp, &attr, IBV_QP_STATE);
}

/* --- readiness (what waits wait for: wait.c) ------------------------- */

bool rs_conn_can_send(struct rsocket *rs)
{
	/* Not writable first: a detached socket has no target SGL left. */
	return !(rs_state(rs) & RS_WRITABLE) || rs_can_send(rs);
}

bool rs_conn_have_rdata(struct rsocket *rs)
{
	return rs_have_rdata(rs) || !(rs_state(rs) & RS_READABLE);
}

/* --- receiving --------------------------------------------------------- */

/* Copy @len bytes from the receive ring at @offset; returns the new one. */
static inline __attribute__((always_inline)) uint32_t
rs_copy_out(struct rsocket *rs, uint32_t offset, void *dst, uint32_t len)
{
	uint32_t end = rs->rbuf_size - offset;

	if (len > end) {
		memcpy(dst, rs->rbuf + offset, end);
		memcpy((uint8_t *)dst + end, rs->rbuf, len - end);
		return len - end;
	}
	memcpy(dst, rs->rbuf + offset, len);
	offset += len;
	return offset == rs->rbuf_size ? 0 : offset;
}

/*
 * How far a read has filled the caller's iovec array: element @vi, @vo
 * bytes into it.  Any number of elements, no copy of the array.
 */
struct rs_iov_cursor {
	const struct iovec *iov;
	int cnt;
	int vi;
	size_t vo;
};

/*
 * Copy queued data to @c's position and advance it; consume the data
 * unless @peek.  Under rs->lock.
 */
static inline __attribute__((always_inline)) size_t
rs_read_queued(struct rsocket *rs, struct rs_iov_cursor *c, bool peek)
{
	const struct iovec *iov = c->iov;
	int head = rs->rmsg_head, vi = c->vi, iovcnt = c->cnt;
	uint32_t offset = rs->rbuf_offset, first_part = 0;
	size_t vo = c->vo, total = 0;

	while (head != rs->rmsg_tail && vi < iovcnt) {
		uint32_t avail = rs->rmsg[head].len -
				 (head == rs->rmsg_head ? first_part : 0);
		size_t room = iov[vi].iov_len - vo;
		uint32_t n = avail < room ? avail : (uint32_t)room;

		if (!iov[vi].iov_len) {
			vi++;
			continue;
		}
		offset = rs_copy_out(rs, offset,
				     (uint8_t *)iov[vi].iov_base + vo, n);
		total += n;
		vo += n;
		if (vo == iov[vi].iov_len) {
			vi++;
			vo = 0;
		}
		if (n == avail) {
			head = (int)rs_ring_next((uint32_t)head,
						 (uint32_t)rs->rq_size + 1);
			if (!peek)
				rs->rseq_no++;
			first_part = 0;
		} else if (!peek) {
			rs->rmsg[head].len -= n;
		} else {
			first_part += n;
		}
	}
	if (!peek) {
		rs->rmsg_head = head;
		rs->rbuf_offset = offset;
		rs->rbuf_bytes_avail += total;
	}
	c->vi = vi;
	c->vo = vo;
	return total;
}

static size_t rs_iov_len(const struct iovec *iov, int iovcnt)
{
	size_t len = 0;
	int i;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	return len;
}

/*
 * A call on a socket that is not connected.  One whose connect failed says
 * why (as TCP reports its socket error), until SO_ERROR takes the error.
 */
static int rs_not_connected(const struct rsocket *rs)
{
	return cma_err(rs_state(rs) == RS_CONNECT_ERROR && rs->err ? rs->err
								   : ENOTCONN);
}

/*
 * The body of both receive calls, inlined into each: with rrecv's single
 * buffer the compiler drops the iovec loops from its copy.
 */
static inline __attribute__((always_inline)) ssize_t
rs_recvv_inline(struct rsocket *rs, const struct iovec *iov, int iovcnt,
		int flags)
{
	size_t len = rs_iov_len(iov, iovcnt), done = 0;
	struct rs_iov_cursor cur = {.iov = iov, .cnt = iovcnt};
	int ret = 0;

	if (rs_state(rs) & RS_OPENING) {
		if (rs_do_connect(rs, rs_nonblocking(rs, flags))) {
			if (errno == EINPROGRESS)
				errno = EAGAIN;
			return -1;
		}
	}
	if (!(rs_state(rs) & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR)))
		return rs_not_connected(rs);
	if (!len)
		return 0;

	pthread_mutex_lock(&rs->lock);
	rs_side_enter(rs, RS_SIDE_RECV);
	do {
		if (!rs_have_rdata(rs)) {
			ret = rs_wait_locked(rs, rs_nonblocking(rs, flags),
					     rs_conn_have_rdata);
			if (ret)
				break;
			if (!rs_have_rdata(rs))
				break; /* end of stream or error */
		}
		/* The cursor keeps the position for a MSG_WAITALL retry. */
		done += rs_read_queued(rs, &cur, flags & MSG_PEEK);
		if (flags & MSG_PEEK)
			break;
		rs_update_credits(rs);
	} while (done < len && (flags & MSG_WAITALL) &&
		 (rs_state(rs) & RS_READABLE));
	if (!done && !ret && (rs_state(rs) & RS_ERROR)) {
		ret = cma_err(rs->err ? rs->err : ECONNRESET);
	}
	rs_side_leave(rs, RS_SIDE_RECV);
	pthread_mutex_unlock(&rs->lock);
	/* A reply may follow: its first bytes should leave early again. */
	if (done && !(flags & MSG_PEEK))
		__atomic_store_n(&rs->send_olen, RS_OLAP_START_SIZE,
				 __ATOMIC_RELAXED);
	return done ? (ssize_t)done : ret;
}

ssize_t rs_stream_recvv(struct rsocket *rs, const struct iovec *iov, int iovcnt,
			int flags)
{
	return rs_recvv_inline(rs, iov, iovcnt, flags);
}

ssize_t rs_stream_recv(struct rsocket *rs, void *buf, size_t len, int flags)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};

	return rs_recvv_inline(rs, &iov, 1, flags);
}

/* --- sending ----------------------------------------------------------- */

/* Gather @len bytes starting at (*iov, *off) into @dst, advancing both. */
void rs_gather(void *dst, const struct iovec **iov, size_t *off, size_t len)
{
	while (len) {
		size_t n = (*iov)->iov_len - *off;

		if (n > len)
			n = len;
		memcpy(dst, (const uint8_t *)(*iov)->iov_base + *off, n);
		dst = (uint8_t *)dst + n;
		len -= n;
		*off += n;
		if (*off == (*iov)->iov_len) {
			(*iov)++;
			*off = 0;
		}
	}
}

int rs_post_payload(struct rsocket *rs, const struct iovec **iov, size_t *off,
		    uint32_t len, uint32_t msg, bool with_imm, uint64_t addr,
		    uint32_t rkey)
{
	struct ibv_sge sgl[2];
	int nsge;

	if (len <= rs->sq_inline && (*iov)->iov_len - *off >= len) {
		/* Inline: the provider copies straight from the caller. */
		sgl[0].addr = (uintptr_t)(*iov)->iov_base + *off;
		sgl[0].length = len;
		sgl[0].lkey = 0;
		nsge = 1;
		*off += len;
		if (*off == (*iov)->iov_len) {
			(*iov)++;
			*off = 0;
		}
	} else {
		uint32_t first = rs->sbuf_size - rs->sbuf_head;

		if (first > len)
			first = len;
		rs_gather(rs->sbuf + rs->sbuf_head, iov, off, first);
		sgl[0].addr = (uintptr_t)(rs->sbuf + rs->sbuf_head);
		sgl[0].length = first;
		sgl[0].lkey = rs->smr->lkey;
		nsge = 1;
		if (first < len) {
			rs_gather(rs->sbuf, iov, off, len - first);
			sgl[1].addr = (uintptr_t)rs->sbuf;
			sgl[1].length = len - first;
			sgl[1].lkey = rs->smr->lkey;
			nsge = 2;
		}
		rs->sbuf_head = (rs->sbuf_head + len) % rs->sbuf_size;
	}
	rs->sqe_avail -= (with_imm && rs->msg_send) ? 2 : 1;
	rs->sbuf_bytes_avail -= len;
	return rs_post_write(rs, sgl, nsge, len, msg, with_imm, addr, rkey);
}

/* Post one data write of @len bytes from the iovec cursor.  Under lock. */
static int rs_write_data(struct rsocket *rs, const struct iovec **iov,
			 size_t *off, uint32_t len)
{
	volatile struct rs_wire_sge *tsge = &rs->target_sgl[rs->target_sge];
	uint64_t addr = tsge->addr;
	uint32_t rkey = tsge->key;

	/* Update our view of the target before the peer may reuse it. */
	rs->sseq_no++;
	tsge->addr = addr + len;
	tsge->length = tsge->length - len;
	if (!tsge->length)
		rs->target_sge = (rs->target_sge + 1) % RS_SGL_SIZE;
	return rs_post_payload(rs, iov, off, len, rs_msg(RS_OP_DATA, len), true,
			       addr, rkey);
}

int rs_wait_for_room(struct rsocket *rs, bool nonblock)
{
	/*
	 * After shutdown(SHUT_WR) nothing more is sent, room or not; a close
	 * by another thread (its shutdown may come first) is EBADF, as below.
	 */
	if (!(rs_state(rs) & RS_WRITABLE))
		return cma_err(rs_closed_under(rs) ? EBADF : EPIPE);
	if (rs_can_send(rs))
		return 1;
	if (rs_wait_locked(rs, nonblock, rs_conn_can_send))
		return -1;
	if (!(rs_state(rs) & RS_WRITABLE))
		return cma_err(rs_closed_under(rs) ? EBADF : EPIPE);
	return rs_can_send(rs) ? 1 : 0;
}

uint32_t rs_next_xfer(struct rsocket *rs, uint32_t *olen, size_t left)
{
	uint32_t xfer;

	if (*olen < left) {
		xfer = *olen;
		if (*olen < RS_MAX_TRANSFER)
			*olen <<= 1;
	} else {
		xfer = (uint32_t)left;
	}
	/* TCP_MAXSEG: no message larger than asked for */
	if (rs->opt.maxseg && xfer > rs->opt.maxseg)
		xfer = rs->opt.maxseg;
	return xfer < rs->sbuf_bytes_avail ? xfer : rs->sbuf_bytes_avail;
}

ssize_t rs_stream_sendv(struct rsocket *rs, const struct iovec *iov, int iovcnt,
			int flags)
{
	size_t len = rs_iov_len(iov, iovcnt), left = len, off = 0;
	bool nonblock = rs_nonblocking(rs, flags);
	uint32_t olen;
	int ret = 0;

	if (rs_state(rs) & RS_OPENING) {
		if (rs_do_connect(rs, nonblock)) {
			if (errno == EINPROGRESS)
				errno = EAGAIN;
			return -1;
		}
	}
	if (!(rs_state(rs) & RS_CONNECTED)) {
		/*
		 * A call that held the socket when another thread closed it
		 * fails with EBADF, also when the close's disconnect is over
		 * before the call looks (as rs_wait_locked does).
		 */
		if (rs_closed_under(rs))
			return cma_err(EBADF);
		if (rs_state(rs) & (RS_DISCONNECTED | RS_ERROR))
			return cma_err(EPIPE);
		return rs_not_connected(rs);
	}

	pthread_mutex_lock(&rs->lock);
	rs_side_enter(rs, RS_SIDE_SEND);
	if (rs->iomap_pending) {
		ret = rs_send_iomaps(rs, flags);
		if (ret)
			goto out;
	}
	/*
	 * Small first chunks let a receiver that waits start early; a sender
	 * that streams (send after send, nothing received meanwhile) keeps
	 * the large chunks it reached, which cost fewer writes and receive
	 * completions per byte.
	 */
	olen = __atomic_load_n(&rs->send_olen, __ATOMIC_RELAXED);
	while (left) {
		uint32_t xfer;
		int ready;

		ready = rs_wait_sendable(rs, nonblock);
		if (ready < 0) {
			ret = -1;
			break;
		}
		if (!ready)
			continue;
		xfer = rs_next_xfer(rs, &olen, left);
		if (xfer > rs->target_sgl[rs->target_sge].length)
			xfer = rs->target_sgl[rs->target_sge].length;
		ret = rs_write_data(rs, &iov, &off, xfer);
		if (ret)
			break;
		left -= xfer;
	}
	/* What was sent is on its way: a time to repost. */
	rs_repost_batch(rs);
	__atomic_store_n(&rs->send_olen, olen, __ATOMIC_RELAXED);
out:
	rs_side_leave(rs, RS_SIDE_SEND);
	pthread_mutex_unlock(&rs->lock);
	return (ret && left == len) ? ret : (ssize_t)(len - left);
}
