/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Unit-test helpers about the files behind descriptors: which descriptor
 * of this process is open on a file, and a symbolic link planted where a
 * program is told to write (a log), to see whether it is followed.
 */
#ifndef TESTS_UNIT_FD_OF_H
#define TESTS_UNIT_FD_OF_H

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

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

/* An empty file and a symbolic link to it, in a directory of their own. */
struct planted_link {
	char dir[32], target[64], link[64];
};

/* Plant it in a new directory from @tmpl (mkdtemp's).  0, or -1. */
static inline int plant_link(struct planted_link *p, const char *tmpl)
{
	int fd;

	snprintf(p->dir, sizeof(p->dir), "%s", tmpl);
	if (!mkdtemp(p->dir))
		return -1;
	snprintf(p->target, sizeof(p->target), "%s/target", p->dir);
	snprintf(p->link, sizeof(p->link), "%s/log", p->dir);
	fd = open(p->target, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return -1;
	close(fd);
	return symlink(p->target, p->link);
}

/* Remove it all; whether the target was still empty (never written). */
static inline bool planted_link_remove(struct planted_link *p)
{
	struct stat st;
	bool untouched = !stat(p->target, &st) && !st.st_size;

	unlink(p->link);
	unlink(p->target);
	rmdir(p->dir);
	return untouched;
}

#endif
