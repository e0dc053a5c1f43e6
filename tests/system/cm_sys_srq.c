// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * cm_sys_test (see cm_sys.h): Shared receive queues, vector posts, rdma_notify.
 */
#define _GNU_SOURCE
#include "cm_sys.h"

/* --- shared receive queues, vector posts, rdma_notify --------------------- */

/* Capacity of the QPs and SRQs below: two SGEs for the vector forms. */
static void srq_qp_caps(struct ibv_qp_cap *cap)
{
	cap->max_send_wr = 4;
	cap->max_recv_wr = 4; /* sizes the library-made receive CQ */
	cap->max_send_sge = 2;
	cap->max_recv_sge = 2;
}

static void check_srq_qp(struct end *e)
{
	struct rdma_cm_id *id = e->id;

	CHECK(id->qp && id->srq, "%s: no QP or SRQ", e->who);
	CHECK(id->qp->srq == id->srq,
	      "%s: the QP does not take its receives from id->srq", e->who);
	CHECK(id->pd && id->qp->pd == id->pd && id->srq->pd == id->pd,
	      "%s: QP, SRQ and id->pd differ", e->who);
	CHECK(id->send_cq && id->recv_cq && id->qp->recv_cq == id->recv_cq,
	      "%s: the library-made CQs are missing", e->who);
}

/*
 * Client: rdma_create_srq (NULL PD: the id's), then rdma_create_qp_ex
 * without a PD or an SRQ in the attributes; the library fills in both.
 */
static void make_srq_qp_ex(struct end *e)
{
	struct ibv_srq_init_attr sattr;
	struct ibv_qp_init_attr_ex attr;

	hx_stage("rdma_create_srq");
	memset(&sattr, 0, sizeof(sattr));
	sattr.attr.max_wr = 8;
	sattr.attr.max_sge = 2;
	CHECK_OK(rdma_create_srq(e->id, NULL, &sattr));
	hx_stage("rdma_create_qp_ex");
	memset(&attr, 0, sizeof(attr));
	attr.qp_type = IBV_QPT_RC;
	srq_qp_caps(&attr.cap);
	CHECK_OK(rdma_create_qp_ex(e->id, &attr));
	check_srq_qp(e);
}

/* Server: rdma_create_srq_ex (basic SRQ, no PD given), then rdma_create_qp. */
static void make_srq_ex_qp(struct end *e)
{
	struct ibv_srq_init_attr_ex sattr;
	struct ibv_qp_init_attr attr;

	hx_stage("rdma_create_srq_ex");
	memset(&sattr, 0, sizeof(sattr));
	sattr.comp_mask = IBV_SRQ_INIT_ATTR_TYPE;
	sattr.srq_type = IBV_SRQT_BASIC;
	sattr.attr.max_wr = 8;
	sattr.attr.max_sge = 2;
	CHECK_OK(rdma_create_srq_ex(e->id, &sattr));
	hx_stage("rdma_create_qp with an SRQ on the id");
	memset(&attr, 0, sizeof(attr));
	attr.qp_type = IBV_QPT_RC;
	srq_qp_caps(&attr.cap);
	CHECK_OK(rdma_create_qp(e->id, NULL, &attr));
	check_srq_qp(e);
}

static void srq_make_qp(struct end *e)
{
	if (!strcmp(e->who, "client"))
		make_srq_qp_ex(e);
	else
		make_srq_ex_qp(e);
}

/* Two SGEs of one registered buffer: @len0 bytes at @base, @len1 at @off1. */
static void sge_pair(struct ibv_sge sg[2], char *base, uint32_t lkey,
		     uint32_t len0, size_t off1, uint32_t len1)
{
	sg[0].addr = (uintptr_t)base;
	sg[0].length = len0;
	sg[0].lkey = lkey;
	sg[1].addr = (uintptr_t)(base + off1);
	sg[1].length = len1;
	sg[1].lkey = lkey;
}

/*
 * A two-piece message with rdma_post_sendv, received with rdma_post_recvv
 * into two pieces of the peer's receive buffer (through its SRQ).
 */
static void vec_message(struct end *a, struct end *b)
{
	static const char p1[] = "first piece, ", p2[] = "second piece";
	struct ibv_sge s[2], r[2];
	struct ibv_wc wc;
	int n;

	memset(b->rbuf, 0, sizeof(b->rbuf));
	/* The first receive SGE is exactly as long as the first piece. */
	sge_pair(r, b->rbuf, b->rmr->lkey, sizeof(p1) - 1, 128, 128);
	hx_stage("rdma_post_recvv");
	CHECK_OK(rdma_post_recvv(b->id, b, r, 2));

	memcpy(a->sbuf, p1, sizeof(p1) - 1);
	memcpy(a->sbuf + 64, p2, sizeof(p2));
	sge_pair(s, a->sbuf, a->smr->lkey, sizeof(p1) - 1, 64, sizeof(p2));
	hx_stage("rdma_post_sendv");
	CHECK_OK(rdma_post_sendv(a->id, a, s, 2, IBV_SEND_SIGNALED));
	rdma_comp(a, IBV_WC_SEND, "rdma_post_sendv");

	hx_stage("receive of the vector send");
	n = rdma_get_recv_comp(b->id, &wc);
	if (n != 1 || wc.status != IBV_WC_SUCCESS)
		hx_fail("%s: vector receive: %d, %s", b->who, n,
			n == 1 ? ibv_wc_status_str(wc.status)
			       : strerror(errno));
	CHECK(wc.wr_id == (uintptr_t)b, "%s: vector receive wr_id", b->who);
	CHECK(wc.byte_len == sizeof(p1) - 1 + sizeof(p2),
	      "%s: vector receive of %u bytes", b->who, wc.byte_len);
	CHECK(!memcmp(b->rbuf, p1, sizeof(p1) - 1) &&
		      !memcmp(b->rbuf + 128, p2, sizeof(p2)),
	      "%s: vector receive scattered \"%.*s\" + \"%.*s\"", b->who,
	      (int)sizeof(p1) - 1, b->rbuf, (int)sizeof(p2), b->rbuf + 128);
}

/*
 * RDMA WRITE gathering two pieces, RDMA READ scattering into two (into one
 * where the device reads into a single buffer only).
 */
static void vec_rdma(struct end *a, struct end *b)
{
	static const char w1[] = "gathered ", w2[] = "write";
	struct ibv_device_attr dev;
	struct ibv_sge sg[2];

	memset(b->wbuf, 0, sizeof(b->wbuf));
	memcpy(a->sbuf, w1, sizeof(w1) - 1);
	memcpy(a->sbuf + 64, w2, sizeof(w2));
	sge_pair(sg, a->sbuf, a->smr->lkey, sizeof(w1) - 1, 64, sizeof(w2));
	hx_stage("rdma_post_writev");
	CHECK_OK(rdma_post_writev(a->id, a, sg, 2, IBV_SEND_SIGNALED,
				  (uintptr_t)b->wbuf, b->wmr->rkey));
	rdma_comp(a, IBV_WC_RDMA_WRITE, "rdma_post_writev");
	CHECK(!strcmp(b->wbuf, "gathered write"),
	      "%s: gathered RDMA WRITE left \"%s\"", b->who, b->wbuf);

	snprintf(b->rdbuf, sizeof(b->rdbuf), "0123456789abcdef");
	memset(a->lbuf, 0, sizeof(a->lbuf));
	/* iWARP's read sink is one buffer (siw: max_sge_rd 1). */
	CHECK(!ibv_query_device(a->id->verbs, &dev), "ibv_query_device");
	if (dev.max_sge_rd < 2) {
		sg[0].addr = (uintptr_t)a->lbuf;
		sg[0].length = 17;
		sg[0].lkey = a->lmr->lkey;
		hx_stage("rdma_post_readv (one SGE)");
		CHECK_OK(rdma_post_readv(a->id, a, sg, 1, IBV_SEND_SIGNALED,
					 (uintptr_t)b->rdbuf, b->rdmr->rkey));
		rdma_comp(a, IBV_WC_RDMA_READ, "rdma_post_readv");
		CHECK(!strcmp(a->lbuf, b->rdbuf),
		      "%s: RDMA READ brought \"%s\", want \"%s\"", a->who,
		      a->lbuf, b->rdbuf);
		return;
	}
	sge_pair(sg, a->lbuf, a->lmr->lkey, 6, 32, 11);
	hx_stage("rdma_post_readv");
	CHECK_OK(rdma_post_readv(a->id, a, sg, 2, IBV_SEND_SIGNALED,
				 (uintptr_t)b->rdbuf, b->rdmr->rkey));
	rdma_comp(a, IBV_WC_RDMA_READ, "rdma_post_readv");
	CHECK(!memcmp(a->lbuf, "012345", 6) &&
		      !strcmp(a->lbuf + 32, "6789abcdef"),
	      "%s: scattered RDMA READ brought \"%.6s\" + \"%s\"", a->who,
	      a->lbuf, a->lbuf + 32);
}

/*
 * rdma_notify(COMM_EST) tells the CM that the QP saw traffic before the
 * ESTABLISHED event.  Once established the kernel answers EISCONN; a
 * listener has nothing to establish: EINVAL (Linux 6.1, both libraries).
 * On iWARP the kernel accepts and ignores it.
 * (A NULL id is id_test's: rdma-core's library crashes on it.)
 */
static void notify_checks(struct rc_pair *p)
{
	int r;

	hx_stage("rdma_notify");
	if (is_iwarp(p->srv.id)) {
		/* The iWARP CM has nothing to be told: the kernel says 0. */
		CHECK_OK(rdma_notify(p->srv.id, IBV_EVENT_COMM_EST));
		return;
	}
	errno = 0;
	r = rdma_notify(p->srv.id, IBV_EVENT_COMM_EST);
	CHECK(r == -1 && errno == EISCONN,
	      "rdma_notify(COMM_EST) on a connected id: %d, %s, want EISCONN",
	      r, strerror(errno));
	/* A listener has no connection to establish. */
	errno = 0;
	r = rdma_notify(p->listen, IBV_EVENT_COMM_EST);
	CHECK(r == -1 && errno == EINVAL,
	      "rdma_notify on the listener: %d, %s, want EINVAL", r,
	      strerror(errno));
	hx_expect_quiet(p->sch, 100, "server after rdma_notify");
}

/* Disconnect without the flush check: SRQ receives are not flushed. */
static void srq_teardown(struct rc_pair *p)
{
	struct end *ends[2] = {&p->cli, &p->srv};
	int i;

	CHECK_OK(rdma_disconnect(p->cli.id));
	hx_expect_ack(p->sch, RDMA_CM_EVENT_DISCONNECTED, p->srv.id, "server");
	CHECK_OK(rdma_disconnect(p->srv.id));
	hx_expect_ack(p->cch, RDMA_CM_EVENT_DISCONNECTED, p->cli.id, "client");
	for (i = 0; i < 2; i++) {
		hx_stage("rdma_destroy_qp, rdma_destroy_srq");
		dereg_bufs(ends[i]);
		rdma_destroy_qp(ends[i]->id);
		rdma_destroy_srq(ends[i]->id);
		CHECK(!ends[i]->id->srq,
		      "%s: id->srq set after rdma_destroy_srq", ends[i]->who);
		CHECK_OK(rdma_destroy_id(ends[i]->id));
		ends[i]->id = NULL;
	}
	rc_teardown(p);
}

int cmd_srq(int argc, char **argv)
{
	const char *src = argc > 2 ? argv[2] : NULL;
	struct rc_pair p;

	rc_setup(&p, argv[1]);
	p.make_qp = srq_make_qp;
	rc_connect(&p, argv[1], src, false);
	/*
	 * Each end has one single-SGE receive in its SRQ: a plain message
	 * uses it up, so the vector message lands in the vector receive.
	 */
	send_msg(&p.cli, "through the server's SRQ");
	recv_msg(&p.srv, "through the server's SRQ", 0);
	vec_message(&p.cli, &p.srv);
	send_msg(&p.srv, "through the client's SRQ");
	recv_msg(&p.cli, "through the client's SRQ", 0);
	vec_message(&p.srv, &p.cli);
	vec_rdma(&p.cli, &p.srv);
	vec_rdma(&p.srv, &p.cli);
	notify_checks(&p);
	srq_teardown(&p);
	return 0;
}
