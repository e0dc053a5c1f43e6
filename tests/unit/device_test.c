// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The library's device table (src/cm/device.c) on the fake devices, as
 * rdma_get_devices(3), rdma_free_devices(3) and rdma_cm(7) describe it:
 * rdma_get_devices returns the opened contexts of the devices present,
 * NULL-terminated, the same contexts the ids bind to; rdma_free_devices
 * frees only the array.  Devices plugged in later are found on the next
 * call or the next id that names them; an unplugged device, or one the
 * kernel reported removed (RDMA_CM_EVENT_DEVICE_REMOVAL), leaves the list
 * and is closed once its last id is destroyed.
 */
#include <config.h>

#include <check.h>
#include <errno.h>
#include <string.h>

#include "cm/cma.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"

static struct rdma_event_channel *ch;

static void setup(void)
{
	ch = unit_fakes_open(true);
}

static void teardown(void)
{
	unit_fakes_close(ch);
}

/* fake_ucma reports @dev as the device routes go through. */
static void route_through(struct ibv_device *dev)
{
	struct fake_ucma_route r = {
		.node_guid = htobe64(fake_verbs_guid(dev)),
		.port_num = 1,
		.pkey = 0xffff,
	};

	fake_ucma_set_route(&r);
}

static struct rdma_cm_id *bound_id(void)
{
	struct sockaddr_in src = unit_ipv4("192.0.2.1", 0);
	struct rdma_cm_id *id;

	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_bind_addr(id, (struct sockaddr *)&src), 0);
	return id;
}

static int count_devices(void)
{
	struct ibv_context **list;
	int n = -1, i;

	list = rdma_get_devices(&n);
	ck_assert_ptr_nonnull(list);
	for (i = 0; list[i]; i++)
		;
	ck_assert_int_eq(i, n); /* NULL-terminated after n entries */
	rdma_free_devices(list);
	return n;
}

START_TEST(the_list_holds_the_opened_devices)
{
	struct ibv_context **list, **again;
	struct rdma_cm_id *id;
	int n;

	list = rdma_get_devices(&n);
	ck_assert_ptr_nonnull(list);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(list[0]->device->name, "fake0");
	ck_assert_ptr_null(list[1]);
	/* The same contexts every time, and for the ids. */
	again = rdma_get_devices(NULL);
	ck_assert_ptr_eq(again[0], list[0]);
	id = bound_id();
	ck_assert_ptr_eq(id->verbs, list[0]);
	ck_assert_int_eq(fake_verbs_counts().contexts, 1);
	rdma_free_devices(again);
	rdma_free_devices(list);
	/* Freeing the array closes nothing. */
	ck_assert_int_eq(fake_verbs_counts().contexts, 1);
	ck_assert_ptr_nonnull(id->verbs->device);
	rdma_destroy_id(id);
}
END_TEST

START_TEST(a_device_plugged_later_is_found)
{
	struct ibv_device *dev;
	struct rdma_cm_id *id;

	ck_assert_int_eq(count_devices(), 1);
	dev = fake_verbs_add_device(false);
	ck_assert_int_eq(count_devices(), 2);
	/* An id routed through a device never listed yet finds it too. */
	dev = fake_verbs_add_device(false);
	route_through(dev);
	id = bound_id();
	ck_assert_ptr_nonnull(id->verbs);
	ck_assert_ptr_eq(id->verbs->device, dev);
	rdma_destroy_id(id);
	ck_assert_int_eq(count_devices(), 3);
}
END_TEST

/* An id routed through a GUID no device has: the bind fails, ENODEV. */
START_TEST(an_unknown_device_is_refused)
{
	struct fake_ucma_route r = {.node_guid = htobe64(0xdead),
				    .port_num = 1};
	struct sockaddr_in src = unit_ipv4("192.0.2.1", 0);
	struct rdma_cm_id *id;

	fake_ucma_set_route(&r);
	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_bind_addr(id, (struct sockaddr *)&src), -1);
	ck_assert_int_eq(errno, ENODEV);
	ck_assert_ptr_null(id->verbs);
	rdma_destroy_id(id);
}
END_TEST

/* Unplugged: out of the list at once, closed when its last id goes. */
START_TEST(an_unplugged_device_is_closed_after_its_last_id)
{
	struct ibv_device *dev = fake_verbs_add_device(false);
	struct rdma_cm_id *id;

	route_through(dev);
	id = bound_id();
	ck_assert_int_eq(count_devices(), 2);
	ck_assert_int_eq(fake_verbs_counts().contexts, 2);
	fake_verbs_unplug(dev);
	ck_assert_int_eq(count_devices(), 1);
	ck_assert_int_eq(fake_verbs_counts().contexts, 2); /* still used */
	rdma_destroy_id(id);
	ck_assert_int_eq(fake_verbs_counts().contexts, 1);
	ck_assert_int_eq(fake_verbs_counts().pds, 0);
}
END_TEST

/* DEVICE_REMOVAL: the device leaves the list; the id is destroyed. */
START_TEST(device_removal_takes_the_device_out)
{
	struct rdma_cm_id *id = bound_id();
	struct rdma_cm_event *ev;

	fake_ucma_event(fake_ucma_kid_of(id)->handle,
			RDMA_CM_EVENT_DEVICE_REMOVAL, 0);
	ev = unit_expect_event(ch, RDMA_CM_EVENT_DEVICE_REMOVAL);
	ck_assert_ptr_eq(ev->id, id);
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(count_devices(), 0);
	rdma_destroy_id(id);
	ck_assert_int_eq(fake_verbs_counts().contexts, 0);
}
END_TEST

Suite *device_suite(void)
{
	Suite *s = suite_create("device");
	TCase *tc = tcase_create("devices");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, the_list_holds_the_opened_devices);
	tcase_add_test(tc, a_device_plugged_later_is_found);
	tcase_add_test(tc, an_unknown_device_is_refused);
	tcase_add_test(tc, an_unplugged_device_is_closed_after_its_last_id);
	tcase_add_test(tc, device_removal_takes_the_device_out);
	suite_add_tcase(s, tc);
	return s;
}
