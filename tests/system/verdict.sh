# shellcheck shell=bash
# The verdict every system-test script gives, sourced by the *-in-guest.sh
# scripts: one PASS/FAIL/SKIP/INFO line per test (tests/run-all.sh counts
# the PASS and FAIL lines), a filter by test name (ONLY: a regular
# expression), and the closing "N passed, N failed" line with the exit
# status.  A script that wants another filter redefines wanted() after
# sourcing this.
passed=0
failed=0
pass() {
	echo "PASS $1${2:+ ($2)}"
	passed=$((passed + 1))
}
fail() {
	echo "FAIL $1${2:+: $2}"
	failed=$((failed + 1))
}
skip() { echo "SKIP $1${2:+: $2}"; }
info() { echo "INFO $1${2:+: $2}"; }
wanted() { [ -z "${ONLY:-}" ] || [[ "$1" =~ $ONLY ]]; }
# A test's own output, indented so that its PASS/FAIL lines are not ours.
show() { sed 's/^/    /' "$@"; }
finish() {
	echo "$passed passed, $failed failed"
	[ "$failed" = 0 ]
	exit
}
