// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * fields_audit: what a program can observe in every public field of
 * struct rdma_cm_id and struct rdma_cm_event at each step of the flows
 * programs use, printed one field a line so that the output of two
 * librdmacm builds can be diffed (tests/system/fields-in-guest.sh runs it
 * on Debian's library and on ours).
 *
 * Pointers are printed as NULL, non-NULL or the name of a known object
 * ("own_pd", "chan_a", "shared_pd" ...), never as addresses; ports as 0,
 * "listen" (the listener's port) or "nonzero"; QP numbers as whether they
 * match the QP they describe.
 *
 * Flows (each step's lines start with "<flow>/<step> <id>."):
 *   rc   an RDMA_PS_TCP connection on event channels: create_id, bind,
 *        listen, resolve_addr, resolve_route, create_qp (own PD and CQ on
 *        the active side, none on the passive side), connect,
 *        CONNECT_REQUEST, create_qp on the child, accept, ESTABLISHED,
 *        disconnect, DISCONNECTED;
 *   rcwild  the same with a listener on the wildcard address, library-made
 *        CQs on the active side, an SRQ (rdma_create_srq) on the child, and
 *        the child moved to a third channel (rdma_migrate_id);
 *   ud   the rc steps with RDMA_PS_UDP (SIDR) and UD QPs;
 *   reject  a request refused with rdma_reject and private data;
 *   sync synchronous ids from rdma_getaddrinfo/rdma_create_ep: a passive
 *        one (no QP), an active one with a QP the library makes, the
 *        request from rdma_get_request, accepted from another thread.
 *
 * Usage: fields_audit SERVER_ADDR [CLIENT_ADDR]
 * Exits non-zero (with a "FAIL" line) when a step itself fails.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "harness.h"

/* One binary for both libraries: the RDMACM_1.0 versions every one has. */
__asm__(".symver rdma_connect, rdma_connect@RDMACM_1.0");
__asm__(".symver rdma_accept, rdma_accept@RDMACM_1.0");

static const char *srv_addr, *cli_addr;
static uint16_t listen_port;

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;
	int err = errno;

	fflush(stdout);
	va_start(ap, fmt);
	printf("FAIL fields_audit: ");
	vprintf(fmt, ap);
	printf(" (errno %d: %s)\n", err, strerror(err));
	va_end(ap);
	exit(1);
}

/* --- naming what a pointer points to ---------------------------------------- */

#define MAX_NAMES 64
static struct {
	const void *ptr;
	char name[32];
} names[MAX_NAMES];
static int n_names;

static void name_ptr(const void *ptr, const char *fmt, ...)
{
	va_list ap;
	int i;

	if (!ptr)
		return;
	/* the latest name wins: freed memory comes back as new objects */
	for (i = 0; i < n_names; i++)
		if (names[i].ptr == ptr)
			break;
	if (i == MAX_NAMES)
		die("too many names");
	names[i].ptr = ptr;
	va_start(ap, fmt);
	vsnprintf(names[i].name, sizeof(names[i].name), fmt, ap);
	va_end(ap);
	if (i == n_names)
		n_names++;
}

/*
 * @ptr was freed (an acked event): a later object the allocator puts there
 * (a CQ, say) is no longer named after it.
 */
static void unname_ptr(const void *ptr)
{
	int i;

	for (i = 0; i < n_names; i++) {
		if (names[i].ptr == ptr) {
			names[i] = names[--n_names];
			return;
		}
	}
}

/* Each flow names its own objects. */
static void forget_names(void)
{
	n_names = 0;
}

static const char *ptr_str(const void *ptr)
{
	int i;

	if (!ptr)
		return "NULL";
	for (i = 0; i < n_names; i++)
		if (names[i].ptr == ptr)
			return names[i].name;
	return "non-NULL";
}

/* --- printing an id ------------------------------------------------------------ */

static const char *port_str(uint16_t port_be)
{
	uint16_t port = ntohs(port_be);

	if (!port)
		return "0";
	return port == listen_port ? "listen" : "nonzero";
}

static void print_addr(FILE *f, const char *pfx, const char *which,
		       const struct sockaddr *sa)
{
	char buf[INET6_ADDRSTRLEN] = "?";
	const struct sockaddr_in *sin = (const void *)sa;
	const struct sockaddr_in6 *sin6 = (const void *)sa;

	switch (sa->sa_family) {
	case AF_INET:
		inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf));
		fprintf(f, "%s.route.addr.%s=inet %s port %s\n", pfx, which,
			buf, port_str(sin->sin_port));
		break;
	case AF_INET6:
		inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof(buf));
		fprintf(f, "%s.route.addr.%s=inet6 %s port %s\n", pfx, which,
			buf, port_str(sin6->sin6_port));
		break;
	default:
		fprintf(f, "%s.route.addr.%s=family %d\n", pfx, which,
			sa->sa_family);
	}
}

static void print_id(FILE *f, const char *step, const char *who,
		     const struct rdma_cm_id *id)
{
	char pfx[96];

	snprintf(pfx, sizeof(pfx), "%s %s", step, who);
	fprintf(f, "%s.verbs=%s\n", pfx, ptr_str(id->verbs));
	fprintf(f, "%s.channel=%s\n", pfx, ptr_str(id->channel));
	fprintf(f, "%s.context=%s\n", pfx, ptr_str(id->context));
	fprintf(f, "%s.qp=%s\n", pfx, ptr_str(id->qp));
	if (id->qp)
		fprintf(f, "%s.qp->pd=%s\n", pfx, ptr_str(id->qp->pd));
	print_addr(f, pfx, "src", &id->route.addr.src_addr);
	print_addr(f, pfx, "dst", &id->route.addr.dst_addr);
	fprintf(f, "%s.route.num_paths=%d\n", pfx, id->route.num_paths);
	fprintf(f, "%s.route.path_rec=%s\n", pfx,
		id->route.path_rec ? "non-NULL" : "NULL");
	fprintf(f, "%s.ps=%s\n", pfx,
		id->ps == RDMA_PS_TCP	? "TCP"
		: id->ps == RDMA_PS_UDP ? "UDP"
					: "other");
	fprintf(f, "%s.port_num=%u\n", pfx, id->port_num);
	fprintf(f, "%s.event=%s\n", pfx, ptr_str(id->event));
	fprintf(f, "%s.send_cq_channel=%s\n", pfx,
		ptr_str(id->send_cq_channel));
	fprintf(f, "%s.send_cq=%s\n", pfx, ptr_str(id->send_cq));
	fprintf(f, "%s.recv_cq_channel=%s\n", pfx,
		ptr_str(id->recv_cq_channel));
	fprintf(f, "%s.recv_cq=%s\n", pfx, ptr_str(id->recv_cq));
	fprintf(f, "%s.srq=%s\n", pfx, ptr_str(id->srq));
	fprintf(f, "%s.pd=%s\n", pfx, ptr_str(id->pd));
	fprintf(f, "%s.pd_is_qp_pd=%s\n", pfx,
		!id->qp		       ? "no QP"
		: id->pd == id->qp->pd ? "yes"
				       : "no");
	fprintf(f, "%s.qp_type=%d\n", pfx, id->qp_type);
}

static void print_event(FILE *f, const char *step,
			const struct rdma_cm_event *ev)
{
	const struct rdma_conn_param *c = &ev->param.conn;
	const struct rdma_ud_param *u = &ev->param.ud;
	char pfx[96];

	snprintf(pfx, sizeof(pfx), "%s event", step);
	fprintf(f, "%s.event=%s\n", pfx, rdma_event_str(ev->event));
	fprintf(f, "%s.status=%d\n", pfx, ev->status);
	fprintf(f, "%s.id=%s\n", pfx, ptr_str(ev->id));
	fprintf(f, "%s.listen_id=%s\n", pfx, ptr_str(ev->listen_id));
	if (ev->id && ev->id->ps == RDMA_PS_UDP) {
		fprintf(f, "%s.ud.private_data=%s len %u\n", pfx,
			u->private_data ? "non-NULL" : "NULL",
			u->private_data_len);
		fprintf(f, "%s.ud.qp_num=%s\n", pfx,
			u->qp_num ? "nonzero" : "0");
		fprintf(f, "%s.ud.qkey=%#x\n", pfx, u->qkey);
		fprintf(f, "%s.ud.ah_attr.is_global=%u port_num=%u\n", pfx,
			u->ah_attr.is_global, u->ah_attr.port_num);
		return;
	}
	fprintf(f, "%s.conn.private_data=%s len %u\n", pfx,
		c->private_data ? "non-NULL" : "NULL", c->private_data_len);
	fprintf(f, "%s.conn.responder_resources=%u\n", pfx,
		c->responder_resources);
	fprintf(f, "%s.conn.initiator_depth=%u\n", pfx, c->initiator_depth);
	fprintf(f, "%s.conn.flow_control=%u\n", pfx, c->flow_control);
	fprintf(f, "%s.conn.retry_count=%u\n", pfx, c->retry_count);
	fprintf(f, "%s.conn.rnr_retry_count=%u\n", pfx, c->rnr_retry_count);
	fprintf(f, "%s.conn.srq=%u\n", pfx, c->srq);
	fprintf(f, "%s.conn.qp_num=%s\n", pfx, c->qp_num ? "nonzero" : "0");
}

/* --- helpers --------------------------------------------------------------------- */

static uint16_t sa_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return ntohs(((const struct sockaddr_in *)sa)->sin_port);
}

/*
 * The next event on @ch, which must be @type (TIMEWAIT_EXIT, which may
 * come at any time after a disconnect, is skipped).  Waits in poll(2),
 * then reads it with a blocking rdma_get_cm_event.
 */
static struct rdma_cm_event *expect(struct rdma_event_channel *ch,
				    enum rdma_cm_event_type type)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	for (;;) {
		if (poll(&pfd, 1, 30000) != 1)
			die("no %s within 30 s", rdma_event_str(type));
		if (rdma_get_cm_event(ch, &ev))
			die("rdma_get_cm_event");
		if (ev->event == type)
			return ev;
		if (ev->event != RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			errno = ev->status < 0 ? -ev->status : 0;
			die("expected %s, got %s (status %d)",
			    rdma_event_str(type), rdma_event_str(ev->event),
			    ev->status);
		}
		rdma_ack_cm_event(ev);
	}
}

/* Wait for @type, print the event, then the ids the step shows. */
static struct rdma_cm_id *step_event(struct rdma_event_channel *ch,
				     enum rdma_cm_event_type type,
				     const char *step)
{
	struct rdma_cm_event *ev = expect(ch, type);
	struct rdma_cm_id *id = ev->id;

	name_ptr(ev, "%s_event", step);
	print_event(stdout, step, ev);
	print_id(stdout, step, "event->id", ev->id);
	if (rdma_ack_cm_event(ev))
		die("rdma_ack_cm_event");
	unname_ptr(ev);
	print_id(stdout, step, "event->id-after-ack", id);
	return id;
}

static struct ibv_qp_init_attr qp_attr(enum ibv_qp_type type, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = type,
		.cap = {.max_send_wr = 4,
			.max_recv_wr = 4,
			.max_send_sge = 1,
			.max_recv_sge = 1},
	};
	return a;
}

/* --- the asynchronous flows (rc, ud) ------------------------------------------ */

/*
 * The variants of the asynchronous flow: "wild" listens on the wildcard
 * address (no device until a request comes), lets the library make the
 * active side's CQs, gives the child an SRQ (rdma_create_srq) before its
 * QP and moves the child to a third channel (rdma_migrate_id).
 */
struct flow_opts {
	enum rdma_port_space ps;
	int wild;
};

static void async_flow(const char *flow, const struct flow_opts *o)
{
	enum rdma_port_space ps = o->ps;
	enum ibv_qp_type qpt = ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
	struct rdma_event_channel *chp, *cha, *chm = NULL;
	struct rdma_cm_id *lid, *aid, *child;
	struct sockaddr_storage ss, src;
	struct rdma_conn_param cp;
	struct ibv_qp_init_attr qa;
	struct ibv_srq_init_attr sa;
	struct ibv_pd *own_pd;
	struct ibv_cq *own_cq, *child_cq;
	static int ctx_l, ctx_a;
	char step[64];
	const char pd_a[5] = "abcd", pd_p[3] = "xy";

#define STEP(s) (snprintf(step, sizeof(step), "%s/%s", flow, s), step)
	forget_names();
	chp = rdma_create_event_channel();
	cha = rdma_create_event_channel();
	if (!chp || !cha)
		die("rdma_create_event_channel");
	name_ptr(chp, "chan_p");
	name_ptr(cha, "chan_a");
	name_ptr(&ctx_l, "ctx_listen");
	name_ptr(&ctx_a, "ctx_active");

	/* passive side: create, bind, listen */
	if (rdma_create_id(chp, &lid, &ctx_l, ps))
		die("rdma_create_id");
	name_ptr(lid, "listen_id");
	print_id(stdout, STEP("create_id"), "listen", lid);
	hx_parse_addr(o->wild ? (strchr(srv_addr, ':') ? "::" : "0.0.0.0")
			      : srv_addr,
		      0, &ss);
	if (rdma_bind_addr(lid, (struct sockaddr *)&ss))
		die("rdma_bind_addr");
	listen_port = sa_port(rdma_get_local_addr(lid));
	name_ptr(lid->verbs, "dev");
	name_ptr(lid->pd, "shared_pd");
	print_id(stdout, STEP("bind"), "listen", lid);
	if (rdma_listen(lid, 4))
		die("rdma_listen");
	print_id(stdout, STEP("listen"), "listen", lid);

	/* active side: create, resolve_addr, resolve_route */
	if (rdma_create_id(cha, &aid, &ctx_a, ps))
		die("rdma_create_id");
	name_ptr(aid, "active_id");
	print_id(stdout, STEP("create_id"), "active", aid);
	hx_parse_addr(srv_addr, listen_port, &ss);
	hx_parse_addr(cli_addr, 0, &src);
	if (rdma_resolve_addr(aid, (struct sockaddr *)&src,
			      (struct sockaddr *)&ss, 2000))
		die("rdma_resolve_addr");
	print_id(stdout, STEP("resolve_addr-called"), "active", aid);
	step_event(cha, RDMA_CM_EVENT_ADDR_RESOLVED, STEP("addr_resolved"));
	name_ptr(aid->verbs, "dev");
	name_ptr(aid->pd, "shared_pd");
	if (rdma_resolve_route(aid, 2000))
		die("rdma_resolve_route");
	print_id(stdout, STEP("resolve_route-called"), "active", aid);
	step_event(cha, RDMA_CM_EVENT_ROUTE_RESOLVED, STEP("route_resolved"));

	/* active QP on our own PD and CQ */
	own_pd = ibv_alloc_pd(aid->verbs);
	own_cq = own_pd ? ibv_create_cq(aid->verbs, 8, NULL, NULL, 0) : NULL;
	if (!own_cq)
		die("ibv_alloc_pd/ibv_create_cq");
	name_ptr(own_pd, "own_pd");
	name_ptr(own_cq, "own_cq");
	qa = qp_attr(qpt, o->wild ? NULL : own_cq);
	if (rdma_create_qp(aid, o->wild ? NULL : own_pd, &qa))
		die("rdma_create_qp (active)");
	name_ptr(aid->qp, "active_qp");
	print_id(stdout, STEP("create_qp"), "active", aid);

	memset(&cp, 0, sizeof(cp));
	cp.private_data = pd_a;
	cp.private_data_len = sizeof(pd_a);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 5;
	cp.rnr_retry_count = 6;
	if (rdma_connect(aid, &cp))
		die("rdma_connect");
	print_id(stdout, STEP("connect-called"), "active", aid);

	/* passive: the request, a QP with no PD given, accept */
	child = step_event(chp, RDMA_CM_EVENT_CONNECT_REQUEST,
			   STEP("connect_request"));
	name_ptr(child, "child_id");
	print_id(stdout, STEP("connect_request"), "listen", lid);
	child_cq = ibv_create_cq(child->verbs, 8, NULL, NULL, 0);
	if (!child_cq)
		die("ibv_create_cq (child)");
	name_ptr(child_cq, "child_cq");
	qa = qp_attr(qpt, child_cq);
	if (o->wild) {
		memset(&sa, 0, sizeof(sa));
		sa.attr.max_wr = 4;
		sa.attr.max_sge = 1;
		if (rdma_create_srq(child, NULL, &sa))
			die("rdma_create_srq (child)");
		name_ptr(child->srq, "child_srq");
		print_id(stdout, STEP("child-create_srq"), "child", child);
		qa.srq = child->srq;
	}
	if (rdma_create_qp(child, NULL, &qa))
		die("rdma_create_qp (child)");
	name_ptr(child->qp, "child_qp");
	print_id(stdout, STEP("child-create_qp"), "child", child);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = pd_p;
	cp.private_data_len = sizeof(pd_p);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.rnr_retry_count = 6;
	if (rdma_accept(child, &cp))
		die("rdma_accept");
	print_id(stdout, STEP("accept-called"), "child", child);

	step_event(cha, RDMA_CM_EVENT_ESTABLISHED, STEP("established-active"));
	if (ps == RDMA_PS_TCP) {
		step_event(chp, RDMA_CM_EVENT_ESTABLISHED,
			   STEP("established-passive"));
		if (o->wild) {
			chm = rdma_create_event_channel();
			if (!chm || rdma_migrate_id(child, chm))
				die("rdma_migrate_id");
			name_ptr(chm, "chan_m");
			print_id(stdout, STEP("child-migrate_id"), "child",
				 child);
		}
		if (rdma_disconnect(aid))
			die("rdma_disconnect");
		print_id(stdout, STEP("disconnect-called"), "active", aid);
		/* the active side's event waits for the passive's DREP */
		step_event(chm ? chm : chp, RDMA_CM_EVENT_DISCONNECTED,
			   STEP("disconnected-passive"));
		if (rdma_disconnect(child))
			die("rdma_disconnect (child)");
		print_id(stdout, STEP("child-disconnect-called"), "child",
			 child);
		step_event(cha, RDMA_CM_EVENT_DISCONNECTED,
			   STEP("disconnected-active"));
	}
	rdma_destroy_qp(child);
	print_id(stdout, STEP("child-destroy_qp"), "child", child);
	if (child->srq) {
		rdma_destroy_srq(child);
		print_id(stdout, STEP("child-destroy_srq"), "child", child);
	}
	rdma_destroy_qp(aid);
	print_id(stdout, STEP("destroy_qp"), "active", aid);
	if (rdma_destroy_id(child) || rdma_destroy_id(aid) ||
	    rdma_destroy_id(lid))
		die("rdma_destroy_id");
	ibv_destroy_cq(child_cq);
	ibv_destroy_cq(own_cq);
	ibv_dealloc_pd(own_pd);
	rdma_destroy_event_channel(cha);
	rdma_destroy_event_channel(chp);
	if (chm)
		rdma_destroy_event_channel(chm);
#undef STEP
}

/* --- a rejected request ------------------------------------------------------ */

static void reject_flow(void)
{
	struct rdma_event_channel *chp, *cha;
	struct rdma_cm_id *lid, *aid, *child;
	struct sockaddr_storage ss;
	struct rdma_conn_param cp;
	struct ibv_qp_init_attr qa;
	const char why[8] = "go away";

	forget_names();
	chp = rdma_create_event_channel();
	cha = rdma_create_event_channel();
	if (!chp || !cha)
		die("rdma_create_event_channel");
	name_ptr(chp, "chan_p");
	name_ptr(cha, "chan_a");
	if (rdma_create_id(chp, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_create_id(cha, &aid, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	name_ptr(lid, "listen_id");
	name_ptr(aid, "active_id");
	hx_parse_addr(srv_addr, 0, &ss);
	if (rdma_bind_addr(lid, (struct sockaddr *)&ss) || rdma_listen(lid, 4))
		die("rdma_bind_addr/rdma_listen");
	listen_port = sa_port(rdma_get_local_addr(lid));
	hx_parse_addr(srv_addr, listen_port, &ss);
	if (rdma_resolve_addr(aid, NULL, (struct sockaddr *)&ss, 2000))
		die("rdma_resolve_addr");
	step_event(cha, RDMA_CM_EVENT_ADDR_RESOLVED, "reject/addr_resolved");
	name_ptr(aid->verbs, "dev");
	name_ptr(aid->pd, "shared_pd");
	if (rdma_resolve_route(aid, 2000))
		die("rdma_resolve_route");
	step_event(cha, RDMA_CM_EVENT_ROUTE_RESOLVED, "reject/route_resolved");
	qa = qp_attr(IBV_QPT_RC, NULL);
	if (rdma_create_qp(aid, NULL, &qa))
		die("rdma_create_qp");
	memset(&cp, 0, sizeof(cp));
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	if (rdma_connect(aid, &cp))
		die("rdma_connect");
	child = step_event(chp, RDMA_CM_EVENT_CONNECT_REQUEST,
			   "reject/connect_request");
	name_ptr(child, "child_id");
	if (rdma_reject(child, why, sizeof(why)))
		die("rdma_reject");
	print_id(stdout, "reject/reject-called", "child", child);
	step_event(cha, RDMA_CM_EVENT_REJECTED, "reject/rejected");
	rdma_destroy_qp(aid);
	if (rdma_destroy_id(child) || rdma_destroy_id(aid) ||
	    rdma_destroy_id(lid))
		die("rdma_destroy_id");
	rdma_destroy_event_channel(cha);
	rdma_destroy_event_channel(chp);
}

/* --- synchronous ids ------------------------------------------------------------ */

static char sync_out[1 << 16];

/* The passive side's thread: rdma_get_request, then a blocking accept. */
static void *sync_passive(void *arg)
{
	struct rdma_cm_id *lid = arg, *child;
	struct ibv_qp_init_attr qa;
	FILE *f = fmemopen(sync_out, sizeof(sync_out), "w");

	if (!f || rdma_get_request(lid, &child))
		die("rdma_get_request");
	name_ptr(child, "sync_child");
	print_id(f, "sync/get_request", "child", child);
	if (child->event)
		print_event(f, "sync/get_request", child->event);
	qa = qp_attr(IBV_QPT_RC, NULL);
	if (rdma_create_qp(child, NULL, &qa))
		die("rdma_create_qp (sync child)");
	print_id(f, "sync/child-create_qp", "child", child);
	if (rdma_accept(child, NULL))
		die("rdma_accept (sync)");
	print_id(f, "sync/accepted", "child", child);
	fclose(f);
	return child;
}

static void sync_flow(void)
{
	struct rdma_addrinfo hints, *res;
	struct rdma_cm_id *lid, *aid;
	struct ibv_qp_init_attr qa;
	void *child;
	pthread_t t;
	char port[8];

	forget_names();
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(srv_addr, "0", &hints, &res))
		die("rdma_getaddrinfo (passive)");
	if (rdma_create_ep(&lid, res, NULL, NULL))
		die("rdma_create_ep (passive)");
	rdma_freeaddrinfo(res);
	name_ptr(lid, "sync_listen");
	print_id(stdout, "sync/create_ep-passive", "listen", lid);
	if (rdma_listen(lid, 4))
		die("rdma_listen (sync)");
	listen_port = sa_port(rdma_get_local_addr(lid));
	print_id(stdout, "sync/listen", "listen", lid);

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	snprintf(port, sizeof(port), "%u", listen_port);
	if (rdma_getaddrinfo(srv_addr, port, &hints, &res))
		die("rdma_getaddrinfo (active)");
	qa = qp_attr(IBV_QPT_RC, NULL);
	qa.sq_sig_all = 1;
	if (rdma_create_ep(&aid, res, NULL, &qa))
		die("rdma_create_ep (active)");
	rdma_freeaddrinfo(res);
	name_ptr(aid, "sync_active");
	print_id(stdout, "sync/create_ep-active", "active", aid);

	if (pthread_create(&t, NULL, sync_passive, lid))
		die("pthread_create");
	if (rdma_connect(aid, NULL))
		die("rdma_connect (sync)");
	if (pthread_join(t, &child))
		die("pthread_join");
	/* the passive thread's lines, after the connect returned */
	fputs(sync_out, stdout);
	print_id(stdout, "sync/connected", "active", aid);
	/*
	 * No rdma_disconnect: on a synchronous id it waits for the peer's
	 * DREP, and the peer is this thread.  Destroying sends the DREQ.
	 */
	rdma_destroy_ep(child);
	rdma_destroy_ep(aid);
	rdma_destroy_ep(lid);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s SERVER_ADDR [CLIENT_ADDR]\n",
			argv[0]);
		return 2;
	}
	srv_addr = argv[1];
	cli_addr = argc > 2 ? argv[2] : argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	hx_set_name("fields_audit");
	async_flow("rc", &(struct flow_opts){.ps = RDMA_PS_TCP});
	async_flow("rcwild", &(struct flow_opts){.ps = RDMA_PS_TCP, .wild = 1});
	async_flow("ud", &(struct flow_opts){.ps = RDMA_PS_UDP});
	reject_flow();
	sync_flow();
	printf("PASS fields_audit/complete\n");
	return 0;
}
