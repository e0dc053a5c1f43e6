#!/bin/bash
# Line coverage of the library from the unit suite alone: builds
# $BUILD_DIR-cov with --enable-coverage, runs every unit test, and prints
# "COVERAGE file: N% of M lines" for each library source, then the total.
# Not part of tests/run-all.sh (it measures, it does not judge); the
# README quotes its figures.
#   tests/unit/coverage.sh [FILE_REGEX]     e.g. 'conn|id|p2p|stream'
set -u

repo=$(cd "$(dirname "$0")/../.." && pwd)
dir=${BUILD_DIR:-$repo/build}-cov
only=${1:-.}
mkdir -p "$dir" || exit 1
cd "$dir" || exit 1
[ -f Makefile ] || "$repo/configure" -q --enable-coverage || exit 1
make -s -j"$(nproc)" check TESTS= >/dev/null || exit 1
find . -name '*.gcda' -delete
for t in tests/unit/*_test; do
	"$t" >/dev/null 2>&1 || echo "# $t failed"
done
total=0
hit=0
for gcno in $(find src -name 'libcma_core_la-*.gcno' | sort); do
	# src/X/.libs/libcma_core_la-NAME.gcno was compiled from src/X/NAME.c
	name=${gcno##*/libcma_core_la-}
	src=${gcno%/.libs/*}/${name%.gcno}.c
	[[ "$src" =~ $only ]] || continue
	# gcov -n prints "Lines executed:P% of N" per source file, no files.
	line=$(gcov -n -o "${gcno%.gcno}.o" "$repo/$src" 2>/dev/null |
		grep -A1 "^File '.*$src'" | sed -n 's/^Lines executed://p')
	[ -n "$line" ] || continue
	pct=${line%%%*}
	n=${line##* of }
	echo "COVERAGE $src: $pct% of $n lines"
	total=$((total + n))
	hit=$(awk -v p="$pct" -v n="$n" -v h="$hit" \
		'BEGIN { printf "%d", h + p * n / 100 + 0.5 }')
done
[ "$total" -gt 0 ] && echo "COVERAGE total: $((100 * hit / total))% of $total lines"
