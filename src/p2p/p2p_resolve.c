// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer-to-peer mode: a route resolved only when a REQ needs it.
 *
 * In a pair that both connect, the REQ of one end forms the connection,
 * and the other end adopts it: that end's own address and route
 * resolution is work thrown away (the adopted request brings its route).
 * An application can say before rdma_resolve_addr that an id will connect
 * in p2p mode (RDMA_OPTION_ID_PEER2PEER = 1 on the id).  If that id is the
 * higher end of its pair, which never sends a REQ (cma_p2p_sends_req),
 * rdma_resolve_addr only binds it to its source address (which gives the
 * device, for the QP) and reports ADDR_RESOLVED itself;
 * rdma_resolve_route reports ROUTE_RESOLVED without a path.  rdma_connect
 * then waits for the peer's REQ as any higher end does.  The late
 * resolution below serves the lower end's REQ that was refused for now
 * and goes out again on a fresh kernel id: the kernel resolves its
 * address and route first, out of the application's sight, and the REQ
 * follows; a resolution that fails then is reported as UNREACHABLE.  In a
 * mesh this halves the route resolutions (on InfiniBand, the SA's path
 * queries).
 *
 * An id whose route was left for later connects in p2p mode only
 * (rdma_connect without peer2peer_mode fails with EINVAL), and its path
 * records are known once the connection is formed.
 */
#include <config.h>

#include <errno.h>
#include <string.h>

#include "cm/cma.h"
#include "p2p_hooks.h"
#include "p2p.h"
#include "p2p_table.h"
#include "cm/ucma_abi.h"

static int cma_p2p_post(struct cma_id_private *id_priv,
			enum rdma_cm_event_type type)
{
	struct cma_event *evt = cma_event_new(id_priv, type, 0);

	if (!evt)
		return -1;
	cma_event_post(evt);
	return 0;
}

/*
 * Whether a connect from @src to @dst will wait for the peer's REQ (under
 * p2p_lock): the identities are our listener's and the destination's.
 */
static bool cma_p2p_will_wait(const struct cma_id_private *id_priv,
			      const struct sockaddr *src,
			      const struct sockaddr *dst,
			      struct cma_p2p_listener **lisp)
{
	struct cma_p2p_ident local, remote;
	struct cma_p2p_listener *lis;
	static const uint8_t any[16];

	if (cma_p2p_addr16(src, cma_addr_len(src), local.addr) ||
	    cma_p2p_addr16(dst, cma_addr_len(dst), remote.addr) ||
	    !memcmp(local.addr, any, sizeof(any)))
		return false;
	lis = cma_p2p_listener_for(id_priv->id.ps, src);
	if (!lis)
		return false;
	*lisp = lis;
	local.port = lis->port;
	/* sin_port and sin6_port sit at the same offset. */
	remote.port = be16toh(((const struct sockaddr_in *)dst)->sin_port);
	return !cma_p2p_sends_req(&local, &remote);
}

/* What an id bound to a listener's address has from the kernel. */
struct cma_p2p_local {
	bool known; /* the listener is bound to exactly that address */
	__be64 guid;
	uint8_t port_num;
	union ibv_gid sgid;
	__be16 pkey;
};

/*
 * Under p2p_lock: the device, port and GID of @lis when it is bound to
 * exactly the address an id is resolved from (not a wildcard), which the
 * id's connect will announce.
 */
static void cma_p2p_listener_local(const struct cma_p2p_listener *lis,
				   struct cma_p2p_local *l)
{
	const struct cma_id_private *lp = lis->id_priv;

	l->known = lp && !lis->wildcard && lp->cma_dev;
	if (!l->known)
		return;
	l->guid = lp->cma_dev->guid;
	l->port_num = lp->id.port_num;
	l->sgid = lp->id.route.addr.addr.ibaddr.sgid;
	l->pkey = lp->id.route.addr.addr.ibaddr.pkey;
}

/*
 * Whether rdma_resolve_addr may leave the route of @id_priv for later;
 * either way @l says what its listener has, if it has one (one look at
 * the table for both).
 */
static bool cma_p2p_may_defer(const struct cma_id_private *id_priv,
			      const struct sockaddr *src,
			      const struct sockaddr *dst,
			      struct cma_p2p_local *l)
{
	struct cma_p2p_conn *conn = cma_p2p_conn_of(id_priv);
	struct cma_p2p_listener *lis = NULL;
	bool wait;

	l->known = false;
	if (cma_p2p_listen_opt(id_priv) != 1 || id_priv->sync ||
	    cma_p2p_listening(id_priv) || id_priv->id.qp_type != IBV_QPT_RC ||
	    (dst->sa_family != AF_INET && dst->sa_family != AF_INET6) ||
	    (conn && cma_p2p_conn_registered(conn)))
		return false;
	/* Without a source address the kernel picks one when it resolves. */
	if (!src)
		return false;
	cma_p2p_lock();
	wait = cma_p2p_will_wait(id_priv, src, dst, &lis);
	if (lis)
		cma_p2p_listener_local(lis, l);
	cma_p2p_unlock();
	return wait;
}

/*
 * Give the id the device, port, GID and P_Key of its listener, which is
 * bound to the very address the id resolves from (@l known).  Only on
 * RoCE, where the QP's INIT attributes need no kernel id (qp.c); on
 * InfiniBand the kernel id must know its port for them.  0, or -1 when
 * the id must learn them from the kernel as usual.
 */
static int cma_p2p_take_listener_device(struct cma_id_private *id_priv,
					const struct cma_p2p_local *l)
{
	struct rdma_addr *a = &id_priv->id.route.addr;
	struct cma_device *dev;

	if (!l->known)
		return -1;
	dev = cma_device_get_by_guid(l->guid);
	if (dev && !cma_device_port_is_roce(dev, l->port_num)) {
		cma_device_put(dev);
		dev = NULL;
	}
	if (!dev || cma_id_set_device(id_priv, dev))
		return -1;
	id_priv->id.port_num = l->port_num;
	a->addr.ibaddr.sgid = l->sgid;
	a->addr.ibaddr.pkey = l->pkey;
	return 0;
}

/*
 * Give the id what binding it to @src would: its kernel id is never used
 * to connect unless our REQ must go out after all, so when its listener
 * is bound to that very address the id takes the device, port and GID
 * from there and the kernel id stays unbound (no BIND, no QUERY_ROUTE).
 * Otherwise (a wildcard listener, InfiniBand) the id is bound.
 */
static int cma_p2p_bind_like_listener(struct cma_p2p_conn *conn,
				      const struct sockaddr *src,
				      const struct cma_p2p_local *l)
{
	struct cma_id_private *id_priv = conn->id_priv;
	struct rdma_addr *a = &id_priv->id.route.addr;
	socklen_t len = cma_addr_len(src);

	if (cma_p2p_take_listener_device(id_priv, l))
		return rdma_bind_addr(&id_priv->id, (struct sockaddr *)src);
	pthread_mutex_lock(&id_priv->mut);
	memset(&a->src_storage, 0, sizeof(a->src_storage));
	memcpy(&a->src_storage, src, len);
	pthread_mutex_unlock(&id_priv->mut);
	conn->kernel_unbound = true;
	return 0;
}

/*
 * The end that sends the REQ resolves in the kernel as usual, but when
 * its listener is bound to the very source address it takes the device
 * from there now, and its ADDR_RESOLVED needs no QUERY_ROUTE: the source
 * port the kernel picks and the peer's GID are filled in at
 * ROUTE_RESOLVED, whose query brings the whole route.  One kernel call
 * less per REQ of a mesh.
 */
static void cma_p2p_preset_addr(struct cma_id_private *id_priv,
				const struct cma_p2p_local *l)
{
	struct cma_p2p_id *p;

	/* Most ids have no p2p listener: they get no p2p record either. */
	if (!l->known)
		return;
	p = cma_p2p_id_make(id_priv);
	/* Without the record the kernel's ADDR_RESOLVED is queried as usual. */
	if (p && !cma_p2p_take_listener_device(id_priv, l))
		__atomic_store_n(&p->addr_preset, true, __ATOMIC_RELEASE);
}

bool cma_p2p_addr_preset(const struct cma_id_private *id_priv)
{
	struct cma_p2p_id *p = cma_p2p_id_of(id_priv);

	return p && __atomic_load_n(&p->addr_preset, __ATOMIC_ACQUIRE);
}

void cma_p2p_preset_undo(struct cma_id_private *id_priv)
{
	struct cma_p2p_id *p = cma_p2p_id_of(id_priv);
	int err;

	if (!p ||
	    !__atomic_exchange_n(&p->addr_preset, false, __ATOMIC_RELAXED))
		return;
	err = errno; /* the kernel's answer, for the caller */
	/* It had no device before (cma_p2p_resolve_addr): none again. */
	cma_id_set_device(id_priv, NULL);
	errno = err;
}

int cma_p2p_resolve_addr(struct cma_id_private *id_priv,
			 const struct sockaddr *src, const struct sockaddr *dst,
			 socklen_t dst_len, int timeout_ms)
{
	struct rdma_addr *a = &id_priv->id.route.addr;
	struct cma_p2p_local l;
	struct cma_p2p_conn *conn;
	struct cma_p2p_id *p = cma_p2p_id_of(id_priv);
	bool bound = id_priv->cma_dev;

	if (p)
		__atomic_store_n(&p->addr_preset, false, __ATOMIC_RELAXED);
	if (!cma_p2p_may_defer(id_priv, bound ? &a->src_addr : src, dst, &l)) {
		if (!bound)
			cma_p2p_preset_addr(id_priv, &l);
		return 0;
	}
	conn = cma_p2p_conn_get(id_priv);
	if (!conn)
		return 0; /* resolved as usual */
	if (!bound && cma_p2p_bind_like_listener(conn, src, &l))
		return -1; /* as the kernel's resolution would fail */
	if (cma_id_is_iwarp(id_priv))
		return 0; /* iWARP: the higher end resolves as usual */
	pthread_mutex_lock(&id_priv->mut);
	memset(&a->dst_storage, 0, sizeof(a->dst_storage));
	memcpy(&a->dst_storage, dst, dst_len);
	pthread_mutex_unlock(&id_priv->mut);
	cma_p2p_lock();
	conn->route = CMA_P2P_ROUTE_BOUND;
	conn->addr_ms = (uint32_t)timeout_ms;
	cma_p2p_unlock();
	cma_p2p_dbg("resolve: id bound, its route left until a REQ needs it");
	return cma_p2p_post(id_priv, RDMA_CM_EVENT_ADDR_RESOLVED) ? -1 : 1;
}

int cma_p2p_resolve_route(struct cma_id_private *id_priv, int timeout_ms)
{
	struct cma_p2p_conn *conn = cma_p2p_conn_of(id_priv);
	enum cma_p2p_route route;

	if (!conn)
		return 0;
	cma_p2p_lock();
	route = conn->route;
	if (route == CMA_P2P_ROUTE_BOUND) {
		conn->route = CMA_P2P_ROUTE_LATER;
		conn->route_ms = (uint32_t)timeout_ms;
	}
	cma_p2p_unlock();
	if (route == CMA_P2P_ROUTE_KERNEL)
		return 0;
	if (route != CMA_P2P_ROUTE_BOUND)
		return cma_err(EINVAL); /* as the kernel answers a second one */
	return cma_p2p_post(id_priv, RDMA_CM_EVENT_ROUTE_RESOLVED) ? -1 : 1;
}

bool cma_p2p_route_deferred(const struct cma_id_private *id_priv)
{
	struct cma_p2p_conn *conn = cma_p2p_conn_of(id_priv);
	bool deferred;

	if (!conn)
		return false;
	cma_p2p_lock();
	deferred = conn->route != CMA_P2P_ROUTE_KERNEL;
	cma_p2p_unlock();
	return deferred;
}

bool cma_p2p_resolving(const struct cma_p2p_conn *conn)
{
	return conn->route == CMA_P2P_ROUTE_ADDR ||
	       conn->route == CMA_P2P_ROUTE_PATH;
}

bool cma_p2p_route_later(const struct cma_p2p_conn *conn)
{
	return conn->route == CMA_P2P_ROUTE_LATER;
}

/*
 * Under p2p_lock (and the id's qp_lock): the resolution for our REQ
 * failed with @err; reported by an event once rdma_connect has returned
 * (@deferred), else by rdma_connect.  The REQs the connect sent before
 * are named dead in @notice, sent once p2p_lock is dropped.
 */
static void cma_p2p_route_failed(struct cma_p2p_conn *conn, int err,
				 bool deferred,
				 struct cma_p2p_notice_out *notice)
{
	char kb[CMA_P2P_KEY_STRLEN];

	cma_p2p_dbg("connect %s: route for our REQ not resolved: %s",
		    cma_p2p_key_str(&conn->key, kb, sizeof(kb)), strerror(err));
	conn->route = CMA_P2P_ROUTE_LATER;
	cma_p2p_notice_ended(conn, notice);
	cma_p2p_conn_unregister(conn);
	if (deferred)
		cma_p2p_deferred_failed(conn, err);
}

/*
 * The address resolution for our REQ.  An id that was never bound in the
 * kernel, or whose kernel id was replaced (cma_p2p_send_again), binds the
 * source address it had.  A port the kernel picked for an earlier
 * resolution may be another id's too by then: the kernel lets ids towards
 * different peers share an ephemeral port, and refuses it to an explicit
 * bind (EADDRINUSE).  The port names nothing in p2p mode (the header
 * carries the listener's), so any port then does.
 */
static int cma_p2p_resolve_addr_cmd(struct cma_p2p_conn *conn, int fd)
{
	struct cma_id_private *id_priv = conn->id_priv;
	struct rdma_addr *a = &id_priv->id.route.addr;
	socklen_t src_len =
		conn->kernel_unbound ? cma_addr_len(&a->src_addr) : 0;
	struct sockaddr_storage src = a->src_storage;
	/* sin_port and sin6_port sit at the same offset. */
	struct sockaddr_in *sin = (struct sockaddr_in *)&src;
	int ret;

	for (;;) {
		ret = ucma_cmd_resolve_addr(
			fd, id_priv->handle,
			src_len ? (struct sockaddr *)&src : NULL, src_len,
			&a->dst_addr, cma_addr_len(&a->dst_addr),
			conn->addr_ms);
		if (!ret || errno != EADDRINUSE || !src_len || !sin->sin_port)
			return ret;
		sin->sin_port = 0; /* once: the next attempt's port is 0 */
	}
}

/*
 * Kernel command @cmd for the resolution, without p2p_lock (the conn busy
 * meanwhile); a failure ends the connect as cma_p2p_route_failed does.
 */
static int cma_p2p_route_cmd(struct cma_p2p_conn *conn, uint32_t cmd,
			     bool deferred)
{
	struct cma_id_private *id_priv = conn->id_priv;
	struct cma_p2p_notice_out notice = {0};
	int fd = cma_id_fd(id_priv), ret, err;

	cma_p2p_lock();
	cma_p2p_busy_get(&conn->busy);
	cma_p2p_unlock();
	if (cma_id_kernel(id_priv))
		ret = -1;
	else if (cmd == RDMA_USER_CM_CMD_RESOLVE_ADDR)
		ret = cma_p2p_resolve_addr_cmd(conn, fd);
	else if (cmd == RDMA_USER_CM_CMD_RESOLVE_ROUTE)
		ret = ucma_cmd_resolve_route(fd, id_priv->handle,
					     conn->route_ms);
	else
		ret = cma_query_route_info(id_priv);
	err = errno;
	cma_p2p_lock();
	cma_p2p_busy_put(&conn->busy);
	if (ret)
		cma_p2p_route_failed(conn, err, deferred, &notice);
	if (conn->peer_gone)
		cma_p2p_chores_soon(conn);
	cma_p2p_idle();
	cma_p2p_unlock();
	cma_p2p_notice_start(&notice);
	errno = err;
	return ret;
}

int cma_p2p_resolve_now(struct cma_p2p_conn *conn, bool deferred)
{
	char kb[CMA_P2P_KEY_STRLEN];
	bool start;

	cma_p2p_lock();
	/* The connect may have ended since: then no REQ of ours. */
	start = cma_p2p_conn_registered(conn) &&
		conn->state == CMA_P2P_RESEND &&
		conn->route == CMA_P2P_ROUTE_LATER;
	if (start) {
		conn->route = CMA_P2P_ROUTE_ADDR;
		cma_p2p_dbg("connect %s: resolving the route for our REQ",
			    cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
	}
	cma_p2p_unlock();
	if (!start)
		return 0;
	return cma_p2p_route_cmd(conn, RDMA_USER_CM_CMD_RESOLVE_ADDR, deferred);
}

bool cma_p2p_route_event(struct cma_p2p_conn *conn,
			 const struct rdma_ucm_event_resp *resp,
			 enum cma_p2p_route_step *next,
			 struct cma_p2p_notice_out *notice)
{
	bool ok = false;

	*next = CMA_P2P_STEP_NONE;
	switch (resp->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ok = true;
		/* fall through */
	case RDMA_CM_EVENT_ADDR_ERROR:
		if (conn->route != CMA_P2P_ROUTE_ADDR)
			return false;
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ok = true;
		/* fall through */
	case RDMA_CM_EVENT_ROUTE_ERROR:
		if (conn->route != CMA_P2P_ROUTE_PATH)
			return false;
		break;
	default:
		return false;
	}
	if (!cma_p2p_conn_registered(conn) || conn->state != CMA_P2P_RESEND) {
		/* Ended meanwhile: nothing more to resolve for. */
		conn->route = CMA_P2P_ROUTE_LATER;
		return true;
	}
	if (!ok) {
		cma_p2p_route_failed(
			conn, resp->status ? -resp->status : EHOSTUNREACH, true,
			notice);
		return true;
	}
	if (conn->route == CMA_P2P_ROUTE_ADDR) {
		conn->route = CMA_P2P_ROUTE_PATH;
		*next = CMA_P2P_STEP_ROUTE;
	} else {
		/* Our REQ goes out again: waiting for its answer. */
		conn->route = CMA_P2P_ROUTE_KERNEL;
		cma_p2p_conn_set_state(conn, CMA_P2P_PENDING);
		*next = CMA_P2P_STEP_SEND;
	}
	return true;
}

void cma_p2p_route_next(struct cma_p2p_conn *conn, enum cma_p2p_route_step next)
{
	switch (next) {
	case CMA_P2P_STEP_NONE:
		return;
	case CMA_P2P_STEP_ROUTE:
		cma_p2p_route_cmd(conn, RDMA_USER_CM_CMD_RESOLVE_ROUTE, true);
		return;
	case CMA_P2P_STEP_SEND:
		/* The path records, for the application and the QP's RTR. */
		if (!cma_p2p_route_cmd(conn, RDMA_USER_CM_CMD_QUERY_ROUTE,
				       true))
			cma_p2p_send_req(conn, true);
		return;
	}
}
