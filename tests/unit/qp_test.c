// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * QPs and SRQs made through the CM (src/cm/qp.c), against the fake kernel and
 * the fake device, as rdma_create_qp(3), rdma_create_srq(3),
 * rdma_destroy_qp(3) and rdma_init_qp_attr(3) describe them: a connected
 * QP is ready for the CM (INIT) when created, a datagram QP ready to send
 * (RTS); without CQs the library makes one per direction and frees them
 * with the QP; nothing half-made is left when creation fails.  The moves
 * a connection makes (RTR, RTS, ERR; external QPs with rdma_init_qp_attr
 * and rdma_establish) are in conn_test.
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

static void start(bool roce)
{
	struct sockaddr_in dst = unit_ipv4("192.0.2.2", 7471);

	fake_ucma_install();
	fake_verbs_install(roce);
	ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(ch);
	id = unit_resolved_id(ch, RDMA_PS_TCP, (struct sockaddr *)&dst);
}

static void roce_setup(void)
{
	start(true);
}

static void ib_setup(void)
{
	start(false);
}

static void teardown(void)
{
	struct fake_verbs_counts c;

	rdma_destroy_qp(id);
	rdma_destroy_srq(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	c = fake_verbs_counts();
	ck_assert_int_eq(c.qps, 0);
	ck_assert_int_eq(c.cqs, 0);
	ck_assert_int_eq(c.channels, 0);
	ck_assert_int_eq(c.srqs, 0);
	fake_ucma_uninstall();
}

static struct fake_qp *fqp(void)
{
	return fake_qp_of(id->qp);
}

/* A connected QP waits in INIT for the connection to move it on. */
START_TEST(connected_qp_is_created_in_init)
{
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);

	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), 0);
	ck_assert_int_eq(fqp()->nstates, 1);
	ck_assert_int_eq(fqp()->states[0], IBV_QPS_INIT);
	ck_assert_uint_eq(fqp()->last[IBV_QPS_INIT].port_num, 1);
	ck_assert(fqp()->last_mask[IBV_QPS_INIT] & IBV_QP_PORT);
	ck_assert(fqp()->last_mask[IBV_QPS_INIT] & IBV_QP_PKEY_INDEX);
}
END_TEST

/* On InfiniBand the P_Key index comes from the kernel's answer. */
START_TEST(ib_init_attributes_come_from_the_kernel)
{
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);
	const struct fake_cmd *cmd;

	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), 0);
	cmd = fake_ucma_last(RDMA_USER_CM_CMD_INIT_QP_ATTR);
	ck_assert_ptr_nonnull(cmd);
	ck_assert_int_eq(fqp()->states[0], IBV_QPS_INIT);
}
END_TEST

START_TEST(the_kernel_refusing_init_leaves_nothing)
{
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);

	fake_ucma_fail_next(RDMA_USER_CM_CMD_INIT_QP_ATTR, ENODEV);
	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), -1);
	ck_assert_int_eq(errno, ENODEV);
	ck_assert_ptr_null(id->qp);
	ck_assert_ptr_null(id->send_cq);
	ck_assert_int_eq(fake_verbs_counts().qps, 0);
	ck_assert_int_eq(fake_verbs_counts().cqs, 0);
}
END_TEST

/* A datagram QP needs no peer: INIT, RTR, RTS at once, SQ PSN given. */
START_TEST(datagram_qp_is_ready_to_send)
{
	struct sockaddr_in dst = unit_ipv4("192.0.2.3", 0);
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_UD);
	struct rdma_cm_id *ud;

	ud = unit_resolved_id(ch, RDMA_PS_UDP, (struct sockaddr *)&dst);
	ck_assert_int_eq(rdma_create_qp(ud, NULL, &attr), 0);
	ck_assert_int_eq(fake_qp_of(ud->qp)->nstates, 3);
	ck_assert_int_eq(fake_qp_of(ud->qp)->states[0], IBV_QPS_INIT);
	ck_assert_int_eq(fake_qp_of(ud->qp)->states[1], IBV_QPS_RTR);
	ck_assert_int_eq(fake_qp_of(ud->qp)->states[2], IBV_QPS_RTS);
	ck_assert(fake_qp_of(ud->qp)->last_mask[IBV_QPS_RTS] & IBV_QP_SQ_PSN);
	rdma_destroy_qp(ud);
	rdma_destroy_id(ud);
}
END_TEST

/* Without CQs: one per direction with its own channel, freed with it. */
START_TEST(library_cqs_live_and_die_with_the_qp)
{
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);

	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), 0);
	ck_assert_ptr_nonnull(id->send_cq);
	ck_assert_ptr_nonnull(id->recv_cq);
	ck_assert_ptr_ne(id->send_cq, id->recv_cq);
	ck_assert_ptr_nonnull(id->send_cq_channel);
	ck_assert_ptr_nonnull(id->recv_cq_channel);
	ck_assert_ptr_eq(id->qp->send_cq, id->send_cq);
	ck_assert_ptr_eq(id->qp->recv_cq, id->recv_cq);
	ck_assert_int_eq(fake_verbs_counts().cqs, 2);
	rdma_destroy_qp(id);
	ck_assert_ptr_null(id->qp);
	ck_assert_ptr_null(id->send_cq);
	ck_assert_ptr_null(id->recv_cq_channel);
	ck_assert_int_eq(fake_verbs_counts().cqs, 0);
	ck_assert_int_eq(fake_verbs_counts().channels, 0);
	rdma_destroy_qp(id); /* twice: nothing to do */
}
END_TEST

/* The caller's CQs are the caller's: used, never freed by the library. */
START_TEST(caller_cqs_are_kept)
{
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);
	struct ibv_cq *cq = ibv_create_cq(id->verbs, 4, NULL, NULL, 0);

	attr.send_cq = attr.recv_cq = cq;
	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), 0);
	ck_assert_ptr_eq(id->qp->send_cq, cq);
	ck_assert_ptr_null(id->send_cq);
	rdma_destroy_qp(id);
	ck_assert_int_eq(fake_verbs_counts().cqs, 1);
	ibv_destroy_cq(cq);
}
END_TEST

START_TEST(bad_qp_requests_are_refused)
{
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *other = ibv_open_device(list[0]);
	struct ibv_pd *foreign = ibv_alloc_pd(other);
	struct rdma_cm_id *unbound;

	ibv_free_device_list(list);
	ck_assert_int_eq(rdma_create_qp(NULL, NULL, &attr), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rdma_create_qp(id, NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rdma_create_qp_ex(id, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	/* A PD of another device context. */
	ck_assert_int_eq(rdma_create_qp(id, foreign, &attr), -1);
	ck_assert_int_eq(errno, EINVAL);
	/* An id on no device yet. */
	ck_assert_int_eq(rdma_create_id(ch, &unbound, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_create_qp(unbound, NULL, &attr), -1);
	ck_assert_int_eq(errno, EINVAL);
	rdma_destroy_id(unbound);
	/* A second QP. */
	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), 0);
	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(fake_verbs_counts().qps, 1);
	ibv_dealloc_pd(foreign);
	ibv_close_device(other);
}
END_TEST

/* The provider refusing the first move: no QP, no CQs, its errno. */
START_TEST(a_failed_first_move_leaves_nothing)
{
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);

	fake_verbs_fail_modify(IBV_QPS_INIT, EPERM);
	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_ptr_null(id->qp);
	ck_assert_int_eq(fake_verbs_counts().qps, 0);
	ck_assert_int_eq(fake_verbs_counts().cqs, 0);
	/* and the id can try again */
	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), 0);
}
END_TEST

/* rdma_init_qp_attr asks the kernel for the state the caller names. */
START_TEST(init_qp_attr_asks_for_the_named_state)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_RTR};
	const struct fake_cmd *cmd;
	uint32_t state;
	int mask;

	ck_assert_int_eq(rdma_init_qp_attr(id, &attr, &mask), 0);
	cmd = fake_ucma_last(RDMA_USER_CM_CMD_INIT_QP_ATTR);
	ck_assert_ptr_nonnull(cmd);
	memcpy(&state,
	       cmd->body + offsetof(struct rdma_ucm_init_qp_attr, qp_state),
	       sizeof(state));
	ck_assert_uint_eq(state, IBV_QPS_RTR);
	ck_assert_int_eq(rdma_init_qp_attr(NULL, &attr, &mask), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rdma_init_qp_attr(id, NULL, &mask), -1);
	ck_assert_int_eq(rdma_init_qp_attr(id, &attr, NULL), -1);
	fake_ucma_fail_next(RDMA_USER_CM_CMD_INIT_QP_ATTR, EINVAL);
	ck_assert_int_eq(rdma_init_qp_attr(id, &attr, &mask), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* An SRQ made on the id is the one its QP then receives from. */
START_TEST(srq_on_the_id_serves_its_qp)
{
	struct ibv_srq_init_attr sattr = {.attr = {.max_wr = 4, .max_sge = 1}};
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);

	ck_assert_int_eq(rdma_create_srq(id, NULL, &sattr), 0);
	ck_assert_ptr_nonnull(id->srq);
	ck_assert_ptr_eq(id->srq->pd, id->pd);
	ck_assert_int_eq(rdma_create_srq(id, NULL, &sattr), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), 0);
	ck_assert_ptr_eq(id->qp->srq, id->srq);
	rdma_destroy_qp(id);
	rdma_destroy_srq(id);
	ck_assert_ptr_null(id->srq);
	ck_assert_int_eq(fake_verbs_counts().srqs, 0);
	rdma_destroy_srq(id); /* twice: nothing to do */
	ck_assert_int_eq(rdma_create_srq(NULL, NULL, &sattr), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rdma_create_srq(id, NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

Suite *qp_suite(void)
{
	Suite *s = suite_create("qp");
	TCase *tc = tcase_create("roce");

	tcase_add_checked_fixture(tc, roce_setup, teardown);
	tcase_add_test(tc, connected_qp_is_created_in_init);
	tcase_add_test(tc, datagram_qp_is_ready_to_send);
	tcase_add_test(tc, library_cqs_live_and_die_with_the_qp);
	tcase_add_test(tc, caller_cqs_are_kept);
	tcase_add_test(tc, bad_qp_requests_are_refused);
	tcase_add_test(tc, a_failed_first_move_leaves_nothing);
	tcase_add_test(tc, init_qp_attr_asks_for_the_named_state);
	tcase_add_test(tc, srq_on_the_id_serves_its_qp);
	suite_add_tcase(s, tc);

	tc = tcase_create("ib");
	tcase_add_checked_fixture(tc, ib_setup, teardown);
	tcase_add_test(tc, ib_init_attributes_come_from_the_kernel);
	tcase_add_test(tc, the_kernel_refusing_init_leaves_nothing);
	suite_add_tcase(s, tc);
	return s;
}
