// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Stream rsocket options on the fake kernel device: every TCP and IP
 * option a program written for TCP sets (Redis, iperf3, memcached) is
 * taken, checked as TCP checks it, and read back; IP_TOS reaches the CM
 * id; rfcntl keeps F_SETFD per socket.  The keepalive rule is
 * keepalive.c's, tested in rsocket_keepalive_test.
 */
#include <config.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cm/cma.h"
#include "rsocket/rs.h"
#include "fake_ucma.h"
#include "unit.h"

static int s;

static void sock_setup(void)
{
	fake_ucma_install();
	s = rsocket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(s, 0);
}

static void sock_teardown(void)
{
	ck_assert_int_eq(rclose(s), 0);
}

static int get_int(int level, int name)
{
	int v = -12345;
	socklen_t len = sizeof(v);

	ck_assert_int_eq(rgetsockopt(s, level, name, &v, &len), 0);
	ck_assert_int_eq(len, sizeof(v));
	return v;
}

/* The socket behind @fd; the table's own reference keeps it alive. */
static struct rsocket *rs_peek(int fd)
{
	struct rsocket *rs = rs_get(fd);

	ck_assert_ptr_nonnull(rs);
	rs_put(rs);
	return rs;
}

static int set_int(int level, int name, int v)
{
	return rsetsockopt(s, level, name, &v, sizeof(v));
}

START_TEST(tos_reaches_the_cm_id)
{
	struct rsocket *rs = rs_peek(s);
	struct cma_id_private *id = cma_id_priv(rs->cm_id);
	uint8_t byte = 0x28;

	ck_assert_int_eq(get_int(IPPROTO_IP, IP_TOS), 0);
	ck_assert_int_eq(set_int(IPPROTO_IP, IP_TOS, 0xb8), 0);
	ck_assert_int_eq(get_int(IPPROTO_IP, IP_TOS), 0xb8);
	ck_assert(id->opts.tos_set);
	ck_assert_uint_eq(id->opts.tos, 0xb8);
	/* the ECN bits are the transport's, as on a TCP socket */
	ck_assert_int_eq(set_int(IPPROTO_IP, IP_TOS, 0x13), 0);
	ck_assert_int_eq(get_int(IPPROTO_IP, IP_TOS), 0x10);
	/* Linux also takes a single byte */
	ck_assert_int_eq(rsetsockopt(s, IPPROTO_IP, IP_TOS, &byte, 1), 0);
	ck_assert_uint_eq(id->opts.tos, 0x28);
	ck_assert_int_eq(set_int(IPPROTO_IP, IP_TOS, 256), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(set_int(IPPROTO_IP, IP_TTL, 3), -1);
	ck_assert_int_eq(errno, ENOTSUP);
	/* IPv6's name for the same byte; -1 is the default */
	ck_assert_int_eq(set_int(IPPROTO_IPV6, IPV6_TCLASS, 0x20), 0);
	ck_assert_int_eq(get_int(IPPROTO_IPV6, IPV6_TCLASS), 0x20);
	ck_assert_int_eq(set_int(IPPROTO_IPV6, IPV6_TCLASS, -1), 0);
	ck_assert_uint_eq(id->opts.tos, 0);
}
END_TEST

START_TEST(keepalive_knobs_are_checked_and_kept)
{
	ck_assert_int_gt(get_int(IPPROTO_TCP, TCP_KEEPIDLE), 0);
	ck_assert_int_gt(get_int(IPPROTO_TCP, TCP_KEEPINTVL), 0);
	ck_assert_int_gt(get_int(IPPROTO_TCP, TCP_KEEPCNT), 0);
	ck_assert_int_eq(set_int(IPPROTO_TCP, TCP_KEEPIDLE, 5), 0);
	ck_assert_int_eq(set_int(IPPROTO_TCP, TCP_KEEPINTVL, 2), 0);
	ck_assert_int_eq(set_int(IPPROTO_TCP, TCP_KEEPCNT, 4), 0);
	ck_assert_int_eq(get_int(IPPROTO_TCP, TCP_KEEPIDLE), 5);
	ck_assert_int_eq(get_int(IPPROTO_TCP, TCP_KEEPINTVL), 2);
	ck_assert_int_eq(get_int(IPPROTO_TCP, TCP_KEEPCNT), 4);
	/* TCP's ranges */
	ck_assert_int_eq(set_int(IPPROTO_TCP, TCP_KEEPIDLE, 0), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(set_int(IPPROTO_TCP, TCP_KEEPINTVL, 32768), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(set_int(IPPROTO_TCP, TCP_KEEPCNT, 128), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(set_int(IPPROTO_TCP, TCP_KEEPCNT, 0), -1);
	ck_assert_int_eq(get_int(IPPROTO_TCP, TCP_KEEPCNT), 4);
	/* on and off; an unconnected socket starts no probing */
	ck_assert_int_eq(set_int(SOL_SOCKET, SO_KEEPALIVE, 1), 0);
	ck_assert_int_eq(get_int(SOL_SOCKET, SO_KEEPALIVE), 1);
	ck_assert_int_eq(set_int(SOL_SOCKET, SO_KEEPALIVE, 0), 0);
	ck_assert_int_eq(get_int(SOL_SOCKET, SO_KEEPALIVE), 0);
	ck_assert(!rs_peek(s)->ka.listed);
}
END_TEST

/*
 * A child forked while the keepalive thread sleeps on its condition
 * variable (an unconnected socket is looked at each second): the child has
 * no such thread, and its own must sleep and be woken there.  A condition
 * variable copied with the parent's sleeper counted in it blocked the
 * child's second wake-up for ever (Apache's event MPM under the preload:
 * its master sets SO_KEEPALIVE on the listener, then forks the workers).
 */
#ifndef __SANITIZE_THREAD__ /* no threads after a threaded process forks */
START_TEST(a_child_forked_while_keepalive_sleeps_keeps_it)
{
	int status, i;
	pid_t pid;

	ck_assert_int_eq(set_int(SOL_SOCKET, SO_KEEPALIVE, 1), 0);
	usleep(100000); /* the thread has looked once and sleeps */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		alarm(3); /* a hang ends the child */
		/* Each time the child's thread has gone to sleep. */
		for (i = 0; i < 3; i++) {
			if (set_int(SOL_SOCKET, SO_KEEPALIVE, 0) ||
			    set_int(SOL_SOCKET, SO_KEEPALIVE, 1))
				_exit(1);
			usleep(100000);
		}
		_exit(set_int(SOL_SOCKET, SO_KEEPALIVE, 0) ? 1 : 0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(set_int(SOL_SOCKET, SO_KEEPALIVE, 0), 0);
}
END_TEST
#endif

START_TEST(maxseg_caps_messages)
{
	struct rsocket *rs = rs_peek(s);
	uint32_t olen = 65536;

	ck_assert_int_eq(get_int(IPPROTO_TCP, TCP_MAXSEG), 2048);
	ck_assert_int_eq(set_int(IPPROTO_TCP, TCP_MAXSEG, 1000), 0);
	ck_assert_int_eq(get_int(IPPROTO_TCP, TCP_MAXSEG), 1000);
	ck_assert_int_eq(set_int(IPPROTO_TCP, TCP_MAXSEG, 87), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(set_int(IPPROTO_TCP, TCP_MAXSEG, 40000), -1);
	ck_assert_int_eq(errno, EINVAL);
	/* the send path's chunking honours it */
	rs->sbuf_bytes_avail = 1 << 20;
	ck_assert_uint_eq(rs_next_xfer(rs, &olen, 1 << 20), 1000);
	ck_assert_int_eq(set_int(IPPROTO_TCP, TCP_MAXSEG, 0), 0);
	olen = 65536;
	ck_assert_uint_eq(rs_next_xfer(rs, &olen, 1 << 20), 65536);
	rs->sbuf_bytes_avail = 0;
}
END_TEST

START_TEST(congestion_name_round_trips)
{
	char name[32];
	socklen_t len = sizeof(name);

	memset(name, 'x', sizeof(name));
	ck_assert_int_eq(
		rgetsockopt(s, IPPROTO_TCP, TCP_CONGESTION, name, &len), 0);
	ck_assert_int_eq(len, 16);
	ck_assert_int_gt(strlen(name), 0); /* the kernel's default */
	ck_assert_int_eq(rsetsockopt(s, IPPROTO_TCP, TCP_CONGESTION, "reno", 4),
			 0);
	len = sizeof(name);
	ck_assert_int_eq(
		rgetsockopt(s, IPPROTO_TCP, TCP_CONGESTION, name, &len), 0);
	ck_assert_str_eq(name, "reno");
	ck_assert_int_eq(
		rsetsockopt(s, IPPROTO_TCP, TCP_CONGESTION, "no-such-cc", 10),
		-1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(rsetsockopt(s, IPPROTO_TCP, TCP_CONGESTION, "", 0),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rsetsockopt(s, IPPROTO_TCP, TCP_CONGESTION, NULL, 4),
			 -1);
	ck_assert_int_eq(errno, EFAULT);
	/* a short buffer gets the start of the name, as TCP gives */
	len = 2;
	ck_assert_int_eq(
		rgetsockopt(s, IPPROTO_TCP, TCP_CONGESTION, name, &len), 0);
	ck_assert_int_eq(len, 2);
	ck_assert(!memcmp(name, "re", 2));
}
END_TEST

START_TEST(tcp_info_reports_the_state)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	uint8_t state = 0xff;

	memset(&ti, 0xee, sizeof(ti));
	ck_assert_int_eq(rgetsockopt(s, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
	ck_assert_int_eq(len, sizeof(ti));
	ck_assert_uint_eq(ti.tcpi_state, TCP_CLOSE);
	ck_assert_uint_eq(ti.tcpi_snd_mss, 2048);
	ck_assert_uint_eq(ti.tcpi_total_retrans, 0);
	/* a one-byte buffer gets the state alone */
	len = 1;
	ck_assert_int_eq(rgetsockopt(s, IPPROTO_TCP, TCP_INFO, &state, &len),
			 0);
	ck_assert_int_eq(len, 1);
	ck_assert_uint_eq(state, TCP_CLOSE);
}
END_TEST

START_TEST(broadcast_and_nodelay_are_flags)
{
	ck_assert_int_eq(get_int(SOL_SOCKET, SO_BROADCAST), 0);
	ck_assert_int_eq(set_int(SOL_SOCKET, SO_BROADCAST, 1), 0);
	ck_assert_int_eq(get_int(SOL_SOCKET, SO_BROADCAST), 1);
	ck_assert_int_eq(set_int(SOL_SOCKET, SO_BROADCAST, 0), 0);
	ck_assert_int_eq(get_int(SOL_SOCKET, SO_BROADCAST), 0);
	ck_assert_int_eq(set_int(IPPROTO_TCP, TCP_NODELAY, 1), 0);
	ck_assert_int_eq(get_int(IPPROTO_TCP, TCP_NODELAY), 1);
}
END_TEST

START_TEST(fd_flags_are_per_socket)
{
	int t = rsocket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(t, 0);
	ck_assert_int_eq(rfcntl(s, F_GETFD), 0);
	ck_assert_int_eq(rfcntl(t, F_GETFD), FD_CLOEXEC);
	ck_assert_int_eq(rfcntl(s, F_SETFD, FD_CLOEXEC), 0);
	ck_assert_int_eq(rfcntl(s, F_GETFD), FD_CLOEXEC);
	ck_assert_int_eq(rfcntl(t, F_SETFD, 0), 0);
	ck_assert_int_eq(rfcntl(t, F_GETFD), 0);
	ck_assert_int_eq(rfcntl(s, F_GETFD), FD_CLOEXEC);
	/* the library's own descriptor never leaks into an exec'd program */
	ck_assert_int_eq(fcntl(t, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	ck_assert_int_eq(rclose(t), 0);
}
END_TEST

Suite *rsocket_options_suite(void)
{
	Suite *su = suite_create("rsocket_options");
	TCase *tc = tcase_create("options");

	tcase_add_checked_fixture(tc, sock_setup, sock_teardown);
	tcase_add_test(tc, tos_reaches_the_cm_id);
	tcase_add_test(tc, keepalive_knobs_are_checked_and_kept);
#ifndef __SANITIZE_THREAD__
	tcase_add_test(tc, a_child_forked_while_keepalive_sleeps_keeps_it);
#endif
	tcase_add_test(tc, maxseg_caps_messages);
	tcase_add_test(tc, congestion_name_round_trips);
	tcase_add_test(tc, tcp_info_reports_the_state);
	tcase_add_test(tc, broadcast_and_nodelay_are_flags);
	tcase_add_test(tc, fd_flags_are_per_socket);
	suite_add_tcase(su, tc);
	return su;
}
