// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rdma_create_ep / rdma_destroy_ep (src/cm/endpoint.c) on the fake kernel and
 * device, as rdma_create_ep(3) and rdma_get_request(3) describe them: a
 * synchronous id, bound (passive) or with address and route resolved and
 * its QP made (active); a passive endpoint gives every request it hands
 * out through rdma_get_request a QP of the attributes it was made with;
 * the connect data of the rdma_addrinfo goes with rdma_connect, and data
 * the REQ cannot carry is refused up front; a failure leaves nothing
 * behind.  The id is synchronous: the fake kernel answers
 * its resolutions at once (unit_kernel_resolves) for rdma_create_ep, which
 * waits for them.
 */
#include <config.h>

#include <check.h>
#include <errno.h>
#include <string.h>

#include "cm/cma.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"

static struct sockaddr_in local, remote;

static void setup(void)
{
	fake_ucma_install();
	fake_verbs_install(true);
	local = unit_ipv4("192.0.2.1", 7471);
	remote = unit_ipv4("192.0.2.2", 7471);
}

static void teardown(void)
{
	struct fake_verbs_counts c = fake_verbs_counts();

	ck_assert_int_eq(c.qps, 0);
	ck_assert_int_eq(c.cqs, 0);
	fake_ucma_uninstall();
}

static struct rdma_addrinfo active_info(void)
{
	struct rdma_addrinfo res = {
		.ai_port_space = RDMA_PS_TCP,
		.ai_qp_type = IBV_QPT_RC,
		.ai_family = AF_INET,
		.ai_dst_addr = (struct sockaddr *)&remote,
		.ai_dst_len = sizeof(remote),
	};

	return res;
}

START_TEST(active_endpoint_is_resolved_with_its_qp)
{
	struct rdma_addrinfo res = active_info();
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);
	struct rdma_conn_param param = {0};
	const struct rdma_ucm_connect *c;
	struct rdma_cm_id *id;

	res.ai_connect = "hello";
	res.ai_connect_len = 5;
	unit_kernel_resolves(0);
	ck_assert_int_eq(rdma_create_ep(&id, &res, NULL, &attr), 0);
	ck_assert_ptr_nonnull(id->verbs);
	ck_assert_ptr_nonnull(id->qp);
	ck_assert_int_eq(fake_qp_of(id->qp)->qp.state, IBV_QPS_INIT);
	ck_assert_uint_eq(rdma_get_dst_port(id), htons(7471));

	/* The addrinfo's connect data rides with rdma_connect. */
	fake_ucma_fail_next(RDMA_USER_CM_CMD_CONNECT, ECONNREFUSED);
	ck_assert_int_eq(rdma_connect(id, &param), -1);
	c = (const void *)fake_ucma_last(RDMA_USER_CM_CMD_CONNECT)->body;
	ck_assert_uint_ge(c->conn_param.private_data_len, 5);
	ck_assert_mem_eq(c->conn_param.private_data, "hello", 5);
	rdma_destroy_ep(id);
	ck_assert_int_eq(fake_verbs_counts().qps, 0);
}
END_TEST

/* A passive endpoint's requests come with their QP. */
START_TEST(passive_endpoint_gives_requests_a_qp)
{
	struct rdma_addrinfo res = {
		.ai_flags = RAI_PASSIVE,
		.ai_port_space = RDMA_PS_TCP,
		.ai_qp_type = IBV_QPT_RC,
		.ai_family = AF_INET,
		.ai_src_addr = (struct sockaddr *)&local,
		.ai_src_len = sizeof(local),
	};
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);
	struct rdma_ucm_event_resp *r;
	struct rdma_cm_id *listen, *id;
	uint32_t child;

	ck_assert_int_eq(rdma_create_ep(&listen, &res, NULL, &attr), 0);
	ck_assert_ptr_null(listen->qp);
	ck_assert_ptr_nonnull(listen->verbs);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR), 0);
	ck_assert_int_eq(rdma_listen(listen, 2), 0);
	r = fake_ucma_conn_req(fake_ucma_kid_of(listen)->handle, &child);
	ck_assert_ptr_nonnull(r);
	r->param.conn.responder_resources = 1;
	r->param.conn.initiator_depth = 1;
	ck_assert_int_eq(rdma_get_request(listen, &id), 0);
	ck_assert_ptr_nonnull(id->qp);
	ck_assert_int_eq(id->qp->qp_type, IBV_QPT_RC);
	ck_assert_ptr_nonnull(id->event);
	rdma_destroy_ep(id);
	rdma_destroy_ep(listen);
}
END_TEST

/* A resolution that fails fails rdma_create_ep; nothing is left. */
START_TEST(a_failed_resolution_leaves_nothing)
{
	struct rdma_addrinfo res = active_info();
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);
	struct rdma_cm_id *id = NULL;
	uint32_t handle;

	unit_kernel_resolves(-EHOSTUNREACH);
	ck_assert_int_eq(rdma_create_ep(&id, &res, NULL, &attr), -1);
	ck_assert_ptr_null(id);
	handle = fake_ucma_last(RDMA_USER_CM_CMD_RESOLVE_ADDR)->handle;
	ck_assert(!fake_ucma_kid(handle)->live);
	ck_assert_int_eq(fake_verbs_counts().qps, 0);
}
END_TEST

START_TEST(bad_endpoints_are_refused)
{
	struct rdma_addrinfo res = active_info();
	struct rdma_cm_id *id;
	char big[RDMA_MAX_PRIVATE_DATA + 1] = {0};

	ck_assert_int_eq(rdma_create_ep(NULL, &res, NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rdma_create_ep(&id, NULL, NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	res.ai_dst_addr = NULL; /* active without a destination */
	ck_assert_int_eq(rdma_create_ep(&id, &res, NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	res = active_info();
	res.ai_flags = RAI_PASSIVE; /* passive without a source */
	ck_assert_int_eq(rdma_create_ep(&id, &res, NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	res = active_info();
	res.ai_connect = big;
	res.ai_connect_len = sizeof(big);
	ck_assert_int_eq(rdma_create_ep(&id, &res, NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR), 0);
	rdma_destroy_ep(NULL);
}
END_TEST

/*
 * Connect data is refused with EINVAL by rdma_create_ep when the REQ
 * cannot carry it: past the kernel's one length byte (256 once wrapped
 * to 0 and the REQ went out with none of it), and past what the
 * transport's REQ holds once the route names the device (56 bytes for an
 * RC id over the IB CM with the kernel's IP header).  Nothing is left.
 */
START_TEST(connect_data_the_request_cannot_carry_is_refused)
{
	struct rdma_addrinfo res = active_info();
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);
	static char data[RDMA_MAX_PRIVATE_DATA];
	struct rdma_conn_param param = {0};
	const struct rdma_ucm_connect *c;
	struct rdma_cm_id *id = NULL;
	uint32_t handle;

	memset(data, 'c', sizeof(data));
	unit_kernel_resolves(0);
	res.ai_connect = data;
	res.ai_connect_len = RDMA_MAX_PRIVATE_DATA;
	errno = 0;
	ck_assert_int_eq(rdma_create_ep(&id, &res, NULL, &attr), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(id);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_RESOLVE_ADDR), 0);

	res.ai_connect_len = 57;
	errno = 0;
	ck_assert_int_eq(rdma_create_ep(&id, &res, NULL, &attr), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(id);
	handle = fake_ucma_last(RDMA_USER_CM_CMD_RESOLVE_ADDR)->handle;
	ck_assert(!fake_ucma_kid(handle)->live);
	ck_assert_int_eq(fake_verbs_counts().qps, 0);

	/* What fits goes out whole. */
	res.ai_connect_len = 56;
	ck_assert_int_eq(rdma_create_ep(&id, &res, NULL, &attr), 0);
	fake_ucma_fail_next(RDMA_USER_CM_CMD_CONNECT, ECONNREFUSED);
	ck_assert_int_eq(rdma_connect(id, &param), -1);
	c = (const void *)fake_ucma_last(RDMA_USER_CM_CMD_CONNECT)->body;
	ck_assert_uint_eq(c->conn_param.private_data_len, 56);
	ck_assert_mem_eq(c->conn_param.private_data, data, 56);
	rdma_destroy_ep(id);
}
END_TEST

Suite *endpoint_suite(void)
{
	Suite *s = suite_create("endpoint");
	TCase *tc = tcase_create("endpoint");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, active_endpoint_is_resolved_with_its_qp);
	tcase_add_test(tc, passive_endpoint_gives_requests_a_qp);
	tcase_add_test(tc, a_failed_resolution_leaves_nothing);
	tcase_add_test(tc, bad_endpoints_are_refused);
	tcase_add_test(tc, connect_data_the_request_cannot_carry_is_refused);
	suite_add_tcase(s, tc);
	return s;
}
