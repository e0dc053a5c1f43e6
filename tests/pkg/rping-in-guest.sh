#!/bin/bash
# Run in the VM guest by check-debs.sh: rping from Debian's rdmacm-utils
# (/usr/bin/rping) and the rping our rdmacm-utils package installed, each
# as server and client over rxe, with data verification, both loading the
# librdmacm.so.1 that our librdmacm1 package put in ROOT (checked with ldd).
#
# Usage: rping-in-guest.sh ROOT LIBDIR    (LIBDIR relative to ROOT)
# Prints PASS:/FAIL: lines; exits non-zero on any failure.
set -u
root=$1
libdir=$root/$2
addr=${RDMA_TEST_ADDR1:-192.0.2.1}
failed=0
port=7900
# wait_bound: the system tests' wait for a listener (rdma res, ss)
# shellcheck source=../system/verdict.sh
. "$(dirname "$0")/../system/verdict.sh"

say_fail() {
	echo "FAIL: pkg/$1: $2"
	failed=1
}

# loads PROG: the librdmacm.so.1 PROG resolves with our packaged library first
loads() {
	LD_LIBRARY_PATH=$libdir ldd "$1" | awk '/librdmacm\.so\.1 /{ print $3 }'
}

run_pair() {
	local name=$1 prog=$2 lib spid rc=0
	lib=$(loads "$prog")
	if [ "$(readlink -f "$lib")" != "$(readlink -f "$libdir/librdmacm.so.1")" ]; then
		say_fail "$name" "$prog loads '$lib', not the packaged library"
		return
	fi
	port=$((port + 1))
	LD_LIBRARY_PATH=$libdir timeout 60 "$prog" -s -a "$addr" -p "$port" -C 10 -V \
		>"$RDMACM_VM_OUT/$name.server" 2>&1 &
	spid=$!
	# the client starts once the server listens, however slow the guest
	if ! wait_bound "$port" "$spid"; then
		sed 's/^/    /' "$RDMACM_VM_OUT/$name.server"
		say_fail "$name" "the server never listened on port $port"
		kill "$spid" 2>/dev/null
		return
	fi
	LD_LIBRARY_PATH=$libdir timeout 60 "$prog" -c -a "$addr" -p "$port" -C 10 -V -v \
		>"$RDMACM_VM_OUT/$name.client" 2>&1 || rc=$?
	wait "$spid" || rc=$((rc ? rc : 1))
	if [ "$rc" = 0 ] && grep -q "ping data" "$RDMACM_VM_OUT/$name.client"; then
		echo "PASS: pkg/$name ($prog on $libdir/librdmacm.so.1)"
	else
		sed 's/^/    /' "$RDMACM_VM_OUT/$name.server" "$RDMACM_VM_OUT/$name.client"
		say_fail "$name" "rping exit $rc"
	fi
}

run_pair vm-debian-rping /usr/bin/rping
run_pair vm-packaged-rping "$root/usr/bin/rping"
exit "$failed"
