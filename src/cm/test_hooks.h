/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Test-only entry points, all in one place.  The library never calls
 * these: the unit tests and fuzz targets use them to put the fake kernel
 * device in place, to reset process-wide state, or to read a count that has
 * no public form.  Each is defined in the module whose state it touches.
 *
 * None reaches the shipped library: the core is compiled with
 * -fvisibility=hidden (so none is a dynamic symbol) and one function per
 * section, and librdmacm.so is linked with --gc-sections, which drops code
 * nothing exported reaches (tests/abi/check-symbols.sh, "test-hooks").
 * The unit tests link the core statically and keep them.
 *
 * A new hook goes here, not in its module's header.
 */
#ifndef CMA_TEST_HOOKS_H
#define CMA_TEST_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rdma_event_channel;
struct ucma_backend;
struct rsocket;

/*
 * ucma_abi.c: where commands go, the kernel's device or a test's fake of
 * it (tests/unit/fake_ucma.c; struct ucma_backend is in ucma_abi.h).  Set
 * before the library's first call; NULL restores the kernel.
 */
void ucma_set_backend(const struct ucma_backend *backend);

/* acm.c: re-read the environment and forget every cached ACM answer. */
void cma_acm_reconfigure(void);
/* acm_cache.c: the entries held, and a cap (the oldest go first). */
size_t cma_acm_cache_count(void);
void cma_acm_cache_set_limit(size_t max_entries);
/* acm_service.c: the owner a Unix service socket must have (root). */
void cma_acm_service_set_trusted_uid(uid_t uid);

/*
 * util/htable.c: @hook runs after each store of a table's change that a
 * forked child could see alone (a test forks there); NULL: none.
 */
void cma_htable_set_step_hook(void (*hook)(void));

/* timer.c: how often the service thread woke from its epoll set. */
unsigned long cma_service_wakeups(void);
/* timer.c: the service thread is up and has run (cma_timer_prestart). */
bool cma_service_thread_ran(void);
/* timer.c: wait until the service thread has done what is due now. */
void cma_service_settle(void);

/*
 * p2p.c: p2p mode's clock (cma_p2p_now_ns) reads @ns from now on, frozen,
 * so that a test decides when a bound or a hold is over; 0: the real
 * clock again.  Timers still fire on the real clock (timer.c).
 */
void cma_p2p_set_clock(uint64_t ns);
/* p2p.c: whether p2p_lock is held (by anyone). */
bool cma_p2p_locked(void);
/* p2p.c: registered connects waiting for an answer or the peer's REQ. */
unsigned int cma_p2p_conns_waiting(void);
/* p2p_peers.c: how many peers are known. */
unsigned int cma_p2p_peers_known(void);

/* rsocket/dgram_dest.c: the datagram destinations @rs keeps. */
uint32_t ds_dest_count(const struct rsocket *rs);

/*
 * rsocket/poll.c: @fn is called by rpoll between arming its sleep set and
 * the last look before it sleeps, so that a test can change a socket's
 * state in that window; NULL removes it.
 */
void rs_poll_set_armed_hook(void (*fn)(void));

/*
 * rsocket/conn.c: @fn is called by a connect or accept that has just
 * been made, before its last look at the socket's state, so that a test
 * can end the connection in that window; NULL removes it.
 */
void rs_connect_set_made_hook(void (*fn)(struct rsocket *rs));

/*
 * preload/relay.c (librspreload): @fn is called, in the relay's thread,
 * before each look at whether the relay may read its rsocket, and before
 * each sleep, so that a test can allow the reads at every point of the
 * pump; NULL removes it.
 */
enum rsp_relay_point { RSP_RELAY_LOOK, RSP_RELAY_SLEEP };
void rsp_relay_set_hook(void (*fn)(enum rsp_relay_point at));

#endif /* CMA_TEST_HOOKS_H */
