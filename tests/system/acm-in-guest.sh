#!/bin/bash
# The ACM resolver (RDMA_CM_USE_IB_ACM=1) on a real kernel RDMA stack:
#   tests/vm/run-guest.sh tests/system/acm-in-guest.sh
#
# Proves that routes come from ACM, not the kernel: a host name only the
# address table knows (not in /etc/hosts or DNS) connects, and the
# library's resolution log (RDMA_CM_ACM_LOG) names the source of every
# address and route.  Then the same runs with the table removed, wrong or
# garbled fall back to the kernel and still connect; and with a stand-in
# ibacm service on the default socket (/run/ibacm.sock), resolution goes
# through the service, while a dead service (socket left behind) and a
# hung one (reads the request, never answers) cost at most the service
# timeout and fall back.  One "PASS name"/"FAIL name"/"SKIP name" line per
# case, then "N passed, N failed".
#
# Environment: RDMACM_BUILD_DIR (default: ./build), RDMA_TEST_ADDR1/2,
# RDMA_TEST_ADDR6_1/2 (the guest sets them), VERBOSE=1.
set -u

BUILD="${RDMACM_BUILD_DIR:-$PWD/build}"
A1="${RDMA_TEST_ADDR1:-192.0.2.1}"
A2="${RDMA_TEST_ADDR2:-192.0.2.2}"
A6_1="${RDMA_TEST_ADDR6_1:-}"
A6_2="${RDMA_TEST_ADDR6_2:-}"
DEV="${RDMA_TEST_DEV:-rxe0}"
T=40
EX="$BUILD/examples/.libs"
LIB="$BUILD/src/.libs"
export LD_LIBRARY_PATH="$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=$(mktemp -d "${TMPDIR:-/tmp}/acm-sys.XXXXXX")
trap 'kill $fake_pid 2>/dev/null; rm -rf "$work"' EXIT
fake_pid=
. "$(dirname "$0")/verdict.sh"
# shellcheck source=transport.sh
. "$(dirname "$0")/transport.sh"
port=7600
built acm/setup "$BUILD/examples/rdma_acme" "$BUILD/examples/rping" \
	"$BUILD/examples/ucmatose" "$BUILD/examples/rdma_server" \
	"$BUILD/examples/rdma_client" "$BUILD/tests/system/acm_fake_service" ||
	finish

ulimit -l unlimited 2>/dev/null

# Names used here must be unknown to the system's resolver.
for n in acm-peer acm-peer6 svc-peer; do
	if getent hosts "$n" >/dev/null; then
		echo "# $n resolves without ACM; the proof would be void"
		fail setup "$n is known to the system resolver"
	fi
done

table=$work/hosts.data
log=$work/acm.log
acm_env() {
	echo RDMA_CM_USE_IB_ACM=1 RDMA_CM_ACM_HOSTS="$table" \
		RDMA_CM_ACM_LOG="$log" RDMA_CM_ACM_SERVICE="${ACM_SERVICE-none}"
}

# run_pair NAME SERVER_CMD CLIENT_CMD: the server without ACM, the client
# with it (launch_pair).  0 when both succeed.
run_pair() {
	local name=$1 scmd=$2 ccmd=$3 port
	: >"$log"
	port=$(sed -n 's/.*-p \([0-9]*\).*/\1/p' <<<"$scmd")
	# shellcheck disable=SC2046,SC2086
	if ! launch_pair "$port" "$work/s.out" "$work/c.out" "$T" $scmd -- \
		env $(acm_env) $ccmd; then
		echo "    server: $scmd (exit $server_rc)"
		show "$work/s.out"
		echo "    client: $ccmd (exit $client_rc)"
		show "$work/c.out"
		echo "    resolution log:"
		show "$log"
		return 1
	fi
	[ "${VERBOSE:-0}" = 1 ] && { show "$work/c.out"; show "$log"; }
	return 0
}

# expect_log NAME REGEX...: every regex matches a line of the log.
expect_log() {
	local name=$1 re
	shift
	for re in "$@"; do
		if ! grep -Eq -- "$re" "$log"; then
			echo "    resolution log (no line matches '$re'):"
			show "$log"
			fail "$name" "the log does not show: $re"
			return 1
		fi
	done
	pass "$name"
}

gid4() { echo "::ffff:$1"; }

# --- the library in use ---------------------------------------------------------
echo "acm-peer $(gid4 "$A2")" >"$table"
: >"$log"
if env $(acm_env) "$EX/rdma_acme" -d acm-peer -s "$A1" -p 1 >"$work/acme.out" 2>&1 &&
	grep -q "source table" "$work/acme.out" && grep -q "source=table" "$log"; then
	[ "${VERBOSE:-0}" = 1 ] && show "$work/acme.out"
	pass acm/rdma_acme
else
	show "$work/acme.out"
	show "$log"
	fail acm/rdma_acme "no table answer"
fi

# --- routes from the table ----------------------------------------------------------
# Only the name is listed: its GID makes its address known too.
printf 'acm-peer %s\n' "$(gid4 "$A2")" >"$table"
if run_pair acm/rping_table_name "$EX/rping -s -a $A2 -p $((port += 1)) -C 5 -V" \
	"$EX/rping -c -a acm-peer -I $A1 -p $port -C 5 -V"; then
	expect_log acm/rping_table_name "resolve acm-peer from .*source=table" \
		"route $(gid4 "$A1") -> $(gid4 "$A2"): source=(table|cache)"
else
	fail acm/rping_table_name "no connection"
fi

if run_pair acm/ucmatose_table_name \
	"$EX/ucmatose -b $A2 -p $((port += 1)) -c 3 -C 5" \
	"$EX/ucmatose -s acm-peer -b $A1 -p $port -c 3 -C 5"; then
	expect_log acm/ucmatose_table_name \
		"route $(gid4 "$A1") -> $(gid4 "$A2"): source=(table|cache)"
else
	fail acm/ucmatose_table_name "no connection"
fi

# rdma_getaddrinfo's ai_route, handed over by rdma_create_ep.
if run_pair acm/rdma_client_table_name \
	"$EX/rdma_server -s $A2 -p $((port += 1))" \
	"$EX/rdma_client -s acm-peer -p $port"; then
	expect_log acm/rdma_client_table_name "resolve acm-peer from .*source=table"
elif why=$(example_pair_driver_bug "$work/s.out" "$work/c.out"); then
	xfail acm/rdma_client_table_name "$why"
else
	fail acm/rdma_client_table_name "no connection"
fi

if [ -n "$A6_1" ] && [ -n "$A6_2" ]; then
	printf 'acm-peer6 %s\n' "$A6_2" >"$table"
	if run_pair acm/rping_table_name_ipv6 \
		"$EX/rping -s -a $A6_2 -p $((port += 1)) -C 5 -V" \
		"$EX/rping -c -a acm-peer6 -I $A6_1 -p $port -C 5 -V"; then
		expect_log acm/rping_table_name_ipv6 "resolve acm-peer6 from .*source=table" \
			"-> $A6_2: source=(table|cache)"
	else
		fail acm/rping_table_name_ipv6 "no connection"
	fi
fi

# --- fallback to the kernel ---------------------------------------------------------------
fallback_case() {
	local name=$1 reason=$2
	if run_pair "$name" "$EX/rping -s -a $A2 -p $((port += 1)) -C 5 -V" \
		"$EX/rping -c -a $A2 -I $A1 -p $port -C 5 -V"; then
		expect_log "$name" "route .*source=kernel \\($reason"
	else
		fail "$name" "no connection"
	fi
}
rm -f "$table"
fallback_case acm/fallback_no_table "ACM has no path"
printf '%s %s\n' "$A2" "$(gid4 192.0.2.99)" >"$table"
fallback_case acm/fallback_wrong_table "ACM's path has other GIDs"
head -c 3000 /dev/urandom >"$table"
fallback_case acm/fallback_garbage_table "ACM has no path"

# --- through a service ------------------------------------------------------------------------
mtu=$(ibv_devinfo -d "$DEV" 2>/dev/null | sed -n 's/.*active_mtu:.*(\([0-9]\)).*/\1/p' | head -1)
mkdir -p /run
# start_service ARGS...: the stand-in service on the default socket.
start_service() {
	"$BUILD/tests/system/acm_fake_service" /run/ibacm.sock "$@" \
		>"$work/fake.out" 2>&1 &
	fake_pid=$!
	sleep 0.3
}
stop_service() {
	kill $fake_pid 2>/dev/null
	wait $fake_pid 2>/dev/null
	fake_pid=
}
# service_case NAME SERVICE DEST MARK LOG_RE...: rping to DEST with
# RDMA_CM_ACM_SERVICE=SERVICE connects, the service's output shows MARK
# (unless empty), and the resolution log matches every LOG_RE.
service_case() {
	local name=$1 svc=$2 dest=$3 mark=$4
	shift 4
	if ! ACM_SERVICE=$svc run_pair "$name" \
		"$EX/rping -s -a $A2 -p $((port += 1)) -C 5 -V" \
		"$EX/rping -c -a $dest -I $A1 -p $port -C 5 -V"; then
		fail "$name" "no connection"
	elif [ -n "$mark" ] && ! grep -q "$mark" "$work/fake.out"; then
		show "$work/fake.out"
		fail "$name" "the service was never asked"
	else
		expect_log "$name" "$@"
	fi
}
start_service "${mtu:-3}" "svc-peer=$A2"
rm -f "$table"
if [ "$(id -u)" != 0 ]; then
	skip acm/service_default_socket "/run/ibacm.sock must be root's"
else
	service_case acm/service_default_socket "" svc-peer answered \
		"resolve svc-peer from .*source=service" \
		"route $(gid4 "$A1") -> $(gid4 "$A2"): source=(service|cache)"
fi
stop_service
# The socket file stays: a dead service.
service_case acm/service_dead unix:/run/ibacm.sock "$A2" "" \
	"service unix:/run/ibacm.sock: Connection refused" "route .*source=kernel"
rm -f /run/ibacm.sock
# A hung service: it takes the request and never answers.  Resolution must
# give up after the service timeout (0.5 s) and fall back to the kernel.
start_service hang
service_case acm/service_hung unix:/run/ibacm.sock "$A2" held \
	"service unix:/run/ibacm.sock: Connection timed out" "route .*source=kernel"
stop_service
rm -f /run/ibacm.sock

# --- Debian's rping on our library --------------------------------------------------------------
printf '%s %s\n' "$A2" "$(gid4 "$A2")" >"$table"
if ! nm -D "$LIB/librdmacm.so.1" 2>/dev/null | grep -q ' T rpoll'; then
	fail acm/debian_rping "$LIB/librdmacm.so.1 has no rpoll (Debian's rping imports it)"
elif [ ! -x /usr/bin/rping ]; then
	skip acm/debian_rping "/usr/bin/rping not installed"
elif run_pair acm/debian_rping "/usr/bin/rping -s -a $A2 -p $((port += 1)) -C 5 -V" \
	"/usr/bin/rping -c -a $A2 -I $A1 -p $port -C 5 -V"; then
	expect_log acm/debian_rping "route $(gid4 "$A1") -> $(gid4 "$A2"): source=(table|cache)"
else
	fail acm/debian_rping "no connection"
fi

finish
