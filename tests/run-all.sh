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
if [ "${RDMACM_TEST_NATIVE:-0}" = 1 ]; then
	run_suite system env RDMACM_BUILD_DIR="$BUILD_DIR" \
		"$repo/tests/vm/run-native.sh" "$repo/tests/system/run-in-guest.sh"
else
	run_suite system env RDMACM_BUILD_DIR="$BUILD_DIR" \
		"$repo/tests/vm/run-guest.sh" "$repo/tests/system/run-in-guest.sh"
fi

# The ACM resolver (RDMA_CM_USE_IB_ACM) against the kernel stack.
if [ "${RDMACM_TEST_NATIVE:-0}" = 1 ]; then
	run_suite acm env RDMACM_BUILD_DIR="$BUILD_DIR" \
		"$repo/tests/vm/run-native.sh" "$repo/tests/system/acm-in-guest.sh"
else
	run_suite acm env RDMACM_BUILD_DIR="$BUILD_DIR" \
		"$repo/tests/vm/run-guest.sh" "$repo/tests/system/acm-in-guest.sh"
fi
# Peer-to-peer mode (issue 4): its own VM boot, one guest.
if [ "${RDMACM_TEST_NATIVE:-0}" = 1 ]; then
	run_suite p2p env RDMACM_BUILD_DIR="$BUILD_DIR" \
		"$repo/tests/vm/run-native.sh" "$repo/tests/system/p2p-in-guest.sh"
else
	run_suite p2p env RDMACM_BUILD_DIR="$BUILD_DIR" RDMACM_VM_TIMEOUT=900 \
		"$repo/tests/vm/run-guest.sh" "$repo/tests/system/p2p-in-guest.sh"
fi
# The skewed p2p scenario across two hosts (two guests), where one host's
# connects start up to 2 s before the other's; blocking channel reads (-B)
# also check that no timer of the library wakes the channel for nothing.
# The guests' "[1] PASS x" lines become "PASS x [guest 1]".
p2p_two_guests() {
	env RDMACM_BUILD_DIR="$BUILD_DIR" RDMACM_VM_TIMEOUT=600 \
		RDMACM_P2P_ONLY='^skew/' RDMACM_P2P_TIMEOUT=200 \
		RDMACM_P2P_MESH_ARGS=-B \
		"$repo/tests/vm/run-two-guests.sh" \
		"$repo/tests/system/p2p-in-guest.sh" -- \
		"$repo/tests/system/p2p-in-guest.sh" |
		sed -E 's/^\[([12])\] (PASS|FAIL)(.*)$/\2\3 [guest \1]/'
	return "${PIPESTATUS[0]}"
}
if [ "${RDMACM_TEST_NATIVE:-0}" != 1 ]; then
	run_suite p2p-2guests p2p_two_guests
fi
# A bounded run of the p2p header fuzzer (hostile headers), if clang can.
p2p_fuzz() {
	local bin=$log/p2p_hdr_fuzz corpus=$log/p2p_corpus
	if ! clang -fsanitize=fuzzer,address,undefined -I"$repo/include" \
		-I"$repo/src" "$repo/tests/fuzz/p2p_hdr_fuzz.c" \
		"$repo/src/p2p_wire.c" -o "$bin" >"$log/p2p_fuzz.build" 2>&1; then
		echo "SKIP: fuzz/p2p_hdr: clang with libFuzzer not available"
		return 0
	fi
	mkdir -p "$corpus"
	if "$bin" -max_total_time=20 "$corpus" "$repo/tests/fuzz/corpus/p2p_hdr" \
		>"$log/p2p_fuzz.out" 2>&1; then
		echo "PASS: fuzz/p2p_hdr ($(grep -o 'Done [0-9]* runs' "$log/p2p_fuzz.out"))"
	else
		tail -30 "$log/p2p_fuzz.out"
		echo "FAIL: fuzz/p2p_hdr"
		return 1
	fi
}
run_suite p2p-fuzz p2p_fuzz

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
