// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * RDMAV_FORK_SAFE's handshake, the decisions without the I/O (fork.c
 * does the I/O): what a lazy connection's first read or write does with
 * what its peer has sent so far, and the 8-byte offer each end sends.
 *
 * An offer: "RSFK", a port (network order; the passive end's rsocket
 * listener, 0 from the active end), the sender's role ('A' connected,
 * 'P' accepted), and 1 if it can go on over RDMA, 0 if not.  Each end
 * sends one, before any byte of its own data: the one that speaks first
 * (its first call is a write) sends it at once and waits for the peer's;
 * the other finds it as the first bytes it can read, so a server waiting
 * in poll, epoll or select for a request wakes up, and answers with its
 * own.  The first bytes of a peer without the preload are its data, not
 * an offer: the connection stays on TCP with those bytes unread.
 */
#include <string.h>

#include "preload.h"

static const uint8_t magic[4] = {'R', 'S', 'F', 'K'};

enum rsp_fk_act rsp_fk_step(bool writing, const uint8_t *peek, ssize_t n)
{
	size_t cmp;

	if (n < 0) /* nothing yet */
		return writing ? RSP_FK_OFFER : RSP_FK_WAIT;
	if (n == 0) /* the peer closed before a word: nothing to convert */
		return RSP_FK_TCP;
	cmp = (size_t)n < sizeof(magic) ? (size_t)n : sizeof(magic);
	if (memcmp(peek, magic, cmp))
		return RSP_FK_TCP;
	return n < RSP_FK_LEN ? RSP_FK_MORE : RSP_FK_ANSWER;
}

void rsp_fk_encode(uint8_t out[RSP_FK_LEN], const struct rsp_fk_msg *m)
{
	memcpy(out, magic, sizeof(magic));
	memcpy(out + 4, &m->port, 2);
	out[6] = m->role;
	out[7] = m->ready ? 1 : 0;
}

int rsp_fk_decode(const uint8_t in[RSP_FK_LEN], struct rsp_fk_msg *m)
{
	if (memcmp(in, magic, sizeof(magic)) ||
	    (in[6] != RSP_FK_ACTIVE && in[6] != RSP_FK_PASSIVE) || in[7] > 1)
		return -1;
	memcpy(&m->port, in + 4, 2);
	m->role = in[6];
	m->ready = in[7];
	return 0;
}

bool rsp_fk_agree(const struct rsp_fk_msg *mine, const struct rsp_fk_msg *peer)
{
	const struct rsp_fk_msg *passive =
		mine->role == RSP_FK_PASSIVE ? mine : peer;

	return mine->ready && peer->ready && mine->role != peer->role &&
	       passive->port != 0;
}
