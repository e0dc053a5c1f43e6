#!/bin/bash
# A quick, informal comparison (not a test): Debian's rstream over our
# library versus over Debian's, in the same guest.  Run with
#   tests/vm/run-guest.sh tests/system/rsocket-quickbench.sh
# The preload branch's benchmark is the real one.
BUILD="${RDMACM_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
ours="$BUILD/src/.libs"
ulimit -l unlimited
port=7600
run() {
	local lib=$1
	shift
	port=$((port + 1))
	LD_LIBRARY_PATH="$lib" timeout 120 rstream -p $port -b 192.0.2.1 "$@" >/dev/null 2>&1 &
	sleep 1
	LD_LIBRARY_PATH="$lib" timeout 120 rstream -p $port -s 192.0.2.1 -b 192.0.2.2 "$@" | tail -1
	wait
}
for rep in 1 2; do
	echo "ours    lat: $(run "$ours" -S 64 -C 1 -I 3000)"
	echo "debian  lat: $(run "" -S 64 -C 1 -I 3000)"
	echo "ours    bw : $(run "$ours" -S 65536 -C 2000)"
	echo "debian  bw : $(run "" -S 65536 -C 2000)"
done
