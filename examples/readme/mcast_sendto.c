// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The README's multicast example, whole: a receiver
 *   mcast_sendto LOCAL-ADDR GROUP
 * joins an IPv4 group with IP_ADD_MEMBERSHIP and waits for one datagram;
 *   mcast_sendto LOCAL-ADDR GROUP -s
 * joins it too and sends one with rdma_sendto (rdma_set_option(3),
 * rdma_sendto(3)).  Start the receiver first.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define GRH 40 /* a UD receive starts with the packet's GRH */

static char buf[GRH + 64];

static int join_and_send(struct rdma_cm_id *id, struct sockaddr_in *group,
			 struct ibv_mr *mr, int sender)
{
	struct ibv_sge sge = {(uintptr_t)buf, 64, mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED};
	struct rdma_cm_event *ev;
	struct ibv_wc wc;
	int joined;

	/* README begin */
	struct ip_mreq mreq = {.imr_multiaddr = group->sin_addr};

	if (rdma_set_option(id, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP, &mreq,
			    sizeof(mreq)) ||
	    rdma_get_cm_event(id->channel, &ev))
		return -1;
	joined = ev->event == RDMA_CM_EVENT_JOIN_COMPLETE; /* QP attached */
	rdma_ack_cm_event(ev);
	if (!joined)
		return -1;
	if (sender) {
		/* The library fills in the AH, remote QPN and Q_Key. */
		strcpy(buf, "hello, group");
		if (rdma_sendto(id, &wr, (struct sockaddr *)group) ||
		    rdma_get_send_comp(id, &wc) != 1)
			return -1;
	}
	/* README end */
	return 0;
}

int main(int argc, char **argv)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE | RAI_NUMERICHOST,
				      .ai_port_space = RDMA_PS_UDP},
			     *res = NULL;
	struct ibv_qp_init_attr qp = {.qp_type = IBV_QPT_UD,
				      .cap = {1, 1, 1, 1, 0}};
	struct rdma_event_channel *ch = NULL;
	struct sockaddr_in group = {.sin_family = AF_INET};
	struct ip_mreq mreq;
	struct rdma_cm_id *id = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_wc wc;
	int sender = argc == 4 && !strcmp(argv[3], "-s");
	int rc = 1;

	if ((argc != 3 && !sender) ||
	    inet_pton(AF_INET, argv[2], &group.sin_addr) != 1) {
		fprintf(stderr, "usage: %s LOCAL-ADDR GROUP [-s]\n", argv[0]);
		return 2;
	}
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) ||
	    rdma_getaddrinfo(argv[1], NULL, &hints, &res) ||
	    rdma_bind_addr(id, res->ai_src_addr) ||
	    rdma_create_qp(id, NULL, &qp))
		goto out;
	mr = rdma_reg_msgs(id, buf, sizeof(buf));
	if (!mr || (!sender && rdma_post_recv(id, NULL, buf, sizeof(buf), mr)))
		goto out;
	if (join_and_send(id, &group, mr, sender)) {
		perror("join_and_send");
		goto out;
	}
	if (!sender) {
		if (rdma_get_recv_comp(id, &wc) != 1 ||
		    wc.status != IBV_WC_SUCCESS)
			goto out;
		printf("received \"%.*s\"\n", 64, buf + GRH);
	}
	mreq.imr_multiaddr = group.sin_addr;
	mreq.imr_interface.s_addr = INADDR_ANY;
	rc = rdma_set_option(id, RDMA_OPTION_IP, IP_DROP_MEMBERSHIP, &mreq,
			     sizeof(mreq))
		     ? 1
		     : 0;
out:
	if (rc)
		perror(argv[0]);
	if (mr)
		rdma_dereg_mr(mr);
	if (id && id->qp)
		rdma_destroy_qp(id);
	if (id)
		rdma_destroy_id(id);
	if (res)
		rdma_freeaddrinfo(res);
	if (ch)
		rdma_destroy_event_channel(ch);
	return rc;
}
