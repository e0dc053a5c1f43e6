#!/bin/bash
# The benchmarks, one command.  Not a test: nothing here passes or fails
# on a number.
#
#   tests/bench/run.sh [MODE] [OUTDIR]
#
# MODE (default bench):
#   bench           this build's librdmacm against Debian's and the limit
#                   (~20 min): cm_bench's steps (and its limit steps),
#                   writes, memory and callgrind counts and the p2p mesh
#                   hook in an instruction-counted Soft-RoCE guest, the
#                   rsocket (8 rounds) and ACM hooks' times in a plain TCG
#                   one (RDMACM_VM_ICOUNT given, or natively: one run of
#                   everything); prints the
#                   three-column table and leaves in OUTDIR results.txt (raw
#                   "<library> <metric> <value> <unit>" lines), table.md
#                   (as pasted into RESULTS.md), ratios.png, callgrind.*
#   scale           connection setup at scale: cm_bench's steps at 100,
#                   1,000 and 10,000 connections (both ends in one
#                   process) and 100,000 ids, no callgrind, no hooks; the
#                   table adds the growth from the second-largest count to
#                   the largest (per-connection time, heap, resident
#                   memory and fds: flat is 1.00) and its slope
#   rsocket         rsocket-bench.sh alone: Debian's rstream on both
#                   libraries, throughput and 64-byte latency, against the
#                   targets; RDMACM_BENCH_ROUNDS=N: N rounds in turn,
#                   medians and paired ratios (RDMACM_BENCH_LIBS: more
#                   library directories to compare)
#   path            the rsocket path's own work, exactly: instructions per
#                   64-byte message (an rsend and its rrecv) of the library
#                   and the libc it calls, by function, over the unit
#                   tests' fake device (callgrind; no VM, nothing waits,
#                   seconds; report.py path)
#   acm             acm-bench.sh alone: resolutions through ACM's table and
#                   cache against the kernel's
#   mesh            the p2p full mesh alone (mesh-guest.sh): peer2peer_mode
#                   against connect-higher/accept-lower, medians, ranges,
#                   paired ratios; MESH_BOOTS=K boots K times and pools them
#   mesh-trace      the mesh with p2pmesh -T (and the guest kernel's
#                   rdma_cma tracepoints): step medians (report.py trace)
#   mesh-profile    every rank under perf record, its setup window only:
#                   samples per scheme by class (report.py profile)
#   mesh-callgrind  one mesh of each scheme, every rank under callgrind,
#                   form_mesh only: user-space instructions per scheme and
#                   the functions that differ (report.py callgrind)
#   mesh-strace     the same under strace -f: the span's system calls and
#                   rdma_cm commands per scheme (report.py strace)
#   help            this text
#
# OUTDIR (default $BUILD_DIR/bench/<date>, or <mode>-<date> there) is also
# the guest's results directory; the mesh modes keep the guest's output in
# OUTDIR/mesh.log.  tests/bench/README.md says what is measured and how.
#
# Environment: BUILD_DIR (default build/); RDMACM_TEST_NATIVE=1 runs the
# guest side on this machine's RDMA device instead (tests/vm/run-native.sh);
# RDMACM_VM_TIMEOUT, RDMACM_VM_ICOUNT (tests/vm/README.md; mesh-callgrind
# and mesh-strace default to an instruction-counted guest, 0).
# bench: RDMACM_BENCH_NS ("1 100 1000"), RDMACM_BENCH_REPS ("15 5 2"),
# RDMACM_BENCH_CG ("2 12"; "" skips callgrind), RDMACM_BENCH_MEM_IDS
# (1000), RDMACM_BENCH_P2P_REPS (5), RDMACM_BENCH_RUNS (rsocket, 3),
# RDMACM_BENCH_HOOKS (1; 0 skips guest.d).  scale sets NS, REPS, CG,
# MEM_IDS and HOOKS for itself unless they are given.
# acm: RDMACM_ACM_BENCH_REPS (200).
# mesh modes: MESH_NS ("8"), MESH_REPS (7; 5 for mesh-trace and
# mesh-profile; mesh-callgrind and mesh-strace run one mesh of each scheme),
# MESH_ARGS (more p2pmesh options, e.g. -D), MESH_BIN, MESH_BIN_B,
# MESH_COUNT=1 (ucma_count.c), MESH_ASLR=1, MESH_PERF_FREQ, MESH_PERF_EVENT,
# MESH_WRAP0 and MESH_WRAP_RANK: see mesh-guest.sh.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$repo/build}
modes=" bench scale rsocket path acm mesh mesh-trace mesh-profile mesh-callgrind mesh-strace "

usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; }
die() {
	echo "bench: $*" >&2
	exit 2
}

mode=bench
case ${1:-} in
help | -h | --help)
	usage
	exit 0
	;;
"" | */*) ;; # no mode, or an OUTDIR for bench
*)
	if [[ $modes == *" $1 "* ]]; then
		mode=$1
		shift
	elif [ ! -d "$1" ]; then
		die "no mode '$1' (tests/bench/run.sh help); a new OUTDIR: ./$1"
	fi
	;;
esac
[ $# -le 1 ] || die "usage: tests/bench/run.sh [MODE] [OUTDIR]"

stamp=$(date +%Y%m%d-%H%M%S)
[ "$mode" = bench ] || stamp=$mode-$stamp
out=${1:-$build/bench/$stamp}
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -f "$build/src/.libs/librdmacm.so.1" ] || "$repo/tests/setup.sh"

# --- steps the modes share ---------------------------------------------------

# launch SCRIPT [ARGS...]: run SCRIPT in the guest (or natively), its
# results directory OUTDIR.
launch() {
	local launcher=$repo/tests/vm/run-guest.sh
	[ "${RDMACM_TEST_NATIVE:-0}" = 1 ] && launcher=$repo/tests/vm/run-native.sh
	RDMACM_VM_OUT=$out "$launcher" "$@"
}

# fetch_ref: ref=Debian's library directory (unpacked in ~/.cache).
fetch_ref() {
	ref=$("$repo/tests/abi/fetch-reference.sh")/usr/lib/x86_64-linux-gnu
	[ -e "$ref/librdmacm.so.1" ] || {
		echo "bench: no Debian librdmacm under $ref" >&2
		exit 1
	}
}

# bench_cc OUT SOURCES...: a measuring program on our headers, linked by
# soname only (no run path), so LD_LIBRARY_PATH decides which
# librdmacm.so.1 it gets.
bench_cc() {
	local bin=$1
	shift
	mkdir -p "$build/bench"
	# shellcheck disable=SC2046
	gcc -O2 -g -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
		-I"$repo/include" $(pkg-config --cflags libibverbs) "$@" \
		-L"$build/src/.libs" -lrdmacm \
		$(pkg-config --libs libibverbs) -o "$bin"
}

# build_rsocket_tools: rsocket's wire on raw verbs, the second limit, and
# the descriptor count of one connected rsocket (rsocket-bench.sh).
build_rsocket_tools() {
	export RDMACM_BENCH_WIRE=$build/bench/wire
	export RDMACM_BENCH_FDCOUNT=$build/bench/rs_fdcount
	bench_cc "$RDMACM_BENCH_WIRE" "$here/wire.c"
	bench_cc "$RDMACM_BENCH_FDCOUNT" "$repo/tests/system/rs_fdcount.c" \
		"$repo/tests/system/harness.c"
}

# mesh_boot TIMEOUT: one guest run of mesh-guest.sh with the MESH_*
# settings (the caller's, or the mode's), its output on stdout.
count_so=
mesh_boot() {
	RDMACM_VM_TIMEOUT=${RDMACM_VM_TIMEOUT:-$1} \
		RDMACM_VM_PASS_ENV="MESH_BIN MESH_BIN_B MESH_NS MESH_REPS MESH_COUNT_SO MESH_ARGS MESH_WRAP0 MESH_WRAP_RANK MESH_ASLR MESH_TRACE MESH_PROFILE MESH_PERF_FREQ MESH_PERF_EVENT" \
		MESH_BIN=${MESH_BIN:-$build/examples/p2pmesh} MESH_COUNT_SO=$count_so \
		MESH_NS=${MESH_NS:-8} MESH_REPS=${MESH_REPS:-7} \
		RDMACM_BUILD_DIR=$build launch "$here/mesh-guest.sh"
}

# mesh_logged TIMEOUT: mesh_boot into OUTDIR/mesh.log, for an analyser;
# its end on the terminal if the run fails.
mesh_logged() {
	echo "bench: guest output in $out/mesh.log"
	mesh_boot "$1" >"$out/mesh.log" 2>&1 || {
		tail -20 "$out/mesh.log" >&2
		exit 1
	}
}

# mesh_wrapped COMMAND: one mesh of each scheme with every rank under
# COMMAND (split into words in the guest), which writes its files into
# OUTDIR.  The guest is instruction-counted unless RDMACM_VM_ICOUNT says
# otherwise.  The libtool wrapper would put its shell under the tool too:
# the binary itself, with this build's library first in its path.
mesh_wrapped() {
	[[ $out != *[[:space:]]* ]] || die "OUTDIR '$out' has blanks"
	RDMACM_VM_ICOUNT=${RDMACM_VM_ICOUNT-0} \
		LD_LIBRARY_PATH=$build/src/.libs \
		MESH_BIN=$build/examples/.libs/p2pmesh MESH_REPS=1 \
		MESH_WRAP_RANK=all MESH_WRAP0="$1" mesh_logged 3000
}

# --- the modes ---------------------------------------------------------------

# bench_boot PART: one guest run of guest.sh's PART (work, time or all).
bench_boot() {
	RDMACM_VM_TIMEOUT=${RDMACM_VM_TIMEOUT:-3000} RDMACM_BENCH_PART=$1 \
		RDMACM_BENCH_BIN=$bin RDMACM_BENCH_OURS=$build/src/.libs \
		RDMACM_BENCH_REF=$ref launch "$here/guest.sh"
}

mode_bench() {
	# One binary for both libraries (bench_cc).
	bin=$build/bench/cm_bench
	bench_cc "$bin" "$here/cm_bench.c" "$here/cm_limit.c" \
		"$repo/tests/system/harness.c"
	build_rsocket_tools
	fetch_ref
	echo "bench: results in $out"
	# Work (setup, instructions, ACM, the mesh) in an instruction-counted
	# guest, times (rsocket) in a plain one: two boots, one results file.
	if [ "${RDMACM_TEST_NATIVE:-0}" = 1 ] || [ -n "${RDMACM_VM_ICOUNT+set}" ]; then
		bench_boot all
	else
		RDMACM_VM_ICOUNT=0 bench_boot work
		[ "${RDMACM_BENCH_HOOKS:-1}" = 0 ] || bench_boot time
	fi
	python3 "$here/report.py" "$out/results.txt" \
		--markdown "$out/table.md" --plot "$out/ratios.png"
	echo "bench: table in $out/table.md, plot in $out/ratios.png"
}

mode_scale() {
	RDMACM_BENCH_NS=${RDMACM_BENCH_NS:-100 1000 10000} \
		RDMACM_BENCH_REPS=${RDMACM_BENCH_REPS:-3 2 1} \
		RDMACM_BENCH_CG=${RDMACM_BENCH_CG-} \
		RDMACM_BENCH_MEM_IDS=${RDMACM_BENCH_MEM_IDS:-100000} \
		RDMACM_BENCH_HOOKS=${RDMACM_BENCH_HOOKS:-0} mode_bench
}

mode_rsocket() {
	fetch_ref
	build_rsocket_tools
	RDMACM_VM_TIMEOUT=${RDMACM_VM_TIMEOUT:-1200} RDMACM_BUILD_DIR=$build \
		RDMACM_REF_LIBDIR=$ref launch "$here/rsocket-bench.sh"
}

# The unit test's ping-pong (its own case), its loop's span only.
mode_path() {
	command -v valgrind >/dev/null || die "path needs valgrind"
	make -s -C "$build" tests/unit/unit_runner
	CK_FORK=no valgrind -q --tool=callgrind \
		--callgrind-out-file="$out/path.cg" '--toggle-collect=rs_ping_pong*' \
		"$build/tests/unit/unit_runner" rsocket_stream path
	python3 "$here/report.py" path "$out/path.cg" | tee "$out/path.txt"
}

mode_acm() {
	fetch_ref
	RDMACM_BUILD_DIR=$build RDMACM_BENCH_REF=$ref launch "$here/acm-bench.sh"
}

# MESH_BOOTS=K boots the guest K times and ends with the paired ratios of
# all K boots' repetitions pooled: one boot's paired ratio moves by about
# 0.1 from one boot to the next, more than the differences it is asked to
# show.
mode_mesh() {
	local boots=${MESH_BOOTS:-1} b status=0
	if [ "$boots" = 1 ]; then
		mesh_boot 3000 | tee "$out/mesh.log"
		return
	fi
	: >"$out/mesh.log"
	for ((b = 1; b <= boots; b++)); do
		echo "=== boot $b of $boots"
		mesh_boot 3000 | sed "s/^mesh /mesh boot=$b /" |
			tee -a "$out/mesh.log" || status=1
	done
	"$here/mesh-guest.sh" pool "$boots" "$out/mesh.log"
	return $status
}

mode_mesh_trace() {
	MESH_TRACE=1 MESH_REPS=${MESH_REPS:-5} mesh_logged 1200
	grep '^summary' "$out/mesh.log" || true
	python3 "$here/report.py" trace "$out/mesh.log"
}

mode_mesh_profile() {
	MESH_PROFILE=1 MESH_REPS=${MESH_REPS:-5} mesh_logged 2400
	grep '^summary' "$out/mesh.log" || true
	python3 "$here/report.py" profile sum "$out/mesh.log"
}

# --trace-children: setarch comes first on the rank's command line.
mode_mesh_callgrind() {
	rm -f "$out"/cg.*
	local cg="valgrind -q --tool=callgrind --trace-children=yes"
	mesh_wrapped "$cg --toggle-collect=form_mesh --callgrind-out-file=$out/cg.%p --"
	python3 "$here/report.py" callgrind "$out"
}

# mesh-guest.sh turns %r into a name of the rank's own.
mode_mesh_strace() {
	rm -f "$out"/st.*
	mesh_wrapped "strace -f -y -o $out/st.%r --"
	python3 "$here/report.py" strace "$out"
}

if [ "${mode#mesh}" != "$mode" ] && [ "${MESH_COUNT:-0}" = 1 ]; then
	mkdir -p "$build/bench"
	count_so=$build/bench/ucma_count.so
	gcc -O2 -g -Wall -Wextra -Werror -shared -fPIC \
		"$here/ucma_count.c" -ldl -o "$count_so"
fi
"mode_${mode//-/_}"
