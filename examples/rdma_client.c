// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rdma_client: the smallest complete RDMA CM client.
 *
 * Everything is synchronous: rdma_getaddrinfo() finds the server,
 * rdma_create_ep() makes an id with its QP (and lets the library create
 * the PD, CQs and completion channels), rdma_connect() returns once the
 * connection is up, and the rdma_verbs.h helpers post one message each
 * way and wait for their completions.  Pair it with rdma_server.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "common.h"

#define SAMPLE_PORT "7475"
#define MSG_SIZE 64

static const char greeting[] = "hello from rdma_client";

/* Reaps one completion with fn and checks it. */
static int get_comp(struct rdma_cm_id *id,
		    int (*fn)(struct rdma_cm_id *, struct ibv_wc *),
		    const char *what)
{
	struct ibv_wc wc;

	if (fn(id, &wc) < 0) {
		ex_syserr("waiting for the %s completion", what);
		return -1;
	}
	return ex_wc_ok(&wc, what);
}

static int exchange(struct rdma_cm_id *id)
{
	char send_msg[MSG_SIZE], recv_msg[MSG_SIZE];
	struct ibv_mr *send_mr = NULL, *recv_mr = NULL;
	char peer[EX_ADDRSTRLEN];
	int ret = -1;

	memset(send_msg, 0, sizeof(send_msg));
	memset(recv_msg, 0, sizeof(recv_msg));
	snprintf(send_msg, sizeof(send_msg), "%s", greeting);

	recv_mr = rdma_reg_msgs(id, recv_msg, sizeof(recv_msg));
	send_mr = rdma_reg_msgs(id, send_msg, sizeof(send_msg));
	if (!recv_mr || !send_mr) {
		ex_syserr("rdma_reg_msgs");
		goto out;
	}
	/* The server answers at once: be ready before connecting. */
	if (rdma_post_recv(id, NULL, recv_msg, sizeof(recv_msg), recv_mr)) {
		ex_syserr("rdma_post_recv");
		goto out;
	}
	if (rdma_connect(id, NULL)) {
		ex_syserr("rdma_connect");
		goto out;
	}
	ex_info("connected to %s",
		ex_ntop(rdma_get_peer_addr(id), peer, sizeof(peer)));

	if (rdma_post_send(id, NULL, send_msg, sizeof(send_msg), send_mr,
			   IBV_SEND_SIGNALED)) {
		ex_syserr("rdma_post_send");
		goto disconnect;
	}
	/*
	 * The answer first: it proves the server has the greeting, so when
	 * the greeting's own completion never comes (a device that lost the
	 * ACK) the output says which of the two is missing.
	 */
	if (get_comp(id, rdma_get_recv_comp, "receive"))
		goto disconnect;
	recv_msg[sizeof(recv_msg) - 1] = '\0';
	ex_info("server says: \"%s\"", recv_msg);
	if (get_comp(id, rdma_get_send_comp, "send"))
		goto disconnect;
	ret = 0;
disconnect:
	rdma_disconnect(id);
out:
	if (send_mr)
		rdma_dereg_mr(send_mr);
	if (recv_mr)
		rdma_dereg_mr(recv_mr);
	return ret;
}

static int run(const char *server, const char *port)
{
	struct ibv_qp_init_attr attr;
	struct rdma_addrinfo hints, *res;
	struct rdma_cm_id *id;
	int ret;

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	ret = rdma_getaddrinfo(server, port, &hints, &res);
	if (ret) {
		ex_addrinfo_err(ret, server);
		return -1;
	}

	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = 1;
	attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.sq_sig_all = 1;
	/* Resolves address and route and creates the QP, all at once. */
	ret = rdma_create_ep(&id, res, NULL, &attr);
	rdma_freeaddrinfo(res);
	if (ret) {
		ex_syserr("rdma_create_ep(%s)", server);
		return -1;
	}

	ret = exchange(id);
	rdma_destroy_ep(id);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-s address] [-p port]\n"
		"Connect to rdma_server, send one message and receive one.\n"
		"\n"
		"  -s address   server to connect to (default 127.0.0.1)\n"
		"  -p port      port number (default %s)\n"
		"  -q           quiet: print errors only\n"
		"  -h           show this help\n",
		ex_prog(), SAMPLE_PORT);
}

int main(int argc, char **argv)
{
	const char *server = "127.0.0.1", *port = SAMPLE_PORT;
	unsigned long v;
	int op;

	ex_init(argv[0]);
	while ((op = getopt(argc, argv, "s:p:qh")) != -1) {
		switch (op) {
		case 's':
			server = optarg;
			break;
		case 'p':
			if (ex_parse_num(optarg, 'p', 0, 65535, &v))
				return ex_usage_hint();
			port = optarg;
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
	if (run(server, port))
		return EX_FAIL;
	ex_info("OK");
	return EX_OK;
}
