// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * A plain UDP echo, written as any program would be, with no idea of
 * RDMA: run under librspreload.so it shows that UDP sockets work there.
 *
 *   udp_echo server ADDR PORT
 *       binds ADDR:PORT and sends every datagram back to where it came
 *       from (epoll, recvfrom/sendto), until a "QUIT" datagram or 30 s of
 *       silence; prints how many it echoed.
 *   udp_echo client ADDR PORT COUNT SIZE
 *       sends COUNT datagrams of SIZE bytes, each with its own content,
 *       and checks every echo byte for byte: the first third with sendto
 *       and recvfrom (poll), the second after connect(2) with send and
 *       recv (select), the rest with sendmsg and recvmsg (non-blocking,
 *       epoll).  A datagram whose echo does not come within a second is
 *       sent again (UDP may drop it), up to 20 times.
 * Prints "PASS udp-echo-<role> ..." or "FAIL udp-echo-<role>: why" and
 * exits 0 or 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_SIZE 1024
#define TRIES 20

static const char *role = "?";

static int fail(const char *what)
{
	printf("FAIL udp-echo-%s: %s: %s\n", role, what, strerror(errno));
	return 1;
}

static int resolve(const char *host, const char *port,
		   struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = {.ai_socktype = SOCK_DGRAM,
				 .ai_flags = AI_NUMERICHOST | AI_PASSIVE};
	struct addrinfo *ai;

	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static int server(const struct sockaddr_storage *ss, socklen_t len)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct sockaddr_storage peer, me;
	socklen_t plen, mlen = sizeof(me);
	char buf[MAX_SIZE + 1];
	long echoed = 0;
	int s, ep;
	ssize_t n;

	s = socket(ss->ss_family, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (s < 0)
		return fail("socket");
	if (bind(s, (const struct sockaddr *)ss, len))
		return fail("bind");
	if (getsockname(s, (struct sockaddr *)&me, &mlen) ||
	    ((struct sockaddr_in *)&me)->sin_port !=
		    ((const struct sockaddr_in *)ss)->sin_port)
		return fail("getsockname");
	ep = epoll_create1(0);
	ev.data.fd = s;
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev))
		return fail("epoll");
	printf("# udp-echo server ready\n");
	fflush(stdout);
	for (;;) {
		n = epoll_wait(ep, &ev, 1, 30000);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail("epoll_wait");
		if (!n) {
			errno = ETIMEDOUT;
			return fail("no QUIT");
		}
		plen = sizeof(peer);
		n = recvfrom(s, buf, sizeof(buf), 0, (struct sockaddr *)&peer,
			     &plen);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0)
			return fail("recvfrom");
		if (n == 4 && !memcmp(buf, "QUIT", 4))
			break;
		if (sendto(s, buf, n, 0, (struct sockaddr *)&peer, plen) != n)
			return fail("sendto");
		echoed++;
	}
	close(ep);
	close(s);
	printf("PASS udp-echo-server: echoed %ld datagrams\n", echoed);
	return 0;
}

/* Datagram i: its number, then bytes that depend on it. */
static void fill(char *p, long i, int size)
{
	int k;

	memcpy(p, &i, sizeof(i));
	for (k = sizeof(i); k < size; k++)
		p[k] = (char)(i * 31 + k);
}

enum how { SENDTO, CONNECTED, MSG };

static int wait_readable(int s, int ep, enum how how)
{
	struct pollfd pfd = {.fd = s, .events = POLLIN};
	struct epoll_event ev;
	struct timeval tv = {.tv_sec = 1};
	fd_set rd;

	switch (how) {
	case SENDTO:
		return poll(&pfd, 1, 1000);
	case CONNECTED:
		FD_ZERO(&rd);
		FD_SET(s, &rd);
		return select(s + 1, &rd, NULL, NULL, &tv);
	case MSG:
		return epoll_wait(ep, &ev, 1, 1000);
	}
	return -1;
}

static ssize_t send_one(int s, const char *p, int size, enum how how,
			const struct sockaddr_storage *ss, socklen_t len)
{
	struct iovec iov[2] = {{(void *)p, 8}, {(void *)(p + 8), size - 8}};
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};

	if (how == SENDTO)
		return sendto(s, p, size, 0, (const struct sockaddr *)ss, len);
	if (how == CONNECTED)
		return send(s, p, size, 0);
	return sendmsg(s, &m, 0);
}

static ssize_t recv_one(int s, char *p, enum how how,
			const struct sockaddr_storage *ss)
{
	struct sockaddr_storage from;
	socklen_t flen = sizeof(from);
	struct iovec iov = {p, MAX_SIZE + 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	if (how == CONNECTED)
		return recv(s, p, MAX_SIZE + 1, 0);
	if (how == MSG)
		return recvmsg(s, &m, 0);
	n = recvfrom(s, p, MAX_SIZE + 1, 0, (struct sockaddr *)&from, &flen);
	/* the echo comes from the server's address and port */
	if (n >= 0 && ((struct sockaddr_in *)&from)->sin_port !=
			      ((const struct sockaddr_in *)ss)->sin_port) {
		errno = EPROTO;
		return -1;
	}
	return n;
}

/* Sends datagram i until its echo comes back; 0, or -1 on failure. */
static int exchange(int s, int ep, long i, int size, enum how how,
		    const struct sockaddr_storage *ss, socklen_t len,
		    long *resent)
{
	char out[MAX_SIZE], in[MAX_SIZE + 1];
	long got;
	int tries, r;
	ssize_t n;

	fill(out, i, size);
	for (tries = 0; tries < TRIES; tries++) {
		if (tries)
			(*resent)++;
		if (send_one(s, out, size, how, ss, len) != size)
			return fail("send");
		/* read until our echo; older ones arrive late after a resend */
		while ((r = wait_readable(s, ep, how)) > 0) {
			n = recv_one(s, in, how, ss);
			if (n < 0 && errno == EAGAIN)
				continue;
			if (n < 0)
				return fail("receive");
			memcpy(&got, in, sizeof(got));
			if (got < i)
				continue;
			if (got != i || n != size || memcmp(in, out, size)) {
				errno = EBADMSG;
				return fail("echo differs");
			}
			return 0;
		}
		if (r < 0 && errno != EINTR)
			return fail("wait");
	}
	errno = ETIMEDOUT;
	return fail("no echo");
}

static int client(const struct sockaddr_storage *ss, socklen_t len, long count,
		  int size)
{
	struct epoll_event ev = {.events = EPOLLIN};
	long i, resent = 0;
	int s, ep, rcvbuf = 1 << 20, q;
	enum how how;

	s = socket(ss->ss_family, SOCK_DGRAM, 0);
	if (s < 0)
		return fail("socket");
	/* programs set these; the value does not matter here */
	if (setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)))
		return fail("setsockopt");
	ep = epoll_create1(0);
	ev.data.fd = s;
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev))
		return fail("epoll");
	for (i = 0; i < count; i++) {
		how = i < count / 3	  ? SENDTO
		      : i < 2 * count / 3 ? CONNECTED
					  : MSG;
		if (how == CONNECTED && i == count / 3 &&
		    connect(s, (const struct sockaddr *)ss, len))
			return fail("connect");
		if (how == MSG && i == 2 * count / 3 &&
		    fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK))
			return fail("fcntl");
		if (exchange(s, ep, i, size, how, ss, len, &resent))
			return 1;
	}
	/* the first ends the server; the others may meet a closed port */
	for (q = 0; q < 3; q++)
		if (sendto(s, "QUIT", 4, 0, (const struct sockaddr *)ss, len) !=
			    4 &&
		    !q)
			return fail("QUIT");
	close(ep);
	close(s);
	printf("PASS udp-echo-client: %ld datagrams of %d bytes echoed "
	       "intact (%ld sent again)\n",
	       count, size, resent);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t len;
	long count;
	int size;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4)
		role = argv[1];
	if (argc == 4 && !strcmp(argv[1], "server")) {
		if (resolve(argv[2], argv[3], &ss, &len))
			return fail("address");
		return server(&ss, len);
	}
	if (argc == 6 && !strcmp(argv[1], "client")) {
		count = strtol(argv[4], NULL, 0);
		size = (int)strtol(argv[5], NULL, 0);
		if (count < 3 || size < 16 || size > MAX_SIZE) {
			errno = EINVAL;
			return fail("COUNT >= 3, 16 <= SIZE <= 1024");
		}
		if (resolve(argv[2], argv[3], &ss, &len))
			return fail("address");
		return client(&ss, len, count, size);
	}
	fprintf(stderr,
		"usage: %s server ADDR PORT\n"
		"       %s client ADDR PORT COUNT SIZE\n",
		argv[0], argv[0]);
	return 2;
}
