// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer-to-peer connection formation (rdma_cm_p2p(7)).
 *
 * Both peers listen and both call rdma_connect; one RC connection must
 * result.  Everything is done over the stock kernel ABI: a 24-byte header
 * (p2p_wire.h) in the private data of the REQ says "peer-to-peer, from the
 * listener at port P, connection tag T, process incarnation I", and the
 * module keeps a
 * process-wide table (p2p_table.h), under one mutex, of
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
 * identity: the one from the lower (address, port) wins on both sides;
 * the higher end adopts it once the lower end has refused its own REQ.
 * Each process states a random incarnation, so a restarted peer is told
 * from a duplicate of its old connections.
 *
 *   p2p.c          the table (listeners, conns, held requests), settings,
 *                  the header room of connects and accepts, teardown
 *   p2p_connect.c  rdma_connect in p2p mode: keys and tags, adoption,
 *                  iWARP's single request, the connecting id's events
 *                  (the answer to its REQ), a connect's timer, a
 *                  restarted peer
 *   p2p_request.c  requests arriving at a listener: decide, hold, surface
 *   p2p_resolve.c  the adopting end's route, left until a REQ needs it
 */
#include <config.h>

#include <arpa/inet.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "util/be_bytes.h"
#include "cm/cma.h"
#include "p2p_hooks.h"
#include "util/env.h"
#include "util/fork_fresh.h"
#include "p2p.h"
#include "p2p_table.h"
#include "p2p_wire.h"
#include "cm/test_hooks.h"
#include "cm/ucma_abi.h"

_Static_assert(offsetof(struct rdma_conn_param, peer2peer_mode) == 15,
	       "peer2peer_mode must sit in the old padding byte");
_Static_assert(sizeof(struct rdma_conn_param) == 24,
	       "struct rdma_conn_param must keep its size");

static pthread_mutex_t p2p_lock = PTHREAD_MUTEX_INITIALIZER;
/* Signalled when a busy count (conn, listener) drops: detach waits. */
static pthread_cond_t p2p_idle_cond = PTHREAD_COND_INITIALIZER;
static struct cma_p2p_listener *p2p_listeners; /* creation order */
static uint64_t p2p_held_evicted; /* refused to keep within the caps */
/* Held requests by key; its count is the process's. */
static struct cma_htable p2p_held_table;
/* Registered conns, newest first; and by key. */
static struct cma_list p2p_conns;
static struct cma_htable p2p_conn_table;

/* Listeners whose id is being destroyed: unmatchable, not yet freed. */
static struct cma_p2p_listener *p2p_closing;
/* The forks between the first process and this one. */
static unsigned int p2p_forks;

/* A forked child's copies of its parent's listeners (cma_p2p_forget). */
static struct cma_p2p_listener *p2p_parents;

static void cma_p2p_conns_forget(void);

/* The chain of listeners at @head joins the parent's, out of every table. */
static void cma_p2p_listeners_forget(struct cma_p2p_listener *head)
{
	struct cma_p2p_listener *last = head;

	if (!head)
		return;
	while (last->next)
		last = last->next;
	last->next = p2p_parents;
	p2p_parents = head;
}

/*
 * A forked child is another process: the parent's listeners, held
 * requests and registered connects are on the parent's kernel ids, on a
 * file the child shares, so a child that matched them (its connect
 * adopting the parent's held request, a REQ to the child paired with the
 * parent's connect) or tidied them up (a REJ, or a NOTICE as it destroys
 * its copy of an id) would act for the parent.  The child forgets them
 * without a command: the conns stay with their ids (registered in no
 * process but the parent, cma_p2p_conn_registered), the listeners and
 * their held requests on the list of the parent's, none of them in a
 * table.
 */
static void cma_p2p_forget(void)
{
	cma_p2p_listeners_forget(p2p_listeners);
	cma_p2p_listeners_forget(p2p_closing);
	p2p_listeners = p2p_closing = NULL;
	cma_htable_forget(&p2p_held_table);
	cma_p2p_conns_forget();
}

/*
 * p2p_lock and its condition are made afresh (util/fork_fresh.h): the
 * lock is held across kernel commands and the detach's wait, so a fork
 * cannot hold it, and the condition's copy may still count a parent's
 * waiter.  What the child keeps is what the parent knew of its peers,
 * which another thread may have been changing at the fork: that table is
 * stored so that its forward links are whole at any instant
 * (util/htable.h) and is made whole from them (p2p_peers.c).  The window
 * of REQs out, the parent's, starts empty (p2p_window.c).
 */
static void cma_p2p_forked(void)
{
	pthread_mutex_init(&p2p_lock, NULL);
	pthread_cond_init(&p2p_idle_cond, NULL);
	p2p_forks++; /* every busy count taken so far is the parent's */
	cma_p2p_forget();
	cma_p2p_peers_forked();
	cma_p2p_window_forked();
}

__attribute__((constructor)) static void cma_p2p_watch_forks(void)
{
	pthread_atfork(NULL, NULL, cma_p2p_forked);
}

unsigned int cma_p2p_forks(void)
{
	return p2p_forks;
}

void cma_p2p_busy_get(struct cma_p2p_busy *b)
{
	if (b->forks != p2p_forks) { /* a parent's count, if any */
		b->count = 0;
		b->forks = p2p_forks;
	}
	b->count++;
}

void cma_p2p_busy_put(struct cma_p2p_busy *b)
{
	b->count--;
}

bool cma_p2p_busy(const struct cma_p2p_busy *b)
{
	return b->count && b->forks == p2p_forks;
}

void cma_p2p_lock(void)
{
	pthread_mutex_lock(&p2p_lock);
}

void cma_p2p_unlock(void)
{
	pthread_mutex_unlock(&p2p_lock);
}

bool cma_p2p_locked(void)
{
	if (pthread_mutex_trylock(&p2p_lock))
		return true;
	pthread_mutex_unlock(&p2p_lock);
	return false;
}

void cma_p2p_wait_idle(void)
{
	pthread_cond_wait(&p2p_idle_cond, &p2p_lock);
}

void cma_p2p_idle(void)
{
	pthread_cond_broadcast(&p2p_idle_cond);
}

/* --- the pure part (p2p.h) ------------------------------------------------- */

/*
 * The address bytes in order, as two big-endian words: the order memcmp
 * gives, without a call per comparison (every table lookup makes one).
 */
int cma_p2p_ident_cmp(const struct cma_p2p_ident *a,
		      const struct cma_p2p_ident *b)
{
	uint64_t x = cma_get_be64(a->addr), y = cma_get_be64(b->addr);

	if (x == y) {
		x = cma_get_be64(a->addr + 8);
		y = cma_get_be64(b->addr + 8);
	}
	if (x != y)
		return x < y ? -1 : 1;
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
	/*
	 * Only the lower end sends (cma_p2p_sends_req): a request from the
	 * higher one comes from a peer that does not follow that rule.  It
	 * is refused "for now"; the peer waits, and ours forms the pair.
	 */
	if (cma_p2p_ident_cmp(&req->remote, &req->local) > 0)
		return CMA_P2P_REJECT_RETRY;
	switch (state) {
	case CMA_P2P_NO_MATCH:
	case CMA_P2P_PENDING: /* never ours: we are the higher end */
	case CMA_P2P_RESEND:
		return CMA_P2P_HOLD;
	case CMA_P2P_WAIT_PEER:
		return CMA_P2P_ADOPT;
	case CMA_P2P_CONNECTED:
	case CMA_P2P_ADOPTING:
		break;
	}
	/* An explicit tag already paired (cma_p2p_conn_find). */
	return CMA_P2P_REJECT_DUP;
}

int cma_p2p_addr16(const void *sa, size_t len, uint8_t out[16])
{
	const uint8_t *p = sa;
	sa_family_t family;

	/* Bytes, not members: nothing here assumes @sa's alignment. */
	if (len < sizeof(family))
		return -1;
	memcpy(&family, p + offsetof(struct sockaddr, sa_family),
	       sizeof(family));
	switch (family) {
	case AF_INET:
		if (len < sizeof(struct sockaddr_in))
			return -1;
		memset(out, 0, 10);
		out[10] = 0xff;
		out[11] = 0xff;
		memcpy(out + 12, p + offsetof(struct sockaddr_in, sin_addr), 4);
		return 0;
	case AF_INET6:
		if (len < sizeof(struct sockaddr_in6))
			return -1;
		memcpy(out, p + offsetof(struct sockaddr_in6, sin6_addr), 16);
		return 0;
	case AF_IB:
		/* Not in a QUERY_ROUTE reply's sockaddr_in6-sized slots. */
		if (len < sizeof(struct sockaddr_ib))
			return -1;
		memcpy(out, p + offsetof(struct sockaddr_ib, sib_addr), 16);
		return 0;
	}
	return -1;
}

/* --- settings -------------------------------------------------------------- */

static bool p2p_env_on;
static bool p2p_debug_on;
static unsigned int p2p_hold_ms = CMA_P2P_DEFAULT_HOLD_MS;
static unsigned int p2p_max_held = CMA_P2P_DEFAULT_MAX_HELD;
static pthread_once_t p2p_env_once = PTHREAD_ONCE_INIT;

static void cma_p2p_read_env(void)
{
	const char *v = cma_env("RDMA_CM_PEER2PEER");
	char *end;
	unsigned long ms;

	p2p_env_on = v && v[0] == '1' && !v[1];
	v = cma_env("RDMA_CM_P2P_DEBUG");
	p2p_debug_on = v && *v && strcmp(v, "0");
	v = cma_env("RDMA_CM_P2P_HOLD_MS");
	if (v && *v) {
		ms = strtoul(v, &end, 10);
		if (!*end && ms <= 3600000)
			p2p_hold_ms = (unsigned int)ms;
	}
	v = cma_env("RDMA_CM_P2P_MAX_HELD");
	if (v) {
		ms = strtoul(v, &end, 10);
		if (!*end && ms >= 1 && ms <= 1000000)
			p2p_max_held = (unsigned int)ms;
	}
}

bool cma_p2p_env(void)
{
	pthread_once(&p2p_env_once, cma_p2p_read_env);
	return p2p_env_on;
}

unsigned int cma_p2p_hold_ms(void)
{
	cma_p2p_env();
	return p2p_hold_ms;
}

unsigned int cma_p2p_max_held(void)
{
	cma_p2p_env();
	return p2p_max_held;
}

/* A test's frozen time (cma_p2p_set_clock); 0: the real clock. */
static uint64_t p2p_test_clock_ns;

void cma_p2p_set_clock(uint64_t ns)
{
	__atomic_store_n(&p2p_test_clock_ns, ns, __ATOMIC_RELAXED);
}

uint64_t cma_p2p_now_ns(void)
{
	uint64_t t = __atomic_load_n(&p2p_test_clock_ns, __ATOMIC_RELAXED);

	if (t)
		return t;
	return cma_now_coarse_ns(); /* deadlines of timers: timer.c says why */
}

/*
 * RDMA_CM_P2P_DEBUG=1: one line on stderr per matching step, so that a
 * connection that does not form can be followed on both peers.
 */
bool cma_p2p_debug_on(void)
{
	cma_p2p_env();
	return p2p_debug_on;
}

void cma_p2p_dbg_print(const char *fmt, ...)
{
	uint64_t ms = cma_now_ns() / 1000000;
	char line[256];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "p2p[%d] %llu.%03llu: ", (int)getpid(),
		     (unsigned long long)(ms / 1000),
		     (unsigned long long)(ms % 1000));
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", line);
}

/* "addr:port>addr:port #tag" of a key, for the debug log. */
const char *cma_p2p_key_str(const struct cma_p2p_key *key, char *buf,
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

/* How long a connect waits for the peer's REQ after being told to. */
unsigned int cma_p2p_wait_ms(void)
{
	unsigned int ms = cma_p2p_hold_ms();

	return ms ? ms : CMA_P2P_DEFAULT_HOLD_MS;
}

/* --- listeners ------------------------------------------------------------- */

enum cma_p2p_hold_mode cma_p2p_listener_mode(const struct cma_p2p_listener *lis)
{
	int opt = cma_p2p_listen_opt(lis->id_priv);

	if (opt >= 0)
		return opt ? CMA_P2P_HOLD_PEER : CMA_P2P_HOLD_NEVER;
	return cma_p2p_env() ? CMA_P2P_HOLD_PEER : CMA_P2P_HOLD_TIMED;
}

bool cma_p2p_peer_listening(void)
{
	struct cma_p2p_listener *lis;
	bool any = false;

	cma_p2p_lock();
	for (lis = p2p_listeners; lis && !any; lis = lis->next)
		any = cma_p2p_listener_mode(lis) == CMA_P2P_HOLD_PEER;
	cma_p2p_unlock();
	return any;
}

static bool cma_p2p_addr_is_any(const uint8_t a[16])
{
	static const uint8_t any6[16], any4[16] = {[10] = 0xff, [11] = 0xff};

	return !memcmp(a, any6, 16) || !memcmp(a, any4, 16);
}

struct cma_p2p_listener *
cma_p2p_find_listener(const struct cma_id_private *id_priv)
{
	struct cma_p2p_listener *lis;

	for (lis = p2p_listeners; lis; lis = lis->next)
		if (lis->id_priv == id_priv)
			return lis;
	return NULL;
}

/* The listener a connect from @src in @ps announces: first created wins. */
struct cma_p2p_listener *cma_p2p_listener_for(enum rdma_port_space ps,
					      const struct sockaddr *src)
{
	struct cma_p2p_listener *lis;
	uint8_t a[16];

	if (cma_p2p_addr16(src, sizeof(struct sockaddr_storage), a))
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

void cma_p2p_listen(struct cma_id_private *id_priv)
{
	const struct sockaddr *src = &id_priv->id.route.addr.src_addr;
	struct cma_p2p_listener *lis, **pp;
	struct cma_p2p_id *p;

	if (id_priv->id.qp_type == IBV_QPT_UD)
		return;
	p = cma_p2p_id_make(id_priv);
	lis = p ? calloc(1, sizeof(*lis)) : NULL;
	if (!lis)
		return; /* requests then reach the application unheld */
	lis->id_priv = id_priv;
	lis->ps = id_priv->id.ps;
	lis->family = src->sa_family;
	if (cma_p2p_addr16(src, sizeof(struct sockaddr_storage), lis->addr)) {
		free(lis);
		return;
	}
	lis->wildcard = cma_p2p_addr_is_any(lis->addr);
	lis->port = be16toh(rdma_get_src_port(&id_priv->id));
	lis->timer.expire = cma_p2p_timer_expire;
	cma_p2p_lock();
	if (cma_p2p_find_listener(id_priv)) {
		cma_p2p_unlock();
		free(lis);
		return;
	}
	for (pp = &p2p_listeners; *pp; pp = &(*pp)->next)
		;
	/* lis->next is NULL already: a forked child sees it whole. */
	CMA_FORK_PUBLISH(*pp, lis);
	p->listening = true;
	cma_p2p_unlock();
}

bool cma_p2p_listening(const struct cma_id_private *id_priv)
{
	struct cma_p2p_id *p = cma_p2p_id_of(id_priv);

	return p && p->listening;
}

/*
 * A p2p listener on one address of an IB or RoCE device: the companion
 * that hears its peers' NOTICEs (p2p_notice.c) is made now, before any
 * REQ, so that the first NOTICE finds it.  Others make it with their
 * first held or adopted request (p2p_request.c), on the address it
 * came to.
 */
static void cma_p2p_companion_now(struct cma_id_private *id_priv)
{
	struct cma_p2p_listener *lis;
	sa_family_t family = AF_UNSPEC;
	uint8_t addr[16];
	uint16_t port = 0;

	cma_p2p_lock();
	lis = cma_p2p_find_listener(id_priv);
	if (lis && !lis->wildcard && !lis->companion &&
	    !cma_id_is_iwarp(id_priv)) {
		lis->companion = true;
		family = lis->family;
		memcpy(addr, lis->addr, sizeof(addr));
		port = lis->port;
	}
	cma_p2p_unlock();
	if (port)
		cma_p2p_companion_ensure(family, addr, port);
}

/*
 * Held requests must never wake the application's fd (channel.c), so
 * the channel of a listener that may hold them is one the library
 * serves once the process shows p2p activity; RDMA_CM_PEER2PEER=1 is
 * such activity from the start.
 */
void cma_p2p_listen_may_hold(struct cma_id_private *id_priv)
{
	int opt = cma_p2p_listen_opt(id_priv);

	if (!cma_p2p_listening(id_priv) || !opt)
		return;
	if (cma_p2p_env())
		cma_channel_serve_all();
	cma_channel_may_hold(id_priv->id.channel);
	/* Held until the peer gives up: this process runs in p2p mode. */
	if (opt > 0 || cma_p2p_env()) {
		cma_p2p_prepare(id_priv->id.channel);
		cma_p2p_companion_now(id_priv);
	}
}

void cma_p2p_unlisten(struct cma_id_private *id_priv)
{
	struct cma_p2p_listener *lis, **pp;

	cma_p2p_lock();
	for (pp = &p2p_listeners; (lis = *pp); pp = &lis->next) {
		if (lis->id_priv == id_priv) {
			CMA_FORK_PUBLISH(*pp, lis->next);
			cma_p2p_id_of(id_priv)->listening = false;
			break;
		}
	}
	cma_p2p_unlock();
	/* Never listened: no request was held, its timer never armed. */
	free(lis);
}

/* --- this process's incarnation -------------------------------------------- */

static uint64_t p2p_incarnation; /* 0 until drawn */

/* A forked child is another process: it draws its own. */
static void cma_p2p_incarnation_atfork(void)
{
	__atomic_store_n(&p2p_incarnation, 0, __ATOMIC_RELAXED);
}

static void cma_p2p_incarnation_once(void)
{
	pthread_atfork(NULL, NULL, cma_p2p_incarnation_atfork);
}

/*
 * Random, drawn once per process, never 0: a peer that sees a new one for
 * the same address and port knows the process behind it was restarted.
 */
uint64_t cma_p2p_incarnation(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	uint64_t v = __atomic_load_n(&p2p_incarnation, __ATOMIC_RELAXED);
	uint64_t stored = 0;

	if (v)
		return v;
	pthread_once(&once, cma_p2p_incarnation_once);
	/*
	 * Never waits for the entropy pool (a guest just booted): a restart
	 * only needs a value unlikely to repeat, which the fallback gives.
	 */
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = cma_now_ns() ^ ((uint64_t)getpid() << 20);
	v &= CMA_P2P_INCARNATION_MASK; /* what the header carries */
	if (!v)
		v = 1;
	/* Two threads drawing at once: the first one stored wins. */
	if (!__atomic_compare_exchange_n(&p2p_incarnation, &stored, v, false,
					 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		v = stored;
	return v;
}

/* Under p2p_lock: our REQs are numbered 1, 2, ... and 1 again after 2^24-1. */
uint32_t cma_p2p_next_req_number(void)
{
	static uint32_t last;

	last = (last + 1) & CMA_P2P_NUMBER_MASK;
	if (!last)
		last = 1;
	return last;
}

void cma_p2p_prepare(struct rdma_event_channel *channel)
{
	cma_timer_prestart();
	cma_channel_prepare_posts(channel);
	cma_p2p_incarnation();
}

/* --- kernel ids the application never sees --------------------------------- */

void cma_p2p_put_hdr(struct rdma_ucm_conn_param *kp,
		     const struct cma_p2p_hdr *hdr)
{
	struct cma_p2p_hdr h = *hdr;
	uint8_t buf[CMA_P2P_HDR_MAX];
	size_t len;

	h.len = 0; /* the length its flags give */
	h.incarnation = cma_p2p_incarnation();
	len = cma_p2p_hdr_encode(&h, buf);
	memmove(kp->private_data + len, kp->private_data, kp->private_data_len);
	memcpy(kp->private_data, buf, len);
	kp->private_data_len = (uint8_t)(kp->private_data_len + len);
}

static void cma_p2p_refuse_hdr(int fd, uint32_t handle, struct cma_p2p_hdr *hdr)
{
	uint8_t buf[CMA_P2P_HDR_MAX];
	uint32_t ignored;
	size_t len;

	hdr->incarnation = cma_p2p_incarnation();
	len = cma_p2p_hdr_encode(hdr, buf);
	ucma_cmd_reject(fd, handle, buf, (uint8_t)len, 0);
	ucma_cmd_destroy_id(fd, handle, &ignored);
}

void cma_p2p_refuse(int fd, uint32_t handle, enum cma_p2p_kind why,
		    const struct cma_p2p_key *key)
{
	struct cma_p2p_hdr hdr = {.kind = (uint8_t)why};

	if (key) {
		hdr.port = key->local.port;
		hdr.tag = key->tag;
		hdr.flags = key->explicit_tag ? CMA_P2P_F_EXPLICIT_TAG : 0;
	}
	cma_p2p_refuse_hdr(fd, handle, &hdr);
}

void cma_p2p_held_drop(struct cma_p2p_held *h)
{
	cma_p2p_refuse(cma_id_fd(h->lis->id_priv), h->handle, CMA_P2P_REJ_RETRY,
		       &h->key);
	free(h);
}

/*
 * Bucket hashes only (never on the wire, never compared across processes),
 * so eight bytes at a time: a byte-at-a-time hash of the ~60 bytes of a
 * key was a visible part of a p2p connect's cost, every connect looking its
 * key and its peer up several times.  Identity bytes are read with memcpy:
 * the structures carry no alignment promise for them.
 */
static uint64_t cma_p2p_mix(uint64_t h, uint64_t word)
{
	h = (h ^ word) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

uint64_t cma_p2p_ident_hash(uint64_t h, const struct cma_p2p_ident *id)
{
	uint64_t w[2];

	memcpy(w, id->addr, sizeof(w));
	h = cma_p2p_mix(h, w[0]);
	h = cma_p2p_mix(h, w[1]);
	return cma_p2p_mix(h, id->port);
}

/* The key's fields, not its padding. */
static uint64_t cma_p2p_key_hash(const struct cma_p2p_key *key)
{
	uint64_t h = cma_p2p_ident_hash(CMA_P2P_HASH_SEED, &key->local);

	h = cma_p2p_ident_hash(h, &key->remote);
	return cma_p2p_mix(h, key->tag ^ key->explicit_tag);
}

void cma_p2p_held_unlink(struct cma_p2p_held *h)
{
	cma_list_unlink(&h->lis->held, &h->lnode);
	cma_htable_del(&p2p_held_table, &h->hnode);
}

/* Refuse a held request to stay within a cap; counted. */
static void cma_p2p_held_evict(struct cma_p2p_held *h)
{
	char kb[CMA_P2P_KEY_STRLEN];

	cma_p2p_dbg("held request %s, handle %u: over the cap, refused",
		    cma_p2p_key_str(&h->key, kb, sizeof(kb)), h->handle);
	cma_p2p_held_unlink(h);
	cma_p2p_held_drop(h);
	p2p_held_evicted++;
}

/* The oldest held request of the process (at the head of some listener). */
static struct cma_p2p_held *cma_p2p_held_oldest(void)
{
	struct cma_p2p_held *oldest = NULL, *first;
	struct cma_p2p_listener *lis;

	for (lis = p2p_listeners; lis; lis = lis->next) {
		first = cma_p2p_held_first(lis);
		if (first && (!oldest || first->seq < oldest->seq))
			oldest = first;
	}
	return oldest;
}

void cma_p2p_held_link(struct cma_p2p_held *h)
{
	static uint64_t p2p_held_seq;
	struct cma_p2p_listener *lis = h->lis;
	unsigned int max = cma_p2p_max_held();
	struct cma_p2p_held *old;

	h->seq = ++p2p_held_seq;
	while (lis->held.len && lis->held.len >= max)
		cma_p2p_held_evict(cma_p2p_held_first(lis));
	while (p2p_held_table.count >= 4 * (size_t)max &&
	       (old = cma_p2p_held_oldest()))
		cma_p2p_held_evict(old);
	cma_list_append(&lis->held, &h->lnode);
	cma_htable_add(&p2p_held_table, &h->hnode, cma_p2p_key_hash(&h->key));
}

/*
 * A listener's held requests are oldest first and share its hold time, so
 * the first one's deadline is the earliest: arming costs O(1) however many
 * a peer made us hold.  Probes for peers that gave up run every
 * CMA_P2P_PROBE_MS in any case.
 */
void cma_p2p_arm(struct cma_p2p_listener *lis)
{
	uint64_t now = cma_p2p_now_ns(), next = UINT64_MAX;
	struct cma_p2p_held *h = cma_p2p_held_first(lis);

	if (!h) {
		cma_timer_stop(&lis->timer);
		return;
	}
	if (h->deadline_ns)
		next = h->deadline_ns;
	next = next <= now ? 0 : (next - now) / 1000000 + 1;
	if (next > CMA_P2P_PROBE_MS)
		next = CMA_P2P_PROBE_MS;
	cma_timer_start(lis->id_priv->id.channel, &lis->timer,
			(unsigned int)next);
}

/* --- the table of conns and held requests ---------------------------------- */

struct cma_p2p_id *cma_p2p_id_make(struct cma_id_private *id_priv)
{
	struct cma_p2p_id *p = cma_p2p_id_of(id_priv);

	if (p)
		return p;
	pthread_mutex_lock(&id_priv->mut);
	p = id_priv->p2p;
	if (!p) {
		p = cma_zalloc(sizeof(*p));
		if (p) {
			p->listen_opt = -1;
			__atomic_store_n(&id_priv->p2p, p, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&id_priv->mut);
	if (!p)
		errno = ENOMEM;
	return p;
}

struct cma_p2p_conn *cma_p2p_conn_get(struct cma_id_private *id_priv)
{
	struct cma_p2p_id *p = cma_p2p_id_make(id_priv);
	struct cma_p2p_conn *conn;

	if (!p)
		return NULL;
	if (!p->conn) {
		conn = cma_zalloc(sizeof(*conn));
		if (!conn) {
			errno = ENOMEM;
			return NULL;
		}
		conn->id_priv = id_priv;
		conn->timer.expire = cma_p2p_conn_timer_expire;
		p->conn = conn;
	}
	return p->conn;
}

/* Registered connects waiting for an answer or the peer's REQ. */
static unsigned int p2p_waiting;
/*
 * The most that waited at once since none did: the size of the mesh being
 * wired up, which the connects still waiting take their patience from
 * (cma_p2p_mesh_steps) after most of the others have formed.
 */
static unsigned int p2p_waiting_peak;

static bool cma_p2p_conn_waits(const struct cma_p2p_conn *conn)
{
	return cma_p2p_conn_registered(conn) &&
	       (conn->state == CMA_P2P_PENDING ||
		conn->state == CMA_P2P_WAIT_PEER ||
		conn->state == CMA_P2P_RESEND);
}

void cma_p2p_conn_set_state(struct cma_p2p_conn *conn, enum cma_p2p_state state)
{
	p2p_waiting -= cma_p2p_conn_waits(conn);
	conn->state = state;
	p2p_waiting += cma_p2p_conn_waits(conn);
	if (p2p_waiting > p2p_waiting_peak || !p2p_waiting)
		p2p_waiting_peak = p2p_waiting;
	/* A REQ out keeps its place. */
	if (conn->slot && state != CMA_P2P_PENDING)
		cma_p2p_slot_release(conn);
}

/* A forked child's: none of its parent's, which it forgets. */
static void cma_p2p_conns_forget(void)
{
	p2p_conns = (struct cma_list){0};
	cma_htable_forget(&p2p_conn_table);
	p2p_waiting = p2p_waiting_peak = 0;
}

unsigned int cma_p2p_conns_waiting(void)
{
	return p2p_waiting;
}

unsigned int cma_p2p_conns_waiting_peak(void)
{
	return p2p_waiting_peak;
}

/* The key must not change while the conn is registered (it is hashed). */
void cma_p2p_conn_register(struct cma_p2p_conn *conn, enum cma_p2p_state state)
{
	static uint64_t p2p_conn_seq;

	if (!cma_p2p_conn_registered(conn)) {
		cma_list_push(&p2p_conns, &conn->node);
		cma_htable_add(&p2p_conn_table, &conn->hnode,
			       cma_p2p_key_hash(&conn->key));
		conn->registered = p2p_forks + 1;
		conn->seq = ++p2p_conn_seq;
		conn->state = CMA_P2P_NO_MATCH;
		/* Those of a parent's copy are the parent's (p2p_window.c). */
		conn->slot = conn->queued = false;
	}
	cma_p2p_conn_set_state(conn, state);
}

void cma_p2p_conn_unregister(struct cma_p2p_conn *conn)
{
	cma_timer_stop(&conn->timer);
	if (!cma_p2p_conn_registered(conn))
		return;
	cma_list_unlink(&p2p_conns, &conn->node);
	cma_htable_del(&p2p_conn_table, &conn->hnode);
	cma_p2p_conn_set_state(conn, CMA_P2P_NO_MATCH);
	cma_p2p_slot_release(conn); /* out of the window's queue too */
	conn->registered = 0;
}

struct cma_p2p_conn *cma_p2p_conn_find(const struct cma_p2p_key *key)
{
	struct cma_p2p_conn *conn, *waiting = NULL, *any = NULL;
	struct cma_hnode *n;

	cma_htable_for_hash (n, &p2p_conn_table, cma_p2p_key_hash(key)) {
		conn = cma_htable_entry(n, struct cma_p2p_conn, hnode);
		if (!cma_p2p_key_equal(&conn->key, key))
			continue;
		any = conn;
		if (conn->state == CMA_P2P_WAIT_PEER &&
		    (!waiting || conn->seq < waiting->seq))
			waiting = conn;
	}
	/* Without an explicit tag, connects already paired do not count. */
	return waiting ? waiting : key->explicit_tag ? any : NULL;
}

struct cma_p2p_conn *cma_p2p_conn_next_of(struct cma_p2p_conn *conn,
					  const struct cma_p2p_ident *remote)
{
	for (conn = conn ? cma_list_next(conn, node)
			 : cma_list_first(&p2p_conns, struct cma_p2p_conn,
					  node);
	     conn; conn = cma_list_next(conn, node))
		if (!cma_p2p_ident_cmp(&conn->key.remote, remote))
			return conn;
	return NULL;
}

struct cma_p2p_conn *cma_p2p_conn_of_notice(uint64_t serial)
{
	struct cma_p2p_conn *conn;

	for (conn = cma_list_first(&p2p_conns, struct cma_p2p_conn, node); conn;
	     conn = cma_list_next(conn, node))
		if (conn->notice_serial == serial)
			return conn;
	return NULL;
}

void cma_p2p_held_refuse_if(cma_p2p_held_pred match, const void *arg,
			    enum cma_p2p_kind why)
{
	struct cma_p2p_held *h, *hnext;
	struct cma_p2p_listener *lis;

	for (lis = p2p_listeners; lis; lis = lis->next) {
		for (h = cma_p2p_held_first(lis); h; h = hnext) {
			hnext = cma_list_next(h, lnode);
			if (!match(h, arg))
				continue;
			cma_p2p_held_unlink(h);
			cma_p2p_refuse(cma_id_fd(lis->id_priv), h->handle, why,
				       &h->key);
			free(h);
		}
		cma_p2p_arm(lis);
	}
}

static bool cma_p2p_held_from(const struct cma_p2p_held *h, const void *remote)
{
	return !cma_p2p_ident_cmp(&h->key.remote, remote);
}

void cma_p2p_held_drop_from(const struct cma_p2p_ident *remote)
{
	cma_p2p_held_refuse_if(cma_p2p_held_from, remote, CMA_P2P_REJ_RETRY);
}

struct cma_p2p_listener *cma_p2p_listener_of(struct cma_timer *timer)
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

struct cma_p2p_held *cma_p2p_held_find(const struct cma_p2p_key *key)
{
	struct cma_p2p_held *h, *oldest = NULL;
	struct cma_hnode *n;

	cma_htable_for_hash (n, &p2p_held_table, cma_p2p_key_hash(key)) {
		h = cma_htable_entry(n, struct cma_p2p_held, hnode);
		if (cma_p2p_key_equal(&h->key, key) &&
		    (!oldest || h->seq < oldest->seq))
			oldest = h;
	}
	return oldest;
}

/* --- the header of a connect and of an accept ------------------------------ */

size_t cma_p2p_connect_hdr_len(const struct cma_id_private *id_priv)
{
	/* Datagram connects are never p2p (rdma_connect sends them as is). */
	return id_priv->id.qp_type == IBV_QPT_UD ? 0 : CMA_P2P_HDR_LEN;
}

size_t cma_p2p_accept_hdr_len(const struct cma_id_private *id_priv)
{
	const struct cma_p2p_conn *conn = cma_p2p_conn_of(id_priv);

	return conn && conn->from_request ? CMA_P2P_HDR_LEN : 0;
}

int cma_p2p_accept(struct cma_id_private *id_priv,
		   struct rdma_ucm_conn_param *kparam)
{
	struct cma_p2p_conn *conn = cma_p2p_conn_of(id_priv);
	struct cma_p2p_hdr rep = {.kind = CMA_P2P_REP};

	if (!conn || !conn->from_request)
		return 0; /* not a p2p request: nothing to answer in kind */
	if (cma_check_priv_len(
		    id_priv, (size_t)kparam->private_data_len + CMA_P2P_HDR_LEN,
		    CMA_PRIV_REP))
		return -1;
	rep.port = conn->req_hdr.port;
	rep.tag = conn->req_hdr.tag;
	rep.flags = conn->req_hdr.flags & CMA_P2P_F_EXPLICIT_TAG;
	rep.data_len = kparam->private_data_len;
	cma_p2p_put_hdr(kparam, &rep);
	conn->reply_p2p = true;
	return 0;
}

/* --- teardown ------------------------------------------------------------- */

void cma_p2p_detach(struct cma_id_private *id_priv)
{
	struct cma_p2p_id *p = cma_p2p_id_of(id_priv);
	struct cma_p2p_listener *lis = NULL, **pp;
	struct cma_p2p_chores c = {.n = 0};
	struct cma_p2p_notice_out notice = {0};
	struct cma_p2p_conn *conn;
	bool chores = false;
	struct cma_p2p_held *h;
	uint16_t port = 0;

	if (!p || (!p->conn && !p->listening))
		return;
	conn = p->conn;
	cma_p2p_lock();
	/*
	 * Kernel work on the id (or on its listener's fd) that runs without
	 * p2p_lock finishes first: it uses the id's handle and fd.
	 */
	while ((conn && cma_p2p_busy(&conn->busy)) ||
	       ((lis = cma_p2p_find_listener(id_priv)) &&
		cma_p2p_busy(&lis->busy)))
		cma_p2p_wait_idle();
	for (pp = &p2p_listeners; p->listening && (lis = *pp); pp = &lis->next)
		if (lis->id_priv == id_priv)
			break;
	if (lis) {
		/* Out of one list before it leads into the other (a fork). */
		CMA_FORK_PUBLISH(*pp, lis->next);
		lis->next = p2p_closing;
		CMA_FORK_PUBLISH(p2p_closing, lis);
		cma_timer_stop(&lis->timer);
		while ((h = cma_p2p_held_first(lis))) {
			cma_p2p_held_unlink(h);
			cma_p2p_held_drop(h);
		}
		port = lis->port;
	}
	if (conn) {
		cma_p2p_notice_ended(conn, &notice);
		cma_p2p_conn_unregister(conn);
		chores = cma_p2p_take_chores(conn, &c);
	}
	cma_p2p_unlock();
	if (port) /* its port's companions hear for nobody now */
		cma_p2p_companions_drop(port);
	/* Its REQs' copies must not be left to its peer (LATE COPIES). */
	cma_p2p_notice_start(&notice);
	/*
	 * Before the id's own DESTROY_ID: no event may outlive it.  Its QP
	 * is the application's to destroy now, not ours to move.
	 */
	c.qp_err = false;
	if (chores)
		cma_p2p_do_chores(conn, &c);
}

void cma_p2p_free(struct cma_id_private *id_priv)
{
	struct cma_p2p_id *p = cma_p2p_id_of(id_priv);
	struct cma_p2p_listener *lis = NULL, **pp;

	if (!p)
		return;
	cma_p2p_detach(id_priv); /* a no-op after rdma_destroy_id's */
	if (p->listening) {
		cma_p2p_lock();
		for (pp = &p2p_closing; (lis = *pp); pp = &lis->next) {
			if (lis->id_priv == id_priv) {
				CMA_FORK_PUBLISH(*pp, lis->next);
				break;
			}
		}
		cma_p2p_unlock();
	}
	/* No lock held: an expire() under way may need p2p_lock to finish. */
	if (lis) {
		cma_timer_sync(&lis->timer);
		free(lis);
	}
	if (p->conn) {
		cma_timer_sync(&p->conn->timer);
		free(p->conn);
	}
	free(p);
	id_priv->p2p = NULL;
}
