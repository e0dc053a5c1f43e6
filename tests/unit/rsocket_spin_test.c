// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for src/rsocket/spin.c: the adaptive polling window that
 * decides how long a blocking call spins before it sleeps.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "rsocket/rs.h"
#include "unit.h"

START_TEST(spin_window_adapts)
{
	/* Slept, short: at least doubled, and enough for the wait. */
	ck_assert_uint_eq(rs_spin_adapt(10, 10, 500, 15, true), 22);
	ck_assert_uint_eq(rs_spin_adapt(10, 10, 500, 100, true), 150);
	/* ... never beyond the ceiling. */
	ck_assert_uint_eq(rs_spin_adapt(400, 10, 500, 300, true), 500);
	/* Slept, longer than the ceiling: halved, not below the floor. */
	ck_assert_uint_eq(rs_spin_adapt(400, 10, 500, 501, true), 200);
	ck_assert_uint_eq(rs_spin_adapt(15, 10, 500, 100000, true), 10);
	/* Caught spinning: unchanged (but clamped). */
	ck_assert_uint_eq(rs_spin_adapt(120, 10, 500, 80, false), 120);
	ck_assert_uint_eq(rs_spin_adapt(900, 10, 500, 80, false), 500);
	ck_assert_uint_eq(rs_spin_adapt(3, 10, 500, 1, false), 10);
	/* A ceiling at or below the floor: a fixed spin, as rdma-core's. */
	ck_assert_uint_eq(rs_spin_adapt(300, 10, 10, 5, true), 10);
	ck_assert_uint_eq(rs_spin_adapt(300, 10, 0, 5, true), 10);
	/* No overflow with the largest values. */
	ck_assert_uint_eq(
		rs_spin_adapt(UINT32_MAX, 0, UINT32_MAX, UINT64_MAX / 2, true),
		UINT32_MAX / 2);
}
END_TEST

START_TEST(spin_learns_wake_cost)
{
	uint32_t wake = UINT32_MAX; /* unknown */

	wake = rs_spin_wake_estimate(wake, 80);
	ck_assert_uint_eq(wake, 80);
	/* The cheapest sleep wins ... */
	wake = rs_spin_wake_estimate(wake, 40);
	ck_assert_uint_eq(wake, 40);
	/* ... but drifts up slowly when sleeps get dearer. */
	wake = rs_spin_wake_estimate(wake, 1000);
	ck_assert_uint_eq(wake, 46);
	/* Absurd samples are capped. */
	ck_assert_uint_le(rs_spin_wake_estimate(UINT32_MAX, UINT64_MAX), 10000);
	/* The ceiling: polling_max, or twice a dearer wake-up, capped. */
	ck_assert_uint_eq(rs_spin_ceiling(50, UINT32_MAX), 50);
	ck_assert_uint_eq(rs_spin_ceiling(50, 10), 50);
	ck_assert_uint_eq(rs_spin_ceiling(50, 80), 160);
	ck_assert_uint_eq(rs_spin_ceiling(50, 9000), 10000);
}
END_TEST

/* Clock reads take the same share of a spin whatever a read costs. */
START_TEST(clock_reads_are_spaced_by_their_cost)
{
	ck_assert_uint_eq(rs_spin_clock_gap_for(0), 8);
	ck_assert_uint_eq(rs_spin_clock_gap_for(25), 8); /* the vDSO */
	ck_assert_uint_eq(rs_spin_clock_gap_for(199), 8);
	ck_assert_uint_eq(rs_spin_clock_gap_for(250), 16);
	ck_assert_uint_eq(rs_spin_clock_gap_for(2600), 208); /* hpet, TCG */
	ck_assert_uint_eq(rs_spin_clock_gap_for(UINT64_MAX), 256);
}
END_TEST

/*
 * A wait its first gap of polls satisfies reads no clock, whatever the
 * gap; a longer one reads it once to start the window and ends when the
 * window is over; one that sleeps without a read is measured from its
 * sleep.
 */
static void check_spin_with_gap(unsigned int gap)
{
	struct rs_spin spin = {.window_us = 50, .wake_us = UINT32_MAX};
	struct rs_spin_wait w;
	unsigned long polls;
	unsigned int i;

	rs_spin_begin(&spin, &w);
	w.clock_gap = gap;
	for (i = 0; i < gap - 1; i++)
		ck_assert(rs_spin_more(&w));
	ck_assert_uint_eq(w.clock_reads, 0);
	ck_assert(rs_spin_more(&w));
	ck_assert_uint_eq(w.clock_reads, 1);
	ck_assert_uint_ne(w.start_us, 0);
	for (polls = 0; rs_spin_more(&w); polls++)
		ck_assert_uint_lt(polls, 1ul << 32);
	ck_assert_uint_ge(rs_now_us() - w.start_us, 50);
	/* Reads at most one per gap. */
	ck_assert_uint_le(w.clock_reads, 1 + (polls + 1) / gap + 1);
	ck_assert(!rs_spin_more(&w)); /* expired stays expired */

	rs_spin_begin(&spin, &w);
	ck_assert(rs_spin_more(&w));
	rs_spin_sleeping(&w);
	ck_assert_uint_eq(w.start_us, w.sleep_us);
	ck_assert(!rs_spin_more(&w));
}

START_TEST(a_short_spin_reads_no_clock)
{
	check_spin_with_gap(rs_spin_clock_gap_for(25));
	check_spin_with_gap(rs_spin_clock_gap_for(2600));
}
END_TEST

/*
 * A stream rsocket with @len bytes queued as one received message and no
 * QP: the peer has gone (DISCONNECTED), so a read that wants more than is
 * queued returns instead of waiting, whatever the bug.
 */
Suite *rsocket_spin_suite(void)
{
	Suite *s = suite_create("rsocket_spin");
	TCase *tc = tcase_create("spin");

	tcase_add_test(tc, spin_window_adapts);
	tcase_add_test(tc, spin_learns_wake_cost);
	tcase_add_test(tc, clock_reads_are_spaced_by_their_cost);
	tcase_add_test(tc, a_short_spin_reads_no_clock);
	suite_add_tcase(s, tc);
	return s;
}
