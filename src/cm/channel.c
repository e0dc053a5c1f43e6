// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Event channels.
 *
 * Each channel is one open of the rdma_cm device: the kernel queues the
 * events of every id created on (or migrated to) it.  The library also
 * makes events of its own (rdma_write_cm_event, asynchronous
 * rdma_resolve_addrinfo, peer-to-peer connection formation, the timers of
 * timer.c), and an application that polls channel->fd must wake for those
 * too.  So a channel the application creates hands out an epoll set as
 * its fd: the kernel's fd is in it, and an eventfd joins it the first time
 * the library has an event of its own queued (the eventfd is readable
 * exactly while one is).  An eventfd, not a timer: setting a timer to fire
 * at once costs a timer interrupt, which in a virtual machine is ten
 * times the price of an eventfd's write and read.  Programs that never
 * use such features pay one extra fd and no extra writes to the kernel.
 *
 * Private channels (synchronous ids) are never polled by the application:
 * their fd is the kernel's, read with blocking commands, until the library
 * may post to them from another thread (cma_channel_expect_posts); then a
 * wait polls the kernel fd and the eventfd.
 *
 * Served channels.  rdma-core's contract is that the fd is readable only
 * when rdma_get_cm_event will return an event.  A kernel event the library
 * consumes (a peer's p2p request it holds or refuses) would break it: the
 * kernel fd is readable, rdma_get_cm_event reads and drops the event and
 * then blocks.  Only a channel that may hold such a request pays for
 * avoiding it: one with an RC listener that may hold (RDMA_OPTION_ID_
 * PEER2PEER not 0) or an id that made a p2p connect ("may hold"), and only
 * once the process shows peer-to-peer activity (cma_channel_serve_all: a
 * p2p connect, RDMA_CM_PEER2PEER=1, the option set to 1, or a request the
 * library held or refused).  Servers and rsockets that never use p2p
 * keep the direct path.  From then on such a channel is served for the
 * rest of its life: its kernel fd leaves the epoll set and joins the
 * service thread's
 * (timer.c); the thread reads kernel events (non-blocking), runs the same
 * handling rdma_get_cm_event runs (event.c, under the id's qp_lock) and
 * queues each event for the application, which sets the eventfd.  The
 * fd then wakes for queued events only.  rdma_get_cm_event pops the queue
 * and, when it is empty, reads the kernel fd itself (a non-blocking call
 * sees an event at once), then waits on pub.fd.  Whoever reads the kernel
 * fd holds read_lock from the read to the event's delivery or queueing,
 * so events keep the kernel's order.  Channels without an RC listener
 * keep the direct path and never involve the thread.
 *
 * Events the thread queued were reported by the kernel but never given to
 * the application, so nobody will ack them: rdma_destroy_id marks the id
 * dying (id->mut) after DESTROY_ID and drops its queued events counting
 * them acked, and the thread's admission check (cma_channel_admit, under
 * id->mut) drops an event of a dying id instead of queueing it; a group
 * being left does the same.  rdma_migrate_id moves queued events with the
 * id and waits only for the acks of events the application received
 * (events_held counts the others).  Destroying a served channel first
 * takes it from the thread and waits until the thread lets go of it.
 */
#include <config.h>

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "cma.h"
#include "util/env.h"
#include "util/fd_high.h"
#include "ucma_abi.h"
#include "test_hooks.h"

struct cma_channel {
	struct rdma_event_channel pub; /* must stay first: the public handle */
	int kfd; /* the rdma_cm device: the kernel's event queue */
	int readyfd; /* eventfd: library events queued; -1 until first needed */
	bool ready_set; /* readyfd is readable (lock) */
	bool pollable; /* pub.fd is an epoll set the application may poll */
	bool posted; /* private: library events may come from other threads */
	bool served; /* pollable: kfd is read by the service thread (atomic) */
	/* A p2p listener or connect was on it: set under chan_list_lock. */
	bool may_hold;
	/* Left direct for good: non-blocking when serving would begin (same). */
	bool direct;
	/* Application threads waiting on kfd in rdma_get_cm_event (lock). */
	unsigned int waiters;
	int wakefd; /* served: an eventfd that wakes the waiters, else -1 */
	/*
	 * creds.c: files kfd stood for before credential changes, oldest
	 * first, open while requests born in them may wait (read_lock).
	 */
	int stale[CMA_CHANNEL_STALE_MAX];
	int nstale;
	struct cma_channel
		*next; /* pollable ones: chan_list (chan_list_lock) */
	/*
	 * Held from reading a kernel event off kfd to its delivery or its
	 * queueing, by the application's rdma_get_cm_event and the service
	 * thread alike: events keep the kernel's order.  Taken before any
	 * other library lock.
	 */
	pthread_mutex_t read_lock;
	pthread_mutex_t lock;
	struct cma_event *head; /* library-made events, oldest first */
	struct cma_event **tail;
};

static struct cma_channel *cma_chan(struct rdma_event_channel *channel)
{
	return (struct cma_channel *)channel;
}

/*
 * The application's channels, for serving those that may hold once the
 * process shows p2p activity.  chan_list_lock also orders every change of
 * a channel to served; it is taken after a channel's read_lock and before
 * its lock and the timer lock.
 */
static pthread_mutex_t chan_list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cma_channel *chan_list;
static bool serve_all; /* p2p activity seen (atomic; set once) */
static pthread_once_t chan_list_once = PTHREAD_ONCE_INIT;

/* A child has one thread: whoever held the lock in the parent is gone. */
static void cma_chan_list_atfork_child(void)
{
	pthread_mutex_init(&chan_list_lock, NULL);
}

static void cma_chan_list_init(void)
{
	pthread_atfork(NULL, NULL, cma_chan_list_atfork_child);
}

static void cma_chan_list_add(struct cma_channel *ch)
{
	pthread_once(&chan_list_once, cma_chan_list_init);
	pthread_mutex_lock(&chan_list_lock);
	ch->next = chan_list;
	chan_list = ch;
	pthread_mutex_unlock(&chan_list_lock);
}

static void cma_chan_list_del(struct cma_channel *ch)
{
	struct cma_channel **pp;

	pthread_mutex_lock(&chan_list_lock);
	for (pp = &chan_list; *pp; pp = &(*pp)->next) {
		if (*pp == ch) {
			*pp = ch->next;
			break;
		}
	}
	pthread_mutex_unlock(&chan_list_lock);
}

int cma_channel_kernel_fd(const struct rdma_event_channel *channel)
{
	return ((const struct cma_channel *)channel)->kfd;
}

static struct cma_channel *cma_channel_alloc(int kfd)
{
	struct cma_channel *ch = calloc(1, sizeof(*ch));

	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->kfd = kfd;
	ch->pub.fd = kfd;
	ch->readyfd = -1;
	ch->wakefd = -1;
	ch->tail = &ch->head;
	pthread_mutex_init(&ch->lock, NULL);
	pthread_mutex_init(&ch->read_lock, NULL);
	return ch;
}

/* Wrap the kernel fd in an epoll set: the fd the application polls. */
static int cma_channel_make_pollable(struct cma_channel *ch)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int epfd, flags;

	flags = fcntl(ch->kfd, F_GETFL);
	if (flags < 0 || fcntl(ch->kfd, F_SETFL, flags | O_NONBLOCK))
		return -1;
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -1;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, ch->kfd, &ev)) {
		close(epfd);
		return -1;
	}
	ch->pub.fd = epfd;
	ch->pollable = true;
	return 0;
}

static struct rdma_event_channel *cma_channel_open(bool pollable)
{
	struct cma_channel *ch;
	int kfd, err;

	if (cma_init())
		return NULL;
	/* Hidden in a pollable channel's epoll set: ours, so kept high. */
	kfd = ucma_open_device(pollable);
	if (kfd < 0)
		return NULL;
	ch = cma_channel_alloc(kfd);
	if (!ch) {
		close(kfd);
		errno = ENOMEM;
		return NULL;
	}
	if (pollable && cma_channel_make_pollable(ch)) {
		err = errno;
		cma_channel_destroy(&ch->pub);
		errno = err;
		return NULL;
	}
	if (pollable)
		cma_chan_list_add(ch);
	return &ch->pub;
}

struct rdma_event_channel *cma_channel_create(void)
{
	return cma_channel_open(false);
}

void cma_channel_destroy(struct rdma_event_channel *channel)
{
	struct cma_channel *ch = cma_chan(channel);
	struct cma_event *evt;

	if (!channel)
		return;
	if (ch->pollable)
		cma_chan_list_del(ch);
	/* Its ids are gone; the service thread must let go of it first. */
	if (__atomic_load_n(&ch->served, __ATOMIC_ACQUIRE))
		cma_service_remove(channel, ch->kfd);
	while ((evt = ch->head)) {
		ch->head = evt->next;
		free(evt);
	}
	if (ch->readyfd >= 0)
		close(ch->readyfd);
	if (ch->wakefd >= 0)
		close(ch->wakefd);
	if (ch->pollable)
		close(ch->pub.fd);
	close(ch->kfd);
	/*
	 * After kfd, newest first: the requests queued there that were born
	 * in a stale file are cleaned up through it.
	 */
	while (ch->nstale)
		close(ch->stale[--ch->nstale]);
	pthread_mutex_destroy(&ch->lock);
	pthread_mutex_destroy(&ch->read_lock);
	free(ch);
}

/* --- the wake-up eventfd ---------------------------------------------------- */

/* Pollable channels: in the epoll set; private ones poll it directly. */
static int cma_channel_add_readyfd(struct cma_channel *ch)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int fd;

	fd = cma_fd_move_high(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), fcntl,
			      close);
	if (fd < 0)
		return -1;
	if (ch->pollable && epoll_ctl(ch->pub.fd, EPOLL_CTL_ADD, fd, &ev)) {
		close(fd);
		return -1;
	}
	ch->readyfd = fd;
	return 0;
}

/*
 * Make the channel readable exactly while library events are queued.
 * Called with the lock held after every change; the eventfd is written or
 * drained only when that changes (rdma_get_cm_event calls this on every
 * read), so its count is never more than 1.
 */
static void cma_channel_rearm(struct cma_channel *ch)
{
	bool want = ch->head;
	uint64_t count = 1;
	ssize_t ret;

	if (!ch->pollable && !ch->posted)
		return;
	if (want == ch->ready_set)
		return;
	if (ch->readyfd < 0 && cma_channel_add_readyfd(ch))
		return; /* no wake-ups: events still arrive with the next read */
	if (want)
		ret = write(ch->readyfd, &count, sizeof(count));
	else
		ret = read(ch->readyfd, &count, sizeof(count));
	if (ret == sizeof(count))
		ch->ready_set = want;
}

void cma_channel_prepare_posts(struct rdma_event_channel *channel)
{
	struct cma_channel *ch = cma_chan(channel);

	if (!ch->pollable) {
		cma_channel_expect_posts(channel);
		return;
	}
	pthread_mutex_lock(&ch->lock);
	if (ch->readyfd < 0)
		cma_channel_add_readyfd(ch); /* else made at the first post */
	pthread_mutex_unlock(&ch->lock);
}

void cma_channel_expect_posts(struct rdma_event_channel *channel)
{
	struct cma_channel *ch = cma_chan(channel);
	int flags;

	/* Set once and for good: asked at every p2p connect and timer. */
	if (ch->pollable || __atomic_load_n(&ch->posted, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&ch->lock);
	if (!ch->pollable && !ch->posted) {
		flags = fcntl(ch->kfd, F_GETFL);
		/* Without both, waits stay blocking reads: events are late. */
		if (flags >= 0 &&
		    !fcntl(ch->kfd, F_SETFL, flags | O_NONBLOCK) &&
		    !cma_channel_add_readyfd(ch))
			__atomic_store_n(&ch->posted, true, __ATOMIC_RELEASE);
		else if (flags >= 0)
			fcntl(ch->kfd, F_SETFL, flags);
	}
	pthread_mutex_unlock(&ch->lock);
}

/* --- library-made events ------------------------------------------------- */

struct cma_event *cma_event_new(struct cma_id_private *id_priv,
				enum rdma_cm_event_type type, int status)
{
	struct cma_event *evt = cma_zalloc(sizeof(*evt));

	if (!evt) {
		errno = ENOMEM;
		return NULL;
	}
	evt->id_priv = id_priv;
	evt->lib = true;
	evt->event.id = &id_priv->id;
	evt->event.event = type;
	evt->event.status = status;
	return evt;
}

/* ch->lock held: @evt joins the end of the queue and the fd is rearmed. */
static void cma_channel_append(struct cma_channel *ch, struct cma_event *evt)
{
	evt->next = NULL;
	*ch->tail = evt;
	ch->tail = &evt->next;
	cma_channel_rearm(ch);
}

void cma_event_post(struct cma_event *evt)
{
	struct cma_id_private *id_priv = evt->id_priv;
	struct cma_channel *ch;

	pthread_mutex_lock(&id_priv->mut);
	id_priv->lib_events++;
	ch = cma_chan(id_priv->id.channel);
	pthread_mutex_lock(&ch->lock);
	pthread_mutex_unlock(&id_priv->mut);
	cma_channel_append(ch, evt);
	pthread_mutex_unlock(&ch->lock);
}

/*
 * Unlink every queued event of @id_priv (of its group @mc only, if not
 * NULL); returns them as a list.
 */
static struct cma_event *cma_channel_unqueue(struct cma_channel *ch,
					     struct cma_id_private *id_priv,
					     struct cma_multicast *mc)
{
	struct cma_event **pp = &ch->head, *taken = NULL, **tail = &taken;
	struct cma_event *evt;

	ch->tail = &ch->head;
	while ((evt = *pp)) {
		if (evt->id_priv == id_priv && (!mc || evt->mc == mc)) {
			*pp = evt->next;
			evt->next = NULL;
			*tail = evt;
			tail = &evt->next;
			continue;
		}
		ch->tail = &evt->next;
		pp = &evt->next;
	}
	return taken;
}

/* A queued kernel event leaves the queue: the id no longer holds it. */
static void cma_event_unhold(struct cma_event *evt)
{
	struct cma_id_private *id_priv = evt->id_priv;

	pthread_mutex_lock(&id_priv->mut);
	id_priv->events_held--;
	pthread_mutex_unlock(&id_priv->mut);
}

/* Undelivered events taken off a queue: uncount and free them. */
static void cma_channel_discard(struct cma_id_private *id_priv,
				struct cma_event *evt)
{
	struct cma_event *next;
	uint32_t dropped = 0;

	for (; evt; evt = next) {
		next = evt->next;
		if (evt->lib) {
			free(evt);
			dropped++;
			continue;
		}
		/* Read by the service thread: count it acked. */
		cma_event_unhold(evt);
		cma_event_discard(evt);
	}
	if (!dropped)
		return;
	pthread_mutex_lock(&id_priv->mut);
	id_priv->lib_events -= dropped;
	cma_id_wake_locked(id_priv);
	pthread_mutex_unlock(&id_priv->mut);
}

/*
 * Stop queueing for @id_priv (all of it: @mc NULL, or one group being
 * left) by setting *@closed under mut, then discard what is queued.
 */
static void cma_channel_drop(struct cma_id_private *id_priv,
			     struct cma_multicast *mc, bool *closed)
{
	struct cma_channel *ch;
	struct cma_event *evt;

	pthread_mutex_lock(&id_priv->mut);
	*closed = true;
	ch = cma_chan(id_priv->id.channel);
	pthread_mutex_unlock(&id_priv->mut);
	pthread_mutex_lock(&ch->lock);
	evt = cma_channel_unqueue(ch, id_priv, mc);
	cma_channel_rearm(ch);
	pthread_mutex_unlock(&ch->lock);
	cma_channel_discard(id_priv, evt);
}

void cma_channel_drop_events(struct cma_id_private *id_priv)
{
	/* From now on the service thread queues nothing for the id. */
	cma_channel_drop(id_priv, NULL, &id_priv->dying);
}

void cma_channel_drop_mc_events(struct cma_multicast *mc)
{
	cma_channel_drop(mc->id_priv, mc, &mc->leaving);
}

/*
 * The service thread has a kernel event for the application: queue it on
 * its id's channel (the id may have migrated since the read), unless the
 * id or its group is going away (false: the caller discards it).
 */
bool cma_channel_admit(struct cma_event *evt)
{
	struct cma_id_private *id_priv = evt->id_priv;
	struct cma_channel *ch;

	pthread_mutex_lock(&id_priv->mut);
	if (id_priv->dying || (evt->mc && evt->mc->leaving)) {
		pthread_mutex_unlock(&id_priv->mut);
		return false;
	}
	id_priv->events_held++;
	cma_id_wake_locked(id_priv); /* rdma_migrate_id counts it */
	ch = cma_chan(id_priv->id.channel);
	pthread_mutex_lock(&ch->lock);
	pthread_mutex_unlock(&id_priv->mut);
	cma_channel_append(ch, evt);
	pthread_mutex_unlock(&ch->lock);
	return true;
}

/*
 * The kernel moves a migrated id's queued events to the new fd without
 * waking its pollers, and epoll only looks at an fd when woken: make it
 * look again.
 */
static void cma_channel_recheck_kernel_fd(struct cma_channel *ch)
{
	struct epoll_event ev = {.events = EPOLLIN};
	uint64_t one = 1;

	if (__atomic_load_n(&ch->served, __ATOMIC_ACQUIRE)) {
		cma_service_recheck(&ch->pub);
		/* Threads waiting on kfd themselves: the thread stands aside. */
		pthread_mutex_lock(&ch->lock);
		if (ch->waiters && write(ch->wakefd, &one, sizeof(one)) < 0) {
			/* Counter full: a wake-up is pending anyway. */
		}
		pthread_mutex_unlock(&ch->lock);
	} else if (ch->pollable)
		epoll_ctl(ch->pub.fd, EPOLL_CTL_MOD, ch->kfd, &ev);
}

void cma_channel_move_events(struct cma_id_private *id_priv,
			     struct rdma_event_channel *from)
{
	struct cma_channel *old = cma_chan(from);
	struct cma_channel *ch = cma_chan(id_priv->id.channel);
	struct cma_event *evt;

	cma_channel_recheck_kernel_fd(ch);

	pthread_mutex_lock(&old->lock);
	evt = cma_channel_unqueue(old, id_priv, NULL);
	cma_channel_rearm(old);
	pthread_mutex_unlock(&old->lock);
	if (!evt)
		return;
	pthread_mutex_lock(&ch->lock);
	*ch->tail = evt;
	while (evt->next)
		evt = evt->next;
	ch->tail = &evt->next;
	cma_channel_rearm(ch);
	pthread_mutex_unlock(&ch->lock);
}

void cma_event_release_lib(struct cma_event *evt)
{
	struct cma_id_private *id_priv = evt->id_priv;

	pthread_mutex_lock(&id_priv->mut);
	id_priv->lib_events--;
	cma_id_wake_locked(id_priv);
	pthread_mutex_unlock(&id_priv->mut);
}

static struct cma_event *cma_channel_pop(struct cma_channel *ch)
{
	struct cma_event *evt;

	pthread_mutex_lock(&ch->lock);
	evt = ch->head;
	if (evt) {
		ch->head = evt->next;
		if (!ch->head)
			ch->tail = &ch->head;
		evt->next = NULL;
	}
	cma_channel_rearm(ch);
	pthread_mutex_unlock(&ch->lock);
	return evt;
}

struct cma_event *cma_channel_pop_event(struct rdma_event_channel *channel)
{
	struct cma_event *evt = cma_channel_pop(cma_chan(channel));

	if (evt && !evt->lib)
		cma_event_unhold(evt);
	return evt;
}

bool cma_channel_pollable(const struct rdma_event_channel *channel)
{
	return ((const struct cma_channel *)channel)->pollable;
}

void cma_channel_reader_lock(struct rdma_event_channel *channel)
{
	pthread_mutex_lock(&cma_chan(channel)->read_lock);
}

void cma_channel_reader_unlock(struct rdma_event_channel *channel)
{
	pthread_mutex_unlock(&cma_chan(channel)->read_lock);
}

int cma_channel_swap_kernel_file(struct rdma_event_channel *channel, int newfd)
{
	struct cma_channel *ch = cma_chan(channel);
	struct epoll_event ev = {.events = EPOLLIN};
	int flags, old, err;

	if (ch->nstale == CMA_CHANNEL_STALE_MAX) {
		close(newfd);
		return cma_err(EAGAIN);
	}
	/* The new file blocks, or not, as the old one did. */
	flags = fcntl(ch->kfd, F_GETFL);
	if (flags < 0 || fcntl(newfd, F_SETFL, flags) ||
	    (old = ucma_rehome_fd(ch->kfd, newfd)) < 0) {
		err = errno;
		close(newfd);
		return cma_err(err);
	}
	/*
	 * An epoll set knows a file, not a number: the new file joins it.
	 * The old one keeps its registration until it is closed, with
	 * nothing to report (its ids move away).
	 */
	if (ch->pollable &&
	    epoll_ctl(ch->pub.fd, EPOLL_CTL_ADD, ch->kfd, &ev)) {
		err = errno;
		newfd = ucma_rehome_fd(ch->kfd, old);
		if (newfd >= 0)
			close(newfd);
		return cma_err(err);
	}
	ch->stale[ch->nstale++] = old;
	return 0;
}

void cma_channel_restore_kernel_file(struct rdma_event_channel *channel)
{
	struct cma_channel *ch = cma_chan(channel);
	int newfd = ucma_rehome_fd(ch->kfd, ch->stale[ch->nstale - 1]);

	/* Else the old file stays a stale one: never closed under ids. */
	if (newfd >= 0) {
		close(newfd);
		ch->nstale--;
	}
}

bool cma_channel_posted(const struct rdma_event_channel *channel)
{
	return __atomic_load_n(&((const struct cma_channel *)channel)->posted,
			       __ATOMIC_ACQUIRE);
}

int cma_channel_newest_stale(const struct rdma_event_channel *channel)
{
	const struct cma_channel *ch = (const struct cma_channel *)channel;

	return ch->nstale ? ch->stale[ch->nstale - 1] : -1;
}

/* Close the @n oldest stale files: no request born in them waits. */
static void cma_channel_close_stale(struct cma_channel *ch, int n)
{
	int i;

	for (i = 0; i < n; i++)
		close(ch->stale[i]);
	memmove(ch->stale, ch->stale + n,
		(size_t)(ch->nstale - n) * sizeof(ch->stale[0]));
	ch->nstale -= n;
}

/*
 * The kernel queues a listener's events in the order its requests came
 * and moves them with the listener, in order: a request born in stale
 * file i is read after every request born in an older one, and one born
 * in kfd's file after all of them.  A stale file is closed only on that
 * proof: closing a file destroys the ids born in it, and an event still
 * queued for one of them would then point at freed memory in the kernel.
 */
void cma_channel_adopt_request(struct rdma_event_channel *channel,
			       uint32_t handle)
{
	struct cma_channel *ch = cma_chan(channel);
	uint32_t reported;
	int i;

	for (i = ch->nstale - 1; i >= 0; i--) {
		if (!ucma_cmd_migrate_id(ch->kfd, handle, ch->stale[i],
					 &reported)) {
			cma_channel_close_stale(ch, i);
			return;
		}
		/* EINVAL: the id is on another file; else no proof. */
		if (errno != EINVAL)
			return;
	}
	cma_channel_close_stale(ch, ch->nstale);
}

/* A pollable channel's kernel fd is non-blocking: -1/EAGAIN when empty. */
int cma_channel_read_kernel(struct rdma_event_channel *channel,
			    struct rdma_ucm_event_resp *resp)
{
	return ucma_cmd_get_event(cma_chan(channel)->kfd, resp);
}

static bool cma_channel_nonblocking(struct cma_channel *ch)
{
	int flags = fcntl(ch->pub.fd, F_GETFL);

	return flags >= 0 && (flags & O_NONBLOCK);
}

/*
 * Wait until the kernel fd or the library's queue may have an event.  For
 * a pollable channel the epoll set covers both; a private channel polls
 * its kernel fd and wake-up eventfd.  Both kernel fds are non-blocking
 * here, so reading after any wake-up is safe.  0 or -1/errno (EAGAIN: the
 * application made the channel non-blocking and nothing is ready).
 */
static int cma_channel_wait(struct cma_channel *ch)
{
	struct pollfd pfd[2] = {{.fd = ch->kfd, .events = POLLIN},
				{.fd = -1, .events = POLLIN}};
	struct epoll_event ev;
	bool nonblock;
	int ret;

	if (!ch->pollable) {
		/* Made by cma_channel_expect_posts, maybe in another thread. */
		pthread_mutex_lock(&ch->lock);
		pfd[1].fd = ch->readyfd;
		pthread_mutex_unlock(&ch->lock);
		ret = poll(pfd, 2, -1);
		return ret < 0 && errno != EINTR ? -1 : 0;
	}
	nonblock = cma_channel_nonblocking(ch);
	ret = epoll_wait(ch->pub.fd, &ev, 1, nonblock ? 0 : -1);
	if (ret < 0)
		return errno == EINTR ? 0 : -1;
	if (ret == 0 && nonblock)
		return cma_err(EAGAIN);
	return 0;
}

bool cma_channel_has_waiter(struct rdma_event_channel *channel)
{
	struct cma_channel *ch = cma_chan(channel);
	bool ret;

	pthread_mutex_lock(&ch->lock);
	ret = ch->waiters != 0;
	pthread_mutex_unlock(&ch->lock);
	return ret;
}

/*
 * A served channel's blocking wait: the thread waits on the kernel fd
 * itself, next to pub.fd (the library's queue), and reads what comes
 * (cma_get_pollable), so a program blocked in rdma_get_cm_event pays no
 * hop through the service thread, which stands aside from the first wait
 * until rdma_get_cm_event returns (cma_event_serve): the thread that was
 * woken reads without a race.  The last waiter to leave arms the fd for
 * the service thread again, which then reads what came after this
 * thread's last read.  A held request read here only makes this thread
 * wait again: the application's fd never woke for it.
 */
static int cma_channel_wait_served(struct cma_channel *ch, bool *waiting)
{
	struct pollfd pfd[3] = {{.fd = ch->pub.fd, .events = POLLIN},
				{.fd = ch->kfd, .events = POLLIN},
				{.fd = ch->wakefd, .events = POLLIN}};
	uint64_t count;
	int ret;

	if (!*waiting) {
		pthread_mutex_lock(&ch->lock);
		ch->waiters++;
		pthread_mutex_unlock(&ch->lock);
		*waiting = true;
	}
	ret = poll(pfd, 3, -1);
	/* Events a migration moved to kfd, which woke nobody (recheck). */
	if (ret > 0 && (pfd[2].revents & POLLIN) &&
	    read(ch->wakefd, &count, sizeof(count)) < 0) {
		/* Another waiter drained it: both read the kernel fd next. */
	}
	return ret < 0 && errno != EINTR ? -1 : 0;
}

void cma_channel_waiter_leave(struct rdma_event_channel *channel)
{
	struct cma_channel *ch = cma_chan(channel);
	bool last;

	pthread_mutex_lock(&ch->lock);
	last = !--ch->waiters;
	pthread_mutex_unlock(&ch->lock);
	if (last)
		cma_service_recheck(channel);
}

int cma_channel_wait_ready(struct rdma_event_channel *channel, bool *waiting)
{
	struct cma_channel *ch = cma_chan(channel);

	if (__atomic_load_n(&ch->served, __ATOMIC_ACQUIRE) &&
	    !cma_channel_nonblocking(ch))
		return cma_channel_wait_served(ch, waiting);
	return cma_channel_wait(ch);
}

int cma_channel_next(struct rdma_event_channel *channel,
		     struct rdma_ucm_event_resp *resp, struct cma_event **lib)
{
	struct cma_channel *ch = cma_chan(channel);

	for (;;) {
		*lib = cma_channel_pop(ch);
		if (*lib)
			return 0;
		/*
		 * A private channel nobody posts to reads the way it always
		 * has: one blocking command, no extra system calls.
		 */
		if (!ch->pollable &&
		    !__atomic_load_n(&ch->posted, __ATOMIC_ACQUIRE))
			return ucma_cmd_get_event(ch->kfd, resp);
		/*
		 * Otherwise the kernel fd is non-blocking: ask it first.  An
		 * event already queued (the application polled the fd, or
		 * events came in a burst) then costs one system call; the
		 * wait below is for when nothing is there.
		 */
		if (!ucma_cmd_get_event(ch->kfd, resp))
			return 0;
		if (errno != EAGAIN)
			return -1;
		if (cma_channel_wait(ch))
			return -1;
	}
}

/*
 * RDMA_CM_SERVE, read once: each p2p connect asks (a getenv walks the
 * whole environment).  Racing first readers store the same answer.
 */
static char cma_serve_setting(void)
{
	static char setting; /* 0 unread, else '0', '1' or '-' (other) */
	char v = __atomic_load_n(&setting, __ATOMIC_RELAXED);
	const char *env;

	if (v)
		return v;
	env = cma_env("RDMA_CM_SERVE");
	v = env && (!strcmp(env, "0") || !strcmp(env, "1")) ? env[0] : '-';
	__atomic_store_n(&setting, v, __ATOMIC_RELAXED);
	return v;
}

/*
 * From now on the service thread reads the channel's kernel fd, and the
 * application's fd is readable only while events are queued.  Kept for
 * the channel's life.  Left unserved (as before) if the thread or its fds
 * cannot be had: correct events, only the empty wake-ups remain.  Under
 * chan_list_lock; a reader of the kernel fd may be at work meanwhile: it
 * holds read_lock from its read to the delivery or queueing, as the
 * thread does, so the order of events stays the kernel's.
 */
static void cma_channel_serve_locked(struct cma_channel *ch)
{
	bool ok;

	if (!ch->pollable || ch->direct ||
	    __atomic_load_n(&ch->served, __ATOMIC_ACQUIRE))
		return;
	/* RDMA_CM_SERVE=0: the direct path, held requests wake the fd. */
	if (cma_serve_setting() == '0')
		return;
	/*
	 * A non-blocking fd's reader takes EAGAIN in its stride (a wake-up
	 * another thread emptied looks the same), and programs that poll
	 * their CQs and this fd in one loop (MPI progress engines) would
	 * pay a thread hop on every event: such a channel stays direct,
	 * decided once, as serving is (and every p2p connect asks again).
	 */
	if (cma_channel_nonblocking(ch)) {
		ch->direct = true;
		return;
	}
	pthread_mutex_lock(&ch->lock);
	ok = ch->readyfd >= 0 || !cma_channel_add_readyfd(ch);
	if (ok && ch->wakefd < 0) {
		ch->wakefd = cma_fd_move_high(
			eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), fcntl, close);
		ok = ch->wakefd >= 0;
	}
	pthread_mutex_unlock(&ch->lock);
	if (!ok || cma_service_add(&ch->pub, ch->kfd))
		return;
	epoll_ctl(ch->pub.fd, EPOLL_CTL_DEL, ch->kfd, NULL);
	__atomic_store_n(&ch->served, true, __ATOMIC_RELEASE);
}

void cma_channel_may_hold(struct rdma_event_channel *channel)
{
	struct cma_channel *ch = cma_chan(channel);

	if (!ch->pollable)
		return;
	/* RDMA_CM_SERVE=1: served from the first listen, no window left. */
	if (cma_serve_setting() == '1')
		cma_channel_serve_all();
	/*
	 * Said before (every p2p connect says it): serving began then, or
	 * cma_channel_serve_all serves it when it begins.
	 */
	if (__atomic_load_n(&ch->may_hold, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&chan_list_lock);
	__atomic_store_n(&ch->may_hold, true, __ATOMIC_RELEASE);
	if (__atomic_load_n(&serve_all, __ATOMIC_ACQUIRE))
		cma_channel_serve_locked(ch);
	pthread_mutex_unlock(&chan_list_lock);
}

void cma_channel_serve_all(void)
{
	struct cma_channel *ch;

	if (__atomic_load_n(&serve_all, __ATOMIC_ACQUIRE))
		return;
	pthread_once(&chan_list_once, cma_chan_list_init);
	pthread_mutex_lock(&chan_list_lock);
	__atomic_store_n(&serve_all, true, __ATOMIC_RELEASE);
	for (ch = chan_list; ch; ch = ch->next)
		if (ch->may_hold)
			cma_channel_serve_locked(ch);
	pthread_mutex_unlock(&chan_list_lock);
}

bool cma_channel_served(const struct rdma_event_channel *channel)
{
	const struct cma_channel *ch = (const struct cma_channel *)channel;

	return __atomic_load_n(&ch->served, __ATOMIC_ACQUIRE);
}

CMA_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	return cma_channel_open(true);
}

CMA_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	cma_channel_destroy(channel);
}
