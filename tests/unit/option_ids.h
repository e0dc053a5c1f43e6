/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The fixture of the option suites (include check.h, cm/cma.h and
 * fake_ucma.h first): a datagram id and a connected-mode id with kernel
 * ids on the fake device, bound to no RDMA device.
 */
#ifndef TESTS_UNIT_OPTION_IDS_H
#define TESTS_UNIT_OPTION_IDS_H

static struct rdma_event_channel *channel;
static struct cma_id_private *ud_id, *rc_id;

static void option_ids_setup(void)
{
	fake_ucma_install();
	channel = cma_channel_create();
	ck_assert_ptr_nonnull(channel);
	ud_id = cma_id_alloc(channel, NULL, RDMA_PS_UDP, IBV_QPT_UD);
	rc_id = cma_id_alloc(channel, NULL, RDMA_PS_TCP, IBV_QPT_RC);
	ck_assert_ptr_nonnull(ud_id);
	ck_assert_ptr_nonnull(rc_id);
	ck_assert_int_eq(cma_id_create_kernel(ud_id), 0);
	ck_assert_int_eq(cma_id_create_kernel(rc_id), 0);
}

static void option_ids_teardown(void)
{
	cma_id_free(ud_id);
	cma_id_free(rc_id);
	cma_channel_destroy(channel);
	fake_ucma_uninstall();
}

#endif
