#!/bin/bash
# System tests of the freshly built librdmacm over a real RDMA device.
#
# Meant to run inside the Soft-RoCE test guest:
#   tests/vm/run-guest.sh tests/system/run-in-guest.sh
# or natively on a host whose RDMA device carries the test addresses.
#
# Runs every cm_sys_test scenario over IPv4 and IPv6, then the example
# programs of the build tree (a missing one is a FAIL), each under
# `timeout`, and prints one "PASS name" / "FAIL name" line per test (SKIP
# lines are not counted), then exactly one summary line
# "N passed, N failed".  Exits non-zero if anything failed.
#
# On iWARP (RDMA_TEST_TRANSPORT=iwarp, or an iWARP RDMA_TEST_DEV: see
# transport.sh) the UD, multicast, udaddy and mckey tests are SKIPped with
# the reason, and iwarp_errors checks the errors the library gives for them
# instead.
#
# Environment:
#   RDMACM_BUILD_DIR   the build tree (default: build/ in this checkout).  In the VM guest,
#                      /tmp, /run and /var/tmp are empty tmpfs: put the build
#                      tree elsewhere when running there.
#   RDMACM_SYS_TEST    the test program (default: found in the build tree)
#   RDMA_TEST_ADDR1, RDMA_TEST_ADDR2, RDMA_TEST_ADDR6_1, RDMA_TEST_ADDR6_2
#                      two IPv4 and two IPv6 addresses on the RDMA netdev
#                      (the guest sets these; IPv6 is skipped when unset)
#   RDMACM_SYS_CYCLES  connect/disconnect cycles for `cycles` (default 200)
#   RDMACM_SYS_ONLY    if set, a regular expression: run only tests whose
#                      name matches it, e.g. '^(rc_|rping)' or '/ipv4$'
#   VERBOSE=1          show the output of passing tests too
# (run-guest.sh hands RDMACM_*, RDMA_* and VERBOSE to the guest.)
set -u

BUILD="${RDMACM_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
A1="${RDMA_TEST_ADDR1:-192.0.2.1}"
A2="${RDMA_TEST_ADDR2:-$A1}"
A6_1="${RDMA_TEST_ADDR6_1:-}"
A6_2="${RDMA_TEST_ADDR6_2:-$A6_1}"
CYCLES="${RDMACM_SYS_CYCLES:-200}"
ONLY="${RDMACM_SYS_ONLY:-}"
# Each test gets this many seconds; cm_sys_test's own watchdog fires a little
# earlier so that it can say where it was stuck.
T=60
export RDMACM_HX_TIMEOUT=$((T - 5))

. "$(dirname "$0")/verdict.sh"
skipped=" "
log="$(mktemp "${TMPDIR:-/tmp}/cm-sys.XXXXXX")"
trap 'rm -f "$log" "$log".*' EXIT

ulimit -l unlimited 2>/dev/null || echo "# warning: cannot lift the locked-memory limit ($(ulimit -l) KiB)"

# --- what we test ---------------------------------------------------------------
libdir="$BUILD/src/.libs"
if [ ! -e "$libdir/librdmacm.so.1" ]; then
	echo "# no library at $libdir/librdmacm.so.1 (RDMACM_BUILD_DIR=$BUILD)"
	case "$BUILD" in
	/tmp | /tmp/* | /run | /run/* | /var/tmp | /var/tmp/*)
		[ -n "${RDMACM_VM_GUEST:-}" ] &&
			echo "# the VM guest has an empty tmpfs on /tmp, /run and /var/tmp: use a build tree elsewhere"
		;;
	esac
	fail setup "no built library"
	finish
fi
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
libdir_real="$(realpath "$libdir")"
# Installed-style programs (the examples) carry no run path into the build
# tree; like libtool's wrapper scripts, point the loader at the build.  What
# each program really loads is still checked below, not assumed.
export LD_LIBRARY_PATH="$libdir_real${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

SYS="${RDMACM_SYS_TEST:-}"
if [ -z "$SYS" ]; then
	for c in "$BUILD/tests/system/cm_sys_test" "$BUILD/cm_sys_test"; do
		SYS="$(real_prog "$c")"
		[ -n "$SYS" ] && break
	done
fi

# Which librdmacm program $1 loads (ldd's answer), resolved.
lib_of() {
	local l
	l="$(ldd "$1" 2>/dev/null | sed -n 's/^[[:space:]]*librdmacm\.so\.1 => \([^ ]*\).*/\1/p')"
	[ -n "$l" ] && realpath "$l"
}

if [ -z "$SYS" ]; then
	fail whichlib "no cm_sys_test under $BUILD (build it first)"
else
	got="$("$SYS" whichlib 2>&1)"
	if [ "$(dirname "$(realpath "$got" 2>/dev/null || echo /nonexistent/x)")" = "$libdir_real" ]; then
		echo "# cm_sys_test: $SYS"
		echo "# library: $got"
		pass whichlib
	else
		fail whichlib "cm_sys_test loads '$got', not the library in $libdir_real"
		# Testing some other librdmacm proves nothing.
		finish
	fi
fi
command -v rdma >/dev/null && rdma link show 2>/dev/null | sed 's/^/# /'
# TRANSPORT and iwarp_skip: what cannot apply on iWARP is SKIPped, not run.
# shellcheck source=transport.sh
. "$(dirname "$0")/transport.sh"

# --- cm_sys_test scenarios --------------------------------------------------------
# run_sys NAME ARGS...: one scenario under timeout.
run_sys() {
	local name="$1" rc=0
	shift
	wanted "$name" || return 0
	timeout -k 5 "$T" "$SYS" "$@" >"$log" 2>&1 || rc=$?
	if [ "$rc" = 77 ]; then
		skip "$name" "$(sed -n 's/^SKIP [^:]*: //p' "$log" | head -n1)"
		skipped+=" $name "
	elif [ "$rc" = 0 ] && grep -q "^PASS " "$log"; then
		[ "${VERBOSE:-0}" = 1 ] && show "$log"
		pass "$name"
	else
		show "$log"
		if [ "$rc" = 124 ]; then
			fail "$name" "timed out after ${T}s"
		else
			fail "$name" "exit status $rc"
		fi
	fi
}

# family label, server address, client source, multicast group
families=("ipv4 $A1 $A2 239.255.0.42")
[ -n "$A6_1" ] && families+=("ipv6 $A6_1 $A6_2 ff0e::db8:42")
[ -z "$A6_1" ] && skip "*/ipv6" "RDMA_TEST_ADDR6_1 is not set"
if [ -n "$SYS" ]; then
	for f in "${families[@]}"; do
		read -r fam srv cli grp <<<"$f"
		run_sys "rc_async/$fam" rc_async "$srv" "$cli"
		run_sys "rc_async_same_addr/$fam" rc_async "$srv"
		run_sys "rc_server_disconnect/$fam" rc_server_disconnect "$srv" "$cli"
		run_sys "page_cross/$fam" page_cross "$srv" "$cli"
		run_sys "rc_sync/$fam" rc_sync "$srv" "$cli"
		run_sys "sync_reject/$fam" sync_reject "$srv"
		run_sys "reject/$fam" reject "$srv" "$cli"
		run_sys "reject_ece/$fam" reject_ece "$srv" "$cli"
		run_sys "srq/$fam" srq "$srv" "$cli"
		run_sys "timewait/$fam" timewait "$srv" "$cli"
		run_sys "connect_error/$fam" connect_error "$srv" "$cli"
		run_sys "migrate/$fam" migrate "$srv"
		run_sys "libevents/$fam" libevents "$srv"
		run_sys "errors/$fam" errors "$srv"
		if iwarp_skip "$IWARP_NO_UD" "ud/$fam"; then
			iwarp_skip "$IWARP_NO_MCAST" "mcast/$fam"
			skipped+=" mcast/$fam "
			# What the library says instead when asked for them.
			run_sys "iwarp_errors/$fam" iwarp_errors "$srv" "$grp"
		else
			run_sys "ud/$fam" ud "$srv" "$cli"
			run_sys "ud_reject/$fam" ud_reject "$srv" "$cli"
			run_sys "mcast/$fam" mcast "$srv" "$grp" "$cli"
		fi
		run_sys "cycles/$fam" cycles "$srv" "$CYCLES" "$cli"
	done
fi

# --- ADDR_CHANGE: a bond under an rxe device fails over ---------------------------
# The kernel tells ids bound to a bonding master when it fails over to a
# slave with another MAC address.  Two dummy netdevs (different MACs) in an
# active-backup bond with fail_over_mac=active, an rxe device on the bond, an
# address on it; cm_sys_test addr_change binds ids there and switches the
# active slave.  Needs root and the guest's module tree (bonding, dummy).
BOND=rdmabond0
bond_gid_ready() {
	# The address's IPv4-mapped GID in the rxe device's table.
	grep -qs "0000:0000:0000:0000:0000:ffff:0a4d:0001" \
		/sys/class/infiniband/rxebond0/ports/1/gids/*
}
bond_down() {
	rdma link delete rxebond0 2>/dev/null
	ip link del "$BOND" 2>/dev/null
	ip link del rdmabs0 2>/dev/null
	ip link del rdmabs1 2>/dev/null
}
run_addr_change() {
	local name=addr_change/ipv4 i
	wanted "$name" || return 0
	if [ "$TRANSPORT" = iwarp ]; then
		skip "$name" "Soft-RoCE only (the bond carries an rxe device)"
		return 0
	fi
	if [ "$(id -u)" != 0 ] || [ -z "${RDMACM_VM_MODULES:-}" ] ||
		! modprobe -d "$RDMACM_VM_MODULES" bonding 2>/dev/null ||
		! modprobe -d "$RDMACM_VM_MODULES" dummy 2>/dev/null; then
		skip "$name" "needs root and the test guest's bonding and dummy modules"
		return 0
	fi
	if ! { ip link add rdmabs0 address 02:00:00:4d:00:01 type dummy &&
		ip link add rdmabs1 address 02:00:00:4d:00:02 type dummy &&
		ip link add "$BOND" type bond mode active-backup \
			fail_over_mac active &&
		ip link set rdmabs0 master "$BOND" &&
		ip link set rdmabs1 master "$BOND" &&
		ip link set "$BOND" up &&
		echo rdmabs0 >"/sys/class/net/$BOND/bonding/active_slave" &&
		ip addr add 10.77.0.1/24 dev "$BOND" &&
		rdma link add rxebond0 type rxe netdev "$BOND"; } >"$log" 2>&1; then
		show "$log"
		fail "$name" "cannot build the bond and its rxe device"
		bond_down
		return 0
	fi
	for ((i = 0; i < 50; i++)); do
		bond_gid_ready && break
		sleep 0.1
	done
	run_sys "$name" addr_change 10.77.0.1 \
		"echo rdmabs1 >/sys/class/net/$BOND/bonding/active_slave"
	bond_down
}
run_addr_change

# --- UNREACHABLE: a connect request nobody answers -----------------------------
# A veth pair whose far end lives in a network namespace with no RDMA
# device: it answers ARP, so the address resolves through an rxe device on
# the near end, but the CM's REQ is never answered.  The IB CM gives up
# after its retries, over a minute: this test has a limit of its own.
run_unreachable() {
	local name=unreachable/ipv4 i
	wanted "$name" || return 0
	if [ "$TRANSPORT" = iwarp ]; then
		skip "$name" "Soft-RoCE only (an iWARP connect is refused at once)"
		return 0
	fi
	if [ "$(id -u)" != 0 ] || [ -z "${RDMACM_VM_MODULES:-}" ] ||
		! modprobe -d "$RDMACM_VM_MODULES" veth 2>/dev/null; then
		skip "$name" "needs root and the test guest's veth module"
		return 0
	fi
	if ! { ip netns add rdmasilent &&
		ip link add rdmaveth0 type veth peer name rdmaveth1 &&
		ip link set rdmaveth1 netns rdmasilent &&
		ip addr add 10.78.0.1/24 dev rdmaveth0 &&
		ip link set rdmaveth0 up &&
		ip -n rdmasilent addr add 10.78.0.2/24 dev rdmaveth1 &&
		ip -n rdmasilent link set rdmaveth1 up &&
		rdma link add rxeveth0 type rxe netdev rdmaveth0; } >"$log" 2>&1; then
		show "$log"
		fail "$name" "cannot build the silent peer"
	else
		for ((i = 0; i < 50; i++)); do
			grep -qs "0000:0000:0000:0000:0000:ffff:0a4e:0001" \
				/sys/class/infiniband/rxeveth0/ports/1/gids/* && break
			sleep 0.1
		done
		T=200 RDMACM_HX_TIMEOUT=195 run_sys "$name" unreachable 10.78.0.2 10.78.0.1
	fi
	rdma link delete rxeveth0 2>/dev/null
	ip link del rdmaveth0 2>/dev/null
	ip netns del rdmasilent 2>/dev/null
}
run_unreachable

# --- multicast through options (mcast_sys_test) -----------------------------------
# A longer limit than the others: where the NIC holds rxe's multicast frames
# (BUGS.md rxe-mcast-hub-stall), destroying a QP
# that sent to a group waits about 50 s in the kernel.
MCOPT_T=130
run_mcopt() {
	local name="$1" prog rc=0
	shift
	wanted "$name" || return 0
	iwarp_skip "$IWARP_NO_MCAST" "$name" && return 0
	prog="$(real_prog "$BUILD/tests/system/mcast_sys_test")"
	built "$name" "$BUILD/tests/system/mcast_sys_test" || return 0
	if [ "$(dirname "$(lib_of "$prog")")" != "$libdir_real" ]; then
		fail "$name" "$prog loads '$(lib_of "$prog")', not our library"
		return 0
	fi
	RDMACM_HX_TIMEOUT=$((MCOPT_T - 5)) timeout -k 5 "$MCOPT_T" "$prog" mcast_opt "$@" \
		>"$log" 2>&1 || rc=$?
	if [ "$rc" = 77 ]; then
		skip "$name" "$(sed -n 's/^SKIP [^:]*: //p' "$log" | head -n1)"
	elif [ "$rc" = 0 ] && grep -q "^PASS " "$log"; then
		[ "${VERBOSE:-0}" = 1 ] && show "$log"
		pass "$name"
	else
		show "$log"
		fail "$name" "exit status $rc"
	fi
}
for f in "${families[@]}"; do
	read -r fam srv cli grp <<<"$f"
	run_mcopt "mcast_opt/$fam" "$srv" "$cli" "$grp"
done

# --- example programs -------------------------------------------------------------
EX="$BUILD/examples"
port=7470

# pair NAME PROG "SERVER ARGS" "CLIENT ARGS" [PROG2]: the server, then
# once it says "listening" (every server example does once rdma_listen is
# done; a client started earlier is refused) the client; both must exit 0.
# PROG2 is the client's program if it differs from the server's.
pair() {
	local name="$1" sprog cprog sargs="$3" cargs="$4" lib port why
	wanted "$name" || return 0
	sprog="$(real_prog "$EX/$2")"
	cprog="$(real_prog "$EX/${5:-$2}")"
	built "$name" "$EX/$2" "$EX/${5:-$2}" || return 0
	for p in "$sprog" "$cprog"; do
		lib="$(lib_of "$p")"
		if [ "$(dirname "$lib")" != "$libdir_real" ]; then
			fail "$name" "$p loads '$lib', not our library"
			return 0
		fi
	done
	port=$(sed -n 's/.*-p \([0-9]*\).*/\1/p' <<<"$sargs")
	# shellcheck disable=SC2086
	if PAIR_READY=listening launch_pair "$port" "$log.s" "$log.c" "$T" \
		"$sprog" $sargs -- "$cprog" $cargs; then
		if [ "${VERBOSE:-0}" = 1 ]; then
			echo "    server: $sprog $sargs"
			show "$log.s"
			echo "    client: $cprog $cargs"
			show "$log.c"
		fi
		pass "$name"
	else
		echo "    server: $sprog $sargs (exit $server_rc)"
		show "$log.s"
		echo "    client: $cprog $cargs (exit $client_rc)"
		show "$log.c"
		if why=$(example_pair_driver_bug "$log.s" "$log.c"); then
			xfail "$name" "$why"
		else
			fail "$name" "server exit $server_rc, client exit $client_rc"
		fi
	fi
}

# mcast_pair NAME GROUP BIND_RECV BIND_SEND [PROG]: mckey receiver, then
# once it says "joined" a sender; both must exit 0.
# The sender gets more time than the other tests: where the NIC holds rxe's
# multicast frames (BUGS.md rxe-mcast-hub-stall),
# destroying a QP that sent multicast datagrams stalls for about 50 s in the
# kernel (__rxe_cleanup waits for the frames' references and warns in dmesg),
# with Debian's librdmacm and mckey too.
MCAST_SEND_T=100
mcast_pair() {
	local name="$1" grp="$2" rb="$3" sb="$4" ex="${5:-mckey}" prog rc=0 src=0
	wanted "$name" || return 0
	iwarp_skip "$IWARP_NO_MCAST" "$name" && return 0
	case "$skipped" in
	*" mcast/${name#*/} "*)
		skip "$name" "cm_sys_test mcast/${name#*/} found no multicast support"
		return 0
		;;
	esac
	prog="$(real_prog "$EX/$ex")"
	built "$name" "$EX/$ex" || return 0
	if [ "$(dirname "$(lib_of "$prog")")" != "$libdir_real" ]; then
		fail "$name" "$prog loads '$(lib_of "$prog")', not our library"
		return 0
	fi
	: >"$log.c"
	server_start "$log.s" "$MCAST_SEND_T" "$prog" -m "$grp" -b "$rb" -C 4 -t 30
	wait_output "$log.s" joined 30 "$server_pid"
	timeout -k 5 "$MCAST_SEND_T" "$prog" -m "$grp" -b "$sb" -s -C 4 \
		>"$log.c" 2>&1 || rc=$?
	server_wait || src=$?
	if [ "$rc" = 0 ] && [ "$src" = 0 ]; then
		[ "${VERBOSE:-0}" = 1 ] && { show "$log.s"; show "$log.c"; }
		pass "$name"
	else
		echo "    receiver: $prog -m $grp -b $rb -C 4 -t 30 (exit $src)"
		show "$log.s"
		echo "    sender: $prog -m $grp -b $sb -s -C 4 (exit $rc)"
		show "$log.c"
		fail "$name" "receiver exit $src, sender exit $rc"
	fi
}

for f in "${families[@]}"; do
	read -r fam srv cli grp <<<"$f"
	pair "rping/$fam" rping "-s -a $srv -p $((port += 1)) -V" \
		"-c -a $srv -I $cli -p $port -C 10 -V"
	pair "ucmatose/$fam" ucmatose "-b $srv -p $((port += 1)) -c 2 -C 10" \
		"-s $srv -b $cli -p $port -c 2 -C 10"
	pair "ucmatose_reject/$fam" ucmatose "-b $srv -p $((port += 1)) -R" \
		"-s $srv -b $cli -p $port -R"
	iwarp_skip "$IWARP_NO_UD" "udaddy/$fam" ||
		pair "udaddy/$fam" udaddy "-b $srv -p $((port += 1))" \
			"-s $srv -b $cli -p $port"
	pair "cmtime/$fam" cmtime "-b $srv -p $((port += 1)) -c 20" \
		"-s $srv -b $cli -p $port -c 20"
	mcast_pair "mckey/$fam" "$grp" "$srv" "$cli"
	# mckey2 takes mckey's options; it joins through rdma_set_option.
	mcast_pair "mckey2/$fam" "$grp" "$srv" "$cli" mckey2
	pair "rdma_server_client/$fam" rdma_server "-s $srv -p $((port += 1))" \
		"-s $srv -p $port" rdma_client
done

finish
