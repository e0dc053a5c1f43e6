/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Helpers shared by the librdmacm example programs: messages, option
 * parsing, address lookup through rdma_getaddrinfo(), waiting for CM events
 * and for completions, and a few verbs shorthands.
 *
 * Conventions: functions that can fail print what went wrong themselves
 * (prefixed with the program name) and return -1, so callers only unwind.
 */
#ifndef EXAMPLES_COMMON_H
#define EXAMPLES_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* Exit statuses of every example program. */
enum {
	EX_OK = 0,
	EX_FAIL = 1, /* the run itself failed */
	EX_USAGE = 2, /* bad command line */
};

/* Address and route resolution timeout handed to the library. */
#define EX_RESOLVE_MS 2000
/*
 * How long to wait for a CM event or a completion that the peer should
 * produce promptly.  Generous, because Soft-RoCE under emulation is slow,
 * but finite so a vanished peer turns into an error instead of a hang.
 */
#define EX_WAIT_MS 30000
/* Wait forever (a server waiting for its first client). */
#define EX_FOREVER (-1)

/* "[ffff:...:ffff]:65535" plus NUL, with room to spare. */
#define EX_ADDRSTRLEN (INET6_ADDRSTRLEN + 16)

/* Messages */

/* Records the program name and makes stdout line-buffered (for pipes). */
void ex_init(const char *name);
const char *ex_prog(void);
/* When set, ex_info() prints nothing; errors are always printed. */
extern bool ex_quiet;

void ex_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ex_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* ex_err() with ": strerror(errno)" appended. */
void ex_syserr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Options */

/*
 * Parses a decimal (or 0x hex) number in [min, max] for option -opt.
 * Prints a message and returns -1 when arg is not one.
 */
int ex_parse_num(const char *arg, char opt, unsigned long min,
		 unsigned long max, unsigned long *val);
/* Prints "prog: bad option; try 'prog -h'" style hint and returns EX_USAGE */
int ex_usage_hint(void);

/* Addresses */

struct ex_addr {
	struct sockaddr_storage ss;
	socklen_t len;
};

static inline struct sockaddr *ex_sa(struct ex_addr *a)
{
	return (struct sockaddr *)&a->ss;
}

/* Resolve for a local address to bind or listen on (RAI_PASSIVE). */
#define EX_RES_PASSIVE 0x1
/* The name is a multicast group, not a host to route to. */
#define EX_RES_NOROUTE 0x2

/*
 * Turns node and port into one socket address with rdma_getaddrinfo().
 * With EX_RES_PASSIVE and no node the result is the IPv4 wildcard.  The
 * port space and QP type are passed as hints so that the library picks an
 * entry usable for that kind of id.
 */
int ex_resolve(const char *node, const char *port, int flags,
	       enum rdma_port_space ps, struct ex_addr *out);

/* Reports a failed rdma_getaddrinfo() call for node. */
void ex_addrinfo_err(int ret, const char *node);

/* Set @id's type of service when @tos is not NULL (a failure is reported). */
void ex_set_tos(struct rdma_cm_id *id, const uint8_t *tos);

/*
 * A listener: resolve @node:@port as a local address (any address when
 * @node is NULL), create an id on @ch, set @tos as ex_set_tos does, bind
 * and listen with @backlog.  *@id is set as soon as the id exists, so the
 * caller's cleanup releases it on failure.  0, or -1 after reporting why.
 */
int ex_listen(struct rdma_event_channel *ch, const char *node, const char *port,
	      enum rdma_port_space ps, int backlog, const uint8_t *tos,
	      struct rdma_cm_id **id);

/* Formats "192.0.2.1:7174" or "[2001:db8::1]:7174" into buf. */
const char *ex_ntop(const struct sockaddr *sa, char *buf, size_t len);
/* Same as ex_ntop() but without the port. */
const char *ex_ntop_host(const struct sockaddr *sa, char *buf, size_t len);

/* CM events */

/*
 * Waits up to timeout_ms (EX_FOREVER for no limit) for the next event on
 * ch.  Returns 0 with *ev set, or -1 (message printed) on error or timeout;
 * after a timeout errno is ETIMEDOUT.
 */
int ex_get_event(struct rdma_event_channel *ch, int timeout_ms,
		 struct rdma_cm_event **ev);

/*
 * Gets the next event and checks that it is of type want with status 0,
 * for id when id is not NULL.  Anything else is reported (with the
 * rejection reason and private data where there is one), acknowledged,
 * and turned into -1.  When ev is NULL a good event is acknowledged here.
 */
int ex_expect_event(struct rdma_event_channel *ch, struct rdma_cm_id *id,
		    enum rdma_cm_event_type want, int timeout_ms,
		    struct rdma_cm_event **ev);

/* Acknowledges ev, reporting a failure (which would leak the event). */
void ex_ack(struct rdma_cm_event *ev);

/*
 * Prints "prog: what: <event> (status N: text)" plus, for REJECTED, the
 * private data the peer sent.  Used for every unexpected event.
 */
void ex_report_event(const char *what, const struct rdma_cm_event *ev);

/*
 * Prints private data as text, stopping at the first NUL; bytes that are
 * not printable ASCII are shown as '.'.  Returns what it wrote.
 */
const char *ex_priv_str(const void *data, size_t len, char *buf, size_t size);

/* Completions */

/* A CQ with its own completion channel, for sleeping until work is done. */
struct ex_cq {
	struct ibv_comp_channel *chan;
	struct ibv_cq *cq;
	unsigned int unacked; /* notifications still to ibv_ack_cq_events() */
};

int ex_cq_create(struct ex_cq *c, struct ibv_context *verbs, int cqe);
void ex_cq_destroy(struct ex_cq *c);

/* ex_cq_wait() results other than a completion count. */
enum {
	EX_CQ_CM_EVENT = 0, /* the CM channel is readable: handle it first */
	EX_CQ_ERROR = -1, /* message printed; ETIMEDOUT after a timeout */
};

/*
 * Returns up to n completions, sleeping on the completion channel (and on
 * cm_fd, when it is not -1) for at most timeout_ms while there are none.
 * Returns the number of completions, EX_CQ_CM_EVENT when cm_fd became
 * readable first, or EX_CQ_ERROR.
 */
int ex_cq_wait(struct ex_cq *c, struct ibv_wc *wc, int n, int cm_fd,
	       int timeout_ms);

/*
 * Checks a completion's status, printing what failed (with the name of
 * the work request, which the caller knows) when it is not a success.
 */
int ex_wc_ok(const struct ibv_wc *wc, const char *what);

/* Verbs shorthands */

int ex_post_recv(struct ibv_qp *qp, struct ibv_mr *mr, void *buf, uint32_t len,
		 uint64_t wr_id);
int ex_post_send(struct ibv_qp *qp, struct ibv_mr *mr, void *buf, uint32_t len,
		 uint64_t wr_id);
int ex_post_ud_send(struct ibv_qp *qp, struct ibv_ah *ah, uint32_t qpn,
		    uint32_t qkey, struct ibv_mr *mr, void *buf, uint32_t len,
		    uint64_t wr_id);

/* Largest payload one datagram can carry on id's port (its active MTU). */
int ex_ud_max_payload(struct rdma_cm_id *id, uint32_t *max);

/* Time */

/* Monotonic microseconds, for timing steps. */
uint64_t ex_now_us(void);

#endif /* EXAMPLES_COMMON_H */
