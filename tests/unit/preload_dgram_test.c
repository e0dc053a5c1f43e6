// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * librspreload's UDP sockets (src/preload/dgram.c: which datagrams go
 * over RDMA), run under this build's librspreload.so with no RDMA device:
 * a loopback UDP echo must fall back to the kernel's UDP (no RDMA device
 * carries loopback) and still deliver every byte, also to an epoll set
 * joined before the first sendto, with SO_REUSEADDR set before the
 * fallback still in force; and each other address a socket first names
 * gives the reason it decides for the kernel.  Which addresses and
 * sockets are UDP's concern is tested in preload_addr_test.c.
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
 * Run as "preload_dgram_test --echo-child" under librspreload.so: a client
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
	char path[] = "/tmp/rsp-dgram-log.XXXXXX", out[256];
	int status;

	status = unit_run_preloaded(
		path, (char *[]){"preload_dgram_test", "--echo-child", NULL},
		out, sizeof(out));
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

/*
 * The runner's --why-child mode, run under the preload with
 * RDMA_RSOCKET_PORTS=1024-65535: four UDP sockets, each first naming
 * another kind of address (one binds to the wildcard and port argv[2]
 * first), then their descriptors.
 */
int preload_dgram_why_child(int argc, char **argv)
{
	struct sockaddr_in far = {.sin_family = AF_INET, .sin_port = htons(9)},
			   any = {.sin_family = AF_INET,
				  .sin_port = htons(7471)},
			   lo = {.sin_family = AF_INET,
				 .sin_port = htons(7471)};
	int other_port, wildcard, bound, unreached;

	if (argc < 3)
		return 2;
	far.sin_addr.s_addr = htonl(0xc0000201); /* 192.0.2.1 */
	lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	other_port = socket(AF_INET, SOCK_DGRAM, 0);
	wildcard = socket(AF_INET, SOCK_DGRAM, 0);
	bound = socket(AF_INET, SOCK_DGRAM, 0);
	unreached = socket(AF_INET, SOCK_DGRAM, 0);
	/* what the sends return is the network's business, not ours */
	sendto(other_port, "x", 1, 0, (struct sockaddr *)&far, sizeof(far));
	sendto(wildcard, "x", 1, 0, (struct sockaddr *)&any, sizeof(any));
	any.sin_port = htons((uint16_t)atoi(argv[2]));
	if (bind(bound, (struct sockaddr *)&any, sizeof(any))) {
		printf("bad: bind: %s\n", strerror(errno));
		return 1;
	}
	sendto(bound, "x", 1, 0, (struct sockaddr *)&lo, sizeof(lo));
	far.sin_port = htons(7471);
	sendto(unreached, "x", 1, 0, (struct sockaddr *)&far, sizeof(far));
	printf("%d %d %d %d\n", other_port, wildcard, bound, unreached);
	return 0;
}

/* Whether the log says descriptor @fd fell back for reason @why. */
static bool fell_back_for(const char *log, int fd, const char *why)
{
	char line[128];

	snprintf(line, sizeof(line),
		 "fd %d: %s: falling back to the kernel's UDP", fd, why);
	return strstr(log, line) != NULL;
}

/* A UDP port free right now (the kernel's choice), as a string. */
static void free_udp_port(char *buf, size_t len)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t slen = sizeof(sin);
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	ck_assert_int_ge(s, 0);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(getsockname(s, (struct sockaddr *)&sin, &slen), 0);
	close(s);
	snprintf(buf, len, "%u", ntohs(sin.sin_port));
}

/*
 * The first address a socket names decides, and its log line says why: a
 * port outside RDMA_RSOCKET_PORTS, a wildcard destination, a loopback
 * one, one no RDMA device reaches.  A bind to the wildcard decides
 * nothing yet: that socket falls back at its first send, for the
 * loopback destination.
 */
START_TEST(each_first_address_decides_for_its_reason)
{
	char path[] = "/tmp/rsp-dgram-log.XXXXXX", out[256], port[8], *log;
	int status, other_port, wildcard, bound, unreached;

	free_udp_port(port, sizeof(port));
	setenv("RDMA_RSOCKET_PORTS", "1024-65535", 1);
	status = unit_run_preloaded(
		path,
		(char *[]){"preload_dgram_test", "--why-child", port, NULL},
		out, sizeof(out));
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child: %s", out);
	ck_assert_int_eq(sscanf(out, "%d %d %d %d", &other_port, &wildcard,
				&bound, &unreached),
			 4);
	log = slurp(path);
	ck_assert_msg(fell_back_for(log, other_port, "not an RDMA port"),
		      "log: %s", log);
	ck_assert_msg(fell_back_for(log, wildcard, "a wildcard destination"),
		      "log: %s", log);
	ck_assert_msg(fell_back_for(log, bound, "a loopback address"),
		      "log: %s", log);
	ck_assert_msg(fell_back_for(log, unreached, "not reached over RDMA"),
		      "log: %s", log);
	unlink(path);
}
END_TEST

/* The runner's --echo-child mode: the echo, run under the preload. */
int preload_dgram_echo_child(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return echo_child();
}

Suite *preload_dgram_suite(void)
{
	Suite *s = suite_create("preload_dgram");
	TCase *tc = tcase_create("udp");

	tcase_add_test(tc, loopback_udp_falls_back_and_delivers);
	tcase_add_test(tc, each_first_address_decides_for_its_reason);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
