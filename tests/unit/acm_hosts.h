/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * For unit tests of the ACM resolver that read an address file (include
 * check.h first): a fixture that points RDMA_CM_ACM_HOSTS at a fresh
 * temporary file, table_path, and write_file to fill it.
 */
#ifndef TESTS_UNIT_ACM_HOSTS_H
#define TESTS_UNIT_ACM_HOSTS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acm/acm.h"

static char table_path[64];

static inline void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

static inline void table_setup(void)
{
	int fd;

	strcpy(table_path, "/tmp/acm-hosts.XXXXXX");
	fd = mkstemp(table_path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	setenv("RDMA_CM_ACM_HOSTS", table_path, 1);
	cma_acm_table_forget();
}

static inline void table_teardown(void)
{
	unlink(table_path);
	cma_acm_table_forget();
}

#endif
