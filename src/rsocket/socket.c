// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The public socket calls: validate the arguments, find the socket and
 * hand over to the stream (conn.c, stream.c) or datagram (dgram.c) side.
 */
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <netinet/in.h>

#include <infiniband/ib.h>

#include "rs.h"

#define RS_IOV_MAX 1024

CMA_EXPORT int rsocket(int domain, int type, int protocol)
{
	struct rsocket *rs;
	int index, ret, err;
	bool nonblock = type & SOCK_NONBLOCK;
	bool cloexec = type & SOCK_CLOEXEC;

	type &= ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (domain != AF_INET && domain != AF_INET6 && domain != AF_IB)
		return cma_err(EAFNOSUPPORT);
	if (type != SOCK_STREAM && type != SOCK_DGRAM)
		return cma_err(ENOTSUP);
	if ((type == SOCK_STREAM && protocol && protocol != IPPROTO_TCP) ||
	    (type == SOCK_DGRAM && protocol && protocol != IPPROTO_UDP))
		return cma_err(EPROTONOSUPPORT);
	if (type == SOCK_DGRAM && domain == AF_IB)
		return cma_err(EAFNOSUPPORT);

	rs_configure();
	rs = rs_alloc(NULL, type);
	if (!rs)
		return cma_err(ENOMEM);
	rs->domain = domain;
	if (nonblock)
		rs->fd_flags |= O_NONBLOCK;
	rs->opt.cloexec = cloexec; /* rfcntl F_GETFD reports it */
	if (type == SOCK_STREAM) {
		ret = rs_stream_init(rs, domain);
		index = ret ? -1 : rs->channel->fd;
	} else {
		ret = ds_init(rs, domain);
		index = ret ? -1 : rs->udp_sock;
	}
	if (!ret)
		ret = rs_insert(rs, index);
	if (ret) {
		err = errno;
		rs_put(rs);
		return cma_err(err);
	}
	return index;
}

/*
 * Every call below holds a reference from rs_get to its rs_put, so a
 * concurrent rclose cannot free the socket under it (rules in rs.h).
 * The rs_put keeps errno also when it frees.
 */
static long rs_done(struct rsocket *rs, long ret)
{
	rs_put(rs);
	return ret;
}

CMA_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsocket *rs = rs_get(socket);

	if (!rs)
		return -1;
	if (rs->type == SOCK_STREAM)
		return (int)rs_done(rs, rs_stream_bind(rs, addr, addrlen));
	return (int)rs_done(rs, ds_bind(rs, addr, addrlen));
}

CMA_EXPORT int rlisten(int socket, int backlog)
{
	struct rsocket *rs = rs_get(socket);

	if (!rs)
		return -1;
	if (rs->type != SOCK_STREAM)
		return (int)rs_done(rs, cma_err(EOPNOTSUPP));
	return (int)rs_done(rs, rs_stream_listen(rs, backlog));
}

CMA_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsocket *rs = rs_get(socket);

	if (!rs)
		return -1;
	if (rs->type != SOCK_STREAM)
		return (int)rs_done(rs, cma_err(EOPNOTSUPP));
	return (int)rs_done(rs, rs_stream_accept(rs, addr, addrlen));
}

CMA_EXPORT int rconnect(int socket, const struct sockaddr *addr,
			socklen_t addrlen)
{
	struct rsocket *rs = rs_get(socket);

	if (!rs)
		return -1;
	if (rs->type == SOCK_STREAM)
		return (int)rs_done(rs, rs_stream_connect(rs, addr, addrlen));
	return (int)rs_done(rs, ds_connect(rs, addr, addrlen));
}

static int rs_shutdown(struct rsocket *rs, int how)
{
	if (rs->type == SOCK_STREAM)
		return rs_stream_shutdown(rs, how);
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return cma_err(EINVAL);
	return ds_shutdown(rs, how);
}

CMA_EXPORT int rshutdown(int socket, int how)
{
	struct rsocket *rs = rs_get(socket);

	if (!rs)
		return -1;
	return (int)rs_done(rs, rs_shutdown(rs, how));
}

/*
 * The number goes at once (later calls get EBADF); threads asleep in a
 * call on the socket wake and fail with EBADF (close(2) on Linux would
 * leave them asleep); the memory, the QPs and the number's descriptor go
 * with the last reference, when the last of those calls returns.
 */
CMA_EXPORT int rclose(int socket)
{
	struct rsocket *rs = rs_get(socket);

	if (!rs)
		return -1;
	if (rs_close_begin(rs))
		return (int)rs_done(rs, -1);
	/* Sockets that joined it (SO_REUSEPORT) still accept its requests. */
	if (rs->type == SOCK_STREAM && rs_state(rs) == RS_LISTENING &&
	    !__atomic_load_n(&rs->reuse_members, __ATOMIC_ACQUIRE))
		rs_handoff_close(rs);
	/* A datagram socket lets its last sends leave when it is freed. */
	if (rs->type == SOCK_STREAM && (rs_state(rs) & RS_CONNECTED))
		rs_stream_shutdown(rs, SHUT_RDWR);
	rs_put(rs);
	return 0;
}

/* --- data ---------------------------------------------------------------- */

/* Taken as size_t: msg_iovlen beyond INT_MAX must not wrap to a small count. */
static int rs_check_iov(const struct iovec *iov, size_t iovcnt)
{
	size_t i;

	if (iovcnt > RS_IOV_MAX || (iovcnt && !iov))
		return cma_err(EINVAL);
	for (i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len && !iov[i].iov_base)
			return cma_err(EFAULT);
	}
	return 0;
}

CMA_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	return rrecvfrom(socket, buf, len, flags, NULL, NULL);
}

CMA_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			     struct sockaddr *src_addr, socklen_t *addrlen)
{
	struct rsocket *rs = rs_get(socket);
	ssize_t ret;

	if (!rs)
		return -1;
	if (!buf && len)
		return rs_done(rs, cma_err(EFAULT));
	if (rs->type == SOCK_DGRAM)
		return rs_done(rs, ds_recvfrom(rs, buf, len, flags, src_addr,
					       addrlen));
	ret = rs_stream_recv(rs, buf, len, flags);
	if (ret > 0 && src_addr && addrlen)
		rs_copy_peer(rs, src_addr, addrlen);
	return rs_done(rs, ret);
}

CMA_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	struct rsocket *rs = rs_get(socket);

	if (!rs)
		return -1;
	if (!msg)
		return rs_done(rs, cma_err(EFAULT));
	if (msg->msg_control && msg->msg_controllen)
		return rs_done(rs, cma_err(ENOTSUP));
	if (rs_check_iov(msg->msg_iov, msg->msg_iovlen))
		return rs_done(rs, -1);
	msg->msg_flags = 0;
	if (rs->type == SOCK_DGRAM)
		return rs_done(rs, ds_recvmsg(rs, msg, flags));
	return rs_done(rs, rs_stream_recvv(rs, msg->msg_iov,
					   (int)msg->msg_iovlen, flags));
}

CMA_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	return rrecvfrom(socket, buf, count, 0, NULL, NULL);
}

CMA_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	struct msghdr msg;

	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = (struct iovec *)iov;
	msg.msg_iovlen = iovcnt < 0 ? 0 : (size_t)iovcnt;
	if (iovcnt < 0)
		return cma_err(EINVAL);
	return rrecvmsg(socket, &msg, 0);
}

CMA_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	return rsendto(socket, buf, len, flags, NULL, 0);
}

CMA_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			   const struct sockaddr *dest_addr, socklen_t addrlen)
{
	struct rsocket *rs = rs_get(socket);
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	if (!rs)
		return -1;
	if (!buf && len)
		return rs_done(rs, cma_err(EFAULT));
	if (rs->type == SOCK_DGRAM)
		return rs_done(
			rs, ds_sendto(rs, buf, len, flags, dest_addr, addrlen));
	if (dest_addr || addrlen)
		return rs_done(rs, cma_err(EISCONN));
	return rs_done(rs, rs_stream_sendv(rs, &iov, 1, flags));
}

CMA_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	struct rsocket *rs = rs_get(socket);

	if (!rs)
		return -1;
	if (!msg)
		return rs_done(rs, cma_err(EFAULT));
	if (msg->msg_control && msg->msg_controllen)
		return rs_done(rs, cma_err(ENOTSUP));
	if (rs_check_iov(msg->msg_iov, msg->msg_iovlen))
		return rs_done(rs, -1);
	if (rs->type == SOCK_DGRAM) {
		uint8_t tmp[DS_MSG_SIZE];
		const struct iovec *cur = msg->msg_iov;
		size_t off = 0, len = 0, i;

		for (i = 0; i < msg->msg_iovlen; i++)
			len += msg->msg_iov[i].iov_len;
		if (len > sizeof(tmp))
			return rs_done(rs, cma_err(EMSGSIZE));
		rs_gather(tmp, &cur, &off, len);
		return rs_done(rs, ds_sendto(rs, tmp, len, flags, msg->msg_name,
					     msg->msg_namelen));
	}
	return rs_done(rs, rs_stream_sendv(rs, msg->msg_iov,
					   (int)msg->msg_iovlen, flags));
}

CMA_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return rsendto(socket, buf, count, 0, NULL, 0);
}

CMA_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	struct msghdr msg;

	if (iovcnt < 0)
		return cma_err(EINVAL);
	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = (struct iovec *)iov;
	msg.msg_iovlen = (size_t)iovcnt;
	return rsendmsg(socket, &msg, 0);
}

/* --- names --------------------------------------------------------------- */

static int rs_copy_addr(struct sockaddr *dst, socklen_t *len,
			const struct sockaddr *src)
{
	socklen_t size;

	if (!dst || !len)
		return cma_err(EFAULT);
	switch (src->sa_family) {
	case AF_INET:
		size = sizeof(struct sockaddr_in);
		break;
	case AF_INET6:
		size = sizeof(struct sockaddr_in6);
		break;
	case AF_IB:
		size = sizeof(struct sockaddr_ib);
		break;
	default:
		size = sizeof(struct sockaddr);
		break;
	}
	memcpy(dst, src, *len < size ? *len : size);
	*len = size;
	return 0;
}

int rs_copy_peer(struct rsocket *rs, struct sockaddr *addr, socklen_t *addrlen)
{
	if (rs->type == SOCK_DGRAM)
		return getpeername(rs->udp_sock, addr, addrlen);
	if (!(rs_state(rs) & (RS_CONNECTED | RS_OPENING | RS_DISCONNECTED)))
		return cma_err(ENOTCONN);
	if (rs_state(rs) == RS_HANDED)
		return rs_copy_addr(addr, addrlen, rs_handed_peer(rs));
	if (!rs->cm_id) /* quiesced and detached (quiesce.c) */
		return cma_err(ENOTCONN);
	return rs_copy_addr(addr, addrlen, rdma_get_peer_addr(rs->cm_id));
}

CMA_EXPORT int rgetpeername(int socket, struct sockaddr *addr,
			    socklen_t *addrlen)
{
	struct rsocket *rs = rs_get(socket);

	if (!rs)
		return -1;
	return (int)rs_done(rs, rs_copy_peer(rs, addr, addrlen));
}

CMA_EXPORT int rgetsockname(int socket, struct sockaddr *addr,
			    socklen_t *addrlen)
{
	struct rsocket *rs = rs_get(socket);

	if (!rs)
		return -1;
	if (rs->type == SOCK_DGRAM)
		return (int)rs_done(rs,
				    getsockname(rs->udp_sock, addr, addrlen));
	if (rs_state(rs) == RS_HANDED)
		return (int)rs_done(
			rs, rs_copy_addr(addr, addrlen, rs_handed_local(rs)));
	if (!rs_listen_target(rs)->cm_id) /* quiesced and detached */
		return (int)rs_done(rs, cma_err(ENOTCONN));
	return (int)rs_done(
		rs,
		rs_copy_addr(addr, addrlen,
			     rdma_get_local_addr(rs_listen_target(rs)->cm_id)));
}
