// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Keepalive for stream rsockets (the design is in opts.h).
 *
 * One detached thread, started by the first socket that turns SO_KEEPALIVE
 * on and ending when the list is empty again, sleeps on a condition
 * variable until the earliest socket's next look: no descriptor, no thread
 * per socket.  A look polls the socket's CQ (so acknowledgements and
 * receives count even when the application is not in the library), then
 * applies rs_ka_decide.  Lock order: ka_mut, then rs->lock.
 */
#include <stdio.h>
#include <time.h>

#include "rs.h"
#include "util/thread.h"

static pthread_mutex_t ka_mut = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ka_cond;
static pthread_once_t ka_once = PTHREAD_ONCE_INIT;
static struct rsocket *ka_list;
static bool ka_running;

enum rs_ka_action rs_ka_decide(const struct rs_ka_params *p, struct rs_ka *ka,
			       uint64_t now_ms)
{
	uint64_t idle_end = ka->heard_ms + (uint64_t)p->idle * 1000;

	/* Heard since the last probe went out: the peer answered. */
	if (ka->probes && ka->heard_ms >= ka->probe_ms)
		ka->probes = 0;
	if (now_ms < idle_end) {
		/* (an unanswered probe left at idle_end or later) */
		ka->due_ms = idle_end;
		return RS_KA_WAIT;
	}
	if (ka->probes >= p->cnt)
		return RS_KA_DEAD;
	ka->probes++;
	ka->probe_ms = now_ms;
	ka->due_ms = now_ms + (uint64_t)p->intvl * 1000;
	return RS_KA_PROBE;
}

unsigned int rs_ka_sysctl(const char *name, unsigned int fallback)
{
	char path[96];
	unsigned int v;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/%s", name);
	f = fopen(path, "re");
	if (!f)
		return fallback;
	if (fscanf(f, "%u", &v) != 1 || !v)
		v = fallback;
	fclose(f);
	return v;
}

/*
 * The one clock of every keepalive time: the coarse monotonic clock, cheap
 * enough for the completion path.  (Mixing it with the precise clock
 * would date an acknowledgement before the probe it answers.)
 */
static uint64_t rs_ka_coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Under rs->lock, from the completion path: cheap (a coarse clock read). */
void rs_ka_heard_now(struct rsocket *rs)
{
	rs->ka.heard_ms = rs_ka_coarse_ms();
}

/* The times may change under the thread's feet (rsetsockopt): atomics. */
static unsigned int rs_ka_load(const unsigned int *v, const char *sysctl,
			       unsigned int fallback)
{
	unsigned int x = __atomic_load_n(v, __ATOMIC_RELAXED);

	return x ? x : rs_ka_sysctl(sysctl, fallback);
}

static void rs_ka_params(const struct rsocket *rs, struct rs_ka_params *p)
{
	p->idle = rs_ka_load(&rs->keepalive_time, "tcp_keepalive_time", 7200);
	p->intvl = rs_ka_load(&rs->opt.keepintvl, "tcp_keepalive_intvl", 75);
	p->cnt = rs_ka_load(&rs->opt.keepcnt, "tcp_keepalive_probes", 9);
}

/* The peer is gone: fail the socket and wake whoever waits on it. */
static void rs_ka_kill(struct rsocket *rs)
{
	rs->state = RS_ERROR;
	rs->err = ETIMEDOUT;
	rs_flush_qp(rs);
}

/* One look at @rs, ka_mut held; false when it leaves the list. */
static bool rs_ka_look(struct rsocket *rs, uint64_t now)
{
	struct rs_ka_params p;
	bool keep = true;

	pthread_mutex_lock(&rs->lock);
	if (!(rs->state & RS_CONNECTED) || !rs->cq ||
	    (rs->quiesce & RS_QSC_SENT)) {
		/*
		 * Not connected yet: look each second, the idle time starting
		 * with the connection.  A listener's accepted sockets start
		 * their own timers; one that has ended needs none.  A
		 * quiesced one sends nothing more (quiesce.c) and is not
		 * probed.
		 */
		rs->ka.heard_ms = now;
		rs->ka.probes = 0;
		rs->ka.due_ms = now + 1000;
		keep = !(rs->state &
			 (RS_ERROR | RS_DISCONNECTED | RS_CONNECT_ERROR)) &&
		       rs->state != RS_LISTENING;
		goto out;
	}
	rs_poll_cq(rs);
	rs_flush_recvs(rs); /* the application may be asleep */
	rs_ka_params(rs, &p);
	switch (rs_ka_decide(&p, &rs->ka, now)) {
	case RS_KA_WAIT:
		break;
	case RS_KA_PROBE:
		rs_send_keepalive(rs);
		break;
	case RS_KA_DEAD:
		rs_ka_kill(rs);
		keep = false;
		break;
	}
out:
	pthread_mutex_unlock(&rs->lock);
	return keep;
}

/* The coarse clock trails the precise one by up to a tick: wait a little past. */
static void rs_ka_wait_until(uint64_t due_ms)
{
	struct timespec ts;

	due_ms += 10;
	ts.tv_sec = (time_t)(due_ms / 1000);
	ts.tv_nsec = (long)(due_ms % 1000) * 1000000;
	pthread_cond_timedwait(&ka_cond, &ka_mut, &ts);
}

static void *rs_ka_run(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&ka_mut);
	while (ka_list) {
		uint64_t now = rs_ka_coarse_ms(), next = UINT64_MAX;
		struct rsocket **link = &ka_list;

		while (*link) {
			struct rsocket *rs = *link;

			if (rs->ka.due_ms <= now && !rs_ka_look(rs, now)) {
				*link = rs->ka.next;
				__atomic_store_n(&rs->ka.listed, false,
						 __ATOMIC_RELAXED);
				continue;
			}
			if (rs->ka.due_ms < next)
				next = rs->ka.due_ms;
			link = &rs->ka.next;
		}
		if (ka_list)
			rs_ka_wait_until(next);
	}
	ka_running = false;
	pthread_mutex_unlock(&ka_mut);
	return NULL;
}

/*
 * fork() waits until the keepalive thread sleeps (ka_mut is its own while
 * it looks at sockets under their locks): the child inherits none of those
 * locks held by a thread it does not have.
 */
static void rs_ka_atfork_prepare(void)
{
	pthread_mutex_lock(&ka_mut);
}

static void rs_ka_atfork_parent(void)
{
	pthread_mutex_unlock(&ka_mut);
}

/*
 * A forked child has no keepalive thread and none of the parent's timers.
 * Nor the parent's sleeper on ka_cond, which the copied condition variable
 * still counts: a signal waits for that sleeper to take its wake-up, for
 * ever in the child, so the child starts with a fresh one.
 */
static void rs_ka_atfork_child(void)
{
	pthread_mutex_init(&ka_mut, NULL);
	cma_cond_init_monotonic(&ka_cond); /* rs_ka_coarse_ms */
	ka_list = NULL;
	ka_running = false;
}

static void rs_ka_init(void)
{
	cma_cond_init_monotonic(&ka_cond); /* rs_ka_coarse_ms */
	pthread_atfork(rs_ka_atfork_prepare, rs_ka_atfork_parent,
		       rs_ka_atfork_child);
}

/* Under ka_mut. */
static int rs_ka_spawn(void)
{
	int ret = cma_thread_detached(rs_ka_run);

	if (ret)
		return cma_err(ret);
	ka_running = true;
	return 0;
}

/* Never with rs->lock held (lock order). */
int rs_ka_start(struct rsocket *rs)
{
	int ret = 0;

	if (rs->type != SOCK_STREAM)
		return 0;
	pthread_once(&ka_once, rs_ka_init);
	pthread_mutex_lock(&ka_mut);
	if (!rs->ka.listed) {
		/* Not listed: neither the thread nor rs_ka_heard touch it. */
		rs->ka.heard_ms = rs_ka_coarse_ms();
		rs->ka.probes = 0;
		rs->ka.due_ms = 0; /* looked at once at once, then paced */
		rs->ka.next = ka_list;
		ka_list = rs;
		__atomic_store_n(&rs->ka.listed, true, __ATOMIC_RELAXED);
	}
	if (!ka_running)
		ret = rs_ka_spawn();
	if (ret) {
		ka_list = rs->ka.next;
		__atomic_store_n(&rs->ka.listed, false, __ATOMIC_RELAXED);
	}
	pthread_cond_signal(&ka_cond);
	pthread_mutex_unlock(&ka_mut);
	return ret;
}

void rs_ka_stop(struct rsocket *rs)
{
	struct rsocket **link;

	if (!__atomic_load_n(&rs->ka.listed, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&ka_mut);
	for (link = &ka_list; *link; link = &(*link)->ka.next) {
		if (*link == rs) {
			*link = rs->ka.next;
			break;
		}
	}
	__atomic_store_n(&rs->ka.listed, false, __ATOMIC_RELAXED);
	pthread_cond_signal(&ka_cond);
	pthread_mutex_unlock(&ka_mut);
}
