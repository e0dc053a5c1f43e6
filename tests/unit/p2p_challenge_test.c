// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Late copies (src/p2p/p2p_challenge.c, rdma_cm_p2p(7) LATE COPIES),
 * played against the scripted peer of p2p_peer.h:
 *
 *  - a REQ from an IB QP is adopted or held only when it answers its QP's
 *    current challenge; any other REQ from that QP (a late copy, a REQ
 *    sent before the peer heard of the challenge, one answering a spent
 *    challenge) is refused with a new one, and the connect waits on;
 *  - challenges are per QP, and per listener at most RDMA_CM_P2P_MAX_HELD;
 *  - the lower end answers a challenge at once, on a fresh kernel id,
 *    with every later REQ of that connect carrying it.
 *
 * The late-copy schedule itself (the first copy refused before the
 * library saw it, a copy coming after the QP's next REQ was sent) is
 * explored with every other interleaving in p2p_interleave_test.
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

#define QP_A 0x111
#define QP_B 0x222

/* The peer's REQ from QP @qpn answering @challenge (0: none), read. */
static uint32_t req_from_qp(uint32_t qpn, uint64_t challenge, const char *data)
{
	uint32_t kid;

	req_qpn = qpn;
	req_challenge = challenge;
	kid = peer_request("192.0.2.0", 0, data);
	req_qpn = 0;
	req_challenge = 0;
	expect_nothing();
	return kid;
}

/* The REQ on @kid was refused with a challenge: its value. */
static uint64_t challenged(uint32_t kid)
{
	struct cma_p2p_hdr hdr = sent_hdr(RDMA_USER_CM_CMD_REJECT, kid);

	ck_assert_uint_eq(hdr.kind, CMA_P2P_REJ_CHALLENGE);
	ck_assert(hdr.challenge != 0);
	ck_assert(!fake_ucma_kid(kid)->live);
	return hdr.challenge;
}

/*
 * A late copy, the REQ sent before the peer heard of the challenge, and a
 * REQ answering a spent challenge are each challenged anew; the connect
 * waits through all of it and adopts the REQ that answers the current one.
 */
START_TEST(only_the_current_challenge_is_adopted)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.0");
	struct rdma_cm_event *ev;
	uint64_t first, second, third;
	uint32_t req;

	listener_holds();
	ck_assert_int_eq(p2p_connect(id), 0);
	first = challenged(req_from_qp(QP_A, 0, "copy"));
	second = challenged(req_from_qp(QP_A, 0, "next"));
	ck_assert(second != first);
	third = challenged(req_from_qp(QP_A, first, "spent"));
	ck_assert(third != second);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_ACCEPT), 0);
	req = req_from_qp(QP_A, third, "live");
	ck_assert_uint_eq(kid_of(id), req);
	ck_assert_uint_eq(sent_hdr(RDMA_USER_CM_CMD_ACCEPT, req).kind,
			  CMA_P2P_REP);
	fake_ucma_event(req, RDMA_CM_EVENT_ESTABLISHED, 0);
	ev = expect_event(RDMA_CM_EVENT_ESTABLISHED);
	ck_assert_mem_eq(ev->param.conn.private_data, "live", 4);
	rdma_ack_cm_event(ev);
	/* Answered once: the same challenge again is a copy. */
	challenged(req_from_qp(QP_A, third, "late"));
}
END_TEST

/* Each QP has its own challenge: another QP's answer is no answer. */
START_TEST(challenges_are_per_qp)
{
	uint64_t a, b;
	uint32_t req;

	listener_holds();
	a = challenged(req_from_qp(QP_A, 0, "a"));
	b = challenged(req_from_qp(QP_B, 0, "b"));
	ck_assert(challenged(req_from_qp(QP_B, a, "b")) != b);
	/* QP_B's challenge was spent by that: QP_A's still stands. */
	req = req_from_qp(QP_A, a, "a");
	ck_assert(fake_ucma_kid(req)->live); /* held for a connect */
}
END_TEST

/* Without a QP number (iWARP: no copies) a REQ is never challenged. */
START_TEST(requests_without_a_qp_are_not_challenged)
{
	uint32_t req;

	listener_holds();
	req = req_from_qp(0, 0, "iw");
	ck_assert(fake_ucma_kid(req)->live);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_REJECT), 0);
}
END_TEST

static void short_hold_setup(void)
{
	setenv("RDMA_CM_P2P_HOLD_MS", "1", 1);
	p2p_peer_fixture();
}

static void short_hold_teardown(void)
{
	p2p_peer_teardown();
	unsetenv("RDMA_CM_P2P_HOLD_MS");
}

/*
 * An answer nobody claims is reported once its hold time is over, and
 * rdma_accept answers it in kind: a REP, which answers no challenge.
 */
START_TEST(surfaced_answer_is_accepted_in_kind)
{
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);
	struct rdma_conn_param param = {.responder_resources = 1,
					.initiator_depth = 1,
					.peer2peer_mode = 1};
	struct rdma_cm_event *ev;
	struct cma_p2p_hdr rep;
	uint64_t c;
	uint32_t req;

	c = challenged(req_from_qp(QP_A, 0, "hers"));
	req_qpn = QP_A;
	req_challenge = c;
	req = peer_request("192.0.2.0", 0, "hers");
	req_qpn = 0;
	req_challenge = 0;
	ev = await_event(RDMA_CM_EVENT_CONNECT_REQUEST);
	ck_assert_uint_eq(ev->param.conn.peer2peer_mode, 1);
	ck_assert_mem_eq(ev->param.conn.private_data, "hers", 4);
	ck_assert_int_eq(rdma_create_qp(ev->id, NULL, &attr), 0);
	ck_assert_int_eq(rdma_accept(ev->id, &param), 0);
	rep = sent_hdr(RDMA_USER_CM_CMD_ACCEPT, req);
	ck_assert_uint_eq(rep.kind, CMA_P2P_REP);
	ck_assert_uint_eq(rep.flags, 0);
	rdma_ack_cm_event(ev);
}
END_TEST

static void capped_setup(void)
{
	setenv("RDMA_CM_P2P_MAX_HELD", "4", 1);
	p2p_peer_fixture();
}

static void capped_teardown(void)
{
	p2p_peer_teardown();
	unsetenv("RDMA_CM_P2P_MAX_HELD");
}

/*
 * What peers can make a listener remember is bounded: the oldest
 * challenge is forgotten first, and its QP's answer is challenged again.
 */
START_TEST(challenges_are_bounded_oldest_first)
{
	struct cma_p2p_listener *lis;
	uint64_t first, last = 0;
	uint32_t qpn;

	listener_holds();
	first = challenged(req_from_qp(QP_A, 0, "x"));
	for (qpn = 1; qpn <= 4; qpn++)
		last = challenged(req_from_qp(QP_A + qpn, 0, "x"));
	cma_p2p_lock();
	lis = cma_p2p_find_listener(cma_id_priv(listener));
	ck_assert_uint_eq(lis->challenges.len, 4);
	cma_p2p_unlock();
	challenged(req_from_qp(QP_A, first, "x"));
	ck_assert(fake_ucma_kid(req_from_qp(QP_A + 4, last, "x"))->live);
}
END_TEST

/*
 * The lower end: a challenge is answered at once, on a fresh kernel id,
 * and the REQ that goes out carries it in place of the incarnation.
 */
START_TEST(lower_end_answers_a_challenge_at_once)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.2");
	uint32_t own = kid_of(id), again;
	struct cma_p2p_hdr hdr;

	ck_assert_int_eq(p2p_connect(id), 0);
	hdr = sent_hdr(RDMA_USER_CM_CMD_CONNECT, own);
	ck_assert(!(hdr.flags & CMA_P2P_F_ANSWER));
	fake_ucma_clear_log();
	peer_refuses(own, CMA_P2P_REJ_CHALLENGE, 0xC0FFEE);
	expect_nothing();
	again = req_sent_again(id, own, 0);
	hdr = sent_hdr(RDMA_USER_CM_CMD_CONNECT, again);
	ck_assert(hdr.flags & CMA_P2P_F_ANSWER);
	ck_assert(hdr.challenge == 0xC0FFEE);
	fake_ucma_event(again, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
}
END_TEST

Suite *p2p_challenge_suite(void)
{
	Suite *s = suite_create("p2p_challenge");
	TCase *tc = tcase_create("late copies");
	TCase *cap = tcase_create("bounded");
	TCase *hold = tcase_create("short hold");

	tcase_add_checked_fixture(tc, p2p_peer_fixture, p2p_peer_teardown);
	tcase_add_test(tc, only_the_current_challenge_is_adopted);
	tcase_add_test(tc, challenges_are_per_qp);
	tcase_add_test(tc, requests_without_a_qp_are_not_challenged);
	tcase_add_test(tc, lower_end_answers_a_challenge_at_once);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(cap, capped_setup, capped_teardown);
	tcase_add_test(cap, challenges_are_bounded_oldest_first);
	suite_add_tcase(s, cap);
	tcase_add_checked_fixture(hold, short_hold_setup, short_hold_teardown);
	tcase_add_test(hold, surfaced_answer_is_accepted_in_kind);
	suite_add_tcase(s, hold);
	return s;
}
