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
 * close frees their copy, which answered nothing.  A connection fork mode
 * moved back to TCP before a fork (moveback.c) keeps, until they are
 * read, only the bytes that came over RDMA, in ordinary memory: every
 * process reads its own copy.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rsocket.h>

#include "preload.h"

#define PAGE_SHIFT 10
#define PAGE_SLOTS (1 << PAGE_SHIFT)
#define NPAGES 1024 /* descriptors up to 1M */

static struct rsp_file **pages[NPAGES];
int rsp_nmoved;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int mapped; /* descriptors mapped, for rsp_any() */

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
	return f && rsp_file_ours(f) ? f : NULL;
}

struct rsp_file *rsp_use(int fd)
{
	struct rsp_file *f = rsp_get(fd);

	if (f && f->handed) {
		f->owner = rsp_pid;
		f->handed = false;
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
	if (!f || rsp_file_ours(f) ||
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
	if (rsp_file_ours(f)) {
		rsp_log("rsocket %d closed", f->rs);
		rclose(f->rs);
	} else {
		rsp_log("rsocket %d: the parent's, left alone", f->rs);
	}
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
		old = *s;
		__atomic_store_n(s, f, __ATOMIC_RELEASE);
		__atomic_add_fetch(
			&mapped, (f != NULL) - (old != NULL),
			__ATOMIC_RELAXED); /* rsp_any reads it unlocked */
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

int rsp_fds_where(bool (*pred)(const struct rsp_file *f), int **out)
{
	struct rsp_file **page;
	int *fds = NULL, n = 0, cap = 0, p, i;

	*out = NULL;
	pthread_mutex_lock(&lock);
	for (p = 0; p < NPAGES; p++) {
		page = pages[p];
		for (i = 0; page && i < PAGE_SLOTS; i++) {
			if (!page[i] || !rsp_file_ours(page[i]) ||
			    !pred(page[i]))
				continue;
			if (n == cap) {
				int *grown = realloc(fds, (cap ? 2 * cap : 16) *
								  sizeof(*fds));

				if (!grown)
					goto out;
				fds = grown;
				cap = cap ? 2 * cap : 16;
			}
			fds[n++] = (p << PAGE_SHIFT) | i;
		}
	}
out:
	pthread_mutex_unlock(&lock);
	*out = fds;
	return n;
}
