// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The kernel <-> verbs structure conversions (src/cm/abi_convert.c): every
 * field of a QP's attributes and of both path record formats lands where
 * verbs expects it (the SA's wire format packs several per byte), and a
 * connection's parameters go to the kernel with rdma-core's defaults when
 * the caller gives none.
 */
#include <config.h>

#include <check.h>
#include <endian.h>
#include <string.h>

#include "cm/abi_convert.h"
#include "cm/cma.h"
#include "unit.h"

START_TEST(qp_attr_fields_and_mask)
{
	struct ib_uverbs_qp_attr k;
	struct ibv_qp_attr a;
	int mask = 0;

	memset(&k, 0, sizeof(k));
	k.qp_attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU;
	k.qp_state = IBV_QPS_RTR;
	k.path_mtu = IBV_MTU_1024;
	k.dest_qp_num = 0x11;
	k.rq_psn = 0x222;
	k.qkey = RDMA_UDP_QKEY;
	k.ah_attr.dlid = 0x33;
	k.ah_attr.is_global = 1;
	k.ah_attr.grh.dgid[15] = 9;
	k.ah_attr.grh.hop_limit = 64;
	k.ah_attr.port_num = 1;
	k.max_dest_rd_atomic = 4;
	k.min_rnr_timer = 12;
	k.pkey_index = 3;
	cma_qp_attr_from_kern(&a, &mask, &k);
	ck_assert_int_eq(mask, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU);
	ck_assert_int_eq(a.qp_state, IBV_QPS_RTR);
	ck_assert_int_eq(a.path_mtu, IBV_MTU_1024);
	ck_assert_uint_eq(a.dest_qp_num, 0x11);
	ck_assert_uint_eq(a.rq_psn, 0x222);
	ck_assert_uint_eq(a.qkey, RDMA_UDP_QKEY);
	ck_assert_uint_eq(a.ah_attr.dlid, 0x33);
	ck_assert_uint_eq(a.ah_attr.is_global, 1);
	ck_assert_uint_eq(a.ah_attr.grh.dgid.raw[15], 9);
	ck_assert_uint_eq(a.ah_attr.grh.hop_limit, 64);
	ck_assert_uint_eq(a.ah_attr.port_num, 1);
	ck_assert_uint_eq(a.max_dest_rd_atomic, 4);
	ck_assert_uint_eq(a.min_rnr_timer, 12);
	ck_assert_uint_eq(a.pkey_index, 3);
}
END_TEST

START_TEST(wire_path_unpacks_bit_fields)
{
	struct ibv_path_record w;
	struct ibv_sa_path_rec p;

	memset(&w, 0, sizeof(w));
	w.dlid = htobe16(5);
	w.slid = htobe16(6);
	/* flow label 0xabcde, hop limit 0x40 */
	w.flowlabel_hoplimit = htobe32((0xabcdeu << 8) | 0x40);
	w.tclass = 0x20;
	w.reversible_numpath = 0x80 | 3;
	w.pkey = htobe16(0xffff);
	w.qosclass_sl = htobe16(0x0ab5);
	w.mtu = (2 << 6) | IBV_MTU_2048;
	w.rate = (1 << 6) | 7;
	w.packetlifetime = (3 << 6) | 18;
	w.preference = 1;
	cma_path_from_wire(&p, &w);
	ck_assert_uint_eq(be16toh(p.dlid), 5);
	ck_assert_uint_eq(be16toh(p.slid), 6);
	ck_assert_uint_eq(be32toh(p.flow_label), 0xabcde);
	ck_assert_uint_eq(p.hop_limit, 0x40);
	ck_assert_uint_eq(p.traffic_class, 0x20);
	ck_assert_int_eq(p.reversible, 1);
	ck_assert_uint_eq(p.numb_path, 3);
	ck_assert_uint_eq(be16toh(p.pkey), 0xffff);
	ck_assert_uint_eq(p.sl, 5);
	ck_assert_uint_eq(p.mtu_selector, 2);
	ck_assert_uint_eq(p.mtu, IBV_MTU_2048);
	ck_assert_uint_eq(p.rate_selector, 1);
	ck_assert_uint_eq(p.rate, 7);
	ck_assert_uint_eq(p.packet_life_time_selector, 3);
	ck_assert_uint_eq(p.packet_life_time, 18);
	ck_assert_uint_eq(p.preference, 1);
}
END_TEST

START_TEST(user_path_record_copies)
{
	struct ib_user_path_rec u;
	struct ibv_sa_path_rec p;

	memset(&u, 0, sizeof(u));
	u.sgid[0] = 0xfe;
	u.dgid[15] = 1;
	u.pkey = htobe16(0x8001);
	u.mtu = IBV_MTU_4096;
	u.numb_path = 1;
	u.reversible = 1;
	u.sl = 2;
	cma_path_from_user_rec(&p, &u);
	ck_assert_uint_eq(p.sgid.raw[0], 0xfe);
	ck_assert_uint_eq(p.dgid.raw[15], 1);
	ck_assert_uint_eq(be16toh(p.pkey), 0x8001);
	ck_assert_uint_eq(p.mtu, IBV_MTU_4096);
	ck_assert_int_eq(p.reversible, 1);
	ck_assert_uint_eq(p.sl, 2);
}
END_TEST

START_TEST(conn_param_defaults_and_private_data)
{
	struct rdma_ucm_conn_param k;
	const char data[] = "hello";
	struct rdma_conn_param p = {
		.private_data = data,
		.private_data_len = sizeof(data),
		.flow_control = 0,
		.retry_count = 3,
		.rnr_retry_count = 5,
	};

	cma_conn_param_to_kern(&k, NULL, 0x42, 1, 4, 8);
	ck_assert_uint_eq(k.valid, 1);
	ck_assert_uint_eq(k.qp_num, 0x42);
	ck_assert_uint_eq(k.srq, 1);
	ck_assert_uint_eq(k.responder_resources, 4);
	ck_assert_uint_eq(k.initiator_depth, 8);
	ck_assert_uint_eq(k.retry_count, 7);
	ck_assert_uint_eq(k.rnr_retry_count, 7);
	ck_assert_uint_eq(k.flow_control, 0); /* as rdma-core's peers see */
	ck_assert_uint_eq(k.private_data_len, 0);

	cma_conn_param_to_kern(&k, &p, 1, 0, 1, 1);
	ck_assert_uint_eq(k.retry_count, 3);
	ck_assert_uint_eq(k.rnr_retry_count, 5);
	ck_assert_uint_eq(k.flow_control, 0);
	ck_assert_uint_eq(k.private_data_len, sizeof(data));
	ck_assert_mem_eq(k.private_data, data, sizeof(data));
}
END_TEST

Suite *abi_convert_suite(void)
{
	Suite *s = suite_create("abi_convert");
	TCase *tc = tcase_create("pure");

	tcase_add_test(tc, qp_attr_fields_and_mask);
	tcase_add_test(tc, wire_path_unpacks_bit_fields);
	tcase_add_test(tc, user_path_record_copies);
	tcase_add_test(tc, conn_param_defaults_and_private_data);
	suite_add_tcase(s, tc);
	return s;
}
