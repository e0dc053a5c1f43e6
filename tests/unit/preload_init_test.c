// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * librspreload's settings and log (src/preload/init.c), run under this
 * build's librspreload.so with no RDMA device: RDMA_RSOCKET_PORTS's ports
 * and ranges choose which sockets an rsocket may carry; a setting out of
 * range is ignored and said so on stderr, rdma-core's name for it read
 * only when ours is unset; RDMA_RSOCKET_DISABLE keeps every socket the
 * kernel's; the log goes where RDMA_RSOCKET_LOG says, each line naming
 * its process.
 */
#include <config.h>

#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preload_child.h"
#include "unit.h"

/*
 * What a daemon does first thing (sshd): every descriptor but the standard
 * ones closed; then the numbers 500 to 519, where the preload's log was,
 * are taken by the file @path.
 */
static void close_all_and_reuse(const char *path)
{
	int i, fd;

	for (i = 3; i < 1024; i++)
		close(i);
	fd = open(path, O_WRONLY | O_APPEND);
	for (i = 500; fd >= 0 && i < 520; i++)
		dup2(fd, i);
	close(fd);
}

/* "vfork-close": a child of vfork closes the socket @fd, then exits. */
static void vfork_closes(int fd)
{
	pid_t pid = vfork();

	if (!pid) {
		close(fd);
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/*
 * "closefrom=PATH" or "close_range=PATH": a UDP socket made (a datagram
 * rsocket until it sends), every descriptor from 3 on closed so, then the
 * file PATH opened at the number the socket had, and read:
 * prints " fd:udp read:" and what it read.  Bounded: a read taken for the
 * old socket's would wait.
 */
static void read_after_closing(const char *arg)
{
	const char *path = strchr(arg, '=') + 1;
	int sock = socket(AF_INET, SOCK_DGRAM, 0), fd;
	char buf[64] = "";
	ssize_t n;

	printf(" %d:udp", sock);
	if (arg[5] == 'f')
		closefrom(3);
	else
		close_range(3, ~0U, 0);
	alarm(10);
	/* opened until it has the socket's number (the lower ones kept) */
	do
		fd = open(path, O_RDONLY);
	while (fd >= 0 && fd < sock);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	alarm(0);
	buf[n > 0 ? n : 0] = 0;
	printf(" read:%s", buf);
	if (fd >= 0)
		close(fd);
}

/*
 * The runner's --init-child mode, run under the preload: a UDP socket for
 * each port in argv[2..], each sending one datagram to 192.0.2.1 at that
 * port (an argument "reuse=PATH" instead: close_all_and_reuse(PATH);
 * "fsize0": its file size limit set to 0; "confine": fewer descriptors
 * and no new privileges, as a process about to confine itself);
 * prints its pid, then "fd:port" for each.
 */
int preload_init_child(int argc, char **argv)
{
	struct sockaddr_in dst = {.sin_family = AF_INET};
	int i, fd;

	dst.sin_addr.s_addr = htonl(0xc0000201);
	printf("%d", (int)getpid());
	for (i = 2; i < argc; i++) {
		if (!strncmp(argv[i], "reuse=", 6)) {
			close_all_and_reuse(argv[i] + 6);
			continue;
		}
		if (!strncmp(argv[i], "closefrom=", 10) ||
		    !strncmp(argv[i], "close_range=", 12)) {
			read_after_closing(argv[i]);
			continue;
		}
		if (!strcmp(argv[i], "vfork-close")) {
			fd = socket(AF_INET, SOCK_DGRAM, 0);
			printf(" %d:vfork", fd);
			vfork_closes(fd);
			continue;
		}
		if (!strcmp(argv[i], "confine")) {
			/* the preload's first calls: it must be ready */
			struct rlimit rl;

			if (getrlimit(RLIMIT_NOFILE, &rl) || !rl.rlim_cur ||
			    prlimit(0, RLIMIT_NOFILE, NULL, &rl))
				return 3;
			rl.rlim_cur--;
			if (setrlimit(RLIMIT_NOFILE, &rl) ||
			    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
				return 4;
			continue;
		}
		if (!strcmp(argv[i], "fsize0")) {
			/* as sshd's child before its sandbox: no file grows */
			setrlimit(
				RLIMIT_FSIZE,
				&(struct rlimit){.rlim_cur = 0, .rlim_max = 0});
			continue;
		}
		fd = socket(AF_INET, SOCK_DGRAM, 0);
		dst.sin_port = htons((uint16_t)atoi(argv[i]));
		/* what the send returns is the network's business */
		sendto(fd, "x", 1, 0, (struct sockaddr *)&dst, sizeof(dst));
		printf(" %d:%s", fd, argv[i]);
	}
	printf("\n");
	return 0;
}

/*
 * Run the --init-child for @ports under the preload, logging to @log;
 * everything it writes to stdout and stderr into @out (NUL-terminated).
 * Returns its pid; the child must exit 0.
 */
static int run_child(const char *log, const char *ports, char *out, size_t len)
{
	char *argv[16] = {"preload_init_test", "--init-child"}, buf[64], *p;
	size_t got = 0;
	int fds[2], status, argc = 2;
	ssize_t n;
	pid_t pid;

	snprintf(buf, sizeof(buf), "%s", ports);
	for (p = strtok(buf, " "); p && argc < 15; p = strtok(NULL, " "))
		argv[argc++] = p;
	argv[argc] = NULL;
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		unit_exec_preloaded(log, argv);
		_exit(127);
	}
	close(fds[1]);
	while (got < len - 1 &&
	       (n = read(fds[0], out + got, len - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = 0;
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status), "child: %s",
		      out);
	return (int)pid;
}

/* The descriptor the child used for @port, from its "fd:port" list. */
static int fd_for(const char *out, const char *port)
{
	char want[16];
	const char *p;

	snprintf(want, sizeof(want), ":%s", port);
	for (p = strstr(out, want); p; p = strstr(p + 1, want))
		if (p[strlen(want)] == ' ' || p[strlen(want)] == '\n')
			break;
	ck_assert_msg(p, "no socket for port %s in: %s", port, out);
	while (p > out && p[-1] != ' ')
		p--;
	return atoi(p);
}

/* Whether the log says the socket for @port fell back for reason @why. */
static bool fell_back_for(const char *log, const char *out, const char *port,
			  const char *why)
{
	char line[128];

	snprintf(line, sizeof(line),
		 "fd %d: %s: falling back to the kernel's UDP",
		 fd_for(out, port), why);
	return strstr(log, line) != NULL;
}

static void clear_settings(void)
{
	static const char *const names[] = {
		"RDMA_RSOCKET_PORTS",  "RDMA_RSOCKET_DISABLE",
		"RDMA_RSOCKET_SQSIZE", "RS_SQ_SIZE",
		"RDMA_RSOCKET_RQSIZE", "RS_RQ_SIZE",
		"RDMA_RSOCKET_INLINE", "RS_INLINE",
		"RDMA_RSOCKET_SNDBUF", "RDMA_RSOCKET_RCVBUF",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unsetenv(names[i]);
}

/* Whether @log says the child's socket for @port was a datagram rsocket. */
static bool logged_datagram(const char *log, const char *out, const char *port)
{
	char want[64];

	snprintf(want, sizeof(want), "fd %d: datagram rsocket",
		 fd_for(out, port));
	return strstr(log, want);
}

/* A new empty file made from the mkstemp template @path. */
static void new_file(char *path)
{
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
}

/* Each port and each range, ends included; a port outside them is not. */
START_TEST(ports_and_ranges_choose_the_sockets)
{
	char path[] = "/tmp/rsp-init-log.XXXXXX", out[512], *log;
	static const char *const in[] = {"5201", "5210", "7471"},
				 *const out_of[] = {"5200", "5211", "7470"};
	size_t i;

	new_file(path);
	clear_settings();
	setenv("RDMA_RSOCKET_PORTS", "5201-5210,7471", 1);
	run_child(path, "5200 5201 5210 5211 7470 7471", out, sizeof(out));
	log = slurp(path);
	for (i = 0; i < 3; i++) {
		ck_assert_msg(
			fell_back_for(log, out, in[i], "not reached over RDMA"),
			"port %s: %s", in[i], log);
		ck_assert_msg(
			fell_back_for(log, out, out_of[i], "not an RDMA port"),
			"port %s: %s", out_of[i], log);
	}
	unlink(path);
}
END_TEST

/*
 * A value that is not a positive whole number (up to 2^30) is ignored
 * and named on stderr; rdma-core's name is read only when ours is unset.
 * A bad port list keeps what came before the bad part.
 */
START_TEST(bad_settings_are_said_and_ignored)
{
	char path[] = "/tmp/rsp-init-log.XXXXXX", out[2048], *log;

	new_file(path);
	clear_settings();
	setenv("RDMA_RSOCKET_SQSIZE", "abc", 1);
	setenv("RS_SQ_SIZE", "also-bad", 1); /* ours is set: never read */
	setenv("RS_RQ_SIZE", "0", 1);
	setenv("RDMA_RSOCKET_INLINE", "2000000000", 1);
	setenv("RDMA_RSOCKET_SNDBUF", "-5", 1);
	setenv("RDMA_RSOCKET_PORTS", "7471,x", 1);
	run_child(path, "7471 5201", out, sizeof(out));
	ck_assert_msg(strstr(out, "ignoring RDMA_RSOCKET_SQSIZE='abc'"), "%s",
		      out);
	ck_assert_msg(!strstr(out, "RS_SQ_SIZE"), "%s", out);
	ck_assert_msg(strstr(out, "ignoring RS_RQ_SIZE='0'"), "%s", out);
	ck_assert_msg(strstr(out, "ignoring RDMA_RSOCKET_INLINE='2000000000'"),
		      "%s", out);
	ck_assert_msg(strstr(out, "ignoring RDMA_RSOCKET_SNDBUF='-5'"), "%s",
		      out);
	ck_assert_msg(strstr(out, "bad RDMA_RSOCKET_PORTS at 'x'"), "%s", out);
	log = slurp(path);
	ck_assert_msg(fell_back_for(log, out, "7471", "not reached over RDMA"),
		      "%s", log);
	ck_assert_msg(fell_back_for(log, out, "5201", "not an RDMA port"), "%s",
		      log);
	unlink(path);
}
END_TEST

/* RDMA_RSOCKET_DISABLE=1 offers no socket to rsockets; 0 is not "disable". */
START_TEST(disable_keeps_every_socket_the_kernels)
{
	char path[] = "/tmp/rsp-init-log.XXXXXX", out[512];

	new_file(path);
	clear_settings();
	setenv("RDMA_RSOCKET_DISABLE", "1", 1);
	run_child(path, "7471", out, sizeof(out));
	ck_assert_msg(!strstr(slurp(path), "rsocket"), "%s", slurp(path));
	setenv("RDMA_RSOCKET_DISABLE", "0", 1);
	run_child(path, "7471", out, sizeof(out));
	ck_assert_msg(strstr(slurp(path), "datagram rsocket"), "%s",
		      slurp(path));
	unlink(path);
}
END_TEST

/* RDMA_RSOCKET_LOG=stderr: the log on stderr, each line with its pid. */
START_TEST(the_log_goes_to_stderr_with_the_pid)
{
	char out[1024], want[64];
	int pid;

	clear_settings();
	pid = run_child("stderr", "7471", out, sizeof(out));
	snprintf(want, sizeof(want), "rspreload[%d]: fd %d: datagram rsocket",
		 pid, fd_for(out, "7471"));
	ck_assert_msg(strstr(out, want), "want '%s' in: %s", want, out);
}
END_TEST

/*
 * A daemon closes the log's descriptor with all the others and its number
 * comes back as one of its own files: the log's lines never go there,
 * and the log is opened again.
 */
START_TEST(a_closed_log_is_opened_again_not_written_to_its_number)
{
	char path[] = "/tmp/rsp-init-log.XXXXXX",
	     other[] = "/tmp/rsp-other.XXXXXX";
	char out[1024], arg[64], want[64];

	clear_settings();
	new_file(path);
	new_file(other);
	snprintf(arg, sizeof(arg), "7471 reuse=%s 7472", other);
	run_child(path, arg, out, sizeof(out));
	ck_assert_msg(!*slurp(other), "the program's file got: %s",
		      slurp(other));
	snprintf(want, sizeof(want), "fd %d: datagram rsocket",
		 fd_for(out, "7472"));
	ck_assert_msg(strstr(slurp(path), want), "want '%s' in the log: %s",
		      want, slurp(path));
	unlink(path);
	unlink(other);
}
END_TEST

/*
 * closefrom and close_range close a datagram rsocket's descriptor without
 * close(): a file opened at its number afterwards reads as the file.
 */
START_TEST(a_file_opened_after_closefrom_is_the_file)
{
	static const char *const how[] = {"closefrom", "close_range"};
	char path[] = "/tmp/rsp-init-log.XXXXXX",
	     data[] = "/tmp/rsp-data.XXXXXX", out[1024], arg[96];
	size_t i;
	int fd;

	clear_settings();
	fd = mkstemp(data);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "the file", 8), 8);
	close(fd);
	for (i = 0; i < sizeof(how) / sizeof(how[0]); i++) {
		strcpy(path, "/tmp/rsp-init-log.XXXXXX");
		new_file(path);
		snprintf(arg, sizeof(arg), "%s=%s", how[i], data);
		run_child(path, arg, out, sizeof(out));
		ck_assert_msg(strstr(out, " read:the file"), "%s: %s; log: %s",
			      how[i], out, slurp(path));
		ck_assert_msg(logged_datagram(slurp(path), out, "udp"), "%s",
			      slurp(path));
		unlink(path);
	}
	unlink(data);
}
END_TEST

/*
 * A child of vfork that closes its copy of a socket before it execs or
 * exits leaves its parent's socket as it was (it runs in the parent's
 * memory).
 */
START_TEST(a_vfork_child_closing_a_socket_leaves_the_parents)
{
	char path[] = "/tmp/rsp-init-log.XXXXXX", out[1024];

	clear_settings();
	new_file(path);
	run_child(path, "vfork-close", out, sizeof(out));
	ck_assert_msg(logged_datagram(slurp(path), out, "vfork"), "%s",
		      slurp(path));
	ck_assert_msg(!strstr(slurp(path), " closed"), "%s", slurp(path));
	unlink(path);
}
END_TEST

/*
 * A program whose first calls the preload sees are the ones a process
 * that confines itself makes (confine.c): they work as without it.
 */
START_TEST(limits_and_prctl_as_first_calls_work)
{
	char out[1024];

	clear_settings();
	run_child("stderr", "confine 7471", out, sizeof(out));
	ck_assert_msg(fd_for(out, "7471") >= 0, "%s", out);
}
END_TEST

/*
 * A process whose file size limit the log has reached (sshd's child sets
 * it to 0 before its sandbox) is not killed by SIGXFSZ for a log line:
 * the lines are dropped.
 */
START_TEST(log_lines_beyond_the_file_size_limit_are_dropped)
{
	char path[] = "/tmp/rsp-init-log.XXXXXX", out[1024];

	clear_settings();
	new_file(path);
	run_child(path, "7471 fsize0 7472", out, sizeof(out));
	ck_assert_msg(logged_datagram(slurp(path), out, "7471"), "%s",
		      slurp(path));
	ck_assert_msg(!logged_datagram(slurp(path), out, "7472"), "%s",
		      slurp(path));
	unlink(path);
}
END_TEST

Suite *preload_init_suite(void)
{
	Suite *s = suite_create("preload_init");
	TCase *tc = tcase_create("settings");

	tcase_add_test(tc, ports_and_ranges_choose_the_sockets);
	tcase_add_test(tc, bad_settings_are_said_and_ignored);
	tcase_add_test(tc, disable_keeps_every_socket_the_kernels);
	tcase_add_test(tc, the_log_goes_to_stderr_with_the_pid);
	tcase_add_test(tc,
		       a_closed_log_is_opened_again_not_written_to_its_number);
	tcase_add_test(tc, log_lines_beyond_the_file_size_limit_are_dropped);
	tcase_add_test(tc, limits_and_prctl_as_first_calls_work);
	tcase_add_test(tc, a_file_opened_after_closefrom_is_the_file);
	tcase_add_test(tc, a_vfork_child_closing_a_socket_leaves_the_parents);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
