// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The intrusive list (src/util/list.h): a zeroed list is empty, order is
 * kept at both ends and after any member, unlinking from the middle, the
 * head or the tail leaves the others linked and the length right.
 */
#include <config.h>

#include <check.h>
#include <string.h>

#include "util/list.h"
#include "unit.h"

struct item {
	int key;
	struct cma_list_node node;
};

/* The keys in order, each checked against the walk back from the tail. */
static int keys_of(const struct cma_list *l, int *out, int max)
{
	struct item *it, *back = cma_list_last(l, struct item, node);
	int n = 0, i;

	for (it = cma_list_first(l, struct item, node); it && n < max;
	     it = cma_list_next(it, node))
		out[n++] = it->key;
	for (i = n - 1; i >= 0; i--) {
		ck_assert_ptr_nonnull(back);
		ck_assert_int_eq(back->key, out[i]);
		back = cma_list_prev(back, node);
	}
	ck_assert_ptr_null(back);
	ck_assert_uint_eq(l->len, (unsigned int)n);
	return n;
}

START_TEST(a_zeroed_list_is_empty)
{
	static struct cma_list l;
	int keys[1];

	ck_assert_ptr_null(cma_list_first(&l, struct item, node));
	ck_assert_ptr_null(cma_list_last(&l, struct item, node));
	ck_assert_int_eq(keys_of(&l, keys, 1), 0);
}
END_TEST

START_TEST(append_and_push_keep_their_ends)
{
	struct cma_list l = {0};
	struct item it[4] = {{.key = 0}, {.key = 1}, {.key = 2}, {.key = 3}};
	int keys[4];

	cma_list_append(&l, &it[1].node);
	cma_list_append(&l, &it[2].node);
	cma_list_push(&l, &it[0].node);
	cma_list_append(&l, &it[3].node);
	ck_assert_int_eq(keys_of(&l, keys, 4), 4);
	ck_assert_int_eq(keys[0], 0);
	ck_assert_int_eq(keys[3], 3);
	ck_assert_int_eq(keys[1], 1);
	ck_assert_int_eq(keys[2], 2);
}
END_TEST

START_TEST(unlink_anywhere_leaves_the_rest)
{
	struct cma_list l = {0};
	struct item it[5];
	int keys[5], i;

	for (i = 0; i < 5; i++) {
		it[i].key = i;
		cma_list_append(&l, &it[i].node);
	}
	cma_list_unlink(&l, &it[2].node); /* the middle */
	ck_assert_ptr_null(it[2].node.next);
	ck_assert_ptr_null(it[2].node.prev);
	cma_list_unlink(&l, &it[0].node); /* the head */
	cma_list_unlink(&l, &it[4].node); /* the tail */
	ck_assert_int_eq(keys_of(&l, keys, 5), 2);
	ck_assert_int_eq(keys[0], 1);
	ck_assert_int_eq(keys[1], 3);
	cma_list_unlink(&l, &it[1].node);
	cma_list_unlink(&l, &it[3].node);
	ck_assert_int_eq(keys_of(&l, keys, 5), 0);
	/* Emptied, it takes new members as a zeroed one does. */
	cma_list_append(&l, &it[4].node);
	ck_assert_int_eq(keys_of(&l, keys, 5), 1);
	ck_assert_int_eq(keys[0], 4);
}
END_TEST

START_TEST(insert_after_keeps_an_order)
{
	struct cma_list l = {0};
	struct item it[4] = {{.key = 0}, {.key = 1}, {.key = 2}, {.key = 3}};
	int keys[4], i;

	cma_list_insert_after(&l, NULL, &it[1].node); /* into an empty list */
	cma_list_insert_after(&l, &it[1].node, &it[3].node); /* the tail */
	cma_list_insert_after(&l, &it[1].node, &it[2].node); /* the middle */
	cma_list_insert_after(&l, NULL, &it[0].node); /* the head */
	ck_assert_int_eq(keys_of(&l, keys, 4), 4);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(keys[i], i);
}
END_TEST

/* a, b, c (keys 0, 1, 2) in @l. */
static void three(struct cma_list *l, struct item *it)
{
	int i;

	for (i = 0; i < 3; i++) {
		it[i].key = i;
		cma_list_append(l, &it[i].node);
	}
}

/*
 * A fork copies a list as another thread of the parent left it.  Once an
 * insert's or an unlink's forward store is made, its back link, the last
 * node and the length may still be the old ones in the child's copy (put
 * back below, for each place a change can be at): the repair takes the
 * forward links as the list and makes the rest agree.
 */
START_TEST(a_copy_cut_after_the_forward_store_is_repaired)
{
	int where, keys[4];

	for (where = 0; where < 3; where++) {
		struct cma_list l = {0};
		struct item it[3], n = {.key = 9};
		struct cma_list_node *pos = where ? &it[where - 1].node : NULL;
		struct cma_list_node *next, *last;
		unsigned int len;

		/* Inserted at the head, after a, after c: the rest undone. */
		three(&l, it);
		if (where == 2)
			pos = &it[2].node;
		next = pos ? pos->next : l.first;
		last = l.last;
		len = l.len;
		cma_list_insert_after(&l, pos, &n.node);
		if (next)
			next->prev = pos;
		l.last = last;
		l.len = len;
		cma_list_repair(&l);
		ck_assert_int_eq(keys_of(&l, keys, 4), 4);

		/* Unlinked from the head, the middle, the tail: the same. */
		memset(&l, 0, sizeof(l));
		three(&l, it);
		pos = it[where].node.prev;
		next = it[where].node.next;
		last = l.last;
		len = l.len;
		cma_list_unlink(&l, &it[where].node);
		if (next)
			next->prev = &it[where].node;
		it[where].node.prev = pos;
		it[where].node.next = next;
		l.last = last;
		l.len = len;
		cma_list_repair(&l);
		ck_assert_int_eq(keys_of(&l, keys, 4), 2);
		ck_assert_int_ne(keys[0], where);
		ck_assert_int_ne(keys[1], where);
	}
}
END_TEST

Suite *list_suite(void)
{
	Suite *s = suite_create("list");
	TCase *tc = tcase_create("list");

	tcase_add_test(tc, a_zeroed_list_is_empty);
	tcase_add_test(tc, append_and_push_keep_their_ends);
	tcase_add_test(tc, unlink_anywhere_leaves_the_rest);
	tcase_add_test(tc, insert_after_keeps_an_order);
	tcase_add_test(tc, a_copy_cut_after_the_forward_store_is_repaired);
	suite_add_tcase(s, tc);
	return s;
}
