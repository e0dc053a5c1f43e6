#!/bin/bash
# ACM resolver benchmark (a measurement, not a test: nothing here fails on
# a number), in the Soft-RoCE VM:
#   tests/bench/run.sh acm
# The benchmark (tests/bench/run.sh) also runs it (guest.d/acm.sh) and
# tabulates the result.
# It resolves a destination R times each way, with examples/rdma_acme (one
# untimed resolution first, so device opening and cache filling are left
# out, and with the resolution log off):
#   kernel   rdma_resolve_addr + rdma_resolve_route on a fresh id (ACM off)
#   table    rdma_getaddrinfo(name) -> address + route, cache off
#   cached   the same with the cache on (what every resolution after the
#            first costs)
#   acm-id   rdma_resolve_addr + rdma_resolve_route with ACM on: the kernel
#            still resolves the address, ACM's path replaces the route query
# and prints the average of each and the ratio kernel / cached.
# Environment: RDMACM_ACM_BENCH_REPS (default 200), RDMACM_BUILD_DIR;
# RDMACM_BENCH_RESULTS=FILE appends "<library> acm.<way>_us <value> us"
# lines to FILE, and with RDMACM_BENCH_REF=<Debian's library directory>
# the kernel way is measured with Debian's library too.
set -u
BUILD="${RDMACM_BUILD_DIR:-$PWD/build}"
A1="${RDMA_TEST_ADDR1:-192.0.2.1}"
A2="${RDMA_TEST_ADDR2:-192.0.2.2}"
R="${RDMACM_ACM_BENCH_REPS:-200}"
ours="$BUILD/src/.libs"
acme="$BUILD/examples/.libs/rdma_acme"
work=$(mktemp -d "${TMPDIR:-/tmp}/acm-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "acm-bench ::ffff:$A2" >"$work/hosts"
export RDMA_CM_ACM_HOSTS="$work/hosts" RDMA_CM_ACM_SERVICE=none
# An empty log name turns the library's resolution log off: its write per
# resolution would cost more than a cache hit.
export RDMA_CM_ACM_LOG=

# avg N OUTPUT: the Nth "average X us" of a run.
avg() { grep -o 'average [0-9.]* us' <<<"$2" | sed -n "$1s/average \([0-9.]*\) us/\1/p"; }
# acme LIBDIR ARGS...: rdma_acme on the library in LIBDIR.
acme() {
	LD_LIBRARY_PATH="$1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$acme" "${@:2}"
}

out=$(acme "$ours" -K -q -d "$A2" -s "$A1" -C "$R") || { echo "$out"; exit 1; }
kernel=$(avg 2 "$out")
out=$(RDMA_CM_ACM_SOURCES=table acme "$ours" -q -n -d acm-bench -s "$A1" -C "$R") || { echo "$out"; exit 1; }
table=$(avg 1 "$out")
out=$(acme "$ours" -q -n -d acm-bench -s "$A1" -C "$R") || { echo "$out"; exit 1; }
cached=$(avg 1 "$out")

echo "$A2 ::ffff:$A2" >>"$work/hosts"
out=$(acme "$ours" -q -d "$A2" -s "$A1" -C "$R") || { echo "$out"; exit 1; }
acmid=$(avg 2 "$out")

ref_kernel=
if [ -n "${RDMACM_BENCH_REF:-}" ]; then
	out=$(acme "$RDMACM_BENCH_REF" -K -q -d "$A2" -s "$A1" -C "$R") || { echo "$out"; exit 1; }
	ref_kernel=$(avg 2 "$out")
fi

echo "ACM bench, $R resolutions each (microseconds per resolution):"
printf '  %-52s %10s\n' "kernel: rdma_resolve_addr + rdma_resolve_route" "$kernel" \
	"table: rdma_getaddrinfo address + route, no cache" "$table" \
	"cached: rdma_getaddrinfo address + route from cache" "$cached" \
	"acm-id: resolve_addr + resolve_route, ACM path" "$acmid"
[ -n "$ref_kernel" ] && printf '  %-52s %10s\n' "kernel, Debian's library" "$ref_kernel"
awk -v k="$kernel" -v c="$cached" -v t="$table" -v a="$acmid" 'BEGIN {
	printf "  ratio kernel/cached: %.1fx   kernel/table: %.1fx   kernel/acm-id: %.2fx\n",
		k / c, k / t, k / a }'
if [ -n "${RDMACM_BENCH_RESULTS:-}" ]; then
	{
		echo "ours acm.kernel_us $kernel us"
		echo "ours acm.table_us $table us"
		echo "ours acm.cached_us $cached us"
		echo "ours acm.acm_id_us $acmid us"
		[ -n "$ref_kernel" ] && echo "debian acm.kernel_us $ref_kernel us"
	} >>"$RDMACM_BENCH_RESULTS"
fi
exit 0
