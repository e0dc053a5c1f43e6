/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Per-socket option values that are not buffer sizes (options.c), and the
 * keepalive service (keepalive.c).
 *
 * Keepalive, as TCP does it: after @idle seconds without hearing from the
 * peer a probe goes out (a zero-byte control message the peer's NIC must
 * acknowledge), then one every @intvl seconds; when @cnt probes in a row
 * go unanswered the connection is declared dead (ETIMEDOUT) and its QP is
 * moved to the error state, which wakes every waiter.  A peer whose QP is
 * gone (process killed, device removed) fails the probe in the NIC even
 * sooner.  One library thread runs the timers of every socket with
 * SO_KEEPALIVE on; it is started by the first such socket and ends when
 * the last one goes, so programs that never ask for keepalive have none.
 */
#ifndef RS_OPTS_H
#define RS_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#define RS_CONG_NAME_MAX 16 /* TCP_CA_NAME_MAX */

struct rs_opt {
	uint8_t tos; /* IP_TOS / IPV6_TCLASS, handed to the CM id */
	bool cloexec; /* rfcntl F_GETFD/F_SETFD */
	uint16_t maxseg; /* TCP_MAXSEG: 0, or the largest message */
	unsigned int keepintvl; /* TCP_KEEPINTVL, seconds */
	unsigned int keepcnt; /* TCP_KEEPCNT */
	char cong[RS_CONG_NAME_MAX]; /* TCP_CONGESTION, "" = default */
	bool linger_set; /* SO_LINGER on: close waits linger_s at most */
	unsigned int linger_s; /* else RS_CLOSE_LINGER_MS (rs.h) */
};

/* The keepalive timer of one socket (under the service's lock). */
struct rs_ka {
	struct rsocket *next; /* in the service's list */
	bool listed;
	uint64_t due_ms; /* next look at this socket */
	uint64_t heard_ms; /* last time the peer was heard from */
	uint64_t probe_ms; /* when the last probe went out */
	unsigned int probes; /* unanswered probes */
};

/* What the timer does at a look (the pure rule, for the unit tests). */
enum rs_ka_action {
	RS_KA_WAIT, /* heard lately: nothing to do until *due */
	RS_KA_PROBE, /* send a probe, look again at *due */
	RS_KA_DEAD, /* @cnt probes went unanswered */
};

struct rs_ka_params {
	unsigned int idle, intvl, cnt; /* seconds, seconds, probes */
};

enum rs_ka_action rs_ka_decide(const struct rs_ka_params *p, struct rs_ka *ka,
			       uint64_t now_ms);

struct rsocket;
/* Start or stop the timer of a stream socket (SO_KEEPALIVE on or off). */
int rs_ka_start(struct rsocket *rs);
void rs_ka_stop(struct rsocket *rs);
/* rs_ka_heard's (rs.h) store, for a socket the timer looks at. */
void rs_ka_heard_now(struct rsocket *rs);
/* Post one probe if a control slot is free (stream.c), under rs->lock. */
void rs_send_keepalive(struct rsocket *rs);
/* The defaults of the kernel's TCP: /proc/sys/net/ipv4/tcp_keepalive_*. */
unsigned int rs_ka_sysctl(const char *name, unsigned int fallback);

#endif /* RS_OPTS_H */
