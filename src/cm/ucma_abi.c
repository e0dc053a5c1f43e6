// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Marshalling of rdma_ucm commands.  Each command is a header (command
 * number, input and output sizes) followed by the command's structure; the
 * kernel writes responses through a user pointer carried in the command.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/fd_high.h"
#include "ucma_abi.h"
#include "test_hooks.h"

/*
 * GET_EVENT may wait for an event (a private channel's read): it stays a
 * cancellation point, as with rdma-core.  No other command waits for
 * anything but the kernel's own work, and write() would bracket each of
 * them with two cancellation calls once the process has a second thread
 * (the service thread, addrinfo's resolver); syscall() does not.
 */
static ssize_t ucma_write_syscall(int fd, const void *buf, size_t len)
{
	const struct rdma_ucm_cmd_hdr *hdr = buf;

	if (hdr->cmd == RDMA_USER_CM_CMD_GET_EVENT)
		return write(fd, buf, len);
	return syscall(SYS_write, fd, buf, len);
}

static int ucma_open_kernel(bool hidden)
{
	int fd = open(UCMA_DEV_PATH, O_RDWR | O_CLOEXEC);

	return hidden ? cma_fd_move_high(fd, fcntl, close) : fd;
}

static int ucma_abi_version_kernel(void)
{
	char buf[16] = {0};
	int fd, version = -1;
	ssize_t n;

	fd = open(UCMA_ABI_VERSION_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n > 0)
		version = (int)strtol(buf, NULL, 10);
	close(fd);
	return version;
}

static int ucma_rehome_kernel(int fd, int newfd)
{
	int old = cma_fd_dup_high(fd, fcntl);

	if (old < 0)
		return -1;
	if (dup3(newfd, fd, O_CLOEXEC) < 0) {
		int err = errno;

		close(old);
		errno = err;
		return -1;
	}
	close(newfd);
	return old;
}

#define UCMA_KERNEL_BACKEND                                                    \
	{                                                                      \
		.write = ucma_write_syscall, .open = ucma_open_kernel,         \
		.abi_version = ucma_abi_version_kernel,                        \
		.rehome = ucma_rehome_kernel,                                  \
	}

static const struct ucma_backend ucma_kernel = UCMA_KERNEL_BACKEND;
static struct ucma_backend ucma_backend = UCMA_KERNEL_BACKEND;

void ucma_set_backend(const struct ucma_backend *backend)
{
	ucma_backend = backend ? *backend : ucma_kernel;
}

int ucma_open_device(bool hidden)
{
	return ucma_backend.open(hidden);
}

int ucma_abi_version(void)
{
	return ucma_backend.abi_version();
}

int ucma_rehome_fd(int fd, int newfd)
{
	return ucma_backend.rehome(fd, newfd);
}

/*
 * Send one command: the header and the command travel in a single write, as
 * the kernel requires.  A short write means the kernel rejected the size.
 */
static int ucma_write(int fd, uint32_t cmd, const void *in, size_t in_len,
		      size_t out_len)
{
	struct {
		struct rdma_ucm_cmd_hdr hdr;
		uint8_t body[512];
	} msg;
	size_t total = sizeof(msg.hdr) + in_len;
	ssize_t ret;

	if (in_len > sizeof(msg.body)) {
		errno = EINVAL;
		return -1;
	}
	msg.hdr.cmd = cmd;
	msg.hdr.in = (uint16_t)in_len;
	msg.hdr.out = (uint16_t)out_len;
	memcpy(msg.body, in, in_len);

	ret = ucma_backend.write(fd, &msg, total);
	if (ret < 0)
		return -1;
	if ((size_t)ret != total) {
		errno = ENODATA;
		return -1;
	}
	return 0;
}

static uint64_t ucma_ptr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* Copies a socket address into a kernel sockaddr_storage, checking its size. */
static int ucma_copy_addr(struct __kernel_sockaddr_storage *dst,
			  const struct sockaddr *src, socklen_t len)
{
	if (!src || !len || len > sizeof(*dst)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(dst, src, len);
	return 0;
}

int ucma_cmd_create_id(int fd, uint64_t uid, uint16_t ps, uint8_t qp_type,
		       uint32_t *handle)
{
	struct rdma_ucm_create_id_resp resp = {0};
	struct rdma_ucm_create_id cmd = {
		.uid = uid,
		.response = ucma_ptr(&resp),
		.ps = ps,
		.qp_type = qp_type,
	};

	if (ucma_write(fd, RDMA_USER_CM_CMD_CREATE_ID, &cmd, sizeof(cmd),
		       sizeof(resp)))
		return -1;
	*handle = resp.id;
	return 0;
}

int ucma_cmd_destroy_id(int fd, uint32_t handle, uint32_t *events_reported)
{
	struct rdma_ucm_destroy_id_resp resp = {0};
	struct rdma_ucm_destroy_id cmd = {
		.response = ucma_ptr(&resp),
		.id = handle,
	};

	if (ucma_write(fd, RDMA_USER_CM_CMD_DESTROY_ID, &cmd, sizeof(cmd),
		       sizeof(resp)))
		return -1;
	*events_reported = resp.events_reported;
	return 0;
}

int ucma_cmd_bind(int fd, uint32_t handle, const struct sockaddr *addr,
		  socklen_t len)
{
	struct rdma_ucm_bind cmd = {.id = handle, .addr_size = (uint16_t)len};

	if (ucma_copy_addr(&cmd.addr, addr, len))
		return -1;
	return ucma_write(fd, RDMA_USER_CM_CMD_BIND, &cmd, sizeof(cmd), 0);
}

int ucma_cmd_resolve_addr(int fd, uint32_t handle, const struct sockaddr *src,
			  socklen_t src_len, const struct sockaddr *dst,
			  socklen_t dst_len, uint32_t timeout_ms)
{
	struct rdma_ucm_resolve_addr cmd = {
		.id = handle,
		.timeout_ms = timeout_ms,
		.src_size = (uint16_t)src_len,
		.dst_size = (uint16_t)dst_len,
	};

	if (src && ucma_copy_addr(&cmd.src_addr, src, src_len))
		return -1;
	if (!src)
		cmd.src_size = 0;
	if (ucma_copy_addr(&cmd.dst_addr, dst, dst_len))
		return -1;
	return ucma_write(fd, RDMA_USER_CM_CMD_RESOLVE_ADDR, &cmd, sizeof(cmd),
			  0);
}

int ucma_cmd_resolve_route(int fd, uint32_t handle, uint32_t timeout_ms)
{
	struct rdma_ucm_resolve_route cmd = {
		.id = handle,
		.timeout_ms = timeout_ms,
	};

	return ucma_write(fd, RDMA_USER_CM_CMD_RESOLVE_ROUTE, &cmd, sizeof(cmd),
			  0);
}

int ucma_cmd_query_route(int fd, uint32_t handle,
			 struct rdma_ucm_query_route_resp *resp)
{
	struct rdma_ucm_query cmd = {.response = ucma_ptr(resp), .id = handle};

	memset(resp, 0, sizeof(*resp));
	return ucma_write(fd, RDMA_USER_CM_CMD_QUERY_ROUTE, &cmd, sizeof(cmd),
			  sizeof(*resp));
}

static int ucma_query(int fd, uint32_t handle, uint32_t option, void *resp,
		      size_t len)
{
	struct rdma_ucm_query cmd = {
		.response = ucma_ptr(resp),
		.id = handle,
		.option = option,
	};

	memset(resp, 0, len);
	return ucma_write(fd, RDMA_USER_CM_CMD_QUERY, &cmd, sizeof(cmd), len);
}

int ucma_cmd_query_addr(int fd, uint32_t handle,
			struct rdma_ucm_query_addr_resp *resp)
{
	return ucma_query(fd, handle, RDMA_USER_CM_QUERY_ADDR, resp,
			  sizeof(*resp));
}

int ucma_cmd_query_gid(int fd, uint32_t handle,
		       struct rdma_ucm_query_addr_resp *resp)
{
	return ucma_query(fd, handle, RDMA_USER_CM_QUERY_GID, resp,
			  sizeof(*resp));
}

int ucma_cmd_query_path(int fd, uint32_t handle,
			struct rdma_ucm_query_path_resp *resp, size_t len)
{
	if (len < sizeof(*resp) || len > UINT16_MAX) {
		errno = EINVAL;
		return -1;
	}
	return ucma_query(fd, handle, RDMA_USER_CM_QUERY_PATH, resp, len);
}

int ucma_cmd_connect(int fd, uint32_t handle,
		     const struct rdma_ucm_conn_param *param,
		     const struct rdma_ucm_ece *ece)
{
	struct rdma_ucm_connect cmd = {.conn_param = *param, .id = handle};

	if (ece)
		cmd.ece = *ece;
	return ucma_write(fd, RDMA_USER_CM_CMD_CONNECT, &cmd, sizeof(cmd), 0);
}

int ucma_cmd_listen(int fd, uint32_t handle, uint32_t backlog)
{
	struct rdma_ucm_listen cmd = {.id = handle, .backlog = backlog};

	return ucma_write(fd, RDMA_USER_CM_CMD_LISTEN, &cmd, sizeof(cmd), 0);
}

int ucma_cmd_accept(int fd, uint32_t handle, uint64_t uid,
		    const struct rdma_ucm_conn_param *param,
		    const struct rdma_ucm_ece *ece)
{
	struct rdma_ucm_accept cmd = {.uid = uid, .id = handle};

	if (param)
		cmd.conn_param = *param;
	if (ece)
		cmd.ece = *ece;
	return ucma_write(fd, RDMA_USER_CM_CMD_ACCEPT, &cmd, sizeof(cmd), 0);
}

int ucma_cmd_reject(int fd, uint32_t handle, const void *data, uint8_t len,
		    uint8_t reason)
{
	struct rdma_ucm_reject cmd = {
		.id = handle,
		.private_data_len = len,
		.reason = reason,
	};

	if (len) {
		if (!data) {
			errno = EINVAL;
			return -1;
		}
		memcpy(cmd.private_data, data, len);
	}
	return ucma_write(fd, RDMA_USER_CM_CMD_REJECT, &cmd, sizeof(cmd), 0);
}

int ucma_cmd_disconnect(int fd, uint32_t handle)
{
	struct rdma_ucm_disconnect cmd = {.id = handle};

	return ucma_write(fd, RDMA_USER_CM_CMD_DISCONNECT, &cmd, sizeof(cmd),
			  0);
}

int ucma_cmd_init_qp_attr(int fd, uint32_t handle, uint32_t qp_state,
			  struct ib_uverbs_qp_attr *resp)
{
	struct rdma_ucm_init_qp_attr cmd = {
		.response = ucma_ptr(resp),
		.id = handle,
		.qp_state = qp_state,
	};

	memset(resp, 0, sizeof(*resp));
	return ucma_write(fd, RDMA_USER_CM_CMD_INIT_QP_ATTR, &cmd, sizeof(cmd),
			  sizeof(*resp));
}

int ucma_cmd_get_event(int fd, struct rdma_ucm_event_resp *resp)
{
	struct rdma_ucm_get_event cmd = {.response = ucma_ptr(resp)};

	memset(resp, 0, sizeof(*resp));
	return ucma_write(fd, RDMA_USER_CM_CMD_GET_EVENT, &cmd, sizeof(cmd),
			  sizeof(*resp));
}

int ucma_cmd_set_option(int fd, uint32_t handle, uint32_t level,
			uint32_t optname, const void *optval, uint32_t optlen)
{
	struct rdma_ucm_set_option cmd = {
		.optval = ucma_ptr(optval),
		.id = handle,
		.level = level,
		.optname = optname,
		.optlen = optlen,
	};

	return ucma_write(fd, RDMA_USER_CM_CMD_SET_OPTION, &cmd, sizeof(cmd),
			  0);
}

int ucma_cmd_notify(int fd, uint32_t handle, uint32_t event)
{
	struct rdma_ucm_notify cmd = {.id = handle, .event = event};

	return ucma_write(fd, RDMA_USER_CM_CMD_NOTIFY, &cmd, sizeof(cmd), 0);
}

int ucma_cmd_join_mcast(int fd, uint32_t handle, uint64_t uid,
			const struct sockaddr *addr, socklen_t len,
			uint16_t join_flags, uint32_t *mc_handle)
{
	struct rdma_ucm_create_id_resp resp = {0};
	struct rdma_ucm_join_mcast cmd = {
		.response = ucma_ptr(&resp),
		.uid = uid,
		.id = handle,
		.addr_size = (uint16_t)len,
		.join_flags = join_flags,
	};

	if (ucma_copy_addr(&cmd.addr, addr, len))
		return -1;
	if (ucma_write(fd, RDMA_USER_CM_CMD_JOIN_MCAST, &cmd, sizeof(cmd),
		       sizeof(resp)))
		return -1;
	*mc_handle = resp.id;
	return 0;
}

int ucma_cmd_leave_mcast(int fd, uint32_t mc_handle, uint32_t *events_reported)
{
	struct rdma_ucm_destroy_id_resp resp = {0};
	struct rdma_ucm_destroy_id cmd = {
		.response = ucma_ptr(&resp),
		.id = mc_handle,
	};

	if (ucma_write(fd, RDMA_USER_CM_CMD_LEAVE_MCAST, &cmd, sizeof(cmd),
		       sizeof(resp)))
		return -1;
	*events_reported = resp.events_reported;
	return 0;
}

/*
 * The command goes to the channel the id moves to; it names the channel the
 * id leaves by its descriptor, which keeps that file alive during the move.
 */
int ucma_cmd_migrate_id(int new_fd, uint32_t handle, int old_fd,
			uint32_t *events_reported)
{
	struct rdma_ucm_migrate_resp resp = {0};
	struct rdma_ucm_migrate_id cmd = {
		.response = ucma_ptr(&resp),
		.id = handle,
		.fd = (uint32_t)old_fd,
	};

	if (ucma_write(new_fd, RDMA_USER_CM_CMD_MIGRATE_ID, &cmd, sizeof(cmd),
		       sizeof(resp)))
		return -1;
	*events_reported = resp.events_reported;
	return 0;
}
