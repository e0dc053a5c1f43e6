/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * What the rsocket code (src/rsocket/) takes from the core beyond the public
 * API: the export marker, the error convention and private event channels.
 * rsocket includes this header, never cma.h, so the core's internals (ids,
 * devices, p2p) stay out of its reach; cma.h includes it, so the two cannot
 * disagree.  The preload library (src/preload/) needs none of it: it calls
 * the public rsocket API only.
 */
#ifndef CMA_RS_H
#define CMA_RS_H

#include <errno.h>

#include <rdma/rdma_cma.h>

/*
 * Marks a definition the library exports.  The core is compiled with
 * -fvisibility=hidden, so this is the whole list; src/librdmacm.map gives
 * each its version (tests/abi/check-symbols.sh: exports-marked).
 */
#define CMA_EXPORT __attribute__((visibility("default")))

/* Set errno and return -1: the error convention of every public call. */
static inline int cma_err(int err)
{
	errno = err;
	return -1;
}

/* A private channel: its fd is the kernel's, nobody else polls it. */
struct rdma_event_channel *cma_channel_create(void);

#endif /* CMA_RS_H */
