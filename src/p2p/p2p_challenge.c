// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer-to-peer mode, the listening side: late copies (rdma_cm_p2p(7),
 * LATE COPIES).
 *
 * The IB CM sends a REQ again when no answer came within its response
 * timeout (about 4 s).  When the first copy was refused before our
 * library could see it (nobody listened yet: reason 8; the kernel's own
 * reason 28; reason 10 while the CM held something else from the same
 * QP), a later copy can still arrive here after the peer has moved on and
 * sent the same QP's next REQ.  Adopting such a copy ties our QP to a
 * request nobody waits for, and the peer's next REQ from that QP then
 * meets it in our CM (reason 10) for as long as the CM answers it.  A copy
 * is bit for bit the REQ it copies, so nothing in it tells it is late.
 *
 * What does tell: something the peer sent after learning a value we gave
 * it.  A REQ from a QP is adopted or held only when it answers the
 * challenge this listener gave that QP (the peer's address and the QP
 * number, which the CM reports for every REQ), and the challenge was not
 * spent.  Any other REQ from that QP, a copy or a new one, spends it: it
 * is refused with a new challenge, which a live sender answers at once.
 * The peer's CM sends every copy of a REQ before it sends the QP's next
 * REQ, and our listener reads its requests in the order they came, so a
 * REQ that answers the current challenge reached a listener that was
 * there when it came, and nothing else from its QP sat in our CM then
 * (that would have been read first, and would have spent the challenge):
 * its first copy was not refused unseen, and no copy of an earlier REQ is
 * still to come.  No clock takes part.
 *
 * REQs without a QP number (iWARP, a TCP connect: no copies) and version
 * 1 headers (earlier builds, which cannot answer) are not challenged.
 * Challenges are kept per listener, at most RDMA_CM_P2P_MAX_HELD of them,
 * the oldest forgotten first (its QP's next REQ is challenged again).
 * Everything here runs under p2p_lock.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "p2p_table.h"

struct cma_p2p_challenge {
	struct cma_hnode hnode; /* in the table, by listener, address, QP */
	/* The listener's challenges, oldest first. */
	struct cma_list_node lnode;
	struct cma_p2p_listener *lis;
	uint8_t remote[16];
	uint32_t qpn;
	uint64_t value; /* never 0 */
};

static struct cma_htable p2p_challenge_table;

static uint64_t cma_p2p_challenge_hash(const struct cma_p2p_listener *lis,
				       const uint8_t remote[16], uint32_t qpn)
{
	struct cma_p2p_ident id = {.port = lis->port};

	memcpy(id.addr, remote, sizeof(id.addr));
	return cma_p2p_ident_hash(CMA_P2P_HASH_SEED ^ (uintptr_t)lis ^
					  ((uint64_t)qpn << 32),
				  &id);
}

static struct cma_p2p_challenge *
cma_p2p_challenge_find(const struct cma_p2p_listener *lis,
		       const uint8_t remote[16], uint32_t qpn)
{
	struct cma_p2p_challenge *c;
	struct cma_hnode *n;

	cma_htable_for_hash (n, &p2p_challenge_table,
			     cma_p2p_challenge_hash(lis, remote, qpn)) {
		c = cma_htable_entry(n, struct cma_p2p_challenge, hnode);
		if (c->lis == lis && c->qpn == qpn &&
		    !memcmp(c->remote, remote, sizeof(c->remote)))
			return c;
	}
	return NULL;
}

/* Out of its listener's list (still in the table). */
static void cma_p2p_challenge_unlink(struct cma_p2p_challenge *c)
{
	cma_list_unlink(&c->lis->challenges, &c->lnode);
}

static void cma_p2p_challenge_forget(struct cma_p2p_challenge *c)
{
	cma_p2p_challenge_unlink(c);
	cma_htable_del(&p2p_challenge_table, &c->hnode);
	free(c);
}

static struct cma_p2p_challenge *
cma_p2p_challenge_oldest(struct cma_p2p_listener *lis)
{
	return cma_list_first(&lis->challenges, struct cma_p2p_challenge,
			      lnode);
}

/*
 * Unpredictable to anyone who did not receive it (the value proves the
 * REQ came after it was sent, not who sent it: rdma_cm_p2p(7),
 * IDENTITY), and never 0.
 */
static uint64_t cma_p2p_challenge_draw(void)
{
	static uint64_t fallback;
	uint64_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
		v = cma_now_ns() ^ (++fallback * 0x9e3779b97f4a7c15ull);
		v ^= v >> 31;
	}
	return v ? v : 1;
}

/* A new challenge for the QP: the one it had, if any, is spent. */
static uint64_t cma_p2p_challenge_renew(struct cma_p2p_listener *lis,
					const uint8_t remote[16], uint32_t qpn,
					struct cma_p2p_challenge *c)
{
	if (c) {
		/* The newest last: a QP still talking is forgotten last. */
		cma_p2p_challenge_unlink(c);
	} else {
		c = calloc(1, sizeof(*c));
		if (!c)
			return 0;
		c->lis = lis;
		memcpy(c->remote, remote, sizeof(c->remote));
		c->qpn = qpn;
		while (lis->challenges.len &&
		       lis->challenges.len >= cma_p2p_max_held())
			cma_p2p_challenge_forget(cma_p2p_challenge_oldest(lis));
		cma_htable_add(&p2p_challenge_table, &c->hnode,
			       cma_p2p_challenge_hash(lis, remote, qpn));
	}
	cma_list_append(&lis->challenges, &c->lnode);
	c->value = cma_p2p_challenge_draw();
	return c->value;
}

bool cma_p2p_challenge_met(struct cma_p2p_listener *lis,
			   const uint8_t remote[16], uint32_t qpn,
			   const struct cma_p2p_hdr *hdr, uint64_t *challenge)
{
	struct cma_p2p_challenge *c;

	*challenge = 0;
	if (!qpn || hdr->len != CMA_P2P_HDR_LEN)
		return true;
	c = cma_p2p_challenge_find(lis, remote, qpn);
	if (c && (hdr->flags & CMA_P2P_F_ANSWER) &&
	    hdr->challenge == c->value) {
		cma_p2p_challenge_forget(c);
		return true;
	}
	*challenge = cma_p2p_challenge_renew(lis, remote, qpn, c);
	return false;
}

uint64_t cma_p2p_challenge_of(const struct cma_p2p_listener *lis,
			      const uint8_t remote[16], uint32_t qpn)
{
	const struct cma_p2p_challenge *c =
		cma_p2p_challenge_find(lis, remote, qpn);

	return c ? c->value : 0;
}

void cma_p2p_challenges_drop(struct cma_p2p_listener *lis)
{
	struct cma_p2p_challenge *c;

	while ((c = cma_p2p_challenge_oldest(lis)))
		cma_p2p_challenge_forget(c);
}
