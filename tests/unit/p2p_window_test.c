// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The window of REQs a process has out at once (src/p2p/p2p_window.c,
 * rdma_cm_p2p(7) BOUNDS), played against the scripted peer of p2p_peer.h:
 * at most 8 REQs are out; the connects beyond wait, oldest first, and
 * each goes out as soon as one of the 8 is answered or refused; a
 * connect destroyed while it waits leaves the queue and sends nothing.
 */
#include <config.h>

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"
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
		ck_assert_int_eq(cmds_on(RDMA_USER_CM_CMD_CONNECT, kid[i]),
				 i < WINDOW);
	/* One waiting connect goes away: it never sends. */
	rdma_destroy_qp(id[WINDOW]);
	ck_assert_int_eq(rdma_destroy_id(id[WINDOW]), 0);
	/* An answer frees a place: the oldest still waiting takes it. */
	fake_ucma_event(kid[0], RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	await_cmd(RDMA_USER_CM_CMD_CONNECT, WINDOW + 1);
	ck_assert_int_eq(cmds_on(RDMA_USER_CM_CMD_CONNECT, kid[WINDOW + 1]), 1);
	ck_assert_uint_eq(reqs_out(), WINDOW);
	/* A refusal for now frees one too, while it waits to send again. */
	peer_refuses_for_now(kid[1]);
	expect_nothing();
	await_cmd(RDMA_USER_CM_CMD_CONNECT, WINDOW + 2);
	ck_assert_int_eq(cmds_on(RDMA_USER_CM_CMD_CONNECT, kid[WINDOW + 2]), 1);
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
 * A challenged REQ's answer goes out in the challenged REQ's place: the
 * connect waiting for one is not let in between.
 */
START_TEST(an_answer_to_a_challenge_keeps_its_place)
{
	struct rdma_cm_id *id[WINDOW + 1];
	uint32_t kid[WINDOW + 1], again;
	int i;

	for (i = 0; i <= WINDOW; i++) {
		id[i] = connecting_id_port("192.0.2.2", (uint16_t)(7500 + i));
		kid[i] = kid_of(id[i]);
		ck_assert_int_eq(p2p_connect(id[i]), 0);
	}
	fake_ucma_clear_log();
	peer_refuses(kid[0], CMA_P2P_REJ_CHALLENGE, 0xC0FFEE);
	expect_nothing();
	again = req_sent_again(id[0], kid[0], 0);
	ck_assert(sent_hdr(RDMA_USER_CM_CMD_CONNECT, again).challenge ==
		  0xC0FFEE);
	ck_assert_int_eq(cmds_on(RDMA_USER_CM_CMD_CONNECT, kid[WINDOW]), 0);
	ck_assert_uint_eq(reqs_out(), WINDOW);
	for (i = 0; i <= WINDOW; i++) {
		rdma_destroy_qp(id[i]);
		ck_assert_int_eq(rdma_destroy_id(id[i]), 0);
	}
	ck_assert_uint_eq(reqs_out(), 0);
}
END_TEST

Suite *p2p_window_suite(void)
{
	Suite *s = suite_create("p2p_window");
	TCase *tc = tcase_create("window");

	tcase_add_checked_fixture(tc, p2p_peer_fixture, p2p_peer_teardown);
	tcase_add_test(tc,
		       reqs_out_are_bounded_and_the_oldest_waiting_goes_next);
	tcase_add_test(tc, an_answer_to_a_challenge_keeps_its_place);
	suite_add_tcase(s, tc);
	return s;
}
