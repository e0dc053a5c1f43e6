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
 * execl's arguments from @arg0 to the NULL that ends them, as an argument
 * vector (malloc'ed; NULL with errno); with @envp, execle's environment,
 * the argument after that NULL.
 */
static char **va_argv(const char *arg0, va_list ap, char *const **envp)
{
	size_t n = 0, i;
	va_list aq;
	char **argv;

	va_copy(aq, ap);
	if (arg0)
		for (n = 1; va_arg(aq, char *); n++)
			;
	va_end(aq);
	argv = malloc((n + 1) * sizeof(*argv));
	if (!argv)
		return NULL;
	argv[0] = (char *)arg0;
	for (i = 1; i <= n; i++)
		argv[i] = va_arg(ap, char *); /* argv[n]: the NULL */
	if (envp)
		*envp = va_arg(ap, char *const *);
	return argv;
}

/* @c, its argument vector made of execl's arguments, freed if it fails. */
static int run_l(struct exec_call *c, char **argv, char *const envp[])
{
	int ret, err;

	if (!argv)
		return -1;
	c->argv = argv;
	ret = run(c, envp);
	err = errno;
	free(argv);
	errno = err;
	return ret;
}

RSP_EXPORT int execl(const char *path, const char *arg, ...)
{
	struct exec_call c = {.via = VIA_EXECVE, .path = path};
	va_list ap;
	char **argv;

	va_start(ap, arg);
	argv = va_argv(arg, ap, NULL);
	va_end(ap);
	return run_l(&c, argv, environ);
}

RSP_EXPORT int execlp(const char *file, const char *arg, ...)
{
	struct exec_call c = {.via = VIA_EXECVPE, .path = file};
	va_list ap;
	char **argv;

	va_start(ap, arg);
	argv = va_argv(arg, ap, NULL);
	va_end(ap);
	return run_l(&c, argv, environ);
}

RSP_EXPORT int execle(const char *path, const char *arg, ...)
{
	struct exec_call c = {.via = VIA_EXECVE, .path = path};
	char *const *envp = NULL;
	va_list ap;
	char **argv;

	va_start(ap, arg);
	argv = va_argv(arg, ap, &envp);
	va_end(ap);
	return run_l(&c, argv, envp);
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
