#!/bin/bash
# Where the full mesh's CPU time goes, per scheme (README, "Peer-to-peer
# full mesh"): every rank of tests/bench/mesh-guest.sh runs under perf
# record, and only each rank's own setup window (its first to its last
# p2pmesh -T step) counts.  tests/bench/mesh_profile.py prints, per scheme,
# the samples by thread, kernel entry (system call with its ucma or uverbs
# handler, page fault with the user function that took it, interrupt) or
# user-space function, and the p2p - lower difference.  perf's overhead
# changes the timings: compare the classes, not the run times.  Not a
# test.
#
#   tests/bench/mesh-profile.sh          # MESH_NS="8" MESH_REPS=5
#
# Settings as for mesh-bench.sh; MESH_PROFILE_OUT keeps the raw output.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$repo/build}
raw=${MESH_PROFILE_OUT:-$(mktemp)}
RDMACM_VM_TIMEOUT=${RDMACM_VM_TIMEOUT:-2400} \
	RDMACM_VM_PASS_ENV="MESH_BIN MESH_NS MESH_REPS MESH_ARGS MESH_PROFILE MESH_PERF_FREQ MESH_PERF_EVENT" \
	MESH_BIN=${MESH_BIN:-$build/examples/p2pmesh} MESH_PROFILE=1 \
	MESH_NS=${MESH_NS:-8} MESH_REPS=${MESH_REPS:-5} \
	RDMACM_BUILD_DIR=$build "$repo/tests/vm/run-guest.sh" \
	"$repo/tests/bench/mesh-guest.sh" >"$raw" 2>&1
grep '^summary' "$raw" || true
python3 "$repo/tests/bench/mesh_profile.py" sum "$raw"
