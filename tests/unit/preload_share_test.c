// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Connections a forked descendant uses (src/preload/share.c, relay.c):
 * a descriptor of this process mapped to one end of an rsocket pair over
 * the fake device, as librspreload maps a program's socket, then a fork
 * as the preload's fork() makes it.  The child uses its copy as an
 * outside program would, through the kernel's calls (the runner has no
 * wrappers: the test's own app_* calls do what the preload's do); the
 * peer end stays in the test.  The expectations are TCP's for a socket
 * a fork shared: every byte reaches exactly one reader, in order, and the
 * peer reads the end of the stream once no process holds the connection;
 * a holder that executes another program on it first asks for the relay
 * (src/preload/exec_pass.c), unless the descriptor is closed on exec.
 */
#define _GNU_SOURCE
#include <config.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cm/cma.h"
#include "preload/preload.h"
#include "preload/relay.h"
#include "preload/share.h"
#include "rsocket/rs.h"
#include "rsocket/wire.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"
#include "rs_pair.h"

#define WAIT_MS 10000 /* every wait is bounded: a hang fails the test */

static int a, b; /* the connected pair: a is the program's, b the peer */
static int fd; /* the program's descriptor of a */

/* The pair, and a's file, which @kernel_fd maps to. */
static struct rsp_file *map_pair(int kernel_fd)
{
	struct rsp_file *f;

	fake_ucma_install();
	fake_verbs_install(true);
	rs_pair_connect(&a, &b, 0);
	rsp_pid = (int)getpid();
	fd = kernel_fd;
	ck_assert_int_ge(fd, 0);
	f = rsp_file_new(a, AF_INET);
	ck_assert_ptr_nonnull(f);
	rsp_set(fd, f);
	return f;
}

static void setup(void)
{
	map_pair(socket(AF_INET, SOCK_STREAM, 0)); /* the placeholder */
}

static void teardown(void)
{
	rclose(b);
	fake_ucma_uninstall();
}

/* --- what the preload's calls do (io.c, socket.c, fork.c) -------------- */

/* fork.c's rsp_get_io: a fork-mode connection nobody relays is cut. */
static bool app_lost(int d)
{
	if (!rsp_share_lost(d))
		return false;
	errno = ECONNRESET;
	return true;
}

static ssize_t app_read(int d, void *buf, size_t len)
{
	struct rsp_file *f = rsp_use(d);
	ssize_t n;

	if (!f && app_lost(d))
		return -1;
	if (!f || !rsp_read_enter(f))
		return read(d, buf, len);
	n = rread(f->rs, buf, len);
	rsp_read_leave(f);
	return n;
}

static ssize_t app_write(int d, const void *buf, size_t len)
{
	struct rsp_file *f = rsp_use(d);

	if (!f && app_lost(d))
		return -1;
	return f ? rwrite(f->rs, buf, len) : write(d, buf, len);
}

static void app_close(int d)
{
	rsp_clear(d);
	rsp_release_retired(d);
	close(d);
}

static pid_t app_fork(void)
{
	struct rsp_share_fork sf;
	pid_t pid;

	rsp_share_before_fork(&sf);
	pid = fork();
	if (pid == 0)
		rsp_pid = (int)getpid(); /* init.c's atfork handler */
	rsp_share_after_fork(&sf, pid);
	return pid;
}

/* --- helpers ----------------------------------------------------------- */

/* All @len bytes from the program's descriptor; false on EOF or error. */
static bool app_read_all(int d, void *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = app_read(d, (char *)buf + got, len - got);
		if (n <= 0)
			return false;
		got += n;
	}
	return true;
}

static bool app_write_all(int d, const void *buf, size_t len)
{
	size_t put = 0;
	ssize_t n;

	while (put < len) {
		n = app_write(d, (const char *)buf + put, len - put);
		if (n <= 0)
			return false;
		put += n;
	}
	return true;
}

/* The peer reads @len bytes, each wait bounded; how many came before EOF. */
static size_t peer_read(void *buf, size_t len)
{
	struct pollfd p = {.fd = b, .events = POLLIN};
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		if (rpoll(&p, 1, WAIT_MS) != 1)
			break;
		n = rrecv(b, (char *)buf + got, len - got, MSG_DONTWAIT);
		if (n < 0 && errno == EAGAIN)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	return got;
}

static void peer_write(const void *buf, size_t len)
{
	size_t put = 0;
	ssize_t n;

	while (put < len) {
		n = rsend(b, (const char *)buf + put, len - put, 0);
		ck_assert_int_gt(n, 0);
		put += n;
	}
}

/* The peer reads the end of the stream (bounded). */
static void peer_sees_eof(void)
{
	char c;

	ck_assert_uint_eq(peer_read(&c, 1), 0);
	ck_assert_int_eq(rrecv(b, &c, 1, MSG_DONTWAIT), 0);
}

static void wait_child(pid_t pid)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child status %#x", status);
}

/* Relays end when the last descriptor of their socket closes. */
static void no_relay_left(void)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (rsp_relay_count() && unit_ms_since(&t0) < WAIT_MS)
		usleep(1000);
	ck_assert_int_eq(rsp_relay_count(), 0);
}

/* A pattern byte for offset @i of stream @seed. */
static uint8_t pattern(unsigned int seed, size_t i)
{
	return (uint8_t)(i * 7 + seed + (i >> 9));
}

static void fill(uint8_t *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pattern(seed, i);
}

static bool matches(const uint8_t *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != pattern(seed, i))
			return false;
	return true;
}

/* The child echoes @len bytes on its copy of fd, then exits. */
static void child_echo(size_t len)
{
	uint8_t *buf = malloc(len);

	_exit(buf && app_read_all(fd, buf, len) && app_write_all(fd, buf, len)
		      ? 0
		      : 1);
}

/* The peer sends @len pattern bytes and checks that they come back. */
static void peer_echo(size_t len, unsigned int seed)
{
	uint8_t *out = malloc(len), *in = malloc(len);

	ck_assert(out && in);
	fill(out, len, seed);
	peer_write(out, len);
	ck_assert_uint_eq(peer_read(in, len), len);
	ck_assert(memcmp(in, out, len) == 0);
	free(out);
	free(in);
}

/* --- the tests ---------------------------------------------------------- */

/* socat's fork: accept, fork, the parent closes, the child serves. */
START_TEST(a_child_serves_what_its_parent_closed)
{
	pid_t pid = app_fork();

	ck_assert_int_ge(pid, 0);
	if (!pid)
		child_echo(100000);
	app_close(fd);
	peer_echo(100000, 1);
	wait_child(pid);
	peer_sees_eof();
	no_relay_left();
}
END_TEST

/*
 * What sshd's pre-authentication child does before its first use: no file
 * may grow, one descriptor at most, and a seccomp filter, here one under
 * which the calls a first use would make to ask the owner for the relay
 * end the process.
 */
static void confine(void)
{
	struct rlimit zero = {0, 0}, one = {1, 1};
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendmsg, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_recvmsg, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socketpair, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};

	if (setrlimit(RLIMIT_FSIZE, &zero) || setrlimit(RLIMIT_NOFILE, &one) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		_exit(5);
}

/*
 * A child that confines itself before its first use of the connection:
 * the preload's setrlimit and prctl (confine.c) have it relayed first,
 * and the confined child reads and writes a kernel socket only.
 */
START_TEST(a_child_that_confines_itself_is_relayed_first)
{
	pid_t pid = app_fork();

	ck_assert_int_ge(pid, 0);
	if (!pid) {
		rsp_claim_held(false); /* what the preload's calls do */
		confine();
		child_echo(5000);
	}
	peer_echo(5000, 12);
	wait_child(pid);
	app_close(fd);
	peer_sees_eof();
	no_relay_left();
}
END_TEST

/* The parent closes only once the child has asked. */
START_TEST(a_child_serves_while_its_parent_holds_it)
{
	pid_t pid = app_fork();

	ck_assert_int_ge(pid, 0);
	if (!pid)
		child_echo(5000);
	peer_echo(5000, 2);
	wait_child(pid);
	app_close(fd);
	peer_sees_eof();
	no_relay_left();
}
END_TEST

/* The peer's side of a transfer, in a thread of its own. */
struct transfer {
	pthread_t t;
	uint8_t *buf;
	size_t len;
	unsigned int seed;
	size_t done; /* bytes moved */
	bool eof; /* reading: the end of the stream came after them */
};

static void *peer_sender(void *arg)
{
	struct transfer *x = arg;

	fill(x->buf, x->len, x->seed);
	peer_write(x->buf, x->len);
	x->done = x->len;
	rshutdown(b, SHUT_WR);
	return NULL;
}

static void *peer_receiver(void *arg)
{
	struct transfer *x = arg;
	char c;

	x->done = peer_read(x->buf, x->len);
	x->eof = x->done == x->len && peer_read(&c, 1) == 0 &&
		 rrecv(b, &c, 1, MSG_DONTWAIT) == 0;
	return NULL;
}

static struct transfer *transfer_start(void *(*fn)(void *), size_t len,
				       unsigned int seed)
{
	struct transfer *x = calloc(1, sizeof(*x));

	ck_assert_ptr_nonnull(x);
	x->buf = malloc(len);
	ck_assert_ptr_nonnull(x->buf);
	x->len = len;
	x->seed = seed;
	ck_assert_int_eq(pthread_create(&x->t, NULL, fn, x), 0);
	return x;
}

static void transfer_join(struct transfer *x)
{
	pthread_join(x->t, NULL);
}

static void transfer_free(struct transfer *x)
{
	free(x->buf);
	free(x);
}

/* The child reads everything of @seed, then the end of the stream. */
static void child_reads_all(size_t len, unsigned int seed)
{
	uint8_t *buf = malloc(len), c;

	_exit(buf && app_read_all(fd, buf, len) && matches(buf, len, seed) &&
			      app_read(fd, &c, 1) == 0
		      ? 0
		      : 1);
}

/* The rsync daemon: the child reads, the parent writes, both at once. */
START_TEST(a_child_reads_while_its_parent_writes)
{
	const size_t len = 1 << 20;
	struct transfer *down, *up;
	uint8_t *out = malloc(len);
	pid_t pid = app_fork();

	ck_assert_int_ge(pid, 0);
	if (!pid)
		child_reads_all(len, 3);
	down = transfer_start(peer_sender, len, 3);
	up = transfer_start(peer_receiver, len, 4);
	ck_assert_ptr_nonnull(out);
	fill(out, len, 4);
	ck_assert(app_write_all(fd, out, len));
	app_close(fd);
	wait_child(pid);
	transfer_join(down);
	transfer_join(up);
	ck_assert_uint_eq(up->done, len);
	ck_assert(matches(up->buf, len, 4));
	ck_assert(up->eof);
	transfer_free(down);
	transfer_free(up);
	free(out);
	no_relay_left();
}
END_TEST

/* A BGSAVE: the child never touches it; the parent's path stays direct. */
/* The peer's bytes reach this process on the rsocket, no relay between. */
static void owner_reads_directly(unsigned int seed)
{
	uint8_t buf[3000];

	fill(buf, sizeof(buf), seed);
	peer_write(buf, sizeof(buf));
	memset(buf, 0, sizeof(buf));
	ck_assert(app_read_all(fd, buf, sizeof(buf)));
	ck_assert(matches(buf, sizeof(buf), seed));
	ck_assert_ptr_nonnull(rsp_get(fd)); /* still the rsocket's */
	ck_assert_int_eq(rsp_relay_count(), 0);
}

START_TEST(a_child_that_never_uses_it_changes_nothing)
{
	pid_t pid = app_fork();

	ck_assert_int_ge(pid, 0);
	if (!pid)
		_exit(0);
	wait_child(pid);
	owner_reads_directly(5);
	app_close(fd);
	peer_sees_eof();
}
END_TEST

/* The child closes its copy and lives on: the parent's close ends it. */
START_TEST(a_child_that_closed_its_copy_holds_nothing)
{
	int ready[2], stay[2];
	pid_t pid;
	char c;

	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(stay), 0);
	pid = app_fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		app_close(fd);
		c = 1;
		/* Says it closed, then lives until the parent is done. */
		_exit(write(ready[1], &c, 1) == 1 && read(stay[0], &c, 1) >= 0
			      ? 0
			      : 1);
	}
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	app_close(fd);
	peer_sees_eof(); /* while the child still lives */
	ck_assert_int_eq(write(stay[1], &c, 1), 1);
	wait_child(pid);
	close(ready[0]);
	close(ready[1]);
	close(stay[0]);
	close(stay[1]);
}
END_TEST

/* A grandchild serves it: the child announced it to the owner. */
START_TEST(a_grandchild_serves_it)
{
	pid_t pid = app_fork();

	ck_assert_int_ge(pid, 0);
	if (!pid) {
		pid_t grand = app_fork();
		int status;

		if (grand == 0)
			child_echo(20000);
		app_close(fd);
		_exit(grand > 0 && waitpid(grand, &status, 0) == grand &&
				      WIFEXITED(status) && !WEXITSTATUS(status)
			      ? 0
			      : 1);
	}
	app_close(fd);
	peer_echo(20000, 6);
	wait_child(pid);
	peer_sees_eof();
	no_relay_left();
}
END_TEST

/*
 * A read of the parent's that was inside the rsocket when the child asked
 * gets the bytes that come first: the relay reads only once it is out.
 */
START_TEST(a_read_in_flight_gets_its_bytes_first)
{
	struct rsp_file *f = rsp_use(fd);
	struct pollfd p = {.events = POLLIN};
	int ready[2];
	pid_t pid;
	char c, rest[5];

	ck_assert_int_eq(pipe(ready), 0);
	/* What io.c's read does up to its rrecv. */
	ck_assert_ptr_nonnull(f);
	ck_assert(rsp_read_enter(f));
	pid = app_fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		/* Asks (the first use), says so, then reads the rest. */
		c = 1;
		rsp_use(fd);
		_exit(write(ready[1], &c, 1) == 1 &&
				      app_read_all(fd, rest, sizeof(rest)) &&
				      !memcmp(rest, "BCDEF", 5)
			      ? 0
			      : 1);
	}
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	ck_assert_ptr_null(rsp_get(fd)); /* relayed now */
	peer_write("A", 1);
	/*
	 * Had the relay read, the byte would be gone from the rsocket: the
	 * pause gives a relay that wrongly reads the time to (the outcome
	 * here does not depend on it).
	 */
	usleep(200 * 1000);
	p.fd = f->rs;
	ck_assert_int_eq(rpoll(&p, 1, WAIT_MS), 1);
	ck_assert_int_eq(rrecv(f->rs, &c, 1, MSG_DONTWAIT), 1);
	ck_assert_int_eq(c, 'A');
	rsp_read_leave(f);
	peer_write("BCDEF", 5);
	wait_child(pid);
	app_close(fd);
	peer_sees_eof();
	no_relay_left();
	close(ready[0]);
	close(ready[1]);
}
END_TEST

/*
 * A child that held many connections goes after its parent closed them
 * all: the owner closes every one (its records of what a gone process
 * held have no bound but memory).
 */
START_TEST(a_child_holding_many_lets_them_all_go)
{
	enum { MANY = 12 };
	int mine[MANY], peers[MANY], fds[MANY], stay[2], i;
	struct rsp_file *f;
	pid_t pid;
	char c;

	for (i = 0; i < MANY; i++) {
		rs_pair_connect(&mine[i], &peers[i], 0);
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		ck_assert_int_ge(fds[i], 0);
		f = rsp_file_new(mine[i], AF_INET);
		ck_assert_ptr_nonnull(f);
		rsp_set(fds[i], f);
	}
	ck_assert_int_eq(pipe(stay), 0);
	pid = app_fork();
	ck_assert_int_ge(pid, 0);
	if (!pid)
		_exit(read(stay[0], &c, 1) >= 0 ? 0 : 1); /* holds them all */
	for (i = 0; i < MANY; i++)
		app_close(fds[i]); /* kept: the child holds them */
	c = 1;
	ck_assert_int_eq(write(stay[1], &c, 1), 1);
	wait_child(pid);
	for (i = 0; i < MANY; i++) {
		struct pollfd p = {.fd = peers[i], .events = POLLIN};

		ck_assert_int_eq(rpoll(&p, 1, WAIT_MS), 1);
		ck_assert_int_eq(rrecv(peers[i], &c, 1, MSG_DONTWAIT), 0);
		rclose(peers[i]);
	}
	close(stay[0]);
	close(stay[1]);
	app_close(fd);
}
END_TEST

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* @len bytes of @msg on channel @s, with @n descriptors of /dev/null. */
static void send_with_fds(int s, const void *msg, size_t len, int n)
{
	char cbuf[CMSG_SPACE(3 * sizeof(int))] = {0};
	struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
	struct msghdr h = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;
	int fds[3], i;

	for (i = 0; i < n; i++)
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (n) {
		h.msg_control = cbuf;
		h.msg_controllen = CMSG_SPACE(n * sizeof(int));
		c = CMSG_FIRSTHDR(&h);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	}
	ck_assert_int_eq(sendmsg(s, &h, 0), (ssize_t)len);
	for (i = 0; i < n; i++)
		close(fds[i]);
}

/*
 * share_recv keeps one descriptor, the message's, and only with a whole
 * message: any other the kernel installed is closed, not left open.
 */
START_TEST(a_message_leaves_no_stray_descriptor)
{
	uint8_t buf[SHARE_HDR + 4] = {0};
	struct share_msg *m = (struct share_msg *)buf, in;
	int sv[2], got, before;

	m->type = SHARE_DEMAND;
	m->val = 1;
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	before = count_fds();
	/* Two descriptors (the room holds two): the second is closed. */
	send_with_fds(sv[1], m, SHARE_HDR, 2);
	ck_assert_int_eq(share_recv(sv[0], &in, sizeof(in), &got), SHARE_HDR);
	ck_assert_int_ge(got, 0);
	close(got);
	ck_assert_int_eq(count_fds(), before);
	/* An empty datagram: no message for its descriptor. */
	send_with_fds(sv[1], m, 0, 1);
	ck_assert_int_eq(share_recv(sv[0], &in, sizeof(in), &got), 0);
	ck_assert_int_eq(got, -1);
	ck_assert_int_eq(count_fds(), before);
	/* Longer than the room: cut, its head looks whole, yet malformed. */
	send_with_fds(sv[1], buf, sizeof(buf), 1);
	ck_assert_int_eq(share_recv(sv[0], &in, sizeof(in), &got), -1);
	ck_assert_int_eq(errno, EPROTO);
	ck_assert_int_eq(got, -1);
	ck_assert_int_eq(count_fds(), before);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* --- connections not answered yet (taken off a listener a fork shared) -- */

/*
 * This process's file of the connection is marked handed, as socket.c
 * marks one accepted after a fork (the rsocket is answered already here:
 * what is tested is who asks whom).
 */
static void mark_handed(void)
{
	rsp_peek(fd)->handed = true;
}

/*
 * sshd's child re-executes itself with the connection: the new image
 * could not answer it, so before the exec the owner is asked to, and
 * relays; the new image's raw reads and writes go to the relay.
 */
START_TEST(a_child_that_execs_has_its_owner_answer_a_handed_connection)
{
	pid_t pid;

	mark_handed();
	/* The server's socket is non-blocking; the child's program is not. */
	ck_assert_int_eq(rfcntl(a, F_SETFL, O_NONBLOCK), 0);
	pid = app_fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		uint8_t buf[4096];
		ssize_t n;

		if (fcntl(fd, F_SETFL, 0))
			_exit(4);
		/* A use would answer it here: it is not asked for then. */
		if (rsp_share_claim(fd) || !rsp_share_claim_before_exec(fd))
			_exit(2);
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			if (write(fd, buf, (size_t)n) != n)
				_exit(3);
		_exit(n < 0);
	}
	app_close(fd);
	peer_echo(50000, 9);
	rshutdown(b, SHUT_WR);
	wait_child(pid);
	peer_sees_eof();
	no_relay_left();
}
END_TEST

/*
 * PostgreSQL's backend answers the connection itself: the owner's copy,
 * kept for it while it might have asked, goes at once.
 */
START_TEST(a_child_that_answers_a_handed_connection_lets_the_owner_copy_go)
{
	int go[2], done[2];
	char c = 0;
	pid_t pid;

	mark_handed();
	ck_assert_int_eq(pipe(go), 0);
	ck_assert_int_eq(pipe(done), 0);
	pid = app_fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		struct rsp_file *f = rsp_use(fd); /* answers it */

		if (!f || f->owner != rsp_pid || write(go[1], &c, 1) != 1 ||
		    read(done[0], &c, 1) != 1)
			_exit(1);
		_exit(0); /* alive till then: no exit let the copy go */
	}
	app_close(fd); /* kept: the child may still ask for it */
	ck_assert_int_eq(read(go[0], &c, 1), 1);
	/* Here both ends are this one rsocket: the owner's close ends it. */
	peer_sees_eof();
	ck_assert_int_eq(write(done[1], &c, 1), 1);
	wait_child(pid);
	close(go[0]);
	close(go[1]);
	close(done[0]);
	close(done[1]);
}
END_TEST

/*
 * Where the kernel leaves a process's copy whose answer came second: it
 * could not adopt the request another process adopted first, and the
 * socket is in error (src/rsocket/handoff.c).
 */
static void answer_refused_here(void)
{
	struct rsocket *rs = rs_get(a);

	ck_assert_ptr_nonnull(rs);
	rs->err = ECONNABORTED;
	rs_set_state(rs, RS_CONNECT_ERROR);
	rs_put(rs);
}

/*
 * A server that answers (writes its greeting) before the child it forked
 * uses the connection: the child's own answer is refused, so the owner,
 * which answered it, relays it; also when the owner closed its copy
 * before the child asks (_i 1).
 */
START_TEST(a_child_that_answers_after_its_owner_is_relayed)
{
	int go[2];
	char c = 0;
	pid_t pid;

	mark_handed();
	ck_assert_int_eq(pipe(go), 0);
	pid = app_fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		answer_refused_here();
		child_echo(20000);
	}
	ck_assert_ptr_nonnull(rsp_use(fd)); /* the owner answers it first */
	if (_i)
		app_close(fd);
	ck_assert_int_eq(write(go[1], &c, 1), 1);
	peer_echo(20000, 11);
	wait_child(pid);
	if (!_i)
		app_close(fd);
	peer_sees_eof();
	no_relay_left();
	close(go[0]);
	close(go[1]);
}
END_TEST

/*
 * The child's answer is refused while the owner never answered (another
 * holder did): the owner has nothing to relay, and the child's call fails
 * with ECONNABORTED (rsocket(7)); the owner's copy stays direct.
 */
START_TEST(a_child_refused_before_its_owner_answered_gets_econnaborted)
{
	pid_t pid;

	mark_handed();
	pid = app_fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		char buf[1];
		bool aborted;

		answer_refused_here();
		aborted = app_read(fd, buf, 1) == -1 && errno == ECONNABORTED;
		_exit(aborted && !rsp_peek(fd)->claimed ? 0 : 1);
	}
	wait_child(pid);
	ck_assert_int_eq(rsp_relay_count(), 0);
	ck_assert_ptr_nonnull(rsp_use(fd));
	app_close(fd);
	peer_sees_eof();
}
END_TEST

/* --- an exec in a process holding the connection (exec_pass.c) ---------- */

/* What the preload's dup2 does (socket.c): the copy maps the record too. */
static bool app_dup2(int oldfd, int newfd)
{
	struct rsp_file *f = rsp_peek(oldfd);

	if (dup2(oldfd, newfd) != newfd)
		return false;
	if (f)
		rsp_set(newfd, f);
	return true;
}

static int domain_of(int d)
{
	socklen_t len = sizeof(int);
	int v = -1;

	return getsockopt(d, SOL_SOCKET, SO_DOMAIN, &v, &len) ? -1 : v;
}

/* The connection's peer as the program knows it (the fake names none). */
static const struct sockaddr_in client = {
	.sin_family = AF_INET,
	.sin_port = 0xc350,
	.sin_addr.s_addr = 0x0100000a,
};

static void give_names(void)
{
	struct rsp_addrs *names = calloc(1, sizeof(*names));

	ck_assert_ptr_nonnull(names);
	memcpy(&names->local, &client, sizeof(client));
	memcpy(&names->peer, &client, sizeof(client));
	names->local_len = names->peer_len = sizeof(client);
	rsp_peek(fd)->addrs = names;
}

/* Whether @env names descriptor @d relayed, with the connection's peer. */
static bool names_passed(char **env, int d)
{
	struct rsp_exec_role r[RSP_EXEC_MAX_ROLES];
	size_t k = strlen(RSP_EXEC_ROLES);
	int i, n = -1;

	for (; *env && n < 0; env++)
		if (!strncmp(*env, RSP_EXEC_ROLES, k) && (*env)[k] == '=')
			n = rsp_exec_roles_parse(*env + k + 1, r,
						 RSP_EXEC_MAX_ROLES);
	for (i = 0; i < n; i++)
		if (r[i].fd == d && r[i].relayed)
			return rsp_exec_addr_is(
				&r[i].peer, (const struct sockaddr *)&client,
				sizeof(client));
	return false;
}

/*
 * A forking server's child runs cat on the connection (its standard
 * input and output): before the exec, the preload's execvpe asks the
 * owner for the relay, and the new image inherits its kernel socket.
 */
static void child_execs_cat(void)
{
	char **env;

	if (!app_dup2(fd, 0) || !app_dup2(fd, 1))
		_exit(5);
	app_close(fd);
	env = rsp_exec_prepare(environ);
	if (domain_of(0) != AF_UNIX || domain_of(1) != AF_UNIX)
		_exit(6); /* the placeholder: cat would read ENOTCONN */
	if (!names_passed(env, 0) || !names_passed(env, 1))
		_exit(8);
	execvpe("cat", (char *[]){"cat", NULL}, env);
	_exit(7);
}

START_TEST(a_child_execs_cat_on_its_parents_connection)
{
	const size_t len = 100000;
	uint8_t *in = malloc(len);
	struct transfer *down;
	pid_t pid;

	give_names();
	pid = app_fork();
	ck_assert_int_ge(pid, 0);
	if (!pid)
		child_execs_cat();
	ck_assert_ptr_nonnull(in);
	/* sent from a thread, then cat's end of input: the reads are bounded */
	down = transfer_start(peer_sender, len, 11);
	ck_assert_uint_eq(peer_read(in, len), len);
	ck_assert(matches(in, len, 11));
	transfer_join(down);
	transfer_free(down);
	wait_child(pid);
	/* the owner's descriptor is the relay's too: the end comes with it */
	app_close(fd);
	peer_sees_eof();
	no_relay_left();
	free(in);
}
END_TEST

/* A descriptor closed on exec stays the placeholder: no relay for it. */
START_TEST(a_descriptor_closed_on_exec_is_not_claimed)
{
	pid_t pid = app_fork();
	struct rsp_file *f;
	uint8_t buf[3000];

	ck_assert_int_ge(pid, 0);
	if (!pid) {
		if (fcntl(fd, F_SETFD, FD_CLOEXEC))
			_exit(5);
		rsp_exec_prepare(environ);
		f = rsp_peek(fd);
		_exit(f && !f->claimed && domain_of(fd) == AF_INET ? 0 : 1);
	}
	wait_child(pid);
	ck_assert_int_eq(rsp_relay_count(), 0);
	ck_assert_ptr_nonnull(rsp_get(fd)); /* the owner's path, direct */
	fill(buf, sizeof(buf), 12);
	peer_write(buf, sizeof(buf));
	memset(buf, 0, sizeof(buf));
	ck_assert(app_read_all(fd, buf, sizeof(buf)));
	ck_assert(matches(buf, sizeof(buf), 12));
	app_close(fd);
	peer_sees_eof();
}
END_TEST

/* --- fork mode: the descriptor is the TCP connection it moved from ----- */

static int tcp_peer; /* the TCP connection's other end, which stays idle */

/*
 * As fork.c leaves a connection it moved: the program's descriptor is
 * the TCP socket it connected, mapped to the rsocket a.
 */
static void setup_fork_mode(void)
{
	int c;

	ck_assert_int_eq(unit_tcp_pair(&tcp_peer, &c), 0);
	map_pair(c)->via_tcp = true;
	__atomic_add_fetch(&rsp_nmoved, 1, __ATOMIC_RELAXED);
}

static void teardown_fork_mode(void)
{
	close(tcp_peer);
	teardown();
}

/* Nothing went over the TCP connection, which ended with the last copy. */
static void tcp_stayed_idle(void)
{
	struct pollfd p = {.fd = tcp_peer, .events = POLLIN};
	char c;

	ck_assert_int_eq(poll(&p, 1, WAIT_MS), 1);
	ck_assert_int_eq(recv(tcp_peer, &c, 1, MSG_DONTWAIT), 0);
}

/* Whether the names fd answers are the TCP connection's, not RDMA's. */
static bool names_are_tcp(int d)
{
	struct sockaddr_in mine, want;
	socklen_t len = sizeof(mine), wlen = sizeof(want);

	return rsp_share_name(d, true, (struct sockaddr *)&mine, &len) &&
	       !getsockname(tcp_peer, (struct sockaddr *)&want, &wlen) &&
	       len == wlen && !memcmp(&mine, &want, len);
}

/* The rsync daemon's child: a fork mode connection read by its own fork. */
START_TEST(a_child_serves_a_fork_mode_connection)
{
	pid_t pid = app_fork();

	ck_assert_int_ge(pid, 0);
	if (!pid) {
		if (!names_are_tcp(fd))
			_exit(2);
		child_echo(200000);
	}
	app_close(fd);
	peer_echo(200000, 7);
	wait_child(pid);
	peer_sees_eof();
	no_relay_left();
	tcp_stayed_idle();
}
END_TEST

/* No owner to relay: the TCP connection is nobody's to talk to. */
START_TEST(a_fork_mode_connection_nobody_relays_is_cut)
{
	struct rsp_share_fork none = {.n = 0};
	pid_t pid = app_fork();
	char c = 'x';

	ck_assert_int_ge(pid, 0);
	if (!pid) {
		share_links_adopt(&none); /* the channel to the owner is gone */
		_exit(app_write(fd, &c, 1) == -1 && errno == ECONNRESET &&
				      app_read(fd, &c, 1) == -1 &&
				      errno == ECONNRESET
			      ? 0
			      : 1);
	}
	wait_child(pid);
	owner_reads_directly(8);
	app_close(fd);
	peer_sees_eof();
}
END_TEST

Suite *preload_share_suite(void)
{
	Suite *s = suite_create("preload_share");
	TCase *tc = tcase_create("share");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_child_serves_what_its_parent_closed);
	tcase_add_test(tc, a_child_serves_while_its_parent_holds_it);
	tcase_add_test(tc, a_child_that_confines_itself_is_relayed_first);
	tcase_add_test(tc, a_child_reads_while_its_parent_writes);
	tcase_add_test(tc, a_child_that_never_uses_it_changes_nothing);
	tcase_add_test(tc, a_child_that_closed_its_copy_holds_nothing);
	tcase_add_test(tc, a_grandchild_serves_it);
	tcase_add_test(tc, a_read_in_flight_gets_its_bytes_first);
	tcase_add_test(tc, a_child_holding_many_lets_them_all_go);
	tcase_add_test(tc, a_message_leaves_no_stray_descriptor);
	tcase_add_test(
		tc,
		a_child_that_execs_has_its_owner_answer_a_handed_connection);
	tcase_add_test(
		tc,
		a_child_that_answers_a_handed_connection_lets_the_owner_copy_go);
	tcase_add_loop_test(tc, a_child_that_answers_after_its_owner_is_relayed,
			    0, 2);
	tcase_add_test(
		tc,
		a_child_refused_before_its_owner_answered_gets_econnaborted);
	tcase_add_test(tc, a_child_execs_cat_on_its_parents_connection);
	tcase_add_test(tc, a_descriptor_closed_on_exec_is_not_claimed);
	suite_add_tcase(s, tc);
	tc = tcase_create("fork mode");
	tcase_add_checked_fixture(tc, setup_fork_mode, teardown_fork_mode);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_child_serves_a_fork_mode_connection);
	tcase_add_test(tc, a_fork_mode_connection_nobody_relays_is_cut);
	suite_add_tcase(s, tc);
	return s;
}
