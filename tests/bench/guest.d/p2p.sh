# Sourced by tests/bench/guest.sh: an 8-process full mesh formed with
# peer2peer_mode (every pair connecting from both sides at once) against
# the scheme programs use without it (connect to higher ranks, accept
# lower ones: p2pmesh -L), both on this library (Debian's has no
# peer2peer_mode).  Each run's time is the slowest rank's, from the start
# of its iteration to data flowing on all of its connections; the median of
# RDMACM_BENCH_P2P_REPS (5) runs per scheme, the schemes taking turns.
p2p_mesh_ms() {
	local port=$1 r pids=() ms max=0
	shift
	local addrs=()
	for ((r = 0; r < 8; r++)); do
		if ((r % 2)); then addrs+=("${RDMA_TEST_ADDR2:-$addr}"); else addrs+=("$addr"); fi
	done
	# Both schemes start timing after the same start barrier.
	rm -rf "$out/p2p.barrier"
	mkdir -p "$out/p2p.barrier"
	for ((r = 0; r < 8; r++)); do
		with_lib ours timeout 300 "${libdir[ours]%/src/.libs}/examples/p2pmesh" \
			-q -p "$port" -b "$out/p2p.barrier" "$@" $r "${addrs[@]}" \
			>"$out/p2p.$r" 2>&1 &
		pids+=($!)
	done
	for r in "${pids[@]}"; do
		wait "$r" || return 1
	done
	for ((r = 0; r < 8; r++)); do
		ms=$(sed -n 's/.* setup_ms=\([0-9.]*\).*/\1/p' "$out/p2p.$r")
		[ -n "$ms" ] || return 1
		max=$(awk -v a="$ms" -v b="$max" 'BEGIN { print (a > b) ? a : b }')
	done
	echo "$max"
}
p2p_port=7900
for ((p2p_i = 0; p2p_i < ${RDMACM_BENCH_P2P_REPS:-5}; p2p_i++)); do
	for p2p_scheme in p2p lower; do
		p2p_port=$((p2p_port + 10))
		p2p_flag=
		[ $p2p_scheme = lower ] && p2p_flag=-L
		# shellcheck disable=SC2086 # no flag for the p2p scheme
		if p2p_ms=$(p2p_mesh_ms $p2p_port $p2p_flag); then
			emit ours "p2p.mesh8_${p2p_scheme}_ms" "$p2p_ms" ms
		else
			echo "bench: p2p mesh ($p2p_scheme) failed:" >&2
			cat "$out"/p2p.* >&2
			status=1
		fi
	done
done
rm -rf "$out"/p2p.*
