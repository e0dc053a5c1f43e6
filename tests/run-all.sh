#!/bin/bash
# The whole test suite: set-up and build, unit tests, the ABI gate, the man
# page check, and the system tests inside the Soft-RoCE VM.  Every check
# prints PASS/FAIL lines; the last line is "N passed, N failed".
#
# Environment: BUILD_DIR (see setup.sh), RDMACM_TEST_NATIVE=1 runs the
# system tests on this machine's own RDMA device instead of in the VM.
set -u

repo=$(cd "$(dirname "$0")/.." && pwd)
export BUILD_DIR=${BUILD_DIR:-$repo/build}
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

passed=0
failed=0
# Run one suite, stream its output, and count its PASS/FAIL lines.  A suite
# that exits non-zero without a FAIL line still counts as one failure.
run_suite() {
	local name=$1
	shift
	echo "=== $name"
	"$@" 2>&1 | tee "$log/$name.out"
	local rc=${PIPESTATUS[0]}
	local p f
	p=$(grep -cE '^PASS[: ]' "$log/$name.out")
	f=$(grep -cE '^(FAIL|ERROR)[: ]' "$log/$name.out")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL: $name (exit status $rc)"
		f=1
	fi
	passed=$((passed + p))
	failed=$((failed + f))
}

if ! "$repo/tests/setup.sh"; then
	echo "FAIL: setup"
	echo "0 passed, 1 failed"
	exit 1
fi

# Each Check program prints its own summary ("100%: Checks: 9, ...").
unit_tests() {
	local rc=0 t out
	for t in "$BUILD_DIR"/tests/unit/*_test; do
		[ -x "$t" ] || continue
		if out=$("$t" 2>&1); then
			echo "PASS: unit/${t##*/}: $(grep -o '[0-9]*%: Checks.*' <<<"$out")"
		else
			echo "$out"
			echo "FAIL: unit/${t##*/}"
			rc=1
		fi
	done
	return $rc
}

run_suite unit unit_tests
# The same unit tests in the sanitizer configuration (ASan + UBSan).
asan_unit_tests() {
	local dir=$BUILD_DIR-asan
	mkdir -p "$dir" || return 1
	(cd "$dir" && { [ -f Makefile ] || "$repo/configure" -q --enable-asan; } &&
		make -s -j"$(nproc)" check TESTS= >/dev/null) || return 1
	BUILD_DIR=$dir unit_tests | sed 's|unit/|asan/|'
	return "${PIPESTATUS[0]}"
}

run_suite asan asan_unit_tests
# The release tarball builds, installs and passes its own checks.
distcheck() {
	if make -C "$BUILD_DIR" -s distcheck >"$log/distcheck.log" 2>&1; then
		echo "PASS: dist/distcheck"
	else
		tail -30 "$log/distcheck.log"
		echo "FAIL: dist/distcheck"
		return 1
	fi
}

run_suite dist distcheck
run_suite pkg-deb "$repo/tests/pkg/check-debs.sh"
run_suite pkg-rpm "$repo/tests/pkg/check-rpms.sh"
run_suite abi "$repo/tests/abi/run.sh" "$BUILD_DIR"
run_suite man "$repo/tests/man/check-man.sh" "$BUILD_DIR"
run_suite style "$repo/tests/style/check-format.sh"
# libFuzzer targets (tests/fuzz/README.md), FUZZ_TIME seconds each (20).
run_suite fuzz "$repo/tests/fuzz/run.sh"
# VM suites: each boots its own guest (or runs natively with
# RDMACM_TEST_NATIVE=1).  vm_suite NAME SCRIPT [VAR=VALUE...]
vm_launcher=$repo/tests/vm/run-guest.sh
[ "${RDMACM_TEST_NATIVE:-0}" = 1 ] && vm_launcher=$repo/tests/vm/run-native.sh
vm_suite() {
	local name=$1 script=$2
	shift 2
	run_suite "$name" env RDMACM_BUILD_DIR="$BUILD_DIR" "$@" \
		"$vm_launcher" "$repo/tests/system/$script"
}
vm_suite system run-in-guest.sh
# rsockets: Debian's rstream/riostream on our library, and interop with
# Debian's library in both directions.
vm_suite rsocket rsocket-in-guest.sh
# Debian's rdmacm-utils matrix on our library, our rsocket examples against
# Debian's, and a TCP program (socat) over librspreload.
"$repo/tests/abi/fetch-reference.sh" >/dev/null 2>&1
vm_suite rdmacm-utils rdmacm-utils-in-guest.sh
# UCX (the transport under Open MPI and MPICH): its client/server example
# over its rdmacm connection manager, on our library and on Debian's.
vm_suite ucx ucx-in-guest.sh
# Every public field of ids and events at each step of an RC, a UD and a
# synchronous connection, on Debian's library and on ours, diffed.
vm_suite fields fields-in-guest.sh
# The ACM resolver (RDMA_CM_USE_IB_ACM) against the kernel stack.
vm_suite acm acm-in-guest.sh
# Peer-to-peer mode (issue 4), one guest.
vm_suite p2p p2p-in-guest.sh RDMACM_VM_TIMEOUT=900
# The p2p scenarios across two hosts (two guests; ranks alternate between
# them): 100 mutual connects, the skewed one (one host's connects start up
# to 2 s before the other's), 4 connections per pair with ordinal and
# explicit tags, and the 8-rank mesh.  Blocking channel reads (-B) also
# check that no timer of the library wakes the channel for nothing.
# The guests' "[1] PASS x" lines become "PASS x [guest 1]".
p2p_two_guests() {
	env RDMACM_BUILD_DIR="$BUILD_DIR" RDMACM_VM_TIMEOUT=600 \
		RDMACM_P2P_ONLY='^(mutual|skew|pairs4|pairs4-tags|mesh8)/' RDMACM_P2P_TIMEOUT=200 \
		RDMACM_P2P_MESH_ARGS=-B \
		"$repo/tests/vm/run-two-guests.sh" \
		"$repo/tests/system/p2p-in-guest.sh" -- \
		"$repo/tests/system/p2p-in-guest.sh" |
		sed -E 's/^\[([12])\] (PASS|FAIL)(.*)$/\2\3 [guest \1]/'
	return "${PIPESTATUS[0]}"
}
# Multicast through IP_ADD_MEMBERSHIP and rdma_sendto between two hosts
# (issue 5): guest 1 joins and receives, guest 2 sends; IPv4 and IPv6.
mcast_two_guests() {
	env RDMACM_BUILD_DIR="$BUILD_DIR" RDMACM_VM_TIMEOUT=600 \
		"$repo/tests/vm/run-two-guests.sh" \
		"$repo/tests/system/mckey2-two-guests.sh" -- \
		"$repo/tests/system/mckey2-two-guests.sh" |
		sed -E 's/^\[([12])\] (PASS|FAIL|SKIP)(.*)$/\2\3 [guest \1]/'
	return "${PIPESTATUS[0]}"
}
if [ "${RDMACM_TEST_NATIVE:-0}" != 1 ]; then
	run_suite p2p-2guests p2p_two_guests
	run_suite mcast-2guests mcast_two_guests
fi
# Issue 8 (see tests/system/README.md): faults (peer death, device removal,
# threads, connect/disconnect cycles); the system tests on the ASan/UBSan
# build; the examples under valgrind memcheck.
vm_suite fault run-fault.sh
# The IPv4 half of the system tests on the --enable-asan build the asan
# suite made, without mckey (rxe stalls ~50 s on it) and cycles (its VmRSS
# check measures ASan's allocator; LeakSanitizer checks every program).
vm_suite asan-system run-in-guest.sh RDMACM_BUILD_DIR="$BUILD_DIR-asan" \
	RDMACM_SYS_ONLY='^(rc_|reject|migrate|libevents|errors|ud|mcast|rping|ucmatose|udaddy|cmtime|rdma_server)[a-z_]*/ipv4$' \
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
	UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
vm_suite memcheck run-memcheck.sh
# Issue 9: the same system tests over Soft-iWARP (siw.ko built out of tree
# by tests/vm/build-siw.sh, cached in the VM cache).  UD, multicast,
# udaddy, mckey and udpong are SKIPped there with the reason; iwarp_errors
# checks the library's EOPNOTSUPP for them instead.  Natively these run
# only when the machine's RDMA device is iWARP.
native_is_iwarp() {
	local t
	for t in /sys/class/infiniband/*/node_type; do
		[ -e "$t" ] || continue
		grep -q RNIC "$t" || return 1
	done
	[ -e "$t" ]
}
if [ "${RDMACM_TEST_NATIVE:-0}" != 1 ] || native_is_iwarp; then
	vm_suite system-iwarp run-in-guest.sh RDMACM_VM_TRANSPORT=siw \
		RDMA_TEST_TRANSPORT=iwarp
	vm_suite rsocket-iwarp rsocket-in-guest.sh RDMACM_VM_TRANSPORT=siw \
		RDMA_TEST_TRANSPORT=iwarp
	vm_suite rdmacm-utils-iwarp rdmacm-utils-in-guest.sh \
		RDMACM_VM_TRANSPORT=siw RDMA_TEST_TRANSPORT=iwarp
	vm_suite p2p-iwarp p2p-in-guest.sh RDMACM_VM_TRANSPORT=siw \
		RDMA_TEST_TRANSPORT=iwarp RDMACM_VM_TIMEOUT=900
	# The p2p scenarios that meet siw's accept race (BUGS.md, Open #3)
	# often enough to fail the suite, on the driver with that window
	# closed (tests/vm/siw-accept-drain.py).  Natively: the real device.
	if [ "${RDMACM_TEST_NATIVE:-0}" != 1 ]; then
		vm_suite p2p-iwarp-testbed p2p-in-guest.sh \
			RDMACM_VM_TRANSPORT=siw RDMACM_VM_SIW_DRAIN=1 \
			RDMA_TEST_TRANSPORT=iwarp RDMACM_VM_TIMEOUT=900 \
			RDMACM_P2P_ONLY='^(mutual|lower8)/'
	fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
