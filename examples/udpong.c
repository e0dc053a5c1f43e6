// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * udpong: datagram rsocket latency and bandwidth, on the wire of
 * rdma-core's udpong, so either side may be rdma-core's program.
 *
 * Every message starts with an 8-byte header: op, client id, sequence
 * number, a reserved byte and a 32-bit big-endian value; control messages
 * are 16 bytes.  The client logs in (the server gives it an id), then runs
 * tests: START, the transfers, END.  In an echo (latency) test each DATA
 * message is an ECHO the server sends back, one at a time; in a bandwidth
 * test the client only sends, and the server's count of what arrived
 * comes back in END's value.  Control messages and echoes carry the
 * sequence number, and are sent again when the answer does not come: a
 * datagram may be lost.
 *
 * Beyond rdma-core's program, the client checks every echo: its payload
 * is a pattern derived from the sequence number, which a server (ours or
 * rdma-core's) returns unchanged.  The server runs until it is killed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "common.h"

#define UP_PORT "7174"
#define UP_CTRL 16
#define UP_HDR 8
#define UP_MAX 2048
#define UP_WAIT_MS 1000 /* before a control message or echo is resent */
#define UP_TRIES 10

enum { UP_LOGIN, UP_START, UP_DATA, UP_ECHO, UP_END };

struct up_msg {
	uint8_t op, id, seqno, reserved;
	uint32_t value; /* big-endian */
	uint8_t buf[UP_MAX];
};

/* The socket calls used, so that -T s runs the same code on sockets. */
struct up_ops {
	int (*socket)(int, int, int);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*sendto)(int, const void *, size_t, int,
			  const struct sockaddr *, socklen_t);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *,
			    socklen_t *);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*close)(int);
};

static const struct up_ops rs_ops = {
	.socket = rsocket,
	.bind = rbind,
	.connect = rconnect,
	.send = rsend,
	.recv = rrecv,
	.sendto = rsendto,
	.recvfrom = rrecvfrom,
	.setsockopt = rsetsockopt,
	.poll = rpoll,
	.close = rclose,
};

static const struct up_ops sock_ops = {
	.socket = socket,
	.bind = bind,
	.connect = connect,
	.send = send,
	.recv = recv,
	.sendto = sendto,
	.recvfrom = recvfrom,
	.setsockopt = setsockopt,
	.poll = poll,
	.close = close,
};

static struct {
	const struct up_ops *ops;
	const char *dst, *src, *port;
	int buffer_size;
	bool custom, echo, async;
	int flags; /* MSG_DONTWAIT (default) or 0 (-T b) */
	int count, size;
} opt = {
	.ops = &rs_ops,
	.port = UP_PORT,
	.flags = MSG_DONTWAIT,
	.count = 1000,
	.size = 1000,
};

static int fd = -1;

/* Wait for @events on the socket (-T a, or a blocking wait for a reply). */
static int up_wait(short events, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = events};
	int n = opt.ops->poll(&pfd, 1, timeout_ms);

	if (n < 0)
		ex_syserr("poll");
	return n;
}

/* Send, retrying while a non-blocking socket is full. */
static int up_send(const void *buf, size_t len, const struct sockaddr *to,
		   socklen_t tolen)
{
	ssize_t n;

	for (;;) {
		if (opt.async && up_wait(POLLOUT, -1) < 0)
			return -1;
		n = to ? opt.ops->sendto(fd, buf, len, opt.flags, to, tolen)
		       : opt.ops->send(fd, buf, len, opt.flags);
		if (n == (ssize_t)len)
			return 0;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (n < 0)
			ex_syserr("send");
		else
			ex_err("short send: %zd of %zu bytes", n, len);
		return -1;
	}
}

/* --- server ------------------------------------------------------------- */

static uint64_t received[256]; /* per client id, since its START */

static int server_answer(struct up_msg *m, size_t len,
			 const struct sockaddr *from, socklen_t fromlen)
{
	static uint8_t next_id;
	char who[EX_ADDRSTRLEN];

	switch (m->op) {
	case UP_LOGIN:
		ex_info("client login from %s",
			ex_ntop_host(from, who, sizeof(who)));
		m->id = next_id++;
		received[m->id] = 0;
		break;
	case UP_START:
		received[m->id] = 0;
		break;
	case UP_ECHO:
		received[m->id]++;
		break;
	case UP_END:
		m->value = htonl((uint32_t)received[m->id]);
		break;
	default: /* UP_DATA and anything unknown: counted, not answered */
		received[m->id]++;
		return 0;
	}
	return up_send(m, len, from, fromlen);
}

static int server_run(void)
{
	struct sockaddr_storage from;
	socklen_t fromlen;
	struct up_msg m;
	ssize_t n;

	for (;;) {
		if ((opt.async || opt.flags) && up_wait(POLLIN, -1) < 0)
			return -1;
		fromlen = sizeof(from);
		n = opt.ops->recvfrom(fd, &m, sizeof(m), opt.flags,
				      (struct sockaddr *)&from, &fromlen);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (n < 0) {
			ex_syserr("recvfrom");
			return -1;
		}
		if (n < UP_HDR)
			continue; /* not one of ours: nothing to answer */
		if (server_answer(&m, (size_t)n, (struct sockaddr *)&from,
				  fromlen))
			return -1;
	}
}

/* --- client ------------------------------------------------------------- */

static uint8_t pattern(uint8_t seqno, size_t i)
{
	return (uint8_t)(seqno * 31u + i * 7u + 1u);
}

/*
 * Send @m (@len bytes) and wait for the answer with its sequence number,
 * sending again after UP_WAIT_MS.  An ECHO's payload must come back as
 * sent.  0, or -1 after reporting why.
 */
static int client_exchange(struct up_msg *m, size_t len)
{
	static uint8_t seqno;
	struct up_msg r;
	int tries, w;
	ssize_t n;
	size_t i;

	m->seqno = seqno;
	if (m->op == UP_ECHO)
		for (i = UP_HDR; i < len; i++)
			((uint8_t *)m)[i] = pattern(seqno, i);
	for (tries = 0; tries < UP_TRIES; tries++) {
		if (up_send(m, len, NULL, 0))
			return -1;
		for (;;) {
			w = up_wait(POLLIN, UP_WAIT_MS);
			if (w <= 0)
				break; /* error, or time to send again */
			n = opt.ops->recv(fd, &r, sizeof(r), MSG_DONTWAIT);
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				continue;
			if (n < 0) {
				ex_syserr("recv");
				return -1;
			}
			if (n < UP_HDR || r.seqno != seqno || r.op != m->op)
				continue; /* late answer to an earlier one */
			if ((size_t)n != len ||
			    (m->op == UP_ECHO &&
			     memcmp(r.buf, m->buf, len - UP_HDR))) {
				ex_err("echo %u came back changed (%zd bytes)",
				       seqno, n);
				return -1;
			}
			memcpy(m, &r, (size_t)n);
			seqno++;
			return 0;
		}
		if (w < 0)
			return -1;
	}
	ex_err("no answer to op %u after %d tries", m->op, UP_TRIES);
	return -1;
}

static void show(const char *name, int size, int count, uint32_t arrived,
		 uint64_t usec)
{
	uint64_t transfers = opt.echo ? 2ull * count : arrived;
	double bytes = (double)transfers * size;

	if (!usec)
		usec = 1;
	printf("%-10s%-8d%-8llu%-12.0f%8.2fs%10.2f%11.2f\n", name, size,
	       (unsigned long long)transfers, bytes, usec / 1e6,
	       bytes * 8 / (1000.0 * usec),
	       transfers ? (double)usec / transfers : 0.0);
}

static int client_test(const char *name, int size, int count)
{
	struct up_msg m;
	uint64_t t0;
	int i;

	memset(&m, 0, sizeof(m));
	m.op = UP_START;
	if (client_exchange(&m, UP_CTRL))
		return -1;
	t0 = ex_now_us();
	for (i = 0; i < count; i++) {
		m.op = opt.echo ? UP_ECHO : UP_DATA;
		if (opt.echo ? client_exchange(&m, (size_t)size)
			     : up_send(&m, (size_t)size, NULL, 0))
			return -1;
	}
	m.op = UP_END;
	if (client_exchange(&m, UP_CTRL))
		return -1;
	show(name, size, count, ntohl(m.value), ex_now_us() - t0);
	return 0;
}

static int client_run(void)
{
	static const int sizes[] = {64, 128, 192, 256, 384, 512, 768, 1024};
	struct up_msg m;
	char name[16];
	size_t i;
	int pass;

	memset(&m, 0, sizeof(m));
	m.op = UP_LOGIN;
	if (client_exchange(&m, UP_CTRL))
		return -1;
	printf("%-10s%-8s%-8s%-12s%9s%10s%11s\n", "name", "bytes", "xfers",
	       "total", "time", "Gb/sec", "usec/xfer");
	if (opt.custom)
		return client_test("custom", opt.size, opt.count);
	/* rdma-core's run: latency (echo) at each size, then bandwidth */
	for (pass = 0; pass < 2; pass++) {
		opt.echo = pass == 0;
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			snprintf(name, sizeof(name), "%d_%s", sizes[i],
				 opt.echo ? "lat" : "bw");
			if (client_test(name, sizes[i], opt.echo ? 100 : 1000))
				return -1;
		}
	}
	return 0;
}

/* --- set-up ------------------------------------------------------------- */

static int open_socket(void)
{
	const char *node = opt.dst ? opt.dst : opt.src;
	struct addrinfo hints, *res;
	int size = opt.buffer_size ? opt.buffer_size : 1 << 19;
	int ret;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_DGRAM;
	hints.ai_flags = opt.dst ? 0 : AI_PASSIVE;
	ret = getaddrinfo(node, opt.port, &hints, &res);
	if (ret) {
		ex_err("%s: %s", node ? node : "(any)", gai_strerror(ret));
		return -1;
	}
	fd = opt.ops->socket(res->ai_family, SOCK_DGRAM, 0);
	if (fd < 0) {
		ex_syserr("socket");
		goto out;
	}
	opt.ops->setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	opt.ops->setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	ret = opt.dst ? opt.ops->connect(fd, res->ai_addr, res->ai_addrlen)
		      : opt.ops->bind(fd, res->ai_addr, res->ai_addrlen);
	if (ret) {
		ex_syserr("%s(%s)", opt.dst ? "connect" : "bind",
			  node ? node : "(any)");
		opt.ops->close(fd);
		fd = -1;
	}
out:
	freeaddrinfo(res);
	return fd < 0 ? -1 : 0;
}

static int test_option(const char *arg)
{
	static const struct {
		char letter;
		const char *word;
	} words[] = {{'s', "socket"},
		     {'a', "async"},
		     {'b', "blocking"},
		     {'n', "nonblocking"},
		     {'e', "echo"}};
	size_t i;
	char c = 0;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if ((!arg[1] && arg[0] == words[i].letter) ||
		    !strcasecmp(arg, words[i].word))
			c = words[i].letter;
	switch (c) {
	case 's':
		opt.ops = &sock_ops;
		break;
	case 'a':
		opt.async = true;
		break;
	case 'b':
		opt.flags = 0;
		break;
	case 'n':
		opt.flags = MSG_DONTWAIT;
		break;
	case 'e':
		opt.echo = true;
		break;
	default:
		ex_err("-T %s: unknown test option", arg);
		return -1;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-s server] [-b address] [-p port] [-C count]\n"
		"          [-S size] [-B bytes] [-T s|a|b|n|e]\n"
		"Datagram rsocket ping-pong, compatible with rdma-core's "
		"udpong.\n"
		"Without -s: the server, echoing until killed.\n"
		"\n"
		"  -s server    run the client against this server\n"
		"  -b address   the server's address to bind (default: any)\n"
		"  -p port      port number (default %s)\n"
		"  -C count     transfers of one custom test (default 1000)\n"
		"  -S size      bytes per transfer, %d to %d (default 1000)\n"
		"  -B bytes     send and receive buffer sizes (default 512 "
		"KiB)\n"
		"  -T s         kernel sockets instead of rsockets\n"
		"  -T a         wait in poll() before each call\n"
		"  -T b | n     blocking calls | non-blocking calls (default)\n"
		"  -T e         echo test: each transfer comes back, checked\n"
		"  -q           quiet: print errors only\n"
		"  -h           show this help\n",
		ex_prog(), UP_PORT, UP_CTRL, (int)sizeof(struct up_msg));
}

int main(int argc, char **argv)
{
	unsigned long v;
	int op, ret;

	ex_init(argv[0]);
	while ((op = getopt(argc, argv, "s:b:p:C:S:B:T:qh")) != -1) {
		switch (op) {
		case 's':
			opt.dst = optarg;
			break;
		case 'b':
			opt.src = optarg;
			break;
		case 'p':
			if (ex_parse_num(optarg, 'p', 1, 65535, &v))
				return ex_usage_hint();
			opt.port = optarg;
			break;
		case 'C':
			if (ex_parse_num(optarg, 'C', 1, 100000000, &v))
				return ex_usage_hint();
			opt.count = (int)v;
			opt.custom = true;
			break;
		case 'S':
			if (ex_parse_num(optarg, 'S', UP_CTRL,
					 sizeof(struct up_msg), &v))
				return ex_usage_hint();
			opt.size = (int)v;
			opt.custom = true;
			break;
		case 'B':
			if (ex_parse_num(optarg, 'B', 1, 1 << 30, &v))
				return ex_usage_hint();
			opt.buffer_size = (int)v;
			break;
		case 'T':
			if (test_option(optarg))
				return ex_usage_hint();
			break;
		case 'q':
			ex_quiet = true;
			break;
		case 'h':
			usage(stdout);
			return EX_OK;
		default:
			return ex_usage_hint();
		}
	}
	if (optind < argc) {
		ex_err("unexpected argument '%s'", argv[optind]);
		return ex_usage_hint();
	}
	if (open_socket())
		return EX_FAIL;
	ret = opt.dst ? client_run() : server_run();
	opt.ops->close(fd);
	return ret ? EX_FAIL : EX_OK;
}
