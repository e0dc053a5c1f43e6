// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The multicast options' values and MCMember records, as pure functions:
 * parsing what the application handed to rdma_set_option (struct ip_mreq,
 * ip_mreqn, ipv6_mreq, ib_mreq), mapping an MGID to the address the
 * kernel joins, building a group's record from what the kernel reported,
 * and checking that record against what an IB_ADD_MEMBERSHIP asked for.
 *
 * No id, no device, no kernel: this file is compiled on its own into the
 * fuzz target (tests/fuzz/mcast_opt_fuzz.c), so it does not include the
 * build's config.h.
 */
#include <netinet/in.h>
#include <string.h>

#include "cm/cma.h"

/* --- option values --------------------------------------------------------- */

static void cma_mreq_set_group4(struct cma_mreq *mreq, struct in_addr addr)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&mreq->group;

	sin->sin_family = AF_INET;
	sin->sin_addr = addr;
	mreq->group_len = sizeof(*sin);
}

/*
 * struct ip_mreq or the longer struct ip_mreqn; like Linux's setsockopt,
 * a value at least as long as ip_mreqn is read as one.
 */
static int cma_mreq_parse_ip(const void *optval, size_t optlen,
			     struct cma_mreq *mreq)
{
	struct ip_mreqn mreqn;
	struct ip_mreq plain;

	if (optlen >= sizeof(mreqn)) {
		memcpy(&mreqn, optval, sizeof(mreqn));
		mreq->ifaddr = mreqn.imr_address;
		mreq->ifindex = mreqn.imr_ifindex;
		if (mreq->ifindex < 0)
			return cma_err(EINVAL);
		cma_mreq_set_group4(mreq, mreqn.imr_multiaddr);
	} else if (optlen >= sizeof(plain)) {
		memcpy(&plain, optval, sizeof(plain));
		mreq->ifaddr = plain.imr_interface;
		cma_mreq_set_group4(mreq, plain.imr_multiaddr);
	} else {
		return cma_err(EINVAL);
	}
	if (!IN_MULTICAST(ntohl(
		    ((struct sockaddr_in *)&mreq->group)->sin_addr.s_addr)))
		return cma_err(EINVAL);
	return 0;
}

static int cma_mreq_parse_ipv6(const void *optval, size_t optlen,
			       struct cma_mreq *mreq)
{
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&mreq->group;
	struct ipv6_mreq m6;

	if (optlen < sizeof(m6))
		return cma_err(EINVAL);
	memcpy(&m6, optval, sizeof(m6));
	if (!IN6_IS_ADDR_MULTICAST(&m6.ipv6mr_multiaddr) ||
	    m6.ipv6mr_interface > INT32_MAX)
		return cma_err(EINVAL);
	sin6->sin6_family = AF_INET6;
	sin6->sin6_addr = m6.ipv6mr_multiaddr;
	mreq->group_len = sizeof(*sin6);
	mreq->ifindex = (int)m6.ipv6mr_interface;
	return 0;
}

#define CMA_MCR_ALL ((IB_SA_MCMEMBER_REC_PROXY_JOIN << 1) - 1)
/* Components no kernel reports for a group: they can be neither asked of
 * the kernel's join nor checked afterwards. */
#define CMA_MCR_UNVERIFIABLE                                                   \
	(IB_SA_MCMEMBER_REC_PACKET_LIFE_TIME_SELECTOR |                        \
	 IB_SA_MCMEMBER_REC_PACKET_LIFE_TIME)

/* A selector must come with the value it selects on. */
static int cma_mreq_check_selector(ib_sa_comp_mask mask, ib_sa_comp_mask sel,
				   ib_sa_comp_mask value, uint8_t selector)
{
	if ((mask & sel) && (!(mask & value) || selector > 3))
		return -1;
	return 0;
}

static int cma_mreq_check_ranges(const struct ib_mreq *m)
{
	const struct ib_sa_mcmember_rec *r = &m->rec;
	ib_sa_comp_mask mask = m->comp_mask;

	if (cma_mreq_check_selector(mask, IB_SA_MCMEMBER_REC_MTU_SELECTOR,
				    IB_SA_MCMEMBER_REC_MTU, r->mtu_selector) ||
	    cma_mreq_check_selector(mask, IB_SA_MCMEMBER_REC_RATE_SELECTOR,
				    IB_SA_MCMEMBER_REC_RATE, r->rate_selector))
		return cma_err(EINVAL);
	if ((mask & IB_SA_MCMEMBER_REC_MTU) &&
	    (r->mtu < IBV_MTU_256 || r->mtu > IBV_MTU_4096))
		return cma_err(EINVAL);
	if ((mask & IB_SA_MCMEMBER_REC_SL) && r->sl > 15)
		return cma_err(EINVAL);
	if ((mask & IB_SA_MCMEMBER_REC_FLOW_LABEL) && r->flow_label > 0xfffff)
		return cma_err(EINVAL);
	if ((mask & IB_SA_MCMEMBER_REC_SCOPE) && r->scope > 15)
		return cma_err(EINVAL);
	return 0;
}

/*
 * The kernel's join command knows two membership kinds; the others
 * (non-member, send-only non-member, combinations) cannot be asked for.
 */
static int cma_mreq_join_flags(const struct ib_mreq *m, uint16_t *flags)
{
	if (!(m->comp_mask & IB_SA_MCMEMBER_REC_JOIN_STATE)) {
		*flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
		return 0;
	}
	switch (m->rec.join_state) {
	case IB_MC_JOIN_STATE_FULL_MEMBER:
		*flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
		return 0;
	case IB_MC_JOIN_STATE_SENDONLY_FULL_MEMBER:
		*flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
		return 0;
	case 0:
		return cma_err(EINVAL);
	}
	if (m->rec.join_state & ~0xfu)
		return cma_err(EINVAL);
	return cma_err(EOPNOTSUPP);
}

static int cma_mreq_parse_ib_add(struct cma_mreq *mreq)
{
	const struct ib_mreq *m = &mreq->ib;

	if (m->comp_mask & ~CMA_MCR_ALL)
		return cma_err(EINVAL);
	if (!(m->comp_mask & IB_SA_MCMEMBER_REC_MGID))
		return cma_err(EINVAL);
	if (cma_mreq_check_ranges(m))
		return -1;
	if (m->comp_mask & CMA_MCR_UNVERIFIABLE)
		return cma_err(EOPNOTSUPP);
	/* We never join on another port's behalf. */
	if ((m->comp_mask & IB_SA_MCMEMBER_REC_PROXY_JOIN) && m->rec.proxy_join)
		return cma_err(EOPNOTSUPP);
	return cma_mreq_join_flags(m, &mreq->join_flags);
}

static int cma_mreq_parse_ib(int optname, const void *optval, size_t optlen,
			     struct cma_mreq *mreq)
{
	if (optlen != sizeof(mreq->ib))
		return cma_err(EINVAL);
	memcpy(&mreq->ib, optval, sizeof(mreq->ib));
	mreq->is_ib = true;
	if (optname == IB_DROP_MEMBERSHIP)
		return (mreq->ib.comp_mask & IB_SA_MCMEMBER_REC_MGID)
			       ? 0
			       : cma_err(EINVAL);
	return cma_mreq_parse_ib_add(mreq);
}

int cma_mreq_parse(int level, int optname, const void *optval, size_t optlen,
		   struct cma_mreq *mreq)
{
	memset(mreq, 0, sizeof(*mreq));
	mreq->join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
	switch (level) {
	case RDMA_OPTION_IP:
		if (optname != IP_ADD_MEMBERSHIP &&
		    optname != IP_DROP_MEMBERSHIP)
			return cma_err(ENOPROTOOPT);
		mreq->join = optname == IP_ADD_MEMBERSHIP;
		break;
	case RDMA_OPTION_IPV6:
		if (optname != IPV6_JOIN_GROUP && optname != IPV6_LEAVE_GROUP)
			return cma_err(ENOPROTOOPT);
		mreq->join = optname == IPV6_JOIN_GROUP;
		break;
	case RDMA_OPTION_IB_MCAST:
		if (optname != IB_ADD_MEMBERSHIP &&
		    optname != IB_DROP_MEMBERSHIP)
			return cma_err(ENOPROTOOPT);
		mreq->join = optname == IB_ADD_MEMBERSHIP;
		break;
	default:
		return cma_err(ENOPROTOOPT);
	}
	if (!optval)
		return cma_err(optlen ? EFAULT : EINVAL);
	if (level == RDMA_OPTION_IP)
		return cma_mreq_parse_ip(optval, optlen, mreq);
	if (level == RDMA_OPTION_IPV6)
		return cma_mreq_parse_ipv6(optval, optlen, mreq);
	return cma_mreq_parse_ib(optname, optval, optlen, mreq);
}

/* --- MGIDs and addresses ------------------------------------------------- */

static bool cma_gid_is_zero(const union ibv_gid *gid)
{
	static const union ibv_gid zero;

	return !memcmp(gid, &zero, sizeof(zero));
}

/*
 * An IPv4 group as RoCE spells its MGID: ::ffff:a.b.c.d (RoCE v2) or
 * ff0e::ffff:a.b.c.d (RoCE v1).
 */
static bool cma_mgid_ipv4(const union ibv_gid *mgid)
{
	static const uint8_t v2[12] = {[10] = 0xff, [11] = 0xff};
	static const uint8_t v1[12] = {0xff, 0x0e, [10] = 0xff, [11] = 0xff};

	return !memcmp(mgid->raw, v2, sizeof(v2)) ||
	       !memcmp(mgid->raw, v1, sizeof(v1));
}

int cma_mgid_to_sockaddr(const union ibv_gid *mgid, int id_family,
			 uint8_t link_layer, struct sockaddr_storage *ss,
			 socklen_t *len)
{
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_ib *sib = (struct sockaddr_ib *)ss;

	memset(ss, 0, sizeof(*ss));
	if (link_layer == IBV_LINK_LAYER_ETHERNET) {
		/* RoCE derives the MGID from an IP group: invert that. */
		if (cma_mgid_ipv4(mgid)) {
			sin->sin_family = AF_INET;
			memcpy(&sin->sin_addr, &mgid->raw[12], 4);
			*len = sizeof(*sin);
			return 0;
		}
		if (mgid->raw[0] != 0xff)
			return cma_err(EINVAL);
	} else if (id_family == AF_IB) {
		sib->sib_family = AF_IB;
		memcpy(&sib->sib_addr, mgid->raw, sizeof(mgid->raw));
		*len = sizeof(*sib);
		return 0;
	} else if (!cma_gid_is_zero(mgid) && mgid->raw[0] != 0xff) {
		return cma_err(EINVAL);
	}
	/*
	 * An IPv6 group whose address is the MGID; on InfiniBand the kernel
	 * uses an SA-assigned-style MGID as is and "::" asks the SA for one.
	 */
	sin6->sin6_family = AF_INET6;
	memcpy(&sin6->sin6_addr, mgid->raw, sizeof(mgid->raw));
	*len = sizeof(*sin6);
	return 0;
}

/* --- records --------------------------------------------------------------- */

void cma_mcrec_build(const struct cma_mc_join_info *info,
		     struct ib_sa_mcmember_rec *rec)
{
	const struct ibv_ah_attr *ah = info->ah_attr;

	memset(rec, 0, sizeof(*rec));
	rec->mgid = ah->grh.dgid;
	rec->port_gid = *info->port_gid;
	rec->qkey = info->qkey;
	rec->mlid = ah->dlid;
	rec->mtu_selector = IB_SA_SELECTOR_EXACTLY;
	rec->mtu = info->mtu;
	rec->traffic_class = ah->grh.traffic_class;
	rec->rate_selector = IB_SA_SELECTOR_EXACTLY;
	rec->pkey = info->pkey;
	rec->rate = ah->static_rate;
	rec->sl = ah->sl;
	rec->flow_label = ah->grh.flow_label;
	rec->hop_limit = ah->grh.hop_limit;
	/* ff<flags><scope>: IPv4 groups on RoCE map to global scope. */
	rec->scope = rec->mgid.raw[0] == 0xff ? rec->mgid.raw[1] & 0x0f : 0x0e;
	rec->join_state = info->join_state;
}

unsigned int cma_rate_mbps(uint8_t rate)
{
	/* enum ibv_rate values are the record's rate encodings */
	static const unsigned int mbps[] = {
		[IBV_RATE_2_5_GBPS] = 2500,	[IBV_RATE_5_GBPS] = 5000,
		[IBV_RATE_10_GBPS] = 10000,	[IBV_RATE_20_GBPS] = 20000,
		[IBV_RATE_30_GBPS] = 30000,	[IBV_RATE_40_GBPS] = 40000,
		[IBV_RATE_60_GBPS] = 60000,	[IBV_RATE_80_GBPS] = 80000,
		[IBV_RATE_120_GBPS] = 120000,	[IBV_RATE_14_GBPS] = 14000,
		[IBV_RATE_56_GBPS] = 56000,	[IBV_RATE_112_GBPS] = 112000,
		[IBV_RATE_168_GBPS] = 168000,	[IBV_RATE_25_GBPS] = 25000,
		[IBV_RATE_100_GBPS] = 100000,	[IBV_RATE_200_GBPS] = 200000,
		[IBV_RATE_300_GBPS] = 300000,	[IBV_RATE_28_GBPS] = 28000,
		[IBV_RATE_50_GBPS] = 50000,	[IBV_RATE_400_GBPS] = 400000,
		[IBV_RATE_600_GBPS] = 600000,	[IBV_RATE_800_GBPS] = 800000,
		[IBV_RATE_1200_GBPS] = 1200000,
	};

	return rate < sizeof(mbps) / sizeof(mbps[0]) ? mbps[rate] : 0;
}

/* Does @got satisfy "selector @sel, value @want"?  Values are ordered. */
static bool cma_selected(unsigned int got, unsigned int want, uint8_t sel)
{
	if (!got)
		return false; /* the group's value is unknown */
	switch (sel) {
	case IB_SA_SELECTOR_GREATER_THAN:
		return got > want;
	case IB_SA_SELECTOR_LESS_THAN:
		return got < want;
	case IB_SA_SELECTOR_BEST:
		return true; /* whatever the group has is the best on offer */
	default:
		return got == want;
	}
}

static uint8_t cma_selector(ib_sa_comp_mask mask, ib_sa_comp_mask bit,
			    uint8_t selector)
{
	return (mask & bit) ? selector : IB_SA_SELECTOR_EXACTLY;
}

/* The components whose check is a plain comparison. */
static ib_sa_comp_mask cma_mcrec_differ(const struct ib_sa_mcmember_rec *w,
					const struct ib_sa_mcmember_rec *g)
{
	ib_sa_comp_mask d = 0;

	if (!cma_gid_is_zero(&w->mgid) && memcmp(&w->mgid, &g->mgid, 16))
		d |= IB_SA_MCMEMBER_REC_MGID;
	if (memcmp(&w->port_gid, &g->port_gid, 16))
		d |= IB_SA_MCMEMBER_REC_PORT_GID;
	if (w->qkey != g->qkey)
		d |= IB_SA_MCMEMBER_REC_QKEY;
	if (w->mlid != g->mlid)
		d |= IB_SA_MCMEMBER_REC_MLID;
	if (w->traffic_class != g->traffic_class)
		d |= IB_SA_MCMEMBER_REC_TRAFFIC_CLASS;
	if (w->pkey != g->pkey)
		d |= IB_SA_MCMEMBER_REC_PKEY;
	if (w->sl != g->sl)
		d |= IB_SA_MCMEMBER_REC_SL;
	if (w->flow_label != g->flow_label)
		d |= IB_SA_MCMEMBER_REC_FLOW_LABEL;
	if (w->hop_limit != g->hop_limit)
		d |= IB_SA_MCMEMBER_REC_HOP_LIMIT;
	if (w->scope != g->scope)
		d |= IB_SA_MCMEMBER_REC_SCOPE;
	if (w->join_state != g->join_state)
		d |= IB_SA_MCMEMBER_REC_JOIN_STATE;
	if (w->proxy_join != g->proxy_join)
		d |= IB_SA_MCMEMBER_REC_PROXY_JOIN;
	/* Components no kernel reports never match. */
	d |= CMA_MCR_UNVERIFIABLE;
	return d;
}

ib_sa_comp_mask cma_mcrec_mismatch(const struct ib_mreq *want,
				   const struct ib_sa_mcmember_rec *got)
{
	const struct ib_sa_mcmember_rec *w = &want->rec;
	ib_sa_comp_mask mask = want->comp_mask & CMA_MCR_ALL;
	ib_sa_comp_mask bad = cma_mcrec_differ(w, got);
	uint8_t sel;

	/* mtu: enum ibv_mtu grows with the size */
	sel = cma_selector(mask, IB_SA_MCMEMBER_REC_MTU_SELECTOR,
			   w->mtu_selector);
	if (!cma_selected(got->mtu, w->mtu, sel))
		bad |= IB_SA_MCMEMBER_REC_MTU | IB_SA_MCMEMBER_REC_MTU_SELECTOR;
	sel = cma_selector(mask, IB_SA_MCMEMBER_REC_RATE_SELECTOR,
			   w->rate_selector);
	if (!cma_selected(cma_rate_mbps(got->rate), cma_rate_mbps(w->rate),
			  sel))
		bad |= IB_SA_MCMEMBER_REC_RATE |
		       IB_SA_MCMEMBER_REC_RATE_SELECTOR;
	return bad & mask;
}
