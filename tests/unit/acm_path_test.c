// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The ACM resolver's local ports and locally built paths (src/acm/acm_path.c)
 * on the fake verbs devices, whose ports and GID tables the tests set:
 *
 *  - a GID is found on the active port that carries it, with the port's
 *    attributes (device name, GID index, MTU, P_Key, rate); an unknown GID
 *    or one on a port that is down is ENODEV; the snapshot is taken again
 *    once forgotten; a child forked during a scan scans;
 *  - the first InfiniBand port with a subnet manager, and none on RoCE;
 *  - the kernel's source address towards a destination (no packet sent);
 *  - a RoCE path is the two GIDs with the port's MTU and rate, hop limit
 *    64 and the kernel's packet lifetime; an InfiniBand path exists only
 *    towards a local InfiniBand port (loopback), with both LIDs, else
 *    ENODATA (the SA is asked instead).
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <string.h>

#include "acm/acm.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"

/* The RoCE GID of an IPv4 address (v4-mapped). */
static union ibv_gid gid_ip4(const char *addr)
{
	struct cma_acm_ep ep = {.type = CMA_ACM_EP_IP4};
	union ibv_gid gid;

	ck_assert_int_eq(inet_pton(AF_INET, addr, ep.ip4), 1);
	cma_acm_ip_to_gid(&ep, &gid);
	return gid;
}

/* An InfiniBand GID: the link-local prefix and a GUID ending in @n. */
static union ibv_gid gid_ib(uint8_t n)
{
	union ibv_gid gid;

	memset(&gid, 0, sizeof(gid));
	gid.raw[0] = 0xfe;
	gid.raw[1] = 0x80;
	gid.raw[15] = n;
	return gid;
}

static void setup(void)
{
	fake_verbs_install(true);
	cma_acm_ports_forget();
}

static void teardown(void)
{
	cma_acm_ports_forget();
}

START_TEST(gid_found_with_its_port)
{
	struct fake_verbs_port fp = {.ngids = 2,
				     .active_width = 2, /* 4X */
				     .active_speed = 32}; /* EDR */
	union ibv_gid want = gid_ip4("192.0.2.1");
	struct cma_acm_port port;

	fp.gids[0] = gid_ib(1);
	fp.gids[1] = want;
	fake_verbs_set_port(NULL, &fp);
	ck_assert_int_eq(cma_acm_port_by_gid(&want, &port), 0);
	ck_assert_str_eq(port.dev_name, "fake0");
	ck_assert_uint_eq(port.port_num, 1);
	ck_assert_uint_eq(port.link_layer, IBV_LINK_LAYER_ETHERNET);
	ck_assert_int_eq(port.gid_index, 1);
	ck_assert_mem_eq(port.gid.raw, want.raw, 16);
	ck_assert_int_eq(port.active_mtu, IBV_MTU_1024);
	ck_assert_uint_eq(port.pkey, 0xffff);
	ck_assert_uint_eq(port.rate, 16); /* 4 x 25 Gb/s: 100 Gb/s */
}
END_TEST

START_TEST(unknown_gid_is_enodev)
{
	struct fake_verbs_port fp = {.ngids = 1};
	union ibv_gid other = gid_ip4("192.0.2.9");
	struct cma_acm_port port;

	fp.gids[0] = gid_ip4("192.0.2.1");
	fake_verbs_set_port(NULL, &fp);
	errno = 0;
	ck_assert_int_eq(cma_acm_port_by_gid(&other, &port), -1);
	ck_assert_int_eq(errno, ENODEV);
}
END_TEST

START_TEST(port_down_is_not_used)
{
	struct fake_verbs_port fp = {.ngids = 1, .state = IBV_PORT_DOWN};
	struct cma_acm_port port;

	fp.gids[0] = gid_ip4("192.0.2.1");
	fake_verbs_set_port(NULL, &fp);
	errno = 0;
	ck_assert_int_eq(cma_acm_port_by_gid(&fp.gids[0], &port), -1);
	ck_assert_int_eq(errno, ENODEV);
}
END_TEST

/* Every device is scanned; forgetting the snapshot reads them again. */
START_TEST(every_device_and_a_new_snapshot)
{
	struct fake_verbs_port fp = {.ngids = 1};
	struct ibv_device *dev1 = fake_verbs_add_device(false);
	union ibv_gid g0 = gid_ip4("192.0.2.1"), g1 = gid_ip4("198.51.100.1");
	union ibv_gid later = gid_ip4("203.0.113.1");
	struct cma_acm_port port;

	fp.gids[0] = g0;
	fake_verbs_set_port(NULL, &fp);
	fp.gids[0] = g1;
	fake_verbs_set_port(dev1, &fp);
	ck_assert_int_eq(cma_acm_port_by_gid(&g0, &port), 0);
	ck_assert_str_eq(port.dev_name, "fake0");
	ck_assert_int_eq(cma_acm_port_by_gid(&g1, &port), 0);
	ck_assert_str_eq(port.dev_name, "fake1");
	fp.gids[0] = later;
	fake_verbs_set_port(dev1, &fp);
	cma_acm_ports_forget();
	ck_assert_int_eq(cma_acm_port_by_gid(&later, &port), 0);
	ck_assert_str_eq(port.dev_name, "fake1");
	ck_assert_int_eq(cma_acm_port_by_gid(&g1, &port), -1);
}
END_TEST

START_TEST(first_ib_port_needs_a_subnet_manager)
{
	struct fake_verbs_port fp = {
		.ngids = 1, .link_layer = IBV_LINK_LAYER_INFINIBAND, .lid = 7};
	struct ibv_device *dev1 = fake_verbs_add_device(false);
	struct cma_acm_port port;

	/* RoCE ports have no subnet manager. */
	fp.gids[0] = gid_ip4("192.0.2.1");
	fp.link_layer = IBV_LINK_LAYER_ETHERNET;
	fp.sm_lid = 1;
	fake_verbs_set_port(NULL, &fp);
	errno = 0;
	ck_assert_int_eq(cma_acm_port_first_ib(&port), -1);
	ck_assert_int_eq(errno, ENODEV);
	/* An InfiniBand port whose SM is not known yet does not count. */
	fp.gids[0] = gid_ib(1);
	fp.link_layer = IBV_LINK_LAYER_INFINIBAND;
	fp.sm_lid = 0;
	fake_verbs_set_port(dev1, &fp);
	cma_acm_ports_forget();
	ck_assert_int_eq(cma_acm_port_first_ib(&port), -1);
	fp.sm_lid = 1;
	fake_verbs_set_port(dev1, &fp);
	cma_acm_ports_forget();
	ck_assert_int_eq(cma_acm_port_first_ib(&port), 0);
	ck_assert_str_eq(port.dev_name, "fake1");
	ck_assert_uint_eq(port.lid, 7);
	ck_assert_uint_eq(port.sm_lid, 1);
}
END_TEST

START_TEST(route_source_is_the_kernels_choice)
{
	struct cma_acm_ep dst = {.type = CMA_ACM_EP_IP4}, src;
	uint8_t lo6[16] = {[15] = 1};

	inet_pton(AF_INET, "127.0.0.1", dst.ip4);
	ck_assert_int_eq(cma_acm_route_source(&dst, &src), 0);
	ck_assert_uint_eq(src.type, CMA_ACM_EP_IP4);
	ck_assert_mem_eq(src.ip4, dst.ip4, 4);
	/* IPv6 where the machine has it. */
	memset(&dst, 0, sizeof(dst));
	dst.type = CMA_ACM_EP_IP6;
	memcpy(dst.ip6, lo6, 16);
	if (!cma_acm_route_source(&dst, &src)) {
		ck_assert_uint_eq(src.type, CMA_ACM_EP_IP6);
		ck_assert_mem_eq(src.ip6, lo6, 16);
	}
	/* Names and GIDs have no route. */
	dst.type = CMA_ACM_EP_NAME;
	errno = 0;
	ck_assert_int_eq(cma_acm_route_source(&dst, &src), -1);
	ck_assert_int_eq(errno, EAFNOSUPPORT);
	dst.type = CMA_ACM_EP_GID;
	ck_assert_int_eq(cma_acm_route_source(&dst, &src), -1);
}
END_TEST

START_TEST(roce_path_from_the_port)
{
	struct fake_verbs_port fp = {.ngids = 1};
	union ibv_gid dgid = gid_ip4("192.0.2.2");
	struct cma_acm_port port;
	struct ibv_path_data out;
	struct ibv_path_record *p = &out.path;

	fp.gids[0] = gid_ip4("192.0.2.1");
	fake_verbs_set_port(NULL, &fp);
	ck_assert_int_eq(cma_acm_port_by_gid(&fp.gids[0], &port), 0);
	ck_assert_int_eq(cma_acm_path_build(&port, &dgid, &out), 0);
	ck_assert_uint_eq(out.flags, IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY |
					     IBV_PATH_FLAG_BIDIRECTIONAL);
	ck_assert_mem_eq(p->sgid.raw, fp.gids[0].raw, 16);
	ck_assert_mem_eq(p->dgid.raw, dgid.raw, 16);
	ck_assert_uint_eq(be16toh(p->pkey), 0xffff);
	ck_assert_uint_eq(p->mtu, 0x80 | IBV_MTU_1024); /* "exactly" */
	ck_assert_uint_eq(p->rate, 0x80 | 2); /* 1X SDR */
	ck_assert_uint_eq(be32toh(p->flowlabel_hoplimit), 64);
	ck_assert_uint_eq(p->packetlifetime, 0x80 | 16);
	ck_assert_uint_eq(p->reversible_numpath, 0x81);
	ck_assert_uint_eq(p->slid, 0); /* RoCE has no LIDs */
	ck_assert_uint_eq(p->dlid, 0);
}
END_TEST

START_TEST(ib_path_only_to_a_local_port)
{
	struct fake_verbs_port fp = {.ngids = 1,
				     .link_layer = IBV_LINK_LAYER_INFINIBAND,
				     .lid = 3,
				     .sm_lid = 1};
	struct ibv_device *dev1 = fake_verbs_add_device(false);
	struct ibv_device *dev2 = fake_verbs_add_device(false);
	union ibv_gid remote = gid_ib(9);
	struct cma_acm_port port;
	struct ibv_path_data out;

	fp.gids[0] = gid_ib(1);
	fake_verbs_set_port(NULL, &fp);
	fp.gids[0] = gid_ib(2);
	fp.lid = 4;
	fake_verbs_set_port(dev1, &fp);
	fp.gids[0] = gid_ip4("192.0.2.1");
	fp.link_layer = IBV_LINK_LAYER_ETHERNET;
	fake_verbs_set_port(dev2, &fp);
	fp.gids[0] = gid_ib(1);
	ck_assert_int_eq(cma_acm_port_by_gid(&fp.gids[0], &port), 0);
	/* Loopback to the other local port: both LIDs are known. */
	fp.gids[0] = gid_ib(2);
	ck_assert_int_eq(cma_acm_path_build(&port, &fp.gids[0], &out), 0);
	ck_assert_uint_eq(be16toh(out.path.slid), 3);
	ck_assert_uint_eq(be16toh(out.path.dlid), 4);
	ck_assert_uint_eq(out.path.packetlifetime, 0x80 | 18);
	ck_assert_uint_eq(out.path.flowlabel_hoplimit, 0);
	/* A remote GID's LID only the SA knows. */
	errno = 0;
	ck_assert_int_eq(cma_acm_path_build(&port, &remote, &out), -1);
	ck_assert_int_eq(errno, ENODATA);
	/* Neither does a RoCE port have one. */
	fp.gids[0] = gid_ip4("192.0.2.1");
	errno = 0;
	ck_assert_int_eq(cma_acm_path_build(&port, &fp.gids[0], &out), -1);
	ck_assert_int_eq(errno, ENODATA);
}
END_TEST

static union ibv_gid scanned_gid;

/*
 * A new snapshot of the ports every time: the lock held throughout.  No
 * check inside: each takes Check's own lock, which a fork would copy.
 */
static void snapshot_ports(void)
{
	struct cma_acm_port port;

	cma_acm_ports_forget();
	cma_acm_port_by_gid(&scanned_gid, &port);
}

/* A child forked while another thread scans the ports scans them. */
START_TEST(a_child_forked_beside_a_scan_scans)
{
	struct fake_verbs_port fp = {.ngids = 1};

	scanned_gid = gid_ip4("192.0.2.1");
	fp.gids[0] = scanned_gid;
	fake_verbs_set_port(NULL, &fp);
	unit_forks_beside_calls(snapshot_ports);
}
END_TEST

Suite *acm_path_suite(void)
{
	Suite *s = suite_create("acm_path");
	TCase *t = tcase_create("ports");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, gid_found_with_its_port);
	tcase_add_test(t, unknown_gid_is_enodev);
	tcase_add_test(t, port_down_is_not_used);
	tcase_add_test(t, every_device_and_a_new_snapshot);
	tcase_add_test(t, first_ib_port_needs_a_subnet_manager);
	tcase_add_test(t, route_source_is_the_kernels_choice);
	tcase_add_test(t, a_child_forked_beside_a_scan_scans);
	suite_add_tcase(s, t);
	t = tcase_create("paths");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, roce_path_from_the_port);
	tcase_add_test(t, ib_path_only_to_a_local_port);
	suite_add_tcase(s, t);
	return s;
}
