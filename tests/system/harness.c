// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The shared system-test harness (see harness.h).  Everything the signal
 * handler prints is formatted beforehand, so it only calls write(2).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char hx_test_name[128] = "test";
static char hx_cur_stage[256] = "start";
static char hx_alarm_line[512];
static unsigned int hx_alarm_secs;
/* One line at a time, and nothing after a FAIL (taken for good there). */
static pthread_mutex_t hx_out_lock = PTHREAD_MUTEX_INITIALIZER;

static void hx_format_alarm_line(void)
{
	snprintf(hx_alarm_line, sizeof(hx_alarm_line),
		 "FAIL %s: stopped by the watchdog (%u s) or a failed peer, "
		 "stuck in: %s\n",
		 hx_test_name, hx_alarm_secs, hx_cur_stage);
}

void hx_set_name(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(hx_test_name, sizeof(hx_test_name), fmt, ap);
	va_end(ap);
	hx_format_alarm_line();
}

const char *hx_name(void)
{
	return hx_test_name;
}

void hx_stage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(hx_cur_stage, sizeof(hx_cur_stage), fmt, ap);
	va_end(ap);
	hx_format_alarm_line();
	if (getenv("RDMACM_HX_TRACE"))
		fprintf(stderr, "# %s: %s\n", hx_test_name, hx_cur_stage);
}

static void hx_on_alarm(int sig)
{
	ssize_t n;

	(void)sig;
	n = write(STDOUT_FILENO, hx_alarm_line, strlen(hx_alarm_line));
	(void)n;
	_exit(HX_EXIT_WATCHDOG);
}

void hx_watchdog(unsigned int seconds)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = hx_on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	hx_alarm_secs = seconds;
	hx_format_alarm_line();
	alarm(seconds);
}

void hx_fail(const char *fmt, ...)
{
	char why[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&hx_out_lock);
	printf("FAIL %s: %s (stage: %s)\n", hx_test_name, why, hx_cur_stage);
	fflush(stdout);
	fflush(stderr);
	if (gettid() != getpid())
		_exit(HX_EXIT_FAIL);
	exit(HX_EXIT_FAIL);
}

void hx_skip(const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&hx_out_lock);
	printf("SKIP %s: %s\n", hx_test_name, why);
	fflush(stdout);
	if (gettid() != getpid())
		_exit(HX_EXIT_SKIP);
	exit(HX_EXIT_SKIP);
}

static char hx_detail[256];

void hx_set_detail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(hx_detail, sizeof(hx_detail), fmt, ap);
	va_end(ap);
}

void hx_pass(void)
{
	pthread_mutex_lock(&hx_out_lock);
	if (hx_detail[0])
		printf("PASS %s (%s)\n", hx_test_name, hx_detail);
	else
		printf("PASS %s\n", hx_test_name);
	fflush(stdout);
	pthread_mutex_unlock(&hx_out_lock);
}

void hx_note(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&hx_out_lock);
	printf("# %s: ", hx_test_name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	pthread_mutex_unlock(&hx_out_lock);
}

static bool hx_collecting;
static int hx_checks, hx_bad;
static char hx_first_bad[512];

void hx_collect(void)
{
	hx_collecting = true;
}

void hx_result(bool ok, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (!hx_collecting) {
		if (!ok)
			hx_fail("%s", buf);
		return;
	}
	hx_checks++;
	hx_note("%s: %s", ok ? "ok" : "BAD", buf);
	if (!ok && !hx_bad++)
		snprintf(hx_first_bad, sizeof(hx_first_bad), "%s", buf);
}

int hx_verdict(void)
{
	if (hx_bad)
		hx_fail("%d of %d checks failed; first: %s", hx_bad, hx_checks,
			hx_first_bad);
	hx_note("%d checks", hx_checks);
	return 0;
}

static int hx_env_int(const char *name, int def)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return def;
	v = strtol(s, &end, 10);
	if (*end || v <= 0 || v > 1000000000L) {
		fprintf(stderr, "%s=%s is not a positive number; using %d\n",
			name, s, def);
		return def;
	}
	return (int)v;
}

static int hx_event_ms;

int hx_event_timeout_ms(void)
{
	if (hx_event_ms)
		return hx_event_ms;
	return hx_env_int("RDMACM_HX_EVENT_TIMEOUT_MS", 10000);
}

void hx_set_event_timeout_ms(int ms)
{
	hx_event_ms = ms;
}

static unsigned int hx_default_timeout = 60;

unsigned int hx_timeout_s(void)
{
	return (unsigned int)hx_env_int("RDMACM_HX_TIMEOUT",
					(int)hx_default_timeout);
}

void hx_set_default_timeout_s(unsigned int seconds)
{
	hx_default_timeout = seconds;
}

struct rdma_cm_event *hx_next_event(struct rdma_event_channel *ch,
				    int timeout_ms)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	long long end = hx_now_ms() + timeout_ms, left;
	struct rdma_cm_event *ev;
	int n;

	for (;;) {
		left = end - hx_now_ms();
		n = poll(&pfd, 1, left > 0 ? (int)left : 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			hx_fail("poll on the event channel: %s",
				strerror(errno));
		if (n == 0)
			return NULL;
		/* Readable: rdma-core's contract is that this does not block
		 * (the watchdog catches a library that breaks it). */
		if (!rdma_get_cm_event(ch, &ev)) {
			if (!ev)
				hx_fail("rdma_get_cm_event returned 0 but no "
					"event");
			return ev;
		}
		/* A non-blocking channel (what rdma_cm_p2p(7) asks of
		 * programs that poll) may have nothing after a wake-up the
		 * library consumed itself: wait on until the deadline. */
		if (errno != EAGAIN)
			hx_fail("rdma_get_cm_event after poll said readable: "
				"%s",
				strerror(errno));
		if (hx_now_ms() >= end)
			return NULL;
	}
}

struct rdma_cm_event *hx_expect_event(struct rdma_event_channel *ch,
				      enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = hx_next_event(ch, hx_event_timeout_ms());

	if (!ev)
		hx_fail("no event within %d ms, want %s", hx_event_timeout_ms(),
			rdma_event_str(want));
	if (ev->event != want || ev->status)
		hx_fail("want %s, got %s status %d (%s)", rdma_event_str(want),
			rdma_event_str(ev->event), ev->status,
			strerror(ev->status < 0 ? -ev->status : ev->status));
	return ev;
}

void hx_expect_quiet(struct rdma_event_channel *ch, int timeout_ms,
		     const char *who)
{
	struct rdma_cm_event *ev = hx_next_event(ch, timeout_ms);

	if (ev)
		hx_fail("%s: unexpected %s status %d", who,
			rdma_event_str(ev->event), ev->status);
}

void hx_expect_no_event(struct rdma_event_channel *ch)
{
	hx_expect_quiet(ch, 0, "channel readable");
}

/*
 * Events whose status carries the error they report, or (USER) whatever
 * the program that wrote the event put there.
 */
static bool hx_status_is_data(enum rdma_cm_event_type t)
{
	switch (t) {
	case RDMA_CM_EVENT_ADDRINFO_ERROR:
	case RDMA_CM_EVENT_USER:
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		return true;
	default:
		return false;
	}
}

struct rdma_cm_event *hx_next_event_no_timewait(struct rdma_event_channel *ch,
						int timeout_ms)
{
	struct rdma_cm_event *ev;

	for (;;) {
		ev = hx_next_event(ch, timeout_ms);
		if (!ev || ev->event != RDMA_CM_EVENT_TIMEWAIT_EXIT)
			return ev;
		rdma_ack_cm_event(ev);
	}
}

struct rdma_cm_event *hx_expect_event_for(struct rdma_event_channel *ch,
					  enum rdma_cm_event_type want,
					  struct rdma_cm_id *id,
					  const char *who)
{
	int ms = hx_event_timeout_ms();
	struct rdma_cm_event *ev;

	if (want == RDMA_CM_EVENT_TIMEWAIT_EXIT)
		ev = hx_next_event(ch, ms);
	else
		ev = hx_next_event_no_timewait(ch, ms);
	if (!ev)
		hx_fail("%s: no %s within %d ms", who, rdma_event_str(want),
			ms);
	if (ev->event != want)
		hx_fail("%s: expected %s, got %s (status %d)", who,
			rdma_event_str(want), rdma_event_str(ev->event),
			ev->status);
	if (!hx_status_is_data(want) && ev->status)
		hx_fail("%s: %s with status %d", who, rdma_event_str(want),
			ev->status);
	if (id && ev->id != id)
		hx_fail("%s: %s for id %p, expected id %p", who,
			rdma_event_str(want), (void *)ev->id, (void *)id);
	return ev;
}

void hx_expect_ack(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
		   struct rdma_cm_id *id, const char *who)
{
	CHECK_OK(rdma_ack_cm_event(hx_expect_event_for(ch, want, id, who)));
}

socklen_t hx_parse_addr(const char *host, unsigned short port,
			struct sockaddr_storage *ss)
{
	struct addrinfo hints, *res;
	char service[8];
	socklen_t len;
	int ret;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(service, sizeof(service), "%u", port);
	ret = getaddrinfo(host, service, &hints, &res);
	if (ret)
		hx_fail("address '%s': %s", host, gai_strerror(ret));
	len = res->ai_addrlen;
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, len);
	freeaddrinfo(res);
	return len;
}

const char *hx_addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned int port = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)sa;

		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		port = ntohs(sin->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)sa;

		inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
		port = ntohs(sin6->sin6_port);
	} else {
		snprintf(buf, len, "<family %d>", sa->sa_family);
		return buf;
	}
	snprintf(buf, len, "%s port %u", host, port);
	return buf;
}

bool hx_same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr,
			       16);
	return false;
}

int hx_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		hx_fail("opendir /proc/self/fd: %s", strerror(errno));
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own fd */
}

long long hx_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double hx_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Words of @args before the first optional part ('[' or '('). */
static int hx_required_args(const char *args)
{
	int n = 0;

	for (;;) {
		args += strspn(args, " ");
		if (!*args || *args == '[' || *args == '(')
			return n;
		n++;
		args += strcspn(args, " ");
	}
}

static void hx_usage(const char *prog, const struct hx_scenario *table,
		     size_t n)
{
	size_t i;

	fprintf(stderr, "usage: %s SCENARIO ARGS...\n", prog);
	for (i = 0; i < n; i++)
		fprintf(stderr, "  %s %s\n", table[i].name, table[i].args);
}

int hx_main(int argc, char **argv, const struct hx_scenario *table, size_t n)
{
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		hx_usage(argv[0], table, n);
		return 2;
	}
	for (i = 0; i < n; i++) {
		if (strcmp(argv[1], table[i].name))
			continue;
		if (argc - 2 < hx_required_args(table[i].args))
			break;
		hx_set_name("%s", table[i].name);
		hx_watchdog(hx_timeout_s());
		if (table[i].run(argc - 1, argv + 1))
			return HX_EXIT_FAIL;
		hx_pass();
		return HX_EXIT_PASS;
	}
	if (i == n)
		fprintf(stderr, "%s: no scenario '%s'\n", argv[0], argv[1]);
	hx_usage(argv[0], table, n);
	return 2;
}
