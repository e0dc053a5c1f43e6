// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The multicast options' values and MCMember records as pure functions
 * (src/mcast/mcast_mreq.c): what rdma_set_option is handed (ip_mreq,
 * ip_mreqn, ipv6_mreq, ib_mreq) parsed or refused with its errno, MGIDs
 * mapped to the group address the kernel joins, a group's record built
 * from what the kernel reported, and checked against what an
 * IB_ADD_MEMBERSHIP asked for.  No id, no device, no kernel.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <string.h>

#include "cm/cma.h"
#include "ib_req.h"
#include "unit.h"

/* --- option values --------------------------------------------------- */

static struct cma_mreq mreq;

static int parse(int level, int optname, const void *val, size_t len)
{
	errno = 0;
	return cma_mreq_parse(level, optname, val, len, &mreq);
}

#define ASSERT_ERR(call, err)                                                  \
	do {                                                                   \
		errno = 0;                                                     \
		ck_assert_int_eq((call), -1);                                  \
		ck_assert_int_eq(errno, (err));                                \
	} while (0)

START_TEST(ip_mreq_parsed)
{
	struct ip_mreq m = {.imr_multiaddr.s_addr = htonl(0xeffe0001)};
	struct sockaddr_in *sin = (struct sockaddr_in *)&mreq.group;

	ck_assert_int_eq(
		parse(RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, &m, sizeof(m)), 0);
	ck_assert(mreq.join && !mreq.is_ib);
	ck_assert_int_eq(sin->sin_family, AF_INET);
	ck_assert_uint_eq(sin->sin_addr.s_addr, htonl(0xeffe0001));
	ck_assert_uint_eq(mreq.group_len, sizeof(*sin));
	ck_assert_int_eq(mreq.ifindex, 0);
	ck_assert_int_eq(
		parse(RDMA_OPTION_IP, IP_DROP_MEMBERSHIP, &m, sizeof(m)), 0);
	ck_assert(!mreq.join);
}
END_TEST

START_TEST(ip_mreqn_parsed)
{
	struct ip_mreqn m = {.imr_multiaddr.s_addr = htonl(0xe0000105),
			     .imr_address.s_addr = htonl(0xc0000201),
			     .imr_ifindex = 3};

	ck_assert_int_eq(
		parse(RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, &m, sizeof(m)), 0);
	ck_assert_int_eq(mreq.ifindex, 3);
	ck_assert_uint_eq(mreq.ifaddr.s_addr, htonl(0xc0000201));
	m.imr_ifindex = -1;
	ASSERT_ERR(parse(RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, &m, sizeof(m)),
		   EINVAL);
}
END_TEST

START_TEST(ip_mreq_rejected)
{
	struct ip_mreq m = {.imr_multiaddr.s_addr = htonl(0xc0000201)};

	/* unicast, short, NULL, unknown name, unknown level */
	ASSERT_ERR(parse(RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, &m, sizeof(m)),
		   EINVAL);
	m.imr_multiaddr.s_addr = htonl(0xeffe0001);
	ASSERT_ERR(parse(RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, &m, 7), EINVAL);
	ASSERT_ERR(parse(RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, NULL, 8), EFAULT);
	ASSERT_ERR(parse(RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, NULL, 0), EINVAL);
	ASSERT_ERR(parse(RDMA_OPTION_IP, IP_MULTICAST_TTL, &m, sizeof(m)),
		   ENOPROTOOPT);
	ASSERT_ERR(parse(RDMA_OPTION_ID, IP_ADD_MEMBERSHIP, &m, sizeof(m)),
		   ENOPROTOOPT);
	ASSERT_ERR(parse(0, IP_ADD_MEMBERSHIP, &m, sizeof(m)), ENOPROTOOPT);
}
END_TEST

START_TEST(ipv6_mreq_parsed)
{
	struct ipv6_mreq m = {.ipv6mr_interface = 2};
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&mreq.group;

	inet_pton(AF_INET6, "ff0e::db8:42", &m.ipv6mr_multiaddr);
	ck_assert_int_eq(
		parse(RDMA_OPTION_IPV6, IPV6_JOIN_GROUP, &m, sizeof(m)), 0);
	ck_assert_int_eq(sin6->sin6_family, AF_INET6);
	ck_assert(!memcmp(&sin6->sin6_addr, &m.ipv6mr_multiaddr, 16));
	ck_assert_int_eq(mreq.ifindex, 2);
	ASSERT_ERR(parse(RDMA_OPTION_IPV6, IPV6_JOIN_GROUP, &m, sizeof(m) - 1),
		   EINVAL);
	inet_pton(AF_INET6, "2001:db8::1", &m.ipv6mr_multiaddr);
	ASSERT_ERR(parse(RDMA_OPTION_IPV6, IPV6_LEAVE_GROUP, &m, sizeof(m)),
		   EINVAL);
	ASSERT_ERR(parse(RDMA_OPTION_IPV6, IP_ADD_MEMBERSHIP, &m, sizeof(m)),
		   ENOPROTOOPT);
}
END_TEST

START_TEST(ib_mreq_parsed)
{
	struct ib_mreq m = ib_req(IB_SA_MCMEMBER_REC_QKEY);

	ck_assert_int_eq(
		parse(RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP, &m, sizeof(m)),
		0);
	ck_assert(mreq.is_ib && mreq.join);
	ck_assert_int_eq(mreq.join_flags, RDMA_MC_JOIN_FLAG_FULLMEMBER);
	m = ib_req(IB_SA_MCMEMBER_REC_JOIN_STATE);
	m.rec.join_state = IB_MC_JOIN_STATE_SENDONLY_FULL_MEMBER;
	ck_assert_int_eq(
		parse(RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP, &m, sizeof(m)),
		0);
	ck_assert_int_eq(mreq.join_flags,
			 RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER);
	ck_assert_uint_eq(sizeof(struct ib_mreq), 64);
	ck_assert_uint_eq(sizeof(struct ib_sa_mcmember_rec), 56);
}
END_TEST

START_TEST(ib_mreq_rejected)
{
	struct ib_mreq m = ib_req(0);

	m.comp_mask = IB_SA_MCMEMBER_REC_QKEY; /* no MGID */
	ASSERT_ERR(
		parse(RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP, &m, sizeof(m)),
		EINVAL);
	ASSERT_ERR(
		parse(RDMA_OPTION_IB_MCAST, IB_DROP_MEMBERSHIP, &m, sizeof(m)),
		EINVAL);
	m = ib_req(1ULL << 18); /* beyond the record's components */
	ASSERT_ERR(
		parse(RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP, &m, sizeof(m)),
		EINVAL);
	m = ib_req(IB_SA_MCMEMBER_REC_JOIN_STATE);
	m.rec.join_state = IB_MC_JOIN_STATE_NON_MEMBER;
	ASSERT_ERR(
		parse(RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP, &m, sizeof(m)),
		EOPNOTSUPP);
	m.rec.join_state = 0;
	ASSERT_ERR(
		parse(RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP, &m, sizeof(m)),
		EINVAL);
	m = ib_req(IB_SA_MCMEMBER_REC_PACKET_LIFE_TIME);
	ASSERT_ERR(
		parse(RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP, &m, sizeof(m)),
		EOPNOTSUPP);
	m = ib_req(IB_SA_MCMEMBER_REC_PROXY_JOIN);
	m.rec.proxy_join = 1;
	ASSERT_ERR(
		parse(RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP, &m, sizeof(m)),
		EOPNOTSUPP);
	m = ib_req(IB_SA_MCMEMBER_REC_RATE_SELECTOR); /* without the rate */
	ASSERT_ERR(
		parse(RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP, &m, sizeof(m)),
		EINVAL);
	m = ib_req(IB_SA_MCMEMBER_REC_SL);
	m.rec.sl = 16;
	ASSERT_ERR(
		parse(RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP, &m, sizeof(m)),
		EINVAL);
	m = ib_req(IB_SA_MCMEMBER_REC_MTU);
	m.rec.mtu = 7;
	ASSERT_ERR(
		parse(RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP, &m, sizeof(m)),
		EINVAL);
	ASSERT_ERR(parse(RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP, &m,
			 sizeof(m) - 8),
		   EINVAL);
}
END_TEST

/* --- MGIDs ------------------------------------------------------------- */

START_TEST(mgid_mapping)
{
	struct sockaddr_storage ss;
	union ibv_gid g;
	socklen_t len;

	memset(&g, 0, sizeof(g));
	g.raw[10] = g.raw[11] = 0xff;
	g.raw[12] = 239;
	g.raw[15] = 42; /* ::ffff:239.0.0.42, RoCE v2 */
	ck_assert_int_eq(cma_mgid_to_sockaddr(&g, AF_INET,
					      IBV_LINK_LAYER_ETHERNET, &ss,
					      &len),
			 0);
	ck_assert_int_eq(ss.ss_family, AF_INET);
	ck_assert_uint_eq(((struct sockaddr_in *)&ss)->sin_addr.s_addr,
			  htonl(0xef00002a));
	g.raw[0] = 0xff;
	g.raw[1] = 0x0e; /* ff0e::ffff:239.0.0.42, RoCE v1 */
	ck_assert_int_eq(cma_mgid_to_sockaddr(&g, AF_INET,
					      IBV_LINK_LAYER_ETHERNET, &ss,
					      &len),
			 0);
	ck_assert_int_eq(ss.ss_family, AF_INET);
	g.raw[10] = 0; /* ff0e::..., an IPv6 group */
	ck_assert_int_eq(cma_mgid_to_sockaddr(&g, AF_INET6,
					      IBV_LINK_LAYER_ETHERNET, &ss,
					      &len),
			 0);
	ck_assert_int_eq(ss.ss_family, AF_INET6);
	ck_assert_uint_eq(len, sizeof(struct sockaddr_in6));
	ck_assert_int_eq(cma_mgid_to_sockaddr(&g, AF_IB,
					      IBV_LINK_LAYER_INFINIBAND, &ss,
					      &len),
			 0);
	ck_assert_int_eq(ss.ss_family, AF_IB);
	g.raw[0] = 0x20; /* not a multicast GID */
	ASSERT_ERR(cma_mgid_to_sockaddr(&g, AF_INET, IBV_LINK_LAYER_ETHERNET,
					&ss, &len),
		   EINVAL);
	ASSERT_ERR(cma_mgid_to_sockaddr(&g, AF_INET6, IBV_LINK_LAYER_INFINIBAND,
					&ss, &len),
		   EINVAL);
	memset(&g, 0, sizeof(g)); /* IB: the SA assigns one */
	ck_assert_int_eq(cma_mgid_to_sockaddr(&g, AF_INET6,
					      IBV_LINK_LAYER_INFINIBAND, &ss,
					      &len),
			 0);
	ck_assert_int_eq(ss.ss_family, AF_INET6);
	ASSERT_ERR(cma_mgid_to_sockaddr(&g, AF_INET, IBV_LINK_LAYER_ETHERNET,
					&ss, &len),
		   EINVAL);
}
END_TEST

/* --- records ----------------------------------------------------------- */

static struct ibv_ah_attr ah;
static union ibv_gid port_gid;
static struct ib_sa_mcmember_rec got;

static void build(uint8_t mtu)
{
	struct cma_mc_join_info info = {
		.ah_attr = &ah,
		.qkey = 0x1234567,
		.pkey = 0xffff,
		.mtu = mtu,
		.port_gid = &port_gid,
		.join_state = IB_MC_JOIN_STATE_FULL_MEMBER,
	};

	memset(&ah, 0, sizeof(ah));
	ah.is_global = 1;
	ah.grh.dgid.raw[0] = 0xff;
	ah.grh.dgid.raw[1] = 0x15; /* flags 1, scope 5 */
	ah.grh.dgid.raw[15] = 9;
	ah.grh.hop_limit = 1;
	ah.grh.flow_label = 77;
	ah.grh.traffic_class = 8;
	ah.dlid = 0xc001;
	ah.sl = 3;
	ah.static_rate = IBV_RATE_10_GBPS;
	memset(&port_gid, 0xab, sizeof(port_gid));
	cma_mcrec_build(&info, &got);
}

START_TEST(record_from_join)
{
	build(IBV_MTU_1024);
	ck_assert(!memcmp(&got.mgid, &ah.grh.dgid, 16));
	ck_assert(!memcmp(&got.port_gid, &port_gid, 16));
	ck_assert_uint_eq(got.qkey, 0x1234567);
	ck_assert_uint_eq(got.mlid, 0xc001);
	ck_assert_uint_eq(got.sl, 3);
	ck_assert_uint_eq(got.flow_label, 77);
	ck_assert_uint_eq(got.hop_limit, 1);
	ck_assert_uint_eq(got.traffic_class, 8);
	ck_assert_uint_eq(got.rate, IBV_RATE_10_GBPS);
	ck_assert_uint_eq(got.mtu, IBV_MTU_1024);
	ck_assert_uint_eq(got.pkey, 0xffff);
	ck_assert_uint_eq(got.scope, 5);
	ck_assert_uint_eq(got.join_state, IB_MC_JOIN_STATE_FULL_MEMBER);
}
END_TEST

START_TEST(mismatch_plain_fields)
{
	struct ib_mreq w;

	build(IBV_MTU_1024);
	memset(&w, 0, sizeof(w));
	w.rec = got;
	w.comp_mask = (IB_SA_MCMEMBER_REC_PROXY_JOIN << 1) - 1;
	w.comp_mask &= ~(IB_SA_MCMEMBER_REC_PACKET_LIFE_TIME |
			 IB_SA_MCMEMBER_REC_PACKET_LIFE_TIME_SELECTOR);
	ck_assert_uint_eq(cma_mcrec_mismatch(&w, &got), 0);
	w.rec.qkey = 1;
	w.rec.sl = 4;
	ck_assert_uint_eq(cma_mcrec_mismatch(&w, &got),
			  IB_SA_MCMEMBER_REC_QKEY | IB_SA_MCMEMBER_REC_SL);
	/* unselected components are not looked at */
	w.comp_mask = IB_SA_MCMEMBER_REC_MGID | IB_SA_MCMEMBER_REC_PKEY;
	ck_assert_uint_eq(cma_mcrec_mismatch(&w, &got), 0);
	/* an all-zero MGID accepts the one assigned */
	memset(&w.rec.mgid, 0, 16);
	ck_assert_uint_eq(cma_mcrec_mismatch(&w, &got), 0);
	w.rec.mgid.raw[0] = 0xff;
	ck_assert_uint_eq(cma_mcrec_mismatch(&w, &got),
			  IB_SA_MCMEMBER_REC_MGID);
	/* what no kernel reports never matches */
	w = (struct ib_mreq){.rec = got,
			     .comp_mask = IB_SA_MCMEMBER_REC_PACKET_LIFE_TIME};
	ck_assert_uint_eq(cma_mcrec_mismatch(&w, &got),
			  IB_SA_MCMEMBER_REC_PACKET_LIFE_TIME);
}
END_TEST

START_TEST(mismatch_selectors)
{
	struct ib_mreq w = {0};

	build(IBV_MTU_1024);
	w.comp_mask = IB_SA_MCMEMBER_REC_MTU | IB_SA_MCMEMBER_REC_MTU_SELECTOR;
	w.rec.mtu = IBV_MTU_512;
	w.rec.mtu_selector = IB_SA_SELECTOR_GREATER_THAN;
	ck_assert_uint_eq(cma_mcrec_mismatch(&w, &got), 0);
	w.rec.mtu_selector = IB_SA_SELECTOR_LESS_THAN;
	ck_assert_uint_eq(cma_mcrec_mismatch(&w, &got),
			  w.comp_mask); /* both bits named */
	w.comp_mask = IB_SA_MCMEMBER_REC_MTU; /* no selector: exactly */
	ck_assert_uint_eq(cma_mcrec_mismatch(&w, &got), IB_SA_MCMEMBER_REC_MTU);
	w.rec.mtu = IBV_MTU_1024;
	ck_assert_uint_eq(cma_mcrec_mismatch(&w, &got), 0);
	/* an unknown group MTU (InfiniBand) satisfies nothing */
	build(0);
	ck_assert_uint_eq(cma_mcrec_mismatch(&w, &got), IB_SA_MCMEMBER_REC_MTU);

	/* rates compare by speed, not by their encoding */
	build(IBV_MTU_1024);
	w.comp_mask =
		IB_SA_MCMEMBER_REC_RATE | IB_SA_MCMEMBER_REC_RATE_SELECTOR;
	w.rec.rate = IBV_RATE_5_GBPS; /* encoded 5, above 10 Gb/s's 3 */
	w.rec.rate_selector = IB_SA_SELECTOR_GREATER_THAN;
	ck_assert_uint_eq(cma_mcrec_mismatch(&w, &got), 0);
	w.rec.rate_selector = IB_SA_SELECTOR_LESS_THAN;
	ck_assert_uint_ne(cma_mcrec_mismatch(&w, &got), 0);
	w.rec.rate_selector = IB_SA_SELECTOR_BEST;
	ck_assert_uint_eq(cma_mcrec_mismatch(&w, &got), 0);
	ck_assert_uint_eq(cma_rate_mbps(IBV_RATE_2_5_GBPS), 2500);
	ck_assert_uint_eq(cma_rate_mbps(200), 0);
}
END_TEST

/*
 * A group RoCE made from an IPv4 address (MGID ::ffff:a.b.c.d) has no
 * scope nibble of its own: its record says global scope, as the kernel
 * joins it; and a record asked for again is built afresh, nothing left of
 * the one before.
 */
START_TEST(ipv4_groups_on_roce_have_global_scope)
{
	struct cma_mc_join_info info = {
		.ah_attr = &ah,
		.port_gid = &port_gid,
		.join_state = IB_MC_JOIN_STATE_SENDONLY_FULL_MEMBER,
	};

	build(IBV_MTU_1024);
	ck_assert_uint_eq(got.mtu_selector, IB_SA_SELECTOR_EXACTLY);
	ck_assert_uint_eq(got.rate_selector, IB_SA_SELECTOR_EXACTLY);
	memset(&ah.grh.dgid, 0, sizeof(ah.grh.dgid));
	ah.grh.dgid.raw[10] = ah.grh.dgid.raw[11] = 0xff;
	ah.grh.dgid.raw[12] = 239;
	ah.grh.dgid.raw[15] = 1;
	memset(&got, 0x5a, sizeof(got));
	cma_mcrec_build(&info, &got);
	ck_assert_uint_eq(got.scope, 0x0e);
	ck_assert_uint_eq(got.join_state,
			  IB_MC_JOIN_STATE_SENDONLY_FULL_MEMBER);
	ck_assert_uint_eq(got.qkey, 0);
	ck_assert_int_eq(got.proxy_join, 0);
	ck_assert(!memcmp(&got.mgid, &ah.grh.dgid, 16));
}
END_TEST

Suite *mcast_mreq_suite(void)
{
	Suite *s = suite_create("mcast_mreq");
	TCase *t = tcase_create("values");

	tcase_add_test(t, ip_mreq_parsed);
	tcase_add_test(t, ip_mreqn_parsed);
	tcase_add_test(t, ip_mreq_rejected);
	tcase_add_test(t, ipv6_mreq_parsed);
	tcase_add_test(t, ib_mreq_parsed);
	tcase_add_test(t, ib_mreq_rejected);
	tcase_add_test(t, mgid_mapping);
	suite_add_tcase(s, t);
	t = tcase_create("records");
	tcase_add_test(t, record_from_join);
	tcase_add_test(t, mismatch_plain_fields);
	tcase_add_test(t, mismatch_selectors);
	tcase_add_test(t, ipv4_groups_on_roce_have_global_scope);
	suite_add_tcase(s, t);
	return s;
}
