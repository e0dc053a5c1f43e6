// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Unit tests for rsockets' public calls (src/rsocket/socket.c): the
 * argument checks before a call reaches the stream or datagram side (bad
 * descriptors, families, types and protocols, NULL buffers, short option
 * values), and rfcntl's flags.  Needs only the CM device, skipped where
 * there is none.
 */
#include <config.h>

#include <check.h>
#include <fcntl.h>
#include <poll.h>

#include "rsocket/rs.h"
#include "unit.h"

START_TEST(bad_descriptors_give_ebadf)
{
	char buf[4];
	socklen_t len = sizeof(int);
	int v = 1;

	errno = 0;
	ck_assert_int_eq(rclose(-1), -1);
	ck_assert_int_eq(errno, EBADF);
	errno = 0;
	ck_assert_int_eq(rsend(12345, buf, sizeof(buf), 0), -1);
	ck_assert_int_eq(errno, EBADF);
	errno = 0;
	ck_assert_int_eq(rrecv(0, buf, sizeof(buf), 0), -1);
	ck_assert_int_eq(errno, EBADF);
	errno = 0;
	ck_assert_int_eq(
		rsetsockopt(1 << 30, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)), -1);
	ck_assert_int_eq(errno, EBADF);
	ck_assert_int_eq(rgetsockopt(7, SOL_RDMA, RDMA_SQSIZE, &v, &len), -1);
	ck_assert_int_eq(rfcntl(7, F_GETFL), -1);
	ck_assert_int_eq(riounmap(7, buf, 4), -1);
	ck_assert_int_eq(errno, EBADF);
	ck_assert_int_eq(repoll_wait(7, NULL, 1, 0), -1);
	ck_assert_int_eq(errno, EBADF);
}
END_TEST

START_TEST(bad_arguments_are_refused)
{
	ck_assert_int_eq(rsocket(AF_UNIX, SOCK_STREAM, 0), -1);
	ck_assert_int_eq(errno, EAFNOSUPPORT);
	ck_assert_int_eq(rsocket(AF_INET, SOCK_RAW, 0), -1);
	ck_assert_int_eq(errno, ENOTSUP);
	ck_assert_int_eq(rsocket(AF_INET, SOCK_STREAM, IPPROTO_UDP), -1);
	ck_assert_int_eq(errno, EPROTONOSUPPORT);
	ck_assert_int_eq(rpoll(NULL, 1, 0), -1);
	ck_assert_int_eq(errno, EFAULT);
	ck_assert_int_eq(rselect(-1, NULL, NULL, NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(repoll_create(0x1234), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* A stream socket needs only the CM device; skip where there is none. */
static int try_socket(void)
{
	int s = rsocket(AF_INET, SOCK_STREAM, 0);

	return s;
}

START_TEST(option_values_are_validated)
{
	int s = try_socket(), v = 0;
	socklen_t len = 1;

	if (s < 0)
		return; /* no rdma_ucm here: covered in the VM */
	ck_assert_int_eq(rsetsockopt(s, SOL_RDMA, RDMA_SQSIZE, NULL, 4), -1);
	ck_assert_int_eq(errno, EFAULT);
	ck_assert_int_eq(rsetsockopt(s, SOL_RDMA, RDMA_SQSIZE, &v, 2), -1);
	ck_assert_int_eq(errno, EINVAL);
	v = -5;
	ck_assert_int_eq(rsetsockopt(s, SOL_RDMA, RDMA_RQSIZE, &v, sizeof(v)),
			 -1);
	v = 100;
	ck_assert_int_eq(rsetsockopt(s, SOL_RDMA, RDMA_RQSIZE, &v, sizeof(v)),
			 0);
	ck_assert_int_eq(rgetsockopt(s, SOL_RDMA, RDMA_RQSIZE, &v, &len), -1);
	ck_assert_int_eq(errno, EINVAL);
	len = sizeof(v);
	ck_assert_int_eq(rgetsockopt(s, SOL_RDMA, RDMA_RQSIZE, &v, &len), 0);
	ck_assert_int_eq(v, 100);
	ck_assert_int_eq(rsetsockopt(s, 9999, 1, &v, sizeof(v)), -1);
	ck_assert_int_eq(errno, ENOTSUP);
	ck_assert_int_eq(rsend(s, NULL, 10, 0), -1);
	ck_assert_int_eq(errno, EFAULT);
	ck_assert_int_eq(rsend(s, &v, sizeof(v), 0), -1);
	ck_assert_int_eq(errno, ENOTCONN);
	ck_assert_int_eq(rfcntl(s, F_SETFL, O_NONBLOCK), 0);
	ck_assert_int_eq(rfcntl(s, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	ck_assert_int_eq(rclose(s), 0);
}
END_TEST

Suite *rsocket_socket_suite(void)
{
	Suite *s = suite_create("rsocket_socket");
	TCase *tc = tcase_create("api");

	tcase_add_test(tc, bad_descriptors_give_ebadf);
	tcase_add_test(tc, bad_arguments_are_refused);
	tcase_add_test(tc, option_values_are_validated);
	suite_add_tcase(s, tc);
	return s;
}
