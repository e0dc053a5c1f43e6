#!/bin/bash
# Guest side of the mesh modes of tests/bench/run.sh (mesh, mesh-trace,
# mesh-profile, mesh-callgrind, mesh-strace): N p2pmesh processes in one
# guest form a full mesh, with peer2peer_mode ("p2p") and the hand-rolled
# scheme (p2pmesh -L: connect to higher ranks, accept lower ones, "lower"),
# taking turns, both after the same start barrier (-b).  One run's time is
# the slowest rank's (start of its iteration to data flowing on all its
# connections; resolve_ms: the longest time any rank took to resolve).
# Prints "mesh N=<n> <scheme> run=<i> ms=<t>" per run (with the ranks'
# CPU time, its user part, sleeps, event-loop turns and page faults,
# summed), then per N the medians, ranges and their ratio, and the paired
# ratio (the median of each repetition's p2p / lower: see paired()).
# With a counting shim
# (MESH_COUNT_SO), one extra run of each scheme first counts per rank the
# kernel commands and events (tests/bench/ucma_count.c), not timed.
#
# With MESH_BIN_B (another build's p2pmesh, e.g. the library before a
# change) the same two schemes run on it too, as "p2p_b" and "lower_b",
# the four taking turns in a rotating order: two builds compare only
# within one guest run.
#
# Environment: MESH_BIN (p2pmesh), MESH_NS ("8"), MESH_REPS (7),
# MESH_COUNT_SO, MESH_ARGS (more p2pmesh options), MESH_WRAP0 (a command
# one rank runs under, e.g. strace, split into words, "%r" in it replaced
# by a name of the rank's own run: rank MESH_WRAP_RANK, default 0, or
# "all"; run.sh mesh-callgrind and mesh-strace),
# MESH_TRACE=1 (p2pmesh -T; each run's step lines follow "=== SCHEME rep
# I n N": run.sh mesh-trace;
# with the kernel's rdma_cma tracepoints too, on the same clock, after
# "--- kernel", when tracefs is there), MESH_PROFILE=1 (every rank under
# perf record, -T for its window; after each run, "profile SCHEME CLASS
# COUNT" lines from tests/bench/report.py profile: run.sh mesh-profile;
# MESH_PERF_FREQ samples per second, default 4000),
# MESH_ASLR=1 (keep address-space randomization, see below).
#
#   tests/bench/mesh-guest.sh pool BOOTS LOG
# on the host (run.sh mesh with MESH_BOOTS): the paired ratios of every
# boot's repetitions in LOG pooled, per N.
#
# The ranks run with address-space randomization off (setarch -R).  The
# guest's emulator (QEMU 7.2's TCG) keys the code it translates by virtual
# address, so with randomization every process translated the libraries'
# code anew: that was four fifths of the ranks' user time, and it weighed
# how much distinct code a scheme runs, not the work it does.
set -u
here=$(cd "$(dirname "$0")" && pwd)

stats() { # values on stdin: median min max [printf format, %.1f]
	sort -g | awk -v f="${1:-%.1f}" '{ v[NR] = $1 } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf f " " f " " f "\n", m, v[1], v[NR] }'
}

# pool BOOTS LOG: each (boot, run) repetition's p2p / lower, time and CPU,
# per N; then per N the median of all of them (as paired() below).
pool() {
	local boots=$1 pairs n
	pairs=$(awk '
		function val(k,  i) {
			for (i = 1; i <= NF; i++)
				if (index($i, k "=") == 1)
					return substr($i, length(k) + 2)
			return ""
		}
		$1 == "mesh" && val("ms") != "" {
			key = val("N") " " val("boot") " " val("run")
			ms[$4, key] = val("ms")
			cpu[$4, key] = val("cpu_ms")
			keys[key] = 1
		}
		END {
			for (key in keys)
				if (ms["p2p", key] > 0 && ms["lower", key] > 0)
					print key, ms["p2p", key] / ms["lower", key],
						cpu["p2p", key] / cpu["lower", key]
		}' "$2")
	awk '{ print $1 }' <<<"$pairs" | sort -un | while read -r n; do
		echo "pooled N=$n paired p2p / lower" \
			"ratio=$(awk -v n="$n" '$1 == n { print $4 }' <<<"$pairs" |
				stats %.2f | cut -d' ' -f1)" \
			"cpu_ratio=$(awk -v n="$n" '$1 == n { print $5 }' <<<"$pairs" |
				stats %.2f | cut -d' ' -f1)" \
			"pairs=$(awk -v n="$n" '$1 == n' <<<"$pairs" | wc -l)" \
			"boots=$boots"
	done
}

if [ "${1:-}" = pool ] && [ $# = 3 ]; then
	pool "$2" "$3"
	exit
fi

bin=${MESH_BIN:?}
# The ranks' files (barrier, output, -T lines, perf data) stay in the
# guest's own tmpfs: on the results share every write is a 9p round trip
# to the host, which the -T lines made part of the measured time.
out=$(mktemp -d /tmp/mesh.XXXXXX)
trap 'rm -rf "$out"' EXIT
a1=${RDMA_TEST_ADDR1:-192.0.2.1}
a2=${RDMA_TEST_ADDR2:-$a1}
read -r -a ns <<<"${MESH_NS:-8}"
trace=${MESH_TRACE:-0}
tfs=/sys/kernel/tracing
if [ "$trace" = 1 ]; then
	[ -d $tfs/events ] || mount -t tracefs nodev $tfs 2>/dev/null
	# p2pmesh -T stamps CLOCK_MONOTONIC: the kernel's trace the same.
	if [ -w $tfs/trace_clock ] && [ -d $tfs/events/rdma_cma ]; then
		echo mono >$tfs/trace_clock
		echo 1 >$tfs/events/rdma_cma/cm_event_handler/enable
	else
		tfs=
	fi
fi
reps=${MESH_REPS:-7}
norand="setarch $(uname -m) -R"
[ "${MESH_ASLR:-0}" = 1 ] && norand=
# On the same clock as -T; kernel symbols need the two settings.
# MESH_PERF_EVENT replaces the event, e.g. "-e page-faults -c 1" (every
# fault, with the function that took it).
perf_record="perf record -q -g -k CLOCK_MONOTONIC
	${MESH_PERF_EVENT:--e cpu-clock -F ${MESH_PERF_FREQ:-4000}}"
if [ "${MESH_PROFILE:-0}" = 1 ]; then
	# perf lowers the highest rate when its samples take time; an
	# instruction-counted guest (RDMACM_VM_ICOUNT) wants the rate asked.
	sysctl -qw kernel.perf_event_paranoid=-1 kernel.kptr_restrict=0 \
		kernel.perf_cpu_time_max_percent=0 \
		kernel.perf_event_max_sample_rate=200000
fi
ulimit -l unlimited
ulimit -n 65536 2>/dev/null
port=7000

# run N SCHEME PORT [preload]: one mesh on ports PORT..PORT+N-1; prints the
# slowest rank's setup_ms and the longest resolve_ms.
run() {
	local n=$1 scheme=$2 port=$3 so=${4:-} r pids=() addrs=()
	local flag='' st=0 b=$bin
	[ "${scheme%_b}" = lower ] && flag=-L
	[ "${scheme%_b}" != "$scheme" ] && b=${MESH_BIN_B:?}
	if [ "$trace" = 1 ] || [ "${MESH_PROFILE:-0}" = 1 ]; then
		flag="$flag -T"
	fi
	for ((r = 0; r < n; r++)); do
		if ((r % 2)); then addrs+=("$a2"); else addrs+=("$a1"); fi
	done
	rm -rf "$out/barrier" "$out"/rank."$scheme".* && mkdir -p "$out/barrier"
	for ((r = 0; r < n; r++)); do
		wrap=
		if [ "${MESH_WRAP_RANK:-0}" = all ] ||
			((r == ${MESH_WRAP_RANK:-0})); then
			wrap=${MESH_WRAP0:-}
			wrap=${wrap//%r/$scheme.$port.$r}
		fi
		[ "${MESH_PROFILE:-0}" = 1 ] &&
			wrap="$perf_record -o $out/perf.$scheme.$r --"
		# shellcheck disable=SC2086 # MESH_ARGS, wrap, norand, flag: lists
		LD_PRELOAD=$so UCMA_COUNT_OUT="$out/count.$scheme.$r" \
			timeout 300 $wrap $norand "$b" -q -p $port -b "$out/barrier" $flag \
			${MESH_ARGS:-} $r "${addrs[@]}" >"$out/rank.$scheme.$r" 2>&1 &
		pids+=($!)
	done
	for r in "${pids[@]}"; do
		wait "$r" || st=1
	done
	if ((st)); then
		echo "mesh N=$n $scheme: FAILED" >&2
		cat "$out"/rank."$scheme".* >&2
		return 1
	fi
	[ "${MESH_PROFILE:-0}" = 1 ] && profile "$n" "$scheme" >&2
	# The slowest rank's setup and resolution; the ranks' CPU time over
	# their setup, its user-space part, their sleeps, event-loop turns and
	# page faults, summed.
	cat "$out"/rank."$scheme".* | awk '
		function val(k,  i) {
			for (i = 1; i <= NF; i++)
				if (index($i, k "=") == 1)
					return substr($i, length(k) + 2) + 0
			return -1
		}
		/ setup_ms=/ {
			if (val("setup_ms") > max) max = val("setup_ms")
			if (val("resolve_ms") > rmax) rmax = val("resolve_ms")
			if (val("cpu_ms") > 0) cpu += val("cpu_ms")
			usr += val("usr_ms")
			sleeps += val("sleeps")
			faults += val("faults")
			polls += val("polls")
		}
		END { printf "%s %s %.1f %.1f %d %d %d\n", max + 0, rmax + 0,
			cpu, usr, sleeps, polls, faults }'
}

# profile N SCHEME: each rank's perf samples from its first -T step to its
# last, classified (report.py profile).
profile() {
	local r win
	for ((r = 0; r < $1; r++)); do
		win=$(awk '/^T rank/ { t = $NF; if (!lo || t < lo) lo = t
				if (t > hi) hi = t }
			END { printf "%.3f,%.3f", lo / 1000, hi / 1000 }' \
			"$out/rank.$2.$r")
		perf script -i "$out/perf.$2.$r" -F comm,pid,tid,time,ip,sym,dso \
			2>/dev/null | python3 "$here/report.py" profile window "$win" |
			sed "s/^profile /profile $2 /"
	done
}

# paired FILE_A FILE_B: lines "rep ms cpu_ms" of two schemes; the median
# of the per-repetition ratios A / B, of the time and of the CPU time.
# The two schemes of one repetition run back to back, so a drift of the
# guest's speed within a run (2x for the same work) cancels out of each
# ratio.  What differs from one boot to the next does not: five runs of 21
# at N = 8 on 2026-11-28 gave paired ratios of 0.93-1.11 (ratios of the
# medians 0.96-1.10).  Compare builds within one run (MESH_BIN_B).
paired() {
	local t c n
	sort -k1,1 "$1" >"$1.sorted"
	sort -k1,1 "$2" >"$2.sorted"
	join "$1.sorted" "$2.sorted" >"$1.joined"
	n=$(wc -l <"$1.joined")
	((n)) || return 0
	read -r t _ _ <<<"$(awk '{ print $2 / $4 }' "$1.joined" | stats %.2f)"
	read -r c _ _ <<<"$(awk '{ print $3 / $5 }' "$1.joined" | stats %.2f)"
	echo "ratio=$t cpu_ratio=$c pairs=$n"
}

status=0
for n in "${ns[@]}"; do
	if [ -n "${MESH_COUNT_SO:-}" ]; then
		for scheme in p2p lower; do
			rm -f "$out"/count.$scheme.*
			port=$((port + n))
			run "$n" $scheme $port "$MESH_COUNT_SO" >/dev/null || status=1
			for ((r = 0; r < n; r++)); do
				echo "count N=$n $scheme rank=$r $(cat "$out/count.$scheme.$r")"
			done
		done
	fi
	schemes=(p2p lower)
	[ -n "${MESH_BIN_B:-}" ] && schemes+=(p2p_b lower_b)
	for scheme in "${schemes[@]}"; do
		: >"$out/$scheme.rep.$n"
		: >"$out/$scheme.loop.$n"
	done
	for ((i = 0; i < reps; i++)); do
		# The order rotates too, so no scheme always goes first.
		order=
		for ((j = 0; j < ${#schemes[@]}; j++)); do
			order+=" ${schemes[$(((i + j) % ${#schemes[@]}))]}"
		done
		for scheme in $order; do
			# Each run on ports of its own: none waits for the last.
			port=$((port + n))
			[ "$trace" = 1 ] && [ -n "$tfs" ] && echo >$tfs/trace
			if t=$(run "$n" "$scheme" $port); then
				read -r ms rms cpu usr sleeps polls faults <<<"$t"
				echo "mesh N=$n $scheme run=$i ms=$ms resolve_ms=$rms" \
					"cpu_ms=$cpu usr_ms=$usr sleeps=$sleeps" \
					"polls=$polls faults=$faults"
				echo "$i $ms $cpu" >>"$out/$scheme.rep.$n"
				echo "$usr $sleeps $polls $faults" \
					>>"$out/$scheme.loop.$n"
				if [ "$trace" = 1 ]; then
					echo "=== $scheme rep $i n $n port $port"
					cat "$out"/rank."$scheme".* | grep '^T '
					if [ -n "$tfs" ]; then
						echo "--- kernel"
						grep 'cm_event_handler' $tfs/trace
					fi
				fi
			else
				status=1
			fi
		done
	done
	for suffix in '' _b; do
		[ -z "$suffix" ] || [ -n "${MESH_BIN_B:-}" ] || continue
		p=$out/p2p$suffix.rep.$n l=$out/lower$suffix.rep.$n
		read -r pm plo phi <<<"$(awk '{ print $2 }' "$p" | stats)"
		read -r lm llo lhi <<<"$(awk '{ print $2 }' "$l" | stats)"
		read -r pc _ _ <<<"$(awk '{ print $3 }' "$p" | stats)"
		read -r lc _ _ <<<"$(awk '{ print $3 }' "$l" | stats)"
		echo "summary N=$n cpu_ms (all ranks) p2p$suffix median=$pc" \
			"lower$suffix median=$lc"
		for k in 1:usr_ms 2:sleeps 3:polls 4:faults; do
			read -r pv _ _ <<<"$(awk -v c="${k%%:*}" '{ print $c }' \
				"$out/p2p$suffix.loop.$n" | stats)"
			read -r lv _ _ <<<"$(awk -v c="${k%%:*}" '{ print $c }' \
				"$out/lower$suffix.loop.$n" | stats)"
			echo "summary N=$n ${k#*:} (all ranks) p2p$suffix" \
				"median=$pv lower$suffix median=$lv"
		done
		echo "summary N=$n p2p$suffix median=$pm range=$plo-$phi" \
			"lower$suffix median=$lm range=$llo-$lhi" \
			"ratio=$(awk -v a="$pm" -v b="$lm" \
				'BEGIN { printf "%.2f", a / b }')"
		paired "$p" "$l" |
			sed "s/^/summary N=$n paired p2p$suffix \/ lower$suffix /"
	done
done
exit $status
