// FUZZ_SOURCES: src/p2p/p2p_wire.c
// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The peer-to-peer header parser takes private data straight from the
 * network.  Whatever the bytes, it must stay inside them, and whatever it
 * accepts must be a header this version can produce: re-encoding it gives
 * back the same bytes (16 for version 1, 24 for version 3, 30 for a
 * version 3 REP with PSNs).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "p2p/p2p_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly @size bytes, so ASan sees any over-read. */
	uint8_t *buf = malloc(size ? size : 1);
	uint8_t again[CMA_P2P_HDR_MAX];
	struct cma_p2p_hdr hdr;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (cma_p2p_hdr_parse(buf, size, &hdr) == CMA_P2P_OK) {
		if (hdr.len > size || hdr.data_len > size - hdr.len)
			abort();
		if (cma_p2p_hdr_encode(&hdr, again) != hdr.len ||
		    memcmp(again, buf, hdr.len))
			abort();
	}
	free(buf);
	return 0;
}
