#!/bin/bash
# rsocket keepalive, run inside the Soft-RoCE guest:
#   tests/vm/run-guest.sh tests/system/keepalive-in-guest.sh
#
# Two ends of a stream connection (tests/system/rs_keepalive_test) exchange
# a byte and block in rrecv; then one end is taken away and the other must
# notice within idle + interval x count seconds (SO_KEEPALIVE with
# TCP_KEEPIDLE=$IDLE, TCP_KEEPINTVL=$INTVL, TCP_KEEPCNT=$CNT), as TCP does:
#   kill-client   the connecting end keeps alive; the listener is SIGKILLed
#   kill-server   the listener keeps alive (the accepted socket inherits
#                 it); the connecting end is SIGKILLed
#   no-keepalive  the same kill without SO_KEEPALIVE: the killed process's
#                 kernel ends its connection (the CM's DISCONNECTED), and
#                 the reader gets end-of-stream at once, as a TCP reader
#                 gets the FIN (BUGS.md rsocket-dead-peer: it used to
#                 sleep for ever)
# A killed process's kernel always ends its connections so, so in the
# kill cases the reader learns of the end from the CM before any probe
# could: they check the bound, and say which ended the wait.  The probes'
# own verdict (a peer gone without a word: its host or link down) needs a
# second host that vanishes: the unit tests (rsocket_keepalive) prove it.
#   stopped-peer  the peer is SIGSTOPped: its NIC still acknowledges, so,
#                 as with TCP, the connection is alive: still blocked after
#                 the bound; then it is resumed and killed, and that is
#                 noticed within the bound
#   fd-count      not keepalive: the descriptors one connected rsocket
#                 costs on each side, on our library and on Debian's
#                 (tests/system/rs_fdcount; README); ours must not cost
#                 more
# The bound is checked, with one second of slack for the guest's
# scheduling (qemu TCG), on the reader's own clock from the handshake, the
# last time it heard from the peer; the times are printed.
# Prints PASS/FAIL lines and "N passed, N failed".
set -u

BUILD="${RDMACM_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
A1="${RDMA_TEST_ADDR1:-192.0.2.1}"
ONLY="${RDMACM_SYS_ONLY:-}"
IDLE=2 INTVL=1 CNT=2
BOUND=$((IDLE + INTVL * CNT))
. "$(dirname "$0")/verdict.sh"
prog="$BUILD/tests/system/rs_keepalive_test"
built setup "$prog" "$BUILD/tests/system/rs_fdcount" || finish
log="$(mktemp -d "${TMPDIR:-/tmp}/ka.XXXXXX")"
trap 'rm -rf "$log"' EXIT
ulimit -l unlimited 2>/dev/null
port=7700

now_ms() { date +%s%3N; }

# run NAME READER(listen|connect) KEEP SIGNAL
# Start the pair, take the non-reader away with SIGNAL, report how long
# the reader took to see it (or that it did not, within BOUND + 3 s).
pair() {
	local name=$1 reader=$2 keep=$3 sig=$4 rkeep pkeep lpid cpid rpid ppid
	local rout pout t0 t1 waited=$((BOUND + 3))
	port=$((port + 1))
	if [ "$reader" = listen ]; then rkeep=$keep pkeep=0; else rkeep=0 pkeep=$keep; fi
	"$prog" listen $port "$rkeep" $IDLE $INTVL $CNT >"$log/$name.l" 2>&1 &
	lpid=$!
	wait_output "$log/$name.l" LISTENING 10 ||
		{ fail "$name" "listener: $(cat "$log/$name.l")"; kill -9 $lpid; return; }
	"$prog" connect "$A1" $port "$pkeep" $IDLE $INTVL $CNT >"$log/$name.c" 2>&1 &
	cpid=$!
	if ! wait_output "$log/$name.l" READY 20 || ! wait_output "$log/$name.c" READY 20; then
		fail "$name" "no connection: $(cat "$log/$name.l" "$log/$name.c")"
		kill -9 $lpid $cpid 2>/dev/null
		return
	fi
	if [ "$reader" = listen ]; then
		rpid=$lpid ppid=$cpid rout="$log/$name.l" pout="$log/$name.c"
	else
		rpid=$cpid ppid=$lpid rout="$log/$name.c" pout="$log/$name.l"
	fi
	t0=$(now_ms)
	kill -"$sig" $ppid
	if wait_output "$rout" RESULT $waited; then
		t1=$(now_ms)
		echo "$name: $(grep RESULT "$rout") after $((t1 - t0)) ms"
		elapsed=$((t1 - t0))
	else
		elapsed=-1
	fi
	result=$(grep RESULT "$rout")
	if [ "$sig" = STOP ] && [ -z "$result" ]; then
		# still watched: killed now, it must be noticed in time
		kill -CONT $ppid
		t0=$(now_ms)
		kill -9 $ppid
		wait_output "$rout" RESULT $waited && after_cont=$(($(now_ms) - t0))
		result=$(grep RESULT "$rout")
	fi
	kill -9 $rpid $ppid 2>/dev/null
	wait $rpid $ppid 2>/dev/null || true
	VERBOSE_OUT="$(cat "$rout" "$pout")"
}

# ended_within_bound NAME: the reader's wait ended within the bound, by
# the probes (ETIMEDOUT) or by the CM's word (end-of-stream).
ended_within_bound() {
	local since how
	case "$result" in
	"RESULT -1 ETIMEDOUT "*) how="the probes: ETIMEDOUT" ;;
	"RESULT 0 "*) how="the CM's DISCONNECTED: end-of-stream" ;;
	*)
		fail "$1" "no end seen: $VERBOSE_OUT"
		return
		;;
	esac
	since=${result##* }
	if [ "$since" -le $(((BOUND + 1) * 1000)) ]; then
		pass "$1" "$how, $since ms after the last word, $elapsed ms after the kill, bound ${BOUND}s"
	else
		fail "$1" "$how took $since ms, bound ${BOUND}s"
	fi
}

if wanted kill-client; then
	pair kill-client connect 1 KILL
	ended_within_bound kill-client
fi

if wanted kill-server; then
	pair kill-server listen 1 KILL
	ended_within_bound kill-server
fi

if wanted no-keepalive; then
	pair no-keepalive connect 0 KILL
	if [ "$elapsed" = -1 ]; then
		fail no-keepalive "still blocked $((BOUND + 3)) s after the kill (BUGS.md rsocket-dead-peer)"
	else
		case "$result" in
		"RESULT 0 "*) pass no-keepalive "end-of-stream $elapsed ms after the kill, without keepalive" ;;
		*) fail no-keepalive "not end-of-stream: $result: $VERBOSE_OUT" ;;
		esac
	fi
fi

if wanted stopped-peer; then
	after_cont=-1
	pair stopped-peer connect 1 STOP
	if [ "$elapsed" = -1 ] && [ "$after_cont" -ge 0 ] &&
		[ "$after_cont" -le $(((BOUND + 1) * 1000)) ]; then
		pass stopped-peer "alive while stopped (its NIC answers, as TCP's kernel does); killed after SIGCONT: noticed after $after_cont ms"
	else
		fail stopped-peer "elapsed $elapsed, after SIGCONT+KILL $after_cont, $result: $VERBOSE_OUT"
	fi
fi
# fdcount LIBDIR: "CONNECTED n ACCEPTED m" for one connection on that library.
fdcount() {
	local p=$((port += 1)) s out
	LD_LIBRARY_PATH="$1" "$BUILD/tests/system/rs_fdcount" server $p >"$log/fd.s" 2>&1 &
	s=$!
	wait_output "$log/fd.s" LISTENING 10 || { kill $s; return; }
	out=$(LD_LIBRARY_PATH="$1" timeout 30 "$BUILD/tests/system/rs_fdcount" client "$A1" $p 2>&1)
	wait $s
	echo "$out $(grep ACCEPTED "$log/fd.s")"
}

if wanted fd-count; then
	REF="${RDMACM_REF_ROOT:-$HOME/.cache/rdmacm-ref/root}/usr/lib/x86_64-linux-gnu"
	ours=$(fdcount "$BUILD/src/.libs")
	if [ ! -e "$REF/librdmacm.so.1" ]; then
		info fd-count "ours: $ours; no Debian library in $REF (tests/abi/fetch-reference.sh)"
	fi
	debs=$([ -e "$REF/librdmacm.so.1" ] && fdcount "$REF")
	read -r _ oc _ oa <<<"$ours"
	read -r _ dc _ da <<<"${debs:-x 999 x 999}"
	if [ -z "${oc:-}" ] || [ -z "${oa:-}" ]; then
		fail fd-count "ours: $ours"
	elif [ "$oc" -le "$dc" ] && [ "$oa" -le "$da" ]; then
		pass fd-count "per connected rsocket: ours $oc (connect) / $oa (accept), Debian's ${debs:+$dc / $da}"
	else
		fail fd-count "ours $oc/$oa, Debian's $dc/$da"
	fi
fi
finish
