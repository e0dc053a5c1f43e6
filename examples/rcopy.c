// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rcopy: copy a file to a server over rsockets, interoperable with
 * rdma-core's rcopy.
 *
 *   rcopy [-p port]                         the server, forever
 *   rcopy SOURCE SERVER[:DEST] [-p port]    the client
 *
 * The conversation is request/response: OPEN (mode and destination path),
 * WRITE (the size, then the bytes), CLOSE.  Each request starts with the
 * 16-byte header of rcopy_proto.h and gets a bare header back whose data
 * field is 0 or an errno value.  The server writes wherever the client
 * says, with its own rights: run it only where that is acceptable.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "common.h"
#include "rcopy_proto.h"

#define DEFAULT_PORT "7427"
/* Bytes moved per rsend/rrecv call and per read/write on the file. */
#define CHUNK (1 << 20)

static const char *port = DEFAULT_PORT;

/* Exactly len bytes, or -1 (0 bytes at a clean end of stream: errno 0). */
static int recv_all(int rs, void *buf, size_t len)
{
	char *p = buf;
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = rrecv(rs, p + done, len - done, 0);
		if (n > 0) {
			done += n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			errno = done ? EPIPE : 0;
		return -1;
	}
	return 0;
}

static int send_all(int rs, const void *buf, size_t len)
{
	const char *p = buf;
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = rsend(rs, p + done, len - done, 0);
		if (n > 0)
			done += n;
		else if (n < 0 && errno != EINTR)
			return -1;
	}
	return 0;
}

static int send_hdr(int rs, uint8_t cmd, uint16_t len, uint32_t data,
		    uint64_t id)
{
	uint8_t wire[RC_HDR_LEN];
	struct rc_hdr h = {.command = cmd, .len = len, .data = data, .id = id};

	rc_hdr_encode(&h, wire);
	return send_all(rs, wire, sizeof(wire));
}

static int recv_hdr(int rs, struct rc_hdr *h)
{
	uint8_t wire[RC_HDR_LEN];

	if (recv_all(rs, wire, sizeof(wire)))
		return -1;
	if (rc_hdr_decode(wire, sizeof(wire), h)) {
		ex_err("bad message header (version %u, length %u)", wire[0],
		       h->len);
		errno = EPROTO;
		return -1;
	}
	return 0;
}

/* Server */

struct session {
	int rs;
	int fd; /* the destination file, -1 when none is open */
	char *path;
	char *chunk;
};

static void session_close_file(struct session *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	free(s->path);
	s->path = NULL;
}

static int do_open(struct session *s, const struct rc_hdr *h)
{
	size_t len = h->len - RC_HDR_LEN;
	int err = 0;

	if (len == 0 || len > RC_MAX_PATH) {
		ex_err("open: bad path length %zu", len);
		return -1;
	}
	free(s->path);
	s->path = malloc(len);
	if (!s->path)
		return -1;
	if (recv_all(s->rs, s->path, len))
		return -1;
	if (rc_path_check(s->path, len)) {
		ex_err("open: the path is not terminated");
		return -1;
	}
	if (s->fd >= 0) {
		err = EBUSY;
	} else {
		s->fd = open(s->path, O_WRONLY | O_CREAT | O_TRUNC,
			     h->data & 07777);
		if (s->fd < 0)
			err = errno;
	}
	ex_info("open %s: %s", s->path, err ? strerror(err) : "ok");
	return send_hdr(s->rs, h->command | RC_CMD_RESP, RC_HDR_LEN, err,
			h->id);
}

/* Receives size bytes into the open file; an errno value, or -1. */
static int receive_file(struct session *s, uint64_t size)
{
	int err = 0;

	while (size) {
		size_t n = size < CHUNK ? size : CHUNK;

		if (recv_all(s->rs, s->chunk, n))
			return -1;
		if (!err && write(s->fd, s->chunk, n) != (ssize_t)n)
			err = errno ? errno : EIO;
		size -= n;
	}
	return err;
}

static int do_write(struct session *s, const struct rc_hdr *h)
{
	uint8_t wire[8];
	uint64_t size;
	int ret;

	if (h->len != RC_WRITE_LEN) {
		ex_err("write: bad message length %u", h->len);
		return -1;
	}
	if (recv_all(s->rs, wire, sizeof(wire)))
		return -1;
	size = rc_u64_decode(wire);
	if (s->fd < 0) {
		/* Without a file there is no way to skip the data safely. */
		ex_err("write: no file is open");
		send_hdr(s->rs, h->command | RC_CMD_RESP, RC_HDR_LEN, EBADF,
			 h->id);
		return -1;
	}
	ret = receive_file(s, size);
	if (ret < 0)
		return -1;
	ex_info("received %llu bytes%s%s", (unsigned long long)size,
		ret ? ": " : "", ret ? strerror(ret) : "");
	return send_hdr(s->rs, h->command | RC_CMD_RESP, RC_HDR_LEN, ret,
			h->id);
}

static int do_close(struct session *s, const struct rc_hdr *h)
{
	int err = 0;

	if (s->fd >= 0 && close(s->fd))
		err = errno;
	s->fd = -1;
	session_close_file(s);
	return send_hdr(s->rs, h->command | RC_CMD_RESP, RC_HDR_LEN, err,
			h->id);
}

static void serve(struct session *s)
{
	struct rc_hdr h;
	int ret = 0;

	while (!ret) {
		if (recv_hdr(s->rs, &h)) {
			if (errno)
				ex_syserr("receive");
			break;
		}
		switch (h.command) {
		case RC_CMD_OPEN:
			ret = do_open(s, &h);
			break;
		case RC_CMD_WRITE:
			ret = do_write(s, &h);
			break;
		case RC_CMD_CLOSE:
			ret = do_close(s, &h);
			break;
		default:
			send_hdr(s->rs, h.command | RC_CMD_RESP, RC_HDR_LEN,
				 EINVAL, h.id);
			ret = -1;
		}
	}
	session_close_file(s);
}

static int server_listen(void)
{
	struct addrinfo hints = {.ai_flags = AI_PASSIVE,
				 .ai_socktype = SOCK_STREAM},
			*ai;
	int rs, one = 1, ret;

	ret = getaddrinfo(NULL, port, &hints, &ai);
	if (ret) {
		ex_err("port %s: %s", port, gai_strerror(ret));
		return -1;
	}
	rs = rsocket(ai->ai_family, SOCK_STREAM, 0);
	if (rs < 0) {
		ex_syserr("rsocket");
		goto out;
	}
	if (rsetsockopt(rs, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		ex_syserr("rsetsockopt SO_REUSEADDR");
	if (rbind(rs, ai->ai_addr, ai->ai_addrlen) || rlisten(rs, 1)) {
		ex_syserr("listen on port %s", port);
		rclose(rs);
		rs = -1;
	}
out:
	freeaddrinfo(ai);
	return rs;
}

static int server_run(void)
{
	struct session s = {.fd = -1};
	struct sockaddr_storage ss;
	char peer[EX_ADDRSTRLEN];
	socklen_t len;
	int lrs;

	s.chunk = malloc(CHUNK);
	lrs = s.chunk ? server_listen() : -1;
	if (lrs < 0) {
		free(s.chunk);
		return EX_FAIL;
	}
	for (;;) {
		len = sizeof(ss);
		s.rs = raccept(lrs, (struct sockaddr *)&ss, &len);
		if (s.rs < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			ex_syserr("raccept");
			break;
		}
		ex_info("client %s",
			ex_ntop((struct sockaddr *)&ss, peer, sizeof(peer)));
		serve(&s);
		rshutdown(s.rs, SHUT_RDWR);
		rclose(s.rs);
	}
	rclose(lrs);
	free(s.chunk);
	return EX_FAIL;
}

/* Client */

/* Waits for the answer to cmd: its status (0 or errno), or -1. */
static int get_resp(int rs, uint8_t cmd, const char *what)
{
	struct rc_hdr h;

	if (recv_hdr(rs, &h)) {
		ex_syserr("%s: no answer", what);
		return -1;
	}
	if (h.command != (cmd | RC_CMD_RESP) || h.len != RC_HDR_LEN) {
		ex_err("%s: unexpected answer (command 0x%x, length %u)", what,
		       h.command, h.len);
		return -1;
	}
	if (h.data) {
		ex_err("%s: the server says: %s", what, strerror(h.data));
		return -1;
	}
	return 0;
}

static int client_connect(const char *server)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
	int rs, ret;

	ret = getaddrinfo(server, port, &hints, &ai);
	if (ret) {
		ex_err("%s: %s", server, gai_strerror(ret));
		return -1;
	}
	rs = rsocket(ai->ai_family, SOCK_STREAM, 0);
	if (rs < 0) {
		ex_syserr("rsocket");
	} else if (rconnect(rs, ai->ai_addr, ai->ai_addrlen)) {
		ex_syserr("rconnect %s", server);
		rclose(rs);
		rs = -1;
	}
	freeaddrinfo(ai);
	return rs;
}

static int send_open(int rs, const char *dest, mode_t mode)
{
	size_t plen = rc_path_field_len(strlen(dest));
	uint8_t *msg;
	int ret;

	if (!plen) {
		ex_err("%s: destination path too long", dest);
		return -1;
	}
	msg = calloc(1, RC_HDR_LEN + plen);
	if (!msg)
		return -1;
	rc_hdr_encode(&(struct rc_hdr){.command = RC_CMD_OPEN,
				       .len = RC_HDR_LEN + plen,
				       .data = mode},
		      msg);
	memcpy(msg + RC_HDR_LEN, dest, strlen(dest));
	ret = send_all(rs, msg, RC_HDR_LEN + plen);
	free(msg);
	if (ret) {
		ex_syserr("send");
		return -1;
	}
	return get_resp(rs, RC_CMD_OPEN, "open");
}

static int send_file(int rs, int fd, uint64_t size)
{
	uint8_t msg[RC_WRITE_LEN];
	char *chunk = malloc(CHUNK);
	uint64_t left = size;
	int ret = -1;

	if (!chunk)
		return -1;
	rc_hdr_encode(
		&(struct rc_hdr){.command = RC_CMD_WRITE, .len = RC_WRITE_LEN},
		msg);
	rc_u64_encode(size, msg + RC_HDR_LEN);
	if (send_all(rs, msg, sizeof(msg)))
		goto out;
	while (left) {
		ssize_t n = read(fd, chunk, left < CHUNK ? left : CHUNK);

		if (n <= 0) {
			ex_syserr("read");
			goto out;
		}
		if (send_all(rs, chunk, n)) {
			ex_syserr("send");
			goto out;
		}
		left -= n;
	}
	ret = get_resp(rs, RC_CMD_WRITE, "write");
out:
	free(chunk);
	return ret;
}

static int send_close(int rs)
{
	if (send_hdr(rs, RC_CMD_CLOSE, RC_HDR_LEN, 0, 0)) {
		ex_syserr("send");
		return -1;
	}
	return get_resp(rs, RC_CMD_CLOSE, "close");
}

static int client_run(const char *src, char *server)
{
	char *dest = strchr(server, ':');
	struct stat st;
	uint64_t t0, us;
	int fd, rs, ret;

	if (dest)
		*dest++ = '\0';
	if (!dest || !*dest)
		dest = (char *)src;
	fd = open(src, O_RDONLY);
	if (fd < 0 || fstat(fd, &st)) {
		ex_syserr("%s", src);
		if (fd >= 0)
			close(fd);
		return EX_FAIL;
	}
	rs = client_connect(server);
	if (rs < 0) {
		close(fd);
		return EX_FAIL;
	}
	t0 = ex_now_us();
	ret = send_open(rs, dest, st.st_mode);
	if (!ret) {
		ret = send_file(rs, fd, st.st_size);
		ret = send_close(rs) || ret;
	}
	us = ex_now_us() - t0;
	rshutdown(rs, SHUT_RDWR);
	rclose(rs);
	close(fd);
	if (ret)
		return EX_FAIL;
	printf("%lld bytes in %.2f seconds = %.2f Gb/sec\n",
	       (long long)st.st_size, us / 1e6,
	       st.st_size * 8.0 / (us ? us * 1000.0 : 1000.0));
	return EX_OK;
}

static void usage(void)
{
	printf("usage: %s [-p port]                            (server)\n"
	       "       %s source server[:destination] [-p port] (client)\n"
	       "  -p port   port number (default %s)\n",
	       ex_prog(), ex_prog(), DEFAULT_PORT);
}

int main(int argc, char **argv)
{
	char *src = NULL, *server = NULL;
	int op;

	ex_init(argv[0]);
	/* The client's two operands come first, as with rdma-core's rcopy. */
	if (argc >= 3 && argv[1][0] != '-') {
		src = argv[1];
		server = argv[2];
		argv += 2;
		argc -= 2;
		argv[0] = argv[-2];
	}
	while ((op = getopt(argc, argv, "p:h")) != -1) {
		switch (op) {
		case 'p':
			port = optarg;
			break;
		case 'h':
			usage();
			return EX_OK;
		default:
			return ex_usage_hint();
		}
	}
	if (optind < argc) {
		ex_err("unexpected argument '%s'", argv[optind]);
		return ex_usage_hint();
	}
	return src ? client_run(src, server) : server_run();
}
