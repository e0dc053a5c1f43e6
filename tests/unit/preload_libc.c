// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * What the preload's files linked into the unit runner (fdtab.c,
 * share.c, share_ask.c, relay.c, exec_pass.c) take from the rest of
 * librspreload: the C library's calls are the runner's own (no wrappers
 * stand in front of them here, so rpoll needs no guard against them), the
 * runner keeps no epoll sets of the preload's, and fork mode's states
 * (fork.c) are a plain table the tests set.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <fcntl.h>

#include <rdma/rsocket.h>

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

static uint8_t lazy[1024];

enum rsp_lazy rsp_lazy_get(int fd)
{
	return fd >= 0 && fd < 1024 ? (enum rsp_lazy)lazy[fd] : RSP_LAZY_NONE;
}

bool rsp_lazy_set(int fd, enum rsp_lazy state)
{
	if (fd < 0 || fd >= 1024)
		return false;
	lazy[fd] = (uint8_t)state;
	return true;
}

void rsp_epoll_fell_back(int fd)
{
	(void)fd;
}

/* No connection of the runner's moved over TCP in fork mode. */
void rsp_move_back_before_exec(void)
{
}

int rsp_rpoll(struct pollfd *fds, nfds_t n, int timeout)
{
	return rpoll(fds, n, timeout);
}
