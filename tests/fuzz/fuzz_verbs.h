/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * For fuzz targets that serve the verbs calls themselves (no fake_verbs.c):
 * memory registrations and address handles, counted in fuzz_mrs and
 * fuzz_ahs so that a target can check that none outlives its owner, and a
 * completion channel that never has an event to take (the targets poll
 * their CQs).  Include it once, in the target's one file.
 */
#ifndef FUZZ_VERBS_H
#define FUZZ_VERBS_H

#include <errno.h>
#include <stdlib.h>
#include <infiniband/verbs.h>

static int fuzz_mrs, fuzz_ahs;

struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
			    int access)
{
	struct ibv_mr *mr = calloc(1, sizeof(*mr));

	if (!mr)
		return NULL;
	fuzz_mrs++;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length; /* what a target reads back for the buffer */
	mr->lkey = mr->rkey = 0x1234;
	return mr;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
				uint64_t iova, unsigned int access)
{
	return (ibv_reg_mr)(pd, addr, length, (int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	fuzz_mrs--;
	free(mr);
	return 0;
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct ibv_ah *ah = calloc(1, sizeof(*ah));

	if (ah)
		fuzz_ahs++;
	return ah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	fuzz_ahs--;
	free(ah);
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		     void **cq_context)
{
	errno = EAGAIN;
	return -1;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
}

#endif /* FUZZ_VERBS_H */
