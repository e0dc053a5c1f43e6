// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rdma_sendto's address-handle cache (src/mcast/sendto.c), as rdma_sendto(3)
 * states it: the AH of a destination is created on first use on the QP's
 * PD and reused; it is freed when the group is left, when the QP is
 * destroyed and when the id is destroyed; each request gets the group's
 * (or SIDR peer's) AH, QPN and Q_Key.  Checks that refuse bad input
 * before any lookup are in mcast_opt_test (sendto_errors).
 */
#include <config.h>

#include <check.h>
#include <errno.h>
#include <string.h>

#include "cm/cma.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"

static struct rdma_event_channel *ch;
static struct rdma_cm_id *id;
static struct sockaddr_in group, peer;
static struct ibv_send_wr wr;

static void setup(void)
{
	ch = unit_fakes_open(true);
	peer = unit_ipv4("192.0.2.2", 4791);
	id = unit_ud_id(ch, peer);
	group = unit_ipv4("239.1.2.3", 0);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.wr_id = 7;
}

static void teardown(void)
{
	unit_ud_id_destroy(id);
	ck_assert_int_eq(fake_verbs_counts().ahs, 0);
	unit_fakes_close(ch);
}

static void join(void)
{
	ck_assert_int_eq(
		rdma_join_multicast(id, (struct sockaddr *)&group, NULL), 0);
	unit_set_ud(fake_ucma_mc_event(fake_ucma_last_mc(),
				       RDMA_CM_EVENT_MULTICAST_JOIN, 0),
		    0xffffff, 0x11111111);
	rdma_ack_cm_event(unit_expect_event(ch, RDMA_CM_EVENT_MULTICAST_JOIN));
}

static const struct fake_send *last_send(void)
{
	return &fake_qp_of(id->qp)->last_send;
}

static int send_to(void *to)
{
	return rdma_sendto(id, &wr, (struct sockaddr *)to);
}

START_TEST(one_ah_per_group_reused_until_left)
{
	struct ibv_ah *ah;

	join();
	ck_assert_int_eq(fake_verbs_counts().ahs, 0); /* not before use */
	ck_assert_int_eq(send_to(&group), 0);
	ck_assert_int_eq(fake_verbs_counts().ahs, 1);
	ah = last_send()->ah;
	ck_assert_ptr_nonnull(ah);
	ck_assert_ptr_eq(ah->pd, id->qp->pd);
	ck_assert_uint_eq(last_send()->remote_qpn, 0xffffff);
	ck_assert_uint_eq(last_send()->remote_qkey, 0x11111111);
	ck_assert_uint_eq(last_send()->wr_id, 7);

	/* Hit: same AH, none created; the port of @to does not matter. */
	group.sin_port = htons(99);
	ck_assert_int_eq(send_to(&group), 0);
	ck_assert_ptr_eq(last_send()->ah, ah);
	ck_assert_int_eq(fake_verbs_counts().ahs, 1);
	ck_assert_int_eq(fake_qp_of(id->qp)->posted_sends, 2);

	/* Left (by the address joined, as rdma-core compares it whole): the
	 * AH goes with the group, the address is unknown again.
	 */
	group.sin_port = 0;
	ck_assert_int_eq(rdma_leave_multicast(id, (struct sockaddr *)&group),
			 0);
	ck_assert_int_eq(fake_verbs_counts().ahs, 0);
	ck_assert_int_eq(send_to(&group), -1);
	ck_assert_int_eq(errno, EADDRNOTAVAIL);

	/* Joined again: a miss, a new AH. */
	join();
	ck_assert_int_eq(send_to(&group), 0);
	ck_assert_int_eq(fake_verbs_counts().ahs, 1);
}
END_TEST

/* Every request of a list gets the destination. */
START_TEST(each_request_of_a_list_is_addressed)
{
	struct ibv_send_wr second = {.opcode = IBV_WR_SEND_WITH_IMM,
				     .wr_id = 8};

	join();
	wr.next = &second;
	ck_assert_int_eq(send_to(&group), 0);
	ck_assert_int_eq(fake_qp_of(id->qp)->posted_sends, 2);
	ck_assert_ptr_nonnull(wr.wr.ud.ah);
	ck_assert_ptr_eq(second.wr.ud.ah, wr.wr.ud.ah);
	ck_assert_uint_eq(second.wr.ud.remote_qpn, 0xffffff);
	ck_assert_uint_eq(second.wr.ud.remote_qkey, 0x11111111);
}
END_TEST

/* Before the join's event, and after MULTICAST_ERROR. */
START_TEST(group_not_ready_or_failed)
{
	ck_assert_int_eq(
		rdma_join_multicast(id, (struct sockaddr *)&group, NULL), 0);
	ck_assert_int_eq(send_to(&group), -1);
	ck_assert_int_eq(errno, EAGAIN);
	fake_ucma_mc_event(fake_ucma_last_mc(), RDMA_CM_EVENT_MULTICAST_ERROR,
			   -ETIMEDOUT);
	rdma_ack_cm_event(unit_expect_event(ch, RDMA_CM_EVENT_MULTICAST_ERROR));
	ck_assert_int_eq(send_to(&group), -1);
	ck_assert_int_eq(errno, ENOTCONN);
	ck_assert_int_eq(fake_qp_of(id->qp)->posted_sends, 0);
	ck_assert_int_eq(fake_verbs_counts().ahs, 0);
}
END_TEST

/* An AF_IB address holding the group's MGID names it too. */
START_TEST(the_mgid_names_the_group)
{
	struct sockaddr_ib sib = {.sib_family = AF_IB};
	struct ibv_ah *ah;

	join();
	ck_assert_int_eq(send_to(&group), 0);
	ah = last_send()->ah;
	sib.sib_addr.sib_raw[0] = 0xff;
	sib.sib_addr.sib_raw[15] = 0x03;
	ck_assert_int_eq(send_to(&sib), 0);
	ck_assert_ptr_eq(last_send()->ah, ah);
	sib.sib_addr.sib_raw[15] = 0x04; /* another group */
	ck_assert_int_eq(send_to(&sib), -1);
	ck_assert_int_eq(errno, EADDRNOTAVAIL);
}
END_TEST

/* rdma_destroy_qp frees the cached AHs; a new QP starts afresh. */
START_TEST(destroying_the_qp_frees_the_cache)
{
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_UD);

	join();
	ck_assert_int_eq(send_to(&group), 0);
	ck_assert_int_eq(fake_verbs_counts().ahs, 1);
	rdma_destroy_qp(id);
	ck_assert_int_eq(fake_verbs_counts().ahs, 0);
	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), 0);
	ck_assert_int_eq(send_to(&group), 0);
	ck_assert_int_eq(fake_verbs_counts().ahs, 1);
}
END_TEST

/* rdma_destroy_id (QP destroyed first, as required) leaves no AH. */
START_TEST(destroying_the_id_frees_the_cache)
{
	join();
	ck_assert_int_eq(send_to(&group), 0);
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	id = NULL;
}
END_TEST

/* The unicast peer of a SIDR exchange, by address (and port if given). */
START_TEST(the_sidr_peer_is_a_destination)
{
	struct rdma_conn_param param = {0};
	struct sockaddr_in other_port = peer, no_port = peer;
	struct sockaddr_in stranger = unit_ipv4("192.0.2.9", 4791);

	ck_assert_int_eq(send_to(&peer), -1); /* no peer before SIDR */
	ck_assert_int_eq(errno, EHOSTUNREACH);
	ck_assert_int_eq(rdma_connect(id, &param), 0);
	unit_set_ud(fake_ucma_event(fake_ucma_kid_of(id)->handle,
				    RDMA_CM_EVENT_ESTABLISHED, 0),
		    0x4242, 0x22222222);
	rdma_ack_cm_event(unit_expect_event(ch, RDMA_CM_EVENT_ESTABLISHED));

	ck_assert_int_eq(send_to(&peer), 0);
	ck_assert_uint_eq(last_send()->remote_qpn, 0x4242);
	ck_assert_uint_eq(last_send()->remote_qkey, 0x22222222);
	no_port.sin_port = 0;
	ck_assert_int_eq(send_to(&no_port), 0);
	ck_assert_int_eq(fake_verbs_counts().ahs, 1);
	other_port.sin_port = htons(1);
	ck_assert_int_eq(send_to(&other_port), -1);
	ck_assert_int_eq(errno, EHOSTUNREACH);
	ck_assert_int_eq(send_to(&stranger), -1);
	ck_assert_int_eq(errno, EHOSTUNREACH);
}
END_TEST

/* A failing ibv_post_send is passed on. */
START_TEST(post_errors_are_passed_on)
{
	join();
	fake_verbs_fail_post(ENOMEM);
	ck_assert_int_eq(send_to(&group), -1);
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_int_eq(send_to(&group), 0);
}
END_TEST

Suite *sendto_suite(void)
{
	Suite *s = suite_create("sendto");
	TCase *tc = tcase_create("ah_cache");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, one_ah_per_group_reused_until_left);
	tcase_add_test(tc, each_request_of_a_list_is_addressed);
	tcase_add_test(tc, group_not_ready_or_failed);
	tcase_add_test(tc, the_mgid_names_the_group);
	tcase_add_test(tc, destroying_the_qp_frees_the_cache);
	tcase_add_test(tc, destroying_the_id_frees_the_cache);
	tcase_add_test(tc, the_sidr_peer_is_a_destination);
	tcase_add_test(tc, post_errors_are_passed_on);
	suite_add_tcase(s, tc);
	return s;
}
