/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/* Unit-test helper: which descriptor of this process is open on a file. */
#ifndef TESTS_UNIT_FD_OF_H
#define TESTS_UNIT_FD_OF_H

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The highest descriptor open on @path (from /proc/self/fd), or -1. */
static inline int fd_of(const char *path)
{
	char link[300], target[PATH_MAX];
	struct dirent *de;
	int fd = -1, n;
	ssize_t len;
	DIR *d;

	d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len < 0)
			continue;
		target[len] = '\0';
		n = atoi(de->d_name);
		if (!strcmp(target, path) && n > fd)
			fd = n;
	}
	closedir(d);
	return fd;
}

#endif
