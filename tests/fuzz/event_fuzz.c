// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// FUZZ_SOURCES: @library tests/unit/fake_ucma.c
/*
 * Kernel events -> rdma_cm_event translation with arbitrary kernel answers.
 *
 * The fake kernel device (tests/unit/fake_ucma.h), through its hook,
 * answers every command that has a response -- GET_EVENT and the queries
 * the library makes while translating (QUERY_ROUTE, QUERY, INIT_QP_ATTR)
 * -- with the next bytes of the input, zero-filled when it runs out; the
 * stream ending makes GET_EVENT fail with EAGAIN.  Only what the kernel
 * echoes back from us is kept sane: an event's uid always names one of the
 * ids (or, for multicast events, groups) this harness made, because the
 * kernel returns our own pointer there.  Everything else -- event numbers,
 * status, private data lengths, addresses, path counts, device GUIDs,
 * handles of new connections -- is the fuzzer's.
 *
 * Each GET_EVENT takes two selector bytes first: the event number (mod 24)
 * and which id or group it is for.  Every delivered event must name an id,
 * its private data must be readable for the length it claims, and it is
 * acked; ids created for connection requests are destroyed.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"
#include "fake_ucma.h"

static struct rdma_event_channel *channel;

/*
 * One private channel on the fake device for the whole run: a blocking
 * read of it returns what the hook answers, EAGAIN when the input ends.
 */
static struct rdma_event_channel *cma_fuzz_channel(void)
{
	if (!channel) {
		fake_ucma_install();
		channel = cma_channel_create();
		if (!channel)
			abort();
	}
	return channel;
}

static const uint8_t *in_p;
static size_t in_left;

#define NR_IDS 3
static struct cma_id_private *ids[NR_IDS];
static struct cma_multicast groups[2];
static unsigned int sink;

static void take(void *dst, size_t n)
{
	size_t k = n < in_left ? n : in_left;

	memset(dst, 0, n);
	memcpy(dst, in_p, k);
	in_p += k;
	in_left -= k;
}

static int fake_get_event(struct rdma_ucm_event_resp *resp)
{
	uint8_t sel[2];

	if (!in_left)
		return EAGAIN;
	take(sel, sizeof(sel));
	take(resp, sizeof(*resp));
	resp->event = sel[0] % 24;
	if (resp->event == RDMA_CM_EVENT_MULTICAST_JOIN ||
	    resp->event == RDMA_CM_EVENT_MULTICAST_ERROR)
		resp->uid = (uint64_t)(uintptr_t)&groups[sel[1] & 1];
	else
		resp->uid = (uint64_t)(uintptr_t)ids[sel[1] % NR_IDS];
	return 0;
}

/* The kernel's answers, all from the input; the model is not asked. */
static int fuzz_answer(const struct fake_cmd *cmd, void *resp, size_t len)
{
	if (!resp)
		return 0; /* reject, accept (RTU), ...: accepted */
	switch (cmd->cmd) {
	case RDMA_USER_CM_CMD_GET_EVENT:
		return fake_get_event(resp);
	case RDMA_USER_CM_CMD_DESTROY_ID:
	case RDMA_USER_CM_CMD_LEAVE_MCAST:
	case RDMA_USER_CM_CMD_MIGRATE_ID:
		/*
		 * "Events reported" must be true or the library waits for
		 * acks forever, as it should: the harness acks everything
		 * itself, so report none.
		 */
		memset(resp, 0, len);
		return 0;
	}
	take(resp, len);
	return 0;
}

static void make_ids(void)
{
	static const struct {
		enum rdma_port_space ps;
		enum ibv_qp_type qpt;
	} kinds[NR_IDS] = {
		{RDMA_PS_TCP, IBV_QPT_RC},
		{RDMA_PS_TCP, IBV_QPT_RC},
		{RDMA_PS_UDP, IBV_QPT_UD},
	};
	int i;

	for (i = 0; i < NR_IDS; i++) {
		ids[i] = cma_id_alloc(cma_fuzz_channel(), NULL, kinds[i].ps,
				      kinds[i].qpt);
		if (!ids[i])
			abort();
		ids[i]->handle = (uint32_t)i + 1;
	}
	for (i = 0; i < 2; i++) {
		memset(&groups[i], 0, sizeof(groups[i]));
		groups[i].id_priv = ids[i ? 2 : 0];
		groups[i].context = &groups[i];
		groups[i].handle = 10 + (uint32_t)i;
		pthread_cond_init(&groups[i].cond, NULL);
	}
}

static void free_ids(void)
{
	int i;

	for (i = 0; i < 2; i++)
		pthread_cond_destroy(&groups[i].cond);
	for (i = 0; i < NR_IDS; i++)
		cma_id_free(ids[i]);
}

static bool is_ours(const struct rdma_cm_id *id)
{
	int i;

	for (i = 0; i < NR_IDS; i++)
		if (id == &ids[i]->id)
			return true;
	return false;
}

static bool is_mcast(enum rdma_cm_event_type t)
{
	return t == RDMA_CM_EVENT_MULTICAST_JOIN ||
	       t == RDMA_CM_EVENT_MULTICAST_ERROR;
}

/* What a caller may rely on in any event it is given. */
static void check_event(const struct rdma_cm_event *ev)
{
	const struct rdma_conn_param *conn = &ev->param.conn;
	const uint8_t *pd = conn->private_data;
	uint8_t i;

	if (!ev->id)
		abort();
	if (is_mcast(ev->event))
		return; /* private_data is the join's context, not data */
	if (conn->private_data_len && !pd)
		abort();
	for (i = 0; pd && i < conn->private_data_len; i++)
		sink += pd[i];
	for (i = 0; i < ev->id->route.num_paths; i++)
		sink += ev->id->route.path_rec[i].dlid;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *new_id;

	cma_fuzz_channel();
	fake_ucma_clear_log(); /* one input's commands, not the whole run's */
	fake_ucma_set_hook(fuzz_answer);
	in_p = data;
	in_left = size;
	make_ids();
	while (rdma_get_cm_event(cma_fuzz_channel(), &ev) == 0) {
		check_event(ev);
		new_id = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST &&
					 !is_ours(ev->id)
				 ? ev->id
				 : NULL;
		rdma_ack_cm_event(ev);
		if (new_id && rdma_destroy_id(new_id))
			abort();
	}
	free_ids();
	return 0;
}
