// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Late copies and the NOTICE (src/p2p/p2p_notice.c, p2p_stale.c;
 * rdma_cm_p2p(7) LATE COPIES), against the scripted peer of p2p_peer.h:
 *
 *  - the lower end, its REQ refused as stale (IB CM reason 10), tells the
 *    higher end's companion that every REQ from its QP up to that one is
 *    dead, and sends its next REQ once the answer came (at once), or
 *    after the usual delay when nobody heard;
 *  - the higher end holds and adopts every REQ at once; a NOTICE refuses
 *    the held copies it names, undoes an adoption of one that is not
 *    established (the QP kept at RTS with its posted receive), and keeps
 *    a bounded floor that refuses a copy still on its way.
 *
 * The library's service thread reads the library's own channel, as it
 * does the application's: the tests wait for its commands.
 */
#include <config.h>

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* The p2p kind of the REJECT the library sent on kernel id @kid. */
static uint8_t refusal_on(uint32_t kid)
{
	const struct rdma_ucm_reject *k;
	struct cma_p2p_hdr hdr;
	struct fake_cmd c;

	ck_assert(fake_ucma_copy_last_on(RDMA_USER_CM_CMD_REJECT, kid, &c));
	k = (const void *)c.body;
	ck_assert_int_eq(
		cma_p2p_hdr_parse(k->private_data, k->private_data_len, &hdr),
		CMA_P2P_OK);
	return hdr.kind;
}

/* --- the lower end: telling ---------------------------------------------- */

/*
 * This process (192.0.2.1, towards the higher 192.0.2.2) connected; the
 * peer's CM refuses its REQ as stale (reason 10, no data).  The REQ's
 * header, its kernel id in *@kid.
 */
static struct cma_p2p_hdr refused_as_stale(struct rdma_cm_id *id, uint32_t *kid)
{
	struct cma_p2p_hdr req;

	ck_assert_int_eq(p2p_connect(id), 0);
	*kid = kid_of(id);
	req = sent_hdr(RDMA_USER_CM_CMD_CONNECT, *kid);
	ck_assert_uint_ne(req.number, 0);
	fake_ucma_event(*kid, RDMA_CM_EVENT_REJECTED, 10);
	expect_nothing(); /* the application reads its channel */
	return req;
}

/*
 * The NOTICE goes out on a datagram id of the library's own: to the
 * peer's address and listening port, naming our incarnation and the
 * refused REQ @number.  Its header; its kernel id, its SIDR REQ out, in
 * *@kid.
 */
static struct cma_p2p_hdr notice_out(uint32_t number, uint64_t incarnation,
				     int resolves, uint32_t *kid)
{
	const struct sockaddr_in *dst;
	struct cma_p2p_hdr n;

	await_cmd(RDMA_USER_CM_CMD_RESOLVE_ADDR, resolves + 1);
	*kid = last_on(RDMA_USER_CM_CMD_RESOLVE_ADDR);
	ck_assert_uint_eq(fake_ucma_kid(*kid)->ps, RDMA_PS_UDP);
	dst = (const struct sockaddr_in *)&fake_ucma_kid(*kid)->dst;
	ck_assert_uint_eq(be16toh(dst->sin_port), P2P_PORT);
	ck_assert_uint_eq(dst->sin_addr.s_addr,
			  unit_ipv4("192.0.2.2", 0).sin_addr.s_addr);
	fake_ucma_event(*kid, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	await_on(RDMA_USER_CM_CMD_RESOLVE_ROUTE, *kid, 1);
	fake_ucma_event(*kid, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	await_on(RDMA_USER_CM_CMD_CONNECT, *kid, 1);
	n = sent_hdr(RDMA_USER_CM_CMD_CONNECT, *kid);
	ck_assert_uint_eq(n.kind, CMA_P2P_NOTICE);
	ck_assert_uint_eq(n.number, number);
	ck_assert(n.incarnation == incarnation);
	ck_assert_uint_eq(n.port, P2P_PORT);
	return n;
}

/* The same, once the id that sent the REQs is gone. */
static void notice_sent_for(uint32_t number, uint64_t incarnation, int resolves)
{
	uint32_t kid;

	notice_out(number, incarnation, resolves, &kid);
}

/* The same, for @id's REQ @req, from @id's QP. */
static uint32_t notice_sent(struct rdma_cm_id *id,
			    const struct cma_p2p_hdr *req, int resolves)
{
	uint32_t kid;
	struct cma_p2p_hdr n =
		notice_out(req->number, req->incarnation, resolves, &kid);

	ck_assert_uint_eq(n.qpn, id->qp->qp_num);
	return kid;
}

/* The peer's reply to NOTICE @kid: its ANSWER (@heard), or none. */
static void peer_replies(uint32_t kid, bool heard, int status)
{
	struct rdma_ucm_event_resp *r;
	struct cma_p2p_hdr a;

	fake_ucma_hold();
	r = fake_ucma_event(kid, RDMA_CM_EVENT_UNREACHABLE, status);
	if (heard) {
		a = sent_hdr(RDMA_USER_CM_CMD_CONNECT, kid);
		a.kind = CMA_P2P_ANSWER;
		a.port = 0;
		cma_p2p_hdr_encode(&a, r->param.ud.private_data);
		r->param.ud.private_data_len = CMA_P2P_HDR_LEN;
	}
	fake_ucma_release();
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/*
 * The peer replies to NOTICE @n (@heard, @status), and the REQ refused on
 * kernel id @refused goes out again: at least the usual delay (200 ms)
 * later if @paced.  The new kernel id.
 */
static uint32_t replied_then_sent(struct rdma_cm_id *id, uint32_t n, bool heard,
				  int status, uint32_t refused, int resolves,
				  bool paced)
{
	double t0 = now_s();

	peer_replies(n, heard, status);
	await_cmd(RDMA_USER_CM_CMD_RESOLVE_ADDR, resolves + 1);
	if (paced)
		ck_assert(now_s() - t0 >= 0.15);
	return req_sent_again(id, refused, 0);
}

/*
 * The REQ waits for the NOTICE's end, however long past the usual resend
 * delay (200 ms) that is, and goes out at once when the peer answers,
 * with a number of its own; the NOTICE's id goes, and the connection
 * forms on that REQ.
 */
START_TEST(lower_end_tells_the_peer_before_sending_again)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.2");
	int resolves = fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR);
	struct cma_p2p_hdr req = {0};
	uint32_t kid, n, again;

	req = refused_as_stale(id, &kid);
	n = notice_sent(id, &req, resolves);
	usleep(500000);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR),
			 resolves + 1);
	again = replied_then_sent(id, n, true, 2, kid, resolves + 1, false);
	ck_assert_uint_gt(sent_hdr(RDMA_USER_CM_CMD_CONNECT, again).number,
			  req.number);
	await_on(RDMA_USER_CM_CMD_DESTROY_ID, n, 1);
	expect_nothing();
	fake_ucma_event(again, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	expect_nothing();
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/* Nobody heard it (an older peer, no companion): the usual delay. */
START_TEST(unheard_notice_sends_after_the_delay)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.2");
	int resolves = fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR);
	struct cma_p2p_hdr req;
	uint32_t kid, n;

	req = refused_as_stale(id, &kid);
	n = notice_sent(id, &req, resolves);
	replied_then_sent(id, n, false, -ETIMEDOUT, kid, resolves + 1, true);
	expect_nothing();
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/*
 * Refused as stale again after a NOTICE was heard (the peer's library
 * had not read the copy yet): the next NOTICE's answer sends the REQ
 * after the usual delay, so that the rounds are paced.
 */
START_TEST(stale_again_is_paced)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.2");
	int resolves = fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR);
	struct cma_p2p_hdr req;
	uint32_t kid, n, again;

	req = refused_as_stale(id, &kid);
	n = notice_sent(id, &req, resolves);
	again = replied_then_sent(id, n, true, 2, kid, resolves + 1, false);
	req = sent_hdr(RDMA_USER_CM_CMD_CONNECT, again);
	fake_ucma_event(again, RDMA_CM_EVENT_REJECTED, 10);
	expect_nothing();
	n = notice_sent(id, &req, resolves + 2);
	replied_then_sent(id, n, true, 2, again, resolves + 3, true);
	expect_nothing();
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/*
 * A connect that ends unanswered (here destroyed while it waits to send
 * its refused REQ again) names its REQs dead: a copy the peer's CM may
 * still get must not stay adopted or held there, keeping the peer's
 * connect from the attempt that comes next.
 */
START_TEST(connect_ended_unanswered_tells_the_peer)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.2");
	int resolves = fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR);
	struct cma_p2p_hdr req;
	uint32_t kid;

	ck_assert_int_eq(p2p_connect(id), 0);
	kid = kid_of(id);
	req = sent_hdr(RDMA_USER_CM_CMD_CONNECT, kid);
	fake_ucma_event(kid, RDMA_CM_EVENT_REJECTED, 8);
	expect_nothing();
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	notice_sent_for(req.number, req.incarnation, resolves);
}
END_TEST

/* An established connect names nothing when it goes. */
START_TEST(connect_established_tells_nothing)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.2");
	int resolves = fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR);

	ck_assert_int_eq(p2p_connect(id), 0);
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	usleep(100000);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR),
			 resolves);
}
END_TEST

/* Only the stale refusal says a copy is in the way: no NOTICE else. */
START_TEST(other_refusals_tell_nothing)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.2");
	int resolves = fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR);
	uint32_t kid;

	ck_assert_int_eq(p2p_connect(id), 0);
	kid = kid_of(id);
	fake_ucma_event(kid, RDMA_CM_EVENT_REJECTED, 8);
	expect_nothing();
	await_cmd(RDMA_USER_CM_CMD_RESOLVE_ADDR, resolves + 1);
	req_sent_again(id, kid, 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR),
			 resolves + 1);
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/*
 * An ordinary listener (held for a time) makes its companion with the
 * first request a NOTICE can name, on the address it came to; one from
 * no QP (iWARP's) or unnumbered makes none.
 */
START_TEST(timed_listener_makes_its_companion_on_first_use)
{
	int listens = fake_ucma_count(RDMA_USER_CM_CMD_LISTEN);
	const struct fake_kid *k;

	req_incarnation = 0xB0B;
	peer_request("192.0.2.0", 1, "x"); /* no QP, no number */
	expect_nothing();
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_LISTEN), listens);
	req_qpn = 0x100;
	req_number = 7;
	peer_request("192.0.2.0", 2, "x");
	expect_nothing();
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_LISTEN), listens + 1);
	k = fake_ucma_kid(last_on(RDMA_USER_CM_CMD_LISTEN));
	ck_assert_uint_eq(k->ps, RDMA_PS_UDP);
	ck_assert_uint_eq(
		((const struct sockaddr_in *)&k->src)->sin_addr.s_addr,
		unit_ipv4("192.0.2.1", 0).sin_addr.s_addr);
	ck_assert_uint_eq(
		be16toh(((const struct sockaddr_in *)&k->src)->sin_port),
		P2P_PORT);
	peer_request("192.0.2.0", 3, "x");
	expect_nothing();
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_LISTEN), listens + 1);
	req_qpn = 0;
	req_number = 0;
	req_incarnation = 0;
}
END_TEST

/* --- the higher end: hearing --------------------------------------------- */

#define QPN 0x100
#define INC 0xB0Bull

static uint32_t companion;

/* This process in p2p mode, the peer 192.0.2.0 lower; its companion. */
static void higher_setup(void)
{
	const struct fake_kid *k;

	p2p_peer_fixture();
	listener_holds();
	req_qpn = QPN;
	req_number = 7;
	req_incarnation = INC;
	companion = last_on(RDMA_USER_CM_CMD_LISTEN);
	k = fake_ucma_kid(companion);
	ck_assert_uint_eq(k->ps, RDMA_PS_UDP);
	ck_assert_uint_eq(
		be16toh(((const struct sockaddr_in *)&k->src)->sin_port),
		P2P_PORT);
}

static void higher_teardown(void)
{
	req_qpn = 0;
	req_number = 0;
	req_incarnation = 0;
	p2p_peer_teardown();
}

/*
 * The peer (192.0.2.0) tells our companion that its REQs from @qpn of
 * @incarnation up to @number are dead; our ANSWER, from the REJECT.
 */
static struct cma_p2p_hdr peer_notices(uint64_t incarnation, uint32_t qpn,
				       uint32_t number)
{
	struct cma_p2p_hdr n = {.kind = CMA_P2P_NOTICE,
				.port = P2P_PORT,
				.qpn = qpn,
				.incarnation = incarnation,
				.number = number};
	struct sockaddr_in from = unit_ipv4("192.0.2.0", 40001);
	int rejects = fake_ucma_count(RDMA_USER_CM_CMD_REJECT);
	struct rdma_ucm_event_resp *r;
	uint32_t child = 0;

	fake_ucma_hold();
	r = fake_ucma_conn_req(companion, &child);
	ck_assert_ptr_nonnull(r);
	cma_p2p_hdr_encode(&n, r->param.ud.private_data);
	r->param.ud.private_data_len = CMA_P2P_HDR_LEN;
	memcpy(&fake_ucma_kid(child)->dst, &from, sizeof(from));
	fake_ucma_release();
	await_on(RDMA_USER_CM_CMD_REJECT, child, 1);
	await_on(RDMA_USER_CM_CMD_DESTROY_ID, child, 1);
	(void)rejects;
	return sent_hdr(RDMA_USER_CM_CMD_REJECT, child);
}

static void answered(const struct cma_p2p_hdr *a, uint32_t number)
{
	ck_assert_uint_eq(a->kind, CMA_P2P_ANSWER);
	ck_assert_uint_eq(a->qpn, QPN);
	ck_assert(a->incarnation == INC);
	ck_assert_uint_eq(a->number, number);
}

/*
 * Held copies the NOTICE names are refused as stale; a later REQ from the
 * QP and one from another QP stay held; a copy that comes after the
 * NOTICE is refused on sight.
 */
START_TEST(notice_refuses_held_copies)
{
	struct cma_p2p_hdr a;
	uint32_t old, newer, other, late;

	old = peer_request("192.0.2.0", 0, "gone");
	req_number = 9;
	newer = peer_request("192.0.2.0", 0, "hers");
	req_number = 3;
	req_qpn = QPN + 1;
	other = peer_request("192.0.2.0", 0, "else");
	expect_nothing();
	a = peer_notices(INC, QPN, 8);
	answered(&a, 8);
	ck_assert_uint_eq(refusal_on(old), CMA_P2P_REJ_STALE);
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_REJECT, newer), 0);
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_REJECT, other), 0);
	req_qpn = QPN;
	req_number = 5;
	late = peer_request("192.0.2.0", 0, "gone");
	expect_nothing();
	ck_assert_uint_eq(sent_hdr(RDMA_USER_CM_CMD_REJECT, late).kind,
			  CMA_P2P_REJ_STALE);
	expect_nothing();
}
END_TEST

/* @id's connect, its receive posted, adopted a copy from QPN: its kid. */
static uint32_t adopted_a_copy(struct rdma_cm_id *id)
{
	uint32_t copy;

	post_one_receive(id->qp);
	ck_assert_int_eq(p2p_connect(id), 0);
	copy = peer_request("192.0.2.0", 0, "gone");
	expect_nothing();
	await_on(RDMA_USER_CM_CMD_ACCEPT, copy, 1);
	ck_assert_uint_eq(kid_of(id), copy);
	return copy;
}

/*
 * The sender's next REQ from QPN (number 8) is answered by the QP as it
 * stood since the undone adoption of @copy; then @id goes.
 */
static void next_req_answered(struct rdma_cm_id *id, uint32_t copy)
{
	uint32_t next;

	req_qpn = QPN;
	req_number = 8;
	next = peer_request("192.0.2.0", 0, "hers");
	expect_nothing();
	await_on(RDMA_USER_CM_CMD_ACCEPT, next, 1);
	answered_as_it_stood(id, copy, next);
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}

/*
 * A late copy adopted and answered (its sender's CM dropped that REP) is
 * undone by the NOTICE: its kernel id goes, the id has a fresh one, the
 * connect waits on; the sender's next REQ from the same QP is answered
 * by the QP as it stands, PSNs dictated, the posted receive still there.
 */
START_TEST(notice_undoes_an_adoption_not_established)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.0");
	const struct fake_qp *f = fake_qp_of(id->qp);
	uint32_t copy = adopted_a_copy(id);
	struct cma_p2p_hdr a;

	a = peer_notices(INC, QPN, 7);
	answered(&a, 7);
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_DESTROY_ID, copy),
			 1);
	ck_assert_uint_ne(kid_of(id), copy);
	ck_assert_int_eq(f->qp.state, IBV_QPS_RTS);
	expect_nothing();
	next_req_answered(id, copy);
}
END_TEST

/*
 * Undone, the connect takes a held request from another QP whose sender
 * gave it up meanwhile: found dead before anything moves, so the QP is
 * not reset for it, and the next REQ from the first QP still finds the
 * QP as it was, receive and all.
 */
START_TEST(undone_adoption_meets_a_dead_request_from_another_qp)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.0");
	const struct fake_qp *f = fake_qp_of(id->qp);
	uint32_t copy = adopted_a_copy(id), other;

	req_qpn = QPN + 1;
	req_number = 20;
	other = peer_request("192.0.2.0", 0, "gone");
	expect_nothing();
	fake_ucma_kill_kid(other);
	peer_notices(INC, QPN, 7);
	ck_assert_int_ge(fake_ucma_first_on(RDMA_USER_CM_CMD_REJECT, other), 0);
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_ACCEPT, other), 0);
	ck_assert_int_eq(resets_of(id->qp), 0);
	ck_assert_int_eq(f->qp.state, IBV_QPS_RTS);
	next_req_answered(id, copy);
}
END_TEST

/* An established connection is its sender's: no NOTICE names it. */
START_TEST(notice_leaves_an_established_adoption)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.0");
	uint32_t req;
	struct cma_p2p_hdr a;

	ck_assert_int_eq(p2p_connect(id), 0);
	req = peer_request("192.0.2.0", 0, "hers");
	expect_nothing();
	await_on(RDMA_USER_CM_CMD_ACCEPT, req, 1);
	established_with_her_data(id, req);
	a = peer_notices(INC, QPN, 7);
	answered(&a, 7);
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_DESTROY_ID, req),
			 0);
	ck_assert_uint_eq(kid_of(id), req);
	expect_nothing();
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/* A malformed NOTICE is refused without an answer; nothing breaks. */
START_TEST(malformed_notice_is_refused)
{
	struct rdma_ucm_event_resp *r;
	uint32_t held, child = 0;
	const struct fake_cmd *c;
	const struct rdma_ucm_reject *k;

	held = peer_request("192.0.2.0", 0, "hers");
	fake_ucma_hold();
	r = fake_ucma_conn_req(companion, &child);
	memcpy(r->param.ud.private_data, "\xC5\x70\x32\x3Ajunk", 8);
	r->param.ud.private_data_len = 8;
	fake_ucma_release();
	await_on(RDMA_USER_CM_CMD_REJECT, child, 1);
	c = fake_ucma_last(RDMA_USER_CM_CMD_REJECT);
	k = (const void *)c->body;
	ck_assert_uint_eq(k->private_data_len, 0);
	await_on(RDMA_USER_CM_CMD_DESTROY_ID, child, 1);
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_REJECT, held), 0);
	expect_nothing();
}
END_TEST

/*
 * The floors are bounded: after as many NOTICEs about other QPs as there
 * are floors, the first is forgotten, and a copy it named is held (it
 * costs its sender one NOTICE more, never memory of ours).
 */
START_TEST(floors_are_bounded)
{
	uint32_t copy;
	int i;

	peer_notices(INC, QPN, 7);
	for (i = 1; i <= 64; i++)
		peer_notices(INC, QPN + (uint32_t)i, 7);
	copy = peer_request("192.0.2.0", 0, "gone");
	expect_nothing();
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_REJECT, copy), 0);
	peer_notices(INC, QPN, 7);
	ck_assert_uint_eq(refusal_on(copy), CMA_P2P_REJ_STALE);
}
END_TEST

Suite *p2p_notice_suite(void)
{
	Suite *s = suite_create("p2p_notice");
	TCase *tc = tcase_create("lower");
	TCase *th = tcase_create("higher");

	tcase_add_checked_fixture(tc, p2p_peer_fixture, p2p_peer_teardown);
	tcase_add_test(tc, lower_end_tells_the_peer_before_sending_again);
	tcase_add_test(tc, unheard_notice_sends_after_the_delay);
	tcase_add_test(tc, stale_again_is_paced);
	tcase_add_test(tc, other_refusals_tell_nothing);
	tcase_add_test(tc, connect_ended_unanswered_tells_the_peer);
	tcase_add_test(tc, connect_established_tells_nothing);
	tcase_add_test(tc, timed_listener_makes_its_companion_on_first_use);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(th, higher_setup, higher_teardown);
	tcase_add_test(th, notice_refuses_held_copies);
	tcase_add_test(th, notice_undoes_an_adoption_not_established);
	tcase_add_test(th,
		       undone_adoption_meets_a_dead_request_from_another_qp);
	tcase_add_test(th, notice_leaves_an_established_adoption);
	tcase_add_test(th, malformed_notice_is_refused);
	tcase_add_test(th, floors_are_bounded);
	suite_add_tcase(s, th);
	return s;
}
