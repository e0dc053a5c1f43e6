// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Ending a stream connection (src/rsocket/shutdown.c) on the fake kernel
 * and device, with sends that never complete (BUGS.md
 * rclose-unbounded-wait): rclose and rshutdown wait for their DISCONNECT at
 * most the SO_LINGER time, and not at all with a zero linger.
 */
#include <config.h>

#include <sys/socket.h>

#include "rsocket/rs.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"
#include "rs_call.h"

/*
 * A connected stream socket whose sends never complete (BUGS.md
 * rclose-unbounded-wait: on
 * one rxe device a send whose ACK is lost is neither retried nor failed):
 * the fake CQs never hold a completion.  It has a QP, so the close posts
 * its DISCONNECT and then waits for it.
 */
static int stuck_stream(struct ibv_pd **pd)
{
	int s = connected_stream();
	struct rsocket *rs = rs_get(s);
	struct ibv_qp_init_attr attr = {.qp_type = IBV_QPT_RC};

	ck_assert_ptr_nonnull(rs);
	*pd = ibv_alloc_pd(verbs);
	ck_assert_ptr_nonnull(*pd);
	attr.send_cq = attr.recv_cq = rs->cq;
	rs->cm_id->qp = ibv_create_qp(*pd, &attr);
	ck_assert_ptr_nonnull(rs->cm_id->qp);
	rs->sent = calloc(rs->sq_size, sizeof(*rs->sent));
	ck_assert_ptr_nonnull(rs->sent);
	rs->await_peer = false; /* the peer spoke: the close tells it */
	rs_put(rs);
	return s;
}

static void set_linger(int s, int on, int secs)
{
	struct linger l = {.l_onoff = on, .l_linger = secs}, got;
	socklen_t len = sizeof(got);

	ck_assert_int_eq(rsetsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof(l)),
			 0);
	ck_assert_int_eq(rgetsockopt(s, SOL_SOCKET, SO_LINGER, &got, &len), 0);
	ck_assert_int_eq(got.l_onoff, on);
	ck_assert_int_eq(got.l_linger, on ? secs : 0);
}

/*
 * After the close: its messages went out (the first credits, then the
 * DISCONNECT), the connection was torn down, everything was freed.
 */
static void assert_torn_down(struct ibv_pd *pd, int posted)
{
	ck_assert_int_eq(posted, 2);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_DISCONNECT), 1);
	ck_assert_int_eq(fake_verbs_counts().qps, 0);
	ck_assert_int_eq(fake_verbs_counts().cqs, 0);
	ck_assert_int_eq(ibv_dealloc_pd(pd), 0);
}

/*
 * rclose waits for its DISCONNECT to complete, but at most the SO_LINGER
 * time: before the bound, this close never returned (Check's timeout).
 */
START_TEST(rclose_bounds_its_wait_for_sends_that_never_complete)
{
	struct ibv_pd *pd;
	int s = stuck_stream(&pd);
	struct rsocket *rs = rs_get(s);
	int posted;

	set_linger(s, 1, 1);
	ck_assert_int_eq(rclose(s), 0);
	posted = fake_qp_of(rs->cm_id->qp)->posted_sends;
	rs_put(rs); /* ours was the last reference: the QP goes now */
	assert_torn_down(pd, posted);
}
END_TEST

/* SO_LINGER on with 0 s: the close does not wait at all (TCP's abort). */
START_TEST(rclose_with_zero_linger_does_not_wait)
{
	struct ibv_pd *pd;
	int s = stuck_stream(&pd);
	struct rsocket *rs = rs_get(s);
	int posted;

	set_linger(s, 1, 0);
	ck_assert_int_eq(rclose(s), 0);
	posted = fake_qp_of(rs->cm_id->qp)->posted_sends;
	rs_put(rs);
	assert_torn_down(pd, posted);
}
END_TEST

/* rshutdown is bounded the same way and leaves the socket to rclose. */
START_TEST(rshutdown_bounds_its_wait_too)
{
	struct ibv_pd *pd;
	int s = stuck_stream(&pd);
	int posted;
	struct rsocket *rs = rs_get(s);

	set_linger(s, 1, 0);
	ck_assert_int_eq(rshutdown(s, SHUT_WR), 0);
	posted = fake_qp_of(rs->cm_id->qp)->posted_sends;
	rs_put(rs);
	ck_assert_int_eq(rclose(s), 0);
	assert_torn_down(pd, posted);
}
END_TEST

Suite *rsocket_shutdown_suite(void)
{
	Suite *s = suite_create("rsocket_shutdown");
	TCase *tc = tcase_create("linger");

	tcase_add_checked_fixture(tc, rs_call_setup, rs_call_teardown);
	tcase_add_test(tc,
		       rclose_bounds_its_wait_for_sends_that_never_complete);
	tcase_add_test(tc, rclose_with_zero_linger_does_not_wait);
	tcase_add_test(tc, rshutdown_bounds_its_wait_too);
	suite_add_tcase(s, tc);
	return s;
}
