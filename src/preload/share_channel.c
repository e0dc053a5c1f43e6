// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The channel between a connection's owner and the processes holding it
 * (share.c): one AF_UNIX SOCK_SEQPACKET datagram a message, a descriptor
 * passed with some.  Only this library writes there, from processes of
 * one program, so a malformed message is a bug, logged and dropped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "share.h"
#include "util/fd_high.h"

/* Our own descriptors stay clear of the numbers programs reuse. */
int share_high(int fd)
{
	return cma_fd_move_high(fd, rsp_real.fcntl, rsp_real.close);
}

/* A socketpair of @type, close-on-exec, both ends high. */
int share_pair(int type, int sv[2])
{
	if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv))
		return -1;
	sv[0] = share_high(sv[0]);
	sv[1] = share_high(sv[1]);
	return 0;
}

ssize_t share_send(int fd, const struct share_msg *m, int pass)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {.iov_base = (void *)m,
			    .iov_len = SHARE_HDR + m->n * sizeof(m->ids[0])};
	struct msghdr h = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;

	if (pass >= 0) {
		h.msg_control = cbuf;
		h.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&h);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass, sizeof(int));
	}
	return rsp_real.sendmsg(fd, &h, MSG_NOSIGNAL);
}

/*
 * One message from @fd into @m (@size bytes of room), with the descriptor
 * it carried in *@got (-1 if none).  The message's size; 0 at the end of
 * the channel; -1 with EPROTO for a malformed one (one longer than the
 * room too).
 */
ssize_t share_recv(int fd, struct share_msg *m, size_t size, int *got)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = m, .iov_len = size};
	struct msghdr h = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = cbuf,
			   .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c;
	ssize_t n;
	int i, k, one;

	*got = -1;
	do {
		n = rsp_real.recvmsg(fd, &h, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	/*
	 * CMSG_SPACE rounds the room up (on 64-bit, to two descriptors) and
	 * the kernel installs as many as fit, with an empty datagram too:
	 * keep the first, close the others, so none stays open unseen.
	 */
	for (c = n >= 0 ? CMSG_FIRSTHDR(&h) : NULL; c; c = CMSG_NXTHDR(&h, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (i = 0; i < k; i++) {
			memcpy(&one, CMSG_DATA(c) + i * sizeof(int),
			       sizeof(int));
			if (*got < 0)
				*got = one;
			else
				rsp_real.close(one);
		}
	}
	/*
	 * A datagram longer than the room comes truncated (MSG_TRUNC): its
	 * first bytes may look whole, but it is not the message sent.
	 */
	if ((n > 0 || (n == 0 && (h.msg_flags & MSG_TRUNC))) &&
	    ((h.msg_flags & MSG_TRUNC) || (size_t)n < SHARE_HDR ||
	     m->n > SHARE_MAX_IDS ||
	     (size_t)n != SHARE_HDR + m->n * sizeof(m->ids[0]))) {
		/* Only our own library writes here: a torn message is a bug. */
		rsp_log("share: a malformed message of %zd bytes", n);
		if (*got >= 0)
			rsp_real.close(*got);
		*got = -1;
		errno = EPROTO;
		return -1;
	}
	if (n == 0 && *got >= 0) {
		/* An empty datagram's: no message it could belong to. */
		rsp_real.close(*got);
		*got = -1;
	}
	return n;
}
