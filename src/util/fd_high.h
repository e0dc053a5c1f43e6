/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Descriptors the library and the preload keep for themselves (log files,
 * internal epoll sets) live above the numbers programs commonly reuse.
 * A daemon that closes its descriptors from 3 up and then opens its own
 * files gets the lowest free numbers: had our log sat at 3 or 4, our lines
 * would go into the daemon's file or socket.  Numbers the application is
 * handed (channel->fd, rsocket numbers) are not moved.
 */
#ifndef CMA_FD_HIGH_H
#define CMA_FD_HIGH_H

#include <fcntl.h>
#include <sys/resource.h>

/* Where our own descriptors start, or half of a lower RLIMIT_NOFILE. */
#define CMA_FD_HIGH 500

typedef int (*cma_fcntl_fn)(int, int, ...);
typedef int (*cma_close_fn)(int);

/* The lowest number our descriptors may take: 500, or the limit's half. */
static inline int cma_fd_floor(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur <= (rlim_t)CMA_FD_HIGH)
		return (int)(rl.rlim_cur / 2);
	return CMA_FD_HIGH;
}

/*
 * A close-on-exec duplicate of @fd at the floor or above, through @fcn
 * (the preload passes the real fcntl).  -1/errno if there is no room.
 */
static inline int cma_fd_dup_high(int fd, cma_fcntl_fn fcn)
{
	return fcn(fd, F_DUPFD_CLOEXEC, cma_fd_floor());
}

/*
 * Move @fd (ours, close-on-exec) to the floor or above; @fd itself when
 * it is there already or nothing higher is free, so a caller never loses
 * its descriptor.  A negative @fd is passed through.
 */
static inline int cma_fd_move_high(int fd, cma_fcntl_fn fcn, cma_close_fn cls)
{
	int nfd;

	if (fd < 0 || fd >= cma_fd_floor())
		return fd;
	nfd = cma_fd_dup_high(fd, fcn);
	if (nfd < 0)
		return fd;
	cls(fd);
	return nfd;
}

#endif
