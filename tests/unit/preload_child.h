/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * For unit tests that run themselves again under this build's
 * librspreload.so (their Makefile.am CPPFLAGS define RSP_PRELOAD_DIR and
 * RSP_LIB_DIR): in a forked child, exec /proc/self/exe with @argv, the
 * preload logging to @log.  Returns only if the exec failed.
 */
#ifndef PRELOAD_CHILD_H
#define PRELOAD_CHILD_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

#endif /* PRELOAD_CHILD_H */
