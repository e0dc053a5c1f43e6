// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * A plain TCP program for the preload's fork tests
 * (tests/system/preload-apps-in-guest.sh); it knows nothing of RDMA:
 *
 *   fork_echo server PORT N fork|nofork|nofork-nobody|fork-poll|...
 *       accept N connections; echo each until EOF, in a forked child
 *       (the parent closes its copy at once) or in the process itself;
 *       nofork-nobody: in the process itself, which becomes nobody
 *       (setgroups, setgid, setuid 65534) after it listens and before
 *       it accepts, as a server that binds as root does (lighttpd);
 *       fork-poll: the child waits in poll() for each chunk before it
 *       reads; fork-setid: after the first chunk went back, the child
 *       sets the group list, group and user ids it already has (as the
 *       rsync daemon does for a module) and goes on; fork-epoll: the
 *       child's socket is non-blocking and it waits in epoll whenever a
 *       read or write says EAGAIN, as an event-driven server does;
 *       fork-greet: the child greets first (see client-greet);
 *       fork-setuid: after the first chunk went back, the child becomes
 *       nobody (setgroups, setgid, setuid 65534: new ids, as the rsync
 *       daemon for a module with "uid = nobody"; run as root);
 *       fork-split: after the first chunk went back, the child forks a
 *       reader that passes what the socket brings through a pipe to the
 *       child, which writes it back (the rsync daemon's receiver and
 *       generator: one connection, read in one process, written in
 *       another);
 *       fork-threads: after the first chunk went back, a thread of the
 *       child reads the socket and passes its bytes through a pipe to
 *       the main thread, which writes them back and, after every fourth
 *       chunk, forks a helper that exits at once: each fork comes while
 *       the reader thread may be blocked in read() and with the writer
 *       between writes (a threaded server that runs helpers);
 *       fork-exec: after the first chunk went back, the child forks a
 *       process that runs cat(1) on the connection (its standard input
 *       and output: a server running a handler) and waits for it;
 *       exec: after the first chunk went back, the child itself runs
 *       a shell on the connection that says READY and runs cat(1);
 *       fork-busy: as fork-epoll, while a thread of the server's makes
 *       a socket, adds it to an epoll set, takes it out and closes it,
 *       over and over: each fork may come while that thread is inside
 *       the socket layer's bookkeeping, which the child then uses (a
 *       threaded server forking a worker per connection)
 *   fork_echo client|client-nb|client-greet ADDR PORT BYTES
 *       send BYTES of random data in 64 KiB chunks, reading each echo
 *       back and comparing it; client-nb: on a non-blocking socket,
 *       waiting in epoll whenever a call says EAGAIN; client-greet: first
 *       both ends send a greeting at once, as the rsync daemon and its
 *       client do, on non-blocking sockets with rsync's rule for writes
 *       (safe_write): a write that says EAGAIN waits in select() for the
 *       socket to be writable, and a write after select() said so must
 *       make progress
 *   fork_echo client-ready ADDR PORT BYTES
 *       client, waiting after the first echo for a line READY (the
 *       server's exec mode) before it sends more
 *   fork_echo client-forkclose ADDR PORT BYTES
 *       the same, but half way a forked child closes the inherited socket
 *       and exits; the rest must still flow
 * Prints "OK n" or "FAIL why"; exit status 0 on OK.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <netdb.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#define CHUNK 65536

static int fail(const char *what)
{
	printf("FAIL %s: %s\n", what, strerror(errno));
	fflush(stdout); /* forked children end in _exit() */
	return 1;
}

enum mode {
	NOFORK,
	FORK,
	FORK_POLL,
	FORK_SETID,
	FORK_EPOLL,
	FORK_GREET,
	FORK_SETUID,
	FORK_SPLIT,
	FORK_THREADS,
	NOFORK_NOBODY,
	FORK_EXEC,
	EXEC_SELF,
	FORK_BUSY,
};

/* exec's program's first line: sent by the new image, over TCP. */
#define READY "READY"

/* rsync's greeting: 41 bytes, sent by each end before it reads. */
#define GREETING "@RSYNCD: 31.0 sha512 sha256 sha1 md5 md4\n"

/* Waits up to 30 s in select() for fd to be readable or writable. */
static int select_for(int fd, bool out)
{
	struct timeval tv = {.tv_sec = 30};
	fd_set set;

	FD_ZERO(&set);
	FD_SET(fd, &set);
	return select(fd + 1, out ? NULL : &set, out ? &set : NULL, NULL,
		      &tv) == 1
		       ? 0
		       : -1;
}

/*
 * All of @len bytes to (@out) or from a non-blocking fd, waiting in
 * select() whenever a call says EAGAIN.  Writes keep rsync's rule (see
 * the top): the write after select() said writable must make progress.
 */
static int all_nb(int fd, char *buf, size_t len, bool out)
{
	bool selected = false;
	ssize_t n;

	while (len) {
		n = out ? write(fd, buf, len) : read(fd, buf, len);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			selected = false;
			continue;
		}
		if (n == 0 || errno != EAGAIN)
			return fail(out ? "write" : "read");
		if (out && selected) {
			printf("FAIL select() said writable, write() said "
			       "EAGAIN\n");
			return -1;
		}
		if (select_for(fd, out))
			return fail(out ? "select for writing"
					: "select for reading");
		selected = true;
	}
	return 0;
}

/*
 * Both ends greet at once on a non-blocking socket, then read the
 * other's greeting; the socket is blocking again for the rest.
 */
static int greet(int fd)
{
	char mine[] = GREETING, got[sizeof(GREETING) - 1];
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK))
		return fail("non-blocking");
	if (all_nb(fd, mine, sizeof(got), true) ||
	    all_nb(fd, got, sizeof(got), false))
		return 1;
	if (memcmp(got, GREETING, sizeof(got))) {
		printf("FAIL the peer's greeting differs\n");
		return 1;
	}
	return fcntl(fd, F_SETFL, fl) ? fail("blocking") : 0;
}

/*
 * Non-blocking I/O: the epoll set @ep holds the socket; each call that
 * says EAGAIN waits (30 s at most) for what it needs, then goes again.
 */
static int wait_for(int ep, int fd, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.fd = fd};

	if (epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev))
		return -1;
	return epoll_wait(ep, &ev, 1, 30000) == 1 ? 0 : -1;
}

static ssize_t io_nb(int ep, int fd, char *buf, size_t len, bool out)
{
	ssize_t n;

	for (;;) {
		n = out ? write(fd, buf, len) : read(fd, buf, len);
		if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			return n;
		if (wait_for(ep, fd, out ? EPOLLOUT : EPOLLIN))
			return -1;
	}
}

/* A non-blocking @fd in a new epoll set (-1 on failure). */
static int nb_set(int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
	int fl = fcntl(fd, F_GETFL), ep;

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK))
		return -1;
	ep = epoll_create1(0);
	if (ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
		close(ep);
		ep = -1;
	}
	return ep;
}

/* The ids it has, set again: new credentials, the same ids. */
static int same_ids(void)
{
	gid_t groups[64];
	int n = getgroups(64, groups);

	if (n < 0 || setgroups((size_t)n, groups) || setgid(getgid()) ||
	    setuid(getuid()))
		return -1;
	return 0;
}

/* New ids: nobody's. */
static int nobody(void)
{
	gid_t g = 65534;

	return setgroups(1, &g) || setgid(g) || setuid(65534) ? -1 : 0;
}

static int write_all(int fd, const char *buf, ssize_t n)
{
	ssize_t w;

	for (; n > 0; buf += w, n -= w) {
		w = write(fd, buf, (size_t)n);
		if (w <= 0)
			return -1;
	}
	return 0;
}

/*
 * The rest of the connection in two processes: a forked reader passes
 * the socket's bytes through a pipe to this one, which writes them back.
 */
static int split(int c)
{
	char buf[CHUNK];
	int p[2], st;
	ssize_t n;
	pid_t pid;

	if (pipe(p))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		close(p[0]);
		while ((n = read(c, buf, sizeof(buf))) > 0)
			if (write_all(p[1], buf, n))
				_exit(1);
		_exit(n < 0);
	}
	close(p[1]);
	while ((n = read(p[0], buf, sizeof(buf))) > 0)
		if (write_all(c, buf, n))
			return 1;
	if (n < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st))
		return 1;
	return 0;
}

struct reader {
	int sock, pipe;
	int failed; /* the errno of a failed read, -1 after a short pipe write */
};

/* The reader thread: the socket's bytes into the pipe until EOF. */
static void *reader_thread(void *arg)
{
	struct reader *r = arg;
	char *buf = malloc(CHUNK);
	ssize_t n = -1;

	while (buf && (n = read(r->sock, buf, CHUNK)) > 0)
		if (write_all(r->pipe, buf, n))
			break;
	r->failed = n < 0 ? errno : n > 0 ? -1 : 0;
	close(r->pipe);
	free(buf);
	return NULL;
}

/* Forks a helper that exits at once; 0 when it did. */
static int run_helper(void)
{
	pid_t pid = fork();
	int st;

	if (!pid)
		_exit(0);
	return pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st);
}

/*
 * The rest of the connection in two threads: one reads the socket, this
 * one writes back what it passes and forks a helper now and then.
 */
static int threads(int c)
{
	struct reader r = {.sock = c};
	char buf[CHUNK];
	int p[2], chunks = 0, bad = 0;
	pthread_t t;
	ssize_t n;

	if (pipe(p))
		return 1;
	r.pipe = p[1];
	if (pthread_create(&t, NULL, reader_thread, &r))
		return 1;
	while ((n = read(p[0], buf, sizeof(buf))) > 0) {
		if (write_all(c, buf, n)) {
			bad = fail("write in the main thread");
			break;
		}
		if (++chunks % 4 == 0 && run_helper()) {
			bad = fail("helper");
			break;
		}
	}
	if (bad)
		shutdown(c, SHUT_RDWR); /* ends the reader's read */
	pthread_join(t, NULL);
	close(p[0]);
	if (r.failed > 0) {
		errno = r.failed;
		return fail("read in the reader thread");
	}
	return bad || n < 0 || r.failed;
}

static ssize_t next_chunk(int c, char *buf, size_t len, enum mode mode)
{
	struct pollfd p = {.fd = c, .events = POLLIN};

	if (mode == FORK_POLL && poll(&p, 1, 30000) != 1)
		return -1;
	return read(c, buf, len);
}

static int echo_nb(int c)
{
	int ep = nb_set(c);
	char buf[CHUNK];
	ssize_t n, w, off;

	if (ep < 0)
		return 1;
	while ((n = io_nb(ep, c, buf, sizeof(buf), false)) > 0) {
		for (off = 0; off < n; off += w) {
			w = io_nb(ep, c, buf + off, (size_t)(n - off), true);
			if (w <= 0)
				return 1;
		}
	}
	return n < 0;
}

/*
 * cat(1) on the connection, as its standard input and output; @banner:
 * after a line of its own ("READY", which client-ready waits for).
 */
static int exec_cat(int c, bool banner)
{
	if (dup2(c, 0) < 0 || dup2(c, 1) < 0)
		return 1;
	close(c);
	if (banner)
		execlp("sh", "sh", "-c", "echo " READY "; exec cat",
		       (char *)NULL);
	else
		execlp("cat", "cat", (char *)NULL);
	_exit(127);
}

/* The rest of the connection in cat(1), run by a child of this one. */
static int fork_exec(int c)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return 1;
	if (!pid)
		_exit(exec_cat(c, false));
	close(c);
	return waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st);
}

/*
 * exec: the whole first chunk echoed, then the shell: a byte of the
 * client's left unread would end with this image.
 */
static int exec_after_first(int c)
{
	static char buf[CHUNK];
	ssize_t n;
	size_t got = 0;

	while (got < CHUNK) {
		n = read(c, buf + got, CHUNK - got);
		if (n <= 0)
			return 1;
		got += (size_t)n;
	}
	return write_all(c, buf, CHUNK) || exec_cat(c, true);
}

static int echo(int c, enum mode mode)
{
	char buf[CHUNK];
	ssize_t n, w, off;
	bool first = true;

	if (mode == FORK_EPOLL || mode == FORK_BUSY)
		return echo_nb(c);
	if (mode == EXEC_SELF)
		return exec_after_first(c);
	if (mode == FORK_GREET && greet(c))
		return 1;
	while ((n = next_chunk(c, buf, sizeof(buf), mode)) > 0) {
		for (off = 0; off < n; off += w) {
			w = write(c, buf + off, (size_t)(n - off));
			if (w <= 0)
				return 1;
		}
		if (first && mode == FORK_SETID && same_ids())
			return 1;
		if (first && mode == FORK_SETUID && nobody())
			return 1;
		if (first && mode == FORK_SPLIT)
			return split(c);
		if (first && mode == FORK_THREADS)
			return threads(c);
		if (first && mode == FORK_EXEC)
			return fork_exec(c);
		first = false;
	}
	return n < 0;
}

static bool churn_stop;

/*
 * fork-busy's thread: sockets made, in and out of a set (many times: that
 * costs no system call, so most of the thread's time is spent there),
 * closed.
 */
static void *churn(void *arg)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int ep = epoll_create1(0), s, i;

	(void)arg;
	while (ep >= 0 && !__atomic_load_n(&churn_stop, __ATOMIC_RELAXED)) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0)
			continue;
		for (i = 0; i < 64; i++) {
			epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
			epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL);
		}
		close(s);
	}
	if (ep >= 0)
		close(ep);
	return NULL;
}

static int server(const char *port, int n, enum mode mode)
{
	struct sockaddr_in sin;
	int l = socket(AF_INET, SOCK_STREAM, 0), c, i, one = 1, bad = 0, st;
	pthread_t busy;
	pid_t pid;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)atoi(port));
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l < 0 || bind(l, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(l, 8))
		return fail("listen");
	if (mode == NOFORK_NOBODY && nobody())
		return fail("becoming nobody");
	if (mode == FORK_BUSY && pthread_create(&busy, NULL, churn, NULL))
		return fail("thread");
	printf("LISTENING\n");
	fflush(stdout);
	for (i = 0; i < n; i++) {
		c = accept(l, NULL, NULL);
		if (c < 0)
			return fail("accept");
		if (mode == NOFORK || mode == NOFORK_NOBODY) {
			bad |= echo(c, mode);
			close(c);
			continue;
		}
		pid = fork();
		if (pid < 0)
			return fail("fork");
		if (!pid) {
			close(l);
			_exit(echo(c, mode));
		}
		close(c); /* the child's connection must survive this */
	}
	if (mode == FORK_BUSY) {
		__atomic_store_n(&churn_stop, true, __ATOMIC_RELAXED);
		pthread_join(busy, NULL);
	}
	while ((pid = wait(&st)) > 0) {
		if (WIFEXITED(st) && !WEXITSTATUS(st))
			continue;
		bad = 1;
		/* How each child ended says where to look. */
		if (WIFSIGNALED(st))
			printf("child %d: killed by signal %d\n", (int)pid,
			       WTERMSIG(st));
		else
			printf("child %d: exit status %d\n", (int)pid,
			       WEXITSTATUS(st));
	}
	printf(bad ? "FAIL echo\n" : "OK %d\n", n);
	return bad;
}

/* Blocking I/O when @ep < 0. */
static int xfer(int s, int ep, char *out, char *in, size_t len)
{
	size_t got = 0;
	ssize_t n;

	for (size_t off = 0; off < len; off += (size_t)n) {
		n = ep < 0 ? write(s, out + off, len - off)
			   : io_nb(ep, s, out + off, len - off, true);
		if (n <= 0)
			return -1;
	}
	while (got < len) {
		n = ep < 0 ? read(s, in + got, len - got)
			   : io_nb(ep, s, in + got, len - got, false);
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return memcmp(out, in, len) ? -2 : 0;
}

/* All of READY's line, on a blocking socket: 0 when it came whole. */
static int wait_ready(int s)
{
	char line[sizeof(READY)];
	size_t got = 0;
	ssize_t n;

	while (got < sizeof(line)) {
		n = read(s, line + got, sizeof(line) - got);
		if (n <= 0)
			return 1;
		got += (size_t)n;
	}
	return memcmp(line, READY "\n", sizeof(line)) != 0;
}

static int client(const char *addr, const char *port, long bytes,
		  bool fork_close, bool nb, bool greets, bool ready)
{
	struct addrinfo hints = {.ai_family = AF_INET,
				 .ai_socktype = SOCK_STREAM},
			*res;
	char *out = malloc(CHUNK), *in = malloc(CHUNK);
	long done = 0;
	int s, i, r, st, ep = -1;
	pid_t pid;

	if (!out || !in || getaddrinfo(addr, port, &hints, &res))
		return fail("setup");
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || connect(s, res->ai_addr, res->ai_addrlen))
		return fail("connect");
	if (greets && greet(s))
		return 1;
	if (nb && (ep = nb_set(s)) < 0)
		return fail("non-blocking");
	srand((unsigned int)getpid());
	while (done < bytes) {
		if (fork_close && done >= bytes / 2) {
			fork_close = false;
			pid = fork();
			if (!pid) {
				close(s); /* must not end the parent's */
				_exit(0);
			}
			if (pid < 0 || waitpid(pid, &st, 0) != pid)
				return fail("fork");
		}
		for (i = 0; i < CHUNK; i++)
			out[i] = (char)rand();
		r = xfer(s, ep, out, in, CHUNK);
		if (r) {
			printf("FAIL %s after %ld bytes\n",
			       r == -2 ? "echo differs" : "transfer", done);
			return 1;
		}
		done += CHUNK;
		if (ready && done == CHUNK && wait_ready(s)) {
			printf("FAIL no " READY " line after the first echo\n");
			return 1;
		}
	}
	close(s);
	printf("OK %ld\n", done);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	static const char *const modes[] = {
		"nofork",	"fork",		 "fork-poll",	"fork-setid",
		"fork-epoll",	"fork-greet",	 "fork-setuid", "fork-split",
		"fork-threads", "nofork-nobody", "fork-exec",	"exec",
		"fork-busy"};
	static const char *const clients[] = {"client", "client-nb",
					      "client-forkclose",
					      "client-greet", "client-ready"};
	unsigned int m;

	for (m = 0; argc == 5 && !strcmp(argv[1], "server") &&
		    m < sizeof(modes) / sizeof(modes[0]);
	     m++)
		if (!strcmp(argv[4], modes[m]))
			return server(argv[2], atoi(argv[3]), (enum mode)m);
	for (m = 0; argc == 5 && m < sizeof(clients) / sizeof(clients[0]); m++)
		if (!strcmp(argv[1], clients[m]))
			return client(argv[2], argv[3], atol(argv[4]), m == 2,
				      m == 1, m == 3, m == 4);
	fprintf(stderr, "usage: see the comment at the top of fork_echo.c\n");
	return 2;
}
