// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * librspreload's socket() (src/preload/socket.c), run under this build's
 * librspreload.so with no RDMA device: only TCP sockets (whatever their
 * flags, of either family) are offered to rsockets, and when no rsocket
 * can be made the program keeps a working kernel socket.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "preload_child.h"
#include "unit.h"

/*
 * The runner's --socket-child mode, run under the preload: the
 * descriptors of two TCP sockets and two AF_UNIX ones, then whether the
 * first TCP one listens on the loopback as a kernel socket.
 */
int preload_socket_child(int argc, char **argv)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	int tcp4, tcp6, unix_stream, unix_dgram, listens;

	(void)argc;
	(void)argv;
	tcp4 = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
	unix_stream = socket(AF_UNIX, SOCK_STREAM, 0);
	tcp6 = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	unix_dgram = socket(AF_UNIX, SOCK_DGRAM, 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	listens = !bind(tcp4, (struct sockaddr *)&sin, sizeof(sin)) &&
		  !listen(tcp4, 1);
	printf("%d %d %d %d %d\n", tcp4, tcp6, unix_stream, unix_dgram,
	       listens);
	fflush(stdout);
	return 0;
}

/* Whether the log has a line about descriptor @fd. */
static bool logs_fd(const char *log, int fd)
{
	char what[32];

	snprintf(what, sizeof(what), "fd %d:", fd);
	return strstr(log, what) != NULL;
}

START_TEST(only_tcp_is_offered_and_stays_usable)
{
	char path[] = "/tmp/rsp-socket-log.XXXXXX", out[256], *log;
	int status, tcp4, tcp6, unix_stream, unix_dgram, listens;

	status = unit_run_preloaded(
		path, (char *[]){"preload_socket_test", "--socket-child", NULL},
		out, sizeof(out));
	log = slurp(path);
	unlink(path);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child: %s", out);
	ck_assert_int_eq(sscanf(out, "%d %d %d %d %d", &tcp4, &tcp6,
				&unix_stream, &unix_dgram, &listens),
			 5);
	ck_assert_msg(logs_fd(log, tcp4) && logs_fd(log, tcp6), "log: %s", log);
	ck_assert_msg(strstr(log, "no rsocket"), "log: %s", log);
	ck_assert_msg(!logs_fd(log, unix_stream) && !logs_fd(log, unix_dgram),
		      "log: %s", log);
	ck_assert_int_eq(listens, 1);
}
END_TEST

Suite *preload_socket_suite(void)
{
	Suite *s = suite_create("preload_socket");
	TCase *tc = tcase_create("socket");

	tcase_add_test(tc, only_tcp_is_offered_and_stays_usable);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
