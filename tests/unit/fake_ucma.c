// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The fake rdma_cm device: see fake_ucma.h.  All state is under one lock,
 * so test threads may queue events while the library reads them.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "cm/cma.h"
#include "fake_ucma.h"
#include "cm/test_hooks.h"

#define FAKE_MAX_IDS 32768
#define FAKE_MAX_FDS 64
/* How long a blocking GET_EVENT waits for a test thread before failing. */
#define FAKE_BLOCK_LIMIT_S 10

struct fake_event {
	struct fake_event *next;
	uint32_t kid; /* counted on this id when read */
	uint32_t mc; /* and on this group, for multicast events */
	struct rdma_ucm_event_resp resp;
};

struct fake_dev {
	int fd; /* -1: slot free */
	struct fake_event *head, **tail;
	int queued;
	bool signalled; /* the eventfd is readable */
	bool stale; /* opened before fake_ucma_new_creds: writes refused */
};

struct fake_mc {
	uint32_t kid;
	uint64_t uid;
	uint32_t events_reported;
	bool live;
};

static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
/* The thread whose GET_EVENT returned the last event (fake_lock). */
static pthread_t last_reader;
static pthread_cond_t fake_cond = PTHREAD_COND_INITIALIZER;
static struct fake_kid kids[FAKE_MAX_IDS]; /* handle n is kids[n] */
static uint32_t nkids;
static struct fake_mc mcs[FAKE_MAX_IDS];
static uint32_t nmcs;
static struct fake_dev devs[FAKE_MAX_FDS];
static struct fake_cmd *log_cmds;
static int log_len, log_cap;
static uint32_t fail_cmd;
static int fail_err;
static size_t short_len;
static fake_ucma_hook_fn hook;
static struct fake_ucma_route route;
static bool held; /* fake_ucma_hold: queued events are not visible yet */
/* Since fake_ucma_new_creds: an id answers only on its own file. */
static bool strict_files;

/* Commands the kernel answers at once with an event (fake_ucma_answer). */
#define FAKE_MAX_ANSWERS 4
static struct {
	uint32_t cmd, event;
	int status;
} answers[FAKE_MAX_ANSWERS];
static int nanswers;

/* --- device fds ------------------------------------------------------------ */

static struct fake_dev *fake_dev_of(int fd)
{
	int i;

	for (i = 0; i < FAKE_MAX_FDS; i++)
		if (devs[i].fd == fd && fd >= 0)
			return &devs[i];
	return NULL;
}

/*
 * The eventfd is readable exactly while the queue holds an event (and
 * the test is not holding events back).
 */
static void fake_dev_signal(struct fake_dev *dev)
{
	bool want = dev->queued > 0 && !held;
	uint64_t v = 1;

	if (want == dev->signalled)
		return;
	if (want && write(dev->fd, &v, sizeof(v)) != sizeof(v))
		abort();
	if (!want && read(dev->fd, &v, sizeof(v)) != sizeof(v))
		abort();
	dev->signalled = want;
}

static void fake_dev_drop_events(struct fake_dev *dev)
{
	struct fake_event *e;

	while ((e = dev->head)) {
		dev->head = e->next;
		free(e);
	}
	dev->tail = &dev->head;
	dev->queued = 0;
	dev->signalled = false;
}

static int fake_open(bool hidden)
{
	struct fake_dev *dev;
	int fd;

	(void)hidden; /* the fake's fds stay where eventfd puts them */
	fd = eventfd(0, EFD_CLOEXEC);
	if (fd < 0)
		return -1;
	pthread_mutex_lock(&fake_lock);
	/* A number the library closed and the system reused starts afresh. */
	dev = fake_dev_of(fd);
	for (int i = 0; !dev && i < FAKE_MAX_FDS; i++)
		if (devs[i].fd < 0)
			dev = &devs[i];
	if (!dev) {
		pthread_mutex_unlock(&fake_lock);
		close(fd);
		errno = EMFILE;
		return -1;
	}
	fake_dev_drop_events(dev);
	dev->fd = fd;
	dev->stale = false;
	pthread_mutex_unlock(&fake_lock);
	return fd;
}

/* The kernel backend's ucma_rehome_fd, on the model too. */
static int fake_rehome(int fd, int newfd)
{
	struct fake_dev *from, *to, *gone;
	int old = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	uint32_t h;

	if (old < 0)
		return -1;
	pthread_mutex_lock(&fake_lock);
	/* A number the library closed and the system reused. */
	gone = fake_dev_of(old);
	if (gone) {
		fake_dev_drop_events(gone);
		gone->fd = -1;
	}
	from = fake_dev_of(fd);
	to = fake_dev_of(newfd);
	if (!from || !to || dup3(newfd, fd, O_CLOEXEC) < 0) {
		pthread_mutex_unlock(&fake_lock);
		close(old);
		errno = EBADF;
		return -1;
	}
	close(newfd);
	from->fd = old;
	to->fd = fd;
	for (h = 1; h <= nkids; h++) {
		if (kids[h].fd == fd)
			kids[h].fd = old;
		else if (kids[h].fd == newfd)
			kids[h].fd = fd;
	}
	pthread_mutex_unlock(&fake_lock);
	return old;
}

void fake_ucma_new_creds(void)
{
	pthread_mutex_lock(&fake_lock);
	for (int i = 0; i < FAKE_MAX_FDS; i++)
		if (devs[i].fd >= 0)
			devs[i].stale = true;
	strict_files = true;
	pthread_mutex_unlock(&fake_lock);
}

static int fake_abi_version(void)
{
	return RDMA_USER_CM_ABI_VERSION;
}

/* --- queued events ------------------------------------------------------- */

static struct rdma_ucm_event_resp *fake_queue(struct fake_dev *dev,
					      uint32_t kid, uint32_t mc)
{
	struct fake_event *e = calloc(1, sizeof(*e));

	if (!e)
		abort();
	e->kid = kid;
	e->mc = mc;
	*dev->tail = e;
	dev->tail = &e->next;
	dev->queued++;
	fake_dev_signal(dev);
	pthread_cond_broadcast(&fake_cond);
	return &e->resp;
}

static struct fake_kid *fake_kid_locked(uint32_t handle)
{
	if (handle == 0 || handle > nkids || !kids[handle].live)
		return NULL;
	return &kids[handle];
}

static struct fake_kid *fake_new_kid(int fd, uint64_t uid, uint16_t ps,
				     uint8_t qp_type)
{
	struct fake_kid *kid;

	if (nkids + 1 >= FAKE_MAX_IDS)
		return NULL;
	kid = &kids[++nkids];
	memset(kid, 0, sizeof(*kid));
	kid->handle = nkids;
	kid->uid = uid;
	kid->fd = fd;
	kid->ps = ps;
	kid->qp_type = qp_type;
	kid->live = true;
	return kid;
}

struct rdma_ucm_event_resp *fake_ucma_event(uint32_t handle, uint32_t event,
					    int status)
{
	struct rdma_ucm_event_resp *resp = NULL;
	struct fake_kid *kid;
	struct fake_dev *dev;

	pthread_mutex_lock(&fake_lock);
	kid = fake_kid_locked(handle);
	dev = kid ? fake_dev_of(kid->fd) : NULL;
	/*
	 * The kernel reports nothing of a request's id until an accept gives
	 * it the library's uid (ucma ignores events while the uid is 0).
	 */
	if (dev && kid->uid) {
		resp = fake_queue(dev, handle, 0);
		resp->uid = kid->uid;
		resp->id = handle;
		resp->event = event;
		resp->status = (uint32_t)status;
	}
	pthread_mutex_unlock(&fake_lock);
	return resp;
}

struct rdma_ucm_event_resp *fake_ucma_conn_req(uint32_t listen_handle,
					       uint32_t *child)
{
	struct rdma_ucm_event_resp *resp = NULL;
	struct fake_kid *listen, *kid = NULL;
	struct fake_dev *dev;

	pthread_mutex_lock(&fake_lock);
	listen = fake_kid_locked(listen_handle);
	dev = listen ? fake_dev_of(listen->fd) : NULL;
	if (dev)
		kid = fake_new_kid(listen->fd, 0, listen->ps, listen->qp_type);
	if (kid) {
		kid->src = listen->src;
		kid->route_resolved = true;
		/* The kernel counts the request on the listener. */
		resp = fake_queue(dev, listen_handle, 0);
		resp->uid = listen->uid;
		resp->id = kid->handle;
		resp->event = RDMA_CM_EVENT_CONNECT_REQUEST;
		*child = kid->handle;
	}
	pthread_mutex_unlock(&fake_lock);
	return resp;
}

struct rdma_ucm_event_resp *fake_ucma_mc_event(uint32_t mc_handle,
					       uint32_t event, int status)
{
	struct rdma_ucm_event_resp *resp = NULL;
	struct fake_kid *kid = NULL;
	struct fake_dev *dev = NULL;
	struct fake_mc *mc = NULL;

	pthread_mutex_lock(&fake_lock);
	if (mc_handle && mc_handle <= nmcs && mcs[mc_handle].live)
		mc = &mcs[mc_handle];
	if (mc)
		kid = fake_kid_locked(mc->kid);
	if (kid)
		dev = fake_dev_of(kid->fd);
	if (dev) {
		resp = fake_queue(dev, mc->kid, mc_handle);
		resp->uid = mc->uid;
		resp->id = mc_handle;
		resp->event = event;
		resp->status = (uint32_t)status;
	}
	pthread_mutex_unlock(&fake_lock);
	return resp;
}

uint32_t fake_ucma_last_mc(void)
{
	uint32_t n;

	pthread_mutex_lock(&fake_lock);
	n = nmcs;
	pthread_mutex_unlock(&fake_lock);
	return n;
}

int fake_ucma_queued(int fd)
{
	struct fake_dev *dev;
	int n;

	pthread_mutex_lock(&fake_lock);
	dev = fake_dev_of(fd);
	n = dev ? dev->queued : 0;
	pthread_mutex_unlock(&fake_lock);
	return n;
}

/* --- answering commands ------------------------------------------------- */

static void *fake_resp_ptr(const void *body, size_t off)
{
	uint64_t p;

	memcpy(&p, (const uint8_t *)body + off, sizeof(p));
	return (void *)(uintptr_t)p;
}

static uint32_t fake_u32(const void *body, size_t off)
{
	uint32_t v;

	memcpy(&v, (const uint8_t *)body + off, sizeof(v));
	return v;
}

/* Where each command names its id; SIZE_MAX: it names none. */
static size_t fake_handle_offset(uint32_t cmd)
{
	switch (cmd) {
	case RDMA_USER_CM_CMD_DESTROY_ID:
		return offsetof(struct rdma_ucm_destroy_id, id);
	case RDMA_USER_CM_CMD_BIND:
		return offsetof(struct rdma_ucm_bind, id);
	case RDMA_USER_CM_CMD_RESOLVE_ADDR:
		return offsetof(struct rdma_ucm_resolve_addr, id);
	case RDMA_USER_CM_CMD_RESOLVE_ROUTE:
		return offsetof(struct rdma_ucm_resolve_route, id);
	case RDMA_USER_CM_CMD_QUERY_ROUTE:
	case RDMA_USER_CM_CMD_QUERY:
		return offsetof(struct rdma_ucm_query, id);
	case RDMA_USER_CM_CMD_CONNECT:
		return offsetof(struct rdma_ucm_connect, id);
	case RDMA_USER_CM_CMD_LISTEN:
		return offsetof(struct rdma_ucm_listen, id);
	case RDMA_USER_CM_CMD_ACCEPT:
		return offsetof(struct rdma_ucm_accept, id);
	case RDMA_USER_CM_CMD_REJECT:
		return offsetof(struct rdma_ucm_reject, id);
	case RDMA_USER_CM_CMD_DISCONNECT:
		return offsetof(struct rdma_ucm_disconnect, id);
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:
		return offsetof(struct rdma_ucm_init_qp_attr, id);
	case RDMA_USER_CM_CMD_SET_OPTION:
		return offsetof(struct rdma_ucm_set_option, id);
	case RDMA_USER_CM_CMD_NOTIFY:
		return offsetof(struct rdma_ucm_notify, id);
	case RDMA_USER_CM_CMD_JOIN_MCAST:
		return offsetof(struct rdma_ucm_join_mcast, id);
	case RDMA_USER_CM_CMD_LEAVE_MCAST:
		return offsetof(struct rdma_ucm_destroy_id, id);
	case RDMA_USER_CM_CMD_MIGRATE_ID:
		return offsetof(struct rdma_ucm_migrate_id, id);
	}
	return SIZE_MAX;
}

/* The response buffer of commands that have one, else NULL. */
static void *fake_response_of(uint32_t cmd, const void *body)
{
	switch (cmd) {
	case RDMA_USER_CM_CMD_CREATE_ID:
		return fake_resp_ptr(
			body, offsetof(struct rdma_ucm_create_id, response));
	case RDMA_USER_CM_CMD_DESTROY_ID:
	case RDMA_USER_CM_CMD_LEAVE_MCAST:
		return fake_resp_ptr(
			body, offsetof(struct rdma_ucm_destroy_id, response));
	case RDMA_USER_CM_CMD_QUERY_ROUTE:
	case RDMA_USER_CM_CMD_QUERY:
		return fake_resp_ptr(body,
				     offsetof(struct rdma_ucm_query, response));
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:
		return fake_resp_ptr(
			body, offsetof(struct rdma_ucm_init_qp_attr, response));
	case RDMA_USER_CM_CMD_GET_EVENT:
		return fake_resp_ptr(
			body, offsetof(struct rdma_ucm_get_event, response));
	case RDMA_USER_CM_CMD_JOIN_MCAST:
		return fake_resp_ptr(
			body, offsetof(struct rdma_ucm_join_mcast, response));
	case RDMA_USER_CM_CMD_MIGRATE_ID:
		return fake_resp_ptr(
			body, offsetof(struct rdma_ucm_migrate_id, response));
	}
	return NULL;
}

static void fake_copy_sockaddr(struct sockaddr_storage *dst, const void *src,
			       size_t len)
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst, src, len < sizeof(*dst) ? len : sizeof(*dst));
}

static int fake_create_id(int fd, const struct rdma_ucm_create_id *c,
			  struct rdma_ucm_create_id_resp *resp)
{
	struct fake_kid *kid = fake_new_kid(fd, c->uid, c->ps, c->qp_type);

	if (!kid)
		return ENOMEM;
	resp->id = kid->handle;
	return 0;
}

/*
 * Events still queued for a destroyed id (or a left group, @mc != 0) go
 * with it, as in the kernel.
 */
static void fake_forget_events(struct fake_dev *dev, uint32_t handle,
			       uint32_t mc)
{
	struct fake_event **pp = &dev->head, *e;
	struct fake_kid *child;

	while ((e = *pp)) {
		if (mc ? e->mc == mc : e->kid == handle) {
			/*
			 * A request nobody read dies with its listener, as
			 * ucma_cleanup_ctx_events destroys its id.
			 */
			child = NULL;
			if (!mc &&
			    e->resp.event == RDMA_CM_EVENT_CONNECT_REQUEST)
				child = fake_kid_locked(e->resp.id);
			if (child && child->handle != handle)
				child->live = false;
			*pp = e->next;
			free(e);
			dev->queued--;
			if (dev->queued == 0)
				fake_dev_signal(dev);
		} else {
			pp = &e->next;
		}
	}
	dev->tail = pp;
}

static int fake_destroy_id(struct fake_kid *kid,
			   struct rdma_ucm_destroy_id_resp *resp)
{
	struct fake_dev *dev = fake_dev_of(kid->fd);

	if (dev)
		fake_forget_events(dev, kid->handle, 0);
	resp->events_reported = kid->events_reported;
	kid->live = false;
	return 0;
}

static void fake_fill_route(const struct fake_kid *kid,
			    struct rdma_ucm_query_route_resp *resp)
{
	resp->node_guid = route.node_guid;
	resp->port_num = route.node_guid ? route.port_num : 0;
	memcpy(&resp->src_addr, &kid->src,
	       kid->src.ss_family ? sizeof(resp->src_addr) : 0);
	memcpy(&resp->dst_addr, &kid->dst,
	       kid->dst.ss_family ? sizeof(resp->dst_addr) : 0);
	memcpy(resp->ib_route[0].sgid, route.sgid, 16);
	memcpy(resp->ib_route[0].dgid, route.dgid, 16);
	resp->ib_route[0].pkey = route.pkey;
	resp->num_paths = kid->route_resolved ? 1 : 0;
}

static void fake_fill_query(const struct fake_kid *kid, uint32_t option,
			    void *out, size_t len)
{
	struct rdma_ucm_query_addr_resp a = {0};

	if (option != RDMA_USER_CM_QUERY_ADDR &&
	    option != RDMA_USER_CM_QUERY_GID)
		return; /* no paths: IP ids never ask, AF_IB tests script it */
	a.node_guid = route.node_guid;
	a.port_num = route.port_num;
	a.pkey = route.pkey;
	a.src_size = sizeof(a.src_addr);
	a.dst_size = sizeof(a.dst_addr);
	memcpy(&a.src_addr, &kid->src, sizeof(kid->src));
	memcpy(&a.dst_addr, &kid->dst, sizeof(kid->dst));
	memcpy(out, &a, len < sizeof(a) ? len : sizeof(a));
}

/* What the kernel's CM would hand for each state of a connected QP. */
static void fake_fill_qp_attr(const struct fake_kid *kid, uint32_t state,
			      struct ib_uverbs_qp_attr *attr)
{
	attr->qp_state = state;
	attr->port_num = route.port_num;
	switch (state) {
	case IBV_QPS_INIT:
		attr->qp_attr_mask =
			IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (kid->qp_type == IBV_QPT_UD) {
			attr->qp_attr_mask |= IBV_QP_QKEY;
			attr->qkey = RDMA_UDP_QKEY;
		} else {
			attr->qp_attr_mask |= IBV_QP_ACCESS_FLAGS;
		}
		break;
	case IBV_QPS_RTR:
		attr->qp_attr_mask = IBV_QP_STATE | IBV_QP_AV |
				     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				     IBV_QP_MIN_RNR_TIMER;
		attr->path_mtu = IBV_MTU_1024;
		attr->dest_qp_num = kid->has_peer_qpn ? kid->peer_qpn : 0x77;
		attr->rq_psn = FAKE_UCMA_RQ_PSN(kid->handle);
		attr->max_dest_rd_atomic = 4;
		break;
	case IBV_QPS_RTS:
		attr->qp_attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN |
				     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		attr->max_rd_atomic = 4;
		attr->sq_psn = FAKE_UCMA_SQ_PSN(kid->handle);
		attr->timeout = 14;
		attr->retry_cnt = 7;
		attr->rnr_retry = 7;
		break;
	default:
		attr->qp_attr_mask = IBV_QP_STATE;
	}
}

/* Wait (lock held) until the fd has an event; EAGAIN if non-blocking. */
static int fake_wait_event(struct fake_dev *dev)
{
	struct timespec limit;
	int flags = fcntl(dev->fd, F_GETFL);

	clock_gettime(CLOCK_REALTIME, &limit);
	limit.tv_sec += FAKE_BLOCK_LIMIT_S;
	while (!dev->queued || held) {
		if (flags >= 0 && (flags & O_NONBLOCK))
			return EAGAIN;
		if (pthread_cond_timedwait(&fake_cond, &fake_lock, &limit)) {
			fprintf(stderr,
				"fake_ucma: a blocking GET_EVENT on fd"
				" %d would wait for ever\n",
				dev->fd);
			abort();
		}
	}
	return 0;
}

static int fake_get_event(struct fake_dev *dev, struct rdma_ucm_event_resp *out)
{
	struct fake_event *e;
	struct fake_kid *kid;
	int err = fake_wait_event(dev);

	if (err)
		return err;
	e = dev->head;
	dev->head = e->next;
	if (!dev->head)
		dev->tail = &dev->head;
	dev->queued--;
	fake_dev_signal(dev);
	kid = fake_kid_locked(e->kid);
	if (kid)
		kid->events_reported++;
	if (e->mc && e->mc <= nmcs)
		mcs[e->mc].events_reported++;
	*out = e->resp;
	free(e);
	return 0;
}

static int fake_join(struct fake_kid *kid, const struct rdma_ucm_join_mcast *c,
		     struct rdma_ucm_create_id_resp *resp)
{
	struct fake_mc *mc;

	if (nmcs + 1 >= FAKE_MAX_IDS)
		return ENOMEM;
	mc = &mcs[++nmcs];
	mc->kid = kid->handle;
	mc->uid = c->uid;
	mc->events_reported = 0;
	mc->live = true;
	resp->id = nmcs;
	return 0;
}

static int fake_leave(uint32_t handle, struct rdma_ucm_destroy_id_resp *resp)
{
	struct fake_kid *kid;
	struct fake_dev *dev;

	if (!handle || handle > nmcs || !mcs[handle].live)
		return ENOENT;
	mcs[handle].live = false;
	/* The kernel drops the group's unread events (ucma_leave_multicast). */
	kid = fake_kid_locked(mcs[handle].kid);
	dev = kid ? fake_dev_of(kid->fd) : NULL;
	if (dev)
		fake_forget_events(dev, 0, handle);
	resp->events_reported = mcs[handle].events_reported;
	return 0;
}

/*
 * The kernel moves a migrated id's events without waking the new fd's
 * pollers.  An eventfd cannot be readable without waking them, so this
 * mode leaves the new device unsignalled altogether (stricter: not even a
 * new poll sees them) until its next event or read.
 */
static bool migrate_quietly;

void fake_ucma_migrate_quietly(bool quiet)
{
	pthread_mutex_lock(&fake_lock);
	migrate_quietly = quiet;
	pthread_mutex_unlock(&fake_lock);
}

/* Move an id and its queued events to the device the command came on. */
static int fake_migrate(struct fake_kid *kid, struct fake_dev *to,
			struct rdma_ucm_migrate_resp *resp)
{
	struct fake_dev *from = fake_dev_of(kid->fd);
	struct fake_event **pp, *e;

	if (from && from != to) {
		pp = &from->head;
		while ((e = *pp)) {
			if (e->kid != kid->handle) {
				pp = &e->next;
				continue;
			}
			*pp = e->next;
			from->queued--;
			if (!from->queued)
				fake_dev_signal(from);
			e->next = NULL;
			*to->tail = e;
			to->tail = &e->next;
			to->queued++;
			if (!migrate_quietly)
				fake_dev_signal(to);
		}
		from->tail = pp;
	}
	kid->fd = to->fd;
	resp->events_reported = kid->events_reported;
	return 0;
}

/* The model's answer to one command (lock held): 0 or an errno. */
static int fake_answer(struct fake_dev *dev, uint32_t cmd, const void *body,
		       struct fake_kid *kid, void *out, size_t out_len)
{
	if (cmd == RDMA_USER_CM_CMD_CREATE_ID)
		return fake_create_id(dev->fd, body, out);
	if (cmd == RDMA_USER_CM_CMD_GET_EVENT)
		return fake_get_event(dev, out);
	if (cmd == RDMA_USER_CM_CMD_LEAVE_MCAST)
		return fake_leave(fake_u32(body, fake_handle_offset(cmd)), out);
	if (!kid)
		return EINVAL; /* the kernel's answer to an unknown handle */
	/* The kernel looks an id up on the file the command names. */
	if (strict_files &&
	    kid->fd !=
		    (cmd == RDMA_USER_CM_CMD_MIGRATE_ID
			     ? (int)((const struct rdma_ucm_migrate_id *)body)
				       ->fd
			     : dev->fd))
		return EINVAL;
	/* A request its sender gave up: no QP attributes, no accept. */
	if (kid->dead && (cmd == RDMA_USER_CM_CMD_INIT_QP_ATTR ||
			  cmd == RDMA_USER_CM_CMD_ACCEPT))
		return EINVAL;
	switch (cmd) {
	case RDMA_USER_CM_CMD_DESTROY_ID:
		return fake_destroy_id(kid, out);
	case RDMA_USER_CM_CMD_BIND: {
		const struct rdma_ucm_bind *c = body;

		fake_copy_sockaddr(&kid->src, &c->addr, c->addr_size);
		return 0;
	}
	case RDMA_USER_CM_CMD_RESOLVE_ADDR: {
		const struct rdma_ucm_resolve_addr *c = body;

		if (c->src_size)
			fake_copy_sockaddr(&kid->src, &c->src_addr,
					   c->src_size);
		fake_copy_sockaddr(&kid->dst, &c->dst_addr, c->dst_size);
		return 0;
	}
	case RDMA_USER_CM_CMD_RESOLVE_ROUTE:
		kid->route_resolved = true;
		return 0;
	case RDMA_USER_CM_CMD_QUERY_ROUTE:
		fake_fill_route(kid, out);
		return 0;
	case RDMA_USER_CM_CMD_QUERY:
		fake_fill_query(
			kid,
			fake_u32(body, offsetof(struct rdma_ucm_query, option)),
			out, out_len);
		return 0;
	case RDMA_USER_CM_CMD_LISTEN:
		kid->listening = true;
		return 0;
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:
		fake_fill_qp_attr(
			kid,
			fake_u32(body, offsetof(struct rdma_ucm_init_qp_attr,
						qp_state)),
			out);
		return 0;
	case RDMA_USER_CM_CMD_JOIN_MCAST:
		return fake_join(kid, body, out);
	case RDMA_USER_CM_CMD_MIGRATE_ID:
		return fake_migrate(kid, dev, out);
	case RDMA_USER_CM_CMD_ACCEPT:
		/* A request's id learns its uid from the accept. */
		kid->uid = ((const struct rdma_ucm_accept *)body)->uid;
		return 0;
	}
	return 0; /* connect, accept, reject, disconnect, notify, options */
}

static void fake_log(const struct fake_cmd *c)
{
	if (log_len == log_cap) {
		int cap = log_cap ? log_cap * 2 : 64;
		struct fake_cmd *grown =
			realloc(log_cmds, sizeof(*log_cmds) * (size_t)cap);

		if (!grown)
			abort();
		log_cmds = grown;
		log_cap = cap;
	}
	log_cmds[log_len++] = *c;
}

/* fake_lock held: the standing answer to @cmd on @kid, if there is one. */
static void fake_auto_answer(uint32_t cmd, struct fake_kid *kid)
{
	struct rdma_ucm_event_resp *resp;
	struct fake_dev *dev = kid ? fake_dev_of(kid->fd) : NULL;
	int i;

	for (i = 0; dev && i < nanswers; i++) {
		if (answers[i].cmd != cmd)
			continue;
		resp = fake_queue(dev, kid->handle, 0);
		resp->uid = kid->uid;
		resp->id = kid->handle;
		resp->event = answers[i].event;
		resp->status = (uint32_t)answers[i].status;
		return;
	}
}

/*
 * One command a test stops before the model sees it (fake_ucma_pause):
 * its own lock, so that other threads' commands go on meanwhile.
 */
static pthread_mutex_t pause_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pause_cond = PTHREAD_COND_INITIALIZER;
static uint32_t pause_cmd, pause_handle;
static bool pause_armed, pause_reached;

static void fake_pause_point(const struct fake_cmd *c)
{
	pthread_mutex_lock(&pause_lock);
	if (pause_armed && c->cmd == pause_cmd && c->handle == pause_handle) {
		pause_reached = true;
		pthread_cond_broadcast(&pause_cond);
		while (pause_armed)
			pthread_cond_wait(&pause_cond, &pause_lock);
	}
	pthread_mutex_unlock(&pause_lock);
}

void fake_ucma_pause(uint32_t cmd, uint32_t handle)
{
	pthread_mutex_lock(&pause_lock);
	pause_cmd = cmd;
	pause_handle = handle;
	pause_reached = false;
	pause_armed = true;
	pthread_mutex_unlock(&pause_lock);
}

void fake_ucma_wait_paused(void)
{
	pthread_mutex_lock(&pause_lock);
	while (!pause_reached)
		pthread_cond_wait(&pause_cond, &pause_lock);
	pthread_mutex_unlock(&pause_lock);
}

void fake_ucma_resume(void)
{
	pthread_mutex_lock(&pause_lock);
	pause_armed = false;
	pthread_cond_broadcast(&pause_cond);
	pthread_mutex_unlock(&pause_lock);
}

static ssize_t fake_write(int fd, const void *buf, size_t len)
{
	const struct rdma_ucm_cmd_hdr *hdr = buf;
	const void *body = hdr + 1;
	struct fake_cmd c = {
		.cmd = hdr->cmd, .fd = fd, .hdr = *hdr, .len = len};
	size_t off = fake_handle_offset(hdr->cmd);
	void *out = fake_response_of(hdr->cmd, body);
	struct fake_dev *dev;
	int err;

	memcpy(c.body, body,
	       len - sizeof(*hdr) < sizeof(c.body) ? len - sizeof(*hdr)
						   : sizeof(c.body));
	if (off != SIZE_MAX)
		c.handle = fake_u32(body, off);
	fake_pause_point(&c);
	pthread_mutex_lock(&fake_lock);
	dev = fake_dev_of(fd);
	if (!dev) {
		pthread_mutex_unlock(&fake_lock);
		errno = EBADF;
		return -1;
	}
	if (hdr->cmd != RDMA_USER_CM_CMD_GET_EVENT)
		fake_log(&c);
	/* The kernel's check of the credentials comes before all else. */
	err = dev->stale ? EACCES
	      : hook	 ? hook(&c, out, out ? hdr->out : 0)
			 : FAKE_UCMA_MODEL;
	if (err != FAKE_UCMA_MODEL) {
		/* answered by the test's hook */
	} else if (fail_err &&
		   (fail_cmd == hdr->cmd || fail_cmd == FAKE_UCMA_ANY_CMD)) {
		err = fail_err;
		fail_err = 0;
	} else {
		err = fake_answer(dev, hdr->cmd, body,
				  fake_kid_locked(c.handle), out, hdr->out);
		if (!err)
			fake_auto_answer(hdr->cmd, fake_kid_locked(c.handle));
	}
	if (!err && short_len) {
		len = short_len;
		short_len = 0;
	}
	if (!err && hdr->cmd == RDMA_USER_CM_CMD_GET_EVENT)
		last_reader = pthread_self();
	pthread_mutex_unlock(&fake_lock);
	if (err) {
		errno = err;
		return -1;
	}
	return (ssize_t)len;
}

/* --- set-up and inspection ----------------------------------------------- */

static const struct ucma_backend fake_backend = {
	.write = fake_write,
	.open = fake_open,
	.abi_version = fake_abi_version,
	.rehome = fake_rehome,
};

void fake_ucma_install(void)
{
	int i;

	pthread_mutex_lock(&fake_lock);
	for (i = 0; i < FAKE_MAX_FDS; i++) {
		fake_dev_drop_events(&devs[i]);
		devs[i].fd = -1;
		devs[i].stale = false;
	}
	/*
	 * Only the slots handed out: a slot is filled when it is handed out
	 * and none past nkids/nmcs is read, and clearing all 2 x 32768 made
	 * install the fuzz targets' main cost (they install per input).
	 */
	memset(kids, 0, sizeof(kids[0]) * (nkids + 1));
	memset(mcs, 0, sizeof(mcs[0]) * (nmcs + 1));
	nkids = nmcs = 0;
	log_len = 0;
	fail_err = 0;
	short_len = 0;
	hook = NULL;
	nanswers = 0;
	held = false;
	strict_files = false;
	memset(&route, 0, sizeof(route));
	route.port_num = 1;
	route.pkey = 0xffff;
	pthread_mutex_unlock(&fake_lock);
	ucma_set_backend(&fake_backend);
}

void fake_ucma_uninstall(void)
{
	/* The library's service thread may be reading a served channel. */
	cma_service_stop();
	ucma_set_backend(NULL);
	pthread_mutex_lock(&fake_lock);
	/* The library closed (or will close) the fds: only forget them. */
	for (int i = 0; i < FAKE_MAX_FDS; i++) {
		fake_dev_drop_events(&devs[i]);
		devs[i].fd = -1;
	}
	free(log_cmds);
	log_cmds = NULL;
	log_len = log_cap = 0;
	pthread_mutex_unlock(&fake_lock);
}

bool fake_ucma_last_read_by(pthread_t thread)
{
	bool ret;

	pthread_mutex_lock(&fake_lock);
	ret = pthread_equal(last_reader, thread);
	pthread_mutex_unlock(&fake_lock);
	return ret;
}

void fake_ucma_hold(void)
{
	int i;

	pthread_mutex_lock(&fake_lock);
	held = true;
	for (i = 0; i < FAKE_MAX_FDS; i++)
		if (devs[i].fd >= 0)
			fake_dev_signal(&devs[i]);
	pthread_mutex_unlock(&fake_lock);
}

void fake_ucma_release(void)
{
	int i;

	pthread_mutex_lock(&fake_lock);
	held = false;
	for (i = 0; i < FAKE_MAX_FDS; i++)
		if (devs[i].fd >= 0)
			fake_dev_signal(&devs[i]);
	pthread_cond_broadcast(&fake_cond);
	pthread_mutex_unlock(&fake_lock);
}

void fake_ucma_set_route(const struct fake_ucma_route *r)
{
	pthread_mutex_lock(&fake_lock);
	route = *r;
	pthread_mutex_unlock(&fake_lock);
}

struct fake_kid *fake_ucma_kid(uint32_t handle)
{
	struct fake_kid *kid;

	pthread_mutex_lock(&fake_lock);
	kid = handle && handle <= nkids ? &kids[handle] : NULL;
	pthread_mutex_unlock(&fake_lock);
	return kid;
}

bool fake_ucma_kid_live(uint32_t handle, unsigned int wait_ms)
{
	struct timespec pause = {.tv_nsec = 1000000};
	bool live;

	for (;;) {
		pthread_mutex_lock(&fake_lock);
		live = handle && handle <= nkids && kids[handle].live;
		pthread_mutex_unlock(&fake_lock);
		if (!live || !wait_ms--)
			return live;
		nanosleep(&pause, NULL);
	}
}

struct fake_kid *fake_ucma_kid_of(const void *uid)
{
	struct fake_kid *kid = NULL;
	uint32_t i;

	pthread_mutex_lock(&fake_lock);
	for (i = nkids; i >= 1 && !kid; i--)
		if (kids[i].uid == (uint64_t)(uintptr_t)uid && kids[i].live)
			kid = &kids[i];
	pthread_mutex_unlock(&fake_lock);
	return kid;
}

void fake_ucma_kill_kid(uint32_t handle)
{
	pthread_mutex_lock(&fake_lock);
	if (handle && handle <= nkids)
		kids[handle].dead = true;
	pthread_mutex_unlock(&fake_lock);
}

int fake_ucma_ncmds(void)
{
	return log_len;
}

const struct fake_cmd *fake_ucma_cmd(int i)
{
	return i >= 0 && i < log_len ? &log_cmds[i] : NULL;
}

int fake_ucma_count(uint32_t cmd)
{
	int i, n = 0;

	pthread_mutex_lock(&fake_lock);
	for (i = 0; i < log_len; i++)
		n += log_cmds[i].cmd == cmd;
	pthread_mutex_unlock(&fake_lock);
	return n;
}

int fake_ucma_first_on(uint32_t cmd, uint32_t handle)
{
	int i, at = -1;

	pthread_mutex_lock(&fake_lock);
	for (i = 0; i < log_len && at < 0; i++)
		if (log_cmds[i].cmd == cmd && log_cmds[i].handle == handle)
			at = i;
	pthread_mutex_unlock(&fake_lock);
	return at;
}

bool fake_ucma_copy_last_on(uint32_t cmd, uint32_t handle, struct fake_cmd *out)
{
	bool found = false;
	int i;

	pthread_mutex_lock(&fake_lock);
	for (i = log_len - 1; i >= 0 && !found; i--)
		if (log_cmds[i].cmd == cmd && log_cmds[i].handle == handle) {
			*out = log_cmds[i];
			found = true;
		}
	pthread_mutex_unlock(&fake_lock);
	return found;
}

int fake_ucma_count_on(uint32_t cmd, uint32_t handle)
{
	int i, n = 0;

	pthread_mutex_lock(&fake_lock);
	for (i = 0; i < log_len; i++)
		n += log_cmds[i].cmd == cmd && log_cmds[i].handle == handle;
	pthread_mutex_unlock(&fake_lock);
	return n;
}

const struct fake_cmd *fake_ucma_last(uint32_t cmd)
{
	const struct fake_cmd *c = NULL;
	int i;

	pthread_mutex_lock(&fake_lock);
	for (i = log_len - 1; i >= 0 && !c; i--)
		if (log_cmds[i].cmd == cmd)
			c = &log_cmds[i];
	pthread_mutex_unlock(&fake_lock);
	return c;
}

void fake_ucma_clear_log(void)
{
	pthread_mutex_lock(&fake_lock);
	log_len = 0;
	pthread_mutex_unlock(&fake_lock);
}

void fake_ucma_answer(uint32_t cmd, uint32_t event, int status)
{
	pthread_mutex_lock(&fake_lock);
	if (nanswers == FAKE_MAX_ANSWERS)
		abort(); /* more than any test needs */
	answers[nanswers].cmd = cmd;
	answers[nanswers].event = event;
	answers[nanswers].status = status;
	nanswers++;
	pthread_mutex_unlock(&fake_lock);
}

void fake_ucma_fail_next(uint32_t cmd, int err)
{
	pthread_mutex_lock(&fake_lock);
	fail_cmd = cmd;
	fail_err = err;
	pthread_mutex_unlock(&fake_lock);
}

void fake_ucma_short_next(size_t n)
{
	pthread_mutex_lock(&fake_lock);
	short_len = n;
	pthread_mutex_unlock(&fake_lock);
}

void fake_ucma_set_hook(fake_ucma_hook_fn fn)
{
	pthread_mutex_lock(&fake_lock);
	hook = fn;
	pthread_mutex_unlock(&fake_lock);
}
