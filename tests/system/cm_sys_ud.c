// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * cm_sys_test (see cm_sys.h): UD and multicast.
 */
#define _GNU_SOURCE
#include "cm_sys.h"

/* --- UD ------------------------------------------------------------------- */

/* One datagram of @text from @e to QP @qpn behind @ah, and its completion. */
static void ud_send(struct end *e, const char *text, struct ibv_ah *ah,
		    uint32_t qpn)
{
	struct ibv_wc wc;
	int r;

	snprintf(e->sbuf, sizeof(e->sbuf), "%s", text);
	CHECK_OK(rdma_post_ud_send(e->id, e->sbuf, e->sbuf, strlen(e->sbuf) + 1,
				   e->smr, IBV_SEND_SIGNALED, ah, qpn));
	r = rdma_get_send_comp(e->id, &wc);
	CHECK(r == 1 && wc.status == IBV_WC_SUCCESS,
	      "%s: ud send completion: %d, %s", e->who, r,
	      r == 1 ? ibv_wc_status_str(wc.status) : strerror(errno));
}

int cmd_ud(int argc, char **argv)
{
	const char *src = argc > 2 ? argv[2] : NULL;
	struct end srv = {.who = "ud server"}, cli = {.who = "ud client"};
	struct rdma_event_channel *sch = make_channel(), *cch = make_channel();
	struct rdma_ud_param ud;
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *listen;
	struct ibv_ah *ah, *reply_ah;
	struct ibv_wc rwc;
	uint16_t port;

	listen = make_listener(sch, argv[1], RDMA_PS_UDP, &port);
	CHECK(listen->qp_type == IBV_QPT_UD, "RDMA_PS_UDP id qp_type %d",
	      listen->qp_type);
	CHECK_OK(rdma_create_id(cch, &cli.id, &cli, RDMA_PS_UDP));
	client_resolve(cch, cli.id, src, argv[1], port);
	make_qp(&cli, IBV_QPT_UD);
	reg_bufs(&cli);
	post_recv(&cli);

	cp = pdata_conn_param();
	hx_stage("ud rdma_connect (SIDR)");
	CHECK_OK(rdma_connect(cli.id, &cp));
	ev = hx_expect_event_for(sch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL,
				 "ud server");
	CHECK(ev->listen_id == listen, "CONNECT_REQUEST listen_id");
	srv.id = ev->id;
	check_pdata(ev->param.ud.private_data, ev->param.ud.private_data_len,
		    cli_pdata, "UD CONNECT_REQUEST");
	CHECK(srv.id->qp_type == IBV_QPT_UD && srv.id->ps == RDMA_PS_UDP,
	      "new UD id qp_type %d ps %d", srv.id->qp_type, srv.id->ps);
	CHECK_OK(rdma_ack_cm_event(ev));
	make_qp(&srv, IBV_QPT_UD);
	reg_bufs(&srv);
	post_recv(&srv);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = srv_pdata;
	cp.private_data_len = sizeof(srv_pdata);
	hx_stage("ud rdma_accept (SIDR reply)");
	CHECK_OK(rdma_accept(srv.id, &cp));

	ev = hx_expect_event_for(cch, RDMA_CM_EVENT_ESTABLISHED, cli.id,
				 "ud client");
	ud = ev->param.ud;
	hx_note("ud ESTABLISHED: remote qpn 0x%x (server QP 0x%x), qkey 0x%x, "
		"is_global %u, port %u",
		ud.qp_num, srv.id->qp->qp_num, ud.qkey, ud.ah_attr.is_global,
		ud.ah_attr.port_num);
	check_pdata(ud.private_data, ud.private_data_len, srv_pdata,
		    "UD ESTABLISHED");
	CHECK(ud.qp_num == srv.id->qp->qp_num,
	      "ESTABLISHED qp_num 0x%x, server QP is 0x%x", ud.qp_num,
	      srv.id->qp->qp_num);
	CHECK(ud.qkey == RDMA_UDP_QKEY, "qkey 0x%x, want 0x%x", ud.qkey,
	      RDMA_UDP_QKEY);
	CHECK(ud.ah_attr.port_num == cli.id->port_num,
	      "ah_attr port %u, id port %u", ud.ah_attr.port_num,
	      cli.id->port_num);
	hx_stage("ibv_create_ah from ESTABLISHED");
	ah = ibv_create_ah(cli.id->pd, &ud.ah_attr);
	if (!ah)
		hx_fail("ibv_create_ah from the ESTABLISHED ah_attr: %s",
			strerror(errno));
	CHECK_OK(rdma_ack_cm_event(ev));
	/* The server's id gets no event for a SIDR accept. */
	hx_expect_quiet(sch, 100, "ud server after accept");

	hx_stage("ud send client -> server");
	ud_send(&cli, "ud datagram from client", ah, ud.qp_num);
	recv_msg_wc(&srv, "ud datagram from client", HX_GRH_LEN, &rwc);
	CHECK(rwc.src_qp == cli.id->qp->qp_num,
	      "datagram from QP 0x%x, client QP is 0x%x", rwc.src_qp,
	      cli.id->qp->qp_num);

	/* The reply goes back along the received datagram's path. */
	hx_stage("ud reply server -> client");
	reply_ah = ibv_create_ah_from_wc(
		srv.id->pd, &rwc, (struct ibv_grh *)srv.rbuf, srv.id->port_num);
	if (!reply_ah)
		hx_fail("ibv_create_ah_from_wc: %s", strerror(errno));
	ud_send(&srv, "ud datagram from server", reply_ah, rwc.src_qp);
	recv_msg(&cli, "ud datagram from server", HX_GRH_LEN);

	hx_stage("ud teardown");
	CHECK_OK(ibv_destroy_ah(ah));
	CHECK_OK(ibv_destroy_ah(reply_ah));
	destroy_end(&srv);
	destroy_end(&cli);
	CHECK_OK(rdma_destroy_id(listen));
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
	return 0;
}

/* --- multicast ------------------------------------------------------------ */

/*
 * The sender joins as a send-only full member (rdma_join_multicast_ex, as
 * mckey -o does: its QP is not attached to the group), the receiver with
 * rdma_join_multicast.
 */
static int mcast_join(struct end *e, struct sockaddr *group, void *ctx,
		      bool send_only)
{
	struct rdma_cm_join_mc_attr_ex attr;

	if (!send_only)
		return rdma_join_multicast(e->id, group, ctx);
	memset(&attr, 0, sizeof(attr));
	attr.comp_mask =
		RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	attr.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	attr.addr = group;
	return rdma_join_multicast_ex(e->id, &attr, ctx);
}

int cmd_mcast(int argc, char **argv)
{
	struct rdma_event_channel *ch = make_channel(), *ch2;
	struct end m[2] = {{.who = "mcast sender"}, {.who = "mcast receiver"}};
	const char *addr2 = argc > 3 ? argv[3] : argv[1];
	struct sockaddr_storage group, bind_addr;
	struct rdma_ud_param ud[2];
	struct rdma_cm_event *ev;
	struct ibv_ah *ah;
	int ctx[2], i, r;

	if (argc < 3)
		hx_fail("usage: mcast <addr> <group> [<addr2>]");
	hx_parse_addr(argv[2], 0, &group);
	for (i = 0; i < 2; i++) {
		hx_stage("mcast: create, bind, QP");
		CHECK_OK(rdma_create_id(ch, &m[i].id, &m[i], RDMA_PS_UDP));
		hx_parse_addr(i ? addr2 : argv[1], 0, &bind_addr);
		CHECK_OK(
			rdma_bind_addr(m[i].id, (struct sockaddr *)&bind_addr));
		CHECK(m[i].id->verbs, "bound UD id without verbs");
		make_qp(&m[i], IBV_QPT_UD);
		reg_bufs(&m[i]);
		post_recv(&m[i]);
		hx_stage("mcast: join");
		if (mcast_join(&m[i], (struct sockaddr *)&group, &ctx[i], !i)) {
			/*
			 * Linux (6.1 at least) refuses IPv6 groups on RoCE v2
			 * GIDs with the kernel-internal ENOTSUPP (524).
			 */
			if (errno == HX_KERNEL_ENOTSUPP &&
			    group.ss_family == AF_INET6)
				hx_skip("the kernel does not support IPv6 "
					"multicast on this device "
					"(rdma_join_multicast: errno 524, "
					"ENOTSUPP)");
			hx_fail("%s: %s (errno %d)",
				i ? "rdma_join_multicast"
				  : "rdma_join_multicast_ex (send-only)",
				strerror(errno), errno);
		}
		ev = hx_expect_event_for(ch, RDMA_CM_EVENT_MULTICAST_JOIN,
					 m[i].id, m[i].who);
		ud[i] = ev->param.ud;
		CHECK(ud[i].private_data == &ctx[i],
		      "MULTICAST_JOIN private_data %p is not the join context "
		      "%p",
		      ud[i].private_data, (void *)&ctx[i]);
		hx_note("%s joined: qpn 0x%x qkey 0x%x is_global %u dlid 0x%x",
			m[i].who, ud[i].qp_num, ud[i].qkey,
			ud[i].ah_attr.is_global, ud[i].ah_attr.dlid);
		CHECK(ud[i].qp_num == 0xFFFFFF,
		      "join qp_num 0x%x, want 0xFFFFFF", ud[i].qp_num);
		CHECK(ud[i].ah_attr.is_global, "join ah_attr has no GRH");
		CHECK_OK(rdma_ack_cm_event(ev));
	}
	CHECK(!memcmp(&ud[0].ah_attr.grh.dgid, &ud[1].ah_attr.grh.dgid, 16),
	      "the two joins report different MGIDs");

	/*
	 * The kernel counts a group's events on the id too: migrating an id
	 * that has had a MULTICAST_JOIN must not wait for ever.
	 */
	hx_stage("mcast: rdma_migrate_id after a join");
	ch2 = make_channel();
	CHECK_OK(rdma_migrate_id(m[1].id, ch2));
	CHECK_OK(rdma_migrate_id(m[1].id, ch));
	rdma_destroy_event_channel(ch2);

	hx_stage("mcast: send to the group");
	ah = ibv_create_ah(m[0].id->pd, &ud[0].ah_attr);
	if (!ah)
		hx_fail("ibv_create_ah from the join event: %s",
			strerror(errno));
	/* The group's Q_Key is RDMA_UDP_QKEY, which rdma_post_ud_send uses. */
	CHECK(ud[0].qkey == RDMA_UDP_QKEY, "group qkey 0x%x", ud[0].qkey);
	ud_send(&m[0], "multicast datagram", ah, ud[0].qp_num);
	hx_stage("mcast: receive on the second member");
	recv_msg(&m[1], "multicast datagram", HX_GRH_LEN);

	hx_stage("mcast: leave");
	for (i = 0; i < 2; i++) {
		CHECK_OK(rdma_leave_multicast(m[i].id,
					      (struct sockaddr *)&group));
		errno = 0;
		r = rdma_leave_multicast(m[i].id, (struct sockaddr *)&group);
		CHECK(r == -1 && errno == EADDRNOTAVAIL, "second leave: %d, %s",
		      r, strerror(errno));
	}
	CHECK_OK(ibv_destroy_ah(ah));
	hx_expect_quiet(ch, 100, "mcast after leave");
	for (i = 0; i < 2; i++)
		destroy_end(&m[i]);
	rdma_destroy_event_channel(ch);
	return 0;
}
