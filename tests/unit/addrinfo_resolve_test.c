// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * rdma_resolve_addrinfo and rdma_query_addrinfo
 * (src/addrinfo/addrinfo_resolve.c): a synchronous id has its answer when
 * the call returns; an asynchronous one hears it as an ADDRINFO_RESOLVED
 * or ADDRINFO_ERROR event while the caller's thread goes on; a failed
 * resolution drops the previous answer; RAI_SA's argument checks fail the
 * call itself, with no event; rdma_destroy_id waits for a lookup under
 * way, which then keeps and posts nothing.  The ids are built by hand,
 * since these calls never talk to the kernel.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm/cma.h"
#include "fake_ucma.h"
#include "unit.h"

/* What the id keeps of its last lookup (rdma_query_addrinfo's answer). */
static struct rdma_addrinfo *kept_ai(const struct cma_id_private *id_priv)
{
	const struct cma_id_rare *rare = cma_id_rare_of(id_priv);

	return rare ? rare->resolved_ai : NULL;
}

static int count_entries(const struct rdma_addrinfo *res)
{
	int n = 0;

	for (; res; res = res->ai_next)
		n++;
	return n;
}

static void assert_in4(const struct sockaddr *sa, socklen_t len, const char *ip,
		       uint16_t port)
{
	struct sockaddr_in want = unit_ipv4(ip, port);

	ck_assert_ptr_nonnull(sa);
	ck_assert_uint_eq(len, sizeof(want));
	ck_assert_int_eq(memcmp(sa, &want, sizeof(want)), 0);
}

/* An id as far as these calls look at it: no kernel, no channel. */
static struct cma_id_private *fake_id(bool sync)
{
	struct cma_id_private *id_priv = calloc(1, sizeof(*id_priv));

	ck_assert_ptr_nonnull(id_priv);
	id_priv->sync = sync;
	id_priv->id.ps = RDMA_PS_TCP;
	id_priv->id.qp_type = IBV_QPT_RC;
	pthread_mutex_init(&id_priv->mut, NULL);
	return id_priv;
}

/*
 * A resolver that holds the lookup until the test lets it go: the call
 * returning while the lookup is held shows the caller does not wait for
 * it.  The bound on the hold only keeps a broken library from hanging
 * the test; a correct one never reaches it.
 */
static sem_t held_entered, held_release;
static bool held_gave_up;

static int held_resolver(const char *node, const char *service,
			 const struct rdma_addrinfo *hints,
			 const union ibv_gid *sgid, struct rdma_addrinfo **res)
{
	struct timespec until;

	sem_post(&held_entered);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 60;
	if (sem_timedwait(&held_release, &until))
		held_gave_up = true;
	return cma_getaddrinfo_from(node, service, hints, sgid, res);
}

static void hold_lookups(void)
{
	sem_init(&held_entered, 0, 0);
	sem_init(&held_release, 0, 0);
	held_gave_up = false;
	cma_ai_resolver = held_resolver;
}

static void release_lookups(void)
{
	cma_ai_resolver = cma_getaddrinfo_from;
	sem_destroy(&held_entered);
	sem_destroy(&held_release);
}

static void *cancel_thread(void *arg)
{
	cma_ai_cancel(arg);
	return NULL;
}

START_TEST(test_resolve_and_query)
{
	struct cma_id_private *id_priv = fake_id(true);
	struct rdma_cm_id *id = &id_priv->id;
	struct rdma_addrinfo hints, *info, *again;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	ck_assert_int_eq(rdma_resolve_addrinfo(id, NULL, "7471", &hints), 0);
	ck_assert_ptr_nonnull(kept_ai(id_priv));

	again = kept_ai(id_priv);
	ck_assert_int_eq(rdma_query_addrinfo(id, &info), 0);
	/* Handed over, not copied (rdma-core): the id keeps nothing ... */
	ck_assert_ptr_eq(info, again);
	ck_assert_ptr_null(kept_ai(id_priv));
	ck_assert_int_eq(info->ai_flags & RAI_PASSIVE, RAI_PASSIVE);
	rdma_freeaddrinfo(info);
	/* ... so a second query has nothing to give. */
	again = (void *)&again;
	errno = 0;
	ck_assert_int_eq(rdma_query_addrinfo(id, &again), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_eq(again, (void *)&again); /* left alone */

	/* A second resolution replaces the first (no leak). */
	ck_assert_int_eq(rdma_resolve_addrinfo(id, "192.0.2.1", "1", NULL), 0);
	ck_assert_int_eq(rdma_query_addrinfo(id, &info), 0);
	ck_assert_int_eq(count_entries(info), 1);
	assert_in4(info->ai_dst_addr, info->ai_dst_len, "192.0.2.1", 1);
	rdma_freeaddrinfo(info);

	/* cma_id_free releases the stored result. */
	cma_id_free(id_priv);
}
END_TEST

START_TEST(test_failed_resolve_clears)
{
	struct cma_id_private *id_priv = fake_id(true);
	struct rdma_cm_id *id = &id_priv->id;
	struct rdma_addrinfo hints, *info = NULL;

	ck_assert_int_eq(rdma_resolve_addrinfo(id, "192.0.2.1", "1", NULL), 0);
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_NUMERICHOST;
	errno = 0;
	ck_assert_int_eq(
		rdma_resolve_addrinfo(id, "bad.name.invalid", "1", &hints), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_null(kept_ai(id_priv));
	errno = 0;
	ck_assert_int_eq(rdma_query_addrinfo(id, &info), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_null(info);
	cma_id_free(id_priv);
}
END_TEST

START_TEST(test_resolve_query_errors)
{
	struct cma_id_private *id_priv = fake_id(true);
	struct rdma_addrinfo *info = NULL;

	errno = 0;
	ck_assert_int_eq(rdma_resolve_addrinfo(NULL, "192.0.2.1", "1", NULL),
			 -1);
	ck_assert_int_eq(errno, EINVAL);

	errno = 0;
	ck_assert_int_eq(rdma_query_addrinfo(NULL, &info), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(rdma_query_addrinfo(&id_priv->id, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(rdma_query_addrinfo(&id_priv->id, &info), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_null(info);

	cma_id_free(id_priv);
}
END_TEST

/* An asynchronous id hears the outcome as an event on its channel. */
START_TEST(test_async_resolve_reports_events)
{
	struct cma_id_private *async_id = fake_id(false);
	struct rdma_addrinfo hints, *info = NULL;
	struct rdma_cm_event *ev;

	fake_ucma_install(); /* the kernel side: never read */
	/* An application's channel: it wakes for library events. */
	async_id->id.channel = rdma_create_event_channel();
	ck_assert_ptr_nonnull(async_id->id.channel);
	ck_assert_int_eq(
		rdma_resolve_addrinfo(&async_id->id, "192.0.2.1", "1", NULL),
		0);
	ck_assert_int_eq(rdma_get_cm_event(async_id->id.channel, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_ADDRINFO_RESOLVED);
	ck_assert_int_eq(ev->status, 0);
	ck_assert_ptr_eq(ev->id, &async_id->id);
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(rdma_query_addrinfo(&async_id->id, &info), 0);
	assert_in4(info->ai_dst_addr, info->ai_dst_len, "192.0.2.1", 1);
	rdma_freeaddrinfo(info);

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_NUMERICHOST;
	ck_assert_int_eq(rdma_resolve_addrinfo(&async_id->id,
					       "bad.name.invalid", "1", &hints),
			 0);
	ck_assert_int_eq(rdma_get_cm_event(async_id->id.channel, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_ADDRINFO_ERROR);
	ck_assert_int_eq(ev->status, -ENOENT);
	rdma_ack_cm_event(ev);
	ck_assert_ptr_null(kept_ai(async_id));
	ck_assert_uint_eq(async_id->lib_events, 0);

	/* as rdma_destroy_id: wait for the lookup thread to let go */
	cma_ai_cancel(async_id);
	rdma_destroy_event_channel(async_id->id.channel);
	fake_ucma_uninstall();
	cma_id_free(async_id);
}
END_TEST

/* RAI_DNS on an asynchronous id: the caller's thread never waits. */
START_TEST(test_async_resolve_does_not_block)
{
	struct cma_id_private *id_priv = fake_id(false);
	struct rdma_addrinfo hints, *info = NULL;
	struct rdma_cm_event *ev;

	fake_ucma_install();
	id_priv->id.channel = rdma_create_event_channel();
	ck_assert_ptr_nonnull(id_priv->id.channel);
	hold_lookups();

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_DNS;
	ck_assert_int_eq(
		rdma_resolve_addrinfo(&id_priv->id, "192.0.2.7", "9", &hints),
		0);
	/* Returned, with the lookup started and still held. */
	sem_wait(&held_entered);
	ck_assert(!unit_readable(id_priv->id.channel->fd));
	ck_assert_ptr_null(kept_ai(id_priv));
	sem_post(&held_release);

	ck_assert_int_eq(rdma_get_cm_event(id_priv->id.channel, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_ADDRINFO_RESOLVED);
	ck_assert_int_eq(ev->status, 0);
	rdma_ack_cm_event(ev);
	ck_assert(!held_gave_up);
	ck_assert_int_eq(rdma_query_addrinfo(&id_priv->id, &info), 0);
	assert_in4(info->ai_dst_addr, info->ai_dst_len, "192.0.2.7", 9);
	rdma_freeaddrinfo(info);

	release_lookups();
	/* as rdma_destroy_id: wait for the lookup thread to let go */
	cma_ai_cancel(id_priv);
	rdma_destroy_event_channel(id_priv->id.channel);
	fake_ucma_uninstall();
	cma_id_free(id_priv);
}
END_TEST

/*
 * rdma_destroy_id during a lookup: it waits for the lookup, which then
 * keeps nothing and posts nothing (no event is left to ack).
 */
START_TEST(test_destroy_waits_for_lookup)
{
	struct cma_id_private *id_priv = fake_id(false);
	pthread_t thread;

	fake_ucma_install();
	id_priv->id.channel = rdma_create_event_channel();
	hold_lookups();
	ck_assert_int_eq(
		rdma_resolve_addrinfo(&id_priv->id, "192.0.2.8", "9", NULL), 0);
	sem_wait(&held_entered);
	ck_assert_int_eq(pthread_create(&thread, NULL, cancel_thread, id_priv),
			 0);
	/* Let the lookup finish only once the destroy has begun. */
	for (;;) {
		bool begun;

		pthread_mutex_lock(&id_priv->mut);
		begun = id_priv->ai_cancel;
		pthread_mutex_unlock(&id_priv->mut);
		if (begun)
			break;
		sched_yield();
	}
	sem_post(&held_release);
	pthread_join(thread, NULL);
	ck_assert(!held_gave_up);

	/* rdma_destroy_id's next steps: drop queued events, wait for acks */
	cma_channel_drop_events(id_priv);
	ck_assert_uint_eq(id_priv->ai_pending, 0);
	ck_assert_uint_eq(id_priv->lib_events, 0);
	ck_assert_ptr_null(kept_ai(id_priv));
	ck_assert(!unit_readable(id_priv->id.channel->fd));

	release_lookups();
	rdma_destroy_event_channel(id_priv->id.channel);
	fake_ucma_uninstall();
	cma_id_free(id_priv);
}
END_TEST

/* RAI_SA's checks, made before anything starts: -1, and no event. */
START_TEST(test_rai_sa_checks)
{
	struct cma_id_private *id_priv = fake_id(false);
	struct rdma_addrinfo hints, *res = NULL;

	fake_ucma_install();
	id_priv->id.channel = rdma_create_event_channel();
	memset(&hints, 0, sizeof(hints));

	/* A service is looked up, never a node; not with RAI_DNS. */
	hints.ai_flags = RAI_SA;
	errno = 0;
	ck_assert_int_eq(rdma_getaddrinfo("host", "1", &hints, &res), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	errno = 0;
	ck_assert_int_eq(
		rdma_resolve_addrinfo(&id_priv->id, "host", "1", &hints), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	hints.ai_flags = RAI_SA | RAI_DNS;
	errno = 0;
	ck_assert_int_eq(rdma_getaddrinfo(NULL, "1", &hints, &res), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	errno = 0;
	ck_assert_int_eq(rdma_resolve_addrinfo(&id_priv->id, NULL, "1", &hints),
			 -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);

	/* No service, or a name longer than a ServiceRecord holds. */
	hints.ai_flags = RAI_SA;
	errno = 0;
	ck_assert_int_eq(rdma_getaddrinfo(NULL, NULL, &hints, &res), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(
		rdma_resolve_addrinfo(&id_priv->id, NULL,
				      "a-service-name-longer-than-the-sixty-"
				      "four-bytes-of-a-service-record",
				      &hints),
		-1);
	ck_assert_int_eq(errno, EINVAL);

	/* The id must be bound to an (InfiniBand) port. */
	errno = 0;
	ck_assert_int_eq(
		rdma_resolve_addrinfo(&id_priv->id, NULL, "0x10", &hints), -1);
	ck_assert_int_eq(errno, EINVAL);

	ck_assert_ptr_null(res);
	ck_assert_uint_eq(id_priv->lib_events, 0);
	ck_assert(!unit_readable(id_priv->id.channel->fd));
	/* as rdma_destroy_id: wait for the lookup thread to let go */
	cma_ai_cancel(id_priv);
	rdma_destroy_event_channel(id_priv->id.channel);
	fake_ucma_uninstall();
	cma_id_free(id_priv);
}
END_TEST

/*
 * A resolver that notes whether the thread it runs in blocks the signals
 * a program handles: a lookup thread must never be the one they reach.
 */
static bool signals_blocked;

static int mask_resolver(const char *node, const char *service,
			 const struct rdma_addrinfo *hints,
			 const union ibv_gid *sgid, struct rdma_addrinfo **res)
{
	sigset_t cur;

	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	signals_blocked =
		sigismember(&cur, SIGINT) && sigismember(&cur, SIGTERM) &&
		sigismember(&cur, SIGALRM) && sigismember(&cur, SIGUSR1);
	return cma_getaddrinfo_from(node, service, hints, sgid, res);
}

/* The lookup thread blocks every signal; the caller's mask is unchanged. */
START_TEST(test_lookup_thread_takes_no_signal)
{
	struct cma_id_private *id_priv = fake_id(false);
	struct rdma_cm_event *ev;
	sigset_t before, after;

	fake_ucma_install();
	id_priv->id.channel = rdma_create_event_channel();
	ck_assert_ptr_nonnull(id_priv->id.channel);
	cma_ai_resolver = mask_resolver;
	pthread_sigmask(SIG_BLOCK, NULL, &before);
	ck_assert_int_eq(
		rdma_resolve_addrinfo(&id_priv->id, "192.0.2.5", "5", NULL), 0);
	pthread_sigmask(SIG_BLOCK, NULL, &after);
	ck_assert_int_eq(rdma_get_cm_event(id_priv->id.channel, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_ADDRINFO_RESOLVED);
	rdma_ack_cm_event(ev);
	ck_assert(signals_blocked);
	ck_assert_int_eq(sigismember(&before, SIGUSR1),
			 sigismember(&after, SIGUSR1));
	ck_assert_int_eq(sigismember(&before, SIGINT),
			 sigismember(&after, SIGINT));
	cma_ai_resolver = cma_getaddrinfo_from;
	/* as rdma_destroy_id: wait for the lookup thread to let go */
	cma_ai_cancel(id_priv);
	rdma_destroy_event_channel(id_priv->id.channel);
	fake_ucma_uninstall();
	cma_id_free(id_priv);
}
END_TEST

Suite *addrinfo_resolve_suite(void)
{
	Suite *s = suite_create("addrinfo_resolve");
	TCase *tc = tcase_create("synchronous");

	tcase_add_test(tc, test_resolve_and_query);
	tcase_add_test(tc, test_failed_resolve_clears);
	tcase_add_test(tc, test_resolve_query_errors);
	suite_add_tcase(s, tc);
	tc = tcase_create("asynchronous");
	tcase_add_test(tc, test_async_resolve_reports_events);
	tcase_add_test(tc, test_async_resolve_does_not_block);
	tcase_add_test(tc, test_destroy_waits_for_lookup);
	tcase_add_test(tc, test_rai_sa_checks);
	tcase_add_test(tc, test_lookup_thread_takes_no_signal);
	suite_add_tcase(s, tc);
	return s;
}
