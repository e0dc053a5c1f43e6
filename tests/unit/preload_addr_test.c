// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * librspreload's address and socket kinds (src/preload/addr.c, compiled
 * in): which addresses are loopback, wildcard or other, and which sockets
 * are UDP.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "preload/preload.h"
#include "unit.h"

static enum rsp_addr_kind v4(const char *a)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};

	ck_assert_int_eq(inet_pton(AF_INET, a, &sin.sin_addr), 1);
	return rsp_addr_kind((struct sockaddr *)&sin, sizeof(sin));
}

static enum rsp_addr_kind v6(const char *a)
{
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6};

	ck_assert_int_eq(inet_pton(AF_INET6, a, &sin6.sin6_addr), 1);
	return rsp_addr_kind((struct sockaddr *)&sin6, sizeof(sin6));
}

START_TEST(addresses_are_classified)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct sockaddr un = {.sa_family = AF_UNIX};

	ck_assert_int_eq(v4("0.0.0.0"), RSP_ADDR_ANY);
	ck_assert_int_eq(v4("127.0.0.1"), RSP_ADDR_LOOPBACK);
	ck_assert_int_eq(v4("127.255.3.4"), RSP_ADDR_LOOPBACK);
	ck_assert_int_eq(v4("192.0.2.1"), RSP_ADDR_OTHER);
	ck_assert_int_eq(v4("128.0.0.1"), RSP_ADDR_OTHER);
	ck_assert_int_eq(v6("::"), RSP_ADDR_ANY);
	ck_assert_int_eq(v6("::1"), RSP_ADDR_LOOPBACK);
	ck_assert_int_eq(v6("::ffff:127.0.0.1"), RSP_ADDR_LOOPBACK);
	ck_assert_int_eq(v6("::ffff:0.0.0.0"), RSP_ADDR_ANY);
	ck_assert_int_eq(v6("::ffff:192.0.2.1"), RSP_ADDR_OTHER);
	ck_assert_int_eq(v6("fe80::1"), RSP_ADDR_OTHER);
	ck_assert_int_eq(v6("2001:db8::1"), RSP_ADDR_OTHER);
	/* too short, not IP, absent */
	ck_assert_int_eq(rsp_addr_kind((struct sockaddr *)&sin, 4),
			 RSP_ADDR_BAD);
	ck_assert_int_eq(rsp_addr_kind(&un, sizeof(un)), RSP_ADDR_BAD);
	ck_assert_int_eq(rsp_addr_kind(NULL, 16), RSP_ADDR_BAD);
}
END_TEST

START_TEST(udp_sockets_are_recognised)
{
	ck_assert(rsp_is_udp(AF_INET, SOCK_DGRAM, 0));
	ck_assert(rsp_is_udp(AF_INET6, SOCK_DGRAM, IPPROTO_UDP));
	ck_assert(rsp_is_udp(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			     0));
	ck_assert(!rsp_is_udp(AF_INET, SOCK_STREAM, 0));
	ck_assert(!rsp_is_udp(AF_INET, SOCK_DGRAM, IPPROTO_ICMP));
	ck_assert(!rsp_is_udp(AF_UNIX, SOCK_DGRAM, 0));
	ck_assert(!rsp_is_udp(AF_INET, SOCK_RAW, IPPROTO_UDP));
}
END_TEST

Suite *preload_addr_suite(void)
{
	Suite *s = suite_create("preload_addr");
	TCase *tc = tcase_create("addr");

	tcase_add_test(tc, addresses_are_classified);
	tcase_add_test(tc, udp_sockets_are_recognised);
	suite_add_tcase(s, tc);
	return s;
}
