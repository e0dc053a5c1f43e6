// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Post commands the kernel refuses after a credential change, sent again.
 *
 * The kernel refuses write() on a uverbs device file to a process whose
 * credentials are no longer those it opened the file with, and every
 * set*id call installs new ones: a server that accepts as root and then
 * changes to a module's user (the rsync daemon) could no longer send on a
 * device whose provider rings its doorbell through the legacy
 * IB_USER_VERBS_CMD_POST_SEND write (Soft-RoCE, Soft-iWARP).  The ioctl
 * interface has no such check, and its UVERBS_METHOD_INVOKE_WRITE runs
 * the same kernel handler as the write command, so a refused post command
 * is sent again through it, with exactly the input and output the write
 * path would have given the handler.  Every other command rdma-core sends
 * through the ioctl already; anything else keeps its EACCES.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl.h>

#include "preload.h"
#include "verbs_again.h"

/*
 * The character major of /dev/infiniband/uverbsN: the kernel's
 * IB_UVERBS_MAJOR (drivers/infiniband/core/uverbs_main.c), which the
 * UAPI headers do not carry.
 */
#define IB_UVERBS_MAJOR 231

_Static_assert(sizeof(union rsp_verbs_ioctl) ==
		       sizeof(struct ib_uverbs_ioctl_hdr) +
			       RSP_VERBS_NATTRS * sizeof(struct ib_uverbs_attr),
	       "the ioctl buffer is the header and its attributes, no more");

/* The fixed part of a post command's request and its response. */
static bool post_sizes(uint32_t command, size_t *req, size_t *resp)
{
	switch (command) {
	case IB_USER_VERBS_CMD_POST_SEND:
		*req = sizeof(struct ib_uverbs_post_send);
		*resp = sizeof(struct ib_uverbs_post_send_resp);
		return true;
	case IB_USER_VERBS_CMD_POST_RECV:
		*req = sizeof(struct ib_uverbs_post_recv);
		*resp = sizeof(struct ib_uverbs_post_recv_resp);
		return true;
	case IB_USER_VERBS_CMD_POST_SRQ_RECV:
		*req = sizeof(struct ib_uverbs_post_srq_recv);
		*resp = sizeof(struct ib_uverbs_post_srq_recv_resp);
		return true;
	}
	return false;
}

const char *rsp_verbs_build(const void *buf, size_t len, uint32_t driver_id,
			    union rsp_verbs_ioctl *out)
{
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_attr *a = out->hdr.attrs;
	size_t req, resp, in_len, out_len;
	uint64_t response;

	if (len < sizeof(hdr))
		return "shorter than a command header";
	memcpy(&hdr, buf, sizeof(hdr));
	if (hdr.command & IB_USER_VERBS_CMD_FLAG_EXTENDED)
		return "an extended command";
	if (!post_sizes(hdr.command, &req, &resp))
		return "not a post command";
	/* The write path's own checks (verify_hdr), so both refuse alike. */
	if ((size_t)hdr.in_words * 4 != len)
		return "its length is not its in_words";
	in_len = len - sizeof(hdr);
	out_len = (size_t)hdr.out_words * 4;
	if (in_len < req)
		return "shorter than its command";
	if (out_len < resp)
		return "its response is too short";
	/* An attribute's length is 16 bits: larger cannot be sent again. */
	if (in_len > UINT16_MAX || out_len > UINT16_MAX)
		return "too long for an ioctl attribute";
	/* Every post command's request starts with its response's address. */
	memcpy(&response, (const char *)buf + sizeof(hdr), sizeof(response));
	if (!response)
		return "no response buffer";

	memset(out, 0, sizeof(*out));
	out->hdr.length = sizeof(*out);
	out->hdr.object_id = UVERBS_OBJECT_DEVICE;
	out->hdr.method_id = UVERBS_METHOD_INVOKE_WRITE;
	out->hdr.num_attrs = RSP_VERBS_NATTRS;
	out->hdr.driver_id = driver_id;
	/* A const attribute is a u64 held in the attribute itself. */
	a[0].attr_id = UVERBS_ATTR_WRITE_CMD;
	a[0].len = sizeof(uint64_t);
	a[0].data = hdr.command;
	/*
	 * What the write path gives the handler: the bytes after the header
	 * (in_words * 4 less the header) and out_words * 4 at the response.
	 * The input is never 8 bytes or fewer, so it is always a pointer,
	 * never data held in the attribute.
	 */
	a[1].attr_id = UVERBS_ATTR_CORE_IN;
	a[1].len = in_len;
	a[1].data = (uintptr_t)((const char *)buf + sizeof(hdr));
	a[2].attr_id = UVERBS_ATTR_CORE_OUT;
	a[2].len = out_len;
	a[2].data = response;
	return NULL;
}

bool rsp_verbs_stat(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && major(st->st_rdev) == IB_UVERBS_MAJOR;
}

/*
 * By the descriptor's own device number, not by its name: the process may
 * be in a chroot, with no /proc or /sys to ask.
 */
static bool verbs_file(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && rsp_verbs_stat(&st);
}

bool (*rsp_verbs_file)(int fd) = verbs_file;

/*
 * The ioctl's header names the device's driver, and the kernel refuses
 * any other at once (EINVAL) without running the handler.  The preload
 * does not know which driver is behind the descriptor, so it tries the
 * one that answered last (at first Soft-RoCE's), then every other: a
 * wrong one never reaches the handler, so a command runs at most once.
 * 0, or the errno of the ioctl that failed.
 */
#define RSP_VERBS_DRIVERS 64 /* above the kernel's last RDMA_DRIVER_* */
static uint32_t last_driver = RDMA_DRIVER_RXE;

static int send_again(int fd, union rsp_verbs_ioctl *cmd)
{
	uint32_t last = __atomic_load_n(&last_driver, __ATOMIC_RELAXED);
	int i;

	for (i = -1; i < RSP_VERBS_DRIVERS; i++) {
		if (i >= 0 && (uint32_t)i == last)
			continue;
		cmd->hdr.driver_id = i < 0 ? last : (uint32_t)i;
		if (!rsp_real.ioctl(fd, RDMA_VERBS_IOCTL, cmd)) {
			__atomic_store_n(&last_driver, cmd->hdr.driver_id,
					 __ATOMIC_RELAXED);
			return 0;
		}
		if (errno != EINVAL)
			return errno;
	}
	return EINVAL;
}

ssize_t rsp_verbs_again(int fd, const void *buf, size_t len)
{
	static bool logged;
	union rsp_verbs_ioctl cmd;
	const char *why;
	int err = 0;

	/* Only ever a uverbs device gets this ioctl. */
	if (!rsp_verbs_file(fd))
		goto refused;
	why = rsp_verbs_build(buf, len, 0, &cmd);
	if (!why) {
		err = send_again(fd, &cmd);
		if (!err)
			return len;
		why = "the ioctl failed";
	}
	if (!__atomic_exchange_n(&logged, true, __ATOMIC_RELAXED))
		rsp_log("a command refused on uverbs descriptor %d (the "
			"credentials changed) could not be sent again: %s (%d)",
			fd, why, err);
refused:
	errno = EACCES;
	return -1;
}

ssize_t rsp_verbs_write(int fd, const void *buf, size_t len)
{
	ssize_t n = rsp_real.write(fd, buf, len);

	if (n < 0 && errno == EACCES)
		return rsp_verbs_again(fd, buf, len);
	return n;
}
