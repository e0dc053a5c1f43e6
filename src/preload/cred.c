// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Credential changes (setuid, setgid, setgroups and their relatives).
 *
 * The kernel's RDMA device files (rdma_cm, uverbs) refuse write() to a
 * process whose credentials are not those it had when it opened them
 * (EACCES; the kernel logs "changed security contexts after opening file
 * descriptor").  Any successful set*id call gives the process a new set
 * of credentials, even one that changes no id: after it, every rsocket it
 * made before fails (a software device such as rxe posts sends through
 * write(), so the next send fails with EIO; a disconnect fails on every
 * device).  Servers such as the rsync daemon set the ids they already
 * have (a module's "uid = root") after the first bytes went over RDMA.
 *
 * So a call that would change no id, and that the kernel would allow,
 * returns success without reaching the kernel: the process is exactly as
 * it would be, and its RDMA files keep working.  After a real change the
 * rsockets made before follow the new credentials: their CM calls move to
 * a file opened under them when the old one is refused (the library's
 * src/cm/creds.c: a listener at its next accept, a connection at its
 * next CM call), and a send the device rings through write() goes again
 * through the device's ioctl (verbs_again.c).  So a server may listen as
 * root and serve as a user, and an rsync daemon's child may change its
 * ids for a module on a connection it holds.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"

#define KEEP ((unsigned int)-1)

static void *real(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (!p) {
		fprintf(stderr, "librspreload: no %s in the C library\n", name);
		abort();
	}
	return p;
}

/* The ids of one kind: real, effective, saved, filesystem. */
struct ids {
	unsigned int r, e, s, fs;
};

static void get_uids(struct ids *id)
{
	uid_t r, e, s;

	getresuid(&r, &e, &s);
	id->r = r;
	id->e = e;
	id->s = s;
	/* an invalid id changes nothing and returns the current one */
	id->fs = (unsigned int)setfsuid((uid_t)-1);
}

static void get_gids(struct ids *id)
{
	gid_t r, e, s;

	getresgid(&r, &e, &s);
	id->r = r;
	id->e = e;
	id->s = s;
	id->fs = (unsigned int)setfsgid((gid_t)-1);
}

static bool same(unsigned int want, unsigned int have)
{
	return want == KEEP || want == have;
}

/*
 * setres*id(r, e, s) with each id kept or equal to the current one, and
 * the filesystem id (which follows the new effective id) already that.
 * Any process may make this call: it would change nothing.
 */
static bool noop_res(const struct ids *id, unsigned int r, unsigned int e,
		     unsigned int s)
{
	return same(r, id->r) && same(e, id->e) && same(s, id->s) &&
	       id->fs == id->e;
}

/* set*id(x): all four ids already x (then allowed without privilege). */
static bool noop_all(const struct ids *id, unsigned int x)
{
	return id->r == x && id->e == x && id->s == x && id->fs == x;
}

/*
 * setre*id(r, e): the saved id becomes the new effective one when r is
 * given or e differs from the current real id (credentials(7)).
 */
static bool noop_re(const struct ids *id, unsigned int r, unsigned int e)
{
	unsigned int ne = e == KEEP ? id->e : e;

	if (!same(r, id->r) || !same(e, id->e) || id->fs != ne)
		return false;
	if (r != KEEP || (e != KEEP && e != id->r))
		return id->s == ne;
	return true;
}

static void changing(const char *call)
{
	if (rsp_any())
		rsp_log("%s changes the credentials: the rsockets made "
			"before follow them",
			call);
}

#define UID_CALL(name, noop, call, ...)                                        \
	do {                                                                   \
		struct ids id;                                                 \
		rsp_init();                                                    \
		if (!rsp_config.disabled) {                                    \
			get_uids(&id);                                         \
			if (noop)                                              \
				return 0;                                      \
			changing(name);                                        \
		}                                                              \
		return call(__VA_ARGS__);                                      \
	} while (0)

#define GID_CALL(name, noop, call, ...)                                        \
	do {                                                                   \
		struct ids id;                                                 \
		rsp_init();                                                    \
		if (!rsp_config.disabled) {                                    \
			get_gids(&id);                                         \
			if (noop)                                              \
				return 0;                                      \
			changing(name);                                        \
		}                                                              \
		return call(__VA_ARGS__);                                      \
	} while (0)

static int (*real_setuid)(uid_t);
static int (*real_setgid)(gid_t);
static int (*real_seteuid)(uid_t);
static int (*real_setegid)(gid_t);
static int (*real_setreuid)(uid_t, uid_t);
static int (*real_setregid)(gid_t, gid_t);
static int (*real_setresuid)(uid_t, uid_t, uid_t);
static int (*real_setresgid)(gid_t, gid_t, gid_t);
static int (*real_setgroups)(size_t, const gid_t *);

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void resolve(void)
{
	real_setuid = real("setuid");
	real_setgid = real("setgid");
	real_seteuid = real("seteuid");
	real_setegid = real("setegid");
	real_setreuid = real("setreuid");
	real_setregid = real("setregid");
	real_setresuid = real("setresuid");
	real_setresgid = real("setresgid");
	real_setgroups = real("setgroups");
}

#define REAL(name) (pthread_once(&once, resolve), real_##name)

RSP_EXPORT int setuid(uid_t u)
{
	UID_CALL("setuid", noop_all(&id, u), REAL(setuid), u);
}

RSP_EXPORT int setgid(gid_t g)
{
	GID_CALL("setgid", noop_all(&id, g), REAL(setgid), g);
}

RSP_EXPORT int seteuid(uid_t u)
{
	UID_CALL("seteuid", u != (uid_t)-1 && noop_res(&id, KEEP, u, KEEP),
		 REAL(seteuid), u);
}

RSP_EXPORT int setegid(gid_t g)
{
	GID_CALL("setegid", g != (gid_t)-1 && noop_res(&id, KEEP, g, KEEP),
		 REAL(setegid), g);
}

RSP_EXPORT int setreuid(uid_t r, uid_t e)
{
	UID_CALL("setreuid", noop_re(&id, r, e), REAL(setreuid), r, e);
}

RSP_EXPORT int setregid(gid_t r, gid_t e)
{
	GID_CALL("setregid", noop_re(&id, r, e), REAL(setregid), r, e);
}

RSP_EXPORT int setresuid(uid_t r, uid_t e, uid_t s)
{
	UID_CALL("setresuid", noop_res(&id, r, e, s), REAL(setresuid), r, e, s);
}

RSP_EXPORT int setresgid(gid_t r, gid_t e, gid_t s)
{
	GID_CALL("setresgid", noop_res(&id, r, e, s), REAL(setresgid), r, e, s);
}

/* Whether the process may call setgroups at all (else EPERM stays). */
static bool may_setgroups(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
	char buf[16] = "";
	FILE *f;

	if (syscall(SYS_capget, &h, d) ||
	    !(d[CAP_TO_INDEX(CAP_SETGID)].effective & CAP_TO_MASK(CAP_SETGID)))
		return false;
	/* a user namespace may forbid it to everyone */
	f = fopen("/proc/self/setgroups", "re");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	return strncmp(buf, "deny", 4) != 0;
}

/* @list, as a set, is the process's supplementary groups. */
static bool same_groups(size_t n, const gid_t *list)
{
	gid_t have[256];
	size_t i, j;
	int m;

	if (n > 256 || (n && !list))
		return false;
	m = getgroups(256, have);
	if (m < 0)
		return false;
	for (i = 0; i < n; i++) {
		for (j = 0; j < (size_t)m && have[j] != list[i]; j++)
			;
		if (j == (size_t)m)
			return false;
	}
	for (j = 0; j < (size_t)m; j++) {
		for (i = 0; i < n && list[i] != have[j]; i++)
			;
		if (i == n)
			return false;
	}
	return true;
}

RSP_EXPORT int setgroups(size_t n, const gid_t *list)
{
	rsp_init();
	if (!rsp_config.disabled) {
		if (same_groups(n, list) && may_setgroups())
			return 0;
		changing("setgroups");
	}
	return REAL(setgroups)(n, list);
}
