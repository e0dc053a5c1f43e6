// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// FUZZ_SOURCES: @library !src/cm/timer.c tests/unit/fake_ucma.c tests/unit/fake_verbs.c
/*
 * The peer-to-peer state machine (rdma_cm_p2p(7)) on both sides, driven
 * by fuzzer-chosen sequences through the fake kernel device
 * (tests/unit/fake_ucma.h) and the fake verbs device: peers' requests to
 * our listener (with a p2p header, a plain one, or raw private data),
 * our own p2p connects, kernel events on any kernel id (REJECTED with or
 * without the p2p REJ header, CONNECT_RESPONSE with or without the REP
 * header, ESTABLISHED, DISCONNECTED, errors), time passing (the monotonic
 * clock is the harness's, so hold and connect timers expire on demand),
 * headers of either version (1: 16 bytes; 3: 24, with an incarnation and
 * a REQ number), numbered requests from an IB QP or unnumbered ones,
 * peers' NOTICEs to our companion listener naming their REQs dead, our
 * own NOTICEs after a stale-connection refusal (any event on the
 * NOTICE's kernel id, with or without an ANSWER), stale refusals,
 * the application accepting, rejecting, disconnecting and destroying ids
 * (the listener too), and commands the kernel fails (through the fake's
 * hook).  Everything the library delivers must name an id the application
 * knows, with readable private data; every event is acked, every id
 * destroyed at the end, and nothing may hang or leak.
 *
 * Timers: the library runs them in a service thread (src/cm/timer.c), which
 * would make runs depend on scheduling.  This target is built without
 * timer.c and serves its interface itself: armed timers sit in a list by
 * deadline, and due ones are expired one at a time, with no lock held,
 * from this thread (when time passes and before each pump), as the
 * service thread would.  Within an input, CLOCK_MONOTONIC is virtual (a
 * fixed start plus what the input lets pass), so an input always replays
 * the same way.  Races between the thread and the application are the
 * stress suites' (TSan), not this target's.
 *
 * Input: a flags byte (the listener's RDMA_OPTION_ID_PEER2PEER: bit 0
 * set it, bit 1 its value), then operations: a byte (mod 8) and its
 * arguments (see the op_* functions).  We are 192.0.2.3:7471, the peers
 * 192.0.2.2 to .4: a crossing with .2 is lost, with .4 won, with .3 decided
 * by port.
 */
#include <config.h>

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cm/cma.h"
#include "cm/test_hooks.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "p2p/p2p_table.h"
#include "p2p/p2p_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PORT 7471
#define MAX_IDS 48

static struct {
	const uint8_t *p;
	size_t left;
} in;

static uint8_t take8(void)
{
	uint8_t v = 0;

	if (in.left) {
		v = *in.p++;
		in.left--;
	}
	return v;
}

/* --- the clock: virtual while an input runs ---------------------------- */

#define CLOCK_START_NS (1000ull * 1000000000ull) /* any fixed time */

static uint64_t skew_ns;
/*
 * Only this thread, only inside LLVMFuzzerTestOneInput: libFuzzer's own
 * clock readings (its time limits) stay real.
 */
static __thread bool in_input;

int clock_gettime(clockid_t clk, struct timespec *ts)
{
	uint64_t ns = CLOCK_START_NS + skew_ns;

	if ((clk != CLOCK_MONOTONIC && clk != CLOCK_MONOTONIC_COARSE) ||
	    !in_input)
		return (int)syscall(SYS_clock_gettime, clk, ts);
	ts->tv_sec = (time_t)(ns / 1000000000ull);
	ts->tv_nsec = (long)(ns % 1000000000ull);
	return 0;
}

/* --- the timer service (src/cm/timer.c's interface), run from this thread --- */

static struct cma_timer *timers; /* armed, earliest first */

uint64_t cma_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One virtual clock: coarse and precise are the same here. */
uint64_t cma_now_coarse_ns(void)
{
	return cma_now_ns();
}

/* Timers run from this thread (below): there is no thread to start. */
void cma_timer_prestart(void)
{
}

static void timer_unlink(struct cma_timer *timer)
{
	struct cma_timer **pp;

	for (pp = &timers; *pp; pp = &(*pp)->next) {
		if (*pp == timer) {
			*pp = timer->next;
			break;
		}
	}
	timer->next = NULL;
	timer->armed = false;
}

void cma_timer_start(struct rdma_event_channel *channel,
		     struct cma_timer *timer, unsigned int ms)
{
	struct cma_timer **pp;

	/* As timer.c: the channel must wake for posts from the thread. */
	cma_channel_expect_posts(channel);
	if (timer->armed)
		timer_unlink(timer);
	timer->deadline_ns = cma_now_ns() + (uint64_t)ms * 1000000ull;
	for (pp = &timers; *pp; pp = &(*pp)->next)
		if ((*pp)->deadline_ns > timer->deadline_ns)
			break;
	timer->next = *pp;
	*pp = timer;
	timer->armed = true;
}

void cma_timer_stop(struct cma_timer *timer)
{
	if (timer->armed)
		timer_unlink(timer);
}

/* Nothing runs concurrently here: an expire() under way is the caller. */
void cma_timer_sync(struct cma_timer *timer)
{
	if (timer->armed)
		timer_unlink(timer);
}

/* Expire every due timer, earliest first, as the service thread would. */
static void run_timers(void)
{
	struct cma_timer *timer;
	unsigned int n = 0;

	while (timers && timers->deadline_ns <= cma_now_ns()) {
		if (++n > 10000)
			abort(); /* a timer that re-arms itself due: a livelock */
		timer = timers;
		timers = timer->next;
		timer->next = NULL;
		timer->armed = false;
		timer->running = true;
		timer->runner = pthread_self();
		timer->expire(timer);
		timer->running = false;
	}
}

/*
 * The service thread's other work, serving channels (channel.c), is kept
 * off: every channel stays on the direct path (RDMA_CM_SERVE=0, through
 * the environment cma_env reads), so that this one thread runs it all.
 * The served path is channel_test's.
 */
char *secure_getenv(const char *name)
{
	if (!strcmp(name, "RDMA_CM_SERVE"))
		return (char *)"0";
	return getenv(name);
}

int cma_service_add(struct rdma_event_channel *channel, int kfd)
{
	(void)channel;
	(void)kfd;
	abort(); /* a channel was served after all */
}

/* The library's own channel (p2p_notice.c): pump() reads it. */
int cma_service_add_handler(struct rdma_event_channel *channel, int fd,
			    bool (*handle)(struct rdma_event_channel *channel))
{
	(void)channel;
	(void)fd;
	(void)handle;
	return 0;
}

void cma_service_remove(struct rdma_event_channel *channel, int kfd)
{
	(void)channel;
	(void)kfd;
}

void cma_service_recheck(struct rdma_event_channel *channel)
{
	(void)channel;
}

void cma_service_stop(void)
{
}

void cma_service_settle(void)
{
}

/* --- the kernel: the fake's model, with failures on demand -------------- */

static uint32_t fail_cmd = UINT32_MAX;
static int fail_err;

static int kernel(const struct fake_cmd *cmd, void *resp, size_t len)
{
	if (cmd->cmd != fail_cmd)
		return FAKE_UCMA_MODEL;
	fail_cmd = UINT32_MAX;
	return fail_err;
}

/* --- the application's ids ----------------------------------------------- */

static struct rdma_event_channel *ch;
static struct rdma_cm_id *listener;
static struct rdma_cm_id *ids[MAX_IDS]; /* connects and surfaced requests */
static bool surfaced[MAX_IDS];
static unsigned int nids;
static unsigned long sink;

static int find_id(const struct rdma_cm_id *id)
{
	unsigned int i;

	for (i = 0; i < nids; i++)
		if (ids[i] == id)
			return (int)i;
	return -1;
}

static void add_id(struct rdma_cm_id *id, bool request)
{
	if (nids == MAX_IDS) {
		/* A destroy the kernel failed: again, the kernel willing. */
		if (rdma_destroy_id(id)) {
			fail_cmd = UINT32_MAX;
			if (rdma_destroy_id(id))
				abort();
		}
		return;
	}
	surfaced[nids] = request;
	ids[nids++] = id;
}

/* A destroy the kernel failed leaves the id to the application. */
static void drop_id(unsigned int i)
{
	struct rdma_cm_id *id = ids[i];

	if (id->qp)
		rdma_destroy_qp(id);
	if (rdma_destroy_id(id))
		return;
	ids[i] = ids[--nids];
	surfaced[i] = surfaced[nids];
}

static bool readable(void)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};

	return poll(&pfd, 1, 0) == 1;
}

/* Read and ack whatever the application is given; check each event. */
static void pump(void)
{
	struct rdma_cm_event *ev;
	int n;

	run_timers();
	cma_p2p_verify_serve_now(); /* as the service thread would */
	/*
	 * As an application does: poll, then read.  An empty read costs the
	 * channel a timerfd re-arm, most of what a pump did; the fd's
	 * "not readable => no event" is checked at teardown.
	 */
	for (n = 0; n < 1000 && readable() && !rdma_get_cm_event(ch, &ev);
	     n++) {
		const struct rdma_conn_param *c = &ev->param.conn;
		struct rdma_cm_id *new_id = NULL;
		uint8_t i;

		if (!ev->id)
			abort();
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			if (ev->listen_id != listener || find_id(ev->id) >= 0 ||
			    ev->id == listener)
				abort();
			new_id = ev->id;
		} else if (ev->id != listener && find_id(ev->id) < 0) {
			abort(); /* an event for an id the application lost */
		}
		if (c->private_data_len && !c->private_data)
			abort();
		for (i = 0; c->private_data && i < c->private_data_len; i++)
			sink += ((const uint8_t *)c->private_data)[i];
		if (rdma_ack_cm_event(ev))
			abort();
		if (new_id)
			add_id(new_id, true);
	}
}

static uint32_t kid_of(struct rdma_cm_id *id)
{
	return cma_id_priv(id)->handle;
}

static struct sockaddr_in ipv4(uint8_t last, uint16_t port)
{
	struct sockaddr_in a;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(0xc0000200u | last); /* 192.0.2.last */
	return a;
}

static struct ibv_qp_init_attr qp_attr(void)
{
	struct ibv_qp_init_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	return a;
}

/* --- operations ----------------------------------------------------------- */

/*
 * Private data: a p2p header of @kind (0: none), then @n bytes.  A REQ,
 * NOTICE or ANSWER names REQ @number (NOTICE, ANSWER: from QP @tag).
 */
static uint8_t put_pdata(uint8_t *pd, uint8_t kind, uint8_t flags,
			 uint16_t port, uint64_t tag, uint32_t number)
{
	bool asks = kind == CMA_P2P_NOTICE || kind == CMA_P2P_ANSWER;
	struct cma_p2p_hdr hdr = {.kind = kind,
				  .flags = flags,
				  .port = port,
				  .tag = asks ? 0 : tag,
				  .qpn = asks ? (uint32_t)tag : 0,
				  .number = number,
				  .data_len = 0};
	uint8_t len = 0, b;

	if (kind == 0xff) { /* raw: the fuzzer's bytes */
		len = take8() % 57;
		while (len && in.left < len)
			len--;
		memcpy(pd, in.p, len);
		in.p += len;
		in.left -= len;
		return len;
	}
	if (kind) {
		/* b: data length, bit 3 version 1, bits 4-5 the incarnation */
		b = take8();
		hdr.data_len = asks ? 0 : b % 8;
		hdr.len = b & 8 ? CMA_P2P_HDR_LEN_V1 : CMA_P2P_HDR_LEN;
		hdr.incarnation = (b >> 4) & 3; /* 0: not stated */
		if (kind != CMA_P2P_REQ && !asks)
			hdr.number = 0;
		len = (uint8_t)(cma_p2p_hdr_encode(&hdr, pd) + hdr.data_len);
	}
	return len;
}

/* A datagram listener of the library's own (its companion), or 0. */
static uint32_t companion_kid(void)
{
	const struct fake_kid *k;
	uint32_t h;

	for (h = 1; h <= 64; h++) {
		k = fake_ucma_kid(h);
		if (k && k->live && k->listening && k->ps == RDMA_PS_UDP)
			return h;
	}
	return 0;
}

/*
 * op 0: a peer's request to our listener.  a: sender and header kind; c:
 * from an IB QP or not (iWARP's), numbered or not; or a peer's NOTICE to
 * our companion listener naming its REQs from that QP dead up to a number.
 */
static void op_peer_req(void)
{
	uint8_t a = take8(), b = take8(), c = take8();
	struct sockaddr_in from = ipv4(2 + (a & 3) % 3, 40000 + (b & 7));
	struct rdma_ucm_event_resp *r;
	uint32_t child = 0;
	uint8_t kind;

	if ((c & 0xc0) == 0xc0 && companion_kid()) {
		r = fake_ucma_conn_req(companion_kid(), &child);
		if (!r)
			return;
		r->param.ud.private_data_len =
			put_pdata(r->param.ud.private_data,
				  a & 0x80 ? 0xff : CMA_P2P_NOTICE, 0, PORT,
				  0x99, (c >> 2) & 7);
		memcpy(&fake_ucma_kid(child)->dst, &from, sizeof(from));
		return;
	}
	if (!listener)
		return;
	switch ((a >> 2) & 3) {
	case 0:
	case 1:
		kind = CMA_P2P_REQ;
		break;
	case 2:
		kind = 0; /* a plain request */
		break;
	default:
		kind = 0xff;
		break;
	}
	r = fake_ucma_conn_req(kid_of(listener), &child);
	if (!r)
		return;
	r->param.conn.private_data_len = put_pdata(
		r->param.conn.private_data, kind, (a >> 2) & 1 ? 1 : 0,
		(uint16_t)(PORT + ((b >> 3) & 1)), (b >> 4) & 3,
		c & 2 ? ((c >> 2) & 7) + 1u : 0);
	r->param.conn.responder_resources = 4;
	r->param.conn.initiator_depth = 4;
	r->param.conn.qp_num = c & 1 ? 0x99 : 0;
	memcpy(&fake_ucma_kid(child)->dst, &from, sizeof(from));
}

/* op 1: our p2p connect.  a: peer, whether it sets a tag, which. */
static void op_connect(void)
{
	uint8_t a = take8();
	struct sockaddr_in src = ipv4(3, 0), dst = ipv4(2 + (a & 3) % 3, PORT);
	struct ibv_qp_init_attr attr = qp_attr();
	struct rdma_conn_param p = {.responder_resources = 1,
				    .initiator_depth = 1,
				    .private_data = "mine",
				    .private_data_len = 4,
				    .peer2peer_mode = 1};
	struct rdma_cm_id *id;
	uint64_t tag = (a >> 3) & 3;

	if (nids == MAX_IDS || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return;
	add_id(id, false);
	if ((a & 4) &&
	    rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_P2P_TAG, &tag,
			    sizeof(tag)))
		abort();
	if (rdma_resolve_addr(id, (struct sockaddr *)&src,
			      (struct sockaddr *)&dst, 2000))
		return;
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	pump();
	if (find_id(id) < 0 || rdma_resolve_route(id, 2000))
		return;
	fake_ucma_event(kid_of(id), RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	pump();
	if (find_id(id) < 0 || rdma_create_qp(id, NULL, &attr))
		return;
	(void)rdma_connect(id, &p);
}

/*
 * A NOTICE of the library's (a datagram id on its own channel): its
 * resolutions, the SIDR answer (UNREACHABLE, status 2, an ANSWER or
 * anything else in the UD private data), or its failures.
 */
static void op_notice_event(const struct fake_kid *kid, uint8_t e, uint8_t k)
{
	static const uint32_t events[] = {
		RDMA_CM_EVENT_ADDR_RESOLVED, RDMA_CM_EVENT_ROUTE_RESOLVED,
		RDMA_CM_EVENT_UNREACHABLE,   RDMA_CM_EVENT_UNREACHABLE,
		RDMA_CM_EVENT_ADDR_ERROR,    RDMA_CM_EVENT_ROUTE_ERROR,
		RDMA_CM_EVENT_ESTABLISHED,   RDMA_CM_EVENT_UNREACHABLE,
	};
	uint32_t ev = events[e % 8];
	struct rdma_ucm_event_resp *r;

	r = fake_ucma_event(kid->handle, ev,
			    ev == RDMA_CM_EVENT_UNREACHABLE && !(e & 0x80)
				    ? 2
				    : (e & 0x40 ? -110 : 0));
	if (!r || ev != RDMA_CM_EVENT_UNREACHABLE)
		return;
	r->param.ud.private_data_len = put_pdata(
		r->param.ud.private_data, k & 1 ? CMA_P2P_ANSWER : 0xff, 0, 0,
		0x99, ((k >> 1) & 7) + 1u);
}

/* op 2: the kernel reports an event on any of its ids. */
static void op_kernel_event(void)
{
	static const uint32_t events[] = {
		RDMA_CM_EVENT_REJECTED,		RDMA_CM_EVENT_ESTABLISHED,
		RDMA_CM_EVENT_CONNECT_RESPONSE, RDMA_CM_EVENT_DISCONNECTED,
		RDMA_CM_EVENT_UNREACHABLE,	RDMA_CM_EVENT_CONNECT_ERROR,
		RDMA_CM_EVENT_TIMEWAIT_EXIT,	RDMA_CM_EVENT_REJECTED,
	};
	static const uint8_t kinds[] = {0,
					CMA_P2P_REP,
					CMA_P2P_REJ_RETRY,
					CMA_P2P_REJ_DUP,
					CMA_P2P_REJ_BAD,
					CMA_P2P_REQ,
					0xff,
					CMA_P2P_REJ_STALE};
	uint8_t h = take8(), e = take8(), k = take8();
	struct rdma_ucm_event_resp *r;
	struct fake_kid *kid = fake_ucma_kid(1 + h % 64);

	/*
	 * The kernel reports nothing for a request's id before the library
	 * has set its uid (on accept): "events for new connections are
	 * ignored until userspace has set their context" (ucma.c).
	 */
	if (!kid || !kid->live || kid->listening || !kid->uid)
		return;
	if (kid->ps == RDMA_PS_UDP) {
		op_notice_event(kid, e, k);
		return;
	}
	r = fake_ucma_event(kid->handle, events[e % 8],
			    events[e % 8] == RDMA_CM_EVENT_REJECTED
				    ? (e & 0x80	  ? 28
				       : e & 0x40 ? 10
						  : 8)
				    : (e & 0x80 ? -110 : 0));
	if (!r)
		return;
	r->param.conn.private_data_len =
		put_pdata(r->param.conn.private_data, kinds[k % 8], 0,
			  (uint16_t)PORT, (k >> 3) & 3, (k >> 5) + 1u);
	r->param.conn.qp_num = 0x77;
}

/* op 3: time passes, up to 25.5 s: hold and connect timers expire. */
static void op_time(void)
{
	skew_ns += (uint64_t)take8() * 100000000ull;
	run_timers();
}

/* op 4: the application destroys an id (255: the listener). */
static void op_destroy(void)
{
	uint8_t a = take8();

	if (a == 255 || !nids) {
		if (listener && a == 255 && !rdma_destroy_id(listener))
			listener = NULL;
		return;
	}
	drop_id(a % nids);
}

/* op 5: accept (with a QP) or reject a request the application got. */
static void op_answer(void)
{
	uint8_t a = take8();
	struct ibv_qp_init_attr attr = qp_attr();
	struct rdma_conn_param p = {.responder_resources = 1,
				    .initiator_depth = 1,
				    .peer2peer_mode = (a >> 1) & 1};
	unsigned int i;

	if (!nids)
		return;
	i = (a >> 2) % nids;
	if (!surfaced[i])
		return;
	if (a & 1) {
		(void)rdma_reject(ids[i], "no", 2);
		return;
	}
	if (!ids[i]->qp && rdma_create_qp(ids[i], NULL, &attr))
		return;
	(void)rdma_accept(ids[i], &p);
}

/* op 6: the kernel fails the next command of a kind. */
static void op_fail(void)
{
	static const uint32_t cmds[] = {
		RDMA_USER_CM_CMD_ACCEPT,       RDMA_USER_CM_CMD_REJECT,
		RDMA_USER_CM_CMD_CONNECT,      RDMA_USER_CM_CMD_DESTROY_ID,
		RDMA_USER_CM_CMD_QUERY_ROUTE,  RDMA_USER_CM_CMD_QUERY,
		RDMA_USER_CM_CMD_INIT_QP_ATTR, RDMA_USER_CM_CMD_DISCONNECT,
	};
	uint8_t a = take8();

	fail_cmd = cmds[a % 8];
	fail_err = (a & 0x80) ? ENOMEM : EINVAL;
}

/* op 7: the application disconnects an id. */
static void op_disconnect(void)
{
	uint8_t a = take8();

	if (nids)
		(void)rdma_disconnect(ids[a % nids]);
}

static void setup(uint8_t flags)
{
	struct sockaddr_in me = ipv4(3, PORT); /* between its peers */
	int v = (flags >> 1) & 1;

	fake_ucma_install();
	fake_verbs_install(true);
	fake_ucma_set_hook(kernel);
	fail_cmd = UINT32_MAX;
	skew_ns = 0;
	ch = rdma_create_event_channel();
	if (!ch)
		abort();
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	if (rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP))
		abort();
	if ((flags & 1) &&
	    rdma_set_option(listener, RDMA_OPTION_ID, RDMA_OPTION_ID_PEER2PEER,
			    &v, sizeof(v)))
		abort();
	if (rdma_bind_addr(listener, (struct sockaddr *)&me) ||
	    rdma_listen(listener, 8))
		abort();
}

static void teardown(void)
{
	struct rdma_cm_event *ev;

	fail_cmd = UINT32_MAX;
	pump();
	/* What the pumps left is unreadable: no event may wait behind it. */
	if (!readable() && !rdma_get_cm_event(ch, &ev))
		abort();
	while (nids) {
		unsigned int before = nids;

		drop_id(nids - 1);
		if (nids == before)
			abort(); /* with the kernel willing, a destroy succeeds */
	}
	if (listener && rdma_destroy_id(listener))
		abort();
	listener = NULL;
	cma_p2p_verify_reset(); /* the next input has a fresh kernel */
	rdma_destroy_event_channel(ch);
	ch = NULL;
	fake_ucma_set_hook(NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int ops = 0;

	if (!size)
		return 0;
	in_input = true;
	in.p = data + 1;
	in.left = size - 1;
	setup(data[0]);
	while (in.left && ops++ < 64) {
		switch (take8() % 8) {
		case 0:
			op_peer_req();
			break;
		case 1:
			op_connect();
			break;
		case 2:
			op_kernel_event();
			break;
		case 3:
			op_time();
			break;
		case 4:
			op_destroy();
			break;
		case 5:
			op_answer();
			break;
		case 6:
			op_fail();
			break;
		default:
			op_disconnect();
			break;
		}
		pump();
	}
	teardown();
	if (timers)
		abort(); /* a timer outlived the ids it serves */
	if (cma_p2p_conns_waiting())
		abort(); /* the count of waiting connects lost track */
	in_input = false;
	return 0;
}
