// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Datagram rsockets: the socket's life cycle (see dgram.h for the design).
 *
 * The UDP socket carries the rsocket's address: rbind and rconnect are
 * bind(2) and connect(2) on it, rgetsockname/rgetpeername read it back, and
 * its port is the one every datagram header names.  The UD QPs and their
 * buffers only appear once the socket first talks to a peer.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "dgram.h"
#include "util/fd_high.h"

/* How long rclose waits for datagrams still being sent. */
#define DS_CLOSE_DRAIN_MS 200

int ds_init(struct rsocket *rs, int domain)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};

	/* Non-blocking: only ever read when poll or epoll says so. */
	rs->udp_sock =
		socket(domain, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (rs->udp_sock < 0)
		return -1;
	/* Internal: above the numbers programs reuse (fd_high.h). */
	rs->epfd = cma_fd_move_high(epoll_create1(EPOLL_CLOEXEC), fcntl, close);
	if (rs->epfd < 0)
		return -1;
	/*
	 * Sleepers poll the set beside the socket's wake fd (made only while
	 * one sleeps), so the set holds the socket's own fds only.
	 */
	return epoll_ctl(rs->epfd, EPOLL_CTL_ADD, rs->udp_sock, &ev);
}

/*
 * Destroying a QP discards what it has not sent yet; a datagram handed to
 * rsend before rclose should still leave (the last reply of a server, say).
 */
static void ds_drain_sends(struct rsocket *rs)
{
	uint64_t end = rs_now_ms() + DS_CLOSE_DRAIN_MS;

	if (!rs->dsbuf)
		return;
	while (rs->dsfree_cnt < rs->sq_size && rs_now_ms() < end) {
		ds_poll_cqs(rs);
		if (rs->dsfree_cnt < rs->sq_size)
			usleep(100);
	}
}

static void ds_free_queue(struct rsocket *rs)
{
	uint32_t i;

	if (!rs->dmsg)
		return;
	for (i = 0; i < rs->dmsg_cnt; i++)
		free(rs->dmsg[(rs->dmsg_head + i) % rs->dmsg_max].copy);
	free(rs->dmsg);
	rs->dmsg = NULL;
}

void ds_free(struct rsocket *rs)
{
	pthread_mutex_lock(&rs->lock);
	ds_drain_sends(rs);
	ds_dest_destroy_all(rs);
	ds_qp_destroy_all(rs);
	ds_free_queue(rs);
	free(rs->dsbuf);
	free(rs->dsfree);
	free(rs->dsslot_dest);
	rs->dsbuf = NULL;
	rs->dsfree = NULL;
	rs->dsslot_dest = NULL;
	pthread_mutex_unlock(&rs->lock);
	if (rs->udp_sock >= 0)
		close(rs->udp_sock);
	if (rs->epfd >= 0)
		close(rs->epfd);
	if (rs->ds_bell >= 0)
		close(rs->ds_bell);
	rs->udp_sock = -1;
	rs->epfd = -1;
	rs->ds_bell = -1;
}

int ds_local_addr(struct rsocket *rs, union rs_sockaddr *addr)
{
	socklen_t len = sizeof(*addr);

	memset(addr, 0, sizeof(*addr));
	return getsockname(rs->udp_sock, &addr->sa, &len);
}

static uint16_t ds_port_of(const union rs_sockaddr *addr)
{
	return addr->sa.sa_family == AF_INET ? addr->sin.sin_port
					     : addr->sin6.sin6_port;
}

int ds_autobind(struct rsocket *rs)
{
	union rs_sockaddr addr;
	socklen_t len;

	if (rs->ds_bound)
		return 0;
	if (ds_local_addr(rs, &addr))
		return -1;
	if (!ds_port_of(&addr)) {
		/* Like UDP: an ephemeral port on every address. */
		memset(&addr, 0, sizeof(addr));
		addr.sa.sa_family = (sa_family_t)rs->domain;
		len = rs->domain == AF_INET ? sizeof(addr.sin)
					    : sizeof(addr.sin6);
		if (bind(rs->udp_sock, &addr.sa, len))
			return -1;
	}
	rs->ds_bound = true;
	return 0;
}

int ds_bind(struct rsocket *rs, const struct sockaddr *addr, socklen_t len)
{
	int ret;

	pthread_mutex_lock(&rs->lock);
	if (rs->qp_list) {
		/* The QPs already speak for the old address. */
		pthread_mutex_unlock(&rs->lock);
		return cma_err(EINVAL);
	}
	ret = bind(rs->udp_sock, addr, len);
	if (!ret)
		rs->ds_bound = true;
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

static int ds_disconnect(struct rsocket *rs)
{
	struct sockaddr unspec = {.sa_family = AF_UNSPEC};

	rs->conn_dest = NULL;
	return connect(rs->udp_sock, &unspec, sizeof(unspec));
}

int ds_connect(struct rsocket *rs, const struct sockaddr *addr, socklen_t len)
{
	int ret;

	if (!addr)
		return cma_err(EFAULT);
	pthread_mutex_lock(&rs->lock);
	if (len >= sizeof(sa_family_t) && addr->sa_family == AF_UNSPEC) {
		ret = ds_disconnect(rs);
		goto out;
	}
	/*
	 * connect(2) chooses the local address a wildcard-bound socket uses
	 * towards the peer, and filters UDP to that peer, as for UDP.
	 */
	ret = ds_autobind(rs);
	if (!ret)
		ret = connect(rs->udp_sock, addr, len);
	if (!ret)
		ret = ds_dest_get(rs, addr, len, &rs->conn_dest);
out:
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

int ds_shutdown(struct rsocket *rs, int how)
{
	pthread_mutex_lock(&rs->lock);
	if (how == SHUT_RD || how == SHUT_RDWR)
		rs->ds_shut_rd = true;
	if (how == SHUT_WR || how == SHUT_RDWR)
		rs->ds_shut_wr = true;
	/* A call blocked in another thread now returns (0, or EPIPE). */
	ds_changed(rs);
	pthread_mutex_unlock(&rs->lock);
	return 0;
}
