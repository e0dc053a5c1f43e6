// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * RAI_SA's ServiceRecord query (src/addrinfo/addrinfo_sa.c) against constructed
 * MADs: no InfiniBand fabric is needed.  The request is checked byte by
 * byte where the SA reads it, and answers are built here the way an SA
 * lays out a SubnAdmGetTableResp (IBA 15.2.5.14 ServiceRecord, 176 bytes
 * each, AttributeOffset in 8-byte words), including malformed ones.  Then
 * rdma_getaddrinfo(RAI_SA) end to end: the query goes from the first
 * InfiniBand port of the fake device to the fake libibumad's SA, as an
 * RMPP agent, and its answer, however long, comes back as the list.
 */
#include <config.h>

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/ib.h>

#include "acm/acm.h"
#include "cm/cma.h"
#include "fake_ucma.h"
#include "fake_umad.h"
#include "fake_verbs.h"
#include "unit.h"

#define HDR 56
#define REC 176
#define TID 0x8000123400000007ull

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* A GetTableResp header for @tid with SA status @status. */
static void resp_header(uint8_t *mad, uint64_t tid, uint16_t status)
{
	mad[0] = 1;
	mad[1] = 0x03; /* SubnAdm */
	mad[2] = 2;
	mad[3] = 0x92; /* GetTableResp */
	put16(mad + 4, status);
	put64(mad + 8, tid);
	put16(mad + 16, 0x0031); /* ServiceRecord */
	put16(mad + 44, REC / 8); /* AttributeOffset */
}

/* One record: service @id at GID ...:@gid_low, P_Key @pkey, @name. */
static void resp_record(uint8_t *rec, uint64_t id, uint8_t gid_low,
			uint16_t pkey, const char *name)
{
	put64(rec, id);
	rec[8] = 0xfe;
	rec[9] = 0x80;
	rec[23] = gid_low;
	put16(rec + 24, pkey);
	if (name)
		memcpy(rec + 48, name, strlen(name));
}

static const struct rdma_addrinfo no_hints;

START_TEST(service_strings)
{
	struct cma_sa_svc svc;
	char longname[80];

	ck_assert_int_eq(cma_sa_svc_parse_service("0x1000000000000001", &svc),
			 0);
	ck_assert(svc.by_id);
	ck_assert_uint_eq(svc.id, 0x1000000000000001ull);
	ck_assert_int_eq(cma_sa_svc_parse_service("4242", &svc), 0);
	ck_assert(svc.by_id);
	ck_assert_uint_eq(svc.id, 4242);

	ck_assert_int_eq(cma_sa_svc_parse_service("my.storage", &svc), 0);
	ck_assert(!svc.by_id);
	ck_assert_str_eq(svc.name, "my.storage");
	/* Not a number after all: a name. */
	ck_assert_int_eq(cma_sa_svc_parse_service("12abc", &svc), 0);
	ck_assert(!svc.by_id);
	ck_assert_int_eq(cma_sa_svc_parse_service("-1", &svc), 0);
	ck_assert(!svc.by_id);

	/* 63 characters fit the 64-byte field with its terminator; 64 not. */
	memset(longname, 'n', sizeof(longname));
	longname[63] = '\0';
	ck_assert_int_eq(cma_sa_svc_parse_service(longname, &svc), 0);
	longname[63] = 'n';
	longname[64] = '\0';
	errno = 0;
	ck_assert_int_eq(cma_sa_svc_parse_service(longname, &svc), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(cma_sa_svc_parse_service("", &svc), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(cma_sa_svc_parse_service(NULL, &svc), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(request_by_id)
{
	struct cma_sa_svc svc;
	uint8_t mad[256];

	cma_sa_svc_parse_service("0x0123456789abcdef", &svc);
	memset(mad, 0xaa, sizeof(mad));
	cma_sa_svc_build(mad, TID, &svc);
	ck_assert_uint_eq(mad[0], 1); /* base version */
	ck_assert_uint_eq(mad[1], 0x03); /* SubnAdm */
	ck_assert_uint_eq(mad[2], 2); /* SA class version */
	ck_assert_uint_eq(mad[3], 0x12); /* GetTable */
	ck_assert_uint_eq(get64(mad + 8), TID);
	ck_assert_uint_eq(mad[16], 0x00);
	ck_assert_uint_eq(mad[17], 0x31); /* ServiceRecord */
	ck_assert_uint_eq(mad[24], 0); /* no RMPP: one MAD */
	ck_assert_uint_eq(mad[26], 0);
	ck_assert_uint_eq(get64(mad + 48), 1ull << 0); /* ServiceID */
	ck_assert_uint_eq(get64(mad + HDR), 0x0123456789abcdefull);
	ck_assert_uint_eq(mad[HDR + 48], 0); /* no name */
}
END_TEST

START_TEST(request_by_name)
{
	struct cma_sa_svc svc;
	uint8_t mad[256];

	cma_sa_svc_parse_service("storage", &svc);
	cma_sa_svc_build(mad, TID, &svc);
	ck_assert_uint_eq(mad[3], 0x12);
	ck_assert_uint_eq(get64(mad + 48), 1ull << 6); /* ServiceName */
	ck_assert_uint_eq(get64(mad + HDR), 0);
	ck_assert_int_eq(memcmp(mad + HDR + 48, "storage", 8), 0);
}
END_TEST

START_TEST(answer_with_two_records)
{
	struct cma_acm_port port;
	struct rdma_addrinfo tmpl, *res = NULL, *e;
	struct sockaddr_ib *sib;
	size_t len = HDR + 2 * REC;
	uint8_t *mad = calloc(1, len);

	memset(&port, 0, sizeof(port));
	port.gid.raw[0] = 0xfe;
	port.gid.raw[15] = 0x77;
	port.pkey = 0xffff;
	memset(&tmpl, 0, sizeof(tmpl));
	tmpl.ai_flags = RAI_SA;

	resp_header(mad, TID, 0);
	resp_record(mad + HDR, 0x1000000000000042ull, 0x11, 0x8001, "alpha");
	resp_record(mad + HDR + REC, 0x1000000000000042ull, 0x22, 0xffff, NULL);
	ck_assert_int_eq(cma_sa_svc_parse(mad, len, TID, &tmpl, &port, &res),
			 0);

	e = res;
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(e->ai_family, AF_IB);
	ck_assert_int_eq(e->ai_flags, RAI_SA);
	ck_assert_int_eq(e->ai_port_space, RDMA_PS_IB);
	ck_assert_int_eq(e->ai_qp_type, IBV_QPT_RC);
	ck_assert_uint_eq(e->ai_dst_len, sizeof(struct sockaddr_ib));
	sib = (struct sockaddr_ib *)e->ai_dst_addr;
	ck_assert_uint_eq(sib->sib_family, AF_IB);
	ck_assert_uint_eq(be64toh(sib->sib_sid), 0x1000000000000042ull);
	ck_assert_uint_eq(sib->sib_sid_mask, ~0ull);
	ck_assert_uint_eq(be16toh(sib->sib_pkey), 0x8001);
	ck_assert_uint_eq(sib->sib_addr.sib_raw[0], 0xfe);
	ck_assert_uint_eq(sib->sib_addr.sib_raw[15], 0x11);
	ck_assert_str_eq(e->ai_dst_canonname, "alpha");
	/* The source is the port asked from. */
	sib = (struct sockaddr_ib *)e->ai_src_addr;
	ck_assert_ptr_nonnull(sib);
	ck_assert_uint_eq(e->ai_src_len, sizeof(struct sockaddr_ib));
	ck_assert_uint_eq(sib->sib_addr.sib_raw[15], 0x77);
	ck_assert_uint_eq(be16toh(sib->sib_pkey), 0xffff);

	e = e->ai_next;
	ck_assert_ptr_nonnull(e);
	sib = (struct sockaddr_ib *)e->ai_dst_addr;
	ck_assert_uint_eq(sib->sib_addr.sib_raw[15], 0x22);
	ck_assert_ptr_null(e->ai_dst_canonname); /* no name registered */
	ck_assert_ptr_null(e->ai_next);
	rdma_freeaddrinfo(res);
	free(mad);
}
END_TEST

/* The last RMPP segment is padded with zeros: no record comes of it. */
START_TEST(answer_padding_ignored)
{
	struct rdma_addrinfo *res = NULL;
	size_t len = HDR + 3 * REC + 40;
	uint8_t *mad = calloc(1, len);

	resp_header(mad, TID, 0);
	resp_record(mad + HDR, 7, 0x11, 0xffff, "x");
	ck_assert_int_eq(cma_sa_svc_parse(mad, len, TID, &no_hints, NULL, &res),
			 0);
	ck_assert_ptr_nonnull(res);
	ck_assert_ptr_null(res->ai_next);
	ck_assert_ptr_null(res->ai_src_addr); /* no port given */
	rdma_freeaddrinfo(res);
	free(mad);
}
END_TEST

/* Records spaced wider than 176 bytes (a later SA): found by the offset. */
START_TEST(answer_wider_stride)
{
	struct rdma_addrinfo *res = NULL;
	struct sockaddr_ib *sib;
	size_t len = HDR + 2 * (REC + 16);
	uint8_t *mad = calloc(1, len);

	resp_header(mad, TID, 0);
	put16(mad + 44, (REC + 16) / 8);
	resp_record(mad + HDR, 1, 0x11, 0xffff, NULL);
	resp_record(mad + HDR + REC + 16, 2, 0x22, 0xffff, NULL);
	ck_assert_int_eq(cma_sa_svc_parse(mad, len, TID, &no_hints, NULL, &res),
			 0);
	sib = (struct sockaddr_ib *)res->ai_next->ai_dst_addr;
	ck_assert_uint_eq(be64toh(sib->sib_sid), 2);
	rdma_freeaddrinfo(res);
	free(mad);
}
END_TEST

static void expect_error(const uint8_t *mad, size_t len, uint64_t tid, int err)
{
	struct rdma_addrinfo *res = (void *)&res;

	errno = 0;
	ck_assert_int_eq(cma_sa_svc_parse(mad, len, tid, &no_hints, NULL, &res),
			 -1);
	ck_assert_int_eq(errno, err);
	ck_assert_ptr_eq(res, (void *)&res); /* untouched */
}

START_TEST(answers_refused)
{
	uint8_t mad[HDR + REC];

	memset(mad, 0, sizeof(mad));
	resp_header(mad, TID, 0);
	resp_record(mad + HDR, 1, 0x11, 0xffff, NULL);

	expect_error(mad, HDR - 1, TID, EPROTO); /* shorter than a header */
	expect_error(mad, sizeof(mad), TID + 1, EPROTO); /* someone else's */
	mad[3] = 0x81; /* GetResp, not GetTableResp */
	expect_error(mad, sizeof(mad), TID, EPROTO);
	mad[3] = 0x92;
	mad[17] = 0x35; /* PathRecord */
	expect_error(mad, sizeof(mad), TID, EPROTO);
	mad[17] = 0x31;
	mad[1] = 0x04; /* not SubnAdm */
	expect_error(mad, sizeof(mad), TID, EPROTO);
	mad[1] = 0x03;
	put16(mad + 44, 0); /* records overlapping one another */
	expect_error(mad, sizeof(mad), TID, EPROTO);
	put16(mad + 44, REC / 8);

	put16(mad + 4, 3 << 8); /* ERR_NO_RECORDS */
	expect_error(mad, sizeof(mad), TID, ENOENT);
	put16(mad + 4, 1 << 8); /* ERR_NO_RESOURCES */
	expect_error(mad, sizeof(mad), TID, EIO);
	put16(mad + 4, 0);

	/* A well-formed empty table: no such service. */
	expect_error(mad, HDR, TID, ENOENT);
	memset(mad + HDR, 0, REC);
	expect_error(mad, sizeof(mad), TID, ENOENT);
}
END_TEST

/* --- the query through the fake SA ------------------------------------------ */

static int sa_records; /* how many records the SA answers with; 0: silent */

/* The SA: a GetTableResp for the request's TID with sa_records records. */
static size_t sa_table(const uint8_t *req, uint8_t *resp)
{
	size_t len = HDR + (size_t)sa_records * REC;
	int i;

	if (!sa_records)
		return 0;
	ck_assert_uint_le(len, FAKE_UMAD_ANSWER_MAX);
	memset(resp, 0, len);
	resp_header(resp, get64(req + 8), 0);
	for (i = 0; i < sa_records; i++)
		resp_record(resp + HDR + (size_t)i * REC, 4242,
			    (uint8_t)(0x10 + i), 0xffff, i ? NULL : "svc");
	return len;
}

/* This host: one InfiniBand port, fe80::77, with a subnet manager. */
static void query_setup(void)
{
	struct fake_verbs_port port = {.ngids = 1,
				       .link_layer = IBV_LINK_LAYER_INFINIBAND,
				       .lid = 7,
				       .sm_lid = 1};

	fake_ucma_install();
	fake_verbs_install(false);
	port.gids[0].raw[0] = 0xfe;
	port.gids[0].raw[1] = 0x80;
	port.gids[0].raw[15] = 0x77;
	fake_verbs_set_port(NULL, &port);
	cma_acm_ports_forget();
	fake_umad_install(sa_table);
	sa_records = 2;
}

static void query_teardown(void)
{
	struct fake_umad_state st = fake_umad_state();

	ck_assert_int_eq(st.opens, st.closes);
	ck_assert_int_eq(st.registers, st.unregisters);
	cma_acm_ports_forget();
	fake_ucma_uninstall();
}

static int sa_lookup(const char *node, const char *service,
		     struct rdma_addrinfo **res)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_SA};

	*res = NULL;
	errno = 0;
	return rdma_getaddrinfo(node, service, &hints, res);
}

static int count(const struct rdma_addrinfo *e)
{
	int n = 0;

	for (; e; e = e->ai_next)
		n++;
	return n;
}

START_TEST(query_answered_by_the_sa)
{
	struct rdma_addrinfo *res;
	struct sockaddr_ib *sib;
	struct fake_umad_state st;

	ck_assert_int_eq(sa_lookup(NULL, "4242", &res), 0);
	ck_assert_int_eq(count(res), 2);
	ck_assert_str_eq(res->ai_dst_canonname, "svc");
	sib = (struct sockaddr_ib *)res->ai_src_addr;
	ck_assert_uint_eq(sib->sib_addr.sib_raw[15], 0x77);
	sib = (struct sockaddr_ib *)res->ai_next->ai_dst_addr;
	ck_assert_uint_eq(sib->sib_addr.sib_raw[15], 0x11);
	rdma_freeaddrinfo(res);
	st = fake_umad_state();
	ck_assert_int_eq(st.sends, 1);
	ck_assert_int_eq(st.rmpp, 1); /* a table may span segments */
	ck_assert_int_eq(st.dlid, 1);
	ck_assert_uint_eq(get64(st.last_mad + HDR), 4242);
}
END_TEST

/* An answer longer than the first receive buffer (4 KiB) still arrives. */
START_TEST(a_long_answer_is_received_whole)
{
	struct rdma_addrinfo *res;

	sa_records = 40;
	ck_assert_int_eq(sa_lookup(NULL, "4242", &res), 0);
	ck_assert_int_eq(count(res), 40);
	rdma_freeaddrinfo(res);
}
END_TEST

START_TEST(query_failures)
{
	struct rdma_addrinfo *res;

	/* A host is not looked up in the SA. */
	ck_assert_int_eq(sa_lookup("node", "4242", &res), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	sa_records = 0;
	ck_assert_int_eq(sa_lookup(NULL, "4242", &res), -1);
	ck_assert_int_eq(errno, ETIMEDOUT);
	ck_assert_ptr_null(res);
	fake_umad_fail(FAKE_UMAD_FAIL_SEND);
	ck_assert_int_eq(sa_lookup(NULL, "4242", &res), -1);
	ck_assert_int_eq(errno, EIO);
	/* No InfiniBand port: RoCE has no SA. */
	fake_verbs_install(true);
	cma_acm_ports_forget();
	ck_assert_int_eq(sa_lookup(NULL, "4242", &res), -1);
	ck_assert_int_eq(errno, ENODEV);
}
END_TEST

Suite *addrinfo_sa_suite(void)
{
	Suite *s = suite_create("addrinfo_sa");
	TCase *tc = tcase_create("service_record");

	tcase_add_test(tc, service_strings);
	tcase_add_test(tc, request_by_id);
	tcase_add_test(tc, request_by_name);
	tcase_add_test(tc, answer_with_two_records);
	tcase_add_test(tc, answer_padding_ignored);
	tcase_add_test(tc, answer_wider_stride);
	tcase_add_test(tc, answers_refused);
	suite_add_tcase(s, tc);
	tc = tcase_create("query");
	tcase_add_checked_fixture(tc, query_setup, query_teardown);
	tcase_add_test(tc, query_answered_by_the_sa);
	tcase_add_test(tc, a_long_answer_is_received_whole);
	tcase_add_test(tc, query_failures);
	suite_add_tcase(s, tc);
	return s;
}
