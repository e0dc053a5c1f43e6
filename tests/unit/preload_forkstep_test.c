// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The decisions of librspreload's RDMAV_FORK_SAFE handshake, without its
 * I/O (src/preload/forkstep.c, compiled in): what a lazy connection's
 * first read or write does with what its peer sent so far, the 8-byte
 * offer each end sends, and when two offers agree to go on over RDMA.
 * preload_fork_test.c runs the handshake itself under the preload.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <string.h>

#include "preload/preload.h"
#include "unit.h"

/* A passive end's offer: listening on port 8080, able to go on. */
static const uint8_t offer_p[RSP_FK_LEN] = {'R',  'S',	'F', 'K',
					    0x1f, 0x90, 'P', 1};

START_TEST(first_speaker_offers_and_reader_waits)
{
	ck_assert_int_eq(rsp_fk_step(true, NULL, -1), RSP_FK_OFFER);
	ck_assert_int_eq(rsp_fk_step(false, NULL, -1), RSP_FK_WAIT);
	/* the peer closed before a word */
	ck_assert_int_eq(rsp_fk_step(false, offer_p, 0), RSP_FK_TCP);
	ck_assert_int_eq(rsp_fk_step(true, offer_p, 0), RSP_FK_TCP);
}
END_TEST

START_TEST(peer_offer_is_answered_and_data_keeps_tcp)
{
	ck_assert_int_eq(rsp_fk_step(false, offer_p, 8), RSP_FK_ANSWER);
	ck_assert_int_eq(rsp_fk_step(true, offer_p, 8), RSP_FK_ANSWER);
	/* a partial offer: wait for the rest */
	ck_assert_int_eq(rsp_fk_step(false, offer_p, 2), RSP_FK_MORE);
	ck_assert_int_eq(rsp_fk_step(true, offer_p, 5), RSP_FK_MORE);
	/* a peer without the preload: its data, left for the program */
	ck_assert_int_eq(rsp_fk_step(false, (const uint8_t *)"GET / H", 7),
			 RSP_FK_TCP);
	ck_assert_int_eq(rsp_fk_step(true, (const uint8_t *)"R", 1),
			 RSP_FK_MORE);
	ck_assert_int_eq(rsp_fk_step(true, (const uint8_t *)"RSFX", 4),
			 RSP_FK_TCP);
}
END_TEST

START_TEST(offers_encode_and_decode)
{
	struct rsp_fk_msg m = {.port = htons(4242),
			       .role = RSP_FK_PASSIVE,
			       .ready = 1},
			  d;
	uint8_t buf[RSP_FK_LEN];

	rsp_fk_encode(buf, &m);
	ck_assert(!memcmp(buf, "RSFK", 4));
	ck_assert_int_eq(rsp_fk_decode(buf, &d), 0);
	ck_assert_int_eq(d.port, htons(4242));
	ck_assert_int_eq(d.role, RSP_FK_PASSIVE);
	ck_assert_int_eq(d.ready, 1);
	buf[6] = 'X'; /* no such role */
	ck_assert_int_eq(rsp_fk_decode(buf, &d), -1);
	buf[6] = RSP_FK_ACTIVE;
	buf[7] = 2;
	ck_assert_int_eq(rsp_fk_decode(buf, &d), -1);
	buf[7] = 0;
	buf[0] = 'r';
	ck_assert_int_eq(rsp_fk_decode(buf, &d), -1);
}
END_TEST

START_TEST(both_ready_opposite_roles_and_a_port_agree)
{
	struct rsp_fk_msg p = {.port = htons(7),
			       .role = RSP_FK_PASSIVE,
			       .ready = 1},
			  a = {.role = RSP_FK_ACTIVE, .ready = 1};

	ck_assert(rsp_fk_agree(&p, &a));
	ck_assert(rsp_fk_agree(&a, &p));
	a.ready = 0;
	ck_assert(!rsp_fk_agree(&p, &a));
	ck_assert(!rsp_fk_agree(&a, &p));
	a.ready = 1;
	p.port = 0; /* it could not listen */
	ck_assert(!rsp_fk_agree(&a, &p));
	p.port = htons(7);
	a.role = RSP_FK_PASSIVE; /* two accepted ends: no one connects */
	ck_assert(!rsp_fk_agree(&a, &p));
}
END_TEST

/*
 * The offer's port travels as it is given (network order), whatever the
 * host's order, and only the 8 bytes of the offer are read or written.
 */
START_TEST(offers_are_eight_bytes_port_as_given)
{
	struct rsp_fk_msg m = {.port = htons(0x1f90),
			       .role = RSP_FK_PASSIVE,
			       .ready = 1},
			  d;
	uint8_t buf[RSP_FK_LEN + 2];

	memset(buf, 0xee, sizeof(buf));
	rsp_fk_encode(buf, &m);
	ck_assert_mem_eq(buf, offer_p, RSP_FK_LEN);
	ck_assert_uint_eq(buf[RSP_FK_LEN], 0xee);
	ck_assert_uint_eq(buf[RSP_FK_LEN + 1], 0xee);
	memset(&d, 0, sizeof(d));
	ck_assert_int_eq(rsp_fk_decode(offer_p, &d), 0);
	ck_assert_uint_eq(ntohs(d.port), 0x1f90);
	/* an active end offers no port, and may not be ready */
	m = (struct rsp_fk_msg){.role = RSP_FK_ACTIVE};
	rsp_fk_encode(buf, &m);
	ck_assert_int_eq(rsp_fk_decode(buf, &d), 0);
	ck_assert_uint_eq(d.port, 0);
	ck_assert_int_eq(d.role, RSP_FK_ACTIVE);
	ck_assert_int_eq(d.ready, 0);
}
END_TEST

Suite *preload_forkstep_suite(void)
{
	Suite *s = suite_create("preload_forkstep");
	TCase *tc = tcase_create("handshake");

	tcase_add_test(tc, first_speaker_offers_and_reader_waits);
	tcase_add_test(tc, peer_offer_is_answered_and_data_keeps_tcp);
	tcase_add_test(tc, offers_encode_and_decode);
	tcase_add_test(tc, both_ready_opposite_roles_and_a_port_agree);
	tcase_add_test(tc, offers_are_eight_bytes_port_as_given);
	suite_add_tcase(s, tc);
	return s;
}
