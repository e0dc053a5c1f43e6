// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for peer-to-peer connection formation on both sides
 * (src/p2p/p2p_connect.c, src/p2p/p2p_request.c) against the fake kernel and the
 * fake device: the test plays the peer, whose requests, answers and
 * refusals arrive as kernel events in an order it chooses, so each
 * interleaving the VM meets by chance is a deterministic case here.
 *
 * This process is 192.0.2.1, listening on port 7471; the peer is
 * 192.0.2.2 (a higher identity: we send the REQ, it adopts) or 192.0.2.0
 * (a lower one: it sends, we adopt), listening on port 7471 too.  See
 * rdma_cm_p2p(7) for the rules checked.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cm/cma.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "p2p/p2p_table.h"
#include "cm/test_hooks.h"
#include "p2p/p2p_wire.h"
#include "unit.h"
#include "p2p_peer.h"

#define PORT P2P_PORT

/*
 * The lower peer connected long before we did: its request is held out
 * of the application's sight, and our connect adopts it: no REQ of ours,
 * an accept with our QP on the request's kernel id, our own kernel id
 * gone.
 */
START_TEST(held_request_is_adopted_by_the_later_connect)
{
	uint32_t req = peer_request("192.0.2.0", 0, "hers");
	struct rdma_cm_id *id;
	uint32_t own;

	expect_nothing();
	ck_assert(fake_ucma_kid(req)->live);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_REJECT), 0);

	id = connecting_id("192.0.2.0");
	own = kid_of(id);
	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 0);
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_ACCEPT, req).kind,
			 CMA_P2P_REP);
	ck_assert(!fake_ucma_kid(own)->live);
	ck_assert_uint_eq(kid_of(id), req);
	ck_assert_int_eq(fake_qp_of(id->qp)->qp.state, IBV_QPS_RTS);

	established_with_her_data(id, req);
	expect_nothing();
}
END_TEST

/*
 * This end is the lower one: it sends, whatever the higher peer does.  A
 * request from the higher peer (a build that does not follow the rule)
 * is refused "for now" in every state, never held, never surfaced; our
 * REQ forms the connection on our own kernel id.
 */
START_TEST(request_from_the_higher_end_is_refused_for_now)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.2");
	uint32_t own = kid_of(id), req;

	req = peer_request("192.0.2.2", 0, "hers"); /* before our connect */
	expect_nothing();
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_REJECT, req).kind,
			 CMA_P2P_REJ_RETRY);
	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_CONNECT, own).kind,
			 CMA_P2P_REQ);
	ck_assert_uint_eq(sent_hdr(RDMA_USER_CM_CMD_CONNECT, own).tag, 0);
	req = peer_request("192.0.2.2", 0, "hers"); /* while ours is out */
	expect_nothing();
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_REJECT, req).kind,
			 CMA_P2P_REJ_RETRY);

	fake_ucma_event(own, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_ACCEPT), 1);
	ck_assert_uint_eq(fake_ucma_last(RDMA_USER_CM_CMD_ACCEPT)->handle, own);
	expect_nothing();
}
END_TEST

/*
 * This end is the higher one: its connect sends nothing, ever, and waits
 * for the lower peer's REQ, which it adopts the moment it arrives; the
 * connection forms on the adopted kernel id, ours destroyed.
 */
START_TEST(higher_end_sends_no_req_and_adopts)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.0");
	uint32_t own = kid_of(id), req;
	struct rdma_cm_event *ev;

	ck_assert_int_eq(p2p_connect(id), 0);
	expect_nothing();
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 0);
	fake_ucma_clear_log();
	req = peer_request("192.0.2.0", 0, "hers");
	expect_nothing();
	ck_assert_int_ge(fake_ucma_first_on(RDMA_USER_CM_CMD_ACCEPT, req), 0);
	ck_assert_int_gt(fake_ucma_first_on(RDMA_USER_CM_CMD_DESTROY_ID, own),
			 fake_ucma_first_on(RDMA_USER_CM_CMD_ACCEPT, req));
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_ACCEPT, req).kind,
			 CMA_P2P_REP);
	ck_assert_uint_eq(kid_of(id), req);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_REJECT), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 0);

	fake_ucma_event(req, RDMA_CM_EVENT_ESTABLISHED, 0);
	ev = expect_event(RDMA_CM_EVENT_ESTABLISHED);
	ck_assert_ptr_eq(ev->id, id);
	ck_assert_mem_eq(ev->param.conn.private_data, "hers", 4);
	rdma_ack_cm_event(ev);
	expect_nothing();
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/*
 * Without explicit tags a pair's attempts pair in the order they come,
 * whatever each side counted: two held requests go to two connects, the
 * oldest first; a third connect waits and takes the next request.
 */
START_TEST(attempts_pair_in_the_order_they_come)
{
	uint32_t r1 = peer_request("192.0.2.0", 0, "one");
	uint32_t r2 = peer_request("192.0.2.0", 0, "two"), r3;
	struct rdma_cm_id *a, *b, *c;

	expect_nothing();
	a = connecting_id("192.0.2.0");
	b = connecting_id("192.0.2.0");
	c = connecting_id("192.0.2.0");
	ck_assert_int_eq(p2p_connect(a), 0);
	ck_assert_int_eq(p2p_connect(b), 0);
	ck_assert_int_eq(p2p_connect(c), 0);
	ck_assert_uint_eq(kid_of(a), r1);
	ck_assert_uint_eq(kid_of(b), r2);
	r3 = peer_request("192.0.2.0", 0, "three");
	expect_nothing();
	ck_assert_uint_eq(kid_of(c), r3);
	established_with(b, r2, "two");
	established_with(a, r1, "one");
	established_with(c, r3, "three");
	expect_nothing();
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_REJECT), 0);
}
END_TEST

/*
 * A request the peer gave up before we answered it (its CM left the
 * request state: the kernel refuses the ACCEPT, EINVAL) is refused and
 * passed over within the same connect: the next held one is adopted.
 */
START_TEST(dead_held_request_is_passed_over)
{
	uint32_t dead = peer_request("192.0.2.0", 0, "gone");
	uint32_t live = peer_request("192.0.2.0", 0, "hers");
	struct rdma_cm_id *id = connecting_id("192.0.2.0");

	expect_nothing();
	fake_ucma_fail_next(RDMA_USER_CM_CMD_ACCEPT, EINVAL);
	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_int_ge(fake_ucma_first_on(RDMA_USER_CM_CMD_REJECT, dead), 0);
	ck_assert_uint_eq(kid_of(id), live);
	ck_assert_int_eq(fake_qp_of(id->qp)->qp.state, IBV_QPS_RTS);
	established_with_her_data(id, live);
	expect_nothing();
}
END_TEST

/*
 * A dead request leaves the QP at RTS for its sender's QP: the next
 * request from that same QP (the peer sending its REQ again) is answered
 * as the QP is, no RESET, so the receive the application posted before
 * connecting is still there; the REP dictates the PSNs the QP has, which
 * are the dead request's answer's, not the new kernel id's.
 */
START_TEST(next_request_from_the_same_qp_keeps_the_qp)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.0");
	const struct fake_qp *f = fake_qp_of(id->qp);
	uint32_t dead, live;

	req_qpn = 0x1234;
	post_one_receive(id->qp);
	dead = peer_request("192.0.2.0", 0, "gone");
	live = peer_request("192.0.2.0", 0, "hers");
	expect_nothing();
	fake_ucma_fail_next(RDMA_USER_CM_CMD_ACCEPT, EINVAL);
	ck_assert_int_eq(p2p_connect(id), 0);
	req_qpn = 0;
	ck_assert_int_ge(fake_ucma_first_on(RDMA_USER_CM_CMD_REJECT, dead), 0);
	ck_assert_uint_eq(kid_of(id), live);
	/* moved once, for the dead one */
	ck_assert_uint_eq(f->last[IBV_QPS_RTR].dest_qp_num, 0x1234);
	ck_assert_uint_eq(f->last[IBV_QPS_RTR].rq_psn, FAKE_UCMA_RQ_PSN(dead));
	ck_assert_uint_eq(f->last[IBV_QPS_RTS].sq_psn, FAKE_UCMA_SQ_PSN(dead));
	answered_as_it_stood(id, dead, live);
}
END_TEST

/*
 * @id's connect passed the dead request @dead over and answered @live
 * with its QP brought up for it, after @resets RESETs: with the kernel
 * id's own PSNs, none dictated; then it forms.
 */
static void answered_afresh(struct rdma_cm_id *id, uint32_t dead, uint32_t live,
			    int resets)
{
	const struct fake_qp *f = fake_qp_of(id->qp);

	ck_assert_int_ge(fake_ucma_first_on(RDMA_USER_CM_CMD_REJECT, dead), 0);
	ck_assert_uint_eq(kid_of(id), live);
	ck_assert_int_eq(resets_of(id->qp), resets);
	ck_assert_int_eq(f->qp.state, IBV_QPS_RTS);
	ck_assert_uint_eq(f->last[IBV_QPS_RTR].rq_psn, FAKE_UCMA_RQ_PSN(live));
	ck_assert(!(sent_hdr(RDMA_USER_CM_CMD_ACCEPT, live).flags &
		    CMA_P2P_F_PSNS));
	established_with_her_data(id, live);
}

/*
 * A request found dead before the QP moved (the kernel has no RTR
 * attributes for it) leaves the QP in INIT as it was: no RESET, the
 * posted receive stays, and the next request is answered as usual.
 */
START_TEST(request_dead_before_rtr_leaves_the_qp_alone)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.0");
	const struct fake_qp *f = fake_qp_of(id->qp);
	uint32_t dead, live;

	post_one_receive(id->qp);
	dead = peer_request("192.0.2.0", 0, "gone");
	live = peer_request("192.0.2.0", 0, "hers");
	expect_nothing();
	fake_ucma_kill_kid(dead);
	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_int_eq(f->nrecvs, 1);
	answered_afresh(id, dead, live, 0);
}
END_TEST

/*
 * A request from another QP cannot use a QP bound to the dead one's: it
 * goes through RESET (the one case that drops the posted receives) and
 * is answered with the new kernel id's PSNs, no dictated ones.
 */
START_TEST(next_request_from_another_qp_resets_the_qp)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.0");
	const struct fake_qp *f = fake_qp_of(id->qp);
	uint32_t dead, live;

	req_qpn = 0x1234;
	dead = peer_request("192.0.2.0", 0, "gone");
	req_qpn = 0x1235;
	live = peer_request("192.0.2.0", 0, "hers");
	req_qpn = 0;
	expect_nothing();
	fake_ucma_fail_next(RDMA_USER_CM_CMD_ACCEPT, EINVAL);
	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_uint_eq(f->last[IBV_QPS_RTR].dest_qp_num, 0x1235);
	answered_afresh(id, dead, live, 1);
}
END_TEST

/*
 * The lower end takes the PSNs a REP dictates: it receives from the
 * answering QP's send PSN and sends from its receive PSN, whatever the
 * CM's fields say; without them, the CM's.
 */
START_TEST(lower_end_takes_the_dictated_psns)
{
	struct cma_p2p_hdr rep = {.kind = CMA_P2P_REP,
				  .flags = CMA_P2P_F_PSNS,
				  .port = PORT,
				  .incarnation = 0xaaaa,
				  .rq_psn = 0x345678,
				  .sq_psn = 0x123456};
	struct rdma_ucm_event_resp *r;
	struct rdma_cm_id *id = connecting_id("192.0.2.2");
	const struct fake_qp *f = fake_qp_of(id->qp);

	ck_assert_int_eq(p2p_connect(id), 0);
	fake_ucma_hold();
	r = fake_ucma_event(kid_of(id), RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	ck_assert_ptr_nonnull(r);
	r->param.conn.private_data_len =
		(uint8_t)cma_p2p_hdr_encode(&rep, r->param.conn.private_data);
	fake_ucma_release();
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	ck_assert_uint_eq(f->last[IBV_QPS_RTR].rq_psn, 0x123456);
	ck_assert_uint_eq(f->last[IBV_QPS_RTS].sq_psn, 0x345678);

	id = connecting_id("192.0.2.3");
	f = fake_qp_of(id->qp);
	rep.flags = 0;
	ck_assert_int_eq(p2p_connect(id), 0);
	fake_ucma_hold();
	r = fake_ucma_event(kid_of(id), RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	r->param.conn.private_data_len =
		(uint8_t)cma_p2p_hdr_encode(&rep, r->param.conn.private_data);
	fake_ucma_release();
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	ck_assert_uint_eq(f->last[IBV_QPS_RTR].rq_psn,
			  FAKE_UCMA_RQ_PSN(kid_of(id)));
	ck_assert_uint_eq(f->last[IBV_QPS_RTS].sq_psn,
			  FAKE_UCMA_SQ_PSN(kid_of(id)));
}
END_TEST

/*
 * The same for a request that arrives while the connect waits: a dead one
 * leaves it waiting, no event, and the peer's next attempt pairs with it.
 */
START_TEST(dead_arriving_request_leaves_the_connect_waiting)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.0");
	uint32_t own = kid_of(id), dead, live;

	ck_assert_int_eq(p2p_connect(id), 0);
	fake_ucma_fail_next(RDMA_USER_CM_CMD_ACCEPT, EINVAL);
	dead = peer_request("192.0.2.0", 0, "gone");
	expect_nothing();
	ck_assert_int_ge(fake_ucma_first_on(RDMA_USER_CM_CMD_REJECT, dead), 0);
	ck_assert_uint_eq(kid_of(id), own);
	ck_assert(fake_ucma_kid(own)->live);
	live = peer_request("192.0.2.0", 0, "hers");
	expect_nothing();
	ck_assert_uint_eq(kid_of(id), live);
	established_with_her_data(id, live);
	expect_nothing();
}
END_TEST

/*
 * Kernel id @kid's REQ refused with IB CM reason @status and no data (8:
 * no listener; 10: stale connection; 28: no listener for the address),
 * the command log cleared first for req_sent_again.
 */
static void refused_for_now(uint32_t kid, int status)
{
	fake_ucma_clear_log();
	fake_ucma_event(kid, RDMA_CM_EVENT_REJECTED, status);
	expect_nothing();
}

/*
 * The higher peer's library refused our REQ "for now" (it could not hold
 * it: its cap, its listener going away).  The higher end never sends, so
 * ours goes out again, on a fresh kernel id, and forms on its answer.
 */
START_TEST(refused_for_now_req_goes_out_again)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.2");
	uint32_t own = kid_of(id), again;

	ck_assert_int_eq(p2p_connect(id), 0);
	fake_ucma_clear_log();
	peer_refuses_for_now(own);
	expect_nothing();
	again = req_sent_again(id, own, 0);
	fake_ucma_event(again, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	expect_nothing();
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	ck_assert(!fake_ucma_kid(again)->live);
}
END_TEST

/*
 * Reason 28 with no private data is the kernel's own refusal when the
 * service ID has a listener but none for the address (two addresses of
 * one device on one port, the peer's listener not up yet): as reason 8,
 * our REQ goes out again, and forms once the peer listens.
 */
START_TEST(kernel_refusal_without_data_is_sent_again)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.2");
	uint32_t own = kid_of(id), again;

	ck_assert_int_eq(p2p_connect(id), 0);
	refused_for_now(own, 28);
	again = req_sent_again(id, own, 0);
	fake_ucma_event(again, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	expect_nothing();
}
END_TEST

/*
 * Our REQ reached the higher peer before it listened (IB CM reason 8): it
 * goes out again until it is heard (here refused once more first), and
 * forms.  Another connect of the pair is unaffected.
 */
START_TEST(refused_unheard_req_goes_out_until_heard)
{
	struct rdma_cm_id *one, *two;
	struct rdma_cm_event *ev;
	uint32_t own, again, third;

	req_incarnation = 0x1234;
	one = connecting_id("192.0.2.2");
	two = connecting_id("192.0.2.2");
	own = kid_of(one);
	ck_assert_int_eq(p2p_connect(one), 0);
	ck_assert_int_eq(p2p_connect(two), 0);
	ck_assert_uint_eq(sent_hdr(RDMA_USER_CM_CMD_CONNECT, kid_of(two)).tag,
			  0);
	refused_for_now(own, 8);
	again = req_sent_again(one, own, 0);
	refused_for_now(again, 8);
	third = req_sent_again(one, again, 0);
	fake_ucma_event(kid_of(two), RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	ev = expect_event(RDMA_CM_EVENT_ESTABLISHED);
	ck_assert_ptr_eq(ev->id, two);
	rdma_ack_cm_event(ev);
	fake_ucma_event(third, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	ev = expect_event(RDMA_CM_EVENT_ESTABLISHED);
	ck_assert_ptr_eq(ev->id, one);
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_REJECT), 0);
}
END_TEST

/*
 * The commands of a connect and of an adoption (CONNECT,
 * MIGRATE_ID, ACCEPT, destroying the replaced kernel id) go out without
 * the process-wide p2p_lock: on iWARP they wait for the network, and
 * every other p2p id of the process would wait with them.
 */
static uint32_t watched; /* the connecting id's own kernel id */
static int under_lock;

static int count_under_lock(const struct fake_cmd *c, void *resp, size_t len)
{
	(void)resp;
	(void)len;
	switch (c->cmd) {
	case RDMA_USER_CM_CMD_DESTROY_ID:
		if (c->handle != watched)
			break;
		/* fall through */
	case RDMA_USER_CM_CMD_CONNECT:
	case RDMA_USER_CM_CMD_ACCEPT:
	case RDMA_USER_CM_CMD_MIGRATE_ID:
		if (cma_p2p_locked())
			under_lock++;
		break;
	}
	return FAKE_UCMA_MODEL;
}

START_TEST(connect_and_adoption_commands_go_out_unlocked)
{
	struct rdma_cm_id *later, *waiting, *tagged, *lower;
	uint32_t req;

	fake_ucma_set_hook(count_under_lock);
	/* rdma_connect adopts a held request */
	req = peer_request("192.0.2.0", 0, "hers");
	expect_nothing();
	later = connecting_id("192.0.2.0");
	watched = kid_of(later);
	ck_assert_int_eq(p2p_connect(later), 0);
	ck_assert_uint_eq(kid_of(later), req);
	ck_assert(!fake_ucma_kid(watched)->live);

	/* the listener's event path adopts the request a connect waits for */
	waiting = connecting_id("192.0.2.0");
	watched = kid_of(waiting);
	ck_assert_int_eq(p2p_connect(waiting), 0);
	req = peer_request("192.0.2.0", 0, "hers");
	expect_nothing();
	ck_assert_uint_eq(kid_of(waiting), req);
	ck_assert(!fake_ucma_kid(watched)->live);

	/* the same with an explicit tag */
	tagged = connecting_id("192.0.2.0");
	ck_assert_int_eq(rdma_set_option(tagged, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_P2P_TAG, &(uint64_t){7},
					 sizeof(uint64_t)),
			 0);
	watched = kid_of(tagged);
	ck_assert_int_eq(p2p_connect(tagged), 0);
	req_flags = CMA_P2P_F_EXPLICIT_TAG;
	req = peer_request("192.0.2.0", 7, "hers");
	expect_nothing();
	req_flags = 0;
	ck_assert_uint_eq(kid_of(tagged), req);
	ck_assert(!fake_ucma_kid(watched)->live);

	/* the lower end's REQ */
	lower = connecting_id("192.0.2.2");
	watched = kid_of(lower);
	ck_assert_int_eq(p2p_connect(lower), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 1);

	fake_ucma_set_hook(NULL);
	ck_assert_int_eq(under_lock, 0);
}
END_TEST

static void *connect_in_a_thread(void *id)
{
	p2p_connect(id); /* no Check assert: a fork copies this thread */
	return NULL;
}

/*
 * A program forks while another of its threads is in a p2p connect's REQ
 * (the conn busy, p2p_lock dropped), and the child, on its way out,
 * destroys its copy of that id: no thread of the child is in that REQ,
 * so nothing must be waited for.  rdma_destroy_id returns at once.
 */
START_TEST(a_child_forked_during_a_req_destroys_the_id_at_once)
{
	struct rdma_cm_id *lower = connecting_id("192.0.2.2");
	pthread_t t;
	int status;
	pid_t pid;

	fake_ucma_pause(RDMA_USER_CM_CMD_CONNECT, kid_of(lower));
	ck_assert_int_eq(pthread_create(&t, NULL, connect_in_a_thread, lower),
			 0);
	fake_ucma_wait_paused();
	pid = fork();
	if (!pid) {
		rdma_destroy_id(lower);
		_exit(0);
	}
	status = pid > 0 ? unit_wait_child(pid, 2000) : -1;
	fake_ucma_resume();
	pthread_join(t, NULL);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "the child's rdma_destroy_id did not return");
}
END_TEST

#ifndef __SANITIZE_THREAD__ /* why: at its registration below */
/*
 * A process in the middle of its p2p work forks: a peer's request held on
 * its listener, a REQ of its own refused for now and due to go out again.
 * The child is another process on the same kernel file, and what it does
 * with its own p2p connects never acts on the parent's: it needs a
 * listener of its own (here on the parent's port, which the child's
 * destroying its copy of the parent's listener freed in this fake
 * kernel), its connect to the same peer adopts nothing of the parent's,
 * the parent's REQ is not sent again from the child, and the child's
 * destroying its copies of the parent's ids tells no peer anything (no
 * REJ of the held request, no NOTICE).
 */
START_TEST(a_forked_child_leaves_its_parents_p2p_work_alone)
{
	uint32_t held = peer_request("192.0.2.0", 0, "hers");
	struct rdma_cm_id *lower = connecting_id("192.0.2.2"), *mine;
	int status;
	pid_t pid;

	expect_nothing();
	ck_assert_int_eq(p2p_connect(lower), 0);
	refused_for_now(kid_of(lower), 8); /* sent again in 200 ms */
	pid = fork();
	if (!pid) {
		int connects = fake_ucma_count(RDMA_USER_CM_CMD_CONNECT),
		    notices;
		bool ok;

		mine = connecting_id("192.0.2.0");
		ok = p2p_connect(mine) < 0 && errno == EADDRNOTAVAIL;
		rdma_destroy_id(listener);
		ok = ok && !fake_ucma_count_on(RDMA_USER_CM_CMD_REJECT, held) &&
		     fake_ucma_kid(held)->live;
		ok = ok && listening_id(P2P_PORT) && !p2p_connect(mine) &&
		     kid_of(mine) != held && fake_ucma_kid(held)->live;
		usleep(600 * 1000); /* the parent's REQ was due again */
		ok = ok &&
		     fake_ucma_count(RDMA_USER_CM_CMD_CONNECT) == connects;
		notices = fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR);
		rdma_destroy_qp(lower);
		rdma_destroy_id(lower);
		ok = ok &&
		     fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR) == notices;
		/* Its own connect to that peer, in tables without the parent's. */
		mine = connecting_id("192.0.2.2");
		ok = ok && !p2p_connect(mine) &&
		     fake_ucma_count_on(RDMA_USER_CM_CMD_CONNECT, kid_of(mine));
		rdma_destroy_qp(mine);
		ok = ok && !rdma_destroy_id(mine);
		_exit(ok ? 0 : 1);
	}
	status = pid > 0 ? unit_wait_child(pid, 5000) : -1;
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "the child acted on its parent's p2p work");
}
END_TEST
#endif

/* The tag of the REQ the connect of @id sent. */
static uint64_t sent_tag(struct rdma_cm_id *id)
{
	return sent_hdr(RDMA_USER_CM_CMD_CONNECT, kid_of(id)).tag;
}

/*
 * An attempt that fails on one side only must not derail the pair: the
 * peer's application refused our REQ (reason 28 with its private data),
 * or the application destroyed a connect before its answer.  Nothing is
 * counted, so the next connect's REQ is the same as the first's and pairs
 * with whatever attempt of the peer's waits.
 */
START_TEST(failed_attempt_never_derails_the_next)
{
	struct rdma_ucm_event_resp *r;
	struct rdma_cm_id *id;

	id = connecting_id("192.0.2.2");
	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_uint_eq(sent_tag(id), 0);
	fake_ucma_hold();
	r = fake_ucma_event(kid_of(id), RDMA_CM_EVENT_REJECTED, 28);
	ck_assert_ptr_nonnull(r);
	memcpy(r->param.conn.private_data, "no", 2);
	r->param.conn.private_data_len = 2;
	fake_ucma_release();
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_REJECTED));

	id = connecting_id("192.0.2.2");
	ck_assert_int_eq(p2p_connect(id), 0);
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);

	id = connecting_id("192.0.2.2");
	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_uint_eq(sent_tag(id), 0);
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	expect_nothing();
}
END_TEST

/* @id connects with explicit tag @tag. */
static void set_tag(struct rdma_cm_id *id, uint64_t tag)
{
	ck_assert_int_eq(rdma_set_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_P2P_TAG, &tag,
					 sizeof(tag)),
			 0);
}

/*
 * The (lower) peer's request is held, and a connect of ours adopts it;
 * with req_flags' explicit tag, the connect names @tag too.
 */
static struct rdma_cm_id *formed_with_held(const char *peer, uint64_t tag)
{
	uint32_t req = peer_request(peer, tag, "hers");
	struct rdma_cm_id *id;

	expect_nothing();
	id = connecting_id(peer);
	if (req_flags & CMA_P2P_F_EXPLICIT_TAG)
		set_tag(id, tag);
	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_uint_eq(kid_of(id), req);
	fake_ucma_event(req, RDMA_CM_EVENT_ESTABLISHED, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	return id;
}

/*
 * The peer's process restarts (same address and port, a new incarnation)
 * and connects again: the old connection is disconnected, the new request
 * is held, and our next connect adopts it.
 */
START_TEST(restarted_peer_is_not_a_duplicate)
{
	struct rdma_cm_id *old, *id;
	uint32_t req;

	req_incarnation = 0xaaaa;
	old = formed_with_held("192.0.2.0", 0);
	fake_ucma_clear_log();

	req_incarnation = 0xbbbb;
	req = peer_request("192.0.2.0", 0, "again");
	expect_nothing();
	ck_assert_int_eq(fake_ucma_first_on(RDMA_USER_CM_CMD_REJECT, req), -1);
	ck_assert(fake_ucma_kid(req)->live);
	ck_assert_int_ge(
		fake_ucma_first_on(RDMA_USER_CM_CMD_DISCONNECT, kid_of(old)),
		0);

	id = connecting_id("192.0.2.0");
	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 0);
	ck_assert_uint_eq(kid_of(id), req);
}
END_TEST

/*
 * A peer that only ever answered our requests (its REPs state its
 * incarnation) is recognised when it comes back too.
 */
START_TEST(restart_of_a_peer_known_by_its_reply)
{
	struct cma_p2p_hdr rep = {
		.kind = CMA_P2P_REP, .port = PORT, .incarnation = 0xaaaa};
	struct rdma_ucm_event_resp *r;
	struct rdma_cm_id *old, *id;
	uint32_t req;

	old = connecting_id("192.0.2.2");
	ck_assert_int_eq(p2p_connect(old), 0);
	fake_ucma_hold();
	r = fake_ucma_event(kid_of(old), RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	ck_assert_ptr_nonnull(r);
	cma_p2p_hdr_encode(&rep, r->param.conn.private_data);
	r->param.conn.private_data_len = CMA_P2P_HDR_LEN;
	fake_ucma_release();
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	fake_ucma_clear_log();

	/* refused (it is the higher end), but it tells of the restart */
	req_incarnation = 0xbbbb;
	req = peer_request("192.0.2.2", 0, "again");
	expect_nothing();
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_REJECT, req).kind,
			 CMA_P2P_REJ_RETRY);
	ck_assert_int_ge(
		fake_ucma_first_on(RDMA_USER_CM_CMD_DISCONNECT, kid_of(old)),
		0);
	id = connecting_id("192.0.2.2");
	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_CONNECT, kid_of(id)).kind,
			 CMA_P2P_REQ);
}
END_TEST

/*
 * The same peer, the same incarnation, an explicit tag already paired: a
 * stale duplicate.  Without a tag it would be the pair's next attempt.
 */
START_TEST(same_incarnation_duplicate_is_refused)
{
	uint32_t dup;

	req_incarnation = 0xaaaa;
	req_flags = CMA_P2P_F_EXPLICIT_TAG;
	formed_with_held("192.0.2.0", 1);
	dup = peer_request("192.0.2.0", 1, "again");
	expect_nothing();
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_REJECT, dup).kind,
			 CMA_P2P_REJ_DUP);
}
END_TEST

/*
 * A connect of ours whose REQ is out when the peer's new process shows up
 * is tied to no process: its REQ reaches the new one (or the old one's
 * kernel refuses it and it goes out again), so it goes on, and forms on
 * the new process's answer.
 */
START_TEST(restart_leaves_a_connect_under_way_alone)
{
	struct rdma_cm_id *id;
	uint32_t own;

	req_incarnation = 0xaaaa;
	peer_request("192.0.2.2", 0, "first"); /* refused, but heard */
	expect_nothing();
	id = connecting_id("192.0.2.2");
	own = kid_of(id);
	ck_assert_int_eq(p2p_connect(id), 0);

	req_incarnation = 0xbbbb;
	peer_request("192.0.2.2", 0, "again");
	expect_nothing();
	ck_assert(fake_ucma_kid(own)->live);
	fake_ucma_event(own, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	expect_nothing();
}
END_TEST

/*
 * The fuzzer's find (tests/fuzz/known/p2p-orphan-kernel-id-uaf): when the
 * kernel refuses to destroy the kernel id an adoption replaced, that id
 * lives on with our uid.  rdma_destroy_id destroys it too, so no event
 * can name the freed id afterwards.
 */
START_TEST(orphaned_kernel_id_is_destroyed_with_the_id)
{
	uint32_t req = peer_request("192.0.2.0", 0, "hers"), own;
	struct rdma_cm_id *id;

	expect_nothing();
	id = connecting_id("192.0.2.0");
	own = kid_of(id);
	fake_ucma_fail_next(RDMA_USER_CM_CMD_DESTROY_ID, ENOMEM);
	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_uint_eq(kid_of(id), req);
	ck_assert(fake_ucma_kid(own)->live);
	fake_ucma_event(req, RDMA_CM_EVENT_ESTABLISHED, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	ck_assert(!fake_ucma_kid(own)->live);
	ck_assert(!fake_ucma_kid(req)->live);
}
END_TEST

/*
 * A second request with an explicit tag already formed is a stale
 * duplicate; one without a tag after a formed connection is the pair's
 * next attempt, held for the next connect.
 */
START_TEST(duplicate_of_a_formed_connection_is_refused)
{
	uint32_t dup, next;

	req_flags = CMA_P2P_F_EXPLICIT_TAG;
	formed_with_held("192.0.2.0", 5);
	dup = peer_request("192.0.2.0", 5, "again");
	expect_nothing();
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_REJECT, dup).kind,
			 CMA_P2P_REJ_DUP);

	req_flags = 0;
	formed_with_held("192.0.2.0", 0);
	next = peer_request("192.0.2.0", 0, "next");
	expect_nothing();
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_REJECT, next), 0);
	ck_assert(fake_ucma_kid(next)->live);
}
END_TEST

/*
 * Enough formed connections to one peer, each with its explicit tag, that
 * the table of conns grows
 * several times (src/util/htable.h) and chains are shared: a duplicate of any
 * of them is found and refused.  Destroyed in two rounds (every other
 * one, then the rest: unlinked from inside chains, beside live ones), a
 * destroyed one's key matches nothing and its request is held, while the
 * survivors' keys are still found.
 */
#define MANY_CONNS 1031

static void expect_refused_as_duplicate(uint64_t tag)
{
	uint32_t dup = peer_request("192.0.2.0", tag, "again");

	expect_nothing();
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_REJECT, dup).kind,
			 CMA_P2P_REJ_DUP);
}

static void expect_held(uint64_t tag)
{
	uint32_t req = peer_request("192.0.2.0", tag, "new");

	expect_nothing();
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_REJECT, req), 0);
	ck_assert(fake_ucma_kid(req)->live);
}

/* Destroy ids[i] for every i of @parity; then check a sample of all. */
static void destroy_half_and_look_up(struct rdma_cm_id **ids, int parity)
{
	int i;

	for (i = parity; i < MANY_CONNS; i += 2) {
		rdma_destroy_qp(ids[i]);
		ck_assert_int_eq(rdma_destroy_id(ids[i]), 0);
		ids[i] = NULL;
	}
	for (i = 0; i < MANY_CONNS; i += 97) {
		if (ids[i])
			expect_refused_as_duplicate((uint64_t)i + 1);
		else
			expect_held((uint64_t)i + 1);
	}
}

START_TEST(many_formed_connections_are_each_found)
{
	static struct rdma_cm_id *ids[MANY_CONNS];
	uint32_t req;
	int i;

	req_flags = CMA_P2P_F_EXPLICIT_TAG;
	for (i = 0; i < MANY_CONNS; i++) {
		req = peer_request("192.0.2.0", (uint64_t)i + 1, "hers");
		expect_nothing();
		ids[i] = connecting_id("192.0.2.0");
		set_tag(ids[i], (uint64_t)i + 1);
		ck_assert_int_eq(p2p_connect(ids[i]), 0);
		ck_assert_uint_eq(kid_of(ids[i]), req);
		fake_ucma_event(req, RDMA_CM_EVENT_ESTABLISHED, 0);
		rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	}
	for (i = 0; i < MANY_CONNS; i += 97)
		expect_refused_as_duplicate((uint64_t)i + 1);
	destroy_half_and_look_up(ids, 0);
	destroy_half_and_look_up(ids, 1);
}
END_TEST

/* A request whose header claims p2p but is malformed never surfaces. */
START_TEST(malformed_header_is_refused)
{
	uint32_t req = peer_request("192.0.2.0", 0, "hers");

	(void)req;
	expect_nothing(); /* held: it is well formed */
	{
		struct rdma_ucm_event_resp *r;
		uint32_t bad = 0;

		fake_ucma_hold();
		r = fake_ucma_conn_req(kid_of(listener), &bad);
		ck_assert_ptr_nonnull(r);
		/* the magic, then version 9: not ours to understand */
		r->param.conn.private_data[0] = 0xc5;
		r->param.conn.private_data[1] = 0x70;
		r->param.conn.private_data[2] = 0x32;
		r->param.conn.private_data[3] = 0x91;
		r->param.conn.private_data_len = CMA_P2P_HDR_LEN;
		fake_ucma_release();
		expect_nothing();
		ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_REJECT, bad).kind,
				 CMA_P2P_REJ_BAD);
	}
}
END_TEST

/* A plain request (no header) on the same listener is the application's. */
START_TEST(plain_request_surfaces_at_once)
{
	struct rdma_ucm_event_resp *r;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	uint32_t child = 0;

	fake_ucma_hold();
	r = fake_ucma_conn_req(kid_of(listener), &child);
	ck_assert_ptr_nonnull(r);
	memcpy(r->param.conn.private_data, "plain", 5);
	r->param.conn.private_data_len = 5;
	fake_ucma_release();
	ev = expect_event(RDMA_CM_EVENT_CONNECT_REQUEST);
	ck_assert_ptr_eq(ev->listen_id, listener);
	ck_assert_uint_eq(ev->param.conn.peer2peer_mode, 0);
	ck_assert_mem_eq(ev->param.conn.private_data, "plain", 5);
	id = ev->id;
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/* --- what a remote peer can make us hold ----------------------------- */

static void capped_setup(void)
{
	setenv("RDMA_CM_P2P_MAX_HELD", "4", 1);
	p2p_peer_fixture();
}

/* Whether the kernel id of a request was refused (REJECT sent for it). */
static bool refused(uint32_t handle)
{
	int i;

	for (i = 0; i < fake_ucma_ncmds(); i++)
		if (fake_ucma_cmd(i)->cmd == RDMA_USER_CM_CMD_REJECT &&
		    fake_ucma_cmd(i)->handle == handle)
			return true;
	return false;
}

START_TEST(held_requests_are_capped_oldest_first)
{
	uint32_t req[6];
	int i;

	req_flags = CMA_P2P_F_EXPLICIT_TAG;
	for (i = 0; i < 6; i++)
		req[i] = peer_request("192.0.2.0", 100 + (uint64_t)i, "x");
	expect_nothing();
	ck_assert(refused(req[0]));
	ck_assert(refused(req[1]));
	for (i = 2; i < 6; i++) {
		ck_assert(!refused(req[i]));
		ck_assert(fake_ucma_kid(req[i])->live);
	}
	/* the newest are still matched: a connect with tag 105 adopts it */
	{
		struct rdma_cm_id *id = connecting_id("192.0.2.0");

		set_tag(id, 105);
		ck_assert_int_eq(p2p_connect(id), 0);
		ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 0);
		ck_assert_uint_eq(kid_of(id), req[5]);
	}
}
END_TEST

/*
 * A flood of p2p-tagged requests at an ordinary listener: memory stays
 * bounded (at most RDMA_CM_P2P_MAX_HELD held, the rest refused), and the
 * work per request does not grow with the flood (printed, not judged).
 */
START_TEST(flood_of_requests_stays_bounded)
{
	const int n = 10000;
	struct timespec t0, t1;
	uint32_t last = 0;
	int i, live = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++) {
		last = peer_request("192.0.2.0", 1000 + (uint64_t)i, "x");
		if (i % 64 == 63)
			expect_nothing();
	}
	expect_nothing();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* The companion that hears NOTICEs (datagram) is none of them. */
	for (i = 1; i <= (int)last; i++)
		if (fake_ucma_kid((uint32_t)i)->live &&
		    fake_ucma_kid((uint32_t)i)->ps != RDMA_PS_UDP &&
		    fake_ucma_kid((uint32_t)i)->handle != kid_of(listener))
			live++;
	ck_assert_int_eq(live, 1024);
	printf("p2p flood: %d requests, %.1f us each\n", n,
	       ((double)(t1.tv_sec - t0.tv_sec) * 1e9 +
		(double)(t1.tv_nsec - t0.tv_nsec)) /
		       n / 1000.0);
}
END_TEST

/*
 * The same flood, each request claiming another listening port and
 * process (the header's port and incarnation are the sender's word): what
 * the library keeps about peers must not grow with it either, nor the
 * work per request.
 */
START_TEST(flood_from_claimed_peers_stays_bounded)
{
	const int n = 20000;
	struct timespec t0, t1;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++) {
		req_port = (uint16_t)(1 + i % 60000);
		req_incarnation = 0x1000 + (uint64_t)i;
		peer_request(i < n / 2 ? "192.0.2.2" : "192.0.2.3", 1, "x");
		if (i % 64 == 63)
			expect_nothing();
	}
	expect_nothing();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_uint_le(cma_p2p_peers_known(), CMA_P2P_MAX_STRANGERS);
	printf("p2p flood from claimed peers: %d requests, %.1f us each\n", n,
	       ((double)(t1.tv_sec - t0.tv_sec) * 1e9 +
		(double)(t1.tv_nsec - t0.tv_nsec)) /
		       n / 1000.0);
}
END_TEST

/*
 * The higher end's wait is bounded like a REQ's, and its end reported the
 * same way: the peer never connected, UNREACHABLE with ETIMEDOUT.  The
 * peer's attempt that comes after it is held, and the next connect pairs
 * with it: the failed wait left nothing that could derail it.
 */
START_TEST(higher_end_wait_times_out_then_the_next_attempt_pairs)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	uint32_t req;

	listener_holds(); /* held requests of ours never surface */
	id = connecting_id("192.0.2.0");
	ck_assert_int_eq(p2p_connect(id), 0);
	ev = await_event(RDMA_CM_EVENT_UNREACHABLE);
	ck_assert_ptr_eq(ev->id, id);
	ck_assert_int_eq(ev->status, -ETIMEDOUT);
	rdma_ack_cm_event(ev);
	expect_nothing();
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 0);

	req = peer_request("192.0.2.0", 0, "hers");
	expect_nothing();
	ck_assert(fake_ucma_kid(req)->live);
	id = connecting_id("192.0.2.0");
	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_uint_eq(kid_of(id), req);
	established_with_her_data(id, req);
	expect_nothing();
}
END_TEST

/*
 * The peer answered our REQ, then destroyed its id before our RTU (its CM
 * sent a REJ, ours left the reply state): moving the QP fails, the
 * application gets CONNECT_ERROR as from rdma-core, and that is the
 * connect's one end.  Its time bound must not report a second one, nor
 * the peer's REJ arriving after it.
 */
START_TEST(connect_error_on_the_reply_is_the_connect_end)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.2");
	uint32_t own = kid_of(id);
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_CONNECT, own).kind,
			 CMA_P2P_REQ);
	fake_ucma_fail_next(RDMA_USER_CM_CMD_INIT_QP_ATTR, EINVAL);
	fake_ucma_event(own, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	ev = expect_event(RDMA_CM_EVENT_CONNECT_ERROR);
	ck_assert_int_eq(ev->status, -EINVAL);
	rdma_ack_cm_event(ev);
	/* The connect's bound is about 2 s here: let it pass. */
	ck_assert_int_eq(poll(&pfd, 1, 3000), 0);
	fake_ucma_event(own, RDMA_CM_EVENT_REJECTED, 28);
	expect_nothing();
	ck_assert_int_eq(poll(&pfd, 1, 0), 0);
}
END_TEST

/*
 * Nine p2p connects from a holding listener's process to nine peer
 * processes at @to (listening ports 7000-7008); when they began.
 */
static struct timespec connect_to_nine_processes_at(const char *to)
{
	struct timespec t0;
	uint16_t port;

	listener_holds();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (port = 7000; port < 7009; port++)
		ck_assert_int_eq(p2p_connect(connecting_id_port(to, port)), 0);
	return t0;
}

/* The connects waiting, read as the library reads it (under p2p_lock). */
static unsigned int conns_waiting(void)
{
	unsigned int n;

	cma_p2p_lock();
	n = cma_p2p_conns_waiting();
	cma_p2p_unlock();
	return n;
}

/*
 * The same patience for the answers: nine REQs of ours to nine peer
 * processes nobody answers outlast the 2 s a single REQ would wait (two
 * steps: 4 s), and then each fails as ever.
 */
START_TEST(unanswered_reqs_in_a_mesh_wait_longer)
{
	struct rdma_cm_event *ev;
	struct timespec t0;
	long elapsed_ms;
	int i;

	t0 = connect_to_nine_processes_at("192.0.2.2");
	/* Eight REQs out (the window, p2p_window_test), the ninth waits. */
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 8);
	ck_assert_uint_eq(conns_waiting(), 9);
	elapsed_ms = unit_ms_since(&t0);
	ck_assert_int_lt(elapsed_ms, 3000);
	usleep((useconds_t)(3000 - elapsed_ms) * 1000);
	expect_nothing();
	for (i = 0; i < 9; i++) {
		ev = await_event(RDMA_CM_EVENT_UNREACHABLE);
		ck_assert_int_eq(ev->status, -ETIMEDOUT);
		rdma_ack_cm_event(ev);
	}
	ck_assert_uint_eq(conns_waiting(), 0);
}
END_TEST

/*
 * A peer that never listens: our REQ goes out again and again, each on a
 * fresh kernel id, the refused ones destroyed, until the wait for the
 * peer's REQ (here the 1 s hold) is over since the first refusal; then
 * the connect fails as it always did, REJECTED with status 8.
 */
START_TEST(peer_that_never_listens_fails_the_connect_at_the_bound)
{
	struct rdma_cm_id *id = connecting_id("192.0.2.2");
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	uint32_t kids[64];
	struct rdma_cm_event *ev = NULL;
	int n = 0, i, tries;

	ck_assert_int_eq(p2p_connect(id), 0);
	kids[n++] = kid_of(id);
	for (;;) {
		refused_for_now(kids[n - 1], 8);
		for (tries = 0; tries < 500; tries++) {
			if (fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR) ||
			    (poll(&pfd, 1, 10) > 0 &&
			     !rdma_get_cm_event(ch, &ev)))
				break;
		}
		ck_assert_int_lt(tries, 500);
		if (ev)
			break;
		ck_assert_int_lt(n, 64);
		kids[n] = req_sent_again(id, kids[n - 1], 0);
		n++;
	}
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_REJECTED);
	ck_assert_int_eq(ev->status, 8);
	ck_assert_ptr_eq(ev->id, id);
	rdma_ack_cm_event(ev);
	expect_nothing();
	for (i = 0; i < n - 1; i++)
		ck_assert(!fake_ucma_kid(kids[i])->live);
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	ck_assert(!fake_ucma_kid(kids[n - 1])->live);
}
END_TEST

static void second_hold_setup(void)
{
	setenv("RDMA_CM_P2P_HOLD_MS", "1000", 1);
	p2p_peer_fixture();
}

static void short_hold_setup(void)
{
	/* The connect's bound is 2 x hold + 2 s: about 2 s here. */
	setenv("RDMA_CM_P2P_HOLD_MS", "10", 1);
	p2p_peer_fixture();
}

/*
 * A REQ refused for now goes out again after 200 ms, the wait doubling
 * with each refusal of the connect up to 3.2 s: early ranks of a mesh
 * must not flood the late ones.
 */
START_TEST(resends_back_off)
{
	static const unsigned int want[] = {200,  200,	400, 800,
					    1600, 3200, 3200};
	struct cma_p2p_conn conn;
	unsigned int i;

	memset(&conn, 0, sizeof(conn));
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		conn.refusals = (uint8_t)i;
		ck_assert_uint_eq(cma_p2p_resend_delay_ms(&conn), want[i]);
	}
	conn.refusals = UINT8_MAX;
	ck_assert_uint_eq(cma_p2p_resend_delay_ms(&conn), 3200);
}
END_TEST

Suite *p2p_connect_suite(void)
{
	Suite *s = suite_create("p2p_connect");
	TCase *tc = tcase_create("both sides");

	tcase_add_checked_fixture(tc, p2p_peer_fixture, p2p_peer_teardown);
	/*
	 * The floods (tens of thousands of requests) take about 2 s under
	 * ThreadSanitizer: they show boundedness, not speed, and must not
	 * fail on a loaded machine at Check's 4 s.
	 */
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, held_request_is_adopted_by_the_later_connect);
	tcase_add_test(tc, resends_back_off);
	tcase_add_test(tc, request_from_the_higher_end_is_refused_for_now);
	tcase_add_test(tc, higher_end_sends_no_req_and_adopts);
	tcase_add_test(tc, refused_for_now_req_goes_out_again);
	tcase_add_test(tc, refused_unheard_req_goes_out_until_heard);
	tcase_add_test(tc, kernel_refusal_without_data_is_sent_again);
	tcase_add_test(tc, attempts_pair_in_the_order_they_come);
	tcase_add_test(tc, dead_held_request_is_passed_over);
	tcase_add_test(tc, dead_arriving_request_leaves_the_connect_waiting);
	tcase_add_test(tc, next_request_from_the_same_qp_keeps_the_qp);
	tcase_add_test(tc, next_request_from_another_qp_resets_the_qp);
	tcase_add_test(tc, request_dead_before_rtr_leaves_the_qp_alone);
	tcase_add_test(tc, lower_end_takes_the_dictated_psns);
	tcase_add_test(tc, failed_attempt_never_derails_the_next);
	tcase_add_test(tc, orphaned_kernel_id_is_destroyed_with_the_id);
	tcase_add_test(tc, connect_and_adoption_commands_go_out_unlocked);
	tcase_add_test(tc, restarted_peer_is_not_a_duplicate);
	tcase_add_test(tc, restart_of_a_peer_known_by_its_reply);
	tcase_add_test(tc, same_incarnation_duplicate_is_refused);
	tcase_add_test(tc, restart_leaves_a_connect_under_way_alone);
	tcase_add_test(tc, duplicate_of_a_formed_connection_is_refused);
	tcase_add_test(tc, many_formed_connections_are_each_found);
	tcase_add_test(tc, malformed_header_is_refused);
	tcase_add_test(tc, plain_request_surfaces_at_once);
	tcase_add_test(tc, flood_of_requests_stays_bounded);
	tcase_add_test(tc, flood_from_claimed_peers_stays_bounded);
	tcase_add_test(tc, a_child_forked_during_a_req_destroys_the_id_at_once);
#ifndef __SANITIZE_THREAD__
	/*
	 * The child's connect starts the library's service thread, and
	 * ThreadSanitizer kills a child that starts a thread after a fork of
	 * a process with threads.
	 */
	tcase_add_test(tc, a_forked_child_leaves_its_parents_p2p_work_alone);
#endif
	suite_add_tcase(s, tc);
	tc = tcase_create("short hold");
	tcase_add_checked_fixture(tc, short_hold_setup, p2p_peer_teardown);
	tcase_add_test(tc,
		       higher_end_wait_times_out_then_the_next_attempt_pairs);
	tcase_add_test(tc, unanswered_reqs_in_a_mesh_wait_longer);
	tcase_add_test(tc, connect_error_on_the_reply_is_the_connect_end);
	tcase_set_timeout(tc, 30); /* its bounds are seconds long */
	suite_add_tcase(s, tc);
	tc = tcase_create("one second hold");
	tcase_add_checked_fixture(tc, second_hold_setup, p2p_peer_teardown);
	tcase_add_test(tc,
		       peer_that_never_listens_fails_the_connect_at_the_bound);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	tc = tcase_create("caps");
	tcase_add_checked_fixture(tc, capped_setup, p2p_peer_teardown);
	tcase_add_test(tc, held_requests_are_capped_oldest_first);
	suite_add_tcase(s, tc);
	return s;
}
