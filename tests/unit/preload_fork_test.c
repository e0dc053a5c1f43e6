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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preload/preload.h"
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

/*
 * A loopback connection (pair), then a fork: the child's 0, the parent's
 * the child's pid; -1 with "FAIL set-up" printed if either failed.
 */
static pid_t forked_pair(int *srv, int *cli, bool raw_client)
{
	pid_t pid;

	if (pair(srv, cli, raw_client)) {
		printf("FAIL set-up: %s\n", strerror(errno));
		return -1;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		printf("FAIL set-up: fork: %s\n", strerror(errno));
	return pid;
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

/* The forked @who ended well: prints "ok" (0), or "FAIL" and its status. */
static int server_ended(pid_t pid, const char *who)
{
	int status;

	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		printf("FAIL %s: status %d\n", who, status);
		return 1;
	}
	printf("ok\n");
	return 0;
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
	int s, c;
	pid_t pid;

	pid = forked_pair(&s, &c, raw_client);
	if (pid < 0)
		return 1;
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
	return server_ended(pid, "server");
}

/* run, whose log must also lack @log_lacks (NULL: anything goes). */
static void run_lacking(const char *who, const char *how, const char *raw,
			const char *log_has, const char *log_lacks);

static void run(const char *who, const char *how, const char *raw,
		const char *log_has)
{
	run_lacking(who, how, raw, log_has, NULL);
}

static void run_lacking(const char *who, const char *how, const char *raw,
			const char *log_has, const char *log_lacks)
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
	ck_assert_msg(!log_lacks || !strstr(slurp(path), log_lacks), "log: %s",
		      slurp(path));
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

/* --- non-blocking sockets: the handshake never blocks a call ----------- */

/*
 * Whether fd gets ready for @events within @ms in epoll, poll or select
 * (@how): 1 ready, 0 not, -1 an error.
 */
static int ready_in(const char *how, int fd, short events, int ms)
{
	if (!strcmp(how, "epoll")) {
		struct epoll_event ev = {.events = events}, out;
		int ep = epoll_create1(0), n;

		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
			return -1;
		n = epoll_wait(ep, &out, 1, ms);
		close(ep);
		return n;
	}
	if (!strcmp(how, "poll")) {
		struct pollfd p = {.fd = fd, .events = events};

		return poll(&p, 1, ms);
	} else {
		struct timeval tv = {.tv_sec = ms / 1000,
				     .tv_usec = ms % 1000 * 1000};
		fd_set set;

		FD_ZERO(&set);
		FD_SET(fd, &set);
		return select(fd + 1, events & POLLIN ? &set : NULL,
			      events & POLLOUT ? &set : NULL, NULL, &tv);
	}
}

static int set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1
		      : fcntl(fd, F_SETFL,
			      on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

/*
 * The end that speaks first (@what, on a non-blocking @fd) while its peer
 * has not read yet: its write fails with EAGAIN at once (it used to wait
 * for the peer's offer, so the peer, waiting for @go, never read: the
 * alarm ends that); nothing wakes it while the peer is silent (no busy
 * loop); the peer is told to go on and the end waits in @how to be woken,
 * then its write goes through.
 */
static const char *speak_first_in_set(int fd, const char *what, int go);

static const char *speak_first(int fd, const char *what, const char *how,
			       int go)
{
	size_t len = strlen(what);

	if (!strcmp(how, "epoll-set"))
		return speak_first_in_set(fd, what, go);
	if (set_nonblock(fd, true))
		return "O_NONBLOCK";
	if (write(fd, what, len) != -1 || errno != EAGAIN)
		return "first write not EAGAIN";
	if (ready_in(how, fd, POLLOUT, 300) != 0)
		return "woken before the peer answered";
	if (write(go, "g", 1) != 1)
		return "go";
	if (ready_in(how, fd, POLLOUT, 10000) != 1)
		return "not woken by the peer's answer";
	if (write(fd, what, len) != (ssize_t)len)
		return "second write";
	return set_nonblock(fd, false) ? "blocking again" : NULL;
}

/*
 * The same with one epoll set for the connection's life, as an event
 * loop keeps it: added before the first write, it stays silent while the
 * peer is (the socket itself is writable), wakes the end for the answer;
 * once the connection is settled its interest changes to input, and the
 * peer's words wake it.
 */
static const char *speak_first_in_set(int fd, const char *what, int go)
{
	struct epoll_event ev = {.events = EPOLLOUT}, out;
	size_t len = strlen(what);
	const char *err = NULL;
	int ep = epoll_create1(0);

	if (ep < 0 || set_nonblock(fd, true) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
		return "set-up";
	if (write(fd, what, len) != -1 || errno != EAGAIN)
		err = "first write not EAGAIN";
	else if (epoll_wait(ep, &out, 1, 300) != 0)
		err = "woken before the peer answered";
	else if (write(go, "g", 1) != 1)
		err = "go";
	else if (epoll_wait(ep, &out, 1, 10000) != 1 ||
		 !(out.events & EPOLLOUT))
		err = "not woken by the peer's answer";
	else if (write(fd, what, len) != (ssize_t)len)
		err = "second write";
	ev.events = EPOLLIN;
	if (!err && epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev))
		err = "EPOLL_CTL_MOD";
	else if (!err && (epoll_wait(ep, &out, 1, 10000) != 1 ||
			  !(out.events & EPOLLIN)))
		err = "not woken by the peer's words";
	close(ep);
	if (!err && set_nonblock(fd, false))
		err = "blocking again";
	return err;
}

/* A call blocked where it must not: say so, for the test's message. */
static void on_alarm(int sig)
{
	static const char msg[] = "FAIL a call blocked\n";

	(void)sig;
	syscall(SYS_write, 1, msg, sizeof(msg) - 1);
	_exit(1);
}

/*
 * @who ("nb-client": the client speaks first; "nb-server": the server
 * does, as a banner) on a non-blocking socket, waiting in @how; the peer
 * is blocking and reads only when told.  Prints "ok" or "FAIL why".
 */
static int nb_child(const char *who, const char *how)
{
	bool server_first = !strcmp(who, "nb-server");
	const char *err = NULL;
	int s, c, go[2];
	char g;
	pid_t pid;

	signal(SIGALRM, on_alarm);
	alarm(20); /* a call that blocks where it must not */
	if (pipe(go)) {
		printf("FAIL set-up: %s\n", strerror(errno));
		return 1;
	}
	pid = forked_pair(&s, &c, false);
	if (pid < 0)
		return 1;
	if (!pid) { /* the server, in a child as a forking server does */
		close(c);
		close(go[server_first ? 0 : 1]);
		if (server_first) {
			err = speak_first(s, REPLY, how, go[1]);
			if (err) {
				printf("FAIL server: %s\n", err);
				_exit(3);
			}
			_exit(expect(s, REQ, false) ? 4 : 0);
		}
		if (read(go[0], &g, 1) != 1 || expect(s, REQ, false) ||
		    say(s, REPLY, false))
			_exit(3);
		_exit(0);
	}
	close(s);
	close(go[server_first ? 1 : 0]);
	if (server_first) {
		if (read(go[0], &g, 1) != 1 || expect(c, REPLY, false) ||
		    say(c, REQ, false))
			err = "reading the banner";
	} else {
		err = speak_first(c, REQ, how, go[1]);
		if (!err && expect(c, REPLY, false))
			err = "reading the reply";
	}
	if (err) {
		printf("FAIL client: %s\n", err);
		return 1;
	}
	return server_ended(pid, "server");
}

/*
 * The server's side of nb-prefix and nb-split: a non-blocking socket
 * whose peer sent the start of an offer.  Its read fails with EAGAIN at
 * once (it used to wait for the rest, up to a second); poll or epoll
 * (@how) stays silent though the bytes are there (no busy loop) until the
 * rest comes (@split: after half a second, before the bound) or the bound
 * runs out (not before).  Then the
 * reads give @want, on TCP.
 */
static const char *rest_server(int s, const char *how, bool split,
			       const char *want)
{
	struct timespec t0;
	char buf[64];
	size_t got = 0, len = strlen(want);
	ssize_t n;
	long ms;

	if (set_nonblock(s, true) || ready_in(how, s, POLLIN, 10000) != 1)
		return "no first bytes";
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (read(s, buf, sizeof(buf)) != -1 || errno != EAGAIN)
		return "first read not EAGAIN";
	if (unit_ms_since(&t0) > 200)
		return "first read waited";
	if (ready_in(how, s, POLLIN, 10000) != 1)
		return "not woken";
	ms = unit_ms_since(&t0);
	if (split && (ms < 250 || ms > 900))
		return "woken at another time than the rest's";
	if (!split && ms < 800)
		return "woken before the bound";
	while (got < len) {
		n = read(s, buf + got, len - got);
		if (n > 0)
			got += (size_t)n;
		else if (n == 0 || errno != EAGAIN ||
			 ready_in(how, s, POLLIN, 10000) != 1)
			return "reading";
	}
	return memcmp(buf, want, len) ? "other bytes" : NULL;
}

/*
 * A client without the preload (raw) sends the start of an offer: "RS"
 * and nothing more (nb-prefix, a plain client's request), or "RSFK" and
 * the rest of an offer 500 ms later (nb-split), then reads the server's
 * offer and speaks.  The server, non-blocking, waits in @how.
 */
static int rest_child(const char *who, const char *how)
{
	static const char rest[4] = {0, 0, RSP_FK_ACTIVE, 0};
	bool split = !strcmp(who, "nb-split");
	const char *req = split ? REQ : "RS", *err = NULL;
	char offer[RSP_FK_LEN];
	int s, c, status;
	pid_t pid;

	signal(SIGALRM, on_alarm);
	alarm(20);
	pid = forked_pair(&s, &c, true);
	if (pid < 0)
		return 1;
	if (!pid) {
		close(c);
		err = rest_server(s, how, split, req);
		if (!err && set_nonblock(s, false))
			err = "blocking again";
		if (!err && say(s, REPLY, false))
			err = "reply";
		if (err)
			printf("FAIL server: %s\n", err);
		fflush(stdout);
		_exit(err ? 3 : 0);
	}
	close(s);
	if (syscall(SYS_write, c, split ? "RSFK" : "RS", split ? 4 : 2) < 0)
		err = "first bytes";
	if (!err && split) {
		usleep(500000);
		if (syscall(SYS_write, c, rest, sizeof(rest)) != sizeof(rest) ||
		    syscall(SYS_recvfrom, c, offer, sizeof(offer), MSG_WAITALL,
			    NULL, NULL) != sizeof(offer) ||
		    memcmp(offer, "RSFK", 4) || say(c, REQ, true))
			err = "the rest of the offer";
	}
	if (!err && expect(c, REPLY, true))
		err = "reply";
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return 1; /* the server said why */
	if (err) {
		printf("FAIL client: %s\n", err);
		return 1;
	}
	printf("ok\n");
	return 0;
}

START_TEST(nonblocking_client_first_waits_in_epoll)
{
	run("nb-client", "epoll", "preload", NO_PEER);
}
END_TEST

START_TEST(nonblocking_client_first_waits_in_poll)
{
	run("nb-client", "poll", "preload", NO_PEER);
}
END_TEST

START_TEST(nonblocking_client_first_waits_in_select)
{
	run("nb-client", "select", "preload", NO_PEER);
}
END_TEST

START_TEST(nonblocking_server_first_waits_in_epoll)
{
	run("nb-server", "epoll", "preload", NO_PEER);
}
END_TEST

START_TEST(nonblocking_client_first_keeps_its_epoll_set)
{
	run("nb-client", "epoll-set", "preload", NO_PEER);
}
END_TEST

START_TEST(nonblocking_server_first_keeps_its_epoll_set)
{
	run("nb-server", "epoll-set", "preload", NO_PEER);
}
END_TEST

START_TEST(nonblocking_offers_start_that_stays_one_waits_in_epoll)
{
	run("nb-prefix", "epoll", "raw",
	    "stays on TCP (the peer sent data first)");
}
END_TEST

START_TEST(nonblocking_offers_start_that_stays_one_waits_in_poll)
{
	run("nb-prefix", "poll", "raw",
	    "stays on TCP (the peer sent data first)");
}
END_TEST

START_TEST(nonblocking_offer_in_two_parts_waits_in_epoll)
{
	run("nb-split", "epoll", "raw", NO_PEER);
}
END_TEST

START_TEST(nonblocking_offer_in_two_parts_waits_in_select)
{
	run("nb-split", "select", "raw", NO_PEER);
}
END_TEST

/* --- connections inherited across execve ------------------------------- */

/*
 * Reads all of @want from a non-blocking @fd, waiting in poll: a
 * readiness that turns out to be the peer's offer alone is answered
 * with EAGAIN, never a hang.
 */
static int expect_nonblocking(int fd, const char *want)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	size_t got = 0, len = strlen(want);
	char buf[256];
	ssize_t n;

	if (set_nonblock(fd, true))
		return -1;
	while (got < len) {
		if (poll(&p, 1, 10000) != 1)
			return -1;
		n = read(fd, buf + got, len - got);
		if (n < 0 && errno == EAGAIN)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return memcmp(buf, want, len) ? -1 : 0;
}

/*
 * The server image a forking server executes with the connection on its
 * descriptors 0 and 1 (--fork-child inherited-server MODE): "write-first"
 * moves it to a descriptor of its own as sshd does (dup, then 0 and 1
 * closed) and speaks first; "read-first" reads the request from 0 and
 * answers on 1, as an inetd service does; "read-first-nb" the same from a
 * non-blocking 0, waiting in poll; "read-prefix-nb" too, its request the
 * start of an offer.  Its exit status says how it went.
 */
/* The client's request: "read-prefix-nb" sends the start of an offer. */
static const char *request(const char *mode)
{
	return strstr(mode, "prefix") ? "RS" : REQ;
}

static int inherited_server(const char *mode, const char *arg)
{
	int s;

	/* the connection where the image before the exec had it: fd @arg */
	if (!strcmp(mode, "own-fd"))
		return expect(atoi(arg), REQ, false) ||
				       say(atoi(arg), REPLY, false)
			       ? 3
			       : 0;
	if (!strncmp(mode, "write-first", 11)) {
		s = dup(0);
		close(0);
		close(1);
		return s < 0 || say(s, REPLY, false) || expect(s, REQ, false)
			       ? 3
			       : 0;
	}
	if (strstr(mode, "-nb"))
		return expect_nonblocking(0, request(mode)) ||
				       say(1, REPLY, false)
			       ? 3
			       : 0;
	return expect(0, REQ, false) || say(1, REPLY, false) ? 3 : 0;
}

/*
 * A forking server whose child executes the server image of @mode (see
 * above) with the connection; the client (raw: without the preload)
 * speaks first, or, for "write-first", reads the server's greeting first
 * when @client_reads.  Prints "ok" or "FAIL why".
 */
static int inherited_child(const char *mode, bool client_reads, bool raw)
{
	int s, c;
	pid_t pid;

	pid = forked_pair(&s, &c, raw);
	if (pid < 0)
		return 1;
	if (!pid) {
		char num[16] = "-";

		close(c);
		if (!strcmp(mode, "own-fd")) {
			snprintf(num, sizeof(num), "%d", s);
		} else {
			if (dup2(s, 0) != 0 || dup2(s, 1) != 1)
				_exit(4);
			if (s > 1)
				close(s);
		}
		char *argv[] = {"preload_fork_test",
				"--fork-child",
				"inherited-server",
				(char *)mode,
				num,
				NULL};

		/* "-raw-exec": past the preload's exec, which names nothing */
		if (strstr(mode, "-raw-exec"))
			syscall(SYS_execve, "/proc/self/exe", argv, environ);
		else
			execv("/proc/self/exe", argv);
		_exit(5);
	}
	close(s);
	if (client_reads
		    ? expect(c, REPLY, raw) || say(c, REQ, raw)
		    : say(c, request(mode), raw) || expect(c, REPLY, raw)) {
		printf("FAIL client: %s\n", strerror(errno));
		return 1;
	}
	return server_ended(pid, "server image");
}

/*
 * sshd's shape, executed past the preload's exec (so nothing names the
 * connection): both ends speak first.  Either the client's offer comes
 * first and is dropped ("the peer's offer taken after our data"), or the
 * image's data reach the client before it offers, and it sends data
 * instead ("the peer sent data first"): which one is the scheduler's, and
 * both keep TCP with every byte (the child checks them).
 */
START_TEST(inherited_connection_both_speak_first)
{
	run("inherited", "write-first-raw-exec", "preload",
	    "stays on TCP (inherited: the peer");
}
END_TEST

/* The server image speaks first to a client that waits for it. */
START_TEST(inherited_connection_speaks_to_a_reading_client)
{
	run("inherited-client-reads", "write-first-raw-exec", "preload",
	    "stays on TCP (inherited: the peer sent data first)");
}
END_TEST

/*
 * sshd: the connection, not used yet, on 0 and 1 across the exec, both
 * named (twins); the image uses a dup of 0 once 0 and 1 are closed: the
 * last twin left makes fork mode's handshake.
 */
START_TEST(twins_across_an_exec_leave_the_handshake_to_the_last)
{
	run_lacking("inherited", "write-first", "preload",
		    "fd 1: accepted by the image before execve, not used yet",
		    "inherited");
}
END_TEST

/* inetd: 0 read and 1 written, both open: every twin keeps TCP. */
START_TEST(twins_used_together_keep_tcp_as_inherited)
{
	run("inherited", "read-first", "preload",
	    "stays on TCP as an inherited connection (fd");
}
END_TEST

/*
 * A forking server's child dups the accepted connection: "dup-close"
 * closes the original and uses the dup (it makes the handshake),
 * "dup-both" reads one and writes the other (both keep TCP, the client's
 * offer declined).  The client speaks first.  Prints "ok" or "FAIL why".
 */
static int dup_child(const char *mode)
{
	bool both = !strcmp(mode, "dup-both");
	int s, c, d;
	pid_t pid;

	pid = forked_pair(&s, &c, false);
	if (pid < 0)
		return 1;
	if (!pid) {
		close(c);
		d = dup(s);
		if (d < 0 || (!both && close(s)))
			_exit(4);
		_exit(expect(both ? s : d, REQ, false) || say(d, REPLY, false)
			      ? 3
			      : 0);
	}
	close(s);
	if (say(c, REQ, false) || expect(c, REPLY, false)) {
		printf("FAIL client: %s\n", strerror(errno));
		return 1;
	}
	return server_ended(pid, "server");
}

START_TEST(a_dup_left_alone_makes_the_handshake)
{
	run_lacking("dup-close", "-", "preload",
		    "stays on TCP (no fork-mode peer or rsocket)", "inherited");
}
END_TEST

START_TEST(a_dup_used_beside_its_original_keeps_tcp)
{
	run("dup-both", "-", "preload",
	    "stays on TCP (inherited: the peer's offer declined)");
}
END_TEST

/* inetd: the server image reads first and declines the client's offer. */
START_TEST(inherited_connection_declines_the_offer)
{
	run("inherited", "read-first", "preload",
	    "stays on TCP (inherited: the peer's offer declined)");
}
END_TEST

START_TEST(inherited_nonblocking_connection_declines_the_offer)
{
	run("inherited", "read-first-nb", "preload",
	    "stays on TCP (inherited: the peer's offer declined)");
}
END_TEST

/* A client without the preload: its request reaches the image as sent. */
START_TEST(inherited_connection_from_a_plain_client)
{
	run("inherited", "read-first", "raw",
	    "stays on TCP (inherited: the peer sent data first)");
}
END_TEST

/*
 * A client without the preload whose request is the start of an offer
 * ("RS"), waiting for the reply: the image's non-blocking read has those
 * bytes after the bound on the rest of an offer, never hangs.
 */
START_TEST(inherited_connection_gets_an_offers_start_as_data)
{
	run("inherited", "read-prefix-nb", "raw",
	    "stays on TCP (inherited: the peer sent data first)");
}
END_TEST

/*
 * A forking server's child executes the server image with the connection
 * it accepted and never used on that same descriptor: the image before
 * the exec names it (src/preload/exec_pass.c), and the new image makes
 * fork mode's handshake itself (here both ends offer "not ready", no
 * device) rather than keep it as an inherited connection.
 */
START_TEST(unused_connection_makes_the_handshake_after_an_exec)
{
	run_lacking("inherited", "own-fd", "preload",
		    "accepted by the image before execve, not used yet",
		    "(inherited:");
}
END_TEST

/*
 * "locked-fork": a thread of this process holds fork mode's twins' lock
 * (its first use of one of two twins writes the log line that says both
 * stay on TCP, into a log pipe this process filled) when another forks;
 * the child dups the other twin, which takes that lock.  Prints "ok" or
 * "FAIL why".  The log is the pipe @argv's caller made (no reader reads).
 */
static void *use_twin(void *arg)
{
	char b;

	(void)read(*(int *)arg, &b, 1); /* blocks in the log line */
	return NULL;
}

/* Whether thread @tid waits in write(2), as seen in /proc. */
static bool in_write(pid_t tid)
{
	char path[64], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return atoi(buf) == SYS_write;
}

/* A thread of this process's other than the caller that waits in write. */
static pid_t writing_thread(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t tid = 0, me = (pid_t)syscall(SYS_gettid), k;

	while (d && !tid && (e = readdir(d))) {
		k = (pid_t)atoi(e->d_name);
		if (k > 0 && k != me && in_write(k))
			tid = k;
	}
	if (d)
		closedir(d);
	return tid;
}

static int locked_fork(const char *log)
{
	int s, c, d, fill, i, status = 0;
	pthread_t t;
	pid_t pid, tid = 0;
	char junk[4096] = {0};

	if (pair(&s, &c, false) || (d = dup(s)) < 0) {
		printf("FAIL set-up: %s\n", strerror(errno));
		return 1;
	}
	fill = (int)syscall(SYS_openat, AT_FDCWD, log, O_WRONLY | O_NONBLOCK);
	while (fill >= 0 && syscall(SYS_write, fill, junk, sizeof(junk)) > 0)
		;
	pthread_create(&t, NULL, use_twin, &s);
	for (i = 0; i < 1000 && !tid; i++) {
		usleep(10000);
		tid = writing_thread();
	}
	if (!tid) {
		printf("FAIL the thread never wrote its log line\n");
		return 1;
	}
	fflush(stdout);
	pid = fork();
	if (!pid)
		_exit(dup(d) >= 0 ? 0 : 1);
	for (i = 0; i < 1000 && !waitpid(pid, &status, WNOHANG); i++)
		usleep(10000);
	if (i == 1000) {
		kill(pid, SIGKILL);
		printf("FAIL the child hung on the lock its parent's thread "
		       "held\n");
		return 1;
	}
	printf(WIFEXITED(status) && !WEXITSTATUS(status) ? "ok\n"
							 : "FAIL dup: %d\n",
	       status);
	fflush(stdout);
	_exit(0); /* the thread waits in its log line for good */
}

/*
 * A fork while another thread holds fork mode's twins' lock: the child
 * finds it free (the preload makes it afresh there), as the C library's
 * own locks are.
 */
START_TEST(a_fork_while_a_thread_holds_the_twins_lock)
{
	char dir[] = "/tmp/rsp-fork-fifo.XXXXXX", fifo[64], out[256];
	int rd, status;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/log", dir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	rd = open(fifo, O_RDONLY | O_NONBLOCK); /* a reader that never reads */
	ck_assert_int_ge(rd, 0);
	setenv("RDMAV_FORK_SAFE", "1", 1);
	status = unit_run_preloaded_at(fifo,
				       (char *[]){"preload_fork_test",
						  "--fork-child", "locked-fork",
						  "-", "-", NULL},
				       out, sizeof(out));
	ck_assert_msg(!strncmp(out, "ok", 2), "%s", out);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(rd);
	unlink(fifo);
	rmdir(dir);
}
END_TEST

/* The runner's --fork-child WHO HOW raw|tcp mode, run under the preload. */
int preload_fork_child(int argc, char **argv)
{
	if (argc != 5)
		return 2;
	if (!strcmp(argv[2], "inherited-server"))
		return inherited_server(argv[3], argv[4]);
	if (!strncmp(argv[2], "inherited", 9))
		return inherited_child(
			argv[3], !strcmp(argv[2], "inherited-client-reads"),
			!strcmp(argv[4], "raw"));
	if (!strncmp(argv[2], "dup-", 4))
		return dup_child(argv[2]);
	if (!strcmp(argv[2], "locked-fork"))
		return locked_fork(getenv("RDMA_RSOCKET_LOG"));
	if (!strcmp(argv[2], "nb-prefix") || !strcmp(argv[2], "nb-split"))
		return rest_child(argv[2], argv[3]);
	if (!strncmp(argv[2], "nb-", 3))
		return nb_child(argv[2], argv[3]);
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
	tcase_add_test(tc, nonblocking_client_first_waits_in_epoll);
	tcase_add_test(tc, nonblocking_client_first_waits_in_poll);
	tcase_add_test(tc, nonblocking_client_first_waits_in_select);
	tcase_add_test(tc, nonblocking_server_first_waits_in_epoll);
	tcase_add_test(tc, nonblocking_client_first_keeps_its_epoll_set);
	tcase_add_test(tc, nonblocking_server_first_keeps_its_epoll_set);
	tcase_add_test(tc,
		       nonblocking_offers_start_that_stays_one_waits_in_epoll);
	tcase_add_test(tc,
		       nonblocking_offers_start_that_stays_one_waits_in_poll);
	tcase_add_test(tc, nonblocking_offer_in_two_parts_waits_in_epoll);
	tcase_add_test(tc, nonblocking_offer_in_two_parts_waits_in_select);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tc = tcase_create("inherited");
	tcase_add_test(tc, inherited_connection_both_speak_first);
	tcase_add_test(tc, inherited_connection_speaks_to_a_reading_client);
	tcase_add_test(tc, inherited_connection_declines_the_offer);
	tcase_add_test(tc, inherited_nonblocking_connection_declines_the_offer);
	tcase_add_test(tc, inherited_connection_from_a_plain_client);
	tcase_add_test(tc, inherited_connection_gets_an_offers_start_as_data);
	tcase_add_test(tc, unused_connection_makes_the_handshake_after_an_exec);
	tcase_add_test(tc,
		       twins_across_an_exec_leave_the_handshake_to_the_last);
	tcase_add_test(tc, twins_used_together_keep_tcp_as_inherited);
	tcase_add_test(tc, a_dup_left_alone_makes_the_handshake);
	tcase_add_test(tc, a_dup_used_beside_its_original_keeps_tcp);
	tcase_add_test(tc, a_fork_while_a_thread_holds_the_twins_lock);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
