// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Multicast joins and leaves (src/mcast/mcast.c) against the fake kernel and
 * the fake device, as rdma_join_multicast(3) and rdma_leave_multicast(3)
 * describe them: the join completes with a MULTICAST_JOIN event carrying
 * the group's UD parameters and the caller's context in private_data; the
 * library attaches the id's QP to the group (unless the join is send-only)
 * and detaches it on leave; a leave of a group not joined fails with
 * EADDRNOTAVAIL; destroying the id leaves what it joined.  The option
 * forms (IP_ADD_MEMBERSHIP and friends) are tested in mcast_opt_test.
 */
#include <config.h>

#include <check.h>
#include <errno.h>
#include <string.h>
#include <sys/un.h>

#include "cm/cma.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"

static struct rdma_event_channel *ch;
static struct rdma_cm_id *id;
static struct sockaddr_in group;

static void setup(void)
{
	ch = unit_fakes_open(true);
	id = unit_ud_id(ch, unit_ipv4("192.0.2.2", 0));
	group = unit_ipv4("239.1.2.3", 0);
}

static void teardown(void)
{
	struct fake_verbs_counts c;

	unit_ud_id_destroy(id);
	c = fake_verbs_counts();
	ck_assert_int_eq(c.mcast_attached, 0);
	ck_assert_int_eq(c.ahs, 0);
	unit_fakes_close(ch);
}

/* The kernel completes the last join; @qpn is what it reports. */
static struct rdma_ucm_event_resp *join_event(uint32_t event, int status)
{
	struct rdma_ucm_event_resp *r;

	r = fake_ucma_mc_event(fake_ucma_last_mc(), event, status);
	unit_set_ud(r, 0xffffff, 0x01234567);
	return r;
}

START_TEST(join_completes_with_the_group_and_attaches_the_qp)
{
	int ctx;
	struct rdma_cm_event *ev;
	const struct fake_cmd *cmd;

	ck_assert_int_eq(
		rdma_join_multicast(id, (struct sockaddr *)&group, &ctx), 0);
	cmd = fake_ucma_last(RDMA_USER_CM_CMD_JOIN_MCAST);
	ck_assert_ptr_nonnull(cmd);
	ck_assert_int_eq(fake_verbs_counts().mcast_attached, 0);
	ck_assert(!unit_readable(ch->fd));

	join_event(RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	ev = unit_expect_event(ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	ck_assert_ptr_eq(ev->id, id);
	ck_assert_ptr_eq(ev->param.ud.private_data, &ctx);
	ck_assert_uint_eq(ev->param.ud.qp_num, 0xffffff);
	ck_assert_uint_eq(ev->param.ud.qkey, 0x01234567);
	ck_assert_uint_eq(ev->param.ud.ah_attr.dlid, 0xc001);
	ck_assert_uint_eq(ev->param.ud.ah_attr.grh.dgid.raw[15], 0x03);
	ck_assert_int_eq(rdma_ack_cm_event(ev), 0);
	ck_assert_int_eq(fake_verbs_counts().mcast_attached, 1);

	ck_assert_int_eq(rdma_leave_multicast(id, (struct sockaddr *)&group),
			 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_LEAVE_MCAST), 1);
	ck_assert_int_eq(fake_verbs_counts().mcast_attached, 0);
	/* Left: a second leave names no group. */
	ck_assert_int_eq(rdma_leave_multicast(id, (struct sockaddr *)&group),
			 -1);
	ck_assert_int_eq(errno, EADDRNOTAVAIL);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_LEAVE_MCAST), 1);
}
END_TEST

/* A send-only full member receives nothing: its QP is not attached. */
START_TEST(send_only_join_does_not_attach)
{
	struct rdma_cm_join_mc_attr_ex attr = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS |
			     RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER,
		.addr = (struct sockaddr *)&group,
	};

	ck_assert_int_eq(rdma_join_multicast_ex(id, &attr, NULL), 0);
	join_event(RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	rdma_ack_cm_event(unit_expect_event(ch, RDMA_CM_EVENT_MULTICAST_JOIN));
	ck_assert_int_eq(fake_verbs_counts().mcast_attached, 0);
	ck_assert_int_eq(rdma_leave_multicast(id, (struct sockaddr *)&group),
			 0);
}
END_TEST

START_TEST(join_ex_checks_its_attributes)
{
	struct rdma_cm_join_mc_attr_ex attr = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS,
		.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = (struct sockaddr *)&group,
	};
	struct sockaddr_un un = {.sun_family = AF_UNIX};

	ck_assert_int_eq(rdma_join_multicast_ex(id, NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	/* Both the address and the flags must be given. */
	ck_assert_int_eq(rdma_join_multicast_ex(id, &attr, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	attr.comp_mask |= RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	attr.join_flags = RDMA_MC_JOIN_FLAG_RESERVED;
	ck_assert_int_eq(rdma_join_multicast_ex(id, &attr, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	attr.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
	attr.comp_mask |= RDMA_CM_JOIN_MC_ATTR_RESERVED;
	ck_assert_int_eq(rdma_join_multicast_ex(id, &attr, NULL), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_int_eq(rdma_join_multicast(NULL, attr.addr, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rdma_join_multicast(id, NULL, NULL), -1);
	ck_assert_int_eq(rdma_join_multicast(id, (struct sockaddr *)&un, NULL),
			 -1);
	ck_assert_int_eq(errno, EAFNOSUPPORT);
	ck_assert_int_eq(rdma_leave_multicast(id, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rdma_leave_multicast(id, (struct sockaddr *)&un), -1);
	ck_assert_int_eq(errno, EAFNOSUPPORT);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_JOIN_MCAST), 0);
}
END_TEST

/* The kernel refuses the join: nothing is left behind to leave. */
START_TEST(a_refused_join_leaves_nothing)
{
	fake_ucma_fail_next(RDMA_USER_CM_CMD_JOIN_MCAST, ENOMEM);
	ck_assert_int_eq(
		rdma_join_multicast(id, (struct sockaddr *)&group, NULL), -1);
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_int_eq(rdma_leave_multicast(id, (struct sockaddr *)&group),
			 -1);
	ck_assert_int_eq(errno, EADDRNOTAVAIL);
}
END_TEST

/* MULTICAST_ERROR reaches the application; the group can still be left. */
START_TEST(a_failed_join_is_reported_and_left)
{
	struct rdma_cm_event *ev;
	int ctx;

	ck_assert_int_eq(
		rdma_join_multicast(id, (struct sockaddr *)&group, &ctx), 0);
	fake_ucma_mc_event(fake_ucma_last_mc(), RDMA_CM_EVENT_MULTICAST_ERROR,
			   -ENETUNREACH);
	ev = unit_expect_event(ch, RDMA_CM_EVENT_MULTICAST_ERROR);
	ck_assert_int_eq(ev->status, -ENETUNREACH);
	ck_assert_ptr_eq(ev->param.ud.private_data, &ctx);
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(fake_verbs_counts().mcast_attached, 0);
	ck_assert_int_eq(rdma_leave_multicast(id, (struct sockaddr *)&group),
			 0);
}
END_TEST

/*
 * A leave before the join's event was read: the kernel drops the event
 * with the group, so nothing about the freed group may surface later.
 */
START_TEST(leave_before_the_join_event_was_read)
{
	ck_assert_int_eq(
		rdma_join_multicast(id, (struct sockaddr *)&group, NULL), 0);
	join_event(RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	ck_assert(unit_readable(ch->fd));
	ck_assert_int_eq(rdma_leave_multicast(id, (struct sockaddr *)&group),
			 0);
	ck_assert(!unit_readable(ch->fd));
	ck_assert_int_eq(fake_verbs_counts().mcast_attached, 0);
}
END_TEST

/* Two groups; destroying the id leaves both and detaches its QP. */
START_TEST(destroy_leaves_every_group)
{
	struct sockaddr_in6 g6 = {.sin6_family = AF_INET6};

	inet_pton(AF_INET6, "ff0e::1:2", &g6.sin6_addr);
	ck_assert_int_eq(
		rdma_join_multicast(id, (struct sockaddr *)&group, NULL), 0);
	join_event(RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	rdma_ack_cm_event(unit_expect_event(ch, RDMA_CM_EVENT_MULTICAST_JOIN));
	ck_assert_int_eq(rdma_join_multicast(id, (struct sockaddr *)&g6, NULL),
			 0);
	join_event(RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	rdma_ack_cm_event(unit_expect_event(ch, RDMA_CM_EVENT_MULTICAST_JOIN));
	ck_assert_int_eq(fake_verbs_counts().mcast_attached, 2);
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	id = NULL;
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_LEAVE_MCAST), 2);
}
END_TEST

Suite *mcast_suite(void)
{
	Suite *s = suite_create("mcast");
	TCase *tc = tcase_create("join_leave");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, join_completes_with_the_group_and_attaches_the_qp);
	tcase_add_test(tc, send_only_join_does_not_attach);
	tcase_add_test(tc, join_ex_checks_its_attributes);
	tcase_add_test(tc, a_refused_join_leaves_nothing);
	tcase_add_test(tc, a_failed_join_is_reported_and_left);
	tcase_add_test(tc, leave_before_the_join_event_was_read);
	tcase_add_test(tc, destroy_leaves_every_group);
	suite_add_tcase(s, tc);
	return s;
}
