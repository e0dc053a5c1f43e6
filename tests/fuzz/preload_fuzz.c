// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// FUZZ_SOURCES: @library tests/unit/fake_ucma.c tests/unit/fake_verbs.c
/*
 * librspreload (src/preload/) as a program drives it: its settings (the
 * RDMA_RSOCKET_* variables and the rules of preload_config, read again
 * for every input), its log file (RDMA_RSOCKET_LOG naming a new file, an
 * existing one, a symbolic link to another file, a dangling link, a
 * directory or a path that cannot exist), and a sequence of the
 * program's socket calls: socket (TCP, UDP, other), bind, listen,
 * connect, accept, recv/send/read/write, poll, select, epoll, dup,
 * dup2, fcntl, ioctl(FIONBIO), setsockopt/getsockopt, getsockname,
 * shutdown and close, with RDMAV_FORK_SAFE's lazy connections converted
 * (or not) at their first use, the peer's first 8 bytes the input's (an
 * offer or not), and connected sockets marked as inherited across
 * execve (inherit.c; the scan at an image's start is not run).
 *
 * The preload is built into this target under other names (each entry
 * point NAME becomes rspf_NAME) so that it stands in front of this
 * program's calls only, not of libFuzzer's or the library's.  Its r*
 * calls go to the library on the fake kernel and verbs devices, which
 * resolve every address and route at once and refuse every connection
 * (so connects fall back to TCP); every address is loopback, so a
 * fallback connects at once (to this harness's listener, or to a closed
 * port).  A lazy connection's peer (the harness) has sent its bytes and
 * shut its side down before the program's first read, so a conversion
 * never waits; a passive conversion's rsocket listener is refused by the
 * kernel (it would wait in raccept for a request nobody sends).  Calls
 * that could block are made only on non-blocking descriptors.
 *
 * Checked: the log's target is never a file reached through a link (the
 * link's target stays empty), and an open log is a regular file of ours
 * on a close-on-exec descriptor at 500 or above; every descriptor the
 * preload maps has a live rsocket; once the program's descriptors are
 * closed nothing is mapped or lazy, and no QP, CQ, channel, registration
 * or kernel id on an open device descriptor is left (LeakSanitizer checks
 * the memory).
 *
 * Input: a flags byte (bit 0: RDMA_RSOCKET_DISABLE; bit 1: RDMAV_FORK_SAFE;
 * bit 2: RDMA_RSOCKET_PORTS follows, a length byte and the string; bit 3:
 * sizes follow, 5 bytes for SQSIZE, RQSIZE, INLINE, SNDBUF, RCVBUF, 0
 * unset; bit 4: preload_config follows, a length byte and the text; bits
 * 5-7: what RDMA_RSOCKET_LOG names, see log_modes), then operations: one
 * byte (mod 13) and its arguments.
 */
#define _GNU_SOURCE
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <rdma/rsocket.h>

#include "fake_ucma.h"
#include "fake_verbs.h"
#include "fuzz_input.h"
#include "rsocket/rs.h"

/* The preload's entry points, renamed (the C library's are declared). */
#define socket rspf_socket
#define bind rspf_bind
#define listen rspf_listen
#define accept rspf_accept
#define accept4 rspf_accept4
#define connect rspf_connect
#define close rspf_close
#define shutdown rspf_shutdown
#define dup rspf_dup
#define dup2 rspf_dup2
#define dup3 rspf_dup3
#define fcntl rspf_fcntl
#define fcntl64 rspf_fcntl64
#define ioctl rspf_ioctl
#define getsockname rspf_getsockname
#define getpeername rspf_getpeername
#define setsockopt rspf_setsockopt
#define getsockopt rspf_getsockopt
#define read rspf_read
#define readv rspf_readv
#define write rspf_write
#define writev rspf_writev
#define recv rspf_recv
#define recvfrom rspf_recvfrom
#define recvmsg rspf_recvmsg
#define send rspf_send
#define sendto rspf_sendto
#define sendmsg rspf_sendmsg
#define sendfile rspf_sendfile
#define sendfile64 rspf_sendfile64
#define poll rspf_poll
#define ppoll rspf_ppoll
#define select rspf_select
#define pselect rspf_pselect
#define epoll_create rspf_epoll_create
#define epoll_create1 rspf_epoll_create1
#define epoll_ctl rspf_epoll_ctl
#define epoll_wait rspf_epoll_wait
#define epoll_pwait rspf_epoll_pwait
#define epoll_pwait2 rspf_epoll_pwait2
#define __read_chk rspf___read_chk
#define __recv_chk rspf___recv_chk
#define __recvfrom_chk rspf___recvfrom_chk
#define __poll_chk rspf___poll_chk
#define __ppoll_chk rspf___ppoll_chk
#define fork rspf_fork
#define execve rspf_execve
#define execv rspf_execv
#define execvp rspf_execvp
#define execvpe rspf_execvpe
#define execl rspf_execl
#define execlp rspf_execlp
#define execle rspf_execle
#define fexecve rspf_fexecve
#define execveat rspf_execveat
/* preload_config comes from the input. */
#define fopen rspf_fopen
FILE *rspf_fopen(const char *path, const char *mode);

#include "../../src/preload/addr.c"
#include "../../src/preload/config.c"
#include "../../src/preload/dgram.c"
#include "../../src/preload/epoll.c"
#include "../../src/preload/exec.c"
#include "../../src/preload/exec_pass.c"
#include "../../src/preload/exec_roles.c"
#include "../../src/preload/fdtab.c"
#include "../../src/preload/fork.c"
#include "../../src/preload/forkstep.c"
#include "../../src/preload/inherit.c"
#include "../../src/preload/init.c"
#include "../../src/preload/io.c"
#include "../../src/preload/moveback.c"
#include "../../src/preload/poll.c"
#include "../../src/preload/relay.c"
#include "../../src/preload/share.c"
#include "../../src/preload/share_ask.c"
#include "../../src/preload/share_channel.c"
#include "../../src/preload/socket.c"
#include "../../src/preload/verbs_again.c"

#undef socket
#undef bind
#undef listen
#undef accept
#undef accept4
#undef connect
#undef close
#undef shutdown
#undef dup
#undef dup2
#undef dup3
#undef fcntl
#undef fcntl64
#undef ioctl
#undef getsockname
#undef getpeername
#undef setsockopt
#undef getsockopt
#undef read
#undef readv
#undef write
#undef writev
#undef recv
#undef recvfrom
#undef recvmsg
#undef send
#undef sendto
#undef sendmsg
#undef sendfile
#undef sendfile64
#undef poll
#undef ppoll
#undef select
#undef pselect
#undef epoll_create
#undef epoll_create1
#undef epoll_ctl
#undef epoll_wait
#undef epoll_pwait
#undef epoll_pwait2
#undef fork
#undef execve
#undef execv
#undef execvp
#undef execvpe
#undef execl
#undef execlp
#undef execle
#undef fexecve
#undef execveat
#undef fopen

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FDS 8

/* A length byte and that many bytes (at most @size - 1), NUL-terminated. */
static void take_str(char *out, size_t size)
{
	size_t n = take8(), k;

	k = n < size - 1 ? n : size - 1;
	k = k < fuzz_in.left ? k : fuzz_in.left;
	memcpy(out, fuzz_in.p, k);
	out[k] = 0;
	fuzz_in.p += k;
	fuzz_in.left -= k;
}

/* --- the environment and the files the preload reads ---------------------------- */

static char env_ports[64], env_sizes[5][8], rules_text[256], log_file[96];
static char dir[32], canary[64];
static const char *log_value;
static bool env_disable, env_fork, env_has_ports, env_has_rules;

char *secure_getenv(const char *name)
{
	static const char *const sizes[] = {
		"RDMA_RSOCKET_SQSIZE", "RDMA_RSOCKET_RQSIZE",
		"RDMA_RSOCKET_INLINE", "RDMA_RSOCKET_SNDBUF",
		"RDMA_RSOCKET_RCVBUF",
	};
	int i;

	if (!strcmp(name, "RDMA_RSOCKET_DISABLE"))
		return env_disable ? "1" : NULL;
	if (!strcmp(name, "RDMAV_FORK_SAFE"))
		return env_fork ? "1" : NULL;
	if (!strcmp(name, "RDMA_RSOCKET_PORTS"))
		return env_has_ports ? env_ports : NULL;
	if (!strcmp(name, "RDMA_RSOCKET_LOG"))
		return (char *)log_value;
	for (i = 0; i < 5; i++)
		if (!strcmp(name, sizes[i]))
			return env_sizes[i][0] ? env_sizes[i] : NULL;
	return NULL;
}

FILE *rspf_fopen(const char *path, const char *mode)
{
	if (strcmp(path, RSP_CONF_DIR "/preload_config"))
		abort(); /* the preload reads no other file */
	if (!env_has_rules) {
		errno = ENOENT;
		return NULL;
	}
	return fmemopen(rules_text, strlen(rules_text) + 1, "r");
}

/*
 * What RDMA_RSOCKET_LOG names: nothing set; a new file; an existing one;
 * a link to the canary; a dangling link (its target must not appear); a
 * directory; a path under a missing directory; a link to a directory.
 */
enum log_mode {
	LOG_NONE,
	LOG_NEW,
	LOG_EXISTING,
	LOG_LINK,
	LOG_DANGLING,
	LOG_DIR,
	LOG_NO_DIR,
	LOG_LINK_DIR,
};

static void log_prepare(enum log_mode mode)
{
	char target[96];
	int fd;

	snprintf(log_file, sizeof(log_file), "%s/log", dir);
	snprintf(target, sizeof(target), "%s/absent", dir);
	unlink(log_file);
	rmdir(log_file);
	unlink(target);
	log_value = log_file;
	switch (mode) {
	case LOG_NONE:
		log_value = NULL;
		break;
	case LOG_NEW:
		break;
	case LOG_EXISTING:
		fd = open(log_file, O_WRONLY | O_CREAT | O_EXCL, 0600);
		if (fd >= 0)
			close(fd);
		break;
	case LOG_LINK:
		if (symlink(canary, log_file))
			abort();
		break;
	case LOG_DANGLING:
		if (symlink(target, log_file))
			abort();
		break;
	case LOG_DIR:
		if (mkdir(log_file, 0700))
			abort();
		break;
	case LOG_NO_DIR:
		snprintf(log_file, sizeof(log_file), "%s/missing/log", dir);
		break;
	case LOG_LINK_DIR:
		if (symlink(dir, log_file))
			abort();
		break;
	}
}

/* The log as the preload opened it: never through a link. */
static void log_check(enum log_mode mode)
{
	char target[96];
	struct stat st, cst;
	int fd = rsp_config.log_fd;

	if (stat(canary, &cst) || cst.st_size)
		abort(); /* the link's target was written */
	snprintf(target, sizeof(target), "%s/absent", dir);
	if (!access(target, F_OK))
		abort(); /* a dangling link's target was made */
	if (fd < 0) {
		if (mode == LOG_NEW || mode == LOG_EXISTING)
			abort(); /* a plain file refused */
		return;
	}
	if (mode != LOG_NEW && mode != LOG_EXISTING)
		abort(); /* opened through a link, or not a file */
	if (fd < cma_fd_floor() || !(fcntl(fd, F_GETFD) & FD_CLOEXEC) ||
	    fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_ino == cst.st_ino)
		abort();
}

static void log_close(void)
{
	if (rsp_config.log_fd >= 0)
		close(rsp_config.log_fd);
	rsp_config.log_fd = -1;
}

/* The settings of this input, read as the preload reads them at start. */
static void read_settings(uint8_t flags)
{
	FILE *err = stderr;
	int i;

	env_disable = flags & 1;
	env_fork = flags & 2;
	env_has_ports = flags & 4;
	if (env_has_ports)
		take_str(env_ports, sizeof(env_ports));
	memset(env_sizes, 0, sizeof(env_sizes));
	if (flags & 8)
		for (i = 0; i < 5; i++)
			snprintf(env_sizes[i], sizeof(env_sizes[i]), "%u",
				 (unsigned int)take8() * 16);
	env_has_rules = flags & 16;
	if (env_has_rules)
		take_str(rules_text, sizeof(rules_text));
	log_prepare((enum log_mode)(flags >> 5));

	log_close();
	memset(&rsp_config, 0, sizeof(rsp_config));
	rsp_config.log_fd = -1;
	free(rules); /* config.c's, from the last input */
	rules = NULL;
	nrules = 0;
	/* Its complaints about values and files go nowhere. */
	stderr = fopen("/dev/null", "w");
	if (!stderr)
		abort();
	read_config();
	rsp_read_rules();
	fclose(stderr);
	stderr = err;
	log_check((enum log_mode)(flags >> 5));
}

/* --- the network: a listener of ours, a closed port, our peers -------------------- */

static int listener = -1;
static uint16_t open_port, closed_port;
static int peers[MAX_FDS * 2];
static int npeers;

static void net_setup(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t len = sizeof(sin);
	int s;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	listener =
		socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (listener < 0 || bind(listener, (struct sockaddr *)&sin, len) ||
	    listen(listener, 128) ||
	    getsockname(listener, (struct sockaddr *)&sin, &len))
		abort();
	open_port = ntohs(sin.sin_port);
	/* A port nobody listens on: bound once, then given back. */
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sin.sin_port = 0;
	if (s < 0 || bind(s, (struct sockaddr *)&sin, sizeof(sin)) ||
	    getsockname(s, (struct sockaddr *)&sin, &len))
		abort();
	closed_port = ntohs(sin.sin_port);
	close(s);
}

static void peer_add(int s)
{
	if (npeers < (int)(sizeof(peers) / sizeof(peers[0])))
		peers[npeers++] = s;
	else
		close(s);
}

/*
 * A peer that sent its first bytes (the input's: a fork-mode peer's
 * "RSFK" and port, or anything) and will send nothing more: reads of
 * the other end never wait.
 */
static void peer_speaks(int s)
{
	uint8_t msg[8], n = take8() % 9;

	memcpy(msg, "RSFK", 4);
	msg[4] = take8();
	msg[5] = take8();
	msg[6] = (uint8_t[]){0, 'A', 'P'}[take8() % 3]; /* 0: not an offer */
	msg[7] = take8() % 3; /* 2: not an offer */
	if (n && write(s, msg, n) < 0)
		return;
	shutdown(s, SHUT_WR);
}

/* Connections made to our listener: accepted, each a speaking peer. */
static void peers_accept(void)
{
	int s;

	while ((s = accept4(listener, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		peer_speaks(s);
		peer_add(s);
	}
}

static void net_reset(void)
{
	int i;

	peers_accept();
	for (i = 0; i < npeers; i++)
		close(peers[i]);
	npeers = 0;
}

/* --- the program's descriptors --------------------------------------------------------- */

static int fds[MAX_FDS];
static int nfds;
static unsigned long sink;

static int pick_fd(void)
{
	uint8_t i = take8();

	return nfds ? fds[i % nfds] : -1;
}

static void add_fd(int fd)
{
	if (fd < 0)
		return;
	if (nfds < MAX_FDS)
		fds[nfds++] = fd;
	else
		rspf_close(fd);
}

static void drop_fd(int fd)
{
	int i;

	for (i = 0; i < nfds; i++)
		if (fds[i] == fd) {
			fds[i] = fds[--nfds];
			return;
		}
}

/* Whether a call on @fd may wait: a descriptor not made non-blocking. */
static bool may_block(int fd)
{
	int fl = rspf_fcntl(fd, F_GETFL);

	return fl < 0 || !(fl & O_NONBLOCK);
}

/*
 * An address: always this host, so a fallback never reaches the network,
 * and a port that is our listener's, closed, or 0 (a program's listener
 * never takes the closed one: a connection there would have a peer that
 * never speaks, and a lazy one's first read would wait for it for ever).
 */
static socklen_t pick_addr(struct sockaddr_storage *ss, int family, bool local)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	uint8_t sel = take8();
	uint16_t port = sel & 1		    ? open_port
			: sel & 2 && !local ? closed_port
					    : 0;

	memset(ss, 0, sizeof(*ss));
	if (sel & 0x80) { /* any family, any length, port 0 */
		((uint8_t *)ss)[0] = take8();
		((uint8_t *)ss)[1] = take8();
		return take8() % (sizeof(*ss) + 1);
	}
	if (family == AF_INET6 || (sel & 4)) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		if (!(sel & 8))
			sin6->sin6_addr = in6addr_loopback;
		return sizeof(*sin6);
	}
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	sin->sin_addr.s_addr = htonl(sel & 8 ? INADDR_ANY : INADDR_LOOPBACK);
	return sizeof(*sin);
}

static int family_of(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return AF_INET;
	return ss.ss_family;
}

/* --- operations ------------------------------------------------------------------------ */

static void op_socket(void)
{
	static const int domains[] = {AF_INET, AF_INET6, AF_UNIX, AF_INET};
	static const int types[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET,
				    SOCK_STREAM};
	uint8_t sel = take8();
	int type = types[(sel >> 2) & 3] | SOCK_CLOEXEC;

	/* Non-blocking but now and then: later calls then are guarded. */
	if (!(sel & 0x10))
		type |= SOCK_NONBLOCK;
	add_fd(rspf_socket(domains[sel & 3], type,
			   sel & 0x20 ? (sel & 0x40 ? IPPROTO_UDP : IPPROTO_TCP)
				      : 0));
}

static void op_bind(void)
{
	struct sockaddr_storage ss;
	int fd = pick_fd();
	socklen_t len;

	if (fd < 0)
		return;
	len = pick_addr(&ss, family_of(fd), true);
	(void)rspf_bind(fd, (struct sockaddr *)&ss, len);
}

static void op_listen(void)
{
	int fd = pick_fd();

	if (fd >= 0)
		(void)rspf_listen(fd, take8() % 8);
}

/*
 * Whether a connect on @fd would start a connection.  Not once one is
 * under way or made: connect(2) then says EALREADY, or 0 for "it
 * completed", and the harness's listener has nothing new to accept.
 * Unknown (an rsocket's descriptor): yes.
 */
static bool starts_connection(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) ||
	       ti.tcpi_state == TCP_CLOSE;
}

static void op_connect(void)
{
	struct sockaddr_storage ss;
	int fd = pick_fd();
	socklen_t len;
	bool starts;

	if (fd < 0)
		return;
	len = pick_addr(&ss, family_of(fd), false);
	starts = starts_connection(fd);
	if (!rspf_connect(fd, (struct sockaddr *)&ss, len) ||
	    errno == EINPROGRESS) {
		/*
		 * A connection to our listener is accepted (and speaks)
		 * before the program can read from it: a lazy one's first
		 * read waits for the peer's first bytes.
		 */
		struct pollfd pfd = {.fd = listener, .events = POLLIN};
		int type = 0;
		socklen_t tlen = sizeof(type);

		if (starts && ss.ss_family == AF_INET &&
		    ((struct sockaddr_in *)&ss)->sin_port == htons(open_port) &&
		    !getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) &&
		    type == SOCK_STREAM)
			(void)poll(&pfd, 1, 100);
	}
	peers_accept();
}

/*
 * Whether kernel socket @fd is a listener that takes one more connection.
 * Not when its accept queue is full: Linux drops the SYN, and the connect
 * would wait its 100 ms for nothing.  Nor when it does not listen: its
 * port (an accepted connection's is its listener's) may be another
 * socket's, full or not.
 */
static bool has_room(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) ||
	    ti.tcpi_state != TCP_LISTEN)
		return false;
	/* A listener's: the accept queue's length, and its bound. */
	return ti.tcpi_unacked <= ti.tcpi_sacked;
}

/* A non-blocking connect of @c to @sin, done within 100 ms. */
static bool connected(int c, const struct sockaddr_in *sin)
{
	struct pollfd pfd = {.fd = c, .events = POLLOUT};
	int err = 0;
	socklen_t len = sizeof(err);

	if (!connect(c, (const struct sockaddr *)sin, sizeof(*sin)))
		return true;
	return errno == EINPROGRESS && poll(&pfd, 1, 100) == 1 &&
	       !getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len) && !err;
}

/*
 * A client of the program's listener @fd (a kernel one: a lazy listener
 * or one that fell back) speaks first; then the program accepts.
 */
static void op_accept(void)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct sockaddr_in sin;
	int fd = pick_fd(), c, s;

	if (fd < 0)
		return;
	len = sizeof(sin);
	if (!rsp_get(fd) && !getsockname(fd, (struct sockaddr *)&sin, &len) &&
	    sin.sin_family == AF_INET && sin.sin_port && has_room(fd)) {
		/* Not for long, should the kernel still drop its SYN. */
		c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			   0);
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (c >= 0 && connected(c, &sin)) {
			peer_speaks(c);
			peer_add(c);
		} else if (c >= 0) {
			close(c);
		}
	}
	/* Nothing may be pending: only a non-blocking accept then. */
	if (may_block(fd)) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};

		if (rspf_poll(&pfd, 1, 0) != 1)
			return;
		if (rsp_get(fd))
			return; /* raccept waits for an established one */
	}
	len = sizeof(ss);
	s = take8() & 1 ? rspf_accept4(fd, (struct sockaddr *)&ss, &len,
				       SOCK_NONBLOCK | SOCK_CLOEXEC)
			: rspf_accept(fd, (struct sockaddr *)&ss, &len);
	add_fd(s);
}

static uint8_t io_buf[512];

/*
 * Data calls: the first use of a lazy connection converts it (or not).
 * A passive conversion's listener is refused (see the top).
 */
static bool fail_listen;

static int fuzz_hook(const struct fake_cmd *cmd, void *resp, size_t len)
{
	if (fail_listen && cmd->cmd == RDMA_USER_CM_CMD_LISTEN)
		return EADDRINUSE;
	return FAKE_UCMA_MODEL;
}

static void op_io(void)
{
	uint8_t sel = take8();
	size_t len = take8() * 2u;
	struct iovec iov[2] = {{io_buf, len / 2}, {io_buf + len / 2, len / 2}};
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
	int fd = pick_fd(), fl = MSG_DONTWAIT;
	bool blocks;
	ssize_t ret = 0;

	if (fd < 0)
		return;
	blocks = may_block(fd);
	fail_listen = true;
	switch (sel % 8) {
	case 0:
		ret = rspf_recv(fd, io_buf, len, fl | (sel & 8 ? MSG_PEEK : 0));
		break;
	case 1:
		ret = rspf_send(fd, io_buf, len, fl | MSG_NOSIGNAL);
		break;
	case 2:
		if (!blocks)
			ret = rspf_read(fd, io_buf, len);
		break;
	case 3:
		if (!blocks)
			ret = rspf_write(fd, io_buf, len);
		break;
	case 4:
		ret = rspf_recvmsg(fd, &msg, fl);
		break;
	case 5:
		ret = rspf_sendmsg(fd, &msg, fl | MSG_NOSIGNAL);
		break;
	case 6: {
		struct sockaddr_storage ss;
		socklen_t alen = pick_addr(&ss, family_of(fd), false);

		ret = rspf_sendto(fd, io_buf, len, fl | MSG_NOSIGNAL,
				  (struct sockaddr *)&ss, alen);
		break;
	}
	default: {
		struct sockaddr_storage ss;
		socklen_t alen = sizeof(ss);

		ret = rspf_recvfrom(fd, io_buf, len, fl, (struct sockaddr *)&ss,
				    &alen);
		break;
	}
	}
	fail_listen = false;
	if (ret > (ssize_t)len)
		abort();
}

static void op_poll(void)
{
	struct pollfd pfd[MAX_FDS + 1];
	uint8_t sel = take8();
	int i, n = 0;

	for (i = 0; i < nfds; i++) {
		pfd[n].fd = fds[i];
		pfd[n++].events = (short)((sel & 1 ? POLLIN : 0) |
					  (sel & 2 ? POLLOUT : 0));
	}
	pfd[n].fd = -1; /* an ignored entry */
	pfd[n++].events = POLLIN;
	if (sel & 4) {
		struct timespec ts = {0, 0};

		(void)rspf_ppoll(pfd, (nfds_t)n, &ts, NULL);
	} else {
		(void)rspf_poll(pfd, (nfds_t)n, 0);
	}
}

static void op_select(void)
{
	struct timeval tv = {0, 0};
	fd_set r, w, e;
	int i, max = -1;

	FD_ZERO(&r);
	FD_ZERO(&w);
	FD_ZERO(&e);
	for (i = 0; i < nfds; i++) {
		if (fds[i] >= FD_SETSIZE)
			continue;
		FD_SET(fds[i], &r);
		FD_SET(fds[i], &w);
		if (take8() & 1)
			FD_SET(fds[i], &e);
		if (fds[i] > max)
			max = fds[i];
	}
	(void)rspf_select(max + 1, &r, &w, &e, &tv);
}

static void op_epoll(void)
{
	struct epoll_event ev, out[MAX_FDS];
	uint8_t sel = take8();
	int ep = rspf_epoll_create1(EPOLL_CLOEXEC), i;

	if (ep < 0)
		return;
	for (i = 0; i < nfds; i++) {
		ev.events = EPOLLIN | (sel & 1 ? EPOLLOUT : 0) |
			    (sel & 2 ? EPOLLONESHOT : 0) |
			    (sel & 4 ? EPOLLET : 0);
		ev.data.fd = fds[i];
		(void)rspf_epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
	}
	if (nfds && (sel & 8))
		(void)rspf_epoll_ctl(ep, EPOLL_CTL_DEL, fds[sel % nfds], NULL);
	if (nfds && (sel & 16)) {
		ev.events = EPOLLOUT;
		(void)rspf_epoll_ctl(ep, EPOLL_CTL_MOD, fds[0], &ev);
	}
	(void)rspf_epoll_wait(ep, out, MAX_FDS, 0);
	(void)rspf_epoll_wait(ep, out, MAX_FDS, 0);
	rspf_close(ep);
}

static void op_fdctl(void)
{
	uint8_t sel = take8();
	int fd = pick_fd(), v = sel & 0x10 ? 1 : 0;

	if (fd < 0)
		return;
	switch (sel % 8) {
	case 0:
		add_fd(rspf_dup(fd));
		break;
	case 1: /* over another of the program's descriptors */
		if (fds[(sel >> 4) % nfds] != fd)
			(void)rspf_dup2(fd, fds[(sel >> 4) % nfds]);
		break;
	case 2:
		add_fd(rspf_fcntl(fd, F_DUPFD_CLOEXEC, 0));
		break;
	case 3:
		(void)rspf_fcntl(fd, F_SETFL, v ? O_NONBLOCK : 0);
		break;
	case 4:
		(void)rspf_ioctl(fd, FIONBIO, &v);
		break;
	case 5: {
		static const int opts[][2] = {
			{SOL_SOCKET, SO_REUSEADDR}, {SOL_SOCKET, SO_KEEPALIVE},
			{IPPROTO_TCP, TCP_NODELAY}, {SOL_SOCKET, SO_SNDBUF},
			{IPPROTO_IP, IP_TOS},	    {SOL_RDMA, RDMA_SQSIZE},
		};
		int o = (sel >> 4) % 6, val = take8();

		(void)rspf_setsockopt(fd, opts[o][0], opts[o][1], &val,
				      sizeof(val));
		break;
	}
	case 6: {
		int val;
		socklen_t vlen = sizeof(val);
		struct sockaddr_storage ss;
		socklen_t alen = take8() % (sizeof(ss) + 1);

		(void)rspf_getsockopt(fd, SOL_SOCKET, SO_ERROR, &val, &vlen);
		(void)rspf_getsockname(fd, (struct sockaddr *)&ss, &alen);
		alen = sizeof(ss);
		(void)rspf_getpeername(fd, (struct sockaddr *)&ss, &alen);
		break;
	}
	default:
		(void)rspf_shutdown(fd, (sel >> 4) % 4);
		break;
	}
}

/* The descriptor, if a connected TCP socket, as an execve would leave it. */
static void op_inherit(void)
{
	int fd = pick_fd();

	if (fd >= 0)
		rsp_inherit_mark(fd);
}

static void op_close(void)
{
	int fd = pick_fd();

	if (fd < 0)
		return;
	drop_fd(fd);
	rspf_close(fd);
}

/* Every descriptor the preload maps names a live rsocket. */
static void check_mapped(void)
{
	struct rsocket *rs;
	struct rsp_file *f;
	int i;

	for (i = 0; i < nfds; i++) {
		f = rsp_get(fds[i]);
		if (!f)
			continue;
		rs = rs_get(f->rs);
		if (!rs)
			abort(); /* mapped to an rsocket that is gone */
		rs_put(rs);
	}
}

/* --- the run ------------------------------------------------------------------------------ */

static void setup_once(void)
{
	char tmpl[] = "/tmp/rspreload-fuzz.XXXXXX";
	int fd;

	if (listener >= 0)
		return;
	/* A write to a connection the peer closed: EPIPE, as in servers. */
	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(tmpl))
		abort();
	strcpy(dir, tmpl);
	snprintf(canary, sizeof(canary), "%s/canary", dir);
	fd = open(canary, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		abort();
	close(fd);
	net_setup();
	fake_verbs_reuse_cqs(true); /* a CQ per connection: kept, not freed */
	rsp_init(); /* resolves the C library's calls; settings per input */
	rs_configure();
	rs_def.polling_time = rs_def.polling_max = 0;
	rs_def.mem = rs_def.wmem = RS_SNDLOWAT * 2;
	rs_def.sqsize = rs_def.rqsize = 16;
}

__attribute__((destructor)) static void remove_files(void)
{
	char path[96];

	if (!dir[0])
		return;
	snprintf(path, sizeof(path), "%s/log", dir);
	unlink(path);
	rmdir(path);
	unlink(canary);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fake_verbs_counts c;
	unsigned int ops = 0, k;

	if (!size)
		return 0;
	setup_once();
	fuzz_input(data, size);
	fake_ucma_install();
	fake_verbs_install(true);
	fake_ucma_set_hook(fuzz_hook);
	/* The network: everything resolves, every connection is refused. */
	fake_ucma_answer(RDMA_USER_CM_CMD_RESOLVE_ADDR,
			 RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	fake_ucma_answer(RDMA_USER_CM_CMD_RESOLVE_ROUTE,
			 RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	fake_ucma_answer(RDMA_USER_CM_CMD_CONNECT, RDMA_CM_EVENT_REJECTED, 28);
	read_settings(take8());

	while (fuzz_in.left && ops++ < 48) {
		switch (take8() % 13) {
		case 0:
		case 1:
			op_socket();
			break;
		case 2:
			op_bind();
			break;
		case 3:
			op_listen();
			break;
		case 4:
			op_connect();
			break;
		case 5:
			op_accept();
			break;
		case 6:
		case 7:
			op_io();
			break;
		case 8:
			op_poll();
			break;
		case 9:
			if (take8() & 1)
				op_select();
			else
				op_epoll();
			break;
		case 10:
			op_fdctl();
			break;
		case 11:
			op_inherit();
			break;
		default:
			op_close();
			break;
		}
		check_mapped();
	}

	while (nfds)
		rspf_close(fds[--nfds]);
	net_reset();
	if (rsp_any() || nlazy)
		abort(); /* a closed descriptor still mapped, or lazy */
	c = fake_verbs_counts();
	if (c.qps || c.cqs || c.channels || c.mrs)
		abort(); /* an rsocket outlived its descriptors */
	for (k = 1; fake_ucma_kid(k); k++)
		if (fake_ucma_kid_live(k, 0) &&
		    fcntl(fake_ucma_kid(k)->fd, F_GETFD) >= 0)
			abort(); /* a kernel id outlived its socket */
	log_close();
	fake_ucma_set_hook(NULL);
	sink += ops;
	return 0;
}
