/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * For unit tests of datagram rsockets on the fakes (include fake_ucma.h,
 * fake_verbs.h and unit.h first): a socket made with rsocket(3) as a
 * program makes it, the library's record of it at hand, one bound to the
 * loopback address, and the check that rclose left nothing of its QPs
 * behind.
 */
#ifndef RS_DGRAM_H_UNIT
#define RS_DGRAM_H_UNIT

#include <string.h>
#include <rdma/rsocket.h>

#include "rsocket/rs.h"
#include "rsocket/dgram.h"

/* A new IPv4 datagram rsocket; *rs holds a reference until closed. */
static inline int unit_dgram_open(struct rsocket **rs)
{
	int fd = rsocket(AF_INET, SOCK_DGRAM, 0);

	ck_assert_int_ge(fd, 0);
	*rs = rs_get(fd);
	ck_assert_ptr_nonnull(*rs);
	return fd;
}

/* rclose, after which no QP, CQ, channel or memory region is left. */
static inline void unit_dgram_close(int fd, struct rsocket *rs)
{
	struct fake_verbs_counts c;

	rs_put(rs);
	ck_assert_int_eq(rclose(fd), 0);
	c = fake_verbs_counts();
	ck_assert_int_eq(c.qps, 0);
	ck_assert_int_eq(c.cqs, 0);
	ck_assert_int_eq(c.channels, 0);
	ck_assert_int_eq(c.mrs, 0);
	ck_assert_int_eq(c.ahs, 0);
}

static inline union rs_sockaddr unit_rs_ipv4(const char *ip, uint16_t port)
{
	union rs_sockaddr a;

	memset(&a, 0, sizeof(a));
	a.sin = unit_ipv4(ip, port);
	return a;
}

/* A datagram rsocket bound to a port of 127.0.0.1, its address in *addr. */
static inline int unit_dgram_bound(union rs_sockaddr *addr)
{
	socklen_t len = sizeof(*addr);
	union rs_sockaddr lo = unit_rs_ipv4("127.0.0.1", 0);
	int s = rsocket(AF_INET, SOCK_DGRAM, 0);

	ck_assert_int_ge(s, 0);
	ck_assert_int_eq(rbind(s, &lo.sa, sizeof(lo.sin)), 0);
	ck_assert_int_eq(rgetsockname(s, &addr->sa, &len), 0);
	ck_assert_uint_eq(len, sizeof(addr->sin));
	ck_assert_uint_ne(addr->sin.sin_port, 0);
	return s;
}

#endif /* RS_DGRAM_H_UNIT */
