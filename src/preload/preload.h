/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * librspreload: carries an unmodified program's TCP and UDP sockets over
 * rsockets.  Which file holds which concern: the Layout table of
 * docs/architecture.md.
 *
 * Every descriptor the program sees is a real kernel socket created with
 * the program's own arguments.  When it carries an rsocket the table maps
 * it to the rsocket, and the program's socket calls on it go to the r*
 * functions; the kernel socket only holds the number (and answers fstat and the options
 * rsockets do not know).  When rsockets cannot carry a connection (not an
 * RDMA address, no device, a filtered port) the rsocket is dropped and the
 * kernel socket is used as it is: the fallback needs no descriptor games.
 */
#ifndef RSPRELOAD_H
#define RSPRELOAD_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define RSP_EXPORT __attribute__((visibility("default")))

/* Milliseconds on the monotonic clock. */
static inline uint64_t rsp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The C library's functions we stand in front of. */
struct rsp_real {
	int (*socket)(int, int, int);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*accept)(int, struct sockaddr *, socklen_t *);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*close)(int);
	int (*shutdown)(int, int);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*fcntl)(int, int, ...);
	int (*fcntl64)(int, int, ...);
	int (*ioctl)(int, unsigned long, ...);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*getpeername)(int, struct sockaddr *, socklen_t *);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *,
			    socklen_t *);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*sendto)(int, const void *, size_t, int,
			  const struct sockaddr *, socklen_t);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	ssize_t (*sendfile)(int, int, off_t *, size_t);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *,
		     const sigset_t *);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*pselect)(int, fd_set *, fd_set *, fd_set *,
		       const struct timespec *, const sigset_t *);
	int (*epoll_create)(int);
	int (*epoll_create1)(int);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*epoll_wait)(int, struct epoll_event *, int, int);
	int (*epoll_pwait)(int, struct epoll_event *, int, int,
			   const sigset_t *);
	/* glibc 2.35 and later; NULL before */
	int (*epoll_pwait2)(int, struct epoll_event *, int,
			    const struct timespec *, const sigset_t *);
	pid_t (*fork)(void);
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*fexecve)(int, char *const[], char *const[]);
	/* glibc 2.34 and later; NULL before (exec.c makes the system call) */
	int (*execveat)(int, const char *, char *const[], char *const[], int);
	/* glibc 2.34 and later; NULL before (socket.c makes the system call) */
	void (*closefrom)(int);
};

extern struct rsp_real rsp_real;

/* The _FORTIFY_SOURCE entry points glibc has no public prototypes for. */
ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
		       struct sockaddr *sa, socklen_t *salen);
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		const sigset_t *mask, size_t fdslen);
ssize_t sendfile64(int out, int in, off_t *off, size_t n);

/* The environment, read once. */
struct rsp_config {
	bool disabled; /* RDMA_RSOCKET_DISABLE: pass everything through */
	int sqsize, rqsize, inline_size; /* 0: the library's default */
	int sndbuf, rcvbuf;
	/* RDMA_RSOCKET_PORTS: when set, only these ports go over RDMA. */
	int nports;
	struct rsp_port_range {
		unsigned short lo, hi;
	} ports[32];
	int log_fd; /* RDMA_RSOCKET_LOG, -1 when off */
	/* RDMAV_FORK_SAFE (or IBV_FORK_SAFE): connect lazily, see socket.c */
	bool fork_safe;
};

/* This process's id, kept current across fork (an rsocket's owner). */
extern int rsp_pid;

/*
 * Whether this is a child of vfork (atfork handlers do not run for it):
 * it runs in its parent's memory until it execs or exits, so what the
 * preload keeps there is the parent's, never the child's to change.
 */
static inline bool rsp_in_vfork_child(void)
{
	return (int)getpid() != rsp_pid;
}
/* fork() calls this process and its parents made (the preload's view). */
extern unsigned int rsp_forks;

extern struct rsp_config rsp_config;

/* --- config.c: preload_config rules ------------------------------------ */

#define RSP_CONF_DIR "/etc/rdma/rsocket"

struct rsp_rule {
	char prog[64]; /* "" matches every program */
	int domain, type, protocol; /* 0 matches all */
};

/* One line: 0 a rule, 1 nothing (comment, blank), -1 malformed. */
int rsp_parse_rule(const char *line, struct rsp_rule *r);
/* The rules in @path (none if it does not exist); their number. */
int rsp_load_rules(const char *path, struct rsp_rule **out);
/* No rules, or one matching the program and socket. */
bool rsp_rules_match(const struct rsp_rule *r, int n, const char *prog,
		     int domain, int type, int protocol);
/* Reads RSP_CONF_DIR/preload_config (once, from rsp_init). */
void rsp_read_rules(void);
/* Whether this program's socket(domain, type, protocol) is carried. */
bool rsp_socket_wanted(int domain, int type, int protocol);

/* Resolves rsp_real and reads the environment once; safe to call often. */
void rsp_init(void);
/* Whether RDMAV_FORK_SAFE (or IBV_FORK_SAFE) asks for fork mode. */
bool rsp_fork_safe_env(void);
/* Whether RDMA_RSOCKET_DISABLE turns the library off. */
bool rsp_disabled_env(void);
void rsp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether a connection to or on this address may go over RDMA. */
bool rsp_port_wanted(const struct sockaddr *sa, socklen_t len);

/* The rsocket behind one or more of the program's descriptors. */
struct rsp_file {
	int rs; /* the rsocket */
	int owner; /* the process that made it: only it may use or close it */
	/*
	 * A listener: every process holding the descriptor may accept on
	 * it and close its own part (src/rsocket/handoff.c), as on TCP.
	 */
	bool shared;
	/*
	 * Accepted on a listener shared by a fork and not used yet: the first
	 * process to use it answers the connection and owns it (rsocket(7));
	 * until then any process holding the descriptor may.
	 */
	bool handed;
	unsigned int
		forks; /* a listener: rsp_forks when it started to listen */
	int refs; /* descriptors mapped to it (dup), atomic */
	int domain;
	bool dgram; /* a UDP socket over a datagram rsocket */
	/* UDP: an address chose RDMA; no later call falls back (dgram.c) */
	bool committed;
	/* Where it was bound, replayed on the kernel socket on fallback. */
	struct sockaddr_storage bound;
	socklen_t bound_len;
	/* The last process told it is another's (rsp_note_foreign). */
	int noted;
	/*
	 * Fork mode (fork.c): the connection moved from the kernel socket's
	 * TCP connection, which stays open to move back to before an exec
	 * (moveback.c).
	 */
	bool via_tcp;
	/* Moving back: writes go to the TCP connection already. */
	bool writes_tcp;
	/*
	 * Moved back: the rsocket holds no RDMA resources, only bytes not
	 * read yet; a fork leaves every process its own copy to read.
	 */
	bool detached;
	/*
	 * Unmapped by the library itself (rsp_retire) while another thread
	 * may still be in a call on it: kept, rsocket and all, until the
	 * program closes retired_fd (rsp_release_retired).
	 */
	int retired_fd;
	struct rsp_file *retired_next;
	/*
	 * share.c: a connection a fork shared.  In its owner: descendants
	 * may hold it; in a descendant: its owner relays it when asked.
	 */
	bool forked;
	/* A descendant asked for it: its descriptors are the relay's socket. */
	bool claimed;
	/* The owner's relay took the rsocket: the descriptors are kernel's. */
	bool relayed;
	uint32_t share_id; /* the owner's number for it (share.c) */
	/*
	 * The connection's addresses, kept at the fork: what getsockname and
	 * getpeername say where the descriptor is the relay's socket.
	 */
	struct rsp_addrs {
		struct sockaddr_storage local, peer;
		socklen_t local_len, peer_len;
	} * addrs;
	/*
	 * Calls reading or waiting to read on the rsocket (atomic), and
	 * RSP_FILE_GONE once the program closed the file: the last of the
	 * two to go frees it.
	 */
	int readers;
};

/* The rsocket file behind fd, or NULL for an ordinary descriptor. */
struct rsp_file *rsp_get(int fd);
/*
 * The same for reading, writing or waiting on it: a handed connection is
 * this process's from then on.
 */
struct rsp_file *rsp_use(int fd);
/*
 * An I/O call on fd found no rsocket of this process's: if fd carries
 * another process's connection, the log says so, once per process.
 */
void rsp_note_foreign(int fd);
/* Maps fd to f (taking a reference); an existing mapping is released. */
void rsp_set(int fd, struct rsp_file *f);
/* Unmaps fd and drops its reference (rclose on the last one). */
void rsp_clear(int fd);
/* A new file for rsocket rs: refs 0 until mapped. */
struct rsp_file *rsp_file_new(int rs, int domain);
/* Its memory (fdtab.c's release and the last reader decide when). */
void rsp_file_free(struct rsp_file *f);
#define RSP_FILE_GONE 0x40000000
/* Whether any descriptor is mapped at all (a fast path for poll). */
bool rsp_any(void);
/* Whatever fd maps, another process's file too (share.c). */
struct rsp_file *rsp_peek(int fd);
/* The descriptors mapped to f, in *out (malloc'ed); their number. */
int rsp_fds_of(const struct rsp_file *f, int **out);
/*
 * The distinct files mapped in this process with @pred(f, arg) true,
 * whoever owns them, in *out (malloc'ed); their number.
 */
int rsp_files_where(bool (*pred)(const struct rsp_file *f, void *arg),
		    void *arg, struct rsp_file ***out);
/*
 * The name (@peer: the peer's) the program knows fd's connection f by:
 * the rsocket's, or in fork mode the TCP connection's it made (the
 * rsocket's ports are the handshake's own).  getsockname's return.
 */
int rsp_file_name(int fd, const struct rsp_file *f, bool peer,
		  struct sockaddr *sa, socklen_t *len);
/*
 * If fd still maps f, makes fd a duplicate of kernel descriptor @with
 * (keeping fd's close-on-exec flag), atomically with respect to the
 * program's close of fd; false when fd no longer maps f.
 */
bool rsp_swap_kernel(int fd, const struct rsp_file *f, int with);

/* Applies RDMA_RSOCKET_* to a fresh rsocket. */
void rsp_apply_config(int rs);

/* rpoll, its own poll of kernel descriptors left unmapped (poll.c). */
int rsp_rpoll(struct pollfd *fds, nfds_t n, int timeout);
/*
 * What epoll.c waits with (poll.c): whether fd's kernel socket is not
 * all there is to poll; the two slots that watch @p; what the program
 * hears of them (a handshake that went on sets *@poked); @fn with the
 * signal mask @mask (NULL: as it is) in place for the wait.
 */
bool rsp_poll_maps(int fd); /* asks for another's connection first */
void rsp_poll_watch(const struct pollfd *p, struct pollfd out[2]);
short rsp_poll_heard(const struct pollfd *p, const struct pollfd got[2],
		     bool *poked);
int rsp_poll_masked(int (*fn)(struct pollfd *, nfds_t, int), struct pollfd *fds,
		    nfds_t n, int timeout, const sigset_t *mask);
/*
 * Microseconds on the monotonic clock; when a wait of @timeout ms ends;
 * what is left of it (poll.c).
 */
uint64_t rsp_now_us(void);
uint64_t rsp_deadline_us(int timeout);
int rsp_left_ms(uint64_t deadline, int timeout);
/* A timespec timeout in milliseconds, rounded up; NULL: -1 (poll.c). */
int rsp_ts_to_ms(const struct timespec *ts);

/* Forgets fd as an epoll member, or as an epoll set (close calls it). */
void rsp_epoll_forget(int fd);
/* Moves fd's rsocket memberships into the kernel's epoll sets. */
void rsp_epoll_fell_back(int fd);
/*
 * Unmaps fd if it still maps f, for the library's own reasons (a move
 * back): f and its rsocket stay until the program closes fd, since
 * another thread may be in a call on them.  False when fd did not map f.
 */
bool rsp_retire(int fd, struct rsp_file *f);
/* The program closes fd: what rsp_retire kept for it goes now. */
void rsp_release_retired(int fd);

/* --- fork.c: RDMAV_FORK_SAFE's connections made lazily ---------------- */

enum rsp_lazy {
	RSP_LAZY_NONE,
	RSP_LAZY_FRESH, /* a TCP socket that will be converted when used */
	RSP_LAZY_LISTEN, /* its accepted connections will be */
	RSP_LAZY_ACTIVE, /* connected on TCP, not yet used */
	RSP_LAZY_PASSIVE, /* accepted on TCP, not yet used */
	/*
	 * A handshake under way (fork.c keeps the rsocket it holds): a
	 * non-blocking call that cannot go on leaves it in one of these for
	 * the next call; poll and epoll watch what it waits for.
	 */
	RSP_LAZY_OFFERED_A, /* connected end: its offer sent, the peer's due */
	RSP_LAZY_OFFERED_P, /* accepted end: the same */
	RSP_LAZY_ACCEPTING, /* offers agreed: the peer's rconnect is due */
	RSP_LAZY_CONNECTING, /* offers agreed: our rconnect is under way */
	RSP_LAZY_REST_A, /* ACTIVE, the start of the peer's offer there */
	RSP_LAZY_REST_P, /* PASSIVE, the same: the rest of it is due */
	/*
	 * A connection this image inherited across execve: it stays on
	 * TCP, and its first read takes the peer's offer, if any (inherit.c).
	 */
	RSP_LAZY_INHERITED,
};

/* forkstep.c: the handshake's decisions (no I/O) */
#define RSP_FK_LEN 8 /* an offer's size */
#define RSP_FK_ACTIVE 'A'
#define RSP_FK_PASSIVE 'P'

struct rsp_fk_msg {
	uint16_t port; /* network order; the passive end's listener */
	uint8_t role; /* RSP_FK_ACTIVE or RSP_FK_PASSIVE */
	uint8_t ready; /* 1: it can go on over RDMA */
};

enum rsp_fk_act {
	RSP_FK_WAIT, /* nothing from the peer: wait for it (or EAGAIN) */
	RSP_FK_MORE, /* the start of an offer: wait for all of it */
	RSP_FK_TCP, /* the peer sent data (or closed): stays on TCP */
	RSP_FK_OFFER, /* this end speaks first: send its offer, then wait */
	RSP_FK_ANSWER, /* the peer's offer is here: send ours */
};

/*
 * A lazy connection's first read (@writing false) or write, given the
 * first @n bytes the peer sent (@peek; n < 0: none yet, 0: it closed).
 */
enum rsp_fk_act rsp_fk_step(bool writing, const uint8_t *peek, ssize_t n);
void rsp_fk_encode(uint8_t out[RSP_FK_LEN], const struct rsp_fk_msg *m);
/* 0, or -1 when @in is no offer. */
int rsp_fk_decode(const uint8_t in[RSP_FK_LEN], struct rsp_fk_msg *m);
/* Whether the two ends go on over RDMA. */
bool rsp_fk_agree(const struct rsp_fk_msg *mine, const struct rsp_fk_msg *peer);
/* Whether @state is a handshake under way (OFFERED_*, ACCEPTING, ...). */
bool rsp_fk_pending(enum rsp_lazy state);
/* Whether @state holds an rsocket of the handshake's (fork.c's held). */
bool rsp_fk_holds(enum rsp_lazy state);
/* The state after this end sent its offer first. */
enum rsp_lazy rsp_fk_offered(bool passive);
/* A fresh end's state while the rest of the peer's offer is due. */
enum rsp_lazy rsp_fk_resting(bool passive);
/* The state once both offers are known: ACCEPTING, CONNECTING or NONE. */
enum rsp_lazy rsp_fk_after(const struct rsp_fk_msg *mine,
			   const struct rsp_fk_msg *peer);

/* What an INHERITED connection's first read does (inherit.c). */
enum rsp_fk_inherited {
	RSP_FK_INH_WAIT, /* nothing from the peer yet */
	RSP_FK_INH_TCP, /* the peer's data (or its end): nothing to take */
	RSP_FK_INH_DECLINE, /* take the peer's offer, answer "not ready" */
	RSP_FK_INH_DROP, /* take the peer's offer: our data answered it */
};

/*
 * From what the peer's first bytes say (@act, a read's: WAIT, TCP or
 * ANSWER once a whole offer is there) and whether this end sent anything
 * yet (@sent).
 */
enum rsp_fk_inherited rsp_fk_inherited(enum rsp_fk_act act, bool sent);
/* The answer to @peer's offer that keeps both ends on TCP. */
struct rsp_fk_msg rsp_fk_decline(const struct rsp_fk_msg *peer);

/*
 * What a pending handshake waits for: events on the TCP socket, the
 * rsocket, the timer that bounds the wait for the rest of an offer.
 */
struct rsp_fk_watch {
	short tcp, rs, timer;
};

/*
 * For the program's poll @events (0 watches nothing: it asked for no
 * I/O); @resting: the start of the peer's offer is there, its rest due.
 */
struct rsp_fk_watch rsp_fk_watch(enum rsp_lazy state, short events,
				 bool resting);

/* How an accepting or connecting step ended. */
enum rsp_fk_end {
	RSP_FK_PENDING, /* not yet: EAGAIN, or wait */
	RSP_FK_DONE, /* the rsocket is connected */
	RSP_FK_FAILED, /* the connection stays on TCP */
};

/*
 * ACCEPTING: @accepted, the peer's rsocket came; else @tcp_n, what a
 * peek at the TCP socket found (< 0 nothing: the peer is still connecting).
 */
enum rsp_fk_end rsp_fk_accepting(bool accepted, ssize_t tcp_n);
/* CONNECTING: from the rsocket's poll @revents. */
enum rsp_fk_end rsp_fk_connecting(short revents);

#define RSP_LAZY_MAX 65536 /* descriptors beyond are carried at once */
enum rsp_lazy rsp_lazy_get(int fd);
/* false when fd is too large to be lazy (it is then carried at once). */
bool rsp_lazy_set(int fd, enum rsp_lazy state);
/* fd is closed or replaced: its state goes, and what a handshake held. */
void rsp_lazy_drop(int fd);
/*
 * newfd was made a duplicate of oldfd: if oldfd is a connection not used
 * yet, newfd becomes its twin (fork.c), and true.
 */
bool rsp_lazy_twin(int oldfd, int newfd);
/* rsp_lazy_set, and fd a twin if @twin (the new image's start). */
bool rsp_lazy_mark(int fd, enum rsp_lazy state, bool twin);
/* In a forked child: the twins' lock made afresh (init.c's handler). */
void rsp_twins_forked(void);
/* Whether any handshake is pending (a fast path for poll). */
bool rsp_fk_any(void);
/*
 * A pending handshake on fd: the two pollfds (fd -1: unused) that tell
 * when it can go on, for the program's @events; false if none is pending.
 */
bool rsp_fk_watch_fds(int fd, short events, struct pollfd out[2]);
/*
 * What fd's pending handshake waited for came: carry it on as far as it
 * goes without waiting.  Whether it is still pending (false: it is over,
 * fd is an rsocket or its TCP socket again, or none was pending).
 * errno is kept.
 */
bool rsp_fk_poke(int fd);
/*
 * rsp_get for the data calls: first converts a lazy connection
 * (@writing: a write; @flags: the call's MSG_DONTWAIT).  RSP_AGAIN: the
 * call fails with errno as set (EAGAIN: on a non-blocking socket, the
 * handshake cannot go on now; a later call carries it on).
 */
struct rsp_file *rsp_get_io(int fd, bool writing, int flags);
extern struct rsp_file rsp_again;
#define RSP_AGAIN (&rsp_again)
/* A lazy member of an epoll set became an rsocket: move its membership. */
void rsp_epoll_converted(int fd);

/* --- inherit.c: connections inherited across execve -------------------- */

/* fd, if a connected TCP socket and nothing of ours, becomes INHERITED. */
void rsp_inherit_mark(int fd);
/* newfd, a duplicate of oldfd, shares its INHERITED state. */
void rsp_inherit_dup(int oldfd, int newfd);
/* Whether any byte of this end was sent (or queued) on the socket. */
bool rsp_inherit_sent(int fd);

/* Stops carrying fd over rsockets: the kernel socket takes over. */
int rsp_fall_back(int fd, struct rsp_file *f, const char *why);

/* --- moveback.c: fork mode's way back from RDMA to TCP, before an exec -- */

/* How long an exec waits for the peers to answer. */
#define RSP_MOVE_BACK_MS 10000

/*
 * Before an exec: every connection this process moved to RDMA that the
 * new image inherits goes back to TCP, or is shut down if it cannot.
 */
void rsp_move_back_before_exec(void);
/*
 * After a read of @n on f's rsocket, or a write that failed: whether the
 * connection moved back to TCP (the caller repeats the call on fd).
 */
bool rsp_back_after_read(int fd, struct rsp_file *f, ssize_t n);
bool rsp_back_after_write(int fd, struct rsp_file *f, ssize_t n);
/* Files moved over TCP in fork mode (fdtab.c counts them). */
extern int rsp_nmoved;
/* The descriptors mapped to a file of this process with @pred true. */
int rsp_fds_where(bool (*pred)(const struct rsp_file *f), int **out);

/* --- share.c: connections a forked descendant uses ---------------------- */

/* How long an exit waits for relays to send what their holders wrote. */
#define RSP_SHARE_EXIT_MS 10000

/*
 * fd, unmapped here, carries a connection another process owns and a
 * fork shared: ask the owner for it.  True when fd is now the relay's
 * kernel socket (the call goes on there); false when it is not ours to
 * ask for, or the owner could not answer (logged).
 */
bool rsp_share_claim(int fd);
/*
 * The same before an exec that fd survives, for a connection not
 * answered yet too (the new image could not answer it).
 */
bool rsp_share_claim_before_exec(int fd);
/*
 * The first use of f, another process's connection not answered yet that
 * this one holds: answers it here, or, if its owner answered it first,
 * asks it for the relay (true: fd is the relay's socket now).
 */
bool rsp_share_answer(struct rsp_file *f, int fd);
/* This process answers f, a connection not answered yet that it holds. */
void rsp_share_answering(struct rsp_file *f);
/*
 * Whether fd is another process's fork-mode connection that it did not
 * relay (its owner is gone or refused): its calls fail with ECONNRESET.
 */
bool rsp_share_lost(int fd);
/*
 * The last descriptor of f in this process closed: whether share.c keeps
 * its rsocket (a descendant may still ask for it, or the relay has it),
 * rather than the caller closing it.  Another process's f: its owner
 * hears that this process no longer holds it.
 */
bool rsp_share_keep(struct rsp_file *f);
/*
 * getsockname (@peer false) or getpeername on fd, if it is a connection
 * a fork shared: true with the answer (@sa NULL: only whether it is
 * one), false when fd is none.
 */
bool rsp_share_name(int fd, bool peer, struct sockaddr *sa, socklen_t *len);
/*
 * A call reads or waits to read on f's rsocket: false when the relay has
 * it already (the call goes to the descriptor's kernel socket instead).
 * Every true is followed by rsp_read_leave once the call is out of the
 * rsocket: the relay reads only when no such call is in it.
 */
bool rsp_read_enter(struct rsp_file *f);
void rsp_read_leave(struct rsp_file *f);

/* What a fork carries over between its two halves (the channels made). */
#define RSP_SHARE_MAX_LINKS 16
struct rsp_share_fork {
	int n;
	struct {
		int owner; /* the process the channel goes to */
		int give; /* the child's end */
	} ends[RSP_SHARE_MAX_LINKS + 1];
};

/* Before fork(): the channels for the child, its holdings announced. */
void rsp_share_before_fork(struct rsp_share_fork *sf);
/* After fork() (@pid as it returned), in both halves. */
void rsp_share_after_fork(struct rsp_share_fork *sf, pid_t pid);

/* --- exec_roles.c, exec_pass.c, exec.c: what survives an execve ---------- */

/*
 * Fork mode: the connections the image before an exec accepted or
 * connected on TCP and never used, named for the new image, which then
 * makes the handshake itself (exec_pass.c); and in every mode the
 * addresses of the relayed connections the new image inherits.
 */
#define RSP_EXEC_ROLES "RDMA_RSOCKET_EXEC_ROLES"
#define RSP_EXEC_MAX_ROLES 64
/* "65535:P:" and two 32-digit addresses with ".65535", a comma: bounded */
#define RSP_EXEC_ROLE_LEN 90
#define RSP_EXEC_ROLES_LEN (RSP_EXEC_MAX_ROLES * RSP_EXEC_ROLE_LEN)

struct rsp_exec_addr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* network order; IPv4 in the first 4 */
	uint16_t port; /* host order */
};

struct rsp_exec_role {
	int fd;
	bool passive; /* accepted (RSP_LAZY_PASSIVE), else connected */
	/*
	 * Not fork mode's: a connection another process relays, whose
	 * socket's names are the connection's (the new image answers
	 * getsockname and getpeername with them).
	 */
	bool relayed;
	struct rsp_exec_addr local, peer;
};

/* @sa as an rsp_exec_addr: false when it is no IPv4 or IPv6 address. */
bool rsp_exec_addr_from(struct rsp_exec_addr *a, const struct sockaddr *sa,
			socklen_t len);
/*
 * fd's SOL_SOCKET option @name (SO_DOMAIN, SO_TYPE...), -1 when refused:
 * a raw system call, for an image's start, which resolves none of the C
 * library's calls (rsp_init waits for the program's first socket call).
 */
int rsp_sock_int(int fd, int name);
/* Whether fd is open and not closed on exec. */
bool rsp_fd_survives_exec(int fd);
/* @a as a socket address in @ss; its length. */
socklen_t rsp_exec_addr_to(const struct rsp_exec_addr *a,
			   struct sockaddr_storage *ss);
/* Whether @sa is the address @a names. */
bool rsp_exec_addr_is(const struct rsp_exec_addr *a, const struct sockaddr *sa,
		      socklen_t len);
/* One entry of the variable in @out (@size bytes); its length, or -1. */
int rsp_exec_role_format(char *out, size_t size, const struct rsp_exec_role *r);
/*
 * The variable's value: its entries in @out (room for @max); their
 * number, or -1 when anything in it is malformed (every entry is then
 * ignored).
 */
int rsp_exec_roles_parse(const char *s, struct rsp_exec_role *out, int max);

/*
 * Before an exec (exec.c's calls): every connection of another process's
 * this one holds on a descriptor that survives it is asked for (the new
 * image inherits the relay's socket), and in fork mode the unused ones of
 * this image's are named in the environment the image gets: @envp, or a
 * copy of it with RSP_EXEC_ROLES (malloc'ed; without memory for it,
 * @envp), returned.  rsp_exec_failed frees the copy.
 */
char **rsp_exec_prepare(char *const envp[]);
void rsp_exec_failed(char **env, char *const envp[]);
/*
 * Every connection of another process's held here (on a descriptor that
 * survives an exec, if @at_exec) relayed now, answered by its owner if
 * nobody did yet (exec_pass.c; confine.c before a sandbox).
 */
void rsp_claim_held(bool at_exec);
/*
 * At the new image's start (inherit.c's constructor; raw calls only):
 * RSP_EXEC_ROLES taken out of the environment; if @roles (fork mode),
 * each descriptor it names that is that connection made RSP_LAZY_PASSIVE
 * or ACTIVE (@mark: rsp_lazy_mark; twins when several name one socket);
 * if @names, each relayed connection's socket given its names.
 * rsp_exec_roles_log writes what it did to the log, once the log is open
 * (rsp_init).
 */
void rsp_exec_roles_at_start(bool roles, bool names,
			     bool (*mark)(int, enum rsp_lazy, bool));
void rsp_exec_roles_log(void);
/*
 * The new image's check of one entry: whether fd is a connected TCP
 * socket with those addresses (raw system calls only).
 */
bool rsp_exec_role_fits(const struct rsp_exec_role *r);

/* --- addr.c, dgram.c: UDP sockets --------------------------------------- */

enum rsp_addr_kind {
	RSP_ADDR_BAD, /* not an IPv4/IPv6 address (or too short) */
	RSP_ADDR_ANY, /* the wildcard */
	RSP_ADDR_LOOPBACK, /* 127/8, ::1, ::ffff:127/104 */
	RSP_ADDR_OTHER,
};

enum rsp_addr_kind rsp_addr_kind(const struct sockaddr *sa, socklen_t len);
/* socket(domain, type, protocol) makes a UDP socket. */
bool rsp_is_udp(int domain, int type, int protocol);

/*
 * A UDP descriptor's rsocket meets an address (@local: bind's, else a
 * destination of connect/sendto/sendmsg).  The first address that names
 * one place decides: RDMA (the socket is committed) or the kernel socket
 * (fall back).  Returns 1 to go on with the rsocket, 0 when fd is now a
 * plain kernel socket, -1 on error (errno set).
 */
int rsp_dgram_choose(int fd, struct rsp_file *f, const struct sockaddr *sa,
		     socklen_t len, bool local);

#endif /* RSPRELOAD_H */
