/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Conversions between the kernel's rdma_ucm/uverbs structures and the
 * libibverbs structures the public API hands out.  Pure functions: no I/O,
 * no library state, so they are unit-tested byte by byte.
 */
#ifndef CMA_ABI_CONVERT_H
#define CMA_ABI_CONVERT_H

#include <infiniband/verbs.h>
#include <infiniband/sa.h>
#include "kern_abi.h"
#include <rdma/rdma_cma.h>

void cma_ah_attr_from_kern(struct ibv_ah_attr *dst,
			   const struct ib_uverbs_ah_attr *src);
void cma_qp_attr_from_kern(struct ibv_qp_attr *dst, int *mask,
			   const struct ib_uverbs_qp_attr *src);
void cma_path_from_user_rec(struct ibv_sa_path_rec *dst,
			    const struct ib_user_path_rec *src);
void cma_path_from_wire(struct ibv_sa_path_rec *dst,
			const struct ibv_path_record *src);

/* Fill the kernel's connection parameters from the caller's. */
void cma_conn_param_to_kern(struct rdma_ucm_conn_param *dst,
			    const struct rdma_conn_param *src, uint32_t qp_num,
			    uint8_t srq, uint8_t responder_resources,
			    uint8_t initiator_depth);

#endif /* CMA_ABI_CONVERT_H */
