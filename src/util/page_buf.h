/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Zeroed memory on pages of its own, for buffers that are registered with
 * ibv_reg_mr.  With fork support on (RDMAV_FORK_SAFE, ibv_fork_init)
 * libibverbs marks the pages of a registered range MADV_DONTFORK: a
 * forked child has no such pages at all.  A buffer from plain malloc
 * shares its first and last pages with whatever else the heap put there
 * (another socket, the preload's descriptor table), which the child would
 * lose with it.  Freed with free().
 */
#ifndef UTIL_PAGE_BUF_H
#define UTIL_PAGE_BUF_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline void *page_buf_alloc(size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p;

	len = (len + page - 1) & ~(page - 1);
	if (!len || posix_memalign(&p, page, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

#endif /* UTIL_PAGE_BUF_H */
