// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Event channels.  Each channel is one open of the rdma_cm device: the
 * kernel queues the events of every id created on (or migrated to) it, and
 * the fd becomes readable when one is waiting.
 */
#include <config.h>

#include <stdlib.h>
#include <unistd.h>

#include "cma.h"
#include "ucma_abi.h"

struct rdma_event_channel *cma_channel_create(void)
{
	struct rdma_event_channel *channel;

	if (cma_init())
		return NULL;
	channel = malloc(sizeof(*channel));
	if (!channel) {
		errno = ENOMEM;
		return NULL;
	}
	channel->fd = ucma_open_device();
	if (channel->fd < 0) {
		free(channel);
		return NULL;
	}
	return channel;
}

void cma_channel_destroy(struct rdma_event_channel *channel)
{
	if (!channel)
		return;
	close(channel->fd);
	free(channel);
}

CMA_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	return cma_channel_create();
}

CMA_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	cma_channel_destroy(channel);
}
