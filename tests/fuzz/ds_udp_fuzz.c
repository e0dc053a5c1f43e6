// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// FUZZ_SOURCES: src/rsocket/dgram_udp.c src/rsocket/dgram_dest.c src/rsocket/wire.c
/*
 * The datagram rsocket's UDP resolver acting on what peers send it:
 * ds_udp_drain reads each message from the UDP socket and ds_udp_handle
 * parses it, finds or creates the sender's destination (ds_dest_get, at
 * most rs_def.max_dgram_dest of them: the oldest is evicted), answers a
 * data message with our QP number, takes the sender's QP number if none
 * is known (another one puts the destination in doubt) and queues the
 * payload.  A received datagram resolves nothing; after each
 * drain the harness resolves every unresolved destination whose QP number
 * is known (ds_dest_resolve, pinned), as the socket's next send to it
 * would.
 *
 * The UDP socket is the harness's (recvfrom and sendmsg on its number are
 * interposed), as are the rdma_cm calls the resolution makes: whether the
 * address and route resolve, and the path they yield, are the fuzzer's.
 * The rest of the datagram rsocket (local address, QPs, the receive
 * queue) is stubbed to its interface.  Whatever arrives, every queued
 * payload lies inside what was received, every answer goes to a known
 * destination of the socket's family, and destroying the socket frees
 * every destination (LeakSanitizer).
 *
 * Input: a flags byte (bit 0: an AF_INET6 socket; bit 1: bound to the
 * wildcard address; bit 2: resolution fails; bit 3: shut for reading;
 * bits 4-7: the destination bound less one, 1..16), then messages: a
 * family byte (AF_INET6 if bit 0, AF_UNIX if bit 1; bit 2: no message,
 * the drain ends here), the sender's port (2 bytes) and address (4 or
 * 16), a fromlen byte, the length (2 bytes, little-endian) and the
 * message.  Each resolution (after a drain, newest destination first)
 * reads the route's answer: a byte (bit 0: a path record, the rest: the
 * path count) and 24 bytes of the record.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "rsocket/dgram.h"
#include "fuzz_verbs.h"
#include "cm/test_hooks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_UDP_FD 987 /* never a real descriptor of this process */

static struct {
	const uint8_t *p;
	size_t left;
	uint8_t flags;
	struct ibv_context ctx;
	struct ibv_pd pd;
	struct ibv_qp qp;
	struct rdma_cm_id qp_id, res_id;
	struct ibv_sa_path_rec path;
	struct ds_qp dqp;
	unsigned int queued, sent;
	unsigned long sink;
} h;

static bool take(void *out, size_t n)
{
	if (h.left < n)
		return false;
	memcpy(out, h.p, n);
	h.p += n;
	h.left -= n;
	return true;
}

/* --- the UDP socket ------------------------------------------------------ */

ssize_t recvfrom(int fd, void *buf, size_t len, int flags,
		 struct sockaddr *from, socklen_t *fromlen)
{
	union rs_sockaddr a;
	uint8_t fam = 0, flen = 0, lb[2] = {0, 0};
	size_t n, copy;

	if (fd != FUZZ_UDP_FD || !(flags & MSG_DONTWAIT))
		abort(); /* the library reads only its UDP socket, non-blocking */
	memset(&a, 0, sizeof(a));
	if (!take(&fam, 1) || (fam & 4)) {
		errno = EAGAIN; /* nothing more until the next drain */
		return -1;
	}
	if (fam & 1) {
		a.sin6.sin6_family = AF_INET6;
		take(&a.sin6.sin6_port, 2);
		take(&a.sin6.sin6_addr, 16);
	} else {
		a.sin.sin_family = fam & 2 ? AF_UNIX : AF_INET;
		take(&a.sin.sin_port, 2);
		take(&a.sin.sin_addr, 4);
	}
	take(&flen, 1);
	take(lb, 2);
	n = (size_t)(lb[0] | lb[1] << 8);
	if (n > h.left)
		n = h.left;
	copy = n < len ? n : len;
	memcpy(buf, h.p, copy);
	h.p += n;
	h.left -= n;
	/* What the kernel reports: the sender's address, truncated to fit */
	if (*fromlen > sizeof(a))
		*fromlen = sizeof(a);
	memcpy(from, &a, *fromlen);
	*fromlen = flen % (sizeof(a) + 1);
	return (flags & MSG_TRUNC) ? (ssize_t)n : (ssize_t)copy;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	const struct sockaddr *to = msg->msg_name;
	size_t i, j, total = 0;

	if (fd != FUZZ_UDP_FD || !to ||
	    to->sa_family != (h.flags & 1 ? AF_INET6 : AF_INET) ||
	    msg->msg_namelen < sizeof(struct sockaddr_in))
		abort();
	for (i = 0; i < msg->msg_iovlen; i++) {
		for (j = 0; j < msg->msg_iov[i].iov_len; j++)
			h.sink +=
				((const uint8_t *)msg->msg_iov[i].iov_base)[j];
		total += msg->msg_iov[i].iov_len;
	}
	h.sent++;
	return (ssize_t)total;
}

/* --- the rest of the datagram rsocket, to its interface ------------------ */

/* The socket table's defaults: only the destination bound is read here. */
struct rs_defaults rs_def;

/* Only a blocking send that finds the UDP buffer full sleeps: never here. */
int rs_sleep_fd_or_close(struct rsocket *rs, int fd, short events, int timeout)
{
	abort();
}

int ds_autobind(struct rsocket *rs)
{
	return 0;
}

int ds_local_addr(struct rsocket *rs, union rs_sockaddr *addr)
{
	memset(addr, 0, sizeof(*addr));
	if (rs->domain == AF_INET6) {
		addr->sin6.sin6_family = AF_INET6;
		addr->sin6.sin6_port = htons(7471);
		if (!(h.flags & 2))
			addr->sin6.sin6_addr = in6addr_loopback;
	} else {
		addr->sin.sin_family = AF_INET;
		addr->sin.sin_port = htons(7471);
		if (!(h.flags & 2))
			addr->sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	}
	return 0;
}

int ds_qp_get(struct rsocket *rs, const union rs_sockaddr *src,
	      struct ds_qp **qp)
{
	if (src->sa.sa_family != rs->domain)
		abort();
	h.dqp.src = *src;
	*qp = &h.dqp;
	return 0;
}

bool ds_queue(struct rsocket *rs, const struct ds_rmsg *msg)
{
	uint32_t i;

	if (msg->qp || msg->length > DS_MSG_SIZE)
		abort();
	for (i = 0; i < msg->length; i++)
		h.sink += msg->copy[i];
	if (msg->src.sa.sa_family != rs->domain)
		abort();
	/* A full queue refuses (the library frees the copy); else we own it */
	if (h.queued++ % 3 == 2)
		return false;
	free(msg->copy);
	return true;
}

/* --- the rdma_cm and verbs calls of the resolution ----------------------- */

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
		   void *context, enum rdma_port_space ps)
{
	memset(&h.res_id, 0, sizeof(h.res_id));
	h.res_id.verbs = &h.ctx;
	h.res_id.port_num = 1;
	*id = &h.res_id;
	return 0;
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src,
		      struct sockaddr *dst, int timeout_ms)
{
	if (h.flags & 4) {
		errno = EHOSTUNREACH;
		return -1;
	}
	return 0;
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	uint8_t n = 0;

	memset(&h.path, 0, sizeof(h.path));
	take(&n, 1);
	take(&h.path, sizeof(h.path) < 24 ? sizeof(h.path) : 24);
	id->route.path_rec = n & 1 ? &h.path : NULL;
	id->route.num_paths = n >> 1;
	return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	if (id != &h.res_id)
		abort();
	return 0;
}

#undef ibv_query_port
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr)
{
	struct ibv_port_attr *attr = (struct ibv_port_attr *)port_attr;

	attr->gid_tbl_len = 4;
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
		      uint32_t gid_index, struct ibv_gid_entry *entry,
		      uint32_t flags, size_t entry_size)
{
	memset(entry, 0, entry_size);
	entry->gid_index = gid_index;
	entry->gid_type =
		gid_index & 1 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
	return 0;
}

/* What the socket's sends would do: resolve each peer whose QP is known. */
static void resolve_known(struct rsocket *rs)
{
	struct ds_dest *d, *next;
	uint32_t doubts = 0;

	for (d = cma_list_first(&rs->dest_lru, struct ds_dest, lru); d;
	     d = cma_list_next(d, lru)) {
		if (d->qpn_doubt && !d->qpn_known)
			abort(); /* a doubt about no number */
		doubts += d->qpn_doubt;
	}
	if (doubts != rs->dest_doubts)
		abort(); /* the count the UD receive path trusts */
	for (d = cma_list_first(&rs->dest_lru, struct ds_dest, lru); d;
	     d = next) {
		next = cma_list_next(d, lru); /* resolving never evicts */
		if (d->ah)
			continue;
		ds_dest_pin(d); /* as the sender does */
		(void)ds_dest_resolve(rs, d);
		ds_dest_unpin(d);
		if (d->pins || d->resolving)
			abort(); /* a resolution left its destination pinned */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rsocket rs;
	int i;

	if (!size)
		return 0;
	memset(&h, 0, sizeof(h));
	h.p = data + 1;
	h.left = size - 1;
	h.flags = data[0];
	h.pd.context = &h.ctx;
	h.qp.qp_num = 0x1234;
	h.qp_id.verbs = &h.ctx;
	h.qp_id.pd = &h.pd;
	h.qp_id.qp = &h.qp;
	h.dqp.cm_id = &h.qp_id;
	h.dqp.ethernet = true;

	rs_def.max_dgram_dest = 1u + (h.flags >> 4);
	memset(&rs, 0, sizeof(rs));
	pthread_mutex_init(&rs.lock, NULL);
	pthread_mutex_lock(&rs.lock); /* the resolution drops and retakes it */
	rs.type = SOCK_DGRAM;
	rs.domain = h.flags & 1 ? AF_INET6 : AF_INET;
	rs.udp_sock = FUZZ_UDP_FD;
	rs.ds_shut_rd = h.flags & 8;
	/* A few drains, as the socket's receives and rpoll would call it */
	for (i = 0; i < 8 && h.left; i++) {
		ds_udp_drain(&rs);
		if (ds_dest_count(&rs) > rs_def.max_dgram_dest)
			abort(); /* the bound on a peer's destinations */
		resolve_known(&rs);
	}
	ds_dest_destroy_all(&rs);
	pthread_mutex_unlock(&rs.lock);
	pthread_mutex_destroy(&rs.lock);
	if (fuzz_ahs)
		abort(); /* an address handle outlived its destination */
	return 0;
}
