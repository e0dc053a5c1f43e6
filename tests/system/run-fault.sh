#!/bin/bash
# Fault tests of the freshly built librdmacm (tests/system/fault_test.c),
# in the Soft-RoCE guest:
#   tests/vm/run-guest.sh tests/system/run-fault.sh
# or natively (RDMACM_TEST_NATIVE=1 tests/run-all.sh) -- but note that the
# device_removal test deletes and re-creates the RDMA link, so it only runs
# when RDMA_TEST_DEV is an rxe device (the guest's rxe0).
#
# Prints "PASS fault/<name>" / "FAIL fault/<name>" per test and a summary
# line "N passed, N failed" (tests/system/verdict.sh).
#
# Environment:
#   RDMACM_BUILD_DIR       the build tree (as for run-in-guest.sh)
#   RDMACM_FAULT_CYCLES    connect/disconnect cycles of fault/cycles (default
#                          1000, about a minute under TCG); the long run is
#                          RDMACM_FAULT_CYCLES=10000 RDMACM_VM_TIMEOUT=1800
#                          (about 8 minutes)
#   RDMACM_FAULT_THREADS   threads of fault/threads (8) and
#   RDMACM_FAULT_ROUNDS    connections per thread (10)
#   RDMACM_FAULT_ONLY      regular expression selecting tests
#   VERBOSE=1              show the output of passing tests too
set -u

BUILD=${RDMACM_BUILD_DIR:-/tmp/b1}
A1=${RDMA_TEST_ADDR1:-192.0.2.1}
A2=${RDMA_TEST_ADDR2:-$A1}
DEV=${RDMA_TEST_DEV:-}
NETDEV=${RDMA_TEST_NETDEV:-}
CYCLES=${RDMACM_FAULT_CYCLES:-1000}
ONLY=${RDMACM_FAULT_ONLY:-}
# shellcheck source=verdict.sh
. "$(dirname "$0")/verdict.sh"
log=$(mktemp "${TMPDIR:-/tmp}/fault.XXXXXX")
trap 'rm -f "$log"' EXIT
ulimit -l unlimited 2>/dev/null

libdir=$(realpath "$BUILD/src/.libs" 2>/dev/null)
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
FAULT=$(real_prog "$BUILD/tests/system/fault_test")
SYS=$(real_prog "$BUILD/tests/system/cm_sys_test")

result() {
	local name=$1 rc=$2 secs=$3
	if [ "$rc" = 0 ] && grep -q '^PASS' "$log"; then
		[ "${VERBOSE:-0}" = 1 ] && show "$log"
		pass "fault/$name" "${secs}s"
	else
		show "$log"
		fail "fault/$name" "exit $rc after ${secs}s"
	fi
}

# run NAME SECONDS PROGRAM ARGS...
run() {
	local name=$1 limit=$2 rc=0 t0=$SECONDS
	shift 2
	wanted "$name" || return 0
	RDMACM_HX_TIMEOUT=$((limit - 5)) \
		timeout -k 5 "$limit" "$@" >"$log" 2>&1 || rc=$?
	result "$name" "$rc" $((SECONDS - t0))
}

built fault/setup "$BUILD/tests/system/fault_test" \
	"$BUILD/tests/system/cm_sys_test" || finish
lib=$("$SYS" whichlib 2>&1)
if [ "$(dirname "$(realpath "$lib")")" != "$libdir" ]; then
	fail fault/whichlib "the tests load '$lib', not $libdir"
	finish
fi

run kill_server 120 "$FAULT" kill_server "$A1"
run kill_client 120 "$FAULT" kill_client "$A1"
run kill_transfer 120 "$FAULT" kill_transfer "$A1"
run threads 300 "$FAULT" threads "$A1" "${RDMACM_FAULT_THREADS:-8}" \
	"${RDMACM_FAULT_ROUNDS:-10}"
# cm_sys_test's cycles checks fds and VmRSS after its warm-up.
run cycles $((120 + CYCLES / 5)) "$SYS" cycles "$A1" "$CYCLES" "$A2"
# Last: it deletes and re-creates the device.
if [ -n "$DEV" ] && [ -n "$NETDEV" ] &&
	[ "$(cat "/sys/class/infiniband/$DEV/parent" 2>/dev/null)" = "$NETDEV" ]; then
	# A dummy netdev for a decoy rxe device (see fault_test.c), if we can.
	decoy=
	if [ -n "${RDMACM_VM_MODULES:-}" ] &&
		modprobe -d "$RDMACM_VM_MODULES" dummy 2>/dev/null &&
		ip link add rdmadecoy0 type dummy 2>/dev/null &&
		ip link set rdmadecoy0 up; then
		decoy=rdmadecoy0
	fi
	run device_removal 180 "$FAULT" device_removal "$A1" "$DEV" "$NETDEV" $decoy
else
	wanted device_removal &&
		skip fault/device_removal "needs RDMA_TEST_DEV, an rxe device on RDMA_TEST_NETDEV"
fi

finish
