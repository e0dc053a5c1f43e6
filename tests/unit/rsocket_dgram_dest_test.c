// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The destinations of datagram rsockets (src/rsocket/dgram_dest.c) on the
 * fake kernel and device, for a socket bound to 127.0.0.1 as rbind(3)
 * binds it:
 *
 *  - a destination is looked up by family, address and port; a bad
 *    address is refused as sendto(2) refuses it (EFAULT, EINVAL,
 *    EAFNOSUPPORT) before anything is made;
 *  - every destination reached from one local address shares its QP;
 *  - anyone can make one with a datagram from a new source, so at
 *    rs_def.max_dgram_dest (RDMA_RS_MAX_DGRAM_DEST) the least recently
 *    used is evicted with its address handle, never one that is pinned
 *    (a send or resolution in progress) or the rconnect destination;
 *    when every one is, the new one is refused with ENOBUFS;
 *  - an address handle is resolved through the rdma_cm only for a peer
 *    that told us its QP number, and only by one thread at a time; on
 *    RoCE it carries the GRH with the kernel's route and the GID index of
 *    its source GID; a failed one is tried again after the peer's next
 *    message;
 *  - the first QP number a peer claims is kept: another one claimed later
 *    only puts the destination in doubt, until a UD datagram from the
 *    known one;
 *  - rclose frees them all.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <string.h>

#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"
#include "rs_dgram.h"
#include "cm/test_hooks.h"

static struct rdma_event_channel *ch;
static int fd;
static struct rsocket *rs;
static uint32_t saved_max;

static void setup(void)
{
	struct sockaddr_in lo = unit_ipv4("127.0.0.1", 0);

	ch = unit_fakes_open(true);
	fd = unit_dgram_open(&rs);
	ck_assert_int_eq(rbind(fd, (struct sockaddr *)&lo, sizeof(lo)), 0);
	saved_max = rs_def.max_dgram_dest;
	rs_def.max_dgram_dest = 3;
}

static void teardown(void)
{
	rs_def.max_dgram_dest = saved_max;
	unit_dgram_close(fd, rs);
	unit_fakes_close(ch);
}

/* The destination for @ip:@port as the send path gets it (locked). */
static int dest_get(const char *ip, uint16_t port, struct ds_dest **dest)
{
	struct sockaddr_in sin = unit_ipv4(ip, port);
	int ret;

	pthread_mutex_lock(&rs->lock);
	ret = ds_dest_get(rs, (struct sockaddr *)&sin, sizeof(sin), dest);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

static struct ds_dest *dest_of(const char *ip, uint16_t port)
{
	struct ds_dest *dest = NULL;

	ck_assert_int_eq(dest_get(ip, port, &dest), 0);
	ck_assert_ptr_nonnull(dest);
	return dest;
}

/* Whether a destination for @ip:@port exists, by the LRU list. */
static bool known(const char *ip, uint16_t port)
{
	struct sockaddr_in sin = unit_ipv4(ip, port);
	struct ds_dest *d;

	for (d = cma_list_first(&rs->dest_lru, struct ds_dest, lru); d;
	     d = cma_list_next(d, lru))
		if (d->addr.sin.sin_port == sin.sin_port &&
		    d->addr.sin.sin_addr.s_addr == sin.sin_addr.s_addr)
			return true;
	return false;
}

START_TEST(bad_addresses_are_refused)
{
	struct sockaddr_in6 six = {.sin6_family = AF_INET6};
	struct sockaddr_in sin = unit_ipv4("192.0.2.2", 7100);
	struct ds_dest *dest;

	pthread_mutex_lock(&rs->lock);
	errno = 0;
	ck_assert_int_eq(ds_dest_get(rs, NULL, sizeof(sin), &dest), -1);
	ck_assert_int_eq(errno, EFAULT);
	ck_assert_int_eq(ds_dest_get(rs, (struct sockaddr *)&sin, 1, &dest),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(ds_dest_get(rs, (struct sockaddr *)&sin,
				     sizeof(sin) - 1, &dest),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(
		ds_dest_get(rs, (struct sockaddr *)&six, sizeof(six), &dest),
		-1);
	ck_assert_int_eq(errno, EAFNOSUPPORT);
	pthread_mutex_unlock(&rs->lock);
	ck_assert_uint_eq(ds_dest_count(rs), 0);
	ck_assert_ptr_null(rs->qp_list); /* nothing was made */
}
END_TEST

START_TEST(one_destination_per_address_and_port)
{
	struct ds_dest *a = dest_of("192.0.2.2", 7100);
	struct ds_dest *b = dest_of("192.0.2.2", 7101);
	struct ds_dest *c = dest_of("192.0.2.3", 7100);

	ck_assert_ptr_eq(dest_of("192.0.2.2", 7100), a);
	ck_assert_ptr_ne(a, b);
	ck_assert_ptr_ne(a, c);
	ck_assert_uint_eq(ds_dest_count(rs), 3);
	/* All leave from the bound address, through its one QP. */
	ck_assert_ptr_nonnull(a->qp);
	ck_assert_ptr_eq(b->qp, a->qp);
	ck_assert_ptr_eq(c->qp, a->qp);
	ck_assert_uint_eq(ntohl(a->qp->src.sin.sin_addr.s_addr),
			  INADDR_LOOPBACK);
	ck_assert_int_eq(fake_verbs_counts().qps, 1);
	/* Nothing is resolved before a peer has told us its QP. */
	ck_assert_ptr_null(a->ah);
	ck_assert(!a->qpn_known);
	pthread_mutex_lock(&rs->lock);
	ck_assert_int_eq(ds_dest_resolve(rs, a), 0);
	pthread_mutex_unlock(&rs->lock);
	ck_assert_ptr_null(a->ah);
}
END_TEST

START_TEST(the_least_recently_used_is_evicted)
{
	struct ibv_ah_attr attr = {.dlid = 1, .port_num = 1};
	struct ds_dest *a = dest_of("192.0.2.2", 7100);

	/* An evicted destination's address handle goes with it. */
	a->ah = ibv_create_ah(a->qp->cm_id->pd, &attr);
	ck_assert_ptr_nonnull(a->ah);
	dest_of("192.0.2.3", 7100);
	dest_of("192.0.2.4", 7100);
	/* a is used again: 192.0.2.3 is now the oldest. */
	dest_of("192.0.2.2", 7100);
	dest_of("192.0.2.5", 7100);
	ck_assert_uint_eq(ds_dest_count(rs), 3);
	ck_assert(!known("192.0.2.3", 7100));
	ck_assert(known("192.0.2.2", 7100));
	ck_assert_int_eq(fake_verbs_counts().ahs, 1);
	dest_of("192.0.2.6", 7100);
	dest_of("192.0.2.7", 7100);
	ck_assert(!known("192.0.2.2", 7100));
	ck_assert_int_eq(fake_verbs_counts().ahs, 0);
	ck_assert_uint_eq(ds_dest_count(rs), 3);
}
END_TEST

START_TEST(pinned_and_connected_destinations_stay)
{
	struct ds_dest *a = dest_of("192.0.2.2", 7100);
	struct ds_dest *b = dest_of("192.0.2.3", 7100);
	struct ds_dest *d;

	dest_of("192.0.2.4", 7100);
	ds_dest_pin(a);
	rs->conn_dest = b;
	d = dest_of("192.0.2.5", 7100);
	ck_assert(known("192.0.2.2", 7100));
	ck_assert(known("192.0.2.3", 7100));
	ck_assert(!known("192.0.2.4", 7100));
	/* Nothing left to evict: the new one is refused, none is lost. */
	ds_dest_pin(d);
	errno = 0;
	ck_assert_int_eq(dest_get("192.0.2.6", 7100, &d), -1);
	ck_assert_int_eq(errno, ENOBUFS);
	ck_assert_uint_eq(ds_dest_count(rs), 3);
	/* Unpinned, the oldest goes. */
	ds_dest_unpin(a);
	dest_of("192.0.2.6", 7100);
	ck_assert(!known("192.0.2.2", 7100));
	ck_assert(known("192.0.2.5", 7100));
}
END_TEST

/* Resolve @dest as the send path does (locked, pinned by the caller). */
static int resolve(struct ds_dest *dest)
{
	int ret;

	pthread_mutex_lock(&rs->lock);
	ret = ds_dest_resolve(rs, dest);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

/*
 * The kernel resolves at once; the route it reports goes fe80::1 ->
 * fe80::2 (fake_verbs_install), the port's second GID being fe80::1.
 */
static void kernel_resolves(int addr_status)
{
	struct fake_verbs_port port = {.ngids = 2};

	inet_pton(AF_INET6, "fe80::5", port.gids[0].raw);
	inet_pton(AF_INET6, "fe80::1", port.gids[1].raw);
	fake_verbs_set_port(NULL, &port);
	unit_kernel_resolves(addr_status);
}

START_TEST(a_peer_with_a_known_qp_is_resolved)
{
	struct ds_dest *a = dest_of("192.0.2.2", 7100);
	struct ibv_ah_attr attr;
	uint8_t dgid[16];

	kernel_resolves(0);
	/* Not before the peer has told us its QP. */
	ck_assert_int_eq(resolve(a), 0);
	ck_assert_ptr_null(a->ah);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR), 0);
	a->qpn = 0x77;
	a->qpn_known = true;
	ck_assert_int_eq(resolve(a), 0);
	ck_assert_ptr_nonnull(a->ah);
	ck_assert_uint_eq(a->pins, 0);
	ck_assert(!a->resolving);
	attr = fake_verbs_ah_attr(a->ah);
	ck_assert_uint_eq(attr.is_global, 1); /* RoCE: always a GRH */
	inet_pton(AF_INET6, "fe80::2", dgid);
	ck_assert_mem_eq(attr.grh.dgid.raw, dgid, 16);
	ck_assert_uint_eq(attr.grh.sgid_index, 1);
	ck_assert_uint_eq(attr.grh.hop_limit, 64);
	ck_assert_uint_eq(attr.port_num, 1);
	/* Its own id, from the QP's address, gone once resolved. */
	ck_assert(!fake_ucma_kid_live(
		fake_ucma_last(RDMA_USER_CM_CMD_RESOLVE_ADDR)->handle, 0));
	/* Resolved again: the new handle replaces the old one. */
	ck_assert_int_eq(resolve(a), 0);
	ck_assert_ptr_nonnull(a->ah);
	ck_assert_int_eq(fake_verbs_counts().ahs, 1);
	/* Another thread resolving it already: nothing is asked. */
	a->resolving = true;
	ck_assert_int_eq(resolve(a), 0);
	a->resolving = false;
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR), 2);
}
END_TEST

/*
 * A failed resolution is not tried again by every send, only after the
 * peer's next UDP message; the QP number stays (forgotten, the next UDP
 * message from a spoofed source would set it).
 */
START_TEST(a_failed_resolution_waits_for_the_peer)
{
	struct ds_dest *a = dest_of("192.0.2.2", 7100);

	kernel_resolves(EHOSTUNREACH);
	a->qpn = 0x77;
	a->qpn_known = true;
	ck_assert_int_eq(resolve(a), -1);
	ck_assert_ptr_null(a->ah);
	ck_assert(a->route_failed);
	ck_assert(a->qpn_known);
	ck_assert_uint_eq(a->qpn, 0x77);
	ck_assert_uint_eq(a->pins, 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ROUTE), 0);
	ck_assert_int_eq(resolve(a), 0); /* not asked again */
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR), 1);
	/* The peer's next message: the next send tries again. */
	pthread_mutex_lock(&rs->lock);
	ds_dest_claim_qpn(rs, a, 0x77);
	pthread_mutex_unlock(&rs->lock);
	ck_assert(!a->route_failed);
	ck_assert_int_eq(resolve(a), -1);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR), 2);
}
END_TEST

/* What a UDP message from the peer's address claims, as the resolver does. */
static void claim(struct ds_dest *dest, uint32_t qpn)
{
	pthread_mutex_lock(&rs->lock);
	ds_dest_claim_qpn(rs, dest, qpn);
	pthread_mutex_unlock(&rs->lock);
}

/* A UD datagram from QP @src_qp, its header naming @ip:@port. */
static void ud_from(const char *ip, uint16_t port, uint32_t src_qp)
{
	union rs_sockaddr src = unit_rs_ipv4(ip, port);

	pthread_mutex_lock(&rs->lock);
	ds_dest_confirm_qpn(rs, &src, src_qp);
	pthread_mutex_unlock(&rs->lock);
}

/*
 * The first QP number a destination hears of is taken; a different one
 * claimed later (over UDP, whose source anyone can spoof) leaves it and
 * puts the destination in doubt; only a UD datagram from the known QP
 * number, naming the destination, ends the doubt.  An evicted destination
 * takes its doubt with it.
 */
START_TEST(a_known_qp_number_is_not_moved_by_a_claim)
{
	struct ds_dest *a = dest_of("192.0.2.2", 7100);
	struct ds_dest *b = dest_of("192.0.2.3", 7100);

	claim(a, 0x77);
	ck_assert(a->qpn_known);
	ck_assert_uint_eq(a->qpn, 0x77);
	claim(a, 0x77); /* the same again: nothing to doubt */
	ck_assert(!a->qpn_doubt);
	claim(a, 0x99);
	ck_assert_uint_eq(a->qpn, 0x77);
	ck_assert(a->qpn_doubt);
	ck_assert_uint_eq(rs->dest_doubts, 1);
	/* The claimed QP, another peer's header, another port: no. */
	ud_from("192.0.2.2", 7100, 0x99);
	ud_from("192.0.2.3", 7100, 0x77);
	ud_from("192.0.2.2", 7101, 0x77);
	ck_assert(a->qpn_doubt);
	ud_from("192.0.2.2", 7100, 0x77);
	ck_assert(!a->qpn_doubt);
	ck_assert_uint_eq(rs->dest_doubts, 0);
	ck_assert_uint_eq(a->qpn, 0x77);
	/* Evicted in doubt: the count goes with it. */
	claim(b, 0x10);
	claim(b, 0x11);
	ck_assert_uint_eq(rs->dest_doubts, 1);
	dest_of("192.0.2.4", 7100);
	dest_of("192.0.2.2", 7100); /* b is now the oldest */
	dest_of("192.0.2.5", 7100);
	ck_assert(!known("192.0.2.3", 7100));
	ck_assert_uint_eq(rs->dest_doubts, 0);
}
END_TEST

Suite *rsocket_dgram_dest_suite(void)
{
	Suite *s = suite_create("rsocket_dgram_dest");
	TCase *t = tcase_create("dests");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, bad_addresses_are_refused);
	tcase_add_test(t, one_destination_per_address_and_port);
	tcase_add_test(t, the_least_recently_used_is_evicted);
	tcase_add_test(t, pinned_and_connected_destinations_stay);
	tcase_add_test(t, a_peer_with_a_known_qp_is_resolved);
	tcase_add_test(t, a_failed_resolution_waits_for_the_peer);
	tcase_add_test(t, a_known_qp_number_is_not_moved_by_a_claim);
	suite_add_tcase(s, t);
	return s;
}
