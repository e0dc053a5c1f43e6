// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rdma_xclient: an RDMA CM client built on the asynchronous calls of
 * RDMACM_1.4, the counterpart of rdma_xserver.
 *
 * Where rdma_client does everything with synchronous calls, this client
 * drives one id through its event channel: rdma_resolve_addrinfo() looks
 * the server up (RAI_DNS, or RAI_SA for an InfiniBand service) without
 * blocking, ADDRINFO_RESOLVED says the answer is there,
 * rdma_query_addrinfo() takes it, and address resolution, route
 * resolution and the connection follow event by event.  The client owns
 * its CQ and QP, sends -C numbered messages and checks that each comes
 * back unchanged, then disconnects.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "common.h"

#define XC_PORT "7471"
#define XC_MSG 64
#define XC_TIMEOUT_MS 5000

static struct {
	const char *server, *port;
	unsigned long count;
	bool sa; /* -a: the server is an InfiniBand service name or ID */
} opt = {.port = XC_PORT, .count = 1};

struct xc {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ex_cq cq;
	struct ibv_mr *mr;
	char send_buf[XC_MSG], recv_buf[XC_MSG];
	bool connected;
};

/* Resolve the server through the id, as an asynchronous program would. */
static int xc_lookup(struct xc *c, struct rdma_addrinfo **res)
{
	struct rdma_addrinfo hints;

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	hints.ai_flags = opt.sa ? RAI_SA : RAI_DNS;
	if (rdma_resolve_addrinfo(c->id, opt.sa ? NULL : opt.server,
				  opt.sa ? opt.server : opt.port, &hints)) {
		ex_syserr("rdma_resolve_addrinfo(%s)", opt.server);
		return -1;
	}
	if (ex_expect_event(c->ch, c->id, RDMA_CM_EVENT_ADDRINFO_RESOLVED,
			    XC_TIMEOUT_MS, NULL))
		return -1;
	if (rdma_query_addrinfo(c->id, res)) {
		ex_syserr("rdma_query_addrinfo");
		return -1;
	}
	return 0;
}

static int xc_connect(struct xc *c)
{
	struct ibv_qp_init_attr attr;
	struct rdma_conn_param param;
	struct rdma_addrinfo *res;
	char peer[EX_ADDRSTRLEN];
	int ret;

	if (xc_lookup(c, &res))
		return -1;
	ret = rdma_resolve_addr(c->id, res->ai_src_addr, res->ai_dst_addr,
				2000);
	rdma_freeaddrinfo(res);
	if (ret) {
		ex_syserr("rdma_resolve_addr");
		return -1;
	}
	if (ex_expect_event(c->ch, c->id, RDMA_CM_EVENT_ADDR_RESOLVED,
			    XC_TIMEOUT_MS, NULL))
		return -1;
	if (rdma_resolve_route(c->id, 2000)) {
		ex_syserr("rdma_resolve_route");
		return -1;
	}
	if (ex_expect_event(c->ch, c->id, RDMA_CM_EVENT_ROUTE_RESOLVED,
			    XC_TIMEOUT_MS, NULL))
		return -1;

	if (ex_cq_create(&c->cq, c->id->verbs, 4))
		return -1;
	memset(&attr, 0, sizeof(attr));
	attr.qp_type = IBV_QPT_RC;
	attr.send_cq = attr.recv_cq = c->cq.cq;
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.sq_sig_all = 1;
	if (rdma_create_qp(c->id, NULL, &attr)) {
		ex_syserr("rdma_create_qp");
		return -1;
	}
	/* One MR over both buffers, which sit side by side in struct xc. */
	c->mr = ibv_reg_mr(c->id->pd, c->send_buf,
			   sizeof(c->send_buf) + sizeof(c->recv_buf),
			   IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr) {
		ex_syserr("ibv_reg_mr");
		return -1;
	}
	memset(&param, 0, sizeof(param));
	param.initiator_depth = param.responder_resources = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(c->id, &param)) {
		ex_syserr("rdma_connect");
		return -1;
	}
	if (ex_expect_event(c->ch, c->id, RDMA_CM_EVENT_ESTABLISHED,
			    XC_TIMEOUT_MS, NULL))
		return -1;
	c->connected = true;
	ex_info("connected to %s",
		ex_ntop(rdma_get_peer_addr(c->id), peer, sizeof(peer)));
	return 0;
}

/* One completion of the kind @what, the CM channel watched meanwhile. */
static int xc_wait(struct xc *c, const char *what)
{
	struct ibv_wc wc;
	int n = ex_cq_wait(&c->cq, &wc, 1, c->ch->fd, XC_TIMEOUT_MS);

	if (n == EX_CQ_CM_EVENT) {
		struct rdma_cm_event *ev;

		if (!ex_get_event(c->ch, 0, &ev)) {
			ex_report_event(what, ev);
			ex_ack(ev);
		}
		return -1;
	}
	if (n != 1)
		return -1;
	return ex_wc_ok(&wc, what);
}

static int xc_exchange(struct xc *c, unsigned long seq)
{
	memset(c->send_buf, 0, sizeof(c->send_buf));
	memset(c->recv_buf, 0, sizeof(c->recv_buf));
	snprintf(c->send_buf, sizeof(c->send_buf), "rdma_xclient message %lu",
		 seq);
	/* The receive first: the echo may come back at once. */
	if (ex_post_recv(c->id->qp, c->mr, c->recv_buf, XC_MSG, 1) ||
	    ex_post_send(c->id->qp, c->mr, c->send_buf, XC_MSG, 2))
		return -1;
	/* sq_sig_all: a send and a receive completion, in either order. */
	if (xc_wait(c, "message") || xc_wait(c, "message"))
		return -1;
	if (memcmp(c->send_buf, c->recv_buf, XC_MSG)) {
		ex_err("message %lu came back changed", seq);
		return -1;
	}
	return 0;
}

static void xc_close(struct xc *c)
{
	if (c->connected && !rdma_disconnect(c->id))
		ex_expect_event(c->ch, c->id, RDMA_CM_EVENT_DISCONNECTED,
				XC_TIMEOUT_MS, NULL);
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	if (c->cq.cq)
		ex_cq_destroy(&c->cq);
	if (c->id)
		rdma_destroy_id(c->id);
	rdma_destroy_event_channel(c->ch);
}

static int run(void)
{
	struct xc c;
	unsigned long i;
	int ret = -1;

	memset(&c, 0, sizeof(c));
	c.ch = rdma_create_event_channel();
	if (!c.ch) {
		ex_syserr("rdma_create_event_channel");
		return -1;
	}
	if (rdma_create_id(c.ch, &c.id, NULL, RDMA_PS_TCP)) {
		ex_syserr("rdma_create_id");
		c.id = NULL;
		goto out;
	}
	if (xc_connect(&c))
		goto out;
	for (i = 0; i < opt.count; i++)
		if (xc_exchange(&c, i))
			goto out;
	ex_info("%lu message(s) echoed intact", opt.count);
	ret = 0;
out:
	xc_close(&c);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s -s server [-p port] [-C count] [-c r] [-a]\n"
		"Connect to rdma_xserver through the asynchronous calls and\n"
		"check that every message comes back unchanged.\n"
		"\n"
		"  -s server    server name or address (with -a: an "
		"InfiniBand\n"
		"               service name or ID, looked up in the SA)\n"
		"  -p port      port number (default %s)\n"
		"  -C count     messages to exchange (default 1)\n"
		"  -c r         connection type: r = reliable connected (the "
		"only\n"
		"               one; rdma-core's 'x', XRC, is not offered)\n"
		"  -a           resolve with RAI_SA instead of RAI_DNS\n"
		"  -q           quiet: print errors only\n"
		"  -h           show this help\n",
		ex_prog(), XC_PORT);
}

int main(int argc, char **argv)
{
	unsigned long v;
	int op;

	ex_init(argv[0]);
	while ((op = getopt(argc, argv, "s:p:C:c:aqh")) != -1) {
		switch (op) {
		case 's':
			opt.server = optarg;
			break;
		case 'p':
			if (ex_parse_num(optarg, 'p', 1, 65535, &v))
				return ex_usage_hint();
			opt.port = optarg;
			break;
		case 'C':
			if (ex_parse_num(optarg, 'C', 1, 1000000, &opt.count))
				return ex_usage_hint();
			break;
		case 'c':
			if (strcmp(optarg, "r")) {
				ex_err("-c %s: only 'r' (RC) is supported",
				       optarg);
				return ex_usage_hint();
			}
			break;
		case 'a':
			opt.sa = true;
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
	if (!opt.server) {
		ex_err("-s server is required");
		return ex_usage_hint();
	}
	if (run())
		return EX_FAIL;
	ex_info("OK");
	return EX_OK;
}
