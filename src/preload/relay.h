/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The relay of a connection that a forked descendant uses (BUGS.md
 * fork-first-accept, preload-split-connection): its owner moves the bytes
 * between the rsocket and one end of a kernel socketpair, whose other end
 * is what every process's descriptors for the connection are, so that the
 * kernel's queue decides who reads what, as on TCP.
 */
#ifndef RSP_RELAY_H
#define RSP_RELAY_H

#include <stdbool.h>

struct rsp_relay;

/*
 * Moves bytes between the connected stream rsocket @rs and the kernel
 * stream socket @end (one end of an AF_UNIX SOCK_STREAM socketpair whose
 * other end the program's descriptors are), in a thread of its own, until
 * no process can use the connection any more; then closes both.  Takes
 * both.  @reads_held: the rsocket is not read until rsp_relay_allow_reads
 * (a call of the program's may still be inside the rsocket and must get
 * its bytes first).  NULL with errno on failure (nothing taken then).
 *
 * The handle only serves rsp_relay_allow_reads: with @reads_held it stays
 * valid until that call, which must come exactly once; without, the relay
 * may be gone already when this returns (compare the handle with NULL
 * only).  The relay's calls never wait on either socket whatever their
 * O_NONBLOCK (each call says MSG_DONTWAIT), so a call of the program's
 * still inside the rsocket keeps the blocking it was made with; only its
 * rshutdown and rclose wait for their sends, as long as the linger time.
 * From then on @end is the relay's alone, and no child forked later keeps
 * a copy of it (rsp_relay_forget_all_in_child).
 */
struct rsp_relay *rsp_relay_start(int rs, int end, bool reads_held);
/* The rsocket may be read from now on; the handle is the relay's again. */
void rsp_relay_allow_reads(struct rsp_relay *r);
/*
 * In a child just forked: the relays are the parent's; close their @end
 * descriptors here (they would keep the holders' sockets from ever reading
 * end-of-stream), free nothing the parent's threads use, forget them.
 * Async-signal-safe (fstat and close, no lock): for an atfork child
 * handler; a second call does nothing.  An @end made but not yet handed
 * to rsp_relay_start when the fork came is the caller's to close.
 */
void rsp_relay_forget_all_in_child(void);
/*
 * The process exits: the relays whose holders are all gone still send what
 * the holders wrote last, as TCP delivers a closed socket's bytes; wait
 * for them to end, @ms at most.  Relays whose holders live are cut by the
 * exit.
 */
void rsp_relay_finish_orphans(int ms);
/* How many relays run (tests and logging). */
int rsp_relay_count(void);

#endif /* RSP_RELAY_H */
