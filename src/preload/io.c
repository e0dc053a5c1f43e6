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
#include "verbs_again.h"

RSP_EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	struct rsp_file *f;
	ssize_t n;

	rsp_init();
	f = rsp_get_io(fd, false, 0);
	if (f == RSP_AGAIN)
		return -1;
	if (!f || !rsp_read_enter(f))
		return rsp_real.read(fd, buf, len);
	n = rread(f->rs, buf, len);
	rsp_read_leave(f);
	return rsp_back_after_read(fd, f, n) ? rsp_real.read(fd, buf, len) : n;
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
	ssize_t got;

	rsp_init();
	f = rsp_get_io(fd, false, 0);
	if (f == RSP_AGAIN)
		return -1;
	if (!f || !rsp_read_enter(f))
		return rsp_real.readv(fd, iov, n);
	got = rreadv(f->rs, iov, n);
	rsp_read_leave(f);
	return rsp_back_after_read(fd, f, got) ? rsp_real.readv(fd, iov, n)
					       : got;
}

RSP_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	struct rsp_file *f;
	ssize_t n;

	rsp_init();
	f = rsp_get_io(fd, true, 0);
	if (f == RSP_AGAIN)
		return -1;
	/*
	 * Not a socket of ours: libibverbs' commands come this way, and one
	 * refused after a credential change may be sent again.
	 */
	if (!f)
		return rsp_verbs_write(fd, buf, len);
	n = rwrite(f->rs, buf, len);
	return rsp_back_after_write(fd, f, n) ? rsp_real.write(fd, buf, len)
					      : n;
}

RSP_EXPORT ssize_t writev(int fd, const struct iovec *iov, int n)
{
	struct rsp_file *f;
	ssize_t put;

	rsp_init();
	f = rsp_get_io(fd, true, 0);
	if (f == RSP_AGAIN)
		return -1;
	if (!f)
		return rsp_real.writev(fd, iov, n);
	put = rwritev(f->rs, iov, n);
	return rsp_back_after_write(fd, f, put) ? rsp_real.writev(fd, iov, n)
						: put;
}

RSP_EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	struct rsp_file *f;
	ssize_t n;

	rsp_init();
	f = rsp_get_io(fd, false, flags);
	if (f == RSP_AGAIN)
		return -1;
	if (!f || !rsp_read_enter(f))
		return rsp_real.recv(fd, buf, len, flags);
	n = rrecv(f->rs, buf, len, flags);
	rsp_read_leave(f);
	return rsp_back_after_read(fd, f, n)
		       ? rsp_real.recv(fd, buf, len, flags)
		       : n;
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
	ssize_t n;

	rsp_init();
	f = rsp_get_io(fd, false, flags);
	if (f == RSP_AGAIN)
		return -1;
	if (!f || !rsp_read_enter(f))
		return rsp_real.recvfrom(fd, buf, len, flags, sa, salen);
	n = rrecvfrom(f->rs, buf, len, flags, sa, salen);
	rsp_read_leave(f);
	return rsp_back_after_read(fd, f, n)
		       ? rsp_real.recvfrom(fd, buf, len, flags, sa, salen)
		       : n;
}

RSP_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen,
				  int flags, struct sockaddr *sa,
				  socklen_t *salen)
{
	if (len > buflen)
		abort();
	return recvfrom(fd, buf, len, flags, sa, salen);
}

/*
 * rsockets carry no ancillary data: a UDP program asking for some
 * (IP_PKTINFO, timestamps) gets none, as when no option enabled it.
 */
static ssize_t recvmsg_dgram(struct rsp_file *f, struct msghdr *msg, int flags)
{
	struct msghdr m = *msg;
	ssize_t n;

	m.msg_control = NULL;
	m.msg_controllen = 0;
	n = rrecvmsg(f->rs, &m, flags);
	msg->msg_namelen = m.msg_namelen;
	msg->msg_flags = m.msg_flags;
	msg->msg_controllen = 0;
	return n;
}

RSP_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct rsp_file *f;
	ssize_t n;

	rsp_init();
	f = rsp_get_io(fd, false, flags);
	if (f == RSP_AGAIN)
		return -1;
	if (f && f->dgram && msg)
		return recvmsg_dgram(f, msg, flags);
	if (!f || !rsp_read_enter(f))
		return rsp_real.recvmsg(fd, msg, flags);
	n = rrecvmsg(f->rs, msg, flags);
	rsp_read_leave(f);
	return rsp_back_after_read(fd, f, n) ? rsp_real.recvmsg(fd, msg, flags)
					     : n;
}

RSP_EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	struct rsp_file *f;
	ssize_t n;

	rsp_init();
	f = rsp_get_io(fd, true, flags);
	if (f == RSP_AGAIN)
		return -1;
	if (!f)
		return rsp_real.send(fd, buf, len, flags);
	n = rsend(f->rs, buf, len, flags);
	return rsp_back_after_write(fd, f, n)
		       ? rsp_real.send(fd, buf, len, flags)
		       : n;
}

/*
 * UDP: the first destination may decide the socket is the kernel's
 * (dgram.c); then the call goes there.
 */
static struct rsp_file *dgram_dest(int fd, struct rsp_file *f,
				   const struct sockaddr *sa, socklen_t salen,
				   int *err)
{
	int ret = rsp_dgram_choose(fd, f, sa, salen, false);

	*err = ret < 0;
	return ret > 0 ? f : NULL;
}

RSP_EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags,
			  const struct sockaddr *sa, socklen_t salen)
{
	struct rsp_file *f;
	int err;
	ssize_t n;

	rsp_init();
	f = rsp_get_io(fd, true, flags);
	if (f == RSP_AGAIN)
		return -1;
	if (f && f->dgram) {
		f = dgram_dest(fd, f, sa, salen, &err);
		if (err)
			return -1;
		if (f)
			return rsendto(f->rs, buf, len, flags, sa, salen);
	} else if (f) {
		/*
		 * Linux's TCP ignores a destination given to sendto
		 * (sockperf passes one): so does the preload, where rsendto
		 * would say EISCONN.
		 */
		n = rsend(f->rs, buf, len, flags);
		if (!rsp_back_after_write(fd, f, n))
			return n;
	}
	return rsp_real.sendto(fd, buf, len, flags, sa, salen);
}

RSP_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct rsp_file *f;
	struct msghdr m;
	int err;
	ssize_t n;

	rsp_init();
	f = rsp_get_io(fd, true, flags);
	if (f == RSP_AGAIN)
		return -1;
	if (!f)
		return rsp_real.sendmsg(fd, msg, flags);
	if (!msg)
		return rsendmsg(f->rs, msg, flags);
	m = *msg;
	if (f->dgram) {
		f = dgram_dest(fd, f, (const struct sockaddr *)m.msg_name,
			       m.msg_namelen, &err);
		if (err)
			return -1;
		if (!f)
			return rsp_real.sendmsg(fd, msg, flags);
		/* no ancillary data over rsockets: sent without it */
		m.msg_control = NULL;
		m.msg_controllen = 0;
	} else {
		/* as sendto: TCP ignores the destination */
		m.msg_name = NULL;
		m.msg_namelen = 0;
	}
	n = rsendmsg(f->rs, &m, flags);
	return rsp_back_after_write(fd, f, n) ? rsp_real.sendmsg(fd, msg, flags)
					      : n;
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
	ssize_t put;

	rsp_init();
	f = rsp_get_io(out, true, 0);
	if (f == RSP_AGAIN)
		return -1;
	if (!f)
		return rsp_real.sendfile(out, in, off, n);
	put = sendfile_rs(f, in, off, n);
	return rsp_back_after_write(out, f, put)
		       ? rsp_real.sendfile(out, in, off, n)
		       : put;
}

RSP_EXPORT ssize_t sendfile64(int out, int in, off_t *off, size_t n)
{
	return sendfile(out, in, off, n);
}
