// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Noticing a peer that ended without a word (BUGS.md rsocket-dead-peer).
 *
 * A stream rsocket learns of its peer's end from the peer's DISCONNECT
 * message.  A peer that exits, crashes, or closes before it ever spoke
 * sends none: only the CM says so (RDMA_CM_EVENT_DISCONNECTED on the
 * socket's channel), and a connected socket sleeps on its completion
 * channel, not there.  A TCP reader would get end-of-stream.
 *
 * So one thread per process watches the CM channels of connected stream
 * sockets: one epoll set, each channel's fd in it once (one-shot, armed
 * again after each look), no descriptor per socket.  Once a connection is
 * made nobody else reads its channel, so the thread may: when the CM
 * reports the end, it marks the socket as the peer's DISCONNECT message
 * would and moves the QP to the error state.  The flushed receives raise
 * a completion event, which wakes every thread asleep on the socket (in
 * rrecv, rpoll or an epoll set alike), as the keepalive's verdict does
 * (keepalive.c).  The thread starts with the first watched socket and
 * ends a while after the last has gone.
 *
 * A socket leaves the set when it is freed (rs_stream_free), under
 * pw_mut, which the thread holds while it looks at sockets: an event it
 * fetched for a socket freed meanwhile is recognised (the socket is no
 * longer listed) and dropped.  Lock order: pw_mut, then rs->lock.
 */
#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rs.h"
#include "util/fd_high.h"
#include "util/thread.h"

#define RS_PW_BATCH 16
#define RS_PW_LINGER_MS 2000

static pthread_mutex_t pw_mut = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t pw_once = PTHREAD_ONCE_INIT;
static struct cma_list pw_list; /* watched sockets (pw_node) */
static int pw_epfd = -1;
static int pw_wakefd = -1; /* in the set: the last socket left */
static bool pw_running;
/* Sockets that left the set: events fetched before then may be stale. */
static unsigned long pw_left;

static bool rs_pw_listed(const struct rsocket *rs)
{
	const struct cma_list_node *n;

	for (n = pw_list.first; n; n = n->next)
		if (n == &rs->pw_node)
			return true;
	return false;
}

/* pw_mut held: out of the set and the list. */
static void rs_pw_drop(struct rsocket *rs)
{
	epoll_ctl(pw_epfd, EPOLL_CTL_DEL, rs->channel->fd, NULL);
	cma_list_unlink(&pw_list, &rs->pw_node);
	/* Released: a closer that sees it may close the channel at once. */
	__atomic_store_n(&rs->pw_watched, false, __ATOMIC_RELEASE);
	pw_left++;
	if (!pw_list.len) {
		uint64_t one = 1;

		if (write(pw_wakefd, &one, sizeof(one)) < 0) {
			/* a counter that cannot overflow here */
		}
	}
}

/* The peer ended its side: as its DISCONNECT message would (stream.c). */
static void rs_pw_peer_gone(struct rsocket *rs)
{
	pthread_mutex_lock(&rs->lock);
	rs_poll_cq(rs); /* what arrived before the end is read first */
	rs->peer_closed = true;
	if (rs_state(rs) & RS_CONNECTED)
		rs_set_state(rs, RS_DISCONNECTED);
	rs_flush_qp(rs);
	pthread_mutex_unlock(&rs->lock);
}

/*
 * pw_mut held: the id follows the process's new credentials (creds.c)
 * onto a file opened now, at the same descriptor number; a watched
 * socket's registration was the old file's, and is made for the new one.
 */
static int rs_pw_follow_creds(struct rsocket *rs)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT,
				 .data.ptr = rs};
	bool watched = rs->pw_watched;
	int ret;

	if (watched) /* while the number still names the old file */
		epoll_ctl(pw_epfd, EPOLL_CTL_DEL, rs->channel->fd, NULL);
	ret = cma_follow_creds(rs->channel, rs->cm_id);
	if (watched && epoll_ctl(pw_epfd, EPOLL_CTL_ADD, rs->channel->fd, &ev))
		rs_pw_drop(rs);
	return ret;
}

int rs_follow_creds(struct rsocket *rs)
{
	int ret;

	if (errno != EACCES || !rs->channel || !rs->cm_id)
		return -1;
	pthread_mutex_lock(&pw_mut);
	ret = rs_pw_follow_creds(rs);
	pthread_mutex_unlock(&pw_mut);
	if (ret)
		errno = EACCES; /* the call's own failure, not the move's */
	return ret;
}

/* pw_mut held: read what the CM reported; watch on unless it is the end. */
static void rs_pw_look(struct rsocket *rs)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT,
				 .data.ptr = rs};
	struct rdma_cm_event *event;
	bool ended = false, followed = false;

again:
	/* The channel is non-blocking (rs_cm_channel): EAGAIN when empty. */
	while (!rdma_get_cm_event(rs->channel, &event)) {
		if (event->event == RDMA_CM_EVENT_DISCONNECTED ||
		    event->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
			ended = true;
		rdma_ack_cm_event(event);
	}
	/* Refused since the process changed credentials: once, follow. */
	if (errno == EACCES && !followed) {
		followed = true;
		if (!rs_pw_follow_creds(rs) && rs->pw_watched)
			goto again;
	}
	/*
	 * Anything but an empty channel: what is waiting there would wake
	 * the watch at once, for ever.  The socket goes unwatched (its
	 * reader learns of a silent end by sending, as before the watch).
	 */
	if (!ended && errno != EAGAIN && errno != EWOULDBLOCK) {
		if (rs->pw_watched)
			rs_pw_drop(rs);
		return;
	}
	if (ended) {
		rs_pw_peer_gone(rs);
		rs_pw_drop(rs);
	} else {
		epoll_ctl(pw_epfd, EPOLL_CTL_MOD, rs->channel->fd, &ev);
	}
}

static void *rs_pw_run(void *arg)
{
	struct epoll_event ev[RS_PW_BATCH];
	unsigned long left;
	uint64_t count;
	int i, n;

	(void)arg;
	pthread_mutex_lock(&pw_mut);
	for (;;) {
		/*
		 * With nothing to watch, a while more before it ends: a
		 * program that connects and closes one socket at a time
		 * does not pay for a thread per connection.
		 */
		int timeout = pw_list.len ? -1 : RS_PW_LINGER_MS;

		left = pw_left;
		pthread_mutex_unlock(&pw_mut);
		n = epoll_wait(pw_epfd, ev, RS_PW_BATCH, timeout);
		pthread_mutex_lock(&pw_mut);
		if (!n && !pw_list.len)
			break;
		for (i = 0; i < n; i++) {
			struct rsocket *rs = ev[i].data.ptr;

			if (!rs) {
				if (read(pw_wakefd, &count, sizeof(count)) <
				    0) {
					/* already read: nothing to do */
				}
				continue;
			}
			/* A socket that left since the wait began may be gone. */
			if (left != pw_left && !rs_pw_listed(rs))
				continue;
			rs_pw_look(rs);
		}
	}
	pw_running = false;
	pthread_mutex_unlock(&pw_mut);
	return NULL;
}

/*
 * fork() waits until the thread sleeps (pw_mut is its own while it looks
 * at sockets under their locks).  The child has no thread, and the epoll
 * set is the parent's (a set is shared across fork): it makes its own.
 */
static void rs_pw_atfork_prepare(void)
{
	pthread_mutex_lock(&pw_mut);
}

static void rs_pw_atfork_parent(void)
{
	pthread_mutex_unlock(&pw_mut);
}

static void rs_pw_atfork_child(void)
{
	struct cma_list_node *n;

	pthread_mutex_init(&pw_mut, NULL);
	/* The parent's watches: the sockets' copies here are not watched. */
	for (n = pw_list.first; n; n = n->next)
		cma_list_entry(n, struct rsocket, pw_node)->pw_watched = false;
	if (pw_epfd >= 0)
		close(pw_epfd);
	if (pw_wakefd >= 0)
		close(pw_wakefd);
	pw_epfd = pw_wakefd = -1;
	pw_list = (struct cma_list){0};
	pw_running = false;
}

static void rs_pw_init(void)
{
	pthread_atfork(rs_pw_atfork_prepare, rs_pw_atfork_parent,
		       rs_pw_atfork_child);
}

/* pw_mut held: the set, its wake-up and the thread, as far as missing. */
static int rs_pw_ready(void)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};

	if (pw_epfd < 0) {
		pw_epfd = cma_fd_move_high(epoll_create1(EPOLL_CLOEXEC), fcntl,
					   close);
		if (pw_epfd < 0)
			return -1;
	}
	if (pw_wakefd < 0) {
		pw_wakefd = cma_fd_move_high(
			eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), fcntl, close);
		if (pw_wakefd < 0)
			return -1;
		if (epoll_ctl(pw_epfd, EPOLL_CTL_ADD, pw_wakefd, &ev)) {
			close(pw_wakefd);
			pw_wakefd = -1;
			return -1;
		}
	}
	if (pw_running)
		return 0;
	if (cma_thread_detached(rs_pw_run))
		return -1;
	pw_running = true;
	return 0;
}

void rs_peer_watch(struct rsocket *rs)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT,
				 .data.ptr = rs};

	if (rs->type != SOCK_STREAM || !rs->channel ||
	    __atomic_load_n(&rs->pw_watched, __ATOMIC_RELAXED))
		return;
	pthread_once(&pw_once, rs_pw_init);
	pthread_mutex_lock(&pw_mut);
	/*
	 * Listed first: a thread started now must find a socket to watch.
	 * Without the set or the thread the socket goes unwatched, as
	 * before: its reader learns of a silent end only by sending.
	 */
	cma_list_append(&pw_list, &rs->pw_node);
	if (rs_pw_ready() ||
	    epoll_ctl(pw_epfd, EPOLL_CTL_ADD, rs->channel->fd, &ev))
		cma_list_unlink(&pw_list, &rs->pw_node);
	else
		__atomic_store_n(&rs->pw_watched, true, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&pw_mut);
}

void rs_peer_unwatch(struct rsocket *rs)
{
	if (!__atomic_load_n(&rs->pw_watched, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&pw_mut);
	if (rs->pw_watched)
		rs_pw_drop(rs);
	pthread_mutex_unlock(&pw_mut);
}
