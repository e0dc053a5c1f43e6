// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer-to-peer mode scenarios that need one process playing both sides,
 * or a binary bound to the old symbol versions:
 *
 *   cm_p2p_test oldabi ADDR     RDMACM_1.0 rdma_connect/rdma_accept with
 *                               0xff in peer2peer_mode's byte: ordinary
 *                               connection; the fork versions with 0xff:
 *                               p2p (the request is held)
 *   cm_p2p_test surface ADDR    a p2p request at a listener with
 *                               RDMA_OPTION_ID_PEER2PEER = 0: surfaced at
 *                               once, header stripped, peer2peer_mode set;
 *                               a p2p accept answers in kind; no listener:
 *                               EADDRNOTAVAIL
 *   cm_p2p_test plain ADDR      non-p2p connect to a p2p listener, and a p2p
 *                               connect answered by an old-version accept:
 *                               both as rdma-core behaves
 *   cm_p2p_test hostile ADDR    malformed p2p headers are refused (REJECTED,
 *                               never surfaced)
 *   cm_p2p_test held ADDR       (RDMA_CM_P2P_HOLD_MS=1000) a p2p request
 *                               no local connect claims surfaces after the
 *                               hold time
 *   cm_p2p_test giveup ADDR     (RDMA_CM_P2P_HOLD_MS=1000) a p2p connect
 *                               whose REQ a p2p listener holds and no
 *                               local connect claims: UNREACHABLE,
 *                               -ETIMEDOUT, after 2 x 1 s + 2 s, not the
 *                               kernel's many minutes
 *
 * Reporting, the watchdog and event waits are the system-test harness's
 * (harness.h); the channel is non-blocking, as rdma_cm_p2p(7) asks of
 * programs that poll.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "harness.h"

/* The entry points binaries built against rdma-core's header bind to. */
int rdma_connect_old(struct rdma_cm_id *id, struct rdma_conn_param *param);
int rdma_accept_old(struct rdma_cm_id *id, struct rdma_conn_param *param);
__asm__(".symver rdma_connect_old, rdma_connect@RDMACM_1.0");
__asm__(".symver rdma_accept_old, rdma_accept@RDMACM_1.0");

static struct rdma_event_channel *ch;
static struct sockaddr_storage base;

static struct sockaddr *addr_port(unsigned short port)
{
	static struct sockaddr_storage ss;

	ss = base;
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
	return (struct sockaddr *)&ss;
}

#define EVENT_MS 5000

static struct rdma_cm_event *expect(enum rdma_cm_event_type type,
				    struct rdma_cm_id *id)
{
	return hx_expect_event_for(ch, type, id, "the channel");
}

static void expect_none(int ms)
{
	hx_expect_quiet(ch, ms, "the channel");
}

static struct rdma_cm_id *listener(unsigned short port, int p2p_opt)
{
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		hx_fail("rdma_create_id: %s", strerror(errno));
	if (p2p_opt >= 0 &&
	    rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_PEER2PEER,
			    &p2p_opt, sizeof(p2p_opt)))
		hx_fail("set PEER2PEER: %s", strerror(errno));
	if (rdma_bind_addr(id, addr_port(port)) || rdma_listen(id, 8))
		hx_fail("bind/listen %u: %s", port, strerror(errno));
	return id;
}

static void make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr = {
		.cap = {.max_send_wr = 1,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
	};

	if (rdma_create_qp(id, NULL, &attr))
		hx_fail("rdma_create_qp: %s", strerror(errno));
}

/* An id with a QP, its route resolved towards @port. */
static struct rdma_cm_id *client(unsigned short port)
{
	struct rdma_cm_event *e;
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		hx_fail("rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(id, NULL, addr_port(port), 2000))
		hx_fail("rdma_resolve_addr: %s", strerror(errno));
	e = expect(RDMA_CM_EVENT_ADDR_RESOLVED, id);
	rdma_ack_cm_event(e);
	if (rdma_resolve_route(id, 2000))
		hx_fail("rdma_resolve_route: %s", strerror(errno));
	e = expect(RDMA_CM_EVENT_ROUTE_RESOLVED, id);
	rdma_ack_cm_event(e);
	make_qp(id);
	return id;
}

static struct rdma_conn_param param(const char *data, uint8_t p2p)
{
	struct rdma_conn_param p = {
		.private_data = data,
		.private_data_len = data ? (uint8_t)(strlen(data) + 1) : 0,
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 7,
		.rnr_retry_count = 7,
		.peer2peer_mode = p2p,
	};
	return p;
}

static void check_data(const struct rdma_cm_event *e, const char *want,
		       uint8_t p2p, const char *what)
{
	const struct rdma_conn_param *p = &e->param.conn;

	if (p->peer2peer_mode != p2p)
		hx_fail("%s: peer2peer_mode %u, expected %u", what,
			p->peer2peer_mode, p2p);
	if (!p->private_data || p->private_data_len < strlen(want) + 1 ||
	    memcmp(p->private_data, want, strlen(want) + 1))
		hx_fail("%s: private data (%u bytes) is not \"%s\"", what,
			p->private_data_len, want);
	if (p2p && p->private_data_len != strlen(want) + 1)
		hx_fail("%s: %u bytes of private data, expected exactly %zu",
			what, p->private_data_len, strlen(want) + 1);
}

/* Accept the CONNECT_REQUEST @req and see both ESTABLISHED events. */
static void finish(struct rdma_cm_event *req, struct rdma_cm_id *cl,
		   int (*acc)(struct rdma_cm_id *, struct rdma_conn_param *),
		   const char *reply, uint8_t p2p_accept, uint8_t p2p_seen)
{
	struct rdma_cm_id *sv = req->id;
	struct rdma_conn_param p = param(reply, p2p_accept);
	struct rdma_cm_event *e;
	int got_cl = 0, got_sv = 0;

	rdma_ack_cm_event(req);
	make_qp(sv);
	if (acc(sv, &p))
		hx_fail("rdma_accept: %s", strerror(errno));
	while (!got_cl || !got_sv) {
		e = expect(RDMA_CM_EVENT_ESTABLISHED, NULL);
		if (e->id == cl) {
			check_data(e, reply, p2p_seen, "client ESTABLISHED");
			got_cl++;
		} else if (e->id == sv) {
			got_sv++;
		} else {
			hx_fail("ESTABLISHED on an unknown id");
		}
		rdma_ack_cm_event(e);
	}
	rdma_disconnect(cl);
	for (got_cl = 0; got_cl < 2; got_cl++) {
		e = expect(RDMA_CM_EVENT_DISCONNECTED, NULL);
		if (e->id == sv)
			rdma_disconnect(sv); /* answer the peer's DREQ */
		rdma_ack_cm_event(e);
	}
	rdma_destroy_qp(cl);
	rdma_destroy_qp(sv);
	rdma_destroy_id(cl);
	rdma_destroy_id(sv);
}

static int test_oldabi(void)
{
	struct rdma_cm_id *mine = listener(7598, -1), *ls = listener(7590, 1);
	struct rdma_conn_param p = param("old binary", 0xff);
	struct rdma_cm_event *e;
	struct rdma_cm_id *cl;

	/* rdma-core's header: the byte is padding and may hold garbage. */
	cl = client(7590);
	if (rdma_connect_old(cl, &p))
		hx_fail("rdma_connect@RDMACM_1.0: %s", strerror(errno));
	e = expect(RDMA_CM_EVENT_CONNECT_REQUEST, NULL);
	check_data(e, "old binary", 0, "CONNECT_REQUEST");
	finish(e, cl, rdma_accept_old, "old reply", 0xff, 0);

	/*
	 * Our header: the same byte asks for peer-to-peer mode, so the p2p
	 * listener holds the request for a local connect that never comes.
	 */
	cl = client(7590);
	if (rdma_connect(cl, &p))
		hx_fail("rdma_connect: %s", strerror(errno));
	expect_none(1500);
	rdma_destroy_qp(cl);
	rdma_destroy_id(cl);
	rdma_destroy_id(ls);
	rdma_destroy_id(mine);
	return 0;
}

/*
 * Our own p2p listeners take ports below the peers' (lower identity): on
 * iWARP only the lower end of a p2p pair sends a request (rdma_cm_p2p(7)),
 * and these scenarios need ours to go out.
 */
static int test_surface(void)
{
	struct rdma_conn_param p = param("abc", 1);
	struct rdma_cm_id *ls, *mine, *cl;
	struct rdma_cm_event *e;

	cl = client(7591);
	if (rdma_connect(cl, &p) == 0 || errno != EADDRNOTAVAIL)
		hx_fail("p2p connect without a listener: %s, want "
			"EADDRNOTAVAIL",
			strerror(errno));
	mine = listener(7581, -1); /* the port our p2p connects announce */
	ls = listener(7591, 0);
	if (rdma_connect(cl, &p))
		hx_fail("rdma_connect: %s", strerror(errno));
	e = expect(RDMA_CM_EVENT_CONNECT_REQUEST, NULL);
	check_data(e, "abc", 1, "CONNECT_REQUEST");
	finish(e, cl, rdma_accept, "xyz", 1, 1);
	rdma_destroy_id(mine);
	rdma_destroy_id(ls);
	return 0;
}

static int test_plain(void)
{
	struct rdma_cm_id *p2pls = listener(7593, 1), *ls, *cl;
	struct rdma_conn_param p = param("plain", 0);
	struct rdma_cm_event *e;

	/* A non-p2p connect to a p2p listener: an ordinary request. */
	cl = client(7593);
	if (rdma_connect(cl, &p))
		hx_fail("rdma_connect: %s", strerror(errno));
	e = expect(RDMA_CM_EVENT_CONNECT_REQUEST, NULL);
	check_data(e, "plain", 0, "CONNECT_REQUEST");
	finish(e, cl, rdma_accept, "plain reply", 0, 0);

	/* A p2p connect answered by an old-ABI server: ordinary reply. */
	ls = listener(7594, 0);
	cl = client(7594);
	p = param("p2p", 1);
	if (rdma_connect(cl, &p))
		hx_fail("rdma_connect: %s", strerror(errno));
	e = expect(RDMA_CM_EVENT_CONNECT_REQUEST, NULL);
	finish(e, cl, rdma_accept_old, "server", 0, 0);
	rdma_destroy_id(ls);
	rdma_destroy_id(p2pls);
	return 0;
}

static int test_hostile(void)
{
	/* magic, version|kind, flags, len, port, tag */
	static const unsigned char bad[][16] = {
		{0xC5, 0x70, 0x32, 0x41, 0, 0, 0x1d, 0x8a}, /* version 4 */
		{0xC5, 0x70, 0x32, 0x21, 0, 0, 0x1d, 0x8a}, /* version 2 */
		{0xC5, 0x70, 0x32, 0x36, 0, 0, 0x1d, 0x8a}, /* challenge */
		{0xC5, 0x70, 0x32, 0x11, 0, 0, 0, 0}, /* REQ from port 0 */
		{0xC5, 0x70, 0x32, 0x11, 0x80, 0, 0x1d, 0x8a}, /* flags */
		{0xC5, 0x70, 0x32, 0x11, 0, 0xff, 0x1d, 0x8a}, /* length */
		{0xC5, 0x70, 0x32, 0x12, 0, 0, 0x1d, 0x8a}, /* a REP */
		{0xC5, 0x70, 0x32, 0x1f, 0, 0, 0x1d, 0x8a}, /* kind 15 */
	};
	struct rdma_cm_id *ls = listener(7595, -1), *cl;
	struct rdma_cm_event *e;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rdma_conn_param p = param(NULL, 0);

		p.private_data = bad[i];
		p.private_data_len = sizeof(bad[i]);
		cl = client(7595);
		if (rdma_connect_old(cl, &p))
			hx_fail("rdma_connect: %s", strerror(errno));
		e = expect(RDMA_CM_EVENT_REJECTED, cl);
		rdma_ack_cm_event(e);
		rdma_destroy_qp(cl);
		rdma_destroy_id(cl);
	}
	expect_none(300);
	rdma_destroy_id(ls);
	hx_set_detail("%zu headers refused", i);
	return 0;
}

static int test_held(void)
{
	struct rdma_cm_id *mine = listener(7582, 1), *ls = listener(7596, -1);
	struct rdma_conn_param p = param("late", 1);
	struct rdma_cm_event *e;
	struct rdma_cm_id *cl;
	uint64_t tag = 424242;

	cl = client(7596);
	if (rdma_set_option(cl, RDMA_OPTION_ID, RDMA_OPTION_ID_P2P_TAG, &tag,
			    sizeof(tag)))
		hx_fail("set P2P_TAG: %s", strerror(errno));
	if (rdma_connect(cl, &p))
		hx_fail("rdma_connect: %s", strerror(errno));
	/* Held first (RDMA_CM_P2P_HOLD_MS=1000), then given to us. */
	expect_none(500);
	e = expect(RDMA_CM_EVENT_CONNECT_REQUEST, NULL);
	if (e->listen_id != ls)
		hx_fail("CONNECT_REQUEST on the wrong listener");
	check_data(e, "late", 1, "CONNECT_REQUEST");
	finish(e, cl, rdma_accept, "ok", 1, 1);
	rdma_destroy_id(mine);
	rdma_destroy_id(ls);
	return 0;
}

static int test_giveup(void)
{
	struct rdma_cm_id *mine = listener(7583, 1), *ls = listener(7588, 1);
	struct rdma_conn_param p = param("nobody", 1);
	struct rdma_cm_event *e;
	struct rdma_cm_id *cl;
	uint64_t tag = 171717;
	long long t0;

	cl = client(7588);
	if (rdma_set_option(cl, RDMA_OPTION_ID, RDMA_OPTION_ID_P2P_TAG, &tag,
			    sizeof(tag)))
		hx_fail("set P2P_TAG: %s", strerror(errno));
	t0 = hx_now_ms();
	if (rdma_connect(cl, &p))
		hx_fail("rdma_connect: %s", strerror(errno));
	/* Held by ls until we give up: 2 x RDMA_CM_P2P_HOLD_MS + 2 s. */
	expect_none(3000);
	e = expect(RDMA_CM_EVENT_UNREACHABLE, cl);
	if (e->status != -ETIMEDOUT)
		hx_fail("UNREACHABLE with status %d, expected %d", e->status,
			-ETIMEDOUT);
	rdma_ack_cm_event(e);
	/* Nothing more: no late answer, no request reported at ls. */
	expect_none(3000);
	rdma_destroy_qp(cl);
	rdma_destroy_id(cl);
	rdma_destroy_id(mine);
	rdma_destroy_id(ls);
	hx_set_detail("UNREACHABLE after %lld ms", hx_now_ms() - t0 - 3000);
	return 0;
}

/* The scenarios take ADDR after their name; the channel is shared. */
static int run(int argc, char **argv, int (*test)(void))
{
	struct addrinfo *ai, hints = {.ai_flags = AI_NUMERICHOST};

	(void)argc;
	if (getaddrinfo(argv[1], NULL, &hints, &ai))
		hx_fail("'%s' is not a numeric address", argv[1]);
	memcpy(&base, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	ch = rdma_create_event_channel();
	CHECK(ch, "rdma_create_event_channel: %s", strerror(errno));
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	return test();
}

#define SCENARIO(name)                                                         \
	static int run_##name(int argc, char **argv)                           \
	{                                                                      \
		return run(argc, argv, test_##name);                           \
	}
SCENARIO(oldabi)
SCENARIO(surface)
SCENARIO(plain)
SCENARIO(hostile)
SCENARIO(held)
SCENARIO(giveup)

static const struct hx_scenario scenarios[] = {
	{"oldabi", "ADDR", run_oldabi}, {"surface", "ADDR", run_surface},
	{"plain", "ADDR", run_plain},	{"hostile", "ADDR", run_hostile},
	{"held", "ADDR", run_held},	{"giveup", "ADDR", run_giveup},
};

int main(int argc, char **argv)
{
	hx_set_event_timeout_ms(EVENT_MS);
	return hx_main(argc, argv, scenarios,
		       sizeof(scenarios) / sizeof(scenarios[0]));
}
