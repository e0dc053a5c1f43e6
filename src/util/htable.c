// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The growing hash table (htable.h).  It grows fourfold once it holds
 * more than two nodes a bucket, so a lookup walks two on average; a grown
 * table never shrinks (what held thousands once may again).
 */
#include <config.h>

#include <stdlib.h>

#include "htable.h"

static struct cma_hnode **cma_htable_buckets(struct cma_htable *t)
{
	if (!t->buckets) {
		t->buckets = t->first_buckets;
		t->mask = CMA_HTABLE_FIRST_BUCKETS - 1;
	}
	return t->buckets;
}

static void cma_htable_link(struct cma_hnode **bucket, struct cma_hnode *n)
{
	n->next = *bucket;
	if (n->next)
		n->next->pprev = &n->next;
	n->pprev = bucket;
	*bucket = n;
}

/* Rehash into four times the buckets; on ENOMEM keep the old ones. */
static void cma_htable_grow(struct cma_htable *t)
{
	size_t size = (t->mask + 1) * 4, i;
	struct cma_hnode **grown = calloc(size, sizeof(*grown));
	struct cma_hnode *n, *next;

	if (!grown)
		return;
	for (i = 0; i <= t->mask; i++) {
		for (n = t->buckets[i]; n; n = next) {
			next = n->next;
			cma_htable_link(&grown[n->hash & (size - 1)], n);
		}
	}
	if (t->buckets != t->first_buckets)
		free(t->buckets);
	t->buckets = grown;
	t->mask = size - 1;
}

void cma_htable_add(struct cma_htable *t, struct cma_hnode *n, uint64_t hash)
{
	struct cma_hnode **buckets = cma_htable_buckets(t);

	n->hash = hash;
	cma_htable_link(&buckets[hash & t->mask], n);
	if (++t->count > 2 * (t->mask + 1))
		cma_htable_grow(t);
}

void cma_htable_del(struct cma_htable *t, struct cma_hnode *n)
{
	*n->pprev = n->next;
	if (n->next)
		n->next->pprev = n->pprev;
	n->next = NULL;
	n->pprev = NULL;
	t->count--;
}

struct cma_hnode *cma_htable_first(const struct cma_htable *t, uint64_t hash)
{
	struct cma_hnode *n;

	if (!t->buckets)
		return NULL;
	for (n = t->buckets[hash & t->mask]; n && n->hash != hash; n = n->next)
		;
	return n;
}

struct cma_hnode *cma_htable_next(const struct cma_hnode *n)
{
	struct cma_hnode *m;

	for (m = n->next; m && m->hash != n->hash; m = m->next)
		;
	return m;
}
