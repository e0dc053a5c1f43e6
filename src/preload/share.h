/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Between the files of share.c's mechanism: the channel's messages
 * (share_channel.c), the holder's side (share_ask.c) and the owner's
 * (share.c).  What it does and why: share.c's head comment.
 */
#ifndef RSP_SHARE_H
#define RSP_SHARE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "preload.h"

enum share_type {
	SHARE_NEWPROC = 1, /* a new process, what it holds; its channel */
	SHARE_DEMAND, /* val: the connection asked for */
	SHARE_RELEASE, /* val: the connection no longer held */
	SHARE_OK, /* the answer: the relay's socket comes with it */
	SHARE_ERR, /* the answer: val is the errno */
	/*
	 * val: a connection not answered yet that this process failed to
	 * answer: the relay if the owner answered it, else an error
	 */
	SHARE_DEMAND_ANSWERED,
};

/*
 * At most this many connections are announced for one new process (a
 * 64 KiB message); a child of a process with more cannot ask for the rest.
 */
#define SHARE_MAX_IDS 16384

struct share_msg {
	uint32_t type;
	int32_t val;
	uint32_t n; /* NEWPROC: ids that follow */
	uint32_t ids[]; /* the owner's numbers for its connections */
};

#define SHARE_HDR sizeof(struct share_msg)
#define SHARE_MAX_MSG (SHARE_HDR + SHARE_MAX_IDS * sizeof(int32_t))

/* --- share_channel.c ------------------------------------------------------ */

/* @fd moved clear of the numbers programs reuse (util/fd_high.h). */
int share_high(int fd);
/* A socketpair of @type, close-on-exec, both ends high. */
int share_pair(int type, int sv[2]);
/* One message on channel @fd, with descriptor @pass (-1: none). */
ssize_t share_send(int fd, const struct share_msg *m, int pass);
/*
 * One message from @fd into @m (@size bytes of room), with the descriptor
 * it carried in *@got (-1 if none).  The message's size; 0 at the end of
 * the channel; -1 with EPROTO for a malformed one.
 */
ssize_t share_recv(int fd, struct share_msg *m, size_t size, int *got);

/* --- share_ask.c: the holder's side ---------------------------------------- */

/* Another process's connection that this one may still ask for. */
bool share_claimable(const struct rsp_file *f);
/* This process no longer holds f (its last descriptor closed). */
void share_release(const struct rsp_file *f);
/* Before fork(): each owner learns of the child and what it will hold. */
void share_announce_held(struct rsp_share_fork *sf);
/* In the child: its own channels replace the parent's. */
void share_links_adopt(const struct rsp_share_fork *sf);

/* --- share.c: the owner's side --------------------------------------------- */

/* The child's end of a channel to @owner, for after the fork. */
bool share_add_end(struct rsp_share_fork *sf, int owner, int give);

#endif /* RSP_SHARE_H */
