// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Fault injection for tests under load: RDMA_CM_FAULT_DELAY_MS=N makes the
 * library wait a random 0..N ms before it handles each kernel event (on
 * the application's thread or the service thread) and before each timer
 * expires.  Nothing the library decides may depend on how long those take
 * (rdma_cm_p2p(7)); this widens every window a slow or busy machine opens,
 * so that tests find what depends on them.  Unset (the default), a call
 * costs one load of a flag.
 */
#include <config.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cma.h"
#include "util/env.h"

#define CMA_FAULT_MAX_DELAY_MS 10000

static unsigned int fault_delay_ms;
static pthread_once_t fault_once = PTHREAD_ONCE_INIT;

static void cma_fault_read_env(void)
{
	const char *v = cma_env("RDMA_CM_FAULT_DELAY_MS");
	unsigned long ms;
	char *end;

	if (!v)
		return;
	ms = strtoul(v, &end, 10);
	if (!*end && ms <= CMA_FAULT_MAX_DELAY_MS)
		fault_delay_ms = (unsigned int)ms;
}

/* Per thread, so that threads draw independent delays without a lock. */
static unsigned int cma_fault_draw(unsigned int max)
{
	static __thread uint64_t state;

	if (!state)
		state = cma_now_ns() ^ ((uint64_t)(uintptr_t)&state << 16) ^
			(uint64_t)getpid();
	/* xorshift64: quality enough for a delay. */
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return (unsigned int)(state % ((uint64_t)max + 1));
}

void cma_fault_delay(void)
{
	unsigned int ms;

	pthread_once(&fault_once, cma_fault_read_env);
	if (!fault_delay_ms)
		return;
	ms = cma_fault_draw(fault_delay_ms);
	if (ms)
		usleep(ms * 1000);
}
