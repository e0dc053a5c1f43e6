// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The holder's side of a connection a fork shared (share.c): its channels
 * to the owners whose connections it holds, the question at its first use
 * (the answer is the relay's socket, which every descriptor of it in this
 * process becomes), the word that it holds one no more, and, at its own
 * fork, the new process announced to each owner with its own channel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "share.h"

/* This process's channel to an owner whose connections it holds. */
struct share_link {
	int owner;
	int fd;
};

static struct share_link links[RSP_SHARE_MAX_LINKS];
static int nlinks;
/* One question at a time: the answer needs no tag. */
static pthread_mutex_t ask_lock = PTHREAD_MUTEX_INITIALIZER;

static struct share_link *link_to(int owner)
{
	int i;

	for (i = 0; i < nlinks; i++)
		if (links[i].owner == owner)
			return &links[i];
	return NULL;
}

/*
 * The channel to l's owner is unusable (gone, or an answer late): closing
 * it tells the owner that this process holds nothing of its any more.
 */
static void link_drop(struct share_link *l)
{
	rsp_real.close(l->fd);
	*l = links[--nlinks];
}

/*
 * Sends @m on @l and waits for the answer; its descriptor.  No clock
 * bounds the wait: an owner that is gone ends the channel, and one that
 * lives answers (a stopped one holds its connection up, as it would any
 * peer's).
 */
static int ask(struct share_link *l, const struct share_msg *m, int *err)
{
	struct share_msg a;
	ssize_t n = share_send(l->fd, m, -1);
	int got;

	if (n >= 0)
		n = share_recv(l->fd, &a, sizeof(a), &got);
	if (n <= 0) {
		/* The owner is gone, or a torn answer: this channel is over. */
		*err = n ? errno : ENOTCONN;
		link_drop(l);
		return -1;
	}
	if (a.type != SHARE_OK || got < 0) {
		*err = a.type == SHARE_ERR ? a.val : EPROTO;
		if (got >= 0)
			rsp_real.close(got);
		return -1;
	}
	return got;
}

/*
 * This process's descriptors of f become @s2; f stays mapped to them (its
 * addresses answer getpeername), claimed: their calls go to the kernel.
 */
static void claim_descriptors(struct rsp_file *f, int s2)
{
	int *fds, n, i, fl;

	n = rsp_fds_of(f, &fds);
	/*
	 * The placeholder's status flags are the program's: keep them (on
	 * the one open file all holders now share, as a TCP socket's are).
	 */
	fl = n ? rsp_real.fcntl(fds[0], F_GETFL) : -1;
	if (fl >= 0)
		rsp_real.fcntl(s2, F_SETFL,
			       (rsp_real.fcntl(s2, F_GETFL) & ~O_NONBLOCK) |
				       (fl & O_NONBLOCK));
	for (i = 0; i < n; i++)
		rsp_swap_kernel(fds[i], f, s2);
	/* Mapped still, for getpeername; the calls go to the descriptor. */
	__atomic_store_n(&f->claimed, true, __ATOMIC_RELEASE);
	free(fds);
}

bool share_claimable(const struct rsp_file *f)
{
	return f && f->forked && f->owner != rsp_pid &&
	       !__atomic_load_n(&f->claimed, __ATOMIC_ACQUIRE);
}

/*
 * Asks f's owner for the relay (@question: SHARE_DEMAND or
 * SHARE_DEMAND_ANSWERED); @handed_too: even a connection not answered
 * yet, which this process would otherwise answer itself.
 */
static bool claim(int fd, uint32_t question, bool handed_too)
{
	struct share_msg m = {.type = question};
	struct share_link *l;
	struct rsp_file *f = rsp_peek(fd);
	int s2 = -1, err = ENOTCONN;

	if (!share_claimable(f) || (f->handed && !handed_too))
		return false;
	pthread_mutex_lock(&ask_lock);
	f = rsp_peek(fd);
	if (!share_claimable(f) || (f->handed && !handed_too)) {
		pthread_mutex_unlock(&ask_lock);
		return f && f->claimed; /* another thread asked meanwhile */
	}
	if ((l = link_to(f->owner))) {
		m.val = (int32_t)f->share_id;
		s2 = ask(l, &m, &err);
	}
	if (s2 >= 0) {
		f->handed = false; /* answered, by the owner or its relay */
		claim_descriptors(f, s2);
		rsp_real.close(s2);
		rsp_log("fd %d: relayed by process %d, which owns it", fd,
			f->owner);
	} else {
		/* Not again at every call: as before, only the placeholder. */
		f->forked = false;
		rsp_log("fd %d: process %d cannot relay it: %s", fd, f->owner,
			strerror(err));
	}
	pthread_mutex_unlock(&ask_lock);
	return s2 >= 0;
}

bool rsp_share_claim(int fd)
{
	return claim(fd, SHARE_DEMAND, false);
}

bool rsp_share_claim_before_exec(int fd)
{
	/*
	 * A connection not answered yet cannot be answered by the new image
	 * (its request's file is this image's, and daemons close every
	 * descriptor they do not know at their start): the owner answers.
	 */
	return claim(fd, SHARE_DEMAND, true);
}

bool rsp_share_answer(struct rsp_file *f, int fd)
{
	struct pollfd p = {.fd = f->rs, .events = POLLOUT};

	if (!share_claimable(f))
		return false; /* ours: its own call answers it */
	/*
	 * A poll that does not wait answers it (rsocket's first use).  The
	 * kernel lets one process answer: if another did, the socket is in
	 * error, and the owner relays it if the owner was that process.
	 */
	if (rsp_rpoll(&p, 1, 0) >= 0 && !(p.revents & POLLERR))
		return false;
	return claim(fd, SHARE_DEMAND_ANSWERED, true);
}

void rsp_share_answering(struct rsp_file *f)
{
	/* Its owner keeps a copy of it for us while we may ask: let it go. */
	if (f->forked && f->owner != rsp_pid) {
		share_release(f);
		f->forked = false;
	}
}

bool rsp_share_lost(int fd)
{
	const struct rsp_file *f = rsp_peek(fd);

	/*
	 * Fork mode's descriptor is the TCP connection, which the peer no
	 * longer reads (its bytes go over RDMA): without the relay this
	 * process's calls fail rather than talk to nobody.
	 */
	return f && f->via_tcp && f->owner != rsp_pid && !f->detached &&
	       !__atomic_load_n(&f->claimed, __ATOMIC_ACQUIRE);
}

/* Another's connection this process holds, owned by *(int *)arg. */
static bool held_of(const struct rsp_file *f, void *arg)
{
	return f->owner == *(int *)arg && share_claimable(f);
}

/* What we hold of @l's owner goes to the child too: it gets a channel. */
static void share_held(struct rsp_share_fork *sf, struct share_link *l)
{
	struct rsp_file **files;
	struct share_msg *m;
	int n, i, sv[2];

	n = rsp_files_where(held_of, &l->owner, &files);
	if (n > SHARE_MAX_IDS)
		n = SHARE_MAX_IDS;
	m = n ? malloc(SHARE_HDR + n * sizeof(m->ids[0])) : NULL;
	if (!m) {
		free(files);
		return;
	}
	*m = (struct share_msg){.type = SHARE_NEWPROC, .n = n};
	for (i = 0; i < n; i++)
		m->ids[i] = files[i]->share_id;
	free(files);
	if (share_pair(SOCK_SEQPACKET, sv)) {
		rsp_log("share: no channel for the child: %s", strerror(errno));
		free(m);
		return;
	}
	if (share_send(l->fd, m, sv[0]) < 0) {
		rsp_log("share: process %d cannot follow the child: %s",
			l->owner, strerror(errno));
		rsp_real.close(sv[1]);
	} else {
		share_add_end(sf, l->owner, sv[1]);
	}
	rsp_real.close(sv[0]);
	free(m);
}

void share_release(const struct rsp_file *f)
{
	struct share_msg m = {.type = SHARE_RELEASE,
			      .val = (int32_t)f->share_id};
	struct share_link *l;

	/* Asked for: the kernel counts its socket; else say so. */
	if (!__atomic_load_n(&f->claimed, __ATOMIC_ACQUIRE) &&
	    (l = link_to(f->owner)))
		share_send(l->fd, &m, -1);
}

void share_announce_held(struct rsp_share_fork *sf)
{
	int i;

	for (i = 0; i < nlinks; i++)
		share_held(sf, &links[i]);
}

void share_links_adopt(const struct rsp_share_fork *sf)
{
	int i;

	pthread_mutex_init(&ask_lock, NULL);
	for (i = 0; i < nlinks; i++)
		rsp_real.close(links[i].fd);
	nlinks = 0;
	for (i = 0; i < sf->n && nlinks < RSP_SHARE_MAX_LINKS; i++) {
		links[nlinks].owner = sf->ends[i].owner;
		links[nlinks++].fd = sf->ends[i].give;
	}
}
