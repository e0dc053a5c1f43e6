#!/bin/bash
# Smoke test of the two-guest set-up with Debian's rping (and Debian's
# librdmacm): guest 1 serves, guest 2 connects across the link, over IPv4 and
# then IPv6. The same script runs in both guests and picks its role from
# RDMACM_VM_GUEST.
#
# Run:  tests/vm/run-two-guests.sh tests/vm/smoke-two-guests-rping.sh -- \
#           tests/vm/smoke-two-guests-rping.sh
set -eu

unset LD_LIBRARY_PATH LD_PRELOAD
out="${RDMACM_VM_OUT:?}"

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
		timeout 60 rping -s -a "$addr" -C 3 &
		server=$!
		# rping gives no sign that it listens; half a second is plenty
		# for the bind and listen to happen, and the client retries too.
		sleep 0.5
		touch "$out/listening-$addr"
		wait "$server"
		echo "ok: served rping over $addr"
	else
		wait_for "listening-$addr"
		ok=0
		for _ in 1 2 3 4 5; do
			if timeout 30 rping -c -a "$addr" -C 3; then
				ok=1
				break
			fi
			sleep 1
		done
		[ "$ok" = 1 ] || { echo "FAIL: rping client over $addr"; exit 1; }
		echo "ok: rping from $RDMA_TEST_ADDR2 side to $addr"
	fi
done
