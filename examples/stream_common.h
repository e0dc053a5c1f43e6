/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * What rstream and riostream share: their command line, connection set-up
 * over rsockets (or, for rstream -T s, ordinary sockets), the table of test
 * sizes, the data pattern and the result lines.
 *
 * Both programs talk to rdma-core's programs of the same name, so the parts
 * the two sides must agree on are fixed here: the default port (7471), the
 * sequence of tests a run without -I/-C/-S performs (sizes and counts), and
 * the verification pattern (one byte counter per direction, running across
 * every verified byte the process sends or receives).
 */
#ifndef EXAMPLES_STREAM_COMMON_H
#define EXAMPLES_STREAM_COMMON_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define ST_DEFAULT_PORT "7471"

/* The socket calls a test uses, so one test runs over either API. */
struct st_ops {
	const char *name;
	int (*socket)(int domain, int type, int protocol);
	int (*bind)(int fd, const struct sockaddr *sa, socklen_t len);
	int (*listen)(int fd, int backlog);
	int (*accept)(int fd, struct sockaddr *sa, socklen_t *len);
	int (*connect)(int fd, const struct sockaddr *sa, socklen_t len);
	ssize_t (*send)(int fd, const void *buf, size_t len, int flags);
	ssize_t (*recv)(int fd, void *buf, size_t len, int flags);
	int (*setsockopt)(int fd, int level, int name, const void *val,
			  socklen_t len);
	int (*getsockopt)(int fd, int level, int name, void *val,
			  socklen_t *len);
	int (*set_nonblock)(int fd);
	int (*poll)(struct pollfd *fds, nfds_t n, int timeout);
	int (*shutdown)(int fd, int how);
	int (*close)(int fd);
};

extern const struct st_ops st_rsocket_ops;
extern const struct st_ops st_socket_ops;

/* What the socket is tuned for (rdma-core's rs_optimization). */
enum st_tuning { ST_TUNE_CUSTOM, ST_TUNE_LATENCY, ST_TUNE_BANDWIDTH };

struct st_opts {
	const struct st_ops *ops;
	const char *dst; /* -s: be a client of this server */
	const char *src; /* -b: bind (listen on) this address */
	const char *port; /* -p */
	int ai_flags, ai_family; /* -f */
	bool use_rai; /* -T r / -f gid: resolve with rdma_getaddrinfo */
	int buffer_size; /* -B; 0: 512 KiB */
	int inline_size; /* -i */
	bool custom; /* -I, -C or a number for -S */
	bool all_sizes; /* -S all */
	int iterations, count, size; /* -I, -C, -S */
	bool async; /* -T a: wait in poll() before each call */
	bool verify; /* -T v */
	bool fork; /* -T f: the server forks per connection */
	int msg_flags; /* MSG_DONTWAIT (default, -T n) or MSG_WAITALL (-T b) */
	int poll_timeout; /* 0 when non-blocking, else -1 */
	int keepalive; /* -k seconds, 0: off */
	bool iomap; /* riostream: allow riomap on the socket */
	enum st_tuning tuning;
};

/* Defaults; rdma-core's programs use the same ones. */
void st_opts_init(struct st_opts *o);

/*
 * One option of the common set (s b f B i I C S p T k); 1 when @op is not
 * one of them, 0 when taken, -1 (message printed) when its argument is bad.
 * @tests lists the -T letters the program accepts.
 */
int st_parse_opt(struct st_opts *o, int op, const char *arg, const char *tests);
/* After parsing: settles what depends on several options. */
void st_opts_done(struct st_opts *o);

/* The test sizes of a run without -I/-C/-S, in rdma-core's order. */
struct st_size {
	int size;
	bool with_all; /* only with -S all */
};
size_t st_sizes(const struct st_size **sizes);
/* Largest size a run may use (the buffer to allocate). */
int st_max_size(const struct st_opts *o);
/* Iterations (latency) or transfers (bandwidth) for a size. */
int st_size_to_count(int size);

/* A test's shape and timing. */
struct st_test {
	char name[32];
	int size, count, iterations;
	uint64_t start_us, end_us;
};
void st_latency_test(struct st_test *t, int size);
void st_bandwidth_test(struct st_test *t, int size);
void st_custom_test(struct st_test *t, const struct st_opts *o);
void st_print_header(void);
/* One result line: each transfer moves size bytes in both directions. */
void st_print_result(const struct st_test *t);

/* "4k", "1.5m": a byte count in rdma-core's short form. */
void st_size_str(char *buf, size_t len, long long size);
/* "100k": a count in short form. */
void st_count_str(char *buf, size_t len, long long count);

/* The pattern: continues where the previous call left off. */
void st_fill(void *buf, size_t len);
/* 0, or -1 after printing the offset of the first wrong byte. */
int st_check(const void *buf, size_t len);

/* Connections: -1 after printing why. */
int st_listen(struct st_opts *o);
int st_accept(struct st_opts *o, int lfd);
int st_connect(struct st_opts *o);
/* Buffer sizes, TCP_NODELAY, non-blocking mode, inline size, keepalive. */
void st_set_options(const struct st_opts *o, int fd);

/*
 * Sends/receives exactly len bytes, looping over short transfers (and
 * EAGAIN in non-blocking mode), waiting in poll() first when -T a.
 */
int st_send_all(const struct st_opts *o, int fd, const void *buf, size_t len);
int st_recv_all(const struct st_opts *o, int fd, void *buf, size_t len);

#endif /* EXAMPLES_STREAM_COMMON_H */
