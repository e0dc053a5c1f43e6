// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The library's service thread: timers (peer-to-peer hold checks,
 * give-ups, iWARP retries) and the kernel fds of served channels.
 *
 * They run in one service thread per process, not in the application's
 * rdma_get_cm_event(): a timer that finds nothing to report must not make
 * the application's channel fd readable (rdma-core's contract is that a
 * readable fd has an event; programs poll it and then block in
 * rdma_get_cm_event).  A timer that has something to report posts an
 * event, which wakes the channel as any event does.
 *
 * The same thread reads the kernel events of served channels (channel.c:
 * channels with an RC listener, where a peer's p2p request may be held
 * or refused by the library and must not wake the application).  It
 * sleeps in an epoll set: their kernel fds, an eventfd that wakes it
 * (quit, a served channel added) and a timerfd set to the earliest
 * deadline.  A thread that arms a timer due before that moves the
 * timerfd forward itself, one system call, instead of waking the service
 * thread to do it: a p2p mesh arms a timer with its first connect, and a
 * wake-up is two context switches.  Should those fds be unavailable the
 * thread sleeps on a condition variable and is woken for every change.
 *
 * The thread starts with the first timer armed, the first channel
 * served, or a listener that holds p2p requests (cma_timer_prestart:
 * programs that never use peer-to-peer mode have none of these), blocks
 * every signal, and is stopped when the library is unloaded.  After
 * fork() the child starts its own on its first timer or served channel;
 * the parent's served channels are not served in the child (a child must
 * not use its parent's channels, as with rdma-core: their kernel fds are
 * shared with the parent).
 */
#include <config.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "cma.h"
#include "util/fd_high.h"
#include "util/thread.h"
#include "test_hooks.h"

/* Everything below, and every timer's fields, are under timer_lock. */
static pthread_mutex_t timer_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t timer_wake; /* CLOCK_MONOTONIC: the list changed */
static pthread_cond_t timer_done = PTHREAD_COND_INITIALIZER;
static pthread_once_t timer_once = PTHREAD_ONCE_INIT;
/*
 * Held by the service thread while it works outside timer_lock (a timer's
 * expire(), serving a channel), when it takes p2p_lock, ids' locks and
 * channels' locks; and by fork() from its prepare handler to its parent
 * one.  So the thread is never in the middle of that work when a process
 * forks, and the child inherits none of those locks held by a thread it
 * does not have.
 */
static pthread_mutex_t svc_fork_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cma_timer *timers; /* armed, earliest first */
static pthread_t timer_thread;
static bool timer_thread_up, timer_quit;
/* The thread has run: it took the lock in cma_timer_main (prestart). */
static bool timer_thread_ran;
/* How long rdma_listen may wait for it (cma_timer_prestart). */
#define PRESTART_WAIT_MS 1000
/*
 * When the sleeping thread wakes by itself: its deadline, UINT64_MAX if
 * it sleeps until woken, 0 while it is awake (it looks at the list again
 * before it sleeps).  A timer due before that needs a wake-up; any other
 * is found in time without one.
 */
static uint64_t timer_wakes_at;

/*
 * Served channels: what the thread's epoll set watches.  Handled as
 * rdma_get_cm_event would (cma_event_serve), or, for a channel the
 * library keeps for itself, by its own @handle.
 */
struct cma_served {
	struct cma_served *next;
	struct rdma_event_channel *channel;
	int fd; /* in the epoll set */
	bool (*handle)(struct rdma_event_channel *channel);
};
static struct cma_served *served;
static int svc_epfd = -1; /* served channels' kernel fds, the two below */
static int svc_wakefd = -1; /* eventfd: the timer list changed, or quit */
static int svc_timerfd = -1; /* the earliest deadline, in the epoll set */
static uint64_t svc_timerfd_at = UINT64_MAX; /* what it is set to */
static bool timer_in_poll; /* the thread sleeps in the epoll set */
static unsigned long svc_wakeups; /* how often it woke from there */
/* The timerfd's tag in the epoll set (the eventfd's is NULL). */
#define SVC_TIMER_TAG ((void *)&svc_timerfd)
/* The channel whose events the thread is handling (timer_done signals). */
static struct rdma_event_channel *svc_busy;
static bool timer_in_expire; /* the thread is in an expire() */

uint64_t cma_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The library's timers are for seconds-long bounds and checks: a deadline
 * up to a clock tick early does no harm, and the coarse clock is read
 * from the vDSO on every machine, where CLOCK_MONOTONIC can cost a system
 * call (a guest without a stable TSC), once per connect and held request.
 * The thread compares deadlines with cma_now_ns(), which is never behind
 * this one, so a due timer is never put off.
 */
uint64_t cma_now_coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void cma_timer_init_wake(void)
{
	cma_cond_init_monotonic(&timer_wake);
}

/*
 * The child of a fork() has no service thread: it starts its own.  The
 * parent's thread may have been waiting on the condition variables, a
 * waiter the child does not have: they are made anew.
 */
static void cma_timer_atfork_prepare(void)
{
	pthread_mutex_lock(&svc_fork_lock);
}

static void cma_timer_atfork_parent(void)
{
	pthread_mutex_unlock(&svc_fork_lock);
}

static void cma_timer_atfork_child(void)
{
	struct cma_served *s;

	pthread_mutex_init(&svc_fork_lock, NULL);
	pthread_mutex_init(&timer_lock, NULL);
	pthread_cond_init(&timer_done, NULL);
	cma_timer_init_wake();
	timer_thread_up = false;
	timer_thread_ran = false;
	timer_quit = false;
	timer_wakes_at = 0;
	/*
	 * Every timer armed is a parent's p2p connect's or listener's, which
	 * the child forgets (p2p.c), and the list may be half changed by a
	 * thread the child does not have: none expires here.  A later stop
	 * or start of one finds it in no list.
	 */
	timers = NULL;
	/*
	 * The epoll set is shared with the parent: changing it would change
	 * the parent's.  The child forgets it and the channels it served.
	 */
	while ((s = served)) {
		served = s->next;
		free(s);
	}
	if (svc_epfd >= 0)
		close(svc_epfd);
	if (svc_wakefd >= 0)
		close(svc_wakefd);
	if (svc_timerfd >= 0)
		close(svc_timerfd);
	svc_epfd = svc_wakefd = svc_timerfd = -1;
	svc_timerfd_at = UINT64_MAX;
	timer_in_poll = false;
	svc_busy = NULL;
}

/*
 * Wake the thread wherever it sleeps: on the condition variable, or in
 * the epoll set through @wakefd (svc_wakefd, read under the lock).  Also
 * safe after the lock is dropped: what the thread must see is already in
 * the list, which it reads under the lock before it sleeps again.
 */
static void cma_timer_kick_via(int wakefd)
{
	uint64_t one = 1;

	pthread_cond_signal(&timer_wake);
	if (wakefd >= 0 && write(wakefd, &one, sizeof(one)) < 0) {
		/* Counter full: the thread has a wake-up pending anyway. */
	}
}

/* The same, lock held. */
static void cma_timer_kick(void)
{
	cma_timer_kick_via(svc_wakefd);
}

static void cma_timer_init_once(void)
{
	cma_timer_init_wake();
	pthread_atfork(cma_timer_atfork_prepare, cma_timer_atfork_parent,
		       cma_timer_atfork_child);
}

static void cma_timer_unlink(struct cma_timer *timer)
{
	struct cma_timer **pp;

	for (pp = &timers; *pp; pp = &(*pp)->next) {
		if (*pp == timer) {
			*pp = timer->next;
			break;
		}
	}
	timer->next = NULL;
	__atomic_store_n(&timer->armed, false, __ATOMIC_RELAXED);
}

/*
 * Set the timerfd to fire at @when (UINT64_MAX: never), lock held.  An
 * absolute time already past fires at once.  False if it could not be.
 */
static bool cma_timer_set_fd(uint64_t when)
{
	struct itimerspec its = {0};

	if (when == svc_timerfd_at)
		return true;
	if (when != UINT64_MAX) {
		its.it_value.tv_sec = (time_t)(when / 1000000000ull);
		its.it_value.tv_nsec = (long)(when % 1000000000ull);
		if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
			its.it_value.tv_nsec = 1; /* zero would disarm it */
	}
	if (timerfd_settime(svc_timerfd, TFD_TIMER_ABSTIME, &its, NULL))
		return false;
	svc_timerfd_at = when;
	return true;
}

/*
 * Without the epoll set (its fds could not be had): sleep until the
 * earliest deadline or a change of the list.
 */
static void cma_timer_sleep(void)
{
	struct timespec until;
	uint64_t when;

	timer_wakes_at = timers ? timers->deadline_ns : UINT64_MAX;
	if (!timers) {
		pthread_cond_wait(&timer_wake, &timer_lock);
	} else {
		when = timers->deadline_ns;
		until.tv_sec = (time_t)(when / 1000000000ull);
		until.tv_nsec = (long)(when % 1000000000ull);
		pthread_cond_timedwait(&timer_wake, &timer_lock, &until);
	}
	timer_wakes_at = 0;
}

static struct cma_served *cma_served_find(struct rdma_event_channel *channel)
{
	struct cma_served *s;

	for (s = served; s; s = s->next)
		if (s->channel == channel)
			return s;
	return NULL;
}

static bool cma_served_has(struct rdma_event_channel *channel)
{
	return cma_served_find(channel);
}

/*
 * A served kernel fd is watched one-shot: reported once, then not again
 * until armed anew, by the thread once it has read what was there or by
 * the last application thread that stops waiting on the fd itself in
 * rdma_get_cm_event (channel.c).  So the thread never spins on an fd it
 * leaves to a waiting application thread.  Lock held.
 */
static void cma_service_arm(struct rdma_event_channel *channel)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT,
				 .data.ptr = channel};
	struct cma_served *s = cma_served_find(channel);

	if (s)
		epoll_ctl(svc_epfd, EPOLL_CTL_MOD, s->fd, &ev);
}

/*
 * Sleep in the epoll set until the earliest deadline, then handle the
 * channels whose kernel fds are readable (lock held, dropped while
 * sleeping and handling).  An fd reported for a channel that stopped
 * being served meanwhile is ignored: the pointer is only compared.
 */
static void cma_timer_poll(void)
{
	struct epoll_event evs[16];
	uint64_t now, when, count;
	int ms = -1, n, i;
	bool rearm;

	when = timers ? timers->deadline_ns : UINT64_MAX;
	timer_wakes_at = when;
	/* The timerfd wakes it when due; failing that, epoll_wait times out. */
	if (!(svc_timerfd >= 0 && cma_timer_set_fd(when)) && timers) {
		now = cma_now_ns();
		ms = when <= now ? 0 : (int)((when - now + 999999) / 1000000);
	}
	timer_in_poll = true;
	pthread_mutex_unlock(&timer_lock);
	n = epoll_wait(svc_epfd, evs, 16, ms);
	pthread_mutex_lock(&timer_lock);
	timer_in_poll = false;
	timer_wakes_at = 0;
	svc_wakeups++;
	for (i = 0; i < n && !timer_quit; i++) {
		struct rdma_event_channel *channel = evs[i].data.ptr;
		bool (*handle)(struct rdma_event_channel * channel);
		struct cma_served *s;

		if (!channel || channel == SVC_TIMER_TAG) {
			/* The wake-up eventfd or the timerfd: clear it. */
			if (read(channel ? svc_timerfd : svc_wakefd, &count,
				 sizeof(count)) < 0)
				count = 0; /* already drained, or set anew */
			continue;
		}
		s = cma_served_find(channel);
		if (!s)
			continue;
		handle = s->handle ? s->handle : cma_event_serve;
		svc_busy = channel;
		pthread_mutex_unlock(&timer_lock);
		pthread_mutex_lock(&svc_fork_lock);
		rearm = handle(channel);
		pthread_mutex_unlock(&svc_fork_lock);
		pthread_mutex_lock(&timer_lock);
		/* Still ours: a destroy waits while svc_busy names it. */
		if (rearm && cma_served_has(channel))
			cma_service_arm(channel);
		svc_busy = NULL;
		pthread_cond_broadcast(&timer_done);
	}
}

/*
 * Run due timers one at a time, without the lock (they take p2p_lock, make
 * kernel calls and post events).  A running timer is marked so that
 * cma_timer_sync() can wait for it before its owner is freed.
 */
static void *cma_timer_main(void *arg)
{
	void (*expire)(struct cma_timer * timer);
	struct cma_timer *timer;

	(void)arg;
	pthread_mutex_lock(&timer_lock);
	timer_thread_ran = true;
	pthread_cond_broadcast(&timer_done);
	while (!timer_quit) {
		timer = timers;
		if (!timer || timer->deadline_ns > cma_now_ns()) {
			if (svc_epfd >= 0)
				cma_timer_poll();
			else
				cma_timer_sleep();
			continue;
		}
		timers = timer->next;
		timer->next = NULL;
		__atomic_store_n(&timer->armed, false, __ATOMIC_RELAXED);
		timer->running = true;
		timer->runner = pthread_self();
		expire = timer->expire;
		timer_in_expire = true;
		pthread_mutex_unlock(&timer_lock);
		pthread_mutex_lock(&svc_fork_lock);
		cma_fault_delay();
		expire(timer);
		pthread_mutex_unlock(&svc_fork_lock);
		pthread_mutex_lock(&timer_lock);
		timer_in_expire = false;
		timer->running = false;
		pthread_cond_broadcast(&timer_done);
	}
	pthread_mutex_unlock(&timer_lock);
	return NULL;
}

static int cma_service_open(void);

/* Start the service thread (lock held); signals stay with the program. */
static void cma_timer_thread_start(void)
{
	sigset_t all, old;

	if (timer_thread_up)
		return;
	/* Without it the thread sleeps on timer_wake (cma_timer_sleep). */
	cma_service_open();
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* On failure timers wait for the next start to try again. */
	timer_thread_up =
		!pthread_create(&timer_thread, NULL, cma_timer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void cma_timer_start(struct rdma_event_channel *channel,
		     struct cma_timer *timer, unsigned int ms)
{
	struct cma_timer **pp;
	int wakefd;
	bool kick;

	/* Its events come from another thread: the channel must wake. */
	cma_channel_expect_posts(channel);
	pthread_once(&timer_once, cma_timer_init_once);
	pthread_mutex_lock(&timer_lock);
	if (timer->armed)
		cma_timer_unlink(timer);
	timer->deadline_ns = cma_now_coarse_ns() + (uint64_t)ms * 1000000ull;
	for (pp = &timers; *pp; pp = &(*pp)->next)
		if ((*pp)->deadline_ns > timer->deadline_ns)
			break;
	timer->next = *pp;
	*pp = timer;
	__atomic_store_n(&timer->armed, true, __ATOMIC_RELAXED);
	cma_timer_thread_start();
	/*
	 * Only a deadline before the sleeping thread's own needs it awake
	 * now: every wake-up is a context switch (a p2p mesh arms a timer per
	 * connect).  A timer stopped since the thread went to sleep still
	 * wakes it, which then sleeps until this one.  The kick comes after
	 * the unlock: on a busy machine the woken thread takes the CPU at
	 * once, and would only block on timer_lock if we still held it.
	 */
	kick = timer->deadline_ns < timer_wakes_at;
	if (kick && timer_in_poll && svc_timerfd >= 0 &&
	    cma_timer_set_fd(timer->deadline_ns)) {
		/* Its alarm clock moved forward: it wakes only when due. */
		timer_wakes_at = timer->deadline_ns;
		kick = false;
	}
	wakefd = svc_wakefd;
	pthread_mutex_unlock(&timer_lock);
	if (kick)
		cma_timer_kick_via(wakefd);
}

/*
 * For a p2p listener: the thread is started and, unlike a start from
 * cma_timer_start, given the time to run before rdma_listen returns.  A
 * new thread's first run (the kernel's return from clone, its stack, the
 * C library's setup) is a few tens of microseconds; done here it is not
 * paid by the connects that follow (one CPU: they would wait for it).
 * The wait is bounded, so a thread that cannot run yet (a program that
 * listens from a constructor, say) delays nothing for long.
 */
void cma_timer_prestart(void)
{
	struct timespec until; /* timer_done waits on CLOCK_REALTIME */

	pthread_once(&timer_once, cma_timer_init_once);
	pthread_mutex_lock(&timer_lock);
	cma_timer_thread_start();
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += PRESTART_WAIT_MS / 1000;
	until.tv_nsec += (PRESTART_WAIT_MS % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (timer_thread_up && !timer_thread_ran &&
	       !pthread_equal(timer_thread, pthread_self()))
		if (pthread_cond_timedwait(&timer_done, &timer_lock, &until))
			break;
	pthread_mutex_unlock(&timer_lock);
}

void cma_timer_stop(struct cma_timer *timer)
{
	/*
	 * Most timers stopped were never armed (a p2p conn stops its timer
	 * at every step): no lock for them.  A start that happened before
	 * this call, in any thread, is seen (its store preceded the unlock
	 * of whatever lock ordered the two calls).
	 */
	if (!__atomic_load_n(&timer->armed, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&timer_lock);
	if (timer->armed)
		cma_timer_unlink(timer);
	pthread_mutex_unlock(&timer_lock);
}

void cma_timer_sync(struct cma_timer *timer)
{
	pthread_mutex_lock(&timer_lock);
	for (;;) {
		/* Also when the expire() waited for re-armed it. */
		if (timer->armed)
			cma_timer_unlink(timer);
		/* From inside its own expire() there is nothing to wait for. */
		if (!timer->running ||
		    pthread_equal(timer->runner, pthread_self()))
			break;
		pthread_cond_wait(&timer_done, &timer_lock);
	}
	pthread_mutex_unlock(&timer_lock);
}

/*
 * For tests: wait until the service thread has run every timer due now
 * and handles no channel (what it was given to do is done).
 */
void cma_service_settle(void)
{
	struct cma_timer *t;
	bool busy;

	pthread_mutex_lock(&timer_lock);
	for (;;) {
		busy = svc_busy != NULL || timer_in_expire;
		for (t = timers; t && !busy; t = t->next)
			busy = t->deadline_ns <= cma_now_ns();
		if (!busy || !timer_thread_up)
			break;
		pthread_cond_wait(&timer_done, &timer_lock);
	}
	pthread_mutex_unlock(&timer_lock);
}

/*
 * Stop the service thread and wait for it (it starts again when next
 * needed).  Unloading the library must not leave the thread in its code;
 * a test swaps the kernel behind the library only once it is stopped.
 */
void cma_service_stop(void)
{
	bool up;

	pthread_mutex_lock(&timer_lock);
	up = timer_thread_up;
	timer_quit = true;
	if (up)
		cma_timer_kick();
	pthread_mutex_unlock(&timer_lock);
	if (!up || pthread_equal(timer_thread, pthread_self()))
		return;
	pthread_join(timer_thread, NULL);
	pthread_mutex_lock(&timer_lock);
	timer_thread_up = false;
	timer_thread_ran = false;
	timer_quit = false;
	pthread_mutex_unlock(&timer_lock);
}

bool cma_service_thread_ran(void)
{
	bool ran;

	pthread_mutex_lock(&timer_lock);
	ran = timer_thread_up && timer_thread_ran;
	pthread_mutex_unlock(&timer_lock);
	return ran;
}

unsigned long cma_service_wakeups(void)
{
	unsigned long n;

	pthread_mutex_lock(&timer_lock);
	n = svc_wakeups;
	pthread_mutex_unlock(&timer_lock);
	return n;
}

static void __attribute__((destructor)) cma_timer_fini(void)
{
	cma_service_stop();
}

/* --- served channels ------------------------------------------------------ */

/*
 * Forget a served channel and wait until the thread is not handling its
 * events (it may be, in another thread; never from the thread itself).
 */
static void cma_service_remove_locked(struct rdma_event_channel *channel,
				      int kfd)
{
	struct cma_served **pp, *s;

	for (pp = &served; (s = *pp); pp = &s->next) {
		if (s->channel == channel) {
			*pp = s->next;
			free(s);
			break;
		}
	}
	if (svc_epfd >= 0)
		epoll_ctl(svc_epfd, EPOLL_CTL_DEL, kfd, NULL);
	while (svc_busy == channel &&
	       !pthread_equal(timer_thread, pthread_self()))
		pthread_cond_wait(&timer_done, &timer_lock);
}

void cma_service_remove(struct rdma_event_channel *channel, int kfd)
{
	pthread_once(&timer_once, cma_timer_init_once);
	pthread_mutex_lock(&timer_lock);
	cma_service_remove_locked(channel, kfd);
	pthread_mutex_unlock(&timer_lock);
}

/*
 * Events the kernel moved to the fd (a migration) wake no epoll, and an
 * application thread that waited on the fd itself leaves what came
 * meanwhile: look again.
 */
void cma_service_recheck(struct rdma_event_channel *channel)
{
	pthread_mutex_lock(&timer_lock);
	if (svc_epfd >= 0 && cma_served_has(channel))
		cma_service_arm(channel);
	pthread_mutex_unlock(&timer_lock);
}

/* The thread's epoll set with its eventfd and timerfd (lock held). */
static int cma_service_open(void)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	struct epoll_event tev = {.events = EPOLLIN, .data.ptr = SVC_TIMER_TAG};
	int epfd, wfd, tfd;

	if (svc_epfd >= 0)
		return 0;
	epfd = cma_fd_move_high(epoll_create1(EPOLL_CLOEXEC), fcntl, close);
	if (epfd < 0)
		return -1;
	wfd = cma_fd_move_high(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), fcntl,
			       close);
	if (wfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, wfd, &ev)) {
		if (wfd >= 0)
			close(wfd);
		close(epfd);
		return -1;
	}
	svc_wakefd = wfd;
	/* Without a timerfd the thread's epoll_wait times out instead. */
	tfd = cma_fd_move_high(
		timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC),
		fcntl, close);
	if (tfd >= 0 && epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &tev)) {
		close(tfd);
		tfd = -1;
	}
	svc_timerfd = tfd;
	svc_timerfd_at = UINT64_MAX;
	/* Published last: the thread polls it once it is set. */
	svc_epfd = epfd;
	return 0;
}

int cma_service_add_handler(struct rdma_event_channel *channel, int kfd,
			    bool (*handle)(struct rdma_event_channel *channel))
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT,
				 .data.ptr = channel};
	struct cma_served *s = malloc(sizeof(*s));
	int ret = -1;

	if (!s)
		return cma_err(ENOMEM);
	pthread_once(&timer_once, cma_timer_init_once);
	pthread_mutex_lock(&timer_lock);
	if (!cma_service_open() &&
	    !epoll_ctl(svc_epfd, EPOLL_CTL_ADD, kfd, &ev)) {
		s->channel = channel;
		s->fd = kfd;
		s->handle = handle;
		s->next = served;
		served = s;
		s = NULL;
		cma_timer_thread_start();
		cma_timer_kick(); /* from a condition wait to the epoll set */
		ret = timer_thread_up ? 0 : -1;
		if (ret)
			cma_service_remove_locked(channel, kfd);
	}
	pthread_mutex_unlock(&timer_lock);
	free(s);
	return ret;
}

int cma_service_add(struct rdma_event_channel *channel, int kfd)
{
	return cma_service_add_handler(channel, kfd, NULL);
}
