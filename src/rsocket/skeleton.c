// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Temporary: the rsocket entry points, exported so that programs linked
 * against rdma-core's librdmacm load, each failing with ENOSYS until its
 * real implementation lands in the files of src/rsocket/.
 */
#include <errno.h>
#include <rdma/rsocket.h>

#include "cma.h"

#define RS_STUB(ret_type, name, ...)                                           \
	CMA_EXPORT ret_type name(__VA_ARGS__)                                  \
	{                                                                      \
		errno = ENOSYS;                                                \
		return (ret_type)-1;                                           \
	}

RS_STUB(int, rsocket, int domain, int type, int protocol)
RS_STUB(int, rbind, int s, const struct sockaddr *a, socklen_t l)
RS_STUB(int, rlisten, int s, int backlog)
RS_STUB(int, raccept, int s, struct sockaddr *a, socklen_t *l)
RS_STUB(int, rconnect, int s, const struct sockaddr *a, socklen_t l)
RS_STUB(int, rshutdown, int s, int how)
RS_STUB(int, rclose, int s)
RS_STUB(ssize_t, rrecv, int s, void *b, size_t n, int f)
RS_STUB(ssize_t, rrecvfrom, int s, void *b, size_t n, int f, struct sockaddr *a,
	socklen_t *l)
RS_STUB(ssize_t, rrecvmsg, int s, struct msghdr *m, int f)
RS_STUB(ssize_t, rsend, int s, const void *b, size_t n, int f)
RS_STUB(ssize_t, rsendto, int s, const void *b, size_t n, int f,
	const struct sockaddr *a, socklen_t l)
RS_STUB(ssize_t, rsendmsg, int s, const struct msghdr *m, int f)
RS_STUB(ssize_t, rread, int s, void *b, size_t n)
RS_STUB(ssize_t, rreadv, int s, const struct iovec *v, int n)
RS_STUB(ssize_t, rwrite, int s, const void *b, size_t n)
RS_STUB(ssize_t, rwritev, int s, const struct iovec *v, int n)
RS_STUB(int, rpoll, struct pollfd *fds, nfds_t n, int t)
RS_STUB(int, rselect, int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t)
RS_STUB(int, rgetpeername, int s, struct sockaddr *a, socklen_t *l)
RS_STUB(int, rgetsockname, int s, struct sockaddr *a, socklen_t *l)
RS_STUB(int, rsetsockopt, int s, int lv, int o, const void *v, socklen_t l)
RS_STUB(int, rgetsockopt, int s, int lv, int o, void *v, socklen_t *l)
RS_STUB(int, rfcntl, int s, int cmd, ...)
RS_STUB(off_t, riomap, int s, void *b, size_t n, int p, int f, off_t o)
RS_STUB(int, riounmap, int s, void *b, size_t n)
RS_STUB(size_t, riowrite, int s, const void *b, size_t n, off_t o, int f)
RS_STUB(int, repoll_create, int flags)
RS_STUB(int, repoll_ctl, int e, int op, int fd, struct epoll_event *ev)
RS_STUB(int, repoll_wait, int e, struct epoll_event *ev, int m, int t)
