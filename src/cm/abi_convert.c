// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Kernel structure <-> verbs structure conversions (see abi_convert.h).
 */
#include <config.h>

#include <endian.h>
#include <string.h>

#include "abi_convert.h"

void cma_ah_attr_from_kern(struct ibv_ah_attr *dst,
			   const struct ib_uverbs_ah_attr *src)
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;
	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

void cma_qp_attr_from_kern(struct ibv_qp_attr *dst, int *mask,
			   const struct ib_uverbs_qp_attr *src)
{
	memset(dst, 0, sizeof(*dst));
	*mask = (int)src->qp_attr_mask;
	dst->qp_state = (enum ibv_qp_state)src->qp_state;
	dst->cur_qp_state = (enum ibv_qp_state)src->cur_qp_state;
	dst->path_mtu = (enum ibv_mtu)src->path_mtu;
	dst->path_mig_state = (enum ibv_mig_state)src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = (unsigned int)src->qp_access_flags;
	cma_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	cma_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
	dst->cap.max_send_wr = src->max_send_wr;
	dst->cap.max_recv_wr = src->max_recv_wr;
	dst->cap.max_send_sge = src->max_send_sge;
	dst->cap.max_recv_sge = src->max_recv_sge;
	dst->cap.max_inline_data = src->max_inline_data;
	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

void cma_path_from_user_rec(struct ibv_sa_path_rec *dst,
			    const struct ib_user_path_rec *src)
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid));
	memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = (int)src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = (int)src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = (uint8_t)src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

/* The SA wire format packs selectors into the top two bits of a byte. */
static uint8_t wire_selector(uint8_t v)
{
	return v >> 6;
}

static uint8_t wire_value(uint8_t v)
{
	return v & 0x3f;
}

void cma_path_from_wire(struct ibv_sa_path_rec *dst,
			const struct ibv_path_record *src)
{
	uint32_t fl_hop = be32toh(src->flowlabel_hoplimit);

	memset(dst, 0, sizeof(*dst));
	dst->dgid = src->dgid;
	dst->sgid = src->sgid;
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->flow_label = htobe32((fl_hop >> 8) & 0xfffff);
	dst->hop_limit = (uint8_t)(fl_hop & 0xff);
	dst->traffic_class = src->tclass;
	dst->reversible = !!(src->reversible_numpath & 0x80);
	dst->numb_path = src->reversible_numpath & 0x7f;
	dst->pkey = src->pkey;
	dst->sl = (uint8_t)(be16toh(src->qosclass_sl) & 0xf);
	dst->mtu_selector = wire_selector(src->mtu);
	dst->mtu = wire_value(src->mtu);
	dst->rate_selector = wire_selector(src->rate);
	dst->rate = wire_value(src->rate);
	dst->packet_life_time_selector = wire_selector(src->packetlifetime);
	dst->packet_life_time = wire_value(src->packetlifetime);
	dst->preference = src->preference;
}

void cma_conn_param_to_kern(struct rdma_ucm_conn_param *dst,
			    const struct rdma_conn_param *src, uint32_t qp_num,
			    uint8_t srq, uint8_t responder_resources,
			    uint8_t initiator_depth)
{
	memset(dst, 0, sizeof(*dst));
	dst->qp_num = qp_num;
	dst->srq = srq;
	dst->responder_resources = responder_resources;
	dst->initiator_depth = initiator_depth;
	dst->valid = 1;
	if (!src) {
		/*
		 * No parameters given: rdma-core's defaults, maximum retry
		 * counts and no flow control (its peers see flow_control 0;
		 * tests/system/fields-in-guest.sh compares).
		 */
		dst->retry_count = 7;
		dst->rnr_retry_count = 7;
		return;
	}
	dst->flow_control = src->flow_control;
	dst->retry_count = src->retry_count;
	dst->rnr_retry_count = src->rnr_retry_count;
	if (src->private_data && src->private_data_len) {
		memcpy(dst->private_data, src->private_data,
		       src->private_data_len);
		dst->private_data_len = src->private_data_len;
	}
}
