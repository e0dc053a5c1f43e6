// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Where the CM calls use ACM's answers (src/acm/acm_cm.c), with
 * RDMA_CM_USE_IB_ACM=1 and the answers put in ACM's cache by the test (the
 * only source enabled, so nothing else is asked):
 *
 *  - rdma_getaddrinfo: a name ACM knows by a RoCE GID becomes the IP
 *    address behind it, one known by an InfiniBand GID an AF_IB address
 *    with the service in its service id, unless the hints ask for IP;
 *    either way with ACM's paths in ai_route (none with RAI_NOROUTE).
 *    Numeric addresses and names ACM does not know go to getaddrinfo(3),
 *    whose first entry gets ACM's route if ACM has one.
 *  - rdma_resolve_addr / rdma_resolve_route on the fake kernel: a path
 *    whose GIDs are the ones the kernel resolved goes to the kernel with
 *    RDMA_OPTION_IB_PATH instead of RESOLVE_ROUTE; other GIDs, no answer,
 *    or the kernel refusing the path all fall back to RESOLVE_ROUTE, and
 *    the application sees ROUTE_RESOLVED either way.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "acm/acm.h"
#include "cm/cma.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "cm/test_hooks.h"
#include "unit.h"

#define TTL_MS 600000

static struct rdma_event_channel *ch;

static void setup(void)
{
	ch = unit_fakes_open(true);
	setenv("RDMA_CM_USE_IB_ACM", "1", 1);
	setenv("RDMA_CM_ACM_SOURCES", "cache", 1);
	unsetenv("RDMA_CM_ACM_LOG");
	cma_acm_reconfigure(); /* also empties the cache */
}

static void teardown(void)
{
	unsetenv("RDMA_CM_USE_IB_ACM");
	unsetenv("RDMA_CM_ACM_SOURCES");
	cma_acm_reconfigure();
	unit_fakes_close(ch);
}

static union ibv_gid gid_of(const char *ip6)
{
	union ibv_gid gid;

	ck_assert_int_eq(inet_pton(AF_INET6, ip6, gid.raw), 1);
	return gid;
}

/* An answer with one path per GID pair; the last one is primary. */
static struct cma_acm_answer answer(const char *sgid, const char *dgid,
				    int npaths)
{
	struct cma_acm_answer ans;
	int i;

	memset(&ans, 0, sizeof(ans));
	ans.source = CMA_ACM_SRC_SERVICE;
	ans.num_paths = npaths;
	ans.dgid = gid_of(dgid);
	for (i = 0; i < npaths; i++) {
		ans.paths[i].path.sgid = gid_of(sgid);
		ans.paths[i].path.dgid = ans.dgid;
		ans.paths[i].path.slid = htobe16((uint16_t)(i + 1));
		ans.paths[i].path.sgid.raw[14] = (uint8_t)(npaths - 1 - i);
	}
	if (npaths)
		ans.paths[npaths - 1].flags = IBV_PATH_FLAG_PRIMARY;
	return ans;
}

/* Cache @ans for the name rdma_getaddrinfo asks about (no source). */
static void know_name(const char *name, const struct cma_acm_answer *ans)
{
	struct cma_acm_query q;

	memset(&q, 0, sizeof(q));
	q.dst.type = CMA_ACM_EP_NAME;
	strcpy(q.dst.name, name);
	cma_acm_cache_put(&q, ans, TTL_MS);
}

/* Cache @ans for the pair (@src may be NULL or AF_UNSPEC: none). */
static void know_pair(const struct sockaddr *src, const struct sockaddr *dst,
		      const struct cma_acm_answer *ans)
{
	struct cma_acm_query q;

	memset(&q, 0, sizeof(q));
	if (src && src->sa_family)
		ck_assert_int_eq(cma_acm_ep_from_sockaddr(&q.src, src), 0);
	ck_assert_int_eq(cma_acm_ep_from_sockaddr(&q.dst, dst), 0);
	cma_acm_cache_put(&q, ans, TTL_MS);
}

static struct rdma_addrinfo *lookup(const char *node, const char *service,
				    const struct rdma_addrinfo *hints)
{
	struct rdma_addrinfo *res = NULL;

	ck_assert_int_eq(rdma_getaddrinfo(node, service, hints, &res), 0);
	ck_assert_ptr_nonnull(res);
	return res;
}

/* --- rdma_getaddrinfo ------------------------------------------------------ */

START_TEST(roce_name_becomes_its_ip_address)
{
	struct cma_acm_answer ans =
		answer("::ffff:192.0.2.1", "::ffff:192.0.2.2", 2);
	struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_TCP};
	struct rdma_addrinfo *res;
	struct sockaddr_in *sin;

	know_name("peer-a", &ans);
	/* Names are asked in lower case, and given back as written. */
	res = lookup("Peer-A", "7471", &hints);
	ck_assert_int_eq(res->ai_family, AF_INET);
	ck_assert_str_eq(res->ai_dst_canonname, "Peer-A");
	sin = (struct sockaddr_in *)res->ai_dst_addr;
	ck_assert_int_eq(sin->sin_family, AF_INET);
	ck_assert_uint_eq(ntohl(sin->sin_addr.s_addr), 0xc0000202);
	ck_assert_uint_eq(ntohs(sin->sin_port), 7471);
	ck_assert_uint_eq(res->ai_route_len, 2 * sizeof(struct ibv_path_data));
	ck_assert_mem_eq(res->ai_route, ans.paths, res->ai_route_len);
	ck_assert_ptr_null(res->ai_next);
	rdma_freeaddrinfo(res);
	/* RAI_NOROUTE: the address only. */
	hints.ai_flags = RAI_NOROUTE;
	res = lookup("peer-a", NULL, &hints);
	ck_assert_ptr_null(res->ai_route);
	ck_assert_uint_eq(res->ai_route_len, 0);
	ck_assert_int_eq(res->ai_family, AF_INET);
	rdma_freeaddrinfo(res);
	/* A service name is looked up for the IP address ACM gave. */
	hints.ai_flags = 0;
	res = lookup("peer-a", "ssh", &hints);
	sin = (struct sockaddr_in *)res->ai_dst_addr;
	ck_assert_uint_eq(ntohl(sin->sin_addr.s_addr), 0xc0000202);
	ck_assert_uint_eq(ntohs(sin->sin_port), 22);
	ck_assert_str_eq(res->ai_dst_canonname, "peer-a");
	ck_assert_ptr_nonnull(res->ai_route);
	rdma_freeaddrinfo(res);
}
END_TEST

START_TEST(roce_ipv6_name)
{
	struct cma_acm_answer ans = answer("2001:db8::1", "2001:db8::2", 1);
	struct rdma_addrinfo *res;
	struct sockaddr_in6 *sin6;
	union ibv_gid want = gid_of("2001:db8::2");

	know_name("peer-six", &ans);
	res = lookup("peer-six", "7471", NULL);
	ck_assert_int_eq(res->ai_family, AF_INET6);
	sin6 = (struct sockaddr_in6 *)res->ai_dst_addr;
	ck_assert_mem_eq(&sin6->sin6_addr, want.raw, 16);
	ck_assert_uint_eq(ntohs(sin6->sin6_port), 7471);
	rdma_freeaddrinfo(res);
}
END_TEST

START_TEST(ib_name_becomes_af_ib)
{
	struct cma_acm_answer ans = answer("fe80::1", "fe80::2", 2);
	struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_UDP};
	const struct ibv_path_record *primary = &ans.paths[1].path;
	struct sockaddr_ib *src, *dst;
	struct rdma_addrinfo *res;

	ans.paths[1].path.pkey = htobe16(0x8001);
	know_name("ib-peer", &ans);
	res = lookup("ib-peer", "7471", &hints);
	ck_assert_int_eq(res->ai_family, AF_IB);
	ck_assert_uint_eq(res->ai_src_len, sizeof(struct sockaddr_ib));
	ck_assert_uint_eq(res->ai_dst_len, sizeof(struct sockaddr_ib));
	src = (struct sockaddr_ib *)res->ai_src_addr;
	dst = (struct sockaddr_ib *)res->ai_dst_addr;
	/* The primary path's GIDs and P_Key. */
	ck_assert_int_eq(src->sib_family, AF_IB);
	ck_assert_mem_eq(&src->sib_addr, primary->sgid.raw, 16);
	ck_assert_mem_eq(&dst->sib_addr, primary->dgid.raw, 16);
	ck_assert_uint_eq(be16toh(dst->sib_pkey), 0x8001);
	ck_assert_uint_eq(src->sib_sid, 0);
	ck_assert_uint_eq(be64toh(dst->sib_sid), RDMA_IB_IP_PS_UDP | 7471);
	ck_assert_uint_eq(dst->sib_sid_mask, ~0ULL);
	ck_assert_str_eq(res->ai_dst_canonname, "ib-peer");
	ck_assert_uint_eq(res->ai_route_len, 2 * sizeof(struct ibv_path_data));
	rdma_freeaddrinfo(res);
	/* Without a service, no service id; TCP's space by default. */
	res = lookup("ib-peer", NULL, NULL);
	dst = (struct sockaddr_ib *)res->ai_dst_addr;
	ck_assert_uint_eq(dst->sib_sid, 0);
	rdma_freeaddrinfo(res);
}
END_TEST

/*
 * Hints asking for IP cannot take an InfiniBand answer: the name goes to
 * getaddrinfo(3), and its address gets ACM's route when ACM has one.
 */
START_TEST(ip_hints_skip_an_ib_answer)
{
	struct cma_acm_answer ib = answer("fe80::1", "fe80::2", 1);
	struct cma_acm_answer lo =
		answer("::ffff:127.0.0.1", "::ffff:127.0.0.1", 1);
	struct rdma_addrinfo hints = {.ai_family = AF_INET};
	struct sockaddr_in *sin;
	struct rdma_addrinfo *res;

	know_name("localhost", &ib);
	res = lookup("localhost", "7471", &hints);
	ck_assert_int_eq(res->ai_family, AF_INET);
	sin = (struct sockaddr_in *)res->ai_dst_addr;
	ck_assert_uint_eq(ntohl(sin->sin_addr.s_addr), INADDR_LOOPBACK);
	ck_assert_ptr_null(res->ai_route); /* ACM has no route to it */
	know_pair(res->ai_src_addr, res->ai_dst_addr, &lo);
	rdma_freeaddrinfo(res);
	res = lookup("localhost", "7471", &hints);
	ck_assert_uint_eq(res->ai_route_len, sizeof(struct ibv_path_data));
	ck_assert_mem_eq(res->ai_route, lo.paths, res->ai_route_len);
	rdma_freeaddrinfo(res);
	/* A passive lookup asks nothing of ACM. */
	hints.ai_flags = RAI_PASSIVE;
	res = lookup("localhost", "7471", &hints);
	ck_assert_ptr_null(res->ai_route);
	rdma_freeaddrinfo(res);
}
END_TEST

START_TEST(numeric_and_unknown_names_go_to_getaddrinfo)
{
	struct cma_acm_answer ans =
		answer("::ffff:192.0.2.1", "::ffff:192.0.2.2", 1);
	struct rdma_addrinfo hints = {.ai_family = AF_INET};
	struct sockaddr_in *sin;
	struct rdma_addrinfo *res;

	/* A numeric address is never a name, even one ACM has an entry for. */
	know_name("192.0.2.9", &ans);
	res = lookup("192.0.2.9", "7471", &hints);
	sin = (struct sockaddr_in *)res->ai_dst_addr;
	ck_assert_uint_eq(ntohl(sin->sin_addr.s_addr), 0xc0000209);
	ck_assert_ptr_null(res->ai_route);
	rdma_freeaddrinfo(res);
	/* A name ACM does not know (a negative answer is cached). */
	res = lookup("localhost", "7471", &hints);
	sin = (struct sockaddr_in *)res->ai_dst_addr;
	ck_assert_uint_eq(ntohl(sin->sin_addr.s_addr), INADDR_LOOPBACK);
	rdma_freeaddrinfo(res);
	res = lookup("localhost", "7471", &hints);
	rdma_freeaddrinfo(res);
}
END_TEST

/* --- rdma_resolve_addr and rdma_resolve_route ------------------------------- */

/* The source every id below resolves from. */
static struct sockaddr_in src_ip(void)
{
	return unit_ipv4("192.0.2.1", 0);
}

/*
 * An id whose address the fake kernel resolved from src_ip() towards
 * @dst, with the GIDs fe80::1 -> fe80::2 (fake_verbs_install); the log of
 * commands starts afresh for its route.
 */
static struct rdma_cm_id *addr_resolved(const struct sockaddr_in *dst)
{
	struct sockaddr_in src = src_ip();
	struct rdma_cm_id *id;

	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_resolve_addr(id, (struct sockaddr *)&src,
					   (struct sockaddr *)dst, 2000),
			 0);
	fake_ucma_event(fake_ucma_kid_of(id)->handle,
			RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	rdma_ack_cm_event(unit_expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	fake_ucma_clear_log();
	return id;
}

/* The same, with the route asked for. */
static struct rdma_cm_id *resolve(const struct sockaddr_in *dst)
{
	struct rdma_cm_id *id = addr_resolved(dst);

	ck_assert_int_eq(rdma_resolve_route(id, 2000), 0);
	return id;
}

/* The route was resolved by the kernel itself, or handed ACM's path. */
static void expect_route(struct rdma_cm_id *id, bool by_acm)
{
	const struct fake_cmd *cmd =
		fake_ucma_last(RDMA_USER_CM_CMD_SET_OPTION);
	const struct rdma_ucm_set_option *opt;

	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ROUTE),
			 !by_acm);
	if (by_acm) {
		ck_assert_ptr_nonnull(cmd);
		opt = (const void *)cmd->body;
		ck_assert_uint_eq(opt->level, RDMA_OPTION_IB);
		ck_assert_uint_eq(opt->optname, RDMA_OPTION_IB_PATH);
		ck_assert_uint_eq(opt->optlen, sizeof(struct ibv_path_data));
	}
	/* Either way the kernel reports the route as resolved. */
	fake_ucma_event(fake_ucma_kid_of(id)->handle,
			RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	rdma_ack_cm_event(unit_expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}

START_TEST(acms_path_goes_to_the_kernel)
{
	struct sockaddr_in dst = unit_ipv4("192.0.2.2", 7471), src = src_ip();
	struct cma_acm_answer ans = answer("fe80::1", "fe80::2", 1);

	know_pair((struct sockaddr *)&src, (struct sockaddr *)&dst, &ans);
	expect_route(resolve(&dst), true);
}
END_TEST

START_TEST(other_gids_or_no_answer_use_the_kernels_route)
{
	struct sockaddr_in dst = unit_ipv4("192.0.2.2", 7471), src = src_ip();
	struct sockaddr_in none = unit_ipv4("192.0.2.3", 7471);
	struct cma_acm_answer ans = answer("fe80::7", "fe80::2", 1);

	/* ACM's path starts at another GID than the kernel resolved. */
	know_pair((struct sockaddr *)&src, (struct sockaddr *)&dst, &ans);
	expect_route(resolve(&dst), false);
	/* ACM knows nothing about the destination. */
	expect_route(resolve(&none), false);
}
END_TEST

START_TEST(a_refused_path_falls_back)
{
	struct sockaddr_in dst = unit_ipv4("192.0.2.2", 7471), src = src_ip();
	struct cma_acm_answer ans = answer("fe80::1", "fe80::2", 1);
	struct rdma_cm_id *id;

	know_pair((struct sockaddr *)&src, (struct sockaddr *)&dst, &ans);
	id = addr_resolved(&dst);
	fake_ucma_fail_next(RDMA_USER_CM_CMD_SET_OPTION, EINVAL);
	ck_assert_int_eq(rdma_resolve_route(id, 2000), 0);
	expect_route(id, false);
}
END_TEST

/*
 * Without an answer kept from the address resolution, the route asks ACM
 * about the addresses the kernel resolved (source included).
 */
START_TEST(answer_asked_for_the_resolved_addresses)
{
	struct sockaddr_in dst = unit_ipv4("192.0.2.2", 7471);
	struct cma_acm_answer ans = answer("fe80::1", "fe80::2", 1);
	struct rdma_cm_id *id;

	id = addr_resolved(&dst);
	know_pair(rdma_get_local_addr(id), rdma_get_peer_addr(id), &ans);
	ck_assert_int_eq(rdma_resolve_route(id, 2000), 0);
	expect_route(id, true);
}
END_TEST

Suite *acm_cm_suite(void)
{
	Suite *s = suite_create("acm_cm");
	TCase *t = tcase_create("getaddrinfo");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, roce_name_becomes_its_ip_address);
	tcase_add_test(t, roce_ipv6_name);
	tcase_add_test(t, ib_name_becomes_af_ib);
	tcase_add_test(t, ip_hints_skip_an_ib_answer);
	tcase_add_test(t, numeric_and_unknown_names_go_to_getaddrinfo);
	suite_add_tcase(s, t);
	t = tcase_create("route");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, acms_path_goes_to_the_kernel);
	tcase_add_test(t, other_gids_or_no_answer_use_the_kernels_route);
	tcase_add_test(t, a_refused_path_falls_back);
	tcase_add_test(t, answer_asked_for_the_resolved_addresses);
	suite_add_tcase(s, t);
	return s;
}
