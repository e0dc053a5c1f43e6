// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * cm_sys_test (see cm_sys.h): Error paths of the API, and what the library says on iWARP instead
 * of what iWARP cannot do.
 */
#define _GNU_SOURCE
#include "cm_sys.h"

/* --- errors --------------------------------------------------------------- */

/* The same host part with the last byte(s) changed: nobody has it. */
static void nobody_addr(const char *addr, struct sockaddr_storage *ss)
{
	hx_parse_addr(addr, 4791, ss);
	if (ss->ss_family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;
		uint32_t a = ntohl(sin->sin_addr.s_addr);

		sin->sin_addr.s_addr = htonl((a & ~0xffu) | 99);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_addr.s6_addr[14] = 0;
		sin6->sin6_addr.s6_addr[15] = 0x99;
	}
}

int cmd_errors(int argc, char **argv)
{
	struct rdma_event_channel *ch = make_channel();
	struct sockaddr_storage ss, nobody, foreign;
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct ibv_context **devs;
	struct rdma_cm_id *id, *sync_id;
	struct sockaddr_un sun;
	int one = 1, ndev = -1, r;
	uint8_t tos = 0;
	char b1[80];
	double t0;

	/* Every check runs; the verdict names the first bad one. */
	hx_collect();
	(void)argc;
	memset(&cp, 0, sizeof(cp));
	cp.qp_num = 0x123;
	cp.responder_resources = 1;
	cp.initiator_depth = 1;

	hx_stage("errors: devices");
	devs = rdma_get_devices(&ndev);
	hx_result(devs && ndev >= 1, "rdma_get_devices gives %d devices", ndev);
	if (devs) {
		int i;

		for (i = 0; i < ndev; i++)
			if (!devs[i]) {
				hx_result(false, "device %d of %d is NULL", i,
					  ndev);
				break;
			}
		hx_result(devs[ndev] == NULL,
			  "rdma_get_devices list is NULL-terminated");
		for (i = 0; i < ndev && devs[i]; i++)
			hx_note("device %d: %s", i,
				ibv_get_device_name(devs[i]->device));
		rdma_free_devices(devs);
	}

	hx_stage("errors: ids without addresses");
	EXPECT_ERR(rdma_create_id(ch, &id, NULL, (enum rdma_port_space)0x7777),
		   EINVAL);
	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	EXPECT_ERR(rdma_connect(id, &cp), EINVAL);
	EXPECT_ERR(rdma_connect(id, NULL), EINVAL);
	EXPECT_ERR(
		rdma_set_option(id, 42, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)),
		ENOPROTOOPT);
	EXPECT_ERR(rdma_set_option(id, RDMA_OPTION_ID, 4242, &tos, sizeof(tos)),
		   ENOPROTOOPT);
	EXPECT_ERR(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR,
				   &one, 1),
		   EINVAL);
	r = rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one,
			    sizeof(one));
	hx_result(r == 0, "rdma_set_option(REUSEADDR, int) = %d (%s)", r,
		  r ? strerror(errno) : "ok");
	r = rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
			    sizeof(tos));
	hx_result(r == 0, "rdma_set_option(TOS, uint8_t) = %d (%s)", r,
		  r ? strerror(errno) : "ok");
	/* rdma_get_option (a fork extension) reads back what was set. */
	tos = 0x20;
	CHECK_OK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
				 sizeof(tos)));
	tos = 0;
	r = rdma_get_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
			    sizeof(tos));
	hx_result(r == 0 && tos == 0x20, "rdma_get_option(TOS) = %d, tos 0x%x",
		  r, tos);
	tos = 0;
	hx_parse_addr(argv[1], 0, &ss);
	EXPECT_ERR(rdma_leave_multicast(id, (struct sockaddr *)&ss),
		   EADDRNOTAVAIL);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/nonexistent");
	EXPECT_ERR(rdma_bind_addr(id, (struct sockaddr *)&sun), EAFNOSUPPORT);
	EXPECT_ERR(rdma_bind_addr(id, NULL), EINVAL);
	EXPECT_ERR(rdma_resolve_addr(id, NULL, NULL, 1000), EINVAL);
	EXPECT_ERR(rdma_resolve_addr(id, NULL, (struct sockaddr *)&sun, 1000),
		   EAFNOSUPPORT);
	EXPECT_ERR(rdma_get_request(id, &sync_id), EINVAL);
	EXPECT_ERR(rdma_accept(id, NULL), 0);
	EXPECT_ERR(rdma_accept(id, &cp), 0);
	EXPECT_ERR(rdma_write_cm_event(NULL, RDMA_CM_EVENT_USER, 0, 42),
		   EINVAL);
	EXPECT_ERR(rdma_disconnect(id), 0);
	/* The kernel refuses a foreign address (TEST-NET-2 is nobody's). */
	hx_parse_addr("198.51.100.7", 0, &foreign);
	if (ss.ss_family == AF_INET6)
		hx_parse_addr("2001:db8:dead::7", 0, &foreign);
	EXPECT_ERR(rdma_bind_addr(id, (struct sockaddr *)&foreign),
		   EADDRNOTAVAIL);

	hx_stage("errors: bound id");
	CHECK_OK(rdma_bind_addr(id, (struct sockaddr *)&ss));
	hx_note("bound to %s",
		hx_addr_str(rdma_get_local_addr(id), b1, sizeof(b1)));
	hx_result(id->verbs != NULL, "a bound id has a verbs context");
	EXPECT_ERR(rdma_bind_addr(id, (struct sockaddr *)&ss), EINVAL);
	EXPECT_ERR(rdma_connect(id, &cp), EINVAL);
	EXPECT_ERR(rdma_accept(id, &cp), 0);
	EXPECT_ERR(rdma_leave_multicast(id, (struct sockaddr *)&ss),
		   EADDRNOTAVAIL);
	EXPECT_ERR(rdma_get_request(id, &sync_id), EINVAL);
	CHECK_OK(rdma_destroy_id(id));

	hx_stage("errors: id with only its address resolved");
	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	hx_parse_addr(argv[1], 4791, &ss);
	CHECK_OK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, 2000));
	hx_expect_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED, id, "errors");
	EXPECT_ERR(rdma_connect(id, &cp), EINVAL);
	CHECK_OK(rdma_destroy_id(id));

	hx_stage("errors: resolve an address nobody has");
	nobody_addr(argv[1], &nobody);
	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	t0 = hx_now_s();
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&nobody, 500)) {
		/* Failing at once is fine too. */
		hx_result(
			errno != 0, "resolve %s fails at once: %s",
			hx_addr_str((struct sockaddr *)&nobody, b1, sizeof(b1)),
			strerror(errno));
	} else {
		ev = hx_next_event(ch, hx_event_timeout_ms());
		if (!ev) {
			hx_result(false, "no event %d ms after resolving %s",
				  hx_event_timeout_ms(),
				  hx_addr_str((struct sockaddr *)&nobody, b1,
					      sizeof(b1)));
		} else {
			hx_result(ev->event == RDMA_CM_EVENT_ADDR_ERROR ||
					  ev->event ==
						  RDMA_CM_EVENT_ROUTE_ERROR ||
					  ev->event ==
						  RDMA_CM_EVENT_UNREACHABLE,
				  "resolving %s gives %s (status %d) after "
				  "%.2f s",
				  hx_addr_str((struct sockaddr *)&nobody, b1,
					      sizeof(b1)),
				  rdma_event_str(ev->event), ev->status,
				  hx_now_s() - t0);
			hx_result(ev->id == id, "the error event names the id");
			rdma_ack_cm_event(ev);
		}
	}
	CHECK_OK(rdma_destroy_id(id));

	hx_stage("errors: synchronous ids and events");
	CHECK_OK(rdma_create_id(NULL, &sync_id, NULL, RDMA_PS_TCP));
	hx_result(sync_id->channel != NULL,
		  "a synchronous id has a private channel");
	/* (rdma_get_request on a synchronous id that is not listening
	 * blocks, as in rdma-core: not tested.) */
	EXPECT_ERR(rdma_get_request(NULL, &id), EINVAL);
	EXPECT_ERR(rdma_get_request(sync_id, NULL), EINVAL);
	CHECK_OK(rdma_destroy_id(sync_id));
	EXPECT_ERR(rdma_get_cm_event(NULL, &ev), EINVAL);
	EXPECT_ERR(rdma_ack_cm_event(NULL), EINVAL);
	EXPECT_ERR(rdma_destroy_id(NULL), EINVAL);
	{
		int fl = fcntl(ch->fd, F_GETFL);

		CHECK_OK(fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK));
		EXPECT_ERR(rdma_get_cm_event(ch, &ev), EAGAIN);
		CHECK_OK(fcntl(ch->fd, F_SETFL, fl));
	}
	hx_result(!strcmp(rdma_event_str(RDMA_CM_EVENT_ESTABLISHED),
			  "RDMA_CM_EVENT_ESTABLISHED"),
		  "rdma_event_str(ESTABLISHED)");
	hx_result(rdma_event_str((enum rdma_cm_event_type)1000) != NULL,
		  "rdma_event_str(1000) is not NULL");
	rdma_destroy_event_channel(ch);

	return hx_verdict();
}

/* --- iWARP: what it cannot do ---------------------------------------------- */

/* Join @group through rdma_set_option, as a socket would. */
static int join_by_option(struct rdma_cm_id *id, const struct sockaddr *group)
{
	if (group->sa_family == AF_INET) {
		struct ip_mreq m;

		memset(&m, 0, sizeof(m));
		m.imr_multiaddr = ((const struct sockaddr_in *)group)->sin_addr;
		return rdma_set_option(id, RDMA_OPTION_IP, IP_ADD_MEMBERSHIP,
				       &m, sizeof(m));
	} else {
		struct ipv6_mreq m;

		memset(&m, 0, sizeof(m));
		m.ipv6mr_multiaddr =
			((const struct sockaddr_in6 *)group)->sin6_addr;
		return rdma_set_option(id, RDMA_OPTION_IPV6, IPV6_JOIN_GROUP,
				       &m, sizeof(m));
	}
}

/*
 * On an iWARP device, datagram and multicast calls fail at once with
 * EOPNOTSUPP (rdma_cm(7)) instead of reaching iw_cm or the provider: a
 * RDMA_PS_UDP id resolved to the device cannot get a UD QP, connect,
 * listen or rdma_sendto; no id can join a multicast group, by
 * rdma_join_multicast or by option.  SKIP on other transports.
 */
int cmd_iwarp_errors(int argc, char **argv)
{
	struct rdma_event_channel *ch = make_channel();
	struct sockaddr_storage ss, grp;
	struct ibv_qp_init_attr qpa;
	struct rdma_addrinfo hints, *res;
	struct ibv_send_wr wr;
	struct rdma_conn_param cp;
	struct rdma_cm_id *id, *ep;
	char b1[80];
	int r;

	/* Every check runs; the verdict names the first bad one. */
	hx_collect();
	(void)argc;
	hx_parse_addr(argv[1], 0, &ss);
	hx_parse_addr(argv[2], 0, &grp);
	memset(&cp, 0, sizeof(cp));
	memset(&qpa, 0, sizeof(qpa));
	qpa.qp_type = IBV_QPT_UD;
	qpa.cap.max_send_wr = qpa.cap.max_recv_wr = 4;
	qpa.cap.max_send_sge = qpa.cap.max_recv_sge = 1;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;

	hx_stage("iwarp_errors: UDP id resolved to the device");
	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP));
	hx_parse_addr(argv[1], 4791, &ss);
	CHECK_OK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, 2000));
	hx_expect_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED, id, "udp id");
	if (!is_iwarp(id))
		hx_skip("the device is not iWARP");
	hx_note("%s is on iWARP device %s",
		hx_addr_str((struct sockaddr *)&ss, b1, sizeof(b1)),
		ibv_get_device_name(id->verbs->device));
	EXPECT_ERR(rdma_create_qp(id, NULL, &qpa), EOPNOTSUPP);
	CHECK_OK(rdma_resolve_route(id, 2000));
	hx_expect_ack(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, id, "udp id");
	EXPECT_ERR(rdma_connect(id, &cp), EOPNOTSUPP);
	EXPECT_ERR(rdma_join_multicast(id, (struct sockaddr *)&grp, NULL),
		   EOPNOTSUPP);
	EXPECT_ERR(join_by_option(id, (struct sockaddr *)&grp), EOPNOTSUPP);
	EXPECT_ERR(rdma_sendto(id, &wr, (struct sockaddr *)&ss), EOPNOTSUPP);
	CHECK_OK(rdma_destroy_id(id));

	hx_stage("iwarp_errors: UDP listener on the device");
	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP));
	hx_parse_addr(argv[1], 0, &ss);
	CHECK_OK(rdma_bind_addr(id, (struct sockaddr *)&ss));
	EXPECT_ERR(rdma_listen(id, 1), EOPNOTSUPP);
	CHECK_OK(rdma_destroy_id(id));

	hx_stage("iwarp_errors: TCP id");
	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	CHECK_OK(rdma_bind_addr(id, (struct sockaddr *)&ss));
	EXPECT_ERR(rdma_join_multicast(id, (struct sockaddr *)&grp, NULL),
		   EOPNOTSUPP);
	EXPECT_ERR(join_by_option(id, (struct sockaddr *)&grp), EOPNOTSUPP);
	EXPECT_ERR(rdma_create_qp(id, NULL, &qpa), EOPNOTSUPP);
	EXPECT_ERR(rdma_sendto(id, &wr, (struct sockaddr *)&ss), EOPNOTSUPP);
	/* Only the checks are refused: an RC QP still works. */
	qpa.qp_type = IBV_QPT_RC;
	r = rdma_create_qp(id, NULL, &qpa);
	hx_result(r == 0, "an RC QP on the same id: %d (%s)", r,
		  r ? strerror(errno) : "ok");
	if (!r)
		rdma_destroy_qp(id);
	CHECK_OK(rdma_destroy_id(id));

	hx_stage("iwarp_errors: rdma_create_ep with a datagram hint");
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_UDP;
	hints.ai_qp_type = IBV_QPT_UD;
	r = rdma_getaddrinfo(argv[1], "7999", &hints, &res);
	hx_result(r == 0, "rdma_getaddrinfo(%s, UDP) = %d", argv[1], r);
	if (!r) {
		qpa.qp_type = IBV_QPT_UD;
		EXPECT_ERR(rdma_create_ep(&ep, res, NULL, &qpa), EOPNOTSUPP);
		rdma_freeaddrinfo(res);
	}
	rdma_destroy_event_channel(ch);

	return hx_verdict();
}
