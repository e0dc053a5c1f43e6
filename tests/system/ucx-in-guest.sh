#!/bin/bash
# UCX's own client/server example over its rdmacm connection manager, run
# inside the Soft-RoCE guest (or natively):
#   tests/vm/run-guest.sh tests/system/ucx-in-guest.sh
#
# UCX (Debian's libucx0) is the transport under Open MPI and MPICH; its
# libuct_rdmacm drives librdmacm in ways our own examples do not (it creates
# its QPs with ibv_create_qp on cm_id->pd right after route resolution).
# The example ucp_client_server.c that libucx-dev ships is compiled here at
# test time (it is not part of this tree), then a server and a client run in
# one guest for each communication mode the example has (stream, tag, am;
# tag over IPv6; tag with UCX's default transport list), each on:
#   ours    this build's librdmacm (PASS/FAIL), and
#   debian  Debian's reference librdmacm, to prove the test itself: a
#           failure there is a SKIP with its reason, not a failure of ours.
# Each case checks that both processes loaded librdmacm.so.1 from the
# intended directory (server: /proc/PID/maps; client: the dynamic loader's
# LD_DEBUG=files trace, which also shows libuct_rdmacm needing it), that
# both exit cleanly, and that every iteration's message arrived intact on
# both sides (the example prints it; it is compared with the string the
# example generates).
#
# Prints "PASS name" / "FAIL name" / "SKIP name" lines and a last line
# "N passed, N failed"; exits non-zero if anything failed.
#
# Environment:
#   RDMACM_BUILD_DIR   the build tree (not under /tmp when run in the VM)
#   RDMACM_REF_LIBDIR  Debian's unpacked librdmacm (default: the cache that
#                      tests/abi/fetch-reference.sh fills)
#   RDMACM_UCX_ONLY    a regular expression selecting cases by name
#   RDMACM_UCX_EXAMPLE the example's source (default: libucx-dev's)
#   RDMA_TEST_ADDR1, RDMA_TEST_ADDR6_1, RDMA_TEST_DEV
#   UCX_TLS, UCX_NET_DEVICES  override the defaults below (pass them into
#                      the guest with RDMACM_VM_PASS_ENV)
#   VERBOSE=1          show the output of passing cases too
set -u

BUILD="${RDMACM_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
REF="${RDMACM_REF_LIBDIR:-$HOME/.cache/rdmacm-ref/root/usr/lib/x86_64-linux-gnu}"
SRC="${RDMACM_UCX_EXAMPLE:-/usr/share/doc/libucx-dev/examples/ucp_client_server.c}"
ONLY="${RDMACM_UCX_ONLY:-}"
A4="${RDMA_TEST_ADDR1:-192.0.2.1}"
A6="${RDMA_TEST_ADDR6_1:-}"
DEV="${RDMA_TEST_DEV:-rxe0}"
T=60       # seconds per process
ITER=2     # iterations (-i): the example prints the first and the last
LEN=100    # message length (-s), terminating NUL included
WORK="$(mktemp -d "${TMPDIR:-/tmp}/ucx-tests.XXXXXX")" || exit 1
trap 'rm -rf "$WORK"' EXIT

# UCX's connection manager is rdmacm alone (no TCP fallback), on the
# test device, with RC verbs for the data: a case cannot pass without
# going through librdmacm and the RDMA device.
export UCX_SOCKADDR_TLS_PRIORITY=rdmacm
export UCX_NET_DEVICES="${UCX_NET_DEVICES:-$DEV:1}"
export UCX_TLS="${UCX_TLS:-rc_verbs}"
export UCX_WARN_UNUSED_ENV_VARS=n
# Rendezvous for every message: a send then completes only once the server
# has fetched the data.  The example's client force-closes its endpoint
# right after its last send completes; with eager sends (complete once
# posted) the server could see the peer's reset before that message and
# drop it, a race of the example on any librdmacm.
export UCX_RNDV_THRESH="${UCX_RNDV_THRESH:-32}"
# ... and the rendezvous is pinned to a GET by the server: then the
# client's send completes only after the server has read the data, and
# its receive is complete.  Left to "auto", UCX may pick a scheme whose
# completion at the client does not wait for the server's receive, and the
# client's close can overtake it (CI, 2026-11-25, once in about 40 runs:
# am mode, the second message lost to "Connection reset by remote peer";
# Debian's library passed in the same run).
export UCX_RNDV_SCHEME="${UCX_RNDV_SCHEME:-get_zcopy}"
# The rendezvous threshold does not apply to messages that fit UCX's
# "short" protocol (an inline send, complete once posted): the example's
# 100-byte messages went that way, and the race above still hit the am
# mode twice in CI (2026-11-25).  A zero bcopy threshold leaves no message
# short, so the rendezvous threshold decides.
export UCX_BCOPY_THRESH="${UCX_BCOPY_THRESH:-0}"

. "$(dirname "$0")/verdict.sh"

# shellcheck source=transport.sh
. "$(dirname "$0")/transport.sh"
ulimit -l unlimited 2>/dev/null || echo "# warning: locked-memory limit is $(ulimit -l) KiB"
if [ "$TRANSPORT" = iwarp ]; then
	skip ucx "UCX's rdmacm transport needs RC verbs on an InfiniBand/RoCE port"
	finish
fi

ourlib="$(realpath "$BUILD/src/.libs" 2>/dev/null)"
if [ ! -e "$ourlib/librdmacm.so.1" ]; then
	fail ucx/setup "no built library in $BUILD/src/.libs"
	finish
fi
if [ ! -e "$REF/librdmacm.so.1" ]; then
	fail ucx/setup "no Debian reference library in $REF (run tests/abi/fetch-reference.sh)"
	finish
fi
reflib="$(realpath "$REF")"
if [ ! -f "$SRC" ]; then
	fail ucx/setup "no $SRC (tests/setup.sh installs libucx-dev)"
	finish
fi

# The example is compiled at test time from the installed copy.
prog="$WORK/ucp_client_server"
if ! cc -O1 -o "$prog" "$SRC" -lucp -lucs >"$WORK/cc.log" 2>&1; then
	show "$WORK/cc.log"
	fail ucx/build "cannot compile $SRC (libucx-dev installed?)"
	finish
fi

# The line the example prints for each message: the string it generates
# ('A'..'Z' repeated, LEN-1 characters) and a full stop.
alphabet=ABCDEFGHIJKLMNOPQRSTUVWXYZ
expected=""
for ((i = 0; i < LEN - 1; i++)); do
	expected+=${alphabet:i%26:1}
done
expected+="."

# mapped_from PID: the directory of the librdmacm.so.1 the process maps.
mapped_from() {
	local l
	l="$(grep -o '/[^ ]*/librdmacm\.so[.0-9]*$' "/proc/$1/maps" 2>/dev/null | head -1)"
	[ -n "$l" ] && dirname "$(realpath "$l")"
}

# loaded_from LDLOG: the same from the loader's trace ("calling init:").
loaded_from() {
	local l
	l="$(sed -n 's/.*calling init: \(.*librdmacm\.so\.1\)$/\1/p' "$@" 2>/dev/null | head -1)"
	[ -n "$l" ] && dirname "$(realpath "$l")"
}

# stop PID: end a background process; UCX's fatal-signal handler may keep a
# crashed one from dying on SIGTERM, so SIGKILL follows.
stop() {
	local i
	kill "$1" 2>/dev/null
	for ((i = 0; i < 50; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# run_case NAME LIBDIR PORT MODE [-6]: one server and one client.  Prints
# the reason of a failure on stdout; returns 0 when everything checked out.
run_case() {
	local name=$1 dir=$2 port=$3 mode=$4 v6=${5:-} addr=$A4
	local d="$WORK/${name//\//_}" spid crc got n
	mkdir -p "$d"
	[ -n "$v6" ] && addr=$A6
	# exec: $! is the example itself (its maps are read below); line
	# buffering: it is killed at the end, its output must be out by then.
	(LD_LIBRARY_PATH="$dir" exec stdbuf -oL "$prog" -c "$mode" -p "$port" \
		-i $ITER -s $LEN $v6 >"$d/server.out" 2>&1) &
	spid=$!
	if ! wait_output "$d/server.out" 'server is listening' $T $spid; then
		stop $spid
		echo "the server did not listen"
		return 1
	fi
	got="$(mapped_from $spid)"
	LD_DEBUG=files LD_DEBUG_OUTPUT="$d/ld" LD_LIBRARY_PATH="$dir" \
		timeout -k 5 $T "$prog" -c "$mode" -a "$addr" -p "$port" \
		-i $ITER -s $LEN $v6 >"$d/client.out" 2>&1
	crc=$?
	# The server waits for the next client after each one: once it says
	# so (or has died, or the client failed), stop it.
	[ $crc -eq 0 ] && wait_output "$d/server.out" 'Waiting for connection' $T $spid 2
	stop $spid
	if [ "$got" != "$dir" ]; then
		echo "the server mapped librdmacm from '${got:-nowhere}', not $dir"
		return 1
	fi
	got="$(loaded_from "$d"/ld.*)"
	if [ "$got" != "$dir" ]; then
		echo "the client loaded librdmacm from '${got:-nowhere}', not $dir"
		return 1
	fi
	if ! grep -q 'needed by .*libuct_rdmacm' "$d"/ld.*; then
		echo "the client never loaded UCX's libuct_rdmacm"
		return 1
	fi
	if [ $crc -ne 0 ]; then
		echo "the client exited with status $crc$(grep -m1 -o 'Caught signal.*' "$d/client.out" | sed 's/^/ (/;s/$/)/')"
		return 1
	fi
	n="$(grep -cxF "$expected" "$d/client.out")"
	if [ "$n" != $ITER ]; then
		echo "the client printed the message $n times, not $ITER"
		return 1
	fi
	n="$(grep -cxF "$expected" "$d/server.out")"
	if [ "$n" != $ITER ] || [ "$(grep -c 'UCX data message was received' "$d/server.out")" != $ITER ]; then
		echo "the server received the intact message $n times, not $ITER"
		return 1
	fi
	return 0
}

port=13337
for lib in ours debian; do
	dir=$ourlib
	[ $lib = debian ] && dir=$reflib
	# tag/alltls: UCX's own transport choice (UCX_TLS=all, as a user
	# who sets only the two rdmacm variables gets); rdmacm still
	# connects, the data may take shared memory.
	for c in stream tag am tag/ipv6 tag/alltls; do
		name="ucx/$lib/$c"
		wanted "$name" || continue
		port=$((port + 1))
		v6=""
		if [ "${c#*/}" = ipv6 ]; then
			if [ -z "$A6" ]; then
				skip "$name" "no IPv6 address (RDMA_TEST_ADDR6_1)"
				continue
			fi
			v6=-6
		fi
		tls=$UCX_TLS
		[ "${c#*/}" = alltls ] && tls=all
		why="$(UCX_TLS=$tls run_case "$name" "$dir" $port "${c%/*}" $v6)"
		ok=$?
		if [ $ok = 0 ]; then
			pass "$name"
			[ "${VERBOSE:-0}" = 1 ] && show "$WORK/${name//\//_}"/*.out
			continue
		fi
		show "$WORK/${name//\//_}"/*.out
		# The example's own race, which loses a message of the am and
		# stream modes (the server saw the client's reset first; 1 in
		# 6 to 20 under load on either library): known, never a pass.
		if [[ "${c%/*}" =~ ^(am|stream)$ ]] && grep -q "Connection reset by remote peer" \
			"$WORK/${name//\//_}/server.out"; then
			xfail "$name" "BUGS.md ucx-force-close: $why, after the client's reset"
		elif [ $lib = debian ]; then
			skip "$name" "fails on Debian's library too: $why"
		else
			fail "$name" "$why"
		fi
	done
done
finish
