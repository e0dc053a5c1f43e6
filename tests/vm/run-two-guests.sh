#!/bin/bash
# Runs two guests joined by one Ethernet link, each running its own script,
# for tests that need two hosts (two separate kernels and rxe devices):
#
#   tests/vm/run-two-guests.sh SCRIPT1 [ARGS1...] -- SCRIPT2 [ARGS2...]
#
# Guest 1 has 192.0.2.1/24 and 2001:db8::1/64, guest 2 192.0.2.2/24 and
# 2001:db8::2/64, each with rxe0 on eth0. In both, RDMA_TEST_ADDR1 and
# RDMA_TEST_ADDR6_1 name guest 1's addresses and RDMA_TEST_ADDR2 and
# RDMA_TEST_ADDR6_2 guest 2's; RDMACM_VM_GUEST says which guest a script is
# in. The link is qemu's socket netdev over 127.0.0.1, so nothing leaves this
# machine. Both guests share one results directory ($RDMACM_VM_OUT, the same
# path in both and on the host), which scripts may use to wait for each
# other (e.g. the server touches a file once it listens).
#
# Output of both is streamed, each line prefixed with [1] or [2]. Exit
# status: 124 if either guest timed out, else 125 if either failed to report
# a status, else guest 1's status if non-zero, else guest 2's.
# Environment: as for run-guest.sh; RDMACM_VM_SMP defaults to 1 here (two
# guests on a two-core machine).
set -eu

VM_PROG=run-two-guests
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"
VM_DEFAULT_SMP=1

usage() {
	sed -n '2,/^set -eu/{/^#/s/^# \{0,1\}//p}' "$0" >&2
	exit 2
}

# Split the command line at "--".
cmd1=() cmd2=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	cmd1+=("$1")
	shift
done
[ $# -gt 0 ] || usage
shift
cmd2=("$@")
[ "${#cmd1[@]}" -gt 0 ] && [ "${#cmd2[@]}" -gt 0 ] || usage
for c in "${cmd1[0]}" "${cmd2[0]}"; do
	[ -f "$c" ] || vm_die "no such script: $c"
done
cmd1[0]="$(realpath "${cmd1[0]}")"
cmd2[0]="$(realpath "${cmd2[0]}")"
cwd="$(pwd -P)"
vm_check_guest_path "$cwd" "${cmd1[0]}" "${cmd2[0]}"

vm_ensure_prepared
vm_make_out
vm_write_env 1 "192.0.2.1/24 2001:db8::1/64" "$cwd" "${cmd1[@]}"
vm_write_env 2 "192.0.2.2/24 2001:db8::2/64" "$cwd" "${cmd2[@]}"

# A free port on the loopback for the link: guest 1's qemu listens on it,
# guest 2's connects.  Free means no socket of any state has it (a
# connection's local port blocks the bind as a listener does), and it is
# below the kernel's ephemeral range, so that no connection made meanwhile
# takes it.  (A program could still bind it between this check and qemu's
# bind; qemu then fails to start and we report that.)
eph_lo=32768
read -r eph_lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null
((eph_lo > 11000)) || eph_lo=32768
port_free() { [ -z "$(ss -Htan "sport = :$1" 2>/dev/null)" ]; }
port=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
	p=$((10000 + RANDOM % (eph_lo - 10000)))
	if port_free "$p"; then
		port="$p"
		break
	fi
done
[ -n "$port" ] || vm_die "found no free loopback port"

vm_say "guests starting (timeout ${VM_TIMEOUT}s, link on 127.0.0.1:$port, results in $VM_OUT)"
vm_trap_signals
vm_start_guest 1 "socket,id=n0,listen=127.0.0.1:$port" 52:54:00:00:02:01
# qemu connects once, at start-up, so guest 2 must wait for the listener.
for ((i = 0; ; i++)); do
	port_free "$port" || break
	kill -0 "${VM_PIDS[1]}" 2>/dev/null ||
		vm_die "guest 1's qemu exited at once: $(tail -n 3 "$VM_OUT/qemu-1.log")"
	((i < 100)) || vm_die "guest 1's qemu never listened on 127.0.0.1:$port"
	sleep 0.1
done
vm_start_guest 2 "socket,id=n0,connect=127.0.0.1:$port" 52:54:00:00:02:02
vm_stream_guest 1 "[1] "
vm_stream_guest 2 "[2] "

vm_wait_guest 1
status1="$VM_STATUS"
vm_wait_guest 2
status2="$VM_STATUS"
trap - EXIT

vm_say "guest 1 exited with status $status1, guest 2 with $status2, after $(vm_elapsed)s"
if [ "$status1" = 124 ] || [ "$status2" = 124 ]; then
	status=124
elif [ "$status1" = 125 ] || [ "$status2" = 125 ]; then
	status=125
elif [ "$status1" != 0 ]; then
	status="$status1"
else
	status="$status2"
fi
vm_cleanup_out "$status"
exit "$status"
