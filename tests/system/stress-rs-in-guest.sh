#!/bin/bash
# rsockets closed while other threads use them, and a flood of spoofed
# UDP resolver datagrams: tests/system/stress_rs_test, run on a
# sanitizer build in the Soft-RoCE guest.
#
#   RDMACM_BUILD_DIR=$PWD/build-asan tests/vm/run-guest.sh tests/system/stress-rs-in-guest.sh
#   RDMACM_BUILD_DIR=$PWD/build-tsan TSAN_OPTIONS=halt_on_error=1 \
#       tests/vm/run-guest.sh tests/system/stress-rs-in-guest.sh
#
# Tests (see the program's head comment): stream (rclose under rrecv,
# rsend, rpoll, repoll_wait on a connection), stream_listen (under raccept
# and rpoll), dgram (under rrecv, rsendto, rpoll, repoll_wait), preload
# (close(2) under a recv(2) through librspreload), spoof (20,000 datagrams
# from 250 loopback addresses and fresh ports each: all arrive, resident
# memory stays flat with RDMA_RS_MAX_DGRAM_DEST=64, judged on a build
# without sanitizers only: RDMACM_BUILD_DIR=$PWD/build RDMACM_SYS_ONLY=spoof).
# A sanitizer report
# fails the test that printed it (ASan, UBSan and TSan stop there).
#
# Environment: RDMACM_BUILD_DIR (default build/ of this checkout),
# RDMA_TEST_ADDR1, RDMACM_SYS_ONLY (regular expression over test names),
# RDMACM_STRESS_RS_ITER (iterations of the close scenarios, default 30),
# RDMACM_STRESS_RS_SPOOF (datagrams, default 20000), VERBOSE=1.
set -u

BUILD="${RDMACM_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
BIN="$BUILD/tests/system/stress_rs_test"
PRELOAD="$BUILD/src/preload/.libs/librspreload.so"
A1="${RDMA_TEST_ADDR1:-192.0.2.1}"
ONLY="${RDMACM_SYS_ONLY:-}"
ITER="${RDMACM_STRESS_RS_ITER:-30}"
SPOOF="${RDMACM_STRESS_RS_SPOOF:-20000}"
LIMIT=150 # seconds per test; the program's watchdog names the stage
export RDMACM_HX_TIMEOUT=$((LIMIT - 10))

. "$(dirname "$0")/verdict.sh"
# shellcheck source=transport.sh
. "$(dirname "$0")/transport.sh"
ulimit -l unlimited 2>/dev/null
out="$(mktemp "${TMPDIR:-/tmp}/stress-rs.XXXXXX")"
trap 'rm -f "$out"' EXIT

if [ ! -x "$BIN" ]; then
	fail setup "no $BIN (make check TESTS= builds it)"
	finish
fi

# run NAME [VAR=VALUE...] -- ARGS: one scenario, judged by its exit status
# and by the absence of any sanitizer report in its output.
run() {
	local name=$1 rc
	shift
	wanted "$name" || return 0
	local envs=()
	while [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	shift
	env "${envs[@]}" timeout -k 5 "$LIMIT" "$BIN" "$@" >"$out" 2>&1
	rc=$?
	if [ $rc = 0 ] && grep -qE '^(==[0-9]+==ERROR|WARNING: ThreadSanitizer|SUMMARY: [A-Za-z]+Sanitizer)|runtime error:' "$out"; then
		rc=sanitizer
	fi
	case $rc in
	0)
		pass "$name" "$(grep -m1 '^#' "$out" | sed 's/^# //')"
		[ "${VERBOSE:-0}" = 1 ] && show "$out"
		;;
	77) skip "$name" "$(grep -m1 '^SKIP' "$out" | sed 's/^SKIP [^:]*: //')" ;;
	124 | 137) fail "$name" "killed after $LIMIT s" && show "$out" ;;
	*)
		fail "$name" "exit $rc: $(grep -m1 -E '^FAIL|ERROR|ThreadSanitizer|runtime error' "$out")"
		show "$out" | head -80
		;;
	esac
}

# The preload library is not the first in the list an ASan program loads:
# ASan's own check of that order is off for it (the program is ASan-built).
asan_preload="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

run stream -- stream "$A1" 7501 "$ITER"
run stream_listen -- stream_listen "$A1" 7502 "$ITER"
if iwarp_skip "$IWARP_NO_UD" dgram spoof; then
	:
else
	run dgram -- dgram "$A1" 7503 "$ITER"
	# Memory is judged on a build without sanitizers only: TSan's grows
	# with the traffic itself (8 MiB over the flood), and ASan's by 3-8
	# MiB over it with the bound in place as without (cause not found;
	# quarantine and allocation stacks off).  The flood still runs for
	# the sanitizers' reports; rsocket_dgram_test pins the bound.
	judge=
	ldd "$BIN" | grep -qE 'lib[at]san' && judge=any
	run spoof RDMA_RS_MAX_DGRAM_DEST=64 -- spoof "$A1" 7505 "$SPOOF" $judge
fi
if [ -e "$PRELOAD" ]; then
	run preload LD_PRELOAD="$PRELOAD" ASAN_OPTIONS="$asan_preload" -- \
		preload "$A1" 7506 "$ITER"
else
	fail preload "no $PRELOAD"
fi
finish
