/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * For unit tests of the ACM resolver (include check.h first): endpoints
 * written as a name or an IP address, and a GID checked against its
 * written form.
 */
#ifndef TESTS_UNIT_ACM_EP_H
#define TESTS_UNIT_ACM_EP_H

#include <arpa/inet.h>
#include <string.h>

#include "acm/acm.h"

static inline struct cma_acm_ep ep_name(const char *name)
{
	struct cma_acm_ep ep;

	memset(&ep, 0, sizeof(ep));
	ep.type = CMA_ACM_EP_NAME;
	strcpy(ep.name, name);
	return ep;
}

static inline struct cma_acm_ep ep_ip(const char *ip)
{
	struct cma_acm_ep ep;

	memset(&ep, 0, sizeof(ep));
	if (inet_pton(AF_INET, ip, ep.ip4) == 1) {
		ep.type = CMA_ACM_EP_IP4;
	} else {
		ck_assert_int_eq(inet_pton(AF_INET6, ip, ep.ip6), 1);
		ep.type = CMA_ACM_EP_IP6;
	}
	return ep;
}

static inline void assert_gid(const union ibv_gid *gid, const char *want)
{
	uint8_t raw[16];

	ck_assert_int_eq(inet_pton(AF_INET6, want, raw), 1);
	ck_assert_mem_eq(gid->raw, raw, 16);
}

#endif
