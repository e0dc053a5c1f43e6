// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The rsocket descriptor table and socket allocation.
 *
 * Sockets are found by number on every call.  The table is two-level, its
 * pages are allocated once and never freed.  A lookup takes a reference
 * under one of RS_STRIPES small locks (chosen by number) so that it cannot
 * race the removal of the same slot, which takes the same stripe: a socket
 * found in the table therefore still holds the table's reference.  Lookups
 * of different numbers rarely share a stripe.
 *
 * A stripe is held for a few instructions (a slot read and a reference
 * taken, or a slot written), never across a call: a spin lock, each in its
 * own cache line.  As a pthread mutex its lock and unlock were a seventh
 * of a small message's instructions (tests/bench/run.sh path).  A child of
 * fork() starts with every stripe free: the thread that held one is not
 * there to let it go (the table is consistent at any instant: a slot is
 * written in one store).
 */
#include <config.h>

#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "rs.h"
#include "util/env.h"
#include "util/thread.h"

#define RS_PAGE_SHIFT 10
#define RS_PAGE_SIZE (1 << RS_PAGE_SHIFT)
#define RS_PAGES 1024 /* descriptors up to 2^20 */
#define RS_CONF_DIR "/etc/rdma/rsocket"
#define RS_STRIPES 64

static struct rsocket **rs_pages[RS_PAGES];
static pthread_mutex_t rs_table_mut = PTHREAD_MUTEX_INITIALIZER;
static struct rs_stripe {
	int held;
} __attribute__((aligned(64))) rs_stripes[RS_STRIPES];
static pthread_once_t rs_once = PTHREAD_ONCE_INIT;

struct rs_defaults rs_def = {
	.sqsize = 384,
	.rqsize = 384,
	.inline_size = 64,
	.iomap_size = 0,
	.mem = 1 << 17,
	.wmem = 1 << 17,
	.polling_time = 10,
	.polling_max = RS_POLLING_MAX_DEFAULT,
	.max_dgram_dest = RS_MAX_DGRAM_DEST_DEFAULT,
};

/* A value from RS_CONF_DIR/@name, then the environment's @env, if set. */
static void rs_read_tunable(const char *name, const char *env,
			    unsigned long max, void *val, size_t size)
{
	char path[128];
	unsigned long v;
	bool found = false;
	const char *s;
	FILE *f;

	snprintf(path, sizeof(path), RS_CONF_DIR "/%s", name);
	f = fopen(path, "re");
	if (f) {
		found = fscanf(f, "%lu", &v) == 1;
		fclose(f);
	}
	s = cma_env(env);
	if (s && *s) {
		char *end;

		errno = 0;
		v = strtoul(s, &end, 0);
		found = !errno && !*end;
	}
	if (!found)
		return;
	if (v > max)
		v = max;
	if (size == sizeof(uint16_t))
		*(uint16_t *)val = (uint16_t)v;
	else
		*(uint32_t *)val = (uint32_t)v;
}

static void rs_table_forking(void);
static void rs_table_forked_parent(void);
static void rs_table_forked_child(void);

static void rs_configure_once(void)
{
	rs_read_tunable("polling_time", "RDMA_RS_POLLING_TIME", 1000000,
			&rs_def.polling_time, sizeof(uint32_t));
	rs_read_tunable("polling_max", "RDMA_RS_POLLING_MAX", 1000000,
			&rs_def.polling_max, sizeof(uint32_t));
	rs_read_tunable("inline_default", "RDMA_RS_INLINE", 0xffff,
			&rs_def.inline_size, sizeof(uint16_t));
	rs_read_tunable("sqsize_default", "RDMA_RS_SQSIZE", RS_QP_MAX_SIZE,
			&rs_def.sqsize, sizeof(uint16_t));
	rs_read_tunable("rqsize_default", "RDMA_RS_RQSIZE", RS_QP_MAX_SIZE,
			&rs_def.rqsize, sizeof(uint16_t));
	rs_read_tunable("mem_default", "RDMA_RS_MEM", 1u << 30, &rs_def.mem,
			sizeof(uint32_t));
	rs_read_tunable("wmem_default", "RDMA_RS_WMEM", 1u << 30, &rs_def.wmem,
			sizeof(uint32_t));
	rs_read_tunable("iomap_size", "RDMA_RS_IOMAP_SIZE", 0x7f00,
			&rs_def.iomap_size, sizeof(uint16_t));
	rs_read_tunable("max_dgram_dest", "RDMA_RS_MAX_DGRAM_DEST", 1u << 20,
			&rs_def.max_dgram_dest, sizeof(uint32_t));
	if (!rs_def.max_dgram_dest)
		rs_def.max_dgram_dest = 1;
	if (rs_def.mem < RS_SNDLOWAT * 2)
		rs_def.mem = RS_SNDLOWAT * 2;
	if (rs_def.wmem < RS_SNDLOWAT * 2)
		rs_def.wmem = RS_SNDLOWAT * 2;
	/* Only sizes the 8-bit wire encoding can carry exactly. */
	rs_def.iomap_size = rs_iomap_size_from_wire(
		rs_iomap_size_to_wire(rs_def.iomap_size));
	rs_spin_configure();
	pthread_atfork(rs_table_forking, rs_table_forked_parent,
		       rs_table_forked_child);
}

void rs_configure(void)
{
	pthread_once(&rs_once, rs_configure_once);
}

struct rsocket *rs_alloc(const struct rsocket *inherit, int type)
{
	struct rsocket *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->type = type;
	rs->index = -1;
	rs->refs = 1;
	/* Made by the first sleeper (rs_wake_hold): none at rest. */
	rs->wake_fd = -1;
	if (inherit) {
		rs->domain = inherit->domain;
		rs->sq_size = inherit->sq_size;
		rs->rq_size = inherit->rq_size;
		rs->sq_inline = inherit->sq_inline;
		rs->sbuf_size = inherit->sbuf_size;
		rs->rbuf_size = inherit->rbuf_size;
		rs->so_opts = inherit->so_opts;
		rs->tcp_opts = inherit->tcp_opts;
		rs->keepalive_time = inherit->keepalive_time;
		rs->opt = inherit->opt;
		if (type == SOCK_STREAM)
			rs->target_iomap_size = inherit->target_iomap_size;
	} else {
		rs->sq_size = rs_def.sqsize;
		rs->rq_size = rs_def.rqsize;
		rs->sq_inline = rs_def.inline_size;
		rs->sbuf_size = rs_def.wmem;
		rs->rbuf_size = rs_def.mem;
		if (type == SOCK_STREAM)
			rs->target_iomap_size = rs_def.iomap_size;
	}
	if (type == SOCK_STREAM) {
		rs->ctrl_max_seqno = RS_QP_CTRL_SIZE;
		rs->send_olen = RS_OLAP_START_SIZE;
	} else {
		rs->udp_sock = -1;
		rs->epfd = -1;
		rs->ds_bell = -1;
	}
	rs_spin_init(&rs->spin);
	pthread_mutex_init(&rs->lock, NULL);
	pthread_mutex_init(&rs->wait_lock, NULL);
	pthread_mutex_init(&rs->map_lock, NULL);
	pthread_mutex_init(&rs->wake_lock, NULL);
	cma_cond_init_monotonic(&rs->changed);
	return rs;
}

/*
 * The last reference is gone: nobody can reach @rs any more.  The calls
 * into verbs and the CM may set errno: the caller's is kept.
 */
void rs_put_last(struct rsocket *rs)
{
	int err = errno;

	if (rs->type == SOCK_DGRAM)
		ds_free(rs);
	else
		rs_stream_free(rs);
	free(rs->route);
	/* Every sleeper held a reference and has left: no wake fd is left. */
	pthread_mutex_destroy(&rs->lock);
	pthread_mutex_destroy(&rs->wait_lock);
	pthread_mutex_destroy(&rs->map_lock);
	pthread_mutex_destroy(&rs->wake_lock);
	pthread_cond_destroy(&rs->changed);
	free(rs);
	errno = err;
}

static inline struct rsocket **rs_slot(int index, bool create)
{
	struct rsocket **page;
	int pg = index >> RS_PAGE_SHIFT;

	if (index < 0 || pg >= RS_PAGES)
		return NULL;
	page = __atomic_load_n(&rs_pages[pg], __ATOMIC_ACQUIRE);
	if (!page && create) {
		page = calloc(RS_PAGE_SIZE, sizeof(*page));
		if (!page)
			return NULL;
		__atomic_store_n(&rs_pages[pg], page, __ATOMIC_RELEASE);
	}
	return page ? &page[index & (RS_PAGE_SIZE - 1)] : NULL;
}

/* After this many turns a waiter lets the holder's CPU go (preempted). */
#define RS_STRIPE_SPINS 64

/* Out of line: the lookup's own code stays small without a contender. */
static __attribute__((noinline)) void rs_stripe_wait(int *held)
{
	unsigned int spins = 0;

	do {
		while (__atomic_load_n(held, __ATOMIC_RELAXED)) {
			if (++spins % RS_STRIPE_SPINS == 0)
				sched_yield();
		}
	} while (__atomic_exchange_n(held, 1, __ATOMIC_ACQUIRE));
}

static inline int *rs_stripe_lock(int index)
{
	int *held = &rs_stripes[(unsigned int)index % RS_STRIPES].held;

	if (__atomic_exchange_n(held, 1, __ATOMIC_ACQUIRE))
		rs_stripe_wait(held);
	return held;
}

static void rs_stripe_unlock(int *held)
{
	__atomic_store_n(held, 0, __ATOMIC_RELEASE);
}

/*
 * A fork keeps only the forking thread.  The table's mutex (a leaf: its
 * holders take nothing else that blocks) is held across the fork, so the
 * child never inherits it half way through an insert or an unpublish.  A
 * stripe may still be held by a thread looking a number up, which the
 * child does not have: the child frees them all (a slot is one store, so
 * the table is whole at any instant; that thread's reference is never
 * dropped, as for any call in flight at a fork).
 */
static void rs_table_forking(void)
{
	pthread_mutex_lock(&rs_table_mut);
}

static void rs_table_forked_parent(void)
{
	pthread_mutex_unlock(&rs_table_mut);
}

static void rs_table_forked_child(void)
{
	unsigned int i;

	for (i = 0; i < RS_STRIPES; i++)
		rs_stripe_unlock(&rs_stripes[i].held);
	pthread_mutex_unlock(&rs_table_mut);
}

int rs_insert(struct rsocket *rs, int index)
{
	struct rsocket **slot;
	int ret = 0, *held;

	pthread_mutex_lock(&rs_table_mut);
	slot = rs_slot(index, true);
	if (!slot)
		ret = cma_err(index < 0 ? EBADF : ENOMEM);
	else if (*slot)
		ret = cma_err(EBUSY);
	else {
		rs->index = index;
		held = rs_stripe_lock(index);
		__atomic_store_n(slot, rs, __ATOMIC_RELEASE);
		rs_stripe_unlock(held);
	}
	pthread_mutex_unlock(&rs_table_mut);
	return ret;
}

bool rs_unpublish(struct rsocket *rs)
{
	struct rsocket **slot;
	bool mine = false;

	pthread_mutex_lock(&rs_table_mut);
	slot = rs_slot(rs->index, false);
	if (slot) {
		int *held = rs_stripe_lock(rs->index);

		mine = *slot == rs;
		if (mine)
			__atomic_store_n(slot, NULL, __ATOMIC_RELEASE);
		rs_stripe_unlock(held);
	}
	pthread_mutex_unlock(&rs_table_mut);
	if (mine)
		rs_put(rs);
	return mine;
}

struct rsocket *rs_get(int socket)
{
	struct rsocket **slot = rs_slot(socket, false), *rs = NULL;

	if (slot) {
		int *held = rs_stripe_lock(socket);

		rs = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
		if (rs)
			rs_ref(rs);
		rs_stripe_unlock(held);
	}
	if (!rs)
		errno = EBADF;
	return rs;
}

void rs_ref(struct rsocket *rs)
{
	__atomic_add_fetch(&rs->refs, 1, __ATOMIC_RELAXED);
}

/* Make the wake fd readable for good; rs->wake_lock held. */
static void rs_wake_signal(struct rsocket *rs)
{
	uint64_t one = 1;

	/* Written at most twice, far below its limit: this cannot fail. */
	if (rs->wake_fd >= 0)
		(void)!write(rs->wake_fd, &one, sizeof(one));
}

int rs_wake_hold(struct rsocket *rs)
{
	int fd;

	pthread_mutex_lock(&rs->wake_lock);
	if (rs->wake_fd < 0) {
		/* Non-blocking: it is only ever polled, and written once. */
		rs->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		/*
		 * rclose may have looked before it existed: closing is read
		 * under the same lock rclose writes the fd under, so one of
		 * the two sees the other.
		 */
		if (__atomic_load_n(&rs->closing, __ATOMIC_ACQUIRE))
			rs_wake_signal(rs);
	}
	fd = rs->wake_fd;
	if (fd >= 0)
		rs->sleepers++;
	pthread_mutex_unlock(&rs->wake_lock);
	return fd;
}

void rs_wake_release(struct rsocket *rs)
{
	pthread_mutex_lock(&rs->wake_lock);
	/* The last sleeper closes it: a socket at rest holds none. */
	if (!--rs->sleepers) {
		close(rs->wake_fd);
		rs->wake_fd = -1;
	}
	pthread_mutex_unlock(&rs->wake_lock);
}

int rs_close_begin(struct rsocket *rs)
{
	if (!rs_unpublish(rs))
		return cma_err(EBADF);
	rs->closer = pthread_self();
	__atomic_store_n(&rs->closing, true, __ATOMIC_RELEASE);
	/*
	 * Stays readable: every present sleep returns; a later one finds
	 * closing set before it sleeps (rs_wake_hold).
	 */
	pthread_mutex_lock(&rs->wake_lock);
	rs_wake_signal(rs);
	pthread_mutex_unlock(&rs->wake_lock);
	/* and the waits that sleep on rs->changed (rs_wait_changed) */
	pthread_mutex_lock(&rs->lock);
	pthread_cond_broadcast(&rs->changed);
	pthread_mutex_unlock(&rs->lock);
	return 0;
}

bool rs_wake_idle(struct rsocket *rs)
{
	bool idle;

	pthread_mutex_lock(&rs->wake_lock);
	idle = rs->wake_fd < 0 && !rs->sleepers;
	pthread_mutex_unlock(&rs->wake_lock);
	return idle;
}

/*
 * rpoll's bells (poll.c): a call asleep on rsockets hangs one on each,
 * and whichever call makes progress on one of them rings it.
 */
void rs_ring_pollers(struct rsocket *rs)
{
	static const uint64_t one = 1;
	struct rs_poll_waiter *w;

	/* Written once until drained, far below its limit: cannot fail. */
	for (w = rs->pollers; w; w = w->next) {
		if (pthread_equal(w->bell->owner, pthread_self()))
			continue;
		if (!__atomic_exchange_n(&w->bell->rung, true,
					 __ATOMIC_ACQ_REL))
			(void)!write(w->bell->fd, &one, sizeof(one));
	}
}

void rs_poll_waiter_add(struct rsocket *rs, struct rs_poll_waiter *w)
{
	pthread_mutex_lock(&rs->lock);
	w->next = rs->pollers;
	rs->pollers = w;
	pthread_mutex_unlock(&rs->lock);
}

void rs_poll_waiter_remove(struct rsocket *rs, struct rs_poll_waiter *w)
{
	struct rs_poll_waiter **p;

	pthread_mutex_lock(&rs->lock);
	for (p = &rs->pollers; *p; p = &(*p)->next) {
		if (*p == w) {
			*p = w->next;
			break;
		}
	}
	pthread_mutex_unlock(&rs->lock);
}

/* The poll timeout for one round: bounded when there is no wake fd. */
static int rs_sleep_round(int wake_fd, int timeout, uint64_t deadline)
{
	int64_t left;

	if (wake_fd >= 0)
		return timeout;
	if (timeout < 0)
		return RS_WAKE_SLICE_MS;
	left = (int64_t)(deadline - rs_now_ms());
	if (left <= 0)
		return 0;
	return left < RS_WAKE_SLICE_MS ? (int)left : RS_WAKE_SLICE_MS;
}

/* pfd[0] and pfd[1]: the sleep's own fds (< 0: unused); pfd[2]: the wake fd. */
static int rs_sleep_poll(struct rsocket *rs, struct pollfd *pfd, int timeout)
{
	uint64_t deadline = timeout > 0 ? rs_now_ms() + (uint64_t)timeout : 0;
	int ret, round;

	for (;;) {
		if (rs_closed_under(rs))
			return cma_err(EBADF);
		round = rs_sleep_round(pfd[2].fd, timeout, deadline);
		ret = poll(pfd, 3, round);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			return -1;
		if (rs_closed_under(rs))
			return cma_err(EBADF);
		if (!ret && round != timeout &&
		    (timeout < 0 || rs_now_ms() < deadline))
			continue; /* only a slice of a longer sleep */
		if (!ret)
			return 0;
		if (pfd[0].revents || pfd[1].revents)
			return 1;
		/* Only the wake fd, and not for this thread: rclose's own. */
		if ((pfd[0].fd < 0 && pfd[1].fd < 0) || timeout == 0)
			return 0;
		/* The closer's own sleep: the wake fd stays readable. */
		pfd[2].fd = -1;
	}
}

int rs_sleep_fds_or_close(struct rsocket *rs, int fd, int fd2, short events,
			  int timeout)
{
	struct pollfd pfd[3] = {
		{.fd = fd, .events = events},
		{.fd = fd2, .events = POLLIN},
		{.fd = -1, .events = POLLIN},
	};
	int held, ret;

	/* A look that cannot sleep needs no wake fd. */
	if (timeout == 0)
		return rs_sleep_poll(rs, pfd, 0);
	/* None (out of descriptors): it sleeps in slices instead. */
	held = rs_wake_hold(rs);
	pfd[2].fd = held;
	ret = rs_sleep_poll(rs, pfd, timeout);
	if (held >= 0)
		rs_wake_release(rs);
	return ret;
}

int rs_sleep_fd_or_close(struct rsocket *rs, int fd, short events, int timeout)
{
	return rs_sleep_fds_or_close(rs, fd, -1, events, timeout);
}
