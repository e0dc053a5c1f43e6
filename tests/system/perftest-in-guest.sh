#!/bin/bash
# perftest's bandwidth tests over rdma_cm (-R), as programs outside this
# project use the library, in the test guest or natively:
#   tests/vm/run-guest.sh tests/system/perftest-in-guest.sh               # rxe
#   RDMACM_VM_TRANSPORT=siw tests/vm/run-guest.sh tests/system/perftest-in-guest.sh
#
# Debian's unmodified perftest (ib_send_bw, ib_write_bw, ib_read_bw) with -R:
# the test connection and perftest's own control connection (its key
# exchanges and its closing handshake go over an RDMA SEND/RECV exchange)
# are both made through rdma_cm.  Server and client in this host, the
# client to RDMA_TEST_ADDR1; 200 iterations; each program
# RDMACM_PERFTEST_REPEAT times (default 3) on our library and, as the
# reference, on Debian's (checked with ldd).  A run passes when both ends
# exit 0 and the client reports its 200 iterations.
#
# -F: perftest turns its cycle counts into bandwidth with a CPU frequency it
# measures (a linear fit of cycles against time).  In a guest on a busy host
# the fit fails now and then ("Correlation coefficient r^2: … < 0.9", "Can't
# produce a report") and that end exits 1 before the closing handshake; its
# peer's handshake receive is then flushed, and it reports "Unable to read
# from socket/rdma_cm … Failed to close connection between server and
# client".  With either library.  -F lets perftest report without that
# measurement; the bandwidth figures are then meaningless, and not checked.
#
# Prints "PASS perftest/PROG/LIB/N" / "FAIL …" and "N passed, N failed".
# Environment: RDMACM_BUILD_DIR, RDMACM_REF_LIBDIR, RDMA_TEST_ADDR1,
# RDMA_TEST_DEV (default: the only RDMA device), RDMACM_PERFTEST_ONLY (a
# regular expression over the names), RDMACM_PERFTEST_REPEAT,
# RDMACM_PERFTEST_ARGS (replaces -F), VERBOSE=1.
set -u

BUILD="${RDMACM_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
A1="${RDMA_TEST_ADDR1:-192.0.2.1}"
REF="${RDMACM_REF_LIBDIR:-$HOME/.cache/rdmacm-ref/root/usr/lib/x86_64-linux-gnu}"
ONLY="${RDMACM_PERFTEST_ONLY:-}"
REPEAT="${RDMACM_PERFTEST_REPEAT:-3}"
EXTRA="${RDMACM_PERFTEST_ARGS--F}"
T=60 # seconds per program; a run takes about 4
WORK="$(mktemp -d "${TMPDIR:-/tmp}/perftest.XXXXXX")" || exit 1
trap 'rm -rf "$WORK"' EXIT

. "$(dirname "$0")/verdict.sh"

# shellcheck source=transport.sh
. "$(dirname "$0")/transport.sh"
ulimit -l unlimited 2>/dev/null || true
DEV="${RDMA_TEST_DEV:-}"
if [ -z "$DEV" ]; then
	for d in /sys/class/infiniband/*; do
		[ -e "$d" ] && DEV="${d##*/}" && break
	done
fi
if [ -z "$DEV" ]; then
	fail perftest/setup "no RDMA device"
	finish
fi
if ! command -v ib_send_bw >/dev/null; then
	fail perftest/setup "perftest is not installed (tests/setup.sh installs it)"
	finish
fi
ours="$(realpath "$BUILD/src/.libs")"
if [ ! -e "$ours/librdmacm.so.1" ]; then
	fail perftest/setup "no built library in $ours"
	finish
fi

# Which librdmacm.so.1 program $2 loads with LD_LIBRARY_PATH=$1.
loaded() {
	LD_LIBRARY_PATH="$1" ldd "$(command -v "$2")" |
		awk '/librdmacm.so.1/ { print $3 }'
}

port=18515
# run NAME LIBDIR PROG: one server/client pair.
run() {
	local name=$1 lib=$2 prog=$3 s="$WORK/s" c="$WORK/c" spid src=0 crc=0
	port=$((port + 1))
	# shellcheck disable=SC2086
	LD_LIBRARY_PATH="$lib" timeout $T stdbuf -oL "$prog" -d "$DEV" -R \
		-n 200 -p $port $EXTRA >"$s" 2>&1 &
	spid=$!
	if ! wait_output "$s" "Waiting for client" 20 "$spid"; then
		kill "$spid" 2>/dev/null
		wait "$spid"
		fail "$name" "the server never said it was waiting"
		show "$s"
		return
	fi
	# It says so just before it listens: wait for its listening id (a
	# client that comes first is refused, and perftest then crashes).
	wait_bound "$port" "$spid"
	# shellcheck disable=SC2086
	LD_LIBRARY_PATH="$lib" timeout $T stdbuf -oL "$prog" -d "$DEV" -R \
		-n 200 -p $port $EXTRA "$A1" >"$c" 2>&1 || crc=$?
	wait "$spid" || src=$?
	if [ "$crc" = 0 ] && [ "$src" = 0 ] &&
		grep -Eq '^ *[0-9]+ +200 ' "$c"; then
		pass "$name"
		[ "${VERBOSE:-0}" = 1 ] && show "$c"
	else
		fail "$name" "client exit $crc, server exit $src"
		echo "    client:"
		show "$c"
		echo "    server:"
		show "$s"
	fi
}

for lib in ours debian; do
	libdir=$ours
	if [ $lib = debian ]; then
		libdir=$REF
		if [ ! -e "$REF/librdmacm.so.1" ]; then
			skip "perftest/*/debian" "no Debian librdmacm under $REF"
			continue
		fi
	fi
	for prog in ib_send_bw ib_write_bw ib_read_bw; do
		wanted "perftest/$prog/$lib/" || continue
		got="$(loaded "$libdir" "$prog")"
		if [ "$(dirname "$(realpath "$got")")" != "$(realpath "$libdir")" ]; then
			fail "perftest/$prog/$lib" "$prog loads '$got', not $libdir's"
			continue
		fi
		for ((n = 1; n <= REPEAT; n++)); do
			wanted "perftest/$prog/$lib/$n" || continue
			run "perftest/$prog/$lib/$n" "$libdir" "$prog"
		done
	done
done
siw_testbed_report
finish
