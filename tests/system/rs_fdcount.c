// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * How many descriptors one connected stream rsocket costs, measured as an
 * outside program would (/proc/self/fd before and after), on whichever
 * librdmacm is loaded, for rsocket(7)'s comparison with Debian's:
 *
 *   rs_fdcount server PORT     prints "ACCEPTED n" (the accepted socket's
 *                              cost; the listener's is not counted)
 *   rs_fdcount client ADDR PORT  prints "CONNECTED n"
 *
 * Each end makes two connections and counts around the second, so that
 * what a process opens once (the RDMA device, the CM device) is left out;
 * each connection exchanges a byte, so it is fully up.  Only
 * rsocket calls of RDMACM_1.0, so one binary runs on both libraries.  A
 * tool with a line protocol: it takes only the harness's fd count.
 */
#include <stdbool.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <unistd.h>
#include <rdma/rsocket.h>

#include "harness.h"

static int ping(int s, bool first)
{
	char c = 'x';

	if (first && rsend(s, &c, 1, 0) != 1)
		return -1;
	if (rrecv(s, &c, 1, MSG_WAITALL) != 1)
		return -1;
	if (!first && rsend(s, &c, 1, 0) != 1)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = {.ai_family = AF_INET,
				 .ai_socktype = SOCK_STREAM},
			*res;
	struct sockaddr_in sin;
	int l, s, n0, n1, one = 1;

	if (argc == 3 && !strcmp(argv[1], "server")) {
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_port = htons((uint16_t)atoi(argv[2]));
		l = rsocket(AF_INET, SOCK_STREAM, 0);
		rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (l < 0 || rbind(l, (struct sockaddr *)&sin, sizeof(sin)) ||
		    rlisten(l, 1)) {
			perror("listen");
			return 1;
		}
		printf("LISTENING\n");
		fflush(stdout);
		s = raccept(l, NULL, NULL);
		if (s < 0 || ping(s, false)) {
			perror("accept");
			return 1;
		}
		n0 = hx_count_fds();
		s = raccept(l, NULL, NULL);
		if (s < 0 || ping(s, false)) {
			perror("accept");
			return 1;
		}
		n1 = hx_count_fds();
		printf("ACCEPTED %d\n", n1 - n0);
	} else if (argc == 4 && !strcmp(argv[1], "client")) {
		if (getaddrinfo(argv[2], argv[3], &hints, &res))
			return 1;
		s = rsocket(AF_INET, SOCK_STREAM, 0);
		if (s < 0 || rconnect(s, res->ai_addr, res->ai_addrlen) ||
		    ping(s, true)) {
			perror("connect");
			return 1;
		}
		n0 = hx_count_fds();
		s = rsocket(AF_INET, SOCK_STREAM, 0);
		if (s < 0 || rconnect(s, res->ai_addr, res->ai_addrlen) ||
		    ping(s, true)) {
			perror("connect");
			return 1;
		}
		n1 = hx_count_fds();
		printf("CONNECTED %d\n", n1 - n0);
		fflush(stdout);
		/* the server's count is taken after our second exchange */
		sleep(1);
	} else {
		fprintf(stderr,
			"usage: rs_fdcount server PORT | client ADDR PORT\n");
		return 2;
	}
	fflush(stdout);
	rclose(s);
	return 0;
}
