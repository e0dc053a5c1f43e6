/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * rcopy's messages, shared with rdma-core's rcopy.  Every request and
 * answer starts with a 16-byte header:
 *
 *   byte 0      version (0)
 *   byte 1      command (RC_CMD_*; an answer has RC_CMD_RESP added)
 *   bytes 2-3   length of the whole message, header included
 *   bytes 4-7   data: the file mode (OPEN) or a status, 0 or an errno value
 *   bytes 8-15  an id the answer echoes
 *
 * OPEN is followed by the destination path, NUL-padded to a multiple of
 * eight bytes; WRITE by the 8-byte file size, then that many bytes of
 * data outside the message.  Multi-byte fields are in the host's byte
 * order, as rdma-core's rcopy sends them (little-endian on x86).
 */
#ifndef EXAMPLES_RCOPY_PROTO_H
#define EXAMPLES_RCOPY_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define RC_HDR_LEN 16
#define RC_WRITE_LEN (RC_HDR_LEN + 8)
/* The longest destination path field a server accepts. */
#define RC_MAX_PATH 4096

enum {
	RC_CMD_NOOP = 0,
	RC_CMD_OPEN = 1,
	RC_CMD_CLOSE = 2,
	RC_CMD_WRITE = 3,
	RC_CMD_RESP = 0x80,
};

struct rc_hdr {
	uint8_t version;
	uint8_t command;
	uint16_t len;
	uint32_t data;
	uint64_t id;
};

void rc_hdr_encode(const struct rc_hdr *h, uint8_t wire[RC_HDR_LEN]);
/*
 * Decodes the first RC_HDR_LEN bytes of buf (len bytes long).  -1 when
 * there are fewer, the version is not 0 or the length field is shorter
 * than a header; *h is filled as far as it could be read.
 */
int rc_hdr_decode(const uint8_t *buf, size_t len, struct rc_hdr *h);
void rc_u64_encode(uint64_t v, uint8_t wire[8]);
uint64_t rc_u64_decode(const uint8_t wire[8]);
/*
 * The size of the path field for a path of len characters: room for the
 * NUL, rounded up to eight.  0 when it would exceed RC_MAX_PATH.
 */
size_t rc_path_field_len(size_t len);
/*
 * Checks an OPEN message's path field of len bytes as received: 0 when
 * len is in 1..RC_MAX_PATH and a NUL ends the path inside it, else -1.
 */
int rc_path_check(const char *field, size_t len);

#endif /* EXAMPLES_RCOPY_PROTO_H */
