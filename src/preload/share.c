// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Connections a forked descendant uses.
 *
 * A connected rsocket is its owner's (fdtab.c): its QP and rings live on
 * the owner's device files, which the kernel refuses to any other process,
 * and in a forked child its descriptor is the unconnected placeholder
 * socket.  Yet servers accept in one process and serve in a child
 * (socat's fork), or read a connection in a child while the parent writes
 * it (the rsync daemon).  So when a process other than the owner uses
 * such a descriptor, it asks the owner, and the owner relays: every
 * descriptor of the connection, in every process and the owner's own,
 * becomes one kernel socket (one end of a socketpair), and a thread of the
 * owner's moves bytes between the other end and the rsocket (relay.c).
 * From then on the kernel decides who reads what, as it does for a TCP
 * socket a fork shared; nothing depends on timing.  A child that never
 * touches the connection (a BGSAVE, a prefork worker) costs nothing: the
 * owner's path stays direct.
 *
 * The channels.  Every process holding connections of another's has one
 * AF_UNIX SOCK_SEQPACKET socket to that owner, made at the fork that
 * created it: by the owner itself, or by a holder, which hands the
 * owner's end over its own channel (NEWPROC, with what the new process
 * holds) before the fork returns, so the owner learns of the new process
 * before that process can say anything.  The owner then learns that a
 * process is gone from its end of the channel (end of file: exit, exec or
 * crash alike, no cooperation needed); a holder that closes its last
 * descriptor of a connection says so (RELEASE).  The owner counts, per
 * connection, the processes that hold it without having asked for it: a
 * connection the program closed while some still do stays (it may still
 * be asked for), as a TCP connection stays while any descriptor is open,
 * and is closed when the last of them lets it go.
 *
 * Asking (DEMAND): the first time a holder reads, writes, polls or adds
 * the descriptor to an epoll set (fdtab.c's rsp_use, epoll_ctl,
 * shutdown).  The owner answers with the relay's socket (OK and the
 * descriptor) or an error; a holder asks one question at a time.  Once a
 * connection is relayed, the owner keeps a spare copy of that socket only
 * while a holder may still ask; after that the relay ends when no process
 * holds the socket any more (relay.c), as TCP closes with its last
 * descriptor.
 *
 * A connection taken off a listener a fork shared, not answered yet when
 * the fork came (handed), is answered by the first process to use it
 * (rsocket(7)); the kernel lets exactly one do so.  A holder whose answer
 * is refused asks with DEMAND_ANSWERED, and the owner relays only if it
 * was the one that answered; otherwise the connection is another
 * holder's, which has no channel to this one, and the answer is an error.
 *
 * The owner's own descriptors move at the first question: each becomes
 * the relay's socket (rsp_swap_kernel, atomic against the program's close)
 * and its epoll memberships move to the kernel's sets.  A call of the
 * owner's that was already reading the rsocket must get its bytes before
 * any later byte reaches the socket, so the relay reads the rsocket only
 * once no such call is inside it (rsp_read_enter/leave).
 *
 * Limits: the owner must outlive the use (its exit ends the relay, and the
 * holders read an end of stream); a relayed connection stays relayed; a
 * holder's execve keeps only the placeholder.
 *
 * Locks: share_lock, then fdtab's and epoll's (taken inside it); neither
 * of those is held when share_lock is taken.
 *
 * Files: this one is the owner's side (its records, its thread, the
 * relays it starts, fork and exit); share_ask.c the holder's;
 * share_channel.c the messages between them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "preload.h"
#include "relay.h"
#include "share.h"
#include "util/thread.h"

/* --- the owner's side ---------------------------------------------------- */

/*
 * A connection of ours that a fork shared, named by a number of its own
 * (an rsocket's number is reused once the relay closes it).
 */
struct share_conn {
	uint32_t id;
	int rs;
	/* The program's file while it holds the connection directly. */
	struct rsp_file *f;
	/* Processes that hold it and have not asked for it. */
	int holders;
	/*
	 * Without f: the program closed its copy before it answered the
	 * connection (taken off a shared listener), and no relay of ours did.
	 */
	bool unanswered;
	bool relayed;
	/* Relayed: the socket handed to those who ask, while any may. */
	int spare;
	/* The relay, until it may read (relay.c: one allow, exactly). */
	struct rsp_relay *held;
	struct share_conn *next;
};

/* A process holding some of our connections. */
struct share_proc {
	int fd; /* our end of its channel */
	int n;
	uint32_t *ids; /* what it holds and has neither asked nor let go */
	struct share_proc *next;
};

static pthread_mutex_t share_lock = PTHREAD_MUTEX_INITIALIZER;
static struct share_conn *conns;
static struct share_proc *procs;
static uint32_t last_id;
/* Rings the thread when the list of processes changed. */
static int bell[2] = {-1, -1};
static bool serving;

static struct share_conn *find_conn(uint32_t id)
{
	struct share_conn *c;

	for (c = conns; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static void unlink_conn(struct share_conn *gone)
{
	struct share_conn **p;

	for (p = &conns; *p; p = &(*p)->next)
		if (*p == gone) {
			*p = gone->next;
			return;
		}
}

/* c's record goes once nobody holds it, asks for it or waits on it. */
static void conn_maybe_free(struct share_conn *c)
{
	if (c->holders || c->f || c->held)
		return;
	unlink_conn(c);
	free(c);
}

/*
 * c lost a holder: a connection no process holds any more, not relayed and
 * already closed by the program, is closed now (by the caller, outside
 * the lock: returns the rsocket, or -1).  A relayed one ends with its
 * socket (relay.c) once nobody can ask for it.
 */
static int holder_gone(struct share_conn *c)
{
	int rs = -1;

	if (--c->holders > 0)
		return -1;
	if (c->relayed && c->spare >= 0) {
		rsp_real.close(c->spare);
		c->spare = -1;
	}
	if (!c->relayed && !c->f)
		rs = c->rs;
	return rs;
}

/* Where @id is in p's holdings; -1 if p does not hold it. */
static int proc_find(const struct share_proc *p, uint32_t id)
{
	int i;

	for (i = 0; i < p->n; i++)
		if (p->ids[i] == id)
			return i;
	return -1;
}

/* Drops @id from p's holdings; whether p held it. */
static bool proc_drop(struct share_proc *p, uint32_t id)
{
	int i = proc_find(p, id);

	if (i < 0)
		return false;
	p->ids[i] = p->ids[--p->n];
	return true;
}

/*
 * The rsockets to close once share_lock is dropped (rclose may wait for
 * its sends): a process that goes may have held any number of them.
 */
struct share_closing {
	int *rs;
	int n, cap;
};

static void close_one(int rs)
{
	rsp_log("rsocket %d: closed, no process holds it any more", rs);
	rclose(rs);
}

static void close_later(struct share_closing *cl, int rs)
{
	int *grown;

	if (rs < 0)
		return;
	if (cl->n == cl->cap) {
		grown = realloc(cl->rs,
				(cl->cap ? 2 * cl->cap : 8) * sizeof(*grown));
		if (!grown) {
			close_one(rs); /* under the lock, but closed */
			return;
		}
		cl->rs = grown;
		cl->cap = cl->cap ? 2 * cl->cap : 8;
	}
	cl->rs[cl->n++] = rs;
}

static void close_all(struct share_closing *cl)
{
	int i;

	for (i = 0; i < cl->n; i++)
		close_one(cl->rs[i]);
	cl->n = 0;
}

/* --- relaying ---------------------------------------------------------- */

/*
 * The relay reads once no call of the program's is reading the rsocket
 * (@f's readers; NULL: none can be).  Under share_lock.
 */
static void reads_maybe_free(struct share_conn *c, struct rsp_file *f)
{
	if (!c->held || (f && (__atomic_load_n(&f->readers, __ATOMIC_SEQ_CST) &
			       ~RSP_FILE_GONE)))
		return;
	rsp_relay_allow_reads(c->held);
	c->held = NULL;
}

/*
 * The program's descriptors of c's file become the relay's socket @s2:
 * from now on its calls go to the kernel (the file stays mapped until the
 * program closes them, for getpeername and for a call that may be in it).
 */
static void move_descriptors(struct rsp_file *f, int s2)
{
	int *fds, n, i;

	n = rsp_fds_of(f, &fds);
	for (i = 0; i < n; i++)
		if (!rsp_swap_kernel(fds[i], f, s2))
			fds[i] = -1;
	/* The mapping stays (addresses, close) but the calls go to fd. */
	__atomic_store_n(&f->relayed, true, __ATOMIC_SEQ_CST);
	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			rsp_epoll_fell_back(fds[i]);
	free(fds);
}

static int start_relay(struct share_conn *c)
{
	struct rsp_relay *r;
	int sv[2], fl;

	if (share_pair(SOCK_STREAM, sv))
		return -1;
	/* The descriptors keep the rsocket's blocking mode. */
	fl = rfcntl(c->rs, F_GETFL);
	if (fl >= 0 && (fl & O_NONBLOCK))
		rsp_real.fcntl(sv[1], F_SETFL, O_NONBLOCK);
	/* A call of the program's may be reading: the relay waits for it. */
	r = rsp_relay_start(c->rs, sv[0], c->f != NULL);
	if (!r) {
		rsp_real.close(sv[0]);
		rsp_real.close(sv[1]);
		return -1;
	}
	c->held = c->f ? r : NULL;
	c->relayed = true;
	c->unanswered = false; /* the relay answers it (exec) */
	c->spare = sv[1];
	if (c->f) {
		move_descriptors(c->f, c->spare);
		c->f = NULL;
	}
	rsp_log("rsocket %d: relayed for the processes a fork shared it with",
		c->rs);
	return 0;
}

/*
 * Whether this process answered c's connection (or will: a relay answers
 * it at its first read).  The program's first use clears f->handed before
 * the call that answers it, so a holder refused because we answered first
 * finds it cleared.
 */
static bool answered_here(const struct share_conn *c)
{
	if (c->f)
		return !__atomic_load_n(&c->f->handed, __ATOMIC_ACQUIRE);
	return !c->unanswered;
}

/*
 * @if_answered: p failed to answer the connection itself (another process
 * had): relay it only if that was us, else our relay's answer would fail
 * the same way.
 */
static void answer(struct share_proc *p, uint32_t id, bool if_answered,
		   struct share_closing *cl)
{
	struct share_msg m = {.type = SHARE_ERR, .val = ENOTCONN};
	struct share_conn *c;
	struct rsp_file *f;
	int pass = -1;

	pthread_mutex_lock(&share_lock);
	c = find_conn(id);
	/* Only a connection it was given: a child keeps to its own. */
	if (c && !proc_drop(p, id))
		c = NULL;
	f = c ? c->f : NULL;
	if (c && if_answered && !answered_here(c)) {
		m.val = ECONNABORTED; /* as rsocket(7) says, without a relay */
	} else if (c && !c->relayed && start_relay(c)) {
		m.val = errno;
	} else if (c && c->spare >= 0) {
		m.type = SHARE_OK;
		pass = c->spare;
	}
	if (share_send(p->fd, &m, pass) < 0)
		rsp_log("share: cannot answer for connection %u: %s", id,
			strerror(errno));
	if (c) {
		/* The relay may read now, unless a call of ours is reading. */
		reads_maybe_free(c, f);
		/* It holds the relay's socket (or never will): the kernel counts. */
		close_later(cl, holder_gone(c));
		conn_maybe_free(c);
	}
	pthread_mutex_unlock(&share_lock);
}

/* --- the owner's thread -------------------------------------------------- */

static void ring(void)
{
	char b = 1;

	if (rsp_real.write(bell[1], &b, 1) < 0 && errno != EAGAIN)
		rsp_log("share: cannot wake the thread: %s", strerror(errno));
}

static void proc_free(struct share_proc *p)
{
	rsp_real.close(p->fd);
	free(p->ids);
	free(p);
}

/* p is gone (its channel ended): it holds nothing any more. */
static void proc_gone(struct share_proc *p, struct share_closing *cl)
{
	struct share_proc **pp;
	struct share_conn *c;
	int i;

	pthread_mutex_lock(&share_lock);
	for (pp = &procs; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	for (i = 0; i < p->n; i++)
		if ((c = find_conn(p->ids[i]))) {
			close_later(cl, holder_gone(c));
			conn_maybe_free(c);
		}
	pthread_mutex_unlock(&share_lock);
	proc_free(p);
}

/*
 * A new holder (@ids), its channel @fd, forked by @parent (NULL: by us):
 * what @parent does not hold, or is no longer ours, is left out.  Under
 * share_lock.
 */
static struct share_proc *proc_add(int fd, const uint32_t *ids, int n,
				   const struct share_proc *parent)
{
	struct share_proc *p = calloc(1, sizeof(*p));
	struct share_conn *c;
	int i;

	if (!p || !(p->ids = calloc(n ? n : 1, sizeof(*p->ids)))) {
		free(p);
		return NULL;
	}
	p->fd = fd;
	for (i = 0; i < n; i++)
		if ((!parent || proc_find(parent, ids[i]) >= 0) &&
		    (c = find_conn(ids[i]))) {
			c->holders++;
			p->ids[p->n++] = ids[i];
		}
	p->next = procs;
	procs = p;
	return p;
}

/* Handles one message of p's (into @m); false when p is gone. */
static bool serve_one(struct share_proc *p, struct share_msg *m,
		      struct share_closing *cl)
{
	int got;
	ssize_t n = share_recv(p->fd, m, SHARE_MAX_MSG, &got);

	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EPROTO))
			return true;
		proc_gone(p, cl);
		return false;
	}
	switch (m->type) {
	case SHARE_NEWPROC:
		got = share_high(got);
		pthread_mutex_lock(&share_lock);
		if (got < 0 || !proc_add(got, m->ids, (int)m->n, p)) {
			rsp_log("share: a new process cannot be followed");
			if (got >= 0)
				rsp_real.close(got);
		}
		pthread_mutex_unlock(&share_lock);
		return true;
	case SHARE_DEMAND:
	case SHARE_DEMAND_ANSWERED:
		answer(p, (uint32_t)m->val, m->type == SHARE_DEMAND_ANSWERED,
		       cl);
		break;
	case SHARE_RELEASE: {
		struct share_conn *c;

		pthread_mutex_lock(&share_lock);
		if ((c = find_conn((uint32_t)m->val)) &&
		    proc_drop(p, (uint32_t)m->val)) {
			close_later(cl, holder_gone(c));
			conn_maybe_free(c);
		}
		pthread_mutex_unlock(&share_lock);
		break;
	}
	default:
		rsp_log("share: an unknown message %u", m->type);
	}
	if (got >= 0)
		rsp_real.close(got);
	return true;
}

/* The channels to poll: the bell first. */
static int watch(struct pollfd **fds, struct share_proc ***who)
{
	struct share_proc *p;
	int n = 1;

	pthread_mutex_lock(&share_lock);
	for (p = procs; p; p = p->next)
		n++;
	*fds = calloc(n, sizeof(**fds));
	*who = calloc(n, sizeof(**who));
	if (*fds && *who) {
		(*fds)[0] = (struct pollfd){.fd = bell[0], .events = POLLIN};
		n = 1;
		for (p = procs; p; p = p->next, n++) {
			(*fds)[n] =
				(struct pollfd){.fd = p->fd, .events = POLLIN};
			(*who)[n] = p;
		}
	} else {
		free(*fds);
		free(*who);
		n = 0;
	}
	pthread_mutex_unlock(&share_lock);
	return n;
}

static void drain_bell(void)
{
	char b[64];

	while (rsp_real.read(bell[0], b, sizeof(b)) > 0)
		;
}

static void *serve(void *arg)
{
	struct share_msg *m = malloc(SHARE_MAX_MSG);
	struct share_closing cl = {0};
	struct share_proc **who;
	struct pollfd *fds;
	int n, i;

	(void)arg;
	if (!m) {
		rsp_log("share: the thread has no memory: nobody is relayed");
		return NULL;
	}
	for (;;) {
		n = watch(&fds, &who);
		if (!n) {
			/* No memory for the list: again in a while. */
			rsp_real.poll(NULL, 0, 100);
			continue;
		}
		if (rsp_real.poll(fds, n, -1) < 0) {
			if (errno != EINTR)
				rsp_log("share: the thread waits: %s",
					strerror(errno));
		} else {
			if (fds[0].revents)
				drain_bell();
			/* Only this thread removes processes: who[] stays. */
			for (i = 1; i < n; i++)
				if (fds[i].revents)
					serve_one(who[i], m, &cl);
			close_all(&cl);
		}
		free(fds);
		free(who);
	}
	return NULL;
}

/* Under share_lock. */
static int start_serving(void)
{
	int err;

	if (serving)
		return 0;
	if (pipe2(bell, O_CLOEXEC | O_NONBLOCK))
		return -1;
	bell[0] = share_high(bell[0]);
	bell[1] = share_high(bell[1]);
	err = cma_thread_detached(serve);
	if (err) {
		rsp_real.close(bell[0]);
		rsp_real.close(bell[1]);
		errno = err;
		return -1;
	}
	serving = true;
	return 0;
}

/* --- the program's calls ------------------------------------------------ */

bool rsp_read_enter(struct rsp_file *f)
{
	__atomic_add_fetch(&f->readers, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&f->relayed, __ATOMIC_SEQ_CST))
		return true;
	rsp_read_leave(f);
	return false;
}

void rsp_read_leave(struct rsp_file *f)
{
	/* Read first: once the count drops, a close may free f. */
	bool relayed = __atomic_load_n(&f->relayed, __ATOMIC_SEQ_CST);
	uint32_t id = f->share_id;
	struct share_conn *c;
	int left = __atomic_sub_fetch(&f->readers, 1, __ATOMIC_SEQ_CST);

	if (left & ~RSP_FILE_GONE)
		return; /* not the last reader */
	if (relayed) {
		pthread_mutex_lock(&share_lock);
		/* The last reader of the moved rsocket is out: relay reads. */
		if ((c = find_conn(id))) {
			reads_maybe_free(c, NULL);
			conn_maybe_free(c);
		}
		pthread_mutex_unlock(&share_lock);
	}
	if (left == RSP_FILE_GONE)
		rsp_file_free(f); /* closed under this call: the last one out */
}

bool rsp_share_keep(struct rsp_file *f)
{
	struct share_conn *c;
	bool keep = false;

	if (f->owner != rsp_pid) {
		share_release(f);
		return false;
	}
	pthread_mutex_lock(&share_lock);
	c = find_conn(f->share_id);
	if (f->relayed) {
		keep = true; /* the relay's (its record may be gone with it) */
	} else if (c && c->f == f) {
		keep = c->holders > 0; /* kept until they let it go */
		c->unanswered = __atomic_load_n(&f->handed, __ATOMIC_ACQUIRE);
		c->f = NULL;
		conn_maybe_free(c);
	}
	pthread_mutex_unlock(&share_lock);
	return keep;
}

/* --- exit --------------------------------------------------------------- */

static bool relayed_here(const struct rsp_file *f, void *arg)
{
	(void)arg;
	return f->relayed && f->owner == rsp_pid;
}

/*
 * exit(): the relays are this process's threads and end with it.  A
 * connection whose holders have all closed it may still have their last
 * bytes in the relay's socket, which a TCP connection would deliver after
 * its last close: this process's own descriptors of them close first (it
 * is exiting), then the exit waits for those relays, RSP_SHARE_EXIT_MS
 * at most.  Those whose holders live on are cut (rspreload(7), limits).
 */
__attribute__((destructor)) static void share_at_exit(void)
{
	struct rsp_file **files;
	struct share_conn *c;
	int n, i, k, nfds, *fds;

	if (!rsp_relay_count())
		return;
	n = rsp_files_where(relayed_here, NULL, &files);
	for (i = 0; i < n; i++) {
		nfds = rsp_fds_of(files[i], &fds);
		for (k = 0; k < nfds; k++)
			rsp_real.close(fds[k]);
		free(fds);
	}
	free(files);
	pthread_mutex_lock(&share_lock);
	for (c = conns; c; c = c->next)
		if (c->spare >= 0) {
			rsp_real.close(c->spare);
			c->spare = -1;
		}
	pthread_mutex_unlock(&share_lock);
	rsp_relay_finish_orphans(RSP_SHARE_EXIT_MS);
}

/* --- fork --------------------------------------------------------------- */

/*
 * A connected stream rsocket of ours that a child could use: made by
 * rsockets, moved from TCP by fork mode (fork.c), or taken off a listener
 * a fork shared and not answered yet (handed: a child that uses it
 * answers it itself, share_ask.c; one that execs asks us, and our relay
 * answers it).  One that is moving back to TCP (moveback.c) is every
 * process's to read already.
 */
static bool shareable(const struct rsp_file *f, void *arg)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	(void)arg;
	return f->owner == rsp_pid && !f->shared && !f->dgram && !f->detached &&
	       !f->relayed &&
	       !rgetpeername(f->rs, (struct sockaddr *)&ss, &len);
}

bool share_add_end(struct rsp_share_fork *sf, int owner, int give)
{
	if (sf->n > RSP_SHARE_MAX_LINKS) {
		rsp_real.close(give);
		return false;
	}
	sf->ends[sf->n].owner = owner;
	sf->ends[sf->n++].give = give;
	return true;
}

/* f's addresses, for the processes that will ask for it (once). */
static void keep_names(struct rsp_file *f)
{
	struct rsp_addrs *a;
	int *fds, n;

	if (f->addrs || !(a = calloc(1, sizeof(*a))))
		return;
	a->local_len = sizeof(a->local);
	a->peer_len = sizeof(a->peer);
	n = rsp_fds_of(f, &fds);
	if (n > 0 &&
	    !rsp_file_name(fds[0], f, false, (struct sockaddr *)&a->local,
			   &a->local_len) &&
	    !rsp_file_name(fds[0], f, true, (struct sockaddr *)&a->peer,
			   &a->peer_len))
		f->addrs = a;
	else
		free(a);
	free(fds);
}

bool rsp_share_name(int fd, bool peer, struct sockaddr *sa, socklen_t *len)
{
	struct rsp_file *f = rsp_peek(fd);
	const struct sockaddr_storage *ss;
	socklen_t have;

	if (!f || !f->forked || !f->addrs)
		return false;
	if (!sa || !len)
		return true; /* only whether it is one */
	ss = peer ? &f->addrs->peer : &f->addrs->local;
	have = peer ? f->addrs->peer_len : f->addrs->local_len;
	memcpy(sa, ss, *len < have ? *len : have);
	*len = have;
	return true;
}

/* Our connections go to the child: a channel to us, a record each. */
static void share_ours(struct rsp_share_fork *sf)
{
	struct rsp_file **files;
	struct share_conn *c;
	uint32_t *ids;
	int n, i, k = 0, sv[2];

	n = rsp_files_where(shareable, NULL, &files);
	ids = n ? calloc(n, sizeof(*ids)) : NULL;
	if (!ids) {
		free(files);
		return;
	}
	if (share_pair(SOCK_SEQPACKET, sv)) {
		rsp_log("share: no channel for the child: %s", strerror(errno));
		free(files);
		free(ids);
		return;
	}
	pthread_mutex_lock(&share_lock);
	for (i = 0; i < n && i < SHARE_MAX_IDS; i++) {
		c = files[i]->forked ? find_conn(files[i]->share_id) : NULL;
		if (!c && (c = calloc(1, sizeof(*c)))) {
			c->id = ++last_id;
			c->rs = files[i]->rs;
			c->spare = -1;
			c->next = conns;
			conns = c;
		}
		if (!c)
			continue;
		c->f = files[i];
		keep_names(files[i]);
		files[i]->share_id = c->id;
		files[i]->forked = true;
		ids[k++] = c->id;
	}
	if (start_serving() || !proc_add(sv[0], ids, k, NULL)) {
		rsp_log("share: the child's connections cannot be followed");
		rsp_real.close(sv[0]);
		rsp_real.close(sv[1]);
	} else {
		ring();
		share_add_end(sf, rsp_pid, sv[1]);
	}
	pthread_mutex_unlock(&share_lock);
	free(files);
	free(ids);
}

void rsp_share_before_fork(struct rsp_share_fork *sf)
{
	sf->n = 0;
	if (rsp_any()) {
		share_ours(sf);
		share_announce_held(sf);
	}
	/* The child gets the records whole, not halfway through a change. */
	pthread_mutex_lock(&share_lock);
}

/* In the child: the parent's records and channels are not ours. */
static void forget_parent(void)
{
	struct share_proc *p;
	struct share_conn *c;

	pthread_mutex_init(&share_lock, NULL);
	while ((p = procs)) {
		procs = p->next;
		proc_free(p);
	}
	while ((c = conns)) {
		conns = c->next;
		/* A spare socket here would keep the relay from its end. */
		if (c->spare >= 0)
			rsp_real.close(c->spare);
		free(c);
	}
	if (serving) {
		rsp_real.close(bell[0]);
		rsp_real.close(bell[1]);
		serving = false;
	}
	rsp_relay_forget_all_in_child();
}

void rsp_share_after_fork(struct rsp_share_fork *sf, pid_t pid)
{
	int i;

	if (pid != 0) {
		pthread_mutex_unlock(&share_lock);
		for (i = 0; i < sf->n; i++)
			rsp_real.close(sf->ends[i].give);
		return;
	}
	forget_parent();
	share_links_adopt(sf);
}
