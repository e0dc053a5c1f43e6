#!/bin/bash
# Build and run every libFuzzer target in tests/fuzz, bounded.
#
# A target is tests/fuzz/<name>_fuzz.c defining LLVMFuzzerTestOneInput.  A
# comment among its first 10 lines names the library sources it is built
# with:
#     // FUZZ_SOURCES: src/a.c src/b.c
# where "@library" stands for every source of the library (targets that
# drive the id/event machinery, which reaches every module); those add
# tests/unit/fake_ucma.c, the fake kernel device the unit tests use.  A
# word "!src/x.c" leaves that source out (the target replaces it, e.g.
# p2p's own timer service for src/cm/timer.c).
# Its seed inputs live in tests/fuzz/corpus/<name>/ (optional).  Each target
# is compiled with clang -fsanitize=fuzzer,address,undefined against
# include/, src/ and the build tree's config.h, then run for FUZZ_TIME
# seconds from its seeds.  New inputs go to a scratch directory, never into
# the repository (unless FUZZ_MERGE=1, see below).  One "PASS: fuzz/<name>"
# or "FAIL: fuzz/<name>" line per target; a crash leaves its input in
# $BUILD_DIR/fuzz/artifacts/ and prints the reproducer command.
#
# Environment:
#   BUILD_DIR    the configured build tree (default <repo>/build): config.h
#                comes from there, binaries go to $BUILD_DIR/fuzz/
#   FUZZ_TIME    seconds per target (default 10; tests/run-all.sh gives 5,
#                10 in its long run; with 21 targets and their builds about
#                6 minutes of CPU at 10).  The long run is e.g.
#                FUZZ_TIME=3600 tests/fuzz/run.sh
#   FUZZ_ONLY    a regular expression: only targets whose name matches
#   FUZZ_JOBS    parallel fuzzing processes per target (default 1)
#   FUZZ_MERGE=1 after the run, merge what was found into the repository's
#                corpus (minimised with -merge=1), to commit the new seeds
#   FUZZ_ARGS    extra libFuzzer arguments (e.g. -max_len=8192)
set -u

repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$repo/build}
fuzz_time=${FUZZ_TIME:-10}
only=${FUZZ_ONLY:-}
jobs=${FUZZ_JOBS:-1}
out=$build/fuzz
cc=${FUZZ_CC:-clang}

if ! command -v "$cc" >/dev/null; then
	echo "FAIL: fuzz/setup: $cc not found (tests/setup.sh installs clang)"
	exit 1
fi
if [ ! -f "$build/config.h" ]; then
	echo "FAIL: fuzz/setup: no $build/config.h (run tests/setup.sh first)"
	exit 1
fi
mkdir -p "$out/artifacts" || exit 1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# shellcheck disable=SC2207
libs=($(pkg-config --libs libibverbs libibumad))
# shellcheck disable=SC2207
cflags=($(pkg-config --cflags libibverbs libibumad))

# The library sources a target names: the FUZZ_SOURCES line, relative to
# the repository root (@library: all of them).
fuzz_sources() {
	local line
	line=$(head -n 10 "$1" |
		sed -n 's|^[[:space:]]*//[[:space:]]*FUZZ_SOURCES:||p' | head -n 1)
	local word skip=()
	for word in $line; do
		[ "${word#!}" = "$word" ] || skip+=("${word#!}")
	done
	for word in $line; do
		if [ "$word" = @library ]; then
			(cd "$repo" && ls src/*/*.c | grep -v "^src/preload/")
		elif [ "${word#!}" = "$word" ]; then
			echo "$word"
		fi
	done | grep -vxF -e /dev/null ${skip[@]+"${skip[@]/#/-e}"}
}

build_target() {
	local src=$1 bin=$2 s files=()
	for s in $(fuzz_sources "$src"); do
		if [ ! -f "$repo/$s" ]; then
			echo "FUZZ_SOURCES names a missing file: $s"
			return 1
		fi
		files+=("$repo/$s")
	done
	"$cc" -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -fno-omit-frame-pointer \
		-Wall -Wno-unused-parameter -pthread \
		-I"$build" -I"$repo/include" -I"$repo/src" -I"$repo/tests/unit" "${cflags[@]}" \
		"$src" ${files[@]+"${files[@]}"} -o "$bin" "${libs[@]}"
}

# Run one target; 0 when it found nothing.
run_target() {
	local name=$1 bin=$2 seeds=$repo/tests/fuzz/corpus/$1 work=$scratch/$1
	local args=()
	mkdir -p "$work"
	[ -d "$seeds" ] && args+=("$seeds")
	# shellcheck disable=SC2086
	ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1} \
		UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
		"$bin" -max_total_time="$fuzz_time" -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$out/artifacts/$name-" \
		${FUZZ_ARGS:-} $([ "$jobs" -gt 1 ] && echo "-jobs=$jobs -workers=$jobs") \
		"$work" ${args[@]+"${args[@]}"} >"$scratch/$name.log" 2>&1
}

merge_corpus() {
	local name=$1 bin=$2 seeds=$repo/tests/fuzz/corpus/$1
	mkdir -p "$seeds"
	"$bin" -merge=1 "$seeds" "$scratch/$name" >/dev/null 2>&1
}

status=0
found=0
for src in "$repo"/tests/fuzz/*_fuzz.c; do
	[ -f "$src" ] || continue
	name=$(basename "$src" _fuzz.c)
	[ -z "$only" ] || [[ "$name" =~ $only ]] || continue
	found=$((found + 1))
	bin=$out/${name}_fuzz
	if ! build_target "$src" "$bin" >"$scratch/$name.build" 2>&1; then
		sed 's/^/    /' "$scratch/$name.build" | tail -40
		echo "FAIL: fuzz/$name (does not build)"
		status=1
		continue
	fi
	if run_target "$name" "$bin"; then
		stats=$(grep -E '^(stat::number_of_executed_units|stat::new_units_added)' \
			"$scratch/$name.log" | sed 's/^stat:://' | tr -s ' \n' ' ')
		echo "PASS: fuzz/$name (${fuzz_time}s: ${stats% })"
		[ "${FUZZ_MERGE:-0}" = 1 ] && merge_corpus "$name" "$bin"
	else
		grep -vE '^(#[0-9]|INFO:|Loading|MERGE)' "$scratch/$name.log" |
			sed 's/^/    /' | tail -60
		echo "    reproduce: $bin $out/artifacts/$name-<crash file>"
		echo "FAIL: fuzz/$name"
		status=1
	fi
done
[ "$found" -gt 0 ] || echo "# no fuzz targets${only:+ matching '$only'}"
exit $status
