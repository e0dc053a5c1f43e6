// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Peer-to-peer mode's options, RDMA_OPTION_ID_PEER2PEER and
 * RDMA_OPTION_ID_P2P_TAG (rdma_cm_p2p(7)): they live in the library and
 * never reach the kernel.  options.c finds them in conn.c's option table,
 * whose entries call these three hooks; reading one that was never set
 * gives ENODATA.
 */
#include <config.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "cm/cma.h"
#include "p2p_hooks.h"
#include "p2p_table.h"

/* RDMA_OPTION_ID_PEER2PEER takes 0 or 1; the sizes the table checks. */
int cma_p2p_opt_check(int level, int optname, const void *optval, size_t optlen)
{
	int v;

	(void)level;
	(void)optlen;
	if (optname != RDMA_OPTION_ID_PEER2PEER)
		return 0;
	memcpy(&v, optval, sizeof(v));
	return v == 0 || v == 1 ? 0 : cma_err(EINVAL);
}

int cma_p2p_opt_set(struct cma_id_private *id_priv, int level, int optname,
		    const void *optval, size_t optlen)
{
	struct cma_p2p_id *p;
	int v;

	if (cma_p2p_opt_check(level, optname, optval, optlen))
		return -1;
	p = cma_p2p_id_make(id_priv);
	if (!p)
		return -1;
	if (optname == RDMA_OPTION_ID_P2P_TAG) {
		memcpy(&p->tag, optval, optlen);
		p->tag_set = true;
		return 0;
	}
	memcpy(&v, optval, sizeof(v));
	p->listen_opt = (int8_t)v;
	/* Peer-to-peer listening asked for: p2p activity (channel.c). */
	if (v) {
		cma_channel_serve_all();
		cma_p2p_listen_may_hold(id_priv);
	}
	return 0;
}

int cma_p2p_opt_get(struct cma_id_private *id_priv, int level, int optname,
		    void *optval, size_t optlen)
{
	struct cma_p2p_id *p = cma_p2p_id_of(id_priv);
	int mode;

	(void)level;
	(void)optlen;
	if (optname == RDMA_OPTION_ID_PEER2PEER) {
		mode = cma_p2p_listen_opt(id_priv);
		if (mode < 0)
			return cma_err(ENODATA);
		memcpy(optval, &mode, sizeof(mode));
		return 0;
	}
	if (!p || !p->tag_set)
		return cma_err(ENODATA);
	memcpy(optval, &p->tag, sizeof(p->tag));
	return 0;
}
