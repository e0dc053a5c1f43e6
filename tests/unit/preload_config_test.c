// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * librspreload's /etc/rdma/rsocket/preload_config rules (src/preload/
 * config.c, compiled in): rdma-core's line format, its prefixes and
 * wildcards, and which sockets a set of rules lets the preload carry.
 */
#define _GNU_SOURCE
#include <config.h>

#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload/preload.h"
#include "unit.h"

/*
 * The preload's log for the runner's preload tests (config.c logs what it
 * skips): the last line is kept, for the tests that check what is said.
 * Relay threads log too, meanwhile: one line at a time.
 */
char unit_rsp_log_last[256];
static pthread_mutex_t unit_rsp_log_lock = PTHREAD_MUTEX_INITIALIZER;

void rsp_log(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&unit_rsp_log_lock);
	va_start(ap, fmt);
	vsnprintf(unit_rsp_log_last, sizeof(unit_rsp_log_last), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&unit_rsp_log_lock);
}

START_TEST(lines_parse_as_rdma_core_writes_them)
{
	struct rsp_rule r;

	ck_assert_int_eq(rsp_parse_rule("redis-server INET STREAM TCP\n", &r),
			 0);
	ck_assert_str_eq(r.prog, "redis-server");
	ck_assert_int_eq(r.domain, AF_INET);
	ck_assert_int_eq(r.type, SOCK_STREAM);
	ck_assert_int_eq(r.protocol, IPPROTO_TCP);
	ck_assert_int_eq(
		rsp_parse_rule("* af_inet6 sock_dgram ipproto_udp", &r), 0);
	ck_assert_str_eq(r.prog, "");
	ck_assert_int_eq(r.domain, AF_INET6);
	ck_assert_int_eq(r.type, SOCK_DGRAM);
	ck_assert_int_eq(r.protocol, IPPROTO_UDP);
	ck_assert_int_eq(rsp_parse_rule("\tiperf3 PF_IB * *", &r), 0);
	ck_assert_int_eq(r.domain, AF_IB);
	ck_assert_int_eq(r.type, 0);
	ck_assert_int_eq(r.protocol, 0);
	ck_assert_int_eq(rsp_parse_rule("# a comment", &r), 1);
	ck_assert_int_eq(rsp_parse_rule("\n", &r), 1);
	ck_assert_int_eq(rsp_parse_rule("", &r), 1);
	ck_assert_int_eq(rsp_parse_rule("prog INET STREAM", &r), -1);
	ck_assert_int_eq(rsp_parse_rule("prog UNIX STREAM TCP", &r), -1);
	ck_assert_int_eq(rsp_parse_rule("prog INET RAW TCP", &r), -1);
	ck_assert_int_eq(rsp_parse_rule("prog INET STREAM SCTP", &r), -1);
}
END_TEST

START_TEST(rules_choose_sockets)
{
	struct rsp_rule r[2];

	/* no rules: everything */
	ck_assert(rsp_rules_match(NULL, 0, "x", AF_INET, SOCK_STREAM, 0));
	ck_assert_int_eq(rsp_parse_rule("redis INET STREAM TCP", &r[0]), 0);
	ck_assert_int_eq(rsp_parse_rule("* INET6 * UDP", &r[1]), 0);
	/* a prefix of the program's name, case blind */
	ck_assert(
		rsp_rules_match(r, 2, "redis-server", AF_INET, SOCK_STREAM, 0));
	ck_assert(rsp_rules_match(r, 2, "Redis-benchmark", AF_INET,
				  SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP));
	ck_assert(!rsp_rules_match(r, 2, "memcached", AF_INET, SOCK_STREAM, 0));
	ck_assert(!rsp_rules_match(r, 2, "redis", AF_INET6, SOCK_STREAM, 0));
	/* protocol 0 is the type's default */
	ck_assert(rsp_rules_match(r, 2, "any", AF_INET6, SOCK_DGRAM, 0));
	ck_assert(!rsp_rules_match(r, 2, "any", AF_INET6, SOCK_STREAM, 0));
}
END_TEST

START_TEST(files_load_skipping_bad_lines)
{
	char path[] = "/tmp/preload_config.XXXXXX";
	struct rsp_rule *r;
	int fd = mkstemp(path);
	FILE *f;

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputs("# programs over RDMA\n"
	      "iperf3 INET STREAM TCP\n"
	      "broken line\n"
	      "\n"
	      "sockperf * * *\n",
	      f);
	fclose(f);
	ck_assert_int_eq(rsp_load_rules(path, &r), 2);
	ck_assert_str_eq(r[0].prog, "iperf3");
	ck_assert_str_eq(r[1].prog, "sockperf");
	ck_assert(rsp_rules_match(r, 2, "sockperf", AF_INET6, SOCK_DGRAM, 0));
	ck_assert(!rsp_rules_match(r, 2, "curl", AF_INET, SOCK_STREAM, 0));
	free(r);
	unlink(path);
	ck_assert_int_eq(rsp_load_rules("/nonexistent/preload_config", &r), 0);
	ck_assert_ptr_null(r);
}
END_TEST

Suite *preload_config_suite(void)
{
	Suite *s = suite_create("preload_config");
	TCase *tc = tcase_create("rules");

	tcase_add_test(tc, lines_parse_as_rdma_core_writes_them);
	tcase_add_test(tc, rules_choose_sockets);
	tcase_add_test(tc, files_load_skipping_bad_lines);
	suite_add_tcase(s, tc);
	return s;
}
