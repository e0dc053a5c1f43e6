// FUZZ_SOURCES: src/rsocket/wire.c
// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Fuzz the parsers of everything an rsocket peer sends: connection private
 * data, datagram headers (QP and UDP), and immediate-data messages.  The
 * first byte picks the parser; the rest is the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "rsocket/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rs_conn_params p;
	union rs_sockaddr sa;
	uint32_t qpn, msg;
	uint8_t op;

	if (!size)
		return 0;
	switch (data[0] % 4) {
	case 0:
		if (!rs_conn_decode(data + 1, size - 1, &p))
			(void)rs_iomap_size_to_wire(p.iomap_size);
		break;
	case 1:
		(void)ds_hdr_decode(data + 1, size - 1, &sa);
		break;
	case 2:
		(void)ds_udp_hdr_decode(data + 1, size - 1,
					size > 1 && data[1] & 1 ? AF_INET6
								: AF_INET,
					&op, &qpn);
		break;
	default:
		if (size >= 5) {
			memcpy(&msg, data + 1, sizeof(msg));
			(void)rs_msg_op(msg);
			(void)rs_msg_data(msg);
			(void)rs_iomap_size_from_wire((uint8_t)msg);
		}
		break;
	}
	return 0;
}
