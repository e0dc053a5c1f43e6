// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Plain TCP programs that share a connection with a forked process: the
 * acceptance tests of a connection a forked descendant uses (the share-*
 * scenarios of tests/system/preload-apps-in-guest.sh).  It knows nothing
 * of RDMA: sockets, fork, its own poll loop.
 *
 *   fork_share server PORT SHAPE BYTES [CONNS]
 *   fork_share client ADDR PORT SHAPE BYTES [CONN]
 *
 * The server's side of each SHAPE (the client's is described below it):
 *   first          accepts CONNS connections (default 1); a child forked
 *                  for each echoes it until EOF and exits without closing
 *                  it; the parent closes its copy at once and accepts the
 *                  next (socat TCP-LISTEN:p,fork).  Client: echo
 *   exec           the same, each child running cat(1) on the
 *                  connection as its standard input and output (inetd,
 *                  sshd's re-execution), made blocking first: from the
 *                  second connection on, none is answered when the child
 *                  executes.  Client: echo
 *   split          accept, fork: the child reads BYTES and then EOF and
 *                  closes; the parent writes BYTES at the same time, waits
 *                  for the child, closes (the rsync daemon's receiver and
 *                  generator).  Client: sends BYTES, reads BYTES at the
 *                  same time, shuts its write side, reads EOF
 *   split-connect  the same with the roles on the connecting side: the
 *                  server (one process) writes BYTES and shuts its write
 *                  side while it reads BYTES, then EOF.  Client: connects,
 *                  forks: the child reads BYTES and EOF and closes; the
 *                  parent writes BYTES, waits for the child, closes
 *   unused         accept, fork a child that holds the connection, sleeps
 *                  0.5 s and exits without touching it; the parent echoes
 *                  BYTES, waits for the child, closes.  Client: echo-eof
 *   closed-unused  accept, fork a child that closes its copy at once, says
 *                  so, and sleeps 20 s; the parent echoes BYTES, closes and
 *                  exits ("holder PID" names the child, still asleep).
 *                  Client: echo-eof, the EOF within 5 s of the last byte
 *   grandchild     accept, fork a child that forks a grandchild, which
 *                  echoes until EOF and closes; child and parent close
 *                  their copies at once and wait for theirs.  Client: echo
 *   parent-first   accept, fork; the parent closes its copy, then tells the
 *                  child, which only then echoes until EOF, and closes.
 *                  Client: echo
 *   owner-first    a child forked before the accept exits at once (the
 *                  listener is shared, so the connection is not answered
 *                  yet when accepted); accept, fork: the parent writes
 *                  BYTES (its first write answers it), then tells the
 *                  child, which only then reads BYTES and EOF and closes;
 *                  the parent waits for it, closes.  Client: as split's
 *   names          accept, fork; the child asks getpeername and
 *                  getsockname first (the rsync daemon's child does), then
 *                  echoes until EOF; the parent closes its copy at once.
 *                  Client: echo
 * Every process also checks both addresses once the connection first
 * moved a byte for it: they must be those the process that made the
 * connection saw.
 * Clients: echo: sends BYTES of its stream, shuts its write side, reads
 * them back and then EOF, at the same time; echo-eof: the same without
 * the shutdown (the server's close ends the stream).
 *
 * Every byte is checked against its stream (each direction of each
 * connection has its own, a function of the offset), every wait is
 * bounded (20 s without progress; an alarm at 45 s), sockets are
 * non-blocking from accept or connect on (the children inherit that).
 * A process's first call on the connection is poll() in first's and
 * parent-first's children and split-connect's reader (socat waits in
 * select), and a read or write (then poll on EAGAIN) in split's and
 * owner-first's child and parent, the grandchild and split-connect's
 * writer.
 * Each process prints one line per outcome, in one write:
 *   ROLE.CONN[PID]: OK ...
 *   ROLE.CONN[PID]: FAIL KIND: ...
 * KIND is the call and its errno (read:ENOTCONN, write:EPIPE), eof (the
 * stream ended early), eof-late, extra, differs, names, timeout, or
 * "child PID exit N" from a process that waited for one; "killed by
 * signal" and "did not end" follow it there.  Exit status 0 when this
 * process and the ones it waited for did their part.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 65536
#define STALL_MS 20000 /* no progress for this long: a failure */
#define ALARM_S 45 /* the last resort, per process */
/* A wait for a child that does its part: the stall bound and some. */
#define REAP_MS (STALL_MS + 10000LL)

static const char *role = "server";
static int conn;

/* One line in one write(2): several processes share the output file. */
static void say(const char *fmt, ...)
{
	char line[600];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "%s.%d[%d]: ", role, conn,
		     (int)getpid());
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDOUT_FILENO, line, (size_t)n) < 0)
		_exit(2);
}

static const char *ename(int e)
{
	const char *s = strerrorname_np(e);

	return s ? s : "E?";
}

static char alarm_line[120];

static void on_alarm(int sig)
{
	(void)sig;
	if (write(STDOUT_FILENO, alarm_line, strlen(alarm_line)) < 0)
		_exit(3);
	_exit(3);
}

/* Names this process (ROLE.CONN) and arms its own alarm. */
static void become(const char *r, int c)
{
	role = r;
	conn = c;
	snprintf(alarm_line, sizeof(alarm_line),
		 "%s.%d[%d]: FAIL timeout: the %d s alarm\n", role, conn,
		 (int)getpid(), ALARM_S);
	signal(SIGALRM, on_alarm);
	alarm(ALARM_S);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The streams: byte OFF of stream SEED (2 * CONN for the client's bytes,
 * 2 * CONN + 1 for the server's).
 */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static void fill(unsigned int seed, long off, unsigned char *buf, size_t len)
{
	uint64_t word = 0;
	size_t i;

	for (i = 0; i < len; i++, off++) {
		if (i == 0 || (off & 7) == 0)
			word = mix(((uint64_t)seed << 48) ^
				   ((uint64_t)off >> 3));
		buf[i] = (unsigned char)(word >> ((off & 7) * 8));
	}
}

/* What one process does with the connection. */
struct plan {
	unsigned int out_seed;
	long out_len; /* bytes of out_seed to send */
	bool shut; /* then shutdown(SHUT_WR) */
	unsigned int in_seed;
	long in_len; /* bytes of in_seed to receive; echo: -1 until EOF */
	bool eof; /* then the end of the stream */
	int eof_ms; /* within this many ms of the last byte (0: no bound) */
	bool echo; /* send back what comes in, unchecked */
	bool eager; /* the first call is a read or write, not poll */
};

static long sent, got;

static int failed(const char *kind, const char *fmt, ...)
{
	char why[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	say("FAIL %s: %s after sending %ld and receiving %ld bytes", kind, why,
	    sent, got);
	return 1;
}

static int call_failed(const char *call, int e)
{
	char kind[64];

	snprintf(kind, sizeof(kind), "%s:%s", call, ename(e));
	return failed(kind, "%s", strerror(e));
}

/*
 * The connection's addresses as the process that made it saw them
 * (accept's and getsockname's, or getsockname's and getpeername's after
 * connect): its children inherit them.
 */
static struct sockaddr_in want_me, want_peer;

static int name_of(int fd, bool peer, struct sockaddr_in *sin)
{
	socklen_t len = sizeof(*sin);

	memset(sin, 0, sizeof(*sin));
	return peer ? getpeername(fd, (struct sockaddr *)sin, &len)
		    : getsockname(fd, (struct sockaddr *)sin, &len);
}

static bool same(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_family == b->sin_family && a->sin_port == b->sin_port &&
	       a->sin_addr.s_addr == b->sin_addr.s_addr;
}

static int check_name(int fd, bool peer)
{
	const struct sockaddr_in *want = peer ? &want_peer : &want_me;
	const char *call = peer ? "getpeername" : "getsockname";
	struct sockaddr_in sin;

	if (name_of(fd, peer, &sin))
		return call_failed(call, errno);
	if (!same(&sin, want))
		return failed("names",
			      "%s says family %d %08x port %d, not %08x "
			      "port %d",
			      call, sin.sin_family, ntohl(sin.sin_addr.s_addr),
			      ntohs(sin.sin_port), ntohl(want->sin_addr.s_addr),
			      ntohs(want->sin_port));
	return 0;
}

/* Both addresses, as the maker saw them (e.g. rsync's daemon asks). */
static int names(int fd)
{
	int bad = check_name(fd, true);

	return check_name(fd, false) | bad;
}

/*
 * The plan on non-blocking @fd, in one poll loop.  0 when it all went
 * as planned; else a FAIL line was printed.
 */
static int run(int fd, const struct plan *p)
{
	static unsigned char obuf[CHUNK], ibuf[CHUNK], want[CHUNK];
	size_t opos = 0, olen = 0, n;
	bool eof = false, shut = false, eager = p->eager, reading, writing;
	long long eof_by = 0, last = now_ms();
	struct pollfd pfd = {.fd = fd};
	ssize_t r;
	int left;

	sent = got = 0;
	for (;;) {
		if (!p->echo && opos == olen && sent < p->out_len) {
			n = (size_t)(p->out_len - sent);
			olen = n < CHUNK ? n : CHUNK;
			fill(p->out_seed, sent, obuf, olen);
			opos = 0;
		}
		writing = opos < olen;
		if (!writing && p->shut && !shut) {
			if (shutdown(fd, SHUT_WR))
				return call_failed("shutdown", errno);
			shut = true;
		}
		if (p->echo)
			reading = !eof && !writing &&
				  (p->in_len < 0 || got < p->in_len);
		else
			reading = got < p->in_len || (p->eof && !eof);
		if (!reading && !writing)
			break;
		if (!p->echo && p->eof && p->eof_ms && got == p->in_len &&
		    !eof_by)
			eof_by = now_ms() + p->eof_ms;
		left = (int)(last + STALL_MS - now_ms());
		if (eof_by && eof_by - now_ms() < left)
			left = (int)(eof_by - now_ms());
		pfd.events = (short)((reading ? POLLIN : 0) |
				     (writing ? POLLOUT : 0));
		if (eager) { /* as if poll said so: the call comes first */
			eager = false;
			pfd.revents = pfd.events;
			r = 1;
		} else {
			r = poll(&pfd, 1, left > 0 ? left : 0);
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return call_failed("poll", errno);
		if (r == 0 && eof_by && now_ms() >= eof_by)
			return failed("eof-late",
				      "no end of stream within %d "
				      "ms of the last byte",
				      p->eof_ms);
		if (r == 0)
			return failed("timeout",
				      "no progress in %d s "
				      "(%s%s)",
				      STALL_MS / 1000, reading ? "reading" : "",
				      writing ? " writing" : "");
		if (pfd.revents & POLLNVAL)
			return failed("poll:POLLNVAL",
				      "not an open descriptor");
		if (reading && (pfd.revents & (POLLIN | POLLHUP | POLLERR))) {
			n = CHUNK;
			if (p->in_len >= 0 && got < p->in_len &&
			    (size_t)(p->in_len - got) < n)
				n = (size_t)(p->in_len - got);
			r = read(fd, ibuf, n);
			if (r < 0 && errno != EAGAIN && errno != EINTR)
				return call_failed("read", errno);
			if (r == 0 && p->in_len >= 0 && got < p->in_len)
				return failed("eof",
					      "the stream ended %ld "
					      "bytes early",
					      p->in_len - got);
			if (r == 0 && eof_by)
				say("the end of stream %lld ms after the "
				    "last byte",
				    now_ms() + p->eof_ms - eof_by);
			if (r == 0)
				eof = true;
			if (r > 0 && !p->echo && got >= p->in_len)
				return failed("extra",
					      "%zd bytes after the "
					      "stream's end",
					      r);
			if (r > 0 && !p->echo) {
				fill(p->in_seed, got, want, (size_t)r);
				for (n = 0; n < (size_t)r; n++)
					if (ibuf[n] != want[n])
						return failed("differs",
							      "byte %ld is %d, "
							      "not %d",
							      got + (long)n,
							      ibuf[n], want[n]);
			}
			if (r > 0 && p->echo) {
				memcpy(obuf, ibuf, (size_t)r);
				opos = 0;
				olen = (size_t)r;
			}
			if (r > 0 && !got && !sent && names(fd))
				return 1;
			if (r > 0) {
				got += r;
				last = now_ms();
			}
		}
		if (opos < olen &&
		    (pfd.revents & (POLLOUT | POLLHUP | POLLERR))) {
			r = write(fd, obuf + opos, olen - opos);
			if (r < 0 && errno != EAGAIN && errno != EINTR)
				return call_failed("write", errno);
			if (r > 0 && !got && !sent && names(fd))
				return 1;
			if (r > 0) {
				opos += (size_t)r;
				sent += r;
				last = now_ms();
			}
		}
	}
	say("OK sent %ld, received %ld bytes%s", sent, got,
	    eof ? " and the end of stream" : "");
	return 0;
}

static int nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) ? -1 : 0;
}

/*
 * Waits until @end (now_ms) at most for the child @pid; 0 when it exited
 * with 0, else it says how the child ended (or kills it: it did not).
 */
static int reap(pid_t pid, const char *who, long long end)
{
	int st;
	pid_t r;

	while ((r = waitpid(pid, &st, WNOHANG)) == 0 && now_ms() < end)
		usleep(20000);
	if (r == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		say("FAIL %s %d did not end in time", who, (int)pid);
		return 1;
	}
	if (r < 0) {
		say("FAIL waitpid %d: %s", (int)pid, strerror(errno));
		return 1;
	}
	if (WIFSIGNALED(st)) {
		say("FAIL %s %d killed by signal %d", who, (int)pid,
		    WTERMSIG(st));
		return 1;
	}
	if (WEXITSTATUS(st)) {
		say("FAIL %s %d exit %d", who, (int)pid, WEXITSTATUS(st));
		return 1;
	}
	return 0;
}

/* Waits, at most 10 s, for a byte on @fd (a pipe): 0 when it came. */
static int await(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	char b;

	if (poll(&pfd, 1, 10000) != 1 || read(fd, &b, 1) != 1)
		return failed("timeout", "the word from the other process "
					 "did not come in 10 s");
	return 0;
}

static int tell(int fd)
{
	return write(fd, "x", 1) == 1 ? 0
				      : call_failed("write to the pipe", errno);
}

/* The client's and the server's bytes of connection c. */
#define CSEED(c) (2u * (unsigned int)(c))
#define SSEED(c) (2u * (unsigned int)(c) + 1)

static int listen_on(const char *port)
{
	struct sockaddr_in sin;
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)atoi(port));
	if (l < 0 ||
	    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l, (struct sockaddr *)&sin, sizeof(sin)) || listen(l, 8)) {
		call_failed("listen", errno);
		return -1;
	}
	say("listening");
	return l;
}

static int take(int l)
{
	socklen_t len = sizeof(want_peer);
	int c = accept(l, (struct sockaddr *)&want_peer, &len);

	if (c < 0 || nonblock(c) || name_of(c, false, &want_me)) {
		call_failed("accept", errno);
		return -1;
	}
	return c;
}

/*
 * Every shape's start: accept on @l into *@c, then fork (with a pipe in
 * @p first, when given, for the two to say when).  The fork's pid, or -1
 * when a step failed (said).
 */
static pid_t take_and_fork(int l, int *c, int p[2])
{
	pid_t pid;

	*c = take(l);
	if (*c < 0)
		return -1;
	if (p && pipe(p)) {
		call_failed("pipe", errno);
		return -1;
	}
	pid = fork();
	if (pid < 0)
		call_failed("fork", errno);
	return pid;
}

/*
 * An echo until EOF (or of @limit bytes); @eager: it reads before it
 * polls.
 */
static int echo(int c, long limit, bool eager)
{
	struct plan p = {.echo = true, .in_len = limit, .eager = eager};

	return run(c, &p);
}

/* first's children: an echo, or cat(1) run on the connection. */
static int serve_echo(int c)
{
	return echo(c, -1, false); /* no close: exit does it */
}

/*
 * inetd's and sshd's way: the connection becomes the standard input and
 * output of a program executed in the child, here cat(1), an echo.
 */
static int serve_exec(int c)
{
	if (fcntl(c, F_SETFL, 0) || dup2(c, 0) < 0 || dup2(c, 1) < 0)
		return call_failed("fcntl or dup2", errno);
	close(c);
	execlp("cat", "cat", (char *)NULL);
	return call_failed("exec cat", errno);
}

static int first(int l, int conns, int (*serve)(int c))
{
	int i, c, bad = 0;
	pid_t pids[64];
	long long end;

	if (conns < 1 || conns > 64)
		return failed("usage", "1 to 64 connections");
	for (i = 1; i <= conns; i++) {
		conn = i;
		c = take(l);
		if (c < 0)
			return 1;
		pids[i - 1] = fork();
		if (pids[i - 1] < 0)
			return call_failed("fork", errno);
		if (!pids[i - 1]) {
			become("child", i);
			close(l);
			_exit(serve(c));
		}
		close(c); /* the child's connection must survive this */
		say("accepted, child %d", (int)pids[i - 1]);
	}
	end = now_ms() + REAP_MS;
	for (i = 1; i <= conns; i++) {
		conn = i;
		bad |= reap(pids[i - 1], "child", end);
	}
	return bad;
}

/*
 * The rsync daemon's child: it asks the connection's addresses before
 * anything else (and goes on to echo whatever they said).
 */
static int names_first(int l)
{
	int c, bad;
	pid_t pid = take_and_fork(l, &c, NULL);

	if (pid < 0)
		return 1;
	if (!pid) {
		become("child", 1);
		close(l);
		sent = got = 0;
		bad = names(c);
		bad |= echo(c, -1, false);
		close(c);
		_exit(bad);
	}
	close(c);
	say("accepted, child %d", (int)pid);
	return reap(pid, "child", now_ms() + REAP_MS);
}

/* A child that holds the listener and exits at once: it is shared. */
static int share_listener(void)
{
	pid_t pid = fork();

	if (pid < 0)
		return call_failed("fork", errno);
	if (!pid)
		_exit(0);
	return reap(pid, "worker", now_ms() + REAP_MS);
}

/*
 * split's shape; @in_turn: owner-first's, the listener shared first and
 * the child reading only once the parent has written everything.
 */
static int split(int l, long bytes, bool in_turn)
{
	struct plan in = {.in_seed = CSEED(1),
			  .in_len = bytes,
			  .eof = true,
			  .eager = true};
	struct plan out = {
		.out_seed = SSEED(1), .out_len = bytes, .eager = true};
	int c, p[2], bad;
	pid_t pid;

	if (in_turn && share_listener())
		return 1;
	pid = take_and_fork(l, &c, in_turn ? p : NULL);
	if (pid < 0)
		return 1;
	if (!pid) {
		become("child", 1);
		close(l);
		if (in_turn)
			close(p[1]);
		bad = (in_turn && await(p[0])) || run(c, &in);
		close(c);
		_exit(bad);
	}
	say("accepted, child %d", (int)pid);
	bad = run(c, &out);
	if (in_turn)
		bad |= tell(p[1]);
	bad |= reap(pid, "child", now_ms() + REAP_MS);
	close(c);
	return bad;
}

static int split_connect(int l, long bytes)
{
	struct plan p = {.out_seed = SSEED(1),
			 .out_len = bytes,
			 .shut = true,
			 .in_seed = CSEED(1),
			 .in_len = bytes,
			 .eof = true};
	int c = take(l), bad;

	if (c < 0)
		return 1;
	say("accepted");
	bad = run(c, &p);
	close(c);
	return bad;
}

static int unused(int l, long bytes)
{
	int c, bad;
	pid_t pid = take_and_fork(l, &c, NULL);

	if (pid < 0)
		return 1;
	if (!pid) {
		usleep(500000); /* holds c and l, touches neither */
		_exit(0);
	}
	say("accepted, holder %d", (int)pid);
	bad = echo(c, bytes, true);
	bad |= reap(pid, "holder", now_ms() + 10000);
	close(c);
	return bad;
}

static int closed_unused(int l, long bytes)
{
	int c, p[2], bad;
	pid_t pid = take_and_fork(l, &c, p);

	if (pid < 0)
		return 1;
	if (!pid) {
		become("holder", 1);
		close(c);
		if (tell(p[1]))
			_exit(1);
		sleep(20);
		_exit(0);
	}
	say("accepted, holder %d", (int)pid);
	bad = await(p[0]) || echo(c, bytes, true);
	close(c);
	say("closed it; holder %d lives on", (int)pid);
	return bad; /* without waiting for the holder */
}

static int grandchild(int l)
{
	int c, bad;
	pid_t gpid, pid = take_and_fork(l, &c, NULL);

	if (pid < 0)
		return 1;
	if (!pid) {
		become("child", 1);
		close(l);
		gpid = fork();
		if (gpid < 0)
			_exit(call_failed("fork", errno));
		if (!gpid) {
			become("grandchild", 1);
			bad = echo(c, -1, true);
			close(c);
			_exit(bad);
		}
		close(c);
		say("grandchild %d", (int)gpid);
		_exit(reap(gpid, "grandchild", now_ms() + REAP_MS));
	}
	close(c);
	say("accepted, child %d", (int)pid);
	return reap(pid, "child", now_ms() + REAP_MS + 2000);
}

static int parent_first(int l)
{
	int c, p[2], bad;
	pid_t pid = take_and_fork(l, &c, p);

	if (pid < 0)
		return 1;
	if (!pid) {
		become("child", 1);
		close(l);
		close(p[1]);
		if (await(p[0]))
			_exit(1);
		bad = echo(c, -1, false);
		close(c);
		_exit(bad);
	}
	close(c);
	say("accepted and closed, child %d", (int)pid);
	bad = tell(p[1]);
	return bad | reap(pid, "child", now_ms() + REAP_MS + 2000);
}

static int server(const char *port, const char *shape, long bytes, int conns)
{
	int l;

	become("server", 0);
	l = listen_on(port);
	if (l < 0)
		return 1;
	conn = 1;
	if (!strcmp(shape, "first"))
		return first(l, conns, serve_echo);
	if (!strcmp(shape, "exec"))
		return first(l, conns, serve_exec);
	if (!strcmp(shape, "names"))
		return names_first(l);
	if (!strcmp(shape, "split"))
		return split(l, bytes, false);
	if (!strcmp(shape, "split-connect"))
		return split_connect(l, bytes);
	if (!strcmp(shape, "unused"))
		return unused(l, bytes);
	if (!strcmp(shape, "closed-unused"))
		return closed_unused(l, bytes);
	if (!strcmp(shape, "grandchild"))
		return grandchild(l);
	if (!strcmp(shape, "parent-first"))
		return parent_first(l);
	if (!strcmp(shape, "owner-first"))
		return split(l, bytes, true);
	return failed("usage", "no shape %s", shape);
}

/* The connecting side of split-connect: a reader child, a writer. */
static int client_split(int s, long bytes)
{
	struct plan in = {.in_seed = SSEED(conn), .in_len = bytes, .eof = true};
	struct plan out = {
		.out_seed = CSEED(conn), .out_len = bytes, .eager = true};
	pid_t pid = fork();
	int bad;

	if (pid < 0)
		return call_failed("fork", errno);
	if (!pid) {
		become("client-reader", conn);
		bad = run(s, &in);
		close(s);
		_exit(bad);
	}
	role = "client-writer";
	say("reader %d", (int)pid);
	bad = run(s, &out);
	bad |= reap(pid, "client-reader", now_ms() + REAP_MS);
	close(s);
	return bad;
}

static int client(const char *addr, const char *port, const char *shape,
		  long bytes, int c)
{
	struct addrinfo hints = {.ai_family = AF_INET,
				 .ai_socktype = SOCK_STREAM},
			*res;
	struct plan p = {.out_seed = CSEED(c),
			 .out_len = bytes,
			 .in_seed = CSEED(c),
			 .in_len = bytes,
			 .eof = true};
	int s, bad;

	become("client", c);
	if (getaddrinfo(addr, port, &hints, &res))
		return failed("usage", "no address %s", addr);
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || connect(s, res->ai_addr, res->ai_addrlen))
		return call_failed("connect", errno);
	if (nonblock(s))
		return call_failed("fcntl", errno);
	if (name_of(s, false, &want_me) || name_of(s, true, &want_peer))
		return call_failed("getsockname or getpeername", errno);
	if (!strcmp(shape, "split-connect"))
		return client_split(s, bytes);
	if (!strcmp(shape, "split") || !strcmp(shape, "owner-first"))
		p.in_seed = SSEED(c);
	/* the server's close ends these; the others end at our shutdown */
	p.shut = strcmp(shape, "unused") && strcmp(shape, "closed-unused");
	if (!strcmp(shape, "closed-unused"))
		p.eof_ms = 5000;
	bad = run(s, &p);
	close(s);
	return bad;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3], atol(argv[4]),
			      argc == 6 ? atoi(argv[5]) : 1);
	if ((argc == 6 || argc == 7) && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3], argv[4], atol(argv[5]),
			      argc == 7 ? atoi(argv[6]) : 1);
	fprintf(stderr, "usage: see the comment at the top of fork_share.c\n");
	return 2;
}
