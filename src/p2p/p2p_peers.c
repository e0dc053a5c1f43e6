// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer-to-peer mode: what this process knows about each peer, by its
 * address and listening port (struct cma_p2p_peer: the incarnation its
 * messages stated).  Found
 * through a hash.  A peer this process never connected to is known only
 * from what it sent (a "stranger": the header's port and incarnation are
 * its word, so any sender can claim as many as it likes); at most
 * CMA_P2P_MAX_STRANGERS of those are kept, the one heard from least
 * recently forgotten first.  Forgetting one loses only the chance to see
 * that its process restarted before we ever connected to it.
 * Everything here runs under p2p_lock.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>

#include "p2p_table.h"
#include "cm/test_hooks.h"

static struct cma_htable peer_table;
/* Strangers, the least recently heard from first. */
static struct cma_p2p_peer *strangers_head, *strangers_tail;
static unsigned int nstrangers;

static uint64_t cma_p2p_peer_hash(const struct cma_p2p_ident *p)
{
	return cma_p2p_ident_hash(CMA_P2P_HASH_SEED, p);
}

static void cma_p2p_stranger_unlink(struct cma_p2p_peer *c)
{
	if (c->sprev)
		c->sprev->snext = c->snext;
	else
		strangers_head = c->snext;
	if (c->snext)
		c->snext->sprev = c->sprev;
	else
		strangers_tail = c->sprev;
	c->snext = c->sprev = NULL;
	nstrangers--;
}

static void cma_p2p_stranger_append(struct cma_p2p_peer *c)
{
	c->sprev = strangers_tail;
	c->snext = NULL;
	if (strangers_tail)
		strangers_tail->snext = c;
	else
		strangers_head = c;
	strangers_tail = c;
	nstrangers++;
}

/* Forget the stranger heard from least recently. */
static void cma_p2p_forget_oldest_stranger(void)
{
	struct cma_p2p_peer *c = strangers_head;

	cma_p2p_stranger_unlink(c);
	cma_htable_del(&peer_table, &c->hnode);
	free(c);
}

struct cma_p2p_peer *cma_p2p_peer_of(const struct cma_p2p_ident *remote)
{
	struct cma_p2p_peer *c;
	struct cma_hnode *n;

	cma_htable_for_hash (n, &peer_table, cma_p2p_peer_hash(remote)) {
		c = cma_htable_entry(n, struct cma_p2p_peer, hnode);
		if (!cma_p2p_ident_cmp(&c->remote, remote))
			return c;
	}
	return NULL;
}

struct cma_p2p_peer *cma_p2p_peer_get(const struct cma_p2p_ident *remote,
				      bool keep)
{
	struct cma_p2p_peer *c = cma_p2p_peer_of(remote);

	if (c) {
		if (!c->kept) { /* heard from again: forgotten last */
			cma_p2p_stranger_unlink(c);
			if (keep)
				c->kept = true;
			else
				cma_p2p_stranger_append(c);
		}
		return c;
	}
	if (!keep && nstrangers >= CMA_P2P_MAX_STRANGERS)
		cma_p2p_forget_oldest_stranger();
	c = cma_zalloc(sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->remote = *remote;
	c->kept = keep;
	cma_htable_add(&peer_table, &c->hnode, cma_p2p_peer_hash(remote));
	if (!keep)
		cma_p2p_stranger_append(c);
	return c;
}

unsigned int cma_p2p_peers_known(void)
{
	return (unsigned int)peer_table.count;
}
