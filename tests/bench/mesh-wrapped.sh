#!/bin/bash
# One mesh of each scheme (p2pmesh, p2pmesh -L) with every rank under a
# tool, for mesh-callgrind.sh and mesh-strace.sh: WRAPPER is a script of
# tests/bench that the guest runs each rank under, writing its files as
# PREFIX.<pid> into RDMACM_VM_OUT, which is OUTDIR (its old PREFIX.* files
# removed first; the bench's own output goes to OUTDIR/bench.log).
#
#   tests/bench/mesh-wrapped.sh WRAPPER PREFIX OUTDIR
#
# The guest is instruction-counted (RDMACM_VM_ICOUNT=0) unless the caller
# set RDMACM_VM_ICOUNT; BUILD_DIR, MESH_NS and MESH_ARGS as for
# mesh-bench.sh.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$repo/build}
wrapper=$1 prefix=$2 out=$3
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/$prefix".*
# The libtool wrapper would put the shell under the tool too: the binary
# itself, with this build's library first in its path.
RDMACM_VM_ICOUNT=${RDMACM_VM_ICOUNT-0} RDMACM_VM_OUT=$out \
	LD_LIBRARY_PATH=$build/src/.libs \
	MESH_BIN=$build/examples/.libs/p2pmesh MESH_REPS=1 \
	MESH_WRAP_RANK=all MESH_WRAP0="$repo/tests/bench/$wrapper" \
	BUILD_DIR=$build "$repo/tests/bench/mesh-bench.sh" >"$out/bench.log"
