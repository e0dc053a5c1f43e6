// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for the multicast options (src/mcast/mcast_opt.c): the errno
 * of every bad call to rdma_set_option / rdma_get_option / rdma_sendto on
 * ids that never reach a kernel (a fake device answers the few commands
 * that get through), including the datagram calls an iWARP device
 * refuses; then memberships joined, refused, read back and dropped
 * through the options on an id bound to the fake device.  The option
 * values and records themselves are mcast_mreq_test.c's.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "cm/cma.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "ib_req.h"
#include "option_ids.h"
#include "unit.h"

/* --- helpers ---------------------------------------------------------- */

#define ASSERT_ERR(call, err)                                                  \
	do {                                                                   \
		errno = 0;                                                     \
		ck_assert_int_eq((call), -1);                                  \
		ck_assert_int_eq(errno, (err));                                \
	} while (0)

/* --- calls on ids with no kernel behind them --------------------------- */

static struct ibv_qp fake_qp;

/* The option suites' ids, and a QP a test may hang on them. */
static void ids_setup(void)
{
	option_ids_setup();
	memset(&fake_qp, 0, sizeof(fake_qp));
}

static void ids_teardown(void)
{
	ud_id->id.qp = NULL;
	rc_id->id.qp = NULL;
	option_ids_teardown();
}

START_TEST(set_option_errors)
{
	struct rdma_cm_id *id = &ud_id->id;
	struct ip_mreq m = {.imr_multiaddr.s_addr = htonl(0xeffe0001)};
	struct ib_mreq im = ib_req(0);

	ASSERT_ERR(rdma_set_option(NULL, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, &m,
				   sizeof(m)),
		   EINVAL);
	ASSERT_ERR(rdma_set_option(id, 77, IP_ADD_MEMBERSHIP, &m, sizeof(m)),
		   ENOPROTOOPT);
	ASSERT_ERR(rdma_set_option(id, RDMA_OPTION_IP, 12345, &m, sizeof(m)),
		   ENOPROTOOPT);
	ASSERT_ERR(
		rdma_set_option(id, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, &m, 3),
		EINVAL);
	ASSERT_ERR(rdma_set_option(id, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, NULL,
				   sizeof(m)),
		   EFAULT);
	ASSERT_ERR(rdma_set_option(id, RDMA_OPTION_IB_MCAST, IB_MCMEMBER_RECORD,
				   &im, sizeof(im)),
		   ENOPROTOOPT); /* read-only */
	/* not bound to a device yet */
	ASSERT_ERR(rdma_set_option(id, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, &m,
				   sizeof(m)),
		   EINVAL);
	/* nothing joined: nothing to drop */
	ASSERT_ERR(rdma_set_option(id, RDMA_OPTION_IP, IP_DROP_MEMBERSHIP, &m,
				   sizeof(m)),
		   EADDRNOTAVAIL);
	ASSERT_ERR(rdma_set_option(id, RDMA_OPTION_IB_MCAST, IB_DROP_MEMBERSHIP,
				   &im, sizeof(im)),
		   EADDRNOTAVAIL);
	/* connected ids have no multicast */
	ASSERT_ERR(rdma_set_option(&rc_id->id, RDMA_OPTION_IP,
				   IP_ADD_MEMBERSHIP, &m, sizeof(m)),
		   EPROTOTYPE);
}
END_TEST

START_TEST(get_option_errors)
{
	struct rdma_cm_id *id = &ud_id->id;
	struct rdma_mcast_record q = {0};
	ib_sa_comp_mask mask = 1;
	uint8_t b;

	q.group.ss_family = AF_INET;
	ASSERT_ERR(rdma_get_option(NULL, RDMA_OPTION_IB_MCAST,
				   IB_MCMEMBER_RECORD, &q, sizeof(q)),
		   EINVAL);
	ASSERT_ERR(rdma_get_option(id, 99, 1, &q, sizeof(q)), ENOPROTOOPT);
	ASSERT_ERR(rdma_get_option(id, RDMA_OPTION_IB_MCAST, 99, &q, sizeof(q)),
		   ENOPROTOOPT);
	ASSERT_ERR(rdma_get_option(id, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, &q,
				   sizeof(q)),
		   ENOPROTOOPT); /* write-only */
	ASSERT_ERR(rdma_get_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, &q,
				   sizeof(q)),
		   ENOPROTOOPT);
	ASSERT_ERR(rdma_get_option(id, RDMA_OPTION_IB_MCAST, IB_MCMEMBER_RECORD,
				   &q, sizeof(q) - 1),
		   EINVAL);
	ASSERT_ERR(rdma_get_option(id, RDMA_OPTION_IB_MCAST, IB_MCMEMBER_RECORD,
				   NULL, sizeof(q)),
		   EFAULT);
	ASSERT_ERR(rdma_get_option(id, RDMA_OPTION_IB_MCAST, IB_MCMEMBER_RECORD,
				   &q, sizeof(q)),
		   EADDRNOTAVAIL);
	ASSERT_ERR(
		rdma_get_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &b, 2),
		EINVAL);
	ck_assert_int_eq(rdma_get_option(id, RDMA_OPTION_IB_MCAST,
					 IB_MCMEMBER_MISMATCH, &mask,
					 sizeof(mask)),
			 0);
	ck_assert_uint_eq(mask, 0);
}
END_TEST

START_TEST(sendto_errors)
{
	struct ibv_send_wr wr = {.opcode = IBV_WR_SEND};
	struct sockaddr_in group = {.sin_family = AF_INET,
				    .sin_addr.s_addr = htonl(0xeffe0001)};
	struct sockaddr_in peer = {.sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(0xc0000202)};
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	struct rdma_cm_id *id = &ud_id->id;

	ASSERT_ERR(rdma_sendto(NULL, &wr, (struct sockaddr *)&group), EINVAL);
	ASSERT_ERR(rdma_sendto(id, &wr, (struct sockaddr *)&group),
		   EINVAL); /* no QP */
	fake_qp.qp_type = IBV_QPT_RC;
	rc_id->id.qp = &fake_qp;
	ASSERT_ERR(rdma_sendto(&rc_id->id, &wr, (struct sockaddr *)&group),
		   EPROTOTYPE);
	fake_qp.qp_type = IBV_QPT_UD;
	id->qp = &fake_qp;
	ASSERT_ERR(rdma_sendto(id, NULL, (struct sockaddr *)&group), EINVAL);
	ASSERT_ERR(rdma_sendto(id, &wr, NULL), EINVAL);
	ASSERT_ERR(rdma_sendto(id, &wr, (struct sockaddr *)&un), EAFNOSUPPORT);
	ASSERT_ERR(rdma_sendto(id, &wr, (struct sockaddr *)&group),
		   EADDRNOTAVAIL);
	ASSERT_ERR(rdma_sendto(id, &wr, (struct sockaddr *)&peer),
		   EHOSTUNREACH);
	wr.opcode = IBV_WR_RDMA_READ;
	ASSERT_ERR(rdma_sendto(id, &wr, (struct sockaddr *)&peer), EINVAL);
}
END_TEST

/*
 * An id on an iWARP device: every datagram and multicast call is refused
 * with EOPNOTSUPP before anything reaches the kernel or the provider.
 */
START_TEST(iwarp_refuses_datagrams)
{
	struct cma_device dev = {.is_iwarp = true};
	struct ibv_context *ctx = (struct ibv_context *)&dev; /* never used */
	struct ibv_send_wr wr = {.opcode = IBV_WR_SEND};
	struct sockaddr_in group = {.sin_family = AF_INET,
				    .sin_addr.s_addr = htonl(0xeffe0001)};
	struct ip_mreq m = {.imr_multiaddr.s_addr = htonl(0xeffe0001)};
	struct ibv_qp_init_attr qpa = {.qp_type = IBV_QPT_UD};
	struct rdma_conn_param cp = {0};
	struct rdma_cm_id *id = &ud_id->id, *rc = &rc_id->id;

	ud_id->cma_dev = rc_id->cma_dev = &dev;
	id->verbs = rc->verbs = ctx;
	ASSERT_ERR(rdma_create_qp(id, NULL, &qpa), EOPNOTSUPP);
	ASSERT_ERR(rdma_create_qp(rc, NULL, &qpa), EOPNOTSUPP);
	ASSERT_ERR(rdma_connect(id, &cp), EOPNOTSUPP);
	ASSERT_ERR(rdma_listen(id, 1), EOPNOTSUPP);
	ASSERT_ERR(rdma_accept(id, &cp), EOPNOTSUPP);
	ASSERT_ERR(rdma_join_multicast(id, (struct sockaddr *)&group, NULL),
		   EOPNOTSUPP);
	ASSERT_ERR(rdma_join_multicast(rc, (struct sockaddr *)&group, NULL),
		   EOPNOTSUPP);
	ASSERT_ERR(rdma_set_option(id, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, &m,
				   sizeof(m)),
		   EOPNOTSUPP);
	ASSERT_ERR(rdma_set_option(rc, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, &m,
				   sizeof(m)),
		   EOPNOTSUPP);
	/* A bad option value is still EINVAL, as on other transports. */
	ASSERT_ERR(
		rdma_set_option(id, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, &m, 3),
		EINVAL);
	fake_qp.qp_type = IBV_QPT_UD;
	id->qp = &fake_qp;
	ASSERT_ERR(rdma_sendto(id, &wr, (struct sockaddr *)&group), EOPNOTSUPP);
	ASSERT_ERR(rdma_sendto(rc, &wr, (struct sockaddr *)&group), EOPNOTSUPP);
	ASSERT_ERR(rdma_sendto(NULL, &wr, (struct sockaddr *)&group), EINVAL);
	ud_id->cma_dev = rc_id->cma_dev = NULL;
	id->verbs = rc->verbs = NULL;
}
END_TEST

START_TEST(option_table_checks)
{
	struct ib_mreq im = ib_req(0);

	ck_assert_int_eq(cma_check_option(RDMA_OPTION_IB_MCAST,
					  IB_ADD_MEMBERSHIP, &im, sizeof(im)),
			 0);
	im.comp_mask = 0;
	ASSERT_ERR(cma_check_option(RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP,
				    &im, sizeof(im)),
		   EINVAL);
	ASSERT_ERR(cma_check_option(RDMA_OPTION_IB_MCAST, IB_MCMEMBER_MISMATCH,
				    &im, 8),
		   ENOPROTOOPT);
}
END_TEST

/* --- joining and leaving through the options ---------------------------- */

static struct rdma_event_channel *jch;
static struct rdma_cm_id *jid;

/* A UD id bound to 192.0.2.1 on the fake device, with its QP. */
static void bound_setup(bool roce)
{
	struct sockaddr_in src = unit_ipv4("192.0.2.1", 0);
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_UD);

	jch = unit_fakes_open(roce);
	ck_assert_int_eq(rdma_create_id(jch, &jid, NULL, RDMA_PS_UDP), 0);
	ck_assert_int_eq(rdma_bind_addr(jid, (struct sockaddr *)&src), 0);
	ck_assert_ptr_nonnull(jid->verbs);
	ck_assert_int_eq(rdma_create_qp(jid, NULL, &attr), 0);
}

static void roce_setup(void)
{
	bound_setup(true);
}

static void ib_setup(void)
{
	bound_setup(false);
}

static void bound_teardown(void)
{
	unit_ud_id_destroy(jid);
	ck_assert_int_eq(fake_verbs_counts().mcast_attached, 0);
	unit_fakes_close(jch);
}

/* The kernel answers the last join with the group @mgid (or fails it). */
static void join_answered(const union ibv_gid *mgid, bool ok)
{
	struct rdma_ucm_event_resp *r;

	r = fake_ucma_mc_event(fake_ucma_last_mc(),
			       ok ? RDMA_CM_EVENT_MULTICAST_JOIN
				  : RDMA_CM_EVENT_MULTICAST_ERROR,
			       ok ? 0 : -ENETUNREACH);
	unit_set_ud(r, 0xffffff, 0x01234567);
	memcpy(r->param.ud.ah_attr.grh.dgid, mgid->raw, 16);
	rdma_ack_cm_event(
		unit_expect_event(jch, ok ? RDMA_CM_EVENT_MULTICAST_JOIN
					  : RDMA_CM_EVENT_MULTICAST_ERROR));
}

static int record_of(int family, const void *addr, const union ibv_gid *mgid,
		     struct rdma_mcast_record *q)
{
	memset(q, 0, sizeof(*q));
	q->group.ss_family = (sa_family_t)family;
	if (family == AF_INET)
		memcpy(&((struct sockaddr_in *)&q->group)->sin_addr, addr, 4);
	if (mgid)
		q->rec.mgid = *mgid;
	errno = 0;
	return rdma_get_option(jid, RDMA_OPTION_IB_MCAST, IB_MCMEMBER_RECORD, q,
			       sizeof(*q));
}

/* The RoCE v2 MGID of an IPv4 group: ::ffff:a.b.c.d. */
static union ibv_gid roce_mgid(in_addr_t group)
{
	union ibv_gid g;

	memset(&g, 0, sizeof(g));
	g.raw[10] = g.raw[11] = 0xff;
	memcpy(&g.raw[12], &group, 4);
	return g;
}

/* IP_ADD_MEMBERSHIP or IP_DROP_MEMBERSHIP of @m, which must be taken. */
static void ip_membership(int optname, struct ip_mreq *m)
{
	ck_assert_int_eq(
		rdma_set_option(jid, RDMA_OPTION_IP, optname, m, sizeof(*m)),
		0);
}

START_TEST(ip_membership_joins_and_drops)
{
	struct ip_mreq m = {.imr_multiaddr.s_addr = htonl(0xef010203)};
	union ibv_gid mgid = roce_mgid(m.imr_multiaddr.s_addr);
	struct rdma_mcast_record q;

	ip_membership(IP_ADD_MEMBERSHIP, &m);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_JOIN_MCAST), 1);
	/* Until the kernel answers, the record is not there yet. */
	ck_assert_int_eq(record_of(AF_INET, &m.imr_multiaddr, NULL, &q), -1);
	ck_assert_int_eq(errno, EAGAIN);
	/* A second membership of the same group is refused, as by IP. */
	ASSERT_ERR(rdma_set_option(jid, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, &m,
				   sizeof(m)),
		   EADDRINUSE);
	join_answered(&mgid, true);
	ck_assert_int_eq(fake_verbs_counts().mcast_attached, 1);
	ck_assert_int_eq(record_of(AF_INET, &m.imr_multiaddr, NULL, &q), 0);
	ck_assert_mem_eq(q.rec.mgid.raw, mgid.raw, 16);
	ck_assert_uint_eq(q.rec.qkey, 0x01234567);
	/* The MGID names the group too. */
	ck_assert_int_eq(record_of(AF_UNSPEC, NULL, &mgid, &q), 0);
	ip_membership(IP_DROP_MEMBERSHIP, &m);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_LEAVE_MCAST), 1);
	ck_assert_int_eq(fake_verbs_counts().mcast_attached, 0);
	ASSERT_ERR(rdma_set_option(jid, RDMA_OPTION_IP, IP_DROP_MEMBERSHIP, &m,
				   sizeof(m)),
		   EADDRNOTAVAIL);
	ck_assert_int_eq(record_of(AF_INET, &m.imr_multiaddr, NULL, &q), -1);
	ck_assert_int_eq(errno, EADDRNOTAVAIL);
}
END_TEST

/* The id receives on its own device only: another interface is ENODEV. */
START_TEST(the_interface_must_be_the_ids)
{
	struct ip_mreq m = {.imr_multiaddr.s_addr = htonl(0xef010203)};
	struct ip_mreqn mn = {.imr_multiaddr.s_addr = htonl(0xef010204),
			      .imr_ifindex = 4242};

	m.imr_interface.s_addr = htonl(0xc0000209);
	ASSERT_ERR(rdma_set_option(jid, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, &m,
				   sizeof(m)),
		   ENODEV);
	ASSERT_ERR(rdma_set_option(jid, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, &mn,
				   sizeof(mn)),
		   ENODEV);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_JOIN_MCAST), 0);
	/* The id's own address is its interface. */
	m.imr_interface.s_addr = htonl(0xc0000201);
	ip_membership(IP_ADD_MEMBERSHIP, &m);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_JOIN_MCAST), 1);
}
END_TEST

/* MULTICAST_ERROR: the group is still the id's to drop, with no record. */
START_TEST(a_failed_join_has_no_record)
{
	struct ip_mreq m = {.imr_multiaddr.s_addr = htonl(0xef010203)};
	union ibv_gid mgid = roce_mgid(m.imr_multiaddr.s_addr);
	struct rdma_mcast_record q;

	ip_membership(IP_ADD_MEMBERSHIP, &m);
	join_answered(&mgid, false);
	ck_assert_int_eq(record_of(AF_INET, &m.imr_multiaddr, NULL, &q), -1);
	ck_assert_int_eq(errno, ENOTCONN);
	ip_membership(IP_DROP_MEMBERSHIP, &m);
}
END_TEST

/*
 * IB_ADD_MEMBERSHIP on InfiniBand: the group is named by its MGID; an MTU
 * in the request cannot be honoured (the kernel keeps it to itself).
 */
START_TEST(ib_membership_by_mgid)
{
	struct ib_mreq im = ib_req(IB_SA_MCMEMBER_REC_MTU);
	struct rdma_mcast_record q;
	struct sockaddr_ib *sib = (struct sockaddr_ib *)&q.group;

	im.rec.mtu = IBV_MTU_2048;
	ASSERT_ERR(rdma_set_option(jid, RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP,
				   &im, sizeof(im)),
		   EOPNOTSUPP);
	im = ib_req(0);
	ck_assert_int_eq(rdma_set_option(jid, RDMA_OPTION_IB_MCAST,
					 IB_ADD_MEMBERSHIP, &im, sizeof(im)),
			 0);
	ASSERT_ERR(rdma_set_option(jid, RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP,
				   &im, sizeof(im)),
		   EADDRINUSE);
	join_answered(&im.rec.mgid, true);
	ck_assert_int_eq(record_of(AF_UNSPEC, NULL, &im.rec.mgid, &q), 0);
	ck_assert_mem_eq(q.rec.mgid.raw, im.rec.mgid.raw, 16);
	/* As an AF_IB address, whichever address joined it. */
	memset(&q, 0, sizeof(q));
	sib->sib_family = AF_IB;
	memcpy(&sib->sib_addr, im.rec.mgid.raw, 16);
	ck_assert_int_eq(rdma_get_option(jid, RDMA_OPTION_IB_MCAST,
					 IB_MCMEMBER_RECORD, &q, sizeof(q)),
			 0);
	ck_assert_int_eq(rdma_set_option(jid, RDMA_OPTION_IB_MCAST,
					 IB_DROP_MEMBERSHIP, &im, sizeof(im)),
			 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_LEAVE_MCAST), 1);
	ASSERT_ERR(rdma_set_option(jid, RDMA_OPTION_IB_MCAST,
				   IB_DROP_MEMBERSHIP, &im, sizeof(im)),
		   EADDRNOTAVAIL);
}
END_TEST

Suite *mcast_opt_suite(void)
{
	Suite *s = suite_create("mcast_opt");
	TCase *t = tcase_create("table");

	tcase_add_test(t, option_table_checks);
	suite_add_tcase(s, t);
	t = tcase_create("calls");
	tcase_add_checked_fixture(t, ids_setup, ids_teardown);
	tcase_add_test(t, set_option_errors);
	tcase_add_test(t, get_option_errors);
	tcase_add_test(t, sendto_errors);
	tcase_add_test(t, iwarp_refuses_datagrams);
	suite_add_tcase(s, t);
	t = tcase_create("joins");
	tcase_add_checked_fixture(t, roce_setup, bound_teardown);
	tcase_add_test(t, ip_membership_joins_and_drops);
	tcase_add_test(t, the_interface_must_be_the_ids);
	tcase_add_test(t, a_failed_join_has_no_record);
	suite_add_tcase(s, t);
	t = tcase_create("ib_joins");
	tcase_add_checked_fixture(t, ib_setup, bound_teardown);
	tcase_add_test(t, ib_membership_by_mgid);
	suite_add_tcase(s, t);
	return s;
}
