// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The keepalive rule of stream rsockets (src/rsocket/keepalive.c), tested
 * as the pure function it is: when to probe a silent peer, when it is
 * dead (idle + interval x count after it was last heard), and an answered
 * probe starting the idle time again.  No device.
 */
#include <config.h>

#include <check.h>

#include "rsocket/rs.h"
#include "unit.h"

static const struct rs_ka_params ka_p = {.idle = 10, .intvl = 2, .cnt = 3};

START_TEST(ka_waits_while_heard)
{
	struct rs_ka ka = {.heard_ms = 1000};

	ck_assert_int_eq(rs_ka_decide(&ka_p, &ka, 5000), RS_KA_WAIT);
	ck_assert_uint_eq(ka.due_ms, 11000);
	ck_assert_uint_eq(ka.probes, 0);
}
END_TEST

/* Silent peer: probes at idle, idle+intvl, ..., dead at idle + intvl x cnt. */
START_TEST(ka_dead_after_cnt_probes)
{
	struct rs_ka ka = {.heard_ms = 1000};
	uint64_t now = 11000;
	unsigned int i;

	for (i = 1; i <= ka_p.cnt; i++) {
		ck_assert_int_eq(rs_ka_decide(&ka_p, &ka, now), RS_KA_PROBE);
		ck_assert_uint_eq(ka.probes, i);
		ck_assert_uint_eq(ka.due_ms, now + 2000);
		now = ka.due_ms;
	}
	ck_assert_uint_eq(now, 1000 + 10000 + 3 * 2000);
	ck_assert_int_eq(rs_ka_decide(&ka_p, &ka, now), RS_KA_DEAD);
}
END_TEST

/* An acknowledged probe restarts the idle time from the acknowledgement. */
START_TEST(ka_answer_resets)
{
	struct rs_ka ka = {.heard_ms = 0};

	ck_assert_int_eq(rs_ka_decide(&ka_p, &ka, 10000), RS_KA_PROBE);
	ck_assert_int_eq(rs_ka_decide(&ka_p, &ka, 12000), RS_KA_PROBE);
	ka.heard_ms = 12001; /* the second probe's ack */
	ck_assert_int_eq(rs_ka_decide(&ka_p, &ka, 14000), RS_KA_WAIT);
	ck_assert_uint_eq(ka.probes, 0);
	ck_assert_uint_eq(ka.due_ms, 22001);
}
END_TEST

/* An interval longer than idle: an answered probe is still an answer. */
START_TEST(ka_long_interval)
{
	const struct rs_ka_params p = {.idle = 1, .intvl = 5, .cnt = 1};
	struct rs_ka ka = {.heard_ms = 0};

	ck_assert_int_eq(rs_ka_decide(&p, &ka, 1000), RS_KA_PROBE);
	ka.heard_ms = 1002;
	ck_assert_int_eq(rs_ka_decide(&p, &ka, 6000), RS_KA_PROBE);
	ck_assert_uint_eq(ka.probes, 1);
	ck_assert_int_eq(rs_ka_decide(&p, &ka, 11000), RS_KA_DEAD);
}
END_TEST

Suite *rsocket_keepalive_suite(void)
{
	Suite *s = suite_create("rsocket_keepalive");
	TCase *tc = tcase_create("keepalive");

	tcase_add_test(tc, ka_waits_while_heard);
	tcase_add_test(tc, ka_dead_after_cnt_probes);
	tcase_add_test(tc, ka_answer_resets);
	tcase_add_test(tc, ka_long_interval);
	suite_add_tcase(s, tc);
	return s;
}
