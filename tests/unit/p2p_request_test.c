// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer-to-peer requests and connects over time (src/p2p/p2p_request.c,
 * src/p2p/p2p_connect.c): what rdma_cm_p2p(7) promises under HOLD TIMES and
 * for iWARP, each checked against the scripted peer of p2p_peer.h.  The
 * matching rules themselves (crossing, adoption, duplicates, restarts,
 * caps) are in p2p_connect_test.
 *
 *  - a held request nobody claims is reported once its hold time is over,
 *    as an ordinary CONNECT_REQUEST with peer2peer_mode set and the header
 *    removed, and rdma_accept answers it in kind;
 *  - a held request whose peer gave up is dropped, never reported;
 *  - RDMA_OPTION_ID_PEER2PEER = 0 reports p2p requests at once;
 *  - requests that claim another kind, or whose ends the kernel cannot
 *    tell, are refused and never reported;
 *  - a connect told its crossing was lost, or refused because the peer
 *    does not listen yet, waits for the peer's request for the hold time,
 *    then reports the rejection; a REQ never answered is withdrawn with
 *    UNREACHABLE, -ETIMEDOUT;
 *  - on iWARP only the lower end sends; a refused iWARP connect is tried
 *    again until the hold time has passed, then REJECTED, -ECONNREFUSED.
 *
 * Timers run in the library's service thread: events they post are
 * awaited with poll(2) on the channel, as an outside program would.
 */
#include <config.h>

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "p2p/p2p_wire.h"
#include "unit.h"
#include "p2p_peer.h"

/* A hold time of 1 ms: every timer here is due at once. */
static void short_hold_setup(void)
{
	setenv("RDMA_CM_P2P_HOLD_MS", "1", 1);
	p2p_peer_fixture();
}

/* Everything on an iWARP device (the peer's requests come over it too). */
static void iwarp_setup(bool short_hold)
{
	struct ibv_device *rnic;
	struct fake_ucma_route r = {.port_num = 1, .pkey = 0xffff};

	if (short_hold)
		setenv("RDMA_CM_P2P_HOLD_MS", "1", 1);
	fake_ucma_install();
	fake_verbs_install(false);
	rnic = fake_verbs_add_device(true);
	r.node_guid = htobe64(fake_verbs_guid(rnic));
	fake_ucma_set_route(&r);
	p2p_peer_setup();
}

static void iwarp_default_setup(void)
{
	iwarp_setup(false);
}

static void iwarp_short_hold_setup(void)
{
	iwarp_setup(true);
}

START_TEST(unclaimed_request_is_reported_after_its_hold_time)
{
	uint32_t req = peer_request("192.0.2.0", 0, "hers");
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);
	struct rdma_conn_param param = {.responder_resources = 1,
					.initiator_depth = 1,
					.peer2peer_mode = 1};
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	ev = await_event(RDMA_CM_EVENT_CONNECT_REQUEST);
	ck_assert_ptr_eq(ev->listen_id, listener);
	ck_assert_uint_eq(ev->param.conn.peer2peer_mode, 1);
	ck_assert_uint_eq(ev->param.conn.private_data_len, 4);
	ck_assert_mem_eq(ev->param.conn.private_data, "hers", 4);
	id = ev->id;
	ck_assert_uint_eq(kid_of(id), req);
	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), 0);
	ck_assert_int_eq(rdma_accept(id, &param), 0);
	/* Accepted in p2p mode, answered in kind: the requester can tell. */
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_ACCEPT, req).kind,
			 CMA_P2P_REP);
	rdma_ack_cm_event(ev);
	fake_ucma_event(req, RDMA_CM_EVENT_ESTABLISHED, 0);
	rdma_ack_cm_event(await_event(RDMA_CM_EVENT_ESTABLISHED));
	expect_nothing();
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/* The peer's CM no longer waits (the kernel id left its request state). */
START_TEST(held_request_of_a_peer_that_gave_up_is_dropped)
{
	uint32_t req;

	fake_ucma_fail_next(RDMA_USER_CM_CMD_INIT_QP_ATTR, EINVAL);
	req = peer_request("192.0.2.0", 0, "hers");
	expect_nothing();
	await_cmd(RDMA_USER_CM_CMD_REJECT, 1);
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_REJECT, req).kind,
			 CMA_P2P_REJ_RETRY);
	expect_nothing();
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_ACCEPT), 0);
}
END_TEST

START_TEST(option_zero_reports_requests_at_once)
{
	int zero = 0;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	ck_assert_int_eq(rdma_set_option(listener, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_PEER2PEER, &zero,
					 sizeof(zero)),
			 0);
	peer_request("192.0.2.2", 1, "hers");
	ev = expect_event(RDMA_CM_EVENT_CONNECT_REQUEST);
	ck_assert_uint_eq(ev->param.conn.peer2peer_mode, 1);
	ck_assert_uint_eq(ev->param.conn.private_data_len, 4);
	ck_assert_mem_eq(ev->param.conn.private_data, "hers", 4);
	id = ev->id;
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/* A "request" whose header says it is an answer is hostile or broken. */
START_TEST(request_claiming_another_kind_is_refused)
{
	uint32_t req;

	req_kind = CMA_P2P_REP;
	req = peer_request("192.0.2.2", 1, "hers");
	expect_nothing();
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_REJECT, req).kind,
			 CMA_P2P_REJ_BAD);
	req_kind = CMA_P2P_REJ_DUP;
	req = peer_request("192.0.2.2", 2, "hers");
	expect_nothing();
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_REJECT, req).kind,
			 CMA_P2P_REJ_BAD);
}
END_TEST

/* Without both ends there is no key to match: refused, not reported. */
START_TEST(request_with_unknown_ends_is_refused)
{
	uint32_t req;

	fake_ucma_fail_next(RDMA_USER_CM_CMD_QUERY_ROUTE, ENODEV);
	req = peer_request("192.0.2.2", 1, "hers");
	expect_nothing();
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_REJECT, req).kind,
			 CMA_P2P_REJ_BAD);
}
END_TEST

/*
 * Neither answered nor refused within twice the hold time plus 2 s: the
 * REQ is withdrawn (its kernel id replaced) and the connect fails.
 */
START_TEST(unanswered_request_gives_up_unreachable)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.2");
	uint32_t own = kid_of(id);
	struct rdma_cm_event *ev;

	ck_assert_int_eq(p2p_connect(id), 0);
	ev = await_event(RDMA_CM_EVENT_UNREACHABLE);
	ck_assert_ptr_eq(ev->id, id);
	ck_assert_int_eq(ev->status, -ETIMEDOUT);
	rdma_ack_cm_event(ev);
	await_cmd(RDMA_USER_CM_CMD_DESTROY_ID, 1);
	ck_assert_int_ge(fake_ucma_first_on(RDMA_USER_CM_CMD_DESTROY_ID, own),
			 0);
	ck_assert_uint_ne(kid_of(id), own);
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/*
 * The held request cannot be answered any more (its peer gave up between
 * our reading it and our connect; here the ACCEPT fails): it is refused,
 * our QP stays at RTS for that QP (RESET would drop the application's
 * receives), and the connect, the higher end, waits for the peer's next
 * request on its own kernel id instead of failing.
 */
START_TEST(adoption_that_fails_waits_for_the_next_request)
{
	uint32_t req = peer_request("192.0.2.0", 0, "hers"), next;
	struct rdma_cm_id *id;
	struct fake_qp *f;
	uint32_t own;

	expect_nothing();
	id = connecting_id("192.0.2.0");
	own = kid_of(id);
	f = fake_qp_of(id->qp);
	fake_ucma_fail_next(RDMA_USER_CM_CMD_ACCEPT, EINVAL);
	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_REJECT, req).kind,
			 CMA_P2P_REJ_RETRY);
	ck_assert_uint_eq(kid_of(id), own);
	ck_assert(fake_ucma_kid(own)->live);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 0);
	ck_assert_int_eq(f->qp.state, IBV_QPS_RTS);
	ck_assert_int_eq(f->states[f->nstates - 1], IBV_QPS_RTS);
	expect_nothing();
	/* The peer's next attempt: formed on its kernel id, QP as it is. */
	next = peer_request("192.0.2.0", 0, "hers");
	expect_nothing();
	ck_assert_uint_eq(kid_of(id), next);
	ck_assert_int_eq(f->states[f->nstates - 1], IBV_QPS_RTS);
	ck_assert_int_eq(f->states[f->nstates - 2], IBV_QPS_RTR);
	ck_assert(sent_hdr(RDMA_USER_CM_CMD_ACCEPT, next).flags &
		  CMA_P2P_F_PSNS);
	fake_ucma_event(next, RDMA_CM_EVENT_ESTABLISHED, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	expect_nothing();
}
END_TEST

/*
 * rdma_cm_p2p(7): a p2p connect needs a QP made by rdma_create_qp on the
 * id (EINVAL), a listener for its source address (EADDRNOTAVAIL), and
 * connects once (EISCONN).
 */
START_TEST(p2p_connect_preconditions)
{
	struct sockaddr_in dst = unit_ipv4("192.0.2.2", P2P_PORT),
			   other = unit_ipv4("192.0.2.9", 0);
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);
	struct rdma_cm_id *bare, *elsewhere, *id;

	bare = unit_resolved_id(ch, RDMA_PS_TCP, (struct sockaddr *)&dst);
	ck_assert_int_eq(p2p_connect(bare), -1);
	ck_assert_int_eq(errno, EINVAL);

	ck_assert_int_eq(rdma_create_id(ch, &elsewhere, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_resolve_addr(elsewhere, (struct sockaddr *)&other,
					   (struct sockaddr *)&dst, 2000),
			 0);
	fake_ucma_event(kid_of(elsewhere), RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	rdma_ack_cm_event(unit_expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	ck_assert_int_eq(rdma_create_qp(elsewhere, NULL, &attr), 0);
	ck_assert_int_eq(p2p_connect(elsewhere), -1);
	ck_assert_int_eq(errno, EADDRNOTAVAIL);

	id = connecting_id("192.0.2.2");
	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_int_eq(p2p_connect(id), -1);
	ck_assert_int_eq(errno, EISCONN);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 1);
	rdma_destroy_id(bare);
	rdma_destroy_qp(elsewhere);
	rdma_destroy_id(elsewhere);
}
END_TEST

/* iWARP, this end higher: no REQ; the peer's is adopted when it comes. */
START_TEST(iwarp_higher_end_waits_for_the_peer)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.0");
	uint32_t req;

	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 0);
	req = peer_request("192.0.2.0", 0, "hers");
	expect_nothing();
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_ACCEPT, req).kind,
			 CMA_P2P_REP);
	ck_assert_uint_eq(kid_of(id), req);
	fake_ucma_event(req, RDMA_CM_EVENT_ESTABLISHED, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
}
END_TEST

/* iWARP, this end lower: a connect refused (no listener yet) is retried. */
START_TEST(iwarp_refused_connect_is_retried)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.2");

	fake_ucma_fail_next(RDMA_USER_CM_CMD_CONNECT, ECONNREFUSED);
	ck_assert_int_eq(p2p_connect(id), 0);
	await_cmd(RDMA_USER_CM_CMD_CONNECT, 2);
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_CONNECT, kid_of(id)).kind,
			 CMA_P2P_REQ);
	expect_nothing();
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_ESTABLISHED, 0);
	rdma_ack_cm_event(await_event(RDMA_CM_EVENT_ESTABLISHED));
}
END_TEST

/* ... until the hold time has passed: then REJECTED, -ECONNREFUSED. */
START_TEST(iwarp_connect_refused_past_the_hold_time_fails)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.2");
	struct rdma_cm_event *ev;

	fake_ucma_fail_next(RDMA_USER_CM_CMD_CONNECT, ECONNREFUSED);
	ck_assert_int_eq(p2p_connect(id), 0);
	ev = await_event(RDMA_CM_EVENT_REJECTED);
	ck_assert_ptr_eq(ev->id, id);
	ck_assert_int_eq(ev->status, -ECONNREFUSED);
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 1);
}
END_TEST

Suite *p2p_request_suite(void)
{
	Suite *s = suite_create("p2p_request");
	TCase *tc = tcase_create("short_hold");

	tcase_add_checked_fixture(tc, short_hold_setup, p2p_peer_teardown);
	tcase_add_test(tc, unclaimed_request_is_reported_after_its_hold_time);
	tcase_add_test(tc, held_request_of_a_peer_that_gave_up_is_dropped);
	tcase_add_test(tc, unanswered_request_gives_up_unreachable);
	suite_add_tcase(s, tc);

	tc = tcase_create("default_hold");
	tcase_add_checked_fixture(tc, p2p_peer_fixture, p2p_peer_teardown);
	tcase_add_test(tc, option_zero_reports_requests_at_once);
	tcase_add_test(tc, request_claiming_another_kind_is_refused);
	tcase_add_test(tc, request_with_unknown_ends_is_refused);
	tcase_add_test(tc, adoption_that_fails_waits_for_the_next_request);
	tcase_add_test(tc, p2p_connect_preconditions);
	suite_add_tcase(s, tc);

	tc = tcase_create("iwarp");
	tcase_add_checked_fixture(tc, iwarp_default_setup, p2p_peer_teardown);
	tcase_add_test(tc, iwarp_higher_end_waits_for_the_peer);
	tcase_add_test(tc, iwarp_refused_connect_is_retried);
	suite_add_tcase(s, tc);

	tc = tcase_create("iwarp_short_hold");
	tcase_add_checked_fixture(tc, iwarp_short_hold_setup,
				  p2p_peer_teardown);
	tcase_add_test(tc, iwarp_connect_refused_past_the_hold_time_fails);
	suite_add_tcase(s, tc);
	return s;
}
