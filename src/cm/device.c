// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * RDMA devices known to the library.
 *
 * The list is read once and refreshed when the kernel names a device we do
 * not know (hot-plug, or `rdma link add` after start-up).  A device is only
 * opened when an id is first bound to it: a process that uses one port of a
 * many-device host pays for one context, not all of them.
 *
 * A device that is removed and added back (`rdma link delete`, then `add`)
 * usually comes back with the same node GUID but is a new device to
 * libibverbs: a new struct ibv_device, maybe another uverbs node.  So an
 * entry stands for one ibv_device, not for a GUID: once the device is seen
 * to go (DEVICE_REMOVAL, or missing from a fresh libibverbs list) its entry
 * is never handed out again, and the next lookup of the GUID rescans and
 * finds the new device.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "cma.h"
#include "ucma_abi.h"

static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;
/*
 * Entries are allocated one by one and never move or go away while the
 * process runs: ids keep pointers to them.  A device that disappears stays
 * listed, marked gone, and is closed once no id uses it.
 */
static struct cma_device **devs;
static int dev_count;
/* The libibverbs lists entries came from: they keep those devices alive. */
static struct ibv_device ***kept_lists;
static int kept_count;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_errno;

/*
 * A context opened before a credential change: the ids made on it keep
 * using it (its files still take the process's ioctls), and so may what
 * the program made on id->verbs.  rdma-core never closes a context it
 * opened, and a program may rely on that; so it stays open, listed here
 * rather than lost: one per device and credential change.
 */
struct cma_retired_context {
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct cma_retired_context *next;
};

static void cma_device_atfork_prepare(void)
{
	pthread_mutex_lock(&dev_lock);
}

static void cma_device_atfork_parent(void)
{
	pthread_mutex_unlock(&dev_lock);
}

/*
 * A forked child cannot issue commands on the contexts its parent opened
 * (the kernel refuses a device file's writes to other credentials, and a
 * child's are its own), and whatever it made on them would belong to the
 * parent's file, outliving the child.  So the child forgets them, without
 * closing anything of the parent's, and opens its own on first use: the
 * ids it creates, the requests it adopts (handoff.c) and rdma_get_devices
 * give it contexts of its own.  The parent's ids it inherited keep theirs.
 */
static void cma_device_forget_locked(void)
{
	int i;

	for (i = 0; i < dev_count; i++) {
		devs[i]->verbs = NULL;
		devs[i]->pd = NULL;
	}
}

static void cma_device_atfork_child(void)
{
	struct cma_retired_context *r;
	int i;

	pthread_mutex_unlock(&dev_lock); /* the forking thread's (prepare) */
	cma_device_forget_locked();
	/* The parent's retired contexts too: its, not ours. */
	for (i = 0; i < dev_count; i++)
		while ((r = devs[i]->retired)) {
			devs[i]->retired = r->next;
			free(r);
		}
}

/*
 * The same after a credential change (creds.c): the contexts opened before
 * it refuse the new credentials' commands.  Ids made on them keep them;
 * unlike a forked child's, they are this process's: kept (retired).
 */
void cma_device_forget_contexts(void)
{
	struct cma_retired_context *r;
	int i;

	pthread_mutex_lock(&dev_lock);
	for (i = 0; i < dev_count; i++) {
		if (!devs[i]->verbs)
			continue;
		r = calloc(1, sizeof(*r));
		if (!r)
			continue; /* forgotten unclosed, as in a child */
		r->verbs = devs[i]->verbs;
		r->pd = devs[i]->pd;
		r->next = devs[i]->retired;
		devs[i]->retired = r;
	}
	cma_device_forget_locked();
	pthread_mutex_unlock(&dev_lock);
}

static void cma_init_once(void)
{
	int version = ucma_abi_version();

	pthread_atfork(cma_device_atfork_prepare, cma_device_atfork_parent,
		       cma_device_atfork_child);

	if (version < 0)
		init_errno = ENODEV; /* rdma_ucm is not loaded */
	else if (version != RDMA_USER_CM_ABI_VERSION)
		init_errno = ENOSYS; /* a kernel ABI we do not speak */
}

int cma_init(void)
{
	pthread_once(&init_once, cma_init_once);
	return init_errno ? cma_err(init_errno) : 0;
}

/* libibverbs hands out the same ibv_device for as long as a device lives. */
static struct cma_device *cma_find_ibdev_locked(struct ibv_device *ibdev)
{
	int i;

	for (i = 0; i < dev_count; i++)
		if (devs[i]->ibdev == ibdev)
			return devs[i];
	return NULL;
}

/* Give back what we hold on a device that is gone; it is never reopened. */
static void cma_device_close_locked(struct cma_device *dev)
{
	if (dev->pd)
		ibv_dealloc_pd(dev->pd);
	dev->pd = NULL;
	if (dev->verbs)
		ibv_close_device(dev->verbs);
	dev->verbs = NULL;
}

static void cma_device_set_gone_locked(struct cma_device *dev)
{
	dev->gone = true;
	if (!dev->refcnt)
		cma_device_close_locked(dev);
}

/* Entries whose device is not in libibverbs' current list are gone. */
static void cma_mark_missing_locked(struct ibv_device **list, int n)
{
	int i, j;

	for (i = 0; i < dev_count; i++) {
		if (devs[i]->gone)
			continue;
		for (j = 0; j < n && list[j] != devs[i]->ibdev; j++)
			;
		if (j == n)
			cma_device_set_gone_locked(devs[i]);
	}
}

static int cma_add_device_locked(struct ibv_device *ibdev)
{
	struct cma_device **grown, *dev;

	dev = calloc(1, sizeof(*dev));
	grown = realloc(devs, sizeof(*devs) * ((size_t)dev_count + 1));
	if (!dev || !grown) {
		free(dev);
		if (grown)
			devs = grown;
		return cma_err(ENOMEM);
	}
	devs = grown;
	dev->ibdev = ibdev;
	dev->guid = ibv_get_device_guid(ibdev);
	devs[dev_count++] = dev;
	return 0;
}

/* Hold on to a list for the life of the process (see below). */
static void cma_keep_list_locked(struct ibv_device **list)
{
	struct ibv_device ***grown;

	grown = realloc(kept_lists,
			sizeof(*kept_lists) * ((size_t)kept_count + 1));
	if (!grown)
		return; /* the list stays allocated, only unrecorded */
	kept_lists = grown;
	kept_lists[kept_count++] = list;
}

/*
 * Append devices that appeared since the last scan.  A device list from
 * libibverbs keeps its devices alive, so a list that contributed a device is
 * kept for the life of the process; one that added nothing is freed.
 */
static int cma_rescan_devices(void)
{
	struct ibv_device **list;
	bool added = false;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list)
		return -1;
	cma_mark_missing_locked(list, n);
	for (i = 0; i < n; i++) {
		if (cma_find_ibdev_locked(list[i]))
			continue;
		if (cma_add_device_locked(list[i]))
			break;
		added = true;
	}
	if (added)
		cma_keep_list_locked(list);
	else
		ibv_free_device_list(list);
	return 0;
}

static int cma_device_open(struct cma_device *dev)
{
	struct ibv_device_attr attr;

	if (dev->verbs)
		return 0;
	dev->verbs = ibv_open_device(dev->ibdev);
	if (!dev->verbs)
		return -1;
	if (ibv_query_device(dev->verbs, &attr)) {
		ibv_close_device(dev->verbs);
		dev->verbs = NULL;
		return -1;
	}
	dev->max_initiator_depth =
		(uint8_t)(attr.max_qp_init_rd_atom > 0xfe
				  ? 0xfe
				  : attr.max_qp_init_rd_atom);
	dev->max_responder_resources =
		(uint8_t)(attr.max_qp_rd_atom > 0xfe ? 0xfe
						     : attr.max_qp_rd_atom);
	dev->is_iwarp = dev->ibdev->transport_type == IBV_TRANSPORT_IWARP;
	return 0;
}

/* The live device with this GUID: never one that was removed. */
static struct cma_device *cma_find_guid_locked(__be64 guid)
{
	int i;

	for (i = 0; i < dev_count; i++)
		if (devs[i]->guid == guid && !devs[i]->removed &&
		    !devs[i]->gone)
			return devs[i];
	return NULL;
}

struct cma_device *cma_device_get_by_guid(__be64 guid)
{
	struct cma_device *dev;

	pthread_mutex_lock(&dev_lock);
	dev = cma_find_guid_locked(guid);
	if (!dev && !cma_rescan_devices())
		dev = cma_find_guid_locked(guid);
	if (dev && cma_device_open(dev))
		dev = NULL;
	else if (dev)
		dev->refcnt++;
	else
		errno = ENODEV;
	pthread_mutex_unlock(&dev_lock);
	return dev;
}

void cma_device_put(struct cma_device *dev)
{
	if (!dev)
		return;
	pthread_mutex_lock(&dev_lock);
	if (--dev->refcnt == 0 && (dev->removed || dev->gone))
		cma_device_set_gone_locked(dev);
	pthread_mutex_unlock(&dev_lock);
}

void cma_device_mark_removed(struct cma_device *dev)
{
	pthread_mutex_lock(&dev_lock);
	dev->removed = true;
	pthread_mutex_unlock(&dev_lock);
}

bool cma_device_port_is_roce(struct cma_device *dev, uint8_t port)
{
	struct ibv_port_attr attr;
	uint64_t bit = 1ULL << (port & 63);
	bool roce;

	if (!port || port > 63)
		return false;
	/* Asked for every QP and p2p resolution: once known, no lock. */
	if (__atomic_load_n(&dev->eth_ports_known, __ATOMIC_ACQUIRE) & bit)
		return __atomic_load_n(&dev->eth_ports, __ATOMIC_RELAXED) & bit;
	pthread_mutex_lock(&dev_lock);
	if (!(dev->eth_ports_known & bit) && dev->verbs &&
	    !ibv_query_port(dev->verbs, port, &attr)) {
		if (attr.link_layer == IBV_LINK_LAYER_ETHERNET)
			__atomic_or_fetch(&dev->eth_ports, bit,
					  __ATOMIC_RELAXED);
		/* After the link layer: a reader that sees this sees it. */
		__atomic_or_fetch(&dev->eth_ports_known, bit, __ATOMIC_RELEASE);
	}
	roce = dev->eth_ports & bit;
	pthread_mutex_unlock(&dev_lock);
	return roce;
}

struct ibv_pd *cma_device_default_pd(struct cma_device *dev)
{
	struct ibv_pd *pd;

	pthread_mutex_lock(&dev_lock);
	if (!dev->pd)
		dev->pd = ibv_alloc_pd(dev->verbs);
	pd = dev->pd;
	pthread_mutex_unlock(&dev_lock);
	return pd;
}

CMA_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	int i, n = 0;

	if (cma_init())
		goto fail;
	pthread_mutex_lock(&dev_lock);
	if (cma_rescan_devices()) {
		pthread_mutex_unlock(&dev_lock);
		goto fail;
	}
	list = calloc((size_t)dev_count + 1, sizeof(*list));
	if (!list) {
		pthread_mutex_unlock(&dev_lock);
		errno = ENOMEM;
		goto fail;
	}
	for (i = 0; i < dev_count; i++)
		if (!devs[i]->removed && !devs[i]->gone &&
		    !cma_device_open(devs[i]))
			list[n++] = devs[i]->verbs;
	pthread_mutex_unlock(&dev_lock);
	if (num_devices)
		*num_devices = n;
	return list;
fail:
	if (num_devices)
		*num_devices = 0;
	return NULL;
}

/* The contexts stay open for the ids that use them; only the array goes. */
CMA_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}
