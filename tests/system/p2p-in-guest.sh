#!/bin/bash
# Peer-to-peer mode (rdma_cm_p2p(7)) over a real RDMA device: one guest
# (both ends on the guest's two addresses), or one side of two guests.
#
#   tests/vm/run-guest.sh tests/system/p2p-in-guest.sh
#   tests/vm/run-two-guests.sh tests/system/p2p-in-guest.sh -- \
#                              tests/system/p2p-in-guest.sh
#
# One "PASS name" / "FAIL name: why" line per scenario, then
# "N passed, N failed".  With two guests (RDMACM_VM_GUEST=1 or 2) each
# guest runs its half of every p2pmesh scenario: ranks alternate between
# the guests, so every pair of ranks on different guests connects across
# the link.  Scenarios (IPv4, and IPv6 when RDMA_TEST_ADDR6_* are set):
#   mutual     2 ranks connect to each other at once, RDMACM_P2P_ITER
#              (default 100) times in a row
#   late       2 ranks, the second started 2 s after the first, whose
#              REQ finds no listener and is sent again (the library's
#              log must say so), 2 iterations
#   skew       the same with 0..2 s between the two rdma_connect calls
#   pairs4     4 connections between the same pair at once, default tags
#              (paired in the order they come: each end learns which of
#              the peer's it got from its hello), then explicit tags
#              (RDMA_OPTION_ID_P2P_TAG: connection k pairs with k)
#   mesh64     (IPv4) 64 ranks, every pair from both sides, default
#              settings, no start barrier (RDMACM_P2P_MESH64=0 skips it,
#              RDMACM_P2P_MESH64_BARRIER=1 adds one)
#   mesh8      8 ranks, every pair from both sides: 28 connections,
#              each connected once routed, the adopting end's route left
#              for later (RDMA_OPTION_ID_PEER2PEER before resolving);
#              mesh8-resolve-all the same, every route resolved and then
#              every connect made (p2pmesh -R -A); mesh8-drain the
#              first with a loop that reads every event per wake-up
#              (p2pmesh -D, as UCX does; not with -B in
#              RDMACM_P2P_MESH_ARGS)
#   pair       the looped pair of an outside program (p2p_pair_test)
#   pair-load  the same under load: a CPU hog per CPU, the library's random
#              delays (RDMA_CM_FAULT_DELAY_MS), skewed connects, own ports
#              and one port; RDMACM_P2P_LOAD_ITER iterations per variant
#              (default 500; set it higher for a longer run)
#   restart    one end SIGKILLed and restarted: the pair forms again
#   forked     one end's process forks mid-loop; parent and child (an end
#              of its own) each loop with an end of the peer
#   api        (one guest only) cm_p2p_test: old-ABI binary, surfaced
#              requests, non-p2p peers, hostile headers, hold time, a
#              connect nobody claims gives up (UNREACHABLE, -ETIMEDOUT)
#
# Environment: RDMACM_BUILD_DIR (default: build/ of this checkout),
# RDMACM_P2P_ONLY (a regular expression over scenario names),
# RDMACM_P2P_ITER, RDMACM_P2P_SKEW_ITER (default 8), RDMACM_P2P_PAIR_ITER,
# RDMACM_P2P_LOAD_ITER, RDMACM_P2P_TIMEOUT
# (seconds each p2pmesh process may take, default 300), VERBOSE=1;
# RDMACM_P2P_MESH_ARGS (more p2pmesh options for every scenario, e.g.
# -B), RDMA_CM_P2P_DEBUG=1 puts the library's matching log in the output.
set -u

BUILD="${RDMACM_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
MESH=$BUILD/examples/p2pmesh
API=$BUILD/tests/system/cm_p2p_test
PAIR=$BUILD/tests/system/p2p_pair_test
A1="${RDMA_TEST_ADDR1:-192.0.2.1}"
A2="${RDMA_TEST_ADDR2:-$A1}"
A6_1="${RDMA_TEST_ADDR6_1:-}"
A6_2="${RDMA_TEST_ADDR6_2:-$A6_1}"
ITER="${RDMACM_P2P_ITER:-100}"
SKEW_ITER="${RDMACM_P2P_SKEW_ITER:-8}"
LIMIT="${RDMACM_P2P_TIMEOUT:-300}"
ONLY="${RDMACM_P2P_ONLY:-}"
GUEST="${RDMACM_VM_GUEST:-}"
# With two guests the scripts run on both; which ranks are ours.
two=no
has_addr() { ip addr show | grep -qE "inet6? $1/"; }
if [ -n "$GUEST" ] && ! { has_addr "$A1" && has_addr "$A2"; }; then
	two=yes
fi
# On iWARP every mesh keeps MPA's order (p2pmesh -S): the end whose request
# formed the connection (RDMA_OPTION_ID_INITIATOR = 1) sends first.  Every
# mesh, on every transport, checks that exactly one end of each connection
# reads 1.
# shellcheck source=transport.sh
. "$(dirname "$0")/transport.sh"
ORDER=
[ "$TRANSPORT" = iwarp ] && ORDER=-S
out=$(mktemp -d "${TMPDIR:-/tmp}/p2p.XXXXXX")
trap 'rm -rf "$out"' EXIT

. "$(dirname "$0")/verdict.sh"

# Programs of ours that were not built fail the suite, never skip it.
built p2p/programs "$MESH" "$API" "$PAIR" || finish

# Which guest rank r lives on when there are two (alternating).
mine() {
	[ $two = no ] && return 0
	[ $(($1 % 2 + 1)) = "$GUEST" ]
}

# mesh NAME N PORT ADDR_EVEN ADDR_ODD [p2pmesh options]: run the ranks of
# an N-process mesh that live here and check their accounting.
# The unmodified siw leaves a first message unread now and then
# (tests/system/BUGS.md siw-accept-race): the scenarios with the most
# connections, skew (hit once in a full run on 2026-11-24: the first
# receive flushed), the looped pair and pairs4 (one connection of four
# without data in 2 of 2 runs on 2026-11-25; 12/12 on the test-bed
# driver) run on the test-bed driver
# (RDMACM_VM_SIW_DRAIN=1, suite p2p-iwarp-testbed), or anywhere with
# RDMACM_P2P_IWARP_ALL=1.  So do the 8-rank meshes: a listener that starts
# while a peer's refused connect is being retried can lose a connection
# for good on the unmodified siw (race C: 2 runs of mesh8-resolve-all in
# full suites, 3 in 50 under load; 0 in 50 on the test-bed driver).
siw_race_skip() {
	local race
	[ "${RDMACM_VM_TRANSPORT:-}" = siw ] || return 1
	[ "${RDMACM_P2P_IWARP_ALL:-0}" != 1 ] || return 1
	[ "${RDMACM_VM_SIW_DRAIN:-0}" != 1 ] || return 1
	case "$1" in
	mutual/* | late/* | skew/* | lower8/* | pair/* | pair-load*/* | forked/* | pairs4/* | pairs4-tags/*)
		race="accept race (tests/system/BUGS.md siw-accept-race)" ;;
	mesh8/* | mesh8-resolve-all/* | mesh8-drain/* | mesh64/*)
		race="listen race (tests/system/BUGS.md siw-listen-race)" ;;
	*) return 1 ;;
	esac
	skip "$1" "siw's $race; runs in p2p-iwarp-testbed"
}

mesh() {
	local name=$1 n=$2 port=$3 ae=$4 ao=$5
	shift 5
	local orig=("$@")
	local addrs=() pids=() r rc=0 conns=0 want c
	local log="$out/${name//\//_}"
	wanted "$name" || return 0
	siw_race_skip "$name" && return 0
	for ((r = 0; r < n; r++)); do
		if ((r % 2)); then addrs+=("$ao"); else addrs+=("$ae"); fi
	done
	for ((r = 0; r < n; r++)); do
		mine $r || continue
		# late/*: the ranks after the first start late_s seconds later.
		((r > 0)) && [ -n "${late_s:-}" ] && sleep "$late_s"
		# shellcheck disable=SC2086 # extra options, split on purpose
		timeout "$LIMIT" "$MESH" -q -p "$port" "$@" $ORDER \
			${RDMACM_P2P_MESH_ARGS:-} $r "${addrs[@]}" \
			>"$log.$r" 2>&1 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || rc=1
	done
	for f in "$log".*; do
		c=$(sed -n 's/.*OK connections=\([0-9]*\).*/\1/p' "$f")
		conns=$((conns + ${c:-0}))
	done
	# Every rank counts each of its connections once per iteration.
	local iters=1 per=1 o
	set -- "$@"
	while [ $# -gt 0 ]; do
		case $1 in
		-i) iters=$2; shift ;;
		-c) per=$2; shift ;;
		esac
		shift
	done
	if [ $two = yes ]; then
		# Our ranks' view: half the ranks, each with n-1 peers.
		want=$(( ( (n + 1) / 2 + (GUEST == 2 ? -((n % 2)) : 0) ) * (n - 1) * per * iters ))
	else
		want=$((n * (n - 1) * per * iters))
	fi
	# must_log: a line rank 0's log (where it runs here) must show.
	if [ -n "${must_log:-}" ] && mine 0 && ! grep -q "$must_log" "$log.0"; then
		fail "$name" "rank 0's log lacks: $must_log"
		show "$log".*
	elif [ $rc -eq 0 ] && [ "$conns" -eq "$want" ]; then
		pass "$name" "$((n * (n - 1) / 2 * per)) connections per iteration, $iters iteration(s); ranks counted $conns ends"
		[ "${VERBOSE:-0}" = 1 ] && show "$log".*
	elif lost_ack "$name" "$log"; then
		xfail "$name" "$LOST_ACK_BUG: a SEND on one rxe device never completed (exit status $rc, $conns of $want connection ends)"
		show "$log".*
	else
		fail "$name" "exit status $rc, $conns connection ends counted, expected $want"
		show "$log".*
	fi
	rm -f "$log".*
}

# The mutual pair in one guest, which waits for every send completion,
# meets rxe's lost ACK on one device now and then (tests/system/BUGS.md,
# LOST_ACK_BUG): the lower rank's own SEND never completes, neither with
# success nor with an error, while the peer received it.  Exactly that
# signature is an XFAIL, counted apart; anything else fails.  No retry:
# the library's own failures must show.
LOST_ACK_BUG="BUGS.md rxe-lost-ack"
lost_ack() {
	[[ "$1" =~ ^mutual/ ]] && [ "$two" = no ] &&
		[ "$TRANSPORT" != iwarp ] &&
		grep -q 'established 1 sent 0 received 1' "$2".* &&
		! grep -q 'REJECTED\|UNREACHABLE\|CONNECT_ERROR' "$2".*
}

# The pair, written as an outside program (tests/system/p2p_pair_test.c:
# poll with a 100 ms timeout, then a blocking rdma_get_cm_event), both ends
# started together, RDMACM_P2P_PAIR_ITER iterations (default 100; pair-load
# below runs it thousands of times under load).  Both
# listen on one port across two guests; in one guest, where both addresses
# are on the same device, on two (the kernel refuses a request to one of
# two same-port listeners there with REJ 28 before any library sees it).
# one_port=1 or 0 says which, wherever it runs (one port in one guest:
# such an attempt may fail, but never the pair's next one, p2p_pair_test).  pair_env: more variables
# for both ends; pair_load=1: under the CPU hogs below (a longer bound).
#
# pair_start FAM PORT X Y ITER NAME starts this host's ends of a pair in
# the background; pair_judge NAME ITER waits for them and gives the
# verdict.  pair runs one pair; pair_load runs several at once.
declare -A pair_pids
pair_start() {
	local fam=$1 port=$2 x=$3 y=$4 it=$5 name=$6 r
	local addrs=("$x" "$y") ports=("$2" "$2") env=(${pair_env:-})
	local log="$out/${name//\//_}"
	local same=${one_port:-}
	[ -n "$same" ] || { [ $two = yes ] && same=1 || same=0; }
	if [ "$same" != 1 ]; then
		ports=("$port" $((port + 1)))
	elif [ $two = no ]; then
		env+=(P2P_PAIR_ONE_PORT=1)
	fi
	local limit=$LIMIT
	# Under load: 2 s an iteration at most.
	[ "${pair_load:-0}" = 1 ] && limit=$((it * 2 + 120))
	pair_pids[$name]=
	for r in 0 1; do
		mine $r || continue
		env RDMACM_HX_TIMEOUT=120 "${env[@]}" timeout "$limit" "$PAIR" \
			pair "${addrs[$r]}" "${addrs[$((1 - r))]}" \
			"${ports[$r]}" "$it" "${ports[$((1 - r))]}" \
			>"$log.$r" 2>&1 &
		pair_pids[$name]+=" $!"
	done
}
pair_judge() {
	local name=$1 it=$2 rc=0 p
	local log="$out/${name//\//_}"
	for p in ${pair_pids[$name]}; do
		wait "$p" || rc=1
	done
	if [ $rc -eq 0 ] && ! grep -q '^FAIL' "$log".*; then
		pass "$name" "$it iterations, poll then blocking rdma_get_cm_event$(sed -n 's/.*one connection each, \([0-9]*\) attempts refused.*/; \1 refused by the kernel/p' "$log".* | head -1)"
	else
		fail "$name" "exit status $rc"
		show "$log".*
	fi
	rm -f "$log".*
}
pair() {
	local name=${6:-pair/$1}
	wanted "$name" || return 0
	siw_race_skip "$name" && return 0
	pair_start "$1" "$2" "$3" "$4" "$5" "$name"
	pair_judge "$name" "$5"
}

# A process forks between two connections of its loop (p2p_pair_test
# forked): the child makes an end of its own and loops with the peer's
# second end while the parent goes on with the first.  Four ports, so
# that no two listeners share one on one device.  Both loops form every
# connection, and the child's exit without cleanup disturbs nothing.
forked_pair() {
	local port=$2 x=$3 y=$4 it=$5 name="forked/$1" p
	local log="$out/${name//\//_}" # pair_judge's
	wanted "$name" || return 0
	siw_race_skip "$name" && return 0
	pair_pids[$name]=
	if mine 0; then
		env RDMACM_HX_TIMEOUT=120 timeout "$LIMIT" "$PAIR" forked \
			"$x" "$y" "$port" "$it" $((port + 1)) $((port + 2)) \
			$((port + 3)) >"$log.0" 2>&1 &
		pair_pids[$name]+=" $!"
	fi
	if mine 1; then
		for p in 1 3; do
			env RDMACM_HX_TIMEOUT=120 timeout "$LIMIT" "$PAIR" pair \
				"$y" "$x" $((port + p)) "$it" $((port + p - 1)) \
				>"$log.$p" 2>&1 &
			pair_pids[$name]+=" $!"
		done
	fi
	pair_judge "$name" "$it"
}

# One busy loop per CPU of this host (its PIDs): the load under which
# pair-load runs.
cpu_hogs() {
	local n
	n=$(nproc)
	for ((; n > 0; n--)); do
		sh -c 'while :; do :; done' >/dev/null 2>&1 &
		echo $!
	done
}

# Pairs under load: no outcome of p2p mode may depend on timing
# (rdma_cm_p2p(7)).  The pair loop with every CPU busy (a hog per CPU),
# the library's random delays before each event and timer
# (RDMA_CM_FAULT_DELAY_MS=20), and connects skewed at random (one end's
# connect, the ends taking turns, by up to 3 s one iteration in ten and
# by up to 30 ms in the others), on ports of their
# own and on one port (in one guest: two addresses of one device).  The
# four variants run at the same time, beside the hogs (four pairs of
# processes contend with them and with each other), each
# RDMACM_P2P_LOAD_ITER iterations (default 500: 2,000 over the four, in
# one guest and across two).
pair_load() {
	local fam=$1 port=$2 x=$3 y=$4 it=${RDMACM_P2P_LOAD_ITER:-500}
	local fault="RDMA_CM_FAULT_DELAY_MS=20" skewed="P2P_PAIR_SKEW_MS=3000 P2P_PAIR_SKEW_EVERY=10"
	local names=() hogs=() v n
	local variants=("pair-load 0 $fault" "pair-load-skew 0 $fault $skewed"
		"pair-load-one-port 1 $fault" "pair-load-one-port-skew 1 $fault $skewed")
	for v in "${variants[@]}"; do
		set -- $v
		n=$1/$fam
		if wanted "$n" && ! siw_race_skip "$n"; then
			[ ${#hogs[@]} -gt 0 ] || hogs=($(cpu_hogs))
			one_port=$2 pair_env="${*:3}" pair_load=1 \
				pair_start "$fam" "$port" "$x" "$y" "$it" "$n"
			names+=("$n")
		fi
		port=$((port + 2))
	done
	for n in "${names[@]}"; do
		pair_judge "$n" "$it"
	done
	[ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2>/dev/null
	wait "${hogs[@]}" 2>/dev/null
}

# A peer restart: one end killed (SIGKILL) and restarted on the same address and
# port; the pair forms again, once, and the survivor holds no kernel
# cm_id beyond its listener and its connection (rdma res show cm_id),
# and, in the datagram port space, at most the companion listener that
# answers questions about its REQs (rdma_cm_p2p(7), LATE COPIES): no
# question's id is left behind.
# One guest: the script kills and starts both ends.
restart_test() {
	local fam=$1 port=$2 x=$3 y=$4 name="restart/$1" s p rc=0 ids=-1 udp=-1
	local mine
	wanted "$name" || return 0
	[ $two = no ] || return 0
	rm -f "$out/go" "$out"/rs.*
	"$PAIR" restart survivor "$x" "$port" "$y" $((port + 1)) "$out/go" \
		>"$out/rs.survivor" 2>&1 &
	s=$!
	"$PAIR" restart peer "$y" $((port + 1)) "$x" "$port" \
		>"$out/rs.peer" 2>&1 &
	p=$!
	if wait_output "$out/rs.peer" '^READY$' 90; then
		kill -KILL $p
		wait $p 2>/dev/null
		"$PAIR" restart peer2 "$y" $((port + 1)) "$x" "$port" \
			>"$out/rs.peer2" 2>&1 &
		p=$!
		if wait_output "$out/rs.survivor" '^REFORMED$' 120; then
			# Any of its threads: the library's service thread
			# makes the kernel id of a REQ sent again.
			mine=$(rdma res show cm_id 2>/dev/null |
				grep -E " pid ($(ls /proc/$s/task | paste -sd'|')) ")
			ids=$(grep -c " ps TCP " <<<"$mine")
			udp=$(grep -c " ps UDP " <<<"$mine")
		else
			rc=1
		fi
	else
		rc=1
	fi
	touch "$out/go"
	# A peer that never said READY waits for a kill forever.
	[ $rc -eq 0 ] || kill -KILL $s $p 2>/dev/null
	wait $s || rc=1
	wait $p || rc=1
	if [ $rc -eq 0 ] && [ "$ids" -eq 2 ] && [ "$udp" -le 1 ]; then
		pass "$name" "re-formed after a restart; the survivor holds 2 kernel cm_ids, $udp datagram one"
	else
		fail "$name" "exit status $rc, survivor's kernel cm_ids $ids (want 2), datagram ones $udp (want at most 1)"
		show "$out"/rs.*
		rdma res show cm_id 2>/dev/null | sed 's/^/    /'
	fi
}

api() {
	local t=$1 addr=$2 name="api-$1/$3" rc
	wanted "$name" || return 0
	if [ $t = held ] || [ $t = giveup ]; then
		RDMA_CM_P2P_HOLD_MS=1000 timeout 90 "$API" "$t" "$addr" >"$out/api" 2>&1
	else
		timeout 90 "$API" "$t" "$addr" >"$out/api" 2>&1
	fi
	rc=$?
	if [ $rc -eq 0 ] && grep -q "^PASS" "$out/api"; then
		pass "$name" "$(sed -n 's/^PASS [a-z]* *(\(.*\))$/\1/p' "$out/api")"
	else
		fail "$name" "exit status $rc"
		show "$out/api"
	fi
}

# Two guests boot on their own.  A first scenario started before the other
# guest's link was up failed its address resolution (ADDR_ERROR, -110), and
# each later one then ran a step ahead of its peer.  Start once the peer's
# address answers: its script starts right after its link comes up.
if [ $two = yes ] && command -v ping >/dev/null; then
	peer=$A1
	has_addr "$A1" && peer=$A2
	for ((i = 0; i < 120; i++)); do
		ping -c 1 -W 1 "$peer" >/dev/null 2>&1 && break
	done
fi

for fam in ipv4 ipv6; do
	if [ $fam = ipv4 ]; then
		x=$A1 y=$A2 base=7600
	else
		[ -n "$A6_1" ] || {
			skip "*/ipv6" "no IPv6 test addresses"
			continue
		}
		x=$A6_1 y=$A6_2 base=7700
	fi
	it=$ITER
	[ $fam = ipv6 ] && it=$(((ITER + 4) / 5))
	mesh "mutual/$fam" 2 $base "$x" "$y" -i "$it"
	# Rank 1 starts 2 s after rank 0, whose first REQ finds no listener
	# and is sent again until one listens (IB/RoCE: on a fresh kernel id,
	# rdma_cm_p2p(7); iWARP: the connect retried), as the library's
	# matching log shows; then a second iteration.
	if [ "$TRANSPORT" = iwarp ]; then
		resent='refused (no listener yet), retrying'
	else
		resent='refused for now, sending it again'
	fi
	late_s=2 must_log=$resent RDMA_CM_P2P_DEBUG=1 \
		mesh "late/$fam" 2 $((base + 90)) "$x" "$y" -i 2
	pit=${RDMACM_P2P_PAIR_ITER:-100}
	[ $fam = ipv6 ] && pit=$(((pit + 4) / 5))
	pair "$fam" $((base + 60)) "$x" "$y" "$pit"
	# Under load: IPv4 only (the family changes nothing in the pairing).
	[ $fam = ipv4 ] && pair_load "$fam" $((base + 200)) "$x" "$y"
	restart_test "$fam" $((base + 70)) "$x" "$y"
	forked_pair "$fam" $((base + 64)) "$x" "$y" $(((pit + 4) / 5))
	mesh "skew/$fam" 2 $((base + 10)) "$x" "$y" -i "$SKEW_ITER" -s 2000
	mesh "pairs4/$fam" 2 $((base + 20)) "$x" "$y" -c 4 -i 3
	mesh "pairs4-tags/$fam" 2 $((base + 30)) "$x" "$y" -c 4 -i 3 -t
	mesh "mesh8/$fam" 8 $((base + 40)) "$x" "$y"
	# 64 ranks (2,016 connections on the guest's two CPUs), with the
	# default settings: a message may wait seconds in a queue here, the
	# CM sends late copies of REQs, and only the bounds may grow with
	# that, never who sends or what pairs (tests/system/BUGS.md
	# p2p-mesh64).
	# RDMACM_P2P_MESH64_BARRIER=1: after a start barrier, as MPI ranks
	# connect once every rank has listened.  Quiet, it forms in under
	# 40 s, beside the host lane's load (or two busy loops on the host)
	# in about 115 s (BUGS.md p2p-mesh64-ci): the ranks wait 240 s
	# instead of p2pmesh's 120.
	# That bounds each of p2pmesh's three phases (resolution, connection,
	# disconnection): the suite's limit per process outlasts all three,
	# so that after a failure every rank still ends on its own (a rank
	# the limit kills cannot tell waiting from hanging).
	mkdir -p "$out/barrier64-$fam"
	[ $fam = ipv4 ] && [ "${RDMACM_P2P_MESH64:-1}" = 1 ] &&
		LIMIT=$((LIMIT > 780 ? LIMIT : 780)) \
			mesh "mesh64/$fam" 64 $((base + 300)) "$x" "$y" -w 240000 \
			${RDMACM_P2P_MESH64_BARRIER:+-b "$out/barrier64-$fam"}
	# Every route resolved, then every connect (no PEER2PEER before
	# resolving, no connect on route): the order before either existed.
	mesh "mesh8-resolve-all/$fam" 8 $((base + 80)) "$x" "$y" -R -A
	# A loop that drains the channel at each wake-up: library events
	# (the adopting end's ADDR_RESOLVED and ROUTE_RESOLVED) and the
	# kernel's read back to back, then EAGAIN.
	case " ${RDMACM_P2P_MESH_ARGS:-} " in
	*" -B "*) ;;
	*) mesh "mesh8-drain/$fam" 8 $((base + 92)) "$x" "$y" -D ;;
	esac
	# The scheme programs use without peer2peer_mode (the benchmark's
	# baseline): connect to higher ranks, accept lower ones, after a start
	# barrier (a directory only one guest sees).
	if [ $two = no ]; then
		mkdir -p "$out/barrier-$fam"
		mesh "lower8/$fam" 8 $((base + 50)) "$x" "$y" -L -i 2 \
			-b "$out/barrier-$fam"
	fi
	if [ $two = no ]; then
		for t in oldabi surface plain hostile held giveup; do
			api $t "$x" $fam
		done
	fi
done

siw_testbed_report
finish
