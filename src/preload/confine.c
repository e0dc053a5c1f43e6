// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * A process about to confine itself: fewer descriptors than it has now
 * (RLIMIT_NOFILE lowered), the "no new privileges" bit, a seccomp filter.
 * sshd's pre-authentication child does all three (the limit to 1, then
 * the filter), libseccomp's users the last two.  Once confined it can no
 * longer make what a connection of another process's needs at its first
 * use here (the request for its relay, share.c: a message on the channel
 * and a descriptor received), and a filter that kills on those calls
 * ends it where the program only read its socket.  So at the first of
 * them each such connection it holds is relayed, as before an exec: from
 * then on the program reads and writes a kernel socket, with the calls it
 * would make on TCP.
 *
 * The calls themselves are made as the system calls they are, whatever
 * state the preload is in: a sanitizer's runtime makes some of them
 * while it starts, before anything else of the process may run.
 *
 * Not covered: a filter loaded with the seccomp(2) system call through
 * syscall(), which cannot be stood in front of (libseccomp sets
 * no_new_privs first unless told not to); and a process's own rsockets,
 * whose verbs calls a filter may refuse as for any RDMA program.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"

/*
 * A sanitizer's runtime calls some of these while it starts (ThreadSanitizer
 * and AddressSanitizer set RLIMIT_CORE), before its instrumentation may
 * run: what they go through until a confinement is seen is not
 * instrumented.
 */
#define EARLY __attribute__((no_sanitize("address", "thread", "undefined")))

static void confining(void)
{
	rsp_init();
	if (!rsp_config.disabled)
		rsp_claim_held(false);
}

/* Before this process's soft limit on @resource becomes @soft. */
EARLY static void limiting(int resource, rlim_t soft)
{
	struct rlimit now;

	if (resource == RLIMIT_NOFILE && !getrlimit(RLIMIT_NOFILE, &now) &&
	    soft < now.rlim_cur)
		confining();
}

/*
 * The C library declares a new limit non-null, but a program may pass
 * NULL (the kernel says EFAULT): the compiler must not drop the check.
 */
EARLY static const void *opaque(const void *p)
{
	__asm__("" : "+r"(p));
	return p;
}

EARLY static bool this_process(pid_t pid)
{
	return !pid || pid == getpid();
}

EARLY RSP_EXPORT int prctl(int option, ...)
{
	unsigned long arg[4];
	va_list ap;
	int i;

	/* prctl takes up to four more arguments; unused ones are ignored */
	va_start(ap, option);
	for (i = 0; i < 4; i++)
		arg[i] = va_arg(ap, unsigned long);
	va_end(ap);
	if (option == PR_SET_SECCOMP || option == PR_SET_NO_NEW_PRIVS)
		confining();
	return (int)syscall(SYS_prctl, option, arg[0], arg[1], arg[2], arg[3]);
}

EARLY RSP_EXPORT int setrlimit(__rlimit_resource_t resource,
			       const struct rlimit *rl)
{
	const struct rlimit *lim = opaque(rl);

	if (lim)
		limiting((int)resource, lim->rlim_cur);
	return (int)syscall(SYS_prlimit64, 0, resource, rl, NULL);
}

EARLY RSP_EXPORT int setrlimit64(__rlimit_resource_t resource,
				 const struct rlimit64 *rl)
{
	const struct rlimit64 *lim = opaque(rl);

	if (lim)
		limiting((int)resource, (rlim_t)lim->rlim_cur);
	return (int)syscall(SYS_prlimit64, 0, resource, rl, NULL);
}

EARLY RSP_EXPORT int prlimit(pid_t pid, __rlimit_resource_t resource,
			     const struct rlimit *rl, struct rlimit *old)
{
	if (rl && this_process(pid))
		limiting((int)resource, rl->rlim_cur);
	return (int)syscall(SYS_prlimit64, pid, resource, rl, old);
}

EARLY RSP_EXPORT int prlimit64(pid_t pid, __rlimit_resource_t resource,
			       const struct rlimit64 *rl, struct rlimit64 *old)
{
	if (rl && this_process(pid))
		limiting((int)resource, (rlim_t)rl->rlim_cur);
	return (int)syscall(SYS_prlimit64, pid, resource, rl, old);
}
