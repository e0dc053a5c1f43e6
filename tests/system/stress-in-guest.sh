#!/bin/bash
# Connection-manager stress (races between threads):
# tests/system/stress_cm_test's scenarios, one process each, meant for a sanitizer build
# (tests/run-all.sh: suite `stress` on the ASan build, `stress-tsan` on
# the ThreadSanitizer build; any build works):
#
#   RDMACM_BUILD_DIR=$PWD/build-tsan TSAN_OPTIONS=halt_on_error=1 \
#       tests/vm/run-guest.sh tests/system/stress-in-guest.sh
#
# Scenarios (see the top of each tests/system/stress_cm_*.c):
#   p2p_churn  p2p listeners and connects destroyed and re-created while a
#              reader delivers their events and their timers fire, under a
#              stream of p2p requests from 3 threads
#   migrate    rdma_migrate_id between 3 busy channels during connects and
#              disconnects
#   threads8   8 threads x connect/accept/message/destroy rounds
#   flood      a flood of p2p-tagged requests at an ordinary listener:
#              kernel ids and VmRSS stay bounded, real connections form
#
# Prints "PASS name", "FAIL name: why" (with the program's output and any
# sanitizer report), then "N passed, N failed".
#
# Environment: RDMACM_BUILD_DIR (default build/ of this checkout),
# RDMA_TEST_ADDR1/2, RDMACM_SYS_ONLY (a regular expression over scenario
# names), RDMACM_STRESS_SECS (p2p_churn and migrate, default 20 and 15),
# RDMACM_STRESS_ROUNDS (threads8, default 20), RDMACM_STRESS_FLOOD
# (flood requests, default 10000; the long run is 50000, README.md has its
# figures), VERBOSE=1 (output of passing scenarios too; the flood's
# figures are always shown).
set -u

BUILD="${RDMACM_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
BIN="$BUILD/tests/system/stress_cm_test"
A1="${RDMA_TEST_ADDR1:-192.0.2.1}"
A2="${RDMA_TEST_ADDR2:-$A1}"
ONLY="${RDMACM_SYS_ONLY:-}"
SECS="${RDMACM_STRESS_SECS:-}"
ROUNDS="${RDMACM_STRESS_ROUNDS:-20}"
FLOOD="${RDMACM_STRESS_FLOOD:-10000}"
export RDMACM_HX_TIMEOUT="${RDMACM_HX_TIMEOUT:-200}"

. "$(dirname "$0")/verdict.sh"
ulimit -l unlimited 2>/dev/null

if [ ! -x "$BIN" ]; then
	fail setup "no $BIN (make check TESTS= builds it)"
	finish
fi
ours=$(realpath "$BUILD/src/.libs/librdmacm.so.1")
loaded=$(ldd "$BIN" | awk '/librdmacm.so.1/ { print $3 }')
if [ "$(realpath "$loaded")" != "$ours" ]; then
	fail whichlib "stress_cm_test loads $loaded, not $ours"
	finish
fi

# run NAME [VAR=VALUE...] -- ARGS...: one scenario, its own process.
run() {
	local name=$1 out rc vars=()
	shift
	while [ "$1" != -- ]; do
		vars+=("$1")
		shift
	done
	shift
	wanted "$name" || return 0
	out=$(env "${vars[@]}" timeout -k 5 "$((RDMACM_HX_TIMEOUT + 30))" \
		"$BIN" "$name" "$@" 2>&1)
	rc=$?
	if [ $rc = 0 ] && ! grep -qE '^(WARNING: ThreadSanitizer|==[0-9]+==ERROR)|runtime error:' <<<"$out"; then
		pass "$name"
		if [ "${VERBOSE:-0}" = 1 ] || [ "$name" = flood ]; then
			show <<<"$out"
		else
			grep '^#' <<<"$out" | show
		fi
		return
	fi
	case $rc in
	124 | 137) fail "$name" "killed after $((RDMACM_HX_TIMEOUT + 30)) s" ;;
	*) fail "$name" "exit $rc: $(grep -m1 -E '^FAIL|Sanitizer|runtime error' <<<"$out")" ;;
	esac
	show <<<"$out"
}

run threads8 -- "$A1" "$ROUNDS"
run migrate -- "$A1" "${SECS:-15}"
# A short hold time bounds every p2p connect to 2 x 0.5 + 2 s.
run p2p_churn RDMA_CM_P2P_HOLD_MS=500 -- "$A1" "$A2" "${SECS:-20}"
run flood -- "$A1" "$A2" "$FLOOD"
finish
