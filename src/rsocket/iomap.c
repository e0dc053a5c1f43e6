// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Direct data placement: riomap exposes a buffer to the peer under an
 * offset, riowrite writes into one the peer exposed.
 *
 * Each side advertises a target iomap of RDMA_IOMAPSIZE slots at connect
 * time (right after its target SGL).  Mapping a buffer for writing takes
 * one of the peer's slots: the slot (struct rs_wire_iomap) is RDMA-written
 * into the peer's memory with an RS_OP_IOMAP_SGL immediate, on the next
 * send.  riowrite looks the offset up among the slots the peer filled in
 * our own target iomap and writes there without immediate data, so the
 * peer's application learns of the data through its own protocol.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rs.h"

static struct rs_iomap_mr *rs_free_slot(struct rsocket *rs)
{
	uint32_t i;

	if (!rs->iomap_slots && rs->remote_iomap.length) {
		rs->iomap_slots = calloc(rs->remote_iomap.length,
					 sizeof(*rs->iomap_slots));
		if (!rs->iomap_slots)
			return NULL;
		for (i = 0; i < rs->remote_iomap.length; i++)
			rs->iomap_slots[i].index = (int)i;
	}
	for (i = 0; i < rs->remote_iomap.length; i++) {
		if (!rs->iomap_slots[i].mr)
			return &rs->iomap_slots[i];
	}
	return NULL;
}

static off_t rs_riomap(struct rsocket *rs, void *buf, size_t len, int prot,
		       int flags, off_t offset)
{
	struct rs_iomap_mr *iomr;
	int access = IBV_ACCESS_LOCAL_WRITE;

	(void)flags;
	if (rs->type != SOCK_STREAM || !rs->cm_id || !rs->cm_id->pd || !buf ||
	    !len || (prot & ~(PROT_WRITE | PROT_NONE)))
		return cma_err(EINVAL);

	pthread_mutex_lock(&rs->map_lock);
	if (prot & PROT_WRITE) {
		iomr = rs_free_slot(rs);
		access |= IBV_ACCESS_REMOTE_WRITE;
	} else {
		iomr = calloc(1, sizeof(*iomr));
		if (iomr)
			iomr->index = -1;
	}
	if (!iomr) {
		offset = cma_err(ENOMEM);
		goto out;
	}
	iomr->mr = ibv_reg_mr(rs->cm_id->pd, buf, len, access);
	if (!iomr->mr) {
		if (iomr->index < 0)
			free(iomr);
		offset = -1;
		goto out;
	}
	if (offset == -1)
		offset = (off_t)(uintptr_t)buf;
	iomr->offset = (uint64_t)offset;
	iomr->sent = false;
	if (iomr->index >= 0) {
		rs->iomap_pending = true;
	} else {
		iomr->next = rs->iomap_list;
		rs->iomap_list = iomr;
	}
out:
	pthread_mutex_unlock(&rs->map_lock);
	return offset;
}

CMA_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags,
			off_t offset)
{
	struct rsocket *rs = rs_get(socket);
	off_t ret;
	int err;

	if (!rs)
		return -1;
	ret = rs_riomap(rs, buf, len, prot, flags, offset);
	err = errno;
	rs_put(rs);
	errno = err;
	return ret;
}

static bool rs_iomr_matches(const struct rs_iomap_mr *iomr, const void *buf,
			    size_t len)
{
	return iomr->mr && iomr->mr->addr == buf && iomr->mr->length == len;
}

static int rs_riounmap(struct rsocket *rs, void *buf, size_t len)
{
	struct rs_iomap_mr **pp, *iomr;
	uint32_t i;
	int ret = -1;

	if (rs->type != SOCK_STREAM)
		return cma_err(EINVAL);
	pthread_mutex_lock(&rs->map_lock);
	for (i = 0; rs->iomap_slots && i < rs->remote_iomap.length; i++) {
		iomr = &rs->iomap_slots[i];
		if (rs_iomr_matches(iomr, buf, len)) {
			ibv_dereg_mr(iomr->mr);
			iomr->mr = NULL;
			ret = 0;
			goto out;
		}
	}
	for (pp = &rs->iomap_list; *pp; pp = &(*pp)->next) {
		iomr = *pp;
		if (rs_iomr_matches(iomr, buf, len)) {
			*pp = iomr->next;
			ibv_dereg_mr(iomr->mr);
			free(iomr);
			ret = 0;
			goto out;
		}
	}
out:
	pthread_mutex_unlock(&rs->map_lock);
	return ret ? cma_err(EINVAL) : 0;
}

CMA_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	struct rsocket *rs = rs_get(socket);
	int ret;
	int err;

	if (!rs)
		return -1;
	ret = rs_riounmap(rs, buf, len);
	err = errno;
	rs_put(rs);
	errno = err;
	return ret;
}

void rs_free_iomaps(struct rsocket *rs)
{
	struct rs_iomap_mr *iomr;
	uint32_t i;

	for (i = 0; rs->iomap_slots && i < rs->remote_iomap.length; i++) {
		if (rs->iomap_slots[i].mr)
			ibv_dereg_mr(rs->iomap_slots[i].mr);
	}
	free(rs->iomap_slots);
	rs->iomap_slots = NULL;
	while ((iomr = rs->iomap_list)) {
		rs->iomap_list = iomr->next;
		ibv_dereg_mr(iomr->mr);
		free(iomr);
	}
}

/* Write one slot into the peer's target iomap.  Under rs->lock. */
static int rs_write_iomap(struct rsocket *rs, struct rs_iomap_mr *iomr)
{
	struct rs_wire_iomap iom;
	struct iovec iov = {.iov_base = &iom, .iov_len = sizeof(iom)};
	const struct iovec *cur = &iov;
	size_t off = 0;

	iom.offset = iomr->offset;
	iom.sge.addr = (uintptr_t)iomr->mr->addr;
	iom.sge.length = (uint32_t)iomr->mr->length;
	iom.sge.key = iomr->mr->rkey;
	if (rs->swap)
		rs_iomap_swap(&iom);
	rs->sseq_no++;
	return rs_post_payload(
		rs, &cur, &off, sizeof(iom),
		rs_msg(RS_OP_IOMAP_SGL, (uint32_t)iomr->index), true,
		rs->remote_iomap.addr + (uint64_t)iomr->index * sizeof(iom),
		rs->remote_iomap.key);
}

/* Tell the peer about new mappings; rs->lock held, the send side owned. */
int rs_send_iomaps(struct rsocket *rs, int flags)
{
	uint32_t i;
	int ret = 0;

	pthread_mutex_lock(&rs->map_lock);
	for (i = 0; rs->iomap_slots && i < rs->remote_iomap.length; i++) {
		struct rs_iomap_mr *iomr = &rs->iomap_slots[i];

		if (!iomr->mr || iomr->sent)
			continue;
		/* Nothing of ours follows a QUIESCE (quiesce.c). */
		if (!(rs_state(rs) & RS_WRITABLE)) {
			ret = cma_err(EPIPE);
			break;
		}
		if (!rs_can_send(rs)) {
			pthread_mutex_unlock(&rs->map_lock);
			ret = rs_wait_locked(rs, rs_nonblocking(rs, flags),
					     rs_conn_can_send);
			pthread_mutex_lock(&rs->map_lock);
			if (ret)
				break;
			i--; /* this slot again, from the top */
			continue;
		}
		ret = rs_write_iomap(rs, iomr);
		if (ret)
			break;
		iomr->sent = true;
	}
	rs->iomap_pending = false;
	for (i = 0; rs->iomap_slots && i < rs->remote_iomap.length; i++) {
		if (rs->iomap_slots[i].mr && !rs->iomap_slots[i].sent)
			rs->iomap_pending = true;
	}
	pthread_mutex_unlock(&rs->map_lock);
	return ret;
}

/* The slot the peer gave us that covers @offset, copied out. */
static bool rs_find_iomap(struct rsocket *rs, uint64_t offset,
			  struct rs_wire_iomap *out)
{
	uint16_t i;

	for (i = 0; i < rs->target_iomap_size; i++) {
		struct rs_wire_iomap iom;

		memcpy(&iom, (const void *)&rs->target_iomap[i], sizeof(iom));
		if (iom.sge.length && offset >= iom.offset &&
		    offset - iom.offset < iom.sge.length) {
			*out = iom;
			return true;
		}
	}
	return false;
}

static size_t rs_riowrite(struct rsocket *rs, const void *buf, size_t count,
			  off_t offset, int flags)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = count};
	const struct iovec *cur = &iov;
	uint32_t olen = RS_OLAP_START_SIZE;
	struct rs_wire_iomap iom;
	size_t left = count, off = 0;
	bool have = false;
	int ret = 0;

	if (rs->type != SOCK_STREAM || (!buf && count))
		return (size_t)cma_err(EINVAL);
	if (!(rs_state(rs) & RS_CONNECTED))
		return (size_t)cma_err(ENOTCONN);

	pthread_mutex_lock(&rs->lock);
	rs_side_enter(rs, RS_SIDE_SEND);
	if (rs->iomap_pending) {
		ret = rs_send_iomaps(rs, flags);
		if (ret)
			goto out;
	}
	while (left) {
		uint64_t pos = (uint64_t)offset + (count - left);
		uint32_t xfer;
		int ready;

		if (!have || pos - iom.offset >= iom.sge.length) {
			have = rs_find_iomap(rs, pos, &iom);
			if (!have) {
				ret = cma_err(EINVAL);
				break;
			}
		}
		ready = rs_wait_sendable(rs, rs_nonblocking(rs, flags));
		if (ready < 0) {
			ret = -1;
			break;
		}
		if (!ready)
			continue;
		xfer = rs_next_xfer(rs, &olen, left);
		if (xfer > iom.offset + iom.sge.length - pos)
			xfer = (uint32_t)(iom.offset + iom.sge.length - pos);
		ret = rs_post_payload(
			rs, &cur, &off, xfer, rs_msg(RS_OP_WRITE, xfer), false,
			iom.sge.addr + (pos - iom.offset), iom.sge.key);
		if (ret)
			break;
		left -= xfer;
	}
out:
	rs_side_leave(rs, RS_SIDE_SEND);
	pthread_mutex_unlock(&rs->lock);
	return (ret && left == count) ? (size_t)ret : count - left;
}

CMA_EXPORT size_t riowrite(int socket, const void *buf, size_t count,
			   off_t offset, int flags)
{
	struct rsocket *rs = rs_get(socket);
	size_t ret;
	int err;

	if (!rs)
		return (size_t)-1;
	ret = rs_riowrite(rs, buf, count, offset, flags);
	err = errno;
	rs_put(rs);
	errno = err;
	return ret;
}
