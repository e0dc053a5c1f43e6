// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Adaptive polling: how long a wait spins on the completion queue before it
 * arms the queue and sleeps.
 *
 * Spinning exists to save the cost of a sleep: the wake-up (an interrupt,
 * a context switch, a trip through the completion channel) that a blocked
 * call pays when its completion arrives.  rdma-core spins for a fixed
 * polling_time (10 us) and then sleeps, so a peer that answers a little
 * later always costs a wake-up.  Here each waiter adapts a window between
 * polling_time (the floor) and a ceiling, in the manner of a halt-polling
 * governor, and learns what a sleep costs on this machine:
 *
 *   - wake_us, the cheapest sleep seen lately, estimates the wake-up cost
 *     (a sleep whose completion came at once costs only that);
 *   - a wait's own length is then estimated as its elapsed time less the
 *     wake-up;
 *   - a wait the spin satisfied leaves the window alone;
 *   - a wait that slept but was short grows the window to cover it (at
 *     least doubling), so the next such wait is caught spinning;
 *   - a wait longer than the ceiling halves the window: the peer is slow
 *     or idle, and spinning would only burn the CPU.
 *
 * The ceiling is polling_max, or twice the wake-up cost where sleeping is
 * dearer than that (virtual machines): spinning longer than a sleep would
 * cost never pays.  polling_max <= polling_time turns all of this off
 * (rdma-core's fixed spin).
 */
#include <time.h>

#include "rs.h"

/*
 * Clock reads in a spin: one every rs_spin_gap polls, the first too, so
 * that a wait its first polls satisfy reads no clock at all (a read
 * between a completion and its waiter adds to the latency the spin is
 * there to save).  The gap is RS_SPIN_CLOCK_GAP_MIN where a read is cheap
 * (the vDSO, tens of nanoseconds) and more where it is a system call and
 * a device access (a guest whose clock source is hpet or acpi_pm:
 * microseconds, as long as several polls), so that reads take about the
 * same share of a spin anywhere and a round trip shorter than one gap
 * reads none.  The window is then kept to within one gap of polls.
 */
#define RS_SPIN_CLOCK_GAP_MIN 8
#define RS_SPIN_CLOCK_CHEAP_NS 100 /* a read this dear: the gap is MIN */
#define RS_SPIN_CLOCK_GAP_MAX 256
/* The window never exceeds this, whatever sleeps cost (microseconds). */
#define RS_SPIN_HARD_MAX 10000
#define RS_SPIN_WAKE_UNKNOWN UINT32_MAX

uint64_t rs_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint32_t rs_spin_min(uint64_t a, uint64_t b)
{
	return (uint32_t)(a < b ? a : b);
}

unsigned int rs_spin_clock_gap_for(uint64_t read_ns)
{
	uint64_t gap =
		RS_SPIN_CLOCK_GAP_MIN * (read_ns / RS_SPIN_CLOCK_CHEAP_NS);

	if (gap < RS_SPIN_CLOCK_GAP_MIN)
		return RS_SPIN_CLOCK_GAP_MIN;
	return gap > RS_SPIN_CLOCK_GAP_MAX ? RS_SPIN_CLOCK_GAP_MAX
					   : (unsigned int)gap;
}

/* Set once, before the first socket (rs_configure): read without a lock. */
static unsigned int rs_spin_gap = RS_SPIN_CLOCK_GAP_MIN;

void rs_spin_configure(void)
{
	struct timespec a, b;
	uint64_t ns;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < 4; i++)
		clock_gettime(CLOCK_MONOTONIC, &b);
	ns = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u +
	     (uint64_t)(b.tv_nsec - a.tv_nsec);
	rs_spin_gap = rs_spin_clock_gap_for(ns / 4);
}

uint32_t rs_spin_wake_estimate(uint32_t wake_us, uint64_t sleep_us)
{
	uint64_t drifted;

	if (wake_us == RS_SPIN_WAKE_UNKNOWN)
		return rs_spin_min(sleep_us, RS_SPIN_HARD_MAX);
	/* Drift up by 1/8 so that one lucky sample does not rule forever. */
	drifted = (uint64_t)wake_us + wake_us / 8 + 1;
	return rs_spin_min(rs_spin_min(sleep_us, drifted), RS_SPIN_HARD_MAX);
}

uint32_t rs_spin_ceiling(uint32_t polling_max, uint32_t wake_us)
{
	uint64_t ceiling = polling_max;

	if (wake_us != RS_SPIN_WAKE_UNKNOWN && 2ull * wake_us > ceiling)
		ceiling = 2ull * wake_us;
	return rs_spin_min(ceiling, RS_SPIN_HARD_MAX);
}

uint32_t rs_spin_adapt(uint32_t window, uint32_t floor, uint32_t ceiling,
		       uint64_t wait_us, bool slept)
{
	uint64_t grown;

	if (ceiling <= floor)
		return floor;
	if (window < floor)
		window = floor;
	if (!slept)
		return rs_spin_min(window, ceiling);
	if (wait_us > ceiling)
		return window / 2 > floor ? window / 2 : floor;
	grown = (uint64_t)window * 2;
	if (grown < wait_us + wait_us / 2)
		grown = wait_us + wait_us / 2;
	return rs_spin_min(grown, ceiling);
}

void rs_spin_init(struct rs_spin *spin)
{
	spin->window_us = rs_def.polling_time;
	spin->wake_us = RS_SPIN_WAKE_UNKNOWN;
}

void rs_spin_begin(const struct rs_spin *spin, struct rs_spin_wait *w)
{
	w->start_us = 0; /* read with the first clock read */
	w->sleep_us = 0;
	w->window_us = spin->window_us;
	w->polls = 0;
	w->clock_gap = rs_spin_gap;
	w->clock_reads = 0;
}

bool rs_spin_more(struct rs_spin_wait *w)
{
	uint64_t now;

	if (w->sleep_us || !w->window_us)
		return false;
	w->polls++;
	if (w->polls % w->clock_gap)
		return true;
	now = rs_now_us();
	if (!w->clock_reads++) {
		/* The window counts from here: the first polls are spare. */
		w->start_us = now;
		w->polls = 0;
		return true;
	}
	if (now - w->start_us < w->window_us)
		return true;
	w->window_us = 0; /* expired: the answer stays "sleep" */
	return false;
}

void rs_spin_sleeping(struct rs_spin_wait *w)
{
	if (w->sleep_us)
		return;
	w->sleep_us = rs_now_us();
	/* No clock read before: the wait is measured from the sleep. */
	if (!w->clock_reads++)
		w->start_us = w->sleep_us;
}

void rs_spin_end(struct rs_spin *spin, const struct rs_spin_wait *w)
{
	bool slept = w->sleep_us != 0;
	uint64_t now, waited = 0;
	uint32_t ceiling;

	if (rs_def.polling_max <= rs_def.polling_time) {
		spin->window_us = rs_def.polling_time;
		return;
	}
	/*
	 * Only a wait that slept needs the clock: one the spin satisfied
	 * leaves the window alone (rs_spin_adapt), and its clock read would
	 * sit between the completion and the caller's data, a good part of
	 * a small message's latency where the clock is a system call (a
	 * guest on hpet or acpi_pm).
	 */
	if (slept) {
		now = rs_now_us();
		spin->wake_us =
			rs_spin_wake_estimate(spin->wake_us, now - w->sleep_us);
		waited = now - w->start_us;
		waited = waited > spin->wake_us ? waited - spin->wake_us : 0;
	}
	ceiling = rs_spin_ceiling(rs_def.polling_max, spin->wake_us);
	spin->window_us = rs_spin_adapt(spin->window_us, rs_def.polling_time,
					ceiling, waited, slept);
}
