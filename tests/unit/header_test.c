// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The static inlines of <rdma/rdma_cma.h> and <rdma/rdma_verbs.h>.
 *
 * They are compiled into applications, so the library cannot check
 * their arguments: the header must.  Each one is called with a NULL id
 * (and with every NULL pointer argument its type allows) and must answer
 * NULL or -1 with errno EINVAL instead of crashing.  A fake provider
 * (a context whose ops record what they are handed) then shows that valid
 * arguments still reach libibverbs unchanged.
 */
#include <config.h>

#include <check.h>
#include "unit.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

/* Runs expr with errno cleared and checks it failed with EINVAL. */
#define CK_EINVAL_PTR(expr)                                                    \
	do {                                                                   \
		errno = 0;                                                     \
		ck_assert_ptr_null(expr);                                      \
		ck_assert_int_eq(errno, EINVAL);                               \
	} while (0)
#define CK_EINVAL_INT(expr)                                                    \
	do {                                                                   \
		errno = 0;                                                     \
		ck_assert_int_eq((expr), -1);                                  \
		ck_assert_int_eq(errno, EINVAL);                               \
	} while (0)

START_TEST(address_accessors_refuse_null_id)
{
	struct rdma_cm_id id;

	CK_EINVAL_PTR(rdma_get_local_addr(NULL));
	CK_EINVAL_PTR(rdma_get_peer_addr(NULL));

	memset(&id, 0, sizeof(id));
	ck_assert_ptr_eq(rdma_get_local_addr(&id), &id.route.addr.src_addr);
	ck_assert_ptr_eq(rdma_get_peer_addr(&id), &id.route.addr.dst_addr);
}
END_TEST

START_TEST(registration_refuses_null_id_and_pd)
{
	struct rdma_cm_id id;
	char buf[16];

	memset(&id, 0, sizeof(id));
	CK_EINVAL_PTR(rdma_reg_msgs(NULL, buf, sizeof(buf)));
	CK_EINVAL_PTR(rdma_reg_read(NULL, buf, sizeof(buf)));
	CK_EINVAL_PTR(rdma_reg_write(NULL, buf, sizeof(buf)));
	/* An id not yet bound to a device has no PD. */
	CK_EINVAL_PTR(rdma_reg_msgs(&id, buf, sizeof(buf)));
	CK_EINVAL_PTR(rdma_reg_read(&id, buf, sizeof(buf)));
	CK_EINVAL_PTR(rdma_reg_write(&id, buf, sizeof(buf)));
	CK_EINVAL_INT(rdma_dereg_mr(NULL));
}
END_TEST

START_TEST(posts_refuse_null_id)
{
	struct ibv_mr mr = {.lkey = 1, .addr = NULL, .length = 64};
	struct ibv_sge sge = {0};
	char *buf = NULL;
	struct ibv_ah ah;

	CK_EINVAL_INT(rdma_post_recvv(NULL, NULL, &sge, 1));
	CK_EINVAL_INT(rdma_post_sendv(NULL, NULL, &sge, 1, 0));
	CK_EINVAL_INT(rdma_post_readv(NULL, NULL, &sge, 1, 0, 0, 0));
	CK_EINVAL_INT(rdma_post_writev(NULL, NULL, &sge, 1, 0, 0, 0));
	CK_EINVAL_INT(rdma_post_recv(NULL, NULL, buf, 8, &mr));
	CK_EINVAL_INT(rdma_post_send(NULL, NULL, buf, 8, &mr, 0));
	CK_EINVAL_INT(rdma_post_read(NULL, NULL, buf, 8, &mr, 0, 0, 0));
	CK_EINVAL_INT(rdma_post_write(NULL, NULL, buf, 8, &mr, 0, 0, 0));
	CK_EINVAL_INT(rdma_post_ud_send(NULL, NULL, buf, 8, &mr, 0, &ah, 1));
}
END_TEST

START_TEST(posts_refuse_an_id_without_qp_or_args)
{
	struct ibv_mr mr = {.lkey = 1, .addr = NULL, .length = 64};
	struct ibv_sge sge = {0};
	struct rdma_cm_id id;
	char *buf = NULL;
	struct ibv_ah ah;

	memset(&id, 0, sizeof(id));
	CK_EINVAL_INT(rdma_post_recvv(&id, NULL, &sge, 1));
	CK_EINVAL_INT(rdma_post_sendv(&id, NULL, &sge, 1, 0));
	CK_EINVAL_INT(rdma_post_readv(&id, NULL, &sge, 1, 0, 0, 0));
	CK_EINVAL_INT(rdma_post_writev(&id, NULL, &sge, 1, 0, 0, 0));
	CK_EINVAL_INT(rdma_post_send(&id, NULL, buf, 8, NULL, 0));
	CK_EINVAL_INT(rdma_post_write(&id, NULL, buf, 8, NULL, 0, 0, 0));
	CK_EINVAL_INT(rdma_post_ud_send(&id, NULL, buf, 8, &mr, 0, &ah, 1));
	/* Receives and reads land in memory: they need an MR. */
	CK_EINVAL_INT(rdma_post_recv(&id, NULL, buf, 8, NULL));
	CK_EINVAL_INT(rdma_post_read(&id, NULL, buf, 8, NULL, 0, 0, 0));
}
END_TEST

START_TEST(completions_refuse_null_id_cq_and_wc)
{
	struct rdma_cm_id id;
	struct ibv_wc wc;

	memset(&id, 0, sizeof(id));
	CK_EINVAL_INT(rdma_get_send_comp(NULL, &wc));
	CK_EINVAL_INT(rdma_get_recv_comp(NULL, &wc));
	/* No QP created through the library: no CQs either. */
	CK_EINVAL_INT(rdma_get_send_comp(&id, &wc));
	CK_EINVAL_INT(rdma_get_recv_comp(&id, &wc));
}
END_TEST

/* --- a fake provider: records what valid calls hand to libibverbs ---- */

static struct {
	int sends, recvs, srq_recvs, polls;
	struct ibv_send_wr send;
	struct ibv_sge sge;
} seen;

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad)
{
	(void)qp;
	(void)bad;
	seen.sends++;
	seen.send = *wr;
	seen.sge = wr->sg_list[0];
	return 0;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad)
{
	(void)qp;
	(void)wr;
	(void)bad;
	seen.recvs++;
	return 0;
}

static int fake_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad)
{
	(void)srq;
	(void)wr;
	(void)bad;
	seen.srq_recvs++;
	return 0;
}

/* One completion per call, so the blocking reap never has to wait. */
static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	(void)cq;
	(void)n;
	seen.polls++;
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = 77;
	return 1;
}

static struct ibv_context fake_ctx;
static struct ibv_qp fake_qp;
static struct ibv_srq fake_srq;
static struct ibv_cq fake_cq;
static struct ibv_comp_channel fake_channel;

static void fake_id(struct rdma_cm_id *id)
{
	memset(&seen, 0, sizeof(seen));
	memset(&fake_ctx, 0, sizeof(fake_ctx));
	fake_ctx.ops.post_send = fake_post_send;
	fake_ctx.ops.post_recv = fake_post_recv;
	fake_ctx.ops.post_srq_recv = fake_post_srq_recv;
	fake_ctx.ops.poll_cq = fake_poll_cq;
	fake_qp.context = &fake_ctx;
	fake_srq.context = &fake_ctx;
	fake_cq.context = &fake_ctx;
	fake_channel.context = &fake_ctx;
	memset(id, 0, sizeof(*id));
	id->qp = &fake_qp;
	id->send_cq = &fake_cq;
	id->recv_cq = &fake_cq;
	id->send_cq_channel = &fake_channel;
	id->recv_cq_channel = &fake_channel;
}

START_TEST(valid_calls_still_reach_the_provider)
{
	struct ibv_mr mr = {.lkey = 9, .length = 64};
	char buf[64];
	struct ibv_ah ah;
	struct rdma_cm_id id;
	struct ibv_wc wc;

	mr.addr = buf;
	fake_id(&id);
	ck_assert_int_eq(rdma_post_send(&id, (void *)5, buf, 8, &mr, 0), 0);
	ck_assert_int_eq(seen.send.wr_id, 5);
	ck_assert_int_eq(seen.send.opcode, IBV_WR_SEND);
	ck_assert_uint_eq(seen.sge.lkey, 9);
	/* Inline data needs no MR: lkey 0. */
	ck_assert_int_eq(
		rdma_post_send(&id, NULL, buf, 8, NULL, IBV_SEND_INLINE), 0);
	ck_assert_uint_eq(seen.sge.lkey, 0);
	ck_assert_int_eq(rdma_post_write(&id, NULL, buf, 8, &mr, 0, 0x1000, 3),
			 0);
	ck_assert_int_eq(seen.send.opcode, IBV_WR_RDMA_WRITE);
	ck_assert_int_eq(rdma_post_read(&id, NULL, buf, 8, &mr, 0, 0x1000, 3),
			 0);
	ck_assert_int_eq(seen.send.opcode, IBV_WR_RDMA_READ);
	ck_assert_uint_eq(seen.send.wr.rdma.rkey, 3);
	ck_assert_int_eq(rdma_post_ud_send(&id, NULL, buf, 8, &mr, 0, &ah, 42),
			 0);
	ck_assert_uint_eq(seen.send.wr.ud.remote_qpn, 42);
	ck_assert_uint_eq(seen.send.wr.ud.remote_qkey, RDMA_UDP_QKEY);
	ck_assert_int_eq(seen.sends, 5);

	ck_assert_int_eq(rdma_post_recv(&id, NULL, buf, 8, &mr), 0);
	ck_assert_int_eq(seen.recvs, 1);
	/* An SRQ alone is enough for receives. */
	id.qp = NULL;
	id.srq = &fake_srq;
	ck_assert_int_eq(rdma_post_recv(&id, NULL, buf, 8, &mr), 0);
	ck_assert_int_eq(seen.srq_recvs, 1);

	ck_assert_int_eq(rdma_get_send_comp(&id, &wc), 1);
	ck_assert_int_eq(wc.wr_id, 77);
	ck_assert_int_eq(rdma_get_recv_comp(&id, &wc), 1);
	CK_EINVAL_INT(rdma_get_recv_comp(&id, NULL));
}
END_TEST

Suite *header_suite(void)
{
	Suite *s = suite_create("header");
	TCase *tc = tcase_create("inlines");

	tcase_add_test(tc, address_accessors_refuse_null_id);
	tcase_add_test(tc, registration_refuses_null_id_and_pd);
	tcase_add_test(tc, posts_refuse_null_id);
	tcase_add_test(tc, posts_refuse_an_id_without_qp_or_args);
	tcase_add_test(tc, completions_refuse_null_id_cq_and_wc);
	tcase_add_test(tc, valid_calls_still_reach_the_provider);
	suite_add_tcase(s, tc);
	return s;
}
