# Which RDMA transport the system tests run on (sourced by the *-in-guest.sh
# scripts; not run by itself).
# shellcheck shell=bash
#
# Sets TRANSPORT to "iwarp" or "roce" (InfiniBand counts as "roce" here:
# everything these tests skip on iWARP applies to both). The test guest sets
# RDMA_TEST_TRANSPORT; natively it may be set by hand, or is found from the
# node type of RDMA_TEST_DEV (or of the only kind of device there is):
# sysfs spells an iWARP device's node type "4: RNIC".
#
# iwarp_skip NAME [NAME...]: whether these tests cannot apply on this
# transport; if so, prints their SKIP lines with the reason.

rdma_node_types() {
	local d
	for d in /sys/class/infiniband/*; do
		[ -e "$d/node_type" ] || continue
		if [ -n "${RDMA_TEST_DEV:-}" ] && [ "${d##*/}" != "$RDMA_TEST_DEV" ]; then
			continue
		fi
		cat "$d/node_type"
	done
}

TRANSPORT="${RDMA_TEST_TRANSPORT:-}"
if [ -z "$TRANSPORT" ]; then
	TRANSPORT=roce
	types="$(rdma_node_types)"
	if [ -n "$types" ] && ! grep -qv RNIC <<<"$types"; then
		TRANSPORT=iwarp
	fi
	unset types
fi
case "$TRANSPORT" in
iwarp | roce | ib) ;;
*)
	echo "# RDMA_TEST_TRANSPORT=$TRANSPORT is not iwarp, roce or ib; taking roce"
	TRANSPORT=roce
	;;
esac
echo "# transport: $TRANSPORT"

# Why a test cannot apply on iWARP, by the kind of thing it needs.
IWARP_NO_UD="iWARP has no UD QPs (RDMA_PS_UDP, SIDR, rdma_sendto)"
IWARP_NO_MCAST="iWARP has no multicast"

# iwarp_skip REASON NAME...: on iWARP, print "SKIP NAME: REASON" for each
# name (those the caller's filter wants; verdict.sh's skip) and succeed;
# elsewhere fail.
iwarp_skip() {
	local why="$1" n
	shift
	[ "$TRANSPORT" = iwarp ] || return 1
	for n in "$@"; do
		if declare -F wanted >/dev/null && ! wanted "$n"; then
			continue
		fi
		skip "$n" "$why"
	done
	return 0
}

# siw_testbed_report: on iWARP, when the loaded siw is the test bed's
# (tests/vm/siw-accept-drain.py, RDMACM_VM_SIW_DRAIN=1, or its lines in
# the kernel log), a comment line each for how often it closed siw's
# accept race (a first message queued before the QP took the socket:
# without it, a hung pair) and its listen race (BUGS.md siw-accept-race,
# siw-listen-race).
siw_testbed_report() {
	[ "$TRANSPORT" = iwarp ] || return 0
	[ "${RDMACM_VM_SIW_DRAIN:-0}" = 1 ] ||
		dmesg 2>/dev/null | grep -q siw-testbed || return 0
	echo "# siw test bed: $(dmesg | grep -c 'siw-testbed: accept') accept(s) found the first message already queued"
	echo "# siw test bed: $(dmesg | grep -c 'siw-testbed: listen') accept(s) came before their listener was ready"
}

# example_pair_driver_bug SLOG CLOG: whether this tree's rdma_server and
# rdma_client (their logs SLOG and CLOG; $server_rc and $client_rc set by
# launch_pair) failed exactly the way a known driver race makes them fail;
# if so, prints the XFAIL reason naming the tests/system/BUGS.md entry.
# Both need the server to have read the client's greeting:
#   rxe-lost-ack: the client printed the server's answer, which proves the
#     greeting arrived, then waited for the greeting's own send completion
#     until its timeout (124): the device lost the ACK and never resent.
#     The watchdog's snapshot (CLOG.hang) must show the client reading
#     its completion channel, not waiting for a CM event in
#     rdma_disconnect, which follows and would be the library's.
#   siw-send-error: on iWARP a SEND the peer received and acted on came
#     back with a local QP operation error: the client's greeting (the
#     server read it and disconnected) or the server's answer (the client
#     printed it, ended OK and disconnected).
example_pair_driver_bug() {
	grep -q 'client says: "hello from rdma_client"' "$1" || return 1
	if [ "$TRANSPORT" != iwarp ] && [ "$client_rc" = 124 ] &&
		tail -n 1 "$2" | grep -q 'rdma_client: server says: ' &&
		grep -q '(rdma_client): wchan ib_uverbs_event_read' "$2.hang" 2>/dev/null; then
		echo "BUGS.md rxe-lost-ack: the client had the server's answer; its greeting's send never completed"
	elif [ "$TRANSPORT" = iwarp ] && [ "$server_rc" = 0 ] &&
		grep -q 'send failed: local QP operation error' "$2"; then
		echo "BUGS.md siw-send-error: the client's greeting, received, completed with a local QP operation error"
	elif [ "$TRANSPORT" = iwarp ] && [ "$client_rc" = 0 ] &&
		grep -q 'rdma_client: server says: "hello from rdma_server"' "$2" &&
		grep -q 'send failed: local QP operation error' "$1"; then
		echo "BUGS.md siw-send-error: the server's answer, received, completed with a local QP operation error"
	else
		return 1
	fi
}
