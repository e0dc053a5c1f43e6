// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// FUZZ_SOURCES: src/acm/acm_service.c src/acm/acm_sa.c
/*
 * The ACM answers the library reads from other processes and the fabric:
 * an ibacm service answer (cma_acm_msg_parse) and an SA PathRecord
 * response MAD (cma_acm_sa_parse).  Every input must be either accepted
 * with a plausible path or refused, without reading out of bounds.
 */
#include <config.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "acm/acm.h"

/* What the two parsers need from the rest of the library. */
void cma_acm_log(const char *fmt, ...)
{
	(void)fmt;
}

unsigned int cma_acm_service_timeout_ms(void)
{
	return 1;
}

unsigned int cma_acm_sa_timeout_ms(void)
{
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cma_acm_answer ans;
	struct ibv_path_record path;
	uint8_t *copy;
	int i;

	/* An exact-size copy, so ASan sees any read past the end. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (!cma_acm_msg_parse(copy, size, &ans)) {
		if (ans.num_paths < 1 || ans.num_paths > CMA_ACM_MAX_PATHS)
			abort();
		for (i = 0; i < ans.num_paths; i++)
			if (!(ans.paths[i].path.mtu & 0x3f))
				abort();
	}
	if (size >= 16) {
		uint64_t tid;

		memcpy(&tid, copy + 8, 8);
		(void)cma_acm_sa_parse(copy, size, be64toh(tid), &path);
	}
	free(copy);
	return 0;
}
