#!/bin/bash
# Smoke test of the test bed itself, not of our library: Debian's rping
# (rdmacm-utils, linked against Debian's own librdmacm.so.1) as server and
# client over rxe0, over IPv4 and IPv6. If this fails, the VM set-up is
# broken, whatever the state of the library.
#
# Run:  tests/vm/run-guest.sh tests/vm/smoke-debian-rping.sh
#  or:  tests/vm/run-native.sh tests/vm/smoke-debian-rping.sh  (on RDMA hardware)
set -eu

# Debian's library, whatever the caller points the loader at.
unset LD_LIBRARY_PATH LD_PRELOAD

addr4="${RDMA_TEST_ADDR1:?RDMA_TEST_ADDR1 is not set}"
addr6="${RDMA_TEST_ADDR6_1:-}"

echo "== devices"
ibv_devices
rdma link show
echo "== rping uses: $(ldd "$(command -v rping)" | grep -o 'librdmacm[^ ]* => [^ ]*')"

# One rping exchange over address $1: server in the background, then the
# client. The client retries because it may start before the server listens
# (it then gets a reject and exits non-zero, which costs the server nothing).
rping_pair() {
	local addr="$1" server client_ok=0 try
	echo "== rping over $addr"
	timeout 60 rping -s -a "$addr" -C 3 -v &
	server=$!
	for try in 1 2 3 4 5 6 7 8 9 10; do
		if timeout 30 rping -c -a "$addr" -C 3 -v; then
			client_ok=1
			break
		fi
		echo "(client attempt $try failed; retrying)"
		sleep 0.5
	done
	if ! wait "$server"; then
		echo "FAIL: rping server over $addr"
		return 1
	fi
	if [ "$client_ok" != 1 ]; then
		echo "FAIL: rping client over $addr"
		return 1
	fi
	echo "ok: rping over $addr"
}

rping_pair "$addr4"
if [ -n "$addr6" ]; then
	rping_pair "$addr6"
fi
echo "smoke-debian-rping: all passed"
