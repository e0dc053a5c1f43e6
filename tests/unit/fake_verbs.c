// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The fake libibverbs device: see fake_verbs.h.  Each function here has the
 * name and signature of the libibverbs call it replaces; the contexts it
 * hands out are plain (not extended) ones, so the inline wrappers of
 * <infiniband/verbs.h> fall back to these exported calls.
 */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "fake_ucma.h"
#include "fake_verbs.h"

#define FAKE_GUID 0x1122334455667788ull

#define FAKE_MAX_DEVS 4

/* Device i's GUID is FAKE_GUID + i; unplugged ones stay allocated. */
static struct ibv_device fake_devs[FAKE_MAX_DEVS];
static bool fake_plugged[FAKE_MAX_DEVS];
static int fake_ndevs;
static bool fake_roce;
static struct fake_verbs_port fake_ports[FAKE_MAX_DEVS];
/* Atomic: two threads may each close a socket, and free its objects. */
static struct fake_verbs_counts counts;
static uint32_t next_qpn;
static enum ibv_qp_state fail_state;
static int fail_err;
static void (*modify_hook)(struct ibv_qp *qp, enum ibv_qp_state to, void *arg);
static void *modify_hook_arg;
static int fail_post_err;
static uint32_t next_key;
/* The UD QPs a datagram can reach (fake_verbs_ud_fabric), by number. */
#define FAKE_MAX_UD_QPS 64
static struct fake_qp *ud_qps[FAKE_MAX_UD_QPS];
static bool ud_fabric;
/* Guards the CQs' and QPs' queues: a test may post from several threads. */
static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;

#define FAKE_CQ_DEPTH 8192
#define FAKE_GRH_LEN 40

/* A CQ that holds the completions the wire (or a test) put on it. */
struct fake_cq {
	struct ibv_cq cq; /* must stay first */
	struct ibv_wc wc[FAKE_CQ_DEPTH];
	int head, n;
	bool armed;
};

/*
 * A registered MR, kept so that an RDMA write lands only where its rkey
 * allows, as a NIC checks it: a write anywhere else fails with a remote
 * access error instead of scribbling over whatever the address names.
 */
struct fake_mr {
	struct ibv_mr mr; /* must stay first */
	struct fake_mr *next;
};

static struct fake_mr *fake_mrs;

/* A send request as the wire carries it: its bytes taken at post time. */
struct fake_wr {
	struct ibv_send_wr wr; /* opcode, ids, flags, remote; no SGL */
	uint32_t len;
	uint8_t *data;
};

void fake_verbs_install(bool roce)
{
	struct fake_ucma_route route = {
		.node_guid = htobe64(FAKE_GUID),
		.port_num = 1,
		.pkey = 0xffff,
	};

	fake_ndevs = 0;
	memset(fake_plugged, 0, sizeof(fake_plugged));
	memset(fake_ports, 0, sizeof(fake_ports));
	fake_verbs_add_device(false);
	fake_roce = roce;
	memset(&counts, 0, sizeof(counts));
	next_qpn = 0x100;
	fail_err = 0;
	fail_post_err = 0;
	next_key = 0x1000;
	modify_hook = NULL;
	memset(ud_qps, 0, sizeof(ud_qps));
	ud_fabric = false;
	route.sgid[0] = 0xfe;
	route.sgid[1] = 0x80;
	route.sgid[15] = 1;
	memcpy(route.dgid, route.sgid, 16);
	route.dgid[15] = 2;
	fake_ucma_set_route(&route);
}

static int fake_dev_index(const struct ibv_device *device)
{
	return (int)(device - fake_devs);
}

struct ibv_device *fake_verbs_add_device(bool iwarp)
{
	struct ibv_device *dev;

	if (fake_ndevs == FAKE_MAX_DEVS)
		abort();
	dev = &fake_devs[fake_ndevs];
	memset(dev, 0, sizeof(*dev));
	snprintf(dev->name, sizeof(dev->name), "fake%d", fake_ndevs);
	snprintf(dev->dev_name, sizeof(dev->dev_name), "uverbs%d", fake_ndevs);
	dev->node_type = iwarp ? IBV_NODE_RNIC : IBV_NODE_CA;
	dev->transport_type = iwarp ? IBV_TRANSPORT_IWARP : IBV_TRANSPORT_IB;
	fake_plugged[fake_ndevs++] = true;
	return dev;
}

void fake_verbs_unplug(struct ibv_device *device)
{
	fake_plugged[fake_dev_index(device)] = false;
}

/* A context a test made by hand (no fake device) gets the defaults. */
static const struct fake_verbs_port *fake_port_of(struct ibv_context *ctx)
{
	static const struct fake_verbs_port none;
	int i = ctx->device ? fake_dev_index(ctx->device) : -1;

	return i >= 0 && i < FAKE_MAX_DEVS ? &fake_ports[i] : &none;
}

void fake_verbs_set_port(struct ibv_device *device,
			 const struct fake_verbs_port *port)
{
	fake_ports[device ? fake_dev_index(device) : 0] = *port;
}

uint64_t fake_verbs_guid(struct ibv_device *device)
{
	return FAKE_GUID + (uint64_t)fake_dev_index(device);
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
	struct ibv_device **list = calloc(FAKE_MAX_DEVS + 1, sizeof(*list));
	int i, n = 0;

	if (!list)
		return NULL;
	for (i = 0; i < fake_ndevs; i++)
		if (fake_plugged[i])
			list[n++] = &fake_devs[i];
	if (num_devices)
		*num_devices = n;
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
	return htobe64(fake_verbs_guid(device));
}

static struct fake_cq *fake_cq_of(struct ibv_cq *cq)
{
	return (struct fake_cq *)cq;
}

/* Completions arrive only from a wire (fake_verbs_connect) or a test. */
static int fake_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	struct fake_cq *f = fake_cq_of(cq);
	int i;

	pthread_mutex_lock(&fake_lock);
	for (i = 0; i < num_entries && f->n; i++) {
		wc[i] = f->wc[f->head];
		f->head = (f->head + 1) % FAKE_CQ_DEPTH;
		f->n--;
	}
	pthread_mutex_unlock(&fake_lock);
	return i;
}

static int fake_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	(void)solicited_only;
	pthread_mutex_lock(&fake_lock);
	fake_cq_of(cq)->armed = true;
	pthread_mutex_unlock(&fake_lock);
	return 0;
}

/* fake_lock held.  An armed CQ raises one event on its channel. */
static void fake_cq_push(struct ibv_cq *cq, const struct ibv_wc *wc)
{
	struct fake_cq *f = fake_cq_of(cq);
	uint64_t one = 1;

	if (f->n == FAKE_CQ_DEPTH)
		abort(); /* a test that never polls: a bug in the test */
	f->wc[(f->head + f->n) % FAKE_CQ_DEPTH] = *wc;
	f->n++;
	if (f->armed && cq->channel) {
		f->armed = false;
		if (write(cq->channel->fd, &one, sizeof(one)) != sizeof(one))
			abort();
	}
}

void fake_verbs_complete(struct ibv_cq *cq, const struct ibv_wc *wc)
{
	pthread_mutex_lock(&fake_lock);
	fake_cq_push(cq, wc);
	pthread_mutex_unlock(&fake_lock);
}

int fake_verbs_cq_depth(struct ibv_cq *cq)
{
	int n;

	pthread_mutex_lock(&fake_lock);
	n = fake_cq_of(cq)->n;
	pthread_mutex_unlock(&fake_lock);
	return n;
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
	__atomic_add_fetch(&counts.contexts, 1, __ATOMIC_RELAXED);
	return ctx;
}

int ibv_close_device(struct ibv_context *context)
{
	free(context);
	__atomic_sub_fetch(&counts.contexts, 1, __ATOMIC_RELAXED);
	return 0;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->node_guid = htobe64(fake_verbs_guid(context->device));
	attr->max_qp_rd_atom = 16;
	attr->max_qp_init_rd_atom = 16;
	attr->phys_port_cnt = 1;
	attr->max_qp_wr = fake_port_of(context)->max_qp_wr;
	return 0;
}

#undef ibv_query_port
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr)
{
	struct ibv_port_attr *attr = (struct ibv_port_attr *)port_attr;
	const struct fake_verbs_port *p = fake_port_of(context);

	if (port_num != 1)
		return EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->state = p->state ? p->state : IBV_PORT_ACTIVE;
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = IBV_MTU_1024;
	attr->gid_tbl_len = 16;
	attr->pkey_tbl_len = 1;
	attr->lid = p->lid;
	attr->sm_lid = p->sm_lid;
	attr->active_width = p->active_width ? p->active_width : 1;
	attr->active_speed = p->active_speed ? p->active_speed : 1;
	if (p->link_layer)
		attr->link_layer = p->link_layer;
	else
		attr->link_layer = fake_roce ? IBV_LINK_LAYER_ETHERNET
					     : IBV_LINK_LAYER_INFINIBAND;
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context,
			     struct ibv_gid_entry *entries, size_t max_entries,
			     uint32_t flags, size_t entry_size)
{
	const struct fake_verbs_port *p = fake_port_of(context);
	size_t i;

	(void)flags;
	if (entry_size != sizeof(*entries))
		return -EINVAL;
	for (i = 0; i < (size_t)p->ngids && i < max_entries; i++) {
		memset(&entries[i], 0, sizeof(entries[i]));
		entries[i].gid = p->gids[i];
		entries[i].gid_index = (uint32_t)i;
		entries[i].port_num = 1;
	}
	return (ssize_t)i;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
		      uint32_t gid_index, struct ibv_gid_entry *entry,
		      uint32_t flags, size_t entry_size)
{
	const struct fake_verbs_port *p = fake_port_of(context);
	bool roce = p->link_layer ? p->link_layer == IBV_LINK_LAYER_ETHERNET
				  : fake_roce;

	(void)flags;
	if (entry_size != sizeof(*entry) || port_num != 1)
		return EINVAL;
	if (gid_index >= (uint32_t)p->ngids)
		return ENODATA;
	memset(entry, 0, sizeof(*entry));
	entry->gid = p->gids[gid_index];
	entry->gid_index = gid_index;
	entry->port_num = 1;
	entry->gid_type = roce ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_IB;
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
	__atomic_add_fetch(&counts.pds, 1, __ATOMIC_RELAXED);
	return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	free(pd);
	__atomic_sub_fetch(&counts.pds, 1, __ATOMIC_RELAXED);
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
	__atomic_add_fetch(&counts.channels, 1, __ATOMIC_RELAXED);
	return ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	close(channel->fd);
	free(channel);
	__atomic_sub_fetch(&counts.channels, 1, __ATOMIC_RELAXED);
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

/*
 * CQs destroyed while fake_verbs_reuse_cqs is on, kept for the next
 * create (linked through their cq_context): a CQ is large (its ring holds
 * FAKE_CQ_DEPTH completions), and making and freeing one per connection
 * cost the fuzz targets more than the connection.
 */
static bool reuse_cqs;
static struct fake_cq *spare_cqs;

void fake_verbs_reuse_cqs(bool on)
{
	struct fake_cq *f;

	pthread_mutex_lock(&fake_lock);
	reuse_cqs = on;
	while (!on && (f = spare_cqs)) {
		spare_cqs = f->cq.cq_context;
		free(f);
	}
	pthread_mutex_unlock(&fake_lock);
}

/* A new CQ: a spare one as new (an empty ring need not be zeroed). */
static struct fake_cq *fake_cq_new(void)
{
	struct fake_cq *f;

	pthread_mutex_lock(&fake_lock);
	f = spare_cqs;
	if (f) {
		spare_cqs = f->cq.cq_context;
		memset(&f->cq, 0, sizeof(f->cq));
		f->head = f->n = 0;
		f->armed = false;
	}
	pthread_mutex_unlock(&fake_lock);
	return f ? f : calloc(1, sizeof(*f));
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
			     void *cq_context, struct ibv_comp_channel *channel,
			     int comp_vector)
{
	struct fake_cq *f = fake_cq_new();
	struct ibv_cq *cq = &f->cq;

	(void)comp_vector;
	if (!f)
		return NULL;
	cq->context = context;
	cq->cqe = cqe;
	cq->cq_context = cq_context;
	cq->channel = channel;
	if (channel)
		((struct fake_channel *)channel)->cq = cq;
	__atomic_add_fetch(&counts.cqs, 1, __ATOMIC_RELAXED);
	return cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	pthread_mutex_lock(&fake_lock);
	__atomic_sub_fetch(&counts.cqs, 1, __ATOMIC_RELAXED);
	if (reuse_cqs) {
		cq->cq_context = spare_cqs;
		spare_cqs = fake_cq_of(cq);
		cq = NULL;
	}
	pthread_mutex_unlock(&fake_lock);
	free(cq);
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
	__atomic_add_fetch(&counts.srqs, 1, __ATOMIC_RELAXED);
	return srq;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	free(srq);
	__atomic_sub_fetch(&counts.srqs, 1, __ATOMIC_RELAXED);
	return 0;
}

/* An AH remembers what it was made from (fake_verbs_ah_attr). */
struct fake_ah {
	struct ibv_ah ah; /* must stay first */
	struct ibv_ah_attr attr;
};

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct fake_ah *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->ah.context = pd->context;
	f->ah.pd = pd;
	f->attr = *attr;
	__atomic_add_fetch(&counts.ahs, 1, __ATOMIC_RELAXED);
	return &f->ah;
}

struct ibv_ah_attr fake_verbs_ah_attr(struct ibv_ah *ah)
{
	return ((struct fake_ah *)ah)->attr;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	free(ah);
	__atomic_sub_fetch(&counts.ahs, 1, __ATOMIC_RELAXED);
	return 0;
}

/* --- memory regions: the memory is this process's, keys are counters --- */

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			  int access)
{
	struct fake_mr *f = calloc(1, sizeof(*f));
	struct ibv_mr *mr;

	(void)access;
	if (!f)
		return NULL;
	mr = &f->mr;
	mr->context = pd->context;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	pthread_mutex_lock(&fake_lock);
	mr->lkey = mr->rkey = next_key++;
	f->next = fake_mrs;
	fake_mrs = f;
	__atomic_add_fetch(&counts.mrs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&fake_lock);
	return mr;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
				uint64_t iova, unsigned int access)
{
	(void)iova;
	return ibv_reg_mr(pd, addr, length, (int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct fake_mr **pp;

	pthread_mutex_lock(&fake_lock);
	for (pp = &fake_mrs; *pp; pp = &(*pp)->next)
		if (&(*pp)->mr == mr) {
			*pp = (*pp)->next;
			break;
		}
	__atomic_sub_fetch(&counts.mrs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&fake_lock);
	free(mr);
	return 0;
}

/* fake_lock held.  Whether a live MR keyed @rkey holds all of the range. */
static bool fake_mr_covers(uint32_t rkey, uint64_t addr, uint32_t len)
{
	const struct fake_mr *f;

	for (f = fake_mrs; f; f = f->next)
		if (f->mr.rkey == rkey && addr >= (uintptr_t)f->mr.addr &&
		    addr + len <= (uintptr_t)f->mr.addr + f->mr.length)
			return true;
	return false;
}

int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)gid;
	(void)lid;
	fake_qp_of(qp)->mcast_attached++;
	__atomic_add_fetch(&counts.mcast_attached, 1, __ATOMIC_RELAXED);
	return 0;
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)gid;
	(void)lid;
	fake_qp_of(qp)->mcast_attached--;
	__atomic_sub_fetch(&counts.mcast_attached, 1, __ATOMIC_RELAXED);
	return 0;
}

/* --- QPs ------------------------------------------------------------------- */

void fake_verbs_fail_post(int err)
{
	pthread_mutex_lock(&fake_lock);
	fail_post_err = err;
	pthread_mutex_unlock(&fake_lock);
}

/* fake_lock held: the injected failure, once. */
static int fake_take_post_failure(void)
{
	int err = fail_post_err;

	fail_post_err = 0;
	return err;
}

static enum ibv_wc_opcode fake_wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	default:
		return IBV_WC_SEND;
	}
}

/* fake_lock held.  The peer's oldest receive, false if it has none. */
static bool fake_take_recv(struct fake_qp *peer, struct fake_recv *r)
{
	if (!peer->nrecvs)
		return false;
	*r = peer->recvs[peer->recv_head];
	peer->recv_head = (peer->recv_head + 1) % FAKE_VERBS_MAX_RECVS;
	peer->nrecvs--;
	return true;
}

#ifdef __SANITIZE_THREAD__
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
#endif

/*
 * An RDMA write lands in the peer's memory as a NIC's DMA does, not as a
 * CPU store: the peer's library may read that memory meanwhile (rsockets
 * poll the SGL entry the peer writes, as rdma-core's do), so these copies
 * are no data race of the library's for ThreadSanitizer.
 *
 * Like a NIC's, the write stores each byte once, in address order, eight
 * bytes at a time where aligned.  memcpy may not: for 16 bytes (an SGL
 * entry) glibc stores the same 16 bytes twice, and a thread preempted
 * between the two stores let the second one undo what the reader had
 * done with the first (an rsocket writer took the entry, wrote into it
 * and advanced it; the second store put the entry back, and the writer's
 * next bytes went to the wrong place: tests/system/BUGS.md
 * quiesce-traffic-byte).
 */
static void fake_dma_write(void *dst, const void *src, size_t len)
{
	const uint8_t *s = src;
	uint8_t *d = dst;
	uint64_t w;

#ifdef __SANITIZE_THREAD__
	AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
#endif
	for (; len && ((uintptr_t)d & 7); len--)
		__atomic_store_n(d++, *s++, __ATOMIC_RELEASE);
	for (; len >= 8; len -= 8, d += 8, s += 8) {
		memcpy(&w, s, 8);
		__atomic_store_n((uint64_t *)(void *)d, w, __ATOMIC_RELEASE);
	}
	for (; len; len--)
		__atomic_store_n(d++, *s++, __ATOMIC_RELEASE);
#ifdef __SANITIZE_THREAD__
	AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
#endif
}

/* fake_lock held.  The receive side of one request; its status. */
static enum ibv_wc_status fake_deliver(struct fake_qp *peer,
				       const struct fake_wr *fw)
{
	const struct ibv_send_wr *wr = &fw->wr;
	bool imm = wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
		   wr->opcode == IBV_WR_SEND_WITH_IMM;
	bool send =
		wr->opcode == IBV_WR_SEND || wr->opcode == IBV_WR_SEND_WITH_IMM;
	struct ibv_wc wc = {.status = IBV_WC_SUCCESS};
	struct fake_recv r;

	if (!send && fw->len) {
		if (!fake_mr_covers(wr->wr.rdma.rkey, wr->wr.rdma.remote_addr,
				    fw->len))
			return IBV_WC_REM_ACCESS_ERR;
		fake_dma_write((void *)(uintptr_t)wr->wr.rdma.remote_addr,
			       fw->data, fw->len);
	}
	if (!imm && !send)
		return IBV_WC_SUCCESS;
	if (!fake_take_recv(peer, &r))
		return IBV_WC_RNR_RETRY_EXC_ERR;
	if (send) {
		if (fw->len > r.sge.length)
			return IBV_WC_REM_INV_REQ_ERR;
		memcpy((void *)(uintptr_t)r.sge.addr, fw->data, fw->len);
	}
	wc.wr_id = r.wr_id;
	wc.opcode = send ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM;
	wc.byte_len = fw->len;
	wc.qp_num = peer->qp.qp_num;
	if (imm) {
		wc.wc_flags = IBV_WC_WITH_IMM;
		wc.imm_data = wr->imm_data;
	}
	fake_cq_push(peer->qp.recv_cq, &wc);
	return IBV_WC_SUCCESS;
}

void fake_verbs_ud_fabric(bool on)
{
	pthread_mutex_lock(&fake_lock);
	ud_fabric = on;
	pthread_mutex_unlock(&fake_lock);
}

/* fake_lock held.  The UD QP numbered @qpn, NULL if none. */
static struct fake_qp *fake_ud_qp(uint32_t qpn)
{
	int i;

	for (i = 0; i < FAKE_MAX_UD_QPS; i++)
		if (ud_qps[i] && ud_qps[i]->qp.qp_num == qpn)
			return ud_qps[i];
	return NULL;
}

/*
 * fake_lock held.  A datagram from @f reaches the QP it names, behind a
 * GRH in its oldest receive, as a UD receive always carries one; with no
 * such QP, no receive or no room it is lost, as datagrams are.  The send
 * itself succeeds either way.
 */
static void fake_ud_send(struct fake_qp *f, const struct fake_wr *fw)
{
	struct fake_qp *to = fake_ud_qp(fw->wr.wr.ud.remote_qpn);
	struct ibv_wc wc = {.status = IBV_WC_SUCCESS,
			    .opcode = IBV_WC_RECV,
			    .wc_flags = IBV_WC_GRH,
			    .src_qp = f->qp.qp_num};
	struct fake_recv r;

	if (to && to->qp.state != IBV_QPS_ERR && fake_take_recv(to, &r) &&
	    r.sge.length >= FAKE_GRH_LEN + fw->len) {
		memset((void *)(uintptr_t)r.sge.addr, 0, FAKE_GRH_LEN);
		memcpy((uint8_t *)(uintptr_t)r.sge.addr + FAKE_GRH_LEN,
		       fw->data, fw->len);
		wc.wr_id = r.wr_id;
		wc.byte_len = FAKE_GRH_LEN + fw->len;
		wc.qp_num = to->qp.qp_num;
		fake_cq_push(to->qp.recv_cq, &wc);
	}
	if (f->sq_sig_all || (fw->wr.send_flags & IBV_SEND_SIGNALED)) {
		wc = (struct ibv_wc){.wr_id = fw->wr.wr_id,
				     .status = IBV_WC_SUCCESS,
				     .opcode = IBV_WC_SEND,
				     .qp_num = f->qp.qp_num};
		fake_cq_push(f->qp.send_cq, &wc);
	}
}

/* fake_lock held.  Carry one request across the wire and complete it. */
static void fake_execute(struct fake_qp *f, const struct fake_wr *fw)
{
	struct fake_qp *peer = f->peer;
	struct ibv_wc wc = {
		.wr_id = fw->wr.wr_id,
		.opcode = fake_wc_opcode(fw->wr.opcode),
		.qp_num = f->qp.qp_num,
	};

	if (f->qp.state == IBV_QPS_ERR)
		wc.status = IBV_WC_WR_FLUSH_ERR;
	else if (!peer || peer->qp.state == IBV_QPS_ERR)
		wc.status = IBV_WC_RETRY_EXC_ERR;
	else
		wc.status = fake_deliver(peer, fw);
	if (wc.status != IBV_WC_SUCCESS)
		f->qp.state = IBV_QPS_ERR; /* as the hardware moves it */
	if (wc.status != IBV_WC_SUCCESS || f->sq_sig_all ||
	    (fw->wr.send_flags & IBV_SEND_SIGNALED))
		fake_cq_push(f->qp.send_cq, &wc);
}

/* fake_lock held.  The request's bytes, gathered now (inline or not). */
static int fake_wr_take(const struct ibv_send_wr *wr, struct fake_wr *fw)
{
	uint32_t off = 0;
	int i;

	fw->wr = *wr;
	fw->wr.next = NULL;
	fw->wr.sg_list = NULL;
	fw->len = 0;
	for (i = 0; i < wr->num_sge; i++)
		fw->len += wr->sg_list[i].length;
	fw->data = malloc(fw->len ? fw->len : 1);
	if (!fw->data)
		return ENOMEM;
	for (i = 0; i < wr->num_sge; i++) {
		memcpy(fw->data + off,
		       (const void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		off += wr->sg_list[i].length;
	}
	return 0;
}

static void fake_record_send(struct fake_qp *f, const struct fake_wr *fw)
{
	const struct ibv_send_wr *wr = &fw->wr;

	f->posted_sends++;
	f->last_send = (struct fake_send){
		.opcode = wr->opcode,
		.wr_id = wr->wr_id,
		.send_flags = wr->send_flags,
		.imm_data = wr->imm_data,
		.len = fw->len,
		.remote_addr = wr->wr.rdma.remote_addr,
		.rkey = wr->wr.rdma.rkey,
	};
	if (f->qp.qp_type == IBV_QPT_UD) {
		f->last_send.remote_addr = 0;
		f->last_send.rkey = 0;
		f->last_send.ah = wr->wr.ud.ah;
		f->last_send.remote_qpn = wr->wr.ud.remote_qpn;
		f->last_send.remote_qkey = wr->wr.ud.remote_qkey;
	}
}

/* Held requests wait in a list of fake_wr copies (wr.next links them). */
static void fake_hold_append(struct fake_qp *f, struct fake_wr *fw)
{
	struct fake_wr *copy = malloc(sizeof(*copy));
	struct ibv_send_wr **pos = &f->held;

	if (!copy)
		abort();
	*copy = *fw;
	while (*pos)
		pos = &(*pos)->next;
	*pos = &copy->wr;
}

/* fake_lock held.  Whether @fw needs a receive the peer has not posted. */
static bool fake_rnr_waits(const struct fake_qp *f, const struct fake_wr *fw)
{
	enum ibv_wr_opcode op = fw->wr.opcode;

	if (op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_READ)
		return false;
	return f->qp.state != IBV_QPS_ERR && f->peer &&
	       f->peer->qp.state != IBV_QPS_ERR && !f->peer->nrecvs;
}

/*
 * fake_lock held.  Carry what @f has queued across the wire, in order,
 * up to @n requests (all when n < 0), unless held.  A request the peer has
 * no receive for waits, with all behind it, as RNR retries do with an
 * unlimited rnr_retry_count (rsockets ask for that): the peer's next
 * ibv_post_recv, or an error state of either QP, moves it on.
 */
static int fake_drain(struct fake_qp *f, int n)
{
	struct fake_wr *fw;
	int done = 0;

	while (f->held && (n < 0 || done < n)) {
		fw = (struct fake_wr *)f->held;
		if (fake_rnr_waits(f, fw))
			break;
		f->held = fw->wr.next;
		fake_execute(f, fw);
		free(fw->data);
		free(fw);
		done++;
	}
	return done;
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad_wr)
{
	struct fake_qp *f = fake_qp_of(qp);
	struct fake_wr fw;
	int err;

	pthread_mutex_lock(&fake_lock);
	err = fake_take_post_failure();
	for (; wr && !err; wr = wr->next) {
		err = fake_wr_take(wr, &fw);
		if (err)
			break;
		fake_record_send(f, &fw);
		if (f->peer) {
			fake_hold_append(f, &fw);
			continue;
		}
		if (ud_fabric && f->qp.qp_type == IBV_QPT_UD)
			fake_ud_send(f, &fw);
		free(fw.data);
	}
	if (err)
		*bad_wr = wr;
	if (f->peer && !f->hold)
		fake_drain(f, -1);
	pthread_mutex_unlock(&fake_lock);
	return err;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr)
{
	struct fake_qp *f = fake_qp_of(qp);
	struct fake_recv *r;
	int err;

	pthread_mutex_lock(&fake_lock);
	err = fake_take_post_failure();
	for (; wr && !err; wr = wr->next) {
		if (f->nrecvs == FAKE_VERBS_MAX_RECVS) {
			err = ENOMEM;
			break;
		}
		r = &f->recvs[(f->recv_head + f->nrecvs) %
			      FAKE_VERBS_MAX_RECVS];
		r->wr_id = wr->wr_id;
		memset(&r->sge, 0, sizeof(r->sge));
		if (wr->num_sge)
			r->sge = wr->sg_list[0];
		f->nrecvs++;
		f->posted_recvs++;
	}
	if (err)
		*bad_wr = wr;
	/* A sender waiting for a receive (RNR) goes on. */
	if (f->peer && !f->peer->hold)
		fake_drain(f->peer, -1);
	pthread_mutex_unlock(&fake_lock);
	return err;
}

void fake_verbs_connect(struct ibv_qp *a, struct ibv_qp *b)
{
	pthread_mutex_lock(&fake_lock);
	fake_qp_of(a)->peer = fake_qp_of(b);
	fake_qp_of(b)->peer = fake_qp_of(a);
	pthread_mutex_unlock(&fake_lock);
}

void fake_verbs_hold(struct ibv_qp *qp, bool hold)
{
	pthread_mutex_lock(&fake_lock);
	fake_qp_of(qp)->hold = hold;
	pthread_mutex_unlock(&fake_lock);
}

int fake_verbs_release(struct ibv_qp *qp, int n)
{
	int done;

	pthread_mutex_lock(&fake_lock);
	done = fake_drain(fake_qp_of(qp), n);
	pthread_mutex_unlock(&fake_lock);
	return done;
}

/* fake_lock held.  A QP moved to ERR flushes the receives it holds. */
static void fake_flush_recvs(struct fake_qp *f)
{
	struct ibv_wc wc = {.status = IBV_WC_WR_FLUSH_ERR,
			    .opcode = IBV_WC_RECV,
			    .qp_num = f->qp.qp_num};
	struct fake_recv r;

	while (fake_take_recv(f, &r)) {
		wc.wr_id = r.wr_id;
		fake_cq_push(f->qp.recv_cq, &wc);
	}
}

/* fake_lock held: enter or leave the UD registry. */
static void fake_ud_register(struct fake_qp *f, bool on)
{
	int i;

	for (i = 0; i < FAKE_MAX_UD_QPS; i++) {
		if (on && !ud_qps[i]) {
			ud_qps[i] = f;
			return;
		}
		if (!on && ud_qps[i] == f) {
			ud_qps[i] = NULL;
			return;
		}
	}
}

/* fake_lock held: @f goes to ERR, flushing its receives. */
static void fake_qp_fail(struct fake_qp *f)
{
	f->qp.state = IBV_QPS_ERR;
	fake_flush_recvs(f);
	/* Requests waiting for a receive now fail, on either side. */
	if (!f->hold)
		fake_drain(f, -1);
	if (f->peer && !f->peer->hold)
		fake_drain(f->peer, -1);
}

/*
 * An iWARP connection is a TCP connection: a QP that leaves RTS for SQD
 * (rdma_disconnect's graceful close) or ERR closes it, and the peer's QP
 * fails at once (its receives flush).  On InfiniBand and RoCE the peer
 * learns nothing until it sends.
 */
static bool fake_closes_connection(const struct fake_qp *f,
				   enum ibv_qp_state to)
{
	return (to == IBV_QPS_SQD || to == IBV_QPS_ERR) && f->peer &&
	       f->peer->qp.state != IBV_QPS_ERR &&
	       f->qp.context->device->transport_type == IBV_TRANSPORT_IWARP;
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
	f->sq_sig_all = attr->sq_sig_all;
	if (f->qp.qp_type == IBV_QPT_UD) {
		pthread_mutex_lock(&fake_lock);
		fake_ud_register(f, true);
		pthread_mutex_unlock(&fake_lock);
	}
	/* The inline ibv_post_send/recv call through the context's ops. */
	pd->context->ops.post_send = fake_post_send;
	pd->context->ops.post_recv = fake_post_recv;
	__atomic_add_fetch(&counts.qps, 1, __ATOMIC_RELAXED);
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
	pthread_mutex_lock(&fake_lock);
	qp->state = to;
	if (to == IBV_QPS_ERR)
		fake_qp_fail(f);
	/* RESET empties the queues without completions. */
	if (to == IBV_QPS_RESET)
		f->nrecvs = f->recv_head = 0;
	if (fake_closes_connection(f, to))
		fake_qp_fail(f->peer);
	/* Recorded under the lock too: a test may move a QP a thread moves. */
	if (f->nstates < FAKE_VERBS_MAX_STATES)
		f->states[f->nstates++] = to;
	f->last[to] = *attr;
	f->last_mask[to] = attr_mask;
	pthread_mutex_unlock(&fake_lock);
	return 0;
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	struct fake_qp *f = fake_qp_of(qp);

	(void)attr_mask;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = qp->state;
	/* What the last moves to RTR and RTS set. */
	attr->dest_qp_num = f->last[IBV_QPS_RTR].dest_qp_num;
	attr->rq_psn = f->last[IBV_QPS_RTR].rq_psn;
	attr->sq_psn = f->last[IBV_QPS_RTS].sq_psn;
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
	struct fake_qp *f = fake_qp_of(qp);
	struct fake_wr *fw;

	pthread_mutex_lock(&fake_lock);
	if (f->qp.qp_type == IBV_QPT_UD)
		fake_ud_register(f, false);
	if (f->peer)
		f->peer->peer = NULL;
	while (f->held) {
		fw = (struct fake_wr *)f->held;
		f->held = fw->wr.next;
		free(fw->data);
		free(fw);
	}
	pthread_mutex_unlock(&fake_lock);
	__atomic_sub_fetch(&counts.mcast_attached, f->mcast_attached,
			   __ATOMIC_RELAXED);
	free(f);
	__atomic_sub_fetch(&counts.qps, 1, __ATOMIC_RELAXED);
	return 0;
}
