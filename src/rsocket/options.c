// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rsetsockopt, rgetsockopt and rfcntl.
 *
 * Socket-level options that have an RDMA meaning change the rsocket (buffer
 * sizes, address reuse, IPv6-only, the traffic class of IP_TOS); keepalive
 * runs timers (keepalive.c); TCP_MAXSEG caps each message; TCP options a
 * reliable connection makes moot (TCP_CONGESTION, TCP_NODELAY) are checked
 * and remembered so that programs written for TCP run unchanged, and
 * TCP_INFO reports what an RDMA connection knows.  Datagram sockets pass
 * non-RDMA options to their UDP socket.  The SOL_RDMA options size the
 * queues and buffers and so only apply before the connection is made.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

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

/*
 * SO_LINGER on with l_linger seconds bounds how long rshutdown/rclose wait
 * for the sends already posted (0: not at all); off (and by default) they
 * wait RS_CLOSE_LINGER_MS.  A negative time is the longest, as Linux
 * takes it.  The flag bit keeps rdma-core's inverted l_onoff.
 */
static void rs_set_linger(struct rsocket *rs, const struct linger *l)
{
	rs->opt.linger_set = l->l_onoff;
	rs->opt.linger_s = l->l_linger < 0 || l->l_linger > RS_LINGER_MAX_S
				   ? RS_LINGER_MAX_S
				   : (unsigned int)l->l_linger;
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
		rs_set_linger(rs, (const struct linger *)optval);
		/* Stored inverted: lingering is the default. */
		val = !((const struct linger *)optval)->l_onoff;
		break;
	case SO_KEEPALIVE:
		if (!val)
			rs_ka_stop(rs);
		else if (rs_ka_start(rs))
			return -1;
		break;
	case SO_OOBINLINE:
	case SO_BROADCAST: /* no broadcast on a connection: kept, as TCP does */
		break;
	case SO_REUSEPORT: /* listeners on one address share (handoff.c) */
		if (rs->type != SOCK_STREAM)
			return cma_err(ENOTSUP);
		break;
	default:
		return cma_err(ENOTSUP);
	}
	rs_set_flag(&rs->so_opts, optname, val);
	return 0;
}

/* TCP's limits (include/net/tcp.h): values outside are EINVAL there too. */
#define RS_MAX_KEEPIDLE 32767
#define RS_MAX_KEEPINTVL 32767
#define RS_MAX_KEEPCNT 127
#define RS_MIN_MSS 88
#define RS_MAX_MSS 32767

static int rs_set_tcp(struct rsocket *rs, int optname, int val)
{
	switch (optname) {
	case TCP_KEEPIDLE:
		if (val < 1 || val > RS_MAX_KEEPIDLE)
			return cma_err(EINVAL);
		/* atomic: the keepalive thread reads them (keepalive.c) */
		__atomic_store_n(&rs->keepalive_time, (unsigned int)val,
				 __ATOMIC_RELAXED);
		return 0;
	case TCP_KEEPINTVL:
		if (val < 1 || val > RS_MAX_KEEPINTVL)
			return cma_err(EINVAL);
		__atomic_store_n(&rs->opt.keepintvl, (unsigned int)val,
				 __ATOMIC_RELAXED);
		return 0;
	case TCP_KEEPCNT:
		if (val < 1 || val > RS_MAX_KEEPCNT)
			return cma_err(EINVAL);
		__atomic_store_n(&rs->opt.keepcnt, (unsigned int)val,
				 __ATOMIC_RELAXED);
		return 0;
	case TCP_MAXSEG:
		if (val && (val < RS_MIN_MSS || val > RS_MAX_MSS))
			return cma_err(EINVAL);
		rs->opt.maxseg = (uint16_t)val;
		return 0;
	case TCP_NODELAY:
		/* Every send is posted at once: nothing is ever delayed. */
		rs_set_flag(&rs->tcp_opts, optname, val);
		return 0;
	default:
		return cma_err(ENOTSUP);
	}
}

/* Is @name one of the kernel's congestion control algorithms? */
static bool rs_cong_known(const char *name)
{
	char list[512], *tok, *save;
	size_t n;
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_available_congestion_control",
			"re");

	if (!f)
		return true; /* nothing to check against */
	n = fread(list, 1, sizeof(list) - 1, f);
	fclose(f);
	list[n] = '\0';
	for (tok = strtok_r(list, " \n", &save); tok;
	     tok = strtok_r(NULL, " \n", &save)) {
		if (!strcmp(tok, name))
			return true;
	}
	return false;
}

/*
 * TCP_CONGESTION: the NIC runs the congestion control of a reliable
 * connection, so the name is only checked (ENOENT for one the kernel does
 * not know, as TCP answers) and reported back.
 */
static int rs_set_cong(struct rsocket *rs, const void *optval, socklen_t optlen)
{
	char name[RS_CONG_NAME_MAX];
	size_t len;

	if (!optval)
		return cma_err(EFAULT);
	len = optlen < sizeof(name) - 1 ? optlen : sizeof(name) - 1;
	memcpy(name, optval, len);
	name[len] = '\0';
	if (!name[0])
		return cma_err(EINVAL);
	if (!rs_cong_known(name))
		return cma_err(ENOENT);
	memcpy(rs->opt.cong, name, sizeof(name));
	return 0;
}

/* IP_TOS and IPV6_TCLASS: the traffic class of the connection's packets. */
static int rs_set_tos(struct rsocket *rs, int val)
{
	uint8_t tos;

	if (val < 0 || val > 255)
		return cma_err(EINVAL);
	/* A stream socket's ECN bits belong to the transport, as on TCP. */
	tos = (uint8_t)(val & ~3);
	if (rdma_set_option(rs->cm_id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
			    sizeof(tos)))
		return -1;
	rs->opt.tos = tos;
	return 0;
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

	if (level == SOL_RDMA && optname == RDMA_QUIESCE) {
		if (rs_int_opt(optval, optlen, &val))
			return -1;
		return rs_quiesce(rs, val);
	}
	if (level == SOL_RDMA)
		return rs_set_rdma(rs, optname, optval, optlen);
	if (rs->type == SOCK_DGRAM) {
		if (setsockopt(rs->udp_sock, level, optname, optval, optlen))
			return -1;
		if (level != SOL_SOCKET ||
		    (optname != SO_RCVBUF && optname != SO_SNDBUF))
			return 0;
	}
	if (level == IPPROTO_TCP && optname == TCP_CONGESTION)
		return rs_set_cong(rs, optval, optlen);
	if (level == SOL_SOCKET && optname == SO_LINGER) {
		if (!optval)
			return cma_err(EFAULT);
	} else if (level == IPPROTO_IP && optname == IP_TOS && optval &&
		   optlen >= 1 && optlen < sizeof(int)) {
		val = *(const uint8_t *)optval; /* a byte, as Linux takes it */
	} else if (rs_int_opt(optval, optlen, &val)) {
		return -1;
	}
	switch (level) {
	case SOL_SOCKET:
		return rs_set_sol_socket(rs, optname, val, optval, optlen);
	case IPPROTO_TCP:
		return rs_set_tcp(rs, optname, val);
	case IPPROTO_IP:
		if (optname != IP_TOS)
			return cma_err(ENOTSUP);
		return rs_set_tos(rs, val);
	case IPPROTO_IPV6:
		if (optname == IPV6_TCLASS)
			return rs_set_tos(rs, val < 0 ? 0 : val);
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
	/* No id yet: a socket accepted but not answered (RS_HANDED). */
	if (rs->type != SOCK_STREAM || !rs->cm_id || *optlen < sizeof(pd))
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

static uint32_t rs_path_mtu(const struct rsocket *rs)
{
	if (rs->type == SOCK_STREAM && rs->cm_id &&
	    rs->cm_id->route.num_paths && rs->cm_id->route.path_rec->mtu)
		return 1U << (7 + rs->cm_id->route.path_rec->mtu);
	return 2048;
}

/* The largest message: the path MTU, or TCP_MAXSEG if smaller. */
static uint32_t rs_mss(const struct rsocket *rs)
{
	uint32_t mss = rs_path_mtu(rs);

	if (rs->opt.maxseg && rs->opt.maxseg < mss)
		mss = rs->opt.maxseg;
	return mss;
}

static uint8_t rs_tcp_state(const struct rsocket *rs)
{
	if (rs->state & RS_CONNECTED)
		return TCP_ESTABLISHED;
	if (rs->state == RS_LISTENING)
		return TCP_LISTEN;
	if (rs->state & RS_OPENING)
		return TCP_SYN_SENT;
	return TCP_CLOSE;
}

/*
 * TCP_INFO: what an RDMA connection knows (state, message size, path MTU,
 * sends in flight, keepalive probes out); the rest is zero.  Like TCP, it
 * fills as much as the caller has room for.
 */
static int rs_get_tcp_info(struct rsocket *rs, void *optval, socklen_t *optlen)
{
	struct tcp_info ti;
	socklen_t len;

	memset(&ti, 0, sizeof(ti));
	pthread_mutex_lock(&rs->lock);
	ti.tcpi_state = rs_tcp_state(rs);
	ti.tcpi_snd_mss = ti.tcpi_rcv_mss = ti.tcpi_advmss = rs_mss(rs);
	ti.tcpi_pmtu = rs_path_mtu(rs);
	if ((rs->state & RS_CONNECTED) && rs->sent)
		ti.tcpi_unacked =
			(rs->sent_head + rs_sent_slots(rs) - rs->sent_tail) %
			rs_sent_slots(rs);
	ti.tcpi_probes = (uint8_t)rs->ka.probes;
	ti.tcpi_snd_cwnd = rs->sq_size;
	ti.tcpi_rcv_space = rs->rbuf_size;
	pthread_mutex_unlock(&rs->lock);
	len = *optlen < sizeof(ti) ? *optlen : (socklen_t)sizeof(ti);
	memcpy(optval, &ti, len);
	*optlen = len;
	return 0;
}

static int rs_get_cong(struct rsocket *rs, void *optval, socklen_t *optlen)
{
	char name[RS_CONG_NAME_MAX];
	socklen_t len;
	FILE *f;

	memset(name, 0, sizeof(name));
	if (rs->opt.cong[0]) {
		memcpy(name, rs->opt.cong, sizeof(name));
	} else {
		/* unset: the kernel's default, as a new TCP socket has */
		f = fopen("/proc/sys/net/ipv4/tcp_congestion_control", "re");
		if (!f || fscanf(f, "%15s", name) != 1)
			strcpy(name, "cubic");
		if (f)
			fclose(f);
	}
	len = *optlen < sizeof(name) ? *optlen : (socklen_t)sizeof(name);
	memcpy(optval, name, len);
	*optlen = len;
	return 0;
}

static int rs_get_tcp(struct rsocket *rs, int optname, void *optval,
		      socklen_t *optlen)
{
	switch (optname) {
	case TCP_KEEPIDLE:
		return rs_put_int(
			optval, optlen,
			rs->keepalive_time
				? (int)rs->keepalive_time
				: (int)rs_ka_sysctl("tcp_keepalive_time",
						    7200));
	case TCP_KEEPINTVL:
		return rs_put_int(
			optval, optlen,
			rs->opt.keepintvl
				? (int)rs->opt.keepintvl
				: (int)rs_ka_sysctl("tcp_keepalive_intvl", 75));
	case TCP_KEEPCNT:
		return rs_put_int(
			optval, optlen,
			rs->opt.keepcnt
				? (int)rs->opt.keepcnt
				: (int)rs_ka_sysctl("tcp_keepalive_probes", 9));
	case TCP_NODELAY:
		return rs_put_int(optval, optlen,
				  rs_flag(rs->tcp_opts, optname));
	case TCP_MAXSEG:
		return rs_put_int(optval, optlen, (int)rs_mss(rs));
	case TCP_INFO:
		return rs_get_tcp_info(rs, optval, optlen);
	case TCP_CONGESTION:
		return rs_get_cong(rs, optval, optlen);
	default:
		return cma_err(ENOTSUP);
	}
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
		case SO_REUSEPORT:
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
		case SO_BROADCAST:
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
			((struct linger *)optval)->l_linger =
				rs->opt.linger_set ? (int)rs->opt.linger_s : 0;
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
		return rs_get_tcp(rs, optname, optval, optlen);
	case IPPROTO_IP:
		if (optname == IP_TOS)
			return rs_put_int(optval, optlen, rs->opt.tos);
		break;
	case IPPROTO_IPV6:
		if (optname == IPV6_V6ONLY)
			return rs_put_int(optval, optlen,
					  rs_flag(rs->ipv6_opts, optname));
		if (optname == IPV6_TCLASS)
			return rs_put_int(optval, optlen, rs->opt.tos);
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
		case RDMA_QUIESCE:
			return rs_put_int(optval, optlen, rs_quiesced(rs));
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
		return rs->opt.cloexec ? FD_CLOEXEC : 0;
	case F_SETFD:
		/*
		 * Kept per socket.  The descriptors the library owns are
		 * close-on-exec whatever is asked: no rsocket survives exec.
		 */
		rs->opt.cloexec = arg & FD_CLOEXEC;
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
	if (cmd == F_SETFL || cmd == F_SETFD) {
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
