/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The shared system-test harness: what every program under tests/system
 * needs besides its scenarios, written the way an outside program would
 * use librdmacm (its own poll loop, blocking reads of the channel).
 *
 * - Reporting: one "PASS name", "FAIL name: why" or "SKIP name: why" line
 *   per scenario; exit status 0, 1, 3 (watchdog) or 77 (skip).
 * - Stages and a watchdog: hx_stage() names what the program is doing;
 *   when the alarm fires, the FAIL line names the stage that hung.
 * - Event expectations: poll(2) on channel->fd with a timeout, then a
 *   BLOCKING rdma_get_cm_event, as rdma-core's contract allows.
 * - Address parsing (IPv4/IPv6 literals or names) through getaddrinfo.
 * - A scenario table and a main that runs one scenario by name.
 * - One error convention: EXPECT_ERR(call, want_errno).
 *
 * The harness calls nothing whose symbol version differs between
 * librdmacm builds, so a test binary can run on rdma-core's library too.
 */
#ifndef RDMACM_TESTS_HARNESS_H
#define RDMACM_TESTS_HARNESS_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include <rdma/rdma_cma.h>

#define HX_EXIT_PASS 0
#define HX_EXIT_FAIL 1
#define HX_EXIT_WATCHDOG 3
#define HX_EXIT_SKIP 77

/*
 * One scenario: run() returns 0 (hx_main prints PASS with the name set
 * then) or calls hx_fail/hx_skip.
 */
struct hx_scenario {
	const char *name;
	const char *args; /* usage text for the arguments after the name */
	int (*run)(int argc, char **argv); /* argv[0] is the scenario name */
};

/*
 * Run the scenario argv[1] from @table (n entries) with the arguments
 * after it; without arguments, list the table.  The words of a scenario's
 * args text before the first '[' or '(' are required: with fewer
 * arguments the usage is printed (exit 2) instead of running it.  The watchdog is armed
 * for hx_timeout_s() seconds first.  Returns the exit status.
 */
int hx_main(int argc, char **argv, const struct hx_scenario *table, size_t n);

/* The name in PASS/FAIL lines ("extqp", or "extqp/server" in a role). */
void hx_set_name(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *hx_name(void);

/*
 * What the program is doing now, for FAIL and watchdog lines
 * (RDMACM_HX_TRACE=1 also prints each stage on stderr).
 */
void hx_stage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * (Re)arm the watchdog: after @seconds, FAIL with the stage, exit 3.  A
 * forked process must arm its own (alarms are not inherited).
 */
void hx_watchdog(unsigned int seconds);
/* RDMACM_HX_TIMEOUT seconds, default 60 (or the program's, below). */
unsigned int hx_timeout_s(void);
/* A program whose runs are longer sets its default before hx_main. */
void hx_set_default_timeout_s(unsigned int seconds);

/*
 * Print FAIL (with the stage) and exit 1.  From the main thread exit
 * handlers run (a test may reap its children there); from any other
 * thread the process ends with _exit, since the main thread may be
 * inside the library.
 */
void hx_fail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
/* Print SKIP and exit 77. */
void hx_skip(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
/* Print PASS (with the detail, if one was set: "PASS name (detail)"). */
void hx_pass(void);
/* A figure for the PASS line, e.g. "6 headers refused". */
void hx_set_detail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A line of detail ("# ..."), shown with the test's output. */
void hx_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Event waits time out after RDMACM_HX_EVENT_TIMEOUT_MS (default 10000). */
int hx_event_timeout_ms(void);
/* For a scenario that waits on the kernel's own long timers. */
void hx_set_event_timeout_ms(int ms);

/*
 * The next event on @ch: poll(2) on ch->fd for @timeout_ms, then a
 * blocking rdma_get_cm_event.  NULL when nothing came in time; fails the
 * test when the read fails after poll said readable (on a non-blocking
 * channel EAGAIN means poll again until the deadline).
 */
struct rdma_cm_event *hx_next_event(struct rdma_event_channel *ch,
				    int timeout_ms);
/*
 * The same, passing over TIMEWAIT_EXIT events (an earlier connection's
 * leftovers) for ids that live through several connections.
 */
struct rdma_cm_event *hx_next_event_no_timewait(struct rdma_event_channel *ch,
						int timeout_ms);

/*
 * Wait for the next event on @ch: poll(2) on ch->fd, then a blocking
 * rdma_get_cm_event.  Fails the test on timeout, on an error, or when the
 * event is not @want (naming what arrived, with its status).  A @want
 * event with a non-zero status fails too.  The caller acks the event.
 */
struct rdma_cm_event *hx_expect_event(struct rdma_event_channel *ch,
				      enum rdma_cm_event_type want);

/*
 * For a state where nothing can be pending: channel->fd must not be
 * readable right now (rdma-core's contract: readable means an event is
 * there); if it is, the event is read and named in the failure.
 */
void hx_expect_no_event(struct rdma_event_channel *ch);

/* The same, for @timeout_ms: nothing may arrive in that time. */
void hx_expect_quiet(struct rdma_event_channel *ch, int timeout_ms,
		     const char *who);

/*
 * A tolerant expectation for ids that live through several connections:
 * wait for @want, skipping a TIMEWAIT_EXIT left by an earlier connection
 * (unless that is @want); the event must be for @id (any if NULL); a
 * non-zero status fails every event except those that report an error
 * (ADDR_ERROR, ROUTE_ERROR, CONNECT_ERROR, UNREACHABLE, REJECTED,
 * MULTICAST_ERROR, ADDRINFO_ERROR) and USER (its status is the writer's),
 * so these can be expected with their status.  @who
 * names the end in the failure.  The caller acks.
 */
struct rdma_cm_event *hx_expect_event_for(struct rdma_event_channel *ch,
					  enum rdma_cm_event_type want,
					  struct rdma_cm_id *id,
					  const char *who);
/* hx_expect_event_for, then ack the event. */
void hx_expect_ack(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
		   struct rdma_cm_id *id, const char *who);

/*
 * Parse @host (a numeric IPv4/IPv6 address or a name) and @port into
 * @ss; returns the address length, fails the test when it cannot.
 */
socklen_t hx_parse_addr(const char *host, unsigned short port,
			struct sockaddr_storage *ss);

/* "ADDR port N" for an IPv4/IPv6 address, into @buf; returns @buf. */
const char *hx_addr_str(const struct sockaddr *sa, char *buf, size_t len);
/* Same family and IP address (ports ignored). */
bool hx_same_ip(const struct sockaddr *a, const struct sockaddr *b);

/* Open file descriptors of this process (from /proc/self/fd). */
int hx_count_fds(void);
/* CLOCK_MONOTONIC in milliseconds, and in seconds. */
long long hx_now_ms(void);
double hx_now_s(void);

/*
 * Checks that go on after a failure: after hx_collect(), hx_result()
 * (and so EXPECT_ERR) prints "# ok: ..." or "# BAD: ..." and counts
 * instead of failing; hx_verdict() then fails naming the first bad check
 * or returns 0.  Without hx_collect(), a bad result fails at once.
 */
void hx_collect(void);
void hx_result(bool ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int hx_verdict(void);

/* A UD receive buffer starts with the 40-byte GRH. */
#define HX_GRH_LEN 40
/* The kernel's own ENOTSUPP, leaked to user space (IPv6 multicast on RoCE v2). */
#define HX_KERNEL_ENOTSUPP 524

/* Fail unless @cond holds; the message says which check and why. */
#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			hx_fail(__VA_ARGS__);                                  \
	} while (0)

/* Fail unless @call (an int-returning librdmacm call) returned 0. */
#define CHECK_OK(call)                                                         \
	do {                                                                   \
		if ((call) != 0)                                               \
			hx_fail("%s: %s", #call, strerror(errno));             \
	} while (0)

/*
 * The one error convention: @call must fail (return -1, or a NULL
 * pointer compared by the caller as `call == NULL ? -1 : 0`) with errno
 * @want_errno (any errno when @want_errno is 0).  A bad result goes
 * through hx_result: it fails at once, or is counted after hx_collect().
 */
#define EXPECT_ERR(call, want_errno)                                           \
	do {                                                                   \
		errno = 0;                                                     \
		int hx_ret_ = (call);                                          \
		int hx_err_ = errno;                                           \
		int hx_want_ = (want_errno);                                   \
		hx_result(hx_ret_ == -1 && (!hx_want_ || hx_err_ == hx_want_), \
			  "%s: returned %d errno %d (%s), want -1 errno %s",   \
			  #call, hx_ret_, hx_err_, strerror(hx_err_),          \
			  hx_want_ ? strerror(hx_want_) : "any");              \
	} while (0)

#endif
