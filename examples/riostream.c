// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * riostream: rstream's test over rsocket direct placement (riomap and
 * riowrite), interoperable with rdma-core's riostream.
 *
 * Each side maps its transfer buffer for the peer at offset 0 and writes
 * into the peer's with riowrite().  Nothing tells the receiver that data
 * arrived, so the last byte of each iteration's final transfer carries a
 * marker that counts up from 0; the receiver spins on that byte in its own
 * buffer.  With -T v the final transfer's other bytes carry the pattern.
 * A 16-byte rsend/rrecv exchange starts each test.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "common.h"
#include "stream_common.h"

static struct st_opts opts;
static uint8_t *buf;

static int write_xfer(int fd, int size)
{
	size_t done = 0, n;

	while (done < (size_t)size) {
		if (opts.async) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};

			if (rpoll(&p, 1, opts.poll_timeout) < 0) {
				ex_syserr("rpoll");
				return -1;
			}
		}
		n = riowrite(fd, buf + done, size - done, done, opts.msg_flags);
		if ((ssize_t)n > 0) {
			done += n;
		} else if ((ssize_t)n < 0 && errno != EAGAIN &&
			   errno != EWOULDBLOCK && errno != EINTR) {
			ex_syserr("riowrite");
			return -1;
		}
	}
	return 0;
}

/* A hang-up or error on the connection, checked while spinning. */
static bool conn_broken(int fd)
{
	struct pollfd p = {.fd = fd, .events = 0};

	return rpoll(&p, 1, 0) < 0 || (p.revents & (POLLERR | POLLHUP));
}

static int wait_marker(int fd, int size, uint8_t marker)
{
	uint8_t *last = buf + size - 1;
	unsigned long spins = 0;

	/* The peer's RDMA write lands the marker last: acquire orders the rest. */
	while (__atomic_load_n(last, __ATOMIC_ACQUIRE) != marker) {
		if (++spins % (1UL << 22) == 0 && conn_broken(fd)) {
			ex_err("the connection failed while waiting for data");
			return -1;
		}
	}
	return opts.verify ? st_check(buf, size - 1) : 0;
}

static int send_burst(int fd, int size, int count, uint8_t marker)
{
	int i;

	for (i = 0; i < count - 1; i++)
		if (write_xfer(fd, size))
			return -1;
	buf[size - 1] = marker;
	if (opts.verify)
		st_fill(buf, size - 1);
	return write_xfer(fd, size);
}

static int iterations(int fd, const struct st_test *t)
{
	bool client = opts.dst != NULL;
	uint8_t marker = 0;
	int i;

	for (i = 0; i < t->iterations; i++) {
		if (client && send_burst(fd, t->size, t->count, marker++))
			return -1;
		if (wait_marker(fd, t->size, marker++))
			return -1;
		if (!client && send_burst(fd, t->size, t->count, marker++))
			return -1;
	}
	return 0;
}

/*
 * The 16-byte exchange that starts a test.  It may land on the marker byte
 * (tiny sizes), so each side resets the marker after its last receive and
 * before the peer can write: the server before answering, the client
 * before its first riowrite.
 */
static int sync_peer(int fd, int size)
{
	if (opts.dst) {
		if (st_send_all(&opts, fd, buf, 16) ||
		    st_recv_all(&opts, fd, buf, 16))
			return -1;
		buf[size - 1] = 0xff;
		return 0;
	}
	if (st_recv_all(&opts, fd, buf, 16))
		return -1;
	buf[size - 1] = 0xff;
	return st_send_all(&opts, fd, buf, 16);
}

static int run_test(int fd, struct st_test *t)
{
	int ret;

	buf[t->size - 1] = 0xff;
	if (riomap(fd, buf, t->size, PROT_WRITE, 0, 0) == -1) {
		ex_syserr("riomap");
		return -1;
	}
	ret = sync_peer(fd, t->size);
	if (!ret) {
		t->start_us = ex_now_us();
		ret = iterations(fd, t);
		t->end_us = ex_now_us();
	}
	if (!ret)
		st_print_result(t);
	if (riounmap(fd, buf, t->size)) {
		ex_syserr("riounmap");
		ret = -1;
	}
	return ret;
}

static int open_conn(int lfd)
{
	return opts.dst ? st_connect(&opts) : st_accept(&opts, lfd);
}

static void close_conn(int fd)
{
	rshutdown(fd, SHUT_RDWR);
	rclose(fd);
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
	for (i = 0; i < n && !ret; i++) {
		if (sizes[i].with_all && !opts.all_sizes)
			continue;
		if (tuning == ST_TUNE_LATENCY)
			st_latency_test(&t, sizes[i].size);
		else
			st_bandwidth_test(&t, sizes[i].size);
		ret = run_test(fd, &t);
	}
	close_conn(fd);
	return ret;
}

static int run(void)
{
	struct st_test t;
	int lfd = -1, fd, ret;

	buf = malloc(st_max_size(&opts) < 16 ? 16 : st_max_size(&opts));
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
	if (opts.custom) {
		opts.tuning = ST_TUNE_CUSTOM;
		st_custom_test(&t, &opts);
		fd = open_conn(lfd);
		ret = fd < 0;
		if (!ret) {
			ret = run_test(fd, &t);
			close_conn(fd);
		}
	} else {
		ret = run_series(lfd, ST_TUNE_LATENCY) ||
		      run_series(lfd, ST_TUNE_BANDWIDTH);
	}
	if (lfd >= 0)
		rclose(lfd);
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
	       "  -T test      a|async: wait in rpoll before each call\n"
	       "               b|blocking, n|nonblocking (default) calls\n"
	       "               v|verify: verify the data\n",
	       ex_prog(), ST_DEFAULT_PORT);
}

int main(int argc, char **argv)
{
	int op, ret;

	ex_init(argv[0]);
	st_opts_init(&opts);
	opts.iomap = true;
	while ((op = getopt(argc, argv, "s:b:f:B:i:I:C:S:p:T:h")) != -1) {
		if (op == 'h') {
			usage();
			return EX_OK;
		}
		ret = st_parse_opt(&opts, op, optarg, "abnrv");
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
