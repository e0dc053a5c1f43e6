// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The growing hash table (htable.h).  It grows fourfold once it holds
 * more than two nodes a bucket, so a lookup walks two on average; a grown
 * table never shrinks (what held thousands once may again).
 */
#include <config.h>

#include <stdbool.h>
#include <stdlib.h>

#include "cm/test_hooks.h"
#include "fork_fresh.h"
#include "htable.h"

/*
 * Called after each store a forked child may see without the ones that
 * follow it: a test forks there (test_hooks.h), so that every such
 * instant is shown to leave a table cma_htable_repair makes whole.
 */
static void (*cma_htable_step_hook)(void);

void cma_htable_set_step_hook(void (*hook)(void))
{
	cma_htable_step_hook = hook;
}

static inline void cma_htable_step(void)
{
	if (__builtin_expect(cma_htable_step_hook != NULL, 0))
		cma_htable_step_hook();
}

/* A store that makes a node reachable or unreachable (fork_fresh.h). */
#define cma_htable_publish(where, what)                                        \
	do {                                                                   \
		CMA_FORK_PUBLISH(where, what);                                 \
		cma_htable_step();                                             \
	} while (0)

static struct cma_hnode **cma_htable_buckets(struct cma_htable *t)
{
	if (!t->buckets) {
		t->mask = CMA_HTABLE_FIRST_BUCKETS - 1;
		cma_htable_publish(t->buckets, t->first_buckets);
	}
	return t->buckets;
}

/* Forward first (the node, then the bucket), the back link last. */
static void cma_htable_link(struct cma_hnode **bucket, struct cma_hnode *n)
{
	struct cma_hnode *first = *bucket;

	n->next = first;
	n->pprev = bucket;
	cma_htable_publish(*bucket, n);
	if (first) {
		first->pprev = &n->next;
		cma_htable_step();
	}
}

/*
 * Rehash into four times the buckets; on ENOMEM keep the old ones.  Each
 * node leaves its old chain before it joins a new one and is named in
 * t->moving meanwhile, so that it is never out of sight.
 */
static void cma_htable_grow(struct cma_htable *t)
{
	size_t size = (t->mask + 1) * 4, i;
	struct cma_hnode **old = t->buckets;
	struct cma_hnode **grown = calloc(size, sizeof(*grown));
	struct cma_hnode *n;

	if (!grown)
		return;
	t->grow_mask = size - 1;
	cma_htable_publish(t->grow_to, grown);
	for (i = 0; i <= t->mask; i++) {
		while ((n = old[i])) {
			cma_htable_publish(t->moving, n);
			cma_htable_publish(old[i], n->next);
			cma_htable_link(&grown[n->hash & (size - 1)], n);
		}
	}
	t->buckets = grown;
	/* The mask after the buckets: a larger one never indexes the old. */
	cma_htable_publish(t->mask, size - 1);
	cma_htable_publish(t->moving, NULL);
	cma_htable_publish(t->grow_to, NULL);
	if (old != t->first_buckets)
		free(old);
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
	cma_htable_publish(*n->pprev, n->next);
	if (n->next)
		n->next->pprev = n->pprev;
	n->next = NULL;
	n->pprev = NULL;
	t->count--;
}

/* Move every chain of @buckets onto @pending, leaving the buckets empty. */
static void cma_htable_take_chains(struct cma_hnode **buckets, size_t mask,
				   struct cma_hnode **pending)
{
	struct cma_hnode *n, *next;
	size_t i;

	for (i = 0; buckets && i <= mask; i++) {
		for (n = buckets[i]; n; n = next) {
			next = n->next;
			n->next = *pending;
			*pending = n;
		}
		buckets[i] = NULL;
	}
}

static bool cma_htable_listed(const struct cma_hnode *list,
			      const struct cma_hnode *n)
{
	for (; list; list = list->next)
		if (list == n)
			return true;
	return false;
}

void cma_htable_repair(struct cma_htable *t)
{
	struct cma_hnode *pending = NULL, *n, *next;
	struct cma_hnode **to = t->buckets;
	size_t mask = t->mask;

	/*
	 * The buckets the last store left, also where a growth had set the
	 * new buckets but not yet the mask (a part of them taken then).
	 */
	cma_htable_take_chains(t->buckets, t->mask, &pending);
	if (t->grow_to) {
		cma_htable_take_chains(t->grow_to, t->grow_mask, &pending);
		n = t->moving;
		if (n && !cma_htable_listed(pending, n)) {
			n->next = pending;
			pending = n;
		}
		if (t->buckets != t->grow_to && t->buckets != t->first_buckets)
			free(t->buckets);
		to = t->grow_to;
		mask = t->grow_mask;
	}
	t->buckets = to;
	t->mask = mask;
	t->grow_to = NULL;
	t->moving = NULL;
	t->count = 0;
	for (n = pending; n; n = next) {
		next = n->next;
		cma_htable_link(&to[n->hash & mask], n);
		t->count++;
	}
}

void cma_htable_forget(struct cma_htable *t)
{
	/*
	 * The nodes are not touched (relinking them would copy every page
	 * they sit on): only the arrays go, a growth's new one too.
	 */
	if (t->grow_to && t->grow_to != t->buckets)
		free(t->grow_to);
	if (t->buckets != t->first_buckets)
		free(t->buckets);
	*t = (struct cma_htable){0};
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
