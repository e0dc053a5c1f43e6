// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The UDP resolver of datagram rsockets (src/rsocket/dgram_udp.c): what
 * arrives on an rsocket's UDP socket comes from the network, and a
 * message that is not a well-formed resolver message (too short, or
 * junk) is dropped and counted, never queued for rrecv.  No RDMA device.
 */
#include <config.h>

#include <check.h>
#include <unistd.h>

#include "rsocket/rs.h"
#include "rsocket/dgram.h"
#include "fake_verbs.h"
#include "unit.h"
#include "rs_dgram.h"

/*
 * A 40-byte message of junk and a 3-byte one, from a plain UDP socket: no
 * datagram for rrecv, two drops counted.
 */
START_TEST(malformed_udp_is_dropped)
{
	union rs_sockaddr addr;
	struct rsocket *rs;
	uint8_t junk[40];
	char buf[8];
	int s = unit_dgram_bound(&addr), u, i;

	u = socket(AF_INET, SOCK_DGRAM, 0);
	ck_assert_int_ge(u, 0);
	for (i = 0; i < (int)sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 37);
	ck_assert_int_eq(
		sendto(u, junk, sizeof(junk), 0, &addr.sa, sizeof(addr.sin)),
		sizeof(junk));
	ck_assert_int_eq(sendto(u, junk, 3, 0, &addr.sa, sizeof(addr.sin)), 3);
	usleep(10000);
	ck_assert_int_eq(rrecv(s, buf, sizeof(buf), MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EAGAIN);
	rs = rs_get(s);
	ck_assert_ptr_nonnull(rs);
	ck_assert_uint_eq(rs->ds_dropped, 2);
	rs_put(rs);
	close(u);
	ck_assert_int_eq(rclose(s), 0);
}
END_TEST

Suite *rsocket_dgram_udp_suite(void)
{
	Suite *s = suite_create("rsocket_dgram_udp");
	TCase *tc = tcase_create("udp");

	tcase_add_test(tc, malformed_udp_is_dropped);
	suite_add_tcase(s, tc);
	return s;
}
