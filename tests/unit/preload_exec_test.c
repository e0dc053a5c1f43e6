// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Fork mode's connections across an exec (src/preload/exec_pass.c,
 * exec_roles.c, compiled in): the text of RDMA_RSOCKET_EXEC_ROLES written
 * and read back, what its reader refuses (case text); the new image's
 * check of an entry against a descriptor, on real loopback connections,
 * and its start, which marks only what fits and takes the variable out
 * of the environment (case start); the image before the exec, which
 * names its unused connections in a copy of the environment and leaves
 * out what cannot be passed (case before).  fork.c's states are
 * preload_libc.c's table here.  Then every call of the exec family under
 * the preload (case family): the new image gets the arguments and the
 * environment its caller gave, less a stale RDMA_RSOCKET_EXEC_ROLES.  Relaying another process's connection
 * before an exec is preload_share_test.c's; the whole path under the
 * preload, preload_fork_test.c's.
 */
#define _GNU_SOURCE
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preload/preload.h"
#include "preload_child.h"
#include "unit.h"

static struct rsp_exec_role v4_role(int fd, bool passive, uint16_t lport,
				    uint16_t pport)
{
	struct rsp_exec_role r = {.fd = fd, .passive = passive};

	r.local.family = r.peer.family = AF_INET;
	memcpy(r.local.addr, (uint8_t[]){127, 0, 0, 1}, 4);
	memcpy(r.peer.addr, (uint8_t[]){10, 1, 255, 0}, 4);
	r.local.port = lport;
	r.peer.port = pport;
	return r;
}

static bool same_role(const struct rsp_exec_role *a,
		      const struct rsp_exec_role *b)
{
	return a->fd == b->fd && a->passive == b->passive &&
	       a->relayed == b->relayed &&
	       !memcmp(&a->local, &b->local, sizeof(a->local)) &&
	       !memcmp(&a->peer, &b->peer, sizeof(a->peer));
}

/* --- text ---------------------------------------------------------------- */

START_TEST(roles_round_trip)
{
	struct rsp_exec_role in[3], out[4];
	char buf[RSP_EXEC_ROLES_LEN + 1];
	int i, n = 0, k;

	in[0] = v4_role(5, true, 8080, 41234);
	in[1] = v4_role(65535, false, 0, 65535);
	in[2] = (struct rsp_exec_role){.fd = 0, .passive = true};
	in[2].local.family = in[2].peer.family = AF_INET6;
	for (i = 0; i < 16; i++) {
		in[2].local.addr[i] = (uint8_t)(i * 17);
		in[2].peer.addr[i] = (uint8_t)(255 - i);
	}
	in[2].local.port = 22;
	in[2].peer.port = 1;
	for (i = 0; i < 3; i++) {
		if (n)
			buf[n++] = ',';
		k = rsp_exec_role_format(buf + n, sizeof(buf) - n, &in[i]);
		ck_assert_int_gt(k, 0);
		ck_assert_int_le(k, RSP_EXEC_ROLE_LEN - 1);
		n += k;
	}
	ck_assert_str_eq(buf, "5:P:7f000001.8080:0a01ff00.41234,"
			      "65535:A:7f000001.0:0a01ff00.65535,"
			      "0:P:00112233445566778899aabbccddeeff.22:"
			      "fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0.1");
	ck_assert_int_eq(rsp_exec_roles_parse(buf, out, 4), 3);
	for (i = 0; i < 3; i++)
		ck_assert(same_role(&in[i], &out[i]));
	ck_assert_int_eq(rsp_exec_roles_parse("", out, 4), 0);
	/* no room for the third: refused, not cut short */
	ck_assert_int_eq(rsp_exec_roles_parse(buf, out, 2), -1);
}
END_TEST

/* A relayed connection's entry carries only its names. */
START_TEST(a_relayed_entry_round_trips)
{
	struct rsp_exec_role in = v4_role(1, false, 22, 50000), out[2];
	char buf[RSP_EXEC_ROLE_LEN];

	in.relayed = true;
	ck_assert_int_gt(rsp_exec_role_format(buf, sizeof(buf), &in), 0);
	ck_assert_str_eq(buf, "1:R:7f000001.22:0a01ff00.50000");
	ck_assert_int_eq(rsp_exec_roles_parse(buf, out, 2), 1);
	ck_assert(same_role(&in, &out[0]));
}
END_TEST

START_TEST(roles_format_refuses_what_cannot_be_read_back)
{
	struct rsp_exec_role r = v4_role(5, true, 1, 2);
	char buf[RSP_EXEC_ROLE_LEN];

	ck_assert_int_eq(rsp_exec_role_format(buf, 10, &r), -1);
	r.fd = 65536;
	ck_assert_int_eq(rsp_exec_role_format(buf, sizeof(buf), &r), -1);
	r.fd = -1;
	ck_assert_int_eq(rsp_exec_role_format(buf, sizeof(buf), &r), -1);
	r = v4_role(5, true, 1, 2);
	r.peer.family = AF_INET6;
	ck_assert_int_eq(rsp_exec_role_format(buf, sizeof(buf), &r), -1);
	r.local.family = r.peer.family = AF_UNIX;
	ck_assert_int_eq(rsp_exec_role_format(buf, sizeof(buf), &r), -1);
}
END_TEST

START_TEST(malformed_roles_are_refused_whole)
{
	static const char *const bad[] = {
		"5",
		"5:",
		"5:P",
		"5:P:",
		"5:X:7f000001.1:7f000001.2",
		"5:p:7f000001.1:7f000001.2",
		"05:P:7f000001.1:7f000001.2",
		"-5:P:7f000001.1:7f000001.2",
		"+5:P:7f000001.1:7f000001.2",
		" 5:P:7f000001.1:7f000001.2",
		"65536:P:7f000001.1:7f000001.2",
		"99999999999999999999:P:7f000001.1:7f000001.2",
		"5:P:7f00001.1:7f000001.2",
		"5:P:7f0000011.1:7f000001.2",
		"5:P:7F000001.1:7f000001.2",
		"5:P:7f000001.65536:7f000001.2",
		"5:P:7f000001.01:7f000001.2",
		"5:P:7f000001.:7f000001.2",
		"5:P:7f000001:7f000001.2",
		"5:P:7f000001.1",
		"5:P:7f000001.1:",
		"5:P:7f000001.1:7f000001.2:",
		"5:P:7f000001.1:7f000001.2 ",
		"5:P:7f000001.1:00112233445566778899aabbccddeeff.2",
		"5:P:7f000001.1:7f000001.2,",
		",5:P:7f000001.1:7f000001.2",
		"5:P:7f000001.1:7f000001.2,,6:A:7f000001.1:7f000001.2",
		"5:P:7f000001.1:7f000001.2;6:A:7f000001.1:7f000001.2",
		"5:P:7f000001.1:7f000001.2,5:A:7f000001.3:7f000001.4",
		"5:P:7f000001.1:7f000001.2,6:A:7f000001.1:7f000001.2x",
	};
	struct rsp_exec_role out[RSP_EXEC_MAX_ROLES + 1];
	char *many = malloc(RSP_EXEC_ROLES_LEN * 2);
	size_t i, n = 0;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(rsp_exec_roles_parse(bad[i], out, 4) == -1,
			      "accepted: '%s'", bad[i]);
	/* one entry too many */
	ck_assert_ptr_nonnull(many);
	for (i = 0; i <= RSP_EXEC_MAX_ROLES; i++)
		n += sprintf(many + n, "%s%zu:A:7f000001.1:7f000001.2",
			     i ? "," : "", i);
	ck_assert_int_eq(
		rsp_exec_roles_parse(many, out, RSP_EXEC_MAX_ROLES + 1), -1);
	/* the most there may be */
	many[n - strlen(",64:A:7f000001.1:7f000001.2")] = 0;
	ck_assert_int_eq(rsp_exec_roles_parse(many, out, RSP_EXEC_MAX_ROLES),
			 RSP_EXEC_MAX_ROLES);
	/* longer than any the preload writes */
	memset(many, '0', RSP_EXEC_ROLES_LEN + 1);
	many[RSP_EXEC_ROLES_LEN + 1] = 0;
	ck_assert_int_eq(rsp_exec_roles_parse(many, out, 4), -1);
	free(many);
}
END_TEST

/* --- the new image's start ----------------------------------------------- */

static int srv = -1, cli = -1; /* a loopback connection: accepted, connected */

static void pair_setup(void)
{
	ck_assert_int_eq(unit_tcp_pair(&srv, &cli), 0);
	rsp_pid = (int)getpid();
}

static void pair_teardown(void)
{
	rsp_lazy_set(srv, RSP_LAZY_NONE);
	rsp_lazy_set(cli, RSP_LAZY_NONE);
	close(srv);
	close(cli);
	unsetenv(RSP_EXEC_ROLES);
}

/* fd's entry, with the addresses its socket has. */
static struct rsp_exec_role real_role(int fd, bool passive)
{
	struct rsp_exec_role r = {.fd = fd, .passive = passive};
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
	ck_assert(rsp_exec_addr_from(&r.local, (struct sockaddr *)&ss, len));
	len = sizeof(ss);
	ck_assert_int_eq(getpeername(fd, (struct sockaddr *)&ss, &len), 0);
	ck_assert(rsp_exec_addr_from(&r.peer, (struct sockaddr *)&ss, len));
	return r;
}

START_TEST(an_entry_fits_only_its_connection)
{
	struct rsp_exec_role r = real_role(srv, true), w;
	int udp = socket(AF_INET, SOCK_DGRAM, 0), tcp, p[2];
	struct sockaddr_in sin = unit_ipv4("127.0.0.1", 9);

	ck_assert(rsp_exec_role_fits(&r));
	w = real_role(cli, false);
	ck_assert(rsp_exec_role_fits(&w));
	/* another port, another peer, the two swapped, another descriptor */
	w = r;
	w.local.port++;
	ck_assert(!rsp_exec_role_fits(&w));
	w = r;
	w.peer.port++;
	ck_assert(!rsp_exec_role_fits(&w));
	w = r;
	w.peer.addr[3] = 2;
	ck_assert(!rsp_exec_role_fits(&w));
	w = r;
	w.local = r.peer;
	w.peer = r.local;
	ck_assert(!rsp_exec_role_fits(&w));
	w = r;
	w.fd = cli;
	ck_assert(!rsp_exec_role_fits(&w));
	/* the same bytes as IPv6 */
	w = r;
	w.local.family = w.peer.family = AF_INET6;
	ck_assert(!rsp_exec_role_fits(&w));
	/* a connected UDP socket with the addresses the entry names */
	ck_assert_int_ge(udp, 0);
	ck_assert_int_eq(connect(udp, (struct sockaddr *)&sin, sizeof(sin)), 0);
	w = real_role(udp, false);
	ck_assert(!rsp_exec_role_fits(&w));
	/* an unconnected TCP socket, a pipe, nothing */
	tcp = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(tcp, 0);
	w = r;
	w.fd = tcp;
	ck_assert(!rsp_exec_role_fits(&w));
	ck_assert_int_eq(pipe(p), 0);
	w.fd = p[0];
	ck_assert(!rsp_exec_role_fits(&w));
	w.fd = 1000;
	ck_assert(!rsp_exec_role_fits(&w));
	w.fd = -1;
	ck_assert(!rsp_exec_role_fits(&w));
	close(udp);
	close(tcp);
	close(p[0]);
	close(p[1]);
}
END_TEST

/* The variable's value naming @n entries. */
static void set_roles(const struct rsp_exec_role *r, int n)
{
	char buf[RSP_EXEC_ROLES_LEN + 1];
	int i, used = 0;

	for (i = 0; i < n; i++) {
		if (i)
			buf[used++] = ',';
		used += rsp_exec_role_format(buf + used, sizeof(buf) - used,
					     &r[i]);
	}
	buf[used] = 0;
	ck_assert_int_eq(setenv(RSP_EXEC_ROLES, buf, 1), 0);
}

/* The start's marks: fork.c's state (the runner's stub) and twins. */
static bool twin_marked[1024];

static bool mark(int fd, enum rsp_lazy state, bool twin)
{
	if (fd < 0 || fd >= 1024 || !rsp_lazy_set(fd, state))
		return false;
	twin_marked[fd] = twin;
	return true;
}

START_TEST(the_start_marks_what_fits_and_removes_the_variable)
{
	struct rsp_exec_role r[3] = {real_role(srv, true),
				     real_role(cli, false),
				     real_role(srv, true)};
	int other = socket(AF_INET, SOCK_STREAM, 0);

	r[2].fd = other; /* names a socket that is not that connection */
	set_roles(r, 3);
	rsp_exec_roles_at_start(true, true, mark);
	ck_assert_int_eq(rsp_lazy_get(srv), RSP_LAZY_PASSIVE);
	ck_assert_int_eq(rsp_lazy_get(cli), RSP_LAZY_ACTIVE);
	ck_assert_int_eq(rsp_lazy_get(other), RSP_LAZY_NONE);
	ck_assert_ptr_null(getenv(RSP_EXEC_ROLES));
	rsp_exec_roles_log();
	close(other);
}
END_TEST

START_TEST(the_start_outside_fork_mode_only_removes_it)
{
	struct rsp_exec_role r = real_role(srv, true);

	set_roles(&r, 1);
	rsp_exec_roles_at_start(false, false, mark);
	ck_assert_int_eq(rsp_lazy_get(srv), RSP_LAZY_NONE);
	ck_assert_ptr_null(getenv(RSP_EXEC_ROLES));
}
END_TEST

START_TEST(a_malformed_variable_marks_nothing)
{
	struct rsp_exec_role r = real_role(srv, true);
	char buf[RSP_EXEC_ROLE_LEN + 8];
	int n = rsp_exec_role_format(buf, sizeof(buf), &r);

	strcpy(buf + n, ",x");
	setenv(RSP_EXEC_ROLES, buf, 1);
	rsp_exec_roles_at_start(true, true, mark);
	ck_assert_int_eq(rsp_lazy_get(srv), RSP_LAZY_NONE);
	ck_assert_ptr_null(getenv(RSP_EXEC_ROLES));
	rsp_exec_roles_log();
}
END_TEST

/*
 * Two descriptors of one connection both named (sshd's 0 and 1): both
 * marked, as twins; a connection named once is none.
 */
START_TEST(two_descriptors_of_one_connection_are_marked_twins)
{
	struct rsp_exec_role r[3] = {real_role(srv, true), real_role(srv, true),
				     real_role(cli, false)};
	int d = dup(srv);

	ck_assert_int_ge(d, 0);
	r[1].fd = d;
	set_roles(r, 3);
	rsp_exec_roles_at_start(true, true, mark);
	ck_assert_int_eq(rsp_lazy_get(srv), RSP_LAZY_PASSIVE);
	ck_assert_int_eq(rsp_lazy_get(d), RSP_LAZY_PASSIVE);
	ck_assert(twin_marked[srv] && twin_marked[d]);
	ck_assert_int_eq(rsp_lazy_get(cli), RSP_LAZY_ACTIVE);
	ck_assert(!twin_marked[cli]);
	rsp_lazy_set(d, RSP_LAZY_NONE);
	close(d);
}
END_TEST

/*
 * A relayed connection's socket (a socketpair's end) answers the names
 * it is given; a TCP socket named so is left alone.
 */
START_TEST(the_start_names_a_relayed_socket)
{
	struct rsp_exec_role r[2] = {v4_role(0, false, 22, 50000),
				     v4_role(srv, false, 1, 2)};
	struct sockaddr_in got, want;
	socklen_t len = sizeof(got);
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	r[0].fd = sv[0];
	r[0].relayed = r[1].relayed = true;
	set_roles(r, 2);
	rsp_exec_roles_at_start(false, true, mark);
	ck_assert_ptr_null(getenv(RSP_EXEC_ROLES));
	ck_assert(rsp_share_name(sv[0], true, (struct sockaddr *)&got, &len));
	want = (struct sockaddr_in){.sin_family = AF_INET,
				    .sin_port = htons(50000),
				    .sin_addr.s_addr = htonl(0x0a01ff00)};
	ck_assert_uint_eq(len, sizeof(want));
	ck_assert(!memcmp(&got, &want, sizeof(want)));
	len = sizeof(got);
	ck_assert(rsp_share_name(sv[0], false, (struct sockaddr *)&got, &len));
	ck_assert_uint_eq(ntohs(got.sin_port), 22);
	/* not ours to use: its calls are the kernel's */
	ck_assert_ptr_null(rsp_get(sv[0]));
	ck_assert(!rsp_share_name(srv, true, NULL, NULL));
	rsp_exec_roles_log();
	rsp_clear(sv[0]);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* --- the image before the exec ------------------------------------------ */

/* The roles @env carries (-1: none), in @out; no entry twice. */
static int roles_in(char **env, struct rsp_exec_role *out)
{
	const char *v = NULL;
	size_t len = strlen(RSP_EXEC_ROLES);
	int i;

	for (i = 0; env[i]; i++) {
		if (strncmp(env[i], RSP_EXEC_ROLES, len) || env[i][len] != '=')
			continue;
		ck_assert_ptr_null(v);
		v = env[i] + len + 1;
	}
	return v ? rsp_exec_roles_parse(v, out, RSP_EXEC_MAX_ROLES) : -1;
}

START_TEST(unused_connections_are_named_in_a_copy)
{
	char *envp[] = {"A=1", RSP_EXEC_ROLES "=1:P:7f000001.1:7f000001.2",
			"B=2", NULL};
	char *copy[4];
	struct rsp_exec_role got[RSP_EXEC_MAX_ROLES], want[2];
	char **env;
	int n, i;

	memcpy(copy, envp, sizeof(copy));
	rsp_lazy_set(srv, RSP_LAZY_PASSIVE);
	rsp_lazy_set(cli, RSP_LAZY_ACTIVE);
	want[0] = real_role(srv, true);
	want[1] = real_role(cli, false);
	env = rsp_exec_prepare(envp);
	ck_assert_ptr_ne(env, envp);
	ck_assert(!memcmp(copy, envp, sizeof(copy))); /* the caller's, as is */
	ck_assert_str_eq(env[0], "A=1");
	ck_assert_str_eq(env[1], "B=2");
	n = roles_in(env, got);
	ck_assert_int_eq(n, 2);
	for (i = 0; i < n; i++) {
		ck_assert(same_role(&got[i], &want[got[i].fd != srv]));
		ck_assert(rsp_exec_role_fits(&got[i]));
	}
	ck_assert_ptr_null(env[3]);
	rsp_exec_failed(env, envp);
}
END_TEST

/* Twins (fork.c: a dup of an unused connection) are named each. */
START_TEST(twins_are_named_each)
{
	char *envp[] = {"A=1", NULL};
	struct rsp_exec_role got[RSP_EXEC_MAX_ROLES];
	char **env;
	int d = dup(srv), n, i;

	ck_assert_int_ge(d, 0);
	rsp_lazy_set(srv, RSP_LAZY_PASSIVE);
	rsp_lazy_set(d, RSP_LAZY_PASSIVE);
	env = rsp_exec_prepare(envp);
	n = roles_in(env, got);
	ck_assert_int_eq(n, 2);
	for (i = 0; i < n; i++) {
		ck_assert(got[i].fd == srv || got[i].fd == d);
		ck_assert(got[i].passive);
		ck_assert(rsp_exec_role_fits(&got[i]));
	}
	ck_assert_int_ne(got[0].fd, got[1].fd);
	rsp_exec_failed(env, envp);
	rsp_lazy_set(d, RSP_LAZY_NONE);
	close(d);
}
END_TEST

START_TEST(what_cannot_be_passed_is_not_named)
{
	char *envp[] = {"A=1", NULL};
	struct rsp_exec_role got[RSP_EXEC_MAX_ROLES];
	char **env;
	int d;

	/* closed on exec; a handshake under way */
	rsp_lazy_set(srv, RSP_LAZY_PASSIVE);
	ck_assert_int_eq(fcntl(srv, F_SETFD, FD_CLOEXEC), 0);
	rsp_lazy_set(cli, RSP_LAZY_OFFERED_A);
	env = rsp_exec_prepare(envp);
	ck_assert_ptr_eq(env, envp); /* nothing to say: the caller's own */
	/* a duplicate in another state (TCP) survives too */
	ck_assert_int_eq(fcntl(srv, F_SETFD, 0), 0);
	d = dup(srv);
	ck_assert_int_ge(d, 0);
	rsp_lazy_set(cli, RSP_LAZY_ACTIVE);
	env = rsp_exec_prepare(envp);
	ck_assert_int_eq(roles_in(env, got), 1);
	ck_assert_int_eq(got[0].fd, cli);
	rsp_exec_failed(env, envp);
	close(d);
	/* a vfork child: its parent's memory, left alone */
	rsp_pid = (int)getppid();
	env = rsp_exec_prepare(envp);
	ck_assert_ptr_eq(env, envp);
	/* no environment at all */
	rsp_pid = (int)getpid();
	env = rsp_exec_prepare(NULL);
	ck_assert_ptr_nonnull(env);
	ck_assert_int_eq(roles_in(env, got), 2);
	rsp_exec_failed(env, NULL);
}
END_TEST

/* --- the exec family under the preload ------------------------------------ */

#define EXEC_ARG "two words"

/* The new image: its last argument and environment as the caller gave. */
static int exec_check(const char *form, const char *arg)
{
	const char *v = getenv("RSP_EXEC_TEST");

	if (strcmp(arg, EXEC_ARG) || !v || strcmp(v, "kept") ||
	    getenv(RSP_EXEC_ROLES))
		printf("FAIL %s: argument '%s', RSP_EXEC_TEST %s, %s %s\n",
		       form, arg, v ? v : "unset", RSP_EXEC_ROLES,
		       getenv(RSP_EXEC_ROLES) ? "set" : "unset");
	else
		printf("ok\n");
	return 0;
}

/*
 * A vfork child runs in its parent's memory until its exec: execl must not
 * allocate there (another thread of the parent may hold the allocator's
 * lock), and what it allocated would show in the parent's heap.
 */
static int vfork_execl(const char *self, const char *base, const char *form)
{
	size_t before = mallinfo2().uordblks;
	int status;
	pid_t pid;

	fflush(stdout);
	pid = vfork();
	if (!pid) {
		execl(self, base, "--exec-child", form, "check", EXEC_ARG,
		      (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 1;
	if (mallinfo2().uordblks != before)
		printf("FAIL vfork-execl: the child allocated %zd bytes in "
		       "its parent's heap\n",
		       (ssize_t)(mallinfo2().uordblks - before));
	return 0;
}

/*
 * The image before: executes this program again (--exec-child FORM
 * check) with @form.  The environment the e-forms give has no
 * LD_PRELOAD, so only the caller's preload can have taken the stale
 * variable out of it; the others' is the caller's own environ.
 */
static int exec_go(const char *form)
{
	char self[4096], *base, lib[4200], *libs = getenv("LD_LIBRARY_PATH");
	char *args[] = {NULL,	 "--exec-child", (char *)form,
			"check", EXEC_ARG,	 NULL};
	char *env[] = {"RSP_EXEC_TEST=kept", RSP_EXEC_ROLES "=junk", lib, NULL};
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int fd;

	if (n <= 0)
		return 1;
	self[n] = 0;
	snprintf(lib, sizeof(lib), "LD_LIBRARY_PATH=%s", libs ? libs : "");
	setenv("RSP_EXEC_TEST", "kept", 1);
	setenv(RSP_EXEC_ROLES, "junk", 1);
	base = strrchr(self, '/') + 1;
	args[0] = base;
	/* the p-forms find it in PATH */
	base[-1] = 0;
	setenv("PATH", self, 1);
	base[-1] = '/';
	if (!strcmp(form, "execve"))
		execve(self, args, env);
	else if (!strcmp(form, "execv"))
		execv(self, args);
	else if (!strcmp(form, "execvp"))
		execvp(base, args);
	else if (!strcmp(form, "execvpe"))
		execvpe(base, args, env);
	else if (!strcmp(form, "execl"))
		execl(self, base, "--exec-child", form, "check", EXEC_ARG,
		      (char *)NULL);
	else if (!strcmp(form, "vfork-execl"))
		return vfork_execl(self, base, form);
	else if (!strcmp(form, "execlp"))
		execlp(base, base, "--exec-child", form, "check", EXEC_ARG,
		       (char *)NULL);
	else if (!strcmp(form, "execle"))
		execle(self, base, "--exec-child", form, "check", EXEC_ARG,
		       (char *)NULL, env);
	else if (!strcmp(form, "fexecve") && (fd = open(self, O_RDONLY)) >= 0)
		fexecve(fd, args, env);
	else if (!strcmp(form, "execveat"))
		execveat(AT_FDCWD, self, args, env, 0);
	printf("FAIL %s: %s\n", form, strerror(errno));
	return 1;
}

/* The runner's --exec-child FORM go|check [ARG], run under the preload. */
int preload_exec_child(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[3], "check"))
		return exec_check(argv[2], argv[4]);
	return argc == 4 ? exec_go(argv[2]) : 2;
}

START_TEST(every_exec_form_passes_arguments_and_environment)
{
	static const char *const forms[] = {
		"execve", "execv",  "execvp",  "execvpe",  "execl",
		"execlp", "execle", "fexecve", "execveat", "vfork-execl",
	};
	char path[32], out[256];
	size_t i;
	int status;

	setenv("RDMAV_FORK_SAFE", "1", 1);
	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		strcpy(path, "/tmp/rsp-exec-log.XXXXXX");
		status = unit_run_preloaded(
			path,
			(char *[]){"preload_exec_test", "--exec-child",
				   (char *)forms[i], "go", NULL},
			out, sizeof(out));
		ck_assert_msg(!strncmp(out, "ok", 2) && !strstr(out, "FAIL"),
			      "%s: %s; log: %s", forms[i], out, slurp(path));
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		unlink(path);
	}
}
END_TEST

Suite *preload_exec_suite(void)
{
	Suite *s = suite_create("preload_exec");
	TCase *tc = tcase_create("text");

	tcase_add_test(tc, roles_round_trip);
	tcase_add_test(tc, a_relayed_entry_round_trips);
	tcase_add_test(tc, roles_format_refuses_what_cannot_be_read_back);
	tcase_add_test(tc, malformed_roles_are_refused_whole);
	suite_add_tcase(s, tc);
	tc = tcase_create("start");
	tcase_add_checked_fixture(tc, pair_setup, pair_teardown);
	tcase_add_test(tc, an_entry_fits_only_its_connection);
	tcase_add_test(tc, the_start_marks_what_fits_and_removes_the_variable);
	tcase_add_test(tc, the_start_outside_fork_mode_only_removes_it);
	tcase_add_test(tc, a_malformed_variable_marks_nothing);
	tcase_add_test(tc, two_descriptors_of_one_connection_are_marked_twins);
	tcase_add_test(tc, the_start_names_a_relayed_socket);
	suite_add_tcase(s, tc);
	tc = tcase_create("before");
	tcase_add_checked_fixture(tc, pair_setup, pair_teardown);
	tcase_add_test(tc, unused_connections_are_named_in_a_copy);
	tcase_add_test(tc, twins_are_named_each);
	tcase_add_test(tc, what_cannot_be_passed_is_not_named);
	suite_add_tcase(s, tc);
	tc = tcase_create("family");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, every_exec_form_passes_arguments_and_environment);
	suite_add_tcase(s, tc);
	return s;
}
