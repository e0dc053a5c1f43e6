#!/bin/bash
# The benchmark's guest side (started by tests/bench/run.sh through
# tests/vm/run-guest.sh; it also runs natively with run-native.sh).  Runs
# every measurement against this build's librdmacm and Debian's, taking
# turns (repetition by repetition, the order alternating) so that both see
# the same machine load, and appends "<library> <metric> <value> <unit>" lines to
# $RDMACM_VM_OUT/results.txt.
#
# Environment (from run.sh): RDMACM_BENCH_BIN (cm_bench; its "limit"
# steps, the kernel's commands alone, are the "raw" library's figures,
# measured in turn with the two libraries), RDMACM_BENCH_OURS
# and RDMACM_BENCH_REF (the two library directories), RDMACM_BENCH_NS
# (connection counts), RDMACM_BENCH_REPS (repetitions per count, same
# order), RDMACM_BENCH_CG ("N1 N2": connection counts of the two callgrind
# runs; empty to skip), RDMACM_BENCH_MEM_IDS, RDMACM_BENCH_HOOKS (0 skips
# the guest.d hooks), RDMACM_BENCH_PART: "work" (cm_bench, callgrind and
# the hooks that measure work, for an instruction-counted guest), "time"
# (the hooks marked "# bench-part: time", whose figures are times: a
# plain guest; appends to results.txt) or "all" (the default).
set -u

here=$(cd "$(dirname "$0")" && pwd)
out=${RDMACM_VM_OUT:?}
res=$out/results.txt
bin=${RDMACM_BENCH_BIN:?}
addr=${RDMA_TEST_ADDR1:-192.0.2.1}
read -r -a ns <<<"${RDMACM_BENCH_NS:-1 100 1000}"
read -r -a reps <<<"${RDMACM_BENCH_REPS:-15 5 2}"
read -r -a cg <<<"${RDMACM_BENCH_CG-2 12}"
# raw: cm_bench's limit steps, which call no librdmacm function
declare -A libdir=([ours]=${RDMACM_BENCH_OURS:?} [debian]=${RDMACM_BENCH_REF:?}
	[raw]=${RDMACM_BENCH_OURS:?})
libs=(ours debian)
status=0
ulimit -l unlimited
ulimit -n 65536 2>/dev/null
part=${RDMACM_BENCH_PART:-all}
[ "$part" = time ] || : >"$res"

# emit LIB METRIC VALUE UNIT: one result line (also for the hooks below).
emit() { echo "$1 $2 $3 $4" >>"$res"; }

# Run a command with library $1's librdmacm; its "<metric> <value> <unit>"
# output lines become results.
with_lib() {
	local lib=$1
	shift
	LD_LIBRARY_PATH=${libdir[$lib]} "$@"
}
measure() {
	local lib=$1 line
	shift
	if ! with_lib "$lib" "$@" >"$out/last.out" 2>&1; then
		echo "bench: $lib: $* failed:" >&2
		sed 's/^/    /' "$out/last.out" >&2
		status=1
		return 1
	fi
	# Measurements only: not the harness's PASS line or its notes.
	while read -r line; do
		case $line in PASS* | "#"*) continue ;; esac
		emit "$lib" $line
	done <"$out/last.out"
}

# Check each library directory gives the program the library we think.
for lib in "${libs[@]}"; do
	got=$(with_lib "$lib" ldd "$bin" | sed -n 's/^[[:space:]]*librdmacm\.so\.1 => \([^ ]*\).*/\1/p')
	if [ "$(dirname "$(realpath "$got")")" != "$(realpath "${libdir[$lib]}")" ]; then
		echo "bench: with $lib, cm_bench loads '$got'" >&2
		exit 1
	fi
	echo "# $lib: $(realpath "$got")"
done

# hook_part HOOK: "time" or "work", as the hook's marker line says.
hook_part() {
	if grep -q '^# bench-part: time$' "$1"; then echo time; else echo work; fi
}

if [ "$part" != time ]; then
	# --- connection setup steps and rdma_cm writes -----------------------
	# report.py takes the median of the repetitions.
	for i in "${!ns[@]}"; do
		echo "# steps: ${ns[$i]} connections, ${reps[$i]:-1} repetitions"
		for ((r = 0; r < ${reps[$i]:-1}; r++)); do
			order=(ours debian)
			((r % 2)) && order=(debian ours)
			for lib in "${order[@]}"; do
				measure "$lib" "$bin" steps "$addr" "${ns[$i]}" 1
			done
			measure raw "$bin" limit "$addr" "${ns[$i]}" 1
		done
	done

	# --- memory per id ---------------------------------------------------
	for lib in "${libs[@]}"; do
		echo "# memory: $lib"
		measure "$lib" "$bin" memory "$addr" "${RDMACM_BENCH_MEM_IDS:-1000}"
	done

	# --- user-space instructions per connection (callgrind) --------------
	# Two runs with different connection counts; the difference, divided
	# by the difference in connections, leaves out start-up and device
	# opening.  instr.per_conn: librdmacm's own (self) instructions.
	# instr.api_per_conn: everything executed inside the librdmacm calls
	# the program makes, including the libc and libibverbs code they run
	# (Debian's library leaves the kernel-structure conversions to
	# libibverbs, ours does them itself, so the self count alone flatters
	# Debian's).
	if [ ${#cg[@]} -eq 2 ] && command -v valgrind >/dev/null; then
		for lib in "${libs[@]}"; do
			for n in "${cg[@]}"; do
				echo "# callgrind: $lib, $n connections"
				with_lib "$lib" valgrind --tool=callgrind -q \
					--callgrind-out-file="$out/callgrind.$lib.$n" \
					"$bin" steps "$addr" "$n" 1 >/dev/null 2>"$out/cg.err" ||
					{ cat "$out/cg.err" >&2; status=1; }
			done
			for mode in self api; do
				flag=
				[ "$mode" = api ] && flag=--calls-into
				a=$(python3 "$here/report.py" cg-self $flag \
					"$out/callgrind.$lib.${cg[0]}" librdmacm.so)
				b=$(python3 "$here/report.py" cg-self $flag \
					"$out/callgrind.$lib.${cg[1]}" librdmacm.so)
				metric=instr.per_conn
				[ "$mode" = api ] && metric=instr.api_per_conn
				[ -n "$a" ] && [ -n "$b" ] &&
					emit "$lib" "$metric" \
						"$(((b - a) / (cg[1] - cg[0])))" instructions
			done
		done
	fi
fi

# --- hooks for other benchmarks ----------------------------------------------
# Each tests/bench/guest.d/*.sh is sourced here with emit, with_lib,
# measure, libs, libdir, addr and out available: rsocket throughput and
# latency, ACM resolution against the kernel path, peer-to-peer full-mesh
# setup -- each adds its own metrics, which report.py tabulates like the
# rest.  A hook that measures something only our library has emits for
# "ours" alone (no ratio is printed then).
[ "${RDMACM_BENCH_HOOKS:-1}" = 0 ] && exit $status
for hook in "$here"/guest.d/*.sh; do
	[ -f "$hook" ] || continue
	[ "$part" = all ] || [ "$(hook_part "$hook")" = "$part" ] || continue
	echo "# hook: ${hook##*/}"
	# shellcheck disable=SC1090
	. "$hook" || status=1
done
exit $status
