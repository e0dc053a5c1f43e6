// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for src/event.c: kernel events scripted through a fake device
 * become rdma_cm_events with the right id, parameters and private data,
 * events the library consumes are accounted for, and acks reach the right
 * counters.  No kernel and no RDMA device are needed.
 */
#include <config.h>

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cma.h"
#include "ucma_abi.h"

#define MAX_SCRIPT 4
#define MAX_SEEN 16

static struct rdma_ucm_event_resp script[MAX_SCRIPT];
static int script_len, script_pos;
static uint32_t seen_cmds[MAX_SEEN];
static uint32_t seen_ids[MAX_SEEN];
static int seen;
static int fail_cmd = -1; /* this command fails with EIO */

static struct rdma_event_channel *channel;

static uint64_t response_ptr(const void *body)
{
	uint64_t p;

	memcpy(&p, body, sizeof(p));
	return p;
}

static void record(uint32_t cmd, const void *body)
{
	uint32_t id = 0;

	if (cmd == RDMA_USER_CM_CMD_REJECT)
		memcpy(&id, body, sizeof(id)); /* id comes first */
	else if (cmd == RDMA_USER_CM_CMD_DESTROY_ID ||
		 cmd == RDMA_USER_CM_CMD_QUERY_ROUTE)
		memcpy(&id, (const uint8_t *)body + 8, sizeof(id));
	if (seen < MAX_SEEN) {
		seen_cmds[seen] = cmd;
		seen_ids[seen++] = id;
	}
}

static ssize_t fake_device(int fd, const void *buf, size_t len)
{
	const struct rdma_ucm_cmd_hdr *hdr = buf;
	const void *body = hdr + 1;

	ck_assert_int_eq(fd, 100);
	record(hdr->cmd, body);
	if ((int)hdr->cmd == fail_cmd) {
		errno = EIO;
		return -1;
	}
	switch (hdr->cmd) {
	case RDMA_USER_CM_CMD_GET_EVENT:
		if (script_pos == script_len) {
			errno = EAGAIN;
			return -1;
		}
		memcpy((void *)(uintptr_t)response_ptr(body),
		       &script[script_pos++], sizeof(script[0]));
		break;
	case RDMA_USER_CM_CMD_QUERY_ROUTE:
	case RDMA_USER_CM_CMD_DESTROY_ID:
		/* all zero: no device GUID, no events reported */
		break;
	}
	return (ssize_t)len;
}

static struct cma_id_private *id;

static void setup(void)
{
	memset(script, 0, sizeof(script));
	script_len = script_pos = seen = 0;
	fail_cmd = -1;
	ucma_set_writer(fake_device);
	channel = cma_channel_from_fd(100);
	ck_assert_ptr_nonnull(channel);
	id = cma_id_alloc(channel, (void *)0x1234, RDMA_PS_TCP, IBV_QPT_RC);
	ck_assert_ptr_nonnull(id);
	id->handle = 7;
}

static void teardown(void)
{
	cma_id_free(id);
	cma_channel_destroy(channel); /* closes fd 100, which was never open */
	ucma_set_writer(NULL);
}

static struct rdma_ucm_event_resp *push(void *uid, uint32_t event,
					int32_t status)
{
	struct rdma_ucm_event_resp *r = &script[script_len++];

	r->uid = (uint64_t)(uintptr_t)uid;
	r->event = event;
	r->status = (uint32_t)status;
	return r;
}

START_TEST(established_copies_private_data)
{
	struct rdma_ucm_event_resp *r;
	struct rdma_cm_event *ev;

	r = push(id, RDMA_CM_EVENT_ESTABLISHED, 0);
	memcpy(r->param.conn.private_data, "welcome", 8);
	r->param.conn.private_data_len = 8;
	r->param.conn.responder_resources = 4;
	r->param.conn.qp_num = 0x99;
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_ptr_eq(ev->id, &id->id);
	ck_assert_ptr_null(ev->listen_id);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_ESTABLISHED);
	ck_assert_int_eq(ev->status, 0);
	ck_assert_uint_eq(ev->param.conn.private_data_len, 8);
	ck_assert_str_eq(ev->param.conn.private_data, "welcome");
	ck_assert_uint_eq(ev->param.conn.responder_resources, 4);
	ck_assert_uint_eq(ev->param.conn.qp_num, 0x99);
	ck_assert_uint_eq(id->events_completed, 0);
	ck_assert_int_eq(rdma_ack_cm_event(ev), 0);
	ck_assert_uint_eq(id->events_completed, 1);
}
END_TEST

/*
 * RDMA_OPTION_ID_INITIATOR: the end whose request formed the connection
 * learns it from the CONNECT_RESPONSE (IB/RoCE) or ESTABLISHED (iWARP);
 * an end made from a request reads 0.
 */
START_TEST(initiator_known_from_the_connection_events)
{
	struct rdma_cm_event *ev;
	int v = -1;

	push(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_CONNECT_RESPONSE);
	ck_assert_int_eq(rdma_get_option(&id->id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_INITIATOR, &v,
					 sizeof(v)),
			 0);
	ck_assert_int_eq(v, 1);
	rdma_ack_cm_event(ev);

	id->passive = true;
	push(id, RDMA_CM_EVENT_ESTABLISHED, 0);
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_int_eq(rdma_get_option(&id->id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_INITIATOR, &v,
					 sizeof(v)),
			 0);
	ck_assert_int_eq(v, 0);
	rdma_ack_cm_event(ev);
}
END_TEST

START_TEST(no_private_data_means_null_pointer)
{
	struct rdma_cm_event *ev;

	push(id, RDMA_CM_EVENT_DISCONNECTED, 0);
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_ptr_null(ev->param.conn.private_data);
	ck_assert_uint_eq(ev->param.conn.private_data_len, 0);
	rdma_ack_cm_event(ev);
}
END_TEST

START_TEST(datagram_ids_get_ud_parameters)
{
	struct rdma_ucm_event_resp *r;
	struct rdma_cm_event *ev;

	id->id.qp_type = IBV_QPT_UD;
	r = push(id, RDMA_CM_EVENT_ESTABLISHED, 0);
	r->param.ud.qp_num = 0x55;
	r->param.ud.qkey = RDMA_UDP_QKEY;
	r->param.ud.ah_attr.dlid = 3;
	r->param.ud.ah_attr.is_global = 1;
	r->param.ud.ah_attr.grh.dgid[0] = 0xfe;
	r->param.ud.private_data_len = 2;
	r->param.ud.private_data[0] = 'u';
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_uint_eq(ev->param.ud.qp_num, 0x55);
	ck_assert_uint_eq(ev->param.ud.qkey, RDMA_UDP_QKEY);
	ck_assert_uint_eq(ev->param.ud.ah_attr.dlid, 3);
	ck_assert_uint_eq(ev->param.ud.ah_attr.is_global, 1);
	ck_assert_uint_eq(ev->param.ud.ah_attr.grh.dgid.raw[0], 0xfe);
	ck_assert_uint_eq(ev->param.ud.private_data_len, 2);
	ck_assert_uint_eq(((const char *)ev->param.ud.private_data)[0], 'u');
	rdma_ack_cm_event(ev);
}
END_TEST

START_TEST(rejected_keeps_status_and_data)
{
	struct rdma_ucm_event_resp *r;
	struct rdma_cm_event *ev;

	r = push(id, RDMA_CM_EVENT_REJECTED, 28);
	memcpy(r->param.conn.private_data, "go away", 7);
	r->param.conn.private_data_len = 148; /* IB CM pads */
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_REJECTED);
	ck_assert_int_eq(ev->status, 28);
	ck_assert_uint_eq(ev->param.conn.private_data_len, 148);
	ck_assert_mem_eq(ev->param.conn.private_data, "go away", 7);
	rdma_ack_cm_event(ev);
}
END_TEST

START_TEST(failed_query_turns_into_addr_error)
{
	struct rdma_cm_event *ev;

	fail_cmd = RDMA_USER_CM_CMD_QUERY_ROUTE;
	push(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_ADDR_ERROR);
	ck_assert_int_eq(ev->status, -EIO);
	rdma_ack_cm_event(ev);
}
END_TEST

/*
 * A request whose id cannot be built (here: the kernel names no device) is
 * refused and destroyed in the kernel, never shown, and counted as acked on
 * the listener; the next event is delivered instead.
 */
START_TEST(unusable_request_is_refused_and_hidden)
{
	struct rdma_cm_event *ev;

	push(id, RDMA_CM_EVENT_CONNECT_REQUEST, 0)->id = 31;
	push(id, RDMA_CM_EVENT_ADDR_CHANGE, 0);
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_ADDR_CHANGE);
	ck_assert_uint_eq(id->events_completed, 1);
	ck_assert_int_eq(seen, 5);
	ck_assert_uint_eq(seen_cmds[1], RDMA_USER_CM_CMD_QUERY_ROUTE);
	ck_assert_uint_eq(seen_ids[1], 31);
	ck_assert_uint_eq(seen_cmds[2], RDMA_USER_CM_CMD_REJECT);
	ck_assert_uint_eq(seen_ids[2], 31);
	ck_assert_uint_eq(seen_cmds[3], RDMA_USER_CM_CMD_DESTROY_ID);
	ck_assert_uint_eq(seen_ids[3], 31);
	rdma_ack_cm_event(ev);
	ck_assert_uint_eq(id->events_completed, 2);
}
END_TEST

START_TEST(answers_after_a_library_failure_are_swallowed)
{
	struct rdma_cm_event *ev;

	id->connect_error = true;
	push(id, RDMA_CM_EVENT_REJECTED, 28);
	push(id, RDMA_CM_EVENT_DISCONNECTED, 0);
	push(id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_TIMEWAIT_EXIT);
	ck_assert_uint_eq(id->events_completed, 2);
	rdma_ack_cm_event(ev);
}
END_TEST

START_TEST(multicast_error_names_group_context)
{
	struct cma_multicast mc = {.id_priv = id, .context = (void *)0x77};
	struct rdma_cm_event *ev;

	pthread_cond_init(&mc.cond, NULL);
	push(&mc, RDMA_CM_EVENT_MULTICAST_ERROR, -ETIMEDOUT);
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_ptr_eq(ev->id, &id->id);
	ck_assert_ptr_eq(ev->param.ud.private_data, (void *)0x77);
	ck_assert_int_eq(ev->status, -ETIMEDOUT);
	rdma_ack_cm_event(ev);
	/* the kernel counted it for the group and for the id */
	ck_assert_uint_eq(mc.events_completed, 1);
	ck_assert_uint_eq(id->events_completed, 1);
	pthread_cond_destroy(&mc.cond);
}
END_TEST

START_TEST(device_errors_are_returned)
{
	struct rdma_cm_event *ev = NULL;

	fail_cmd = RDMA_USER_CM_CMD_GET_EVENT;
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), -1);
	ck_assert_int_eq(errno, EIO);
	ck_assert_ptr_null(ev);
	ck_assert_int_eq(rdma_get_cm_event(channel, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(library_events_come_first_and_are_counted_apart)
{
	struct rdma_cm_event *ev;

	push(id, RDMA_CM_EVENT_ESTABLISHED, 0);
	ck_assert_int_eq(
		rdma_write_cm_event(&id->id, RDMA_CM_EVENT_USER, 5, 0xabcdef),
		0);
	ck_assert_uint_eq(id->lib_events, 1);
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_USER);
	ck_assert_int_eq(ev->status, 5);
	ck_assert_uint_eq(ev->param.arg, 0xabcdef);
	ck_assert_ptr_eq(ev->id, &id->id);
	ck_assert_int_eq(script_pos, 0); /* the kernel was not read */
	rdma_ack_cm_event(ev);
	ck_assert_uint_eq(id->lib_events, 0);
	ck_assert_uint_eq(id->events_completed, 0); /* not a kernel event */

	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_ESTABLISHED);
	rdma_ack_cm_event(ev);
	ck_assert_uint_eq(id->events_completed, 1);
}
END_TEST

START_TEST(undelivered_library_events_are_dropped)
{
	ck_assert_int_eq(rdma_write_cm_event(&id->id, RDMA_CM_EVENT_USER, 0, 1),
			 0);
	ck_assert_int_eq(rdma_write_cm_event(&id->id, RDMA_CM_EVENT_USER, 0, 2),
			 0);
	ck_assert_uint_eq(id->lib_events, 2);
	cma_channel_drop_events(id);
	ck_assert_uint_eq(id->lib_events, 0);
	ck_assert_int_eq(rdma_write_cm_event(NULL, RDMA_CM_EVENT_USER, 0, 0),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

static struct cma_timer test_timer;
static int timer_runs;

static void post_from_timer(struct cma_timer *timer)
{
	struct cma_event *evt;

	ck_assert_ptr_eq(timer, &test_timer);
	timer_runs++;
	evt = cma_event_new(id, RDMA_CM_EVENT_USER, 0);
	ck_assert_ptr_nonnull(evt);
	evt->event.param.arg = 42;
	cma_event_post(evt);
}

/*
 * An id bound to a device carries the device's shared PD at once, as in
 * rdma-core: UCX creates its QP on id->pd right after route resolution.
 * (The device's PD is preset, so no verbs call is made.)
 */
START_TEST(bound_id_gets_the_shared_pd)
{
	struct cma_device dev = {
		.verbs = (void *)0x10, .pd = (void *)0x20, .refcnt = 1};
	struct cma_device dev2 = {
		.verbs = (void *)0x11, .pd = (void *)0x21, .refcnt = 1};
	struct ibv_qp qp = {.pd = (void *)0x30};

	ck_assert_ptr_null(id->id.pd);
	ck_assert_int_eq(cma_id_set_device(id, &dev), 0);
	ck_assert_ptr_eq(id->id.verbs, dev.verbs);
	ck_assert_ptr_eq(id->id.pd, dev.pd);
	/* the same device again: its redundant reference is dropped */
	dev.refcnt++;
	ck_assert_int_eq(cma_id_set_device(id, &dev), 0);
	ck_assert_int_eq(dev.refcnt, 1);
	/* a QP on the program's PD keeps id->pd pointing at that PD */
	id->id.qp = &qp;
	id->id.pd = qp.pd;
	ck_assert_int_eq(cma_id_set_device(id, &dev2), 0);
	ck_assert_ptr_eq(id->id.pd, qp.pd);
	ck_assert_int_eq(dev.refcnt, 0);
	/* unbound and without a QP: no PD */
	id->id.qp = NULL;
	ck_assert_int_eq(cma_id_set_device(id, NULL), 0);
	ck_assert_ptr_null(id->id.verbs);
	ck_assert_ptr_null(id->id.pd);
	ck_assert_int_eq(dev2.refcnt, 0);
}
END_TEST

START_TEST(timers_run_from_get_event)
{
	struct rdma_cm_event *ev;

	timer_runs = 0;
	test_timer.expire = post_from_timer;
	cma_timer_start(channel, &test_timer, 20);
	ck_assert(test_timer.armed);
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_int_eq(timer_runs, 1);
	ck_assert(!test_timer.armed);
	ck_assert_uint_eq(ev->param.arg, 42);
	rdma_ack_cm_event(ev);

	cma_timer_start(channel, &test_timer, 10000);
	cma_timer_stop(channel, &test_timer);
	ck_assert(!test_timer.armed);
	push(id, RDMA_CM_EVENT_ESTABLISHED, 0);
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_ESTABLISHED);
	ck_assert_int_eq(timer_runs, 1);
	rdma_ack_cm_event(ev);
}
END_TEST

static Suite *event_suite(void)
{
	Suite *s = suite_create("event");
	TCase *tc = tcase_create("translation");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, established_copies_private_data);
	tcase_add_test(tc, initiator_known_from_the_connection_events);
	tcase_add_test(tc, no_private_data_means_null_pointer);
	tcase_add_test(tc, datagram_ids_get_ud_parameters);
	tcase_add_test(tc, rejected_keeps_status_and_data);
	tcase_add_test(tc, failed_query_turns_into_addr_error);
	tcase_add_test(tc, unusable_request_is_refused_and_hidden);
	tcase_add_test(tc, answers_after_a_library_failure_are_swallowed);
	tcase_add_test(tc, multicast_error_names_group_context);
	tcase_add_test(tc, device_errors_are_returned);
	tcase_add_test(tc, library_events_come_first_and_are_counted_apart);
	tcase_add_test(tc, undelivered_library_events_are_dropped);
	tcase_add_test(tc, timers_run_from_get_event);
	tcase_add_test(tc, bound_id_gets_the_shared_pd);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(event_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
