// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The peer-to-peer header codec (layout in p2p_wire.h).  Every byte of it
 * comes from the network, so the parser checks each field against the
 * only values this version defines and reports anything else as
 * CMA_P2P_BAD; it never reads past @len.  Whatever it accepts encodes
 * back to the same bytes.
 */
/* No <config.h>: the fuzz target builds this file on its own. */
#include <stdbool.h>
#include <string.h>

#include "util/be_bytes.h"
#include "p2p_wire.h"

static const uint8_t cma_p2p_magic[3] = {0xC5, 0x70, 0x32};

/* The kinds that name REQs by QP, incarnation and number, not by tag. */
static bool cma_p2p_names_reqs(uint8_t kind)
{
	return kind == CMA_P2P_NOTICE || kind == CMA_P2P_ANSWER;
}

size_t cma_p2p_hdr_encode(const struct cma_p2p_hdr *hdr,
			  uint8_t out[CMA_P2P_HDR_MAX])
{
	bool v1 = hdr->len == CMA_P2P_HDR_LEN_V1;

	memcpy(out, cma_p2p_magic, sizeof(cma_p2p_magic));
	out[3] =
		(uint8_t)((v1 ? 1 : CMA_P2P_VERSION) << 4 | (hdr->kind & 0x0F));
	out[4] = hdr->flags;
	out[5] = hdr->data_len;
	cma_put_be16(out + 6, hdr->port);
	cma_put_be64(out + 8, cma_p2p_names_reqs(hdr->kind)
				      ? hdr->qpn & CMA_P2P_QPN_MASK
				      : hdr->tag);
	if (v1)
		return CMA_P2P_HDR_LEN_V1;
	cma_put_be64(out + 16, (hdr->incarnation & CMA_P2P_INCARNATION_MASK)
					       << 24 |
				       (hdr->number & CMA_P2P_NUMBER_MASK));
	if (!(hdr->flags & CMA_P2P_F_PSNS))
		return CMA_P2P_HDR_LEN;
	cma_put_be24(out + 24, hdr->rq_psn & CMA_P2P_PSN_MASK);
	cma_put_be24(out + 27, hdr->sq_psn & CMA_P2P_PSN_MASK);
	return CMA_P2P_HDR_MAX;
}

static bool cma_p2p_kind_valid(uint8_t kind)
{
	return (kind >= CMA_P2P_REQ && kind <= CMA_P2P_REJ_BAD) ||
	       kind == CMA_P2P_REJ_STALE || kind == CMA_P2P_ANSWER ||
	       kind == CMA_P2P_NOTICE;
}

/*
 * What each kind must say: a REQ its listening port (its number may be 0:
 * a REQ no NOTICE can name); a NOTICE or ANSWER names REQs completely
 * and carries nothing else; only those and a REQ carry a number.
 */
static bool cma_p2p_fields_valid(const struct cma_p2p_hdr *h, uint64_t word)
{
	bool v3 = h->len >= CMA_P2P_HDR_LEN;

	if (h->flags & ~CMA_P2P_F_KNOWN)
		return false;
	if ((h->flags & CMA_P2P_F_PSNS) &&
	    (h->kind != CMA_P2P_REP || h->len != CMA_P2P_HDR_MAX))
		return false;
	if (cma_p2p_names_reqs(h->kind))
		return v3 && !(h->flags & CMA_P2P_F_EXPLICIT_TAG) &&
		       !h->data_len && word <= CMA_P2P_QPN_MASK &&
		       h->incarnation && h->number;
	if (h->kind == CMA_P2P_REQ)
		return h->port;
	return !h->number;
}

enum cma_p2p_parse cma_p2p_hdr_parse(const void *buf, size_t len,
				     struct cma_p2p_hdr *hdr)
{
	const uint8_t *p = buf;
	struct cma_p2p_hdr h = {0};
	uint64_t word, tail;

	if (!p || len < sizeof(cma_p2p_magic) ||
	    memcmp(p, cma_p2p_magic, sizeof(cma_p2p_magic)))
		return CMA_P2P_NONE;
	if (len < CMA_P2P_HDR_LEN_V1)
		return CMA_P2P_BAD;
	switch (p[3] >> 4) {
	case 1:
		h.len = CMA_P2P_HDR_LEN_V1;
		break;
	case CMA_P2P_VERSION:
		if (len < CMA_P2P_HDR_LEN)
			return CMA_P2P_BAD;
		h.len = CMA_P2P_HDR_LEN;
		tail = cma_get_be64(p + 16);
		h.incarnation = tail >> 24;
		h.number = (uint32_t)(tail & CMA_P2P_NUMBER_MASK);
		if (!(p[4] & CMA_P2P_F_PSNS))
			break;
		if (len < CMA_P2P_HDR_MAX)
			return CMA_P2P_BAD;
		h.len = CMA_P2P_HDR_MAX;
		h.rq_psn = cma_get_be24(p + 24);
		h.sq_psn = cma_get_be24(p + 27);
		break;
	default:
		return CMA_P2P_BAD;
	}
	h.kind = p[3] & 0x0F;
	h.flags = p[4];
	h.data_len = p[5];
	h.port = cma_get_be16(p + 6);
	word = cma_get_be64(p + 8);
	if (!cma_p2p_kind_valid(h.kind) || h.data_len > len - h.len ||
	    !cma_p2p_fields_valid(&h, word))
		return CMA_P2P_BAD;
	if (cma_p2p_names_reqs(h.kind))
		h.qpn = (uint32_t)word;
	else
		h.tag = word;
	*hdr = h;
	return CMA_P2P_OK;
}
