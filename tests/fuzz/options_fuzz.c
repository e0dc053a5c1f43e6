// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// FUZZ_SOURCES: @library tests/unit/fake_ucma.c
/*
 * rdma_set_option() with arbitrary levels, names and buffers.
 *
 * The call must either refuse the buffer (-1 with ENOPROTOOPT, EINVAL or
 * EFAULT) or hand the kernel exactly the caller's bytes: the hook on the
 * fake kernel device (tests/unit/fake_ucma.h) reads the whole buffer the
 * command points at, as the kernel's copy_from_user would, so
 * AddressSanitizer sees any length that does not match the buffer.
 *
 * Input: one flags byte (bit 0: pass a NULL buffer), the level and the
 * option name (4 bytes each, little-endian), then the option value; its
 * length is the rest of the input.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"
#include "fake_ucma.h"

static struct rdma_ucm_set_option last_cmd;
static unsigned int sink;

static int kernel_side(const struct fake_cmd *cmd, void *resp, size_t len)
{
	const uint8_t *val;
	uint32_t i;

	(void)resp;
	(void)len;
	if (cmd->cmd == RDMA_USER_CM_CMD_CREATE_ID)
		return FAKE_UCMA_MODEL; /* the harness's one id */
	if (cmd->cmd != RDMA_USER_CM_CMD_SET_OPTION ||
	    cmd->len != sizeof(cmd->hdr) + sizeof(last_cmd) ||
	    cmd->hdr.in != sizeof(last_cmd))
		abort(); /* nothing else may reach the kernel */
	memcpy(&last_cmd, cmd->body, sizeof(last_cmd));
	val = (const uint8_t *)(uintptr_t)last_cmd.optval;
	for (i = 0; i < last_cmd.optlen; i++)
		sink += val[i];
	return 0;
}

/* Options the library keeps to itself (no SET_OPTION command). */
static int library_option(int level, int optname)
{
	return (level == RDMA_OPTION_ID &&
		(optname == RDMA_OPTION_ID_PEER2PEER ||
		 optname == RDMA_OPTION_ID_P2P_TAG)) ||
	       level >= RDMA_OPTION_IP;
}

/* The errors rdma_set_option(3) documents. */
static int documented_errno(int err)
{
	switch (err) {
	case ENOPROTOOPT:
	case EINVAL:
	case EFAULT:
	case EPROTOTYPE: /* multicast levels on a connected id */
	case EOPNOTSUPP:
	case EADDRNOTAVAIL:
	case EADDRINUSE:
	case ENODEV:
	case ENOMEM:
		return 1;
	}
	return 0;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rdma_event_channel *channel;
	static struct rdma_cm_id *id;
	static uint32_t handle;
	int level, optname, ret;
	size_t optlen;
	void *optval;

	if (size < 9)
		return 0;
	if (!id) {
		fake_ucma_install();
		fake_ucma_set_hook(kernel_side);
		channel = rdma_create_event_channel();
		if (!channel || rdma_create_id(channel, &id, NULL, RDMA_PS_TCP))
			abort();
		handle = cma_id_priv(id)->handle;
	}
	fake_ucma_clear_log(); /* one input's commands, not the whole run's */
	level = (int)le32(data + 1);
	optname = (int)le32(data + 5);
	optlen = size - 9;
	/* Exactly optlen bytes, so that any over-read is caught. */
	optval = (data[0] & 1) ? NULL : malloc(optlen ? optlen : 1);
	if (optval)
		memcpy(optval, data + 9, optlen);

	memset(&last_cmd, 0, sizeof(last_cmd));
	errno = 0;
	ret = rdma_set_option(id, level, optname, optval, optlen);
	if (ret == 0 && last_cmd.optval) {
		/* Passed on: the kernel got the caller's option unchanged. */
		if (last_cmd.id != handle || (int)last_cmd.level != level ||
		    (int)last_cmd.optname != optname ||
		    last_cmd.optlen != optlen ||
		    last_cmd.optval != (uint64_t)(uintptr_t)optval)
			abort();
	} else if (ret == 0 && !library_option(level, optname)) {
		abort(); /* a kernel option accepted without the kernel */
	} else if (ret != 0 && (ret != -1 || !documented_errno(errno))) {
		fprintf(stderr, "rdma_set_option: ret %d errno %d\n", ret,
			errno);
		abort();
	}
	free(optval);
	return 0;
}
