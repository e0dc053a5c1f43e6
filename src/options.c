// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rdma_set_option: validate the option here, so a bad call gets a precise
 * errno (ENOPROTOOPT for an unknown level or name, EINVAL for a wrong
 * size), before the kernel sees it.
 */
#include <config.h>

#include <infiniband/sa.h>

#include "cma.h"
#include "ucma_abi.h"

/* The size an option's value must have; 0 for unknown options. */
static size_t cma_id_option_size(int optname)
{
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		return sizeof(uint8_t);
	case RDMA_OPTION_ID_REUSEADDR:
	case RDMA_OPTION_ID_AFONLY:
		return sizeof(int);
	}
	return 0;
}

int cma_check_option(int level, int optname, const void *optval, size_t optlen)
{
	size_t size;

	switch (level) {
	case RDMA_OPTION_ID:
		size = cma_id_option_size(optname);
		if (!size)
			return cma_err(ENOPROTOOPT);
		if (optlen != size)
			return cma_err(EINVAL);
		break;
	case RDMA_OPTION_IB:
		if (optname != RDMA_OPTION_IB_PATH)
			return cma_err(ENOPROTOOPT);
		/* One or more whole path records. */
		if (!optlen || optlen % sizeof(struct ibv_path_data) ||
		    optlen > UINT32_MAX)
			return cma_err(EINVAL);
		break;
	default:
		return cma_err(ENOPROTOOPT);
	}
	return optval ? 0 : cma_err(EFAULT);
}

CMA_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
			       void *optval, size_t optlen)
{
	struct cma_id_private *id_priv = cma_id_priv(id);

	if (cma_check_id(id))
		return -1;
	/* The library's own options never reach the kernel. */
	if (level == RDMA_OPTION_ID && (optname == RDMA_OPTION_ID_PEER2PEER ||
					optname == RDMA_OPTION_ID_P2P_TAG)) {
		if (!optval)
			return cma_err(EFAULT);
		return cma_p2p_set_option(id_priv, optname, optval, optlen);
	}
	if (cma_check_option(level, optname, optval, optlen))
		return -1;
	return ucma_cmd_set_option(cma_id_fd(id_priv), id_priv->handle,
				   (uint32_t)level, (uint32_t)optname, optval,
				   (uint32_t)optlen);
}
