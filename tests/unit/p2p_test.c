// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for peer-to-peer mode's table (src/p2p/p2p.c): identity
 * order, key matching and the decision taken for an incoming request; the
 * private data a p2p connect leaves room for; p2p listeners as the kernel
 * sees them; a child forked while another thread holds the table's lock.
 * The header codec is tested in p2p_wire_test.c, the options
 * in p2p_options_test.c.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"
#include "p2p/p2p_hooks.h"
#include "fake_ucma.h"
#include "p2p/p2p.h"
#include "p2p/p2p_table.h"
#include "p2p/p2p_wire.h"
#include "cm/ucma_abi.h"
#include "unit.h"

static struct cma_p2p_ident ident(uint8_t last, uint16_t port)
{
	struct cma_p2p_ident id = {.port = port};

	id.addr[10] = id.addr[11] = 0xff;
	id.addr[15] = last;
	return id;
}

START_TEST(identity_order)
{
	struct cma_p2p_ident a = ident(1, 9000), b = ident(2, 10);

	ck_assert_int_lt(cma_p2p_ident_cmp(&a, &b), 0); /* address first */
	ck_assert_int_gt(cma_p2p_ident_cmp(&b, &a), 0);
	b = ident(1, 9001);
	ck_assert_int_lt(cma_p2p_ident_cmp(&a, &b), 0); /* then port */
	b = ident(1, 9000);
	ck_assert_int_eq(cma_p2p_ident_cmp(&a, &b), 0);
}
END_TEST

/*
 * Compared as words, the addresses keep memcmp's byte order, which both
 * ends of a pair must agree on: bytes above 0x7f, and pairs that differ
 * only in the second half.
 */
START_TEST(identity_order_is_byte_order)
{
	struct cma_p2p_ident a = {.port = 1}, b = {.port = 1};
	uint32_t seed = 12345;
	int i, j, want, got;

	for (i = 0; i < 2000; i++) {
		for (j = 0; j < 16; j++) {
			seed = seed * 1103515245u + 12345u;
			a.addr[j] = (uint8_t)(seed >> 16);
			seed = seed * 1103515245u + 12345u;
			/* Mostly equal bytes: differences late in the address. */
			b.addr[j] =
				seed % 4 ? a.addr[j] : (uint8_t)(seed >> 16);
		}
		want = memcmp(a.addr, b.addr, sizeof(a.addr));
		got = cma_p2p_ident_cmp(&a, &b);
		ck_assert_int_eq(want < 0, got < 0);
		ck_assert_int_eq(want > 0, got > 0);
	}
}
END_TEST

START_TEST(addresses_normalised)
{
	struct sockaddr_in in4 = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(0xC0000201)};
	struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
	struct sockaddr bad = {.sa_family = AF_UNIX};
	uint8_t a[16], b[16];

	ck_assert_int_eq(cma_p2p_addr16(&in4, sizeof(in4), a), 0);
	/* The same address as IPv4-mapped IPv6 compares equal. */
	in6.sin6_addr.s6_addr[10] = in6.sin6_addr.s6_addr[11] = 0xff;
	memcpy(&in6.sin6_addr.s6_addr[12], &in4.sin_addr, 4);
	ck_assert_int_eq(cma_p2p_addr16(&in6, sizeof(in6), b), 0);
	ck_assert_mem_eq(a, b, 16);
	ck_assert_int_eq(cma_p2p_addr16(&bad, sizeof(bad), a), -1);
}
END_TEST

/* Both sides of one crossing reach opposite decisions: one connection. */
/*
 * Addresses at any alignment, as kernel replies place them: a QUERY_ROUTE
 * reply's dst_addr sits at offset 164, where a struct sockaddr_ib (8-byte
 * aligned) cannot be read as one (UBSan: misaligned access); and its
 * sockaddr_in6-sized slots cannot hold an AF_IB address at all.
 */
START_TEST(addr16_any_alignment)
{
	struct rdma_ucm_query_route_resp r;
	struct sockaddr_ib sib = {.sib_family = AF_IB};
	uint8_t buf[1 + sizeof(sib)] __attribute__((aligned(8))), out[16];
	int i;

	for (i = 0; i < 16; i++)
		sib.sib_addr.sib_raw[i] = (uint8_t)(0xa0 + i);
	memcpy(buf + 1, &sib, sizeof(sib));
	ck_assert_int_eq(cma_p2p_addr16(buf + 1, sizeof(sib), out), 0);
	ck_assert_mem_eq(out, sib.sib_addr.sib_raw, 16);
	ck_assert_int_eq(cma_p2p_addr16(buf + 1, sizeof(sib) - 1, out), -1);
	memset(&r, 0, sizeof(r));
	ck_assert_uint_ne(offsetof(struct rdma_ucm_query_route_resp, dst_addr) %
				  __alignof__(struct sockaddr_ib),
			  0);
	r.dst_addr.sin6_family = AF_IB;
	ck_assert_int_eq(cma_p2p_addr16(&r.dst_addr, sizeof(r.dst_addr), out),
			 -1);
	r.dst_addr.sin6_family = AF_INET6;
	for (i = 0; i < 16; i++)
		r.dst_addr.sin6_addr.s6_addr[i] = (uint8_t)i;
	ck_assert_int_eq(cma_p2p_addr16(&r.dst_addr, sizeof(r.dst_addr), out),
			 0);
	ck_assert_mem_eq(out, r.dst_addr.sin6_addr.s6_addr, 16);
}
END_TEST

/*
 * Who sends is the identities' order alone: a request from the higher
 * end is refused whatever the local state (that end never sends; ours
 * forms the pair), one from the lower end is held or adopted.
 */
START_TEST(only_the_lower_end_is_heard)
{
	struct cma_p2p_key at_a = {.local = ident(1, 7000),
				   .remote = ident(2, 7000)};
	struct cma_p2p_key at_b = {.local = ident(2, 7000),
				   .remote = ident(1, 7000)};
	enum cma_p2p_state st;

	ck_assert(cma_p2p_sends_req(&at_a.local, &at_a.remote));
	ck_assert(!cma_p2p_sends_req(&at_b.local, &at_b.remote));
	for (st = CMA_P2P_NO_MATCH; st <= CMA_P2P_ADOPTING; st++)
		ck_assert_int_eq(cma_p2p_decide(&at_a, st),
				 CMA_P2P_REJECT_RETRY);
	ck_assert_int_eq(cma_p2p_decide(&at_b, CMA_P2P_NO_MATCH), CMA_P2P_HOLD);
	/* Same address, ports decide. */
	at_a.remote = ident(1, 7001);
	at_b.local = ident(1, 7001);
	at_b.remote = ident(1, 7000);
	ck_assert_int_eq(cma_p2p_decide(&at_b, CMA_P2P_WAIT_PEER),
			 CMA_P2P_ADOPT);
	ck_assert_int_eq(cma_p2p_decide(&at_a, CMA_P2P_WAIT_PEER),
			 CMA_P2P_REJECT_RETRY);
}
END_TEST

START_TEST(decisions_by_state)
{
	struct cma_p2p_key k = {.local = ident(2, 1), .remote = ident(1, 1)};

	ck_assert_int_eq(cma_p2p_decide(&k, CMA_P2P_NO_MATCH), CMA_P2P_HOLD);
	ck_assert_int_eq(cma_p2p_decide(&k, CMA_P2P_WAIT_PEER), CMA_P2P_ADOPT);
	ck_assert_int_eq(cma_p2p_decide(&k, CMA_P2P_CONNECTED),
			 CMA_P2P_REJECT_DUP);
}
END_TEST

START_TEST(keys_match_exactly)
{
	struct cma_p2p_key a = {.local = ident(1, 1),
				.remote = ident(2, 2),
				.tag = 3},
			   b = a;

	ck_assert(cma_p2p_key_equal(&a, &b));
	b.tag = 4;
	ck_assert(!cma_p2p_key_equal(&a, &b));
	b = a;
	b.explicit_tag = true; /* implicit 3 is not explicit tag 3 */
	ck_assert(!cma_p2p_key_equal(&a, &b));
	b = a;
	b.remote.port = 3;
	ck_assert(!cma_p2p_key_equal(&a, &b));
}
END_TEST

/*
 * Private-data lengths: rdma_connect and rdma_accept on an id bound to a
 * device, with the fake kernel (fake_ucma) failing every command with EIO
 * and counting it.  EINVAL with no command written means the library
 * refused the length; EIO means it let the call through to the kernel.
 */
static int writes;
static struct rdma_event_channel *pd_channel;
static struct cma_id_private *pd_id;
static struct cma_device pd_dev;
static struct ibv_qp pd_qp = {.qp_num = 0x55, .qp_type = IBV_QPT_RC};
static uint8_t pd_data[256];

static int counting_kernel(const struct fake_cmd *cmd, void *resp, size_t len)
{
	(void)cmd;
	(void)resp;
	(void)len;
	writes++;
	return EIO;
}

static void pd_setup(void)
{
	writes = 0;
	fake_ucma_install();
	pd_channel = cma_channel_create();
	ck_assert_ptr_nonnull(pd_channel);
	fake_ucma_set_hook(counting_kernel);
	pd_id = cma_id_alloc(pd_channel, NULL, RDMA_PS_TCP, IBV_QPT_RC);
	ck_assert_ptr_nonnull(pd_id);
	memset(&pd_dev, 0, sizeof(pd_dev));
	pd_id->cma_dev = &pd_dev;
	pd_id->handle = 3;
	pd_id->id.route.addr.src_addr.sa_family = AF_INET;
}

static void pd_teardown(void)
{
	pd_id->cma_dev = NULL; /* not the library's device */
	pd_id->id.qp = NULL;
	cma_id_free(pd_id);
	cma_channel_destroy(pd_channel);
	fake_ucma_uninstall();
}

/* rdma_connect with @len bytes: its errno (0 if it succeeded). */
static int pd_connect(size_t len, bool p2p)
{
	struct rdma_conn_param cp = {.private_data = pd_data,
				     .private_data_len = (uint8_t)len,
				     .peer2peer_mode = p2p};

	pd_id->id.qp = &pd_qp;
	return rdma_connect(&pd_id->id, &cp) ? errno : 0;
}

/* rdma_accept of a p2p request (when @p2p) with @len bytes: its errno. */
static int pd_accept(size_t len, bool p2p)
{
	struct rdma_conn_param cp = {.private_data = pd_data,
				     .private_data_len = (uint8_t)len,
				     .qp_num = 0x55,
				     .peer2peer_mode = p2p};

	pd_id->id.qp = NULL; /* no QP to move to RTS: qp_num above */
	if (p2p && !cma_p2p_conn_of(pd_id)) {
		struct cma_p2p_conn *conn = cma_p2p_conn_get(pd_id);

		ck_assert_ptr_nonnull(conn);
		conn->from_request = true;
	}
	return rdma_accept(&pd_id->id, &cp) ? errno : 0;
}

/*
 * 232 bytes and the 24-byte p2p header make 256: the kernel's length
 * byte would carry 0, so the peer got neither data nor header.  iWARP
 * bounds private data by that byte alone.
 */
START_TEST(private_data_wrap_refused)
{
	pd_dev.is_iwarp = true;
	ck_assert_int_eq(pd_connect(232, true), EINVAL);
	ck_assert_int_eq(pd_accept(232, true), EINVAL);
	/* rdma_create_ep's ai_connect data goes in front: 16 + 240 = 256. */
	ck_assert_ptr_nonnull(cma_id_rare(pd_id));
	pd_id->rare->connect_data = calloc(1, 16);
	ck_assert_ptr_nonnull(pd_id->rare->connect_data);
	pd_id->connect_len = 16;
	ck_assert_int_eq(pd_connect(240, false), EINVAL);
	ck_assert_int_eq(writes, 0);
	/* 255 is the most the length byte holds: those go to the kernel. */
	ck_assert_int_eq(pd_connect(239, false), EIO);
	pd_id->connect_len = 0;
	/* (a p2p connect then needs addresses: any error but EINVAL) */
	ck_assert_int_ne(pd_connect(231, true), EINVAL);
	ck_assert_int_eq(pd_accept(231, true), EIO);
	ck_assert_int_eq(pd_accept(255, false), EIO);
}
END_TEST

/*
 * On InfiniBand and RoCE the CM's messages have fixed room (rdma_cm(7)):
 * 56 bytes in a request with IP addressing (92 with AF_IB), 196 in a
 * reply, 180 and 136 for datagram ids; the p2p header comes out of it.
 */
START_TEST(private_data_ib_limits)
{
	ck_assert_int_eq(pd_connect(57, false), EINVAL);
	ck_assert_int_eq(pd_connect(33, true), EINVAL);
	ck_assert_int_eq(pd_accept(197, false), EINVAL);
	ck_assert_int_eq(pd_accept(173, true), EINVAL);
	ck_assert_int_eq(rdma_reject(&pd_id->id, pd_data, 149), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(writes, 0);
	ck_assert_int_eq(pd_connect(56, false), EIO);
	ck_assert_int_eq(pd_accept(196, false), EIO);
	ck_assert_int_eq(pd_accept(172, true), EIO);
	ck_assert_int_eq(rdma_reject(&pd_id->id, pd_data, 148), -1);
	ck_assert_int_eq(errno, EIO);
	ck_assert_int_eq(
		cma_check_priv_len(pd_id, 32 + CMA_P2P_HDR_LEN, CMA_PRIV_REQ),
		0);
	pd_id->id.route.addr.src_addr.sa_family = AF_IB;
	ck_assert_int_eq(cma_check_priv_len(pd_id, 92, CMA_PRIV_REQ), 0);
	ck_assert_int_eq(cma_check_priv_len(pd_id, 93, CMA_PRIV_REQ), -1);
	pd_id->id.route.addr.src_addr.sa_family = AF_INET;
	pd_id->id.qp_type = IBV_QPT_UD;
	ck_assert_int_eq(cma_check_priv_len(pd_id, 180, CMA_PRIV_REQ), 0);
	ck_assert_int_eq(cma_check_priv_len(pd_id, 181, CMA_PRIV_REQ), -1);
	ck_assert_int_eq(cma_check_priv_len(pd_id, 136, CMA_PRIV_REP), 0);
	ck_assert_int_eq(cma_check_priv_len(pd_id, 137, CMA_PRIV_REP), -1);
}
END_TEST

/*
 * Found by the stress suite (p2p_churn): a request another thread reads the
 * moment the kernel listens must find the listener's p2p record, or a p2p
 * listener reports a p2p request.  The record exists when the LISTEN
 * command reaches the kernel; a listen the kernel refuses leaves none.
 */
static int listen_err, recorded_at_listen = -1;

static int listen_kernel(const struct fake_cmd *cmd, void *resp, size_t len)
{
	(void)resp;
	(void)len;
	if (cmd->cmd != RDMA_USER_CM_CMD_LISTEN)
		return EIO;
	recorded_at_listen = cma_p2p_listening(pd_id);
	return listen_err;
}

START_TEST(p2p_listener_recorded_before_the_kernel_listens)
{
	struct sockaddr_in *sin =
		(struct sockaddr_in *)&pd_id->id.route.addr.src_addr;
	int on = 1;

	sin->sin_port = htons(7777);
	sin->sin_addr.s_addr = htonl(0xc0000201);
	ck_assert_int_eq(rdma_set_option(&pd_id->id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_PEER2PEER, &on,
					 sizeof(on)),
			 0);
	fake_ucma_set_hook(listen_kernel);
	listen_err = EADDRINUSE;
	ck_assert_int_eq(rdma_listen(&pd_id->id, 4), -1);
	ck_assert_int_eq(errno, EADDRINUSE);
	ck_assert_int_eq(recorded_at_listen, 1);
	ck_assert(!cma_p2p_listening(pd_id));
	listen_err = 0;
	recorded_at_listen = -1;
	ck_assert_int_eq(rdma_listen(&pd_id->id, 4), 0);
	ck_assert_int_eq(recorded_at_listen, 1);
	ck_assert(cma_p2p_listening(pd_id));
}
END_TEST

/*
 * Found by the stress suite (p2p_churn): a p2p request read for a listener
 * that rdma_destroy_id is detaching is refused (p2p REJ "lost": the peer
 * waits for our connect), not reported to the application.
 */
static int refusals;

static int refuse_kernel(const struct fake_cmd *cmd, void *resp, size_t len)
{
	struct rdma_ucm_query_route_resp *r = resp;
	struct sockaddr_in sin = {.sin_family = AF_INET};

	switch (cmd->cmd) {
	case RDMA_USER_CM_CMD_LISTEN:
	case RDMA_USER_CM_CMD_DESTROY_ID:
		if (resp)
			memset(resp, 0, len);
		return 0;
	case RDMA_USER_CM_CMD_QUERY_ROUTE:
		memset(r, 0, len);
		sin.sin_addr.s_addr = htonl(0xc0000201);
		memcpy(&r->src_addr, &sin, sizeof(sin));
		sin.sin_addr.s_addr = htonl(0xc0000202);
		memcpy(&r->dst_addr, &sin, sizeof(sin));
		return 0;
	case RDMA_USER_CM_CMD_REJECT:
		refusals++;
		return 0;
	}
	return EIO;
}

START_TEST(request_at_a_detached_p2p_listener_refused)
{
	struct sockaddr_in *sin =
		(struct sockaddr_in *)&pd_id->id.route.addr.src_addr;
	struct cma_p2p_hdr hdr = {.kind = CMA_P2P_REQ, .port = 7778, .tag = 5};
	struct rdma_ucm_event_resp resp;
	int on = 1;

	sin->sin_port = htons(7777);
	sin->sin_addr.s_addr = htonl(0xc0000201);
	ck_assert_int_eq(rdma_set_option(&pd_id->id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_PEER2PEER, &on,
					 sizeof(on)),
			 0);
	fake_ucma_set_hook(refuse_kernel);
	ck_assert_int_eq(rdma_listen(&pd_id->id, 4), 0);
	cma_p2p_detach(pd_id); /* what rdma_destroy_id does first */
	memset(&resp, 0, sizeof(resp));
	resp.event = RDMA_CM_EVENT_CONNECT_REQUEST;
	resp.id = 9;
	cma_p2p_hdr_encode(&hdr, resp.param.conn.private_data);
	resp.param.conn.private_data_len = CMA_P2P_HDR_LEN;
	ck_assert_int_eq(cma_p2p_conn_req(pd_id, &resp), CMA_P2P_TAKEN);
	ck_assert_int_eq(refusals, 1);
}
END_TEST

static void lock_and_unlock(void)
{
	cma_p2p_lock();
	cma_p2p_unlock();
}

/* A child forked while another thread holds the table's lock takes it. */
START_TEST(a_child_forked_beside_the_table_takes_its_lock)
{
	unit_forks_beside_calls(lock_and_unlock);
}
END_TEST

Suite *p2p_suite(void)
{
	Suite *s = suite_create("p2p");
	TCase *tc = tcase_create("pure");
	TCase *pd = tcase_create("private data");

	tcase_add_test(tc, identity_order);
	tcase_add_test(tc, identity_order_is_byte_order);
	tcase_add_test(tc, addresses_normalised);
	tcase_add_test(tc, addr16_any_alignment);
	tcase_add_test(tc, only_the_lower_end_is_heard);
	tcase_add_test(tc, decisions_by_state);
	tcase_add_test(tc, keys_match_exactly);
	tcase_add_test(tc, a_child_forked_beside_the_table_takes_its_lock);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(pd, pd_setup, pd_teardown);
	tcase_add_test(pd, private_data_wrap_refused);
	tcase_add_test(pd, private_data_ib_limits);
	tcase_add_test(pd, p2p_listener_recorded_before_the_kernel_listens);
	tcase_add_test(pd, request_at_a_detached_p2p_listener_refused);
	suite_add_tcase(s, pd);
	return s;
}
