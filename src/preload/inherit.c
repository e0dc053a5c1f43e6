// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Connections a program image inherits across execve() (RDMAV_FORK_SAFE).
 *
 * A server that re-executes itself per connection (sshd), or a service
 * started with its connection on its standard descriptors (inetd,
 * systemd's Accept=yes), gets a connected TCP socket this image never
 * accepted.  Its peer, in fork mode, may have sent an offer (forkstep.c)
 * that only a preload knows to take.  Such a connection stays on TCP:
 * which end made it is unknown here (the offers need it), and an rsocket
 * made now would be this image's alone, which a server that forks again
 * or changes credentials could not use.  What this file makes sure of
 * is that the peer's offer never reaches the program: at the image's
 * start every connected TCP socket is INHERITED, and its first read
 * takes the offer, if one came (fork.c, step_inherited).  It answers it
 * with "not ready" when nothing was sent to the peer yet (which waits
 * for that answer), and drops it silently after the program's own bytes
 * went first (the peer took those for a peer without the preload and
 * went on on TCP).  Writes need nothing: the kernel counts what went.
 * The exception: a connection the image before the exec accepted or
 * connected in fork mode and never used, which it named in the
 * environment (exec_pass.c), makes fork mode's handshake instead.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stddef.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"

/*
 * The kernel's struct tcp_info up to tcpi_bytes_acked (Linux 4.1); the C
 * library's stops at tcpi_total_retrans, and the kernel's own header
 * cannot be included beside it.  The kernel only ever appends fields.
 */
struct rsp_tcp_info {
	struct tcp_info base;
	uint64_t pacing_rate;
	uint64_t max_pacing_rate;
	uint64_t bytes_acked;
};

_Static_assert(offsetof(struct rsp_tcp_info, bytes_acked) == 120,
	       "tcpi_bytes_acked is at offset 120 of the kernel's tcp_info");

/* Whether fd is a TCP socket over IPv4 or IPv6 that has a peer. */
static bool tcp_connection(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int domain = rsp_sock_int(fd, SO_DOMAIN);

	return (domain == AF_INET || domain == AF_INET6) &&
	       rsp_sock_int(fd, SO_TYPE) == SOCK_STREAM &&
	       rsp_sock_int(fd, SO_PROTOCOL) == IPPROTO_TCP &&
	       !syscall(SYS_getpeername, fd, (struct sockaddr *)&ss, &len);
}

void rsp_inherit_mark(int fd)
{
	if (rsp_lazy_get(fd) == RSP_LAZY_NONE && !rsp_get(fd) &&
	    tcp_connection(fd))
		rsp_lazy_set(fd, RSP_LAZY_INHERITED);
}

void rsp_inherit_dup(int oldfd, int newfd)
{
	if (rsp_lazy_get(oldfd) == RSP_LAZY_INHERITED)
		rsp_lazy_set(newfd, RSP_LAZY_INHERITED);
}

bool rsp_inherit_sent(int fd)
{
	struct rsp_tcp_info ti;
	socklen_t len = sizeof(ti);
	int queued = 0;

	/*
	 * Queued (unsent or unacknowledged) first, acknowledged second: a
	 * byte that moves from one to the other in between is still seen.
	 */
	if (!rsp_real.ioctl(fd, TIOCOUTQ, &queued) && queued > 0)
		return true;
	return !rsp_real.getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) &&
	       len >= offsetof(struct rsp_tcp_info, bytes_acked) +
			       sizeof(ti.bytes_acked) &&
	       ti.bytes_acked > 0;
}

/* Every descriptor the image starts with (no /proc: the first 256). */
static void scan(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char *end;
	long fd;

	if (!d) {
		for (fd = 0; fd < 256; fd++)
			rsp_inherit_mark((int)fd);
		return;
	}
	while ((e = readdir(d))) {
		fd = strtol(e->d_name, &end, 10);
		if (*end || end == e->d_name || fd == dirfd(d))
			continue;
		rsp_inherit_mark((int)fd);
	}
	closedir(d);
}

/*
 * At the image's start, before the program runs: only then is a connected
 * socket certainly one it did not make under this preload.  Nothing else
 * of the library starts here: the debug log, opened now, would be among
 * the descriptors a daemon closes first thing (sshd), and the number
 * could come back as one of the program's.
 */
__attribute__((constructor)) static void rsp_inherit_at_start(void)
{
	bool on = rsp_fork_safe_env() && !rsp_disabled_env();

	/*
	 * First the connections the image before the exec named as not used
	 * yet (exec_pass.c): those make the handshake, the scan leaves them.
	 */
	rsp_exec_roles_at_start(on, !rsp_disabled_env(), rsp_lazy_mark);
	if (on)
		scan();
}
