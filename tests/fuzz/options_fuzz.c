// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// FUZZ_SOURCES: src/options.c src/ucma_abi.c src/id.c src/channel.c src/device.c src/mcast.c src/abi_convert.c src/addr.c src/event.c src/conn.c src/qp.c src/addrinfo.c
/*
 * rdma_set_option() with arbitrary levels, names and buffers.
 *
 * The call must either refuse the buffer (-1 with ENOPROTOOPT, EINVAL or
 * EFAULT) or hand the kernel exactly the caller's bytes: the fake device
 * below reads the whole buffer the command points at, as the kernel's
 * copy_from_user would, so AddressSanitizer sees any length that does not
 * match the buffer.
 *
 * Input: one flags byte (bit 0: pass a NULL buffer), the level and the
 * option name (4 bytes each, little-endian), then the option value; its
 * length is the rest of the input.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cma.h"
#include "ucma_abi.h"

static struct rdma_event_channel channel = {.fd = 1000};
static struct rdma_ucm_set_option last_cmd;
static unsigned int sink;

static ssize_t fake_device(int fd, const void *buf, size_t len)
{
	const struct rdma_ucm_cmd_hdr *hdr = buf;
	const uint8_t *val;
	uint32_t i;

	if (hdr->cmd != RDMA_USER_CM_CMD_SET_OPTION ||
	    len != sizeof(*hdr) + sizeof(last_cmd) ||
	    hdr->in != sizeof(last_cmd))
		abort(); /* nothing else may reach the kernel */
	memcpy(&last_cmd, hdr + 1, sizeof(last_cmd));
	val = (const uint8_t *)(uintptr_t)last_cmd.optval;
	for (i = 0; i < last_cmd.optlen; i++)
		sink += val[i];
	return (ssize_t)len;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cma_id_private *id;
	int level, optname, ret;
	size_t optlen;
	void *optval;

	if (size < 9)
		return 0;
	if (!id) {
		ucma_set_writer(fake_device);
		id = cma_id_alloc(&channel, NULL, RDMA_PS_TCP, IBV_QPT_RC);
		if (!id)
			abort();
		id->handle = 5;
	}
	level = (int)le32(data + 1);
	optname = (int)le32(data + 5);
	optlen = size - 9;
	/* Exactly optlen bytes, so that any over-read is caught. */
	optval = (data[0] & 1) ? NULL : malloc(optlen ? optlen : 1);
	if (optval)
		memcpy(optval, data + 9, optlen);

	memset(&last_cmd, 0, sizeof(last_cmd));
	errno = 0;
	ret = rdma_set_option(&id->id, level, optname, optval, optlen);
	if (ret == 0) {
		/* Accepted: the kernel got the caller's option unchanged. */
		if (last_cmd.id != id->handle || (int)last_cmd.level != level ||
		    (int)last_cmd.optname != optname ||
		    last_cmd.optlen != optlen ||
		    last_cmd.optval != (uint64_t)(uintptr_t)optval)
			abort();
	} else if (ret != -1 || (errno != ENOPROTOOPT && errno != EINVAL &&
				 errno != EFAULT)) {
		fprintf(stderr, "rdma_set_option: ret %d errno %d\n", ret,
			errno);
		abort();
	}
	free(optval);
	return 0;
}
