/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * A fake of the kernel's rdma_cm device for unit tests and fuzz targets.
 *
 * It stands behind the library's one kernel seam (ucma_set_backend): every
 * command the library writes is recorded and answered the way the kernel
 * would answer it, from a model of the kernel's ids, their addresses and
 * their event queues.  A test drives the other side: it queues the events
 * the kernel would report (fake_ucma_event, fake_ucma_conn_req), at any
 * moment and from any thread, and reads back what the library sent.
 *
 * Each open of the device is a real eventfd that is readable exactly while
 * the queue behind it holds an event, as the kernel's fd is, so poll(2),
 * epoll and blocking rdma_get_cm_event behave as on the real device.  A
 * GET_EVENT on an empty, blocking queue waits for a test thread to queue an
 * event; one that would wait for ever fails the test instead.
 *
 * One fake per process; not for use from several test processes at once.
 */
#ifndef FAKE_UCMA_H
#define FAKE_UCMA_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "cm/ucma_abi.h"

/* The fake's answer to QUERY_ROUTE / QUERY: the device the ids bind to. */
struct fake_ucma_route {
	uint64_t node_guid; /* network order as the kernel reports; 0: none */
	uint8_t port_num;
	uint16_t pkey; /* network order */
	uint8_t sgid[16], dgid[16];
};

/* A kernel id as the fake sees it. */
struct fake_kid {
	uint32_t handle;
	uint64_t uid; /* the library's cookie, echoed in events */
	int fd; /* the device open (channel) it belongs to */
	uint16_t ps;
	uint8_t qp_type;
	bool live;
	bool listening;
	bool route_resolved;
	uint32_t events_reported; /* events handed out by GET_EVENT */
	struct sockaddr_storage src, dst;
	bool dead; /* fake_ucma_kill_kid: its peer gave the request up */
	/* A request's sender's QP, for RTR (without it: 0x77). */
	bool has_peer_qpn;
	uint32_t peer_qpn;
};

/*
 * The PSNs the fake's CM gives a QP of kernel id @handle: at RTR (the
 * REQ's or REP's starting PSN) and at RTS (its own), distinct per id.
 */
#define FAKE_UCMA_RQ_PSN(handle) (((handle)*0x10101u + 1) & 0xFFFFFFu)
#define FAKE_UCMA_SQ_PSN(handle) (((handle)*0x10101u + 2) & 0xFFFFFFu)

/* One command the library sent (GET_EVENT is not recorded). */
struct fake_cmd {
	uint32_t cmd; /* RDMA_USER_CM_CMD_* */
	int fd;
	uint32_t handle; /* the id (or group) it names; 0 when none */
	struct rdma_ucm_cmd_hdr hdr; /* as written */
	size_t len; /* bytes written: header and body */
	uint8_t body[512];
};

/* Reset the model and put the fake behind the library.  Idempotent. */
void fake_ucma_install(void);
/* Forget everything and give the library back to the kernel. */
void fake_ucma_uninstall(void);

/*
 * The process changes credentials: every device fd open now refuses
 * writes (EACCES), as the kernel's files do, and from now on a command
 * naming an id is answered only on the file the id is on (EINVAL).
 */
void fake_ucma_new_creds(void);

/* What QUERY_ROUTE and QUERY report from now on. */
void fake_ucma_set_route(const struct fake_ucma_route *route);

/* --- the kernel's ids ---------------------------------------------------- */

struct fake_kid *fake_ucma_kid(uint32_t handle);
/*
 * Whether kernel id @handle is still alive, waiting up to @wait_ms for it
 * to be destroyed (0: just look) when the library destroys it from its
 * own thread (p2p chores run on the timer thread).
 */
bool fake_ucma_kid_live(uint32_t handle, unsigned int wait_ms);
/* The kernel id whose uid is this library id (cma_id_private *). */
struct fake_kid *fake_ucma_kid_of(const void *uid);
/*
 * The peer gave up the request behind kernel id @handle (it rejected or
 * destroyed its side): the CM left the request state, so from now on
 * INIT_QP_ATTR and ACCEPT on it fail with EINVAL, as the kernel's do.
 * The id itself lives on until the library destroys it.
 */
void fake_ucma_kill_kid(uint32_t handle);

/* --- events: what the kernel reports ------------------------------------ */

/*
 * Queue an event for a kernel id, as the kernel reports it (uid, id).  The
 * returned response may be filled further (param, ece) until the library
 * reads it.  NULL if the id is unknown, or is a request's id not yet
 * accepted (the kernel ignores its events until the accept sets its uid).
 */
struct rdma_ucm_event_resp *fake_ucma_event(uint32_t handle, uint32_t event,
					    int status);
/*
 * A CONNECT_REQUEST on a listener: the kernel makes a new id for it, on
 * the listener's fd, and reports it with the listener's uid.  *child gets
 * the new id's handle.
 */
struct rdma_ucm_event_resp *fake_ucma_conn_req(uint32_t listen_handle,
					       uint32_t *child);
/* A multicast event for a group handle from JOIN_MCAST. */
struct rdma_ucm_event_resp *fake_ucma_mc_event(uint32_t mc_handle,
					       uint32_t event, int status);
/* The group handle the last JOIN_MCAST was answered with (0: none). */
uint32_t fake_ucma_last_mc(void);
/*
 * Hold queued events back (no fd readable, GET_EVENT finds none) until
 * fake_ucma_release.  A test that fills an event after queueing it does
 * so between the two when another thread may read the fd at once: the
 * library's service thread reads the channels of RC listeners
 * (src/cm/channel.c, "served" channels).
 */
void fake_ucma_hold(void);
void fake_ucma_release(void);
/*
 * Whether @thread made the GET_EVENT that returned the last event read:
 * the application's or the library's service thread.
 */
bool fake_ucma_last_read_by(pthread_t thread);
/*
 * Stop the next command @cmd naming @handle before the kernel sees it,
 * until fake_ucma_resume (other commands go on); fake_ucma_wait_paused
 * returns once a thread is stopped there.
 */
void fake_ucma_pause(uint32_t cmd, uint32_t handle);
void fake_ucma_wait_paused(void);
void fake_ucma_resume(void);
/*
 * Migrations move events without signalling the new fd (the kernel does
 * not wake its pollers): a library that waits on that fd must look again.
 */
void fake_ucma_migrate_quietly(bool quiet);
/* Events queued on a device fd and not yet read. */
int fake_ucma_queued(int fd);

/* --- commands: what the library sent ------------------------------------ */

int fake_ucma_ncmds(void);
const struct fake_cmd *fake_ucma_cmd(int i);
/* How many commands of a kind were sent (since install or clear). */
int fake_ucma_count(uint32_t cmd);
/* The same on kernel id @handle; safe while library threads send. */
int fake_ucma_count_on(uint32_t cmd, uint32_t handle);
/* The last command of a kind, NULL if none. */
const struct fake_cmd *fake_ucma_last(uint32_t cmd);
/*
 * Read under the log's lock, so that a library thread may log commands
 * meanwhile: where the first @cmd on @handle is (-1: none), and a copy
 * of the last one (false: none).
 */
int fake_ucma_first_on(uint32_t cmd, uint32_t handle);
bool fake_ucma_copy_last_on(uint32_t cmd, uint32_t handle,
			    struct fake_cmd *out);
void fake_ucma_clear_log(void);

/*
 * From now on (until the next install) every command of kind @cmd that the
 * model accepts is answered at once with @event (@status) for its id, as a
 * kernel whose resolutions succeed (or fail) immediately: for ids whose
 * caller blocks on them (synchronous ids) with no test thread to answer.
 */
void fake_ucma_answer(uint32_t cmd, uint32_t event, int status);

/* Any command, for fake_ucma_fail_next. */
#define FAKE_UCMA_ANY_CMD UINT32_MAX
/* The next command of this kind fails with err (once). */
void fake_ucma_fail_next(uint32_t cmd, int err);
/* The next write is taken only in part: n bytes (once). */
void fake_ucma_short_next(size_t n);

/*
 * Called for every command before the model answers it, with the response
 * buffer (NULL/0 for commands without one).  It returns FAKE_UCMA_MODEL to
 * let the model answer, 0 when it answered the command itself, or an errno
 * to fail it.  Fuzz targets answer with their input this way; tests check
 * what reaches the kernel.  It runs under the fake's lock: it must not call
 * fake_ucma_* functions.  NULL removes the hook.
 */
#define FAKE_UCMA_MODEL (-1)
typedef int (*fake_ucma_hook_fn)(const struct fake_cmd *cmd, void *resp,
				 size_t resp_len);
void fake_ucma_set_hook(fake_ucma_hook_fn hook);

#endif /* FAKE_UCMA_H */
