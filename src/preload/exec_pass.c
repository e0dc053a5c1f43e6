// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * What an execve() passes on to the new program image: its descriptors,
 * which the preload of the new image knows nothing about.  Two kinds of
 * connection can be made to survive it (exec.c calls rsp_exec_prepare
 * before every exec; the new image's start calls
 * rsp_exec_roles_at_start).
 *
 * Another process's connection this one holds (a fork shared it,
 * share.c): its descriptor here is an unconnected placeholder, which the
 * new image would get as it is.  So the owner is asked for the relay
 * first (rsp_share_claim_before_exec), as at the first use of it: every
 * descriptor of it becomes the relay's kernel socket, which the new image
 * inherits and uses as it would a TCP socket (a forked child that puts
 * the connection on its standard descriptors and runs cat).  That holds
 * for a connection not answered yet too (taken off a listener a fork
 * shared, as sshd's): the new image could not answer it, so the owner
 * does.  The owner must outlive the use, as for any relayed connection.
 * An exec that then fails leaves the connection relayed: nothing the
 * program can see.  The connection's two addresses go along (role R in
 * the variable below): the new image's getpeername and getsockname answer
 * them on the local socket, as the image before did (sshd logs and
 * matches its client's address).
 *
 * This process's own connections that fork mode moved to RDMA go back to
 * their TCP connections first (moveback.c): the rsocket ends with this
 * image.
 *
 * Fork mode: a TCP connection accepted or connected here and never used
 * (RSP_LAZY_PASSIVE, RSP_LAZY_ACTIVE) has not made its handshake yet, so
 * the new image can make it, if it knows which end it is: otherwise it
 * keeps such a connection on TCP (inherit.c).  The roles go in the new
 * image's environment (RSP_EXEC_ROLES, exec_roles.c), each with the
 * connection's two addresses, so that the new image applies it only to a
 * descriptor that is that connection; the caller's arrays are never
 * changed (a copy is given to the exec).  A connection on several
 * surviving descriptors (twins, fork.c) is passed with each, and they are
 * twins in the new image too.  Not passed, and so inherited as today: a
 * descriptor closed on exec; a handshake under way (its progress is this
 * image's memory); a connection with another surviving descriptor that
 * is no twin (a dup made once its handshake began: two handshakes on one
 * connection would mix their bytes).
 *
 * The new image reads the variable at its start, before the program
 * runs, and removes it from the environment so that it reaches no later
 * image (a later exec names its own).  A set-user-ID image ignores it
 * (secure_getenv): the invoker could name any descriptor.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"
#include "share.h"
#include "util/env.h"

bool rsp_fd_survives_exec(int fd)
{
	int fl = rsp_real.fcntl(fd, F_GETFD);

	return fl >= 0 && !(fl & FD_CLOEXEC);
}

static bool claimable(const struct rsp_file *f, void *arg)
{
	(void)arg;
	return share_claimable(f);
}

void rsp_claim_held(bool at_exec)
{
	struct rsp_file **files;
	int n = rsp_files_where(claimable, NULL, &files), i, k, m, *fds;

	for (i = 0; i < n; i++) {
		m = rsp_fds_of(files[i], &fds);
		for (k = 0; k < m && at_exec && !rsp_fd_survives_exec(fds[k]);
		     k++)
			;
		/* it rechecks what fd maps: another thread may close it */
		if (k < m && !rsp_share_claim_before_exec(fds[k]))
			rsp_log("fd %d: the new image gets the placeholder",
				fds[k]);
		free(fds);
	}
	free(files);
}

/* The descriptors that survive the exec, and the sockets they are. */
struct survivors {
	int n, size;
	struct {
		int fd;
		dev_t dev;
		ino_t ino;
	} * e;
};

/* From /proc (false without it: then no role is passed). */
static bool list_survivors(struct survivors *s)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	struct stat st;
	char *end;
	long fd;
	void *p;

	if (!d)
		return false;
	while ((e = readdir(d))) {
		fd = strtol(e->d_name, &end, 10);
		if (*end || end == e->d_name || fd == dirfd(d) ||
		    !rsp_fd_survives_exec((int)fd) || fstat((int)fd, &st))
			continue;
		if (s->n == s->size) {
			s->size = s->size ? 2 * s->size : 64;
			p = realloc(s->e, s->size * sizeof(*s->e));
			if (!p)
				break;
			s->e = p;
		}
		s->e[s->n].fd = (int)fd;
		s->e[s->n].dev = st.st_dev;
		s->e[s->n++].ino = st.st_ino;
	}
	closedir(d);
	return !e;
}

/*
 * A surviving descriptor of entry @i's socket that is not fork mode's
 * twin of it (a dup made once a handshake began: TCP), or -1.
 */
static int other_of(const struct survivors *s, int i)
{
	enum rsp_lazy state = rsp_lazy_get(s->e[i].fd);
	int k;

	for (k = 0; k < s->n; k++)
		if (k != i && s->e[k].dev == s->e[i].dev &&
		    s->e[k].ino == s->e[i].ino &&
		    (rsp_lazy_get(s->e[k].fd) != state || rsp_get(s->e[k].fd)))
			return s->e[k].fd;
	return -1;
}

/* fd's entry, if it can be passed. */
static bool role_of(int fd, struct rsp_exec_role *r)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	enum rsp_lazy state = rsp_lazy_get(fd);

	if ((state != RSP_LAZY_PASSIVE && state != RSP_LAZY_ACTIVE) ||
	    rsp_get(fd))
		return false;
	*r = (struct rsp_exec_role){.fd = fd,
				    .passive = state == RSP_LAZY_PASSIVE};
	if (rsp_real.getsockname(fd, (struct sockaddr *)&ss, &len) ||
	    !rsp_exec_addr_from(&r->local, (struct sockaddr *)&ss, len))
		return false;
	len = sizeof(ss);
	return !rsp_real.getpeername(fd, (struct sockaddr *)&ss, &len) &&
	       rsp_exec_addr_from(&r->peer, (struct sockaddr *)&ss, len);
}

/*
 * Entry @i's fork-mode role, unless another survivor is its socket in
 * another state (its twins are passed alike).
 */
static bool fork_role(const struct survivors *s, int i, struct rsp_exec_role *r)
{
	int other;

	if (!role_of(s->e[i].fd, r))
		return false;
	other = other_of(s, i);
	if (other >= 0)
		rsp_log("fd %d: not passed to the new image as fork mode's "
			"(fd %d is the same connection, not as unused)",
			s->e[i].fd, other);
	return other < 0;
}

/*
 * fd's entry if it is a connection another process relays for this one,
 * whose names the program knows (share.c kept them at the fork).
 */
static bool relayed_of(int fd, struct rsp_exec_role *r)
{
	const struct rsp_file *f = rsp_peek(fd);

	if (!f || !__atomic_load_n(&f->claimed, __ATOMIC_ACQUIRE) || !f->addrs)
		return false;
	*r = (struct rsp_exec_role){.fd = fd, .relayed = true};
	return rsp_exec_addr_from(&r->local,
				  (const struct sockaddr *)&f->addrs->local,
				  f->addrs->local_len) &&
	       rsp_exec_addr_from(&r->peer,
				  (const struct sockaddr *)&f->addrs->peer,
				  f->addrs->peer_len);
}

/* The variable's value for this exec in @out; its number of entries. */
static int collect_roles(char *out, size_t size)
{
	struct survivors s = {0};
	struct rsp_exec_role r;
	size_t used = 0;
	int i, n = 0, k;

	if (!list_survivors(&s)) {
		free(s.e);
		return 0;
	}
	for (i = 0; i < s.n && n < RSP_EXEC_MAX_ROLES; i++) {
		/* A relayed connection's names: any descriptor may carry them. */
		if (!relayed_of(s.e[i].fd, &r) && !fork_role(&s, i, &r))
			continue;
		if (n)
			out[used++] = ',';
		k = rsp_exec_role_format(out + used, size - used, &r);
		if (k < 0) {
			used -= n ? 1 : 0;
			continue;
		}
		used += k;
		n++;
		if (r.relayed)
			rsp_log("fd %d: its addresses passed to the new image",
				r.fd);
		else
			rsp_log("fd %d: passed to the new image (%s, not used "
				"yet)",
				r.fd, r.passive ? "accepted" : "connected");
	}
	out[used] = 0;
	free(s.e);
	return n;
}

static bool is_ours(const char *var)
{
	size_t n = sizeof(RSP_EXEC_ROLES) - 1;

	return !strncmp(var, RSP_EXEC_ROLES, n) && var[n] == '=';
}

/*
 * @envp without any RSP_EXEC_ROLES of its own (only ours names these
 * descriptors), with @roles if not NULL: @envp itself when that changes
 * nothing.
 */
static char **env_with(char *const envp[], const char *roles)
{
	size_t n, i, k = 0, vlen = 0;
	bool stale = false;
	char **env;

	for (n = 0; envp && envp[n]; n++)
		stale |= is_ours(envp[n]);
	if (!roles && !stale)
		return (char **)envp;
	if (roles)
		vlen = sizeof(RSP_EXEC_ROLES) + 1 + strlen(roles);
	env = malloc((n + 2) * sizeof(*env) + vlen);
	if (!env) {
		rsp_log("exec: no memory for the environment's copy: "
			"its connections stay on TCP");
		return (char **)envp;
	}
	for (i = 0; i < n; i++)
		if (!is_ours(envp[i]))
			env[k++] = envp[i];
	if (roles) {
		env[k] = (char *)(env + n + 2);
		snprintf(env[k++], vlen, "%s=%s", RSP_EXEC_ROLES, roles);
	}
	env[k] = NULL;
	return env;
}

char **rsp_exec_prepare(char *const envp[])
{
	char roles[RSP_EXEC_ROLES_LEN + 1];
	int n;

	/*
	 * A vfork child runs in its parent's memory, which the claims would
	 * change (and the atfork handlers, which keep rsp_pid current, did
	 * not run): it execs as it would without us.
	 */
	if (rsp_in_vfork_child())
		return (char **)envp;
	rsp_claim_held(true);
	rsp_move_back_before_exec();
	n = collect_roles(roles, sizeof(roles));
	return env_with(envp, n ? roles : NULL);
}

void rsp_exec_failed(char **env, char *const envp[])
{
	if (env != (char **)envp)
		free(env);
}

/* --- the new image's start ---------------------------------------------- */

int rsp_sock_int(int fd, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	if (syscall(SYS_getsockopt, fd, SOL_SOCKET, name, &v, &len))
		return -1;
	return v;
}

bool rsp_exec_role_fits(const struct rsp_exec_role *r)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (r->fd < 0 || rsp_sock_int(r->fd, SO_DOMAIN) != r->local.family ||
	    rsp_sock_int(r->fd, SO_TYPE) != SOCK_STREAM ||
	    rsp_sock_int(r->fd, SO_PROTOCOL) != IPPROTO_TCP)
		return false;
	if (syscall(SYS_getsockname, r->fd, (struct sockaddr *)&ss, &len) ||
	    !rsp_exec_addr_is(&r->local, (struct sockaddr *)&ss, len))
		return false;
	len = sizeof(ss);
	return !syscall(SYS_getpeername, r->fd, (struct sockaddr *)&ss, &len) &&
	       rsp_exec_addr_is(&r->peer, (struct sockaddr *)&ss, len);
}

/*
 * What the start did, for the log: the log opens only with the program's
 * first socket call (inherit.c says why).
 */
static struct {
	bool malformed;
	int n;
	struct {
		int fd;
		bool passive, relayed, marked;
	} e[RSP_EXEC_MAX_ROLES];
} seen;

/* Whether entry @i names the socket of another entry's descriptor: twins. */
static bool shared_socket(const struct rsp_exec_role *r, int n, int i)
{
	struct stat a, b;
	int k;

	if (fstat(r[i].fd, &a))
		return true;
	for (k = 0; k < n; k++)
		if (k != i && !fstat(r[k].fd, &b) && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino)
			return true;
	return false;
}

static enum rsp_lazy lazy_state(const struct rsp_exec_role *r)
{
	return r->passive ? RSP_LAZY_PASSIVE : RSP_LAZY_ACTIVE;
}

/* A relayed connection's socket: one end of a local stream pair. */
static bool relayed_fits(const struct rsp_exec_role *r)
{
	return rsp_sock_int(r->fd, SO_DOMAIN) == AF_UNIX &&
	       rsp_sock_int(r->fd, SO_TYPE) == SOCK_STREAM;
}

/*
 * Entry @r's descriptor, if it is a relayed connection's local socket,
 * becomes what it was in the image before for getsockname and
 * getpeername (share.c's rsp_share_name answers the entry's addresses)
 * and TCP's options; its calls stay the local socket's.  False when it
 * is no such socket, or without memory.
 */
static bool apply_names(const struct rsp_exec_role *r)
{
	struct rsp_file *f;
	struct rsp_addrs *a;

	if (!relayed_fits(r))
		return false;
	f = rsp_file_new(-1, r->local.family);
	a = calloc(1, sizeof(*a));
	if (!f || !a) {
		free(f);
		free(a);
		return false;
	}
	a->local_len = rsp_exec_addr_to(&r->local, &a->local);
	a->peer_len = rsp_exec_addr_to(&r->peer, &a->peer);
	f->addrs = a;
	/*
	 * No process of this one's makes its calls (the kernel's socket is
	 * the relay's already), and nobody is asked for it.
	 */
	f->owner = 0;
	f->forked = true;
	f->claimed = true;
	rsp_set(r->fd, f);
	return true;
}

void rsp_exec_roles_at_start(bool roles, bool names,
			     bool (*mark)(int, enum rsp_lazy, bool))
{
	static char copy[RSP_EXEC_ROLES_LEN + 1];
	struct rsp_exec_role r[RSP_EXEC_MAX_ROLES];
	const char *v = cma_env(RSP_EXEC_ROLES);
	bool too_long = v && strnlen(v, sizeof(copy)) == sizeof(copy);
	int n, i;

	if (v && !too_long)
		strcpy(copy, v);
	/* also in secure-execution mode: it is never a later image's */
	unsetenv(RSP_EXEC_ROLES);
	if (!v || (!roles && !names))
		return;
	n = too_long ? -1 : rsp_exec_roles_parse(copy, r, RSP_EXEC_MAX_ROLES);
	if (n < 0) {
		seen.malformed = true;
		return;
	}
	for (i = 0; i < n; i++) {
		seen.e[i].fd = r[i].fd;
		seen.e[i].passive = r[i].passive;
		seen.e[i].relayed = r[i].relayed;
		seen.e[i].marked = false;
		if (r[i].relayed)
			seen.e[i].marked = names && apply_names(&r[i]);
		else if (roles && rsp_exec_role_fits(&r[i]))
			seen.e[i].marked = mark(r[i].fd, lazy_state(&r[i]),
						shared_socket(r, n, i));
	}
	seen.n = n;
}

void rsp_exec_roles_log(void)
{
	int i;

	if (seen.malformed)
		rsp_log("%s is malformed: its descriptors stay inherited",
			RSP_EXEC_ROLES);
	for (i = 0; i < seen.n; i++) {
		if (seen.e[i].marked && seen.e[i].relayed)
			rsp_log("fd %d: relayed by another process; its "
				"addresses are the connection's",
				seen.e[i].fd);
		else if (seen.e[i].marked)
			rsp_log("fd %d: %s by the image before execve, "
				"not used yet: fork mode's handshake at its "
				"first use",
				seen.e[i].fd,
				seen.e[i].passive ? "accepted" : "connected");
		else
			rsp_log("fd %d: named by %s but not that connection: "
				"it stays inherited",
				seen.e[i].fd, RSP_EXEC_ROLES);
	}
	seen.malformed = false;
	seen.n = 0;
}
