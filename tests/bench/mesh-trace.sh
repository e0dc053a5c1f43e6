#!/bin/bash
# Where a full mesh's time goes, step by step (README, "Peer-to-peer full
# mesh"): N p2pmesh ranks in one guest with -T, both schemes taking
# turns, MESH_REPS times; tests/bench/mesh_trace.py then prints, per
# scheme, the medians of each step of the lower ends (resolve_addr call to
# ADDR_RESOLVED, split by whether both ends share an address; resolve_route
# call to ROUTE_RESOLVED) and of a pair's formation (the lower end's
# rdma_connect to ESTABLISHED at each end).  With the guest kernel's
# rdma_cma tracepoints (traced on the same clock) each ADDR_RESOLVED is
# split into the kernel's part and its delivery to the application.  Not
# a test.
#
#   tests/bench/mesh-trace.sh            # MESH_NS="8" MESH_REPS=5
#
# Settings as for mesh-bench.sh (BUILD_DIR, MESH_BIN, MESH_NS, MESH_REPS,
# MESH_ARGS); MESH_TRACE_OUT keeps the raw trace in that file.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$repo/build}
raw=${MESH_TRACE_OUT:-$(mktemp)}
RDMACM_VM_TIMEOUT=${RDMACM_VM_TIMEOUT:-1200} \
	RDMACM_VM_PASS_ENV="MESH_BIN MESH_NS MESH_REPS MESH_ARGS MESH_TRACE" \
	MESH_BIN=${MESH_BIN:-$build/examples/p2pmesh} MESH_TRACE=1 \
	MESH_NS=${MESH_NS:-8} MESH_REPS=${MESH_REPS:-5} \
	RDMACM_BUILD_DIR=$build "$repo/tests/vm/run-guest.sh" \
	"$repo/tests/bench/mesh-guest.sh" >"$raw" 2>&1
grep '^summary' "$raw" || true
python3 "$repo/tests/bench/mesh_trace.py" "$raw"
