// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Data transfer on the program's sockets: each call goes to its rsocket
 * twin when the descriptor carries an rsocket.  The _chk variants are
 * what programs built with _FORTIFY_SOURCE call instead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "preload.h"

RSP_EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	struct rsp_file *f;

	rsp_init();
	f = rsp_get_io(fd);
	return f ? rread(f->rs, buf, len) : rsp_real.read(fd, buf, len);
}

RSP_EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		abort();
	return read(fd, buf, len);
}

RSP_EXPORT ssize_t readv(int fd, const struct iovec *iov, int n)
{
	struct rsp_file *f;

	rsp_init();
	f = rsp_get_io(fd);
	return f ? rreadv(f->rs, iov, n) : rsp_real.readv(fd, iov, n);
}

RSP_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	struct rsp_file *f;

	rsp_init();
	f = rsp_get_io(fd);
	return f ? rwrite(f->rs, buf, len) : rsp_real.write(fd, buf, len);
}

RSP_EXPORT ssize_t writev(int fd, const struct iovec *iov, int n)
{
	struct rsp_file *f;

	rsp_init();
	f = rsp_get_io(fd);
	return f ? rwritev(f->rs, iov, n) : rsp_real.writev(fd, iov, n);
}

RSP_EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	struct rsp_file *f;

	rsp_init();
	f = rsp_get_io(fd);
	return f ? rrecv(f->rs, buf, len, flags)
		 : rsp_real.recv(fd, buf, len, flags);
}

RSP_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen,
			      int flags)
{
	if (len > buflen)
		abort();
	return recv(fd, buf, len, flags);
}

RSP_EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags,
			    struct sockaddr *sa, socklen_t *salen)
{
	struct rsp_file *f;

	rsp_init();
	f = rsp_get_io(fd);
	return f ? rrecvfrom(f->rs, buf, len, flags, sa, salen)
		 : rsp_real.recvfrom(fd, buf, len, flags, sa, salen);
}

RSP_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen,
				  int flags, struct sockaddr *sa,
				  socklen_t *salen)
{
	if (len > buflen)
		abort();
	return recvfrom(fd, buf, len, flags, sa, salen);
}

RSP_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct rsp_file *f;

	rsp_init();
	f = rsp_get_io(fd);
	return f ? rrecvmsg(f->rs, msg, flags)
		 : rsp_real.recvmsg(fd, msg, flags);
}

RSP_EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	struct rsp_file *f;

	rsp_init();
	f = rsp_get_io(fd);
	return f ? rsend(f->rs, buf, len, flags)
		 : rsp_real.send(fd, buf, len, flags);
}

RSP_EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags,
			  const struct sockaddr *sa, socklen_t salen)
{
	struct rsp_file *f;

	rsp_init();
	f = rsp_get_io(fd);
	/*
	 * Only TCP sockets are carried, and Linux's TCP ignores a destination
	 * given to sendto (sockperf passes one): so does the preload, where
	 * rsendto would say EISCONN.
	 */
	(void)sa;
	(void)salen;
	return f ? rsend(f->rs, buf, len, flags)
		 : rsp_real.sendto(fd, buf, len, flags, sa, salen);
}

RSP_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct rsp_file *f;

	rsp_init();
	f = rsp_get_io(fd);
	if (f && msg && msg->msg_name) {
		/* as sendto: TCP ignores the destination */
		struct msghdr m = *msg;

		m.msg_name = NULL;
		m.msg_namelen = 0;
		return rsendmsg(f->rs, &m, flags);
	}
	return f ? rsendmsg(f->rs, msg, flags)
		 : rsp_real.sendmsg(fd, msg, flags);
}

/*
 * sendfile to an rsocket: read the file into a bounce buffer and send it.
 * Like the kernel's, it may send less than asked; it stops at the first
 * short send so the file offset stays exact.
 */
static ssize_t sendfile_rs(struct rsp_file *f, int in, off_t *off, size_t n)
{
	char buf[16384];
	size_t done = 0;
	bool failed = false;
	ssize_t r, s;

	while (done < n) {
		size_t want = n - done < sizeof(buf) ? n - done : sizeof(buf);

		r = off ? pread(in, buf, want, *off)
			: rsp_real.read(in, buf, want);
		if (r <= 0) {
			failed = r < 0;
			break;
		}
		s = rsend(f->rs, buf, r, 0);
		if (s <= 0) {
			failed = true;
			s = 0;
		}
		done += s;
		if (off)
			*off += s;
		else if (s < r)
			lseek(in, s - r, SEEK_CUR);
		if (s < r)
			break;
	}
	return done ? (ssize_t)done : (failed ? -1 : 0);
}

RSP_EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t n)
{
	struct rsp_file *f;

	rsp_init();
	f = rsp_get_io(out);
	return f ? sendfile_rs(f, in, off, n)
		 : rsp_real.sendfile(out, in, off, n);
}

RSP_EXPORT ssize_t sendfile64(int out, int in, off_t *off, size_t n)
{
	return sendfile(out, in, off, n);
}
