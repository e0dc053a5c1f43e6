// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The ACM resolver's PathRecord query (src/acm/acm_sa.c) against the fake
 * libibumad's subnet administrator (fake_umad): the query goes to the
 * port's SM with the SA's Q_Key through an agent of the SA class, and
 * comes back as the path with the flags of a bidirectional primary path;
 * an SA that is silent (ETIMEDOUT), says no (ENODATA), or a port the
 * process may not open (EACCES), no umad device (ENODEV) or a failed send
 * (EIO) each give a clean failure, and the port and agent are always
 * given back.  A port that is not InfiniBand or has no SM is not asked.
 * (The MAD's layout and the answer's checks are acm_test's.)
 */
#include <config.h>

#include <check.h>
#include <errno.h>
#include <string.h>
#include <infiniband/umad_sa.h>

#include "acm/acm.h"
#include "fake_umad.h"
#include "unit.h"

#define SA_QKEY 0x80010000
#define MAD_TID 8

static struct cma_acm_port port;
static union ibv_gid dgid;
static uint16_t answer_status; /* the SA's MAD status, host order */

/* The SA: the path asked for, with answer_status. */
static size_t sa_answers(const uint8_t *req, uint8_t *resp)
{
	return fake_umad_path_reply(req, resp, answer_status);
}

static void setup(void)
{
	fake_umad_install(sa_answers);
	answer_status = 0;
	memset(&port, 0, sizeof(port));
	strcpy(port.dev_name, "fake0");
	port.port_num = 1;
	port.link_layer = IBV_LINK_LAYER_INFINIBAND;
	port.lid = 3;
	port.sm_lid = 1;
	port.sm_sl = 2;
	port.pkey = 0xffff;
	port.gid.raw[0] = 0xfe;
	port.gid.raw[1] = 0x80;
	port.gid.raw[15] = 1;
	dgid = port.gid;
	dgid.raw[15] = 2;
}

/* Every port and agent opened was given back. */
static void teardown(void)
{
	struct fake_umad_state s = fake_umad_state();

	ck_assert_int_eq(s.opens, s.closes);
	ck_assert_int_eq(s.registers, s.unregisters);
}

START_TEST(the_sa_answers_with_the_path)
{
	struct ibv_path_data out;
	struct fake_umad_state s;

	ck_assert_int_eq(cma_acm_sa_query(&port, &dgid, &out), 0);
	ck_assert_uint_eq(out.flags, IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY |
					     IBV_PATH_FLAG_BIDIRECTIONAL);
	ck_assert_mem_eq(out.path.sgid.raw, port.gid.raw, 16);
	ck_assert_mem_eq(out.path.dgid.raw, dgid.raw, 16);
	ck_assert_uint_eq(be16toh(out.path.dlid), 5);
	s = fake_umad_state();
	ck_assert_int_eq(s.sends, 1);
	ck_assert_int_eq(s.mgmt_class, UMAD_CLASS_SUBN_ADM);
	ck_assert_int_eq(s.class_version, UMAD_SA_CLASS_VERSION);
	ck_assert_int_eq(s.rmpp, 0);
	/* To the SM, on its SL, with the SA's Q_Key, from QP1. */
	ck_assert_int_eq(s.dlid, 1);
	ck_assert_int_eq(s.dqp, 1);
	ck_assert_int_eq(s.sl, 2);
	ck_assert_uint_eq(s.qkey, SA_QKEY);
	/* Each query has its own transaction id. */
	ck_assert_int_eq(cma_acm_sa_query(&port, &dgid, &out), 0);
	ck_assert_int_eq(fake_umad_state().sends, 2);
	ck_assert_mem_ne(fake_umad_state().last_mad + MAD_TID,
			 s.last_mad + MAD_TID, 8);
}
END_TEST

START_TEST(silence_and_refusals_are_clean_failures)
{
	struct ibv_path_data out;

	answer_status = 0x000c; /* no such record */
	errno = 0;
	ck_assert_int_eq(cma_acm_sa_query(&port, &dgid, &out), -1);
	ck_assert_int_eq(errno, ENODATA);
	fake_umad_install(NULL); /* an SA that never answers */
	errno = 0;
	ck_assert_int_eq(cma_acm_sa_query(&port, &dgid, &out), -1);
	ck_assert_int_eq(errno, ETIMEDOUT);
}
END_TEST

START_TEST(device_failures_are_clean_failures)
{
	struct ibv_path_data out;

	fake_umad_fail(FAKE_UMAD_FAIL_INIT);
	errno = 0;
	ck_assert_int_eq(cma_acm_sa_query(&port, &dgid, &out), -1);
	ck_assert_int_eq(errno, ENODEV);
	fake_umad_fail(FAKE_UMAD_FAIL_OPEN);
	ck_assert_int_eq(cma_acm_sa_query(&port, &dgid, &out), -1);
	ck_assert_int_eq(errno, EACCES);
	fake_umad_fail(FAKE_UMAD_FAIL_REGISTER);
	ck_assert_int_eq(cma_acm_sa_query(&port, &dgid, &out), -1);
	ck_assert_int_eq(errno, EACCES);
	fake_umad_fail(FAKE_UMAD_FAIL_SEND);
	ck_assert_int_eq(cma_acm_sa_query(&port, &dgid, &out), -1);
	ck_assert_int_eq(errno, EIO);
	ck_assert_int_eq(fake_umad_state().sends, 0);
}
END_TEST

START_TEST(only_infiniband_ports_with_an_sm_are_asked)
{
	struct ibv_path_data out;

	port.link_layer = IBV_LINK_LAYER_ETHERNET;
	errno = 0;
	ck_assert_int_eq(cma_acm_sa_query(&port, &dgid, &out), -1);
	ck_assert_int_eq(errno, ENODATA);
	port.link_layer = IBV_LINK_LAYER_INFINIBAND;
	port.sm_lid = 0;
	ck_assert_int_eq(cma_acm_sa_query(&port, &dgid, &out), -1);
	ck_assert_int_eq(errno, ENODATA);
	ck_assert_int_eq(fake_umad_state().opens, 0);
}
END_TEST

Suite *acm_sa_suite(void)
{
	Suite *s = suite_create("acm_sa");
	TCase *t = tcase_create("query");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, the_sa_answers_with_the_path);
	tcase_add_test(t, silence_and_refusals_are_clean_failures);
	tcase_add_test(t, device_failures_are_clean_failures);
	tcase_add_test(t, only_infiniband_ports_with_an_sm_are_asked);
	suite_add_tcase(s, t);
	return s;
}
