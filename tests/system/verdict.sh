# shellcheck shell=bash
# The system-test harness: every script under tests/system/ (and the test
# bed's smoke tests in tests/vm/) sources it for its verdicts, its filter
# and its client/server launches, so that each test is judged by the same
# rules.  The rules (tests/system/README.md, "Writing
# a test"): one line per test, PASS only for a check that ran and held; a
# known failure is an XFAIL naming its tests/system/BUGS.md id, never a
# PASS; a test that cannot run because a program of this project was not
# built is a FAIL; a SKIP only for what is outside the project, with the
# reason; no retry but client_run's.
#
# pass NAME [DETAIL], fail NAME [REASON]: the verdict lines "PASS NAME
# (DETAIL)" and "FAIL NAME: REASON", counted in $passed and $failed.
# tests/run-all.sh counts the same lines in each suite's output.  Each
# verdict (xfail too) is followed by "# took N s": the time since the
# previous one, what the suite's time budget is made of.
#
# xfail NAME "BUGS.md ID: what was seen": a known failure, printed as
# "XFAIL NAME: BUGS.md ID: ..." and counted in $xfailed.  Only for exactly
# the signature the BUGS.md entry describes; anything else is a fail.
# run-all.sh lists the XFAILs by name and counts them among the skipped.
#
# skip NAME REASON: "SKIP NAME: REASON", not counted.  Only for something
# outside this project (a transport without the feature, a Debian package
# or address the host lacks).  info NAME TEXT: an "INFO" line, a number
# worth printing that is no verdict.
#
# wanted NAME: whether the ONLY filter (a regular expression, unset: every
# test) selects test NAME.  A script with a filter of its own redefines it
# after sourcing this file.
#
# show FILE...: a program's output, indented so that its own PASS/FAIL
# lines are not taken for the script's; for one FILE, followed by its
# watchdog's FILE.hang (see server_start) when there is one.
#
# real_prog PATH: the binary behind the libtool wrapper PATH (its .libs/
# copy) or PATH itself, or nothing when there is none.  built NAME PATH...:
# each PATH (a program of this project's build tree) has a binary; if one
# has not, FAIL NAME "PATH not built" and return 1.
#
# finish: the closing line "N passed, N failed" (", N skipped" when there
# were XFAILs) and the exit status, non-zero when anything failed.
#
# port_bound PORT, wait_bound PORT [PID]: whether something is there to
# take a client on PORT (an RDMA CM id that listens, "rdma res show
# cm_id"; a UDP socket, "ss": a datagram rsocket keeps its port in one;
# or a TCP listener, a control run's server on plain TCP); wait_bound
# waits for it, at most
# 30 s, and gives up as soon as PID (the server's) has exited.  Without
# the rdma and ss tools it sleeps 1 s.  The caller starts its client
# either way and judges what happens.
#
# wait_output FILE PATTERN SECONDS [PID [COUNT]]: waits until FILE has COUNT
# (default 1) lines matching the grep pattern, e.g. a server's "listening"
# line; gives up after SECONDS, or as soon as PID has exited.
#
# server_start LOG SECONDS CMD...: starts CMD in the background under
# "timeout SECONDS", its output in LOG, and sets $server_pid.  If it still
# runs shortly before its timeout, a watchdog describes it in LOG.hang:
# its threads' kernel and user stacks, the RDMA ids and QPs, the TCP
# sockets (hang_snapshot); client_run does the same for its client.
# server_wait: waits for it; its exit status.  server_stop: for a server
# that never exits by itself: stops it; 0 if it was still running, else
# its exit status (1 for 0: a server that should still serve has ended).
#
# client_run PORT LOG SECONDS CMD...: runs the client CMD under "timeout
# SECONDS", its output appended to LOG, and returns its exit status.  The
# one client-start retry: a client that failed while nothing listened on
# PORT yet (its server, $server_pid, still starting: a refused connection
# says nothing about the library) is started again once something
# listens there, at most CLIENT_TRIES (5) times, each retry noted in LOG.  A
# client that failed while something listened on the port (the library's own
# failure), timed out, or whose server has ended is not retried, nor any
# client where the rdma and ss tools are missing.
#
# launch_pair PORT SLOG CLOG SECONDS SERVER_CMD... -- CLIENT_CMD...: a pair:
# server_start, wait_bound PORT (or, when $PAIR_READY is set, a line of
# the server's output matching it, e.g. "listening"), client_run,
# server_wait.  Sets $client_rc and $server_rc; returns 0 when both are 0.
passed=0
failed=0
xfailed=0
verdict_t0=$SECONDS
took() {
	echo "# took $((SECONDS - verdict_t0)) s"
	verdict_t0=$SECONDS
}
pass() {
	echo "PASS $1${2:+ ($2)}"
	passed=$((passed + 1))
	took
}
fail() {
	echo "FAIL $1${2:+: $2}"
	failed=$((failed + 1))
	took
}
xfail() {
	echo "XFAIL $1${2:+: $2}"
	xfailed=$((xfailed + 1))
	took
}
skip() { echo "SKIP $1${2:+: $2}"; }
info() { echo "INFO $1${2:+: $2}"; }
wanted() { [ -z "${ONLY:-}" ] || [[ "$1" =~ $ONLY ]]; }
show() {
	sed 's/^/    /' "$@"
	# A watchdog's description of the program's last seconds (LOG.hang)
	# belongs with its output.
	if [ $# = 1 ] && [ -s "$1.hang" ]; then
		sed 's/^/    /' "$1.hang"
	fi
}
finish() {
	local tail=
	[ "$xfailed" = 0 ] || tail=", $xfailed skipped"
	echo "$passed passed, $failed failed$tail"
	[ "$failed" = 0 ]
	exit
}

real_prog() {
	local d b c
	d=$(dirname "$1") b=$(basename "$1")
	for c in "$d/.libs/$b" "$d/.libs/lt-$b" "$1"; do
		if [ -f "$c" ] && [ -x "$c" ] && ! head -c 2 "$c" | grep -q '#!'; then
			echo "$c"
			return
		fi
	done
}
built() {
	local name=$1 p
	shift
	for p in "$@"; do
		if [ -z "$(real_prog "$p")" ]; then
			fail "$name" "$p not built (make check builds the test programs)"
			return 1
		fi
	done
}

# An RDMA id counts once it listens: one only bound (a program's bind()
# under the preload, before its listen()) still refuses connections.
port_bound() {
	rdma res show cm_id 2>/dev/null |
		grep -Eq "state LISTEN .*src-addr [^ ]*:$1( |$)" && return 0
	[ -n "$(ss -Hlnut "sport = :$1" 2>/dev/null)" ]
}
wait_bound() {
	local port=$1 pid=${2:-} i
	if ! command -v rdma >/dev/null || ! command -v ss >/dev/null; then
		sleep 1
		return 0
	fi
	for ((i = 0; i < 300; i++)); do
		port_bound "$port" && return 0
		[ -z "$pid" ] || kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
wait_output() {
	local file=$1 pat=$2 secs=$3 pid=${4:-} want=${5:-1} i n
	for ((i = 0; i < secs * 10; i++)); do
		n=$(grep -c -- "$pat" "$file" 2>/dev/null)
		[ "${n:-0}" -ge "$want" ] && return 0
		[ -z "$pid" ] || kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

server_pid=
server_dog=
server_start() {
	local log=$1 secs=$2
	shift 2
	rm -f "$log.hang"
	timeout -k 5 "$secs" "$@" >"$log" 2>&1 &
	server_pid=$!
	watchdog "$log.hang" "$secs" "$server_pid"
	server_dog=$watchdog_pid
}
server_unwatch() {
	[ -n "$server_dog" ] && unwatch "$server_dog"
	server_dog=
}
server_wait() {
	local rc=0
	wait "$server_pid" || rc=$?
	server_unwatch
	return "$rc"
}
# Running, not a zombie waiting to be reaped.
running() {
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "${st%% *}" != Z ]
}
server_stop() {
	local rc=0
	server_unwatch
	if running "$server_pid"; then
		kill "$server_pid" 2>/dev/null
		wait "$server_pid" 2>/dev/null
		return 0
	fi
	wait "$server_pid" || rc=$?
	[ "$rc" = 0 ] && rc=1
	return "$rc"
}
# Where one thread waits: its kernel stack, which says more than the wait
# channel alone (a DISCONNECTED never delivered and a QP teardown that
# blocks both sleep in a read or an ioctl).
thread_stacks() {
	local t
	for t in "/proc/$1"/task/*; do
		echo "  thread ${t##*/}: wchan $(cat "$t/wchan" 2>/dev/null)"
		sed 's/^/    /' "$t/stack" 2>/dev/null
	done
}
# What a pair that is about to time out is doing, for the verdict: each
# process's threads with their kernel stacks, the RDMA ids and QPs, the
# TCP sockets with their queues (over iWARP the connections' own: a
# message stuck in a receive queue shows there), and last, where gdb is
# installed, the user-space stacks: attaching is slow under TCG, and the
# rest must be taken while the processes still live.
hang_snapshot() {
	local p c procs=
	echo "--- state $(date +%T), before the timeout"
	for p in "$@"; do
		for c in $p $(pgrep -P "$p" 2>/dev/null); do
			echo "pid $c ($(cat "/proc/$c/comm" 2>/dev/null)): wchan $(cat "/proc/$c/wchan" 2>/dev/null)"
			[ "$c" = "$p" ] && continue # the timeout(1) around it
			thread_stacks "$c"
			procs="$procs $c"
		done
	done
	rdma res show cm_id 2>/dev/null
	rdma res show qp 2>/dev/null
	ss -tnoi 2>/dev/null | head -40
	command -v gdb >/dev/null || return 0
	for c in $procs; do
		echo "pid $c, user-space stacks:"
		timeout 8 gdb -p "$c" -batch -ex 'thread apply all bt' 2>/dev/null |
			grep '^#\|^Thread' | sed 's/^/    /'
	done
}
# watchdog FILE SECS PID [PID...]: starts, as $watchdog_pid, a process
# that describes the PIDs in FILE if the first still runs some seconds
# before its SECS run out (10 when SECS allows: time for gdb to attach);
# kill it when that PID is done.
watchdog() {
	local file=$1 secs=$2
	shift 2
	(
		sleep $((secs > 30 ? secs - 10 : secs > 10 ? secs - 5 : secs > 3 ? secs - 2 : secs)) &
		trap 'kill $! 2>/dev/null; exit 0' TERM
		wait $!
		running "$1" && hang_snapshot "$@" >"$file"
	) </dev/null >/dev/null 2>&1 &
	watchdog_pid=$!
}
unwatch() {
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
# Runs "$@" (a client) for at most SECS with its LOG; if it still runs
# shortly before its timeout, it and the server are described in LOG.hang.
run_watched() {
	local log=$1 secs=$2 pid rc=0
	shift 2
	timeout -k 5 "$secs" "$@" >>"$log" 2>&1 &
	pid=$!
	watchdog "$log.hang" "$secs" "$pid" $server_pid
	wait "$pid" || rc=$?
	unwatch "$watchdog_pid"
	return "$rc"
}
client_run() {
	local port=$1 log=$2 secs=$3 try rc bound
	shift 3
	rm -f "$log.hang"
	for ((try = 1; ; try++)); do
		# Without the tools nothing tells a starting server from a
		# failing library: no retry then.
		bound=yes
		if command -v rdma >/dev/null && command -v ss >/dev/null &&
			! port_bound "$port"; then
			bound=no
		fi
		rc=0
		run_watched "$log" "$secs" "$@" || rc=$?
		# 124 and up: timed out, killed, or could not be run.
		if [ "$rc" = 0 ] || [ "$rc" -ge 124 ] || [ "$bound" = yes ] ||
			[ "$try" -ge "${CLIENT_TRIES:-5}" ] || [ -z "$server_pid" ] ||
			! running "$server_pid"; then
			return "$rc"
		fi
		echo "(client attempt $try: exit $rc before anything listened on port $port; again once something does)" >>"$log"
		wait_bound "$port" "$server_pid" || sleep 0.5
	done
}
client_rc=0
server_rc=0
launch_pair() {
	local port=$1 slog=$2 clog=$3 secs=$4 n
	shift 4
	for ((n = 1; n <= $#; n++)); do
		[ "${!n}" = -- ] && break
	done
	: >"$slog"
	: >"$clog"
	server_start "$slog" "$secs" "${@:1:n-1}"
	if [ -n "${PAIR_READY:-}" ]; then
		wait_output "$slog" "$PAIR_READY" 30 "$server_pid"
	else
		wait_bound "$port" "$server_pid"
	fi
	client_rc=0
	client_run "$port" "$clog" "$secs" "${@:n+1}" || client_rc=$?
	server_rc=0
	server_wait || server_rc=$?
	[ "$client_rc" = 0 ] && [ "$server_rc" = 0 ]
}
