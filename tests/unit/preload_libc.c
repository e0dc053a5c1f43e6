// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * What the preload's files linked into the unit runner (fdtab.c,
 * share.c, relay.c) take from the rest of librspreload: the C library's
 * calls are the runner's own (no wrappers stand in front of them here),
 * and the runner keeps no epoll sets of the preload's.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <fcntl.h>

#include "preload/preload.h"

struct rsp_real rsp_real = {
	.close = close,
	.dup3 = dup3,
	.fcntl = fcntl,
	.read = read,
	.write = write,
	.recv = recv,
	.send = send,
	.recvmsg = recvmsg,
	.sendmsg = sendmsg,
	.shutdown = shutdown,
	.getsockname = getsockname,
	.getpeername = getpeername,
	.poll = poll,
	.fork = fork,
};

void rsp_epoll_fell_back(int fd)
{
	(void)fd;
}
