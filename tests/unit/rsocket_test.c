// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for rsockets' stream reads (src/rsocket/stream.c):
 * rrecvmsg's scatter over iovecs and its bound on their number, and the
 * preload's log file.  The public calls' argument checks are in
 * rsocket_socket_test, the wire formats in rsocket_wire_test, the polling
 * window in rsocket_spin_test.  No RDMA device is needed.
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

/*
 * A stream rsocket whose connection has ended with @len bytes (1, 2, 3...)
 * still queued in one received message.
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
	TCase *tc = tcase_create("io");

	tcase_add_test(tc, recvmsg_fills_every_iovec);
	tcase_add_test(tc, recvmsg_iovec_count_bounded);
	tcase_add_test(tc, preload_log_fd_sits_high);
	tcase_add_test(tc, preload_log_refuses_a_symlink);
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
