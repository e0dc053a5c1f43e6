#!/bin/bash
# mckey2 (multicast through rdma_set_option / rdma_sendto) across two hosts:
# guest 1 receives, guest 2 sends, over IPv4 and then IPv6 (SKIPped when the
# kernel refuses IPv6 groups on RoCE v2, errno 524).  The same script runs
# in both guests and picks its role from RDMACM_VM_GUEST.
#
# Run:  RDMACM_BUILD_DIR=$PWD/build tests/vm/run-two-guests.sh \
#           tests/system/mckey2-two-guests.sh -- tests/system/mckey2-two-guests.sh
set -u -o pipefail

out="${RDMACM_VM_OUT:?}"
build="${RDMACM_BUILD_DIR:?set RDMACM_BUILD_DIR to the build tree}"
libdir="$(realpath "$build/src/.libs")"
export LD_LIBRARY_PATH="$libdir"
count=20
# shellcheck source=verdict.sh
. "$(dirname "$0")/verdict.sh"
built mckey2-two-guests/setup "$build/examples/mckey2" || finish
prog=$(real_prog "$build/examples/mckey2")
lib="$(ldd "$prog" | sed -n 's/^[[:space:]]*librdmacm\.so\.1 => \([^ ]*\).*/\1/p')"
if [ "$(dirname "$(realpath "$lib")")" != "$libdir" ]; then
	fail mckey2-two-guests/setup "mckey2 loads '$lib', not $libdir"
	finish
fi

# Waits (up to 60 s) for the other guest to create file $1 in the shared
# results directory.
wait_for() {
	local i
	for ((i = 0; i < 600; i++)); do
		[ -e "$out/$1" ] && return 0
		sleep 0.1
	done
	echo "gave up waiting for $1"
	return 1
}

for f in "ipv4 239.255.0.77 $RDMA_TEST_ADDR1 $RDMA_TEST_ADDR2" \
	"ipv6 ff0e::db8:77 ${RDMA_TEST_ADDR6_1:-} ${RDMA_TEST_ADDR6_2:-}"; do
	read -r fam grp a1 a2 <<<"$f"
	[ -n "$a2" ] || {
		skip "mckey2-two-guests/$fam" "no $fam test addresses"
		continue
	}
	if [ "$RDMACM_VM_GUEST" = 1 ]; then
		log="$out/recv-$fam.log"
		server_start "$log" 120 "$prog" -m "$grp" -b "$a1" -C "$count" -t 60
		rc=0
		if wait_output "$log" joined 30 "$server_pid"; then
			touch "$out/joined-$fam"
		else
			touch "$out/nojoin-$fam"
		fi
		server_wait || rc=$?
		show "$log"
		if [ "$rc" = 0 ]; then
			pass "mckey2-two-guests/$fam" "received $count datagrams from the other host"
		elif grep -q "refuses this group" "$log"; then
			skip "mckey2-two-guests/$fam" "the kernel refuses IPv6 multicast on RoCE v2 (errno 524)"
		else
			fail "mckey2-two-guests/$fam" "receiver exit $rc"
		fi
	else
		while [ ! -e "$out/joined-$fam" ] && [ ! -e "$out/nojoin-$fam" ]; do
			wait_for "joined-$fam" >/dev/null 2>&1 || break
		done
		if [ ! -e "$out/joined-$fam" ]; then
			echo "sender: the receiver did not join over $fam; not sending"
			continue
		fi
		# One sender per family (its teardown took ~50 s while the
		# NIC held rxe's frames, BUGS.md rxe-mcast-hub-stall).
		if timeout 150 "$prog" -m "$grp" -b "$a2" -C "$count" -d 5 -s 2>&1 |
			show; then
			echo "sender: sent $count datagrams over $fam"
		else
			fail "mckey2-two-guests/$fam" "sender"
		fi
	fi
done
finish
