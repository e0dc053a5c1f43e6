// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Endpoints: rdma_create_ep turns one rdma_getaddrinfo entry into an id
 * that is ready for rdma_listen (passive) or rdma_connect (active), and
 * rdma_destroy_ep takes it all down again.
 *
 * The id is synchronous (no channel), so each step below returns only
 * once the kernel has answered it, and a failure can be undone on the
 * spot: nothing is left allocated when rdma_create_ep fails.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "acm/acm.h"
#include "cma.h"

/* Time allowed for each of address and route resolution, as documented. */
#define CMA_EP_TIMEOUT_MS 2000

/*
 * rdma_getaddrinfo always fills both in; a hand-made entry may not, and
 * then gets the same defaults: one follows from the other, and RDMA_PS_TCP
 * with an RC QP when neither is given.
 */
static int cma_ep_types(const struct rdma_addrinfo *res,
			enum rdma_port_space *ps, enum ibv_qp_type *qp_type)
{
	*ps = (enum rdma_port_space)res->ai_port_space;
	if (!*ps)
		*ps = res->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
	if (res->ai_qp_type) {
		*qp_type = (enum ibv_qp_type)res->ai_qp_type;
		return 0;
	}
	return cma_ps_qp_type(*ps, qp_type);
}

/*
 * A listener: bind, and keep the QP attributes so that rdma_get_request
 * can give every accepted id its QP.  The copy is freed with the id.
 */
static int cma_ep_passive(struct cma_id_private *id_priv,
			  const struct rdma_addrinfo *res, struct ibv_pd *pd,
			  const struct ibv_qp_init_attr *attr)
{
	struct cma_id_rare *rare;
	struct cma_ep_listen *ep;

	if (rdma_bind_addr(&id_priv->id, res->ai_src_addr))
		return -1;
	if (!attr)
		return 0;
	rare = cma_id_rare(id_priv);
	if (!rare)
		return -1;
	ep = malloc(sizeof(*ep));
	if (!ep)
		return cma_err(ENOMEM);
	ep->attr = *attr;
	ep->attr.qp_type = id_priv->id.qp_type;
	ep->pd = pd;
	rare->ep_listen = ep;
	return 0;
}

/*
 * Path records from the caller replace a route query.  The kernel answers
 * the option with a ROUTE_RESOLVED event, which a synchronous id must
 * consume (and which brings the id's route up to date).
 */
static int cma_ep_set_route(struct cma_id_private *id_priv,
			    const struct rdma_addrinfo *res)
{
	if (rdma_set_option(&id_priv->id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
			    res->ai_route, res->ai_route_len))
		return -1;
	return cma_id_wait_sync(id_priv);
}

/* A client: resolve the address and the route, then make the QP. */
static int cma_ep_active(struct cma_id_private *id_priv,
			 const struct rdma_addrinfo *res, struct ibv_pd *pd,
			 struct ibv_qp_init_attr *attr)
{
	struct rdma_cm_id *id = &id_priv->id;

	if (rdma_resolve_addr(id, res->ai_src_addr, res->ai_dst_addr,
			      CMA_EP_TIMEOUT_MS))
		return -1;
	if (res->ai_route && res->ai_route_len) {
		/* A route from ACM that the kernel refuses is not fatal. */
		if (cma_ep_set_route(id_priv, res) &&
		    (!cma_acm_enabled() ||
		     rdma_resolve_route(id, CMA_EP_TIMEOUT_MS)))
			return -1;
	} else if (rdma_resolve_route(id, CMA_EP_TIMEOUT_MS)) {
		return -1;
	}
	/* Refused now, not by every rdma_connect the program tries later. */
	if (cma_check_priv_len(id_priv, id_priv->connect_len, CMA_PRIV_REQ))
		return -1;
	if (!attr)
		return 0;
	attr->qp_type = id->qp_type;
	return rdma_create_qp(id, pd, attr);
}

CMA_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
			      struct ibv_pd *pd,
			      struct ibv_qp_init_attr *qp_init_attr)
{
	struct cma_id_private *id_priv;
	struct cma_id_rare *rare;
	enum rdma_port_space ps;
	enum ibv_qp_type qp_type;
	struct rdma_cm_id *new_id;
	bool passive;
	int ret, err;

	if (!id || !res)
		return cma_err(EINVAL);
	/*
	 * An entry without the address this side needs is refused now,
	 * before there is a kernel id to undo.
	 */
	passive = res->ai_flags & RAI_PASSIVE;
	if (!(passive ? res->ai_src_addr : res->ai_dst_addr))
		return cma_err(EINVAL);
	if (cma_ep_types(res, &ps, &qp_type))
		return -1;
	if (cma_create_id_qp_type(NULL, &new_id, NULL, ps, qp_type))
		return -1;

	id_priv = cma_id_priv(new_id);
	if (!passive && res->ai_connect_len) {
		/*
		 * connect_len is the kernel's length byte: past 255 it would
		 * wrap and rdma_connect send none of it.  The transport's
		 * own room is checked once the route names the device.
		 */
		if (!res->ai_connect ||
		    cma_check_priv_len(id_priv, res->ai_connect_len,
				       CMA_PRIV_REQ)) {
			rdma_destroy_id(new_id);
			return cma_err(EINVAL);
		}
		rare = cma_id_rare(id_priv);
		if (rare)
			rare->connect_data = malloc(res->ai_connect_len);
		if (!rare || !rare->connect_data) {
			rdma_destroy_id(new_id);
			return cma_err(ENOMEM);
		}
		memcpy(rare->connect_data, res->ai_connect,
		       res->ai_connect_len);
		id_priv->connect_len = (uint8_t)res->ai_connect_len;
	}
	if (passive)
		ret = cma_ep_passive(id_priv, res, pd, qp_init_attr);
	else
		ret = cma_ep_active(id_priv, res, pd, qp_init_attr);
	if (ret) {
		/* The QP, if any, is the last step, so it never exists here. */
		err = errno;
		rdma_destroy_id(new_id);
		return cma_err(err);
	}
	*id = new_id;
	return 0;
}

CMA_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}
