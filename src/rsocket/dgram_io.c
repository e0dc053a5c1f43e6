// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Datagram rsockets: sending, receiving, waiting, and rpoll readiness.
 *
 * Progress (reading the UDP socket, polling the CQs) happens in whichever
 * call needs it, under rs->lock.  A call that must wait spins for the
 * configured polling time (letting the socket's other threads in between
 * looks), then arms the CQs and sleeps on the socket's epoll set (UDP
 * socket plus CQ channels) without the lock.
 *
 * The set's readiness alone cannot wake a sleeper: another thread's
 * progress may take what it waits for off those fds first (a sender
 * reads the UDP socket, and with it the reply a blocked receiver waits
 * for, as sockperf's under-load client does).  So every change a wait
 * can be waiting for goes through ds_changed(): it counts it in ds_gen
 * and, while a call sleeps, rings ds_bell, which sleepers poll beside
 * the set.  One thread at a time sleeps (wait_lock), and only it drains
 * the bell; the others, queued for their turn, compare ds_gen with what
 * they last looked at and do not sleep if it moved.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "dgram.h"
#include "util/fd_high.h"

static const uint64_t ds_one = 1;

void ds_changed(struct rsocket *rs)
{
	__atomic_store_n(&rs->ds_gen, rs->ds_gen + 1, __ATOMIC_RELEASE);
	rs_ring_pollers(rs);
	if (!rs->ds_sleepers || rs->ds_bell_rung || rs->ds_bell < 0)
		return;
	if (write(rs->ds_bell, &ds_one, sizeof(ds_one)) == sizeof(ds_one))
		rs->ds_bell_rung = true;
}

bool ds_queue(struct rsocket *rs, const struct ds_rmsg *msg)
{
	if (!rs->dmsg || rs->dmsg_cnt >= rs->dmsg_max ||
	    (!msg->qp && rs->dmsg_udp >= DS_UDP_QUEUE)) {
		rs->ds_dropped++;
		return false;
	}
	rs->dmsg[(rs->dmsg_head + rs->dmsg_cnt) % rs->dmsg_max] = *msg;
	rs->dmsg_cnt++;
	if (!msg->qp)
		rs->dmsg_udp++;
	ds_changed(rs);
	return true;
}

/* Drop the oldest queued datagram, giving its buffer back. */
static void ds_dequeue(struct rsocket *rs)
{
	struct ds_rmsg *m = &rs->dmsg[rs->dmsg_head];

	if (m->qp) {
		ds_post_recv(rs, m->qp, m->slot);
	} else {
		free(m->copy);
		rs->dmsg_udp--;
	}
	rs->dmsg_head = (rs->dmsg_head + 1) % rs->dmsg_max;
	rs->dmsg_cnt--;
}

static void ds_progress(struct rsocket *rs)
{
	ds_udp_drain(rs);
	ds_poll_cqs(rs);
}

static bool ds_readable(struct rsocket *rs)
{
	return rs->dmsg_cnt || rs->ds_shut_rd;
}

static bool ds_writable(struct rsocket *rs)
{
	return rs->ds_shut_wr || !rs->dsbuf || rs->dsfree_cnt;
}

/*
 * The bell exists while calls sleep (a socket at rest holds no descriptor
 * for it); under rs->lock.  None (no descriptor left): sleeps come in
 * slices.
 */
static int ds_sleeper_enter(struct rsocket *rs)
{
	if (!rs->ds_sleepers++)
		rs->ds_bell = cma_fd_move_high(
			eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), fcntl, close);
	return rs->ds_bell;
}

/* Under rs->lock and wait_lock: only the one asleep drains the bell. */
static void ds_sleeper_leave(struct rsocket *rs)
{
	uint64_t n;

	if (!--rs->ds_sleepers && rs->ds_bell >= 0) {
		close(rs->ds_bell);
		rs->ds_bell = -1;
	} else if (rs->ds_bell_rung && read(rs->ds_bell, &n, sizeof(n)) < 0) {
		return; /* stays rung: the next sleep ends at once */
	}
	rs->ds_bell_rung = false;
}

/*
 * Sleep until the UDP socket or a CQ has news, another call changes what
 * waits look for (ds_changed; already changed since the caller's last
 * look under this lock: no sleep), or another thread closes the socket
 * (then -1/EBADF).  Drops rs->lock meanwhile.
 */
static int ds_sleep(struct rsocket *rs)
{
	uint32_t seen = rs->ds_gen;
	int bell = ds_sleeper_enter(rs), ret = 0, err;

	pthread_mutex_unlock(&rs->lock);
	pthread_mutex_lock(&rs->wait_lock);
	if (__atomic_load_n(&rs->ds_gen, __ATOMIC_ACQUIRE) == seen)
		ret = rs_sleep_fds_or_close(rs, rs->epfd, bell, POLLIN,
					    bell < 0 ? RS_WAKE_SLICE_MS : -1);
	err = errno; /* EBADF for a close; the rest may overwrite it */
	pthread_mutex_lock(&rs->lock);
	ds_sleeper_leave(rs);
	ds_take_cq_events(rs);
	pthread_mutex_unlock(&rs->wait_lock);
	if (ret < 0)
		return cma_err(err);
	return 0;
}

/* Wait, rs->lock held, until @ready; -1/EAGAIN if @nonblock and not yet. */
static int ds_wait_locked(struct rsocket *rs, bool nonblock,
			  bool (*ready)(struct rsocket *))
{
	struct rs_spin_wait w;
	int ret = 0;

	ds_progress(rs);
	if (ready(rs))
		return 0;
	if (nonblock)
		return cma_err(EAGAIN);
	rs_spin_begin(&rs->spin, &w);
	for (;;) {
		if (rs_spin_more(&w)) {
			/* Let the socket's other threads in meanwhile. */
			pthread_mutex_unlock(&rs->lock);
			pthread_mutex_lock(&rs->lock);
		} else {
			ds_arm_cqs(rs);
			/* What completed before arming raises no event. */
			ds_progress(rs);
			if (ready(rs))
				break;
			rs_spin_sleeping(&w);
			ret = ds_sleep(rs);
			if (ret)
				break;
		}
		ds_progress(rs);
		if (ready(rs))
			break;
	}
	rs_spin_end(&rs->spin, &w);
	return ret;
}

/* --- receiving ----------------------------------------------------------- */

static void ds_copy_src(struct sockaddr *dst, socklen_t *len,
			const union rs_sockaddr *src)
{
	socklen_t size = src->sa.sa_family == AF_INET
				 ? sizeof(struct sockaddr_in)
				 : sizeof(struct sockaddr_in6);

	memcpy(dst, src, *len < size ? *len : size);
	*len = size;
}

static size_t ds_scatter(const struct iovec *iov, size_t iovcnt,
			 const uint8_t *data, size_t len)
{
	size_t i, n, done = 0;

	for (i = 0; i < iovcnt && done < len; i++) {
		n = iov[i].iov_len < len - done ? iov[i].iov_len : len - done;
		memcpy(iov[i].iov_base, data + done, n);
		done += n;
	}
	return done;
}

static const uint8_t *ds_payload(const struct ds_rmsg *m)
{
	if (!m->qp)
		return m->copy;
	return m->qp->rbuf + (size_t)m->slot * DS_RSLOT_SIZE + m->offset;
}

static ssize_t ds_recv_iov(struct rsocket *rs, const struct iovec *iov,
			   size_t iovcnt, int flags, struct sockaddr *src,
			   socklen_t *srclen, int *msg_flags)
{
	const struct ds_rmsg *m;
	uint32_t length;
	size_t copied;

	pthread_mutex_lock(&rs->lock);
	if (ds_wait_locked(rs, rs_nonblocking(rs, flags), ds_readable)) {
		pthread_mutex_unlock(&rs->lock);
		return -1;
	}
	if (!rs->dmsg_cnt) { /* shut down for reading */
		pthread_mutex_unlock(&rs->lock);
		return 0;
	}
	m = &rs->dmsg[rs->dmsg_head];
	length = m->length;
	copied = ds_scatter(iov, iovcnt, ds_payload(m), length);
	if (src && srclen)
		ds_copy_src(src, srclen, &m->src);
	if (msg_flags && copied < length)
		*msg_flags |= MSG_TRUNC;
	if (!(flags & MSG_PEEK))
		ds_dequeue(rs);
	pthread_mutex_unlock(&rs->lock);
	/* Like UDP: MSG_TRUNC asks for the datagram's real length. */
	return (flags & MSG_TRUNC) ? (ssize_t)length : (ssize_t)copied;
}

ssize_t ds_recvfrom(struct rsocket *rs, void *buf, size_t len, int flags,
		    struct sockaddr *src, socklen_t *srclen)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};

	return ds_recv_iov(rs, &iov, 1, flags, src, srclen, NULL);
}

ssize_t ds_recvmsg(struct rsocket *rs, struct msghdr *msg, int flags)
{
	return ds_recv_iov(
		rs, msg->msg_iov, msg->msg_iovlen, flags, msg->msg_name,
		msg->msg_name ? &msg->msg_namelen : NULL, &msg->msg_flags);
}

/* --- sending ------------------------------------------------------------- */

static ssize_t ds_ud_send(struct rsocket *rs, struct ds_dest *dest,
			  const void *buf, size_t len, bool nonblock)
{
	struct ds_qp *qp = dest->qp;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint32_t slot;
	uint8_t *p;
	int ret;

	if (ds_wait_locked(rs, nonblock, ds_writable))
		return -1;
	if (rs->ds_shut_wr)
		return cma_err(EPIPE);
	/* The wait read the UDP socket: the peer may be in doubt now. */
	if (dest->qpn_doubt)
		return ds_udp_send(rs, dest, RS_OP_DATA, buf, len);
	slot = rs->dsfree[--rs->dsfree_cnt];
	p = rs->dsbuf + (size_t)slot * DS_MSG_SIZE;
	memcpy(p, &qp->hdr, qp->hdr_len);
	memcpy(p + qp->hdr_len, buf, len);
	sge.addr = (uintptr_t)p;
	sge.length = qp->hdr_len + (uint32_t)len;
	sge.lkey = qp->smr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (sge.length <= qp->inline_size)
		wr.send_flags |= IBV_SEND_INLINE;
	wr.wr.ud.ah = dest->ah;
	wr.wr.ud.remote_qpn = dest->qpn;
	wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
	ret = ibv_post_send(qp->cm_id->qp, &wr, &bad);
	if (ret) {
		rs->dsfree[rs->dsfree_cnt++] = slot;
		return cma_err(ret);
	}
	/* Its address handle is in use until the send completes. */
	rs->dsslot_dest[slot] = dest;
	ds_dest_pin(dest);
	return (ssize_t)len;
}

/* Send to @dest, pinned by the caller: the lock may drop meanwhile. */
static ssize_t ds_send_to_dest(struct rsocket *rs, struct ds_dest *dest,
			       const void *buf, size_t len, int flags)
{
	if (len + dest->qp->hdr_len > dest->qp->max_msg)
		return cma_err(EMSGSIZE);
	/* The peer's answer to an earlier datagram may be waiting. */
	if (!dest->ah)
		ds_udp_drain(rs);
	/* Drops rs->lock while it resolves; @dest is pinned. */
	if (!dest->ah)
		ds_dest_resolve(rs, dest);
	/*
	 * Unresolved, being resolved by another thread, or its QP number in
	 * doubt (struct ds_dest): over UDP.
	 */
	if (!dest->ah || dest->resolving || dest->qpn_doubt)
		return ds_udp_send(rs, dest, RS_OP_DATA, buf, len);
	return ds_ud_send(rs, dest, buf, len, rs_nonblocking(rs, flags));
}

static ssize_t ds_send_locked(struct rsocket *rs, const void *buf, size_t len,
			      int flags, const struct sockaddr *dst,
			      socklen_t dstlen)
{
	struct ds_dest *dest;
	ssize_t ret;

	if (rs->ds_shut_wr)
		return cma_err(EPIPE);
	if (dst) {
		if (ds_dest_get(rs, dst, dstlen, &dest))
			return -1;
	} else if (!rs->conn_dest) {
		return cma_err(EDESTADDRREQ);
	} else {
		dest = rs->conn_dest;
	}
	ds_dest_pin(dest);
	ret = ds_send_to_dest(rs, dest, buf, len, flags);
	ds_dest_unpin(dest);
	return ret;
}

ssize_t ds_sendto(struct rsocket *rs, const void *buf, size_t len, int flags,
		  const struct sockaddr *dst, socklen_t dstlen)
{
	ssize_t ret;

	pthread_mutex_lock(&rs->lock);
	ret = ds_send_locked(rs, buf, len, flags, dst, dstlen);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

/* --- rpoll --------------------------------------------------------------- */

short ds_poll_events(struct rsocket *rs, short events)
{
	short revents = 0;

	pthread_mutex_lock(&rs->lock);
	ds_progress(rs);
	if ((events & POLLIN) && ds_readable(rs))
		revents |= POLLIN;
	if ((events & POLLOUT) && ds_writable(rs))
		revents |= POLLOUT;
	pthread_mutex_unlock(&rs->lock);
	return revents;
}

int ds_wait_fd(struct rsocket *rs)
{
	pthread_mutex_lock(&rs->lock);
	ds_arm_cqs(rs);
	pthread_mutex_unlock(&rs->lock);
	return rs->epfd;
}

void ds_consume_events(struct rsocket *rs)
{
	pthread_mutex_lock(&rs->lock);
	ds_take_cq_events(rs);
	pthread_mutex_unlock(&rs->lock);
}
