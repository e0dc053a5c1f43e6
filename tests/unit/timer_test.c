// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for src/cm/timer.c: the library's timers and the service
 * thread that runs them (on time, without waking a channel that has
 * nothing for its reader, posting events from the thread), the wait for an
 * expire() that is running, and a fork while the thread holds a lock.  On
 * the fake kernel device (fake_ucma).
 */
#include <config.h>

#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/wait.h>

#include "cm/cma.h"
#include "fake_ucma.h"
#include "p2p/p2p_table.h"
#include "cm/test_hooks.h"
#include "unit.h"

static struct rdma_event_channel *channel;
static struct cma_id_private *id;

static void setup(void)
{
	fake_ucma_install();
	channel = cma_channel_create();
	ck_assert_ptr_nonnull(channel);
	id = cma_id_alloc(channel, (void *)0x1234, RDMA_PS_TCP, IBV_QPT_RC);
	ck_assert_ptr_nonnull(id);
	ck_assert_int_eq(cma_id_create_kernel(id), 0);
}

static void teardown(void)
{
	cma_id_free(id);
	cma_channel_destroy(channel);
	fake_ucma_uninstall();
}

/* The kernel reports an event for the test's id. */
static struct rdma_ucm_event_resp *push(uint32_t event, int32_t status)
{
	struct rdma_ucm_event_resp *r =
		fake_ucma_event(id->handle, event, status);

	ck_assert_ptr_nonnull(r);
	return r;
}

static struct cma_timer test_timer;
static int timer_runs;

static void post_from_timer(struct cma_timer *timer)
{
	struct cma_event *evt;

	ck_assert_ptr_eq(timer, &test_timer);
	timer_runs++;
	evt = cma_event_new(id, RDMA_CM_EVENT_USER, 0);
	ck_assert_ptr_nonnull(evt);
	evt->event.param.arg = 42;
	cma_event_post(evt);
}

/* (The fixture's channel is a private one: it must wake for the post.) */
START_TEST(timers_post_from_the_service_thread)
{
	struct rdma_cm_event *ev;

	timer_runs = 0;
	test_timer.expire = post_from_timer;
	/* (armed is the timer thread's to change now: not read here) */
	cma_timer_start(channel, &test_timer, 20);
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_int_eq(timer_runs, 1);
	ck_assert(!test_timer.armed);
	ck_assert_uint_eq(ev->param.arg, 42);
	rdma_ack_cm_event(ev);

	cma_timer_start(channel, &test_timer, 10000);
	cma_timer_stop(&test_timer);
	ck_assert(!test_timer.armed);
	push(RDMA_CM_EVENT_ESTABLISHED, 0);
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_ESTABLISHED);
	ck_assert_int_eq(timer_runs, 1);
	rdma_ack_cm_event(ev);
}
END_TEST

/* Two timers whose events say which one ran (arg 1 or 2). */
static struct cma_timer first_timer, second_timer;

static void post_which_timer(struct cma_timer *timer)
{
	struct cma_event *evt = cma_event_new(id, RDMA_CM_EVENT_USER, 0);

	ck_assert_ptr_nonnull(evt);
	evt->event.param.arg = timer == &first_timer ? 1 : 2;
	cma_event_post(evt);
}

static long ms_until_timer_event(const struct timespec *t0, uint64_t which)
{
	struct rdma_cm_event *ev;

	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_uint_eq(ev->param.arg, which);
	rdma_ack_cm_event(ev);
	return unit_ms_since(t0);
}

/*
 * The service thread is woken only for a deadline before its own.  One
 * before it must still fire on time (not when the later one is due); one
 * after it fires although nobody woke the thread for it, also when the
 * deadline the thread sleeps towards was stopped meanwhile.
 */
START_TEST(timers_fire_on_time_with_or_without_a_wake_up)
{
	struct timespec t0;

	first_timer.expire = second_timer.expire = post_which_timer;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cma_timer_start(channel, &first_timer, 60000);
	cma_timer_start(channel, &second_timer, 20);
	ck_assert_int_lt(ms_until_timer_event(&t0, 2), 30000);
	cma_timer_sync(&first_timer);

	cma_timer_start(channel, &first_timer, 30);
	cma_timer_stop(&first_timer);
	cma_timer_start(channel, &second_timer, 60);
	ck_assert_int_lt(ms_until_timer_event(&t0, 2), 30000);
	cma_timer_sync(&second_timer);
}
END_TEST

/*
 * A p2p listener starts the service thread and lets it run before
 * rdma_listen returns, so that its first run is not paid by the connects
 * that follow (on one CPU they would wait for it).
 */
START_TEST(prestart_returns_once_the_service_thread_ran)
{
	cma_service_stop();
	ck_assert(!cma_service_thread_ran());
	cma_timer_prestart();
	ck_assert(cma_service_thread_ran());
}
END_TEST

/*
 * Arming a timer due before the sleeping service thread's next deadline
 * sets its timerfd; it does not wake the thread (two context switches for
 * nothing: a p2p mesh arms one with its first connect).
 */
START_TEST(arming_a_timer_leaves_the_service_thread_asleep)
{
	struct timespec t0;
	unsigned long woke;

	first_timer.expire = second_timer.expire = post_which_timer;
	cma_timer_prestart();
	cma_service_settle();
	cma_timer_start(channel, &first_timer, 60000);
	usleep(50000); /* it sleeps in its epoll set by now */
	woke = cma_service_wakeups();
	cma_timer_start(channel, &second_timer, 30000);
	usleep(50000);
	ck_assert_uint_eq(cma_service_wakeups(), woke);
	/* Still on time once moved forward again. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cma_timer_start(channel, &second_timer, 20);
	ck_assert_int_lt(ms_until_timer_event(&t0, 2), 30000);
	cma_timer_sync(&first_timer);
	cma_timer_sync(&second_timer);
}
END_TEST

/* A timer with nothing to report (a hold check whose peer still waits). */
static pthread_mutex_t quiet_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t quiet_cond = PTHREAD_COND_INITIALIZER;
static bool quiet_ran;

static void quiet_expire(struct cma_timer *timer)
{
	(void)timer;
	pthread_mutex_lock(&quiet_lock);
	quiet_ran = true;
	pthread_cond_broadcast(&quiet_cond);
	pthread_mutex_unlock(&quiet_lock);
}

/*
 * A readable channel fd means an event is there (programs poll,
 * then block in rdma_get_cm_event).  A timer that posts nothing runs
 * without the application's thread and leaves the fd quiet.
 */
START_TEST(quiet_timers_never_wake_the_channel)
{
	struct rdma_event_channel *pollable = rdma_create_event_channel();
	struct pollfd pfd = {.events = POLLIN};

	ck_assert_ptr_nonnull(pollable);
	pfd.fd = pollable->fd;
	test_timer.expire = quiet_expire;
	cma_timer_start(pollable, &test_timer, 0);
	pthread_mutex_lock(&quiet_lock);
	while (!quiet_ran)
		pthread_cond_wait(&quiet_cond, &quiet_lock);
	pthread_mutex_unlock(&quiet_lock);
	cma_timer_sync(&test_timer);
	ck_assert_int_eq(poll(&pfd, 1, 0), 0);
	rdma_destroy_event_channel(pollable);
}
END_TEST

/*
 * A due timer's expire() runs after the channel's lock
 * is dropped, and the timer lives in the object it serves.  Its owner may
 * only be freed once cma_timer_sync() says expire() has returned.  The test
 * holds expire() in the service thread and checks that the sync waits for
 * it; a reader takes the event it posts.
 */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool in_expire, let_go, sync_done;

static void held_expire(struct cma_timer *timer)
{
	(void)timer;
	pthread_mutex_lock(&gate_lock);
	in_expire = true;
	pthread_cond_broadcast(&gate_cond);
	while (!let_go)
		pthread_cond_wait(&gate_cond, &gate_lock);
	/* the owner must still be alive here */
	ck_assert(!sync_done);
	pthread_mutex_unlock(&gate_lock);
	cma_event_post(cma_event_new(id, RDMA_CM_EVENT_USER, 0));
}

static void *reader(void *arg)
{
	struct rdma_cm_event *ev;

	(void)arg;
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	rdma_ack_cm_event(ev);
	return NULL;
}

static void *syncer(void *arg)
{
	cma_timer_sync(arg);
	pthread_mutex_lock(&gate_lock);
	sync_done = true;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
	return NULL;
}

START_TEST(sync_waits_for_a_running_expire)
{
	pthread_t r, s;

	test_timer.expire = held_expire;
	cma_timer_start(channel, &test_timer, 0);
	ck_assert_int_eq(pthread_create(&r, NULL, reader, NULL), 0);
	pthread_mutex_lock(&gate_lock);
	while (!in_expire)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	ck_assert(test_timer.running);
	ck_assert(!test_timer.armed);
	cma_timer_stop(&test_timer); /* never waits: may run under any lock */
	ck_assert_int_eq(pthread_create(&s, NULL, syncer, &test_timer), 0);
	/*
	 * A sync that does not wait finishes at once: give it the chance
	 * (bounded; a correct one cannot finish before let_go, so how long
	 * this waits never decides the verdict, only how surely a broken
	 * sync is caught).
	 */
	pthread_mutex_lock(&gate_lock);
	{
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 200000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		while (!sync_done &&
		       !pthread_cond_timedwait(&gate_cond, &gate_lock, &until))
			;
	}
	ck_assert_msg(!sync_done, "cma_timer_sync returned while expire ran");
	let_go = true;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
	pthread_join(s, NULL);
	ck_assert(!test_timer.running);
	pthread_join(r, NULL);
}
END_TEST

/*
 * A timer's expire() holding p2p_lock (as the p2p timers do) until the
 * test lets it go.
 */
static void p2p_locked_expire(struct cma_timer *timer)
{
	(void)timer;
	cma_p2p_lock();
	pthread_mutex_lock(&gate_lock);
	in_expire = true;
	pthread_cond_broadcast(&gate_cond);
	while (!let_go)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	cma_p2p_unlock();
}

static void *let_go_soon(void *arg)
{
	(void)arg;
	usleep(200 * 1000);
	pthread_mutex_lock(&gate_lock);
	let_go = true;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
	return NULL;
}

/*
 * A process forks while the library's service thread holds p2p_lock in a
 * timer's expire(): fork waits until the thread has left it, so the child
 * (which has no such thread) can take it.  Before, the child's first p2p
 * call hung for ever (here: the child's alarm kills it).
 */
START_TEST(fork_never_inherits_a_lock_the_service_thread_holds)
{
	pthread_t t;
	int status;
	pid_t pid;

	test_timer.expire = p2p_locked_expire;
	cma_timer_start(channel, &test_timer, 0);
	pthread_mutex_lock(&gate_lock);
	while (!in_expire)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	ck_assert_int_eq(pthread_create(&t, NULL, let_go_soon, NULL), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		alarm(5);
		cma_p2p_lock();
		cma_p2p_unlock();
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the child could not take p2p_lock (status %#x)", status);
	pthread_join(t, NULL);
	cma_timer_sync(&test_timer);
}
END_TEST

Suite *timer_suite(void)
{
	Suite *s = suite_create("timer");
	TCase *tc = tcase_create("service");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, timers_post_from_the_service_thread);
	tcase_add_test(tc, timers_fire_on_time_with_or_without_a_wake_up);
	tcase_add_test(tc, prestart_returns_once_the_service_thread_ran);
	tcase_add_test(tc, fork_never_inherits_a_lock_the_service_thread_holds);
	tcase_add_test(tc, arming_a_timer_leaves_the_service_thread_asleep);
	tcase_add_test(tc, quiet_timers_never_wake_the_channel);
	tcase_add_test(tc, sync_waits_for_a_running_expire);
	suite_add_tcase(s, tc);
	return s;
}
