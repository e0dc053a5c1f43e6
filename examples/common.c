// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Helpers shared by the librdmacm example programs.  See common.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

static const char *prog_name = "example";
bool ex_quiet;

/* Messages */

void ex_init(const char *name)
{
	const char *slash = strrchr(name, '/');

	prog_name = slash ? slash + 1 : name;
	/*
	 * Tests read our output through pipes and files; without line
	 * buffering a progress line could sit in the buffer while the peer
	 * program is already waiting on it.
	 */
	setvbuf(stdout, NULL, _IOLBF, 0);
}

const char *ex_prog(void)
{
	return prog_name;
}

static void __attribute__((format(printf, 2, 0)))
vmsg(FILE *f, const char *fmt, va_list ap, const char *suffix)
{
	fprintf(f, "%s: ", prog_name);
	vfprintf(f, fmt, ap);
	fprintf(f, "%s\n", suffix ? suffix : "");
}

void ex_info(const char *fmt, ...)
{
	va_list ap;

	if (ex_quiet)
		return;
	va_start(ap, fmt);
	vmsg(stdout, fmt, ap, NULL);
	va_end(ap);
}

void ex_err(const char *fmt, ...)
{
	va_list ap;

	/* Keep the two streams in order when both go to one file. */
	fflush(stdout);
	va_start(ap, fmt);
	vmsg(stderr, fmt, ap, NULL);
	va_end(ap);
}

void ex_syserr(const char *fmt, ...)
{
	char suffix[160];
	int saved = errno;
	va_list ap;

	snprintf(suffix, sizeof(suffix), ": %s", strerror(saved));
	fflush(stdout);
	va_start(ap, fmt);
	vmsg(stderr, fmt, ap, suffix);
	va_end(ap);
	errno = saved;
}

/* Options */

int ex_parse_num(const char *arg, char opt, unsigned long min,
		 unsigned long max, unsigned long *val)
{
	unsigned long v;
	char *end;

	/* strtoul() would quietly accept "-1" as ULONG_MAX. */
	if (!arg || !*arg || *arg == '-' || *arg == '+')
		goto bad;
	errno = 0;
	v = strtoul(arg, &end, 0);
	if (errno || *end || v < min || v > max)
		goto bad;
	*val = v;
	return 0;
bad:
	ex_err("-%c: '%s' is not a number from %lu to %lu", opt, arg ? arg : "",
	       min, max);
	return -1;
}

int ex_usage_hint(void)
{
	fprintf(stderr, "Try '%s -h' for more information.\n", prog_name);
	return EX_USAGE;
}

/* Addresses */

void ex_addrinfo_err(int ret, const char *node)
{
	/* Name lookups fail with a getaddrinfo() code, the rest with -1
	 * and errno. */
	if (ret == -1)
		ex_syserr("cannot resolve '%s'", node ? node : "(any)");
	else
		ex_err("cannot resolve '%s': %s", node ? node : "(any)",
		       gai_strerror(ret));
}

/* The wildcard, built by hand so that "no address" means the same thing
 * whatever order the resolver would list its families in. */
static int wildcard(const char *port, struct ex_addr *out)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&out->ss;
	unsigned long p;

	if (ex_parse_num(port, 'p', 0, 65535, &p))
		return -1;
	memset(out, 0, sizeof(*out));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_ANY);
	sin->sin_port = htons((uint16_t)p);
	out->len = sizeof(*sin);
	return 0;
}

int ex_resolve(const char *node, const char *port, int flags,
	       enum rdma_port_space ps, struct ex_addr *out)
{
	struct rdma_addrinfo hints, *res, *ai;
	bool passive = flags & EX_RES_PASSIVE;
	int ret;

	if (passive && !node)
		return wildcard(port, out);

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = passive ? RAI_PASSIVE : 0;
	if (flags & EX_RES_NOROUTE)
		hints.ai_flags |= RAI_NOROUTE;
	hints.ai_port_space = ps;
	hints.ai_qp_type = ps == RDMA_PS_TCP ? IBV_QPT_RC : IBV_QPT_UD;

	ret = rdma_getaddrinfo(node, port, &hints, &res);
	if (ret) {
		ex_addrinfo_err(ret, node);
		return -1;
	}

	for (ai = res; ai; ai = ai->ai_next) {
		struct sockaddr *sa =
			passive ? ai->ai_src_addr : ai->ai_dst_addr;
		socklen_t len = passive ? ai->ai_src_len : ai->ai_dst_len;

		if (!sa || !len || len > sizeof(out->ss))
			continue;
		memset(out, 0, sizeof(*out));
		memcpy(&out->ss, sa, len);
		out->len = len;
		rdma_freeaddrinfo(res);
		return 0;
	}
	rdma_freeaddrinfo(res);
	ex_err("'%s' resolved to no usable %s address", node,
	       passive ? "local" : "destination");
	return -1;
}

void ex_set_tos(struct rdma_cm_id *id, const uint8_t *tos)
{
	if (tos && rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
				   (void *)tos, sizeof(*tos)))
		ex_syserr("rdma_set_option(TOS %u)", *tos);
}

int ex_listen(struct rdma_event_channel *ch, const char *node, const char *port,
	      enum rdma_port_space ps, int backlog, const uint8_t *tos,
	      struct rdma_cm_id **id)
{
	char local[EX_ADDRSTRLEN];
	struct ex_addr addr;

	*id = NULL;
	if (ex_resolve(node, port, EX_RES_PASSIVE, ps, &addr))
		return -1;
	/* Children inherit the listener's context: NULL, as no node. */
	if (rdma_create_id(ch, id, NULL, ps)) {
		ex_syserr("rdma_create_id");
		*id = NULL;
		return -1;
	}
	ex_set_tos(*id, tos);
	if (rdma_bind_addr(*id, ex_sa(&addr))) {
		ex_syserr("rdma_bind_addr(%s)",
			  ex_ntop(ex_sa(&addr), local, sizeof(local)));
		return -1;
	}
	if (rdma_listen(*id, backlog)) {
		ex_syserr("rdma_listen");
		return -1;
	}
	return 0;
}

static const char *ntop(const struct sockaddr *sa, char *buf, size_t len,
			bool with_port)
{
	char host[INET6_ADDRSTRLEN];
	const void *src;
	uint16_t port;

	switch (sa->sa_family) {
	case AF_INET:
		src = &((const struct sockaddr_in *)sa)->sin_addr;
		port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
		break;
	case AF_INET6:
		src = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
		break;
	default:
		snprintf(buf, len, "<address family %u>", sa->sa_family);
		return buf;
	}
	if (!inet_ntop(sa->sa_family, src, host, sizeof(host)))
		snprintf(host, sizeof(host), "?");

	if (!with_port)
		snprintf(buf, len, "%s", host);
	else if (sa->sa_family == AF_INET6)
		snprintf(buf, len, "[%s]:%u", host, port);
	else
		snprintf(buf, len, "%s:%u", host, port);
	return buf;
}

const char *ex_ntop(const struct sockaddr *sa, char *buf, size_t len)
{
	return ntop(sa, buf, len, true);
}

const char *ex_ntop_host(const struct sockaddr *sa, char *buf, size_t len)
{
	return ntop(sa, buf, len, false);
}

/* CM events */

/* Waits for fd to become readable; 1 when it is, 0 on timeout, -1 error. */
static int wait_readable(int fd, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	uint64_t deadline = 0;
	int ret, left = timeout_ms;

	if (timeout_ms > 0)
		deadline = ex_now_us() + (uint64_t)timeout_ms * 1000;
	for (;;) {
		ret = poll(&pfd, 1, left);
		if (ret >= 0)
			return ret > 0;
		if (errno != EINTR)
			return -1;
		if (timeout_ms > 0) {
			uint64_t now = ex_now_us();

			left = now >= deadline
				       ? 0
				       : (int)((deadline - now + 999) / 1000);
		}
	}
}

int ex_get_event(struct rdma_event_channel *ch, int timeout_ms,
		 struct rdma_cm_event **ev)
{
	int ret;

	ret = wait_readable(ch->fd, timeout_ms);
	if (ret < 0) {
		ex_syserr("waiting for a CM event");
		return -1;
	}
	if (!ret) {
		errno = ETIMEDOUT;
		return -1;
	}
	if (rdma_get_cm_event(ch, ev)) {
		ex_syserr("rdma_get_cm_event");
		return -1;
	}
	return 0;
}

void ex_ack(struct rdma_cm_event *ev)
{
	if (rdma_ack_cm_event(ev))
		ex_syserr("rdma_ack_cm_event");
}

const char *ex_priv_str(const void *data, size_t len, char *buf, size_t size)
{
	const unsigned char *p = data;
	size_t i;

	if (!size)
		return buf;
	for (i = 0; p && i < len && i + 1 < size && p[i]; i++)
		buf[i] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '.';
	buf[i] = '\0';
	return buf;
}

/*
 * A REJECTED status is the transport's reason code, not an errno: for
 * InfiniBand and RoCE the CM's REJ reason, for iWARP a negative errno.
 * Name the IB reasons a user of these programs is likely to meet.
 */
static const char *reject_reason(int status)
{
	switch (status) {
	case 1:
		return "no QP available";
	case 8:
		return "invalid service ID: nobody listens on that port";
	case 13:
		return "invalid communication instance";
	case 28:
		return "rejected by the remote application";
	default:
		return status < 0 ? strerror(-status) : "reject reason";
	}
}

/* UD (SIDR) lookups that fail come back as UNREACHABLE with these. */
static const char *sidr_status(int status)
{
	switch (status) {
	case 1:
		return "service ID not supported: nobody listens on that port";
	case 2:
		return "rejected by the remote application";
	case 3:
		return "no QP available";
	default:
		return "SIDR status";
	}
}

void ex_report_event(const char *what, const struct rdma_cm_event *ev)
{
	/* conn and ud both begin with the private data and its length. */
	const void *priv = ev->param.conn.private_data;
	uint8_t priv_len = ev->param.conn.private_data_len;
	const char *reason = NULL;
	char text[256];

	if (ev->event == RDMA_CM_EVENT_REJECTED)
		reason = reject_reason(ev->status);
	else if (ev->event == RDMA_CM_EVENT_UNREACHABLE && ev->status > 0 &&
		 ev->id && ev->id->ps == RDMA_PS_UDP)
		reason = sidr_status(ev->status);
	else if (ev->status < 0)
		reason = strerror(-ev->status);

	if (reason)
		ex_err("%s: %s (status %d: %s)", what,
		       rdma_event_str(ev->event), ev->status, reason);
	else if (ev->status)
		ex_err("%s: %s (status %d)", what, rdma_event_str(ev->event),
		       ev->status);
	else
		ex_err("%s: unexpected %s", what, rdma_event_str(ev->event));

	if (ev->event != RDMA_CM_EVENT_REJECTED &&
	    ev->event != RDMA_CM_EVENT_UNREACHABLE)
		return;
	/* IB pads private data with zeros (148 bytes in a REJ). */
	ex_priv_str(priv, priv_len, text, sizeof(text));
	if (text[0])
		ex_err("%s: private data from peer: \"%s\"", what, text);
}

int ex_expect_event(struct rdma_event_channel *ch, struct rdma_cm_id *id,
		    enum rdma_cm_event_type want, int timeout_ms,
		    struct rdma_cm_event **ev)
{
	struct rdma_cm_event *e;
	char what[64];

	snprintf(what, sizeof(what), "waiting for %s", rdma_event_str(want));
	if (ex_get_event(ch, timeout_ms, &e)) {
		if (errno == ETIMEDOUT)
			ex_err("%s: timed out after %d ms", what, timeout_ms);
		return -1;
	}
	if (e->event != want || e->status || (id && e->id != id)) {
		ex_report_event(what, e);
		ex_ack(e);
		errno = EPROTO;
		return -1;
	}
	if (ev)
		*ev = e;
	else
		ex_ack(e);
	return 0;
}

/* Completions */

int ex_cq_create(struct ex_cq *c, struct ibv_context *verbs, int cqe)
{
	memset(c, 0, sizeof(*c));
	c->chan = ibv_create_comp_channel(verbs);
	if (!c->chan) {
		ex_syserr("ibv_create_comp_channel");
		return -1;
	}
	c->cq = ibv_create_cq(verbs, cqe, c, c->chan, 0);
	if (!c->cq) {
		ex_syserr("ibv_create_cq(%d entries)", cqe);
		goto err;
	}
	/* Kept armed from here on, so no completion goes unannounced. */
	errno = ibv_req_notify_cq(c->cq, 0);
	if (errno) {
		ex_syserr("ibv_req_notify_cq");
		goto err;
	}
	return 0;
err:
	ex_cq_destroy(c);
	return -1;
}

void ex_cq_destroy(struct ex_cq *c)
{
	if (c->cq) {
		if (c->unacked)
			ibv_ack_cq_events(c->cq, c->unacked);
		errno = ibv_destroy_cq(c->cq);
		if (errno)
			ex_syserr("ibv_destroy_cq");
	}
	if (c->chan && ibv_destroy_comp_channel(c->chan))
		ex_syserr("ibv_destroy_comp_channel");
	memset(c, 0, sizeof(*c));
}

/* Consumes one notification and re-arms the CQ. */
static int cq_rearm(struct ex_cq *c)
{
	struct ibv_cq *cq;
	void *ctx;

	if (ibv_get_cq_event(c->chan, &cq, &ctx)) {
		ex_syserr("ibv_get_cq_event");
		return -1;
	}
	/* Acking takes a lock: batch it, but never let the count wrap. */
	if (++c->unacked >= 64) {
		ibv_ack_cq_events(cq, c->unacked);
		c->unacked = 0;
	}
	errno = ibv_req_notify_cq(cq, 0);
	if (errno) {
		ex_syserr("ibv_req_notify_cq");
		return -1;
	}
	return 0;
}

int ex_cq_wait(struct ex_cq *c, struct ibv_wc *wc, int n, int cm_fd,
	       int timeout_ms)
{
	uint64_t deadline = ex_now_us() + (uint64_t)timeout_ms * 1000;
	struct pollfd pfd[2];
	int ret, left;

	for (;;) {
		ret = ibv_poll_cq(c->cq, n, wc);
		if (ret < 0) {
			ex_err("ibv_poll_cq failed (%d)", ret);
			return EX_CQ_ERROR;
		}
		if (ret > 0)
			return ret;

		left = -1;
		if (timeout_ms >= 0) {
			uint64_t now = ex_now_us();

			if (now >= deadline) {
				errno = ETIMEDOUT;
				return EX_CQ_ERROR;
			}
			left = (int)((deadline - now + 999) / 1000);
		}
		pfd[0] = (struct pollfd){.fd = c->chan->fd, .events = POLLIN};
		pfd[1] = (struct pollfd){.fd = cm_fd, .events = POLLIN};
		ret = poll(pfd, cm_fd >= 0 ? 2 : 1, left);
		if (ret < 0) {
			if (errno == EINTR)
				continue;
			ex_syserr("poll");
			return EX_CQ_ERROR;
		}
		if (cm_fd >= 0 && pfd[1].revents) {
			/*
			 * Work the peer finished before its CM message
			 * (say, a last send before a disconnect) may have
			 * completed while we slept: hand that over first.
			 */
			ret = ibv_poll_cq(c->cq, n, wc);
			if (ret < 0) {
				ex_err("ibv_poll_cq failed (%d)", ret);
				return EX_CQ_ERROR;
			}
			return ret ? ret : EX_CQ_CM_EVENT;
		}
		if (pfd[0].revents && cq_rearm(c))
			return EX_CQ_ERROR;
	}
}

int ex_wc_ok(const struct ibv_wc *wc, const char *what)
{
	if (wc->status == IBV_WC_SUCCESS)
		return 0;
	ex_err("%s failed: %s (status %d, vendor error 0x%x)", what,
	       ibv_wc_status_str(wc->status), wc->status, wc->vendor_err);
	return -1;
}

/* Verbs shorthands */

static void fill_sge(struct ibv_sge *sge, struct ibv_mr *mr, void *buf,
		     uint32_t len)
{
	sge->addr = (uintptr_t)buf;
	sge->length = len;
	sge->lkey = mr->lkey;
}

int ex_post_recv(struct ibv_qp *qp, struct ibv_mr *mr, void *buf, uint32_t len,
		 uint64_t wr_id)
{
	struct ibv_recv_wr wr = {0}, *bad;
	struct ibv_sge sge;

	fill_sge(&sge, mr, buf, len);
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	errno = ibv_post_recv(qp, &wr, &bad);
	if (errno) {
		ex_syserr("ibv_post_recv");
		return -1;
	}
	return 0;
}

static int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		     struct ibv_sge *sge, uint64_t wr_id)
{
	struct ibv_send_wr *bad;

	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = IBV_WR_SEND;
	/* Every send is signalled: the examples count their completions. */
	wr->send_flags = IBV_SEND_SIGNALED;
	errno = ibv_post_send(qp, wr, &bad);
	if (errno) {
		ex_syserr("ibv_post_send");
		return -1;
	}
	return 0;
}

int ex_post_send(struct ibv_qp *qp, struct ibv_mr *mr, void *buf, uint32_t len,
		 uint64_t wr_id)
{
	struct ibv_send_wr wr = {0};
	struct ibv_sge sge;

	fill_sge(&sge, mr, buf, len);
	return post_send(qp, &wr, &sge, wr_id);
}

int ex_post_ud_send(struct ibv_qp *qp, struct ibv_ah *ah, uint32_t qpn,
		    uint32_t qkey, struct ibv_mr *mr, void *buf, uint32_t len,
		    uint64_t wr_id)
{
	struct ibv_send_wr wr = {0};
	struct ibv_sge sge;

	fill_sge(&sge, mr, buf, len);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	return post_send(qp, &wr, &sge, wr_id);
}

int ex_ud_max_payload(struct rdma_cm_id *id, uint32_t *max)
{
	struct ibv_port_attr attr;

	errno = ibv_query_port(id->verbs, id->port_num, &attr);
	if (errno) {
		ex_syserr("ibv_query_port(port %u)", id->port_num);
		return -1;
	}
	/* IBV_MTU_256 is 1, IBV_MTU_4096 is 5. */
	*max = 128u << attr.active_mtu;
	return 0;
}

/* Time */

uint64_t ex_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}
