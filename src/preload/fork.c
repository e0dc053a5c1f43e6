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
 * and the active end connects to it.  The TCP connection stays open,
 * idle: the connection moves back to it before an exec (moveback.c); a
 * fork child that uses the connection has it relayed by the process that
 * made the rsocket (share.c).  Its descriptor keeps the number, as every
 * rsocket descriptor of the preload does.  Unlike
 * rdma-core, the passive side needs no named semaphore (its listener's
 * port is its own).
 *
 * On a non-blocking socket (or with MSG_DONTWAIT) no call waits for the
 * peer: a step that must wait ends the call with EAGAIN, the state keeps
 * the handshake's progress (forkstep.c names the states), and poll,
 * select and epoll (poll.c) watch what it waits for and carry it on
 * themselves when that comes (rsp_fk_poke), so that they report the
 * descriptor only once the handshake is over and the connection, on
 * RDMA or TCP, is ready: a write after "writable" makes progress, as
 * programs like rsync take for granted.  A blocking call waits for the
 * same things in turn.
 *
 * A connection not used yet may have several descriptors (a dup, or
 * several passed across an exec: sshd puts its connection on 0 and 1 and
 * re-executes itself, which uses a third).  They are twins: each keeps the
 * state, and the handshake, being one descriptor's, is made only by the
 * last twin left open when the connection is first used.  Used while
 * another twin is open (an inetd service reading 0 and writing 1), every
 * twin keeps TCP as an inherited connection does (inherit.c): the peer's
 * offer is taken and declined, never read by the program.
 *
 * Limits: the end that speaks first sends its 8-byte offer to a peer
 * without the preload too (a peer that speaks first is recognised and
 * keeps plain TCP); a descriptor dup'ed once a handshake began stays TCP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "preload.h"

static uint8_t lazy[RSP_LAZY_MAX];
static int nlazy; /* descriptors with a state, for the fast path */
static int npending; /* of them, handshakes under way (poll's fast path) */

/*
 * A pending handshake's own: the rsocket it holds in the states that hold
 * one (the passive end's listener, the active end's rsocket; -1 if it
 * could make none), the offer it sent, and the process that made the
 * rsocket, the only one that may use it.  While the rest of the peer's
 * offer is due on a non-blocking socket (resting): the timer that bounds
 * the wait, and the socket's SO_RCVLOWAT to give back.
 */
static struct rsp_held {
	int rs;
	int owner;
	struct rsp_fk_msg mine;
	bool resting;
	int timer;
	int lowat;
} held[RSP_LAZY_MAX];

struct rsp_file rsp_again = {.rs = -1};

/*
 * Per descriptor: TWIN, one of several of a connection not used yet;
 * BEGUN once its first use began (a dup of it is no twin: the handshake
 * may have gone on from there).  Changed under twin_lock.
 */
enum { TWIN_NONE, TWIN, TWIN_BEGUN };
static uint8_t twin[RSP_LAZY_MAX];
static int twin_top; /* one past the highest descriptor ever a twin */
static pthread_mutex_t twin_lock = PTHREAD_MUTEX_INITIALIZER;

void rsp_twins_forked(void)
{
	pthread_mutex_init(&twin_lock, NULL);
}

/* Read without the lock by a descriptor's first use (rsp_get_io). */
static int twin_get(int fd)
{
	return __atomic_load_n(&twin[fd], __ATOMIC_RELAXED);
}

static void twin_put(int fd, int value)
{
	__atomic_store_n(&twin[fd], (uint8_t)value, __ATOMIC_RELAXED);
}

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
	int d;

	if (fd < 0 || fd >= RSP_LAZY_MAX)
		return false;
	if (!state)
		twin_put(fd, TWIN_NONE);
	old = __atomic_exchange_n(&lazy[fd], (uint8_t)state, __ATOMIC_ACQ_REL);
	if (!old && state)
		__atomic_add_fetch(&nlazy, 1, __ATOMIC_RELAXED);
	else if (old && !state)
		__atomic_sub_fetch(&nlazy, 1, __ATOMIC_RELAXED);
	d = (int)rsp_fk_pending(state) - (int)rsp_fk_pending(old);
	if (d)
		__atomic_add_fetch(&npending, d, __ATOMIC_RELAXED);
	return true;
}

static bool unused(enum rsp_lazy state)
{
	return state == RSP_LAZY_ACTIVE || state == RSP_LAZY_PASSIVE;
}

static void twin_mark(int fd)
{
	twin_put(fd, TWIN);
	if (fd >= twin_top)
		twin_top = fd + 1;
}

bool rsp_lazy_twin(int oldfd, int newfd)
{
	enum rsp_lazy state = rsp_lazy_get(oldfd);
	bool done = false;

	if (!unused(state) || newfd < 0 || newfd >= RSP_LAZY_MAX)
		return false;
	pthread_mutex_lock(&twin_lock);
	if (twin_get(oldfd) != TWIN_BEGUN && rsp_lazy_get(oldfd) == state &&
	    rsp_lazy_set(newfd, state)) {
		twin_mark(oldfd);
		twin_mark(newfd);
		done = true;
	}
	pthread_mutex_unlock(&twin_lock);
	return done;
}

bool rsp_lazy_mark(int fd, enum rsp_lazy state, bool is_twin)
{
	if (!rsp_lazy_set(fd, state))
		return false;
	if (is_twin && unused(state)) {
		pthread_mutex_lock(&twin_lock);
		twin_mark(fd);
		pthread_mutex_unlock(&twin_lock);
	}
	return true;
}

/* Whether descriptor k is a twin of the socket @st, not used yet. */
static bool twin_of(int k, const struct stat *st)
{
	struct stat kst;

	return twin_get(k) == TWIN && unused(rsp_lazy_get(k)) &&
	       !fstat(k, &kst) && kst.st_dev == st->st_dev &&
	       kst.st_ino == st->st_ino;
}

/*
 * fd's first use begins: true if it may make the handshake (no other twin
 * is open); false if every twin, fd too, is now an inherited connection.
 */
static bool begin(int fd)
{
	bool alone = true;
	struct stat st;
	int k;

	pthread_mutex_lock(&twin_lock);
	if (twin_get(fd) == TWIN && !fstat(fd, &st)) {
		for (k = 0; k < twin_top; k++) {
			if (k == fd || !twin_of(k, &st))
				continue;
			rsp_log("fd %d: stays on TCP as an inherited "
				"connection (fd %d, its twin, is used)",
				k, fd);
			rsp_lazy_set(k, RSP_LAZY_INHERITED);
			twin_put(k, TWIN_NONE);
			alone = false;
		}
	}
	if (alone) {
		twin_put(fd, TWIN_BEGUN);
	} else {
		rsp_log("fd %d: stays on TCP as an inherited connection "
			"(another descriptor is that connection too)",
			fd);
		rsp_lazy_set(fd, RSP_LAZY_INHERITED);
		twin_put(fd, TWIN_NONE);
	}
	pthread_mutex_unlock(&twin_lock);
	return alone;
}

bool rsp_fk_any(void)
{
	return __atomic_load_n(&npending, __ATOMIC_RELAXED) > 0;
}

/*
 * The rest of an offer's start came, or never will: the timer goes and
 * the socket is readable with any byte again, as the program knows it.
 */
static void rest_end(int fd)
{
	struct rsp_held *h = &held[fd];

	if (!h->resting)
		return;
	h->resting = false;
	rsp_real.close(h->timer);
	rsp_real.setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &h->lowat,
			    sizeof(h->lowat));
}

/* Ends fd's pending handshake, if any, and its state: the rsocket goes. */
void rsp_lazy_drop(int fd)
{
	enum rsp_lazy state = rsp_lazy_get(fd);

	if (state == RSP_LAZY_NONE)
		return;
	rsp_lazy_set(fd, RSP_LAZY_NONE);
	rest_end(fd);
	/* a forked child's copy belongs to its parent: not ours to close */
	if (rsp_fk_holds(state) && held[fd].rs >= 0 &&
	    held[fd].owner == rsp_pid)
		rclose(held[fd].rs);
}

bool rsp_fk_watch_fds(int fd, short events, struct pollfd out[2])
{
	enum rsp_lazy state = rsp_lazy_get(fd);
	struct rsp_fk_watch w;

	if (!rsp_fk_pending(state))
		return false;
	w = rsp_fk_watch(state, events, held[fd].resting);
	out[0] = (struct pollfd){.fd = w.tcp ? fd : -1, .events = w.tcp};
	out[1] = (struct pollfd){.fd = -1};
	if (w.rs)
		out[1] = (struct pollfd){.fd = held[fd].rs, .events = w.rs};
	else if (w.timer)
		out[1] = (struct pollfd){.fd = held[fd].timer,
					 .events = w.timer};
	return true;
}

/*
 * Sends an offer (or a notice) whole on the kernel socket.  It goes
 * before any byte of the program's, into an empty send buffer, so even a
 * non-blocking socket has room for it: the wait for room is for form.
 */
static int send_msg(int fd, const struct rsp_fk_msg *m)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	uint8_t msg[RSP_FK_LEN];
	size_t done = 0;
	ssize_t n;

	rsp_fk_encode(msg, m);
	while (done < sizeof(msg)) {
		n = rsp_real.send(fd, msg + done, sizeof(msg) - done,
				  MSG_NOSIGNAL);
		if (n > 0)
			done += (size_t)n;
		else if (n < 0 && errno == EINTR)
			continue;
		else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			rsp_real.poll(&p, 1, -1);
		else
			return -1;
	}
	return 0;
}

/* The peer's first bytes, up to an offer's length; -1 (errno) if none. */
static ssize_t tcp_peek(int fd, uint8_t *buf)
{
	ssize_t n;

	do
		n = rsp_real.recv(fd, buf, RSP_FK_LEN, MSG_PEEK | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	return n;
}

/* Takes the offer @buf peeked off the socket; -1: it is none. */
static int take_offer(int fd, const uint8_t *buf, struct rsp_fk_msg *peer)
{
	uint8_t drop[RSP_FK_LEN];
	ssize_t n;

	if (rsp_fk_decode(buf, peer))
		return -1; /* not an offer: its bytes stay for the program */
	do
		n = rsp_real.recv(fd, drop, RSP_FK_LEN, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	return n == RSP_FK_LEN ? 0 : -1;
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
 * This end's part: the passive end's listener, or the active end's
 * rsocket (non-blocking: its rconnect must not block the call), and the
 * offer that says which; held by the descriptor while the handshake goes.
 */
static void make_mine(int fd, bool passive, struct rsp_held *h)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	h->mine = (struct rsp_fk_msg){.role = passive ? RSP_FK_PASSIVE
						      : RSP_FK_ACTIVE};
	h->owner = rsp_pid;
	if (passive) {
		h->rs = make_listener(fd, &h->mine.port);
		/* its accept is tried, never waited in */
		if (h->rs >= 0 && rfcntl(h->rs, F_SETFL, O_NONBLOCK)) {
			rclose(h->rs);
			h->rs = -1;
		}
	} else {
		h->rs = -1;
		if (!rsp_real.getpeername(fd, (struct sockaddr *)&ss, &len))
			h->rs = rsocket(ss.ss_family, SOCK_STREAM, 0);
		if (h->rs >= 0) {
			rsp_apply_config(h->rs);
			rfcntl(h->rs, F_SETFL, O_NONBLOCK);
		}
	}
	h->mine.ready = h->rs >= 0;
}

/*
 * How long the start of an offer may wait for the rest.  An offer is one
 * 8-byte write, so from a peer in fork mode it arrives whole; bytes that
 * stay a strict prefix of one this long come from a peer without the
 * preload that sent them and now waits for an answer, which must not hang
 * on us: the connection stays on TCP and the bytes are the program's.
 */
#define RSP_FK_REST_MS 1000

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
	uint64_t now = rsp_now_ms();

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
 * A non-blocking socket with the start of an offer and its rest due: the
 * first call arms the wait, so that the socket reads as ready only once a
 * whole offer is there or the peer shut its side down (SO_RCVLOWAT; poll
 * could not wait otherwise, the bytes there keep it readable), and a
 * timer rings when the bound runs out.  Whether the rest may still come:
 * false once the peer shut its side down or the timer rang (or no wait
 * can be armed); the bytes are then the program's.
 */
static bool rest_wait(int fd)
{
	struct itimerspec its = {
		.it_value = {.tv_sec = RSP_FK_REST_MS / 1000,
			     .tv_nsec = RSP_FK_REST_MS % 1000 * 1000000L}};
	struct rsp_held *h = &held[fd];
	socklen_t len = sizeof(h->lowat);
	int whole = RSP_FK_LEN;
	uint64_t rang;

	if (peer_done(fd)) {
		rsp_log("fd %d: the peer shut down after an offer's start", fd);
		return false;
	}
	if (h->resting)
		return rsp_real.read(h->timer, &rang, sizeof(rang)) !=
		       sizeof(rang);
	h->timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (h->timer < 0)
		return false;
	if (timerfd_settime(h->timer, 0, &its, NULL) ||
	    rsp_real.getsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &h->lowat, &len) ||
	    rsp_real.setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &whole,
				sizeof(whole))) {
		rsp_real.close(h->timer);
		return false;
	}
	h->resting = true;
	return true;
}

/* One call's handshake on one descriptor. */
struct hs {
	int fd;
	enum rsp_lazy state;
	bool writing; /* the call is a write */
	bool nonblock; /* it must not wait */
	bool holding; /* this call made held[fd] (not yet in its state) */
	int rs; /* once over: the connected rsocket, or -1 (TCP) */
	const char *why; /* once over on TCP: why, for the log */
};

#define NO_PEER "no fork-mode peer or rsocket"

/* Over on TCP (the next state, RSP_LAZY_NONE). */
static enum rsp_lazy on_tcp(struct hs *h, const char *why)
{
	h->rs = -1;
	h->why = why;
	return RSP_LAZY_NONE;
}

/*
 * What the peer's first bytes say (forkstep.c), once the start of an
 * offer has its rest or never will: RSP_FK_WAIT (nothing yet),
 * RSP_FK_OFFER, RSP_FK_ANSWER (@buf holds the peer's offer) or
 * RSP_FK_TCP; on a non-blocking socket also RSP_FK_MORE: the rest is due
 * (a wait for it armed, rest_wait).
 */
static enum rsp_fk_act look(struct hs *h, bool writing, uint8_t *buf)
{
	uint64_t deadline = 0;
	enum rsp_fk_act act;
	ssize_t n;

	for (;;) {
		n = tcp_peek(h->fd, buf);
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			act = RSP_FK_TCP; /* the call itself reports it */
		else
			act = rsp_fk_step(writing, buf, n);
		if (act == RSP_FK_MORE && h->nonblock) {
			if (rest_wait(h->fd))
				return act;
			act = RSP_FK_TCP; /* a prefix that stays one */
		} else if (act == RSP_FK_MORE &&
			   !rest_may_come(h->fd, &deadline)) {
			act = RSP_FK_TCP;
		}
		if (act != RSP_FK_MORE) {
			rest_end(h->fd);
			return act;
		}
	}
}

/* Both offers known: on to ACCEPTING, CONNECTING (rconnect begun), or TCP. */
static enum rsp_lazy agreed(struct hs *h, const struct rsp_fk_msg *peer)
{
	struct rsp_held *held_fd = &held[h->fd];
	enum rsp_lazy next = rsp_fk_after(&held_fd->mine, peer);
	struct rsp_fk_msg notice = {.role = RSP_FK_ACTIVE};
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (next != RSP_LAZY_CONNECTING)
		return next == RSP_LAZY_NONE ? on_tcp(h, NO_PEER) : next;
	if (!rsp_real.getpeername(h->fd, (struct sockaddr *)&ss, &len)) {
		set_port(&ss, peer->port);
		if (!rconnect(held_fd->rs, (struct sockaddr *)&ss, len) ||
		    errno == EINPROGRESS)
			return next; /* CONNECTING's step sees how it ends */
	}
	/* the passive end waits for our rsocket: tell it to stay on TCP */
	send_msg(h->fd, &notice);
	return on_tcp(h, NO_PEER);
}

/*
 * ACTIVE or PASSIVE: the first read or write starts the handshake (REST_*:
 * once the rest of the peer's offer is there).
 */
static enum rsp_lazy step_fresh(struct hs *h)
{
	bool passive =
		h->state == RSP_LAZY_PASSIVE || h->state == RSP_LAZY_REST_P;
	uint8_t buf[RSP_FK_LEN];
	struct rsp_fk_msg peer;
	enum rsp_fk_act act = look(h, h->writing, buf);

	if (act == RSP_FK_WAIT)
		return h->state;
	if (act == RSP_FK_MORE)
		return rsp_fk_resting(passive);
	if (act == RSP_FK_TCP)
		return on_tcp(h, "the peer sent data first");
	/* An answer takes the peer's offer first: nothing else is read. */
	if (act == RSP_FK_ANSWER && take_offer(h->fd, buf, &peer))
		return on_tcp(h, NO_PEER);
	make_mine(h->fd, passive, &held[h->fd]);
	h->holding = true;
	if (send_msg(h->fd, &held[h->fd].mine))
		return on_tcp(h, NO_PEER);
	return act == RSP_FK_OFFER ? rsp_fk_offered(passive) : agreed(h, &peer);
}

/* OFFERED: the peer's offer is due. */
static enum rsp_lazy step_offered(struct hs *h)
{
	uint8_t buf[RSP_FK_LEN];
	struct rsp_fk_msg peer;

	switch (look(h, false, buf)) {
	case RSP_FK_WAIT:
	case RSP_FK_MORE:
		return h->state;
	case RSP_FK_ANSWER:
		if (!take_offer(h->fd, buf, &peer))
			return agreed(h, &peer);
		break;
	default: /* a peer without the preload answered, or it closed */
		break;
	}
	return on_tcp(h, NO_PEER);
}

/* ACCEPTING: the peer's rsocket, unless it says over TCP it failed. */
static enum rsp_lazy step_accepting(struct hs *h)
{
	int rs = raccept(held[h->fd].rs, NULL, NULL);
	struct rsp_fk_msg notice;
	uint8_t buf[RSP_FK_LEN];
	ssize_t n = -1;

	if (rs < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
		return on_tcp(h, NO_PEER);
	if (rs < 0) {
		n = tcp_peek(h->fd, buf);
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			n = 0; /* the connection's end */
	}
	switch (rsp_fk_accepting(rs >= 0, n)) {
	case RSP_FK_PENDING:
		return h->state;
	case RSP_FK_DONE:
		h->rs = rs;
		return RSP_LAZY_NONE;
	default:
		/* the peer's notice that its connect failed, or its end */
		if (n == RSP_FK_LEN)
			take_offer(h->fd, buf, &notice);
		return on_tcp(h, NO_PEER);
	}
}

/* CONNECTING: our rconnect, under way. */
static enum rsp_lazy step_connecting(struct hs *h)
{
	struct pollfd p = {.fd = held[h->fd].rs, .events = POLLOUT};
	struct rsp_fk_msg notice = {.role = RSP_FK_ACTIVE};
	int n = rsp_rpoll(&p, 1, 0);

	if (n < 0)
		p.revents = POLLERR;
	switch (rsp_fk_connecting(n ? p.revents : 0)) {
	case RSP_FK_PENDING:
		return h->state;
	case RSP_FK_DONE:
		h->rs = held[h->fd].rs;
		return RSP_LAZY_NONE;
	default:
		send_msg(h->fd, &notice); /* the passive end waits for us */
		return on_tcp(h, NO_PEER);
	}
}

/*
 * INHERITED, at its first read: the peer's offer, if it made one, is
 * taken and answered (or dropped), never read by the program.  An offer
 * comes whole, so the rest of its start is waited for here even on a
 * non-blocking socket (at most RSP_FK_REST_MS): such a start is only ever
 * the data of a peer without the preload.
 */
static enum rsp_lazy step_inherited(struct hs *h)
{
	struct hs blocking = *h;
	struct rsp_fk_msg peer, answer;
	uint8_t buf[RSP_FK_LEN];
	enum rsp_fk_act act;

	blocking.nonblock = false;
	act = look(&blocking, false, buf);
	switch (rsp_fk_inherited(act, act == RSP_FK_ANSWER &&
					      rsp_inherit_sent(h->fd))) {
	case RSP_FK_INH_WAIT:
		return h->state;
	case RSP_FK_INH_DECLINE:
		if (take_offer(h->fd, buf, &peer))
			break;
		answer = rsp_fk_decline(&peer);
		send_msg(h->fd, &answer);
		return on_tcp(h, "inherited: the peer's offer declined");
	case RSP_FK_INH_DROP:
		if (!take_offer(h->fd, buf, &peer))
			return on_tcp(h, "inherited: the peer's offer taken "
					 "after our data");
		break;
	default:
		return on_tcp(h, "inherited: the peer sent data first");
	}
	return on_tcp(h, "inherited: no whole offer");
}

static enum rsp_lazy step(struct hs *h)
{
	switch (h->state) {
	case RSP_LAZY_INHERITED:
		return step_inherited(h);
	case RSP_LAZY_ACTIVE:
	case RSP_LAZY_PASSIVE:
	case RSP_LAZY_REST_A:
	case RSP_LAZY_REST_P:
		return step_fresh(h);
	case RSP_LAZY_OFFERED_A:
	case RSP_LAZY_OFFERED_P:
		return step_offered(h);
	case RSP_LAZY_ACCEPTING:
		return step_accepting(h);
	case RSP_LAZY_CONNECTING:
		return step_connecting(h);
	default:
		return on_tcp(h, NO_PEER);
	}
}

/*
 * A blocking call waits where a non-blocking one would say EAGAIN: for
 * what poll would report to the program (a fresh connection: the peer's
 * first bytes).
 */
static void wait_for(int fd)
{
	struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = -1}};
	int n;

	rsp_fk_watch_fds(fd, POLLIN | POLLOUT, p);
	do
		n = p[1].fd < 0 ? rsp_real.poll(p, 1, -1) : rsp_rpoll(p, 2, -1);
	while (n < 0 && errno == EINTR);
}

/*
 * The handshake goes on: the descriptor's epoll sets follow it.  Its
 * kernel memberships end (a waiting socket is writable at once and would
 * wake the program for nothing); the ones remembered in poll.c take over
 * and watch what it waits for.
 */
static void enter(struct hs *h, enum rsp_lazy next)
{
	h->holding = false; /* the state holds it now */
	if (!rsp_fk_pending(h->state))
		rsp_epoll_converted(h->fd);
	rsp_lazy_set(h->fd, next);
	h->state = next;
}

/* Over on TCP: the kernel socket is the program's, with its epoll sets. */
static struct rsp_file *stay_tcp(struct hs *h)
{
	bool pending = rsp_fk_pending(h->state);
	struct rsp_held *mine = &held[h->fd];

	rest_end(h->fd);
	if ((rsp_fk_holds(h->state) || h->holding) && mine->rs >= 0 &&
	    mine->owner == rsp_pid)
		rclose(mine->rs);
	rsp_lazy_set(h->fd, RSP_LAZY_NONE);
	rsp_log("fd %d: stays on TCP (%s)", h->fd, h->why);
	if (pending)
		rsp_epoll_fell_back(h->fd);
	else
		rsp_epoll_forget(h->fd);
	return NULL;
}

/* Over on an rsocket: the descriptor carries it from now on. */
static struct rsp_file *moved(struct hs *h, int fl)
{
	bool passive = h->state == RSP_LAZY_ACCEPTING;
	int one = 1, nodelay = 0, fd = h->fd;
	socklen_t len = sizeof(nodelay);
	struct rsp_file *f;

	if (passive)
		rclose(held[fd].rs); /* the listener; the handshake's own */
	rsp_lazy_set(fd, RSP_LAZY_NONE);
	f = rsp_file_new(h->rs, 0);
	if (!f) {
		rclose(h->rs);
		h->why = "no memory";
		h->state = RSP_LAZY_NONE;
		rsp_log("fd %d: stays on TCP (%s)", fd, h->why);
		rsp_epoll_fell_back(fd);
		return NULL;
	}
	rfcntl(h->rs, F_SETFL, fl >= 0 && (fl & O_NONBLOCK) ? O_NONBLOCK : 0);
	if (!rsp_real.getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay,
				 &len) &&
	    nodelay)
		rsetsockopt(h->rs, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	f->via_tcp = true;
	__atomic_add_fetch(&rsp_nmoved, 1, __ATOMIC_RELAXED);
	rsp_set(fd, f);
	rsp_log("fd %d: %s rsocket %d after fork-safe TCP set-up", fd,
		passive ? "accepted" : "connected over", h->rs);
	return f;
}

/*
 * The handshake, from where fd's state says it is, as far as it can go:
 * to its end (the new file, or NULL: TCP), or, on a non-blocking socket
 * (or with MSG_DONTWAIT), to a step that must wait: RSP_AGAIN, EAGAIN,
 * the progress kept in the state for the next call.
 */
static struct rsp_file *advance(int fd, enum rsp_lazy state, bool writing,
				int flags)
{
	struct hs h = {.fd = fd, .state = state, .writing = writing, .rs = -1};
	int fl = rsp_real.fcntl(fd, F_GETFL);
	enum rsp_lazy next;

	h.nonblock = (fl >= 0 && (fl & O_NONBLOCK)) || (flags & MSG_DONTWAIT);
	if (rsp_fk_holds(state) && held[fd].owner != rsp_pid) {
		/* begun by the parent, whose rsocket this process cannot use */
		h.why = "handshake begun before a fork";
		return stay_tcp(&h);
	}
	for (;;) {
		next = step(&h);
		if (next == RSP_LAZY_NONE)
			return h.rs < 0 ? stay_tcp(&h) : moved(&h, fl);
		if (next != h.state) {
			enter(&h, next);
			continue;
		}
		if (h.nonblock) {
			errno = EAGAIN;
			return RSP_AGAIN;
		}
		wait_for(fd);
	}
}

bool rsp_fk_poke(int fd)
{
	enum rsp_lazy state = rsp_lazy_get(fd);
	int err = errno;
	bool pending;

	if (!rsp_fk_pending(state))
		return false;
	/*
	 * Reading or writing, alike: a pending end has sent its offer, or
	 * holds the start of the peer's, which decides its next step.
	 */
	pending = advance(fd, state, false, MSG_DONTWAIT) == RSP_AGAIN;
	errno = err;
	return pending;
}

struct rsp_file *rsp_get_io(int fd, bool writing, int flags)
{
	struct rsp_file *f = rsp_use(fd);
	enum rsp_lazy state;

	if (f) /* moving back: writes go to TCP (moveback.c) */
		return writing && __atomic_load_n(&f->writes_tcp,
						  __ATOMIC_ACQUIRE)
			       ? NULL
			       : f;
	if (rsp_share_lost(fd)) {
		errno = ECONNRESET;
		return RSP_AGAIN;
	}
	state = rsp_lazy_get(fd);
	if (unused(state) && twin_get(fd) != TWIN_BEGUN && !begin(fd))
		state = RSP_LAZY_INHERITED;
	if (state == RSP_LAZY_INHERITED && writing)
		return NULL; /* the kernel counts it: see rsp_inherit_sent */
	if (state != RSP_LAZY_ACTIVE && state != RSP_LAZY_PASSIVE &&
	    state != RSP_LAZY_INHERITED && !rsp_fk_pending(state)) {
		rsp_note_foreign(fd);
		return NULL;
	}
	return advance(fd, state, writing, flags);
}
