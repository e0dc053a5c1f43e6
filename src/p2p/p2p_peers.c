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
static struct cma_list strangers;

static uint64_t cma_p2p_peer_hash(const struct cma_p2p_ident *p)
{
	return cma_p2p_ident_hash(CMA_P2P_HASH_SEED, p);
}

void cma_p2p_peers_forked(void)
{
	cma_htable_repair(&peer_table);
	cma_list_repair(&strangers);
}

/* Forget the stranger heard from least recently. */
static void cma_p2p_forget_oldest_stranger(void)
{
	struct cma_p2p_peer *c =
		cma_list_first(&strangers, struct cma_p2p_peer, snode);

	cma_list_unlink(&strangers, &c->snode);
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
			cma_list_unlink(&strangers, &c->snode);
			if (keep)
				c->kept = true;
			else
				cma_list_append(&strangers, &c->snode);
		}
		return c;
	}
	if (!keep && strangers.len >= CMA_P2P_MAX_STRANGERS)
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
		cma_list_append(&strangers, &c->snode);
	return c;
}

unsigned int cma_p2p_peers_known(void)
{
	return (unsigned int)peer_table.count;
}
