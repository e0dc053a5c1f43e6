#!/bin/bash
# The full-mesh measurement alone (README, "Peer-to-peer full mesh"):
# peer2peer_mode against connect-higher/accept-lower, same guest run,
# alternating.  Not a test: nothing passes or fails on a number.
#
#   tests/bench/mesh-bench.sh          # MESH_NS="8" MESH_REPS=7
#   MESH_NS="8 16" MESH_COUNT=1 tests/bench/mesh-bench.sh
#
# MESH_COUNT=1 builds tests/bench/ucma_count.c as an LD_PRELOAD shim and
# adds one untimed counting run of each scheme (commands and events per
# rank).  MESH_BIN picks another build's p2pmesh (default this one's);
# MESH_BIN_B adds a second build to the same guest run (mesh-guest.sh).
# The ranks run without address-space randomization (mesh-guest.sh says
# why); MESH_ASLR=1 keeps it, as before 2026-11-28.
# Other settings: see mesh-guest.sh; BUILD_DIR as for the suites.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$repo/build}
so=
if [ "${MESH_COUNT:-0}" = 1 ]; then
	mkdir -p "$build/bench"
	so=$build/bench/ucma_count.so
	gcc -O2 -g -Wall -Wextra -Werror -shared -fPIC \
		"$repo/tests/bench/ucma_count.c" -ldl -o "$so"
fi
RDMACM_VM_TIMEOUT=${RDMACM_VM_TIMEOUT:-3000} \
	RDMACM_VM_PASS_ENV="MESH_BIN MESH_BIN_B MESH_NS MESH_REPS MESH_COUNT_SO MESH_ARGS MESH_WRAP0 MESH_ASLR" \
	MESH_BIN=${MESH_BIN:-$build/examples/p2pmesh} MESH_COUNT_SO=$so \
	MESH_NS=${MESH_NS:-8} MESH_REPS=${MESH_REPS:-7} \
	RDMACM_BUILD_DIR=$build "$repo/tests/vm/run-guest.sh" \
	"$repo/tests/bench/mesh-guest.sh"
