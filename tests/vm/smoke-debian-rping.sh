#!/bin/bash
# Smoke test of the test bed itself, not of our library: Debian's rping
# (rdmacm-utils, linked against Debian's own librdmacm.so.1) as server and
# client over rxe0, over IPv4 and IPv6. If this fails, the VM set-up is
# broken, whatever the state of the library.
#
# Run:  tests/vm/run-guest.sh tests/vm/smoke-debian-rping.sh
#  or:  tests/vm/run-native.sh tests/vm/smoke-debian-rping.sh  (on RDMA hardware)
set -u
# shellcheck source=../system/verdict.sh
. "$(dirname "$0")/../system/verdict.sh"

# Debian's library, whatever the caller points the loader at.
unset LD_LIBRARY_PATH LD_PRELOAD

addr4="${RDMA_TEST_ADDR1:?RDMA_TEST_ADDR1 is not set}"
addr6="${RDMA_TEST_ADDR6_1:-}"

echo "== devices"
ibv_devices
rdma link show
echo "== rping uses: $(ldd "$(command -v rping)" | grep -o 'librdmacm[^ ]* => [^ ]*')"

log=$(mktemp -d "${TMPDIR:-/tmp}/smoke.XXXXXX")
trap 'rm -rf "$log"' EXIT

# One rping exchange over address $2 (test $1) on rping's default port,
# 7174: the server, then the client once the port is bound.
rping_pair() {
	local name=$1 addr=$2
	if launch_pair 7174 "$log/s" "$log/c" 60 rping -s -a "$addr" -C 3 -v -- \
		rping -c -a "$addr" -C 3 -v; then
		pass "$name"
	else
		show "$log/s" "$log/c"
		fail "$name" "server exit $server_rc, client exit $client_rc"
	fi
}

rping_pair smoke/rping/ipv4 "$addr4"
if [ -n "$addr6" ]; then
	rping_pair smoke/rping/ipv6 "$addr6"
fi
finish
