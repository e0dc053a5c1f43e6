// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * librspreload's UDP sockets: a loopback UDP echo run under this build's
 * librspreload.so, which must fall back to the kernel's UDP (no RDMA
 * device carries loopback) and still deliver every byte, also to an epoll
 * set joined before the first sendto, with SO_REUSEADDR set before the
 * fallback still in force.  Which addresses and sockets are UDP's
 * concern is tested in preload_addr_test.c.
 */
#define _GNU_SOURCE
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preload/preload.h"
#include "unit.h"
#include "preload_child.h"

/*
 * Run as "preload_udp_test --echo-child" under librspreload.so: a client
 * that joins an epoll set first, then sends 50 datagrams to a server on
 * 127.0.0.1 and checks each echo.  Prints "ok N" or "bad: why".
 */
static int echo_child(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	struct epoll_event ev = {.events = EPOLLIN};
	struct sockaddr_storage from;
	socklen_t alen = sizeof(a), flen;
	char out[300], in[400];
	int srv, twin, cli, ep, i, k, one = 1;
	ssize_t n;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	srv = socket(AF_INET, SOCK_DGRAM, 0);
	twin = socket(AF_INET, SOCK_DGRAM, 0);
	cli = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	ep = epoll_create1(0);
	/* options set before the fallback hold after it: both bind */
	if (srv < 0 || twin < 0 || cli < 0 || ep < 0 ||
	    setsockopt(srv, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(twin, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(srv, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(srv, (struct sockaddr *)&a, &alen) ||
	    bind(twin, (struct sockaddr *)&a, sizeof(a)) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, cli, &ev)) {
		printf("bad: setup: %s\n", strerror(errno));
		return 1;
	}
	close(twin);
	for (i = 0; i < 50; i++) {
		for (k = 0; k < (int)sizeof(out); k++)
			out[k] = (char)(i * 7 + k);
		if (sendto(cli, out, sizeof(out), 0, (struct sockaddr *)&a,
			   sizeof(a)) != sizeof(out)) {
			printf("bad: sendto: %s\n", strerror(errno));
			return 1;
		}
		flen = sizeof(from);
		n = recvfrom(srv, in, sizeof(in), 0, (struct sockaddr *)&from,
			     &flen);
		if (n != sizeof(out) ||
		    sendto(srv, in, n, 0, (struct sockaddr *)&from, flen) !=
			    n) {
			printf("bad: server: %s\n", strerror(errno));
			return 1;
		}
		if (epoll_wait(ep, &ev, 1, 5000) != 1) {
			printf("bad: epoll never reported the echo %d\n", i);
			return 1;
		}
		n = recv(cli, in, sizeof(in), 0);
		if (n != sizeof(out) || memcmp(in, out, sizeof(out))) {
			printf("bad: echo %d differs (%zd bytes)\n", i, n);
			return 1;
		}
	}
	printf("ok %d\n", i);
	return 0;
}

START_TEST(loopback_udp_falls_back_and_delivers)
{
	char path[] = "/tmp/rsp-udp-log.XXXXXX", out[256];
	int status;

	status = unit_run_preloaded(
		path, (char *[]){"preload_udp_test", "--echo-child", NULL}, out,
		sizeof(out));
	ck_assert_msg(!strncmp(out, "ok 50", 5), "child: %s", out);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* both sockets were datagram rsockets, and both fell back */
	ck_assert_msg(strstr(slurp(path), "datagram rsocket"), "log: %s",
		      slurp(path));
	ck_assert_msg(strstr(slurp(path), "a loopback address: falling back "
					  "to the kernel's UDP"),
		      "log: %s", slurp(path));
	unlink(path);
}
END_TEST

/* The runner's --echo-child mode: the echo, run under the preload. */
int preload_udp_echo_child(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return echo_child();
}

Suite *preload_udp_suite(void)
{
	Suite *s = suite_create("preload_udp");
	TCase *tc = tcase_create("udp");

	tcase_add_test(tc, loopback_udp_falls_back_and_delivers);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
