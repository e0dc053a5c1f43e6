// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rcopy's header codec: the only code that reads rcopy bytes from the
 * network.  See rcopy_proto.h.
 */
#include <string.h>

#include "rcopy_proto.h"

void rc_hdr_encode(const struct rc_hdr *h, uint8_t wire[RC_HDR_LEN])
{
	wire[0] = h->version;
	wire[1] = h->command;
	memcpy(wire + 2, &h->len, 2);
	memcpy(wire + 4, &h->data, 4);
	memcpy(wire + 8, &h->id, 8);
}

int rc_hdr_decode(const uint8_t *buf, size_t len, struct rc_hdr *h)
{
	memset(h, 0, sizeof(*h));
	if (!buf || len < RC_HDR_LEN)
		return -1;
	h->version = buf[0];
	h->command = buf[1];
	memcpy(&h->len, buf + 2, 2);
	memcpy(&h->data, buf + 4, 4);
	memcpy(&h->id, buf + 8, 8);
	return h->version != 0 || h->len < RC_HDR_LEN ? -1 : 0;
}

void rc_u64_encode(uint64_t v, uint8_t wire[8])
{
	memcpy(wire, &v, 8);
}

uint64_t rc_u64_decode(const uint8_t wire[8])
{
	uint64_t v;

	memcpy(&v, wire, 8);
	return v;
}

size_t rc_path_field_len(size_t len)
{
	size_t field;

	if (len >= RC_MAX_PATH)
		return 0;
	field = (len + 8) & ~(size_t)7;
	return field > RC_MAX_PATH ? 0 : field;
}

int rc_path_check(const char *field, size_t len)
{
	if (!field || len == 0 || len > RC_MAX_PATH)
		return -1;
	return memchr(field, 0, len) ? 0 : -1;
}
