// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * cmtime: how long each RDMA CM step takes, over many connections.
 *
 * The client takes -c connections through every step of a connection's
 * life, one step at a time for all of them: create the id, resolve the
 * address, resolve the route, create the QP, connect, disconnect, destroy
 * the QP, destroy the id.  Asynchronous steps are started for every
 * connection before any is waited for, as a busy server would, and the
 * events are taken as they come from one channel.
 *
 * For each step it prints the wall-clock time from the first start to the
 * last completion ("total"), and the average, smallest and largest time
 * one connection took from its own start to its own completion.
 *
 * The server accepts -c connections, answers their disconnects, and
 * prints how long the accepting and the disconnecting took overall.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define CT_PORT "7474"
#define CT_DEF_CONNS 100
#define CT_MAX_CONNS 10000
#define CT_MAX_DEVS 8

enum step {
	S_CREATE_ID,
	S_RESOLVE_ADDR,
	S_RESOLVE_ROUTE,
	S_CREATE_QP,
	S_CONNECT,
	S_DISCONNECT,
	S_DESTROY_QP,
	S_DESTROY_ID,
	S_COUNT
};

static const char *const step_names[S_COUNT] = {
	[S_CREATE_ID] = "create id",
	[S_RESOLVE_ADDR] = "resolve addr",
	[S_RESOLVE_ROUTE] = "resolve route",
	[S_CREATE_QP] = "create qp",
	[S_CONNECT] = "connect",
	[S_DISCONNECT] = "disconnect",
	[S_DESTROY_QP] = "destroy qp",
	[S_DESTROY_ID] = "destroy id",
};

struct opts {
	const char *dst;
	const char *src;
	const char *port;
	unsigned long conns;
	int timeout_ms;
};

struct node {
	struct rdma_cm_id *id;
	uint64_t start[S_COUNT];
	uint64_t end[S_COUNT];
	bool waiting; /* an asynchronous step is in progress */
	bool failed;
	bool connected;
};

/* QPs of all connections on a device share one PD and one CQ. */
struct dev {
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
};

struct ct {
	struct opts o;
	bool server;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id;
	struct node *nodes;
	unsigned long used;
	struct dev devs[CT_MAX_DEVS];
	int ndevs;
	unsigned long qps; /* QPs alive, so device resources go in time */
	/* The asynchronous step in progress. */
	enum step step;
	enum rdma_cm_event_type want;
	unsigned long pending, failed;
	uint64_t step_start[S_COUNT];
	uint64_t step_end[S_COUNT];
};

/* Devices */

static struct dev *get_dev(struct ct *ct, struct ibv_context *verbs)
{
	struct dev *d;
	int i;

	for (i = 0; i < ct->ndevs; i++)
		if (ct->devs[i].verbs == verbs)
			return &ct->devs[i];
	if (ct->ndevs == CT_MAX_DEVS) {
		ex_err("more than %d devices in use", CT_MAX_DEVS);
		return NULL;
	}
	d = &ct->devs[ct->ndevs];
	d->verbs = verbs;
	d->pd = ibv_alloc_pd(verbs);
	if (!d->pd) {
		ex_syserr("ibv_alloc_pd");
		return NULL;
	}
	/* No work is ever posted: the CQ only has to exist. */
	d->cq = ibv_create_cq(verbs, 16, NULL, NULL, 0);
	if (!d->cq) {
		ex_syserr("ibv_create_cq");
		ibv_dealloc_pd(d->pd);
		return NULL;
	}
	ct->ndevs++;
	return d;
}

/*
 * Frees the shared PDs and CQs.  Called once the last QP is gone but
 * while ids still hold the devices, so no verbs object outlives the
 * library's hold on its device.
 */
static void put_devs(struct ct *ct)
{
	int i;

	for (i = 0; i < ct->ndevs; i++) {
		if (ibv_destroy_cq(ct->devs[i].cq))
			ex_syserr("ibv_destroy_cq");
		if (ibv_dealloc_pd(ct->devs[i].pd))
			ex_syserr("ibv_dealloc_pd");
	}
	ct->ndevs = 0;
}

static int create_qp(struct ct *ct, struct node *n)
{
	struct ibv_qp_init_attr attr;
	struct dev *d = get_dev(ct, n->id->verbs);

	if (!d)
		return -1;
	memset(&attr, 0, sizeof(attr));
	attr.send_cq = d->cq;
	attr.recv_cq = d->cq;
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = 1;
	attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	if (rdma_create_qp(n->id, d->pd, &attr)) {
		ex_syserr("rdma_create_qp");
		return -1;
	}
	ct->qps++;
	return 0;
}

static void destroy_qp(struct ct *ct, struct node *n)
{
	if (!n->id || !n->id->qp)
		return;
	rdma_destroy_qp(n->id);
	if (!--ct->qps)
		put_devs(ct);
}

/* Client: running the steps */

static void node_fail(struct ct *ct, struct node *n)
{
	if (n->waiting) {
		n->waiting = false;
		ct->pending--;
	}
	if (!n->failed) {
		n->failed = true;
		ct->failed++;
	}
}

static void client_event(struct ct *ct, const struct rdma_cm_event *ev)
{
	struct node *n = ev->id->context;
	char what[64];

	if (ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT ||
	    ev->event == RDMA_CM_EVENT_ADDR_CHANGE)
		return;
	if (n->waiting && ev->event == ct->want && !ev->status) {
		n->end[ct->step] = ex_now_us();
		n->waiting = false;
		ct->pending--;
		return;
	}
	snprintf(what, sizeof(what), "connection %ld, %s",
		 (long)(n - ct->nodes), step_names[ct->step]);
	ex_report_event(what, ev);
	node_fail(ct, n);
}

static int take_event(struct ct *ct, int timeout_ms)
{
	struct rdma_cm_event *ev;

	if (ex_get_event(ct->ch, timeout_ms, &ev))
		return -1;
	client_event(ct, ev);
	ex_ack(ev);
	return 0;
}

/* Takes the events already queued, so completions are timed promptly. */
static int drain(struct ct *ct)
{
	while (!take_event(ct, 0))
		;
	return errno == ETIMEDOUT ? 0 : -1;
}

static int start_resolve_addr(struct ct *ct, struct node *n,
			      struct sockaddr *src, struct sockaddr *dst)
{
	if (rdma_resolve_addr(n->id, src, dst, ct->o.timeout_ms)) {
		ex_syserr("rdma_resolve_addr");
		return -1;
	}
	return 0;
}

static int start_step(struct ct *ct, struct node *n, struct sockaddr *src,
		      struct sockaddr *dst)
{
	struct rdma_conn_param param;

	switch (ct->step) {
	case S_RESOLVE_ADDR:
		return start_resolve_addr(ct, n, src, dst);
	case S_RESOLVE_ROUTE:
		if (rdma_resolve_route(n->id, ct->o.timeout_ms)) {
			ex_syserr("rdma_resolve_route");
			return -1;
		}
		return 0;
	case S_CONNECT:
		memset(&param, 0, sizeof(param));
		param.responder_resources = 1;
		param.initiator_depth = 1;
		param.retry_count = 7;
		param.rnr_retry_count = 7;
		if (rdma_connect(n->id, &param)) {
			ex_syserr("rdma_connect");
			return -1;
		}
		return 0;
	case S_DISCONNECT:
		if (rdma_disconnect(n->id)) {
			ex_syserr("rdma_disconnect");
			return -1;
		}
		return 0;
	default:
		return -1;
	}
}

/* Starts step s on every live connection, then waits for all of them. */
static int async_step(struct ct *ct, enum step s, enum rdma_cm_event_type want,
		      struct sockaddr *src, struct sockaddr *dst)
{
	unsigned long i;

	ct->step = s;
	ct->want = want;
	ct->pending = 0;
	ct->step_start[s] = ex_now_us();
	for (i = 0; i < ct->used; i++) {
		struct node *n = &ct->nodes[i];

		if (n->failed)
			continue;
		n->start[s] = ex_now_us();
		if (start_step(ct, n, src, dst)) {
			node_fail(ct, n);
			continue;
		}
		n->waiting = true;
		ct->pending++;
		if (drain(ct))
			return -1;
	}
	while (ct->pending) {
		if (take_event(ct, EX_WAIT_MS)) {
			if (errno == ETIMEDOUT)
				ex_err("%s: %lu connection%s still waiting "
				       "after %d ms",
				       step_names[s], ct->pending,
				       ct->pending == 1 ? "" : "s", EX_WAIT_MS);
			return -1;
		}
	}
	ct->step_end[s] = ex_now_us();
	return 0;
}

/* Runs a synchronous step on every live connection, timing each call. */
static int sync_step(struct ct *ct, enum step s)
{
	unsigned long i;
	int ret;

	ct->step_start[s] = ex_now_us();
	for (i = 0; i < ct->used; i++) {
		struct node *n = &ct->nodes[i];

		/* Teardown also covers connections that failed. */
		if (!n->id ||
		    (n->failed && s != S_DESTROY_QP && s != S_DESTROY_ID))
			continue;
		n->start[s] = ex_now_us();
		ret = 0;
		switch (s) {
		case S_CREATE_QP:
			ret = create_qp(ct, n);
			break;
		case S_DESTROY_QP:
			destroy_qp(ct, n);
			break;
		case S_DESTROY_ID:
			ret = rdma_destroy_id(n->id);
			if (ret)
				ex_syserr("rdma_destroy_id");
			n->id = NULL;
			break;
		default:
			break;
		}
		n->end[s] = ex_now_us();
		if (ret)
			node_fail(ct, n);
	}
	ct->step_end[s] = ex_now_us();
	return 0;
}

static int create_ids(struct ct *ct)
{
	unsigned long i;

	ct->step_start[S_CREATE_ID] = ex_now_us();
	for (i = 0; i < ct->o.conns; i++) {
		struct node *n = &ct->nodes[i];

		n->start[S_CREATE_ID] = ex_now_us();
		if (rdma_create_id(ct->ch, &n->id, n, RDMA_PS_TCP)) {
			ex_syserr("rdma_create_id");
			n->id = NULL;
			return -1;
		}
		n->end[S_CREATE_ID] = ex_now_us();
		ct->used++;
	}
	ct->step_end[S_CREATE_ID] = ex_now_us();
	return 0;
}

static void print_table(struct ct *ct)
{
	unsigned long i, done;
	uint64_t sum, min, max, d;
	int s;

	printf("%-14s %12s %12s %12s %12s\n", "step", "total us", "avg us",
	       "min us", "max us");
	for (s = 0; s < S_COUNT; s++) {
		sum = max = done = 0;
		min = UINT64_MAX;
		for (i = 0; i < ct->used; i++) {
			struct node *n = &ct->nodes[i];

			if (!n->end[s])
				continue;
			d = n->end[s] - n->start[s];
			sum += d;
			min = d < min ? d : min;
			max = d > max ? d : max;
			done++;
		}
		if (!done) {
			printf("%-14s %12s\n", step_names[s], "-");
			continue;
		}
		printf("%-14s %12llu %12.2f %12llu %12llu\n", step_names[s],
		       (unsigned long long)(ct->step_end[s] -
					    ct->step_start[s]),
		       (double)sum / (double)done, (unsigned long long)min,
		       (unsigned long long)max);
	}
}

static int run_client(struct ct *ct)
{
	char peer[EX_ADDRSTRLEN];
	struct ex_addr dst, src;
	struct sockaddr *srcp = NULL;

	if (ex_resolve(ct->o.dst, ct->o.port, 0, RDMA_PS_TCP, &dst))
		return -1;
	if (ct->o.src) {
		if (ex_resolve(ct->o.src, NULL, EX_RES_PASSIVE, RDMA_PS_TCP,
			       &src))
			return -1;
		srcp = ex_sa(&src);
	}
	ex_info("timing %lu connection%s to %s", ct->o.conns,
		ct->o.conns == 1 ? "" : "s",
		ex_ntop(ex_sa(&dst), peer, sizeof(peer)));

	if (create_ids(ct) ||
	    async_step(ct, S_RESOLVE_ADDR, RDMA_CM_EVENT_ADDR_RESOLVED, srcp,
		       ex_sa(&dst)) ||
	    async_step(ct, S_RESOLVE_ROUTE, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL,
		       NULL) ||
	    sync_step(ct, S_CREATE_QP) ||
	    async_step(ct, S_CONNECT, RDMA_CM_EVENT_ESTABLISHED, NULL, NULL) ||
	    async_step(ct, S_DISCONNECT, RDMA_CM_EVENT_DISCONNECTED, NULL,
		       NULL) ||
	    sync_step(ct, S_DESTROY_QP) || sync_step(ct, S_DESTROY_ID))
		return -1;

	print_table(ct);
	if (ct->failed) {
		ex_err("%lu of %lu connections failed", ct->failed,
		       ct->o.conns);
		return -1;
	}
	return 0;
}

/* Server */

struct server_stats {
	unsigned long accepted, established, disconnected, failed;
	uint64_t first_req, last_est, first_disc, last_disc;
};

static struct node *server_request(struct ct *ct, struct rdma_cm_id *id)
{
	struct rdma_conn_param param;
	struct node *n;

	if (ct->used == ct->o.conns) {
		ex_err("more connections than -c %lu: rejecting", ct->o.conns);
		rdma_reject(id, NULL, 0);
		return NULL;
	}
	n = &ct->nodes[ct->used++];
	n->id = id;
	id->context = n;
	n->start[S_CONNECT] = ex_now_us();
	if (create_qp(ct, n))
		goto fail;
	memset(&param, 0, sizeof(param));
	param.responder_resources = 1;
	param.initiator_depth = 1;
	param.rnr_retry_count = 7;
	if (rdma_accept(id, &param)) {
		ex_syserr("rdma_accept");
		goto fail;
	}
	return n;
fail:
	rdma_reject(id, NULL, 0);
	n->failed = true;
	return n;
}

/*
 * Handles one server event.  Returns the id to destroy once the event is
 * acknowledged, if any.
 */
static struct rdma_cm_id *server_event(struct ct *ct, struct server_stats *st,
				       const struct rdma_cm_event *ev)
{
	uint64_t now = ex_now_us();
	struct node *n;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		if (!st->first_req)
			st->first_req = now;
		n = server_request(ct, ev->id);
		if (!n)
			return ev->id;
		if (!n->failed) {
			st->accepted++;
			return NULL;
		}
		st->failed++;
		destroy_qp(ct, n);
		n->id = NULL;
		return ev->id;
	}

	n = ev->id->context;
	if (!n || ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT)
		return NULL;
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
		n->connected = true;
		st->established++;
		st->last_est = now;
		return NULL;
	}
	if (ev->event == RDMA_CM_EVENT_DISCONNECTED && n->connected) {
		if (!st->first_disc)
			st->first_disc = now;
		st->last_disc = now;
		st->disconnected++;
	} else {
		ex_report_event("server", ev);
		st->failed++;
	}
	/* Either way this connection is over: take it down. */
	destroy_qp(ct, n);
	n->id = NULL;
	return ev->id;
}

static int run_server(struct ct *ct)
{
	char local[EX_ADDRSTRLEN];
	struct server_stats st;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *doomed;

	memset(&st, 0, sizeof(st));
	if (ex_listen(ct->ch, ct->o.src, ct->o.port, RDMA_PS_TCP,
		      (int)ct->o.conns, NULL, &ct->listen_id))
		return -1;
	ex_info("listening on %s for %lu connection%s",
		ex_ntop(rdma_get_local_addr(ct->listen_id), local,
			sizeof(local)),
		ct->o.conns, ct->o.conns == 1 ? "" : "s");

	while (st.disconnected + st.failed < ct->o.conns) {
		/* Idle until the first client; then it must keep moving. */
		if (ex_get_event(ct->ch, st.first_req ? EX_WAIT_MS : EX_FOREVER,
				 &ev)) {
			if (errno == ETIMEDOUT)
				ex_err("%lu of %lu connections still open "
				       "after %d ms of silence",
				       ct->o.conns - st.disconnected -
					       st.failed,
				       ct->o.conns, EX_WAIT_MS);
			return -1;
		}
		doomed = server_event(ct, &st, ev);
		ex_ack(ev);
		if (doomed && rdma_destroy_id(doomed))
			ex_syserr("rdma_destroy_id");
	}

	if (st.established)
		ex_info("%lu connection%s established in %llu us",
			st.established, st.established == 1 ? "" : "s",
			(unsigned long long)(st.last_est - st.first_req));
	if (st.disconnected)
		ex_info("%lu connection%s disconnected in %llu us",
			st.disconnected, st.disconnected == 1 ? "" : "s",
			(unsigned long long)(st.last_disc - st.first_disc));
	if (st.failed) {
		ex_err("%lu of %lu connections failed", st.failed, ct->o.conns);
		return -1;
	}
	return 0;
}

/* Command line */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-b address] [options]            (server)\n"
		"       %s -s address [-b address] [options] (client)\n"
		"Time each step of setting up and tearing down connections.\n"
		"\n"
		"  -s address   connect to this server (otherwise be the "
		"server)\n"
		"  -b address   address to listen on, or to connect from\n"
		"  -p port      port number (default %s)\n"
		"  -c count     number of connections (default %d)\n"
		"  -t ms        address and route resolution timeout "
		"(default %d)\n"
		"  -q           quiet: print only the table and errors\n"
		"  -h           show this help\n",
		ex_prog(), ex_prog(), CT_PORT, CT_DEF_CONNS, EX_RESOLVE_MS);
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	unsigned long v;
	int op;

	o->port = CT_PORT;
	o->conns = CT_DEF_CONNS;
	o->timeout_ms = EX_RESOLVE_MS;
	while ((op = getopt(argc, argv, "s:b:p:c:t:qh")) != -1) {
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
			if (ex_parse_num(optarg, 'c', 1, CT_MAX_CONNS,
					 &o->conns))
				return ex_usage_hint();
			break;
		case 't':
			if (ex_parse_num(optarg, 't', 1, 600000, &v))
				return ex_usage_hint();
			o->timeout_ms = (int)v;
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
	struct ct ct;
	int ret;

	ex_init(argv[0]);
	memset(&ct, 0, sizeof(ct));
	ret = parse_opts(argc, argv, &ct.o);
	if (ret)
		return ret;
	ct.server = !ct.o.dst;

	ct.nodes = calloc(ct.o.conns, sizeof(*ct.nodes));
	if (!ct.nodes) {
		ex_syserr("calloc");
		return EX_FAIL;
	}
	ct.ch = rdma_create_event_channel();
	if (!ct.ch) {
		ex_syserr("rdma_create_event_channel");
		free(ct.nodes);
		return EX_FAIL;
	}

	ret = ct.server ? run_server(&ct) : run_client(&ct);

	/* After a failure, whatever is left: QPs first, then the ids. */
	for (i = 0; i < ct.used; i++)
		destroy_qp(&ct, &ct.nodes[i]);
	for (i = 0; i < ct.used; i++)
		if (ct.nodes[i].id && rdma_destroy_id(ct.nodes[i].id))
			ex_syserr("rdma_destroy_id");
	if (ct.listen_id && rdma_destroy_id(ct.listen_id))
		ex_syserr("rdma_destroy_id");
	put_devs(&ct);
	rdma_destroy_event_channel(ct.ch);
	free(ct.nodes);
	return ret ? EX_FAIL : EX_OK;
}
