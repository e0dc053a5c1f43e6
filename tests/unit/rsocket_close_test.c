// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rclose while other threads are inside calls on the same rsocket.  A call
 * holds a reference from its lookup to its return; rclose takes the number
 * away at once and wakes every thread asleep on the socket, which then
 * fails with EBADF (rpoll reports POLLNVAL); the socket is freed by
 * whoever drops the last reference.
 *
 * Stream sockets come from the fake rdma_cm device (fake_ucma) with a
 * completion queue and channel from the fake verbs device (fake_verbs),
 * whose channel is a real, blocking eventfd: a thread asleep on it sleeps
 * as it would on the kernel's.  Before the reference count, rclose freed
 * the socket under the sleeper, which never woke (Check's timeout failed
 * the test) or woke into freed memory.  Datagram sockets use a real UDP
 * socket on loopback and need no fake.  The tests of this kind that are
 * about one module are in that module's file (rsocket_poll_test,
 * rsocket_epoll_test, rsocket_table_test, rsocket_shutdown_test), and the
 * helpers they share in rs_call.h.
 */
#include <config.h>

#include <check.h>
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rsocket/rs.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"
#include "rs_call.h"

START_TEST(blocked_rrecv_fails_with_ebadf_on_rclose)
{
	int s = connected_stream();
	struct call c;

	call_start(&c, s, DO_RECV, 1);
	ck_assert_int_eq(rclose(s), 0);
	call_join(&c);
	ck_assert_int_eq(c.ret, -1);
	ck_assert_int_eq(c.err, EBADF);
	/* The last reference went with the call: everything is freed. */
	ck_assert_int_eq(fake_verbs_counts().cqs, 0);
	ck_assert_int_eq(fake_verbs_counts().channels, 0);
}
END_TEST

/* A receiver and a sender asleep at once: both wake, both fail. */
START_TEST(blocked_rrecv_and_rsend_both_wake)
{
	int s = connected_stream();
	struct call r, w;

	call_start(&r, s, DO_RECV, 1);
	call_start(&w, s, DO_SEND, 2);
	ck_assert_int_eq(rclose(s), 0);
	call_join(&r);
	call_join(&w);
	ck_assert_int_eq(r.ret, -1);
	ck_assert_int_eq(r.err, EBADF);
	ck_assert_int_eq(w.ret, -1);
	ck_assert_int_eq(w.err, EBADF);
	ck_assert_int_eq(fake_verbs_counts().cqs, 0);
}
END_TEST

/* A completion event that is not for the sleeper does not end its wait. */
START_TEST(cq_event_without_data_keeps_rrecv_asleep)
{
	int s = connected_stream();
	struct rsocket *rs = rs_get(s);
	struct call c;

	call_start(&c, s, DO_RECV, 1);
	/* Wait until it sleeps (armed), then wake it with nothing to read. */
	while (!__atomic_load_n(&rs->cq_armed, __ATOMIC_ACQUIRE))
		sched_yield();
	fake_verbs_cq_event(rs->cq);
	rs_put(rs);
	ck_assert_int_eq(rclose(s), 0);
	call_join(&c);
	ck_assert_int_eq(c.ret, -1);
	ck_assert_int_eq(c.err, EBADF);
}
END_TEST

START_TEST(blocked_raccept_fails_with_ebadf_on_rclose)
{
	struct sockaddr_in sin = unit_ipv4("127.0.0.1", 7471);
	int s = rsocket(AF_INET, SOCK_STREAM, 0);
	struct call c;

	ck_assert_int_ge(s, 0);
	ck_assert_int_eq(rbind(s, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(rlisten(s, 4), 0);
	call_start(&c, s, DO_ACCEPT, 1);
	ck_assert_int_eq(rclose(s), 0);
	call_join(&c);
	ck_assert_int_eq(c.ret, -1);
	ck_assert_int_eq(c.err, EBADF);
}
END_TEST

START_TEST(blocked_datagram_rrecv_fails_with_ebadf_on_rclose)
{
	int s = bound_dgram();
	struct call c;

	call_start(&c, s, DO_RECV, 1);
	ck_assert_int_eq(rclose(s), 0);
	call_join(&c);
	ck_assert_int_eq(c.ret, -1);
	ck_assert_int_eq(c.err, EBADF);
	ck_assert_int_eq(rrecv(s, NULL, 0, MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EBADF);
}
END_TEST

static int open_fds(void)
{
	struct dirent *d;
	DIR *dir = opendir("/proc/self/fd");
	int n = 0;

	ck_assert_ptr_nonnull(dir);
	while ((d = readdir(dir)))
		n += d->d_name[0] != '.';
	closedir(dir);
	return n;
}

/* A datagram rsocket at rest: its UDP socket and epoll set, as Debian's. */
START_TEST(datagram_at_rest_holds_two_descriptors)
{
	int before = open_fds();
	int s = bound_dgram();
	struct rsocket *rs = rs_get(s);
	struct pollfd pfd = {.fd = s, .events = POLLIN};

	ck_assert_int_eq(open_fds() - before, 2);
	ck_assert_int_eq(rpoll(&pfd, 1, 1), 0);
	ck_assert(rs_wake_idle(rs));
	ck_assert_int_eq(open_fds() - before, 2);
	rs_put(rs);
	ck_assert_int_eq(rclose(s), 0);
	ck_assert_int_eq(open_fds(), before);
}
END_TEST

static void *close_run(void *arg)
{
	return (void *)(intptr_t)rclose(*(int *)arg);
}

/*
 * A send that held the socket when another thread closed it, and looks
 * only once the close's shutdown left @state: EBADF as for every call the
 * close ended, never EPIPE (stress_rs_test saw EPIPE under ASan and
 * ThreadSanitizer).
 */
static void send_after_close_left(int state)
{
	int s = connected_stream();
	struct rsocket *rs = rs_get(s);
	struct iovec iov = {.iov_base = "x", .iov_len = 1};
	pthread_t t;
	void *ret;

	ck_assert_ptr_nonnull(rs);
	rs_set_state(rs, state);
	ck_assert_int_eq(pthread_create(&t, NULL, close_run, &s), 0);
	ck_assert_int_eq(pthread_join(t, &ret), 0);
	ck_assert_int_eq((int)(intptr_t)ret, 0);
	ck_assert_int_eq(rs_stream_sendv(rs, &iov, 1, 0), -1);
	ck_assert_int_eq(errno, EBADF);
	rs_put(rs);
}

/* The close's DISCONNECT went. */
START_TEST(send_entered_before_a_finished_close_fails_with_ebadf)
{
	send_after_close_left(RS_DISCONNECTED);
}
END_TEST

/* Only its shutdown of the sending side (connected, not writable). */
START_TEST(send_after_the_close_ended_writing_fails_with_ebadf)
{
	send_after_close_left(RS_CONNECTED | RS_READABLE);
}
END_TEST

Suite *rsocket_close_suite(void)
{
	Suite *s = suite_create("rsocket_close");
	TCase *tc = tcase_create("close while in use");

	tcase_add_checked_fixture(tc, rs_call_setup, rs_call_teardown);
	tcase_add_test(tc, blocked_rrecv_fails_with_ebadf_on_rclose);
	tcase_add_test(tc, blocked_rrecv_and_rsend_both_wake);
	tcase_add_test(tc, cq_event_without_data_keeps_rrecv_asleep);
	tcase_add_test(tc, blocked_raccept_fails_with_ebadf_on_rclose);
	tcase_add_test(tc, blocked_datagram_rrecv_fails_with_ebadf_on_rclose);
	tcase_add_test(tc, datagram_at_rest_holds_two_descriptors);
	tcase_add_test(tc,
		       send_entered_before_a_finished_close_fails_with_ebadf);
	tcase_add_test(tc, send_after_the_close_ended_writing_fails_with_ebadf);
	suite_add_tcase(s, tc);
	return s;
}
