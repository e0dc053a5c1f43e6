// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for src/conn.c: the connection calls of an id whose QP the
 * application owns (an "external" QP, the flow rdma_establish exists for),
 * against a fake rdma_cm device that records every command.  rdma-core's
 * rules (rdma_connect(3), rdma_accept(3), rdma_establish(3)): the caller's
 * qp_num and srq are used only when the id has no QP of the library's; a
 * CONNECT_RESPONSE on such an id is the application's to finish, with its
 * own QP moves and rdma_establish; the library touches no QP it did not
 * make.  No kernel and no RDMA device are needed.
 */
#include <config.h>

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cma.h"
#include "ucma_abi.h"

#define MAX_SEEN 16

static uint32_t seen_cmds[MAX_SEEN];
static int seen;
static struct rdma_ucm_connect last_connect;
static struct rdma_ucm_accept last_accept;
static struct rdma_ucm_event_resp next_event;
static bool event_ready;

static struct rdma_event_channel *channel;
static struct cma_id_private *id;
static struct cma_device dev;
static char ctx, pd; /* only their addresses are used */

static ssize_t fake_device(int fd, const void *buf, size_t len)
{
	const struct rdma_ucm_cmd_hdr *hdr = buf;
	const void *body = hdr + 1;
	uint64_t resp;

	ck_assert_int_eq(fd, 100);
	if (seen < MAX_SEEN)
		seen_cmds[seen++] = hdr->cmd;
	switch (hdr->cmd) {
	case RDMA_USER_CM_CMD_CONNECT:
		memcpy(&last_connect, body, sizeof(last_connect));
		break;
	case RDMA_USER_CM_CMD_ACCEPT:
		memcpy(&last_accept, body, sizeof(last_accept));
		break;
	case RDMA_USER_CM_CMD_GET_EVENT:
		if (!event_ready) {
			errno = EAGAIN;
			return -1;
		}
		memcpy(&resp, body, sizeof(resp));
		memcpy((void *)(uintptr_t)resp, &next_event,
		       sizeof(next_event));
		event_ready = false;
		break;
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:
		/* An external QP's attributes are the application's business:
		 * none of these flows may ask for them. */
		ck_abort_msg("INIT_QP_ATTR sent for an external QP");
		break;
	}
	return (ssize_t)len;
}

/* Whether @cmd was sent since the last reset. */
static bool sent(uint32_t cmd)
{
	int i;

	for (i = 0; i < seen; i++)
		if (seen_cmds[i] == cmd)
			return true;
	return false;
}

static void setup(void)
{
	seen = 0;
	event_ready = false;
	memset(&last_connect, 0, sizeof(last_connect));
	memset(&last_accept, 0, sizeof(last_accept));
	memset(&dev, 0, sizeof(dev));
	dev.verbs = (struct ibv_context *)&ctx;
	dev.pd = (struct ibv_pd *)&pd;
	dev.max_initiator_depth = 4;
	dev.max_responder_resources = 4;
	dev.refcnt = 1; /* the id's reference, as cma_device_get_by_guid */
	ucma_set_writer(fake_device);
	channel = cma_channel_from_fd(100);
	ck_assert_ptr_nonnull(channel);
	id = cma_id_alloc(channel, NULL, RDMA_PS_TCP, IBV_QPT_RC);
	ck_assert_ptr_nonnull(id);
	id->handle = 7;
	ck_assert_int_eq(cma_id_set_device(id, &dev), 0);
}

static void teardown(void)
{
	id->id.qp = NULL;
	cma_id_free(id);
	cma_channel_destroy(channel); /* fd 100 was never open */
	ucma_set_writer(NULL);
}

static struct rdma_conn_param ext_param(uint32_t qp_num, uint8_t srq)
{
	struct rdma_conn_param p;

	memset(&p, 0, sizeof(p));
	p.qp_num = qp_num;
	p.srq = srq;
	p.responder_resources = 1;
	p.initiator_depth = 1;
	p.retry_count = 7;
	p.rnr_retry_count = 7;
	return p;
}

START_TEST(connect_sends_the_callers_qp_num)
{
	struct rdma_conn_param p = ext_param(0x123456, 1);

	/* Neither a QP nor a QP number: nothing to connect. */
	ck_assert_int_eq(rdma_connect(&id->id, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(seen, 0);

	ck_assert_int_eq(rdma_connect(&id->id, &p), 0);
	ck_assert(sent(RDMA_USER_CM_CMD_CONNECT));
	ck_assert_uint_eq(last_connect.id, 7);
	ck_assert_uint_eq(last_connect.conn_param.qp_num, 0x123456);
	ck_assert_uint_eq(last_connect.conn_param.srq, 1);
	ck_assert_uint_eq(last_connect.conn_param.responder_resources, 1);
	ck_assert_uint_eq(last_connect.conn_param.initiator_depth, 1);
	ck_assert_uint_eq(last_connect.conn_param.valid, 1);
}
END_TEST

/* With a QP of the library's, its number and SRQ go out, not the caller's. */
START_TEST(a_library_qp_wins_over_the_parameter)
{
	struct rdma_conn_param p = ext_param(5, 1);
	struct ibv_qp qp;

	memset(&qp, 0, sizeof(qp));
	qp.qp_num = 99;
	id->id.qp = &qp;
	ck_assert_int_eq(rdma_connect(&id->id, &p), 0);
	ck_assert_uint_eq(last_connect.conn_param.qp_num, 99);
	ck_assert_uint_eq(last_connect.conn_param.srq, 0);
}
END_TEST

START_TEST(connect_response_is_left_to_the_application)
{
	struct rdma_conn_param p = ext_param(0x77, 0);
	struct rdma_cm_event *ev;

	ck_assert_int_eq(rdma_connect(&id->id, &p), 0);
	seen = 0;
	memset(&next_event, 0, sizeof(next_event));
	next_event.uid = (uint64_t)(uintptr_t)id;
	next_event.id = 7;
	next_event.event = RDMA_CM_EVENT_CONNECT_RESPONSE;
	next_event.param.conn.qp_num = 0x88;
	event_ready = true;

	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	/* Not turned into ESTABLISHED, and no RTU sent behind its back. */
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_CONNECT_RESPONSE);
	ck_assert_int_eq(ev->status, 0);
	ck_assert_uint_eq(ev->param.conn.qp_num, 0x88);
	ck_assert(!sent(RDMA_USER_CM_CMD_ACCEPT));
	ck_assert(!sent(RDMA_USER_CM_CMD_REJECT));
	ck_assert_int_eq(rdma_ack_cm_event(ev), 0);

	/* The application moved its QP: rdma_establish sends the RTU. */
	ck_assert_int_eq(rdma_establish(&id->id), 0);
	ck_assert(sent(RDMA_USER_CM_CMD_ACCEPT));
	ck_assert_uint_eq(last_accept.id, 7);
}
END_TEST

START_TEST(establish_refuses_an_id_with_a_library_qp)
{
	struct ibv_qp qp;

	memset(&qp, 0, sizeof(qp));
	id->id.qp = &qp;
	ck_assert_int_eq(rdma_establish(&id->id), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(seen, 0);
}
END_TEST

START_TEST(accept_sends_the_callers_qp_num)
{
	struct rdma_conn_param p = ext_param(0x42, 1);

	id->passive = true;
	id->cm_started = true;
	/* rdma-core 44 crashes here; a clear error is better. */
	ck_assert_int_eq(rdma_accept(&id->id, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert(!sent(RDMA_USER_CM_CMD_ACCEPT));

	ck_assert_int_eq(rdma_accept(&id->id, &p), 0);
	ck_assert(sent(RDMA_USER_CM_CMD_ACCEPT));
	ck_assert_uint_eq(last_accept.id, 7);
	ck_assert_uint_eq(last_accept.conn_param.qp_num, 0x42);
	ck_assert_uint_eq(last_accept.conn_param.srq, 1);
	ck_assert_uint_eq(last_accept.conn_param.valid, 1);
}
END_TEST

/* The owner flushes an external QP; the library only ends the connection. */
START_TEST(disconnect_touches_no_external_qp)
{
	ck_assert_int_eq(rdma_disconnect(&id->id), 0);
	ck_assert_int_eq(seen, 1);
	ck_assert_uint_eq(seen_cmds[0], RDMA_USER_CM_CMD_DISCONNECT);
}
END_TEST

static Suite *conn_suite(void)
{
	Suite *s = suite_create("conn");
	TCase *tc = tcase_create("external QP");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, connect_sends_the_callers_qp_num);
	tcase_add_test(tc, a_library_qp_wins_over_the_parameter);
	tcase_add_test(tc, connect_response_is_left_to_the_application);
	tcase_add_test(tc, establish_refuses_an_id_with_a_library_qp);
	tcase_add_test(tc, accept_sends_the_callers_qp_num);
	tcase_add_test(tc, disconnect_touches_no_external_qp);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(conn_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
