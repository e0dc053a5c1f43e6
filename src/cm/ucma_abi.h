/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The kernel rdma_ucm command ABI (/dev/infiniband/rdma_cm).
 *
 * Every command the library sends to the kernel goes through one function
 * here, and ucma_write() in ucma_abi.c is the only place that writes to the
 * device.  The functions take plain values, build the command exactly as
 * <rdma/rdma_user_cm.h> lays it out, and return 0 or -1 with errno set.
 * Nothing in this file knows about rdma_cm_id: that keeps the marshalling
 * testable against a fake device (ucma_set_backend, test_hooks.h).
 */
#ifndef CMA_UCMA_ABI_H
#define CMA_UCMA_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include "kern_abi.h"

#define UCMA_DEV_PATH "/dev/infiniband/rdma_cm"
#define UCMA_ABI_VERSION_PATH "/sys/class/misc/rdma_cm/abi_version"

/*
 * Open the device: a new, independent event queue.  @hidden: the fd is the
 * library's own (inside a pollable channel's epoll set), so the kernel
 * backend places it above the numbers programs reuse (fd_high.h).
 * -1/errno on failure.
 */
int ucma_open_device(bool hidden);

/* The kernel's rdma_ucm ABI version, or -1 if it cannot be read. */
int ucma_abi_version(void);

/*
 * Where commands go: the kernel's device, or a test's fake of it
 * (tests/unit/fake_ucma.c), installed by ucma_set_backend (test_hooks.h).
 */
struct ucma_backend {
	/* deliver one command (header + body) to the device behind fd */
	ssize_t (*write)(int fd, const void *buf, size_t len);
	int (*open)(bool hidden); /* a new event queue: an fd, or -1/errno */
	int (*abi_version)(void); /* -1 when no device */
	/* ucma_rehome_fd's work (both fds the library's, close-on-exec) */
	int (*rehome)(int fd, int newfd);
};

/*
 * Put @newfd's file behind the number @fd (closing @newfd) and return a
 * new number for @fd's old file, which stays open: commands keep their
 * descriptor while the file behind it changes.  -1/errno, nothing changed.
 */
int ucma_rehome_fd(int fd, int newfd);

int ucma_cmd_create_id(int fd, uint64_t uid, uint16_t ps, uint8_t qp_type,
		       uint32_t *handle);
int ucma_cmd_destroy_id(int fd, uint32_t handle, uint32_t *events_reported);
int ucma_cmd_bind(int fd, uint32_t handle, const struct sockaddr *addr,
		  socklen_t len);
int ucma_cmd_resolve_addr(int fd, uint32_t handle, const struct sockaddr *src,
			  socklen_t src_len, const struct sockaddr *dst,
			  socklen_t dst_len, uint32_t timeout_ms);
int ucma_cmd_resolve_route(int fd, uint32_t handle, uint32_t timeout_ms);
int ucma_cmd_query_route(int fd, uint32_t handle,
			 struct rdma_ucm_query_route_resp *resp);
int ucma_cmd_query_addr(int fd, uint32_t handle,
			struct rdma_ucm_query_addr_resp *resp);
int ucma_cmd_query_gid(int fd, uint32_t handle,
		       struct rdma_ucm_query_addr_resp *resp);
int ucma_cmd_query_path(int fd, uint32_t handle,
			struct rdma_ucm_query_path_resp *resp, size_t len);
int ucma_cmd_connect(int fd, uint32_t handle,
		     const struct rdma_ucm_conn_param *param,
		     const struct rdma_ucm_ece *ece);
int ucma_cmd_listen(int fd, uint32_t handle, uint32_t backlog);
int ucma_cmd_accept(int fd, uint32_t handle, uint64_t uid,
		    const struct rdma_ucm_conn_param *param,
		    const struct rdma_ucm_ece *ece);
int ucma_cmd_reject(int fd, uint32_t handle, const void *data, uint8_t len,
		    uint8_t reason);
int ucma_cmd_disconnect(int fd, uint32_t handle);
int ucma_cmd_init_qp_attr(int fd, uint32_t handle, uint32_t qp_state,
			  struct ib_uverbs_qp_attr *resp);
int ucma_cmd_get_event(int fd, struct rdma_ucm_event_resp *resp);
int ucma_cmd_set_option(int fd, uint32_t handle, uint32_t level,
			uint32_t optname, const void *optval, uint32_t optlen);
int ucma_cmd_notify(int fd, uint32_t handle, uint32_t event);
int ucma_cmd_join_mcast(int fd, uint32_t handle, uint64_t uid,
			const struct sockaddr *addr, socklen_t len,
			uint16_t join_flags, uint32_t *mc_handle);
int ucma_cmd_leave_mcast(int fd, uint32_t mc_handle, uint32_t *events_reported);
int ucma_cmd_migrate_id(int new_fd, uint32_t handle, int old_fd,
			uint32_t *events_reported);

/* Reject reasons the kernel accepts from user space (IB CM REJ codes). */
enum {
	UCMA_REJ_CONSUMER_DEFINED = 28,
	UCMA_REJ_VENDOR_OPTION_NOT_SUPPORTED = 35,
};

#endif /* CMA_UCMA_ABI_H */
