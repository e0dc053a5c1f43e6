// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The README's peer-to-peer example, whole: both peers run
 *   p2p_connect LOCAL-ADDR LOCAL-PORT PEER-ADDR PEER-PORT
 * (each with the other's addresses), in any order; the library forms one
 * RC connection out of the two connects (rdma_cm_p2p(7)).
 */
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <rdma/rdma_cma.h>

static struct rdma_event_channel *ch;

/* The next event of id, which must be of that type. */
static int wait_for(struct rdma_cm_id *id, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev;
	int ok;

	if (rdma_get_cm_event(ch, &ev))
		return -1;
	ok = ev->id == id && ev->event == type;
	if (!ok)
		fprintf(stderr, "got %s\n", rdma_event_str(ev->event));
	rdma_ack_cm_event(ev);
	return ok ? 0 : -1;
}

static int get_addr(const char *host, const char *port,
		    struct sockaddr_storage *ss)
{
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST}, *ai;

	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

static int p2p_connect(struct rdma_cm_id *listener, struct rdma_cm_id *id,
		       struct sockaddr *local, struct sockaddr *src,
		       struct sockaddr *peer)
{
	struct ibv_qp_init_attr qp = {.qp_type = IBV_QPT_RC,
				      .cap = {1, 1, 1, 1, 0}};
	/* README begin */
	struct rdma_conn_param param = {.peer2peer_mode = 1};

	/* Both peers listen on their port and connect to each other. */
	if (rdma_bind_addr(listener, local) || rdma_listen(listener, 8))
		return -1;
	if (rdma_resolve_addr(id, src, peer, 2000) ||
	    wait_for(id, RDMA_CM_EVENT_ADDR_RESOLVED) ||
	    rdma_resolve_route(id, 2000) ||
	    wait_for(id, RDMA_CM_EVENT_ROUTE_RESOLVED) ||
	    rdma_create_qp(id, NULL, &qp))
		return -1;
	/* One connection forms, whichever peer came first. */
	if (rdma_connect(id, &param))
		return -1;
	return wait_for(id, RDMA_CM_EVENT_ESTABLISHED);
	/* README end */
}

int main(int argc, char **argv)
{
	struct sockaddr_storage local, src, peer;
	struct rdma_cm_id *listener = NULL, *id = NULL;
	int rc = 1;

	if (argc != 5 || get_addr(argv[1], argv[2], &local) ||
	    get_addr(argv[1], "0", &src) || get_addr(argv[3], argv[4], &peer)) {
		fprintf(stderr,
			"usage: %s LOCAL-ADDR LOCAL-PORT "
			"PEER-ADDR PEER-PORT\n",
			argv[0]);
		return 2;
	}
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP) ||
	    rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		goto out;
	if (p2p_connect(listener, id, (struct sockaddr *)&local,
			(struct sockaddr *)&src, (struct sockaddr *)&peer)) {
		perror("p2p_connect");
		goto out;
	}
	printf("connected\n");
	rdma_disconnect(id);
	rc = wait_for(id, RDMA_CM_EVENT_DISCONNECTED) ? 1 : 0;
out:
	if (id && id->qp)
		rdma_destroy_qp(id);
	if (id)
		rdma_destroy_id(id);
	if (listener)
		rdma_destroy_id(listener);
	if (ch)
		rdma_destroy_event_channel(ch);
	return rc;
}
