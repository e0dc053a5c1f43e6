#!/bin/bash
# The other launcher: runs a test script directly on a machine that already
# has an RDMA device (hardware, or an rxe/siw device someone configured), with
# the same contract as run-guest.sh, so the tests need not know which one
# started them:
#
#   tests/vm/run-native.sh SCRIPT [ARGS...]
#
# The script's output goes to stdout; the exit status is the script's, or 124
# when it ran out of time, or 125 when the machine is not ready.
#
# You provide what run-guest.sh would have set up:
#   RDMA_TEST_ADDR1, RDMA_TEST_ADDR2      two IPv4 addresses of the RDMA
#                                         netdev(s) (required; may be equal)
#   RDMA_TEST_ADDR6_1, RDMA_TEST_ADDR6_2  the same for IPv6 (optional; tests
#                                         skip IPv6 when unset)
#   RDMA_TEST_DEV, RDMA_TEST_NETDEV       the RDMA device and its netdev
#                                         (optional)
# and optionally:
#   RDMACM_VM_TIMEOUT   seconds for the whole run (default 600)
#   RDMACM_VM_OUT       results directory (default: a temporary one, removed
#                       after a passing run unless RDMACM_VM_KEEP=1)
set -eu

VM_PROG=run-native
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"

if [ $# -lt 1 ]; then
	sed -n '2,/^set -eu/{/^#/s/^# \{0,1\}//p}' "$0" >&2
	exit 2
fi
[ -f "$1" ] || vm_die "no such script: $1"

[ -e /dev/infiniband/rdma_cm ] ||
	vm_die "no /dev/infiniband/rdma_cm: this kernel has no RDMA CM (use tests/vm/run-guest.sh)"
[ -n "${RDMA_TEST_ADDR1:-}" ] && [ -n "${RDMA_TEST_ADDR2:-}" ] ||
	vm_die "set RDMA_TEST_ADDR1 and RDMA_TEST_ADDR2 to addresses of your RDMA netdev"
if [ -z "${RDMA_TEST_ADDR6_1:-}" ] || [ -z "${RDMA_TEST_ADDR6_2:-}" ]; then
	vm_say "RDMA_TEST_ADDR6_1/RDMA_TEST_ADDR6_2 not set: IPv6 tests will skip"
fi

# Registering memory pins it; most distributions' default locked-memory
# limit is too small for RDMA tests. Raising it needs privilege (or a
# limits.conf entry); say so rather than fail obscurely later.
ulimit -l unlimited 2>/dev/null ||
	vm_say "cannot lift the locked-memory limit ($(ulimit -l) KiB); memory registration may fail"

# Same results-directory contract as in the guest.
if [ -n "${RDMACM_VM_OUT:-}" ]; then
	mkdir -p "$RDMACM_VM_OUT"
	VM_OUT="$(cd "$RDMACM_VM_OUT" && pwd -P)"
	VM_OUT_IS_TEMP=0
else
	VM_OUT="$(mktemp -d "${TMPDIR:-/tmp}/rdmacm-native.XXXXXX")"
	VM_OUT_IS_TEMP=1
fi
export RDMACM_VM_OUT="$VM_OUT"

# timeout(1) runs the script in its own process group and signals the whole
# group on expiry, so servers a test left in the background go too.
status=0
if [ -x "$1" ]; then
	timeout -k 5 "$VM_TIMEOUT" "$@" </dev/null || status=$?
else
	timeout -k 5 "$VM_TIMEOUT" bash "$@" </dev/null || status=$?
fi
if [ "$status" = 124 ]; then
	vm_say "TIMEOUT: script still running after ${VM_TIMEOUT}s; killed"
else
	vm_say "script exited with status $status after $(vm_elapsed)s"
fi
vm_cleanup_out "$status"
exit "$status"
