// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// FUZZ_SOURCES: src/preload/exec_roles.c
/*
 * RDMA_RSOCKET_EXEC_ROLES (src/preload/exec_roles.c), the variable a new
 * program image reads at its start before trusting any of it: any bytes
 * as its value (cut at the first NUL), parsed with room for 1 to
 * RSP_EXEC_MAX_ROLES + 1 entries (the first byte says how many).
 *
 * Checked: an accepted value has at most the room's entries and
 * RSP_EXEC_MAX_ROLES, each with a descriptor of 0 to 65535 named once and
 * two addresses of one family, IPv4 or IPv6 (the bytes past an IPv4
 * address zero); written again with rsp_exec_role_format, the entries
 * give back the value byte for byte (the text has one spelling, so the
 * reader accepts only what the writer makes), each within
 * RSP_EXEC_ROLE_LEN.  The other way round, the input's bytes as entries
 * (whatever the writer accepts) are read back as they were written.
 */
#include <config.h>

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "preload/preload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_entry(const struct rsp_exec_role *r)
{
	const struct rsp_exec_addr *a[2] = {&r->local, &r->peer};
	int i, k;

	if (r->fd < 0 || r->fd > 65535 || r->local.family != r->peer.family ||
	    (r->local.family != AF_INET && r->local.family != AF_INET6))
		abort();
	for (i = 0; i < 2 && r->local.family == AF_INET; i++)
		for (k = 4; k < 16; k++)
			if (a[i]->addr[k])
				abort();
}

/* The value parsed, checked, and written again. */
static void text(const char *s, int room)
{
	struct rsp_exec_role r[RSP_EXEC_MAX_ROLES + 1];
	char *again = malloc(RSP_EXEC_ROLES_LEN + 1);
	int n = rsp_exec_roles_parse(s, r, room), i, k, used = 0;

	if (!again)
		abort();
	if (n > room || n > RSP_EXEC_MAX_ROLES || n < -1)
		abort();
	for (i = 0; i < n; i++) {
		check_entry(&r[i]);
		for (k = 0; k < i; k++)
			if (r[k].fd == r[i].fd)
				abort();
		if (i)
			again[used++] = ',';
		k = rsp_exec_role_format(again + used,
					 RSP_EXEC_ROLES_LEN + 1 - used, &r[i]);
		if (k <= 0 || k >= RSP_EXEC_ROLE_LEN)
			abort();
		used += k;
	}
	again[used] = 0;
	if (n >= 0 && strcmp(again, s))
		abort();
	free(again);
}

/* The input's bytes as one entry, written and read back. */
static void entry(const uint8_t *data, size_t size)
{
	struct rsp_exec_role r, back[2];
	char buf[RSP_EXEC_ROLE_LEN];
	int k;

	if (size < sizeof(r))
		return;
	memcpy(&r, data, sizeof(r));
	/* a bool's bytes must be 0 or 1; a relayed entry has no side */
	r.relayed = (data[0] >> 1) & 1;
	r.passive = !r.relayed && (data[0] & 1);
	k = rsp_exec_role_format(buf, sizeof(buf), &r);
	if (k < 0)
		return;
	if (rsp_exec_roles_parse(buf, back, 2) != 1)
		abort();
	check_entry(&back[0]);
	if (back[0].fd != r.fd || back[0].passive != r.passive ||
	    back[0].relayed != r.relayed ||
	    back[0].local.family != r.local.family ||
	    back[0].local.port != r.local.port ||
	    back[0].peer.port != r.peer.port ||
	    memcmp(back[0].local.addr, r.local.addr,
		   r.local.family == AF_INET ? 4 : 16) ||
	    memcmp(back[0].peer.addr, r.peer.addr,
		   r.local.family == AF_INET ? 4 : 16))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;
	int room;

	if (!size)
		return 0;
	room = data[0] % (RSP_EXEC_MAX_ROLES + 1) + 1;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = 0;
	text(s, room);
	free(s);
	entry(data, size);
	return 0;
}
