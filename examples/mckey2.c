// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * mckey2: multicast the way socket programs do it, through this library's
 * socket-style calls only.
 *
 * Each instance binds a UD id to -b, joins the group -m with
 * rdma_set_option(IP_ADD_MEMBERSHIP) or (IPv6) IPV6_JOIN_GROUP, waits for
 * RDMA_CM_EVENT_JOIN_COMPLETE and prints the group's MCMember record read
 * back with rdma_get_option(IB_MCMEMBER_RECORD).  A receiver (the default)
 * then counts -C numbered datagrams; a sender (-s) sends them with
 * rdma_sendto(), which fills in the address handle, QPN and Q_Key.  Both
 * leave with IP_DROP_MEMBERSHIP / IPV6_LEAVE_GROUP.  No address handle,
 * QPN or Q_Key is handled here.
 *
 * Start the receivers first and the sender once they print "joined".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_verbs.h>

#include "common.h"

#define DEF_COUNT 10
#define MAX_COUNT 512
#define DEF_TIMEOUT 60 /* seconds a receiver waits for the datagrams */
#define GRH_LEN sizeof(struct ibv_grh)
#define MSG_LEN 64

struct opts {
	const char *group;
	const char *bind;
	bool sender;
	unsigned long count;
	unsigned long timeout;
	unsigned long delay_ms;
};

struct mc {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	struct ex_addr group;
	char (*bufs)[GRH_LEN + MSG_LEN]; /* [0] sends, [1..count] receives */
	bool joined;
};

static void usage(void)
{
	printf("usage: %s -m group -b address [-s] [-C count] [-t seconds] "
	       "[-d ms]\n"
	       "  -m group    IPv4 or IPv6 multicast group to join\n"
	       "  -b address  local address of the RDMA device to use\n"
	       "  -s          send (default: receive)\n"
	       "  -C count    datagrams to send or expect (default %d, max "
	       "%d)\n"
	       "  -t seconds  how long a receiver waits (default %d)\n"
	       "  -d ms       pause between a sender's datagrams (default 0)\n",
	       ex_prog(), DEF_COUNT, MAX_COUNT, DEF_TIMEOUT);
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	int c;

	*o = (struct opts){.count = DEF_COUNT, .timeout = DEF_TIMEOUT};
	while ((c = getopt(argc, argv, "m:b:sC:t:d:h")) != -1) {
		switch (c) {
		case 'm':
			o->group = optarg;
			break;
		case 'b':
			o->bind = optarg;
			break;
		case 's':
			o->sender = true;
			break;
		case 'C':
			if (ex_parse_num(optarg, 'C', 1, MAX_COUNT, &o->count))
				return EX_USAGE;
			break;
		case 't':
			if (ex_parse_num(optarg, 't', 1, 3600, &o->timeout))
				return EX_USAGE;
			break;
		case 'd':
			if (ex_parse_num(optarg, 'd', 0, 10000, &o->delay_ms))
				return EX_USAGE;
			break;
		case 'h':
			usage();
			exit(EX_OK);
		default:
			return ex_usage_hint();
		}
	}
	if (!o->group || !o->bind || optind != argc) {
		ex_err("-m and -b are required");
		return ex_usage_hint();
	}
	return EX_OK;
}

/* IP_ADD/DROP_MEMBERSHIP or IPV6_JOIN/LEAVE_GROUP for the group. */
static int membership(struct mc *m, bool join)
{
	struct sockaddr *sa = ex_sa(&m->group);

	if (sa->sa_family == AF_INET6) {
		struct ipv6_mreq m6 = {
			.ipv6mr_multiaddr =
				((struct sockaddr_in6 *)sa)->sin6_addr,
		};

		return rdma_set_option(m->id, RDMA_OPTION_IPV6,
				       join ? IPV6_JOIN_GROUP
					    : IPV6_LEAVE_GROUP,
				       &m6, sizeof(m6));
	}
	struct ip_mreq m4 = {
		.imr_multiaddr = ((struct sockaddr_in *)sa)->sin_addr,
	};

	return rdma_set_option(m->id, RDMA_OPTION_IP,
			       join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP,
			       &m4, sizeof(m4));
}

static void print_record(struct mc *m)
{
	struct rdma_mcast_record q = {0};
	const struct ib_sa_mcmember_rec *r = &q.rec;
	char gid[INET6_ADDRSTRLEN], grp[EX_ADDRSTRLEN];

	memcpy(&q.group, &m->group.ss, sizeof(q.group));
	if (rdma_get_option(m->id, RDMA_OPTION_IB_MCAST, IB_MCMEMBER_RECORD, &q,
			    sizeof(q))) {
		ex_syserr("rdma_get_option(IB_MCMEMBER_RECORD)");
		return;
	}
	inet_ntop(AF_INET6, r->mgid.raw, gid, sizeof(gid));
	ex_info("joined %s: mgid %s mlid 0x%x qkey 0x%x pkey 0x%x mtu %u "
		"rate %u sl %u",
		ex_ntop_host(ex_sa(&m->group), grp, sizeof(grp)), gid, r->mlid,
		r->qkey, r->pkey, r->mtu, r->rate, r->sl);
}

static int setup(struct mc *m, const struct opts *o)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 1,
			.max_recv_wr = (uint32_t)o->count,
			.max_send_sge = 1,
			.max_recv_sge = 1},
		.sq_sig_all = 1,
	};
	struct ex_addr local;
	unsigned long i;

	if (ex_resolve(o->group, NULL, EX_RES_NOROUTE, RDMA_PS_UDP,
		       &m->group) ||
	    ex_resolve(o->bind, NULL, EX_RES_PASSIVE, RDMA_PS_UDP, &local))
		return -1;
	m->ch = rdma_create_event_channel();
	if (!m->ch || rdma_create_id(m->ch, &m->id, m, RDMA_PS_UDP)) {
		ex_syserr("creating the id");
		return -1;
	}
	if (rdma_bind_addr(m->id, ex_sa(&local))) {
		ex_syserr("rdma_bind_addr(%s)", o->bind);
		return -1;
	}
	if (rdma_create_qp(m->id, NULL, &attr)) {
		ex_syserr("rdma_create_qp");
		return -1;
	}
	m->bufs = calloc(o->count + 1, sizeof(*m->bufs));
	m->mr = m->bufs ? rdma_reg_msgs(m->id, m->bufs,
					(o->count + 1) * sizeof(*m->bufs))
			: NULL;
	if (!m->mr) {
		ex_syserr("registering buffers");
		return -1;
	}
	for (i = 1; !o->sender && i <= o->count; i++) {
		if (rdma_post_recv(m->id, m->bufs[i], m->bufs[i],
				   sizeof(m->bufs[i]), m->mr)) {
			ex_syserr("rdma_post_recv");
			return -1;
		}
	}
	return 0;
}

static int join(struct mc *m)
{
	struct rdma_cm_event *ev;

	if (membership(m, true)) {
		if (errno == 524) /* the kernel's ENOTSUPP */
			ex_err("the kernel refuses this group on this device "
			       "(IPv6 multicast on RoCE v2?)");
		ex_syserr("joining the group");
		return -1;
	}
	if (ex_expect_event(m->ch, m->id, RDMA_CM_EVENT_JOIN_COMPLETE,
			    EX_WAIT_MS, &ev))
		return -1;
	ex_ack(ev);
	m->joined = true;
	print_record(m);
	return 0;
}

static int send_all(struct mc *m, const struct opts *o)
{
	struct ibv_sge sge = {.lkey = m->mr->lkey};
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND};
	struct ibv_wc wc;
	unsigned long i;

	for (i = 0; i < o->count; i++) {
		snprintf(m->bufs[0], MSG_LEN, "mckey2 datagram %lu", i);
		sge.addr = (uintptr_t)m->bufs[0];
		sge.length = (uint32_t)strlen(m->bufs[0]) + 1;
		wr.wr_id = i;
		if (rdma_sendto(m->id, &wr, ex_sa(&m->group))) {
			ex_syserr("rdma_sendto");
			return -1;
		}
		if (rdma_get_send_comp(m->id, &wc) != 1 ||
		    ex_wc_ok(&wc, "send"))
			return -1;
		if (o->delay_ms)
			usleep((useconds_t)o->delay_ms * 1000);
	}
	ex_info("sent %lu datagrams", o->count);
	return 0;
}

static int recv_all(struct mc *m, const struct opts *o)
{
	uint64_t deadline = ex_now_us() + o->timeout * 1000000ull;
	unsigned long got = 0;
	struct ibv_wc wc;
	int r;

	while (got < o->count) {
		r = ibv_poll_cq(m->id->recv_cq, 1, &wc);
		if (r < 0) {
			ex_err("ibv_poll_cq failed");
			return -1;
		}
		if (!r) {
			if (ex_now_us() > deadline) {
				ex_err("received %lu of %lu datagrams", got,
				       o->count);
				return -1;
			}
			usleep(1000);
			continue;
		}
		if (ex_wc_ok(&wc, "receive"))
			return -1;
		got++;
	}
	ex_info("received %lu datagrams", got);
	return 0;
}

static void cleanup(struct mc *m)
{
	if (m->joined && membership(m, false))
		ex_syserr("leaving the group");
	if (m->mr)
		rdma_dereg_mr(m->mr);
	if (m->id) {
		rdma_destroy_qp(m->id);
		rdma_destroy_id(m->id);
	}
	if (m->ch)
		rdma_destroy_event_channel(m->ch);
	free(m->bufs);
}

int main(int argc, char **argv)
{
	struct mc m = {0};
	struct opts o;
	int ret;

	ex_init("mckey2");
	ret = parse_opts(argc, argv, &o);
	if (ret != EX_OK)
		return ret;
	ret = EX_FAIL;
	if (!setup(&m, &o) && !join(&m) &&
	    !(o.sender ? send_all(&m, &o) : recv_all(&m, &o)))
		ret = EX_OK;
	cleanup(&m);
	return ret;
}
