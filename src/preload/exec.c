// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * fork() and the exec family: what a new process or program image keeps.
 * A fork shares the connections (share.c).  Before an exec replaces the
 * program image, what survives it is prepared (exec_pass.c): connections
 * of other processes' held here are relayed, this process's own go back
 * to TCP, and the new image is told their names and, in fork mode, which
 * connections it may still move to RDMA.  The C library's execv, execvp,
 * execl ... call its execve from inside, not through the PLT, so each of
 * them is stood in front of here; the variadic forms build their argument
 * vector and take the path of the vector form they stand for.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"

/* Which real call an exec ends in, and its arguments. */
struct exec_call {
	enum { VIA_EXECVE, VIA_EXECVPE, VIA_FEXECVE, VIA_EXECVEAT } via;
	int dirfd; /* fexecve's descriptor, execveat's directory */
	const char *path;
	char *const *argv;
	int flags; /* execveat's */
};

static int real_exec(const struct exec_call *c, char *const env[])
{
	switch (c->via) {
	case VIA_EXECVE:
		return rsp_real.execve(c->path, c->argv, env);
	case VIA_EXECVPE:
		return rsp_real.execvpe(c->path, c->argv, env);
	case VIA_FEXECVE:
		return rsp_real.fexecve(c->dirfd, c->argv, env);
	default:
		if (rsp_real.execveat)
			return rsp_real.execveat(c->dirfd, c->path, c->argv,
						 env, c->flags);
		return (int)syscall(SYS_execveat, c->dirfd, c->path, c->argv,
				    env, c->flags);
	}
}

/* @c with the environment @envp, as the preload leaves it. */
static int run(const struct exec_call *c, char *const envp[])
{
	char **env;
	int ret, err;

	rsp_init();
	if (rsp_config.disabled)
		return real_exec(c, envp);
	env = rsp_exec_prepare(envp);
	ret = real_exec(c, env);
	/* Still here: the exec failed, the program gets its errno. */
	err = errno;
	rsp_exec_failed(env, envp);
	errno = err;
	return ret;
}

RSP_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	struct exec_call c = {.via = VIA_EXECVE, .path = path, .argv = argv};

	return run(&c, envp);
}

RSP_EXPORT int execv(const char *path, char *const argv[])
{
	struct exec_call c = {.via = VIA_EXECVE, .path = path, .argv = argv};

	return run(&c, environ);
}

RSP_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	struct exec_call c = {.via = VIA_EXECVPE, .path = file, .argv = argv};

	return run(&c, envp);
}

RSP_EXPORT int execvp(const char *file, char *const argv[])
{
	struct exec_call c = {.via = VIA_EXECVPE, .path = file, .argv = argv};

	return run(&c, environ);
}

RSP_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	struct exec_call c = {.via = VIA_FEXECVE, .dirfd = fd, .argv = argv};

	return run(&c, envp);
}

RSP_EXPORT int execveat(int dirfd, const char *path, char *const argv[],
			char *const envp[], int flags)
{
	struct exec_call c = {.via = VIA_EXECVEAT,
			      .dirfd = dirfd,
			      .path = path,
			      .argv = argv,
			      .flags = flags};

	return run(&c, envp);
}

/*
 * The variadic forms' argument vectors live on the stack up to this many
 * arguments, as the C library's own: a vfork child of a threaded program
 * may exec with execl, and must not take the allocator's lock, which
 * another thread of its parent may hold.  Longer ones are malloc'ed.
 */
#define ARGV_ON_STACK 1024

/* How many arguments execl got from @arg0 to the NULL that ends them. */
static size_t va_count(const char *arg0, va_list ap)
{
	size_t n = 0;
	va_list aq;

	va_copy(aq, ap);
	if (arg0)
		for (n = 1; va_arg(aq, char *); n++)
			;
	va_end(aq);
	return n;
}

/*
 * @c with execl's arguments (@arg0, then @ap) as its argument vector, and
 * the environment: execle's, the argument after their NULL, if
 * @with_env; else the process's.
 */
static int run_l(struct exec_call *c, const char *arg0, va_list ap,
		 bool with_env)
{
	size_t n = va_count(arg0, ap), i;
	char *on_stack[ARGV_ON_STACK], **argv = on_stack;
	char *const *envp = environ;
	int ret, err;

	if (n >= ARGV_ON_STACK) {
		argv = malloc((n + 1) * sizeof(*argv));
		if (!argv)
			return -1;
	}
	argv[0] = (char *)arg0;
	for (i = 1; i <= n; i++)
		argv[i] = va_arg(ap, char *); /* argv[n]: the NULL */
	if (with_env)
		envp = va_arg(ap, char *const *);
	c->argv = argv;
	ret = run(c, envp);
	if (argv != on_stack) {
		err = errno;
		free(argv);
		errno = err;
	}
	return ret;
}

RSP_EXPORT int execl(const char *path, const char *arg, ...)
{
	struct exec_call c = {.via = VIA_EXECVE, .path = path};
	va_list ap;
	int ret;

	va_start(ap, arg);
	ret = run_l(&c, arg, ap, false);
	va_end(ap);
	return ret;
}

RSP_EXPORT int execlp(const char *file, const char *arg, ...)
{
	struct exec_call c = {.via = VIA_EXECVPE, .path = file};
	va_list ap;
	int ret;

	va_start(ap, arg);
	ret = run_l(&c, arg, ap, false);
	va_end(ap);
	return ret;
}

RSP_EXPORT int execle(const char *path, const char *arg, ...)
{
	struct exec_call c = {.via = VIA_EXECVE, .path = path};
	va_list ap;
	int ret;

	va_start(ap, arg);
	ret = run_l(&c, arg, ap, true);
	va_end(ap);
	return ret;
}

/*
 * fork(): every connection of ours, made by rsockets or moved from TCP by
 * fork mode, is relayed if the child uses it (share.c).
 */
RSP_EXPORT pid_t fork(void)
{
	struct rsp_share_fork sf;
	pid_t pid;

	rsp_init();
	rsp_share_before_fork(&sf);
	pid = rsp_real.fork();
	rsp_share_after_fork(&sf, pid);
	return pid;
}
