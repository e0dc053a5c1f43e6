# Shared by the host-side scripts of tests/vm (sourced, not run).
# shellcheck shell=bash

VM_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# apt_get: apt-get that waits for the package manager's locks.
# shellcheck source=../../lib/apt.sh
. "$VM_DIR/../lib/apt.sh"

# Where the kernel, busybox and initramfs are cached. Outside the git tree on
# purpose: hundreds of MB that must never be committed, and shared by every
# checkout on the machine.
VM_CACHE="${RDMACM_VM_CACHE:-${HOME:-/root}/.cache/rdmacm-vm}"
# A kernel of another Debian suite (prepare.sh) has a cache of its own, so
# that guests of both kinds can run side by side.
VM_KERNEL_SUITE="${RDMACM_VM_KERNEL_SUITE:-}"
case "$VM_KERNEL_SUITE" in
'') ;;
*[!a-z0-9-]*)
	echo "${VM_PROG:-vm}: RDMACM_VM_KERNEL_SUITE=$VM_KERNEL_SUITE: a Debian suite name" >&2
	exit 125
	;;
*) VM_CACHE="$VM_CACHE/suite-$VM_KERNEL_SUITE" ;;
esac

VM_TIMEOUT="${RDMACM_VM_TIMEOUT:-600}"
# Which soft RDMA device the guests get: rxe (Soft-RoCE, the default) or
# siw (Soft-iWARP, built out of tree by build-siw.sh).
VM_TRANSPORT="${RDMACM_VM_TRANSPORT:-rxe}"
case "$VM_TRANSPORT" in
rxe | siw) ;;
*)
	echo "${VM_PROG:-vm}: RDMACM_VM_TRANSPORT=$VM_TRANSPORT: use rxe or siw" >&2
	exit 125
	;;
esac
VM_DEFAULT_SMP=2

vm_say() { echo "${VM_PROG:-vm}: $*" >&2; }
vm_die() {
	vm_say "$*"
	exit 125
}

# The initramfs is named after a hash of everything that goes into it, so
# editing guest/init, guest/modules.list or prepare.sh (or a new kernel or
# busybox)
# yields a new file and an old one is never used by mistake.
# Arguments: kernel version, busybox version.
vm_initrd_hash() {
	{
		echo "rdmacm-vm initramfs format 1"
		echo "kernel $1"
		echo "busybox $2"
		cat "$VM_DIR/guest/init" "$VM_DIR/guest/modules.list" "$VM_DIR/prepare.sh"
	} | sha256sum | cut -c1-16
}

# Where build-siw.sh caches siw.ko for kernel version $1 (the test-bed
# variant of RDMACM_VM_SIW_DRAIN=1 has a folder of its own).
vm_siw_dir() {
	local change
	if [ "${RDMACM_VM_SIW_DRAIN:-0}" = 1 ]; then
		# A changed test-bed patch is a different driver: built apart.
		change=$(sha1sum "$VM_DIR/siw-accept-drain.py" | cut -c1-8)
		echo "$VM_CACHE/siw-$1-drain-$change"
	else
		echo "$VM_CACHE/siw-$1"
	fi
}

# Loads $VM_CACHE/current.env (written by prepare.sh) and checks that it
# still matches guest/init and guest/modules.list. Returns non-zero when
# prepare.sh has to run.
vm_load_current() {
	local f="$VM_CACHE/current.env"
	[ -r "$f" ] || return 1
	# shellcheck source=/dev/null
	. "$f"
	[ -r "${VM_KERNEL:-}" ] && [ -r "${VM_INITRD:-}" ] || return 1
	[ "$(vm_initrd_hash "$VM_KVER" "$VM_BUSYBOX_VERSION")" = "$VM_INITRD_HASH" ] ||
		return 1
	command -v qemu-system-x86_64 >/dev/null || return 1
	if [ "$VM_TRANSPORT" = siw ]; then
		VM_SIW_KO="$(vm_siw_dir "$VM_KVER")/siw.ko"
		[ -e "$(vm_siw_dir "$VM_KVER")/.done" ] || return 1
	fi
}

# Makes sure the cache is ready (running prepare.sh when it is not) and
# leaves VM_KERNEL, VM_INITRD, VM_KVER, VM_MODULES_ROOT set.
vm_ensure_prepared() {
	if ! vm_load_current; then
		vm_say "guest kernel/initramfs not ready; running prepare.sh"
		"$VM_DIR/prepare.sh" >&2 || vm_die "prepare.sh failed"
		vm_load_current || vm_die "prepare.sh did not produce a usable cache"
	fi
}

# Environment variables handed from the caller to the test script in the
# guest: the guest starts from a clean environment, so only these get in.
# RDMACM_VM_PASS_ENV may name more, separated by spaces.
vm_env_wanted() {
	local name
	for name in $(compgen -e); do
		case "$name" in
		PATH | LD_LIBRARY_PATH | LD_PRELOAD | LD_BIND_NOW | \
			RDMACM_* | RDMA_* | RDMAV_* | IBV_* | MLX5_* | TEST_* | \
			ASAN_OPTIONS | UBSAN_OPTIONS | LSAN_OPTIONS | TSAN_OPTIONS | \
			MSAN_OPTIONS | VALGRIND_OPTS | CI | VERBOSE)
			echo "$name"
			;;
		esac
	done
	for name in ${RDMACM_VM_PASS_ENV:-}; do
		echo "$name"
	done
}

# Writes the file stage2.sh sources in guest number $1: the pass-through
# variables (quoted with %q, which the guest's bash reads back exactly),
# then this guest's addresses, working directory and command line, then the
# address variables every test uses (run-native.sh's caller sets the same).
# Arguments: guest number, its addresses (space separated, with /prefix),
# working directory, command and its arguments.
vm_write_env() {
	local guest="$1" addrs="$2" cwd="$3" name
	shift 3
	{
		echo "# written by tests/vm on the host for guest $guest"
		for name in $(vm_env_wanted | sort -u); do
			[[ "$name" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
			[ -n "${!name+set}" ] || continue
			printf 'export %s=%q\n' "$name" "${!name}"
		done
		printf 'RDMACM_VM_ADDRS=%q\n' "$addrs"
		printf 'RDMACM_VM_CWD=%q\n' "$cwd"
		printf 'RDMACM_VM_ARGV=('
		printf ' %q' "$@"
		printf ' )\n'
		echo "export RDMACM_VM_OUT=$VM_OUT"
		# The guest kernel's full module tree (read-only, through the host
		# root), for tests that need more: modprobe -d "$RDMACM_VM_MODULES" veth
		printf 'export RDMACM_VM_MODULES=%q\n' "$VM_MODULES_ROOT"
		echo "export RDMA_TEST_ADDR1=192.0.2.1 RDMA_TEST_ADDR2=192.0.2.2"
		echo "export RDMA_TEST_ADDR6_1=2001:db8::1 RDMA_TEST_ADDR6_2=2001:db8::2"
		if [ "$VM_TRANSPORT" = siw ]; then
			printf 'export RDMACM_VM_SIW_KO=%q\n' "$VM_SIW_KO"
			echo "export RDMA_TEST_DEV=siw0 RDMA_TEST_NETDEV=eth0"
			echo "export RDMA_TEST_TRANSPORT=iwarp"
		else
			echo "export RDMA_TEST_DEV=rxe0 RDMA_TEST_NETDEV=eth0"
			echo "export RDMA_TEST_TRANSPORT=roce"
		fi
		echo "export RDMACM_VM_TRANSPORT=$VM_TRANSPORT"
	} >"$VM_OUT/.vm/env-$guest.sh"
}

# The guest mounts fresh tmpfs on /tmp, /run, /var/tmp and /dev/shm, hiding
# whatever the host has there: a script or working directory there would not
# exist in the guest.
vm_check_guest_path() {
	local p
	for p in "$@"; do
		case "$p" in
		/tmp | /tmp/* | /run | /run/* | /var/tmp | /var/tmp/* | /dev/shm | /dev/shm/*)
			vm_die "$p is under a directory the guest replaces with an empty tmpfs; use another place"
			;;
		esac
	done
}

# Creates the writable results share: $RDMACM_VM_OUT when the caller names
# one (kept), else a fresh temporary directory (removed after a passing run
# unless RDMACM_VM_KEEP=1). Sets VM_OUT and VM_OUT_IS_TEMP.
vm_make_out() {
	if [ -n "${RDMACM_VM_OUT:-}" ]; then
		mkdir -p "$RDMACM_VM_OUT"
		VM_OUT="$(cd "$RDMACM_VM_OUT" && pwd -P)"
		VM_OUT_IS_TEMP=0
	else
		VM_OUT="$(mktemp -d "${TMPDIR:-/tmp}/rdmacm-vm.XXXXXX")"
		VM_OUT="$(cd "$VM_OUT" && pwd -P)"
		VM_OUT_IS_TEMP=1
	fi
	# The path goes on the kernel command line and becomes a mount point in
	# the guest: keep it to characters that survive both.
	[[ "$VM_OUT" =~ ^/[A-Za-z0-9_./+-]+$ ]] ||
		vm_die "results directory '$VM_OUT' has characters the guest cannot take"
	case "$VM_OUT" in
	/proc | /proc/* | /sys | /sys/* | /dev | /dev/*)
		vm_die "results directory '$VM_OUT' would hide a system directory in the guest"
		;;
	esac
	rm -rf "$VM_OUT/.vm"
	mkdir -p "$VM_OUT/.vm"
	cp "$VM_DIR/guest/stage2.sh" "$VM_OUT/.vm/stage2.sh"
}

# More qemu options for the NIC's side (run-guest.sh's sink); none by default.
declare -a VM_NET_EXTRA=()

# The qemu command line for guest number $1, whose NIC uses netdev options
# $2 and MAC address $3 (the netdev's id must be n0). -accel tcg: KVM is not usable on this machine kind
# (nested virtualisation), and TCG behaves the same everywhere.
# Sets the array VM_QEMU.
vm_qemu_cmd() {
	local guest="$1" netdev="$2" mac="$3"
	local -a accel=(-accel tcg)
	local smp=${RDMACM_VM_SMP:-$VM_DEFAULT_SMP}
	# RDMACM_VM_ICOUNT=SHIFT: a guest whose clock counts instructions
	# (2^SHIFT ns each) and skips idle time, so a time measured in it is
	# the work done, whatever else the host runs (tests/bench/README.md).
	# One vCPU: qemu 7.2 with -icount hangs bringing up a second one.
	if [ -n "${RDMACM_VM_ICOUNT:-}" ]; then
		accel=(-accel "tcg,thread=single"
			-icount "shift=$RDMACM_VM_ICOUNT,sleep=off")
		smp=1
	fi
	VM_QEMU=(
		qemu-system-x86_64
		"${accel[@]}"
		-m "${RDMACM_VM_MEM:-1024}"
		-smp "$smp"
		-nographic -nodefaults -no-user-config -monitor none
		-serial "file:$VM_OUT/console-$guest.log"
		# A kernel panic reboots (panic=-1), and -no-reboot turns that into
		# qemu exiting, so a crashed guest ends at once.  no_timer_check:
		# at boot the kernel counts timer interrupts over a few busy-wait
		# loops, and an emulated CPU that the host preempts meanwhile
		# counts too few and panics ("IO-APIC + timer doesn't work",
		# seen once in a CI run); the kernel's own option for guests.
		-no-reboot
		-kernel "$VM_KERNEL" -initrd "$VM_INITRD"
		-append "console=ttyS0 quiet loglevel=3 panic=-1 mitigations=off no_timer_check rdmacm_out=$VM_OUT rdmacm_guest=$guest"
		# The host root read-only (tests run the host's binaries from the
		# build tree); multidevs=remap keeps inode numbers unique across the
		# host's several file systems.
		-virtfs "local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap"
		-virtfs "local,path=$VM_OUT,mount_tag=out,security_model=none"
		# The NIC rxe sits on. No host network backend: a hub port with no
		# other member, or a loopback socket to the other guest. romfile=
		# skips the PXE option ROM, which we never boot from.
		-netdev "$netdev"
		-device "virtio-net-pci,netdev=n0,mac=$mac,romfile="
		"${VM_NET_EXTRA[@]}"
	)
}

# Reads the exit status that guest $1 printed on its console. Prints it, or
# nothing when the marker is missing (the guest died or never finished).
vm_guest_status() {
	sed -n 's/^.*@@GUEST_EXIT=\([0-9]\{1,3\}\)@@.*$/\1/p' \
		"$VM_OUT/console-$1.log" 2>/dev/null | tail -n1
}

# Starts guest number $1 in the background under timeout(1) (SIGTERM after
# RDMACM_VM_TIMEOUT seconds, SIGKILL 5 s later), with NIC netdev options $2
# and MAC address $3. Records the pid in VM_PIDS[$1].
declare -a VM_PIDS=()
vm_start_guest() {
	local guest="$1"
	vm_qemu_cmd "$@"
	# A console log left by an earlier run in the same results directory
	# would hold that run's exit marker: never let it stand in for this one.
	rm -f "$VM_OUT/console-$guest.log" "$VM_OUT/qemu-$guest.log"
	: >"$VM_OUT/output-$guest.log"
	timeout -k 5 "$VM_TIMEOUT" "${VM_QEMU[@]}" \
		</dev/null >"$VM_OUT/qemu-$guest.log" 2>&1 &
	VM_PIDS[guest]=$!
}

# Streams guest $1's output file to stdout while it runs, each line prefixed
# with $2 (if given); tail ends shortly after that guest's qemu does, once it
# has printed what is left. Records the pid in VM_TAILS[$1].
declare -a VM_TAILS=()
vm_stream_guest() {
	local guest="$1" prefix="${2:-}"
	if [ -n "$prefix" ]; then
		tail -n +1 -s 0.2 -F --pid="${VM_PIDS[guest]}" \
			"$VM_OUT/output-$guest.log" 2>/dev/null | sed -u "s/^/$prefix/" &
	else
		tail -n +1 -s 0.2 -F --pid="${VM_PIDS[guest]}" \
			"$VM_OUT/output-$guest.log" 2>/dev/null &
	fi
	VM_TAILS[guest]=$!
}

# Takes every guest down (timeout(1) passes the signal on to qemu). Used when
# we are interrupted, so that a ^C or a CI cancel leaves no qemu behind.
vm_kill_guests() {
	local p
	for p in "${VM_PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
}
vm_trap_signals() {
	trap 'vm_kill_guests' EXIT
	trap 'vm_say "interrupted"; exit 130' INT
	trap 'vm_say "terminated"; exit 143' TERM
}

# Says so when guest $1's kernel saw a CPU stuck (a soft lockup): the host
# stopped the guest or the clock it runs on jumped, as once happened to
# both guests of a run at the same instant (stuck for 5710 s in a 695 s
# run).  Every watchdog and time bound in the guest that spanned it fired
# for nothing: a failure then is the test bed's to explain, not the
# library's.  The verdicts stand; this only says why they may be void.
# Which it was shows in the reports: a guest stopped from outside reports
# once, with the whole gap; a CPU that spins in the guest's kernel is
# reported every 20-odd seconds, the first after about 22 s, with where
# it spun (RIP) and which task: both are printed.
vm_note_stalls() {
	local guest="$1" log="$VM_OUT/console-$1.log" secs n first where
	secs=$(sed -n 's/.*soft lockup - CPU#[0-9]* stuck for \([0-9]*\)s!.*/\1/p' \
		"$log" 2>/dev/null)
	[ -n "$secs" ] || return 0
	n=$(printf '%s\n' "$secs" | wc -l)
	first=$(sed -n '/soft lockup - CPU#/{s/.*stuck for \([0-9]*s\)! *\(.*\)/\1 \2/p;q}' \
		"$log")
	where=$(sed -n '/soft lockup - CPU#/,${/RIP: /{s/.*RIP: [0-9a-f]*://p;q}}' \
		"$log")
	vm_say "guest $guest: its kernel saw a CPU stuck for" \
		"$(printf '%s\n' "$secs" | sort -n | tail -n1) s (soft" \
		"lockup; $n report(s), the first: stuck for $first, RIP" \
		"${where:-not shown}): one report with the whole gap is the host" \
		"stopping the guest or its clock jumping, reports every 20-odd s" \
		"a spin in the guest's kernel; the guest's watchdogs and time" \
		"bounds across that span are void (console: $log)"
}

# Waits for guest $1 (and its output stream) and sets VM_STATUS to the
# exit status the launcher should report for it: the script's, 124 if the
# guest ran out of time, 125 if it ended without reporting a status.
vm_wait_guest() {
	local guest="$1" rc=0 status
	wait "${VM_PIDS[guest]}" || rc=$?
	wait "${VM_TAILS[guest]}" 2>/dev/null || true
	vm_note_stalls "$guest"
	if [ "$rc" = 124 ]; then
		vm_say "TIMEOUT: guest $guest still running after ${VM_TIMEOUT}s; killed" \
			"(console: $VM_OUT/console-$guest.log); its last console lines:"
		tail -n 40 "$VM_OUT/console-$guest.log" >&2 2>/dev/null || true
		VM_STATUS=124
		return
	fi
	status="$(vm_guest_status "$guest")"
	if [ -z "$status" ]; then
		vm_say "guest $guest ended without reporting an exit status" \
			"(qemu status $rc); last console lines:"
		tail -n 30 "$VM_OUT/console-$guest.log" >&2 2>/dev/null || true
		tail -n 10 "$VM_OUT/qemu-$guest.log" >&2 2>/dev/null || true
		VM_STATUS=125
		return
	fi
	# shellcheck disable=SC2034 # read by the launchers
	VM_STATUS="$status"
}

# Seconds since the launcher started, to one decimal place.
VM_START_NS="$(date +%s%N)"
vm_elapsed() {
	local ds=$((($(date +%s%N) - VM_START_NS) / 100000000))
	echo "$((ds / 10)).$((ds % 10))"
}

# Removes a temporary results directory after a passing run, unless asked
# to keep it; otherwise says where it is.
vm_cleanup_out() {
	if [ "$1" = 0 ] && [ "$VM_OUT_IS_TEMP" = 1 ] && [ "${RDMACM_VM_KEEP:-0}" != 1 ]; then
		rm -rf "$VM_OUT"
	else
		vm_say "results kept in $VM_OUT"
	fi
}
