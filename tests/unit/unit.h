/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * What every unit test program shares: its main(), and the few helpers
 * that tests driving the public API through the fakes all need.
 */
#ifndef UNIT_H
#define UNIT_H

#include <arpa/inet.h>
#include <check.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <rdma/rdma_cma.h>

/* main(): run one suite; the exit status says whether anything failed. */
#define UNIT_MAIN(make_suite)                                                  \
	int main(void)                                                         \
	{                                                                      \
		SRunner *sr = srunner_create(make_suite());                    \
		int failed;                                                    \
                                                                               \
		srunner_run_all(sr, CK_NORMAL);                                \
		failed = srunner_ntests_failed(sr);                            \
		srunner_free(sr);                                              \
		return failed ? EXIT_FAILURE : EXIT_SUCCESS;                   \
	}

/* Whether @fd is readable right now (an outside program's poll). */
static inline bool unit_readable(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

/* A small QP of @type with no CQs given (the library makes them). */
static inline struct ibv_qp_init_attr unit_qp_attr(enum ibv_qp_type type)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = type,
		.cap = {.max_send_wr = 2,
			.max_recv_wr = 2,
			.max_send_sge = 1,
			.max_recv_sge = 1},
	};

	return attr;
}

static inline struct sockaddr_in unit_ipv4(const char *addr, uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(port)};

	inet_pton(AF_INET, addr, &sin.sin_addr);
	return sin;
}

/*
 * The next event on @ch, which must be @type: as an outside program
 * waits, poll(2) on the fd first (bounded), then rdma_get_cm_event.
 */
static inline struct rdma_cm_event *
unit_expect_event(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	ck_assert_int_eq(poll(&pfd, 1, 2000), 1);
	ck_assert_int_eq(rdma_get_cm_event(ch, &ev), 0);
	ck_assert_msg(ev->event == type, "got %s, want %s",
		      rdma_event_str(ev->event), rdma_event_str(type));
	return ev;
}

#endif /* UNIT_H */
