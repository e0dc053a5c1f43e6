// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// FUZZ_SOURCES:
/*
 * The preload's share channel (src/preload/share.c, share_ask.c,
 * share_channel.c): the AF_UNIX SOCK_SEQPACKET messages between the owner
 * of a connection and the forked processes holding it, some with a
 * descriptor.  Three readers of them:
 *
 *  - share_recv() itself, with any room (a raw operation): what it accepts
 *    is the whole datagram sent, of the size its header says; what it
 *    refuses is EPROTO with no descriptor left open;
 *  - the owner's dispatch (serve_one, answer, proc_add, proc_gone): the
 *    body of its thread's loop runs here in the harness's own thread,
 *    after each message, on channels made by the real fork path
 *    (rsp_share_before_fork/after_fork) and by NEWPROC messages carrying
 *    a SEQPACKET or stream socket end, a pipe or /dev/null;
 *  - the holder's reading of an answer (rsp_share_claim, ask) on a channel
 *    adopted as a fork's child does (share_links_adopt), then its RELEASE;
 *    before it, the holder's own fork, whose NEWPROC the owner's end reads
 *    (share_announce_held).
 *
 * The three sources are included (their functions are static); the rest
 * of the preload is faked below: the program's files (real descriptors on
 * /dev/null), their rsockets (numbers with a state: live, relayed,
 * closed), the relay (counted, never a thread) and the owner's thread
 * (not started: each operation runs one pass of its loop).
 *
 * Checked after every pass: each process the owner follows holds only
 * connections the owner gave out and still has, each connection's count
 * of holders is the number of processes holding it, no connection
 * outlives its rsocket, a process's channel is close-on-exec and high;
 * every answer a process reads is 12 bytes, OK with one stream socket or
 * ERR with an errno and none, exactly one per well-formed DEMAND or
 * DEMAND_ANSWERED, OK only for a connection that process held (and, for
 * DEMAND_ANSWERED, that the owner answered: never one taken off a shared
 * listener that the program never used, unless a relay already took it); an rsocket is closed once, never
 * while the program's file or a holder still has it, and relayed only
 * live; a relay started with its reads held is allowed to read exactly
 * once.  After every input (every channel closed, every file closed): the
 * owner keeps no record, every rsocket is closed, and the process has the
 * descriptors it had before (LeakSanitizer checks the memory).
 *
 * Input: a header byte (bits 0-1: 1 to 4 files of the program's; bit 2:
 * the relay cannot start), a byte per file (bit 0: not connected, so not
 * shared; bit 1: non-blocking; bit 2: a datagram socket; bit 3: two
 * descriptors; bit 4: taken off a shared listener and never used by the
 * program, so not answered by the owner), then operations, one byte (mod 8) and its arguments, see
 * fuzz_op.  A message (take_msg) is a spec byte (bits 0-2: type, see
 * msg_types; bits 3-5: the descriptors passed, see fd_kinds; bits 6-7:
 * its shape, exact, cut short, with bytes after it or with another count
 * of ids), a value byte (0xff: four raw bytes follow) and an id-count
 * byte (mod 8) with that many ids of the same form.
 */
#define _GNU_SOURCE
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <netinet/in.h>

#include "fuzz_input.h"
#include "preload/preload.h"
#include "util/thread.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The owner's thread is not started: the harness runs its loop's body. */
static int fuzz_thread_detached(void *(*fn)(void *))
{
	(void)fn;
	return 0;
}
#define cma_thread_detached fuzz_thread_detached

#include "../../src/preload/share.c"
#include "../../src/preload/share_ask.c"
#include "../../src/preload/share_channel.c"

#define FUZZ_MAX_FILES 8
#define FUZZ_MAX_RS 8
#define FUZZ_MAX_CHANS 8
#define FUZZ_MAX_OPS 64
#define FUZZ_MSG_MAX (SHARE_HDR + 8 * 4 + 256)
/* Another process's number: the holder's side asks it. */
#define FUZZ_OTHER_PID 0x7ffffff0

/* --- the preload's other parts, faked ----------------------------------- */

struct rsp_real rsp_real;
int rsp_pid;

void rsp_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
}

/* An rsocket: numbers 1 to nrs, never reused within an input. */
enum { RS_LIVE = 1, RS_RELAYED, RS_CLOSED };
static struct {
	int state;
	bool nonblock, unconnected;
} rss[FUZZ_MAX_RS + 1];
static int nrs;
static bool relay_fails;

/* A file of the program's, with its descriptors. */
struct fuzz_file {
	struct rsp_file *f; /* NULL once freed */
	bool handed; /* never answered by the program */
	uint32_t share_id; /* the owner's number for it, once shared */
	int fds[2], nfds;
	bool closed, closing, reading;
};
static struct fuzz_file files[FUZZ_MAX_FILES];
static int nfiles;

struct rsp_relay {
	int rs, end;
	bool held, allowed;
};
static struct rsp_relay relays[FUZZ_MAX_RS];
static int nrelays;

static struct fuzz_file *file_of(const struct rsp_file *f)
{
	int i;

	for (i = 0; i < nfiles; i++)
		if (files[i].f == f)
			return &files[i];
	abort(); /* a file the program never had, or one freed */
}

static bool live_rs(int rs)
{
	return rs > 0 && rs <= nrs && rss[rs].state == RS_LIVE;
}

int rclose(int rs)
{
	struct share_conn *c;
	int i;

	if (!live_rs(rs))
		abort(); /* closed twice, or the relay's */
	for (i = 0; i < nfiles; i++)
		if (files[i].f && !files[i].closed && !files[i].closing &&
		    files[i].f->rs == rs)
			abort(); /* the program still uses it */
	for (c = conns; c; c = c->next)
		if (c->rs == rs && c->holders)
			abort(); /* a process may still ask for it */
	rss[rs].state = RS_CLOSED;
	return 0;
}

int rfcntl(int rs, int cmd, ...)
{
	if (!live_rs(rs) || cmd != F_GETFL) {
		errno = EBADF;
		return -1;
	}
	return O_RDWR | (rss[rs].nonblock ? O_NONBLOCK : 0);
}

static int fake_name(int rs, struct sockaddr *sa, socklen_t *len, int port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

	if (!live_rs(rs) || rss[rs].unconnected) {
		errno = ENOTCONN;
		return -1;
	}
	memcpy(sa, &sin, *len < sizeof(sin) ? *len : sizeof(sin));
	*len = sizeof(sin);
	return 0;
}

int rgetpeername(int rs, struct sockaddr *sa, socklen_t *len)
{
	return fake_name(rs, sa, len, 7000 + rs);
}

int rgetsockname(int rs, struct sockaddr *sa, socklen_t *len)
{
	return fake_name(rs, sa, len, 8000);
}

/* fdtab.c's: the target's connections are all rsockets' (no fork mode). */
int rsp_file_name(int fd, const struct rsp_file *f, bool peer,
		  struct sockaddr *sa, socklen_t *len)
{
	(void)fd;
	return peer ? rgetpeername(f->rs, sa, len)
		    : rgetsockname(f->rs, sa, len);
}

bool rsp_any(void)
{
	return true;
}

struct rsp_file *rsp_peek(int fd)
{
	int i, k;

	for (i = 0; i < nfiles; i++)
		for (k = 0; files[i].f && !files[i].closed && k < files[i].nfds;
		     k++)
			if (files[i].fds[k] == fd)
				return files[i].f;
	return NULL;
}

int rsp_fds_of(const struct rsp_file *f, int **out)
{
	struct fuzz_file *ff = file_of(f);

	*out = malloc(sizeof(ff->fds));
	if (!*out)
		return 0;
	memcpy(*out, ff->fds, sizeof(ff->fds));
	return ff->closed ? 0 : ff->nfds;
}

int rsp_files_where(bool (*pred)(const struct rsp_file *f, void *arg),
		    void *arg, struct rsp_file ***out)
{
	int i, n = 0;

	*out = calloc(FUZZ_MAX_FILES, sizeof(**out));
	if (!*out)
		return 0;
	for (i = 0; i < nfiles; i++)
		if (files[i].f && !files[i].closed && pred(files[i].f, arg))
			(*out)[n++] = files[i].f;
	return n;
}

bool rsp_swap_kernel(int fd, const struct rsp_file *f, int with)
{
	struct fuzz_file *ff = file_of(f);
	int k;

	for (k = 0; k < ff->nfds && ff->fds[k] != fd; k++)
		;
	if (ff->closed || k == ff->nfds)
		abort(); /* not a descriptor of f's */
	if (rsp_real.fcntl(with, F_GETFD) < 0)
		abort(); /* nothing to swap in */
	return dup3(with, fd, O_CLOEXEC) == fd;
}

void rsp_epoll_fell_back(int fd)
{
	(void)fd;
}

/* share_ask.c's first use of a file: the harness never uses one. */
int rsp_rpoll(struct pollfd *fds, nfds_t n, int timeout)
{
	(void)fds;
	(void)n;
	(void)timeout;
	abort();
}

void rsp_file_free(struct rsp_file *f)
{
	struct fuzz_file *ff = file_of(f);

	free(f->addrs);
	free(f);
	ff->f = NULL;
}

struct rsp_relay *rsp_relay_start(int rs, int end, bool reads_held)
{
	struct rsp_relay *r;

	if (!live_rs(rs) || end < 0 || nrelays == FUZZ_MAX_RS)
		abort(); /* relays only a live connection, once */
	if (relay_fails) {
		errno = EMFILE;
		return NULL;
	}
	rss[rs].state = RS_RELAYED;
	r = &relays[nrelays++];
	*r = (struct rsp_relay){.rs = rs, .end = end, .held = reads_held};
	return r;
}

void rsp_relay_allow_reads(struct rsp_relay *r)
{
	if (!r->held || r->allowed)
		abort(); /* exactly once, and only when held */
	r->allowed = true;
}

int rsp_relay_count(void)
{
	return nrelays;
}

void rsp_relay_finish_orphans(int ms)
{
	(void)ms;
}

void rsp_relay_forget_all_in_child(void)
{
	abort(); /* no child here */
}

/* --- the harness's ends of the channels --------------------------------- */

enum { CH_SEQ, CH_STREAM, CH_PIPE };

struct fuzz_chan {
	int fd, kind;
	struct share_proc *p; /* the owner's record of it, NULL: none */
};
static struct fuzz_chan chans[FUZZ_MAX_CHANS];
static int nchans;
static struct share_msg *owner_buf;

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		abort();
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static bool proc_alive(const struct share_proc *p)
{
	const struct share_proc *q;

	for (q = procs; p && q; q = q->next)
		if (q == p)
			return true;
	return false;
}

static void add_chan(int fd, int kind, struct share_proc *p)
{
	if (nchans == FUZZ_MAX_CHANS) {
		close(fd);
		return;
	}
	chans[nchans++] = (struct fuzz_chan){.fd = fd, .kind = kind, .p = p};
}

static void drop_chan(int i)
{
	close(chans[i].fd);
	chans[i] = chans[--nchans];
}

/* The owner's records: nothing for an id it never gave or no longer has. */
static void check_owner(void)
{
	struct share_proc *p;
	struct share_conn *c;
	int i, held, n = 0;

	for (c = conns; c; c = c->next, n++) {
		if (!c->id || c->id > last_id)
			abort();
		held = 0;
		for (p = procs; p; p = p->next)
			for (i = 0; i < p->n; i++)
				held += p->ids[i] == c->id;
		if (held != c->holders)
			abort();
		if (c->rs <= 0 || c->rs > nrs ||
		    rss[c->rs].state != (c->relayed ? RS_RELAYED : RS_LIVE))
			abort(); /* a record of an rsocket gone */
		if (c->spare >= 0 && !c->relayed)
			abort();
		if (c->f && file_of(c->f)->closed)
			abort(); /* the program's file is gone */
	}
	if (n > nfiles)
		abort(); /* a record per connection shared, no more */
	for (p = procs; p; p = p->next) {
		if (p->n < 0 || p->fd < cma_fd_floor() ||
		    !(rsp_real.fcntl(p->fd, F_GETFD) & FD_CLOEXEC))
			abort();
		for (i = 0; i < p->n; i++)
			if (!find_conn(p->ids[i]))
				abort();
	}
}

/*
 * What one of our channels got from the owner: answers, exactly
 * @expect of them (-1: not counted), OK only if @may_ok.
 */
static void drain_chan(struct fuzz_chan *ch, int expect, bool may_ok)
{
	char cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct share_msg a;
	struct iovec iov = {.iov_base = &a, .iov_len = sizeof(a)};
	struct msghdr h;
	struct cmsghdr *c;
	int fds[4], nfd, i, type, answers = 0;
	ssize_t n;

	if (ch->kind == CH_PIPE)
		return;
	for (;;) {
		h = (struct msghdr){.msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf)};
		n = recvmsg(ch->fd, &h, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n <= 0)
			break;
		nfd = 0;
		for (c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c))
			if (c->cmsg_level == SOL_SOCKET &&
			    c->cmsg_type == SCM_RIGHTS)
				for (i = 0;
				     i < (int)((c->cmsg_len - CMSG_LEN(0)) /
					       sizeof(int));
				     i++)
					memcpy(&fds[nfd++],
					       CMSG_DATA(c) + i * sizeof(int),
					       sizeof(int));
		answers++;
		if (ch->kind == CH_SEQ && expect >= 0) {
			if (n != SHARE_HDR || a.n || (h.msg_flags & MSG_TRUNC))
				abort(); /* not an answer */
			if (a.type == SHARE_OK) {
				socklen_t len = sizeof(type);

				if (!may_ok || nfd != 1 ||
				    getsockopt(fds[0], SOL_SOCKET, SO_TYPE,
					       &type, &len) ||
				    type != SOCK_STREAM)
					abort(); /* OK: the relay's socket */
			} else if (a.type != SHARE_ERR || nfd || a.val <= 0) {
				abort();
			}
		}
		for (i = 0; i < nfd; i++)
			close(fds[i]);
	}
	if (ch->kind == CH_SEQ && expect >= 0 && answers != expect)
		abort(); /* one answer a question */
}

/* One pass of the owner's thread (share.c's serve), without the wait. */
static void serve_pass(void)
{
	struct share_closing cl = {0};
	struct share_proc **who;
	struct pollfd *fds;
	int n, i;

	n = watch(&fds, &who);
	if (!n)
		return;
	if (rsp_real.poll(fds, n, 0) > 0) {
		if (fds[0].revents)
			drain_bell();
		for (i = 1; i < n; i++)
			if (fds[i].revents)
				serve_one(who[i], owner_buf, &cl);
		close_all(&cl);
	}
	free(cl.rs);
	free(fds);
	free(who);
	check_owner();
	for (i = 0; i < nchans; i++)
		if (!proc_alive(chans[i].p))
			chans[i].p = NULL;
}

/* --- messages ------------------------------------------------------------ */

static const uint32_t msg_types[8] = {
	SHARE_NEWPROC,
	SHARE_DEMAND,
	SHARE_RELEASE,
	SHARE_OK,
	SHARE_ERR,
	0,
	SHARE_DEMAND_ANSWERED,
	0 /* 7: four raw bytes */
};

/* The descriptors a message passes; a channel's other end is kept. */
enum {
	FD_NONE,
	FD_NULL,
	FD_PIPE,
	FD_SEQ,
	FD_STREAM,
	FD_TWO, /* two: the room share_recv gives holds both */
	FD_THREE,
	FD_KINDS
};

struct fuzz_msg {
	uint8_t buf[FUZZ_MSG_MAX];
	size_t len;
	bool exact; /* the shape share_recv accepts */
	struct share_msg *m; /* buf */
	int fds[3], nfds;
	int keep, keep_kind; /* our end of a channel passed; -1 */
};

static uint32_t take_id(void)
{
	uint8_t b = take8();
	uint32_t v;

	if (b != 0xff)
		return b;
	take(&v, sizeof(v));
	return v;
}

static int open_null(void)
{
	return open("/dev/null", O_RDWR | O_CLOEXEC);
}

static void make_fds(struct fuzz_msg *fm, int kind)
{
	int sv[2];

	fm->nfds = 0;
	fm->keep = -1;
	switch (kind) {
	case FD_NULL:
		fm->fds[fm->nfds++] = open_null();
		break;
	case FD_PIPE:
		if (pipe2(sv, O_CLOEXEC))
			abort();
		fm->fds[fm->nfds++] = sv[0];
		fm->keep = sv[1];
		fm->keep_kind = CH_PIPE;
		break;
	case FD_SEQ:
	case FD_STREAM:
		if (socketpair(AF_UNIX,
			       (kind == FD_SEQ ? SOCK_SEQPACKET : SOCK_STREAM) |
				       SOCK_CLOEXEC,
			       0, sv))
			abort();
		fm->fds[fm->nfds++] = sv[0];
		fm->keep = sv[1];
		fm->keep_kind = kind == FD_SEQ ? CH_SEQ : CH_STREAM;
		break;
	case FD_THREE:
		fm->fds[fm->nfds++] = open_null();
		/* fall through */
	case FD_TWO:
		fm->fds[fm->nfds++] = open_null();
		fm->fds[fm->nfds++] = open_null();
		break;
	}
}

/* A message not sent after all: the descriptors made for it go. */
static void drop_msg(struct fuzz_msg *fm)
{
	int i;

	for (i = 0; i < fm->nfds; i++)
		close(fm->fds[i]);
	if (fm->keep >= 0)
		close(fm->keep);
}

/* A message from the input (the layout: the head comment). */
static void take_msg(struct fuzz_msg *fm)
{
	uint8_t spec = take8(), k;
	uint32_t n, i;

	memset(fm->buf, 0, sizeof(fm->buf));
	fm->m = (struct share_msg *)fm->buf;
	fm->m->type = msg_types[spec & 7];
	if ((spec & 7) == 7)
		take(&fm->m->type, 4);
	fm->m->val = (int32_t)take_id();
	n = take8() % 8;
	fm->m->n = n;
	for (i = 0; i < n; i++)
		fm->m->ids[i] = take_id();
	fm->len = SHARE_HDR + n * sizeof(uint32_t);
	fm->exact = true;
	switch (spec >> 6) {
	case 1: /* cut short */
		k = take8();
		fm->len -= k < fm->len ? k : fm->len;
		fm->exact = !k;
		break;
	case 2: /* bytes after it */
		k = take8();
		take(fm->buf + fm->len, k);
		fm->len += k;
		fm->exact = !k;
		break;
	case 3: /* another count */
		take(&fm->m->n, 4);
		fm->exact = fm->m->n == n;
		break;
	}
	make_fds(fm, (spec >> 3 & 7) % FD_KINDS);
}

/* Sends fm on @fd (a channel of @kind); our copies of its fds go. */
static void send_msg(int fd, int kind, struct fuzz_msg *fm)
{
	char cbuf[CMSG_SPACE(3 * sizeof(int))] = {0};
	struct iovec iov = {.iov_base = fm->buf, .iov_len = fm->len};
	struct msghdr h = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;
	int i;

	if (kind == CH_PIPE) {
		if (fm->len && write(fd, fm->buf, fm->len) < 0)
			(void)0; /* the owner went: nothing to say */
	} else {
		if (fm->nfds) {
			h.msg_control = cbuf;
			h.msg_controllen = CMSG_SPACE(fm->nfds * sizeof(int));
			c = CMSG_FIRSTHDR(&h);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(fm->nfds * sizeof(int));
			memcpy(CMSG_DATA(c), fm->fds, fm->nfds * sizeof(int));
		}
		if (sendmsg(fd, &h, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			(void)0; /* the owner's end is closed */
	}
	for (i = 0; i < fm->nfds; i++)
		close(fm->fds[i]);
}

/* --- operations ---------------------------------------------------------- */

/* The program forks (the owner's side: its shared files, a channel). */
static void op_fork(void)
{
	struct rsp_share_fork sf;
	struct share_proc *before = procs;
	int i, fd;

	rsp_share_before_fork(&sf);
	for (i = 0; i < sf.n; i++) {
		if (sf.ends[i].owner != rsp_pid)
			abort(); /* no channel of a holder's here */
		fd = dup(sf.ends[i].give); /* the child's end, kept */
		if (fd >= 0)
			add_chan(fd, CH_SEQ, procs != before ? procs : NULL);
	}
	rsp_share_after_fork(&sf, 4242);
	for (i = 0; i < nfiles; i++)
		if (files[i].f && files[i].f->forked)
			files[i].share_id = files[i].f->share_id;
	check_owner();
}

/*
 * Whether the owner answered connection @id itself (DEMAND_ANSWERED may
 * get the relay): the program used its file, or a relay took it.
 */
static bool owner_answered(uint32_t id)
{
	int i;

	for (i = 0; i < nfiles; i++)
		if (files[i].share_id == id)
			return !files[i].handed ||
			       rss[i + 1].state == RS_RELAYED;
	return false;
}

/* A message on one of our channels, and the owner's pass. */
static void op_send(void)
{
	struct fuzz_chan *ch;
	struct share_proc *p, *parent, *mark[FUZZ_MAX_OPS + 8];
	struct fuzz_msg fm;
	uint32_t *had = NULL;
	int i, k, nmark = 0, nhad = 0, expect = 0;
	bool may_ok = false;

	if (!nchans) {
		take_msg(&fm); /* read as if sent, and dropped */
		drop_msg(&fm);
		return;
	}
	ch = &chans[take8() % nchans];
	take_msg(&fm);
	parent = ch->p;
	if (ch->kind == CH_SEQ && parent && fm.exact &&
	    (fm.m->type == SHARE_DEMAND ||
	     fm.m->type == SHARE_DEMAND_ANSWERED)) {
		expect = 1;
		may_ok = proc_find(parent, (uint32_t)fm.m->val) >= 0;
		if (fm.m->type == SHARE_DEMAND_ANSWERED)
			may_ok = may_ok && owner_answered((uint32_t)fm.m->val);
	}
	if (parent && parent->n) {
		had = malloc(parent->n * sizeof(*had));
		if (had) {
			nhad = parent->n;
			memcpy(had, parent->ids, nhad * sizeof(*had));
		}
	}
	for (p = procs; p && nmark < FUZZ_MAX_OPS + 8; p = p->next)
		mark[nmark++] = p;
	send_msg(ch->fd, ch->kind, &fm);
	serve_pass();
	drain_chan(ch, expect, may_ok);
	/* A new process: what its parent held, nothing else. */
	for (p = procs; p; p = p->next) {
		for (k = 0; k < nmark && mark[k] != p; k++)
			;
		if (k < nmark)
			continue;
		for (i = 0; i < p->n; i++) {
			for (k = 0; k < nhad && had[k] != p->ids[i]; k++)
				;
			if (k == nhad)
				abort();
		}
		if (fm.keep >= 0) {
			add_chan(fm.keep, fm.keep_kind, p);
			fm.keep = -1;
		}
	}
	if (fm.keep >= 0)
		add_chan(fm.keep, fm.keep_kind, NULL);
	free(had);
}

/* The program's last descriptor of a file closes (fdtab.c's release). */
static void op_close_file(struct fuzz_file *ff)
{
	struct rsp_file *f = ff->f;
	int k;

	if (ff->closed)
		return;
	ff->closing = true;
	for (k = 0; k < ff->nfds; k++)
		close(ff->fds[k]);
	if (!(f->forked && rsp_share_keep(f)) && f->owner == rsp_pid)
		rclose(f->rs);
	ff->closed = true;
	ff->closing = false;
	if (!(__atomic_or_fetch(&f->readers, RSP_FILE_GONE, __ATOMIC_SEQ_CST) &
	      ~RSP_FILE_GONE))
		rsp_file_free(f);
	check_owner();
}

/* A call of the program's enters the rsocket, or leaves it. */
static void op_read(struct fuzz_file *ff)
{
	if (ff->reading) {
		ff->reading = false;
		rsp_read_leave(ff->f);
	} else if (!ff->closed) {
		ff->reading = rsp_read_enter(ff->f);
	}
	check_owner();
}

/*
 * The holder forks: the owner at the other end of @owner_end hears of the
 * child (NEWPROC with what it holds, @id, and the child's channel).  The
 * owner's side of this process forks too, for its own connections; that
 * child's channel closes here, as after a fork whose child exits.
 */
static void holder_forks(int owner_end, uint32_t id)
{
	struct rsp_share_fork sf;
	struct share_msg *m = malloc(SHARE_MAX_MSG);
	ssize_t n;
	int got;

	if (!m)
		abort();
	rsp_share_before_fork(&sf);
	n = share_recv(owner_end, m, SHARE_MAX_MSG, &got);
	if (n != SHARE_HDR + sizeof(uint32_t) || m->type != SHARE_NEWPROC ||
	    m->n != 1 || m->ids[0] != id || got < 0 || sf.n < 1 ||
	    sf.ends[sf.n - 1].owner != FUZZ_OTHER_PID)
		abort(); /* the child, what it holds, its channel */
	close(got);
	rsp_share_after_fork(&sf, 4243);
	free(m);
	serve_pass();
}

/*
 * The holder's side: a process holding another's connection asks for it
 * on the channel a fork gave it; the owner (the harness) has queued the
 * input's answer, or is gone.  Bits of @how: two descriptors of it; the
 * owner gone; a RELEASE after; a non-blocking placeholder; a fork first.
 */
static void op_ask(void)
{
	struct rsp_share_fork sf = {0};
	struct share_msg q;
	struct fuzz_msg fm;
	struct fuzz_file *ff;
	uint8_t how = take8();
	uint32_t id = take_id();
	int sv[2], got, k;
	bool asked, ok, fits;
	ssize_t n;

	take_msg(&fm);
	if (nfiles == FUZZ_MAX_FILES ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		drop_msg(&fm);
		return;
	}
	/* Ours may not wait: a question that is not there is a failure. */
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	ff = &files[nfiles++];
	*ff = (struct fuzz_file){.nfds = 1 + (how & 1)};
	ff->f = calloc(1, sizeof(*ff->f));
	if (!ff->f)
		abort();
	ff->f->rs = -1;
	ff->f->owner = FUZZ_OTHER_PID;
	ff->f->forked = true;
	ff->f->share_id = id;
	for (k = 0; k < ff->nfds; k++)
		ff->fds[k] = open_null();
	sf.n = 1;
	sf.ends[0].owner = FUZZ_OTHER_PID;
	sf.ends[0].give = sv[1];
	share_links_adopt(&sf);
	if (how & 8) /* the placeholder's mode goes to the relay's socket */
		fcntl(ff->fds[0], F_SETFL, O_NONBLOCK);
	if (how & 16)
		holder_forks(sv[0], id);
	if (how & 2) {
		close(sv[0]); /* the owner is gone */
		sv[0] = -1;
		drop_msg(&fm);
	} else {
		send_msg(sv[0], CH_SEQ, &fm);
		if (fm.keep >= 0)
			close(fm.keep);
	}
	/* The holder has room for an answer, no more. */
	fits = sv[0] >= 0 && fm.exact && fm.len == SHARE_HDR;
	ok = fits && fm.m->type == SHARE_OK && fm.nfds;
	asked = rsp_share_claim(ff->fds[0]);
	if (asked != ok || asked != ff->f->claimed || (!asked && ff->f->forked))
		abort();
	if (nlinks != fits)
		abort(); /* a torn answer or none ends the channel */
	if (sv[0] >= 0) {
		/* The question: a DEMAND for the connection, nothing else. */
		n = share_recv(sv[0], &q, sizeof(q), &got);
		if (n != SHARE_HDR || got >= 0 || q.type != SHARE_DEMAND ||
		    (uint32_t)q.val != id)
			abort();
	}
	if (how & 4) {
		share_release(ff->f);
		if (sv[0] >= 0 && nlinks && !asked) {
			n = share_recv(sv[0], &q, sizeof(q), &got);
			if (n != SHARE_HDR || got >= 0 ||
			    q.type != SHARE_RELEASE || (uint32_t)q.val != id)
				abort();
		}
	}
	sf.n = 0;
	share_links_adopt(&sf); /* the link goes */
	if (sv[0] >= 0)
		close(sv[0]);
	for (k = 0; k < ff->nfds; k++)
		close(ff->fds[k]);
	ff->closed = true;
	rsp_file_free(ff->f);
}

/* share_recv alone, on a datagram from the input, with any room. */
static void op_recv(void)
{
	struct share_msg *m;
	struct fuzz_msg fm;
	uint8_t r = take8();
	size_t room = r < 0x80 ? r : SHARE_HDR + (r - 0x80u) * 4;
	int sv[2], got;
	ssize_t n;

	take_msg(&fm);
	if (fm.keep >= 0)
		close(fm.keep);
	m = malloc(room ? room : 1);
	if (!m ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
		       0, sv))
		abort();
	send_msg(sv[1], CH_SEQ, &fm);
	n = share_recv(sv[0], m, room, &got);
	if (n > 0) {
		/* The whole datagram, of the size its header says. */
		if (!fm.exact || (size_t)n != fm.len || room < fm.len ||
		    memcmp(m, fm.buf, fm.len))
			abort();
		if ((got >= 0) != (fm.nfds > 0) ||
		    (got >= 0 && !(fcntl(got, F_GETFD) & FD_CLOEXEC)))
			abort();
	} else if (n == 0) {
		if (fm.len || got >= 0)
			abort(); /* an empty datagram: nothing kept */
	} else {
		if (errno != EPROTO || got >= 0 || (fm.exact && room >= fm.len))
			abort(); /* a well-formed message that fits is read */
	}
	if (got >= 0)
		close(got);
	close(sv[0]);
	close(sv[1]);
	free(m);
}

static void fuzz_op(void)
{
	uint8_t op = take8() % 8;

	switch (op) {
	case 0: /* a message on one of our channels */
	case 1:
		op_send();
		break;
	case 2: /* a process ends: its channel closes */
		if (nchans) {
			drop_chan(take8() % nchans);
			serve_pass();
		}
		break;
	case 3: /* the program closes a file */
		op_close_file(&files[take8() % nfiles]);
		break;
	case 4: /* a call of the program's in or out of a file */
		op_read(&files[take8() % nfiles]);
		break;
	case 5:
		op_fork();
		break;
	case 6:
		op_ask();
		break;
	case 7:
		op_recv();
		break;
	}
}

static void setup(void)
{
	/* A pipe's reader the owner closed: write says EPIPE, no signal. */
	signal(SIGPIPE, SIG_IGN);
	rsp_real.close = close;
	rsp_real.fcntl = fcntl;
	rsp_real.read = read;
	rsp_real.write = write;
	rsp_real.poll = poll;
	rsp_real.recvmsg = recvmsg;
	rsp_real.sendmsg = sendmsg;
	rsp_pid = getpid();
	owner_buf = malloc(SHARE_MAX_MSG);
	if (!owner_buf)
		abort();
	/* The thread's bell, made once as the first fork makes it. */
	pthread_mutex_lock(&share_lock);
	if (start_serving())
		abort();
	pthread_mutex_unlock(&share_lock);
}

/* Every process ends, the program closes everything, the relays end. */
static void teardown(void)
{
	int i;

	for (i = 0; i < nfiles; i++)
		if (files[i].reading) {
			files[i].reading = false;
			rsp_read_leave(files[i].f);
		}
	while (nchans)
		drop_chan(0);
	for (i = 0; i < 4 && procs; i++)
		serve_pass();
	if (procs)
		abort(); /* a process whose channel never ends */
	for (i = 0; i < nfiles; i++)
		op_close_file(&files[i]);
	for (i = 0; i < nrelays; i++) {
		if (relays[i].held && !relays[i].allowed)
			abort(); /* the relay never reads */
		if (rss[relays[i].rs].state != RS_RELAYED)
			abort();
		close(relays[i].end);
		rss[relays[i].rs].state = RS_CLOSED;
	}
	nrelays = 0;
	if (conns || procs)
		abort(); /* records nobody can end */
	for (i = 1; i <= nrs; i++)
		if (rss[i].state != RS_CLOSED)
			abort(); /* an rsocket left open */
	for (i = 0; i < nfiles; i++)
		if (files[i].f)
			abort();
	nfiles = 0;
	nrs = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	struct fuzz_file *ff;
	uint8_t head, b;
	int fds_before, i, k, ops = 0;

	if (!ready) {
		setup();
		ready = true;
	}
	fds_before = count_fds();
	fuzz_input(data, size);
	head = take8();
	relay_fails = head & 4;
	last_id = 0; /* no record is left: numbers start again */
	nfiles = 1 + (head & 3);
	nrs = nfiles;
	for (i = 0; i < nfiles; i++) {
		b = take8();
		rss[i + 1].state = RS_LIVE;
		rss[i + 1].unconnected = b & 1;
		rss[i + 1].nonblock = b & 2;
		ff = &files[i];
		*ff = (struct fuzz_file){.nfds = 1 + !!(b & 8),
					 .handed = b & 16};
		ff->f = calloc(1, sizeof(*ff->f));
		if (!ff->f)
			abort();
		ff->f->rs = i + 1;
		ff->f->owner = rsp_pid;
		ff->f->dgram = b & 4;
		ff->f->handed = ff->handed;
		for (k = 0; k < ff->nfds; k++)
			ff->fds[k] = open_null();
	}
	op_fork();
	while (fuzz_in.left && ops++ < FUZZ_MAX_OPS)
		fuzz_op();
	teardown();
	if (count_fds() != fds_before)
		abort(); /* a descriptor the input opened is still open */
	return 0;
}
