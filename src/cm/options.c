// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rdma_set_option / rdma_get_option: one table entry per (level, name).
 *
 * Each module that owns options exports a struct cma_option_table; the
 * list below names them, so adding an option is an entry in its module's
 * table (or in the id-level table here) and nothing else.  Every call is
 * validated before any state or the kernel is touched, so a bad call gets
 * a precise errno: ENOPROTOOPT for an unknown level or name (or a name
 * that cannot be set / read), EINVAL for a wrong size, EFAULT for a NULL
 * value.
 *
 * Id-level options go to the kernel and are remembered, so rdma_get_option
 * reads back what rdma_set_option set.
 */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include <infiniband/sa.h>

#include "cma.h"
#include "ucma_abi.h"

/* --- RDMA_OPTION_ID and RDMA_OPTION_IB: the kernel's options ---------- */

static int cma_kernel_set(struct cma_id_private *id_priv, int level,
			  int optname, const void *optval, size_t optlen)
{
	if (cma_id_kernel(id_priv))
		return -1;
	return ucma_cmd_set_option(cma_id_fd(id_priv), id_priv->handle,
				   (uint32_t)level, (uint32_t)optname,
				   (void *)optval, (uint32_t)optlen);
}

/* Remember an id-level value once the kernel has taken it. */
static int cma_id_opt_set(struct cma_id_private *id_priv, int level,
			  int optname, const void *optval, size_t optlen)
{
	struct cma_id_opts *o = &id_priv->opts;

	if (cma_kernel_set(id_priv, level, optname, optval, optlen))
		return -1;
	pthread_mutex_lock(&id_priv->mut);
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		memcpy(&o->tos, optval, sizeof(o->tos));
		o->tos_set = true;
		break;
	case RDMA_OPTION_ID_REUSEADDR:
		memcpy(&o->reuseaddr, optval, sizeof(o->reuseaddr));
		break;
	case RDMA_OPTION_ID_AFONLY:
		memcpy(&o->afonly, optval, sizeof(o->afonly));
		o->afonly_set = true;
		break;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		memcpy(&o->ack_timeout, optval, sizeof(o->ack_timeout));
		o->ack_timeout_set = true;
		break;
	}
	pthread_mutex_unlock(&id_priv->mut);
	return 0;
}

/* The kernel's default for AFONLY: the net.ipv6.bindv6only sysctl. */
static int cma_default_afonly(void)
{
	FILE *f = fopen("/proc/sys/net/ipv6/bindv6only", "re");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v ? 1 : 0;
}

static int cma_id_opt_get(struct cma_id_private *id_priv, int level,
			  int optname, void *optval, size_t optlen)
{
	struct cma_id_opts o;
	int afonly;

	(void)level;
	(void)optlen;
	pthread_mutex_lock(&id_priv->mut);
	o = id_priv->opts;
	pthread_mutex_unlock(&id_priv->mut);
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		memcpy(optval, &o.tos, sizeof(o.tos)); /* 0 until set */
		break;
	case RDMA_OPTION_ID_REUSEADDR:
		memcpy(optval, &o.reuseaddr, sizeof(o.reuseaddr));
		break;
	case RDMA_OPTION_ID_AFONLY:
		afonly = o.afonly_set ? o.afonly : cma_default_afonly();
		memcpy(optval, &afonly, sizeof(afonly));
		break;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		/* unset: the path record's packet life time decides */
		if (!o.ack_timeout_set)
			return cma_err(ENODATA);
		memcpy(optval, &o.ack_timeout, sizeof(o.ack_timeout));
		break;
	}
	return 0;
}

/* RDMA_OPTION_IB_PATH: one or more whole path records. */
static int cma_check_ib_path(int level, int optname, const void *optval,
			     size_t optlen)
{
	(void)level;
	(void)optname;
	(void)optval;
	if (!optlen || optlen % sizeof(struct ibv_path_data) ||
	    optlen > UINT32_MAX)
		return cma_err(EINVAL);
	return 0;
}

static int cma_ib_path_set(struct cma_id_private *id_priv, int level,
			   int optname, const void *optval, size_t optlen)
{
	if (cma_check_ib_path(level, optname, optval, optlen))
		return -1;
	return cma_kernel_set(id_priv, level, optname, optval, optlen);
}

/* RDMA_OPTION_ID_INITIATOR: read-only, known from ESTABLISHED on. */
static int cma_initiator_get(struct cma_id_private *id_priv, int level,
			     int optname, void *optval, size_t optlen)
{
	int v;

	(void)level;
	(void)optname;
	(void)optlen;
	pthread_mutex_lock(&id_priv->mut);
	v = id_priv->initiator;
	pthread_mutex_unlock(&id_priv->mut);
	if (v < 0)
		return cma_err(ENODATA);
	memcpy(optval, &v, sizeof(v));
	return 0;
}

static const struct cma_option cma_core_options[] = {
	{RDMA_OPTION_ID, RDMA_OPTION_ID_INITIATOR, sizeof(int), NULL, NULL,
	 cma_initiator_get},
	{RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, sizeof(uint8_t), NULL,
	 cma_id_opt_set, cma_id_opt_get},
	{RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, sizeof(int), NULL,
	 cma_id_opt_set, cma_id_opt_get},
	{RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, sizeof(int), NULL,
	 cma_id_opt_set, cma_id_opt_get},
	{RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, sizeof(uint8_t), NULL,
	 cma_id_opt_set, cma_id_opt_get},
	{RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, 0, cma_check_ib_path,
	 cma_ib_path_set, NULL},
};

static const struct cma_option_table cma_core_option_table = {
	.opts = cma_core_options,
	.count = sizeof(cma_core_options) / sizeof(cma_core_options[0]),
};

/* --- dispatch ------------------------------------------------------------ */

/* Every module's options.  Add a module's table here. */
static const struct cma_option_table *const cma_option_tables[] = {
	&cma_core_option_table,
	&cma_mcast_option_table,
	&cma_conn_option_table,
};

/* The entry for (level, optname) that can be set (or read): NULL/errno. */
static const struct cma_option *cma_option_find(int level, int optname,
						bool set)
{
	const struct cma_option *opt;
	size_t t, i;

	for (t = 0;
	     t < sizeof(cma_option_tables) / sizeof(cma_option_tables[0]);
	     t++) {
		for (i = 0; i < cma_option_tables[t]->count; i++) {
			opt = &cma_option_tables[t]->opts[i];
			if (opt->level != level || opt->optname != optname)
				continue;
			if (set ? !opt->set : !opt->get)
				break; /* write-only or read-only */
			return opt;
		}
	}
	errno = ENOPROTOOPT;
	return NULL;
}

/* Size and pointer checks shared by set and get. */
static int cma_option_check_buf(const struct cma_option *opt,
				const void *optval, size_t optlen)
{
	if (opt->len && optlen != opt->len)
		return cma_err(EINVAL);
	return optval ? 0 : cma_err(optlen ? EFAULT : EINVAL);
}

int cma_check_option(int level, int optname, const void *optval, size_t optlen)
{
	const struct cma_option *opt = cma_option_find(level, optname, true);

	if (!opt || cma_option_check_buf(opt, optval, optlen))
		return -1;
	return opt->check ? opt->check(level, optname, optval, optlen) : 0;
}

CMA_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
			       void *optval, size_t optlen)
{
	const struct cma_option *opt;

	if (cma_check_id(id))
		return -1;
	opt = cma_option_find(level, optname, true);
	if (!opt || cma_option_check_buf(opt, optval, optlen))
		return -1;
	/* set() validates the value as it reads it (struct cma_option). */
	return opt->set(cma_id_priv(id), level, optname, optval, optlen);
}

CMA_EXPORT int rdma_get_option(struct rdma_cm_id *id, int level, int optname,
			       void *optval, size_t optlen)
{
	const struct cma_option *opt;

	if (cma_check_id(id))
		return -1;
	opt = cma_option_find(level, optname, false);
	if (!opt || cma_option_check_buf(opt, optval, optlen))
		return -1;
	return opt->get(cma_id_priv(id), level, optname, optval, optlen);
}
