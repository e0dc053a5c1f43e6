// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Listeners that outlive a credential change.
 *
 * The kernel refuses write() on an rdma_cm or uverbs file to a process
 * whose credentials are not those the file was opened with (EACCES), and
 * every successful set*id call makes new credentials, even one that
 * changes no id.  Servers listen as root, for a privileged port, and then
 * become an unprivileged user before they accept (lighttpd, haproxy):
 * their listener could no longer read its requests.
 *
 * So an id alone on its channel (an rsocket's listener) follows the
 * process's credentials when the kernel refuses its channel:
 *
 *  - the channel's kernel fd comes to stand for a file opened now, under
 *    the new credentials; the number stays, so nothing that holds it has
 *    to learn of the change (channel.c);
 *  - the id moves to the new file (MIGRATE_ID is written to the file the
 *    id moves to, and only names the old one), with its queued events;
 *  - the device contexts opened before are forgotten, as in a forked
 *    child (device.c): what is made from now on is made on contexts the
 *    new credentials may use;
 *  - the requests already waiting: the kernel made each one's id on the
 *    listener's file of the moment, and moved the events, not those ids.
 *    The old file stays open, a stale file of the channel, and each such
 *    request joins the new file when it is read
 *    (cma_channel_adopt_request); the stale file is closed once a later
 *    request shows that none of its own is left.
 *
 * Connections made before the change keep their contexts, which the
 * kernel refuses the new credentials: a device that posts work through
 * write() (rxe) can no longer send on them.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>

#include "cma.h"
#include "ucma_abi.h"

/* Does the kernel refuse @id's channel to this process's credentials? */
static bool cma_creds_refused(struct cma_id_private *id_priv)
{
	struct rdma_ucm_query_addr_resp resp;

	return ucma_cmd_query_addr(cma_id_fd(id_priv), id_priv->handle,
				   &resp) &&
	       errno == EACCES;
}

/* Reader lock held: the id is on the new file, or nothing changed. */
static int cma_creds_move(struct rdma_event_channel *channel,
			  struct cma_id_private *id_priv)
{
	int newfd = ucma_open_device(true), err;
	uint32_t reported;

	if (newfd < 0 || cma_channel_swap_kernel_file(channel, newfd))
		return -1;
	if (ucma_cmd_migrate_id(cma_id_fd(id_priv), id_priv->handle,
				cma_channel_newest_stale(channel), &reported)) {
		/* Back as it was: the id is still on the old file. */
		err = errno;
		cma_channel_restore_kernel_file(channel);
		return cma_err(err);
	}
	return 0;
}

/*
 * Only a channel whose reader never waits with the reader lock held (its
 * kernel fd is non-blocking) and nothing else lives on: an rsocket's.
 */
static bool cma_creds_may_follow(struct rdma_event_channel *channel,
				 struct rdma_cm_id *id)
{
	int flags = fcntl(cma_channel_kernel_fd(channel), F_GETFL);

	return id->channel == channel && !cma_channel_served(channel) &&
	       !cma_channel_posted(channel) && flags >= 0 &&
	       (flags & O_NONBLOCK);
}

int cma_follow_creds(struct rdma_event_channel *channel, struct rdma_cm_id *id)
{
	struct cma_id_private *id_priv = cma_id_priv(id);
	int ret = 0;

	if (!cma_creds_may_follow(channel, id))
		return cma_err(EACCES);
	cma_channel_reader_lock(channel);
	/* Another thread of the listener may have moved it already. */
	if (cma_creds_refused(id_priv)) {
		ret = cma_creds_move(channel, id_priv);
		if (!ret)
			cma_device_forget_contexts();
	}
	cma_channel_reader_unlock(channel);
	return ret;
}
