// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// FUZZ_SOURCES: @library
/*
 * rdma_getaddrinfo() with arbitrary node and service strings and hints
 * (flags, family, QP type, port space, source and destination addresses
 * with or without lengths, route and connect data).
 *
 * RAI_NUMERICHOST is always set when a node is given, so no name ever goes
 * to DNS: the fuzzer exercises the library's own handling of what
 * getaddrinfo(3) returns and of the hints, not the host's resolver.
 * Services may be names (looked up in /etc/services, a local file).
 *
 * Input: 5 header bytes (flags, family, QP type, port space, which parts
 * are present), then each present part as a length byte and that many
 * bytes: source address, destination address, route, connect data, node,
 * service.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"

struct input {
	const uint8_t *p;
	size_t left;
};

static const uint8_t *take(struct input *in, size_t n)
{
	const uint8_t *p = in->p;

	if (in->left < n)
		return NULL;
	in->p += n;
	in->left -= n;
	return p;
}

/* A length-prefixed part; NULL (and *len 0) when the input ran out. */
static const uint8_t *take_part(struct input *in, size_t *len)
{
	const uint8_t *n = take(in, 1), *p;

	*len = 0;
	if (!n)
		return NULL;
	p = take(in, *n);
	if (p)
		*len = *n;
	return p;
}

static char *take_string(struct input *in)
{
	size_t len;
	const uint8_t *p = take_part(in, &len);
	char *s;

	if (!p)
		return NULL;
	s = malloc(len + 1);
	memcpy(s, p, len);
	s[len] = 0;
	return s;
}

/*
 * An address part: a buffer of exactly the claimed length, or, when the
 * length is left to the library (bit @zero_len), one big enough for any
 * family, as the API requires of such callers.
 */
static struct sockaddr *take_addr(struct input *in, bool zero_len,
				  socklen_t *len)
{
	size_t n;
	const uint8_t *p = take_part(in, &n);
	size_t size = zero_len ? sizeof(struct sockaddr_storage) : n;
	struct sockaddr *sa;

	*len = 0;
	if (!p || !size)
		return NULL;
	sa = calloc(1, size);
	memcpy(sa, p, n < size ? n : size);
	*len = zero_len ? 0 : (socklen_t)n;
	return sa;
}

static void *take_blob(struct input *in, size_t *len)
{
	const uint8_t *p = take_part(in, len);
	void *copy;

	if (!p || !*len)
		return NULL;
	copy = malloc(*len);
	memcpy(copy, p, *len);
	return copy;
}

static const int families[] = {AF_UNSPEC, AF_INET, AF_INET6, AF_IB};
static const int port_spaces[] = {0, RDMA_PS_TCP, RDMA_PS_UDP, RDMA_PS_IB,
				  RDMA_PS_IPOIB};

/* Every entry returned must be usable: addresses where lengths say. */
static void check_result(const struct rdma_addrinfo *res)
{
	for (; res; res = res->ai_next) {
		if (!res->ai_src_addr != !res->ai_src_len ||
		    !res->ai_dst_addr != !res->ai_dst_len ||
		    res->ai_src_len > sizeof(struct sockaddr_storage) ||
		    res->ai_dst_len > sizeof(struct sockaddr_storage))
			abort();
		/* Touch every byte the lengths promise. */
		if (res->ai_src_len)
			memchr(res->ai_src_addr, 0xab, res->ai_src_len);
		if (res->ai_dst_len)
			memchr(res->ai_dst_addr, 0xab, res->ai_dst_len);
		if (res->ai_route_len)
			memchr(res->ai_route, 0xab, res->ai_route_len);
		if (res->ai_connect_len)
			memchr(res->ai_connect, 0xab, res->ai_connect_len);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = {data, size};
	struct rdma_addrinfo hints, *res = NULL, *copy;
	const uint8_t *h = take(&in, 5);
	char *node = NULL, *service = NULL;
	bool use_hints;
	size_t len;
	int ret;

	if (!h)
		return 0;
	memset(&hints, 0, sizeof(hints));
	use_hints = !(h[4] & 0x80);
	hints.ai_flags = (h[0] & 0x7f) | RAI_NUMERICHOST;
	hints.ai_family =
		(h[1] & 0x80) ? (int)(h[1] & 0x7f) : families[h[1] % 4];
	hints.ai_qp_type = h[2];
	hints.ai_port_space = (h[3] & 0x80) ? (int)(h[3] & 0x7f) << 8 | h[3]
					    : port_spaces[h[3] % 5];
	if (h[4] & 0x01)
		hints.ai_src_addr =
			take_addr(&in, h[4] & 0x40, &hints.ai_src_len);
	if (h[4] & 0x02)
		hints.ai_dst_addr =
			take_addr(&in, h[4] & 0x40, &hints.ai_dst_len);
	if (h[4] & 0x04) {
		hints.ai_route = take_blob(&in, &len);
		hints.ai_route_len = len;
	}
	if (h[4] & 0x08) {
		hints.ai_connect = take_blob(&in, &len);
		hints.ai_connect_len = len;
	}
	/* Without hints nothing forces a numeric node: pass none then. */
	if ((h[4] & 0x10) && use_hints)
		node = take_string(&in);
	if (h[4] & 0x20)
		service = take_string(&in);

	errno = 0;
	ret = rdma_getaddrinfo(node, service, use_hints ? &hints : NULL, &res);
	if (ret == 0) {
		if (!res)
			abort();
		check_result(res);
		copy = cma_ai_dup_list(res);
		if (copy)
			check_result(copy);
		rdma_freeaddrinfo(copy);
		rdma_freeaddrinfo(res);
	} else if (ret != -1 || !errno) {
		fprintf(stderr, "rdma_getaddrinfo: ret %d errno %d\n", ret,
			errno);
		abort();
	}
	free(node);
	free(service);
	free(hints.ai_src_addr);
	free(hints.ai_dst_addr);
	free(hints.ai_route);
	free(hints.ai_connect);
	return 0;
}
