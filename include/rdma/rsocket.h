/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * rsockets: a socket-style API whose streams run over RDMA reliable
 * connections and whose datagrams run over unreliable datagram QPs.
 *
 * Each call mirrors the BSD socket call of the same name without the
 * leading 'r' and follows its conventions: -1 with errno on failure.  An
 * rsocket is a descriptor of its own, not a kernel file descriptor: pass it
 * only to r* calls (rpoll and rselect accept both kinds).  See rsocket(7).
 */
#ifndef RSOCKET_H
#define RSOCKET_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>
#include <errno.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/mman.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Socket life cycle. */
int rsocket(int domain, int type, int protocol);
int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen);
int rlisten(int socket, int backlog);
int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen);
int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen);
int rshutdown(int socket, int how);
int rclose(int socket);

/* Data transfer. */
ssize_t rrecv(int socket, void *buf, size_t len, int flags);
ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
		  struct sockaddr *src_addr, socklen_t *addrlen);
ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags);
ssize_t rsend(int socket, const void *buf, size_t len, int flags);
ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
		const struct sockaddr *dest_addr, socklen_t addrlen);
ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags);
ssize_t rread(int socket, void *buf, size_t count);
ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt);
ssize_t rwrite(int socket, const void *buf, size_t count);
ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt);

/* Readiness: rsockets and ordinary file descriptors may be mixed. */
int rpoll(struct pollfd *fds, nfds_t nfds, int timeout);
int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
	    struct timeval *timeout);

/* Addresses. */
int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen);
int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen);

/* The option level of the RDMA-specific options below. */
#define SOL_RDMA 0x10000

/* Options at level SOL_RDMA; set them before the socket connects. */
enum {
	RDMA_SQSIZE, /* send queue depth (int) */
	RDMA_RQSIZE, /* receive queue depth (int) */
	RDMA_INLINE, /* largest send carried inline (int) */
	RDMA_IOMAPSIZE, /* number of riomap slots the peer may use (int) */
	RDMA_ROUTE /* a struct ibv_path_data to use instead of resolving */
};

/*
 * This library's own SOL_RDMA option, numbered apart from the ones above
 * (rsocket(7)): setting it (an int, the longest wait in ms, -1 for none)
 * ends a connected stream socket's RDMA data path in both directions with
 * the peer's agreement; getting it gives which directions have ended.
 */
#define RDMA_QUIESCE 0x100
#define RDMA_QUIESCE_OURS 0x1 /* this end's writes go elsewhere */
#define RDMA_QUIESCE_PEERS 0x2 /* the peer's bytes end at end of file */

int rsetsockopt(int socket, int level, int optname, const void *optval,
		socklen_t optlen);
int rgetsockopt(int socket, int level, int optname, void *optval,
		socklen_t *optlen);
int rfcntl(int socket, int cmd, ... /* arg */);

/* Direct placement: expose a buffer to the peer, or write into one of its. */
off_t riomap(int socket, void *buf, size_t len, int prot, int flags,
	     off_t offset);
int riounmap(int socket, void *buf, size_t len);
size_t riowrite(int socket, const void *buf, size_t count, off_t offset,
		int flags);

/* epoll-style readiness over rsockets (rdma-core's RDMACM_1.5). */
int repoll_create(int flags);
int repoll_ctl(int epfd, int op, int fd, struct epoll_event *event);
int repoll_wait(int epfd, struct epoll_event *events, int maxevents,
		int timeout);

#ifdef __cplusplus
}
#endif

#endif /* RSOCKET_H */
