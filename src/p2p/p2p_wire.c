// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The peer-to-peer header codec (layout in p2p_wire.h).  Every byte of it
 * comes from the network, so the parser checks each field against the
 * only values this version defines and reports anything else as
 * CMA_P2P_BAD; it never reads past @len.
 */
/* No <config.h>: the fuzz target builds this file on its own. */
#include <stdbool.h>
#include <string.h>

#include "util/be_bytes.h"
#include "p2p_wire.h"

static const uint8_t cma_p2p_magic[3] = {0xC5, 0x70, 0x32};

size_t cma_p2p_hdr_encode(const struct cma_p2p_hdr *hdr,
			  uint8_t out[CMA_P2P_HDR_LEN])
{
	bool v1 = hdr->len == CMA_P2P_HDR_LEN_V1;

	memcpy(out, cma_p2p_magic, sizeof(cma_p2p_magic));
	out[3] =
		(uint8_t)((v1 ? 1 : CMA_P2P_VERSION) << 4 | (hdr->kind & 0x0F));
	out[4] = hdr->flags;
	out[5] = hdr->data_len;
	cma_put_be16(out + 6, hdr->port);
	cma_put_be64(out + 8, hdr->kind == CMA_P2P_REJ_CHALLENGE
				      ? hdr->challenge
				      : hdr->tag);
	if (v1)
		return CMA_P2P_HDR_LEN_V1;
	cma_put_be64(out + 16, hdr->flags & CMA_P2P_F_ANSWER
				       ? hdr->challenge
				       : hdr->incarnation);
	return CMA_P2P_HDR_LEN;
}

static bool cma_p2p_kind_valid(uint8_t kind)
{
	return kind >= CMA_P2P_REQ && kind <= CMA_P2P_REJ_CHALLENGE;
}

/*
 * The fields whose meaning depends on the kind: a challenge travels in
 * the tag's place in a REJ_CHALLENGE and in the incarnation's in a REQ
 * answering one; only a REQ answers, only version 2 has the room, and a
 * challenge is never 0.
 */
static bool cma_p2p_challenge_fields(struct cma_p2p_hdr *h)
{
	h->challenge = 0;
	if (h->kind == CMA_P2P_REJ_CHALLENGE) {
		h->challenge = h->tag;
		h->tag = 0;
	}
	if (h->flags & CMA_P2P_F_ANSWER) {
		if (h->kind != CMA_P2P_REQ || h->len != CMA_P2P_HDR_LEN)
			return false;
		h->challenge = h->incarnation;
		h->incarnation = 0;
	}
	return h->challenge || (h->kind != CMA_P2P_REJ_CHALLENGE &&
				!(h->flags & CMA_P2P_F_ANSWER));
}

enum cma_p2p_parse cma_p2p_hdr_parse(const void *buf, size_t len,
				     struct cma_p2p_hdr *hdr)
{
	const uint8_t *p = buf;
	struct cma_p2p_hdr h;

	if (!p || len < sizeof(cma_p2p_magic) ||
	    memcmp(p, cma_p2p_magic, sizeof(cma_p2p_magic)))
		return CMA_P2P_NONE;
	if (len < CMA_P2P_HDR_LEN_V1)
		return CMA_P2P_BAD;
	switch (p[3] >> 4) {
	case 1:
		h.len = CMA_P2P_HDR_LEN_V1;
		h.incarnation = 0;
		break;
	case CMA_P2P_VERSION:
		if (len < CMA_P2P_HDR_LEN)
			return CMA_P2P_BAD;
		h.len = CMA_P2P_HDR_LEN;
		h.incarnation = cma_get_be64(p + 16);
		break;
	default:
		return CMA_P2P_BAD;
	}
	h.kind = p[3] & 0x0F;
	h.flags = p[4];
	h.data_len = p[5];
	h.port = cma_get_be16(p + 6);
	h.tag = cma_get_be64(p + 8);
	if (!cma_p2p_kind_valid(h.kind) || (h.flags & ~CMA_P2P_F_KNOWN))
		return CMA_P2P_BAD;
	if (h.data_len > len - h.len)
		return CMA_P2P_BAD;
	if (h.kind == CMA_P2P_REQ && !h.port)
		return CMA_P2P_BAD;
	if (!cma_p2p_challenge_fields(&h))
		return CMA_P2P_BAD;
	*hdr = h;
	return CMA_P2P_OK;
}
