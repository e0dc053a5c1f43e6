// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The ibacm service client.  One connection per question: a resolve
 * request (header + endpoint records), one answer of the same shape with
 * path records added, then close.  Nothing survives a question, so a
 * confused or restarted service cannot leave a stale answer in a socket.
 *
 * Finding the service, as rdma-core's library does unless told otherwise
 * (RDMA_CM_ACM_SERVICE=unix:PATH, =tcp:PORT, or =none):
 *   1. the Unix socket /run/ibacm.sock (the service's systemd socket);
 *   2. the loopback TCP port written in /run/ibacm.port.
 *
 * Trust: a Unix socket must belong to root (SO_PEERCRED); for TCP, the
 * port file must be root's and not writable by others, and the listening
 * socket on that port must be root's (/proc/net/tcp).  The whole exchange
 * (connect, send, answer) is bounded by RDMA_CM_ACM_TIMEOUT_MS.
 *
 * The answer is untrusted: cma_acm_msg_parse() checks every length and
 * field it uses, and is fuzzed (tests/fuzz/acm_msg_fuzz.c).
 */
#include <config.h>

#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "acm.h"
#include "cm/cma.h"
#include "cm/test_hooks.h"
#include "util/env.h"

/* Where ibacm listens and publishes its port (a fuzz target moves them). */
#ifndef ACM_UNIX_PATH
#define ACM_UNIX_PATH "/run/ibacm.sock"
#endif
#ifndef ACM_PORT_FILE
#define ACM_PORT_FILE "/run/ibacm.port"
#endif

_Static_assert(sizeof(struct cma_acm_wire_hdr) == CMA_ACM_HDR_LEN,
	       "ACM header layout");
_Static_assert(sizeof(struct cma_acm_wire_ep) == CMA_ACM_EP_LEN,
	       "ACM endpoint record layout");
_Static_assert(sizeof(struct ibv_path_data) == CMA_ACM_EP_LEN,
	       "a path record entry reads as struct ibv_path_data");

static uid_t acm_trusted_uid; /* root */

void cma_acm_service_set_trusted_uid(uid_t uid)
{
	acm_trusted_uid = uid;
}

/* --- messages (pure) ---------------------------------------------------- */

static void acm_put_ep(struct cma_acm_wire_ep *w, const struct cma_acm_ep *ep,
		       uint32_t flags)
{
	memset(w, 0, sizeof(*w));
	w->flags = flags;
	switch (ep->type) {
	case CMA_ACM_EP_NAME:
		w->type = CMA_ACM_INFO_NAME;
		/* Both are 64 bytes; the endpoint's is NUL terminated. */
		memcpy(w->info.name, ep->name, sizeof(w->info.name));
		w->info.name[sizeof(w->info.name) - 1] = '\0';
		break;
	case CMA_ACM_EP_IP4:
		w->type = CMA_ACM_INFO_IP;
		memcpy(w->info.addr, ep->ip4, 4);
		break;
	case CMA_ACM_EP_IP6:
		w->type = CMA_ACM_INFO_IP6;
		memcpy(w->info.addr, ep->ip6, 16);
		break;
	}
}

int cma_acm_msg_build(const struct cma_acm_query *q, uint64_t tid, uint8_t *buf,
		      size_t size)
{
	struct cma_acm_wire_hdr hdr = {
		.version = CMA_ACM_VERSION,
		.opcode = CMA_ACM_OP_RESOLVE,
		.tid = tid,
	};
	struct cma_acm_wire_ep eps[2], *path = NULL;
	size_t n = 0, len;

	if (q->dst.type == CMA_ACM_EP_NONE || size < CMA_ACM_HDR_LEN)
		return cma_err(EINVAL);
	memset(eps, 0, sizeof(eps));
	if (q->src.type != CMA_ACM_EP_NONE && q->src.type != CMA_ACM_EP_GID)
		acm_put_ep(&eps[n++], &q->src, CMA_ACM_FLAG_SOURCE);
	if (q->dst.type == CMA_ACM_EP_GID) {
		/* GIDs travel as a path record with the known ends filled. */
		path = &eps[n++];
		path->type = CMA_ACM_INFO_PATH;
		memcpy(path->info.path.dgid.raw, q->dst.gid, 16);
		if (q->src.type == CMA_ACM_EP_GID)
			memcpy(path->info.path.sgid.raw, q->src.gid, 16);
	} else {
		acm_put_ep(&eps[n++], &q->dst, CMA_ACM_FLAG_DEST);
	}
	len = CMA_ACM_HDR_LEN + n * CMA_ACM_EP_LEN;
	if (len > size)
		return cma_err(EINVAL);
	hdr.length = (uint16_t)len;
	memcpy(buf, &hdr, sizeof(hdr));
	memcpy(buf + CMA_ACM_HDR_LEN, eps, n * CMA_ACM_EP_LEN);
	return (int)len;
}

static bool acm_gid_is_zero(const union ibv_gid *gid)
{
	static const union ibv_gid zero;

	return !memcmp(gid, &zero, sizeof(zero));
}

/* A path record the kernel could use: both GIDs, a P_Key, a real MTU. */
static bool acm_path_plausible(const struct ibv_path_record *p)
{
	uint8_t mtu = p->mtu & 0x3f;

	return !acm_gid_is_zero(&p->dgid) && !acm_gid_is_zero(&p->sgid) &&
	       p->pkey && mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096;
}

#define ACM_PRIMARY_FLAGS                                                      \
	(IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY |                           \
	 IBV_PATH_FLAG_BIDIRECTIONAL)

/*
 * The kernel takes the path flagged exactly GMP|PRIMARY|BIDIRECTIONAL;
 * an answer that flags none that way gets its first path flagged so.
 */
static void acm_mark_primary(struct cma_acm_answer *ans)
{
	int i;

	for (i = 0; i < ans->num_paths; i++)
		if (ans->paths[i].flags == ACM_PRIMARY_FLAGS)
			return;
	ans->paths[0].flags = ACM_PRIMARY_FLAGS;
}

static void acm_take_record(const struct cma_acm_wire_ep *w,
			    struct cma_acm_answer *ans)
{
	switch (w->type) {
	case CMA_ACM_INFO_PATH:
		if (ans->num_paths == CMA_ACM_MAX_PATHS ||
		    !acm_path_plausible(&w->info.path))
			return;
		ans->paths[ans->num_paths].flags = w->flags;
		ans->paths[ans->num_paths].reserved = 0;
		ans->paths[ans->num_paths].path = w->info.path;
		ans->num_paths++;
		return;
	case CMA_ACM_INFO_IP:
	case CMA_ACM_INFO_IP6:
		if (!(w->flags & CMA_ACM_FLAG_SOURCE) || ans->src_ip.type)
			return;
		ans->src_ip.type = w->type == CMA_ACM_INFO_IP ? CMA_ACM_EP_IP4
							      : CMA_ACM_EP_IP6;
		memcpy(ans->src_ip.ip6, w->info.addr,
		       w->type == CMA_ACM_INFO_IP ? 4 : 16);
		return;
	}
}

int cma_acm_msg_parse(const uint8_t *buf, size_t len,
		      struct cma_acm_answer *ans)
{
	struct cma_acm_wire_hdr hdr;
	struct cma_acm_wire_ep w;
	size_t off;

	if (len < CMA_ACM_HDR_LEN || len > CMA_ACM_MSG_MAX)
		return cma_err(EPROTO);
	memcpy(&hdr, buf, sizeof(hdr));
	if (hdr.version != CMA_ACM_VERSION ||
	    hdr.opcode != (CMA_ACM_OP_RESOLVE | CMA_ACM_OP_ACK) ||
	    hdr.length != len || (len - CMA_ACM_HDR_LEN) % CMA_ACM_EP_LEN)
		return cma_err(EPROTO);
	if (hdr.status)
		return cma_err(ENODATA);

	memset(ans, 0, sizeof(*ans));
	for (off = CMA_ACM_HDR_LEN; off < len; off += CMA_ACM_EP_LEN) {
		memcpy(&w, buf + off, sizeof(w));
		acm_take_record(&w, ans);
	}
	if (!ans->num_paths)
		return cma_err(ENODATA);
	acm_mark_primary(ans);
	ans->dgid = ans->paths[0].path.dgid;
	return 0;
}

/* --- time ------------------------------------------------------------------- */

static int64_t acm_ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for @events on @fd until @deadline.  0 or -1/ETIMEDOUT/errno. */
static int acm_wait(int fd, short events, int64_t deadline)
{
	struct pollfd pfd = {.fd = fd, .events = events};
	int64_t left;
	int ret;

	for (;;) {
		left = deadline - acm_ms_now();
		if (left <= 0)
			return cma_err(ETIMEDOUT);
		ret = poll(&pfd, 1, (int)left);
		if (ret > 0)
			return 0;
		if (ret < 0 && errno != EINTR)
			return -1;
	}
}

/* --- finding and trusting the service --------------------------------------- */

struct acm_endpoint {
	bool is_unix;
	struct sockaddr_un sun;
	uint16_t port; /* TCP, host order */
	char desc[sizeof(((struct sockaddr_un *)0)->sun_path) + 8];
};

static int acm_set_unix(struct acm_endpoint *ep, const char *path)
{
	if (!*path || strlen(path) >= sizeof(ep->sun.sun_path))
		return cma_err(EINVAL);
	memset(ep, 0, sizeof(*ep));
	ep->is_unix = true;
	ep->sun.sun_family = AF_UNIX;
	strcpy(ep->sun.sun_path, path);
	snprintf(ep->desc, sizeof(ep->desc), "unix:%s", path);
	return 0;
}

static int acm_set_tcp(struct acm_endpoint *ep, const char *port)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(port, &end, 10);
	if (errno || end == port || (*end && *end != '\n') || !v || v > 65535)
		return cma_err(EINVAL);
	memset(ep, 0, sizeof(*ep));
	ep->port = (uint16_t)v;
	snprintf(ep->desc, sizeof(ep->desc), "tcp:127.0.0.1:%lu", v);
	return 0;
}

/* The port file: root's, not writable by others, holding a port number. */
static int acm_read_port_file(struct acm_endpoint *ep)
{
	char line[16] = "";
	struct stat st;
	ssize_t n;
	int fd;

	fd = open(ACM_PORT_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		/* ibacm publishes the port through a symlink; follow it. */
		fd = open(ACM_PORT_FILE, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return cma_err(ENOENT);
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_uid != acm_trusted_uid ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		cma_acm_log("service: %s not trusted (owner/mode)",
			    ACM_PORT_FILE);
		return cma_err(EPERM);
	}
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return cma_err(ENOENT);
	line[n] = '\0';
	return acm_set_tcp(ep, line);
}

static int acm_locate(struct acm_endpoint *ep)
{
	const char *env = cma_env("RDMA_CM_ACM_SERVICE");
	struct stat st;

	if (env && *env) {
		if (!strcmp(env, "none") || !strcmp(env, "0"))
			return cma_err(ENOENT);
		if (!strncmp(env, "unix:", 5))
			return acm_set_unix(ep, env + 5);
		if (env[0] == '/')
			return acm_set_unix(ep, env);
		if (!strncmp(env, "tcp:", 4))
			return acm_set_tcp(ep, env + 4);
		cma_acm_log("service: RDMA_CM_ACM_SERVICE=%s not understood",
			    env);
		return cma_err(EINVAL);
	}
	if (!stat(ACM_UNIX_PATH, &st) && S_ISSOCK(st.st_mode))
		return acm_set_unix(ep, ACM_UNIX_PATH);
	return acm_read_port_file(ep);
}

static int acm_check_unix_peer(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return -1;
	if (cred.uid != acm_trusted_uid) {
		cma_acm_log(
			"service: socket peer uid %u is not %u, not trusted",
			(unsigned int)cred.uid, (unsigned int)acm_trusted_uid);
		return cma_err(EPERM);
	}
	return 0;
}

/*
 * The owner of the socket listening on loopback (or any address) @port,
 * from /proc/net/tcp: "sl local rem st txq:rxq tr:when retr uid ...".
 */
static int acm_tcp_listener_uid(uint16_t port, uid_t *uid)
{
	unsigned int addr, lport, state, owner;
	char line[256];
	FILE *f;
	int ret = -1;

	f = fopen("/proc/net/tcp", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line,
			   " %*u: %8x:%4x %*8x:%*4x %2x %*8x:%*8x %*2x:%*8x "
			   "%*8x %u",
			   &addr, &lport, &state, &owner) != 4)
			continue;
		if (lport != port || state != 0x0a)
			continue;
		if (addr != 0 && addr != htonl(INADDR_LOOPBACK))
			continue;
		*uid = owner;
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

static int acm_check_tcp_peer(uint16_t port)
{
	uid_t uid;

	if (acm_tcp_listener_uid(port, &uid) || uid != acm_trusted_uid) {
		cma_acm_log(
			"service: tcp port %u not owned by uid %u, not trusted",
			port, (unsigned int)acm_trusted_uid);
		return cma_err(EPERM);
	}
	return 0;
}

/*
 * A Unix-socket connect is never "in progress": it completes at once or,
 * with EAGAIN, did not happen because the service's listen backlog is
 * full.  Taking that EAGAIN for EINPROGRESS asked SO_PEERCRED of a socket
 * that never connected, and the busy root-owned service was called
 * untrusted.  So connect blocking, the kernel waiting for room in the
 * backlog until @deadline (SO_SNDTIMEO bounds the wait); EAGAIN at the
 * deadline means busy, and the caller falls back.  Non-blocking after.
 */
static int acm_connect_unix(int fd, const struct acm_endpoint *ep,
			    int64_t deadline)
{
	struct timeval tv;
	int64_t left;
	int flags;

	for (;;) {
		left = deadline - acm_ms_now();
		if (left <= 0)
			return cma_err(EAGAIN);
		tv.tv_sec = (time_t)(left / 1000);
		tv.tv_usec = (suseconds_t)(left % 1000) * 1000;
		if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
			return -1;
		if (!connect(fd, (const struct sockaddr *)&ep->sun,
			     sizeof(ep->sun)))
			break;
		if (errno == EAGAIN)
			cma_acm_log("service %s: busy (listen backlog full)",
				    ep->desc);
		if (errno != EINTR)
			return -1;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK))
		return -1;
	return acm_check_unix_peer(fd);
}

static int acm_connect_tcp(int fd, const struct acm_endpoint *ep,
			   int64_t deadline)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t elen = sizeof(int);
	int err = 0;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(ep->port);
	if (!connect(fd, (const struct sockaddr *)&sin, sizeof(sin)))
		return 0;
	if (errno != EINPROGRESS)
		return -1;
	if (acm_wait(fd, POLLOUT, deadline) ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen))
		return -1;
	return err ? cma_err(err) : 0;
}

static int acm_connect(const struct acm_endpoint *ep, int64_t deadline)
{
	int fd, err;

	if (!ep->is_unix && acm_check_tcp_peer(ep->port))
		return -1;
	fd = socket(ep->is_unix ? AF_UNIX : AF_INET,
		    SOCK_STREAM | SOCK_CLOEXEC |
			    (ep->is_unix ? 0 : SOCK_NONBLOCK),
		    0);
	if (fd < 0)
		return -1;
	if (ep->is_unix ? acm_connect_unix(fd, ep, deadline)
			: acm_connect_tcp(fd, ep, deadline)) {
		err = errno;
		close(fd);
		return cma_err(err);
	}
	return fd;
}

static int acm_send_all(int fd, const uint8_t *buf, size_t len,
			int64_t deadline)
{
	ssize_t n;

	while (len) {
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (acm_wait(fd, POLLOUT, deadline))
			return -1;
	}
	return 0;
}

/* Exactly @len bytes, or -1 (EPROTO if the service closed early). */
static int acm_recv_all(int fd, uint8_t *buf, size_t len, int64_t deadline)
{
	ssize_t n;

	while (len) {
		n = recv(fd, buf, len, 0);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (!n)
			return cma_err(EPROTO);
		if (errno != EAGAIN && errno != EINTR)
			return -1;
		if (acm_wait(fd, POLLIN, deadline))
			return -1;
	}
	return 0;
}

/* One answer: the header says how long it is.  Its length or -1/errno. */
static int acm_recv_answer(int fd, uint8_t *buf, int64_t deadline)
{
	struct cma_acm_wire_hdr hdr;

	if (acm_recv_all(fd, buf, CMA_ACM_HDR_LEN, deadline))
		return -1;
	memcpy(&hdr, buf, sizeof(hdr));
	if (hdr.length < CMA_ACM_HDR_LEN || hdr.length > CMA_ACM_MSG_MAX)
		return cma_err(EPROTO);
	if (acm_recv_all(fd, buf + CMA_ACM_HDR_LEN,
			 hdr.length - CMA_ACM_HDR_LEN, deadline))
		return -1;
	return hdr.length;
}

int cma_acm_service_resolve(const struct cma_acm_query *q,
			    struct cma_acm_answer *ans)
{
	static uint64_t next_tid;
	int64_t deadline = acm_ms_now() + cma_acm_service_timeout_ms();
	uint8_t buf[CMA_ACM_MSG_MAX];
	struct acm_endpoint ep;
	int fd, len, err;

	if (acm_locate(&ep))
		return -1;
	len = cma_acm_msg_build(
		q, __atomic_add_fetch(&next_tid, 1, __ATOMIC_RELAXED), buf,
		sizeof(buf));
	if (len < 0)
		return -1;
	fd = acm_connect(&ep, deadline);
	if (fd < 0)
		goto fail;
	if (acm_send_all(fd, buf, (size_t)len, deadline))
		goto fail_close;
	len = acm_recv_answer(fd, buf, deadline);
	if (len < 0)
		goto fail_close;
	close(fd);
	if (cma_acm_msg_parse(buf, (size_t)len, ans))
		goto fail;
	return 0;
fail_close:
	err = errno;
	close(fd);
	errno = err;
fail:
	err = errno;
	cma_acm_log("service %s: %s", ep.desc, strerror(err));
	return cma_err(err);
}
