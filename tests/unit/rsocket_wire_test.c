// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for src/rsocket/wire.c: the byte layout of the connection
 * data, the immediate-data messages, the iomap size encoding, credit
 * sequence arithmetic and the datagram headers.  Pure: no device.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "rsocket/rs.h"
#include "unit.h"

START_TEST(msg_fields_round_trip)
{
	uint32_t m = rs_msg(RS_OP_SGL, 0x1234);

	ck_assert_uint_eq(m, (4u << 29) | 0x1234);
	ck_assert_int_eq(rs_msg_op(m), RS_OP_SGL);
	ck_assert_uint_eq(rs_msg_data(m), 0x1234);
	m = rs_msg(RS_OP_CTRL, RS_CTRL_SHUTDOWN);
	ck_assert_uint_eq(m, 0xe0000002u);
	/* Data never spills into the opcode bits. */
	m = rs_msg(RS_OP_DATA, 0xffffffffu);
	ck_assert_int_eq(rs_msg_op(m), RS_OP_DATA);
}
END_TEST

/*
 * iWARP's message SEND: the 32 bits in the sender's byte order (what
 * rdma-core puts on the wire), converted only when the peer's order
 * differs; a payload shorter than a message is refused.
 */
START_TEST(msg_send_payload)
{
	uint32_t msg = rs_msg(RS_OP_SGL, 0x1234), got = 0;
	uint8_t buf[RS_MSG_SEND_SIZE + 1];

	rs_msg_send_encode(buf, msg);
	ck_assert_int_eq(memcmp(buf, &msg, sizeof(msg)), 0);
	ck_assert_int_eq(rs_msg_send_decode(buf, RS_MSG_SEND_SIZE, false, &got),
			 0);
	ck_assert_uint_eq(got, msg);
	ck_assert_uint_eq(rs_msg_op(got), RS_OP_SGL);
	ck_assert_uint_eq(rs_msg_data(got), 0x1234);

	/* A longer payload: the first four bytes are the message. */
	ck_assert_int_eq(rs_msg_send_decode(buf, sizeof(buf), false, &got), 0);
	ck_assert_uint_eq(got, msg);

	/* A peer of the other byte order. */
	ck_assert_int_eq(rs_msg_send_decode(buf, RS_MSG_SEND_SIZE, true, &got),
			 0);
	ck_assert_uint_eq(got, __builtin_bswap32(msg));

	got = 7;
	ck_assert_int_eq(
		rs_msg_send_decode(buf, RS_MSG_SEND_SIZE - 1, false, &got), -1);
	ck_assert_int_eq(rs_msg_send_decode(NULL, 4, false, &got), -1);
	ck_assert_uint_eq(got, 7);
}
END_TEST

START_TEST(conn_data_layout)
{
	struct rs_conn_params p = {0}, q;
	struct rs_wire_conn w;
	const uint8_t *b = (const uint8_t *)&w;

	p.credits = 384;
	p.iomap_size = 300;
	p.target_sgl.addr = 0x1122334455667788ULL;
	p.target_sgl.key = 0xaabbccdd;
	p.target_sgl.length = RS_SGL_SIZE;
	p.data_buf.addr = 0x10000;
	p.data_buf.key = 7;
	p.data_buf.length = 65536;
	rs_conn_encode(&w, &p);
	ck_assert_uint_eq(b[0], 1); /* version */
	ck_assert_uint_eq(b[1] & RS_CONN_FLAG_IOMAP, RS_CONN_FLAG_IOMAP);
	ck_assert_uint_eq(b[1] & RS_CONN_FLAG_QUIESCE, RS_CONN_FLAG_QUIESCE);
	ck_assert_uint_eq(b[2], 384 >> 8); /* credits, big-endian */
	ck_assert_uint_eq(b[3], 384 & 0xff);
	ck_assert_uint_eq(b[8], 0x11); /* target_sgl.addr, big-endian */
	ck_assert_uint_eq(b[15], 0x88);
	ck_assert_uint_eq(b[16], 0xaa); /* key before length */
	ck_assert_uint_eq(b[23], RS_SGL_SIZE);
	ck_assert_uint_eq(b[36], 0); /* data_buf.length 65536 */
	ck_assert_uint_eq(b[37], 1);

	ck_assert_int_eq(rs_conn_decode(&w, sizeof(w), &q), 0);
	ck_assert_uint_eq(q.credits, 384);
	ck_assert_uint_eq(q.iomap_size, 256); /* coarse above 128 */
	ck_assert(q.has_iomap);
	ck_assert(q.can_quiesce);
	ck_assert(q.target_sgl.addr == p.target_sgl.addr);
	ck_assert_uint_eq(q.target_sgl.key, p.target_sgl.key);
	ck_assert_uint_eq(q.data_buf.length, 65536);
	/* rdma-core's flags: no RDMA_QUIESCE with that peer */
	w.flags &= (uint8_t)~RS_CONN_FLAG_QUIESCE;
	ck_assert_int_eq(rs_conn_decode(&w, sizeof(w), &q), 0);
	ck_assert(!q.can_quiesce);
}
END_TEST

START_TEST(conn_data_rejects_bad_input)
{
	struct rs_conn_params p = {0}, q;
	struct rs_wire_conn w;
	uint8_t big[56] = {0};

	p.credits = 16;
	p.target_sgl.length = 2;
	p.data_buf.length = 4096;
	rs_conn_encode(&w, &p);

	errno = 0;
	ck_assert_int_eq(rs_conn_decode(&w, sizeof(w) - 1, &q), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rs_conn_decode(NULL, 40, &q), -1);
	w.version = 2;
	ck_assert_int_eq(rs_conn_decode(&w, sizeof(w), &q), -1);
	ck_assert_int_eq(errno, ENOTSUP);
	w.version = 1;
	w.credits = 0;
	ck_assert_int_eq(rs_conn_decode(&w, sizeof(w), &q), -1);
	ck_assert_int_eq(errno, EINVAL);
	/* Padded private data (as a CM request delivers it) is fine. */
	rs_conn_encode(&w, &p);
	memcpy(big, &w, sizeof(w));
	ck_assert_int_eq(rs_conn_decode(big, sizeof(big), &q), 0);
}
END_TEST

START_TEST(iomap_size_encoding)
{
	ck_assert_uint_eq(rs_iomap_size_to_wire(0), 0);
	ck_assert_uint_eq(rs_iomap_size_to_wire(128), 128);
	ck_assert_uint_eq(rs_iomap_size_to_wire(512), 0x82);
	ck_assert_uint_eq(rs_iomap_size_from_wire(0x82), 512);
	ck_assert_uint_eq(rs_iomap_size_from_wire(100), 100);
	ck_assert_uint_eq(rs_iomap_size_from_wire(0xff), 0x7f00);
	ck_assert_uint_eq(rs_iomap_size_to_wire(1000000), 0xff);
}
END_TEST

START_TEST(credit_sequence_wraps)
{
	ck_assert(rs_seq_reached(10, 10));
	ck_assert(!rs_seq_reached(9, 10));
	ck_assert(rs_seq_reached(2, 0xfff0)); /* wrapped past the limit */
	ck_assert(!rs_seq_reached(0xfff0, 2));
}
END_TEST

START_TEST(ds_headers_round_trip)
{
	union rs_sockaddr a = {0}, b;
	struct ds_wire_hdr h;
	struct ds_wire_udp_hdr u;
	uint8_t op;
	uint32_t qpn;

	a.sin.sin_family = AF_INET;
	a.sin.sin_port = htons(7174);
	a.sin.sin_addr.s_addr = htonl(0xc0000201);
	ck_assert_uint_eq(ds_hdr_encode(&h, &a), DS_IPV4_HDR_LEN);
	ck_assert_uint_eq(ds_hdr_decode(&h, DS_IPV4_HDR_LEN, &b),
			  DS_IPV4_HDR_LEN);
	ck_assert_int_eq(b.sin.sin_port, a.sin.sin_port);
	ck_assert_uint_eq(b.sin.sin_addr.s_addr, a.sin.sin_addr.s_addr);
	ck_assert_uint_eq(ds_hdr_decode(&h, 4, &b), 0);
	h.length = 9;
	ck_assert_uint_eq(ds_hdr_decode(&h, sizeof(h), &b), 0);

	a.sin6.sin6_family = AF_INET6;
	ck_assert_uint_eq(ds_hdr_encode(&h, &a), DS_IPV6_HDR_LEN);
	ck_assert_uint_eq(ds_hdr_decode(&h, DS_IPV6_HDR_LEN - 1, &b), 0);

	a.sin.sin_family = AF_INET;
	ck_assert_uint_eq(ds_udp_hdr_encode(&u, RS_OP_DATA, 0x12345678, &a),
			  DS_UDP_IPV4_HDR_LEN);
	ck_assert_uint_eq(
		ds_udp_hdr_decode(&u, DS_UDP_IPV4_HDR_LEN, AF_INET, &op, &qpn),
		DS_UDP_IPV4_HDR_LEN);
	ck_assert_uint_eq(op, RS_OP_DATA);
	ck_assert_uint_eq(qpn, 0x345678);
	/* Wrong family for the header's version, bad tag, short. */
	ck_assert_uint_eq(ds_udp_hdr_decode(&u, sizeof(u), AF_INET6, &op, &qpn),
			  0);
	ck_assert_uint_eq(ds_udp_hdr_decode(&u, 8, AF_INET, &op, &qpn), 0);
	u.tag = 0;
	ck_assert_uint_eq(ds_udp_hdr_decode(&u, sizeof(u), AF_INET, &op, &qpn),
			  0);
}
END_TEST

Suite *rsocket_wire_suite(void)
{
	Suite *s = suite_create("rsocket_wire");
	TCase *tc = tcase_create("wire");

	tcase_add_test(tc, msg_fields_round_trip);
	tcase_add_test(tc, msg_send_payload);
	tcase_add_test(tc, conn_data_layout);
	tcase_add_test(tc, conn_data_rejects_bad_input);
	tcase_add_test(tc, iomap_size_encoding);
	tcase_add_test(tc, credit_sequence_wraps);
	tcase_add_test(tc, ds_headers_round_trip);
	suite_add_tcase(s, tc);
	return s;
}
