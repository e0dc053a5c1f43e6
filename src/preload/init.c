// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The C library's socket and exec calls behind ours, the RDMA_RSOCKET_*
 * settings and the debug log.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "preload.h"
#include "util/env.h"
#include "util/fd_high.h"

struct rsp_real rsp_real;
struct rsp_config rsp_config = {.log_fd = -1};
int rsp_pid;
unsigned int rsp_forks;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_once_t resolved = PTHREAD_ONCE_INIT;
static bool inited; /* init_once is over */

static void *next(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (!p) {
		/* Nothing sensible can run without the real call. */
		fprintf(stderr, "librspreload: no %s in the C library\n", name);
		abort();
	}
	return p;
}

#define RESOLVE(name) (*(void **)&rsp_real.name = next(#name))

static void resolve_all(void)
{
	RESOLVE(socket);
	RESOLVE(bind);
	RESOLVE(listen);
	RESOLVE(accept);
	RESOLVE(accept4);
	RESOLVE(connect);
	RESOLVE(close);
	RESOLVE(shutdown);
	RESOLVE(dup);
	RESOLVE(dup2);
	RESOLVE(dup3);
	RESOLVE(fcntl);
	RESOLVE(fcntl64);
	RESOLVE(ioctl);
	RESOLVE(getsockname);
	RESOLVE(getpeername);
	RESOLVE(setsockopt);
	RESOLVE(getsockopt);
	RESOLVE(read);
	RESOLVE(readv);
	RESOLVE(write);
	RESOLVE(writev);
	RESOLVE(recv);
	RESOLVE(recvfrom);
	RESOLVE(recvmsg);
	RESOLVE(send);
	RESOLVE(sendto);
	RESOLVE(sendmsg);
	RESOLVE(sendfile);
	RESOLVE(poll);
	RESOLVE(ppoll);
	RESOLVE(select);
	RESOLVE(pselect);
	RESOLVE(epoll_create);
	RESOLVE(epoll_create1);
	RESOLVE(epoll_ctl);
	RESOLVE(epoll_wait);
	RESOLVE(epoll_pwait);
	RESOLVE(fork);
	RESOLVE(execve);
	RESOLVE(execvpe);
	RESOLVE(fexecve);
	/* optional: exec.c makes the system call where the C library has none */
	*(void **)&rsp_real.execveat = dlsym(RTLD_NEXT, "execveat");
	*(void **)&rsp_real.closefrom = dlsym(RTLD_NEXT, "closefrom");
	/* optional: a program can only call it where the C library has it */
	*(void **)&rsp_real.epoll_pwait2 = dlsym(RTLD_NEXT, "epoll_pwait2");
}

/*
 * A positive int from the environment, or 0 when unset or invalid.  @alias
 * is rdma-core's name for the same setting, read when ours is unset.
 */
static int env_int2(const char *name, const char *alias)
{
	const char *v = cma_env(name);
	char *end;
	long n;

	if (!v && alias) {
		v = cma_env(alias);
		name = alias;
	}
	if (!v || !*v)
		return 0;
	errno = 0;
	n = strtol(v, &end, 0);
	if (errno || *end || n <= 0 || n > (1 << 30)) {
		fprintf(stderr, "librspreload: ignoring %s='%s'\n", name, v);
		return 0;
	}
	return (int)n;
}

/* "7471,5201-5210": up to 32 ports or ranges. */
static void parse_ports(const char *v)
{
	char *end;

	while (v && *v && rsp_config.nports < 32) {
		long lo = strtol(v, &end, 10), hi = lo;

		if (end == v || lo < 0 || lo > 65535)
			goto bad;
		if (*end == '-') {
			v = end + 1;
			hi = strtol(v, &end, 10);
			if (end == v || hi < lo || hi > 65535)
				goto bad;
		}
		rsp_config.ports[rsp_config.nports].lo = lo;
		rsp_config.ports[rsp_config.nports++].hi = hi;
		if (*end != ',' && *end)
			goto bad;
		v = *end ? end + 1 : end;
	}
	return;
bad:
	fprintf(stderr, "librspreload: bad RDMA_RSOCKET_PORTS at '%s'\n", v);
}

/*
 * The log's path ("" for stderr) and file: daemons close every descriptor
 * they did not open (sshd and ssh do, first thing), and the log's number
 * may then come back as one of the program's, which must never get our
 * lines.  rsp_log checks the file is still the log's and opens it again
 * if not.
 */
static char log_path[4096];
static dev_t log_dev;
static ino_t log_ino;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

/* Above the numbers the program reuses: see fd_high.h. */
static int log_open(void)
{
	struct stat st;
	int fd;

	if (!*log_path)
		fd = cma_fd_dup_high(2, rsp_real.fcntl);
	else
		fd = cma_fd_move_high(open(log_path, CMA_ENV_LOG_FLAGS, 0644),
				      rsp_real.fcntl, rsp_real.close);
	if (fd >= 0 && !fstat(fd, &st)) {
		log_dev = st.st_dev;
		log_ino = st.st_ino;
	}
	return fd;
}

static void open_log(void)
{
	const char *path = cma_env("RDMA_RSOCKET_LOG");

	if (!path || !*path)
		return;
	if (strlen(path) >= sizeof(log_path)) {
		fprintf(stderr, "librspreload: RDMA_RSOCKET_LOG is too long\n");
		return;
	}
	strcpy(log_path, strcmp(path, "stderr") ? path : "");
	rsp_config.log_fd = log_open();
	if (rsp_config.log_fd < 0)
		fprintf(stderr, "librspreload: cannot open %s: %s\n", path,
			strerror(errno));
}

/*
 * Whether @n more bytes fit in the log file @st under the process's file
 * size limit.  Beyond it the kernel ends the process with SIGXFSZ, and a
 * process that confines itself may set it to 0 first (sshd's
 * pre-authentication child, right before its seccomp filter): its lines
 * are dropped from then on, without asking the limit again, which a
 * filter may forbid.
 */
static bool log_fits(const struct stat *st, size_t n)
{
	static int full_in; /* the process whose lines no longer fit */
	struct rlimit rl;

	if (!S_ISREG(st->st_mode))
		return true;
	if (full_in == (int)getpid())
		return false;
	if (getrlimit(RLIMIT_FSIZE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
	    (rlim_t)st->st_size + n <= rl.rlim_cur)
		return true;
	full_in = (int)getpid();
	return false;
}

/*
 * The log's descriptor, opened again if the program closed it, for a line
 * of @n bytes; -1: none, or the line does not fit.
 */
static int log_fd(size_t n)
{
	struct stat st;
	int fd;

	pthread_mutex_lock(&log_lock);
	fd = rsp_config.log_fd;
	/* never close the old number: it is not ours any more */
	if (fd >= 0 &&
	    (fstat(fd, &st) || st.st_dev != log_dev || st.st_ino != log_ino)) {
		fd = log_open();
		__atomic_store_n(&rsp_config.log_fd, fd, __ATOMIC_RELAXED);
		if (fd >= 0 && fstat(fd, &st))
			fd = -1;
	}
	if (fd >= 0 && !log_fits(&st, n))
		fd = -1;
	pthread_mutex_unlock(&log_lock);
	return fd;
}

static int env_int(const char *name)
{
	return env_int2(name, NULL);
}

bool rsp_fork_safe_env(void)
{
	const char *d = cma_env("RDMAV_FORK_SAFE");

	if (!d)
		d = cma_env("IBV_FORK_SAFE");
	return d && strcmp(d, "0");
}

bool rsp_disabled_env(void)
{
	const char *d = cma_env("RDMA_RSOCKET_DISABLE");

	return d && *d && strcmp(d, "0");
}

static void read_config(void)
{
	rsp_config.disabled = rsp_disabled_env();
	rsp_config.sqsize = env_int2("RDMA_RSOCKET_SQSIZE", "RS_SQ_SIZE");
	rsp_config.rqsize = env_int2("RDMA_RSOCKET_RQSIZE", "RS_RQ_SIZE");
	rsp_config.inline_size = env_int2("RDMA_RSOCKET_INLINE", "RS_INLINE");
	rsp_config.fork_safe = rsp_fork_safe_env();
	rsp_config.sndbuf = env_int("RDMA_RSOCKET_SNDBUF");
	rsp_config.rcvbuf = env_int("RDMA_RSOCKET_RCVBUF");
	parse_ports(cma_env("RDMA_RSOCKET_PORTS"));
	open_log();
}

static void rsp_forking(void)
{
	__atomic_add_fetch(&rsp_forks, 1, __ATOMIC_RELAXED);
}

/*
 * The locks any thread of the parent's may have held for a moment (the
 * log's, fork mode's twins') are made afresh in the child: that thread is
 * not there to let them go.  Not held across the fork instead: a log line
 * may wait on a full pipe, and the fork would wait with it.
 */
static void rsp_forked(void)
{
	rsp_pid = (int)getpid();
	pthread_mutex_init(&log_lock, NULL);
	rsp_twins_forked();
}

/*
 * The process is known from the library's load on, before any call: a
 * child of vfork, which runs in its parent's memory until it execs, is
 * told from its parent even when the parent never called the preload.
 */
__attribute__((constructor)) static void rsp_at_load(void)
{
	rsp_pid = (int)getpid();
	pthread_atfork(rsp_forking, NULL, rsp_forked);
}

static void init_once(void)
{
	pthread_once(&resolved, resolve_all);
	read_config();
	rsp_read_rules();
	rsp_exec_roles_log(); /* the image's start could not: no log yet */
	__atomic_store_n(&inited, true, __ATOMIC_RELEASE);
}

void rsp_init(void)
{
	if (__atomic_load_n(&inited, __ATOMIC_ACQUIRE))
		return;
	/*
	 * A child of vfork whose parent never called us: the C library's
	 * functions only (the same pointers the parent will find); the
	 * settings and the log are the parent's to make, in its memory.
	 */
	if (rsp_in_vfork_child()) {
		pthread_once(&resolved, resolve_all);
		return;
	}
	pthread_once(&once, init_once);
}

void rsp_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n, fd;

	if (__atomic_load_n(&rsp_config.log_fd, __ATOMIC_RELAXED) < 0)
		return;
	n = snprintf(line, sizeof(line), "rspreload[%d]: ", (int)getpid());
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	fd = log_fd((size_t)n);
	/* The real write: ours would look the log descriptor up. */
	if (fd >= 0 && rsp_real.write(fd, line, n) < 0)
		return;
}

bool rsp_port_wanted(const struct sockaddr *sa, socklen_t len)
{
	unsigned short port;
	int i;

	if (!rsp_config.nports)
		return true;
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
		port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
	else if (sa->sa_family == AF_INET6 &&
		 len >= sizeof(struct sockaddr_in6))
		port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	else
		return false;
	for (i = 0; i < rsp_config.nports; i++)
		if (port >= rsp_config.ports[i].lo &&
		    port <= rsp_config.ports[i].hi)
			return true;
	return false;
}

static void set_opt(int rs, int level, int name, int val, const char *what)
{
	if (val && rsetsockopt(rs, level, name, &val, sizeof(val)))
		rsp_log("rsocket %d: cannot set %s=%d: %s", rs, what, val,
			strerror(errno));
}

void rsp_apply_config(int rs)
{
	set_opt(rs, SOL_RDMA, RDMA_SQSIZE, rsp_config.sqsize, "RDMA_SQSIZE");
	set_opt(rs, SOL_RDMA, RDMA_RQSIZE, rsp_config.rqsize, "RDMA_RQSIZE");
	set_opt(rs, SOL_RDMA, RDMA_INLINE, rsp_config.inline_size,
		"RDMA_INLINE");
	set_opt(rs, SOL_SOCKET, SO_SNDBUF, rsp_config.sndbuf, "SO_SNDBUF");
	set_opt(rs, SOL_SOCKET, SO_RCVBUF, rsp_config.rcvbuf, "SO_RCVBUF");
}
