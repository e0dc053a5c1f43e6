// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * mckey: multicast datagrams through the RDMA CM.
 *
 * Every instance binds a UD QP to a device (by resolving the group address,
 * optionally from -b), joins the group with rdma_join_multicast() and waits
 * for MULTICAST_JOIN.  A receiver, the default, posts its receives first
 * and then counts -C datagrams.  A sender (-s) turns the address handle
 * attributes, QP number and Q_Key in the join event into an address
 * handle and sends -C datagrams to the group.
 *
 * With -o the sender joins as a send-only full member through
 * rdma_join_multicast_ex(): it may send to the group but its QP is not
 * attached, so it receives nothing from it.
 *
 * Start the receivers first and the sender once they print "joined":
 * datagrams sent before a receiver is attached are simply lost.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define MC_DEF_COUNT 10
#define MC_MAX_COUNT 4096
#define MC_DEF_SIZE 100
#define MC_DEF_TIMEOUT 60 /* seconds a receiver waits for the sender */
#define MC_WINDOW 16
#define GRH_LEN sizeof(struct ibv_grh)
#define WR_SEND (1ull << 63)

struct opts {
	const char *group;
	const char *src;
	bool sender;
	bool sendonly;
	unsigned long count;
	uint32_t size;
	unsigned long timeout; /* seconds, 0 for none */
};

struct mckey {
	struct opts o;
	struct ex_addr group;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ex_cq cq;
	struct ibv_mr *mr;
	char *mem; /* count receive slots of GRH_LEN + size, then a send buf */
	struct ibv_ah *ah;
	uint32_t remote_qpn;
	uint32_t remote_qkey;
	bool joined;
	unsigned long recv_done, send_posted, send_done;
	char name[EX_ADDRSTRLEN]; /* the group, for messages */
};

static size_t slot_len(const struct mckey *m)
{
	return GRH_LEN + m->o.size;
}

static char *send_buf(struct mckey *m)
{
	return m->mem + m->o.count * slot_len(m) + GRH_LEN;
}

/* Resources */

static int setup_qp(struct mckey *m)
{
	unsigned long i, recvs = m->o.sender ? 0 : m->o.count;
	size_t len = (m->o.count + 1) * slot_len(m);
	struct ibv_qp_init_attr attr;
	uint32_t max;

	if (ex_ud_max_payload(m->id, &max))
		return -1;
	if (m->o.size > max) {
		ex_err("%u-byte datagrams do not fit the port's %u-byte MTU",
		       m->o.size, max);
		return -1;
	}
	m->pd = ibv_alloc_pd(m->id->verbs);
	if (!m->pd) {
		ex_syserr("ibv_alloc_pd");
		return -1;
	}
	if (ex_cq_create(&m->cq, m->id->verbs, (int)m->o.count + MC_WINDOW))
		return -1;
	memset(&attr, 0, sizeof(attr));
	attr.send_cq = m->cq.cq;
	attr.recv_cq = m->cq.cq;
	attr.qp_type = IBV_QPT_UD;
	attr.cap.max_send_wr = MC_WINDOW;
	attr.cap.max_recv_wr = recvs ? (uint32_t)recvs : 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	if (rdma_create_qp(m->id, m->pd, &attr)) {
		ex_syserr("rdma_create_qp");
		return -1;
	}

	m->mem = calloc(1, len);
	if (!m->mem) {
		ex_syserr("calloc");
		return -1;
	}
	m->mr = ibv_reg_mr(m->pd, m->mem, len, IBV_ACCESS_LOCAL_WRITE);
	if (!m->mr) {
		ex_syserr("ibv_reg_mr");
		return -1;
	}
	/* Before the join: the group may deliver as soon as we are in. */
	for (i = 0; i < recvs; i++)
		if (ex_post_recv(m->id->qp, m->mr, m->mem + i * slot_len(m),
				 (uint32_t)slot_len(m), i))
			return -1;
	return 0;
}

static void cleanup(struct mckey *m)
{
	if (m->joined && rdma_leave_multicast(m->id, ex_sa(&m->group)))
		ex_syserr("rdma_leave_multicast(%s)", m->name);
	if (m->ah && ibv_destroy_ah(m->ah))
		ex_syserr("ibv_destroy_ah");
	if (m->id && m->id->qp)
		rdma_destroy_qp(m->id);
	if (m->mr && ibv_dereg_mr(m->mr))
		ex_syserr("ibv_dereg_mr");
	if (m->cq.cq)
		ex_cq_destroy(&m->cq);
	if (m->pd && ibv_dealloc_pd(m->pd))
		ex_syserr("ibv_dealloc_pd");
	free(m->mem);
	if (m->id && rdma_destroy_id(m->id))
		ex_syserr("rdma_destroy_id");
	if (m->ch)
		rdma_destroy_event_channel(m->ch);
}

/* Joining */

static int join(struct mckey *m)
{
	struct rdma_cm_join_mc_attr_ex attr;
	struct rdma_cm_event *ev;
	int ret;

	if (m->o.sendonly) {
		memset(&attr, 0, sizeof(attr));
		attr.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS |
				 RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
		attr.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
		attr.addr = ex_sa(&m->group);
		ret = rdma_join_multicast_ex(m->id, &attr, m);
	} else {
		ret = rdma_join_multicast(m->id, ex_sa(&m->group), m);
	}
	if (ret) {
		/* The kernel's ENOTSUPP, which has no text in libc. */
		if (errno == 524)
			ex_err("%s(%s): not supported for this group on this "
			       "device (Linux has no IPv6 groups on RoCE v2)",
			       m->o.sendonly ? "rdma_join_multicast_ex"
					     : "rdma_join_multicast",
			       m->name);
		else
			ex_syserr("%s(%s)",
				  m->o.sendonly ? "rdma_join_multicast_ex"
						: "rdma_join_multicast",
				  m->name);
		return -1;
	}
	/* A join that fails shows up as MULTICAST_ERROR: reported there. */
	if (ex_expect_event(m->ch, m->id, RDMA_CM_EVENT_MULTICAST_JOIN,
			    EX_WAIT_MS, &ev))
		return -1;
	m->joined = true;
	m->remote_qpn = ev->param.ud.qp_num;
	m->remote_qkey = ev->param.ud.qkey;
	if (m->o.sender) {
		m->ah = ibv_create_ah(m->pd, &ev->param.ud.ah_attr);
		if (!m->ah)
			ex_syserr("ibv_create_ah");
	}
	ex_ack(ev);
	if (m->o.sender && !m->ah)
		return -1;

	ex_info("joined %s as %s (QPN 0x%06x, Q_Key 0x%08x)", m->name,
		m->o.sendonly ? "a send-only sender"
		: m->o.sender ? "a sender"
			      : "a receiver",
		m->remote_qpn, m->remote_qkey);
	return 0;
}

/* Traffic */

/* While traffic flows no CM event is expected; any one ends the run. */
static int cm_interrupts(struct mckey *m)
{
	struct rdma_cm_event *ev;

	if (ex_get_event(m->ch, 0, &ev))
		return errno == ETIMEDOUT ? 0 : -1;
	ex_report_event(m->name, ev);
	ex_ack(ev);
	return -1;
}

static int handle_wc(struct mckey *m, const struct ibv_wc *wc)
{
	if (wc->wr_id == WR_SEND) {
		m->send_done++;
		return ex_wc_ok(wc, "multicast send");
	}
	if (ex_wc_ok(wc, "multicast receive"))
		return -1;
	if (wc->byte_len != slot_len(m)) {
		ex_err("received %zu bytes, expected %u",
		       (size_t)wc->byte_len - GRH_LEN, m->o.size);
		return -1;
	}
	m->recv_done++;
	return 0;
}

static bool finished(const struct mckey *m)
{
	if (m->o.sender)
		return m->send_done == m->o.count;
	return m->recv_done == m->o.count;
}

static int traffic(struct mckey *m)
{
	struct ibv_wc wc[8];
	int i, n, timeout;

	while (!finished(m)) {
		while (m->o.sender && m->send_posted < m->o.count &&
		       m->send_posted - m->send_done < MC_WINDOW) {
			if (ex_post_ud_send(m->id->qp, m->ah, m->remote_qpn,
					    m->remote_qkey, m->mr, send_buf(m),
					    m->o.size, WR_SEND))
				return -1;
			m->send_posted++;
		}
		/* A receiver may wait long for the sender to start. */
		timeout = EX_WAIT_MS;
		if (!m->o.sender && !m->recv_done)
			timeout = m->o.timeout ? (int)m->o.timeout * 1000
					       : EX_FOREVER;
		n = ex_cq_wait(&m->cq, wc, 8, m->ch->fd, timeout);
		if (n == EX_CQ_CM_EVENT) {
			if (cm_interrupts(m))
				return -1;
			continue;
		}
		if (n < 0) {
			if (errno == ETIMEDOUT)
				ex_err("%s: got %lu of %lu datagrams before "
				       "timing out",
				       m->name, m->recv_done, m->o.count);
			return -1;
		}
		for (i = 0; i < n; i++)
			if (handle_wc(m, &wc[i]))
				return -1;
	}
	if (m->o.sender)
		ex_info("sent %lu datagram%s of %u bytes to %s", m->send_done,
			m->send_done == 1 ? "" : "s", m->o.size, m->name);
	else
		ex_info("received %lu datagram%s of %u bytes from %s",
			m->recv_done, m->recv_done == 1 ? "" : "s", m->o.size,
			m->name);
	return 0;
}

static int run(struct mckey *m)
{
	struct ex_addr src;

	if (ex_resolve(m->o.group, NULL, EX_RES_NOROUTE, RDMA_PS_UDP,
		       &m->group))
		return -1;
	ex_ntop_host(ex_sa(&m->group), m->name, sizeof(m->name));
	if (m->o.src &&
	    ex_resolve(m->o.src, NULL, EX_RES_PASSIVE, RDMA_PS_UDP, &src))
		return -1;

	m->ch = rdma_create_event_channel();
	if (!m->ch) {
		ex_syserr("rdma_create_event_channel");
		return -1;
	}
	if (rdma_create_id(m->ch, &m->id, m, RDMA_PS_UDP)) {
		ex_syserr("rdma_create_id");
		m->id = NULL;
		return -1;
	}
	/* Resolving the group binds the id to the device that reaches it */
	if (rdma_resolve_addr(m->id, m->o.src ? ex_sa(&src) : NULL,
			      ex_sa(&m->group), EX_RESOLVE_MS)) {
		ex_syserr("rdma_resolve_addr(%s)", m->name);
		return -1;
	}
	if (ex_expect_event(m->ch, m->id, RDMA_CM_EVENT_ADDR_RESOLVED,
			    EX_WAIT_MS, NULL))
		return -1;
	if (setup_qp(m) || join(m))
		return -1;
	snprintf(send_buf(m), m->o.size, "mckey datagram");
	return traffic(m);
}

/* Command line */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s -m group [-b address] [-s [-o]] [options]\n"
		"Join a multicast group; receive from it, or send to it.\n"
		"\n"
		"  -m group     multicast address to join (IPv4 or IPv6)\n"
		"  -b address   local address whose device joins the group\n"
		"  -r           receive datagrams (the default)\n"
		"  -s           send datagrams to the group\n"
		"  -o           send-only join (implies -s)\n"
		"  -C count     datagrams to send or receive, 1 to %d "
		"(default %d)\n"
		"  -S size      datagram size in bytes, up to the MTU "
		"(default %d)\n"
		"  -t seconds   how long a receiver waits for the first "
		"datagram,\n"
		"               0 for ever (default %d)\n"
		"  -q           quiet: print errors only\n"
		"  -h           show this help\n",
		ex_prog(), MC_MAX_COUNT, MC_DEF_COUNT, MC_DEF_SIZE,
		MC_DEF_TIMEOUT);
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	unsigned long v;
	int op;

	o->count = MC_DEF_COUNT;
	o->size = MC_DEF_SIZE;
	o->timeout = MC_DEF_TIMEOUT;
	while ((op = getopt(argc, argv, "m:b:rsoC:S:t:qh")) != -1) {
		switch (op) {
		case 'm':
			o->group = optarg;
			break;
		case 'b':
			o->src = optarg;
			break;
		case 'r':
			o->sender = false;
			o->sendonly = false;
			break;
		case 's':
			o->sender = true;
			break;
		case 'o':
			o->sender = true;
			o->sendonly = true;
			break;
		case 'C':
			if (ex_parse_num(optarg, 'C', 1, MC_MAX_COUNT,
					 &o->count))
				return ex_usage_hint();
			break;
		case 'S':
			if (ex_parse_num(optarg, 'S', 1, 4096, &v))
				return ex_usage_hint();
			o->size = (uint32_t)v;
			break;
		case 't':
			if (ex_parse_num(optarg, 't', 0, 86400, &o->timeout))
				return ex_usage_hint();
			break;
		case 'q':
			ex_quiet = true;
			break;
		case 'h':
			usage(stdout);
			exit(EX_OK);
		default:
			return ex_usage_hint();
		}
	}
	if (optind < argc) {
		ex_err("unexpected argument '%s'", argv[optind]);
		return ex_usage_hint();
	}
	if (!o->group) {
		ex_err("which group? (-m)");
		return ex_usage_hint();
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct mckey m;
	int ret;

	ex_init(argv[0]);
	memset(&m, 0, sizeof(m));
	ret = parse_opts(argc, argv, &m.o);
	if (ret)
		return ret;
	ret = run(&m);
	cleanup(&m);
	if (!ret)
		ex_info("OK");
	return ret ? EX_FAIL : EX_OK;
}
