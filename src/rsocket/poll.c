// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rpoll and rselect over any mix of rsockets and ordinary descriptors.
 *
 * Readiness of an rsocket is a matter of its state and queues, which only
 * change as its completions and CM events are processed.  So rpoll first
 * makes progress on every rsocket and checks, spins for a moment (a reply
 * often arrives within microseconds; how long adapts per thread, spin.c),
 * and only then arms each rsocket's
 * completion queue and sleeps in poll() on the kernel fds behind them
 * (completion channel, CM channel, or a datagram socket's epoll fd).  A
 * wake-up that turns out to report nothing the caller asked for (a credit
 * update, say) goes back to sleep for the rest of the timeout.  Every
 * rsocket also rings the call's own eventfd (struct rs_bell) when another
 * thread's call makes progress on it: that call may have taken off the
 * socket what the sleep set would have shown (a CQ event, a datagram).
 */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cm/test_hooks.h"
#include "rs.h"
#include "util/fd_high.h"

/* A listener's next request waits: on its channel, or its shared queue. */
static bool rs_listen_ready(struct rsocket *rs)
{
	struct rsocket *l = rs_listen_target(rs);

	return rs_handoff_shared(l) ? rs_handoff_ready(l)
				    : rs_cm_event_ready(l);
}

static short rs_stream_revents(struct rsocket *rs, short events)
{
	short revents = 0;

	if (rs_state(rs) == RS_LISTENING)
		return (events & POLLIN) && (rs_acceptq_ready(rs) ||
					     rs_listen_ready(rs))
			       ? POLLIN
			       : 0;
	if (rs_state(rs) & RS_OPENING) {
		if (rs_do_connect(rs, true) && errno == EINPROGRESS)
			return 0;
	}
	if (rs_state(rs) == RS_CONNECT_ERROR)
		return (events & (POLLIN | POLLOUT)) | POLLERR;
	if (!(rs_state(rs) & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR)))
		return 0;

	pthread_mutex_lock(&rs->lock);
	rs_poll_cq(rs);
	rs_update_credits(rs);
	if ((events & POLLIN) && rs_conn_have_rdata(rs))
		revents |= POLLIN;
	if ((events & POLLOUT) && rs_conn_can_send(rs))
		revents |= POLLOUT;
	/*
	 * Like TCP after a FIN, a closed connection with data still queued
	 * is only readable: hang-up is reported once the data is read.
	 */
	if (!(rs_state(rs) & RS_CONNECTED) && !rs_have_rdata(rs))
		revents |= rs_state(rs) == RS_DISCONNECTED ? POLLHUP : POLLERR;
	else if (rs_state(rs) & RS_ERROR)
		revents |= POLLERR;
	pthread_mutex_unlock(&rs->lock);
	return revents;
}

static short rs_revents(struct rsocket *rs, short events)
{
	if (rs->type == SOCK_DGRAM)
		return ds_poll_events(rs, events);
	return rs_stream_revents(rs, events);
}

/*
 * What one rpoll works on: the caller's array, the rsocket behind each
 * entry (held: a reference each, taken once, so a concurrent rclose cannot
 * free them mid-call; NULL for ordinary descriptors), the sleep set
 * (each entry's kernel fd, then each rsocket's wake fd, then the bell)
 * and scratch room; while it sleeps, its bell and a waiter per datagram
 * socket.
 */
struct rs_pollset {
	struct pollfd *fds;
	nfds_t nfds;
	struct rsocket **rs;
	struct pollfd *kfds; /* 2 * nfds + 1: sleep fds, wake fds, bell */
	struct pollfd *scratch;
	unsigned char *sleeps_on; /* enum rs_sleep_on of each, as armed */
	struct rs_bell bell;
	struct rs_poll_waiter *waiters; /* one per rsocket entry */
};

static int rs_pollset_init(struct rs_pollset *ps, struct pollfd *fds,
			   nfds_t nfds)
{
	nfds_t i, n = nfds ? nfds : 1;

	ps->fds = fds;
	ps->nfds = nfds;
	ps->kfds = calloc(3 * n + 1, sizeof(*ps->kfds));
	ps->rs = calloc(n, sizeof(*ps->rs));
	ps->sleeps_on = calloc(n, sizeof(*ps->sleeps_on));
	if (!ps->kfds || !ps->rs || !ps->sleeps_on) {
		free(ps->kfds);
		free(ps->rs);
		free(ps->sleeps_on);
		return cma_err(ENOMEM);
	}
	ps->scratch = ps->kfds + 2 * n + 1;
	ps->kfds[2 * nfds].fd = -1;
	ps->kfds[2 * nfds].events = POLLIN;
	ps->bell.fd = -1;
	ps->bell.rung = false;
	ps->waiters = NULL;
	for (i = 0; i < nfds; i++) {
		ps->rs[i] = fds[i].fd >= 0 ? rs_get(fds[i].fd) : NULL;
		/* Taken only if the call sleeps (rs_poll_hold_wake). */
		ps->kfds[nfds + i].fd = -1;
		ps->kfds[nfds + i].events = POLLIN;
	}
	return 0;
}

static void rs_pollset_free(struct rs_pollset *ps)
{
	int err = errno;
	nfds_t i;

	for (i = 0; i < ps->nfds; i++)
		rs_put(ps->rs[i]);
	free(ps->rs);
	free(ps->kfds);
	free(ps->sleeps_on);
	errno = err;
}

/*
 * An rsocket closed while this rpoll held it: POLLNVAL, as poll(2) gives
 * for a descriptor closed before the call (Linux would keep sleeping).
 */
static bool rs_poll_closed(const struct rsocket *rs)
{
	return __atomic_load_n(&rs->closing, __ATOMIC_ACQUIRE);
}

/* Check everything once, without sleeping.  Returns the ready count. */
static int rs_poll_check(struct rs_pollset *ps)
{
	struct pollfd *fds = ps->fds, *kfds = ps->scratch;
	nfds_t i, nk = 0;
	int cnt = 0;

	for (i = 0; i < ps->nfds; i++) {
		struct rsocket *rs = ps->rs[i];

		if (rs) {
			/*
			 * Looked at again after: a close that raced the look
			 * (its shutdown makes the socket readable) is seen
			 * then, since it marks the socket before it changes
			 * anything under rs->lock.
			 */
			fds[i].revents = rs_revents(rs, fds[i].events);
			if (rs_poll_closed(rs))
				fds[i].revents = POLLNVAL;
			if (fds[i].revents)
				cnt++;
		} else {
			fds[i].revents = 0;
			kfds[nk] = fds[i];
			kfds[nk].revents = 0;
			nk++;
		}
	}
	if (nk && poll(kfds, nk, 0) > 0) {
		for (i = 0, nk = 0; i < ps->nfds; i++) {
			if (ps->rs[i])
				continue;
			fds[i].revents = kfds[nk++].revents;
			if (fds[i].revents)
				cnt++;
		}
	}
	return cnt;
}

/*
 * What an rsocket's sleep waits on follows its state: its CQ once
 * connected, its CM channel while it listens or opens (a listener a fork
 * shared: the handoff's), a datagram socket's own.
 */
enum rs_sleep_on {
	RS_SLEEP_NOTHING,
	RS_SLEEP_DGRAM,
	RS_SLEEP_CQ,
	RS_SLEEP_HANDOFF,
	RS_SLEEP_CM,
};

static enum rs_sleep_on rs_sleep_on(struct rsocket *rs)
{
	int state = rs_state(rs);

	if (rs_poll_closed(rs))
		return RS_SLEEP_NOTHING;
	if (rs->type == SOCK_DGRAM)
		return RS_SLEEP_DGRAM;
	if (state & (RS_CONNECTED | RS_ERROR) || state == RS_DISCONNECTED)
		return rs->comp_channel ? RS_SLEEP_CQ : RS_SLEEP_NOTHING;
	if (state == RS_LISTENING && rs_handoff_shared(rs_listen_target(rs)))
		return RS_SLEEP_HANDOFF;
	if ((state == RS_LISTENING || state & RS_OPENING) && rs->channel)
		return RS_SLEEP_CM;
	return RS_SLEEP_NOTHING;
}

/* The kernel fd an rsocket sleeps on (@on), with its CQ armed.  -1: none. */
static int rs_sleep_fd(struct rsocket *rs, enum rs_sleep_on on)
{
	int fd;

	switch (on) {
	case RS_SLEEP_DGRAM:
		return ds_wait_fd(rs);
	case RS_SLEEP_CQ:
		pthread_mutex_lock(&rs->lock);
		/* Detached (no CQ): readable at once, nothing to sleep on. */
		fd = rs->cq ? rs->comp_channel->fd : -1;
		rs_arm_cq(rs);
		pthread_mutex_unlock(&rs->lock);
		return fd;
	case RS_SLEEP_HANDOFF:
		return rs_handoff_sleep_fd(rs_listen_target(rs));
	case RS_SLEEP_CM:
		return rs->channel->fd;
	default:
		return -1;
	}
}

static void rs_consume(struct rsocket *rs)
{
	if (rs->type == SOCK_DGRAM)
		ds_consume_events(rs);
	else if (rs_state(rs) & (RS_CONNECTED | RS_ERROR | RS_DISCONNECTED))
		rs_consume_cq_event(rs);
}

/*
 * rpoll's spin window adapts per thread: one rpoll loop usually serves
 * the same sockets call after call.
 */
static __thread struct rs_spin rs_poll_spin;
static __thread bool rs_poll_spin_set;

static struct rs_spin *rs_poll_spin_state(void)
{
	if (!rs_poll_spin_set) {
		rs_spin_init(&rs_poll_spin);
		rs_poll_spin_set = true;
	}
	return &rs_poll_spin;
}

/* Spin within the window (and the timeout): > 0 ready, 0 go to sleep. */
static int rs_poll_spin_check(struct rs_pollset *ps, struct rs_spin_wait *w,
			      int timeout)
{
	int ret;

	if (timeout > 0 && w->window_us > (uint32_t)timeout * 1000)
		w->window_us = (uint32_t)timeout * 1000;
	while (rs_spin_more(w)) {
		ret = rs_poll_check(ps);
		if (ret)
			return ret;
	}
	return 0;
}

/* Fill the sleep set: each rsocket's kernel fd, its CQ armed. */
static void rs_poll_arm(struct rs_pollset *ps)
{
	struct pollfd *fds = ps->fds, *kfds = ps->kfds;
	nfds_t i;

	for (i = 0; i < ps->nfds; i++) {
		if (ps->rs[i]) {
			ps->sleeps_on[i] = rs_sleep_on(ps->rs[i]);
			kfds[i].fd = rs_sleep_fd(ps->rs[i], ps->sleeps_on[i]);
			kfds[i].events = POLLIN;
		} else {
			kfds[i] = fds[i];
		}
		kfds[i].revents = 0;
		kfds[ps->nfds + i].revents = 0;
	}
	kfds[2 * ps->nfds].revents = 0;
}

/*
 * Whether an rsocket's state moved on since rs_poll_arm, so that it would
 * sleep on another fd: the look after arming can end a connect (its
 * ESTABLISHED read from the CM channel the sleep set holds), and a sleep
 * on that drained channel would miss the data that comes to the CQ.
 */
static bool rs_poll_moved_on(struct rs_pollset *ps)
{
	nfds_t i;

	for (i = 0; i < ps->nfds; i++)
		if (ps->rs[i] && ps->sleeps_on[i] != rs_sleep_on(ps->rs[i]))
			return true;
	return false;
}

/* Test hook: called between arming and the look after it (test_hooks.h). */
static void (*rs_poll_armed_hook)(void);

void rs_poll_set_armed_hook(void (*fn)(void))
{
	rs_poll_armed_hook = fn;
}

/*
 * Take each rsocket's wake fd for the sleeps to come.  false: one could
 * not be had (no descriptor left), so sleeps must be short and look at
 * the closing flags themselves.
 */
static bool rs_poll_hold_wake(struct rs_pollset *ps)
{
	bool all = true;
	nfds_t i;

	for (i = 0; i < ps->nfds; i++) {
		if (!ps->rs[i])
			continue;
		ps->kfds[ps->nfds + i].fd = rs_wake_hold(ps->rs[i]);
		if (ps->kfds[ps->nfds + i].fd < 0)
			all = false;
	}
	return all;
}

/*
 * Hang the call's bell on each rsocket for the sleeps to come.  false:
 * none could be had, so sleeps must be short.
 */
static bool rs_poll_hold_bell(struct rs_pollset *ps)
{
	nfds_t i;

	for (i = 0; i < ps->nfds; i++) {
		if (ps->rs[i])
			break;
	}
	if (i == ps->nfds)
		return true;
	ps->waiters = calloc(ps->nfds, sizeof(*ps->waiters));
	ps->bell.owner = pthread_self();
	ps->bell.fd = cma_fd_move_high(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
				       fcntl, close);
	if (!ps->waiters || ps->bell.fd < 0)
		return false;
	for (; i < ps->nfds; i++) {
		if (!ps->rs[i])
			continue;
		ps->waiters[i].bell = &ps->bell;
		rs_poll_waiter_add(ps->rs[i], &ps->waiters[i]);
	}
	ps->kfds[2 * ps->nfds].fd = ps->bell.fd;
	return true;
}

/* Drained before the look that follows, then rung again by any change. */
static void rs_poll_drain_bell(struct rs_pollset *ps)
{
	uint64_t n;

	if (read(ps->bell.fd, &n, sizeof(n)) < 0)
		return; /* nothing to drain: leave it as it is */
	__atomic_store_n(&ps->bell.rung, false, __ATOMIC_RELEASE);
}

static void rs_poll_release_bell(struct rs_pollset *ps)
{
	int err = errno;
	nfds_t i;

	for (i = 0; ps->waiters && ps->bell.fd >= 0 && i < ps->nfds; i++) {
		if (ps->waiters[i].bell)
			rs_poll_waiter_remove(ps->rs[i], &ps->waiters[i]);
	}
	if (ps->bell.fd >= 0)
		close(ps->bell.fd);
	free(ps->waiters);
	ps->bell.fd = -1;
	ps->waiters = NULL;
	ps->kfds[2 * ps->nfds].fd = -1;
	errno = err;
}

/* Give back what rs_poll_hold_wake took: a socket at rest holds none. */
static void rs_poll_release_wake(struct rs_pollset *ps)
{
	int err = errno;
	nfds_t i;

	for (i = 0; i < ps->nfds; i++) {
		if (ps->kfds[ps->nfds + i].fd >= 0)
			rs_wake_release(ps->rs[i]);
		ps->kfds[ps->nfds + i].fd = -1;
	}
	errno = err;
}

static int rs_poll_wait(struct rs_pollset *ps, int timeout)
{
	int64_t deadline = timeout > 0 ? (int64_t)rs_now_ms() + timeout : 0;
	struct rs_spin_wait w;
	bool sliced;
	nfds_t i;
	int ret;

	rs_spin_begin(rs_poll_spin_state(), &w);
	ret = rs_poll_spin_check(ps, &w, timeout);
	if (ret)
		goto waited;

	rs_spin_sleeping(&w);
	sliced = !rs_poll_hold_wake(ps);
	if (!rs_poll_hold_bell(ps))
		sliced = true;
	for (;;) {
		int wait;

		rs_poll_arm(ps);
		if (rs_poll_armed_hook)
			rs_poll_armed_hook();
		/* Arming may have found work: look again before sleeping. */
		ret = rs_poll_check(ps);
		if (ret)
			goto waited;
		if (rs_poll_moved_on(ps))
			continue; /* its sleep fd is another now: arm again */
		wait = timeout < 0 ? -1
				   : (int)(deadline - (int64_t)rs_now_ms());
		if (timeout > 0 && wait <= 0) {
			ret = 0;
			goto waited;
		}
		if (sliced && (wait < 0 || wait > RS_WAKE_SLICE_MS))
			wait = RS_WAKE_SLICE_MS;
		/* The wake fds end the sleep when an rsocket is closed. */
		ret = poll(ps->kfds, 2 * ps->nfds + 1, wait);
		if (ret < 0 || (!ret && !sliced))
			goto waited;
		if (ps->kfds[2 * ps->nfds].revents)
			rs_poll_drain_bell(ps);
		for (i = 0; i < ps->nfds; i++) {
			if (ps->rs[i] && ps->kfds[i].revents)
				rs_consume(ps->rs[i]);
		}
		ret = rs_poll_check(ps);
		if (ret)
			goto waited;
	}
waited:
	rs_poll_release_bell(ps);
	rs_poll_release_wake(ps);
	rs_spin_end(rs_poll_spin_state(), &w);
	return ret;
}

CMA_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	struct rs_pollset ps;
	int ret;

	if (!fds && nfds)
		return cma_err(EFAULT);
	rs_configure();
	if (rs_pollset_init(&ps, fds, nfds))
		return -1;
	ret = rs_poll_check(&ps);
	if (!ret && timeout)
		ret = rs_poll_wait(&ps, timeout);
	rs_pollset_free(&ps);
	return ret;
}

CMA_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds,
		       fd_set *exceptfds, struct timeval *timeout)
{
	struct pollfd *fds;
	int fd, n = 0, ret, cnt = 0, i;
	int ms;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return cma_err(EINVAL);
	if (timeout && (timeout->tv_sec < 0 || timeout->tv_usec < 0))
		return cma_err(EINVAL);
	fds = calloc(nfds ? nfds : 1, sizeof(*fds));
	if (!fds)
		return cma_err(ENOMEM);
	for (fd = 0; fd < nfds; fd++) {
		short events = 0;
		bool want = false;

		if (readfds && FD_ISSET(fd, readfds)) {
			events |= POLLIN;
			want = true;
		}
		if (writefds && FD_ISSET(fd, writefds)) {
			events |= POLLOUT;
			want = true;
		}
		if (exceptfds && FD_ISSET(fd, exceptfds))
			want = true;
		if (want) {
			fds[n].fd = fd;
			fds[n].events = events;
			n++;
		}
	}
	ms = !timeout ? -1
		      : (int)(timeout->tv_sec * 1000 +
			      (timeout->tv_usec + 999) / 1000);
	ret = rpoll(fds, (nfds_t)n, ms);
	if (readfds)
		FD_ZERO(readfds);
	if (writefds)
		FD_ZERO(writefds);
	if (exceptfds)
		FD_ZERO(exceptfds);
	if (ret > 0) {
		for (i = 0; i < n; i++) {
			short r = fds[i].revents;

			if (readfds && (r & (POLLIN | POLLHUP | POLLERR)) &&
			    (fds[i].events & POLLIN)) {
				FD_SET(fds[i].fd, readfds);
				cnt++;
			}
			if (writefds && (r & (POLLOUT | POLLERR)) &&
			    (fds[i].events & POLLOUT)) {
				FD_SET(fds[i].fd, writefds);
				cnt++;
			}
			if (exceptfds && (r & POLLPRI)) {
				FD_SET(fds[i].fd, exceptfds);
				cnt++;
			}
		}
		ret = cnt;
	}
	free(fds);
	return ret;
}
