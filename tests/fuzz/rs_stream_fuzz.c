// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// FUZZ_SOURCES: src/rsocket/stream.c src/rsocket/iomap.c src/rsocket/wire.c src/rsocket/table.c src/rsocket/spin.c
/*
 * The rsocket stream data path against a hostile peer: everything the
 * peer controls reaches the library as it would on a real QP.
 *
 *  - the connection: our sizes (send/receive queue, inline, buffers,
 *    iomap slots: what RDMA_RS_* and rsetsockopt may set, extremes
 *    included), iWARP's message mode, and the peer's connect data
 *    (struct rs_wire_conn, 40 bytes) as rs_conn_decode takes it;
 *  - receive completions: the immediate data (any op, any length), the
 *    status, iWARP's 4-byte SEND messages and their byte counts;
 *  - the peer's RDMA writes into our target SGL and target iomap (what
 *    rs_can_send, rs_write_data and riowrite read back);
 *  - our application's rsend / rrecv / riowrite / riomap calls, all
 *    non-blocking, and the completions of our sends (in order, only the
 *    signaled ones; an error flushes everything).
 *
 * The QP, CQ and memory registrations are the harness's: verbs' inline
 * calls go through the context's ops, the exported ones are interposed.
 * Every send the library posts is read in full (ASan checks its buffers),
 * and the library must never post more sends or receives than its queues
 * hold, nor hand out more receive buffer than it has.
 *
 * Input: 9 header bytes (flags: bit 0 iWARP, bit 1 passive side, bit 2
 * half the inline size granted, bit 3 big queues and buffers; sq_size,
 * rq_size, sq_inline as little-endian 16-bit; buffer size exponent; iomap
 * size in the 8-bit wire encoding), the peer's 40 connect bytes, then
 * operations: one byte (the operation, mod 8) and its arguments.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rsocket/rs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct input {
	const uint8_t *p;
	size_t left;
};

static bool take(struct input *in, void *out, size_t n)
{
	if (in->left < n)
		return false;
	memcpy(out, in->p, n);
	in->p += n;
	in->left -= n;
	return true;
}

static uint8_t take8(struct input *in)
{
	uint8_t v = 0;

	take(in, &v, 1);
	return v;
}

static uint16_t take16(struct input *in)
{
	uint8_t b[2] = {0, 0};

	take(in, b, 2);
	return (uint16_t)(b[0] | b[1] << 8);
}

/* --- the fake device ---------------------------------------------------- */

#define WC_MAX 4096

static struct {
	struct ibv_device dev;
	struct ibv_context ctx;
	struct ibv_pd pd;
	struct ibv_cq cq;
	struct ibv_comp_channel chan;
	struct ibv_qp qp;
	struct rdma_cm_id id;
	uint16_t max_inline;
	int max_qp_wr;
	/* posted sends, in order: wr_id and whether it signals */
	uint64_t *sends;
	bool *signaled;
	uint32_t send_head, send_cnt, send_cap;
	/* posted receives, in order */
	uint64_t *recvs;
	uint32_t recv_head, recv_cnt, recv_cap;
	/* completions waiting to be polled */
	struct ibv_wc wc[WC_MAX];
	uint32_t wc_head, wc_cnt;
	unsigned long sink;
} dev;

static void queue_wc(const struct ibv_wc *wc)
{
	if (dev.wc_cnt == WC_MAX)
		return;
	dev.wc[(dev.wc_head + dev.wc_cnt) % WC_MAX] = *wc;
	dev.wc_cnt++;
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int i;

	for (i = 0; i < n && dev.wc_cnt; i++) {
		wc[i] = dev.wc[dev.wc_head];
		dev.wc_head = (dev.wc_head + 1) % WC_MAX;
		dev.wc_cnt--;
	}
	return i;
}

static int fake_req_notify(struct ibv_cq *cq, int solicited)
{
	return 0;
}

/* Read every byte a send names, as the HCA would. */
static void read_sges(const struct ibv_sge *sg, int n)
{
	int i;
	uint32_t j;

	for (i = 0; i < n; i++)
		for (j = 0; j < sg[i].length; j++)
			dev.sink += ((const uint8_t *)(uintptr_t)sg[i].addr)[j];
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad)
{
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || wr->num_sge > 2 ||
		    dev.send_cnt == dev.send_cap)
			abort(); /* more than the QP was created with */
		if (wr->num_sge && !wr->sg_list)
			abort();
		if ((wr->send_flags & IBV_SEND_INLINE) && wr->num_sge &&
		    wr->sg_list[0].length + (wr->num_sge > 1
						     ? wr->sg_list[1].length
						     : 0) >
			    dev.max_inline)
			abort();
		read_sges(wr->sg_list, wr->num_sge);
		dev.sends[(dev.send_head + dev.send_cnt) % dev.send_cap] =
			wr->wr_id;
		dev.signaled[(dev.send_head + dev.send_cnt) % dev.send_cap] =
			wr->send_flags & IBV_SEND_SIGNALED;
		dev.send_cnt++;
	}
	return 0;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad)
{
	for (; wr; wr = wr->next) {
		if (dev.recv_cnt == dev.recv_cap)
			abort(); /* more receives than the queue holds */
		if (wr->num_sge > 1)
			abort();
		dev.recvs[(dev.recv_head + dev.recv_cnt) % dev.recv_cap] =
			wr->wr_id;
		dev.recv_cnt++;
	}
	return 0;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->max_qp_wr = dev.max_qp_wr;
	return 0;
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	dev.chan.context = context;
	dev.chan.fd = -1;
	return &dev.chan;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
			     void *cq_context, struct ibv_comp_channel *channel,
			     int comp_vector)
{
	dev.cq.context = context;
	dev.cq.cqe = cqe;
	return &dev.cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		     void **cq_context)
{
	errno = EAGAIN;
	return -1;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
}

struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
			    int access)
{
	struct ibv_mr *mr = calloc(1, sizeof(*mr));

	if (!mr)
		return NULL;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->lkey = mr->rkey = 0x1234;
	return mr;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
				uint64_t iova, unsigned int access)
{
	return (ibv_reg_mr)(pd, addr, length, (int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	free(mr);
	return 0;
}

/* What rs_create_ep needs from the CM: a QP with the capacities asked. */
int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *attr)
{
	dev.send_cap = attr->cap.max_send_wr;
	dev.recv_cap = attr->cap.max_recv_wr;
	dev.sends = calloc(dev.send_cap, sizeof(*dev.sends));
	dev.signaled = calloc(dev.send_cap, sizeof(*dev.signaled));
	dev.recvs = calloc(dev.recv_cap, sizeof(*dev.recvs));
	if (!dev.sends || !dev.signaled || !dev.recvs) {
		errno = ENOMEM;
		return -1;
	}
	if (attr->cap.max_inline_data > dev.max_inline)
		attr->cap.max_inline_data = dev.max_inline;
	dev.qp.context = id->verbs;
	dev.qp.qp_type = attr->qp_type;
	id->qp = &dev.qp;
	return 0;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	id->qp = NULL;
}

/* The rest of the library the linked modules name, never reached. */
int rs_do_connect(struct rsocket *rs, bool nonblock)
{
	abort();
}

bool rs_cm_event_ready(struct rsocket *rs)
{
	return false;
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	return 0;
}

void ds_free(struct rsocket *rs)
{
}

/* Keepalive's note that the peer answered: no keepalive thread here. */
void rs_ka_heard(struct rsocket *rs)
{
}

void rs_stream_free(struct rsocket *rs)
{
	rs_free_iomaps(rs);
	rs_destroy_ep(rs);
}

static void dev_reset(bool iwarp, uint16_t max_inline, bool big)
{
	free(dev.sends);
	free(dev.signaled);
	free(dev.recvs);
	memset(&dev, 0, sizeof(dev));
	dev.dev.transport_type = iwarp ? IBV_TRANSPORT_IWARP : IBV_TRANSPORT_IB;
	dev.ctx.device = &dev.dev;
	dev.ctx.ops.poll_cq = fake_poll_cq;
	dev.ctx.ops.req_notify_cq = fake_req_notify;
	dev.ctx.ops.post_send = fake_post_send;
	dev.ctx.ops.post_recv = fake_post_recv;
	dev.pd.context = &dev.ctx;
	dev.id.verbs = &dev.ctx;
	dev.id.pd = &dev.pd;
	dev.max_inline = max_inline;
	dev.max_qp_wr = big ? 0x8000 : 64;
}

/* --- the peer and the application ---------------------------------------- */

#define FUZZ_FD 1000 /* the rsocket's number for riowrite/riomap */

static uint8_t app_buf[1 << 17];
static uint8_t map_buf[4][4096];

/* A receive completes: the peer's message, as its immediate or SEND. */
static void peer_message(struct rsocket *rs, struct input *in)
{
	struct ibv_wc wc;
	uint8_t flags = take8(in);
	uint8_t imm[4] = {0, 0, 0, 0};
	uint64_t wr_id;

	take(in, imm, sizeof(imm));
	if (!dev.recv_cnt)
		return; /* nothing to complete */
	wr_id = dev.recvs[dev.recv_head];
	dev.recv_head = (dev.recv_head + 1) % dev.recv_cap;
	dev.recv_cnt--;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr_id;
	wc.status = flags & 1 ? IBV_WC_REM_ACCESS_ERR : IBV_WC_SUCCESS;
	if (rs->msg_send && !(flags & 2)) {
		/* iWARP: the 4 bytes land in the receive's slot */
		size_t off = rs->rbuf_size +
			     (size_t)(wr_id % rs->rq_size) * RS_MSG_SEND_SIZE;

		memcpy(rs->rbuf + off, imm, sizeof(imm));
		wc.opcode = IBV_WC_RECV;
		wc.byte_len = (flags >> 2) % (RS_MSG_SEND_SIZE + 1);
	} else {
		wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
		wc.wc_flags = IBV_WC_WITH_IMM;
		memcpy(&wc.imm_data, imm, sizeof(imm));
	}
	queue_wc(&wc);
	pthread_mutex_lock(&rs->lock);
	rs_poll_cq(rs);
	rs_update_credits(rs);
	pthread_mutex_unlock(&rs->lock);
}

/* @n of our sends complete, in order; an error flushes all of them. */
static void sends_complete(struct rsocket *rs, struct input *in)
{
	uint8_t arg = take8(in);
	uint32_t n = arg & 0x7f;
	bool error = arg & 0x80;
	struct ibv_wc wc;

	while (dev.send_cnt && (n || error)) {
		bool sig = dev.signaled[dev.send_head];

		memset(&wc, 0, sizeof(wc));
		wc.wr_id = dev.sends[dev.send_head];
		wc.status = error ? IBV_WC_WR_FLUSH_ERR : IBV_WC_SUCCESS;
		dev.send_head = (dev.send_head + 1) % dev.send_cap;
		dev.send_cnt--;
		if (sig || error) {
			queue_wc(&wc);
			if (n)
				n--;
		}
	}
	pthread_mutex_lock(&rs->lock);
	rs_poll_cq(rs);
	rs_update_credits(rs);
	pthread_mutex_unlock(&rs->lock);
}

/* The peer RDMA-writes bytes anywhere into our target SGL and iomap. */
static void peer_writes_target(struct rsocket *rs, struct input *in)
{
	size_t len = sizeof(struct rs_wire_sge) * RS_SGL_SIZE +
		     sizeof(struct rs_wire_iomap) * rs->target_iomap_size;
	size_t off = take16(in) % len, n = take8(in) % 33;
	uint8_t bytes[32];

	if (n > len - off)
		n = len - off;
	memset(bytes, 0, sizeof(bytes));
	take(in, bytes, n);
	memcpy((uint8_t *)rs->target_buf + off, bytes, n);
}

static void app_send(struct rsocket *rs, struct input *in)
{
	struct iovec iov[2];
	uint32_t len = take16(in) * 2u;

	iov[0].iov_base = app_buf;
	iov[0].iov_len = len / 3;
	iov[1].iov_base = app_buf + len / 3;
	iov[1].iov_len = len - len / 3;
	(void)rs_stream_sendv(rs, iov, 2, MSG_DONTWAIT);
}

static void app_recv(struct rsocket *rs, struct input *in)
{
	uint8_t flags = take8(in);
	uint32_t len = take16(in) * 2u;
	ssize_t got;

	got = rs_stream_recv(rs, app_buf, len,
			     MSG_DONTWAIT | (flags & 1 ? MSG_PEEK : 0) |
				     (flags & 2 ? MSG_WAITALL : 0));
	if (got > (ssize_t)len)
		abort();
}

static void app_iowrite(struct rsocket *rs, struct input *in)
{
	uint64_t offset = 0;
	uint32_t len = take16(in) * 2u;
	size_t done;

	take(in, &offset, sizeof(offset));
	done = riowrite(FUZZ_FD, app_buf, len, (off_t)offset, MSG_DONTWAIT);
	if (done != (size_t)-1 && done > len)
		abort();
}

static void app_iomap(struct rsocket *rs, struct input *in)
{
	uint8_t which = take8(in);
	uint64_t offset = 0;
	void *buf = map_buf[which & 3];

	take(in, &offset, sizeof(offset));
	if (which & 0x80)
		(void)riounmap(FUZZ_FD, buf, sizeof(map_buf[0]));
	else
		(void)riomap(FUZZ_FD, buf, sizeof(map_buf[0]), PROT_WRITE, 0,
			     (off_t)(offset & 0x7fffffffffffffffULL));
}

/* The connection as conn.c sets it up, with the fuzzer's sizes. */
static struct rsocket *connect_stream(struct input *in)
{
	uint8_t flags = take8(in);
	struct rs_wire_conn wire;
	struct rs_conn_params p;
	struct rsocket *rs;
	uint8_t shift;

	rs = rs_alloc(NULL, SOCK_STREAM);
	if (!rs)
		return NULL;
	rs->sq_size = take16(in);
	rs->rq_size = take16(in);
	rs->sq_inline = take16(in);
	shift = take8(in);
	/* bit 3: a device with queues of 32k (else 64), buffers to 128k */
	rs->rbuf_size = 1u << (10 + shift % (flags & 8 ? 8 : 4));
	rs->sbuf_size = 1u << (10 + (shift >> 4) % (flags & 8 ? 8 : 4));
	rs->target_iomap_size = (uint16_t)rs_iomap_size_from_wire(take8(in));
	/* bit 2: the provider grants half the inline data asked */
	dev_reset(flags & 1, flags & 4 ? rs->sq_inline / 2 : rs->sq_inline,
		  flags & 8);
	rs->cm_id = &dev.id;
	if (rs_create_ep(rs))
		goto fail;
	memset(&wire, 0, sizeof(wire));
	if (!take(in, &wire, sizeof(wire)) ||
	    rs_conn_decode(&wire, sizeof(wire), &p))
		goto fail;
	rs_set_conn_params(rs, &p);
	rs_get_conn_params(rs, &p);
	rs->await_peer = (flags & 2) && rs->msg_send;
	rs->state = RS_CONNECT_RDWR;
	if (rs_insert(rs, FUZZ_FD))
		goto fail;
	return rs;
fail:
	rs_put(rs); /* the only reference: frees */
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = {data, size};
	struct rsocket *rs = connect_stream(&in);
	unsigned int ops = 0;

	if (!rs)
		return 0;
	while (in.left && ops++ < 256) {
		switch (take8(&in) % 8) {
		case 0:
		case 1:
			peer_message(rs, &in);
			break;
		case 2:
			sends_complete(rs, &in);
			break;
		case 3:
			peer_writes_target(rs, &in);
			break;
		case 4:
			app_send(rs, &in);
			break;
		case 5:
			app_recv(rs, &in);
			break;
		case 6:
			app_iowrite(rs, &in);
			break;
		default:
			app_iomap(rs, &in);
			break;
		}
	}
	/*
	 * The table's reference is the last: every call above paired its
	 * rs_get with an rs_put, else the socket leaks (LeakSanitizer).
	 */
	if (!rs_unpublish(rs))
		abort();
	rs = rs_get(FUZZ_FD);
	if (rs || errno != EBADF)
		abort(); /* the number outlived its socket */
	return 0;
}
