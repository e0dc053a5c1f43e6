/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * For unit tests of rsocket calls on the fakes that another thread is
 * inside while the test closes or watches the socket (include
 * fake_ucma.h, fake_verbs.h and unit.h first): the fixture, a connected
 * stream rsocket whose calls sleep, a bound datagram rsocket, and one call
 * started in another thread once it holds the socket.
 */
#ifndef RS_CALL_H_UNIT
#define RS_CALL_H_UNIT

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <rdma/rsocket.h>

#include "rsocket/rs.h"

static struct ibv_context *verbs;

/* The fixture: the fake kernel and one InfiniBand device, opened. */
static inline void rs_call_setup(void)
{
	struct ibv_device **list;

	fake_ucma_install();
	fake_verbs_install(false);
	list = ibv_get_device_list(NULL);
	verbs = ibv_open_device(list[0]);
	ibv_free_device_list(list);
}

static inline void rs_call_teardown(void)
{
	ibv_close_device(verbs);
	fake_ucma_uninstall();
}

/*
 * A stream rsocket in the connected state with an empty CQ: receives find
 * no data and sends no room (it waits for the peer's first message, as an
 * iWARP passive side does), so both sleep on the CQ's channel.
 */
static inline int connected_stream(void)
{
	int s = rsocket(AF_INET, SOCK_STREAM, 0);
	struct rsocket *rs;

	ck_assert_int_ge(s, 0);
	rs = rs_get(s);
	ck_assert_ptr_nonnull(rs);
	rs->comp_channel = ibv_create_comp_channel(verbs);
	ck_assert_ptr_nonnull(rs->comp_channel);
	rs->cq = ibv_create_cq(verbs, 8, rs, rs->comp_channel, 0);
	ck_assert_ptr_nonnull(rs->cq);
	rs->rmsg = calloc(4, sizeof(*rs->rmsg));
	rs->await_peer = true;
	rs->state = RS_CONNECT_RDWR;
	rs_put(rs);
	return s;
}

static inline int bound_dgram(void)
{
	struct sockaddr_in sin = unit_ipv4("127.0.0.1", 0);
	int s = rsocket(AF_INET, SOCK_DGRAM, 0);

	ck_assert_int_ge(s, 0);
	ck_assert_int_eq(rbind(s, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return s;
}

/* One call in another thread, and how it ended. */
struct call {
	int s;
	int what;
	pthread_t thread;
	long ret;
	int err;
	struct pollfd pfd;
	int epfd;
	struct epoll_event ev[4];
};

enum { DO_RECV, DO_SEND, DO_ACCEPT, DO_POLL, DO_EPOLL };

static inline void *call_run(void *arg)
{
	struct call *c = arg;
	char b[16] = "x";

	switch (c->what) {
	case DO_RECV:
		c->ret = rrecv(c->s, b, sizeof(b), 0);
		break;
	case DO_SEND:
		c->ret = rsend(c->s, b, 1, 0);
		break;
	case DO_ACCEPT:
		c->ret = raccept(c->s, NULL, NULL);
		break;
	case DO_POLL:
		c->pfd.fd = c->s;
		c->pfd.events = POLLIN;
		c->ret = rpoll(&c->pfd, 1, -1);
		break;
	case DO_EPOLL:
		c->ret = repoll_wait(c->epfd, c->ev, 4, -1);
		break;
	}
	c->err = errno;
	return NULL;
}

/*
 * Start @what on @s and return once the thread holds the socket (its
 * reference is counted): whether it is asleep yet or about to sleep, the
 * close must end its call.
 */
static inline void call_start(struct call *c, int s, int what, int holders)
{
	struct rsocket *rs = rs_get(s);

	ck_assert_ptr_nonnull(rs);
	c->s = s;
	c->what = what;
	ck_assert_int_eq(pthread_create(&c->thread, NULL, call_run, c), 0);
	/* The table's reference, ours, and one per thread inside a call. */
	while (__atomic_load_n(&rs->refs, __ATOMIC_ACQUIRE) < 2 + holders)
		sched_yield();
	rs_put(rs);
}

static inline void call_join(struct call *c)
{
	ck_assert_int_eq(pthread_join(c->thread, NULL), 0);
}

#endif /* RS_CALL_H_UNIT */
