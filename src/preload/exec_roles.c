// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * RDMA_RSOCKET_EXEC_ROLES, the variable through which fork mode tells a
 * new program image which of its connections the image before the exec
 * accepted or connected and never used, and through which the names of
 * the relayed connections it inherits cross (exec_pass.c): its text,
 * written and read by pure functions.
 *
 * An entry is "FD:R:LOCAL:PEER", R "P" (accepted: the passive end),
 * "A" (connected) or "R" (a relayed connection: only its addresses cross
 * the exec), an address the hexadecimal digits of its 4 (IPv4) or
 * 16 (IPv6) bytes in network order, a dot and the decimal port; entries
 * are separated by commas:
 *
 *     5:P:7f000001.8080:7f000001.41234
 *
 * The reader takes nothing on trust: the environment is the invoker's,
 * and a program may hand it on to an image of its own.  Every field is
 * checked (numbers without signs, spaces or leading zeros, in range;
 * lowercase digits; both addresses of one family; a descriptor named
 * once; at most RSP_EXEC_MAX_ROLES entries), and anything else makes the
 * whole value malformed: the caller then applies none of it.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "preload.h"

bool rsp_exec_addr_from(struct rsp_exec_addr *a, const struct sockaddr *sa,
			socklen_t len)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
	const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

	memset(a, 0, sizeof(*a));
	if (sa->sa_family == AF_INET && len >= sizeof(*sin)) {
		memcpy(a->addr, &sin->sin_addr, 4);
		a->port = ntohs(sin->sin_port);
	} else if (sa->sa_family == AF_INET6 && len >= sizeof(*sin6)) {
		memcpy(a->addr, &sin6->sin6_addr, 16);
		a->port = ntohs(sin6->sin6_port);
	} else {
		return false;
	}
	a->family = sa->sa_family;
	return true;
}

bool rsp_exec_addr_is(const struct rsp_exec_addr *a, const struct sockaddr *sa,
		      socklen_t len)
{
	struct rsp_exec_addr b;

	return rsp_exec_addr_from(&b, sa, len) && b.family == a->family &&
	       b.port == a->port && !memcmp(b.addr, a->addr, sizeof(b.addr));
}

socklen_t rsp_exec_addr_to(const struct rsp_exec_addr *a,
			   struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET) {
		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, a->addr, 4);
		sin->sin_port = htons(a->port);
		return sizeof(*sin);
	}
	sin6->sin6_family = AF_INET6;
	memcpy(&sin6->sin6_addr, a->addr, 16);
	sin6->sin6_port = htons(a->port);
	return sizeof(*sin6);
}

static int addr_len(const struct rsp_exec_addr *a)
{
	return a->family == AF_INET ? 4 : a->family == AF_INET6 ? 16 : 0;
}

/* "hex.port" at @out; its length, or -1 without room. */
static int format_addr(char *out, size_t size, const struct rsp_exec_addr *a)
{
	int n = addr_len(a), i, k = 0;

	if (!n || size < (size_t)n * 2 + 1)
		return -1;
	for (i = 0; i < n; i++)
		k += snprintf(out + k, size - k, "%02x", a->addr[i]);
	i = snprintf(out + k, size - k, ".%u", (unsigned int)a->port);
	return i < 0 || (size_t)(k + i) >= size ? -1 : k + i;
}

int rsp_exec_role_format(char *out, size_t size, const struct rsp_exec_role *r)
{
	int n, m, k;

	if (r->fd < 0 || r->fd > 65535 || r->local.family != r->peer.family)
		return -1;
	n = snprintf(out, size, "%d:%c:", r->fd,
		     r->relayed	  ? 'R'
		     : r->passive ? 'P'
				  : 'A');
	if (n < 0 || (size_t)n >= size)
		return -1;
	m = format_addr(out + n, size - n, &r->local);
	if (m < 0 || (size_t)(n + m + 1) >= size)
		return -1;
	out[n + m] = ':';
	k = format_addr(out + n + m + 1, size - n - m - 1, &r->peer);
	return k < 0 ? -1 : n + m + 1 + k;
}

/*
 * A decimal number at *@p up to @max: digits only, no leading zero but
 * "0" itself; *@p moves past it.  -1 when there is none.
 */
static long number(const char **p, long max)
{
	const char *s = *p;
	long v = 0;

	if (*s < '0' || *s > '9' || (*s == '0' && s[1] >= '0' && s[1] <= '9'))
		return -1;
	while (*s >= '0' && *s <= '9') {
		v = v * 10 + (*s++ - '0');
		if (v > max)
			return -1;
	}
	*p = s;
	return v;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* "hex.port" at *@p into @a; *@p moves past it.  false when malformed. */
static bool parse_addr(const char **p, struct rsp_exec_addr *a)
{
	const char *s = *p;
	int n = 0, hi, lo;
	long port;

	memset(a, 0, sizeof(*a));
	while (n < 16 && (hi = hex_digit(s[0])) >= 0 &&
	       (lo = hex_digit(s[1])) >= 0) {
		a->addr[n++] = (uint8_t)(hi << 4 | lo);
		s += 2;
	}
	if ((n != 4 && n != 16) || *s++ != '.')
		return false;
	port = number(&s, 65535);
	if (port < 0)
		return false;
	a->family = n == 4 ? AF_INET : AF_INET6;
	a->port = (uint16_t)port;
	*p = s;
	return true;
}

/* One entry at *@p into @r; *@p moves past it.  false when malformed. */
static bool parse_role(const char **p, struct rsp_exec_role *r)
{
	const char *s = *p;
	long fd = number(&s, 65535);

	if (fd < 0 || *s++ != ':' || (*s != 'P' && *s != 'A' && *s != 'R'))
		return false;
	r->fd = (int)fd;
	r->passive = *s == 'P';
	r->relayed = *s++ == 'R';
	if (*s++ != ':' || !parse_addr(&s, &r->local) || *s++ != ':' ||
	    !parse_addr(&s, &r->peer) || r->local.family != r->peer.family)
		return false;
	*p = s;
	return true;
}

int rsp_exec_roles_parse(const char *s, struct rsp_exec_role *out, int max)
{
	int n = 0, i;

	if (strnlen(s, RSP_EXEC_ROLES_LEN + 1) > RSP_EXEC_ROLES_LEN)
		return -1;
	while (*s) {
		if (n == max || n == RSP_EXEC_MAX_ROLES ||
		    !parse_role(&s, &out[n]))
			return -1;
		for (i = 0; i < n; i++)
			if (out[i].fd == out[n].fd)
				return -1; /* one descriptor, two entries */
		n++;
		if (*s == ',') {
			if (!*++s)
				return -1; /* a trailing comma */
		} else if (*s) {
			return -1;
		}
	}
	return n;
}
