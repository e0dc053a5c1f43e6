// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests of the ACM address table (src/acm/acm_table.c): the parser
 * of ibacm's address-file format and its hash index, then the process's
 * table read from RDMA_CM_ACM_HOSTS, reloaded when the file changes (a
 * child forked while another thread looks a name up looks one up).
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acm/acm.h"
#include "acm_ep.h"
#include "acm_hosts.h"
#include "unit.h"

/* --- the address-file parser --------------------------------------------- */

START_TEST(table_parses_ibacm_format)
{
	static const char file[] =
		"# ibacm hosts file\n"
		"\n"
		"luna3               fe80::8:f104:39a:169\n"
		"192.168.1.3         fe80::8:f104:39a:169\n"
		"fe80::208:f104:39a:169  fe80::8:f104:39a:169 0x48\n"
		"Node-7.example\t::ffff:192.0.2.2   # trailing comment\r\n"
		"  indented  ::1 72";
	struct cma_acm_table t;
	const struct cma_acm_table_entry *e;
	struct cma_acm_ep ep;

	ck_assert_int_eq(cma_acm_table_parse(file, sizeof(file) - 1, &t), 0);
	ck_assert_uint_eq(t.count, 5);
	ck_assert_uint_eq(t.bad_lines, 0);
	ep = ep_name("luna3");
	e = cma_acm_table_find(&t, &ep);
	ck_assert_ptr_nonnull(e);
	assert_gid(&e->gid, "fe80::8:f104:39a:169");
	ep = ep_ip("192.168.1.3");
	ck_assert_ptr_nonnull(cma_acm_table_find(&t, &ep));
	ep = ep_ip("fe80::208:f104:39a:169");
	e = cma_acm_table_find(&t, &ep);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->qpn, 0x48);
	ep = ep_name("NODE-7.EXAMPLE"); /* names match case-insensitively */
	e = cma_acm_table_find(&t, &ep);
	ck_assert_ptr_nonnull(e);
	assert_gid(&e->gid, "::ffff:192.0.2.2");
	ep = ep_name("indented");
	e = cma_acm_table_find(&t, &ep);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->qpn, 72);
	ep = ep_name("luna4");
	ck_assert_ptr_null(cma_acm_table_find(&t, &ep));
	cma_acm_table_clear(&t);
}
END_TEST

/* Line @i of the large table: its address (kind by i % 4) and GID. */
static void big_line(unsigned int i, char *addr, size_t alen, char *gid,
		     size_t glen)
{
	unsigned int owner = i - i % 4; /* kind 3 repeats kind 0's name */

	switch (i % 4) {
	case 0:
		snprintf(addr, alen, "host%u.example", i);
		break;
	case 1:
		snprintf(addr, alen, "10.%u.%u.%u", i >> 16, (i >> 8) & 255,
			 i & 255);
		break;
	case 2:
		snprintf(addr, alen, "fd00::%x:%x", i >> 16, i & 0xffff);
		break;
	case 3:
		snprintf(addr, alen, "HOST%u.EXAMPLE", owner);
		break;
	}
	snprintf(gid, glen, "fe80::%x:%x", i >> 16, i & 0xffff);
}

/*
 * 100,000 lines, a quarter of them duplicates of an earlier name in
 * other case: every entry is found with its own GID, the duplicates are
 * dropped (the first line wins), and the duplicate check costs a bounded
 * number of comparisons per line.  A linear check made this
 * 5 * 10^9 comparisons (80k lines: 8.6 s).
 */
START_TEST(table_large_file_hashed)
{
	enum { LINES = 100000 };
	size_t cap = (size_t)LINES * 64, len = 0;
	char *buf = malloc(cap), addr[64], gid[64];
	const struct cma_acm_table_entry *e;
	struct cma_acm_table t;
	struct cma_acm_ep ep;
	union ibv_gid want;
	unsigned int i;

	ck_assert_ptr_nonnull(buf);
	for (i = 0; i < LINES; i++) {
		big_line(i, addr, sizeof(addr), gid, sizeof(gid));
		len += (size_t)snprintf(buf + len, cap - len, "%s %s\n", addr,
					gid);
	}
	ck_assert_int_eq(cma_acm_table_parse(buf, len, &t), 0);
	ck_assert_uint_eq(t.count, LINES / 4 * 3);
	ck_assert_uint_eq(t.bad_lines, 0);
	ck_assert_uint_le(t.probes, 4 * (size_t)LINES);
	for (i = 0; i < LINES; i++) {
		unsigned int first = i % 4 == 3 ? i - 3 : i;

		big_line(i, addr, sizeof(addr), gid, sizeof(gid));
		if (i % 4 == 1 || i % 4 == 2)
			ep = ep_ip(addr);
		else
			ep = ep_name(addr);
		e = cma_acm_table_find(&t, &ep);
		ck_assert_ptr_nonnull(e);
		big_line(first, addr, sizeof(addr), gid, sizeof(gid));
		ck_assert_int_eq(inet_pton(AF_INET6, gid, want.raw), 1);
		ck_assert_mem_eq(e->gid.raw, want.raw, 16);
	}
	ep = ep_name("host1.example"); /* line 1 is an IPv4 one */
	ck_assert_ptr_null(cma_acm_table_find(&t, &ep));
	ep = ep_ip("10.255.0.1");
	ck_assert_ptr_null(cma_acm_table_find(&t, &ep));
	cma_acm_table_clear(&t);
	free(buf);
}
END_TEST

START_TEST(table_skips_bad_lines)
{
	static const char file[] =
		"onlyname\n" /* no GID */
		"host1 not-a-gid\n" /* bad GID */
		"host2 ::1 0x1000000\n" /* QPN > 24 bits */
		"host3 ::1 12 extra\n" /* too many fields */
		"bad/name ::1\n" /* bad character */
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaa ::1\n"
		"host4 ::1 -5\n" /* negative QPN */
		"good ::2\n"
		"good ::3\n"; /* a duplicate: the first wins */
	struct cma_acm_table t;
	struct cma_acm_ep ep = ep_name("good");

	ck_assert_int_eq(cma_acm_table_parse(file, sizeof(file) - 1, &t), 0);
	ck_assert_uint_eq(t.count, 1);
	ck_assert_uint_eq(t.bad_lines, 7);
	assert_gid(&cma_acm_table_find(&t, &ep)->gid, "::2");
	cma_acm_table_clear(&t);
}
END_TEST

START_TEST(table_handles_nul_and_empty)
{
	static const char file[] = "host1 ::1\0garbage\nhost2 ::2\n";
	struct cma_acm_table t;
	struct cma_acm_ep ep = ep_name("host2");

	ck_assert_int_eq(cma_acm_table_parse(file, sizeof(file) - 1, &t), 0);
	ck_assert_uint_eq(t.count, 1);
	ck_assert_uint_eq(t.bad_lines, 1);
	ck_assert_ptr_nonnull(cma_acm_table_find(&t, &ep));
	cma_acm_table_clear(&t);
	ck_assert_int_eq(cma_acm_table_parse("", 0, &t), 0);
	ck_assert_uint_eq(t.count, 0);
	cma_acm_table_clear(&t);
}
END_TEST

/* --- the process's table ------------------------------------------------------ */

START_TEST(table_file_lookup_and_reload)
{
	struct cma_acm_ep ep = ep_name("peer"), ep2;
	union ibv_gid gid;

	write_file(table_path, "peer ::ffff:192.0.2.2\n", 0644);
	ck_assert_int_eq(cma_acm_table_lookup(&ep, &gid), 0);
	assert_gid(&gid, "::ffff:192.0.2.2");
	/* The name's RoCE GID makes its IP address known too. */
	ep2 = ep_ip("192.0.2.2");
	ck_assert_int_eq(cma_acm_table_lookup(&ep2, &gid), 0);
	ep2 = ep_ip("192.0.2.3");
	ck_assert_int_eq(cma_acm_table_lookup(&ep2, &gid), -1);
	/* An edited file is seen (its size changes here). */
	write_file(table_path, "peer ::ffff:192.0.2.99\nother ::1\n", 0644);
	ck_assert_int_eq(cma_acm_table_lookup(&ep, &gid), 0);
	assert_gid(&gid, "::ffff:192.0.2.99");
	/* A removed file means no table. */
	unlink(table_path);
	ck_assert_int_eq(cma_acm_table_lookup(&ep, &gid), -1);
	ck_assert_int_eq(errno, ENODATA);
}
END_TEST

START_TEST(table_file_writable_by_anyone_is_ignored)
{
	struct cma_acm_ep ep = ep_name("peer");
	union ibv_gid gid;

	write_file(table_path, "peer ::ffff:192.0.2.2\n", 0666);
	ck_assert_int_eq(cma_acm_table_lookup(&ep, &gid), -1);
}
END_TEST

/*
 * A path that is no regular file (here a directory), or a file over
 * 16 MiB (sparse here, its first line a good one), means no table.
 */
START_TEST(table_file_not_regular_or_too_large_is_ignored)
{
	struct cma_acm_ep ep = ep_name("peer");
	union ibv_gid gid;

	setenv("RDMA_CM_ACM_HOSTS", "/tmp", 1);
	errno = 0;
	ck_assert_int_eq(cma_acm_table_lookup(&ep, &gid), -1);
	ck_assert_int_eq(errno, ENODATA);
	setenv("RDMA_CM_ACM_HOSTS", table_path, 1);
	write_file(table_path, "peer ::ffff:192.0.2.2\n", 0644);
	ck_assert_int_eq(truncate(table_path, (16 << 20) + 1), 0);
	ck_assert_int_eq(cma_acm_table_lookup(&ep, &gid), -1);
	/* Back under the limit: its table is read. */
	ck_assert_int_eq(truncate(table_path, 16 << 20), 0);
	ck_assert_int_eq(cma_acm_table_lookup(&ep, &gid), 0);
	assert_gid(&gid, "::ffff:192.0.2.2");
}
END_TEST

static void look_up_peer(void)
{
	struct cma_acm_ep ep = ep_name("peer");
	union ibv_gid gid;

	cma_acm_table_lookup(&ep, &gid);
}

/* A child forked while another thread looks a name up looks one up. */
START_TEST(a_child_forked_beside_a_lookup_looks_up)
{
	write_file(table_path, "peer ::ffff:192.0.2.2\n", 0644);
	unit_forks_beside_calls(look_up_peer);
}
END_TEST

Suite *acm_table_suite(void)
{
	Suite *s = suite_create("acm_table");
	TCase *tc;

	tc = tcase_create("table_parser");
	tcase_add_test(tc, table_parses_ibacm_format);
	tcase_add_test(tc, table_skips_bad_lines);
	tcase_add_test(tc, table_large_file_hashed);
	/* A hang guard for slow sanitizer builds, not a time limit. */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, table_handles_nul_and_empty);
	suite_add_tcase(s, tc);

	tc = tcase_create("table_file");
	tcase_add_checked_fixture(tc, table_setup, table_teardown);
	tcase_add_test(tc, table_file_lookup_and_reload);
	tcase_add_test(tc, table_file_writable_by_anyone_is_ignored);
	tcase_add_test(tc, table_file_not_regular_or_too_large_is_ignored);
	tcase_add_test(tc, a_child_forked_beside_a_lookup_looks_up);
	suite_add_tcase(s, tc);
	return s;
}
