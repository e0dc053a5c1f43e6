// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * A blocked stream call's wait for its CQ: poll, spin (spin.c), then
 * sleep on the completion channel.  One wait at a time sleeps on the
 * channel with the CQ armed; the others follow it on rs->changed, which
 * every processed completion and every waking sleeper broadcast.
 * Reposting consumed receives (stream.c) is done here, when there is
 * nothing else to do.
 */
#include <limits.h>
#include <poll.h>
#include <time.h>

#include "rs.h"

/*
 * Take the CQ event the channel holds, if any: one thread at a time
 * (wait_lock), without blocking (the channel is non-blocking).
 */
static void rs_take_cq_event(struct rsocket *rs)
{
	struct ibv_cq *cq;
	void *ctx;

	pthread_mutex_lock(&rs->wait_lock);
	/* No CQ: detached meanwhile (quiesce.c), nothing more will come. */
	if (rs->cq && !ibv_get_cq_event(rs->comp_channel, &cq, &ctx)) {
		__atomic_store_n(&rs->cq_armed, false, __ATOMIC_RELEASE);
		if (++rs->unacked_events >= 64) {
			ibv_ack_cq_events(rs->cq, rs->unacked_events);
			rs->unacked_events = 0;
		}
	}
	pthread_mutex_unlock(&rs->wait_lock);
}

/*
 * Sleep until the CQ's next event (at most @timeout ms), or until another
 * thread closes the socket (then -1/EBADF).  rs->lock is not held.  The
 * channel lives as long as the socket (rs_stream_free).
 */
static int rs_sleep_on_cq(struct rsocket *rs, int timeout)
{
	int ret;

	if (rs_closed_under(rs))
		return cma_err(EBADF);
	ret = rs_sleep_fd_or_close(rs, rs->comp_channel->fd, POLLIN, timeout);
	if (ret == 1)
		rs_take_cq_event(rs);
	return ret < 0 ? -1 : 0;
}

/*
 * For a thread that slept on the channel outside rs_wait_until (rpoll,
 * the iWARP close): the event is the CQ sleeper's while there is one,
 * which would otherwise sleep on with its CQ no longer armed.
 */
void rs_consume_cq_event(struct rsocket *rs)
{
	if (!rs->comp_channel)
		return;
	pthread_mutex_lock(&rs->lock);
	if (!rs->cq_sleeper)
		rs_take_cq_event(rs);
	pthread_mutex_unlock(&rs->lock);
}

int rs_wait_changed(struct rsocket *rs, uint64_t deadline_ms)
{
	struct timespec until = {.tv_sec = (time_t)(deadline_ms / 1000),
				 .tv_nsec =
					 (long)(deadline_ms % 1000) * 1000000};

	if (rs_closed_under(rs))
		return cma_err(EBADF);
	if (deadline_ms && rs_now_ms() >= deadline_ms)
		return cma_err(ETIMEDOUT);
	/* Counted, so that completions no one follows broadcast nothing. */
	rs->followers++;
	if (!deadline_ms)
		pthread_cond_wait(&rs->changed, &rs->lock);
	else
		pthread_cond_timedwait(&rs->changed, &rs->lock, &until);
	rs->followers--;
	return 0;
}

/* Until no call owns @sides (rs_side_enter); not cut short by a close. */
void rs_side_wait(struct rsocket *rs, unsigned int sides)
{
	while (rs->sides & sides) {
		rs->followers++;
		pthread_cond_wait(&rs->changed, &rs->lock);
		rs->followers--;
	}
}

/*
 * Ask for an event on the CQ's next completion, unless already asked.
 * True when it armed now: what completed before raises no event, so the
 * caller must poll once more before it sleeps.
 */
bool rs_arm_cq_once(struct rsocket *rs)
{
	if (__atomic_load_n(&rs->cq_armed, __ATOMIC_ACQUIRE))
		return false;
	ibv_req_notify_cq(rs->cq, 0);
	__atomic_store_n(&rs->cq_armed, true, __ATOMIC_RELEASE);
	return true;
}

bool rs_arm_cq(struct rsocket *rs)
{
	if (!rs->cq)
		return false;
	rs_arm_cq_once(rs);
	/* A completion may have landed before the CQ was armed. */
	rs_poll_cq(rs);
	rs_update_credits(rs);
	rs_flush_recvs(rs); /* the caller sleeps next */
	return false;
}

/*
 * One wait at a time sleeps on the CQ channel (the sleeper: its CQ armed,
 * only it takes the event); the others wait on rs->changed, broadcast
 * whenever completions are processed and when the sleeper wakes, so that
 * a wait whose completion another thread processed (its CQ event gone
 * with it) looks again instead of sleeping on.  rs->lock held, let go
 * meanwhile.
 */
static int rs_sleep_or_follow(struct rsocket *rs, int left,
			      uint64_t deadline_ms)
{
	int ret;

	if (rs->cq_sleeper)
		return rs_wait_changed(rs, deadline_ms);
	rs->cq_sleeper = true;
	pthread_mutex_unlock(&rs->lock);
	ret = rs_sleep_on_cq(rs, left);
	pthread_mutex_lock(&rs->lock);
	rs->cq_sleeper = false;
	pthread_cond_broadcast(&rs->changed); /* another may sleep now */
	return ret;
}

/* Poll once: true when the wait is over (@ready, or the connection ended). */
static bool rs_wait_done(struct rsocket *rs, bool (*ready)(struct rsocket *))
{
	rs_poll_cq(rs);
	rs_update_credits(rs);
	if (ready(rs))
		return true;
	/* @ready's callers check the state */
	return rs_state(rs) & (RS_ERROR | RS_DISCONNECTED) &&
	       !(rs_state(rs) & RS_CONNECTED);
}

/* The sleep until @deadline_ms (0: none, -1), or 0 once it has passed. */
static int rs_wait_left(uint64_t deadline_ms)
{
	uint64_t now;

	if (!deadline_ms)
		return -1;
	now = rs_now_ms();
	if (now >= deadline_ms)
		return 0;
	return deadline_ms - now > INT_MAX ? INT_MAX : (int)(deadline_ms - now);
}

/*
 * Wait until @ready, the connection's end, or @deadline_ms on the
 * monotonic clock (0: no deadline; then ETIMEDOUT).  Called and returns
 * with rs->lock held.
 */
int rs_wait_until(struct rsocket *rs, bool nonblock,
		  bool (*ready)(struct rsocket *), uint64_t deadline_ms)
{
	struct rs_spin_wait w;
	int ret = 0, left;

	/*
	 * A close that came before this call slept (its disconnect ends the
	 * wait at once) still fails it with EBADF, as it fails a sleeper.
	 */
	if (rs_wait_done(rs, ready))
		return rs_closed_under(rs) ? cma_err(EBADF) : 0;
	/* Nothing to do until something comes: a time to repost. */
	rs_repost_batch(rs);
	if (nonblock)
		return cma_err(EWOULDBLOCK);
	if (rs_closed_under(rs))
		return cma_err(EBADF);
	rs_spin_begin(&rs->spin, &w);
	do {
		if (rs_spin_more(&w)) {
			/* Let another thread of this socket in meanwhile. */
			pthread_mutex_unlock(&rs->lock);
			pthread_mutex_lock(&rs->lock);
			continue;
		}
		if (rs_arm_cq_once(rs))
			continue;
		left = rs_wait_left(deadline_ms);
		if (!left) {
			ret = cma_err(ETIMEDOUT);
			break;
		}
		rs_flush_recvs(rs); /* the caller sleeps next */
		rs_spin_sleeping(&w);
		ret = rs_sleep_or_follow(rs, left, deadline_ms);
		if (ret)
			break;
	} while (!rs_wait_done(rs, ready));
	rs_spin_end(&rs->spin, &w);
	/* Woken by the close's own disconnect: EBADF, as any sleeper. */
	if (!ret && rs_closed_under(rs))
		ret = cma_err(EBADF);
	return ret;
}

int rs_wait_locked(struct rsocket *rs, bool nonblock,
		   bool (*ready)(struct rsocket *))
{
	return rs_wait_until(rs, nonblock, ready, 0);
}
