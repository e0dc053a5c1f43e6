/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * For unit tests of the multicast options: an IB_ADD_MEMBERSHIP value
 * (struct ib_mreq) naming one group, as a test hands it to the option
 * parser or to rdma_set_option.
 */
#ifndef TESTS_UNIT_IB_REQ_H
#define TESTS_UNIT_IB_REQ_H

#include <string.h>

#include <rdma/rdma_cma.h>

/* An IB_ADD_MEMBERSHIP value naming group ff0e::1, with @mask's parts. */
static inline struct ib_mreq ib_req(ib_sa_comp_mask mask)
{
	struct ib_mreq m;

	memset(&m, 0, sizeof(m));
	m.comp_mask = mask | IB_SA_MCMEMBER_REC_MGID;
	m.rec.mgid.raw[0] = 0xff;
	m.rec.mgid.raw[1] = 0x0e;
	m.rec.mgid.raw[15] = 1;
	return m;
}

#endif
