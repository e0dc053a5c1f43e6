// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * migrate ADDR [SECONDS]: rdma_migrate_id between busy channels.  Three
 * channels, each read by its own thread (poll(2), then a BLOCKING
 * rdma_get_cm_event); a listener and MG_CLIENTS clients that connect,
 * disconnect, destroy and start again, driven by whichever thread gets
 * their event; and a thread that keeps moving random ids (clients and
 * accepted ids, see below for the listener) to random channels meanwhile.  For SECONDS
 * (default 15).  Checks: every call succeeds, no client waits longer
 * than LOST_MS for its next event (lost), and all finish cleanly.
 *
 * The program's own ownership rule: an id belongs to its slot, whose
 * mutex serializes what the program does with it (handle an event,
 * migrate, destroy).  A reader acks an event BEFORE taking the slot's
 * mutex: rdma_migrate_id and rdma_destroy_id wait for acks, and the
 * migrating thread holds that mutex.  Each id's context is a handle
 * (slot, generation) that outlives the id, so an event handled after its
 * id was replaced is recognised as stale instead of touching the new id.
 *
 * The listener stays where it is: the kernel (ucma_migrate_id, Linux 6.1)
 * moves a listener's queued CONNECT_REQUESTs but not their new ids, which
 * stay on the old fd, so the library's first command on such an id fails
 * (EINVAL) and the request is lost, on rdma-core's library as on ours.
 *
 * rdma_migrate_id(3) (rdma-core's page and ours) forbids reading the id's
 * current channel while it moves: each channel has a gate, held by its
 * reader from the read to the ack and by whoever migrates or destroys an
 * id of that channel (lock order: slot, then gate).  Since nothing can
 * take an event away while the reader holds the gate, its blocking read
 * after a poll that said "readable" cannot block.
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "stress_cm.h"

#define MG_CHANNELS 3

/* rdma-core's entry points: the scenario runs on its library too. */
__asm__(".symver rdma_connect, rdma_connect@RDMACM_1.0");
__asm__(".symver rdma_accept, rdma_accept@RDMACM_1.0");
#define MG_CLIENTS 4
#define MG_SLOTS 40 /* listener, clients, then accepted ids */

enum mg_kind { MG_FREE, MG_LISTENER, MG_CLIENT, MG_CHILD };
enum mg_state { MG_IDLE, MG_RESOLVING, MG_ROUTING, MG_CONNECTING, MG_UP };

struct mg_slot {
	pthread_mutex_t mu;
	enum mg_kind kind;
	enum mg_state state;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	uint64_t gen;
	_Atomic uint64_t last_ns; /* last event: the lost-event check */
	unsigned int cycles;
};

/* An id's context: which slot, and which of its ids. */
struct mg_handle {
	struct mg_handle *next; /* all handles, freed at the end */
	struct mg_slot *slot;
	uint64_t gen;
};

struct mg_reader {
	pthread_t thread;
	struct rdma_event_channel *ch;
	pthread_mutex_t gate;
};

static struct mg_slot mg_slot[MG_SLOTS];
static struct mg_reader mg_rd[MG_CHANNELS];
static pthread_mutex_t mg_lock = PTHREAD_MUTEX_INITIALIZER; /* below */
static struct mg_handle *mg_handles;
static unsigned int mg_seed = 1;
static atomic_bool mg_stop, mg_readers_stop;
static _Atomic unsigned long mg_migrations, mg_stale;
static const char *mg_addr;
static struct sockaddr_storage mg_dst;

/* The gate of the channel @id is on (its slot's mutex held). */
static pthread_mutex_t *mg_gate(struct rdma_cm_id *id)
{
	int i;

	for (i = 0; i < MG_CHANNELS; i++)
		if (mg_rd[i].ch == id->channel)
			return &mg_rd[i].gate;
	hx_fail("an id on no channel of ours");
}

static struct rdma_event_channel *mg_any_channel(void)
{
	unsigned int i;

	pthread_mutex_lock(&mg_lock);
	i = rnd(&mg_seed, MG_CHANNELS);
	pthread_mutex_unlock(&mg_lock);
	return mg_rd[i].ch;
}

/* A new handle for @s's id, under s->mu. */
static struct mg_handle *mg_handle(struct mg_slot *s)
{
	struct mg_handle *h = calloc(1, sizeof(*h));

	if (!h)
		hx_fail("out of memory");
	h->slot = s;
	h->gen = ++s->gen;
	pthread_mutex_lock(&mg_lock);
	h->next = mg_handles;
	mg_handles = h;
	pthread_mutex_unlock(&mg_lock);
	return h;
}

/* Client slot @s (mutex held): a new id on a random channel, resolving. */
static void mg_client_start(struct mg_slot *s)
{
	s->id = new_id(mg_any_channel(), NULL);
	s->id->context = mg_handle(s);
	s->state = MG_RESOLVING;
	atomic_store(&s->last_ns, now_ns());
	if (rdma_resolve_addr(s->id, NULL, (struct sockaddr *)&mg_dst, 5000))
		hx_fail("rdma_resolve_addr: %s", strerror(errno));
}

/* Slot @s's id is done (mutex held): destroy it. */
static void mg_slot_drop(struct mg_slot *s)
{
	pthread_mutex_t *gate = mg_gate(s->id);

	pthread_mutex_lock(gate);
	drop_id(s->id, s->cq);
	pthread_mutex_unlock(gate);
	s->id = NULL;
	s->cq = NULL;
	s->gen++;
	s->state = MG_IDLE;
}

static struct mg_slot *mg_child_slot(void)
{
	int i;

	for (i = 1 + MG_CLIENTS; i < MG_SLOTS; i++) {
		pthread_mutex_lock(&mg_slot[i].mu);
		if (mg_slot[i].kind == MG_FREE) {
			mg_slot[i].kind = MG_CHILD;
			return &mg_slot[i]; /* locked */
		}
		pthread_mutex_unlock(&mg_slot[i].mu);
	}
	hx_fail("more than %d accepted ids at once", MG_SLOTS - 1 - MG_CLIENTS);
}

/* A CONNECT_REQUEST's new id: a slot of its own, a QP, accepted. */
static void mg_accept(struct rdma_cm_id *id)
{
	struct mg_slot *s = mg_child_slot();
	struct rdma_conn_param p = conn_param(NULL, 0, 0);

	s->id = id;
	id->context = mg_handle(s);
	s->cq = make_qp(id);
	s->state = MG_CONNECTING;
	if (rdma_accept(id, &p))
		hx_fail("rdma_accept: %s", strerror(errno));
	pthread_mutex_unlock(&s->mu);
}

static void mg_client_event(struct mg_slot *s, enum rdma_cm_event_type type,
			    int status)
{
	struct rdma_conn_param p;

	atomic_store(&s->last_ns, now_ns());
	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		s->state = MG_ROUTING;
		if (rdma_resolve_route(s->id, 5000))
			hx_fail("rdma_resolve_route: %s", strerror(errno));
		return;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		s->cq = make_qp(s->id);
		s->state = MG_CONNECTING;
		p = conn_param(NULL, 0, 0);
		if (rdma_connect(s->id, &p))
			hx_fail("rdma_connect: %s", strerror(errno));
		return;
	case RDMA_CM_EVENT_ESTABLISHED:
		s->state = MG_UP;
		if (rdma_disconnect(s->id))
			hx_fail("rdma_disconnect: %s", strerror(errno));
		return;
	case RDMA_CM_EVENT_DISCONNECTED:
		mg_slot_drop(s);
		s->cycles++;
		if (!atomic_load(&mg_stop))
			mg_client_start(s);
		return;
	default:
		hx_fail("client %ld: %s status %d", (long)(s - mg_slot),
			rdma_event_str(type), status);
	}
}

static void mg_child_event(struct mg_slot *s, enum rdma_cm_event_type type,
			   int status)
{
	switch (type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		s->state = MG_UP;
		return;
	case RDMA_CM_EVENT_DISCONNECTED:
		mg_slot_drop(s);
		s->kind = MG_FREE;
		return;
	default:
		hx_fail("accepted id: %s status %d", rdma_event_str(type),
			status);
	}
}

/* Handle one acked event of handle @h's id. */
static void mg_dispatch(struct mg_handle *h, enum rdma_cm_event_type type,
			int status)
{
	struct mg_slot *s = h->slot;

	pthread_mutex_lock(&s->mu);
	if (s->gen != h->gen || !s->id) {
		atomic_fetch_add(&mg_stale, 1);
	} else if (s->kind == MG_CLIENT) {
		mg_client_event(s, type, status);
	} else if (s->kind == MG_CHILD) {
		mg_child_event(s, type, status);
	} else {
		hx_fail("listener: %s status %d", rdma_event_str(type), status);
	}
	pthread_mutex_unlock(&s->mu);
}

static void *mg_reader_main(void *arg)
{
	struct mg_reader *r = arg;
	struct pollfd pfd = {.fd = r->ch->fd, .events = POLLIN};
	enum rdma_cm_event_type type;
	struct rdma_cm_event *e;
	struct rdma_cm_id *id;
	struct mg_handle *h;
	int status;

	while (!atomic_load(&mg_readers_stop)) {
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		pthread_mutex_lock(&r->gate);
		/* Still readable: an id may have moved away with its event. */
		if (poll(&pfd, 1, 0) <= 0) {
			pthread_mutex_unlock(&r->gate);
			continue;
		}
		if (rdma_get_cm_event(r->ch, &e)) /* blocking */
			hx_fail("rdma_get_cm_event: %s", strerror(errno));
		type = e->event;
		status = e->status;
		id = e->id;
		h = id->context;
		rdma_ack_cm_event(e);
		pthread_mutex_unlock(&r->gate);
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST)
			mg_accept(id); /* a new id, ours from now on */
		else if (type != RDMA_CM_EVENT_TIMEWAIT_EXIT)
			mg_dispatch(h, type, status);
	}
	return NULL;
}

static void *mg_migrator_main(void *arg)
{
	unsigned int seed = 7;
	struct mg_slot *s;

	(void)arg;
	while (!atomic_load(&mg_readers_stop)) {
		s = &mg_slot[1 +
			     rnd(&seed, MG_SLOTS - 1)]; /* not the listener */
		pthread_mutex_lock(&s->mu);
		if (s->id) {
			pthread_mutex_t *gate = mg_gate(s->id);

			pthread_mutex_lock(gate);
			if (rdma_migrate_id(s->id,
					    mg_rd[rnd(&seed, MG_CHANNELS)].ch))
				hx_fail("rdma_migrate_id: %s", strerror(errno));
			pthread_mutex_unlock(gate);
			atomic_fetch_add(&mg_migrations, 1);
		}
		pthread_mutex_unlock(&s->mu);
		if (!rnd(&seed, 4))
			sleep_ms(1);
	}
	return NULL;
}

/* No client may wait longer than LOST_MS for its next event. */
static void mg_check_lost(void)
{
	uint64_t now = now_ns(), last;
	int i;

	for (i = 1; i <= MG_CLIENTS; i++) {
		pthread_mutex_lock(&mg_slot[i].mu);
		last = atomic_load(&mg_slot[i].last_ns);
		if (mg_slot[i].id &&
		    now > last + (uint64_t)LOST_MS * 1000000ull)
			hx_fail("client %d: no event for %d ms in state %d "
				"(lost)",
				i, LOST_MS, (int)mg_slot[i].state);
		pthread_mutex_unlock(&mg_slot[i].mu);
	}
}

static bool mg_all_idle(void)
{
	bool idle = true;
	int i;

	for (i = 1; i < MG_SLOTS; i++) {
		pthread_mutex_lock(&mg_slot[i].mu);
		if (mg_slot[i].id)
			idle = false;
		pthread_mutex_unlock(&mg_slot[i].mu);
	}
	return idle;
}

static void mg_setup(void)
{
	struct sockaddr_storage ss;
	int i;

	for (i = 0; i < MG_SLOTS; i++)
		pthread_mutex_init(&mg_slot[i].mu, NULL);
	for (i = 0; i < MG_CHANNELS; i++) {
		mg_rd[i].ch = channel(false);
		pthread_mutex_init(&mg_rd[i].gate, NULL);
	}
	mg_slot[0].kind = MG_LISTENER;
	mg_slot[0].id =
		listen_on(mg_rd[0].ch, sa_port(mg_addr, 0, &ss), -1, 16);
	mg_slot[0].id->context = mg_handle(&mg_slot[0]);
	sa_port(mg_addr, ntohs(rdma_get_src_port(mg_slot[0].id)), &mg_dst);
}

static void mg_teardown(void)
{
	struct mg_handle *h;
	int i;

	for (i = 0; i < MG_CHANNELS; i++)
		pthread_join(mg_rd[i].thread, NULL);
	drop_id(mg_slot[0].id, NULL);
	for (i = 0; i < MG_CHANNELS; i++)
		rdma_destroy_event_channel(mg_rd[i].ch);
	while ((h = mg_handles)) {
		mg_handles = h->next;
		free(h);
	}
}

int run_migrate(int argc, char **argv)
{
	unsigned int cycles = 0;
	pthread_t migrator;
	uint64_t end;
	int i, secs;

	if (argc < 2)
		hx_fail("usage: migrate ADDR [SECONDS]");
	mg_addr = argv[1];
	secs = arg_int(argc, argv, 2, 15, 1, 3600);
	hx_stage("setup");
	mg_setup();
	for (i = 0; i < MG_CHANNELS; i++)
		start_thread(&mg_rd[i].thread, mg_reader_main, &mg_rd[i]);
	start_thread(&migrator, mg_migrator_main, NULL);
	for (i = 1; i <= MG_CLIENTS; i++) {
		pthread_mutex_lock(&mg_slot[i].mu);
		mg_slot[i].kind = MG_CLIENT;
		mg_client_start(&mg_slot[i]);
		pthread_mutex_unlock(&mg_slot[i].mu);
	}
	hx_stage("connecting and migrating for %d s", secs);
	end = now_ns() + (uint64_t)secs * 1000000000ull;
	while (now_ns() < end) {
		sleep_ms(250);
		mg_check_lost();
	}
	atomic_store(&mg_stop, true);
	hx_stage("draining: the last cycles finish");
	while (!mg_all_idle()) {
		sleep_ms(100);
		mg_check_lost();
	}
	atomic_store(&mg_readers_stop, true);
	pthread_join(migrator, NULL);
	mg_teardown();
	for (i = 1; i <= MG_CLIENTS; i++) {
		if (!mg_slot[i].cycles)
			hx_fail("client %d formed no connection", i);
		cycles += mg_slot[i].cycles;
	}
	hx_note("%u connections, %lu migrations, %lu stale events", cycles,
		atomic_load(&mg_migrations), atomic_load(&mg_stale));
	return 0;
}
