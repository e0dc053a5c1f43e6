// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The relay pump (relay.h): one thread per relayed connection moves bytes
 * between the rsocket and the socketpair end the relay keeps, one buffer
 * each way.
 *
 * Every call the pump makes on either socket is non-blocking (MSG_DONTWAIT
 * on each call rather than O_NONBLOCK on the sockets: a blocking call of
 * the program's still inside the rsocket, the reason reads can be held,
 * must keep waiting as it was asked to).  The pump moves whatever moves,
 * and only when nothing does sleeps in one rpoll on both sockets that asks
 * only for what would let a direction go on; so a direction whose reader
 * is slow never holds up the other one.
 *
 * Ends, as a TCP connection's: the peer's end of stream (or its error: a
 * socketpair cannot carry a reset) is passed to the holders as
 * shutdown(SHUT_WR) once the bytes before it are written; the holders'
 * end of stream is passed to the peer as rshutdown(SHUT_WR) the same way.
 * When no holder can read any more (the socketpair hangs up, or a write
 * fails with EPIPE) what the peer still sends is read and dropped.  When
 * the peer can take nothing more (a send fails: it closed, or the
 * connection broke), the relay stops reading the socketpair with
 * shutdown(SHUT_RD), so that the holders' writes fail with EPIPE as they
 * would on TCP.  The relay ends when both directions have ended, or when
 * the holders are gone and what they wrote has been sent: then it closes
 * both sockets.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "cm/test_hooks.h"
#include "preload.h"
#include "relay.h"
#include "util/fd_high.h"
#include "util/thread.h"

/* Each direction's buffer: what one read takes at most. */
#define RSP_RELAY_BUF (64 * 1024)

/* How one direction reaches its two sockets. */
struct rsp_relay_ops {
	ssize_t (*take)(int fd, void *buf, size_t len);
	ssize_t (*give)(int fd, const void *buf, size_t len);
	int (*shut)(int fd);
	/* The sink is gone: tell the source's writers, if it can be told. */
	int (*refuse)(int fd);
	const char *from, *to; /* for the log */
};

/* One direction: bytes taken from @src wait in buf[head, tail) for @sink. */
struct rsp_relay_way {
	const struct rsp_relay_ops *ops;
	int src, sink;
	uint8_t *buf;
	size_t head, tail;
	bool src_ended; /* end of stream or an error: nothing more comes */
	bool sink_shut; /* the end of stream was passed on */
	bool sink_gone; /* the sink takes nothing more: bytes are dropped */
};

struct rsp_relay {
	int rs, end;
	/* Rung when reads are allowed; -1 when they never were held. */
	int wake;
	bool reads_allowed; /* atomic */
	/* The peer's bytes to the holders, and the holders' to the peer. */
	struct rsp_relay_way down, up;
	/* The end hung up: no holder reads or will write any more. */
	bool end_hung_up;
	/* Closed under the relay (a bug elsewhere): not ours to close. */
	bool end_lost;
	/* The thread, and the starter until it allows reads (atomic). */
	int refs;
	/* Where a child finds the end and the wake-up (below). */
	struct rsp_relay_slot *end_slot, *wake_slot;
};

/*
 * Where a child finds the descriptors the relays keep, with no lock to
 * take (a fork may come while a relay thread is anywhere, and a lock
 * held around fork would order itself against every lock the callers
 * hold then): a list that only grows, by an atomic push, of slots that
 * are reused and never freed.  A slot names a descriptor and the file it
 * is.  A relay closes its end first and frees the slot after: a child
 * forked in between finds the number closed, or taken by another file (a
 * socket's inode is its own), and leaves it alone; so no child keeps a
 * copy of an end, and none closes what is not one.  The wake-up goes the
 * other way round, freed and then closed, since its anonymous inode could
 * not tell it from another eventfd: a child forked in between keeps a
 * copy, which costs it a descriptor and nothing else.
 */
struct rsp_relay_slot {
	struct rsp_relay_slot *next; /* set once, before the push */
	int fd; /* atomic: a descriptor, or one of these */
	dev_t dev;
	ino_t ino;
};

#define RSP_SLOT_FREE -1
#define RSP_SLOT_FILLING -2 /* claimed, its file not written yet */

static struct rsp_relay_slot *rsp_relay_slots; /* atomic */
static int rsp_relays_running; /* atomic */

static struct rsp_relay_slot *rsp_slot_reuse(void)
{
	struct rsp_relay_slot *s =
		__atomic_load_n(&rsp_relay_slots, __ATOMIC_ACQUIRE);

	for (; s; s = s->next) {
		int free_fd = RSP_SLOT_FREE;

		if (__atomic_compare_exchange_n(
			    &s->fd, &free_fd, RSP_SLOT_FILLING, false,
			    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return s;
	}
	return NULL;
}

static struct rsp_relay_slot *rsp_slot_add(void)
{
	struct rsp_relay_slot *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->fd = RSP_SLOT_FILLING;
	s->next = __atomic_load_n(&rsp_relay_slots, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&rsp_relay_slots, &s->next, s, true,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	return s;
}

/* A slot naming @fd and its file; NULL with errno (EBADF: no such fd). */
static struct rsp_relay_slot *rsp_slot_claim(int fd)
{
	struct rsp_relay_slot *s;
	struct stat st;

	if (fstat(fd, &st))
		return NULL;
	s = rsp_slot_reuse();
	if (!s)
		s = rsp_slot_add();
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	__atomic_store_n(&s->fd, fd, __ATOMIC_RELEASE);
	return s;
}

static void rsp_slot_free(struct rsp_relay_slot *s)
{
	if (s)
		__atomic_store_n(&s->fd, RSP_SLOT_FREE, __ATOMIC_RELEASE);
}

/* In a child: whether the slot's number is still the file it named. */
static bool rsp_slot_still_names(const struct rsp_relay_slot *s)
{
	struct stat st;

	return s->fd >= 0 && !fstat(s->fd, &st) && st.st_dev == s->dev &&
	       st.st_ino == s->ino;
}

/* --- the sockets' calls, never blocking -------------------------------- */

static ssize_t rsp_rs_take(int rs, void *buf, size_t len)
{
	return rrecv(rs, buf, len, MSG_DONTWAIT);
}

static ssize_t rsp_rs_give(int rs, const void *buf, size_t len)
{
	return rsend(rs, buf, len, MSG_DONTWAIT);
}

static int rsp_rs_shut(int rs)
{
	return rshutdown(rs, SHUT_WR);
}

static ssize_t rsp_end_take(int end, void *buf, size_t len)
{
	return rsp_real.recv(end, buf, len, MSG_DONTWAIT);
}

/* No SIGPIPE: the thread blocks it, and it would stay pending there. */
static ssize_t rsp_end_give(int end, const void *buf, size_t len)
{
	return rsp_real.send(end, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static int rsp_end_shut(int end)
{
	return rsp_real.shutdown(end, SHUT_WR);
}

/*
 * The peer is gone: the holders' later writes fail with EPIPE, as on a
 * TCP connection the peer closed, instead of vanishing for ever.
 */
static int rsp_end_refuse(int end)
{
	return rsp_real.shutdown(end, SHUT_RD);
}

static const struct rsp_relay_ops rsp_relay_down_ops = {
	.take = rsp_rs_take,
	.give = rsp_end_give,
	.shut = rsp_end_shut,
	.from = "rsocket",
	.to = "socketpair",
};

static const struct rsp_relay_ops rsp_relay_up_ops = {
	.take = rsp_end_take,
	.give = rsp_rs_give,
	.shut = rsp_rs_shut,
	.refuse = rsp_end_refuse,
	.from = "socketpair",
	.to = "rsocket",
};

/* --- one direction ------------------------------------------------------ */

static bool rsp_way_empty(const struct rsp_relay_way *w)
{
	return w->head == w->tail;
}

/* A read is due: the buffer is empty and the source may say more. */
static bool rsp_way_wants_input(const struct rsp_relay_way *w)
{
	return !w->src_ended && rsp_way_empty(w);
}

static bool rsp_way_has_output(const struct rsp_relay_way *w)
{
	return !rsp_way_empty(w);
}

/* Nothing more will move this way. */
static bool rsp_way_over(const struct rsp_relay_way *w)
{
	return w->src_ended && rsp_way_empty(w) &&
	       (w->sink_shut || w->sink_gone);
}

static bool rsp_would_block(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK || err == EINTR;
}

/* From now on nothing reaches the sink: what is queued goes too. */
static void rsp_way_lose_sink(struct rsp_relay_way *w)
{
	w->sink_gone = true;
	w->head = w->tail = 0;
}

/* One read from the source; whether anything changed. */
static bool rsp_way_take(struct rsp_relay_way *w)
{
	ssize_t n = w->ops->take(w->src, w->buf, RSP_RELAY_BUF);

	if (n > 0) {
		w->head = 0;
		w->tail = w->sink_gone ? 0 : (size_t)n;
		return true;
	}
	if (n < 0 && rsp_would_block(errno))
		return false;
	/* A reset the holders cannot be told of ends the stream as well. */
	if (n < 0 && errno != ECONNRESET)
		rsp_log("relay of fd %d: reading the %s: %s", w->src,
			w->ops->from, strerror(errno));
	w->src_ended = true;
	return true;
}

/* One write to the sink; whether anything changed. */
static bool rsp_way_give(struct rsp_relay_way *w)
{
	ssize_t n = w->ops->give(w->sink, w->buf + w->head, w->tail - w->head);

	if (n > 0) {
		w->head += (size_t)n;
		return true;
	}
	if (n < 0 && rsp_would_block(errno))
		return false;
	/* EPIPE: nobody reads there any more, as TCP after SHUT_RD. */
	if (!(n < 0 && (errno == EPIPE || errno == ECONNRESET)))
		rsp_log("relay of fd %d: writing the %s: %s", w->sink,
			w->ops->to,
			n < 0 ? strerror(errno) : "nothing written");
	rsp_way_lose_sink(w);
	if (w->ops->refuse && w->ops->refuse(w->src))
		rsp_log("relay of fd %d: refusing the %s's bytes: %s", w->src,
			w->ops->from, strerror(errno));
	return true;
}

/* The source ended and its bytes are out: the sink is told. */
static void rsp_way_shut(struct rsp_relay_way *w)
{
	if (w->ops->shut(w->sink) && errno != ENOTCONN)
		rsp_log("relay of fd %d: ending the %s's stream: %s", w->sink,
			w->ops->to, strerror(errno));
	w->sink_shut = true;
}

/* Everything this way can do without waiting; whether anything moved. */
static bool rsp_way_step(struct rsp_relay_way *w, bool may_read)
{
	bool moved = false;

	if (may_read && rsp_way_wants_input(w))
		moved |= rsp_way_take(w);
	if (rsp_way_has_output(w))
		moved |= rsp_way_give(w);
	if (w->src_ended && rsp_way_empty(w) && !w->sink_shut &&
	    !w->sink_gone) {
		rsp_way_shut(w);
		moved = true;
	}
	return moved;
}

/* --- the relay ---------------------------------------------------------- */

/* Test hook (test_hooks.h): each look at the allow, each sleep. */
static void (*rsp_relay_hook)(enum rsp_relay_point at);

void rsp_relay_set_hook(void (*fn)(enum rsp_relay_point at))
{
	rsp_relay_hook = fn;
}

static bool rsp_relay_reads_allowed(const struct rsp_relay *r)
{
	if (rsp_relay_hook)
		rsp_relay_hook(RSP_RELAY_LOOK);
	return __atomic_load_n(&r->reads_allowed, __ATOMIC_ACQUIRE);
}

/*
 * Over when neither direction can move any more, or when the holders are
 * gone (nothing can reach them) and what they wrote was passed on.
 */
static bool rsp_relay_over(const struct rsp_relay *r)
{
	return rsp_way_over(&r->up) &&
	       (rsp_way_over(&r->down) || r->down.sink_gone);
}

/*
 * Whether to watch the end only for its hang-up: as long as the holders
 * could still be owed the peer's bytes (the hang-up is what says they
 * never will be, when nothing is being written to them).
 */
static bool rsp_relay_watches_hangup(const struct rsp_relay *r)
{
	return !r->end_hung_up && !r->down.sink_gone && !rsp_way_over(&r->down);
}

/*
 * What to wait for: only what would let a direction go on.  Unused
 * entries are -1 (rpoll skips them, as poll does): an rsocket that has
 * ended reports a hang-up whatever is asked, and would end every sleep.
 */
static void rsp_relay_watch(const struct rsp_relay *r, struct pollfd p[3])
{
	/*
	 * Read once: reads allowed between two looks would have the sleep
	 * watch neither the rsocket's input nor the wake-up that says so,
	 * and sleep through the allow (BUGS.md share-split-stall).
	 */
	bool reads = rsp_relay_reads_allowed(r);
	short rs_ev = 0, end_ev = 0;

	if (reads && rsp_way_wants_input(&r->down))
		rs_ev |= POLLIN;
	if (rsp_way_has_output(&r->up))
		rs_ev |= POLLOUT;
	if (rsp_way_wants_input(&r->up))
		end_ev |= POLLIN;
	if (rsp_way_has_output(&r->down))
		end_ev |= POLLOUT;
	p[0].fd = rs_ev ? r->rs : -1;
	p[0].events = rs_ev;
	p[1].fd = end_ev || rsp_relay_watches_hangup(r) ? r->end : -1;
	p[1].events = end_ev;
	p[2].fd = reads ? -1 : r->wake;
	p[2].events = POLLIN;
	p[0].revents = p[1].revents = p[2].revents = 0;
}

/*
 * The end hung up (every holder closed it, or shut both directions), or
 * is in error: nothing written there will be read.  Its queued bytes can
 * still be read, and are.
 */
static void rsp_relay_heard(struct rsp_relay *r, const struct pollfd p[3])
{
	uint64_t rung;

	if (p[1].revents & (POLLHUP | POLLERR | POLLNVAL) && !r->end_hung_up) {
		if (p[1].revents & POLLNVAL) {
			rsp_log("relay of rsocket %d: fd %d closed under it",
				r->rs, r->end);
			r->end_lost = true;
		}
		r->end_hung_up = true;
		rsp_way_lose_sink(&r->down);
	}
	if (p[2].revents && rsp_real.read(r->wake, &rung, sizeof(rung)) < 0 &&
	    errno != EAGAIN)
		rsp_log("relay of rsocket %d: wake-up: %s", r->rs,
			strerror(errno));
}

/* Move what moves until nothing does, then wait; until the relay is over. */
static void rsp_relay_pump(struct rsp_relay *r)
{
	struct pollfd p[3];

	while (!rsp_relay_over(r)) {
		bool moved = rsp_way_step(&r->down, rsp_relay_reads_allowed(r));

		moved |= rsp_way_step(&r->up, true);
		if (moved)
			continue;
		rsp_relay_watch(r, p);
		if (rsp_relay_hook)
			rsp_relay_hook(RSP_RELAY_SLEEP);
		if (rpoll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			rsp_log("relay of rsocket %d: rpoll: %s", r->rs,
				strerror(errno));
			return;
		}
		rsp_relay_heard(r, p);
	}
}

/* Its memory and wake-up (freed, then closed: see the slots), errno kept. */
static void rsp_relay_free(struct rsp_relay *r)
{
	int err = errno;

	rsp_slot_free(r->wake_slot);
	if (r->wake >= 0)
		rsp_real.close(r->wake);
	free(r->down.buf);
	free(r->up.buf);
	free(r);
	errno = err;
}

static void rsp_relay_put(struct rsp_relay *r)
{
	if (!__atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL))
		rsp_relay_free(r);
}

/* The end closes before its slot is freed (see the slots). */
static void rsp_relay_close(struct rsp_relay *r)
{
	if (!r->end_lost)
		rsp_real.close(r->end);
	rsp_slot_free(r->end_slot);
	if (rclose(r->rs))
		rsp_log("relay of rsocket %d: closing it: %s", r->rs,
			strerror(errno));
	rsp_log("rsocket %d: relay over", r->rs);
}

static void *rsp_relay_run(void *arg)
{
	struct rsp_relay *r = arg;

	rsp_relay_pump(r);
	rsp_relay_close(r);
	__atomic_sub_fetch(&rsp_relays_running, 1, __ATOMIC_RELEASE);
	rsp_relay_put(r);
	return NULL;
}

static void rsp_way_init(struct rsp_relay_way *w,
			 const struct rsp_relay_ops *ops, int src, int sink)
{
	w->ops = ops;
	w->src = src;
	w->sink = sink;
}

static struct rsp_relay *rsp_relay_new(int rs, int end, bool reads_held)
{
	struct rsp_relay *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->rs = rs;
	r->end = end;
	r->wake = -1;
	r->reads_allowed = !reads_held;
	r->refs = reads_held ? 2 : 1;
	rsp_way_init(&r->down, &rsp_relay_down_ops, rs, end);
	rsp_way_init(&r->up, &rsp_relay_up_ops, end, rs);
	r->down.buf = malloc(RSP_RELAY_BUF);
	r->up.buf = malloc(RSP_RELAY_BUF);
	if (!r->down.buf || !r->up.buf) {
		errno = ENOMEM;
		rsp_relay_free(r);
		return NULL;
	}
	if (reads_held) {
		int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

		r->wake = cma_fd_move_high(fd, rsp_real.fcntl, rsp_real.close);
		r->wake_slot = r->wake < 0 ? NULL : rsp_slot_claim(r->wake);
		if (!r->wake_slot) {
			rsp_relay_free(r);
			return NULL;
		}
	}
	return r;
}

struct rsp_relay *rsp_relay_start(int rs, int end, bool reads_held)
{
	struct rsp_relay *r;
	int err;

	if (rs < 0 || end < 0) {
		errno = EBADF;
		return NULL;
	}
	r = rsp_relay_new(rs, end, reads_held);
	if (!r)
		return NULL;
	r->end_slot = rsp_slot_claim(end);
	if (!r->end_slot) {
		rsp_relay_free(r);
		return NULL;
	}
	__atomic_add_fetch(&rsp_relays_running, 1, __ATOMIC_RELAXED);
	err = cma_thread_detached_arg(rsp_relay_run, r);
	if (err) {
		__atomic_sub_fetch(&rsp_relays_running, 1, __ATOMIC_RELAXED);
		rsp_slot_free(r->end_slot);
		rsp_relay_free(r);
		rsp_log("rsocket %d: no thread to relay it: %s", rs,
			strerror(err));
		errno = err;
		return NULL;
	}
	rsp_log("rsocket %d: relayed through fd %d%s", rs, end,
		reads_held ? ", its reads held" : "");
	return r;
}

void rsp_relay_allow_reads(struct rsp_relay *r)
{
	uint64_t one = 1;

	__atomic_store_n(&r->reads_allowed, true, __ATOMIC_RELEASE);
	if (rsp_real.write(r->wake, &one, sizeof(one)) < 0)
		rsp_log("relay of rsocket %d: cannot allow reads: %s", r->rs,
			strerror(errno));
	rsp_relay_put(r);
}

/*
 * The child's copy of the slots is still whole: a push is one atomic
 * store, and a claim writes the file before the number.
 */
void rsp_relay_forget_all_in_child(void)
{
	struct rsp_relay_slot *s;

	for (s = rsp_relay_slots; s; s = s->next) {
		if (rsp_slot_still_names(s))
			rsp_real.close(s->fd);
		s->fd = RSP_SLOT_FREE;
	}
	__atomic_store_n(&rsp_relays_running, 0, __ATOMIC_RELAXED);
}

void rsp_relay_finish_orphans(int ms)
{
	uint64_t deadline = rsp_now_ms() + (uint64_t)ms;
	struct rsp_relay_slot *s;
	struct pollfd p;
	int fd;

	if (!rsp_relay_count())
		return;
	s = __atomic_load_n(&rsp_relay_slots, __ATOMIC_ACQUIRE);
	for (; s; s = s->next) {
		fd = __atomic_load_n(&s->fd, __ATOMIC_ACQUIRE);
		p = (struct pollfd){.fd = fd};
		/* An end that hung up (a wake-up, an eventfd, never does). */
		if (fd < 0 || rsp_real.poll(&p, 1, 0) != 1 ||
		    !(p.revents & POLLHUP))
			continue;
		/* Its relay closes it, then frees the slot. */
		while (__atomic_load_n(&s->fd, __ATOMIC_ACQUIRE) == fd &&
		       rsp_now_ms() < deadline)
			usleep(1000);
	}
}

int rsp_relay_count(void)
{
	return __atomic_load_n(&rsp_relays_running, __ATOMIC_ACQUIRE);
}
