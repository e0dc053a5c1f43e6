// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * cm_sys_test (see cm_sys.h): Synchronous ids: rdma_create_ep and friends.
 */
#define _GNU_SOURCE
#include "cm_sys.h"

/* --- synchronous ids: rdma_create_ep and friends -------------------------- */

struct sync_server {
	const char *addr;
	struct end *client; /* for the server's one-sided operations */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint16_t port; /* set once listening */
	bool done;
	bool reject; /* rdma_reject the request instead of accepting it */
};

static void sync_qp_attr(struct ibv_qp_init_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->cap.max_send_wr = 4;
	attr->cap.max_recv_wr = 4;
	attr->cap.max_send_sge = 1;
	attr->cap.max_recv_sge = 1;
	attr->qp_type = IBV_QPT_RC;
}

static void *sync_server_thread(void *arg)
{
	struct sync_server *s = arg;
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *listen, *id;
	struct rdma_conn_param cp;
	struct end e = {.who = "sync server"};
	int r;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE | RAI_NUMERICHOST;
	hints.ai_port_space = RDMA_PS_TCP;
	r = rdma_getaddrinfo(s->addr, "0", &hints, &res);
	if (r)
		hx_fail("server rdma_getaddrinfo(%s): %d, %s", s->addr, r,
			strerror(errno));
	CHECK(res->ai_src_addr && res->ai_flags & RAI_PASSIVE,
	      "passive rdma_getaddrinfo gave no source address");
	CHECK(res->ai_qp_type == IBV_QPT_RC, "ai_qp_type %d", res->ai_qp_type);
	sync_qp_attr(&attr);
	CHECK_OK(rdma_create_ep(&listen, res, NULL, &attr));
	rdma_freeaddrinfo(res);
	CHECK(listen->channel, "listener has no (private) channel");
	CHECK(!listen->qp, "a passive endpoint must not get a QP");
	CHECK_OK(rdma_listen(listen, 4));

	pthread_mutex_lock(&s->lock);
	s->port = ntohs(rdma_get_src_port(listen));
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	CHECK(s->port, "passive endpoint on port 0 got no port");

	hx_stage("sync server: rdma_get_request");
	CHECK_OK(rdma_get_request(listen, &id));
	e.id = id;
	CHECK(id != listen, "rdma_get_request returned the listener");
	CHECK(id->qp, "rdma_get_request did not create the QP of the endpoint");
	CHECK(id->qp->qp_type == IBV_QPT_RC, "new QP type %d", id->qp->qp_type);
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_CONNECT_REQUEST,
	      "id->event is not the CONNECT_REQUEST");
	check_pdata(id->event->param.conn.private_data,
		    id->event->param.conn.private_data_len, cli_pdata,
		    "sync CONNECT_REQUEST");
	if (s->reject) {
		hx_stage("sync server: rdma_reject");
		CHECK_OK(rdma_reject(id, reject_pdata, sizeof(reject_pdata)));
		rdma_destroy_ep(id);
		rdma_destroy_ep(listen);
		goto done;
	}
	reg_bufs(&e);
	post_recv(&e);
	cp = server_conn_param();
	hx_stage("sync server: rdma_accept");
	CHECK_OK(rdma_accept(id, &cp));
	recv_msg(&e, "sync client to server", 0);
	post_recv(&e);
	/* The client's QP came from rdma_create_ep before it connected. */
	rdma_one_way(&e, s->client);
	send_msg(&e, "sync server to client");
	hx_stage("sync server: rdma_disconnect");
	CHECK_OK(rdma_disconnect(id));
	dereg_bufs(&e);
	hx_stage("sync server: rdma_destroy_ep");
	rdma_destroy_ep(id);
	rdma_destroy_ep(listen);
done:
	pthread_mutex_lock(&s->lock);
	s->done = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static void wait_flag(struct sync_server *s, bool want_done, const char *what)
{
	struct timespec ts;
	int r = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += hx_event_timeout_ms() / 1000 + 1;
	pthread_mutex_lock(&s->lock);
	while (!(want_done ? s->done : s->port != 0) && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&s->cond, &s->lock, &ts);
	pthread_mutex_unlock(&s->lock);
	if (r == ETIMEDOUT)
		hx_fail("timed out waiting for the server thread to %s", what);
}

/* Start @s's thread; once it listens, its port as a string in @port. */
static pthread_t start_sync_server(struct sync_server *s, char *port,
				   size_t len)
{
	pthread_t t;

	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	if (pthread_create(&t, NULL, sync_server_thread, s))
		hx_fail("pthread_create failed");
	wait_flag(s, false, "listen");
	snprintf(port, len, "%u", s->port);
	return t;
}

int cmd_rc_sync(int argc, char **argv)
{
	struct end e = {.who = "sync client"};
	struct sync_server s = {.addr = argv[1], .client = &e};
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	struct sockaddr_storage src;
	struct rdma_conn_param cp;
	char port[16];
	pthread_t t;
	int r;

	t = start_sync_server(&s, port, sizeof(port));
	hx_note("sync server listening on %s port %s", argv[1], port);

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_NUMERICHOST;
	hints.ai_port_space = RDMA_PS_TCP;
	if (argc > 2) {
		hx_parse_addr(argv[2], 0, &src);
		hints.ai_src_addr = (struct sockaddr *)&src;
		hints.ai_src_len = src.ss_family == AF_INET
					   ? sizeof(struct sockaddr_in)
					   : sizeof(struct sockaddr_in6);
	}
	r = rdma_getaddrinfo(argv[1], port, &hints, &res);
	if (r)
		hx_fail("client rdma_getaddrinfo(%s, %s): %d, %s", argv[1],
			port, r, strerror(errno));
	CHECK(res->ai_dst_addr, "active rdma_getaddrinfo gave no destination");
	sync_qp_attr(&attr);
	hx_stage("sync client: rdma_create_ep");
	CHECK_OK(rdma_create_ep(&e.id, res, NULL, &attr));
	rdma_freeaddrinfo(res);
	CHECK(e.id->qp, "active rdma_create_ep with attrs made no QP");
	CHECK(e.id->verbs && route_ok(e.id),
	      "active endpoint not route-resolved");
	reg_bufs(&e);
	post_recv(&e);
	cp = client_conn_param();
	hx_stage("sync client: rdma_connect");
	CHECK_OK(rdma_connect(e.id, &cp));
	/* A synchronous call leaves its event in id->event. */
	CHECK(e.id->event && e.id->event->event == RDMA_CM_EVENT_ESTABLISHED,
	      "id->event after rdma_connect is %s",
	      e.id->event ? rdma_event_str(e.id->event->event) : "NULL");
	check_pdata(e.id->event->param.conn.private_data,
		    e.id->event->param.conn.private_data_len, srv_pdata,
		    "sync ESTABLISHED");
	send_msg(&e, "sync client to server");
	recv_msg(&e, "sync server to client", 0);
	hx_stage("sync client: rdma_disconnect");
	CHECK_OK(rdma_disconnect(e.id));
	dereg_bufs(&e);
	wait_flag(&s, true, "finish");
	pthread_join(t, NULL);
	hx_stage("sync client: rdma_destroy_ep");
	rdma_destroy_ep(e.id);
	return 0;
}

/*
 * A synchronous listener rejects: the synchronous client's rdma_connect
 * fails with ECONNREFUSED and leaves the REJECTED event, with the
 * server's private data, in id->event.
 */
int cmd_sync_reject(int argc, char **argv)
{
	struct end e = {.who = "sync client"};
	struct sync_server s = {.addr = argv[1], .client = &e, .reject = true};
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	struct rdma_conn_param cp;
	char port[16];
	pthread_t t;
	int r;

	(void)argc;
	t = start_sync_server(&s, port, sizeof(port));
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_NUMERICHOST;
	hints.ai_port_space = RDMA_PS_TCP;
	r = rdma_getaddrinfo(argv[1], port, &hints, &res);
	if (r)
		hx_fail("client rdma_getaddrinfo: %s", strerror(errno));
	sync_qp_attr(&attr);
	CHECK_OK(rdma_create_ep(&e.id, res, NULL, &attr));
	rdma_freeaddrinfo(res);
	cp = pdata_conn_param();
	hx_stage("sync client: rdma_connect to a rejecting server");
	errno = 0;
	r = rdma_connect(e.id, &cp);
	CHECK(r == -1 && errno == ECONNREFUSED,
	      "rejected synchronous rdma_connect: %d, %s, want ECONNREFUSED", r,
	      strerror(errno));
	CHECK(e.id->event && e.id->event->event == RDMA_CM_EVENT_REJECTED,
	      "id->event after a rejected rdma_connect is %s",
	      e.id->event ? rdma_event_str(e.id->event->event) : "NULL");
	check_pdata(e.id->event->param.conn.private_data,
		    e.id->event->param.conn.private_data_len, reject_pdata,
		    "sync REJECTED");
	wait_flag(&s, true, "finish");
	pthread_join(t, NULL);
	rdma_destroy_ep(e.id);
	return 0;
}
