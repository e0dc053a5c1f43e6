// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Connection-setup benchmark for librdmacm, built once against this
 * tree's headers and run against either library (LD_LIBRARY_PATH picks
 * it): only RDMACM_1.0 calls are used.
 *
 *   cm_bench steps <addr> <n> [<reps>]
 *	n connections set up and torn down step by step, every step done for
 *	all n before the next (like cmtime): create id, resolve address,
 *	resolve route, create QP, connect (until both ends are ESTABLISHED;
 *	the passive side runs in this process too), disconnect (until both
 *	ends saw DISCONNECTED), destroy (QPs and ids).  Connects and
 *	disconnects go out BENCH_WINDOW (steps.h) at a time, each batch
 *	finished before the next.  Repeated <reps> times
 *	(default 1); per step the median wall time per connection, and the
 *	rdma_cm write(2) calls per connection, both ends together, on every
 *	rdma_cm fd of the process; and what the process grew by per connection
 *	once all n are ESTABLISHED in the first repetition (both ends of each
 *	connection live here): heap bytes (mallinfo2), resident bytes (VmRSS,
 *	the QPs' rings included) and open file descriptors.
 *   cm_bench bsteps <addr> <n> [<reps>]
 *	the same steps by a blocking-style program: each side has a thread
 *	that blocks in rdma_get_cm_event (no poll(2) first), as many
 *	programs and rdma-core's examples do.
 *   cm_bench limit <addr> <n> [<reps>]
 *	the same steps, lines and counts with no library: the kernel's
 *	rdma_cm commands written straight to the device (cm_limit.c), the
 *	limit a library is measured against.
 *   cm_bench memory <addr> <n>
 *	heap bytes (mallinfo2) per id: created (n of them); then with address
 *	and route resolved (at most 10,000: each takes a port).
 *
 * Output: one line per measurement, "<metric> <value> <unit>", for
 * tests/bench/report.py, then the harness's PASS line (failures, the
 * watchdog and event waits are tests/system/harness.[ch]'s).
 *
 * Kernel round trips are counted without ptrace or LD_PRELOAD: this
 * program defines write() and syscall(), which the dynamic linker binds
 * the libraries' calls to (Debian's library writes its commands with
 * write(), ours with syscall(SYS_write, ...), which is no cancellation
 * point), and counts writes per file descriptor before passing every
 * call on to libc's syscall().
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "../system/harness.h"
#include "steps.h"

/*
 * Built against this tree's header, rdma_connect/rdma_accept would bind to
 * their RDMACM_FORK_1.0 versions, which Debian's library lacks; bind to the
 * RDMACM_1.0 ones every librdmacm has, so one binary runs on both.
 */
__asm__(".symver rdma_connect, rdma_connect@RDMACM_1.0");
__asm__(".symver rdma_accept, rdma_accept@RDMACM_1.0");

#define MAX_FDS 4096
static unsigned long writes_on_fd[MAX_FDS];

static void count_write(long fd)
{
	if (fd >= 0 && fd < MAX_FDS)
		__atomic_fetch_add(&writes_on_fd[fd], 1, __ATOMIC_RELAXED);
}

/* libc's syscall(), which the two interposers below pass calls on to. */
static long libc_syscall(long nr, long a, long b, long c, long d, long e,
			 long f)
{
	static long (*next)(long, ...);

	if (!next)
		next = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return next(nr, a, b, c, d, e, f);
}

ssize_t write(int fd, const void *buf, size_t len)
{
	count_write(fd);
	return libc_syscall(SYS_write, fd, (long)buf, (long)len, 0, 0, 0);
}

/*
 * Every caller's arguments are passed on as six: x86-64 passes the first
 * six in registers, so the ones a call did not give are harmless garbage
 * that the kernel does not read.
 */
long syscall(long nr, ...)
{
	long a[6];
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_write)
		count_write(a[0]);
	return libc_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* --- the two ends ----------------------------------------------------------- */

struct bench {
	const char *addr;
	int n;
	struct rdma_event_channel *cch, *sch; /* active, passive */
	struct rdma_cm_id *listen;
	struct rdma_cm_id **cli, **srv;
	struct ibv_cq *ccq, *scq;
	uint16_t port;
	int srv_count;
	int batch; /* the connections run_both waits for */
};

/* Wait for @n events of @type on @ch (TIMEWAIT_EXIT passed over). */
static void collect(struct rdma_event_channel *ch, int n,
		    enum rdma_cm_event_type type)
{
	while (n-- > 0)
		hx_expect_ack(ch, type, NULL, "active side");
}

static struct ibv_qp_init_attr qp_attr(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 2,
			.max_recv_wr = 2,
			.max_send_sge = 1,
			.max_recv_sge = 1},
	};

	return a;
}

static bool is_rdma_cm_fd(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return !strcmp(target, "/dev/infiniband/rdma_cm");
}

/*
 * Writes so far on every rdma_cm device fd of the process, both ends'.
 * Which fd a library writes a command to is its own business (Debian's,
 * the channel's fd; ours, descriptors it keeps above 500), so every fd
 * that was written to is looked at.
 */
static unsigned long cm_writes(void)
{
	unsigned long sum = 0;
	int fd;

	for (fd = 0; fd < MAX_FDS; fd++)
		if (writes_on_fd[fd] && is_rdma_cm_fd(fd))
			sum += writes_on_fd[fd];
	return sum;
}

static struct rdma_event_channel *open_channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (!ch)
		hx_fail("rdma_create_event_channel: %s", strerror(errno));
	return ch;
}

static void setup(struct bench *b)
{
	struct sockaddr_storage ss;

	b->cch = open_channel();
	b->sch = open_channel();
	hx_parse_addr(b->addr, 0, &ss);
	if (rdma_create_id(b->sch, &b->listen, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(b->listen, (struct sockaddr *)&ss) ||
	    rdma_listen(b->listen, 1024))
		hx_fail("listen on %s: %s", b->addr, strerror(errno));
	b->port = ntohs(rdma_get_src_port(b->listen));
	b->cli = calloc((size_t)b->n, sizeof(*b->cli));
	b->srv = calloc((size_t)b->n, sizeof(*b->srv));
	/* One CQ per side for all QPs: no per-QP completion channel fds. */
	b->ccq = ibv_create_cq(b->listen->verbs, 2 * b->n + 16, NULL, NULL, 0);
	b->scq = ibv_create_cq(b->listen->verbs, 2 * b->n + 16, NULL, NULL, 0);
	if (!b->cli || !b->srv || !b->ccq || !b->scq)
		hx_fail("allocations for %d connections: %s", b->n,
			strerror(errno));
}

static void teardown(struct bench *b)
{
	ibv_destroy_cq(b->ccq);
	ibv_destroy_cq(b->scq);
	rdma_destroy_id(b->listen);
	rdma_destroy_event_channel(b->cch);
	rdma_destroy_event_channel(b->sch);
	free(b->cli);
	free(b->srv);
}

static void step_create(void *ctx)
{
	struct bench *b = ctx;
	int i;

	for (i = 0; i < b->n; i++)
		if (rdma_create_id(b->cch, &b->cli[i], NULL, RDMA_PS_TCP))
			hx_fail("rdma_create_id: %s", strerror(errno));
}

static void step_resolve_addr(void *ctx)
{
	struct bench *b = ctx;
	struct sockaddr_storage dst;
	int i;

	hx_parse_addr(b->addr, b->port, &dst);
	for (i = 0; i < b->n; i++)
		if (rdma_resolve_addr(b->cli[i], NULL, (struct sockaddr *)&dst,
				      2000))
			hx_fail("rdma_resolve_addr: %s", strerror(errno));
	collect(b->cch, b->n, RDMA_CM_EVENT_ADDR_RESOLVED);
}

static void step_resolve_route(void *ctx)
{
	struct bench *b = ctx;
	int i;

	for (i = 0; i < b->n; i++)
		if (rdma_resolve_route(b->cli[i], 2000))
			hx_fail("rdma_resolve_route: %s", strerror(errno));
	collect(b->cch, b->n, RDMA_CM_EVENT_ROUTE_RESOLVED);
}

static void step_create_qp(void *ctx)
{
	struct bench *b = ctx;
	struct ibv_qp_init_attr a;
	int i;

	for (i = 0; i < b->n; i++) {
		a = qp_attr(b->ccq);
		if (rdma_create_qp(b->cli[i], NULL, &a))
			hx_fail("rdma_create_qp: %s", strerror(errno));
	}
}

/* The passive side's part of a connection: a QP, then accept. */
static void accept_request(struct bench *b, struct rdma_cm_id *id)
{
	struct rdma_conn_param cp = {.responder_resources = 1,
				     .initiator_depth = 1,
				     .rnr_retry_count = 7};
	struct ibv_qp_init_attr a = qp_attr(b->scq);

	if (rdma_create_qp(id, NULL, &a) || rdma_accept(id, &cp))
		hx_fail("passive side: create QP and accept: %s",
			strerror(errno));
	b->srv[b->srv_count++] = id;
}

/* Handle the passive side's waiting events; count those of type @want. */
static void pump_passive(struct bench *b, int *done,
			 enum rdma_cm_event_type want)
{
	struct pollfd pfd = {.fd = b->sch->fd, .events = POLLIN};
	enum rdma_cm_event_type type;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	while (poll(&pfd, 1, 0) == 1) {
		if (rdma_get_cm_event(b->sch, &ev))
			hx_fail("rdma_get_cm_event: %s", strerror(errno));
		id = ev->id;
		type = ev->event;
		rdma_ack_cm_event(ev);
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			accept_request(b, id);
		} else if (type == want) {
			(*done)++;
			if (type == RDMA_CM_EVENT_DISCONNECTED)
				rdma_disconnect(id); /* answer the DREQ */
		} else if (type != RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			hx_fail("passive side: %s", rdma_event_str(type));
		}
	}
}

/* bsteps: each side's thread blocks in rdma_get_cm_event. */
static bool blocking;

struct passive_run {
	struct bench *b;
	enum rdma_cm_event_type want;
};

/* The passive side, blocking: until @n events of the wanted type. */
static void *passive_blocking(void *arg)
{
	struct passive_run *p = arg;
	struct bench *b = p->b;
	enum rdma_cm_event_type type;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int done = 0;

	while (done < b->batch) {
		if (rdma_get_cm_event(b->sch, &ev))
			hx_fail("rdma_get_cm_event: %s", strerror(errno));
		id = ev->id;
		type = ev->event;
		rdma_ack_cm_event(ev);
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			accept_request(b, id);
		} else if (type == p->want) {
			done++;
			if (type == RDMA_CM_EVENT_DISCONNECTED)
				rdma_disconnect(id); /* answer the DREQ */
		} else if (type != RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			hx_fail("passive side: %s", rdma_event_str(type));
		}
	}
	return NULL;
}

/* Both sides blocking, the passive one in its own thread. */
static void run_both_blocking(struct bench *b, enum rdma_cm_event_type want)
{
	struct passive_run p = {.b = b, .want = want};
	struct rdma_cm_event *ev;
	pthread_t t;
	int cdone = 0;

	if (pthread_create(&t, NULL, passive_blocking, &p))
		hx_fail("pthread_create failed");
	while (cdone < b->batch) {
		if (rdma_get_cm_event(b->cch, &ev))
			hx_fail("rdma_get_cm_event: %s", strerror(errno));
		if (ev->event == want && !ev->status)
			cdone++;
		else if (ev->event != RDMA_CM_EVENT_TIMEWAIT_EXIT)
			hx_fail("active side: %s (status %d)",
				rdma_event_str(ev->event), ev->status);
		rdma_ack_cm_event(ev);
	}
	pthread_join(t, NULL);
}

/* Drive both channels until each has @n events of @want. */
static void run_both(struct bench *b, enum rdma_cm_event_type want)
{
	struct pollfd pfd[2] = {{.fd = b->cch->fd, .events = POLLIN},
				{.fd = b->sch->fd, .events = POLLIN}};
	struct rdma_cm_event *ev;
	int cdone = 0, sdone = 0;

	if (blocking) {
		run_both_blocking(b, want);
		return;
	}
	while (cdone < b->batch || sdone < b->batch) {
		hx_stage("%s: %d/%d active, %d/%d passive",
			 rdma_event_str(want), cdone, b->batch, sdone,
			 b->batch);
		if (poll(pfd, 2, hx_event_timeout_ms()) < 1)
			hx_fail("no CM event within %d ms",
				hx_event_timeout_ms());
		if (pfd[1].revents)
			pump_passive(b, &sdone, want);
		if (!pfd[0].revents)
			continue;
		if (rdma_get_cm_event(b->cch, &ev))
			hx_fail("rdma_get_cm_event: %s", strerror(errno));
		if (ev->event == want && !ev->status)
			cdone++;
		else if (ev->event != RDMA_CM_EVENT_TIMEWAIT_EXIT)
			hx_fail("active side: %s (status %d)",
				rdma_event_str(ev->event), ev->status);
		rdma_ack_cm_event(ev);
	}
}

static void step_connect(void *ctx)
{
	struct bench *b = ctx;
	struct rdma_conn_param cp = {.responder_resources = 1,
				     .initiator_depth = 1,
				     .retry_count = 7,
				     .rnr_retry_count = 7};
	int i, j;

	b->srv_count = 0;
	for (i = 0; i < b->n; i += b->batch) {
		b->batch = b->n - i < BENCH_WINDOW ? b->n - i : BENCH_WINDOW;
		for (j = i; j < i + b->batch; j++)
			if (rdma_connect(b->cli[j], &cp))
				hx_fail("rdma_connect: %s", strerror(errno));
		run_both(b, RDMA_CM_EVENT_ESTABLISHED);
	}
}

static void step_disconnect(void *ctx)
{
	struct bench *b = ctx;
	int i, j;

	for (i = 0; i < b->n; i += b->batch) {
		b->batch = b->n - i < BENCH_WINDOW ? b->n - i : BENCH_WINDOW;
		for (j = i; j < i + b->batch; j++)
			if (rdma_disconnect(b->cli[j]))
				hx_fail("rdma_disconnect: %s", strerror(errno));
		run_both(b, RDMA_CM_EVENT_DISCONNECTED);
	}
}

static void step_destroy(void *ctx)
{
	struct bench *b = ctx;
	int i;

	for (i = 0; i < b->n; i++) {
		rdma_destroy_qp(b->cli[i]);
		if (rdma_destroy_id(b->cli[i]))
			hx_fail("rdma_destroy_id: %s", strerror(errno));
		rdma_destroy_qp(b->srv[i]);
		if (rdma_destroy_id(b->srv[i]))
			hx_fail("rdma_destroy_id: %s", strerror(errno));
	}
}

static const struct bench_step steps[BENCH_NSTEPS] = {
	{"create_id", step_create},
	{"resolve_addr", step_resolve_addr},
	{"resolve_route", step_resolve_route},
	{"create_qp", step_create_qp},
	{"connect", step_connect},
	{"disconnect", step_disconnect},
	{"destroy", step_destroy},
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* What the process holds: heap in use, resident memory, open fds. */
struct footprint {
	double heap, rss, fds;
};

static double resident_bytes(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	if (!f)
		hx_fail("/proc/self/status: %s", strerror(errno));
	while (kb < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) != 1)
			kb = -1;
	fclose(f);
	return (double)kb * 1024;
}

static double open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	double n = 0;

	if (!d)
		hx_fail("/proc/self/fd: %s", strerror(errno));
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static struct footprint footprint_now(void)
{
	struct footprint f = {
		.heap = (double)mallinfo2().uordblks,
		.rss = resident_bytes(),
		.fds = open_fds(),
	};

	return f;
}

static void print_growth(int n, struct footprint a, struct footprint b)
{
	printf("conn.n%d.heap_per_conn %.1f bytes\n", n, (b.heap - a.heap) / n);
	printf("conn.n%d.rss_per_conn %.1f bytes\n", n, (b.rss - a.rss) / n);
	printf("conn.n%d.fds_per_conn %.3f fds\n", n, (b.fds - a.fds) / n);
}

/*
 * Run @table on @ctx @reps times for @n connections; print each step's
 * median time, the rdma_cm writes (every rdma_cm fd of the process: the
 * library's or cm_limit's own), and what the process grew by once all n
 * were connected in the first repetition.
 */
static void run_table(const struct bench_step *table, void *ctx, int n,
		      int reps)
{
	double(*us)[BENCH_NSTEPS] = calloc((size_t)reps, sizeof(*us));
	unsigned long w[BENCH_NSTEPS] = {0}, w0;
	double t0, col[64], total = 0;
	struct footprint before, connected = {0};
	size_t s;
	int r;

	if (!us)
		hx_fail("out of memory");
	before = footprint_now();
	for (r = 0; r < reps; r++) {
		for (s = 0; s < BENCH_NSTEPS; s++) {
			hx_stage("%s, repetition %d", table[s].name, r);
			w0 = cm_writes();
			t0 = (hx_now_s() * 1e6);
			table[s].run(ctx);
			us[r][s] = ((hx_now_s() * 1e6) - t0) / n;
			w[s] += cm_writes() - w0;
			if (r == 0 && !strcmp(table[s].name, "connect"))
				connected = footprint_now();
		}
	}
	for (s = 0; s < BENCH_NSTEPS; s++) {
		for (r = 0; r < reps; r++)
			col[r] = us[r][s];
		qsort(col, (size_t)reps, sizeof(col[0]), cmp_double);
		total += col[reps / 2];
		printf("steps.n%d.%s %.1f us\n", n, table[s].name,
		       col[reps / 2]);
	}
	printf("steps.n%d.total %.1f us\n", n, total);
	for (s = 0, w0 = 0; s < BENCH_NSTEPS; s++) {
		printf("writes.n%d.%s %.2f calls\n", n, table[s].name,
		       (double)w[s] / ((double)n * reps));
		w0 += w[s];
	}
	printf("writes.n%d.total %.2f calls\n", n,
	       (double)w0 / ((double)n * reps));
	print_growth(n, before, connected);
	free(us);
}

static void check_counts(int n, int reps)
{
	if (n < 1 || reps < 1 || reps > 64)
		hx_fail("bad counts: %d connections, %d repetitions (1 to 64)",
			n, reps);
}

static int cmd_steps(const char *addr, int n, int reps)
{
	struct bench b = {.addr = addr, .n = n};

	check_counts(n, reps);
	setup(&b);
	run_table(steps, &b, n, reps);
	teardown(&b);
	return 0;
}

/* The same steps with no library: the limit (cm_limit.c). */
static int cmd_limit(const char *addr, int n, int reps)
{
	check_counts(n, reps);
	run_table(cm_limit_steps, cm_limit_setup(addr, n), n, reps);
	return 0;
}

static size_t heap_in_use(void)
{
	return mallinfo2().uordblks;
}

static int cmd_memory(const char *addr, int n)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id **ids = calloc((size_t)n, sizeof(*ids));
	struct sockaddr_storage dst;
	/* Each resolved id holds a port of the ephemeral range (28,232). */
	int resolved = n < 10000 ? n : 10000;
	size_t h0, h1, h2;
	int i;

	if (n < 1)
		hx_fail("bad count: %d ids", n);
	if (!ch || !ids)
		hx_fail("setup: %s", strerror(errno));
	/* Warm up: the library opens the device on first use. */
	hx_parse_addr(addr, 7999, &dst);
	if (rdma_create_id(ch, &ids[0], NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(ids[0], NULL, (struct sockaddr *)&dst, 2000))
		hx_fail("warm-up: %s", strerror(errno));
	collect(ch, 1, RDMA_CM_EVENT_ADDR_RESOLVED);
	rdma_destroy_id(ids[0]);

	h0 = heap_in_use();
	for (i = 0; i < n; i++)
		if (rdma_create_id(ch, &ids[i], NULL, RDMA_PS_TCP))
			hx_fail("rdma_create_id: %s", strerror(errno));
	h1 = heap_in_use();
	for (i = 0; i < resolved; i++)
		if (rdma_resolve_addr(ids[i], NULL, (struct sockaddr *)&dst,
				      2000))
			hx_fail("rdma_resolve_addr: %s", strerror(errno));
	collect(ch, resolved, RDMA_CM_EVENT_ADDR_RESOLVED);
	for (i = 0; i < resolved; i++)
		if (rdma_resolve_route(ids[i], 2000))
			hx_fail("rdma_resolve_route: %s", strerror(errno));
	collect(ch, resolved, RDMA_CM_EVENT_ROUTE_RESOLVED);
	h2 = heap_in_use();
	printf("memory.id_created %.1f bytes\n", (double)(h1 - h0) / n);
	printf("memory.id_resolved %.1f bytes\n",
	       (double)(h1 - h0) / n + (double)(h2 - h1) / resolved);
	for (i = 0; i < n; i++)
		rdma_destroy_id(ids[i]);
	rdma_destroy_event_channel(ch);
	free(ids);
	return 0;
}

static int run_steps(int argc, char **argv)
{
	return cmd_steps(argv[1], atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 1);
}

static int run_limit(int argc, char **argv)
{
	return cmd_limit(argv[1], atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 1);
}

static int run_bsteps(int argc, char **argv)
{
	blocking = true;
	return run_steps(argc, argv);
}

static int run_memory(int argc, char **argv)
{
	(void)argc;
	return cmd_memory(argv[1], atoi(argv[2]));
}

static const struct hx_scenario scenarios[] = {
	{"steps", "<addr> <n> [<reps>]", run_steps},
	{"bsteps", "<addr> <n> [<reps>]", run_bsteps},
	{"limit", "<addr> <n> [<reps>]", run_limit},
	{"memory", "<addr> <n>", run_memory},
};

int main(int argc, char **argv)
{
	/* A thousand connections under TCG, or under callgrind, are slow. */
	hx_set_event_timeout_ms(30000);
	hx_set_default_timeout_s(1800);
	return hx_main(argc, argv, scenarios,
		       sizeof(scenarios) / sizeof(scenarios[0]));
}
