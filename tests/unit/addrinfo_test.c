// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests of src/addrinfo/addrinfo.c (rdma_getaddrinfo and friends) and of the
 * argument checks of src/cm/endpoint.c.
 *
 * Nothing here needs RDMA hardware or the rdma_cm kernel module: lookups
 * use numeric addresses, the wildcard and loopback addresses getaddrinfo()
 * makes up itself, and "localhost" from the hosts file.  The lookups kept
 * on an id (rdma_resolve_addrinfo) are addrinfo_resolve_test.c's.  Run
 * under valgrind (CK_FORK=no) or an ASan build to check
 * that every list is freed completely.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"
#include "unit.h"

/* --- helpers ----------------------------------------------------------- */

static struct sockaddr_in make_in4(const char *ip, uint16_t port)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	ck_assert_int_eq(inet_pton(AF_INET, ip, &sin.sin_addr), 1);
	return sin;
}

static struct sockaddr_in6 make_in6(const char *ip, uint16_t port)
{
	struct sockaddr_in6 sin6;

	memset(&sin6, 0, sizeof(sin6));
	sin6.sin6_family = AF_INET6;
	sin6.sin6_port = htons(port);
	ck_assert_int_eq(inet_pton(AF_INET6, ip, &sin6.sin6_addr), 1);
	return sin6;
}

static struct sockaddr_ib make_ib(uint64_t sid)
{
	struct sockaddr_ib sib;

	memset(&sib, 0, sizeof(sib));
	sib.sib_family = AF_IB;
	sib.sib_pkey = htobe16(0xffff);
	sib.sib_sid = htobe64(sid);
	sib.sib_sid_mask = htobe64(~0ULL);
	sib.sib_addr.sib_raw[15] = 1;
	return sib;
}

static void assert_in4(const struct sockaddr *sa, socklen_t len, const char *ip,
		       uint16_t port)
{
	struct sockaddr_in want = make_in4(ip, port);

	ck_assert_ptr_nonnull(sa);
	ck_assert_uint_eq(len, sizeof(want));
	ck_assert_int_eq(memcmp(sa, &want, sizeof(want)), 0);
}

static void assert_in6(const struct sockaddr *sa, socklen_t len, const char *ip,
		       uint16_t port)
{
	const struct sockaddr_in6 *got = (const void *)sa;
	struct sockaddr_in6 want = make_in6(ip, port);

	ck_assert_ptr_nonnull(sa);
	ck_assert_uint_eq(len, sizeof(want));
	ck_assert_int_eq(got->sin6_family, AF_INET6);
	ck_assert_uint_eq(got->sin6_port, want.sin6_port);
	ck_assert_int_eq(memcmp(&got->sin6_addr, &want.sin6_addr,
				sizeof(want.sin6_addr)),
			 0);
}

static int count_entries(const struct rdma_addrinfo *res)
{
	int n = 0;

	for (; res; res = res->ai_next)
		n++;
	return n;
}

static int lookup(const char *node, const char *service, int flags,
		  struct rdma_addrinfo **res)
{
	struct rdma_addrinfo hints;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = flags;
	return rdma_getaddrinfo(node, service, &hints, res);
}

/* Expect failure with @err, and *res left alone. */
static void assert_fails(const char *node, const char *service,
			 const struct rdma_addrinfo *hints, int err)
{
	struct rdma_addrinfo *res = (void *)&res; /* a sentinel */

	errno = 0;
	ck_assert_int_eq(rdma_getaddrinfo(node, service, hints, &res), -1);
	ck_assert_int_eq(errno, err);
	ck_assert_ptr_eq(res, (void *)&res);
}

/* --- rdma_getaddrinfo: placement and families --------------------------- */

START_TEST(test_numeric_ipv4_active)
{
	struct rdma_addrinfo *res;

	ck_assert_int_eq(lookup("192.0.2.1", "7471", RAI_NUMERICHOST, &res), 0);
	ck_assert_int_eq(count_entries(res), 1);
	ck_assert_int_eq(res->ai_family, AF_INET);
	ck_assert_int_eq(res->ai_flags, RAI_NUMERICHOST);
	assert_in4(res->ai_dst_addr, res->ai_dst_len, "192.0.2.1", 7471);
	ck_assert_ptr_null(res->ai_src_addr);
	ck_assert_uint_eq(res->ai_src_len, 0);
	ck_assert_ptr_null(res->ai_route);
	ck_assert_ptr_null(res->ai_connect);
	rdma_freeaddrinfo(res);
}
END_TEST

START_TEST(test_numeric_ipv6_active)
{
	struct rdma_addrinfo *res;

	/* Numeric without RAI_NUMERICHOST works too, without any DNS. */
	ck_assert_int_eq(lookup("2001:db8::5", "18515", 0, &res), 0);
	ck_assert_int_eq(count_entries(res), 1);
	ck_assert_int_eq(res->ai_family, AF_INET6);
	assert_in6(res->ai_dst_addr, res->ai_dst_len, "2001:db8::5", 18515);
	ck_assert_ptr_null(res->ai_src_addr);
	rdma_freeaddrinfo(res);
}
END_TEST

START_TEST(test_numeric_passive)
{
	struct rdma_addrinfo *res;

	ck_assert_int_eq(lookup("198.51.100.7", "7471",
				RAI_PASSIVE | RAI_NUMERICHOST, &res),
			 0);
	ck_assert_int_eq(count_entries(res), 1);
	ck_assert_int_eq(res->ai_flags, RAI_PASSIVE | RAI_NUMERICHOST);
	assert_in4(res->ai_src_addr, res->ai_src_len, "198.51.100.7", 7471);
	ck_assert_ptr_null(res->ai_dst_addr);
	ck_assert_uint_eq(res->ai_dst_len, 0);
	ck_assert_ptr_null(res->ai_dst_canonname);
	rdma_freeaddrinfo(res);
}
END_TEST

/* No node: the active side gets loopback addresses. */
START_TEST(test_service_only_active)
{
	struct rdma_addrinfo *res, *ai;

	ck_assert_int_eq(lookup(NULL, "7471", 0, &res), 0);
	ck_assert_int_ge(count_entries(res), 1);
	for (ai = res; ai; ai = ai->ai_next) {
		ck_assert_ptr_null(ai->ai_src_addr);
		ck_assert_ptr_null(ai->ai_dst_canonname);
		if (ai->ai_family == AF_INET)
			assert_in4(ai->ai_dst_addr, ai->ai_dst_len, "127.0.0.1",
				   7471);
		else
			assert_in6(ai->ai_dst_addr, ai->ai_dst_len, "::1",
				   7471);
	}
	rdma_freeaddrinfo(res);
}
END_TEST

/* No node and RAI_PASSIVE: wildcard addresses, in ai_src_addr. */
START_TEST(test_service_only_passive)
{
	struct rdma_addrinfo *res, *ai;

	ck_assert_int_eq(lookup(NULL, "7471", RAI_PASSIVE, &res), 0);
	ck_assert_int_ge(count_entries(res), 1);
	for (ai = res; ai; ai = ai->ai_next) {
		ck_assert_ptr_null(ai->ai_dst_addr);
		if (ai->ai_family == AF_INET)
			assert_in4(ai->ai_src_addr, ai->ai_src_len, "0.0.0.0",
				   7471);
		else
			assert_in6(ai->ai_src_addr, ai->ai_src_len, "::", 7471);
	}
	rdma_freeaddrinfo(res);
}
END_TEST

static void check_family_only(int family)
{
	struct rdma_addrinfo hints, *res, *ai;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE | RAI_FAMILY;
	hints.ai_family = family;
	ck_assert_int_eq(rdma_getaddrinfo(NULL, "7471", &hints, &res), 0);
	ck_assert_int_eq(count_entries(res), 1);
	for (ai = res; ai; ai = ai->ai_next) {
		ck_assert_int_eq(ai->ai_family, family);
		ck_assert_int_eq(ai->ai_src_addr->sa_family, family);
	}
	rdma_freeaddrinfo(res);
}

START_TEST(test_rai_family)
{
	check_family_only(AF_INET);
	check_family_only(AF_INET6);
}
END_TEST

START_TEST(test_family_mismatch)
{
	struct rdma_addrinfo hints;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_FAMILY | RAI_NUMERICHOST;
	hints.ai_family = AF_INET;
	assert_fails("::1", "7471", &hints, ENOENT);
	hints.ai_family = AF_INET6;
	assert_fails("127.0.0.1", "7471", &hints, ENOENT);
}
END_TEST

/* A source in the hints limits the lookup to its own family. */
START_TEST(test_source_family_pairs)
{
	struct sockaddr_in src = make_in4("10.0.0.1", 0);
	struct rdma_addrinfo hints, *res, *ai;

	memset(&hints, 0, sizeof(hints));
	hints.ai_src_addr = (struct sockaddr *)&src;
	hints.ai_src_len = sizeof(src);
	ck_assert_int_eq(rdma_getaddrinfo(NULL, "7471", &hints, &res), 0);
	for (ai = res; ai; ai = ai->ai_next)
		ck_assert_int_eq(ai->ai_family, AF_INET);
	rdma_freeaddrinfo(res);
}
END_TEST

START_TEST(test_named_host)
{
	struct rdma_addrinfo *res, *ai;

	ck_assert_int_eq(lookup("localhost", "7471", 0, &res), 0);
	ck_assert_int_ge(count_entries(res), 1);
	for (ai = res; ai; ai = ai->ai_next) {
		ck_assert_ptr_nonnull(ai->ai_dst_addr);
		ck_assert(ai->ai_family == AF_INET ||
			  ai->ai_family == AF_INET6);
		ck_assert_int_eq(ai->ai_dst_addr->sa_family, ai->ai_family);
		/* Every entry owns a copy of the canonical name. */
		ck_assert_ptr_nonnull(ai->ai_dst_canonname);
		ck_assert_ptr_null(ai->ai_src_canonname);
		if (ai->ai_next)
			ck_assert_ptr_ne(ai->ai_dst_canonname,
					 ai->ai_next->ai_dst_canonname);
	}
	rdma_freeaddrinfo(res);

	ck_assert_int_eq(lookup("localhost", NULL, RAI_PASSIVE, &res), 0);
	ck_assert_ptr_nonnull(res->ai_src_canonname);
	ck_assert_ptr_null(res->ai_dst_canonname);
	rdma_freeaddrinfo(res);
}
END_TEST

/* --- port space and QP type ------------------------------------------- */

static void check_types(int ps, int qp_type, int want_ps, int want_qp)
{
	struct rdma_addrinfo hints, *res;

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = ps;
	hints.ai_qp_type = qp_type;
	ck_assert_int_eq(rdma_getaddrinfo("192.0.2.1", "1", &hints, &res), 0);
	ck_assert_int_eq(res->ai_port_space, want_ps);
	ck_assert_int_eq(res->ai_qp_type, want_qp);
	rdma_freeaddrinfo(res);
}

START_TEST(test_type_defaults)
{
	struct rdma_addrinfo *res;

	ck_assert_int_eq(rdma_getaddrinfo("192.0.2.1", "1", NULL, &res), 0);
	ck_assert_int_eq(res->ai_port_space, RDMA_PS_TCP);
	ck_assert_int_eq(res->ai_qp_type, IBV_QPT_RC);
	ck_assert_int_eq(res->ai_flags, 0);
	rdma_freeaddrinfo(res);

	check_types(0, 0, RDMA_PS_TCP, IBV_QPT_RC);
	check_types(RDMA_PS_UDP, 0, RDMA_PS_UDP, IBV_QPT_UD);
	check_types(0, IBV_QPT_UD, RDMA_PS_UDP, IBV_QPT_UD);
	check_types(RDMA_PS_IPOIB, 0, RDMA_PS_IPOIB, IBV_QPT_UD);
	check_types(RDMA_PS_IB, 0, RDMA_PS_IB, IBV_QPT_RC);
	check_types(0, IBV_QPT_RC, RDMA_PS_TCP, IBV_QPT_RC);
	/* Both given: kept as they are, even when unusual. */
	check_types(RDMA_PS_IB, IBV_QPT_UD, RDMA_PS_IB, IBV_QPT_UD);
}
END_TEST

START_TEST(test_bad_port_space)
{
	struct rdma_addrinfo hints;

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = 0x4242;
	assert_fails("192.0.2.1", "1", &hints, EINVAL);
}
END_TEST

/* --- addresses given in the hints -------------------------------------- */

START_TEST(test_hint_source_copied)
{
	struct sockaddr_in src = make_in4("10.0.0.1", 0);
	struct rdma_addrinfo hints, *res;

	memset(&hints, 0, sizeof(hints));
	hints.ai_src_addr = (struct sockaddr *)&src;
	hints.ai_src_len = sizeof(src);
	ck_assert_int_eq(rdma_getaddrinfo("10.0.0.2", "7471", &hints, &res), 0);
	ck_assert_int_eq(count_entries(res), 1);
	assert_in4(res->ai_src_addr, res->ai_src_len, "10.0.0.1", 0);
	ck_assert_ptr_ne(res->ai_src_addr, (struct sockaddr *)&src);
	assert_in4(res->ai_dst_addr, res->ai_dst_len, "10.0.0.2", 7471);
	rdma_freeaddrinfo(res);
}
END_TEST

START_TEST(test_hint_destination_copied_passive)
{
	struct sockaddr_in6 dst = make_in6("2001:db8::9", 99);
	struct rdma_addrinfo hints, *res;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_dst_addr = (struct sockaddr *)&dst;
	hints.ai_dst_len = sizeof(dst);
	ck_assert_int_eq(rdma_getaddrinfo("2001:db8::1", "7471", &hints, &res),
			 0);
	ck_assert_int_eq(count_entries(res), 1);
	assert_in6(res->ai_src_addr, res->ai_src_len, "2001:db8::1", 7471);
	assert_in6(res->ai_dst_addr, res->ai_dst_len, "2001:db8::9", 99);
	rdma_freeaddrinfo(res);
}
END_TEST

/* A hint without a length gets its family's. */
START_TEST(test_hint_length_defaulted)
{
	struct sockaddr_in src = make_in4("10.0.0.1", 0);
	struct rdma_addrinfo hints, *res;

	memset(&hints, 0, sizeof(hints));
	hints.ai_src_addr = (struct sockaddr *)&src;
	ck_assert_int_eq(rdma_getaddrinfo("10.0.0.2", "1", &hints, &res), 0);
	assert_in4(res->ai_src_addr, res->ai_src_len, "10.0.0.1", 0);
	rdma_freeaddrinfo(res);
}
END_TEST

/* Neither node nor service: one entry made from the hints alone. */
START_TEST(test_hints_only_ip)
{
	struct sockaddr_in dst = make_in4("192.0.2.3", 7471);
	struct rdma_addrinfo hints, *res;

	memset(&hints, 0, sizeof(hints));
	hints.ai_dst_addr = (struct sockaddr *)&dst;
	hints.ai_dst_len = sizeof(dst);
	ck_assert_int_eq(rdma_getaddrinfo(NULL, NULL, &hints, &res), 0);
	ck_assert_int_eq(count_entries(res), 1);
	ck_assert_int_eq(res->ai_family, AF_INET);
	ck_assert_int_eq(res->ai_port_space, RDMA_PS_TCP);
	ck_assert_int_eq(res->ai_qp_type, IBV_QPT_RC);
	assert_in4(res->ai_dst_addr, res->ai_dst_len, "192.0.2.3", 7471);
	ck_assert_ptr_null(res->ai_src_addr);
	rdma_freeaddrinfo(res);
}
END_TEST

START_TEST(test_hints_only_af_ib)
{
	struct sockaddr_ib src = make_ib(0), dst = make_ib(0x1060000001234ULL);
	uint8_t route[64], connect[8];
	struct rdma_addrinfo hints, *res;

	memset(route, 0xab, sizeof(route));
	memset(connect, 0xcd, sizeof(connect));
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_IB;
	hints.ai_flags = RAI_FAMILY;
	hints.ai_port_space = RDMA_PS_IB;
	hints.ai_src_addr = (struct sockaddr *)&src;
	hints.ai_src_len = sizeof(src);
	hints.ai_dst_addr = (struct sockaddr *)&dst;
	hints.ai_dst_len = sizeof(dst);
	hints.ai_route = route;
	hints.ai_route_len = sizeof(route);
	hints.ai_connect = connect;
	hints.ai_connect_len = sizeof(connect);
	ck_assert_int_eq(rdma_getaddrinfo(NULL, NULL, &hints, &res), 0);

	ck_assert_int_eq(count_entries(res), 1);
	ck_assert_int_eq(res->ai_family, AF_IB);
	ck_assert_int_eq(res->ai_flags, RAI_FAMILY);
	ck_assert_int_eq(res->ai_port_space, RDMA_PS_IB);
	ck_assert_int_eq(res->ai_qp_type, IBV_QPT_RC);
	ck_assert_uint_eq(res->ai_dst_len, sizeof(dst));
	ck_assert_int_eq(memcmp(res->ai_dst_addr, &dst, sizeof(dst)), 0);
	ck_assert_uint_eq(res->ai_src_len, sizeof(src));
	ck_assert_int_eq(memcmp(res->ai_src_addr, &src, sizeof(src)), 0);
	ck_assert_uint_eq(res->ai_route_len, sizeof(route));
	ck_assert_ptr_ne(res->ai_route, route);
	ck_assert_int_eq(memcmp(res->ai_route, route, sizeof(route)), 0);
	ck_assert_uint_eq(res->ai_connect_len, sizeof(connect));
	ck_assert_int_eq(memcmp(res->ai_connect, connect, sizeof(connect)), 0);
	rdma_freeaddrinfo(res);
}
END_TEST

/* --- failures ----------------------------------------------------------- */

START_TEST(test_bad_input)
{
	struct sockaddr_ib dst = make_ib(1);
	struct sockaddr odd = {.sa_family = AF_UNIX};
	struct rdma_addrinfo hints;

	errno = 0;
	ck_assert_int_eq(rdma_getaddrinfo("192.0.2.1", "1", NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_NUMERICHOST;
	assert_fails("no.such.host.invalid", "7471", &hints, ENOENT);
	assert_fails("192.0.2.1", "no-such-service-name", &hints, ENOENT);

	/* Nothing to translate and nothing in the hints. */
	assert_fails(NULL, NULL, NULL, EINVAL);
	memset(&hints, 0, sizeof(hints));
	assert_fails(NULL, NULL, &hints, EINVAL);

	/* A family getaddrinfo() cannot produce, strictly asked for. */
	hints.ai_family = AF_IB;
	hints.ai_flags = RAI_FAMILY;
	hints.ai_dst_addr = (struct sockaddr *)&dst;
	assert_fails("192.0.2.1", "1", &hints, EAFNOSUPPORT);

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNIX;
	assert_fails("192.0.2.1", "1", &hints, EAFNOSUPPORT);

	/* A hint address of unknown family and size. */
	memset(&hints, 0, sizeof(hints));
	hints.ai_src_addr = &odd;
	assert_fails("192.0.2.1", "1", &hints, EINVAL);
	hints.ai_src_len = sizeof(struct sockaddr_storage) + 1;
	assert_fails("192.0.2.1", "1", &hints, EINVAL);
	/* Too short to hold its family (found by tests/fuzz). */
	hints.ai_src_len = 1;
	assert_fails(NULL, NULL, &hints, EINVAL);
}
END_TEST

/* AF_IB without RAI_FAMILY falls back to IP for names. */
START_TEST(test_af_ib_hint_falls_back)
{
	struct rdma_addrinfo hints, *res;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_IB;
	ck_assert_int_eq(rdma_getaddrinfo("192.0.2.1", "1", &hints, &res), 0);
	ck_assert_int_eq(res->ai_family, AF_INET);
	rdma_freeaddrinfo(res);
}
END_TEST

START_TEST(test_gai_errno)
{
	ck_assert_int_eq(cma_gai_errno(EAI_NONAME), ENOENT);
	ck_assert_int_eq(cma_gai_errno(EAI_SERVICE), ENOENT);
#ifdef EAI_NODATA
	ck_assert_int_eq(cma_gai_errno(EAI_NODATA), ENOENT);
#endif
#ifdef EAI_ADDRFAMILY
	ck_assert_int_eq(cma_gai_errno(EAI_ADDRFAMILY), ENOENT);
#endif
	ck_assert_int_eq(cma_gai_errno(EAI_AGAIN), EAGAIN);
	ck_assert_int_eq(cma_gai_errno(EAI_MEMORY), ENOMEM);
	ck_assert_int_eq(cma_gai_errno(EAI_FAMILY), EAFNOSUPPORT);
	ck_assert_int_eq(cma_gai_errno(EAI_FAIL), EIO);
	errno = EMFILE;
	ck_assert_int_eq(cma_gai_errno(EAI_SYSTEM), EMFILE);
	errno = 0;
	ck_assert_int_eq(cma_gai_errno(EAI_SYSTEM), EIO);
	ck_assert_int_eq(cma_gai_errno(EAI_BADFLAGS), EINVAL);
	ck_assert_int_eq(cma_gai_errno(EAI_SOCKTYPE), EINVAL);
}
END_TEST

/* --- the conversion helpers -------------------------------------------- */

START_TEST(test_from_addrinfo)
{
	struct sockaddr_in6 sin6 = make_in6("2001:db8::2", 5);
	struct sockaddr_in hint_dst = make_in4("192.0.2.9", 9);
	struct sockaddr_in hint_src = make_in4("192.0.2.8", 8);
	struct rdma_addrinfo tmpl, *rai;
	struct addrinfo ai;

	memset(&ai, 0, sizeof(ai));
	ai.ai_family = AF_INET6;
	ai.ai_addr = (struct sockaddr *)&sin6;
	ai.ai_addrlen = sizeof(sin6);

	memset(&tmpl, 0, sizeof(tmpl));
	tmpl.ai_flags = RAI_PASSIVE;
	tmpl.ai_port_space = RDMA_PS_UDP;
	tmpl.ai_qp_type = IBV_QPT_UD;
	tmpl.ai_dst_addr = (struct sockaddr *)&hint_dst;
	tmpl.ai_dst_len = sizeof(hint_dst);
	/* Replaced by the looked-up address on the passive side. */
	tmpl.ai_src_addr = (struct sockaddr *)&hint_src;
	tmpl.ai_src_len = sizeof(hint_src);

	rai = cma_ai_from_addrinfo(&ai, "host.example", &tmpl);
	ck_assert_ptr_nonnull(rai);
	ck_assert_int_eq(rai->ai_family, AF_INET6);
	ck_assert_int_eq(rai->ai_flags, RAI_PASSIVE);
	ck_assert_int_eq(rai->ai_port_space, RDMA_PS_UDP);
	ck_assert_int_eq(rai->ai_qp_type, IBV_QPT_UD);
	assert_in6(rai->ai_src_addr, rai->ai_src_len, "2001:db8::2", 5);
	assert_in4(rai->ai_dst_addr, rai->ai_dst_len, "192.0.2.9", 9);
	ck_assert_str_eq(rai->ai_src_canonname, "host.example");
	ck_assert_ptr_null(rai->ai_dst_canonname);
	ck_assert_ptr_null(rai->ai_next);
	rdma_freeaddrinfo(rai);
}
END_TEST

/* Duplicates and foreign families are dropped; the name is shared. */
START_TEST(test_convert_filters)
{
	struct sockaddr_in a = make_in4("192.0.2.1", 1);
	struct sockaddr_in b = make_in4("192.0.2.2", 1);
	struct sockaddr_in6 c = make_in6("2001:db8::1", 1);
	struct sockaddr odd = {.sa_family = AF_UNIX};
	struct addrinfo ai[5];
	struct rdma_addrinfo tmpl, *res;
	int i;

	memset(ai, 0, sizeof(ai));
	ai[0].ai_family = AF_INET;
	ai[0].ai_addr = (struct sockaddr *)&a;
	ai[0].ai_addrlen = sizeof(a);
	ai[0].ai_canonname = (char *)"host.example";
	ai[1] = ai[0]; /* the same address again */
	ai[1].ai_canonname = NULL;
	ai[2].ai_family = AF_UNIX;
	ai[2].ai_addr = &odd;
	ai[2].ai_addrlen = sizeof(odd);
	ai[3].ai_family = AF_INET6;
	ai[3].ai_addr = (struct sockaddr *)&c;
	ai[3].ai_addrlen = sizeof(c);
	ai[4].ai_family = AF_INET;
	ai[4].ai_addr = (struct sockaddr *)&b;
	ai[4].ai_addrlen = sizeof(b);
	for (i = 0; i < 4; i++)
		ai[i].ai_next = &ai[i + 1];

	memset(&tmpl, 0, sizeof(tmpl));
	tmpl.ai_port_space = RDMA_PS_TCP;
	tmpl.ai_qp_type = IBV_QPT_RC;
	res = cma_ai_convert(ai, &tmpl);
	ck_assert_int_eq(count_entries(res), 3);
	assert_in4(res->ai_dst_addr, res->ai_dst_len, "192.0.2.1", 1);
	assert_in6(res->ai_next->ai_dst_addr, res->ai_next->ai_dst_len,
		   "2001:db8::1", 1);
	assert_in4(res->ai_next->ai_next->ai_dst_addr,
		   res->ai_next->ai_next->ai_dst_len, "192.0.2.2", 1);
	ck_assert_str_eq(res->ai_next->ai_next->ai_dst_canonname,
			 "host.example");
	rdma_freeaddrinfo(res);

	/* RAI_FAMILY keeps only the family asked for... */
	tmpl.ai_flags = RAI_FAMILY;
	tmpl.ai_family = AF_INET6;
	res = cma_ai_convert(ai, &tmpl);
	ck_assert_int_eq(count_entries(res), 1);
	ck_assert_int_eq(res->ai_family, AF_INET6);
	rdma_freeaddrinfo(res);

	/* ...and an empty result is ENOENT. */
	ai[2].ai_next = NULL;
	errno = 0;
	ck_assert_ptr_null(cma_ai_convert(&ai[2], &tmpl));
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

/* A list with every kind of allocation; valgrind/ASan check the free. */
static struct rdma_addrinfo *full_list(void)
{
	struct sockaddr_in6 dst = make_in6("2001:db8::7", 7);
	uint8_t route[16] = {1, 2, 3}, connect[4] = {9, 8, 7, 6};
	struct rdma_addrinfo hints, *res;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_dst_addr = (struct sockaddr *)&dst;
	hints.ai_dst_len = sizeof(dst);
	hints.ai_route = route;
	hints.ai_route_len = sizeof(route);
	hints.ai_connect = connect;
	hints.ai_connect_len = sizeof(connect);
	/* The wildcard of each family, each with the hints' extras. */
	ck_assert_int_eq(rdma_getaddrinfo(NULL, "7471", &hints, &res), 0);
	return res;
}

START_TEST(test_free_multi_entry)
{
	struct rdma_addrinfo *res, *named, *ai;

	res = full_list();
	for (ai = res; ai; ai = ai->ai_next) {
		ck_assert_ptr_nonnull(ai->ai_src_addr);
		ck_assert_ptr_nonnull(ai->ai_dst_addr);
		ck_assert_ptr_nonnull(ai->ai_route);
		ck_assert_ptr_nonnull(ai->ai_connect);
	}
	/* Chain a named lookup on, for canonical names in the list too. */
	ck_assert_int_eq(lookup("localhost", "1", 0, &named), 0);
	for (ai = res; ai->ai_next; ai = ai->ai_next)
		;
	ai->ai_next = named;
	ck_assert_int_ge(count_entries(res), 2);
	rdma_freeaddrinfo(res);
	rdma_freeaddrinfo(NULL);
}
END_TEST

static void assert_same_entry(const struct rdma_addrinfo *a,
			      const struct rdma_addrinfo *b)
{
	ck_assert_ptr_ne(a, b);
	ck_assert_int_eq(a->ai_flags, b->ai_flags);
	ck_assert_int_eq(a->ai_family, b->ai_family);
	ck_assert_int_eq(a->ai_qp_type, b->ai_qp_type);
	ck_assert_int_eq(a->ai_port_space, b->ai_port_space);
	ck_assert_uint_eq(a->ai_src_len, b->ai_src_len);
	ck_assert_uint_eq(a->ai_dst_len, b->ai_dst_len);
	ck_assert_uint_eq(a->ai_route_len, b->ai_route_len);
	ck_assert_uint_eq(a->ai_connect_len, b->ai_connect_len);
	if (a->ai_src_addr) {
		ck_assert_ptr_ne(a->ai_src_addr, b->ai_src_addr);
		ck_assert_int_eq(
			memcmp(a->ai_src_addr, b->ai_src_addr, a->ai_src_len),
			0);
	}
	if (a->ai_dst_addr) {
		ck_assert_ptr_ne(a->ai_dst_addr, b->ai_dst_addr);
		ck_assert_int_eq(
			memcmp(a->ai_dst_addr, b->ai_dst_addr, a->ai_dst_len),
			0);
	}
	if (a->ai_route) {
		ck_assert_ptr_ne(a->ai_route, b->ai_route);
		ck_assert_int_eq(
			memcmp(a->ai_route, b->ai_route, a->ai_route_len), 0);
	}
	if (a->ai_connect) {
		ck_assert_ptr_ne(a->ai_connect, b->ai_connect);
		ck_assert_int_eq(
			memcmp(a->ai_connect, b->ai_connect, a->ai_connect_len),
			0);
	}
	if (a->ai_dst_canonname) {
		ck_assert_ptr_ne(a->ai_dst_canonname, b->ai_dst_canonname);
		ck_assert_str_eq(a->ai_dst_canonname, b->ai_dst_canonname);
	} else {
		ck_assert_ptr_null(b->ai_dst_canonname);
	}
}

static void assert_same_list(const struct rdma_addrinfo *a,
			     const struct rdma_addrinfo *b)
{
	ck_assert_int_eq(count_entries(a), count_entries(b));
	for (; a; a = a->ai_next, b = b->ai_next)
		assert_same_entry(a, b);
}

START_TEST(test_dup_list)
{
	struct rdma_addrinfo *res, *copy;

	res = full_list();
	copy = cma_ai_dup_list(res);
	ck_assert_ptr_nonnull(copy);
	assert_same_list(res, copy);
	rdma_freeaddrinfo(res);
	rdma_freeaddrinfo(copy);
	ck_assert_ptr_null(cma_ai_dup_list(NULL));
}
END_TEST

/* RAI_DNS names the default resolver: the same answer as without it. */
START_TEST(test_rai_dns_is_the_default)
{
	struct rdma_addrinfo hints, *res = NULL;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_DNS | RAI_NUMERICHOST;
	ck_assert_int_eq(rdma_getaddrinfo("192.0.2.9", "7", &hints, &res), 0);
	assert_in4(res->ai_dst_addr, res->ai_dst_len, "192.0.2.9", 7);
	ck_assert_int_eq(res->ai_flags & RAI_DNS, RAI_DNS);
	rdma_freeaddrinfo(res);
}
END_TEST

/* --- rdma_create_ep argument checks (refused before any kernel call) --- */

START_TEST(test_create_ep_bad_args)
{
	struct sockaddr_in addr = make_in4("192.0.2.1", 1);
	struct rdma_cm_id *id = (void *)&id; /* a sentinel */
	struct rdma_addrinfo res;

	memset(&res, 0, sizeof(res));
	res.ai_dst_addr = (struct sockaddr *)&addr;
	res.ai_dst_len = sizeof(addr);

	errno = 0;
	ck_assert_int_eq(rdma_create_ep(NULL, &res, NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(rdma_create_ep(&id, NULL, NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);

	/* Passive needs a source, active a destination. */
	res.ai_flags = RAI_PASSIVE;
	errno = 0;
	ck_assert_int_eq(rdma_create_ep(&id, &res, NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	res.ai_flags = 0;
	res.ai_src_addr = res.ai_dst_addr;
	res.ai_dst_addr = NULL;
	errno = 0;
	ck_assert_int_eq(rdma_create_ep(&id, &res, NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_eq(id, (void *)&id);

	rdma_destroy_ep(NULL); /* must not crash */
}
END_TEST

Suite *addrinfo_suite(void)
{
	Suite *s = suite_create("addrinfo");
	TCase *tc;

	tc = tcase_create("getaddrinfo");
	tcase_add_test(tc, test_numeric_ipv4_active);
	tcase_add_test(tc, test_numeric_ipv6_active);
	tcase_add_test(tc, test_numeric_passive);
	tcase_add_test(tc, test_service_only_active);
	tcase_add_test(tc, test_service_only_passive);
	tcase_add_test(tc, test_rai_family);
	tcase_add_test(tc, test_family_mismatch);
	tcase_add_test(tc, test_source_family_pairs);
	tcase_add_test(tc, test_named_host);
	tcase_add_test(tc, test_type_defaults);
	tcase_add_test(tc, test_bad_port_space);
	tcase_add_test(tc, test_hint_source_copied);
	tcase_add_test(tc, test_hint_destination_copied_passive);
	tcase_add_test(tc, test_hint_length_defaulted);
	tcase_add_test(tc, test_hints_only_ip);
	tcase_add_test(tc, test_hints_only_af_ib);
	tcase_add_test(tc, test_bad_input);
	tcase_add_test(tc, test_af_ib_hint_falls_back);
	tcase_add_test(tc, test_rai_dns_is_the_default);
	suite_add_tcase(s, tc);

	tc = tcase_create("helpers");
	tcase_add_test(tc, test_gai_errno);
	tcase_add_test(tc, test_from_addrinfo);
	tcase_add_test(tc, test_convert_filters);
	tcase_add_test(tc, test_free_multi_entry);
	tcase_add_test(tc, test_dup_list);
	suite_add_tcase(s, tc);

	tc = tcase_create("endpoint");
	tcase_add_test(tc, test_create_ep_bad_args);
	suite_add_tcase(s, tc);
	return s;
}
