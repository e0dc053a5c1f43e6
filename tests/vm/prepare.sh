#!/bin/bash
# Prepares everything the Soft-RoCE test guests need, idempotently:
#   - host packages (qemu, cpio, kmod, iproute2 for `rdma`, the rxe verbs
#     provider, Debian's rdmacm-utils/ibverbs-utils as the reference tools);
#   - Debian's kernel (the version linux-image-amd64 currently depends on; the
#     host's own kernel has no RDMA support) and a static busybox, downloaded
#     and unpacked into the cache, never installed;
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

# Resolves what a package name currently means to apt, updating the package
# lists once if apt knows nothing yet (a fresh machine has no lists).
kernel_pkg() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -n1
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

# Downloads package $1 (apt-get download, no install) and unpacks it into
# directory $2 with dpkg-deb -x. Retries once after apt-get update, in case
# the lists are old and the mirror has dropped that version.
fetch_unpack() {
	local pkg="$1" dest="$2" tmp deb
	tmp="$(mktemp -d "$VM_CACHE/.dl.XXXXXX")"
	# The _apt sandbox user cannot write into our directory; downloading as
	# root is fine for a file we only unpack.
	if ! (cd "$tmp" && apt_get download -q -o APT::Sandbox::User=root "$pkg" >&2); then
		apt_update_once
		(cd "$tmp" && apt_get download -q -o APT::Sandbox::User=root "$pkg" >&2) ||
			{ rm -rf "$tmp"; vm_die "cannot download $pkg"; }
	fi
	deb="$(ls "$tmp"/*.deb)"
	rm -rf "$dest.part"
	mkdir -p "$dest.part"
	dpkg-deb -x "$deb" "$dest.part"
	rm -rf "$tmp"
}

# Kernel: vmlinuz and the module tree, with modules.dep from depmod -b (the
# .deb ships without it; the postinst would normally make it).
kdir="$VM_CACHE/kernel-$KVER"
if [ ! -e "$kdir/.done" ]; then
	vm_say "fetching $KPKG"
	fetch_unpack "$KPKG" "$kdir"
	depmod -b "$kdir.part" "$KVER"
	rm -rf "$kdir"
	mv "$kdir.part" "$kdir"
	touch "$kdir/.done"
fi

# The kernel as an uncompressed ELF, booted through its PVH entry point: a
# bzImage spends over three seconds of TCG time inflating itself (Debian's
# is xz-compressed) before the kernel even starts; qemu loads the ELF
# directly. Falls back to the bzImage if this kernel is not xz-compressed or
# has no PVH entry.
vmlinuz="$kdir/boot/vmlinuz-$KVER"
vmlinux="$kdir/vmlinux-$KVER"
if [ ! -e "$vmlinux" ] && grep -qx 'CONFIG_PVH=y' "$kdir/boot/config-$KVER"; then
	# The xz stream starts at its magic bytes inside the bzImage.
	off="$(LC_ALL=C grep -abo $'\xfd7zXZ' "$vmlinuz" | head -n1 | cut -d: -f1)" || off=""
	if [ -n "$off" ] &&
		tail -c +"$((off + 1))" "$vmlinuz" | xz -dc --single-stream >"$vmlinux.part" 2>/dev/null &&
		[ "$(head -c4 "$vmlinux.part" | od -An -c | tr -d ' ')" = '177ELF' ]; then
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
	fetch_unpack busybox-static "$bbdir"
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
	# lines that would load it and its dependencies, dependencies first.
	# Concatenated and de-duplicated (first occurrence wins) that is a valid
	# load order for the whole set.
	modroot="$kdir/lib/modules/$KVER"
	deps=""
	for m in $(sed 's/#.*//' "$VM_DIR/guest/modules.list"); do
		deps+="$(modprobe -d "$kdir" -S "$KVER" --show-depends "$m")" ||
			vm_die "kernel $KVER has no module $m"
		deps+=$'\n'
	done
	: >"$tree/modules.order"
	for path in $(awk '$1 == "insmod" && !seen[$2]++ { print $2 }' <<<"$deps"); do
		rel="${path#"$modroot"/}"
		mkdir -p "$tree/lib/modules/$(dirname "$rel")"
		cp "$path" "$tree/lib/modules/$rel"
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
