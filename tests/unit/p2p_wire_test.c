// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The peer-to-peer header codec (src/p2p/p2p_wire.c): a header encoded is
 * parsed back field for field, in both versions; every byte comes from
 * the network, so anything this version does not define is CMA_P2P_BAD,
 * private data that is not ours at all is CMA_P2P_NONE, and nothing past
 * the given length is read.
 */
#include <config.h>

#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "p2p/p2p_wire.h"
#include "unit.h"

START_TEST(header_round_trip)
{
	struct cma_p2p_hdr in = {.kind = CMA_P2P_REQ,
				 .flags = CMA_P2P_F_EXPLICIT_TAG,
				 .data_len = 4,
				 .port = 7471,
				 .tag = 0x0102030405060708ull,
				 .incarnation = 0x1112131415ull,
				 .number = 0x161718},
			   out;
	uint8_t buf[CMA_P2P_HDR_MAX + 4] = {0};

	ck_assert_uint_eq(cma_p2p_hdr_encode(&in, buf), CMA_P2P_HDR_LEN);
	ck_assert_uint_eq(buf[0], 0xC5);
	ck_assert_uint_eq(buf[3], 0x31); /* version 3, REQ */
	ck_assert_uint_eq(buf[6], 7471 >> 8);
	ck_assert_uint_eq(buf[15], 0x08);
	ck_assert_uint_eq(buf[16], 0x11);
	ck_assert_uint_eq(buf[23], 0x18);
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, sizeof(buf), &out), CMA_P2P_OK);
	ck_assert_uint_eq(out.kind, in.kind);
	ck_assert_uint_eq(out.flags, in.flags);
	ck_assert_uint_eq(out.data_len, 4);
	ck_assert_uint_eq(out.len, CMA_P2P_HDR_LEN);
	ck_assert_uint_eq(out.port, 7471);
	ck_assert(out.tag == in.tag);
	ck_assert(out.incarnation == in.incarnation);
	ck_assert_uint_eq(out.number, in.number);
	ck_assert_uint_eq(out.qpn, 0);
}
END_TEST

/* Version 1 headers (16 bytes, no incarnation) are still understood. */
START_TEST(header_version_1_understood)
{
	struct cma_p2p_hdr in = {.kind = CMA_P2P_REQ,
				 .data_len = 2,
				 .len = CMA_P2P_HDR_LEN_V1,
				 .port = 7471,
				 .tag = 3},
			   out;
	uint8_t buf[CMA_P2P_HDR_MAX] = {0};
	size_t len = CMA_P2P_HDR_LEN_V1 + 2;

	ck_assert_uint_eq(cma_p2p_hdr_encode(&in, buf), CMA_P2P_HDR_LEN_V1);
	ck_assert_uint_eq(buf[3], 0x11);
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, len, &out), CMA_P2P_OK);
	ck_assert_uint_eq(out.len, CMA_P2P_HDR_LEN_V1);
	ck_assert(out.incarnation == 0);
	ck_assert(out.tag == 3);
	ck_assert_uint_eq(out.number, 0);
	/* cut short of a version 3 header */
	buf[3] = 0x31;
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, len, &out), CMA_P2P_BAD);
}
END_TEST

START_TEST(header_rejects_malformed)
{
	struct cma_p2p_hdr h = {.kind = CMA_P2P_REQ,
				.port = 1,
				.tag = 1,
				.incarnation = 1,
				.number = 1};
	uint8_t good[CMA_P2P_HDR_MAX], buf[CMA_P2P_HDR_MAX];

	cma_p2p_hdr_encode(&h, good);
	/* Not ours at all: ordinary private data. */
	ck_assert_int_eq(cma_p2p_hdr_parse("hello", 6, &h), CMA_P2P_NONE);
	ck_assert_int_eq(cma_p2p_hdr_parse(NULL, 0, &h), CMA_P2P_NONE);
	ck_assert_int_eq(cma_p2p_hdr_parse(good, 2, &h), CMA_P2P_NONE);
	/* Ours, but cut short. */
	ck_assert_int_eq(cma_p2p_hdr_parse(good, 15, &h), CMA_P2P_BAD);
	ck_assert_int_eq(cma_p2p_hdr_parse(good, CMA_P2P_HDR_LEN - 1, &h),
			 CMA_P2P_BAD);
	memcpy(buf, good, sizeof(buf));
	buf[3] = 0x41; /* version 4 */
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, CMA_P2P_HDR_LEN, &h),
			 CMA_P2P_BAD);
	memcpy(buf, good, sizeof(buf));
	buf[3] = 0x21; /* version 2: its challenges are gone */
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, CMA_P2P_HDR_LEN, &h),
			 CMA_P2P_BAD);
	memcpy(buf, good, sizeof(buf));
	buf[3] = 0x32; /* a REP with a number */
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, CMA_P2P_HDR_LEN, &h),
			 CMA_P2P_BAD);
	memcpy(buf, good, sizeof(buf));
	buf[3] = 0x1f; /* unknown kind */
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, CMA_P2P_HDR_LEN, &h),
			 CMA_P2P_BAD);
	memcpy(buf, good, sizeof(buf));
	buf[4] = 0x80; /* unknown flag */
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, CMA_P2P_HDR_LEN, &h),
			 CMA_P2P_BAD);
	memcpy(buf, good, sizeof(buf));
	buf[5] = 1; /* claims data that is not there */
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, CMA_P2P_HDR_LEN, &h),
			 CMA_P2P_BAD);
	memcpy(buf, good, sizeof(buf));
	buf[6] = buf[7] = 0; /* a REQ from no listener */
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, CMA_P2P_HDR_LEN, &h),
			 CMA_P2P_BAD);
}
END_TEST

/*
 * The 4 bytes earlier builds put after a REQ's data: invisible to the
 * header's parser, so such a request reads as any other.
 */
START_TEST(bytes_after_the_data_are_ignored)
{
	static const uint8_t old_ext[4] = {0xC5, 0x70, 0x58, 0x01};
	struct cma_p2p_hdr hdr = {.kind = CMA_P2P_REQ,
				  .port = 7471,
				  .tag = 1,
				  .data_len = 3,
				  .incarnation = 2,
				  .number = 3};
	struct cma_p2p_hdr got;
	uint8_t buf[64] = {0};
	size_t n = cma_p2p_hdr_encode(&hdr, buf);

	memcpy(buf + n, "abc", 3);
	memcpy(buf + n + 3, old_ext, sizeof(old_ext));
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, n + 3 + sizeof(old_ext), &got),
			 CMA_P2P_OK);
	ck_assert_uint_eq(got.data_len, 3);
	ck_assert_uint_eq(got.tag, 1);
}
END_TEST

/*
 * The parser reads nothing past @len: each header sits in a buffer of
 * exactly that size (an ASan build sees any read past it); one cut a byte
 * short is CMA_P2P_BAD, whatever the missing byte would have said.
 */
START_TEST(nothing_past_the_length_is_read)
{
	struct cma_p2p_hdr hdr = {.kind = CMA_P2P_REQ,
				  .port = 9,
				  .tag = 2,
				  .incarnation = 4,
				  .number = 5},
			   got;
	uint8_t enc[CMA_P2P_HDR_MAX], *tail;
	size_t n = cma_p2p_hdr_encode(&hdr, enc);
	uint8_t *heap = malloc(n);

	ck_assert_ptr_nonnull(heap);
	memcpy(heap, enc, n);
	ck_assert_int_eq(cma_p2p_hdr_parse(heap, n, &got), CMA_P2P_OK);
	/* the same bytes, the last one beyond the length given */
	tail = malloc(n - 1);
	ck_assert_ptr_nonnull(tail);
	memcpy(tail, enc, n - 1);
	ck_assert_int_eq(cma_p2p_hdr_parse(tail, n - 1, &got), CMA_P2P_BAD);
	ck_assert_int_eq(cma_p2p_hdr_parse(tail, 3, &got), CMA_P2P_BAD);
	free(tail);
	free(heap);
}
END_TEST

/*
 * Every kind this version defines goes through; only a REQ needs the
 * port of the listener it comes from (answers name none), and kinds 0, 6
 * (version 2's challenge), 8 (the retired question) and 11 to 15 are not
 * this version's.
 */
static bool kind_defined(unsigned int kind)
{
	return (kind >= CMA_P2P_REQ && kind <= CMA_P2P_REJ_BAD) ||
	       kind == CMA_P2P_REJ_STALE || kind == CMA_P2P_ANSWER ||
	       kind == CMA_P2P_NOTICE;
}

START_TEST(every_defined_kind_and_no_other)
{
	struct cma_p2p_hdr hdr = {.incarnation = 3}, got;
	uint8_t buf[CMA_P2P_HDR_MAX];
	unsigned int kind;

	for (kind = CMA_P2P_REP; kind <= CMA_P2P_NOTICE; kind++) {
		if (!kind_defined(kind))
			continue;
		hdr.kind = (uint8_t)kind;
		hdr.tag = 5;
		hdr.qpn = 0;
		hdr.number = 0;
		if (kind == CMA_P2P_NOTICE || kind == CMA_P2P_ANSWER) {
			hdr.tag = 0;
			hdr.qpn = 0x11;
			hdr.number = 6;
		}
		ck_assert_uint_eq(cma_p2p_hdr_encode(&hdr, buf),
				  CMA_P2P_HDR_LEN);
		ck_assert_int_eq(cma_p2p_hdr_parse(buf, CMA_P2P_HDR_LEN, &got),
				 CMA_P2P_OK);
		ck_assert_uint_eq(got.kind, kind);
		ck_assert_uint_eq(got.port, 0);
		ck_assert(got.tag == hdr.tag);
		ck_assert_uint_eq(got.qpn, hdr.qpn);
		ck_assert_uint_eq(got.number, hdr.number);
	}
	for (kind = 0; kind < 16; kind++) {
		if (kind_defined(kind))
			continue;
		buf[3] = (uint8_t)(CMA_P2P_VERSION << 4 | kind);
		ck_assert_int_eq(cma_p2p_hdr_parse(buf, CMA_P2P_HDR_LEN, &got),
				 CMA_P2P_BAD);
	}
}
END_TEST

/*
 * A NOTICE and its ANSWER name REQs by their QP, incarnation and number,
 * all three stated; they carry no tag, no data and no flag (0x04, the
 * retired question's "live", is refused).  A REP or REJ names no REQ.
 */
START_TEST(notice_and_answer)
{
	struct cma_p2p_hdr q = {.kind = CMA_P2P_NOTICE,
				.port = 7471,
				.qpn = 0xABCDEF,
				.incarnation = 0xA1A2A3A4A5ull,
				.number = 0xB1B2B3},
			   got;
	uint8_t buf[CMA_P2P_HDR_MAX], bad[CMA_P2P_HDR_MAX];

	cma_p2p_hdr_encode(&q, buf);
	ck_assert_uint_eq(buf[3], 0x3A);
	ck_assert_uint_eq(buf[13], 0xAB);
	ck_assert_uint_eq(buf[16], 0xA1);
	ck_assert_uint_eq(buf[23], 0xB3);
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, CMA_P2P_HDR_LEN, &got),
			 CMA_P2P_OK);
	ck_assert_uint_eq(got.qpn, 0xABCDEF);
	ck_assert(got.incarnation == q.incarnation);
	ck_assert_uint_eq(got.number, 0xB1B2B3);
	ck_assert(got.tag == 0);
	/* no flag, on either; the question (kind 8) is gone */
	memcpy(bad, buf, sizeof(bad));
	bad[4] = 0x04;
	ck_assert_int_eq(cma_p2p_hdr_parse(bad, CMA_P2P_HDR_LEN, &got),
			 CMA_P2P_BAD);
	bad[3] = 0x39;
	ck_assert_int_eq(cma_p2p_hdr_parse(bad, CMA_P2P_HDR_LEN, &got),
			 CMA_P2P_BAD);
	bad[4] = 0;
	ck_assert_int_eq(cma_p2p_hdr_parse(bad, CMA_P2P_HDR_LEN, &got),
			 CMA_P2P_OK);
	ck_assert_uint_eq(got.kind, CMA_P2P_ANSWER);
	bad[3] = 0x38;
	ck_assert_int_eq(cma_p2p_hdr_parse(bad, CMA_P2P_HDR_LEN, &got),
			 CMA_P2P_BAD);
	/* a QP number is 24 bits */
	memcpy(bad, buf, sizeof(bad));
	bad[12] = 1;
	ck_assert_int_eq(cma_p2p_hdr_parse(bad, CMA_P2P_HDR_LEN, &got),
			 CMA_P2P_BAD);
	/* the REQ named completely */
	memcpy(bad, buf, sizeof(bad));
	bad[21] = bad[22] = bad[23] = 0;
	ck_assert_int_eq(cma_p2p_hdr_parse(bad, CMA_P2P_HDR_LEN, &got),
			 CMA_P2P_BAD);
	/* no data, no tag */
	memcpy(bad, buf, sizeof(bad));
	bad[4] = CMA_P2P_F_EXPLICIT_TAG;
	ck_assert_int_eq(cma_p2p_hdr_parse(bad, CMA_P2P_HDR_LEN, &got),
			 CMA_P2P_BAD);
	/* only version 3 names REQs */
	q.len = CMA_P2P_HDR_LEN_V1;
	cma_p2p_hdr_encode(&q, bad);
	ck_assert_int_eq(cma_p2p_hdr_parse(bad, CMA_P2P_HDR_LEN_V1, &got),
			 CMA_P2P_BAD);
	/* a REP names no REQ */
	q.len = 0;
	q.kind = CMA_P2P_REP;
	cma_p2p_hdr_encode(&q, bad);
	ck_assert_int_eq(cma_p2p_hdr_parse(bad, CMA_P2P_HDR_LEN, &got),
			 CMA_P2P_BAD);
}
END_TEST

/*
 * A REP from a QP already at RTS for a dead REQ carries that QP's PSNs
 * after the header (30 bytes, the data after them); only a REP may, and
 * only with all six bytes there.
 */
START_TEST(rep_with_psns)
{
	struct cma_p2p_hdr rep = {.kind = CMA_P2P_REP,
				  .flags = CMA_P2P_F_PSNS,
				  .data_len = 2,
				  .port = 7471,
				  .incarnation = 9,
				  .rq_psn = 0xA1A2A3,
				  .sq_psn = 0xB1B2B3},
			   got;
	uint8_t buf[CMA_P2P_HDR_MAX + 2] = {0}, bad[CMA_P2P_HDR_MAX + 2];

	ck_assert_uint_eq(cma_p2p_hdr_encode(&rep, buf), CMA_P2P_HDR_MAX);
	ck_assert_uint_eq(buf[24], 0xA1);
	ck_assert_uint_eq(buf[29], 0xB3);
	buf[30] = 'h';
	buf[31] = 'i';
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, sizeof(buf), &got), CMA_P2P_OK);
	ck_assert_uint_eq(got.len, CMA_P2P_HDR_MAX);
	ck_assert_uint_eq(got.flags, CMA_P2P_F_PSNS);
	ck_assert_uint_eq(got.rq_psn, 0xA1A2A3);
	ck_assert_uint_eq(got.sq_psn, 0xB1B2B3);
	ck_assert_uint_eq(got.data_len, 2);
	/* the PSNs, or the data, cut short */
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, CMA_P2P_HDR_MAX - 1, &got),
			 CMA_P2P_BAD);
	ck_assert_int_eq(cma_p2p_hdr_parse(buf, CMA_P2P_HDR_MAX + 1, &got),
			 CMA_P2P_BAD);
	/* not on a REQ, nor on a refusal */
	memcpy(bad, buf, sizeof(bad));
	bad[3] = (uint8_t)(CMA_P2P_VERSION << 4 | CMA_P2P_REJ_RETRY);
	ck_assert_int_eq(cma_p2p_hdr_parse(bad, sizeof(bad), &got),
			 CMA_P2P_BAD);
	rep.kind = CMA_P2P_REQ;
	rep.number = 1;
	cma_p2p_hdr_encode(&rep, bad);
	ck_assert_int_eq(cma_p2p_hdr_parse(bad, sizeof(bad), &got),
			 CMA_P2P_BAD);
	/* version 1 has no room for them */
	memcpy(bad, buf, sizeof(bad));
	bad[3] = 0x12;
	ck_assert_int_eq(cma_p2p_hdr_parse(bad, sizeof(bad), &got),
			 CMA_P2P_BAD);
}
END_TEST

Suite *p2p_wire_suite(void)
{
	Suite *s = suite_create("p2p_wire");
	TCase *tc = tcase_create("header");

	tcase_add_test(tc, header_round_trip);
	tcase_add_test(tc, header_version_1_understood);
	tcase_add_test(tc, header_rejects_malformed);
	tcase_add_test(tc, bytes_after_the_data_are_ignored);
	tcase_add_test(tc, nothing_past_the_length_is_read);
	tcase_add_test(tc, every_defined_kind_and_no_other);
	tcase_add_test(tc, notice_and_answer);
	tcase_add_test(tc, rep_with_psns);
	suite_add_tcase(s, tc);
	return s;
}
