#!/bin/bash
# A multicast sender that polls each completion and must finish, in the
# Soft-RoCE guest or natively:
#   tests/vm/run-guest.sh tests/system/mc-sender-in-guest.sh
#   tests/vm/run-two-guests.sh tests/system/mc-sender-in-guest.sh two -- \
#                              tests/system/mc-sender-in-guest.sh two
#
# Pairs of mc_sender_test (see its header): a receiver joins a group and
# prints READY; then a sender joins, sends 64-byte datagrams every 20 ms,
# each completion polled (at most 5 s) before the next, for 4 s after the
# 50th, and returns from main.  The receiver must get datagrams 0..49
# intact and nothing once it has left.  Cases:
#   option     IP_ADD_MEMBERSHIP + rdma_sendto, on our library
#   join       rdma_join_multicast + the sender's own AH, on our library
#   debian     the join case on Debian's librdmacm (the reference: it proves
#              the test right, and tells the library's faults from rxe's)
# With "two" the receiver runs in guest 1 and the sender in guest 2, synced
# through files in the shared results directory.  iWARP has no multicast:
# SKIPped there.
#
# Prints "PASS mc-sender/CASE" / "FAIL ..." / "SKIP ..." and a last line
# "N passed, N failed"; exits non-zero if anything failed.
#
# Environment: RDMACM_BUILD_DIR, RDMACM_REF_LIBDIR (Debian's librdmacm,
# default: the cache of tests/abi/fetch-reference.sh), RDMA_TEST_ADDR1/2,
# RDMACM_MC_SENDER_ONLY (a regular expression selecting cases), VERBOSE=1.
set -u

BUILD="${RDMACM_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
A1="${RDMA_TEST_ADDR1:-192.0.2.1}"
A2="${RDMA_TEST_ADDR2:-$A1}"
REF="${RDMACM_REF_LIBDIR:-$HOME/.cache/rdmacm-ref/root/usr/lib/x86_64-linux-gnu}"
ONLY="${RDMACM_MC_SENDER_ONLY:-}"
BIN="$BUILD/tests/system/mc_sender_test"
T=60 # seconds per program: the sender needs about 5
TWO="${1:-}"
ROLE=both
if [ "$TWO" = two ]; then
	ROLE=recv
	[ "${RDMACM_VM_GUEST:-1}" = 2 ] && ROLE=send
fi
SYNC="${RDMACM_VM_OUT:-}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mc-sender.XXXXXX")" || exit 1
trap 'rm -rf "$WORK"' EXIT

. "$(dirname "$0")/verdict.sh"
wanted() { [ -z "$ONLY" ] || [[ "${1#mc-sender/}" =~ $ONLY ]]; }

# shellcheck source=transport.sh
. "$(dirname "$0")/transport.sh"
if iwarp_skip "$IWARP_NO_MCAST" mc-sender/option mc-sender/join mc-sender/debian; then
	finish
fi
ulimit -l unlimited 2>/dev/null || true
if [ ! -x "$BIN" ]; then
	fail mc-sender/setup "no $BIN (make check TESTS= builds it)"
	finish
fi
ours="$(realpath "$BUILD/src/.libs")"

# The librdmacm.so.1 the test binary loads with library directory $1.
loaded() {
	LD_LIBRARY_PATH="$1" ldd "$BIN" | awk '/librdmacm.so.1/ { print $3 }'
}

# Waits up to 120 s for file $1 in the shared results directory.
wait_file() {
	local i
	for ((i = 0; i < 1200; i++)); do
		[ -e "$SYNC/$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# run_case NAME LIBDIR RECV-MODE SEND-MODE GROUP: the receiver (unless this
# guest only sends) until READY, then the sender (unless this guest only
# receives); both must print PASS.
run_case() {
	local name=$1 lib=$2 rmode=$3 smode=$4 group=$5
	local r="$WORK/$name.r" s="$WORK/$name.s" rpid rrc=0 src=0 why=""

	if [ "$(dirname "$(realpath "$(loaded "$lib")")")" != "$(realpath "$lib")" ]; then
		fail "mc-sender/$name" "mc_sender_test loads $(loaded "$lib"), not $lib's"
		return
	fi
	if [ "$ROLE" != send ]; then
		LD_LIBRARY_PATH="$lib" timeout $T "$BIN" "$rmode" "$A1" "$group" \
			>"$r" 2>&1 &
		rpid=$!
		if ! wait_output "$r" '^READY' 20 "$rpid"; then
			kill "$rpid" 2>/dev/null
			wait "$rpid"
			[ -n "$SYNC" ] && [ "$ROLE" = recv ] && touch "$SYNC/nojoin-$name"
			fail "mc-sender/$name" "the receiver never got ready"
			show "$r"
			return
		fi
		[ "$ROLE" = recv ] && touch "$SYNC/ready-$name"
	fi
	if [ "$ROLE" != recv ]; then
		if [ "$ROLE" = send ]; then
			until [ -e "$SYNC/ready-$name" ] || [ -e "$SYNC/nojoin-$name" ]; do
				wait_file "ready-$name" || break
			done
			if [ ! -e "$SYNC/ready-$name" ]; then
				fail "mc-sender/$name" "the receiver in guest 1 never got ready; not sending"
				return
			fi
		fi
		LD_LIBRARY_PATH="$lib" timeout $T "$BIN" "$smode" "$A2" "$group" \
			>"$s" 2>&1 || src=$?
		grep -q "^PASS" "$s" || why="sender exit $src: $(grep -m1 '^FAIL' "$s")"
	fi
	if [ "$ROLE" != send ]; then
		wait "$rpid" || rrc=$?
		grep -q "^PASS" "$r" ||
			why="${why:+$why; }receiver exit $rrc: $(grep -m1 '^FAIL' "$r")"
	fi
	if [ -z "$why" ]; then
		pass "mc-sender/$name" "$(cat "$s" "$r" 2>/dev/null | sed -n 's/^# //p' | paste -sd'|' | sed 's/|/; /g')"
		[ "${VERBOSE:-0}" = 1 ] && show "$s" "$r" 2>/dev/null
	else
		fail "mc-sender/$name" "$why"
		show "$s" "$r" 2>/dev/null
	fi
}

# One group per case: a straggler of one case cannot reach the next.
wanted option && run_case option "$ours" recv send 239.255.1.41
wanted join && run_case join "$ours" recv-join send-join 239.255.1.42
if wanted debian; then
	if [ -e "$REF/librdmacm.so.1" ]; then
		run_case debian "$REF" recv-join send-join 239.255.1.43
	else
		skip mc-sender/debian "no Debian librdmacm under $REF (tests/abi/fetch-reference.sh)"
	fi
fi
finish
