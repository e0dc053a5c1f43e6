// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The parts rstream and riostream share.  See stream_common.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include "common.h"
#include "stream_common.h"

/* The two socket APIs */

static int rs_set_nonblock(int fd)
{
	return rfcntl(fd, F_SETFL, O_NONBLOCK);
}

static int sock_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

const struct st_ops st_rsocket_ops = {
	.name = "rsocket",
	.socket = rsocket,
	.bind = rbind,
	.listen = rlisten,
	.accept = raccept,
	.connect = rconnect,
	.send = rsend,
	.recv = rrecv,
	.setsockopt = rsetsockopt,
	.getsockopt = rgetsockopt,
	.set_nonblock = rs_set_nonblock,
	.poll = rpoll,
	.shutdown = rshutdown,
	.close = rclose,
};

const struct st_ops st_socket_ops = {
	.name = "socket",
	.socket = socket,
	.bind = bind,
	.listen = listen,
	.accept = accept,
	.connect = connect,
	.send = send,
	.recv = recv,
	.setsockopt = setsockopt,
	.getsockopt = getsockopt,
	.set_nonblock = sock_set_nonblock,
	.poll = poll,
	.shutdown = shutdown,
	.close = close,
};

/* Options */

void st_opts_init(struct st_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->ops = &st_rsocket_ops;
	o->port = ST_DEFAULT_PORT;
	o->inline_size = 64;
	o->iterations = 1;
	o->count = 1000;
	o->size = 1000;
	o->msg_flags = MSG_DONTWAIT;
}

/* -T takes one letter or a word; both name the same switch. */
struct test_word {
	char letter;
	const char *word;
};

static const struct test_word test_words[] = {
	{'s', "socket"},   {'a', "async"},   {'b', "block"},  {'f', "fork"},
	{'n', "nonblock"}, {'r', "resolve"}, {'v', "verify"},
};

static char test_letter(const char *arg)
{
	size_t i;

	if (strlen(arg) == 1)
		return arg[0];
	for (i = 0; i < sizeof(test_words) / sizeof(test_words[0]); i++)
		if (!strncasecmp(arg, test_words[i].word,
				 strlen(test_words[i].word)))
			return test_words[i].letter;
	return 0;
}

static int set_test(struct st_opts *o, const char *arg, const char *tests)
{
	char c = test_letter(arg);

	if (!c || !strchr(tests, c)) {
		ex_err("-T: unknown test option '%s'", arg);
		return -1;
	}
	switch (c) {
	case 's':
		o->ops = &st_socket_ops;
		break;
	case 'a':
		o->async = true;
		break;
	case 'b':
		o->msg_flags = (o->msg_flags & ~MSG_DONTWAIT) | MSG_WAITALL;
		break;
	case 'f':
		/* A forked child cannot use its parent's RDMA resources. */
		o->fork = true;
		o->ops = &st_socket_ops;
		break;
	case 'n':
		o->msg_flags |= MSG_DONTWAIT;
		break;
	case 'r':
		o->use_rai = true;
		break;
	case 'v':
		o->verify = true;
		break;
	}
	return 0;
}

static int set_format(struct st_opts *o, const char *arg)
{
	if (!strncasecmp(arg, "ipv6", 4)) {
		o->ai_flags = AI_NUMERICHOST;
		o->ai_family = AF_INET6;
	} else if (!strncasecmp(arg, "ip", 2)) {
		o->ai_flags = AI_NUMERICHOST;
	} else if (!strncasecmp(arg, "gid", 3)) {
		o->ai_flags = RAI_NUMERICHOST | RAI_FAMILY;
		o->ai_family = AF_IB;
		o->use_rai = true;
	} else if (strncasecmp(arg, "name", 4)) {
		ex_err("-f: unknown address format '%s' (name, ip, ipv6, gid)",
		       arg);
		return -1;
	}
	return 0;
}

static int num_opt(const char *arg, char op, unsigned long min,
		   unsigned long max, int *out)
{
	unsigned long v;

	if (ex_parse_num(arg, op, min, max, &v))
		return -1;
	*out = (int)v;
	return 0;
}

int st_parse_opt(struct st_opts *o, int op, const char *arg, const char *tests)
{
	switch (op) {
	case 's':
		o->dst = arg;
		return 0;
	case 'b':
		o->src = arg;
		return 0;
	case 'p':
		o->port = arg;
		return 0;
	case 'f':
		return set_format(o, arg);
	case 'B':
		return num_opt(arg, 'B', 1, 1 << 30, &o->buffer_size);
	case 'i':
		return num_opt(arg, 'i', 0, 1 << 16, &o->inline_size);
	case 'I':
		o->custom = true;
		return num_opt(arg, 'I', 1, 1 << 30, &o->iterations);
	case 'C':
		o->custom = true;
		return num_opt(arg, 'C', 1, 1 << 30, &o->count);
	case 'S':
		if (!strncasecmp(arg, "all", 3)) {
			o->all_sizes = true;
			return 0;
		}
		o->custom = true;
		return num_opt(arg, 'S', 1, 1 << 30, &o->size);
	case 'k':
		return num_opt(arg, 'k', 1, 1 << 20, &o->keepalive);
	case 'T':
		return set_test(o, arg, tests);
	}
	return 1;
}

void st_opts_done(struct st_opts *o)
{
	/* Non-blocking calls spin on EAGAIN; blocking ones sleep in poll. */
	o->poll_timeout = (o->msg_flags & MSG_DONTWAIT) ? 0 : -1;
}

/* Sizes */

/*
 * 64 bytes, then each power of two from 128 bytes to 4 MiB followed by one
 * and a half times it.  Runs without -S all use only 64 B, 4 KiB, 64 KiB
 * and 1 MiB.  Both ends of a default run walk this list in step, so it is
 * part of the protocol with rdma-core's programs.
 */
#define ST_NSIZES (1 + 2 * (22 - 7 + 1))
static struct st_size size_table[ST_NSIZES];

static void build_sizes(void)
{
	size_t n = 0;
	int shift;

	if (size_table[0].size)
		return;
	size_table[n++] = (struct st_size){64, false};
	for (shift = 7; shift <= 22; shift++) {
		bool common = shift == 12 || shift == 16 || shift == 20;

		size_table[n++] = (struct st_size){1 << shift, !common};
		size_table[n++] = (struct st_size){
			(1 << shift) + (1 << (shift - 1)), true};
	}
}

size_t st_sizes(const struct st_size **sizes)
{
	build_sizes();
	*sizes = size_table;
	return ST_NSIZES;
}

int st_max_size(const struct st_opts *o)
{
	const struct st_size *s;
	size_t n = st_sizes(&s);

	return o->custom ? o->size : s[n - 1].size;
}

int st_size_to_count(int size)
{
	if (size >= 1 << 20)
		return 100;
	if (size >= 1 << 16)
		return 1000;
	if (size >= 1 << 10)
		return 10000;
	return 100000;
}

/* Tests and results */

static void name_test(struct st_test *t, int size, const char *kind)
{
	char s[16];

	st_size_str(s, sizeof(s), size);
	snprintf(t->name, sizeof(t->name), "%s_%s", s, kind);
}

void st_latency_test(struct st_test *t, int size)
{
	name_test(t, size, "lat");
	t->size = size;
	t->count = 1;
	t->iterations = st_size_to_count(size);
}

void st_bandwidth_test(struct st_test *t, int size)
{
	name_test(t, size, "bw");
	t->size = size;
	t->count = st_size_to_count(size);
	t->iterations = 1;
}

void st_custom_test(struct st_test *t, const struct st_opts *o)
{
	snprintf(t->name, sizeof(t->name), "custom");
	t->size = o->size;
	t->count = o->count;
	t->iterations = o->iterations;
}

void st_size_str(char *buf, size_t len, long long size)
{
	static const char units[] = {0, 'k', 'm', 'g'};
	int u = 0;
	long long base = 1;

	while (u < 3 && size >= base * 1024) {
		base *= 1024;
		u++;
	}
	if (size / base < 10 && (size % base) * 10 / base)
		snprintf(buf, len, "%lld.%lld%.1s", size / base,
			 (size % base) * 10 / base, &units[u]);
	else
		snprintf(buf, len, "%lld%.1s", size / base, &units[u]);
}

void st_count_str(char *buf, size_t len, long long count)
{
	if (count >= 1000000000)
		snprintf(buf, len, "%lldb", count / 1000000000);
	else if (count >= 1000000)
		snprintf(buf, len, "%lldm", count / 1000000);
	else if (count >= 1000)
		snprintf(buf, len, "%lldk", count / 1000);
	else
		snprintf(buf, len, "%lld", count);
}

void st_print_header(void)
{
	printf("%-10s%-8s%-8s%-8s%-8s%8s %10s%13s\n", "name", "bytes", "xfers",
	       "iters", "total", "time", "Gb/sec", "usec/xfer");
}

void st_print_result(const struct st_test *t)
{
	double us = (double)(t->end_us - t->start_us);
	long long bytes = 2LL * t->iterations * t->count * t->size;
	char size[16], xfers[16], iters[16], total[16];

	if (us <= 0)
		us = 1;
	st_size_str(size, sizeof(size), t->size);
	st_count_str(xfers, sizeof(xfers), t->count);
	st_count_str(iters, sizeof(iters), t->iterations);
	st_size_str(total, sizeof(total), bytes);
	printf("%-10s%-8s%-8s%-8s%-8s%8.2fs%10.2f%11.2f\n", t->name, size,
	       xfers, iters, total, us / 1e6, bytes * 8 / (us * 1000),
	       us / t->iterations / (2.0 * t->count));
}

/* The pattern */

static uint8_t fill_next, check_next;
static long long checked;

void st_fill(void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = fill_next++;
}

int st_check(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++, checked++) {
		if (p[i] != check_next++) {
			ex_err("data verification failed at byte %lld of the "
			       "stream (0x%02x, expected 0x%02x)",
			       checked, p[i], (uint8_t)(check_next - 1));
			return -1;
		}
	}
	return 0;
}

/* Connections */

struct st_addr {
	struct addrinfo *ai;
	struct rdma_addrinfo *rai;
	const struct sockaddr *sa;
	socklen_t len;
	int family;
};

static void addr_free(struct st_addr *a)
{
	if (a->ai)
		freeaddrinfo(a->ai);
	if (a->rai)
		rdma_freeaddrinfo(a->rai);
	memset(a, 0, sizeof(*a));
}

/* Resolves node:port, as a local address when passive. */
static int addr_get(const struct st_opts *o, const char *node, bool passive,
		    struct st_addr *a)
{
	int ret;

	memset(a, 0, sizeof(*a));
	if (o->use_rai) {
		struct rdma_addrinfo hints = {0};

		hints.ai_flags = o->ai_flags | (passive ? RAI_PASSIVE : 0);
		hints.ai_family = o->ai_family;
		hints.ai_port_space = RDMA_PS_TCP;
		ret = rdma_getaddrinfo(node, o->port, &hints, &a->rai);
		if (ret) {
			ex_addrinfo_err(ret, node ? node : "(any)");
			return -1;
		}
		a->sa = passive ? a->rai->ai_src_addr : a->rai->ai_dst_addr;
		a->len = passive ? a->rai->ai_src_len : a->rai->ai_dst_len;
		a->family = a->rai->ai_family;
	} else {
		struct addrinfo hints = {0};

		hints.ai_flags = o->ai_flags | (passive ? AI_PASSIVE : 0);
		hints.ai_family = o->ai_family;
		hints.ai_socktype = SOCK_STREAM;
		ret = getaddrinfo(node, o->port, &hints, &a->ai);
		if (ret) {
			ex_err("%s: %s", node ? node : "(any)",
			       gai_strerror(ret));
			return -1;
		}
		a->sa = a->ai->ai_addr;
		a->len = a->ai->ai_addrlen;
		a->family = a->ai->ai_family;
	}
	if (!a->sa) {
		ex_err("%s: no usable address", node ? node : "(any)");
		addr_free(a);
		return -1;
	}
	return 0;
}

static void set_int(const struct st_opts *o, int fd, int level, int name,
		    int val, const char *what)
{
	if (o->ops->setsockopt(fd, level, name, &val, sizeof(val)))
		ex_syserr("setsockopt %s", what);
}

void st_set_options(const struct st_opts *o, int fd)
{
	int bufsize = o->buffer_size ? o->buffer_size : 1 << 19;
	bool rs = o->ops == &st_rsocket_ops;

	set_int(o, fd, SOL_SOCKET, SO_SNDBUF, bufsize, "SO_SNDBUF");
	set_int(o, fd, SOL_SOCKET, SO_RCVBUF, bufsize, "SO_RCVBUF");
	set_int(o, fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
	if (rs && o->iomap)
		set_int(o, fd, SOL_RDMA, RDMA_IOMAPSIZE, 1, "RDMA_IOMAPSIZE");
	if ((o->msg_flags & MSG_DONTWAIT) && o->ops->set_nonblock(fd))
		ex_syserr("cannot make the socket non-blocking");
	/* Small messages do best inline, big transfers without. */
	if (rs && o->tuning == ST_TUNE_LATENCY)
		set_int(o, fd, SOL_RDMA, RDMA_INLINE, o->inline_size,
			"RDMA_INLINE");
	else if (rs && o->tuning == ST_TUNE_BANDWIDTH)
		set_int(o, fd, SOL_RDMA, RDMA_INLINE, 0, "RDMA_INLINE");
	if (o->keepalive) {
		set_int(o, fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE");
		set_int(o, fd, IPPROTO_TCP, TCP_KEEPIDLE, o->keepalive,
			"TCP_KEEPIDLE");
	}
}

int st_listen(struct st_opts *o)
{
	struct st_addr a;
	int fd, one = 1;

	if (addr_get(o, o->src, true, &a))
		return -1;
	fd = o->ops->socket(a.family, SOCK_STREAM, 0);
	if (fd < 0) {
		ex_syserr("%s", o->ops->name);
		goto out;
	}
	if (o->ops->setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		ex_syserr("setsockopt SO_REUSEADDR");
	if (o->ops->bind(fd, a.sa, a.len)) {
		ex_syserr("bind");
		goto close;
	}
	if (o->ops->listen(fd, 1)) {
		ex_syserr("listen");
		goto close;
	}
	addr_free(&a);
	return fd;
close:
	o->ops->close(fd);
	fd = -1;
out:
	addr_free(&a);
	return fd;
}

/* Waits until fd has one of events; 0, or -1 on error or a hang-up. */
static int wait_for(const struct st_opts *o, int fd, short events)
{
	struct pollfd p = {.fd = fd, .events = events};
	int ret;

	do {
		ret = o->ops->poll(&p, 1, o->poll_timeout);
	} while (ret == 0 || (ret < 0 && errno == EINTR));
	if (ret < 0) {
		ex_syserr("poll");
		return -1;
	}
	if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) {
		if (!(p.revents & events)) {
			ex_err("poll: the connection failed (revents 0x%x)",
			       p.revents);
			errno = ECONNRESET;
			return -1;
		}
	}
	return 0;
}

static bool retry(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

int st_accept(struct st_opts *o, int lfd)
{
	int fd;

	/* Accepted sockets start with the listener's settings. */
	st_set_options(o, lfd);
	for (;;) {
		if (o->async && wait_for(o, lfd, POLLIN))
			return -1;
		fd = o->ops->accept(lfd, NULL, NULL);
		if (fd >= 0 || !retry())
			break;
	}
	if (fd < 0) {
		ex_syserr("accept");
		return -1;
	}
	st_set_options(o, fd);
	return fd;
}

/* Finishes a non-blocking connect: 0, or -1 with the reason printed. */
static int finish_connect(const struct st_opts *o, int fd)
{
	socklen_t len = sizeof(int);
	int err = 0;

	if (wait_for(o, fd, POLLOUT) && errno != ECONNRESET)
		return -1;
	if (o->ops->getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)) {
		ex_syserr("getsockopt SO_ERROR");
		return -1;
	}
	if (err) {
		errno = err;
		ex_syserr("connect");
		return -1;
	}
	return 0;
}

static int bind_source(const struct st_opts *o, int fd)
{
	struct st_addr src;
	struct st_opts local = *o;
	int ret;

	/* Any local port: the server's port may be in use on this host. */
	local.port = NULL;
	if (addr_get(&local, o->src, true, &src))
		return -1;
	ret = o->ops->bind(fd, src.sa, src.len);
	if (ret)
		ex_syserr("bind %s", o->src);
	addr_free(&src);
	return ret;
}

int st_connect(struct st_opts *o)
{
	struct st_addr a;
	int fd, ret;

	if (addr_get(o, o->dst, false, &a))
		return -1;
	fd = o->ops->socket(a.family, SOCK_STREAM, 0);
	if (fd < 0) {
		ex_syserr("%s", o->ops->name);
		addr_free(&a);
		return -1;
	}
	st_set_options(o, fd);
	if (o->src && bind_source(o, fd))
		goto fail;
	if (a.rai && a.rai->ai_route &&
	    o->ops->setsockopt(fd, SOL_RDMA, RDMA_ROUTE, a.rai->ai_route,
			       a.rai->ai_route_len)) {
		ex_syserr("setsockopt RDMA_ROUTE");
		goto fail;
	}
	ret = o->ops->connect(fd, a.sa, a.len);
	if (ret && errno != EINPROGRESS) {
		ex_syserr("connect to %s", o->dst);
		goto fail;
	}
	if (ret && finish_connect(o, fd))
		goto fail;
	addr_free(&a);
	return fd;
fail:
	o->ops->close(fd);
	addr_free(&a);
	return -1;
}

/* Data */

int st_send_all(const struct st_opts *o, int fd, const void *buf, size_t len)
{
	const char *p = buf;
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		if (o->async && wait_for(o, fd, POLLOUT))
			return -1;
		n = o->ops->send(fd, p + done, len - done, o->msg_flags);
		if (n > 0)
			done += n;
		else if (n < 0 && !retry()) {
			ex_syserr("send");
			return -1;
		}
	}
	return 0;
}

int st_recv_all(const struct st_opts *o, int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		if (o->async && wait_for(o, fd, POLLIN))
			return -1;
		n = o->ops->recv(fd, p + done, len - done, o->msg_flags);
		if (n > 0) {
			done += n;
		} else if (n == 0) {
			ex_err("recv: the peer closed the connection");
			return -1;
		} else if (!retry()) {
			ex_syserr("recv");
			return -1;
		}
	}
	return 0;
}
