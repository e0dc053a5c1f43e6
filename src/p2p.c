// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer-to-peer connection formation (rdma_cm_p2p(7)).
 *
 * Both peers listen and both call rdma_connect; one RC connection must
 * result.  Everything is done over the stock kernel ABI: a 16-byte header
 * (p2p_wire.h) in the private data of the REQ says "peer-to-peer, from the
 * listener at port P, connection tag T", and this file keeps a
 * process-wide table, under one mutex, of
 *
 *   listeners  the ids this process listens on (the port a peer learns)
 *   conns      the ids this process called rdma_connect on in p2p mode
 *   held       p2p requests that arrived before the matching local
 *              rdma_connect: their kernel ids exist, the application has
 *              not seen them
 *
 * A request matches a local connect when its sender is the connect's
 * remote end, its receiver the connect's local end and the tags agree.
 * rdma_connect adopts a held match (accepts the request's kernel id with
 * the connecting id's QP and makes that kernel id the id's own) instead
 * of sending a REQ.  Requests that cross on the wire are settled by
 * identity: the one from the lower (address, port) wins on both sides.
 */
#include <config.h>

#include <arpa/inet.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cma.h"
#include "p2p.h"
#include "p2p_wire.h"
#include "ucma_abi.h"

/* How often held requests are checked for a peer that gave up. */
#define CMA_P2P_PROBE_MS 2000
#define CMA_P2P_DEFAULT_HOLD_MS 10000
/* The IB CM's REJ reason when nobody listens on the service ID. */
#define CMA_IB_REJ_INVALID_SERVICE_ID 8

_Static_assert(offsetof(struct rdma_conn_param, peer2peer_mode) == 15,
	       "peer2peer_mode must sit in the old padding byte");
_Static_assert(sizeof(struct rdma_conn_param) == 24,
	       "struct rdma_conn_param must keep its size");

struct cma_p2p_listener {
	struct cma_p2p_listener *next;
	struct cma_id_private *id_priv;
	enum rdma_port_space ps;
	sa_family_t family;
	bool wildcard;
	uint8_t addr[16];
	uint16_t port;
	struct cma_timer timer; /* held requests' deadlines and probes */
};

struct cma_p2p_held {
	struct cma_p2p_held *next;
	struct cma_p2p_listener *lis;
	uint32_t handle; /* the request's kernel id, on the listener's fd */
	struct cma_p2p_key key;
	struct cma_p2p_hdr hdr;
	uint64_t deadline_ns; /* 0: until the peer gives up */
	struct rdma_ucm_event_resp resp; /* the CONNECT_REQUEST as read */
};

struct cma_p2p_conn {
	struct cma_p2p_conn *next;
	struct cma_id_private *id_priv;
	enum cma_p2p_state state;
	bool registered; /* in the table, matchable */
	bool adopted; /* ESTABLISHED carries the adopted request's data */
	bool from_request; /* the id of a p2p request given to the app */
	bool reply_p2p; /* the reply carried our header, or we sent one */
	struct cma_p2p_key key;
	struct cma_p2p_hdr req_hdr; /* from_request: the request's header */
	struct rdma_ucm_conn_param kparam; /* rdma_connect's, no header */
	struct rdma_ucm_ece ece;
	uint8_t peer_len;
	uint8_t peer_data[RDMA_MAX_PRIVATE_DATA];
	/*
	 * PENDING: how long our REQ may go unanswered; WAIT_PEER: how long
	 * the peer's REQ may take.  Armed only in those two states, so that
	 * it never wakes the channel for nothing.
	 */
	struct cma_timer timer;
	int wait_status; /* the REJECTED status reported if it never comes */
	/*
	 * iWARP (see cma_p2p_iw_connect): our connect was refused because
	 * the peer does not listen yet; retried until iw_deadline_ns.
	 */
	bool iw_refused;
	uint64_t iw_deadline_ns;
	struct rdma_ucm_conn_param iw_req; /* the REQ, header included */
	bool gave_up; /* PENDING timed out: the id's kernel events are noise */
};

struct cma_p2p_counter {
	struct cma_p2p_counter *next;
	struct cma_p2p_ident remote;
	uint64_t count;
};

static pthread_mutex_t p2p_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cma_p2p_listener *p2p_listeners; /* creation order */
static struct cma_p2p_held *p2p_held;
static struct cma_p2p_conn *p2p_conns;
static struct cma_p2p_counter *p2p_counters;

/* --- the pure part (p2p.h) ------------------------------------------------ */

int cma_p2p_ident_cmp(const struct cma_p2p_ident *a,
		      const struct cma_p2p_ident *b)
{
	int c = memcmp(a->addr, b->addr, sizeof(a->addr));

	if (c)
		return c;
	return (int)a->port - (int)b->port;
}

bool cma_p2p_key_equal(const struct cma_p2p_key *a, const struct cma_p2p_key *b)
{
	return !cma_p2p_ident_cmp(&a->local, &b->local) &&
	       !cma_p2p_ident_cmp(&a->remote, &b->remote) && a->tag == b->tag &&
	       a->explicit_tag == b->explicit_tag;
}

enum cma_p2p_action cma_p2p_decide(const struct cma_p2p_key *req,
				   enum cma_p2p_state state)
{
	switch (state) {
	case CMA_P2P_NO_MATCH:
		return CMA_P2P_HOLD;
	case CMA_P2P_PENDING:
		/* Crossing requests: both sides keep the lower one's. */
		return cma_p2p_ident_cmp(&req->remote, &req->local) < 0
			       ? CMA_P2P_ADOPT
			       : CMA_P2P_REJECT_LOST;
	case CMA_P2P_WAIT_PEER:
		return CMA_P2P_ADOPT;
	case CMA_P2P_CONNECTED:
		break;
	}
	return CMA_P2P_REJECT_DUP;
}

int cma_p2p_addr16(const struct sockaddr *sa, uint8_t out[16])
{
	switch (sa->sa_family) {
	case AF_INET:
		memset(out, 0, 10);
		out[10] = 0xff;
		out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr,
		       4);
		return 0;
	case AF_INET6:
		memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return 0;
	case AF_IB:
		memcpy(out, &((const struct sockaddr_ib *)sa)->sib_addr, 16);
		return 0;
	}
	return -1;
}

/* --- settings --------------------------------------------------------------- */

static bool p2p_env_on;
static bool p2p_debug_on;
static unsigned int p2p_hold_ms = CMA_P2P_DEFAULT_HOLD_MS;
static pthread_once_t p2p_env_once = PTHREAD_ONCE_INIT;

static void cma_p2p_read_env(void)
{
	const char *v = getenv("RDMA_CM_PEER2PEER");
	char *end;
	unsigned long ms;

	p2p_env_on = v && v[0] == '1' && !v[1];
	v = getenv("RDMA_CM_P2P_DEBUG");
	p2p_debug_on = v && *v && strcmp(v, "0");
	v = getenv("RDMA_CM_P2P_HOLD_MS");
	if (v && *v) {
		ms = strtoul(v, &end, 10);
		if (!*end && ms <= 3600000)
			p2p_hold_ms = (unsigned int)ms;
	}
}

bool cma_p2p_env(void)
{
	pthread_once(&p2p_env_once, cma_p2p_read_env);
	return p2p_env_on;
}

static unsigned int cma_p2p_hold_ms(void)
{
	cma_p2p_env();
	return p2p_hold_ms;
}

static uint64_t cma_p2p_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * RDMA_CM_P2P_DEBUG=1: one line on stderr per matching step, so that a
 * connection that does not form can be followed on both peers.
 */
static void __attribute__((format(printf, 1, 2)))
cma_p2p_dbg(const char *fmt, ...)
{
	uint64_t ms = cma_p2p_now_ns() / 1000000;
	char line[256];
	va_list ap;
	int n;

	cma_p2p_env();
	if (!p2p_debug_on)
		return;
	n = snprintf(line, sizeof(line), "p2p[%d] %llu.%03llu: ", (int)getpid(),
		     (unsigned long long)(ms / 1000),
		     (unsigned long long)(ms % 1000));
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", line);
}

/* "addr:port>addr:port #tag" of a key, for the debug log. */
static const char *cma_p2p_key_str(const struct cma_p2p_key *key, char *buf,
				   size_t len)
{
	static const uint8_t v4[12] = {[10] = 0xff, [11] = 0xff};
	const struct cma_p2p_ident *e[2] = {&key->remote, &key->local};
	char a[2][INET6_ADDRSTRLEN];
	int i;

	for (i = 0; i < 2; i++) {
		if (!memcmp(e[i]->addr, v4, sizeof(v4)))
			inet_ntop(AF_INET, e[i]->addr + 12, a[i], sizeof(a[i]));
		else
			inet_ntop(AF_INET6, e[i]->addr, a[i], sizeof(a[i]));
	}
	snprintf(buf, len, "peer %s:%u me %s:%u %s%llu", a[0], e[0]->port, a[1],
		 e[1]->port, key->explicit_tag ? "tag " : "#",
		 (unsigned long long)key->tag);
	return buf;
}

#define CMA_P2P_KEY_STRLEN 128

/* --- listeners ---------------------------------------------------------------- */

enum cma_p2p_hold_mode {
	CMA_P2P_HOLD_NEVER, /* RDMA_OPTION_ID_PEER2PEER = 0 */
	CMA_P2P_HOLD_TIMED, /* default: RDMA_CM_P2P_HOLD_MS, then surface */
	CMA_P2P_HOLD_PEER, /* p2p listener: until the peer gives up */
};

static enum cma_p2p_hold_mode
cma_p2p_listener_mode(const struct cma_p2p_listener *lis)
{
	int8_t opt = lis->id_priv->p2p_listen_opt;

	if (opt >= 0)
		return opt ? CMA_P2P_HOLD_PEER : CMA_P2P_HOLD_NEVER;
	return cma_p2p_env() ? CMA_P2P_HOLD_PEER : CMA_P2P_HOLD_TIMED;
}

static bool cma_p2p_addr_is_any(const uint8_t a[16])
{
	static const uint8_t any6[16], any4[16] = {[10] = 0xff, [11] = 0xff};

	return !memcmp(a, any6, 16) || !memcmp(a, any4, 16);
}

static struct cma_p2p_listener *
cma_p2p_find_listener(const struct cma_id_private *id_priv)
{
	struct cma_p2p_listener *lis;

	for (lis = p2p_listeners; lis; lis = lis->next)
		if (lis->id_priv == id_priv)
			return lis;
	return NULL;
}

/* The listener a connect from @src in @ps announces: first created wins. */
static struct cma_p2p_listener *cma_p2p_listener_for(enum rdma_port_space ps,
						     const struct sockaddr *src)
{
	struct cma_p2p_listener *lis;
	uint8_t a[16];

	if (cma_p2p_addr16(src, a))
		return NULL;
	for (lis = p2p_listeners; lis; lis = lis->next) {
		if (lis->ps != ps)
			continue;
		if (!lis->wildcard) {
			if (!memcmp(lis->addr, a, 16))
				return lis;
			continue;
		}
		/* An IPv4 wildcard only covers IPv4 sources. */
		if (lis->family == AF_INET && src->sa_family != AF_INET)
			continue;
		return lis;
	}
	return NULL;
}

static void cma_p2p_timer_expire(struct cma_timer *timer);

void cma_p2p_listen(struct cma_id_private *id_priv)
{
	const struct sockaddr *src = &id_priv->id.route.addr.src_addr;
	struct cma_p2p_listener *lis, **pp;

	if (id_priv->id.qp_type == IBV_QPT_UD)
		return;
	lis = calloc(1, sizeof(*lis));
	if (!lis)
		return; /* requests then reach the application unheld */
	lis->id_priv = id_priv;
	lis->ps = id_priv->id.ps;
	lis->family = src->sa_family;
	if (cma_p2p_addr16(src, lis->addr)) {
		free(lis);
		return;
	}
	lis->wildcard = cma_p2p_addr_is_any(lis->addr);
	lis->port = be16toh(rdma_get_src_port(&id_priv->id));
	lis->timer.expire = cma_p2p_timer_expire;
	pthread_mutex_lock(&p2p_lock);
	if (cma_p2p_find_listener(id_priv)) {
		pthread_mutex_unlock(&p2p_lock);
		free(lis);
		return;
	}
	for (pp = &p2p_listeners; *pp; pp = &(*pp)->next)
		;
	*pp = lis;
	pthread_mutex_unlock(&p2p_lock);
}

/* --- kernel ids the application never sees ------------------------------------ */

static void cma_p2p_put_hdr(struct rdma_ucm_conn_param *kp,
			    const struct cma_p2p_hdr *hdr)
{
	memmove(kp->private_data + CMA_P2P_HDR_LEN, kp->private_data,
		kp->private_data_len);
	cma_p2p_hdr_encode(hdr, kp->private_data);
	kp->private_data_len =
		(uint8_t)(kp->private_data_len + CMA_P2P_HDR_LEN);
}

/* Refuse a request quietly, telling a p2p peer why, and forget its id. */
static void cma_p2p_refuse(int fd, uint32_t handle, enum cma_p2p_kind why,
			   const struct cma_p2p_key *key)
{
	struct cma_p2p_hdr hdr = {.kind = (uint8_t)why};
	uint8_t buf[CMA_P2P_HDR_LEN];
	uint32_t ignored;

	if (key) {
		hdr.port = key->local.port;
		hdr.tag = key->tag;
		hdr.flags = key->explicit_tag ? CMA_P2P_F_EXPLICIT_TAG : 0;
	}
	cma_p2p_hdr_encode(&hdr, buf);
	ucma_cmd_reject(fd, handle, buf, sizeof(buf), 0);
	ucma_cmd_destroy_id(fd, handle, &ignored);
}

static void cma_p2p_held_drop(struct cma_p2p_held *h)
{
	cma_p2p_refuse(cma_id_fd(h->lis->id_priv), h->handle, CMA_P2P_REJ_LOST,
		       &h->key);
	free(h);
}

static void cma_p2p_held_unlink(struct cma_p2p_held *h)
{
	struct cma_p2p_held **pp;

	for (pp = &p2p_held; *pp; pp = &(*pp)->next) {
		if (*pp == h) {
			*pp = h->next;
			break;
		}
	}
	h->next = NULL;
}

/*
 * Is the peer still waiting?  The kernel reports nothing on a request the
 * application has not accepted, but once the peer rejected it (it gave up
 * or destroyed its id) the CM has left the request state, and the QP
 * attributes for RTR are no longer available.
 */
static bool cma_p2p_held_alive(const struct cma_p2p_held *h)
{
	struct ib_uverbs_qp_attr attr;

	return !ucma_cmd_init_qp_attr(cma_id_fd(h->lis->id_priv), h->handle,
				      IBV_QPS_RTR, &attr) ||
	       errno != EINVAL;
}

/* --- conns ------------------------------------------------------------------------ */

static void cma_p2p_conn_timer_expire(struct cma_timer *timer);
static void cma_p2p_arm(struct cma_p2p_listener *lis);
static unsigned int cma_p2p_wait_ms(void);

static struct cma_p2p_conn *cma_p2p_conn_get(struct cma_id_private *id_priv)
{
	if (!id_priv->p2p) {
		id_priv->p2p = calloc(1, sizeof(*id_priv->p2p));
		if (!id_priv->p2p) {
			errno = ENOMEM;
			return NULL;
		}
		id_priv->p2p->id_priv = id_priv;
		id_priv->p2p->timer.expire = cma_p2p_conn_timer_expire;
	}
	return id_priv->p2p;
}

static void cma_p2p_conn_register(struct cma_p2p_conn *conn,
				  enum cma_p2p_state state)
{
	conn->state = state;
	if (conn->registered)
		return;
	conn->next = p2p_conns;
	p2p_conns = conn;
	conn->registered = true;
}

static void cma_p2p_conn_unregister(struct cma_p2p_conn *conn)
{
	struct cma_p2p_conn **pp;

	cma_timer_stop(conn->id_priv->id.channel, &conn->timer);
	if (!conn->registered)
		return;
	for (pp = &p2p_conns; *pp; pp = &(*pp)->next) {
		if (*pp == conn) {
			*pp = conn->next;
			break;
		}
	}
	conn->registered = false;
	conn->state = CMA_P2P_NO_MATCH;
}

static struct cma_p2p_conn *cma_p2p_conn_find(const struct cma_p2p_key *key)
{
	struct cma_p2p_conn *conn;

	for (conn = p2p_conns; conn; conn = conn->next)
		if (cma_p2p_key_equal(&conn->key, key))
			return conn;
	return NULL;
}

static struct cma_p2p_held *cma_p2p_held_find(const struct cma_p2p_key *key)
{
	struct cma_p2p_held *h;

	for (h = p2p_held; h; h = h->next)
		if (cma_p2p_key_equal(&h->key, key))
			return h;
	return NULL;
}

/* The n-th p2p connect of this process towards @remote gets tag n. */
static int cma_p2p_next_tag(const struct cma_p2p_ident *remote, uint64_t *tag)
{
	struct cma_p2p_counter *c;

	for (c = p2p_counters; c; c = c->next)
		if (!cma_p2p_ident_cmp(&c->remote, remote))
			break;
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return cma_err(ENOMEM);
		c->remote = *remote;
		c->next = p2p_counters;
		p2p_counters = c;
	}
	*tag = ++c->count;
	return 0;
}

/* This connect's key; the tag is drawn by the caller under the lock. */
static int cma_p2p_connect_key(struct cma_id_private *id_priv,
			       struct cma_p2p_key *key)
{
	struct rdma_addr *a = &id_priv->id.route.addr;
	struct cma_p2p_listener *lis;

	memset(key, 0, sizeof(*key));
	if (cma_p2p_addr16(&a->src_addr, key->local.addr) ||
	    cma_p2p_addr16(&a->dst_addr, key->remote.addr))
		return cma_err(EAFNOSUPPORT);
	key->remote.port = be16toh(rdma_get_dst_port(&id_priv->id));
	lis = cma_p2p_listener_for(id_priv->id.ps, &a->src_addr);
	if (!lis)
		return cma_err(EADDRNOTAVAIL); /* no listener to announce */
	key->local.port = lis->port;
	if (id_priv->p2p_tag_set) {
		key->explicit_tag = true;
		key->tag = id_priv->p2p_tag;
		return 0;
	}
	return cma_p2p_next_tag(&key->remote, &key->tag);
}

static uint8_t cma_p2p_min_u8(uint8_t a, uint8_t b)
{
	return a < b ? a : b;
}

static void cma_p2p_save_peer_data(struct cma_p2p_conn *conn,
				   const struct rdma_ucm_conn_param *kp,
				   const struct cma_p2p_hdr *hdr)
{
	conn->peer_len = hdr->data_len;
	memcpy(conn->peer_data, kp->private_data + CMA_P2P_HDR_LEN,
	       hdr->data_len);
}

/*
 * How long our REQ may go unanswered.  A peer that holds it answers when
 * its application connects; one that reports it (hold time over) answers
 * when its application accepts.  Give both about a hold time, so that a
 * peer that never does cannot keep us waiting for the kernel's patience
 * (an MRA asks for about 68 s per retry, and the CM retries 15 times).
 */
static unsigned int cma_p2p_pending_ms(void)
{
	return 2 * cma_p2p_wait_ms() + CMA_P2P_PROBE_MS;
}

/* Back out of a failed adoption: the connect keeps its own kernel id. */
static void cma_p2p_adopt_undo(struct cma_id_private *id_priv, uint32_t old,
			       bool qp_moved)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_RESET};

	id_priv->handle = old;
	if (qp_moved && !ibv_modify_qp(id_priv->id.qp, &attr, IBV_QP_STATE))
		cma_qp_to_init(id_priv, id_priv->id.qp);
	cma_query_route_info(id_priv);
}

/* Drop the id's own kernel id; its events so far stay counted. */
static void cma_p2p_drop_own_id(struct cma_id_private *id_priv, uint32_t old)
{
	uint32_t reported;

	if (ucma_cmd_destroy_id(cma_id_fd(id_priv), old, &reported))
		return;
	pthread_mutex_lock(&id_priv->mut);
	id_priv->events_base += reported;
	pthread_mutex_unlock(&id_priv->mut);
}

/*
 * iWARP providers tie a QP to the connection it was handed to: once our
 * own connect's kernel id is gone, siw has moved the QP on (to ERROR).
 * Back to INIT through RESET, so the adopted request can be accepted with
 * it; a QP still in INIT is left alone.
 */
static int cma_p2p_iw_reinit_qp(struct cma_id_private *id_priv)
{
	struct ibv_qp *qp = id_priv->id.qp;
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_RESET};
	struct ibv_qp_init_attr init;
	int ret;

	ret = ibv_query_qp(qp, &attr, IBV_QP_STATE, &init);
	if (ret)
		return cma_err(ret > 0 ? ret : -ret);
	cma_p2p_dbg("qp %u state %d before adoption", qp->qp_num,
		    attr.qp_state);
	if (attr.qp_state == IBV_QPS_INIT)
		return 0;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RESET;
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE);
	if (ret)
		return cma_err(ret > 0 ? ret : -ret);
	return cma_qp_to_init(id_priv, qp);
}

/* The adopted request could not be answered after our REQ was withdrawn. */
static void cma_p2p_adopt_failed(struct cma_p2p_conn *conn, int err)
{
	struct cma_event *evt;

	cma_qp_to_err(conn->id_priv);
	cma_p2p_conn_unregister(conn);
	evt = cma_event_new(conn->id_priv, RDMA_CM_EVENT_CONNECT_ERROR, -err);
	if (evt)
		cma_event_post(evt);
}

/*
 * Make the request's kernel id @handle (on @lis's fd) the connection of
 * @conn's id: answer it with the id's QP, and drop the id's own kernel id.
 * Called with p2p_lock held.  On failure the request is refused, and the
 * id is as before (-1), or, when its own REQ was already withdrawn, gets a
 * CONNECT_ERROR event (0: the failure is reported that way).
 */
static int cma_p2p_adopt(struct cma_p2p_conn *conn,
			 struct cma_p2p_listener *lis, uint32_t handle,
			 const struct rdma_ucm_event_resp *resp,
			 const struct cma_p2p_hdr *hdr)
{
	struct cma_id_private *id_priv = conn->id_priv;
	int fd = cma_id_fd(id_priv), lfd = cma_id_fd(lis->id_priv);
	const struct rdma_ucm_conn_param *req = &resp->param.conn;
	struct cma_p2p_hdr rep = {.kind = CMA_P2P_REP};
	struct rdma_ucm_conn_param kp = conn->kparam;
	uint32_t old = id_priv->handle, reported;
	bool qp_moved = false;
	int err;

	if ((size_t)kp.private_data_len + CMA_P2P_HDR_LEN >
		    sizeof(kp.private_data) ||
	    (fd != lfd && ucma_cmd_migrate_id(fd, handle, lfd, &reported))) {
		err = errno;
		cma_p2p_refuse(lfd, handle, CMA_P2P_REJ_LOST, &conn->key);
		return cma_err(err);
	}
	id_priv->handle = handle;
	if (cma_query_route_info(id_priv))
		goto undo;
	/* The request's depths are from our side's view already. */
	id_priv->responder_resources = cma_p2p_min_u8(
		id_priv->responder_resources, req->responder_resources);
	id_priv->initiator_depth =
		cma_p2p_min_u8(id_priv->initiator_depth, req->initiator_depth);
	if (!id_priv->cma_dev->is_iwarp) {
		qp_moved = true;
		if (cma_qp_to_rtr(id_priv, id_priv->responder_resources) ||
		    cma_qp_to_rts(id_priv, id_priv->initiator_depth))
			goto undo;
	}
	rep.port = conn->key.local.port;
	rep.tag = conn->key.tag;
	rep.flags = conn->key.explicit_tag ? CMA_P2P_F_EXPLICIT_TAG : 0;
	rep.data_len = kp.private_data_len;
	cma_p2p_put_hdr(&kp, &rep);
	kp.responder_resources = id_priv->responder_resources;
	kp.initiator_depth = id_priv->initiator_depth;

	/*
	 * Our own REQ, if one is out, is withdrawn before the REP goes: the
	 * peer's CM still has it in its request state, and a REP from the
	 * same QP would be taken for a stale connection (REJ reason 10).
	 */
	if (conn->state == CMA_P2P_PENDING) {
		cma_p2p_drop_own_id(id_priv, old);
		if (cma_id_is_iwarp(id_priv) && cma_p2p_iw_reinit_qp(id_priv)) {
			err = errno;
			cma_p2p_refuse(fd, handle, CMA_P2P_REJ_LOST,
				       &conn->key);
			cma_p2p_dbg("adopt handle %u: QP not reusable (%s), "
				    "CONNECT_ERROR",
				    handle, strerror(err));
			cma_p2p_adopt_failed(conn, err);
			return 0;
		}
		if (ucma_cmd_accept(fd, handle, (uint64_t)(uintptr_t)id_priv,
				    &kp, &conn->ece)) {
			err = errno;
			cma_p2p_refuse(fd, handle, CMA_P2P_REJ_LOST,
				       &conn->key);
			cma_p2p_dbg("adopt handle %u: accept failed (%s), "
				    "CONNECT_ERROR",
				    handle, strerror(err));
			cma_p2p_adopt_failed(conn, err);
			return 0;
		}
	} else {
		if (ucma_cmd_accept(fd, handle, (uint64_t)(uintptr_t)id_priv,
				    &kp, &conn->ece))
			goto undo;
		cma_p2p_drop_own_id(id_priv, old);
	}
	cma_timer_stop(id_priv->id.channel, &conn->timer);
	cma_p2p_save_peer_data(conn, req, hdr);
	conn->adopted = true;
	conn->reply_p2p = true;
	cma_p2p_conn_register(conn, CMA_P2P_CONNECTED);
	return 0;
undo:
	err = errno;
	cma_p2p_dbg("adopt handle %u failed (%s): request refused", handle,
		    strerror(err));
	cma_p2p_refuse(fd, handle, CMA_P2P_REJ_LOST, &conn->key);
	cma_p2p_adopt_undo(id_priv, old, qp_moved);
	return cma_err(err);
}

/* How often a refused iWARP connect is tried again. */
#define CMA_P2P_IW_RETRY_MS 200

/*
 * iWARP cannot let two requests cross: each side's QP would be tied to
 * its own outgoing connection (siw refuses to accept with such a QP once
 * that connect is withdrawn).  So on iWARP only the end with the lower
 * identity sends a request (the one that would win a crossing anyway);
 * the other end waits for it and adopts it, with a QP no connect ever
 * used.  A connect refused at once (the peer does not listen yet: iWARP
 * connects are TCP connects) is tried again every CMA_P2P_IW_RETRY_MS
 * until the peer's hold time has passed, then fails with REJECTED,
 * -ECONNREFUSED.  Called with p2p_lock held; 0 or -1/errno.
 */
static int cma_p2p_iw_connect(struct cma_p2p_conn *conn,
			      const struct rdma_ucm_conn_param *req)
{
	struct cma_id_private *id_priv = conn->id_priv;
	char kb[CMA_P2P_KEY_STRLEN];

	conn->iw_refused = false;
	conn->wait_status = -ECONNREFUSED;
	if (cma_p2p_ident_cmp(&conn->key.local, &conn->key.remote) > 0) {
		cma_p2p_dbg("connect %s: iWARP, higher end: waiting for the "
			    "peer's REQ",
			    cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
		cma_p2p_conn_register(conn, CMA_P2P_WAIT_PEER);
		cma_timer_start(id_priv->id.channel, &conn->timer,
				cma_p2p_pending_ms());
		return 0;
	}
	cma_p2p_conn_register(conn, CMA_P2P_PENDING);
	if (!ucma_cmd_connect(cma_id_fd(id_priv), id_priv->handle, req,
			      &conn->ece)) {
		cma_timer_start(id_priv->id.channel, &conn->timer,
				cma_p2p_pending_ms());
		return 0;
	}
	if (errno != ECONNREFUSED) {
		cma_p2p_dbg("connect %s: REQ failed: %m",
			    cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
		cma_p2p_conn_unregister(conn);
		return -1;
	}
	cma_p2p_dbg("connect %s: refused (no listener yet), retrying",
		    cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
	conn->iw_refused = true;
	conn->iw_req = *req;
	conn->iw_deadline_ns =
		cma_p2p_now_ns() + (uint64_t)cma_p2p_wait_ms() * 1000000;
	cma_timer_start(id_priv->id.channel, &conn->timer, CMA_P2P_IW_RETRY_MS);
	return 0;
}

/*
 * The retry timer of a refused iWARP connect: try again, or report
 * REJECTED once the time is up.  NULL, or the event to post.
 */
static struct cma_event *cma_p2p_iw_retry(struct cma_p2p_conn *conn)
{
	struct cma_id_private *id_priv = conn->id_priv;
	char kb[CMA_P2P_KEY_STRLEN];

	if (cma_p2p_now_ns() < conn->iw_deadline_ns) {
		if (!ucma_cmd_connect(cma_id_fd(id_priv), id_priv->handle,
				      &conn->iw_req, &conn->ece)) {
			conn->iw_refused = false;
			cma_timer_start(id_priv->id.channel, &conn->timer,
					cma_p2p_pending_ms());
			return NULL;
		}
		if (errno == ECONNREFUSED) {
			cma_timer_start(id_priv->id.channel, &conn->timer,
					CMA_P2P_IW_RETRY_MS);
			return NULL;
		}
	}
	cma_p2p_dbg("connect %s: still refused (%m), REJECTED",
		    cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
	cma_p2p_conn_unregister(conn);
	cma_qp_to_err(id_priv);
	return cma_event_new(id_priv, RDMA_CM_EVENT_REJECTED, -ECONNREFUSED);
}

int cma_p2p_connect(struct cma_id_private *id_priv,
		    const struct rdma_ucm_conn_param *kparam,
		    const struct rdma_ucm_ece *ece)
{
	struct rdma_ucm_conn_param req = *kparam;
	struct cma_p2p_hdr hdr = {.kind = CMA_P2P_REQ};
	char kb[CMA_P2P_KEY_STRLEN];
	struct cma_p2p_conn *conn;
	struct cma_p2p_held *h;
	int ret = -1;

	if (!id_priv->id.qp)
		return cma_err(EINVAL); /* adoption moves the id's own QP */
	if ((size_t)kparam->private_data_len + CMA_P2P_HDR_LEN >
	    sizeof(req.private_data))
		return cma_err(EINVAL);
	conn = cma_p2p_conn_get(id_priv);
	if (!conn)
		return -1;
	pthread_mutex_lock(&p2p_lock);
	if (conn->registered) {
		errno = EISCONN;
		goto out;
	}
	if (cma_p2p_connect_key(id_priv, &conn->key))
		goto out;
	conn->kparam = *kparam;
	conn->ece = *ece;
	conn->gave_up = false;

	h = cma_p2p_held_find(&conn->key);
	cma_p2p_dbg("connect %s: %s",
		    cma_p2p_key_str(&conn->key, kb, sizeof(kb)),
		    h ? "adopting the held request" : "sending a REQ");
	if (h) {
		cma_p2p_held_unlink(h);
		/* Its listener's hold timer must not fire for it any more. */
		cma_p2p_arm(h->lis);
		ret = cma_p2p_adopt(conn, h->lis, h->handle, &h->resp, &h->hdr);
		free(h);
		if (!ret)
			goto out;
	}
	hdr.port = conn->key.local.port;
	hdr.tag = conn->key.tag;
	hdr.flags = conn->key.explicit_tag ? CMA_P2P_F_EXPLICIT_TAG : 0;
	hdr.data_len = req.private_data_len;
	cma_p2p_put_hdr(&req, &hdr);
	cma_p2p_conn_register(conn, CMA_P2P_PENDING);
	if (cma_id_is_iwarp(id_priv)) {
		ret = cma_p2p_iw_connect(conn, &req);
		goto out;
	}
	ret = ucma_cmd_connect(cma_id_fd(id_priv), id_priv->handle, &req, ece);
	if (ret) {
		cma_p2p_dbg("connect %s: REQ failed: %m",
			    cma_p2p_key_str(&conn->key, kb, sizeof(kb)));
		cma_p2p_conn_unregister(conn);
	} else {
		cma_timer_start(id_priv->id.channel, &conn->timer,
				cma_p2p_pending_ms());
	}
out:
	pthread_mutex_unlock(&p2p_lock);
	return ret;
}

/* --- incoming requests ----------------------------------------------------------- */

/* Both ends of a request's kernel id, which no id_priv stands for yet. */
static int cma_p2p_query_ends(int fd, uint32_t handle, bool af_ib,
			      uint8_t local[16], uint8_t remote[16])
{
	if (af_ib) {
		struct rdma_ucm_query_addr_resp r;

		if (ucma_cmd_query_addr(fd, handle, &r))
			return -1;
		if (cma_p2p_addr16((struct sockaddr *)&r.src_addr, local) ||
		    cma_p2p_addr16((struct sockaddr *)&r.dst_addr, remote))
			return cma_err(EAFNOSUPPORT);
		return 0;
	}
	struct rdma_ucm_query_route_resp r;

	if (ucma_cmd_query_route(fd, handle, &r))
		return -1;
	if (cma_p2p_addr16((struct sockaddr *)&r.src_addr, local) ||
	    cma_p2p_addr16((struct sockaddr *)&r.dst_addr, remote))
		return cma_err(EAFNOSUPPORT);
	return 0;
}

static void cma_p2p_arm(struct cma_p2p_listener *lis)
{
	uint64_t now = cma_p2p_now_ns(), next = UINT64_MAX;
	struct cma_p2p_held *h;
	bool any = false;

	for (h = p2p_held; h; h = h->next) {
		if (h->lis != lis)
			continue;
		any = true;
		if (h->deadline_ns && h->deadline_ns < next)
			next = h->deadline_ns;
	}
	if (!any) {
		cma_timer_stop(lis->id_priv->id.channel, &lis->timer);
		return;
	}
	next = next <= now ? 0 : (next - now) / 1000000 + 1;
	if (next > CMA_P2P_PROBE_MS)
		next = CMA_P2P_PROBE_MS;
	cma_timer_start(lis->id_priv->id.channel, &lis->timer,
			(unsigned int)next);
}

static int cma_p2p_hold(struct cma_p2p_listener *lis, uint32_t handle,
			const struct cma_p2p_key *key,
			const struct cma_p2p_hdr *hdr,
			const struct rdma_ucm_event_resp *resp)
{
	struct cma_p2p_held *h = calloc(1, sizeof(*h));

	if (!h)
		return cma_err(ENOMEM);
	h->lis = lis;
	h->handle = handle;
	h->key = *key;
	h->hdr = *hdr;
	h->resp = *resp;
	if (cma_p2p_listener_mode(lis) == CMA_P2P_HOLD_TIMED)
		h->deadline_ns = cma_p2p_now_ns() +
				 (uint64_t)cma_p2p_hold_ms() * 1000000ull;
	h->next = p2p_held;
	p2p_held = h;
	cma_p2p_arm(lis);
	return 0;
}

static void cma_p2p_settle(struct cma_p2p_listener *lis, uint32_t handle,
			   const struct cma_p2p_key *key,
			   const struct cma_p2p_hdr *hdr,
			   const struct rdma_ucm_event_resp *resp)
{
	int lfd = cma_id_fd(lis->id_priv);
	struct cma_p2p_conn *conn = cma_p2p_conn_find(key);
	enum cma_p2p_state state = conn ? conn->state : CMA_P2P_NO_MATCH;
	enum cma_p2p_action act = cma_p2p_decide(key, state);
	static const char *const acts[] = {"hold", "adopt", "refuse (lost)",
					   "refuse (duplicate)"};
	char kb[CMA_P2P_KEY_STRLEN];

	cma_p2p_dbg("request %s, handle %u, local state %d: %s",
		    cma_p2p_key_str(key, kb, sizeof(kb)), handle, (int)state,
		    acts[act]);
	switch (act) {
	case CMA_P2P_HOLD:
		if (cma_p2p_hold(lis, handle, key, hdr, resp))
			cma_p2p_refuse(lfd, handle, CMA_P2P_REJ_LOST, key);
		break;
	case CMA_P2P_ADOPT:
		cma_p2p_adopt(conn, lis, handle, resp, hdr);
		break;
	case CMA_P2P_REJECT_LOST:
		cma_p2p_refuse(lfd, handle, CMA_P2P_REJ_LOST, key);
		break;
	case CMA_P2P_REJECT_DUP:
		cma_p2p_refuse(lfd, handle, CMA_P2P_REJ_DUP, key);
		break;
	}
}

enum cma_p2p_verdict cma_p2p_conn_req(struct cma_id_private *listen_priv,
				      const struct rdma_ucm_event_resp *resp)
{
	const struct rdma_ucm_conn_param *kp = &resp->param.conn;
	int lfd = cma_id_fd(listen_priv);
	struct cma_p2p_listener *lis;
	struct cma_p2p_key key;
	struct cma_p2p_hdr hdr;
	enum cma_p2p_verdict v = CMA_P2P_TAKEN;

	if (listen_priv->id.qp_type == IBV_QPT_UD)
		return CMA_P2P_PASS;
	switch (cma_p2p_hdr_parse(kp->private_data, kp->private_data_len,
				  &hdr)) {
	case CMA_P2P_NONE:
		return CMA_P2P_PASS;
	case CMA_P2P_BAD:
		cma_p2p_refuse(lfd, resp->id, CMA_P2P_REJ_BAD, NULL);
		return CMA_P2P_TAKEN;
	case CMA_P2P_OK:
		break;
	}
	if (hdr.kind != CMA_P2P_REQ) {
		cma_p2p_refuse(lfd, resp->id, CMA_P2P_REJ_BAD, NULL);
		return CMA_P2P_TAKEN;
	}
	memset(&key, 0, sizeof(key));
	key.remote.port = hdr.port;
	key.tag = hdr.tag;
	key.explicit_tag = hdr.flags & CMA_P2P_F_EXPLICIT_TAG;
	if (cma_p2p_query_ends(lfd, resp->id, cma_is_af_ib(listen_priv),
			       key.local.addr, key.remote.addr)) {
		cma_p2p_refuse(lfd, resp->id, CMA_P2P_REJ_BAD, NULL);
		return CMA_P2P_TAKEN;
	}

	pthread_mutex_lock(&p2p_lock);
	lis = cma_p2p_find_listener(listen_priv);
	if (!lis || cma_p2p_listener_mode(lis) == CMA_P2P_HOLD_NEVER ||
	    (cma_p2p_listener_mode(lis) == CMA_P2P_HOLD_TIMED &&
	     !cma_p2p_hold_ms())) {
		v = CMA_P2P_SURFACE;
	} else {
		key.local.port = lis->port;
		cma_p2p_settle(lis, resp->id, &key, &hdr, resp);
	}
	pthread_mutex_unlock(&p2p_lock);
	return v;
}

/*
 * A p2p request reaches the application as an ordinary CONNECT_REQUEST:
 * the header is taken out of the private data and peer2peer_mode is set.
 * The new id remembers the header so that rdma_accept can answer in kind.
 */
void cma_p2p_surfaced(struct cma_event *evt)
{
	struct rdma_conn_param *p = &evt->event.param.conn;
	struct cma_id_private *id_priv = cma_id_priv(evt->event.id);
	struct cma_p2p_conn *conn;
	struct cma_p2p_hdr hdr;

	if (cma_p2p_hdr_parse(evt->private_data, p->private_data_len, &hdr) !=
	    CMA_P2P_OK)
		return;
	memmove(evt->private_data, evt->private_data + CMA_P2P_HDR_LEN,
		hdr.data_len);
	p->private_data_len = hdr.data_len;
	p->private_data = hdr.data_len ? evt->private_data : NULL;
	p->peer2peer_mode = 1;
	conn = cma_p2p_conn_get(id_priv);
	if (!conn)
		return;
	conn->from_request = true;
	conn->req_hdr = hdr;
}

/* Give a held request to the application: its hold time is over. */
static void cma_p2p_surface_held(struct cma_p2p_held *h)
{
	struct cma_id_private *listen_priv = h->lis->id_priv;
	struct cma_event *evt;

	evt = cma_event_new(listen_priv, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (!evt) {
		cma_p2p_held_drop(h);
		return;
	}
	evt->event.listen_id = &listen_priv->id;
	if (cma_process_conn_req(evt, listen_priv, h->handle, &h->resp)) {
		free(evt);
		cma_p2p_held_drop(h);
		return;
	}
	cma_p2p_surfaced(evt);
	cma_event_post(evt);
	free(h);
}

static struct cma_p2p_listener *cma_p2p_listener_of(struct cma_timer *timer)
{
	uintptr_t p =
		(uintptr_t)timer - offsetof(struct cma_p2p_listener, timer);
	struct cma_p2p_listener *lis;

	/* Compare before touching: the listener may be gone. */
	for (lis = p2p_listeners; lis; lis = lis->next)
		if ((uintptr_t)lis == p)
			return lis;
	return NULL;
}

static void cma_p2p_timer_expire(struct cma_timer *timer)
{
	struct cma_p2p_held *h, *next, *due = NULL;
	struct cma_p2p_listener *lis;
	uint64_t now = cma_p2p_now_ns();
	char kb[CMA_P2P_KEY_STRLEN];

	pthread_mutex_lock(&p2p_lock);
	lis = cma_p2p_listener_of(timer);
	if (!lis) {
		pthread_mutex_unlock(&p2p_lock);
		return;
	}
	cma_p2p_dbg("listener port %u: hold timer", lis->port);
	for (h = p2p_held; h; h = next) {
		next = h->next;
		if (h->lis != lis)
			continue;
		if (!cma_p2p_held_alive(h)) {
			cma_p2p_dbg("held request %s, handle %u: peer gone, "
				    "dropped",
				    cma_p2p_key_str(&h->key, kb, sizeof(kb)),
				    h->handle);
			cma_p2p_held_unlink(h);
			cma_p2p_held_drop(h);
		} else if (h->deadline_ns && h->deadline_ns <= now) {
			cma_p2p_held_unlink(h);
			h->next = due;
			due = h;
		}
	}
	cma_p2p_arm(lis);
	/* Oldest first: the list is newest first, and so is "due". */
	for (h = due; h; h = next) {
		next = h->next;
		cma_p2p_surface_held(h);
	}
	pthread_mutex_unlock(&p2p_lock);
}

/* How long a connect waits for the peer's REQ after being told to. */
static unsigned int cma_p2p_wait_ms(void)
{
	unsigned int ms = cma_p2p_hold_ms();

	return ms ? ms : CMA_P2P_DEFAULT_HOLD_MS;
}

/*
 * A REJ that means "the peer will connect to you": ours lost a crossing,
 * or (IB CM reason 8, invalid service ID) the peer has no listener yet.
 */
static bool cma_p2p_peer_will_connect(const struct rdma_ucm_event_resp *resp)
{
	const struct rdma_ucm_conn_param *kp = &resp->param.conn;
	struct cma_p2p_hdr hdr;

	if (resp->status == CMA_IB_REJ_INVALID_SERVICE_ID)
		return true;
	return cma_p2p_hdr_parse(kp->private_data, kp->private_data_len,
				 &hdr) == CMA_P2P_OK &&
	       hdr.kind == CMA_P2P_REJ_LOST;
}

static struct cma_p2p_conn *cma_p2p_conn_of(struct cma_timer *timer)
{
	uintptr_t p = (uintptr_t)timer - offsetof(struct cma_p2p_conn, timer);
	struct cma_p2p_conn *conn;

	for (conn = p2p_conns; conn; conn = conn->next)
		if ((uintptr_t)conn == p)
			return conn;
	return NULL;
}

/*
 * Our REQ went unanswered too long: withdraw it and report UNREACHABLE,
 * ETIMEDOUT.  On Linux, destroying the kernel id is what withdraws a REQ:
 * it cancels the retries and sends a REJ the peer's CM acts on, so the
 * peer's hold check drops its copy.  (A REJ sent with rdma_reject for an
 * outgoing REQ is not matched by the peer, and leaves the REQ's retries
 * running: destroying the id later would block until the last one.)  The
 * id gets a fresh kernel id, so that the application can still destroy it.
 */
static struct cma_event *cma_p2p_give_up(struct cma_p2p_conn *conn)
{
	struct cma_id_private *id_priv = conn->id_priv;
	uint32_t old = id_priv->handle;

	if (!cma_id_create_kernel(id_priv))
		cma_p2p_drop_own_id(id_priv, old);
	else /* no memory: the best we can do without losing the id */
		ucma_cmd_reject(cma_id_fd(id_priv), old, NULL, 0, 0);
	conn->gave_up = true;
	return cma_event_new(id_priv, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
}

/*
 * The connect waited long enough: for an answer to its REQ (PENDING), or
 * for the peer's REQ after being told it would come (WAIT_PEER, failed as
 * the REJ said).
 */
static void cma_p2p_conn_timer_expire(struct cma_timer *timer)
{
	char kb[CMA_P2P_KEY_STRLEN];
	struct cma_p2p_conn *conn;
	struct cma_event *evt;

	pthread_mutex_lock(&p2p_lock);
	conn = cma_p2p_conn_of(timer);
	if (!conn || (conn->state != CMA_P2P_WAIT_PEER &&
		      conn->state != CMA_P2P_PENDING)) {
		pthread_mutex_unlock(&p2p_lock);
		return;
	}
	if (conn->state == CMA_P2P_PENDING && conn->iw_refused) {
		evt = cma_p2p_iw_retry(conn);
		if (evt)
			cma_event_post(evt);
		pthread_mutex_unlock(&p2p_lock);
		return;
	}
	cma_p2p_dbg("connect %s: %s",
		    cma_p2p_key_str(&conn->key, kb, sizeof(kb)),
		    conn->state == CMA_P2P_PENDING
			    ? "no answer to our REQ, UNREACHABLE"
			    : "the peer's REQ never came, REJECTED");
	if (conn->state == CMA_P2P_PENDING)
		evt = cma_p2p_give_up(conn);
	else
		evt = cma_event_new(conn->id_priv, RDMA_CM_EVENT_REJECTED,
				    conn->wait_status);
	cma_p2p_conn_unregister(conn);
	cma_qp_to_err(conn->id_priv);
	if (evt)
		cma_event_post(evt);
	pthread_mutex_unlock(&p2p_lock);
}

/* --- events on p2p ids ------------------------------------------------------------- */

bool cma_p2p_filter_event(struct cma_event *evt,
			  const struct rdma_ucm_event_resp *resp)
{
	struct cma_id_private *id_priv = evt->id_priv;
	struct cma_p2p_conn *conn = id_priv->p2p;
	char kb[CMA_P2P_KEY_STRLEN];
	bool drop = false;

	if (!conn || resp->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return false;
	pthread_mutex_lock(&p2p_lock);
	cma_p2p_dbg("event %s status %d on %s, handle %u (id's %u), state %d",
		    rdma_event_str((enum rdma_cm_event_type)resp->event),
		    (int)resp->status,
		    cma_p2p_key_str(&conn->key, kb, sizeof(kb)), resp->id,
		    id_priv->handle, (int)conn->state);
	if (resp->id != id_priv->handle) {
		drop = true; /* from the kernel id an adoption replaced */
	} else if (conn->gave_up) {
		drop = true; /* the application has its UNREACHABLE */
	} else if (resp->event == RDMA_CM_EVENT_REJECTED &&
		   conn->state == CMA_P2P_PENDING &&
		   cma_p2p_peer_will_connect(resp)) {
		/*
		 * Crossing (the peer keeps its own request), or the peer
		 * does not listen yet: either way its REQ is due, and the
		 * connect adopts it when it comes.
		 */
		conn->state = CMA_P2P_WAIT_PEER;
		conn->wait_status = (int)resp->status;
		cma_timer_start(id_priv->id.channel, &conn->timer,
				cma_p2p_wait_ms());
		drop = true;
	} else if (resp->event == RDMA_CM_EVENT_REJECTED ||
		   resp->event == RDMA_CM_EVENT_UNREACHABLE ||
		   resp->event == RDMA_CM_EVENT_CONNECT_ERROR) {
		cma_p2p_conn_unregister(conn); /* failed: a retry may come */
	}
	pthread_mutex_unlock(&p2p_lock);
	return drop;
}

/* The answer to our REQ: take out a p2p header, note the connection. */
void cma_p2p_conn_resp(struct cma_event *evt, struct cma_id_private *id_priv)
{
	struct rdma_conn_param *p = &evt->event.param.conn;
	struct cma_p2p_conn *conn = id_priv->p2p;
	struct cma_p2p_hdr hdr;

	/* An adopted request's data is the request's (cma_p2p_established). */
	if (!conn || !conn->registered || conn->adopted)
		return;
	pthread_mutex_lock(&p2p_lock);
	conn->state = CMA_P2P_CONNECTED;
	cma_timer_stop(id_priv->id.channel, &conn->timer);
	pthread_mutex_unlock(&p2p_lock);
	if (cma_p2p_hdr_parse(evt->private_data, p->private_data_len, &hdr) !=
		    CMA_P2P_OK ||
	    hdr.kind != CMA_P2P_REP)
		return; /* an ordinary listener accepted it */
	memmove(evt->private_data, evt->private_data + CMA_P2P_HDR_LEN,
		hdr.data_len);
	p->private_data_len = hdr.data_len;
	p->private_data = hdr.data_len ? evt->private_data : NULL;
	p->peer2peer_mode = 1;
	conn->reply_p2p = true;
}

bool cma_p2p_adopted(const struct cma_id_private *id_priv)
{
	return id_priv->p2p && id_priv->p2p->adopted;
}

void cma_p2p_established(struct cma_event *evt, struct cma_id_private *id_priv)
{
	struct rdma_conn_param *p = &evt->event.param.conn;
	struct cma_p2p_conn *conn = id_priv->p2p;

	if (!conn)
		return;
	if (conn->adopted) {
		memcpy(evt->private_data, conn->peer_data, conn->peer_len);
		p->private_data_len = conn->peer_len;
		p->private_data = conn->peer_len ? evt->private_data : NULL;
	}
	if (conn->reply_p2p)
		p->peer2peer_mode = 1;
}

int cma_p2p_accept(struct cma_id_private *id_priv,
		   struct rdma_ucm_conn_param *kparam)
{
	struct cma_p2p_conn *conn = id_priv->p2p;
	struct cma_p2p_hdr rep = {.kind = CMA_P2P_REP};

	if (!conn || !conn->from_request)
		return 0; /* not a p2p request: nothing to answer in kind */
	if ((size_t)kparam->private_data_len + CMA_P2P_HDR_LEN >
	    sizeof(kparam->private_data))
		return cma_err(EINVAL);
	rep.port = conn->req_hdr.port;
	rep.tag = conn->req_hdr.tag;
	rep.flags = conn->req_hdr.flags;
	rep.data_len = kparam->private_data_len;
	cma_p2p_put_hdr(kparam, &rep);
	conn->reply_p2p = true;
	return 0;
}

/* --- options and teardown ------------------------------------------------------------ */

int cma_p2p_set_option(struct cma_id_private *id_priv, int optname,
		       const void *optval, size_t optlen)
{
	switch (optname) {
	case RDMA_OPTION_ID_PEER2PEER: {
		int v;

		if (optlen != sizeof(int))
			return cma_err(EINVAL);
		memcpy(&v, optval, sizeof(v));
		if (v != 0 && v != 1)
			return cma_err(EINVAL);
		id_priv->p2p_listen_opt = (int8_t)v;
		return 0;
	}
	case RDMA_OPTION_ID_P2P_TAG:
		if (optlen != sizeof(uint64_t))
			return cma_err(EINVAL);
		memcpy(&id_priv->p2p_tag, optval, sizeof(uint64_t));
		id_priv->p2p_tag_set = true;
		return 0;
	}
	return cma_err(ENOPROTOOPT);
}

void cma_p2p_destroy(struct cma_id_private *id_priv)
{
	struct cma_p2p_listener *lis, **pp;
	struct cma_p2p_held *h, *next;

	pthread_mutex_lock(&p2p_lock);
	for (pp = &p2p_listeners; (lis = *pp); pp = &lis->next)
		if (lis->id_priv == id_priv)
			break;
	if (lis) {
		*pp = lis->next;
		cma_timer_stop(id_priv->id.channel, &lis->timer);
		for (h = p2p_held; h; h = next) {
			next = h->next;
			if (h->lis != lis)
				continue;
			cma_p2p_held_unlink(h);
			cma_p2p_held_drop(h);
		}
		free(lis);
	}
	if (id_priv->p2p) {
		cma_timer_stop(id_priv->id.channel, &id_priv->p2p->timer);
		cma_p2p_conn_unregister(id_priv->p2p);
	}
	pthread_mutex_unlock(&p2p_lock);
	free(id_priv->p2p);
	id_priv->p2p = NULL;
}
