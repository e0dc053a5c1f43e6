// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// FUZZ_SOURCES: src/rsocket/dgram_qp.c src/rsocket/dgram_io.c src/rsocket/dgram_udp.c src/rsocket/dgram_dest.c src/rsocket/wire.c
/*
 * A datagram rsocket's receive and send paths against hostile peers: what
 * its UD QP receives (ds_poll_cqs -> ds_recv_done: any status, byte
 * count, source QP and bytes in the receive slot, a header naming one of
 * four peers or anything), what its UDP socket receives (data and replies
 * from the four peers, any QP number, now and then from another port),
 * the completions of its sends, and the application's non-blocking
 * rrecvfrom / rrecvmsg (short buffers, MSG_PEEK, MSG_TRUNC), rsendto (to
 * a peer, or to the rconnect peer), rpoll readiness and rshutdown.
 *
 * The socket is the library's (dgram_qp.c, dgram_io.c, dgram_udp.c,
 * dgram_dest.c); its UDP socket, the rdma_cm ids, the device, the QP and
 * CQ are the harness's: the UDP socket's recvfrom and sendmsg are
 * interposed by descriptor, verbs' inline calls go through the context's
 * ops, the exported ones are defined here.  The device completes only
 * what was posted, in order, as hardware does (a receive completes with
 * no more bytes than its buffer holds, never flushed: the QP lives).
 *
 * Checked after every operation: each receive slot is either posted on
 * the device or holds a queued datagram, exactly once; queued UDP copies
 * are counted right and bounded; every send slot is free or on the
 * device; the count of destinations in doubt of their QP number is
 * exact.  Checked on every UD send: its one SGE is read in full and fits
 * the port's MTU, its address handle is a destination's whose QP number
 * is not in doubt, and it goes to that QP number with the rsockets' Q_Key.
 * A receive never returns more than asked (but with MSG_TRUNC) and names
 * a sender of the socket's family.  Destroying the socket leaves no QP,
 * CQ, id, address handle or registration (and LeakSanitizer no memory).
 *
 * Input: 4 header bytes (flags: bit 0 IPv6, bit 1 RoCE, bit 2 peers'
 * addresses do not resolve, bits 3-5 the port MTU, bits 6-7 the
 * destination bound less one; rq_size; sq_size; the device's max_qp_wr),
 * then operations: one byte (the operation, mod 8) and its arguments.
 */
#include <config.h>

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "rsocket/dgram.h"
#include "fuzz_input.h"
#include "fuzz_verbs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_UDP_FD 987 /* never a real descriptor of this process */
#define NPEERS 4
#define MAX_QPS 1 /* a socket bound to one address has one QP */
#define UDP_PENDING 8
#define QPN_BASE 0x100 /* peer i's QP is QPN_BASE + i */

/* --- the device ------------------------------------------------------------ */

struct posted_recv {
	uint64_t wr_id;
	uint8_t *addr;
	uint32_t length;
};

static struct {
	uint8_t flags;
	int max_qp_wr;
	struct ibv_device dev;
	struct ibv_context ctx;
	struct ibv_pd pd;
	struct ibv_qp qp;
	struct ibv_cq cq;
	struct ibv_comp_channel chan;
	struct rdma_cm_id qp_id, res_id;
	bool qp_id_used, res_id_used, qp_made, cq_made, chan_made;
	struct ibv_sa_path_rec path;
	/* receives posted, in order */
	struct posted_recv recvs[64];
	uint32_t nrecvs;
	/* sends posted, in order */
	uint64_t sends[64];
	uint32_t nsends;
	/* completions not yet polled */
	struct ibv_wc wc[128];
	uint32_t nwc;
	unsigned long sink;
	/* UDP datagrams waiting for the socket's next drain */
	uint8_t udp[UDP_PENDING][DS_UDP_IPV6_HDR_LEN + DS_MSG_SIZE + 8];
	size_t udp_len[UDP_PENDING];
	union rs_sockaddr udp_from[UDP_PENDING];
	uint32_t udp_head, udp_cnt;
	struct rsocket *rs;
} h;

/* Set once: the channel's descriptor (the socket's epoll set watches it). */
static int chan_fd = -1, ep_fd = -1;

static void queue_wc(const struct ibv_wc *wc)
{
	if (h.nwc < sizeof(h.wc) / sizeof(h.wc[0]))
		h.wc[h.nwc++] = *wc;
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int i;

	for (i = 0; i < n && (uint32_t)i < h.nwc; i++)
		wc[i] = h.wc[i];
	memmove(h.wc, h.wc + i, (h.nwc - (uint32_t)i) * sizeof(h.wc[0]));
	h.nwc -= (uint32_t)i;
	return i;
}

static int fake_req_notify(struct ibv_cq *cq, int solicited)
{
	return 0;
}

static struct ds_dest *dest_of_ah(struct ibv_ah *ah)
{
	struct ds_dest *d;

	for (d = cma_list_first(&h.rs->dest_lru, struct ds_dest, lru); d;
	     d = cma_list_next(d, lru))
		if (d->ah == ah)
			return d;
	return NULL;
}

static uint8_t wire_copy[DS_MSG_SIZE];

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad)
{
	const struct ds_qp *dqp = qp->qp_context;
	struct ds_dest *dest;

	for (; wr; wr = wr->next) {
		if (wr->num_sge != 1 || !wr->sg_list ||
		    wr->opcode != IBV_WR_SEND || h.nsends == h.rs->sq_size ||
		    h.nsends == sizeof(h.sends) / sizeof(h.sends[0]))
			abort(); /* not a datagram, or more than the queue */
		if (wr->sg_list[0].length > dqp->max_msg)
			abort(); /* more than one packet carries */
		memcpy(wire_copy, (const void *)(uintptr_t)wr->sg_list[0].addr,
		       wr->sg_list[0].length);
		h.sink += wire_copy[0];
		dest = dest_of_ah(wr->wr.ud.ah);
		if (!dest || dest->qpn_doubt || !dest->qpn_known ||
		    wr->wr.ud.remote_qpn != dest->qpn ||
		    wr->wr.ud.remote_qkey != RDMA_UDP_QKEY)
			abort(); /* a datagram to a QP the peer did not prove */
		h.sends[h.nsends++] = wr->wr_id;
	}
	return 0;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad)
{
	struct posted_recv *r;

	for (; wr; wr = wr->next) {
		if (wr->num_sge != 1 || h.nrecvs == h.rs->rq_size)
			abort(); /* more receives than the queue holds */
		r = &h.recvs[h.nrecvs++];
		r->wr_id = wr->wr_id;
		r->addr = (uint8_t *)(uintptr_t)wr->sg_list[0].addr;
		r->length = wr->sg_list[0].length;
	}
	return 0;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->max_qp_wr = h.max_qp_wr;
	return 0;
}

#undef ibv_query_port
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr)
{
	struct ibv_port_attr *attr = (struct ibv_port_attr *)port_attr;

	memset(attr, 0, sizeof(*attr));
	attr->gid_tbl_len = 4;
	attr->active_mtu = (enum ibv_mtu)(IBV_MTU_256 + (h.flags >> 3) % 5);
	attr->link_layer = h.flags & 2 ? IBV_LINK_LAYER_ETHERNET
				       : IBV_LINK_LAYER_INFINIBAND;
	return 0;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
		      uint32_t gid_index, struct ibv_gid_entry *entry,
		      uint32_t flags, size_t entry_size)
{
	memset(entry, 0, entry_size);
	entry->gid_index = gid_index;
	entry->gid_type = IBV_GID_TYPE_ROCE_V2;
	return 0;
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	if (h.chan_made)
		abort(); /* one QP, one channel */
	h.chan_made = true;
	h.chan.context = context;
	h.chan.fd = chan_fd;
	return &h.chan;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	h.chan_made = false;
	return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
			     void *cq_context, struct ibv_comp_channel *channel,
			     int comp_vector)
{
	h.cq_made = true;
	h.cq.context = context;
	h.cq.cq_context = cq_context;
	h.cq.channel = channel;
	h.cq.cqe = cqe;
	return &h.cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	h.cq_made = false;
	return 0;
}

/* --- the rdma_cm: the QP's id and the resolutions' ------------------------- */

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
		   void *context, enum rdma_port_space ps)
{
	/* The QP's id names its ds_qp; a resolution's names nothing. */
	struct rdma_cm_id *made = context ? &h.qp_id : &h.res_id;
	bool *used = context ? &h.qp_id_used : &h.res_id_used;

	if (*used || ps != RDMA_PS_UDP)
		abort();
	*used = true;
	memset(made, 0, sizeof(*made));
	made->context = context;
	made->verbs = &h.ctx;
	made->pd = &h.pd;
	made->port_num = 1;
	*id = made;
	return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	if (id == &h.qp_id)
		h.qp_id_used = false;
	else if (id == &h.res_id)
		h.res_id_used = false;
	else
		abort();
	return 0;
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	return 0;
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src,
		      struct sockaddr *dst, int timeout_ms)
{
	if (h.flags & 4) {
		errno = EHOSTUNREACH;
		return -1;
	}
	return 0;
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	memset(&h.path, 0, sizeof(h.path));
	h.path.dlid = htons(7);
	h.path.hop_limit = 1;
	id->route.path_rec = &h.path;
	id->route.num_paths = 1;
	return 0;
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *attr)
{
	if (h.qp_made || attr->qp_type != IBV_QPT_UD ||
	    attr->cap.max_recv_wr != h.rs->rq_size ||
	    attr->cap.max_send_wr != h.rs->sq_size ||
	    h.rs->rq_size > sizeof(h.recvs) / sizeof(h.recvs[0]))
		abort();
	h.qp_made = true;
	h.qp.context = id->verbs;
	h.qp.qp_context = attr->qp_context;
	h.qp.qp_type = IBV_QPT_UD;
	h.qp.qp_num = 0x4711;
	attr->cap.max_inline_data = 64;
	id->qp = &h.qp;
	return 0;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	h.qp_made = false;
	h.nrecvs = 0;
	h.nsends = 0;
	id->qp = NULL;
}

/* --- the rest of the rsocket, to its interface ------------------------------ */

struct rs_defaults rs_def;

/* rpoll's bells (table.c): no rpoll sleeps on the harness's socket. */
void rs_ring_pollers(struct rsocket *rs)
{
	(void)rs;
}

/* Only blocking calls sleep or spin: every call here is non-blocking. */
int rs_sleep_fd_or_close(struct rsocket *rs, int fd, short events, int timeout)
{
	abort();
}

int rs_sleep_fds_or_close(struct rsocket *rs, int fd, int fd2, short events,
			  int timeout)
{
	abort();
}

void rs_spin_begin(const struct rs_spin *spin, struct rs_spin_wait *w)
{
	abort();
}

bool rs_spin_more(struct rs_spin_wait *w)
{
	abort();
}

void rs_spin_sleeping(struct rs_spin_wait *w)
{
	abort();
}

void rs_spin_end(struct rs_spin *spin, const struct rs_spin_wait *w)
{
	abort();
}

int ds_autobind(struct rsocket *rs)
{
	return 0;
}

/* Bound to one address (192.0.2.100 or 2001:db8::100), port 7471. */
int ds_local_addr(struct rsocket *rs, union rs_sockaddr *addr)
{
	memset(addr, 0, sizeof(*addr));
	if (rs->domain == AF_INET6) {
		addr->sin6.sin6_family = AF_INET6;
		addr->sin6.sin6_port = htons(7471);
		addr->sin6.sin6_addr.s6_addr[0] = 0x20;
		addr->sin6.sin6_addr.s6_addr[1] = 0x01;
		addr->sin6.sin6_addr.s6_addr[2] = 0x0d;
		addr->sin6.sin6_addr.s6_addr[3] = 0xb8;
		addr->sin6.sin6_addr.s6_addr[15] = 100;
	} else {
		addr->sin.sin_family = AF_INET;
		addr->sin.sin_port = htons(7471);
		addr->sin.sin_addr.s_addr = htonl(0xc0000264);
	}
	return 0;
}

/* --- the UDP socket ---------------------------------------------------------- */

ssize_t recvfrom(int fd, void *buf, size_t len, int flags,
		 struct sockaddr *from, socklen_t *fromlen)
{
	uint32_t i = h.udp_head;
	size_t n, copy;
	socklen_t flen;

	if (fd != FUZZ_UDP_FD || !(flags & MSG_DONTWAIT))
		abort(); /* the library reads only its UDP socket, non-blocking */
	if (!h.udp_cnt) {
		errno = EAGAIN;
		return -1;
	}
	h.udp_head = (h.udp_head + 1) % UDP_PENDING;
	h.udp_cnt--;
	n = h.udp_len[i];
	copy = n < len ? n : len;
	memcpy(buf, h.udp[i], copy);
	flen = h.udp_from[i].sa.sa_family == AF_INET6
		       ? sizeof(struct sockaddr_in6)
		       : sizeof(struct sockaddr_in);
	memcpy(from, &h.udp_from[i], flen < *fromlen ? flen : *fromlen);
	*fromlen = flen;
	return (flags & MSG_TRUNC) ? (ssize_t)n : (ssize_t)copy;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	const struct sockaddr *to = msg->msg_name;
	size_t i, total = 0;

	if (fd != FUZZ_UDP_FD || !to || to->sa_family != h.rs->domain)
		abort();
	for (i = 0; i < msg->msg_iovlen; i++) {
		if (msg->msg_iov[i].iov_len > sizeof(wire_copy))
			abort();
		memcpy(wire_copy, msg->msg_iov[i].iov_base,
		       msg->msg_iov[i].iov_len);
		total += msg->msg_iov[i].iov_len;
	}
	return (ssize_t)total;
}

/* --- the peers ------------------------------------------------------------------ */

static union rs_sockaddr peer_addr(unsigned int i, bool other_port)
{
	union rs_sockaddr a;

	memset(&a, 0, sizeof(a));
	if (h.rs->domain == AF_INET6) {
		a.sin6.sin6_family = AF_INET6;
		a.sin6.sin6_port = htons((uint16_t)(7000 + i + other_port));
		a.sin6.sin6_addr.s6_addr[0] = 0x20;
		a.sin6.sin6_addr.s6_addr[1] = 0x01;
		a.sin6.sin6_addr.s6_addr[2] = 0x0d;
		a.sin6.sin6_addr.s6_addr[3] = 0xb8;
		a.sin6.sin6_addr.s6_addr[15] = (uint8_t)(1 + i);
	} else {
		a.sin.sin_family = AF_INET;
		a.sin.sin_port = htons((uint16_t)(7000 + i + other_port));
		a.sin.sin_addr.s_addr = htonl(0xc0000201 + i);
	}
	return a;
}

/* A QP number: a peer's own (below 0x80), else 3 bytes of the input's. */
static uint32_t take_qpn(void)
{
	uint8_t sel = take8(), b[3] = {0, 0, 0};

	if (sel < 0x80)
		return QPN_BASE + sel % NPEERS;
	take(b, 3);
	return (uint32_t)(b[0] | b[1] << 8 | b[2] << 16);
}

/* A header of the input's instead of a peer's: a length, then its bytes. */
static size_t take_hdr(void *hdr, size_t size)
{
	size_t len = take8() % (size + 1);

	memset(hdr, 0, size);
	take(hdr, len);
	return len;
}

/* A UD receive completes: the peer's header and payload in its slot. */
static void op_ud_receive(void)
{
	uint8_t k = take8(), st = take8(), sel = take8();
	uint32_t src_qp = take_qpn(), len = take16() % (DS_MSG_SIZE + 64);
	union rs_sockaddr from = peer_addr(sel % NPEERS, sel & 4);
	struct posted_recv r;
	struct ds_wire_hdr hdr;
	struct ibv_wc wc;
	size_t hlen, n;

	if (!h.nrecvs)
		return;
	r = h.recvs[k % h.nrecvs];
	memmove(&h.recvs[k % h.nrecvs], &h.recvs[k % h.nrecvs + 1],
		(h.nrecvs - k % h.nrecvs - 1) * sizeof(r));
	h.nrecvs--;
	/* The GRH, present or not on the wire, then what the peer sent. */
	memset(r.addr, 0, DS_WIRE_GRH_LEN);
	if (sel & 8)
		hlen = take_hdr(&hdr, sizeof(hdr));
	else
		hlen = ds_hdr_encode(&hdr, &from);
	n = DS_WIRE_GRH_LEN + hlen + len;
	if (n > r.length)
		n = r.length; /* the device writes no more than the buffer */
	memcpy(r.addr + DS_WIRE_GRH_LEN, &hdr,
	       hlen < n - DS_WIRE_GRH_LEN ? hlen : n - DS_WIRE_GRH_LEN);
	if (n > DS_WIRE_GRH_LEN + hlen)
		memset(r.addr + DS_WIRE_GRH_LEN + hlen, sel,
		       n - DS_WIRE_GRH_LEN - hlen);
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = r.wr_id;
	/* Any status but a flush: the QP lives. */
	wc.status =
		st < 0xc0 ? IBV_WC_SUCCESS : (enum ibv_wc_status)(1 + st % 4);
	wc.opcode = IBV_WC_RECV;
	wc.byte_len = (uint32_t)((sel & 16) ? n - st % (n + 1) : n);
	wc.src_qp = src_qp;
	wc.wc_flags = IBV_WC_GRH;
	wc.qp_num = h.qp.qp_num;
	queue_wc(&wc);
	pthread_mutex_lock(&h.rs->lock);
	ds_poll_cqs(h.rs);
	pthread_mutex_unlock(&h.rs->lock);
}

/* A UDP message from a peer (or from its address, another port). */
static void op_udp_message(void)
{
	uint8_t sel = take8(), op = take8();
	uint32_t qpn = take_qpn(), len = take16() % (DS_MSG_SIZE + 64);
	union rs_sockaddr from = peer_addr(sel % NPEERS, sel & 4);
	struct ds_wire_udp_hdr hdr;
	uint32_t i;
	size_t hlen;

	if (h.udp_cnt == UDP_PENDING)
		return;
	i = (h.udp_head + h.udp_cnt++) % UDP_PENDING;
	if (sel & 8)
		hlen = take_hdr(&hdr, sizeof(hdr));
	else
		hlen = ds_udp_hdr_encode(&hdr, op & 1 ? RS_OP_CTRL : RS_OP_DATA,
					 qpn, &from);
	if (op & 2)
		len = 0;
	memcpy(h.udp[i], &hdr, hlen);
	memset(h.udp[i] + hlen, op, len);
	h.udp_len[i] = hlen + len;
	h.udp_from[i] = from;
}

/* @n of the posted sends complete, in order; an error fails them all. */
static void op_sends_complete(void)
{
	uint8_t arg = take8();
	uint32_t n = arg & 0x3f;
	struct ibv_wc wc;

	while (h.nsends && (n || (arg & 0x80))) {
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = h.sends[0];
		wc.status = arg & 0x80 ? IBV_WC_RETRY_EXC_ERR : IBV_WC_SUCCESS;
		wc.opcode = IBV_WC_SEND;
		queue_wc(&wc);
		memmove(h.sends, h.sends + 1, --h.nsends * sizeof(h.sends[0]));
		if (n)
			n--;
	}
	pthread_mutex_lock(&h.rs->lock);
	ds_poll_cqs(h.rs);
	pthread_mutex_unlock(&h.rs->lock);
}

static uint8_t app_buf[DS_MSG_SIZE + 64];

static void op_app_recv(void)
{
	uint8_t flags = take8();
	uint32_t len = take16() % (DS_MSG_SIZE + 64);
	int f = MSG_DONTWAIT | (flags & 1 ? MSG_PEEK : 0) |
		(flags & 2 ? MSG_TRUNC : 0);
	union rs_sockaddr src;
	socklen_t srclen = (flags & 8) ? 2 : sizeof(src);
	struct iovec iov[2] = {{app_buf, len / 3},
			       {app_buf + len / 3, len - len / 3}};
	struct msghdr msg = {.msg_name = &src,
			     .msg_namelen = srclen,
			     .msg_iov = iov,
			     .msg_iovlen = 2};
	ssize_t ret;

	memset(&src, 0, sizeof(src));
	if (flags & 4) {
		ret = ds_recvmsg(h.rs, &msg, f);
		srclen = msg.msg_namelen;
	} else {
		ret = ds_recvfrom(h.rs, app_buf, len, f, &src.sa, &srclen);
	}
	if (ret < 0)
		return;
	if (ret > (ssize_t)((flags & 2) ? DS_MSG_SIZE : len))
		abort(); /* more than asked, or than a datagram holds */
	if (ret && !(flags & 8) && src.sa.sa_family != h.rs->domain)
		abort(); /* a sender the socket cannot have */
}

static void op_app_send(void)
{
	uint8_t sel = take8();
	uint32_t len = take16() % (DS_MSG_SIZE + 64);
	union rs_sockaddr to = peer_addr(sel % NPEERS, sel & 4);
	socklen_t tolen =
		h.rs->domain == AF_INET6 ? sizeof(to.sin6) : sizeof(to.sin);

	memset(app_buf, sel, len);
	if ((sel & 8) && h.rs->conn_dest)
		(void)ds_sendto(h.rs, app_buf, len, MSG_DONTWAIT, NULL, 0);
	else
		(void)ds_sendto(h.rs, app_buf, len, MSG_DONTWAIT, &to.sa,
				tolen);
}

/* rconnect's part that matters here: the default destination. */
static void op_connect(void)
{
	uint8_t sel = take8();
	union rs_sockaddr to = peer_addr(sel % NPEERS, false);

	pthread_mutex_lock(&h.rs->lock);
	if (sel & 0x80)
		h.rs->conn_dest = NULL;
	else if (ds_dest_get(h.rs, &to.sa, sizeof(to), &h.rs->conn_dest))
		h.rs->conn_dest = NULL;
	pthread_mutex_unlock(&h.rs->lock);
}

static void op_misc(void)
{
	uint8_t what = take8();

	switch (what % 3) {
	case 0:
		(void)ds_poll_events(h.rs, POLLIN | POLLOUT);
		break;
	case 1:
		/* rshutdown's part: the flags the paths look at. */
		pthread_mutex_lock(&h.rs->lock);
		if (what & 4)
			h.rs->ds_shut_rd = true;
		if (what & 8)
			h.rs->ds_shut_wr = true;
		ds_changed(h.rs);
		pthread_mutex_unlock(&h.rs->lock);
		break;
	default:
		(void)ds_wait_fd(h.rs);
		ds_consume_events(h.rs);
		break;
	}
}

/* --- the checks ------------------------------------------------------------------- */

static void check_state(void)
{
	struct rsocket *rs = h.rs;
	uint32_t i, j, udp = 0, doubts = 0, slot;
	uint8_t seen[64];
	struct ds_dest *d;

	if (rs->dmsg_cnt > rs->dmsg_max)
		abort();
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < h.nrecvs; i++)
		seen[h.recvs[i].wr_id & ~DS_WR_RECV]++;
	for (i = 0; i < rs->dmsg_cnt; i++) {
		const struct ds_rmsg *m =
			&rs->dmsg[(rs->dmsg_head + i) % rs->dmsg_max];

		if (!m->qp) {
			udp++;
			if (m->length > DS_MSG_SIZE)
				abort();
			continue;
		}
		if (m->slot >= rs->rq_size ||
		    m->offset + m->length > DS_RSLOT_SIZE)
			abort(); /* a payload outside its slot */
		seen[m->slot]++;
	}
	if (udp != rs->dmsg_udp || udp > DS_UDP_QUEUE)
		abort();
	for (slot = 0; rs->qp_list && slot < rs->rq_size; slot++)
		if (seen[slot] != 1)
			abort(); /* a receive slot lost, or used twice */
	if (rs->dsbuf && rs->dsfree_cnt + h.nsends != rs->sq_size)
		abort(); /* a send slot neither free nor on the device */
	for (i = 0; rs->dsbuf && i < rs->dsfree_cnt; i++)
		for (j = 0; j < h.nsends; j++)
			if (rs->dsfree[i] == (uint32_t)h.sends[j])
				abort(); /* free while on the device */
	for (d = cma_list_first(&rs->dest_lru, struct ds_dest, lru); d;
	     d = cma_list_next(d, lru)) {
		if (d->qpn_doubt && !d->qpn_known)
			abort();
		doubts += d->qpn_doubt;
	}
	if (doubts != rs->dest_doubts ||
	    rs->dest_lru.len > rs_def.max_dgram_dest)
		abort();
}

/* --- the socket's life -------------------------------------------------------------- */

static void make_socket(struct rsocket *rs, const uint8_t *hdr)
{
	memset(&h, 0, sizeof(h));
	h.rs = rs;
	h.flags = hdr[0];
	h.max_qp_wr = 2 + hdr[3] % 40;
	h.ctx.device = &h.dev;
	h.ctx.ops.poll_cq = fake_poll_cq;
	h.ctx.ops.req_notify_cq = fake_req_notify;
	h.ctx.ops.post_send = fake_post_send;
	h.ctx.ops.post_recv = fake_post_recv;
	h.pd.context = &h.ctx;
	rs_def.max_dgram_dest = 1u + (h.flags >> 6);

	memset(rs, 0, sizeof(*rs));
	pthread_mutex_init(&rs->lock, NULL);
	pthread_mutex_init(&rs->wait_lock, NULL);
	rs->type = SOCK_DGRAM;
	rs->domain = h.flags & 1 ? AF_INET6 : AF_INET;
	rs->udp_sock = FUZZ_UDP_FD;
	rs->epfd = ep_fd;
	rs->ds_bell = -1;
	rs->rq_size = hdr[1];
	rs->sq_size = hdr[2];
	rs->rbuf_size = rs->sbuf_size = 64 * DS_MSG_SIZE;
	rs->sq_inline = 64;
}

static void free_socket(struct rsocket *rs)
{
	uint32_t i;

	pthread_mutex_lock(&rs->lock);
	ds_dest_destroy_all(rs);
	ds_qp_destroy_all(rs);
	for (i = 0; rs->dmsg && i < rs->dmsg_cnt; i++)
		free(rs->dmsg[(rs->dmsg_head + i) % rs->dmsg_max].copy);
	free(rs->dmsg);
	free(rs->dsbuf);
	free(rs->dsfree);
	free(rs->dsslot_dest);
	pthread_mutex_unlock(&rs->lock);
	pthread_mutex_destroy(&rs->lock);
	pthread_mutex_destroy(&rs->wait_lock);
	if (fuzz_mrs || fuzz_ahs || h.qp_made || h.cq_made || h.chan_made ||
	    h.qp_id_used || h.res_id_used)
		abort(); /* the socket left something of its QP behind */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rsocket rs;
	unsigned int ops = 0;

	if (size < 4)
		return 0;
	if (chan_fd < 0) {
		chan_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		ep_fd = epoll_create1(EPOLL_CLOEXEC);
		if (chan_fd < 0 || ep_fd < 0)
			abort();
	}
	make_socket(&rs, data);
	fuzz_input(data + 4, size - 4);
	while (fuzz_in.left && ops++ < 256) {
		switch (take8() % 8) {
		case 0:
		case 1:
			op_ud_receive();
			break;
		case 2:
			op_udp_message();
			break;
		case 3:
			op_sends_complete();
			break;
		case 4:
			op_app_recv();
			break;
		case 5:
			op_app_send();
			break;
		case 6:
			op_connect();
			break;
		default:
			op_misc();
			break;
		}
		check_state();
	}
	free_socket(&rs);
	return 0;
}
