// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for peer-to-peer mode's pure parts: the header codec
 * (src/p2p_wire.c), identity order, key matching and the decision taken
 * for an incoming request (src/p2p.c), and the library-only options.
 */
#include <config.h>

#include <check.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cma.h"
#include "p2p.h"
#include "p2p_wire.h"

START_TEST(header_round_trip)
{
	struct cma_p2p_hdr in = {.kind = CMA_P2P_REQ,
				 .flags = CMA_P2P_F_EXPLICIT_TAG,
				 .data_len = 4,
				 .port = 7471,
				 .tag = 0x0102030405060708ull},
			   out;
	uint8_t buf[CMA_P2P_HDR_LEN + 4] = {0};

	cma_p2p_hdr_encode(&in, buf);
	ck_assert_uint_eq(buf[0], 0xC5);
	ck_assert_uint_eq(buf[3], 0x11); /* version 1, REQ */
	ck_assert_uint_eq(buf[6], 7471 >> 8);
	ck_assert_uint_eq(buf[15], 0x08);
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, sizeof(buf), &out), CMA_P2P_OK);
	ck_assert_uint_eq(out.kind, in.kind);
	ck_assert_uint_eq(out.flags, in.flags);
	ck_assert_uint_eq(out.data_len, 4);
	ck_assert_uint_eq(out.port, 7471);
	ck_assert(out.tag == in.tag);
}
END_TEST

START_TEST(header_rejects_malformed)
{
	struct cma_p2p_hdr h = {.kind = CMA_P2P_REQ, .port = 1, .tag = 1};
	uint8_t good[CMA_P2P_HDR_LEN], buf[CMA_P2P_HDR_LEN];

	cma_p2p_hdr_encode(&h, good);
	/* Not ours at all: ordinary private data. */
	ck_assert_int_eq(cma_p2p_hdr_parse("hello", 6, &h), CMA_P2P_NONE);
	ck_assert_int_eq(cma_p2p_hdr_parse(NULL, 0, &h), CMA_P2P_NONE);
	ck_assert_int_eq(cma_p2p_hdr_parse(good, 2, &h), CMA_P2P_NONE);
	/* Ours, but cut short. */
	ck_assert_int_eq(cma_p2p_hdr_parse(good, 15, &h), CMA_P2P_BAD);
	memcpy(buf, good, sizeof(buf));
	buf[3] = 0x21; /* version 2 */
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, sizeof(buf), &h), CMA_P2P_BAD);
	memcpy(buf, good, sizeof(buf));
	buf[3] = 0x1f; /* unknown kind */
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, sizeof(buf), &h), CMA_P2P_BAD);
	memcpy(buf, good, sizeof(buf));
	buf[4] = 0x80; /* unknown flag */
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, sizeof(buf), &h), CMA_P2P_BAD);
	memcpy(buf, good, sizeof(buf));
	buf[5] = 1; /* claims data that is not there */
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, sizeof(buf), &h), CMA_P2P_BAD);
	memcpy(buf, good, sizeof(buf));
	buf[6] = buf[7] = 0; /* a REQ from no listener */
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, sizeof(buf), &h), CMA_P2P_BAD);
}
END_TEST

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

START_TEST(addresses_normalised)
{
	struct sockaddr_in in4 = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(0xC0000201)};
	struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
	struct sockaddr bad = {.sa_family = AF_UNIX};
	uint8_t a[16], b[16];

	ck_assert_int_eq(cma_p2p_addr16((struct sockaddr *)&in4, a), 0);
	/* The same address as IPv4-mapped IPv6 compares equal. */
	in6.sin6_addr.s6_addr[10] = in6.sin6_addr.s6_addr[11] = 0xff;
	memcpy(&in6.sin6_addr.s6_addr[12], &in4.sin_addr, 4);
	ck_assert_int_eq(cma_p2p_addr16((struct sockaddr *)&in6, b), 0);
	ck_assert_mem_eq(a, b, 16);
	ck_assert_int_eq(cma_p2p_addr16(&bad, a), -1);
}
END_TEST

/* Both sides of one crossing reach opposite decisions: one connection. */
START_TEST(crossing_settled_once)
{
	struct cma_p2p_key at_a = {
		.local = ident(1, 7000), .remote = ident(2, 7000), .tag = 1};
	struct cma_p2p_key at_b = {
		.local = ident(2, 7000), .remote = ident(1, 7000), .tag = 1};

	/* A's request reaches B, B's reaches A; A is the lower identity. */
	ck_assert_int_eq(cma_p2p_decide(&at_b, CMA_P2P_PENDING), CMA_P2P_ADOPT);
	ck_assert_int_eq(cma_p2p_decide(&at_a, CMA_P2P_PENDING),
			 CMA_P2P_REJECT_LOST);
	/* Same address, ports decide. */
	at_a.remote = ident(1, 7001);
	at_b.local = ident(1, 7001);
	at_b.remote = ident(1, 7000);
	ck_assert_int_eq(cma_p2p_decide(&at_b, CMA_P2P_PENDING), CMA_P2P_ADOPT);
	ck_assert_int_eq(cma_p2p_decide(&at_a, CMA_P2P_PENDING),
			 CMA_P2P_REJECT_LOST);
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
	b.explicit_tag = true; /* ordinal 3 is not explicit tag 3 */
	ck_assert(!cma_p2p_key_equal(&a, &b));
	b = a;
	b.remote.port = 3;
	ck_assert(!cma_p2p_key_equal(&a, &b));
}
END_TEST

START_TEST(options_validated)
{
	struct cma_id_private id_priv;
	uint64_t tag = 77;
	int v = 1;

	memset(&id_priv, 0, sizeof(id_priv));
	id_priv.p2p_listen_opt = -1;
	ck_assert_int_eq(cma_p2p_set_option(&id_priv, RDMA_OPTION_ID_PEER2PEER,
					    &v, sizeof(v)),
			 0);
	ck_assert_int_eq(id_priv.p2p_listen_opt, 1);
	v = 2;
	ck_assert_int_eq(cma_p2p_set_option(&id_priv, RDMA_OPTION_ID_PEER2PEER,
					    &v, sizeof(v)),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(cma_p2p_set_option(&id_priv, RDMA_OPTION_ID_P2P_TAG,
					    &tag, sizeof(tag)),
			 0);
	ck_assert(id_priv.p2p_tag_set && id_priv.p2p_tag == 77);
	ck_assert_int_eq(
		cma_p2p_set_option(&id_priv, RDMA_OPTION_ID_P2P_TAG, &tag, 4),
		-1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(offsetof(struct rdma_conn_param, peer2peer_mode), 15);
}
END_TEST

static Suite *p2p_suite(void)
{
	Suite *s = suite_create("p2p");
	TCase *tc = tcase_create("pure");

	tcase_add_test(tc, header_round_trip);
	tcase_add_test(tc, header_rejects_malformed);
	tcase_add_test(tc, identity_order);
	tcase_add_test(tc, addresses_normalised);
	tcase_add_test(tc, crossing_settled_once);
	tcase_add_test(tc, decisions_by_state);
	tcase_add_test(tc, keys_match_exactly);
	tcase_add_test(tc, options_validated);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(p2p_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
