// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * A p2p connect's route left until a REQ needs it (src/p2p/p2p_resolve.c),
 * against the scripted peer of p2p_peer.h: an id that sets
 * RDMA_OPTION_ID_PEER2PEER = 1 before rdma_resolve_addr, in a process
 * whose listener holds, and that is the end waiting for the peer's REQ,
 * is only bound: ADDR_RESOLVED and ROUTE_RESOLVED come from the library
 * at once, and the adopted request brings the route.  When its own REQ
 * must go out after all, the kernel resolves first, unseen by the
 * application.
 *
 * Mesh speed: the higher end of each pair resolved towards its
 * peers only to throw the route away when it adopted the lower end's REQ.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm/cma.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "p2p/p2p_wire.h"
#include "unit.h"
#include "p2p_peer.h"

/* The source port the application asks for (0: any). */
static uint16_t src_port;

/* An id that says it will connect in p2p mode. */
static struct rdma_cm_id *p2p_id(void)
{
	struct rdma_cm_id *id;
	int on = 1;

	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_set_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_PEER2PEER, &on,
					 sizeof(on)),
			 0);
	return id;
}

/* rdma_resolve_addr from our address (src_port) towards @to's listener. */
static int resolve_towards(struct rdma_cm_id *id, const char *to)
{
	struct sockaddr_in src = unit_ipv4("192.0.2.1", src_port),
			   dst = unit_ipv4(to, P2P_PORT);

	return rdma_resolve_addr(id, (struct sockaddr *)&src,
				 (struct sockaddr *)&dst, 2000);
}

/* A p2p id, resolving towards @to. */
static struct rdma_cm_id *p2p_id_resolving(const char *to)
{
	struct rdma_cm_id *id = p2p_id();

	ck_assert_int_eq(resolve_towards(id, to), 0);
	return id;
}

/* --- the kernel id, made when a command needs it (id.c) ------------------ */

static struct rdma_cm_id *new_id(void)
{
	struct rdma_cm_id *id;

	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	return id;
}

static void set_tos(struct rdma_cm_id *id, int expect)
{
	uint8_t tos = 32;

	ck_assert_int_eq(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
					 &tos, sizeof(tos)),
			 expect);
}

/*
 * A process whose listener holds declared p2p mode: rdma_create_id leaves
 * the kernel id to the first command that needs one (a kernel option
 * here; a library option does not), which makes it once, named by the id.
 */
START_TEST(kernel_id_is_made_by_the_first_command)
{
	int creates, on = 1;
	struct rdma_cm_id *id;
	uint32_t kid;

	listener_holds();
	creates = fake_ucma_count(RDMA_USER_CM_CMD_CREATE_ID);
	id = new_id();
	ck_assert_int_eq(rdma_set_option(id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_PEER2PEER, &on,
					 sizeof(on)),
			 0);
	ck_assert_uint_eq(kid_of(id), CMA_NO_KERNEL_ID);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CREATE_ID), creates);
	set_tos(id, 0);
	kid = kid_of(id);
	ck_assert_uint_ne(kid, CMA_NO_KERNEL_ID);
	ck_assert_uint_eq(fake_ucma_kid(kid)->uid, (uintptr_t)cma_id_priv(id));
	ck_assert_uint_eq(fake_ucma_last(RDMA_USER_CM_CMD_SET_OPTION)->handle,
			  kid);
	set_tos(id, 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CREATE_ID),
			 creates + 1);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	ck_assert(!fake_ucma_kid_live(kid, 0));
}
END_TEST

/* Destroyed before any command: the kernel never hears of the id. */
START_TEST(unused_id_never_reaches_the_kernel)
{
	int n;

	listener_holds();
	n = fake_ucma_ncmds();
	ck_assert_int_eq(rdma_destroy_id(new_id()), 0);
	ck_assert_int_eq(fake_ucma_ncmds(), n);
}
END_TEST

/*
 * The kernel id cannot be made: the command fails with the kernel's error
 * and is not sent, and the next command tries again.
 */
START_TEST(kernel_id_not_made_fails_the_command)
{
	struct sockaddr_in src = unit_ipv4("192.0.2.1", 0);
	struct rdma_cm_id *id;
	int binds;

	listener_holds();
	id = new_id();
	binds = fake_ucma_count(RDMA_USER_CM_CMD_BIND);
	fake_ucma_fail_next(RDMA_USER_CM_CMD_CREATE_ID, ENOMEM);
	ck_assert_int_eq(rdma_bind_addr(id, (struct sockaddr *)&src), -1);
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_BIND), binds);
	ck_assert_uint_eq(kid_of(id), CMA_NO_KERNEL_ID);
	ck_assert_int_eq(rdma_bind_addr(id, (struct sockaddr *)&src), 0);
	ck_assert_uint_eq(fake_ucma_last(RDMA_USER_CM_CMD_BIND)->handle,
			  kid_of(id));
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/* Migrated first: made on its old channel, moved, its events on the new. */
START_TEST(migrate_makes_the_kernel_id_then_moves_it)
{
	struct rdma_event_channel *to = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	ck_assert_ptr_nonnull(to);
	listener_holds();
	id = new_id();
	ck_assert_int_eq(rdma_migrate_id(id, to), 0);
	ck_assert_uint_ne(kid_of(id), CMA_NO_KERNEL_ID);
	ck_assert_uint_eq(fake_ucma_last(RDMA_USER_CM_CMD_MIGRATE_ID)->handle,
			  kid_of(id));
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	ck_assert_int_eq(rdma_get_cm_event(to, &ev), 0);
	ck_assert_ptr_eq(ev->id, id);
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(to);
}
END_TEST

static void *first_command(void *id)
{
	set_tos(id, 0);
	return NULL;
}

/* Two threads' first commands on one id make one kernel id. */
START_TEST(concurrent_first_commands_make_one_kernel_id)
{
	struct rdma_cm_id *id;
	pthread_t t;
	int creates;

	listener_holds();
	id = new_id();
	creates = fake_ucma_count(RDMA_USER_CM_CMD_CREATE_ID);
	ck_assert_int_eq(pthread_create(&t, NULL, first_command, id), 0);
	set_tos(id, 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CREATE_ID),
			 creates + 1);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_SET_OPTION), 2);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/* Without p2p mode declared, rdma_create_id makes it, as rdma-core does. */
START_TEST(kernel_id_made_at_once_without_p2p_mode)
{
	int creates = fake_ucma_count(RDMA_USER_CM_CMD_CREATE_ID);
	struct rdma_cm_id *id = new_id();

	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CREATE_ID),
			 creates + 1);
	ck_assert_uint_ne(kid_of(id), CMA_NO_KERNEL_ID);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/*
 * An id that is not in p2p mode resolves as in rdma-core and carries no
 * p2p record: memory per id is Debian's (tests/bench scale).
 */
START_TEST(plain_id_resolves_without_a_p2p_record)
{
	struct rdma_cm_id *id = new_id();

	listener_holds();
	ck_assert_int_eq(resolve_towards(id, "192.0.2.2"), 0);
	ck_assert_ptr_null(((struct cma_id_private *)id)->p2p);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/*
 * The id is bound to learn its device (a wildcard listener names none) or
 * so that the kernel can give its QP's INIT attributes (InfiniBand); it
 * adopts all the same (the fixtures "wildcard listener" and "infiniband").
 */
static bool id_bound_expected;

/*
 * As p2p_id_resolving, for the end that waits: both resolutions are
 * reported by the library at once and none reaches the kernel, and the QP
 * is made on the id's device.  With the listener bound to the source
 * address (the fixture's) on RoCE, the id takes the device, port and GID
 * from it, and its own kernel id, which only a REQ of ours would need, is
 * not even made (the listener declared p2p mode: id.c).
 */
static struct rdma_cm_id *route_left_for_later(const char *to)
{
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);
	struct rdma_cm_id *id = p2p_id_resolving(to);
	struct sockaddr_in *src = (struct sockaddr_in *)rdma_get_local_addr(id);

	if (id_bound_expected) {
		ck_assert_int_ge(
			fake_ucma_first_on(RDMA_USER_CM_CMD_BIND, kid_of(id)),
			0);
	} else {
		ck_assert_uint_eq(kid_of(id), CMA_NO_KERNEL_ID);
		ck_assert_uint_eq(id->port_num, listener->port_num);
		ck_assert_mem_eq(id->route.addr.addr.ibaddr.sgid.raw,
				 listener->route.addr.addr.ibaddr.sgid.raw, 16);
	}
	ck_assert_int_eq(src->sin_family, AF_INET);
	ck_assert_uint_eq(src->sin_addr.s_addr, inet_addr("192.0.2.1"));
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ADDR_RESOLVED));
	ck_assert_ptr_nonnull(id->verbs);
	ck_assert_int_eq(rdma_get_dst_port(id), htobe16(P2P_PORT));
	ck_assert_int_eq(rdma_resolve_route(id, 3000), 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ROUTE_RESOLVED));
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ROUTE), 0);
	ck_assert_int_eq(rdma_create_qp(id, NULL, &attr), 0);
	return id;
}

/*
 * The kernel reports @event on @kid; the application's next read finds
 * nothing (the library took it), and the library sends @cmd.
 */
static void library_event_then(uint32_t kid, uint32_t event, int status,
			       uint32_t cmd)
{
	fake_ucma_event(kid, event, status);
	expect_nothing();
	await_cmd(cmd, 1);
}

START_TEST(higher_end_adopts_without_resolving)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	uint32_t own, req;
	int creates;

	listener_holds();
	creates = fake_ucma_count(RDMA_USER_CM_CMD_CREATE_ID);
	id = route_left_for_later("192.0.2.0");
	own = kid_of(id);
	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 0);
	req = peer_request("192.0.2.0", 0, "hers");
	expect_nothing();
	ck_assert_int_ge(fake_ucma_first_on(RDMA_USER_CM_CMD_ACCEPT, req), 0);
	ck_assert_uint_eq(kid_of(id), req);
	ck_assert(!fake_ucma_kid_live(own, 2000));
	/* Unbound, it never had a kernel id of its own to make and destroy. */
	if (!id_bound_expected)
		ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CREATE_ID),
				 creates);
	/* The route the request's ends were read from serves the adoption. */
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_QUERY_ROUTE, req),
			 1);
	ck_assert_uint_eq(
		((struct sockaddr_in *)rdma_get_peer_addr(id))->sin_addr.s_addr,
		inet_addr("192.0.2.0"));
	fake_ucma_event(req, RDMA_CM_EVENT_ESTABLISHED, 0);
	ev = expect_event(RDMA_CM_EVENT_ESTABLISHED);
	ck_assert_ptr_eq(ev->id, id);
	ck_assert_mem_eq(ev->param.conn.private_data, "hers", 4);
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ROUTE), 0);
	ck_assert_int_eq(fake_qp_of(id->qp)->qp.state, IBV_QPS_RTS);
}
END_TEST

/* A request that came before the connect is adopted by it, as ever. */
START_TEST(request_held_before_the_connect_is_adopted)
{
	struct rdma_cm_id *id;
	uint32_t req;

	listener_holds();
	req = peer_request("192.0.2.0", 0, "hers");
	expect_nothing();
	id = route_left_for_later("192.0.2.0");
	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_uint_eq(kid_of(id), req);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 0);
}
END_TEST

/* An id towards @to, set as above, that the kernel resolves as usual. */
static void kernel_resolves(const char *to)
{
	struct rdma_cm_id *id = p2p_id_resolving(to);

	ck_assert_int_ge(
		fake_ucma_first_on(RDMA_USER_CM_CMD_RESOLVE_ADDR, kid_of(id)),
		0);
	expect_nothing();
}

/* The lower end sends the REQ: it needs its route, resolved as usual. */
START_TEST(lower_end_resolves_as_usual)
{
	listener_holds();
	kernel_resolves("192.0.2.2");
}
END_TEST

/*
 * The lower end's kernel resolves as usual, but the id takes its device,
 * port and GID from its listener, bound to the same address on RoCE: no
 * QUERY_ROUTE at ADDR_RESOLVED.  The source port the kernel picked comes
 * with the route's query at ROUTE_RESOLVED.  A wildcard listener names no
 * device, and on InfiniBand the id asks the kernel: queried as usual.
 */
START_TEST(lower_end_takes_its_device_from_the_listener)
{
	struct rdma_cm_id *id;
	struct fake_kid *kid;
	uint32_t k;

	listener_holds();
	id = p2p_id_resolving("192.0.2.2");
	k = kid_of(id);
	ck_assert_int_ge(fake_ucma_first_on(RDMA_USER_CM_CMD_RESOLVE_ADDR, k),
			 0);
	if (id_bound_expected)
		ck_assert_ptr_null(id->verbs);
	else
		ck_assert_ptr_eq(id->verbs, listener->verbs);
	kid = fake_ucma_kid(k);
	((struct sockaddr_in *)&kid->src)->sin_port = htobe16(40000);
	fake_ucma_event(k, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ADDR_RESOLVED));
	ck_assert_ptr_eq(id->verbs, listener->verbs);
	ck_assert_uint_eq(id->port_num, listener->port_num);
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_QUERY_ROUTE, k),
			 id_bound_expected ? 1 : 0);
	ck_assert_int_eq(rdma_resolve_route(id, 2000), 0);
	fake_ucma_event(k, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ROUTE_RESOLVED));
	ck_assert_int_eq(fake_ucma_count_on(RDMA_USER_CM_CMD_QUERY_ROUTE, k),
			 id_bound_expected ? 2 : 1);
	ck_assert_int_eq(rdma_get_src_port(id), htobe16(40000));
}
END_TEST

/* Refused at once by the kernel, the id has no device, as before. */
START_TEST(lower_end_refused_resolution_leaves_no_device)
{
	struct rdma_cm_id *id;

	listener_holds();
	id = p2p_id();
	fake_ucma_fail_next(RDMA_USER_CM_CMD_RESOLVE_ADDR, ENETUNREACH);
	ck_assert_int_eq(resolve_towards(id, "192.0.2.2"), -1);
	ck_assert_int_eq(errno, ENETUNREACH);
	ck_assert_ptr_null(id->verbs);
	ck_assert_ptr_null(id->pd);
	/* Tried again, it resolves and learns its device. */
	ck_assert_int_eq(resolve_towards(id, "192.0.2.2"), 0);
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ADDR_RESOLVED));
	ck_assert_ptr_eq(id->verbs, listener->verbs);
	rdma_destroy_id(id);
}
END_TEST

/*
 * The higher end never sends, so it leaves its route for later whatever
 * its listener does with requests (here: the default, timed hold).
 */
START_TEST(higher_end_leaves_its_route_whatever_its_listener)
{
	struct rdma_cm_id *id = p2p_id_resolving("192.0.2.0");

	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ADDR_RESOLVED));
	ck_assert_int_eq(rdma_resolve_route(id, 3000), 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ROUTE_RESOLVED));
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ROUTE), 0);
}
END_TEST

/* A route left for later serves p2p connects only. */
START_TEST(plain_connect_of_a_route_left_for_later_fails)
{
	struct rdma_conn_param p = {.responder_resources = 1,
				    .initiator_depth = 1};
	struct rdma_cm_id *id;

	listener_holds();
	id = route_left_for_later("192.0.2.0");
	ck_assert_int_eq(rdma_connect(id, &p), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 0);
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/* Asked twice, the route is refused the second time, as by the kernel. */
START_TEST(second_route_resolution_fails)
{
	struct rdma_cm_id *id;

	listener_holds();
	id = route_left_for_later("192.0.2.0");
	ck_assert_int_eq(rdma_resolve_route(id, 3000), -1);
	ck_assert_int_eq(errno, EINVAL);
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
}
END_TEST

/* The lower end's id towards 192.0.2.2, from source port src_port. */
static struct rdma_cm_id *lower_end_id(void)
{
	return connecting_id_from(src_port, "192.0.2.2", P2P_PORT);
}

/*
 * The lower end's REQ refused for now (IB CM reason 8: the peer does not
 * listen yet): it goes out again on a fresh kernel id *own, whose
 * address the kernel is asked to resolve first.
 */
static struct rdma_cm_id *connect_resolving_late(uint32_t *own)
{
	struct rdma_cm_id *id = lower_end_id();
	uint32_t first = kid_of(id);

	ck_assert_int_eq(p2p_connect(id), 0);
	fake_ucma_clear_log();
	fake_ucma_event(first, RDMA_CM_EVENT_REJECTED, 8);
	expect_nothing();
	await_cmd(RDMA_USER_CM_CMD_RESOLVE_ADDR, 1);
	/* Made now, for the REQ: on the id's channel, named by the id. */
	*own = kid_of(id);
	ck_assert_uint_ne(*own, first);
	ck_assert_uint_eq(fake_ucma_kid(*own)->uid, (uintptr_t)cma_id_priv(id));
	ck_assert_uint_eq(fake_ucma_last(RDMA_USER_CM_CMD_RESOLVE_ADDR)->handle,
			  *own);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 0);
	return id;
}

/*
 * The kernel resolves the fresh kernel id's address (from the id's source
 * address) and route, the application sees neither, and our REQ goes out
 * again once it is routed.
 */
START_TEST(refused_req_is_resolved_then_sent_again)
{
	const struct rdma_ucm_resolve_addr *ra;
	const struct fake_cmd *c;
	uint32_t own;

	connect_resolving_late(&own);
	c = fake_ucma_last(RDMA_USER_CM_CMD_RESOLVE_ADDR);
	ra = (const struct rdma_ucm_resolve_addr *)c->body;
	ck_assert_uint_eq(ra->timeout_ms, 2000);
	ck_assert_uint_eq(ra->src_size, sizeof(struct sockaddr_in));
	ck_assert_uint_eq(
		((const struct sockaddr_in *)&ra->src_addr)->sin_addr.s_addr,
		inet_addr("192.0.2.1"));
	library_event_then(own, RDMA_CM_EVENT_ADDR_RESOLVED, 0,
			   RDMA_USER_CM_CMD_RESOLVE_ROUTE);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 0);
	library_event_then(own, RDMA_CM_EVENT_ROUTE_RESOLVED, 0,
			   RDMA_USER_CM_CMD_CONNECT);
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_CONNECT, own).kind,
			 CMA_P2P_REQ);
	fake_ucma_event(own, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
}
END_TEST

/* The late resolution fails: the connect ends in UNREACHABLE. */
START_TEST(late_resolution_failure_is_unreachable)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	uint32_t own;

	id = connect_resolving_late(&own);
	fake_ucma_event(own, RDMA_CM_EVENT_ADDR_ERROR, -EHOSTUNREACH);
	ev = await_event(RDMA_CM_EVENT_UNREACHABLE);
	ck_assert_ptr_eq(ev->id, id);
	ck_assert_int_eq(ev->status, -EHOSTUNREACH);
	ck_assert_int_eq(fake_qp_of(id->qp)->qp.state, IBV_QPS_ERR);
	rdma_ack_cm_event(ev);
	expect_nothing();
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_CONNECT), 0);
}
END_TEST

/* A resolve command the kernel refuses: UNREACHABLE with its errno. */
START_TEST(late_resolve_command_refused_is_unreachable)
{
	struct rdma_cm_id *id = lower_end_id();
	struct rdma_cm_event *ev;

	ck_assert_int_eq(p2p_connect(id), 0);
	fake_ucma_fail_next(RDMA_USER_CM_CMD_RESOLVE_ADDR, ENODEV);
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_REJECTED, 8);
	expect_nothing();
	ev = await_event(RDMA_CM_EVENT_UNREACHABLE);
	ck_assert_int_eq(ev->status, -ENODEV);
	rdma_ack_cm_event(ev);
}
END_TEST

/*
 * The source port our REQ's late resolution binds is refused, as the
 * kernel refuses a port another id shares (one it picked for an earlier
 * resolution): the resolution goes on with any port, not UNREACHABLE.
 */
START_TEST(late_resolution_with_its_port_taken_takes_another)
{
	const struct rdma_ucm_resolve_addr *ra;
	struct rdma_cm_id *id;

	src_port = 7000;
	id = lower_end_id();
	ck_assert_int_eq(p2p_connect(id), 0);
	fake_ucma_clear_log();
	fake_ucma_fail_next(RDMA_USER_CM_CMD_RESOLVE_ADDR, EADDRINUSE);
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_REJECTED, 8);
	expect_nothing();
	await_cmd(RDMA_USER_CM_CMD_RESOLVE_ADDR, 2);
	ra = (const void *)fake_ucma_cmd(
		     fake_ucma_first_on(RDMA_USER_CM_CMD_RESOLVE_ADDR,
					kid_of(id)))
		     ->body;
	ck_assert_uint_eq(((const struct sockaddr_in *)&ra->src_addr)->sin_port,
			  htons(7000));
	ra = (const void *)fake_ucma_last(RDMA_USER_CM_CMD_RESOLVE_ADDR)->body;
	ck_assert_uint_eq(((const struct sockaddr_in *)&ra->src_addr)->sin_port,
			  0);
	library_event_then(kid_of(id), RDMA_CM_EVENT_ADDR_RESOLVED, 0,
			   RDMA_USER_CM_CMD_RESOLVE_ROUTE);
}
END_TEST

/*
 * A request of the higher peer's arrives while the kernel resolves for
 * our REQ: refused for now (this end sends), and the resolution goes on.
 */
START_TEST(request_during_late_resolution_is_refused)
{
	uint32_t own, req;

	connect_resolving_late(&own);
	req = peer_request("192.0.2.2", 0, "hers");
	expect_nothing();
	ck_assert_int_eq(sent_hdr(RDMA_USER_CM_CMD_REJECT, req).kind,
			 CMA_P2P_REJ_RETRY);
	library_event_then(own, RDMA_CM_EVENT_ADDR_RESOLVED, 0,
			   RDMA_USER_CM_CMD_RESOLVE_ROUTE);
	library_event_then(own, RDMA_CM_EVENT_ROUTE_RESOLVED, 0,
			   RDMA_USER_CM_CMD_CONNECT);
}
END_TEST

/*
 * The held request's answer fails (the peer gave up on it meanwhile): the
 * id goes back to having no kernel id of its own, with the addresses the
 * application resolved (stress p2p_churn: the id had taken the unbound
 * kernel id's empty addresses), and adopts the peer's next request.
 */
START_TEST(failed_adoption_keeps_the_resolved_addresses)
{
	const struct sockaddr_in *sin;
	struct rdma_cm_id *id;
	uint32_t req;

	listener_holds();
	req = peer_request("192.0.2.0", 0, "hers");
	expect_nothing();
	id = route_left_for_later("192.0.2.0");
	fake_ucma_fail_next(RDMA_USER_CM_CMD_ACCEPT, EINVAL);
	ck_assert_int_eq(p2p_connect(id), 0);
	ck_assert_int_ge(fake_ucma_first_on(RDMA_USER_CM_CMD_REJECT, req), 0);
	ck_assert_uint_ne(kid_of(id), req);
	sin = (const struct sockaddr_in *)rdma_get_local_addr(id);
	ck_assert_uint_eq(sin->sin_addr.s_addr, inet_addr("192.0.2.1"));
	sin = (const struct sockaddr_in *)rdma_get_peer_addr(id);
	ck_assert_uint_eq(sin->sin_addr.s_addr, inet_addr("192.0.2.0"));
	ck_assert_uint_eq(sin->sin_port, htons(P2P_PORT));
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR), 0);
	req = peer_request("192.0.2.0", 0, "hers");
	expect_nothing();
	ck_assert_uint_eq(kid_of(id), req);
	fake_ucma_event(req, RDMA_CM_EVENT_ESTABLISHED, 0);
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
}
END_TEST

/* Destroyed with its route left for later: nothing more happens. */
START_TEST(id_destroyed_with_its_route_left_for_later)
{
	struct rdma_cm_id *id;

	listener_holds();
	id = route_left_for_later("192.0.2.0");
	ck_assert_int_eq(p2p_connect(id), 0);
	rdma_destroy_qp(id);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	usleep(100 * 1000);
	expect_nothing();
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR), 0);
}
END_TEST

static void wildcard_setup(void)
{
	listen_addr = "0.0.0.0";
	id_bound_expected = true;
	p2p_peer_fixture();
}

static void infiniband_setup(void)
{
	id_bound_expected = true;
	fake_ucma_install();
	fake_verbs_install(false);
	p2p_peer_setup();
}

static void bound_teardown(void)
{
	p2p_peer_teardown();
	listen_addr = "192.0.2.1";
	id_bound_expected = false;
}

Suite *p2p_resolve_suite(void)
{
	Suite *s = suite_create("p2p_resolve");
	TCase *tc = tcase_create("left for later");

	tcase_add_checked_fixture(tc, p2p_peer_fixture, p2p_peer_teardown);
	tcase_add_test(tc, higher_end_adopts_without_resolving);
	tcase_add_test(tc, request_held_before_the_connect_is_adopted);
	tcase_add_test(tc, lower_end_resolves_as_usual);
	tcase_add_test(tc, lower_end_takes_its_device_from_the_listener);
	tcase_add_test(tc, lower_end_refused_resolution_leaves_no_device);
	tcase_add_test(tc, higher_end_leaves_its_route_whatever_its_listener);
	tcase_add_test(tc, plain_connect_of_a_route_left_for_later_fails);
	tcase_add_test(tc, second_route_resolution_fails);
	suite_add_tcase(s, tc);

	tc = tcase_create("resolved late");
	tcase_add_checked_fixture(tc, p2p_peer_fixture, p2p_peer_teardown);
	tcase_add_test(tc, refused_req_is_resolved_then_sent_again);
	tcase_add_test(tc, late_resolution_failure_is_unreachable);
	tcase_add_test(tc, late_resolve_command_refused_is_unreachable);
	tcase_add_test(tc, late_resolution_with_its_port_taken_takes_another);
	tcase_add_test(tc, request_during_late_resolution_is_refused);
	tcase_add_test(tc, failed_adoption_keeps_the_resolved_addresses);
	tcase_add_test(tc, id_destroyed_with_its_route_left_for_later);
	suite_add_tcase(s, tc);

	tc = tcase_create("kernel id when needed");
	tcase_add_checked_fixture(tc, p2p_peer_fixture, p2p_peer_teardown);
	tcase_add_test(tc, kernel_id_is_made_by_the_first_command);
	tcase_add_test(tc, plain_id_resolves_without_a_p2p_record);
	tcase_add_test(tc, unused_id_never_reaches_the_kernel);
	tcase_add_test(tc, kernel_id_not_made_fails_the_command);
	tcase_add_test(tc, migrate_makes_the_kernel_id_then_moves_it);
	tcase_add_test(tc, concurrent_first_commands_make_one_kernel_id);
	tcase_add_test(tc, kernel_id_made_at_once_without_p2p_mode);
	suite_add_tcase(s, tc);

	tc = tcase_create("wildcard listener");
	tcase_add_checked_fixture(tc, wildcard_setup, bound_teardown);
	tcase_add_test(tc, higher_end_adopts_without_resolving);
	tcase_add_test(tc, lower_end_takes_its_device_from_the_listener);
	suite_add_tcase(s, tc);

	tc = tcase_create("infiniband");
	tcase_add_checked_fixture(tc, infiniband_setup, bound_teardown);
	tcase_add_test(tc, higher_end_adopts_without_resolving);
	tcase_add_test(tc, lower_end_takes_its_device_from_the_listener);
	suite_add_tcase(s, tc);
	return s;
}
