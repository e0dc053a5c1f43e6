// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for the kernel command marshalling (src/ucma_abi.c): a fake
 * device records each command and answers through its response pointer,
 * so every byte the library would send to /dev/infiniband/rdma_cm is
 * checked without a kernel.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ucma_abi.h"

static uint8_t last_cmd[1024];
static size_t last_len;
static int last_fd;
static int fake_calls;
static int fake_errno;
static ssize_t fake_short; /* when > 0, pretend only this much was taken */
static uint32_t fake_resp_word; /* written to the response, if any */

static const struct rdma_ucm_cmd_hdr *hdr(void)
{
	return (const struct rdma_ucm_cmd_hdr *)last_cmd;
}

static const void *body(void)
{
	return last_cmd + sizeof(struct rdma_ucm_cmd_hdr);
}

/* Commands whose first 8 bytes are the response pointer. */
static void fake_answer(void)
{
	uint64_t resp;

	switch (hdr()->cmd) {
	case RDMA_USER_CM_CMD_DESTROY_ID:
	case RDMA_USER_CM_CMD_GET_EVENT:
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:
	case RDMA_USER_CM_CMD_QUERY_ROUTE:
	case RDMA_USER_CM_CMD_QUERY:
	case RDMA_USER_CM_CMD_MIGRATE_ID:
	case RDMA_USER_CM_CMD_JOIN_MCAST:
	case RDMA_USER_CM_CMD_LEAVE_MCAST:
		memcpy(&resp, body(), sizeof(resp));
		break;
	case RDMA_USER_CM_CMD_CREATE_ID:
		/* uid first, then the response pointer */
		memcpy(&resp, (const uint8_t *)body() + 8, sizeof(resp));
		break;
	default:
		return;
	}
	if (hdr()->cmd == RDMA_USER_CM_CMD_JOIN_MCAST)
		memcpy(&resp, body(), sizeof(resp));
	memcpy((void *)(uintptr_t)resp, &fake_resp_word, sizeof(uint32_t));
}

static ssize_t fake_writer(int fd, const void *buf, size_t len)
{
	fake_calls++;
	last_fd = fd;
	last_len = len < sizeof(last_cmd) ? len : sizeof(last_cmd);
	memcpy(last_cmd, buf, last_len);
	if (fake_errno) {
		errno = fake_errno;
		return -1;
	}
	fake_answer();
	return fake_short ? fake_short : (ssize_t)len;
}

static void setup(void)
{
	memset(last_cmd, 0, sizeof(last_cmd));
	last_len = 0;
	last_fd = -1;
	fake_calls = 0;
	fake_errno = 0;
	fake_short = 0;
	fake_resp_word = 0;
	ucma_set_writer(fake_writer);
}

static void teardown(void)
{
	ucma_set_writer(NULL);
}

START_TEST(create_id_marshals_and_returns_handle)
{
	const struct rdma_ucm_create_id *cmd = body();
	uint32_t handle = 0;

	fake_resp_word = 42;
	ck_assert_int_eq(ucma_cmd_create_id(7, 0x1122334455667788ULL, 0x0106, 2,
					    &handle),
			 0);
	ck_assert_int_eq(last_fd, 7);
	ck_assert_uint_eq(hdr()->cmd, RDMA_USER_CM_CMD_CREATE_ID);
	ck_assert_uint_eq(hdr()->in, sizeof(struct rdma_ucm_create_id));
	ck_assert_uint_eq(hdr()->out, sizeof(struct rdma_ucm_create_id_resp));
	ck_assert_uint_eq(last_len, sizeof(struct rdma_ucm_cmd_hdr) +
					    sizeof(struct rdma_ucm_create_id));
	ck_assert_uint_eq(cmd->uid, 0x1122334455667788ULL);
	ck_assert_uint_eq(cmd->ps, 0x0106);
	ck_assert_uint_eq(cmd->qp_type, 2);
	ck_assert_uint_eq(handle, 42);
}
END_TEST

START_TEST(write_error_keeps_errno)
{
	uint32_t handle = 99;

	fake_errno = ENODEV;
	ck_assert_int_eq(ucma_cmd_create_id(3, 1, 0x0106, 2, &handle), -1);
	ck_assert_int_eq(errno, ENODEV);
	ck_assert_uint_eq(handle, 99); /* untouched on failure */
}
END_TEST

START_TEST(short_write_is_an_error)
{
	fake_short = 4;
	ck_assert_int_eq(ucma_cmd_disconnect(3, 5), -1);
	ck_assert_int_eq(errno, ENODATA);
}
END_TEST

START_TEST(destroy_reports_events)
{
	const struct rdma_ucm_destroy_id *cmd = body();
	uint32_t reported = 0;

	fake_resp_word = 3;
	ck_assert_int_eq(ucma_cmd_destroy_id(3, 9, &reported), 0);
	ck_assert_uint_eq(cmd->id, 9);
	ck_assert_uint_eq(reported, 3);
	ck_assert_uint_eq(hdr()->out, sizeof(struct rdma_ucm_destroy_id_resp));
}
END_TEST

START_TEST(bind_copies_address_and_size)
{
	const struct rdma_ucm_bind *cmd = body();
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(7471)};

	inet_pton(AF_INET, "192.0.2.1", &sin.sin_addr);
	ck_assert_int_eq(
		ucma_cmd_bind(3, 4, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_uint_eq(hdr()->cmd, RDMA_USER_CM_CMD_BIND);
	ck_assert_uint_eq(cmd->id, 4);
	ck_assert_uint_eq(cmd->addr_size, sizeof(sin));
	ck_assert_mem_eq(&cmd->addr, &sin, sizeof(sin));
}
END_TEST

START_TEST(bind_rejects_oversized_address)
{
	struct sockaddr_storage ss = {.ss_family = AF_INET6};

	ck_assert_int_eq(
		ucma_cmd_bind(3, 4, (struct sockaddr *)&ss, sizeof(ss) + 1),
		-1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(fake_calls, 0);
	ck_assert_int_eq(ucma_cmd_bind(3, 4, NULL, 16), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(resolve_addr_without_source)
{
	const struct rdma_ucm_resolve_addr *cmd = body();
	struct sockaddr_in6 dst = {.sin6_family = AF_INET6};

	ck_assert_int_eq(ucma_cmd_resolve_addr(3, 8, NULL, 16,
					       (struct sockaddr *)&dst,
					       sizeof(dst), 2000),
			 0);
	ck_assert_uint_eq(cmd->src_size, 0);
	ck_assert_uint_eq(cmd->dst_size, sizeof(dst));
	ck_assert_uint_eq(cmd->timeout_ms, 2000);
	ck_assert_uint_eq(cmd->id, 8);
}
END_TEST

START_TEST(reject_validates_private_data)
{
	const struct rdma_ucm_reject *cmd = body();
	const char data[] = "no thanks";

	ck_assert_int_eq(ucma_cmd_reject(3, 1, NULL, 4, 0), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(fake_calls, 0);
	ck_assert_int_eq(ucma_cmd_reject(3, 1, data, sizeof(data),
					 UCMA_REJ_VENDOR_OPTION_NOT_SUPPORTED),
			 0);
	ck_assert_uint_eq(cmd->private_data_len, sizeof(data));
	ck_assert_uint_eq(cmd->reason, UCMA_REJ_VENDOR_OPTION_NOT_SUPPORTED);
	ck_assert_mem_eq(cmd->private_data, data, sizeof(data));
}
END_TEST

START_TEST(connect_carries_param_and_ece)
{
	const struct rdma_ucm_connect *cmd = body();
	struct rdma_ucm_conn_param p = {
		.qp_num = 0x123, .retry_count = 7, .valid = 1};
	struct rdma_ucm_ece ece = {.vendor_id = 0x15b3, .attr_mod = 5};

	ck_assert_int_eq(ucma_cmd_connect(3, 6, &p, &ece), 0);
	ck_assert_uint_eq(hdr()->in, sizeof(struct rdma_ucm_connect));
	ck_assert_uint_eq(cmd->id, 6);
	ck_assert_uint_eq(cmd->conn_param.qp_num, 0x123);
	ck_assert_uint_eq(cmd->conn_param.valid, 1);
	ck_assert_uint_eq(cmd->ece.vendor_id, 0x15b3);
	ck_assert_uint_eq(cmd->ece.attr_mod, 5);
}
END_TEST

START_TEST(accept_without_param_is_invalid_param)
{
	const struct rdma_ucm_accept *cmd = body();

	ck_assert_int_eq(ucma_cmd_accept(3, 6, 77, NULL, NULL), 0);
	ck_assert_uint_eq(cmd->conn_param.valid, 0); /* an RTU, not a REP */
	ck_assert_uint_eq(cmd->uid, 77);
}
END_TEST

START_TEST(query_path_checks_buffer)
{
	struct rdma_ucm_query_path_resp small;

	ck_assert_int_eq(ucma_cmd_query_path(3, 1, &small, 2), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(fake_calls, 0);
}
END_TEST

START_TEST(query_options_select_the_query)
{
	struct rdma_ucm_query_addr_resp resp;
	const struct rdma_ucm_query *cmd = body();

	ck_assert_int_eq(ucma_cmd_query_gid(3, 2, &resp), 0);
	ck_assert_uint_eq(hdr()->cmd, RDMA_USER_CM_CMD_QUERY);
	ck_assert_uint_eq(cmd->option, RDMA_USER_CM_QUERY_GID);
	ck_assert_int_eq(ucma_cmd_query_addr(3, 2, &resp), 0);
	ck_assert_uint_eq(cmd->option, RDMA_USER_CM_QUERY_ADDR);
	ck_assert_uint_eq(hdr()->out, sizeof(resp));
}
END_TEST

START_TEST(migrate_goes_to_the_new_channel)
{
	const struct rdma_ucm_migrate_id *cmd = body();
	uint32_t reported = 0;

	fake_resp_word = 2;
	ck_assert_int_eq(ucma_cmd_migrate_id(11, 5, 10, &reported), 0);
	ck_assert_int_eq(last_fd, 11);
	ck_assert_uint_eq(cmd->fd, 10);
	ck_assert_uint_eq(cmd->id, 5);
	ck_assert_uint_eq(reported, 2);
}
END_TEST

START_TEST(join_returns_group_handle)
{
	const struct rdma_ucm_join_mcast *cmd = body();
	struct sockaddr_in sin = {.sin_family = AF_INET};
	uint32_t mc = 0;

	fake_resp_word = 12;
	ck_assert_int_eq(ucma_cmd_join_mcast(3, 5, 0xabc,
					     (struct sockaddr *)&sin,
					     sizeof(sin), 1, &mc),
			 0);
	ck_assert_uint_eq(cmd->uid, 0xabc);
	ck_assert_uint_eq(cmd->join_flags, 1);
	ck_assert_uint_eq(cmd->addr_size, sizeof(sin));
	ck_assert_uint_eq(mc, 12);
}
END_TEST

START_TEST(set_option_passes_pointer)
{
	const struct rdma_ucm_set_option *cmd = body();
	uint8_t tos = 32;

	ck_assert_int_eq(ucma_cmd_set_option(3, 1, 0, 0, &tos, 1), 0);
	ck_assert_uint_eq(cmd->optval, (uint64_t)(uintptr_t)&tos);
	ck_assert_uint_eq(cmd->optlen, 1);
}
END_TEST

START_TEST(every_command_fits_the_message_buffer)
{
	/* The largest command must fit ucma_write()'s single buffer. */
	ck_assert_uint_le(sizeof(struct rdma_ucm_accept), 512);
	ck_assert_uint_le(sizeof(struct rdma_ucm_resolve_addr), 512);
	ck_assert_uint_le(sizeof(struct rdma_ucm_reject), 512);
	ck_assert_uint_le(sizeof(struct rdma_ucm_join_mcast), 512);
}
END_TEST

static Suite *ucma_abi_suite(void)
{
	Suite *s = suite_create("ucma_abi");
	TCase *tc = tcase_create("commands");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, create_id_marshals_and_returns_handle);
	tcase_add_test(tc, write_error_keeps_errno);
	tcase_add_test(tc, short_write_is_an_error);
	tcase_add_test(tc, destroy_reports_events);
	tcase_add_test(tc, bind_copies_address_and_size);
	tcase_add_test(tc, bind_rejects_oversized_address);
	tcase_add_test(tc, resolve_addr_without_source);
	tcase_add_test(tc, reject_validates_private_data);
	tcase_add_test(tc, connect_carries_param_and_ece);
	tcase_add_test(tc, accept_without_param_is_invalid_param);
	tcase_add_test(tc, query_path_checks_buffer);
	tcase_add_test(tc, query_options_select_the_query);
	tcase_add_test(tc, migrate_goes_to_the_new_channel);
	tcase_add_test(tc, join_returns_group_handle);
	tcase_add_test(tc, set_option_passes_pointer);
	tcase_add_test(tc, every_command_fits_the_message_buffer);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ucma_abi_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
