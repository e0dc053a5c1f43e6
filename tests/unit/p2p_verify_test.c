// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Is a REQ still its sender's current one?  (src/p2p/p2p_verify.c,
 * rdma_cm_p2p(7) LATE COPIES), against the scripted peer of p2p_peer.h:
 *
 *  - the lower end numbers each REQ it sends, listens on its listener's
 *    port in the datagram port space, and answers a SIDR question about
 *    a REQ: live while a connect waits for that very REQ, stale for a
 *    number it refused, another QP's or another incarnation's;
 *  - the higher end asks before it holds or adopts a numbered REQ from a
 *    QP: a live one is adopted, a stale one refused for good, one nobody
 *    answered for refused for now, and none of them is ever reported.
 *
 * The library's service thread reads the library's own channel, as it
 * does the application's: the tests wait for its commands.
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

/* The kernel id of the last command @cmd. */
static uint32_t last_on(uint32_t cmd)
{
	const struct fake_cmd *c = fake_ucma_last(cmd);

	ck_assert_ptr_nonnull(c);
	return c->handle;
}

/* Up to 5 s for @n commands @cmd on kernel id @kid. */
static void await_on(uint32_t cmd, uint32_t kid, int n)
{
	int i;

	for (i = 0; i < 500 && fake_ucma_count_on(cmd, kid) < n; i++)
		usleep(10000);
	ck_assert_int_ge(fake_ucma_count_on(cmd, kid), n);
}

/* The p2p header of the SIDR question the library put in its CONNECT. */
static struct cma_p2p_hdr question_sent(uint32_t kid)
{
	return sent_hdr(RDMA_USER_CM_CMD_CONNECT, kid);
}

/*
 * The peer asks this process's companion (kernel id @companion) about the
 * REQ numbered @number from QP @qpn, stated with @incarnation; the
 * library's answer, from its REJECT.
 */
static struct cma_p2p_hdr peer_asks(uint32_t companion, uint64_t incarnation,
				    uint32_t qpn, uint32_t number)
{
	struct cma_p2p_hdr q = {.kind = CMA_P2P_QUERY,
				.port = P2P_PORT,
				.qpn = qpn,
				.incarnation = incarnation,
				.number = number};
	int rejects = fake_ucma_count(RDMA_USER_CM_CMD_REJECT);
	struct rdma_ucm_event_resp *r;
	uint32_t child = 0;

	fake_ucma_hold();
	r = fake_ucma_conn_req(companion, &child);
	ck_assert_ptr_nonnull(r);
	cma_p2p_hdr_encode(&q, r->param.ud.private_data);
	r->param.ud.private_data_len = CMA_P2P_HDR_LEN;
	fake_ucma_release();
	await_cmd(RDMA_USER_CM_CMD_REJECT, rejects + 1);
	await_on(RDMA_USER_CM_CMD_DESTROY_ID, child, 1);
	return sent_hdr(RDMA_USER_CM_CMD_REJECT, child);
}

/*
 * The lower end (this process, 192.0.2.1, towards 192.0.2.2): its REQ
 * carries a number, its companion listens on the listener's port, and it
 * answers "live" for that REQ only.
 */
START_TEST(lower_end_answers_for_its_current_req)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.2");
	uint32_t kid = kid_of(id), companion;
	struct cma_p2p_hdr req, a;
	const struct fake_kid *k;

	ck_assert_int_eq(p2p_connect(id), 0);
	req = sent_hdr(RDMA_USER_CM_CMD_CONNECT, kid);
	ck_assert_uint_ne(req.number, 0);
	ck_assert(req.incarnation != 0);
	companion = last_on(RDMA_USER_CM_CMD_LISTEN);
	k = fake_ucma_kid(companion);
	ck_assert_uint_eq(k->ps, RDMA_PS_UDP);
	ck_assert_uint_eq(
		be16toh(((const struct sockaddr_in *)&k->src)->sin_port),
		P2P_PORT);

	a = peer_asks(companion, req.incarnation, id->qp->qp_num, req.number);
	ck_assert_uint_eq(a.kind, CMA_P2P_ANSWER);
	ck_assert_uint_eq(a.flags, CMA_P2P_F_LIVE);
	ck_assert_uint_eq(a.number, req.number);
	/* Another number, QP or incarnation: not a REQ anybody waits on. */
	a = peer_asks(companion, req.incarnation, id->qp->qp_num,
		      req.number + 1);
	ck_assert_uint_eq(a.flags, 0);
	a = peer_asks(companion, req.incarnation, id->qp->qp_num + 1,
		      req.number);
	ck_assert_uint_eq(a.flags, 0);
	a = peer_asks(companion, req.incarnation ^ 1, id->qp->qp_num,
		      req.number);
	ck_assert_uint_eq(a.flags, 0);
	/*
	 * Refused for now: that REQ is over, a copy of it is stale.  (The
	 * refusal reaches our CM before the question about the copy, which
	 * the peer asks after refusing: one path, MADs in order.)
	 */
	peer_refuses_for_now(kid);
	expect_nothing();
	a = peer_asks(companion, req.incarnation, id->qp->qp_num, req.number);
	ck_assert_uint_eq(a.flags, 0);
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/* A malformed question gets no answer, and nothing breaks. */
START_TEST(lower_end_ignores_a_malformed_question)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.2");
	int rejects;
	uint32_t companion, child = 0;
	struct rdma_ucm_event_resp *r;

	ck_assert_int_eq(p2p_connect(id), 0);
	companion = last_on(RDMA_USER_CM_CMD_LISTEN);
	rejects = fake_ucma_count(RDMA_USER_CM_CMD_REJECT);
	fake_ucma_hold();
	r = fake_ucma_conn_req(companion, &child);
	memcpy(r->param.ud.private_data, "\xC5\x70\x32\x38junk", 8);
	r->param.ud.private_data_len = 8;
	fake_ucma_release();
	await_cmd(RDMA_USER_CM_CMD_REJECT, rejects + 1);
	ck_assert_int_eq(fake_ucma_last(RDMA_USER_CM_CMD_REJECT)->handle,
			 child);
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_DESTROY_ID, child),
			 1);
	expect_nothing();
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/*
 * The higher end (this process, 192.0.2.1, the peer 192.0.2.0 lower):
 * a numbered REQ from a QP is asked about before anything else; the
 * question names it, at the peer's listener port.  The kernel id of the
 * question, its SIDR REQ out.
 */
static uint32_t asked_about(uint32_t qpn, uint32_t number, uint64_t inc)
{
	int resolves = fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR);
	int routes = fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ROUTE);
	struct cma_p2p_hdr q;
	uint32_t kid;

	expect_nothing(); /* the application reads its channel */
	await_cmd(RDMA_USER_CM_CMD_RESOLVE_ADDR, resolves + 1);
	kid = last_on(RDMA_USER_CM_CMD_RESOLVE_ADDR);
	ck_assert_uint_eq(fake_ucma_kid(kid)->ps, RDMA_PS_UDP);
	ck_assert_uint_eq(
		be16toh(((const struct sockaddr_in *)&fake_ucma_kid(kid)->dst)
				->sin_port),
		P2P_PORT);
	fake_ucma_event(kid, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	await_cmd(RDMA_USER_CM_CMD_RESOLVE_ROUTE, routes + 1);
	fake_ucma_event(kid, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	await_on(RDMA_USER_CM_CMD_CONNECT, kid, 1);
	q = question_sent(kid);
	ck_assert_uint_eq(q.kind, CMA_P2P_QUERY);
	ck_assert_uint_eq(q.qpn, qpn);
	ck_assert_uint_eq(q.number, number);
	ck_assert(q.incarnation == inc);
	return kid;
}

/* The peer's answer to question @kid: live, stale, or none (@status). */
static void peer_answers(uint32_t kid, int live, int status)
{
	struct rdma_ucm_event_resp *r;
	struct cma_p2p_hdr a = {.kind = CMA_P2P_ANSWER};

	fake_ucma_hold();
	r = fake_ucma_event(kid, RDMA_CM_EVENT_UNREACHABLE, status);
	if (live >= 0) {
		a = question_sent(kid);
		a.kind = CMA_P2P_ANSWER;
		a.port = 0;
		a.flags = live ? CMA_P2P_F_LIVE : 0;
		cma_p2p_hdr_encode(&a, r->param.ud.private_data);
		r->param.ud.private_data_len = CMA_P2P_HDR_LEN;
	}
	fake_ucma_release();
}

static void higher_setup(void)
{
	p2p_peer_fixture();
	listener_holds();
	req_qpn = 0x100;
	req_number = 7;
	req_incarnation = 0xB0B;
}

static void higher_teardown(void)
{
	req_qpn = 0;
	req_number = 0;
	req_incarnation = 0;
	p2p_peer_teardown();
}

/*
 * A connect of ours waits for the peer's REQ, which comes (the REQ's kernel
 * id in *@req) and is asked about (the question's in *@q).  The id.
 */
static struct rdma_cm_id *waiting_and_asked(uint32_t *req, uint32_t *q)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.0");

	ck_assert_int_eq(p2p_connect(id), 0);
	*req = peer_request("192.0.2.0", 0, "hers");
	*q = asked_about(0x100, 7, 0xB0B);
	return id;
}

START_TEST(higher_end_adopts_a_req_said_live)
{
	uint32_t req, q;
	struct rdma_cm_id *id = waiting_and_asked(&req, &q);

	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_ACCEPT, req), 0);
	peer_answers(q, 1, 2);
	await_on(RDMA_USER_CM_CMD_ACCEPT, req, 1);
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_DESTROY_ID, q), 1);
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/* A copy its sender has moved on from is refused for good, never adopted. */
START_TEST(higher_end_refuses_a_req_said_stale)
{
	uint32_t req, q;
	struct rdma_cm_id *id = waiting_and_asked(&req, &q);

	peer_answers(q, 0, 2);
	await_on(RDMA_USER_CM_CMD_REJECT, req, 1);
	ck_assert_uint_eq(sent_hdr(RDMA_USER_CM_CMD_REJECT, req).kind,
			  CMA_P2P_REJ_STALE);
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_ACCEPT, req), 0);
	/* The connect still waits: the peer's next REQ is adopted. */
	req_number = 8;
	req = peer_request("192.0.2.0", 0, "hers");
	q = asked_about(0x100, 8, 0xB0B);
	peer_answers(q, 1, 2);
	await_on(RDMA_USER_CM_CMD_ACCEPT, req, 1);
	expect_nothing();
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/* No answer (the peer is gone, or has no companion): refused for now. */
START_TEST(higher_end_refuses_for_now_without_an_answer)
{
	uint32_t req, q;
	struct rdma_cm_id *id = waiting_and_asked(&req, &q);

	peer_answers(q, -1, -ETIMEDOUT);
	await_on(RDMA_USER_CM_CMD_REJECT, req, 1);
	ck_assert_uint_eq(sent_hdr(RDMA_USER_CM_CMD_REJECT, req).kind,
			  CMA_P2P_REJ_RETRY);
	expect_nothing();
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/* Without a local connect a live REQ is held, and adopted later. */
START_TEST(higher_end_holds_a_req_said_live)
{
	struct rdma_cm_id *id;
	uint32_t req, q;

	req = peer_request("192.0.2.0", 0, "hers");
	q = asked_about(0x100, 7, 0xB0B);
	peer_answers(q, 1, 2);
	await_on(RDMA_USER_CM_CMD_DESTROY_ID, q, 1);
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_REJECT, req), 0);
	expect_nothing();
	id = connecting_id("192.0.2.0");
	ck_assert_int_eq(p2p_connect(id), 0);
	await_on(RDMA_USER_CM_CMD_ACCEPT, req, 1);
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/* The listener goes while its request is asked about: refused, no leak. */
START_TEST(listener_destroyed_while_asking)
{
	uint32_t req, q;

	req = peer_request("192.0.2.0", 0, "hers");
	q = asked_about(0x100, 7, 0xB0B);
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_REJECT, req), 1);
	/* The answer that comes after finds nothing to act on. */
	peer_answers(q, 1, 2);
	await_on(RDMA_USER_CM_CMD_DESTROY_ID, q, 1);
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_ACCEPT, req), 0);
	listener = NULL;
}
END_TEST

/*
 * What a peer can make us ask is bounded like what it can make us hold:
 * past RDMA_CM_P2P_MAX_HELD questions at once a new REQ is refused for
 * now, without one.
 */
START_TEST(questions_are_bounded)
{
	uint32_t req[3];
	int i;

	for (i = 0; i < 3; i++) {
		req_number = (uint32_t)(10 + i);
		req[i] = peer_request("192.0.2.0", 0, "hers");
		expect_nothing();
	}
	await_on(RDMA_USER_CM_CMD_REJECT, req[2], 1);
	ck_assert_uint_eq(sent_hdr(RDMA_USER_CM_CMD_REJECT, req[2]).kind,
			  CMA_P2P_REJ_RETRY);
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_REJECT, req[0]),
			 0);
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_REJECT, req[1]),
			 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR), 2);
}
END_TEST

static void capped_setup(void)
{
	setenv("RDMA_CM_P2P_MAX_HELD", "2", 1);
	higher_setup();
}

static void capped_teardown(void)
{
	unsetenv("RDMA_CM_P2P_MAX_HELD");
	higher_teardown();
}

Suite *p2p_verify_suite(void)
{
	Suite *s = suite_create("p2p_verify");
	TCase *tc = tcase_create("lower");
	TCase *th = tcase_create("higher");

	tcase_add_checked_fixture(tc, p2p_peer_fixture, p2p_peer_teardown);
	tcase_add_test(tc, lower_end_answers_for_its_current_req);
	tcase_add_test(tc, lower_end_ignores_a_malformed_question);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(th, higher_setup, higher_teardown);
	tcase_add_test(th, higher_end_adopts_a_req_said_live);
	tcase_add_test(th, higher_end_refuses_a_req_said_stale);
	tcase_add_test(th, higher_end_refuses_for_now_without_an_answer);
	tcase_add_test(th, higher_end_holds_a_req_said_live);
	tcase_add_test(th, listener_destroyed_while_asking);
	suite_add_tcase(s, th);
	th = tcase_create("caps");
	tcase_add_checked_fixture(th, capped_setup, capped_teardown);
	tcase_add_test(th, questions_are_bounded);
	suite_add_tcase(s, th);
	return s;
}
