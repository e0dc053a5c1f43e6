# shellcheck shell=bash
# The verdict every system-test script gives, sourced by the *-in-guest.sh
# scripts: one PASS/FAIL/XFAIL/SKIP/INFO line per test (tests/run-all.sh
# counts the PASS and FAIL lines, and the XFAIL lines apart: a known
# failure, tied to its entry in tests/system/BUGS.md, is never a pass), a
# filter by test name (ONLY: a regular expression), and the closing
# "N passed, N failed" line (", N skipped" with XFAILs) with the exit
# status.  A script that wants another filter redefines wanted() after
# sourcing this.
passed=0
failed=0
xfailed=0
pass() {
	echo "PASS $1${2:+ ($2)}"
	passed=$((passed + 1))
}
fail() {
	echo "FAIL $1${2:+: $2}"
	failed=$((failed + 1))
}
# xfail NAME "BUGS.md id: what was seen"
xfail() {
	echo "XFAIL $1${2:+: $2}"
	xfailed=$((xfailed + 1))
}
skip() { echo "SKIP $1${2:+: $2}"; }
info() { echo "INFO $1${2:+: $2}"; }
wanted() { [ -z "${ONLY:-}" ] || [[ "$1" =~ $ONLY ]]; }
# A test's own output, indented so that its PASS/FAIL lines are not ours.
show() { sed 's/^/    /' "$@"; }
finish() {
	local tail=
	[ "$xfailed" = 0 ] || tail=", $xfailed skipped"
	echo "$passed passed, $failed failed$tail"
	[ "$failed" = 0 ]
	exit
}
# wait_bound PORT [PID]: waits until something can be reached at PORT: the
# kernel shows an RDMA CM id bound to it (a listener: rdma res show cm_id)
# or a UDP socket (a datagram rsocket keeps its port in one: ss).  A client
# then starts only once its server is there; a fixed "sleep 1" was too
# short on a loaded host.  Gives up after 30 s, or as soon as PID (the
# server's, when given) has exited; without the rdma and ss tools it sleeps
# 1 s as before.  The caller starts the client either way and judges what
# happens.
port_bound() {
	rdma res show cm_id 2>/dev/null |
		grep -Eq "src-addr [^ ]*:$1( |$)" && return 0
	[ -n "$(ss -Hlnu "sport = :$1" 2>/dev/null)" ]
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
# wait_output FILE PATTERN SECONDS [PID [COUNT]]: waits until FILE has
# COUNT (default 1) lines matching the grep pattern PATTERN, e.g. a
# server's "listening" line.  Gives up after SECONDS, or as soon as PID
# (when given) has exited.
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
