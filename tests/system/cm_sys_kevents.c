// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * cm_sys_test (see cm_sys.h): Events only the kernel makes: TIMEWAIT_EXIT, UNREACHABLE (UD reject
 * and a REQ nobody answers), CONNECT_ERROR, ADDR_CHANGE.
 */
#define _GNU_SOURCE
#include "cm_sys.h"

/* --- TIMEWAIT_EXIT -------------------------------------------------------- */

/*
 * After a disconnect the IB CM keeps each side's connection in timewait
 * (about twice the packet lifetime); an id not destroyed by then gets
 * RDMA_CM_EVENT_TIMEWAIT_EXIT, which tells it the QP may be reused.
 */
int cmd_timewait(int argc, char **argv)
{
	const char *src = argc > 2 ? argv[2] : NULL;
	struct rc_pair p;

	rc_setup(&p, argv[1]);
	rc_connect(&p, argv[1], src, false);
	if (is_iwarp(p.cli.id))
		hx_skip("iWARP connections have no timewait event");
	rc_exchange(&p, 1);
	rc_disconnect(&p, false);
	hx_stage("waiting for TIMEWAIT_EXIT");
	hx_expect_ack(p.cch, RDMA_CM_EVENT_TIMEWAIT_EXIT, p.cli.id, "client");
	hx_expect_ack(p.sch, RDMA_CM_EVENT_TIMEWAIT_EXIT, p.srv.id, "server");
	hx_expect_quiet(p.cch, 100, "client after TIMEWAIT_EXIT");
	rc_teardown(&p);
	return 0;
}

/* --- UD reject: UNREACHABLE ----------------------------------------------- */

/*
 * rdma_reject on a RDMA_PS_UDP request answers with a SIDR reply whose
 * status is "rejected" (2); the active side gets RDMA_CM_EVENT_UNREACHABLE
 * with that status and the reply's private data.  The active id is
 * migrated from another channel first, answers rdma_init_qp_attr and gets
 * its QP from rdma_create_qp_ex: UD flavours of calls the RC scenarios
 * cover.
 */
int cmd_ud_reject(int argc, char **argv)
{
	const char *src = argc > 2 ? argv[2] : NULL;
	struct end cli = {.who = "ud client"};
	struct rdma_event_channel *sch = make_channel(), *cch = make_channel();
	struct rdma_event_channel *tmp;
	struct ibv_qp_init_attr_ex qattr;
	struct ibv_qp_attr ia;
	int mask;
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *listen, *req;
	uint16_t port;

	listen = make_listener(sch, argv[1], RDMA_PS_UDP, &port);
	/* Made on a channel of its own, then moved: migration of a UD id. */
	tmp = make_channel();
	CHECK_OK(rdma_create_id(tmp, &cli.id, &cli, RDMA_PS_UDP));
	CHECK_OK(rdma_migrate_id(cli.id, cch));
	CHECK(cli.id->channel == cch, "migrated UD id's channel");
	rdma_destroy_event_channel(tmp);
	client_resolve(cch, cli.id, src, argv[1], port);
	if (is_iwarp(cli.id))
		hx_skip("iWARP has no UD");
	/* What an application making its own UD QP would ask for. */
	hx_stage("rdma_init_qp_attr (UD, INIT)");
	memset(&ia, 0, sizeof(ia));
	ia.qp_state = IBV_QPS_INIT;
	CHECK_OK(rdma_init_qp_attr(cli.id, &ia, &mask));
	CHECK((mask & (IBV_QP_STATE | IBV_QP_QKEY | IBV_QP_PORT |
		       IBV_QP_PKEY_INDEX)) == (IBV_QP_STATE | IBV_QP_QKEY |
					       IBV_QP_PORT | IBV_QP_PKEY_INDEX),
	      "UD INIT attribute mask 0x%x", mask);
	CHECK(ia.qkey == RDMA_UDP_QKEY && ia.port_num == cli.id->port_num,
	      "UD INIT attributes: qkey 0x%x port %u", ia.qkey, ia.port_num);
	hx_stage("rdma_create_qp_ex (UD)");
	memset(&qattr, 0, sizeof(qattr));
	qattr.qp_type = IBV_QPT_UD;
	qattr.cap.max_send_wr = qattr.cap.max_recv_wr = 2;
	qattr.cap.max_send_sge = qattr.cap.max_recv_sge = 1;
	CHECK_OK(rdma_create_qp_ex(cli.id, &qattr));
	CHECK(cli.id->qp && cli.id->qp->qp_type == IBV_QPT_UD,
	      "rdma_create_qp_ex made no UD QP");
	cp = pdata_conn_param();
	hx_stage("ud rdma_connect (SIDR)");
	CHECK_OK(rdma_connect(cli.id, &cp));
	ev = hx_expect_event_for(sch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL,
				 "ud server");
	req = ev->id;
	hx_stage("ud rdma_reject");
	CHECK_OK(rdma_reject(req, reject_pdata, sizeof(reject_pdata)));
	CHECK_OK(rdma_ack_cm_event(ev));
	ev = hx_expect_event_for(cch, RDMA_CM_EVENT_UNREACHABLE, cli.id,
				 "ud client");
	hx_note("UNREACHABLE status %d", ev->status);
	CHECK(ev->status == 2, "UNREACHABLE status %d, want 2 (SIDR reject)",
	      ev->status);
	check_pdata(ev->param.ud.private_data, ev->param.ud.private_data_len,
		    reject_pdata, "UNREACHABLE");
	CHECK_OK(rdma_ack_cm_event(ev));
	CHECK_OK(rdma_destroy_id(req));
	destroy_end(&cli);
	CHECK_OK(rdma_destroy_id(listen));
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
	return 0;
}

/* --- CONNECT_ERROR -------------------------------------------------------- */

/*
 * The active side's QP cannot take the connection's attributes (the
 * application put it into the error state while connecting): the library
 * cannot move it to RTR when the reply comes, so the active side gets
 * RDMA_CM_EVENT_CONNECT_ERROR, with a non-zero status, instead of
 * ESTABLISHED.
 */
int cmd_connect_error(int argc, char **argv)
{
	const char *src = argc > 2 ? argv[2] : NULL;
	struct rdma_conn_param cp;
	struct ibv_qp_attr qa;
	struct rdma_cm_event *ev;
	struct rc_pair p;

	rc_setup_client(&p, argv[1], src);
	if (is_iwarp(p.cli.id))
		hx_skip("on iWARP the kernel, not the library, moves the QP");
	make_qp(&p.cli, IBV_QPT_RC);
	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	hx_stage("rdma_connect");
	CHECK_OK(rdma_connect(p.cli.id, &cp));
	ev = hx_expect_event_for(p.sch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL,
				 "server");
	p.srv.id = ev->id;
	CHECK_OK(rdma_ack_cm_event(ev));
	p.srv.id->context = &p.srv;
	make_qp(&p.srv, IBV_QPT_RC);

	hx_stage("client QP to the error state");
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_ERR;
	CHECK(!ibv_modify_qp(p.cli.id->qp, &qa, IBV_QP_STATE),
	      "ibv_modify_qp(ERR)");
	hx_stage("rdma_accept");
	CHECK_OK(rdma_accept(p.srv.id, &cp));
	ev = hx_expect_event_for(p.cch, RDMA_CM_EVENT_CONNECT_ERROR, p.cli.id,
				 "client");
	hx_note("CONNECT_ERROR status %d", ev->status);
	CHECK(ev->status != 0, "CONNECT_ERROR with status 0");
	CHECK_OK(rdma_ack_cm_event(ev));
	/*
	 * What the passive side gets differs: this library rejects at once
	 * (REJECTED, status 28), rdma-core's only moves its QP to the error
	 * state and leaves the peer to time out.  Not checked.
	 */
	rc_teardown(&p);
	return 0;
}

/* --- ADDR_CHANGE ---------------------------------------------------------- */

/*
 * An id bound to an address of a bonding master gets
 * RDMA_CM_EVENT_ADDR_CHANGE when the bond fails over to a slave with
 * another MAC address (the kernel's NETDEV_BONDING_FAILOVER).  @cmd, run
 * with system(3) once the ids are bound, makes the fail-over happen; the
 * caller (run-in-guest.sh) builds the bond and its rxe device.  A listener
 * on the same address is told too.
 */
int cmd_addr_change(int argc, char **argv)
{
	struct rdma_event_channel *ch = make_channel();
	struct rdma_cm_id *id, *listen;
	struct sockaddr_storage ss;
	struct rdma_cm_event *ev;
	int r, i, seen = 0;

	(void)argc;
	hx_parse_addr(argv[1], 0, &ss);
	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	CHECK_OK(rdma_bind_addr(id, (struct sockaddr *)&ss));
	CHECK(id->verbs, "id bound to %s has no device", argv[1]);
	hx_note("bound to %s on %s", argv[1],
		ibv_get_device_name(id->verbs->device));
	listen = make_listener(ch, argv[1], RDMA_PS_TCP, &(uint16_t){0});

	hx_stage("addr_change: the fail-over command");
	r = system(argv[2]);
	CHECK(r == 0, "fail-over command \"%s\" exited with %d", argv[2], r);
	hx_stage("addr_change: waiting for ADDR_CHANGE");
	/* One for each id, in either order. */
	for (i = 0; i < 2; i++) {
		ev = hx_expect_event_for(ch, RDMA_CM_EVENT_ADDR_CHANGE, NULL,
					 "bound ids");
		seen |= ev->id == id ? 1 : ev->id == listen ? 2 : 4;
		CHECK_OK(rdma_ack_cm_event(ev));
	}
	CHECK(seen == 3,
	      "ADDR_CHANGE events for ids 0x%x (1 bound id, 2 "
	      "listener, 4 another)",
	      seen);
	CHECK_OK(rdma_destroy_id(listen));
	CHECK_OK(rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
	return 0;
}

/* --- UNREACHABLE for RC: a REQ nobody answers ------------------------------ */

/*
 * @dst answers ARP but runs no RDMA stack, so the IB CM's REQ goes
 * unanswered: after its retries (over a minute on Linux 6.1) the active
 * side gets RDMA_CM_EVENT_UNREACHABLE with -ETIMEDOUT.  The wait is the
 * CM's, not ours: the event timeout is raised to 180 s for this scenario
 * (run-in-guest.sh gives it the matching limit).
 */
int cmd_unreachable(int argc, char **argv)
{
	struct rdma_event_channel *ch = make_channel();
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct end cli = {.who = "client"};

	(void)argc;
	CHECK_OK(rdma_create_id(ch, &cli.id, &cli, RDMA_PS_TCP));
	client_resolve(ch, cli.id, argv[2], argv[1], 7471);
	if (is_iwarp(cli.id))
		hx_skip("an iWARP connect is a TCP connect, refused at once");
	make_qp(&cli, IBV_QPT_RC);
	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	hx_stage("rdma_connect to a peer without RDMA");
	CHECK_OK(rdma_connect(cli.id, &cp));
	if (hx_event_timeout_ms() < 180000)
		hx_set_event_timeout_ms(180000);
	ev = hx_expect_event_for(ch, RDMA_CM_EVENT_UNREACHABLE, cli.id,
				 "client");
	hx_note("UNREACHABLE status %d", ev->status);
	CHECK(ev->status == -ETIMEDOUT, "UNREACHABLE status %d, want %d",
	      ev->status, -ETIMEDOUT);
	CHECK_OK(rdma_ack_cm_event(ev));
	destroy_end(&cli);
	rdma_destroy_event_channel(ch);
	return 0;
}
