// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests of the ACM answer cache (src/acm/acm_cache.c): hits, misses
 * remembered as misses, expiry, what goes when the cap is reached, and
 * a child forked while another thread uses the cache.
 */
#include <config.h>

#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "acm/acm.h"
#include "acm_ep.h"
#include "cm/test_hooks.h"
#include "unit.h"

static struct cma_acm_query make_query(const char *dst)
{
	struct cma_acm_query q;

	memset(&q, 0, sizeof(q));
	q.dst = ep_name(dst);
	return q;
}

static void cache_setup(void)
{
	cma_acm_cache_flush();
	cma_acm_cache_set_limit(65536);
}

START_TEST(cache_hit_miss_negative)
{
	struct cma_acm_query a = make_query("a"), b = make_query("b");
	struct cma_acm_answer ans, got;

	memset(&ans, 0, sizeof(ans));
	ans.num_paths = 1;
	ans.source = CMA_ACM_SRC_TABLE;
	ans.dgid.raw[15] = 7;
	ck_assert_int_eq(cma_acm_cache_get(&a, &got), 0);
	cma_acm_cache_put(&a, &ans, 60000);
	cma_acm_cache_put(&b, NULL, 60000);
	ck_assert_int_eq(cma_acm_cache_get(&a, &got), 1);
	ck_assert_mem_eq(&got, &ans, sizeof(ans));
	ck_assert_int_eq(cma_acm_cache_get(&b, &got), -1);
	ck_assert_uint_eq(cma_acm_cache_count(), 2);
	/* A put for a known key replaces it. */
	cma_acm_cache_put(&b, &ans, 60000);
	ck_assert_int_eq(cma_acm_cache_get(&b, &got), 1);
	ck_assert_uint_eq(cma_acm_cache_count(), 2);
	cma_acm_cache_flush();
	ck_assert_uint_eq(cma_acm_cache_count(), 0);
}
END_TEST

START_TEST(cache_entries_expire)
{
	struct cma_acm_query a = make_query("a");
	struct cma_acm_answer ans, got;

	memset(&ans, 0, sizeof(ans));
	cma_acm_cache_put(&a, &ans, 20);
	ck_assert_int_eq(cma_acm_cache_get(&a, &got), 1);
	usleep(60000);
	ck_assert_int_eq(cma_acm_cache_get(&a, &got), 0);
	ck_assert_uint_eq(cma_acm_cache_count(), 0);
	cma_acm_cache_put(&a, &ans, 0); /* a TTL of 0 caches nothing */
	ck_assert_uint_eq(cma_acm_cache_count(), 0);
}
END_TEST

START_TEST(cache_limit_drops_oldest)
{
	struct cma_acm_answer ans, got;
	struct cma_acm_query q;
	char name[16];
	int i;

	memset(&ans, 0, sizeof(ans));
	cma_acm_cache_set_limit(8);
	for (i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "h%d", i);
		q = make_query(name);
		cma_acm_cache_put(&q, &ans, 60000);
		usleep(1000); /* distinct insertion times */
	}
	ck_assert_uint_le(cma_acm_cache_count(), 8);
	q = make_query("h19");
	ck_assert_int_eq(cma_acm_cache_get(&q, &got), 1);
	q = make_query("h0");
	ck_assert_int_eq(cma_acm_cache_get(&q, &got), 0);
}
END_TEST

/*
 * At the cap, expired entries go before any live one: the one that has
 * expired goes even though it is the newest, and the oldest live stays.
 */
START_TEST(cache_limit_drops_expired_first)
{
	struct cma_acm_query old = make_query("old"),
			     brief = make_query("brief"),
			     next = make_query("next");
	struct cma_acm_answer ans, got;

	memset(&ans, 0, sizeof(ans));
	cma_acm_cache_set_limit(2);
	cma_acm_cache_put(&old, &ans, 60000);
	usleep(1000);
	cma_acm_cache_put(&brief, &ans, 20);
	usleep(60000);
	cma_acm_cache_put(&next, &ans, 60000);
	ck_assert_uint_eq(cma_acm_cache_count(), 2);
	ck_assert_int_eq(cma_acm_cache_get(&old, &got), 1);
	ck_assert_int_eq(cma_acm_cache_get(&next, &got), 1);
	ck_assert_int_eq(cma_acm_cache_get(&brief, &got), 0);
}
END_TEST

/* A lower cap drops entries down to it at once; a cap of 0 caches nothing. */
START_TEST(cache_lower_limit_shrinks)
{
	struct cma_acm_answer ans;
	struct cma_acm_query q;
	char name[16];
	int i;

	memset(&ans, 0, sizeof(ans));
	for (i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "h%d", i);
		q = make_query(name);
		cma_acm_cache_put(&q, &ans, 60000);
	}
	ck_assert_uint_eq(cma_acm_cache_count(), 10);
	cma_acm_cache_set_limit(3);
	ck_assert_uint_eq(cma_acm_cache_count(), 3);
	cma_acm_cache_set_limit(0);
	ck_assert_uint_eq(cma_acm_cache_count(), 0);
	cma_acm_cache_put(&q, &ans, 60000);
	ck_assert_uint_eq(cma_acm_cache_count(), 0);
}
END_TEST

static void put_and_get(void)
{
	struct cma_acm_query q = make_query("a");
	struct cma_acm_answer ans = {.num_paths = 1};

	cma_acm_cache_put(&q, &ans, 60000);
	cma_acm_cache_get(&q, &ans);
}

/* A child forked while another thread uses the cache uses it too. */
START_TEST(a_child_forked_beside_a_lookup_looks_up)
{
	unit_forks_beside_calls(put_and_get);
}
END_TEST

Suite *acm_cache_suite(void)
{
	Suite *s = suite_create("acm_cache");
	TCase *tc;

	tc = tcase_create("cache");
	tcase_add_checked_fixture(tc, cache_setup, NULL);
	tcase_add_test(tc, cache_hit_miss_negative);
	tcase_add_test(tc, cache_entries_expire);
	tcase_add_test(tc, cache_limit_drops_oldest);
	tcase_add_test(tc, cache_limit_drops_expired_first);
	tcase_add_test(tc, cache_lower_limit_shrinks);
	tcase_add_test(tc, a_child_forked_beside_a_lookup_looks_up);
	suite_add_tcase(s, tc);
	return s;
}
