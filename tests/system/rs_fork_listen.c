// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * A listener made before fork(), accepted on by the children, as prefork
 * servers do (nginx's workers, Apache's prefork MPM):
 *
 *   rs_fork_listen rsocket|socket ADDR SCENARIO
 *
 * A maker process listens on ADDR (an ephemeral port) and forks WORKERS
 * workers, each accepting one connection at a time and echoing it back
 * behind its own number.  This process is the client: it opens WORKERS
 * connections at once, then sends on each and checks each echo.  No
 * worker answers before all the connections are open, so a round only
 * completes if every worker accepted one of them: several processes
 * accept from the one listener at the same time.  ROUNDS rounds.
 *
 *   workers       3 workers, blocking accept
 *   poll          3 workers on a non-blocking listener, each waiting in
 *                 poll() and then accepting (EAGAIN: another won)
 *   maker-exits   2 workers; the maker exits before the first connect
 *   maker-closes  2 workers; the maker closes its listener and stays
 *   reuseport     3 workers, each with a listener of its own on the one
 *                 address (SO_REUSEPORT, all made by the maker, as nginx's
 *                 "reuseport" does)
 *
 * "rsocket" uses the rsocket calls, "socket" the socket calls (for
 * running under librspreload.so).  Prints PASS or FAIL and exits 0/1; an
 * alarm turns a hang into a FAIL.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rs_api.h"

#define LEN 16384
#define ROUNDS 4
#define ALARM_S 150
#define MAX_WORKERS 3

static const struct api *a;
static const char *name = "?";

static int fail(const char *what)
{
	printf("FAIL fork-listen/%s: %s: %s\n", name, what, strerror(errno));
	return 1;
}

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL fork-listen: hangs\n";

	(void)sig;
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	kill(0, SIGKILL);
}

static bool io_all(int s, void *buf, size_t len, bool out)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = out ? a->send(s, (char *)buf + done, len - done, 0)
			: a->recv(s, (char *)buf + done, len - done, 0);
		if (n <= 0)
			return false;
		done += (size_t)n;
	}
	return true;
}

/* A worker: accept, read LEN bytes, answer its number and the bytes. */
static void worker(int l, unsigned char me, bool use_poll)
{
	static unsigned char buf[LEN + 1];
	struct pollfd pfd = {.fd = l, .events = POLLIN};
	int s;

	for (;;) {
		if (use_poll && a->poll(&pfd, 1, -1) != 1)
			_exit(3);
		s = a->accept(l, NULL, NULL);
		if (s < 0 && use_poll && errno == EAGAIN)
			continue; /* another worker took it */
		if (s < 0)
			_exit(4);
		buf[0] = me;
		if (!io_all(s, buf + 1, LEN, false) ||
		    !io_all(s, buf, LEN + 1, true))
			_exit(5);
		a->close(s);
	}
}

/* A listener on @sin (SO_REUSEPORT if asked); its address in @bound. */
static int listener(const struct sockaddr_in *sin, bool reuseport,
		    struct sockaddr_in *bound)
{
	socklen_t len = sizeof(*bound);
	int l, one = 1;

	l = a->socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 ||
	    (reuseport &&
	     a->setsockopt(l, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one))) ||
	    a->bind(l, (struct sockaddr *)sin, sizeof(*sin)) ||
	    a->listen(l, 16) ||
	    a->getsockname(l, (struct sockaddr *)bound, &len))
		_exit(fail("listen"));
	return l;
}

/* The maker: listen, name the port, fork the workers, then as told. */
static void maker(const struct sockaddr_in *sin, int workers, int report,
		  const char *how)
{
	bool reuseport = !strcmp(how, "reuseport");
	struct sockaddr_in bound;
	int l[MAX_WORKERS], i;

	l[0] = listener(sin, reuseport, &bound);
	for (i = 1; i < workers; i++)
		l[i] = reuseport ? listener(&bound, true, &bound) : l[0];
	if (!strcmp(how, "poll") &&
	    a->fcntl(l[0], F_SETFL, a->fcntl(l[0], F_GETFL, 0) | O_NONBLOCK))
		_exit(fail("O_NONBLOCK"));
	for (i = 0; i < workers; i++)
		if (fork() == 0)
			worker(l[i], (unsigned char)(i + 1),
			       !strcmp(how, "poll"));
	if (!strcmp(how, "maker-closes") && a->close(l[0]))
		_exit(fail("close"));
	if (write(report, &bound.sin_port, sizeof(bound.sin_port)) < 0)
		_exit(1);
	if (!strcmp(how, "maker-exits"))
		_exit(0);
	for (;;)
		pause();
}

/* One round: WORKERS connections open at once, then each echoed. */
static int round_trip(const struct sockaddr_in *to, int workers)
{
	static unsigned char out[LEN], in[LEN + 1];
	int s[MAX_WORKERS], i, seen = 0;

	for (i = 0; i < workers; i++) {
		s[i] = a->socket(AF_INET, SOCK_STREAM, 0);
		if (s[i] < 0 ||
		    a->connect(s[i], (struct sockaddr *)to, sizeof(*to)))
			return fail("connect");
	}
	for (i = 0; i < workers; i++) {
		memset(out, 'a' + i, LEN);
		if (!io_all(s[i], out, LEN, true) ||
		    !io_all(s[i], in, LEN + 1, false))
			return fail("echo");
		if (memcmp(in + 1, out, LEN) || !in[0] || in[0] > workers) {
			errno = EBADMSG;
			return fail("echo differs");
		}
		seen |= 1 << in[0];
		a->close(s[i]);
	}
	if (seen != ((1 << (workers + 1)) - 2)) {
		errno = EPROTO;
		return fail("a worker accepted two of one round");
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	int p[2], workers, r, ret = 0;
	pid_t m;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 4 ||
	    (strcmp(argv[1], "rsocket") && strcmp(argv[1], "socket")) ||
	    inet_pton(AF_INET, argv[2], &sin.sin_addr) != 1) {
		fprintf(stderr,
			"usage: %s rsocket|socket ADDR "
			"workers|poll|maker-exits|maker-closes\n",
			argv[0]);
		return 2;
	}
	a = strcmp(argv[1], "rsocket") ? &os_api : &rs_api;
	name = argv[3];
	workers = strncmp(name, "maker-", 6) ? 3 : 2;
	if (pipe(p))
		return fail("pipe");
	/* A group of our own: the alarm and the end take every worker. */
	setpgid(0, 0);
	signal(SIGALRM, on_alarm);
	alarm(ALARM_S);
	m = fork();
	if (m == 0)
		maker(&sin, workers, p[1], name);
	if (read(p[0], &sin.sin_port, sizeof(sin.sin_port)) !=
	    sizeof(sin.sin_port))
		return fail("the maker did not listen");
	if (!strcmp(name, "maker-exits") && waitpid(m, NULL, 0) != m)
		return fail("the maker did not exit");
	for (r = 0; r < ROUNDS && !ret; r++)
		ret = round_trip(&sin, workers);
	signal(SIGTERM, SIG_IGN);
	kill(0, SIGTERM);
	if (!ret)
		printf("PASS fork-listen/%s: %d rounds of %d connections, each "
		       "accepted by another process\n",
		       name, ROUNDS, workers);
	return ret;
}
