// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * librspreload's readiness calls (src/preload/poll.c, epoll.c), run under
 * this build's librspreload.so: poll, select and epoll over a set that
 * mixes a UDP socket carried by a datagram rsocket with a pipe report both
 * under the program's descriptor numbers (__ppoll_chk and epoll_pwait2
 * too), a one-shot rsocket member of an epoll set is disarmed after its
 * first report, and an rsocket that another thread adds to a set wakes
 * the thread already waiting on it (as the kernel's epoll does: Apache's
 * event MPM adds a socket that could not take more bytes from a worker
 * while its listener waits); a child forked while another thread changes
 * a set makes sets of its own.
 */
#include <config.h>

#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "preload_child.h"
#include "unit.h"

/* poll: the number ready, then the socket's and the pipe's revents. */
static void try_poll(int u, int r)
{
	struct pollfd fds[2] = {{.fd = u, .events = POLLIN | POLLOUT},
				{.fd = r, .events = POLLIN}};
	int n = poll(fds, 2, 1000);

	printf("poll %d %d %d", n, fds[0].revents, fds[1].revents);
}

int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		const sigset_t *mask, size_t fdslen);

/* ppoll as a fortified program calls it: the same three numbers. */
static void try_ppoll_chk(int u, int r)
{
	struct pollfd fds[2] = {{.fd = u, .events = POLLIN | POLLOUT},
				{.fd = r, .events = POLLIN}};
	struct timespec ts = {.tv_sec = 1};
	int n = __ppoll_chk(fds, 2, &ts, NULL, sizeof(fds));

	printf(" ppoll_chk %d %d %d", n, fds[0].revents, fds[1].revents);
}

/* select: the count, then the socket readable, writable, the pipe readable. */
static void try_select(int u, int r)
{
	struct timeval tv = {.tv_sec = 1};
	fd_set rd, wr;
	int n;

	FD_ZERO(&rd);
	FD_ZERO(&wr);
	FD_SET(u, &rd);
	FD_SET(r, &rd);
	FD_SET(u, &wr);
	n = select((u > r ? u : r) + 1, &rd, &wr, NULL, &tv);
	printf(" select %d %d %d %d", n, FD_ISSET(u, &rd) != 0,
	       FD_ISSET(u, &wr) != 0, FD_ISSET(r, &rd) != 0);
}

/* epoll: the events of two waits, the socket a one-shot member. */
static void try_epoll(int u, int r)
{
	struct epoll_event ev = {.events = EPOLLOUT | EPOLLONESHOT}, out[4];
	int ep = epoll_create1(0), first, second;

	ev.data.fd = u;
	epoll_ctl(ep, EPOLL_CTL_ADD, u, &ev);
	ev.events = EPOLLIN;
	ev.data.fd = r;
	epoll_ctl(ep, EPOLL_CTL_ADD, r, &ev);
	first = epoll_wait(ep, out, 4, 1000);
	second = epoll_wait(ep, out, 4, 0);
	printf(" epoll %d %d %d", first, second,
	       second == 1 && out[0].data.fd == r);
	close(ep);
}

/* epoll_pwait2: the count, then the socket among them. */
static void try_epoll_pwait2(int u, int r)
{
	struct epoll_event ev = {.events = EPOLLOUT}, out[4];
	struct timespec ts = {.tv_sec = 1};
	int ep = epoll_create1(0), n;

	ev.data.fd = u;
	epoll_ctl(ep, EPOLL_CTL_ADD, u, &ev);
	ev.events = EPOLLIN;
	ev.data.fd = r;
	epoll_ctl(ep, EPOLL_CTL_ADD, r, &ev);
	n = epoll_pwait2(ep, out, 4, &ts, NULL);
	printf(" pwait2 %d %d\n", n,
	       n == 2 && (out[0].data.fd == u || out[1].data.fd == u));
	close(ep);
}

/*
 * The runner's --poll-child mode, run under the preload: a UDP socket
 * (a datagram rsocket, writable, nothing to read) and a pipe with a byte
 * in it, asked of each call in turn; one line, written at once.
 */
int preload_poll_child(int argc, char **argv)
{
	int u = socket(AF_INET, SOCK_DGRAM, 0), p[2];

	(void)argc;
	(void)argv;
	if (u < 0 || pipe(p) || write(p[1], "x", 1) != 1) {
		printf("bad setup\n");
		return 1;
	}
	try_poll(u, p[0]);
	try_ppoll_chk(u, p[0]);
	try_select(u, p[0]);
	try_epoll(u, p[0]);
	try_epoll_pwait2(u, p[0]);
	fflush(stdout);
	return 0;
}

struct late_member {
	int ep, fd;
};

/* Adds the socket to the set while the main thread waits on it. */
static void *add_late(void *arg)
{
	struct late_member *m = arg;
	struct epoll_event ev = {.events = EPOLLOUT, .data.fd = m->fd};

	usleep(200 * 1000);
	if (epoll_ctl(m->ep, EPOLL_CTL_ADD, m->fd, &ev))
		perror("epoll_ctl");
	return NULL;
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/*
 * Waits up to 10 s on @ep while another thread adds the writable datagram
 * rsocket @fd to it; prints the events, the socket among them, and
 * whether the wait ended within 5 s.
 */
static void wait_for_late(int ep, int fd)
{
	struct late_member m = {.ep = ep, .fd = fd};
	struct epoll_event out[4];
	struct timespec t0;
	pthread_t t;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_create(&t, NULL, add_late, &m);
	n = epoll_wait(ep, out, 4, 10 * 1000);
	printf(" %d %d %d", n, n == 1 && out[0].data.fd == fd,
	       ms_since(&t0) < 5000);
	pthread_join(t, NULL);
}

/*
 * The runner's --epoll-late-child mode, run under the preload: a thread
 * adds a writable datagram rsocket to a set another thread waits on, a
 * set whose only member is an empty pipe (the wait is in the kernel's
 * epoll_wait), then a set whose only member is an rsocket with nothing
 * to read; one line.
 */
int preload_epoll_late_child(int argc, char **argv)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int p[2], quiet = socket(AF_INET, SOCK_DGRAM, 0), ep[2];

	(void)argc;
	(void)argv;
	ep[0] = epoll_create1(0);
	ep[1] = epoll_create1(0);
	if (quiet < 0 || ep[0] < 0 || ep[1] < 0 || pipe(p)) {
		printf("bad setup\n");
		return 1;
	}
	ev.data.fd = p[0];
	epoll_ctl(ep[0], EPOLL_CTL_ADD, p[0], &ev);
	ev.data.fd = quiet;
	epoll_ctl(ep[1], EPOLL_CTL_ADD, quiet, &ev);
	printf("epoll");
	wait_for_late(ep[0], socket(AF_INET, SOCK_DGRAM, 0));
	wait_for_late(ep[1], socket(AF_INET, SOCK_DGRAM, 0));
	printf("\n");
	fflush(stdout);
	return 0;
}

struct set_churn {
	int ep, fd;
	bool stop;
};

/* One rsocket in and out of a set: most of the time in the set's lock. */
static void *add_and_remove_again(void *arg)
{
	struct set_churn *c = arg;
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = c->fd};

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE) &&
	       !epoll_ctl(c->ep, EPOLL_CTL_ADD, c->fd, &ev) &&
	       !epoll_ctl(c->ep, EPOLL_CTL_DEL, c->fd, NULL))
		;
	return NULL;
}

/* A socket and a set of the child's own, the socket a member. */
static bool makes_a_set_of_its_own(void *arg)
{
	struct epoll_event ev = {.events = EPOLLOUT};
	int u = socket(AF_INET, SOCK_DGRAM, 0), ep = epoll_create1(0);

	(void)arg;
	return u >= 0 && ep >= 0 && !epoll_ctl(ep, EPOLL_CTL_ADD, u, &ev);
}

/*
 * The runner's --epoll-fork-child mode, run under the preload: twenty
 * forks while a thread adds a datagram rsocket to a set and takes it out
 * again; each child makes a socket and a set and adds one to the other.
 * One line: whether a child failed or hung.
 */
int preload_epoll_fork_child(int argc, char **argv)
{
	struct set_churn c = {.ep = epoll_create1(0),
			      .fd = socket(AF_INET, SOCK_DGRAM, 0)};

	(void)argc;
	(void)argv;
	if (c.ep < 0 || c.fd < 0) {
		printf("bad setup\n");
		return 1;
	}
	printf("failed %d\n",
	       unit_forks_failing_beside(add_and_remove_again, &c, &c.stop,
					 makes_a_set_of_its_own));
	fflush(stdout);
	return 0;
}

START_TEST(mixed_sets_report_both_kinds)
{
	char path[] = "/tmp/rsp-poll-log.XXXXXX", out[256], want[160];
	int status;

	status = unit_run_preloaded(
		path, (char *[]){"preload_poll_test", "--poll-child", NULL},
		out, sizeof(out));
	ck_assert_msg(strstr(slurp(path), "datagram rsocket"), "log: %s",
		      slurp(path));
	unlink(path);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child: %s", out);
	snprintf(want, sizeof(want),
		 "poll 2 %d %d ppoll_chk 2 %d %d select 2 0 1 1 epoll 2 1 1 "
		 "pwait2 2 1\n",
		 POLLOUT, POLLIN, POLLOUT, POLLIN);
	ck_assert_str_eq(out, want);
}
END_TEST

/* The runner's @mode, run under the preload, must print @want. */
static void preloaded_child_prints(const char *mode, const char *want)
{
	char path[] = "/tmp/rsp-poll-log.XXXXXX", out[256];
	int status;

	status = unit_run_preloaded(
		path, (char *[]){"preload_poll_test", (char *)mode, NULL}, out,
		sizeof(out));
	unlink(path);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child: %s", out);
	ck_assert_str_eq(out, want);
}

START_TEST(a_member_added_meanwhile_wakes_the_waiter)
{
	preloaded_child_prints("--epoll-late-child", "epoll 1 1 1 1 1 1\n");
}
END_TEST

/*
 * A child forked while another thread changes an epoll set makes sets of
 * its own: the lock that thread may have held is not the child's.
 */
START_TEST(a_child_forked_during_a_change_makes_sets)
{
	preloaded_child_prints("--epoll-fork-child", "failed 0\n");
}
END_TEST

Suite *preload_poll_suite(void)
{
	Suite *s = suite_create("preload_poll");
	TCase *tc = tcase_create("poll");

	tcase_add_test(tc, mixed_sets_report_both_kinds);
	tcase_add_test(tc, a_member_added_meanwhile_wakes_the_waiter);
	tcase_add_test(tc, a_child_forked_during_a_change_makes_sets);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
