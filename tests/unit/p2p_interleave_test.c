// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * An exhaustive interleaving checker of peer-to-peer connection formation
 * (rdma_cm_p2p(7), src/p2p*.c).
 *
 * This process is end A (192.0.2.1, a holding listener on port 7471), run
 * against the fake kernel; the test plays peer B with a model of B written
 * after the man page's STATE MACHINE, in two configurations: B lower
 * (192.0.2.0: B sends REQs, A adopts them) and B higher (192.0.2.2: A
 * sends, B adopts or refuses).  Each side makes NA / NB attempts.
 *
 * A schedule is an order of the actions enabled at each step: A's calls
 * (a connect on a fresh id, destroying an attempt's id), B's (a connect,
 * giving an attempt up, sending a refused REQ again, being killed and
 * started again with a new incarnation), the delivery of each message in
 * flight in either direction (REQ, REP, RTU, the refusals, the NOTICEs
 * of dead REQs and their answers, and the kernel's own reports), its
 * loss where the IB CM lets the library see one, and the expiry of each
 * of A's timers.  The explorer enumerates the choices depth first up to
 * a depth bound; each prefix is replayed from a fresh state in a
 * fork()ed child and then completed the fair way (every message
 * delivered, every connect made, timers last), and the outcome is
 * checked against what rdma_cm_p2p(7) promises (see finish()).
 *
 * Two things make a replay deterministic.  p2p's clock is frozen at the
 * checker's own time (cma_p2p_set_clock), which moves only when a chosen
 * timer expires.  And the library's service thread is parked inside a
 * timer of ours for the whole schedule, so that nothing fires on the wall
 * clock: the checker runs the expire function of a due timer itself, as
 * the thread would, and has the library read the served channel's
 * kernel events (cma_event_serve) and those of p2p's own verify channel
 * (cma_p2p_verify_serve_now) after each step, as the thread would
 * between the steps of the peer.  The channel is served, so its fd must
 * be readable exactly when rdma_get_cm_event has an event, which is
 * checked before every read.
 *
 * P2P_INTERLEAVE_DEPTH sets the depth bound, P2P_INTERLEAVE_FAULTS how many
 * losses and refusals a schedule may choose (P2P_INTERLEAVE_KILLS the
 * same for B's restarts), P2P_INTERLEAVE_JOBS how many schedules run at
 * once.  A violation is printed with its schedule and the choices that
 * make it: P2P_INTERLEAVE_REPLAY=lower:1,3,0 runs that one alone.
 *
 * Late copies (src/p2p/p2p_notice.c, p2p_stale.c).  Every REQ states
 * its sender's number for it, its QP and its sender's incarnation.  The
 * higher end holds or adopts every REQ at once, a late copy too; its CM
 * then holds a request from the sender's QP, and refuses that QP's next
 * REQ as a stale connection (reason 10, no data): A's CM (B lower) and
 * B's (B higher) refuse a REQ from a QP they still hold another request
 * or a connection from, disconnecting a connection.  The lower end, so
 * refused, tells the higher end's companion listener (a SIDR REQ, a
 * NOTICE) that every REQ from that QP up to the one refused is dead, and
 * sends its next REQ once the answer comes, or after its resend delay
 * when none does.  B lower: B's REQs come from a QP of B's attempt,
 * numbered by B's process; A's companion is made by its listen, and
 * B's NOTICE is a CONNECT_REQUEST on it, the NOTICE in its data; A
 * answers with a REJECT carrying the ANSWER, which is checked to come
 * only once no request it names is held and no adoption of one stands
 * (none of them is ever established: B's CM gave them up).  A refuses
 * as stale only what a NOTICE named, never holds or adopts it after,
 * and a connect whose adoption a NOTICE undid keeps its QP at RTS: the
 * next REQ from the same QP is answered with dictated PSNs, and the
 * receive posted before connecting is still there when it is
 * established (only an adoption from another QP may reset the QP).
 * B higher: A's REQs carry A's numbers; refused as stale, A sends its
 * NOTICE on its verify channel (a UDP id: its address and route resolve at
 * once, then the SIDR REQ is a message to B), checked to name A's QP and
 * exactly the REQ refused; B refuses the copies it holds of REQs named,
 * undoes an adoption of one, refuses one that comes later, and answers
 * (UNREACHABLE, status 2, the ANSWER in its data; status 1 while no B
 * process listens; lost: -ETIMEDOUT).  A NOTICE or its answer may be lost.
 * A connect of the lower end that ends unanswered (no REP came for its REQ:
 * its bound ran out, it was refused for good, its REQ or REP was lost, or
 * its id was destroyed while it waited) names every REQ it sent dead as it
 * ends, in a NOTICE of its own, as a late copy of one may still reach the
 * higher end: B lower, B's model sends one whenever an attempt ends so (not
 * when its process is killed: a dead process sends nothing), and A acts on
 * it as on any; B higher, A's is checked to name the last REQ that connect
 * sent, to come for every connect that ended unanswered and for no other
 * (never for one B answered), and B acts on it as on any, its answer
 * ignored by A.  Either end's CM may refuse a REQ unseen (as if the
 * listener were not up yet) while the sender's CM has sent a copy that
 * comes later; and B lower, A's refusal of B's REQ (by its library, or by
 * its CM for a stale connection) may reach B after B's CM sent a copy of
 * it, which reaches A's CM later as a fresh REQ (A's kernel id for the
 * first is gone by then).  Once a REJ or a timeout ends one of A's REQs in
 * A's CM, its kernel id refuses the INIT attributes, as the kernel's does.
 * The REQs from one QP keep their order, copies included; a NOTICE may
 * overtake a copy of a REQ it names (refused as it comes), and other
 * messages may overtake each other across connections, which the wire never
 * does; but whatever was sent before B's process died has arrived when its
 * next one starts (a restart takes far longer than the wire).  The REP that
 * answers an adopted late copy reaches a CM that is done with that REQ and
 * drops it; the adopting CM gives up after its retries, about a minute
 * later: a message the completion delivers last, after the pairs are
 * checked, so that such an adoption still waits then, with a live attempt
 * of the other side's, if nothing undid it.  The completion delivers
 * NOTICEs first, and a refusal of B's REQ after B's CM copied it, so that a
 * copy comes after the NOTICE in every completion that has one.
 *
 * What the model leaves out: copies of a REQ whose kernel id lives (the
 * CM answers them), copies of A's REQs that B's library or B's CM as a
 * stale connection refused (B higher: only B's CM's unseen refusal makes
 * one), A's library reading an event late (the service thread reads
 * after each step), an adoption under way when a NOTICE comes (each
 * step's is over before the next), lost RTUs, REJs and DREQs (the CM
 * sends them again), a REJ that overtakes its REQ, B's REQs in the B
 * higher case (a peer breaking the rule), a NOTICE that cannot be sent
 * (no route, no id) or an answer that does not parse, a higher end
 * without a companion, the cap on the floors a higher end keeps, REQ
 * numbers wrapping, explicit tags, iWARP, AF_IB, the hold and the held
 * request caps, the window of REQs out (A makes 3), A's own kernel
 * failing a command (no fresh kernel id for an undone adoption, say).
 */
#include <config.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cm/cma.h"
#include "p2p/p2p_hooks.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "p2p/p2p_table.h"
#include "p2p/p2p_wire.h"
#include "cm/test_hooks.h"
#include "unit.h"
#include "p2p_peer.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#ifdef __SANITIZE_THREAD__
/*
 * ThreadSanitizer sleeps a second before a process exits, to catch races
 * at exit; each schedule is a process, and its races are reported as they
 * happen (run-all.sh halts on the first).
 */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "atexit_sleep_ms=0";
}
#endif

#define NA 3 /* A's connects in a schedule */
#define NB 3 /* B's connects in a schedule */
/* The bounds: the library's (p2p_connect.c), with a hold of 10 s. */
#define HOLD_MS 10000
#define ANSWER_MS (2 * HOLD_MS + CMA_P2P_PROBE_MS)
#define REFUSED_MS HOLD_MS
#define RETRY_MS 200
#define RETRY_MAX_MS 3200 /* A's resends back off up to this (p2p_connect.c) */
/*
 * The longest a connect may wait: its REQ unanswered for a bound,
 * refused for now just then, sent again until the refused bound, the
 * last one unanswered for another bound, then the last resend's timer.
 */
#define MAX_END_MS (2 * ANSWER_MS + REFUSED_MS + 2 * RETRY_MAX_MS + 100)
/* The frozen clock never reads 0 (which tells "not set" in p2p.c). */
#define CLOCK_BASE_NS 1000000000000ull
#define MAX_FLIGHT 96
#define MAX_KIDS 2048
#define MAX_DEPTH 48
#define MAX_ACTS 64
#define MAX_HELD_B 16
/* B's process @n's incarnation, as the header's 40 bits state it. */
#define B_INC(n) (0xb0b0000000ull + (uint64_t)(n) + 1)
/* B lower: the QP its attempt @i sends its REQs from. */
#define B_QPN(i) (0x100u + (uint32_t)(i))
/* IB CM REJ reasons the kernel reports as the event's status. */
#define IB_REJ_TIMEOUT 1
#define IB_REJ_CONSUMER 28
/* SIDR reply statuses the kernel reports as UNREACHABLE's status. */
#define IB_SIDR_UNSUPPORTED 1 /* nobody listens on that service ID */
#define IB_SIDR_REJECT 2 /* refused, with the answer in its data */
/* The connection a NOTICE and its answer are part of. */
#define CHAN_VERIFY 0x30000u

enum cfg { B_LOWER, B_HIGHER };

/* Where a late copy of a REQ comes from. */
enum copy_kind {
	COPY_NONE,
	COPY_UNSEEN, /* its first copy was refused by the other end's CM */
	/*
	 * B lower: A refused it (A's library, or A's CM for a stale
	 * connection) after B's CM had sent it again.
	 */
	COPY_REFUSED,
};

/* --- the model's state -------------------------------------------------- */

enum msg_type {
	M_REQ,
	M_REP,
	M_RTU,
	M_REJ, /* a refusal: @status, @kind the p2p header's (0: none) */
	M_WITHDRAW, /* A gave up its REQ (its kernel id destroyed) */
	M_DREQ, /* A's end of a formed or forming connection went away */
	/*
	 * An event a kernel reports on its own: A's (a CM timeout), or, to
	 * B, B's CM giving up the REP it sent for @kid.
	 */
	M_KEV,
	/*
	 * The lower end tells the higher end that its REQs from a QP up to
	 * a number are dead (a SIDR REQ to the companion listener), and the
	 * answer that it was acted on (a SIDR REP that refuses, the answer
	 * in its data).
	 */
	M_NOTICE,
	M_ANSWER,
};

static const char *const msg_name[] = {"REQ",	"REP",	    "RTU",
				       "REJ",	"WITHDRAW", "DREQ",
				       "event", "NOTICE",   "ANSWER"};

struct msg {
	uint8_t type;
	bool to_b;
	bool dead; /* a REQ its sender gave up on the way: arrives dead */
	/*
	 * A REQ its sender's CM sent again before the refusal of its first
	 * copy came back (a late copy; enum copy_kind: who refused it).
	 */
	uint8_t copy;
	/*
	 * Comes after everything the completion may still do (a CM's
	 * retries of a REP nobody answers: about a minute).
	 */
	bool slow;
	uint8_t att; /* B's attempt it is of; an A REQ's: A's attempt */
	/*
	 * Which REQ of the attempt: B's REQs; A's (B higher); M_NOTICE,
	 * M_ANSWER: the last one named dead.
	 */
	uint8_t gen;
	uint8_t kind; /* M_REJ */
	bool app_data; /* M_REJ: an application's refusal, with its data */
	uint8_t inc; /* the B process that sent it */
	/*
	 * M_NOTICE: sent as its sender's connect ended unanswered (no REQ
	 * of it refused as stale), naming every REQ that connect sent.
	 */
	bool end;
	uint32_t kid; /* A's kernel id it is about (0: a REQ not there yet) */
	uint32_t chan; /* the connection: its messages keep their order */
	uint32_t ev; /* M_KEV */
	int status; /* M_REJ, M_KEV; M_ANSWER: the SIDR status */
	/*
	 * M_REQ: its number, its QP and its sender's incarnation as its
	 * header states them; M_NOTICE, M_ANSWER: those of the REQs named
	 * dead (the number the highest).
	 */
	uint32_t number, qpn;
	uint64_t incarnation;
	uint32_t seq;
};

/* What the checker knows of one of A's kernel ids. */
enum kid_role {
	K_NONE,
	K_BREQ,
	K_AREQ,
	K_NOTICE, /* B higher: A's NOTICE to B */
	K_COMP, /* A's companion listener */
	K_CREQ, /* B lower: a NOTICE of B's at A's companion */
};

enum kid_state {
	KS_NONE,
	KS_HELD,
	KS_SENT,
	KS_ACCEPTED,
	KS_ESTAB,
	KS_GONE,
};

struct kid_info {
	uint8_t role;
	uint8_t st;
	/* K_BREQ, K_CREQ: B's attempt; K_AREQ, K_NOTICE: A's */
	uint8_t att;
	/* Which REQ of the attempt; K_NOTICE, K_CREQ: the last named dead */
	uint8_t gen;
	uint8_t inc; /* K_BREQ, K_CREQ: B's process */
	int8_t a_att; /* K_BREQ: the A attempt that accepted it */
	bool dead; /* fake_ucma_kill_kid */
	uint8_t copy; /* K_BREQ: a late copy of B's REQ (enum copy_kind) */
	bool term; /* a final event came: the kernel reports no other */
	bool disc; /* DISCONNECTED came or is on its way: only once */
	bool end; /* K_NOTICE: sent as its connect ended unanswered */
	uint32_t number; /* K_BREQ, K_AREQ: its REQ's number */
};

enum a_state { AS_IDLE, AS_WAIT, AS_ENDED };

struct a_att {
	struct rdma_cm_id *id; /* NULL once destroyed */
	uint8_t st;
	bool destroyed; /* by the application, before its end */
	bool established, disconnected;
	int end_ev, end_status;
	int b_partner; /* the B attempt its ESTABLISHED came from */
	int64_t start;
	int64_t refused_at; /* when its REQ was last refused (for now) */
	/*
	 * B higher: when its last NOTICE ended (-1: none since the last
	 * refusal), and whether B answered it; the kernel id of its REQ B's
	 * CM refused as stale, whose NOTICE is due (0: none).
	 */
	int64_t notice_end;
	bool heard;
	uint32_t notice_due;
	int epoch; /* how many of B's processes were gone when it began */
	int reqs; /* B higher: REQs it sent */
	/*
	 * B higher: its QP's number (the NOTICE of a connect whose id is
	 * gone still names it) and the number of the last REQ it sent.
	 * Whether B's REP for its current REQ came (answered: it ends with
	 * no NOTICE), whether it ended unanswered having sent a REQ (its
	 * REQs are then named dead: end_due), and whether A did so.
	 */
	uint32_t qpn, last_number;
	bool answered, end_due, end_sent;
	bool end_unheard; /* that NOTICE was lost, or no B process heard it */
	/*
	 * B lower: the B attempt whose QP its QP was last at RTS for (-1:
	 * none), whether an adoption from another QP reset it since, and
	 * whether a NOTICE undid an adoption of its.
	 */
	int qp_att;
	bool reset, unadopted;
};

enum b_state {
	BS_NONE,
	BS_PENDING, /* B lower: its REQ is out */
	BS_RESEND, /* B lower: refused for now, sent again in 200 ms */
	BS_NOTICE, /* B lower: refused as stale, its NOTICE out */
	BS_WAIT, /* B higher: waits for A's REQ */
	BS_REPSENT, /* B higher: adopted A's REQ, waits for the RTU */
	BS_ESTAB,
	BS_DONE,
};

static const char *const b_state_name[] = {"none",	  "pending", "resend",
					   "notice",	  "wait",    "rep-sent",
					   "established", "done"};

struct b_att {
	uint8_t st;
	uint8_t gen;
	uint8_t inc;
	bool formed; /* it was established */
	const char *end;
	uint32_t kid; /* lower: its REQ's kernel id at A; higher: A's REQ */
	int a_partner; /* the A attempt it paired with */
	int64_t due; /* its bound */
	int64_t refused_since, refused_at;
	uint32_t number; /* lower: its REQ's number */
};

/* One action of a schedule. */
enum act_kind {
	ACT_A_CONNECT,
	ACT_A_DESTROY,
	ACT_B_CONNECT,
	ACT_B_GIVEUP,
	ACT_B_BOUND, /* completion only: B's bound ran out */
	ACT_B_RESEND,
	ACT_B_KILL,
	ACT_B_START,
	ACT_DELIVER,
	ACT_FIRE_CONN,
	ACT_FIRE_LIS,
};

/*
 * How a message is delivered: as sent, lost, or (a REQ to B) refused for
 * now by B's library, refused for good by its application, or refused by
 * B's CM as a stale connection (reason 10) for a cause the model does not
 * know of (its own refusals as stale follow from what B holds:
 * b_cm_stale).
 */
enum variant {
	V_OK,
	V_LOSE,
	V_REFUSE_RETRY,
	V_REFUSE_OTHER,
	V_REFUSE_STALE,
	/*
	 * A REQ reaches the other end's CM as if its listener were not up
	 * yet: refused there (reason 8) before its library sees it, while
	 * the sender's CM, which had no answer in time, has sent a copy,
	 * which reaches the other end later (before the sender's next REQ
	 * from that QP: the CM's copies of a REQ all leave before it).
	 */
	V_REFUSE_UNSEEN,
	/*
	 * An order, not a fault: B lower, A's refusal of B's REQ (by its
	 * library, or by its CM for a stale connection) reaches B after B's
	 * CM sent a copy of that REQ (the refusal took longer than the CM's
	 * response timeout), which reaches A's CM later, as a fresh REQ:
	 * A's kernel id for the original is gone.
	 */
	V_COPIED,
};

struct act {
	uint8_t kind, arg, var;
};

/*
 * What the schedules reached, so that a change of the model or of the
 * library that makes a path unreachable does not pass unnoticed.
 */
enum coverage {
	COV_ESTABLISHED,
	COV_ADOPT_HELD, /* a connect adopted a held request */
	COV_ADOPT_ARRIVING, /* a waiting connect adopted an arriving one */
	COV_DEAD_PASSED, /* an adoption passed a dead request over */
	COV_DEAD_DROPPED, /* a hold check dropped a dead request */
	COV_RESEND, /* a REQ refused for now went out again */
	COV_WITHDRAW, /* a REQ withdrawn while B had it */
	COV_BOUND, /* a connect's bound ran out: UNREACHABLE, -ETIMEDOUT */
	COV_REFUSED_END, /* refused for now until its bound: REJECTED */
	COV_PEER_REJECTED, /* ended by B's REJ or its CM's report */
	COV_RESET, /* failed because B restarted (-ECONNRESET) */
	COV_DISCONNECTED,
	COV_REFORMED, /* formed with B's process after a restart */
	COV_NOTICE, /* the lower end told the higher end of dead REQs */
	COV_HEARD, /* the higher end answered a NOTICE */
	COV_UNHEARD, /* a NOTICE had no answer (lost, or nobody listened) */
	COV_COPY_TAKEN, /* a late copy was held or adopted */
	COV_LATE_COPY, /* a late copy was refused as stale */
	COV_REFUSED_COPY, /* a copy of a REQ A refused, refused stale */
	COV_FLOOR, /* a REQ a NOTICE named dead was refused as it came */
	COV_UNADOPTED, /* a NOTICE undid an adoption */
	/*
	 * A connect whose adoption a NOTICE undid was established, its QP
	 * at RTS all along, with the receive posted before connecting.
	 */
	COV_UNADOPTED_KEPT,
	/*
	 * A connect that ended unanswered named its REQs dead (an end
	 * NOTICE), which undid an adoption of one, or refused a held one.
	 */
	COV_END_NOTICE,
	COV_END_UNADOPTED,
	COV_END_REFUSED,
	COV_COUNT
};

static const char *const cov_name[] = {"established",
				       "adopt-held",
				       "adopt-arriving",
				       "dead-passed",
				       "dead-dropped",
				       "resend",
				       "withdraw",
				       "bound",
				       "refused-bound",
				       "peer-rejected",
				       "restart",
				       "disconnected",
				       "formed-after-restart",
				       "noticed",
				       "notice-answered",
				       "notice-unheard",
				       "copy-taken",
				       "stale-copy-refused",
				       "refused-copy-refused",
				       "dead-on-arrival",
				       "unadopted",
				       "unadopted-kept-receive",
				       "end-noticed",
				       "end-notice-unadopted",
				       "end-notice-refused"};

static struct {
	enum cfg cfg;
	int64_t now; /* the checker's clock, ms */
	struct a_att a[NA];
	int a_made;
	struct b_att b[NB];
	int b_made;
	bool b_up;
	uint8_t b_inc;
	int kills, faults;
	/*
	 * The last message sent before B's process was last killed: every
	 * one up to it arrives before B's next process starts (b_may_start).
	 */
	uint32_t kill_seq;
	uint32_t b_number; /* B lower: the last REQ number B's process gave */
	struct {
		uint32_t kid;
		bool dead, copy;
	} b_held[MAX_HELD_B];
	int nb_held;
	/*
	 * B higher: the last of the REQs from A's connect's QP a NOTICE
	 * named dead, as B's process keeps it (0: none).
	 */
	uint8_t b_floor[NA];
	/*
	 * B lower: the last of B's attempt's REQs a NOTICE that reached A
	 * named dead (0: none); an attempt is of one process.
	 */
	uint8_t a_floor[NB];
	/* B lower: B's attempt's end NOTICE was lost on the way to A. */
	bool end_lost[NB];
	uint32_t a_number; /* B higher: the last number A's REQs stated */
	int vfd; /* the kernel fd of p2p's verify channel (0: none yet) */
	uint32_t comp_kid; /* A's companion listener */
	uint8_t cur_msg; /* the type of the message being delivered */
	bool cur_end; /* it is an end NOTICE (struct msg's end) */
	struct msg fl[MAX_FLIGHT];
	int nfl;
	uint32_t seq;
	struct kid_info kid[MAX_KIDS];
	int kfd;
	int cmds_seen;
	struct cma_p2p_listener *lis;
	int64_t lis_armed_at;
	bool lis_was_armed;
	bool firing; /* a timer of A's is being fired: its ends are bounded */
	int fired; /* the connect whose timer that is (-1: the listener's) */
	uint8_t cur_act; /* the kind of the action being applied */
	/*
	 * The newest of B's processes A heard from, and whether the message
	 * being delivered comes from an older one (a late one, still on the
	 * wire when its process died).
	 */
	int heard_inc;
	bool stale;
	uint32_t cov;
	char trace[6144];
	size_t tlen;
} w;

/* Limits read by the parent, inherited by each schedule's process. */
static int max_faults = 1, max_kills = 1;
/* P2P_INTERLEAVE_REPLAY: one schedule, its trace reported in any case. */
static bool replaying;

/* --- reporting from a schedule's process ------------------------------- */

struct report {
	int ok;
	int nact;
	uint64_t hash;
	uint64_t kind; /* a violation: which check (its message's format) */
	uint32_t cov;
	char msg[8192];
};

static int report_fd = -1;
static struct report rep;

static void write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(3);
		p += n;
		len -= (size_t)n;
	}
}

static void __attribute__((noreturn, format(printf, 1, 2)))
violation(const char *fmt, ...)
{
	const char *f;
	va_list ap;
	int n;

	for (rep.kind = 14695981039346656037ull, f = fmt; *f; f++)
		rep.kind = (rep.kind ^ (uint8_t)*f) * 1099511628211ull;
	va_start(ap, fmt);
	n = vsnprintf(rep.msg, sizeof(rep.msg), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(rep.msg))
		snprintf(rep.msg + n, sizeof(rep.msg) - (size_t)n,
			 "\n  at V=%lld ms, schedule:%s", (long long)w.now,
			 w.trace);
	rep.ok = 0;
	write_all(report_fd, &rep, sizeof(rep));
	_exit(1);
}

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			violation(__VA_ARGS__);                                \
	} while (0)

static void cover(enum coverage c)
{
	w.cov |= 1u << c;
}

static void __attribute__((format(printf, 1, 2))) note(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (w.tlen >= sizeof(w.trace) - 64)
		return;
	va_start(ap, fmt);
	n = vsnprintf(w.trace + w.tlen, sizeof(w.trace) - w.tlen, fmt, ap);
	va_end(ap);
	if (n > 0)
		w.tlen += (size_t)n < sizeof(w.trace) - w.tlen
				  ? (size_t)n
				  : sizeof(w.trace) - w.tlen - 1;
}

/* --- A: the library under test ------------------------------------------ */

static const char *peer_addr(void)
{
	return w.cfg == B_LOWER ? "192.0.2.0" : "192.0.2.2";
}

static void set_clock(void)
{
	cma_p2p_set_clock(CLOCK_BASE_NS + (uint64_t)w.now * 1000000ull);
}

static struct kid_info *kinfo(uint32_t kid)
{
	CHECK(kid && kid < MAX_KIDS, "kernel id %u out of the checker's range",
	      kid);
	return &w.kid[kid];
}

static struct cma_p2p_conn *conn_of(int j)
{
	return w.a[j].id ? cma_p2p_conn_of(cma_id_priv(w.a[j].id)) : NULL;
}

static bool timer_armed(const struct cma_timer *t)
{
	return __atomic_load_n(&t->armed, __ATOMIC_RELAXED);
}

/* The A attempt whose id is @uid (a kernel id's cookie), or -1. */
static int a_of_uid(uint64_t uid)
{
	int j;

	for (j = 0; j < NA; j++)
		if (w.a[j].id &&
		    (uint64_t)(uintptr_t)cma_id_priv(w.a[j].id) == uid)
			return j;
	return -1;
}

static bool a_waits(int j)
{
	struct cma_p2p_conn *c = conn_of(j);

	return w.a[j].st == AS_WAIT && c && c->registered &&
	       (c->state == CMA_P2P_PENDING || c->state == CMA_P2P_WAIT_PEER ||
		c->state == CMA_P2P_RESEND);
}

static void a_event(struct rdma_cm_event *ev);

/*
 * The application's reads: as long as rdma_get_cm_event has an event,
 * and the fd must say so beforehand every time (the channel is served).
 */
static void a_drain(void)
{
	struct rdma_cm_event *ev;
	bool readable;
	int ret;

	for (;;) {
		readable = unit_readable(ch->fd);
		ret = rdma_get_cm_event(ch, &ev);
		CHECK(readable == !ret,
		      "the channel's fd is %sreadable but rdma_get_cm_event %s",
		      readable ? "" : "not ",
		      ret ? "has no event" : "returned one");
		if (ret) {
			CHECK(errno == EAGAIN, "rdma_get_cm_event: %s",
			      strerror(errno));
			return;
		}
		a_event(ev);
		rdma_ack_cm_event(ev);
	}
}

/* Events on p2p's verify channel that its handler has not read. */
static int verify_queued(void)
{
	return w.vfd ? fake_ucma_queued(w.vfd) : 0;
}

/* Events on the served channel that the library is to read now. */
static int served_queued(void)
{
	return fake_ucma_queued(w.kfd);
}

/*
 * What the service thread would do: read and handle the kernel's events,
 * on the served channel and on p2p's own verify channel.
 */
static void serve(void)
{
	int guard;

	for (guard = 0; served_queued() > 0 || verify_queued() > 0; guard++) {
		CHECK(guard < 1000, "the served channels' events stay unread");
		if (served_queued() > 0)
			cma_event_serve(ch);
		cma_p2p_verify_serve_now();
	}
}

static void scan_cmds(void);
static void check_invariants(void);
static void prune_flight(void);
static bool conn_chores_due(int j);

/*
 * After each step: everything the step caused locally, read and sent.
 * A conn's timer armed for its chores (kernel ids to destroy, a QP to
 * fail, a restarted peer to act on) runs at once, as the service thread
 * runs it "soon": what it sends still travels, and the wire's delays are
 * the schedule's choices already.
 */
static void settle(void)
{
	struct cma_timer *t;
	int guard, j;

	for (guard = 0;; guard++) {
		CHECK(guard < 100, "the library does not come to rest");
		serve();
		scan_cmds();
		a_drain();
		scan_cmds();
		if (served_queued() || verify_queued())
			continue;
		for (j = 0; j < NA && !conn_chores_due(j); j++)
			;
		if (j == NA)
			break;
		t = &conn_of(j)->timer;
		cma_timer_stop(t);
		t->expire(t);
	}
	prune_flight();
	if (timer_armed(&w.lis->timer) && !w.lis_was_armed)
		w.lis_armed_at = w.now;
	w.lis_was_armed = timer_armed(&w.lis->timer);
	check_invariants();
}

/* During set-up: the one event the application waits for. */
static void setup_event(enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev;

	serve();
	CHECK(unit_readable(ch->fd), "no %s", rdma_event_str(type));
	CHECK(!rdma_get_cm_event(ch, &ev), "rdma_get_cm_event: %s",
	      strerror(errno));
	CHECK(ev->event == type, "got %s, want %s", rdma_event_str(ev->event),
	      rdma_event_str(type));
	rdma_ack_cm_event(ev);
}

/* A fresh id towards B, resolved, with a QP: as connecting_id() makes. */
static struct rdma_cm_id *a_new_id(void)
{
	struct sockaddr_in src = unit_ipv4("192.0.2.1", 0),
			   dst = unit_ipv4(peer_addr(), P2P_PORT);
	struct ibv_qp_init_attr attr = unit_qp_attr(IBV_QPT_RC);
	struct ibv_recv_wr *bad;
	struct rdma_cm_id *id;

	CHECK(!rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), "create_id: %s",
	      strerror(errno));
	CHECK(!rdma_resolve_addr(id, (struct sockaddr *)&src,
				 (struct sockaddr *)&dst, 2000),
	      "resolve_addr: %s", strerror(errno));
	setup_event(RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(!rdma_resolve_route(id, 2000), "resolve_route: %s",
	      strerror(errno));
	setup_event(RDMA_CM_EVENT_ROUTE_RESOLVED);
	CHECK(!rdma_create_qp(id, NULL, &attr), "create_qp: %s",
	      strerror(errno));
	/* A receive posted before connecting, as programs do. */
	CHECK(!ibv_post_recv(id->qp, &(struct ibv_recv_wr){.wr_id = 1}, &bad),
	      "post_recv");
	return id;
}

/*
 * The service thread parks here for the rest of the schedule's process:
 * from then on no timer fires and no kernel event is read but by the
 * checker.  It holds no library lock meanwhile (timer.c calls expire()
 * with none but its fork lock, which only fork() takes).
 */
static int park_fds[2], release_fds[2];
static struct cma_timer park_timer;

static void park(struct cma_timer *timer)
{
	char c = 0;

	(void)timer;
	if (write(park_fds[1], &c, 1) != 1)
		abort();
	/* Nothing is ever written: the process ends with the thread here. */
	while (read(release_fds[0], &c, 1) < 0 && errno == EINTR)
		;
}

static void park_service_thread(void)
{
	char c;

	CHECK(!pipe(park_fds) && !pipe(release_fds), "pipe: %s",
	      strerror(errno));
	park_timer.expire = park;
	cma_timer_start(ch, &park_timer, 0);
	CHECK(read(park_fds[0], &c, 1) == 1, "the service thread never ran");
}

static void sent_listen(const struct fake_cmd *c);

static void world_setup(void)
{
	struct sockaddr_in me = unit_ipv4("192.0.2.1", P2P_PORT);
	int on = 1, flags, j;

	fake_ucma_install();
	fake_verbs_install(true);
	/* Resolutions are local: the kernel answers them at once. */
	unit_kernel_resolves(0);
	set_clock();
	ch = rdma_create_event_channel();
	CHECK(ch, "rdma_create_event_channel: %s", strerror(errno));
	/* Parked before the listen, whose wait for the thread it then ends. */
	park_service_thread();
	CHECK(!rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP),
	      "create_id: %s", strerror(errno));
	/* A p2p listener, and a blocking fd: the channel is served. */
	CHECK(!rdma_set_option(listener, RDMA_OPTION_ID,
			       RDMA_OPTION_ID_PEER2PEER, &on, sizeof(on)),
	      "set_option: %s", strerror(errno));
	CHECK(!rdma_bind_addr(listener, (struct sockaddr *)&me), "bind: %s",
	      strerror(errno));
	CHECK(!rdma_listen(listener, 8), "listen: %s", strerror(errno));
	CHECK(cma_channel_served(ch), "the listener's channel is not served");
	/* Non-blocking from now on, so that a read that finds none returns. */
	flags = fcntl(ch->fd, F_GETFL);
	CHECK(flags >= 0 && !fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK),
	      "fcntl: %s", strerror(errno));
	w.kfd = cma_channel_kernel_fd(ch);
	for (j = 0; j < NA; j++) {
		w.a[j].id = a_new_id();
		w.a[j].qpn = w.a[j].id->qp->qp_num;
		w.a[j].b_partner = -1;
		w.a[j].refused_at = -1;
		w.a[j].notice_end = -1;
		w.a[j].qp_att = -1;
	}
	cma_p2p_lock();
	w.lis = cma_p2p_find_listener(cma_id_priv(listener));
	cma_p2p_unlock();
	CHECK(w.lis, "no p2p listener");
	/* A companion made by the listen: where NOTICEs come. */
	for (j = 0; j < fake_ucma_ncmds(); j++)
		if (fake_ucma_cmd(j)->cmd == RDMA_USER_CM_CMD_LISTEN)
			sent_listen(fake_ucma_cmd(j));
	w.cmds_seen = fake_ucma_ncmds();
	for (j = 0; j < NB; j++) {
		w.b[j].a_partner = -1;
		w.b[j].refused_since = -1;
	}
	w.b_up = true;
}

/* --- messages ------------------------------------------------------------ */

static struct msg *flight_add(uint8_t type, bool to_b, uint32_t chan)
{
	struct msg *m;

	CHECK(w.nfl < MAX_FLIGHT, "too many messages in flight");
	m = &w.fl[w.nfl++];
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->to_b = to_b;
	m->chan = chan;
	m->seq = ++w.seq;
	return m;
}

static void flight_del(int i)
{
	memmove(&w.fl[i], &w.fl[i + 1],
		sizeof(w.fl[0]) * (size_t)(w.nfl - i - 1));
	w.nfl--;
}

/* B lower: the connection of B's attempt @i, its REQ @gen. */
static uint32_t chan_b(int i, int gen)
{
	return 0x10000u + (uint32_t)i * 256 + (uint32_t)gen;
}

/* The connection a kernel id of A's is part of. */
static uint32_t chan_of_kid(uint32_t kid)
{
	struct kid_info *k = kinfo(kid);

	if (k->role == K_BREQ)
		return chan_b(k->att, k->gen);
	return kid;
}

/* An event A's kernel reports on @kid once the wire has had its say. */
static void kev(uint32_t kid, uint32_t ev, int status)
{
	struct msg *m = flight_add(M_KEV, false, chan_of_kid(kid));

	m->kid = kid;
	m->ev = ev;
	m->status = status;
}

/* A REQ, REP or NOTICE of B's: it states the incarnation of B's process. */
static bool from_b_process(const struct msg *m)
{
	return !m->to_b &&
	       (m->type == M_REQ || m->type == M_REP || m->type == M_NOTICE);
}

/* Sent before B's process was last killed (a kernel's report is not sent). */
static bool before_kill(const struct msg *m)
{
	return m->type != M_KEV && m->seq <= w.kill_seq;
}

/*
 * B's process may start again once every message sent before the old one
 * died has arrived (to the old one's kernel, which refused what came for
 * it, or at A): a restart takes far longer than a message spends on the
 * wire, however messages overtake each other there.  Without this, a copy
 * of one of A's REQs overtaken by the NOTICE naming it would reach B's
 * next process, which never heard that NOTICE, and one of B's old REQs
 * would reach A after B's new process had begun.
 */
static bool b_may_start(void)
{
	int i;

	for (i = 0; i < w.nfl; i++)
		if (before_kill(&w.fl[i]))
			return false;
	return true;
}

/*
 * A message is deliverable when it is the oldest of its connection; and
 * one of B's processes is not heard before the one it replaced, whose
 * messages were on the wire for less time than a restart takes (the
 * kernel stops sending them when the process dies).  The REQs from one
 * QP arrive in order, copies included (the CM sends all copies of a REQ
 * before its library can send the next).  The model lets other messages
 * overtake each other across connections, which the wire never does:
 * more schedules, none lost.  So a NOTICE may come before a copy of a REQ
 * it names, which its sender's CM sent before it (as when the higher
 * end's library reads its companion's channel first).
 */
static bool deliverable(int i)
{
	const struct msg *m = &w.fl[i];
	int k;

	for (k = 0; k < w.nfl; k++) {
		if (k < i && w.fl[k].to_b == m->to_b && w.fl[k].chan == m->chan)
			return false;
		/* The REQs from one QP (one attempt) arrive in order. */
		if (k < i && m->type == M_REQ && w.fl[k].type == M_REQ &&
		    w.fl[k].to_b == m->to_b && w.fl[k].att == m->att)
			return false;
		if (from_b_process(m) && from_b_process(&w.fl[k]) &&
		    w.fl[k].inc < m->inc)
			return false;
	}
	return true;
}

/* The REQ in flight on @chan towards @to_b, if any. */
static struct msg *req_in_flight(bool to_b, uint32_t chan)
{
	int i;

	for (i = 0; i < w.nfl; i++)
		if (w.fl[i].type == M_REQ && w.fl[i].to_b == to_b &&
		    w.fl[i].chan == chan)
			return &w.fl[i];
	return NULL;
}

static bool rep_in_flight(uint32_t chan)
{
	int i;

	for (i = 0; i < w.nfl; i++)
		if (w.fl[i].type == M_REP && w.fl[i].chan == chan)
			return true;
	return false;
}

static void drop_in_flight(uint8_t type, bool to_b, uint32_t chan)
{
	int i;

	for (i = 0; i < w.nfl; i++) {
		if (w.fl[i].type == type && w.fl[i].to_b == to_b &&
		    w.fl[i].chan == chan) {
			flight_del(i);
			return;
		}
	}
}

/* B higher: B holds A's REQ on @kid, or adopted it and waits for the RTU. */
static bool b_has_req(uint32_t kid)
{
	int i;

	for (i = 0; i < w.nb_held; i++)
		if (w.b_held[i].kid == kid && !w.b_held[i].dead)
			return true;
	for (i = 0; i < NB; i++)
		if (w.b[i].st == BS_REPSENT && w.b[i].kid == kid)
			return true;
	return false;
}

static bool b_current(int i);

/* B higher: B's attempt that adopted A's REQ on @kid and waits, or -1. */
static int b_adopter(uint32_t kid)
{
	int i;

	for (i = 0; i < NB; i++)
		if (w.b[i].st == BS_REPSENT && w.b[i].kid == kid)
			return i;
	return -1;
}

/*
 * Whether @m can still change anything where it arrives.  Those that
 * cannot (for an attempt B gave up, a REQ A withdrew on the way to B, an
 * event for a kernel id the kernel reports nothing more on) are taken
 * off the wire: delivering them is no choice.
 */
static bool msg_matters(const struct msg *m)
{
	const struct kid_info *k = m->kid ? &w.kid[m->kid] : NULL;
	int i;

	/*
	 * A NOTICE is acted on wherever it comes, and every one is
	 * answered or times out at its sender.
	 */
	if (m->type == M_NOTICE || (m->type == M_ANSWER && !m->to_b))
		return true;
	if (m->type == M_ANSWER)
		return b_current(m->att) && w.b[m->att].st == BS_NOTICE &&
		       w.b[m->att].gen == m->gen;
	if (m->to_b && w.cfg == B_LOWER)
		return (b_current(m->att) && w.b[m->att].gen == m->gen) ||
		       (m->type == M_REP && !k->term && k->st != KS_GONE);
	if (m->to_b) {
		switch (m->type) {
		case M_REQ:
			return !m->dead;
		case M_WITHDRAW:
			return b_has_req(m->kid);
		case M_KEV:
			return b_adopter(m->kid) >= 0;
		case M_RTU:
		case M_DREQ:
			for (i = 0; i < NB; i++)
				if (b_current(i) && w.b[i].kid == m->kid &&
				    (w.b[i].st == BS_REPSENT ||
				     w.b[i].st == BS_ESTAB))
					return true;
			return false;
		}
		return true;
	}
	switch (m->type) {
	case M_REQ:
	case M_REP: /* to a kernel id A gave up, B hears of it */
		return true;
	case M_KEV:
		if (m->ev == RDMA_CM_EVENT_DISCONNECTED)
			return k->st == KS_ESTAB;
		return !k->term && k->st != KS_GONE;
	}
	return !k->term && k->st != KS_GONE;
}

static void prune_flight(void)
{
	int i;

	for (i = 0; i < w.nfl;) {
		if (msg_matters(&w.fl[i]))
			i++;
		else
			flight_del(i);
	}
}

/* --- what A sent: its kernel commands, read from the fake's log --------- */

static bool cmd_hdr(const struct fake_cmd *c, struct cma_p2p_hdr *hdr)
{
	const uint8_t *data;
	size_t len;

	if (c->cmd == RDMA_USER_CM_CMD_CONNECT) {
		const struct rdma_ucm_connect *k = (const void *)c->body;

		data = k->conn_param.private_data;
		len = k->conn_param.private_data_len;
	} else if (c->cmd == RDMA_USER_CM_CMD_ACCEPT) {
		const struct rdma_ucm_accept *k = (const void *)c->body;

		data = k->conn_param.private_data;
		len = k->conn_param.private_data_len;
	} else {
		const struct rdma_ucm_reject *k = (const void *)c->body;

		data = k->private_data;
		len = k->private_data_len;
	}
	return cma_p2p_hdr_parse(data, len, hdr) == CMA_P2P_OK;
}

/* A's REQ on kernel id @kid (B higher: A is the lower end). */
static void sent_req(const struct fake_cmd *c)
{
	struct fake_kid *fk = fake_ucma_kid(c->handle);
	struct cma_p2p_hdr hdr;
	struct kid_info *k = kinfo(c->handle);
	struct msg *m;
	int j = fk ? a_of_uid(fk->uid) : -1;

	CHECK(w.cfg == B_HIGHER, "A, the higher end, sent a REQ on %u",
	      c->handle);
	CHECK(j >= 0, "a REQ on kernel id %u of no connect", c->handle);
	CHECK(cmd_hdr(c, &hdr) && hdr.kind == CMA_P2P_REQ && !hdr.tag &&
		      !hdr.flags && hdr.port == P2P_PORT,
	      "A's REQ has a wrong header");
	/* Each REQ a number of its own, so that a NOTICE may name it. */
	CHECK(hdr.number > w.a_number,
	      "A's REQ on kernel id %u states number %u after %u", c->handle,
	      hdr.number, w.a_number);
	CHECK(hdr.incarnation ==
		      (cma_p2p_incarnation() & CMA_P2P_INCARNATION_MASK),
	      "A's REQ states incarnation %llx, not its own",
	      (unsigned long long)hdr.incarnation);
	w.a_number = hdr.number;
	w.a[j].last_number = hdr.number;
	k->role = K_AREQ;
	k->st = KS_SENT;
	k->att = (uint8_t)j;
	k->number = hdr.number;
	if (w.a[j].reqs++)
		cover(COV_RESEND);
	k->gen = (uint8_t)w.a[j].reqs;
	m = flight_add(M_REQ, true, c->handle);
	m->kid = c->handle;
	m->att = (uint8_t)j;
	m->gen = k->gen;
	m->number = hdr.number;
	m->qpn = ((const struct rdma_ucm_connect *)c->body)->conn_param.qp_num;
	m->incarnation = hdr.incarnation;
}

/* A's connect whose QP is (or was, its id gone) @qpn, or -1. */
static int a_of_qpn(uint32_t qpn)
{
	int j;

	for (j = 0; j < NA; j++)
		if (w.a[j].qpn == qpn)
			return j;
	return -1;
}

/*
 * B higher: A's connect @j ended unanswered (its REQ's bound, a final
 * refusal, or its id destroyed while it waited): the REQs it sent are
 * to be named dead, none left to a late copy at B (sent_notice,
 * check_invariants).  One B answered ends with no NOTICE.
 */
static void a_ended_unanswered(int j)
{
	if (w.cfg == B_HIGHER && w.a[j].reqs && !w.a[j].answered)
		w.a[j].end_due = true;
}

/*
 * B higher: A's NOTICE (a SIDR REQ on a UDP id) that its REQs from a QP
 * up to a number are dead: the one B's CM refused as stale, or, its
 * connect ended unanswered, the last it sent.
 */
static void sent_notice(const struct fake_cmd *c)
{
	struct fake_kid *fk = fake_ucma_kid(c->handle);
	const struct sockaddr_in *dst = (const void *)&fk->dst;
	struct kid_info *n = kinfo(c->handle), *k;
	struct cma_p2p_hdr hdr;
	struct msg *m;
	uint8_t gen;
	int j;

	CHECK(w.cfg == B_HIGHER, "A, the higher end, sent a NOTICE");
	CHECK(cmd_hdr(c, &hdr) && hdr.kind == CMA_P2P_NOTICE && !hdr.flags &&
		      hdr.port == P2P_PORT,
	      "A's NOTICE on kernel id %u has a wrong header", c->handle);
	CHECK(dst->sin_family == AF_INET &&
		      dst->sin_addr.s_addr == htonl(0xc0000202) &&
		      ntohs(dst->sin_port) == P2P_PORT,
	      "A sends its NOTICE elsewhere than where its REQs went");
	CHECK(hdr.incarnation ==
		      (cma_p2p_incarnation() & CMA_P2P_INCARNATION_MASK),
	      "A's NOTICE states incarnation %llx, not its own",
	      (unsigned long long)hdr.incarnation);
	j = a_of_qpn(hdr.qpn);
	CHECK(j >= 0, "A's NOTICE names QP %x, no connect's", hdr.qpn);
	n->role = K_NOTICE;
	n->st = KS_SENT;
	n->att = (uint8_t)j;
	n->number = hdr.number;
	if (w.a[j].notice_due) {
		k = kinfo(w.a[j].notice_due);
		/* Up to the REQ refused: B's CM holds an earlier one. */
		CHECK(hdr.number == k->number,
		      "A's NOTICE names connect %d's REQs up to %u, not up to "
		      "%u, the one refused as stale",
		      j, hdr.number, k->number);
		w.a[j].notice_due = 0;
		gen = k->gen;
		cover(COV_NOTICE);
	} else {
		/*
		 * Its connect ended (a_ended_unanswered; what ends it may
		 * be read after this, check_invariants tells): every REQ
		 * it sent, the last one's copies too, named once.
		 */
		CHECK(!w.a[j].answered,
		      "A names connect %d's REQs dead, which B answered%s", j,
		      w.a[j].established ? " (it is established)" : "");
		CHECK(!w.a[j].end_sent,
		      "A names connect %d's REQs dead a second time, with "
		      "none of its REQs refused as stale",
		      j);
		CHECK(w.a[j].reqs && hdr.number == w.a[j].last_number,
		      "A's NOTICE names connect %d's REQs up to %u, not up to "
		      "%u, the last it sent",
		      j, hdr.number, w.a[j].last_number);
		w.a[j].end_sent = true;
		n->end = true;
		gen = (uint8_t)w.a[j].reqs;
		cover(COV_END_NOTICE);
	}
	n->gen = gen;
	m = flight_add(M_NOTICE, true, CHAN_VERIFY + c->handle);
	m->kid = c->handle;
	m->end = n->end;
	m->att = (uint8_t)j;
	m->gen = gen;
	m->number = hdr.number;
	m->qpn = hdr.qpn;
	m->incarnation = hdr.incarnation;
}

/* A's companion listens, where the lower end's NOTICEs come to. */
static void sent_listen(const struct fake_cmd *c)
{
	struct fake_kid *fk = fake_ucma_kid(c->handle);
	const struct sockaddr_in *src = (const void *)&fk->src;

	if (fk->ps != RDMA_PS_UDP)
		return;
	CHECK(!w.comp_kid, "A makes another companion listener (%u)",
	      c->handle);
	CHECK(src->sin_family == AF_INET &&
		      src->sin_addr.s_addr == htonl(0xc0000201) &&
		      ntohs(src->sin_port) == P2P_PORT,
	      "A's companion listens elsewhere than at its listener's "
	      "address and port");
	w.comp_kid = c->handle;
	w.vfd = c->fd;
	kinfo(c->handle)->role = K_COMP;
	kinfo(c->handle)->st = KS_HELD;
}

/* B lower: whether a NOTICE that reached A named B's REQ on @kid dead. */
static bool named_dead(const struct kid_info *k)
{
	return k->role == K_BREQ && k->gen <= w.a_floor[k->att];
}

/*
 * B lower: A's companion answers B's NOTICE, which it must have acted on
 * by now: no request it names is held, and no adoption of one waits for
 * its RTU (none of them is ever established: B's CM gave them up).
 */
static void sent_answer(const struct fake_cmd *c)
{
	struct kid_info *n = kinfo(c->handle), *k;
	struct cma_p2p_held *h;
	struct cma_p2p_hdr hdr;
	uint32_t kid = 0;
	struct msg *m;
	int j;

	CHECK(cmd_hdr(c, &hdr) && hdr.kind == CMA_P2P_ANSWER && !hdr.flags &&
		      hdr.qpn == B_QPN(n->att) &&
		      hdr.incarnation == B_INC(n->inc) &&
		      hdr.number == n->number,
	      "A's answer to B's NOTICE about REQ %d.%d has a wrong header",
	      n->att, n->gen);
	cma_p2p_lock();
	for (h = cma_p2p_held_first(w.lis); h && !kid;
	     h = cma_list_next(h, lnode))
		if (h->handle < MAX_KIDS && named_dead(&w.kid[h->handle]))
			kid = h->handle;
	cma_p2p_unlock();
	CHECK(!kid, "A answers B's NOTICE still holding B's REQ %d.%d",
	      w.kid[kid].att, w.kid[kid].gen);
	for (j = 0; j < NA; j++) {
		/* An undone adoption's fresh kernel id is made when needed. */
		if (!w.a[j].id || kid_of(w.a[j].id) == CMA_NO_KERNEL_ID)
			continue;
		k = kinfo(kid_of(w.a[j].id));
		CHECK(!(named_dead(k) && k->st == KS_ACCEPTED && !k->term),
		      "A answers B's NOTICE with connect %d's adoption of B's "
		      "REQ %d.%d, which it names dead, still standing",
		      j, k->att, k->gen);
	}
	cover(COV_HEARD);
	m = flight_add(M_ANSWER, true, CHAN_VERIFY + c->handle);
	m->kid = c->handle;
	m->att = n->att;
	m->gen = n->gen;
	m->inc = n->inc;
	m->number = n->number;
	m->qpn = hdr.qpn;
	m->incarnation = hdr.incarnation;
}

static void sent_accept(const struct fake_cmd *c)
{
	const struct rdma_ucm_accept *acc = (const void *)c->body;
	struct kid_info *k = kinfo(c->handle);
	struct cma_p2p_hdr hdr;
	struct msg *m;
	int j;

	if (k->dead)
		return; /* refused by the kernel: nothing was sent */
	if (k->role == K_AREQ) {
		/* The RTU that completes A's own REQ. */
		m = flight_add(M_RTU, true, c->handle);
		m->kid = c->handle;
		m->att = k->att;
		return;
	}
	CHECK(k->role == K_BREQ && k->st == KS_HELD,
	      "ACCEPT on kernel id %u, no request of B's waiting", c->handle);
	j = a_of_uid(acc->uid);
	CHECK(j >= 0, "ACCEPT of B's request for no connect of A's");
	CHECK(cmd_hdr(c, &hdr) && hdr.kind == CMA_P2P_REP,
	      "A's adoption answers without a REP header");
	CHECK(!named_dead(k),
	      "A adopted B's REQ %d.%d (kernel id %u), which B's NOTICE named "
	      "dead",
	      k->att, k->gen, c->handle);
	/*
	 * A QP at RTS for a REQ from the same QP already (a NOTICE undid
	 * that adoption) is answered as it is, its PSNs dictated: moving it
	 * again would need a RESET, which drops the posted receive (a RESET
	 * empties the fake's receive queue).  Only a REQ from another QP
	 * that is adopted may have it reset.
	 */
	if (w.a[j].qp_att >= 0 && w.a[j].qp_att != k->att)
		w.a[j].reset = true;
	CHECK(fake_qp_of(w.a[j].id->qp)->nrecvs == 1 || w.a[j].reset,
	      "connect %d's QP went through RESET, yet it adopts B's REQ "
	      "%d.%d from the QP it was at RTS for (B's attempt %d): the "
	      "receive posted before connecting is lost",
	      j, k->att, k->gen, w.a[j].qp_att);
	CHECK(!(hdr.flags & CMA_P2P_F_PSNS) == (w.a[j].qp_att != k->att),
	      "connect %d adopts B's REQ %d.%d %s dictated PSNs, its QP at "
	      "RTS for B's attempt %d",
	      j, k->att, k->gen,
	      hdr.flags & CMA_P2P_F_PSNS ? "with" : "without", w.a[j].qp_att);
	w.a[j].qp_att = k->att;
	if (k->copy)
		cover(COV_COPY_TAKEN);
	k->st = KS_ACCEPTED;
	k->a_att = (int8_t)j;
	cover(w.cur_act == ACT_A_CONNECT ? COV_ADOPT_HELD : COV_ADOPT_ARRIVING);
	m = flight_add(M_REP, true, chan_b(k->att, k->gen));
	m->kid = c->handle;
	m->att = k->att;
	m->gen = k->gen;
}

static void sent_reject(const struct fake_cmd *c)
{
	struct kid_info *k = kinfo(c->handle);
	struct cma_p2p_hdr hdr;
	struct msg *m;
	uint8_t kind;

	if (k->role == K_AREQ) {
		/* A withdraws its REQ without destroying the kernel id. */
		if (k->st == KS_SENT) {
			m = flight_add(M_WITHDRAW, true, c->handle);
			m->kid = c->handle;
		}
		k->st = KS_GONE;
		return;
	}
	if (k->role != K_BREQ || k->st == KS_GONE)
		return;
	kind = cmd_hdr(c, &hdr) ? hdr.kind : 0;
	/* Only B knows that a REQ of its is dead, and says so. */
	CHECK(kind != CMA_P2P_REJ_STALE || named_dead(k),
	      "A refused B's REQ %d.%d (kernel id %u) as stale, which no "
	      "NOTICE named dead",
	      k->att, k->gen, c->handle);
	if (kind == CMA_P2P_REJ_STALE && k->copy)
		cover(COV_LATE_COPY);
	if (kind == CMA_P2P_REJ_STALE && k->copy && w.cur_end)
		cover(COV_END_REFUSED);
	if (kind == CMA_P2P_REJ_STALE && k->copy == COPY_REFUSED)
		cover(COV_REFUSED_COPY);
	/* Refused as it came: a NOTICE overtook it. */
	if (kind == CMA_P2P_REJ_STALE && w.cur_msg == M_REQ)
		cover(COV_FLOOR);
	if (k->dead) {
		/* Its sender gave it up: the REJ reaches nobody. */
		if (kind != CMA_P2P_REJ_STALE)
			cover(w.cur_act == ACT_FIRE_LIS ? COV_DEAD_DROPPED
							: COV_DEAD_PASSED);
		k->st = KS_GONE;
		return;
	}
	m = flight_add(M_REJ, true, chan_b(k->att, k->gen));
	m->kid = c->handle;
	m->att = k->att;
	m->gen = k->gen;
	m->status = IB_REJ_CONSUMER;
	m->kind = kind;
	k->st = KS_GONE;
}

/* A destroyed its side of @c's kernel id: what its CM tells B. */
static void sent_destroy(const struct fake_cmd *c)
{
	struct kid_info *k = kinfo(c->handle);
	struct msg *m, *req;

	switch (k->term || k->dead ? K_NONE : k->role) {
	case K_AREQ:
		if (k->st == KS_SENT) {
			req = req_in_flight(true, c->handle);
			if (req) {
				req->dead = true;
				cover(COV_WITHDRAW);
			} else if (b_has_req(c->handle)) {
				m = flight_add(M_WITHDRAW, true, c->handle);
				m->kid = c->handle;
				cover(COV_WITHDRAW);
			}
		} else if (k->st == KS_ESTAB) {
			m = flight_add(M_DREQ, true, c->handle);
			m->kid = c->handle;
		}
		break;
	case K_BREQ:
		/* A NOTICE named the REQ it adopted dead: undone. */
		if (k->st == KS_ACCEPTED && w.cur_msg == M_NOTICE &&
		    k->a_att >= 0) {
			CHECK(named_dead(k),
			      "A undid connect %d's adoption of B's REQ %d.%d, "
			      "which no NOTICE named dead",
			      k->a_att, k->att, k->gen);
			w.a[k->a_att].unadopted = true;
			cover(COV_UNADOPTED);
			if (w.cur_end)
				cover(COV_END_UNADOPTED);
		}
		if (k->st == KS_ACCEPTED || k->st == KS_ESTAB) {
			m = flight_add(M_DREQ, true, chan_b(k->att, k->gen));
			m->kid = c->handle;
			m->att = k->att;
			m->gen = k->gen;
		}
		break;
	}
	k->st = KS_GONE;
}

/*
 * A disconnects @c's kernel id.  The CM sends a DREQ only on an
 * established connection (in any other state the kernel's disconnect
 * sends nothing, and the connection may still form), and the kernel
 * reports DISCONNECTED once it is answered or timed out.
 */
static void sent_disconnect(const struct fake_cmd *c)
{
	struct kid_info *k = kinfo(c->handle);
	struct msg *m;

	CHECK(!w.stale,
	      "a late message of B's old process makes A disconnect kernel "
	      "id %u, a connection of the new one",
	      c->handle);
	if (k->st != KS_ESTAB || k->term || k->disc)
		return;
	m = flight_add(M_DREQ, true, chan_of_kid(c->handle));
	m->kid = c->handle;
	m->att = k->att;
	m->gen = k->gen;
	k->disc = true;
	kev(c->handle, RDMA_CM_EVENT_DISCONNECTED, 0);
}

static void scan_cmds(void)
{
	const struct fake_cmd *c;

	for (; w.cmds_seen < fake_ucma_ncmds(); w.cmds_seen++) {
		c = fake_ucma_cmd(w.cmds_seen);
		/* Everything but the application's is p2p's verify channel. */
		if (c->fd != w.kfd) {
			CHECK(!w.vfd || w.vfd == c->fd,
			      "commands on a third channel (%d)", c->fd);
			w.vfd = c->fd;
		}
		switch (c->cmd) {
		case RDMA_USER_CM_CMD_CONNECT:
			if (fake_ucma_kid(c->handle)->ps == RDMA_PS_UDP)
				sent_notice(c);
			else
				sent_req(c);
			break;
		case RDMA_USER_CM_CMD_LISTEN:
			sent_listen(c);
			break;
		case RDMA_USER_CM_CMD_ACCEPT:
			sent_accept(c);
			break;
		case RDMA_USER_CM_CMD_REJECT:
			if (c->handle < MAX_KIDS &&
			    w.kid[c->handle].role == K_CREQ)
				sent_answer(c);
			else
				sent_reject(c);
			break;
		case RDMA_USER_CM_CMD_DESTROY_ID:
			if (c->handle < MAX_KIDS && w.kid[c->handle].role)
				sent_destroy(c);
			break;
		case RDMA_USER_CM_CMD_DISCONNECT:
			if (c->handle < MAX_KIDS && w.kid[c->handle].role)
				sent_disconnect(c);
			break;
		}
	}
}

/* --- what A's application sees ------------------------------------------ */

static void a_end(int j, struct rdma_cm_event *ev)
{
	struct a_att *a = &w.a[j];

	CHECK(a->st == AS_WAIT,
	      "connect %d ends a second time: %s (status %d) after %s", j,
	      rdma_event_str(ev->event), ev->status,
	      a->st == AS_ENDED ? rdma_event_str(a->end_ev) : "no connect");
	a->st = AS_ENDED;
	a->end_ev = ev->event;
	a->end_status = ev->status;
	/* An end a timer of A's reports comes within the connect's bound. */
	CHECK(!w.firing || w.now - a->start <= MAX_END_MS,
	      "connect %d ends at %lld ms, past its bound", j,
	      (long long)(w.now - a->start));
	/*
	 * A connect of a peer that restarted is failed as waiting for the
	 * old process; one made after that process was gone waited for the
	 * new one, and pairs with it.
	 */
	CHECK(ev->status != -ECONNRESET || !w.stale,
	      "connect %d fails with -ECONNRESET on a late message of B's "
	      "old process",
	      j);
	CHECK(ev->status != -ECONNRESET || a->epoch < w.kills,
	      "connect %d, made after B's restart, fails with -ECONNRESET", j);
	/* A refusal for now (reason 8 or 10) ends no connect: its bound may. */
	CHECK(ev->event != RDMA_CM_EVENT_REJECTED ||
		      (w.firing && w.fired == j) ||
		      (ev->status != CMA_IB_REJ_INVALID_SERVICE_ID &&
		       ev->status != CMA_IB_REJ_STALE_CONN),
	      "connect %d ends on a refusal for now (status %d)", j,
	      ev->status);
	/*
	 * A failure has a cause the schedule chose: the connect's own bound
	 * (its timer), the peer's restart, or an answer of B's or of the
	 * kernel that ended the kernel id it has now.
	 */
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED)
		;
	else if (ev->status == -ECONNRESET)
		cover(COV_RESET);
	else if (w.firing && w.fired == j)
		cover(ev->event == RDMA_CM_EVENT_REJECTED ? COV_REFUSED_END
							  : COV_BOUND);
	else if (kinfo(kid_of(ev->id))->term)
		cover(COV_PEER_REJECTED);
	else
		violation("connect %d fails for no reason: %s, status %d", j,
			  rdma_event_str(ev->event), ev->status);
	/* Its REQs are to be named dead, unless B answered (sent_notice). */
	if (ev->event != RDMA_CM_EVENT_ESTABLISHED)
		a_ended_unanswered(j);
	note(" [A%d %s %d]", j, rdma_event_str(ev->event), ev->status);
}

static void a_event(struct rdma_cm_event *ev)
{
	const char *data = ev->param.conn.private_data;
	int j;

	CHECK(ev->event != RDMA_CM_EVENT_CONNECT_REQUEST,
	      "a CONNECT_REQUEST surfaced (listener %s)",
	      ev->listen_id == listener ? "ours" : "other");
	for (j = 0; j < NA && w.a[j].id != ev->id; j++)
		;
	CHECK(j < NA, "an event (%s) on an id that is no connect's",
	      rdma_event_str(ev->event));
	switch (ev->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		a_end(j, ev);
		w.a[j].established = true;
		cover(COV_ESTABLISHED);
		/*
		 * Only an adoption from another QP than the one its QP was
		 * at RTS for may reset it (sent_accept).
		 */
		CHECK(fake_qp_of(ev->id->qp)->nrecvs == 1 || w.a[j].reset,
		      "connect %d established without the receive posted "
		      "before connecting (its QP went through RESET)",
		      j);
		if (w.a[j].unadopted && !w.a[j].reset)
			cover(COV_UNADOPTED_KEPT);
		CHECK(ev->param.conn.private_data_len == 2 && data &&
			      data[0] == 'b' && data[1] >= '0' &&
			      data[1] < '0' + NB,
		      "connect %d established without B's data", j);
		w.a[j].b_partner = data[1] - '0';
		if (w.b[w.a[j].b_partner].inc)
			cover(COV_REFORMED);
		kinfo(kid_of(ev->id))->st = KS_ESTAB;
		break;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		a_end(j, ev);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		CHECK(w.a[j].established && !w.a[j].disconnected,
		      "connect %d: DISCONNECTED %s", j,
		      w.a[j].established ? "twice" : "before ESTABLISHED");
		w.a[j].disconnected = true;
		cover(COV_DISCONNECTED);
		note(" [A%d DISCONNECTED]", j);
		break;
	default:
		violation("connect %d: unexpected %s", j,
			  rdma_event_str(ev->event));
	}
}

/* --- B: the model -------------------------------------------------------- */

static bool b_current(int i)
{
	return w.b[i].st != BS_NONE && w.b[i].st != BS_DONE;
}

static void b_notice_send(int i, bool end);

/*
 * B lower: like the library, a connect of B's that ends unanswered (B
 * gives it up or its bound runs out, its REQ is refused for good or
 * times out) names every REQ it sent dead, so that A keeps no late copy
 * of one (fire and forget: its answer changes nothing).  A killed
 * process sends nothing.
 */
static void b_done(int i, const char *why)
{
	const struct b_att *b = &w.b[i];

	if (w.cfg == B_LOWER && w.b_up &&
	    (b->st == BS_PENDING || b->st == BS_RESEND || b->st == BS_NOTICE))
		b_notice_send(i, true);
	w.b[i].st = BS_DONE;
	w.b[i].end = why;
	note(" [B%d %s]", i, why);
}

/*
 * B lower: @m names attempt @i's current REQ (its QP, its process, its
 * number), as that REQ and a NOTICE naming it up to it do.
 */
static void b_msg_names_req(struct msg *m, int i)
{
	const struct b_att *b = &w.b[i];

	m->att = (uint8_t)i;
	m->gen = b->gen;
	m->inc = b->inc;
	m->number = b->number;
	m->qpn = B_QPN(i);
	m->incarnation = B_INC(b->inc);
}

/* B lower: attempt @i's current REQ on its way to A (a copy, or not). */
static struct msg *b_req_msg(int i)
{
	struct msg *m = flight_add(M_REQ, false, chan_b(i, w.b[i].gen));

	b_msg_names_req(m, i);
	return m;
}

/* B lower: attempt @i's REQ, sent now. */
static void b_send_req(int i)
{
	struct b_att *b = &w.b[i];

	b->st = BS_PENDING;
	b->gen++;
	b->kid = 0;
	b->due = w.now + ANSWER_MS;
	/* B's library numbers its REQs, from 1 in each process. */
	b->number = ++w.b_number;
	b_req_msg(i);
}

/*
 * B higher: attempt @i adopts the oldest request it holds that A has not
 * withdrawn (a withdrawn one: its accept fails, it is passed over).
 */
static bool b_adopt_held(int i)
{
	struct b_att *b = &w.b[i];
	struct msg *m;
	uint32_t kid;
	bool dead, copy;

	while (w.nb_held) {
		kid = w.b_held[0].kid;
		dead = w.b_held[0].dead;
		copy = w.b_held[0].copy;
		memmove(&w.b_held[0], &w.b_held[1],
			sizeof(w.b_held[0]) * (size_t)--w.nb_held);
		if (dead)
			continue;
		if (copy)
			cover(COV_COPY_TAKEN);
		b->st = BS_REPSENT;
		b->kid = kid;
		b->a_partner = kinfo(kid)->att;
		m = flight_add(M_REP, false, kid);
		m->kid = kid;
		m->att = (uint8_t)i;
		m->inc = b->inc;
		return true;
	}
	return false;
}

static void b_connect(void)
{
	int i = w.b_made++;
	struct b_att *b = &w.b[i];

	b->inc = w.b_inc;
	if (w.cfg == B_LOWER) {
		b_send_req(i);
		return;
	}
	if (!b_adopt_held(i)) {
		b->st = BS_WAIT;
		b->due = w.now + ANSWER_MS;
	}
}

/*
 * B's attempt @i goes (B's application destroys its id, or B's process
 * is killed): what its kernel then tells A.
 */
static void b_withdraw(int i)
{
	struct b_att *b = &w.b[i];
	struct kid_info *k;
	struct msg *req;

	if (w.cfg == B_LOWER) {
		if (b->st != BS_PENDING && b->st != BS_ESTAB)
			return;
		req = req_in_flight(false, chan_b(i, b->gen));
		if (req) {
			req->dead = true;
			return;
		}
		/*
		 * Refused by A's CM unseen, its copy lost: A has no request
		 * of it, nothing to tell.
		 */
		if (!b->kid)
			return;
		k = kinfo(b->kid);
		if (b->st == BS_ESTAB) {
			/* A DREQ: after the RTU, on the same connection. */
			if (!k->term && !k->disc) {
				k->disc = true;
				kev(b->kid, RDMA_CM_EVENT_DISCONNECTED, 0);
			}
		} else if (k->st == KS_HELD) {
			/* The CM left the request state: the request is dead. */
			fake_ucma_kill_kid(b->kid);
			k->dead = true;
		} else if (k->st == KS_ACCEPTED && !k->term) {
			/* Its REQ was answered: the CM's REJ reaches A. */
			drop_in_flight(M_REP, true, chan_b(i, b->gen));
			kev(b->kid, RDMA_CM_EVENT_REJECTED, IB_REJ_TIMEOUT);
		}
		return;
	}
	if (b->st == BS_REPSENT && rep_in_flight(b->kid)) {
		drop_in_flight(M_REP, false, b->kid);
		if (!kinfo(b->kid)->term)
			kev(b->kid, RDMA_CM_EVENT_REJECTED, IB_REJ_CONSUMER);
	} else if (b->st == BS_ESTAB && !kinfo(b->kid)->term &&
		   !kinfo(b->kid)->disc) {
		kinfo(b->kid)->disc = true;
		kev(b->kid, RDMA_CM_EVENT_DISCONNECTED, 0);
	}
}

static void b_kill(void)
{
	int i;

	w.b_up = false; /* first: the dying process tells nothing */
	for (i = 0; i < NB; i++) {
		if (!b_current(i))
			continue;
		b_withdraw(i);
		b_done(i, "killed");
	}
	/* Its kernel destroys the requests it held: A's CM sees REJs. */
	for (i = 0; i < w.nb_held; i++)
		if (!w.b_held[i].dead && !kinfo(w.b_held[i].kid)->term)
			kev(w.b_held[i].kid, RDMA_CM_EVENT_REJECTED,
			    IB_REJ_CONSUMER);
	w.nb_held = 0;
	/* What NOTICEs told the process goes with it. */
	memset(w.b_floor, 0, sizeof(w.b_floor));
	w.kills++;
	w.kill_seq = w.seq;
}

/*
 * B lower: B tells A's companion that every REQ from attempt @i's QP up
 * to its current one is dead: that REQ was refused as stale, or the
 * attempt ends unanswered (@end, b_done).
 */
static void b_notice_send(int i, bool end)
{
	struct msg *m;

	m = flight_add(M_NOTICE, false, CHAN_VERIFY + ++w.seq);
	m->end = end;
	b_msg_names_req(m, i);
	cover(end ? COV_END_NOTICE : COV_NOTICE);
}

/*
 * B lower: A's CM refused attempt @i's REQ as stale (reason 10): it holds
 * an earlier REQ from the attempt's QP, a late copy.  Before the next REQ
 * goes out, B tells A's companion that every REQ from that QP up to the
 * one refused is dead.
 */
static void b_notice(int i)
{
	w.b[i].st = BS_NOTICE;
	b_notice_send(i, false);
}

/*
 * B lower: attempt @i's NOTICE came to an end, answered (@heard) or not:
 * its next REQ goes out at once, or after the usual delay; within the
 * bound of its refusals either way.
 */
static void b_notice_over(int i, uint8_t gen, bool heard)
{
	struct b_att *b = &w.b[i];

	if (!b_current(i) || b->st != BS_NOTICE || b->gen != gen)
		return; /* B gave the attempt up meanwhile */
	if (!heard) {
		cover(COV_UNHEARD);
		b->st = BS_RESEND;
		b->refused_at = w.now;
	} else if (w.now >= b->refused_since + REFUSED_MS) {
		b_done(i, "rejected (refused too long)");
	} else {
		b_send_req(i);
	}
}

/*
 * B higher: the REQs from A's connect @j's QP up to its REQ @gen are
 * dead.  B refuses those it holds, undoes an adoption of one (its REP
 * unanswered: no RTU ever comes for it), refuses any that comes later,
 * and answers.
 */
static void b_dead_reqs(int j, uint8_t gen)
{
	struct kid_info *k;
	struct msg *r;
	int i;

	if (gen > w.b_floor[j])
		w.b_floor[j] = gen;
	for (i = 0; i < w.nb_held;) {
		k = kinfo(w.b_held[i].kid);
		if (k->att != j || k->gen > gen) {
			i++;
			continue;
		}
		if (!w.b_held[i].dead) {
			if (w.b_held[i].copy)
				cover(COV_LATE_COPY);
			if (w.b_held[i].copy && w.cur_end)
				cover(COV_END_REFUSED);
			r = flight_add(M_REJ, false, w.b_held[i].kid);
			r->kid = w.b_held[i].kid;
			r->status = IB_REJ_CONSUMER;
			r->kind = CMA_P2P_REJ_STALE;
			r->inc = w.b_inc;
		}
		memmove(&w.b_held[i], &w.b_held[i + 1],
			sizeof(w.b_held[0]) * (size_t)(--w.nb_held - i));
	}
	for (i = 0; i < NB; i++) {
		if (w.b[i].st != BS_REPSENT)
			continue;
		k = kinfo(w.b[i].kid);
		if (k->att != j || k->gen > gen)
			continue;
		/* B's CM destroys the request's id: a REJ for A's REQ. */
		r = flight_add(M_REJ, false, w.b[i].kid);
		r->kid = w.b[i].kid;
		r->status = IB_REJ_CONSUMER;
		r->inc = w.b_inc;
		w.b[i].st = BS_WAIT;
		w.b[i].a_partner = -1;
		cover(COV_UNADOPTED);
		if (w.cur_end)
			cover(COV_END_UNADOPTED);
		note(" [B%d unadopted]", i);
		b_adopt_held(i);
	}
}

/* B higher: A's NOTICE @m reaches B's companion, which answers. */
static void b_noticed(const struct msg *m, enum variant var)
{
	struct msg *r;

	if (var == V_LOSE) {
		/* Lost on the way: A's CM times the SIDR REQ out. */
		kev(m->kid, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		return;
	}
	r = flight_add(M_ANSWER, false, m->chan);
	r->kid = m->kid;
	r->att = m->att;
	r->gen = m->gen;
	r->number = m->number;
	r->qpn = m->qpn;
	r->incarnation = m->incarnation;
	if (!w.b_up) {
		r->status = IB_SIDR_UNSUPPORTED; /* nobody listens */
		return;
	}
	r->status = IB_SIDR_REJECT;
	b_dead_reqs(m->att, m->gen);
}

/*
 * B higher: B's CM takes A's REQ @m from a QP it still holds another
 * request or a connection from as a stale connection: it refuses it
 * (reason 10), unseen by B's library, and disconnects an established
 * one.
 */
static bool b_cm_stale(const struct msg *m)
{
	struct msg *r;
	bool stale = false;
	int i;

	for (i = 0; i < w.nb_held; i++)
		stale |= !w.b_held[i].dead && w.b_held[i].kid != m->kid &&
			 kinfo(w.b_held[i].kid)->att == m->att;
	for (i = 0; i < NB; i++) {
		if ((w.b[i].st != BS_REPSENT && w.b[i].st != BS_ESTAB) ||
		    w.b[i].kid == m->kid || kinfo(w.b[i].kid)->att != m->att)
			continue;
		stale = true;
		if (w.b[i].st == BS_ESTAB && !kinfo(w.b[i].kid)->term &&
		    !kinfo(w.b[i].kid)->disc) {
			kinfo(w.b[i].kid)->disc = true;
			kev(w.b[i].kid, RDMA_CM_EVENT_DISCONNECTED, 0);
			b_done(i, "disconnected (a stale REQ)");
		}
	}
	if (!stale)
		return false;
	r = flight_add(M_REJ, false, m->kid);
	r->kid = m->kid;
	r->status = CMA_IB_REJ_STALE_CONN;
	return true;
}

/* B higher: A's REQ @m reaches B's library, which holds it at once. */
static void b_hold(const struct msg *m)
{
	struct msg *r;
	int i;

	if (m->gen <= w.b_floor[m->att]) {
		/* A NOTICE named it dead before it came. */
		cover(COV_FLOOR);
		r = flight_add(M_REJ, false, m->kid);
		r->kid = m->kid;
		r->status = IB_REJ_CONSUMER;
		r->kind = CMA_P2P_REJ_STALE;
		r->inc = w.b_inc;
		return;
	}
	CHECK(w.nb_held < MAX_HELD_B, "B holds too many requests");
	w.b_held[w.nb_held].kid = m->kid;
	w.b_held[w.nb_held].dead = false;
	w.b_held[w.nb_held++].copy = m->copy;
	/* The oldest waiting connect takes it. */
	for (i = 0; i < NB; i++)
		if (w.b[i].st == BS_WAIT && b_adopt_held(i))
			break;
}

/*
 * B lower, V_COPIED: A's refusal @m of B's REQ comes after B's CM, which
 * had no answer within its response timeout, sent a copy of that REQ: it
 * reaches A's CM later, before B's next REQ from the QP.
 */
static void b_copied(const struct msg *m)
{
	const struct b_att *b = &w.b[m->att];

	CHECK(b_current(m->att) && b->st == BS_PENDING && b->gen == m->gen,
	      "a copy of B's REQ %d.%d, which B is not waiting on", m->att,
	      m->gen);
	b_req_msg(m->att)->copy = COPY_REFUSED;
}

/* A message reaches B. */
static void b_receive(struct msg *m, enum variant var)
{
	struct b_att *b;
	struct msg *r;
	int i;

	if (m->type == M_NOTICE) {
		b_noticed(m, var);
		return;
	}
	if (m->type == M_ANSWER) {
		/* Lost: B's CM times its SIDR REQ out. */
		b_notice_over(m->att, m->gen, var != V_LOSE);
		return;
	}
	if (w.cfg == B_LOWER) {
		b = &w.b[m->att];
		if (var == V_COPIED)
			b_copied(m);
		if (m->type == M_REP &&
		    (!b_current(m->att) || b->gen != m->gen ||
		     b->st != BS_PENDING)) {
			/*
			 * For a REQ B's CM is done with: dropped there, and
			 * A's CM sends it again until it gives up, about a
			 * minute later.
			 */
			if (!kinfo(m->kid)->term) {
				kev(m->kid, RDMA_CM_EVENT_UNREACHABLE,
				    -ETIMEDOUT);
				w.fl[w.nfl - 1].slow = true;
			}
			return;
		}
		if (!b_current(m->att) || b->gen != m->gen)
			return; /* for an attempt B gave up: stale */
		switch (m->type) {
		case M_REP:
			if (b->st != BS_PENDING)
				return;
			if (var == V_LOSE) {
				/* Both CMs time out. */
				b_done(m->att, "unreachable (REP lost)");
				if (!kinfo(m->kid)->term)
					kev(m->kid, RDMA_CM_EVENT_UNREACHABLE,
					    -ETIMEDOUT);
				return;
			}
			b->st = BS_ESTAB;
			b->formed = true;
			b->a_partner = kinfo(m->kid)->a_att;
			r = flight_add(M_RTU, false, m->chan);
			r->kid = m->kid;
			r->att = m->att;
			note(" [B%d established]", m->att);
			return;
		case M_REJ:
			if (b->st != BS_PENDING)
				return;
			/* No NOTICE of B's names the REQ B waits on. */
			CHECK(m->kind != CMA_P2P_REJ_STALE,
			      "A refused B's current REQ %d.%d as stale",
			      m->att, m->gen);
			if (m->kind != CMA_P2P_REJ_RETRY &&
			    m->status != CMA_IB_REJ_INVALID_SERVICE_ID &&
			    m->status != CMA_IB_REJ_STALE_CONN) {
				b_done(m->att, "rejected");
				return;
			}
			if (b->refused_since < 0)
				b->refused_since = w.now;
			b->refused_at = w.now;
			if (m->status == CMA_IB_REJ_STALE_CONN && !m->kind &&
			    !m->app_data)
				b_notice(m->att);
			else
				b->st = BS_RESEND;
			return;
		case M_DREQ:
			b_done(m->att, b->st == BS_ESTAB ? "disconnected"
							 : "rejected by A");
			return;
		}
		return;
	}
	switch (m->type) {
	case M_REQ:
		if (m->dead)
			return; /* A's REJ overtook it: B's CM drops it */
		if (!w.b_up) {
			/* Nobody listens: the CM refuses it (reason 8). */
			r = flight_add(M_REJ, false, m->kid);
			r->kid = m->kid;
			r->status = CMA_IB_REJ_INVALID_SERVICE_ID;
			return;
		}
		if (var == V_REFUSE_UNSEEN) {
			/* Refused by B's CM; A's CM's copy comes later. */
			r = flight_add(M_REJ, false, m->kid);
			r->kid = m->kid;
			r->status = CMA_IB_REJ_INVALID_SERVICE_ID;
			r = flight_add(M_REQ, true, m->kid);
			*r = *m;
			r->copy = COPY_UNSEEN;
			r->seq = ++w.seq;
			return;
		}
		if (var == V_REFUSE_STALE) {
			r = flight_add(M_REJ, false, m->kid);
			r->kid = m->kid;
			r->status = CMA_IB_REJ_STALE_CONN;
			return;
		}
		if (b_cm_stale(m))
			return;
		if (var == V_REFUSE_RETRY || var == V_REFUSE_OTHER) {
			r = flight_add(M_REJ, false, m->kid);
			r->kid = m->kid;
			r->status = IB_REJ_CONSUMER;
			r->kind = var == V_REFUSE_RETRY ? CMA_P2P_REJ_RETRY : 0;
			/* Final: reason 28 without data is "not yet". */
			r->app_data = var == V_REFUSE_OTHER;
			r->inc = w.b_inc;
			return;
		}
		b_hold(m);
		return;
	case M_KEV:
		/* B's CM gave its REP up: no RTU came. */
		i = b_adopter(m->kid);
		if (i >= 0)
			b_done(i, "unreachable (no RTU)");
		return;
	case M_RTU:
		for (i = 0; i < NB; i++) {
			if (w.b[i].st == BS_REPSENT && w.b[i].kid == m->kid) {
				w.b[i].st = BS_ESTAB;
				w.b[i].formed = true;
				note(" [B%d established]", i);
			}
		}
		return;
	case M_WITHDRAW:
		for (i = 0; i < w.nb_held; i++)
			if (w.b_held[i].kid == m->kid)
				w.b_held[i].dead = true;
		for (i = 0; i < NB; i++)
			if (w.b[i].st == BS_REPSENT && w.b[i].kid == m->kid)
				b_done(i, "rejected (A withdrew)");
		return;
	case M_DREQ:
		for (i = 0; i < NB; i++)
			if (w.b[i].st == BS_ESTAB && w.b[i].kid == m->kid)
				b_done(i, "disconnected");
		return;
	}
}

/*
 * V_REFUSE_UNSEEN: A's CM refuses B's REQ before A's library sees it; B's
 * CM has sent a copy meanwhile, which comes later.
 */
static void r_unseen(const struct msg *m)
{
	struct msg *r, *copy;

	r = flight_add(M_REJ, true, chan_b(m->att, m->gen));
	r->att = m->att;
	r->gen = m->gen;
	r->status = CMA_IB_REJ_INVALID_SERVICE_ID;
	copy = flight_add(M_REQ, false, chan_b(m->att, m->gen));
	*copy = *m;
	copy->copy = COPY_UNSEEN;
	copy->seq = ++w.seq;
}

/*
 * A's CM takes a REQ from a QP it still holds another request or a
 * connection from for a stale connection: it refuses it (reason 10),
 * unseen by A's library, and disconnects an established one.
 */
static bool a_cm_stale(const struct msg *m)
{
	struct kid_info *k;
	struct msg *r;
	uint32_t kid;

	for (kid = 1; kid < MAX_KIDS; kid++) {
		k = &w.kid[kid];
		if (k->role != K_BREQ || k->att != m->att || k->gen == m->gen ||
		    k->dead || k->term ||
		    (k->st != KS_HELD && k->st != KS_ACCEPTED &&
		     k->st != KS_ESTAB))
			continue;
		r = flight_add(M_REJ, true, chan_b(m->att, m->gen));
		r->att = m->att;
		r->gen = m->gen;
		r->status = CMA_IB_REJ_STALE_CONN;
		if (k->st == KS_ESTAB && !k->disc) {
			k->disc = true;
			kev(kid, RDMA_CM_EVENT_DISCONNECTED, 0);
			r = flight_add(M_DREQ, true, chan_of_kid(kid));
			r->kid = kid;
			r->att = k->att;
			r->gen = k->gen;
		}
		return true;
	}
	return false;
}

/*
 * B higher: B's answer @m to A's NOTICE reaches its kernel id (lost: A's
 * CM times the SIDR REQ out).
 */
static void a_answered(const struct msg *m, enum variant var)
{
	struct cma_p2p_hdr hdr = {.kind = CMA_P2P_ANSWER,
				  .qpn = m->qpn,
				  .incarnation = m->incarnation,
				  .number = m->number};
	struct rdma_ucm_event_resp *r;
	int status = var == V_LOSE ? -ETIMEDOUT : m->status;

	kinfo(m->kid)->term = true;
	fake_ucma_hold();
	r = fake_ucma_event(m->kid, RDMA_CM_EVENT_UNREACHABLE, status);
	if (r && status == IB_SIDR_REJECT) {
		cma_p2p_hdr_encode(&hdr, r->param.ud.private_data);
		r->param.ud.private_data_len = CMA_P2P_HDR_LEN;
	}
	fake_ucma_release();
	CHECK(r, "A's NOTICE's kernel id %u is gone before its answer", m->kid);
	/* The end of a connect's NOTICE: nothing waits for it. */
	if (!kinfo(m->kid)->end) {
		w.a[m->att].notice_end = w.now;
		w.a[m->att].heard = status == IB_SIDR_REJECT;
	} else if (status != IB_SIDR_REJECT) {
		w.a[m->att].end_unheard = true;
	}
	cover(status == IB_SIDR_REJECT ? COV_HEARD : COV_UNHEARD);
}

/*
 * A's REQ on kernel id @kid is over in A's CM (refused, or timed out):
 * the CM has left its request states, so the kernel refuses its INIT
 * attributes from now on, as the kernel's does.
 */
static void a_req_over(uint32_t kid)
{
	struct kid_info *k = kinfo(kid);

	if (k->role != K_AREQ || k->dead)
		return;
	fake_ucma_kill_kid(kid);
	k->dead = true;
}

/*
 * B lower: B's NOTICE @m reaches A's companion (lost: B's CM times its
 * SIDR REQ out).  From then on A's library knows those REQs are dead.
 */
static void a_noticed(const struct msg *m, enum variant var)
{
	struct cma_p2p_hdr hdr = {.kind = CMA_P2P_NOTICE,
				  .port = P2P_PORT,
				  .qpn = m->qpn,
				  .incarnation = m->incarnation,
				  .number = m->number};
	struct sockaddr_in peer = unit_ipv4("192.0.2.0", 40000);
	struct rdma_ucm_event_resp *r;
	struct kid_info *k;
	uint32_t child = 0;

	if (var == V_LOSE) {
		if (m->end)
			w.end_lost[m->att] = true;
		b_notice_over(m->att, m->gen, false);
		return;
	}
	CHECK(w.comp_kid && kinfo(w.comp_kid)->st != KS_GONE,
	      "B's NOTICE finds no companion listener at A");
	if (m->gen > w.a_floor[m->att])
		w.a_floor[m->att] = m->gen;
	fake_ucma_hold();
	r = fake_ucma_conn_req(w.comp_kid, &child);
	if (r) {
		cma_p2p_hdr_encode(&hdr, r->param.ud.private_data);
		r->param.ud.private_data_len = CMA_P2P_HDR_LEN;
		memcpy(&fake_ucma_kid(child)->dst, &peer, sizeof(peer));
	}
	fake_ucma_release();
	CHECK(r, "A's companion (kernel id %u) takes no NOTICE", w.comp_kid);
	k = kinfo(child);
	k->role = K_CREQ;
	k->st = KS_HELD;
	k->att = m->att;
	k->gen = m->gen;
	k->inc = m->inc;
	k->number = m->number;
}

/*
 * B higher: A's REQ on @k is refused by @m (a REJ, or the kernel's report
 * of B's restart): a refusal for now goes out again from now.  B's CM's
 * refusal as stale (reason 10, no data) of the REQ A waits on makes A
 * tell B, first, that it is dead.
 */
static void a_refused(const struct kid_info *k, const struct msg *m)
{
	struct a_att *a = &w.a[k->att];
	struct cma_p2p_conn *c = conn_of(k->att);

	a->refused_at = w.now;
	a->notice_end = -1;
	if (m->type == M_REJ && m->status == CMA_IB_REJ_STALE_CONN &&
	    !m->kind && !m->app_data && c && c->state == CMA_P2P_PENDING &&
	    kid_of(a->id) == m->kid)
		a->notice_due = m->kid;
}

/* A message reaches A: the kernel event it makes. */
static void a_receive(struct msg *m, enum variant var)
{
	struct rdma_ucm_event_resp *r;
	struct cma_p2p_hdr hdr = {.port = P2P_PORT};
	struct kid_info *k;
	char data[3] = {'b', 0, 0};
	struct msg *r2;
	uint32_t kid;
	int i;

	if (m->type == M_NOTICE) {
		a_noticed(m, var);
		return;
	}
	if (m->type == M_ANSWER) {
		a_answered(m, var);
		return;
	}
	if (m->type == M_REQ) {
		if (var == V_LOSE) {
			/* Lost for good: B's CM times out, A never hears. */
			if (!m->dead && !m->copy && b_current(m->att) &&
			    w.b[m->att].gen == m->gen)
				b_done(m->att, "unreachable (REQ lost)");
			return;
		}
		if (var == V_REFUSE_UNSEEN) {
			r_unseen(m);
			return;
		}
		if (!m->dead && a_cm_stale(m))
			return;
		data[1] = (char)('0' + m->att);
		req_incarnation = B_INC(m->inc);
		req_qpn = m->qpn;
		req_number = m->number;
		kid = peer_request("192.0.2.0", 0, data);
		req_qpn = 0;
		req_number = 0;
		k = kinfo(kid);
		k->role = K_BREQ;
		/* Held or adopted at once, or refused if a NOTICE named it. */
		k->st = KS_HELD;
		k->att = m->att;
		k->gen = m->gen;
		k->inc = m->inc;
		k->number = m->number;
		k->a_att = -1;
		k->copy = m->copy;
		if (m->dead) {
			fake_ucma_kill_kid(kid);
			k->dead = true;
		} else if (b_current(m->att) && w.b[m->att].gen == m->gen) {
			w.b[m->att].kid = kid;
		}
		return;
	}
	k = kinfo(m->kid);
	if (m->type == M_REP && var == V_LOSE) {
		/* Both CMs give up: A's REQ times out, B's REP too. */
		if (!k->term) {
			k->term = true;
			a_req_over(m->kid);
			fake_ucma_event(m->kid, RDMA_CM_EVENT_UNREACHABLE,
					-ETIMEDOUT);
		}
		for (i = 0; i < NB; i++)
			if (w.b[i].st == BS_REPSENT && w.b[i].kid == m->kid)
				b_done(i, "unreachable (REP lost)");
		return;
	}
	if (m->type == M_REP && (k->st == KS_GONE || k->term)) {
		/*
		 * A's CM is done with that REQ and drops the REP: B's CM
		 * sends it again until it gives up, about a minute later.
		 */
		if (b_adopter(m->kid) >= 0) {
			r2 = flight_add(M_KEV, true, m->kid);
			r2->kid = m->kid;
			r2->slow = true;
		}
		return;
	}
	if (k->term &&
	    !(m->type == M_KEV && m->ev == RDMA_CM_EVENT_DISCONNECTED &&
	      k->st == KS_ESTAB))
		return; /* the kernel reports nothing more on it */
	fake_ucma_hold();
	switch (m->type) {
	case M_REP:
		r = fake_ucma_event(m->kid, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
		if (r) {
			hdr.kind = CMA_P2P_REP;
			hdr.incarnation = B_INC(m->inc);
			hdr.data_len = 2;
			cma_p2p_hdr_encode(&hdr, r->param.conn.private_data);
			memcpy(r->param.conn.private_data + CMA_P2P_HDR_LEN,
			       (char[]){'b', (char)('0' + m->att)}, 2);
			r->param.conn.private_data_len = CMA_P2P_HDR_LEN + 2;
			r->param.conn.responder_resources = 4;
			r->param.conn.initiator_depth = 4;
			r->param.conn.qp_num = 0x99;
		}
		/* Answered: the connect ends with no NOTICE now. */
		if (r && k->role == K_AREQ && w.a[k->att].id &&
		    kid_of(w.a[k->att].id) == m->kid)
			w.a[k->att].answered = true;
		break;
	case M_RTU:
		fake_ucma_event(m->kid, RDMA_CM_EVENT_ESTABLISHED, 0);
		break;
	case M_REJ:
		k->term = true;
		a_req_over(m->kid);
		r = fake_ucma_event(m->kid, RDMA_CM_EVENT_REJECTED, m->status);
		if (r && m->kind) {
			hdr.kind = m->kind;
			hdr.incarnation = B_INC(m->inc);
			cma_p2p_hdr_encode(&hdr, r->param.conn.private_data);
			r->param.conn.private_data_len = CMA_P2P_HDR_LEN;
		} else if (r && m->app_data) {
			memcpy(r->param.conn.private_data, "no", 2);
			r->param.conn.private_data_len = 2;
		}
		/* If it refuses for now, the REQ goes out again from here. */
		if (k->role == K_AREQ)
			a_refused(k, m);
		break;
	case M_KEV:
		if (m->ev == RDMA_CM_EVENT_REJECTED && k->role == K_AREQ)
			a_refused(k, m);
		if (k->role == K_NOTICE) {
			/* Its SIDR REQ timed out: not heard. */
			if (!k->end) {
				w.a[k->att].notice_end = w.now;
				w.a[k->att].heard = false;
			} else {
				w.a[k->att].end_unheard = true;
			}
			cover(COV_UNHEARD);
		}
		if (m->ev != RDMA_CM_EVENT_DISCONNECTED) {
			k->term = true;
			a_req_over(m->kid);
		}
		fake_ucma_event(m->kid, m->ev, m->status);
		break;
	}
	fake_ucma_release();
}

/* --- A's timers ---------------------------------------------------------- */

enum timer_class { T_CHORES, T_RETRY, T_BOUND };

static enum timer_class conn_class(const struct cma_p2p_conn *c)
{
	if (c->peer_gone || c->nretired || c->qp_err_due || !c->registered ||
	    (c->state != CMA_P2P_PENDING && c->state != CMA_P2P_WAIT_PEER &&
	     c->state != CMA_P2P_RESEND))
		return T_CHORES;
	/* While a NOTICE is out, the timer measures only the bound. */
	return c->state == CMA_P2P_RESEND && !cma_p2p_resolving(c) &&
			       !c->notice_serial
		       ? T_RETRY
		       : T_BOUND;
}

/* When the conn's wait runs out, as p2p_connect.c reckons it. */
static int64_t conn_bound_due(const struct cma_p2p_conn *c)
{
	unsigned int peak, steps;
	int64_t ms = 0;

	cma_p2p_lock();
	peak = cma_p2p_conns_waiting_peak();
	cma_p2p_unlock();
	steps = (peak + CMA_P2P_MESH_STEP - 1) / CMA_P2P_MESH_STEP;
	if (!steps)
		steps = 1;
	if (steps > CMA_P2P_MESH_MAX_STEPS)
		steps = CMA_P2P_MESH_MAX_STEPS;
	if (c->bound == CMA_P2P_BOUND_ANSWER)
		ms = ANSWER_MS;
	else if (c->bound == CMA_P2P_BOUND_REFUSED)
		ms = REFUSED_MS;
	return (int64_t)((c->bound_ns - CLOCK_BASE_NS) / 1000000) + ms * steps;
}

/* The checker's time when the conn's timer fires. */
static int64_t conn_due(int j)
{
	struct cma_p2p_conn *c = conn_of(j);

	switch (conn_class(c)) {
	case T_CHORES:
		break;
	case T_RETRY:
		/* A NOTICE B answered lets it go out again at once. */
		if (w.a[j].notice_end >= 0)
			return w.a[j].notice_end +
			       (w.a[j].heard ? 0 : cma_p2p_resend_delay_ms(c));
		return w.a[j].refused_at + cma_p2p_resend_delay_ms(c);
	case T_BOUND:
		return conn_bound_due(c);
	}
	return w.now;
}

static bool conn_timer_armed(int j)
{
	struct cma_p2p_conn *c = conn_of(j);

	return c && timer_armed(&c->timer);
}

static bool conn_chores_due(int j)
{
	return conn_timer_armed(j) && conn_class(conn_of(j)) == T_CHORES;
}

/*
 * The listener's hold check only acts on a held request whose peer gave
 * it up: on others it only looks and arms again, and is no choice.
 */
static bool lis_check_acts(void)
{
	struct cma_p2p_held *h;
	bool dead = false;

	if (!timer_armed(&w.lis->timer))
		return false;
	cma_p2p_lock();
	for (h = cma_p2p_held_first(w.lis); h && !dead;
	     h = cma_list_next(h, lnode))
		dead = h->handle < MAX_KIDS && w.kid[h->handle].dead;
	cma_p2p_unlock();
	return dead;
}

/*
 * Run an armed timer's expiry, as the service thread does: @j's conn
 * timer, or the listener's (-1).
 */
static void fire(struct cma_timer *t, int64_t due, int j)
{
	if (due > w.now)
		w.now = due;
	set_clock();
	cma_timer_stop(t);
	w.firing = true;
	w.fired = j;
	t->expire(t);
	settle();
	w.firing = false;
}

/* --- actions ------------------------------------------------------------- */

/* A deadline already past is due now. */
static int64_t timer_due(int64_t due)
{
	return due > w.now ? due : w.now;
}

static int64_t lis_due(void)
{
	return w.lis_armed_at + CMA_P2P_PROBE_MS;
}

/* When the first of A's timers is due (INT64_MAX: none is armed). */
static int64_t timers_first(void)
{
	int64_t first = INT64_MAX;
	int j;

	for (j = 0; j < NA; j++)
		if (conn_timer_armed(j) && timer_due(conn_due(j)) < first)
			first = timer_due(conn_due(j));
	if (lis_check_acts() && timer_due(lis_due()) < first)
		first = timer_due(lis_due());
	return first;
}

static bool copy_matters(const struct msg *m)
{
	const struct b_att *b = &w.b[m->att];

	/*
	 * A REJ of A's library's (with the kernel id it refused) or of its
	 * CM's for a stale connection; one for a REQ refused unseen has its
	 * copy already (r_unseen).
	 */
	return w.cfg == B_LOWER && m->to_b && m->type == M_REJ &&
	       (m->kid || m->status == CMA_IB_REJ_STALE_CONN) &&
	       b_current(m->att) && b->st == BS_PENDING && b->gen == m->gen;
}

static int enabled(struct act *acts)
{
	int64_t first;
	int n = 0, i, j;
	bool faults = w.faults < max_faults;

#define ADD(k, a, v)                                                           \
	do {                                                                   \
		acts[n].kind = (k);                                            \
		acts[n].arg = (uint8_t)(a);                                    \
		acts[n].var = (v);                                             \
		n++;                                                           \
	} while (0)
	if (w.a_made < NA)
		ADD(ACT_A_CONNECT, w.a_made, V_OK);
	for (j = 0; j < w.a_made; j++)
		if (w.a[j].st == AS_WAIT && w.a[j].id)
			ADD(ACT_A_DESTROY, j, V_OK);
	if (w.b_up && w.b_made < NB)
		ADD(ACT_B_CONNECT, w.b_made, V_OK);
	for (i = 0; i < w.b_made; i++) {
		if (w.b[i].st == BS_PENDING || w.b[i].st == BS_RESEND ||
		    w.b[i].st == BS_NOTICE || w.b[i].st == BS_WAIT ||
		    (w.b[i].st == BS_REPSENT && rep_in_flight(w.b[i].kid)))
			ADD(ACT_B_GIVEUP, i, V_OK);
		if (w.b[i].st == BS_RESEND)
			ADD(ACT_B_RESEND, i, V_OK);
	}
	if (w.b_up && w.kills < max_kills)
		ADD(ACT_B_KILL, 0, V_OK);
	if (!w.b_up && b_may_start())
		ADD(ACT_B_START, 0, V_OK);
	for (i = 0; i < w.nfl && n < MAX_ACTS - 5; i++) {
		struct msg *m = &w.fl[i];

		if (!deliverable(i))
			continue;
		ADD(ACT_DELIVER, i, V_OK);
		if (copy_matters(m))
			ADD(ACT_DELIVER, i, V_COPIED);
		if (!faults || m->dead)
			continue;
		if (m->type == M_REQ || m->type == M_REP ||
		    m->type == M_NOTICE || m->type == M_ANSWER)
			ADD(ACT_DELIVER, i, V_LOSE);
		if (m->type == M_REQ && !m->copy && (!m->to_b || w.b_up))
			ADD(ACT_DELIVER, i, V_REFUSE_UNSEEN);
		if (m->type == M_REQ && m->to_b && w.b_up) {
			ADD(ACT_DELIVER, i, V_REFUSE_RETRY);
			ADD(ACT_DELIVER, i, V_REFUSE_OTHER);
			ADD(ACT_DELIVER, i, V_REFUSE_STALE);
		}
	}
	/* A's timers expire in the order of their deadlines, ties any way. */
	first = timers_first();
	for (j = 0; j < NA && n < MAX_ACTS; j++)
		if (conn_timer_armed(j) && timer_due(conn_due(j)) == first)
			ADD(ACT_FIRE_CONN, j, V_OK);
	if (lis_check_acts() && timer_due(lis_due()) == first && n < MAX_ACTS)
		ADD(ACT_FIRE_LIS, 0, V_OK);
#undef ADD
	return n;
}

static const char *const var_name[] = {
	"deliver",	"lose",		 "refuse-for-now", "refuse",
	"refuse-stale", "refuse-unseen", "deliver-copied"};

/* What @x is, for a replay's list of the actions it may take next. */
static void act_label(const struct act *x, char *buf, size_t len)
{
	static const char *const kind[] = {
		"A.connect", "A.destroy", "B.connect",	  "B.giveup",
		"B.bound",   "B.resend",  "B.kill",	  "B.start",
		"",	     "fire conn", "fire listener"};
	const struct msg *m = &w.fl[x->arg];

	if (x->kind == ACT_DELIVER)
		snprintf(buf, len, "%s %s%s%s%s %s%d.%d k%u", var_name[x->var],
			 msg_name[m->type], m->dead ? "(dead)" : "",
			 m->copy ? "(copy)" : "", m->end ? "(end)" : "",
			 m->to_b ? ">B" : ">A", m->att, m->gen, m->kid);
	else if (x->kind == ACT_B_KILL || x->kind == ACT_B_START ||
		 x->kind == ACT_FIRE_LIS)
		snprintf(buf, len, "%s", kind[x->kind]);
	else
		snprintf(buf, len, "%s%d", kind[x->kind], x->arg);
}

static void apply(const struct act *x)
{
	enum variant x_var = (enum variant)x->var;
	struct msg m;
	int j;

	w.cur_act = x->kind;
	w.cur_msg = 0xff;
	switch (x->kind) {
	case ACT_A_CONNECT:
		j = x->arg;
		note("\n    A.connect%d", j);
		w.a[j].st = AS_WAIT;
		w.a[j].start = w.now;
		w.a[j].epoch = w.kills;
		w.a_made++;
		CHECK(!p2p_connect(w.a[j].id), "rdma_connect %d: %s", j,
		      strerror(errno));
		break;
	case ACT_A_DESTROY:
		j = x->arg;
		note("\n    A.destroy%d", j);
		if (w.a[j].st == AS_WAIT)
			a_ended_unanswered(j);
		w.a[j].destroyed = true;
		rdma_destroy_qp(w.a[j].id);
		CHECK(!rdma_destroy_id(w.a[j].id), "rdma_destroy_id: %s",
		      strerror(errno));
		w.a[j].id = NULL;
		break;
	case ACT_B_CONNECT:
		note("\n    B.connect%d", w.b_made);
		b_connect();
		break;
	case ACT_B_GIVEUP:
	case ACT_B_BOUND:
		j = x->arg;
		if (x->kind == ACT_B_BOUND && w.b[j].due > w.now)
			w.now = w.b[j].due;
		note("\n    B.%s%d",
		     x->kind == ACT_B_BOUND ? "bound" : "giveup", j);
		b_withdraw(j);
		b_done(j, x->kind == ACT_B_BOUND ? "bound over" : "gave up");
		break;
	case ACT_B_RESEND:
		j = x->arg;
		if (w.b[j].refused_at + RETRY_MS > w.now)
			w.now = w.b[j].refused_at + RETRY_MS;
		note("\n    B.resend%d", j);
		if (w.now >= w.b[j].refused_since + REFUSED_MS)
			b_done(j, "rejected (refused too long)");
		else
			b_send_req(j);
		break;
	case ACT_B_KILL:
		note("\n    B.kill");
		b_kill();
		break;
	case ACT_B_START:
		note("\n    B.start");
		w.b_up = true;
		w.b_inc++;
		w.b_number = 0;
		break;
	case ACT_DELIVER:
		m = w.fl[x->arg];
		flight_del(x->arg);
		/* What states an incarnation: a REQ, REP or NOTICE from B. */
		if (from_b_process(&m)) {
			w.stale = m.inc < w.heard_inc;
			if (m.inc > w.heard_inc)
				w.heard_inc = m.inc;
		}
		note("\n    %s %s%s%s%s %s%d.%d k%u", var_name[x->var],
		     msg_name[m.type], m.dead ? "(dead)" : "",
		     m.copy ? "(copy)" : "", m.end ? "(end)" : "",
		     m.to_b ? ">B " : ">A ", m.att, m.gen, m.kid);
		if (x->var != V_OK && x->var != V_COPIED)
			w.faults++;
		w.cur_msg = m.type;
		w.cur_end = m.end;
		if (m.to_b)
			b_receive(&m, x_var);
		else
			a_receive(&m, x_var);
		break;
	case ACT_FIRE_CONN:
		j = x->arg;
		note("\n    fire conn%d", j);
		fire(&conn_of(j)->timer, conn_due(j), j);
		/* A wait the timer let go on stays within the bound. */
		CHECK(!a_waits(j) || w.now - w.a[j].start < MAX_END_MS,
		      "connect %d still waits %lld ms after it began", j,
		      (long long)(w.now - w.a[j].start));
		return;
	case ACT_FIRE_LIS:
		note("\n    fire listener");
		w.lis_was_armed = false;
		fire(&w.lis->timer, lis_due(), -1);
		return;
	}
	settle();
	w.stale = false;
	w.cur_msg = 0xff;
	w.cur_end = false;
}

/* --- invariants and the end of a schedule ------------------------------- */

static void check_invariants(void)
{
	struct cma_p2p_held *h;
	unsigned int held;
	uint32_t dead = 0;
	int j;

	cma_p2p_lock();
	held = w.lis->held.len;
	for (h = cma_p2p_held_first(w.lis); h && !dead;
	     h = cma_list_next(h, lnode))
		if (h->handle < MAX_KIDS && named_dead(&w.kid[h->handle]))
			dead = h->handle;
	cma_p2p_unlock();
	CHECK(!dead,
	      "A holds B's REQ %d.%d (kernel id %u), which a NOTICE named "
	      "dead",
	      w.kid[dead].att, w.kid[dead].gen, dead);
	for (j = 0; j < NA; j++) {
		struct cma_p2p_conn *c = conn_of(j);

		/* Every REQ B's CM refused as stale is followed by a NOTICE. */
		CHECK(!w.a[j].notice_due,
		      "connect %d's REQ on kernel id %u was refused as stale "
		      "and A tells B nothing",
		      j, w.a[j].notice_due);
		/*
		 * And every connect that ended unanswered, so that no late
		 * copy of its REQs stays held or adopted at B; no other.
		 */
		CHECK(w.a[j].end_sent || !w.a[j].end_due,
		      "connect %d ended unanswered and A names none of its "
		      "REQs (up to %u) dead",
		      j, w.a[j].last_number);
		CHECK(!w.a[j].end_sent || w.a[j].end_due,
		      "A names connect %d's REQs dead, which has not ended "
		      "unanswered",
		      j);
		if (!c)
			continue;
		CHECK(c->state != CMA_P2P_ADOPTING || !c->registered,
		      "connect %d left ADOPTING", j);
		/* A wait with no timer to bound it could last for ever. */
		CHECK(!a_waits(j) || timer_armed(&c->timer),
		      "connect %d waits (state %d) with no timer armed", j,
		      c->state);
		/* No request is held while a connect of its pair waits. */
		CHECK(!(c->registered && c->state == CMA_P2P_WAIT_PEER && held),
		      "connect %d waits while %u requests are held", j, held);
	}
}

/*
 * Both sides have attempts waiting for the other once nothing else can
 * happen but a bound running out: they should have paired.
 */
static void check_no_missed_pair(void)
{
	const struct kid_info *k;
	bool dead;
	int i, j;

	for (j = 0; j < NA; j++) {
		/*
		 * B lower: a connect that adopted a REQ B has moved on from
		 * waits too, for an RTU that never comes (its REP's retries
		 * end it, a minute on).
		 */
		k = w.a[j].id && kid_of(w.a[j].id) < MAX_KIDS
			    ? &w.kid[kid_of(w.a[j].id)]
			    : NULL;
		dead = w.a[j].st == AS_WAIT && k && k->role == K_BREQ &&
		       k->st == KS_ACCEPTED && !k->term &&
		       !(b_current(k->att) && w.b[k->att].gen == k->gen);
		if (!a_waits(j) && !dead)
			continue;
		for (i = 0; i < w.b_made; i++) {
			if (!(w.b[i].st == BS_PENDING ||
			      w.b[i].st == BS_RESEND ||
			      w.b[i].st == BS_NOTICE || w.b[i].st == BS_WAIT))
				continue;
			/* Told apart by cause: each is reported on its own. */
			CHECK(!dead || k->inc == w.b_inc,
			      "connect %d (its adoption of B's REQ %d.%d from "
			      "B's killed process) and B's attempt %d (%s) "
			      "both wait, unpaired",
			      j, k->att, k->gen, i, b_state_name[w.b[i].st]);
			CHECK(!dead || !w.end_lost[k->att],
			      "connect %d (its adoption of B's REQ %d.%d, the "
			      "end NOTICE naming it lost) and B's attempt %d "
			      "(%s) both wait, unpaired",
			      j, k->att, k->gen, i, b_state_name[w.b[i].st]);
			violation("connect %d%s and B's attempt %d (%s) both "
				  "wait, unpaired",
				  j,
				  dead ? " (its adoption of a dead REQ)" : "",
				  i, b_state_name[w.b[i].st]);
		}
	}
	/* B higher: the same of B's adoption of a REQ A has moved on from. */
	for (i = 0; i < w.b_made; i++) {
		if (w.b[i].st != BS_REPSENT)
			continue;
		k = kinfo(w.b[i].kid);
		if (!k->term && k->st != KS_GONE)
			continue;
		for (j = 0; j < NA; j++) {
			if (!a_waits(j))
				continue;
			CHECK(!w.a[k->att].end_unheard,
			      "B's attempt %d (its adoption of A's REQ %d.%d, "
			      "the end NOTICE naming it unheard) and connect "
			      "%d both wait, unpaired",
			      i, k->att, k->gen, j);
			violation("B's attempt %d (its adoption of a dead REQ) "
				  "and connect %d both wait, unpaired",
				  i, j);
		}
	}
}

/* The completion's next step: the fair way on, timers last. */
static bool next_completion(struct act *x)
{
	int64_t best = INT64_MAX, due;
	int i, j;

	/*
	 * The applications first, so that what is left of the schedule runs
	 * with as much under way at once as it can: every connect made, B up
	 * again; then the wire, then the timers.  On the wire, NOTICEs
	 * first, and a refusal of B's REQ reaches B after its CM copied the
	 * REQ (an order, no fault): so that a completion with a NOTICE has a
	 * copy of a REQ it names come after it, to be refused as it comes.
	 */
	x->var = V_OK;
	if (!w.b_up && b_may_start()) {
		x->kind = ACT_B_START;
		return true;
	}
	if (w.b_up && w.b_made < NB) {
		x->kind = ACT_B_CONNECT;
		return true;
	}
	if (w.a_made < NA) {
		x->kind = ACT_A_CONNECT;
		x->arg = (uint8_t)w.a_made;
		return true;
	}
	for (i = 0; i < w.nfl; i++) {
		if (deliverable(i) && w.fl[i].type == M_NOTICE) {
			x->kind = ACT_DELIVER;
			x->arg = (uint8_t)i;
			return true;
		}
	}
	for (i = 0; i < w.nfl; i++) {
		if (deliverable(i) && !w.fl[i].slow) {
			x->kind = ACT_DELIVER;
			x->arg = (uint8_t)i;
			if (copy_matters(&w.fl[i]))
				x->var = V_COPIED;
			return true;
		}
	}
	for (i = 0; i < NB; i++) {
		if (w.b[i].st == BS_RESEND) {
			x->kind = ACT_B_RESEND;
			x->arg = (uint8_t)i;
			return true;
		}
	}
	for (j = 0; j < NA; j++) {
		if (conn_timer_armed(j) && conn_class(conn_of(j)) == T_RETRY) {
			x->kind = ACT_FIRE_CONN;
			x->arg = (uint8_t)j;
			return true;
		}
	}
	/*
	 * A CM's retries of a REP nobody answers run out last: an adoption
	 * of a dead REQ waits until then.
	 */
	check_no_missed_pair();
	for (i = 0; i < w.nfl; i++) {
		if (deliverable(i)) {
			x->kind = ACT_DELIVER;
			x->arg = (uint8_t)i;
			return true;
		}
	}
	if (lis_check_acts()) {
		best = w.lis_armed_at + CMA_P2P_PROBE_MS;
		x->kind = ACT_FIRE_LIS;
	}
	for (j = 0; j < NA; j++) {
		if (!conn_timer_armed(j))
			continue;
		due = conn_due(j);
		if (due < best) {
			best = due;
			x->kind = ACT_FIRE_CONN;
			x->arg = (uint8_t)j;
		}
	}
	for (i = 0; i < NB; i++) {
		if ((w.b[i].st == BS_PENDING || w.b[i].st == BS_WAIT) &&
		    w.b[i].due < best) {
			best = w.b[i].due;
			x->kind = ACT_B_BOUND;
			x->arg = (uint8_t)i;
		}
	}
	return best != INT64_MAX;
}

static void complete(void)
{
	struct act x;
	int steps;

	note("\n  completion:");
	for (steps = 0; next_completion(&x); steps++) {
		CHECK(steps < 1000, "the schedule never comes to rest");
		apply(&x);
	}
}

static const char *const kid_role_name[] = {
	"A's own",    "B's request",   "A's REQ",
	"A's NOTICE", "A's companion", "B's NOTICE at A's companion"};

/* What rdma_cm_p2p(7) promises, checked once everything came to rest. */
static void finish(void)
{
	bool expected[MAX_KIDS] = {false};
	struct fake_kid *fk;
	uint32_t h;
	int i, j, guard;

	for (j = 0; j < NA; j++) {
		struct a_att *a = &w.a[j];

		/* Every connect ends exactly once (a_end: never twice). */
		CHECK(a->destroyed || a->st == AS_ENDED,
		      "connect %d never ended", j);
		if (!a->established)
			continue;
		/* One connection: ESTABLISHED on both ends, with each other. */
		i = a->b_partner;
		CHECK(w.b[i].a_partner == j,
		      "connect %d formed with B's attempt %d, which paired "
		      "with %d",
		      j, i, w.b[i].a_partner);
		CHECK(w.b[i].formed || !strcmp(w.b[i].end, "killed"),
		      "connect %d is established, B's attempt %d is not (%s)",
		      j, i, w.b[i].end ? w.b[i].end : b_state_name[w.b[i].st]);
	}
	for (i = 0; i < w.b_made; i++) {
		j = w.b[i].a_partner;
		if (!w.b[i].formed)
			continue;
		CHECK(j >= 0 && (w.a[j].established || w.a[j].destroyed),
		      "B's attempt %d is established, connect %d is not", i, j);
	}
	/* The application lets go of what did not form. */
	for (j = 0; j < NA; j++) {
		if (!w.a[j].id || (w.a[j].established && !w.a[j].disconnected))
			continue;
		rdma_destroy_qp(w.a[j].id);
		CHECK(!rdma_destroy_id(w.a[j].id), "rdma_destroy_id: %s",
		      strerror(errno));
		w.a[j].id = NULL;
	}
	settle();
	for (guard = 0; guard < 10; guard++)
		for (j = 0; j < NA; j++)
			if (conn_timer_armed(j))
				fire(&conn_of(j)->timer, w.now, j);
	for (j = 0; j < NA; j++)
		CHECK(!conn_timer_armed(j), "connect %d's timer still armed",
		      j);
	cma_p2p_lock();
	h = w.lis->held.len;
	cma_p2p_unlock();
	CHECK(!h, "%u requests left held", h);
	CHECK(!timer_armed(&w.lis->timer), "the listener's timer left armed");
	/*
	 * No kernel id left but the listener's, the connections' and the
	 * companion listener's (it lasts while A's listener does): every
	 * NOTICE's is gone.
	 */
	expected[kid_of(listener)] = true;
	if (w.comp_kid)
		expected[w.comp_kid] = true;
	for (j = 0; j < NA; j++) {
		if (!w.a[j].id)
			continue;
		h = kid_of(w.a[j].id);
		CHECK(h < MAX_KIDS && fake_ucma_kid_live(h, 0),
		      "connect %d's kernel id %u is gone", j, h);
		expected[h] = true;
	}
	for (h = 1; (fk = fake_ucma_kid(h)); h++)
		CHECK(!fk->live || (h < MAX_KIDS && expected[h]),
		      "kernel id %u (%s) left behind", h,
		      h >= MAX_KIDS ? "?" : kid_role_name[w.kid[h].role]);
}

/* --- the state a prefix reached ------------------------------------------ */

static uint64_t hash_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

/* A kernel id by what it is to the schedule, not by its number. */
static uint64_t kid_label(uint32_t kid)
{
	const struct kid_info *k;
	uint64_t h;

	if (!kid || kid >= MAX_KIDS)
		return kid ? 0xffff : 0;
	k = &w.kid[kid];
	h = (uint64_t)k->end << 48 | (uint64_t)k->inc << 40 |
	    (uint64_t)k->copy << 32 | (uint64_t)k->role << 24 |
	    (uint64_t)k->att << 16 | (uint64_t)k->gen << 8 |
	    (uint64_t)k->st << 2 | (uint64_t)k->dead << 1 | k->term;
	return h;
}

static uint64_t state_hash(void)
{
	uint64_t h = hash_mix(0, w.cfg), cm[MAX_FLIGHT], t;
	struct cma_p2p_held *held;
	int i, j, n;

	h = hash_mix(h, (uint64_t)w.now);
	h = hash_mix(h, (uint64_t)w.a_made << 32 | (uint64_t)w.b_made << 24 |
				(uint64_t)w.b_up << 16 |
				(uint64_t)w.b_inc << 8 |
				(uint64_t)w.kills << 4 | (uint64_t)w.faults);
	for (i = 0; i < NB; i++)
		h = hash_mix(h, (uint64_t)w.end_lost[i] << 16 |
					(uint64_t)w.a_floor[i] << 8 |
					(i < NA ? w.b_floor[i] : 0));
	for (j = 0; j < NA; j++) {
		const struct a_att *a = &w.a[j];
		const struct cma_p2p_conn *c = conn_of(j);

		h = hash_mix(h, (uint64_t)a->st << 40 |
					(uint64_t)a->destroyed << 32 |
					(uint64_t)a->established << 24 |
					(uint64_t)a->disconnected << 16 |
					(uint64_t)(a->end_ev & 0xff) << 8 |
					(uint64_t)(a->b_partner + 1));
		h = hash_mix(h, (uint64_t)(a->refused_at - w.now));
		h = hash_mix(h, (uint64_t)(a->notice_end < 0
						   ? -1
						   : a->notice_end - w.now)
						<< 16 |
					(uint64_t)a->heard << 8 |
					(uint64_t)(a->qp_att + 1) << 2 |
					(uint64_t)a->reset << 1 | a->unadopted);
		h = hash_mix(h, (uint64_t)a->end_unheard << 3 |
					(uint64_t)a->answered << 2 |
					(uint64_t)a->end_due << 1 |
					a->end_sent);
		if (!c)
			continue;
		h = hash_mix(h, (uint64_t)c->state << 40 |
					(uint64_t)c->registered << 32 |
					(uint64_t)c->route << 24 |
					(uint64_t)c->bound << 16 |
					(uint64_t)c->nretired << 8 |
					(uint64_t)c->qp_err_due << 4 |
					(uint64_t)c->peer_gone << 2 |
					(uint64_t)c->gave_up << 1 |
					timer_armed(&c->timer) |
					(uint64_t) !!c->notice_serial << 48);
		h = hash_mix(h, c->bound_ns - CLOCK_BASE_NS -
					(uint64_t)w.now * 1000000);
		h = hash_mix(h, kid_label(kid_of(w.a[j].id)));
	}
	for (i = 0; i < NB; i++) {
		const struct b_att *b = &w.b[i];

		h = hash_mix(h, (uint64_t)b->st << 40 | (uint64_t)b->gen << 32 |
					(uint64_t)b->inc << 24 |
					(uint64_t)b->formed << 16 |
					(uint64_t)(b->a_partner + 1));
		h = hash_mix(h, kid_label(b->kid));
		h = hash_mix(h, (uint64_t)(b->due - w.now));
		h = hash_mix(h, (uint64_t)(b->refused_since - w.now));
		h = hash_mix(h, (uint64_t)(b->refused_at - w.now));
	}
	for (i = 0; i < w.nb_held; i++)
		h = hash_mix(h, kid_label(w.b_held[i].kid) << 2 |
					(uint64_t)w.b_held[i].copy << 1 |
					w.b_held[i].dead);
	cma_p2p_lock();
	for (held = cma_p2p_held_first(w.lis); held;
	     held = cma_list_next(held, lnode))
		h = hash_mix(h, kid_label(held->handle));
	cma_p2p_unlock();
	h = hash_mix(h, (uint64_t)timer_armed(&w.lis->timer) << 32 |
				(uint64_t)(w.lis_armed_at - w.now));
	/*
	 * The messages in flight as a set of connections, each in its order:
	 * which connection's message was sent first changes nothing.
	 */
	for (i = 0, n = 0; i < w.nfl; i++) {
		const struct msg *m = &w.fl[i];
		int pos = 0;

		for (j = 0; j < i; j++)
			pos += w.fl[j].to_b == m->to_b &&
			       w.fl[j].chan == m->chan;
		t = (uint64_t)m->type << 56 | (uint64_t)m->to_b << 55 |
		    (uint64_t)m->dead << 54 | (uint64_t)m->kind << 46 |
		    (uint64_t)m->att << 40 | (uint64_t)m->gen << 32 |
		    (uint64_t)m->inc << 28 | (uint64_t)pos << 24 |
		    (uint64_t)(m->ev & 0xff) << 16 |
		    (uint64_t)(m->status & 0xffff);
		t = hash_mix(t, (uint64_t)before_kill(m) << 4 |
					(uint64_t)m->end << 3 |
					(uint64_t)m->copy << 2 |
					(uint64_t)m->slow << 1);
		/* B's NOTICE is by whose and which REQ it names (in @t). */
		cm[n++] = hash_mix(t, m->kid		    ? kid_label(m->kid)
				      : m->type == M_NOTICE ? 0
							    : m->chan);
	}
	/* Sorted, so that the order across connections does not count. */
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && cm[j - 1] > cm[j]; j--) {
			t = cm[j];
			cm[j] = cm[j - 1];
			cm[j - 1] = t;
		}
	for (i = 0; i < n; i++)
		h = hash_mix(h, cm[i]);
	return h;
}

/* --- one schedule, in its own process ------------------------------------ */

static void run_schedule(enum cfg cfg, const uint8_t *choice, int len)
{
	struct act acts[MAX_ACTS];
	int d, n;

	memset(&w, 0, sizeof(w));
	w.cfg = cfg;
	w.cur_msg = 0xff;
	world_setup();
	settle();
	note("\n  prefix:");
	for (d = 0; d < len; d++) {
		n = enabled(acts);
		CHECK(choice[d] < n,
		      "replay diverged at step %d: %d actions, choice %d", d, n,
		      choice[d]);
		apply(&acts[choice[d]]);
	}
	rep.nact = enabled(acts);
	rep.hash = state_hash();
	for (d = 0; replaying && d < rep.nact; d++) {
		char label[64];

		act_label(&acts[d], label, sizeof(label));
		note("%s %d: %s", d ? "," : "\n  enabled then:", d, label);
	}
	complete();
	finish();
	rep.ok = 1;
	rep.cov = w.cov;
	if (replaying)
		snprintf(rep.msg, sizeof(rep.msg), "schedule:%s", w.trace);
	write_all(report_fd, &rep, sizeof(rep));
	_exit(0);
}

/* A schedule's process, its report on the way. */
struct job {
	pid_t pid;
	int fd;
};

static void start_child(struct job *jb, enum cfg cfg, const uint8_t *choice,
			int len)
{
	int fds[2];

	ck_assert_int_eq(pipe(fds), 0);
	jb->pid = fork();
	ck_assert_int_ge(jb->pid, 0);
	if (!jb->pid) {
		close(fds[0]);
		report_fd = fds[1];
		/* A schedule that hangs is a failure too, not a stuck suite. */
		alarm(SANITIZED ? 60 : 20);
		run_schedule(cfg, choice, len);
	}
	close(fds[1]);
	jb->fd = fds[0];
}

static int finish_child(struct job *jb, struct report *out)
{
	size_t got = 0;
	ssize_t n;
	int status;

	while (got < sizeof(*out)) {
		n = read(jb->fd, (char *)out + got, sizeof(*out) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(jb->fd);
	while (waitpid(jb->pid, &status, 0) < 0 && errno == EINTR)
		;
	if (got < sizeof(*out)) {
		out->ok = 0;
		out->kind = 1;
		snprintf(out->msg, sizeof(out->msg),
			 "the schedule's process died (%s %d) without a report",
			 WIFSIGNALED(status) ? "signal" : "exit status",
			 WIFSIGNALED(status) ? WTERMSIG(status)
					     : WEXITSTATUS(status));
	} else if (out->ok && (!WIFEXITED(status) || WEXITSTATUS(status))) {
		/* A sanitizer's report after the checks passed. */
		out->ok = 0;
		out->kind = 2;
		snprintf(out->msg, sizeof(out->msg),
			 "the schedule's process ended with status 0x%x",
			 status);
	}
	return out->ok;
}

/* --- the explorer -------------------------------------------------------- */

/*
 * States met, each with the most steps left when it was expanded: a state
 * met again with no more steps left is not expanded again.
 */
struct seen {
	uint64_t *key;
	uint8_t *left;
	size_t cap, n;
};

static bool seen_visit(struct seen *s, uint64_t key, int left)
{
	size_t i;

	key |= 1; /* 0 marks an empty slot */
	for (i = key & (s->cap - 1); s->key[i]; i = (i + 1) & (s->cap - 1)) {
		if (s->key[i] != key)
			continue;
		if (s->left[i] >= left)
			return false;
		s->left[i] = (uint8_t)left;
		return true;
	}
	ck_assert_uint_lt(s->n, s->cap / 2);
	s->key[i] = key;
	s->left[i] = (uint8_t)left;
	s->n++;
	return true;
}

#define MAX_FAILS 8

struct explorer {
	enum cfg cfg;
	int depth;
	unsigned long schedules, failed;
	uint8_t choice[MAX_DEPTH];
	struct seen seen;
	struct report r;
	uint32_t cov;
	/* Each kind of violation once, by its shortest schedule. */
	struct {
		uint64_t kind;
		int len;
		char msg[sizeof(((struct report *)0)->msg)];
	} fails[MAX_FAILS];
	int nfails;
};

static void record_failure(struct explorer *x, int len, const struct report *r)
{
	size_t at;
	int i;

	x->failed++;
	for (i = 0; i < x->nfails && x->fails[i].kind != r->kind; i++)
		;
	if (i == MAX_FAILS || (i < x->nfails && x->fails[i].len <= len))
		return;
	if (i == x->nfails)
		x->nfails++;
	x->fails[i].kind = r->kind;
	x->fails[i].len = len;
	/* The choices too: P2P_INTERLEAVE_REPLAY runs that schedule alone. */
	at = (size_t)snprintf(x->fails[i].msg, sizeof(x->fails[i].msg),
			      "P2P_INTERLEAVE_REPLAY=%s:",
			      x->cfg == B_LOWER ? "lower" : "higher");
	for (int d = 0; d < len; d++)
		at += (size_t)snprintf(x->fails[i].msg + at,
				       sizeof(x->fails[i].msg) - at, "%s%u",
				       d ? "," : "", x->choice[d]);
	snprintf(x->fails[i].msg + at, sizeof(x->fails[i].msg) - at, "\n  %s",
		 r->msg);
}

/* How many schedules run at once (P2P_INTERLEAVE_JOBS). */
static int jobs = 2;

/*
 * Depth first: the prefix x->choice[0..len) ran, its report is @r; each
 * action it enabled is run next, unless its state was expanded already
 * with as many steps left.  Siblings run @jobs at a time, and are judged
 * in order afterwards, so the search is the one a single runner makes.  A
 * schedule that fails is not extended; the search goes on, to tell every
 * kind of violation the bound reaches.
 */
static void expand(struct explorer *x, int len, const struct report *r)
{
	struct report *kids;
	struct job jb[8];
	int i, k, n;

	if (!r->ok) {
		record_failure(x, len, r);
		return;
	}
	x->cov |= r->cov;
	if (!seen_visit(&x->seen, r->hash, x->depth - len) || len == x->depth)
		return;
	n = r->nact;
	kids = malloc(sizeof(*kids) * (size_t)(n ? n : 1));
	ck_assert_ptr_nonnull(kids);
	for (i = 0; i < n; i += jobs) {
		for (k = i; k < n && k < i + jobs; k++) {
			x->choice[len] = (uint8_t)k;
			start_child(&jb[k - i], x->cfg, x->choice, len + 1);
		}
		for (k = i; k < n && k < i + jobs; k++)
			finish_child(&jb[k - i], &kids[k]);
		x->schedules += (unsigned long)(k - i);
	}
	for (i = 0; i < n; i++) {
		x->choice[len] = (uint8_t)i;
		expand(x, len + 1, &kids[i]);
	}
	free(kids);
}

static void explore(struct explorer *x)
{
	struct job jb;

	start_child(&jb, x->cfg, x->choice, 0);
	finish_child(&jb, &x->r);
	x->schedules++;
	expand(x, 0, &x->r);
}

static int env_int(const char *name, int dflt, int lo, int hi)
{
	const char *v = getenv(name);
	long n;

	if (!v || !*v)
		return dflt;
	n = strtol(v, NULL, 10);
	return n < lo ? lo : n > hi ? hi : (int)n;
}

/*
 * The default depth keeps a plain -O2 build within about half a minute for
 * both configurations on a loaded two-CPU machine (a schedule is a fork and
 * a thread's start: 5 to 15 ms there), the sanitizer builds too.  The
 * floors are what the default depth explores, less a margin, and so is
 * what it must reach.
 */
#define DEPTH_PLAIN 5
#define DEPTH_SANITIZED 3

/*
 * P2P_INTERLEAVE_REPLAY=lower:0,3,1 (as a violation prints it): that
 * schedule of that configuration alone, with its trace.
 */
static bool replay(enum cfg cfg)
{
	const char *v = getenv("P2P_INTERLEAVE_REPLAY");
	const char *name = cfg == B_LOWER ? "lower:" : "higher:";
	uint8_t choice[MAX_DEPTH];
	struct report *r;
	struct job jb;
	int len = 0;
	char *end;

	if (!v || !*v)
		return false;
	if (strncmp(v, name, strlen(name)))
		return true; /* the other configuration's */
	for (v += strlen(name); *v && len < MAX_DEPTH; v = end) {
		choice[len++] = (uint8_t)strtoul(v, &end, 10);
		if (*end == ',')
			end++;
		else if (*end)
			break;
	}
	r = calloc(1, sizeof(*r));
	ck_assert_ptr_nonnull(r);
	replaying = true;
	setenv("RDMA_CM_P2P_HOLD_MS", "10000", 1);
	start_child(&jb, cfg, choice, len);
	finish_child(&jb, r);
	printf("p2p interleave (B %s), replay: %s\n",
	       cfg == B_LOWER ? "lower" : "higher", r->msg);
	fflush(stdout);
	ck_assert_msg(r->ok, "the schedule fails");
	free(r);
	return true;
}

static void explore_cfg(enum cfg cfg, unsigned long floor_plain,
			unsigned long floor_sanitized, uint32_t must_cover)
{
	struct explorer *x = calloc(1, sizeof(*x));
	struct timespec t0;
	/*
	 * B lower: a round more.  Its states grow slower with the depth
	 * (B higher's 6 takes four times its 5), and B's attempt must
	 * connect before A adopts anything.
	 */
	int dflt =
		(SANITIZED ? DEPTH_SANITIZED : DEPTH_PLAIN) + (cfg == B_LOWER);
	char missed[256] = "";
	int c;

	max_faults = env_int("P2P_INTERLEAVE_FAULTS", 1, 0, 8);
	max_kills = env_int("P2P_INTERLEAVE_KILLS", 1, 0, 4);
	jobs = env_int("P2P_INTERLEAVE_JOBS", 2, 1, 8);
	if (replay(cfg)) {
		free(x);
		return;
	}
	ck_assert_ptr_nonnull(x);
	x->cfg = cfg;
	x->depth = env_int("P2P_INTERLEAVE_DEPTH", dflt, 0, MAX_DEPTH);
	x->seen.cap = 1u << 21;
	x->seen.key = calloc(x->seen.cap, sizeof(*x->seen.key));
	x->seen.left = calloc(x->seen.cap, 1);
	ck_assert(x->seen.key && x->seen.left);
	setenv("RDMA_CM_P2P_HOLD_MS", "10000", 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	explore(x);
	printf("p2p interleave (B %s): %lu schedules, %zu states, depth %d, "
	       "%d faults, %d kills, %.1f s, %lu failed\n",
	       cfg == B_LOWER ? "lower" : "higher", x->schedules, x->seen.n,
	       x->depth, max_faults, max_kills, unit_ms_since(&t0) / 1000.0,
	       x->failed);
	printf("  reached:");
	for (c = 0; c < COV_COUNT; c++)
		if (x->cov & 1u << c)
			printf(" %s", cov_name[c]);
	printf("\n");
	for (c = 0; c < COV_COUNT; c++)
		if (!(x->cov & 1u << c) && (must_cover & 1u << c))
			snprintf(missed + strlen(missed),
				 sizeof(missed) - strlen(missed), " %s",
				 cov_name[c]);
	fflush(stdout);
	for (c = 0; c < x->nfails; c++)
		printf("VIOLATION (B %s, %d steps chosen): %s\n",
		       cfg == B_LOWER ? "lower" : "higher", x->fails[c].len,
		       x->fails[c].msg);
	fflush(stdout);
	ck_assert_msg(!x->failed, "B %s: %lu schedules fail, %d kinds",
		      cfg == B_LOWER ? "lower" : "higher", x->failed,
		      x->nfails);
	if (x->depth >= dflt && max_faults >= 1 && max_kills >= 1) {
		ck_assert_uint_ge(x->schedules,
				  SANITIZED ? floor_sanitized : floor_plain);
		if (!SANITIZED)
			ck_assert_msg(!missed[0], "never reached:%s", missed);
	}
	free(x->seen.key);
	free(x->seen.left);
	free(x);
}

START_TEST(b_lower_every_interleaving)
{
	explore_cfg(B_LOWER, 800, 50,
		    1u << COV_ESTABLISHED | 1u << COV_ADOPT_HELD |
			    1u << COV_ADOPT_ARRIVING | 1u << COV_DEAD_PASSED |
			    1u << COV_DEAD_DROPPED | 1u << COV_BOUND |
			    1u << COV_PEER_REJECTED | 1u << COV_REFORMED |
			    1u << COV_NOTICE | 1u << COV_HEARD |
			    1u << COV_COPY_TAKEN | 1u << COV_LATE_COPY |
			    1u << COV_REFUSED_COPY | 1u << COV_FLOOR |
			    1u << COV_UNADOPTED | 1u << COV_UNADOPTED_KEPT |
			    1u << COV_END_NOTICE | 1u << COV_END_UNADOPTED |
			    1u << COV_END_REFUSED);
}
END_TEST

START_TEST(b_higher_every_interleaving)
{
	explore_cfg(B_HIGHER, 1500, 70,
		    1u << COV_ESTABLISHED | 1u << COV_RESEND |
			    1u << COV_WITHDRAW | 1u << COV_BOUND |
			    1u << COV_PEER_REJECTED | 1u << COV_REFORMED |
			    1u << COV_NOTICE | 1u << COV_HEARD |
			    1u << COV_UNHEARD | 1u << COV_COPY_TAKEN |
			    1u << COV_UNADOPTED | 1u << COV_END_NOTICE |
			    1u << COV_END_UNADOPTED | 1u << COV_END_REFUSED);
}
END_TEST

/* --- what the checker found, as deterministic tests -------------------- */

/*
 * Found by the checker (B lower; schedule: B.connect0, B.kill, A.connect0,
 * then B's dead REQ arrives, B starts again and the new process's first
 * REQ arrives).  A connect made after the peer's old process died can only
 * be waiting for the new one, yet that process's first REQ failed it
 * (REJECTED, -ECONNRESET, as if it waited for the old one) and was held
 * for a later connect instead: a live attempt on each side, and no
 * connection between them.  A connect waiting for the peer's REQ now
 * belongs to no process of the peer's, and adopts it.
 */
START_TEST(connect_made_after_a_peer_restart_pairs_with_the_new_process)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	uint32_t old, req;

	/* The old process's REQ, held, then given up as the process died. */
	req_incarnation = 0xaaaa;
	old = peer_request("192.0.2.0", 0, "old");
	expect_nothing();
	fake_ucma_kill_kid(old);
	/* Our connect, made after that, passes the dead request over. */
	id = connecting_id("192.0.2.0");
	ck_assert_int_eq(p2p_connect(id), 0);
	expect_nothing();
	ck_assert_int_eq(fake_ucma_count(RDMA_USER_CM_CMD_REJECT), 1);
	/* The new process's first REQ is the one it waits for. */
	req_incarnation = 0xbbbb;
	req = peer_request("192.0.2.0", 0, "new");
	if (!rdma_get_cm_event(ch, &ev))
		ck_abort_msg("the connect ends: %s, status %d",
			     rdma_event_str(ev->event), ev->status);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_uint_eq(kid_of(id), req);
	established_with(id, req, "new");
}
END_TEST

/*
 * LIBRARY BUG found by the checker (B lower, P2P_INTERLEAVE_REPLAY=
 * lower:0,1,1,6,4,4: our CM refuses the peer's REQ unseen while the
 * peer's CM sends a copy; the peer's process is killed; a connect of
 * ours adopts the copy, its REP going to a CM done with that REQ).  The
 * peer's new process then shows itself with a REQ from another QP.  The
 * adoption of the old process's REQ is not established and never will
 * be, and no NOTICE can name it (a dead process sends none), yet the
 * restart only disconnects it, which sends nothing before the RTU: the
 * connect waits, out of the table, until its REP's retries end it about
 * a minute later, while the new process's REQ is held for nobody.  The
 * restart should undo it as a NOTICE would, and the connect adopt the
 * new process's REQ, as it now does (cma_p2p_peer_gone).
 */
START_TEST(restart_undoes_an_adoption_of_the_old_process)
{
	struct rdma_cm_id *id;
	uint32_t copy, req;

	id = connecting_id("192.0.2.0");
	ck_assert_int_eq(p2p_connect(id), 0);
	req_incarnation = 0xaaaa;
	req_qpn = 0x100;
	req_number = 1;
	copy = peer_request("192.0.2.0", 0, "old");
	expect_nothing();
	await_cmd(RDMA_USER_CM_CMD_ACCEPT, 1);
	ck_assert_uint_eq(kid_of(id), copy);
	/* The new process, from another QP: the old one's REQ is dead. */
	req_incarnation = 0xbbbb;
	req_qpn = 0x101;
	req = peer_request("192.0.2.0", 0, "new");
	expect_nothing();
	await_on(RDMA_USER_CM_CMD_ACCEPT, req, 1);
	ck_assert_msg(kid_of(id) == req,
		      "the new process's REQ is held for nobody: the adoption "
		      "of the old one's stands");
	ck_assert_int_ge(fake_ucma_first_on(RDMA_USER_CM_CMD_DESTROY_ID, copy),
			 0);
	established_with(id, req, "new");
	req_qpn = 0;
	req_number = 0;
}
END_TEST

/* The peer's REP for our REQ on @kid, from its process @inc, with @data. */
static void peer_answers(uint32_t kid, uint64_t inc, const char *data)
{
	struct cma_p2p_hdr hdr = {.kind = CMA_P2P_REP,
				  .port = P2P_PORT,
				  .incarnation = inc,
				  .data_len = (uint8_t)strlen(data)};
	struct rdma_ucm_event_resp *r;

	fake_ucma_hold();
	r = fake_ucma_event(kid, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	ck_assert_ptr_nonnull(r);
	cma_p2p_hdr_encode(&hdr, r->param.conn.private_data);
	memcpy(r->param.conn.private_data + CMA_P2P_HDR_LEN, data,
	       strlen(data));
	r->param.conn.private_data_len =
		(uint8_t)(CMA_P2P_HDR_LEN + strlen(data));
	r->param.conn.responder_resources = 4;
	r->param.conn.initiator_depth = 4;
	fake_ucma_release();
}

/*
 * LIBRARY BUG found by the checker (B higher, P2P_INTERLEAVE_REPLAY=
 * higher:0,2,5,5,2: A.connect0, B.connect0, REQ and REP delivered,
 * B.kill; then B starts again, both remaining connects of each side are
 * made, and the new process adopts A's REQs in order).  The
 * new process's REP for one of our REQs tells of the restart, and every
 * other connect of ours whose REQ is out is failed (UNREACHABLE,
 * -ECONNRESET) as if the old process had that REQ: here the new process
 * holds it and is about to adopt it.  Nothing says which process has a
 * REQ; a REQ the old one had is refused by its kernel when it dies (a
 * refusal for now) or runs into the bound, so none needs failing here.
 * This test says what should happen; it fails until the library does.
 */
START_TEST(req_sent_to_the_new_process_survives_the_restart)
{
	struct rdma_cm_id *old, *one, *two;
	struct rdma_cm_event *ev;

	old = connecting_id("192.0.2.2");
	ck_assert_int_eq(p2p_connect(old), 0);
	peer_answers(kid_of(old), 0xaaaa, "old");
	rdma_ack_cm_event(expect_event(RDMA_CM_EVENT_ESTABLISHED));
	/* The peer restarts; both REQs reach and are held by the new one. */
	one = connecting_id("192.0.2.2");
	ck_assert_int_eq(p2p_connect(one), 0);
	two = connecting_id("192.0.2.2");
	ck_assert_int_eq(p2p_connect(two), 0);
	/* It adopts the first: the old connection goes, the second waits. */
	peer_answers(kid_of(one), 0xbbbb, "one");
	ev = expect_event(RDMA_CM_EVENT_ESTABLISHED);
	ck_assert_ptr_eq(ev->id, one);
	rdma_ack_cm_event(ev);
	/* (The log is read under the fake's lock: the service thread runs.) */
	await_cmd(RDMA_USER_CM_CMD_DISCONNECT, 1);
	ck_assert_uint_eq(fake_ucma_count(RDMA_USER_CM_CMD_DISCONNECT), 1);
	if (!rdma_get_cm_event(ch, &ev))
		ck_abort_msg("%s %s, status %d", ev->id == two ? "two" : "?",
			     rdma_event_str(ev->event), ev->status);
	ck_assert_int_eq(errno, EAGAIN);
	/* Then the second. */
	peer_answers(kid_of(two), 0xbbbb, "two");
	ev = expect_event(RDMA_CM_EVENT_ESTABLISHED);
	ck_assert_ptr_eq(ev->id, two);
	rdma_ack_cm_event(ev);
}
END_TEST

Suite *p2p_interleave_suite(void)
{
	Suite *s = suite_create("p2p_interleave");
	TCase *tc = tcase_create("explore");

	/*
	 * First: its schedules' processes must not inherit a library in
	 * use, which the deterministic tests below leave when Check runs
	 * them in this process (CK_FORK=no).  Bounded by the depth, not by
	 * Check's clock; the default is short.
	 */
	tcase_set_timeout(tc, 3600);
	tcase_add_test(tc, b_lower_every_interleaving);
	tcase_add_test(tc, b_higher_every_interleaving);
	suite_add_tcase(s, tc);
	tc = tcase_create("found");
	tcase_add_checked_fixture(tc, p2p_peer_fixture, p2p_peer_teardown);
	tcase_add_test(
		tc,
		connect_made_after_a_peer_restart_pairs_with_the_new_process);
	tcase_add_test(tc, req_sent_to_the_new_process_survives_the_restart);
	tcase_add_test(tc, restart_undoes_an_adoption_of_the_old_process);
	suite_add_tcase(s, tc);
	return s;
}
