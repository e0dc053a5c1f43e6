// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for served channels (src/cm/channel.c, src/cm/timer.c, src/cm/event.c):
 * an application channel with an RC listener is read by the library's
 * service thread, so that its fd is readable only when rdma_get_cm_event
 * has an event to return (rdma-core's contract), also when a peer's p2p
 * request is held or refused by the library.  The test is the program
 * that polls: poll(2) on channel->fd, then a blocking rdma_get_cm_event.
 * Destroy, migrate, group leave and channel destroy with events the
 * thread read and the application never received must not wait for them.
 *
 * This process is 192.0.2.1, listening on port 7471; it connects to
 * 192.0.2.2, and p2p requests come from 192.0.2.0 (a lower identity,
 * whose requests are held, rdma_cm_p2p(7)).  The kernel is the fake one (fake_ucma), whose fds are
 * readable exactly while an event is queued, as the kernel's are.
 */
#include <config.h>

#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"
#include "cm/test_hooks.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "p2p/p2p_wire.h"
#include "unit.h"
/* ch, listener, kid_of and the scripted peer's connecting_id */
#include "p2p_peer.h"

#define PORT P2P_PORT

/* A listener on @c, port @port, with RDMA_OPTION_ID_PEER2PEER @p2p (-1: unset). */
static struct rdma_cm_id *listen_on(struct rdma_event_channel *c, uint16_t port,
				    int p2p)
{
	struct sockaddr_in me = unit_ipv4("192.0.2.1", port);
	struct rdma_cm_id *id;

	ck_assert_int_eq(rdma_create_id(c, &id, NULL, RDMA_PS_TCP), 0);
	if (p2p >= 0)
		ck_assert_int_eq(rdma_set_option(id, RDMA_OPTION_ID,
						 RDMA_OPTION_ID_PEER2PEER, &p2p,
						 sizeof(p2p)),
				 0);
	ck_assert_int_eq(rdma_bind_addr(id, (struct sockaddr *)&me), 0);
	ck_assert_int_eq(rdma_listen(id, 8), 0);
	return id;
}

/* A p2p listener (the option set to 1: p2p activity), so served. */
static void setup(void)
{
	fake_ucma_install();
	fake_verbs_install(true);
	ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(ch);
	listener = listen_on(ch, PORT, 1);
	ck_assert(cma_channel_served(ch));
}

static void teardown(void)
{
	fake_ucma_uninstall();
}

/* Whether the application's fd is readable now. */
static bool readable(struct rdma_event_channel *c)
{
	struct pollfd pfd = {.fd = c->fd, .events = POLLIN};

	return poll(&pfd, 1, 0) == 1;
}

/* The program's loop: wait for the fd, then a blocking get. */
static struct rdma_cm_event *next_event(struct rdma_event_channel *c)
{
	struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	ck_assert_int_eq(poll(&pfd, 1, -1), 1);
	ck_assert_int_eq(rdma_get_cm_event(c, &ev), 0);
	return ev;
}

/* The program takes the plain request the fd announced, and drops it. */
static void reject_plain_request(struct rdma_event_channel *c)
{
	struct rdma_cm_event *ev = next_event(c);

	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	ck_assert_int_eq(rdma_destroy_id(ev->id), 0);
	ck_assert_int_eq(rdma_ack_cm_event(ev), 0);
}

/* Until the service thread has taken every event off the kernel fd. */
static void thread_has_read_all(struct rdma_event_channel *c)
{
	while (fake_ucma_queued(cma_channel_kernel_fd(c)))
		sched_yield();
	cma_service_settle();
}

/* A peer's p2p REQ the listener holds (no connect of ours matches it). */
static uint32_t held_request(uint64_t tag)
{
	struct cma_p2p_hdr hdr = {
		.kind = CMA_P2P_REQ, .port = PORT, .tag = tag, .data_len = 1};
	struct sockaddr_in peer = unit_ipv4("192.0.2.0", 40000);
	struct rdma_ucm_event_resp *r;
	uint32_t child = 0;

	fake_ucma_hold();
	r = fake_ucma_conn_req(kid_of(listener), &child);
	ck_assert_ptr_nonnull(r);
	cma_p2p_hdr_encode(&hdr, r->param.conn.private_data);
	r->param.conn.private_data[CMA_P2P_HDR_LEN] = 'x';
	r->param.conn.private_data_len = CMA_P2P_HDR_LEN + 1;
	memcpy(&fake_ucma_kid(child)->dst, &peer, sizeof(peer));
	fake_ucma_release();
	return child;
}

/* A plain request: the application's. */
static uint32_t plain_request(void)
{
	struct rdma_ucm_event_resp *r;
	uint32_t child = 0;

	fake_ucma_hold();
	r = fake_ucma_conn_req(kid_of(listener), &child);
	ck_assert_ptr_nonnull(r);
	memcpy(r->param.conn.private_data, "plain", 5);
	r->param.conn.private_data_len = 5;
	fake_ucma_release();
	return child;
}

/*
 * Another RC id on @c, as a program's connecting id would be, with the
 * kernel id its first command would make (this process declared p2p mode:
 * id.c leaves it until then), so that the tests can script its events.
 */
static struct rdma_cm_id *other_id(struct rdma_event_channel *c)
{
	struct rdma_cm_id *id;

	ck_assert_int_eq(rdma_create_id(c, &id, NULL, RDMA_PS_TCP), 0);
	ck_assert_uint_eq(cma_id_priv(id)->handle, CMA_NO_KERNEL_ID);
	ck_assert_int_eq(cma_id_kernel(cma_id_priv(id)), 0);
	return id;
}

/*
 * The bug: a held p2p request made the fd readable and the program's
 * blocking get then blocked.  Now the fd stays quiet, and the next real
 * event wakes it and is what the get returns.
 */
START_TEST(held_request_never_wakes_the_fd)
{
	uint32_t held = held_request(1);
	struct rdma_cm_event *ev;

	ck_assert(!readable(ch));
	thread_has_read_all(ch);
	ck_assert(!readable(ch));
	ck_assert(fake_ucma_kid(held)->live); /* held, not refused */

	plain_request();
	ev = next_event(ch);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	ck_assert_ptr_eq(ev->listen_id, listener);
	ck_assert_mem_eq(ev->param.conn.private_data, "plain", 5);
	ck_assert(!readable(ch));
	ck_assert_int_eq(rdma_reject(ev->id, NULL, 0), 0);
	ck_assert_int_eq(rdma_destroy_id(ev->id), 0);
	ck_assert_int_eq(rdma_ack_cm_event(ev), 0);
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	ck_assert(!fake_ucma_kid(held)->live); /* refused with the listener */
	rdma_destroy_event_channel(ch);
}
END_TEST

/* Events of other ids on the channel keep the kernel's order. */
START_TEST(events_keep_their_order)
{
	struct rdma_cm_id *id = other_id(ch);
	static const uint32_t types[] = {
		RDMA_CM_EVENT_ADDR_CHANGE,
		RDMA_CM_EVENT_TIMEWAIT_EXIT,
		RDMA_CM_EVENT_DISCONNECTED,
	};
	struct rdma_cm_event *ev;
	unsigned int i;

	fake_ucma_hold();
	for (i = 0; i < 3; i++)
		fake_ucma_event(kid_of(id), types[i], 0);
	fake_ucma_release();
	held_request(2);
	for (i = 0; i < 3; i++) {
		ev = next_event(ch);
		ck_assert_ptr_eq(ev->id, id);
		ck_assert_int_eq(ev->event, types[i]);
		rdma_ack_cm_event(ev);
	}
	thread_has_read_all(ch);
	ck_assert(!readable(ch));
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
}
END_TEST

/* A non-blocking get finds what the thread queued, else EAGAIN. */
START_TEST(nonblocking_get_sees_queued_events)
{
	struct rdma_cm_id *id = other_id(ch);
	struct rdma_cm_event *ev;
	int flags = fcntl(ch->fd, F_GETFL);

	ck_assert_int_eq(fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK), 0);
	held_request(3);
	ck_assert_int_eq(rdma_get_cm_event(ch, &ev), -1);
	ck_assert_int_eq(errno, EAGAIN);
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	/* Read by this thread or by the service thread: either way here. */
	ck_assert_int_eq(rdma_get_cm_event(ch, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_TIMEWAIT_EXIT);
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(rdma_get_cm_event(ch, &ev), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
}
END_TEST

/* Destroying an id whose event the thread queued does not wait for it. */
START_TEST(destroy_drops_a_queued_event)
{
	struct rdma_cm_id *id = other_id(ch);

	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_DISCONNECTED, 0);
	/* (the service thread may already have read it: no check here) */
	thread_has_read_all(ch);
	ck_assert(readable(ch));
	ck_assert_int_eq(rdma_destroy_id(id), 0); /* returns: not acked */
	ck_assert(!readable(ch));
	/* The channel goes on: the next event is delivered. */
	plain_request();
	reject_plain_request(ch);
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
}
END_TEST

/*
 * A queued request nobody received: destroying its listener destroys the
 * request's id too (nothing else would), as the kernel does for requests
 * still in its queue.
 */
START_TEST(destroy_of_a_listener_drops_its_queued_request)
{
	uint32_t req = plain_request();

	thread_has_read_all(ch);
	ck_assert(readable(ch));
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	ck_assert(!readable(ch));
	ck_assert(!fake_ucma_kid(req)->live);
	rdma_destroy_event_channel(ch);
}
END_TEST

static void *destroyer(void *arg)
{
	return (void *)(intptr_t)rdma_destroy_id(arg);
}

/*
 * The thread has read an event and is handling it (held up at the id's
 * qp_lock, which the test holds) when the id is destroyed: the destroy
 * waits for the thread, which then drops the event instead of queueing
 * it, and counts it acked.
 */
START_TEST(destroy_while_the_thread_handles_an_event)
{
	struct rdma_cm_id *id = other_id(ch);
	struct cma_id_private *id_priv = cma_id_priv(id);
	uint32_t kid = kid_of(id);
	pthread_t t;
	void *ret;

	pthread_mutex_lock(&id_priv->qp_lock);
	fake_ucma_event(kid, RDMA_CM_EVENT_DISCONNECTED, 0);
	while (fake_ucma_queued(cma_channel_kernel_fd(ch)))
		sched_yield(); /* read: the thread now waits for qp_lock */
	ck_assert_int_eq(pthread_create(&t, NULL, destroyer, id), 0);
	/* DESTROY_ID done (read under the fake's lock): the destroy waits. */
	ck_assert(!fake_ucma_kid_live(kid, 10000));
	pthread_mutex_unlock(&id_priv->qp_lock);
	ck_assert_int_eq(pthread_join(t, &ret), 0);
	ck_assert_ptr_null(ret);
	cma_service_settle();
	ck_assert(!readable(ch));
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
}
END_TEST

/*
 * Migrating an id whose event the thread queued: the event moves with
 * it, and the migration does not wait for its ack (nobody could give it:
 * the application never had it).
 */
START_TEST(migrate_carries_a_queued_event)
{
	struct rdma_event_channel *to = rdma_create_event_channel();
	struct rdma_cm_id *id = other_id(ch);
	struct rdma_cm_event *ev;

	ck_assert_ptr_nonnull(to);
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_DISCONNECTED, 0);
	thread_has_read_all(ch);
	ck_assert(readable(ch));
	ck_assert_int_eq(rdma_migrate_id(id, to), 0);
	ck_assert(!readable(ch));
	ck_assert(readable(to));
	ev = next_event(to);
	ck_assert_ptr_eq(ev->id, id);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_DISCONNECTED);
	rdma_ack_cm_event(ev);
	ck_assert(!readable(to));
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(to);
}
END_TEST

/* A p2p listener migrated to a new channel makes that one served too. */
START_TEST(migrated_listener_serves_its_new_channel)
{
	struct rdma_event_channel *to = rdma_create_event_channel();

	ck_assert_ptr_nonnull(to);
	ck_assert_int_eq(rdma_migrate_id(listener, to), 0);
	held_request(4);
	ck_assert(!readable(to));
	thread_has_read_all(to);
	ck_assert(!readable(to));
	plain_request();
	reject_plain_request(to);
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(to);
	rdma_destroy_event_channel(ch);
}
END_TEST

/* Channels come and go while the thread serves others. */
START_TEST(served_channels_are_destroyed_and_made_again)
{
	int i;

	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
	for (i = 0; i < 20; i++) {
		setup();
		held_request(10 + (uint64_t)i);
		plain_request();
		reject_plain_request(ch);
		ck_assert_int_eq(rdma_destroy_id(listener), 0);
		rdma_destroy_event_channel(ch);
	}
}
END_TEST

/* A UD listener never holds anything: its channel is not served. */
START_TEST(ud_listeners_are_not_served)
{
	struct rdma_event_channel *c = rdma_create_event_channel();
	struct sockaddr_in me = unit_ipv4("192.0.2.1", PORT + 1);
	struct rdma_cm_id *ud;

	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(rdma_create_id(c, &ud, NULL, RDMA_PS_UDP), 0);
	ck_assert_int_eq(rdma_bind_addr(ud, (struct sockaddr *)&me), 0);
	ck_assert_int_eq(rdma_listen(ud, 8), 0);
	/* Not served: a kernel event wakes the fd directly, at once. */
	fake_ucma_event(kid_of(ud), RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	ck_assert(readable(c));
	rdma_ack_cm_event(next_event(c));
	ck_assert_int_eq(rdma_destroy_id(ud), 0);
	rdma_destroy_event_channel(c);
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
}
END_TEST

/* A program's thread blocked in rdma_get_cm_event. */
struct getter {
	struct rdma_event_channel *c;
	struct rdma_cm_event *ev;
	pthread_t self;
	int ret;
};

static void *getter_main(void *arg)
{
	struct getter *g = arg;

	g->self = pthread_self();
	g->ret = rdma_get_cm_event(g->c, &g->ev);
	return NULL;
}

/* Start @g in rdma_get_cm_event on @c and wait until it waits there. */
static void getter_start(struct getter *g, pthread_t *t,
			 struct rdma_event_channel *c)
{
	g->c = c;
	ck_assert_int_eq(pthread_create(t, NULL, getter_main, g), 0);
	while (!cma_channel_has_waiter(c))
		sched_yield();
}

/*
 * The fast path: while a program's thread is blocked in rdma_get_cm_event
 * on a served channel, that thread reads the kernel's events itself (no
 * hop through the service thread), a held request included, and the
 * service thread takes over again once it has left.
 */
START_TEST(blocked_get_reads_the_kernel_fd_itself)
{
	struct rdma_cm_id *id = other_id(ch);
	struct getter g = {0};
	pthread_t t;

	getter_start(&g, &t, ch);
	held_request(20); /* read and held by the getter: it waits on */
	while (fake_ucma_queued(cma_channel_kernel_fd(ch)))
		sched_yield();
	ck_assert(fake_ucma_last_read_by(t));
	ck_assert(cma_channel_has_waiter(ch));
	ck_assert(!readable(ch));
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_DISCONNECTED, 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(g.ret, 0);
	ck_assert_ptr_eq(g.ev->id, id);
	ck_assert_int_eq(g.ev->event, RDMA_CM_EVENT_DISCONNECTED);
	ck_assert(fake_ucma_last_read_by(g.self));
	rdma_ack_cm_event(g.ev);
	ck_assert(!cma_channel_has_waiter(ch));
	/* Nobody waits: the service thread reads and queues again. */
	held_request(21);
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	thread_has_read_all(ch);
	ck_assert(readable(ch));
	ck_assert(!fake_ucma_last_read_by(pthread_self()));
	ck_assert(!fake_ucma_last_read_by(g.self));
	rdma_ack_cm_event(next_event(ch));
	ck_assert(!readable(ch));
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
}
END_TEST

/*
 * What came while the waiter left (it had its event and stopped waiting):
 * the service thread looks again, so the fd wakes for it.
 */
START_TEST(event_after_the_waiter_left_wakes_the_fd)
{
	struct rdma_cm_id *id = other_id(ch);
	struct getter g = {0};
	pthread_t t;

	getter_start(&g, &t, ch);
	fake_ucma_hold();
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_ADDR_CHANGE, 0);
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	fake_ucma_release();
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(g.ev->event, RDMA_CM_EVENT_ADDR_CHANGE);
	rdma_ack_cm_event(g.ev);
	/* The second one: left in the kernel, read by the service thread. */
	thread_has_read_all(ch);
	ck_assert(readable(ch));
	g.ev = next_event(ch);
	ck_assert_int_eq(g.ev->event, RDMA_CM_EVENT_TIMEWAIT_EXIT);
	rdma_ack_cm_event(g.ev);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
}
END_TEST

/*
 * A request the service thread queued is dropped with its listener (its
 * new id destroyed by the library, never the application's) while a
 * program's thread waits in rdma_get_cm_event.  The destroy is stopped
 * before the kernel hears of it, the id still exists: an event of it
 * cannot come (the kernel ignores events of an id not yet accepted, whose
 * uid is 0), the destroy does not wait, and the waiting thread is woken
 * only by the next real event.
 */
START_TEST(dropped_request_leaves_nothing_for_a_waiter)
{
	struct rdma_event_channel *other = rdma_create_event_channel();
	struct rdma_cm_id *p2p, *id = other_id(ch);
	struct getter g = {0};
	pthread_t d, t;
	uint32_t req;
	void *ret;

	/* the listener goes: another keeps the process's p2p activity */
	ck_assert_ptr_nonnull(other);
	p2p = listen_on(other, PORT + 1, 1);
	req = plain_request();
	thread_has_read_all(ch);
	ck_assert(readable(ch)); /* the request, queued */
	fake_ucma_pause(RDMA_USER_CM_CMD_DESTROY_ID, req);
	ck_assert_int_eq(pthread_create(&d, NULL, destroyer, listener), 0);
	fake_ucma_wait_paused();
	ck_assert(!readable(ch)); /* unqueued with its listener */
	getter_start(&g, &t, ch);
	ck_assert_ptr_null(fake_ucma_event(req, RDMA_CM_EVENT_DISCONNECTED, 0));
	fake_ucma_resume();
	ck_assert_int_eq(pthread_join(d, &ret), 0);
	ck_assert_ptr_null(ret);
	ck_assert(!fake_ucma_kid(req)->live);
	ck_assert(cma_channel_has_waiter(ch));
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(g.ret, 0);
	ck_assert_ptr_eq(g.ev->id, id);
	rdma_ack_cm_event(g.ev);
	ck_assert(!readable(ch));
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	ck_assert_int_eq(rdma_destroy_id(p2p), 0);
	rdma_destroy_event_channel(other);
	rdma_destroy_event_channel(ch);
}
END_TEST

/*
 * A group's event the service thread queued and the application never
 * received: leaving the group drops it and does not wait for its ack
 * (nobody could give it), as destroy does for an id's events.
 */
START_TEST(leave_drops_a_queued_group_event)
{
	struct sockaddr_in dst = unit_ipv4("192.0.2.2", 0),
			   group = unit_ipv4("239.1.2.3", 0);
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_UD);
	struct rdma_ucm_event_resp *r;
	struct rdma_cm_id *ud;

	ud = unit_resolved_id(ch, RDMA_PS_UDP, (struct sockaddr *)&dst);
	ck_assert_int_eq(rdma_create_qp(ud, NULL, &attr), 0);
	ck_assert_int_eq(
		rdma_join_multicast(ud, (struct sockaddr *)&group, NULL), 0);
	fake_ucma_hold();
	r = fake_ucma_mc_event(fake_ucma_last_mc(),
			       RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	ck_assert_ptr_nonnull(r);
	r->param.ud.qp_num = 0xffffff;
	r->param.ud.qkey = 0x01234567;
	fake_ucma_release();
	thread_has_read_all(ch);
	ck_assert(readable(ch)); /* queued for the application */
	ck_assert_int_eq(rdma_leave_multicast(ud, (struct sockaddr *)&group),
			 0); /* returns: the event was never received */
	ck_assert(!readable(ch));
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_LEAVE_MCAST), 1);
	ck_assert_int_eq(fake_verbs_counts().mcast_attached, 0);
	rdma_destroy_qp(ud);
	ck_assert_int_eq(rdma_destroy_id(ud), 0);
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
}
END_TEST

/*
 * rdma_migrate_id(id, NULL) (to a private channel) while a program's
 * thread waits in rdma_get_cm_event on the served channel: the migrate
 * neither waits for that thread nor wakes it; the id's later events go to
 * its private channel's kernel fd, and come back with the id when it is
 * migrated back, to the waiter (the migrate waits for no ack: none was
 * read).
 */
START_TEST(migrate_to_private_while_a_reader_waits)
{
	struct rdma_cm_id *x = other_id(ch), *y = other_id(ch);
	struct getter g = {0};
	pthread_t t;

	/* Now one waits; x goes private and comes back. */
	fake_ucma_migrate_quietly(true); /* as the kernel: no wake-up */
	getter_start(&g, &t, ch);
	ck_assert_int_eq(rdma_migrate_id(x, NULL), 0);
	ck_assert(cma_channel_has_waiter(ch));
	fake_ucma_event(kid_of(x), RDMA_CM_EVENT_ADDR_CHANGE, 0);
	ck_assert_int_eq(fake_ucma_queued(cma_channel_kernel_fd(x->channel)),
			 1);
	ck_assert(cma_channel_has_waiter(ch)); /* not for this one */
	ck_assert(!readable(ch));
	ck_assert_int_eq(rdma_migrate_id(x, ch), 0); /* no ack to wait for */
	ck_assert_int_eq(pthread_join(t, NULL), 0); /* the event came along */
	ck_assert_ptr_eq(g.ev->id, x);
	ck_assert_int_eq(g.ev->event, RDMA_CM_EVENT_ADDR_CHANGE);
	rdma_ack_cm_event(g.ev);
	ck_assert(!readable(ch));
	ck_assert_int_eq(rdma_destroy_id(x), 0);
	ck_assert_int_eq(rdma_destroy_id(y), 0);
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
}
END_TEST

/* --- serving starts with p2p activity: plain servers pay nothing ------------ */

/* The channel alone; each test makes the listener it needs. */
static void setup_bare(void)
{
	fake_ucma_install();
	fake_verbs_install(true);
	ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(ch);
}

/* A plain request reaches a plain listener's fd directly, no thread. */
static void plain_request_is_direct(void)
{
	plain_request();
	ck_assert(readable(ch)); /* at once: no thread in between */
	{
		struct rdma_cm_event *ev = next_event(ch);

		ck_assert_int_eq(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
		ck_assert_int_eq(rdma_destroy_id(ev->id), 0);
		rdma_ack_cm_event(ev);
	}
}

/* A server that never uses p2p: its listener's channel is never served. */
START_TEST(plain_server_is_not_served)
{
	listener = listen_on(ch, PORT, -1);
	ck_assert(!cma_channel_served(ch));
	plain_request_is_direct();
	ck_assert(!cma_channel_served(ch));
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
}
END_TEST

/*
 * A listener with RDMA_OPTION_ID_PEER2PEER = 0 (rsocket's) holds nothing:
 * not served even once the process does p2p on another channel.
 */
START_TEST(listener_with_p2p_off_is_never_served)
{
	struct rdma_event_channel *other = rdma_create_event_channel();
	struct rdma_cm_id *p2p;

	ck_assert_ptr_nonnull(other);
	listener = listen_on(ch, PORT, 0);
	p2p = listen_on(other, PORT + 1, 1);
	ck_assert(cma_channel_served(other));
	ck_assert(!cma_channel_served(ch));
	plain_request_is_direct();
	ck_assert_int_eq(rdma_destroy_id(p2p), 0);
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(other);
	rdma_destroy_event_channel(ch);
}
END_TEST

/*
 * A listener made before any p2p activity: the first p2p connect of the
 * process (on another channel) serves it before a peer's request comes.
 */
START_TEST(p2p_connect_serves_an_earlier_listener)
{
	struct rdma_event_channel *plain = ch;
	struct rdma_cm_id *lis, *id;
	uint32_t held;

	lis = listen_on(plain, PORT, -1);
	ck_assert(!cma_channel_served(plain));
	ch = rdma_create_event_channel(); /* connecting_id's channel */
	ck_assert_ptr_nonnull(ch);
	id = connecting_id("192.0.2.2");
	ck_assert(!cma_channel_served(plain));
	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert(cma_channel_served(ch));
	ck_assert(cma_channel_served(plain));
	/* A request of another peer is held: no wake-up on the listener's fd. */
	listener = lis;
	held = held_request(5);
	thread_has_read_all(plain);
	ck_assert(!unit_readable(plain->fd));
	ck_assert(fake_ucma_kid(held)->live);
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	ck_assert_int_eq(rdma_destroy_id(lis), 0);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(plain);
}
END_TEST

/*
 * The documented window: a p2p request reaching a process that has shown
 * no p2p activity is held by the application's own read (here the read
 * that returns the plain request queued behind it).  From then on the
 * channel is served: the next held request wakes nobody.
 */
START_TEST(first_held_request_serves_the_channel)
{

	listener = listen_on(ch, PORT, -1);
	ck_assert(!cma_channel_served(ch));
	held_request(6);
	plain_request();
	reject_plain_request(ch);
	ck_assert(cma_channel_served(ch));
	held_request(7);
	thread_has_read_all(ch);
	ck_assert(!readable(ch));
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
}
END_TEST

/*
 * A non-blocking fd is never served: its reader takes EAGAIN for a held
 * request, and its events take no thread hop.
 */
START_TEST(nonblocking_channel_is_not_served)
{
	struct rdma_cm_event *ev;
	int flags = fcntl(ch->fd, F_GETFL);
	uint64_t i;

	ck_assert_int_eq(fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK), 0);
	listener = listen_on(ch, PORT, -1);
	for (i = 6; i < 8; i++) {
		held_request(i);
		ck_assert(readable(ch)); /* direct: the kernel's event */
		ck_assert_int_eq(rdma_get_cm_event(ch, &ev), -1);
		ck_assert_int_eq(errno, EAGAIN);
		ck_assert(!cma_channel_served(ch));
	}
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
}
END_TEST

/* RDMA_CM_SERVE=1: a plain listener is served from its listen on. */
START_TEST(serve_env_one_serves_from_the_listen)
{
	setenv("RDMA_CM_SERVE", "1", 1);
	listener = listen_on(ch, PORT, -1);
	ck_assert(cma_channel_served(ch));
	held_request(8);
	thread_has_read_all(ch);
	ck_assert(!readable(ch)); /* not even the first one */
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
	unsetenv("RDMA_CM_SERVE");
}
END_TEST

/* RDMA_CM_SERVE=0: never served, whatever the process does. */
START_TEST(serve_env_zero_opts_out)
{
	setenv("RDMA_CM_SERVE", "0", 1);
	listener = listen_on(ch, PORT, 1);
	ck_assert(!cma_channel_served(ch));
	ck_assert_int_eq(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
	unsetenv("RDMA_CM_SERVE");
}
END_TEST

Suite *channel_suite(void)
{
	Suite *s = suite_create("channel");
	TCase *tc = tcase_create("served");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, held_request_never_wakes_the_fd);
	tcase_add_test(tc, events_keep_their_order);
	tcase_add_test(tc, nonblocking_get_sees_queued_events);
	tcase_add_test(tc, destroy_drops_a_queued_event);
	tcase_add_test(tc, destroy_of_a_listener_drops_its_queued_request);
	tcase_add_test(tc, destroy_while_the_thread_handles_an_event);
	tcase_add_test(tc, migrate_carries_a_queued_event);
	tcase_add_test(tc, migrated_listener_serves_its_new_channel);
	tcase_add_test(tc, served_channels_are_destroyed_and_made_again);
	tcase_add_test(tc, ud_listeners_are_not_served);
	tcase_add_test(tc, blocked_get_reads_the_kernel_fd_itself);
	tcase_add_test(tc, event_after_the_waiter_left_wakes_the_fd);
	tcase_add_test(tc, dropped_request_leaves_nothing_for_a_waiter);
	tcase_add_test(tc, leave_drops_a_queued_group_event);
	tcase_add_test(tc, migrate_to_private_while_a_reader_waits);
	suite_add_tcase(s, tc);
	tc = tcase_create("cheap");
	tcase_add_checked_fixture(tc, setup_bare, teardown);
	tcase_add_test(tc, plain_server_is_not_served);
	tcase_add_test(tc, listener_with_p2p_off_is_never_served);
	tcase_add_test(tc, p2p_connect_serves_an_earlier_listener);
	tcase_add_test(tc, first_held_request_serves_the_channel);
	tcase_add_test(tc, nonblocking_channel_is_not_served);
	tcase_add_test(tc, serve_env_zero_opts_out);
	tcase_add_test(tc, serve_env_one_serves_from_the_listen);
	suite_add_tcase(s, tc);
	return s;
}
