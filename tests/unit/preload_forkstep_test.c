// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * The decisions of librspreload's RDMAV_FORK_SAFE handshake, without its
 * I/O (src/preload/forkstep.c, compiled in): what a lazy connection's
 * first read or write does with what its peer sent so far, the 8-byte
 * offer each end sends and when two offers agree to go on over RDMA
 * (case handshake); on a non-blocking socket, which state follows which,
 * what poll watches in each, what the program hears, and how an accept or
 * a connect under way ends (case states).  preload_fork_test.c runs the
 * handshake itself under the preload, over loopback connections.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <poll.h>
#include <string.h>

#include "preload/preload.h"
#include "unit.h"

/* A passive end's offer: listening on port 8080, able to go on. */
static const uint8_t offer_p[RSP_FK_LEN] = {'R',  'S',	'F', 'K',
					    0x1f, 0x90, 'P', 1};

START_TEST(first_speaker_offers_and_reader_waits)
{
	ck_assert_int_eq(rsp_fk_step(true, NULL, -1), RSP_FK_OFFER);
	ck_assert_int_eq(rsp_fk_step(false, NULL, -1), RSP_FK_WAIT);
	/* the peer closed before a word */
	ck_assert_int_eq(rsp_fk_step(false, offer_p, 0), RSP_FK_TCP);
	ck_assert_int_eq(rsp_fk_step(true, offer_p, 0), RSP_FK_TCP);
}
END_TEST

START_TEST(peer_offer_is_answered_and_data_keeps_tcp)
{
	ck_assert_int_eq(rsp_fk_step(false, offer_p, 8), RSP_FK_ANSWER);
	ck_assert_int_eq(rsp_fk_step(true, offer_p, 8), RSP_FK_ANSWER);
	/* a partial offer: wait for the rest */
	ck_assert_int_eq(rsp_fk_step(false, offer_p, 2), RSP_FK_MORE);
	ck_assert_int_eq(rsp_fk_step(true, offer_p, 5), RSP_FK_MORE);
	/* a peer without the preload: its data, left for the program */
	ck_assert_int_eq(rsp_fk_step(false, (const uint8_t *)"GET / H", 7),
			 RSP_FK_TCP);
	ck_assert_int_eq(rsp_fk_step(true, (const uint8_t *)"R", 1),
			 RSP_FK_MORE);
	ck_assert_int_eq(rsp_fk_step(true, (const uint8_t *)"RSFX", 4),
			 RSP_FK_TCP);
}
END_TEST

/*
 * An inherited connection never moves: it declines an offer while it has
 * sent nothing, and only takes one that came after its own data.
 */
START_TEST(inherited_ends_decline_or_drop_an_offer)
{
	struct rsp_fk_msg peer, mine;

	ck_assert_int_eq(rsp_fk_inherited(RSP_FK_WAIT, false), RSP_FK_INH_WAIT);
	ck_assert_int_eq(rsp_fk_inherited(RSP_FK_TCP, false), RSP_FK_INH_TCP);
	ck_assert_int_eq(rsp_fk_inherited(RSP_FK_ANSWER, false),
			 RSP_FK_INH_DECLINE);
	ck_assert_int_eq(rsp_fk_inherited(RSP_FK_ANSWER, true),
			 RSP_FK_INH_DROP);
	/* the decline is a well-formed offer the peer cannot agree with */
	ck_assert_int_eq(rsp_fk_decode(offer_p, &peer), 0);
	mine = rsp_fk_decline(&peer);
	ck_assert_int_eq(mine.role, RSP_FK_ACTIVE);
	ck_assert(!mine.ready);
	ck_assert(!rsp_fk_agree(&peer, &mine));
	peer.role = RSP_FK_ACTIVE;
	mine = rsp_fk_decline(&peer);
	ck_assert_int_eq(mine.role, RSP_FK_PASSIVE);
	ck_assert(!rsp_fk_agree(&peer, &mine));
}
END_TEST

START_TEST(offers_encode_and_decode)
{
	struct rsp_fk_msg m = {.port = htons(4242),
			       .role = RSP_FK_PASSIVE,
			       .ready = 1},
			  d;
	uint8_t buf[RSP_FK_LEN];

	rsp_fk_encode(buf, &m);
	ck_assert(!memcmp(buf, "RSFK", 4));
	ck_assert_int_eq(rsp_fk_decode(buf, &d), 0);
	ck_assert_int_eq(d.port, htons(4242));
	ck_assert_int_eq(d.role, RSP_FK_PASSIVE);
	ck_assert_int_eq(d.ready, 1);
	buf[6] = 'X'; /* no such role */
	ck_assert_int_eq(rsp_fk_decode(buf, &d), -1);
	buf[6] = RSP_FK_ACTIVE;
	buf[7] = 2;
	ck_assert_int_eq(rsp_fk_decode(buf, &d), -1);
	buf[7] = 0;
	buf[0] = 'r';
	ck_assert_int_eq(rsp_fk_decode(buf, &d), -1);
}
END_TEST

START_TEST(both_ready_opposite_roles_and_a_port_agree)
{
	struct rsp_fk_msg p = {.port = htons(7),
			       .role = RSP_FK_PASSIVE,
			       .ready = 1},
			  a = {.role = RSP_FK_ACTIVE, .ready = 1};

	ck_assert(rsp_fk_agree(&p, &a));
	ck_assert(rsp_fk_agree(&a, &p));
	a.ready = 0;
	ck_assert(!rsp_fk_agree(&p, &a));
	ck_assert(!rsp_fk_agree(&a, &p));
	a.ready = 1;
	p.port = 0; /* it could not listen */
	ck_assert(!rsp_fk_agree(&a, &p));
	p.port = htons(7);
	a.role = RSP_FK_PASSIVE; /* two accepted ends: no one connects */
	ck_assert(!rsp_fk_agree(&a, &p));
}
END_TEST

/*
 * The offer's port travels as it is given (network order), whatever the
 * host's order, and only the 8 bytes of the offer are read or written.
 */
START_TEST(offers_are_eight_bytes_port_as_given)
{
	struct rsp_fk_msg m = {.port = htons(0x1f90),
			       .role = RSP_FK_PASSIVE,
			       .ready = 1},
			  d;
	uint8_t buf[RSP_FK_LEN + 2];

	memset(buf, 0xee, sizeof(buf));
	rsp_fk_encode(buf, &m);
	ck_assert_mem_eq(buf, offer_p, RSP_FK_LEN);
	ck_assert_uint_eq(buf[RSP_FK_LEN], 0xee);
	ck_assert_uint_eq(buf[RSP_FK_LEN + 1], 0xee);
	memset(&d, 0, sizeof(d));
	ck_assert_int_eq(rsp_fk_decode(offer_p, &d), 0);
	ck_assert_uint_eq(ntohs(d.port), 0x1f90);
	/* an active end offers no port, and may not be ready */
	m = (struct rsp_fk_msg){.role = RSP_FK_ACTIVE};
	rsp_fk_encode(buf, &m);
	ck_assert_int_eq(rsp_fk_decode(buf, &d), 0);
	ck_assert_uint_eq(d.port, 0);
	ck_assert_int_eq(d.role, RSP_FK_ACTIVE);
	ck_assert_int_eq(d.ready, 0);
}
END_TEST

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
	TCase *tc = tcase_create("handshake");

	tcase_add_test(tc, first_speaker_offers_and_reader_waits);
	tcase_add_test(tc, peer_offer_is_answered_and_data_keeps_tcp);
	tcase_add_test(tc, inherited_ends_decline_or_drop_an_offer);
	tcase_add_test(tc, offers_encode_and_decode);
	tcase_add_test(tc, both_ready_opposite_roles_and_a_port_agree);
	tcase_add_test(tc, offers_are_eight_bytes_port_as_given);
	suite_add_tcase(s, tc);
	tc = tcase_create("states");
	tcase_add_test(tc, only_the_states_under_way_are_pending);
	tcase_add_test(tc, only_ends_past_their_offer_hold_an_rsocket);
	tcase_add_test(tc, a_first_offer_waits_for_the_peers);
	tcase_add_test(tc, agreed_offers_accept_or_connect_by_role);
	tcase_add_test(tc, offered_watches_tcp_input_only);
	tcase_add_test(tc, the_rest_of_an_offer_is_watched_with_its_timer);
	tcase_add_test(tc, accepting_watches_the_listener_and_tcp);
	tcase_add_test(tc, connecting_watches_the_rsocket_output);
	tcase_add_test(tc, no_io_asked_nothing_watched);
	tcase_add_test(tc, accepting_ends_on_a_connection_or_a_word_on_tcp);
	tcase_add_test(tc, connecting_ends_on_output_or_an_error);
	suite_add_tcase(s, tc);
	return s;
}
