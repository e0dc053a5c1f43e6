// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * System test of multicast through socket-style options (issue 5):
 * IP_ADD_MEMBERSHIP / IPV6_JOIN_GROUP / IB_ADD_MEMBERSHIP through
 * rdma_set_option, rdma_get_option's MCMember record, rdma_sendto to a
 * group and to a resolved UD peer, and the errno of every bad input.
 *
 * Usage: mcast_sys_test <addr1> <addr2> <group>
 *   Two receivers (bound to addr1 and addr2) join <group>; a sender
 *   (addr1) joins it as a send-only member with IB_ADD_MEMBERSHIP and
 *   sends with rdma_sendto.  Everything runs in this one process, with one
 *   sending QP: where the NIC holds rxe's multicast frames, rxe takes about
 *   50 s to destroy a QP that sent to a group (tests/system/BUGS.md), so
 *   the sender is destroyed once, at the end.
 * Prints "PASS mcast_opt", "FAIL mcast_opt: why" or "SKIP mcast_opt: why"
 * (exit 0, 1, 77).  MCAST_OPT_TIMEOUT (seconds, default 110) arms a
 * watchdog that names the step that hung.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define EXIT_SKIP 77
#define GRH_LEN 40
#define KERNEL_ENOTSUPP 524 /* leaked by the kernel for IPv6 on RoCE v2 */
#define NMSG 16 /* datagrams per batch */
#define EVENT_MS 10000

static const char *volatile stage = "starting";
#define STAGE(s) (stage = (s))

static void __attribute__((noreturn, format(printf, 1, 2)))
fail(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL mcast_opt: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (while: %s)\n", stage);
	fflush(stdout);
	_exit(1);
}

static void __attribute__((noreturn)) skip(const char *why)
{
	printf("SKIP mcast_opt: %s\n", why);
	fflush(stdout);
	_exit(EXIT_SKIP);
}

static void __attribute__((format(printf, 1, 2))) note(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

#define TRY(call)                                                              \
	do {                                                                   \
		if ((call) != 0)                                               \
			fail("%s: %s (errno %d)", #call, strerror(errno),      \
			     errno);                                           \
	} while (0)

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			fail(__VA_ARGS__);                                     \
	} while (0)

/* A call that must fail with -1 and errno @want. */
#define EXPECT_ERR(want, call)                                                 \
	do {                                                                   \
		int r_;                                                        \
		errno = 0;                                                     \
		r_ = (call);                                                   \
		if (r_ != -1 || errno != (want))                               \
			fail("%s: got %d errno %d (%s), want -1 errno %d "     \
			     "(%s)",                                           \
			     #call, r_, errno, strerror(errno), want,          \
			     strerror(want));                                  \
	} while (0)

static void *watchdog(void *arg)
{
	unsigned int secs = (unsigned int)(uintptr_t)arg;

	sleep(secs);
	printf("FAIL mcast_opt: watchdog: no progress after %u s (stuck in: "
	       "%s)\n",
	       secs, stage);
	fflush(stdout);
	_exit(3);
}

static void parse_addr(const char *s, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &((struct sockaddr_in *)ss)->sin_addr) == 1)
		ss->ss_family = AF_INET;
	else if (inet_pton(AF_INET6, s,
			   &((struct sockaddr_in6 *)ss)->sin6_addr) == 1)
		ss->ss_family = AF_INET6;
	else
		fail("'%s' is not a numeric address", s);
}

/* --- events ------------------------------------------------------------- */

static struct rdma_cm_event *next_event(struct rdma_event_channel *ch)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&p, 1, EVENT_MS) != 1)
		fail("no CM event within %d ms", EVENT_MS);
	TRY(rdma_get_cm_event(ch, &ev));
	return ev;
}

static struct rdma_cm_event *expect(struct rdma_event_channel *ch,
				    enum rdma_cm_event_type type,
				    struct rdma_cm_id *id)
{
	struct rdma_cm_event *ev = next_event(ch);

	if (ev->event != type || (id && ev->id != id))
		fail("expected %s, got %s (status %d)", rdma_event_str(type),
		     rdma_event_str(ev->event), ev->status);
	return ev;
}

/* --- one UD endpoint ----------------------------------------------------- */

struct ep {
	const char *who;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	char buf[NMSG + 1][64 + GRH_LEN];
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

	TRY(rdma_create_qp(e->id, NULL, &attr));
	e->mr = rdma_reg_msgs(e->id, e->buf, sizeof(e->buf));
	CHECK(e->mr, "%s: rdma_reg_msgs: %s", e->who, strerror(errno));
}

static void ep_bound(struct ep *e, struct rdma_event_channel *ch,
		     const char *addr)
{
	struct sockaddr_storage ss;

	parse_addr(addr, &ss);
	TRY(rdma_create_id(ch, &e->id, e, RDMA_PS_UDP));
	TRY(rdma_bind_addr(e->id, (struct sockaddr *)&ss));
	ep_qp(e);
}

static void ep_post_recvs(struct ep *e, int n)
{
	int i;

	for (i = 0; i < n; i++)
		TRY(rdma_post_recv(e->id, e->buf[i + 1], e->buf[i + 1],
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
	TRY(rdma_sendto(e->id, &wr, (struct sockaddr *)to));
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

	STAGE("receiving the group's datagrams");
	got = ep_poll_recvs(e, wc, n, 5000);
	CHECK(got == n, "%s: received %d of %d datagrams", e->who, got, n);
	for (i = 0; i < got; i++) {
		char *p = (char *)(uintptr_t)wc[i].wr_id + GRH_LEN;

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

	STAGE("IP_ADD_MEMBERSHIP / IPV6_JOIN_GROUP");
	if (join_ip(e, group, true, mreqn)) {
		if (errno == KERNEL_ENOTSUPP && group->sa_family == AF_INET6)
			skip("the kernel refuses IPv6 multicast on this device "
			     "(errno 524, ENOTSUPP: RoCE v2)");
		fail("%s: join: %s (errno %d)", e->who, strerror(errno), errno);
	}
	/* The join is pending: the record is not there yet. */
	memset(&q, 0, sizeof(q));
	memcpy(&q.group, group, sizeof(struct sockaddr_in6));
	EXPECT_ERR(EAGAIN, rdma_get_option(e->id, RDMA_OPTION_IB_MCAST,
					   IB_MCMEMBER_RECORD, &q, sizeof(q)));
	EXPECT_ERR(EADDRINUSE, join_ip(e, group, true, false));
	STAGE("waiting for RDMA_CM_EVENT_JOIN_COMPLETE");
	ev = expect(ch, RDMA_CM_EVENT_JOIN_COMPLETE, e->id);
	CHECK(!ev->status, "%s: join status %d", e->who, ev->status);
	ud = ev->param.ud;
	TRY(rdma_ack_cm_event(ev));

	STAGE("rdma_get_option(IB_MCMEMBER_RECORD)");
	TRY(rdma_get_option(e->id, RDMA_OPTION_IB_MCAST, IB_MCMEMBER_RECORD, &q,
			    sizeof(q)));
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
	note("%s joined: mgid %02x%02x::%02x%02x:%02x%02x mlid 0x%x qkey 0x%x "
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
	TRY(rdma_set_option(e->id, RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP, m,
			    sizeof(*m)));
	ev = next_event(ch);
	CHECK(ev->id == e->id, "%s: event for another id", e->who);
	CHECK(ev->event == RDMA_CM_EVENT_MULTICAST_JOIN ||
		      ev->event == RDMA_CM_EVENT_MULTICAST_ERROR,
	      "%s: IB_ADD_MEMBERSHIP answered with %s", e->who,
	      rdma_event_str(ev->event));
	status = ev->event == RDMA_CM_EVENT_MULTICAST_JOIN ? 0 : ev->status;
	CHECK(status || !ev->status, "%s: JOIN with status %d", e->who,
	      ev->status);
	TRY(rdma_ack_cm_event(ev));
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

	STAGE("bad input");
	parse_addr(group->sa_family == AF_INET ? "239.254.0.1" : "ff0e::dead",
		   &other);
	EXPECT_ERR(ENOPROTOOPT,
		   rdma_set_option(rx->id, 0x7777, IP_ADD_MEMBERSHIP, &m,
				   sizeof(m)));
	EXPECT_ERR(ENOPROTOOPT, rdma_set_option(rx->id, RDMA_OPTION_IP, 9999,
						&m, sizeof(m)));
	EXPECT_ERR(EINVAL, rdma_set_option(rx->id, RDMA_OPTION_IP,
					   IP_ADD_MEMBERSHIP, &m, 4));
	EXPECT_ERR(EFAULT, rdma_set_option(rx->id, RDMA_OPTION_IP,
					   IP_ADD_MEMBERSHIP, NULL, sizeof(m)));
	EXPECT_ERR(EINVAL, rdma_set_option(rx->id, RDMA_OPTION_IPV6,
					   IPV6_JOIN_GROUP, &m, sizeof(m)));
	EXPECT_ERR(EINVAL, rdma_set_option(rx->id, RDMA_OPTION_IB_MCAST,
					   IB_ADD_MEMBERSHIP, &m, sizeof(m)));
	/* a unicast address is no group */
	m.imr_multiaddr.s_addr = htonl(0xc0000201);
	EXPECT_ERR(EINVAL, rdma_set_option(rx->id, RDMA_OPTION_IP,
					   IP_ADD_MEMBERSHIP, &m, sizeof(m)));
	/* an interface the id is not on */
	m.imr_multiaddr.s_addr = htonl(0xeffe0001);
	m.imr_interface.s_addr = htonl(0x7f000001);
	EXPECT_ERR(ENODEV, rdma_set_option(rx->id, RDMA_OPTION_IP,
					   IP_ADD_MEMBERSHIP, &m, sizeof(m)));
	/* leaving a group never joined */
	EXPECT_ERR(EADDRNOTAVAIL,
		   join_ip(rx, (struct sockaddr *)&other, false, false));
	/* membership kinds the kernel cannot join */
	memset(&im, 0, sizeof(im));
	im.comp_mask = IB_SA_MCMEMBER_REC_MGID | IB_SA_MCMEMBER_REC_JOIN_STATE;
	im.rec.mgid.raw[0] = 0xff;
	im.rec.join_state = IB_MC_JOIN_STATE_NON_MEMBER;
	EXPECT_ERR(EOPNOTSUPP,
		   rdma_set_option(rx->id, RDMA_OPTION_IB_MCAST,
				   IB_ADD_MEMBERSHIP, &im, sizeof(im)));
	im.comp_mask =
		IB_SA_MCMEMBER_REC_MGID | IB_SA_MCMEMBER_REC_PACKET_LIFE_TIME;
	EXPECT_ERR(EOPNOTSUPP,
		   rdma_set_option(rx->id, RDMA_OPTION_IB_MCAST,
				   IB_ADD_MEMBERSHIP, &im, sizeof(im)));
	/* get: unknown names, write-only names, short buffers, no group */
	EXPECT_ERR(ENOPROTOOPT,
		   rdma_get_option(rx->id, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP,
				   &m, sizeof(m)));
	EXPECT_ERR(EINVAL, rdma_get_option(rx->id, RDMA_OPTION_IB_MCAST,
					   IB_MCMEMBER_RECORD, &q, 8));
	EXPECT_ERR(EFAULT,
		   rdma_get_option(rx->id, RDMA_OPTION_IB_MCAST,
				   IB_MCMEMBER_RECORD, NULL, sizeof(q)));
	memset(&q, 0, sizeof(q));
	memcpy(&q.group, &other, sizeof(other));
	EXPECT_ERR(EADDRNOTAVAIL,
		   rdma_get_option(rx->id, RDMA_OPTION_IB_MCAST,
				   IB_MCMEMBER_RECORD, &q, sizeof(q)));
	/* get mirrors set */
	EXPECT_ERR(ENODATA,
		   rdma_get_option(rx->id, RDMA_OPTION_ID,
				   RDMA_OPTION_ID_ACK_TIMEOUT, &tos, 1));
	tos = 0x20;
	TRY(rdma_set_option(rx->id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
			    1));
	tos = 0;
	TRY(rdma_get_option(rx->id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
			    1));
	CHECK(tos == 0x20, "TOS read back as 0x%x", tos);
	TRY(rdma_get_option(rx->id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &v,
			    sizeof(v)));
	/* rdma_sendto: to a group never joined, to a stranger, bad wrs */
	EXPECT_ERR(EADDRNOTAVAIL,
		   rdma_sendto(rx->id, &wr, (struct sockaddr *)&other));
	parse_addr(addr, &other);
	EXPECT_ERR(EHOSTUNREACH,
		   rdma_sendto(rx->id, &wr, (struct sockaddr *)&other));
	EXPECT_ERR(EINVAL, rdma_sendto(rx->id, NULL, (struct sockaddr *)group));
	EXPECT_ERR(EINVAL, rdma_sendto(rx->id, &wr, NULL));
	wr.opcode = IBV_WR_RDMA_WRITE;
	EXPECT_ERR(EINVAL, rdma_sendto(rx->id, &wr, (struct sockaddr *)group));

	/* a connected (RC) id: no multicast, no rdma_sendto */
	parse_addr(addr, &bind);
	TRY(rdma_create_id(ch, &tcp, NULL, RDMA_PS_TCP));
	TRY(rdma_bind_addr(tcp, (struct sockaddr *)&bind));
	EXPECT_ERR(EPROTOTYPE,
		   join_ip(&(struct ep){.id = tcp}, group, true, false));
	{
		struct ibv_qp_init_attr a = {
			.qp_type = IBV_QPT_RC,
			.cap = {.max_send_wr = 1,
				.max_recv_wr = 1,
				.max_send_sge = 1,
				.max_recv_sge = 1},
		};

		TRY(rdma_create_qp(tcp, NULL, &a));
	}
	wr.opcode = IBV_WR_SEND;
	EXPECT_ERR(EPROTOTYPE, rdma_sendto(tcp, &wr, (struct sockaddr *)group));
	rdma_destroy_qp(tcp);
	EXPECT_ERR(EINVAL, rdma_sendto(tcp, &wr, (struct sockaddr *)group));
	TRY(rdma_destroy_id(tcp));
	note("bad input: every call failed with the documented errno");
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

	STAGE("unicast: SIDR");
	CHECK(ch, "rdma_create_event_channel: %s", strerror(errno));
	parse_addr(a1, &sa);
	parse_addr(a2, &ca);
	TRY(rdma_create_id(ch, &listen, NULL, RDMA_PS_UDP));
	TRY(rdma_bind_addr(listen, (struct sockaddr *)&sa));
	TRY(rdma_listen(listen, 2));
	if (sa.ss_family == AF_INET)
		((struct sockaddr_in *)&sa)->sin_port =
			rdma_get_src_port(listen);
	else
		((struct sockaddr_in6 *)&sa)->sin6_port =
			rdma_get_src_port(listen);
	TRY(rdma_create_id(ch, &cli.id, &cli, RDMA_PS_UDP));
	TRY(rdma_resolve_addr(cli.id, (struct sockaddr *)&ca,
			      (struct sockaddr *)&sa, 2000));
	TRY(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, cli.id)));
	TRY(rdma_resolve_route(cli.id, 2000));
	TRY(rdma_ack_cm_event(
		expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, cli.id)));
	ep_qp(&cli);
	/* before the peer is resolved, rdma_sendto does not know it */
	{
		struct ibv_send_wr wr = {.opcode = IBV_WR_SEND};

		EXPECT_ERR(EHOSTUNREACH,
			   rdma_sendto(cli.id, &wr, (struct sockaddr *)&sa));
	}
	TRY(rdma_connect(cli.id, &cp));
	ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL);
	srv.id = ev->id;
	TRY(rdma_ack_cm_event(ev));
	ep_qp(&srv);
	ep_post_recvs(&srv, 2);
	TRY(rdma_accept(srv.id, &cp));
	TRY(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED, cli.id)));

	STAGE("unicast: rdma_sendto to the resolved peer");
	ep_sendto(&cli, (struct sockaddr *)&sa, "unicast", 0);
	ep_sendto(&cli, (struct sockaddr *)&sa, "unicast", 1);
	CHECK(ep_poll_recvs(&srv, wc, 2, 5000) == 2,
	      "the server did not receive both unicast datagrams");
	CHECK(!strcmp(srv.buf[1] + GRH_LEN, "unicast 0") &&
		      !strcmp(srv.buf[2] + GRH_LEN, "unicast 1"),
	      "unicast datagrams differ: \"%s\", \"%s\"", srv.buf[1] + GRH_LEN,
	      srv.buf[2] + GRH_LEN);
	note("unicast: 2 datagrams to the SIDR peer via rdma_sendto");
	rdma_dereg_mr(cli.mr);
	rdma_dereg_mr(srv.mr);
	rdma_destroy_qp(cli.id);
	rdma_destroy_qp(srv.id);
	TRY(rdma_destroy_id(cli.id));
	TRY(rdma_destroy_id(srv.id));
	TRY(rdma_destroy_id(listen));
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

	STAGE("IB_ADD_MEMBERSHIP asking for a Q_Key the group cannot have");
	memset(&m, 0, sizeof(m));
	m.comp_mask = IB_SA_MCMEMBER_REC_QKEY | IB_SA_MCMEMBER_REC_SL;
	m.rec.qkey = 0x1234;
	m.rec.sl = 0;
	status = join_ib(e, ch, mgid, &m);
	CHECK(status == -ENOMSG, "%s: mismatching join: status %d, want %d",
	      e->who, status, -ENOMSG);
	TRY(rdma_get_option(e->id, RDMA_OPTION_IB_MCAST, IB_MCMEMBER_MISMATCH,
			    &bad, sizeof(bad)));
	CHECK(bad == IB_SA_MCMEMBER_REC_QKEY, "mismatch mask 0x%llx",
	      (unsigned long long)bad);
	EXPECT_ERR(ENOTCONN, rdma_sendto(e->id, &wr, (struct sockaddr *)g));
	TRY(rdma_set_option(e->id, RDMA_OPTION_IB_MCAST, IB_DROP_MEMBERSHIP, &m,
			    sizeof(m)));
	note("IB_ADD_MEMBERSHIP with qkey 0x1234: MULTICAST_ERROR -ENOMSG, "
	     "mismatch mask = QKEY");
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch;
	struct ep rx[2] = {{.who = "receiver 1"}, {.who = "receiver 2"}};
	struct ep tx = {.who = "sender"};
	struct sockaddr_storage group;
	struct rdma_ud_param ud;
	struct ib_mreq m;
	struct ibv_wc wc[NMSG];
	pthread_t t;
	int i, got;
	const char *s = getenv("MCAST_OPT_TIMEOUT");

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 4) {
		fprintf(stderr, "usage: mcast_sys_test <addr1> <addr2> "
				"<group>\n");
		return 2;
	}
	pthread_create(&t, NULL, watchdog,
		       (void *)(uintptr_t)(s && atoi(s) > 0 ? atoi(s) : 110));
	parse_addr(argv[3], &group);
	ch = rdma_create_event_channel();
	CHECK(ch, "rdma_create_event_channel: %s", strerror(errno));

	STAGE("receivers: bind, QP, join");
	for (i = 0; i < 2; i++) {
		ep_bound(&rx[i], ch, i ? argv[2] : argv[1]);
		ep_post_recvs(&rx[i], NMSG);
		join_and_check(&rx[i], ch, (struct sockaddr *)&group, i == 1,
			       &ud);
	}
	bad_input(ch, argv[1], &rx[0], (struct sockaddr *)&group);

	STAGE("sender: IB_ADD_MEMBERSHIP send-only with the group's MGID");
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

	STAGE("sender: rdma_sendto to the group");
	for (i = 0; i < NMSG; i++)
		ep_sendto(&tx, (struct sockaddr *)&group, "group", i);
	for (i = 0; i < 2; i++)
		ep_expect_all(&rx[i], "group", NMSG);
	note("both receivers got all %d datagrams sent with rdma_sendto", NMSG);

	STAGE("receivers: IP_DROP_MEMBERSHIP / IPV6_LEAVE_GROUP");
	for (i = 0; i < 2; i++) {
		ep_post_recvs(&rx[i], NMSG);
		TRY(join_ip(&rx[i], (struct sockaddr *)&group, false, i == 1));
		EXPECT_ERR(EADDRNOTAVAIL,
			   join_ip(&rx[i], (struct sockaddr *)&group, false,
				   false));
	}
	for (i = 0; i < NMSG; i++)
		ep_sendto(&tx, (struct sockaddr *)&group, "after", i);
	for (i = 0; i < 2; i++) {
		got = ep_poll_recvs(&rx[i], wc, NMSG, 1000);
		CHECK(!got, "%s received %d datagrams after leaving", rx[i].who,
		      got);
		EXPECT_ERR(EADDRNOTAVAIL,
			   rdma_sendto(
				   rx[i].id,
				   &(struct ibv_send_wr){.opcode = IBV_WR_SEND},
				   (struct sockaddr *)&group));
	}
	note("after leaving, the receivers got nothing");
	/* rx[0] is no member now: it can join again, asking too much */
	verify_mismatch(&rx[0], ch, &ud.ah_attr.grh.dgid,
			(struct sockaddr *)&group);

	unicast(argv[1], argv[2]);

	STAGE("teardown (rxe may take ~50 s to destroy the sending QP if the "
	      "NIC holds its frames)");
	for (i = 0; i < 2; i++) {
		rdma_dereg_mr(rx[i].mr);
		rdma_destroy_qp(rx[i].id);
		TRY(rdma_destroy_id(rx[i].id));
	}
	rdma_dereg_mr(tx.mr);
	rdma_destroy_qp(tx.id);
	TRY(rdma_destroy_id(tx.id));
	rdma_destroy_event_channel(ch);
	printf("PASS mcast_opt\n");
	return 0;
}
