// FUZZ_SOURCES: examples/rcopy_proto.c
// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rcopy's server reads headers and OPEN paths from the network: decode any
 * bytes as a header, then as the path field that would follow it.
 */
#include <stddef.h>
#include <stdint.h>

#include "../../examples/rcopy_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rc_hdr h;
	size_t plen;

	if (rc_hdr_decode(data, size, &h))
		return 0;
	if (h.command == RC_CMD_OPEN) {
		plen = h.len - RC_HDR_LEN;
		if (plen <= size - RC_HDR_LEN)
			rc_path_check((const char *)data + RC_HDR_LEN, plen);
	} else if (h.command == RC_CMD_WRITE && size >= RC_WRITE_LEN) {
		rc_u64_decode(data + RC_HDR_LEN);
	}
	return 0;
}
