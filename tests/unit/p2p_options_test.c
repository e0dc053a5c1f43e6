// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer-to-peer mode's options, RDMA_OPTION_ID_PEER2PEER and
 * RDMA_OPTION_ID_P2P_TAG (src/p2p/p2p_options.c), through the public
 * calls: values are checked, an option never set reads as ENODATA, and
 * neither ever reaches the kernel (they live in the library).
 */
#include <config.h>

#include <check.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"
#include "fake_ucma.h"
#include "unit.h"

/* The options through the public calls: values checked, never-set unread. */
START_TEST(options_validated)
{
	struct rdma_event_channel *ch;
	struct cma_id_private *id_priv;
	uint64_t tag = 77, got_tag = 0;
	int v = 1, got = -1;

	fake_ucma_install();
	ch = cma_channel_create();
	ck_assert_ptr_nonnull(ch);
	id_priv = cma_id_alloc(ch, NULL, RDMA_PS_TCP, IBV_QPT_RC);
	ck_assert_ptr_nonnull(id_priv);
	ck_assert_int_eq(rdma_get_option(&id_priv->id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_PEER2PEER, &got,
					 sizeof(got)),
			 -1);
	ck_assert_int_eq(errno, ENODATA);
	ck_assert_int_eq(rdma_set_option(&id_priv->id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_PEER2PEER, &v,
					 sizeof(v)),
			 0);
	ck_assert_int_eq(rdma_get_option(&id_priv->id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_PEER2PEER, &got,
					 sizeof(got)),
			 0);
	ck_assert_int_eq(got, 1);
	v = 2;
	ck_assert_int_eq(rdma_set_option(&id_priv->id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_PEER2PEER, &v,
					 sizeof(v)),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rdma_get_option(&id_priv->id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_P2P_TAG, &got_tag,
					 sizeof(got_tag)),
			 -1);
	ck_assert_int_eq(errno, ENODATA);
	ck_assert_int_eq(rdma_set_option(&id_priv->id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_P2P_TAG, &tag,
					 sizeof(tag)),
			 0);
	ck_assert_int_eq(rdma_get_option(&id_priv->id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_P2P_TAG, &got_tag,
					 sizeof(got_tag)),
			 0);
	ck_assert(got_tag == 77);
	ck_assert_int_eq(rdma_set_option(&id_priv->id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_P2P_TAG, &tag, 4),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(offsetof(struct rdma_conn_param, peer2peer_mode), 15);
	cma_id_free(id_priv);
	cma_channel_destroy(ch);
	fake_ucma_uninstall();
}
END_TEST

/*
 * The options are the library's alone: setting them sends the kernel
 * nothing, and rdma_set_option checks a value as cma_check_option does
 * (rdma_create_ep's path); 0 is a value of its own, not "unset".
 */
START_TEST(options_stay_in_the_library)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	uint64_t tag = 1ull << 40, got_tag = 0;
	int off = 0, bad = -1, got = -1;

	fake_ucma_install();
	ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(ch);
	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	fake_ucma_clear_log();
	ck_assert_int_eq(rdma_set_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_PEER2PEER, &off,
					 sizeof(off)),
			 0);
	ck_assert_int_eq(rdma_get_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_PEER2PEER, &got,
					 sizeof(got)),
			 0);
	ck_assert_int_eq(got, 0);
	ck_assert_int_eq(rdma_set_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_P2P_TAG, &tag,
					 sizeof(tag)),
			 0);
	ck_assert_int_eq(rdma_get_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_P2P_TAG, &got_tag,
					 sizeof(got_tag)),
			 0);
	ck_assert(got_tag == tag);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_SET_OPTION), 0);

	ck_assert_int_eq(cma_check_option(RDMA_OPTION_ID,
					  RDMA_OPTION_ID_PEER2PEER, &bad,
					  sizeof(bad)),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(rdma_set_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_PEER2PEER, &bad,
					 sizeof(bad)),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	/* the refused value left the one set before */
	ck_assert_int_eq(rdma_get_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_PEER2PEER, &got,
					 sizeof(got)),
			 0);
	ck_assert_int_eq(got, 0);
	ck_assert_int_eq(cma_check_option(RDMA_OPTION_ID,
					  RDMA_OPTION_ID_P2P_TAG, &tag,
					  sizeof(tag)),
			 0);
	ck_assert_int_eq(rdma_get_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_P2P_TAG, NULL,
					 sizeof(tag)),
			 -1);
	ck_assert_int_eq(errno, EFAULT);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
	fake_ucma_uninstall();
}
END_TEST

Suite *p2p_options_suite(void)
{
	Suite *s = suite_create("p2p_options");
	TCase *tc = tcase_create("options");

	tcase_add_test(tc, options_validated);
	tcase_add_test(tc, options_stay_in_the_library);
	suite_add_tcase(s, tc);
	return s;
}
