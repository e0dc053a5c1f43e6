// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rpoll and rselect (src/rsocket/poll.c) on the fake kernel and device:
 * an rpoll asleep on a stream or datagram rsocket that another thread
 * closes ends, reporting the socket as POLLNVAL as poll(2) reports a bad
 * descriptor; rsockets and ordinary descriptors mix in one call, entries
 * with a negative descriptor are skipped as poll(2) skips them, and
 * rselect reports through its sets what rpoll found.
 */
#include <config.h>

#include <poll.h>
#include <unistd.h>
#include <sys/select.h>

#include "rsocket/rs.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"
#include "rs_call.h"

/* rpoll ends, reporting the closed socket as poll(2) reports a bad fd. */
START_TEST(blocked_rpoll_reports_pollnval_on_rclose)
{
	int stream = connected_stream(), dgram = bound_dgram();
	struct call a, b;

	call_start(&a, stream, DO_POLL, 1);
	call_start(&b, dgram, DO_POLL, 1);
	ck_assert_int_eq(rclose(stream), 0);
	ck_assert_int_eq(rclose(dgram), 0);
	call_join(&a);
	call_join(&b);
	ck_assert_int_eq(a.ret, 1);
	ck_assert_int_eq(a.pfd.revents, POLLNVAL);
	ck_assert_int_eq(b.ret, 1);
	ck_assert_int_eq(b.pfd.revents, POLLNVAL);
	ck_assert_int_eq(fake_verbs_counts().cqs, 0);
}
END_TEST

/*
 * One call over a datagram rsocket with nothing queued, a pipe with a byte
 * in it and an entry to skip: only the pipe is reported, and with nothing
 * ready the call waits out its timeout.
 */
START_TEST(rpoll_mixes_rsockets_and_ordinary_descriptors)
{
	int s = bound_dgram(), p[2];
	struct pollfd fds[3] = {
		{.fd = s, .events = POLLIN},
		{.events = POLLIN},
		{.fd = -1, .events = POLLIN},
	};

	ck_assert_int_eq(pipe(p), 0);
	fds[1].fd = p[0];
	ck_assert_int_eq(rpoll(fds, 3, 0), 0);
	ck_assert_int_eq(write(p[1], "x", 1), 1);
	ck_assert_int_eq(rpoll(fds, 3, 0), 1);
	ck_assert_int_eq(fds[0].revents, 0);
	ck_assert_int_eq(fds[1].revents, POLLIN);
	ck_assert_int_eq(fds[2].revents, 0);
	ck_assert_int_eq(rpoll(fds, 1, 5), 0);
	ck_assert_int_eq(rpoll(NULL, 0, 0), 0);
	close(p[0]);
	close(p[1]);
	ck_assert_int_eq(rclose(s), 0);
}
END_TEST

/* rselect: each set keeps the descriptors ready for it, and counts them. */
START_TEST(rselect_reports_through_its_sets)
{
	int s = bound_dgram(), p[2], nfds;
	struct timeval tv = {0, 0};
	fd_set r, w;

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_lt(s, FD_SETSIZE);
	nfds = (s > p[0] ? s : p[0]) + 1;
	FD_ZERO(&r);
	FD_SET(s, &r);
	FD_SET(p[0], &r);
	ck_assert_int_eq(rselect(nfds, &r, NULL, NULL, &tv), 0);
	ck_assert(!FD_ISSET(s, &r) && !FD_ISSET(p[0], &r));
	ck_assert_int_eq(write(p[1], "x", 1), 1);
	FD_SET(s, &r);
	FD_SET(p[0], &r);
	FD_ZERO(&w);
	FD_SET(s, &w);
	ck_assert_int_eq(rselect(nfds, &r, &w, NULL, &tv), 2);
	ck_assert(!FD_ISSET(s, &r) && FD_ISSET(p[0], &r));
	ck_assert(FD_ISSET(s, &w));
	tv.tv_usec = -1;
	ck_assert_int_eq(rselect(nfds, &r, NULL, NULL, &tv), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rselect(FD_SETSIZE + 1, NULL, NULL, NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	close(p[0]);
	close(p[1]);
	ck_assert_int_eq(rclose(s), 0);
}
END_TEST

Suite *rsocket_poll_suite(void)
{
	Suite *s = suite_create("rsocket_poll");
	TCase *tc = tcase_create("poll");

	tcase_add_checked_fixture(tc, rs_call_setup, rs_call_teardown);
	tcase_add_test(tc, blocked_rpoll_reports_pollnval_on_rclose);
	tcase_add_test(tc, rpoll_mixes_rsockets_and_ordinary_descriptors);
	tcase_add_test(tc, rselect_reports_through_its_sets);
	suite_add_tcase(s, tc);
	return s;
}
