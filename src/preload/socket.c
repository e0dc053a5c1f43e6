// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Socket life cycle, descriptors and options of the program's sockets.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "preload.h"

/* Set while we are inside rsocket(): its own sockets stay real. */
static __thread int in_rsocket;

static bool is_tcp(int domain, int type, int protocol)
{
	type &= ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	return (domain == AF_INET || domain == AF_INET6) &&
	       type == SOCK_STREAM && (!protocol || protocol == IPPROTO_TCP);
}

static bool is_inet(const struct sockaddr *sa, socklen_t len)
{
	return sa && len >= sizeof(sa->sa_family) &&
	       (sa->sa_family == AF_INET || sa->sa_family == AF_INET6);
}

RSP_EXPORT int socket(int domain, int type, int protocol)
{
	bool udp = rsp_is_udp(domain, type, protocol);
	struct rsp_file *f;
	int fd, rs;

	rsp_init();
	fd = rsp_real.socket(domain, type, protocol);
	if (fd < 0 || in_rsocket || rsp_config.disabled ||
	    !(udp || is_tcp(domain, type, protocol)) ||
	    !rsp_socket_wanted(domain, type, protocol))
		return fd;
	/* RDMAV_FORK_SAFE: TCP until first used (fork.c); UDP at once */
	if (!udp && rsp_config.fork_safe && rsp_lazy_set(fd, RSP_LAZY_FRESH)) {
		rsp_log("fd %d: TCP now, an rsocket when first used", fd);
		return fd;
	}
	in_rsocket++;
	rs = rsocket(domain, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
	in_rsocket--;
	if (rs < 0) {
		rsp_log("fd %d: no rsocket (%s), using the kernel's", fd,
			strerror(errno));
		return fd;
	}
	rsp_apply_config(rs);
	if ((type & SOCK_NONBLOCK) && rfcntl(rs, F_SETFL, O_NONBLOCK))
		rsp_log("rsocket %d: cannot make it non-blocking", rs);
	f = rsp_file_new(rs, domain);
	if (!f) {
		rclose(rs);
		return fd;
	}
	f->dgram = udp;
	rsp_set(fd, f);
	rsp_log("fd %d: %s rsocket %d", fd, udp ? "datagram" : "stream", rs);
	return fd;
}

int rsp_fall_back(int fd, struct rsp_file *f, const char *why)
{
	struct sockaddr_storage bound = f->bound;
	socklen_t bound_len = f->bound_len;

	rsp_log("fd %d: %s: falling back to the kernel's %s", fd, why,
		f->dgram ? "UDP" : "TCP");
	/*
	 * The rsocket goes first: a datagram rsocket's own UDP socket holds
	 * the port the kernel socket is to take.
	 */
	rsp_clear(fd);
	rsp_epoll_fell_back(fd);
	if (bound_len &&
	    rsp_real.bind(fd, (struct sockaddr *)&bound, bound_len)) {
		rsp_log("fd %d: cannot bind the kernel socket: %s", fd,
			strerror(errno));
		return -1;
	}
	return 0;
}

/* Errors that mean "this address is not for rsockets", not "busy". */
static bool not_rdma(int err)
{
	return err != EADDRINUSE && err != EACCES && err != EINTR &&
	       err != EISCONN && err != EALREADY;
}

static bool reuses_port(struct rsp_file *f)
{
	int on = 0;
	socklen_t len = sizeof(on);

	return !rgetsockopt(f->rs, SOL_SOCKET, SO_REUSEPORT, &on, &len) && on;
}

RSP_EXPORT int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	struct rsp_file *f;

	rsp_init();
	f = rsp_get(fd);
	if (!f)
		return rsp_real.bind(fd, sa, len);
	if (!is_inet(sa, len) || !rsp_port_wanted(sa, len)) {
		if (rsp_fall_back(fd, f, "not an RDMA port"))
			return -1;
		return rsp_real.bind(fd, sa, len);
	}
	if (f->dgram) {
		int ret = rsp_dgram_choose(fd, f, sa, len, true);

		if (ret <= 0)
			return ret ? -1 : rsp_real.bind(fd, sa, len);
	}
	if (!rbind(f->rs, sa, len)) {
		if (len <= sizeof(f->bound)) {
			memcpy(&f->bound, sa, len);
			f->bound_len = len;
		}
		return 0;
	}
	/*
	 * SO_REUSEPORT sockets of one process share its RDMA listener
	 * (rsocket(7)); one of another process cannot, and serves on TCP.
	 */
	if (errno == EADDRINUSE && reuses_port(f)) {
		if (rsp_fall_back(fd, f, "address listened on elsewhere"))
			return -1;
		return rsp_real.bind(fd, sa, len);
	}
	if (!not_rdma(errno))
		return -1;
	if (rsp_fall_back(fd, f, "rbind failed"))
		return -1;
	return rsp_real.bind(fd, sa, len);
}

RSP_EXPORT int listen(int fd, int backlog)
{
	struct rsp_file *f;

	rsp_init();
	f = rsp_get(fd);
	if (!f) {
		int ret = rsp_real.listen(fd, backlog);

		if (!ret && rsp_lazy_get(fd) == RSP_LAZY_FRESH)
			rsp_lazy_set(fd, RSP_LAZY_LISTEN);
		return ret;
	}
	if (rlisten(f->rs, backlog))
		return -1;
	/* Forked children accept on it too (fdtab.c). */
	f->forks = __atomic_load_n(&rsp_forks, __ATOMIC_RELAXED);
	__atomic_store_n(&f->shared, true, __ATOMIC_RELEASE);
	rsp_log("fd %d: listening on rsocket %d", fd, f->rs);
	return 0;
}

/* Gives an accepted rsocket a descriptor number of its own. */
static int adopt(struct rsp_file *lf, int rs, int flags)
{
	struct rsp_file *f;
	int fd;

	fd = rsp_real.socket(lf->domain, SOCK_STREAM | (flags & SOCK_CLOEXEC),
			     0);
	if (fd < 0)
		goto fail;
	f = rsp_file_new(rs, lf->domain);
	if (!f) {
		rsp_real.close(fd);
		errno = ENOMEM;
		goto fail;
	}
	if ((flags & SOCK_NONBLOCK) && rfcntl(rs, F_SETFL, O_NONBLOCK))
		rsp_log("rsocket %d: cannot make it non-blocking", rs);
	if ((flags & SOCK_NONBLOCK))
		rsp_real.fcntl(fd, F_SETFL, O_NONBLOCK);
	/*
	 * Since a fork shared the listener, a connection is answered by the
	 * process that first uses it (rsocket(7)): maybe a child of this one.
	 */
	f->handed = lf->forks != __atomic_load_n(&rsp_forks, __ATOMIC_RELAXED);
	rsp_set(fd, f);
	rsp_log("fd %d: accepted rsocket %d", fd, rs);
	return fd;
fail:
	rclose(rs);
	return -1;
}

static int do_accept(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
	struct rsp_file *f = rsp_get(fd);
	int rs;

	if (!f) {
		rs = rsp_real.accept4(fd, sa, len, flags);
		if (rs >= 0 && rsp_lazy_get(fd) == RSP_LAZY_LISTEN &&
		    !rsp_lazy_set(rs, RSP_LAZY_PASSIVE))
			rsp_log("fd %d: too high to convert: stays TCP", rs);
		return rs;
	}
	rs = raccept(f->rs, sa, len);
	return rs < 0 ? -1 : adopt(f, rs, flags);
}

RSP_EXPORT int accept(int fd, struct sockaddr *sa, socklen_t *len)
{
	rsp_init();
	if (!rsp_get(fd) && rsp_lazy_get(fd) != RSP_LAZY_LISTEN)
		return rsp_real.accept(fd, sa, len);
	return do_accept(fd, sa, len, 0);
}

RSP_EXPORT int accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
	rsp_init();
	return do_accept(fd, sa, len, flags);
}

/* UDP: connect only sets the default destination; AF_UNSPEC clears it. */
static int connect_dgram(int fd, struct rsp_file *f, const struct sockaddr *sa,
			 socklen_t len)
{
	int ret = rsp_dgram_choose(fd, f, sa, len, false);

	if (ret <= 0)
		return ret ? -1 : rsp_real.connect(fd, sa, len);
	return rconnect(f->rs, sa, len);
}

RSP_EXPORT int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	struct rsp_file *f;

	rsp_init();
	f = rsp_get(fd);
	if (!f) {
		int ret = rsp_real.connect(fd, sa, len), err = errno;
		bool rdma = is_inet(sa, len) && rsp_port_wanted(sa, len);

		/* RDMAV_FORK_SAFE: converted at first use (fork.c) */
		if ((!ret || err == EINPROGRESS) &&
		    rsp_lazy_get(fd) == RSP_LAZY_FRESH)
			rsp_lazy_set(fd,
				     rdma ? RSP_LAZY_ACTIVE : RSP_LAZY_NONE);
		errno = err;
		return ret;
	}
	if (f->dgram)
		return connect_dgram(fd, f, sa, len);
	if (!is_inet(sa, len) || !rsp_port_wanted(sa, len)) {
		if (rsp_fall_back(fd, f, "not an RDMA destination"))
			return -1;
		return rsp_real.connect(fd, sa, len);
	}
	if (!rconnect(f->rs, sa, len)) {
		rsp_log("fd %d: connected over rsocket %d", fd, f->rs);
		return 0;
	}
	if (errno == EINPROGRESS) {
		rsp_log("fd %d: connecting over rsocket %d", fd, f->rs);
		return -1;
	}
	if (!not_rdma(errno))
		return -1;
	if (rsp_fall_back(fd, f, strerror(errno)))
		return -1;
	return rsp_real.connect(fd, sa, len);
}

/* What the preload kept for fd goes: the kernel closes it. */
static void forget(int fd)
{
	rsp_epoll_forget(fd);
	rsp_lazy_drop(fd); /* with a pending handshake's rsocket */
	/* also a forked child's copy of the parent's rsocket (fdtab.c) */
	if (rsp_any())
		rsp_clear(fd);
	rsp_release_retired(fd);
}

RSP_EXPORT int close(int fd)
{
	rsp_init();
	if ((!rsp_peek(fd) && rsp_lazy_get(fd) == RSP_LAZY_NONE) ||
	    !rsp_in_vfork_child())
		forget(fd);
	return rsp_real.close(fd);
}

/*
 * closefrom and close_range close descriptors without close(): what the
 * preload kept for each open one in [first, last] goes first, or a
 * descriptor opened later with one of those numbers would be taken for
 * the socket that had it.
 */
static void forget_range(unsigned int first, unsigned int last)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	unsigned int fd;
	char *end;
	long n;

	if (!d) { /* no /proc: the numbers fork mode's state covers */
		for (fd = first; fd <= last && fd < RSP_LAZY_MAX; fd++)
			forget((int)fd);
		return;
	}
	while ((e = readdir(d))) {
		n = strtol(e->d_name, &end, 10);
		if (*end || end == e->d_name || n == dirfd(d) ||
		    n < (long)first || n > (long)last)
			continue;
		forget((int)n);
	}
	closedir(d);
}

RSP_EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
	rsp_init();
	if (!(flags & CLOSE_RANGE_CLOEXEC) && first <= last &&
	    !rsp_in_vfork_child())
		forget_range(first, last);
	return (int)syscall(SYS_close_range, first, last, flags);
}

RSP_EXPORT void closefrom(int lowfd)
{
	rsp_init();
	if (!rsp_in_vfork_child()) /* its descriptors are its own copies */
		forget_range(lowfd < 0 ? 0 : (unsigned int)lowfd, ~0U);
	if (rsp_real.closefrom)
		rsp_real.closefrom(lowfd);
	else /* closefrom itself returns nothing */
		(void)syscall(SYS_close_range, lowfd < 0 ? 0 : lowfd, ~0U, 0);
}

RSP_EXPORT int shutdown(int fd, int how)
{
	struct rsp_file *f;

	rsp_init();
	/* Another process's connection: its owner relays it if asked. */
	rsp_share_claim(fd);
	f = rsp_get(fd);
	/* Moving back: what is left on RDMA is only ours to read. */
	if (f && __atomic_load_n(&f->writes_tcp, __ATOMIC_ACQUIRE))
		f = NULL;
	return f ? rshutdown(f->rs, how) : rsp_real.shutdown(fd, how);
}

/*
 * After the kernel duplicated old into new, new shares old's rsocket, or
 * old's record of a connection a fork shared (share.c: a child that
 * moves it to its standard input asks for it there).
 */
static int share(int oldfd, int newfd)
{
	struct rsp_file *f = rsp_get(oldfd), *forked = rsp_peek(oldfd);

	if (!f && forked && forked->forked)
		f = forked;

	if (newfd < 0)
		return newfd;
	rsp_lazy_drop(newfd);
	/* an unused connection's twin; else TCP, its peer's offer due */
	if (!rsp_lazy_twin(oldfd, newfd))
		rsp_inherit_dup(oldfd, newfd);
	if (f)
		rsp_set(newfd, f);
	else if (rsp_get(newfd))
		rsp_clear(newfd); /* dup2 closed an rsocket descriptor */
	rsp_release_retired(newfd); /* ... or one the library unmapped */
	return newfd;
}

RSP_EXPORT int dup(int fd)
{
	rsp_init();
	return share(fd, rsp_real.dup(fd));
}

RSP_EXPORT int dup2(int oldfd, int newfd)
{
	rsp_init();
	if (oldfd == newfd)
		return rsp_real.dup2(oldfd, newfd);
	return share(oldfd, rsp_real.dup2(oldfd, newfd));
}

RSP_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	rsp_init();
	return share(oldfd, rsp_real.dup3(oldfd, newfd, flags));
}

/*
 * fcntl: the status flags (O_NONBLOCK) belong to the rsocket too;
 * duplication shares it; the rest is the kernel descriptor's business.
 */
static int do_fcntl(int (*real)(int, int, ...), int fd, int cmd, long arg)
{
	struct rsp_file *f = rsp_get(fd);
	int ret;

	switch (cmd) {
	case F_SETFL:
		if (f && rfcntl(f->rs, F_SETFL, (int)arg))
			return -1;
		return real(fd, cmd, arg);
	case F_DUPFD:
	case F_DUPFD_CLOEXEC:
		return share(fd, real(fd, cmd, arg));
	case F_GETFL:
		ret = real(fd, cmd);
		if (f && ret >= 0) {
			int rfl = rfcntl(f->rs, F_GETFL);

			if (rfl >= 0)
				ret = (ret & ~O_NONBLOCK) | (rfl & O_NONBLOCK);
		}
		return ret;
	}
	return real(fd, cmd, arg);
}

RSP_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	rsp_init();
	return do_fcntl(rsp_real.fcntl, fd, cmd, arg);
}

RSP_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	rsp_init();
	return do_fcntl(rsp_real.fcntl64, fd, cmd, arg);
}

/* Only FIONBIO means anything to an rsocket. */
RSP_EXPORT int ioctl(int fd, unsigned long req, ...)
{
	struct rsp_file *f;
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	rsp_init();
	f = rsp_get(fd);
	if (f && req == FIONBIO && arg) {
		int fl = rfcntl(f->rs, F_GETFL);

		if (fl < 0)
			return -1;
		fl = *(int *)arg ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
		if (rfcntl(f->rs, F_SETFL, fl))
			return -1;
	}
	return rsp_real.ioctl(fd, req, arg);
}

RSP_EXPORT int getsockname(int fd, struct sockaddr *sa, socklen_t *len)
{
	struct rsp_file *f;

	rsp_init();
	f = rsp_get(fd);
	if (!f && rsp_share_name(fd, false, sa, len))
		return 0;
	return f ? rsp_file_name(fd, f, false, sa, len)
		 : rsp_real.getsockname(fd, sa, len);
}

RSP_EXPORT int getpeername(int fd, struct sockaddr *sa, socklen_t *len)
{
	struct rsp_file *f;

	rsp_init();
	f = rsp_get(fd);
	if (!f && rsp_share_name(fd, true, sa, len))
		return 0;
	return f ? rsp_file_name(fd, f, true, sa, len)
		 : rsp_real.getpeername(fd, sa, len);
}

/*
 * Options rsockets does not know (IP_TOS, TCP_INFO, SO_TYPE, ...) go to
 * the kernel socket, so programs that insist on them keep working.
 */
static bool unknown_option(int err)
{
	return err == ENOPROTOOPT || err == ENOTSUP || err == EOPNOTSUPP ||
	       err == ENOSYS;
}

RSP_EXPORT int setsockopt(int fd, int level, int name, const void *val,
			  socklen_t len)
{
	struct rsp_file *f;

	rsp_init();
	f = rsp_get(fd);
	/*
	 * A relayed connection (share.c): TCP's and IP's options have no
	 * socket (sshd sets IP_TOS on its client's).
	 */
	if (!f &&
	    (level == IPPROTO_TCP || level == IPPROTO_IP ||
	     level == IPPROTO_IPV6) &&
	    rsp_share_name(fd, true, NULL, NULL))
		return 0;
	if (!f)
		return rsp_real.setsockopt(fd, level, name, val, len);
	if (!rsetsockopt(f->rs, level, name, val, len)) {
		/*
		 * UDP: the kernel socket takes it too, so a socket that falls
		 * back later (dgram.c) keeps SO_REUSEADDR and the like; so does
		 * a stream socket's SO_REUSEPORT (bind falls back with it).
		 */
		if ((f->dgram ||
		     (level == SOL_SOCKET && name == SO_REUSEPORT)) &&
		    rsp_real.setsockopt(fd, level, name, val, len))
			rsp_log("fd %d: option %d/%d not kept for a fallback",
				fd, level, name);
		return 0;
	}
	if (!unknown_option(errno))
		return -1;
	rsp_log("fd %d: option %d/%d is not an rsocket option", fd, level,
		name);
	return rsp_real.setsockopt(fd, level, name, val, len);
}

RSP_EXPORT int getsockopt(int fd, int level, int name, void *val,
			  socklen_t *len)
{
	struct rsp_file *f;

	rsp_init();
	f = rsp_get(fd);
	if (!f)
		return rsp_real.getsockopt(fd, level, name, val, len);
	if (!rgetsockopt(f->rs, level, name, val, len))
		return 0;
	if (!unknown_option(errno))
		return -1;
	return rsp_real.getsockopt(fd, level, name, val, len);
}
