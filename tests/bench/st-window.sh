#!/bin/bash
# In the guest (tests/bench/mesh-strace.sh): run a p2pmesh rank under
# strace, every thread, with the files behind the descriptors, into the
# results directory.  mesh_strace.py keeps only the measured span.
exec strace -f -y -o "$RDMACM_VM_OUT/st.$$" -- "$@"
