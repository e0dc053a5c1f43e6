// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rdma_resolve_addrinfo: rdma_getaddrinfo's translation kept on an id.
 *
 * Kernels up to at least 6.1 have no command to resolve address
 * information for an id (rdma-core 65 uses one of Linux 6.15 for RAI_SA),
 * so the library does the lookup itself:
 *   - a synchronous id (no channel) is done when the call returns, and the
 *     return value is the outcome;
 *   - an asynchronous id must not wait for a slow name server or the SA:
 *     the lookup runs in a short-lived detached thread of its own, and its
 *     outcome arrives as a library-made ADDRINFO_RESOLVED or ADDRINFO_ERROR
 *     event on the id's channel.  A thread per call, not a resident one:
 *     resolutions are rare, and most programs never make one.
 *
 * The argument checks (flags, RAI_SA's service and bound port) run in the
 * caller before anything starts: an error there is -1 with errno and no
 * event, as rdma-core documents.  rdma_destroy_id waits for the id's
 * lookups (cma_ai_cancel), which then discard their results.
 *
 * A failed resolution drops the previous result, so rdma_query_addrinfo()
 * never reports an answer to an older request.  Two resolutions running
 * at once on one id keep the result of whichever finishes last.
 */
#include <config.h>

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"

int (*cma_ai_resolver)(const char *node, const char *service,
		       const struct rdma_addrinfo *hints,
		       const union ibv_gid *sgid,
		       struct rdma_addrinfo **res) = cma_getaddrinfo_from;

/* What a lookup thread needs: copies, since the caller's may go away. */
struct cma_ai_request {
	struct cma_id_private *id_priv;
	struct cma_event *evt; /* allocated first: a result always has one */
	char *node, *service;
	struct rdma_addrinfo *hints; /* deep copy, NULL when none given */
	bool use_sgid; /* RAI_SA: from the id's port */
	union ibv_gid sgid;
};

static void cma_ai_request_free(struct cma_ai_request *req)
{
	free(req->node);
	free(req->service);
	rdma_freeaddrinfo(req->hints);
	free(req->evt);
	free(req);
}

static int cma_ai_strdup(char **dst, const char *src)
{
	*dst = NULL;
	if (src && !(*dst = strdup(src)))
		return cma_err(ENOMEM);
	return 0;
}

/* Store the outcome on the id (unless it is going away); no event. */
static bool cma_ai_store(struct cma_id_private *id_priv,
			 struct rdma_addrinfo *res)
{
	struct rdma_addrinfo *old = res;
	bool stored = false;

	pthread_mutex_lock(&id_priv->mut);
	if (!id_priv->ai_cancel) {
		old = id_priv->rare->resolved_ai;
		id_priv->rare->resolved_ai = res;
		stored = true;
	}
	pthread_mutex_unlock(&id_priv->mut);
	rdma_freeaddrinfo(old);
	return stored;
}

static void *cma_ai_thread(void *arg)
{
	struct cma_ai_request *req = arg;
	struct cma_id_private *id_priv = req->id_priv;
	struct rdma_addrinfo *res = NULL;
	int ret, err;

	ret = cma_ai_resolver(req->node, req->service, req->hints,
			      req->use_sgid ? &req->sgid : NULL, &res);
	err = errno;
	if (cma_ai_store(id_priv, ret ? NULL : res)) {
		if (ret) {
			req->evt->event.event = RDMA_CM_EVENT_ADDRINFO_ERROR;
			req->evt->event.status = -err;
		}
		cma_event_post(req->evt);
		req->evt = NULL;
	}
	/* Last: rdma_destroy_id may free the id once this reaches 0. */
	pthread_mutex_lock(&id_priv->mut);
	id_priv->ai_pending--;
	cma_id_wake_locked(id_priv);
	pthread_mutex_unlock(&id_priv->mut);
	cma_ai_request_free(req);
	return NULL;
}

static struct cma_ai_request *
cma_ai_request_new(struct cma_id_private *id_priv, const char *node,
		   const char *service, const struct rdma_addrinfo *hints)
{
	struct cma_ai_request *req = calloc(1, sizeof(*req));
	struct rdma_addrinfo one;

	if (!req) {
		errno = ENOMEM;
		return NULL;
	}
	req->id_priv = id_priv;
	if (cma_ai_strdup(&req->node, node) ||
	    cma_ai_strdup(&req->service, service))
		goto err;
	if (hints) {
		one = *hints;
		one.ai_next = NULL; /* hints are one entry, not a list */
		req->hints = cma_ai_dup_list(&one);
		if (!req->hints) {
			errno = ENOMEM;
			goto err;
		}
	}
	req->evt = cma_event_new(id_priv, RDMA_CM_EVENT_ADDRINFO_RESOLVED, 0);
	if (!req->evt)
		goto err;
	return req;
err:
	cma_ai_request_free(req);
	return NULL;
}

/* Start the lookup thread, with every signal blocked in it. */
static int cma_ai_start(struct cma_ai_request *req)
{
	struct cma_id_private *id_priv = req->id_priv;
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t thread;
	int ret;

	pthread_mutex_lock(&id_priv->mut);
	id_priv->ai_pending++;
	pthread_mutex_unlock(&id_priv->mut);

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&thread, &attr, cma_ai_thread, req);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!ret)
		return 0;

	pthread_mutex_lock(&id_priv->mut);
	id_priv->ai_pending--;
	cma_id_wake_locked(id_priv);
	pthread_mutex_unlock(&id_priv->mut);
	return cma_err(ret);
}

/*
 * The checks rdma-core makes before starting: RAI_SA looks up a service
 * (no node, not together with RAI_DNS) from the InfiniBand port the id is
 * bound to.
 */
static int cma_ai_check(struct cma_id_private *id_priv, const char *node,
			const char *service, const struct rdma_addrinfo *hints,
			union ibv_gid *sgid)
{
	struct cma_sa_svc svc;

	if (!hints || !(hints->ai_flags & RAI_SA))
		return 0;
	if (node || (hints->ai_flags & RAI_DNS))
		return cma_err(EOPNOTSUPP);
	if (cma_sa_svc_parse_service(service, &svc))
		return -1;
	if (!id_priv->id.verbs)
		return cma_err(EINVAL); /* not bound to a port */
	*sgid = id_priv->id.route.addr.addr.ibaddr.sgid;
	return 0;
}

CMA_EXPORT int rdma_resolve_addrinfo(struct rdma_cm_id *id, const char *node,
				     const char *service,
				     const struct rdma_addrinfo *hints)
{
	struct cma_id_private *id_priv = cma_id_priv(id);
	struct rdma_addrinfo *res = NULL;
	struct cma_ai_request *req;
	union ibv_gid sgid;
	bool use_sgid;
	int ret, err;

	if (cma_check_id(id))
		return -1;
	memset(&sgid, 0, sizeof(sgid));
	if (cma_ai_check(id_priv, node, service, hints, &sgid))
		return -1;
	/* Where the outcome is kept, made now: the lookup cannot fail to. */
	if (!cma_id_rare(id_priv))
		return -1;
	use_sgid = hints && (hints->ai_flags & RAI_SA);

	if (id_priv->sync) {
		ret = cma_ai_resolver(node, service, hints,
				      use_sgid ? &sgid : NULL, &res);
		err = errno;
		cma_ai_store(id_priv, ret ? NULL : res);
		return ret ? cma_err(err) : 0;
	}

	req = cma_ai_request_new(id_priv, node, service, hints);
	if (!req)
		return -1;
	req->use_sgid = use_sgid;
	req->sgid = sgid;
	if (cma_ai_start(req)) {
		err = errno;
		cma_ai_request_free(req);
		return cma_err(err);
	}
	return 0;
}

void cma_ai_cancel(struct cma_id_private *id_priv)
{
	pthread_mutex_lock(&id_priv->mut);
	id_priv->ai_cancel = true;
	while (id_priv->ai_pending)
		cma_id_wait_locked(id_priv);
	pthread_mutex_unlock(&id_priv->mut);
}
