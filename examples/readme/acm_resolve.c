// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The README's ACM example, whole:
 *   RDMA_CM_USE_IB_ACM=1 acm_resolve HOST PORT
 * resolves HOST through the library's ACM resolver (rdma_cm_acm(7)) and
 * says whether the answer came with path records; without the variable the
 * same program resolves through getaddrinfo(3) and the kernel.
 */
#include <stdio.h>
#include <infiniband/sa.h>
#include <rdma/rdma_cma.h>

int main(int argc, char **argv)
{
	/* README begin */
	struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_TCP}, *res;

	if (argc != 3 || rdma_getaddrinfo(argv[1], argv[2], &hints, &res)) {
		perror("rdma_getaddrinfo");
		return 1;
	}
	/* With ACM: the path records ACM found, ready for rdma_create_ep. */
	printf("%s: family %d, %zu path record(s)\n", argv[1], res->ai_family,
	       res->ai_route_len / sizeof(struct ibv_path_data));
	rdma_freeaddrinfo(res);
	/* README end */
	return 0;
}
