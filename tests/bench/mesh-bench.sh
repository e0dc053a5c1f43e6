#!/bin/bash
# The full-mesh measurement alone (README, "Peer-to-peer full mesh"):
# peer2peer_mode against connect-higher/accept-lower, same guest run,
# alternating.  Not a test: nothing passes or fails on a number.
#
#   tests/bench/mesh-bench.sh          # MESH_NS="8" MESH_REPS=7
#   MESH_NS="8 16" MESH_COUNT=1 tests/bench/mesh-bench.sh
#
# MESH_BOOTS=K boots the guest K times (default 1) and ends with the
# paired ratios of all K boots' repetitions pooled ("pooled N=..."): the
# paired ratio of one boot moves by about 0.1 from one boot to the next,
# more than the differences it is asked to show.
# MESH_COUNT=1 builds tests/bench/ucma_count.c as an LD_PRELOAD shim and
# adds one untimed counting run of each scheme (commands and events per
# rank).  MESH_BIN picks another build's p2pmesh (default this one's);
# MESH_BIN_B adds a second build to the same guest run (mesh-guest.sh).
# The ranks run without address-space randomization (mesh-guest.sh says
# why); MESH_ASLR=1 keeps it, as before 2026-11-28.
# Other settings: see mesh-guest.sh; BUILD_DIR as for the suites.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$repo/build}
so=
if [ "${MESH_COUNT:-0}" = 1 ]; then
	mkdir -p "$build/bench"
	so=$build/bench/ucma_count.so
	gcc -O2 -g -Wall -Wextra -Werror -shared -fPIC \
		"$repo/tests/bench/ucma_count.c" -ldl -o "$so"
fi
boot() {
	RDMACM_VM_TIMEOUT=${RDMACM_VM_TIMEOUT:-3000} \
		RDMACM_VM_PASS_ENV="MESH_BIN MESH_BIN_B MESH_NS MESH_REPS MESH_COUNT_SO MESH_ARGS MESH_WRAP0 MESH_WRAP_RANK MESH_ASLR" \
		MESH_BIN=${MESH_BIN:-$build/examples/p2pmesh} MESH_COUNT_SO=$so \
		MESH_NS=${MESH_NS:-8} MESH_REPS=${MESH_REPS:-7} \
		RDMACM_BUILD_DIR=$build "$repo/tests/vm/run-guest.sh" \
		"$repo/tests/bench/mesh-guest.sh"
}

boots=${MESH_BOOTS:-1}
if [ "$boots" = 1 ]; then
	boot
	exit
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
set -o pipefail # a boot's failure, not tee's success
for ((b = 1; b <= boots; b++)); do
	echo "=== boot $b of $boots"
	boot | sed "s/^mesh /mesh boot=$b /" | tee -a "$log" || status=1
done
# Each (boot, run) repetition's p2p / lower, time and CPU, per N; then per
# N the median of all of them (as mesh-guest.sh's paired()).
pairs=$(awk '
	function val(k,  i) {
		for (i = 1; i <= NF; i++)
			if (index($i, k "=") == 1)
				return substr($i, length(k) + 2)
		return ""
	}
	$1 == "mesh" && val("ms") != "" {
		key = val("N") " " val("boot") " " val("run")
		ms[$4, key] = val("ms")
		cpu[$4, key] = val("cpu_ms")
		keys[key] = 1
	}
	END {
		for (key in keys)
			if (ms["p2p", key] > 0 && ms["lower", key] > 0)
				print key, ms["p2p", key] / ms["lower", key],
					cpu["p2p", key] / cpu["lower", key]
	}' "$log")
# shellcheck source=tests/bench/stats.sh
. "$repo/tests/bench/stats.sh"
median() { stats %.2f | cut -d' ' -f1; }
awk '{ print $1 }' <<<"$pairs" | sort -un | while read -r n; do
	echo "pooled N=$n paired p2p / lower" \
		"ratio=$(awk -v n="$n" '$1 == n { print $4 }' <<<"$pairs" | median)" \
		"cpu_ratio=$(awk -v n="$n" '$1 == n { print $5 }' <<<"$pairs" | median)" \
		"pairs=$(awk -v n="$n" '$1 == n' <<<"$pairs" | wc -l) boots=$boots"
done
exit $status
