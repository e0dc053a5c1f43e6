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
 *  - a UDP message from a known peer's address and port (which anyone able
 *    to spoof them can send) never moves the peer to another QP number;
 *  - rconnect names the destination for rsend, and a short buffer gets
 *    the datagram's first bytes (the rest is dropped, as with UDP);
 *  - a blocked receive or rpoll wakes when another call of its socket
 *    takes its datagram off the UDP socket first, or shuts the socket
 *    down; one closed under fails with EBADF; a receiving thread gets
 *    every datagram beside a sending one.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

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

/*
 * The library's sleeps call poll(); this one (linked ahead of libc's)
 * runs @before_sleep just before the first sleep on @sleep_fd, as another
 * thread's call would run while this one is about to sleep, and reports
 * how that sleep ended: 1 woken, 0 not woken within 2 s.
 */
static int sleep_fd = -1;
static void (*before_sleep)(void);
static int sleep_result = -2;

/* glibc declares poll's array write-only: reading it here looks uninitialized. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	struct timespec cap = {.tv_sec = 2}, ts, *tp = NULL;
	bool watched = false;
	nfds_t i;
	int ret;

	for (i = 0; i < n && timeout && sleep_fd >= 0; i++)
		watched |= fds[i].fd == sleep_fd;
	if (timeout >= 0) {
		ts.tv_sec = timeout / 1000;
		ts.tv_nsec = (long)(timeout % 1000) * 1000000;
		tp = &ts;
	}
	if (!watched)
		return ppoll(fds, n, tp, NULL);
	sleep_fd = -1;
	before_sleep();
	ret = ppoll(fds, n, tp && tp->tv_sec < cap.tv_sec ? tp : &cap, NULL);
	sleep_result = ret;
	return ret;
}
#pragma GCC diagnostic pop

/* Run @fn in another thread, as a program's other thread would. */
static void in_another_thread(void *(*fn)(void *))
{
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, fn, NULL), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
}

/* a's first datagram to b, over UDP; then b's rpoll takes it off. */
static void *take_the_reply(void *arg)
{
	struct pollfd pfd = {.fd = b, .events = POLLOUT};

	(void)arg;
	send_to_b("reply");
	ck_assert_int_eq(rpoll(&pfd, 1, 0), 1);
	return NULL;
}

static void reply_taken_by_another_call(void)
{
	in_another_thread(take_the_reply);
}

static void *shut_down(void *arg)
{
	(void)arg;
	ck_assert_int_eq(rshutdown(b, SHUT_RD), 0);
	return NULL;
}

static void shut_down_by_another_call(void)
{
	in_another_thread(shut_down);
}

/* A blocking receive on b, with @between run before it sleeps. */
static ssize_t blocking_receive(void (*between)(void), char *buf, size_t len)
{
	sleep_fd = rb->epfd;
	before_sleep = between;
	sleep_result = -2;
	return rrecv(b, buf, len, 0);
}

START_TEST(a_call_that_takes_the_datagram_wakes_the_receive)
{
	char buf[16] = "";

	ck_assert_int_eq(
		blocking_receive(reply_taken_by_another_call, buf, sizeof(buf)),
		5);
	ck_assert_str_eq(buf, "reply");
	/* Woken at once: the sleep did not wait for its 2 s cap. */
	ck_assert_int_eq(sleep_result, 1);
}
END_TEST

/* The same with b's rpoll asleep instead of a blocking receive. */
START_TEST(a_call_that_takes_the_datagram_wakes_rpoll)
{
	struct pollfd pfd = {.fd = b, .events = POLLIN};
	char buf[16] = "";

	sleep_fd = rb->epfd;
	before_sleep = reply_taken_by_another_call;
	ck_assert_int_eq(rpoll(&pfd, 1, -1), 1);
	ck_assert_int_eq(sleep_result, 1);
	ck_assert(pfd.revents & POLLIN);
	ck_assert_int_eq(rrecv(b, buf, sizeof(buf), MSG_DONTWAIT), 5);
	ck_assert_str_eq(buf, "reply");
	/* The call's bell is gone with it. */
	ck_assert_ptr_null(rb->pollers);
}
END_TEST

static int c;

static void *close_c(void *arg)
{
	(void)arg;
	ck_assert_int_eq(rclose(c), 0);
	return NULL;
}

static void closed_by_another_call(void)
{
	in_another_thread(close_c);
}

/*
 * A receive asleep on a socket with a QP (its CQ armed) is closed under:
 * EBADF, whatever the wake-up's own bookkeeping leaves in errno.
 */
START_TEST(a_close_fails_the_receive_with_ebadf)
{
	struct sockaddr_in addr_c;
	struct rsocket *rc;
	char buf[16];

	c = bound_socket(&rc, &addr_c);
	ck_assert_int_eq(rsendto(c, "x", 1, 0, (struct sockaddr *)&addr_a,
				 sizeof(addr_a)),
			 1);
	ck_assert_ptr_nonnull(rc->qp_list);
	sleep_fd = rc->epfd;
	before_sleep = closed_by_another_call;
	errno = 0;
	ck_assert_int_eq(rrecv(c, buf, sizeof(buf), 0), -1);
	ck_assert_int_eq(errno, EBADF);
	ck_assert_int_eq(sleep_result, 1);
	rs_put(rc);
}
END_TEST

START_TEST(a_shutdown_wakes_the_receive)
{
	char buf[16];

	ck_assert_int_eq(
		blocking_receive(shut_down_by_another_call, buf, sizeof(buf)),
		0);
	ck_assert_int_eq(sleep_result, 1);
}
END_TEST

/* b's receiving thread: blocking receives, each one counted. */
static int received;

static void *receive_on_b(void *arg)
{
	int want = *(int *)arg, i;
	char buf[16];

	for (i = 0; i < want; i++) {
		if (rrecv(b, buf, sizeof(buf), 0) <= 0)
			break;
		__atomic_add_fetch(&received, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/*
 * A program's two threads on one socket, as sockperf's under-load client
 * runs them: one blocked receiving, one sending, each send making
 * progress on the socket.  Every datagram reaches the receiver however
 * the two interleave (and ThreadSanitizer watches them).
 */
START_TEST(a_receiving_thread_beside_a_sending_one)
{
	struct timespec t0, nap = {.tv_nsec = 100000};
	int want = 300, i, got = 0;
	pthread_t t;

	received = 0;
	ck_assert_int_eq(pthread_create(&t, NULL, receive_on_b, &want), 0);
	for (i = 0; i < want; i++) {
		send_to_b("x");
		ck_assert_int_eq(rsendto(b, "y", 1, 0,
					 (struct sockaddr *)&addr_a,
					 sizeof(addr_a)),
				 1);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		while ((got = __atomic_load_n(&received, __ATOMIC_ACQUIRE)) <=
			       i &&
		       unit_ms_since(&t0) < 5000)
			nanosleep(&nap, NULL);
		ck_assert_int_eq(got, i + 1);
	}
	ck_assert_int_eq(pthread_join(t, NULL), 0);
}
END_TEST

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

/* a's destination for b, found as the send path finds it. */
static struct ds_dest *a_dest_for_b(void)
{
	struct ds_dest *dest;

	pthread_mutex_lock(&ra->lock);
	ck_assert_int_eq(ds_dest_get(ra, (struct sockaddr *)&addr_b,
				     sizeof(addr_b), &dest),
			 0);
	pthread_mutex_unlock(&ra->lock);
	return dest;
}

/*
 * What an off-path host that can spoof b's UDP address and port sends a:
 * a resolver message (op @op, a payload if data) claiming QP @qpn.  Sent
 * from b's own UDP socket: a cannot tell the two apart.
 */
static void spoof_from_b(uint8_t op, uint32_t qpn)
{
	struct {
		struct ds_wire_udp_hdr h;
		char data[8];
	} msg;
	union rs_sockaddr src = {.sin = addr_b};
	size_t len;

	len = ds_udp_hdr_encode(&msg.h, op, qpn, &src);
	memcpy((char *)&msg + len, "spoofed", 8);
	if (op == RS_OP_DATA)
		len += 8;
	ck_assert_int_eq(sendto(rb->udp_sock, &msg, len, 0,
				(struct sockaddr *)&addr_a, sizeof(addr_a)),
			 (ssize_t)len);
}

/*
 * A known peer's QP number is not moved by a spoofed UDP message: a's
 * sends to b never go to the QP the spoofer names.  While in doubt they
 * travel over UDP to b's address (b receives every one), and a datagram
 * from b's own QP puts them back on the QPs.  Before, the spoofed number
 * replaced b's and a's next datagrams went to it, lost.
 */
START_TEST(a_spoofed_datagram_cannot_move_a_known_peer)
{
	struct sockaddr_in from;
	struct ds_dest *dest;
	uint32_t qpn_b;
	char buf[16];
	int sent;

	send_to_b("over udp");
	expect_at_b("over udp");
	send_to_b("over the qp");
	expect_at_b("over the qp");
	sent = ud_sent(ra);
	ck_assert_int_eq(sent, 1);
	qpn_b = rb->qp_list->cm_id->qp->qp_num;
	dest = a_dest_for_b();
	ck_assert_uint_eq(dest->qpn, qpn_b);

	spoof_from_b(RS_OP_CTRL, 0x4242);
	spoof_from_b(RS_OP_DATA, 0x4243);
	/* a reads them (its data as UDP's: from b's address, as claimed). */
	ck_assert_int_eq(rrecv(a, buf, sizeof(buf), 0), 8);
	ck_assert_str_eq(buf, "spoofed");
	ck_assert_uint_eq(dest->qpn, qpn_b);
	send_to_b("in doubt");
	ck_assert_int_eq(ud_sent(ra), sent); /* over UDP */
	expect_at_b("in doubt");
	send_to_b("still");
	ck_assert_int_eq(ud_sent(ra), sent);
	expect_at_b("still");

	/* b's own QP speaks: a's sends take the QPs again, to b's QP. */
	ck_assert_int_eq(rsendto(b, "from b", 6, 0, (struct sockaddr *)&addr_a,
				 sizeof(addr_a)),
			 6);
	ck_assert_int_eq(ud_sent(rb), 1);
	ck_assert_int_eq(recv_one(a, buf, sizeof(buf), &from), 6);
	send_to_b("back on the qp");
	ck_assert_int_eq(ud_sent(ra), sent + 1);
	ck_assert_uint_eq(
		fake_qp_of(ra->qp_list->cm_id->qp)->last_send.remote_qpn,
		qpn_b);
	expect_at_b("back on the qp");

	/* A claim still unread when a sends: read by the send's own wait. */
	spoof_from_b(RS_OP_CTRL, 0x4244);
	send_to_b("read by the send");
	ck_assert_int_eq(ud_sent(ra), sent + 1); /* over UDP */
	expect_at_b("read by the send");
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

Suite *rsocket_dgram_io_suite(void)
{
	Suite *s = suite_create("rsocket_dgram_io");
	TCase *t = tcase_create("datagrams");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, udp_first_then_the_ud_qps);
	tcase_add_test(t, a_spoofed_datagram_cannot_move_a_known_peer);
	tcase_add_test(t, bad_sends_are_refused);
	tcase_add_test(t, connected_socket_and_a_short_buffer);
	tcase_add_test(t, a_call_that_takes_the_datagram_wakes_the_receive);
	tcase_add_test(t, a_call_that_takes_the_datagram_wakes_rpoll);
	tcase_add_test(t, a_shutdown_wakes_the_receive);
	tcase_add_test(t, a_close_fails_the_receive_with_ebadf);
	tcase_add_test(t, a_receiving_thread_beside_a_sending_one);
	suite_add_tcase(s, t);
	return s;
}
