// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The accept queue of a listener (src/rsocket/selfconn.c) on the fake
 * kernel: the connections a waiting rconnect of this process accepted on
 * the listener's behalf are handed to raccept first, in the order they
 * were accepted; a thread that finds the queue empty counts as inside
 * raccept (so no connect accepts under it) until it leaves; and a
 * listener closed with connections still queued closes them, as a kernel
 * closes its backlog; a forked child starts with no thread inside raccept
 * and nothing queued.  The queue is filled by hand: the handshake that
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

struct raccepts {
	struct rsocket *waited, *queued;
	bool stop;
};

/* A thread in and out of raccept: most of the time inside the lock. */
static void *enter_and_leave_again(void *arg)
{
	struct raccepts *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		if (rs_accept_enter(r->waited) >= 0)
			return NULL; /* the loop's end: the queue is empty */
		rs_accept_leave(r->waited);
	}
	return NULL;
}

/* The child waits alone, queues nothing of its parent's, adds listeners. */
static bool waits_alone_and_listens(void *arg)
{
	struct rsocket *other = rs_alloc(NULL, SOCK_STREAM);
	struct raccepts *r = arg;
	bool alone;

	if (!other || rs_accept_enter(r->waited) >= 0)
		return false;
	alone = r->waited->accept_waiters == 1;
	rs_accept_leave(r->waited);
	rs_listener_add(other);
	rs_listener_remove(other);
	return alone && !rs_acceptq_ready(r->queued);
}

/*
 * A child forked while a thread of its parent's is inside raccept: the
 * lock that thread may have held is not the child's, nor is the count of
 * threads inside, nor what the parent's own connects queued.
 */
START_TEST(a_child_forked_beside_raccept_accepts_on_its_own)
{
	int waited, listener, q;
	struct raccepts r = {.queued = queued_listener(&listener, &q, 1)};

	waited = rsocket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(waited, 0);
	r.waited = rs_get(waited);
	rs_listener_add(r.waited);
	unit_forks_beside(enter_and_leave_again, &r, &r.stop,
			  waits_alone_and_listens);
	ck_assert(rs_acceptq_ready(r.queued)); /* still the parent's */
	rs_put(r.waited);
	rs_put(r.queued);
	ck_assert_int_eq(rclose(waited), 0);
	ck_assert_int_eq(rclose(listener), 0);
}
END_TEST

Suite *rsocket_selfconn_suite(void)
{
	Suite *s = suite_create("rsocket_selfconn");
	TCase *tc = tcase_create("accept queue");

	tcase_add_checked_fixture(tc, rs_call_setup, rs_call_teardown);
	tcase_add_test(tc, the_queue_is_taken_in_order_then_raccept_waits);
	tcase_add_test(tc, a_closed_listener_closes_its_queue);
	tcase_add_test(tc, a_child_forked_beside_raccept_accepts_on_its_own);
	suite_add_tcase(s, tc);
	return s;
}
