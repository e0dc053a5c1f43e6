// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * A single-threaded program connecting to its own listener:
 *
 *   rs_selfconnect rsocket ADDR   rsocket, rbind, rlisten, then a second
 *                                 rsocket's BLOCKING rconnect to it, then
 *                                 raccept, all from the one thread
 *   rs_selfconnect socket ADDR    the same with socket(2) calls, for
 *                                 running under librspreload.so
 *
 * Both ends then send 64 KiB the other way and compare it.  Nothing else
 * runs in the process: the connect can only complete if the library
 * answers the listener's connection request while the thread is inside
 * rconnect.  An alarm turns a hang into "FAIL selfconnect-<mode>: hangs".
 * Prints PASS/FAIL and exits 0/1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "rs_api.h"

#define LEN 65536
#define ALARM_S 60

static const char *mode = "?";

static int fail(const char *what)
{
	printf("FAIL selfconnect-%s: %s: %s\n", mode, what, strerror(errno));
	return 1;
}

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL selfconnect: hangs (the connect to "
				  "its own listener never completes)\n";

	(void)sig;
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

static int move(const struct api *a, int from, int to, unsigned char seed)
{
	static unsigned char out[LEN], in[LEN];
	size_t done;
	ssize_t n;
	int i;

	for (i = 0; i < LEN; i++)
		out[i] = (unsigned char)(i * 13 + seed);
	for (done = 0; done < LEN; done += n) {
		/* the receiver's window may be smaller: alternate */
		n = a->send(from, out + done, LEN - done, MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return fail("send");
		if (n < 0)
			n = 0;
		while (n > 0) {
			ssize_t r = a->recv(to, in + done, n, MSG_WAITALL);

			if (r <= 0)
				return fail("recv");
			if (r == n)
				break;
			done += r;
			n -= r;
		}
	}
	if (memcmp(in, out, LEN)) {
		errno = EBADMSG;
		return fail("data differ");
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	const struct api *a;
	int l, c, s;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 3 ||
	    (strcmp(argv[1], "rsocket") && strcmp(argv[1], "socket"))) {
		fprintf(stderr, "usage: %s rsocket|socket ADDR\n", argv[0]);
		return 2;
	}
	mode = argv[1];
	a = strcmp(mode, "rsocket") ? &os_api : &rs_api;
	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, argv[2],
		      &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		ss.ss_family = AF_INET;
		len = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, argv[2],
			     &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		ss.ss_family = AF_INET6;
		len = sizeof(struct sockaddr_in6);
	} else {
		errno = EINVAL;
		return fail("address");
	}
	signal(SIGALRM, on_alarm);
	alarm(ALARM_S);
	l = a->socket(ss.ss_family, SOCK_STREAM, 0);
	if (l < 0 || a->bind(l, (struct sockaddr *)&ss, len) ||
	    a->listen(l, 4) || a->getsockname(l, (struct sockaddr *)&ss, &len))
		return fail("listener");
	c = a->socket(ss.ss_family, SOCK_STREAM, 0);
	if (c < 0)
		return fail("socket");
	/* blocking, and nobody else to accept meanwhile */
	if (a->connect(c, (struct sockaddr *)&ss, len))
		return fail("connect");
	s = a->accept(l, NULL, NULL);
	if (s < 0)
		return fail("accept");
	if (move(a, c, s, 1) || move(a, s, c, 2))
		return 1;
	alarm(0);
	a->close(c);
	a->close(s);
	a->close(l);
	printf("PASS selfconnect-%s: connected to its own listener from one "
	       "thread, 64 KiB each way compared\n",
	       mode);
	return 0;
}
