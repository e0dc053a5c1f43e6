// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rdma_destroy_id against an event of the id that another thread is
 * translating: the library's service thread has read a p2p connect's
 * kernel event and waits (here at the id's qp_lock, which the test holds)
 * to hand it to the p2p filter, which reads the connect's p2p record.
 * The destroy may destroy the kernel id and detach the record, but must
 * wait for that event before it frees the record: freed first (as
 * rdma_destroy_id once did), the filter read freed memory, or found the
 * record gone and delivered a p2p event as a plain one.  Likewise the
 * listener's timer: its expire() running, the destroy waits for it.
 *
 * The kernel is the fake one (fake_ucma); the channel holds a p2p
 * listener, so the library's service thread reads it (src/cm/channel.c).
 */
#include <config.h>

#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm/cma.h"
#include "cm/test_hooks.h"
#include "p2p/p2p_hooks.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "p2p/p2p_table.h"
#include "unit.h"

#define PORT 7471

static struct rdma_event_channel *ch;
static struct rdma_cm_id *listener;

static void setup(void)
{
	struct sockaddr_in me = unit_ipv4("192.0.2.1", PORT);
	int on = 1;

	fake_ucma_install();
	fake_verbs_install(true);
	ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(ch);
	ck_assert_int_eq(rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_set_option(listener, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_PEER2PEER, &on,
					 sizeof(on)),
			 0);
	ck_assert_int_eq(rdma_bind_addr(listener, (struct sockaddr *)&me), 0);
	ck_assert_int_eq(rdma_listen(listener, 8), 0);
	ck_assert(cma_channel_served(ch));
}

static void teardown(void)
{
	struct fake_verbs_counts c;

	if (listener)
		ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
	c = fake_verbs_counts();
	ck_assert_int_eq(c.qps, 0);
	ck_assert_int_eq(c.cqs, 0);
	ck_assert_int_eq(c.channels, 0);
	fake_ucma_uninstall();
}

/* An id from this host's address to @to, resolved as a program sees it. */
static struct rdma_cm_id *connecting_id(struct sockaddr_in *to)
{
	struct sockaddr_in me = unit_ipv4("192.0.2.1", 0);
	struct rdma_cm_id *id;
	uint32_t kid;

	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_resolve_addr(id, (struct sockaddr *)&me,
					   (struct sockaddr *)to, 2000),
			 0);
	kid = fake_ucma_kid_of(id)->handle;
	fake_ucma_event(kid, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	rdma_ack_cm_event(unit_expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	ck_assert_int_eq(rdma_resolve_route(id, 2000), 0);
	fake_ucma_event(kid, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	rdma_ack_cm_event(unit_expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	return id;
}

static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static bool destroy_done;

static void *destroyer(void *arg)
{
	intptr_t ret = rdma_destroy_id(arg);

	pthread_mutex_lock(&done_lock);
	destroy_done = true;
	pthread_mutex_unlock(&done_lock);
	return (void *)ret;
}

static bool destroyed(void)
{
	bool done;

	pthread_mutex_lock(&done_lock);
	done = destroy_done;
	pthread_mutex_unlock(&done_lock);
	return done;
}

START_TEST(p2p_record_outlives_an_event_in_flight)
{
	struct sockaddr_in peer = unit_ipv4("192.0.2.2", PORT);
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);
	struct rdma_conn_param param = {.responder_resources = 1,
					.initiator_depth = 1,
					.peer2peer_mode = 1};
	struct rdma_cm_id held;
	struct cma_id_private *id_priv;
	struct rdma_cm_id *id;
	uint32_t kid;
	pthread_t t;
	void *ret;

	id = connecting_id(&peer);
	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), 0);
	/*
	 * rdma_destroy_qp takes the id's qp_lock, which the test holds while
	 * the id is destroyed: its QP and CQs are freed after, as the
	 * library would.
	 */
	held = *id;
	ck_assert_msg(!rdma_connect(id, &param), "connect: %s",
		      strerror(errno));
	id_priv = cma_id_priv(id);
	ck_assert_ptr_nonnull(cma_p2p_conn_of(id_priv));
	kid = fake_ucma_kid_of(id)->handle;

	/* The service thread reads the peer's answer, then waits for us. */
	pthread_mutex_lock(&id_priv->qp_lock);
	ck_assert_ptr_nonnull(
		fake_ucma_event(kid, RDMA_CM_EVENT_CONNECT_RESPONSE, 0));
	while (fake_ucma_queued(cma_channel_kernel_fd(ch)))
		sched_yield();
	ck_assert_int_eq(pthread_create(&t, NULL, destroyer, id), 0);
	/* The kernel id goes at once; the destroy then waits for the event. */
	ck_assert(!fake_ucma_kid_live(kid, 10000));
	usleep(50 * 1000);
	ck_assert(!destroyed());
	ck_assert_msg(cma_p2p_conn_of(id_priv) != NULL,
		      "the p2p record went while its event was in flight");
	pthread_mutex_unlock(&id_priv->qp_lock);
	ck_assert_int_eq(pthread_join(t, &ret), 0);
	ck_assert_ptr_null(ret);
	cma_service_settle();
	ck_assert_int_eq(ibv_destroy_qp(held.qp), 0);
	ck_assert_int_eq(ibv_destroy_cq(held.send_cq), 0);
	ck_assert_int_eq(ibv_destroy_cq(held.recv_cq), 0);
	ck_assert_int_eq(ibv_destroy_comp_channel(held.send_cq_channel), 0);
	if (held.recv_cq_channel != held.send_cq_channel)
		ck_assert_int_eq(ibv_destroy_comp_channel(held.recv_cq_channel),
				 0);
}
END_TEST

/*
 * The p2p listener's timer (the one that surfaces or drops held requests)
 * is due: the service thread runs its expire() with no lock held, and
 * rdma_destroy_id of the listener meanwhile must wait for it before it
 * frees the timer's owner, the listener's p2p record.  Freed first (as
 * rdma_destroy_id once did), the destroy returned at once and the service
 * thread then marked the timer done inside freed memory.  The expire()
 * here is the test's, held until the test lets it go.
 */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool in_expire, let_go;

static void held_expire(struct cma_timer *timer)
{
	(void)timer;
	pthread_mutex_lock(&gate_lock);
	in_expire = true;
	pthread_cond_broadcast(&gate_cond);
	while (!let_go)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}

START_TEST(p2p_listener_outlives_its_running_timer)
{
	struct cma_p2p_listener *lis;
	pthread_t t;
	void *ret;

	destroy_done = in_expire = let_go = false; /* also without fork */
	cma_p2p_lock();
	lis = cma_p2p_find_listener(cma_id_priv(listener));
	ck_assert_ptr_nonnull(lis);
	lis->timer.expire = held_expire;
	cma_p2p_unlock();
	cma_timer_start(ch, &lis->timer, 0);
	pthread_mutex_lock(&gate_lock);
	while (!in_expire)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);

	ck_assert_int_eq(pthread_create(&t, NULL, destroyer, listener), 0);
	/*
	 * A destroy that does not wait returns at once: give it the chance
	 * (a correct one cannot return before let_go, so how long this
	 * waits only decides how surely a broken one is caught).
	 */
	usleep(200 * 1000);
	ck_assert_msg(
		!destroyed(),
		"rdma_destroy_id returned while the listener's timer ran");
	pthread_mutex_lock(&gate_lock);
	let_go = true;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
	ck_assert_int_eq(pthread_join(t, &ret), 0);
	ck_assert_ptr_null(ret);
	listener = NULL; /* destroyed: not again in the teardown */
}
END_TEST

Suite *destroy_inflight_suite(void)
{
	Suite *s = suite_create("destroy_inflight");
	TCase *tc = tcase_create("destroy");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, p2p_record_outlives_an_event_in_flight);
	tcase_add_test(tc, p2p_listener_outlives_its_running_timer);
	suite_add_tcase(s, tc);
	return s;
}
