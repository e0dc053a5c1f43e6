// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * librspreload's RDMAV_FORK_SAFE handshake on a non-blocking socket, its
 * decisions (src/preload/forkstep.c, compiled in): which state follows
 * which, what poll watches in each, what the program hears, and how an
 * accept or a connect under way ends.  Under the preload, with loopback
 * connections: preload_fork_test.c.
 */
#include <config.h>

#include <check.h>
#include <poll.h>

#include "preload/preload.h"
#include "unit.h"

START_TEST(only_the_states_under_way_are_pending)
{
	ck_assert(!rsp_fk_pending(RSP_LAZY_NONE));
	ck_assert(!rsp_fk_pending(RSP_LAZY_FRESH));
	ck_assert(!rsp_fk_pending(RSP_LAZY_LISTEN));
	ck_assert(!rsp_fk_pending(RSP_LAZY_ACTIVE));
	ck_assert(!rsp_fk_pending(RSP_LAZY_PASSIVE));
	ck_assert(rsp_fk_pending(RSP_LAZY_OFFERED_A));
	ck_assert(rsp_fk_pending(RSP_LAZY_OFFERED_P));
	ck_assert(rsp_fk_pending(RSP_LAZY_ACCEPTING));
	ck_assert(rsp_fk_pending(RSP_LAZY_CONNECTING));
	ck_assert(rsp_fk_pending(RSP_LAZY_REST_A));
	ck_assert(rsp_fk_pending(RSP_LAZY_REST_P));
}
END_TEST

/* An end waiting for the rest of the peer's offer has made nothing yet. */
START_TEST(only_ends_past_their_offer_hold_an_rsocket)
{
	ck_assert(!rsp_fk_holds(RSP_LAZY_ACTIVE));
	ck_assert(!rsp_fk_holds(RSP_LAZY_PASSIVE));
	ck_assert(!rsp_fk_holds(RSP_LAZY_REST_A));
	ck_assert(!rsp_fk_holds(RSP_LAZY_REST_P));
	ck_assert(rsp_fk_holds(RSP_LAZY_OFFERED_A));
	ck_assert(rsp_fk_holds(RSP_LAZY_OFFERED_P));
	ck_assert(rsp_fk_holds(RSP_LAZY_ACCEPTING));
	ck_assert(rsp_fk_holds(RSP_LAZY_CONNECTING));
	ck_assert_int_eq(rsp_fk_resting(false), RSP_LAZY_REST_A);
	ck_assert_int_eq(rsp_fk_resting(true), RSP_LAZY_REST_P);
}
END_TEST

START_TEST(a_first_offer_waits_for_the_peers)
{
	ck_assert_int_eq(rsp_fk_offered(false), RSP_LAZY_OFFERED_A);
	ck_assert_int_eq(rsp_fk_offered(true), RSP_LAZY_OFFERED_P);
}
END_TEST

START_TEST(agreed_offers_accept_or_connect_by_role)
{
	struct rsp_fk_msg p = {.port = htons(7),
			       .role = RSP_FK_PASSIVE,
			       .ready = 1},
			  a = {.role = RSP_FK_ACTIVE, .ready = 1};

	ck_assert_int_eq(rsp_fk_after(&p, &a), RSP_LAZY_ACCEPTING);
	ck_assert_int_eq(rsp_fk_after(&a, &p), RSP_LAZY_CONNECTING);
	/* one end cannot go on over RDMA: both stay on TCP */
	a.ready = 0;
	ck_assert_int_eq(rsp_fk_after(&p, &a), RSP_LAZY_NONE);
	ck_assert_int_eq(rsp_fk_after(&a, &p), RSP_LAZY_NONE);
}
END_TEST

/*
 * An end that offered first waits for input on TCP, whatever the program
 * waits for: the socket's writability would wake a writer for nothing.
 */
START_TEST(offered_watches_tcp_input_only)
{
	struct rsp_fk_watch w;

	w = rsp_fk_watch(RSP_LAZY_OFFERED_A, POLLOUT, false);
	ck_assert_int_eq(w.tcp, POLLIN);
	ck_assert_int_eq(w.rs, 0);
	w = rsp_fk_watch(RSP_LAZY_OFFERED_P, POLLIN, false);
	ck_assert_int_eq(w.tcp, POLLIN);
	ck_assert_int_eq(w.rs, 0);
}
END_TEST

/*
 * The start of an offer keeps the socket readable: the wait is for the
 * whole offer (fork.c's SO_RCVLOWAT) or the timer bounding it.
 */
START_TEST(the_rest_of_an_offer_is_watched_with_its_timer)
{
	struct rsp_fk_watch w = rsp_fk_watch(RSP_LAZY_REST_P, POLLIN, true);

	ck_assert_int_eq(w.tcp, POLLIN);
	ck_assert_int_eq(w.timer, POLLIN);
	ck_assert_int_eq(w.rs, 0);
	w = rsp_fk_watch(RSP_LAZY_OFFERED_A, POLLOUT, true);
	ck_assert_int_eq(w.tcp, POLLIN);
	ck_assert_int_eq(w.timer, POLLIN);
	ck_assert_int_eq(w.rs, 0);
	w = rsp_fk_watch(RSP_LAZY_OFFERED_A, POLLOUT, false);
	ck_assert_int_eq(w.timer, 0);
}
END_TEST

/* The listener's connection, or the peer's notice of a failure: both. */
START_TEST(accepting_watches_the_listener_and_tcp)
{
	struct rsp_fk_watch w = rsp_fk_watch(RSP_LAZY_ACCEPTING, POLLIN, false);

	ck_assert_int_eq(w.tcp, POLLIN);
	ck_assert_int_eq(w.rs, POLLIN);
}
END_TEST

START_TEST(connecting_watches_the_rsocket_output)
{
	struct rsp_fk_watch w =
		rsp_fk_watch(RSP_LAZY_CONNECTING, POLLIN, false);

	ck_assert_int_eq(w.tcp, 0);
	ck_assert_int_eq(w.rs, POLLOUT);
}
END_TEST

/* A program that asks for no I/O is never woken by the handshake. */
START_TEST(no_io_asked_nothing_watched)
{
	struct rsp_fk_watch w = rsp_fk_watch(RSP_LAZY_ACCEPTING, POLLPRI, true);

	ck_assert_int_eq(w.tcp, 0);
	ck_assert_int_eq(w.rs, 0);
	w = rsp_fk_watch(RSP_LAZY_ACTIVE, POLLIN, false);
	ck_assert_int_eq(w.tcp, 0); /* not pending: the kernel socket's own */
	ck_assert_int_eq(w.rs, 0);
}
END_TEST

START_TEST(progress_is_reported_as_what_the_program_asked)
{
	ck_assert_int_eq(rsp_fk_report(POLLIN, 0), 0);
	ck_assert_int_eq(rsp_fk_report(POLLOUT, POLLIN), POLLOUT);
	ck_assert_int_eq(rsp_fk_report(POLLIN | POLLPRI, POLLOUT), POLLIN);
	ck_assert_int_eq(rsp_fk_report(POLLIN | POLLOUT, POLLHUP),
			 POLLIN | POLLOUT);
}
END_TEST

START_TEST(accepting_ends_on_a_connection_or_a_word_on_tcp)
{
	ck_assert_int_eq(rsp_fk_accepting(false, -1), RSP_FK_PENDING);
	ck_assert_int_eq(rsp_fk_accepting(true, -1), RSP_FK_DONE);
	/* its connection comes before any end of the TCP one */
	ck_assert_int_eq(rsp_fk_accepting(true, 0), RSP_FK_DONE);
	ck_assert_int_eq(rsp_fk_accepting(false, RSP_FK_LEN), RSP_FK_FAILED);
	ck_assert_int_eq(rsp_fk_accepting(false, 0), RSP_FK_FAILED);
}
END_TEST

START_TEST(connecting_ends_on_output_or_an_error)
{
	ck_assert_int_eq(rsp_fk_connecting(0), RSP_FK_PENDING);
	ck_assert_int_eq(rsp_fk_connecting(POLLOUT), RSP_FK_DONE);
	/* rpoll says a failed connect is writable too, with an error */
	ck_assert_int_eq(rsp_fk_connecting(POLLOUT | POLLERR), RSP_FK_FAILED);
	ck_assert_int_eq(rsp_fk_connecting(POLLHUP), RSP_FK_FAILED);
}
END_TEST

Suite *preload_forkstep_suite(void)
{
	Suite *s = suite_create("preload_forkstep");
	TCase *tc = tcase_create("states");

	tcase_add_test(tc, only_the_states_under_way_are_pending);
	tcase_add_test(tc, only_ends_past_their_offer_hold_an_rsocket);
	tcase_add_test(tc, a_first_offer_waits_for_the_peers);
	tcase_add_test(tc, agreed_offers_accept_or_connect_by_role);
	tcase_add_test(tc, offered_watches_tcp_input_only);
	tcase_add_test(tc, the_rest_of_an_offer_is_watched_with_its_timer);
	tcase_add_test(tc, accepting_watches_the_listener_and_tcp);
	tcase_add_test(tc, connecting_watches_the_rsocket_output);
	tcase_add_test(tc, no_io_asked_nothing_watched);
	tcase_add_test(tc, progress_is_reported_as_what_the_program_asked);
	tcase_add_test(tc, accepting_ends_on_a_connection_or_a_word_on_tcp);
	tcase_add_test(tc, connecting_ends_on_output_or_an_error);
	suite_add_tcase(s, tc);
	return s;
}
