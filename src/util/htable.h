/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * A chained hash table of nodes embedded in their owners, which grows
 * with what it holds: the library's lookups by key (peer-to-peer mode's
 * held requests, connects and peers).  Callers hash and compare keys; the
 * table places nodes by their 64-bit hash and skips other hashes in a
 * chain.
 *
 * It starts with a few buckets inside the table itself: a process that
 * keeps a handful of entries touches no page of its own for it (fixed
 * tables of 512 buckets cost every p2p process page faults on its first
 * connects), and one that keeps thousands does not walk long chains.
 * Growing needs memory; without it the table keeps its buckets and only
 * the chains get longer, so adding never fails.  Not thread-safe: callers
 * hold their own lock.  Zero-filled tables (static ones) are empty.
 *
 * A fork can copy a table in the middle of a change (another thread of the
 * parent making it): its stores are ordered so that every node is
 * reachable forward (bucket, next) at every instant, a growth included,
 * and cma_htable_repair makes the rest whole again in the child.
 */
#ifndef CMA_HTABLE_H
#define CMA_HTABLE_H

#include <stddef.h>
#include <stdint.h>

#define CMA_HTABLE_FIRST_BUCKETS 16

struct cma_hnode {
	struct cma_hnode *next, **pprev;
	uint64_t hash;
};

struct cma_htable {
	struct cma_hnode **buckets; /* first_buckets until it grew */
	size_t mask; /* buckets - 1 (a power of two) */
	size_t count;
	struct cma_hnode *first_buckets[CMA_HTABLE_FIRST_BUCKETS];
	/*
	 * A growth under way, for a child forked during it: the buckets
	 * nodes move to, and the node between the old chains and these.
	 */
	struct cma_hnode **grow_to;
	size_t grow_mask;
	struct cma_hnode *moving;
};

void cma_htable_add(struct cma_htable *t, struct cma_hnode *n, uint64_t hash);
void cma_htable_del(struct cma_htable *t, struct cma_hnode *n);
/* The first node with @hash, or NULL; cma_htable_next walks on. */
struct cma_hnode *cma_htable_first(const struct cma_htable *t, uint64_t hash);
/* The next node after @n with the same hash, or NULL. */
struct cma_hnode *cma_htable_next(const struct cma_hnode *n);
/*
 * In a forked child, before any other use: every node the parent's last
 * store left reachable is linked in again, the back links and the count
 * recomputed, a growth finished.
 */
void cma_htable_repair(struct cma_htable *t);
/*
 * In a forked child whose nodes are all its parent's: the table empty,
 * its memory freed, its nodes left as they are (never to be deleted).
 */
void cma_htable_forget(struct cma_htable *t);

/* Each node of @t with @hash, into @n (a struct cma_hnode pointer). */
#define cma_htable_for_hash(n, t, hash)                                        \
	for ((n) = cma_htable_first((t), (hash)); (n); (n) = cma_htable_next(n))

#define cma_htable_entry(node, type, member)                                   \
	((type *)((char *)(node)-offsetof(type, member)))

#endif
