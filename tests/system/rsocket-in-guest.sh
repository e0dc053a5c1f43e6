#!/bin/bash
# rsocket system tests, run inside the Soft-RoCE guest:
#   tests/vm/run-guest.sh tests/system/rsocket-in-guest.sh
# (or natively where an RDMA device carries the test addresses).
#
# 1-2. Debian's rstream and riostream (rdmacm-utils) with OUR library on both
#    sides (loaded through LD_LIBRARY_PATH, checked with ldd).
# 3. Interop: one side on our library, the other on Debian's, both
#    directions, stream (-T s... default blocking and async) and iomap.
# 4. Datagram sockets: this tree's rudping (data verified) on our library,
#    IPv4 and IPv6, blocking, non-blocking, rpoll, rselect and repoll,
#    connected and not, three clients on one server; Debian's udpong on
#    our library on both sides; and udpong across the two libraries in both
#    directions.  Those last two are skipped, with the reason, when Debian's
#    library cannot open a datagram rsocket on this device at all
#    (Soft-RoCE: see dgram_skip_reason below), and run instead with
#    Debian's side under a test shim that works around that
#    (interop-selfah, tests/system/roce_self_ah.c).
# 5. selfconnect/*: one thread connects to its own listener (below).
# 6. fork-listen/*: children of a fork accept on their parent's listener.
#
# Prints "PASS name" / "FAIL name" / "SKIP name: why" per test and
# "N passed, N failed".
# Environment: RDMACM_BUILD_DIR (the build tree), RDMA_TEST_ADDR1/2,
# RDMA_TEST_ADDR6_1/2 (IPv6, optional), RDMACM_SYS_ONLY (regex filter on
# test names), VERBOSE=1.
set -u

BUILD="${RDMACM_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
A1="${RDMA_TEST_ADDR1:-192.0.2.1}"
A2="${RDMA_TEST_ADDR2:-$A1}"
A6_1="${RDMA_TEST_ADDR6_1:-}"
A6_2="${RDMA_TEST_ADDR6_2:-$A6_1}"
ONLY="${RDMACM_SYS_ONLY:-}"
T=60
ours="$BUILD/src/.libs"
. "$(dirname "$0")/verdict.sh"
# shellcheck source=transport.sh
. "$(dirname "$0")/transport.sh"
log="$(mktemp -d "${TMPDIR:-/tmp}/rs-sys.XXXXXX")"
trap 'rm -rf "$log"' EXIT
ulimit -l unlimited 2>/dev/null

# Which librdmacm a program loads with a given LD_LIBRARY_PATH.
whichlib() {
	LD_LIBRARY_PATH="$1" ldd "$2" | awk '/librdmacm.so.1/ { print $3 }'
}

if [ ! -e "$ours/librdmacm.so.1" ]; then
	fail setup "no library in $ours"
	finish
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
#
# Debian's rpoll reports POLLHUP as soon as the peer's disconnect message
# is processed, even with data still queued, and Debian's rstream -T a
# takes any POLLHUP as failure (exit 16).  A server that closes right after
# its last send therefore fails a Debian async client now and then, on
# Debian's library at both ends too (8 of 30 over siw under strace; 9 of 24
# attempts with our server, 2026-11-25).  Such a run is an XFAIL
# (BUGS.md debian-rstream-pollhup).
#
# Over iWARP, Debian's server resets the connection now and then as it
# closes: it destroys its QP as soon as its last sends are handed to TCP,
# and a credit update from the client that arrives after that meets a
# closed socket, which TCP answers with a reset (counted as TcpExt
# TCPAbortOnData) that also throws away what the server had not sent yet.
# The client then misses the end of the transfer (its QP flushed; rstream
# -T a exits 8, POLLERR).  Our library lingers on close for this reason
# (tests/system/BUGS.md iwarp-close-reset and debian-rsocket-iwarp-reset).
# A Debian server's run that failed only on the client while the guest
# counted such a reset is an XFAIL too (debian-rsocket-iwarp-reset).
#
# Over iWARP, Debian's server also sends a credit update as soon as it is
# connected, before the client's first message; Soft-iWARP then now and
# then fails the client's connect (CONNECT_ERROR, which our rconnect
# reports as ECONNABORTED), and Debian's server, which never learns that
# its peer is gone, waits until the timeout.  Such a run is an XFAIL
# (BUGS.md debian-rsocket-iwarp-server-first).
tcp_resets() {
	awk '/^TcpExt:/ {
		if (!n) { for (i = 2; i <= NF; i++) if ($i == "TCPAbortOnData") c = i; n = 1 }
		else print (c ? $c : 0)
	}' /proc/net/netstat 2>/dev/null
}
port=7470
run_pair() {
	local name=$1 slib=$2 clib=$3 prog=$4 crc src resets
	shift 4
	wanted "$name" || return 0
	port=$((port + 1))
	resets=$(tcp_resets)
	launch_pair $port "$log/s.out" "$log/c.out" $T \
		env LD_LIBRARY_PATH="$slib" "$prog" -p $port -b "$A1" "$@" -- \
		env LD_LIBRARY_PATH="$clib" "$prog" -p $port -s "$A1" -b "$A2" "$@"
	crc=$client_rc src=$server_rc
	if [ $crc -eq 0 ] && [ $src -eq 0 ]; then
		pass "$name"
		[ -n "${VERBOSE:-}" ] && sed 's/^/    /' "$log/c.out"
		return
	fi
	if [ -z "$clib" ] && [ $crc -eq 16 ] && [ $src -eq 0 ] &&
		[[ " $* " == *" -T a "* ]]; then
		xfail "$name" "BUGS.md debian-rstream-pollhup: Debian's async client saw POLLHUP before the last data"
	elif [ -z "$slib" ] && [ $crc -ne 0 ] && [ $src -eq 0 ] &&
		[ "$(tcp_resets)" != "$resets" ]; then
		xfail "$name" "BUGS.md debian-rsocket-iwarp-reset: Debian's server reset the connection as it closed (TCPAbortOnData)"
	elif [ -z "$slib" ] && [ -n "$clib" ] && [ "$TRANSPORT" = iwarp ] &&
		grep -q "^rconnect: Software caused connection abort" "$log/c.out"; then
		xfail "$name" "BUGS.md debian-rsocket-iwarp-server-first: Debian's server sent first; Soft-iWARP failed the client's connect"
	else
		fail "$name" "server rc=$src client rc=$crc"
	fi
	echo "    --- server"
	sed 's/^/    /' "$log/s.out" | tail -15
	[ -s "$log/s.out.hang" ] && sed 's/^/    /' "$log/s.out.hang"
	echo "    --- client"
	sed 's/^/    /' "$log/c.out" | tail -15
	[ -s "$log/c.out.hang" ] && sed 's/^/    /' "$log/c.out.hang"
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

# --- 4. datagram sockets ------------------------------------------------------
# iWARP has no UD QPs, so no datagram rsockets (they fail with ENOTSUP).
datagram_tests() {

# The real binary of a libtool-built example (the wrapper would relink).
rud="$BUILD/examples/.libs/rudping"
[ -x "$rud" ] || rud="$BUILD/examples/rudping"

# rxe_counter NAME: one of the RDMA device's hardware counters.
rxe_counter() {
	rdma statistic show link "${RDMA_TEST_DEV:-rxe0}/1" 2>/dev/null |
		tr ' ' '\n' | sed -n "/^$1\$/{n;p;q}"
}

# pkts_check BEFORE: with MIN_PKTS set, fail unless the device sent that
# many packets since BEFORE: the datagrams must have taken the UD QPs, not
# the UDP sockets (which carry only the first datagram to a new peer).
pkts_check() {
	local after
	[ -n "${MIN_PKTS:-}" ] || return 0
	after=$(rxe_counter sent_pkts)
	if [ -z "$1" ] || [ -z "$after" ]; then
		echo "cannot read the RDMA device's counters (rdma statistic)"
	elif [ $((after - $1)) -lt "$MIN_PKTS" ]; then
		echo "only $((after - $1)) RDMA packets sent, expected $MIN_PKTS or more"
	fi
}

# show_pair: the tails of the last pair's outputs.
show_pair() {
	echo "    --- server"
	sed 's/^/    /' "$log/s.out" | tail -15
	echo "    --- client"
	sed 's/^/    /' "$log/c.out" | tail -15
}

# rud_pair NAME SERVER_ADDR CLIENT_ADDR ARGS...: rudping server and client
# on our library; both must exit 0 (every datagram checked on both sides).
# With RUD_CLIENTS=N, N clients share the server at once.
rud_pair() {
	local name=$1 saddr=$2 caddr=$3 spid crc=0 src i pids=() before why
	shift 3
	wanted "$name" || return 0
	before=$(rxe_counter sent_pkts)
	port=$((port + 1))
	LD_LIBRARY_PATH="$ours" timeout $T "$rud" -b "$saddr" -p $port "$@" \
		>"$log/s.out" 2>&1 &
	spid=$!
	wait_bound $port $spid
	: >"$log/c.out"
	for i in $(seq "${RUD_CLIENTS:-1}"); do
		LD_LIBRARY_PATH="$ours" timeout $T "$rud" -s "$saddr" \
			-b "$caddr" -p $port "$@" >>"$log/c.out" 2>&1 &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i" || crc=$?
	done
	wait $spid
	src=$?
	why=$(pkts_check "$before")
	if [ $crc -eq 0 ] && [ $src -eq 0 ] && [ -z "$why" ]; then
		pass "$name"
		[ -n "${VERBOSE:-}" ] && show_pair
	else
		fail "$name" "server rc=$src client rc=$crc${why:+; $why}"
		show_pair
	fi
}

# udpong_pair NAME SERVER_LIBPATH CLIENT_LIBPATH CLIENT_ARGS...: Debian's
# udpong.  Its server never exits: it must still be running once the
# client has finished its run and exited 0.  $UDPONG_PRELOAD, if set, is
# preloaded into the side(s) running Debian's library.
udpong_pair() {
	local name=$1 slib=$2 clib=$3 spid crc src=0 spre= cpre= before why
	shift 3
	wanted "$name" || return 0
	before=$(rxe_counter sent_pkts)
	[ -z "$slib" ] && spre=${UDPONG_PRELOAD:-}
	[ -z "$clib" ] && cpre=${UDPONG_PRELOAD:-}
	port=$((port + 1))
	LD_PRELOAD="$spre" LD_LIBRARY_PATH="$slib" timeout $T /usr/bin/udpong \
		-b "$A1" -p $port >"$log/s.out" 2>&1 &
	spid=$!
	wait_bound $port $spid
	LD_PRELOAD="$cpre" LD_LIBRARY_PATH="$clib" timeout 30 /usr/bin/udpong \
		-s "$A1" -p $port "$@" >"$log/c.out" 2>&1
	crc=$?
	kill $spid 2>/dev/null || src=1
	wait $spid 2>/dev/null
	why=$(pkts_check "$before")
	if [ $crc -eq 0 ] && [ $src -eq 0 ] && [ -z "$why" ]; then
		pass "$name"
		[ -n "${VERBOSE:-}" ] && show_pair
	else
		fail "$name" "server $([ $src = 0 ] && echo running || echo gone), client rc=$crc${why:+; $why}"
		show_pair
	fi
}

if [ -x "$rud" ]; then
	MIN_PKTS=400 rud_pair rudping/ipv4/blocking "$A1" "$A2" -T b -C 200 \
		-S 1000
	rud_pair rudping/ipv4/nonblocking "$A1" "$A2" -T n -C 200 -S 64
	rud_pair rudping/ipv4/rpoll "$A1" "$A2" -T a -C 200 -S 512
	rud_pair rudping/ipv4/rselect-unconnected "$A1" "$A2" -T e -u -C 100 \
		-S 1000
	rud_pair rudping/ipv4/repoll "$A1" "$A2" -T p -C 100 -S 256
	RUD_CLIENTS=3 rud_pair rudping/ipv4/three-clients "$A1" "$A2" -T a \
		-C 100 -S 128
	if [ -n "$A6_1" ]; then
		MIN_PKTS=200 rud_pair rudping/ipv6/rpoll "$A6_1" "$A6_2" -T a \
			-C 100 -S 1000
		rud_pair rudping/ipv6/blocking-unconnected "$A6_1" "$A6_2" \
			-T b -u -C 100 -S 200
	else
		skip rudping/ipv6 "no RDMA_TEST_ADDR6_1"
	fi
	# A datagram must fit the port MTU (1024 on Soft-RoCE over a
	# 1500-byte Ethernet MTU): larger ones are refused, not cut.
	if wanted rudping/emsgsize; then
		LD_LIBRARY_PATH="$ours" timeout $T "$rud" -s "$A1" -p 9 -S 2048 \
			-C 1 -T a >"$log/c.out" 2>&1
		if grep -q "Message too long" "$log/c.out"; then
			pass rudping/emsgsize
		else
			fail rudping/emsgsize "expected EMSGSIZE"
			sed 's/^/    /' "$log/c.out" | tail -5
		fi
	fi
else
	fail rudping/setup "no $rud"
fi

# Debian's udpong, both sides on our library: its client checks the
# server's message counts, not the data.
MIN_PKTS=200 udpong_pair udpong/ours-ours/bw "$ours" "$ours" -C 200 -S 1000
udpong_pair udpong/ours-ours/echo "$ours" "$ours" -C 100 -S 512 -T e
udpong_pair udpong/ours-ours/blocking "$ours" "$ours" -C 100 -S 64 -T b

# Across the libraries.  Debian's library (44.0) makes, for every datagram
# QP, an address handle to the QP itself from the port's LID alone, without
# a GRH; RoCE ports have no LIDs and need one, so ibv_create_ah fails
# (EINVAL) and Debian's rconnect fails ("No such file or directory": the
# errno of an epoll_ctl(EPOLL_CTL_DEL) in its clean-up), and its udpong
# server drops every datagram that arrives.  Probe for that first.
dgram_skip_reason=
if wanted udpong/interop || wanted udpong/interop-selfah/x; then
	port=$((port + 1))
	LD_LIBRARY_PATH="$ours" timeout 20 /usr/bin/udpong -b "$A1" -p $port \
		>"$log/s.out" 2>&1 &
	probe_pid=$!
	wait_bound $port $probe_pid
	LD_LIBRARY_PATH= timeout 15 /usr/bin/udpong -s "$A1" -p $port -C 1 \
		>"$log/c.out" 2>&1
	kill $probe_pid 2>/dev/null
	wait $probe_pid 2>/dev/null
	if grep -q "^rconnect:" "$log/c.out"; then
		dgram_skip_reason="Debian's library cannot open a datagram rsocket here ($(grep -m1 '^rconnect:' "$log/c.out")): its QPs' own address handles lack the GRH RoCE needs"
	fi
fi
# udpong_interop PREFIX: both directions, bandwidth and echo runs.
# The echo runs must show both sides' datagrams on the UD QPs (50 each way,
# and udpong's own messages).  Until a side's service thread has resolved
# the peer, that side's datagrams legitimately go over UDP: a bandwidth run
# may send all of Debian's that way, and an echo run under load a dozen
# (87 packets seen once in CI).  75 still needs both sides on the UD QPs:
# one side alone makes little more than 50.
udpong_interop() {
	udpong_pair "$1/debian-ours" "" "$ours" -C 100 -S 512
	MIN_PKTS=75 udpong_pair "$1/debian-ours/echo" "" "$ours" -C 50 \
		-S 1000 -T e
	udpong_pair "$1/ours-debian" "$ours" "" -C 100 -S 512
	MIN_PKTS=75 udpong_pair "$1/ours-debian/echo" "$ours" "" -C 50 \
		-S 1000 -T e
}
if [ -z "$dgram_skip_reason" ]; then
	udpong_interop udpong/interop
else
	for dir in debian-ours ours-debian; do
		wanted "udpong/interop/$dir" && skip "udpong/interop/$dir" \
			"$dgram_skip_reason"
	done
	# The same with a test shim that gives Debian's library the address
	# handle RoCE needs (tests/system/roce_self_ah.c): then its datagram
	# rsockets work, and ours must speak to them both ways.
	selfah="$BUILD/tests/system/.libs/roce_self_ah.so"
	if [ -e "$selfah" ]; then
		UDPONG_PRELOAD=$selfah udpong_interop udpong/interop-selfah
	elif wanted udpong/interop-selfah; then
		fail udpong/interop-selfah "no $selfah (make check TESTS=)"
	fi
fi

}
# 5. A single-threaded program connecting to its own listener
# (tests/system/rs_selfconnect): a blocking rconnect, then raccept, from
# one thread; on our library, on Debian's (the reference's behaviour,
# printed, not judged), and the same with socket(2) calls under this
# tree's librspreload.so.
selfconnect() {
	local name=$1 lib=$2 mode=$3 pre=${4:-} out rc
	wanted "$name" || return 0
	# (an ASan build's preload comes before the runtime: allowed)
	out=$(LD_LIBRARY_PATH="$lib" LD_PRELOAD="$pre" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		timeout 90 "$BUILD/tests/system/rs_selfconnect" "$mode" "$A1" 2>&1)
	rc=$?
	if [ "$lib" != "$ours" ]; then
		echo "# $name (Debian's library, not judged): exit $rc: $out"
	elif [ $rc = 0 ]; then
		pass "$name" "$(sed -n 's/^PASS [^:]*: //p' <<<"$out")"
	else
		fail "$name" "exit $rc: $out"
	fi
}
selfconnect selfconnect/ours "$ours" rsocket
selfconnect selfconnect/debian "" rsocket
selfconnect selfconnect/preload "$ours" socket \
	"$BUILD/src/preload/.libs/librspreload.so"

# 6. A listener made before fork() and accepted on by the children
# (tests/system/rs_fork_listen): several at once, blocking or in poll(),
# after the maker exited or closed its copy; rsocket calls on our library
# and socket calls under librspreload.so.
fork_listen() {
	local mode=$1 how=$2 name="fork-listen/${3:+$3/}$1/$2" pre= out rc
	wanted "$name" || return 0
	[ "$mode" = socket ] && pre="$BUILD/src/preload/.libs/librspreload.so"
	out=$(LD_LIBRARY_PATH="$ours" LD_PRELOAD="$pre" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		timeout 200 "$BUILD/tests/system/rs_fork_listen" "$mode" "$A1" \
		"$how" 2>&1)
	rc=$?
	if [ $rc = 0 ]; then
		pass "$name" "$(sed -n 's/^PASS [^:]*: //p' <<<"$out")"
	else
		fail "$name" "exit $rc: $out"
	fi
}
for how in workers poll maker-exits maker-closes reuseport; do
	fork_listen rsocket $how
	fork_listen socket $how
done
# The same with every CPU busy: nothing in the hand-over waits on time.
if wanted fork-listen/loaded; then
	hogs=()
	for ((i = 0; i < $(nproc); i++)); do
		(while :; do :; done) &
		hogs+=($!)
	done
	for how in poll maker-exits; do
		fork_listen rsocket $how loaded
		fork_listen socket $how loaded
	done
	kill "${hogs[@]}" 2>/dev/null
	wait "${hogs[@]}" 2>/dev/null
fi

if [ "$TRANSPORT" = iwarp ]; then
	for t in rudping udpong; do
		wanted "$t/" && skip "$t" "$IWARP_NO_UD"
	done
else
	datagram_tests
fi

finish
