// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The rsocket descriptor table (src/rsocket/table.c) on the fake kernel and
 * device: a reference outlives the number rclose takes away, the wake fd
 * costs a descriptor only while a thread sleeps on the socket, and a
 * sleeper with no descriptor left for one still wakes when the socket is
 * closed, lookups racing closes find a live socket or none, and a child
 * forked during a lookup, an insert or a removal finds its socket and
 * makes new ones.
 */
#include <config.h>

#include <errno.h>
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rsocket/rs.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"
#include "rs_call.h"

/* The memory stays while a reference is held, the number goes at once. */
START_TEST(reference_outlives_the_number)
{
	int s = connected_stream();
	struct rsocket *rs = rs_get(s);

	ck_assert_ptr_nonnull(rs);
	ck_assert_int_eq(rclose(s), 0);
	ck_assert_ptr_null(rs_get(s));
	ck_assert_int_eq(errno, EBADF);
	ck_assert_int_eq(rclose(s), -1);
	ck_assert_int_eq(errno, EBADF);
	ck_assert_int_eq(fake_verbs_counts().cqs, 1);
	ck_assert(rs->closing);
	rs_put(rs);
	ck_assert_int_eq(fake_verbs_counts().cqs, 0);
}
END_TEST

static int sleepers(struct rsocket *rs)
{
	int n;

	pthread_mutex_lock(&rs->wake_lock);
	n = rs->sleepers;
	pthread_mutex_unlock(&rs->wake_lock);
	return n;
}

/*
 * The wake fd costs a descriptor only while a thread sleeps on
 * the socket; sleepers (a receiver, an rpoll) share one, and the last to
 * leave closes it.
 */
START_TEST(wake_fd_only_while_a_thread_sleeps)
{
	int s = connected_stream();
	struct rsocket *rs = rs_get(s);
	struct pollfd pfd = {.fd = s, .events = POLLIN};
	struct call r, p;

	ck_assert(rs_wake_idle(rs));
	/* An rpoll that slept and timed out gives it back. */
	ck_assert_int_eq(rpoll(&pfd, 1, 1), 0);
	ck_assert(rs_wake_idle(rs));
	/* Our reference counts as one more holder. */
	call_start(&r, s, DO_RECV, 2);
	call_start(&p, s, DO_POLL, 3);
	while (sleepers(rs) < 2)
		sched_yield();
	ck_assert(!rs_wake_idle(rs));
	ck_assert_int_ge(rs->wake_fd, 0);
	ck_assert_int_eq(rclose(s), 0);
	call_join(&r);
	call_join(&p);
	ck_assert_int_eq(r.err, EBADF);
	ck_assert_int_eq(p.pfd.revents, POLLNVAL);
	ck_assert(rs_wake_idle(rs));
	rs_put(rs);
}
END_TEST

/* The highest descriptor open now. */
static int highest_fd(void)
{
	struct dirent *d;
	DIR *dir = opendir("/proc/self/fd");
	int fd, top = -1;

	ck_assert_ptr_nonnull(dir);
	while ((d = readdir(dir))) {
		fd = d->d_name[0] == '.' ? -1 : atoi(d->d_name);
		if (fd > top)
			top = fd;
	}
	closedir(dir);
	return top;
}

/*
 * No descriptor left for a wake fd: the sleeper sleeps in slices and
 * still ends with EBADF when the socket is closed.
 */
START_TEST(sleeper_without_a_wake_fd_still_wakes)
{
	int s = connected_stream();
	struct rsocket *rs = rs_get(s);
	struct rlimit old, low;
	int fds[1024], n = 0, fd;
	struct call c;

	/* Every number below the limit taken: eventfd fails (EMFILE). */
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)highest_fd() + 1;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (n < 1024 && (fd = dup(0)) >= 0)
		fds[n++] = fd;
	ck_assert_int_eq(eventfd(0, 0), -1);
	call_start(&c, s, DO_RECV, 2);
	while (!__atomic_load_n(&rs->cq_armed, __ATOMIC_ACQUIRE))
		sched_yield();
	ck_assert(rs_wake_idle(rs));
	ck_assert_int_eq(rclose(s), 0);
	call_join(&c);
	while (n)
		close(fds[--n]);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	ck_assert_int_eq(c.ret, -1);
	ck_assert_int_eq(c.err, EBADF);
	rs_put(rs);
}
END_TEST

/*
 * Lookups racing the sockets' creation and close under the same numbers:
 * each finds the socket published under its number, alive, or none (the
 * stripe is a spin lock; the sanitizer builds see what a lapse would do).
 */
struct lookups {
	int s;
	bool stop;
};

static void *look_up(void *arg)
{
	struct lookups *l = arg;

	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
		int s = __atomic_load_n(&l->s, __ATOMIC_RELAXED);
		struct rsocket *rs = rs_get(s);

		if (!rs)
			continue;
		ck_assert_int_eq(rs->index, s);
		ck_assert_int_eq(rs->type, SOCK_STREAM);
		rs_put(rs);
	}
	return NULL;
}

START_TEST(lookups_racing_closes_find_a_live_socket_or_none)
{
	struct lookups l = {.s = -1};
	pthread_t t[2];
	int i, s;

	for (i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, look_up, &l), 0);
	for (i = 0; i < 500; i++) {
		s = rsocket(AF_INET, SOCK_STREAM, 0);
		ck_assert_int_ge(s, 0);
		__atomic_store_n(&l.s, s, __ATOMIC_RELAXED);
		sched_yield();
		ck_assert_int_eq(rclose(s), 0);
	}
	__atomic_store_n(&l.stop, true, __ATOMIC_RELEASE);
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	ck_assert_ptr_null(rs_get(s));
}
END_TEST

static void *look_up_one(void *arg)
{
	struct lookups *l = arg;

	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE))
		rs_put(rs_get(l->s));
	return NULL;
}

static bool finds_the_socket(void *arg)
{
	return rs_get(((struct lookups *)arg)->s) != NULL;
}

/* The looking-up thread may have held the number's stripe at the fork. */
START_TEST(a_child_forked_during_a_lookup_finds_its_socket)
{
	struct lookups l = {.s = rsocket(AF_INET, SOCK_STREAM, 0)};

	ck_assert_int_ge(l.s, 0);
	unit_forks_beside(look_up_one, &l, &l.stop, finds_the_socket);
	ck_assert_int_eq(rclose(l.s), 0);
}
END_TEST

/* A socket of the table's own, without a CM id: its number is l->s. */
static bool publish_and_withdraw(struct lookups *l)
{
	struct rsocket *rs = rs_alloc(NULL, SOCK_STREAM);

	if (!rs || rs_insert(rs, l->s))
		return false;
	return rs_unpublish(rs);
}

/* One socket in and out of the table: most of the time inside its lock. */
static void *publish_and_withdraw_again(void *arg)
{
	struct rsocket *rs = rs_alloc(NULL, SOCK_STREAM);
	struct lookups *l = arg;
	bool ok = rs != NULL;

	/* no check inside: each writes to Check's pipe, outside the table */
	while (ok && !__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
		ok = !rs_insert(rs, l->s);
		if (!ok)
			break;
		rs_ref(rs); /* the table's reference goes with the number */
		ok = rs_unpublish(rs);
	}
	ck_assert(ok);
	rs_put(rs);
	return NULL;
}

static bool publishes_another(void *arg)
{
	struct lookups other = {.s = ((struct lookups *)arg)->s + 1};

	return publish_and_withdraw(&other);
}

/* The other thread may have been inside an insert or a removal. */
START_TEST(a_child_forked_during_an_insert_makes_sockets)
{
	struct lookups l = {.s = 4000};

	rs_configure(); /* as every call that makes a socket does first */
	unit_forks_beside(publish_and_withdraw_again, &l, &l.stop,
			  publishes_another);
}
END_TEST

Suite *rsocket_table_suite(void)
{
	Suite *s = suite_create("rsocket_table");
	TCase *tc = tcase_create("table");

	tcase_add_checked_fixture(tc, rs_call_setup, rs_call_teardown);
	tcase_add_test(tc, reference_outlives_the_number);
	tcase_add_test(tc, wake_fd_only_while_a_thread_sleeps);
	tcase_add_test(tc, sleeper_without_a_wake_fd_still_wakes);
	tcase_add_test(tc, lookups_racing_closes_find_a_live_socket_or_none);
	tcase_add_test(tc, a_child_forked_during_a_lookup_finds_its_socket);
	tcase_add_test(tc, a_child_forked_during_an_insert_makes_sockets);
	suite_add_tcase(s, tc);
	return s;
}
