#!/bin/bash
# rsocket benchmark (not a test: it only measures), in the guest.  Compares
# this build's librdmacm with Debian's on the same rstream binary (Debian's
# /usr/bin/rstream, both ends on the library being measured), and both
# with the device's limit: raw verbs, Debian's perftest (ib_write_bw at
# the same 64 KiB, ib_write_lat at 64 bytes, connected with -R; its data
# path is the verbs' alone).  Prints throughput and small-message latency
# with the ratios to Debian's (targets: throughput >= 1.2x, latency <=
# 0.8x) and to the limit (throughput >= 0.95x, latency <= 1.2x).
#
#   tests/bench/run.sh rsocket            boots the Soft-RoCE guest for it
#   RDMACM_BENCH_RUNS=5 tests/bench/run.sh rsocket
#   RDMACM_BENCH_ROUNDS=16 RDMACM_BENCH_LIBS=/path/to/other/.libs \
#       tests/bench/run.sh rsocket
#
# Rounds: under TCG one run's figures move by 10-30 % with the host, more
# than most changes it is asked to show.  RDMACM_BENCH_ROUNDS=N measures
# N rounds instead, each running every library and the limit once in
# turn, and reports medians and, for each library, the median of each
# round's own ratio to ours and to the limit (paired: both sides of a
# ratio saw the same moment of the host).  RDMACM_BENCH_LIBS names more
# library directories to compare in the rounds (a baseline build), and
# the rounds add ib_send_lat (a SEND into a posted receive, which every
# rsocket message also takes at its peer) beside ib_write_lat.
#
# rsocket's own wire: ib_write_lat's messages consume no receive, an
# rsocket's do (an RDMA WRITE WITH IMMEDIATE into a posted receive), and
# ib_write_bw keeps many writes in flight where an rsocket waits for
# credits (two 64 KiB halves of its peer's buffer).  wire.c runs that
# wire on raw verbs (RDMACM_BENCH_WIRE, built by run.sh), a second limit:
# ours / wire is what the library's path costs, wire / perftest what the
# wire protocol does.  The rounds also run its two memory-polled forms
# (wire-last: ib_write_lat's own method, polling the write's last bytes;
# wire-flag: a second write of a flag word after the message), which tell
# what a wire without receives could gain, and its stream with rsocket's
# two copies (wire-copy.bw), which tells what they cost; on a device that
# pages registered memory on demand, its stream straight out of the
# application's buffer so registered (wire-odp.bw), which tells what a
# zero-copy rsend could reach there.
#
# Environment: RDMACM_BUILD_DIR (default build/), RDMACM_BENCH_RUNS
# (repetitions, best kept; default 3), RDMACM_BENCH_ROUNDS (0: best of
# RUNS instead), RDMACM_BENCH_LIBS, RDMACM_REF_LIBDIR (Debian's
# unpacked library), RDMA_TEST_ADDR1/2, RDMA_TEST_DEV (default: the first
# RDMA device); RDMACM_BENCH_RESULTS=FILE appends "<library>
# rsocket.<metric> <value> <unit>" lines to FILE, the limit's as library
# "raw" (run.sh's guest.d/rsocket.sh does; with rounds, one line per
# round and library, whose medians report.py takes); RDMACM_BENCH_WIRE, the
# wire binary, and RDMACM_BENCH_FDCOUNT, tests/system/rs_fdcount.c built
# for the bench (the descriptors one connected rsocket costs, each end;
# unset: not measured).  Under TCG emulation absolute
# numbers are low and noisy; the ratio is what to read.
set -u
# shellcheck source=../system/verdict.sh
. "$(dirname "$0")/../system/verdict.sh" # wait_bound
repo=$(cd "$(dirname "$0")/../.." && pwd)
BUILD="${RDMACM_BUILD_DIR:-$repo/build}"
REF="${RDMACM_REF_LIBDIR:-$HOME/.cache/rdmacm-ref/root/usr/lib/x86_64-linux-gnu}"
A1="${RDMA_TEST_ADDR1:-192.0.2.1}"
A2="${RDMA_TEST_ADDR2:-$A1}"
RUNS="${RDMACM_BENCH_RUNS:-3}"
RSTREAM=/usr/bin/rstream
ours="$(realpath "$BUILD/src/.libs")"
ref="$(realpath "$REF")"
ulimit -l unlimited 2>/dev/null
port=7800

ROUNDS="${RDMACM_BENCH_ROUNDS:-0}"
libs=("$ours" "$ref")
names=(ours debian)
for lib in ${RDMACM_BENCH_LIBS:-}; do
	libs+=("$(realpath "$lib")")
	names+=("lib${#names[@]}")
	echo "# lib$((${#names[@]} - 1)): $lib"
done

for lib in "${libs[@]}"; do
	got=$(LD_LIBRARY_PATH="$lib" ldd "$RSTREAM" | awk '/librdmacm.so.1/ { print $3 }')
	if [ "$(dirname "$(realpath "$got")")" != "$lib" ]; then
		echo "rstream would load $got, not the library in $lib" >&2
		exit 1
	fi
done

# pair LIB PATTERN WHAT: one server/client pair, both loading LIB: the
# server runs "${server[@]}", the client "${client[@]}" (the caller's
# arrays, on the caller's $port); prints the client's output.  A client
# that printed no line matching PATTERN is reported as WHAT with its
# last lines (a hang ends in timeout's 124).
pair() {
	local lib=$1 pattern=$2 what=$3 out
	LD_LIBRARY_PATH="$lib" timeout 120 "${server[@]}" >/dev/null 2>&1 &
	wait_bound $port $!
	out=$(LD_LIBRARY_PATH="$lib" timeout 120 "${client[@]}" 2>&1)
	wait
	grep -Eq "$pattern" <<<"$out" || {
		echo "# $what gave no result:" >&2
		tail -3 <<<"$out" | sed 's/^/#   /' >&2
	}
	printf '%s\n' "$out"
}

# one LIB ARGS...: one rstream pair; prints the result line's fields.
one() {
	local lib=$1 server client
	shift
	port=$((port + 1))
	server=("$RSTREAM" -b "$A1" -p "$port" "$@")
	client=("$RSTREAM" -s "$A1" -b "$A2" -p "$port" "$@")
	pair "$lib" '^custom ' "rstream $* on $lib" |
		awk '$1 == "custom" { print $(NF-1), $NF }'
}

# best FIELD BETTER(max|min) MEASURE ARGS...: the best of $RUNS runs of
# MEASURE (one or raw), by the FIELD-th field it prints.
best() {
	local field=$1 dir=$2 v b=
	shift 2
	for _ in $(seq "$RUNS"); do
		v=$("$@" | awk -v f="$field" '{ print $f }')
		[ -z "$v" ] && continue
		if [ -z "$b" ] || awk -v v="$v" -v b="$b" -v d="$dir" \
			'BEGIN { exit !((d == "max") ? v > b : v < b) }'; then
			b=$v
		fi
	done
	echo "${b:-nan}"
}

DEV="${RDMA_TEST_DEV:-}"
for d in /sys/class/infiniband/*; do
	[ -n "$DEV" ] || { [ -e "$d" ] && DEV="${d##*/}"; }
done

# raw PROG ARGS...: one perftest pair on the device (Debian's library sets
# up the connection); prints the result line's fields.
raw() {
	local prog=$1 server client
	shift
	port=$((port + 1))
	server=("$prog" -d "$DEV" -R -p "$port" "$@")
	client=("$prog" -d "$DEV" -R -p "$port" "$@" "$A1")
	pair "$ref" '^ *[0-9]+ +[0-9]+ ' "$prog $*" |
		awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ { $1 = $2 = ""; print }'
}

# wire ARGS...: one pair of wire.c (connected by our library, raw verbs
# after) with ARGS; prints its figure (one-way µs, or Gb/s with -B).
WIRE="${RDMACM_BENCH_WIRE:-}"
wire() {
	local server client
	port=$((port + 1))
	server=("$WIRE" -b "$A1" -p "$port" "$@")
	client=("$WIRE" -s "$A1" -p "$port" "$@")
	pair "$ours" '^wire' "wire $*" | awk '$1 ~ /^wire/ { print $4 }'
}
# Whether the device pages registered memory on demand (Soft-RoCE from
# Linux 6.14 on): then the rounds also stream out of the application's
# buffer itself (wire-odp.bw), as a zero-copy rsend would.
ODP=
ibv_devinfo -v -d "$DEV" 2>/dev/null | grep -qx '[[:space:]]*ODP_SUPPORT' && ODP=1
WIRE_LAT=(-S 64 -n 2000)
WIRE_BW=(-B -S 65536 -n 1000)

BW_ARGS=(-S 65536 -C 1000 -I 1 -T b)
LAT_ARGS=(-S 64 -C 1 -I 2000 -T b)
LIMIT_BW=(ib_write_bw -s 65536 -n 1000 --report_gbits)
LIMIT_LAT=(ib_write_lat -s 64 -n 2000)

# rounds: RDMACM_BENCH_ROUNDS rounds, one line each, then the medians.
rounds() {
	local i k line
	echo "# $ROUNDS rounds: rstream ${BW_ARGS[*]} and ${LAT_ARGS[*]} on each library, ${LIMIT_BW[*]}, ${LIMIT_LAT[*]} and ib_send_lat on $DEV, in turn"
	for i in $(seq "$ROUNDS"); do
		line="round $i"
		for k in "${!libs[@]}"; do
			line+=" ${names[k]}.bw=$(one "${libs[k]}" "${BW_ARGS[@]}" | awk '{ print $1 }')"
			line+=" ${names[k]}.lat=$(one "${libs[k]}" "${LAT_ARGS[@]}" | awk '{ print $2 }')"
		done
		line+=" limit.bw=$(raw "${LIMIT_BW[@]}" | awk '{ print $2 }')"
		line+=" limit.lat=$(raw "${LIMIT_LAT[@]}" | awk '{ print $4 }')"
		line+=" send.lat=$(raw ib_send_lat -s 64 -n 2000 | awk '{ print $4 }')"
		[ -n "$WIRE" ] && line+=" wire.lat=$(wire "${WIRE_LAT[@]}") wire-last.lat=$(wire "${WIRE_LAT[@]}" -m last) wire-flag.lat=$(wire "${WIRE_LAT[@]}" -m flag) wire.bw=$(wire "${WIRE_BW[@]}") wire-copy.bw=$(wire "${WIRE_BW[@]}" -c)"
		[ -n "$WIRE" ] && [ -n "$ODP" ] && line+=" wire-odp.bw=$(wire "${WIRE_BW[@]}" -O)"
		echo "$line"
	done | tee "$rounds_log"
	printf '%-12s %8s %14s %14s %7s\n' figure median paired/ours paired/limit rounds
	# Medians; paired: the median over the rounds of each round's ratio.
	awk '
	function median(a, n,   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
				t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
			}
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	{
		delete v
		for (i = 3; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[2] + 0 > 0)
				v[kv[1]] = kv[2]
		}
		for (k in v) {
			n[k]++; val[k, n[k]] = v[k]
			split(k, km, ".")
			ok = "ours." km[2]
			lk = "limit." km[2]
			if (ok in v) {
				no[k]++; vo[k, no[k]] = v[k] / v[ok]
			}
			if (lk in v) {
				nl[k]++; vl[k, nl[k]] = v[k] / v[lk]
			}
		}
	}
	END {
		for (k in n) {
			delete a; for (i = 1; i <= n[k]; i++) a[i] = val[k, i]
			m = median(a, n[k])
			po = "-"; pl = "-"
			if (no[k]) { delete a; for (i = 1; i <= no[k]; i++) a[i] = vo[k, i]; po = sprintf("%.3f", median(a, no[k])) }
			if (nl[k]) { delete a; for (i = 1; i <= nl[k]; i++) a[i] = vl[k, i]; pl = sprintf("%.3f", median(a, nl[k])) }
			printf "%-12s %8.2f %14s %14s %7d\n", k, m, po, pl, n[k]
		}
	}' "$rounds_log" | sort
}

# registration: what a send without the copy would pay per call instead
# (wire -R: a 64 KiB registration and deregistration, and a 64 KiB copy).
registration() {
	read -r _ _ _ reg_us copy_us <<<"$(LD_LIBRARY_PATH="$ours" "$WIRE" -R -S 65536 -n 200)"
	echo "# 64 KiB of the application's memory: registered and deregistered ${reg_us:-?} us, copied ${copy_us:-?} us"
	[ -n "$ODP" ] || return 0
	read -r _ _ _ reg_us _ <<<"$(LD_LIBRARY_PATH="$ours" "$WIRE" -R -O -S 65536 -n 200)"
	echo "# the same registered for on-demand paging: ${reg_us:-?} us"
}

# fds LIB: "CONNECTED n ACCEPTED m", the descriptors one more connected
# rsocket costs at each end on that library (rs_fdcount).
FDCOUNT="${RDMACM_BENCH_FDCOUNT:-}"
fds() {
	local log
	port=$((port + 1))
	log=$(mktemp)
	LD_LIBRARY_PATH="$1" timeout 60 "$FDCOUNT" server $port >"$log" 2>&1 &
	wait_bound $port $!
	echo "$(LD_LIBRARY_PATH="$1" timeout 60 "$FDCOUNT" client "$A1" $port 2>&1 | grep CONNECTED)" \
		"$(wait; grep ACCEPTED "$log")"
	rm -f "$log"
}

# descriptors: each library's fds() as results lines (in $fd_lines).
fd_lines=
descriptors() {
	local k c a
	[ -n "$FDCOUNT" ] || return 0
	for k in 0 1; do
		read -r _ c _ a <<<"$(fds "${libs[k]}")"
		echo "# descriptors per connected rsocket, ${names[k]}: ${c:-?} (connecting end), ${a:-?} (accepting end)"
		fd_lines+="${names[k]} rsocket.fds_connected ${c:-nan} fds"$'\n'
		fd_lines+="${names[k]} rsocket.fds_accepted ${a:-nan} fds"$'\n'
	done
}

# extra_results: the descriptors and the registration row, for the
# results file.
extra_results() {
	printf '%s' "$fd_lines"
	[ -z "${reg_us:-}" ] || echo "ours rsocket.reg_64K_us $reg_us us"
	[ -z "${copy_us:-}" ] || echo "ours rsocket.copy_64K_us $copy_us us"
}

# round_results: each round's throughput and latency of ours, Debian's and
# the limit as results lines (report.py takes their medians).
round_results() {
	awk '$1 == "round" {
		for (i = 3; i <= NF; i++) {
			split($i, kv, "=")
			split(kv[1], f, ".")
			lib = f[1] == "limit" ? "raw" : f[1]
			if (lib != "ours" && lib != "debian" && lib != "raw")
				continue
			if (kv[2] + 0 <= 0)
				continue
			if (f[2] == "bw")
				print lib, "rsocket.throughput", kv[2], "Gb/s"
			else if (f[2] == "lat")
				print lib, "rsocket.latency_64B", kv[2], "us"
		}
	}' "$rounds_log"
}

if [ "$ROUNDS" -gt 0 ]; then
	rounds_log=$(mktemp)
	trap 'rm -f "$rounds_log"' EXIT
	[ -z "$WIRE" ] || registration
	rounds
	descriptors
	if [ -n "${RDMACM_BENCH_RESULTS:-}" ]; then
		{
			extra_results
			round_results
		} | grep -v ' nan ' >>"$RDMACM_BENCH_RESULTS"
	fi
	exit 0
fi
echo "# rstream ${BW_ARGS[*]} (throughput) and ${LAT_ARGS[*]} (latency), best of $RUNS"
# one prints rstream's Gb/s (field 1) and µs (field 2)
bw_ours=$(best 1 max one "$ours" "${BW_ARGS[@]}")
bw_ref=$(best 1 max one "$ref" "${BW_ARGS[@]}")
lat_ours=$(best 2 min one "$ours" "${LAT_ARGS[@]}")
lat_ref=$(best 2 min one "$ref" "${LAT_ARGS[@]}")
# The limit: ib_write_bw's "BW average" (Gb/s with --report_gbits, field 2
# once #bytes and #iterations are gone), ib_write_lat's "t_avg" (µs, one
# way, field 4): rstream's usec/xfer is a mean (the run's time over its
# messages), so the limit is perftest's mean too, not its median
# (t_typical, field 3, which leaves the slow round trips out).
echo "# the limit: ib_write_bw -s 65536 -n 1000 --report_gbits, ib_write_lat -s 64 -n 2000 (t_avg) on $DEV, best of $RUNS"
bw_raw=$(best 2 max raw "${LIMIT_BW[@]}")
lat_raw=$(best 4 min raw "${LIMIT_LAT[@]}")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0 && a + 0 > 0) printf "%.2f", a / b; else print "n/a" }'; }
verdict() { awk -v r="$1" -v t="$2" -v d="$3" 'BEGIN { if (r == "n/a") print "?"; else if ((d == "ge") ? r >= t : r <= t) print "met"; else print "NOT met" }'; }
r_bw=$(ratio "$bw_ours" "$bw_ref")
r_lat=$(ratio "$lat_ours" "$lat_ref")
l_bw=$(ratio "$bw_ours" "$bw_raw")
l_lat=$(ratio "$lat_ours" "$lat_raw")
printf '%-18s %7s %7s %7s  %-20s %s\n' metric ours debian limit "ours/debian" "ours/limit"
printf '%-18s %7s %7s %7s  %-20s %s\n' "throughput (Gb/s)" "$bw_ours" "$bw_ref" "$bw_raw" \
	"$r_bw (>= 1.20: $(verdict "$r_bw" 1.2 ge))" "$l_bw (>= 0.95: $(verdict "$l_bw" 0.95 ge))"
printf '%-18s %7s %7s %7s  %-20s %s\n' "latency 64 B (us)" "$lat_ours" "$lat_ref" "$lat_raw" \
	"$r_lat (<= 0.80: $(verdict "$r_lat" 0.8 le))" "$l_lat (<= 1.20: $(verdict "$l_lat" 1.2 le))"
if [ -n "$WIRE" ]; then
	lat_wire=$(best 1 min wire "${WIRE_LAT[@]}")
	bw_wire=$(best 1 max wire "${WIRE_BW[@]}")
	echo "# rsocket's wire on raw verbs (wire.c): $lat_wire us, $bw_wire Gb/s; ours / wire $(ratio "$lat_ours" "$lat_wire") and $(ratio "$bw_ours" "$bw_wire"), wire / perftest $(ratio "$lat_wire" "$lat_raw") and $(ratio "$bw_wire" "$bw_raw")"
	registration
fi
descriptors
if [ -n "${RDMACM_BENCH_RESULTS:-}" ]; then
	{
		extra_results
		echo "ours rsocket.throughput $bw_ours Gb/s"
		echo "debian rsocket.throughput $bw_ref Gb/s"
		echo "raw rsocket.throughput $bw_raw Gb/s"
		echo "ours rsocket.latency_64B $lat_ours us"
		echo "debian rsocket.latency_64B $lat_ref us"
		echo "raw rsocket.latency_64B $lat_raw us"
	} | grep -v ' nan ' >>"$RDMACM_BENCH_RESULTS"
fi
exit 0
