// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for the id life cycle (src/cm/id.c, src/cm/channel.c): destroy and
 * migrate while events are in flight, and synchronous ids, against the
 * fake kernel (fake_ucma); and the refusal of NULL ids and bad port spaces
 * by every public call.  Where a call must wait for another thread, the
 * test runs it in a thread of its own and plays the other thread itself.
 */
#include <config.h>

#include <check.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm/cma.h"
#include "fake_ucma.h"
#include "unit.h"

static struct rdma_event_channel *ch;

static void setup(void)
{
	fake_ucma_install();
	ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(ch);
}

static void teardown(void)
{
	rdma_destroy_event_channel(ch);
	fake_ucma_uninstall();
}

static uint32_t handle_of(struct rdma_cm_id *id)
{
	return cma_id_priv(id)->handle;
}

static void push(struct rdma_cm_id *id, enum rdma_cm_event_type type)
{
	ck_assert_ptr_nonnull(fake_ucma_event(handle_of(id), type, 0));
}

/* Wait (bounded) until the library has sent a command of this kind. */
static void wait_for_cmd(uint32_t cmd, int count)
{
	int i;

	for (i = 0; i < 10000 && fake_ucma_count(cmd) < count; i++)
		usleep(1000);
	ck_assert_int_ge(fake_ucma_count(cmd), count);
}

struct call {
	pthread_t thread;
	struct rdma_cm_id *id;
	struct rdma_event_channel *to;
	int ret;
	atomic_bool done;
};

static void *destroy_thread(void *arg)
{
	struct call *c = arg;

	c->ret = rdma_destroy_id(c->id);
	atomic_store(&c->done, true);
	return NULL;
}

static void *migrate_thread(void *arg)
{
	struct call *c = arg;

	c->ret = rdma_migrate_id(c->id, c->to);
	atomic_store(&c->done, true);
	return NULL;
}

/* rdma_destroy_id(3): it blocks until every event of the id is acked. */
START_TEST(destroy_waits_for_the_unacked_event)
{
	struct call c = {0};
	struct rdma_cm_event *ev;

	ck_assert_int_eq(rdma_create_id(ch, &c.id, NULL, RDMA_PS_TCP), 0);
	push(c.id, RDMA_CM_EVENT_ADDR_ERROR);
	ck_assert_int_eq(rdma_get_cm_event(ch, &ev), 0);
	ck_assert_int_eq(pthread_create(&c.thread, NULL, destroy_thread, &c),
			 0);
	wait_for_cmd(RDMA_USER_CM_CMD_DESTROY_ID, 1);
	ck_assert(!atomic_load(&c.done)); /* still holding for the ack */
	ck_assert_ptr_eq(ev->id, c.id); /* and the event's id is alive */
	rdma_ack_cm_event(ev);
	pthread_join(c.thread, NULL);
	ck_assert_int_eq(c.ret, 0);
}
END_TEST

/* Events not yet read go with the id: nothing to wait for, no leak. */
START_TEST(destroy_drops_unread_events)
{
	struct rdma_cm_id *id;

	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	push(id, RDMA_CM_EVENT_ADDR_ERROR);
	ck_assert_int_eq(rdma_write_cm_event(id, RDMA_CM_EVENT_USER, 0, 1), 0);
	ck_assert(unit_readable(ch->fd));
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	ck_assert(!unit_readable(ch->fd));
	ck_assert_int_eq(fake_ucma_queued(cma_channel_kernel_fd(ch)), 0);
}
END_TEST

START_TEST(destroy_and_migrate_refuse_null)
{
	ck_assert_int_eq(rdma_destroy_id(NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rdma_migrate_id(NULL, ch), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* The unread event moves to the new channel, whose fd wakes for it. */
START_TEST(migrate_moves_unread_events)
{
	struct rdma_event_channel *to = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	ck_assert_ptr_nonnull(to);
	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	push(id, RDMA_CM_EVENT_ADDR_ERROR);
	push(id, RDMA_CM_EVENT_ROUTE_ERROR);
	ck_assert_int_eq(rdma_get_cm_event(ch, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_ADDR_ERROR);
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(rdma_migrate_id(id, to), 0);
	ck_assert_ptr_eq(id->channel, to);
	ck_assert(!unit_readable(ch->fd));
	ck_assert(unit_readable(to->fd));
	ck_assert_int_eq(rdma_get_cm_event(to, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_ROUTE_ERROR);
	ck_assert_ptr_eq(ev->id, id);
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(to);
}
END_TEST

/* rdma_migrate_id(3) waits for the acks of events already read. */
START_TEST(migrate_waits_for_the_unacked_event)
{
	struct rdma_event_channel *to = rdma_create_event_channel();
	struct call c = {.to = to};
	struct rdma_cm_event *ev;

	ck_assert_int_eq(rdma_create_id(ch, &c.id, NULL, RDMA_PS_TCP), 0);
	push(c.id, RDMA_CM_EVENT_ADDR_ERROR);
	ck_assert_int_eq(rdma_get_cm_event(ch, &ev), 0);
	ck_assert_int_eq(pthread_create(&c.thread, NULL, migrate_thread, &c),
			 0);
	wait_for_cmd(RDMA_USER_CM_CMD_MIGRATE_ID, 1);
	ck_assert(!atomic_load(&c.done));
	rdma_ack_cm_event(ev);
	pthread_join(c.thread, NULL);
	ck_assert_int_eq(c.ret, 0);
	ck_assert_ptr_eq(c.id->channel, to);
	ck_assert_int_eq(rdma_destroy_id(c.id), 0);
	rdma_destroy_event_channel(to);
}
END_TEST

static void *answer_resolve(void *arg)
{
	struct rdma_cm_id **id = arg;

	wait_for_cmd(RDMA_USER_CM_CMD_RESOLVE_ADDR, 1);
	fake_ucma_event(handle_of(*id), RDMA_CM_EVENT_ADDR_ERROR,
			-EHOSTUNREACH);
	return NULL;
}

/*
 * A synchronous id (no channel): the call blocks for its own event, fails
 * with the event's status, and the event stays in id->event until the next
 * call on the id.
 */
START_TEST(synchronous_call_waits_for_its_event)
{
	struct sockaddr_in dst = {.sin_family = AF_INET};
	struct rdma_cm_id *id;
	pthread_t t;

	ck_assert_int_eq(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	ck_assert_ptr_nonnull(id->channel);
	ck_assert_int_eq(pthread_create(&t, NULL, answer_resolve, &id), 0);
	ck_assert_int_eq(
		rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 100), -1);
	ck_assert_int_eq(errno, EHOSTUNREACH);
	pthread_join(t, NULL);
	ck_assert_ptr_nonnull(id->event);
	ck_assert_int_eq(id->event->event, RDMA_CM_EVENT_ADDR_ERROR);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/*
 * Device binding (cma_id_set_device) with stand-in devices whose context
 * and shared PD exist already, so no libibverbs call is made: programs
 * written for rdma-core make QPs, MRs and AHs on id->pd right after route
 * resolution or on a request's id, without rdma_create_qp.
 */
static struct cma_device dev_a, dev_b;
/* Only their addresses are used: the library never looks inside here. */
static char ctx_a, ctx_b, pd_a, pd_b, user_pd, user_qp;
static struct cma_id_private *bound;

static void binding_setup(void)
{
	setup();
	memset(&dev_a, 0, sizeof(dev_a));
	dev_a.verbs = (struct ibv_context *)&ctx_a;
	dev_a.pd = (struct ibv_pd *)&pd_a;
	dev_b = dev_a;
	dev_b.verbs = (struct ibv_context *)&ctx_b;
	dev_b.pd = (struct ibv_pd *)&pd_b;
	bound = cma_id_alloc(ch, NULL, RDMA_PS_TCP, IBV_QPT_RC);
	ck_assert_ptr_nonnull(bound);
}

static void binding_teardown(void)
{
	cma_id_set_device(bound, NULL);
	cma_id_free(bound);
	teardown();
}

/* A reference, as cma_device_get_by_guid hands out. */
static struct cma_device *get(struct cma_device *dev)
{
	dev->refcnt++;
	return dev;
}

START_TEST(a_bound_id_has_the_devices_shared_pd)
{
	ck_assert_ptr_null(bound->id.pd);
	ck_assert_int_eq(cma_id_set_device(bound, get(&dev_a)), 0);
	ck_assert_ptr_eq(bound->id.verbs, dev_a.verbs);
	ck_assert_ptr_eq(bound->id.pd, dev_a.pd);
	ck_assert_int_eq(dev_a.refcnt, 1);
	/* Bound again to the same device (route after address): no change. */
	ck_assert_int_eq(cma_id_set_device(bound, get(&dev_a)), 0);
	ck_assert_ptr_eq(bound->id.pd, dev_a.pd);
	ck_assert_int_eq(dev_a.refcnt, 1);
}
END_TEST

START_TEST(a_new_device_brings_its_own_pd)
{
	ck_assert_int_eq(cma_id_set_device(bound, get(&dev_a)), 0);
	ck_assert_int_eq(cma_id_set_device(bound, get(&dev_b)), 0);
	ck_assert_ptr_eq(bound->id.verbs, dev_b.verbs);
	ck_assert_ptr_eq(bound->id.pd, dev_b.pd);
	ck_assert_int_eq(dev_a.refcnt, 0);
	ck_assert_int_eq(dev_b.refcnt, 1);
}
END_TEST

/* A QP or SRQ made on the caller's PD: id->pd names that PD and stays. */
START_TEST(a_pd_in_use_is_kept)
{
	ck_assert_int_eq(cma_id_set_device(bound, get(&dev_a)), 0);
	bound->id.pd = (struct ibv_pd *)&user_pd;
	bound->id.qp = (struct ibv_qp *)&user_qp;
	ck_assert_int_eq(cma_id_set_device(bound, get(&dev_b)), 0);
	ck_assert_ptr_eq(bound->id.pd, (struct ibv_pd *)&user_pd);
	bound->id.qp = NULL;
}
END_TEST

START_TEST(unbinding_clears_verbs_and_pd)
{
	ck_assert_int_eq(cma_id_set_device(bound, get(&dev_a)), 0);
	ck_assert_int_eq(cma_id_set_device(bound, NULL), 0);
	ck_assert_ptr_null(bound->id.verbs);
	ck_assert_ptr_null(bound->id.pd);
	ck_assert_int_eq(dev_a.refcnt, 0);
}
END_TEST

/* Every public call refuses NULL arguments with EINVAL and no crash. */
START_TEST(null_arguments_are_refused)
{
	struct rdma_cm_event *ev;
	struct sockaddr_in sin = {.sin_family = AF_INET};

	ck_assert_int_eq(rdma_create_id(NULL, NULL, NULL, RDMA_PS_TCP), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rdma_destroy_id(NULL), -1);
	ck_assert_int_eq(rdma_bind_addr(NULL, (struct sockaddr *)&sin), -1);
	ck_assert_int_eq(
		rdma_resolve_addr(NULL, NULL, (struct sockaddr *)&sin, 10), -1);
	ck_assert_int_eq(rdma_resolve_route(NULL, 10), -1);
	ck_assert_int_eq(rdma_connect(NULL, NULL), -1);
	ck_assert_int_eq(rdma_listen(NULL, 1), -1);
	ck_assert_int_eq(rdma_accept(NULL, NULL), -1);
	ck_assert_int_eq(rdma_reject(NULL, NULL, 0), -1);
	ck_assert_int_eq(rdma_disconnect(NULL), -1);
	ck_assert_int_eq(rdma_notify(NULL, IBV_EVENT_COMM_EST), -1);
	ck_assert_int_eq(rdma_get_cm_event(NULL, &ev), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rdma_ack_cm_event(NULL), -1);
	ck_assert_int_eq(rdma_set_option(NULL, 0, 0, NULL, 0), -1);
	ck_assert_int_eq(rdma_migrate_id(NULL, NULL), -1);
	ck_assert_int_eq(rdma_join_multicast(NULL, NULL, NULL), -1);
	ck_assert_int_eq(rdma_leave_multicast(NULL, NULL), -1);
	ck_assert_int_eq(rdma_create_qp(NULL, NULL, NULL), -1);
	ck_assert_int_eq(rdma_establish(NULL), -1);
	ck_assert_int_eq(rdma_init_qp_attr(NULL, NULL, NULL), -1);
	ck_assert_int_eq(rdma_set_local_ece(NULL, NULL), -1);
	ck_assert_int_eq(rdma_get_remote_ece(NULL, NULL), -1);
	ck_assert_int_eq(rdma_get_request(NULL, NULL), -1);
	ck_assert_int_eq(rdma_write_cm_event(NULL, RDMA_CM_EVENT_USER, 0, 0),
			 -1);
	errno = 0;
	ck_assert_uint_eq(rdma_get_src_port(NULL), 0);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_uint_eq(rdma_get_dst_port(NULL), 0);
	ck_assert_int_eq(errno, EINVAL);
	rdma_destroy_qp(NULL);
	rdma_destroy_srq(NULL);
	rdma_destroy_event_channel(NULL);
	rdma_free_devices(NULL);
}
END_TEST

START_TEST(bad_port_space_is_refused)
{
	struct rdma_cm_id *id = NULL;

	ck_assert_int_eq(
		rdma_create_id(NULL, &id, NULL, (enum rdma_port_space)0x7777),
		-1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(id);
}
END_TEST

Suite *id_suite(void)
{
	Suite *s = suite_create("id");
	TCase *tc = tcase_create("life cycle");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, destroy_waits_for_the_unacked_event);
	tcase_add_test(tc, destroy_drops_unread_events);
	tcase_add_test(tc, destroy_and_migrate_refuse_null);
	tcase_add_test(tc, migrate_moves_unread_events);
	tcase_add_test(tc, migrate_waits_for_the_unacked_event);
	tcase_add_test(tc, synchronous_call_waits_for_its_event);
	suite_add_tcase(s, tc);
	tc = tcase_create("device binding");
	tcase_add_checked_fixture(tc, binding_setup, binding_teardown);
	tcase_add_test(tc, a_bound_id_has_the_devices_shared_pd);
	tcase_add_test(tc, a_new_device_brings_its_own_pd);
	tcase_add_test(tc, a_pd_in_use_is_kept);
	tcase_add_test(tc, unbinding_clears_verbs_and_pd);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad input");
	tcase_add_test(tc, null_arguments_are_refused);
	tcase_add_test(tc, bad_port_space_is_refused);
	suite_add_tcase(s, tc);
	return s;
}
