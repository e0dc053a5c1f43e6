// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * repoll_create, repoll_ctl and repoll_wait (src/rsocket/epoll.c) on the fake
 * kernel and device: an instance forgets a closed rsocket as epoll forgets
 * a closed file, an instance number used again after close(2) starts
 * empty, a wait watches an rsocket another thread adds meanwhile, and a
 * child forked while another thread changes a set can use it.
 */
#include <config.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "rsocket/rs.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"
#include "rs_call.h"

/*
 * repoll_wait forgets a closed rsocket, as epoll forgets a closed file:
 * the close does not end the wait with a spurious event, the set's other
 * members still report.
 */
START_TEST(repoll_wait_forgets_a_closed_rsocket)
{
	int s = bound_dgram(), p[2], epfd = repoll_create(0);
	struct epoll_event ev = {.events = EPOLLIN};
	struct rsocket *rs;
	struct call c;

	ck_assert_int_ge(epfd, 0);
	ck_assert_int_eq(pipe(p), 0);
	ev.data.u32 = 1;
	ck_assert_int_eq(repoll_ctl(epfd, EPOLL_CTL_ADD, s, &ev), 0);
	ev.data.u32 = 2;
	ck_assert_int_eq(repoll_ctl(epfd, EPOLL_CTL_ADD, p[0], &ev), 0);
	memset(&c, 0, sizeof(c));
	c.epfd = epfd;
	call_start(&c, s, DO_EPOLL, 1);
	/* Let the wait's rpoll be the only holder besides the table. */
	rs = rs_get(s);
	rs_put(rs);
	ck_assert_int_eq(rclose(s), 0);
	ck_assert_int_eq(write(p[1], "x", 1), 1);
	call_join(&c);
	ck_assert_int_eq(c.ret, 1);
	ck_assert_uint_eq(c.ev[0].data.u32, 2);
	/* Gone from the set: adding the number again is not EEXIST. */
	ck_assert_int_eq(repoll_ctl(epfd, EPOLL_CTL_DEL, s, NULL), -1);
	close(epfd);
	close(p[0]);
	close(p[1]);
}
END_TEST

/*
 * An instance is closed with close(2), which the library never sees: the
 * next instance given the same number starts empty, so an rsocket the
 * closed one held is not in it.
 */
START_TEST(repoll_number_reused_after_close_starts_empty)
{
	int s = bound_dgram(), epfd = repoll_create(0), again;
	struct epoll_event ev = {.events = EPOLLIN};

	ck_assert_int_ge(epfd, 0);
	ck_assert_int_eq(repoll_ctl(epfd, EPOLL_CTL_ADD, s, &ev), 0);
	close(epfd);
	again = repoll_create(0);
	ck_assert_int_eq(again, epfd);
	ck_assert_int_eq(repoll_ctl(again, EPOLL_CTL_DEL, s, NULL), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(repoll_ctl(again, EPOLL_CTL_ADD, s, &ev), 0);
	close(again);
	ck_assert_int_eq(rclose(s), 0);
}
END_TEST

/*
 * An rsocket that another thread adds while a thread waits is watched by
 * that wait at once, as the kernel's epoll watches a new member.
 */
START_TEST(repoll_wait_watches_a_member_added_meanwhile)
{
	int quiet = bound_dgram(), late = bound_dgram();
	int epfd = repoll_create(0);
	struct epoll_event ev = {.events = EPOLLIN};
	struct call c;

	ck_assert_int_ge(epfd, 0);
	ev.data.u32 = 1;
	ck_assert_int_eq(repoll_ctl(epfd, EPOLL_CTL_ADD, quiet, &ev), 0);
	memset(&c, 0, sizeof(c));
	c.epfd = epfd;
	/*
	 * Returns once the wait holds quiet: in its rpoll, or about to be;
	 * the pause lets it sleep there (without it the add may come before
	 * the wait's snapshot, which then passes whatever the library does).
	 */
	call_start(&c, quiet, DO_EPOLL, 1);
	usleep(100 * 1000);
	ev.events = EPOLLOUT;
	ev.data.u32 = 2;
	ck_assert_int_eq(repoll_ctl(epfd, EPOLL_CTL_ADD, late, &ev), 0);
	call_join(&c);
	ck_assert_int_eq(c.ret, 1);
	ck_assert_uint_eq(c.ev[0].data.u32, 2);
	close(epfd);
	ck_assert_int_eq(rclose(quiet), 0);
	ck_assert_int_eq(rclose(late), 0);
}
END_TEST

struct churn {
	int epfd, busy, other;
	bool stop;
};

/* One rsocket in and out of the set: most of the time in its locks. */
static void *add_and_remove_again(void *arg)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct churn *c = arg;
	bool ok = true;

	/* no check inside: each writes to Check's pipe, outside the locks */
	while (ok && !__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE))
		ok = !repoll_ctl(c->epfd, EPOLL_CTL_ADD, c->busy, &ev) &&
		     !repoll_ctl(c->epfd, EPOLL_CTL_DEL, c->busy, NULL);
	ck_assert(ok);
	return NULL;
}

static bool adds_another_and_makes_a_set(void *arg)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct churn *c = arg;
	int epfd = repoll_create(0);

	if (epfd < 0)
		return false;
	close(epfd);
	return !repoll_ctl(c->epfd, EPOLL_CTL_ADD, c->other, &ev) &&
	       !repoll_ctl(c->epfd, EPOLL_CTL_DEL, c->other, NULL);
}

/*
 * A child forked while another thread changes a set uses the set and
 * makes new ones: the locks that thread may have held are not its.
 */
START_TEST(a_child_forked_during_a_change_uses_the_set)
{
	struct churn c = {.epfd = repoll_create(0),
			  .busy = bound_dgram(),
			  .other = bound_dgram()};

	ck_assert_int_ge(c.epfd, 0);
	unit_forks_beside(add_and_remove_again, &c, &c.stop,
			  adds_another_and_makes_a_set);
	close(c.epfd);
	ck_assert_int_eq(rclose(c.busy), 0);
	ck_assert_int_eq(rclose(c.other), 0);
}
END_TEST

Suite *rsocket_epoll_suite(void)
{
	Suite *s = suite_create("rsocket_epoll");
	TCase *tc = tcase_create("epoll");

	tcase_add_checked_fixture(tc, rs_call_setup, rs_call_teardown);
	tcase_add_test(tc, repoll_wait_forgets_a_closed_rsocket);
	tcase_add_test(tc, repoll_number_reused_after_close_starts_empty);
	tcase_add_test(tc, repoll_wait_watches_a_member_added_meanwhile);
	tcase_add_test(tc, a_child_forked_during_a_change_uses_the_set);
	suite_add_tcase(s, tc);
	return s;
}
