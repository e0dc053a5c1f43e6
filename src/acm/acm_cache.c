// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The ACM answer cache: one per process, shared by every id and thread.
 * Unlike the seed's service, entries expire (RDMA_CM_ACM_CACHE_TTL), and
 * misses are remembered too for a shorter time (RDMA_CM_ACM_NEG_TTL), so a
 * destination no source knows costs one round of queries per period, not
 * one per connection.
 *
 * The key is the whole query (both endpoints, zero padded), so a hit is an
 * answer to exactly the question asked.  A chained hash table; when the
 * cap is reached, expired entries go first, then the oldest.
 */
#include <config.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acm.h"
#include "cm/cma.h"
#include "cm/test_hooks.h"
#include "util/fork_fresh.h"

#define ACM_CACHE_BUCKETS 1024 /* a power of two */
#define ACM_CACHE_DEFAULT_LIMIT 65536

struct acm_cache_entry {
	struct acm_cache_entry *next; /* in its bucket */
	struct cma_acm_query key;
	uint64_t expires_ms; /* monotonic */
	uint64_t added_ms;
	bool negative;
	struct cma_acm_answer ans;
};

/* A leaf held across fork (util/fork_fresh.h): its holders only allocate. */
CMA_LEAF_MUTEX(acm_cache_lock)
static struct acm_cache_entry *acm_buckets[ACM_CACHE_BUCKETS];
static size_t acm_cache_entries;
static size_t acm_cache_limit = ACM_CACHE_DEFAULT_LIMIT;

/*
 * Expiry is in seconds, so a tick-grained clock does; the coarse clock is
 * read from the vDSO page even where the precise one needs a system call
 * (virtual machines without a stable TSC), which would cost more than the
 * cache hit it serves.
 */
static uint64_t acm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * The key is a zero-padded fixed-size struct: mix it eight bytes at a time
 * (a hit's cost is mostly this hash, so not byte by byte).
 */
static size_t acm_hash(const struct cma_acm_query *q)
{
	const uint8_t *p = (const uint8_t *)q;
	uint64_t h = 0x9e3779b97f4a7c15ull, w;
	size_t i;

	for (i = 0; i + sizeof(w) <= sizeof(*q); i += sizeof(w)) {
		memcpy(&w, p + i, sizeof(w));
		h = (h ^ w) * 0xff51afd7ed558ccdull;
	}
	for (; i < sizeof(*q); i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return (size_t)(h ^ (h >> 29)) & (ACM_CACHE_BUCKETS - 1);
}

static void acm_unlink(struct acm_cache_entry **link)
{
	struct acm_cache_entry *e = *link;

	*link = e->next;
	free(e);
	acm_cache_entries--;
}

/* Drop every expired entry; if still full, the oldest one.  Locked. */
static void acm_cache_make_room(uint64_t now)
{
	struct acm_cache_entry **link, **oldest = NULL;
	size_t b;

	for (b = 0; b < ACM_CACHE_BUCKETS; b++) {
		link = &acm_buckets[b];
		while (*link) {
			if ((*link)->expires_ms <= now) {
				acm_unlink(link);
				continue;
			}
			if (!oldest || (*link)->added_ms < (*oldest)->added_ms)
				oldest = link;
			link = &(*link)->next;
		}
	}
	if (acm_cache_entries >= acm_cache_limit && oldest)
		acm_unlink(oldest);
}

static struct acm_cache_entry **acm_find(const struct cma_acm_query *q)
{
	struct acm_cache_entry **link = &acm_buckets[acm_hash(q)];

	while (*link && memcmp(&(*link)->key, q, sizeof(*q)))
		link = &(*link)->next;
	return link;
}

int cma_acm_cache_get(const struct cma_acm_query *q, struct cma_acm_answer *ans)
{
	struct acm_cache_entry **link;
	uint64_t now = acm_now_ms();
	int ret = 0;

	pthread_mutex_lock(&acm_cache_lock);
	link = acm_find(q);
	if (*link && (*link)->expires_ms <= now) {
		acm_unlink(link);
	} else if (*link) {
		ret = (*link)->negative ? -1 : 1;
		if (ret > 0)
			*ans = (*link)->ans;
	}
	pthread_mutex_unlock(&acm_cache_lock);
	return ret;
}

void cma_acm_cache_put(const struct cma_acm_query *q,
		       const struct cma_acm_answer *ans, unsigned int ttl_ms)
{
	struct acm_cache_entry **link, *e;
	uint64_t now = acm_now_ms();

	if (!ttl_ms || !acm_cache_limit)
		return;
	pthread_mutex_lock(&acm_cache_lock);
	link = acm_find(q);
	e = *link;
	if (!e) {
		if (acm_cache_entries >= acm_cache_limit) {
			acm_cache_make_room(now);
			link = acm_find(q);
		}
		e = calloc(1, sizeof(*e));
		if (!e)
			goto out; /* a cache may forget */
		e->key = *q;
		*link = e;
		acm_cache_entries++;
	}
	e->added_ms = now;
	e->expires_ms = now + ttl_ms;
	e->negative = !ans;
	if (ans)
		e->ans = *ans;
out:
	pthread_mutex_unlock(&acm_cache_lock);
}

void cma_acm_cache_flush(void)
{
	size_t b;

	pthread_mutex_lock(&acm_cache_lock);
	for (b = 0; b < ACM_CACHE_BUCKETS; b++)
		while (acm_buckets[b])
			acm_unlink(&acm_buckets[b]);
	pthread_mutex_unlock(&acm_cache_lock);
}

size_t cma_acm_cache_count(void)
{
	size_t n;

	pthread_mutex_lock(&acm_cache_lock);
	n = acm_cache_entries;
	pthread_mutex_unlock(&acm_cache_lock);
	return n;
}

void cma_acm_cache_set_limit(size_t max_entries)
{
	pthread_mutex_lock(&acm_cache_lock);
	acm_cache_limit = max_entries;
	while (acm_cache_entries > acm_cache_limit)
		acm_cache_make_room(acm_now_ms());
	pthread_mutex_unlock(&acm_cache_lock);
}
