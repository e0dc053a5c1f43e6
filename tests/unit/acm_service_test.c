// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests of src/acm/acm_service.c, the ibacm client, against a fake
 * service: a thread that accepts one connection on a Unix (or loopback
 * TCP) socket and answers as told: correctly, with an error status, with
 * garbage, with half an answer, too late, not at all, or from a socket
 * the client must not trust.  Every case must end in a usable path or a
 * clean failure (which the resolver turns into the kernel's resolution),
 * never a crash or a hang.
 *
 * The wire layout is also checked against <infiniband/acm.h> when that
 * header (Debian package ibacm) is installed.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "acm/acm.h"
#include "cm/cma.h"
#include "cm/test_hooks.h"
#include "unit.h"

#if __has_include(<infiniband/acm.h>)
#include <infiniband/acm.h>
_Static_assert(sizeof(struct acm_hdr) == sizeof(struct cma_acm_wire_hdr),
	       "header size");
_Static_assert(offsetof(struct acm_hdr, length) ==
		       offsetof(struct cma_acm_wire_hdr, length),
	       "length offset");
_Static_assert(offsetof(struct acm_hdr, tid) ==
		       offsetof(struct cma_acm_wire_hdr, tid),
	       "tid offset");
_Static_assert(sizeof(struct acm_ep_addr_data) ==
		       sizeof(struct cma_acm_wire_ep),
	       "endpoint record size");
_Static_assert(ACM_OP_RESOLVE == CMA_ACM_OP_RESOLVE &&
		       ACM_OP_ACK == CMA_ACM_OP_ACK,
	       "opcodes");
_Static_assert(ACM_EP_INFO_PATH == CMA_ACM_INFO_PATH &&
		       ACM_EP_INFO_NAME == CMA_ACM_INFO_NAME &&
		       ACM_EP_INFO_ADDRESS_IP == CMA_ACM_INFO_IP &&
		       ACM_EP_INFO_ADDRESS_IP6 == CMA_ACM_INFO_IP6,
	       "endpoint types");
#endif

/*
 * The resolver's service timeout in these tests.  Long enough that a fake
 * service thread answers in time on a loaded machine (CI runs VMs beside
 * the unit tests), short enough that the slow-answer case stays quick.
 */
#define TIMEOUT_MS 1000
#define TIMEOUT_STR "1000"

enum fake_mode {
	FAKE_GOOD,
	FAKE_ERROR_STATUS,
	FAKE_GARBAGE,
	FAKE_PARTIAL,
	FAKE_SLOW,
	FAKE_CLOSE,
	FAKE_HUGE_LENGTH,
	FAKE_NO_PATH,
	FAKE_BAD_PATH,
	FAKE_SPLIT, /* a good answer in three pieces */
};

struct fake {
	enum fake_mode mode;
	int lfd;
	pthread_t thread;
	char dir[64];
	char path[128];
	uint16_t port;
	uint8_t request[CMA_ACM_MSG_MAX];
	size_t request_len;
};

static void fill_path(struct ibv_path_record *p)
{
	memset(p, 0, sizeof(*p));
	inet_pton(AF_INET6, "::ffff:192.0.2.1", p->sgid.raw);
	inet_pton(AF_INET6, "::ffff:192.0.2.2", p->dgid.raw);
	p->pkey = htobe16(0xffff);
	p->mtu = (2 << 6) | IBV_MTU_1024;
	p->rate = (2 << 6) | 3;
	p->reversible_numpath = 0x81;
}

/* The request as received, with an answer appended. */
static size_t make_answer(struct fake *f, uint8_t *out)
{
	struct cma_acm_wire_hdr hdr;
	struct cma_acm_wire_ep ep;
	size_t len = f->request_len;

	memcpy(out, f->request, len);
	memcpy(&hdr, out, sizeof(hdr));
	hdr.opcode |= CMA_ACM_OP_ACK;
	if (f->mode == FAKE_ERROR_STATUS)
		hdr.status = 3; /* no data */
	if (f->mode != FAKE_NO_PATH &&
	    len + CMA_ACM_EP_LEN <= CMA_ACM_MSG_MAX) {
		memset(&ep, 0, sizeof(ep));
		ep.type = CMA_ACM_INFO_PATH;
		ep.flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY |
			   IBV_PATH_FLAG_BIDIRECTIONAL;
		fill_path(&ep.info.path);
		if (f->mode == FAKE_BAD_PATH)
			ep.info.path.mtu = 0; /* no MTU: unusable */
		memcpy(out + len, &ep, sizeof(ep));
		len += sizeof(ep);
	}
	hdr.length = (uint16_t)len;
	memcpy(out, &hdr, sizeof(hdr));
	return len;
}

static int read_request(struct fake *f, int fd)
{
	struct cma_acm_wire_hdr hdr;
	ssize_t n;
	size_t got = 0;

	while (got < CMA_ACM_HDR_LEN) {
		n = read(fd, f->request + got, CMA_ACM_HDR_LEN - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	memcpy(&hdr, f->request, sizeof(hdr));
	if (hdr.length > CMA_ACM_MSG_MAX || hdr.length < CMA_ACM_HDR_LEN)
		return -1;
	while (got < hdr.length) {
		n = read(fd, f->request + got, hdr.length - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	f->request_len = got;
	return 0;
}

static void send_bytes(int fd, const void *buf, size_t len)
{
	if (send(fd, buf, len, MSG_NOSIGNAL) < 0)
		return; /* the client may have given up: that is the point */
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	uint8_t out[CMA_ACM_MSG_MAX + CMA_ACM_EP_LEN];
	struct cma_acm_wire_hdr hdr;
	size_t len, i;
	int fd;

	fd = accept(f->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	if (read_request(f, fd))
		goto out;
	switch (f->mode) {
	case FAKE_GARBAGE:
		for (i = 0; i < 100; i++)
			out[i] = (uint8_t)(i * 37 + 11);
		send_bytes(fd, out, 100);
		break;
	case FAKE_PARTIAL:
		len = make_answer(f, out);
		send_bytes(fd, out, len / 2);
		break;
	case FAKE_SLOW:
		usleep(4 * TIMEOUT_MS * 1000);
		len = make_answer(f, out);
		send_bytes(fd, out, len);
		break;
	case FAKE_CLOSE:
		break;
	case FAKE_HUGE_LENGTH:
		len = make_answer(f, out);
		memcpy(&hdr, out, sizeof(hdr));
		hdr.length = 60000;
		memcpy(out, &hdr, sizeof(hdr));
		send_bytes(fd, out, len);
		break;
	case FAKE_SPLIT:
		len = make_answer(f, out);
		send_bytes(fd, out, 10);
		usleep(20000);
		send_bytes(fd, out + 10, 30);
		usleep(20000);
		send_bytes(fd, out + 40, len - 40);
		break;
	default:
		len = make_answer(f, out);
		send_bytes(fd, out, len);
		break;
	}
out:
	close(fd);
	return NULL;
}

/* A fake's Unix socket, bound (not listening) and named to the resolver. */
static void fake_bind_unix(struct fake *f, enum fake_mode mode)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	char env[160];

	memset(f, 0, sizeof(*f));
	f->mode = mode;
	strcpy(f->dir, "/tmp/acm-fake.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/sock", f->dir);
	strcpy(sun.sun_path, f->path);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(f->lfd, 0);
	ck_assert_int_eq(bind(f->lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	snprintf(env, sizeof(env), "unix:%s", f->path);
	setenv("RDMA_CM_ACM_SERVICE", env, 1);
}

static void fake_start_unix(struct fake *f, enum fake_mode mode,
			    bool listen_too)
{
	fake_bind_unix(f, mode);
	if (!listen_too) {
		close(f->lfd); /* a dead socket: the file stays */
		f->lfd = -1;
		return;
	}
	ck_assert_int_eq(listen(f->lfd, 4), 0);
	ck_assert_int_eq(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

static void fake_start_tcp(struct fake *f, enum fake_mode mode)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t len = sizeof(sin);
	char env[32];

	memset(f, 0, sizeof(*f));
	f->mode = mode;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(f->lfd, 0);
	ck_assert_int_eq(bind(f->lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(listen(f->lfd, 4), 0);
	ck_assert_int_eq(getsockname(f->lfd, (struct sockaddr *)&sin, &len), 0);
	f->port = ntohs(sin.sin_port);
	snprintf(env, sizeof(env), "tcp:%u", f->port);
	setenv("RDMA_CM_ACM_SERVICE", env, 1);
	ck_assert_int_eq(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

static void fake_stop(struct fake *f)
{
	if (f->lfd >= 0) {
		shutdown(f->lfd, SHUT_RDWR);
		pthread_join(f->thread, NULL);
		close(f->lfd);
	}
	if (f->path[0]) {
		unlink(f->path);
		rmdir(f->dir);
	}
}

static void query_ip(struct cma_acm_query *q)
{
	memset(q, 0, sizeof(*q));
	q->src.type = CMA_ACM_EP_IP4;
	inet_pton(AF_INET, "192.0.2.1", q->src.ip4);
	q->dst.type = CMA_ACM_EP_IP4;
	inet_pton(AF_INET, "192.0.2.2", q->dst.ip4);
}

static void setup(void)
{
	setenv("RDMA_CM_USE_IB_ACM", "1", 1);
	setenv("RDMA_CM_ACM_SOURCES", "cache,service", 1);
	setenv("RDMA_CM_ACM_TIMEOUT_MS", TIMEOUT_STR, 1);
	unsetenv("RDMA_CM_ACM_LOG");
	cma_acm_reconfigure();
	cma_acm_service_set_trusted_uid(geteuid());
}

/* Run one exchange against a fake in @mode; its return and errno. */
static int exchange(enum fake_mode mode, struct cma_acm_answer *ans, int *err)
{
	struct cma_acm_query q;
	struct fake f;
	int ret;

	fake_start_unix(&f, mode, true);
	query_ip(&q);
	ret = cma_acm_service_resolve(&q, ans);
	*err = errno;
	fake_stop(&f);
	return ret;
}

static void assert_good_answer(const struct cma_acm_answer *ans)
{
	struct ibv_path_record want;

	fill_path(&want);
	ck_assert_int_eq(ans->num_paths, 1);
	ck_assert_mem_eq(&ans->paths[0].path, &want, sizeof(want));
	ck_assert_mem_eq(&ans->dgid, &want.dgid, 16);
	ck_assert_uint_eq(ans->paths[0].flags,
			  IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY |
				  IBV_PATH_FLAG_BIDIRECTIONAL);
}

/* --- tests ---------------------------------------------------------------- */

START_TEST(good_answer)
{
	struct cma_acm_answer ans;
	struct cma_acm_wire_hdr hdr;
	struct cma_acm_wire_ep ep;
	struct cma_acm_query q;
	struct fake f;

	fake_start_unix(&f, FAKE_GOOD, true);
	query_ip(&q);
	ck_assert_int_eq(cma_acm_service_resolve(&q, &ans), 0);
	assert_good_answer(&ans);
	/* The request: header, source and destination records. */
	ck_assert_uint_eq(f.request_len, CMA_ACM_HDR_LEN + 2 * CMA_ACM_EP_LEN);
	memcpy(&hdr, f.request, sizeof(hdr));
	ck_assert_uint_eq(hdr.version, 1);
	ck_assert_uint_eq(hdr.opcode, CMA_ACM_OP_RESOLVE);
	memcpy(&ep, f.request + CMA_ACM_HDR_LEN, sizeof(ep));
	ck_assert_uint_eq(ep.type, CMA_ACM_INFO_IP);
	ck_assert_uint_eq(ep.flags, CMA_ACM_FLAG_SOURCE);
	ck_assert_mem_eq(ep.info.addr, q.src.ip4, 4);
	memcpy(&ep, f.request + CMA_ACM_HDR_LEN + CMA_ACM_EP_LEN, sizeof(ep));
	ck_assert_uint_eq(ep.flags, CMA_ACM_FLAG_DEST);
	ck_assert_mem_eq(ep.info.addr, q.dst.ip4, 4);
	fake_stop(&f);
}
END_TEST

START_TEST(good_answer_in_pieces)
{
	struct cma_acm_answer ans;
	int err;

	ck_assert_int_eq(exchange(FAKE_SPLIT, &ans, &err), 0);
	assert_good_answer(&ans);
}
END_TEST

START_TEST(good_answer_over_tcp)
{
	struct cma_acm_answer ans;
	struct cma_acm_query q;
	struct fake f;

	fake_start_tcp(&f, FAKE_GOOD);
	query_ip(&q);
	ck_assert_int_eq(cma_acm_service_resolve(&q, &ans), 0);
	assert_good_answer(&ans);
	fake_stop(&f);
}
END_TEST

START_TEST(name_request)
{
	struct cma_acm_answer ans;
	struct cma_acm_wire_ep ep;
	struct cma_acm_query q;
	struct fake f;

	fake_start_unix(&f, FAKE_GOOD, true);
	memset(&q, 0, sizeof(q));
	q.dst.type = CMA_ACM_EP_NAME;
	strcpy(q.dst.name, "node17");
	ck_assert_int_eq(cma_acm_service_resolve(&q, &ans), 0);
	ck_assert_uint_eq(f.request_len, CMA_ACM_HDR_LEN + CMA_ACM_EP_LEN);
	memcpy(&ep, f.request + CMA_ACM_HDR_LEN, sizeof(ep));
	ck_assert_uint_eq(ep.type, CMA_ACM_INFO_NAME);
	ck_assert_str_eq(ep.info.name, "node17");
	fake_stop(&f);
}
END_TEST

static const struct {
	enum fake_mode mode;
	int err;
} failures[] = {
	{FAKE_ERROR_STATUS, ENODATA}, {FAKE_GARBAGE, EPROTO},
	{FAKE_PARTIAL, EPROTO},	      {FAKE_SLOW, ETIMEDOUT},
	{FAKE_CLOSE, EPROTO},	      {FAKE_HUGE_LENGTH, EPROTO},
	{FAKE_NO_PATH, ENODATA},      {FAKE_BAD_PATH, ENODATA},
};

START_TEST(bad_answers_fail_cleanly)
{
	struct cma_acm_answer ans;
	struct timespec t0;
	int err;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(exchange(failures[_i].mode, &ans, &err), -1);
	ck_assert_int_eq(err, failures[_i].err);
	/* Bounded by the timeout (generously: this is not a benchmark). */
	ck_assert_int_lt(unit_ms_since(&t0), 20 * TIMEOUT_MS);
}
END_TEST

START_TEST(dead_socket)
{
	struct cma_acm_answer ans;
	struct cma_acm_query q;
	struct fake f;

	fake_start_unix(&f, FAKE_GOOD, false);
	query_ip(&q);
	ck_assert_int_eq(cma_acm_service_resolve(&q, &ans), -1);
	ck_assert_int_eq(errno, ECONNREFUSED);
	fake_stop(&f);
}
END_TEST

START_TEST(missing_socket)
{
	struct cma_acm_answer ans;
	struct cma_acm_query q;

	setenv("RDMA_CM_ACM_SERVICE", "unix:/nonexistent/acm.sock", 1);
	query_ip(&q);
	ck_assert_int_eq(cma_acm_service_resolve(&q, &ans), -1);
	ck_assert_int_eq(errno, ENOENT);
	setenv("RDMA_CM_ACM_SERVICE", "none", 1);
	ck_assert_int_eq(cma_acm_service_resolve(&q, &ans), -1);
	ck_assert_int_eq(errno, ENOENT);
	setenv("RDMA_CM_ACM_SERVICE", "tcp:99999", 1);
	ck_assert_int_eq(cma_acm_service_resolve(&q, &ans), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(wrong_owner_unix)
{
	struct cma_acm_answer ans;
	struct cma_acm_query q;
	struct fake f;

	fake_start_unix(&f, FAKE_GOOD, true);
	cma_acm_service_set_trusted_uid(geteuid() + 1);
	query_ip(&q);
	ck_assert_int_eq(cma_acm_service_resolve(&q, &ans), -1);
	ck_assert_int_eq(errno, EPERM);
	fake_stop(&f); /* the fake never got a request: accept() is released */
}
END_TEST

/*
 * Fill @f's listen backlog (listen(fd, 0) and nobody accepting) with
 * non-blocking connects until the kernel says EAGAIN; the fds in @fds.
 */
static int fill_backlog(struct fake *f, int *fds, int max)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int n = 0;

	strcpy(sun.sun_path, f->path);
	ck_assert_int_eq(listen(f->lfd, 0), 0);
	for (;;) {
		ck_assert_int_lt(n, max);
		fds[n] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		ck_assert_int_ge(fds[n], 0);
		if (connect(fds[n], (struct sockaddr *)&sun, sizeof(sun))) {
			ck_assert_int_eq(errno, EAGAIN);
			close(fds[n]);
			return n;
		}
		n++;
	}
}

/*
 * A trusted service whose backlog is full is busy, not untrusted: the
 * resolve fails with EAGAIN once the service timeout is over (and the
 * resolver falls back).  It used to take EAGAIN for "in progress", ask
 * the unconnected socket for its peer and report EPERM.
 */
START_TEST(busy_unix_socket_is_not_untrusted)
{
	struct cma_acm_answer ans;
	struct cma_acm_query q;
	int fds[64], n, i;
	struct fake f;

	fake_bind_unix(&f, FAKE_GOOD);
	n = fill_backlog(&f, fds, 64);
	query_ip(&q);
	ck_assert_int_eq(cma_acm_service_resolve(&q, &ans), -1);
	ck_assert_int_eq(errno, EAGAIN);
	for (i = 0; i < n; i++)
		close(fds[i]);
	close(f.lfd);
	f.lfd = -1; /* no fake thread to stop */
	fake_stop(&f);
}
END_TEST

struct drain_arg {
	struct fake *f;
	int fds_to_accept;
};

/* Take the queued connects off the backlog, then serve as the fake does. */
static void *drain_then_serve(void *arg)
{
	struct drain_arg *d = arg;
	int i, fd;

	usleep(100000); /* let the resolve find the backlog full */
	for (i = 0; i < d->fds_to_accept; i++) {
		fd = accept(d->f->lfd, NULL, NULL);
		if (fd >= 0)
			close(fd);
	}
	return fake_main(d->f);
}

/* Room made in the backlog within the timeout: the answer comes through. */
START_TEST(busy_unix_socket_waits_for_room)
{
	struct cma_acm_answer ans;
	struct cma_acm_query q;
	struct drain_arg d;
	int fds[64], n, i;
	struct fake f;

	fake_bind_unix(&f, FAKE_GOOD);
	n = fill_backlog(&f, fds, 64);
	d.f = &f;
	d.fds_to_accept = n;
	ck_assert_int_eq(pthread_create(&f.thread, NULL, drain_then_serve, &d),
			 0);
	query_ip(&q);
	ck_assert_int_eq(cma_acm_service_resolve(&q, &ans), 0);
	assert_good_answer(&ans);
	for (i = 0; i < n; i++)
		close(fds[i]);
	fake_stop(&f);
}
END_TEST

START_TEST(wrong_owner_tcp)
{
	struct cma_acm_answer ans;
	struct cma_acm_query q;
	struct fake f;

	fake_start_tcp(&f, FAKE_GOOD);
	cma_acm_service_set_trusted_uid(geteuid() + 1);
	query_ip(&q);
	ck_assert_int_eq(cma_acm_service_resolve(&q, &ans), -1);
	ck_assert_int_eq(errno, EPERM);
	fake_stop(&f);
}
END_TEST

/* Through the resolver: a bad service is a miss, remembered briefly. */
START_TEST(resolver_falls_back_and_caches)
{
	struct cma_acm_answer ans;
	struct cma_acm_query q;
	struct fake f;

	fake_start_unix(&f, FAKE_GARBAGE, true);
	query_ip(&q);
	ck_assert_int_eq(cma_acm_resolve(&q, &ans), -1);
	ck_assert_int_eq(errno, ENODATA);
	fake_stop(&f);
	ck_assert_uint_eq(cma_acm_cache_count(), 1); /* the negative entry */

	/* A good service now: the negative entry still answers first... */
	fake_start_unix(&f, FAKE_GOOD, true);
	ck_assert_int_eq(cma_acm_resolve(&q, &ans), -1);
	/* ...until it is dropped. */
	cma_acm_cache_flush();
	ck_assert_int_eq(cma_acm_resolve(&q, &ans), 0);
	ck_assert_int_eq(ans.source, CMA_ACM_SRC_SERVICE);
	fake_stop(&f);
	/* The positive answer is cached: no service needed any more. */
	setenv("RDMA_CM_ACM_SERVICE", "none", 1);
	ck_assert_int_eq(cma_acm_resolve(&q, &ans), 0);
	ck_assert_int_eq(ans.source, CMA_ACM_SRC_CACHE);
	assert_good_answer(&ans);
}
END_TEST

START_TEST(disabled_resolver_does_nothing)
{
	struct cma_acm_answer ans;
	struct cma_acm_query q;

	setenv("RDMA_CM_USE_IB_ACM", "0", 1);
	cma_acm_reconfigure();
	ck_assert(!cma_acm_enabled());
	query_ip(&q);
	ck_assert_int_eq(cma_acm_resolve(&q, &ans), -1);
	ck_assert_int_eq(errno, ENODATA);
	ck_assert_uint_eq(cma_acm_cache_count(), 0);
}
END_TEST

/* --- the answer parser on its own ------------------------------------------ */

static size_t build_answer(uint8_t *buf, uint8_t status, int paths)
{
	struct cma_acm_wire_hdr hdr = {.version = 1,
				       .opcode = CMA_ACM_OP_RESOLVE |
						 CMA_ACM_OP_ACK,
				       .status = status};
	struct cma_acm_wire_ep ep;
	size_t len = CMA_ACM_HDR_LEN;
	int i;

	for (i = 0; i < paths; i++) {
		memset(&ep, 0, sizeof(ep));
		ep.type = CMA_ACM_INFO_PATH;
		fill_path(&ep.info.path);
		memcpy(buf + len, &ep, sizeof(ep));
		len += sizeof(ep);
	}
	hdr.length = (uint16_t)len;
	memcpy(buf, &hdr, sizeof(hdr));
	return len;
}

START_TEST(parse_checks_lengths)
{
	uint8_t buf[CMA_ACM_MSG_MAX + 100];
	struct cma_acm_answer ans;
	size_t len;

	len = build_answer(buf, 0, 2);
	ck_assert_int_eq(cma_acm_msg_parse(buf, len, &ans), 0);
	ck_assert_int_eq(ans.num_paths, 2);
	/* No path flagged primary: the first one becomes it. */
	ck_assert_uint_eq(ans.paths[0].flags,
			  IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY |
				  IBV_PATH_FLAG_BIDIRECTIONAL);
	ck_assert_int_eq(cma_acm_msg_parse(buf, len - 1, &ans), -1);
	ck_assert_int_eq(errno, EPROTO);
	ck_assert_int_eq(cma_acm_msg_parse(buf, 10, &ans), -1);
	ck_assert_int_eq(cma_acm_msg_parse(buf, sizeof(buf), &ans), -1);
	buf[0] = 2; /* version */
	ck_assert_int_eq(cma_acm_msg_parse(buf, len, &ans), -1);
	ck_assert_int_eq(errno, EPROTO);
	len = build_answer(buf, 0, 0);
	ck_assert_int_eq(cma_acm_msg_parse(buf, len, &ans), -1);
	ck_assert_int_eq(errno, ENODATA);
	len = build_answer(buf, 0, CMA_ACM_MAX_EPS);
	ck_assert_int_eq(cma_acm_msg_parse(buf, len, &ans), 0);
	ck_assert_int_eq(ans.num_paths, CMA_ACM_MAX_PATHS);
}
END_TEST

START_TEST(build_rejects_empty_query)
{
	struct cma_acm_query q;
	uint8_t buf[CMA_ACM_MSG_MAX];

	memset(&q, 0, sizeof(q));
	ck_assert_int_eq(cma_acm_msg_build(&q, 1, buf, sizeof(buf)), -1);
	q.dst.type = CMA_ACM_EP_GID;
	q.dst.gid[15] = 1;
	ck_assert_int_eq(cma_acm_msg_build(&q, 1, buf, 10), -1);
	ck_assert_int_eq(cma_acm_msg_build(&q, 1, buf, sizeof(buf)),
			 CMA_ACM_HDR_LEN + CMA_ACM_EP_LEN);
}
END_TEST

Suite *acm_service_suite(void)
{
	Suite *s = suite_create("acm_service");
	TCase *tc = tcase_create("service");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, good_answer);
	tcase_add_test(tc, good_answer_in_pieces);
	tcase_add_test(tc, good_answer_over_tcp);
	tcase_add_test(tc, name_request);
	tcase_add_loop_test(tc, bad_answers_fail_cleanly, 0,
			    sizeof(failures) / sizeof(failures[0]));
	tcase_add_test(tc, dead_socket);
	tcase_add_test(tc, missing_socket);
	tcase_add_test(tc, wrong_owner_unix);
	tcase_add_test(tc, wrong_owner_tcp);
	tcase_add_test(tc, busy_unix_socket_is_not_untrusted);
	tcase_add_test(tc, busy_unix_socket_waits_for_room);
	tcase_add_test(tc, resolver_falls_back_and_caches);
	tcase_add_test(tc, disabled_resolver_does_nothing);
	tcase_add_test(tc, parse_checks_lengths);
	tcase_add_test(tc, build_rejects_empty_query);
	suite_add_tcase(s, tc);
	return s;
}
