// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * What kind of address a program hands to bind, connect or sendto: the
 * part of the preload's UDP decision (dgram.c) that needs no device.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <string.h>

#include "preload.h"

static bool v4_loopback(const struct in_addr *a)
{
	return (ntohl(a->s_addr) >> 24) == 127;
}

static enum rsp_addr_kind v4_kind(const struct in_addr *a)
{
	if (a->s_addr == htonl(INADDR_ANY))
		return RSP_ADDR_ANY;
	return v4_loopback(a) ? RSP_ADDR_LOOPBACK : RSP_ADDR_OTHER;
}

static enum rsp_addr_kind v6_kind(const struct in6_addr *a)
{
	if (IN6_IS_ADDR_V4MAPPED(a)) {
		struct in_addr v4;

		memcpy(&v4, &a->s6_addr[12], sizeof(v4));
		return v4_kind(&v4);
	}
	if (IN6_IS_ADDR_UNSPECIFIED(a))
		return RSP_ADDR_ANY;
	return IN6_IS_ADDR_LOOPBACK(a) ? RSP_ADDR_LOOPBACK : RSP_ADDR_OTHER;
}

enum rsp_addr_kind rsp_addr_kind(const struct sockaddr *sa, socklen_t len)
{
	if (!sa)
		return RSP_ADDR_BAD;
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
		return v4_kind(&((const struct sockaddr_in *)sa)->sin_addr);
	if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6))
		return v6_kind(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return RSP_ADDR_BAD;
}

bool rsp_is_udp(int domain, int type, int protocol)
{
	type &= ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	return (domain == AF_INET || domain == AF_INET6) &&
	       type == SOCK_DGRAM && (!protocol || protocol == IPPROTO_UDP);
}
