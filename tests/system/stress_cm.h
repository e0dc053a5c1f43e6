/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * What the scenarios of stress_cm_test share (stress_cm_test.c): the
 * program's own poll loop over a channel, QPs with the program's own CQs,
 * and the scenario entry points (one file each).
 */
#ifndef RDMACM_TESTS_STRESS_CM_H
#define RDMACM_TESTS_STRESS_CM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rdma/rdma_cma.h>

/* Longest wait for one event before it counts as lost. */
#define LOST_MS 30000

uint64_t now_ns(void);
void sleep_ms(unsigned int ms);
/* A per-thread pseudo-random number below @n (rand() is not thread-safe). */
unsigned int rnd(unsigned int *seed, unsigned int n);
/* @host with @port, in @ss. */
struct sockaddr *sa_port(const char *host, unsigned short port,
			 struct sockaddr_storage *ss);
/* A new channel; @nonblock for channels whose ids use p2p mode. */
struct rdma_event_channel *channel(bool nonblock);
/* The next event within @ms or NULL: poll(2), then rdma_get_cm_event. */
struct rdma_cm_event *next_event(struct rdma_event_channel *ch, int ms);
/* The next event but TIMEWAIT_EXIT, within LOST_MS, or fail. */
struct rdma_cm_event *must_event(struct rdma_event_channel *ch,
				 const char *what);
/* Expect @type on @id (any id when NULL) and ack it. */
void expect_ack(struct rdma_event_channel *ch, struct rdma_cm_id *id,
		enum rdma_cm_event_type type);
struct rdma_cm_id *new_id(struct rdma_event_channel *ch, void *ctx);
/* Address and route of @id, alone on @ch, from @src (or NULL) to @dst. */
void resolve(struct rdma_event_channel *ch, struct rdma_cm_id *id,
	     struct sockaddr *src, struct sockaddr *dst);
/* An RC QP on @id (rdma_create_qp) with a CQ of our own, returned. */
struct ibv_cq *make_qp(struct rdma_cm_id *id);
/* Destroy @id's QP, then @cq (may be NULL), then @id. */
void drop_id(struct rdma_cm_id *id, struct ibv_cq *cq);
struct rdma_conn_param conn_param(const void *data, uint8_t len, uint8_t p2p);
/* A listener on @sa; @p2p: RDMA_OPTION_ID_PEER2PEER, or -1 for unset. */
struct rdma_cm_id *listen_on(struct rdma_event_channel *ch,
			     struct sockaddr *sa, int p2p, int backlog);
void start_thread(pthread_t *t, void *(*fn)(void *), void *arg);
/* argv[i] as a number in lo..hi, or @def when absent. */
int arg_int(int argc, char **argv, int i, int def, int lo, int hi);
/* This process's VmRSS in KiB (-1 if unknown). */
long vmrss_kib(void);

int run_p2p_churn(int argc, char **argv);
int run_migrate(int argc, char **argv);
int run_threads8(int argc, char **argv);
int run_flood(int argc, char **argv);

#endif
