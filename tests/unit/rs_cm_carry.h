/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * For unit tests that connect stream rsockets through the fake rdma_cm
 * (include cm/cma.h, rsocket/rs.h, fake_ucma.h and unit.h first): the
 * test carries each CM message from one end's commands to the other's
 * events, as the network would.
 */
#ifndef RS_CM_CARRY_H_UNIT
#define RS_CM_CARRY_H_UNIT

#include <string.h>

/* The fake kernel's handle for socket @s's id. */
static inline uint32_t kid_of(int s)
{
	struct rsocket *rs = rs_get(s);
	uint32_t handle;

	ck_assert_ptr_nonnull(rs);
	handle = fake_ucma_kid_of(rs->cm_id)->handle;
	rs_put(rs);
	return handle;
}

/*
 * The last CONNECT arrives at the listener whose kernel id is
 * @listen_kid (hold the fake's events around it if a thread may read them
 * half filled); the request's handle.
 */
static inline uint32_t carry_request_to(uint32_t listen_kid)
{
	const struct rdma_ucm_connect *c =
		(const void *)fake_ucma_last(RDMA_USER_CM_CMD_CONNECT)->body;
	struct rdma_ucm_event_resp *r;
	uint32_t child;

	r = fake_ucma_conn_req(listen_kid, &child);
	ck_assert_ptr_nonnull(r);
	memcpy(r->param.conn.private_data, c->conn_param.private_data,
	       c->conn_param.private_data_len);
	r->param.conn.private_data_len = c->conn_param.private_data_len;
	r->param.conn.responder_resources = 1;
	r->param.conn.initiator_depth = 1;
	return child;
}

/* The last ACCEPT reaches the connecting id @kid: it is ESTABLISHED. */
static inline void carry_accept_to(uint32_t kid)
{
	const struct rdma_ucm_accept *a =
		(const void *)fake_ucma_last(RDMA_USER_CM_CMD_ACCEPT)->body;
	struct rdma_ucm_event_resp *r;

	r = fake_ucma_event(kid, RDMA_CM_EVENT_ESTABLISHED, 0);
	ck_assert_ptr_nonnull(r);
	memcpy(r->param.conn.private_data, a->conn_param.private_data,
	       a->conn_param.private_data_len);
	r->param.conn.private_data_len = a->conn_param.private_data_len;
}

#endif /* RS_CM_CARRY_H_UNIT */
