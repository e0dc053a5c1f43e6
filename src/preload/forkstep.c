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

/*
 * An inherited connection never moves (inherit.c): an offer there is
 * answered with one that declines, unless this end's bytes went first,
 * which the peer took for those of a peer without the preload.
 */
enum rsp_fk_inherited rsp_fk_inherited(enum rsp_fk_act act, bool sent)
{
	switch (act) {
	case RSP_FK_WAIT:
		return RSP_FK_INH_WAIT;
	case RSP_FK_ANSWER:
		return sent ? RSP_FK_INH_DROP : RSP_FK_INH_DECLINE;
	default:
		return RSP_FK_INH_TCP;
	}
}

struct rsp_fk_msg rsp_fk_decline(const struct rsp_fk_msg *peer)
{
	return (struct rsp_fk_msg){.role = peer->role == RSP_FK_ACTIVE
						   ? RSP_FK_PASSIVE
						   : RSP_FK_ACTIVE};
}

/*
 * On a non-blocking socket the handshake goes on over several calls; its
 * progress is the descriptor's state.  An end that speaks first is
 * OFFERED until the peer's offer comes; with both offers agreed the
 * passive end is ACCEPTING (its listener waits for the peer's rconnect)
 * and the active end CONNECTING (its rconnect is under way).
 */
bool rsp_fk_pending(enum rsp_lazy state)
{
	return rsp_fk_holds(state) || state == RSP_LAZY_REST_A ||
	       state == RSP_LAZY_REST_P;
}

/*
 * A fresh end (ACTIVE, PASSIVE, or REST_* while the rest of the peer's
 * offer is due) has sent nothing and holds no rsocket yet.
 */
bool rsp_fk_holds(enum rsp_lazy state)
{
	return state == RSP_LAZY_OFFERED_A || state == RSP_LAZY_OFFERED_P ||
	       state == RSP_LAZY_ACCEPTING || state == RSP_LAZY_CONNECTING;
}

enum rsp_lazy rsp_fk_offered(bool passive)
{
	return passive ? RSP_LAZY_OFFERED_P : RSP_LAZY_OFFERED_A;
}

enum rsp_lazy rsp_fk_resting(bool passive)
{
	return passive ? RSP_LAZY_REST_P : RSP_LAZY_REST_A;
}

enum rsp_lazy rsp_fk_after(const struct rsp_fk_msg *mine,
			   const struct rsp_fk_msg *peer)
{
	if (!rsp_fk_agree(mine, peer))
		return RSP_LAZY_NONE;
	return mine->role == RSP_FK_PASSIVE ? RSP_LAZY_ACCEPTING
					    : RSP_LAZY_CONNECTING;
}

/*
 * What each state waits for.  OFFERED: the peer's offer, so the TCP
 * socket's readability (its writability would wake a program that wants
 * to write at once, for nothing, again and again).  With the start of an
 * offer there (REST_*, or OFFERED @resting) the socket is readable
 * already: fork.c makes it readable only once a whole offer is there (or
 * the peer's end), and a timer ends the wait for bytes that never come.
 * ACCEPTING: the listener's connection, or a notice (or the end) on TCP
 * from a peer whose rconnect failed: both, or a failure would never wake
 * it.  CONNECTING: the rsocket's writability, which rpoll reports once the
 * connect ends either way.  A program that asks for neither input nor
 * output would get no report of them, so nothing is watched for it:
 * watching would only wake its poll to report nothing.
 */
struct rsp_fk_watch rsp_fk_watch(enum rsp_lazy state, short events,
				 bool resting)
{
	struct rsp_fk_watch w = {0, 0, 0};

	if (!(events & (POLLIN | POLLOUT)))
		return w;
	switch (state) {
	case RSP_LAZY_OFFERED_A:
	case RSP_LAZY_OFFERED_P:
	case RSP_LAZY_REST_A:
	case RSP_LAZY_REST_P:
		w.tcp = POLLIN;
		if (resting)
			w.timer = POLLIN;
		break;
	case RSP_LAZY_ACCEPTING:
		w.tcp = POLLIN;
		w.rs = POLLIN;
		break;
	case RSP_LAZY_CONNECTING:
		w.rs = POLLOUT;
		break;
	default:
		break;
	}
	return w;
}

enum rsp_fk_end rsp_fk_accepting(bool accepted, ssize_t tcp_n)
{
	if (accepted)
		return RSP_FK_DONE;
	/* the peer's notice that its rconnect failed, or its close */
	return tcp_n >= 0 ? RSP_FK_FAILED : RSP_FK_PENDING;
}

enum rsp_fk_end rsp_fk_connecting(short revents)
{
	if (revents & (POLLERR | POLLHUP | POLLNVAL))
		return RSP_FK_FAILED;
	return revents & POLLOUT ? RSP_FK_DONE : RSP_FK_PENDING;
}
