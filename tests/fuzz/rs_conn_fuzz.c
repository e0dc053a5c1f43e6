// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// FUZZ_SOURCES: @library tests/unit/fake_ucma.c tests/unit/fake_verbs.c
/*
 * Stream rsocket connection set-up (src/rsocket/conn.c, with selfconn.c)
 * against a hostile network: a non-blocking client rsocket connecting and
 * a non-blocking listener accepting, on the fake kernel device and the
 * fake verbs device (tests/unit/fake_*.h), the fuzzer playing everything
 * between them:
 *
 *  - the client's rconnect (to the listener's address, another, IPv6,
 *    AF_IB, a bad length or family) and its retries;
 *  - the kernel's events for the client: address and route resolved or
 *    failed (timed out or not), the connection established (with the
 *    listener's real answer, that answer altered, or any bytes as the
 *    peer's connect data), rejected, unreachable, disconnected (not
 *    DEVICE_REMOVAL: the library forgets a removed device for good, and
 *    the fake's device is the same one in every input);
 *  - connection requests at the listener, with the client's real connect
 *    data, altered, or any bytes, and any depths the peer asks for;
 *  - raccept, events for the accepted sockets, rpoll, rsend and rrecv on
 *    any socket, and kernel commands that fail (CONNECT, ACCEPT,
 *    RESOLVE_ROUTE, MIGRATE_ID, ...), closes;
 *  - our own queue and inline sizes (rsetsockopt before connecting), so
 *    the connect data both ways varies too.
 *
 * A connected client's later events (disconnected, time-wait exit, an
 * address change) may be read by the library's peer watch thread before
 * the next operation drives the socket: an input's path may vary between
 * runs there.
 *
 * Whatever happens, every call returns (nothing blocks), a socket's state
 * answers rconnect as connect(2) does (EINPROGRESS, EALREADY, EISCONN, or
 * the error), and once every socket is closed no kernel id is left on a
 * device descriptor still open (the kernel destroys those of a closed one,
 * as after a DESTROY_ID the fuzzer failed), and no QP, CQ, channel or
 * registration (LeakSanitizer checks the memory).
 *
 * Input: a flags byte (bit 1: the client is IPv6; bit 2: its sizes come
 * next, 3 bytes: send queue, receive queue, inline), then operations: one
 * byte (mod 8) and its arguments.  The device is RoCE: the library keeps
 * a port's link layer once it has read it.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rsocket.h>

#include "cm/cma.h"
#include "rsocket/rs.h"
#include "rsocket/wire.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ACCEPTED 4
#define MAX_KIDS 16

static int server = -1, client = -1;
static int accepted[MAX_ACCEPTED];
static int naccepted;
/* Every kernel id the input made: none may outlive its socket. */
static uint32_t kids[MAX_KIDS];
static int nkids;
static struct sockaddr_in server_addr;
static unsigned long sink;

static void note_kid(uint32_t handle)
{
	int i;

	for (i = 0; i < nkids; i++)
		if (kids[i] == handle)
			return;
	if (nkids < MAX_KIDS)
		kids[nkids++] = handle;
}

/* The kernel id behind socket @s, 0 if it has none (closed, ...). */
static uint32_t kid_of(int s)
{
	struct rsocket *rs = rs_get(s);
	struct fake_kid *kid = NULL;

	if (!rs)
		return 0;
	if (rs->type == SOCK_STREAM && rs->cm_id)
		kid = fake_ucma_kid_of(rs->cm_id);
	rs_put(rs);
	if (!kid)
		return 0;
	note_kid(kid->handle);
	return kid->handle;
}

/*
 * Connect data as the peer sends it: the real bytes @real (when the
 * selector asks and there are some), with an input's bytes written over
 * part of them, or the input's bytes alone; the length the input's too.
 */
static void peer_data(struct rdma_ucm_event_resp *r, const void *real,
		      uint8_t real_len)
{
	uint8_t sel = take8(), off, n;
	uint8_t *pd = r->param.conn.private_data;

	memset(pd, 0, sizeof(r->param.conn.private_data));
	if ((sel & 1) && real && real_len) {
		memcpy(pd, real, real_len);
		r->param.conn.private_data_len = real_len;
		if (sel & 2) { /* alter part of it */
			off = take8() % real_len;
			n = take8() % 8;
			take(pd + off, off + n <= 255 ? n : 0);
		}
		if (sel & 4)
			r->param.conn.private_data_len = take8();
		return;
	}
	n = take8();
	take(pd, n);
	r->param.conn.private_data_len = n;
}

/* The last CONNECT's or ACCEPT's private data, as the peer would see it. */
static const struct rdma_ucm_conn_param *last_param(uint32_t cmd)
{
	const struct fake_cmd *c = fake_ucma_last(cmd);

	if (!c)
		return NULL;
	if (cmd == RDMA_USER_CM_CMD_CONNECT)
		return &((const struct rdma_ucm_connect *)c->body)->conn_param;
	return &((const struct rdma_ucm_accept *)c->body)->conn_param;
}

/* --- operations ---------------------------------------------------------------- */

/*
 * The errors a connect or accept may end in: connect(2)'s and accept(2)'s,
 * and those of the kernel commands the input fails (op_fail).
 */
static void check_errno(int err)
{
	switch (err) {
	case EINPROGRESS:
	case EALREADY:
	case EISCONN:
	case EAGAIN:
	case ECONNREFUSED:
	case ECONNABORTED:
	case ETIMEDOUT:
	case EHOSTUNREACH:
	case ENOTSUP:
	case EINVAL:
	case EFAULT:
	case EAFNOSUPPORT:
	case ENOMEM:
	case ENODEV:
	case EADDRNOTAVAIL:
	case EIO:
		return;
	}
	abort(); /* an error neither the call nor the kernel gives */
}

static void check_connect_result(int ret, int err)
{
	if (ret)
		check_errno(err);
}

static void op_connect(void)
{
	uint8_t sel = take8();
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	int ret;

	memset(&ss, 0, sizeof(ss));
	switch (sel % 6) {
	case 0: /* the listener */
		*sin = server_addr;
		len = sizeof(*sin);
		break;
	case 1: /* another IPv4 host */
		*sin = server_addr;
		sin->sin_addr.s_addr = htonl(0xc0000263);
		len = sizeof(*sin);
		break;
	case 2:
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(7471);
		sin6->sin6_addr.s6_addr[15] = 2;
		len = sizeof(*sin6);
		break;
	case 3:
		ss.ss_family = AF_IB;
		len = sizeof(struct sockaddr_ib);
		break;
	case 4: /* any bytes, any length */
		take(&ss, 32);
		len = take8();
		break;
	default:
		ret = rconnect(client, NULL, sizeof(*sin));
		check_connect_result(ret, errno);
		return;
	}
	if (sel & 0x80)
		len = sel & 0x1f;
	ret = rconnect(client, (struct sockaddr *)&ss, len);
	check_connect_result(ret, errno);
	kid_of(client);
}

static const uint32_t client_events[] = {
	RDMA_CM_EVENT_ADDR_RESOLVED,  RDMA_CM_EVENT_ADDR_ERROR,
	RDMA_CM_EVENT_ROUTE_RESOLVED, RDMA_CM_EVENT_ROUTE_ERROR,
	RDMA_CM_EVENT_ESTABLISHED,    RDMA_CM_EVENT_REJECTED,
	RDMA_CM_EVENT_UNREACHABLE,    RDMA_CM_EVENT_CONNECT_ERROR,
	RDMA_CM_EVENT_DISCONNECTED,   RDMA_CM_EVENT_CONNECT_RESPONSE,
	RDMA_CM_EVENT_TIMEWAIT_EXIT,  RDMA_CM_EVENT_ADDR_CHANGE,
};
#define NEVENTS (sizeof(client_events) / sizeof(client_events[0]))

/* The kernel reports an event for socket @s; then @s is driven on. */
static void event_for(int s, bool from_accept)
{
	uint8_t ev = take8(), st = take8();
	const struct rdma_ucm_conn_param *real;
	struct rdma_ucm_event_resp *r;
	uint32_t handle = kid_of(s);
	int status = st & 0x80 ? -ETIMEDOUT : -(int)(st % 120);

	if (!handle)
		return;
	/*
	 * Filled before anyone may read it: a connected socket's channel is
	 * read by the library's peer watch thread (src/rsocket/peerwatch.c).
	 */
	fake_ucma_hold();
	r = fake_ucma_event(handle, client_events[ev % NEVENTS], status);
	if (r && (r->event == RDMA_CM_EVENT_ESTABLISHED ||
		  r->event == RDMA_CM_EVENT_CONNECT_RESPONSE ||
		  r->event == RDMA_CM_EVENT_REJECTED)) {
		/* The other side's real data: the accept's, or the connect's. */
		real = last_param(from_accept ? RDMA_USER_CM_CMD_CONNECT
					      : RDMA_USER_CM_CMD_ACCEPT);
		peer_data(r, real ? real->private_data : NULL,
			  real ? real->private_data_len : 0);
	}
	fake_ucma_release();
}

static void drive(int s)
{
	struct pollfd pfd = {.fd = s, .events = POLLIN | POLLOUT};
	char buf[64];
	int ret;

	if (s == client) {
		ret = rconnect(client, (struct sockaddr *)&server_addr,
			       sizeof(server_addr));
		check_connect_result(ret, errno);
	}
	(void)rpoll(&pfd, 1, 0);
	if (rrecv(s, buf, sizeof(buf), MSG_DONTWAIT) > (ssize_t)sizeof(buf))
		abort();
	(void)rsend(s, "x", 1, MSG_DONTWAIT);
}

static void op_client_event(void)
{
	event_for(client, false);
	drive(client);
}

static void op_request(void)
{
	uint8_t depths = take8();
	const struct rdma_ucm_conn_param *real =
		last_param(RDMA_USER_CM_CMD_CONNECT);
	struct rdma_ucm_event_resp *r;
	uint32_t child, handle = kid_of(server);

	if (!handle)
		return;
	r = fake_ucma_conn_req(handle, &child);
	if (!r)
		return;
	note_kid(child);
	r->param.conn.responder_resources = depths & 0xf;
	r->param.conn.initiator_depth = depths >> 4;
	peer_data(r, real ? real->private_data : NULL,
		  real ? real->private_data_len : 0);
}

static void op_accept(void)
{
	struct sockaddr_in6 peer;
	socklen_t len = take8() % (sizeof(peer) + 1);
	int s;

	s = raccept(server, take8() & 1 ? (struct sockaddr *)&peer : NULL,
		    &len);
	if (s < 0) {
		check_errno(errno);
		return;
	}
	kid_of(s);
	if (naccepted == MAX_ACCEPTED) {
		rclose(s);
		return;
	}
	accepted[naccepted++] = s;
}

static void op_accepted_event(void)
{
	uint8_t which = take8();

	if (!naccepted)
		return;
	event_for(accepted[which % naccepted], true);
	drive(accepted[which % naccepted]);
}

/*
 * Commands the kernel may refuse.  Not DESTROY_ID: the kernel refuses it
 * only for a handle that is not the caller's; the library then keeps the
 * id for the caller to retry (rdma_destroy_id(3)), and rclose, having no
 * one to retry, would leave its memory (as rdma-core's rsockets do).
 */
static const uint32_t fail_cmds[] = {
	RDMA_USER_CM_CMD_CONNECT,      RDMA_USER_CM_CMD_ACCEPT,
	RDMA_USER_CM_CMD_RESOLVE_ADDR, RDMA_USER_CM_CMD_RESOLVE_ROUTE,
	RDMA_USER_CM_CMD_MIGRATE_ID,   RDMA_USER_CM_CMD_REJECT,
	RDMA_USER_CM_CMD_CREATE_ID,    RDMA_USER_CM_CMD_QUERY_ROUTE,
	RDMA_USER_CM_CMD_INIT_QP_ATTR, RDMA_USER_CM_CMD_SET_OPTION,
	RDMA_USER_CM_CMD_DISCONNECT,   RDMA_USER_CM_CMD_BIND,
	RDMA_USER_CM_CMD_LISTEN,       RDMA_USER_CM_CMD_QUERY,
};

static void op_fail(void)
{
	uint8_t sel = take8(), err = take8();
	static const int errs[] = {
		EINVAL,	   ENOMEM,	 ENODEV, EADDRNOTAVAIL,
		ETIMEDOUT, ECONNREFUSED, EIO};

	fake_ucma_fail_next(
		fail_cmds[sel % (sizeof(fail_cmds) / sizeof(fail_cmds[0]))],
		errs[err % (sizeof(errs) / sizeof(errs[0]))]);
	if (sel & 0x80)
		fake_verbs_fail_post(ENOMEM);
}

/* SO_LINGER 0: a close waits for no send (the fake QPs are not wired). */
static void close_now(int s)
{
	struct linger l = {.l_onoff = 1, .l_linger = 0};

	(void)rsetsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	if (rclose(s))
		abort();
}

static int new_client(bool ipv6, const uint8_t *sizes)
{
	int s = rsocket(ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK,
			0);
	int v;

	if (s < 0)
		return s;
	if (sizes) {
		v = sizes[0];
		(void)rsetsockopt(s, SOL_RDMA, RDMA_SQSIZE, &v, sizeof(v));
		v = sizes[1];
		(void)rsetsockopt(s, SOL_RDMA, RDMA_RQSIZE, &v, sizeof(v));
		v = sizes[2];
		(void)rsetsockopt(s, SOL_RDMA, RDMA_INLINE, &v, sizeof(v));
	}
	kid_of(s);
	return s;
}

static void op_close(void)
{
	uint8_t which = take8();
	int i;

	if (which & 0x80) {
		close_now(client);
		client = new_client(which & 0x40, NULL);
		return;
	}
	if (!naccepted)
		return;
	i = which % naccepted;
	close_now(accepted[i]);
	accepted[i] = accepted[--naccepted];
}

/* --- the run ------------------------------------------------------------------------ */

static void setup_once(void)
{
	static bool done;

	if (done)
		return;
	done = true;
	fake_verbs_reuse_cqs(true); /* a CQ per connection: kept, not freed */
	rs_configure();
	/* Small buffers and no spinning: set-up is what is fuzzed here. */
	rs_def.sqsize = rs_def.rqsize = 16;
	rs_def.mem = rs_def.wmem = RS_SNDLOWAT * 2;
	rs_def.polling_time = rs_def.polling_max = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t flags, sizes[3];
	unsigned int ops = 0;
	struct fake_verbs_counts c;
	int i;

	if (!size)
		return 0;
	setup_once();
	fuzz_input(data, size);
	flags = take8();
	fake_ucma_install();
	fake_verbs_install(true);
	nkids = naccepted = 0;
	server_addr.sin_family = AF_INET;
	server_addr.sin_port = htons(7471);
	server_addr.sin_addr.s_addr = htonl(0xc0000202);
	server = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (server < 0 ||
	    rbind(server, (struct sockaddr *)&server_addr,
		  sizeof(server_addr)) ||
	    rlisten(server, 4))
		abort();
	kid_of(server);
	if (flags & 4)
		take(sizes, sizeof(sizes));
	client = new_client(flags & 2, flags & 4 ? sizes : NULL);
	if (client < 0)
		abort();

	while (fuzz_in.left && ops++ < 64) {
		switch (take8() % 8) {
		case 0:
			op_connect();
			break;
		case 1:
		case 2:
			op_client_event();
			break;
		case 3:
			op_request();
			break;
		case 4:
			op_accept();
			break;
		case 5:
			op_accepted_event();
			break;
		case 6:
			op_fail();
			break;
		default:
			op_close();
			break;
		}
		if (client < 0) /* a failed CREATE_ID took the new one */
			client = new_client(false, NULL);
		if (client < 0)
			break;
	}

	fake_ucma_fail_next(0, 0); /* nothing armed fails the teardown */
	fake_verbs_fail_post(0);
	for (i = 0; i < naccepted; i++)
		close_now(accepted[i]);
	if (client >= 0)
		close_now(client);
	close_now(server);
	for (i = 0; i < nkids; i++)
		if (fake_ucma_kid_live(kids[i], 0) &&
		    fcntl(fake_ucma_kid(kids[i])->fd, F_GETFD) >= 0)
			abort(); /* a kernel id outlived its socket */
	c = fake_verbs_counts();
	if (c.qps || c.cqs || c.channels || c.mrs)
		abort(); /* a socket left its QP or buffers behind */
	sink += ops;
	return 0;
}
