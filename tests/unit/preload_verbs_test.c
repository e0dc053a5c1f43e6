// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * A post command the kernel refused on a uverbs device after a credential
 * change, sent again by ioctl (src/preload/verbs_again.c, compiled in).
 * Case build: the UVERBS_METHOD_INVOKE_WRITE buffer made from a
 * POST_SEND, POST_RECV or POST_SRQ_RECV write gives the kernel's handler
 * what the write path would have (the bytes after the header, out_words
 * * 4 at the response), and every other buffer is refused.  Case write:
 * the C library's write and ioctl faked, a pipe taken for a uverbs
 * device; the ioctl is sent only after an EACCES, only for the three
 * commands and only on a uverbs device, a wrong driver is tried past, and
 * a failed ioctl gives back the write's EACCES.
 */
#define _GNU_SOURCE
#include <config.h>

#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl.h>

#include "preload/preload.h"
#include "preload/verbs_again.h"
#include "unit.h"

/*
 * A legacy post command as rdma-core writes it: the header, the fixed
 * request, then @extra bytes of work requests and scatter entries.
 */
struct post_cmd {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		struct ib_uverbs_post_send req; /* the three share its layout */
		unsigned char space[sizeof(struct ib_uverbs_post_send) + 256];
	};
};

static uint32_t resp_word;

static size_t make_post(struct post_cmd *c, uint32_t command, size_t extra)
{
	size_t len = sizeof(c->hdr) + sizeof(c->req) + extra;

	memset(c, 0, sizeof(*c));
	c->hdr.command = command;
	c->hdr.in_words = len / 4;
	c->hdr.out_words = sizeof(struct ib_uverbs_post_send_resp) / 4;
	c->req.response = (uintptr_t)&resp_word;
	c->req.qp_handle = 7;
	c->req.wr_count = extra ? 1 : 0;
	c->req.wqe_size = sizeof(struct ib_uverbs_send_wr);
	return len;
}

static void check_built(const struct post_cmd *c, size_t len, uint32_t command,
			const union rsp_verbs_ioctl *io)
{
	const struct ib_uverbs_attr *a = io->hdr.attrs;

	ck_assert_uint_eq(io->hdr.length,
			  sizeof(struct ib_uverbs_ioctl_hdr) + 3 * sizeof(*a));
	ck_assert_uint_eq(io->hdr.object_id, UVERBS_OBJECT_DEVICE);
	ck_assert_uint_eq(io->hdr.method_id, UVERBS_METHOD_INVOKE_WRITE);
	ck_assert_uint_eq(io->hdr.num_attrs, 3);
	ck_assert_uint_eq(io->hdr.driver_id, RDMA_DRIVER_SIW);
	ck_assert(!io->hdr.reserved1 && !io->hdr.reserved2);
	/* the command: a const, a u64 in the attribute itself */
	ck_assert_uint_eq(a[0].attr_id, UVERBS_ATTR_WRITE_CMD);
	ck_assert_uint_eq(a[0].len, 8);
	ck_assert_uint_eq(a[0].data, command);
	/* the input: everything after the header, where it is */
	ck_assert_uint_eq(a[1].attr_id, UVERBS_ATTR_CORE_IN);
	ck_assert_uint_eq(a[1].len, len - sizeof(c->hdr));
	ck_assert_uint_eq(a[1].len, c->hdr.in_words * 4 - sizeof(c->hdr));
	ck_assert_uint_eq(a[1].data, (uintptr_t)&c->req);
	/* the output: out_words * 4 bytes at the command's response */
	ck_assert_uint_eq(a[2].attr_id, UVERBS_ATTR_CORE_OUT);
	ck_assert_uint_eq(a[2].len, c->hdr.out_words * 4);
	ck_assert_uint_eq(a[2].data, (uintptr_t)&resp_word);
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(a[i].flags, 0);
		ck_assert_uint_eq(a[i].attr_data.reserved, 0);
	}
}

START_TEST(post_commands_are_built_as_the_write_path_runs_them)
{
	static const uint32_t cmds[] = {IB_USER_VERBS_CMD_POST_SEND,
					IB_USER_VERBS_CMD_POST_RECV,
					IB_USER_VERBS_CMD_POST_SRQ_RECV};
	static const size_t extras[] = {0, 16, 64, 256};
	union rsp_verbs_ioctl io;
	struct post_cmd c;
	size_t len;

	for (size_t i = 0; i < 3; i++)
		for (size_t j = 0; j < 4; j++) {
			len = make_post(&c, cmds[i], extras[j]);
			ck_assert_ptr_null(
				rsp_verbs_build(&c, len, RDMA_DRIVER_SIW, &io));
			check_built(&c, len, cmds[i], &io);
		}
	/* a larger response buffer is passed whole, as the write would */
	len = make_post(&c, IB_USER_VERBS_CMD_POST_RECV, 16);
	c.hdr.out_words = 4;
	ck_assert_ptr_null(rsp_verbs_build(&c, len, RDMA_DRIVER_SIW, &io));
	check_built(&c, len, IB_USER_VERBS_CMD_POST_RECV, &io);
}
END_TEST

/* rxe's doorbell: a POST_SEND with no work request at all. */
START_TEST(an_empty_post_send_is_a_doorbell_and_is_built)
{
	union rsp_verbs_ioctl io;
	struct post_cmd c;
	size_t len = make_post(&c, IB_USER_VERBS_CMD_POST_SEND, 0);

	ck_assert_uint_eq(len, 32);
	ck_assert_ptr_null(rsp_verbs_build(&c, len, RDMA_DRIVER_RXE, &io));
	ck_assert_uint_eq(io.hdr.driver_id, RDMA_DRIVER_RXE);
	ck_assert_uint_eq(io.hdr.attrs[1].len, 24);
	ck_assert_uint_eq(io.hdr.attrs[2].len, 4);
}
END_TEST

static void refused(const struct post_cmd *c, size_t len)
{
	union rsp_verbs_ioctl io;

	ck_assert_ptr_nonnull(rsp_verbs_build(c, len, RDMA_DRIVER_RXE, &io));
}

/* A POST_SEND whose input is more than 65535 bytes (in_words allows it). */
static void big_input_is_refused(void)
{
	size_t len = (size_t)UINT16_MAX * 4;
	struct post_cmd *c = calloc(1, len);
	union rsp_verbs_ioctl io;

	ck_assert_ptr_nonnull(c);
	make_post(c, IB_USER_VERBS_CMD_POST_SEND, 0);
	c->hdr.in_words = UINT16_MAX;
	ck_assert_ptr_nonnull(rsp_verbs_build(c, len, RDMA_DRIVER_RXE, &io));
	/* the largest an attribute takes is built */
	len = sizeof(c->hdr) + (UINT16_MAX & ~3);
	c->hdr.in_words = len / 4;
	ck_assert_ptr_null(rsp_verbs_build(c, len, RDMA_DRIVER_RXE, &io));
	ck_assert_uint_eq(io.hdr.attrs[1].len, len - sizeof(c->hdr));
	free(c);
}

START_TEST(every_other_buffer_is_refused)
{
	struct post_cmd c;
	size_t len = make_post(&c, IB_USER_VERBS_CMD_POST_SEND, 16);

	/* shorter than a header, down to nothing */
	for (size_t n = 0; n < sizeof(c.hdr); n++)
		refused(&c, n);
	/* other commands, legacy and extended */
	c.hdr.command = IB_USER_VERBS_CMD_CREATE_QP;
	refused(&c, len);
	c.hdr.command = IB_USER_VERBS_CMD_MODIFY_QP;
	refused(&c, len);
	c.hdr.command =
		IB_USER_VERBS_CMD_POST_SEND | IB_USER_VERBS_CMD_FLAG_EXTENDED;
	refused(&c, len);
	c.hdr.command = IB_USER_VERBS_CMD_POST_SEND | 0x100;
	refused(&c, len);
	/* in_words not the length, both ways, and not whole words */
	len = make_post(&c, IB_USER_VERBS_CMD_POST_SEND, 16);
	c.hdr.in_words++;
	refused(&c, len);
	c.hdr.in_words -= 2;
	refused(&c, len);
	c.hdr.in_words++;
	refused(&c, len + 1);
	refused(&c, len - 2);
	/* the header and less than the fixed request */
	len = make_post(&c, IB_USER_VERBS_CMD_POST_RECV, 0);
	c.hdr.in_words = (len - 8) / 4;
	refused(&c, len - 8);
	c.hdr.in_words = 2;
	refused(&c, 8);
	/* no room for the response, or no response at all */
	len = make_post(&c, IB_USER_VERBS_CMD_POST_SRQ_RECV, 0);
	c.hdr.out_words = 0;
	refused(&c, len);
	len = make_post(&c, IB_USER_VERBS_CMD_POST_SRQ_RECV, 0);
	c.req.response = 0;
	refused(&c, len);
	/* more than an attribute's 16-bit length can say */
	len = make_post(&c, IB_USER_VERBS_CMD_POST_SEND, 0);
	c.hdr.out_words = UINT16_MAX;
	refused(&c, len);
	big_input_is_refused();
}
END_TEST

START_TEST(only_the_uverbs_major_is_a_uverbs_device)
{
	struct stat st = {0};

	st.st_mode = S_IFCHR | 0666;
	st.st_rdev = makedev(231, 192);
	ck_assert(rsp_verbs_stat(&st));
	st.st_rdev = makedev(231, 0); /* umad, the same major */
	ck_assert(rsp_verbs_stat(&st));
	st.st_rdev = makedev(10, 58); /* rdma_cm, a misc device */
	ck_assert(!rsp_verbs_stat(&st));
	st.st_rdev = makedev(1, 3);
	ck_assert(!rsp_verbs_stat(&st));
	st.st_mode = S_IFBLK | 0666;
	st.st_rdev = makedev(231, 192);
	ck_assert(!rsp_verbs_stat(&st));
	st.st_mode = S_IFREG | 0666;
	ck_assert(!rsp_verbs_stat(&st));
}
END_TEST

/* --- the write path, with the C library faked ---------------------------- */

static int write_errno; /* what the fake write fails with, 0: it succeeds */
static int ioctl_calls, ioctl_errno, wrong_drivers;
static union rsp_verbs_ioctl ioctl_got;
static unsigned long ioctl_req;

static ssize_t fake_write(int fd, const void *buf, size_t len)
{
	(void)fd;
	(void)buf;
	if (write_errno) {
		errno = write_errno;
		return -1;
	}
	return len;
}

/* Fails as the kernel does for @wrong_drivers drivers, then as told. */
static int fake_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;

	(void)fd;
	va_start(ap, req);
	memcpy(&ioctl_got, va_arg(ap, void *), sizeof(ioctl_got));
	va_end(ap);
	ioctl_req = req;
	if (ioctl_calls++ < wrong_drivers) {
		errno = EINVAL;
		return -1;
	}
	if (ioctl_errno) {
		errno = ioctl_errno;
		return -1;
	}
	return 0;
}

static bool yes(int fd)
{
	(void)fd;
	return true;
}

static struct rsp_real saved_real;
static bool (*saved_file)(int);
static int pipe_fds[2];

static void fake_setup(void)
{
	saved_real = rsp_real;
	saved_file = rsp_verbs_file;
	rsp_real.write = fake_write;
	rsp_real.ioctl = fake_ioctl;
	write_errno = ioctl_calls = ioctl_errno = wrong_drivers = 0;
	ck_assert_int_eq(pipe(pipe_fds), 0);
}

static void fake_teardown(void)
{
	rsp_real = saved_real;
	rsp_verbs_file = saved_file;
	close(pipe_fds[0]);
	close(pipe_fds[1]);
}

START_TEST(the_ioctl_is_sent_only_after_an_eacces)
{
	struct post_cmd c;
	size_t len = make_post(&c, IB_USER_VERBS_CMD_POST_SEND, 16);

	rsp_verbs_file = yes;
	ck_assert_int_eq(rsp_verbs_write(pipe_fds[1], &c, len), len);
	write_errno = EPIPE;
	ck_assert_int_eq(rsp_verbs_write(pipe_fds[1], &c, len), -1);
	ck_assert_int_eq(errno, EPIPE);
	write_errno = EINVAL;
	ck_assert_int_eq(rsp_verbs_write(pipe_fds[1], &c, len), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(ioctl_calls, 0);

	write_errno = EACCES;
	ck_assert_int_eq(rsp_verbs_write(pipe_fds[1], &c, len), len);
	ck_assert_int_eq(ioctl_calls, 1);
	ck_assert_uint_eq(ioctl_req, RDMA_VERBS_IOCTL);
	ck_assert_uint_eq(ioctl_got.hdr.attrs[0].data,
			  IB_USER_VERBS_CMD_POST_SEND);
	ck_assert_uint_eq(ioctl_got.hdr.attrs[1].data, (uintptr_t)&c.req);
	ck_assert_uint_eq(ioctl_got.hdr.attrs[1].len, len - sizeof(c.hdr));
}
END_TEST

START_TEST(only_the_three_post_commands_are_sent_again)
{
	static const uint32_t cmds[] = {IB_USER_VERBS_CMD_POST_SEND,
					IB_USER_VERBS_CMD_POST_RECV,
					IB_USER_VERBS_CMD_POST_SRQ_RECV};
	struct post_cmd c;
	size_t len;

	rsp_verbs_file = yes;
	write_errno = EACCES;
	for (int i = 0; i < 3; i++) {
		len = make_post(&c, cmds[i], 0);
		ck_assert_int_eq(rsp_verbs_write(pipe_fds[1], &c, len), len);
		ck_assert_int_eq(ioctl_calls, i + 1);
		ck_assert_uint_eq(ioctl_got.hdr.attrs[0].data, cmds[i]);
	}
	len = make_post(&c, IB_USER_VERBS_CMD_DESTROY_QP, 0);
	ck_assert_int_eq(rsp_verbs_write(pipe_fds[1], &c, len), -1);
	ck_assert_int_eq(errno, EACCES);
	len = make_post(&c, IB_USER_VERBS_CMD_POST_SEND, 0);
	c.hdr.command |= IB_USER_VERBS_CMD_FLAG_EXTENDED;
	ck_assert_int_eq(rsp_verbs_write(pipe_fds[1], &c, len), -1);
	ck_assert_int_eq(errno, EACCES);
	ck_assert_int_eq(rsp_verbs_write(pipe_fds[1], &c, 3), -1);
	ck_assert_int_eq(errno, EACCES);
	ck_assert_int_eq(ioctl_calls, 3);
}
END_TEST

START_TEST(a_file_not_a_uverbs_device_keeps_its_eacces)
{
	struct post_cmd c;
	size_t len = make_post(&c, IB_USER_VERBS_CMD_POST_SEND, 0);

	/* the real check: a pipe is no uverbs device */
	write_errno = EACCES;
	ck_assert_int_eq(rsp_verbs_write(pipe_fds[1], &c, len), -1);
	ck_assert_int_eq(errno, EACCES);
	ck_assert_int_eq(rsp_verbs_write(-1, &c, len), -1);
	ck_assert_int_eq(errno, EACCES);
	ck_assert_int_eq(ioctl_calls, 0);
}
END_TEST

START_TEST(a_failed_ioctl_gives_back_eacces)
{
	struct post_cmd c;
	size_t len = make_post(&c, IB_USER_VERBS_CMD_POST_RECV, 16);

	rsp_verbs_file = yes;
	write_errno = EACCES;
	ioctl_errno = ENOMEM;
	ck_assert_int_eq(rsp_verbs_write(pipe_fds[1], &c, len), -1);
	ck_assert_int_eq(errno, EACCES);
	/* a handler's error is final: no other driver is tried */
	ck_assert_int_eq(ioctl_calls, 1);

	/* no driver at all takes it */
	ioctl_calls = 0;
	ioctl_errno = EINVAL;
	ck_assert_int_eq(rsp_verbs_write(pipe_fds[1], &c, len), -1);
	ck_assert_int_eq(errno, EACCES);
	ck_assert_int_gt(ioctl_calls, 20);
}
END_TEST

START_TEST(a_wrong_driver_is_tried_past_and_the_right_one_kept)
{
	struct post_cmd c;
	size_t len = make_post(&c, IB_USER_VERBS_CMD_POST_SEND, 0);
	uint32_t found;

	rsp_verbs_file = yes;
	write_errno = EACCES;
	wrong_drivers = 5;
	ck_assert_int_eq(rsp_verbs_write(pipe_fds[1], &c, len), len);
	ck_assert_int_eq(ioctl_calls, 6);
	found = ioctl_got.hdr.driver_id;
	/* the next one goes to the driver that answered, at once */
	ioctl_calls = wrong_drivers = 0;
	ck_assert_int_eq(rsp_verbs_write(pipe_fds[1], &c, len), len);
	ck_assert_int_eq(ioctl_calls, 1);
	ck_assert_uint_eq(ioctl_got.hdr.driver_id, found);
}
END_TEST

Suite *preload_verbs_suite(void)
{
	Suite *s = suite_create("preload_verbs");
	TCase *tc = tcase_create("build");

	tcase_add_test(tc, post_commands_are_built_as_the_write_path_runs_them);
	tcase_add_test(tc, an_empty_post_send_is_a_doorbell_and_is_built);
	tcase_add_test(tc, every_other_buffer_is_refused);
	tcase_add_test(tc, only_the_uverbs_major_is_a_uverbs_device);
	suite_add_tcase(s, tc);
	tc = tcase_create("write");
	tcase_add_checked_fixture(tc, fake_setup, fake_teardown);
	tcase_add_test(tc, the_ioctl_is_sent_only_after_an_eacces);
	tcase_add_test(tc, only_the_three_post_commands_are_sent_again);
	tcase_add_test(tc, a_file_not_a_uverbs_device_keeps_its_eacces);
	tcase_add_test(tc, a_failed_ioctl_gives_back_eacces);
	tcase_add_test(tc, a_wrong_driver_is_tried_past_and_the_right_one_kept);
	suite_add_tcase(s, tc);
	return s;
}
