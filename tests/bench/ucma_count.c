// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * ucma_count.so: an LD_PRELOAD shim for measuring, not for tests.  It
 * counts the rdma_ucm commands a process writes (by command) and the
 * events it reads (by event), and times two phases: from the first
 * RESOLVE_ADDR to the last ROUTE_RESOLVED, and from then to the last
 * ESTABLISHED; and sums, over the ids, how long each RESOLVE_ADDR and
 * RESOLVE_ROUTE took until its event was read.  At exit it prints one line to the file named by
 * UCMA_COUNT_OUT (appended; stderr if unset):
 *
 *   ucma pid=<pid> cmd.<NAME>=<n> ... ev.<NAME>=<n> ... cpu_ms=<t> addr_wait_ms=<t>
 *   route_wait_ms=<t> resolve_ms=<t> connect_ms=<t>
 *
 * Every command to the rdma_cm device is a write(2) of a header (command
 * number, sizes) and the command; GET_EVENT's response pointer is its first
 * field, and the event number sits at byte 12 of the response.  The
 * library calls write through the PLT, so the shim sees all of them.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define NCMD 32
#define NEV 24
#define FD_CACHE 64

static const char *const cmd_names[NCMD] = {
	"CREATE_ID",	 "DESTROY_ID",	 "BIND_IP",    "RESOLVE_IP",
	"RESOLVE_ROUTE", "QUERY_ROUTE",	 "CONNECT",    "LISTEN",
	"ACCEPT",	 "REJECT",	 "DISCONNECT", "INIT_QP_ATTR",
	"GET_EVENT",	 "GET_OPTION",	 "SET_OPTION", "NOTIFY",
	"JOIN_IP_MCAST", "LEAVE_MCAST",	 "MIGRATE_ID", "QUERY",
	"BIND",		 "RESOLVE_ADDR", "JOIN_MCAST",
};

static const char *const ev_names[NEV] = {
	"ADDR_RESOLVED",  "ADDR_ERROR",	     "ROUTE_RESOLVED",
	"ROUTE_ERROR",	  "CONNECT_REQUEST", "CONNECT_RESPONSE",
	"CONNECT_ERROR",  "UNREACHABLE",     "REJECTED",
	"ESTABLISHED",	  "DISCONNECTED",    "DEVICE_REMOVAL",
	"MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE",
	"TIMEWAIT_EXIT",
};

static unsigned long cmds[NCMD], evs[NEV];
/* Per kernel id handle: when its RESOLVE_ADDR / RESOLVE_ROUTE went out. */
#define NHANDLE 4096
static double addr_sent[NHANDLE], route_sent[NHANDLE];
static double addr_wait, route_wait; /* summed command-to-event times */
static double t_first_resolve, t_last_route, t_last_est;
static struct {
	int fd;
	int is_cm;
} cache[FD_CACHE];
static unsigned int ncache;
static ssize_t (*real_write)(int, const void *, size_t);
/* The application's rdma_get_cm_event calls, and those with nothing. */
static unsigned long gets, gets_empty;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Whether @fd is the rdma_cm device; remembered (fds are not reused here). */
static int is_cm_fd(int fd)
{
	char link[64], path[64];
	unsigned int i;
	ssize_t n;

	for (i = 0; i < ncache; i++)
		if (cache[i].fd == fd)
			return cache[i].is_cm;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n < 0)
		return 0;
	path[n] = 0;
	if (ncache < FD_CACHE) {
		cache[ncache].fd = fd;
		cache[ncache].is_cm = !strcmp(path, "/dev/infiniband/rdma_cm");
		return cache[ncache++].is_cm;
	}
	return !strcmp(path, "/dev/infiniband/rdma_cm");
}

ssize_t write(int fd, const void *buf, size_t len)
{
	uint32_t cmd, ev;
	uint64_t resp;
	ssize_t ret;

	if (!real_write)
		real_write = (ssize_t(*)(int, const void *, size_t))dlsym(
			RTLD_NEXT, "write");
	if (len < 16 || !is_cm_fd(fd))
		return real_write(fd, buf, len);
	memcpy(&cmd, buf, sizeof(cmd));
	if (cmd < NCMD)
		cmds[cmd]++;
	if (cmd == 21 && !t_first_resolve)
		t_first_resolve = now_ms();
	if (cmd == 21) { /* the id is the first field after the header */
		uint32_t h;

		memcpy(&h, (const char *)buf + 8, sizeof(h));
		if (h < NHANDLE)
			addr_sent[h] = now_ms();
	}
	if (cmd == 4) {
		uint32_t h;

		memcpy(&h, (const char *)buf + 8, sizeof(h));
		if (h < NHANDLE)
			route_sent[h] = now_ms();
	}
	ret = real_write(fd, buf, len);
	if (cmd == 12 && ret == (ssize_t)len) {
		memcpy(&resp, (const char *)buf + 8, sizeof(resp));
		memcpy(&ev, (const char *)(uintptr_t)resp + 12, sizeof(ev));
		uint32_t h;

		memcpy(&h, (const char *)(uintptr_t)resp + 8, sizeof(h));
		if (ev < NEV)
			evs[ev]++;
		if (ev == 0 && h < NHANDLE && addr_sent[h] > 0)
			addr_wait += now_ms() - addr_sent[h];
		if (ev == 2 && h < NHANDLE && route_sent[h] > 0)
			route_wait += now_ms() - route_sent[h];
		if (ev == 2)
			t_last_route = now_ms();
		if (ev == 9)
			t_last_est = now_ms();
	}
	return ret;
}

/*
 * Wake-ups without an event: a program that polls the channel fd and then
 * reads non-blocking sees them as EAGAIN.  Only the program's own calls
 * come here (the library's internal ones do not go through the PLT).
 */
struct rdma_event_channel;
struct rdma_cm_event;
int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	static int (*real)(struct rdma_event_channel *,
			   struct rdma_cm_event **);
	int ret;

	if (!real)
		real = (int (*)(struct rdma_event_channel *,
				struct rdma_cm_event **))
			dlsym(RTLD_NEXT, "rdma_get_cm_event");
	ret = real(ch, ev);
	gets++;
	if (ret && errno == EAGAIN)
		gets_empty++;
	return ret;
}

static void __attribute__((destructor)) report(void)
{
	const char *out = getenv("UCMA_COUNT_OUT");
	struct rusage ru;
	char line[2048];
	size_t n = 0;
	unsigned int i;
	int fd = 2;

	n += (size_t)snprintf(line + n, sizeof(line) - n, "ucma pid=%d",
			      (int)getpid());
	for (i = 0; i < NCMD; i++)
		if (cmds[i] && cmd_names[i])
			n += (size_t)snprintf(line + n, sizeof(line) - n,
					      " cmd.%s=%lu", cmd_names[i],
					      cmds[i]);
	for (i = 0; i < NEV; i++)
		if (evs[i] && ev_names[i])
			n += (size_t)snprintf(line + n, sizeof(line) - n,
					      " ev.%s=%lu", ev_names[i],
					      evs[i]);
	/* CPU time of the whole process: the test bed's scarce resource. */
	getrusage(RUSAGE_SELF, &ru);
	n += (size_t)snprintf(line + n, sizeof(line) - n,
			      " get_event=%lu get_event_empty=%lu", gets,
			      gets_empty);
	n += (size_t)snprintf(
		line + n, sizeof(line) - n, " cpu_ms=%.1f",
		(double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
			(double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) /
				1e3);
	n += (size_t)snprintf(
		line + n, sizeof(line) - n,
		" addr_wait_ms=%.1f route_wait_ms=%.1f resolve_ms=%.1f "
		"connect_ms=%.1f\n",
		addr_wait, route_wait,
		t_last_route > t_first_resolve ? t_last_route - t_first_resolve
					       : 0.0,
		t_last_est > t_last_route ? t_last_est - t_last_route : 0.0);
	if (out)
		fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd >= 0 && real_write)
		real_write(fd, line, n < sizeof(line) ? n : sizeof(line) - 1);
	if (fd > 2)
		close(fd);
}
