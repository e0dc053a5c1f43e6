// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * cm_sys_test (see cm_sys.h): Migrate, connect/disconnect cycles, events the library makes itself,
 * and which library this binary loads.
 */
#define _GNU_SOURCE
#include "cm_sys.h"

/* --- migrate -------------------------------------------------------------- */

int cmd_migrate(int argc, char **argv)
{
	struct rdma_event_channel *a, *b;
	struct sockaddr_storage dst;
	struct rdma_cm_id *id;

	(void)argc;
	a = make_channel();
	b = make_channel();
	CHECK_OK(rdma_create_id(a, &id, NULL, RDMA_PS_TCP));
	CHECK(id->channel == a, "id not on channel A");
	hx_stage("migrate A -> B");
	CHECK_OK(rdma_migrate_id(id, b));
	CHECK(id->channel == b, "id->channel not B after migration");

	hx_parse_addr(argv[1], 4791, &dst);
	hx_stage("resolve address after migration");
	CHECK_OK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000));
	hx_expect_ack(b, RDMA_CM_EVENT_ADDR_RESOLVED, id, "channel B");
	hx_expect_quiet(a, 200, "channel A after migration to B");

	hx_stage("migrate B -> A");
	CHECK_OK(rdma_migrate_id(id, a));
	CHECK(id->channel == a, "id->channel not A after migrating back");
	CHECK_OK(rdma_resolve_route(id, 2000));
	hx_expect_ack(a, RDMA_CM_EVENT_ROUTE_RESOLVED, id, "channel A");
	hx_expect_quiet(b, 200, "channel B after migration back to A");

	/* Migrating with an event still queued moves the event along. */
	hx_stage("migrate with a queued event");
	CHECK_OK(rdma_destroy_id(id));
	CHECK_OK(rdma_create_id(a, &id, NULL, RDMA_PS_TCP));
	CHECK_OK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000));
	{
		struct pollfd pfd = {.fd = a->fd, .events = POLLIN};

		CHECK(poll(&pfd, 1, hx_event_timeout_ms()) == 1,
		      "no event on A to migrate");
	}
	CHECK_OK(rdma_migrate_id(id, b));
	hx_expect_ack(b, RDMA_CM_EVENT_ADDR_RESOLVED, id,
		      "channel B (event queued before migration)");
	hx_expect_quiet(a, 200, "channel A after migrating a queued event");

	/* And to a synchronous id (NULL channel): calls now block. */
	hx_stage("migrate to synchronous");
	CHECK_OK(rdma_migrate_id(id, NULL));
	CHECK(id->channel && id->channel != a && id->channel != b,
	      "migrating to NULL did not give the id a private channel");
	CHECK_OK(rdma_resolve_route(id, 2000));
	CHECK(route_ok(id), "synchronous route resolution left no path");
	hx_expect_quiet(a, 100, "channel A after migration to sync");
	hx_expect_quiet(b, 100, "channel B after migration to sync");
	CHECK_OK(rdma_destroy_id(id));
	rdma_destroy_event_channel(a);
	rdma_destroy_event_channel(b);
	return 0;
}

/* --- cycles --------------------------------------------------------------- */

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;

	if (!f)
		hx_fail("open /proc/self/status: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	if (kib < 0)
		hx_fail("no VmRSS in /proc/self/status");
	return kib;
}

int cmd_cycles(int argc, char **argv)
{
	const char *src = argc > 3 ? argv[3] : NULL;
	int n = argc > 2 ? atoi(argv[2]) : 200, i, fds0 = 0, fds1;
	const int warmup = 10;
	long rss0 = 0, rss1;
	struct rc_pair p;
	double t0 = hx_now_s(), tw = t0;

	if (n <= warmup)
		hx_fail("need more than %d cycles, got %d", warmup, n);
	rc_setup(&p, argv[1]);
	for (i = 0; i < n; i++) {
		if (i == warmup) {
			fds0 = hx_count_fds();
			rss0 = rss_kib();
			tw = hx_now_s();
		}
		rc_connect(&p, argv[1], src, false);
		rc_exchange(&p, 1);
		rc_disconnect(&p, i % 2);
		destroy_end(&p.srv);
		destroy_end(&p.cli);
	}
	fds1 = hx_count_fds();
	rss1 = rss_kib();
	hx_note("%d cycles in %.1f s (%.1f ms each after warm-up)", n,
		hx_now_s() - t0, (hx_now_s() - tw) * 1000.0 / (n - warmup));
	hx_note("after %d warm-up cycles: %d fds, VmRSS %ld KiB; at the end: "
		"%d "
		"fds, VmRSS %ld KiB (growth %ld KiB)",
		warmup, fds0, rss0, fds1, rss1, rss1 - rss0);
	CHECK(fds1 == fds0, "open fds went from %d to %d: fd leak", fds0, fds1);
	CHECK(rss1 - rss0 < 2048,
	      "VmRSS grew by %ld KiB over %d cycles: memory leak?", rss1 - rss0,
	      n - warmup);
	rc_teardown(&p);
	return 0;
}

/* --- libevents: events the library makes itself ------------------------- */

struct delayed_write {
	struct rdma_cm_id *id;
	uint64_t arg;
};

static void *write_event_later(void *arg)
{
	struct delayed_write *dw = arg;

	usleep(100 * 1000);
	if (rdma_write_cm_event(dw->id, RDMA_CM_EVENT_USER, 0, dw->arg))
		hx_fail("rdma_write_cm_event from a thread: %s",
			strerror(errno));
	return NULL;
}

/*
 * The kernel fd and the timerfd inside a channel's epoll set are the
 * library's own: numbered 500 and up (half of a lower RLIMIT_NOFILE), away
 * from the numbers the program reuses.  /proc's fdinfo of an epoll set
 * lists its members as "tfd: N".
 */
static void check_epoll_members_high(int epfd)
{
	struct rlimit rl;
	char path[64], line[256];
	int n = 0, fd, floor = 500;
	FILE *f;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur <= 500)
		floor = (int)(rl.rlim_cur / 2);
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", epfd);
	f = fopen(path, "re");
	CHECK(f, "open %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "tfd: %d", &fd) != 1)
			continue;
		CHECK(fd >= floor, "channel member fd %d below %d", fd, floor);
		CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC,
		      "channel member fd %d not close-on-exec", fd);
		n++;
	}
	fclose(f);
	CHECK(n == 2, "%d fds in the channel's epoll set, want 2", n);
}

int cmd_libevents(int argc, char **argv)
{
	struct delayed_write dw;
	struct rdma_event_channel *ch;
	struct rdma_addrinfo *info;
	struct sockaddr_storage dst;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	pthread_t thread;
	int flags, r;

	(void)argc;
	ch = make_channel();
	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));

	hx_stage("libevents: a write from another thread wakes poll()");
	dw.id = id;
	dw.arg = 0x5eed;
	CHECK(!pthread_create(&thread, NULL, write_event_later, &dw),
	      "pthread_create");
	ev = hx_expect_event_for(ch, RDMA_CM_EVENT_USER, id, "user event");
	CHECK(ev->param.arg == 0x5eed, "user event arg %#" PRIx64,
	      (uint64_t)ev->param.arg);
	CHECK_OK(rdma_ack_cm_event(ev));
	pthread_join(thread, NULL);

	hx_stage("libevents: a non-blocking channel says EAGAIN");
	flags = fcntl(ch->fd, F_GETFL);
	CHECK_OK(fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK));
	errno = 0;
	r = rdma_get_cm_event(ch, &ev);
	CHECK(r == -1 && errno == EAGAIN, "empty non-blocking channel: %d, %s",
	      r, strerror(errno));
	CHECK_OK(fcntl(ch->fd, F_SETFL, flags));

	hx_stage("libevents: asynchronous rdma_resolve_addrinfo");
	CHECK_OK(rdma_resolve_addrinfo(id, argv[1], "7471", NULL));
	hx_expect_ack(ch, RDMA_CM_EVENT_ADDRINFO_RESOLVED, id, "addrinfo");
	CHECK_OK(rdma_query_addrinfo(id, &info));
	CHECK(info && info->ai_dst_addr, "no destination resolved");
	rdma_freeaddrinfo(info);

	hx_stage("libevents: a failing rdma_resolve_addrinfo");
	/* A service /etc/services lacks: no DNS involved. */
	CHECK_OK(rdma_resolve_addrinfo(id, argv[1], "no-such-rdma-service",
				       NULL));
	ev = hx_expect_event_for(ch, RDMA_CM_EVENT_ADDRINFO_ERROR, id,
				 "addrinfo");
	CHECK(ev->status < 0, "ADDRINFO_ERROR status %d, want a -errno",
	      ev->status);
	CHECK_OK(rdma_ack_cm_event(ev));

	hx_stage("libevents: kernel and library events interleave");
	hx_parse_addr(argv[1], 4791, &dst);
	CHECK_OK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000));
	CHECK_OK(rdma_write_cm_event(id, RDMA_CM_EVENT_USER, 3, 9));
	ev = hx_expect_event_for(ch, RDMA_CM_EVENT_USER, id,
				 "user before kernel");
	CHECK(ev->status == 3 && ev->param.arg == 9, "user event fields");
	CHECK_OK(rdma_ack_cm_event(ev));
	hx_expect_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED, id, "kernel event");

	hx_stage("libevents: the channel's own descriptors sit at 500 and up");
	check_epoll_members_high(ch->fd);

	hx_stage("libevents: destroy with an unread library event");
	CHECK_OK(rdma_write_cm_event(id, RDMA_CM_EVENT_USER, 0, 1));
	CHECK_OK(rdma_destroy_id(id));
	hx_expect_quiet(ch, 100, "after destroying the id");
	rdma_destroy_event_channel(ch);
	return 0;
}

/* --- whichlib ------------------------------------------------------------- */

int cmd_whichlib(int argc, char **argv)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 128];
	int found = 0;

	(void)argc;
	(void)argv;
	if (!f)
		hx_fail("open /proc/self/maps: %s", strerror(errno));
	/* Make sure the library is really mapped (it is linked, so it is). */
	(void)rdma_event_str(RDMA_CM_EVENT_ESTABLISHED);
	while (fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/');

		if (!path || !strstr(path, "/librdmacm.so"))
			continue;
		path[strcspn(path, "\n")] = 0;
		printf("%s\n", path);
		found = 1;
		break;
	}
	fclose(f);
	if (!found)
		hx_fail("librdmacm.so is not mapped");
	/* The scripts read the path alone: no PASS line after it. */
	fflush(stdout);
	exit(HX_EXIT_PASS);
}
