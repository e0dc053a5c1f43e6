// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for src/rsocket/: the wire formats (byte layout of the
 * connection data, immediate-data messages, iomap size encoding, datagram
 * headers), credit sequence arithmetic, the adaptive polling rules, and
 * the argument checks of the
 * public calls (bad descriptors, NULL buffers, short option values).  No
 * RDMA device is needed.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rsocket/rs.h"
#include "fd_of.h"
#include "preload_child.h"
#include "unit.h"
#include <fcntl.h>
#include <sys/wait.h>

START_TEST(msg_fields_round_trip)
{
	uint32_t m = rs_msg(RS_OP_SGL, 0x1234);

	ck_assert_uint_eq(m, (4u << 29) | 0x1234);
	ck_assert_int_eq(rs_msg_op(m), RS_OP_SGL);
	ck_assert_uint_eq(rs_msg_data(m), 0x1234);
	m = rs_msg(RS_OP_CTRL, RS_CTRL_SHUTDOWN);
	ck_assert_uint_eq(m, 0xe0000002u);
	/* Data never spills into the opcode bits. */
	m = rs_msg(RS_OP_DATA, 0xffffffffu);
	ck_assert_int_eq(rs_msg_op(m), RS_OP_DATA);
}
END_TEST

/*
 * iWARP's message SEND: the 32 bits in the sender's byte order (what
 * rdma-core puts on the wire), converted only when the peer's order
 * differs; a payload shorter than a message is refused.
 */
START_TEST(msg_send_payload)
{
	uint32_t msg = rs_msg(RS_OP_SGL, 0x1234), got = 0;
	uint8_t buf[RS_MSG_SEND_SIZE + 1];

	rs_msg_send_encode(buf, msg);
	ck_assert_int_eq(memcmp(buf, &msg, sizeof(msg)), 0);
	ck_assert_int_eq(rs_msg_send_decode(buf, RS_MSG_SEND_SIZE, false, &got),
			 0);
	ck_assert_uint_eq(got, msg);
	ck_assert_uint_eq(rs_msg_op(got), RS_OP_SGL);
	ck_assert_uint_eq(rs_msg_data(got), 0x1234);

	/* A longer payload: the first four bytes are the message. */
	ck_assert_int_eq(rs_msg_send_decode(buf, sizeof(buf), false, &got), 0);
	ck_assert_uint_eq(got, msg);

	/* A peer of the other byte order. */
	ck_assert_int_eq(rs_msg_send_decode(buf, RS_MSG_SEND_SIZE, true, &got),
			 0);
	ck_assert_uint_eq(got, __builtin_bswap32(msg));

	got = 7;
	ck_assert_int_eq(
		rs_msg_send_decode(buf, RS_MSG_SEND_SIZE - 1, false, &got), -1);
	ck_assert_int_eq(rs_msg_send_decode(NULL, 4, false, &got), -1);
	ck_assert_uint_eq(got, 7);
}
END_TEST

START_TEST(conn_data_layout)
{
	struct rs_conn_params p = {0}, q;
	struct rs_wire_conn w;
	const uint8_t *b = (const uint8_t *)&w;

	p.credits = 384;
	p.iomap_size = 300;
	p.target_sgl.addr = 0x1122334455667788ULL;
	p.target_sgl.key = 0xaabbccdd;
	p.target_sgl.length = RS_SGL_SIZE;
	p.data_buf.addr = 0x10000;
	p.data_buf.key = 7;
	p.data_buf.length = 65536;
	rs_conn_encode(&w, &p);
	ck_assert_uint_eq(b[0], 1); /* version */
	ck_assert_uint_eq(b[1] & RS_CONN_FLAG_IOMAP, RS_CONN_FLAG_IOMAP);
	ck_assert_uint_eq(b[2], 384 >> 8); /* credits, big-endian */
	ck_assert_uint_eq(b[3], 384 & 0xff);
	ck_assert_uint_eq(b[8], 0x11); /* target_sgl.addr, big-endian */
	ck_assert_uint_eq(b[15], 0x88);
	ck_assert_uint_eq(b[16], 0xaa); /* key before length */
	ck_assert_uint_eq(b[23], RS_SGL_SIZE);
	ck_assert_uint_eq(b[36], 0); /* data_buf.length 65536 */
	ck_assert_uint_eq(b[37], 1);

	ck_assert_int_eq(rs_conn_decode(&w, sizeof(w), &q), 0);
	ck_assert_uint_eq(q.credits, 384);
	ck_assert_uint_eq(q.iomap_size, 256); /* coarse above 128 */
	ck_assert(q.has_iomap);
	ck_assert(q.target_sgl.addr == p.target_sgl.addr);
	ck_assert_uint_eq(q.target_sgl.key, p.target_sgl.key);
	ck_assert_uint_eq(q.data_buf.length, 65536);
}
END_TEST

START_TEST(conn_data_rejects_bad_input)
{
	struct rs_conn_params p = {0}, q;
	struct rs_wire_conn w;
	uint8_t big[56] = {0};

	p.credits = 16;
	p.target_sgl.length = 2;
	p.data_buf.length = 4096;
	rs_conn_encode(&w, &p);

	errno = 0;
	ck_assert_int_eq(rs_conn_decode(&w, sizeof(w) - 1, &q), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rs_conn_decode(NULL, 40, &q), -1);
	w.version = 2;
	ck_assert_int_eq(rs_conn_decode(&w, sizeof(w), &q), -1);
	ck_assert_int_eq(errno, ENOTSUP);
	w.version = 1;
	w.credits = 0;
	ck_assert_int_eq(rs_conn_decode(&w, sizeof(w), &q), -1);
	ck_assert_int_eq(errno, EINVAL);
	/* Padded private data (as a CM request delivers it) is fine. */
	rs_conn_encode(&w, &p);
	memcpy(big, &w, sizeof(w));
	ck_assert_int_eq(rs_conn_decode(big, sizeof(big), &q), 0);
}
END_TEST

START_TEST(iomap_size_encoding)
{
	ck_assert_uint_eq(rs_iomap_size_to_wire(0), 0);
	ck_assert_uint_eq(rs_iomap_size_to_wire(128), 128);
	ck_assert_uint_eq(rs_iomap_size_to_wire(512), 0x82);
	ck_assert_uint_eq(rs_iomap_size_from_wire(0x82), 512);
	ck_assert_uint_eq(rs_iomap_size_from_wire(100), 100);
	ck_assert_uint_eq(rs_iomap_size_from_wire(0xff), 0x7f00);
	ck_assert_uint_eq(rs_iomap_size_to_wire(1000000), 0xff);
}
END_TEST

START_TEST(credit_sequence_wraps)
{
	ck_assert(rs_seq_reached(10, 10));
	ck_assert(!rs_seq_reached(9, 10));
	ck_assert(rs_seq_reached(2, 0xfff0)); /* wrapped past the limit */
	ck_assert(!rs_seq_reached(0xfff0, 2));
}
END_TEST

START_TEST(ds_headers_round_trip)
{
	union rs_sockaddr a = {0}, b;
	struct ds_wire_hdr h;
	struct ds_wire_udp_hdr u;
	uint8_t op;
	uint32_t qpn;

	a.sin.sin_family = AF_INET;
	a.sin.sin_port = htons(7174);
	a.sin.sin_addr.s_addr = htonl(0xc0000201);
	ck_assert_uint_eq(ds_hdr_encode(&h, &a), DS_IPV4_HDR_LEN);
	ck_assert_uint_eq(ds_hdr_decode(&h, DS_IPV4_HDR_LEN, &b),
			  DS_IPV4_HDR_LEN);
	ck_assert_int_eq(b.sin.sin_port, a.sin.sin_port);
	ck_assert_uint_eq(b.sin.sin_addr.s_addr, a.sin.sin_addr.s_addr);
	ck_assert_uint_eq(ds_hdr_decode(&h, 4, &b), 0);
	h.length = 9;
	ck_assert_uint_eq(ds_hdr_decode(&h, sizeof(h), &b), 0);

	a.sin6.sin6_family = AF_INET6;
	ck_assert_uint_eq(ds_hdr_encode(&h, &a), DS_IPV6_HDR_LEN);
	ck_assert_uint_eq(ds_hdr_decode(&h, DS_IPV6_HDR_LEN - 1, &b), 0);

	a.sin.sin_family = AF_INET;
	ck_assert_uint_eq(ds_udp_hdr_encode(&u, RS_OP_DATA, 0x12345678, &a),
			  DS_UDP_IPV4_HDR_LEN);
	ck_assert_uint_eq(
		ds_udp_hdr_decode(&u, DS_UDP_IPV4_HDR_LEN, AF_INET, &op, &qpn),
		DS_UDP_IPV4_HDR_LEN);
	ck_assert_uint_eq(op, RS_OP_DATA);
	ck_assert_uint_eq(qpn, 0x345678);
	/* Wrong family for the header's version, bad tag, short. */
	ck_assert_uint_eq(ds_udp_hdr_decode(&u, sizeof(u), AF_INET6, &op, &qpn),
			  0);
	ck_assert_uint_eq(ds_udp_hdr_decode(&u, 8, AF_INET, &op, &qpn), 0);
	u.tag = 0;
	ck_assert_uint_eq(ds_udp_hdr_decode(&u, sizeof(u), AF_INET, &op, &qpn),
			  0);
}
END_TEST

START_TEST(bad_descriptors_give_ebadf)
{
	char buf[4];
	socklen_t len = sizeof(int);
	int v = 1;

	errno = 0;
	ck_assert_int_eq(rclose(-1), -1);
	ck_assert_int_eq(errno, EBADF);
	errno = 0;
	ck_assert_int_eq(rsend(12345, buf, sizeof(buf), 0), -1);
	ck_assert_int_eq(errno, EBADF);
	errno = 0;
	ck_assert_int_eq(rrecv(0, buf, sizeof(buf), 0), -1);
	ck_assert_int_eq(errno, EBADF);
	errno = 0;
	ck_assert_int_eq(
		rsetsockopt(1 << 30, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)), -1);
	ck_assert_int_eq(errno, EBADF);
	ck_assert_int_eq(rgetsockopt(7, SOL_RDMA, RDMA_SQSIZE, &v, &len), -1);
	ck_assert_int_eq(rfcntl(7, F_GETFL), -1);
	ck_assert_int_eq(riounmap(7, buf, 4), -1);
	ck_assert_int_eq(errno, EBADF);
	ck_assert_int_eq(repoll_wait(7, NULL, 1, 0), -1);
	ck_assert_int_eq(errno, EBADF);
}
END_TEST

START_TEST(bad_arguments_are_refused)
{
	ck_assert_int_eq(rsocket(AF_UNIX, SOCK_STREAM, 0), -1);
	ck_assert_int_eq(errno, EAFNOSUPPORT);
	ck_assert_int_eq(rsocket(AF_INET, SOCK_RAW, 0), -1);
	ck_assert_int_eq(errno, ENOTSUP);
	ck_assert_int_eq(rsocket(AF_INET, SOCK_STREAM, IPPROTO_UDP), -1);
	ck_assert_int_eq(errno, EPROTONOSUPPORT);
	ck_assert_int_eq(rpoll(NULL, 1, 0), -1);
	ck_assert_int_eq(errno, EFAULT);
	ck_assert_int_eq(rselect(-1, NULL, NULL, NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(repoll_create(0x1234), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* A stream socket needs only the CM device; skip where there is none. */
static int try_socket(void)
{
	int s = rsocket(AF_INET, SOCK_STREAM, 0);

	return s;
}

START_TEST(option_values_are_validated)
{
	int s = try_socket(), v = 0;
	socklen_t len = 1;

	if (s < 0)
		return; /* no rdma_ucm here: covered in the VM */
	ck_assert_int_eq(rsetsockopt(s, SOL_RDMA, RDMA_SQSIZE, NULL, 4), -1);
	ck_assert_int_eq(errno, EFAULT);
	ck_assert_int_eq(rsetsockopt(s, SOL_RDMA, RDMA_SQSIZE, &v, 2), -1);
	ck_assert_int_eq(errno, EINVAL);
	v = -5;
	ck_assert_int_eq(rsetsockopt(s, SOL_RDMA, RDMA_RQSIZE, &v, sizeof(v)),
			 -1);
	v = 100;
	ck_assert_int_eq(rsetsockopt(s, SOL_RDMA, RDMA_RQSIZE, &v, sizeof(v)),
			 0);
	ck_assert_int_eq(rgetsockopt(s, SOL_RDMA, RDMA_RQSIZE, &v, &len), -1);
	ck_assert_int_eq(errno, EINVAL);
	len = sizeof(v);
	ck_assert_int_eq(rgetsockopt(s, SOL_RDMA, RDMA_RQSIZE, &v, &len), 0);
	ck_assert_int_eq(v, 100);
	ck_assert_int_eq(rsetsockopt(s, 9999, 1, &v, sizeof(v)), -1);
	ck_assert_int_eq(errno, ENOTSUP);
	ck_assert_int_eq(rsend(s, NULL, 10, 0), -1);
	ck_assert_int_eq(errno, EFAULT);
	ck_assert_int_eq(rsend(s, &v, sizeof(v), 0), -1);
	ck_assert_int_eq(errno, ENOTCONN);
	ck_assert_int_eq(rfcntl(s, F_SETFL, O_NONBLOCK), 0);
	ck_assert_int_eq(rfcntl(s, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	ck_assert_int_eq(rclose(s), 0);
}
END_TEST

/*
 * Adaptive polling (spin.c): a short wait that slept grows the window to
 * cover it, a long one halves it, a wait caught spinning leaves it, and
 * the window stays within [floor, ceiling].
 */
START_TEST(spin_window_adapts)
{
	/* Slept, short: at least doubled, and enough for the wait. */
	ck_assert_uint_eq(rs_spin_adapt(10, 10, 500, 15, true), 22);
	ck_assert_uint_eq(rs_spin_adapt(10, 10, 500, 100, true), 150);
	/* ... never beyond the ceiling. */
	ck_assert_uint_eq(rs_spin_adapt(400, 10, 500, 300, true), 500);
	/* Slept, longer than the ceiling: halved, not below the floor. */
	ck_assert_uint_eq(rs_spin_adapt(400, 10, 500, 501, true), 200);
	ck_assert_uint_eq(rs_spin_adapt(15, 10, 500, 100000, true), 10);
	/* Caught spinning: unchanged (but clamped). */
	ck_assert_uint_eq(rs_spin_adapt(120, 10, 500, 80, false), 120);
	ck_assert_uint_eq(rs_spin_adapt(900, 10, 500, 80, false), 500);
	ck_assert_uint_eq(rs_spin_adapt(3, 10, 500, 1, false), 10);
	/* A ceiling at or below the floor: a fixed spin, as rdma-core's. */
	ck_assert_uint_eq(rs_spin_adapt(300, 10, 10, 5, true), 10);
	ck_assert_uint_eq(rs_spin_adapt(300, 10, 0, 5, true), 10);
	/* No overflow with the largest values. */
	ck_assert_uint_eq(
		rs_spin_adapt(UINT32_MAX, 0, UINT32_MAX, UINT64_MAX / 2, true),
		UINT32_MAX / 2);
}
END_TEST

START_TEST(spin_learns_wake_cost)
{
	uint32_t wake = UINT32_MAX; /* unknown */

	wake = rs_spin_wake_estimate(wake, 80);
	ck_assert_uint_eq(wake, 80);
	/* The cheapest sleep wins ... */
	wake = rs_spin_wake_estimate(wake, 40);
	ck_assert_uint_eq(wake, 40);
	/* ... but drifts up slowly when sleeps get dearer. */
	wake = rs_spin_wake_estimate(wake, 1000);
	ck_assert_uint_eq(wake, 46);
	/* Absurd samples are capped. */
	ck_assert_uint_le(rs_spin_wake_estimate(UINT32_MAX, UINT64_MAX), 10000);
	/* The ceiling: polling_max, or twice a dearer wake-up, capped. */
	ck_assert_uint_eq(rs_spin_ceiling(50, UINT32_MAX), 50);
	ck_assert_uint_eq(rs_spin_ceiling(50, 10), 50);
	ck_assert_uint_eq(rs_spin_ceiling(50, 80), 160);
	ck_assert_uint_eq(rs_spin_ceiling(50, 9000), 10000);
}
END_TEST

/*
 * A stream rsocket with @len bytes queued as one received message and no
 * QP: the peer has gone (DISCONNECTED), so a read that wants more than is
 * queued returns instead of waiting, whatever the bug.
 */
static struct rsocket *queued_stream(uint32_t len)
{
	struct rsocket *rs = rs_alloc(NULL, SOCK_STREAM);
	uint32_t i;

	ck_assert_ptr_nonnull(rs);
	rs->rbuf_size = 4096;
	rs->rq_size = 4;
	rs->rbuf = calloc(1, rs->rbuf_size);
	rs->rmsg = calloc(rs->rq_size + 1, sizeof(*rs->rmsg));
	ck_assert(rs->rbuf && rs->rmsg);
	for (i = 0; i < len; i++)
		rs->rbuf[i] = (uint8_t)(i + 1);
	rs->rmsg[0].len = len;
	rs->rmsg_tail = 1;
	rs->state = RS_DISCONNECTED | RS_READABLE;
	return rs;
}

static void free_queued_stream(struct rsocket *rs)
{
	free(rs->rbuf);
	free(rs->rmsg);
	rs->rbuf = NULL;
	rs->rmsg = NULL;
	/* Published: the table's reference is the last one. */
	if (!rs_unpublish(rs))
		rs_put(rs);
}

/*
 * rrecvmsg accepts up to 1,024 iovecs; all of them are filled.  The read
 * used to copy only the first 64 and then, with MSG_WAITALL, wait for
 * data it could never place: with the connection up it never returned.
 */
START_TEST(recvmsg_fills_every_iovec)
{
	enum { N = 1024 };
	static uint8_t bytes[N];
	static struct iovec iov[N];
	struct rsocket *rs;
	int i, cnt;

	for (cnt = 65; cnt <= N; cnt += N - 65) {
		rs = queued_stream(cnt + 1);
		memset(bytes, 0, sizeof(bytes));
		for (i = 0; i < cnt; i++) {
			iov[i].iov_base = &bytes[i];
			iov[i].iov_len = 1;
		}
		ck_assert_int_eq(rs_stream_recvv(rs, iov, cnt, MSG_WAITALL),
				 cnt);
		for (i = 0; i < cnt; i++)
			ck_assert_uint_eq(bytes[i], (uint8_t)(i + 1));
		/* The byte past the last iovec stays queued for the next read. */
		ck_assert_int_eq(rs_stream_recvv(rs, iov, 1, 0), 1);
		ck_assert_uint_eq(bytes[0], (uint8_t)(cnt + 1));
		free_queued_stream(rs);
	}
	/* Partly filled elements carry over between messages too. */
	rs = queued_stream(100);
	rs->rmsg[0].len = 30;
	rs->rmsg[1].len = 70;
	rs->rmsg_tail = 2;
	memset(bytes, 0, sizeof(bytes));
	for (i = 0; i < 80; i++) {
		iov[i].iov_base = &bytes[i * 2];
		iov[i].iov_len = i < 10 ? 0 : 2; /* empty ones are skipped */
	}
	ck_assert_int_eq(rs_stream_recvv(rs, iov, 80, MSG_WAITALL), 100);
	for (i = 0; i < 100; i++)
		ck_assert_uint_eq(bytes[20 + i], (uint8_t)(i + 1));
	free_queued_stream(rs);
}
END_TEST

/* More iovecs than accepted is EINVAL, also when the count wraps an int. */
START_TEST(recvmsg_iovec_count_bounded)
{
	static struct iovec iov[2];
	uint8_t b[2];
	struct msghdr msg = {.msg_iov = iov};
	struct rsocket *rs = queued_stream(2);

	ck_assert_int_eq(rs_insert(rs, 900), 0);
	iov[0].iov_base = &b[0];
	iov[0].iov_len = 1;
	msg.msg_iovlen = 1025;
	ck_assert_int_eq(rrecvmsg(900, &msg, 0), -1);
	ck_assert_int_eq(errno, EINVAL);
	msg.msg_iovlen = ((size_t)1 << 32) + 1; /* (int): 1 */
	ck_assert_int_eq(rrecvmsg(900, &msg, 0), -1);
	ck_assert_int_eq(errno, EINVAL);
	msg.msg_iovlen = 1;
	ck_assert_int_eq(rrecvmsg(900, &msg, 0), 1);
	free_queued_stream(rs); /* takes it out of the table */
}
END_TEST

/*
 * Run as "rsocket_test --preload-log-child PATH" under librspreload.so
 * with RDMA_RSOCKET_LOG=PATH: one socket() call starts the preload (and
 * logs its fallback to TCP here, with no RDMA device); then print which
 * descriptor holds the log and whether it is close-on-exec.
 */
static int preload_log_child(const char *path)
{
	int s = socket(AF_INET, SOCK_STREAM, 0), fd = fd_of(path);

	printf("%d %d\n", fd, fd < 0 ? 0 : !!(fcntl(fd, F_GETFD) & FD_CLOEXEC));
	if (s >= 0)
		close(s);
	return 0;
}

/*
 * The preload's RDMA_RSOCKET_LOG descriptor sits at 500 or above,
 * close-on-exec, not at the lowest free number a daemon's own files get
 * next.
 */
START_TEST(preload_log_fd_sits_high)
{
	char path[] = "/tmp/rsp-log.XXXXXX", out[64];
	int fd, cloexec = 0, status;

	status = unit_run_preloaded(
		path,
		(char *[]){"rsocket_test", "--preload-log-child", path, NULL},
		out, sizeof(out));
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(sscanf(out, "%d %d", &fd, &cloexec), 2);
	ck_assert_int_ge(fd, 500);
	ck_assert_int_eq(cloexec, 1);
	unlink(path);
}
END_TEST

/*
 * An RDMA_RSOCKET_LOG path that is a symbolic link is not followed (the
 * preload says so on stderr and logs nothing): whoever can write the log's
 * directory cannot make the program append to a file of their choosing.
 * The child's socket() call would log its fallback to TCP.
 */
START_TEST(preload_log_refuses_a_symlink)
{
	struct planted_link p;
	char out[64];
	int status;

	ck_assert_int_eq(plant_link(&p, "/tmp/rsp-log.XXXXXX"), 0);
	status = unit_run_preloaded_at(p.link,
				       (char *[]){"rsocket_test",
						  "--preload-log-child",
						  p.target, NULL},
				       out, sizeof(out));
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(atoi(out), -1); /* no descriptor on the target */
	ck_assert(planted_link_remove(&p));
}
END_TEST

Suite *rsocket_suite(void)
{
	Suite *s = suite_create("rsocket");
	TCase *tc = tcase_create("wire");

	tcase_add_test(tc, msg_fields_round_trip);
	tcase_add_test(tc, msg_send_payload);
	tcase_add_test(tc, conn_data_layout);
	tcase_add_test(tc, conn_data_rejects_bad_input);
	tcase_add_test(tc, iomap_size_encoding);
	tcase_add_test(tc, credit_sequence_wraps);
	tcase_add_test(tc, ds_headers_round_trip);
	tcase_add_test(tc, recvmsg_fills_every_iovec);
	tcase_add_test(tc, recvmsg_iovec_count_bounded);
	tcase_add_test(tc, preload_log_fd_sits_high);
	tcase_add_test(tc, preload_log_refuses_a_symlink);
	suite_add_tcase(s, tc);
	tc = tcase_create("spin");
	tcase_add_test(tc, spin_window_adapts);
	tcase_add_test(tc, spin_learns_wake_cost);
	suite_add_tcase(s, tc);
	tc = tcase_create("api");
	tcase_add_test(tc, bad_descriptors_give_ebadf);
	tcase_add_test(tc, bad_arguments_are_refused);
	tcase_add_test(tc, option_values_are_validated);
	suite_add_tcase(s, tc);
	return s;
}

/* The runner's --preload-log-child PATH mode, run under the preload. */
int rsocket_preload_log_child(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	return preload_log_child(argv[2]);
}
