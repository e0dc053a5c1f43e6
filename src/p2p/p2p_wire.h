/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The peer-to-peer header: 24 bytes at the front of the private data of a
 * peer-to-peer REQ, of the REP that answers one, of the REJ the library
 * sends when it refuses one, and of the SIDR messages by which a
 * connecting end tells a listening end that its earlier REQs from a QP
 * are dead (p2p_notice.c).  Encoding and parsing only; no state.
 *
 *   byte  0..2   magic 0xC5 0x70 0x32
 *   byte  3      version (high nibble, 3) | kind (low nibble)
 *   byte  4      flags (CMA_P2P_F_*; unknown bits are refused)
 *   byte  5      length of the application's private data that follows
 *   byte  6..7   the sender's listening port, big-endian (REQ: not 0)
 *   byte  8..15  REQ, REP, REJ: the connection tag, big-endian;
 *                NOTICE, ANSWER: the QP number the dead REQs came from
 *                (24 bits)
 *   byte 16..20  an incarnation, big-endian, 40 bits: the sender
 *                process's (random, drawn once per process; 0: not
 *                stated); NOTICE, ANSWER: that of the dead REQs
 *   byte 21..23  REQ: its number (the sending process counts its REQs
 *                from 1, wrapping to 1; 0: no NOTICE names it);
 *                NOTICE, ANSWER: the highest number that is dead;
 *                otherwise 0
 *   byte 24..29  REP with CMA_P2P_F_PSNS only: the sender QP's receive
 *                PSN, then its send PSN, 24 bits each, big-endian; the
 *                header is then 30 bytes long
 *
 * Version 1 (the first 16 bytes, no incarnation, no number) is still
 * understood; version 2 (a 64-bit incarnation, and challenges) is not.
 *
 * Earlier builds put a 4-byte extension after a REQ's data (0xC5 0x70
 * 0x58 and a flags byte) to say their listener holds requests; nothing
 * reads it now, and the parser never looks past the data.
 *
 * Without CMA_P2P_F_EXPLICIT_TAG the tag is 0: such a REQ pairs with any
 * waiting connect of its pair, the oldest first.
 */
#ifndef CMA_P2P_WIRE_H
#define CMA_P2P_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define CMA_P2P_HDR_LEN 24 /* what this version sends */
#define CMA_P2P_PSNS_LEN 6 /* a REP's PSNs after it (CMA_P2P_F_PSNS) */
#define CMA_P2P_HDR_MAX (CMA_P2P_HDR_LEN + CMA_P2P_PSNS_LEN)
#define CMA_P2P_HDR_LEN_V1 16
#define CMA_P2P_VERSION 3
#define CMA_P2P_INCARNATION_MASK 0xFFFFFFFFFFull /* 40 bits */
#define CMA_P2P_NUMBER_MASK 0xFFFFFFu /* 24 bits */
#define CMA_P2P_QPN_MASK 0xFFFFFFu
#define CMA_P2P_PSN_MASK 0xFFFFFFu

enum cma_p2p_kind {
	CMA_P2P_REQ = 1, /* a peer-to-peer connect */
	CMA_P2P_REP = 2, /* the answer of a peer-to-peer connect or accept */
	/*
	 * Refused for now: the sender may send it again (it comes from the
	 * higher end, which never sends, or could not be held or adopted).
	 */
	CMA_P2P_REJ_RETRY = 3,
	CMA_P2P_REJ_DUP = 4, /* the pair and tag are already connected */
	CMA_P2P_REJ_BAD = 5, /* a malformed peer-to-peer header */
	/* 6: version 2's challenge, retired */
	/* Its sender said it is no longer its QP's current REQ: a late copy. */
	CMA_P2P_REJ_STALE = 7,
	/* 8: the question whether a REQ was current, retired */
	/* SIDR REP (a SIDR reject carrying it): a NOTICE was acted on. */
	CMA_P2P_ANSWER = 9,
	/*
	 * SIDR REQ: every REQ from this QP of this incarnation numbered up
	 * to this number is dead (its sender's CM gave it up).
	 */
	CMA_P2P_NOTICE = 10,
};

enum {
	CMA_P2P_F_EXPLICIT_TAG = 0x01, /* tag set by RDMA_OPTION_ID_P2P_TAG */
	/* 0x04: the ANSWER's "that REQ is current", retired */
	/*
	 * REP: the answering QP was already at RTS for an earlier REQ from
	 * the same QP (p2p_connect.c, a dead REQ passed over), so its PSNs
	 * are those of that REQ's answer, not the ones this REP's CM fields
	 * carry; the REQ's sender takes these.
	 */
	CMA_P2P_F_PSNS = 0x08,
	CMA_P2P_F_KNOWN = CMA_P2P_F_EXPLICIT_TAG | CMA_P2P_F_PSNS,
};

struct cma_p2p_hdr {
	uint8_t kind; /* enum cma_p2p_kind */
	uint8_t flags;
	uint8_t data_len;
	/*
	 * Bytes the header takes: CMA_P2P_HDR_LEN, or CMA_P2P_HDR_MAX with
	 * CMA_P2P_F_PSNS (0 encodes as the length its flags give).
	 */
	uint8_t len;
	uint16_t port; /* host order */
	uint64_t tag; /* REQ, REP, REJ */
	uint32_t qpn; /* NOTICE, ANSWER */
	uint64_t incarnation; /* 40 bits */
	uint32_t number; /* REQ, NOTICE, ANSWER; 24 bits */
	uint32_t rq_psn, sq_psn; /* REP with CMA_P2P_F_PSNS; 24 bits */
};

enum cma_p2p_parse {
	CMA_P2P_NONE, /* no magic: not a peer-to-peer message */
	CMA_P2P_OK,
	CMA_P2P_BAD, /* claims to be one but is malformed */
};

/*
 * Write @hdr (version 3; version 1 when hdr->len says so, for a header
 * parsed from one) to @out; returns the bytes written.
 */
size_t cma_p2p_hdr_encode(const struct cma_p2p_hdr *hdr,
			  uint8_t out[CMA_P2P_HDR_MAX]);
/* Parse @len bytes at @buf; fills @hdr only when the result is CMA_P2P_OK. */
enum cma_p2p_parse cma_p2p_hdr_parse(const void *buf, size_t len,
				     struct cma_p2p_hdr *hdr);

#endif /* CMA_P2P_WIRE_H */
