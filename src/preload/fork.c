// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Fork support (RDMAV_FORK_SAFE=1): connections start on TCP and move to
 * an rsocket at their first read or write, in the process that makes it.
 *
 * RDMA resources cannot be handed to a forked child, yet servers accept in
 * the parent and serve in a child.  So, as rdma-core does with this
 * variable, a TCP socket's connect or accept runs on the kernel socket,
 * and the rsocket is made only when the connection is first used.  Each
 * end then sends an offer over TCP (forkstep.c): the end that speaks first
 * at once, the other when it finds the peer's offer where its first bytes
 * would be (a server in poll/epoll/select wakes for it).  With both
 * offers ready, the passive (accepted) end listens on an rsocket at the
 * TCP socket's own address with an ephemeral port, named in its offer,
 * and the active end connects to it.  The TCP connection then is shut
 * down; its descriptor keeps the number, as every rsocket descriptor of
 * the preload does.  Unlike rdma-core, the passive side needs no named
 * semaphore (its listener's port is its own).
 *
 * Limits: the end that speaks first sends its 8-byte offer to a peer
 * without the preload too (a peer that speaks first is recognised and
 * keeps plain TCP); the handshake blocks the call that makes it, even on
 * a non-blocking socket; dup'ed descriptors stay TCP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "preload.h"

#define RSP_LAZY_MAX 65536 /* descriptors beyond are carried at once */

static uint8_t lazy[RSP_LAZY_MAX];
static int nlazy; /* descriptors with a state, for the fast path */

struct rsp_file rsp_again = {.rs = -1};

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

/* Blocking send of exactly @len bytes on the kernel socket. */
static int tcp_send(int fd, const void *buf, size_t len)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = rsp_real.send(fd, (const char *)buf + done, len - done,
				  MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/* The peer's first bytes, up to an offer's length; -1 (errno) if none. */
static ssize_t tcp_peek(int fd, uint8_t *buf, int flags)
{
	ssize_t n;

	do
		n = rsp_real.recv(fd, buf, RSP_FK_LEN, MSG_PEEK | flags);
	while (n < 0 && errno == EINTR);
	return n;
}

/* Reads the peer's offer (all of it there, or waited for); -1: none. */
static int take_offer(int fd, struct rsp_fk_msg *peer)
{
	uint8_t buf[RSP_FK_LEN];

	if (tcp_peek(fd, buf, MSG_WAITALL) != RSP_FK_LEN ||
	    rsp_fk_decode(buf, peer))
		return -1; /* not an offer: its bytes stay for the program */
	do
		if (rsp_real.recv(fd, buf, RSP_FK_LEN, MSG_WAITALL) ==
		    RSP_FK_LEN)
			return 0;
	while (errno == EINTR);
	return -1;
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

/* Passive end: an rsocket listener of our own at the connection's address. */
static int make_listener(int fd, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int l;

	*port = 0;
	if (rsp_real.getsockname(fd, (struct sockaddr *)&ss, &len))
		return -1;
	set_port(&ss, 0);
	l = rsocket(ss.ss_family, SOCK_STREAM, 0);
	if (l < 0)
		return -1;
	if (rbind(l, (struct sockaddr *)&ss, len) || rlisten(l, 1))
		goto fail;
	len = sizeof(ss);
	if (rgetsockname(l, (struct sockaddr *)&ss, &len))
		goto fail;
	*port = get_port(&ss);
	return l;
fail:
	rclose(l);
	return -1;
}

/*
 * Passive end, offers agreed: accept the peer's rsocket, unless the peer
 * says over TCP that its connect failed (or closes) first.
 */
static int accept_peer(int fd, int l)
{
	struct pollfd p[2] = {{.fd = l, .events = POLLIN},
			      {.fd = fd, .events = POLLIN}};
	struct rsp_fk_msg notice;

	if (rfcntl(l, F_SETFL, O_NONBLOCK))
		return raccept(l, NULL, NULL);
	for (;;) {
		int rs = raccept(l, NULL, NULL);

		if (rs >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			return rs;
		p[0].revents = p[1].revents = 0;
		if (rpoll(p, 2, -1) < 0 && errno != EINTR)
			return -1;
		if (p[1].revents && !(p[0].revents & POLLIN)) {
			take_offer(fd, &notice); /* its connect failed */
			return -1;
		}
	}
}

/* Active end, offers agreed: connect to the peer's listener. */
static int connect_peer(int fd, int rs, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct rsp_fk_msg notice = {.role = RSP_FK_ACTIVE};
	uint8_t msg[RSP_FK_LEN];

	if (!rsp_real.getpeername(fd, (struct sockaddr *)&ss, &len)) {
		set_port(&ss, port);
		if (!rconnect(rs, (struct sockaddr *)&ss, len))
			return 0;
	}
	/* the passive end waits in accept: tell it to stay on TCP */
	rsp_fk_encode(msg, &notice);
	tcp_send(fd, msg, sizeof(msg));
	return -1;
}

/*
 * The handshake (@act: RSP_FK_OFFER or RSP_FK_ANSWER).  Returns the
 * connected rsocket, or -1: the connection stays on TCP.
 */
static int handshake(int fd, bool passive, enum rsp_fk_act act)
{
	struct rsp_fk_msg mine = {0}, peer;
	uint8_t msg[RSP_FK_LEN];
	int rs, ret = -1;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	mine.role = passive ? RSP_FK_PASSIVE : RSP_FK_ACTIVE;
	if (passive) {
		rs = make_listener(fd, &mine.port);
	} else {
		rs = -1;
		if (!rsp_real.getpeername(fd, (struct sockaddr *)&ss, &len))
			rs = rsocket(ss.ss_family, SOCK_STREAM, 0);
		if (rs >= 0)
			rsp_apply_config(rs);
	}
	mine.ready = rs >= 0;
	/* An answer takes the peer's offer first: nothing else is read. */
	if (act == RSP_FK_ANSWER && take_offer(fd, &peer))
		goto out;
	rsp_fk_encode(msg, &mine);
	if (tcp_send(fd, msg, sizeof(msg)))
		goto out;
	if (act == RSP_FK_OFFER && take_offer(fd, &peer))
		goto out; /* a peer without the preload, or it closed */
	if (!rsp_fk_agree(&mine, &peer))
		goto out;
	if (passive) {
		ret = accept_peer(fd, rs);
	} else if (!connect_peer(fd, rs, peer.port)) {
		ret = rs;
		rs = -1;
	}
out:
	if (rs >= 0)
		rclose(rs);
	return ret;
}

/* Waits for the peer's first bytes (a blocking read that comes first). */
static void wait_readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	while (rsp_real.poll(&p, 1, -1) < 0 && errno == EINTR)
		;
}

/*
 * How long the start of an offer may wait for the rest.  An offer is one
 * 8-byte write, so from a peer in fork mode it arrives whole; bytes that
 * stay a strict prefix of one this long come from a peer without the
 * preload that sent them and now waits for an answer, which must not hang
 * on us: the connection stays on TCP and the bytes are the program's.
 */
#define RSP_FK_REST_MS 1000

/* Milliseconds on the monotonic clock. */
static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Whether the peer has shut its side down: no more bytes can come. */
static bool peer_done(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};

	return rsp_real.poll(&p, 1, 0) > 0 &&
	       (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/*
 * The start of an offer is there: whether the rest may still come (true,
 * after a pause of at most 10 ms: the bytes there keep the socket
 * readable, so poll cannot wait for more), or not (false): the peer shut
 * its side down after them, or the bound ran out.
 */
static bool rest_may_come(int fd, uint64_t *deadline)
{
	struct timespec pause = {.tv_nsec = 10 * 1000000};
	uint64_t now = now_ms();

	if (peer_done(fd)) {
		rsp_log("fd %d: the peer shut down after an offer's start", fd);
		return false;
	}
	if (!*deadline)
		*deadline = now + RSP_FK_REST_MS;
	if (now >= *deadline)
		return false;
	nanosleep(&pause, NULL);
	return true;
}

/*
 * The first use of a lazy connection: move it to an rsocket, or leave it
 * on TCP for good.  Returns the new file, NULL (TCP), or RSP_AGAIN: a
 * non-blocking read found nothing from the peer yet (EAGAIN).
 */
static struct rsp_file *convert(int fd, enum rsp_lazy state, bool writing,
				int flags)
{
	struct rsp_file *f;
	int fl, rs, one = 1, nodelay = 0;
	socklen_t len = sizeof(nodelay);
	enum rsp_fk_act act;
	uint8_t peek[RSP_FK_LEN];
	bool nonblock;
	uint64_t deadline = 0;
	ssize_t n;

	fl = rsp_real.fcntl(fd, F_GETFL);
	nonblock = (fl >= 0 && (fl & O_NONBLOCK)) || (flags & MSG_DONTWAIT);
	for (;;) {
		n = tcp_peek(fd, peek, MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return NULL; /* the call itself reports it */
		act = rsp_fk_step(writing, peek, n);
		if (act == RSP_FK_TCP || act == RSP_FK_OFFER ||
		    act == RSP_FK_ANSWER)
			break;
		if (act == RSP_FK_WAIT && nonblock) {
			errno = EAGAIN;
			return RSP_AGAIN;
		}
		if (act == RSP_FK_WAIT)
			wait_readable(fd);
		else if (!rest_may_come(fd, &deadline)) {
			act = RSP_FK_TCP; /* a prefix that stays one */
			break;
		}
	}
	rsp_lazy_set(fd, RSP_LAZY_NONE);
	if (act == RSP_FK_TCP) {
		rsp_log("fd %d: stays on TCP (the peer sent data first)", fd);
		rsp_epoll_forget(fd);
		return NULL;
	}
	if (fl >= 0 && (fl & O_NONBLOCK))
		rsp_real.fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	rs = handshake(fd, state == RSP_LAZY_PASSIVE, act);
	if (fl >= 0 && (fl & O_NONBLOCK))
		rsp_real.fcntl(fd, F_SETFL, fl);
	if (rs < 0) {
		rsp_log("fd %d: stays on TCP (no fork-mode peer or rsocket)",
			fd);
		rsp_epoll_forget(fd);
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
	rsp_epoll_converted(fd);
	rsp_log("fd %d: %s rsocket %d after fork-safe TCP set-up", fd,
		state == RSP_LAZY_PASSIVE ? "accepted" : "connected over", rs);
	return f;
}

struct rsp_file *rsp_get_io(int fd, bool writing, int flags)
{
	struct rsp_file *f = rsp_get(fd);
	enum rsp_lazy state;

	if (f)
		return f;
	state = rsp_lazy_get(fd);
	if (state != RSP_LAZY_ACTIVE && state != RSP_LAZY_PASSIVE)
		return NULL;
	return convert(fd, state, writing, flags);
}
