/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * cm_sys_test: system tests of librdmacm over a real RDMA device
 * (Soft-RoCE or Soft-iWARP in the test VM, or hardware).  Each scenario
 * runs both ends of its connections inside one process; the harness
 * (harness.h) reports PASS/FAIL/SKIP, names the stage a hang was in and
 * waits for events the way an outside program would.
 *
 * The scenarios live in one file per concern, all in one binary:
 *   cm_sys_common.c   ends, QPs, messages and the connected (RC) pair
 *   cm_sys_rc.c       RC connect/disconnect, reject, reject with ECE
 *   cm_sys_srq.c      shared receive queues, vector posts, rdma_notify
 *   cm_sys_kevents.c  events only the kernel makes (TIMEWAIT_EXIT,
 *                     UNREACHABLE, CONNECT_ERROR, ADDR_CHANGE)
 *   cm_sys_sync.c     synchronous ids (rdma_create_ep and friends)
 *   cm_sys_life.c     migrate, connect cycles, library events, whichlib
 *   cm_sys_errors.c   error paths, and what iWARP cannot do
 *   cm_sys_ud.c       UD and multicast
 *   cm_sys_main.c     the scenario table
 *
 * Usage: cm_sys_test <scenario> [args...]; without arguments, the list.
 * RDMACM_HX_TIMEOUT (seconds) sets the watchdog, RDMACM_HX_EVENT_TIMEOUT_MS
 * (default 10000) the wait for each CM event.
 */
#ifndef RDMACM_TESTS_CM_SYS_H
#define RDMACM_TESTS_CM_SYS_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "harness.h"

/* One end of a connection: its id, message buffers and RDMA targets. */
struct end {
	const char *who;
	struct rdma_cm_id *id;
	struct ibv_mr *smr, *rmr;
	char sbuf[256];
	char rbuf[256 + 40]; /* room for the GRH of datagrams */
	/*
	 * RDMA targets: the peer writes wbuf and reads rdbuf; lbuf is ours.
	 * Aligned to their size so that none crosses a page: Soft-iWARP
	 * corrupts a READ of a source that does (page_cross tests that).
	 */
	struct ibv_mr *wmr, *rdmr, *lmr;
	char wbuf[64] __attribute__((aligned(64)));
	char rdbuf[64] __attribute__((aligned(64)));
	char lbuf[64] __attribute__((aligned(64)));
};

/* A connected (RC) pair on two channels. */
struct rc_pair {
	struct rdma_event_channel *sch, *cch;
	struct rdma_cm_id *listen;
	uint16_t port;
	struct end srv, cli;
	/* How each end gets its QP; NULL: make_qp(RC). */
	void (*make_qp)(struct end *e);
};

/* The private data each scenario sends and checks. */
extern const char cli_pdata[20];
extern const char srv_pdata[20];
extern const char reject_pdata[8];

/* Private data @got must start with the string @want (NUL included). */
void check_pdata(const void *got, uint8_t got_len, const char *want,
		 const char *what);
/* Channels, listeners, addresses and routes (cm_sys_common.c). */
struct rdma_event_channel *make_channel(void);
struct rdma_cm_id *make_listener(struct rdma_event_channel *ch,
				 const char *addr, enum rdma_port_space ps,
				 uint16_t *port);
bool is_iwarp(const struct rdma_cm_id *id);
bool route_ok(const struct rdma_cm_id *id);
void client_resolve(struct rdma_event_channel *ch, struct rdma_cm_id *id,
		    const char *src, const char *dst, uint16_t port);
/* One end: its QP, buffers and messages. */
void make_qp(struct end *e, enum ibv_qp_type type);
void reg_bufs(struct end *e);
void dereg_bufs(struct end *e);
void post_recv(struct end *e);
void send_msg(struct end *e, const char *msg);
void recv_msg_wc(struct end *e, const char *want, size_t grh,
		 struct ibv_wc *out);
void recv_msg(struct end *e, const char *want, size_t grh);
void expect_flushed_recv(struct end *e);
void destroy_end(struct end *e);
/* What a client connects with: cli_pdata, one read each way, retries. */
struct rdma_conn_param client_conn_param(void);
/* What a server accepts with: srv_pdata, one read each way, RNR retries. */
struct rdma_conn_param server_conn_param(void);
/* cli_pdata alone: a UD (SIDR) request, or a connect setting the rest. */
struct rdma_conn_param pdata_conn_param(void);
/* The RC pair: set-up, connect, traffic, disconnect, teardown. */
void rc_make_qp(struct rc_pair *p, struct end *e);
void rc_setup(struct rc_pair *p, const char *addr);
void rc_setup_client(struct rc_pair *p, const char *addr, const char *src);
void rc_connect(struct rc_pair *p, const char *addr, const char *src,
		bool verbose);
void rc_exchange(struct rc_pair *p, int rounds);
void rdma_comp(struct end *e, enum ibv_wc_opcode want, const char *what);
void rdma_one_way(struct end *a, struct end *b);
void rc_rdma(struct rc_pair *p);
void rc_disconnect(struct rc_pair *p, bool server_first);
void rc_teardown(struct rc_pair *p);
void check_initiator(struct rc_pair *p);

/* The scenarios (argv[0] is the scenario name). */
int cmd_errors(int argc, char **argv);
int cmd_iwarp_errors(int argc, char **argv);
int cmd_timewait(int argc, char **argv);
int cmd_ud_reject(int argc, char **argv);
int cmd_connect_error(int argc, char **argv);
int cmd_addr_change(int argc, char **argv);
int cmd_unreachable(int argc, char **argv);
int cmd_migrate(int argc, char **argv);
int cmd_cycles(int argc, char **argv);
int cmd_libevents(int argc, char **argv);
int cmd_whichlib(int argc, char **argv);
int cmd_rc_async(int argc, char **argv);
int cmd_page_cross(int argc, char **argv);
int cmd_rc_server_disconnect(int argc, char **argv);
int cmd_reject(int argc, char **argv);
int cmd_reject_ece(int argc, char **argv);
int cmd_srq(int argc, char **argv);
int cmd_rc_sync(int argc, char **argv);
int cmd_sync_reject(int argc, char **argv);
int cmd_ud(int argc, char **argv);
int cmd_mcast(int argc, char **argv);

#endif
