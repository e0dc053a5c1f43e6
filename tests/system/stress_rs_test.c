// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rsockets under a program that closes sockets while its other threads
 * use them, and under a hostile peer, written as an outside
 * program would be: public calls only, its own threads and checks.
 *
 *   stress_rs_test stream ADDR PORT [ITER]
 *       a connected stream pair per iteration; on the accepted socket one
 *       thread blocks in rrecv, one in rsend (the peer never reads), one in
 *       rpoll, one in repoll_wait; the main thread rcloses it.  Each must
 *       end: rrecv/rsend with -1/EBADF, rpoll with POLLNVAL, repoll_wait
 *       forgetting the socket (a pipe in its set then reports).
 *   stream_listen ADDR PORT [ITER]
 *       threads blocked in raccept and rpoll on a listener; rclose.
 *   dgram ADDR PORT [ITER]
 *       a datagram socket with threads in rrecv, rpoll, repoll_wait and a
 *       sending loop (rsendto to a peer that never reads); rclose.
 *   preload ADDR PORT [ITER]
 *       (run under LD_PRELOAD=librspreload.so) plain socket calls: a
 *       reader thread blocked in recv(2) on an accepted connection while
 *       the main thread close(2)s it: recv returns -1/EBADF.
 *   spoof ADDR PORT [COUNT [any]]
 *       a datagram rsocket on ADDR:PORT receives COUNT well-formed UDP
 *       resolver datagrams (rdma-core's header), each from a new source
 *       (127.0.0.2-.251 on loopback, a fresh port each); every one must
 *       arrive with its source, and the process's resident memory must
 *       stay flat once RDMA_RS_MAX_DGRAM_DEST destinations exist (the
 *       script sets it low): the last 80% of the flood may not add more
 *       than 1 KiB of resident memory per 100 datagrams on top of the
 *       first 20%'s (an unbounded map adds its destination for each).
 *       "any": report the memory, do not judge it (sanitizer builds).
 *
 * Sleeps in the main thread before each close only vary the moment of
 * the close (a thread may still be entering its call): every outcome
 * named above is checked whatever the moment.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <rdma/rsocket.h>

#include "harness.h"

static struct sockaddr_storage srv_addr;
static socklen_t srv_len;
static int iterations;

static void parse_args(int argc, char **argv, int def_iter)
{
	if (argc < 3)
		hx_fail("usage: %s ADDR PORT [ITER]", argv[0]);
	srv_len = hx_parse_addr(argv[1], (unsigned short)atoi(argv[2]),
				&srv_addr);
	iterations = argc > 3 ? atoi(argv[3]) : def_iter;
	if (iterations <= 0)
		hx_fail("bad count %s", argv[3]);
}

static struct sockaddr *srv(void)
{
	return (struct sockaddr *)&srv_addr;
}

/* Vary the moment of the close: 0 to 4 ms after the threads started. */
static void close_delay(int i)
{
	usleep((useconds_t)(i % 5) * 1000);
}

/* --- one blocked call per thread ---------------------------------------- */

enum what { W_RECV, W_SEND, W_POLL, W_EPOLL, W_ACCEPT, W_SENDTO, W_NR };

struct waiter {
	enum what what;
	int s;
	int pipe_rd; /* in rpoll / repoll_wait sets: ends a wait after the test */
	int epfd;
	pthread_t thread;
	long ret;
	int err;
	short revents; /* rpoll: the socket's */
	uint32_t ev_data; /* repoll_wait: the first event's data */
	struct sockaddr_storage peer; /* W_SENDTO */
	socklen_t peer_len;
};

static void *wait_run(void *arg)
{
	static char buf[65536];
	struct waiter *w = arg;
	struct pollfd pfd[2];
	struct epoll_event ev[4];
	long n;

	switch (w->what) {
	case W_RECV:
		w->ret = rrecv(w->s, buf, sizeof(buf), 0);
		break;
	case W_SEND: /* the peer never reads: fills its window, then blocks */
		while ((n = rsend(w->s, buf, sizeof(buf), 0)) > 0)
			;
		w->ret = n;
		break;
	case W_SENDTO:
		while ((n = rsendto(w->s, buf, 64, 0,
				    (struct sockaddr *)&w->peer, w->peer_len)) >
		       0)
			;
		w->ret = n;
		break;
	case W_ACCEPT:
		w->ret = raccept(w->s, NULL, NULL);
		break;
	case W_POLL:
		pfd[0].fd = w->s;
		pfd[0].events = POLLIN;
		pfd[1].fd = w->pipe_rd;
		pfd[1].events = POLLIN;
		w->ret = rpoll(pfd, 2, -1);
		w->revents = pfd[0].revents;
		break;
	case W_EPOLL:
		w->ret = repoll_wait(w->epfd, ev, 4, -1);
		w->ev_data = w->ret > 0 ? ev[0].data.u32 : 0;
		break;
	default:
		break;
	}
	w->err = errno;
	return NULL;
}

static void wait_start(struct waiter *w, enum what what, int s, int pipe_rd)
{
	struct epoll_event ev = {.events = EPOLLIN};

	w->what = what;
	w->s = s;
	w->pipe_rd = pipe_rd;
	w->epfd = -1;
	if (what == W_EPOLL) {
		w->epfd = repoll_create(0);
		CHECK(w->epfd >= 0, "repoll_create: %s", strerror(errno));
		ev.data.u32 = 1;
		CHECK_OK(repoll_ctl(w->epfd, EPOLL_CTL_ADD, s, &ev));
		ev.data.u32 = 2;
		CHECK_OK(repoll_ctl(w->epfd, EPOLL_CTL_ADD, pipe_rd, &ev));
	}
	CHECK(!pthread_create(&w->thread, NULL, wait_run, w), "pthread_create");
}

static const char *what_name[W_NR] = {"rrecv",	     "rsend",	"rpoll",
				      "repoll_wait", "raccept", "rsendto"};

/* Join @w and check how its call ended after the close. */
static void wait_check(struct waiter *w)
{
	const char *name = what_name[w->what];

	pthread_join(w->thread, NULL);
	switch (w->what) {
	case W_POLL:
		/*
		 * POLLNVAL for the socket if the call held it when it was
		 * closed (rsocket_close_test checks that exactly), or the
		 * pipe that ends the wait after the test.
		 */
		CHECK(w->ret >= 1, "%s returned %ld (%s)", name, w->ret,
		      strerror(w->err));
		break;
	case W_EPOLL:
		/* The closed socket is forgotten: only the pipe reports. */
		CHECK(w->ret == 1 && w->ev_data == 2,
		      "%s returned %ld, first event %u (%s)", name, w->ret,
		      w->ev_data, strerror(w->err));
		CHECK_OK(close(w->epfd)); /* the man page: close(2) */
		break;
	default:
		CHECK(w->ret == -1 && w->err == EBADF,
		      "%s returned %ld errno %d (%s), want -1 EBADF", name,
		      w->ret, w->err, strerror(w->err));
	}
}

/* Release any rpoll / repoll_wait still asleep, then check everyone. */
static void wait_all(struct waiter *w, int n, int pipe_wr)
{
	int i;

	CHECK(write(pipe_wr, "x", 1) == 1, "pipe write");
	for (i = 0; i < n; i++)
		wait_check(&w[i]);
}

static void drain_pipe(int fd)
{
	char b[16];

	while (read(fd, b, sizeof(b)) > 0)
		;
}

static void make_pipe(int p[2])
{
	CHECK(!pipe2(p, O_NONBLOCK | O_CLOEXEC), "pipe2: %s", strerror(errno));
}

/* --- stream --------------------------------------------------------------- */

struct connector {
	pthread_t thread;
	int s;
	int err;
};

static void *connect_run(void *arg)
{
	struct connector *c = arg;

	c->s = rsocket(srv_addr.ss_family, SOCK_STREAM, 0);
	if (c->s >= 0 && rconnect(c->s, srv(), srv_len)) {
		c->err = errno;
		rclose(c->s);
		c->s = -1;
	}
	return NULL;
}

static int stream_listener(void)
{
	int l = rsocket(srv_addr.ss_family, SOCK_STREAM, 0), on = 1;

	CHECK(l >= 0, "rsocket: %s", strerror(errno));
	rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	CHECK_OK(rbind(l, srv(), srv_len));
	CHECK_OK(rlisten(l, 16));
	return l;
}

/* One connected pair: *@client connected to the returned accepted socket. */
static int stream_pair(int l, int *client)
{
	struct connector c = {.s = -1};
	char b;
	int a;

	hx_stage("connect");
	CHECK(!pthread_create(&c.thread, NULL, connect_run, &c), "thread");
	a = raccept(l, NULL, NULL);
	CHECK(a >= 0, "raccept: %s", strerror(errno));
	pthread_join(c.thread, NULL);
	CHECK(c.s >= 0, "rconnect: %s", strerror(c.err));
	/*
	 * One byte each way first: the accept completes in this thread, not
	 * in several of the threads below at once.
	 */
	CHECK(rsend(c.s, "h", 1, 0) == 1, "rsend: %s", strerror(errno));
	CHECK(rrecv(a, &b, 1, 0) == 1, "rrecv: %s", strerror(errno));
	*client = c.s;
	return a;
}

static int run_stream(int argc, char **argv)
{
	struct waiter w[4];
	int l, a, c, i, p[2];

	parse_args(argc, argv, 30);
	make_pipe(p);
	l = stream_listener();
	for (i = 0; i < iterations; i++) {
		a = stream_pair(l, &c);
		hx_stage("iteration %d: close under rrecv, rsend, rpoll, "
			 "repoll_wait",
			 i);
		memset(w, 0, sizeof(w));
		wait_start(&w[0], W_RECV, a, p[0]);
		wait_start(&w[1], W_SEND, a, p[0]);
		wait_start(&w[2], W_POLL, a, p[0]);
		wait_start(&w[3], W_EPOLL, a, p[0]);
		close_delay(i);
		CHECK_OK(rclose(a));
		wait_all(w, 4, p[1]);
		drain_pipe(p[0]);
		/* The peer sees the end of the connection. */
		CHECK_OK(rclose(c));
	}
	hx_note("%d connections closed under 4 threads each", iterations);
	CHECK_OK(rclose(l));
	return 0;
}

static int run_stream_listen(int argc, char **argv)
{
	struct waiter w[2];
	int l, i, p[2];

	parse_args(argc, argv, 30);
	make_pipe(p);
	for (i = 0; i < iterations; i++) {
		hx_stage("iteration %d: close under raccept, rpoll", i);
		l = stream_listener();
		memset(w, 0, sizeof(w));
		wait_start(&w[0], W_ACCEPT, l, p[0]);
		wait_start(&w[1], W_POLL, l, p[0]);
		close_delay(i);
		CHECK_OK(rclose(l));
		wait_all(w, 2, p[1]);
		drain_pipe(p[0]);
	}
	hx_note("%d listeners closed under raccept and rpoll", iterations);
	return 0;
}

/* --- datagram ------------------------------------------------------------- */

static int dgram_bound(unsigned short port)
{
	struct sockaddr_storage ss = srv_addr;
	int s = rsocket(srv_addr.ss_family, SOCK_DGRAM, 0);

	CHECK(s >= 0, "rsocket(SOCK_DGRAM): %s", strerror(errno));
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
	CHECK_OK(rbind(s, (struct sockaddr *)&ss, srv_len));
	return s;
}

static int run_dgram(int argc, char **argv)
{
	unsigned short port;
	struct waiter w[4];
	int d, peer, i, p[2];

	parse_args(argc, argv, 30);
	port = ntohs(((struct sockaddr_in *)&srv_addr)->sin_port);
	make_pipe(p);
	peer = dgram_bound((unsigned short)(port + 1));
	for (i = 0; i < iterations; i++) {
		hx_stage("iteration %d: close under rrecv, rsendto, rpoll, "
			 "repoll_wait",
			 i);
		d = dgram_bound(port);
		memset(w, 0, sizeof(w));
		wait_start(&w[0], W_RECV, d, p[0]);
		w[1].peer = srv_addr;
		w[1].peer_len = srv_len;
		((struct sockaddr_in *)&w[1].peer)->sin_port =
			htons((unsigned short)(port + 1));
		wait_start(&w[1], W_SENDTO, d, p[0]);
		wait_start(&w[2], W_POLL, d, p[0]);
		wait_start(&w[3], W_EPOLL, d, p[0]);
		close_delay(i);
		CHECK_OK(rclose(d));
		wait_all(w, 4, p[1]);
		drain_pipe(p[0]);
	}
	hx_note("%d datagram sockets closed under 4 threads each", iterations);
	CHECK_OK(rclose(peer));
	return 0;
}

/* --- through librspreload ------------------------------------------------- */

struct reader {
	pthread_t thread;
	pid_t tid;
	int fd;
	long ret;
	int err;
};

static void *read_run(void *arg)
{
	struct reader *r = arg;
	char b[256];

	__atomic_store_n(&r->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	r->ret = recv(r->fd, b, sizeof(b), 0);
	r->err = errno;
	return NULL;
}

/* Until thread *@tid exists and sleeps (state S in /proc). */
static void wait_asleep(pid_t *tid)
{
	char path[64], buf[256], *p;
	pid_t t;
	FILE *f;

	while (!(t = __atomic_load_n(tid, __ATOMIC_ACQUIRE)))
		usleep(100);
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)t);
	for (;;) {
		f = fopen(path, "re");
		CHECK(f, "%s: %s", path, strerror(errno));
		p = fgets(buf, sizeof(buf), f);
		fclose(f);
		p = p ? strrchr(buf, ')') : NULL;
		if (p && p[1] == ' ' && p[2] == 'S')
			return;
		usleep(100);
	}
}

struct plain_connector {
	pthread_t thread;
	int fd;
	int err;
};

static void *plain_connect_run(void *arg)
{
	struct plain_connector *c = arg;

	c->fd = socket(srv_addr.ss_family, SOCK_STREAM, 0);
	if (c->fd >= 0 && connect(c->fd, srv(), srv_len)) {
		c->err = errno;
		close(c->fd);
		c->fd = -1;
	}
	return NULL;
}

static int run_preload(int argc, char **argv)
{
	struct plain_connector c;
	struct reader r;
	int l, a, i, on = 1;
	char b;

	parse_args(argc, argv, 20);
	l = socket(srv_addr.ss_family, SOCK_STREAM, 0);
	CHECK(l >= 0, "socket: %s", strerror(errno));
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	CHECK_OK(bind(l, srv(), srv_len));
	CHECK_OK(listen(l, 16));
	for (i = 0; i < iterations; i++) {
		hx_stage("iteration %d: connect", i);
		memset(&c, 0, sizeof(c));
		CHECK(!pthread_create(&c.thread, NULL, plain_connect_run, &c),
		      "thread");
		a = accept(l, NULL, NULL);
		CHECK(a >= 0, "accept: %s", strerror(errno));
		pthread_join(c.thread, NULL);
		CHECK(c.fd >= 0, "connect: %s", strerror(c.err));
		/* One byte first: the connection is up at both ends. */
		CHECK(send(c.fd, "h", 1, 0) == 1, "send: %s", strerror(errno));
		CHECK(recv(a, &b, 1, 0) == 1, "recv: %s", strerror(errno));
		hx_stage("iteration %d: close(2) under a recv(2)", i);
		memset(&r, 0, sizeof(r));
		r.fd = a;
		CHECK(!pthread_create(&r.thread, NULL, read_run, &r), "thread");
		/*
		 * A close racing a recv that has not started yet is the
		 * program's own race on the descriptor (ThreadSanitizer says
		 * so): wait until the reader sleeps, in its recv.
		 */
		wait_asleep(&r.tid);
		close_delay(i);
		CHECK_OK(close(a));
		pthread_join(r.thread, NULL);
		/*
		 * Entered before the close: EBADF.  A recv that only starts
		 * while close(2) runs may also find the descriptor unmapped
		 * but not yet closed: the preload's placeholder socket, not
		 * connected (ENOTCONN).
		 */
		CHECK(r.ret == -1 && (r.err == EBADF || r.err == ENOTCONN),
		      "recv returned %ld errno %d (%s), want -1 EBADF", r.ret,
		      r.err, strerror(r.err));
		CHECK_OK(close(c.fd));
	}
	hx_note("%d connections closed under a reader", iterations);
	close(l);
	return 0;
}

/* --- spoofed sources ------------------------------------------------------ */

/* rdma-core's UDP resolver header (IPv4), as a peer puts it on the wire. */
struct udp_hdr {
	uint32_t tag;
	uint8_t version;
	uint8_t op;
	uint8_t length;
	uint8_t reserved;
	uint32_t qpn;
	uint32_t addr;
};

#define UDP_TAG 0x55555555u
#define BATCH 16 /* fits the socket's queue of datagrams from UDP */

static long rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* One datagram from a fresh socket on 127.0.0.(2 + @n % 250), any port. */
static void spoof_one(int n, const struct sockaddr_in *to)
{
	struct sockaddr_in from = {.sin_family = AF_INET};
	struct {
		struct udp_hdr h;
		uint32_t seq;
	} msg;
	int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	CHECK(u >= 0, "socket: %s", strerror(errno));
	from.sin_addr.s_addr = htonl(0x7f000002u + (uint32_t)(n % 250));
	CHECK_OK(bind(u, (struct sockaddr *)&from, sizeof(from)));
	memset(&msg, 0, sizeof(msg));
	msg.h.tag = htonl(UDP_TAG);
	msg.h.version = 4;
	msg.h.op = 0; /* data */
	msg.h.length = sizeof(msg.h);
	msg.h.qpn = htonl(0x100 + (uint32_t)n % 0xfff);
	msg.h.addr = from.sin_addr.s_addr;
	msg.seq = (uint32_t)n;
	CHECK(sendto(u, &msg, sizeof(msg), 0, (const struct sockaddr *)to,
		     sizeof(*to)) == sizeof(msg),
	      "sendto: %s", strerror(errno));
	close(u);
}

/* Receive one spoofed datagram: its sequence number, from 127.0.0.x. */
static void spoof_receive(int d, int n)
{
	struct sockaddr_in from;
	socklen_t len = sizeof(from);
	uint32_t seq = 0;
	ssize_t r;

	r = rrecvfrom(d, &seq, sizeof(seq), 0, (struct sockaddr *)&from, &len);
	CHECK(r == sizeof(seq), "rrecvfrom: %zd (%s)", r, strerror(errno));
	CHECK((ntohl(from.sin_addr.s_addr) >> 24) == 127, "datagram %u from %s",
	      seq, inet_ntoa(from.sin_addr));
	(void)n;
}

static int run_spoof(int argc, char **argv)
{
	struct sockaddr_in to;
	long rss_warm = 0, rss_end, allowed;
	int d, n, k, count, warm;

	parse_args(argc, argv, 20000);
	if (srv_addr.ss_family != AF_INET)
		hx_skip("IPv4 only");
	count = iterations;
	warm = count / 5;
	d = dgram_bound(ntohs(((struct sockaddr_in *)&srv_addr)->sin_port));
	to = *(struct sockaddr_in *)&srv_addr;
	for (n = 0; n < count; n += BATCH) {
		hx_stage("datagram %d of %d", n, count);
		for (k = 0; k < BATCH; k++)
			spoof_one(n + k, &to);
		for (k = 0; k < BATCH; k++)
			spoof_receive(d, n + k);
		if (n < warm && n + BATCH >= warm)
			rss_warm = rss_kib();
	}
	rss_end = rss_kib();
	allowed = (long)(count - warm) / 100; /* 1 KiB per 100 datagrams */
	hx_note("%d spoofed sources: resident %ld KiB after %d, %ld KiB after "
		"all (growth allowed %ld KiB)",
		count, rss_warm, warm, rss_end, allowed);
	/* "any": a sanitizer's own memory grows with the traffic. */
	if (argc > 4 && !strcmp(argv[4], "any"))
		hx_note("memory not judged (%s)", argv[4]);
	else
		CHECK(rss_end - rss_warm <= allowed,
		      "resident memory grew %ld KiB over %d datagrams",
		      rss_end - rss_warm, count - warm);
	CHECK_OK(rclose(d));
	return 0;
}

static const struct hx_scenario scenarios[] = {
	{"stream", "ADDR PORT [ITER]", run_stream},
	{"stream_listen", "ADDR PORT [ITER]", run_stream_listen},
	{"dgram", "ADDR PORT [ITER]", run_dgram},
	{"preload", "ADDR PORT [ITER] (under librspreload)", run_preload},
	{"spoof", "ADDR PORT [COUNT [any]]", run_spoof},
};

int main(int argc, char **argv)
{
	return hx_main(argc, argv, scenarios,
		       sizeof(scenarios) / sizeof(scenarios[0]));
}
