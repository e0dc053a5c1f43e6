// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rdma_set_option and rdma_get_option (src/cm/options.c): every call is
 * checked against its (level, name) entry before anything is touched, so
 * a bad call gets a precise errno and the kernel hears nothing; the
 * id-level options the kernel takes are remembered and read back; the
 * read-only and write-only ones refuse the other direction.  Each
 * module's own options are tested with that module (mcast_opt_test.c,
 * p2p_options_test.c).
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"
#include "fake_ucma.h"
#include "option_ids.h"
#include "unit.h"

#define ASSERT_ERR(call, err)                                                  \
	do {                                                                   \
		errno = 0;                                                     \
		ck_assert_int_eq((call), -1);                                  \
		ck_assert_int_eq(errno, (err));                                \
	} while (0)

START_TEST(options_are_validated)
{
	uint8_t u8 = 0;
	int i = 1;
	struct ibv_path_data paths[2];

	ck_assert_int_eq(
		cma_check_option(RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &u8, 1),
		0);
	ck_assert_int_eq(cma_check_option(RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
					  &i, sizeof(i)),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(cma_check_option(RDMA_OPTION_ID,
					  RDMA_OPTION_ID_REUSEADDR, &i,
					  sizeof(i)),
			 0);
	ck_assert_int_eq(
		cma_check_option(RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &u8, 1),
		-1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(cma_check_option(RDMA_OPTION_ID,
					  RDMA_OPTION_ID_ACK_TIMEOUT, &u8, 1),
			 0);
	ck_assert_int_eq(cma_check_option(RDMA_OPTION_ID, 99, &i, sizeof(i)),
			 -1);
	ck_assert_int_eq(errno, ENOPROTOOPT);
	ck_assert_int_eq(cma_check_option(RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
					  paths, sizeof(paths)),
			 0);
	ck_assert_int_eq(cma_check_option(RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
					  paths, sizeof(paths[0]) + 1),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(
		cma_check_option(RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, paths, 0),
		-1);
	ck_assert_int_eq(
		cma_check_option(RDMA_OPTION_IB, 7, paths, sizeof(paths)), -1);
	ck_assert_int_eq(errno, ENOPROTOOPT);
	ck_assert_int_eq(cma_check_option(12345, 0, &i, sizeof(i)), -1);
	ck_assert_int_eq(errno, ENOPROTOOPT);
	ck_assert_int_eq(
		cma_check_option(RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, NULL, 1),
		-1);
	ck_assert_int_eq(errno, EFAULT);
}
END_TEST

/*
 * rdma_set_option refuses every value cma_check_option refuses, with the
 * same errno, and the kernel hears nothing: set() validates what it
 * applies, reading the value once (struct cma_option).
 */
START_TEST(set_refuses_what_check_refuses)
{
	struct ip_mreqn not_a_group = {.imr_multiaddr.s_addr =
					       htonl(0x0a000001)};
	struct ibv_path_data path[2];
	struct {
		int level, optname;
		const void *val;
		size_t len;
	} bad[] = {
		{RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, path,
		 sizeof(path[0]) + 1},
		{RDMA_OPTION_ID, RDMA_OPTION_ID_PEER2PEER, &(int){2},
		 sizeof(int)},
		{RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, &not_a_group,
		 sizeof(not_a_group)},
	};
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	int want;
	size_t i;

	fake_ucma_install();
	ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(ch);
	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), 0);
	memset(path, 0, sizeof(path));
	fake_ucma_clear_log();
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(cma_check_option(bad[i].level, bad[i].optname,
						  bad[i].val, bad[i].len),
				 -1);
		want = errno;
		errno = 0;
		ck_assert_int_eq(
			rdma_set_option(id, bad[i].level, bad[i].optname,
					(void *)bad[i].val, bad[i].len),
			-1);
		ck_assert_int_eq(errno, want);
	}
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_SET_OPTION), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_JOIN_MCAST), 0);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
	fake_ucma_uninstall();
}
END_TEST

START_TEST(get_option_mirrors_set)
{
	struct rdma_cm_id *id = &ud_id->id;
	uint8_t tos = 0x48, out8 = 0;
	int reuse = 1, out = 0;

	ck_assert_int_eq(rdma_get_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
					 &out8, 1),
			 0);
	ck_assert_uint_eq(out8, 0);
	ck_assert_int_eq(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
					 &tos, 1),
			 0);
	ck_assert_int_eq(rdma_get_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
					 &out8, 1),
			 0);
	ck_assert_uint_eq(out8, 0x48);
	ck_assert_int_eq(rdma_set_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_REUSEADDR, &reuse,
					 sizeof(reuse)),
			 0);
	ck_assert_int_eq(rdma_get_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_REUSEADDR, &out,
					 sizeof(out)),
			 0);
	ck_assert_int_eq(out, 1);
	ASSERT_ERR(rdma_get_option(id, RDMA_OPTION_ID,
				   RDMA_OPTION_ID_ACK_TIMEOUT, &out8, 1),
		   ENODATA);
	tos = 14;
	ck_assert_int_eq(rdma_set_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_ACK_TIMEOUT, &tos, 1),
			 0);
	ck_assert_int_eq(rdma_get_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_ACK_TIMEOUT, &out8, 1),
			 0);
	ck_assert_uint_eq(out8, 14);
}
END_TEST

/* RDMA_OPTION_ID_INITIATOR: read-only, ENODATA until ESTABLISHED set it. */
START_TEST(initiator_option)
{
	struct rdma_cm_id *id = &rc_id->id;
	int v = 7;

	ASSERT_ERR(rdma_get_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_INITIATOR,
				   &v, sizeof(v)),
		   ENODATA);
	ASSERT_ERR(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_INITIATOR,
				   &v, sizeof(v)),
		   ENOPROTOOPT);
	ASSERT_ERR(rdma_get_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_INITIATOR,
				   &v, 1),
		   EINVAL);
	rc_id->initiator = 1;
	ck_assert_int_eq(rdma_get_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_INITIATOR, &v,
					 sizeof(v)),
			 0);
	ck_assert_int_eq(v, 1);
	rc_id->initiator = 0;
	ck_assert_int_eq(rdma_get_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_INITIATOR, &v,
					 sizeof(v)),
			 0);
	ck_assert_int_eq(v, 0);
}
END_TEST

/*
 * A value the kernel refuses is not remembered: reading the option back
 * gives what the kernel last took, and the kernel's errno is the call's.
 */
START_TEST(a_value_the_kernel_refuses_is_not_remembered)
{
	struct rdma_cm_id *id = &ud_id->id;
	uint8_t tos = 0x48, out = 0;

	ck_assert_int_eq(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
					 &tos, 1),
			 0);
	fake_ucma_fail_next(RDMA_USER_CM_CMD_SET_OPTION, EACCES);
	tos = 0x10;
	ASSERT_ERR(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
				   1),
		   EACCES);
	ck_assert_int_eq(rdma_get_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
					 &out, 1),
			 0);
	ck_assert_uint_eq(out, 0x48);
}
END_TEST

/* The sysctl the kernel's own default for AFONLY comes from (0 if none). */
static int bindv6only(void)
{
	FILE *f = fopen("/proc/sys/net/ipv6/bindv6only", "re");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v ? 1 : 0;
}

/*
 * AFONLY never set reads as the kernel would apply it (the bindv6only
 * sysctl); once set, as set, and the kernel was told.
 */
START_TEST(afonly_reads_the_kernels_default_until_set)
{
	const struct rdma_ucm_set_option *sent;
	struct rdma_cm_id *id = &rc_id->id;
	int v = -1, on;

	ck_assert_int_eq(rdma_get_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_AFONLY, &v, sizeof(v)),
			 0);
	ck_assert_int_eq(v, bindv6only());
	on = !v;
	fake_ucma_clear_log();
	ck_assert_int_eq(rdma_set_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_AFONLY, &on,
					 sizeof(on)),
			 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_SET_OPTION), 1);
	sent = (const void *)fake_ucma_last(RDMA_USER_CM_CMD_SET_OPTION)->body;
	ck_assert_uint_eq(sent->level, RDMA_OPTION_ID);
	ck_assert_uint_eq(sent->optname, RDMA_OPTION_ID_AFONLY);
	ck_assert_uint_eq(sent->optlen, sizeof(int));
	ck_assert_int_eq(rdma_get_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_AFONLY, &v, sizeof(v)),
			 0);
	ck_assert_int_eq(v, on);
}
END_TEST

/*
 * RDMA_OPTION_IB_PATH is write-only and takes whole path records, any
 * number of them, handed to the kernel in one command.
 */
START_TEST(ib_paths_go_to_the_kernel_whole)
{
	const struct rdma_ucm_set_option *sent;
	struct rdma_cm_id *id = &rc_id->id;
	struct ibv_path_data paths[3];

	memset(paths, 0, sizeof(paths));
	fake_ucma_clear_log();
	ck_assert_int_eq(rdma_set_option(id, RDMA_OPTION_IB,
					 RDMA_OPTION_IB_PATH, paths,
					 sizeof(paths)),
			 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_SET_OPTION), 1);
	sent = (const void *)fake_ucma_last(RDMA_USER_CM_CMD_SET_OPTION)->body;
	ck_assert_uint_eq(sent->level, RDMA_OPTION_IB);
	ck_assert_uint_eq(sent->optname, RDMA_OPTION_IB_PATH);
	ck_assert_uint_eq(sent->optlen, sizeof(paths));
	ASSERT_ERR(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
				   paths, sizeof(paths) - 1),
		   EINVAL);
	ASSERT_ERR(rdma_get_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
				   paths, sizeof(paths)),
		   ENOPROTOOPT);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_SET_OPTION), 1);
}
END_TEST

Suite *options_suite(void)
{
	Suite *s = suite_create("options");
	TCase *tc = tcase_create("checks");

	tcase_add_test(tc, options_are_validated);
	tcase_add_test(tc, set_refuses_what_check_refuses);
	suite_add_tcase(s, tc);
	tc = tcase_create("id options");
	tcase_add_checked_fixture(tc, option_ids_setup, option_ids_teardown);
	tcase_add_test(tc, get_option_mirrors_set);
	tcase_add_test(tc, initiator_option);
	tcase_add_test(tc, a_value_the_kernel_refuses_is_not_remembered);
	tcase_add_test(tc, afonly_reads_the_kernels_default_until_set);
	tcase_add_test(tc, ib_paths_go_to_the_kernel_whole);
	suite_add_tcase(s, tc);
	return s;
}
