// FUZZ_SOURCES: src/mcast/mcast_mreq.c
// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libFuzzer target for the multicast option values rdma_set_option parses
 * (src/mcast/mcast_mreq.c): struct ip_mreq / ip_mreqn / ipv6_mreq / ib_mreq of
 * any length and content, then, for what parses, the MGID mapping and the
 * component-mask check against a record built from the rest of the input.
 *
 * Input: byte 0 picks the (level, name) pair, byte 1 the link layer and
 * address family for the MGID mapping, the rest is the option value; the
 * fake joined group of the component check is made of the same bytes.
 */
#include <stdint.h>
#include <string.h>

#include "cm/cma.h"

static const struct {
	int level, optname;
} opts[] = {
	{RDMA_OPTION_IP, IP_ADD_MEMBERSHIP},
	{RDMA_OPTION_IP, IP_DROP_MEMBERSHIP},
	{RDMA_OPTION_IPV6, IPV6_JOIN_GROUP},
	{RDMA_OPTION_IPV6, IPV6_LEAVE_GROUP},
	{RDMA_OPTION_IB_MCAST, IB_ADD_MEMBERSHIP},
	{RDMA_OPTION_IB_MCAST, IB_DROP_MEMBERSHIP},
	{RDMA_OPTION_IB_MCAST, IB_MCMEMBER_RECORD},
	{RDMA_OPTION_ID, 0},
};

static void check_record(const struct cma_mreq *mreq, const uint8_t *p,
			 size_t n)
{
	struct ib_sa_mcmember_rec got;
	struct cma_mc_join_info info;
	struct ibv_ah_attr ah;
	union ibv_gid gid;

	memset(&ah, 0, sizeof(ah));
	memset(&gid, 0, sizeof(gid));
	memcpy(&ah, p, n < sizeof(ah) ? n : sizeof(ah));
	info = (struct cma_mc_join_info){
		.ah_attr = &ah,
		.qkey = ah.src_path_bits * 0x01010101u,
		.pkey = ah.dlid,
		.mtu = ah.port_num % 8,
		.port_gid = &gid,
		.join_state = mreq->join_flags ? 8 : 1,
	};
	cma_mcrec_build(&info, &got);
	(void)cma_mcrec_mismatch(&mreq->ib, &got);
	(void)cma_rate_mbps(ah.static_rate);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t layers[] = {IBV_LINK_LAYER_UNSPECIFIED,
					 IBV_LINK_LAYER_INFINIBAND,
					 IBV_LINK_LAYER_ETHERNET};
	static const int families[] = {AF_INET, AF_INET6, AF_IB};
	struct sockaddr_storage ss;
	struct cma_mreq mreq;
	const void *val;
	socklen_t len;
	size_t vlen;
	uint8_t sel;

	if (size < 2)
		return 0;
	sel = data[0] % (sizeof(opts) / sizeof(opts[0]));
	/* an empty value is passed as NULL, as a careless caller would */
	vlen = size - 2;
	val = vlen ? data + 2 : NULL;
	if (cma_mreq_parse(opts[sel].level, opts[sel].optname, val, vlen,
			   &mreq))
		return 0;
	if (!mreq.is_ib)
		return 0;
	(void)cma_mgid_to_sockaddr(&mreq.ib.rec.mgid, families[data[1] % 3],
				   layers[(data[1] / 3) % 3], &ss, &len);
	check_record(&mreq, data + 2, vlen);
	return 0;
}
