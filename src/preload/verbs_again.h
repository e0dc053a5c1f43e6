/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Post commands the kernel refused after a credential change, sent again
 * through the device's ioctl (verbs_again.c says why).  Only the write()
 * wrapper (io.c) calls in; the rest is for the tests and the fuzzer.
 */
#ifndef RSP_VERBS_AGAIN_H
#define RSP_VERBS_AGAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <rdma/rdma_user_ioctl_cmds.h>

/* INVOKE_WRITE's attributes: the command, its input, its output. */
#define RSP_VERBS_NATTRS 3

/* An RDMA_VERBS_IOCTL buffer: the header and the attributes after it. */
union rsp_verbs_ioctl {
	struct ib_uverbs_ioctl_hdr hdr;
	unsigned char space[sizeof(struct ib_uverbs_ioctl_hdr) +
			    RSP_VERBS_NATTRS * sizeof(struct ib_uverbs_attr)];
};

/*
 * The UVERBS_METHOD_INVOKE_WRITE ioctl (for driver @driver_id) that runs
 * the legacy post command @buf of @len bytes, as a write() of it would:
 * NULL with *@out built (it points into @buf), or why @buf is not a
 * post command to send again (*@out is then undefined).
 */
const char *rsp_verbs_build(const void *buf, size_t len, uint32_t driver_id,
			    union rsp_verbs_ioctl *out);
/* Whether @st is a uverbs device's (a character device of its major). */
bool rsp_verbs_stat(const struct stat *st);
/*
 * Whether fd is a uverbs device file: by fstat and rsp_verbs_stat.  A
 * pointer only so that the unit tests can say yes for a pipe.
 */
extern bool (*rsp_verbs_file)(int fd);
/*
 * A write() on fd the kernel refused with EACCES: a post command on a
 * uverbs device sent again by ioctl (@len), else -1 with errno EACCES.
 */
ssize_t rsp_verbs_again(int fd, const void *buf, size_t len);
/* The C library's write(), with rsp_verbs_again on its EACCES. */
ssize_t rsp_verbs_write(int fd, const void *buf, size_t len);

#endif /* RSP_VERBS_AGAIN_H */
