#!/bin/bash
# The benchmark: this build's librdmacm against Debian's, in the same run,
# in the Soft-RoCE VM.  Not a test: nothing here passes or fails on a
# number.  One command:
#
#   tests/bench/run.sh [OUTDIR]
#
# Prints the ratio table (ours / Debian's) and leaves in OUTDIR (default
# $BUILD_DIR/bench/<date>): results.txt (raw "<library> <metric> <value>
# <unit>" lines), table.md (the table, as pasted into README.md),
# ratios.png (the plot), callgrind.* (the profiles).  See
# tests/bench/README.md for what is measured and how.
#
# Environment: BUILD_DIR; RDMACM_BENCH_NS (default "1 100 1000"),
# RDMACM_BENCH_REPS ("15 5 2"), RDMACM_BENCH_CG ("2 12"; "" skips
# callgrind), RDMACM_BENCH_MEM_IDS (1000); RDMACM_TEST_NATIVE=1 runs on
# this machine's RDMA device instead of the VM.
set -eu

repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$repo/build}
out=${1:-$build/bench/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" "$build/bench"
out=$(cd "$out" && pwd)

[ -f "$build/src/.libs/librdmacm.so.1" ] || "$repo/tests/setup.sh"
# One binary for both libraries: our headers, linked by soname only (no
# run path), so LD_LIBRARY_PATH decides which librdmacm.so.1 it gets.
bin=$build/bench/cm_bench
# shellcheck disable=SC2046
gcc -O2 -g -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
	-I"$repo/include" $(pkg-config --cflags libibverbs) \
	"$repo/tests/bench/cm_bench.c" "$repo/tests/system/harness.c" \
	-L"$build/src/.libs" -lrdmacm \
	$(pkg-config --libs libibverbs) -o "$bin"

ref=$("$repo/tests/abi/fetch-reference.sh")/usr/lib/x86_64-linux-gnu
[ -e "$ref/librdmacm.so.1" ] || {
	echo "bench: no Debian librdmacm under $ref" >&2
	exit 1
}

launcher=$repo/tests/vm/run-guest.sh
[ "${RDMACM_TEST_NATIVE:-0}" = 1 ] && launcher=$repo/tests/vm/run-native.sh
echo "bench: results in $out"
RDMACM_VM_OUT=$out RDMACM_VM_TIMEOUT=${RDMACM_VM_TIMEOUT:-3000} \
	RDMACM_BENCH_BIN=$bin RDMACM_BENCH_OURS=$build/src/.libs \
	RDMACM_BENCH_REF=$ref "$launcher" "$repo/tests/bench/guest.sh"

python3 "$repo/tests/bench/report.py" "$out/results.txt" \
	--markdown "$out/table.md" --plot "$out/ratios.png"
echo "bench: table in $out/table.md, plot in $out/ratios.png"
