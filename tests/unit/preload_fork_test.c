// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * librspreload's RDMAV_FORK_SAFE handshake (src/preload/fork.c): loopback
 * TCP connections under this build's preload in that mode, with no RDMA
 * device (so both ends offer, one cannot go on, and the connection stays
 * on TCP): whoever speaks first, the peer waiting in epoll, poll or select
 * wakes up, and every byte arrives as sent; a peer without the preload
 * keeps TCP.  The handshake's decisions are preload_forkstep_test.c's.
 */
#define _GNU_SOURCE
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preload_child.h"
#include "unit.h"

#define REQ "GET / HTTP/1.0\r\n\r\n"
#define REPLY "HTTP/1.0 200 OK\r\n\r\nhello"

/* A loopback connection: *srv accepted, *cli connected (raw: no preload). */
static int pair(int *srv, int *cli, bool raw_client)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t len = sizeof(sin);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || bind(l, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(l, 4) || getsockname(l, (struct sockaddr *)&sin, &len))
		return -1;
	*cli = raw_client ? (int)syscall(SYS_socket, AF_INET, SOCK_STREAM, 0)
			  : socket(AF_INET, SOCK_STREAM, 0);
	if (*cli < 0)
		return -1;
	if (raw_client ? syscall(SYS_connect, *cli, &sin, sizeof(sin))
		       : connect(*cli, (struct sockaddr *)&sin, sizeof(sin)))
		return -1;
	*srv = accept(l, NULL, NULL);
	close(l);
	return *srv < 0 ? -1 : 0;
}

/* All of @want from fd (raw: the kernel's read, past the preload). */
static int expect(int fd, const char *want, bool raw)
{
	char buf[256];
	size_t got = 0, len = strlen(want);
	ssize_t n;

	while (got < len) {
		n = raw ? syscall(SYS_read, fd, buf + got, len - got)
			: read(fd, buf + got, len - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return memcmp(buf, want, len) ? -1 : 0;
}

static int say(int fd, const char *what, bool raw)
{
	size_t len = strlen(what);

	return (raw ? syscall(SYS_write, fd, what, len)
		    : write(fd, what, len)) == (ssize_t)len
		       ? 0
		       : -1;
}

/* Waits up to 10 s for fd to be readable: in epoll, poll or select. */
static int wait_in(const char *how, int fd)
{
	if (!strcmp(how, "epoll")) {
		struct epoll_event ev = {.events = EPOLLIN}, out;
		int ep = epoll_create1(0), n;

		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
			return -1;
		n = epoll_wait(ep, &out, 1, 10000);
		close(ep);
		return n == 1 ? 0 : -1;
	}
	if (!strcmp(how, "poll")) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		return poll(&p, 1, 10000) == 1 ? 0 : -1;
	} else {
		struct timeval tv = {.tv_sec = 10};
		fd_set r;

		FD_ZERO(&r);
		FD_SET(fd, &r);
		return select(fd + 1, &r, NULL, NULL, &tv) == 1 ? 0 : -1;
	}
}

/*
 * @who speaks first ("client" or "server"); the other end waits in @how
 * for it, in a forked child, then replies.  Prints "ok" or "FAIL why".
 */
static int child(const char *who, const char *how, bool raw_client)
{
	/*
	 * "prefix": the client's request is the start of an offer, no more;
	 * "prefix-fin": the same, then the client shuts its side down
	 */
	bool fin = !strcmp(who, "prefix-fin");
	bool prefix = fin || !strcmp(who, "prefix");
	bool client_first = prefix || !strcmp(who, "client");
	const char *req = prefix ? "RS" : REQ;
	int s, c, status;
	pid_t pid;

	if (pair(&s, &c, raw_client)) {
		printf("FAIL set-up: %s\n", strerror(errno));
		return 1;
	}
	fflush(stdout);
	pid = fork();
	if (!pid) { /* the server, in a child as a forking server does */
		close(c);
		if (client_first) {
			if (wait_in(how, s))
				_exit(2); /* the old deadlock */
			if (expect(s, req, false) || say(s, REPLY, false))
				_exit(3);
		} else if (say(s, REPLY, false) || expect(s, req, false)) {
			_exit(3);
		}
		_exit(0);
	}
	close(s);
	if (client_first) {
		if (say(c, req, raw_client) || (fin && shutdown(c, SHUT_WR)) ||
		    expect(c, REPLY, raw_client)) {
			printf("FAIL client: %s\n", strerror(errno));
			return 1;
		}
	} else if (wait_in(how, c) || expect(c, REPLY, raw_client) ||
		   say(c, req, raw_client)) {
		printf("FAIL client waiting in %s\n", how);
		return 1;
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		printf("FAIL server: status %d\n", status);
		return 1;
	}
	printf("ok\n");
	return 0;
}

static void run(const char *who, const char *how, const char *raw,
		const char *log_has)
{
	char path[] = "/tmp/rsp-fork-log.XXXXXX", out[256];
	int status;

	setenv("RDMAV_FORK_SAFE", "1", 1);
	status = unit_run_preloaded(path,
				    (char *[]){"preload_fork_test",
					       "--fork-child", (char *)who,
					       (char *)how, (char *)raw, NULL},
				    out, sizeof(out));
	ck_assert_msg(!strncmp(out, "ok", 2), "%s first, %s: %s; log: %s", who,
		      how, out, slurp(path));
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_msg(strstr(slurp(path), log_has), "log: %s", slurp(path));
	unlink(path);
}

/* No RDMA device here: the passive end offers "not ready". */
#define NO_PEER "stays on TCP (no fork-mode peer or rsocket)"

START_TEST(client_first_server_in_epoll)
{
	run("client", "epoll", "preload", NO_PEER);
}
END_TEST

START_TEST(client_first_server_in_poll)
{
	run("client", "poll", "preload", NO_PEER);
}
END_TEST

START_TEST(client_first_server_in_select)
{
	run("client", "select", "preload", NO_PEER);
}
END_TEST

START_TEST(server_first_client_in_poll)
{
	run("server", "poll", "preload", NO_PEER);
}
END_TEST

START_TEST(plain_client_keeps_tcp)
{
	run("client", "epoll", "raw",
	    "stays on TCP (the peer sent data first)");
}
END_TEST

/*
 * A peer without the preload whose request is the start of an offer
 * ("RS") and that then waits for the reply: the server's read gives it
 * those bytes after the bound on the rest of an offer, never hangs.
 */
START_TEST(plain_client_sending_an_offers_start_keeps_tcp)
{
	run("prefix", "poll", "raw", "stays on TCP (the peer sent data first)");
}
END_TEST

/*
 * The same peer shuts its side down after "RS": no more can come, so the
 * server's read has them at once, not after the bound.
 */
START_TEST(plain_client_closing_after_an_offers_start_keeps_tcp)
{
	run("prefix-fin", "poll", "raw",
	    "the peer shut down after an offer's start");
}
END_TEST

/* The runner's --fork-child WHO HOW raw|tcp mode, run under the preload. */
int preload_fork_child(int argc, char **argv)
{
	if (argc != 5)
		return 2;
	return child(argv[2], argv[3], !strcmp(argv[4], "raw"));
}

Suite *preload_fork_suite(void)
{
	Suite *s = suite_create("preload_fork");
	TCase *tc = tcase_create("handshake");

	tcase_add_test(tc, client_first_server_in_epoll);
	tcase_add_test(tc, client_first_server_in_poll);
	tcase_add_test(tc, client_first_server_in_select);
	tcase_add_test(tc, server_first_client_in_poll);
	tcase_add_test(tc, plain_client_keeps_tcp);
	tcase_add_test(tc, plain_client_sending_an_offers_start_keeps_tcp);
	tcase_add_test(tc,
		       plain_client_closing_after_an_offers_start_keeps_tcp);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
