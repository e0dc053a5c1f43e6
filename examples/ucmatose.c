// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * ucmatose: many RC connections at once, driven by one event channel.
 *
 * The client opens -c connections to the server and both sides then
 * exchange -C messages of -S bytes each way on every connection with
 * SEND/RECV, then the connections are torn down, by the client or by the
 * server (-d).  Every CM step of every connection is handled by one event
 * loop, so the library sees many ids in flight on a channel at once.
 *
 * Who disconnects is settled in the connection handshake: the client's
 * connect request says what it wants (and whether -d was given), the
 * server answers in its accept private data.  An explicit -d wins over a
 * default; two explicit, different -d make the server refuse.
 *
 * The side that does not disconnect sends one extra message, a "fin",
 * once all of its sends have completed.  The disconnecting side waits for
 * it, so that it never tears down a connection whose peer still waits for
 * acknowledgements of its own sends.
 *
 * With -R the server rejects every connection with private data; a client
 * given -R expects exactly that and succeeds only if it sees it.
 */
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define UC_PORT "7471"
#define UC_MAGIC 0x55434d54u /* "UCMT" */
#define UC_REJECT_MSG "ucmatose: connection rejected on request (-R)"
#define UC_DEF_CONNS 1
#define UC_MAX_CONNS 10000
#define UC_DEF_COUNT 10
#define UC_DEF_SIZE 100
#define UC_MAX_SIZE (1u << 20)
/* Work requests kept posted per connection and direction. */
#define UC_WINDOW 16

/* Hello flags in the connect request and the accept. */
#define UC_DISC_SERVER 0x1 /* the server disconnects */
#define UC_DISC_EXPLICIT 0x2 /* set by -d, not a default */

/*
 * Connect request and accept private data.  The request also carries -C
 * and -S, which both sides must agree on for the message counts to add up
 */
struct uc_hello {
	__be32 magic;
	uint8_t flags;
	uint8_t pad[3];
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
	bool disc_server;
	bool disc_explicit;
	bool reject;
	bool set_tos;
	uint8_t tos;
};

struct node {
	struct uc *uc;
	unsigned long index;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char *mem; /* UC_WINDOW receive slots, then the send buffer */
	bool initiator; /* this side disconnects */
	/*
	 * iWARP's passive side: it sends nothing before the peer's first
	 * message has arrived (MPA lets the connecting side speak first: a
	 * message right behind the MPA reply can fail the peer's connect).
	 */
	bool speaks_second;
	bool connected;
	bool disc_sent;
	bool disconnected;
	bool done; /* data phase over for this connection */
	/* Data phase progress. */
	unsigned long recv_want, recv_posted, recv_done;
	unsigned long recv_budget; /* receives to post in all */
	unsigned long send_want, send_posted, send_done;
};

struct uc {
	struct opts o;
	bool server;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id;
	struct node *nodes;
	unsigned long used; /* nodes handed out so far */
	unsigned long connected, failed, rejected, refused, disconnected;
};

static char *send_buf(struct node *n)
{
	return n->mem + (size_t)UC_WINDOW * n->uc->o.size;
}

/* Resources */

/* Frees a connection's verbs resources, leaving its id alone. */
static void node_free_verbs(struct node *n)
{
	if (n->id && n->id->qp)
		rdma_destroy_qp(n->id);
	if (n->mr && ibv_dereg_mr(n->mr))
		ex_syserr("ibv_dereg_mr");
	if (n->cq && ibv_destroy_cq(n->cq))
		ex_syserr("ibv_destroy_cq");
	if (n->pd && ibv_dealloc_pd(n->pd))
		ex_syserr("ibv_dealloc_pd");
	free(n->mem);
	n->mr = NULL;
	n->cq = NULL;
	n->pd = NULL;
	n->mem = NULL;
}

/* The id goes last: the verbs resources live on its device. */
static void node_free(struct node *n)
{
	node_free_verbs(n);
	if (n->id && rdma_destroy_id(n->id))
		ex_syserr("rdma_destroy_id");
	n->id = NULL;
}

static void node_set_role(struct node *n, bool initiator)
{
	n->initiator = initiator;
	n->recv_want = n->uc->o.count + (initiator ? 1 : 0);
	n->send_want = n->uc->o.count + (initiator ? 0 : 1);
}

static int post_recv_slot(struct node *n, unsigned long slot)
{
	return ex_post_recv(n->id->qp, n->mr, n->mem + slot * n->uc->o.size,
			    n->uc->o.size, slot);
}

/*
 * Creates the PD, CQ, QP and buffers of a connection and posts its first
 * receives.  They go in before connect or accept so the peer's first
 * messages always find a buffer.
 */
static int node_setup(struct node *n)
{
	struct ibv_qp_init_attr attr;
	uint32_t size = n->uc->o.size;
	size_t len = (size_t)(UC_WINDOW + 1) * size;
	unsigned long i;

	n->pd = ibv_alloc_pd(n->id->verbs);
	if (!n->pd) {
		ex_syserr("connection %lu: ibv_alloc_pd", n->index);
		return -1;
	}
	n->cq = ibv_create_cq(n->id->verbs, 2 * UC_WINDOW, n, NULL, 0);
	if (!n->cq) {
		ex_syserr("connection %lu: ibv_create_cq", n->index);
		return -1;
	}
	memset(&attr, 0, sizeof(attr));
	attr.send_cq = n->cq;
	attr.recv_cq = n->cq;
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = UC_WINDOW;
	attr.cap.max_recv_wr = UC_WINDOW;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	if (rdma_create_qp(n->id, n->pd, &attr)) {
		ex_syserr("connection %lu: rdma_create_qp", n->index);
		return -1;
	}

	n->mem = calloc(1, len);
	if (!n->mem) {
		ex_syserr("connection %lu: calloc", n->index);
		return -1;
	}
	snprintf(send_buf(n), size, "ucmatose message on connection %lu",
		 n->index);
	n->mr = ibv_reg_mr(n->pd, n->mem, len, IBV_ACCESS_LOCAL_WRITE);
	if (!n->mr) {
		ex_syserr("connection %lu: ibv_reg_mr", n->index);
		return -1;
	}

	/*
	 * The disconnecting side also takes the peer's fin.  A client only
	 * learns which side it is from the accept, so there is always a
	 * receive for a fin; an unused one is flushed at disconnect.
	 */
	node_set_role(n, n->initiator);
	n->recv_budget = n->uc->o.count + 1;
	for (i = 0; i < UC_WINDOW && n->recv_posted < n->recv_budget; i++) {
		if (post_recv_slot(n, i))
			return -1;
		n->recv_posted++;
	}
	return 0;
}

/* The -t type of service, or NULL when none was asked for. */
static const uint8_t *tos_of(const struct uc *uc)
{
	return uc->o.set_tos ? &uc->o.tos : NULL;
}

/* Client side of the handshake */

static int client_connect(struct node *n)
{
	struct uc *uc = n->uc;
	struct rdma_conn_param param;
	struct uc_hello hello;

	n->initiator = !uc->o.disc_server;
	if (node_setup(n))
		return -1;

	memset(&hello, 0, sizeof(hello));
	hello.magic = htobe32(UC_MAGIC);
	hello.flags = (uc->o.disc_server ? UC_DISC_SERVER : 0) |
		      (uc->o.disc_explicit ? UC_DISC_EXPLICIT : 0);
	hello.count = htobe32((uint32_t)uc->o.count);
	hello.size = htobe32(uc->o.size);
	memset(&param, 0, sizeof(param));
	param.private_data = &hello;
	param.private_data_len = sizeof(hello);
	param.responder_resources = 1;
	param.initiator_depth = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7; /* 7: retry for as long as it takes */
	if (rdma_connect(n->id, &param)) {
		ex_syserr("connection %lu: rdma_connect", n->index);
		return -1;
	}
	return 0;
}

/* The server's accept names who disconnects; the node must follow it. */
static int client_established(struct node *n, const struct rdma_cm_event *ev)
{
	struct uc_hello reply;
	bool server_disc;

	if (!ev->param.conn.private_data ||
	    ev->param.conn.private_data_len < sizeof(reply)) {
		ex_err("connection %lu: the accept carries no reply", n->index);
		return -1;
	}
	memcpy(&reply, ev->param.conn.private_data, sizeof(reply));
	if (be32toh(reply.magic) != UC_MAGIC) {
		ex_err("connection %lu: the peer is not a ucmatose server",
		       n->index);
		return -1;
	}
	/* The server may have overridden our default. */
	server_disc = reply.flags & UC_DISC_SERVER;
	node_set_role(n, !server_disc);
	return 0;
}

/*
 * The client got a REJECTED.  With -R that is the point of the run, as
 * long as the server said why in the private data.
 */
static void client_rejected(struct node *n, const struct rdma_cm_event *ev)
{
	struct uc *uc = n->uc;
	char text[256];

	if (!uc->o.reject) {
		ex_report_event("connect", ev);
		uc->failed++;
		return;
	}
	ex_priv_str(ev->param.conn.private_data,
		    ev->param.conn.private_data_len, text, sizeof(text));
	if (strcmp(text, UC_REJECT_MSG)) {
		ex_err("connection %lu: rejected (status %d) with private "
		       "data \"%s\", expected \"%s\"",
		       n->index, ev->status, text, UC_REJECT_MSG);
		uc->failed++;
		return;
	}
	ex_info("connection %lu: rejected as expected (status %d), private "
		"data \"%s\"",
		n->index, ev->status, text);
	uc->rejected++;
}

/* Server side of the handshake */

static void refuse(struct rdma_cm_id *id, const char *why)
{
	if (rdma_reject(id, why, (uint8_t)(strlen(why) + 1)))
		ex_syserr("rdma_reject");
}

/*
 * Decides who disconnects from the client's hello and our own -d.
 * Returns -1, with the reason for the client in *why, on a conflict.
 */
static int server_negotiate(struct uc *uc, const struct rdma_cm_event *ev,
			    bool *server_disc, const char **why)
{
	struct uc_hello hello;

	if (!ev->param.conn.private_data ||
	    ev->param.conn.private_data_len < sizeof(hello)) {
		*why = "ucmatose: no hello in the connect request";
		return -1;
	}
	memcpy(&hello, ev->param.conn.private_data, sizeof(hello));
	if (be32toh(hello.magic) != UC_MAGIC) {
		*why = "ucmatose: not a ucmatose client";
		return -1;
	}
	if (be32toh(hello.count) != uc->o.count ||
	    be32toh(hello.size) != uc->o.size) {
		*why = "ucmatose: client and server disagree on -C or -S";
		return -1;
	}
	*server_disc = hello.flags & UC_DISC_SERVER;
	if (!uc->o.disc_explicit)
		return 0;
	if ((hello.flags & UC_DISC_EXPLICIT) &&
	    *server_disc != uc->o.disc_server) {
		*why = "ucmatose: client and server disagree on -d";
		return -1;
	}
	*server_disc = uc->o.disc_server;
	return 0;
}

/* Returns the id to destroy once the event is acknowledged, if any. */
static struct rdma_cm_id *server_request(struct uc *uc,
					 const struct rdma_cm_event *ev)
{
	struct rdma_conn_param param;
	struct rdma_cm_id *doomed;
	const char *why = NULL;
	struct uc_hello reply;
	bool server_disc;
	struct node *n;

	if (uc->o.reject) {
		refuse(ev->id, UC_REJECT_MSG);
		uc->refused++;
		return ev->id;
	}
	if (uc->used == uc->o.conns) {
		refuse(ev->id, "ucmatose: server has all its connections");
		return ev->id;
	}
	if (server_negotiate(uc, ev, &server_disc, &why)) {
		ex_err("refusing a connection: %s", why + strlen("ucmatose: "));
		refuse(ev->id, why);
		uc->failed++;
		return ev->id;
	}

	n = &uc->nodes[uc->used++];
	n->id = ev->id;
	n->id->context = n;
	n->initiator = server_disc;
	n->speaks_second =
		n->id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
	if (node_setup(n))
		goto fail;

	memset(&reply, 0, sizeof(reply));
	reply.magic = htobe32(UC_MAGIC);
	reply.flags = server_disc ? UC_DISC_SERVER : 0;
	memset(&param, 0, sizeof(param));
	param.private_data = &reply;
	param.private_data_len = sizeof(reply);
	param.responder_resources = 1;
	param.initiator_depth = 1;
	param.rnr_retry_count = 7;
	if (rdma_accept(n->id, &param)) {
		ex_syserr("connection %lu: rdma_accept", n->index);
		goto fail;
	}
	return NULL;
fail:
	refuse(n->id, "ucmatose: server could not set up the connection");
	uc->failed++;
	/* The id itself can only go once the event is acknowledged. */
	node_free_verbs(n);
	n->id->context = NULL;
	doomed = n->id;
	n->id = NULL;
	return doomed;
}

/* The event loop */

static void node_failed(struct uc *uc, struct node *n, const char *what,
			const struct rdma_cm_event *ev)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "connection %lu: %s", n->index, what);
	ex_report_event(buf, ev);
	uc->failed++;
}

static void node_disconnected(struct uc *uc, struct node *n)
{
	if (n->disconnected)
		return;
	n->disconnected = true;
	if (!n->connected) {
		/* Dropped during the handshake. */
		ex_err("connection %lu: disconnected before it was up",
		       n->index);
		uc->failed++;
		return;
	}
	uc->disconnected++;
	/* The peer started it: answer to complete the disconnect. */
	if (!n->disc_sent) {
		n->disc_sent = true;
		rdma_disconnect(n->id);
	}
}

/* Handles one event; returns an id to destroy after the ack, if any. */
static struct rdma_cm_id *handle_event(struct uc *uc,
				       const struct rdma_cm_event *ev)
{
	struct node *n = ev->id->context;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return server_request(uc, ev);
	if (!n) /* an id we already gave up on */
		return NULL;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(n->id, EX_RESOLVE_MS)) {
			ex_syserr("connection %lu: rdma_resolve_route",
				  n->index);
			uc->failed++;
		}
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (client_connect(n))
			uc->failed++;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (!uc->server && client_established(n, ev)) {
			uc->failed++;
			break;
		}
		n->connected = true;
		uc->connected++;
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (!uc->server)
			client_rejected(n, ev);
		else
			node_failed(uc, n, "accept", ev);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		node_disconnected(uc, n);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		node_failed(uc, n, "connect", ev);
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		break;
	default:
		ex_report_event("event loop", ev);
		break;
	}
	return NULL;
}

/* Processes events until done(uc) holds, or fails after a quiet timeout */
static int run_events(struct uc *uc, bool (*done)(struct uc *), int timeout_ms,
		      const char *what)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *doomed;

	while (!done(uc)) {
		if (ex_get_event(uc->ch, timeout_ms, &ev)) {
			if (errno == ETIMEDOUT)
				ex_err("%s: timed out after %d ms", what,
				       timeout_ms);
			return -1;
		}
		doomed = handle_event(uc, ev);
		ex_ack(ev);
		if (doomed && rdma_destroy_id(doomed))
			ex_syserr("rdma_destroy_id");
	}
	return 0;
}

static bool all_settled(struct uc *uc)
{
	if (uc->server && uc->o.reject)
		return uc->refused == uc->o.conns;
	return uc->connected + uc->failed + uc->rejected >= uc->o.conns;
}

static bool all_disconnected(struct uc *uc)
{
	return uc->disconnected + uc->failed >= uc->connected;
}

/* Data phase */

static int node_send_more(struct node *n)
{
	/* The fin goes last, once everything before it is acknowledged. */
	unsigned long fin = n->initiator ? n->send_want : n->send_want - 1;

	/* (A peer that sends nothing is not waited for.) */
	if (n->speaks_second && !n->recv_done && n->recv_want)
		return 0;
	while (n->send_posted < n->send_want &&
	       n->send_posted - n->send_done < UC_WINDOW) {
		if (n->send_posted == fin &&
		    (n->send_done < fin || n->recv_done < n->recv_want))
			break;
		if (ex_post_send(n->id->qp, n->mr, send_buf(n), n->uc->o.size,
				 WR_SEND))
			return -1;
		n->send_posted++;
	}
	return 0;
}

static int node_wc(struct node *n, const struct ibv_wc *wc)
{
	if (wc->wr_id == WR_SEND) {
		if (ex_wc_ok(wc, "send"))
			return -1;
		n->send_done++;
		return 0;
	}
	if (ex_wc_ok(wc, "receive"))
		return -1;
	if (wc->byte_len != n->uc->o.size) {
		ex_err("connection %lu: received %u bytes, expected %u",
		       n->index, wc->byte_len, n->uc->o.size);
		return -1;
	}
	n->recv_done++;
	if (n->recv_posted < n->recv_budget) {
		if (post_recv_slot(n, wc->wr_id))
			return -1;
		n->recv_posted++;
	}
	return 0;
}

/* Advances one connection; returns 1 when it made progress. */
static int node_poll(struct node *n)
{
	struct ibv_wc wc[8];
	int i, got;

	if (node_send_more(n))
		return -1;
	got = ibv_poll_cq(n->cq, 8, wc);
	if (got < 0) {
		ex_err("connection %lu: ibv_poll_cq failed", n->index);
		return -1;
	}
	for (i = 0; i < got; i++)
		if (node_wc(n, &wc[i]))
			return -1;

	/* The side that sends the fin does not wait for its ack. */
	if (n->recv_done == n->recv_want &&
	    (n->initiator ? n->send_done == n->send_want
			  : n->send_posted == n->send_want))
		n->done = true;
	return got > 0;
}

/*
 * Moves all the messages, polling every CQ in turn.  Busy polling keeps
 * the loop simple for any number of connections; the timeout is one of
 * inactivity, so long runs are fine while a stuck one still ends.
 */
static int data_phase(struct uc *uc)
{
	uint64_t last = ex_now_us();
	unsigned long i, busy;
	int ret;

	do {
		busy = 0;
		for (i = 0; i < uc->used; i++) {
			struct node *n = &uc->nodes[i];

			if (!n->connected || n->done)
				continue;
			busy++;
			ret = node_poll(n);
			if (ret < 0)
				return -1;
			if (ret)
				last = ex_now_us();
		}
		if (ex_now_us() - last > (uint64_t)EX_WAIT_MS * 1000) {
			ex_err("data transfer: no progress for %d ms",
			       EX_WAIT_MS);
			return -1;
		}
	} while (busy);
	return 0;
}

static int disconnect_phase(struct uc *uc)
{
	unsigned long i;

	for (i = 0; i < uc->used; i++) {
		struct node *n = &uc->nodes[i];

		if (!n->connected || !n->initiator || n->disc_sent)
			continue;
		n->disc_sent = true;
		if (rdma_disconnect(n->id)) {
			ex_syserr("connection %lu: rdma_disconnect", n->index);
			uc->failed++;
		}
	}
	return run_events(uc, all_disconnected, EX_WAIT_MS, "disconnecting");
}

/* Setup of each side */

static int start_client(struct uc *uc)
{
	struct ex_addr dst, src;
	char peer[EX_ADDRSTRLEN];
	unsigned long i;

	if (ex_resolve(uc->o.dst, uc->o.port, 0, RDMA_PS_TCP, &dst))
		return -1;
	if (uc->o.src &&
	    ex_resolve(uc->o.src, NULL, EX_RES_PASSIVE, RDMA_PS_TCP, &src))
		return -1;
	ex_info("connecting %lu connection%s to %s", uc->o.conns,
		uc->o.conns == 1 ? "" : "s",
		ex_ntop(ex_sa(&dst), peer, sizeof(peer)));

	for (i = 0; i < uc->o.conns; i++) {
		struct node *n = &uc->nodes[i];

		if (rdma_create_id(uc->ch, &n->id, n, RDMA_PS_TCP)) {
			ex_syserr("connection %lu: rdma_create_id", i);
			n->id = NULL;
			return -1;
		}
		uc->used++;
		ex_set_tos(n->id, tos_of(uc));
		if (rdma_resolve_addr(n->id, uc->o.src ? ex_sa(&src) : NULL,
				      ex_sa(&dst), EX_RESOLVE_MS)) {
			ex_syserr("connection %lu: rdma_resolve_addr", i);
			return -1;
		}
	}
	return 0;
}

static int start_server(struct uc *uc)
{
	char local[EX_ADDRSTRLEN];

	/* Room for every client to knock at once. */
	if (ex_listen(uc->ch, uc->o.src, uc->o.port, RDMA_PS_TCP,
		      (int)uc->o.conns, tos_of(uc), &uc->listen_id))
		return -1;
	ex_info("listening on %s for %lu connection%s",
		ex_ntop(rdma_get_local_addr(uc->listen_id), local,
			sizeof(local)),
		uc->o.conns, uc->o.conns == 1 ? "" : "s");
	return 0;
}

static int run(struct uc *uc)
{
	bool initiator;

	if (uc->server ? start_server(uc) : start_client(uc))
		return -1;
	/* A server waits as long as it takes for its clients to come. */
	if (run_events(uc, all_settled, uc->server ? EX_FOREVER : EX_WAIT_MS,
		       "connecting"))
		return -1;

	if (uc->server && uc->o.reject) {
		ex_info("rejected %lu connection%s with private data",
			uc->refused, uc->refused == 1 ? "" : "s");
		return 0;
	}
	if (!uc->server && uc->o.reject) {
		if (uc->rejected == uc->o.conns)
			return 0;
		ex_err("expected every connection to be rejected, but %lu "
		       "of %lu were not",
		       uc->o.conns - uc->rejected, uc->o.conns);
		return -1;
	}
	if (uc->failed) {
		ex_err("%lu of %lu connections failed", uc->failed,
		       uc->o.conns);
		return -1;
	}
	ex_info("%lu connection%s established", uc->connected,
		uc->connected == 1 ? "" : "s");

	if (data_phase(uc))
		return -1;
	ex_info("exchanged %lu message%s of %u bytes each way on every "
		"connection",
		uc->o.count, uc->o.count == 1 ? "" : "s", uc->o.size);

	initiator = uc->used && uc->nodes[0].initiator;
	if (disconnect_phase(uc))
		return -1;
	if (uc->failed)
		return -1;
	ex_info("%lu connection%s disconnected by the %s", uc->disconnected,
		uc->disconnected == 1 ? "" : "s",
		initiator == uc->server ? "server" : "client");
	return 0;
}

/* Command line */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-b address] [options]            (server)\n"
		"       %s -s address [-b address] [options] (client)\n"
		"Many RC connections at once, with SEND/RECV both ways.\n"
		"\n"
		"  -s address   connect to this server (otherwise be the "
		"server)\n"
		"  -b address   address to listen on, or to connect from\n"
		"  -p port      port number (default %s)\n"
		"  -c count     number of connections (default %d)\n"
		"  -C count     messages each way per connection (default "
		"%d)\n"
		"  -S size      message size in bytes, 1 to %u (default %d)\n"
		"  -d side      who disconnects: client or server (default "
		"client)\n"
		"  -R           server: reject every connection with private "
		"data\n"
		"               client: expect to be rejected that way\n"
		"  -t tos       type of service for the connections\n"
		"  -q           quiet: print errors only\n"
		"  -h           show this help\n",
		ex_prog(), ex_prog(), UC_PORT, UC_DEF_CONNS, UC_DEF_COUNT,
		UC_MAX_SIZE, UC_DEF_SIZE);
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	unsigned long v;
	int op;

	o->port = UC_PORT;
	o->conns = UC_DEF_CONNS;
	o->count = UC_DEF_COUNT;
	o->size = UC_DEF_SIZE;
	while ((op = getopt(argc, argv, "s:b:p:c:C:S:d:Rt:qh")) != -1) {
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
			if (ex_parse_num(optarg, 'c', 1, UC_MAX_CONNS,
					 &o->conns))
				return ex_usage_hint();
			break;
		case 'C':
			if (ex_parse_num(optarg, 'C', 0, UINT32_MAX, &o->count))
				return ex_usage_hint();
			break;
		case 'S':
			if (ex_parse_num(optarg, 'S', 1, UC_MAX_SIZE, &v))
				return ex_usage_hint();
			o->size = (uint32_t)v;
			break;
		case 'd':
			if (strcmp(optarg, "client") &&
			    strcmp(optarg, "server")) {
				ex_err("-d: say 'client' or 'server'");
				return ex_usage_hint();
			}
			o->disc_server = !strcmp(optarg, "server");
			o->disc_explicit = true;
			break;
		case 'R':
			o->reject = true;
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
	struct uc uc;
	unsigned long i;
	int ret;

	ex_init(argv[0]);
	memset(&uc, 0, sizeof(uc));
	ret = parse_opts(argc, argv, &uc.o);
	if (ret)
		return ret;
	uc.server = !uc.o.dst;

	uc.nodes = calloc(uc.o.conns, sizeof(*uc.nodes));
	if (!uc.nodes) {
		ex_syserr("calloc");
		return EX_FAIL;
	}
	for (i = 0; i < uc.o.conns; i++) {
		uc.nodes[i].uc = &uc;
		uc.nodes[i].index = i;
	}
	uc.ch = rdma_create_event_channel();
	if (!uc.ch) {
		ex_syserr("rdma_create_event_channel");
		free(uc.nodes);
		return EX_FAIL;
	}

	ret = run(&uc);

	for (i = 0; i < uc.used; i++)
		node_free(&uc.nodes[i]);
	if (uc.listen_id && rdma_destroy_id(uc.listen_id))
		ex_syserr("rdma_destroy_id");
	rdma_destroy_event_channel(uc.ch);
	free(uc.nodes);
	if (!ret)
		ex_info("OK");
	return ret ? EX_FAIL : EX_OK;
}
