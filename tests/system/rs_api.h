/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * One socket program, two ways to run it: through the rsocket calls, or
 * through the socket calls for running under librspreload.so.
 */
#ifndef RS_API_H
#define RS_API_H

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/rsocket.h>

struct api {
	int (*socket)(int, int, int);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*accept)(int, struct sockaddr *, socklen_t *);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*recv)(int, void *, size_t, int);
	int (*close)(int);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*fcntl)(int, int, ...);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
};

static const struct api rs_api = {
	rsocket, rbind, rlisten, raccept, rconnect, rgetsockname,
	rsend,	 rrecv, rclose,	 rpoll,	  rfcntl,   rsetsockopt,
};
static const struct api os_api = {
	socket, bind, listen, accept, connect, getsockname,
	send,	recv, close,  poll,   fcntl,   setsockopt,
};

#endif /* RS_API_H */
