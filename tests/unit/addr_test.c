// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Binding and address/route resolution (src/cm/addr.c) against the fake
 * kernel, as rdma_bind_addr(3), rdma_resolve_addr(3),
 * rdma_resolve_route(3), rdma_get_src_port(3) and rdma_get_local_addr(3)
 * describe them: what the kernel resolved (device, port, addresses, GIDs,
 * P_Key, path) is in the id once the call returns (bind) or its event is
 * read (resolve); bad arguments are refused before the kernel is asked;
 * the kernel's refusals are passed on; every family has its length.
 */
#include <config.h>

#include <check.h>
#include <errno.h>
#include <string.h>
#include <sys/un.h>

#include "cm/cma.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"

static struct rdma_event_channel *ch;
static struct rdma_cm_id *id;

static void setup(void)
{
	ch = unit_fakes_open(true);
	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
}

static void teardown(void)
{
	rdma_destroy_id(id);
	unit_fakes_close(ch);
}

static uint32_t kid(void)
{
	return fake_ucma_kid_of(id)->handle;
}

START_TEST(bind_fills_in_the_local_side)
{
	struct sockaddr_in src = unit_ipv4("192.0.2.1", 7471);
	const struct sockaddr_in *local;

	ck_assert_int_eq(rdma_bind_addr(id, (struct sockaddr *)&src), 0);
	local = (const struct sockaddr_in *)rdma_get_local_addr(id);
	ck_assert_int_eq(local->sin_family, AF_INET);
	ck_assert_uint_eq(local->sin_addr.s_addr, src.sin_addr.s_addr);
	ck_assert_uint_eq(rdma_get_src_port(id), htons(7471));
	ck_assert_uint_eq(rdma_get_dst_port(id), 0);
	ck_assert_ptr_nonnull(id->verbs);
	ck_assert_uint_eq(id->port_num, 1);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_BIND), 1);
}
END_TEST

/* A wildcard bind: the kernel names no device, so the id has none yet. */
START_TEST(wildcard_bind_has_no_device)
{
	struct fake_ucma_route none = {0};
	struct sockaddr_in6 any = {.sin6_family = AF_INET6,
				   .sin6_port = htons(18515)};

	fake_ucma_set_route(&none);
	ck_assert_int_eq(rdma_bind_addr(id, (struct sockaddr *)&any), 0);
	ck_assert_ptr_null(id->verbs);
	ck_assert_ptr_null(id->pd);
	ck_assert_uint_eq(rdma_get_src_port(id), htons(18515));
}
END_TEST

START_TEST(bind_refuses_bad_input_and_passes_the_kernels_no)
{
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	struct sockaddr_in src = unit_ipv4("192.0.2.1", 7471);

	ck_assert_int_eq(rdma_bind_addr(id, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rdma_bind_addr(id, (struct sockaddr *)&un), -1);
	ck_assert_int_eq(errno, EAFNOSUPPORT);
	ck_assert_int_eq(rdma_bind_addr(NULL, (struct sockaddr *)&src), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_BIND), 0);
	fake_ucma_fail_next(RDMA_USER_CM_CMD_BIND, EADDRINUSE);
	ck_assert_int_eq(rdma_bind_addr(id, (struct sockaddr *)&src), -1);
	ck_assert_int_eq(errno, EADDRINUSE);
}
END_TEST

/* Resolution: the id has device, addresses and GIDs after the event. */
START_TEST(resolve_fills_in_both_sides_and_the_route)
{
	struct sockaddr_in dst = unit_ipv4("192.0.2.2", 7471);
	const struct sockaddr_in *peer;
	struct rdma_cm_event *ev;

	ck_assert_int_eq(
		rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1500), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR), 1);
	fake_ucma_event(kid(), RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	ev = unit_expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	ck_assert_ptr_nonnull(id->verbs);
	ck_assert_ptr_nonnull(id->pd);
	peer = (const struct sockaddr_in *)rdma_get_peer_addr(id);
	ck_assert_uint_eq(peer->sin_addr.s_addr, dst.sin_addr.s_addr);
	ck_assert_uint_eq(rdma_get_dst_port(id), htons(7471));
	ck_assert_uint_eq(id->route.addr.addr.ibaddr.sgid.raw[15], 1);
	ck_assert_uint_eq(id->route.addr.addr.ibaddr.dgid.raw[15], 2);
	rdma_ack_cm_event(ev);

	ck_assert_int_eq(rdma_resolve_route(id, 1500), 0);
	fake_ucma_event(kid(), RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	ev = unit_expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	ck_assert_int_eq(id->route.num_paths, 1);
	ck_assert_ptr_nonnull(id->route.path_rec);
	ck_assert_uint_eq(id->route.addr.addr.ibaddr.pkey, 0xffff);
	rdma_ack_cm_event(ev);
}
END_TEST

/* The source given to rdma_resolve_addr is the local address. */
START_TEST(resolve_with_a_source)
{
	struct sockaddr_in src = unit_ipv4("192.0.2.5", 0);
	struct sockaddr_in dst = unit_ipv4("192.0.2.2", 7471);
	const struct sockaddr_in *local;

	ck_assert_int_eq(rdma_resolve_addr(id, (struct sockaddr *)&src,
					   (struct sockaddr *)&dst, 1500),
			 0);
	fake_ucma_event(kid(), RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	rdma_ack_cm_event(unit_expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	local = (const struct sockaddr_in *)rdma_get_local_addr(id);
	ck_assert_uint_eq(local->sin_addr.s_addr, src.sin_addr.s_addr);
}
END_TEST

START_TEST(resolve_refuses_bad_input)
{
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	struct sockaddr_in dst = unit_ipv4("192.0.2.2", 7471);

	ck_assert_int_eq(rdma_resolve_addr(id, NULL, NULL, 1000), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(
		rdma_resolve_addr(id, NULL, (struct sockaddr *)&un, 1000), -1);
	ck_assert_int_eq(errno, EAFNOSUPPORT);
	ck_assert_int_eq(rdma_resolve_addr(id, (struct sockaddr *)&un,
					   (struct sockaddr *)&dst, 1000),
			 -1);
	ck_assert_int_eq(errno, EAFNOSUPPORT);
	ck_assert_int_eq(
		rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, -1), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rdma_resolve_route(id, -1), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rdma_resolve_route(NULL, 1000), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ROUTE), 0);
	/* The kernel's refusal is the caller's errno. */
	fake_ucma_fail_next(RDMA_USER_CM_CMD_RESOLVE_ROUTE, EINVAL);
	ck_assert_int_eq(rdma_resolve_route(id, 1000), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/*
 * Resolving again with the id's own addresses (rdma-core's rsocket does
 * so when a resolution timed out): the kernel is asked for them, and the
 * id keeps them.
 */
START_TEST(resolve_again_with_the_ids_own_addresses)
{
	struct sockaddr_in dst = unit_ipv4("192.0.2.2", 7471);
	const struct rdma_ucm_resolve_addr *c;
	const struct sockaddr_in *peer;

	ck_assert_int_eq(
		rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000), 0);
	fake_ucma_event(kid(), RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT);
	rdma_ack_cm_event(unit_expect_event(ch, RDMA_CM_EVENT_ADDR_ERROR));
	ck_assert_int_eq(
		rdma_resolve_addr(id, NULL, rdma_get_peer_addr(id), 2000), 0);
	c = (const void *)fake_ucma_last(RDMA_USER_CM_CMD_RESOLVE_ADDR)->body;
	ck_assert_uint_eq(c->dst_size, sizeof(dst));
	ck_assert_mem_eq(&c->dst_addr, &dst, sizeof(dst));
	peer = (const struct sockaddr_in *)rdma_get_peer_addr(id);
	ck_assert_int_eq(peer->sin_family, AF_INET);
	ck_assert_uint_eq(peer->sin_addr.s_addr, dst.sin_addr.s_addr);
	ck_assert_uint_eq(rdma_get_dst_port(id), htons(7471));
}
END_TEST

/* ADDR_ERROR reaches the application with the kernel's status. */
START_TEST(an_address_error_is_reported)
{
	struct sockaddr_in dst = unit_ipv4("192.0.2.2", 7471);
	struct rdma_cm_event *ev;

	ck_assert_int_eq(
		rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000), 0);
	fake_ucma_event(kid(), RDMA_CM_EVENT_ADDR_ERROR, -EHOSTUNREACH);
	ev = unit_expect_event(ch, RDMA_CM_EVENT_ADDR_ERROR);
	ck_assert_int_eq(ev->status, -EHOSTUNREACH);
	rdma_ack_cm_event(ev);
}
END_TEST

/* AF_IB: the port is the low 16 bits of the service ID. */
START_TEST(af_ib_ports_come_from_the_service_id)
{
	struct sockaddr_ib sib = {
		.sib_family = AF_IB,
		.sib_sid = htobe64(RDMA_IB_IP_PS_TCP | 7471),
		.sib_sid_mask = htobe64(RDMA_IB_IP_PS_MASK),
	};

	sib.sib_addr.sib_raw[0] = 0xfe;
	sib.sib_addr.sib_raw[1] = 0x80;
	sib.sib_addr.sib_raw[15] = 1;
	ck_assert_int_eq(rdma_bind_addr(id, (struct sockaddr *)&sib), 0);
	ck_assert_int_eq(rdma_get_local_addr(id)->sa_family, AF_IB);
	ck_assert_uint_eq(rdma_get_src_port(id), htons(7471));
	ck_assert_ptr_nonnull(id->verbs);
}
END_TEST

START_TEST(ports_of_no_id)
{
	errno = 0;
	ck_assert_uint_eq(rdma_get_src_port(NULL), 0);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_uint_eq(rdma_get_dst_port(NULL), 0);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(address_lengths)
{
	struct sockaddr sa = {.sa_family = AF_UNIX};
	struct sockaddr_ib sib = {.sib_family = AF_IB};

	ck_assert_uint_eq(cma_addr_len(NULL), 0);
	ck_assert_uint_eq(cma_addr_len(&sa), 0);
	ck_assert_uint_eq(cma_addr_len((struct sockaddr *)&sib),
			  sizeof(struct sockaddr_ib));
}
END_TEST

Suite *addr_suite(void)
{
	Suite *s = suite_create("addr");
	TCase *tc = tcase_create("addr");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, bind_fills_in_the_local_side);
	tcase_add_test(tc, wildcard_bind_has_no_device);
	tcase_add_test(tc, bind_refuses_bad_input_and_passes_the_kernels_no);
	tcase_add_test(tc, resolve_fills_in_both_sides_and_the_route);
	tcase_add_test(tc, resolve_with_a_source);
	tcase_add_test(tc, resolve_refuses_bad_input);
	tcase_add_test(tc, resolve_again_with_the_ids_own_addresses);
	tcase_add_test(tc, an_address_error_is_reported);
	tcase_add_test(tc, af_ib_ports_come_from_the_service_id);
	tcase_add_test(tc, ports_of_no_id);
	suite_add_tcase(s, tc);
	tc = tcase_create("lengths");
	tcase_add_test(tc, address_lengths);
	suite_add_tcase(s, tc);
	return s;
}
