// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * p2p_churn ADDR1 ADDR2 [SECONDS]: peer-to-peer ids destroyed while their
 * events are delivered and their timers fire (rdma_cm_p2p(7)).
 *
 * X, on ADDR1: a p2p listener (RDMA_OPTION_ID_PEER2PEER = 1) on PC_XPORT
 * plus one or two p2p connects towards Y (explicit tags 1..4), all on
 * channel CX, which a reader thread reads.  The main thread destroys and
 * re-creates them, over and over (mostly after 0-300 ms, sometimes after
 * 1.5-3.5 s so that hold checks and connect timers fire), in a random
 * order, while the reader is delivering their events.
 *
 * Y, on ADDR2: one p2p listener on PC_YPORT (its own channel and reader)
 * and PC_SENDERS threads, each with its own channel, making p2p connects
 * (tags 1..4) to X one after the other: a stream of p2p requests that X
 * holds, adopts, crosses with its own, or refuses, and whose listener
 * vanishes under them.  Half of those ids set RDMA_OPTION_ID_PEER2PEER
 * before resolving: their route is left for later, and resolved while
 * the connect runs when a REQ of theirs must go out.  Half of X's do too:
 * X is the lower end, so they take their device from X's listener and
 * learn the rest of their route at ROUTE_RESOLVED, then migrate to CX
 * and meet the reader thread there.
 *
 * Checks: every call succeeds; every Y connect ends (ESTABLISHED,
 * REJECTED, UNREACHABLE, or CONNECT_ERROR when X destroyed its id between
 * its answer and Y's RTU, as with rdma-core) within rdma_cm_p2p(7)'s
 * bound, 2 x RDMA_CM_P2P_HOLD_MS + 2 s, plus LOST_MS; an established one
 * hears DISCONNECTED; no event names an id after its destruction (the
 * sanitizers, and a magic number in the id's context); some connections
 * form.  Run with a short RDMA_CM_P2P_HOLD_MS (stress-in-guest.sh: 500).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dlvsym */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "stress_cm.h"

/* Every other call at rdma-core's versions. */
__asm__(".symver rdma_accept, rdma_accept@RDMACM_1.0");

#define PC_XPORT 7710
#define PC_YPORT 7711
#define PC_SENDERS 3
#define PC_TAGS 4
#define PC_MAGIC 0x70326332u

/* An X connect: its context, freed right after rdma_destroy_id. */
struct pc_conn {
	unsigned int magic;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
};

struct pc_reader {
	pthread_t thread;
	struct rdma_event_channel *ch;
	const char *who;
};

struct pc_sender {
	pthread_t thread;
	int idx;
};

static const char *pc_a1, *pc_a2;
static atomic_bool pc_stop, pc_readers_stop;
static _Atomic unsigned long pc_events[RDMA_CM_EVENT_ADDRINFO_ERROR + 1];
static _Atomic unsigned long pc_x_est, pc_y_est, pc_y_rej, pc_y_unr, pc_y_err,
	pc_y_conns, pc_surfaced;
static unsigned int pc_bound_ms;

/* The bound on a p2p connect from rdma_cm_p2p(7), plus LOST_MS. */
static unsigned int pc_connect_bound_ms(void)
{
	const char *v = getenv("RDMA_CM_P2P_HOLD_MS");
	unsigned long hold = v && *v ? strtoul(v, NULL, 10) : 10000;

	if (!hold)
		hold = 10000;
	return (unsigned int)(2 * hold + 2000 + LOST_MS);
}

/*
 * The fork's rdma_connect, which reads peer2peer_mode, looked up at run
 * time: bound at link time, it would keep the whole program from loading
 * on rdma-core's library, where the other scenarios run too.
 */
static int (*pc_connect)(struct rdma_cm_id *id, struct rdma_conn_param *p);

static void pc_count(enum rdma_cm_event_type type)
{
	if ((unsigned int)type <= RDMA_CM_EVENT_ADDRINFO_ERROR)
		atomic_fetch_add(&pc_events[type], 1);
}

/*
 * A reader of X's or Y's listener channel.  It only looks at the event
 * (and the id's context, alive until the ack: rdma_destroy_id waits for
 * it); the ids are the main thread's.
 */
static void *pc_reader_main(void *arg)
{
	struct pc_reader *r = arg;
	struct rdma_cm_event *e;
	struct pc_conn *c;

	while (!atomic_load(&pc_readers_stop)) {
		e = next_event(r->ch, 100);
		if (!e)
			continue;
		pc_count(e->event);
		c = e->id->context;
		if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			/* A p2p listener never reports a p2p request. */
			struct rdma_cm_id *id = e->id;

			atomic_fetch_add(&pc_surfaced, 1);
			hx_note("%s: CONNECT_REQUEST, peer2peer_mode %u, "
				"%u bytes of private data, from port %u",
				r->who, e->param.conn.peer2peer_mode,
				e->param.conn.private_data_len,
				ntohs(rdma_get_dst_port(id)));
			rdma_ack_cm_event(e);
			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
			continue;
		}
		if (c && c->magic != PC_MAGIC)
			hx_fail("%s: %s on an id whose context is gone", r->who,
				rdma_event_str(e->event));
		if (c && e->event == RDMA_CM_EVENT_ESTABLISHED)
			atomic_fetch_add(&pc_x_est, 1);
		rdma_ack_cm_event(e);
	}
	return NULL;
}

static void pc_set_tag(struct rdma_cm_id *id, uint64_t tag)
{
	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_P2P_TAG, &tag,
			    sizeof(tag)))
		hx_fail("RDMA_OPTION_ID_P2P_TAG: %s", strerror(errno));
}

/* Wait for the end of an established Y connect: DISCONNECTED. */
static void pc_sender_disconnect(struct rdma_event_channel *ch,
				 struct rdma_cm_id *id)
{
	struct rdma_cm_event *e;

	if (rdma_disconnect(id) && errno != EINVAL)
		hx_fail("rdma_disconnect: %s", strerror(errno));
	for (;;) {
		e = next_event(ch, LOST_MS);
		if (!e)
			hx_fail("sender: no DISCONNECTED within %d ms (lost)",
				LOST_MS);
		pc_count(e->event);
		if (e->event == RDMA_CM_EVENT_DISCONNECTED) {
			rdma_ack_cm_event(e);
			return;
		}
		if (e->event != RDMA_CM_EVENT_TIMEWAIT_EXIT)
			hx_fail("sender: %s status %d after ESTABLISHED",
				rdma_event_str(e->event), e->status);
		rdma_ack_cm_event(e);
	}
}

/* One Y connect to X, to its end. */
static void pc_sender_connect(struct rdma_event_channel *ch, unsigned int *seed)
{
	struct sockaddr_storage src, dst;
	struct rdma_conn_param p = conn_param("y", 2, 1);
	struct rdma_cm_event *e;
	struct rdma_cm_id *id = new_id(ch, NULL);
	enum rdma_cm_event_type type;
	struct ibv_cq *cq;
	int status, on = 1;

	/*
	 * Half of them say before resolving that they will connect in p2p
	 * mode: Y is the higher end, so their route is left for later
	 * (rdma_cm_p2p(7)), resolved only if a REQ of theirs must go out.
	 */
	if (rnd(seed, 2) &&
	    rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_PEER2PEER, &on,
			    sizeof(on)))
		hx_fail("set PEER2PEER: %s", strerror(errno));
	resolve(ch, id, sa_port(pc_a2, 0, &src),
		sa_port(pc_a1, PC_XPORT, &dst));
	cq = make_qp(id);
	pc_set_tag(id, 1 + rnd(seed, PC_TAGS));
	if (pc_connect(id, &p))
		hx_fail("p2p rdma_connect: %s", strerror(errno));
	atomic_fetch_add(&pc_y_conns, 1);
	e = next_event(ch, (int)pc_bound_ms);
	if (!e)
		hx_fail("sender: a p2p connect had no outcome within %u ms "
			"(lost)",
			pc_bound_ms);
	type = e->event;
	status = e->status;
	pc_count(type);
	rdma_ack_cm_event(e);
	switch (type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		atomic_fetch_add(&pc_y_est, 1);
		pc_sender_disconnect(ch, id);
		break;
	case RDMA_CM_EVENT_REJECTED:
		atomic_fetch_add(&pc_y_rej, 1);
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
		atomic_fetch_add(&pc_y_unr, 1);
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		atomic_fetch_add(&pc_y_err, 1);
		break;
	default:
		hx_fail("sender: p2p connect ended with %s status %d",
			rdma_event_str(type), status);
	}
	drop_id(id, cq);
}

static void *pc_sender_main(void *arg)
{
	struct pc_sender *s = arg;
	struct rdma_event_channel *ch = channel(true);
	unsigned int seed = 100 + (unsigned int)s->idx;

	while (!atomic_load(&pc_stop))
		pc_sender_connect(ch, &seed);
	rdma_destroy_event_channel(ch);
	return NULL;
}

/* An X connect towards Y's listener: resolved on @rch, connected on @cx. */
static struct pc_conn *pc_x_connect(struct rdma_event_channel *rch,
				    struct rdma_event_channel *cx,
				    unsigned int *seed)
{
	struct pc_conn *c = calloc(1, sizeof(*c));
	struct rdma_conn_param p = conn_param("x", 2, 1);
	struct sockaddr_storage src, dst;
	int on = 1;

	if (!c)
		hx_fail("out of memory");
	c->magic = PC_MAGIC;
	c->id = new_id(rch, c);
	if (rnd(seed, 2) &&
	    rdma_set_option(c->id, RDMA_OPTION_ID, RDMA_OPTION_ID_PEER2PEER,
			    &on, sizeof(on)))
		hx_fail("set PEER2PEER: %s", strerror(errno));
	resolve(rch, c->id, sa_port(pc_a1, 0, &src),
		sa_port(pc_a2, PC_YPORT, &dst));
	c->cq = make_qp(c->id);
	/* From here on the reader thread gets its events. */
	if (rdma_migrate_id(c->id, cx))
		hx_fail("rdma_migrate_id: %s", strerror(errno));
	pc_set_tag(c->id, 1 + rnd(seed, PC_TAGS));
	if (pc_connect(c->id, &p))
		hx_fail("X p2p rdma_connect: %s", strerror(errno));
	return c;
}

static void pc_x_drop(struct pc_conn *c)
{
	drop_id(c->id, c->cq);
	c->magic = 0;
	free(c);
}

/* One life of X: listener and connects, then all destroyed. */
static void pc_x_round(struct rdma_event_channel *cx,
		       struct rdma_event_channel *rch, unsigned int *seed)
{
	struct pc_conn *c[2] = {NULL, NULL};
	struct sockaddr_storage ss;
	struct rdma_cm_id *ls;
	int i, n = 1 + (int)rnd(seed, 2);
	bool listener_first = rnd(seed, 2);

	ls = listen_on(cx, sa_port(pc_a1, PC_XPORT, &ss), 1, 64);
	for (i = 0; i < n; i++)
		c[i] = pc_x_connect(rch, cx, seed);
	sleep_ms(rnd(seed, 10) < 2 ? 1500 + rnd(seed, 2000) : rnd(seed, 300));
	if (listener_first)
		drop_id(ls, NULL);
	for (i = 0; i < n; i++)
		pc_x_drop(c[i]);
	if (!listener_first)
		drop_id(ls, NULL);
}

int run_p2p_churn(int argc, char **argv)
{
	struct pc_reader xr = {.who = "X"}, yr = {.who = "Y listener"};
	struct pc_sender s[PC_SENDERS];
	struct rdma_event_channel *rch;
	struct sockaddr_storage ss;
	unsigned int seed = 1, rounds = 0;
	struct rdma_cm_id *yls;
	uint64_t end;
	int i, secs;

	if (argc < 3)
		hx_fail("usage: p2p_churn ADDR1 ADDR2 [SECONDS]");
	pc_a1 = argv[1];
	pc_a2 = argv[2];
	secs = arg_int(argc, argv, 3, 20, 1, 3600);
	pc_bound_ms = pc_connect_bound_ms();
	pc_connect = dlvsym(RTLD_DEFAULT, "rdma_connect", "RDMACM_FORK_1.0");
	if (!pc_connect)
		hx_skip("no peer-to-peer mode in this librdmacm");
	hx_stage("setup");
	xr.ch = channel(true);
	yr.ch = channel(true);
	rch = channel(false);
	yls = listen_on(yr.ch, sa_port(pc_a2, PC_YPORT, &ss), 1, 64);
	start_thread(&xr.thread, pc_reader_main, &xr);
	start_thread(&yr.thread, pc_reader_main, &yr);
	for (i = 0; i < PC_SENDERS; i++) {
		s[i].idx = i;
		start_thread(&s[i].thread, pc_sender_main, &s[i]);
	}
	hx_stage("X destroyed and re-created for %d s", secs);
	end = now_ns() + (uint64_t)secs * 1000000000ull;
	while (now_ns() < end) {
		pc_x_round(xr.ch, rch, &seed);
		rounds++;
	}
	hx_stage("the senders' last connects end");
	atomic_store(&pc_stop, true);
	for (i = 0; i < PC_SENDERS; i++)
		pthread_join(s[i].thread, NULL);
	atomic_store(&pc_readers_stop, true);
	pthread_join(xr.thread, NULL);
	pthread_join(yr.thread, NULL);
	drop_id(yls, NULL);
	rdma_destroy_event_channel(rch);
	rdma_destroy_event_channel(xr.ch);
	rdma_destroy_event_channel(yr.ch);
	hx_note("%u X lives; %lu Y connects: %lu established (X saw %lu), "
		"%lu rejected, %lu unreachable, %lu connect errors; "
		"%lu requests surfaced",
		rounds, atomic_load(&pc_y_conns), atomic_load(&pc_y_est),
		atomic_load(&pc_x_est), atomic_load(&pc_y_rej),
		atomic_load(&pc_y_unr), atomic_load(&pc_y_err),
		atomic_load(&pc_surfaced));
	if (!atomic_load(&pc_y_est) && !atomic_load(&pc_x_est))
		hx_fail("no p2p connection formed");
	if (atomic_load(&pc_surfaced))
		hx_fail("a p2p listener reported %lu p2p requests",
			atomic_load(&pc_surfaced));
	return 0;
}
