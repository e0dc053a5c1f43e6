// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * cm_sys_test (see cm_sys.h): RC connect/disconnect, reject, reject with ECE.
 */
#define _GNU_SOURCE
#include "cm_sys.h"

static int cmd_rc(int argc, char **argv, bool server_first)
{
	const char *src = argc > 2 ? argv[2] : NULL;
	struct rc_pair p;

	rc_setup(&p, argv[1]);
	hx_note("listening on %s port %u", argv[1], p.port);
	rc_connect(&p, argv[1], src, true);
	check_initiator(&p);
	rc_exchange(&p, 3);
	rc_rdma(&p);
	rc_disconnect(&p, server_first);
	rc_teardown(&p);
	return 0;
}

int cmd_rc_async(int argc, char **argv)
{
	return cmd_rc(argc, argv, false);
}

int cmd_rc_server_disconnect(int argc, char **argv)
{
	return cmd_rc(argc, argv, true);
}

/* --- reject --------------------------------------------------------------- */

int cmd_reject(int argc, char **argv)
{
	const char *src = argc > 2 ? argv[2] : NULL;
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *req;
	struct rc_pair p;
	uint16_t dead_port;

	rc_setup_client(&p, argv[1], src);
	make_qp(&p.cli, IBV_QPT_RC);
	cp = client_conn_param();
	hx_stage("rdma_connect");
	CHECK_OK(rdma_connect(p.cli.id, &cp));
	ev = hx_expect_event_for(p.sch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL,
				 "server");
	req = ev->id;
	check_pdata(ev->param.conn.private_data,
		    ev->param.conn.private_data_len, cli_pdata,
		    "CONNECT_REQUEST");
	hx_stage("rdma_reject");
	/* The terminating NUL is sent too, so the contents can be checked. */
	CHECK_OK(rdma_reject(req, reject_pdata, sizeof(reject_pdata)));
	CHECK_OK(rdma_ack_cm_event(ev));
	hx_stage("client waiting for REJECTED");
	ev = hx_expect_event_for(p.cch, RDMA_CM_EVENT_REJECTED, p.cli.id,
				 "client");
	hx_note("REJECTED status %d, %u bytes of private data", ev->status,
		ev->param.conn.private_data_len);
	CHECK(ev->status != 0, "REJECTED with status 0");
	check_pdata(ev->param.conn.private_data,
		    ev->param.conn.private_data_len, reject_pdata, "REJECTED");
	CHECK_OK(rdma_ack_cm_event(ev));
	CHECK_OK(rdma_destroy_id(req));
	destroy_end(&p.cli);

	/* A port nobody listens on is refused too, without private data. */
	hx_stage("connect to a port without a listener");
	CHECK_OK(rdma_create_id(p.cch, &p.cli.id, &p.cli, RDMA_PS_TCP));
	dead_port = (uint16_t)(p.port == 65535 ? 65534 : p.port + 1);
	client_resolve(p.cch, p.cli.id, src, argv[1], dead_port);
	make_qp(&p.cli, IBV_QPT_RC);
	/*
	 * On iWARP the connect is a TCP connect, which the kernel may refuse
	 * before rdma_connect returns (siw does): ECONNREFUSED, no event.
	 */
	if (rdma_connect(p.cli.id, &cp)) {
		CHECK(is_iwarp(p.cli.id) && errno == ECONNREFUSED,
		      "rdma_connect to port %u without listener: %s", dead_port,
		      strerror(errno));
		hx_note("connect to port %u without listener: refused at once",
			dead_port);
		hx_expect_quiet(p.cch, 100, "client after a refused connect");
	} else {
		ev = hx_next_event(p.cch, hx_event_timeout_ms());
		if (!ev)
			hx_fail("no event for a connect to port %u without "
				"listener",
				dead_port);
		hx_note("connect to port %u without listener: %s status %d",
			dead_port, rdma_event_str(ev->event), ev->status);
		CHECK(ev->event == RDMA_CM_EVENT_REJECTED ||
			      ev->event == RDMA_CM_EVENT_UNREACHABLE ||
			      ev->event == RDMA_CM_EVENT_CONNECT_ERROR,
		      "connect to a port without listener gave %s",
		      rdma_event_str(ev->event));
		CHECK_OK(rdma_ack_cm_event(ev));
	}
	hx_expect_quiet(p.sch, 100, "server after connect to another port");
	destroy_end(&p.cli);
	rc_teardown(&p);
	return 0;
}

/* --- reject with ECE ------------------------------------------------------ */

/*
 * rdma_get_remote_ece on a request, then rdma_reject_ece: the active side
 * gets REJECTED with the private data and, on IB and RoCE, the CM reason
 * "vendor option not supported" (35) instead of "consumer defined" (28).
 */
int cmd_reject_ece(int argc, char **argv)
{
	const char *src = argc > 2 ? argv[2] : NULL;
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *req;
	struct ibv_ece ece;
	struct rc_pair p;

	rc_setup_client(&p, argv[1], src);
	if (is_iwarp(p.cli.id))
		hx_skip("ECE is an IB CM feature (iWARP has none)");
	make_qp(&p.cli, IBV_QPT_RC);
	cp = pdata_conn_param();
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	hx_stage("rdma_connect");
	CHECK_OK(rdma_connect(p.cli.id, &cp));
	ev = hx_expect_event_for(p.sch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL,
				 "server");
	hx_stage("rdma_get_remote_ece");
	memset(&ece, 0xff, sizeof(ece));
	CHECK_OK(rdma_get_remote_ece(ev->id, &ece));
	hx_note("request's ECE: vendor 0x%x, options 0x%x", ece.vendor_id,
		ece.options);
	errno = 0;
	CHECK(rdma_get_remote_ece(ev->id, NULL) == -1 && errno == EINVAL,
	      "rdma_get_remote_ece(id, NULL): errno %d, want EINVAL", errno);
	hx_stage("rdma_reject_ece");
	CHECK_OK(rdma_reject_ece(ev->id, reject_pdata, sizeof(reject_pdata)));
	req = ev->id;
	/* rdma-core's destroy waits for the id's events to be acked. */
	CHECK_OK(rdma_ack_cm_event(ev));
	CHECK_OK(rdma_destroy_id(req));
	hx_stage("client waiting for REJECTED");
	ev = hx_expect_event_for(p.cch, RDMA_CM_EVENT_REJECTED, p.cli.id,
				 "client");
	hx_note("REJECTED status %d", ev->status);
	CHECK(ev->status == 35,
	      "REJECTED status %d, want 35 (vendor option "
	      "not supported)",
	      ev->status);
	check_pdata(ev->param.conn.private_data,
		    ev->param.conn.private_data_len, reject_pdata, "REJECTED");
	CHECK_OK(rdma_ack_cm_event(ev));
	destroy_end(&p.cli);
	rc_teardown(&p);
	return 0;
}
