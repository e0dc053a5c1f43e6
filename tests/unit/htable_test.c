// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The growing hash table (src/util/htable.c): nodes are found by hash through
 * growth, removals and shared hashes, and a table that grew keeps chains
 * short.
 */
#include <config.h>

#include <check.h>
#include <stdlib.h>

#include "util/htable.h"
#include "unit.h"

struct item {
	int key;
	struct cma_hnode node;
};

/* Many keys share a hash: the table must tell them apart by walking. */
static uint64_t hash_of(int key)
{
	return (uint64_t)(key / 3) * 0x9e3779b97f4a7c15ull;
}

static struct item *find(const struct cma_htable *t, int key)
{
	struct cma_hnode *n;
	struct item *it;

	cma_htable_for_hash (n, t, hash_of(key)) {
		it = cma_htable_entry(n, struct item, node);
		ck_assert_uint_eq(n->hash, hash_of(key));
		if (it->key == key)
			return it;
	}
	return NULL;
}

START_TEST(empty_table_finds_nothing)
{
	static struct cma_htable t;

	ck_assert_ptr_null(cma_htable_first(&t, 0));
	ck_assert_ptr_null(find(&t, 7));
}
END_TEST

START_TEST(nodes_are_found_through_growth_and_removal)
{
	enum { N = 5000 };
	static struct cma_htable t;
	struct item *items = calloc(N, sizeof(*items));
	int i;

	ck_assert_ptr_nonnull(items);
	for (i = 0; i < N; i++) {
		items[i].key = i;
		cma_htable_add(&t, &items[i].node, hash_of(i));
	}
	ck_assert_uint_eq(t.count, N);
	/* At most two nodes a bucket on average once it grew. */
	ck_assert_uint_ge(t.mask + 1, N / 2);
	ck_assert_ptr_ne(t.buckets, t.first_buckets);
	for (i = 0; i < N; i++)
		ck_assert_ptr_eq(find(&t, i), &items[i]);
	for (i = 0; i < N; i += 2)
		cma_htable_del(&t, &items[i].node);
	ck_assert_uint_eq(t.count, N / 2);
	for (i = 0; i < N; i++)
		ck_assert_ptr_eq(find(&t, i), i % 2 ? &items[i] : NULL);
	/* Removed nodes go back in. */
	for (i = 0; i < N; i += 2)
		cma_htable_add(&t, &items[i].node, hash_of(i));
	for (i = 0; i < N; i++)
		ck_assert_ptr_eq(find(&t, i), &items[i]);
	for (i = 0; i < N; i++)
		cma_htable_del(&t, &items[i].node);
	ck_assert_uint_eq(t.count, 0);
	ck_assert_ptr_null(find(&t, 1));
	free(t.buckets);
	free(items);
}
END_TEST

/* A handful of entries stay in the table's own buckets. */
START_TEST(a_small_table_allocates_nothing)
{
	static struct cma_htable t;
	struct item items[CMA_HTABLE_FIRST_BUCKETS];
	int i;

	for (i = 0; i < CMA_HTABLE_FIRST_BUCKETS; i++) {
		items[i].key = i;
		cma_htable_add(&t, &items[i].node, hash_of(i));
	}
	ck_assert_ptr_eq(t.buckets, t.first_buckets);
	for (i = 0; i < CMA_HTABLE_FIRST_BUCKETS; i++)
		ck_assert_ptr_eq(find(&t, i), &items[i]);
}
END_TEST

Suite *htable_suite(void)
{
	Suite *s = suite_create("htable");
	TCase *tc = tcase_create("table");

	tcase_add_test(tc, empty_table_finds_nothing);
	tcase_add_test(tc, nodes_are_found_through_growth_and_removal);
	tcase_add_test(tc, a_small_table_allocates_nothing);
	suite_add_tcase(s, tc);
	return s;
}
