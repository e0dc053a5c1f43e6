// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * One end of a stream rsocket connection for the keepalive test
 * (tests/system/keepalive-in-guest.sh), written as an outside program:
 *
 *   rs_keepalive_test listen PORT KEEP IDLE INTVL CNT
 *   rs_keepalive_test connect ADDR PORT KEEP IDLE INTVL CNT
 *
 * With KEEP=1 the socket (for listen: the listener, so the accepted socket
 * inherits it) gets SO_KEEPALIVE and the three times.  Both ends exchange
 * one byte, print "READY" and block in rrecv.  When rrecv returns the
 * program prints "RESULT ret errno-name ms-since-the-handshake" and exits: the script kills or
 * stops the other end and times this one.  A tool with a line protocol,
 * not a PASS/FAIL test: it takes only the harness's clock (a watchdog
 * would cut the keepalive waits it measures).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <time.h>
#include <rdma/rsocket.h>

#include "harness.h"

static int set_keepalive(int s, int idle, int intvl, int cnt)
{
	int on = 1;

	if (rsetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) ||
	    rsetsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) ||
	    rsetsockopt(s, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) ||
	    rsetsockopt(s, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt))) {
		perror("rsetsockopt");
		return -1;
	}
	return 0;
}

static int open_listen(const char *port, int keep, int idle, int intvl, int cnt)
{
	struct sockaddr_in sin;
	int l = rsocket(AF_INET, SOCK_STREAM, 0), s, on = 1;

	if (l < 0) {
		perror("rsocket");
		return -1;
	}
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)atoi(port));
	rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if ((keep && set_keepalive(l, idle, intvl, cnt)) ||
	    rbind(l, (struct sockaddr *)&sin, sizeof(sin)) || rlisten(l, 1)) {
		perror("listen");
		return -1;
	}
	printf("LISTENING\n");
	fflush(stdout);
	s = raccept(l, NULL, NULL);
	if (s < 0)
		perror("raccept");
	rclose(l);
	return s;
}

static int open_connect(const char *addr, const char *port, int keep, int idle,
			int intvl, int cnt)
{
	struct addrinfo hints, *res;
	int s;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(addr, port, &hints, &res)) {
		fprintf(stderr, "bad address %s\n", addr);
		return -1;
	}
	s = rsocket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || (keep && set_keepalive(s, idle, intvl, cnt)) ||
	    rconnect(s, res->ai_addr, res->ai_addrlen)) {
		perror("connect");
		freeaddrinfo(res);
		return -1;
	}
	freeaddrinfo(res);
	return s;
}

int main(int argc, char **argv)
{
	int s, n, keep, idle, intvl, cnt, k;
	long long t0;
	char c = 'R';

	if (argc == 7 && !strcmp(argv[1], "listen"))
		k = 3;
	else if (argc == 8 && !strcmp(argv[1], "connect"))
		k = 4;
	else {
		fprintf(stderr,
			"usage: %s listen PORT KEEP IDLE INTVL CNT | "
			"connect ADDR PORT KEEP IDLE INTVL CNT\n",
			argv[0]);
		return 2;
	}
	keep = atoi(argv[k]);
	idle = atoi(argv[k + 1]);
	intvl = atoi(argv[k + 2]);
	cnt = atoi(argv[k + 3]);
	s = k == 3 ? open_listen(argv[2], keep, idle, intvl, cnt)
		   : open_connect(argv[2], argv[3], keep, idle, intvl, cnt);
	if (s < 0)
		return 1;
	if (rsend(s, &c, 1, 0) != 1 || rrecv(s, &c, 1, MSG_WAITALL) != 1) {
		perror("handshake");
		return 1;
	}
	printf("READY\n");
	fflush(stdout);
	t0 = hx_now_ms();
	n = (int)rrecv(s, &c, 1, 0);
	/* the time since the peer was last heard from (the handshake) */
	printf("RESULT %d %s %lld\n", n, n < 0 ? strerrorname_np(errno) : "-",
	       hx_now_ms() - t0);
	fflush(stdout);
	rclose(s);
	return 0;
}
