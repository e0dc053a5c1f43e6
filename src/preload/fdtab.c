// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Which of the program's descriptors stand for an rsocket.
 *
 * A two-level table indexed by descriptor number: pages of 1024 slots
 * allocated on first use, so a program with a few sockets pays a few
 * kilobytes.  Lookups are lock-free (every I/O call does one); changes
 * take a mutex.  As with the kernel, closing a descriptor while another
 * thread still uses it is the program's bug.
 *
 * After fork the child inherits the table, but not the RDMA resources
 * behind it in any usable way: the CM ids, QPs and rings are the
 * parent's.  So a connected rsocket belongs to the process that made it;
 * in any other the descriptor is a plain (unconnected) kernel socket, and
 * its close() frees the child's copy of the bookkeeping without rclose,
 * which would disconnect and destroy the parent's connection.  Listeners
 * are the exception: the rsocket library shares them with the children
 * of a fork (each accepts in its own right, and rclose gives up only its
 * own part), so they stay rsockets in every process.  So do connections
 * accepted on a listener a fork shared, until one process uses them
 * (rsp_use): that process answers the connection and owns it; the others'
 * close frees their copy, which answered nothing (and if the process that
 * answered first is the one that accepted, it relays the connection to
 * those that use it later: share.c).  A connection fork mode
 * moved back to TCP (moveback.c) keeps, until they are read, only the
 * bytes that came over RDMA, in ordinary memory: a process forked since
 * reads its own copy.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rsocket.h>

#include "preload.h"
#include "util/fork_fresh.h"

#define PAGE_SHIFT 10
#define PAGE_SLOTS (1 << PAGE_SHIFT)
#define NPAGES 1024 /* descriptors up to 1M */

static struct rsp_file **pages[NPAGES];
int rsp_nmoved;
static int mapped; /* descriptors mapped, for rsp_any() */

/*
 * Made afresh in a forked child (util/fork_fresh.h), not held across the
 * fork: the library calls close() and the like (this preload's) under
 * locks of its own, which other atfork handlers take, in an order no
 * handler here controls.  Every change is a single store, so the table is
 * whole at any instant, and the mapped count never falls below the slots
 * in use (swap), so the child's lookups see every mapped descriptor.
 */
CMA_FRESH_MUTEX(lock)

static struct rsp_file **slot(int fd, bool create)
{
	unsigned int p = (unsigned int)fd >> PAGE_SHIFT;
	struct rsp_file **page;

	if (fd < 0 || p >= NPAGES)
		return NULL;
	page = __atomic_load_n(&pages[p], __ATOMIC_ACQUIRE);
	if (!page && create) {
		page = calloc(PAGE_SLOTS, sizeof(*page));
		if (page)
			__atomic_store_n(&pages[p], page, __ATOMIC_RELEASE);
	}
	return page ? &page[fd & (PAGE_SLOTS - 1)] : NULL;
}

/*
 * Whether this process may use f: its own, a listener or a handed
 * connection (shared by a fork), or one moved back (only bytes left).
 */
static bool rsp_file_ours(const struct rsp_file *f)
{
	return f->owner == rsp_pid || f->shared || f->handed || f->detached;
}

struct rsp_file *rsp_get(int fd)
{
	struct rsp_file **s, *f;

	if (!__atomic_load_n(&mapped, __ATOMIC_RELAXED))
		return NULL;
	s = slot(fd, false);
	f = s ? __atomic_load_n(s, __ATOMIC_ACQUIRE) : NULL;
	/* A relayed connection's descriptor is the relay's kernel socket. */
	return f && rsp_file_ours(f) &&
			       !__atomic_load_n(&f->relayed, __ATOMIC_ACQUIRE)
		       ? f
		       : NULL;
}

struct rsp_file *rsp_peek(int fd)
{
	struct rsp_file **s;

	if (!__atomic_load_n(&mapped, __ATOMIC_RELAXED))
		return NULL;
	s = slot(fd, false);
	return s ? __atomic_load_n(s, __ATOMIC_ACQUIRE) : NULL;
}

struct rsp_file *rsp_use(int fd)
{
	struct rsp_file *f = rsp_get(fd);

	/* Another process's connection: its owner relays it if asked. */
	if (!f && rsp_share_claim(fd))
		return NULL;
	if (f && f->handed) {
		/* Answered by its owner first: relayed like any other. */
		if (rsp_share_answer(f, fd))
			return NULL;
		rsp_share_answering(f);
		f->owner = rsp_pid;
		/* Before the call that answers it (share.c: answered_here). */
		__atomic_store_n(&f->handed, false, __ATOMIC_RELEASE);
	}
	return f;
}

void rsp_note_foreign(int fd)
{
	struct rsp_file **s, *f;

	if (!__atomic_load_n(&mapped, __ATOMIC_RELAXED))
		return;
	s = slot(fd, false);
	f = s ? __atomic_load_n(s, __ATOMIC_ACQUIRE) : NULL;
	if (!f || rsp_file_ours(f) || f->claimed ||
	    __atomic_exchange_n(&f->noted, rsp_pid, __ATOMIC_RELAXED) ==
		    rsp_pid)
		return;
	/* the program is about to read an end-of-stream it cannot explain */
	rsp_log("fd %d: connected over RDMA by process %d; this process has "
		"only its kernel socket",
		fd, f->owner);
}

bool rsp_any(void)
{
	return __atomic_load_n(&mapped, __ATOMIC_RELAXED) != 0;
}

struct rsp_file *rsp_file_new(int rs, int domain)
{
	struct rsp_file *f = calloc(1, sizeof(*f));

	if (f) {
		f->rs = rs;
		f->owner = rsp_pid;
		f->domain = domain;
	}
	return f;
}

static void release(struct rsp_file *f)
{
	if (f->forked && rsp_share_keep(f)) {
		rsp_log("rsocket %d: kept for the processes a fork shared it "
			"with",
			f->rs);
	} else if (rsp_file_ours(f)) {
		rsp_log("rsocket %d closed", f->rs);
		rclose(f->rs);
	} else {
		rsp_log("rsocket %d: the parent's, left alone", f->rs);
	}
	/*
	 * A reader another thread still has inside the rsocket (a close
	 * under a blocking read) frees it as it leaves (rsp_read_leave).
	 */
	if (!(__atomic_or_fetch(&f->readers, RSP_FILE_GONE, __ATOMIC_SEQ_CST) &
	      ~RSP_FILE_GONE))
		rsp_file_free(f);
}

void rsp_file_free(struct rsp_file *f)
{
	free(f->addrs);
	free(f);
}

/* Drops a mapping's reference; true when it was the last. */
static bool unref(struct rsp_file *f)
{
	if (__atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL))
		return false;
	if (f->via_tcp)
		__atomic_sub_fetch(&rsp_nmoved, 1, __ATOMIC_RELAXED);
	return true;
}

static void put(struct rsp_file *f)
{
	if (f && unref(f))
		release(f);
}

/* Swaps what fd maps to; returns the old file (its reference included). */
static struct rsp_file *swap(int fd, struct rsp_file *f)
{
	struct rsp_file **s, *old = NULL;

	pthread_mutex_lock(&lock);
	s = slot(fd, f != NULL);
	if (s) {
		/*
		 * rsp_any and the lookups read the count unlocked: it rises
		 * before a slot fills and falls after one empties.
		 */
		old = *s;
		if (f && !old)
			__atomic_add_fetch(&mapped, 1, __ATOMIC_RELAXED);
		__atomic_store_n(s, f, __ATOMIC_RELEASE);
		if (!f && old)
			__atomic_sub_fetch(&mapped, 1, __ATOMIC_RELAXED);
	} else {
		/* No room: the caller's new reference is dropped again. */
		old = f;
	}
	pthread_mutex_unlock(&lock);
	return old;
}

void rsp_set(int fd, struct rsp_file *f)
{
	__atomic_add_fetch(&f->refs, 1, __ATOMIC_ACQ_REL);
	put(swap(fd, f));
}

void rsp_clear(int fd)
{
	put(swap(fd, NULL));
}

/*
 * Files the library unmapped while a call of another thread might still
 * use them (a reader blocked in rrecv when a fork moves its connection
 * back).  Closing the rsocket would fail that call with EBADF, and freeing
 * the file would pull it from under the call's hands; the program's own
 * close of the descriptor is the point from which neither can happen
 * without the program racing itself (the rule above).
 */
static struct rsp_file *retired;

bool rsp_retire(int fd, struct rsp_file *f)
{
	struct rsp_file **s;
	bool unmapped = false;

	pthread_mutex_lock(&lock);
	s = slot(fd, false);
	if (s && *s == f) {
		__atomic_store_n(s, NULL, __ATOMIC_RELEASE);
		__atomic_sub_fetch(&mapped, 1, __ATOMIC_RELAXED);
		unmapped = true;
		if (unref(f)) {
			f->retired_fd = fd;
			f->retired_next = retired;
			__atomic_store_n(&retired, f, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&lock);
	return unmapped;
}

void rsp_release_retired(int fd)
{
	struct rsp_file **p, *f, *gone = NULL;

	if (!__atomic_load_n(&retired, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&lock);
	for (p = &retired; (f = *p);) {
		if (f->retired_fd != fd) {
			p = &f->retired_next;
			continue;
		}
		/* atomic: close() looks at the head without the lock */
		__atomic_store_n(p, f->retired_next, __ATOMIC_RELEASE);
		f->retired_next = gone;
		gone = f;
	}
	pthread_mutex_unlock(&lock);
	while ((f = gone)) {
		gone = f->retired_next;
		release(f);
	}
}

/*
 * Calls @fn(f, fd, arg) for each mapped descriptor, under the lock (@fn
 * must not take it); stops when @fn returns false.
 */
static void each_fd(bool (*fn)(struct rsp_file *f, int fd, void *arg),
		    void *arg)
{
	struct rsp_file **page;
	int p, i;

	pthread_mutex_lock(&lock);
	for (p = 0; p < NPAGES; p++) {
		page = pages[p];
		for (i = 0; page && i < PAGE_SLOTS; i++)
			if (page[i] && !fn(page[i], (p << PAGE_SHIFT) | i, arg))
				goto out;
	}
out:
	pthread_mutex_unlock(&lock);
}

/* A growing array of pointers or descriptors, for the collectors below. */
struct collect {
	const struct rsp_file *of; /* rsp_fds_of: the file */
	bool (*pred)(const struct rsp_file *f, void *arg);
	void *arg;
	void **items;
	int n, cap;
};

static bool collect_add(struct collect *c, void *item)
{
	if (c->n == c->cap) {
		int cap = c->cap ? 2 * c->cap : 16;
		void **grown = realloc(c->items, cap * sizeof(*grown));

		if (!grown)
			return false; /* the list so far: as before, partial */
		c->items = grown;
		c->cap = cap;
	}
	c->items[c->n++] = item;
	return true;
}

static bool collect_fd(struct rsp_file *f, int fd, void *arg)
{
	struct collect *c = arg;

	return f != c->of || collect_add(c, (void *)(intptr_t)fd);
}

static bool collect_file(struct rsp_file *f, int fd, void *arg)
{
	struct collect *c = arg;

	(void)fd;
	return !c->pred(f, c->arg) || collect_add(c, f);
}

/* The descriptors collected, as an int array in *out; their number. */
static int fds_from(struct collect *c, int **out)
{
	int *fds = NULL, i;

	if (c->n)
		fds = malloc(c->n * sizeof(*fds));
	for (i = 0; fds && i < c->n; i++)
		fds[i] = (int)(intptr_t)c->items[i];
	free(c->items);
	*out = fds;
	return fds ? c->n : 0;
}

int rsp_fds_of(const struct rsp_file *f, int **out)
{
	struct collect c = {.of = f};

	each_fd(collect_fd, &c);
	return fds_from(&c, out);
}

static int by_address(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a;
	uintptr_t y = (uintptr_t) * (void *const *)b;

	return (x > y) - (x < y);
}

int rsp_files_where(bool (*pred)(const struct rsp_file *f, void *arg),
		    void *arg, struct rsp_file ***out)
{
	struct collect c = {.pred = pred, .arg = arg};
	int i, n = 0;

	each_fd(collect_file, &c);
	/* A file mapped by several descriptors (dup) is listed once. */
	if (c.n > 1)
		qsort(c.items, c.n, sizeof(*c.items), by_address);
	for (i = 0; i < c.n; i++)
		if (!n || c.items[n - 1] != c.items[i])
			c.items[n++] = c.items[i];
	*out = (struct rsp_file **)c.items;
	return n;
}

int rsp_file_name(int fd, const struct rsp_file *f, bool peer,
		  struct sockaddr *sa, socklen_t *len)
{
	if (f->via_tcp)
		return peer ? rsp_real.getpeername(fd, sa, len)
			    : rsp_real.getsockname(fd, sa, len);
	return peer ? rgetpeername(f->rs, sa, len)
		    : rgetsockname(f->rs, sa, len);
}

bool rsp_swap_kernel(int fd, const struct rsp_file *f, int with)
{
	struct rsp_file **s;
	bool swapped = false;
	int flags;

	pthread_mutex_lock(&lock);
	s = slot(fd, false);
	if (s && *s == f) {
		flags = rsp_real.fcntl(fd, F_GETFD);
		swapped = rsp_real.dup3(with, fd,
					flags >= 0 && (flags & FD_CLOEXEC)
						? O_CLOEXEC
						: 0) == fd;
	}
	pthread_mutex_unlock(&lock);
	return swapped;
}

struct where {
	bool (*pred)(const struct rsp_file *f);
	struct collect c;
};

static bool collect_ours(struct rsp_file *f, int fd, void *arg)
{
	struct where *w = arg;

	return !rsp_file_ours(f) || !w->pred(f) ||
	       collect_add(&w->c, (void *)(intptr_t)fd);
}

int rsp_fds_where(bool (*pred)(const struct rsp_file *f), int **out)
{
	struct where w = {.pred = pred};

	each_fd(collect_ours, &w);
	return fds_from(&w.c, out);
}
