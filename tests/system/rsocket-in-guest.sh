#!/bin/bash
# rsocket system tests, run inside the Soft-RoCE guest:
#   tests/vm/run-guest.sh tests/system/rsocket-in-guest.sh
# (or natively where an RDMA device carries the test addresses).
#
# 1. tests/system/rsocket_sys_test (ours on both sides): stream and
#    datagram, blocking and non-blocking, rpoll, iomap, data verified.
# 2. Debian's rstream and riostream (rdmacm-utils) with OUR library on both
#    sides (loaded through LD_LIBRARY_PATH, checked with ldd).
# 3. Interop: one side on our library, the other on Debian's, both
#    directions, stream (-T s... default blocking and async) and iomap.
#
# Prints "PASS name" / "FAIL name" per test and "N passed, N failed".
# Environment: RDMACM_BUILD_DIR (the build tree), RDMA_TEST_ADDR1/2,
# RDMACM_SYS_ONLY (regex filter on test names), VERBOSE=1.
set -u

BUILD="${RDMACM_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
A1="${RDMA_TEST_ADDR1:-192.0.2.1}"
A2="${RDMA_TEST_ADDR2:-$A1}"
ONLY="${RDMACM_SYS_ONLY:-}"
T=60
ours="$BUILD/src/.libs"
passed=0
failed=0
log="$(mktemp -d "${TMPDIR:-/tmp}/rs-sys.XXXXXX")"
trap 'rm -rf "$log"' EXIT
ulimit -l unlimited 2>/dev/null

pass() {
	echo "PASS $1"
	passed=$((passed + 1))
}
fail() {
	echo "FAIL $1${2:+: $2}"
	failed=$((failed + 1))
}
wanted() { [ -z "$ONLY" ] || [[ "$1" =~ $ONLY ]]; }

# Which librdmacm a program loads with a given LD_LIBRARY_PATH.
whichlib() {
	LD_LIBRARY_PATH="$1" ldd "$2" | awk '/librdmacm.so.1/ { print $3 }'
}

if [ ! -e "$ours/librdmacm.so.1" ]; then
	fail setup "no library in $ours"
	echo "$passed passed, $failed failed"
	exit 1
fi
ours_real=$(realpath "$ours/librdmacm.so.1")
for prog in /usr/bin/rstream /usr/bin/riostream; do
	lib=$(whichlib "$ours" "$prog")
	if [ "$(realpath "$lib")" != "$ours_real" ]; then
		fail "whichlib/${prog##*/}" "loads $lib, not $ours_real"
	fi
	lib=$(whichlib "" "$prog")
	if [ "$(realpath "$lib")" = "$ours_real" ]; then
		fail "whichlib/${prog##*/}" "the reference run would load ours"
	fi
done

# run_pair NAME SERVER_LIBPATH CLIENT_LIBPATH PROG ARGS...
# Runs PROG as server (with ARGS) and as client (-s A1 -b A2 ARGS).
port=7470
run_pair() {
	local name=$1 slib=$2 clib=$3 prog=$4
	shift 4
	wanted "$name" || return 0
	port=$((port + 1))
	LD_LIBRARY_PATH="$slib" timeout $T "$prog" -p $port -b "$A1" "$@" \
		>"$log/s.out" 2>&1 &
	local spid=$!
	sleep 1
	LD_LIBRARY_PATH="$clib" timeout $T "$prog" -p $port -s "$A1" \
		-b "$A2" "$@" >"$log/c.out" 2>&1
	local crc=$?
	wait $spid
	local src=$?
	if [ $crc -eq 0 ] && [ $src -eq 0 ]; then
		pass "$name"
		[ -n "${VERBOSE:-}" ] && sed 's/^/    /' "$log/c.out"
	else
		fail "$name" "server rc=$src client rc=$crc"
		echo "    --- server"
		sed 's/^/    /' "$log/s.out" | tail -15
		echo "    --- client"
		sed 's/^/    /' "$log/c.out" | tail -15
	fi
}

# Small, quick transfers: every size class, data verified (-T v).
SMALL=(-S 4096 -C 200)
for mode in b n a; do
	run_pair "rstream/ours-ours/$mode" "$ours" "$ours" /usr/bin/rstream \
		"${SMALL[@]}" -T "$mode" -T v
	run_pair "rstream/ours-debian/$mode" "$ours" "" /usr/bin/rstream \
		"${SMALL[@]}" -T "$mode" -T v
	run_pair "rstream/debian-ours/$mode" "" "$ours" /usr/bin/rstream \
		"${SMALL[@]}" -T "$mode" -T v
done
run_pair "rstream/ours-ours/all-sizes" "$ours" "$ours" /usr/bin/rstream \
	-S all -C 10 -T v
run_pair "riostream/ours-ours" "$ours" "$ours" /usr/bin/riostream \
	-S 4096 -C 200 -T v
run_pair "riostream/ours-debian" "$ours" "" /usr/bin/riostream \
	-S 4096 -C 200 -T v
run_pair "riostream/debian-ours" "" "$ours" /usr/bin/riostream \
	-S 4096 -C 200 -T v
run_pair "riostream/ours-ours/all-sizes" "$ours" "$ours" /usr/bin/riostream \
	-S all -C 10 -T v

# Our own scenario program, when built.
sys="$BUILD/tests/system/rsocket_sys_test"
if [ -x "$sys" ]; then
	for t in $("$sys" -l); do
		wanted "sys/$t" || continue
		if LD_LIBRARY_PATH="$ours" timeout $T "$sys" -a "$A1" -b "$A2" \
			"$t" >"$log/t.out" 2>&1; then
			pass "sys/$t"
		else
			fail "sys/$t"
			sed 's/^/    /' "$log/t.out" | tail -20
		fi
	done
fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
