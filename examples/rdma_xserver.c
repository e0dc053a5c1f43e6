// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rdma_xserver: the server rdma_xclient talks to.
 *
 * Unlike rdma_server, it works through an event channel: the listener's
 * CONNECT_REQUEST hands over a new id, which gets its own CQ and QP, a
 * receive posted before rdma_accept(), and then echoes every message back
 * until the client disconnects.  -n clients are served one after the
 * other (default 1), then the server exits; a client that misbehaves is
 * reported and dropped, and the run fails.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "common.h"

#define XS_PORT "7471"
#define XS_MSG 64
#define XS_TIMEOUT_MS 10000

struct xs_conn {
	struct rdma_cm_id *id;
	struct ex_cq cq;
	struct ibv_mr *mr;
	/*
	 * The next message lands in recv_buf while the last one goes back
	 * from send_buf: the receive is posted again before the echo, since
	 * on iWARP a message that finds no receive posted breaks the
	 * connection (no RNR retry there).  A message that arrived was sent
	 * after our previous echo had been received, so send_buf is free.
	 */
	char recv_buf[XS_MSG];
	char send_buf[XS_MSG];
};

static int xs_setup(struct xs_conn *c)
{
	struct ibv_qp_init_attr attr;

	if (ex_cq_create(&c->cq, c->id->verbs, 4))
		return -1;
	memset(&attr, 0, sizeof(attr));
	attr.qp_type = IBV_QPT_RC;
	attr.send_cq = attr.recv_cq = c->cq.cq;
	/* An echo may be posted before the last one's completion is read. */
	attr.cap.max_send_wr = 2;
	attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.sq_sig_all = 1;
	if (rdma_create_qp(c->id, NULL, &attr)) {
		ex_syserr("rdma_create_qp");
		return -1;
	}
	c->mr = ibv_reg_mr(c->id->pd, c->recv_buf,
			   sizeof(c->recv_buf) + sizeof(c->send_buf),
			   IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr) {
		ex_syserr("ibv_reg_mr");
		return -1;
	}
	return ex_post_recv(c->id->qp, c->mr, c->recv_buf, XS_MSG, 1);
}

/* The client's DISCONNECTED, after its disconnect flushed our QP. */
static int xs_await_disconnect(struct rdma_event_channel *ch, struct xs_conn *c)
{
	return ex_expect_event(ch, c->id, RDMA_CM_EVENT_DISCONNECTED,
			       XS_TIMEOUT_MS, NULL);
}

/*
 * Echo messages until the client disconnects.  Returns the number echoed,
 * or -1 on an error.
 */
static long xs_echo(struct rdma_event_channel *ch, struct xs_conn *c)
{
	struct rdma_cm_event *ev;
	struct ibv_wc wc;
	long echoed = 0;
	int n;

	for (;;) {
		n = ex_cq_wait(&c->cq, &wc, 1, ch->fd, XS_TIMEOUT_MS);
		if (n == EX_CQ_CM_EVENT) {
			if (ex_get_event(ch, 0, &ev))
				return -1;
			if (ev->id == c->id &&
			    ev->event == RDMA_CM_EVENT_DISCONNECTED) {
				ex_ack(ev);
				return echoed;
			}
			ex_report_event("while echoing", ev);
			ex_ack(ev);
			return -1;
		}
		/*
		 * Flushed: the QP went to error, which on iWARP is what the
		 * client's disconnect does at once (its DISCONNECTED follows).
		 */
		if (n == 1 && wc.status == IBV_WC_WR_FLUSH_ERR)
			return xs_await_disconnect(ch, c) ? -1 : echoed;
		if (n != 1 || ex_wc_ok(&wc, "echo"))
			return -1;
		if (wc.opcode == IBV_WC_SEND) {
			echoed++;
			continue;
		}
		if (wc.byte_len != XS_MSG) {
			ex_err("a message of %u bytes, not %d", wc.byte_len,
			       XS_MSG);
			return -1;
		}
		memcpy(c->send_buf, c->recv_buf, XS_MSG);
		if (ex_post_recv(c->id->qp, c->mr, c->recv_buf, XS_MSG, 1) ||
		    ex_post_send(c->id->qp, c->mr, c->send_buf, XS_MSG, 2))
			return -1;
	}
}

static void xs_close(struct xs_conn *c)
{
	if (c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	if (c->cq.cq)
		ex_cq_destroy(&c->cq);
	rdma_destroy_id(c->id);
}

/* Serve the client whose CONNECT_REQUEST is @req (acknowledged here). */
static int xs_serve(struct rdma_event_channel *ch, struct rdma_cm_event *req)
{
	struct rdma_conn_param param;
	char peer[EX_ADDRSTRLEN];
	struct xs_conn c;
	long echoed;

	memset(&c, 0, sizeof(c));
	c.id = req->id;
	ex_ack(req);
	if (xs_setup(&c)) {
		rdma_reject(c.id, NULL, 0);
		goto fail;
	}
	memset(&param, 0, sizeof(param));
	param.initiator_depth = param.responder_resources = 1;
	param.rnr_retry_count = 7;
	if (rdma_accept(c.id, &param)) {
		ex_syserr("rdma_accept");
		goto fail;
	}
	if (ex_expect_event(ch, c.id, RDMA_CM_EVENT_ESTABLISHED, XS_TIMEOUT_MS,
			    NULL))
		goto fail;
	ex_info("client %s connected",
		ex_ntop(rdma_get_peer_addr(c.id), peer, sizeof(peer)));
	echoed = xs_echo(ch, &c);
	if (echoed < 0)
		goto fail;
	ex_info("client %s done: %ld message(s) echoed", peer, echoed);
	xs_close(&c);
	return 0;
fail:
	xs_close(&c);
	return -1;
}

static int run(const char *addr, const char *port, unsigned long clients)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id = NULL;
	struct rdma_cm_event *ev;
	char local[EX_ADDRSTRLEN];
	unsigned long served;
	int ret = -1;

	ch = rdma_create_event_channel();
	if (!ch) {
		ex_syserr("rdma_create_event_channel");
		return -1;
	}
	if (ex_listen(ch, addr, port, RDMA_PS_TCP, 8, NULL, &listen_id))
		goto out;
	ex_info("listening on %s",
		ex_ntop(rdma_get_local_addr(listen_id), local, sizeof(local)));
	ret = 0;
	for (served = 0; served < clients; served++) {
		if (ex_expect_event(ch, NULL, RDMA_CM_EVENT_CONNECT_REQUEST,
				    EX_FOREVER, &ev)) {
			ret = -1;
			break;
		}
		if (xs_serve(ch, ev))
			ret = -1;
	}
out:
	if (listen_id)
		rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(ch);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-s address] [-p port] [-n clients] [-c r]\n"
		"Serve rdma_xclient: echo every message of each client until "
		"it\n"
		"disconnects.\n"
		"\n"
		"  -s address   address to listen on (default: any)\n"
		"  -p port      port number (default %s)\n"
		"  -n clients   clients to serve, one after the other (default "
		"1)\n"
		"  -c r         connection type: r = reliable connected (the "
		"only\n"
		"               one; rdma-core's 'x', XRC, is not offered)\n"
		"  -q           quiet: print errors only\n"
		"  -h           show this help\n",
		ex_prog(), XS_PORT);
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *port = XS_PORT;
	unsigned long clients = 1, v;
	int op;

	ex_init(argv[0]);
	while ((op = getopt(argc, argv, "s:p:n:c:qh")) != -1) {
		switch (op) {
		case 's':
			addr = optarg;
			break;
		case 'p':
			if (ex_parse_num(optarg, 'p', 1, 65535, &v))
				return ex_usage_hint();
			port = optarg;
			break;
		case 'n':
			if (ex_parse_num(optarg, 'n', 1, 1000000, &clients))
				return ex_usage_hint();
			break;
		case 'c':
			if (strcmp(optarg, "r")) {
				ex_err("-c %s: only 'r' (RC) is supported",
				       optarg);
				return ex_usage_hint();
			}
			break;
		case 'q':
			ex_quiet = true;
			break;
		case 'h':
			usage(stdout);
			return EX_OK;
		default:
			return ex_usage_hint();
		}
	}
	if (optind < argc) {
		ex_err("unexpected argument '%s'", argv[optind]);
		return ex_usage_hint();
	}
	if (run(addr, port, clients))
		return EX_FAIL;
	ex_info("OK");
	return EX_OK;
}
