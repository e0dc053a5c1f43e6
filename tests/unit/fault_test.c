// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The fault injection of src/cm/fault.c: RDMA_CM_FAULT_DELAY_MS=N makes
 * each cma_fault_delay() wait a random 0..N ms (rdma_cm(7)), unset or
 * invalid it waits nothing.  The setting is read once per process, so
 * each case runs in a process of its own: the test's (Check's fork mode)
 * or a child it forks.
 */
#include <config.h>

#include <check.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "cm/cma.h"
#include "unit.h"

/* Milliseconds @n calls of cma_fault_delay() took; the longest in *max. */
static long delay_calls(int n, long *max)
{
	struct timespec t0, t1;
	long one, all = 0;
	int i;

	*max = 0;
	for (i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		cma_fault_delay();
		clock_gettime(CLOCK_MONOTONIC, &t1);
		one = (t1.tv_sec - t0.tv_sec) * 1000 +
		      (t1.tv_nsec - t0.tv_nsec) / 1000000;
		all += one;
		if (one > *max)
			*max = one;
	}
	return all;
}

START_TEST(unset_waits_nothing)
{
	long max;

	unsetenv("RDMA_CM_FAULT_DELAY_MS");
	ck_assert_int_lt(delay_calls(1000, &max), 50);
}
END_TEST

/*
 * Each wait is at most the bound (with room for a loaded machine's
 * oversleep), and the waits are drawn, not all zero: 40 draws of 0..10
 * ms sum to about 200 ms, and all of them 0 has odds of 11^-40.
 */
START_TEST(waits_are_random_and_bounded)
{
	long all, max;

	setenv("RDMA_CM_FAULT_DELAY_MS", "10", 1);
	all = delay_calls(40, &max);
	ck_assert_int_ge(all, 10);
	ck_assert_int_le(max, 10 + 250);
}
END_TEST

/*
 * A value that is not a whole number of milliseconds up to 10000 is
 * ignored as a whole: no wait, rather than one the user did not mean.
 * Each value needs a fresh process, as the library reads it once.
 */
START_TEST(a_bad_value_waits_nothing)
{
	static const char *const bad[] = {"abc", "5ms", "5 ", "10001", "-1"};
	unsigned int i;
	int status;
	pid_t pid;
	long max;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (!pid) {
			setenv("RDMA_CM_FAULT_DELAY_MS", bad[i], 1);
			/* 200 waits of up to 5 ms would be half a second */
			_exit(delay_calls(200, &max) < 50 ? 0 : 1);
		}
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
			      "RDMA_CM_FAULT_DELAY_MS='%s' made waits", bad[i]);
	}
}
END_TEST

Suite *fault_suite(void)
{
	Suite *s = suite_create("fault");
	TCase *tc = tcase_create("delay");

	tcase_add_test(tc, unset_waits_nothing);
	tcase_add_test(tc, waits_are_random_and_bounded);
	tcase_add_test(tc, a_bad_value_waits_nothing);
	suite_add_tcase(s, tc);
	return s;
}
