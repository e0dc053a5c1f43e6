/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The steps of connection setup that cm_bench times, as a table: its own
 * (through librdmacm) and cm_limit.c's (the kernel's commands alone, the
 * limit) run through the same loop and print the same lines.
 */
#ifndef BENCH_STEPS_H
#define BENCH_STEPS_H

#include <stddef.h>

struct bench_step {
	const char *name;
	void (*run)(void *ctx);
};

/*
 * create_id, resolve_addr, resolve_route, create_qp, connect,
 * disconnect, destroy: every table has these, in this order.
 */
#define BENCH_NSTEPS 7

/*
 * Connections in flight at once in the connect and disconnect steps.  The
 * CM gives up on a REQ or REP unanswered for about a minute; one thread
 * that had all of 10,000 in flight on a slow machine (qemu TCG) would
 * answer the last ones later than that, with any library or none.
 */
#define BENCH_WINDOW 256

/* cm_limit.c: its context for @n connections to a listener on @addr. */
void *cm_limit_setup(const char *addr, int n);
extern const struct bench_step cm_limit_steps[BENCH_NSTEPS];

#endif
