// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * riomap, riounmap and riowrite's checks (src/rsocket/iomap.c) on the fake
 * kernel and device, for a stream rsocket given a protection domain and
 * the number of iomap slots its peer advertised: a mapping for writing
 * takes one of those slots and is sent on the next write, a local one
 * does not; an unmap gives its slot back; what no slot or no peer allows
 * is refused, and rclose deregisters whatever is still mapped.  Data
 * landing in a mapped buffer is in rsocket_stream_test.
 */
#include <config.h>

#include <check.h>
#include <errno.h>
#include <sys/mman.h>

#include "rsocket/rs.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"
#include "rs_call.h"

static struct ibv_pd *pd;

/* A connected stream whose peer advertised @slots iomap slots. */
static int mapping_stream(uint32_t slots)
{
	int s = connected_stream();
	struct rsocket *rs = rs_get(s);

	ck_assert_ptr_nonnull(rs);
	pd = ibv_alloc_pd(verbs);
	ck_assert_ptr_nonnull(pd);
	rs->cm_id->pd = pd;
	rs->remote_iomap.length = slots;
	rs_put(rs);
	return s;
}

static bool pending(int s)
{
	struct rsocket *rs = rs_get(s);
	bool ret = rs->iomap_pending;

	rs_put(rs);
	return ret;
}

static void close_mapping_stream(int s)
{
	ck_assert_int_eq(rclose(s), 0);
	ck_assert_int_eq(fake_verbs_counts().mrs, 0);
	ck_assert_int_eq(ibv_dealloc_pd(pd), 0);
}

/* Two slots: two writable mappings, then ENOMEM until one is unmapped. */
START_TEST(a_writable_mapping_takes_a_peer_slot)
{
	static char buf[3][64];
	int s = mapping_stream(2);

	ck_assert_int_eq(riomap(s, buf[0], 64, PROT_WRITE, 0, 0), 0);
	ck_assert(pending(s));
	ck_assert_int_eq(riomap(s, buf[1], 64, PROT_WRITE, 0, 64), 64);
	ck_assert_int_eq(riomap(s, buf[2], 64, PROT_WRITE, 0, 128), -1);
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_int_eq(riounmap(s, buf[0], 64), 0);
	ck_assert_int_eq(riomap(s, buf[2], 64, PROT_WRITE, 0, 128), 128);
	ck_assert_int_eq(fake_verbs_counts().mrs, 2);
	close_mapping_stream(s); /* buf[1] and buf[2] still mapped */
}
END_TEST

/*
 * A local mapping (PROT_NONE) takes no slot, even where the peer has
 * none, and is offered at the buffer's address when no offset is asked.
 */
START_TEST(a_local_mapping_takes_no_slot)
{
	static char buf[64];
	int s = mapping_stream(0);

	ck_assert_int_eq(riomap(s, buf, sizeof(buf), PROT_WRITE, 0, -1), -1);
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_int_eq(riomap(s, buf, sizeof(buf), PROT_NONE, 0, -1),
			 (off_t)(uintptr_t)buf);
	ck_assert(!pending(s));
	ck_assert_int_eq(riounmap(s, buf, sizeof(buf)), 0);
	ck_assert_int_eq(riounmap(s, buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, EINVAL);
	close_mapping_stream(s);
}
END_TEST

/* Bad arguments and sockets that cannot map are EINVAL, as riomap(3). */
START_TEST(bad_mappings_are_refused)
{
	static char buf[64];
	int s = mapping_stream(2), d = bound_dgram();

	ck_assert_int_eq(riomap(s, NULL, 64, PROT_WRITE, 0, 0), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(riomap(s, buf, 0, PROT_WRITE, 0, 0), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(riomap(s, buf, 64, PROT_READ, 0, 0), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(riounmap(s, buf, 64), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(riomap(d, buf, 64, PROT_WRITE, 0, 0), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(riounmap(d, buf, 64), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq((ssize_t)riowrite(d, buf, 64, 0, 0), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(fake_verbs_counts().mrs, 0);
	ck_assert_int_eq(rclose(d), 0);
	close_mapping_stream(s);
}
END_TEST

/*
 * riowrite to an offset the peer never mapped is EINVAL; on a socket not
 * connected it is ENOTCONN.
 */
START_TEST(riowrite_needs_a_peer_mapping)
{
	static char buf[64];
	int s = mapping_stream(2), u = rsocket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_eq((ssize_t)riowrite(s, buf, 64, 4096, 0), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_ge(u, 0);
	ck_assert_int_eq((ssize_t)riowrite(u, buf, 64, 0, 0), -1);
	ck_assert_int_eq(errno, ENOTCONN);
	ck_assert_int_eq(rclose(u), 0);
	close_mapping_stream(s);
}
END_TEST

Suite *rsocket_iomap_suite(void)
{
	Suite *s = suite_create("rsocket_iomap");
	TCase *tc = tcase_create("iomap");

	tcase_add_checked_fixture(tc, rs_call_setup, rs_call_teardown);
	tcase_add_test(tc, a_writable_mapping_takes_a_peer_slot);
	tcase_add_test(tc, a_local_mapping_takes_no_slot);
	tcase_add_test(tc, bad_mappings_are_refused);
	tcase_add_test(tc, riowrite_needs_a_peer_mapping);
	suite_add_tcase(s, tc);
	return s;
}
