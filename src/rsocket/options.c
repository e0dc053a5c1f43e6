// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rsetsockopt, rgetsockopt and rfcntl.
 *
 * Socket-level options that have an RDMA meaning change the rsocket (buffer
 * sizes, address reuse, IPv6-only); TCP options that a reliable connection
 * makes moot are accepted and remembered so that programs written for TCP
 * run unchanged.  Datagram sockets pass non-RDMA options to their UDP socket.
 * The SOL_RDMA options size the queues and buffers and so only apply before
 * the connection is made.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "rs.h"

/* An int-sized option value: -1/EFAULT or EINVAL if there is none. */
static int rs_int_opt(const void *optval, socklen_t optlen, int *val)
{
	if (!optval)
		return cma_err(EFAULT);
	if (optlen < sizeof(int))
		return cma_err(EINVAL);
	memcpy(val, optval, sizeof(int));
	return 0;
}

static void rs_set_flag(uint64_t *opts, int optname, bool on)
{
	if (optname < 0 || optname >= 64)
		return;
	if (on)
		*opts |= 1ULL << optname;
	else
		*opts &= ~(1ULL << optname);
}

static bool rs_flag(uint64_t opts, int optname)
{
	return optname >= 0 && optname < 64 && (opts & (1ULL << optname));
}

static bool rs_buffers_exist(const struct rsocket *rs)
{
	return rs->type == SOCK_STREAM ? rs->rbuf != NULL : rs->qp_list != NULL;
}

static unsigned int rs_keepalive_default(void)
{
	unsigned int t = 7200;
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_keepalive_time", "re");

	if (f) {
		if (fscanf(f, "%u", &t) != 1)
			t = 7200;
		fclose(f);
	}
	return t;
}

static int rs_set_sol_socket(struct rsocket *rs, int optname, int val,
			     const void *optval, socklen_t optlen)
{
	switch (optname) {
	case SO_REUSEADDR:
		if (rs->type == SOCK_STREAM &&
		    rdma_set_option(rs->cm_id, RDMA_OPTION_ID,
				    RDMA_OPTION_ID_REUSEADDR, &val,
				    sizeof(val)) &&
		    errno != ENOSYS && rs_state(rs) == RS_INIT)
			return -1;
		break;
	case SO_RCVBUF:
		if (val <= 0)
			return cma_err(EINVAL);
		if (!rs_buffers_exist(rs))
			rs->rbuf_size = (uint32_t)val << 1;
		return 0;
	case SO_SNDBUF:
		if (val <= 0)
			return cma_err(EINVAL);
		if (!rs_buffers_exist(rs))
			rs->sbuf_size = (uint32_t)val << 1;
		if (rs->sbuf_size < RS_SNDLOWAT)
			rs->sbuf_size = RS_SNDLOWAT << 1;
		return 0;
	case SO_LINGER:
		if (optlen < sizeof(struct linger))
			return cma_err(EINVAL);
		/* Stored inverted: lingering is the default. */
		val = !((const struct linger *)optval)->l_onoff;
		break;
	case SO_KEEPALIVE:
		if (val && !rs->keepalive_time)
			rs->keepalive_time = rs_keepalive_default();
		break;
	case SO_OOBINLINE:
		break;
	default:
		return cma_err(ENOTSUP);
	}
	rs_set_flag(&rs->so_opts, optname, val);
	return 0;
}

static int rs_set_tcp(struct rsocket *rs, int optname, int val)
{
	switch (optname) {
	case TCP_KEEPIDLE:
		if (val <= 0)
			return cma_err(EINVAL);
		rs->keepalive_time = (unsigned int)val;
		return 0;
	case TCP_KEEPCNT:
	case TCP_KEEPINTVL:
	case TCP_MAXSEG:
		return 0; /* a reliable connection retries by itself */
	case TCP_NODELAY:
		/* Every send is posted at once: nothing is ever delayed. */
		rs_set_flag(&rs->tcp_opts, optname, val);
		return 0;
	default:
		return cma_err(ENOTSUP);
	}
}

static int rs_set_rdma(struct rsocket *rs, int optname, const void *optval,
		       socklen_t optlen)
{
	int val = 0;

	if (rs->type == SOCK_STREAM ? rs_state(rs) >= RS_OPENING
				    : rs_buffers_exist(rs))
		return cma_err(EINVAL);
	if (optname != RDMA_ROUTE && rs_int_opt(optval, optlen, &val))
		return -1;
	if (optname != RDMA_ROUTE && val < 0)
		return cma_err(EINVAL);
	switch (optname) {
	case RDMA_SQSIZE:
		rs->sq_size = val > RS_QP_MAX_SIZE ? RS_QP_MAX_SIZE : val;
		return 0;
	case RDMA_RQSIZE:
		rs->rq_size = val > RS_QP_MAX_SIZE ? RS_QP_MAX_SIZE : val;
		return 0;
	case RDMA_INLINE:
		rs->sq_inline = val > RS_QP_MAX_SIZE ? RS_QP_MAX_SIZE : val;
		return 0;
	case RDMA_IOMAPSIZE:
		if (rs->type != SOCK_STREAM)
			return cma_err(ENOTSUP);
		rs->target_iomap_size = (uint16_t)rs_iomap_size_from_wire(
			rs_iomap_size_to_wire((unsigned int)val));
		return 0;
	case RDMA_ROUTE:
		/* Datagram peers are resolved one by one, never given. */
		if (rs->type != SOCK_STREAM)
			return cma_err(ENOTSUP);
		if (!optval)
			return cma_err(EFAULT);
		if (!optlen || optlen % sizeof(struct ibv_path_data))
			return cma_err(EINVAL);
		free(rs->route);
		rs->route = malloc(optlen);
		if (!rs->route)
			return cma_err(ENOMEM);
		memcpy(rs->route, optval, optlen);
		rs->route_len = optlen;
		return 0;
	default:
		return cma_err(ENOTSUP);
	}
}

static int rs_rsetsockopt(struct rsocket *rs, int level, int optname,
			  const void *optval, socklen_t optlen)
{
	int val = 0;

	if (level == SOL_RDMA)
		return rs_set_rdma(rs, optname, optval, optlen);
	if (rs->type == SOCK_DGRAM) {
		if (setsockopt(rs->udp_sock, level, optname, optval, optlen))
			return -1;
		if (level != SOL_SOCKET ||
		    (optname != SO_RCVBUF && optname != SO_SNDBUF))
			return 0;
	}
	if (level == SOL_SOCKET && optname == SO_LINGER) {
		if (!optval)
			return cma_err(EFAULT);
	} else if (rs_int_opt(optval, optlen, &val)) {
		return -1;
	}
	switch (level) {
	case SOL_SOCKET:
		return rs_set_sol_socket(rs, optname, val, optval, optlen);
	case IPPROTO_TCP:
		return rs_set_tcp(rs, optname, val);
	case IPPROTO_IPV6:
		if (optname != IPV6_V6ONLY)
			return cma_err(ENOTSUP);
		if (rdma_set_option(rs->cm_id, RDMA_OPTION_ID,
				    RDMA_OPTION_ID_AFONLY, &val, sizeof(val)))
			return -1;
		rs_set_flag(&rs->ipv6_opts, optname, val);
		return 0;
	default:
		return cma_err(ENOTSUP);
	}
}

CMA_EXPORT int rsetsockopt(int socket, int level, int optname,
			   const void *optval, socklen_t optlen)
{
	struct rsocket *rs = rs_get(socket);
	int ret;
	int err;

	if (!rs)
		return -1;
	ret = rs_rsetsockopt(rs, level, optname, optval, optlen);
	err = errno;
	rs_put(rs);
	errno = err;
	return ret;
}

/* Store an int result: -1/EFAULT or EINVAL if the caller has no room. */
static int rs_put_int(void *optval, socklen_t *optlen, int val)
{
	if (!optval || !optlen)
		return cma_err(EFAULT);
	if (*optlen < sizeof(int))
		return cma_err(EINVAL);
	memcpy(optval, &val, sizeof(val));
	*optlen = sizeof(int);
	return 0;
}

static int rs_get_route(struct rsocket *rs, void *optval, socklen_t *optlen)
{
	struct ibv_path_data pd;
	socklen_t len = 0;
	int i;

	if (!optval || !optlen)
		return cma_err(EFAULT);
	if (rs->route) {
		if (*optlen < rs->route_len)
			return cma_err(EINVAL);
		memcpy(optval, rs->route, rs->route_len);
		*optlen = (socklen_t)rs->route_len;
		return 0;
	}
	if (rs->type != SOCK_STREAM || *optlen < sizeof(pd))
		return cma_err(EINVAL);
	for (i = 0;
	     i < rs->cm_id->route.num_paths && len + sizeof(pd) <= *optlen;
	     i++) {
		struct ibv_sa_path_rec *rec = &rs->cm_id->route.path_rec[i];
		uint32_t fl = ntohl(rec->flow_label) << 8;

		memset(&pd, 0, sizeof(pd));
		pd.path.dgid = rec->dgid;
		pd.path.sgid = rec->sgid;
		pd.path.dlid = rec->dlid;
		pd.path.slid = rec->slid;
		pd.path.flowlabel_hoplimit = htonl(fl) | rec->hop_limit;
		pd.path.tclass = rec->traffic_class;
		pd.path.reversible_numpath =
			(uint8_t)(rec->reversible << 7 | 1);
		pd.path.pkey = rec->pkey;
		pd.path.qosclass_sl = htons(rec->sl);
		pd.path.mtu = rec->mtu | 2 << 6;
		pd.path.rate = rec->rate | 2 << 6;
		pd.path.packetlifetime = rec->packet_life_time | 2 << 6;
		pd.flags = rec->preference;
		memcpy((uint8_t *)optval + len, &pd, sizeof(pd));
		len += sizeof(pd);
	}
	*optlen = len;
	return 0;
}

static int rs_rgetsockopt(struct rsocket *rs, int level, int optname,
			  void *optval, socklen_t *optlen)
{
	int err;

	if (!optval || !optlen)
		return cma_err(EFAULT);
	/* rsetsockopt gave these to the UDP socket: it knows them. */
	if (rs->type == SOCK_DGRAM && level != SOL_RDMA &&
	    !(level == SOL_SOCKET &&
	      (optname == SO_RCVBUF || optname == SO_SNDBUF)))
		return getsockopt(rs->udp_sock, level, optname, optval, optlen);
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
			return rs_put_int(optval, optlen,
					  rs_flag(rs->so_opts, optname));
		case SO_RCVBUF:
			return rs_put_int(optval, optlen, (int)rs->rbuf_size);
		case SO_SNDBUF:
			return rs_put_int(optval, optlen, (int)rs->sbuf_size);
		case SO_TYPE:
			return rs_put_int(optval, optlen, rs->type);
		case SO_DOMAIN:
			return rs_put_int(optval, optlen, rs->domain);
		case SO_LINGER:
			if (*optlen < sizeof(struct linger))
				return cma_err(EINVAL);
			((struct linger *)optval)->l_onoff =
				!rs_flag(rs->so_opts, SO_LINGER);
			((struct linger *)optval)->l_linger = 0;
			*optlen = sizeof(struct linger);
			return 0;
		case SO_ERROR:
			err = rs->err;
			if (rs_put_int(optval, optlen, err))
				return -1;
			rs->err = 0;
			return 0;
		default:
			break;
		}
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
			return rs_put_int(optval, optlen, 1);
		case TCP_KEEPIDLE:
			return rs_put_int(optval, optlen,
					  (int)rs->keepalive_time);
		case TCP_NODELAY:
			return rs_put_int(optval, optlen,
					  rs_flag(rs->tcp_opts, optname));
		case TCP_MAXSEG:
			return rs_put_int(
				optval, optlen,
				rs->type == SOCK_STREAM && rs->cm_id &&
						rs->cm_id->route.num_paths
					? 1 << (7 +
						rs->cm_id->route.path_rec->mtu)
					: 2048);
		default:
			break;
		}
		break;
	case IPPROTO_IPV6:
		if (optname == IPV6_V6ONLY)
			return rs_put_int(optval, optlen,
					  rs_flag(rs->ipv6_opts, optname));
		break;
	case SOL_RDMA:
		switch (optname) {
		case RDMA_SQSIZE:
			return rs_put_int(optval, optlen, rs->sq_size);
		case RDMA_RQSIZE:
			return rs_put_int(optval, optlen, rs->rq_size);
		case RDMA_INLINE:
			return rs_put_int(optval, optlen, rs->sq_inline);
		case RDMA_IOMAPSIZE:
			return rs_put_int(optval, optlen,
					  rs->type == SOCK_STREAM
						  ? rs->target_iomap_size
						  : 0);
		case RDMA_ROUTE:
			return rs_get_route(rs, optval, optlen);
		default:
			break;
		}
		break;
	default:
		break;
	}
	return cma_err(ENOTSUP);
}

CMA_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval,
			   socklen_t *optlen)
{
	struct rsocket *rs = rs_get(socket);
	int ret;
	int err;

	if (!rs)
		return -1;
	ret = rs_rgetsockopt(rs, level, optname, optval, optlen);
	err = errno;
	rs_put(rs);
	errno = err;
	return ret;
}

static int rs_fcntl(struct rsocket *rs, int cmd, int arg)
{
	switch (cmd) {
	case F_GETFL:
		return rs->fd_flags;
	case F_SETFL:
		/* Waits check the flag; the kernel fds stay blocking. */
		rs->fd_flags = arg & (O_NONBLOCK | O_APPEND | O_ASYNC);
		return 0;
	case F_GETFD:
		return FD_CLOEXEC;
	case F_SETFD:
		return 0;
	default:
		return cma_err(ENOTSUP);
	}
}

CMA_EXPORT int rfcntl(int socket, int cmd, ... /* arg */)
{
	struct rsocket *rs = rs_get(socket);
	va_list args;
	int arg = 0, ret, err;

	if (!rs)
		return -1;
	if (cmd == F_SETFL) {
		va_start(args, cmd);
		arg = va_arg(args, int);
		va_end(args);
	}
	ret = rs_fcntl(rs, cmd, arg);
	err = errno;
	rs_put(rs);
	errno = err;
	return ret;
}
