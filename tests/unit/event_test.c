// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for src/cm/event.c: kernel events queued on the fake kernel
 * device (fake_ucma) become rdma_cm_events with the right id, parameters and private data,
 * events the library consumes are accounted for, and acks reach the right
 * counters; every event has its name.  No kernel and no RDMA device are
 * needed.
 */
#include <config.h>

#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/wait.h>

#include "cm/cma.h"
#include "fake_ucma.h"
#include "p2p/p2p_table.h"
#include "cm/test_hooks.h"
#include "unit.h"

static struct rdma_event_channel *channel;
static struct cma_id_private *id;

static void setup(void)
{
	fake_ucma_install();
	channel = cma_channel_create();
	ck_assert_ptr_nonnull(channel);
	id = cma_id_alloc(channel, (void *)0x1234, RDMA_PS_TCP, IBV_QPT_RC);
	ck_assert_ptr_nonnull(id);
	ck_assert_int_eq(cma_id_create_kernel(id), 0);
}

static void teardown(void)
{
	cma_id_free(id);
	cma_channel_destroy(channel);
	fake_ucma_uninstall();
}

/* The kernel reports an event for the test's id. */
static struct rdma_ucm_event_resp *push(uint32_t event, int32_t status)
{
	struct rdma_ucm_event_resp *r =
		fake_ucma_event(id->handle, event, status);

	ck_assert_ptr_nonnull(r);
	return r;
}

START_TEST(established_copies_private_data)
{
	struct rdma_ucm_event_resp *r;
	struct rdma_cm_event *ev;

	r = push(RDMA_CM_EVENT_ESTABLISHED, 0);
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

	push(RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_CONNECT_RESPONSE);
	ck_assert_int_eq(rdma_get_option(&id->id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_INITIATOR, &v,
					 sizeof(v)),
			 0);
	ck_assert_int_eq(v, 1);
	rdma_ack_cm_event(ev);

	id->passive = true;
	push(RDMA_CM_EVENT_ESTABLISHED, 0);
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

	push(RDMA_CM_EVENT_DISCONNECTED, 0);
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
	r = push(RDMA_CM_EVENT_ESTABLISHED, 0);
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

	r = push(RDMA_CM_EVENT_REJECTED, 28);
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

	fake_ucma_fail_next(RDMA_USER_CM_CMD_QUERY_ROUTE, EIO);
	push(RDMA_CM_EVENT_ADDR_RESOLVED, 0);
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
	uint32_t child = 0;
	int i;

	ck_assert_ptr_nonnull(fake_ucma_conn_req(id->handle, &child));
	push(RDMA_CM_EVENT_ADDR_CHANGE, 0);
	fake_ucma_clear_log();
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_ADDR_CHANGE);
	ck_assert_uint_eq(id->events_completed, 1);
	ck_assert_int_eq(fake_ucma_ncmds(), 3);
	ck_assert_uint_eq(fake_ucma_cmd(0)->cmd, RDMA_USER_CM_CMD_QUERY_ROUTE);
	ck_assert_uint_eq(fake_ucma_cmd(1)->cmd, RDMA_USER_CM_CMD_REJECT);
	ck_assert_uint_eq(fake_ucma_cmd(2)->cmd, RDMA_USER_CM_CMD_DESTROY_ID);
	for (i = 0; i < 3; i++)
		ck_assert_uint_eq(fake_ucma_cmd(i)->handle, child);
	ck_assert(!fake_ucma_kid(child)->live);
	rdma_ack_cm_event(ev);
	ck_assert_uint_eq(id->events_completed, 2);
}
END_TEST

START_TEST(answers_after_a_library_failure_are_swallowed)
{
	struct rdma_cm_event *ev;

	id->connect_error = true;
	push(RDMA_CM_EVENT_REJECTED, 28);
	push(RDMA_CM_EVENT_DISCONNECTED, 0);
	push(RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
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
	/* The kernel names the group by the uid the join gave it. */
	push(RDMA_CM_EVENT_MULTICAST_ERROR, -ETIMEDOUT)->uid =
		(uint64_t)(uintptr_t)&mc;
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

	fake_ucma_fail_next(RDMA_USER_CM_CMD_GET_EVENT, EIO);
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

	push(RDMA_CM_EVENT_ESTABLISHED, 0);
	ck_assert_int_eq(
		rdma_write_cm_event(&id->id, RDMA_CM_EVENT_USER, 5, 0xabcdef),
		0);
	ck_assert_uint_eq(id->lib_events, 1);
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_USER);
	ck_assert_int_eq(ev->status, 5);
	ck_assert_uint_eq(ev->param.arg, 0xabcdef);
	ck_assert_ptr_eq(ev->id, &id->id);
	/* the kernel was not read */
	ck_assert_int_eq(fake_ucma_queued(cma_channel_kernel_fd(channel)), 1);
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

/* Only RDMA_CM_EVENT_USER may be written (rdma-core): nothing is queued. */
START_TEST(only_user_events_can_be_written)
{
	static const enum rdma_cm_event_type refused[] = {
		RDMA_CM_EVENT_ADDR_RESOLVED,	 RDMA_CM_EVENT_ESTABLISHED,
		RDMA_CM_EVENT_DISCONNECTED,	 RDMA_CM_EVENT_DEVICE_REMOVAL,
		RDMA_CM_EVENT_ADDRINFO_RESOLVED, RDMA_CM_EVENT_INTERNAL,
		(enum rdma_cm_event_type) - 1,	 (enum rdma_cm_event_type)1000,
	};
	struct rdma_cm_event *ev;
	size_t i;

	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		errno = 0;
		ck_assert_int_eq(rdma_write_cm_event(&id->id, refused[i], 0, i),
				 -1);
		ck_assert_int_eq(errno, EINVAL);
	}
	ck_assert_uint_eq(id->lib_events, 0);
	ck_assert_int_eq(
		rdma_write_cm_event(&id->id, RDMA_CM_EVENT_USER, -3, 9), 0);
	ck_assert_int_eq(rdma_get_cm_event(channel, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_USER);
	ck_assert_int_eq(ev->status, -3);
	ck_assert_uint_eq(ev->param.arg, 9);
	rdma_ack_cm_event(ev);
	ck_assert_uint_eq(id->lib_events, 0);
}
END_TEST

START_TEST(event_names)
{
	ck_assert_str_eq(rdma_event_str(RDMA_CM_EVENT_ADDR_RESOLVED),
			 "RDMA_CM_EVENT_ADDR_RESOLVED");
	ck_assert_str_eq(rdma_event_str(RDMA_CM_EVENT_TIMEWAIT_EXIT),
			 "RDMA_CM_EVENT_TIMEWAIT_EXIT");
	ck_assert_str_eq(rdma_event_str(RDMA_CM_EVENT_USER),
			 "RDMA_CM_EVENT_USER");
	ck_assert_str_eq(rdma_event_str((enum rdma_cm_event_type)1000),
			 "UNKNOWN EVENT");
	ck_assert_str_eq(rdma_event_str((enum rdma_cm_event_type) - 1),
			 "UNKNOWN EVENT");
}
END_TEST

Suite *event_suite(void)
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
	tcase_add_test(tc, only_user_events_can_be_written);
	suite_add_tcase(s, tc);
	tc = tcase_create("names");
	tcase_add_test(tc, event_names);
	suite_add_tcase(s, tc);
	return s;
}
