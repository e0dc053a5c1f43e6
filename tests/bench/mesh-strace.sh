#!/bin/bash
# The mesh's system calls, counted: every rank of one p2p mesh and one
# hand-rolled mesh (p2pmesh -L) under strace in the guest, then per scheme
# the calls of the measured span summed over the ranks (between the two
# getrusage calls around p2pmesh's form_mesh), by call and the file behind
# its descriptor, and the rdma_cm commands by name
# (tests/bench/mesh_strace.py).  What callgrind is for user space, this is
# for the kernel's side: which calls one scheme makes more of.  strace
# slows the ranks down, so the counts can move with the interleaving (a
# few GET_EVENT or epoll_wait calls); the commands that build connections
# do not.
#
#   tests/bench/mesh-strace.sh [OUTDIR]     # MESH_NS=8 by default
#   MESH_ARGS=-D tests/bench/mesh-strace.sh # another p2pmesh loop
#
# The guest is instruction-counted (RDMACM_VM_ICOUNT=0) unless the caller
# set RDMACM_VM_ICOUNT; BUILD_DIR as for the suites.  Needs strace.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$(mktemp -d /tmp/mesh-st.XXXXXX)}
"$here/mesh-wrapped.sh" st-window.sh st "$out"
python3 "$here/mesh_strace.py" "$out"
