#!/bin/bash
# Runs one script inside a Soft-RoCE guest and exits with its status.
#
# The guest is Debian's kernel under qemu (TCG) with the host's root mounted
# read-only and chrooted into, so the script, the build tree and the host's
# tools are all at the same paths as here. Before the script starts, eth0 has
# 192.0.2.1/24, 192.0.2.2/24, 2001:db8::1/64 and 2001:db8::2/64, rxe0 sits on
# it, and the locked-memory limit is lifted. The NIC has no host backend:
# nothing leaves the guest.
#
# Usage: tests/vm/run-guest.sh SCRIPT [ARGS...]
#   To run several tests in one boot (a boot costs a few seconds of TCG):
#   tests/vm/run-guest.sh tests/vm/run-scripts.sh TEST1 TEST2 ...
#
# The script's stdout and stderr are streamed to this script's stdout.
# Exit status: the script's, or 124 when the guest ran out of time, or 125
# when the guest failed before it could report one.
#
# Environment:
#   RDMACM_VM_TIMEOUT   seconds for the whole guest run (default 600)
#   RDMACM_VM_OUT       results directory, writable from the guest at the
#                       same path (default: a temporary one, removed after a
#                       passing run)
#   RDMACM_VM_KEEP=1    keep the temporary results directory anyway
#   RDMACM_VM_SMP, RDMACM_VM_MEM   guest CPUs (default 2) and MiB (1024)
#   RDMACM_VM_PASS_ENV  more variable names to hand to the script; PATH,
#                       LD_LIBRARY_PATH, LD_PRELOAD, LD_BIND_NOW, RDMACM_*,
#                       RDMA_*, RDMAV_*, IBV_*, TEST_*, *SAN_OPTIONS,
#                       VALGRIND_OPTS, CI and VERBOSE are always handed over
#   RDMACM_VM_CACHE, RDMACM_VM_KERNEL_SUITE   see prepare.sh
# In the guest the script also sees RDMA_TEST_ADDR1/ADDR2 (192.0.2.1/.2),
# RDMA_TEST_ADDR6_1/ADDR6_2 (2001:db8::1/::2), RDMA_TEST_DEV=rxe0,
# RDMA_TEST_NETDEV=eth0, RDMACM_VM_OUT, RDMACM_VM_GUEST=1 and
# RDMACM_VM_MODULES (the guest kernel's module tree, for modprobe -d).
set -eu

VM_PROG=run-guest
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"

if [ $# -lt 1 ]; then
	sed -n '2,/^set -eu/{/^#/s/^# \{0,1\}//p}' "$0" >&2
	exit 2
fi
[ -f "$1" ] || vm_die "no such script: $1"
script="$(realpath "$1")"
shift
cwd="$(pwd -P)"
vm_check_guest_path "$cwd" "$script"

vm_ensure_prepared
vm_make_out
vm_write_env 1 "192.0.2.1/24 192.0.2.2/24 2001:db8::1/64 2001:db8::2/64" \
	"$cwd" "$script" "$@"

vm_say "guest starting (timeout ${VM_TIMEOUT}s, results in $VM_OUT)"
vm_trap_signals
# The NIC sits on a hub; rxe's unicast traffic never reaches it (rxe loops
# it back inside the guest), but multicast, IGMP and neighbour discovery
# frames do.  A hub with no other member never lets the NIC's transmissions
# complete: qemu holds them, the guest's transmit ring never drains, and rxe,
# which lets a QP have at most 64 datagrams in the network stack, stops
# sending after the 65th multicast datagram (and holds the QP for 50 s
# when it is destroyed; BUGS.md rxe-mcast-hub-stall).  So the hub's other
# member is a sink: a UDP socket that sends every frame to the discard port of this
# machine's loopback address, where nothing listens.  No frame leaves this
# machine, and nothing comes back.
VM_NET_EXTRA=(
	-netdev "socket,id=sink,udp=127.0.0.1:9,localaddr=127.0.0.1:0"
	-netdev "hubport,id=n1,hubid=0,netdev=sink"
)
vm_start_guest 1 "hubport,id=n0,hubid=0" 52:54:00:00:02:01
vm_stream_guest 1
vm_wait_guest 1
trap - EXIT

case "$VM_STATUS" in
124 | 125) ;;
*) vm_say "guest script exited with status $VM_STATUS after $(vm_elapsed)s" ;;
esac
vm_cleanup_out "$VM_STATUS"
exit "$VM_STATUS"
