// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * System test of multicast through socket-style options:
 * IP_ADD_MEMBERSHIP / IPV6_JOIN_GROUP / IB_ADD_MEMBERSHIP through
 * rdma_set_option, rdma_get_option's MCMember record, rdma_sendto to a
 * group and to a resolved UD peer, and the errno of every bad input.
 *
 * Usage: mcast_sys_test mcast_opt <addr1> <addr2> <group>
 *   Two receivers (bound to addr1 and addr2) join <group>; a sender
 *   (addr1) joins it as a send-only member with IB_ADD_MEMBERSHIP and
 *   sends with rdma_sendto.  Everything runs in this one process, with one
 *   sending QP: where the NIC holds rxe's multicast frames, rxe takes about
 *   50 s to destroy a QP that sent to a group (BUGS.md rxe-mcast-hub-stall), so
 *   the sender is destroyed once, at the end.
 * Prints "PASS mcast_opt", "FAIL mcast_opt: why" or "SKIP mcast_opt: why"
 * (exit 0, 1, 77) through the system-test harness (harness.h), whose
 * watchdog (RDMACM_HX_TIMEOUT seconds, default 110 here) names the step
 * that hung.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "harness.h"

#define NMSG 16 /* datagrams per batch */

/* --- one UD endpoint ----------------------------------------------------- */

struct ep {
	const char *who;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	char buf[NMSG + 1][64 + HX_GRH_LEN];
};

static void ep_qp(struct ep *e)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = NMSG,
			.max_recv_wr = NMSG + 1,
			.max_send_sge = 1,
			.max_recv_sge = 1},
		.sq_sig_all = 1,
	};

	CHECK_OK(rdma_create_qp(e->id, NULL, &attr));
	e->mr = rdma_reg_msgs(e->id, e->buf, sizeof(e->buf));
	CHECK(e->mr, "%s: rdma_reg_msgs: %s", e->who, strerror(errno));
}

static void ep_bound(struct ep *e, struct rdma_event_channel *ch,
		     const char *addr)
{
	struct sockaddr_storage ss;

	hx_parse_addr(addr, 0, &ss);
	CHECK_OK(rdma_create_id(ch, &e->id, e, RDMA_PS_UDP));
	CHECK_OK(rdma_bind_addr(e->id, (struct sockaddr *)&ss));
	ep_qp(e);
}

static void ep_post_recvs(struct ep *e, int n)
{
	int i;

	for (i = 0; i < n; i++)
		CHECK_OK(rdma_post_recv(e->id, e->buf[i + 1], e->buf[i + 1],
					sizeof(e->buf[0]), e->mr));
}

/* Post datagram "<tag> <i>" with rdma_sendto and wait for its completion. */
static void ep_sendto(struct ep *e, const struct sockaddr *to, const char *tag,
		      int i)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND};
	struct ibv_wc wc;

	snprintf(e->buf[0], sizeof(e->buf[0]), "%s %d", tag, i);
	sge.addr = (uintptr_t)e->buf[0];
	sge.length = (uint32_t)strlen(e->buf[0]) + 1;
	sge.lkey = e->mr->lkey;
	wr.wr_id = (uint64_t)i;
	CHECK_OK(rdma_sendto(e->id, &wr, (struct sockaddr *)to));
	CHECK(rdma_get_send_comp(e->id, &wc) == 1 &&
		      wc.status == IBV_WC_SUCCESS,
	      "%s: send %d did not complete", e->who, i);
}

/* Poll the receive CQ for up to @ms: the completions seen, up to @max. */
static int ep_poll_recvs(struct ep *e, struct ibv_wc *wc, int max, int ms)
{
	struct timespec t0, t;
	int got = 0, r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < max) {
		r = ibv_poll_cq(e->id->recv_cq, max - got, wc + got);
		CHECK(r >= 0, "%s: ibv_poll_cq: %d", e->who, r);
		got += r;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 +
			    (t.tv_nsec - t0.tv_nsec) / 1000000 >=
		    ms)
			break;
		if (!r)
			usleep(1000);
	}
	return got;
}

/* Each of "<tag> 0" .. "<tag> n-1" exactly once. */
static void ep_expect_all(struct ep *e, const char *tag, int n)
{
	struct ibv_wc wc[NMSG];
	bool seen[NMSG] = {false};
	int got, i, k;
	char want[64];

	hx_stage("receiving the group's datagrams");
	got = ep_poll_recvs(e, wc, n, 5000);
	CHECK(got == n, "%s: received %d of %d datagrams", e->who, got, n);
	for (i = 0; i < got; i++) {
		char *p = (char *)(uintptr_t)wc[i].wr_id + HX_GRH_LEN;

		CHECK(wc[i].status == IBV_WC_SUCCESS, "%s: receive status %s",
		      e->who, ibv_wc_status_str(wc[i].status));
		for (k = 0; k < n; k++) {
			snprintf(want, sizeof(want), "%s %d", tag, k);
			if (!strcmp(p, want))
				break;
		}
		CHECK(k < n && !seen[k], "%s: unexpected datagram \"%s\"",
		      e->who, p);
		seen[k] = true;
	}
}

/* --- joins --------------------------------------------------------------- */

static int join_ip(struct ep *e, const struct sockaddr *group, bool add,
		   bool mreqn)
{
	if (group->sa_family == AF_INET6) {
		struct ipv6_mreq m6 = {
			.ipv6mr_multiaddr =
				((const struct sockaddr_in6 *)group)->sin6_addr,
		};

		return rdma_set_option(e->id, RDMA_OPTION_IPV6,
				       add ? IPV6_JOIN_GROUP : IPV6_LEAVE_GROUP,
				       &m6, sizeof(m6));
	}
	if (mreqn) {
		struct ip_mreqn m = {
			.imr_multiaddr =
				((const struct sockaddr_in *)group)->sin_addr,
			.imr_ifindex = (int)if_nametoindex(
				getenv("RDMA_TEST_NETDEV") ?: "eth0"),
		};

		return rdma_set_option(e->id, RDMA_OPTION_IP,
				       add ? IP_ADD_MEMBERSHIP
					   : IP_DROP_MEMBERSHIP,
				       &m, sizeof(m));
	}
	struct ip_mreq m = {
		.imr_multiaddr = ((const struct sockaddr_in *)group)->sin_addr,
	};

	return rdma_set_option(e->id, RDMA_OPTION_IP,
			       add ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP, &m,
			       sizeof(m));
}

/* Join @group and check the record rdma_get_option reports. */
static void join_and_check(struct ep *e, struct rdma_event_channel *ch,
			   const struct sockaddr *group, bool mreqn,
			   struct rdma_ud_param *ud_out)
{
	struct rdma_mcast_record q;
	struct rdma_cm_event *ev;
	struct rdma_ud_param ud;
	struct ib_sa_mcmember_rec *r = &q.rec;

	hx_stage("IP_ADD_MEMBERSHIP / IPV6_JOIN_GROUP");
	if (join_ip(e, group, true, mreqn)) {
		if (errno == HX_KERNEL_ENOTSUPP && group->sa_family == AF_INET6)
			hx_skip("the kernel refuses IPv6 multicast on "
				"this device "
				"(errno 524, ENOTSUPP: RoCE v2)");
		hx_fail("%s: join: %s (errno %d)", e->who, strerror(errno),
			errno);
	}
	/* The join is pending: the record is not there yet. */
	memset(&q, 0, sizeof(q));
	memcpy(&q.group, group, sizeof(struct sockaddr_in6));
	EXPECT_ERR(rdma_get_option(e->id, RDMA_OPTION_IB_MCAST,
				   IB_MCMEMBER_RECORD, &q, sizeof(q)),
		   EAGAIN);
	EXPECT_ERR(join_ip(e, group, true, false), EADDRINUSE);
	hx_stage("waiting for RDMA_CM_EVENT_JOIN_COMPLETE");
	ev = hx_expect_event_for(ch, RDMA_CM_EVENT_JOIN_COMPLETE, e->id,
				 e->who);
	CHECK(!ev->status, "%s: join status %d", e->who, ev->status);
	ud = ev->param.ud;
	CHECK_OK(rdma_ack_cm_event(ev));

	hx_stage("rdma_get_option(IB_MCMEMBER_RECORD)");
	CHECK_OK(rdma_get_option(e->id, RDMA_OPTION_IB_MCAST,
				 IB_MCMEMBER_RECORD, &q, sizeof(q)));
	CHECK(!memcmp(&r->mgid, &ud.ah_attr.grh.dgid, 16),
	      "%s: record MGID differs from the event's", e->who);
	CHECK(r->mlid == ud.ah_attr.dlid && r->qkey == ud.qkey &&
		      r->sl == ud.ah_attr.sl &&
		      r->traffic_class == ud.ah_attr.grh.traffic_class &&
		      r->flow_label == ud.ah_attr.grh.flow_label &&
		      r->hop_limit == ud.ah_attr.grh.hop_limit &&
		      r->rate == ud.ah_attr.static_rate,
	      "%s: record (mlid 0x%x qkey 0x%x sl %u tclass %u flow %u hop "
	      "%u rate %u) differs from the event's UD parameters",
	      e->who, r->mlid, r->qkey, r->sl, r->traffic_class, r->flow_label,
	      r->hop_limit, r->rate);
	CHECK(r->join_state == IB_MC_JOIN_STATE_FULL_MEMBER,
	      "%s: join_state 0x%x", e->who, r->join_state);
	CHECK(r->mtu >= IBV_MTU_256 && r->mtu <= IBV_MTU_4096 &&
		      r->pkey == 0xffff,
	      "%s: record mtu %u pkey 0x%x", e->who, r->mtu, r->pkey);
	CHECK(!memcmp(&r->port_gid, &e->id->route.addr.addr.ibaddr.sgid, 16),
	      "%s: record port GID is not the id's GID", e->who);
	hx_note("%s joined: mgid %02x%02x::%02x%02x:%02x%02x mlid 0x%x qkey "
		"0x%x "
		"mtu %u rate %u sl %u scope 0x%x",
		e->who, r->mgid.raw[0], r->mgid.raw[1], r->mgid.raw[12],
		r->mgid.raw[13], r->mgid.raw[14], r->mgid.raw[15], r->mlid,
		r->qkey, r->mtu, r->rate, r->sl, r->scope);
	if (ud_out)
		*ud_out = ud;
}

/* IB_ADD_MEMBERSHIP of @mgid with @mask; returns the event's status. */
static int join_ib(struct ep *e, struct rdma_event_channel *ch,
		   const union ibv_gid *mgid, struct ib_mreq *m)
{
	struct rdma_cm_event *ev;
	int status;

	m->rec.mgid = *mgid;
	m->comp_mask |= IB_SA_MCMEMBER_REC_MGID;
	CHECK_OK(rdma_set_option(e->id, RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP,
				 m, sizeof(*m)));
	ev = hx_next_event(ch, hx_event_timeout_ms());
	CHECK(ev, "%s: no answer to IB_ADD_MEMBERSHIP", e->who);
	CHECK(ev->id == e->id, "%s: event for another id", e->who);
	CHECK(ev->event == RDMA_CM_EVENT_MULTICAST_JOIN ||
		      ev->event == RDMA_CM_EVENT_MULTICAST_ERROR,
	      "%s: IB_ADD_MEMBERSHIP answered with %s", e->who,
	      rdma_event_str(ev->event));
	status = ev->event == RDMA_CM_EVENT_MULTICAST_JOIN ? 0 : ev->status;
	CHECK(status || !ev->status, "%s: JOIN with status %d", e->who,
	      ev->status);
	CHECK_OK(rdma_ack_cm_event(ev));
	return status;
}

/* --- bad input ----------------------------------------------------------- */

static void bad_input(struct rdma_event_channel *ch, const char *addr,
		      struct ep *rx, const struct sockaddr *group)
{
	struct sockaddr_storage other, bind;
	struct ip_mreq m = {.imr_multiaddr.s_addr = htonl(0xeffe0001)};
	struct rdma_mcast_record q;
	struct rdma_cm_id *tcp;
	struct ibv_sge sge = {0};
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND};
	struct ib_mreq im;
	uint8_t tos = 0;
	int v;

	hx_stage("bad input");
	hx_parse_addr(group->sa_family == AF_INET ? "239.254.0.1"
						  : "ff0e::dead",
		      0, &other);
	EXPECT_ERR(rdma_set_option(rx->id, 0x7777, IP_ADD_MEMBERSHIP, &m,
				   sizeof(m)),
		   ENOPROTOOPT);
	EXPECT_ERR(rdma_set_option(rx->id, RDMA_OPTION_IP, 9999, &m, sizeof(m)),
		   ENOPROTOOPT);
	EXPECT_ERR(rdma_set_option(rx->id, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP,
				   &m, 4),
		   EINVAL);
	EXPECT_ERR(rdma_set_option(rx->id, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP,
				   NULL, sizeof(m)),
		   EFAULT);
	EXPECT_ERR(rdma_set_option(rx->id, RDMA_OPTION_IPV6, IPV6_JOIN_GROUP,
				   &m, sizeof(m)),
		   EINVAL);
	EXPECT_ERR(rdma_set_option(rx->id, RDMA_OPTION_IB_MCAST,
				   IB_ADD_MEMBERSHIP, &m, sizeof(m)),
		   EINVAL);
	/* a unicast address is no group */
	m.imr_multiaddr.s_addr = htonl(0xc0000201);
	EXPECT_ERR(rdma_set_option(rx->id, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP,
				   &m, sizeof(m)),
		   EINVAL);
	/* an interface the id is not on */
	m.imr_multiaddr.s_addr = htonl(0xeffe0001);
	m.imr_interface.s_addr = htonl(0x7f000001);
	EXPECT_ERR(rdma_set_option(rx->id, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP,
				   &m, sizeof(m)),
		   ENODEV);
	/* leaving a group never joined */
	EXPECT_ERR(join_ip(rx, (struct sockaddr *)&other, false, false),
		   EADDRNOTAVAIL);
	/* membership kinds the kernel cannot join */
	memset(&im, 0, sizeof(im));
	im.comp_mask = IB_SA_MCMEMBER_REC_MGID | IB_SA_MCMEMBER_REC_JOIN_STATE;
	im.rec.mgid.raw[0] = 0xff;
	im.rec.join_state = IB_MC_JOIN_STATE_NON_MEMBER;
	EXPECT_ERR(rdma_set_option(rx->id, RDMA_OPTION_IB_MCAST,
				   IB_ADD_MEMBERSHIP, &im, sizeof(im)),
		   EOPNOTSUPP);
	im.comp_mask =
		IB_SA_MCMEMBER_REC_MGID | IB_SA_MCMEMBER_REC_PACKET_LIFE_TIME;
	EXPECT_ERR(rdma_set_option(rx->id, RDMA_OPTION_IB_MCAST,
				   IB_ADD_MEMBERSHIP, &im, sizeof(im)),
		   EOPNOTSUPP);
	/* get: unknown names, write-only names, short buffers, no group */
	EXPECT_ERR(rdma_get_option(rx->id, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP,
				   &m, sizeof(m)),
		   ENOPROTOOPT);
	EXPECT_ERR(rdma_get_option(rx->id, RDMA_OPTION_IB_MCAST,
				   IB_MCMEMBER_RECORD, &q, 8),
		   EINVAL);
	EXPECT_ERR(rdma_get_option(rx->id, RDMA_OPTION_IB_MCAST,
				   IB_MCMEMBER_RECORD, NULL, sizeof(q)),
		   EFAULT);
	memset(&q, 0, sizeof(q));
	memcpy(&q.group, &other, sizeof(other));
	EXPECT_ERR(rdma_get_option(rx->id, RDMA_OPTION_IB_MCAST,
				   IB_MCMEMBER_RECORD, &q, sizeof(q)),
		   EADDRNOTAVAIL);
	/* get mirrors set */
	EXPECT_ERR(rdma_get_option(rx->id, RDMA_OPTION_ID,
				   RDMA_OPTION_ID_ACK_TIMEOUT, &tos, 1),
		   ENODATA);
	tos = 0x20;
	CHECK_OK(rdma_set_option(rx->id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
				 &tos, 1));
	tos = 0;
	CHECK_OK(rdma_get_option(rx->id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
				 &tos, 1));
	CHECK(tos == 0x20, "TOS read back as 0x%x", tos);
	CHECK_OK(rdma_get_option(rx->id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY,
				 &v, sizeof(v)));
	/* rdma_sendto: to a group never joined, to a stranger, bad wrs */
	EXPECT_ERR(rdma_sendto(rx->id, &wr, (struct sockaddr *)&other),
		   EADDRNOTAVAIL);
	hx_parse_addr(addr, 0, &other);
	EXPECT_ERR(rdma_sendto(rx->id, &wr, (struct sockaddr *)&other),
		   EHOSTUNREACH);
	EXPECT_ERR(rdma_sendto(rx->id, NULL, (struct sockaddr *)group), EINVAL);
	EXPECT_ERR(rdma_sendto(rx->id, &wr, NULL), EINVAL);
	wr.opcode = IBV_WR_RDMA_WRITE;
	EXPECT_ERR(rdma_sendto(rx->id, &wr, (struct sockaddr *)group), EINVAL);

	/* a connected (RC) id: no multicast, no rdma_sendto */
	hx_parse_addr(addr, 0, &bind);
	CHECK_OK(rdma_create_id(ch, &tcp, NULL, RDMA_PS_TCP));
	CHECK_OK(rdma_bind_addr(tcp, (struct sockaddr *)&bind));
	EXPECT_ERR(join_ip(&(struct ep){.id = tcp}, group, true, false),
		   EPROTOTYPE);
	{
		struct ibv_qp_init_attr a = {
			.qp_type = IBV_QPT_RC,
			.cap = {.max_send_wr = 1,
				.max_recv_wr = 1,
				.max_send_sge = 1,
				.max_recv_sge = 1},
		};

		CHECK_OK(rdma_create_qp(tcp, NULL, &a));
	}
	wr.opcode = IBV_WR_SEND;
	EXPECT_ERR(rdma_sendto(tcp, &wr, (struct sockaddr *)group), EPROTOTYPE);
	rdma_destroy_qp(tcp);
	EXPECT_ERR(rdma_sendto(tcp, &wr, (struct sockaddr *)group), EINVAL);
	CHECK_OK(rdma_destroy_id(tcp));
	hx_note("bad input: every call failed with the documented errno");
}

/* --- unicast: rdma_sendto to a SIDR-resolved peer ------------------------- */

static void unicast(const char *a1, const char *a2)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct ep srv = {.who = "ud server"}, cli = {.who = "ud client"};
	struct sockaddr_storage sa, ca;
	struct rdma_cm_id *listen;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = {0};
	struct ibv_wc wc[2];

	hx_stage("unicast: SIDR");
	CHECK(ch, "rdma_create_event_channel: %s", strerror(errno));
	hx_parse_addr(a1, 0, &sa);
	hx_parse_addr(a2, 0, &ca);
	CHECK_OK(rdma_create_id(ch, &listen, NULL, RDMA_PS_UDP));
	CHECK_OK(rdma_bind_addr(listen, (struct sockaddr *)&sa));
	CHECK_OK(rdma_listen(listen, 2));
	if (sa.ss_family == AF_INET)
		((struct sockaddr_in *)&sa)->sin_port =
			rdma_get_src_port(listen);
	else
		((struct sockaddr_in6 *)&sa)->sin6_port =
			rdma_get_src_port(listen);
	CHECK_OK(rdma_create_id(ch, &cli.id, &cli, RDMA_PS_UDP));
	CHECK_OK(rdma_resolve_addr(cli.id, (struct sockaddr *)&ca,
				   (struct sockaddr *)&sa, 2000));
	hx_expect_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED, cli.id, "client");
	CHECK_OK(rdma_resolve_route(cli.id, 2000));
	hx_expect_ack(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, cli.id, "client");
	ep_qp(&cli);
	/* before the peer is resolved, rdma_sendto does not know it */
	{
		struct ibv_send_wr wr = {.opcode = IBV_WR_SEND};

		EXPECT_ERR(rdma_sendto(cli.id, &wr, (struct sockaddr *)&sa),
			   EHOSTUNREACH);
	}
	CHECK_OK(rdma_connect(cli.id, &cp));
	ev = hx_expect_event_for(ch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL,
				 "server");
	srv.id = ev->id;
	CHECK_OK(rdma_ack_cm_event(ev));
	ep_qp(&srv);
	ep_post_recvs(&srv, 2);
	CHECK_OK(rdma_accept(srv.id, &cp));
	hx_expect_ack(ch, RDMA_CM_EVENT_ESTABLISHED, cli.id, "client");

	hx_stage("unicast: rdma_sendto to the resolved peer");
	ep_sendto(&cli, (struct sockaddr *)&sa, "unicast", 0);
	ep_sendto(&cli, (struct sockaddr *)&sa, "unicast", 1);
	CHECK(ep_poll_recvs(&srv, wc, 2, 5000) == 2,
	      "the server did not receive both unicast datagrams");
	CHECK(!strcmp(srv.buf[1] + HX_GRH_LEN, "unicast 0") &&
		      !strcmp(srv.buf[2] + HX_GRH_LEN, "unicast 1"),
	      "unicast datagrams differ: \"%s\", \"%s\"",
	      srv.buf[1] + HX_GRH_LEN, srv.buf[2] + HX_GRH_LEN);
	hx_note("unicast: 2 datagrams to the SIDR peer via rdma_sendto");
	rdma_dereg_mr(cli.mr);
	rdma_dereg_mr(srv.mr);
	rdma_destroy_qp(cli.id);
	rdma_destroy_qp(srv.id);
	CHECK_OK(rdma_destroy_id(cli.id));
	CHECK_OK(rdma_destroy_id(srv.id));
	CHECK_OK(rdma_destroy_id(listen));
	rdma_destroy_event_channel(ch);
}

/* --- the scenario -------------------------------------------------------- */

static void verify_mismatch(struct ep *e, struct rdma_event_channel *ch,
			    const union ibv_gid *mgid, const struct sockaddr *g)
{
	struct ibv_send_wr wr = {.opcode = IBV_WR_SEND};
	ib_sa_comp_mask bad = 0;
	struct ib_mreq m;
	int status;

	hx_stage("IB_ADD_MEMBERSHIP asking for a Q_Key the group cannot have");
	memset(&m, 0, sizeof(m));
	m.comp_mask = IB_SA_MCMEMBER_REC_QKEY | IB_SA_MCMEMBER_REC_SL;
	m.rec.qkey = 0x1234;
	m.rec.sl = 0;
	status = join_ib(e, ch, mgid, &m);
	CHECK(status == -ENOMSG, "%s: mismatching join: status %d, want %d",
	      e->who, status, -ENOMSG);
	CHECK_OK(rdma_get_option(e->id, RDMA_OPTION_IB_MCAST,
				 IB_MCMEMBER_MISMATCH, &bad, sizeof(bad)));
	CHECK(bad == IB_SA_MCMEMBER_REC_QKEY, "mismatch mask 0x%llx",
	      (unsigned long long)bad);
	EXPECT_ERR(rdma_sendto(e->id, &wr, (struct sockaddr *)g), ENOTCONN);
	CHECK_OK(rdma_set_option(e->id, RDMA_OPTION_IB_MCAST,
				 IB_DROP_MEMBERSHIP, &m, sizeof(m)));
	hx_note("IB_ADD_MEMBERSHIP with qkey 0x1234: MULTICAST_ERROR -ENOMSG, "
		"mismatch mask = QKEY");
}

static int run_mcast_opt(int argc, char **argv)
{
	struct rdma_event_channel *ch;
	struct ep rx[2] = {{.who = "receiver 1"}, {.who = "receiver 2"}};
	struct ep tx = {.who = "sender"};
	struct sockaddr_storage group;
	struct rdma_ud_param ud;
	struct ib_mreq m;
	struct ibv_wc wc[NMSG];
	int i, got;

	(void)argc;
	hx_parse_addr(argv[3], 0, &group);
	ch = rdma_create_event_channel();
	CHECK(ch, "rdma_create_event_channel: %s", strerror(errno));

	hx_stage("receivers: bind, QP, join");
	for (i = 0; i < 2; i++) {
		ep_bound(&rx[i], ch, i ? argv[2] : argv[1]);
		ep_post_recvs(&rx[i], NMSG);
		join_and_check(&rx[i], ch, (struct sockaddr *)&group, i == 1,
			       &ud);
	}
	bad_input(ch, argv[1], &rx[0], (struct sockaddr *)&group);

	hx_stage("sender: IB_ADD_MEMBERSHIP send-only with the group's MGID");
	ep_bound(&tx, ch, argv[1]);
	memset(&m, 0, sizeof(m));
	m.comp_mask = IB_SA_MCMEMBER_REC_JOIN_STATE | IB_SA_MCMEMBER_REC_QKEY |
		      IB_SA_MCMEMBER_REC_MTU_SELECTOR | IB_SA_MCMEMBER_REC_MTU;
	m.rec.join_state = IB_MC_JOIN_STATE_SENDONLY_FULL_MEMBER;
	m.rec.qkey = ud.qkey;
	m.rec.mtu_selector = IB_SA_SELECTOR_GREATER_THAN;
	m.rec.mtu = IBV_MTU_256;
	i = join_ib(&tx, ch, &ud.ah_attr.grh.dgid, &m);
	CHECK(!i, "sender: send-only IB_ADD_MEMBERSHIP failed: status %d", i);

	hx_stage("sender: rdma_sendto to the group");
	for (i = 0; i < NMSG; i++)
		ep_sendto(&tx, (struct sockaddr *)&group, "group", i);
	for (i = 0; i < 2; i++)
		ep_expect_all(&rx[i], "group", NMSG);
	hx_note("both receivers got all %d datagrams sent with rdma_sendto",
		NMSG);

	hx_stage("receivers: IP_DROP_MEMBERSHIP / IPV6_LEAVE_GROUP");
	for (i = 0; i < 2; i++) {
		ep_post_recvs(&rx[i], NMSG);
		CHECK_OK(join_ip(&rx[i], (struct sockaddr *)&group, false,
				 i == 1));
		EXPECT_ERR(join_ip(&rx[i], (struct sockaddr *)&group, false,
				   false),
			   EADDRNOTAVAIL);
	}
	for (i = 0; i < NMSG; i++)
		ep_sendto(&tx, (struct sockaddr *)&group, "after", i);
	for (i = 0; i < 2; i++) {
		got = ep_poll_recvs(&rx[i], wc, NMSG, 1000);
		CHECK(!got, "%s received %d datagrams after leaving", rx[i].who,
		      got);
		EXPECT_ERR(rdma_sendto(
				   rx[i].id,
				   &(struct ibv_send_wr){.opcode = IBV_WR_SEND},
				   (struct sockaddr *)&group),
			   EADDRNOTAVAIL);
	}
	hx_note("after leaving, the receivers got nothing");
	/* rx[0] is no member now: it can join again, asking too much */
	verify_mismatch(&rx[0], ch, &ud.ah_attr.grh.dgid,
			(struct sockaddr *)&group);

	unicast(argv[1], argv[2]);

	hx_stage(
		"teardown (rxe may take ~50 s to destroy the sending QP if the "
		"NIC holds its frames)");
	for (i = 0; i < 2; i++) {
		rdma_dereg_mr(rx[i].mr);
		rdma_destroy_qp(rx[i].id);
		CHECK_OK(rdma_destroy_id(rx[i].id));
	}
	rdma_dereg_mr(tx.mr);
	rdma_destroy_qp(tx.id);
	CHECK_OK(rdma_destroy_id(tx.id));
	rdma_destroy_event_channel(ch);
	return 0;
}

static const struct hx_scenario scenarios[] = {
	{"mcast_opt", "<addr1> <addr2> <group>", run_mcast_opt},
};

int main(int argc, char **argv)
{
	/* Where the NIC holds rxe's multicast frames, teardown takes ~50 s. */
	hx_set_default_timeout_s(110);
	return hx_main(argc, argv, scenarios,
		       sizeof(scenarios) / sizeof(scenarios[0]));
}
