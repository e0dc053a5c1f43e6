// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * threads8 ADDR [ROUNDS]: 8 threads, each with its own channel, listener,
 * ids, QPs and CQs, run ROUNDS (default 20) connect / accept / one message
 * / teardown rounds at once.  The teardown varies: the client disconnects,
 * the server disconnects, or the client destroys its connected id without
 * disconnecting (the server must still see DISCONNECTED).  Every event is
 * awaited with a bound: a missing one fails as lost.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rdma/rdma_verbs.h>

#include "harness.h"
#include "stress_cm.h"

#define T8_THREADS 8

/* rdma-core's entry points: the scenario runs on its library too. */
__asm__(".symver rdma_connect, rdma_connect@RDMACM_1.0");
__asm__(".symver rdma_accept, rdma_accept@RDMACM_1.0");

struct t8 {
	pthread_t thread;
	int idx;
	int rounds;
	const char *addr;
};

/* One completion on @cq within LOST_MS, which must be a success. */
static void t8_poll(struct ibv_cq *cq, const char *what)
{
	uint64_t end = now_ns() + (uint64_t)LOST_MS * 1000000ull;
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && now_ns() < end)
		sched_yield();
	if (n != 1)
		hx_fail("%s: no completion (%d)", what, n);
	if (wc.status != IBV_WC_SUCCESS)
		hx_fail("%s: %s", what, ibv_wc_status_str(wc.status));
}

/* Both ids' ESTABLISHED, in either order. */
static void t8_established(struct rdma_event_channel *ch, struct rdma_cm_id *cl,
			   struct rdma_cm_id *sv)
{
	bool got_cl = false, got_sv = false;
	struct rdma_cm_event *e;

	while (!got_cl || !got_sv) {
		e = must_event(ch, "ESTABLISHED");
		if (e->event != RDMA_CM_EVENT_ESTABLISHED ||
		    (e->id != cl && e->id != sv))
			hx_fail("want ESTABLISHED, got %s status %d",
				rdma_event_str(e->event), e->status);
		if (e->id == cl)
			got_cl = true;
		else
			got_sv = true;
		rdma_ack_cm_event(e);
	}
}

/*
 * DISCONNECTED on each of @a and @b (NULL: not expected); @answer, the
 * end that did not disconnect first, disconnects in turn.
 */
static void t8_disconnected(struct rdma_event_channel *ch, struct rdma_cm_id *a,
			    struct rdma_cm_id *b, struct rdma_cm_id *answer,
			    const char *round)
{
	int want = (a != NULL) + (b != NULL);
	struct rdma_cm_event *e;
	char what[96];

	while (want) {
		snprintf(what, sizeof(what), "%s: DISCONNECTED %d of %d", round,
			 (a != NULL) + (b != NULL) - want + 1,
			 (a != NULL) + (b != NULL));
		e = must_event(ch, what);
		if (e->event != RDMA_CM_EVENT_DISCONNECTED ||
		    (e->id != a && e->id != b))
			hx_fail("want DISCONNECTED, got %s status %d",
				rdma_event_str(e->event), e->status);
		/* The peer's DREQ waits for our answer (the DREP). */
		if (e->id == answer)
			rdma_disconnect(answer);
		want--;
		rdma_ack_cm_event(e);
	}
}

/* One message from @cl to the peer, which posted @rbuf; checked. */
static void t8_message(struct rdma_cm_id *cl, struct ibv_cq *ccq,
		       struct ibv_cq *scq, const char *rbuf, const char *text)
{
	char sbuf[32];
	struct ibv_mr *smr;

	snprintf(sbuf, sizeof(sbuf), "%s", text);
	smr = rdma_reg_msgs(cl, sbuf, sizeof(sbuf));
	if (!smr)
		hx_fail("rdma_reg_msgs: %s", strerror(errno));
	if (rdma_post_send(cl, NULL, sbuf, sizeof(sbuf), smr,
			   IBV_SEND_SIGNALED))
		hx_fail("rdma_post_send: %s", strerror(errno));
	t8_poll(ccq, "send");
	t8_poll(scq, "receive");
	if (strcmp(rbuf, text))
		hx_fail("received '%.32s', sent '%s'", rbuf, text);
	rdma_dereg_mr(smr);
}

static void t8_round(struct rdma_event_channel *ch, struct rdma_cm_id *ls,
		     const struct t8 *t, int round)
{
	struct sockaddr_storage dst;
	struct rdma_conn_param p;
	struct ibv_cq *ccq, *scq;
	struct rdma_cm_id *cl, *sv;
	struct rdma_cm_event *e;
	char text[32], rbuf[32];
	struct ibv_mr *rmr;

	snprintf(text, sizeof(text), "t%d r%d/%d", t->idx, round, round % 3);
	cl = new_id(ch, NULL);
	resolve(ch, cl, NULL,
		sa_port(t->addr, ntohs(rdma_get_src_port(ls)), &dst));
	ccq = make_qp(cl);
	p = conn_param(text, (uint8_t)(strlen(text) + 1), 0);
	if (rdma_connect(cl, &p))
		hx_fail("rdma_connect: %s", strerror(errno));
	e = must_event(ch, "CONNECT_REQUEST");
	if (e->event != RDMA_CM_EVENT_CONNECT_REQUEST || e->listen_id != ls)
		hx_fail("want CONNECT_REQUEST, got %s status %d",
			rdma_event_str(e->event), e->status);
	if (e->param.conn.private_data_len < strlen(text) + 1 ||
	    strcmp(e->param.conn.private_data, text))
		hx_fail("request's private data is not '%s'", text);
	sv = e->id;
	rdma_ack_cm_event(e);
	scq = make_qp(sv);
	memset(rbuf, 0, sizeof(rbuf));
	rmr = rdma_reg_msgs(sv, rbuf, sizeof(rbuf));
	if (!rmr || rdma_post_recv(sv, NULL, rbuf, sizeof(rbuf), rmr))
		hx_fail("receive buffer: %s", strerror(errno));
	p = conn_param(NULL, 0, 0);
	if (rdma_accept(sv, &p))
		hx_fail("rdma_accept: %s", strerror(errno));
	t8_established(ch, cl, sv);
	t8_message(cl, ccq, scq, rbuf, text);
	switch (round % 3) {
	case 0:
		rdma_disconnect(cl);
		t8_disconnected(ch, cl, sv, sv, text);
		break;
	case 1:
		rdma_disconnect(sv);
		t8_disconnected(ch, cl, sv, cl, text);
		break;
	default: /* gone without a word: the server still hears of it */
		drop_id(cl, ccq);
		cl = NULL;
		t8_disconnected(ch, sv, NULL, NULL, text);
		break;
	}
	rdma_dereg_mr(rmr);
	if (cl)
		drop_id(cl, ccq);
	drop_id(sv, scq);
}

static void *t8_main(void *arg)
{
	struct t8 *t = arg;
	struct rdma_event_channel *ch = channel(false);
	struct sockaddr_storage ss;
	struct rdma_cm_id *ls;
	int r;

	ls = listen_on(ch, sa_port(t->addr, 0, &ss), -1, 8);
	for (r = 0; r < t->rounds; r++)
		t8_round(ch, ls, t, r);
	drop_id(ls, NULL);
	hx_expect_no_event(ch);
	rdma_destroy_event_channel(ch);
	return NULL;
}

int run_threads8(int argc, char **argv)
{
	struct t8 t[T8_THREADS];
	uint64_t t0 = now_ns();
	int i, rounds;

	if (argc < 2)
		hx_fail("usage: threads8 ADDR [ROUNDS]");
	rounds = arg_int(argc, argv, 2, 20, 1, 100000);
	hx_stage("%d threads x %d rounds", T8_THREADS, rounds);
	for (i = 0; i < T8_THREADS; i++) {
		t[i].idx = i;
		t[i].rounds = rounds;
		t[i].addr = argv[1];
		start_thread(&t[i].thread, t8_main, &t[i]);
	}
	for (i = 0; i < T8_THREADS; i++)
		pthread_join(t[i].thread, NULL);
	hx_note("%d threads x %d connections in %.1f s", T8_THREADS, rounds,
		(double)(now_ns() - t0) / 1e9);
	return 0;
}
