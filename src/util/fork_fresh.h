/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Process-wide mutexes and fork().
 *
 * A fork keeps only the forking thread: a mutex another thread held at
 * that instant stays held in the child for good, and the child's first
 * call that takes it hangs.  A lock that is a true leaf is better held
 * across the fork by an atfork prepare handler (what it guards is then
 * whole in the child): CMA_LEAF_MUTEX(name).  A lock taken under other
 * locks, or held across a wait on the network or a pipe, cannot be: its
 * prepare handler would wait with it, or take it out of order with the
 * handlers of the locks it nests in.  Such a lock is declared with
 * CMA_FRESH_MUTEX(name): the child initialises it again.  What it guards
 * must then be whole at every instant its holder can be stopped at (a
 * list changed by single stores), or the child must repair it (its own
 * atfork child handler).
 *
 * The handlers are registered when the library is loaded, so no call
 * needs to come first: the child of a process that forks before any use
 * is covered as well.
 */
#ifndef CMA_FORK_FRESH_H
#define CMA_FORK_FRESH_H

#include <pthread.h>

/*
 * A leaf mutex held across fork: its holders take no other lock an atfork
 * prepare handler takes, so waiting for it waits only on its holder's
 * work.  Registered at load, before any handler the library registers at
 * first use, so its prepare runs after theirs.
 */
#define CMA_LEAF_MUTEX(name)                                                   \
	static pthread_mutex_t name = PTHREAD_MUTEX_INITIALIZER;               \
	static void name##_forking(void)                                       \
	{                                                                      \
		pthread_mutex_lock(&name);                                     \
	}                                                                      \
	static void name##_forked(void)                                        \
	{                                                                      \
		pthread_mutex_unlock(&name);                                   \
	}                                                                      \
	__attribute__((constructor)) static void name##_watch_forks(void)      \
	{                                                                      \
		pthread_atfork(name##_forking, name##_forked, name##_forked);  \
	}

#define CMA_FRESH_MUTEX(name)                                                  \
	static pthread_mutex_t name = PTHREAD_MUTEX_INITIALIZER;               \
	static void name##_in_child(void)                                      \
	{                                                                      \
		pthread_mutex_init(&name, NULL);                               \
	}                                                                      \
	__attribute__((constructor)) static void name##_watch_forks(void)      \
	{                                                                      \
		pthread_atfork(NULL, NULL, name##_in_child);                   \
	}

/*
 * The store of a change that links a node in or out, where the lock's
 * data is whole without the stores that follow: a forked child's copy may
 * end at any store another thread of the parent made, so every store
 * before this one is kept before it and none after it moved ahead of it
 * (the fence; ThreadSanitizer refuses fences, and its builds are x86,
 * whose stores stay in order, so there the compiler is held alone).
 */
#ifdef __SANITIZE_THREAD__
#define CMA_FORK_STORES_AFTER() __atomic_signal_fence(__ATOMIC_SEQ_CST)
#else
#define CMA_FORK_STORES_AFTER() __atomic_thread_fence(__ATOMIC_RELEASE)
#endif
#define CMA_FORK_PUBLISH(where, what)                                          \
	do {                                                                   \
		__atomic_store_n(&(where), (what), __ATOMIC_RELEASE);          \
		CMA_FORK_STORES_AFTER();                                       \
	} while (0)

#endif /* CMA_FORK_FRESH_H */
