// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// FUZZ_SOURCES: src/acm/acm_table.c
/*
 * The ACM address file (ibacm's hosts format): any bytes must parse into
 * a table of well-formed entries (or fail with ENOMEM), and every entry
 * must be found again by its own address.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "acm/acm.h"

void cma_acm_log(const char *fmt, ...)
{
	(void)fmt;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cma_acm_table t;
	char *copy;
	size_t i;

	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (!cma_acm_table_parse(copy, size, &t)) {
		for (i = 0; i < t.count; i++) {
			const struct cma_acm_ep *ep = &t.entries[i].addr;

			if (ep->type == CMA_ACM_EP_NAME &&
			    strnlen(ep->name, CMA_ACM_NAME_MAX) >=
				    CMA_ACM_NAME_MAX)
				abort();
			if (!cma_acm_table_find(&t, ep))
				abort();
		}
		cma_acm_table_clear(&t);
	}
	free(copy);
	return 0;
}
