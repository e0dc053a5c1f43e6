// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// FUZZ_SOURCES: src/rsocket/stream.c src/rsocket/shutdown.c src/rsocket/quiesce.c src/rsocket/iomap.c src/rsocket/wire.c src/rsocket/table.c src/rsocket/spin.c src/rsocket/wait.c
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
 * Connections are kept across inputs: setting one up (buffers of up to
 * 128 KiB, up to 32k receives posted) costs far more than an input's
 * operations.  The last 128 distinct set-ups (the first 49 bytes of an
 * input) stay open, each under its own rsocket number; an input whose
 * set-up bytes match one gets that socket reset to exactly its state
 * right after set-up:
 *  - the socket's structure is copied back from a snapshot taken then
 *    (every counter, ring index, state bit, credit, option, and the
 *    iomap pointers: the iomaps themselves were freed at the end of the
 *    input that made them, as a close frees them, but for the array of
 *    the peer's slots, kept with every entry as its first riomap makes
 *    it: see iomaps_clear);
 *  - its buffers are zeroed again as calloc left them: send buffer and
 *    control slots, receive buffer and iWARP message slots, target SGL
 *    and iomap, the receive-message and sent rings;
 *  - the fake device's queue state and completions are copied back, and
 *    its posted receives are those set-up posted.
 * An input that ends leaves the table's reference as the socket's only
 * one (checked).  An input with new set-up bytes builds a new socket (so
 * set-up stays fuzzed) in place of the least recently used one, which is
 * closed and checked as every socket was before: the table held its last
 * reference and its number is free afterwards.
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
#include "fuzz_verbs.h"

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

/*
 * The device's per-request code is not the library's: no coverage
 * feedback (it cost more than the library's own) and none to guide on.
 */
#define HARNESS __attribute__((no_sanitize("coverage")))

#define WC_MAX 4096
#define QP_WR_MAX 0x8000 /* the big device's queues */

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
	uint32_t send_head, send_cnt, send_cap;
	/* posted receives, in order */
	uint32_t recv_head, recv_cnt, recv_cap;
	/* completions waiting to be polled (in dev_wc) */
	uint32_t wc_head, wc_cnt;
	unsigned long sink;
} dev;

/* The queues' entries, sized for the biggest device once. */
static uint64_t dev_sends[QP_WR_MAX];
static bool dev_signaled[QP_WR_MAX];
static uint64_t dev_recvs[QP_WR_MAX];
static struct ibv_wc dev_wc[WC_MAX];

HARNESS static void queue_wc(const struct ibv_wc *wc)
{
	if (dev.wc_cnt == WC_MAX)
		return;
	dev_wc[(dev.wc_head + dev.wc_cnt) % WC_MAX] = *wc;
	dev.wc_cnt++;
}

HARNESS static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int i;

	for (i = 0; i < n && dev.wc_cnt; i++) {
		wc[i] = dev_wc[dev.wc_head];
		dev.wc_head = (dev.wc_head + 1) % WC_MAX;
		dev.wc_cnt--;
	}
	return i;
}

static int fake_req_notify(struct ibv_cq *cq, int solicited)
{
	return 0;
}

/*
 * Read every byte a send names, as the HCA would: one memcpy per SGE, so
 * ASan checks the whole range at once (a loop over the bytes cost more
 * than the rest of the input).
 */
static uint8_t wire_copy[1 << 18];

HARNESS static void read_sges(const struct ibv_sge *sg, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (sg[i].length > sizeof(wire_copy))
			abort(); /* longer than any buffer of the socket */
		memcpy(wire_copy, (const void *)(uintptr_t)sg[i].addr,
		       sg[i].length);
		dev.sink += wire_copy[0];
	}
}

HARNESS static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
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
		dev_sends[(dev.send_head + dev.send_cnt) % dev.send_cap] =
			wr->wr_id;
		dev_signaled[(dev.send_head + dev.send_cnt) % dev.send_cap] =
			wr->send_flags & IBV_SEND_SIGNALED;
		dev.send_cnt++;
	}
	return 0;
}

HARNESS static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
				  struct ibv_recv_wr **bad)
{
	for (; wr; wr = wr->next) {
		if (dev.recv_cnt == dev.recv_cap)
			abort(); /* more receives than the queue holds */
		if (wr->num_sge > 1)
			abort();
		dev_recvs[(dev.recv_head + dev.recv_cnt) % dev.recv_cap] =
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

/* What rs_create_ep needs from the CM: a QP with the capacities asked. */
int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *attr)
{
	dev.send_cap = attr->cap.max_send_wr;
	dev.recv_cap = attr->cap.max_recv_wr;
	if (dev.send_cap > QP_WR_MAX || dev.recv_cap > QP_WR_MAX)
		abort(); /* more than the device's max_qp_wr */
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

/* RDMA_QUIESCE's detach (quiesce.c): the target never sets the option. */
void rs_ka_stop(struct rsocket *rs)
{
	abort();
}

void rs_peer_unwatch(struct rsocket *rs)
{
	abort();
}

/* A CM call refused for new credentials (peerwatch.c): never here. */
int rs_follow_creds(struct rsocket *rs)
{
	abort();
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	abort();
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	abort();
}

/* Keepalive's note that the peer answered: no keepalive thread here. */
void rs_ka_heard_now(struct rsocket *rs)
{
}

void rs_stream_free(struct rsocket *rs)
{
	rs_free_iomaps(rs);
	rs_destroy_ep(rs);
}

static void dev_reset(bool iwarp, uint16_t max_inline, bool big)
{
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
	dev.max_qp_wr = big ? QP_WR_MAX : 64;
}

/* --- the peer and the application ---------------------------------------- */

#define FUZZ_FD 1000 /* the first rsocket number; kept sockets count on */

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
	wr_id = dev_recvs[dev.recv_head];
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
		bool sig = dev_signaled[dev.send_head];

		memset(&wc, 0, sizeof(wc));
		wc.wr_id = dev_sends[dev.send_head];
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
	done = riowrite(rs->index, app_buf, len, (off_t)offset, MSG_DONTWAIT);
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
		(void)riounmap(rs->index, buf, sizeof(map_buf[0]));
	else
		(void)riomap(rs->index, buf, sizeof(map_buf[0]), PROT_WRITE, 0,
			     (off_t)(offset & 0x7fffffffffffffffULL));
}

/* The connection as conn.c sets it up, with the fuzzer's sizes. */
static struct rsocket *connect_stream(struct input *in, int fd)
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
	if (rs_insert(rs, fd))
		goto fail;
	return rs;
fail:
	rs_put(rs); /* the only reference: frees */
	return NULL;
}

/* --- kept connections ---------------------------------------------------- */

/* What connect_stream reads: the header and the peer's connect data. */
#define SETUP_LEN (9 + sizeof(struct rs_wire_conn))
#define KEPT 128 /* connections kept, least recently used replaced */

struct kept {
	struct rsocket *rs; /* NULL: slot unused */
	uint8_t key[SETUP_LEN]; /* the set-up bytes it was made from */
	unsigned long used; /* when last used (LRU) */
	struct rsocket snap; /* the socket right after set-up */
	__typeof__(dev) dev_snap; /* the device then */
	uint64_t *recvs_snap; /* the receives set-up posted */
};

static struct kept kept[KEPT];
static unsigned long uses;

/*
 * Close a kept socket: the table's reference is the last (every call
 * paired its rs_get with an rs_put, else the socket leaks: LeakSanitizer),
 * and its number is free afterwards.
 */
static void kept_drop(struct kept *k)
{
	struct rsocket *rs = k->rs;
	int fd;

	if (!rs)
		return;
	k->rs = NULL;
	fd = rs->index;
	free(k->recvs_snap);
	k->recvs_snap = NULL;
	if (!rs_unpublish(rs))
		abort();
	rs = rs_get(fd);
	if (rs || errno != EBADF)
		abort(); /* the number outlived its socket */
}

static void kept_fill(struct kept *k, struct rsocket *rs, const uint8_t *key)
{
	if (dev.recv_head)
		abort(); /* set-up completes no receive */
	k->recvs_snap = malloc(dev.recv_cnt * sizeof(*dev_recvs) + 1);
	if (!k->recvs_snap)
		abort();
	memcpy(k->recvs_snap, dev_recvs, dev.recv_cnt * sizeof(*dev_recvs));
	k->rs = rs;
	memcpy(k->key, key, SETUP_LEN);
	k->snap = *rs;
	k->dev_snap = dev;
}

/*
 * The iomaps go at the end of each input, as a close would free them (an
 * input that leaves allocations behind makes libFuzzer run a leak check
 * after it), except the array of the peer's slots: up to 32512 entries,
 * made at the first riomap, whose allocation cost more than the rest of
 * an input.  Its entries are set back to what that first riomap makes
 * (slot i free, index i), so only the allocation is not repeated.
 */
HARNESS static void iomaps_clear(struct rsocket *rs)
{
	struct rs_iomap_mr *iomr;
	uint32_t i;

	while ((iomr = rs->iomap_list)) {
		rs->iomap_list = iomr->next;
		ibv_dereg_mr(iomr->mr);
		free(iomr);
	}
	for (i = 0; rs->iomap_slots && i < rs->remote_iomap.length; i++) {
		if (rs->iomap_slots[i].mr)
			ibv_dereg_mr(rs->iomap_slots[i].mr);
		memset(&rs->iomap_slots[i], 0, sizeof(rs->iomap_slots[i]));
		rs->iomap_slots[i].index = (int)i;
	}
}

/*
 * Back to the state right after set-up (no thread is inside a call: the
 * locks are free, as in the snapshot).  The buffers' lengths are their
 * registrations' (the harness's MRs record them).
 */
static void kept_reset(struct kept *k)
{
	struct rsocket *rs = k->rs;
	struct rs_iomap_mr *slots = rs->iomap_slots;

	*rs = k->snap; /* the iomaps went at the end of the last input */
	rs->iomap_slots = slots; /* cleared then, kept (iomaps_clear) */
	memset(rs->sbuf, 0, rs->smr->length);
	memset(rs->rbuf, 0, rs->rmr->length);
	memset(rs->target_buf, 0, rs->target_mr->length);
	memset(rs->rmsg, 0, (rs->rq_size + 1u) * sizeof(*rs->rmsg));
	memset(rs->sent, 0, rs->sq_size * sizeof(*rs->sent));
	dev = k->dev_snap;
	memcpy(dev_recvs, k->recvs_snap, dev.recv_cnt * sizeof(*dev_recvs));
}

static struct rsocket *conn_get(struct input *in)
{
	struct kept *k, *lru = &kept[0];
	struct rsocket *rs;

	if (in->left < SETUP_LEN) {
		/* Too short to keep: set-up fails reading the peer's data. */
		if (connect_stream(in, FUZZ_FD + KEPT))
			abort();
		return NULL;
	}
	for (k = kept; k < kept + KEPT; k++) {
		if (k->rs && !memcmp(k->key, in->p, SETUP_LEN)) {
			in->p += SETUP_LEN;
			in->left -= SETUP_LEN;
			k->used = ++uses;
			kept_reset(k);
			return k->rs;
		}
		if (!k->rs || (lru->rs && k->used < lru->used))
			lru = k;
	}
	kept_drop(lru);
	rs = connect_stream(in, FUZZ_FD + (int)(lru - kept));
	if (rs) {
		kept_fill(lru, rs, in->p - SETUP_LEN);
		lru->used = ++uses;
	}
	return rs;
}

/* The kept sockets go at exit, checked as every other. */
__attribute__((destructor)) static void kept_at_exit(void)
{
	struct kept *k;

	for (k = kept; k < kept + KEPT; k++)
		kept_drop(k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = {data, size};
	struct rsocket *rs = conn_get(&in);
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
	/* Every call above paired its rs_get with an rs_put. */
	if (__atomic_load_n(&rs->refs, __ATOMIC_ACQUIRE) != 1)
		abort();
	iomaps_clear(rs);
	return 0;
}
