#!/bin/bash
# Prepares everything the Soft-RoCE test guests need, idempotently:
#   - host packages (qemu, cpio, kmod, iproute2 for `rdma`, the rxe verbs
#     provider, Debian's rdmacm-utils/ibverbs-utils as the reference tools);
#   - Debian's kernel (the version linux-image-amd64 currently depends on; the
#     host's own kernel has no RDMA support) and a static busybox, downloaded
#     and unpacked into the cache, never installed; the kernel of another
#     Debian suite on request (sid: the newest), through apt lists of its own;
#   - an initramfs: busybox, the modules from guest/modules.list with their
#     dependencies in load order, and guest/init.
# Everything is cached under ${RDMACM_VM_CACHE:-$HOME/.cache/rdmacm-vm} and
# keyed by version (and by a hash of the initramfs inputs), so a second run
# only checks and prints.
#
# Usage: tests/vm/prepare.sh
# Environment:
#   RDMACM_VM_CACHE       cache directory (must be outside the git tree)
#   RDMACM_VM_KERNEL_PKG  pin a kernel package, e.g. linux-image-6.1.0-56-amd64
#   RDMACM_VM_KERNEL_SUITE  take the kernel from this Debian suite (e.g. sid)
#                         instead of the machine's own sources; its guests
#                         get a cache of their own (lib/common.sh)
#   RDMACM_VM_TRANSPORT   siw: also build siw.ko for that kernel (build-siw.sh)
set -eu

VM_PROG=prepare
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"

# depmod and modprobe live in /sbin, which a non-login PATH may lack.
PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

# --- host packages -------------------------------------------------------------
HOST_PKGS=(
	qemu-system-x86 # qemu-system-x86_64 (TCG)
	cpio            # packs the initramfs
	kmod            # depmod, modprobe --show-depends
	xz-utils        # unpacks the kernel image (see vmlinux below)
	zstd            # the same for a kernel of a later suite
	iproute2        # ip and rdma, run in the guest from the host root
	coreutils       # timeout, tail --pid
	ibverbs-providers # librxe: libibverbs' driver for Soft-RoCE devices
	ibverbs-utils   # ibv_devices, ibv_devinfo
	rdmacm-utils    # Debian's rping & co.: the reference behaviour
)

apt_updated=0
apt_update_once() {
	if [ "$apt_updated" = 0 ]; then
		vm_say "apt-get update"
		apt_get update -qq >&2
		apt_updated=1
	fi
}

missing=()
for p in "${HOST_PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	[ "$(id -u)" = 0 ] ||
		vm_die "missing host packages (need root to install): ${missing[*]}"
	apt_update_once
	vm_say "installing ${missing[*]}"
	apt_get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# --- the cache -----------------------------------------------------------------
VM_CACHE="$(realpath -m "$VM_CACHE")"
repo_top="$(cd "$VM_DIR/../.." && pwd -P)"
case "$VM_CACHE/" in
"$repo_top"/*) vm_die "RDMACM_VM_CACHE=$VM_CACHE is inside the source tree; put it elsewhere" ;;
esac
mkdir -p "$VM_CACHE"

# One prepare.sh at a time per cache (CI may start two guests at once).
exec 9>"$VM_CACHE/.lock"
flock 9

# The kernel's apt options: none for the machine's own sources, else a
# private source list of RDMACM_VM_KERNEL_SUITE (tests/lib/apt.sh).
kapt=()
if [ -n "$VM_KERNEL_SUITE" ]; then
	read -ra kapt <<<"$(apt_private_suite "$VM_CACHE/apt" "$VM_KERNEL_SUITE")"
	if ! compgen -G "$VM_CACHE/apt/lists/*Packages*" >/dev/null; then
		vm_say "apt-get update ($VM_KERNEL_SUITE, private lists)"
		apt_get "${kapt[@]}" update -qq >&2
	fi
fi

# Resolves what a package name currently means to apt, updating the package
# lists once if apt knows nothing yet (a fresh machine has no lists).
kernel_pkg() {
	apt-cache "${kapt[@]}" depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -n1
}
# The packages the kernel comes in: the image, and where the packaging
# splits it (sid's 7.2 does) the binary, modules and base files it depends
# on, each named after the same version.
kernel_parts() {
	echo "$1"
	apt-cache "${kapt[@]}" depends "$1" 2>/dev/null |
		sed -n "s/^ *Depends: \(linux-[a-z]*-$KVER\)\$/\1/p"
}
candidate() {
	apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: //p' |
		grep -v '(none)' | head -n1
}

KPKG="${RDMACM_VM_KERNEL_PKG:-$(kernel_pkg)}"
BBVER="$(candidate busybox-static)"
if [ -z "$KPKG" ] || [ -z "$BBVER" ]; then
	apt_update_once
	KPKG="${RDMACM_VM_KERNEL_PKG:-$(kernel_pkg)}"
	BBVER="$(candidate busybox-static)"
fi
[ -n "$KPKG" ] || vm_die "apt cannot tell which kernel linux-image-amd64 depends on"
[ -n "$BBVER" ] || vm_die "apt knows no busybox-static"
KVER="${KPKG#linux-image-}"

# Downloads packages (apt-get download, no install) and unpacks them into
# directory $1 with dpkg-deb -x; apt options first, up to "--".  Retries
# once after apt-get update, in case the lists are old and the mirror has
# dropped that version.
fetch_unpack() {
	local dest="$1" tmp deb
	local -a opts=()
	shift
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	tmp="$(mktemp -d "$VM_CACHE/.dl.XXXXXX")"
	# The _apt sandbox user cannot write into our directory; downloading as
	# root is fine for a file we only unpack.
	if ! (cd "$tmp" && apt_get "${opts[@]}" download -q -o APT::Sandbox::User=root "$@" >&2); then
		if [ "${#opts[@]}" = 0 ]; then
			apt_update_once
		else
			apt_get "${opts[@]}" update -qq >&2
		fi
		(cd "$tmp" && apt_get "${opts[@]}" download -q -o APT::Sandbox::User=root "$@" >&2) ||
			{ rm -rf "$tmp"; vm_die "cannot download $*"; }
	fi
	rm -rf "$dest.part"
	mkdir -p "$dest.part"
	for deb in "$tmp"/*.deb; do
		dpkg-deb -x "$deb" "$dest.part"
	done
	rm -rf "$tmp"
}

# Kernel: vmlinuz and the module tree, with modules.dep from depmod -b (the
# .deb ships without it; the postinst would normally make it).
kdir="$VM_CACHE/kernel-$KVER"
if [ ! -e "$kdir/.done" ]; then
	vm_say "fetching $KPKG${VM_KERNEL_SUITE:+ from $VM_KERNEL_SUITE}"
	# shellcheck disable=SC2046 # package names: one a word
	fetch_unpack "$kdir" "${kapt[@]}" -- $(kernel_parts "$KPKG")
	# A merged-/usr package has its modules in usr/lib/modules only.
	[ -e "$kdir.part/lib" ] || ln -s usr/lib "$kdir.part/lib"
	depmod -b "$kdir.part" "$KVER"
	rm -rf "$kdir"
	mv "$kdir.part" "$kdir"
	touch "$kdir/.done"
fi

# The kernel as an uncompressed ELF, booted through its PVH entry point: a
# bzImage spends over three seconds of TCG time inflating itself (Debian's
# is xz-compressed, sid's zstd) before the kernel even starts; qemu loads
# the ELF directly. Falls back to the bzImage if its payload is neither or
# it has no PVH entry.
vmlinuz="$kdir/boot/vmlinuz-$KVER"
kconfig="$kdir/boot/config-$KVER"
# Newer packages keep both beside the modules.
[ -e "$vmlinuz" ] || vmlinuz="$kdir/lib/modules/$KVER/vmlinuz"
[ -e "$kconfig" ] || kconfig="$kdir/lib/modules/$KVER/config"
vmlinux="$kdir/vmlinux-$KVER"
# inflate MAGIC COMMAND...: the stream that starts at MAGIC inside the
# bzImage, inflated into vmlinux.part; true if that is an ELF file.
inflate() {
	local off magic="$1"
	shift
	off="$(LC_ALL=C grep -abo "$magic" "$vmlinuz" | head -n1 | cut -d: -f1)" || off=""
	[ -n "$off" ] || return 1
	# The payload ends in its own size: the decompressors stop at the
	# stream's end or complain after it, and only what they wrote counts.
	tail -c +"$((off + 1))" "$vmlinuz" | "$@" >"$vmlinux.part" 2>/dev/null
	[ "$(head -c4 "$vmlinux.part" | od -An -c | tr -d ' ')" = '177ELF' ]
}
if [ ! -e "$vmlinux" ] && grep -qx 'CONFIG_PVH=y' "$kconfig"; then
	if inflate $'\xfd7zXZ' xz -dc --single-stream ||
		inflate $'\x28\xb5\x2f\xfd' zstd -dcq; then
		mv "$vmlinux.part" "$vmlinux"
	else
		rm -f "$vmlinux.part"
		vm_say "cannot extract an ELF kernel; booting the (slower) bzImage"
	fi
fi
boot_kernel="$vmlinuz"
[ -e "$vmlinux" ] && boot_kernel="$vmlinux"

# Busybox: the initramfs's only program (everything after the chroot is the
# host's own userspace).
bbdir="$VM_CACHE/busybox-${BBVER//:/_}"
if [ ! -e "$bbdir/.done" ]; then
	vm_say "fetching busybox-static $BBVER"
	fetch_unpack "$bbdir" -- busybox-static
	rm -rf "$bbdir"
	mv "$bbdir.part" "$bbdir"
	touch "$bbdir/.done"
fi

# --- the initramfs -------------------------------------------------------------
hash="$(vm_initrd_hash "$KVER" "$BBVER")"
initrd="$kdir/initrd-$hash.cpio"
if [ ! -e "$initrd" ]; then
	vm_say "building initramfs $initrd"
	tree="$(mktemp -d "$VM_CACHE/.initrd.XXXXXX")"
	mkdir -p "$tree"/{bin,dev,proc,sys,host,out,lib/modules}
	cp "$bbdir/bin/busybox" "$tree/bin/busybox"
	install -m 0755 "$VM_DIR/guest/init" "$tree/init"

	# modprobe --show-depends prints, for each wanted module, the insmod
	# lines that would load it and its dependencies, dependencies first
	# (nothing for one built in).  Concatenated and de-duplicated (first
	# occurrence wins) that is a valid load order for the whole set.  A
	# name ending in "?" may be missing from this kernel.
	modroot="$(cd "$kdir/lib/modules/$KVER" && pwd -P)"
	deps=""
	for m in $(sed 's/#.*//' "$VM_DIR/guest/modules.list"); do
		if ! deps+="$(modprobe -d "$kdir" -S "$KVER" --show-depends "${m%\?}" 2>/dev/null)"; then
			[ "$m" != "${m%\?}" ] || vm_die "kernel $KVER has no module $m"
		fi
		deps+=$'\n'
	done
	: >"$tree/modules.order"
	for path in $(awk '$1 == "insmod" && !seen[$2]++ { print $2 }' <<<"$deps"); do
		path="$(realpath "$path")"
		rel="${path#"$modroot"/}"
		mkdir -p "$tree/lib/modules/$(dirname "$rel")"
		# busybox's insmod loads a module as it is: inflated here.
		case "$rel" in
		*.ko.xz) rel="${rel%.xz}" && xz -dc "$path" >"$tree/lib/modules/$rel" ;;
		*.ko.zst) rel="${rel%.zst}" && zstd -qdc "$path" >"$tree/lib/modules/$rel" ;;
		*.ko.gz) rel="${rel%.gz}" && gzip -dc "$path" >"$tree/lib/modules/$rel" ;;
		*) cp "$path" "$tree/lib/modules/$rel" ;;
		esac
		echo "$rel" >>"$tree/modules.order"
	done
	[ -s "$tree/modules.order" ] || vm_die "no modules resolved"

	# Left uncompressed: the kernel then need not inflate it under TCG, and
	# qemu loads a few MB in no time.
	(cd "$tree" && find . -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc --quiet --owner=0:0) >"$initrd.part"
	mv "$initrd.part" "$initrd"
	rm -rf "$tree"
	# Older initramfs builds of this kernel are of no further use.
	find "$kdir" -maxdepth 1 -name 'initrd-*.cpio' ! -name "initrd-$hash.cpio" -delete
fi

# Soft-iWARP: siw.ko for this kernel, built out of tree (only when asked
# for: it needs the kernel headers and a download of the kernel source).
if [ "$VM_TRANSPORT" = siw ]; then
	[ -z "$VM_KERNEL_SUITE" ] ||
		vm_die "Soft-iWARP is built for the machine's kernel only (RDMACM_VM_KERNEL_SUITE=$VM_KERNEL_SUITE)"
	"$VM_DIR/build-siw.sh" "$KVER" >/dev/null || vm_die "cannot build siw.ko"
fi

# What run-guest.sh loads: written last, atomically, so a half-done prepare
# is never mistaken for a finished one.
{
	printf 'VM_KVER=%q\n' "$KVER"
	printf 'VM_BUSYBOX_VERSION=%q\n' "$BBVER"
	printf 'VM_KERNEL=%q\n' "$boot_kernel"
	printf 'VM_INITRD=%q\n' "$initrd"
	printf 'VM_INITRD_HASH=%q\n' "$hash"
	# For tests that need more modules at run time (modprobe -d this).
	printf 'VM_MODULES_ROOT=%q\n' "$kdir"
} >"$VM_CACHE/current.env.part"
mv "$VM_CACHE/current.env.part" "$VM_CACHE/current.env"

vm_say "ready: kernel $KVER, initramfs $initrd"
