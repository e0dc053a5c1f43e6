# shellcheck shell=bash
# What the scripts that run real programs over librspreload share
# (preload-apps-in-guest.sh, servers-in-guest.sh); sourced after
# verdict.sh.  The caller sets:
#   PRELOAD  this build's librspreload.so
#   W        its work directory; the preload's log is $W/rsp.log
#
# pkts: the RDMA device's ($RDMA_TEST_DEV, rxe0) packets sent so far.
# now_ms: the clock in milliseconds.
# with MODE CMD...: CMD under the preload (MODE rdma, its log appended to
#   $W/rsp.log) or as it is (tcp).
# start_with MODE CMD...: the same in the background, with the command's
#   own pid in $started (not a subshell's, as "with ... &" gives: a signal
#   sent there would not reach the command).
# wait_port MODE PORT PID: waits, at most 20 s, for a server (pid PID)
#   to listen on PORT.
# res: per program and mode, the results check reads:
#   res[NAME.MODE.ok] 1 when the data were verified, else
#   res[NAME.MODE.why] the reason; res[NAME.MODE.bytes] the bytes moved,
#   res[NAME.MODE.pkts] the device's packets sent meanwhile,
#   res[NAME.MODE.metric] a figure of speed.
# check NAME UNIT higher|lower: the verdict on NAME from its rdma and tcp
#   runs: both verified, at least one RDMA packet per 4 KiB moved under
#   the preload (rxe's largest MTU), next to none (100) on TCP; the ratio
#   of the two metrics printed (how many times better the RDMA run did).

# The RDMA device's packets sent so far (rxe counts every packet).
pkts() {
	rdma statistic show link "${RDMA_TEST_DEV:-rxe0}/1" 2>/dev/null |
		tr ' ' '\n' | sed -n '/^sent_pkts$/{n;p;q}'
}
now_ms() { date +%s%3N; }

# with MODE CMD...: CMD under the preload (MODE rdma) or as it is (tcp).
# The preload's log ($W/rsp.log) says which sockets went over RDMA.
with() {
	local mode=$1
	shift
	if [ "$mode" = rdma ]; then
		env LD_PRELOAD="$PRELOAD" RDMA_RSOCKET_LOG="$W/rsp.log" "$@"
	else
		"$@"
	fi
}

started=
start_with() {
	local mode=$1
	shift
	if [ "$mode" = rdma ]; then
		env LD_PRELOAD="$PRELOAD" RDMA_RSOCKET_LOG="$W/rsp.log" "$@" &
	else
		"$@" &
	fi
	started=$!
}

# Wait, at most 20 s, for a server to listen on port $2: on an rsocket
# (the preload's log says so; pid $3) or on TCP (ss).  Connecting to find
# out would use up one-shot servers (iperf3 -1).
wait_port() {
	local mode=$1 p=$2 pid=$3 i
	for ((i = 0; i < 200; i++)); do
		# (under RDMAV_FORK_SAFE the preload's listener is TCP)
		if [ "$mode" = rdma ] &&
			grep -q "^rspreload\[[0-9]*\]: fd [0-9]*: listening" "$W/rsp.log" 2>/dev/null; then
			return 0
		fi
		ss -Hltn "sport = :$p" 2>/dev/null | grep -q . && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# Per program and mode: ok (0/1), why, metric, bytes, pkts.
declare -A res

# check NAME: PASS/FAIL from the two runs' results, with the ratio.
check() {
	local name=$1 unit=$2 better=$3 r t ratio
	if [ "${res[$name.rdma.ok]:-0}" != 1 ]; then
		fail "$name" "under the preload: ${res[$name.rdma.why]:-?}"
		return
	fi
	if [ "${res[$name.tcp.ok]:-0}" != 1 ]; then
		fail "$name" "without the preload: ${res[$name.tcp.why]:-?}"
		return
	fi
	local b=${res[$name.rdma.bytes]} p=${res[$name.rdma.pkts]} tp=${res[$name.tcp.pkts]}
	if [ -z "$p" ] || [ "$p" -lt $((b / 4096)) ]; then
		fail "$name" "only ${p:-?} RDMA packets for $b bytes"
		return
	fi
	if [ "${tp:-0}" -gt 100 ]; then
		fail "$name" "the run without the preload sent $tp RDMA packets"
		return
	fi
	r=${res[$name.rdma.metric]} t=${res[$name.tcp.metric]}
	# ratio: how many times better the RDMA run did
	if [ "$better" = higher ]; then
		ratio=$(awk -v a="$r" -v b="$t" 'BEGIN { printf "%.2f", b ? a / b : 0 }')
	else
		ratio=$(awk -v a="$r" -v b="$t" 'BEGIN { printf "%.2f", a ? b / a : 0 }')
	fi
	pass "$name" "data checked, $b bytes in $p RDMA packets; rdma $r $unit, tcp $t $unit: ratio $ratio"
}
