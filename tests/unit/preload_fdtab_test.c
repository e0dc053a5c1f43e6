// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * librspreload's descriptor table (src/preload/fdtab.c, compiled in):
 * which descriptors stand for an rsocket, shared by dup'ed descriptors
 * and closed with the last of them, and an rsocket another process made
 * (the parent's, after fork) neither seen nor closed, unless it listens.
 */
#include <config.h>

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <rdma/rsocket.h>

#include "preload/preload.h"
#include "fake_ucma.h"
#include "fake_verbs.h"
#include "unit.h"

/* init.c's, which the runner does not compile: this process's id. */
int rsp_pid;
/* The preload log's last line (preload_config_test.c). */
extern char unit_rsp_log_last[];

static void fdtab_setup(void)
{
	fake_ucma_install();
	fake_verbs_install(false);
	rsp_pid = (int)getpid();
}

static void fdtab_teardown(void)
{
	fake_ucma_uninstall();
}

/* A file for a new stream rsocket, as socket.c makes one. */
static struct rsp_file *new_file(void)
{
	int rs = rsocket(AF_INET, SOCK_STREAM, 0);
	struct rsp_file *f;

	ck_assert_int_ge(rs, 0);
	f = rsp_file_new(rs, AF_INET);
	ck_assert_ptr_nonnull(f);
	return f;
}

/* Whether rsocket @rs is still open (closing it if so). */
static bool still_open(int rs)
{
	if (!rclose(rs))
		return true;
	ck_assert_int_eq(errno, EBADF);
	return false;
}

START_TEST(mapped_until_cleared)
{
	struct rsp_file *f = new_file();
	int rs = f->rs;

	ck_assert(!rsp_any());
	ck_assert_ptr_null(rsp_get(5));
	rsp_set(5, f);
	ck_assert(rsp_any());
	ck_assert_ptr_eq(rsp_get(5), f);
	ck_assert_ptr_null(rsp_get(6));
	ck_assert_ptr_null(rsp_get(5 + 1024)); /* another page, never made */
	ck_assert_ptr_null(rsp_get(-1));
	rsp_clear(5);
	ck_assert_ptr_null(rsp_get(5));
	ck_assert(!rsp_any());
	ck_assert(!still_open(rs));
}
END_TEST

/* dup'ed descriptors share one file; the last one's close closes it. */
START_TEST(dup_shares_until_the_last)
{
	struct rsp_file *f = new_file(), *g = new_file();
	int rs = f->rs, rs2 = g->rs;

	rsp_set(7, f);
	rsp_set(3000, f);
	ck_assert_int_eq(f->refs, 2);
	rsp_clear(7);
	ck_assert_ptr_eq(rsp_get(3000), f);
	ck_assert(rsp_any());
	/* dup2 over a mapped descriptor: the old file's reference goes. */
	rsp_set(3000, g);
	ck_assert_ptr_eq(rsp_get(3000), g);
	ck_assert(!still_open(rs));
	rsp_clear(3000);
	ck_assert(!rsp_any());
	ck_assert(!still_open(rs2));
}
END_TEST

/* A descriptor beyond the table is not mapped, and its file is let go. */
START_TEST(beyond_the_table_is_dropped)
{
	struct rsp_file *f = new_file();
	int rs = f->rs;

	rsp_set(1 << 20, f);
	ck_assert_ptr_null(rsp_get(1 << 20));
	ck_assert(!rsp_any());
	ck_assert(!still_open(rs));
}
END_TEST

/*
 * In another process (a forked child) the parent's rsocket is no rsocket:
 * not found, and clearing its descriptor leaves the rsocket alone.
 */
START_TEST(another_process_file_is_left_alone)
{
	struct rsp_file *f = new_file();
	int rs = f->rs;

	rsp_set(9, f);
	rsp_pid = (int)getpid() + 1;
	ck_assert_ptr_null(rsp_get(9));
	rsp_clear(9);
	rsp_pid = (int)getpid();
	ck_assert(still_open(rs));
}
END_TEST

/*
 * A process that reads or writes another's connection gets the kernel
 * socket alone; the log says why, once per process, and never for a
 * connection of its own or for a listener.
 */
START_TEST(another_process_connection_is_noted_once)
{
	struct rsp_file *f = new_file(), *l = new_file();
	char want[128];

	rsp_set(9, f);
	l->shared = true;
	rsp_set(10, l);
	unit_rsp_log_last[0] = 0;
	rsp_note_foreign(9);
	rsp_note_foreign(10);
	rsp_note_foreign(11);
	ck_assert_str_eq(unit_rsp_log_last, "");
	rsp_pid = (int)getpid() + 1;
	rsp_note_foreign(10);
	ck_assert_str_eq(unit_rsp_log_last, "");
	rsp_note_foreign(9);
	snprintf(want, sizeof(want),
		 "fd 9: connected over RDMA by process %d; this process has "
		 "only its kernel socket",
		 (int)getpid());
	ck_assert_str_eq(unit_rsp_log_last, want);
	unit_rsp_log_last[0] = 0;
	rsp_note_foreign(9);
	ck_assert_str_eq(unit_rsp_log_last, "");
	rsp_pid = (int)getpid() + 2; /* another child: told too */
	rsp_note_foreign(9);
	ck_assert_str_eq(unit_rsp_log_last, want);
	rsp_pid = (int)getpid();
	rsp_clear(9);
	rsp_clear(10);
}
END_TEST

/*
 * A listener is shared with the children of a fork (rsocket(7)): in
 * another process it is still found, and its last descriptor's close
 * gives up that process's part through rclose.
 */
START_TEST(a_listener_is_shared_with_another_process)
{
	struct rsp_file *f = new_file();
	int rs = f->rs;

	f->shared = true;
	rsp_set(9, f);
	rsp_pid = (int)getpid() + 1;
	ck_assert_ptr_eq(rsp_get(9), f);
	rsp_clear(9);
	rsp_pid = (int)getpid();
	ck_assert(!still_open(rs));
}
END_TEST

/*
 * The library's own unmapping (a move back) keeps the file and its
 * rsocket for a call another thread may be in, until the program closes
 * the descriptor; a second unmapping of the same file is a no-op.
 */
START_TEST(retired_until_the_program_closes)
{
	struct rsp_file *f = new_file();
	int rs = f->rs;

	rsp_set(7, f);
	ck_assert(rsp_retire(7, f));
	ck_assert_ptr_null(rsp_get(7));
	ck_assert(!rsp_any());
	ck_assert(!rsp_retire(7, f)); /* another thread did it first */
	ck_assert_int_eq(f->rs, rs); /* still there for a call in flight */
	rsp_release_retired(8); /* another descriptor's close */
	ck_assert_int_eq(f->rs, rs);
	rsp_release_retired(7);
	ck_assert(!still_open(rs));
}
END_TEST

/* Retiring one of two dup'ed descriptors leaves the other mapped. */
START_TEST(retire_of_a_dup_leaves_the_other)
{
	struct rsp_file *f = new_file();
	int rs = f->rs;

	rsp_set(7, f);
	rsp_set(9, f);
	ck_assert(rsp_retire(7, f));
	ck_assert_ptr_eq(rsp_get(9), f);
	rsp_release_retired(7); /* nothing was kept for 7 */
	ck_assert_ptr_eq(rsp_get(9), f);
	ck_assert(rsp_retire(9, f));
	rsp_release_retired(9);
	ck_assert(!still_open(rs));
}
END_TEST

/* A descriptor now mapping another file is not unmapped. */
START_TEST(retire_leaves_a_new_mapping_alone)
{
	struct rsp_file *f = new_file(), *g = new_file();
	int rs = f->rs;

	rsp_set(7, f);
	rsp_clear(7); /* the program closed it ... */
	ck_assert(!still_open(rs));
	rsp_set(7, g); /* ... and the number came back */
	ck_assert(!rsp_retire(7, f));
	ck_assert_ptr_eq(rsp_get(7), g);
	rsp_clear(7);
}
END_TEST

/* One thread retires files while another closes other descriptors. */
static void *closer_run(void *arg)
{
	int i;

	for (i = 0; i < 2000; i++)
		rsp_release_retired(*(int *)arg);
	return NULL;
}

START_TEST(retire_races_other_closes)
{
	int other = 11, i;
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, closer_run, &other), 0);
	for (i = 0; i < 200; i++) {
		struct rsp_file *f = new_file();
		int rs = f->rs;

		rsp_set(10, f);
		ck_assert(rsp_retire(10, f));
		rsp_release_retired(10);
		ck_assert(!still_open(rs));
	}
	ck_assert_int_eq(pthread_join(t, NULL), 0);
}
END_TEST

/* One descriptor mapped and cleared again and again, by another thread. */
struct churn {
	struct rsp_file *f;
	bool stop;
};

static void *map_and_clear(void *arg)
{
	struct churn *c = arg;

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		rsp_set(900, c->f);
		rsp_clear(900);
	}
	return NULL;
}

/* In the child: another descriptor mapped and cleared, the first intact. */
static bool maps_another(void *arg)
{
	struct churn *c = arg;

	rsp_set(901, c->f);
	rsp_clear(901);
	return rsp_get(800) == c->f;
}

/*
 * A fork while another thread changes the table: the child (without that
 * thread) finds the table whole and changes it at once.
 */
START_TEST(a_child_forked_while_the_table_changes_changes_it)
{
	struct churn c = {.f = new_file()};
	int rs = c.f->rs;

	rsp_set(800, c.f); /* holds the file: the loop's clears never free it */
	unit_forks_beside(map_and_clear, &c, &c.stop, maps_another);
	rsp_clear(800);
	ck_assert(!still_open(rs));
}
END_TEST

Suite *preload_fdtab_suite(void)
{
	Suite *s = suite_create("preload_fdtab");
	TCase *tc;

	tc = tcase_create("fdtab");
	tcase_add_checked_fixture(tc, fdtab_setup, fdtab_teardown);
	tcase_add_test(tc, mapped_until_cleared);
	tcase_add_test(tc, dup_shares_until_the_last);
	tcase_add_test(tc, beyond_the_table_is_dropped);
	tcase_add_test(tc, another_process_file_is_left_alone);
	tcase_add_test(tc, another_process_connection_is_noted_once);
	tcase_add_test(tc, a_listener_is_shared_with_another_process);
	tcase_add_test(tc, retired_until_the_program_closes);
	tcase_add_test(tc, retire_of_a_dup_leaves_the_other);
	tcase_add_test(tc, retire_leaves_a_new_mapping_alone);
	tcase_add_test(tc, retire_races_other_closes);
	tcase_add_test(tc, a_child_forked_while_the_table_changes_changes_it);
	suite_add_tcase(s, tc);
	return s;
}
