// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Ending a stream connection: rshutdown and rclose's disconnect, the
 * linger bound on the sends still in flight (BUGS.md rclose-unbounded-wait),
 * and iWARP's
 * graceful close.  Split from stream.c, whose waits it uses.
 */
#include <stdlib.h>
#include <string.h>

#include "rs.h"

bool rs_all_sends_done(struct rsocket *rs)
{
	return rs->sent_head == rs->sent_tail || !(rs_state(rs) & RS_CONNECTED);
}

bool rs_can_send_ctrl(struct rsocket *rs)
{
	return rs_ctrl_avail(rs) || !(rs_state(rs) & RS_CONNECTED);
}

/*
 * iWARP runs over TCP, and a TCP socket closed with unread bytes in it
 * sends a reset, which also throws away what it has not sent yet.  When a
 * credit update from the peer crosses our close, the last data we sent can
 * be lost that way (the peer sees ECONNRESET).  So once our DISCONNECT has
 * gone out, keep the QP reading until the peer has ended its side too (its
 * DISCONNECT arrives, its close flushes our QP, or the CM reports it), for
 * RS_IWARP_LINGER_MS at most, or as long as SO_LINGER says when it is set.
 * Our own DISCONNECT's completion already marks us disconnected: only
 * peer_closed says the peer is done (BUGS.md iwarp-close-reset).  rs->lock
 * held.
 */
static void rs_iwarp_linger(struct rsocket *rs, uint64_t close_deadline)
{
	int64_t deadline = (int64_t)close_deadline, left;
	int64_t bound = (int64_t)rs_now_ms() + RS_IWARP_LINGER_MS;
	struct pollfd pfd[2];

	if (!rs->opt.linger_set && deadline > bound)
		deadline = bound;
	for (;;) {
		rs_poll_cq(rs);
		if (rs->peer_closed || (rs_state(rs) & RS_ERROR) ||
		    rs_cm_event_ready(rs))
			return;
		left = deadline - (int64_t)rs_now_ms();
		if (left <= 0)
			return;
		if (rs_arm_cq_once(rs))
			continue;
		pfd[0].fd = rs->comp_channel->fd;
		pfd[1].fd = rs->channel->fd;
		pfd[0].events = pfd[1].events = POLLIN;
		pthread_mutex_unlock(&rs->lock);
		if (poll(pfd, 2, (int)left) > 0 && pfd[0].revents)
			rs_consume_cq_event(rs);
		pthread_mutex_lock(&rs->lock);
	}
}

/*
 * When a shutdown or close stops waiting for its sends (SO_LINGER): a
 * send whose acknowledgement is lost may never complete (rxe does that),
 * and a close must not hang on it as a TCP close never does.  0: now.
 */
static uint64_t rs_linger_deadline(const struct rsocket *rs)
{
	uint64_t ms = rs->opt.linger_set ? (uint64_t)rs->opt.linger_s * 1000
					 : RS_CLOSE_LINGER_MS;

	return rs_now_ms() + ms;
}

int rs_stream_shutdown(struct rsocket *rs, int how)
{
	uint64_t deadline = rs_linger_deadline(rs);
	bool posted = false, timed_out = false;
	uint32_t ctrl;
	int ret = 0;

	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return cma_err(EINVAL);
	if (!(rs_state(rs) & RS_CONNECTED)) {
		if (rs_state(rs) & (RS_DISCONNECTED | RS_ERROR))
			goto disconnect;
		return cma_err(ENOTCONN);
	}
	if (rs_quiesced(rs)) {
		rs_quiesce_close(rs, deadline);
		goto disconnect;
	}

	pthread_mutex_lock(&rs->lock);
	if (how == SHUT_RDWR) {
		ctrl = RS_CTRL_DISCONNECT;
		rs_clear_state(rs, RS_READABLE | RS_WRITABLE);
	} else if (how == SHUT_WR) {
		rs_clear_state(rs, RS_WRITABLE);
		ctrl = (rs_state(rs) & RS_READABLE) ? RS_CTRL_SHUTDOWN
						    : RS_CTRL_DISCONNECT;
	} else {
		rs_clear_state(rs, RS_READABLE);
		if (rs_state(rs) & RS_WRITABLE) {
			pthread_mutex_unlock(&rs->lock);
			return 0;
		}
		ctrl = RS_CTRL_DISCONNECT;
	}
	if (!rs_ctrl_avail(rs)) {
		ret = rs_wait_until(rs, false, rs_can_send_ctrl, deadline);
		timed_out = ret && errno == ETIMEDOUT;
	}
	/* A peer that never spoke learns of the end from the CM alone. */
	if (!ret && (rs_state(rs) & RS_CONNECTED) && rs_ctrl_avail(rs) &&
	    !rs->await_peer) {
		ret = rs_post_ctrl(rs, rs_msg(RS_OP_CTRL, ctrl));
		posted = !ret;
	}
	if (!timed_out && (rs_state(rs) & RS_CONNECTED) &&
	    rs_wait_until(rs, false, rs_all_sends_done, deadline))
		timed_out = errno == ETIMEDOUT;
	if (timed_out) {
		/*
		 * Sends still out after the linger time: tear the connection
		 * down as if our DISCONNECT had gone (the peer may miss the
		 * end of the data, as after a TCP linger timeout).
		 */
		rs_set_state(rs, RS_DISCONNECTED);
		ret = 0;
	} else if (posted && ctrl == RS_CTRL_DISCONNECT && rs->msg_send &&
		   rs->cq) {
		rs_iwarp_linger(rs, deadline);
	}
	pthread_mutex_unlock(&rs->lock);
	if (!(rs_state(rs) & RS_DISCONNECTED))
		return ret;
disconnect:
	/* Flushes the QP, which wakes any thread asleep on the CQ. */
	if (rs->cq)
		ibv_req_notify_cq(rs->cq, 0);
	/* none once a quiesce detached the socket */
	if (rs->cm_id && rdma_disconnect(rs->cm_id) && !rs_follow_creds(rs))
		rdma_disconnect(rs->cm_id);
	return ret;
}
