// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * A multicast sender and receiver written the way an outside program
 * would write them: the sender joins a group, sends
 * 64-byte datagrams every 20 ms, each signalled and its completion polled
 * before the next send, keeps sending for 4 s after the 50th, prints a
 * summary and returns from main.  The receiver (another process) must get
 * datagrams 0..49 intact and, once it has dropped its membership, nothing
 * more.
 *
 * Usage: mc_sender_test MODE <local-addr> <group-addr>
 *   send       join with rdma_set_option(RDMA_OPTION_IP, IP_ADD_MEMBERSHIP),
 *              send with rdma_sendto (this fork's library only)
 *   send-join  join with rdma_join_multicast, send with ibv_post_send
 *              through an AH of its own, made from the MULTICAST_JOIN
 *              event's ud param (runs on rdma-core's library too)
 *   recv       IP_ADD_MEMBERSHIP / IP_DROP_MEMBERSHIP (this fork only)
 *   recv-join  rdma_join_multicast / rdma_leave_multicast
 * The receiver prints "READY" once its receives are posted and it has
 * joined; start the sender after that line.
 *
 * Every wait is bounded: a send whose completion does not arrive within
 * 5 s is reported (which one, and the QP's state) instead of polled for
 * ever.  Prints "PASS mc_sender/MODE" or "FAIL mc_sender/MODE: why"
 * (exit 0 or 1; 77 with "SKIP" when the library lacks rdma_sendto).
 *
 * rdma_sendto is looked up with dlvsym instead of being linked: a binary
 * that references the fork's RDMACM_FORK_1.0 node does not load on
 * rdma-core's library at all, and the send-join/recv-join modes must run
 * there as the reference.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "harness.h"

#define MSG_LEN 64
#define COUNT 50 /* datagrams the receiver must get */
#define INTERVAL_MS 20
#define TAIL_MS 4000 /* sending goes on this long after the 50th */
#define SEND_COMP_MS 5000 /* bound on one send's completion */
#define NRECV 64
#define GRACE_MS 500 /* datagrams in flight at the leave may still land */
#define QUIET_MS 2000 /* after that, nothing may arrive */

typedef int (*sendto_fn)(struct rdma_cm_id *, struct ibv_send_wr *,
			 struct sockaddr *);

static void sleep_ms(long ms)
{
	struct timespec t = {.tv_sec = ms / 1000,
			     .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

/* --- one UD endpoint ----------------------------------------------------- */

struct ep {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *mr;
	struct ibv_ah *ah; /* send-join: our own */
	struct rdma_ud_param ud;
	struct sockaddr_in group;
	char buf[NRECV + 1][HX_GRH_LEN + MSG_LEN];
};

/* Multicast here is IPv4 (rxe's RoCE v2 has no IPv6 groups). */
static void parse_in(const char *s, struct sockaddr_in *sin)
{
	struct sockaddr_storage ss;

	hx_parse_addr(s, 0, &ss);
	CHECK(ss.ss_family == AF_INET, "'%s' is not an IPv4 address", s);
	memcpy(sin, &ss, sizeof(*sin));
}

static void ep_open(struct ep *e, const char *local, const char *group)
{
	struct sockaddr_in src;
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 4,
			.max_recv_wr = NRECV,
			.max_send_sge = 1,
			.max_recv_sge = 1},
	};

	parse_in(local, &src);
	parse_in(group, &e->group);
	e->ch = rdma_create_event_channel();
	if (!e->ch)
		hx_fail("rdma_create_event_channel: %s", strerror(errno));
	CHECK_OK(rdma_create_id(e->ch, &e->id, e, RDMA_PS_UDP));
	CHECK_OK(rdma_bind_addr(e->id, (struct sockaddr *)&src));
	if (!e->id->verbs)
		hx_fail("bound to %s but no device", local);
	e->scq = ibv_create_cq(e->id->verbs, 4, NULL, NULL, 0);
	e->rcq = ibv_create_cq(e->id->verbs, NRECV, NULL, NULL, 0);
	if (!e->scq || !e->rcq)
		hx_fail("ibv_create_cq: %s", strerror(errno));
	attr.send_cq = e->scq;
	attr.recv_cq = e->rcq;
	CHECK_OK(rdma_create_qp(e->id, NULL, &attr));
	e->mr = ibv_reg_mr(e->id->qp->pd, e->buf, sizeof(e->buf),
			   IBV_ACCESS_LOCAL_WRITE);
	if (!e->mr)
		hx_fail("ibv_reg_mr: %s", strerror(errno));
}

static int ip_membership(struct ep *e, int optname)
{
	struct ip_mreq m = {.imr_multiaddr = e->group.sin_addr};

	return rdma_set_option(e->id, RDMA_OPTION_IP, optname, &m, sizeof(m));
}

/* Join as the mode says and wait for the join's completion. */
static void ep_join(struct ep *e, bool by_option)
{
	struct rdma_cm_event *ev;

	if (by_option)
		CHECK_OK(ip_membership(e, IP_ADD_MEMBERSHIP));
	else
		CHECK_OK(rdma_join_multicast(e->id,
					     (struct sockaddr *)&e->group, e));
	ev = hx_expect_event(e->ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	if (ev->status)
		hx_fail("join status %d", ev->status);
	e->ud = ev->param.ud;
	CHECK_OK(rdma_ack_cm_event(ev));
}

static void ep_leave(struct ep *e, bool by_option)
{
	if (by_option)
		CHECK_OK(ip_membership(e, IP_DROP_MEMBERSHIP));
	else
		CHECK_OK(rdma_leave_multicast(e->id,
					      (struct sockaddr *)&e->group));
}

/* --- sender -------------------------------------------------------------- */

static const char *qp_state_str(struct ibv_qp *qp)
{
	static const char *const names[] = {"RESET", "INIT", "RTR", "RTS",
					    "SQD",   "SQE",  "ERR"};
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	if (ibv_query_qp(qp, &attr, IBV_QP_STATE, &init))
		return "unknown (ibv_query_qp failed)";
	if ((unsigned int)attr.qp_state < sizeof(names) / sizeof(names[0]))
		return names[attr.qp_state];
	return "?";
}

static void fill(char *p, uint32_t seq)
{
	int i;

	memcpy(p, &seq, sizeof(seq));
	for (i = sizeof(seq); i < MSG_LEN; i++)
		p[i] = (char)(seq * 7 + i);
}

/* Post datagram @seq and poll its completion for at most SEND_COMP_MS. */
static void send_one(struct ep *e, sendto_fn sendto, uint32_t seq)
{
	struct ibv_sge sge = {.addr = (uintptr_t)e->buf[0],
			      .length = MSG_LEN,
			      .lkey = e->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = seq,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct ibv_wc wc;
	long deadline;
	int n;

	fill(e->buf[0], seq);
	if (sendto) {
		if (sendto(e->id, &wr, (struct sockaddr *)&e->group))
			hx_fail("rdma_sendto of datagram %u: %s (errno %d)",
				seq, strerror(errno), errno);
	} else {
		wr.wr.ud.ah = e->ah;
		wr.wr.ud.remote_qpn = e->ud.qp_num;
		wr.wr.ud.remote_qkey = e->ud.qkey;
		errno = ibv_post_send(e->id->qp, &wr, &bad);
		if (errno)
			hx_fail("ibv_post_send of datagram %u: %s", seq,
				strerror(errno));
	}
	deadline = hx_now_ms() + SEND_COMP_MS;
	while (!(n = ibv_poll_cq(e->scq, 1, &wc)))
		if (hx_now_ms() > deadline)
			hx_fail("datagram %u (%s the %dth) posted but no "
				"completion within %d ms; QP state %s",
				seq, seq < COUNT ? "before" : "after", COUNT,
				SEND_COMP_MS, qp_state_str(e->id->qp));
	if (n < 0)
		hx_fail("ibv_poll_cq: %d", n);
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != seq)
		hx_fail("datagram %u completed with %s (wr_id %llu)", seq,
			ibv_wc_status_str(wc.status),
			(unsigned long long)wc.wr_id);
}

static int run_sender(struct ep *e, bool by_option)
{
	sendto_fn sendto = NULL;
	long long start = 0, tail_end = 0;
	uint32_t seq;

	if (by_option) {
		sendto = (sendto_fn)dlvsym(RTLD_DEFAULT, "rdma_sendto",
					   "RDMACM_FORK_1.0");
		if (!sendto)
			hx_skip("this librdmacm has no rdma_sendto");
	}
	ep_join(e, by_option);
	if (!by_option) {
		e->ah = ibv_create_ah(e->id->qp->pd, &e->ud.ah_attr);
		if (!e->ah)
			hx_fail("ibv_create_ah: %s", strerror(errno));
	}
	for (seq = 0; !tail_end || hx_now_ms() < tail_end; seq++) {
		if (seq)
			sleep_ms(INTERVAL_MS);
		else
			start = hx_now_ms();
		send_one(e, sendto, seq);
		if (seq == COUNT - 1)
			tail_end = hx_now_ms() + TAIL_MS;
	}
	hx_note("sent %u datagrams in %lld ms (%u after the %dth), every "
		"one completed",
		seq, hx_now_ms() - start, seq - COUNT, COUNT);
	ep_leave(e, by_option);
	if (e->ah)
		ibv_destroy_ah(e->ah);
	/* Like the program that found the stall: return from main, no clean-up. */
	return 0;
}

/* --- receiver ------------------------------------------------------------ */

static void post_recv(struct ep *e, int slot)
{
	struct ibv_sge sge = {.addr = (uintptr_t)e->buf[slot],
			      .length = sizeof(e->buf[slot]),
			      .lkey = e->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = (uint64_t)slot,
				 .sg_list = &sge,
				 .num_sge = 1},
			   *bad;

	errno = ibv_post_recv(e->id->qp, &wr, &bad);
	if (errno)
		hx_fail("ibv_post_recv: %s", strerror(errno));
}

/* One received datagram: intact, and its sequence number. */
static uint32_t check_datagram(struct ep *e, const struct ibv_wc *wc)
{
	char want[MSG_LEN];
	const char *p;
	uint32_t seq;

	if (wc->status != IBV_WC_SUCCESS)
		hx_fail("receive completed with %s",
			ibv_wc_status_str(wc->status));
	if (wc->byte_len != HX_GRH_LEN + MSG_LEN)
		hx_fail("datagram of %u bytes, want %d + %d of GRH",
			wc->byte_len, MSG_LEN, HX_GRH_LEN);
	p = e->buf[wc->wr_id] + HX_GRH_LEN;
	memcpy(&seq, p, sizeof(seq));
	fill(want, seq);
	if (memcmp(p, want, MSG_LEN))
		hx_fail("datagram %u: payload differs from what was sent", seq);
	post_recv(e, (int)wc->wr_id);
	return seq;
}

/* Receive until @until (ms); count datagrams, mark @seen.  */
static int receive_until(struct ep *e, long long until, bool *seen,
			 int *distinct)
{
	struct ibv_wc wc;
	uint32_t seq;
	int n, got = 0;

	while (hx_now_ms() < until && (!distinct || *distinct < COUNT)) {
		n = ibv_poll_cq(e->rcq, 1, &wc);
		if (n < 0)
			hx_fail("ibv_poll_cq: %d", n);
		if (!n) {
			sleep_ms(1);
			continue;
		}
		seq = check_datagram(e, &wc);
		got++;
		if (seen && seq < COUNT && !seen[seq]) {
			seen[seq] = true;
			(*distinct)++;
		}
	}
	return got;
}

static int run_receiver(struct ep *e, bool by_option)
{
	bool seen[COUNT] = {false};
	int distinct = 0, late, after, i;
	long long t;

	for (i = 1; i <= NRECV; i++)
		post_recv(e, i);
	ep_join(e, by_option);
	printf("READY\n");
	fflush(stdout);
	/* The sender starts after READY; 50 datagrams take about 1 s. */
	receive_until(e, hx_now_ms() + 60000, seen, &distinct);
	if (distinct < COUNT) {
		for (i = 0; i < COUNT && seen[i]; i++)
			;
		hx_fail("received %d of datagrams 0..%d (first missing: %d)",
			distinct, COUNT - 1, i);
	}
	ep_leave(e, by_option);
	t = hx_now_ms();
	late = receive_until(e, t + GRACE_MS, NULL, NULL);
	after = receive_until(e, t + GRACE_MS + QUIET_MS, NULL, NULL);
	if (after)
		hx_fail("%d datagrams arrived between %d and %d ms after the "
			"membership was dropped",
			after, GRACE_MS, GRACE_MS + QUIET_MS);
	hx_note("all %d datagrams intact; %d in flight at the leave, none "
		"in the %d ms after",
		COUNT, late, QUIET_MS);
	return 0;
}

/* Each mode is a scenario; the PASS line says mc_sender/MODE. */
static int run_mode(int argc, char **argv)
{
	static struct ep e;
	bool by_option = !strchr(argv[0], '-');

	(void)argc;
	hx_set_name("mc_sender/%s", argv[0]);
	ep_open(&e, argv[1], argv[2]);
	if (!strncmp(argv[0], "send", 4))
		return run_sender(&e, by_option);
	return run_receiver(&e, by_option);
}

static const struct hx_scenario scenarios[] = {
	{"send", "LOCAL GROUP", run_mode},
	{"send-join", "LOCAL GROUP", run_mode},
	{"recv", "LOCAL GROUP", run_mode},
	{"recv-join", "LOCAL GROUP", run_mode},
};

int main(int argc, char **argv)
{
	/* Just inside the script's 60 s per program, naming the stage. */
	hx_set_default_timeout_s(58);
	return hx_main(argc, argv, scenarios,
		       sizeof(scenarios) / sizeof(scenarios[0]));
}
