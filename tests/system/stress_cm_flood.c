// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * flood ADDR1 ADDR2 [REQUESTS]: a hostile peer floods an ordinary
 * listener (no RDMA_OPTION_ID_PEER2PEER set, as any program) with
 * p2p-tagged requests, every one with a new tag: each one the library
 * would hold for RDMA_CM_P2P_HOLD_MS (rdma_cm_p2p(7)) out of the
 * application's sight.  REQUESTS defaults to RDMACM_STRESS_FLOOD, else
 * 10000.
 *
 * The flooder is a child process (its own library state) on ADDR2 that
 * keeps up to 1.5 x RDMA_CM_P2P_MAX_HELD requests unanswered, so the
 * listener's bound must act: it refuses the oldest held request.  The
 * parent is the application on ADDR1: one thread reads the listener's
 * channel, accepting its real clients and rejecting any p2p request it is
 * shown; another is a real client connecting over and over.
 *
 * Every 5,000 requests the flood pauses while the parent prints the time
 * they took, its VmRSS and the kernel ids it owns ("rdma resource show
 * cm_id": the listener, the held requests, the unread ones, the real
 * connections; a dump taken while ids come and go would count some twice).  Checks:
 * the kernel ids stay within 1 + RDMA_CM_P2P_MAX_HELD + the backlog +
 * FL_SLACK; VmRSS grows by less than FL_RSS_SLACK_KIB from the first
 * report to the last; every real connect is established while the flood
 * runs, and some form between the first report and the last; after the
 * flood, the held requests are let go (the kernel ids fall back).
 *
 * A real connect whose REQ the flood crowded out of the listener's
 * management QP waits for the IB CM's retry (rdma_cm's response timeout,
 * about 4 s), longer than a whole report's worth of flood on a fast
 * machine.  So the flood does not end on a count alone: while no real
 * connection has formed since the first report, the parent asks for
 * another FL_REPORT requests, up to FL_MORE_MAX times (then it fails:
 * the listener starved its real clients).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "stress_cm.h"

/*
 * rdma-core's entry points (the flooder is not our library's p2p mode,
 * and the rest runs on rdma-core's library too).
 */
__asm__(".symver rdma_connect, rdma_connect@RDMACM_1.0");
__asm__(".symver rdma_accept, rdma_accept@RDMACM_1.0");

#define FL_PORT 7720
#define FL_BACKLOG 256
#define FL_REPORT 5000
#define FL_RESOLVING 32 /* the flooder's ids resolving at once */
#define FL_SLACK 16 /* real connections and ids being torn down */
#define FL_RSS_SLACK_KIB (16 * 1024)
#define FL_MORE_MAX 10 /* extra rounds while no real connection formed */

/* What the flooder tells the parent, every FL_REPORT requests and at the end. */
struct fl_report {
	uint64_t sent, refused, rejected, other;
	uint64_t ns; /* since the first request */
	int last; /* all the requests asked for are out */
	int done;
};

static const char *fl_a1, *fl_a2;
static unsigned int fl_cap;
static atomic_bool fl_stop_real, fl_stop_app;
static _Atomic unsigned long fl_real, fl_surfaced;

static unsigned int fl_max_held(void)
{
	const char *v = getenv("RDMA_CM_P2P_MAX_HELD");
	unsigned long n = v && *v ? strtoul(v, NULL, 10) : 0;

	return n >= 1 && n <= 1000000 ? (unsigned int)n : 1024;
}

/* --- the flooder (child process) ------------------------------------------ */

struct fl_flooder {
	struct rdma_event_channel *ch;
	/* REJECTED by kind of the p2p header they carry (16: none). */
	uint64_t rej_kind[17];
	int first_rej_status;
	struct rdma_cm_id **ids; /* slot i's id; its context is i + 1 */
	unsigned int *free_slots, nfree, window;
	unsigned int resolving;
	uint64_t started, t0;
	struct fl_report rep;
	uint64_t total; /* requests to send, grows when the parent asks */
	int fd, go; /* reports out, acks (and the first go) in */
};

static void fl_start_one(struct fl_flooder *f)
{
	struct sockaddr_storage src, dst;
	unsigned int slot = f->free_slots[--f->nfree];
	struct rdma_cm_id *id = new_id(f->ch, (void *)(uintptr_t)(slot + 1));

	f->ids[slot] = id;
	f->resolving++;
	f->started++;
	if (rdma_resolve_addr(id, sa_port(fl_a2, 0, &src),
			      sa_port(fl_a1, FL_PORT, &dst), 5000))
		hx_fail("flooder: rdma_resolve_addr: %s", strerror(errno));
}

static void fl_forget(struct fl_flooder *f, struct rdma_cm_id *id)
{
	unsigned int slot = (unsigned int)(uintptr_t)id->context - 1;

	if (rdma_destroy_id(id))
		hx_fail("flooder: rdma_destroy_id: %s", strerror(errno));
	f->ids[slot] = NULL;
	f->free_slots[f->nfree++] = slot;
}

/* A p2p REQ header (rdma_cm_p2p(7)) with tag @tag, written by hand. */
static void fl_connect(struct fl_flooder *f, struct rdma_cm_id *id)
{
	uint8_t hdr[16] = {0xC5, 0x70, 0x32, 0x11, 0x01, 0, 0x27, 0x0f};
	struct rdma_conn_param p = conn_param(hdr, sizeof(hdr), 0);
	uint64_t tag = f->rep.sent + 1;
	int i;

	for (i = 0; i < 8; i++)
		hdr[15 - i] = (uint8_t)(tag >> (8 * i));
	/*
	 * No QP: the listener never accepts.  A QP number of its own per
	 * request, or the IB CM refuses a repeat as stale (REJ reason 10);
	 * and above any rxe allocates (its QP numbers stay below 2^17), or a
	 * real client whose QP got the same number is refused as stale too.
	 */
	p.qp_num = 0x800000 + (uint32_t)(tag % 0x7fffff);
	if (rdma_connect(id, &p))
		hx_fail("flooder: rdma_connect: %s", strerror(errno));
	f->rep.sent++;
}

/*
 * Report, and (unless @done) pause until the parent has taken its
 * figures: a dump of the kernel's ids taken while ids come and go would
 * count some twice.  The pause is not counted in the flood's time.  The
 * parent's answer: 'a' go on, 'm' another FL_REPORT requests.
 */
static void fl_send_report(struct fl_flooder *f, int done)
{
	uint64_t t = now_ns();
	struct fl_report r;
	char c = 'a';

	f->rep.ns = t - f->t0;
	f->rep.last = f->rep.sent >= f->total;
	f->rep.done = done;
	/*
	 * Written from a copy: GCC 12 with the sanitizers takes &f->rep for
	 * its first member and fails the build on a false overread warning.
	 */
	r = f->rep;
	if (write(f->fd, &r, sizeof(r)) != sizeof(r))
		hx_fail("flooder: report: %s", strerror(errno));
	if (done)
		return;
	if (read(f->go, &c, 1) != 1)
		hx_fail("flooder: no ack from the parent");
	if (c == 'm')
		f->total += FL_REPORT;
	f->t0 += now_ns() - t;
}

static void fl_rejected(struct fl_flooder *f, const struct rdma_cm_event *e)
{
	const uint8_t *d = e->param.conn.private_data;

	bool hdr = d && e->param.conn.private_data_len >= 4 && d[0] == 0xC5 &&
		   d[1] == 0x70 && d[2] == 0x32;

	if (!f->rep.refused && !f->rep.rejected)
		f->first_rej_status = e->status;
	f->rej_kind[hdr ? d[3] & 0x0f : 16]++;
	/* The listener's own refusal: a p2p REJ header, "crossing lost". */
	if (hdr && d[3] == 0x13)
		f->rep.refused++;
	else
		f->rep.rejected++;
}

static void fl_event(struct fl_flooder *f, struct rdma_cm_event *e)
{
	struct rdma_cm_id *id = e->id;
	enum rdma_cm_event_type type = e->event;

	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		rdma_ack_cm_event(e);
		if (rdma_resolve_route(id, 5000))
			hx_fail("flooder: rdma_resolve_route: %s",
				strerror(errno));
		return;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		rdma_ack_cm_event(e);
		f->resolving--;
		fl_connect(f, id);
		if (f->rep.sent % FL_REPORT == 0 && f->rep.sent < f->total)
			fl_send_report(f, 0);
		return;
	case RDMA_CM_EVENT_REJECTED:
		fl_rejected(f, e);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		hx_fail("flooder: a flood request was accepted");
	default:
		if (type == RDMA_CM_EVENT_ADDR_ERROR ||
		    type == RDMA_CM_EVENT_ROUTE_ERROR)
			f->resolving--;
		f->rep.other++;
		break;
	}
	rdma_ack_cm_event(e);
	fl_forget(f, id);
}

static void fl_flooder(uint64_t total, int fd, int go)
{
	struct fl_flooder f;
	struct rdma_cm_event *e;
	unsigned int i;
	char c;

	memset(&f, 0, sizeof(f));
	f.fd = fd;
	f.go = go;
	f.window = fl_cap + fl_cap / 2;
	f.ch = channel(false);
	f.ids = calloc(f.window, sizeof(*f.ids));
	f.free_slots = calloc(f.window, sizeof(*f.free_slots));
	if (!f.ids || !f.free_slots)
		hx_fail("flooder: out of memory");
	for (i = 0; i < f.window; i++)
		f.free_slots[f.nfree++] = f.window - 1 - i;
	if (read(go, &c, 1) != 1) /* the listener is up */
		hx_fail("flooder: no go from the parent");
	f.t0 = now_ns();
	f.total = total;
	do {
		while (f.rep.sent < f.total) {
			while (f.nfree && f.resolving < FL_RESOLVING &&
			       f.started < f.total)
				fl_start_one(&f);
			e = next_event(f.ch, LOST_MS);
			if (!e)
				hx_fail("flooder: no event for %d ms with %u "
					"requests out (lost)",
					LOST_MS, f.window - f.nfree);
			fl_event(&f, e);
		}
		/* The last figures, the flood still out; or more of it. */
		fl_send_report(&f, 0);
	} while (f.rep.sent < f.total);
	/* Give up on what is still out: the listener's checks let go. */
	for (i = 0; i < f.window; i++)
		if (f.ids[i])
			fl_forget(&f, f.ids[i]);
	hx_note("flooder: REJECTED by p2p header kind: lost %" PRIu64
		", duplicate %" PRIu64 ", malformed %" PRIu64
		", no header %" PRIu64 " (first status %d)",
		f.rej_kind[3], f.rej_kind[4], f.rej_kind[5], f.rej_kind[16],
		f.first_rej_status);
	fl_send_report(&f, 1);
	rdma_destroy_event_channel(f.ch);
}

/* --- the application (parent) --------------------------------------------- */

/* A CONNECT_REQUEST: our real client's is accepted, anything else refused. */
static void fl_app_request(struct rdma_cm_event *e)
{
	struct rdma_cm_id *id = e->id;
	struct rdma_conn_param p = conn_param(NULL, 0, 0);
	bool real = !e->param.conn.peer2peer_mode &&
		    e->param.conn.private_data_len >= 5 &&
		    !memcmp(e->param.conn.private_data, "real", 5);

	rdma_ack_cm_event(e);
	if (!real) {
		atomic_fetch_add(&fl_surfaced, 1);
		rdma_reject(id, NULL, 0);
		if (rdma_destroy_id(id))
			hx_fail("rdma_destroy_id: %s", strerror(errno));
		return;
	}
	id->context = make_qp(id);
	if (rdma_accept(id, &p))
		hx_fail("rdma_accept: %s", strerror(errno));
}

static void *fl_app_main(void *arg)
{
	struct rdma_event_channel *ch = arg;
	struct rdma_cm_event *e;
	struct rdma_cm_id *id;

	while (!atomic_load(&fl_stop_app)) {
		e = next_event(ch, 100);
		if (!e)
			continue;
		id = e->id;
		switch (e->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			fl_app_request(e);
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			rdma_ack_cm_event(e);
			drop_id(id, id->context);
			break;
		default:
			rdma_ack_cm_event(e);
			break;
		}
	}
	return NULL;
}

/* One real connection: established, disconnected, gone. */
static void fl_real_once(struct rdma_event_channel *ch)
{
	struct rdma_conn_param p = conn_param("real", 5, 0);
	struct sockaddr_storage src, dst;
	struct rdma_cm_id *id = new_id(ch, NULL);
	struct ibv_cq *cq;

	resolve(ch, id, sa_port(fl_a2, 0, &src), sa_port(fl_a1, FL_PORT, &dst));
	cq = make_qp(id);
	if (rdma_connect(id, &p))
		hx_fail("real client: rdma_connect: %s", strerror(errno));
	expect_ack(ch, id, RDMA_CM_EVENT_ESTABLISHED);
	atomic_fetch_add(&fl_real, 1);
	rdma_disconnect(id);
	expect_ack(ch, id, RDMA_CM_EVENT_DISCONNECTED);
	drop_id(id, cq);
}

static void *fl_real_main(void *arg)
{
	struct rdma_event_channel *ch = channel(false);

	(void)arg;
	while (!atomic_load(&fl_stop_real)) {
		fl_real_once(ch);
		sleep_ms(100);
	}
	rdma_destroy_event_channel(ch);
	return NULL;
}

/*
 * The kernel ids this process owns, from iproute2's "rdma resource show
 * cm_id" (a child of a listener is its owner's); -1 when unavailable.
 */
static int fl_kernel_ids(void)
{
	char line[512], pat[32];
	FILE *f = popen("rdma resource show cm_id 2>/dev/null", "r");
	int n = 0;

	if (!f)
		return -1;
	snprintf(pat, sizeof(pat), " pid %d ", (int)getpid());
	while (fgets(line, sizeof(line), f))
		if (strstr(line, pat))
			n++;
	return pclose(f) == 0 ? n : -1;
}

struct fl_totals {
	long rss0, rss;
	unsigned long real0;
	int ids_max, reports, more;
};

static void fl_print(const struct fl_report *r, const struct fl_report *prev,
		     struct fl_totals *t)
{
	uint64_t n = r->sent - prev->sent, ns = r->ns - prev->ns;
	int ids = fl_kernel_ids(),
	    bound = 1 + (int)fl_cap + FL_BACKLOG + FL_SLACK;

	t->rss = vmrss_kib();
	if (!t->reports++) {
		t->rss0 = t->rss;
		t->real0 = atomic_load(&fl_real);
	}
	if (ids > t->ids_max)
		t->ids_max = ids;
	hx_note("flood %" PRIu64 ": %" PRIu64 " in %.2f s (%.0f us each), "
		"VmRSS %ld KiB, kernel ids %d (bound %d), refused %" PRIu64
		", other rejects %" PRIu64 ", real connections %lu",
		r->sent, n, (double)ns / 1e9, n ? (double)ns / 1e3 / n : 0.0,
		t->rss, ids, bound, r->refused, r->rejected,
		atomic_load(&fl_real));
	if (ids > bound)
		hx_fail("the listener's process owns %d kernel ids, more than "
			"1 + RDMA_CM_P2P_MAX_HELD %u + backlog %d + %d",
			ids, fl_cap, FL_BACKLOG, FL_SLACK);
}

/*
 * At the flood's last report: whether to ask for more of it, because no
 * real connection has formed since the first report yet.
 */
static bool fl_want_more(const struct fl_totals *t)
{
	return t->reports > 1 && atomic_load(&fl_real) == t->real0 &&
	       t->more < FL_MORE_MAX;
}

/* The flooder's reports, until it says it is done. */
static void fl_watch(int fd, int ack, struct fl_totals *t)
{
	struct fl_report r, prev;
	char answer;

	memset(&prev, 0, sizeof(prev));
	for (;;) {
		if (read(fd, &r, sizeof(r)) != sizeof(r))
			hx_fail("the flooder died (no report)");
		if (r.done) /* it gave up on the rest */
			return;
		fl_print(&r, &prev, t);
		prev = r;
		answer = 'a'; /* the flood goes on */
		if (r.last && fl_want_more(t)) {
			answer = 'm';
			t->more++;
		}
		if (write(ack, &answer, 1) != 1)
			hx_fail("ack: %s", strerror(errno));
	}
}

static void fl_reap(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		hx_fail("waitpid: %s", strerror(errno));
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		hx_fail("the flooder failed (status 0x%x)", st);
}

/* After the flood: the held requests go (hold checks, hold times). */
static void fl_drain(void)
{
	uint64_t end = now_ns() + 2ull * LOST_MS * 1000000ull;
	int ids;

	while ((ids = fl_kernel_ids()) > 1 + FL_SLACK) {
		if (now_ns() > end)
			hx_fail("%d kernel ids still owned %d s after the "
				"flood",
				ids, 2 * LOST_MS / 1000);
		sleep_ms(500);
	}
}

static pid_t fl_fork_flooder(uint64_t total, int *rep_fd, int *go_fd)
{
	int rep[2], go[2];
	pid_t pid;

	if (pipe(rep) || pipe(go))
		hx_fail("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		hx_fail("fork: %s", strerror(errno));
	if (!pid) {
		close(rep[0]);
		close(go[1]);
		hx_set_name("flood/flooder");
		hx_watchdog(hx_timeout_s());
		fl_flooder(total, rep[1], go[0]);
		_exit(0);
	}
	close(rep[1]);
	close(go[0]);
	*rep_fd = rep[0];
	*go_fd = go[1];
	return pid;
}

int run_flood(int argc, char **argv)
{
	const char *env = getenv("RDMACM_STRESS_FLOOD");
	struct fl_totals t = {0};
	struct sockaddr_storage ss;
	struct rdma_event_channel *ch;
	pthread_t app, real;
	int rep_fd, go_fd, total;
	struct rdma_cm_id *ls;
	unsigned long real_mid;
	pid_t pid;

	if (argc < 3)
		hx_fail("usage: flood ADDR1 ADDR2 [REQUESTS]");
	fl_a1 = argv[1];
	fl_a2 = argv[2];
	total = env && *env ? atoi(env) : 10000;
	total = arg_int(argc, argv, 3, total, 1, 100000000);
	fl_cap = fl_max_held();
	/* Before any thread or library state: the flooder has its own. */
	pid = fl_fork_flooder((uint64_t)total, &rep_fd, &go_fd);
	hx_stage("flood of %d requests", total);
	ch = channel(true);
	ls = listen_on(ch, sa_port(fl_a1, FL_PORT, &ss), -1, FL_BACKLOG);
	start_thread(&app, fl_app_main, ch);
	start_thread(&real, fl_real_main, NULL);
	if (write(go_fd, "g", 1) != 1)
		hx_fail("go: %s", strerror(errno));
	fl_watch(rep_fd, go_fd, &t);
	real_mid = atomic_load(&fl_real);
	fl_reap(pid);
	atomic_store(&fl_stop_real, true);
	pthread_join(real, NULL);
	hx_stage("after the flood: held requests let go");
	fl_drain();
	atomic_store(&fl_stop_app, true);
	pthread_join(app, NULL);
	drop_id(ls, NULL);
	rdma_destroy_event_channel(ch);
	close(rep_fd);
	close(go_fd);
	hx_note("kernel ids at most %d; VmRSS %ld -> %ld KiB; %lu real "
		"connections; %lu flood requests shown to the application; "
		"%d rounds of flood more than asked",
		t.ids_max, t.rss0, t.rss, atomic_load(&fl_real),
		atomic_load(&fl_surfaced), t.more);
	if (t.rss - t.rss0 > FL_RSS_SLACK_KIB)
		hx_fail("VmRSS grew by %ld KiB during the flood",
			t.rss - t.rss0);
	if (t.reports > 1 && real_mid == t.real0)
		hx_fail("no real connection formed during the flood (%d "
			"rounds more)",
			t.more);
	return 0;
}
