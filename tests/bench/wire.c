// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * wire: rsocket's own wire with no library in the data path, a second
 * limit beside perftest's (ib_write_lat writes into memory the peer polls,
 * consuming no receive; ib_write_bw keeps many writes in flight, with no
 * credits to wait for).
 *
 * Latency (the default): each message is what a small rsocket message is
 * on the wire: an inline RDMA WRITE WITH IMMEDIATE
 * into the peer's buffer that consumes a posted receive; one CQ for sends
 * and receives, busy-polled; one send in 16 signaled; the receive posted
 * again after the answer has gone.  The connection is made with librdmacm
 * (whichever LD_LIBRARY_PATH gives); after that only verbs run.
 *
 * -m selects how a message announces its arrival (-m imm, the default, is
 * rsocket's wire); the other two poll memory and consume no receive:
 *   last  one inline RDMA WRITE whose last 8 bytes hold the message's
 *         number, which the peer polls (ib_write_lat's method: it counts
 *         on the write's bytes being placed in order, which the
 *         specification does not promise);
 *   flag  an RDMA WRITE of the message, then an 8-byte RDMA WRITE of its
 *         number into a word the peer polls, in one post (it counts only
 *         on one write's bytes being placed before the next write's).
 *
 * Throughput (-B): the client streams ITERS messages of SIZE bytes (a
 * divisor of 64 KiB) as rsocket streams them: RDMA WRITES WITH IMMEDIATE
 * into the two 64 KiB halves of the server's receive buffer (rsocket's
 * default target SGL), a half written only once the server has handed it
 * back with a credit (a 16-byte inline write with immediate) after
 * reading it; one write in 16 signaled.  With -c the bytes are also
 * copied as an rsocket copies them: into the send region before each
 * write, out of the buffer to the application's after each arrival (the
 * bytes are not checked, and a write does not wait for the send region
 * to be free as rsocket's does: a bound from above).  With -O each write
 * goes out of the application's buffer itself, registered for on-demand
 * paging (where the device offers it): what a zero-copy rsend could do,
 * its registration kept, as paging lets it be kept soundly.
 *
 * Registration (-R, no peer): what sending SIZE bytes of the
 * application's memory without the send copy would cost per call where
 * a registration cannot be cached (without on-demand paging, a cached
 * registration keeps the pages the buffer had when it was registered,
 * which the program may since have unmapped or handed back to the
 * kernel): ibv_reg_mr and ibv_dereg_mr of SIZE bytes on the first
 * device, against a memcpy of the same bytes; -O: registered for
 * on-demand paging.
 *
 *   server: wire -b ADDR -p PORT [-n ITERS] [-S SIZE] [-m MODE | -B [-c|-O]]
 *   client: wire -s ADDR -p PORT [-n ITERS] [-S SIZE] [-m MODE | -B [-c|-O]]
 *           wire -R [-O] [-n ITERS] [-S SIZE]
 *
 * Latency: the client prints "wire SIZE ITERS USEC" (imm) or "wire-MODE
 * SIZE ITERS USEC": the mean one-way time over ITERS round trips (after
 * ITERS / 10 not timed), as rstream's usec/xfer and ib_write_lat's t_avg
 * are means.  Throughput: "wire-bw SIZE ITERS GBPS" ("wire-bw-copy" with
 * -c), from the first write to the last credit, after ITERS / 10 messages
 * not timed ("wire-bw-odp" with -O).  Registration: "wire-reg SIZE ITERS
 * REG_US COPY_US" ("wire-reg-odp" with -O), the mean
 * of a registration and deregistration, and of a copy.  Exit status 0 on
 * success.
 */
#include <endian.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define WIRE_DEPTH 64 /* send and receive queue depth */
#define WIRE_SIGNAL_EVERY 16
#define WIRE_MAX_SIZE 65536 /* a message; a half of the receive buffer */
#define WIRE_RECV_SIZE 4096
/*
 * The buffer's regions: what goes out; where SENDs land (the receives'
 * buffer: only the exchange's SEND fills it); where the peer's writes
 * land (two halves), apart, so that an early write cannot overwrite the
 * exchange; the word -m flag polls and credits land on; the
 * application's buffer for -B -c.
 */
#define WIRE_OUT 0
#define WIRE_RECV WIRE_MAX_SIZE
#define WIRE_IN (WIRE_RECV + WIRE_RECV_SIZE)
#define WIRE_FLAG (WIRE_IN + 2 * WIRE_MAX_SIZE)
#define WIRE_APP (WIRE_FLAG + 64)
#define WIRE_BUF_SIZE (WIRE_APP + WIRE_MAX_SIZE)

enum wire_mode { WIRE_IMM, WIRE_LAST, WIRE_FLAG_WRITE };

struct wire_peer {
	uint64_t addr;
	uint32_t rkey;
	uint32_t pad;
};

struct wire {
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_mr *odp; /* -O: the application's region, paged on demand */
	uint8_t *buf; /* WIRE_BUF_SIZE bytes */
	struct wire_peer peer;
	uint32_t size;
	uint32_t max_inline;
	enum wire_mode mode;
	uint64_t sent; /* work requests posted */
	uint64_t acked; /* of them, known complete (the last signaled seen) */
	uint64_t msgs; /* messages sent, and the number the next one has */
	uint64_t arrived; /* the peer's messages arrived */
};

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void post_recv(struct wire *w)
{
	struct ibv_sge sge = {.addr = (uintptr_t)(w->buf + WIRE_RECV),
			      .length = WIRE_RECV_SIZE,
			      .lkey = w->mr->lkey};
	struct ibv_recv_wr wr = {.sg_list = &sge, .num_sge = 1}, *bad;

	if (ibv_post_recv(w->id->qp, &wr, &bad))
		die("ibv_post_recv");
}

/* A completion polled: a failed one ends the run. */
static void reap(struct wire *w, const struct ibv_wc *wc)
{
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "wire: completion status %s\n",
			ibv_wc_status_str(wc->status));
		exit(1);
	}
	if (!(wc->opcode & IBV_WC_RECV))
		w->acked = wc->wr_id;
}

/*
 * Busy-poll the one CQ until a receive completes (@recv) or the last send
 * posted does; other completions pass.
 */
static void wait_completion(struct wire *w, bool recv)
{
	struct ibv_wc wc;
	int n;

	for (;;) {
		n = ibv_poll_cq(w->cq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq");
		if (!n)
			continue;
		reap(w, &wc);
		if (recv ? (wc.opcode & IBV_WC_RECV) != 0
			 : !(wc.opcode & IBV_WC_RECV) && wc.wr_id == w->sent)
			return;
	}
}

/* Memory modes: the word that says the peer's next message has come. */
static volatile uint64_t *arrival_word(struct wire *w)
{
	uint32_t off = w->mode == WIRE_LAST ? WIRE_IN + w->size - 8 : WIRE_FLAG;

	return (volatile uint64_t *)(w->buf + off);
}

/*
 * Wait for the peer's next message: its receive completion, or its number
 * in memory.  Memory modes reap a send completion on the way, so that the
 * send queue never fills with unsignaled work (signaled: 1 in 16).
 */
static void wait_message(struct wire *w)
{
	struct ibv_wc wc;
	uint64_t next = w->arrived + 1;

	if (w->mode == WIRE_IMM) {
		wait_completion(w, true);
		w->arrived = next;
		return;
	}
	while (__atomic_load_n(arrival_word(w), __ATOMIC_ACQUIRE) != next)
		;
	w->arrived = next;
	if (w->acked + WIRE_SIGNAL_EVERY < w->sent &&
	    ibv_poll_cq(w->cq, 1, &wc) == 1)
		reap(w, &wc);
}

/*
 * Post the chain of writes into the peer's buffer from @first: each
 * request numbered, one in WIRE_SIGNAL_EVERY signaled (the chain's last
 * carries it), and the last always when @last, so that its completion
 * says the chain has been delivered.
 */
static void post_to_peer(struct wire *w, struct ibv_send_wr *first, bool last)
{
	struct ibv_send_wr *wr = first, *bad;
	uint64_t before = w->sent;

	for (;; wr = wr->next) {
		wr->wr_id = ++w->sent;
		wr->wr.rdma.rkey = w->peer.rkey;
		if (!wr->next)
			break;
	}
	if (w->sent / WIRE_SIGNAL_EVERY != before / WIRE_SIGNAL_EVERY || last)
		wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(w->id->qp, first, &bad))
		die("ibv_post_send");
}

/* @last: signaled, so that its completion says it has been delivered. */
static void post_write(struct wire *w, bool last)
{
	uint64_t number = ++w->msgs;
	struct ibv_sge sge[2] = {
		{.addr = (uintptr_t)(w->buf + WIRE_OUT),
		 .length = w->size,
		 .lkey = w->mr->lkey},
		{.addr = (uintptr_t)&number, .length = sizeof(number)}};
	struct ibv_send_wr wr[2] = {{.sg_list = &sge[0], .num_sge = 1},
				    {.sg_list = &sge[1],
				     .num_sge = 1,
				     .opcode = IBV_WR_RDMA_WRITE,
				     .send_flags = IBV_SEND_INLINE}};

	wr[0].opcode = w->mode == WIRE_IMM ? IBV_WR_RDMA_WRITE_WITH_IMM
					   : IBV_WR_RDMA_WRITE;
	wr[0].imm_data = htobe32(w->size);
	wr[0].wr.rdma.remote_addr = w->peer.addr + WIRE_IN;
	if (w->mode == WIRE_LAST)
		memcpy(w->buf + WIRE_OUT + w->size - 8, &number, 8);
	if (w->size <= w->max_inline)
		wr[0].send_flags |= IBV_SEND_INLINE;
	if (w->mode == WIRE_FLAG_WRITE) {
		wr[0].next = &wr[1];
		wr[1].wr.rdma.remote_addr = w->peer.addr + WIRE_FLAG;
	}
	post_to_peer(w, wr, last);
}

/* One CQ for both directions, as an rsocket has; buffers registered. */
static void setup_qp(struct wire *w)
{
	struct ibv_qp_init_attr attr = {
		.cap = {.max_send_wr = WIRE_DEPTH,
			.max_recv_wr = WIRE_DEPTH,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = 64},
		.qp_type = IBV_QPT_RC,
	};
	int i;

	w->cq = ibv_create_cq(w->id->verbs, 2 * WIRE_DEPTH, NULL, NULL, 0);
	if (!w->cq)
		die("ibv_create_cq");
	attr.send_cq = attr.recv_cq = w->cq;
	if (rdma_create_qp(w->id, NULL, &attr))
		die("rdma_create_qp");
	w->max_inline = attr.cap.max_inline_data;
	w->buf = calloc(1, WIRE_BUF_SIZE);
	if (!w->buf)
		die("calloc");
	w->mr = ibv_reg_mr(w->id->pd, w->buf, WIRE_BUF_SIZE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!w->mr)
		die("ibv_reg_mr");
	for (i = 0; i < WIRE_DEPTH; i++)
		post_recv(w);
}

/* Each side tells the other where to write, with a SEND. */
static void exchange(struct wire *w)
{
	struct wire_peer mine = {.addr = (uintptr_t)w->buf,
				 .rkey = w->mr->rkey};
	struct ibv_sge sge = {.addr = (uintptr_t)&mine, .length = sizeof(mine)};
	struct ibv_send_wr wr = {.sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_INLINE},
			   *bad;

	if (ibv_post_send(w->id->qp, &wr, &bad))
		die("ibv_post_send (exchange)");
	wait_completion(w, true);
	memcpy(&w->peer, w->buf + WIRE_RECV, sizeof(w->peer));
	post_recv(w);
}

static void connect_or_accept(struct wire *w, const char *node,
			      const char *port, const char *bind_addr,
			      bool server)
{
	struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_TCP}, *res;
	struct rdma_conn_param param = {.retry_count = 7, .rnr_retry_count = 7};
	struct rdma_cm_id *listen_id;
	int ret;

	if (server)
		hints.ai_flags = RAI_PASSIVE;
	ret = rdma_getaddrinfo(server ? bind_addr : node, port, &hints, &res);
	if (ret)
		die("rdma_getaddrinfo");
	if (server) {
		if (rdma_create_ep(&listen_id, res, NULL, NULL) ||
		    rdma_listen(listen_id, 1) ||
		    rdma_get_request(listen_id, &w->id))
			die("listen");
	} else if (rdma_create_ep(&w->id, res, NULL, NULL)) {
		die("rdma_create_ep");
	}
	rdma_freeaddrinfo(res);
	setup_qp(w);
	ret = server ? rdma_accept(w->id, &param) : rdma_connect(w->id, &param);
	if (ret)
		die(server ? "rdma_accept" : "rdma_connect");
	exchange(w);
}

/*
 * @n round trips; the client speaks first.  A receive is posted again
 * after the answer has gone, as an rsocket does.  The server's @last
 * answer is waited for: a disconnect would flush it undelivered.
 */
static void ping_pong(struct wire *w, int n, bool server, bool last)
{
	int i;

	bool recvs = w->mode == WIRE_IMM;

	for (i = 0; i < n; i++) {
		if (server)
			wait_message(w);
		post_write(w, last && i == n - 1);
		if (recvs && (server || i))
			post_recv(
				w); /* the client's: the one the last answer took */
		if (!server)
			wait_message(w);
	}
	if (!server && n && recvs)
		post_recv(w);
	if (server && last && n)
		wait_completion(w, false);
}

/* -B: the client's write of message @i into half @i / per_half % 2. */
static void post_stream_write(struct wire *w, int i, bool copy)
{
	uint32_t per_half = WIRE_MAX_SIZE / w->size;
	uint32_t half = (uint32_t)i / per_half % 2;
	struct ibv_sge sge = {.addr = (uintptr_t)(w->buf + WIRE_OUT),
			      .length = w->size,
			      .lkey = w->mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE_WITH_IMM};

	if (copy)
		memcpy(w->buf + WIRE_OUT, w->buf + WIRE_APP, w->size);
	if (w->odp) {
		sge.addr = (uintptr_t)(w->buf + WIRE_APP);
		sge.lkey = w->odp->lkey;
	}
	wr.imm_data = htobe32(w->size);
	wr.wr.rdma.remote_addr = w->peer.addr + WIRE_IN + half * WIRE_MAX_SIZE +
				 (uint32_t)i % per_half * w->size;
	if (w->size <= w->max_inline)
		wr.send_flags |= IBV_SEND_INLINE;
	post_to_peer(w, &wr, false);
}

/*
 * -B: the server hands a half back, as rsocket's credit message does;
 * @last: signaled, so that its completion says it has been delivered.
 */
static void post_credit(struct wire *w, bool last)
{
	struct wire_peer sgl = {0};
	struct ibv_sge sge = {.addr = (uintptr_t)&sgl, .length = sizeof(sgl)};
	struct ibv_send_wr wr = {.sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				 .send_flags = IBV_SEND_INLINE};

	wr.wr.rdma.remote_addr = w->peer.addr + WIRE_FLAG;
	post_to_peer(w, &wr, last);
}

/*
 * -B, the server: reads @n messages, handing each half back once read.
 * The last credit is waited for: a disconnect would flush it undelivered.
 */
static void stream_recv(struct wire *w, int n, bool copy)
{
	uint32_t per_half = WIRE_MAX_SIZE / w->size, off = 0;
	int i;

	for (i = 0; i < n; i++) {
		wait_completion(w, true);
		post_recv(w);
		if (copy)
			memcpy(w->buf + WIRE_APP, w->buf + WIRE_IN + off,
			       w->size);
		off = (off + w->size) % (2 * WIRE_MAX_SIZE);
		if ((uint32_t)(i + 1) % per_half == 0 || i == n - 1)
			post_credit(w, i == n - 1);
	}
	if (n)
		wait_completion(w, false);
}

/* -B, the client: a credit (a half handed back) has come. */
static void take_credit(struct wire *w)
{
	wait_completion(w, true);
	post_recv(w);
}

/*
 * -B, the client: writes @n messages, each half once the server has it
 * free, then waits for every half back (all read).
 */
static void stream_send(struct wire *w, int n, bool copy)
{
	uint32_t per_half = WIRE_MAX_SIZE / w->size;
	int i, halves = 2; /* free at the server */

	for (i = 0; i < n; i++) {
		if ((uint32_t)i % per_half == 0) {
			if (halves)
				halves--;
			else
				take_credit(w);
		}
		post_stream_write(w, i, copy);
	}
	for (; halves < 2; halves++)
		take_credit(w);
}

/* -B: @n messages from the client to the server. */
static void stream(struct wire *w, int n, bool server, bool copy)
{
	if (server)
		stream_recv(w, n, copy);
	else
		stream_send(w, n, copy);
}

/* -R: @iters registrations of @size bytes (@access), then @iters copies. */
static int registration(uint32_t size, int iters, int access)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx =
		list && list[0] ? ibv_open_device(list[0]) : NULL;
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	uint8_t *app = malloc(size), *region = malloc(size);
	uint64_t t0, t1;
	int i;

	if (!pd || !app || !region) {
		perror("wire -R: device or memory");
		return 1;
	}
	memset(app, 1, size);
	memset(region, 2, size);
	t0 = now_ns();
	for (i = 0; i < iters; i++) {
		struct ibv_mr *mr = ibv_reg_mr(pd, app, size, access);

		if (!mr || ibv_dereg_mr(mr)) {
			perror("wire -R: ibv_reg_mr");
			return 1;
		}
	}
	t1 = now_ns();
	for (i = 0; i < iters; i++) {
		memcpy(region, app, size);
		/* The copy is not read: keep the compiler from dropping it. */
		__asm__ volatile("" : : "r"(region) : "memory");
	}
	printf("wire-reg%s %u %d %.2f %.2f\n",
	       access & IBV_ACCESS_ON_DEMAND ? "-odp" : "", size, iters,
	       (double)(t1 - t0) / 1000.0 / iters,
	       (double)(now_ns() - t1) / 1000.0 / iters);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: wire -b ADDR -p PORT [-n ITERS] [-S SIZE] [-m MODE | "
		"-B [-c|-O]]\n"
		"       wire -s ADDR -p PORT [-n ITERS] [-S SIZE] [-m MODE | "
		"-B [-c|-O]]\n       wire -R [-O] [-n ITERS] [-S SIZE]\n"
		"MODE: imm (the default), last or flag\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dst = NULL, *bind_addr = NULL, *port = NULL;
	struct wire w = {.size = 64};
	static const char *const modes[] = {"imm", "last", "flag"};
	const char *mode = modes[WIRE_IMM];
	bool bw = false, copy = false, reg = false, odp = false;
	int iters = 2000, opt;
	uint64_t t0;

	while ((opt = getopt(argc, argv, "s:b:p:n:S:m:BcRO")) != -1) {
		switch (opt) {
		case 's':
			dst = optarg;
			break;
		case 'b':
			bind_addr = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'n':
			iters = atoi(optarg);
			break;
		case 'S':
			w.size = (uint32_t)atoi(optarg);
			break;
		case 'm':
			mode = optarg;
			break;
		case 'B':
			bw = true;
			break;
		case 'c':
			copy = true;
			break;
		case 'R':
			reg = true;
			break;
		case 'O':
			odp = true;
			break;
		default:
			usage();
		}
	}
	if (reg) {
		if (iters <= 0 || !w.size)
			usage();
		return registration(w.size, iters,
				    odp ? IBV_ACCESS_ON_DEMAND
					: IBV_ACCESS_LOCAL_WRITE);
	}
	for (w.mode = WIRE_IMM; w.mode <= WIRE_FLAG_WRITE; w.mode++)
		if (!strcmp(mode, modes[w.mode]))
			break;
	if (!port || (!dst && !bind_addr) || iters <= 0 || !w.size ||
	    w.size > WIRE_MAX_SIZE || w.mode > WIRE_FLAG_WRITE ||
	    (w.mode == WIRE_LAST && w.size < 8) ||
	    (bw && (w.mode != WIRE_IMM || WIRE_MAX_SIZE % w.size)) ||
	    (copy && !bw) || (odp && (!bw || copy)))
		usage();
	connect_or_accept(&w, dst, port, bind_addr, !dst);
	if (odp && dst) { /* the server has nothing to send */
		w.odp = ibv_reg_mr(w.id->pd, w.buf + WIRE_APP, WIRE_MAX_SIZE,
				   IBV_ACCESS_ON_DEMAND);
		if (!w.odp)
			die("ibv_reg_mr (on-demand paging)");
	}
	if (bw) {
		stream(&w, iters / 10, !dst, copy); /* not timed */
		t0 = now_ns();
		stream(&w, iters, !dst, copy);
		if (dst)
			printf("wire-bw%s %u %d %.3f\n",
			       copy  ? "-copy"
			       : odp ? "-odp"
				     : "",
			       w.size, iters,
			       8.0 * w.size * iters / (double)(now_ns() - t0));
		rdma_disconnect(w.id);
		return 0;
	}
	ping_pong(&w, iters / 10, !dst, false); /* not timed */
	t0 = now_ns();
	ping_pong(&w, iters, !dst, true);
	if (dst)
		printf("wire%s%s %u %d %.2f\n", w.mode ? "-" : "",
		       w.mode ? mode : "", w.size, iters,
		       (double)(now_ns() - t0) / 1000.0 / (2.0 * iters));
	rdma_disconnect(w.id);
	return 0;
}
