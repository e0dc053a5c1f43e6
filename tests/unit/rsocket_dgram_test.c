// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for datagram rsockets: the parsers of what arrives from the
 * network (UD receives with their GRH, UDP resolver messages), and the
 * parts of the socket calls that need no RDMA device: the UDP socket an
 * rsocket owns, argument checks, readiness.  Malformed UDP messages being
 * dropped and counted are dgram_udp.c's, in rsocket_dgram_udp_test.
 */
#include <config.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <check.h>
#include <poll.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rsocket/rs.h"
#include "rsocket/dgram.h"
#include "cm/test_hooks.h"
#include "fake_verbs.h"
#include "unit.h"
#include "rs_dgram.h"

static union rs_sockaddr sin4(uint32_t host, uint16_t port)
{
	union rs_sockaddr a;

	memset(&a, 0, sizeof(a));
	a.sin.sin_family = AF_INET;
	a.sin.sin_addr.s_addr = htonl(host);
	a.sin.sin_port = htons(port);
	return a;
}

/* A UD receive buffer: GRH, the header for @from, then @len payload bytes. */
static size_t ud_buf(uint8_t *buf, const union rs_sockaddr *from, size_t len)
{
	struct ds_wire_hdr h;
	size_t hlen = ds_hdr_encode(&h, from);

	memset(buf, 0xee, DS_WIRE_GRH_LEN);
	memcpy(buf + DS_WIRE_GRH_LEN, &h, hlen);
	memset(buf + DS_WIRE_GRH_LEN + hlen, 'x', len);
	return DS_WIRE_GRH_LEN + hlen + len;
}

START_TEST(ud_msg_ipv4)
{
	uint8_t buf[DS_WIRE_GRH_LEN + DS_MSG_SIZE];
	union rs_sockaddr from = sin4(0xc0000202, 7472);
	struct ds_ud_msg m;
	size_t n = ud_buf(buf, &from, 100);

	ck_assert_int_eq(ds_ud_msg_parse(buf, n, sizeof(buf), &m), 0);
	ck_assert_uint_eq(m.offset, DS_WIRE_GRH_LEN + DS_IPV4_HDR_LEN);
	ck_assert_uint_eq(m.length, 100);
	ck_assert_int_eq(m.src.sa.sa_family, AF_INET);
	ck_assert_uint_eq(m.src.sin.sin_addr.s_addr, from.sin.sin_addr.s_addr);
	ck_assert_uint_eq(m.src.sin.sin_port, from.sin.sin_port);
	/* An empty datagram is a datagram. */
	n = ud_buf(buf, &from, 0);
	ck_assert_int_eq(ds_ud_msg_parse(buf, n, sizeof(buf), &m), 0);
	ck_assert_uint_eq(m.length, 0);
}
END_TEST

START_TEST(ud_msg_ipv6)
{
	uint8_t buf[DS_WIRE_GRH_LEN + DS_MSG_SIZE];
	union rs_sockaddr from;
	struct ds_ud_msg m;
	size_t n;

	memset(&from, 0, sizeof(from));
	from.sin6.sin6_family = AF_INET6;
	from.sin6.sin6_port = htons(9);
	inet_pton(AF_INET6, "2001:db8::2", &from.sin6.sin6_addr);
	n = ud_buf(buf, &from, 5);
	ck_assert_int_eq(ds_ud_msg_parse(buf, n, sizeof(buf), &m), 0);
	ck_assert_uint_eq(m.offset, DS_WIRE_GRH_LEN + DS_IPV6_HDR_LEN);
	ck_assert_uint_eq(m.length, 5);
	ck_assert_int_eq(m.src.sa.sa_family, AF_INET6);
	ck_assert_mem_eq(&m.src.sin6.sin6_addr, &from.sin6.sin6_addr, 16);
	/* An IPv6 header cut short is no header. */
	ck_assert_int_eq(
		ds_ud_msg_parse(buf, DS_WIRE_GRH_LEN + 20, sizeof(buf), &m),
		-1);
}
END_TEST

START_TEST(ud_msg_rejects_malformed)
{
	uint8_t buf[DS_WIRE_GRH_LEN + DS_MSG_SIZE];
	union rs_sockaddr from = sin4(0xc0000201, 1);
	struct ds_ud_msg m;
	size_t n = ud_buf(buf, &from, 10);

	/* Shorter than GRH + header, or longer than the buffer. */
	ck_assert_int_eq(ds_ud_msg_parse(buf, 0, sizeof(buf), &m), -1);
	ck_assert_int_eq(ds_ud_msg_parse(buf, DS_WIRE_GRH_LEN, sizeof(buf), &m),
			 -1);
	ck_assert_int_eq(
		ds_ud_msg_parse(buf, DS_WIRE_GRH_LEN + 7, sizeof(buf), &m), -1);
	ck_assert_int_eq(ds_ud_msg_parse(buf, sizeof(buf) + 1, sizeof(buf), &m),
			 -1);
	ck_assert_int_eq(ds_ud_msg_parse(NULL, n, sizeof(buf), &m), -1);
	/* Unknown version; a length that does not match the version. */
	buf[DS_WIRE_GRH_LEN] = 5;
	ck_assert_int_eq(ds_ud_msg_parse(buf, n, sizeof(buf), &m), -1);
	buf[DS_WIRE_GRH_LEN] = 4;
	buf[DS_WIRE_GRH_LEN + 1] = DS_IPV6_HDR_LEN;
	ck_assert_int_eq(ds_ud_msg_parse(buf, n, sizeof(buf), &m), -1);
	buf[DS_WIRE_GRH_LEN] = 6;
	buf[DS_WIRE_GRH_LEN + 1] = DS_IPV4_HDR_LEN;
	ck_assert_int_eq(ds_ud_msg_parse(buf, n, sizeof(buf), &m), -1);
}
END_TEST

/*
 * A sender named in a socket's family: IPv4 as IPv4-mapped IPv6 for an
 * IPv6 socket and back; an IPv6 address has no IPv4 form.
 */
START_TEST(sender_in_the_socket_family)
{
	union rs_sockaddr a = sin4(0xc0000201, 7000), v6;
	uint8_t mapped[16] = {[10] = 0xff, [11] = 0xff, 192, 0, 2, 1};

	ck_assert_int_eq(ds_addr_in_family(&a, AF_INET), 0);
	ck_assert_int_eq(a.sa.sa_family, AF_INET);
	ck_assert_int_eq(ds_addr_in_family(&a, AF_INET6), 0);
	ck_assert_int_eq(a.sa.sa_family, AF_INET6);
	ck_assert_mem_eq(&a.sin6.sin6_addr, mapped, 16);
	ck_assert_uint_eq(a.sin6.sin6_port, htons(7000));
	ck_assert_int_eq(ds_addr_in_family(&a, AF_INET), 0);
	ck_assert_int_eq(a.sa.sa_family, AF_INET);
	ck_assert_uint_eq(a.sin.sin_addr.s_addr, htonl(0xc0000201));
	ck_assert_uint_eq(a.sin.sin_port, htons(7000));
	memset(&v6, 0, sizeof(v6));
	v6.sin6.sin6_family = AF_INET6;
	inet_pton(AF_INET6, "2001:db8::2", &v6.sin6.sin6_addr);
	a = v6;
	ck_assert_int_eq(ds_addr_in_family(&a, AF_INET), -1);
	ck_assert_mem_eq(&a, &v6, sizeof(a)); /* left as it was */
}
END_TEST

/* A UDP resolver message: header for QP @qpn, then @len payload bytes. */
static size_t udp_buf(uint8_t *buf, uint8_t op, uint32_t qpn,
		      const union rs_sockaddr *src, size_t len)
{
	struct ds_wire_udp_hdr h;
	size_t hlen = ds_udp_hdr_encode(&h, op, qpn, src);

	memcpy(buf, &h, hlen);
	memset(buf + hlen, 'y', len);
	return hlen + len;
}

START_TEST(udp_msg_data_and_ctrl)
{
	uint8_t buf[DS_UDP_IPV6_HDR_LEN + DS_MSG_SIZE + 1];
	union rs_sockaddr src = sin4(0xc0000201, 0);
	struct ds_udp_msg m;
	size_t n;

	n = udp_buf(buf, RS_OP_DATA, 0x11, &src, 64);
	ck_assert_int_eq(ds_udp_msg_parse(buf, n, AF_INET, &m), 0);
	ck_assert_uint_eq(m.op, RS_OP_DATA);
	ck_assert_uint_eq(m.qpn, 0x11);
	ck_assert_uint_eq(m.offset, DS_UDP_IPV4_HDR_LEN);
	ck_assert_uint_eq(m.length, 64);
	/* The top byte of the QP number field is not part of it. */
	n = udp_buf(buf, RS_OP_CTRL, 0xff000123, &src, 3);
	ck_assert_int_eq(ds_udp_msg_parse(buf, n, AF_INET, &m), 0);
	ck_assert_uint_eq(m.op, RS_OP_CTRL);
	ck_assert_uint_eq(m.qpn, 0x123);
	ck_assert_uint_eq(m.length, 0); /* a reply carries no data */
	/* The largest payload a datagram can have, and one byte more. */
	n = udp_buf(buf, RS_OP_DATA, 0x11, &src, DS_MSG_SIZE);
	ck_assert_int_eq(ds_udp_msg_parse(buf, n, AF_INET, &m), 0);
	n = udp_buf(buf, RS_OP_DATA, 0x11, &src, DS_MSG_SIZE + 1);
	ck_assert_int_eq(ds_udp_msg_parse(buf, n, AF_INET, &m), -1);
}
END_TEST

START_TEST(udp_msg_rejects_malformed)
{
	uint8_t buf[64];
	union rs_sockaddr src = sin4(0xc0000201, 0);
	struct ds_udp_msg m;
	size_t n = udp_buf(buf, RS_OP_DATA, 0x11, &src, 4);

	ck_assert_int_eq(
		ds_udp_msg_parse(buf, DS_UDP_IPV4_HDR_LEN - 1, AF_INET, &m),
		-1);
	ck_assert_int_eq(ds_udp_msg_parse(buf, n, AF_INET6, &m), -1);
	ck_assert_int_eq(ds_udp_msg_parse(NULL, n, AF_INET, &m), -1);
	/* Management QP numbers are never a peer's. */
	n = udp_buf(buf, RS_OP_DATA, 1, &src, 4);
	ck_assert_int_eq(ds_udp_msg_parse(buf, n, AF_INET, &m), -1);
	n = udp_buf(buf, RS_OP_DATA, 0, &src, 4);
	ck_assert_int_eq(ds_udp_msg_parse(buf, n, AF_INET, &m), -1);
	/* Ops other than data and reply; a wrong tag. */
	n = udp_buf(buf, RS_OP_SGL, 0x11, &src, 4);
	ck_assert_int_eq(ds_udp_msg_parse(buf, n, AF_INET, &m), -1);
	n = udp_buf(buf, RS_OP_DATA, 0x11, &src, 4);
	buf[0] ^= 1;
	ck_assert_int_eq(ds_udp_msg_parse(buf, n, AF_INET, &m), -1);
}
END_TEST

/* --- the socket calls, without an RDMA device ---------------------------- */

START_TEST(dgram_socket_calls)
{
	union rs_sockaddr addr, v6;
	struct pollfd pfd;
	char buf[8];
	int s = unit_dgram_bound(&addr), val = 64;
	socklen_t len;

	ck_assert_int_eq(rsocket(AF_IB, SOCK_DGRAM, 0), -1);
	ck_assert_int_eq(errno, EAFNOSUPPORT);
	ck_assert_int_eq(rsocket(AF_INET, SOCK_DGRAM, IPPROTO_TCP), -1);
	ck_assert_int_eq(errno, EPROTONOSUPPORT);

	/* Nothing queued: EAGAIN, POLLOUT only. */
	ck_assert_int_eq(rrecv(s, buf, sizeof(buf), MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EAGAIN);
	pfd.fd = s;
	pfd.events = POLLIN | POLLOUT;
	ck_assert_int_eq(rpoll(&pfd, 1, 0), 1);
	ck_assert_int_eq(pfd.revents, POLLOUT);

	/* No destination, a short address, the wrong family. */
	ck_assert_int_eq(rsend(s, buf, 1, 0), -1);
	ck_assert_int_eq(errno, EDESTADDRREQ);
	ck_assert_int_eq(rsendto(s, buf, 1, 0, &addr.sa, 4), -1);
	ck_assert_int_eq(errno, EINVAL);
	memset(&v6, 0, sizeof(v6));
	v6.sin6.sin6_family = AF_INET6;
	ck_assert_int_eq(rsendto(s, buf, 1, 0, &v6.sa, sizeof(v6.sin6)), -1);
	ck_assert_int_eq(errno, EAFNOSUPPORT);

	/* Options: the queue sizes apply, a route does not. */
	ck_assert_int_eq(
		rsetsockopt(s, SOL_RDMA, RDMA_SQSIZE, &val, sizeof(val)), 0);
	ck_assert_int_eq(rsetsockopt(s, SOL_RDMA, RDMA_ROUTE, buf, sizeof(buf)),
			 -1);
	ck_assert_int_eq(errno, ENOTSUP);
	val = 1;
	ck_assert_int_eq(
		rsetsockopt(s, SOL_SOCKET, SO_REUSEADDR, &val, sizeof(val)), 0);
	val = 0;
	len = sizeof(val);
	ck_assert_int_eq(rgetsockopt(s, SOL_SOCKET, SO_REUSEADDR, &val, &len),
			 0);
	ck_assert_int_eq(val, 1);
	/* Buffer sizes are the rsocket's (doubled, as Linux does). */
	val = 65536;
	ck_assert_int_eq(
		rsetsockopt(s, SOL_SOCKET, SO_RCVBUF, &val, sizeof(val)), 0);
	len = sizeof(val);
	ck_assert_int_eq(rgetsockopt(s, SOL_SOCKET, SO_RCVBUF, &val, &len), 0);
	ck_assert_int_eq(val, 131072);
	len = sizeof(val);
	ck_assert_int_eq(rgetsockopt(s, SOL_SOCKET, SO_TYPE, &val, &len), 0);
	ck_assert_int_eq(val, SOCK_DGRAM);
	ck_assert_int_eq(rshutdown(s, SHUT_WR), 0);
	ck_assert_int_eq(rsendto(s, buf, 1, 0, &addr.sa, sizeof(addr.sin)), -1);
	ck_assert_int_eq(errno, EPIPE);
	ck_assert_int_eq(rclose(s), 0);
}
END_TEST

static size_t dest_nodes;
static struct ds_dest kept[64];
static size_t kept_n;

static void collect_dest(const void *node, VISIT which, int depth)
{
	(void)depth;
	if ((which == postorder || which == leaf) && kept_n < 64)
		kept[kept_n++] = **(struct ds_dest *const *)node;
}

static void count_dest(const void *node, VISIT which, int depth)
{
	(void)node;
	(void)depth;
	if (which == postorder || which == leaf)
		dest_nodes++;
}

/*
 * Every UDP datagram with a well-formed header from an address
 * the socket has not seen creates a destination (struct ds_dest, kept in
 * rs->dest_map).  They used to be kept until rclose, so spoofed source
 * addresses grew the map without bound (this test asserted one
 * destination per source, 100 of 100).  Now the socket keeps at most
 * rs_def.max_dgram_dest (RDMA_RS_MAX_DGRAM_DEST), evicting the least
 * recently used: after 100 sources with a bound of 16, 16 are kept (the
 * rconnect destination, pinned, is never evicted: it and the
 * 15 newest).  No resolution runs for a received datagram (it used to, for
 * up to 2 s under rs->lock).  A fake QP stands for the local address.
 */
START_TEST(spoofed_sources_keep_a_bounded_lru_of_destinations)
{
	enum { SOURCES = 100, BOUND = 16 };
	struct rdma_cm_id fake_id;
	struct ibv_qp fake_qp;
	struct ds_wire_udp_hdr hdr;
	union rs_sockaddr addr, from;
	struct ds_qp *qp;
	struct rsocket *rs;
	uint8_t msg[64];
	size_t hlen;
	int s = unit_dgram_bound(&addr), u, i;

	rs = rs_get(s);
	ck_assert_ptr_nonnull(rs);
	rs_put(rs); /* the table's reference keeps it until rclose */
	rs_def.max_dgram_dest = BOUND;
	memset(&fake_id, 0, sizeof(fake_id));
	memset(&fake_qp, 0, sizeof(fake_qp));
	fake_qp.qp_num = 0x123;
	fake_id.qp = &fake_qp;
	qp = calloc(1, sizeof(*qp));
	ck_assert_ptr_nonnull(qp);
	qp->src = addr;
	qp->cm_id = &fake_id;
	qp->max_msg = 1024;
	rs->qp_list = qp;
	for (i = 0; i < SOURCES; i++) {
		/* Each from its own address, as spoofed datagrams would be. */
		from = sin4(INADDR_LOOPBACK + 2 + (uint32_t)i, 0);
		u = socket(AF_INET, SOCK_DGRAM, 0);
		ck_assert_int_ge(u, 0);
		ck_assert_int_eq(bind(u, &from.sa, sizeof(from.sin)), 0);
		hlen = ds_udp_hdr_encode(&hdr, RS_OP_DATA, 0x77, &from);
		memcpy(msg, &hdr, hlen);
		msg[hlen] = 'x';
		ck_assert_int_eq(
			sendto(u, msg, hlen + 1, 0, &addr.sa, sizeof(addr.sin)),
			(ssize_t)hlen + 1);
		close(u);
		/* What a receive does first (the fake QP has no CQ to poll). */
		pthread_mutex_lock(&rs->lock);
		ds_udp_drain(rs);
		/* The first is what rconnect named: pinned, never evicted. */
		if (!i)
			rs->conn_dest = cma_list_first(&rs->dest_lru,
						       struct ds_dest, lru);
		pthread_mutex_unlock(&rs->lock);
	}
	dest_nodes = 0;
	twalk(rs->dest_map, count_dest);
	ck_assert_uint_eq(dest_nodes, BOUND);
	ck_assert_uint_eq(ds_dest_count(rs), BOUND);
	/* The newest stay, the oldest went; none was resolved. */
	kept_n = 0;
	twalk(rs->dest_map, collect_dest);
	ck_assert_uint_eq(kept_n, BOUND);
	for (i = 0; i < BOUND; i++) {
		uint32_t host = ntohl(kept[i].addr.sin.sin_addr.s_addr);

		ck_assert(host == INADDR_LOOPBACK + 2 ||
			  host >= INADDR_LOOPBACK + 2 + SOURCES - (BOUND - 1));
		ck_assert_ptr_null(kept[i].ah);
	}
	rs->qp_list = NULL; /* not a real QP: nothing to poll or destroy */
	free(qp);
	ck_assert_int_eq(rclose(s), 0);
}
END_TEST

/*
 * A datagram socket's own epoll set is internal: it sits at 500 or above,
 * close-on-exec, away from the numbers the program reuses.  Its UDP
 * socket is the rsocket's number and stays where the kernel put it.
 */
START_TEST(internal_epoll_fd_sits_high)
{
	struct rsocket *rs = rs_alloc(NULL, SOCK_DGRAM);

	ck_assert_ptr_nonnull(rs);
	ck_assert_int_eq(ds_init(rs, AF_INET), 0);
	ck_assert_int_ge(rs->epfd, 500);
	ck_assert_int_ne(fcntl(rs->epfd, F_GETFD) & FD_CLOEXEC, 0);
	ck_assert_int_lt(rs->udp_sock, 500);
	rs_put(rs);
}
END_TEST

Suite *rsocket_dgram_suite(void)
{
	Suite *s = suite_create("rsocket_dgram");
	TCase *tc = tcase_create("wire");

	tcase_add_test(tc, ud_msg_ipv4);
	tcase_add_test(tc, ud_msg_ipv6);
	tcase_add_test(tc, ud_msg_rejects_malformed);
	tcase_add_test(tc, sender_in_the_socket_family);
	tcase_add_test(tc, udp_msg_data_and_ctrl);
	tcase_add_test(tc, udp_msg_rejects_malformed);
	suite_add_tcase(s, tc);
	tc = tcase_create("api");
	tcase_add_test(tc, dgram_socket_calls);
	tcase_add_test(tc, internal_epoll_fd_sits_high);
	tcase_add_test(tc, spoofed_sources_keep_a_bounded_lru_of_destinations);
	suite_add_tcase(s, tc);
	return s;
}
