// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for the kernel command marshalling (src/cm/ucma_abi.c): the fake
 * kernel device (fake_ucma) records each command and answers it as the
 * kernel would, so every byte the library would send to
 * /dev/infiniband/rdma_cm is checked without a kernel.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm/cma.h"
#include "fake_ucma.h"
#include "unit.h"

static int fd; /* an open of the fake device */

static void setup(void)
{
	fake_ucma_install();
	fd = ucma_open_device(false);
	ck_assert_int_ge(fd, 0);
}

static void teardown(void)
{
	close(fd);
	fake_ucma_uninstall();
}

/* The last command of a kind, as the fake device received it. */
static const struct fake_cmd *last(uint32_t cmd)
{
	const struct fake_cmd *c = fake_ucma_last(cmd);

	ck_assert_msg(c != NULL, "command %u was not sent", cmd);
	return c;
}

static const void *body(uint32_t cmd)
{
	return last(cmd)->body;
}

static uint32_t new_id(void)
{
	uint32_t handle = 0;

	ck_assert_int_eq(
		ucma_cmd_create_id(fd, 1, RDMA_PS_TCP, IBV_QPT_RC, &handle), 0);
	return handle;
}

START_TEST(create_id_marshals_and_returns_handle)
{
	const struct rdma_ucm_create_id *cmd;
	const struct fake_cmd *c;
	uint32_t first = new_id(), handle = 0;

	ck_assert_int_eq(ucma_cmd_create_id(fd, 0x1122334455667788ULL, 0x0106,
					    2, &handle),
			 0);
	c = last(RDMA_USER_CM_CMD_CREATE_ID);
	cmd = (const void *)c->body;
	ck_assert_int_eq(c->fd, fd);
	ck_assert_uint_eq(c->hdr.in, sizeof(struct rdma_ucm_create_id));
	ck_assert_uint_eq(c->hdr.out, sizeof(struct rdma_ucm_create_id_resp));
	ck_assert_uint_eq(c->len, sizeof(struct rdma_ucm_cmd_hdr) +
					  sizeof(struct rdma_ucm_create_id));
	ck_assert_uint_eq(cmd->uid, 0x1122334455667788ULL);
	ck_assert_uint_eq(cmd->ps, 0x0106);
	ck_assert_uint_eq(cmd->qp_type, 2);
	ck_assert_uint_ne(handle, first);
	ck_assert_uint_eq(fake_ucma_kid(handle)->uid, 0x1122334455667788ULL);
}
END_TEST

START_TEST(write_error_keeps_errno)
{
	uint32_t handle = 99;

	fake_ucma_fail_next(RDMA_USER_CM_CMD_CREATE_ID, ENODEV);
	ck_assert_int_eq(ucma_cmd_create_id(fd, 1, 0x0106, 2, &handle), -1);
	ck_assert_int_eq(errno, ENODEV);
	ck_assert_uint_eq(handle, 99); /* untouched on failure */
}
END_TEST

START_TEST(short_write_is_an_error)
{
	uint32_t id = new_id();

	fake_ucma_short_next(4);
	ck_assert_int_eq(ucma_cmd_disconnect(fd, id), -1);
	ck_assert_int_eq(errno, ENODATA);
}
END_TEST

/* DESTROY_ID answers with the number of events the kernel handed out. */
START_TEST(destroy_reports_events)
{
	struct rdma_ucm_event_resp ev;
	uint32_t id = new_id(), reported = 0;
	int i;

	for (i = 0; i < 3; i++)
		fake_ucma_event(id, RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(ucma_cmd_get_event(fd, &ev), 0);
	ck_assert_uint_eq(ev.id, id);
	ck_assert_int_eq(ucma_cmd_destroy_id(fd, id, &reported), 0);
	ck_assert_uint_eq(((const struct rdma_ucm_destroy_id *)body(
				   RDMA_USER_CM_CMD_DESTROY_ID))
				  ->id,
			  id);
	ck_assert_uint_eq(reported, 3);
	ck_assert_uint_eq(last(RDMA_USER_CM_CMD_DESTROY_ID)->hdr.out,
			  sizeof(struct rdma_ucm_destroy_id_resp));
}
END_TEST

START_TEST(bind_copies_address_and_size)
{
	const struct rdma_ucm_bind *cmd;
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(7471)};
	uint32_t id = new_id();

	inet_pton(AF_INET, "192.0.2.1", &sin.sin_addr);
	ck_assert_int_eq(
		ucma_cmd_bind(fd, id, (struct sockaddr *)&sin, sizeof(sin)), 0);
	cmd = body(RDMA_USER_CM_CMD_BIND);
	ck_assert_uint_eq(cmd->id, id);
	ck_assert_uint_eq(cmd->addr_size, sizeof(sin));
	ck_assert_mem_eq(&cmd->addr, &sin, sizeof(sin));
}
END_TEST

START_TEST(bind_rejects_oversized_address)
{
	struct sockaddr_storage ss = {.ss_family = AF_INET6};
	uint32_t id = new_id();

	ck_assert_int_eq(
		ucma_cmd_bind(fd, id, (struct sockaddr *)&ss, sizeof(ss) + 1),
		-1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(ucma_cmd_bind(fd, id, NULL, 16), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_BIND), 0);
}
END_TEST

START_TEST(resolve_addr_without_source)
{
	const struct rdma_ucm_resolve_addr *cmd;
	struct sockaddr_in6 dst = {.sin6_family = AF_INET6};
	uint32_t id = new_id();

	ck_assert_int_eq(ucma_cmd_resolve_addr(fd, id, NULL, 16,
					       (struct sockaddr *)&dst,
					       sizeof(dst), 2000),
			 0);
	cmd = body(RDMA_USER_CM_CMD_RESOLVE_ADDR);
	ck_assert_uint_eq(cmd->src_size, 0);
	ck_assert_uint_eq(cmd->dst_size, sizeof(dst));
	ck_assert_uint_eq(cmd->timeout_ms, 2000);
	ck_assert_uint_eq(cmd->id, id);
}
END_TEST

START_TEST(reject_validates_private_data)
{
	const struct rdma_ucm_reject *cmd;
	const char data[] = "no thanks";
	uint32_t id = new_id();

	ck_assert_int_eq(ucma_cmd_reject(fd, id, NULL, 4, 0), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_REJECT), 0);
	ck_assert_int_eq(ucma_cmd_reject(fd, id, data, sizeof(data),
					 UCMA_REJ_VENDOR_OPTION_NOT_SUPPORTED),
			 0);
	cmd = body(RDMA_USER_CM_CMD_REJECT);
	ck_assert_uint_eq(cmd->private_data_len, sizeof(data));
	ck_assert_uint_eq(cmd->reason, UCMA_REJ_VENDOR_OPTION_NOT_SUPPORTED);
	ck_assert_mem_eq(cmd->private_data, data, sizeof(data));
}
END_TEST

START_TEST(connect_carries_param_and_ece)
{
	const struct rdma_ucm_connect *cmd;
	struct rdma_ucm_conn_param p = {
		.qp_num = 0x123, .retry_count = 7, .valid = 1};
	struct rdma_ucm_ece ece = {.vendor_id = 0x15b3, .attr_mod = 5};
	uint32_t id = new_id();

	ck_assert_int_eq(ucma_cmd_connect(fd, id, &p, &ece), 0);
	cmd = body(RDMA_USER_CM_CMD_CONNECT);
	ck_assert_uint_eq(last(RDMA_USER_CM_CMD_CONNECT)->hdr.in,
			  sizeof(struct rdma_ucm_connect));
	ck_assert_uint_eq(cmd->id, id);
	ck_assert_uint_eq(cmd->conn_param.qp_num, 0x123);
	ck_assert_uint_eq(cmd->conn_param.valid, 1);
	ck_assert_uint_eq(cmd->ece.vendor_id, 0x15b3);
	ck_assert_uint_eq(cmd->ece.attr_mod, 5);
}
END_TEST

START_TEST(accept_without_param_is_invalid_param)
{
	const struct rdma_ucm_accept *cmd;
	uint32_t id = new_id();

	ck_assert_int_eq(ucma_cmd_accept(fd, id, 77, NULL, NULL), 0);
	cmd = body(RDMA_USER_CM_CMD_ACCEPT);
	ck_assert_uint_eq(cmd->conn_param.valid, 0); /* an RTU, not a REP */
	ck_assert_uint_eq(cmd->uid, 77);
}
END_TEST

START_TEST(query_path_checks_buffer)
{
	struct rdma_ucm_query_path_resp small;

	ck_assert_int_eq(ucma_cmd_query_path(fd, new_id(), &small, 2), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_QUERY), 0);
}
END_TEST

START_TEST(query_options_select_the_query)
{
	struct rdma_ucm_query_addr_resp resp;
	uint32_t id = new_id();

	ck_assert_int_eq(ucma_cmd_query_gid(fd, id, &resp), 0);
	ck_assert_uint_eq(
		((const struct rdma_ucm_query *)body(RDMA_USER_CM_CMD_QUERY))
			->option,
		RDMA_USER_CM_QUERY_GID);
	ck_assert_int_eq(ucma_cmd_query_addr(fd, id, &resp), 0);
	ck_assert_uint_eq(
		((const struct rdma_ucm_query *)body(RDMA_USER_CM_CMD_QUERY))
			->option,
		RDMA_USER_CM_QUERY_ADDR);
	ck_assert_uint_eq(last(RDMA_USER_CM_CMD_QUERY)->hdr.out, sizeof(resp));
}
END_TEST

/* The command goes to the new channel and names the old one. */
START_TEST(migrate_goes_to_the_new_channel)
{
	const struct rdma_ucm_migrate_id *cmd;
	struct rdma_ucm_event_resp ev;
	uint32_t id = new_id(), reported = 0;
	int to = ucma_open_device(false);

	ck_assert_int_ge(to, 0);
	fake_ucma_event(id, RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT);
	fake_ucma_event(id, RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT);
	ck_assert_int_eq(ucma_cmd_get_event(fd, &ev), 0);
	ck_assert_int_eq(ucma_cmd_migrate_id(to, id, fd, &reported), 0);
	cmd = body(RDMA_USER_CM_CMD_MIGRATE_ID);
	ck_assert_int_eq(last(RDMA_USER_CM_CMD_MIGRATE_ID)->fd, to);
	ck_assert_uint_eq(cmd->fd, (uint32_t)fd);
	ck_assert_uint_eq(cmd->id, id);
	ck_assert_uint_eq(reported, 1);
	/* The event not yet read moved with the id. */
	ck_assert_int_eq(fake_ucma_queued(fd), 0);
	ck_assert_int_eq(fake_ucma_queued(to), 1);
	close(to);
}
END_TEST

START_TEST(join_returns_group_handle)
{
	const struct rdma_ucm_join_mcast *cmd;
	struct sockaddr_in sin = {.sin_family = AF_INET};
	uint32_t mc = 0, mc2 = 0, id = new_id();

	ck_assert_int_eq(ucma_cmd_join_mcast(fd, id, 0xabc,
					     (struct sockaddr *)&sin,
					     sizeof(sin), 1, &mc),
			 0);
	cmd = body(RDMA_USER_CM_CMD_JOIN_MCAST);
	ck_assert_uint_eq(cmd->uid, 0xabc);
	ck_assert_uint_eq(cmd->join_flags, 1);
	ck_assert_uint_eq(cmd->addr_size, sizeof(sin));
	ck_assert_int_eq(ucma_cmd_join_mcast(fd, id, 0xabd,
					     (struct sockaddr *)&sin,
					     sizeof(sin), 0, &mc2),
			 0);
	ck_assert_uint_ne(mc, 0);
	ck_assert_uint_ne(mc, mc2);
}
END_TEST

START_TEST(set_option_passes_pointer)
{
	const struct rdma_ucm_set_option *cmd;
	uint8_t tos = 32;

	ck_assert_int_eq(ucma_cmd_set_option(fd, new_id(), 0, 0, &tos, 1), 0);
	cmd = body(RDMA_USER_CM_CMD_SET_OPTION);
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

Suite *ucma_abi_suite(void)
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
