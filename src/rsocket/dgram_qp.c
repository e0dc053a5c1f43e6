// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Datagram rsockets: the UD QPs and their completions.
 *
 * A UD QP belongs to one RDMA device, and a socket bound to a wildcard
 * address may talk to peers through several, so there is one QP per local
 * source address, created through the rdma_cm (an RDMA_PS_UDP id bound to
 * that address and the socket's port) the first time a peer needs it.
 *
 * The socket's send slots are shared by its QPs (registered with each) and
 * its receive queue collects what every QP receives; each QP has its own
 * receive slots, one posted receive each, and one CQ on its own completion
 * channel, which the socket's epoll set watches.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "dgram.h"
#include "util/page_buf.h"

#define DS_POLL_BATCH 16
#define DS_QP_MIN_SIZE 2

static uint16_t ds_clamp(uint16_t size, uint32_t dev_max, uint32_t buf_bytes)
{
	/* One slot per queue entry: the buffer size bounds the queue. */
	uint32_t max = buf_bytes / DS_MSG_SIZE;

	if (max > dev_max)
		max = dev_max;
	if (size > max)
		size = (uint16_t)max;
	return size < DS_QP_MIN_SIZE ? DS_QP_MIN_SIZE : size;
}

/* Fit the queues to the device and to the socket's buffer sizes. */
static void ds_size_queues(struct rsocket *rs, struct ibv_context *verbs)
{
	struct ibv_device_attr attr;
	uint32_t max = RS_QP_MAX_SIZE;

	if (!ibv_query_device(verbs, &attr) && (uint32_t)attr.max_qp_wr < max)
		max = (uint32_t)attr.max_qp_wr;
	rs->rq_size = ds_clamp(rs->rq_size, max, rs->rbuf_size);
	rs->sq_size = ds_clamp(rs->sq_size, max, rs->sbuf_size);
}

/* The socket-wide buffers, made with the first QP. */
static int ds_alloc_bufs(struct rsocket *rs, struct ibv_context *verbs)
{
	uint32_t i;

	ds_size_queues(rs, verbs);
	rs->dsbuf = page_buf_alloc((size_t)rs->sq_size * DS_MSG_SIZE);
	rs->dsfree = calloc(rs->sq_size, sizeof(*rs->dsfree));
	rs->dsslot_dest = calloc(rs->sq_size, sizeof(*rs->dsslot_dest));
	rs->dmsg_max = rs->rq_size + DS_UDP_QUEUE;
	rs->dmsg = calloc(rs->dmsg_max, sizeof(*rs->dmsg));
	if (!rs->dsbuf || !rs->dsfree || !rs->dsslot_dest || !rs->dmsg)
		return cma_err(ENOMEM);
	for (i = 0; i < rs->sq_size; i++)
		rs->dsfree[i] = rs->sq_size - 1 - i;
	rs->dsfree_cnt = rs->sq_size;
	return 0;
}

int ds_post_recv(struct rsocket *rs, struct ds_qp *qp, uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(qp->rbuf + (size_t)slot * DS_RSLOT_SIZE),
		.length = DS_RSLOT_SIZE,
		.lkey = qp->rmr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = DS_WR_RECV | slot,
		.sg_list = &sge,
		.num_sge = 1,
	};
	struct ibv_recv_wr *bad;
	int ret;

	(void)rs;
	ret = ibv_post_recv(qp->cm_id->qp, &wr, &bad);
	return ret ? cma_err(ret) : 0;
}

/*
 * Bind the id to the socket's address and port.  The rdma_cm's UDP port
 * space is not the kernel's, so the port may be taken there by another
 * socket; the peers never see it (they see the header), so take any.
 */
static int ds_bind_id(struct ds_qp *qp)
{
	union rs_sockaddr any = qp->src;

	if (!rdma_bind_addr(qp->cm_id, &qp->src.sa))
		return 0;
	if (errno != EADDRINUSE)
		return -1;
	if (any.sa.sa_family == AF_INET)
		any.sin.sin_port = 0;
	else
		any.sin6.sin6_port = 0;
	return rdma_bind_addr(qp->cm_id, &any.sa);
}

static int ds_port_info(struct ds_qp *qp)
{
	struct ibv_port_attr attr;
	uint32_t mtu;

	if (ibv_query_port(qp->cm_id->verbs, qp->cm_id->port_num, &attr))
		return -1;
	qp->ethernet = attr.link_layer == IBV_LINK_LAYER_ETHERNET;
	/* A UD message never spans packets: the MTU bounds a datagram. */
	mtu = 128u << attr.active_mtu;
	qp->max_msg = mtu < DS_MSG_SIZE ? mtu : DS_MSG_SIZE;
	return 0;
}

static int ds_create_cq(struct rsocket *rs, struct ds_qp *qp)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = qp};
	int flags;

	qp->channel = ibv_create_comp_channel(qp->cm_id->verbs);
	if (!qp->channel)
		return -1;
	/* Several threads may wake for one event: only one may take it. */
	flags = fcntl(qp->channel->fd, F_GETFL);
	if (flags < 0 ||
	    fcntl(qp->channel->fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -1;
	qp->cq = ibv_create_cq(qp->cm_id->verbs, rs->sq_size + rs->rq_size, qp,
			       qp->channel, 0);
	if (!qp->cq)
		return -1;
	return epoll_ctl(rs->epfd, EPOLL_CTL_ADD, qp->channel->fd, &ev);
}

static int ds_create_ud_qp(struct rsocket *rs, struct ds_qp *qp)
{
	struct ibv_qp_init_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_context = qp;
	attr.send_cq = qp->cq;
	attr.recv_cq = qp->cq;
	attr.qp_type = IBV_QPT_UD;
	attr.sq_sig_all = 1;
	attr.cap.max_send_wr = rs->sq_size;
	attr.cap.max_recv_wr = rs->rq_size;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(qp->cm_id, NULL, &attr))
		return -1;
	qp->inline_size = attr.cap.max_inline_data;
	return 0;
}

static int ds_reg_bufs(struct rsocket *rs, struct ds_qp *qp)
{
	size_t rlen = (size_t)rs->rq_size * DS_RSLOT_SIZE;

	qp->rbuf = page_buf_alloc(rlen); /* registered: util/page_buf.h */
	if (!qp->rbuf)
		return cma_err(ENOMEM);
	qp->rmr = ibv_reg_mr(qp->cm_id->pd, qp->rbuf, rlen,
			     IBV_ACCESS_LOCAL_WRITE);
	qp->smr = ibv_reg_mr(qp->cm_id->pd, rs->dsbuf,
			     (size_t)rs->sq_size * DS_MSG_SIZE,
			     IBV_ACCESS_LOCAL_WRITE);
	return qp->rmr && qp->smr ? 0 : -1;
}

static void ds_qp_destroy(struct rsocket *rs, struct ds_qp *qp)
{
	if (qp->channel)
		epoll_ctl(rs->epfd, EPOLL_CTL_DEL, qp->channel->fd, NULL);
	if (qp->cm_id && qp->cm_id->qp)
		rdma_destroy_qp(qp->cm_id);
	if (qp->smr)
		ibv_dereg_mr(qp->smr);
	if (qp->rmr)
		ibv_dereg_mr(qp->rmr);
	if (qp->cq)
		ibv_destroy_cq(qp->cq);
	if (qp->channel)
		ibv_destroy_comp_channel(qp->channel);
	if (qp->cm_id)
		rdma_destroy_id(qp->cm_id);
	free(qp->rbuf);
	free(qp);
}

static int ds_qp_setup(struct rsocket *rs, struct ds_qp *qp)
{
	uint32_t i;

	if (rdma_create_id(NULL, &qp->cm_id, qp, RDMA_PS_UDP) || ds_bind_id(qp))
		return -1;
	if (!qp->cm_id->verbs)
		return cma_err(ENODEV); /* not an RDMA device's address */
	if (!rs->dsbuf && ds_alloc_bufs(rs, qp->cm_id->verbs))
		return -1;
	if (ds_port_info(qp) || ds_create_cq(rs, qp) ||
	    ds_create_ud_qp(rs, qp) || ds_reg_bufs(rs, qp))
		return -1;
	qp->hdr_len = (uint32_t)ds_hdr_encode(&qp->hdr, &qp->src);
	for (i = 0; i < rs->rq_size; i++) {
		if (ds_post_recv(rs, qp, i))
			return -1;
	}
	return 0;
}

static bool ds_same_host(const union rs_sockaddr *a, const union rs_sockaddr *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return false;
	if (a->sa.sa_family == AF_INET)
		return a->sin.sin_addr.s_addr == b->sin.sin_addr.s_addr;
	return !memcmp(&a->sin6.sin6_addr, &b->sin6.sin6_addr,
		       sizeof(a->sin6.sin6_addr)) &&
	       a->sin6.sin6_scope_id == b->sin6.sin6_scope_id;
}

int ds_qp_get(struct rsocket *rs, const union rs_sockaddr *src,
	      struct ds_qp **out)
{
	struct ds_qp *qp;
	int err;

	for (qp = rs->qp_list; qp; qp = qp->next) {
		if (ds_same_host(&qp->src, src)) {
			*out = qp;
			return 0;
		}
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return cma_err(ENOMEM);
	qp->src = *src;
	if (ds_qp_setup(rs, qp)) {
		err = errno;
		ds_qp_destroy(rs, qp);
		return cma_err(err);
	}
	qp->next = rs->qp_list;
	rs->qp_list = qp;
	*out = qp;
	return 0;
}

void ds_qp_destroy_all(struct rsocket *rs)
{
	struct ds_qp *qp;

	while ((qp = rs->qp_list)) {
		rs->qp_list = qp->next;
		ds_qp_destroy(rs, qp);
	}
}

static void ds_send_done(struct rsocket *rs, const struct ibv_wc *wc)
{
	uint32_t slot = (uint32_t)wc->wr_id;

	if (slot < rs->sq_size && rs->dsfree_cnt < rs->sq_size) {
		rs->dsfree[rs->dsfree_cnt++] = slot;
		/* The destination may be evicted once nothing is in flight. */
		if (rs->dsslot_dest[slot])
			ds_dest_unpin(rs->dsslot_dest[slot]);
		rs->dsslot_dest[slot] = NULL;
		ds_changed(rs);
	}
	if (wc->status != IBV_WC_SUCCESS)
		rs->ds_dropped++; /* a datagram lost on its way out */
}

static void ds_recv_done(struct rsocket *rs, struct ds_qp *qp,
			 const struct ibv_wc *wc)
{
	uint32_t slot = (uint32_t)(wc->wr_id & ~DS_WR_RECV);
	struct ds_ud_msg m;
	struct ds_rmsg r;

	if (slot >= rs->rq_size || wc->status == IBV_WC_WR_FLUSH_ERR)
		return; /* the QP is going away */
	/*
	 * The header names the sender in its own family: rrecvfrom reports
	 * it in the socket's, as UDP does (and as the UDP path's senders are).
	 */
	if (wc->status != IBV_WC_SUCCESS ||
	    ds_ud_msg_parse(qp->rbuf + (size_t)slot * DS_RSLOT_SIZE,
			    wc->byte_len, DS_RSLOT_SIZE, &m) ||
	    ds_addr_in_family(&m.src, rs->domain)) {
		rs->ds_dropped++;
		ds_post_recv(rs, qp, slot);
		return;
	}
	/* The device, not the payload, names the sending QP. */
	ds_dest_confirm_qpn(rs, &m.src, wc->src_qp);
	memset(&r, 0, sizeof(r));
	r.qp = qp;
	r.slot = slot;
	r.offset = m.offset;
	r.length = m.length;
	r.src = m.src;
	if (rs->ds_shut_rd || !ds_queue(rs, &r))
		ds_post_recv(rs, qp, slot);
}

static void ds_poll_qp(struct rsocket *rs, struct ds_qp *qp)
{
	struct ibv_wc wc[DS_POLL_BATCH];
	int n, i;

	while ((n = ibv_poll_cq(qp->cq, DS_POLL_BATCH, wc)) > 0) {
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id & DS_WR_RECV)
				ds_recv_done(rs, qp, &wc[i]);
			else
				ds_send_done(rs, &wc[i]);
		}
	}
}

void ds_poll_cqs(struct rsocket *rs)
{
	struct ds_qp *qp;

	for (qp = rs->qp_list; qp; qp = qp->next)
		ds_poll_qp(rs, qp);
}

void ds_arm_cqs(struct rsocket *rs)
{
	struct ds_qp *qp;

	for (qp = rs->qp_list; qp; qp = qp->next) {
		if (!qp->armed && !ibv_req_notify_cq(qp->cq, 0))
			qp->armed = true;
	}
}

void ds_take_cq_events(struct rsocket *rs)
{
	struct ibv_cq *cq;
	struct ds_qp *qp;
	void *ctx;

	for (qp = rs->qp_list; qp; qp = qp->next) {
		if (qp->armed && !ibv_get_cq_event(qp->channel, &cq, &ctx)) {
			ibv_ack_cq_events(cq, 1);
			qp->armed = false;
			/* A wait that saw it armed must arm it again. */
			ds_changed(rs);
		}
	}
}
