// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Fork mode's way back: a connection that moved to RDMA (fork.c) returns
 * to the TCP connection it came from, which stays open for this.  A fork
 * needs no move (the owner relays for a child that uses the connection,
 * share.c), nor does a credential change (cred.c); an exec does: the
 * rsocket lives in the memory of the image the exec replaces, and the
 * new one inherits only the descriptor, the TCP socket.
 *
 * RDMA_QUIESCE (src/rsocket/quiesce.c) agrees with the peer's library on
 * where each direction's RDMA bytes end, without a clock.  All the
 * connections are asked first and waited for together, so an exec waits
 * for its slowest peer, RSP_MOVE_BACK_MS at most: a peer's library
 * answers when its program next reads, writes or polls the connection.
 * A connection whose peer did not answer in time, or whose last RDMA
 * bytes were not read yet (they end with this image), is shut down: the
 * new image and the peer see an end, not a gap.
 *
 * The peer's preload then notices at its next call: a read that found
 * the end of the RDMA bytes, or a write that RDMA refused, moves the
 * descriptor to its TCP socket, with its epoll memberships, and is made
 * again there.  Bytes that came and were not read yet stay with the
 * rsocket (detached: it holds no RDMA resources any more) until read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "preload.h"

/* Which directions' RDMA bytes have ended (RDMA_QUIESCE_*). */
static int quiesced(const struct rsp_file *f)
{
	int v = 0;
	socklen_t len = sizeof(v);

	return rgetsockopt(f->rs, SOL_RDMA, RDMA_QUIESCE, &v, &len) ? 0 : v;
}

/* Ends f's RDMA path, waiting @ms at most (-1: no bound); 0 when done. */
static int quiesce(const struct rsp_file *f, int ms)
{
	return rsetsockopt(f->rs, SOL_RDMA, RDMA_QUIESCE, &ms, sizeof(ms));
}

/* Nothing of the RDMA bytes left to read: the rsocket is at its end. */
static bool drained(const struct rsp_file *f)
{
	char c;

	return rrecv(f->rs, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/*
 * fd is its TCP socket again, with its epoll memberships, unless another
 * thread made it so first.  f stays until the program closes fd: another
 * thread may be in a call on it (rsp_retire).
 */
static bool unmap(int fd, struct rsp_file *f)
{
	if (!rsp_retire(fd, f))
		return false;
	rsp_epoll_fell_back(fd);
	return true;
}

static void back_on_tcp(int fd, struct rsp_file *f, const char *why)
{
	if (unmap(fd, f))
		rsp_log("fd %d: back on TCP (%s)", fd, why);
}

/*
 * f's RDMA path ended (@how): writes go to TCP from now on, and so does
 * fd once the bytes left are read.
 */
static void moved_back(int fd, struct rsp_file *f, const char *how)
{
	f->detached = true;
	__atomic_store_n(&f->writes_tcp, true, __ATOMIC_RELEASE);
	if (drained(f))
		back_on_tcp(fd, f, how);
	else
		rsp_log("fd %d: back on TCP once the RDMA bytes left are read "
			"(%s)",
			fd, how);
}

/*
 * The peer, or this process before a fork, quiesced f.  Once a QUIESCE is
 * out or due, nothing more of ours goes over RDMA: writes go to TCP at
 * once.  A read that found the end of the RDMA bytes completes the
 * quiesce (the peer's data has ended: only our sends are waited for); a
 * write does not wait for the peer.
 */
static bool follow(int fd, struct rsp_file *f, bool reading)
{
	int err = errno;

	if (!f->via_tcp || !(quiesced(f) & (reading ? RDMA_QUIESCE_PEERS : ~0)))
		return false;
	__atomic_store_n(&f->writes_tcp, true, __ATOMIC_RELEASE);
	if (!quiesce(f, reading ? RSP_MOVE_BACK_MS : 0)) {
		moved_back(fd, f,
			   reading ? "its RDMA bytes are read"
				   : "its writes went to TCP");
	} else if (reading) {
		rsp_log("fd %d: cannot move back to TCP: %s", fd,
			strerror(errno));
		errno = err;
		return false;
	}
	errno = err;
	return true;
}

/*
 * EBADF: another thread closed fd under the call, and f went with it (the
 * preload supports a close under a blocking read, as the kernel does).
 */
bool rsp_back_after_read(int fd, struct rsp_file *f, ssize_t n)
{
	/* Bytes first: the end of the RDMA bytes reads as 0 or an error. */
	return (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR &&
			   errno != EBADF)) &&
	       follow(fd, f, true);
}

bool rsp_back_after_write(int fd, struct rsp_file *f, ssize_t n)
{
	return n < 0 && errno == EPIPE && follow(fd, f, false);
}

static bool moved_here(const struct rsp_file *f)
{
	return f->via_tcp && f->owner == rsp_pid && !f->detached;
}

void rsp_move_back_before_exec(void)
{
	uint64_t deadline = rsp_now_ms() + RSP_MOVE_BACK_MS, now;
	int *fds, n, i, kept = 0;
	struct rsp_file *f;
	const char *why;

	if (!__atomic_load_n(&rsp_nmoved, __ATOMIC_RELAXED))
		return;
	n = rsp_fds_where(moved_here, &fds);
	for (i = 0; i < n; i++)
		if (rsp_fd_survives_exec(fds[i]))
			fds[kept++] = fds[i];
	/* Every peer is asked before any is waited for. */
	for (i = 0; i < kept; i++)
		if ((f = rsp_get(fds[i])))
			quiesce(f, 0);
	for (i = 0; i < kept; i++) {
		f = rsp_get(fds[i]);
		if (!f)
			continue;
		now = rsp_now_ms();
		if (quiesce(f, now < deadline ? (int)(deadline - now) : 0)) {
			why = strerror(errno);
		} else if (!drained(f)) {
			why = "bytes unread";
		} else {
			back_on_tcp(fds[i], f, "exec");
			continue;
		}
		/*
		 * Bytes the new image cannot have: the peer's that did not
		 * end in time, or came and were not read (they live in this
		 * image's memory).  An end both sides see beats a gap.
		 */
		rsp_log("fd %d: cannot move back to TCP before exec (%s): "
			"shut down",
			fds[i], why);
		rsp_real.shutdown(fds[i], SHUT_RDWR);
	}
	free(fds);
}
