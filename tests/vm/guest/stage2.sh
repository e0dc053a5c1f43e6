#!/bin/bash
# Second stage of the test guest: runs inside the chroot of the host root,
# with the host's own bash, ip, rdma and libraries.
#
# run-guest.sh copies this file into <results>/.vm/ and writes an env-<n>.sh
# beside it; /init runs it as `stage2.sh <guest number>` with stdout/stderr
# already going to <results>/output-<n>.log. It sets up the network and the
# Soft-RoCE device, then runs the test script and exits with its status.
# Kept out of the initramfs so it can change without a rebuild.
set -eu

guest="$1"
here="$(dirname "$0")"

say() { echo "[vm$guest] $*"; }
die() {
	say "setup failed: $*"
	exit 125
}

# The caller's environment (the pass-through list) and this run's settings:
# RDMACM_VM_ADDRS, RDMACM_VM_CWD, RDMACM_VM_ARGV and the RDMA_TEST_* names.
# shellcheck source=/dev/null
. "$here/env-$guest.sh"
# RDMACM_VM_DEBUG=1 traces the setup with timestamps (to find where guest
# time goes).
if [ "${RDMACM_VM_DEBUG:-0}" = 1 ]; then
	read -r up _ </proc/uptime
	say "stage2 started at uptime $up"
	PS4='+ $EPOCHREALTIME '
	set -x
fi
# The caller's PATH may lack the sbin directories that ip and rdma live in.
PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

# --- network -----------------------------------------------------------------
# eth0 is a virtio-net NIC whose only peer is a qemu hub port (one guest) or
# the other guest over a loopback socket, so these documentation-range
# addresses never reach any real network.
# One `ip -batch` instead of one ip per address: every exec costs tens of
# milliseconds under TCG with binaries read over 9p.
{
	echo "link set lo up"
	echo "link set eth0 up"
	for a in $RDMACM_VM_ADDRS; do
		case "$a" in
		# nodad: without it an IPv6 address stays "tentative" for a second
		# or more (duplicate address detection) and bind() to it fails
		# with EADDRNOTAVAIL meanwhile.
		*:*) echo "addr add $a dev eth0 nodad" ;;
		*) echo "addr add $a dev eth0" ;;
		esac
	done
} | ip -batch - || die "cannot configure eth0"

# --- the RDMA device -----------------------------------------------------------
# RDMACM_VM_TRANSPORT=rxe (the default): Soft-RoCE, whose module the
# initramfs loaded. siw: Soft-iWARP from build-siw.sh's siw.ko, which needs
# crc32c (libcrc32c and a crc32c implementation for the crypto API) from the
# guest kernel's own module tree; no rxe device then, so that address
# resolution can only pick siw0.
transport="${RDMACM_VM_TRANSPORT:-rxe}"
if [ "$transport" = siw ]; then
	for m in crc32c_generic libcrc32c; do
		modprobe -d "$RDMACM_VM_MODULES" "$m" || die "cannot load $m"
	done
	insmod "$RDMACM_VM_SIW_KO" ||
		die "cannot load $RDMACM_VM_SIW_KO"
	rdma link add siw0 type siw netdev eth0 || die "rdma link add siw0 failed"
	# iWARP has no GID table to fill: its connections go over the netdev's
	# TCP, and the port is usable once it is ACTIVE.
	for ((i = 0; ; i++)); do
		read -r _ state </sys/class/infiniband/siw0/ports/1/state || state=""
		[ "$state" = ACTIVE ] && break
		((i < 100)) || die "siw0 port not ACTIVE after 10 s (state '$state')"
		sleep 0.1
	done
else
	rdma link add rxe0 type rxe netdev eth0 || die "rdma link add rxe0 failed"

	# ib_core fills the device's GID table from the netdev's addresses on a
	# workqueue, a little after the addresses are added; a test that starts
	# before its address has a GID gets EADDRNOTAVAIL/ENODEV from rdma_cm. So wait
	# until every address shows up in the GID table (as sysfs spells a GID: eight
	# groups of four hex digits; IPv4 addresses appear as ::ffff:a.b.c.d).
	gid_of() {
		local ip="${1%/*}" head tail n i g out=""
		local -a groups=() h=() t=()
		case "$ip" in
		*:*)
			# Expand "::" into the missing zero groups.
			if [[ "$ip" == *::* ]]; then
				head="${ip%%::*}" tail="${ip#*::}"
			else
				head="$ip" tail=""
			fi
			[ -n "$head" ] && IFS=: read -r -a h <<<"$head"
			[ -n "$tail" ] && IFS=: read -r -a t <<<"$tail"
			groups=("${h[@]}")
			n=$((8 - ${#h[@]} - ${#t[@]}))
			for ((i = 0; i < n; i++)); do groups+=(0); done
			groups+=("${t[@]}")
			;;
		*)
			local a b c d
			IFS=. read -r a b c d <<<"$ip"
			printf -v b '%x' $((a * 256 + b))
			printf -v d '%x' $((c * 256 + d))
			groups=(0 0 0 0 0 ffff "$b" "$d")
			;;
		esac
		for g in "${groups[@]}"; do
			printf -v g '%04x' "0x$g"
			out+="$g:"
		done
		echo "${out%:}"
	}
	# The table has 1024 entries and reading them all takes most of a second;
	# new GIDs take the lowest free slots, and we add well under 32.
	gids=(/sys/class/infiniband/rxe0/ports/1/gids/{0..31})
	for a in $RDMACM_VM_ADDRS; do
		want="$(gid_of "$a")"
		for ((i = 0; ; i++)); do
			grep -qx "$want" "${gids[@]}" 2>/dev/null && break
			((i < 100)) || die "no GID for $a on rxe0 after 10 s"
			sleep 0.1
		done
	done
fi

# --- the test ------------------------------------------------------------------
# Registering memory pins it; the default 8 MiB locked-memory limit is far
# too small for RDMA tests.
ulimit -l unlimited
set +x
if [ "${RDMACM_VM_DEBUG:-0}" = 1 ]; then
	read -r up _ </proc/uptime
	say "test starting at uptime $up"
fi

export RDMACM_VM_GUEST="$guest"
cd "$RDMACM_VM_CWD" || die "no directory $RDMACM_VM_CWD in the guest"

script="${RDMACM_VM_ARGV[0]}"
status=0
if [ -x "$script" ]; then
	"${RDMACM_VM_ARGV[@]}" || status=$?
else
	bash "${RDMACM_VM_ARGV[@]}" || status=$?
fi
exit "$status"
