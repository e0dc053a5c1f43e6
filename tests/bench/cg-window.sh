#!/bin/bash
# In the guest (tests/bench/mesh-callgrind.sh): run a p2pmesh rank under
# callgrind, counting only its form_mesh span, the output in the results
# directory.  setarch comes first on the command line: children traced.
exec valgrind -q --tool=callgrind --trace-children=yes \
	--toggle-collect=form_mesh \
	--callgrind-out-file="$RDMACM_VM_OUT/cg.%p" -- "$@"
