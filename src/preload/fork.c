// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Fork support (RDMAV_FORK_SAFE=1): connections start on TCP and move to
 * an rsocket at their first read or write, in the process that makes it.
 *
 * RDMA resources cannot be handed to a forked child, yet servers accept in
 * the parent and serve in a child.  So, as rdma-core does with this
 * variable, a TCP socket's connect or accept runs on the kernel socket,
 * and the rsocket is made only when the connection is first used:
 *   passive side (accepted): listen on an rsocket at the TCP socket's own
 *     address with an ephemeral port, tell the peer over TCP (an 8-byte
 *     message: "RSFK", the port, two zero bytes; port 0: "stay on TCP"),
 *     and accept the peer's rsocket;
 *   active side (connected): wait for that message (peeked first: a peer
 *     that says something else is not converting, and keeps the bytes),
 *     consume it and rconnect to the peer's address at that port.
 * The TCP connection then is shut down; its descriptor keeps the number,
 * as every rsocket descriptor of the preload does.  Unlike rdma-core, the
 * passive side needs no named semaphore (its listener's port is its own).
 *
 * Limits, as in rdma-core: both ends must run the preload in this mode; a
 * side whose first act is to wait in poll/epoll for its peer's data, while
 * the peer waits for it too, never converts; dup'ed descriptors stay TCP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "preload.h"

#define RSP_LAZY_MAX 65536 /* descriptors beyond are carried at once */

static uint8_t lazy[RSP_LAZY_MAX];
static int nlazy; /* descriptors with a state, for the fast path */

static const char magic[4] = {'R', 'S', 'F', 'K'};

enum rsp_lazy rsp_lazy_get(int fd)
{
	if (!__atomic_load_n(&nlazy, __ATOMIC_RELAXED) || fd < 0 ||
	    fd >= RSP_LAZY_MAX)
		return RSP_LAZY_NONE;
	return (enum rsp_lazy)__atomic_load_n(&lazy[fd], __ATOMIC_ACQUIRE);
}

bool rsp_lazy_set(int fd, enum rsp_lazy state)
{
	uint8_t old;

	if (fd < 0 || fd >= RSP_LAZY_MAX)
		return false;
	old = __atomic_exchange_n(&lazy[fd], (uint8_t)state, __ATOMIC_ACQ_REL);
	if (!old && state)
		__atomic_add_fetch(&nlazy, 1, __ATOMIC_RELAXED);
	else if (old && !state)
		__atomic_sub_fetch(&nlazy, 1, __ATOMIC_RELAXED);
	return true;
}

/* Blocking I/O of exactly @len bytes on the kernel socket. */
static int tcp_exact(int fd, void *buf, size_t len, bool out)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = out ? rsp_real.send(fd, (char *)buf + done, len - done,
					MSG_NOSIGNAL)
			: rsp_real.recv(fd, (char *)buf + done, len - done, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = port;
	else
		((struct sockaddr_in6 *)ss)->sin6_port = port;
}

static uint16_t get_port(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET
		       ? ((const struct sockaddr_in *)ss)->sin_port
		       : ((const struct sockaddr_in6 *)ss)->sin6_port;
}

/* Passive side: an rsocket listener of our own, its port to the peer. */
static int convert_passive(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	uint8_t msg[8] = {0};
	int l = -1, rs;

	memcpy(msg, magic, sizeof(magic));
	if (rsp_real.getsockname(fd, (struct sockaddr *)&ss, &len))
		goto tell;
	set_port(&ss, 0);
	l = rsocket(ss.ss_family, SOCK_STREAM, 0);
	if (l < 0 || rbind(l, (struct sockaddr *)&ss, len) || rlisten(l, 1))
		goto tell;
	len = sizeof(ss);
	if (rgetsockname(l, (struct sockaddr *)&ss, &len))
		goto tell;
	memcpy(msg + 4, &(uint16_t){get_port(&ss)}, 2);
tell:
	/* port 0 (we could not listen) tells the peer to stay on TCP */
	if (tcp_exact(fd, msg, sizeof(msg), true) || !(msg[4] | msg[5])) {
		if (l >= 0)
			rclose(l);
		return -1;
	}
	rs = raccept(l, NULL, NULL);
	rclose(l);
	return rs;
}

/* Active side: the peer's port, then our rconnect to it. */
static int convert_active(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	uint8_t msg[8];
	uint16_t port;
	ssize_t n;
	int rs;

	do
		n = rsp_real.recv(fd, msg, sizeof(msg), MSG_PEEK | MSG_WAITALL);
	while (n < 0 && errno == EINTR);
	if (n != sizeof(msg) || memcmp(msg, magic, sizeof(magic)))
		return -1; /* not a converting peer: its bytes stay */
	if (tcp_exact(fd, msg, sizeof(msg), false))
		return -1;
	memcpy(&port, msg + 4, 2);
	if (!port || rsp_real.getpeername(fd, (struct sockaddr *)&ss, &len))
		return -1;
	set_port(&ss, port);
	rs = rsocket(ss.ss_family, SOCK_STREAM, 0);
	if (rs < 0)
		return -1;
	rsp_apply_config(rs);
	if (rconnect(rs, (struct sockaddr *)&ss, len)) {
		rclose(rs);
		return -1;
	}
	return rs;
}

/*
 * The first use of a lazy connection: move it to an rsocket, or leave it
 * on TCP for good.  Returns the new file, or NULL (TCP).
 */
static struct rsp_file *convert(int fd, enum rsp_lazy state)
{
	struct rsp_file *f;
	int fl, rs, one = 1, nodelay = 0;
	socklen_t len = sizeof(nodelay);

	fl = rsp_real.fcntl(fd, F_GETFL);
	if (fl >= 0 && (fl & O_NONBLOCK))
		rsp_real.fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	rs = state == RSP_LAZY_PASSIVE ? convert_passive(fd)
				       : convert_active(fd);
	if (fl >= 0 && (fl & O_NONBLOCK))
		rsp_real.fcntl(fd, F_SETFL, fl);
	rsp_lazy_set(fd, RSP_LAZY_NONE);
	if (rs < 0) {
		rsp_log("fd %d: stays on TCP (no fork-mode peer or rsocket)",
			fd);
		return NULL;
	}
	f = rsp_file_new(rs, 0);
	if (!f) {
		rclose(rs);
		return NULL;
	}
	if (fl >= 0 && (fl & O_NONBLOCK))
		rfcntl(rs, F_SETFL, O_NONBLOCK);
	if (!rsp_real.getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay,
				 &len) &&
	    nodelay)
		rsetsockopt(rs, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	rsp_real.shutdown(fd, SHUT_RDWR);
	rsp_set(fd, f);
	rsp_log("fd %d: %s rsocket %d after fork-safe TCP set-up", fd,
		state == RSP_LAZY_PASSIVE ? "accepted" : "connected over", rs);
	return f;
}

struct rsp_file *rsp_get_io(int fd)
{
	struct rsp_file *f = rsp_get(fd);
	enum rsp_lazy state;

	if (f)
		return f;
	state = rsp_lazy_get(fd);
	if (state != RSP_LAZY_ACTIVE && state != RSP_LAZY_PASSIVE)
		return NULL;
	return convert(fd, state);
}
