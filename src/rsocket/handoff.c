// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Listeners shared by fork(): every process that holds one may accept.
 *
 * A listener's connection requests can only be read by the process that
 * made its kernel id (src/cm/handoff.c says why), yet servers listen in
 * one process and accept in its children: nginx's workers, Apache's
 * prefork, PostgreSQL's postmaster forking per connection.  So when a
 * process that holds listeners forks, each listener gets a handoff:
 *
 *  - a queue, a SOCK_SEQPACKET socket pair that every process holding the
 *    listener inherits.  One record per request: the request's kernel id,
 *    its decoded rsocket parameters, and (SCM_RIGHTS) the file the kernel
 *    id is on.  A record is read whole by exactly one process, so one
 *    connection goes to one accepter, as with a TCP listener;
 *  - the relay: a thread of the process that owns the kernel id, which
 *    reads the listener's requests and queues them.  It names itself in a
 *    page shared by all the processes (MAP_SHARED), with a generation;
 *  - in every process that accepts, raccept (and rpoll's POLLIN) takes a
 *    record off the queue and adopts the kernel id into a channel of its
 *    own, bound to its own device context; the connection is then an
 *    ordinary rsocket of that process.  The relay's process accepts the
 *    same way, so no process is favoured.
 *
 * When the relay stops, another process takes over: the relay's close
 * queues a resign record for one accepter; its exit is seen by every
 * accepter on a pidfd.  The first to claim the shared page (compare and
 * swap on the relay's pid) moves the listener's kernel id into a channel
 * of its own (it holds the maker's file, inherited) or, if the id went
 * with its relay's file, listens again on the same address, and starts
 * its own relay.  Requests queued meanwhile stay valid: each record
 * carries its file.
 *
 * Before the first fork (or a second SO_REUSEPORT socket on its address)
 * nothing of this exists: a listener nobody shares accepts directly.
 * Closing a shared listener gives up this process's part only (the kernel
 * id goes when the last process holding its file does), as closing a TCP
 * listener does.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rs.h"
#include "util/fork_fresh.h"
#include "util/thread.h"

enum rs_handoff_kind {
	RS_HANDOFF_REQUEST = 1, /* adopt this kernel id (its file attached) */
	RS_HANDOFF_RESIGN = 2, /* the relay closed the listener: take over */
};

struct rs_handoff_msg {
	uint32_t kind;
	uint32_t handle; /* the request's kernel id */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	struct rs_conn_params peer;
	struct sockaddr_storage peer_addr;
	struct sockaddr_storage local_addr;
};

/*
 * An accepted socket not answered yet (RS_HANDED): its request, and its
 * number, the descriptor of the file the request's kernel id is on.
 */
struct rs_handed {
	struct rs_handoff_msg m;
};

/* The page every process holding the listener shares. */
struct rs_handoff_page {
	int relay_pid; /* the process reading requests (atomic) */
	uint32_t generation; /* takeovers so far (atomic) */
};

struct rs_handoff {
	int queue[2]; /* [0]: accepters read; [1]: the relay writes */
	struct rs_handoff_page *page;
	bool relayed; /* this process's relay thread serves it (under lock) */
	/* The maker's channel after a takeover: it keeps the number. */
	struct rdma_event_channel *spent;

	/* This process's wait set, remade in each process that waits. */
	pthread_mutex_t wait_lock;
	int owner; /* the process the fields below belong to */
	int wait_ep; /* epoll: the queue and the relay's pidfd */
	int relay_fd; /* pidfd of watched_pid; -1: none */
	int watched_pid;
};

/*
 * The process's listeners (shared at the next fork) and its relay thread.
 * The array and every relayed flag are under lock, and the relay thread
 * reads a listener's channel only under it, so a closing listener leaves
 * the array and is never touched again.  Taken after a socket's own locks.
 */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct rsocket **listeners;
static int nlisteners, listeners_cap;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool relay_running;
static int relay_bell = -1; /* eventfd: the relayed set changed */

static int rs_pidfd_open(int pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int rs_handoff_relay_pid(const struct rs_handoff *h)
{
	return __atomic_load_n(&h->page->relay_pid, __ATOMIC_ACQUIRE);
}

/* --- the relay ------------------------------------------------------------ */

static int rs_handoff_send(struct rsocket *l, const struct rs_handoff_msg *m)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = (void *)m, .iov_len = sizeof(*m)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;

	if (m->kind == RS_HANDOFF_REQUEST) {
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &l->channel->fd, sizeof(int));
	}
	/* Never waits: a full queue is a full backlog. */
	if (sendmsg(l->handoff->queue[1], &msg, MSG_DONTWAIT | MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(*m))
		return -1;
	return 0;
}

/*
 * One request off the listener's channel into its queue.  The library's
 * side of its id is given up only once the record is queued; a request
 * that is not an rsocket's, or finds the queue full, is refused here.
 */
static void rs_handoff_relay_request(struct rsocket *l,
				     struct rdma_cm_event *event)
{
	struct rdma_cm_id *id = event->id;
	struct rs_handoff_msg m = {.kind = RS_HANDOFF_REQUEST};
	int ret;

	m.responder_resources = event->param.conn.responder_resources;
	m.initiator_depth = event->param.conn.initiator_depth;
	ret = rs_conn_decode(event->param.conn.private_data,
			     event->param.conn.private_data_len, &m.peer);
	memcpy(&m.peer_addr, rdma_get_peer_addr(id),
	       rdma_get_peer_addr(id)->sa_family == AF_INET6
		       ? sizeof(struct sockaddr_in6)
		       : sizeof(struct sockaddr_in));
	memcpy(&m.local_addr, rdma_get_local_addr(id),
	       rdma_get_local_addr(id)->sa_family == AF_INET6
		       ? sizeof(struct sockaddr_in6)
		       : sizeof(struct sockaddr_in));
	rdma_ack_cm_event(event);
	if (!ret && !cma_id_handle(id, &m.handle) && !rs_handoff_send(l, &m)) {
		cma_id_hand_off(id);
		return;
	}
	rdma_reject(id, NULL, 0);
	rdma_destroy_id(id);
}

static void rs_handoff_relay_drain(struct rsocket *l)
{
	struct rdma_cm_event *event;

	while (!rdma_get_cm_event(l->channel, &event)) {
		if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			rs_handoff_relay_request(l, event);
		else
			rdma_ack_cm_event(event);
	}
}

/* Under lock: the sleep set, the bell first.  The number of entries. */
static int rs_handoff_relay_set(struct pollfd **pfd, int *cap)
{
	int i, n = 1;

	if (nlisteners + 1 > *cap) {
		struct pollfd *grown =
			realloc(*pfd, (size_t)(nlisteners + 1) * sizeof(**pfd));

		if (!grown)
			return 0;
		*pfd = grown;
		*cap = nlisteners + 1;
	}
	(*pfd)[0] = (struct pollfd){.fd = relay_bell, .events = POLLIN};
	for (i = 0; i < nlisteners; i++)
		if (listeners[i]->handoff && listeners[i]->handoff->relayed)
			(*pfd)[n++] =
				(struct pollfd){.fd = listeners[i]->channel->fd,
						.events = POLLIN};
	return n;
}

/*
 * The relay thread: sleeps on every relayed listener's channel and the
 * bell; reads what is there under lock.  A wake-up for a listener that
 * closed meanwhile finds it gone from the array.
 */
static void *rs_handoff_relay(void *arg)
{
	struct pollfd *pfd = NULL;
	uint64_t rung;
	int i, k, n, cap = 0;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		n = rs_handoff_relay_set(&pfd, &cap);
		pthread_mutex_unlock(&lock);
		if (!n) {
			usleep(10000); /* no memory for the set: bounded wait */
			continue;
		}
		if (poll(pfd, (nfds_t)n, -1) <= 0)
			continue;
		if (pfd[0].revents && read(relay_bell, &rung, sizeof(rung)) < 0)
			rung = 0;
		pthread_mutex_lock(&lock);
		for (i = 0; i < nlisteners; i++) {
			struct rsocket *l = listeners[i];

			if (!l->handoff || !l->handoff->relayed)
				continue;
			for (k = 1; k < n && pfd[k].fd != l->channel->fd; k++)
				;
			if (k < n && pfd[k].revents)
				rs_handoff_relay_drain(l);
		}
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static void rs_handoff_ring(void)
{
	uint64_t one = 1;

	if (relay_bell >= 0 && write(relay_bell, &one, sizeof(one)) < 0)
		return; /* the counter is full: it rings already */
}

/* Under lock: this process reads @l's requests from now on. */
static int rs_handoff_relay_start_locked(struct rsocket *l)
{
	int ret;

	if (relay_bell < 0)
		relay_bell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (relay_bell < 0)
		return -1;
	if (!relay_running) {
		ret = cma_thread_detached(rs_handoff_relay);
		if (ret)
			return cma_err(ret);
		relay_running = true;
	}
	l->handoff->relayed = true;
	rs_handoff_ring();
	return 0;
}

/* --- sharing at fork ------------------------------------------------------ */

static struct rs_handoff *rs_handoff_make(void)
{
	struct rs_handoff *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->wait_ep = h->relay_fd = -1;
	h->page = mmap(NULL, sizeof(*h->page), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (h->page == MAP_FAILED) {
		free(h);
		return NULL;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, h->queue)) {
		munmap(h->page, sizeof(*h->page));
		free(h);
		return NULL;
	}
	h->page->relay_pid = (int)getpid();
	pthread_mutex_init(&h->wait_lock, NULL);
	return h;
}

static void rs_handoff_prepare(void)
{
	int i;

	pthread_mutex_lock(&lock);
	/* One whose handoff cannot be made stays this process's only. */
	for (i = 0; i < nlisteners; i++)
		if (!listeners[i]->handoff)
			__atomic_store_n(&listeners[i]->handoff,
					 rs_handoff_make(), __ATOMIC_RELEASE);
}

static void rs_handoff_parent(void)
{
	struct rs_handoff *h;
	int i;

	for (i = 0; i < nlisteners; i++) {
		h = listeners[i]->handoff;
		if (h && !h->relayed &&
		    rs_handoff_relay_pid(h) == (int)getpid())
			rs_handoff_relay_start_locked(listeners[i]);
	}
	pthread_mutex_unlock(&lock);
}

/* The child has no relay thread and none of its parent's wait sets. */
static void rs_handoff_child(void)
{
	struct rs_handoff *h;
	int i;

	/* The forking thread's, taken in prepare. */
	pthread_mutex_unlock(&lock);
	relay_running = false;
	if (relay_bell >= 0)
		close(relay_bell);
	relay_bell = -1;
	for (i = 0; i < nlisteners; i++) {
		h = listeners[i]->handoff;
		if (!h)
			continue;
		pthread_mutex_init(&h->wait_lock, NULL);
		h->relayed = false;
		if (h->wait_ep >= 0)
			close(h->wait_ep);
		if (h->relay_fd >= 0)
			close(h->relay_fd);
		h->wait_ep = h->relay_fd = -1;
		h->owner = h->watched_pid = 0;
	}
}

static void rs_handoff_init(void)
{
	pthread_atfork(rs_handoff_prepare, rs_handoff_parent, rs_handoff_child);
}

void rs_handoff_listen(struct rsocket *l)
{
	pthread_once(&once, rs_handoff_init);
	pthread_mutex_lock(&lock);
	if (nlisteners == listeners_cap) {
		int cap = listeners_cap ? 2 * listeners_cap : 8;
		struct rsocket **grown =
			realloc(listeners, (size_t)cap * sizeof(*listeners));

		if (!grown) {
			/* Not shareable: its children cannot accept on it. */
			pthread_mutex_unlock(&lock);
			return;
		}
		listeners = grown;
		listeners_cap = cap;
	}
	listeners[nlisteners++] = l;
	pthread_mutex_unlock(&lock);
}

/* --- SO_REUSEPORT ---------------------------------------------------------- */

static bool rs_same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;

	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return a4->sin_port == b4->sin_port &&
		       a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return a6->sin6_port == b6->sin6_port &&
		       !memcmp(&a6->sin6_addr, &b6->sin6_addr,
			       sizeof(a6->sin6_addr));
	return false;
}

/*
 * TCP lets sockets that all set SO_REUSEPORT listen on one address, each
 * getting some of its connections; rdma_cm has one listener per address.
 * So a socket bound where a listener of this process (with SO_REUSEPORT)
 * listens joins it: it accepts from the listener's queue, which is made
 * now rather than at the next fork.  nginx's "reuseport" makes one such
 * socket per worker before it forks them.
 */
bool rs_handoff_join(struct rsocket *rs, const struct sockaddr *addr)
{
	struct rsocket *l = NULL;
	int i;

	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return false;
	pthread_once(&once, rs_handoff_init);
	pthread_mutex_lock(&lock);
	for (i = 0; i < nlisteners && !l; i++)
		if ((listeners[i]->so_opts & (1ULL << SO_REUSEPORT)) &&
		    rs_same_addr(rdma_get_local_addr(listeners[i]->cm_id),
				 addr))
			l = listeners[i];
	if (l && !l->handoff)
		__atomic_store_n(&l->handoff, rs_handoff_make(),
				 __ATOMIC_RELEASE);
	if (l && l->handoff && !l->handoff->relayed &&
	    rs_handoff_relay_pid(l->handoff) == (int)getpid())
		rs_handoff_relay_start_locked(l);
	if (!l || !l->handoff ||
	    (!l->handoff->relayed &&
	     rs_handoff_relay_pid(l->handoff) == (int)getpid())) {
		pthread_mutex_unlock(&lock);
		return false;
	}
	rs_ref(l);
	__atomic_add_fetch(&l->reuse_members, 1, __ATOMIC_ACQ_REL);
	rs->reuse_of = l;
	pthread_mutex_unlock(&lock);
	return true;
}

/* --- accepting ------------------------------------------------------------ */

/*
 * This process's wait set for @l: the queue and the relay's pidfd, made
 * or brought up to date (a takeover changes the relay).  -1 if it cannot
 * be made; the queue alone is then watched (a relay's exit goes unseen).
 */
static int rs_handoff_wait_fd(struct rsocket *l)
{
	struct rs_handoff *h = l->handoff;
	int me = (int)getpid(), relay = rs_handoff_relay_pid(h);
	struct epoll_event ev = {.events = EPOLLIN};

	pthread_mutex_lock(&h->wait_lock);
	if (h->owner != me) {
		h->owner = me;
		h->wait_ep = h->relay_fd = -1;
		h->watched_pid = 0;
	}
	if (h->wait_ep < 0) {
		h->wait_ep = epoll_create1(EPOLL_CLOEXEC);
		if (h->wait_ep >= 0 &&
		    epoll_ctl(h->wait_ep, EPOLL_CTL_ADD, h->queue[0], &ev)) {
			close(h->wait_ep);
			h->wait_ep = -1;
		}
	}
	if (h->wait_ep >= 0 && relay != h->watched_pid) {
		if (h->relay_fd >= 0)
			close(h->relay_fd); /* leaves the epoll set with it */
		h->relay_fd = relay == me ? -1 : rs_pidfd_open(relay);
		h->watched_pid = relay;
		if (h->relay_fd >= 0)
			epoll_ctl(h->wait_ep, EPOLL_CTL_ADD, h->relay_fd, &ev);
	}
	pthread_mutex_unlock(&h->wait_lock);
	return h->wait_ep;
}

/* Has the relay @pid gone (exited; its pidfd is readable)? */
static bool rs_handoff_relay_gone(struct rsocket *l, int pid)
{
	struct rs_handoff *h = l->handoff;
	struct pollfd pfd = {.events = POLLIN};
	bool gone;

	if (pid == (int)getpid())
		return false;
	rs_handoff_wait_fd(l);
	pthread_mutex_lock(&h->wait_lock);
	pfd.fd = h->watched_pid == pid ? h->relay_fd : -1;
	if (pfd.fd < 0)
		gone = pid <= 0 || (kill(pid, 0) && errno == ESRCH);
	else
		gone = poll(&pfd, 1, 0) == 1;
	pthread_mutex_unlock(&h->wait_lock);
	return gone;
}

/*
 * The listener again on its own address, in @ch: its kernel id went with
 * the file of a relay that made it.
 */
static int rs_handoff_relisten(struct rsocket *l, struct rdma_event_channel *ch)
{
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, l, RDMA_PS_TCP))
		return -1;
	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_PEER2PEER,
			    &(int){0}, sizeof(int)) ||
	    rdma_bind_addr(id, rdma_get_local_addr(l->cm_id)) ||
	    rdma_listen(id, 0)) {
		int err = errno;

		rdma_destroy_id(id);
		return cma_err(err);
	}
	cma_id_hand_off(l->cm_id);
	l->cm_id = id;
	return 0;
}

/*
 * Become the relay of @l in place of @pid, unless another process did
 * first.  The listener's kernel id moves into a channel of this process;
 * the old channel stays open (its number may be the socket's).
 */
static int rs_handoff_take_over(struct rsocket *l, int pid)
{
	struct rs_handoff *h = l->handoff;
	int me = (int)getpid();
	struct rdma_event_channel *ch;

	if (!__atomic_compare_exchange_n(&h->page->relay_pid, &pid, me, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return 0; /* another process is the relay now */
	__atomic_add_fetch(&h->page->generation, 1, __ATOMIC_RELEASE);
	ch = rs_cm_channel();
	if (!ch ||
	    (cma_id_take_over(l->cm_id, ch) && rs_handoff_relisten(l, ch))) {
		int err = errno;

		if (ch)
			rdma_destroy_event_channel(ch);
		/* Nobody relays: the next accept in any process tries. */
		__atomic_store_n(&h->page->relay_pid, 0, __ATOMIC_RELEASE);
		return cma_err(err);
	}
	l->cm_id->context = l;
	if (h->spent)
		rdma_destroy_event_channel(l->channel);
	else
		h->spent = l->channel;
	l->channel = ch;
	pthread_mutex_lock(&lock);
	rs_handoff_relay_start_locked(l);
	pthread_mutex_unlock(&lock);
	return 0;
}

/*
 * A request taken off the queue becomes a socket that is not answered
 * yet: the process that first uses it answers it (rs_handoff_claim), so a
 * server that accepts and hands the connection to a child it forks
 * (PostgreSQL, a daemon forking per connection) has the child answer it,
 * in its own device context.  Its number is the descriptor of the file
 * the request's kernel id is on, which it holds until then.
 */
static int rs_handoff_hand(struct rsocket *l, const struct rs_handoff_msg *m,
			   int from_fd)
{
	struct rsocket *rs = rs_alloc(l, SOCK_STREAM);

	if (!rs || !(rs->handed = malloc(sizeof(*rs->handed)))) {
		if (rs)
			rs_put(rs);
		close(from_fd);
		return cma_err(ENOMEM);
	}
	rs->handed->m = *m;
	rs->own_index = true;
	rs->index = from_fd;
	rs_set_state(rs, RS_HANDED);
	if (rs_insert(rs, from_fd)) {
		int err = errno;

		rs_put(rs);
		return cma_err(err);
	}
	return from_fd;
}

const struct sockaddr *rs_handed_peer(const struct rsocket *rs)
{
	return (const struct sockaddr *)&rs->handed->m.peer_addr;
}

const struct sockaddr *rs_handed_local(const struct rsocket *rs)
{
	return (const struct sockaddr *)&rs->handed->m.local_addr;
}

/*
 * Claims are rare (one per connection): one at a time per process.  Held
 * across the answer (CM calls), so a forked child makes it afresh (a
 * claim the parent was inside is then one of two processes' claims of a
 * connection: one answers it, the other's adoption fails).
 */
CMA_FRESH_MUTEX(claim_lock)

/*
 * Adopt the request into a channel of this process and answer it.  The
 * socket's number then drops the request's file (it would keep the
 * relay's alive): /dev/null takes its place until the socket is freed.
 */
static int rs_handoff_answer(struct rsocket *rs)
{
	const struct rs_handoff_msg *m = &rs->handed->m;
	struct rdma_conn_param request = {
		.responder_resources = m->responder_resources,
		.initiator_depth = m->initiator_depth,
	};
	struct rdma_event_channel *ch = rs_cm_channel();
	struct rdma_cm_id *id;
	int null;

	if (!ch)
		return -1;
	if (cma_id_adopt(ch, rs->index, m->handle, rs, &request, &id)) {
		int err = errno;

		rdma_destroy_event_channel(ch);
		/* The peer gave up, or another process answered it. */
		return cma_err(err == ENOMEM ? err : ECONNABORTED);
	}
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, rs->index);
		close(null);
	}
	return rs_answer(rs, id, ch, &m->peer);
}

int rs_handoff_claim(struct rsocket *rs)
{
	int ret = 0;

	pthread_mutex_lock(&claim_lock);
	if (rs_state(rs) == RS_HANDED) {
		ret = rs_handoff_answer(rs);
		free(rs->handed);
		rs->handed = NULL;
		if (ret) { /* before another thread could look again */
			rs->err = errno;
			rs_set_state(rs, RS_CONNECT_ERROR);
		}
	}
	pthread_mutex_unlock(&claim_lock);
	return ret;
}

/* One record off the queue: 1 and the record, 0 if none, -1/errno. */
static int rs_handoff_recv(struct rsocket *l, struct rs_handoff_msg *m, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = m, .iov_len = sizeof(*m)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf)};
	struct cmsghdr *c;
	ssize_t n;

	*fd = -1;
	n = recvmsg(l->handoff->queue[0], &msg,
		    MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	/* Only our own processes write here; anything else is dropped. */
	if (n != (ssize_t)sizeof(*m) || (msg.msg_flags & MSG_CTRUNC) ||
	    (m->kind == RS_HANDOFF_REQUEST && *fd < 0)) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		m->kind = 0;
	}
	return 1;
}

/*
 * What the queue holds next, handled: a request adopted (its socket's
 * number), a resignation taken over, or nothing (-1/EAGAIN).
 */
static int rs_handoff_take(struct rsocket *l)
{
	struct rs_handoff_msg m;
	int fd, ret;

	ret = rs_handoff_recv(l, &m, &fd);
	if (ret <= 0)
		return ret ? -1 : cma_err(EAGAIN);
	if (m.kind == RS_HANDOFF_RESIGN) {
		if (rs_handoff_take_over(l, rs_handoff_relay_pid(l->handoff)))
			return -1;
		return cma_err(EAGAIN);
	}
	if (m.kind != RS_HANDOFF_REQUEST)
		return cma_err(EAGAIN);
	return rs_handoff_hand(l, &m, fd);
}

int rs_handoff_accept(struct rsocket *l, bool nonblock)
{
	int index, pid, ret;

	for (;;) {
		index = rs_handoff_take(l);
		if (index >= 0 || errno != EAGAIN)
			return index;
		pid = rs_handoff_relay_pid(l->handoff);
		if (rs_handoff_relay_gone(l, pid)) {
			if (rs_handoff_take_over(l, pid))
				return -1;
			continue;
		}
		if (nonblock)
			return cma_err(EAGAIN);
		ret = rs_sleep_fd_or_close(l, rs_handoff_sleep_fd(l), POLLIN,
					   -1);
		if (ret < 0)
			return -1;
	}
}

bool rs_handoff_ready(struct rsocket *l)
{
	struct pollfd pfd = {.fd = l->handoff->queue[0], .events = POLLIN};

	if (poll(&pfd, 1, 0) == 1)
		return true;
	/* A relay that went is taken over by the next accept: ready. */
	return rs_handoff_relay_gone(l, rs_handoff_relay_pid(l->handoff));
}

int rs_handoff_sleep_fd(struct rsocket *l)
{
	int fd = rs_handoff_wait_fd(l);

	return fd >= 0 ? fd : l->handoff->queue[0];
}

/* --- closing -------------------------------------------------------------- */

void rs_handoff_close(struct rsocket *l)
{
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nlisteners && listeners[i] != l; i++)
		;
	if (i < nlisteners)
		listeners[i] = listeners[--nlisteners];
	pthread_mutex_unlock(&lock);
}

/*
 * A shared listener's end in this process: the kernel id stays for the
 * other processes holding its file (the kernel destroys it with the last
 * of them).  The relay's process names a successor last, when its own
 * file is closed and the id can move or its address be taken again.
 */
bool rs_handoff_free(struct rsocket *l)
{
	struct rs_handoff *h = l->handoff;
	struct rs_handoff_msg m = {.kind = RS_HANDOFF_RESIGN};
	bool relay;

	if (l->listen_added)
		rs_handoff_close(l); /* if rclose did not */
	if (!h)
		return false;
	relay = rs_handoff_relay_pid(h) == (int)getpid();
	if (l->cm_id)
		cma_id_hand_off(l->cm_id);
	l->cm_id = NULL;
	if (l->channel)
		rdma_destroy_event_channel(l->channel);
	l->channel = NULL;
	if (h->spent)
		rdma_destroy_event_channel(h->spent);
	if (relay)
		rs_handoff_send(l, &m);
	if (h->owner == (int)getpid()) {
		if (h->wait_ep >= 0)
			close(h->wait_ep);
		if (h->relay_fd >= 0)
			close(h->relay_fd);
	}
	close(h->queue[0]);
	close(h->queue[1]);
	munmap(h->page, sizeof(*h->page));
	pthread_mutex_destroy(&h->wait_lock);
	free(h);
	l->handoff = NULL;
	return true;
}
