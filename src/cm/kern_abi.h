/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The kernel's <rdma/rdma_user_cm.h>, included so that it can live beside
 * <rdma/rdma_cma.h>: both define the port-space, join-flag and option
 * enumerators (with the same values), which C forbids twice.  The kernel's
 * copies are renamed while its header is read; the public names are ours.
 */
#ifndef CMA_KERN_ABI_H
#define CMA_KERN_ABI_H

#define RDMA_PS_IPOIB KERN_RDMA_PS_IPOIB
#define RDMA_PS_IB KERN_RDMA_PS_IB
#define RDMA_PS_TCP KERN_RDMA_PS_TCP
#define RDMA_PS_UDP KERN_RDMA_PS_UDP
#define RDMA_MC_JOIN_FLAG_FULLMEMBER KERN_RDMA_MC_JOIN_FLAG_FULLMEMBER
#define RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER                                  \
	KERN_RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
#define RDMA_MC_JOIN_FLAG_RESERVED KERN_RDMA_MC_JOIN_FLAG_RESERVED
#define RDMA_OPTION_ID KERN_RDMA_OPTION_ID
#define RDMA_OPTION_IB KERN_RDMA_OPTION_IB
#define RDMA_OPTION_ID_TOS KERN_RDMA_OPTION_ID_TOS
#define RDMA_OPTION_ID_REUSEADDR KERN_RDMA_OPTION_ID_REUSEADDR
#define RDMA_OPTION_ID_AFONLY KERN_RDMA_OPTION_ID_AFONLY
#define RDMA_OPTION_ID_ACK_TIMEOUT KERN_RDMA_OPTION_ID_ACK_TIMEOUT
#define RDMA_OPTION_IB_PATH KERN_RDMA_OPTION_IB_PATH

#include <rdma/rdma_user_cm.h>

#undef RDMA_PS_IPOIB
#undef RDMA_PS_IB
#undef RDMA_PS_TCP
#undef RDMA_PS_UDP
#undef RDMA_MC_JOIN_FLAG_FULLMEMBER
#undef RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
#undef RDMA_MC_JOIN_FLAG_RESERVED
#undef RDMA_OPTION_ID
#undef RDMA_OPTION_IB
#undef RDMA_OPTION_ID_TOS
#undef RDMA_OPTION_ID_REUSEADDR
#undef RDMA_OPTION_ID_AFONLY
#undef RDMA_OPTION_ID_ACK_TIMEOUT
#undef RDMA_OPTION_IB_PATH

#endif /* CMA_KERN_ABI_H */
