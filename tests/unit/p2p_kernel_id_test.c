// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The kernel ids of a peer-to-peer connect (src/p2p/p2p_kernel_id.c): a
 * replaced kernel id is retired, not destroyed at once, so that no event
 * names an id that was freed; the conn's chores destroy the retired ones
 * later and keep any the kernel refused to try again; the slots are few,
 * and a full set gives up its oldest on the spot.  The fake kernel's hook
 * answers DESTROY_ID here, so that a test picks what it reports or
 * refuses.
 */
#include <config.h>

#include <check.h>
#include <string.h>

#include "cm/cma.h"
#include "cm/ucma_abi.h"
#include "fake_ucma.h"
#include "p2p/p2p_table.h"
#include "unit.h"

static struct rdma_event_channel *channel;
static struct cma_id_private *id_priv;
static struct cma_p2p_conn *conn;

/* What the kernel was asked to destroy, and what it says. */
static uint32_t destroyed[16];
static unsigned int ndestroyed;
static uint32_t refused_handle = CMA_NO_KERNEL_ID;
static uint32_t events_reported;

static int destroy_kernel(const struct fake_cmd *cmd, void *resp, size_t len)
{
	struct rdma_ucm_destroy_id_resp *r = resp;

	if (cmd->cmd != RDMA_USER_CM_CMD_DESTROY_ID)
		return FAKE_UCMA_MODEL;
	if (cmd->handle == refused_handle)
		return EBUSY;
	if (ndestroyed < sizeof(destroyed) / sizeof(destroyed[0]))
		destroyed[ndestroyed++] = cmd->handle;
	if (r && len >= sizeof(*r))
		r->events_reported = events_reported;
	return 0;
}

static void setup(void)
{
	fake_ucma_install();
	channel = cma_channel_create();
	ck_assert_ptr_nonnull(channel);
	id_priv = cma_id_alloc(channel, NULL, RDMA_PS_TCP, IBV_QPT_RC);
	ck_assert_ptr_nonnull(id_priv);
	ck_assert_int_eq(cma_id_create_kernel(id_priv), 0);
	conn = cma_p2p_conn_get(id_priv);
	ck_assert_ptr_nonnull(conn);
	ndestroyed = 0;
	refused_handle = CMA_NO_KERNEL_ID;
	events_reported = 0;
	fake_ucma_set_hook(destroy_kernel);
}

static void teardown(void)
{
	fake_ucma_set_hook(NULL);
	cma_id_free(id_priv);
	cma_channel_destroy(channel);
	fake_ucma_uninstall();
}

static void retire(uint32_t handle)
{
	cma_p2p_lock();
	cma_p2p_retire(conn, handle);
	cma_p2p_unlock();
}

/* The id's kernel id is swapped whole; the old one is the caller's. */
START_TEST(set_handle_returns_the_old_kernel_id)
{
	uint32_t first = id_priv->handle;

	ck_assert_uint_ne(first, CMA_NO_KERNEL_ID);
	ck_assert_uint_eq(cma_p2p_set_handle(id_priv, 77), first);
	ck_assert_uint_eq(id_priv->handle, 77);
	ck_assert_uint_eq(cma_p2p_set_handle(id_priv, first), 77);
}
END_TEST

/*
 * A renewed id gets a fresh kernel id, unless it was created without
 * one: then it has none until a command needs it.
 */
START_TEST(renewal_follows_how_the_id_was_created)
{
	uint32_t first = id_priv->handle;

	fake_ucma_clear_log();
	ck_assert_int_eq(cma_p2p_renew_kernel_id(id_priv), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CREATE_ID), 1);
	ck_assert_uint_ne(id_priv->handle, first);
	ck_assert_uint_ne(id_priv->handle, CMA_NO_KERNEL_ID);
	id_priv->kernel_lazy = true;
	ck_assert_int_eq(cma_p2p_renew_kernel_id(id_priv), 0);
	ck_assert_uint_eq(id_priv->handle, CMA_NO_KERNEL_ID);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CREATE_ID), 1);
	/* the kernel's refusal leaves the id's kernel id as it was */
	id_priv->kernel_lazy = false;
	id_priv->handle = first;
	fake_ucma_fail_next(RDMA_USER_CM_CMD_CREATE_ID, ENOMEM);
	ck_assert_int_eq(cma_p2p_renew_kernel_id(id_priv), -1);
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_uint_eq(id_priv->handle, first);
}
END_TEST

/*
 * Destroying a kernel id adds the events it reported to the id's count
 * (they were handed out); a kernel id never made asks the kernel nothing.
 */
START_TEST(destroy_counts_the_events_the_kernel_reported)
{
	uint32_t base = id_priv->events_base;

	events_reported = 3;
	ck_assert_int_eq(cma_p2p_destroy_kernel_id(id_priv, 41), 0);
	ck_assert_uint_eq(ndestroyed, 1);
	ck_assert_uint_eq(destroyed[0], 41);
	ck_assert_uint_eq(id_priv->events_base, base + 3);
	ck_assert_int_eq(cma_p2p_destroy_kernel_id(id_priv, CMA_NO_KERNEL_ID),
			 0);
	ck_assert_uint_eq(ndestroyed, 1);
	refused_handle = 42;
	ck_assert_int_eq(cma_p2p_destroy_kernel_id(id_priv, 42), -1);
	ck_assert_int_eq(errno, EBUSY);
	ck_assert_uint_eq(id_priv->events_base, base + 3);
}
END_TEST

/*
 * Retired kernel ids wait for the chores; with every slot taken, the
 * oldest is destroyed on the spot to make room.
 */
START_TEST(retired_ids_wait_and_a_full_set_gives_up_its_oldest)
{
	uint32_t h;

	retire(CMA_NO_KERNEL_ID); /* never made: nothing to destroy */
	ck_assert_uint_eq(conn->nretired, 0);
	for (h = 1; h <= CMA_P2P_MAX_RETIRED; h++)
		retire(100 + h);
	ck_assert_uint_eq(conn->nretired, CMA_P2P_MAX_RETIRED);
	ck_assert_uint_eq(ndestroyed, 0);
	retire(200);
	ck_assert_uint_eq(ndestroyed, 1);
	ck_assert_uint_eq(destroyed[0], 101);
	ck_assert_uint_eq(conn->nretired, CMA_P2P_MAX_RETIRED);
	ck_assert_uint_eq(conn->retired[0], 102);
	ck_assert_uint_eq(conn->retired[CMA_P2P_MAX_RETIRED - 1], 200);
}
END_TEST

/*
 * The chores take every retired id at once (the conn is busy until they
 * are done), destroy them, and retire again the ones the kernel refused.
 */
START_TEST(chores_destroy_the_retired_and_keep_the_refused)
{
	struct cma_p2p_chores c;

	cma_p2p_lock();
	ck_assert(!cma_p2p_take_chores(conn, &c)); /* nothing to do */
	ck_assert(!cma_p2p_busy(&conn->busy));
	cma_p2p_retire(conn, 11);
	cma_p2p_retire(conn, 12);
	cma_p2p_retire(conn, 13);
	ck_assert(cma_p2p_take_chores(conn, &c));
	ck_assert_uint_eq(c.n, 3);
	ck_assert(!c.qp_err);
	ck_assert_uint_eq(conn->nretired, 0);
	ck_assert_uint_eq(conn->busy.count, 1);
	cma_p2p_unlock();

	refused_handle = 12;
	cma_p2p_do_chores(conn, &c);
	ck_assert_uint_eq(ndestroyed, 2);
	ck_assert_uint_eq(destroyed[0], 11);
	ck_assert_uint_eq(destroyed[1], 13);
	ck_assert(!cma_p2p_busy(&conn->busy));
	ck_assert_uint_eq(conn->nretired, 1);
	ck_assert_uint_eq(conn->retired[0], 12);

	/* done now, p2p_lock held as its callers hold it */
	refused_handle = CMA_NO_KERNEL_ID;
	cma_p2p_lock();
	cma_p2p_chores_now(conn);
	ck_assert_uint_eq(conn->nretired, 0);
	ck_assert(!cma_p2p_busy(&conn->busy));
	cma_p2p_unlock();
	ck_assert_uint_eq(ndestroyed, 3);
	ck_assert_uint_eq(destroyed[2], 12);
}
END_TEST

Suite *p2p_kernel_id_suite(void)
{
	Suite *s = suite_create("p2p_kernel_id");
	TCase *tc = tcase_create("kernel ids");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, set_handle_returns_the_old_kernel_id);
	tcase_add_test(tc, renewal_follows_how_the_id_was_created);
	tcase_add_test(tc, destroy_counts_the_events_the_kernel_reported);
	tcase_add_test(tc, retired_ids_wait_and_a_full_set_gives_up_its_oldest);
	tcase_add_test(tc, chores_destroy_the_retired_and_keep_the_refused);
	suite_add_tcase(s, tc);
	return s;
}
