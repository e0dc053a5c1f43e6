/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The one way the library and the preload read their settings from the
 * environment.  A setuid or setgid program (or one with file capabilities)
 * runs with the invoker's environment: in that secure-execution mode every
 * variable is ignored, so the invoker cannot choose the files the library
 * creates, the services it trusts or its resource sizes.
 */
#ifndef CMA_ENV_H
#define CMA_ENV_H

#include <fcntl.h>
#include <stdlib.h>

/* @name's value, or NULL when unset, empty or in secure-execution mode. */
static inline const char *cma_env(const char *name)
{
	const char *v = secure_getenv(name);

	return v && *v ? v : NULL;
}

/*
 * How a log file named by the environment is opened: appended to, made if
 * missing, never followed through a symbolic link in its last component
 * (ELOOP).  secure_getenv keeps a setuid program's invoker from naming the
 * file; this keeps anyone who can write the directory from planting a link
 * that turns the program's log into a write to a file of the link's
 * choosing.  Close-on-exec, and no controlling terminal from a tty.
 */
#define CMA_ENV_LOG_FLAGS                                                      \
	(O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW)

#endif
