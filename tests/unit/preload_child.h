/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * For unit tests that run themselves again under this build's
 * librspreload.so (their Makefile.am CPPFLAGS define RSP_PRELOAD_DIR and
 * RSP_LIB_DIR): in a forked child, exec /proc/self/exe with @argv, the
 * preload logging to @log.  Returns only if the exec failed.
 */
#ifndef PRELOAD_CHILD_H
#define PRELOAD_CHILD_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>

static inline void unit_exec_preloaded(const char *log, char *const argv[])
{
	const char *old = getenv("ASAN_OPTIONS");
	char asan[512];

	setenv("LD_PRELOAD", RSP_PRELOAD_DIR "/librspreload.so", 1);
	setenv("LD_LIBRARY_PATH", RSP_LIB_DIR, 1);
	setenv("RDMA_RSOCKET_LOG", log, 1);
	/* An ASan build's preload brings the runtime in after us. */
	snprintf(asan, sizeof(asan), "%s%sverify_asan_link_order=0",
		 old ? old : "", old ? ":" : "");
	setenv("ASAN_OPTIONS", asan, 1);
	execv("/proc/self/exe", argv);
}

/*
 * Run this program again under the preload with @argv, the preload
 * logging to the path @log; the child's first output is read into @out
 * (NUL-terminated, at most @len - 1 bytes, some).  Returns the child's
 * wait status.
 */
static inline int unit_run_preloaded_at(const char *log, char *const argv[],
					char *out, size_t len)
{
	int p[2], status;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		dup2(p[1], 1);
		unit_exec_preloaded(log, argv);
		_exit(127);
	}
	close(p[1]);
	n = read(p[0], out, len - 1);
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_gt(n, 0);
	out[n] = 0;
	return status;
}

/* The same, logging to a new file made from the mkstemp template @log. */
static inline int unit_run_preloaded(char *log, char *const argv[], char *out,
				     size_t len)
{
	int fd = mkstemp(log);

	ck_assert_int_ge(fd, 0);
	close(fd);
	return unit_run_preloaded_at(log, argv, out, len);
}

/* The start of the file @path (the child's log), NUL-terminated. */
static inline char *slurp(const char *path)
{
	static char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = 0;
	return buf;
}

#endif /* PRELOAD_CHILD_H */
