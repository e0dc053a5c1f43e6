#!/bin/bash
# Flows other people's programs use (UCX, storage stacks), as an outside program
# writes them: tests/system/stranger_test, each scenario a pair of
# processes, run with OUR library and with Debian's (the reference; a
# reference failure means the test is wrong), over IPv4 and IPv6.
#
#   tests/vm/run-guest.sh tests/system/stranger-in-guest.sh
#   RDMACM_VM_TRANSPORT=siw tests/vm/run-guest.sh tests/system/stranger-in-guest.sh
#
# Scenarios (see tests/system/README.md): extqp, extqp_srq (RC QPs made
# with ibv_create_qp and moved with rdma_init_qp_attr, rdma_establish),
# ud_accept (a UD QP on the child id, rdma_accept, AH from the WC).
# Test names: SCENARIO/ipv4|ipv6/ours|ref.  Prints "PASS name",
# "FAIL name: why", "SKIP name: why", then "N passed, N failed".
#
# Environment: RDMACM_BUILD_DIR (default build/ of this checkout),
# RDMA_TEST_ADDR1/2, RDMA_TEST_ADDR6_1/2, RDMACM_SYS_ONLY (a regular
# expression over test names), RDMACM_REF_LIBDIR (Debian's librdmacm,
# default ~/.cache/rdmacm-ref/root/usr/lib/x86_64-linux-gnu, fetched by
# tests/abi/fetch-reference.sh), VERBOSE=1 (output of passing tests too).
set -u

BUILD="${RDMACM_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
BIN="$BUILD/tests/system/stranger_test"
A1="${RDMA_TEST_ADDR1:-192.0.2.1}"
A2="${RDMA_TEST_ADDR2:-$A1}"
A6_1="${RDMA_TEST_ADDR6_1:-}"
A6_2="${RDMA_TEST_ADDR6_2:-$A6_1}"
ONLY="${RDMACM_SYS_ONLY:-}"
REF="${RDMACM_REF_LIBDIR:-${HOME:-/root}/.cache/rdmacm-ref/root/usr/lib/x86_64-linux-gnu}"
OURS="$BUILD/src/.libs"
LIMIT=90 # seconds per pair; the program's own watchdog says where it hung

. "$(dirname "$0")/verdict.sh"

# shellcheck source=transport.sh
. "$(dirname "$0")/transport.sh"
ulimit -l unlimited 2>/dev/null

# Which librdmacm.so.1 the binary loads with a given library path.
whichlib() {
	LD_LIBRARY_PATH="$1" ldd "$BIN" | awk '/librdmacm.so.1/ { print $3 }'
}

if [ ! -x "$BIN" ]; then
	fail setup "no $BIN (make check TESTS= builds it)"
	finish
fi
ours_real=$(realpath "$OURS/librdmacm.so.1")
if [ "$(realpath "$(whichlib "$OURS")")" != "$ours_real" ]; then
	fail whichlib/ours "stranger_test does not load $ours_real"
	finish
fi
ref_skip=
if [ ! -e "$REF/librdmacm.so.1" ]; then
	ref_skip="no reference library in $REF (tests/abi/fetch-reference.sh fetches it)"
elif [ "$(realpath "$(whichlib "$REF")")" != "$(realpath "$REF/librdmacm.so.1")" ]; then
	fail whichlib/ref "stranger_test does not load $REF/librdmacm.so.1"
	finish
fi

# run NAME LIBDIR SCENARIO SERVER CLIENT
run() {
	local name=$1 lib=$2 out rc
	shift 2
	wanted "$name" || return 0
	out=$(LD_LIBRARY_PATH="$lib" timeout -k 5 "$LIMIT" "$BIN" "$@" 2>&1)
	rc=$?
	case $rc in
	0)
		pass "$name"
		[ "${VERBOSE:-0}" = 1 ] && sed 's/^/    /' <<<"$out"
		;;
	77) skip "$name" "$(grep -m1 '^SKIP' <<<"$out" | sed 's/^SKIP [^:]*: //')" ;;
	124 | 137) fail "$name" "killed after $LIMIT s" ;;
	*)
		fail "$name" "exit $rc: $(grep -m1 '^FAIL' <<<"$out")"
		sed 's/^/    /' <<<"$out"
		;;
	esac
}

for scenario in extqp extqp_srq ud_accept; do
	for fam in ipv4 ipv6; do
		if [ $fam = ipv4 ]; then
			s=$A1 c=$A2
		else
			s=$A6_1 c=$A6_2
		fi
		for lib in ours ref; do
			name=$scenario/$fam/$lib
			wanted "$name" || continue
			if [ -z "$s" ]; then
				skip "$name" "no IPv6 test addresses (RDMA_TEST_ADDR6_1)"
				continue
			fi
			if [ $scenario = ud_accept ] &&
				iwarp_skip "$IWARP_NO_UD" "$name"; then
				continue
			fi
			if [ $lib = ref ] && [ -n "$ref_skip" ]; then
				skip "$name" "$ref_skip"
				continue
			fi
			libdir=$OURS
			[ $lib = ref ] && libdir=$REF
			run "$name" "$libdir" "$scenario" "$s" "$c"
		done
	done
done
siw_testbed_report
finish
