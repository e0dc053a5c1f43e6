// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * librspreload's credential calls (src/preload/cred.c), run under this
 * build's librspreload.so: a set*id call that changes no id returns
 * success without reaching the kernel (which would give the process new
 * credentials and so lock it out of its RDMA files), while a real change
 * does reach it.  The child sees which calls reached the kernel through a
 * seccomp filter that fails every credential system call with EDOM.
 */
#define _GNU_SOURCE
#include <config.h>

#include <check.h>
#include <errno.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload_child.h"
#include "unit.h"

#define DENY(nr)                                                               \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),                       \
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EDOM)

/* Every credential-changing system call fails with EDOM from now on. */
static int deny_credential_calls(void)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		DENY(SYS_setuid),
		DENY(SYS_setgid),
		DENY(SYS_setreuid),
		DENY(SYS_setregid),
		DENY(SYS_setresuid),
		DENY(SYS_setresgid),
		DENY(SYS_setgroups),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]),
				  .filter = code};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* One call's outcome: "0", "kernel" (the filter's EDOM) or "other". */
static const char *outcome(int ret)
{
	if (!ret)
		return "0";
	return errno == EDOM ? "kernel" : "other";
}

/*
 * The runner's --cred-child mode, run under the preload: the outcomes of
 * calls that keep every id, then of calls that change one, on one line
 * each (written at once, as the parent reads one write).
 */
int preload_cred_child(int argc, char **argv)
{
	uid_t u = getuid();
	gid_t g = getgid(), other = 54321;

	(void)argc;
	(void)argv;
	if (deny_credential_calls()) {
		printf("no seccomp: %s\n", strerror(errno));
		return 1;
	}
	printf("same: %s %s %s %s %s %s %s %s\n", outcome(setuid(u)),
	       outcome(setgid(g)), outcome(seteuid(u)), outcome(setegid(g)),
	       outcome(setreuid((uid_t)-1, (uid_t)-1)),
	       outcome(setregid(g, (gid_t)-1)),
	       outcome(setresuid(u, (uid_t)-1, u)),
	       outcome(setresgid((gid_t)-1, g, (gid_t)-1)));
	printf("change: %s %s %s %s %s %s\n", outcome(setuid(u + 1)),
	       outcome(setgid(g + 1)), outcome(seteuid(u + 1)),
	       outcome(setreuid(u + 1, (uid_t)-1)),
	       outcome(setresgid((gid_t)-1, (gid_t)-1, g + 1)),
	       outcome(setgroups(1, &other)));
	fflush(stdout);
	return 0;
}

START_TEST(unchanged_ids_stay_out_of_the_kernel)
{
	char path[] = "/tmp/rsp-cred-log.XXXXXX", out[256];
	int status;

	status = unit_run_preloaded(
		path, (char *[]){"preload_cred_test", "--cred-child", NULL},
		out, sizeof(out));
	unlink(path);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child: %s", out);
	ck_assert_str_eq(out, "same: 0 0 0 0 0 0 0 0\n"
			      "change: kernel kernel kernel kernel kernel "
			      "kernel\n");
}
END_TEST

Suite *preload_cred_suite(void)
{
	Suite *s = suite_create("preload_cred");
	TCase *tc = tcase_create("cred");

	tcase_add_test(tc, unchanged_ids_stay_out_of_the_kernel);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
