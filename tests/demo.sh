#!/bin/bash
# The demo: set up and build (tests/setup.sh), then run the example programs
# against each other over Soft-RoCE inside the test VM, with readable output.
# RDMACM_VM_TRANSPORT=siw runs them over Soft-iWARP instead (the first run
# builds siw.ko: tests/vm/build-siw.sh); RDMACM_TEST_NATIVE=1 runs them on
# this machine's own RDMA device.
set -eu

repo=$(cd "$(dirname "$0")/.." && pwd)
export BUILD_DIR=${BUILD_DIR:-$repo/build}
"$repo/tests/setup.sh"
export RDMACM_BUILD_DIR=$BUILD_DIR
if [ "${RDMACM_TEST_NATIVE:-0}" = 1 ]; then
	exec "$repo/tests/vm/run-native.sh" "$repo/tests/demo/guest-demo.sh"
fi
exec "$repo/tests/vm/run-guest.sh" "$repo/tests/demo/guest-demo.sh"
