#!/bin/bash
# Runs several test scripts one after another and reports each, so that a
# whole suite shares one guest boot:
#
#   tests/vm/run-guest.sh  tests/vm/run-scripts.sh TEST... | DIRECTORY...
#   tests/vm/run-native.sh tests/vm/run-scripts.sh TEST... | DIRECTORY...
#
# A directory stands for every executable file directly in it, in name
# order. Each test runs from the current directory with no arguments, under
# its own time limit, so one hung test fails alone instead of eating the
# guest's whole budget. Exit status 77 means "skipped" (the automake
# convention), anything else non-zero a failure.
#
# Prints "=== RUN name", the test's own output, then "--- PASS/FAIL/SKIP:
# name (seconds)" per test, and at the end the line "N passed, N failed,
# N skipped". Exits 0 if nothing failed, 1 otherwise.
#
# Environment:
#   RDMACM_TEST_TIMEOUT  seconds per test (default 120)
set -eu

per_test="${RDMACM_TEST_TIMEOUT:-120}"

tests=()
for arg in "$@"; do
	if [ -d "$arg" ]; then
		for f in "$arg"/*; do
			[ -f "$f" ] && [ -x "$f" ] && tests+=("$f")
		done
	else
		tests+=("$arg")
	fi
done
if [ "${#tests[@]}" = 0 ]; then
	echo "run-scripts: no tests given" >&2
	exit 2
fi

passed=0 failed=0 skipped=0
failed_names=()
for t in "${tests[@]}"; do
	name="${t#./}"
	echo "=== RUN $name"
	start_ns=$(date +%s%N)
	status=0
	if [ ! -f "$t" ]; then
		echo "no such test: $t"
		status=127
	elif [ -x "$t" ]; then
		timeout -k 5 "$per_test" "$t" </dev/null || status=$?
	else
		timeout -k 5 "$per_test" bash "$t" </dev/null || status=$?
	fi
	ds=$((($(date +%s%N) - start_ns) / 100000000))
	took="$((ds / 10)).$((ds % 10))s"
	case "$status" in
	0)
		echo "--- PASS: $name ($took)"
		passed=$((passed + 1))
		;;
	77)
		echo "--- SKIP: $name ($took)"
		skipped=$((skipped + 1))
		;;
	124)
		echo "--- FAIL: $name (timed out after ${per_test}s)"
		failed=$((failed + 1))
		failed_names+=("$name")
		;;
	*)
		echo "--- FAIL: $name (exit status $status, $took)"
		failed=$((failed + 1))
		failed_names+=("$name")
		;;
	esac
done

if [ "$failed" -gt 0 ]; then
	echo "failed: ${failed_names[*]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
