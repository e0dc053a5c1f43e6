// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * UDP sockets: which datagrams go over RDMA.
 *
 * A datagram rsocket binds and connects a kernel UDP socket of its own, so
 * rbind and rconnect succeed for any address, RDMA or not; the TCP path's
 * rule (fall back when rbind or rconnect fails) cannot tell.  So the first
 * address a UDP socket names decides, before the rsocket uses it:
 *   - loopback (local or destination): the kernel socket, as no RDMA
 *     device carries loopback traffic between two processes;
 *   - a local address (bind): RDMA when a device owns it;
 *   - a destination (connect, sendto, sendmsg): RDMA when the kernel's
 *     route to it leaves from an address a device owns;
 *   - the wildcard (bind to INADDR_ANY) decides nothing yet;
 *   - a port outside RDMA_RSOCKET_PORTS: the kernel socket.
 * Once committed to RDMA the socket stays: later destinations are the
 * rsocket's, as one descriptor cannot hold both.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "preload.h"

/* Whether an RDMA device owns local address @sa (its port is ignored). */
static bool local_is_rdma(const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr_storage a;
	struct rdma_cm_id *id;
	bool rdma;

	if (len > sizeof(a) || rsp_addr_kind(sa, len) != RSP_ADDR_OTHER)
		return false;
	memcpy(&a, sa, len);
	if (a.ss_family == AF_INET)
		((struct sockaddr_in *)&a)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&a)->sin6_port = 0;
	/* No event channel: a synchronous id, bound and gone again. */
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP))
		return false;
	rdma = !rdma_bind_addr(id, (struct sockaddr *)&a) && id->verbs;
	rdma_destroy_id(id);
	return rdma;
}

/* Whether the kernel reaches @sa from an address an RDMA device owns. */
static bool dest_is_rdma(const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr_storage src;
	socklen_t srclen = sizeof(src);
	bool rdma = false;
	int s;

	/* connect(2) on a scratch UDP socket asks the routing table */
	s = rsp_real.socket(sa->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return false;
	if (!rsp_real.connect(s, sa, len) &&
	    !rsp_real.getsockname(s, (struct sockaddr *)&src, &srclen))
		rdma = local_is_rdma((struct sockaddr *)&src, srclen);
	rsp_real.close(s);
	return rdma;
}

/* Why @sa is not for RDMA, or NULL when it is (or decides nothing). */
static const char *not_rdma_why(const struct sockaddr *sa, socklen_t len,
				bool local)
{
	switch (rsp_addr_kind(sa, len)) {
	case RSP_ADDR_BAD:
		return NULL; /* the rsocket gives the error */
	case RSP_ADDR_ANY:
		/* bind: later; a destination: this host, as loopback */
		return local ? NULL : "a wildcard destination";
	case RSP_ADDR_LOOPBACK:
		return "a loopback address";
	case RSP_ADDR_OTHER:
		break;
	}
	if (!rsp_port_wanted(sa, len))
		return "not an RDMA port";
	if (local)
		return local_is_rdma(sa, len) ? NULL : "no RDMA device owns it";
	return dest_is_rdma(sa, len) ? NULL : "not reached over RDMA";
}

int rsp_dgram_choose(int fd, struct rsp_file *f, const struct sockaddr *sa,
		     socklen_t len, bool local)
{
	const char *why;

	if (f->committed || !sa)
		return 1;
	why = not_rdma_why(sa, len, local);
	if (why)
		return rsp_fall_back(fd, f, why) ? -1 : 0;
	if (rsp_addr_kind(sa, len) == RSP_ADDR_OTHER) {
		f->committed = true;
		rsp_log("fd %d: UDP over rsocket %d", fd, f->rs);
	}
	return 1;
}
