// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests of the ACM resolver's pure parts: the SA PathRecord MAD
 * codec (src/acm/acm_sa.c), rate codes (src/acm/acm_path.c) and the
 * endpoint helpers (src/acm/acm.c); then src/acm/acm.c's resolution, the
 * sources asked in order, on the fake device's RoCE port.  The cache's
 * tests are in acm_cache_test.c, the address table's in acm_table_test.c.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acm/acm.h"
#include "acm_ep.h"
#include "acm_hosts.h"
#include "cm/cma.h"
#include "cm/test_hooks.h"
#include "fd_of.h"
#include "fake_ucma.h"
#include "fake_umad.h"
#include "fake_verbs.h"
#include "unit.h"

/* --- SA MADs ----------------------------------------------------------------------- */

START_TEST(sa_request_layout)
{
	union ibv_gid sgid, dgid;
	uint8_t mad[256];
	uint64_t mask;

	memset(&sgid, 0x11, sizeof(sgid));
	memset(&dgid, 0x22, sizeof(dgid));
	cma_acm_sa_build(mad, 0x0102030405060708ull, &sgid, &dgid, 0xffff);
	ck_assert_uint_eq(mad[0], 1);
	ck_assert_uint_eq(mad[1], 0x03); /* subnet administration */
	ck_assert_uint_eq(mad[2], 2);
	ck_assert_uint_eq(mad[3], 0x01); /* Get */
	ck_assert_uint_eq(mad[8], 0x01);
	ck_assert_uint_eq(mad[15], 0x08);
	ck_assert_uint_eq(mad[16], 0x00);
	ck_assert_uint_eq(mad[17], 0x35); /* PathRecord */
	memcpy(&mask, mad + 48, 8);
	mask = be64toh(mask);
	ck_assert_uint_eq(mask, (1u << 2) | (1u << 3) | (1u << 11) |
					(1u << 12) | (1u << 13));
	ck_assert_mem_eq(mad + 56 + 8, dgid.raw, 16);
	ck_assert_mem_eq(mad + 56 + 24, sgid.raw, 16);
	ck_assert_uint_eq(mad[56 + 49], 0x81); /* reversible, one path */
}
END_TEST

START_TEST(sa_response_checks)
{
	union ibv_gid sgid, dgid;
	struct ibv_path_record pr, got;
	uint8_t mad[256];

	memset(&sgid, 0x11, sizeof(sgid));
	memset(&dgid, 0x22, sizeof(dgid));
	cma_acm_sa_build(mad, 42, &sgid, &dgid, 0);
	mad[3] = 0x81; /* GetResp */
	memset(&pr, 0, sizeof(pr));
	pr.dgid = dgid;
	pr.sgid = sgid;
	pr.dlid = htobe16(5);
	pr.slid = htobe16(3);
	pr.pkey = htobe16(0xffff);
	pr.mtu = (2 << 6) | IBV_MTU_2048;
	memcpy(mad + 56, &pr, sizeof(pr));
	ck_assert_int_eq(cma_acm_sa_parse(mad, sizeof(mad), 42, &got), 0);
	ck_assert_mem_eq(&got, &pr, sizeof(pr));
	/* Wrong TID, short, not a response, error status, no LID. */
	ck_assert_int_eq(cma_acm_sa_parse(mad, sizeof(mad), 43, &got), -1);
	ck_assert_int_eq(cma_acm_sa_parse(mad, 100, 42, &got), -1);
	mad[3] = 0x01;
	ck_assert_int_eq(cma_acm_sa_parse(mad, sizeof(mad), 42, &got), -1);
	mad[3] = 0x81;
	mad[5] = 0x0c; /* no records */
	ck_assert_int_eq(cma_acm_sa_parse(mad, sizeof(mad), 42, &got), -1);
	ck_assert_int_eq(errno, ENODATA);
	mad[5] = 0;
	memset(mad + 56 + 40, 0, 2); /* dlid */
	ck_assert_int_eq(cma_acm_sa_parse(mad, sizeof(mad), 42, &got), -1);
	ck_assert_int_eq(errno, EPROTO);
}
END_TEST

/* --- helpers ---------------------------------------------------------------------- */

START_TEST(gid_ip_mapping)
{
	struct cma_acm_ep ip = ep_ip("192.0.2.2"), back;
	union ibv_gid gid;

	cma_acm_ip_to_gid(&ip, &gid);
	assert_gid(&gid, "::ffff:192.0.2.2");
	ck_assert_int_eq(cma_acm_gid_to_ip(&gid, &back), 0);
	ck_assert_mem_eq(&back, &ip, sizeof(ip));
	ip = ep_ip("2001:db8::2");
	cma_acm_ip_to_gid(&ip, &gid);
	ck_assert_int_eq(cma_acm_gid_to_ip(&gid, &back), 0);
	ck_assert_int_eq(back.type, CMA_ACM_EP_IP6);
	/* IB and link-local GIDs carry no usable IP address. */
	ck_assert_int_eq(inet_pton(AF_INET6, "fe80::8:f104:39a:169", gid.raw),
			 1);
	ck_assert_int_eq(cma_acm_gid_to_ip(&gid, &back), -1);
	memset(&gid, 0, sizeof(gid));
	ck_assert_int_eq(cma_acm_gid_to_ip(&gid, &back), -1);
}
END_TEST

START_TEST(rate_codes)
{
	ck_assert_uint_eq(cma_acm_rate_code(1, 1), 2); /* 1x SDR: 2.5 */
	ck_assert_uint_eq(cma_acm_rate_code(2, 1), 3); /* 4x SDR: 10 */
	ck_assert_uint_eq(cma_acm_rate_code(2, 32), 16); /* 4x EDR: 100 */
	ck_assert_uint_eq(cma_acm_rate_code(1, 32), 15); /* 1x EDR: 25 */
	ck_assert_uint_eq(cma_acm_rate_code(0, 0), 2);
}
END_TEST

START_TEST(ep_from_sockaddr)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct sockaddr_ib sib = {.sib_family = AF_IB};
	struct sockaddr sa = {.sa_family = AF_UNIX};
	struct cma_acm_ep ep;
	char buf[80];

	inet_pton(AF_INET, "192.0.2.9", &sin.sin_addr);
	ck_assert_int_eq(cma_acm_ep_from_sockaddr(&ep, (void *)&sin), 0);
	ck_assert_str_eq(cma_acm_ep_str(&ep, buf, sizeof(buf)), "192.0.2.9");
	sib.sib_addr.sib_raw[15] = 1;
	ck_assert_int_eq(cma_acm_ep_from_sockaddr(&ep, (void *)&sib), 0);
	ck_assert_str_eq(cma_acm_ep_str(&ep, buf, sizeof(buf)), "gid:::1");
	ck_assert_int_eq(cma_acm_ep_from_sockaddr(&ep, &sa), -1);
	ck_assert_int_eq(errno, EAFNOSUPPORT);
}
END_TEST

/*
 * RDMA_CM_ACM_LOG's descriptor sits at 500 or above (half a lower
 * RLIMIT_NOFILE), close-on-exec: a daemon that closes its descriptors
 * from 3 up and opens its own files must not find ours among them.
 */
START_TEST(log_fd_sits_high)
{
	char path[] = "/tmp/acm-log.XXXXXX";
	struct rlimit rl;
	int fd;

	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	setenv("RDMA_CM_USE_IB_ACM", "1", 1);
	setenv("RDMA_CM_ACM_LOG", path, 1);
	cma_acm_reconfigure();
	fd = fd_of(path);
	ck_assert_int_ge(fd, 500);
	ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
	/* A low limit: the upper half of what it allows. */
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = 64;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	cma_acm_reconfigure();
	fd = fd_of(path);
	ck_assert_int_ge(fd, 32);
	ck_assert_int_lt(fd, 64);
	unsetenv("RDMA_CM_ACM_LOG");
	unsetenv("RDMA_CM_USE_IB_ACM");
	cma_acm_reconfigure();
	ck_assert_int_eq(fd_of(path), -1);
	unlink(path);
}
END_TEST

/*
 * RDMA_CM_ACM_LOG naming a symbolic link is not followed: someone who can
 * write the log's directory cannot turn the log into appends to a file of
 * their choosing.  The link's target is neither opened nor written.
 */
START_TEST(log_refuses_a_symlink)
{
	struct planted_link p;

	ck_assert_int_eq(plant_link(&p, "/tmp/acm-log.XXXXXX"), 0);
	setenv("RDMA_CM_USE_IB_ACM", "1", 1);
	setenv("RDMA_CM_ACM_LOG", p.link, 1);
	cma_acm_reconfigure();
	ck_assert_int_eq(fd_of(p.target), -1);
	unsetenv("RDMA_CM_ACM_LOG");
	unsetenv("RDMA_CM_USE_IB_ACM");
	cma_acm_reconfigure();
	ck_assert(planted_link_remove(&p));
}
END_TEST

/* --- resolution: the sources in order (acm.c) ------------------------------ */

/*
 * This host's RoCE port carries 192.0.2.1 (as its GID); the address file
 * names "peer" at 192.0.2.2; the sources are the table and the cache.
 */
static void resolve_setup(void)
{
	struct fake_verbs_port port = {.ngids = 1};
	struct cma_acm_ep me = ep_ip("192.0.2.1");

	fake_ucma_install();
	fake_verbs_install(true);
	cma_acm_ip_to_gid(&me, &port.gids[0]);
	fake_verbs_set_port(NULL, &port);
	table_setup();
	write_file(table_path, "peer ::ffff:192.0.2.2\n", 0644);
	setenv("RDMA_CM_USE_IB_ACM", "1", 1);
	setenv("RDMA_CM_ACM_SOURCES", "table,cache", 1);
	cma_acm_reconfigure();
}

static void resolve_teardown(void)
{
	unsetenv("RDMA_CM_USE_IB_ACM");
	unsetenv("RDMA_CM_ACM_SOURCES");
	cma_acm_reconfigure();
	table_teardown();
	fake_ucma_uninstall();
}

static int resolve(const char *src, const char *dst, struct cma_acm_answer *ans)
{
	struct cma_acm_query q;

	memset(&q, 0, sizeof(q));
	if (src)
		q.src = ep_ip(src);
	q.dst = ep_name(dst);
	errno = 0;
	return cma_acm_resolve(&q, ans);
}

/* A name in the table, from a local RoCE port: a path built here. */
START_TEST(table_name_gets_a_local_path)
{
	struct cma_acm_answer ans;

	ck_assert_int_eq(resolve("192.0.2.1", "peer", &ans), 0);
	ck_assert_int_eq(ans.source, CMA_ACM_SRC_TABLE);
	ck_assert_int_eq(ans.num_paths, 1);
	assert_gid(&ans.dgid, "::ffff:192.0.2.2");
	assert_gid(&ans.paths[0].path.sgid, "::ffff:192.0.2.1");
	assert_gid(&ans.paths[0].path.dgid, "::ffff:192.0.2.2");
	ck_assert_uint_eq(ans.src_ip.type, CMA_ACM_EP_IP4);
	/* Asked again: the cache answers. */
	ck_assert_int_eq(resolve("192.0.2.1", "peer", &ans), 0);
	ck_assert_int_eq(ans.source, CMA_ACM_SRC_CACHE);
}
END_TEST

/* Misses are ENODATA, and remembered as misses for a while. */
START_TEST(misses_are_enodata_and_cached)
{
	struct cma_acm_answer ans;

	ck_assert_int_eq(resolve("192.0.2.1", "stranger", &ans), -1);
	ck_assert_int_eq(errno, ENODATA);
	write_file(table_path,
		   "peer ::ffff:192.0.2.2\nstranger ::ffff:192.0.2.7\n", 0644);
	ck_assert_int_eq(resolve("192.0.2.1", "stranger", &ans), -1);
	ck_assert_int_eq(errno, ENODATA);
	/* A source no local port has: no path can start there. */
	ck_assert_int_eq(resolve("192.0.2.9", "peer", &ans), -1);
	ck_assert_int_eq(errno, ENODATA);
}
END_TEST

/* Without RDMA_CM_USE_IB_ACM=1 nothing is asked. */
START_TEST(disabled_acm_knows_nothing)
{
	struct cma_acm_answer ans;

	unsetenv("RDMA_CM_USE_IB_ACM");
	cma_acm_reconfigure();
	ck_assert(!cma_acm_enabled());
	ck_assert_int_eq(resolve("192.0.2.1", "peer", &ans), -1);
	ck_assert_int_eq(errno, ENODATA);
}
END_TEST

/* The fake SA: the path asked for, LIDs 3 -> 5. */
static size_t sa_path(const uint8_t *req, uint8_t *resp)
{
	return fake_umad_path_reply(req, resp, 0);
}

/*
 * A destination GID on the fabric from a local InfiniBand port: only the
 * SA knows its LID, so the SA is asked (sources "sa").
 */
START_TEST(a_remote_ib_gid_is_asked_of_the_sa)
{
	struct fake_verbs_port port = {.ngids = 1,
				       .link_layer = IBV_LINK_LAYER_INFINIBAND,
				       .lid = 3,
				       .sm_lid = 1};
	struct cma_acm_answer ans;
	struct cma_acm_query q;

	inet_pton(AF_INET6, "fe80::1", port.gids[0].raw);
	fake_verbs_set_port(NULL, &port);
	cma_acm_ports_forget();
	fake_umad_install(sa_path);
	setenv("RDMA_CM_ACM_SOURCES", "sa", 1);
	cma_acm_reconfigure();
	memset(&q, 0, sizeof(q));
	q.src.type = CMA_ACM_EP_GID;
	memcpy(q.src.gid, port.gids[0].raw, 16);
	q.dst.type = CMA_ACM_EP_GID;
	inet_pton(AF_INET6, "fe80::9", q.dst.gid);
	ck_assert_int_eq(cma_acm_resolve(&q, &ans), 0);
	ck_assert_int_eq(ans.source, CMA_ACM_SRC_SA);
	ck_assert_int_eq(ans.num_paths, 1);
	ck_assert_uint_eq(be16toh(ans.paths[0].path.dlid), 5);
	assert_gid(&ans.dgid, "fe80::9");
	ck_assert_int_eq(fake_umad_state().sends, 1);
	/* Silent SA: ENODATA, as any miss. */
	fake_umad_install(NULL);
	q.dst.gid[15] = 0x0a;
	errno = 0;
	ck_assert_int_eq(cma_acm_resolve(&q, &ans), -1);
	ck_assert_int_eq(errno, ENODATA);
}
END_TEST

static void log_a_line(void)
{
	cma_acm_log("a line");
}

/* A child forked while another thread writes the log writes it. */
START_TEST(a_child_forked_beside_a_log_line_logs)
{
	char path[] = "/tmp/acm-log.XXXXXX";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	setenv("RDMA_CM_USE_IB_ACM", "1", 1);
	setenv("RDMA_CM_ACM_LOG", path, 1);
	cma_acm_reconfigure();
	unit_forks_beside_calls(log_a_line);
	unsetenv("RDMA_CM_ACM_LOG");
	unsetenv("RDMA_CM_USE_IB_ACM");
	cma_acm_reconfigure();
	unlink(path);
}
END_TEST

Suite *acm_suite(void)
{
	Suite *s = suite_create("acm");
	TCase *tc;

	tc = tcase_create("sa");
	tcase_add_test(tc, sa_request_layout);
	tcase_add_test(tc, sa_response_checks);
	suite_add_tcase(s, tc);

	tc = tcase_create("resolve");
	tcase_add_checked_fixture(tc, resolve_setup, resolve_teardown);
	tcase_add_test(tc, table_name_gets_a_local_path);
	tcase_add_test(tc, misses_are_enodata_and_cached);
	tcase_add_test(tc, disabled_acm_knows_nothing);
	tcase_add_test(tc, a_remote_ib_gid_is_asked_of_the_sa);
	suite_add_tcase(s, tc);

	tc = tcase_create("helpers");
	tcase_add_test(tc, log_fd_sits_high);
	tcase_add_test(tc, log_refuses_a_symlink);
	tcase_add_test(tc, a_child_forked_beside_a_log_line_logs);
	tcase_add_test(tc, gid_ip_mapping);
	tcase_add_test(tc, rate_codes);
	tcase_add_test(tc, ep_from_sockaddr);
	suite_add_tcase(s, tc);
	return s;
}
