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
#include "test_hooks.h"

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

	for (d = rs->dest_lru; d; d = d->lru_next)
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

static Suite *dgram_dest_suite(void)
{
	Suite *s = suite_create("rsocket_dgram_dest");
	TCase *t = tcase_create("dests");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, bad_addresses_are_refused);
	tcase_add_test(t, one_destination_per_address_and_port);
	tcase_add_test(t, the_least_recently_used_is_evicted);
	tcase_add_test(t, pinned_and_connected_destinations_stay);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN(dgram_dest_suite)
