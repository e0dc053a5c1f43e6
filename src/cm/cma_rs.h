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
#include <stdint.h>

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

/*
 * Kernel ids changing process (handoff.c).  The reader of an unanswered
 * request names its kernel id (cma_id_handle) and gives up the library's
 * side of it (cma_id_hand_off; also a listener's, when another process
 * keeps it); a process holding the file the kernel id is on (from_fd)
 * adopts it into @channel, bound to its own device context, with the
 * depths the request asked for.  cma_id_take_over moves an id this process
 * inherited into @channel, owing no acks for what others read.  0, or
 * -1/errno.
 */
int cma_id_handle(struct rdma_cm_id *id, uint32_t *handle);
void cma_id_hand_off(struct rdma_cm_id *id);
int cma_id_adopt(struct rdma_event_channel *channel, int from_fd,
		 uint32_t handle, void *context,
		 const struct rdma_conn_param *request, struct rdma_cm_id **id);
int cma_id_take_over(struct rdma_cm_id *id, struct rdma_event_channel *channel);

/*
 * After a credential change the kernel refuses the files the process
 * opened before (EACCES): @id, alone on @channel, whose kernel fd is
 * non-blocking (an rsocket listener's), moves to a file opened under the
 * current credentials, with the requests waiting for it, and the device
 * contexts opened before are forgotten (creds.c).  0 (also when another
 * thread did it first), or -1/errno.
 */
int cma_follow_creds(struct rdma_event_channel *channel, struct rdma_cm_id *id);

#endif /* CMA_RS_H */
