// FUZZ_SOURCES: src/rsocket/wire.c
// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The two parsers of what a datagram rsocket receives from the network:
 * ds_ud_msg_parse() (a UD receive: GRH, struct ds_wire_hdr, payload) and
 * ds_udp_msg_parse() (a UDP resolver message: struct ds_wire_udp_hdr and,
 * for data, a payload).
 *
 * Input: byte 0 picks the parser (bit 0) and, for UDP, the family the
 * message came from (bit 1: AF_INET6); the rest is the message.  Whatever
 * the bytes, a parser must stay inside them, and what it accepts must
 * describe a payload inside the message, a sender address of a family it
 * knows, and for UDP an op and QP number a peer can send.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "rsocket/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A receive buffer the size of a real one, with only @len bytes written. */
#define FUZZ_UD_BUF (DS_WIRE_GRH_LEN + DS_MSG_SIZE)

static void fuzz_ud(const uint8_t *msg, size_t len)
{
	struct ds_ud_msg m;
	uint8_t *buf = malloc(len ? len : 1);

	if (!buf)
		return;
	memcpy(buf, msg, len);
	if (!ds_ud_msg_parse(buf, len, len < FUZZ_UD_BUF ? len : FUZZ_UD_BUF,
			     &m)) {
		if ((size_t)m.offset + m.length != len || len > FUZZ_UD_BUF)
			abort();
		if (m.src.sa.sa_family != AF_INET &&
		    m.src.sa.sa_family != AF_INET6)
			abort();
	}
	free(buf);
}

static void fuzz_udp(const uint8_t *msg, size_t len, int family)
{
	struct ds_udp_msg m;
	uint8_t *buf = malloc(len ? len : 1);

	if (!buf)
		return;
	memcpy(buf, msg, len);
	if (!ds_udp_msg_parse(buf, len, family, &m)) {
		if ((size_t)m.offset + m.length > len || m.length > DS_MSG_SIZE)
			abort();
		if (m.op != RS_OP_DATA && m.op != RS_OP_CTRL)
			abort();
		if (m.qpn < 2 || m.qpn > 0xffffff)
			abort();
		if (m.op == RS_OP_CTRL && m.length)
			abort();
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	if (data[0] & 1)
		fuzz_udp(data + 1, size - 1, data[0] & 2 ? AF_INET6 : AF_INET);
	else
		fuzz_ud(data + 1, size - 1);
	return 0;
}
