// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rstream: stream throughput and latency over rsockets (or, with -T s,
 * ordinary TCP sockets), client and server, interoperable with rdma-core's
 * rstream.
 *
 * Each test is a ping-pong of "transfers": the client sends count
 * transfers of size bytes and the server then sends as many back, repeated
 * iterations times.  A 16-byte exchange precedes each test so both sides
 * start it together.  Without -I, -C or -S the run is a latency series
 * (one transfer per iteration) on one connection, then a bandwidth series
 * (many transfers, one iteration) on a second one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "stream_common.h"

static struct st_opts opts;
static void *buf;
static pid_t child; /* -T f: the server's child for this connection */

static int send_xfer(int fd, int size)
{
	if (opts.verify)
		st_fill(buf, size);
	return st_send_all(&opts, fd, buf, size);
}

static int recv_xfer(int fd, int size)
{
	if (st_recv_all(&opts, fd, buf, size))
		return -1;
	return opts.verify ? st_check(buf, size) : 0;
}

/* The client speaks first, in the sync exchange as in the test. */
static int exchange(int fd, int size, int count, bool client_first)
{
	int i, ret = 0;

	for (i = 0; i < count && !ret; i++)
		ret = client_first ? send_xfer(fd, size) : recv_xfer(fd, size);
	for (i = 0; i < count && !ret; i++)
		ret = client_first ? recv_xfer(fd, size) : send_xfer(fd, size);
	return ret;
}

static int run_test(int fd, struct st_test *t)
{
	bool client = opts.dst != NULL;
	int i;

	if (exchange(fd, 16, 1, client))
		return -1;
	t->start_us = ex_now_us();
	for (i = 0; i < t->iterations; i++)
		if (exchange(fd, t->size, t->count, client))
			return -1;
	t->end_us = ex_now_us();
	st_print_result(t);
	return 0;
}

/* A connection for the next series: -1, or the socket. */
static int open_conn(int lfd)
{
	int fd;

	if (opts.dst)
		return st_connect(&opts);
	fd = st_accept(&opts, lfd);
	if (fd >= 0 && opts.fork) {
		child = fork();
		if (child < 0) {
			ex_syserr("fork");
			opts.ops->close(fd);
			return -1;
		}
	}
	return fd;
}

/* Ends a connection; a forking server's parent only waits for its child. */
static int close_conn(int fd)
{
	int status = 0;

	if (child > 0) {
		waitpid(child, &status, 0);
		opts.ops->close(fd);
		child = 0;
		return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
	}
	opts.ops->shutdown(fd, SHUT_RDWR);
	opts.ops->close(fd);
	return 0;
}

static int run_series(int lfd, enum st_tuning tuning)
{
	const struct st_size *sizes;
	size_t n = st_sizes(&sizes), i;
	struct st_test t;
	int fd, ret = 0;

	opts.tuning = tuning;
	fd = open_conn(lfd);
	if (fd < 0)
		return -1;
	for (i = 0; i < n && !ret && child <= 0; i++) {
		if (sizes[i].with_all && !opts.all_sizes)
			continue;
		if (tuning == ST_TUNE_LATENCY)
			st_latency_test(&t, sizes[i].size);
		else
			st_bandwidth_test(&t, sizes[i].size);
		ret = run_test(fd, &t);
	}
	if (child == 0 && opts.fork && !opts.dst) {
		/* The forked child ends here, after its own connection. */
		opts.ops->shutdown(fd, SHUT_RDWR);
		opts.ops->close(fd);
		exit(ret ? EX_FAIL : EX_OK);
	}
	return close_conn(fd) || ret;
}

static int run_custom(int lfd)
{
	struct st_test t;
	int fd, ret = 0;

	opts.tuning = ST_TUNE_CUSTOM;
	fd = open_conn(lfd);
	if (fd < 0)
		return -1;
	if (child <= 0) {
		st_custom_test(&t, &opts);
		ret = run_test(fd, &t);
	}
	if (child == 0 && opts.fork && !opts.dst) {
		close_conn(fd);
		exit(ret ? EX_FAIL : EX_OK);
	}
	return close_conn(fd) || ret;
}

static int run(void)
{
	int lfd = -1, ret;

	buf = malloc(st_max_size(&opts));
	if (!buf) {
		ex_syserr("malloc");
		return -1;
	}
	if (!opts.dst) {
		lfd = st_listen(&opts);
		if (lfd < 0) {
			free(buf);
			return -1;
		}
	}
	st_print_header();
	if (opts.custom)
		ret = run_custom(lfd);
	else
		ret = run_series(lfd, ST_TUNE_LATENCY) ||
		      run_series(lfd, ST_TUNE_BANDWIDTH);
	if (lfd >= 0)
		opts.ops->close(lfd);
	free(buf);
	return ret;
}

static void usage(void)
{
	printf("usage: %s [-s server_address] [-b bind_address] [options]\n"
	       "  -s address   be a client of the server at address\n"
	       "  -b address   bind to (server: listen on) address\n"
	       "  -f format    address format: name, ip, ipv6 or gid\n"
	       "  -B size      socket buffer size (default 512 KiB)\n"
	       "  -i size      inline data size for latency tests (default "
	       "64)\n"
	       "  -I count     iterations of a custom test\n"
	       "  -C count     transfers per iteration of a custom test\n"
	       "  -S size      transfer size of a custom test, or 'all' sizes\n"
	       "  -p port      port number (default %s)\n"
	       "  -k seconds   TCP keepalive time\n"
	       "  -T test      s|socket: TCP sockets instead of rsockets\n"
	       "               a|async: wait in poll before each call\n"
	       "               b|blocking, n|nonblocking (default) calls\n"
	       "               f|fork: the server forks (TCP sockets)\n"
	       "               r|resolve: resolve with rdma_getaddrinfo\n"
	       "               v|verify: verify the data\n",
	       ex_prog(), ST_DEFAULT_PORT);
}

int main(int argc, char **argv)
{
	int op, ret;

	ex_init(argv[0]);
	st_opts_init(&opts);
	while ((op = getopt(argc, argv, "s:b:f:B:i:I:C:S:p:k:T:h")) != -1) {
		if (op == 'h') {
			usage();
			return EX_OK;
		}
		ret = st_parse_opt(&opts, op, optarg, "sabfnrv");
		if (ret)
			return ret < 0 ? EX_USAGE : ex_usage_hint();
	}
	if (optind < argc) {
		ex_err("unexpected argument '%s'", argv[optind]);
		return ex_usage_hint();
	}
	st_opts_done(&opts);
	return run() ? EX_FAIL : EX_OK;
}
