// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * udaddy: unreliable datagrams over RDMA_PS_UDP.
 *
 * A UD "connection" is only an address lookup: the client's rdma_connect()
 * sends a service ID resolution request (SIDR) and its ESTABLISHED event
 * carries the server QP's address handle attributes, QP number and Q_Key.
 * The server never sees an ESTABLISHED; it learns where each client is
 * from the first datagram that client sends (the work completion names the
 * source QP, and the GRH in front of the payload the source address).
 *
 * Then each side sends -C datagrams of -S bytes on every connection.
 * Datagrams that find no receive buffer are dropped, so each side posts
 * all its receives before the peer can send: the client before it
 * connects, the server before it accepts.
 */
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define UD_PORT "7472"
#define UD_MAGIC 0x55444459u /* "UDDY" */
#define UD_DEF_CONNS 1
#define UD_MAX_CONNS 1000
#define UD_DEF_COUNT 10
#define UD_MAX_COUNT 4096
#define UD_DEF_SIZE 100
/* Sends kept in flight per connection. */
#define UD_WINDOW 16
/* Every receive buffer starts with room for the GRH. */
#define GRH_LEN sizeof(struct ibv_grh)

/* SIDR request private data: -C and -S must match on both sides. */
struct ud_hello {
	__be32 magic;
	__be32 count;
	__be32 size;
};

/* wr_id: the receive slot index, or this bit for sends. */
#define WR_SEND (1ull << 63)

struct opts {
	const char *dst;
	const char *src;
	const char *port;
	unsigned long conns;
	unsigned long count;
	uint32_t size;
	bool set_tos;
	uint8_t tos;
};

struct node {
	struct ud *ud;
	unsigned long index;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char *mem; /* count receive slots of GRH_LEN + size, then a send buf */
	struct ibv_ah *ah; /* where the peer is */
	uint32_t remote_qpn;
	uint32_t remote_qkey;
	bool ready; /* address known: may send */
	bool done;
	unsigned long recv_done, send_posted, send_done;
};

struct ud {
	struct opts o;
	bool server;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id;
	struct node *nodes;
	unsigned long used;
	unsigned long ready, failed;
};

static size_t slot_len(const struct ud *ud)
{
	return GRH_LEN + ud->o.size;
}

static char *send_buf(struct node *n)
{
	return n->mem + n->ud->o.count * slot_len(n->ud);
}

/* Resources */

static void node_free_verbs(struct node *n)
{
	if (n->ah && ibv_destroy_ah(n->ah))
		ex_syserr("ibv_destroy_ah");
	if (n->id && n->id->qp)
		rdma_destroy_qp(n->id);
	if (n->mr && ibv_dereg_mr(n->mr))
		ex_syserr("ibv_dereg_mr");
	if (n->cq && ibv_destroy_cq(n->cq))
		ex_syserr("ibv_destroy_cq");
	if (n->pd && ibv_dealloc_pd(n->pd))
		ex_syserr("ibv_dealloc_pd");
	free(n->mem);
	n->ah = NULL;
	n->mr = NULL;
	n->cq = NULL;
	n->pd = NULL;
	n->mem = NULL;
}

static void node_free(struct node *n)
{
	node_free_verbs(n);
	if (n->id && rdma_destroy_id(n->id))
		ex_syserr("rdma_destroy_id");
	n->id = NULL;
}

/* A datagram cannot be bigger than the port's MTU. */
static int check_size(struct node *n)
{
	uint32_t max;

	if (ex_ud_max_payload(n->id, &max))
		return -1;
	if (n->ud->o.size > max) {
		ex_err("connection %lu: %u-byte messages do not fit the "
		       "port's %u-byte MTU",
		       n->index, n->ud->o.size, max);
		return -1;
	}
	return 0;
}

/* Builds a connection's UD QP and buffers and posts all its receives. */
static int node_setup(struct node *n)
{
	unsigned long count = n->ud->o.count, i;
	size_t len = (count + 1) * slot_len(n->ud);
	struct ibv_qp_init_attr attr;

	if (check_size(n))
		return -1;
	n->pd = ibv_alloc_pd(n->id->verbs);
	if (!n->pd) {
		ex_syserr("connection %lu: ibv_alloc_pd", n->index);
		return -1;
	}
	n->cq = ibv_create_cq(n->id->verbs, (int)count + UD_WINDOW, n, NULL, 0);
	if (!n->cq) {
		ex_syserr("connection %lu: ibv_create_cq", n->index);
		return -1;
	}
	memset(&attr, 0, sizeof(attr));
	attr.send_cq = n->cq;
	attr.recv_cq = n->cq;
	attr.qp_type = IBV_QPT_UD;
	attr.cap.max_send_wr = UD_WINDOW;
	attr.cap.max_recv_wr = (uint32_t)count;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	/* The library brings a UD QP all the way up to RTS here. */
	if (rdma_create_qp(n->id, n->pd, &attr)) {
		ex_syserr("connection %lu: rdma_create_qp", n->index);
		return -1;
	}

	n->mem = calloc(1, len);
	if (!n->mem) {
		ex_syserr("connection %lu: calloc", n->index);
		return -1;
	}
	snprintf(send_buf(n) + GRH_LEN, n->ud->o.size,
		 "udaddy datagram on connection %lu", n->index);
	n->mr = ibv_reg_mr(n->pd, n->mem, len, IBV_ACCESS_LOCAL_WRITE);
	if (!n->mr) {
		ex_syserr("connection %lu: ibv_reg_mr", n->index);
		return -1;
	}
	for (i = 0; i < count; i++)
		if (ex_post_recv(n->id->qp, n->mr, n->mem + i * slot_len(n->ud),
				 (uint32_t)slot_len(n->ud), i))
			return -1;
	return 0;
}

/* The -t type of service, or NULL when none was asked for. */
static const uint8_t *tos_of(const struct ud *ud)
{
	return ud->o.set_tos ? &ud->o.tos : NULL;
}

/* Client */

static int client_connect(struct node *n)
{
	struct rdma_conn_param param;
	struct ud_hello hello;

	if (node_setup(n))
		return -1;
	hello.magic = htobe32(UD_MAGIC);
	hello.count = htobe32((uint32_t)n->ud->o.count);
	hello.size = htobe32(n->ud->o.size);
	memset(&param, 0, sizeof(param));
	param.private_data = &hello;
	param.private_data_len = sizeof(hello);
	if (rdma_connect(n->id, &param)) {
		ex_syserr("connection %lu: rdma_connect", n->index);
		return -1;
	}
	return 0;
}

/* The SIDR reply, turned into an ESTABLISHED, says where the server is */
static int client_established(struct node *n, const struct rdma_cm_event *ev)
{
	const struct rdma_ud_param *p = &ev->param.ud;

	n->ah = ibv_create_ah(n->pd, (struct ibv_ah_attr *)&p->ah_attr);
	if (!n->ah) {
		ex_syserr("connection %lu: ibv_create_ah", n->index);
		return -1;
	}
	n->remote_qpn = p->qp_num;
	n->remote_qkey = p->qkey;
	n->ready = true;
	return 0;
}

/* Server */

static int check_hello(struct ud *ud, const struct rdma_cm_event *ev,
		       const char **why)
{
	struct ud_hello hello;

	if (!ev->param.ud.private_data ||
	    ev->param.ud.private_data_len < sizeof(hello)) {
		*why = "udaddy: no hello in the request";
		return -1;
	}
	memcpy(&hello, ev->param.ud.private_data, sizeof(hello));
	if (be32toh(hello.magic) != UD_MAGIC) {
		*why = "udaddy: not a udaddy client";
		return -1;
	}
	if (be32toh(hello.count) != ud->o.count ||
	    be32toh(hello.size) != ud->o.size) {
		*why = "udaddy: client and server disagree on -C or -S";
		return -1;
	}
	return 0;
}

/* Returns the id to destroy once the event is acknowledged, if any. */
static struct rdma_cm_id *server_request(struct ud *ud,
					 const struct rdma_cm_event *ev)
{
	struct rdma_conn_param param;
	struct rdma_cm_id *doomed;
	const char *why = "udaddy: server has all its connections";
	struct node *n;

	if (ud->used == ud->o.conns || check_hello(ud, ev, &why)) {
		ex_err("refusing a request: %s", why + strlen("udaddy: "));
		if (rdma_reject(ev->id, why, (uint8_t)(strlen(why) + 1)))
			ex_syserr("rdma_reject");
		if (ud->used < ud->o.conns)
			ud->failed++;
		return ev->id;
	}

	n = &ud->nodes[ud->used++];
	n->id = ev->id;
	n->id->context = n;
	if (node_setup(n))
		goto fail;
	/* The reply carries our QP number and Q_Key, taken from the QP. */
	memset(&param, 0, sizeof(param));
	if (rdma_accept(n->id, &param)) {
		ex_syserr("connection %lu: rdma_accept", n->index);
		goto fail;
	}
	/* A UD server gets no ESTABLISHED: this request is settled. */
	ud->ready++;
	return NULL;
fail:
	if (rdma_reject(n->id, NULL, 0))
		ex_syserr("rdma_reject");
	ud->failed++;
	node_free_verbs(n);
	doomed = n->id;
	n->id = NULL;
	return doomed;
}

/* Events */

static void node_failed(struct ud *ud, struct node *n,
			const struct rdma_cm_event *ev)
{
	char what[64];

	snprintf(what, sizeof(what), "connection %lu", n->index);
	ex_report_event(what, ev);
	ud->failed++;
}

static struct rdma_cm_id *handle_event(struct ud *ud,
				       const struct rdma_cm_event *ev)
{
	struct node *n = ev->id->context;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return server_request(ud, ev);
	if (!n)
		return NULL;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(n->id, EX_RESOLVE_MS)) {
			ex_syserr("connection %lu: rdma_resolve_route",
				  n->index);
			ud->failed++;
		}
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (client_connect(n))
			ud->failed++;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (client_established(n, ev))
			ud->failed++;
		else
			ud->ready++;
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		break;
	default:
		/* UNREACHABLE is how a refused SIDR request shows up. */
		node_failed(ud, n, ev);
		break;
	}
	return NULL;
}

static int resolve_all(struct ud *ud)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *doomed;
	/* A server waits as long as it takes for its clients. */
	int timeout = ud->server ? EX_FOREVER : EX_WAIT_MS;

	while (ud->ready + ud->failed < ud->o.conns) {
		if (ex_get_event(ud->ch, timeout, &ev)) {
			if (errno == ETIMEDOUT)
				ex_err("address exchange: timed out after "
				       "%d ms",
				       timeout);
			return -1;
		}
		doomed = handle_event(ud, ev);
		ex_ack(ev);
		if (doomed && rdma_destroy_id(doomed))
			ex_syserr("rdma_destroy_id");
	}
	return 0;
}

/* Data phase */

/*
 * The server answers a client once it knows where the client is: from
 * the first datagram, whose completion and GRH give the source.
 */
static int learn_peer(struct node *n, struct ibv_wc *wc)
{
	struct ibv_grh *grh =
		(struct ibv_grh *)(n->mem + wc->wr_id * slot_len(n->ud));

	n->ah = ibv_create_ah_from_wc(n->pd, wc, grh, n->id->port_num);
	if (!n->ah) {
		ex_syserr("connection %lu: ibv_create_ah_from_wc", n->index);
		return -1;
	}
	n->remote_qpn = wc->src_qp;
	/* Every RDMA_PS_UDP QP the library creates uses this Q_Key. */
	n->remote_qkey = RDMA_UDP_QKEY;
	n->ready = true;
	return 0;
}

static int node_wc(struct node *n, struct ibv_wc *wc)
{
	if (wc->wr_id == WR_SEND) {
		n->send_done++;
		return ex_wc_ok(wc, "send");
	}
	if (ex_wc_ok(wc, "receive"))
		return -1;
	if (wc->byte_len != slot_len(n->ud)) {
		ex_err("connection %lu: received %zu bytes, expected %u",
		       n->index, (size_t)wc->byte_len - GRH_LEN, n->ud->o.size);
		return -1;
	}
	n->recv_done++;
	if (!n->ready)
		return learn_peer(n, wc);
	return 0;
}

static int node_poll(struct node *n)
{
	unsigned long count = n->ud->o.count;
	struct ibv_wc wc[8];
	int i, got;

	while (n->ready && n->send_posted < count &&
	       n->send_posted - n->send_done < UD_WINDOW) {
		if (ex_post_ud_send(n->id->qp, n->ah, n->remote_qpn,
				    n->remote_qkey, n->mr,
				    send_buf(n) + GRH_LEN, n->ud->o.size,
				    WR_SEND))
			return -1;
		n->send_posted++;
	}
	got = ibv_poll_cq(n->cq, 8, wc);
	if (got < 0) {
		ex_err("connection %lu: ibv_poll_cq failed", n->index);
		return -1;
	}
	for (i = 0; i < got; i++)
		if (node_wc(n, &wc[i]))
			return -1;
	n->done = n->recv_done == count && n->send_done == count;
	return got > 0;
}

/* Busy-polls every connection, with a timeout of inactivity. */
static int data_phase(struct ud *ud)
{
	uint64_t last = ex_now_us();
	unsigned long i, busy;
	int ret;

	do {
		busy = 0;
		for (i = 0; i < ud->used; i++) {
			struct node *n = &ud->nodes[i];

			if (!n->id || n->done)
				continue;
			busy++;
			ret = node_poll(n);
			if (ret < 0)
				return -1;
			if (ret)
				last = ex_now_us();
		}
		if (ex_now_us() - last > (uint64_t)EX_WAIT_MS * 1000) {
			ex_err("data transfer: no datagram for %d ms "
			       "(lost, or the peer is gone)",
			       EX_WAIT_MS);
			return -1;
		}
	} while (busy);
	return 0;
}

/* Setup */

static int start_client(struct ud *ud)
{
	struct ex_addr dst, src;
	char peer[EX_ADDRSTRLEN];
	unsigned long i;

	if (ex_resolve(ud->o.dst, ud->o.port, 0, RDMA_PS_UDP, &dst))
		return -1;
	if (ud->o.src &&
	    ex_resolve(ud->o.src, NULL, EX_RES_PASSIVE, RDMA_PS_UDP, &src))
		return -1;
	ex_info("resolving %lu connection%s to %s", ud->o.conns,
		ud->o.conns == 1 ? "" : "s",
		ex_ntop(ex_sa(&dst), peer, sizeof(peer)));

	for (i = 0; i < ud->o.conns; i++) {
		struct node *n = &ud->nodes[i];

		if (rdma_create_id(ud->ch, &n->id, n, RDMA_PS_UDP)) {
			ex_syserr("connection %lu: rdma_create_id", i);
			n->id = NULL;
			return -1;
		}
		ud->used++;
		ex_set_tos(n->id, tos_of(ud));
		if (rdma_resolve_addr(n->id, ud->o.src ? ex_sa(&src) : NULL,
				      ex_sa(&dst), EX_RESOLVE_MS)) {
			ex_syserr("connection %lu: rdma_resolve_addr", i);
			return -1;
		}
	}
	return 0;
}

static int start_server(struct ud *ud)
{
	char local[EX_ADDRSTRLEN];

	if (ex_listen(ud->ch, ud->o.src, ud->o.port, RDMA_PS_UDP,
		      (int)ud->o.conns, tos_of(ud), &ud->listen_id))
		return -1;
	ex_info("listening on %s for %lu client%s",
		ex_ntop(rdma_get_local_addr(ud->listen_id), local,
			sizeof(local)),
		ud->o.conns, ud->o.conns == 1 ? "" : "s");
	return 0;
}

static int run(struct ud *ud)
{
	if (ud->server ? start_server(ud) : start_client(ud))
		return -1;
	if (resolve_all(ud))
		return -1;
	if (ud->failed) {
		ex_err("%lu of %lu connections failed", ud->failed,
		       ud->o.conns);
		return -1;
	}
	if (!ud->server && !ex_quiet) {
		struct node *n = &ud->nodes[0];

		ex_info("%lu connection%s resolved; server QP 0x%06x, Q_Key "
			"0x%08x",
			ud->ready, ud->ready == 1 ? "" : "s", n->remote_qpn,
			n->remote_qkey);
	} else {
		ex_info("%lu client%s accepted", ud->ready,
			ud->ready == 1 ? "" : "s");
	}
	if (data_phase(ud))
		return -1;
	ex_info("exchanged %lu datagram%s of %u bytes each way on every "
		"connection",
		ud->o.count, ud->o.count == 1 ? "" : "s", ud->o.size);
	return 0;
}

/* Command line */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-b address] [options]            (server)\n"
		"       %s -s address [-b address] [options] (client)\n"
		"Unreliable datagrams (RDMA_PS_UDP) both ways.\n"
		"\n"
		"  -s address   send to this server (otherwise be the server)\n"
		"  -b address   address to listen on, or to send from\n"
		"  -p port      port number (default %s)\n"
		"  -c count     number of connections (default %d)\n"
		"  -C count     datagrams each way per connection, 1 to %d "
		"(default %d)\n"
		"  -S size      datagram size in bytes, up to the MTU "
		"(default %d)\n"
		"  -t tos       type of service\n"
		"  -q           quiet: print errors only\n"
		"  -h           show this help\n",
		ex_prog(), ex_prog(), UD_PORT, UD_DEF_CONNS, UD_MAX_COUNT,
		UD_DEF_COUNT, UD_DEF_SIZE);
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	unsigned long v;
	int op;

	o->port = UD_PORT;
	o->conns = UD_DEF_CONNS;
	o->count = UD_DEF_COUNT;
	o->size = UD_DEF_SIZE;
	while ((op = getopt(argc, argv, "s:b:p:c:C:S:t:qh")) != -1) {
		switch (op) {
		case 's':
			o->dst = optarg;
			break;
		case 'b':
			o->src = optarg;
			break;
		case 'p':
			if (ex_parse_num(optarg, 'p', 0, 65535, &v))
				return ex_usage_hint();
			o->port = optarg;
			break;
		case 'c':
			if (ex_parse_num(optarg, 'c', 1, UD_MAX_CONNS,
					 &o->conns))
				return ex_usage_hint();
			break;
		case 'C':
			if (ex_parse_num(optarg, 'C', 1, UD_MAX_COUNT,
					 &o->count))
				return ex_usage_hint();
			break;
		case 'S':
			if (ex_parse_num(optarg, 'S', 1, 4096, &v))
				return ex_usage_hint();
			o->size = (uint32_t)v;
			break;
		case 't':
			if (ex_parse_num(optarg, 't', 0, 255, &v))
				return ex_usage_hint();
			o->tos = (uint8_t)v;
			o->set_tos = true;
			break;
		case 'q':
			ex_quiet = true;
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
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long i;
	struct ud ud;
	int ret;

	ex_init(argv[0]);
	memset(&ud, 0, sizeof(ud));
	ret = parse_opts(argc, argv, &ud.o);
	if (ret)
		return ret;
	ud.server = !ud.o.dst;

	ud.nodes = calloc(ud.o.conns, sizeof(*ud.nodes));
	if (!ud.nodes) {
		ex_syserr("calloc");
		return EX_FAIL;
	}
	for (i = 0; i < ud.o.conns; i++) {
		ud.nodes[i].ud = &ud;
		ud.nodes[i].index = i;
	}
	ud.ch = rdma_create_event_channel();
	if (!ud.ch) {
		ex_syserr("rdma_create_event_channel");
		free(ud.nodes);
		return EX_FAIL;
	}

	ret = run(&ud);

	for (i = 0; i < ud.used; i++)
		node_free(&ud.nodes[i]);
	if (ud.listen_id && rdma_destroy_id(ud.listen_id))
		ex_syserr("rdma_destroy_id");
	rdma_destroy_event_channel(ud.ch);
	free(ud.nodes);
	if (!ret)
		ex_info("OK");
	return ret ? EX_FAIL : EX_OK;
}
