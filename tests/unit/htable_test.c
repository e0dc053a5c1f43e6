// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The growing hash table (src/util/htable.c): nodes are found by hash through
 * growth, removals and shared hashes, and a table that grew keeps chains
 * short.
 */
#include <config.h>

#include <check.h>
#include <stdbool.h>
#include <stdlib.h>

#include "cm/test_hooks.h"
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

/*
 * Forgotten (a forked child's table of its parent's nodes): empty, its
 * memory freed (LeakSanitizer would see it otherwise), usable again.
 */
START_TEST(a_forgotten_table_is_empty_and_usable)
{
	static struct cma_htable t;
	struct item items[100];
	int i;

	for (i = 0; i < 100; i++) {
		items[i].key = i;
		cma_htable_add(&t, &items[i].node, hash_of(i));
	}
	ck_assert_ptr_ne(t.buckets, t.first_buckets);
	cma_htable_forget(&t);
	ck_assert_uint_eq(t.count, 0);
	for (i = 0; i < 100; i++)
		ck_assert_ptr_null(find(&t, i));
	cma_htable_add(&t, &items[7].node, hash_of(7));
	ck_assert_ptr_eq(find(&t, 7), &items[7]);
	ck_assert_ptr_null(find(&t, 8));
}
END_TEST

/* --- a child forked at any store of a change -------------------------------- */

/*
 * Enough adds for two growths (from the table's own buckets, then from
 * allocated ones), then removals.  item[i] is in the table once add
 * number i is over and until its removal begins.
 */
enum { FORK_ADDS = 140, FORK_DELS = 40 };

static struct {
	struct cma_htable t;
	struct item items[FORK_ADDS];
	int adding, removing; /* the change under way, -1: none */
	int step, fork_at; /* the hook's count, and where it forks */
	int forked, failed;
} fk;
static struct item extra;

/* find() without Check's asserts: for a forked child. */
static struct item *find_quietly(const struct cma_htable *t, int key)
{
	struct cma_hnode *n;
	struct item *it;

	cma_htable_for_hash (n, t, hash_of(key)) {
		it = cma_htable_entry(n, struct item, node);
		if (it->key == key)
			return it;
	}
	return NULL;
}

/* What the forked child checks: every chain whole, every node it must. */
static bool fork_copy_is_whole(void)
{
	struct cma_htable *t = &fk.t;
	bool seen[FORK_ADDS] = {false};
	struct cma_hnode *n, **pprev;
	size_t i, count = 0;
	int k;

	cma_htable_set_step_hook(NULL); /* this copy forks no more */
	cma_htable_repair(t);
	if (t->grow_to || t->moving || (t->buckets && !t->mask))
		return false;
	for (i = 0; t->buckets && i <= t->mask; i++) {
		pprev = &t->buckets[i];
		for (n = t->buckets[i]; n; pprev = &n->next, n = n->next) {
			struct item *it =
				cma_htable_entry(n, struct item, node);

			k = (int)(it - fk.items);
			if (k < 0 || k >= FORK_ADDS || seen[k] ||
			    n->pprev != pprev || (n->hash & t->mask) != i)
				return false;
			seen[k] = true;
			count++;
		}
	}
	if (count != t->count)
		return false;
	for (k = 0; k < FORK_ADDS; k++) {
		if (k == fk.adding || k == fk.removing)
			continue; /* in or out: the change was cut short */
		if (seen[k] !=
		    (fk.adding >= 0 ? k < fk.adding : k > fk.removing))
			return false;
	}
	/* And it keeps working: a node goes in and out again. */
	extra.key = FORK_ADDS;
	cma_htable_add(t, &extra.node, hash_of(FORK_ADDS));
	if (find_quietly(t, FORK_ADDS) != &extra)
		return false;
	cma_htable_del(t, &extra.node);
	return !find_quietly(t, FORK_ADDS) && t->count == count;
}

/*
 * What a child that forgets its copy checks (cma_htable_forget): the
 * table empty.  An array freed twice, or the table's own buckets freed,
 * aborts it.
 */
static bool fork_copy_is_forgotten(void)
{
	cma_htable_set_step_hook(NULL);
	cma_htable_forget(&fk.t);
	return !fk.t.count && !fk.t.buckets && !find_quietly(&fk.t, 1);
}

static void fork_at_step(void)
{
	if (++fk.step != fk.fork_at)
		return;
	fk.forked++;
	if (!unit_child_passes(fork_copy_is_whole))
		fk.failed++;
	/* During a growth, two bucket arrays: another child forgets. */
	if (fk.t.grow_to && !unit_child_passes(fork_copy_is_forgotten))
		fk.failed++;
}

/* The adds and removals with a fork after store number @at (0: none). */
static int run_changes_forking_at(int at)
{
	int i;

	memset(&fk.t, 0, sizeof(fk.t));
	memset(fk.items, 0, sizeof(fk.items));
	fk.step = 0;
	fk.fork_at = at;
	fk.adding = fk.removing = -1;
	for (i = 0; i < FORK_ADDS; i++) {
		fk.items[i].key = i;
		fk.adding = i;
		cma_htable_add(&fk.t, &fk.items[i].node, hash_of(i));
	}
	fk.adding = -1;
	for (i = 0; i < FORK_DELS; i++) {
		fk.removing = i;
		cma_htable_del(&fk.t, &fk.items[i].node);
	}
	if (fk.t.buckets != fk.t.first_buckets)
		free(fk.t.buckets);
	return fk.step;
}

/*
 * A fork copies a table as another thread of the parent left it: after
 * any store of an add, a growth or a removal.  Each such instant, in
 * turn, is where a child is forked; each child repairs its copy and
 * finds it whole (and during a growth another forgets its copy).
 */
START_TEST(a_child_forked_at_any_store_of_a_change_repairs_the_table)
{
	int steps, at;

	cma_htable_set_step_hook(fork_at_step);
	steps = run_changes_forking_at(0);
	ck_assert_int_gt(steps, 2 * FORK_ADDS);
	fk.forked = fk.failed = 0;
	for (at = 1; at <= steps; at++)
		run_changes_forking_at(at);
	cma_htable_set_step_hook(NULL);
	ck_assert_int_eq(fk.forked, steps);
	ck_assert_int_eq(fk.failed, 0);
}
END_TEST

Suite *htable_suite(void)
{
	Suite *s = suite_create("htable");
	TCase *tc = tcase_create("table");

	tcase_add_test(tc, empty_table_finds_nothing);
	tcase_add_test(tc, nodes_are_found_through_growth_and_removal);
	tcase_add_test(tc, a_small_table_allocates_nothing);
	tcase_add_test(tc, a_forgotten_table_is_empty_and_usable);
	tcase_add_test(
		tc, a_child_forked_at_any_store_of_a_change_repairs_the_table);
	suite_add_tcase(s, tc);
	return s;
}
