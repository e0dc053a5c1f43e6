// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The window of REQs a process has out at once (src/p2p/p2p_window.c,
 * rdma_cm_p2p(7) BOUNDS), played against the scripted peer of p2p_peer.h:
 * at most 8 REQs are out; the connects beyond wait, oldest first, and
 * each goes out as soon as one of the 8 is answered or refused; a
 * connect destroyed while it waits leaves the queue and sends nothing; a
 * refused connect that must wait goes before the connects made after it,
 * and its bound stands still while it waits.
 */
#include <config.h>

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm/cma.h"
#include "cm/test_hooks.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "p2p/p2p_table.h"
#include "p2p/p2p_wire.h"
#include "unit.h"
#include "p2p_peer.h"

#define WINDOW 8
#define CONNECTS 11

static unsigned int reqs_out(void)
{
	unsigned int n;

	cma_p2p_lock();
	n = cma_p2p_reqs_out();
	cma_p2p_unlock();
	return n;
}

START_TEST(reqs_out_are_bounded_and_the_oldest_waiting_goes_next)
{
	struct rdma_cm_id *id[CONNECTS];
	uint32_t kid[CONNECTS];
	int i;

	/* Towards a higher peer: each on a port of its own, each a REQ. */
	for (i = 0; i < CONNECTS; i++) {
		id[i] = connecting_id_port("192.0.2.2", (uint16_t)(7500 + i));
		kid[i] = kid_of(id[i]);
		ck_assert_int_eq(p2p_connect(id[i]), 0);
	}
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), WINDOW);
	ck_assert_uint_eq(reqs_out(), WINDOW);
	for (i = 0; i < CONNECTS; i++)
		ck_assert_int_eq(
			fake_ucma_count_on(RDMA_USER_CM_CMD_CONNECT, kid[i]),
			i < WINDOW);
	/* One waiting connect goes away: it never sends. */
	rdma_destroy_qp(id[WINDOW]);
	ck_assert_int_eq(rdma_destroy_id(id[WINDOW]), 0);
	/* An answer frees a place: the oldest still waiting takes it. */
	fake_ucma_event(kid[0], RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	await_cmd(RDMA_USER_CM_CMD_CONNECT, WINDOW + 1);
	ck_assert_int_eq(
		fake_ucma_count_on(RDMA_USER_CM_CMD_CONNECT, kid[WINDOW + 1]),
		1);
	ck_assert_uint_eq(reqs_out(), WINDOW);
	/* A refusal for now frees one too, while it waits to send again. */
	peer_refuses_for_now(kid[1]);
	expect_nothing();
	await_cmd(RDMA_USER_CM_CMD_CONNECT, WINDOW + 2);
	ck_assert_int_eq(
		fake_ucma_count_on(RDMA_USER_CM_CMD_CONNECT, kid[WINDOW + 2]),
		1);
	/* Every id destroyed: nothing is left out or waiting. */
	for (i = 0; i < CONNECTS; i++) {
		if (i == WINDOW)
			continue;
		rdma_destroy_qp(id[i]);
		ck_assert_int_eq(rdma_destroy_id(id[i]), 0);
	}
	ck_assert_uint_eq(reqs_out(), 0);
}
END_TEST

/*
 * @n connects towards a higher peer, each on a port of its own; the
 * first 8 REQs go out, then the peer refuses the first for now and the
 * window's next connect takes its place.  The refused connect's resend
 * (after 200 ms) finds the window full and queues.
 */
static void first_refused_then_queued(struct rdma_cm_id **id, uint32_t *kid,
				      int n)
{
	int i;

	for (i = 0; i < n; i++) {
		id[i] = connecting_id_port("192.0.2.2", (uint16_t)(7500 + i));
		kid[i] = kid_of(id[i]);
		ck_assert_int_eq(p2p_connect(id[i]), 0);
	}
	peer_refuses_for_now(kid[0]);
	expect_nothing();
	await_cmd(RDMA_USER_CM_CMD_CONNECT, WINDOW + 1);
	ck_assert_int_eq(
		fake_ucma_count_on(RDMA_USER_CM_CMD_CONNECT, kid[WINDOW]), 1);
	usleep(500 * 1000); /* the resend's 200 ms, and then some */
	expect_nothing();
	fake_ucma_clear_log();
}

static void destroy_all(struct rdma_cm_id **id, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		rdma_destroy_qp(id[i]);
		ck_assert_int_eq(rdma_destroy_id(id[i]), 0);
	}
	ck_assert_uint_eq(reqs_out(), 0);
}

/*
 * A loaded mesh: a lower end refused once queues behind its process's
 * other REQs for longer than its bound.  That wait is its own process's,
 * not its peer's: when its place comes, the REQ goes out again, where it
 * used to fail REJECTED (a 64-rank mesh under load lost pairs this way,
 * 80 s in the queue).  The test's frozen clock jumps 100 s meanwhile.
 */
START_TEST(a_queued_connect_keeps_its_bound)
{
	struct rdma_cm_id *id[WINDOW + 1];
	uint32_t kid[WINDOW + 1];
	uint64_t t0 = 1000000000000ull;

	cma_p2p_set_clock(t0);
	first_refused_then_queued(id, kid, WINDOW + 1);
	cma_p2p_set_clock(t0 + 100 * 1000000000ull);
	/* An answer frees a place: the refused connect sends again. */
	fake_ucma_event(kid[1], RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	req_sent_again(id[0], kid[0], 0);
	expect_nothing();
	destroy_all(id, WINDOW + 1);
}
END_TEST

/*
 * The refused connect is older than the one still waiting to send its
 * first REQ: it goes first, its peer having waited longer.
 */
START_TEST(a_refused_connect_goes_before_later_ones)
{
	struct rdma_cm_id *id[WINDOW + 2];
	uint32_t kid[WINDOW + 2];

	first_refused_then_queued(id, kid, WINDOW + 2);
	fake_ucma_event(kid[1], RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	req_sent_again(id[0], kid[0], 0);
	ck_assert_int_eq(
		fake_ucma_count_on(RDMA_USER_CM_CMD_CONNECT, kid[WINDOW + 1]),
		0);
	/* The next place is the later one's. */
	fake_ucma_event(kid[2], RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	await_cmd(RDMA_USER_CM_CMD_CONNECT, 2);
	ck_assert_int_eq(
		fake_ucma_count_on(RDMA_USER_CM_CMD_CONNECT, kid[WINDOW + 1]),
		1);
	destroy_all(id, WINDOW + 2);
}
END_TEST

#ifndef __SANITIZE_THREAD__ /* why: at its registration below */
/*
 * A process forks with its window full and a connect queued: the child's
 * window is its own.  Its first connect (from a listener of its own: the
 * parent's is the parent's) goes out at once, and the parent's connects,
 * destroyed in the child, give back no place the child did not count.
 * The parent's window is unchanged.
 */
START_TEST(a_forked_child_has_a_window_of_its_own)
{
	struct rdma_cm_id *id[WINDOW + 1], *mine;
	int i, status;
	pid_t pid;

	for (i = 0; i <= WINDOW; i++) {
		id[i] = connecting_id_port("192.0.2.2", (uint16_t)(7500 + i));
		ck_assert_int_eq(p2p_connect(id[i]), 0);
	}
	ck_assert_uint_eq(reqs_out(), WINDOW);
	pid = fork();
	if (!pid) {
		bool ok = reqs_out() == 0 && listening_id(P2P_PORT + 1);

		mine = connecting_id_port("192.0.2.2", 7600);
		ok = ok && !p2p_connect(mine) && reqs_out() == 1 &&
		     fake_ucma_count_on(RDMA_USER_CM_CMD_CONNECT,
					kid_of(mine)) == 1;
		/* The parent's, one out and the one queued, then its own. */
		rdma_destroy_qp(id[0]);
		rdma_destroy_id(id[0]);
		rdma_destroy_qp(id[WINDOW]);
		rdma_destroy_id(id[WINDOW]);
		ok = ok && reqs_out() == 1;
		rdma_destroy_qp(mine);
		ok = ok && !rdma_destroy_id(mine) && reqs_out() == 0;
		_exit(ok ? 0 : 1);
	}
	status = pid > 0 ? unit_wait_child(pid, 5000) : -1;
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "the child's window was not its own");
	ck_assert_uint_eq(reqs_out(), WINDOW);
	for (i = 0; i <= WINDOW; i++) {
		rdma_destroy_qp(id[i]);
		ck_assert_int_eq(rdma_destroy_id(id[i]), 0);
	}
	ck_assert_uint_eq(reqs_out(), 0);
}
END_TEST
#endif

Suite *p2p_window_suite(void)
{
	Suite *s = suite_create("p2p_window");
	TCase *tc = tcase_create("window");

	tcase_add_checked_fixture(tc, p2p_peer_fixture, p2p_peer_teardown);
	tcase_add_test(tc,
		       reqs_out_are_bounded_and_the_oldest_waiting_goes_next);
	tcase_add_test(tc, a_queued_connect_keeps_its_bound);
	tcase_add_test(tc, a_refused_connect_goes_before_later_ones);
#ifndef __SANITIZE_THREAD__
	/*
	 * The child's connect starts the library's service thread, and
	 * ThreadSanitizer kills a child that starts a thread after a fork of
	 * a process with threads.
	 */
	tcase_add_test(tc, a_forked_child_has_a_window_of_its_own);
#endif
	suite_add_tcase(s, tc);
	return s;
}
