// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Datagrams between two datagram rsockets of this process
 * (src/rsocket/dgram_io.c, with dgram_udp.c), each bound to 127.0.0.1 as
 * rbind(3) binds it, their UD QPs on the fake device joined by the fake
 * verbs' UD fabric and their addresses resolved at once by the fake
 * kernel, as rsocket(7) describes datagram rsockets:
 *
 *  - the first datagram to a peer travels over UDP, the receiver answers
 *    with its QP number, and from the sender's next datagram on they go
 *    over the UD QPs; rrecvfrom reports the sender's rsocket address
 *    either way, and rpoll the readiness;
 *  - a datagram larger than the port's MTU allows is EMSGSIZE, one with
 *    no destination EDESTADDRREQ, one after SHUT_WR EPIPE; a receive with
 *    nothing waiting is EAGAIN without blocking;
 *  - rconnect names the destination for rsend, and a short buffer gets
 *    the datagram's first bytes (the rest is dropped, as with UDP).
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <string.h>

#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"
#include "rs_dgram.h"

static struct rdma_event_channel *ch;
static int a, b;
static struct rsocket *ra, *rb;
static struct sockaddr_in addr_a, addr_b;

static int bound_socket(struct rsocket **rs, struct sockaddr_in *addr)
{
	socklen_t len = sizeof(*addr);
	int fd = unit_dgram_open(rs);

	*addr = unit_ipv4("127.0.0.1", 0);
	ck_assert_int_eq(rbind(fd, (struct sockaddr *)addr, sizeof(*addr)), 0);
	ck_assert_int_eq(rgetsockname(fd, (struct sockaddr *)addr, &len), 0);
	ck_assert_uint_ne(addr->sin_port, 0);
	return fd;
}

static void setup(void)
{
	ch = unit_fakes_open(true);
	fake_verbs_ud_fabric(true);
	unit_kernel_resolves(0);
	a = bound_socket(&ra, &addr_a);
	b = bound_socket(&rb, &addr_b);
}

static void teardown(void)
{
	rs_put(rb);
	ck_assert_int_eq(rclose(b), 0);
	unit_dgram_close(a, ra);
	unit_fakes_close(ch);
}

/* Datagrams @rs sent over its UD QPs so far. */
static int ud_sent(struct rsocket *rs)
{
	struct ds_qp *qp;
	int n = 0;

	for (qp = rs->qp_list; qp; qp = qp->next)
		n += fake_qp_of(qp->cm_id->qp)->posted_sends;
	return n;
}

/* Wait (bounded) as a program does, then receive one datagram on @fd. */
static ssize_t recv_one(int fd, char *buf, size_t len, struct sockaddr_in *from)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	socklen_t fromlen = sizeof(*from);

	ck_assert_int_eq(rpoll(&pfd, 1, 2000), 1);
	ck_assert(pfd.revents & POLLIN);
	return rrecvfrom(fd, buf, len, 0, (struct sockaddr *)from, &fromlen);
}

static void send_to_b(const char *text)
{
	ck_assert_int_eq(rsendto(a, text, strlen(text), 0,
				 (struct sockaddr *)&addr_b, sizeof(addr_b)),
			 (ssize_t)strlen(text));
}

static void expect_at_b(const char *text)
{
	struct sockaddr_in from;
	char buf[64] = "";

	ck_assert_int_eq(recv_one(b, buf, sizeof(buf), &from),
			 (ssize_t)strlen(text));
	ck_assert_str_eq(buf, text);
	ck_assert_uint_eq(from.sin_port, addr_a.sin_port);
	ck_assert_uint_eq(from.sin_addr.s_addr, addr_a.sin_addr.s_addr);
}

START_TEST(udp_first_then_the_ud_qps)
{
	send_to_b("over udp");
	ck_assert_int_eq(ud_sent(ra), 0);
	expect_at_b("over udp");
	/* b answered with its QP: a's next datagram takes the QPs. */
	send_to_b("over the qp");
	ck_assert_int_eq(ud_sent(ra), 1);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ROUTE), 1);
	expect_at_b("over the qp");
	send_to_b("again");
	ck_assert_int_eq(ud_sent(ra), 2);
	expect_at_b("again");
	/* Nothing more: a non-blocking receive says so. */
	ck_assert_int_eq(rrecv(b, (char[8]){0}, 8, MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_uint_eq(rb->ds_dropped, 0);
}
END_TEST

START_TEST(bad_sends_are_refused)
{
	static char big[DS_MSG_SIZE];
	int how = SHUT_WR;

	errno = 0;
	ck_assert_int_eq(rsend(a, "x", 1, 0), -1);
	ck_assert_int_eq(errno, EDESTADDRREQ);
	/* The port's MTU (1024 on the fake) bounds a datagram. */
	errno = 0;
	ck_assert_int_eq(rsendto(a, big, 1024, 0, (struct sockaddr *)&addr_b,
				 sizeof(addr_b)),
			 -1);
	ck_assert_int_eq(errno, EMSGSIZE);
	ck_assert_int_eq(rshutdown(a, how), 0);
	errno = 0;
	ck_assert_int_eq(rsendto(a, "x", 1, 0, (struct sockaddr *)&addr_b,
				 sizeof(addr_b)),
			 -1);
	ck_assert_int_eq(errno, EPIPE);
}
END_TEST

START_TEST(connected_socket_and_a_short_buffer)
{
	struct sockaddr_in from;
	char buf[4] = "";

	ck_assert_int_eq(
		rconnect(a, (struct sockaddr *)&addr_b, sizeof(addr_b)), 0);
	ck_assert_int_eq(rsend(a, "first", 5, 0), 5);
	expect_at_b("first");
	ck_assert_int_eq(rsend(a, "truncated", 9, 0), 9);
	ck_assert_int_eq(ud_sent(ra), 1);
	/* Three bytes of it and its end are gone, as with UDP. */
	ck_assert_int_eq(recv_one(b, buf, 3, &from), 3);
	ck_assert_mem_eq(buf, "tru", 3);
	ck_assert_int_eq(rrecv(b, buf, sizeof(buf), MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EAGAIN);
}
END_TEST

static Suite *dgram_io_suite(void)
{
	Suite *s = suite_create("rsocket_dgram_io");
	TCase *t = tcase_create("datagrams");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, udp_first_then_the_ud_qps);
	tcase_add_test(t, bad_sends_are_refused);
	tcase_add_test(t, connected_socket_and_a_short_buffer);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN(dgram_io_suite)
