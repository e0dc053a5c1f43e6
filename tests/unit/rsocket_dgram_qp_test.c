// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The UD QPs of datagram rsockets (src/rsocket/dgram_qp.c) on the fake
 * kernel and the fake device: a datagram rsocket made with rsocket(3) as a
 * program makes it, whose QPs the test asks for by source address as the
 * send path does (ds_qp_get), and whose completions it puts on their CQs:
 *
 *  - one QP per local address, made on first use: an rdma_cm UDP id bound
 *    to the address (any port if the socket's is taken in the rdma_cm's
 *    space), a UD QP, a non-blocking completion channel in the socket's
 *    epoll set, every receive slot posted; none for an address no RDMA
 *    device owns (ENODEV), and nothing left behind by a failure;
 *  - the queues fit the device and the socket's buffer sizes;
 *  - a receive completion queues the datagram for rrecvfrom, which gives
 *    the slot back and names the sender in the socket's family; a
 *    malformed or failed one, or one whose sender the socket's family
 *    cannot name, is dropped, counted and reposted; a flushed one is left
 *    alone; after SHUT_RD nothing queues;
 *  - a send completion frees its slot and unpins its destination; a failed
 *    one is counted; completions of unknown slots change nothing;
 *  - CQs are armed once before sleeping and their events taken;
 *  - rclose destroys every QP with its CQ, channel and memory.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"
#include "rs_dgram.h"

static struct rdma_event_channel *ch;
static int fd;
static struct rsocket *rs;

static void setup(void)
{
	ch = unit_fakes_open(true);
	fd = unit_dgram_open(&rs);
}

static void teardown(void)
{
	unit_dgram_close(fd, rs);
	unit_fakes_close(ch);
}

/* The QP for @src as the send path gets it: under the socket's lock. */
static int qp_get(const union rs_sockaddr *src, struct ds_qp **qp)
{
	int ret;

	pthread_mutex_lock(&rs->lock);
	ret = ds_qp_get(rs, src, qp);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

static struct ds_qp *the_qp(void)
{
	union rs_sockaddr src = unit_rs_ipv4("192.0.2.1", 7000);
	struct ds_qp *qp;

	ck_assert_int_eq(qp_get(&src, &qp), 0);
	return qp;
}

static void poll_cqs(void)
{
	pthread_mutex_lock(&rs->lock);
	ds_poll_cqs(rs);
	pthread_mutex_unlock(&rs->lock);
}

/* --- making QPs ----------------------------------------------------------- */

START_TEST(one_qp_per_local_address)
{
	union rs_sockaddr other_port = unit_rs_ipv4("192.0.2.1", 7001);
	union rs_sockaddr other = unit_rs_ipv4("192.0.2.5", 7000);
	struct ds_qp *qp = the_qp(), *again, *second;
	struct fake_qp *f = fake_qp_of(qp->cm_id->qp);
	struct epoll_event ev;

	ck_assert_int_eq(qp->cm_id->ps, RDMA_PS_UDP);
	ck_assert_int_eq(qp->cm_id->qp->qp_type, IBV_QPT_UD);
	ck_assert(f->sq_sig_all);
	ck_assert_int_eq(f->posted_recvs, rs->rq_size);
	ck_assert_uint_eq(qp->hdr_len, DS_IPV4_HDR_LEN);
	ck_assert(qp->ethernet);
	/* A UD datagram is one packet: the port's 1024-byte MTU bounds it. */
	ck_assert_uint_eq(qp->max_msg, 1024);
	ck_assert_int_ne(fcntl(qp->channel->fd, F_GETFL) & O_NONBLOCK, 0);
	/* The socket's send slots and queue were made with the first QP. */
	ck_assert_ptr_nonnull(rs->dsbuf);
	ck_assert_uint_eq(rs->dsfree_cnt, rs->sq_size);
	ck_assert_uint_eq(rs->dmsg_max, rs->rq_size + DS_UDP_QUEUE);
	/* The same host, any port: the same QP. */
	ck_assert_int_eq(qp_get(&other_port, &again), 0);
	ck_assert_ptr_eq(again, qp);
	ck_assert_int_eq(qp_get(&other, &second), 0);
	ck_assert_ptr_ne(second, qp);
	ck_assert_int_eq(fake_verbs_counts().qps, 2);
	/* A completion event on a QP's channel wakes the socket's epoll set. */
	pthread_mutex_lock(&rs->lock);
	ds_arm_cqs(rs);
	pthread_mutex_unlock(&rs->lock);
	fake_verbs_cq_event(second->cq);
	ck_assert_int_eq(epoll_wait(rs->epfd, &ev, 1, 0), 1);
	ck_assert_ptr_eq(ev.data.ptr, second);
}
END_TEST

START_TEST(ipv6_sources_differ_by_scope)
{
	union rs_sockaddr a, b;
	struct ds_qp *qa, *qb;

	memset(&a, 0, sizeof(a));
	a.sin6.sin6_family = AF_INET6;
	a.sin6.sin6_port = htons(7000);
	inet_pton(AF_INET6, "fe80::1", &a.sin6.sin6_addr);
	a.sin6.sin6_scope_id = 1;
	b = a;
	b.sin6.sin6_scope_id = 2;
	ck_assert_int_eq(qp_get(&a, &qa), 0);
	ck_assert_uint_eq(qa->hdr_len, DS_IPV6_HDR_LEN);
	ck_assert_int_eq(qp_get(&b, &qb), 0);
	ck_assert_ptr_ne(qa, qb);
}
END_TEST

/* The rdma_cm's UDP port space is not the kernel's: any port will do. */
START_TEST(a_taken_port_is_replaced_by_any)
{
	union rs_sockaddr src = unit_rs_ipv4("192.0.2.1", 7000);
	struct ds_qp *qp;

	fake_ucma_fail_next(RDMA_USER_CM_CMD_BIND, EADDRINUSE);
	ck_assert_int_eq(qp_get(&src, &qp), 0);
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_BIND), 2);
	ck_assert_int_eq(rdma_get_src_port(qp->cm_id), 0);
	/* The datagrams still name the socket's own port. */
	ck_assert_uint_eq(qp->src.sin.sin_port, htons(7000));
	ck_assert_uint_eq(qp->hdr.port, htons(7000));
}
END_TEST

START_TEST(failures_leave_nothing)
{
	union rs_sockaddr src = unit_rs_ipv4("192.0.2.1", 7000);
	struct fake_ucma_route none = {0};
	struct fake_verbs_counts c;
	struct ds_qp *qp = NULL;

	/* A refused bind is the caller's error. */
	fake_ucma_fail_next(RDMA_USER_CM_CMD_BIND, EACCES);
	errno = 0;
	ck_assert_int_eq(qp_get(&src, &qp), -1);
	ck_assert_int_eq(errno, EACCES);
	/* A receive the device refuses, half-way through the set-up. */
	fake_verbs_fail_post(ENOMEM);
	errno = 0;
	ck_assert_int_eq(qp_get(&src, &qp), -1);
	ck_assert_int_eq(errno, ENOMEM);
	c = fake_verbs_counts();
	ck_assert_int_eq(c.qps + c.cqs + c.channels + c.mrs, 0);
	ck_assert_ptr_null(rs->qp_list);
	/* An address no RDMA device owns. */
	fake_ucma_set_route(&none);
	errno = 0;
	ck_assert_int_eq(qp_get(&src, &qp), -1);
	ck_assert_int_eq(errno, ENODEV);
	ck_assert_ptr_null(rs->qp_list);
}
END_TEST

/* RDMA_SQSIZE / RDMA_RQSIZE, bounded by the device and the buffers. */
START_TEST(queues_fit_the_device_and_the_buffers)
{
	struct fake_verbs_port port = {.max_qp_wr = 64};
	int sq = 1000, rq = 1000, rbuf = 5 * DS_MSG_SIZE;
	struct ds_qp *qp;

	fake_verbs_set_port(NULL, &port);
	ck_assert_int_eq(
		rsetsockopt(fd, SOL_RDMA, RDMA_SQSIZE, &sq, sizeof(sq)), 0);
	ck_assert_int_eq(
		rsetsockopt(fd, SOL_RDMA, RDMA_RQSIZE, &rq, sizeof(rq)), 0);
	/* SO_RCVBUF is doubled, as on Linux: ten slots' worth. */
	ck_assert_int_eq(
		rsetsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rbuf, sizeof(rbuf)), 0);
	qp = the_qp();
	ck_assert_uint_eq(rs->rq_size, 10);
	ck_assert_uint_eq(rs->sq_size, 64 < rs->sbuf_size / DS_MSG_SIZE
					       ? 64
					       : rs->sbuf_size / DS_MSG_SIZE);
	ck_assert_int_eq(fake_qp_of(qp->cm_id->qp)->posted_recvs, 10);
	/* Once the buffers exist the sizes are fixed. */
	errno = 0;
	ck_assert_int_eq(
		rsetsockopt(fd, SOL_RDMA, RDMA_SQSIZE, &sq, sizeof(sq)), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(a_device_without_limits_gets_the_smallest_queues)
{
	the_qp(); /* the fake reports max_qp_wr 0 */
	ck_assert_uint_eq(rs->rq_size, 2);
	ck_assert_uint_eq(rs->sq_size, 2);
}
END_TEST

/* --- completions ------------------------------------------------------------ */

/* The completions' fixture: the socket's QP towards a peer, as made. */
static struct ds_qp *qp;
static struct fake_qp *f;
static int posted;
static union rs_sockaddr peer;

static void qp_setup(void)
{
	setup();
	qp = the_qp();
	f = fake_qp_of(qp->cm_id->qp);
	posted = f->posted_recvs;
	peer = unit_rs_ipv4("192.0.2.2", 7100);
}

/* Write a UD receive (GRH, header naming @from, @len bytes) in qp's @slot. */
static uint32_t fill_slot(uint32_t slot, const union rs_sockaddr *from,
			  size_t len)
{
	uint8_t *buf = qp->rbuf + (size_t)slot * DS_RSLOT_SIZE;
	struct ds_wire_hdr h;
	size_t hlen = ds_hdr_encode(&h, from);

	memset(buf, 0, DS_WIRE_GRH_LEN);
	memcpy(buf + DS_WIRE_GRH_LEN, &h, hlen);
	memset(buf + DS_WIRE_GRH_LEN + hlen, 'd', len);
	return (uint32_t)(DS_WIRE_GRH_LEN + hlen + len);
}

static void complete(uint64_t wr_id, enum ibv_wc_status st, uint32_t byte_len)
{
	struct ibv_wc wc = {.wr_id = wr_id,
			    .status = st,
			    .opcode = (wr_id & DS_WR_RECV) ? IBV_WC_RECV
							   : IBV_WC_SEND,
			    .byte_len = byte_len,
			    .qp_num = qp->cm_id->qp->qp_num};

	fake_verbs_complete(qp->cq, &wc);
}

START_TEST(a_received_datagram_is_read_and_its_slot_reposted)
{
	struct sockaddr_in from;
	socklen_t fromlen = sizeof(from);
	char buf[64];

	complete(DS_WR_RECV | 1, IBV_WC_SUCCESS, fill_slot(1, &peer, 33));
	poll_cqs();
	ck_assert_uint_eq(rs->dmsg_cnt, 1);
	ck_assert_int_eq(f->posted_recvs, posted); /* still the reader's */
	ck_assert_int_eq(rrecvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT,
				   (struct sockaddr *)&from, &fromlen),
			 33);
	ck_assert_int_eq(buf[0], 'd');
	ck_assert_uint_eq(from.sin_addr.s_addr, peer.sin.sin_addr.s_addr);
	ck_assert_uint_eq(from.sin_port, peer.sin.sin_port);
	ck_assert_int_eq(f->posted_recvs, posted + 1);
	ck_assert_uint_eq(
		f->recvs[(f->recv_head + f->nrecvs - 1) % FAKE_VERBS_MAX_RECVS]
			.wr_id,
		DS_WR_RECV | 1);
	ck_assert_uint_eq(rs->ds_dropped, 0);
}
END_TEST

/*
 * The header names the sender in its own family; rrecvfrom names it in
 * the socket's, as UDP does: an IPv4-mapped sender of an IPv4 socket as
 * IPv4, an IPv6 one (which the socket could not answer) dropped.
 */
START_TEST(a_sender_is_named_in_the_socket_family)
{
	union rs_sockaddr mapped, v6;
	struct sockaddr_in from;
	socklen_t fromlen = sizeof(from);
	char buf[8];

	memset(&mapped, 0, sizeof(mapped));
	mapped.sin6.sin6_family = AF_INET6;
	mapped.sin6.sin6_port = htons(7100);
	inet_pton(AF_INET6, "::ffff:192.0.2.2", &mapped.sin6.sin6_addr);
	v6 = mapped;
	inet_pton(AF_INET6, "2001:db8::2", &v6.sin6.sin6_addr);
	complete(DS_WR_RECV | 0, IBV_WC_SUCCESS, fill_slot(0, &v6, 3));
	complete(DS_WR_RECV | 1, IBV_WC_SUCCESS, fill_slot(1, &mapped, 3));
	poll_cqs();
	ck_assert_uint_eq(rs->ds_dropped, 1);
	ck_assert_int_eq(f->posted_recvs, posted + 1);
	ck_assert_int_eq(rrecvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT,
				   (struct sockaddr *)&from, &fromlen),
			 3);
	ck_assert_uint_eq(fromlen, sizeof(from));
	ck_assert_int_eq(from.sin_family, AF_INET);
	ck_assert_uint_eq(from.sin_addr.s_addr, peer.sin.sin_addr.s_addr);
	ck_assert_uint_eq(from.sin_port, peer.sin.sin_port);
}
END_TEST

START_TEST(bad_receives_are_dropped_and_reposted)
{

	/* Shorter than a GRH and a header. */
	complete(DS_WR_RECV | 0, IBV_WC_SUCCESS, DS_WIRE_GRH_LEN + 2);
	/* A receive the device failed. */
	complete(DS_WR_RECV | 1, IBV_WC_LOC_LEN_ERR, fill_slot(1, &peer, 1));
	poll_cqs();
	ck_assert_uint_eq(rs->ds_dropped, 2);
	ck_assert_uint_eq(rs->dmsg_cnt, 0);
	ck_assert_int_eq(f->posted_recvs, posted + 2);
	/* Flushed (the QP is going away) or unknown: left alone. */
	complete(DS_WR_RECV | 0, IBV_WC_WR_FLUSH_ERR, 0);
	complete(DS_WR_RECV | 500, IBV_WC_SUCCESS, fill_slot(1, &peer, 1));
	poll_cqs();
	ck_assert_uint_eq(rs->ds_dropped, 2);
	ck_assert_uint_eq(rs->dmsg_cnt, 0);
	ck_assert_int_eq(f->posted_recvs, posted + 2);
}
END_TEST

START_TEST(nothing_queues_after_shut_rd)
{
	char buf[8];

	ck_assert_int_eq(rshutdown(fd, SHUT_RD), 0);
	complete(DS_WR_RECV | 0, IBV_WC_SUCCESS, fill_slot(0, &peer, 5));
	poll_cqs();
	ck_assert_uint_eq(rs->dmsg_cnt, 0);
	ck_assert_int_eq(f->posted_recvs, posted + 1);
	ck_assert_int_eq(rrecv(fd, buf, sizeof(buf), MSG_DONTWAIT), 0);
}
END_TEST

/* A send slot taken as the send path takes it, for @dest. */
static uint32_t take_slot(struct ds_dest *dest)
{
	uint32_t slot = rs->dsfree[--rs->dsfree_cnt];

	ds_dest_pin(dest);
	rs->dsslot_dest[slot] = dest;
	return slot;
}

START_TEST(a_send_completion_frees_its_slot)
{
	struct ds_dest dest = {.pins = 1};
	uint32_t a = take_slot(&dest), b = take_slot(&dest);

	ck_assert_uint_eq(rs->dsfree_cnt, rs->sq_size - 2);
	ck_assert_uint_eq(dest.pins, 3);
	complete(a, IBV_WC_SUCCESS, 0);
	poll_cqs();
	ck_assert_uint_eq(rs->dsfree_cnt, rs->sq_size - 1);
	ck_assert_uint_eq(dest.pins, 2);
	ck_assert_ptr_null(rs->dsslot_dest[a]);
	ck_assert_uint_eq(rs->ds_dropped, 0);
	/* A datagram lost on its way out still frees its slot. */
	complete(b, IBV_WC_RETRY_EXC_ERR, 0);
	poll_cqs();
	ck_assert_uint_eq(rs->dsfree_cnt, rs->sq_size);
	ck_assert_uint_eq(dest.pins, 1);
	ck_assert_uint_eq(rs->ds_dropped, 1);
	/* Nothing more to free: a stray completion changes nothing. */
	complete(a, IBV_WC_SUCCESS, 0);
	complete(rs->sq_size + 3, IBV_WC_SUCCESS, 0);
	poll_cqs();
	ck_assert_uint_eq(rs->dsfree_cnt, rs->sq_size);
	ck_assert_uint_eq(dest.pins, 1);
}
END_TEST

START_TEST(cqs_armed_once_and_their_events_taken)
{

	pthread_mutex_lock(&rs->lock);
	ds_arm_cqs(rs);
	ck_assert(qp->armed);
	ds_arm_cqs(rs); /* already armed: no second request */
	pthread_mutex_unlock(&rs->lock);
	complete(0, IBV_WC_SUCCESS, 0);
	ck_assert(unit_readable(qp->channel->fd));
	pthread_mutex_lock(&rs->lock);
	ds_take_cq_events(rs);
	ck_assert(!qp->armed);
	ck_assert(!unit_readable(qp->channel->fd));
	/* Not armed: nothing to take, and the channel is not read. */
	ds_take_cq_events(rs);
	pthread_mutex_unlock(&rs->lock);
	ck_assert_int_eq(fake_verbs_cq_depth(qp->cq), 1);
}
END_TEST

Suite *rsocket_dgram_qp_suite(void)
{
	Suite *s = suite_create("rsocket_dgram_qp");
	TCase *t = tcase_create("qps");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, one_qp_per_local_address);
	tcase_add_test(t, ipv6_sources_differ_by_scope);
	tcase_add_test(t, a_taken_port_is_replaced_by_any);
	tcase_add_test(t, failures_leave_nothing);
	tcase_add_test(t, queues_fit_the_device_and_the_buffers);
	tcase_add_test(t, a_device_without_limits_gets_the_smallest_queues);
	suite_add_tcase(s, t);
	t = tcase_create("completions");
	tcase_add_checked_fixture(t, qp_setup, teardown);
	tcase_add_test(t, a_received_datagram_is_read_and_its_slot_reposted);
	tcase_add_test(t, bad_receives_are_dropped_and_reposted);
	tcase_add_test(t, a_sender_is_named_in_the_socket_family);
	tcase_add_test(t, nothing_queues_after_shut_rd);
	tcase_add_test(t, a_send_completion_frees_its_slot);
	tcase_add_test(t, cqs_armed_once_and_their_events_taken);
	suite_add_tcase(s, t);
	return s;
}
