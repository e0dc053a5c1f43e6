#!/bin/bash
# The example programs under valgrind memcheck, in the Soft-RoCE guest:
#   tests/vm/run-guest.sh tests/system/run-memcheck.sh
# Each pair (server and client, both under valgrind) must exit 0 with no
# memcheck error: invalid accesses, uses of uninitialised values, bad
# frees and definite leaks all count (--error-exitcode).  The only
# suppressions, in valgrind.supp, are for libibverbs and provider
# internals.  Prints "PASS memcheck/<pair>" / "FAIL memcheck/<pair>" and a
# summary line.
#
# (cmtime is left out: it adds nothing ucmatose does not cover, and each pair
# takes about 45 s under valgrind and TCG.)
# Environment: RDMACM_BUILD_DIR (the build tree), RDMACM_MEMCHECK_ONLY (a
# regular expression selecting pairs), VERBOSE=1, VALGRIND_OPTS (extra
# valgrind options; valgrind reads it itself).
set -u

BUILD=${RDMACM_BUILD_DIR:-/tmp/b1}
A1=${RDMA_TEST_ADDR1:-192.0.2.1}
A2=${RDMA_TEST_ADDR2:-$A1}
ONLY=${RDMACM_MEMCHECK_ONLY:-}
here=$(cd "$(dirname "$0")" && pwd)
T=240 # valgrind under TCG is slow: generous limits
passed=0
failed=0
log=$(mktemp -d "${TMPDIR:-/tmp}/memcheck.XXXXXX")
trap 'rm -rf "$log"' EXIT
ulimit -l unlimited 2>/dev/null

libdir=$(realpath "$BUILD/src/.libs")
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
vg=(valgrind --tool=memcheck --error-exitcode=99 --leak-check=full
	--errors-for-leak-kinds=definite --show-leak-kinds=definite
	--track-origins=yes --suppressions="$here/valgrind.supp" -q)

if ! command -v valgrind >/dev/null; then
	echo "FAIL memcheck/setup: valgrind is not installed (tests/setup.sh)"
	exit 1
fi

prog() {
	local p=$BUILD/examples/.libs/$1
	[ -x "$p" ] || p=$BUILD/examples/$1
	echo "$p"
}

# pair NAME SERVER "SERVER ARGS" "CLIENT ARGS" [CLIENT]
pair() {
	local name=$1 s c spid src=0 rc=0 try t0=$SECONDS
	[ -z "$ONLY" ] || [[ "$name" =~ $ONLY ]] || return 0
	s=$(prog "$2")
	c=$(prog "${5:-$2}")
	: >"$log/s"
	: >"$log/c"
	# shellcheck disable=SC2086
	timeout -k 5 $T "${vg[@]}" "$s" $3 >"$log/s" 2>&1 &
	spid=$!
	sleep 8 # the server starts slowly under valgrind
	for try in 1 2 3 4 5; do
		rc=0
		# shellcheck disable=SC2086
		timeout -k 5 $T "${vg[@]}" "$c" $4 >>"$log/c" 2>&1 || rc=$?
		[ "$rc" = 0 ] && break
		kill -0 "$spid" 2>/dev/null || break
		[ "$rc" = 99 ] || [ "$rc" = 124 ] && break
		echo "(client attempt $try: exit $rc; retrying)" >>"$log/c"
		sleep 3
	done
	wait "$spid" || src=$?
	if [ "$rc" = 0 ] && [ "$src" = 0 ]; then
		[ "${VERBOSE:-0}" = 1 ] && sed 's/^/    /' "$log/s" "$log/c"
		echo "PASS memcheck/$name ($((SECONDS - t0))s)"
		passed=$((passed + 1))
	else
		echo "    server: $2 $3 (exit $src)"
		sed 's/^/    /' "$log/s"
		echo "    client: ${5:-$2} $4 (exit $rc)"
		sed 's/^/    /' "$log/c"
		echo "FAIL memcheck/$name (server exit $src, client exit $rc; 99 = memcheck errors)"
		failed=$((failed + 1))
	fi
}

port=7570
pair rping rping "-s -a $A1 -p $((port += 1)) -C 3" "-c -a $A1 -I $A2 -p $port -C 3"
pair ucmatose ucmatose "-b $A1 -p $((port += 1)) -c 2 -C 3" "-s $A1 -b $A2 -p $port -c 2 -C 3"
pair udaddy udaddy "-b $A1 -p $((port += 1)) -c 1" "-s $A1 -b $A2 -p $port -c 1"
pair rdma_server_client rdma_server "-s $A1 -p $((port += 1))" "-s $A1 -p $port" rdma_client
# Datagram rsockets: QPs, the UDP resolver, destinations and queues.
pair rudping rudping "-b $A1 -p $((port += 1)) -T a" "-s $A1 -b $A2 -p $port -C 20 -T a"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
