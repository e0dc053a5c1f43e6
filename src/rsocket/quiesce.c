// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * RDMA_QUIESCE: ending a stream rsocket's RDMA data path in both directions
 * with the peer's agreement, so that its program can carry the byte stream
 * on over another transport.  librspreload's fork mode moves a connection
 * back to the TCP connection it came from this way, before an exec that
 * the rsocket cannot cross (src/preload/moveback.c).
 *
 * Each end's QUIESCE control message is its last RDMA message: every byte
 * it wrote before arrives before it (one RC QP: in order).  The end that
 * quiesces stops writing, posts its QUIESCE and waits for the peer's.  The
 * peer's library answers with its own when it sees one, at its next look
 * at the completion queue (whenever its program reads, writes or polls the
 * socket); from then on its writes fail with EPIPE and its reads return
 * what came before, then end-of-file.  Neither end sends a byte over RDMA
 * after its QUIESCE, so where each direction's RDMA bytes end is agreed
 * without a clock: the rest of the stream goes over the other transport,
 * which each end reads only after the RDMA bytes.  The caller's bound only
 * limits how long it waits for the answer; nothing else is timed.
 *
 * Once the peer's QUIESCE (or its DISCONNECT: it closed) has come and our
 * own sends have completed, the quiescing end keeps only the bytes its
 * program has not read: it copies them out of the registered ring,
 * disconnects and frees every RDMA resource (DETACHED).  The socket is
 * then ordinary memory, safe across fork() and credential changes: reads
 * return the copied bytes, then end-of-file.
 *
 * rdma-core's rsockets and earlier builds do not know the message: only a
 * peer that advertised RS_CONN_FLAG_QUIESCE in its connection data is
 * asked (EOPNOTSUPP otherwise).
 */
#include <stdlib.h>
#include <string.h>

#include "rs.h"

void rs_quiesce_heard(struct rsocket *rs)
{
	rs->quiesce |= RS_QSC_HEARD;
	/* Reads end after what came before it; ours go elsewhere now. */
	rs_clear_state(rs, RS_READABLE | RS_WRITABLE);
}

void rs_quiesce_answer(struct rsocket *rs)
{
	if ((rs->quiesce & (RS_QSC_HEARD | RS_QSC_SENT)) != RS_QSC_HEARD ||
	    !(rs_state(rs) & RS_CONNECTED) || !rs_ctrl_avail(rs))
		return;
	if (!rs_post_ctrl(rs, rs_msg(RS_OP_CTRL, RS_CTRL_QUIESCE)))
		rs->quiesce |= RS_QSC_SENT;
}

int rs_quiesced(struct rsocket *rs)
{
	int q = 0;

	if (rs->type != SOCK_STREAM)
		return 0;
	pthread_mutex_lock(&rs->lock);
	if (rs->quiesce & RS_QSC_SENT)
		q |= RDMA_QUIESCE_OURS;
	if (rs->quiesce & (RS_QSC_HEARD | RS_QSC_DETACHED))
		q |= RDMA_QUIESCE_PEERS;
	pthread_mutex_unlock(&rs->lock);
	return q;
}

/* Nothing more comes from the peer: its QUIESCE, or its end, came. */
static bool rs_peer_data_ended(struct rsocket *rs)
{
	return (rs->quiesce & RS_QSC_HEARD) || rs->peer_closed ||
	       !(rs_state(rs) & RS_CONNECTED);
}

/*
 * Whether the peer's data ended where it said: its QUIESCE, or its
 * DISCONNECT message (also after its last byte).  A flushed QP says
 * nothing about what was lost.
 */
static bool rs_peer_data_complete(struct rsocket *rs)
{
	return (rs->quiesce & RS_QSC_HEARD) ||
	       (rs->peer_closed && !(rs_state(rs) & RS_ERROR));
}

/* Our QUIESCE out, the peer's in, our sends done.  rs->lock held. */
static int rs_quiesce_locked(struct rsocket *rs, uint64_t deadline)
{
	rs_clear_state(rs, RS_WRITABLE);
	if (!(rs->quiesce & RS_QSC_SENT) && (rs_state(rs) & RS_CONNECTED)) {
		if (!rs_ctrl_avail(rs) &&
		    rs_wait_until(rs, false, rs_can_send_ctrl, deadline))
			return -1;
		if ((rs_state(rs) & RS_CONNECTED) &&
		    !(rs->quiesce & RS_QSC_SENT)) {
			if (rs_post_ctrl(rs,
					 rs_msg(RS_OP_CTRL, RS_CTRL_QUIESCE)))
				return -1;
			rs->quiesce |= RS_QSC_SENT;
		}
	}
	if (rs_wait_until(rs, false, rs_peer_data_ended, deadline))
		return -1;
	if (!rs_peer_data_complete(rs))
		return cma_err(rs->err ? rs->err : ECONNRESET);
	return rs_wait_until(rs, false, rs_all_sends_done, deadline);
}

/*
 * Keep the bytes not read yet in ordinary memory and free every RDMA
 * resource.  Both sides owned (no reader, no writer), rs->lock not:
 * the keepalive and the CM watch take theirs first.
 */
static int rs_detach(struct rsocket *rs)
{
	uint8_t *copy = malloc(rs->rbuf_size ? rs->rbuf_size : 1);
	struct rs_rmsg *rmsg;

	if (!copy)
		return cma_err(ENOMEM);
	rs_ka_stop(rs);
	rs_peer_unwatch(rs);
	if (rs->cm_id)
		rdma_disconnect(rs->cm_id);
	pthread_mutex_lock(&rs->lock);
	memcpy(copy, rs->rbuf, rs->rbuf_size);
	rmsg = rs->rmsg;
	rs->rmsg = NULL;
	rs_free_iomaps(rs);
	/* An rpoll may be taking an event of the CQ (rs_take_cq_event). */
	pthread_mutex_lock(&rs->wait_lock);
	rs_destroy_ep(rs);
	pthread_mutex_unlock(&rs->wait_lock);
	rs->target_sgl = NULL; /* in target_buf, freed */
	rs->target_iomap = NULL;
	rs->rbuf = copy;
	rs->rmsg = rmsg;
	rs->quiesce |= RS_QSC_DETACHED | RS_QSC_SENT;
	/* What a flushed receive polled meanwhile said is not news. */
	rs->err = 0;
	rs_set_state(rs, (rs->quiesce & RS_QSC_HEARD) ? RS_CONNECTED
						      : RS_DISCONNECTED);
	pthread_mutex_unlock(&rs->lock);
	if (rs->cm_id)
		rdma_destroy_id(rs->cm_id);
	if (rs->channel)
		rdma_destroy_event_channel(rs->channel);
	rs->cm_id = NULL;
	rs->channel = NULL;
	return 0;
}

/*
 * One caller at a time, the detach included: a second caller (a thread
 * that read the end while another forks) waits for the first, at most
 * until @deadline_ms (0: no bound), and then finds the result.  Two
 * callers in the exchange at once would let one free the CQ the other
 * sleeps on.  rs->lock held.
 */
static int rs_quiesce_enter(struct rsocket *rs, uint64_t deadline_ms)
{
	while (rs->quiesce_busy) {
		if (rs_wait_changed(rs, deadline_ms))
			return -1;
	}
	rs->quiesce_busy = true;
	return 0;
}

/* rs->lock held. */
static void rs_quiesce_leave(struct rsocket *rs)
{
	rs->quiesce_busy = false;
	pthread_cond_broadcast(&rs->changed);
}

int rs_quiesce(struct rsocket *rs, int timeout_ms)
{
	uint64_t deadline =
		timeout_ms < 0 ? 0 : rs_now_ms() + (uint64_t)timeout_ms;
	int ret;

	if (rs->type != SOCK_STREAM)
		return cma_err(ENOTSUP);
	/*
	 * The exchange takes rs->lock alone, which a reader or writer asleep
	 * in this socket lets go: waiting for their locks here would wait
	 * for a reader that waits for the peer, which may be waiting for
	 * this very thread (a threaded server forking while a thread reads).
	 * No byte of ours can follow the QUIESCE: every send posts under
	 * rs->lock only while the socket is writable, which the exchange
	 * ends first.
	 */
	pthread_mutex_lock(&rs->lock);
	if (rs_quiesce_enter(rs, deadline)) {
		pthread_mutex_unlock(&rs->lock);
		return -1;
	}
	if (rs->quiesce & RS_QSC_DETACHED)
		ret = 0;
	else if (!(rs_state(rs) & RS_CONNECTED) && !rs->quiesce)
		ret = cma_err(ENOTCONN);
	else if (!rs->peer_can_quiesce)
		ret = cma_err(EOPNOTSUPP);
	else
		ret = rs_quiesce_locked(rs, deadline) ? -1 : 1;
	if (ret <= 0) {
		rs_quiesce_leave(rs);
		pthread_mutex_unlock(&rs->lock);
		return ret;
	}
	/*
	 * The detach frees what readers and writers use, so it waits for
	 * them; with nothing left to read or write they return at their
	 * next look at the socket, which the exchange's own completions
	 * wake them for.
	 */
	rs_side_enter(rs, RS_SIDE_SEND | RS_SIDE_RECV);
	pthread_mutex_unlock(&rs->lock);
	ret = rs_detach(rs);
	pthread_mutex_lock(&rs->lock);
	rs_side_leave(rs, RS_SIDE_SEND | RS_SIDE_RECV);
	rs_quiesce_leave(rs);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

void rs_quiesce_close(struct rsocket *rs, uint64_t deadline_ms)
{
	pthread_mutex_lock(&rs->lock);
	if (rs->cq && (rs_state(rs) & RS_CONNECTED)) {
		/* An answer still due is our last message, not a DISCONNECT. */
		if ((rs->quiesce & RS_QSC_HEARD) &&
		    !(rs->quiesce & RS_QSC_SENT) && !rs_ctrl_avail(rs))
			rs_wait_until(rs, false, rs_can_send_ctrl, deadline_ms);
		rs_quiesce_answer(rs);
		rs_wait_until(rs, false, rs_all_sends_done, deadline_ms);
	}
	rs_set_state(rs, RS_DISCONNECTED);
	pthread_mutex_unlock(&rs->lock);
}
