// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * librspreload's data calls (src/preload/io.c), run under this build's
 * librspreload.so with no RDMA device: every socket ends up the kernel's
 * (a TCP one at once, a UDP one at its first loopback address), and each
 * call must then reach the kernel with its arguments whole: the bytes of
 * every read and write variant, sendfile's offset, and a datagram's
 * ancillary data, both ways.  The _chk variants a fortified program calls
 * keep their check.
 */
#define _GNU_SOURCE
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preload_child.h"
#include "unit.h"

/* What a program built with _FORTIFY_SOURCE calls (glibc's names). */
ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);

#define BAD(...)                                                               \
	do {                                                                   \
		printf("bad: " __VA_ARGS__);                                   \
		printf(" (%s)\n", strerror(errno));                            \
		return 1;                                                      \
	} while (0)

/* Exactly @len bytes from @fd by read(2), which must equal @want. */
static int read_is(int fd, const char *want, size_t len)
{
	char buf[256];
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = read(fd, buf + got, len - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return memcmp(buf, want, len) ? -1 : 0;
}

/* Every read and write variant across a TCP connection. */
static int tcp_case(void)
{
	char a[3], b[4], buf[16];
	struct iovec out[2] = {{"abc", 3}, {"defg", 4}},
		     in[2] = {{a, 3}, {b, 4}};
	struct msghdr m = {.msg_iov = out, .msg_iovlen = 2};
	int s, c;

	if (unit_tcp_pair(&s, &c))
		BAD("pair");
	if (write(c, "hello", 5) != 5 || read_is(s, "hello", 5))
		BAD("write/read");
	if (writev(c, out, 2) != 7 || readv(s, in, 2) != 7 ||
	    memcmp(a, "abc", 3) || memcmp(b, "defg", 4))
		BAD("writev/readv");
	/* a flag reaches the kernel: a peek leaves the bytes there */
	if (send(c, "xyz", 3, 0) != 3 || recv(s, buf, 3, MSG_PEEK) != 3 ||
	    recv(s, buf, 3, MSG_WAITALL) != 3 || memcmp(buf, "xyz", 3))
		BAD("send/recv");
	if (sendto(c, "12", 2, 0, NULL, 0) != 2 ||
	    recvfrom(s, buf, 2, MSG_WAITALL, NULL, NULL) != 2 ||
	    memcmp(buf, "12", 2))
		BAD("sendto/recvfrom");
	in[0].iov_len = 7;
	in[0].iov_base = buf;
	m.msg_iov = out;
	if (sendmsg(c, &m, 0) != 7)
		BAD("sendmsg");
	m.msg_iov = in;
	m.msg_iovlen = 1;
	if (recvmsg(s, &m, MSG_WAITALL) != 7 || memcmp(buf, "abcdefg", 7))
		BAD("recvmsg");
	printf("ok\n");
	return 0;
}

/*
 * sendfile with an offset moves the offset and leaves the file's own
 * position; without one it moves the position.
 */
static int sendfile_case(void)
{
	char path[] = "/tmp/rsp-io-file.XXXXXX", data[4096];
	int f = mkstemp(path), s, c;
	off_t off = 1000;
	size_t i;

	if (f < 0 || unit_tcp_pair(&s, &c))
		BAD("set-up");
	unlink(path);
	for (i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7 + i / 256);
	if (write(f, data, sizeof(data)) != (ssize_t)sizeof(data) ||
	    lseek(f, 0, SEEK_SET))
		BAD("file");
	if (sendfile(c, f, &off, 2000) != 2000 || off != 3000 ||
	    lseek(f, 0, SEEK_CUR) != 0)
		BAD("sendfile with an offset: off %ld", (long)off);
	for (i = 0; i < 2000; i += 200)
		if (read_is(s, data + 1000 + i, 200))
			BAD("bytes sent from the offset");
	if (sendfile(c, f, NULL, 100) != 100 || lseek(f, 0, SEEK_CUR) != 100 ||
	    read_is(s, data, 100))
		BAD("sendfile from the position");
	printf("ok\n");
	return 0;
}

/* The IP_TTL control message in @m, or -1. */
static int ttl_of(struct msghdr *m)
{
	struct cmsghdr *cm;
	int ttl;

	for (cm = CMSG_FIRSTHDR(m); cm; cm = CMSG_NXTHDR(m, cm))
		if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_TTL) {
			memcpy(&ttl, CMSG_DATA(cm), sizeof(ttl));
			return ttl;
		}
	return -1;
}

/*
 * A UDP socket whose first send is a sendmsg to a loopback address: it
 * becomes the kernel's, and that very message goes with its control data
 * (IP_TTL 7), which the receiver's recvmsg gets back (IP_RECVTTL); its
 * answer by sendto comes back from its address.
 */
static int udp_case(void)
{
	struct sockaddr_in to = {.sin_family = AF_INET}, from;
	socklen_t len = sizeof(to);
	char cbuf[CMSG_SPACE(sizeof(int))] = {0}, rbuf[256], data[8];
	struct iovec iov = {"ping", 4};
	struct msghdr m = {.msg_name = &to,
			   .msg_namelen = sizeof(to),
			   .msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = cbuf,
			   .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	int r = socket(AF_INET, SOCK_DGRAM, 0),
	    s = socket(AF_INET, SOCK_DGRAM, 0);
	int one = 1, ttl = 7;

	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (r < 0 || s < 0 || bind(r, (struct sockaddr *)&to, sizeof(to)) ||
	    getsockname(r, (struct sockaddr *)&to, &len) ||
	    setsockopt(r, IPPROTO_IP, IP_RECVTTL, &one, sizeof(one)))
		BAD("set-up");
	cm->cmsg_level = IPPROTO_IP;
	cm->cmsg_type = IP_TTL;
	cm->cmsg_len = CMSG_LEN(sizeof(ttl));
	memcpy(CMSG_DATA(cm), &ttl, sizeof(ttl));
	if (sendmsg(s, &m, 0) != 4)
		BAD("sendmsg");
	memset(&m, 0, sizeof(m));
	iov.iov_base = data;
	iov.iov_len = sizeof(data);
	m.msg_name = &from;
	m.msg_namelen = sizeof(from);
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = rbuf;
	m.msg_controllen = sizeof(rbuf);
	if (recvmsg(r, &m, 0) != 4 || memcmp(data, "ping", 4))
		BAD("recvmsg");
	if (ttl_of(&m) != 7)
		BAD("ttl %d, not the sender's 7", ttl_of(&m));
	if (sendto(r, "pong", 4, 0, (struct sockaddr *)&from, m.msg_namelen) !=
	    4)
		BAD("sendto");
	len = sizeof(from);
	if (recvfrom(s, data, sizeof(data), 0, (struct sockaddr *)&from,
		     &len) != 4 ||
	    memcmp(data, "pong", 4) || len != sizeof(to) ||
	    from.sin_port != to.sin_port)
		BAD("recvfrom");
	printf("ok\n");
	return 0;
}

/* __recv_chk within its buffer reads; __read_chk past it aborts. */
static int chk_case(void)
{
	char buf[8];
	int s, c;

	if (unit_tcp_pair(&s, &c) || write(c, "abcdefgh", 8) != 8)
		BAD("set-up");
	if (__recv_chk(s, buf, 3, sizeof(buf), MSG_WAITALL) != 3 ||
	    memcmp(buf, "abc", 3))
		BAD("__recv_chk");
	printf("ok recv\n");
	fflush(stdout);
	__read_chk(s, buf, sizeof(buf) + 1, sizeof(buf));
	printf("bad: __read_chk read past its buffer\n");
	return 1;
}

/* The runner's --io-child mode, run under the preload: case argv[2]. */
int preload_io_child(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	if (!strcmp(argv[2], "tcp"))
		return tcp_case();
	if (!strcmp(argv[2], "sendfile"))
		return sendfile_case();
	if (!strcmp(argv[2], "udp"))
		return udp_case();
	if (!strcmp(argv[2], "chk"))
		return chk_case();
	return 2;
}

/* Run case @name under the preload: its exit status, its output in @out. */
static int run_case(const char *name, char *out, size_t len)
{
	char path[] = "/tmp/rsp-io-log.XXXXXX";
	int status;

	status = unit_run_preloaded(
		path,
		(char *[]){"preload_io_test", "--io-child", (char *)name, NULL},
		out, len);
	unlink(path);
	return status;
}

START_TEST(tcp_reads_and_writes_reach_the_kernel_whole)
{
	char out[256];
	int status = run_case("tcp", out, sizeof(out));

	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status), "child: %s",
		      out);
	ck_assert_str_eq(out, "ok\n");
}
END_TEST

START_TEST(sendfile_keeps_offsets_and_positions)
{
	char out[256];
	int status = run_case("sendfile", out, sizeof(out));

	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status), "child: %s",
		      out);
	ck_assert_str_eq(out, "ok\n");
}
END_TEST

START_TEST(udp_ancillary_data_goes_both_ways)
{
	char out[256];
	int status = run_case("udp", out, sizeof(out));

	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status), "child: %s",
		      out);
	ck_assert_str_eq(out, "ok\n");
}
END_TEST

START_TEST(fortified_calls_keep_their_check)
{
	char out[256];
	int status = run_case("chk", out, sizeof(out));

	ck_assert_str_eq(out, "ok recv\n");
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
		      "status %#x", status);
}
END_TEST

Suite *preload_io_suite(void)
{
	Suite *s = suite_create("preload_io");
	TCase *tc = tcase_create("io");

	tcase_add_test(tc, tcp_reads_and_writes_reach_the_kernel_whole);
	tcase_add_test(tc, sendfile_keeps_offsets_and_positions);
	tcase_add_test(tc, udp_ancillary_data_goes_both_ways);
	tcase_add_test(tc, fortified_calls_keep_their_check);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
