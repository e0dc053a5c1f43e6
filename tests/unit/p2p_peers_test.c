// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * What peer-to-peer mode knows of each peer (src/p2p/p2p_peers.c): a peer
 * is found by its address and listening port; peers only heard from
 * ("strangers": any sender can claim as many as it likes) are bounded,
 * the one heard from least recently forgotten first, while a peer a
 * connect of ours used is never forgotten.  Each test runs in a process
 * of its own, so each starts with no peer known.
 */
#include <config.h>

#include <check.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cm/test_hooks.h"
#include "p2p/p2p_table.h"
#include "unit.h"

/* Peer @n (any of 2^32) at an IPv4-mapped address, listening on @port. */
static struct cma_p2p_ident peer(uint32_t n, uint16_t port)
{
	struct cma_p2p_ident id = {.port = port};

	id.addr[10] = id.addr[11] = 0xff;
	id.addr[12] = (uint8_t)(n >> 24);
	id.addr[13] = (uint8_t)(n >> 16);
	id.addr[14] = (uint8_t)(n >> 8);
	id.addr[15] = (uint8_t)n;
	return id;
}

/* As the library calls them: under p2p_lock. */
static struct cma_p2p_peer *get(const struct cma_p2p_ident *id, bool keep)
{
	struct cma_p2p_peer *c;

	cma_p2p_lock();
	c = cma_p2p_peer_get(id, keep);
	cma_p2p_unlock();
	ck_assert_ptr_nonnull(c);
	return c;
}

static struct cma_p2p_peer *of(const struct cma_p2p_ident *id)
{
	struct cma_p2p_peer *c;

	cma_p2p_lock();
	c = cma_p2p_peer_of(id);
	cma_p2p_unlock();
	return c;
}

/* @n strangers, peers @first on, each heard from once in that order. */
static void fill_with_strangers(uint32_t first, unsigned int n)
{
	struct cma_p2p_ident id;
	unsigned int i;

	for (i = 0; i < n; i++) {
		id = peer(first + i, 7471);
		get(&id, false);
	}
}

START_TEST(a_peer_is_its_address_and_port)
{
	struct cma_p2p_ident a = peer(1, 7471), b = peer(1, 7472),
			     c = peer(2, 7471);
	struct cma_p2p_peer *pa;

	ck_assert_uint_eq(cma_p2p_peers_known(), 0);
	ck_assert_ptr_null(of(&a));
	pa = get(&a, false);
	ck_assert_mem_eq(&pa->remote, &a, sizeof(a));
	ck_assert_uint_eq(pa->incarnation, 0); /* nothing stated yet */
	ck_assert(!pa->kept);
	ck_assert_ptr_eq(of(&a), pa);
	ck_assert_ptr_eq(get(&a, false), pa);
	/* Another port or another address is another peer. */
	ck_assert_ptr_null(of(&b));
	ck_assert_ptr_null(of(&c));
	ck_assert_ptr_ne(get(&b, false), pa);
	ck_assert_ptr_ne(get(&c, false), pa);
	ck_assert_uint_eq(cma_p2p_peers_known(), 3);
}
END_TEST

/*
 * Past the bound, the stranger heard from least recently goes: one heard
 * from again is the most recent, whenever it was first heard.
 */
START_TEST(strangers_are_bounded_least_recent_first)
{
	struct cma_p2p_ident first = peer(1000, 7471),
			     second = peer(1001, 7471),
			     third = peer(1002, 7471), next;

	fill_with_strangers(1000, CMA_P2P_MAX_STRANGERS);
	ck_assert_uint_eq(cma_p2p_peers_known(), CMA_P2P_MAX_STRANGERS);
	get(&first, false); /* heard from again */
	next = peer(5000000, 7471);
	get(&next, false);
	ck_assert_uint_eq(cma_p2p_peers_known(), CMA_P2P_MAX_STRANGERS);
	ck_assert_ptr_nonnull(of(&first));
	ck_assert_ptr_null(of(&second));
	ck_assert_ptr_nonnull(of(&third));
	ck_assert_ptr_nonnull(of(&next));
	next = peer(5000001, 7471);
	get(&next, false);
	ck_assert_ptr_null(of(&third));
	ck_assert_ptr_nonnull(of(&first));
}
END_TEST

/*
 * A peer a connect of ours used is kept whatever strangers come after,
 * and does not count against their bound; a stranger becomes such a peer
 * when a connect uses it.
 */
START_TEST(kept_peers_are_never_forgotten)
{
	struct cma_p2p_ident ours = peer(1, 7471), met = peer(1000, 7471);
	struct cma_p2p_peer *p;

	get(&ours, true);
	fill_with_strangers(1000, CMA_P2P_MAX_STRANGERS);
	p = get(&met, true); /* the oldest stranger, now connected to */
	ck_assert(p->kept);
	ck_assert_ptr_eq(get(&met, false), p);
	ck_assert(p->kept); /* heard from again, still ours */
	/* A whole bound of new strangers forgets every older one. */
	fill_with_strangers(2000000, CMA_P2P_MAX_STRANGERS);
	ck_assert_uint_eq(cma_p2p_peers_known(), CMA_P2P_MAX_STRANGERS + 2);
	ck_assert_ptr_nonnull(of(&ours));
	ck_assert_ptr_eq(of(&met), p);
	met = peer(1001, 7471);
	ck_assert_ptr_null(of(&met));
}
END_TEST

/* --- a child forked in the middle of a change ----------------------------- */

enum { FORK_PEERS = 40 }; /* the table grows once on the way */

static struct {
	uint32_t adding; /* peers below it are in the table */
	int step, fork_at, forked, failed;
} fk;

/* In the child, no Check asserts: every peer known before is found. */
static bool child_finds_the_peers(void)
{
	struct cma_p2p_ident id;
	bool whole = true;
	uint32_t i;

	cma_htable_set_step_hook(NULL); /* this copy forks no more */
	cma_p2p_lock();
	for (i = 0; i < fk.adding; i++) {
		id = peer(i, 7471);
		whole = whole && cma_p2p_peer_of(&id);
	}
	/* And the table takes more: the one cut short, and a new one. */
	id = peer(fk.adding, 7471);
	whole = whole && cma_p2p_peer_get(&id, false);
	id = peer(FORK_PEERS, 7471);
	whole = whole && cma_p2p_peer_get(&id, false) && cma_p2p_peer_of(&id) &&
		cma_p2p_peers_known() >= fk.adding + 2;
	cma_p2p_unlock();
	return whole;
}

static void fork_at_step(void)
{
	if (++fk.step != fk.fork_at)
		return;
	fk.forked++;
	if (!unit_child_passes(child_finds_the_peers))
		fk.failed++;
}

/*
 * A fork while a thread of the parent adds peers (this one, holding
 * p2p_lock, forking after each store of the table's adds and growth in
 * turn, in a process of its own each time): the child's copy of the table
 * is made whole by the library's fork handler, with every peer added
 * before it.
 */
START_TEST(a_child_forked_during_a_change_finds_every_peer)
{
	int at = 0, steps;
	pid_t pid;

	do {
		fk.fork_at = ++at;
		pid = fork();
		if (!pid) {
			struct cma_p2p_ident id;

			cma_htable_set_step_hook(fork_at_step);
			for (fk.adding = 0; fk.adding < FORK_PEERS;
			     fk.adding++) {
				id = peer(fk.adding, 7471);
				cma_p2p_lock();
				cma_p2p_peer_get(&id, false);
				cma_p2p_unlock();
			}
			_exit(fk.failed ? 2 : fk.forked ? 0 : 1);
		}
		ck_assert_int_gt(pid, 0);
		ck_assert_int_eq(waitpid(pid, &steps, 0), pid);
		ck_assert(WIFEXITED(steps));
		ck_assert_msg(WEXITSTATUS(steps) != 2,
			      "forked after store %d, a child found peers gone",
			      at);
	} while (!WEXITSTATUS(steps));
	/* Every store of forty adds and one growth: some hundreds. */
	ck_assert_int_gt(at, 2 * FORK_PEERS);
}
END_TEST

Suite *p2p_peers_suite(void)
{
	Suite *s = suite_create("p2p_peers");
	TCase *tc = tcase_create("peers");

	tcase_add_test(tc, a_peer_is_its_address_and_port);
	tcase_add_test(tc, strangers_are_bounded_least_recent_first);
	tcase_add_test(tc, kept_peers_are_never_forgotten);
	tcase_add_test(tc, a_child_forked_during_a_change_finds_every_peer);
	suite_add_tcase(s, tc);
	return s;
}
