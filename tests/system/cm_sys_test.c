// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * System tests of librdmacm over a real RDMA device (Soft-RoCE in the test
 * VM, or hardware).  Each subcommand runs one scenario with both ends of
 * the connection inside this process, prints "PASS <name>" or
 * "FAIL <name>: <reason>", and exits non-zero on failure.
 *
 * Nothing here may hang: every wait for a CM event polls the channel's fd
 * with a timeout first, and a watchdog thread ends the process (printing
 * the step it was stuck in) if a blocking call never returns.
 *
 * Usage: cm_sys_test <scenario> [args...]; run without arguments for the
 * list.  CM_SYS_TIMEOUT (seconds, default 50) sets the watchdog,
 * CM_SYS_EVENT_TIMEOUT_MS (default 10000) the wait for each CM event.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

/* --- reporting ------------------------------------------------------------ */

static const char *test_name = "cm_sys_test";
static int event_timeout_ms = 10000;

/* What the test is doing now, for the watchdog's message. */
static const char *volatile stage = "starting";
#define STAGE(s) (stage = (s))

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void __attribute__((noreturn, format(printf, 1, 2)))
fail(const char *fmt, ...)
{
	char buf[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&out_lock);
	printf("FAIL %s: %s\n", test_name, buf);
	fflush(stdout);
	fflush(stderr);
	/* No exit handlers: other threads may be inside the library. */
	_exit(1);
}

static void __attribute__((format(printf, 1, 2))) note(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&out_lock);
	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
}

static void pass(void)
{
	pthread_mutex_lock(&out_lock);
	printf("PASS %s\n", test_name);
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
}

/* Exit status of a scenario that cannot run here (automake's SKIP). */
#define EXIT_SKIP 77

static void __attribute__((noreturn)) skip(const char *why)
{
	pthread_mutex_lock(&out_lock);
	printf("SKIP %s: %s\n", test_name, why);
	fflush(stdout);
	_exit(EXIT_SKIP);
}

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			fail("check failed: " __VA_ARGS__);                    \
	} while (0)

/* A library call that returns 0 on success and -1/errno on failure. */
#define TRY(call)                                                              \
	do {                                                                   \
		if ((call) != 0)                                               \
			fail("%s failed: %s (errno %d)", #call,                \
			     strerror(errno), errno);                          \
	} while (0)

static void *watchdog(void *arg)
{
	unsigned int secs = *(unsigned int *)arg;
	struct timespec ts = {.tv_sec = secs};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	pthread_mutex_lock(&out_lock);
	printf("FAIL %s: watchdog: no progress after %u s (stuck in: %s)\n",
	       test_name, secs, stage);
	fflush(stdout);
	_exit(3);
}

static void start_watchdog(void)
{
	static unsigned int secs = 50;
	const char *s = getenv("CM_SYS_TIMEOUT");
	pthread_t t;

	if (s && atoi(s) > 0)
		secs = (unsigned int)atoi(s);
	s = getenv("CM_SYS_EVENT_TIMEOUT_MS");
	if (s && atoi(s) > 0)
		event_timeout_ms = atoi(s);
	if (pthread_create(&t, NULL, watchdog, &secs))
		fail("cannot start the watchdog thread");
	pthread_detach(t);
}

/* --- addresses ------------------------------------------------------------ */

static void parse_addr(const char *s, uint16_t port,
		       struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		return;
	}
	if (inet_pton(AF_INET6, s, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		return;
	}
	fail("'%s' is not a numeric IPv4 or IPv6 address", s);
}

static const char *addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned int port = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)sa;

		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		port = ntohs(sin->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)sa;

		inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
		port = ntohs(sin6->sin6_port);
	} else {
		snprintf(buf, len, "<family %d>", sa->sa_family);
		return buf;
	}
	snprintf(buf, len, "%s port %u", host, port);
	return buf;
}

/* Same family and IP address (ports ignored). */
static bool same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr,
			       16);
	return false;
}

/* --- CM events ------------------------------------------------------------ */

/* The next event on @ch, or NULL after @timeout_ms without one. */
static struct rdma_cm_event *get_event(struct rdma_event_channel *ch,
				       int timeout_ms)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;
	int r;

	do {
		r = poll(&pfd, 1, timeout_ms);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		fail("poll on the event channel: %s", strerror(errno));
	if (r == 0)
		return NULL;
	if (rdma_get_cm_event(ch, &ev))
		fail("rdma_get_cm_event after poll said readable: %s",
		     strerror(errno));
	if (!ev)
		fail("rdma_get_cm_event returned 0 but no event");
	return ev;
}

static bool event_is_success_kind(enum rdma_cm_event_type t)
{
	switch (t) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
	case RDMA_CM_EVENT_CONNECT_REQUEST:
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_MULTICAST_JOIN:
		return true;
	default:
		return false;
	}
}

/*
 * Wait for an event of @type for @id (any id if NULL) on @ch.  A
 * TIMEWAIT_EXIT of an earlier connection is legitimate noise and skipped.
 */
static struct rdma_cm_event *expect_event(struct rdma_event_channel *ch,
					  enum rdma_cm_event_type type,
					  struct rdma_cm_id *id,
					  const char *who)
{
	struct rdma_cm_event *ev;

	for (;;) {
		ev = get_event(ch, event_timeout_ms);
		if (!ev)
			fail("%s: no %s within %d ms", who,
			     rdma_event_str(type), event_timeout_ms);
		if (ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT &&
		    type != RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			rdma_ack_cm_event(ev);
			continue;
		}
		break;
	}
	if (ev->event != type)
		fail("%s: expected %s, got %s (status %d)", who,
		     rdma_event_str(type), rdma_event_str(ev->event),
		     ev->status);
	if (event_is_success_kind(type) && ev->status)
		fail("%s: %s with status %d", who, rdma_event_str(type),
		     ev->status);
	if (id && ev->id != id)
		fail("%s: %s for id %p, expected id %p", who,
		     rdma_event_str(type), (void *)ev->id, (void *)id);
	return ev;
}

static void expect_and_ack(struct rdma_event_channel *ch,
			   enum rdma_cm_event_type type, struct rdma_cm_id *id,
			   const char *who)
{
	TRY(rdma_ack_cm_event(expect_event(ch, type, id, who)));
}

static void expect_no_event(struct rdma_event_channel *ch, int timeout_ms,
			    const char *who)
{
	struct rdma_cm_event *ev = get_event(ch, timeout_ms);

	if (ev)
		fail("%s: unexpected %s (status %d)", who,
		     rdma_event_str(ev->event), ev->status);
}

static void check_pdata(const void *got, uint8_t got_len, const char *want,
			const char *what)
{
	size_t n = strlen(want) + 1;

	if (!got || got_len < n)
		fail("%s: private data %p of %u bytes, want at least %zu "
		     "(\"%s\")",
		     what, got, got_len, n, want);
	if (memcmp(got, want, n))
		fail("%s: private data differs: got \"%.*s\", want \"%s\"",
		     what, (int)n, (const char *)got, want);
}

/* --- ids, QPs, messages --------------------------------------------------- */

struct end {
	const char *who;
	struct rdma_cm_id *id;
	struct ibv_mr *smr, *rmr;
	char sbuf[256];
	char rbuf[256 + 40]; /* room for the GRH of datagrams */
	/* RDMA targets: the peer writes wbuf and reads rdbuf; lbuf is ours */
	struct ibv_mr *wmr, *rdmr, *lmr;
	char wbuf[64], rdbuf[64], lbuf[64];
};

static struct rdma_event_channel *make_channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (!ch)
		fail("rdma_create_event_channel: %s", strerror(errno));
	CHECK(ch->fd >= 0, "event channel fd %d", ch->fd);
	return ch;
}

static struct rdma_cm_id *make_listener(struct rdma_event_channel *ch,
					const char *addr,
					enum rdma_port_space ps, uint16_t *port)
{
	struct sockaddr_storage ss;
	struct rdma_cm_id *l;
	char b1[80];

	STAGE("creating the listener");
	parse_addr(addr, 0, &ss);
	TRY(rdma_create_id(ch, &l, NULL, ps));
	CHECK(l->channel == ch, "listener channel");
	CHECK(l->ps == ps, "listener port space %d, want %d", l->ps, ps);
	TRY(rdma_bind_addr(l, (struct sockaddr *)&ss));
	CHECK(l->verbs, "listener bound to %s has no verbs context", addr);
	CHECK(same_ip(rdma_get_local_addr(l), (struct sockaddr *)&ss),
	      "listener local address %s",
	      addr_str(rdma_get_local_addr(l), b1, sizeof(b1)));
	TRY(rdma_listen(l, 8));
	*port = ntohs(rdma_get_src_port(l));
	CHECK(*port, "listener bound to port 0 reports no kernel-chosen port");
	return l;
}

/* Whether @id is bound to an iWARP device (iw_cm, MPA, no UD). */
static bool is_iwarp(const struct rdma_cm_id *id)
{
	return id->verbs &&
	       id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
}

/*
 * A resolved route: IB and RoCE ids have at least one path record; iWARP
 * routes are the TCP/IP stack's business and come with none.
 */
static bool route_ok(const struct rdma_cm_id *id)
{
	if (is_iwarp(id))
		return id->route.num_paths == 0;
	return id->route.num_paths >= 1 && id->route.path_rec;
}

/* Resolve address and route of a client id on channel @ch. */
static void client_resolve(struct rdma_event_channel *ch, struct rdma_cm_id *id,
			   const char *src, const char *dst, uint16_t port)
{
	struct sockaddr_storage d, s;
	char b1[80];

	parse_addr(dst, port, &d);
	if (src)
		parse_addr(src, 0, &s);
	STAGE("client address resolution");
	TRY(rdma_resolve_addr(id, src ? (struct sockaddr *)&s : NULL,
			      (struct sockaddr *)&d, 2000));
	expect_and_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED, id, "client");
	CHECK(id->verbs, "no verbs context after ADDR_RESOLVED");
	CHECK(id->port_num >= 1, "port_num %u after ADDR_RESOLVED",
	      id->port_num);
	CHECK(same_ip(rdma_get_peer_addr(id), (struct sockaddr *)&d),
	      "peer address after resolution is %s",
	      addr_str(rdma_get_peer_addr(id), b1, sizeof(b1)));
	if (src)
		CHECK(same_ip(rdma_get_local_addr(id), (struct sockaddr *)&s),
		      "local address after resolution is %s, want %s",
		      addr_str(rdma_get_local_addr(id), b1, sizeof(b1)), src);
	CHECK(ntohs(rdma_get_dst_port(id)) == port, "dst port %u, want %u",
	      ntohs(rdma_get_dst_port(id)), port);
	STAGE("client route resolution");
	TRY(rdma_resolve_route(id, 2000));
	expect_and_ack(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, id, "client");
	CHECK(route_ok(id), "route has %d paths", id->route.num_paths);
}

static void make_qp(struct end *e, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id = e->id;

	STAGE("creating a QP");
	memset(&attr, 0, sizeof(attr));
	attr.qp_type = type;
	attr.cap.max_send_wr = 4;
	attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	TRY(rdma_create_qp(id, NULL, &attr));
	CHECK(id->qp, "%s: rdma_create_qp left id->qp NULL", e->who);
	CHECK(id->qp->qp_type == type, "%s: QP type %d, want %d", e->who,
	      id->qp->qp_type, type);
	CHECK(id->pd && id->qp->pd == id->pd, "%s: id->pd not the QP's PD",
	      e->who);
	CHECK(id->send_cq && id->recv_cq && id->send_cq_channel &&
		      id->recv_cq_channel,
	      "%s: rdma_create_qp did not fill in the library-made CQs",
	      e->who);
	CHECK(id->qp->send_cq == id->send_cq && id->qp->recv_cq == id->recv_cq,
	      "%s: QP CQs are not id's CQs", e->who);
	CHECK(attr.cap.max_send_wr >= 4 && attr.cap.max_recv_wr >= 4,
	      "%s: granted caps smaller than asked", e->who);
}

static void reg_bufs(struct end *e)
{
	STAGE("registering buffers");
	e->smr = rdma_reg_msgs(e->id, e->sbuf, sizeof(e->sbuf));
	if (!e->smr)
		fail("%s: rdma_reg_msgs(send): %s", e->who, strerror(errno));
	e->rmr = rdma_reg_msgs(e->id, e->rbuf, sizeof(e->rbuf));
	if (!e->rmr)
		fail("%s: rdma_reg_msgs(recv): %s", e->who, strerror(errno));
	e->wmr = rdma_reg_write(e->id, e->wbuf, sizeof(e->wbuf));
	if (!e->wmr)
		fail("%s: rdma_reg_write: %s", e->who, strerror(errno));
	e->rdmr = rdma_reg_read(e->id, e->rdbuf, sizeof(e->rdbuf));
	if (!e->rdmr)
		fail("%s: rdma_reg_read: %s", e->who, strerror(errno));
	e->lmr = rdma_reg_msgs(e->id, e->lbuf, sizeof(e->lbuf));
	if (!e->lmr)
		fail("%s: rdma_reg_msgs(local): %s", e->who, strerror(errno));
}

static void dereg_bufs(struct end *e)
{
	if (e->smr)
		TRY(rdma_dereg_mr(e->smr));
	if (e->rmr)
		TRY(rdma_dereg_mr(e->rmr));
	if (e->wmr)
		TRY(rdma_dereg_mr(e->wmr));
	if (e->rdmr)
		TRY(rdma_dereg_mr(e->rdmr));
	if (e->lmr)
		TRY(rdma_dereg_mr(e->lmr));
	e->smr = e->rmr = e->wmr = e->rdmr = e->lmr = NULL;
}

static void post_recv(struct end *e)
{
	memset(e->rbuf, 0, sizeof(e->rbuf));
	TRY(rdma_post_recv(e->id, e, e->rbuf, sizeof(e->rbuf), e->rmr));
}

static void send_msg(struct end *e, const char *msg)
{
	struct ibv_wc wc;
	size_t n = strlen(msg) + 1;
	int r;

	snprintf(e->sbuf, sizeof(e->sbuf), "%s", msg);
	STAGE("posting a send");
	TRY(rdma_post_send(e->id, e->sbuf, e->sbuf, n, e->smr,
			   IBV_SEND_SIGNALED));
	STAGE("waiting for a send completion (rdma_get_send_comp)");
	r = rdma_get_send_comp(e->id, &wc);
	if (r != 1)
		fail("%s: rdma_get_send_comp returned %d: %s", e->who, r,
		     strerror(errno));
	if (wc.status != IBV_WC_SUCCESS)
		fail("%s: send completion status %s", e->who,
		     ibv_wc_status_str(wc.status));
	CHECK(wc.opcode == IBV_WC_SEND, "%s: send completion opcode %d", e->who,
	      wc.opcode);
	CHECK(wc.wr_id == (uintptr_t)e->sbuf, "%s: send wr_id mismatch",
	      e->who);
}

/* Receive the message @want; @grh is the GRH room before the payload. */
static void recv_msg_wc(struct end *e, const char *want, size_t grh,
			struct ibv_wc *out)
{
	size_t n = strlen(want) + 1;
	struct ibv_wc wc;
	int r;

	STAGE("waiting for a receive completion (rdma_get_recv_comp)");
	r = rdma_get_recv_comp(e->id, &wc);
	if (r != 1)
		fail("%s: rdma_get_recv_comp returned %d: %s", e->who, r,
		     strerror(errno));
	if (wc.status != IBV_WC_SUCCESS)
		fail("%s: receive completion status %s", e->who,
		     ibv_wc_status_str(wc.status));
	CHECK(wc.opcode == IBV_WC_RECV, "%s: receive opcode %d", e->who,
	      wc.opcode);
	CHECK(wc.wr_id == (uintptr_t)e, "%s: receive wr_id mismatch", e->who);
	CHECK(wc.byte_len == n + grh, "%s: received %u bytes, want %zu", e->who,
	      wc.byte_len, n + grh);
	if (grh)
		CHECK(wc.wc_flags & IBV_WC_GRH, "%s: datagram without GRH",
		      e->who);
	if (memcmp(e->rbuf + grh, want, n))
		fail("%s: received \"%.*s\", want \"%s\"", e->who, (int)n,
		     e->rbuf + grh, want);
	if (out)
		*out = wc;
}

static void recv_msg(struct end *e, const char *want, size_t grh)
{
	recv_msg_wc(e, want, grh, NULL);
}

/* A receive that must come back flushed: the QP went to the error state. */
static void expect_flushed_recv(struct end *e)
{
	struct ibv_wc wc;
	int r;

	STAGE("waiting for a flushed receive");
	r = rdma_get_recv_comp(e->id, &wc);
	if (r != 1)
		fail("%s: rdma_get_recv_comp returned %d: %s", e->who, r,
		     strerror(errno));
	CHECK(wc.status == IBV_WC_WR_FLUSH_ERR,
	      "%s: outstanding receive after disconnect completed with %s, "
	      "want flush",
	      e->who, ibv_wc_status_str(wc.status));
}

static void destroy_end(struct end *e)
{
	STAGE("rdma_dereg_mr");
	dereg_bufs(e);
	if (e->id) {
		STAGE("rdma_destroy_qp");
		rdma_destroy_qp(e->id);
		CHECK(!e->id->qp, "%s: id->qp still set after rdma_destroy_qp",
		      e->who);
		STAGE("rdma_destroy_id");
		TRY(rdma_destroy_id(e->id));
	}
	e->id = NULL;
}

/* --- connected (RC) pair on two channels ---------------------------------- */

static const char cli_pdata[] = "client private data";
static const char srv_pdata[] = "server private data";

struct rc_pair {
	struct rdma_event_channel *sch, *cch;
	struct rdma_cm_id *listen;
	uint16_t port;
	struct end srv, cli;
	/* How each end gets its QP; NULL: make_qp(RC). */
	void (*make_qp)(struct end *e);
};

static void rc_make_qp(struct rc_pair *p, struct end *e)
{
	if (p->make_qp)
		p->make_qp(e);
	else
		make_qp(e, IBV_QPT_RC);
}

static void rc_setup(struct rc_pair *p, const char *addr)
{
	memset(p, 0, sizeof(*p));
	p->srv.who = "server";
	p->cli.who = "client";
	p->sch = make_channel();
	p->cch = make_channel();
	p->listen = make_listener(p->sch, addr, RDMA_PS_TCP, &p->port);
}

/* Connect a fresh client id to the listener; both ends get QPs and a recv. */
static void rc_connect(struct rc_pair *p, const char *addr, const char *src,
		       bool verbose)
{
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	char b1[80], b2[80];

	STAGE("client rdma_create_id");
	TRY(rdma_create_id(p->cch, &p->cli.id, &p->cli, RDMA_PS_TCP));
	CHECK(p->cli.id->context == &p->cli, "id context not kept");
	CHECK(p->cli.id->qp_type == IBV_QPT_RC, "RDMA_PS_TCP id qp_type %d",
	      p->cli.id->qp_type);
	client_resolve(p->cch, p->cli.id, src, addr, p->port);
	rc_make_qp(p, &p->cli);
	reg_bufs(&p->cli);
	post_recv(&p->cli);

	memset(&cp, 0, sizeof(cp));
	cp.private_data = cli_pdata;
	cp.private_data_len = sizeof(cli_pdata);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	STAGE("rdma_connect");
	TRY(rdma_connect(p->cli.id, &cp));

	STAGE("server waiting for CONNECT_REQUEST");
	ev = expect_event(p->sch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL,
			  "server");
	CHECK(ev->listen_id == p->listen,
	      "CONNECT_REQUEST listen_id %p, want %p", (void *)ev->listen_id,
	      (void *)p->listen);
	CHECK(ev->id && ev->id != p->listen, "CONNECT_REQUEST has no new id");
	p->srv.id = ev->id;
	check_pdata(ev->param.conn.private_data,
		    ev->param.conn.private_data_len, cli_pdata,
		    "CONNECT_REQUEST");
	CHECK(p->srv.id->verbs == p->listen->verbs,
	      "new id's verbs %p, listener's %p", (void *)p->srv.id->verbs,
	      (void *)p->listen->verbs);
	CHECK(p->srv.id->channel == p->sch,
	      "new id not on the listener's channel");
	CHECK(p->srv.id->ps == RDMA_PS_TCP, "new id port space %d",
	      p->srv.id->ps);
	CHECK(same_ip(rdma_get_peer_addr(p->srv.id),
		      rdma_get_local_addr(p->cli.id)),
	      "server sees peer %s, client is %s",
	      addr_str(rdma_get_peer_addr(p->srv.id), b1, sizeof(b1)),
	      addr_str(rdma_get_local_addr(p->cli.id), b2, sizeof(b2)));
	CHECK(rdma_get_dst_port(p->srv.id) == rdma_get_src_port(p->cli.id),
	      "server sees peer port %u, client's port is %u",
	      ntohs(rdma_get_dst_port(p->srv.id)),
	      ntohs(rdma_get_src_port(p->cli.id)));
	CHECK(ntohs(rdma_get_src_port(p->srv.id)) == p->port,
	      "new id's local port %u, listener's %u",
	      ntohs(rdma_get_src_port(p->srv.id)), p->port);
	if (verbose)
		note("connect request from %s to %s",
		     addr_str(rdma_get_peer_addr(p->srv.id), b1, sizeof(b1)),
		     addr_str(rdma_get_local_addr(p->srv.id), b2, sizeof(b2)));
	TRY(rdma_ack_cm_event(ev));
	p->srv.id->context = &p->srv;

	rc_make_qp(p, &p->srv);
	reg_bufs(&p->srv);
	post_recv(&p->srv);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = srv_pdata;
	cp.private_data_len = sizeof(srv_pdata);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.rnr_retry_count = 7;
	STAGE("rdma_accept");
	TRY(rdma_accept(p->srv.id, &cp));

	STAGE("client waiting for ESTABLISHED");
	ev = expect_event(p->cch, RDMA_CM_EVENT_ESTABLISHED, p->cli.id,
			  "client");
	check_pdata(ev->param.conn.private_data,
		    ev->param.conn.private_data_len, srv_pdata,
		    "client's ESTABLISHED");
	TRY(rdma_ack_cm_event(ev));
	STAGE("server waiting for ESTABLISHED");
	expect_and_ack(p->sch, RDMA_CM_EVENT_ESTABLISHED, p->srv.id, "server");
}

static void rc_exchange(struct rc_pair *p, int rounds)
{
	char msg[128];
	int i;

	for (i = 0; i < rounds; i++) {
		snprintf(msg, sizeof(msg), "client to server, message %d", i);
		send_msg(&p->cli, msg);
		recv_msg(&p->srv, msg, 0);
		post_recv(&p->srv);
		snprintf(msg, sizeof(msg), "server to client, reply %d", i);
		send_msg(&p->srv, msg);
		recv_msg(&p->cli, msg, 0);
		post_recv(&p->cli);
	}
}

static void rdma_comp(struct end *e, enum ibv_wc_opcode want, const char *what)
{
	struct ibv_wc wc;
	int r;

	r = rdma_get_send_comp(e->id, &wc);
	if (r != 1)
		fail("%s: rdma_get_send_comp after %s returned %d: %s", e->who,
		     what, r, strerror(errno));
	if (wc.status != IBV_WC_SUCCESS)
		fail("%s: %s completed with %s (the peer's QP refused remote "
		     "access?)",
		     e->who, what, ibv_wc_status_str(wc.status));
	CHECK(wc.opcode == want, "%s: %s completion opcode %d, want %d", e->who,
	      what, wc.opcode, want);
}

/*
 * One-sided operations from @a to @b: an RDMA WRITE into b's wbuf and an
 * RDMA READ of b's rdbuf.  Both need b's QP to grant remote access, which
 * it only does once the CM has given it the connection's attributes.
 */
static void rdma_one_way(struct end *a, struct end *b)
{
	char msg[64];
	size_t n;

	snprintf(msg, sizeof(msg), "RDMA WRITE from %s", a->who);
	n = strlen(msg) + 1;
	snprintf(a->sbuf, sizeof(a->sbuf), "%s", msg);
	memset(b->wbuf, 0, sizeof(b->wbuf));
	STAGE("RDMA WRITE");
	TRY(rdma_post_write(a->id, a, a->sbuf, n, a->smr, IBV_SEND_SIGNALED,
			    (uintptr_t)b->wbuf, b->wmr->rkey));
	rdma_comp(a, IBV_WC_RDMA_WRITE, "RDMA WRITE");
	if (memcmp(b->wbuf, msg, n))
		fail("%s: RDMA WRITE target holds \"%.*s\", want \"%s\"",
		     b->who, (int)n, b->wbuf, msg);

	snprintf(b->rdbuf, sizeof(b->rdbuf), "RDMA READ source of %s", b->who);
	n = strlen(b->rdbuf) + 1;
	memset(a->lbuf, 0, sizeof(a->lbuf));
	STAGE("RDMA READ");
	TRY(rdma_post_read(a->id, a, a->lbuf, n, a->lmr, IBV_SEND_SIGNALED,
			   (uintptr_t)b->rdbuf, b->rdmr->rkey));
	rdma_comp(a, IBV_WC_RDMA_READ, "RDMA READ");
	if (memcmp(a->lbuf, b->rdbuf, n))
		fail("%s: RDMA READ brought \"%.*s\", want \"%s\"", a->who,
		     (int)n, a->lbuf, b->rdbuf);
}

static void rc_rdma(struct rc_pair *p)
{
	rdma_one_way(&p->cli, &p->srv);
	rdma_one_way(&p->srv, &p->cli);
}

/*
 * One side disconnects (DREQ).  The other sees DISCONNECTED and answers
 * with rdma_disconnect (DREP), as the IB CM expects of it; then the
 * initiator sees DISCONNECTED too.  Both QPs end in the error state, so a
 * receive still posted comes back flushed.
 */
static void rc_disconnect(struct rc_pair *p, bool server_first)
{
	struct end *first = server_first ? &p->srv : &p->cli;
	struct end *second = server_first ? &p->cli : &p->srv;
	struct rdma_event_channel *fch = server_first ? p->sch : p->cch;
	struct rdma_event_channel *sch = server_first ? p->cch : p->sch;

	STAGE("rdma_disconnect by the first side");
	TRY(rdma_disconnect(first->id));
	STAGE("waiting for DISCONNECTED on the other side");
	expect_and_ack(sch, RDMA_CM_EVENT_DISCONNECTED, second->id,
		       second->who);
	STAGE("rdma_disconnect by the other side");
	TRY(rdma_disconnect(second->id));
	STAGE("waiting for DISCONNECTED on the first side");
	expect_and_ack(fch, RDMA_CM_EVENT_DISCONNECTED, first->id, first->who);
	expect_flushed_recv(first);
	expect_flushed_recv(second);
}

static void rc_teardown(struct rc_pair *p)
{
	STAGE("teardown");
	destroy_end(&p->srv);
	destroy_end(&p->cli);
	TRY(rdma_destroy_id(p->listen));
	rdma_destroy_event_channel(p->sch);
	rdma_destroy_event_channel(p->cch);
}

/*
 * rdma_get_option(RDMA_OPTION_ID_INITIATOR), a fork extension: from
 * ESTABLISHED on, 1 on the end whose request formed the connection and 0
 * on the other.
 */
static void check_initiator(struct rc_pair *p)
{
	int ci = -1, si = -1;

	TRY(rdma_get_option(p->cli.id, RDMA_OPTION_ID, RDMA_OPTION_ID_INITIATOR,
			    &ci, sizeof(ci)));
	TRY(rdma_get_option(p->srv.id, RDMA_OPTION_ID, RDMA_OPTION_ID_INITIATOR,
			    &si, sizeof(si)));
	CHECK(ci == 1 && si == 0, "INITIATOR: client %d, server %d", ci, si);
}

static int cmd_rc(int argc, char **argv, bool server_first)
{
	const char *src = argc > 1 ? argv[1] : NULL;
	struct rc_pair p;

	rc_setup(&p, argv[0]);
	note("listening on %s port %u", argv[0], p.port);
	rc_connect(&p, argv[0], src, true);
	check_initiator(&p);
	rc_exchange(&p, 3);
	rc_rdma(&p);
	rc_disconnect(&p, server_first);
	rc_teardown(&p);
	pass();
	return 0;
}

static int cmd_rc_async(int argc, char **argv)
{
	return cmd_rc(argc, argv, false);
}

static int cmd_rc_server_disconnect(int argc, char **argv)
{
	return cmd_rc(argc, argv, true);
}

/* --- reject --------------------------------------------------------------- */

static const char reject_pdata[] = "go away";

static int cmd_reject(int argc, char **argv)
{
	const char *src = argc > 1 ? argv[1] : NULL;
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *req;
	struct rc_pair p;
	uint16_t dead_port;

	rc_setup(&p, argv[0]);
	TRY(rdma_create_id(p.cch, &p.cli.id, &p.cli, RDMA_PS_TCP));
	client_resolve(p.cch, p.cli.id, src, argv[0], p.port);
	make_qp(&p.cli, IBV_QPT_RC);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = cli_pdata;
	cp.private_data_len = sizeof(cli_pdata);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	STAGE("rdma_connect");
	TRY(rdma_connect(p.cli.id, &cp));
	ev = expect_event(p.sch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, "server");
	req = ev->id;
	check_pdata(ev->param.conn.private_data,
		    ev->param.conn.private_data_len, cli_pdata,
		    "CONNECT_REQUEST");
	STAGE("rdma_reject");
	/* The terminating NUL is sent too, so the contents can be checked. */
	TRY(rdma_reject(req, reject_pdata, sizeof(reject_pdata)));
	TRY(rdma_ack_cm_event(ev));
	STAGE("client waiting for REJECTED");
	ev = expect_event(p.cch, RDMA_CM_EVENT_REJECTED, p.cli.id, "client");
	note("REJECTED status %d, %u bytes of private data", ev->status,
	     ev->param.conn.private_data_len);
	CHECK(ev->status != 0, "REJECTED with status 0");
	check_pdata(ev->param.conn.private_data,
		    ev->param.conn.private_data_len, reject_pdata, "REJECTED");
	TRY(rdma_ack_cm_event(ev));
	TRY(rdma_destroy_id(req));
	destroy_end(&p.cli);

	/* A port nobody listens on is refused too, without private data. */
	STAGE("connect to a port without a listener");
	TRY(rdma_create_id(p.cch, &p.cli.id, &p.cli, RDMA_PS_TCP));
	dead_port = (uint16_t)(p.port == 65535 ? 65534 : p.port + 1);
	client_resolve(p.cch, p.cli.id, src, argv[0], dead_port);
	make_qp(&p.cli, IBV_QPT_RC);
	/*
	 * On iWARP the connect is a TCP connect, which the kernel may refuse
	 * before rdma_connect returns (siw does): ECONNREFUSED, no event.
	 */
	if (rdma_connect(p.cli.id, &cp)) {
		CHECK(is_iwarp(p.cli.id) && errno == ECONNREFUSED,
		      "rdma_connect to port %u without listener: %s", dead_port,
		      strerror(errno));
		note("connect to port %u without listener: refused at once",
		     dead_port);
		expect_no_event(p.cch, 100, "client after a refused connect");
	} else {
		ev = get_event(p.cch, event_timeout_ms);
		if (!ev)
			fail("no event for a connect to port %u without "
			     "listener",
			     dead_port);
		note("connect to port %u without listener: %s status %d",
		     dead_port, rdma_event_str(ev->event), ev->status);
		CHECK(ev->event == RDMA_CM_EVENT_REJECTED ||
			      ev->event == RDMA_CM_EVENT_UNREACHABLE ||
			      ev->event == RDMA_CM_EVENT_CONNECT_ERROR,
		      "connect to a port without listener gave %s",
		      rdma_event_str(ev->event));
		TRY(rdma_ack_cm_event(ev));
	}
	expect_no_event(p.sch, 100, "server after connect to another port");
	destroy_end(&p.cli);
	rc_teardown(&p);
	pass();
	return 0;
}

/* --- shared receive queues, vector posts, rdma_notify --------------------- */

/* Capacity of the QPs and SRQs below: two SGEs for the vector forms. */
static void srq_qp_caps(struct ibv_qp_cap *cap)
{
	cap->max_send_wr = 4;
	cap->max_recv_wr = 4; /* sizes the library-made receive CQ */
	cap->max_send_sge = 2;
	cap->max_recv_sge = 2;
}

static void check_srq_qp(struct end *e)
{
	struct rdma_cm_id *id = e->id;

	CHECK(id->qp && id->srq, "%s: no QP or SRQ", e->who);
	CHECK(id->qp->srq == id->srq,
	      "%s: the QP does not take its receives from id->srq", e->who);
	CHECK(id->pd && id->qp->pd == id->pd && id->srq->pd == id->pd,
	      "%s: QP, SRQ and id->pd differ", e->who);
	CHECK(id->send_cq && id->recv_cq && id->qp->recv_cq == id->recv_cq,
	      "%s: the library-made CQs are missing", e->who);
}

/*
 * Client: rdma_create_srq (NULL PD: the id's), then rdma_create_qp_ex
 * without a PD or an SRQ in the attributes; the library fills in both.
 */
static void make_srq_qp_ex(struct end *e)
{
	struct ibv_srq_init_attr sattr;
	struct ibv_qp_init_attr_ex attr;

	STAGE("rdma_create_srq");
	memset(&sattr, 0, sizeof(sattr));
	sattr.attr.max_wr = 8;
	sattr.attr.max_sge = 2;
	TRY(rdma_create_srq(e->id, NULL, &sattr));
	STAGE("rdma_create_qp_ex");
	memset(&attr, 0, sizeof(attr));
	attr.qp_type = IBV_QPT_RC;
	srq_qp_caps(&attr.cap);
	TRY(rdma_create_qp_ex(e->id, &attr));
	check_srq_qp(e);
}

/* Server: rdma_create_srq_ex (basic SRQ, no PD given), then rdma_create_qp. */
static void make_srq_ex_qp(struct end *e)
{
	struct ibv_srq_init_attr_ex sattr;
	struct ibv_qp_init_attr attr;

	STAGE("rdma_create_srq_ex");
	memset(&sattr, 0, sizeof(sattr));
	sattr.comp_mask = IBV_SRQ_INIT_ATTR_TYPE;
	sattr.srq_type = IBV_SRQT_BASIC;
	sattr.attr.max_wr = 8;
	sattr.attr.max_sge = 2;
	TRY(rdma_create_srq_ex(e->id, &sattr));
	STAGE("rdma_create_qp with an SRQ on the id");
	memset(&attr, 0, sizeof(attr));
	attr.qp_type = IBV_QPT_RC;
	srq_qp_caps(&attr.cap);
	TRY(rdma_create_qp(e->id, NULL, &attr));
	check_srq_qp(e);
}

static void srq_make_qp(struct end *e)
{
	if (!strcmp(e->who, "client"))
		make_srq_qp_ex(e);
	else
		make_srq_ex_qp(e);
}

/*
 * A two-piece message with rdma_post_sendv, received with rdma_post_recvv
 * into two pieces of the peer's receive buffer (through its SRQ).
 */
static void vec_message(struct end *a, struct end *b)
{
	static const char p1[] = "first piece, ", p2[] = "second piece";
	struct ibv_sge s[2], r[2];
	struct ibv_wc wc;
	int n;

	memset(b->rbuf, 0, sizeof(b->rbuf));
	/* The first receive SGE is exactly as long as the first piece. */
	r[0].addr = (uintptr_t)b->rbuf;
	r[0].length = sizeof(p1) - 1;
	r[0].lkey = b->rmr->lkey;
	r[1].addr = (uintptr_t)(b->rbuf + 128);
	r[1].length = 128;
	r[1].lkey = b->rmr->lkey;
	STAGE("rdma_post_recvv");
	TRY(rdma_post_recvv(b->id, b, r, 2));

	memcpy(a->sbuf, p1, sizeof(p1) - 1);
	memcpy(a->sbuf + 64, p2, sizeof(p2));
	s[0].addr = (uintptr_t)a->sbuf;
	s[0].length = sizeof(p1) - 1;
	s[0].lkey = a->smr->lkey;
	s[1].addr = (uintptr_t)(a->sbuf + 64);
	s[1].length = sizeof(p2);
	s[1].lkey = a->smr->lkey;
	STAGE("rdma_post_sendv");
	TRY(rdma_post_sendv(a->id, a, s, 2, IBV_SEND_SIGNALED));
	rdma_comp(a, IBV_WC_SEND, "rdma_post_sendv");

	STAGE("receive of the vector send");
	n = rdma_get_recv_comp(b->id, &wc);
	if (n != 1 || wc.status != IBV_WC_SUCCESS)
		fail("%s: vector receive: %d, %s", b->who, n,
		     n == 1 ? ibv_wc_status_str(wc.status) : strerror(errno));
	CHECK(wc.wr_id == (uintptr_t)b, "%s: vector receive wr_id", b->who);
	CHECK(wc.byte_len == sizeof(p1) - 1 + sizeof(p2),
	      "%s: vector receive of %u bytes", b->who, wc.byte_len);
	CHECK(!memcmp(b->rbuf, p1, sizeof(p1) - 1) &&
		      !memcmp(b->rbuf + 128, p2, sizeof(p2)),
	      "%s: vector receive scattered \"%.*s\" + \"%.*s\"", b->who,
	      (int)sizeof(p1) - 1, b->rbuf, (int)sizeof(p2), b->rbuf + 128);
}

/*
 * RDMA WRITE gathering two pieces, RDMA READ scattering into two (into one
 * where the device reads into a single buffer only).
 */
static void vec_rdma(struct end *a, struct end *b)
{
	static const char w1[] = "gathered ", w2[] = "write";
	struct ibv_device_attr dev;
	struct ibv_sge sg[2];

	memset(b->wbuf, 0, sizeof(b->wbuf));
	memcpy(a->sbuf, w1, sizeof(w1) - 1);
	memcpy(a->sbuf + 64, w2, sizeof(w2));
	sg[0].addr = (uintptr_t)a->sbuf;
	sg[0].length = sizeof(w1) - 1;
	sg[0].lkey = a->smr->lkey;
	sg[1].addr = (uintptr_t)(a->sbuf + 64);
	sg[1].length = sizeof(w2);
	sg[1].lkey = a->smr->lkey;
	STAGE("rdma_post_writev");
	TRY(rdma_post_writev(a->id, a, sg, 2, IBV_SEND_SIGNALED,
			     (uintptr_t)b->wbuf, b->wmr->rkey));
	rdma_comp(a, IBV_WC_RDMA_WRITE, "rdma_post_writev");
	CHECK(!strcmp(b->wbuf, "gathered write"),
	      "%s: gathered RDMA WRITE left \"%s\"", b->who, b->wbuf);

	snprintf(b->rdbuf, sizeof(b->rdbuf), "0123456789abcdef");
	memset(a->lbuf, 0, sizeof(a->lbuf));
	/* iWARP's read sink is one buffer (siw: max_sge_rd 1). */
	CHECK(!ibv_query_device(a->id->verbs, &dev), "ibv_query_device");
	if (dev.max_sge_rd < 2) {
		sg[0].addr = (uintptr_t)a->lbuf;
		sg[0].length = 17;
		sg[0].lkey = a->lmr->lkey;
		STAGE("rdma_post_readv (one SGE)");
		TRY(rdma_post_readv(a->id, a, sg, 1, IBV_SEND_SIGNALED,
				    (uintptr_t)b->rdbuf, b->rdmr->rkey));
		rdma_comp(a, IBV_WC_RDMA_READ, "rdma_post_readv");
		CHECK(!strcmp(a->lbuf, b->rdbuf),
		      "%s: RDMA READ brought \"%s\", want \"%s\"", a->who,
		      a->lbuf, b->rdbuf);
		return;
	}
	sg[0].addr = (uintptr_t)a->lbuf;
	sg[0].length = 6;
	sg[0].lkey = a->lmr->lkey;
	sg[1].addr = (uintptr_t)(a->lbuf + 32);
	sg[1].length = 11;
	sg[1].lkey = a->lmr->lkey;
	STAGE("rdma_post_readv");
	TRY(rdma_post_readv(a->id, a, sg, 2, IBV_SEND_SIGNALED,
			    (uintptr_t)b->rdbuf, b->rdmr->rkey));
	rdma_comp(a, IBV_WC_RDMA_READ, "rdma_post_readv");
	CHECK(!memcmp(a->lbuf, "012345", 6) &&
		      !strcmp(a->lbuf + 32, "6789abcdef"),
	      "%s: scattered RDMA READ brought \"%.6s\" + \"%s\"", a->who,
	      a->lbuf, a->lbuf + 32);
}

/*
 * rdma_notify(COMM_EST) tells the CM that the QP saw traffic before the
 * ESTABLISHED event.  Once established the kernel answers EISCONN; a
 * listener has nothing to establish: EINVAL (Linux 6.1, both libraries).
 * On iWARP the kernel accepts and ignores it.
 * (A NULL id is convert_test's: rdma-core's library crashes on it.)
 */
static void notify_checks(struct rc_pair *p)
{
	int r;

	STAGE("rdma_notify");
	if (is_iwarp(p->srv.id)) {
		/* The iWARP CM has nothing to be told: the kernel says 0. */
		TRY(rdma_notify(p->srv.id, IBV_EVENT_COMM_EST));
		return;
	}
	errno = 0;
	r = rdma_notify(p->srv.id, IBV_EVENT_COMM_EST);
	CHECK(r == -1 && errno == EISCONN,
	      "rdma_notify(COMM_EST) on a connected id: %d, %s, want EISCONN",
	      r, strerror(errno));
	/* A listener has no connection to establish. */
	errno = 0;
	r = rdma_notify(p->listen, IBV_EVENT_COMM_EST);
	CHECK(r == -1 && errno == EINVAL,
	      "rdma_notify on the listener: %d, %s, want EINVAL", r,
	      strerror(errno));
	expect_no_event(p->sch, 100, "server after rdma_notify");
}

/* Disconnect without the flush check: SRQ receives are not flushed. */
static void srq_teardown(struct rc_pair *p)
{
	struct end *ends[2] = {&p->cli, &p->srv};
	int i;

	TRY(rdma_disconnect(p->cli.id));
	expect_and_ack(p->sch, RDMA_CM_EVENT_DISCONNECTED, p->srv.id, "server");
	TRY(rdma_disconnect(p->srv.id));
	expect_and_ack(p->cch, RDMA_CM_EVENT_DISCONNECTED, p->cli.id, "client");
	for (i = 0; i < 2; i++) {
		STAGE("rdma_destroy_qp, rdma_destroy_srq");
		dereg_bufs(ends[i]);
		rdma_destroy_qp(ends[i]->id);
		rdma_destroy_srq(ends[i]->id);
		CHECK(!ends[i]->id->srq,
		      "%s: id->srq set after rdma_destroy_srq", ends[i]->who);
		TRY(rdma_destroy_id(ends[i]->id));
		ends[i]->id = NULL;
	}
	rc_teardown(p);
}

static int cmd_srq(int argc, char **argv)
{
	const char *src = argc > 1 ? argv[1] : NULL;
	struct rc_pair p;

	rc_setup(&p, argv[0]);
	p.make_qp = srq_make_qp;
	rc_connect(&p, argv[0], src, false);
	/*
	 * Each end has one single-SGE receive in its SRQ: a plain message
	 * uses it up, so the vector message lands in the vector receive.
	 */
	send_msg(&p.cli, "through the server's SRQ");
	recv_msg(&p.srv, "through the server's SRQ", 0);
	vec_message(&p.cli, &p.srv);
	send_msg(&p.srv, "through the client's SRQ");
	recv_msg(&p.cli, "through the client's SRQ", 0);
	vec_message(&p.srv, &p.cli);
	vec_rdma(&p.cli, &p.srv);
	vec_rdma(&p.srv, &p.cli);
	notify_checks(&p);
	srq_teardown(&p);
	pass();
	return 0;
}

/* --- TIMEWAIT_EXIT -------------------------------------------------------- */

/*
 * After a disconnect the IB CM keeps each side's connection in timewait
 * (about twice the packet lifetime); an id not destroyed by then gets
 * RDMA_CM_EVENT_TIMEWAIT_EXIT, which tells it the QP may be reused.
 */
static int cmd_timewait(int argc, char **argv)
{
	const char *src = argc > 1 ? argv[1] : NULL;
	struct rc_pair p;

	rc_setup(&p, argv[0]);
	rc_connect(&p, argv[0], src, false);
	if (is_iwarp(p.cli.id))
		skip("iWARP connections have no timewait event");
	rc_exchange(&p, 1);
	rc_disconnect(&p, false);
	STAGE("waiting for TIMEWAIT_EXIT");
	expect_and_ack(p.cch, RDMA_CM_EVENT_TIMEWAIT_EXIT, p.cli.id, "client");
	expect_and_ack(p.sch, RDMA_CM_EVENT_TIMEWAIT_EXIT, p.srv.id, "server");
	expect_no_event(p.cch, 100, "client after TIMEWAIT_EXIT");
	rc_teardown(&p);
	pass();
	return 0;
}

/* --- UD reject: UNREACHABLE ----------------------------------------------- */

/*
 * rdma_reject on a RDMA_PS_UDP request answers with a SIDR reply whose
 * status is "rejected" (2); the active side gets RDMA_CM_EVENT_UNREACHABLE
 * with that status and the reply's private data.  The active id is
 * migrated from another channel first, answers rdma_init_qp_attr and gets
 * its QP from rdma_create_qp_ex: UD flavours of calls the RC scenarios
 * cover.
 */
static int cmd_ud_reject(int argc, char **argv)
{
	const char *src = argc > 1 ? argv[1] : NULL;
	struct end cli = {.who = "ud client"};
	struct rdma_event_channel *sch = make_channel(), *cch = make_channel();
	struct rdma_event_channel *tmp;
	struct ibv_qp_init_attr_ex qattr;
	struct ibv_qp_attr ia;
	int mask;
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *listen, *req;
	uint16_t port;

	listen = make_listener(sch, argv[0], RDMA_PS_UDP, &port);
	/* Made on a channel of its own, then moved: migration of a UD id. */
	tmp = make_channel();
	TRY(rdma_create_id(tmp, &cli.id, &cli, RDMA_PS_UDP));
	TRY(rdma_migrate_id(cli.id, cch));
	CHECK(cli.id->channel == cch, "migrated UD id's channel");
	rdma_destroy_event_channel(tmp);
	client_resolve(cch, cli.id, src, argv[0], port);
	if (is_iwarp(cli.id))
		skip("iWARP has no UD");
	/* What an application making its own UD QP would ask for. */
	STAGE("rdma_init_qp_attr (UD, INIT)");
	memset(&ia, 0, sizeof(ia));
	ia.qp_state = IBV_QPS_INIT;
	TRY(rdma_init_qp_attr(cli.id, &ia, &mask));
	CHECK((mask & (IBV_QP_STATE | IBV_QP_QKEY | IBV_QP_PORT |
		       IBV_QP_PKEY_INDEX)) == (IBV_QP_STATE | IBV_QP_QKEY |
					       IBV_QP_PORT | IBV_QP_PKEY_INDEX),
	      "UD INIT attribute mask 0x%x", mask);
	CHECK(ia.qkey == RDMA_UDP_QKEY && ia.port_num == cli.id->port_num,
	      "UD INIT attributes: qkey 0x%x port %u", ia.qkey, ia.port_num);
	STAGE("rdma_create_qp_ex (UD)");
	memset(&qattr, 0, sizeof(qattr));
	qattr.qp_type = IBV_QPT_UD;
	qattr.cap.max_send_wr = qattr.cap.max_recv_wr = 2;
	qattr.cap.max_send_sge = qattr.cap.max_recv_sge = 1;
	TRY(rdma_create_qp_ex(cli.id, &qattr));
	CHECK(cli.id->qp && cli.id->qp->qp_type == IBV_QPT_UD,
	      "rdma_create_qp_ex made no UD QP");
	memset(&cp, 0, sizeof(cp));
	cp.private_data = cli_pdata;
	cp.private_data_len = sizeof(cli_pdata);
	STAGE("ud rdma_connect (SIDR)");
	TRY(rdma_connect(cli.id, &cp));
	ev = expect_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL,
			  "ud server");
	req = ev->id;
	STAGE("ud rdma_reject");
	TRY(rdma_reject(req, reject_pdata, sizeof(reject_pdata)));
	TRY(rdma_ack_cm_event(ev));
	ev = expect_event(cch, RDMA_CM_EVENT_UNREACHABLE, cli.id, "ud client");
	note("UNREACHABLE status %d", ev->status);
	CHECK(ev->status == 2, "UNREACHABLE status %d, want 2 (SIDR reject)",
	      ev->status);
	check_pdata(ev->param.ud.private_data, ev->param.ud.private_data_len,
		    reject_pdata, "UNREACHABLE");
	TRY(rdma_ack_cm_event(ev));
	TRY(rdma_destroy_id(req));
	destroy_end(&cli);
	TRY(rdma_destroy_id(listen));
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
	pass();
	return 0;
}

/* --- CONNECT_ERROR -------------------------------------------------------- */

/*
 * The active side's QP cannot take the connection's attributes (the
 * application put it into the error state while connecting): the library
 * cannot move it to RTR when the reply comes, so the active side gets
 * RDMA_CM_EVENT_CONNECT_ERROR, with a non-zero status, instead of
 * ESTABLISHED.
 */
static int cmd_connect_error(int argc, char **argv)
{
	const char *src = argc > 1 ? argv[1] : NULL;
	struct rdma_conn_param cp;
	struct ibv_qp_attr qa;
	struct rdma_cm_event *ev;
	struct rc_pair p;

	rc_setup(&p, argv[0]);
	TRY(rdma_create_id(p.cch, &p.cli.id, &p.cli, RDMA_PS_TCP));
	client_resolve(p.cch, p.cli.id, src, argv[0], p.port);
	if (is_iwarp(p.cli.id))
		skip("on iWARP the kernel, not the library, moves the QP");
	make_qp(&p.cli, IBV_QPT_RC);
	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	STAGE("rdma_connect");
	TRY(rdma_connect(p.cli.id, &cp));
	ev = expect_event(p.sch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, "server");
	p.srv.id = ev->id;
	TRY(rdma_ack_cm_event(ev));
	p.srv.id->context = &p.srv;
	make_qp(&p.srv, IBV_QPT_RC);

	STAGE("client QP to the error state");
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_ERR;
	CHECK(!ibv_modify_qp(p.cli.id->qp, &qa, IBV_QP_STATE),
	      "ibv_modify_qp(ERR)");
	STAGE("rdma_accept");
	TRY(rdma_accept(p.srv.id, &cp));
	ev = expect_event(p.cch, RDMA_CM_EVENT_CONNECT_ERROR, p.cli.id,
			  "client");
	note("CONNECT_ERROR status %d", ev->status);
	CHECK(ev->status != 0, "CONNECT_ERROR with status 0");
	TRY(rdma_ack_cm_event(ev));
	/*
	 * What the passive side gets differs: this library rejects at once
	 * (REJECTED, status 28), rdma-core's only moves its QP to the error
	 * state and leaves the peer to time out.  Not checked.
	 */
	rc_teardown(&p);
	pass();
	return 0;
}

/* --- ADDR_CHANGE ---------------------------------------------------------- */

/*
 * An id bound to an address of a bonding master gets
 * RDMA_CM_EVENT_ADDR_CHANGE when the bond fails over to a slave with
 * another MAC address (the kernel's NETDEV_BONDING_FAILOVER).  @cmd, run
 * with system(3) once the ids are bound, makes the fail-over happen; the
 * caller (run-in-guest.sh) builds the bond and its rxe device.  A listener
 * on the same address is told too.
 */
static int cmd_addr_change(int argc, char **argv)
{
	struct rdma_event_channel *ch = make_channel();
	struct rdma_cm_id *id, *listen;
	struct sockaddr_storage ss;
	struct rdma_cm_event *ev;
	int r, i, seen = 0;

	(void)argc;
	parse_addr(argv[0], 0, &ss);
	TRY(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	TRY(rdma_bind_addr(id, (struct sockaddr *)&ss));
	CHECK(id->verbs, "id bound to %s has no device", argv[0]);
	note("bound to %s on %s", argv[0],
	     ibv_get_device_name(id->verbs->device));
	listen = make_listener(ch, argv[0], RDMA_PS_TCP, &(uint16_t){0});

	STAGE("addr_change: the fail-over command");
	r = system(argv[1]);
	CHECK(r == 0, "fail-over command \"%s\" exited with %d", argv[1], r);
	STAGE("addr_change: waiting for ADDR_CHANGE");
	/* One for each id, in either order. */
	for (i = 0; i < 2; i++) {
		ev = expect_event(ch, RDMA_CM_EVENT_ADDR_CHANGE, NULL,
				  "bound ids");
		seen |= ev->id == id ? 1 : ev->id == listen ? 2 : 4;
		TRY(rdma_ack_cm_event(ev));
	}
	CHECK(seen == 3,
	      "ADDR_CHANGE events for ids 0x%x (1 bound id, 2 "
	      "listener, 4 another)",
	      seen);
	TRY(rdma_destroy_id(listen));
	TRY(rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
	pass();
	return 0;
}

/* --- UNREACHABLE for RC: a REQ nobody answers ------------------------------ */

/*
 * @dst answers ARP but runs no RDMA stack, so the IB CM's REQ goes
 * unanswered: after its retries (over a minute on Linux 6.1) the active
 * side gets RDMA_CM_EVENT_UNREACHABLE with -ETIMEDOUT.  The wait is the
 * CM's, not ours: the event timeout is raised to 180 s for this scenario
 * (run-in-guest.sh gives it the matching limit).
 */
static int cmd_unreachable(int argc, char **argv)
{
	struct rdma_event_channel *ch = make_channel();
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct end cli = {.who = "client"};

	(void)argc;
	TRY(rdma_create_id(ch, &cli.id, &cli, RDMA_PS_TCP));
	client_resolve(ch, cli.id, argv[1], argv[0], 7471);
	if (is_iwarp(cli.id))
		skip("an iWARP connect is a TCP connect, refused at once");
	make_qp(&cli, IBV_QPT_RC);
	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	STAGE("rdma_connect to a peer without RDMA");
	TRY(rdma_connect(cli.id, &cp));
	if (event_timeout_ms < 180000)
		event_timeout_ms = 180000;
	ev = expect_event(ch, RDMA_CM_EVENT_UNREACHABLE, cli.id, "client");
	note("UNREACHABLE status %d", ev->status);
	CHECK(ev->status == -ETIMEDOUT, "UNREACHABLE status %d, want %d",
	      ev->status, -ETIMEDOUT);
	TRY(rdma_ack_cm_event(ev));
	destroy_end(&cli);
	rdma_destroy_event_channel(ch);
	pass();
	return 0;
}

/* --- reject with ECE ------------------------------------------------------ */

/*
 * rdma_get_remote_ece on a request, then rdma_reject_ece: the active side
 * gets REJECTED with the private data and, on IB and RoCE, the CM reason
 * "vendor option not supported" (35) instead of "consumer defined" (28).
 */
static int cmd_reject_ece(int argc, char **argv)
{
	const char *src = argc > 1 ? argv[1] : NULL;
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *req;
	struct ibv_ece ece;
	struct rc_pair p;

	rc_setup(&p, argv[0]);
	TRY(rdma_create_id(p.cch, &p.cli.id, &p.cli, RDMA_PS_TCP));
	client_resolve(p.cch, p.cli.id, src, argv[0], p.port);
	if (is_iwarp(p.cli.id))
		skip("ECE is an IB CM feature (iWARP has none)");
	make_qp(&p.cli, IBV_QPT_RC);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = cli_pdata;
	cp.private_data_len = sizeof(cli_pdata);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	STAGE("rdma_connect");
	TRY(rdma_connect(p.cli.id, &cp));
	ev = expect_event(p.sch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, "server");
	STAGE("rdma_get_remote_ece");
	memset(&ece, 0xff, sizeof(ece));
	TRY(rdma_get_remote_ece(ev->id, &ece));
	note("request's ECE: vendor 0x%x, options 0x%x", ece.vendor_id,
	     ece.options);
	errno = 0;
	CHECK(rdma_get_remote_ece(ev->id, NULL) == -1 && errno == EINVAL,
	      "rdma_get_remote_ece(id, NULL): errno %d, want EINVAL", errno);
	STAGE("rdma_reject_ece");
	TRY(rdma_reject_ece(ev->id, reject_pdata, sizeof(reject_pdata)));
	req = ev->id;
	/* rdma-core's destroy waits for the id's events to be acked. */
	TRY(rdma_ack_cm_event(ev));
	TRY(rdma_destroy_id(req));
	STAGE("client waiting for REJECTED");
	ev = expect_event(p.cch, RDMA_CM_EVENT_REJECTED, p.cli.id, "client");
	note("REJECTED status %d", ev->status);
	CHECK(ev->status == 35,
	      "REJECTED status %d, want 35 (vendor option "
	      "not supported)",
	      ev->status);
	check_pdata(ev->param.conn.private_data,
		    ev->param.conn.private_data_len, reject_pdata, "REJECTED");
	TRY(rdma_ack_cm_event(ev));
	destroy_end(&p.cli);
	rc_teardown(&p);
	pass();
	return 0;
}

/* --- synchronous ids: rdma_create_ep and friends -------------------------- */

struct sync_server {
	const char *addr;
	struct end *client; /* for the server's one-sided operations */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint16_t port; /* set once listening */
	bool done;
	bool reject; /* rdma_reject the request instead of accepting it */
};

static void sync_qp_attr(struct ibv_qp_init_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->cap.max_send_wr = 4;
	attr->cap.max_recv_wr = 4;
	attr->cap.max_send_sge = 1;
	attr->cap.max_recv_sge = 1;
	attr->qp_type = IBV_QPT_RC;
}

static void *sync_server_thread(void *arg)
{
	struct sync_server *s = arg;
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *listen, *id;
	struct rdma_conn_param cp;
	struct end e = {.who = "sync server"};
	int r;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE | RAI_NUMERICHOST;
	hints.ai_port_space = RDMA_PS_TCP;
	r = rdma_getaddrinfo(s->addr, "0", &hints, &res);
	if (r)
		fail("server rdma_getaddrinfo(%s): %d, %s", s->addr, r,
		     strerror(errno));
	CHECK(res->ai_src_addr && res->ai_flags & RAI_PASSIVE,
	      "passive rdma_getaddrinfo gave no source address");
	CHECK(res->ai_qp_type == IBV_QPT_RC, "ai_qp_type %d", res->ai_qp_type);
	sync_qp_attr(&attr);
	TRY(rdma_create_ep(&listen, res, NULL, &attr));
	rdma_freeaddrinfo(res);
	CHECK(listen->channel, "listener has no (private) channel");
	CHECK(!listen->qp, "a passive endpoint must not get a QP");
	TRY(rdma_listen(listen, 4));

	pthread_mutex_lock(&s->lock);
	s->port = ntohs(rdma_get_src_port(listen));
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	CHECK(s->port, "passive endpoint on port 0 got no port");

	STAGE("sync server: rdma_get_request");
	TRY(rdma_get_request(listen, &id));
	e.id = id;
	CHECK(id != listen, "rdma_get_request returned the listener");
	CHECK(id->qp, "rdma_get_request did not create the QP of the endpoint");
	CHECK(id->qp->qp_type == IBV_QPT_RC, "new QP type %d", id->qp->qp_type);
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_CONNECT_REQUEST,
	      "id->event is not the CONNECT_REQUEST");
	check_pdata(id->event->param.conn.private_data,
		    id->event->param.conn.private_data_len, cli_pdata,
		    "sync CONNECT_REQUEST");
	if (s->reject) {
		STAGE("sync server: rdma_reject");
		TRY(rdma_reject(id, reject_pdata, sizeof(reject_pdata)));
		rdma_destroy_ep(id);
		rdma_destroy_ep(listen);
		goto done;
	}
	reg_bufs(&e);
	post_recv(&e);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = srv_pdata;
	cp.private_data_len = sizeof(srv_pdata);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.rnr_retry_count = 7;
	STAGE("sync server: rdma_accept");
	TRY(rdma_accept(id, &cp));
	recv_msg(&e, "sync client to server", 0);
	post_recv(&e);
	/* The client's QP came from rdma_create_ep before it connected. */
	rdma_one_way(&e, s->client);
	send_msg(&e, "sync server to client");
	STAGE("sync server: rdma_disconnect");
	TRY(rdma_disconnect(id));
	dereg_bufs(&e);
	STAGE("sync server: rdma_destroy_ep");
	rdma_destroy_ep(id);
	rdma_destroy_ep(listen);
done:
	pthread_mutex_lock(&s->lock);
	s->done = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static void wait_flag(struct sync_server *s, bool want_done, const char *what)
{
	struct timespec ts;
	int r = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += event_timeout_ms / 1000 + 1;
	pthread_mutex_lock(&s->lock);
	while (!(want_done ? s->done : s->port != 0) && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&s->cond, &s->lock, &ts);
	pthread_mutex_unlock(&s->lock);
	if (r == ETIMEDOUT)
		fail("timed out waiting for the server thread to %s", what);
}

static int cmd_rc_sync(int argc, char **argv)
{
	struct end e = {.who = "sync client"};
	struct sync_server s = {.addr = argv[0], .client = &e};
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	struct sockaddr_storage src;
	struct rdma_conn_param cp;
	char port[16];
	pthread_t t;
	int r;

	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.cond, NULL);
	if (pthread_create(&t, NULL, sync_server_thread, &s))
		fail("pthread_create failed");
	wait_flag(&s, false, "listen");
	snprintf(port, sizeof(port), "%u", s.port);
	note("sync server listening on %s port %s", argv[0], port);

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_NUMERICHOST;
	hints.ai_port_space = RDMA_PS_TCP;
	if (argc > 1) {
		parse_addr(argv[1], 0, &src);
		hints.ai_src_addr = (struct sockaddr *)&src;
		hints.ai_src_len = src.ss_family == AF_INET
					   ? sizeof(struct sockaddr_in)
					   : sizeof(struct sockaddr_in6);
	}
	r = rdma_getaddrinfo(argv[0], port, &hints, &res);
	if (r)
		fail("client rdma_getaddrinfo(%s, %s): %d, %s", argv[0], port,
		     r, strerror(errno));
	CHECK(res->ai_dst_addr, "active rdma_getaddrinfo gave no destination");
	sync_qp_attr(&attr);
	STAGE("sync client: rdma_create_ep");
	TRY(rdma_create_ep(&e.id, res, NULL, &attr));
	rdma_freeaddrinfo(res);
	CHECK(e.id->qp, "active rdma_create_ep with attrs made no QP");
	CHECK(e.id->verbs && route_ok(e.id),
	      "active endpoint not route-resolved");
	reg_bufs(&e);
	post_recv(&e);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = cli_pdata;
	cp.private_data_len = sizeof(cli_pdata);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	STAGE("sync client: rdma_connect");
	TRY(rdma_connect(e.id, &cp));
	/* A synchronous call leaves its event in id->event. */
	CHECK(e.id->event && e.id->event->event == RDMA_CM_EVENT_ESTABLISHED,
	      "id->event after rdma_connect is %s",
	      e.id->event ? rdma_event_str(e.id->event->event) : "NULL");
	check_pdata(e.id->event->param.conn.private_data,
		    e.id->event->param.conn.private_data_len, srv_pdata,
		    "sync ESTABLISHED");
	send_msg(&e, "sync client to server");
	recv_msg(&e, "sync server to client", 0);
	STAGE("sync client: rdma_disconnect");
	TRY(rdma_disconnect(e.id));
	dereg_bufs(&e);
	wait_flag(&s, true, "finish");
	pthread_join(t, NULL);
	STAGE("sync client: rdma_destroy_ep");
	rdma_destroy_ep(e.id);
	pass();
	return 0;
}

/*
 * A synchronous listener rejects: the synchronous client's rdma_connect
 * fails with ECONNREFUSED and leaves the REJECTED event, with the
 * server's private data, in id->event.
 */
static int cmd_sync_reject(int argc, char **argv)
{
	struct end e = {.who = "sync client"};
	struct sync_server s = {.addr = argv[0], .client = &e, .reject = true};
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	struct rdma_conn_param cp;
	char port[16];
	pthread_t t;
	int r;

	(void)argc;
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.cond, NULL);
	if (pthread_create(&t, NULL, sync_server_thread, &s))
		fail("pthread_create failed");
	wait_flag(&s, false, "listen");
	snprintf(port, sizeof(port), "%u", s.port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_NUMERICHOST;
	hints.ai_port_space = RDMA_PS_TCP;
	r = rdma_getaddrinfo(argv[0], port, &hints, &res);
	if (r)
		fail("client rdma_getaddrinfo: %s", strerror(errno));
	sync_qp_attr(&attr);
	TRY(rdma_create_ep(&e.id, res, NULL, &attr));
	rdma_freeaddrinfo(res);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = cli_pdata;
	cp.private_data_len = sizeof(cli_pdata);
	STAGE("sync client: rdma_connect to a rejecting server");
	errno = 0;
	r = rdma_connect(e.id, &cp);
	CHECK(r == -1 && errno == ECONNREFUSED,
	      "rejected synchronous rdma_connect: %d, %s, want ECONNREFUSED", r,
	      strerror(errno));
	CHECK(e.id->event && e.id->event->event == RDMA_CM_EVENT_REJECTED,
	      "id->event after a rejected rdma_connect is %s",
	      e.id->event ? rdma_event_str(e.id->event->event) : "NULL");
	check_pdata(e.id->event->param.conn.private_data,
		    e.id->event->param.conn.private_data_len, reject_pdata,
		    "sync REJECTED");
	wait_flag(&s, true, "finish");
	pthread_join(t, NULL);
	rdma_destroy_ep(e.id);
	pass();
	return 0;
}

/* --- migrate -------------------------------------------------------------- */

static int cmd_migrate(int argc, char **argv)
{
	struct rdma_event_channel *a, *b;
	struct sockaddr_storage dst;
	struct rdma_cm_id *id;

	(void)argc;
	a = make_channel();
	b = make_channel();
	TRY(rdma_create_id(a, &id, NULL, RDMA_PS_TCP));
	CHECK(id->channel == a, "id not on channel A");
	STAGE("migrate A -> B");
	TRY(rdma_migrate_id(id, b));
	CHECK(id->channel == b, "id->channel not B after migration");

	parse_addr(argv[0], 4791, &dst);
	STAGE("resolve address after migration");
	TRY(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000));
	expect_and_ack(b, RDMA_CM_EVENT_ADDR_RESOLVED, id, "channel B");
	expect_no_event(a, 200, "channel A after migration to B");

	STAGE("migrate B -> A");
	TRY(rdma_migrate_id(id, a));
	CHECK(id->channel == a, "id->channel not A after migrating back");
	TRY(rdma_resolve_route(id, 2000));
	expect_and_ack(a, RDMA_CM_EVENT_ROUTE_RESOLVED, id, "channel A");
	expect_no_event(b, 200, "channel B after migration back to A");

	/* Migrating with an event still queued moves the event along. */
	STAGE("migrate with a queued event");
	TRY(rdma_destroy_id(id));
	TRY(rdma_create_id(a, &id, NULL, RDMA_PS_TCP));
	TRY(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000));
	{
		struct pollfd pfd = {.fd = a->fd, .events = POLLIN};

		CHECK(poll(&pfd, 1, event_timeout_ms) == 1,
		      "no event on A to migrate");
	}
	TRY(rdma_migrate_id(id, b));
	expect_and_ack(b, RDMA_CM_EVENT_ADDR_RESOLVED, id,
		       "channel B (event queued before migration)");
	expect_no_event(a, 200, "channel A after migrating a queued event");

	/* And to a synchronous id (NULL channel): calls now block. */
	STAGE("migrate to synchronous");
	TRY(rdma_migrate_id(id, NULL));
	CHECK(id->channel && id->channel != a && id->channel != b,
	      "migrating to NULL did not give the id a private channel");
	TRY(rdma_resolve_route(id, 2000));
	CHECK(route_ok(id), "synchronous route resolution left no path");
	expect_no_event(a, 100, "channel A after migration to sync");
	expect_no_event(b, 100, "channel B after migration to sync");
	TRY(rdma_destroy_id(id));
	rdma_destroy_event_channel(a);
	rdma_destroy_event_channel(b);
	pass();
	return 0;
}

/* --- cycles --------------------------------------------------------------- */

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		fail("opendir /proc/self/fd: %s", strerror(errno));
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the DIR's own fd */
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;

	if (!f)
		fail("open /proc/self/status: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	if (kib < 0)
		fail("no VmRSS in /proc/self/status");
	return kib;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmd_cycles(int argc, char **argv)
{
	const char *src = argc > 2 ? argv[2] : NULL;
	int n = argc > 1 ? atoi(argv[1]) : 200, i, fds0 = 0, fds1;
	const int warmup = 10;
	long rss0 = 0, rss1;
	struct rc_pair p;
	double t0 = now_s(), tw = t0;

	if (n <= warmup)
		fail("need more than %d cycles, got %d", warmup, n);
	rc_setup(&p, argv[0]);
	for (i = 0; i < n; i++) {
		if (i == warmup) {
			fds0 = count_fds();
			rss0 = rss_kib();
			tw = now_s();
		}
		rc_connect(&p, argv[0], src, false);
		rc_exchange(&p, 1);
		rc_disconnect(&p, i % 2);
		destroy_end(&p.srv);
		destroy_end(&p.cli);
	}
	fds1 = count_fds();
	rss1 = rss_kib();
	note("%d cycles in %.1f s (%.1f ms each after warm-up)", n,
	     now_s() - t0, (now_s() - tw) * 1000.0 / (n - warmup));
	note("after %d warm-up cycles: %d fds, VmRSS %ld KiB; at the end: %d "
	     "fds, VmRSS %ld KiB (growth %ld KiB)",
	     warmup, fds0, rss0, fds1, rss1, rss1 - rss0);
	CHECK(fds1 == fds0, "open fds went from %d to %d: fd leak", fds0, fds1);
	CHECK(rss1 - rss0 < 2048,
	      "VmRSS grew by %ld KiB over %d cycles: memory leak?", rss1 - rss0,
	      n - warmup);
	rc_teardown(&p);
	pass();
	return 0;
}

/* --- errors --------------------------------------------------------------- */

static int err_checks, err_failed;
static char err_first[256];

static void __attribute__((format(printf, 2, 3)))
err_result(bool ok, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	err_checks++;
	if (ok) {
		note("ok: %s", buf);
		return;
	}
	note("BAD: %s", buf);
	if (!err_failed++)
		snprintf(err_first, sizeof(err_first), "%s", buf);
}

/* The scenario's end: FAIL naming the first bad check, or PASS. */
static int err_verdict(void)
{
	if (err_failed)
		fail("%d of %d checks failed; first: %s", err_failed,
		     err_checks, err_first);
	note("%d checks", err_checks);
	pass();
	return 0;
}

/* A call that must return -1 with errno @want (any errno if @want is 0). */
#define EXPECT_ERR(call, want)                                                 \
	do {                                                                   \
		int r_, e_;                                                    \
		errno = 0;                                                     \
		r_ = (call);                                                   \
		e_ = errno;                                                    \
		err_result(r_ == -1 && (!(want) || e_ == (want)),              \
			   "%s = %d, errno %d (%s), want -1/%s", #call, r_,    \
			   e_, strerror(e_), (want) ? strerror(want) : "any"); \
	} while (0)

/* The same host part with the last byte(s) changed: nobody has it. */
static void nobody_addr(const char *addr, struct sockaddr_storage *ss)
{
	parse_addr(addr, 4791, ss);
	if (ss->ss_family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;
		uint32_t a = ntohl(sin->sin_addr.s_addr);

		sin->sin_addr.s_addr = htonl((a & ~0xffu) | 99);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_addr.s6_addr[14] = 0;
		sin6->sin6_addr.s6_addr[15] = 0x99;
	}
}

static int cmd_errors(int argc, char **argv)
{
	struct rdma_event_channel *ch = make_channel();
	struct sockaddr_storage ss, nobody, foreign;
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct ibv_context **devs;
	struct rdma_cm_id *id, *sync_id;
	struct sockaddr_un sun;
	int one = 1, ndev = -1, r;
	uint8_t tos = 0;
	char b1[80];
	double t0;

	(void)argc;
	memset(&cp, 0, sizeof(cp));
	cp.qp_num = 0x123;
	cp.responder_resources = 1;
	cp.initiator_depth = 1;

	STAGE("errors: devices");
	devs = rdma_get_devices(&ndev);
	err_result(devs && ndev >= 1, "rdma_get_devices gives %d devices",
		   ndev);
	if (devs) {
		int i;

		for (i = 0; i < ndev; i++)
			if (!devs[i]) {
				err_result(false, "device %d of %d is NULL", i,
					   ndev);
				break;
			}
		err_result(devs[ndev] == NULL,
			   "rdma_get_devices list is NULL-terminated");
		for (i = 0; i < ndev && devs[i]; i++)
			note("device %d: %s", i,
			     ibv_get_device_name(devs[i]->device));
		rdma_free_devices(devs);
	}

	STAGE("errors: ids without addresses");
	EXPECT_ERR(rdma_create_id(ch, &id, NULL, (enum rdma_port_space)0x7777),
		   EINVAL);
	TRY(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	EXPECT_ERR(rdma_connect(id, &cp), EINVAL);
	EXPECT_ERR(rdma_connect(id, NULL), EINVAL);
	EXPECT_ERR(
		rdma_set_option(id, 42, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)),
		ENOPROTOOPT);
	EXPECT_ERR(rdma_set_option(id, RDMA_OPTION_ID, 4242, &tos, sizeof(tos)),
		   ENOPROTOOPT);
	EXPECT_ERR(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR,
				   &one, 1),
		   EINVAL);
	r = rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one,
			    sizeof(one));
	err_result(r == 0, "rdma_set_option(REUSEADDR, int) = %d (%s)", r,
		   r ? strerror(errno) : "ok");
	r = rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
			    sizeof(tos));
	err_result(r == 0, "rdma_set_option(TOS, uint8_t) = %d (%s)", r,
		   r ? strerror(errno) : "ok");
	/* rdma_get_option (a fork extension) reads back what was set. */
	tos = 0x20;
	TRY(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
			    sizeof(tos)));
	tos = 0;
	r = rdma_get_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
			    sizeof(tos));
	err_result(r == 0 && tos == 0x20, "rdma_get_option(TOS) = %d, tos 0x%x",
		   r, tos);
	tos = 0;
	parse_addr(argv[0], 0, &ss);
	EXPECT_ERR(rdma_leave_multicast(id, (struct sockaddr *)&ss),
		   EADDRNOTAVAIL);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/nonexistent");
	EXPECT_ERR(rdma_bind_addr(id, (struct sockaddr *)&sun), EAFNOSUPPORT);
	EXPECT_ERR(rdma_bind_addr(id, NULL), EINVAL);
	EXPECT_ERR(rdma_resolve_addr(id, NULL, NULL, 1000), EINVAL);
	EXPECT_ERR(rdma_resolve_addr(id, NULL, (struct sockaddr *)&sun, 1000),
		   EAFNOSUPPORT);
	EXPECT_ERR(rdma_get_request(id, &sync_id), EINVAL);
	EXPECT_ERR(rdma_accept(id, NULL), 0);
	EXPECT_ERR(rdma_accept(id, &cp), 0);
	EXPECT_ERR(rdma_write_cm_event(NULL, RDMA_CM_EVENT_USER, 0, 42),
		   EINVAL);
	EXPECT_ERR(rdma_disconnect(id), 0);
	/* The kernel refuses a foreign address (TEST-NET-2 is nobody's). */
	parse_addr("198.51.100.7", 0, &foreign);
	if (ss.ss_family == AF_INET6)
		parse_addr("2001:db8:dead::7", 0, &foreign);
	EXPECT_ERR(rdma_bind_addr(id, (struct sockaddr *)&foreign),
		   EADDRNOTAVAIL);

	STAGE("errors: bound id");
	TRY(rdma_bind_addr(id, (struct sockaddr *)&ss));
	note("bound to %s", addr_str(rdma_get_local_addr(id), b1, sizeof(b1)));
	err_result(id->verbs != NULL, "a bound id has a verbs context");
	EXPECT_ERR(rdma_bind_addr(id, (struct sockaddr *)&ss), EINVAL);
	EXPECT_ERR(rdma_connect(id, &cp), EINVAL);
	EXPECT_ERR(rdma_accept(id, &cp), 0);
	EXPECT_ERR(rdma_leave_multicast(id, (struct sockaddr *)&ss),
		   EADDRNOTAVAIL);
	EXPECT_ERR(rdma_get_request(id, &sync_id), EINVAL);
	TRY(rdma_destroy_id(id));

	STAGE("errors: id with only its address resolved");
	TRY(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	parse_addr(argv[0], 4791, &ss);
	TRY(rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, 2000));
	expect_and_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED, id, "errors");
	EXPECT_ERR(rdma_connect(id, &cp), EINVAL);
	TRY(rdma_destroy_id(id));

	STAGE("errors: resolve an address nobody has");
	nobody_addr(argv[0], &nobody);
	TRY(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	t0 = now_s();
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&nobody, 500)) {
		/* Failing at once is fine too. */
		err_result(errno != 0, "resolve %s fails at once: %s",
			   addr_str((struct sockaddr *)&nobody, b1, sizeof(b1)),
			   strerror(errno));
	} else {
		ev = get_event(ch, event_timeout_ms);
		if (!ev) {
			err_result(false, "no event %d ms after resolving %s",
				   event_timeout_ms,
				   addr_str((struct sockaddr *)&nobody, b1,
					    sizeof(b1)));
		} else {
			err_result(ev->event == RDMA_CM_EVENT_ADDR_ERROR ||
					   ev->event ==
						   RDMA_CM_EVENT_ROUTE_ERROR ||
					   ev->event ==
						   RDMA_CM_EVENT_UNREACHABLE,
				   "resolving %s gives %s (status %d) after "
				   "%.2f s",
				   addr_str((struct sockaddr *)&nobody, b1,
					    sizeof(b1)),
				   rdma_event_str(ev->event), ev->status,
				   now_s() - t0);
			err_result(ev->id == id,
				   "the error event names the id");
			rdma_ack_cm_event(ev);
		}
	}
	TRY(rdma_destroy_id(id));

	STAGE("errors: synchronous ids and events");
	TRY(rdma_create_id(NULL, &sync_id, NULL, RDMA_PS_TCP));
	err_result(sync_id->channel != NULL,
		   "a synchronous id has a private channel");
	/* (rdma_get_request on a synchronous id that is not listening
	 * blocks, as in rdma-core: not tested.) */
	EXPECT_ERR(rdma_get_request(NULL, &id), EINVAL);
	EXPECT_ERR(rdma_get_request(sync_id, NULL), EINVAL);
	TRY(rdma_destroy_id(sync_id));
	EXPECT_ERR(rdma_get_cm_event(NULL, &ev), EINVAL);
	EXPECT_ERR(rdma_ack_cm_event(NULL), EINVAL);
	EXPECT_ERR(rdma_destroy_id(NULL), EINVAL);
	{
		int fl = fcntl(ch->fd, F_GETFL);

		TRY(fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK));
		EXPECT_ERR(rdma_get_cm_event(ch, &ev), EAGAIN);
		TRY(fcntl(ch->fd, F_SETFL, fl));
	}
	err_result(!strcmp(rdma_event_str(RDMA_CM_EVENT_ESTABLISHED),
			   "RDMA_CM_EVENT_ESTABLISHED"),
		   "rdma_event_str(ESTABLISHED)");
	err_result(rdma_event_str((enum rdma_cm_event_type)1000) != NULL,
		   "rdma_event_str(1000) is not NULL");
	rdma_destroy_event_channel(ch);

	return err_verdict();
}

/* --- iWARP: what it cannot do ---------------------------------------------- */

/* Join @group through rdma_set_option, as a socket would. */
static int join_by_option(struct rdma_cm_id *id, const struct sockaddr *group)
{
	if (group->sa_family == AF_INET) {
		struct ip_mreq m;

		memset(&m, 0, sizeof(m));
		m.imr_multiaddr = ((const struct sockaddr_in *)group)->sin_addr;
		return rdma_set_option(id, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP,
				       &m, sizeof(m));
	} else {
		struct ipv6_mreq m;

		memset(&m, 0, sizeof(m));
		m.ipv6mr_multiaddr =
			((const struct sockaddr_in6 *)group)->sin6_addr;
		return rdma_set_option(id, RDMA_OPTION_IPV6, IPV6_JOIN_GROUP,
				       &m, sizeof(m));
	}
}

/*
 * On an iWARP device, datagram and multicast calls fail at once with
 * EOPNOTSUPP (rdma_cm(7)) instead of reaching iw_cm or the provider: a
 * RDMA_PS_UDP id resolved to the device cannot get a UD QP, connect,
 * listen or rdma_sendto; no id can join a multicast group, by
 * rdma_join_multicast or by option.  SKIP on other transports.
 */
static int cmd_iwarp_errors(int argc, char **argv)
{
	struct rdma_event_channel *ch = make_channel();
	struct sockaddr_storage ss, grp;
	struct ibv_qp_init_attr qpa;
	struct rdma_addrinfo hints, *res;
	struct ibv_send_wr wr;
	struct rdma_conn_param cp;
	struct rdma_cm_id *id, *ep;
	char b1[80];
	int r;

	(void)argc;
	parse_addr(argv[0], 0, &ss);
	parse_addr(argv[1], 0, &grp);
	memset(&cp, 0, sizeof(cp));
	memset(&qpa, 0, sizeof(qpa));
	qpa.qp_type = IBV_QPT_UD;
	qpa.cap.max_send_wr = qpa.cap.max_recv_wr = 4;
	qpa.cap.max_send_sge = qpa.cap.max_recv_sge = 1;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;

	STAGE("iwarp_errors: UDP id resolved to the device");
	TRY(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP));
	parse_addr(argv[0], 4791, &ss);
	TRY(rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, 2000));
	expect_and_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED, id, "udp id");
	if (!is_iwarp(id))
		skip("the device is not iWARP");
	note("%s is on iWARP device %s",
	     addr_str((struct sockaddr *)&ss, b1, sizeof(b1)),
	     ibv_get_device_name(id->verbs->device));
	EXPECT_ERR(rdma_create_qp(id, NULL, &qpa), EOPNOTSUPP);
	TRY(rdma_resolve_route(id, 2000));
	expect_and_ack(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, id, "udp id");
	EXPECT_ERR(rdma_connect(id, &cp), EOPNOTSUPP);
	EXPECT_ERR(rdma_join_multicast(id, (struct sockaddr *)&grp, NULL),
		   EOPNOTSUPP);
	EXPECT_ERR(join_by_option(id, (struct sockaddr *)&grp), EOPNOTSUPP);
	EXPECT_ERR(rdma_sendto(id, &wr, (struct sockaddr *)&ss), EOPNOTSUPP);
	TRY(rdma_destroy_id(id));

	STAGE("iwarp_errors: UDP listener on the device");
	TRY(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP));
	parse_addr(argv[0], 0, &ss);
	TRY(rdma_bind_addr(id, (struct sockaddr *)&ss));
	EXPECT_ERR(rdma_listen(id, 1), EOPNOTSUPP);
	TRY(rdma_destroy_id(id));

	STAGE("iwarp_errors: TCP id");
	TRY(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	TRY(rdma_bind_addr(id, (struct sockaddr *)&ss));
	EXPECT_ERR(rdma_join_multicast(id, (struct sockaddr *)&grp, NULL),
		   EOPNOTSUPP);
	EXPECT_ERR(join_by_option(id, (struct sockaddr *)&grp), EOPNOTSUPP);
	EXPECT_ERR(rdma_create_qp(id, NULL, &qpa), EOPNOTSUPP);
	EXPECT_ERR(rdma_sendto(id, &wr, (struct sockaddr *)&ss), EOPNOTSUPP);
	/* Only the checks are refused: an RC QP still works. */
	qpa.qp_type = IBV_QPT_RC;
	r = rdma_create_qp(id, NULL, &qpa);
	err_result(r == 0, "an RC QP on the same id: %d (%s)", r,
		   r ? strerror(errno) : "ok");
	if (!r)
		rdma_destroy_qp(id);
	TRY(rdma_destroy_id(id));

	STAGE("iwarp_errors: rdma_create_ep with a datagram hint");
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_UDP;
	hints.ai_qp_type = IBV_QPT_UD;
	r = rdma_getaddrinfo(argv[0], "7999", &hints, &res);
	err_result(r == 0, "rdma_getaddrinfo(%s, UDP) = %d", argv[0], r);
	if (!r) {
		qpa.qp_type = IBV_QPT_UD;
		EXPECT_ERR(rdma_create_ep(&ep, res, NULL, &qpa), EOPNOTSUPP);
		rdma_freeaddrinfo(res);
	}
	rdma_destroy_event_channel(ch);

	return err_verdict();
}

/* --- UD ------------------------------------------------------------------- */

#define GRH_LEN 40
/* The kernel's own "operation not supported" errno, leaked to user space. */
#define KERNEL_ENOTSUPP 524

static int cmd_ud(int argc, char **argv)
{
	const char *src = argc > 1 ? argv[1] : NULL;
	struct end srv = {.who = "ud server"}, cli = {.who = "ud client"};
	struct rdma_event_channel *sch = make_channel(), *cch = make_channel();
	struct rdma_ud_param ud;
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *listen;
	struct ibv_ah *ah, *reply_ah;
	struct ibv_wc wc, rwc;
	uint16_t port;
	int r;

	listen = make_listener(sch, argv[0], RDMA_PS_UDP, &port);
	CHECK(listen->qp_type == IBV_QPT_UD, "RDMA_PS_UDP id qp_type %d",
	      listen->qp_type);
	TRY(rdma_create_id(cch, &cli.id, &cli, RDMA_PS_UDP));
	client_resolve(cch, cli.id, src, argv[0], port);
	make_qp(&cli, IBV_QPT_UD);
	reg_bufs(&cli);
	post_recv(&cli);

	memset(&cp, 0, sizeof(cp));
	cp.private_data = cli_pdata;
	cp.private_data_len = sizeof(cli_pdata);
	STAGE("ud rdma_connect (SIDR)");
	TRY(rdma_connect(cli.id, &cp));
	ev = expect_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL,
			  "ud server");
	CHECK(ev->listen_id == listen, "CONNECT_REQUEST listen_id");
	srv.id = ev->id;
	check_pdata(ev->param.ud.private_data, ev->param.ud.private_data_len,
		    cli_pdata, "UD CONNECT_REQUEST");
	CHECK(srv.id->qp_type == IBV_QPT_UD && srv.id->ps == RDMA_PS_UDP,
	      "new UD id qp_type %d ps %d", srv.id->qp_type, srv.id->ps);
	TRY(rdma_ack_cm_event(ev));
	make_qp(&srv, IBV_QPT_UD);
	reg_bufs(&srv);
	post_recv(&srv);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = srv_pdata;
	cp.private_data_len = sizeof(srv_pdata);
	STAGE("ud rdma_accept (SIDR reply)");
	TRY(rdma_accept(srv.id, &cp));

	ev = expect_event(cch, RDMA_CM_EVENT_ESTABLISHED, cli.id, "ud client");
	ud = ev->param.ud;
	note("ud ESTABLISHED: remote qpn 0x%x (server QP 0x%x), qkey 0x%x, "
	     "is_global %u, port %u",
	     ud.qp_num, srv.id->qp->qp_num, ud.qkey, ud.ah_attr.is_global,
	     ud.ah_attr.port_num);
	check_pdata(ud.private_data, ud.private_data_len, srv_pdata,
		    "UD ESTABLISHED");
	CHECK(ud.qp_num == srv.id->qp->qp_num,
	      "ESTABLISHED qp_num 0x%x, server QP is 0x%x", ud.qp_num,
	      srv.id->qp->qp_num);
	CHECK(ud.qkey == RDMA_UDP_QKEY, "qkey 0x%x, want 0x%x", ud.qkey,
	      RDMA_UDP_QKEY);
	CHECK(ud.ah_attr.port_num == cli.id->port_num,
	      "ah_attr port %u, id port %u", ud.ah_attr.port_num,
	      cli.id->port_num);
	STAGE("ibv_create_ah from ESTABLISHED");
	ah = ibv_create_ah(cli.id->pd, &ud.ah_attr);
	if (!ah)
		fail("ibv_create_ah from the ESTABLISHED ah_attr: %s",
		     strerror(errno));
	TRY(rdma_ack_cm_event(ev));
	/* The server's id gets no event for a SIDR accept. */
	expect_no_event(sch, 100, "ud server after accept");

	STAGE("ud send client -> server");
	snprintf(cli.sbuf, sizeof(cli.sbuf), "ud datagram from client");
	TRY(rdma_post_ud_send(cli.id, cli.sbuf, cli.sbuf, strlen(cli.sbuf) + 1,
			      cli.smr, IBV_SEND_SIGNALED, ah, ud.qp_num));
	r = rdma_get_send_comp(cli.id, &wc);
	CHECK(r == 1 && wc.status == IBV_WC_SUCCESS,
	      "ud send completion: %d, %s", r,
	      r == 1 ? ibv_wc_status_str(wc.status) : strerror(errno));
	recv_msg_wc(&srv, "ud datagram from client", GRH_LEN, &rwc);
	CHECK(rwc.src_qp == cli.id->qp->qp_num,
	      "datagram from QP 0x%x, client QP is 0x%x", rwc.src_qp,
	      cli.id->qp->qp_num);

	/* The reply goes back along the received datagram's path. */
	STAGE("ud reply server -> client");
	reply_ah = ibv_create_ah_from_wc(
		srv.id->pd, &rwc, (struct ibv_grh *)srv.rbuf, srv.id->port_num);
	if (!reply_ah)
		fail("ibv_create_ah_from_wc: %s", strerror(errno));
	snprintf(srv.sbuf, sizeof(srv.sbuf), "ud datagram from server");
	TRY(rdma_post_ud_send(srv.id, srv.sbuf, srv.sbuf, strlen(srv.sbuf) + 1,
			      srv.smr, IBV_SEND_SIGNALED, reply_ah,
			      rwc.src_qp));
	r = rdma_get_send_comp(srv.id, &wc);
	CHECK(r == 1 && wc.status == IBV_WC_SUCCESS,
	      "ud reply completion: %d, %s", r,
	      r == 1 ? ibv_wc_status_str(wc.status) : strerror(errno));
	recv_msg(&cli, "ud datagram from server", GRH_LEN);

	STAGE("ud teardown");
	TRY(ibv_destroy_ah(ah));
	TRY(ibv_destroy_ah(reply_ah));
	destroy_end(&srv);
	destroy_end(&cli);
	TRY(rdma_destroy_id(listen));
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
	pass();
	return 0;
}

/* --- multicast ------------------------------------------------------------ */

/*
 * The sender joins as a send-only full member (rdma_join_multicast_ex, as
 * mckey -o does: its QP is not attached to the group), the receiver with
 * rdma_join_multicast.
 */
static int mcast_join(struct end *e, struct sockaddr *group, void *ctx,
		      bool send_only)
{
	struct rdma_cm_join_mc_attr_ex attr;

	if (!send_only)
		return rdma_join_multicast(e->id, group, ctx);
	memset(&attr, 0, sizeof(attr));
	attr.comp_mask =
		RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	attr.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	attr.addr = group;
	return rdma_join_multicast_ex(e->id, &attr, ctx);
}

static int cmd_mcast(int argc, char **argv)
{
	struct rdma_event_channel *ch = make_channel(), *ch2;
	struct end m[2] = {{.who = "mcast sender"}, {.who = "mcast receiver"}};
	const char *addr2 = argc > 2 ? argv[2] : argv[0];
	struct sockaddr_storage group, bind_addr;
	struct rdma_ud_param ud[2];
	struct rdma_cm_event *ev;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	int ctx[2], i, r;

	if (argc < 2)
		fail("usage: mcast <addr> <group> [<addr2>]");
	parse_addr(argv[1], 0, &group);
	for (i = 0; i < 2; i++) {
		STAGE("mcast: create, bind, QP");
		TRY(rdma_create_id(ch, &m[i].id, &m[i], RDMA_PS_UDP));
		parse_addr(i ? addr2 : argv[0], 0, &bind_addr);
		TRY(rdma_bind_addr(m[i].id, (struct sockaddr *)&bind_addr));
		CHECK(m[i].id->verbs, "bound UD id without verbs");
		make_qp(&m[i], IBV_QPT_UD);
		reg_bufs(&m[i]);
		post_recv(&m[i]);
		STAGE("mcast: join");
		if (mcast_join(&m[i], (struct sockaddr *)&group, &ctx[i], !i)) {
			/*
			 * Linux (6.1 at least) refuses IPv6 groups on RoCE v2
			 * GIDs with the kernel-internal ENOTSUPP (524).
			 */
			if (errno == KERNEL_ENOTSUPP &&
			    group.ss_family == AF_INET6)
				skip("the kernel does not support IPv6 "
				     "multicast on this device "
				     "(rdma_join_multicast: errno 524, "
				     "ENOTSUPP)");
			fail("%s: %s (errno %d)",
			     i ? "rdma_join_multicast"
			       : "rdma_join_multicast_ex (send-only)",
			     strerror(errno), errno);
		}
		ev = expect_event(ch, RDMA_CM_EVENT_MULTICAST_JOIN, m[i].id,
				  m[i].who);
		ud[i] = ev->param.ud;
		CHECK(ud[i].private_data == &ctx[i],
		      "MULTICAST_JOIN private_data %p is not the join context "
		      "%p",
		      ud[i].private_data, (void *)&ctx[i]);
		note("%s joined: qpn 0x%x qkey 0x%x is_global %u dlid 0x%x",
		     m[i].who, ud[i].qp_num, ud[i].qkey,
		     ud[i].ah_attr.is_global, ud[i].ah_attr.dlid);
		CHECK(ud[i].qp_num == 0xFFFFFF,
		      "join qp_num 0x%x, want 0xFFFFFF", ud[i].qp_num);
		CHECK(ud[i].ah_attr.is_global, "join ah_attr has no GRH");
		TRY(rdma_ack_cm_event(ev));
	}
	CHECK(!memcmp(&ud[0].ah_attr.grh.dgid, &ud[1].ah_attr.grh.dgid, 16),
	      "the two joins report different MGIDs");

	/*
	 * The kernel counts a group's events on the id too: migrating an id
	 * that has had a MULTICAST_JOIN must not wait for ever.
	 */
	STAGE("mcast: rdma_migrate_id after a join");
	ch2 = make_channel();
	TRY(rdma_migrate_id(m[1].id, ch2));
	TRY(rdma_migrate_id(m[1].id, ch));
	rdma_destroy_event_channel(ch2);

	STAGE("mcast: send to the group");
	ah = ibv_create_ah(m[0].id->pd, &ud[0].ah_attr);
	if (!ah)
		fail("ibv_create_ah from the join event: %s", strerror(errno));
	snprintf(m[0].sbuf, sizeof(m[0].sbuf), "multicast datagram");
	/* The group's Q_Key is RDMA_UDP_QKEY, which rdma_post_ud_send uses. */
	CHECK(ud[0].qkey == RDMA_UDP_QKEY, "group qkey 0x%x", ud[0].qkey);
	TRY(rdma_post_ud_send(m[0].id, m[0].sbuf, m[0].sbuf,
			      strlen(m[0].sbuf) + 1, m[0].smr,
			      IBV_SEND_SIGNALED, ah, ud[0].qp_num));
	r = rdma_get_send_comp(m[0].id, &wc);
	CHECK(r == 1 && wc.status == IBV_WC_SUCCESS,
	      "multicast send completion: %d, %s", r,
	      r == 1 ? ibv_wc_status_str(wc.status) : strerror(errno));
	STAGE("mcast: receive on the second member");
	recv_msg(&m[1], "multicast datagram", GRH_LEN);

	STAGE("mcast: leave");
	for (i = 0; i < 2; i++) {
		TRY(rdma_leave_multicast(m[i].id, (struct sockaddr *)&group));
		errno = 0;
		r = rdma_leave_multicast(m[i].id, (struct sockaddr *)&group);
		CHECK(r == -1 && errno == EADDRNOTAVAIL, "second leave: %d, %s",
		      r, strerror(errno));
	}
	TRY(ibv_destroy_ah(ah));
	expect_no_event(ch, 100, "mcast after leave");
	for (i = 0; i < 2; i++)
		destroy_end(&m[i]);
	rdma_destroy_event_channel(ch);
	pass();
	return 0;
}

/* --- libevents: events the library makes itself ------------------------- */

struct delayed_write {
	struct rdma_cm_id *id;
	uint64_t arg;
};

static void *write_event_later(void *arg)
{
	struct delayed_write *dw = arg;

	usleep(100 * 1000);
	if (rdma_write_cm_event(dw->id, RDMA_CM_EVENT_USER, 0, dw->arg))
		fail("rdma_write_cm_event from a thread: %s", strerror(errno));
	return NULL;
}

/*
 * The kernel fd and the timerfd inside a channel's epoll set are the
 * library's own: numbered 500 and up (half of a lower RLIMIT_NOFILE), away
 * from the numbers the program reuses.  /proc's fdinfo of an epoll set
 * lists its members as "tfd: N".
 */
static void check_epoll_members_high(int epfd)
{
	struct rlimit rl;
	char path[64], line[256];
	int n = 0, fd, floor = 500;
	FILE *f;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur <= 500)
		floor = (int)(rl.rlim_cur / 2);
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", epfd);
	f = fopen(path, "re");
	CHECK(f, "open %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "tfd: %d", &fd) != 1)
			continue;
		CHECK(fd >= floor, "channel member fd %d below %d", fd, floor);
		CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC,
		      "channel member fd %d not close-on-exec", fd);
		n++;
	}
	fclose(f);
	CHECK(n == 2, "%d fds in the channel's epoll set, want 2", n);
}

static int cmd_libevents(int argc, char **argv)
{
	struct delayed_write dw;
	struct rdma_event_channel *ch;
	struct rdma_addrinfo *info;
	struct sockaddr_storage dst;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	pthread_t thread;
	int flags, r;

	(void)argc;
	ch = make_channel();
	TRY(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));

	STAGE("libevents: a write from another thread wakes poll()");
	dw.id = id;
	dw.arg = 0x5eed;
	CHECK(!pthread_create(&thread, NULL, write_event_later, &dw),
	      "pthread_create");
	ev = expect_event(ch, RDMA_CM_EVENT_USER, id, "user event");
	CHECK(ev->param.arg == 0x5eed, "user event arg %#" PRIx64,
	      (uint64_t)ev->param.arg);
	TRY(rdma_ack_cm_event(ev));
	pthread_join(thread, NULL);

	STAGE("libevents: a non-blocking channel says EAGAIN");
	flags = fcntl(ch->fd, F_GETFL);
	TRY(fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK));
	errno = 0;
	r = rdma_get_cm_event(ch, &ev);
	CHECK(r == -1 && errno == EAGAIN, "empty non-blocking channel: %d, %s",
	      r, strerror(errno));
	TRY(fcntl(ch->fd, F_SETFL, flags));

	STAGE("libevents: asynchronous rdma_resolve_addrinfo");
	TRY(rdma_resolve_addrinfo(id, argv[0], "7471", NULL));
	expect_and_ack(ch, RDMA_CM_EVENT_ADDRINFO_RESOLVED, id, "addrinfo");
	TRY(rdma_query_addrinfo(id, &info));
	CHECK(info && info->ai_dst_addr, "no destination resolved");
	rdma_freeaddrinfo(info);

	STAGE("libevents: a failing rdma_resolve_addrinfo");
	/* A service /etc/services lacks: no DNS involved. */
	TRY(rdma_resolve_addrinfo(id, argv[0], "no-such-rdma-service", NULL));
	ev = expect_event(ch, RDMA_CM_EVENT_ADDRINFO_ERROR, id, "addrinfo");
	CHECK(ev->status < 0, "ADDRINFO_ERROR status %d, want a -errno",
	      ev->status);
	TRY(rdma_ack_cm_event(ev));

	STAGE("libevents: kernel and library events interleave");
	parse_addr(argv[0], 4791, &dst);
	TRY(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000));
	TRY(rdma_write_cm_event(id, RDMA_CM_EVENT_USER, 3, 9));
	ev = expect_event(ch, RDMA_CM_EVENT_USER, id, "user before kernel");
	CHECK(ev->status == 3 && ev->param.arg == 9, "user event fields");
	TRY(rdma_ack_cm_event(ev));
	expect_and_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED, id, "kernel event");

	STAGE("libevents: the channel's own descriptors sit at 500 and up");
	check_epoll_members_high(ch->fd);

	STAGE("libevents: destroy with an unread library event");
	TRY(rdma_write_cm_event(id, RDMA_CM_EVENT_USER, 0, 1));
	TRY(rdma_destroy_id(id));
	expect_no_event(ch, 100, "after destroying the id");
	rdma_destroy_event_channel(ch);
	pass();
	return 0;
}

/* --- whichlib ------------------------------------------------------------- */

static int cmd_whichlib(int argc, char **argv)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 128];
	int found = 0;

	(void)argc;
	(void)argv;
	if (!f)
		fail("open /proc/self/maps: %s", strerror(errno));
	/* Make sure the library is really mapped (it is linked, so it is). */
	(void)rdma_event_str(RDMA_CM_EVENT_ESTABLISHED);
	while (fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/');

		if (!path || !strstr(path, "/librdmacm.so"))
			continue;
		path[strcspn(path, "\n")] = 0;
		printf("%s\n", path);
		found = 1;
		break;
	}
	fclose(f);
	if (!found)
		fail("librdmacm.so is not mapped");
	return 0;
}

/* --- main ----------------------------------------------------------------- */

static const struct cmd {
	const char *name;
	int min_args;
	const char *usage;
	int (*fn)(int argc, char **argv);
} cmds[] = {
	{"rc_async", 1, "<addr> [<client-src>]", cmd_rc_async},
	{"rc_server_disconnect", 1, "<addr> [<client-src>]",
	 cmd_rc_server_disconnect},
	{"rc_sync", 1, "<addr> [<client-src>]", cmd_rc_sync},
	{"sync_reject", 1, "<addr>", cmd_sync_reject},
	{"reject", 1, "<addr> [<client-src>]", cmd_reject},
	{"reject_ece", 1, "<addr> [<client-src>]", cmd_reject_ece},
	{"srq", 1, "<addr> [<client-src>]", cmd_srq},
	{"timewait", 1, "<addr> [<client-src>]", cmd_timewait},
	{"addr_change", 2, "<addr-on-a-bond> <fail-over-command>",
	 cmd_addr_change},
	{"ud_reject", 1, "<addr> [<client-src>]", cmd_ud_reject},
	{"unreachable", 2, "<silent-peer-addr> <local-src>", cmd_unreachable},
	{"connect_error", 1, "<addr> [<client-src>]", cmd_connect_error},
	{"migrate", 1, "<addr>", cmd_migrate},
	{"libevents", 1, "<addr>", cmd_libevents},
	{"cycles", 1, "<addr> [<N>=200] [<client-src>]", cmd_cycles},
	{"errors", 1, "<addr>", cmd_errors},
	{"ud", 1, "<addr> [<client-src>]", cmd_ud},
	{"mcast", 2, "<addr> <group> [<addr2>]", cmd_mcast},
	{"iwarp_errors", 2, "<addr> <group>", cmd_iwarp_errors},
	{"whichlib", 0, "", cmd_whichlib},
};

static void usage(void)
{
	size_t i;

	fprintf(stderr, "usage: cm_sys_test <scenario> [args]\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(stderr, "  %s %s\n", cmds[i].name, cmds[i].usage);
}

int main(int argc, char **argv)
{
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		usage();
		return 2;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv[1], cmds[i].name))
			continue;
		if (argc - 2 < cmds[i].min_args) {
			usage();
			return 2;
		}
		test_name = cmds[i].name;
		start_watchdog();
		return cmds[i].fn(argc - 2, argv + 2);
	}
	usage();
	return 2;
}
