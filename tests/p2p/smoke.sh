#!/bin/bash
B=${RDMACM_BUILD_DIR:-$PWD/build}
A1=${RDMA_TEST_ADDR1:-192.0.2.1}; A2=${RDMA_TEST_ADDR2:-192.0.2.2}
"$B/examples/p2pmesh" -i 3 0 $A1 $A2 & p0=$!
"$B/examples/p2pmesh" -i 3 1 $A1 $A2 & p1=$!
wait $p0; r0=$?; wait $p1; r1=$?
echo "rc $r0 $r1"
