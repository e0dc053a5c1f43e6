/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Two stream rsockets of this process whose QPs are joined by the fake
 * verbs' wire (fake_verbs_connect): what one side RDMA-writes lands in
 * the other's memory with its immediate data, as on hardware, so the data
 * path runs exactly as over a NIC, without a VM and without timing.  The
 * connection is set up by hand (each side binds through the fake rdma_cm
 * device, creates its endpoint and takes the other's connection data
 * through the wire encoding); the CM handshake is rsocket/conn.c's.
 * Include cm/cma.h, rsocket/rs.h, rsocket/wire.h, fake_verbs.h and unit.h
 * first.
 */
#ifndef RS_PAIR_H_UNIT
#define RS_PAIR_H_UNIT

#define SMALL_BUF 8192 /* each side's send and receive buffer */

static inline struct rsocket *rs_of(int s)
{
	struct rsocket *rs = rs_get(s);

	ck_assert_ptr_nonnull(rs);
	rs_put(rs); /* the table keeps it while the test uses it */
	return rs;
}

static inline struct ibv_qp *qp_of(int s)
{
	return rs_of(s)->cm_id->qp;
}

/* One side: bound (so on the fake device), buffers sized, endpoint made. */
static inline int stream_end(const char *addr, unsigned int iomap)
{
	struct sockaddr_in sin = unit_ipv4(addr, 7471);
	int size = SMALL_BUF;
	int s = rsocket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(s, 0);
	ck_assert_int_eq(
		rsetsockopt(s, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)), 0);
	ck_assert_int_eq(
		rsetsockopt(s, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size)), 0);
	if (iomap)
		ck_assert_int_eq(rsetsockopt(s, SOL_RDMA, RDMA_IOMAPSIZE,
					     &iomap, sizeof(iomap)),
				 0);
	ck_assert_int_eq(rbind(s, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_ptr_nonnull(rs_of(s)->cm_id->verbs);
	ck_assert_int_eq(rs_create_ep(rs_of(s)), 0);
	return s;
}

/* @to takes @from's connection data as it crosses the wire. */
static inline void take_params(int to, int from)
{
	struct rs_conn_params p;
	struct rs_wire_conn wire;

	rs_get_conn_params(rs_of(from), &p);
	rs_conn_encode(&wire, &p);
	ck_assert_int_eq(rs_conn_decode(&wire, sizeof(wire), &p), 0);
	rs_set_conn_params(rs_of(to), &p);
}

/* *@a and *@b, connected to each other. */
static inline void rs_pair_connect(int *a, int *b, unsigned int iomap)
{
	*a = stream_end("192.0.2.1", iomap);
	*b = stream_end("192.0.2.2", iomap);
	take_params(*a, *b);
	take_params(*b, *a);
	fake_verbs_connect(qp_of(*a), qp_of(*b));
	rs_set_state(rs_of(*a), RS_CONNECT_RDWR);
	rs_set_state(rs_of(*b), RS_CONNECT_RDWR);
}

#endif /* RS_PAIR_H_UNIT */
