// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The accept queue of a listener (src/rsocket/selfconn.c) on the fake
 * kernel: the connections a waiting rconnect of this process accepted on
 * the listener's behalf are handed to raccept first, in the order they
 * were accepted; a thread that finds the queue empty counts as inside
 * raccept (so no connect accepts under it) until it leaves; and a
 * listener closed with connections still queued closes them, as a kernel
 * closes its backlog.  The queue is filled by hand: the handshake that
 * fills it is rsocket_conn_test's, the whole flow the rsocket system
 * suite's.
 */
#include <config.h>

#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "rsocket/rs.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"
#include "rs_call.h"

/* A stream rsocket as a listener, with @n new sockets in its queue. */
static struct rsocket *queued_listener(int *l, int *q, uint32_t n)
{
	struct rsocket *rs;
	uint32_t i;

	*l = rsocket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(*l, 0);
	rs = rs_get(*l);
	ck_assert_ptr_nonnull(rs);
	rs_listener_add(rs);
	rs->acceptq = calloc(n, sizeof(*rs->acceptq));
	ck_assert_ptr_nonnull(rs->acceptq);
	rs->acceptq_cap = n;
	for (i = 0; i < n; i++) {
		q[i] = rsocket(AF_INET, SOCK_STREAM, 0);
		ck_assert_int_ge(q[i], 0);
		rs->acceptq[rs->acceptq_n++] = q[i];
	}
	return rs;
}

START_TEST(the_queue_is_taken_in_order_then_raccept_waits)
{
	int l, q[2];
	struct rsocket *rs = queued_listener(&l, q, 2);

	ck_assert(rs_acceptq_ready(rs));
	ck_assert_int_eq(rs_accept_enter(rs), q[0]);
	ck_assert_int_eq(rs_accept_enter(rs), q[1]);
	ck_assert(!rs_acceptq_ready(rs));
	ck_assert_uint_eq(rs->accept_waiters, 0);
	ck_assert_int_eq(rs_accept_enter(rs), -1);
	ck_assert_uint_eq(rs->accept_waiters, 1);
	rs_accept_leave(rs);
	ck_assert_uint_eq(rs->accept_waiters, 0);
	rs_put(rs);
	ck_assert_int_eq(rclose(q[0]), 0);
	ck_assert_int_eq(rclose(q[1]), 0);
	ck_assert_int_eq(rclose(l), 0);
}
END_TEST

START_TEST(a_closed_listener_closes_its_queue)
{
	int l, q[2];
	struct rsocket *rs = queued_listener(&l, q, 2);

	ck_assert_int_eq(rs_accept_enter(rs), q[0]);
	rs_put(rs);
	ck_assert_int_eq(rclose(l), 0);
	ck_assert_int_eq(rclose(q[1]), -1);
	ck_assert_int_eq(errno, EBADF);
	ck_assert_int_eq(rclose(q[0]), 0); /* taken: the caller's */
}
END_TEST

Suite *rsocket_selfconn_suite(void)
{
	Suite *s = suite_create("rsocket_selfconn");
	TCase *tc = tcase_create("accept queue");

	tcase_add_checked_fixture(tc, rs_call_setup, rs_call_teardown);
	tcase_add_test(tc, the_queue_is_taken_in_order_then_raccept_waits);
	tcase_add_test(tc, a_closed_listener_closes_its_queue);
	suite_add_tcase(s, tc);
	return s;
}
