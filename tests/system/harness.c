// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The shared system-test harness (see harness.h).  Everything the signal
 * handler prints is formatted beforehand, so it only calls write(2).
 */
#include "harness.h"

#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char hx_test_name[128] = "test";
static char hx_cur_stage[256] = "start";
static char hx_alarm_line[512];
static unsigned int hx_alarm_secs;

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
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	printf("FAIL %s: %s (stage: %s)\n", hx_test_name, why, hx_cur_stage);
	fflush(stdout);
	exit(HX_EXIT_FAIL);
}

void hx_skip(const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	printf("SKIP %s: %s\n", hx_test_name, why);
	fflush(stdout);
	exit(HX_EXIT_SKIP);
}

void hx_pass(void)
{
	printf("PASS %s\n", hx_test_name);
	fflush(stdout);
}

void hx_note(const char *fmt, ...)
{
	va_list ap;

	printf("# %s: ", hx_test_name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
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

int hx_event_timeout_ms(void)
{
	return hx_env_int("RDMACM_HX_EVENT_TIMEOUT_MS", 10000);
}

unsigned int hx_timeout_s(void)
{
	return (unsigned int)hx_env_int("RDMACM_HX_TIMEOUT", 60);
}

struct rdma_cm_event *hx_expect_event(struct rdma_event_channel *ch,
				      enum rdma_cm_event_type want)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;
	int n;

	do
		n = poll(&pfd, 1, hx_event_timeout_ms());
	while (n < 0 && errno == EINTR);
	if (n < 0)
		hx_fail("poll on the channel for %s: %s", rdma_event_str(want),
			strerror(errno));
	if (n == 0)
		hx_fail("no event within %d ms, want %s", hx_event_timeout_ms(),
			rdma_event_str(want));
	/* The fd said readable: rdma-core's contract is that this does not
	 * block (the watchdog catches a library that breaks it). */
	if (rdma_get_cm_event(ch, &ev))
		hx_fail("rdma_get_cm_event (want %s): %s", rdma_event_str(want),
			strerror(errno));
	if (ev->event != want || ev->status)
		hx_fail("want %s, got %s status %d (%s)", rdma_event_str(want),
			rdma_event_str(ev->event), ev->status,
			strerror(ev->status < 0 ? -ev->status : ev->status));
	return ev;
}

void hx_expect_no_event(struct rdma_event_channel *ch)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, 0) <= 0)
		return;
	if (rdma_get_cm_event(ch, &ev))
		hx_fail("channel readable, but rdma_get_cm_event: %s",
			strerror(errno));
	hx_fail("unexpected %s status %d", rdma_event_str(ev->event),
		ev->status);
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
		hx_set_name("%s", table[i].name);
		hx_watchdog(hx_timeout_s());
		if (table[i].run(argc - 1, argv + 1))
			return HX_EXIT_FAIL;
		hx_pass();
		return HX_EXIT_PASS;
	}
	fprintf(stderr, "%s: no scenario '%s'\n", argv[0], argv[1]);
	hx_usage(argv[0], table, n);
	return 2;
}
