// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The fake libibverbs device: see fake_verbs.h.  Each function here has the
 * name and signature of the libibverbs call it replaces; the contexts it
 * hands out are plain (not extended) ones, so the inline wrappers of
 * <infiniband/verbs.h> fall back to these exported calls.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "fake_ucma.h"
#include "fake_verbs.h"

#define FAKE_GUID 0x1122334455667788ull

static struct ibv_device fake_dev;
static struct ibv_device *fake_list[2];
static bool fake_roce;
static struct fake_verbs_counts counts;
static uint32_t next_qpn;
static enum ibv_qp_state fail_state;
static int fail_err;
static void (*modify_hook)(struct ibv_qp *qp, enum ibv_qp_state to, void *arg);
static void *modify_hook_arg;

void fake_verbs_install(bool roce)
{
	struct fake_ucma_route route = {
		.node_guid = htobe64(FAKE_GUID),
		.port_num = 1,
		.pkey = 0xffff,
	};

	memset(&fake_dev, 0, sizeof(fake_dev));
	strcpy(fake_dev.name, "fake0");
	strcpy(fake_dev.dev_name, "uverbs0");
	fake_dev.node_type = IBV_NODE_CA;
	fake_dev.transport_type = IBV_TRANSPORT_IB;
	fake_list[0] = &fake_dev;
	fake_list[1] = NULL;
	fake_roce = roce;
	memset(&counts, 0, sizeof(counts));
	next_qpn = 0x100;
	fail_err = 0;
	modify_hook = NULL;
	route.sgid[0] = 0xfe;
	route.sgid[1] = 0x80;
	route.sgid[15] = 1;
	memcpy(route.dgid, route.sgid, 16);
	route.dgid[15] = 2;
	fake_ucma_set_route(&route);
}

struct fake_verbs_counts fake_verbs_counts(void)
{
	return counts;
}

void fake_verbs_fail_modify(enum ibv_qp_state state, int err)
{
	fail_state = state;
	fail_err = err;
}

void fake_verbs_on_modify(void (*fn)(struct ibv_qp *qp, enum ibv_qp_state to,
				     void *arg),
			  void *arg)
{
	modify_hook = fn;
	modify_hook_arg = arg;
}

/* --- devices and contexts ------------------------------------------------ */

#undef ibv_get_device_list
struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list = calloc(2, sizeof(*list));

	if (!list)
		return NULL;
	list[0] = fake_list[0];
	if (num_devices)
		*num_devices = 1;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	(void)device;
	return htobe64(FAKE_GUID);
}

/* An empty CQ: completions never arrive, only the events a test raises. */
static int fake_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	(void)cq;
	(void)num_entries;
	(void)wc;
	return 0;
}

static int fake_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	(void)cq;
	(void)solicited_only;
	return 0;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct ibv_context *ctx = calloc(1, sizeof(*ctx));

	if (!ctx)
		return NULL;
	/* The inline ibv_poll_cq / ibv_req_notify_cq call through ops. */
	ctx->ops.poll_cq = fake_poll_cq;
	ctx->ops.req_notify_cq = fake_req_notify_cq;
	ctx->device = device;
	ctx->cmd_fd = -1;
	ctx->async_fd = -1;
	ctx->num_comp_vectors = 1;
	counts.contexts++;
	return ctx;
}

int ibv_close_device(struct ibv_context *context)
{
	free(context);
	counts.contexts--;
	return 0;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	(void)context;
	memset(attr, 0, sizeof(*attr));
	attr->node_guid = htobe64(FAKE_GUID);
	attr->max_qp_rd_atom = 16;
	attr->max_qp_init_rd_atom = 16;
	attr->phys_port_cnt = 1;
	return 0;
}

#undef ibv_query_port
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr)
{
	struct ibv_port_attr *attr = (struct ibv_port_attr *)port_attr;

	(void)context;
	if (port_num != 1)
		return EINVAL;
	attr->state = IBV_PORT_ACTIVE;
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = IBV_MTU_1024;
	attr->gid_tbl_len = 16;
	attr->pkey_tbl_len = 1;
	attr->link_layer =
		fake_roce ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context,
			     struct ibv_gid_entry *entries, size_t max_entries,
			     uint32_t flags, size_t entry_size)
{
	(void)context;
	(void)entries;
	(void)max_entries;
	(void)flags;
	(void)entry_size;
	return 0;
}

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
		   __be16 *pkey)
{
	(void)context;
	(void)port_num;
	if (index != 0)
		return EINVAL;
	*pkey = htobe16(0xffff);
	return 0;
}

/* --- PDs, CQs, channels, SRQs, AHs ---------------------------------------- */

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct ibv_pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return NULL;
	pd->context = context;
	counts.pds++;
	return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	free(pd);
	counts.pds--;
	return 0;
}

/*
 * A completion channel is an eventfd, blocking as the kernel's channel is:
 * readable while a test-raised event waits (fake_verbs_cq_event), and
 * ibv_get_cq_event sleeps in read() until then.
 */
struct fake_channel {
	struct ibv_comp_channel ch; /* must stay first */
	struct ibv_cq *cq; /* the last CQ created on it */
};

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct fake_channel *f = calloc(1, sizeof(*f));
	struct ibv_comp_channel *ch = &f->ch;

	if (!f)
		return NULL;
	ch->context = context;
	ch->fd = eventfd(0, EFD_CLOEXEC);
	if (ch->fd < 0) {
		free(ch);
		return NULL;
	}
	counts.channels++;
	return ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	close(channel->fd);
	free(channel);
	counts.channels--;
	return 0;
}

/* One event per read; the channel's CQ is the one the test raised. */
int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		     void **cq_context)
{
	uint64_t n;

	if (read(channel->fd, &n, sizeof(n)) != sizeof(n))
		return -1;
	if (n > 1) {
		n--; /* more than one raised: leave the rest readable */
		if (write(channel->fd, &n, sizeof(n)) != sizeof(n))
			return -1;
	}
	*cq = ((struct fake_channel *)channel)->cq;
	*cq_context = *cq ? (*cq)->cq_context : NULL;
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	(void)cq;
	(void)nevents;
}

void fake_verbs_cq_event(struct ibv_cq *cq)
{
	uint64_t one = 1;

	if (cq->channel &&
	    write(cq->channel->fd, &one, sizeof(one)) != sizeof(one))
		abort();
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
			     void *cq_context, struct ibv_comp_channel *channel,
			     int comp_vector)
{
	struct ibv_cq *cq = calloc(1, sizeof(*cq));

	(void)comp_vector;
	if (!cq)
		return NULL;
	cq->context = context;
	cq->cqe = cqe;
	cq->cq_context = cq_context;
	cq->channel = channel;
	if (channel)
		((struct fake_channel *)channel)->cq = cq;
	counts.cqs++;
	return cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	free(cq);
	counts.cqs--;
	return 0;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
			       struct ibv_srq_init_attr *attr)
{
	struct ibv_srq *srq = calloc(1, sizeof(*srq));

	if (!srq)
		return NULL;
	srq->context = pd->context;
	srq->pd = pd;
	srq->srq_context = attr->srq_context;
	counts.srqs++;
	return srq;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	free(srq);
	counts.srqs--;
	return 0;
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct ibv_ah *ah = calloc(1, sizeof(*ah));

	(void)attr;
	if (!ah)
		return NULL;
	ah->context = pd->context;
	ah->pd = pd;
	counts.ahs++;
	return ah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	free(ah);
	counts.ahs--;
	return 0;
}

int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp;
	(void)gid;
	(void)lid;
	counts.mcast_attached++;
	return 0;
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp;
	(void)gid;
	(void)lid;
	counts.mcast_attached--;
	return 0;
}

/* --- QPs ------------------------------------------------------------------- */

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad_wr)
{
	(void)bad_wr;
	for (; wr; wr = wr->next)
		fake_qp_of(qp)->posted_sends++;
	return 0;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct fake_qp *f;

	if (!pd || !attr->send_cq || !attr->recv_cq) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->qp.context = pd->context;
	f->qp.pd = pd;
	f->qp.send_cq = attr->send_cq;
	f->qp.recv_cq = attr->recv_cq;
	f->qp.srq = attr->srq;
	f->qp.qp_context = attr->qp_context;
	f->qp.qp_num = next_qpn++;
	f->qp.qp_type = attr->qp_type;
	f->qp.state = IBV_QPS_RESET;
	/* The inline ibv_post_send calls through the context's ops. */
	pd->context->ops.post_send = fake_post_send;
	counts.qps++;
	return &f->qp;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct fake_qp *f = fake_qp_of(qp);
	enum ibv_qp_state to;

	if (!(attr_mask & IBV_QP_STATE))
		return 0;
	to = attr->qp_state;
	if (modify_hook)
		modify_hook(qp, to, modify_hook_arg);
	if (fail_err && to == fail_state) {
		int err = fail_err;

		fail_err = 0;
		return err;
	}
	if (to > IBV_QPS_ERR)
		return EINVAL;
	qp->state = to;
	if (f->nstates < FAKE_VERBS_MAX_STATES)
		f->states[f->nstates++] = to;
	f->last[to] = *attr;
	f->last_mask[to] = attr_mask;
	return 0;
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	(void)attr_mask;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = qp->state;
	if (init_attr) {
		memset(init_attr, 0, sizeof(*init_attr));
		init_attr->qp_type = qp->qp_type;
		init_attr->send_cq = qp->send_cq;
		init_attr->recv_cq = qp->recv_cq;
	}
	return 0;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	free(fake_qp_of(qp));
	counts.qps--;
	return 0;
}
