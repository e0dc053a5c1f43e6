#!/bin/bash
# Smoke test of the two-guest set-up with Debian's rping (and Debian's
# librdmacm): guest 1 serves, guest 2 connects across the link, over IPv4 and
# then IPv6. The same script runs in both guests and picks its role from
# RDMACM_VM_GUEST.
#
# Run:  tests/vm/run-two-guests.sh tests/vm/smoke-two-guests-rping.sh -- \
#           tests/vm/smoke-two-guests-rping.sh
set -u
# shellcheck source=../system/verdict.sh
. "$(dirname "$0")/../system/verdict.sh"

unset LD_LIBRARY_PATH LD_PRELOAD
out="${RDMACM_VM_OUT:?}"
log=$(mktemp "${TMPDIR:-/tmp}/smoke.XXXXXX")
trap 'rm -f "$log"' EXIT

# Waits (up to 30 s) for the other guest to create file $1 in the shared
# results directory.
wait_for() {
	local i
	for ((i = 0; i < 300; i++)); do
		[ -e "$out/$1" ] && return 0
		sleep 0.1
	done
	echo "gave up waiting for $1"
	return 1
}

for addr in "$RDMA_TEST_ADDR1" "$RDMA_TEST_ADDR6_1"; do
	if [ "$RDMACM_VM_GUEST" = 1 ]; then
		# rping says nothing when it listens: its port (7174) shows
		# it.  The other guest's client starts once it is bound.
		server_start "$log" 60 rping -s -a "$addr" -C 3
		wait_bound 7174 "$server_pid"
		touch "$out/listening-$addr"
		rc=0
		server_wait || rc=$?
		if [ "$rc" = 0 ]; then
			pass "smoke/rping-server/$addr"
		else
			show "$log"
			fail "smoke/rping-server/$addr" "exit status $rc"
		fi
	else
		wait_for "listening-$addr"
		rc=0
		timeout 30 rping -c -a "$addr" -C 3 >"$log" 2>&1 || rc=$?
		if [ "$rc" = 0 ]; then
			pass "smoke/rping-client/$addr"
		else
			show "$log"
			fail "smoke/rping-client/$addr" "exit status $rc"
		fi
	fi
done
finish
