// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The limit for connection setup: cm_bench's steps done with no connection
 * manager library at all, the rdma_cm commands written straight to
 * /dev/infiniband/rdma_cm and the QPs made with libibverbs, as perftest's
 * raw verbs are the limit for rsockets' data path.
 *
 *   cm_bench limit <addr> <n> [<reps>]
 *
 * The same steps, counts, window and output lines as `cm_bench steps`
 * (cm_bench runs this file's table through the same loop; run.sh reports
 * it as the "limit" column), with only the commands a connection needs on
 * this kernel ABI:
 *
 *   active:  CREATE_ID, RESOLVE_ADDR, RESOLVE_ROUTE, CONNECT,
 *            INIT_QP_ATTR (RTR, RTS), ACCEPT (the RTU), DISCONNECT,
 *            DESTROY_ID, and a GET_EVENT for each of the address, the
 *            route, the REP and the disconnection;
 *   passive: INIT_QP_ATTR (RTR, RTS), ACCEPT, DISCONNECT, DESTROY_ID,
 *            and a GET_EVENT for the REQ, the RTU and the disconnection.
 *
 * (The QPs' INIT attributes are set without asking the kernel, as a
 * library can: port 1, the test bed's device's only one.)
 *
 * A library does more: it fills in what its events and ids promise (the
 * addresses, the route's path records, the device), which this program
 * never looks at.  Like the libraries, it moves a QP to the error state
 * before its DISCONNECT (the posted work requests' flush programs wait
 * for).  It calls none of librdmacm's functions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_cma.h>

/* The kernel's command ABI, beside rdma_cma.h (the header says how). */
#include "../../src/cm/kern_abi.h"
#include "../system/harness.h"
#include "steps.h"

/*
 * Event uids: an active id's is its index + 1 (the kernel drops the events
 * of an id whose uid is 0), a passive one's has this bit too.
 */
#define PASSIVE 0x80000000u

struct conn {
	uint32_t id; /* the kernel's handle */
	struct ibv_qp *qp;
};

struct limit {
	const char *addr;
	int n;
	int afd, pfd; /* active, passive: one rdma_cm file each */
	uint32_t listen_id;
	struct sockaddr_storage dst;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_cq *acq, *pcq;
	struct conn *act, *pas;
	int pas_count;
	int batch;
};

/*
 * One rdma_cm command: header, then the command's own structure (through
 * cm_bench's write(), which counts it).
 */
static int ucma_cmd(int fd, uint32_t cmd, void *in, size_t in_len,
		    size_t out_len)
{
	struct {
		struct rdma_ucm_cmd_hdr hdr;
		uint8_t body[512];
	} msg;
	ssize_t n;

	msg.hdr.cmd = cmd;
	msg.hdr.in = (uint16_t)in_len;
	msg.hdr.out = (uint16_t)out_len;
	memcpy(msg.body, in, in_len);
	n = write(fd, &msg, sizeof(msg.hdr) + in_len);
	return n == (ssize_t)(sizeof(msg.hdr) + in_len) ? 0 : -1;
}

#define CMD(fd, cmd, s, out)                                                   \
	do {                                                                   \
		if (ucma_cmd(fd, cmd, &(s), sizeof(s), out))                   \
			hx_fail("%s: %s", #cmd, strerror(errno));              \
	} while (0)

static uint32_t create_id(int fd, uint64_t uid)
{
	struct rdma_ucm_create_id_resp resp;
	struct rdma_ucm_create_id cmd = {.uid = uid,
					 .response = (uintptr_t)&resp,
					 .ps = RDMA_PS_TCP,
					 .qp_type = IBV_QPT_RC};

	CMD(fd, RDMA_USER_CM_CMD_CREATE_ID, cmd, sizeof(resp));
	return resp.id;
}

static void destroy_id(int fd, uint32_t id)
{
	struct rdma_ucm_destroy_id_resp resp;
	struct rdma_ucm_destroy_id cmd = {.response = (uintptr_t)&resp,
					  .id = id};

	CMD(fd, RDMA_USER_CM_CMD_DESTROY_ID, cmd, sizeof(resp));
}

/* The kernel's QP attributes for @state, as libibverbs takes them. */
static void qp_attr_for(int fd, uint32_t id, int state, struct ibv_qp_attr *a,
			int *mask)
{
	struct ib_uverbs_qp_attr k;
	struct rdma_ucm_init_qp_attr cmd = {.response = (uintptr_t)&k,
					    .id = id,
					    .qp_state = (uint32_t)state};

	CMD(fd, RDMA_USER_CM_CMD_INIT_QP_ATTR, cmd, sizeof(k));
	memset(a, 0, sizeof(*a));
	*mask = (int)k.qp_attr_mask;
	a->qp_state = (enum ibv_qp_state)k.qp_state;
	a->path_mtu = (enum ibv_mtu)k.path_mtu;
	a->qkey = k.qkey;
	a->rq_psn = k.rq_psn;
	a->sq_psn = k.sq_psn;
	a->dest_qp_num = k.dest_qp_num;
	a->qp_access_flags = (int)k.qp_access_flags;
	memcpy(a->ah_attr.grh.dgid.raw, k.ah_attr.grh.dgid, 16);
	a->ah_attr.grh.flow_label = k.ah_attr.grh.flow_label;
	a->ah_attr.grh.sgid_index = k.ah_attr.grh.sgid_index;
	a->ah_attr.grh.hop_limit = k.ah_attr.grh.hop_limit;
	a->ah_attr.grh.traffic_class = k.ah_attr.grh.traffic_class;
	a->ah_attr.dlid = k.ah_attr.dlid;
	a->ah_attr.sl = k.ah_attr.sl;
	a->ah_attr.src_path_bits = k.ah_attr.src_path_bits;
	a->ah_attr.static_rate = k.ah_attr.static_rate;
	a->ah_attr.is_global = k.ah_attr.is_global;
	a->ah_attr.port_num = k.ah_attr.port_num;
	a->pkey_index = k.pkey_index;
	a->max_rd_atomic = k.max_rd_atomic;
	a->max_dest_rd_atomic = k.max_dest_rd_atomic;
	a->min_rnr_timer = k.min_rnr_timer;
	a->port_num = k.port_num;
	a->timeout = k.timeout;
	a->retry_cnt = k.retry_cnt;
	a->rnr_retry = k.rnr_retry;
}

/*
 * INIT needs nothing the CM negotiated: the port (the test bed's device has
 * one), the first P_Key and the access rights, set here as a library can.
 */
static void init_attr(struct ibv_qp_attr *a, int *mask)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_INIT;
	a->port_num = 1;
	a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_REMOTE_WRITE;
	*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		IBV_QP_ACCESS_FLAGS;
}

static void move_qp(int fd, struct conn *c, int state)
{
	struct ibv_qp_attr a;
	int mask;

	if (state == IBV_QPS_INIT)
		init_attr(&a, &mask);
	else
		qp_attr_for(fd, c->id, state, &a, &mask);
	if (ibv_modify_qp(c->qp, &a, mask))
		hx_fail("ibv_modify_qp to %d: %s", state, strerror(errno));
}

static struct ibv_qp *make_qp(struct limit *l, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 2,
			.max_recv_wr = 2,
			.max_send_sge = 1,
			.max_recv_sge = 1},
	};
	struct ibv_qp *qp = ibv_create_qp(l->pd, &a);

	if (!qp)
		hx_fail("ibv_create_qp: %s", strerror(errno));
	return qp;
}

static void conn_param(struct rdma_ucm_conn_param *p, uint32_t qp_num)
{
	memset(p, 0, sizeof(*p));
	p->qp_num = qp_num;
	p->responder_resources = 1;
	p->initiator_depth = 1;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
	p->valid = 1;
}

/* The QP to the error state (its work requests flush), then DISCONNECT. */
static void disconnect(int fd, struct conn *c)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
	struct rdma_ucm_disconnect cmd = {.id = c->id};

	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE))
		hx_fail("ibv_modify_qp to the error state: %s",
			strerror(errno));
	CMD(fd, RDMA_USER_CM_CMD_DISCONNECT, cmd, 0);
}

/* The next event on @fd, or false if none is waiting. */
static bool next_event(int fd, struct rdma_ucm_event_resp *ev)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	struct rdma_ucm_get_event cmd = {.response = (uintptr_t)ev};

	if (poll(&p, 1, 0) != 1)
		return false;
	CMD(fd, RDMA_USER_CM_CMD_GET_EVENT, cmd, sizeof(*ev));
	return true;
}

/* Wait for @n events of @type on the active side. */
static void collect(struct limit *l, int n, uint32_t type)
{
	struct pollfd p = {.fd = l->afd, .events = POLLIN};
	struct rdma_ucm_event_resp ev;

	while (n > 0) {
		if (poll(&p, 1, hx_event_timeout_ms()) != 1)
			hx_fail("no event %u within %d ms", type,
				hx_event_timeout_ms());
		if (!next_event(l->afd, &ev))
			continue;
		if (ev.event == type && !ev.status)
			n--;
		else if (ev.event != RDMA_CM_EVENT_TIMEWAIT_EXIT)
			hx_fail("active side: event %u (status %d)", ev.event,
				(int)ev.status);
	}
}

/* The passive side's part: a QP taken to RTS, then ACCEPT. */
static void accept_request(struct limit *l, uint32_t id)
{
	struct rdma_ucm_accept cmd = {.uid = PASSIVE | (uint32_t)l->pas_count,
				      .id = id};
	struct conn *c = &l->pas[l->pas_count++];

	c->id = id;
	c->qp = make_qp(l, l->pcq);
	move_qp(l->pfd, c, IBV_QPS_INIT);
	move_qp(l->pfd, c, IBV_QPS_RTR);
	move_qp(l->pfd, c, IBV_QPS_RTS);
	conn_param(&cmd.conn_param, c->qp->qp_num);
	CMD(l->pfd, RDMA_USER_CM_CMD_ACCEPT, cmd, 0);
}

/* The active side's part once the REP came: RTR, RTS, then the RTU. */
static void establish(struct limit *l, struct conn *c)
{
	struct rdma_ucm_accept cmd = {.id = c->id};

	move_qp(l->afd, c, IBV_QPS_RTR);
	move_qp(l->afd, c, IBV_QPS_RTS);
	CMD(l->afd, RDMA_USER_CM_CMD_ACCEPT, cmd, 0);
}

static void passive_events(struct limit *l, int *done, uint32_t want)
{
	struct rdma_ucm_event_resp ev;

	while (next_event(l->pfd, &ev)) {
		if (ev.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			accept_request(l, ev.id);
		} else if (ev.event == want) {
			(*done)++;
			if (want == RDMA_CM_EVENT_DISCONNECTED)
				disconnect(l->pfd, &l->pas[ev.uid & ~PASSIVE]);
		} else if (ev.event != RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			hx_fail("passive side: event %u", ev.event);
		}
	}
}

static bool active_event(struct limit *l, uint32_t want)
{
	struct rdma_ucm_event_resp ev;

	if (!next_event(l->afd, &ev))
		return false;
	if (ev.event == RDMA_CM_EVENT_CONNECT_RESPONSE &&
	    want == RDMA_CM_EVENT_ESTABLISHED) {
		establish(l, &l->act[ev.uid - 1]);
		return true;
	}
	if (ev.event == want && !ev.status)
		return true;
	if (ev.event != RDMA_CM_EVENT_TIMEWAIT_EXIT)
		hx_fail("active side: event %u (status %d)", ev.event,
			(int)ev.status);
	return false;
}

/* Drive both sides until each has a batch's events of @want. */
static void run_both(struct limit *l, uint32_t want)
{
	struct pollfd p[2] = {{.fd = l->afd, .events = POLLIN},
			      {.fd = l->pfd, .events = POLLIN}};
	int adone = 0, pdone = 0;

	while (adone < l->batch || pdone < l->batch) {
		if (poll(p, 2, hx_event_timeout_ms()) < 1)
			hx_fail("no CM event within %d ms",
				hx_event_timeout_ms());
		if (p[1].revents)
			passive_events(l, &pdone, want);
		if (p[0].revents && active_event(l, want))
			adone++;
	}
}

static void step_create(void *ctx)
{
	struct limit *l = ctx;
	int i;

	for (i = 0; i < l->n; i++)
		l->act[i].id = create_id(l->afd, (uint64_t)i + 1);
}

static void step_resolve_addr(void *ctx)
{
	struct limit *l = ctx;
	struct rdma_ucm_resolve_addr cmd = {.timeout_ms = 2000};
	int i;

	cmd.dst_size = l->dst.ss_family == AF_INET
			       ? sizeof(struct sockaddr_in)
			       : sizeof(struct sockaddr_in6);
	memcpy(&cmd.dst_addr, &l->dst, cmd.dst_size);
	for (i = 0; i < l->n; i++) {
		cmd.id = l->act[i].id;
		CMD(l->afd, RDMA_USER_CM_CMD_RESOLVE_ADDR, cmd, 0);
	}
	collect(l, l->n, RDMA_CM_EVENT_ADDR_RESOLVED);
}

static void step_resolve_route(void *ctx)
{
	struct limit *l = ctx;
	struct rdma_ucm_resolve_route cmd = {.timeout_ms = 2000};
	int i;

	for (i = 0; i < l->n; i++) {
		cmd.id = l->act[i].id;
		CMD(l->afd, RDMA_USER_CM_CMD_RESOLVE_ROUTE, cmd, 0);
	}
	collect(l, l->n, RDMA_CM_EVENT_ROUTE_RESOLVED);
}

static void step_create_qp(void *ctx)
{
	struct limit *l = ctx;
	int i;

	for (i = 0; i < l->n; i++) {
		l->act[i].qp = make_qp(l, l->acq);
		move_qp(l->afd, &l->act[i], IBV_QPS_INIT);
	}
}

static void step_connect(void *ctx)
{
	struct limit *l = ctx;
	struct rdma_ucm_connect cmd;
	int i, j;

	l->pas_count = 0;
	for (i = 0; i < l->n; i += l->batch) {
		l->batch = l->n - i < BENCH_WINDOW ? l->n - i : BENCH_WINDOW;
		for (j = i; j < i + l->batch; j++) {
			memset(&cmd, 0, sizeof(cmd));
			conn_param(&cmd.conn_param, l->act[j].qp->qp_num);
			cmd.id = l->act[j].id;
			CMD(l->afd, RDMA_USER_CM_CMD_CONNECT, cmd, 0);
		}
		run_both(l, RDMA_CM_EVENT_ESTABLISHED);
	}
}

static void step_disconnect(void *ctx)
{
	struct limit *l = ctx;
	int i, j;

	for (i = 0; i < l->n; i += l->batch) {
		l->batch = l->n - i < BENCH_WINDOW ? l->n - i : BENCH_WINDOW;
		for (j = i; j < i + l->batch; j++)
			disconnect(l->afd, &l->act[j]);
		run_both(l, RDMA_CM_EVENT_DISCONNECTED);
	}
}

static void step_destroy(void *ctx)
{
	struct limit *l = ctx;
	int i;

	for (i = 0; i < l->n; i++) {
		ibv_destroy_qp(l->act[i].qp);
		destroy_id(l->afd, l->act[i].id);
		ibv_destroy_qp(l->pas[i].qp);
		destroy_id(l->pfd, l->pas[i].id);
	}
}

const struct bench_step cm_limit_steps[BENCH_NSTEPS] = {
	{"create_id", step_create},
	{"resolve_addr", step_resolve_addr},
	{"resolve_route", step_resolve_route},
	{"create_qp", step_create_qp},
	{"connect", step_connect},
	{"disconnect", step_disconnect},
	{"destroy", step_destroy},
};

static int open_cm(void)
{
	int fd = open("/dev/infiniband/rdma_cm", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		hx_fail("/dev/infiniband/rdma_cm: %s", strerror(errno));
	return fd;
}

/* The listener, the device (the only one the test bed has), the CQs. */
void *cm_limit_setup(const char *addr, int n)
{
	struct limit *l = calloc(1, sizeof(*l));
	struct rdma_ucm_bind bind = {0};
	struct rdma_ucm_listen listen = {.backlog = 1024};
	struct ibv_device **list = ibv_get_device_list(NULL);
	socklen_t len;

	if (!l)
		hx_fail("out of memory");
	l->addr = addr;
	l->n = n;
	l->afd = open_cm();
	l->pfd = open_cm();
	len = hx_parse_addr(l->addr, 0, (struct sockaddr_storage *)&bind.addr);
	bind.id = l->listen_id = create_id(l->pfd, PASSIVE | 0x7fffffff);
	bind.addr_size = (uint16_t)len;
	CMD(l->pfd, RDMA_USER_CM_CMD_BIND, bind, 0);
	listen.id = l->listen_id;
	CMD(l->pfd, RDMA_USER_CM_CMD_LISTEN, listen, 0);
	/* The port the kernel chose, from the socket name it now has. */
	{
		struct rdma_ucm_query_addr_resp resp;
		struct rdma_ucm_query q = {.response = (uintptr_t)&resp,
					   .id = l->listen_id,
					   .option = RDMA_USER_CM_QUERY_ADDR};

		CMD(l->pfd, RDMA_USER_CM_CMD_QUERY, q, sizeof(resp));
		memcpy(&l->dst, &resp.src_addr, sizeof(l->dst));
	}
	if (!list || !list[0])
		hx_fail("no RDMA device");
	l->verbs = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!l->verbs || !(l->pd = ibv_alloc_pd(l->verbs)))
		hx_fail("device: %s", strerror(errno));
	l->acq = ibv_create_cq(l->verbs, 2 * l->n + 16, NULL, NULL, 0);
	l->pcq = ibv_create_cq(l->verbs, 2 * l->n + 16, NULL, NULL, 0);
	l->act = calloc((size_t)l->n, sizeof(*l->act));
	l->pas = calloc((size_t)l->n, sizeof(*l->pas));
	if (!l->acq || !l->pcq || !l->act || !l->pas)
		hx_fail("allocations for %d connections: %s", l->n,
			strerror(errno));
	return l;
}
