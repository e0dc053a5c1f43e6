// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rdma_server: the smallest complete RDMA CM server.
 *
 * Everything is synchronous: rdma_getaddrinfo() with RAI_PASSIVE gives the
 * address to listen on, rdma_create_ep() makes the listening id and keeps
 * the QP attributes for the connections it will hand out,
 * rdma_get_request() blocks until a client arrives and returns its id with
 * a QP already made, and rdma_accept() returns once the connection is up.
 * One message is received and one sent back, then the server exits.
 * Pair it with rdma_client.
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

static const char reply[] = "hello from rdma_server";

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

static int serve(struct rdma_cm_id *id)
{
	char send_msg[MSG_SIZE], recv_msg[MSG_SIZE];
	struct ibv_mr *send_mr = NULL, *recv_mr = NULL;
	char peer[EX_ADDRSTRLEN];
	int ret = -1;

	memset(send_msg, 0, sizeof(send_msg));
	memset(recv_msg, 0, sizeof(recv_msg));
	snprintf(send_msg, sizeof(send_msg), "%s", reply);

	/* rdma_get_request() made the QP from the listener's attributes */
	if (!id->qp) {
		ex_err("the new connection has no QP");
		return -1;
	}
	recv_mr = rdma_reg_msgs(id, recv_msg, sizeof(recv_msg));
	send_mr = rdma_reg_msgs(id, send_msg, sizeof(send_msg));
	if (!recv_mr || !send_mr) {
		ex_syserr("rdma_reg_msgs");
		goto out;
	}
	/* The client sends as soon as it is connected: post first. */
	if (rdma_post_recv(id, NULL, recv_msg, sizeof(recv_msg), recv_mr)) {
		ex_syserr("rdma_post_recv");
		goto out;
	}
	if (rdma_accept(id, NULL)) {
		ex_syserr("rdma_accept");
		goto out;
	}
	ex_info("connected to %s",
		ex_ntop(rdma_get_peer_addr(id), peer, sizeof(peer)));

	if (get_comp(id, rdma_get_recv_comp, "receive"))
		goto disconnect;
	recv_msg[sizeof(recv_msg) - 1] = '\0';
	ex_info("client says: \"%s\"", recv_msg);

	if (rdma_post_send(id, NULL, send_msg, sizeof(send_msg), send_mr,
			   IBV_SEND_SIGNALED)) {
		ex_syserr("rdma_post_send");
		goto disconnect;
	}
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

static int run(const char *addr, const char *port)
{
	struct rdma_cm_id *listen_id, *id;
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	char local[EX_ADDRSTRLEN];
	int ret;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	ret = rdma_getaddrinfo(addr, port, &hints, &res);
	if (ret) {
		ex_addrinfo_err(ret, addr);
		return -1;
	}

	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = 1;
	attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.sq_sig_all = 1;
	ret = rdma_create_ep(&listen_id, res, NULL, &attr);
	rdma_freeaddrinfo(res);
	if (ret) {
		ex_syserr("rdma_create_ep(%s)", addr);
		return -1;
	}
	if (rdma_listen(listen_id, 0)) {
		ex_syserr("rdma_listen");
		goto out;
	}
	ex_info("listening on %s",
		ex_ntop(rdma_get_local_addr(listen_id), local, sizeof(local)));

	if (rdma_get_request(listen_id, &id)) {
		ex_syserr("rdma_get_request");
		goto out;
	}
	ret = serve(id);
	rdma_destroy_ep(id);
out:
	rdma_destroy_ep(listen_id);
	return ret ? -1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-s address] [-p port]\n"
		"Accept one rdma_client, receive one message and answer it.\n"
		"\n"
		"  -s address   address to listen on (default 0.0.0.0)\n"
		"  -p port      port number (default %s)\n"
		"  -q           quiet: print errors only\n"
		"  -h           show this help\n",
		ex_prog(), SAMPLE_PORT);
}

int main(int argc, char **argv)
{
	const char *addr = "0.0.0.0", *port = SAMPLE_PORT;
	unsigned long v;
	int op;

	ex_init(argv[0]);
	while ((op = getopt(argc, argv, "s:p:qh")) != -1) {
		switch (op) {
		case 's':
			addr = optarg;
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
	if (run(addr, port))
		return EX_FAIL;
	ex_info("OK");
	return EX_OK;
}
