// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for src/id.c: what an id's public fields say from the moment
 * it is bound to a device.  Programs written for rdma-core (UCX, external
 * QP users, rdma-core's own tests) make their QPs, MRs and AHs on id->pd
 * right after route resolution or on a child id of CONNECT_REQUEST,
 * without rdma_create_qp: id->pd must be the device's shared PD then.
 *
 * The device is a stand-in: a cma_device whose context and shared PD are
 * set already, so no libibverbs call is made.
 */
#include <config.h>

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cma.h"
#include "ucma_abi.h"

static struct rdma_event_channel *channel;
static struct cma_id_private *id;
static struct cma_device dev_a, dev_b;
/* Only their addresses are used: the library never looks inside here. */
static char ctx_a, ctx_b, pd_a, pd_b, user_pd, user_qp;

static void setup(void)
{
	memset(&dev_a, 0, sizeof(dev_a));
	dev_a.verbs = (struct ibv_context *)&ctx_a;
	dev_a.pd = (struct ibv_pd *)&pd_a;
	dev_a.guid = 0xa;
	dev_b = dev_a;
	dev_b.verbs = (struct ibv_context *)&ctx_b;
	dev_b.pd = (struct ibv_pd *)&pd_b;
	dev_b.guid = 0xb;
	channel = cma_channel_from_fd(100);
	ck_assert_ptr_nonnull(channel);
	id = cma_id_alloc(channel, NULL, RDMA_PS_TCP, IBV_QPT_RC);
	ck_assert_ptr_nonnull(id);
}

static void teardown(void)
{
	cma_id_free(id); /* drops its device reference, closes nothing */
	cma_channel_destroy(channel); /* fd 100 was never open */
}

/* How cma_device_get_by_guid hands a device out: with a reference. */
static struct cma_device *get(struct cma_device *dev)
{
	dev->refcnt++;
	return dev;
}

START_TEST(a_bound_id_has_the_devices_shared_pd)
{
	ck_assert_ptr_null(id->id.pd);
	ck_assert_int_eq(cma_id_set_device(id, get(&dev_a)), 0);
	ck_assert_ptr_eq(id->id.verbs, dev_a.verbs);
	ck_assert_ptr_eq(id->id.pd, dev_a.pd);
	ck_assert_int_eq(dev_a.refcnt, 1);
	/* Bound again to the same device (route after address): no change. */
	ck_assert_int_eq(cma_id_set_device(id, get(&dev_a)), 0);
	ck_assert_ptr_eq(id->id.pd, dev_a.pd);
	ck_assert_int_eq(dev_a.refcnt, 1);
}
END_TEST

START_TEST(a_new_device_brings_its_own_pd)
{
	ck_assert_int_eq(cma_id_set_device(id, get(&dev_a)), 0);
	ck_assert_int_eq(cma_id_set_device(id, get(&dev_b)), 0);
	ck_assert_ptr_eq(id->id.verbs, dev_b.verbs);
	ck_assert_ptr_eq(id->id.pd, dev_b.pd);
	ck_assert_int_eq(dev_a.refcnt, 0);
	ck_assert_int_eq(dev_b.refcnt, 1);
}
END_TEST

/* A QP or SRQ made on the caller's PD: id->pd names that PD and stays. */
START_TEST(a_pd_in_use_is_kept)
{
	ck_assert_int_eq(cma_id_set_device(id, get(&dev_a)), 0);
	id->id.pd = (struct ibv_pd *)&user_pd;
	id->id.qp = (struct ibv_qp *)&user_qp;
	ck_assert_int_eq(cma_id_set_device(id, get(&dev_b)), 0);
	ck_assert_ptr_eq(id->id.pd, (struct ibv_pd *)&user_pd);
	id->id.qp = NULL;
}
END_TEST

START_TEST(unbinding_clears_verbs_and_pd)
{
	ck_assert_int_eq(cma_id_set_device(id, get(&dev_a)), 0);
	ck_assert_int_eq(cma_id_set_device(id, NULL), 0);
	ck_assert_ptr_null(id->id.verbs);
	ck_assert_ptr_null(id->id.pd);
	ck_assert_int_eq(dev_a.refcnt, 0);
}
END_TEST

static Suite *id_suite(void)
{
	Suite *s = suite_create("id");
	TCase *tc = tcase_create("device binding");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_bound_id_has_the_devices_shared_pd);
	tcase_add_test(tc, a_new_device_brings_its_own_pd);
	tcase_add_test(tc, a_pd_in_use_is_kept);
	tcase_add_test(tc, unbinding_clears_verbs_and_pd);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(id_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
