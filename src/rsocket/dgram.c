// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Datagram rsockets (not implemented yet: rsocket(SOCK_DGRAM) fails with
 * ENOTSUP).
 */
#include <unistd.h>

#include "rs.h"

int ds_init(struct rsocket *rs, int domain)
{
	(void)rs;
	(void)domain;
	return cma_err(ENOTSUP);
}

void ds_free(struct rsocket *rs)
{
	if (rs->udp_sock >= 0)
		close(rs->udp_sock);
	if (rs->epfd >= 0)
		close(rs->epfd);
}

int ds_bind(struct rsocket *rs, const struct sockaddr *addr, socklen_t len)
{
	(void)rs;
	(void)addr;
	(void)len;
	return cma_err(ENOTSUP);
}

int ds_connect(struct rsocket *rs, const struct sockaddr *addr, socklen_t len)
{
	(void)rs;
	(void)addr;
	(void)len;
	return cma_err(ENOTSUP);
}

ssize_t ds_recvfrom(struct rsocket *rs, void *buf, size_t len, int flags,
		    struct sockaddr *src, socklen_t *srclen)
{
	(void)rs;
	(void)buf;
	(void)len;
	(void)flags;
	(void)src;
	(void)srclen;
	return cma_err(ENOTSUP);
}

ssize_t ds_sendto(struct rsocket *rs, const void *buf, size_t len, int flags,
		  const struct sockaddr *dst, socklen_t dstlen)
{
	(void)rs;
	(void)buf;
	(void)len;
	(void)flags;
	(void)dst;
	(void)dstlen;
	return cma_err(ENOTSUP);
}

void ds_shutdown(struct rsocket *rs)
{
	(void)rs;
}

short ds_poll_events(struct rsocket *rs, short events)
{
	(void)rs;
	(void)events;
	return 0;
}

int ds_wait_fd(struct rsocket *rs)
{
	(void)rs;
	return -1;
}

void ds_consume_events(struct rsocket *rs)
{
	(void)rs;
}
