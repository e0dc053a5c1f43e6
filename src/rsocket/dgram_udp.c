// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Datagram rsockets: the UDP resolver.
 *
 * A sender that does not know the peer's QP number sends the datagram over
 * the rsockets' UDP sockets instead, behind struct ds_wire_udp_hdr carrying
 * its own QP number (op RS_OP_DATA).  The receiver queues the payload as if
 * it had come over its QP, answers with its QP number (op RS_OP_CTRL, no
 * payload) and resolves an address handle to the sender; the answer lets
 * the sender do the same, and later datagrams take the UD QPs both ways.
 *
 * Everything read here comes from the network: ds_udp_msg_parse() checks it
 * and anything malformed is dropped and counted (rs->ds_dropped).  Its
 * source address and port are the kernel's, but anyone able to spoof them
 * can send it: what that may change is said at struct ds_dest.
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "dgram.h"

/* Messages read per call, so that a flood cannot stall the caller. */
#define DS_UDP_BATCH 32

/* sendmsg; a blocking rsocket waits for room in the UDP send buffer. */
static ssize_t ds_udp_sendmsg(struct rsocket *rs, const struct msghdr *msg)
{
	ssize_t ret;

	for (;;) {
		ret = sendmsg(rs->udp_sock, msg, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (ret >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK) ||
		    (rs->fd_flags & O_NONBLOCK))
			return ret;
		if (rs_sleep_fd_or_close(rs, rs->udp_sock, POLLOUT, -1) < 0)
			return -1;
	}
}

ssize_t ds_udp_send(struct rsocket *rs, struct ds_dest *dest, uint8_t op,
		    const void *buf, size_t len)
{
	struct ds_wire_udp_hdr hdr;
	struct iovec iov[2];
	struct msghdr msg;
	size_t hlen;
	ssize_t ret;

	hlen = ds_udp_hdr_encode(&hdr, op, dest->qp->cm_id->qp->qp_num,
				 &dest->qp->src);
	iov[0].iov_base = &hdr;
	iov[0].iov_len = hlen;
	iov[1].iov_base = (void *)buf;
	iov[1].iov_len = len;
	memset(&msg, 0, sizeof(msg));
	msg.msg_name = &dest->addr;
	msg.msg_namelen = dest->addrlen;
	msg.msg_iov = iov;
	msg.msg_iovlen = len ? 2 : 1;
	ret = ds_udp_sendmsg(rs, &msg);
	return ret < 0 ? -1 : ret - (ssize_t)hlen;
}

/* Queue the payload of a datagram that came over UDP. */
static void ds_udp_deliver(struct rsocket *rs, const uint8_t *data,
			   uint32_t len, const union rs_sockaddr *from)
{
	struct ds_rmsg r;

	memset(&r, 0, sizeof(r));
	r.copy = malloc(len ? len : 1);
	if (!r.copy) {
		rs->ds_dropped++;
		return;
	}
	memcpy(r.copy, data, len);
	r.length = len;
	r.src = *from;
	if (!ds_queue(rs, &r))
		free(r.copy);
}

static void ds_udp_handle(struct rsocket *rs, const uint8_t *buf, size_t len,
			  const union rs_sockaddr *from, socklen_t fromlen)
{
	struct ds_udp_msg m;
	struct ds_dest *dest;

	if (ds_udp_msg_parse(buf, len, from->sa.sa_family, &m) ||
	    ds_dest_get(rs, &from->sa, fromlen, &dest)) {
		rs->ds_dropped++;
		return;
	}
	/* The answer lets the peer send over its QP. */
	if (m.op == RS_OP_DATA)
		ds_udp_send(rs, dest, RS_OP_CTRL, NULL, 0);
	/*
	 * Our address handle to the peer is resolved by our first send to
	 * it (ds_dest_resolve), not here: a datagram from a spoofed source
	 * costs a bounded destination, no resolution.  Nor does it move a
	 * known peer to another QP number (see struct ds_dest).
	 */
	ds_dest_claim_qpn(rs, dest, m.qpn);
	if (m.op == RS_OP_DATA && !rs->ds_shut_rd)
		ds_udp_deliver(rs, buf + m.offset, m.length, from);
}

void ds_udp_drain(struct rsocket *rs)
{
	/* Room for the largest valid message and one byte to spot more. */
	uint8_t buf[DS_UDP_IPV6_HDR_LEN + DS_MSG_SIZE + 1];
	union rs_sockaddr from;
	socklen_t fromlen;
	ssize_t n;
	int i;

	for (i = 0; i < DS_UDP_BATCH; i++) {
		fromlen = sizeof(from);
		n = recvfrom(rs->udp_sock, buf, sizeof(buf),
			     MSG_DONTWAIT | MSG_TRUNC, &from.sa, &fromlen);
		if (n < 0)
			return;
		if ((size_t)n > sizeof(buf) || fromlen > sizeof(from)) {
			rs->ds_dropped++;
			continue;
		}
		ds_udp_handle(rs, buf, (size_t)n, &from, fromlen);
	}
}
