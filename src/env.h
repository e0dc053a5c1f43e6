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

#include <stdlib.h>

/* @name's value, or NULL when unset, empty or in secure-execution mode. */
static inline const char *cma_env(const char *name)
{
	const char *v = secure_getenv(name);

	return v && *v ? v : NULL;
}

#endif
