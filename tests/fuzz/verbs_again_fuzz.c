// FUZZ_SOURCES: src/preload/verbs_again.c
// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The preload parses whatever a program writes to a uverbs device and the
 * kernel refused (src/preload/verbs_again.c).  Whatever the bytes, the
 * builder stays inside them, and what it builds is exactly what the write
 * path would have given the handler: one of the three post commands, the
 * bytes after the header as input, out_words * 4 at the command's response
 * as output.  The whole refused-write path then runs on the same bytes,
 * with the C library faked and the descriptor taken for a uverbs device:
 * the ioctl goes out only for what the builder accepts, and the write's
 * answer is the whole length or EACCES.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl.h>

#include "preload/preload.h"
#include "preload/verbs_again.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct rsp_real rsp_real;

void rsp_log(const char *fmt, ...)
{
	(void)fmt;
}

static int ioctls;

static ssize_t refuse(int fd, const void *buf, size_t len)
{
	errno = EACCES;
	return -1;
}

/* The kernel's answers: a wrong driver for odd calls, then success. */
static int fake_ioctl(int fd, unsigned long req, ...)
{
	if (req != RDMA_VERBS_IOCTL)
		abort();
	if (ioctls++ % 2 == 0) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

static bool yes(int fd)
{
	return true;
}

static void check(const uint8_t *buf, size_t size,
		  const union rsp_verbs_ioctl *io)
{
	const struct ib_uverbs_cmd_hdr *hdr = (const void *)buf;
	const struct ib_uverbs_attr *a = io->hdr.attrs;
	uint64_t response;

	if (io->hdr.length != sizeof(*io) || io->hdr.num_attrs != 3 ||
	    io->hdr.object_id != UVERBS_OBJECT_DEVICE ||
	    io->hdr.method_id != UVERBS_METHOD_INVOKE_WRITE ||
	    io->hdr.driver_id != 9 || io->hdr.reserved1 || io->hdr.reserved2)
		abort();
	if (a[0].attr_id != UVERBS_ATTR_WRITE_CMD || a[0].len != 8 ||
	    (a[0].data != IB_USER_VERBS_CMD_POST_SEND &&
	     a[0].data != IB_USER_VERBS_CMD_POST_RECV &&
	     a[0].data != IB_USER_VERBS_CMD_POST_SRQ_RECV) ||
	    a[0].data != hdr->command)
		abort();
	if (a[1].attr_id != UVERBS_ATTR_CORE_IN ||
	    a[1].data != (uintptr_t)(buf + sizeof(*hdr)) ||
	    a[1].len != size - sizeof(*hdr) ||
	    (size_t)hdr->in_words * 4 != size ||
	    a[1].len < sizeof(struct ib_uverbs_post_send))
		abort();
	memcpy(&response, buf + sizeof(*hdr), sizeof(response));
	if (a[2].attr_id != UVERBS_ATTR_CORE_OUT || a[2].data != response ||
	    !response || a[2].len != (size_t)hdr->out_words * 4 || a[2].len < 4)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly @size bytes, so ASan sees any over-read. */
	uint8_t *buf = malloc(size ? size : 1);
	union rsp_verbs_ioctl io;
	bool built;
	ssize_t n;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	built = !rsp_verbs_build(buf, size, 9, &io);
	if (built)
		check(buf, size, &io);

	rsp_real.write = refuse;
	rsp_real.ioctl = fake_ioctl;
	rsp_verbs_file = yes;
	ioctls = 0;
	n = rsp_verbs_write(3, buf, size);
	if (built ? n != (ssize_t)size || ioctls != 2
		  : n != -1 || errno != EACCES || ioctls)
		abort();
	free(buf);
	return 0;
}
