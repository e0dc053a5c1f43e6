// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rping: RC ping-pong over the RDMA connection manager.
 *
 * Each ping moves one buffer through both RDMA directions so that a run
 * exercises the whole data path of a connection the CM set up:
 *
 *   client                                  server
 *   fill source buffer with ping #n
 *   SEND  READ_ADV  (source addr, rkey)  ->
 *                                           RDMA READ source into its buffer
 *                                        <- SEND  READ_DONE
 *   SEND  WRITE_ADV (sink addr, rkey)    ->
 *                                           RDMA WRITE its buffer into sink
 *                                        <- SEND  WRITE_DONE
 *   compare sink with source (-V)
 *
 * After the last ping the client sends BYE and disconnects.  The client
 * announces its buffer size in the connect request's private data, so the
 * server sizes its buffer per client (up to its -S limit).
 *
 * The CM side is asynchronous: one event channel, and while data moves the
 * program sleeps on the channel and the completion channel together, so a
 * peer that disconnects mid-ping is noticed at once.
 */
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define RPING_PORT "7174"
#define RPING_MAGIC 0x52504e47u /* "RPNG" */
#define RPING_MIN_SIZE 16
#define RPING_DEF_SIZE 64
#define RPING_MAX_SIZE (64u << 20)
#define RPING_DEF_COUNT 10

/* Connect request private data: who we are and how big the buffer is. */
struct rping_hello {
	__be32 magic;
	__be32 size;
};

enum msg_type {
	MSG_READ_ADV = 1, /* client: read my source buffer */
	MSG_READ_DONE, /* server: done reading it */
	MSG_WRITE_ADV, /* client: write into my sink buffer */
	MSG_WRITE_DONE, /* server: done writing it */
	MSG_BYE, /* client: no more pings, disconnect follows */
};

/* Every SEND carries one of these, big-endian on the wire. */
struct rping_msg {
	__be64 addr;
	__be32 rkey;
	__be32 len;
	__be32 type;
	__be32 seq;
};

/* wr_id of each kind of work request, to tell completions apart. */
enum { WR_RECV = 1, WR_SEND, WR_RDMA };

struct opts {
	bool server;
	bool client;
	bool verbose;
	bool verify;
	bool persistent;
	const char *addr;
	const char *src;
	const char *port;
	unsigned long count;
	uint32_t size; /* client: ping size; server: largest accepted */
};

/* One connection and everything registered for it. */
struct conn {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ex_cq cq;
	struct rping_msg rx; /* receive buffer */
	struct rping_msg tx; /* send buffer */
	struct ibv_mr *rx_mr;
	struct ibv_mr *tx_mr;
	uint32_t size;
	char *buf; /* client: ping source; server: read into, written out */
	struct ibv_mr *buf_mr;
	char *sink; /* client only: the server writes the ping back here */
	struct ibv_mr *sink_mr;
	char *expect; /* server with -V: what ping #n must look like */

	/* Completions seen but not yet consumed by the protocol code. */
	bool got_msg;
	bool sent;
	bool rdma_done;
	struct rping_msg msg; /* copy of the last message received */
};

struct rping {
	struct opts o;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id;
};

static const char *msg_name(uint32_t type)
{
	static const char *const names[] = {
		[MSG_READ_ADV] = "READ_ADV",
		[MSG_READ_DONE] = "READ_DONE",
		[MSG_WRITE_ADV] = "WRITE_ADV",
		[MSG_WRITE_DONE] = "WRITE_DONE",
		[MSG_BYE] = "BYE",
	};

	if (type < sizeof(names) / sizeof(names[0]) && names[type])
		return names[type];
	return "unknown";
}

/*
 * Ping #seq: a header naming it, then printable characters rotated by seq
 * so that consecutive pings differ everywhere, then a NUL for printing.
 */
static void fill_pattern(char *buf, uint32_t size, uint32_t seq)
{
	uint32_t i;
	int n;

	n = snprintf(buf, size, "rping-%u: ", seq);
	i = n < 0 ? 0 : (uint32_t)n;
	for (; i < size - 1; i++)
		buf[i] = (char)('!' + (seq + i) % 94);
	buf[size - 1] = '\0';
}

static void print_ping(const char *who, const char *buf, uint32_t size)
{
	printf("%s: %s ping data: %.*s\n", ex_prog(), who,
	       (int)strnlen(buf, size), buf);
}

/* Resources */

static struct ibv_mr *reg(struct conn *c, void *addr, size_t len, int access,
			  const char *what)
{
	struct ibv_mr *mr = ibv_reg_mr(c->pd, addr, len, access);

	if (!mr)
		ex_syserr("ibv_reg_mr(%s, %zu bytes)", what, len);
	return mr;
}

static char *alloc_buf(uint32_t size)
{
	void *p;

	/* Page alignment keeps registration to the pages actually used. */
	errno = posix_memalign(&p, 4096, size);
	if (errno) {
		ex_syserr("cannot allocate %u bytes", size);
		return NULL;
	}
	memset(p, 0, size);
	return p;
}

static void dereg(struct ibv_mr **mr)
{
	if (*mr && ibv_dereg_mr(*mr))
		ex_syserr("ibv_dereg_mr");
	*mr = NULL;
}

/* Frees what conn_setup() built; the id goes last, after its verbs. */
static void conn_free(struct conn *c)
{
	if (!c)
		return;
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	dereg(&c->rx_mr);
	dereg(&c->tx_mr);
	dereg(&c->buf_mr);
	dereg(&c->sink_mr);
	free(c->buf);
	free(c->sink);
	free(c->expect);
	if (c->cq.cq)
		ex_cq_destroy(&c->cq);
	if (c->pd && ibv_dealloc_pd(c->pd))
		ex_syserr("ibv_dealloc_pd");
	if (c->id && rdma_destroy_id(c->id))
		ex_syserr("rdma_destroy_id");
	free(c);
}

static int create_qp(struct conn *c)
{
	struct ibv_qp_init_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.send_cq = c->cq.cq;
	attr.recv_cq = c->cq.cq;
	attr.qp_type = IBV_QPT_RC;
	/* At most one send and one RDMA operation are ever in flight. */
	attr.cap.max_send_wr = 4;
	attr.cap.max_recv_wr = 2;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	if (rdma_create_qp(c->id, c->pd, &attr)) {
		ex_syserr("rdma_create_qp");
		return -1;
	}
	return 0;
}

/*
 * Builds the PD, CQ, QP and registered buffers on a resolved (client) or
 * requested (server) id, and posts the first receive, which must be in
 * place before the peer can send anything.
 */
static int conn_setup(struct conn *c, bool server)
{
	c->pd = ibv_alloc_pd(c->id->verbs);
	if (!c->pd) {
		ex_syserr("ibv_alloc_pd");
		return -1;
	}
	if (ex_cq_create(&c->cq, c->id->verbs, 8) || create_qp(c))
		return -1;

	c->rx_mr = reg(c, &c->rx, sizeof(c->rx), IBV_ACCESS_LOCAL_WRITE,
		       "receive buffer");
	c->tx_mr = reg(c, &c->tx, sizeof(c->tx), 0, "send buffer");
	c->buf = alloc_buf(c->size);
	if (!c->rx_mr || !c->tx_mr || !c->buf)
		return -1;

	if (server) {
		/* Target of our RDMA READ, source of our RDMA WRITE. */
		c->buf_mr = reg(c, c->buf, c->size, IBV_ACCESS_LOCAL_WRITE,
				"ping buffer");
		if (!c->buf_mr)
			return -1;
	} else {
		c->buf_mr = reg(c, c->buf, c->size, IBV_ACCESS_REMOTE_READ,
				"source buffer");
		c->sink = alloc_buf(c->size);
		if (!c->buf_mr || !c->sink)
			return -1;
		c->sink_mr =
			reg(c, c->sink, c->size,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
			    "sink buffer");
		if (!c->sink_mr)
			return -1;
	}
	return ex_post_recv(c->id->qp, c->rx_mr, &c->rx, sizeof(c->rx),
			    WR_RECV);
}

/* CM events */

/* Turns away a client that arrives while another one is being served. */
static void reject_extra(struct rdma_cm_event *ev)
{
	static const char busy[] = "rping: server busy";
	struct rdma_cm_id *id = ev->id;

	if (rdma_reject(id, busy, sizeof(busy)))
		ex_syserr("rdma_reject");
	/* An id can only be destroyed once its events are acknowledged. */
	ex_ack(ev);
	if (rdma_destroy_id(id))
		ex_syserr("rdma_destroy_id");
}

/*
 * Waits for event want on c's id, dealing with the events that may come in
 * between.  want < 0 means none is expected: then the call only handles
 * what is already queued (the peer went away, or another client knocked).
 * A good event is acknowledged unless ev is given.
 */
static int next_event(struct rping *r, struct conn *c, int want, int timeout_ms,
		      struct rdma_cm_event **ev)
{
	struct rdma_cm_event *e;
	char what[64];

	if (want < 0)
		snprintf(what, sizeof(what), "during the session");
	else
		snprintf(what, sizeof(what), "waiting for %s",
			 rdma_event_str((enum rdma_cm_event_type)want));
	for (;;) {
		if (ex_get_event(r->ch, timeout_ms, &e)) {
			if (errno != ETIMEDOUT)
				return -1;
			if (want < 0)
				return 0;
			ex_err("%s: timed out after %d ms", what, timeout_ms);
			return -1;
		}
		if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST &&
		    e->id != c->id) {
			reject_extra(e);
			continue;
		}
		/* Harmless: a past connection's timewait ending, and so on */
		if (e->event == RDMA_CM_EVENT_TIMEWAIT_EXIT ||
		    e->event == RDMA_CM_EVENT_ADDR_CHANGE || e->id != c->id) {
			ex_ack(e);
			continue;
		}
		if ((int)e->event != want || e->status) {
			if (e->event == RDMA_CM_EVENT_DISCONNECTED)
				ex_err("%s: the peer disconnected", what);
			else
				ex_report_event(what, e);
			ex_ack(e);
			return -1;
		}
		if (ev)
			*ev = e;
		else
			ex_ack(e);
		return 0;
	}
}

/* Completions */

static int handle_wc(struct conn *c, const struct ibv_wc *wc)
{
	switch (wc->wr_id) {
	case WR_RECV:
		if (ex_wc_ok(wc, "receive"))
			return -1;
		if (wc->byte_len != sizeof(c->rx)) {
			ex_err("received a %u-byte message, expected %zu",
			       wc->byte_len, sizeof(c->rx));
			return -1;
		}
		/* The protocol is lock-step: a second message cannot come
		 * before the first is answered. */
		if (c->got_msg) {
			ex_err("protocol error: unexpected extra message");
			return -1;
		}
		c->msg = c->rx;
		c->got_msg = true;
		/* Re-arm at once: the peer may answer our next send fast. */
		return ex_post_recv(c->id->qp, c->rx_mr, &c->rx, sizeof(c->rx),
				    WR_RECV);
	case WR_SEND:
		c->sent = true;
		return ex_wc_ok(wc, "send");
	case WR_RDMA:
		c->rdma_done = true;
		return ex_wc_ok(wc, "RDMA read/write");
	default:
		ex_err("completion with unknown wr_id %llu",
		       (unsigned long long)wc->wr_id);
		return -1;
	}
}

/* Sleeps until *flag is set by a completion, then consumes it. */
static int wait_for(struct rping *r, struct conn *c, bool *flag,
		    const char *what)
{
	struct ibv_wc wc[4];
	int i, n;

	while (!*flag) {
		n = ex_cq_wait(&c->cq, wc, 4, r->ch->fd, EX_WAIT_MS);
		if (n == EX_CQ_CM_EVENT) {
			/* Nothing is expected: whatever it is ends the
			 * session unless it is harmless. */
			if (next_event(r, c, -1, 0, NULL))
				return -1;
			continue;
		}
		if (n < 0) {
			if (errno == ETIMEDOUT)
				ex_err("timed out waiting for %s", what);
			return -1;
		}
		for (i = 0; i < n; i++)
			if (handle_wc(c, &wc[i]))
				return -1;
	}
	*flag = false;
	return 0;
}

static int send_msg(struct rping *r, struct conn *c, enum msg_type type,
		    uint32_t seq, const void *addr, uint32_t rkey, uint32_t len)
{
	c->tx.addr = htobe64((uintptr_t)addr);
	c->tx.rkey = htobe32(rkey);
	c->tx.len = htobe32(len);
	c->tx.type = htobe32(type);
	c->tx.seq = htobe32(seq);
	if (ex_post_send(c->id->qp, c->tx_mr, &c->tx, sizeof(c->tx), WR_SEND))
		return -1;
	/* The send buffer is reused by the next message. */
	return wait_for(r, c, &c->sent, "a send to complete");
}

/* Waits for the next message and checks it is the expected one. */
static int recv_msg(struct rping *r, struct conn *c, enum msg_type type,
		    uint32_t seq)
{
	uint32_t got, got_seq;

	if (wait_for(r, c, &c->got_msg, msg_name(type)))
		return -1;
	got = be32toh(c->msg.type);
	got_seq = be32toh(c->msg.seq);
	if (got != type || got_seq != seq) {
		ex_err("protocol error: got %s #%u, expected %s #%u",
		       msg_name(got), got_seq, msg_name(type), seq);
		return -1;
	}
	return 0;
}

static int post_rdma(struct conn *c, enum ibv_wr_opcode op)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;

	sge.addr = (uintptr_t)c->buf;
	sge.length = c->size;
	sge.lkey = c->buf_mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = WR_RDMA;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = be64toh(c->msg.addr);
	wr.wr.rdma.rkey = be32toh(c->msg.rkey);
	errno = ibv_post_send(c->id->qp, &wr, &bad);
	if (errno) {
		ex_syserr("ibv_post_send(%s)",
			  op == IBV_WR_RDMA_READ ? "RDMA READ" : "RDMA WRITE");
		return -1;
	}
	return 0;
}

/* Client */

static int client_ping(struct rping *r, struct conn *c, uint32_t seq)
{
	fill_pattern(c->buf, c->size, seq);
	memset(c->sink, 0, c->size);

	if (send_msg(r, c, MSG_READ_ADV, seq, c->buf, c->buf_mr->rkey,
		     c->size) ||
	    recv_msg(r, c, MSG_READ_DONE, seq) ||
	    send_msg(r, c, MSG_WRITE_ADV, seq, c->sink, c->sink_mr->rkey,
		     c->size) ||
	    recv_msg(r, c, MSG_WRITE_DONE, seq))
		return -1;

	if (r->o.verify && memcmp(c->sink, c->buf, c->size)) {
		ex_err("ping %u: the data written back differs from the data "
		       "sent",
		       seq);
		return -1;
	}
	if (r->o.verbose)
		print_ping("client", c->sink, c->size);
	return 0;
}

static int client_connect(struct rping *r, struct conn *c)
{
	struct ex_addr dst, src;
	struct rping_hello hello;
	struct rdma_conn_param param;

	if (ex_resolve(r->o.addr, r->o.port, 0, RDMA_PS_TCP, &dst))
		return -1;
	if (r->o.src &&
	    ex_resolve(r->o.src, NULL, EX_RES_PASSIVE, RDMA_PS_TCP, &src))
		return -1;

	if (rdma_resolve_addr(c->id, r->o.src ? ex_sa(&src) : NULL, ex_sa(&dst),
			      EX_RESOLVE_MS)) {
		ex_syserr("rdma_resolve_addr");
		return -1;
	}
	if (next_event(r, c, RDMA_CM_EVENT_ADDR_RESOLVED, EX_WAIT_MS, NULL))
		return -1;
	if (rdma_resolve_route(c->id, EX_RESOLVE_MS)) {
		ex_syserr("rdma_resolve_route");
		return -1;
	}
	if (next_event(r, c, RDMA_CM_EVENT_ROUTE_RESOLVED, EX_WAIT_MS, NULL))
		return -1;
	if (conn_setup(c, false))
		return -1;

	hello.magic = htobe32(RPING_MAGIC);
	hello.size = htobe32(c->size);
	memset(&param, 0, sizeof(param));
	param.private_data = &hello;
	param.private_data_len = sizeof(hello);
	/* The server RDMA-reads our buffer: let one read in at a time. */
	param.responder_resources = 1;
	param.initiator_depth = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(c->id, &param)) {
		ex_syserr("rdma_connect");
		return -1;
	}
	return next_event(r, c, RDMA_CM_EVENT_ESTABLISHED, EX_WAIT_MS, NULL);
}

static int run_client(struct rping *r)
{
	char peer[EX_ADDRSTRLEN];
	struct conn *c;
	uint32_t seq;
	int ret = -1;

	c = calloc(1, sizeof(*c));
	if (!c) {
		ex_syserr("calloc");
		return -1;
	}
	c->size = r->o.size;
	if (rdma_create_id(r->ch, &c->id, c, RDMA_PS_TCP)) {
		ex_syserr("rdma_create_id");
		c->id = NULL;
		goto out;
	}
	if (client_connect(r, c))
		goto out;
	ex_ntop(rdma_get_peer_addr(c->id), peer, sizeof(peer));
	ex_info("client connected to %s", peer);

	for (seq = 0; !r->o.count || seq < r->o.count; seq++)
		if (client_ping(r, c, seq))
			goto out;

	if (send_msg(r, c, MSG_BYE, seq, NULL, 0, 0))
		goto out;
	if (rdma_disconnect(c->id)) {
		ex_syserr("rdma_disconnect");
		goto out;
	}
	if (next_event(r, c, RDMA_CM_EVENT_DISCONNECTED, EX_WAIT_MS, NULL))
		goto out;
	ex_info("client connected to %s, %u pings OK", peer, seq);
	ret = 0;
out:
	conn_free(c);
	return ret;
}

/* Server */

/* Serves ping #seq (already announced by the READ_ADV in c->msg). */
static int server_ping(struct rping *r, struct conn *c, uint32_t seq)
{
	if (be32toh(c->msg.len) != c->size) {
		ex_err("ping %u: client offers %u bytes, agreed on %u", seq,
		       be32toh(c->msg.len), c->size);
		return -1;
	}
	if (post_rdma(c, IBV_WR_RDMA_READ) ||
	    wait_for(r, c, &c->rdma_done, "the RDMA READ"))
		return -1;

	if (c->expect) {
		fill_pattern(c->expect, c->size, seq);
		if (memcmp(c->expect, c->buf, c->size)) {
			ex_err("ping %u: the data read is not the ping "
			       "pattern",
			       seq);
			return -1;
		}
	}
	if (r->o.verbose)
		print_ping("server", c->buf, c->size);

	if (send_msg(r, c, MSG_READ_DONE, seq, NULL, 0, 0) ||
	    recv_msg(r, c, MSG_WRITE_ADV, seq))
		return -1;
	if (post_rdma(c, IBV_WR_RDMA_WRITE) ||
	    wait_for(r, c, &c->rdma_done, "the RDMA WRITE"))
		return -1;
	return send_msg(r, c, MSG_WRITE_DONE, seq, NULL, 0, 0);
}

/*
 * Checks the client's hello.  On refusal, returns -1 and a reason that
 * goes back to the client as reject private data.
 */
static int check_hello(struct rping *r, const struct rdma_cm_event *ev,
		       uint32_t *size, const char **why)
{
	struct rping_hello hello;

	/* Some transports pad private data, so only a minimum is checked */
	if (!ev->param.conn.private_data ||
	    ev->param.conn.private_data_len < sizeof(hello)) {
		*why = "rping: no hello";
		return -1;
	}
	memcpy(&hello, ev->param.conn.private_data, sizeof(hello));
	if (be32toh(hello.magic) != RPING_MAGIC) {
		*why = "rping: not an rping client";
		return -1;
	}
	*size = be32toh(hello.size);
	if (*size < RPING_MIN_SIZE || *size > r->o.size) {
		*why = "rping: size not accepted";
		return -1;
	}
	return 0;
}

static int server_accept(struct rping *r, struct conn *c)
{
	struct rdma_conn_param param;

	if (conn_setup(c, true))
		return -1;
	if (r->o.verify) {
		c->expect = malloc(c->size);
		if (!c->expect) {
			ex_syserr("malloc");
			return -1;
		}
	}
	memset(&param, 0, sizeof(param));
	param.responder_resources = 1;
	param.initiator_depth = 1; /* we issue the RDMA READs */
	param.rnr_retry_count = 7;
	if (rdma_accept(c->id, &param)) {
		ex_syserr("rdma_accept");
		return -1;
	}
	return next_event(r, c, RDMA_CM_EVENT_ESTABLISHED, EX_WAIT_MS, NULL);
}

/* Runs one client's session, from its connect request to its disconnect */
static int serve(struct rping *r, struct rdma_cm_event *req)
{
	char peer[EX_ADDRSTRLEN];
	const char *why = NULL;
	struct conn *c;
	uint32_t seq, size = 0;
	int ret = -1;

	c = calloc(1, sizeof(*c));
	if (!c) {
		ex_syserr("calloc");
		reject_extra(req);
		return -1;
	}
	c->id = req->id;
	c->id->context = c;
	ex_ntop(rdma_get_peer_addr(c->id), peer, sizeof(peer));
	if (check_hello(r, req, &size, &why)) {
		ex_err("refusing %s: %s", peer, why + strlen("rping: "));
		if (rdma_reject(c->id, why, (uint8_t)(strlen(why) + 1)))
			ex_syserr("rdma_reject");
		ex_ack(req);
		goto out;
	}
	/* Everything needed from the request is copied: release it. */
	ex_ack(req);
	c->size = size;

	if (server_accept(r, c))
		goto out;
	ex_info("server connected to %s, %u-byte pings", peer, c->size);

	for (seq = 0;; seq++) {
		if (wait_for(r, c, &c->got_msg, "the next ping"))
			goto out;
		if (be32toh(c->msg.type) == MSG_BYE)
			break;
		if (be32toh(c->msg.type) != MSG_READ_ADV ||
		    be32toh(c->msg.seq) != seq) {
			ex_err("protocol error: got %s #%u, expected "
			       "READ_ADV #%u",
			       msg_name(be32toh(c->msg.type)),
			       be32toh(c->msg.seq), seq);
			goto out;
		}
		if (server_ping(r, c, seq))
			goto out;
	}

	/* The client disconnects after BYE; answer to complete it. */
	if (next_event(r, c, RDMA_CM_EVENT_DISCONNECTED, EX_WAIT_MS, NULL))
		goto out;
	rdma_disconnect(c->id); /* may fail if already done: harmless */
	ex_info("server: %u pings from %s OK", seq, peer);
	ret = 0;
out:
	conn_free(c);
	return ret;
}

static int run_server(struct rping *r)
{
	char local[EX_ADDRSTRLEN];
	struct rdma_cm_event *ev;
	int ret;

	if (ex_listen(r->ch, r->o.addr, r->o.port, RDMA_PS_TCP, 4, NULL,
		      &r->listen_id))
		return -1;
	ex_info("server listening on %s",
		ex_ntop(rdma_get_local_addr(r->listen_id), local,
			sizeof(local)));

	do {
		if (ex_expect_event(r->ch, NULL, RDMA_CM_EVENT_CONNECT_REQUEST,
				    EX_FOREVER, &ev))
			return -1;
		ret = serve(r, ev);
	} while (r->o.persistent);
	return ret;
}

/* Command line */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s -s [-a address] [options]\n"
		"       %s -c -a address [options]\n"
		"RC ping-pong with RDMA READ and WRITE over the RDMA CM.\n"
		"\n"
		"  -s          run as the server\n"
		"  -c          run as the client\n"
		"  -a address  server: address to listen on (default: any "
		"IPv4)\n"
		"              client: server to connect to (IPv4, IPv6 or "
		"name)\n"
		"  -I address  client: source address to connect from\n"
		"  -p port     port number (default %s)\n"
		"  -C count    client: number of pings, 0 for no end "
		"(default %d)\n"
		"  -S size     client: ping size in bytes, %d to %u "
		"(default %d)\n"
		"              server: largest size accepted (default %u)\n"
		"  -v          print the ping data\n"
		"  -V          verify the ping data\n"
		"  -q          quiet: print errors only\n"
		"  -P          server: keep serving clients one after another\n"
		"  -h          show this help\n",
		ex_prog(), ex_prog(), RPING_PORT, RPING_DEF_COUNT,
		RPING_MIN_SIZE, RPING_MAX_SIZE, RPING_DEF_SIZE, RPING_MAX_SIZE);
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	unsigned long v;
	bool size_set = false;
	int op;

	o->port = RPING_PORT;
	o->count = RPING_DEF_COUNT;
	while ((op = getopt(argc, argv, "sca:I:p:C:S:vVqPh")) != -1) {
		switch (op) {
		case 's':
			o->server = true;
			break;
		case 'c':
			o->client = true;
			break;
		case 'a':
			o->addr = optarg;
			break;
		case 'I':
			o->src = optarg;
			break;
		case 'p':
			if (ex_parse_num(optarg, 'p', 0, 65535, &v))
				return ex_usage_hint();
			o->port = optarg;
			break;
		case 'C':
			if (ex_parse_num(optarg, 'C', 0, UINT32_MAX, &v))
				return ex_usage_hint();
			o->count = v;
			break;
		case 'S':
			if (ex_parse_num(optarg, 'S', RPING_MIN_SIZE,
					 RPING_MAX_SIZE, &v))
				return ex_usage_hint();
			o->size = (uint32_t)v;
			size_set = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'V':
			o->verify = true;
			break;
		case 'q':
			ex_quiet = true;
			break;
		case 'P':
			o->persistent = true;
			break;
		case 'h':
			usage(stdout);
			exit(EX_OK);
		default:
			return ex_usage_hint();
		}
	}
	if (optind < argc) {
		ex_err("unexpected argument '%s'", argv[optind]);
		return ex_usage_hint();
	}
	if (o->server == o->client) {
		ex_err("choose one of -s (server) and -c (client)");
		return ex_usage_hint();
	}
	if (o->client && !o->addr) {
		ex_err("the client needs the server's address (-a)");
		return ex_usage_hint();
	}
	if (!size_set)
		o->size = o->server ? RPING_MAX_SIZE : RPING_DEF_SIZE;
	return 0;
}

int main(int argc, char **argv)
{
	struct rping r;
	int ret;

	ex_init(argv[0]);
	memset(&r, 0, sizeof(r));
	ret = parse_opts(argc, argv, &r.o);
	if (ret)
		return ret;

	r.ch = rdma_create_event_channel();
	if (!r.ch) {
		ex_syserr("rdma_create_event_channel");
		return EX_FAIL;
	}
	ret = r.o.server ? run_server(&r) : run_client(&r);
	if (r.listen_id && rdma_destroy_id(r.listen_id))
		ex_syserr("rdma_destroy_id");
	rdma_destroy_event_channel(r.ch);
	return ret ? EX_FAIL : EX_OK;
}
