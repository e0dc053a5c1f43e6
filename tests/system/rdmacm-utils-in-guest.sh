#!/bin/bash
# The rsocket system tests, run inside the Soft-RoCE guest (or natively):
#   tests/vm/run-guest.sh tests/system/rdmacm-utils-in-guest.sh
#
# 1. utils/*: Debian's unmodified rdmacm-utils programs (/usr/bin) in pairs,
#    both sides on the library under test, after checking with ldd that it
#    is the one each program loads.  udpong counts on our library; on
#    Debian's (RDMACM_RS_LIB=debian) it is only recorded (INFO line): that
#    library cannot open a datagram rsocket on Soft-RoCE (see
#    rsocket-in-guest.sh).
# 2. interop/*: this tree's rstream/riostream against Debian's, in both
#    directions, stream and iomap, with data verification; our side on the
#    library under test, Debian's side on Debian's library.
# 3. preload/*: an unmodified TCP program (socat) under LD_PRELOAD of this
#    tree's librspreload.so copies a file between two processes; the copy is
#    compared and the RDMA device's counters must show the bytes (siw has
#    none: on iWARP librspreload's log must show both ends on rsockets).
#
# On iWARP (see transport.sh) udaddy, mckey and udpong are SKIPped: no UD
# QPs, no multicast.
#
# Prints "PASS name" / "FAIL name" / "SKIP name" / "INFO name" lines and a
# last line "N passed, N failed"; exits non-zero if anything failed.
#
# Environment:
#   RDMACM_BUILD_DIR   the build tree (not under /tmp when run in the VM)
#   RDMACM_RS_LIB      "ours" (default): the library under test is this
#                      build's; "debian": Debian's reference library (to check
#                      the tests themselves before our rsockets exist)
#   RDMACM_REF_LIBDIR  Debian's unpacked librdmacm (default: the cache that
#                      tests/abi/fetch-reference.sh fills)
#   RDMACM_RS_ONLY     a regular expression selecting tests by name
#   RDMA_TEST_ADDR1, RDMA_TEST_ADDR2   server and client addresses
#   VERBOSE=1          show the output of passing tests too
set -u

BUILD="${RDMACM_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
A1="${RDMA_TEST_ADDR1:-192.0.2.1}"
A2="${RDMA_TEST_ADDR2:-$A1}"
ONLY="${RDMACM_RS_ONLY:-}"
MODE="${RDMACM_RS_LIB:-ours}"
REF="${RDMACM_REF_LIBDIR:-$HOME/.cache/rdmacm-ref/root/usr/lib/x86_64-linux-gnu}"
T=40 # seconds per program
# Scratch files go to local storage: rcopy's server mmap()s its output file,
# which the VM's 9p results share does not allow.
WORK="$(mktemp -d "${TMPDIR:-/tmp}/rsocket-tests.XXXXXX")" || exit 1

. "$(dirname "$0")/verdict.sh"

trap 'rm -rf "$WORK"' EXIT
# TRANSPORT and iwarp_skip (UD and multicast programs are SKIPped on iWARP).
# shellcheck source=transport.sh
. "$(dirname "$0")/transport.sh"
ulimit -l unlimited 2>/dev/null || echo "# warning: locked-memory limit is $(ulimit -l) KiB"

# --- which library is which --------------------------------------------------------
ourlib="$(realpath "$BUILD/src/.libs" 2>/dev/null)"
if [ ! -e "$ourlib/librdmacm.so.1" ]; then
	fail setup "no built library in $BUILD/src/.libs"
	finish
fi
if [ ! -e "$REF/librdmacm.so.1" ]; then
	fail setup "no Debian reference library in $REF (run tests/abi/fetch-reference.sh)"
	finish
fi
reflib="$(realpath "$REF")"
case "$MODE" in
ours) testlib="$ourlib" ;;
debian) testlib="$reflib" ;;
*)
	fail setup "RDMACM_RS_LIB must be ours or debian, not '$MODE'"
	finish
	;;
esac
echo "# library under test: $testlib ($MODE)"
echo "# Debian's library:   $reflib"

# lib_of DIR PROG: the librdmacm.so.1 PROG loads with DIR first on the path.
lib_of() {
	local l
	l="$(LD_LIBRARY_PATH="$1" ldd "$2" 2>/dev/null |
		sed -n 's/^[[:space:]]*librdmacm\.so\.1 => \([^ ]*\).*/\1/p')"
	[ -n "$l" ] && dirname "$(realpath "$l")"
}

# check_lib NAME DIR PROG...: each PROG must load librdmacm from DIR.
check_lib() {
	local name="$1" dir="$2" p got
	shift 2
	for p in "$@"; do
		got="$(lib_of "$dir" "$p")"
		if [ "$got" != "$dir" ]; then
			fail "$name" "$p loads librdmacm from '$got', not $dir"
			return 1
		fi
	done
}

# --- running pairs -----------------------------------------------------------------
port=7600
# run_pair NAME SLIB "SERVER CMD" CLIB "CLIENT CMD": the server on library
# dir SLIB in the background, then, once its output has a line matching
# PAIR_READY when that is set, else once its port (-p, socat's
# TCP-LISTEN:, else Debian's default 7174) is bound, the client on CLIB (client_run); both must exit 0.  A
# server command starting with "forever:" never exits by itself: it is
# stopped once the client is done.  Sets $pair_rc (0 when both passed);
# output stays in $WORK/NAME.{s,c}.
run_pair() {
	local name="$1" slib="$2" scmd="$3" clib="$4" ccmd="$5" rc=0 src=0 port
	local forever=0 f="$WORK/${1//\//_}"
	case "$scmd" in forever:*)
		forever=1
		scmd="${scmd#forever:}"
		;;
	esac
	port=$(sed -n -e 's/.*-p \([0-9]*\).*/\1/p' \
		-e 's/.*TCP-LISTEN:\([0-9]*\).*/\1/p' <<<"$scmd")
	port=${port:-7174}
	: >"$f.c"
	# shellcheck disable=SC2086
	server_start "$f.s" "$T" env LD_LIBRARY_PATH="$slib" $scmd
	if [ -n "${PAIR_READY:-}" ]; then
		wait_output "$f.s" "$PAIR_READY" 30 "$server_pid"
	else
		wait_bound "$port" "$server_pid"
	fi
	# shellcheck disable=SC2086
	client_run "$port" "$f.c" "$T" env LD_LIBRARY_PATH="$clib" $ccmd || rc=$?
	if [ "$forever" = 1 ]; then
		# Still serving is success; having exited on its own is not.
		sleep 0.2
		server_stop || src=$?
	else
		server_wait || src=$?
	fi
	pair_rc=$((rc || src))
	pair_out="    server: $scmd (exit $src, lib $slib)
$(show "$f.s")
    client: $ccmd (exit $rc, lib $clib)
$(show "$f.c")"
}

# pair NAME "SERVER CMD" "CLIENT CMD": both on the library under test.
pair() {
	wanted "$1" || return 0
	run_pair "$1" "$testlib" "$2" "$testlib" "$3"
	report "$1"
}

report() {
	if [ "$pair_rc" = 0 ]; then
		[ "${VERBOSE:-0}" = 1 ] && echo "$pair_out"
		pass "$1"
	else
		echo "$pair_out"
		fail "$1"
	fi
}

# --- 1. Debian's rdmacm-utils on the library under test ------------------------------
utils="rping ucmatose udaddy mckey rdma_server rdma_client rdma_xserver
	rdma_xclient rstream riostream rcopy cmtime udpong"
U=/usr/bin
have_utils=1
for u in $utils; do
	[ -x "$U/$u" ] || have_utils=0
done
if [ "$have_utils" = 0 ]; then
	fail "utils/setup" "Debian's rdmacm-utils are not all in $U (apt-get install rdmacm-utils)"
elif check_lib "utils/whichlib" "$testlib" $(for u in $utils; do echo "$U/$u"; done); then
	pass "utils/whichlib"
	# Debian's udaddy fails to listen when given -p (EINVAL, with its own
	# library too): it runs on its default port, before mckey (same port)
	# starts.
	iwarp_skip "$IWARP_NO_UD" utils/udaddy ||
		pair utils/udaddy "$U/udaddy -b $A1" "$U/udaddy -s $A1 -b $A2"
	# mckey's sender stalled ~50 s in the kernel when its QP was destroyed
	# while the NIC held its frames (BUGS.md rxe-mcast-hub-stall; any
	# library): run it
	# alongside the others, with more time than the rest.
	mckey_name="utils/mckey"
	if iwarp_skip "$IWARP_NO_MCAST" "$mckey_name"; then
		:
	elif wanted "$mckey_name"; then
		(
			# The sender starts once the receiver says it joined
			# (line-buffered: its output goes to a file).
			PAIR_READY=joined T=100 run_pair "$mckey_name" "$testlib" \
				"stdbuf -oL $U/mckey -m 239.255.0.43 -b $A1 -C 4" \
				"$testlib" "$U/mckey -m 239.255.0.43 -b $A2 -s -C 4"
			echo "$pair_rc" >"$WORK/mckey.rc"
			echo "$pair_out" >"$WORK/mckey.out"
		) &
		mckey_pid=$!
	fi
	pair utils/rping "$U/rping -s -a $A1 -p $((port += 1)) -C 10 -V" \
		"$U/rping -c -a $A1 -I $A2 -p $port -C 10 -V"
	if wanted utils/ucmatose; then
		run_pair utils/ucmatose "$testlib" "$U/ucmatose -b $A1 -p $((port += 1)) -c 2 -C 10" \
			"$testlib" "$U/ucmatose -s $A1 -b $A2 -p $port -c 2 -C 10"
		# Debian's ucmatose server sends as soon as its connections are
		# up, before the client's first message, which MPA forbids:
		# siw then fails the client's connect (BUGS.md
		# debian-ucmatose-iwarp-server-first), on any library.
		if [ "$pair_rc" != 0 ] && [ "$TRANSPORT" = iwarp ] &&
			grep -q "RDMA_CM_EVENT_CONNECT_ERROR, error: -22" "$WORK/utils_ucmatose.c"; then
			echo "$pair_out"
			xfail utils/ucmatose "BUGS.md debian-ucmatose-iwarp-server-first: the client's connect failed with -EINVAL"
		else
			report utils/ucmatose
		fi
	fi
	pair utils/rdma_server_client "$U/rdma_server -s $A1 -p $((port += 1))" \
		"$U/rdma_client -s $A1 -p $port"
	pair utils/rdma_xserver_xclient "$U/rdma_xserver -p $((port += 1))" \
		"$U/rdma_xclient -s $A1 -p $port"
	for t in "stream:" "blocking:-T b" "nonblocking:-T n" "async:-T a"; do
		pair "utils/rstream/${t%%:*}" \
			"$U/rstream -b $A1 -p $((port += 1)) -S 4096 -C 200 -T v ${t#*:}" \
			"$U/rstream -s $A1 -b $A2 -p $port -S 4096 -C 200 -T v ${t#*:}"
	done
	pair "utils/rstream/sizes" "$U/rstream -b $A1 -p $((port += 1)) -S 100000 -C 20 -I 2 -T v" \
		"$U/rstream -s $A1 -b $A2 -p $port -S 100000 -C 20 -I 2 -T v"
	for t in "blocking:-T b" "nonblocking:-T n"; do
		pair "utils/riostream/${t%%:*}" \
			"$U/riostream -b $A1 -p $((port += 1)) -S 4096 -C 50 -I 4 -T v ${t#*:}" \
			"$U/riostream -s $A1 -p $port -S 4096 -C 50 -I 4 -T v ${t#*:}"
	done
	if wanted utils/rcopy; then
		head -c 3000000 /dev/urandom >"$WORK/rcopy.src"
		run_pair utils/rcopy "$testlib" "forever:$U/rcopy -p $((port += 1))" \
			"$testlib" "$U/rcopy $WORK/rcopy.src $A1:$WORK/rcopy.dst -p $port"
		if [ "$pair_rc" = 0 ] && ! cmp "$WORK/rcopy.src" "$WORK/rcopy.dst" >>"$WORK/utils_rcopy.c" 2>&1; then
			pair_rc=1
			pair_out+="
    the copy differs from the source"
		fi
		report utils/rcopy
	fi
	# cmtime's server keeps waiting for more clients.
	pair utils/cmtime "forever:$U/cmtime -b $A1 -p $((port += 1)) -c 20" \
		"$U/cmtime -s $A1 -b $A2 -p $port -c 20"
	if iwarp_skip "$IWARP_NO_UD" utils/udpong; then
		:
	# udpong's server never exits.  Its default run includes 1536-byte
	# datagrams, more than one Soft-RoCE packet (1024-byte MTU) carries,
	# which our library refuses (EMSGSIZE): ask for sizes that fit.
	elif [ "$MODE" = ours ]; then
		pair utils/udpong "forever:$U/udpong -b $A1 -p $((port += 1))" \
			"$U/udpong -s $A1 -b $A2 -p $port -C 100 -S 1000"
		pair utils/udpong-echo "forever:$U/udpong -b $A1 -p $((port += 1))" \
			"$U/udpong -s $A1 -b $A2 -p $port -C 50 -S 256 -T e"
	elif wanted utils/udpong; then
		CLIENT_TRIES=1 T=20 run_pair utils/udpong "$testlib" "$U/udpong -b $A1 -p $((port += 1))" \
			"$testlib" "$U/udpong -s $A1 -b $A2 -p $port -C 10"
		info utils/udpong "exit $pair_rc (not counted: Debian's library cannot open a datagram rsocket on Soft-RoCE)"
		echo "$pair_out" | head -20
	fi
	if [ -n "${mckey_pid:-}" ]; then
		wait "$mckey_pid"
		pair_rc="$(cat "$WORK/mckey.rc" 2>/dev/null || echo 1)"
		pair_out="$(cat "$WORK/mckey.out" 2>/dev/null)"
		report "$mckey_name"
	fi
fi

# --- 1b. this tree's rdma_xserver/rdma_xclient ------------------------------------------
# The asynchronous RDMACM_1.4 path (rdma_resolve_addrinfo with RAI_DNS,
# ADDRINFO_RESOLVED, rdma_query_addrinfo) then a connection whose every
# message must come back unchanged; two clients in turn, the first given
# the server's name when the hosts database has one (the test bed's guest
# has none: then both use the address, still through rdma_resolve_addrinfo).
OURS_XSERVER="$(real_prog "$BUILD/examples/rdma_xserver")"
OURS_XCLIENT="$(real_prog "$BUILD/examples/rdma_xclient")"
if [ -z "$OURS_XSERVER" ] || [ -z "$OURS_XCLIENT" ]; then
	wanted examples/rdma_xserver_xclient &&
		fail examples/rdma_xserver_xclient "not built in $BUILD/examples"
elif wanted examples/rdma_xserver_xclient; then
	xhost=$(getent hosts "$A1" | awk '{ print $2; exit }')
	xf="$WORK/examples_rdma_xserver_xclient"
	xs="$OURS_XSERVER -s $A1 -p $((port += 1)) -n 2"
	: >"$xf.c"
	# shellcheck disable=SC2086
	server_start "$xf.s" "$T" env LD_LIBRARY_PATH="$testlib" $xs
	wait_bound "$port" "$server_pid"
	# Only the first client may come before the server listens.
	xc="-s ${xhost:-$A1} -p $port -C 20"
	echo "client: $OURS_XCLIENT $xc" >>"$xf.c"
	xrc=0
	# shellcheck disable=SC2086
	client_run "$port" "$xf.c" "$T" env LD_LIBRARY_PATH="$testlib" \
		"$OURS_XCLIENT" $xc || xrc=$?
	if [ "$xrc" = 0 ]; then
		xc="-s $A1 -p $port -C 5"
		echo "client: $OURS_XCLIENT $xc" >>"$xf.c"
		# shellcheck disable=SC2086
		LD_LIBRARY_PATH="$testlib" timeout -k 5 "$T" "$OURS_XCLIENT" $xc \
			>>"$xf.c" 2>&1 || xrc=$?
	fi
	xsrc=0
	if [ "$xrc" = 0 ]; then
		server_wait || xsrc=$?
	else
		server_stop || :
		xsrc=1
	fi
	pair_rc=$((xrc || xsrc))
	pair_out="    server: $xs (exit $xsrc, lib $testlib)
$(show "$xf.s")
    clients (exit $xrc, lib $testlib; first by name ${xhost:-none})
$(show "$xf.c")"
	report examples/rdma_xserver_xclient
fi

# This tree's udpong: with itself (echo test, every echo's payload checked,
# and a bandwidth test), and with Debian's udpong in both roles (the wire is
# rdma-core's), all on the library under test.  The servers never exit.
OURS_UDPONG="$(real_prog "$BUILD/examples/udpong")"
if [ -z "$OURS_UDPONG" ]; then
	wanted examples/udpong && fail examples/udpong "not built in $BUILD/examples"
elif ! iwarp_skip "$IWARP_NO_UD" examples/udpong examples/udpong-debian-server \
	examples/udpong-debian-client; then
	pair examples/udpong "forever:$OURS_UDPONG -b $A1 -p $((port += 1))" \
		"$OURS_UDPONG -s $A1 -p $port -C 200 -S 1000 -T e"
	pair examples/udpong-bw "forever:$OURS_UDPONG -b $A1 -p $((port += 1))" \
		"$OURS_UDPONG -s $A1 -p $port -C 1000 -S 1000"
	if [ -x "$U/udpong" ]; then
		pair examples/udpong-debian-server "forever:$U/udpong -b $A1 -p $((port += 1))" \
			"$OURS_UDPONG -s $A1 -p $port -C 100 -S 800 -T e"
		pair examples/udpong-debian-client "forever:$OURS_UDPONG -b $A1 -p $((port += 1))" \
			"$U/udpong -s $A1 -b $A2 -p $port -C 100 -S 800 -T e"
	fi
fi

# --- 2. our rstream/riostream against Debian's --------------------------------------
OURS_RSTREAM="$(real_prog "$BUILD/examples/rstream")"
OURS_RIOSTREAM="$(real_prog "$BUILD/examples/riostream")"
OURS_RCOPY="$(real_prog "$BUILD/examples/rcopy")"
# interop NAME OURPROG DEBPROG "COMMON ARGS": our client against Debian's
# server and the reverse.
interop() {
	local name="$1" ours="$2" deb="$3" args="$4"
	if [ -z "$ours" ]; then
		wanted "interop/$name" && fail "interop/$name" "not built in $BUILD/examples"
		return
	fi
	check_lib "interop/$name" "$testlib" "$ours" || return
	check_lib "interop/$name" "$reflib" "$deb" || return
	if wanted "interop/$name/ours-to-debian"; then
		run_pair "interop/$name/ours-to-debian" "$reflib" "$deb -b $A1 -p $((port += 1)) $args" \
			"$testlib" "$ours -s $A1 -p $port $args"
		report "interop/$name/ours-to-debian"
	fi
	if wanted "interop/$name/debian-to-ours"; then
		run_pair "interop/$name/debian-to-ours" "$testlib" "$ours -b $A1 -p $((port += 1)) $args" \
			"$reflib" "$deb -s $A1 -p $port $args"
		report "interop/$name/debian-to-ours"
	fi
}
if true; then
	interop rstream "$OURS_RSTREAM" "$U/rstream" "-S 4096 -C 200 -I 2 -T v"
	interop rstream-big "$OURS_RSTREAM" "$U/rstream" "-S 300000 -C 10 -T v -T b"
	interop riostream "$OURS_RIOSTREAM" "$U/riostream" "-S 4096 -C 50 -I 4 -T v"
	interop riostream-big "$OURS_RIOSTREAM" "$U/riostream" "-S 300000 -C 4 -I 2 -T v -T b"
	if [ -n "$OURS_RCOPY" ] && wanted interop/rcopy; then
		head -c 2000000 /dev/urandom >"$WORK/irc.src"
		run_pair interop/rcopy/ours-to-debian "$reflib" "forever:$U/rcopy -p $((port += 1))" \
			"$testlib" "$OURS_RCOPY $WORK/irc.src $A1:$WORK/irc.d1 -p $port"
		[ "$pair_rc" = 0 ] && ! cmp -s "$WORK/irc.src" "$WORK/irc.d1" && pair_rc=1
		report interop/rcopy/ours-to-debian
		run_pair interop/rcopy/debian-to-ours "$testlib" "forever:$OURS_RCOPY -p $((port += 1))" \
			"$reflib" "$U/rcopy $WORK/irc.src $A1:$WORK/irc.d2 -p $port"
		[ "$pair_rc" = 0 ] && ! cmp -s "$WORK/irc.src" "$WORK/irc.d2" && pair_rc=1
		report interop/rcopy/debian-to-ours
	fi
fi

# --- 3. an unmodified TCP program over librspreload ----------------------------------
PRELOAD="$BUILD/src/preload/.libs/librspreload.so"
# rxe_counter NAME: one of the RDMA device's hardware counters.
rxe_counter() {
	rdma statistic show link "${RDMA_TEST_DEV:-rxe0}/1" 2>/dev/null |
		tr ' ' '\n' | sed -n "/^$1\$/{n;p;q}"
}
if wanted preload/socat; then
	if ! command -v socat >/dev/null; then
		fail preload/socat "socat is not installed (tests/setup.sh installs it)"
	elif [ ! -e "$PRELOAD" ]; then
		fail preload/socat "no $PRELOAD"
	else
		head -c 4000000 /dev/urandom >"$WORK/socat.src"
		before="$(rxe_counter sent_pkts)"
		export RDMA_RSOCKET_LOG="$WORK/preload.log"
		run_pair preload/socat "$testlib" \
			"env LD_PRELOAD=$PRELOAD socat -u TCP-LISTEN:$((port += 1)),bind=$A1,reuseaddr OPEN:$WORK/socat.dst,creat,trunc" \
			"$testlib" "env LD_PRELOAD=$PRELOAD socat -u OPEN:$WORK/socat.src TCP:$A1:$port,bind=$A2"
		unset RDMA_RSOCKET_LOG
		after="$(rxe_counter sent_pkts)"
		pkts=$((${after:-0} - ${before:-0}))
		why=
		if [ "$pair_rc" != 0 ]; then
			why="socat failed"
		elif ! cmp -s "$WORK/socat.src" "$WORK/socat.dst"; then
			why="the copy differs from the source"
		elif ! grep -q 'connected over rsocket' "$WORK/preload.log" ||
			! grep -q 'accepted rsocket' "$WORK/preload.log"; then
			why="librspreload did not log both ends of an rsocket connection"
		elif [ -z "$before" ] && [ "$TRANSPORT" = iwarp ]; then
			# siw keeps no packet counters (its traffic is the
			# kernel's TCP): the preload log above is the evidence.
			echo "# ${RDMA_TEST_DEV:-the device} has no packet counters"
		elif [ -z "$before" ]; then
			why="cannot read the RDMA device's counters (rdma statistic)"
		elif [ "$pkts" -lt 1000 ]; then
			# 4 MB need at least 4000000/4096 packets on the wire.
			why="only $pkts RDMA packets sent: the data did not go over RDMA"
		fi
		echo "# socat: $(stat -c %s "$WORK/socat.dst" 2>/dev/null) bytes copied, $pkts RDMA packets sent"
		[ -n "$why" ] && pair_rc=1 && pair_out+="
    $why
    preload log:
$(show "$WORK/preload.log" 2>/dev/null | head -20)"
		report preload/socat
	fi
fi

siw_testbed_report
finish
