// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Stream connection set-up, over this library's public rdma_cm calls.
 *
 * Each stream rsocket owns an event channel; its fd is the socket's
 * number.  Connecting walks address resolution, route resolution and the
 * connect exchange one event at a time (rs_do_connect), so a non-blocking
 * socket returns EINPROGRESS and later calls (or rpoll) carry it on.
 * The connection private data is rdma-core's struct rs_conn_data.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/ib.h>

#include "cm/test_hooks.h"
#include "rs.h"

/*
 * A stream rsocket's channel is a private one (cma_channel_create): its fd
 * is the kernel's, not an epoll set around it.  rsockets use none of the
 * events the library makes itself (timers, rdma_write_cm_event, p2p), so
 * a pollable channel would only cost a descriptor per socket: with it,
 * a connected rsocket took 3, now 2, as in rdma-core.
 *
 * Its fd is non-blocking.  Every wait sleeps in poll() before it reads
 * (rs_get_cm_event), but what poll() saw may be an event the library
 * reads and drops (a connection request whose route it could not query):
 * the read must then send the caller back to its wait, not block a
 * non-blocking rsocket in the kernel until some other event comes.
 */
struct rdma_event_channel *rs_cm_channel(void)
{
	struct rdma_event_channel *ch = cma_channel_create();
	int flags;

	if (!ch)
		return NULL;
	flags = fcntl(ch->fd, F_GETFL);
	if (flags < 0 || fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK)) {
		rdma_destroy_event_channel(ch);
		return NULL;
	}
	return ch;
}

int rs_stream_init(struct rsocket *rs, int domain)
{
	rs->channel = rs_cm_channel();
	if (!rs->channel)
		return -1;
	if (rdma_create_id(rs->channel, &rs->cm_id, rs, RDMA_PS_TCP))
		return -1;
	rs->cm_id->route.addr.src_addr.sa_family = domain;
	return 0;
}

void rs_stream_free(struct rsocket *rs)
{
	rs_listener_remove(rs);
	rs_ka_stop(rs);
	rs_peer_unwatch(rs);
	rs_free_iomaps(rs);
	if (rs->reuse_of) {
		__atomic_sub_fetch(&rs->reuse_of->reuse_members, 1,
				   __ATOMIC_ACQ_REL);
		rs_put(rs->reuse_of);
		rs->reuse_of = NULL;
	}
	if (rs->handed) { /* never answered here: nothing of the kernel's */
		free(rs->handed);
		rs->handed = NULL;
	}
	if (rs->own_index)
		close(rs->index);
	if (rs_handoff_free(rs))
		return; /* a shared listener: other processes keep its id */
	/* also a detached socket's unread bytes, without an id (quiesce.c) */
	rs_destroy_ep(rs);
	if (rs->comp_channel)
		ibv_destroy_comp_channel(rs->comp_channel);
	if (rs->cm_id && rdma_destroy_id(rs->cm_id) && !rs_follow_creds(rs))
		rdma_destroy_id(rs->cm_id);
	if (rs->channel)
		rdma_destroy_event_channel(rs->channel);
}

bool rs_cm_event_ready(struct rsocket *rs)
{
	struct pollfd pfd = {.fd = rs->channel->fd, .events = POLLIN};

	return poll(&pfd, 1, 0) == 1;
}

/*
 * The next CM event; without blocking if @nonblock (then EAGAIN).  A
 * blocking wait ends with EBADF when another thread closes the socket.
 */
static int rs_get_cm_event(struct rsocket *rs, bool nonblock,
			   struct rdma_cm_event **event)
{
	bool followed = false;
	int ret;

	for (;;) {
		/* A fork shared the listener: its requests go to the queue. */
		if (rs_state(rs) == RS_LISTENING && rs_handoff_shared(rs))
			return cma_err(EAGAIN);
		if (nonblock && !rs_cm_event_ready(rs))
			return cma_err(EAGAIN);
		do
			ret = rs_self_wait(rs);
		while (!ret);
		if (ret < 0)
			return -1;
		if (!rdma_get_cm_event(rs->channel, event))
			return 0;
		/*
		 * A listener made before the process changed credentials:
		 * it follows them, once per call (creds.c).
		 */
		if (errno == EACCES && !followed &&
		    rs_state(rs) == RS_LISTENING) {
			followed = true;
			if (!rs_follow_creds(rs))
				continue;
		}
		/* Nothing after all: the library dropped what it read. */
		if (errno != EAGAIN)
			return -1;
	}
}

int rs_stream_bind(struct rsocket *rs, const struct sockaddr *addr,
		   socklen_t len)
{
	if (!addr)
		return cma_err(EFAULT);
	if (len < sizeof(struct sockaddr_in) ||
	    (addr->sa_family == AF_INET6 && len < sizeof(struct sockaddr_in6)))
		return cma_err(EINVAL);
	if (rs_state(rs) != RS_INIT)
		return cma_err(EINVAL);
	if (!(rs->so_opts & (1ULL << SO_REUSEPORT)) ||
	    !rs_handoff_join(rs, addr)) {
		if (rdma_bind_addr(rs->cm_id, (struct sockaddr *)addr))
			return -1;
	}
	rs_set_state(rs, RS_BOUND);
	return 0;
}

int rs_stream_listen(struct rsocket *rs, int backlog)
{
	if (rs_state(rs) == RS_LISTENING)
		return 0;
	if (rs_state(rs) != RS_BOUND && rs_state(rs) != RS_INIT)
		return cma_err(EINVAL);
	if (rs->reuse_of) { /* its listener listens for it */
		rs_set_state(rs, RS_LISTENING);
		return 0;
	}
	/*
	 * rsockets never speak p2p: their listener holds nothing, so its
	 * channel is never served (src/cm/channel.c) and accept pays no hop.
	 */
	if (rdma_set_option(rs->cm_id, RDMA_OPTION_ID, RDMA_OPTION_ID_PEER2PEER,
			    &(int){0}, sizeof(int)))
		return -1;
	if (rdma_listen(rs->cm_id, backlog))
		return -1;
	rs_set_state(rs, RS_LISTENING);
	rs_listener_add(rs);
	rs_handoff_listen(rs);
	return 0;
}

static int rs_resolve_addr(struct rsocket *rs)
{
	int timeout = 1000 << rs->retries++;

	if (rdma_resolve_addr(rs->cm_id, NULL, &rs->cm_id->route.addr.dst_addr,
			      timeout))
		return -1;
	rs_set_state(rs, RS_RESOLVING_ADDR);
	return 0;
}

static int rs_resolve_route(struct rsocket *rs)
{
	int timeout = 1000 << rs->retries++;

	if (rs->route) {
		int ret = rdma_set_option(rs->cm_id, RDMA_OPTION_IB,
					  RDMA_OPTION_IB_PATH, rs->route,
					  rs->route_len);

		free(rs->route);
		rs->route = NULL;
		if (!ret) {
			rs_set_state(rs, RS_RESOLVING_ROUTE);
			return 0;
		}
	}
	if (rdma_resolve_route(rs->cm_id, timeout))
		return -1;
	rs_set_state(rs, RS_RESOLVING_ROUTE);
	return 0;
}

static int rs_send_connect(struct rsocket *rs)
{
	struct rdma_conn_param param;
	struct rs_conn_params p;
	struct rs_wire_conn data;

	if (rs_create_ep(rs))
		return -1;
	rs_get_conn_params(rs, &p);
	rs_conn_encode(&data, &p);
	memset(&param, 0, sizeof(param));
	param.private_data = &data;
	param.private_data_len = sizeof(data);
	param.flow_control = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	/* iWARP's connection set-up may issue an RDMA read (MPA). */
	if (rs->msg_send)
		param.initiator_depth = 1;
	rs->retries = 0;
	if (rdma_connect(rs->cm_id, &param))
		return -1;
	rs_set_state(rs, RS_CONNECTING);
	return 0;
}

static int rs_event_errno(const struct rdma_cm_event *event)
{
	switch (event->event) {
	case RDMA_CM_EVENT_REJECTED:
		return ECONNREFUSED;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return event->status == -ETIMEDOUT ? ETIMEDOUT : EHOSTUNREACH;
	case RDMA_CM_EVENT_UNREACHABLE:
		return event->status == -ETIMEDOUT ? ETIMEDOUT : EHOSTUNREACH;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return ENODEV;
	default:
		return ECONNABORTED;
	}
}

/* The peer's answer to our connect: take its buffers and credits. */
static int rs_take_accept_data(struct rsocket *rs,
			       const struct rdma_cm_event *event)
{
	struct rs_conn_params p;

	if (rs_conn_decode(event->param.conn.private_data,
			   event->param.conn.private_data_len, &p))
		return -1;
	rs_set_conn_params(rs, &p);
	return 0;
}

/* Advance the connection by one CM event; 0, or -1 and errno. */
static int rs_connect_step(struct rsocket *rs, struct rdma_cm_event *event)
{
	enum rdma_cm_event_type type = event->event;
	int err = 0;

	switch (rs_state(rs)) {
	case RS_RESOLVING_ADDR:
		if (type == RDMA_CM_EVENT_ADDR_RESOLVED) {
			rs->retries = 0;
			return rs_resolve_route(rs) ? errno : 0;
		}
		if (type == RDMA_CM_EVENT_ADDR_ERROR &&
		    event->status == -ETIMEDOUT &&
		    rs->retries <= RS_CONN_RETRIES)
			return rs_resolve_addr(rs) ? errno : 0;
		break;
	case RS_RESOLVING_ROUTE:
		if (type == RDMA_CM_EVENT_ROUTE_RESOLVED)
			return rs_send_connect(rs) ? errno : 0;
		if (type == RDMA_CM_EVENT_ROUTE_ERROR &&
		    event->status == -ETIMEDOUT &&
		    rs->retries <= RS_CONN_RETRIES)
			return rs_resolve_route(rs) ? errno : 0;
		break;
	case RS_CONNECTING:
		if (type == RDMA_CM_EVENT_ESTABLISHED) {
			if (rs_take_accept_data(rs, event))
				return errno == ENOTSUP ? ENOTSUP
							: ECONNREFUSED;
			rs_set_state(rs, RS_CONNECT_RDWR);
			rs_peer_watch(rs);
			return 0;
		}
		break;
	case RS_ACCEPTING:
		if (type == RDMA_CM_EVENT_ESTABLISHED) {
			rs_set_state(rs, RS_CONNECT_RDWR);
			rs_peer_watch(rs);
			return 0;
		}
		break;
	default:
		return 0;
	}
	err = rs_event_errno(event);
	return err;
}

static void (*rs_connect_made_hook)(struct rsocket *rs);

void rs_connect_set_made_hook(void (*fn)(struct rsocket *rs))
{
	rs_connect_made_hook = fn;
}

int rs_do_connect(struct rsocket *rs, bool nonblock)
{
	struct rdma_cm_event *event;
	int err;

	while (rs_state(rs) & RS_OPENING) {
		if (rs_state(rs) == RS_HANDED) {
			if (rs_handoff_claim(rs)) {
				err = errno;
				goto failed;
			}
			continue;
		}
		if (rs_get_cm_event(rs, nonblock, &event)) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return cma_err(EINPROGRESS);
			err = errno;
			goto failed;
		}
		err = rs_connect_step(rs, event);
		rdma_ack_cm_event(event);
		if (err)
			goto failed;
	}
	if (rs_connect_made_hook)
		rs_connect_made_hook(rs);
	/*
	 * Made, and perhaps ended since: the peer watch (peerwatch.c), which
	 * starts with the connection, may already have read the peer's end.
	 * The call still succeeds, as connect(2) and TCP's first read do:
	 * what the peer sent before it went is read first, then the end.
	 */
	if (rs_state(rs) & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR))
		return 0;
	if (rs_state(rs) == RS_CONNECT_ERROR)
		return cma_err(rs->err ? rs->err : ECONNREFUSED);
	return cma_err(ENOTCONN);

failed:
	rs_set_state(rs, RS_CONNECT_ERROR);
	rs->err = err;
	return cma_err(err);
}

int rs_stream_connect(struct rsocket *rs, const struct sockaddr *addr,
		      socklen_t len)
{
	int ret;

	if (rs_state(rs) & RS_OPENING) {
		ret = rs_do_connect(rs, rs_nonblocking(rs, 0));
		if (ret && errno == EINPROGRESS)
			errno = EALREADY;
		return ret;
	}
	/*
	 * A connection that has ended still holds its QP and buffers: a new
	 * connect would make others over them, as TCP refuses one.
	 */
	if (rs_state(rs) & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR))
		return cma_err(EISCONN);
	if (rs_state(rs) == RS_LISTENING)
		return cma_err(EINVAL);
	if (!addr)
		return cma_err(EFAULT);
	if (len < sizeof(struct sockaddr_in) ||
	    len > sizeof(struct sockaddr_storage) ||
	    (addr->sa_family == AF_INET6 && len < sizeof(struct sockaddr_in6)))
		return cma_err(EINVAL);
	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6 &&
	    addr->sa_family != AF_IB)
		return cma_err(EAFNOSUPPORT);
	if (rs_state(rs) == RS_CONNECT_ERROR)
		return cma_err(ECONNREFUSED);

	memcpy(&rs->cm_id->route.addr.dst_addr, addr, len);
	rs->retries = 0;
	if (rs_resolve_addr(rs)) {
		rs_set_state(rs, RS_CONNECT_ERROR);
		rs->err = errno;
		return -1;
	}
	return rs_do_connect(rs, rs_nonblocking(rs, 0));
}

/* Refuse a request whose private data is not an rsocket's. */
static void rs_reject(struct rdma_cm_id *id)
{
	rdma_reject(id, NULL, 0);
	rdma_destroy_id(id);
}

/*
 * Take the next connection request off the listener.  The new id arrives
 * on the listener's channel; it moves to a channel of its own, whose fd is
 * the new socket's number.
 */
static int rs_get_request(struct rsocket *rs, bool nonblock,
			  struct rdma_cm_id **id, struct rs_conn_params *p)
{
	struct rdma_cm_event *event;
	int ret;

	for (;;) {
		if (rs_get_cm_event(rs, nonblock, &event))
			return -1;
		if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(event);
			continue;
		}
		*id = event->id;
		ret = rs_conn_decode(event->param.conn.private_data,
				     event->param.conn.private_data_len, p);
		rdma_ack_cm_event(event);
		if (!ret)
			return 0;
		rs_reject(*id);
		return cma_err(ECONNABORTED);
	}
}

int rs_answer(struct rsocket *rs, struct rdma_cm_id *id,
	      struct rdma_event_channel *ch, const struct rs_conn_params *peer)
{
	struct rdma_conn_param param;
	struct rs_conn_params mine;
	struct rs_wire_conn data;

	rs->channel = ch;
	rs->cm_id = id;
	id->context = rs;
	if (rs_create_ep(rs)) {
		rdma_reject(id, NULL, 0);
		return -1;
	}
	rs->await_peer = rs->msg_send;
	rs_set_conn_params(rs, peer);
	rs_get_conn_params(rs, &mine);
	rs_conn_encode(&data, &mine);
	memset(&param, 0, sizeof(param));
	param.private_data = &data;
	param.private_data_len = sizeof(data);
	param.flow_control = 1;
	param.rnr_retry_count = 7;
	/* iWARP: keep the depths the request asked for (see rs_send_connect). */
	if (rs->msg_send) {
		param.responder_resources = RDMA_MAX_RESP_RES;
		param.initiator_depth = RDMA_MAX_INIT_DEPTH;
	}
	if (rdma_accept(id, &param))
		return -1;
	rs_set_state(rs, RS_ACCEPTING);
	/* SO_KEEPALIVE is inherited from the listener, as on TCP. */
	if ((rs->so_opts & (1ULL << SO_KEEPALIVE)) && rs_ka_start(rs))
		return -1;
	return 0;
}

int rs_accept_id(struct rsocket *l, struct rdma_cm_id *id,
		 struct rdma_event_channel *ch,
		 const struct rs_conn_params *peer)
{
	struct rsocket *new_rs;
	int index, err;

	new_rs = rs_alloc(l, SOCK_STREAM);
	if (!new_rs) {
		rs_reject(id);
		rdma_destroy_event_channel(ch);
		return cma_err(ENOMEM);
	}
	if (rs_answer(new_rs, id, ch, peer))
		goto err;
	/* Published last: no other thread sees it half made. */
	index = new_rs->channel->fd;
	if (rs_insert(new_rs, index))
		goto err;
	return index;
err:
	err = errno;
	rs_put(new_rs);
	return cma_err(err);
}

int rs_accept_one(struct rsocket *rs, bool nonblock)
{
	struct rdma_event_channel *ch;
	struct rs_conn_params peer;
	struct rdma_cm_id *id;

	if (rs->reuse_of)
		return rs_handoff_accept(rs->reuse_of, nonblock);
	if (rs_handoff_shared(rs))
		return rs_handoff_accept(rs, nonblock);
	if (rs_get_request(rs, nonblock, &id, &peer)) {
		/* Shared by a fork while it waited: the queue has it now. */
		if (errno == EAGAIN && rs_handoff_shared(rs))
			return rs_handoff_accept(rs, nonblock);
		return -1;
	}
	ch = rs_cm_channel();
	if (!ch || rdma_migrate_id(id, ch)) {
		int err = errno;

		rs_reject(id);
		if (ch)
			rdma_destroy_event_channel(ch);
		return cma_err(err);
	}
	return rs_accept_id(rs, id, ch, &peer);
}

/*
 * raccept: a connection a waiting connect of this process accepted for
 * the listener first (selfconn.c), else the next request.
 */
int rs_stream_accept(struct rsocket *rs, struct sockaddr *addr,
		     socklen_t *addrlen)
{
	struct rsocket *new_rs;
	int index;

	if (rs_state(rs) != RS_LISTENING)
		return cma_err(EINVAL);
	index = rs_accept_enter(rs);
	if (index < 0) {
		index = rs_accept_one(rs, rs_nonblocking(rs, 0));
		rs_accept_leave(rs);
	}
	if (index < 0 || !addr || !addrlen)
		return index;
	new_rs = rs_get(index);
	if (new_rs) {
		rs_copy_peer(new_rs, addr, addrlen);
		rs_put(new_rs);
	}
	return index;
}
