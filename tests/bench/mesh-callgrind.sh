#!/bin/bash
# The mesh's user-space work, instruction by instruction: every rank of
# one p2p mesh and one hand-rolled mesh (p2pmesh -L) under callgrind in
# the guest, counting only the measured span of p2pmesh (form_mesh:
# connects until data flows both ways), then per scheme the instructions
# summed over the ranks, their ratio, and the functions that differ most
# (tests/bench/mesh_callgrind.py).  Exact and the same from run to run,
# where the mesh's times move by a few percent: a change to the library's
# user-space work shows here first.  All ranks, because a rank's share of
# the connects it sends and the requests it takes differs between the two
# schemes; the sum over the mesh does not.  Kernel work is not counted.
#
#   tests/bench/mesh-callgrind.sh [OUTDIR]     # MESH_NS=8 by default
#   MESH_ARGS=-D tests/bench/mesh-callgrind.sh # another p2pmesh loop
#
# The guest is instruction-counted (RDMACM_VM_ICOUNT=0) unless the caller
# set RDMACM_VM_ICOUNT; BUILD_DIR as for the suites.  Needs valgrind.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$(mktemp -d /tmp/mesh-cg.XXXXXX)}
"$here/mesh-wrapped.sh" cg-window.sh cg "$out"
python3 "$here/mesh_callgrind.py" "$out"
