// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rudping: ping-pong over datagram rsockets, with every byte checked.
 *
 * The client sends numbered pings; the server echoes each one back to
 * whoever sent it, and both sides check the payload, which is a pattern
 * derived from the sequence number and the size.  Datagrams may be lost,
 * so a client that hears nothing within a second sends the ping again (a
 * late or duplicated echo of an older ping is recognised and ignored).  An
 * END message finishes the run: the server echoes it, keeps answering for
 * a moment in case that echo is lost, and exits.
 *
 * Exit status 0 means every echo arrived intact; a payload that does not
 * match, on either side, makes the run fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "common.h"

#define RUD_MAGIC 0x52554450u /* "RUDP" */
#define RUD_HDR 16
#define RUD_MAX 2048
#define RUD_RETRY_MS 1000
#define RUD_RETRIES 10
#define RUD_LINGER_MS 1000

enum { RUD_PING = 1, RUD_END = 2 };

/* On the wire, in network order, ahead of the payload. */
struct rud_hdr {
	uint32_t magic;
	uint32_t op;
	uint32_t seq;
	uint32_t len; /* the whole datagram */
};

enum rud_mode {
	RUD_BLOCK = 'b', /* blocking calls */
	RUD_NONBLOCK = 'n', /* O_NONBLOCK, retried on EAGAIN */
	RUD_POLL = 'a', /* O_NONBLOCK, waiting in rpoll */
	RUD_SELECT = 'e', /* O_NONBLOCK, waiting in rselect */
	RUD_EPOLL = 'p', /* O_NONBLOCK, waiting in repoll_wait */
};

static struct {
	const char *dst, *src, *port;
	unsigned long count, size;
	enum rud_mode mode;
	bool connected; /* client: rconnect, then rsend/rrecv */
	int family;
} opt = {
	.port = "7472",
	.count = 100,
	.size = 64,
	.mode = RUD_BLOCK,
	.connected = true,
	.family = AF_UNSPEC,
};

static uint8_t txbuf[RUD_MAX], rxbuf[RUD_MAX];
static int epfd = -1; /* -T p: the repoll instance watching the socket */

static uint8_t rud_byte(uint32_t seq, size_t i)
{
	return (uint8_t)(seq * 131 + i * 7 + (i >> 8));
}

static size_t rud_fill(uint8_t *buf, uint32_t op, uint32_t seq, size_t len)
{
	struct rud_hdr h = {htonl(RUD_MAGIC), htonl(op), htonl(seq),
			    htonl((uint32_t)len)};
	size_t i;

	memcpy(buf, &h, sizeof(h));
	for (i = RUD_HDR; i < len; i++)
		buf[i] = rud_byte(seq, i);
	return len;
}

/* 0 and the header if @buf holds an intact message of @len bytes. */
static int rud_check(const uint8_t *buf, size_t len, struct rud_hdr *h)
{
	size_t i;

	if (len < RUD_HDR)
		return -1;
	memcpy(h, buf, sizeof(*h));
	h->magic = ntohl(h->magic);
	h->op = ntohl(h->op);
	h->seq = ntohl(h->seq);
	h->len = ntohl(h->len);
	if (h->magic != RUD_MAGIC || h->len != len)
		return -1;
	for (i = RUD_HDR; i < len; i++) {
		if (buf[i] != rud_byte(h->seq, i))
			return -1;
	}
	return 0;
}

/*
 * Wait up to @ms (-1: for ever) for @fd to be readable, the way the mode
 * says.  A blocking socket waits in the receive call itself unless there
 * is a time limit.
 */
static int rud_wait_in(int fd, int ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	struct epoll_event ev;
	fd_set rd;

	switch (opt.mode) {
	case RUD_POLL:
		return rpoll(&pfd, 1, ms);
	case RUD_SELECT:
		FD_ZERO(&rd);
		FD_SET(fd, &rd);
		return rselect(fd + 1, &rd, NULL, NULL, ms < 0 ? NULL : &tv);
	case RUD_EPOLL:
		return repoll_wait(epfd, &ev, 1, ms);
	case RUD_BLOCK:
		return ms < 0 ? 1 : rpoll(&pfd, 1, ms);
	default:
		return 1;
	}
}

/*
 * Receive one datagram within @ms (-1: no limit).  Returns its length, 0
 * on timeout, -1 on error.
 */
static ssize_t rud_recv(int fd, int ms, struct sockaddr *from, socklen_t *len)
{
	uint64_t end = ex_now_us() + (uint64_t)ms * 1000;
	ssize_t n;
	int r;

	for (;;) {
		r = rud_wait_in(fd, ms);
		if (r < 0) {
			ex_syserr("waiting to receive");
			return -1;
		}
		if (r == 0)
			return 0;
		if (opt.connected && !from)
			n = rread(fd, rxbuf, sizeof(rxbuf));
		else
			n = rrecvfrom(fd, rxbuf, sizeof(rxbuf), 0, from, len);
		if (n >= 0)
			return n;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			ex_syserr("rrecvfrom");
			return -1;
		}
		if (ms >= 0 && ex_now_us() >= end)
			return 0;
		if (opt.mode == RUD_NONBLOCK)
			usleep(20); /* leave the CPU to the peer meanwhile */
	}
}

static ssize_t rud_send(int fd, const uint8_t *buf, size_t len,
			const struct sockaddr *to, socklen_t tolen)
{
	struct iovec iov[2] = {{(void *)buf, RUD_HDR},
			       {(void *)(buf + RUD_HDR), len - RUD_HDR}};
	struct msghdr msg = {.msg_name = (void *)to,
			     .msg_namelen = tolen,
			     .msg_iov = iov,
			     .msg_iovlen = 2};
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};
	ssize_t n;

	for (;;) {
		if (to)
			n = rsendmsg(fd, &msg, 0);
		else
			n = rwrite(fd, buf, len);
		if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			break;
		if (opt.mode == RUD_POLL && rpoll(&pfd, 1, RUD_RETRY_MS) < 0)
			break;
	}
	if (n < 0)
		ex_syserr("send");
	else if ((size_t)n != len)
		ex_err("sent %zd of %zu bytes", n, len);
	return (size_t)n == len ? 0 : -1;
}

static int rud_resolve(const char *node, bool passive, struct ex_addr *addr)
{
	struct addrinfo hints = {.ai_family = opt.family,
				 .ai_socktype = SOCK_DGRAM};
	struct addrinfo *res;
	int ret;

	if (passive)
		hints.ai_flags = AI_PASSIVE;
	ret = getaddrinfo(node, opt.port, &hints, &res);
	if (ret) {
		ex_err("%s: %s", node ? node : "(any)", gai_strerror(ret));
		return -1;
	}
	memcpy(&addr->ss, res->ai_addr, res->ai_addrlen);
	addr->len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static int rud_epoll(int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};

	epfd = repoll_create(0);
	if (epfd < 0 || repoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev)) {
		ex_syserr("repoll");
		return -1;
	}
	return 0;
}

static int rud_socket(const struct ex_addr *addr)
{
	int fd = rsocket(addr->ss.ss_family, SOCK_DGRAM, 0);

	if (fd < 0) {
		ex_syserr("rsocket");
		return -1;
	}
	if (opt.mode != RUD_BLOCK && rfcntl(fd, F_SETFL, O_NONBLOCK)) {
		ex_syserr("rfcntl");
		rclose(fd);
		return -1;
	}
	if (opt.mode == RUD_EPOLL && rud_epoll(fd)) {
		rclose(fd);
		return -1;
	}
	return fd;
}

/* --- server -------------------------------------------------------------- */

static int rud_serve(int fd)
{
	struct sockaddr_storage from;
	unsigned long pings = 0, bad = 0;
	bool linger = false;
	char name[EX_ADDRSTRLEN];
	struct rud_hdr h;
	socklen_t len;
	ssize_t n;

	for (;;) {
		len = sizeof(from);
		n = rud_recv(fd, linger ? RUD_LINGER_MS : -1,
			     (struct sockaddr *)&from, &len);
		if (n < 0)
			return -1;
		if (n == 0 && linger)
			break; /* the client is gone */
		if (n == 0)
			continue;
		if (rud_check(rxbuf, (size_t)n, &h)) {
			ex_err("bad datagram of %zd bytes from %s", n,
			       ex_ntop((struct sockaddr *)&from, name,
				       sizeof(name)));
			bad++;
			continue;
		}
		if (!pings++)
			ex_info("first ping from %s",
				ex_ntop((struct sockaddr *)&from, name,
					sizeof(name)));
		if (rud_send(fd, rxbuf, (size_t)n, (struct sockaddr *)&from,
			     len))
			return -1;
		if (h.op == RUD_END)
			linger = true; /* in case the echo is lost */
	}
	ex_info("%lu datagrams echoed, %lu bad", pings, bad);
	return bad ? -1 : 0;
}

static int rud_server(void)
{
	struct ex_addr addr;
	char name[EX_ADDRSTRLEN];
	int fd, ret;

	if (rud_resolve(opt.src, true, &addr))
		return EX_FAIL;
	fd = rud_socket(&addr);
	if (fd < 0)
		return EX_FAIL;
	if (rbind(fd, ex_sa(&addr), addr.len)) {
		ex_syserr("rbind %s",
			  ex_ntop(ex_sa(&addr), name, sizeof(name)));
		rclose(fd);
		return EX_FAIL;
	}
	ex_info("serving on %s (mode %c)",
		ex_ntop(ex_sa(&addr), name, sizeof(name)), opt.mode);
	ret = rud_serve(fd);
	rclose(fd);
	return ret ? EX_FAIL : EX_OK;
}

/* --- client -------------------------------------------------------------- */

/* Is @from the server?  An unconnected client checks what rrecvfrom says. */
static bool rud_from_server(const struct ex_addr *srv,
			    const struct sockaddr_storage *from, socklen_t len)
{
	return len == srv->len && !memcmp(from, &srv->ss, len);
}

/* One exchange: send, then wait for the matching echo, resending. */
static int rud_exchange(int fd, struct ex_addr *srv, uint32_t op, uint32_t seq,
			unsigned long *resent)
{
	size_t len = rud_fill(txbuf, op, seq, opt.size);
	struct sockaddr_storage from;
	struct rud_hdr h;
	socklen_t flen;
	int tries;
	ssize_t n;

	for (tries = 0; tries < RUD_RETRIES; tries++) {
		if (tries)
			(*resent)++;
		if (rud_send(fd, txbuf, len, opt.connected ? NULL : ex_sa(srv),
			     srv->len))
			return -1;
		for (;;) {
			flen = sizeof(from);
			/* Blocking: no timeout, so no resending either. */
			n = rud_recv(
				fd, opt.mode == RUD_BLOCK ? -1 : RUD_RETRY_MS,
				opt.connected ? NULL : (struct sockaddr *)&from,
				&flen);
			if (n <= 0)
				break;
			if (!opt.connected &&
			    !rud_from_server(srv, &from, flen)) {
				ex_err("echo from an unexpected address");
				return -1;
			}
			if (rud_check(rxbuf, (size_t)n, &h)) {
				ex_err("echo of seq %u is corrupt (%zd bytes)",
				       seq, n);
				return -1;
			}
			if (h.seq == seq && h.op == op)
				return 0;
			/* A late echo of an earlier, resent ping. */
		}
		if (n < 0)
			return -1;
	}
	ex_err("no echo of seq %u after %d tries", seq, RUD_RETRIES);
	return -1;
}

static int rud_run(int fd, struct ex_addr *srv)
{
	unsigned long i, resent = 0;
	uint64_t start;

	start = ex_now_us();
	for (i = 0; i < opt.count; i++) {
		if (rud_exchange(fd, srv, RUD_PING, (uint32_t)i, &resent))
			return -1;
	}
	start = ex_now_us() - start;
	if (rud_exchange(fd, srv, RUD_END, (uint32_t)i, &resent))
		return -1;
	ex_info("%lu pings of %lu bytes verified, %.1f us per round trip, "
		"%lu resent",
		opt.count, opt.size, opt.count ? (double)start / opt.count : 0,
		resent);
	return 0;
}

static int rud_client(void)
{
	struct ex_addr srv, local;
	char name[EX_ADDRSTRLEN];
	int fd, ret = -1;

	if (rud_resolve(opt.dst, false, &srv))
		return EX_FAIL;
	if (opt.src) {
		/* The local port is any: only the address is the caller's. */
		opt.port = "0";
		if (rud_resolve(opt.src, true, &local))
			return EX_FAIL;
	}
	fd = rud_socket(&srv);
	if (fd < 0)
		return EX_FAIL;
	if (opt.src && rbind(fd, ex_sa(&local), local.len)) {
		ex_syserr("rbind");
		goto out;
	}
	if (opt.connected && rconnect(fd, ex_sa(&srv), srv.len)) {
		ex_syserr("rconnect %s",
			  ex_ntop(ex_sa(&srv), name, sizeof(name)));
		goto out;
	}
	ret = rud_run(fd, &srv);
out:
	rclose(fd);
	return ret ? EX_FAIL : EX_OK;
}

static void rud_help(void)
{
	printf("usage: %s [-s server] [-b address] [-p port] [-C count]\n"
	       "\t[-S size] [-T b|n|a|e|p] [-u] [-4|-6]\n"
	       "  -s  be a client of this server (default: be the server)\n"
	       "  -b  local address to bind (server: default any)\n"
	       "  -p  port (default 7472)\n"
	       "  -C  pings to send (default 100)\n"
	       "  -S  datagram size, %d..%d bytes (default 64)\n"
	       "  -T  b blocking, n non-blocking, a rpoll, e rselect, p "
	       "repoll\n"
	       "  -u  client: rsendto/rrecvfrom instead of rconnect\n",
	       ex_prog(), RUD_HDR, RUD_MAX);
}

static int rud_opts(int argc, char **argv)
{
	int c;

	while ((c = getopt(argc, argv, "s:b:p:C:S:T:u46h")) != -1) {
		switch (c) {
		case 's':
			opt.dst = optarg;
			break;
		case 'b':
			opt.src = optarg;
			break;
		case 'p':
			opt.port = optarg;
			break;
		case 'C':
			if (ex_parse_num(optarg, 'C', 1, 100000000, &opt.count))
				return -1;
			break;
		case 'S':
			if (ex_parse_num(optarg, 'S', RUD_HDR, RUD_MAX,
					 &opt.size))
				return -1;
			break;
		case 'T':
			if (strlen(optarg) != 1 ||
			    !strchr("bnaep", optarg[0])) {
				ex_err("-T takes b, n, a, e or p");
				return -1;
			}
			opt.mode = (enum rud_mode)optarg[0];
			break;
		case 'u':
			opt.connected = false;
			break;
		case '4':
			opt.family = AF_INET;
			break;
		case '6':
			opt.family = AF_INET6;
			break;
		case 'h':
			rud_help();
			exit(EX_OK);
		default:
			return -1;
		}
	}
	return optind < argc ? -1 : 0;
}

int main(int argc, char **argv)
{
	int ret;

	ex_init("rudping");
	if (rud_opts(argc, argv))
		return ex_usage_hint();
	ret = opt.dst ? rud_client() : rud_server();
	if (epfd >= 0)
		close(epfd);
	return ret;
}
