#!/bin/bash
# Builds the Soft-iWARP driver (siw.ko) for the guest's kernel, out of tree.
#
# Debian's kernels are built without CONFIG_RDMA_SIW, but the driver is in
# Debian's kernel source package and needs nothing the kernel lacks. So:
#   - install linux-headers-<KVER> (the exact version: the module's vermagic
#     must match the guest kernel) if it is missing;
#   - download (never install) linux-source-<major.minor>, preferably the
#     version of linux-image-<KVER>, and unpack only
#     drivers/infiniband/sw/siw from its source tarball;
#   - make -C /usr/src/linux-headers-<KVER> M=<that folder> CONFIG_RDMA_SIW=m.
# The result is cached as $VM_CACHE/siw-<KVER>/siw.ko (about 20 s of
# compiling the first time; nothing afterwards). prepare.sh calls this when
# RDMACM_VM_TRANSPORT=siw.
#
# Usage: tests/vm/build-siw.sh KVER       (e.g. 6.1.0-56-amd64)
# Prints the path of siw.ko on stdout.
# Environment: RDMACM_VM_CACHE (see prepare.sh); RDMACM_VM_SIW_DRAIN=1
# builds the test-bed variant of siw-accept-drain.py instead (cached apart,
# per version of that change), with the accept and listen races of
# tests/system/BUGS.md (siw-accept-race, siw-listen-race) closed.
set -eu

VM_PROG=build-siw
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"
PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

[ $# = 1 ] || vm_die "usage: $0 KERNEL-VERSION"
KVER="$1"
VM_CACHE="$(realpath -m "$VM_CACHE")"
out="$(vm_siw_dir "$KVER")"
if [ -e "$out/.done" ] && [ -s "$out/siw.ko" ]; then
	echo "$out/siw.ko"
	exit 0
fi
mkdir -p "$VM_CACHE"

# --- the headers: installed, as the kernel's build system expects them -----
hdr="/usr/src/linux-headers-$KVER"
if [ ! -e "$hdr/Makefile" ]; then
	[ "$(id -u)" = 0 ] ||
		vm_die "linux-headers-$KVER is missing (need root to install it)"
	vm_say "installing linux-headers-$KVER"
	if ! apt_get install -y -qq \
		--no-install-recommends "linux-headers-$KVER" >&2; then
		apt_get update -qq >&2
		apt_get install -y -qq \
			--no-install-recommends "linux-headers-$KVER" >&2 ||
			vm_die "cannot install linux-headers-$KVER"
	fi
fi

# --- the driver's source: one directory out of Debian's kernel source -------
# linux-image-6.1.0-56-amd64 comes from source package linux 6.1.xxx-y,
# whose linux-source-6.1 has the same version when the archive still has
# it; a newer one of the same series also builds (siw uses only ib_core's
# exported interface), so that is the fallback.
series="$(cut -d. -f1-2 <<<"$KVER")"
srcpkg="linux-source-$series"
kimgver="$(apt-cache policy "linux-image-$KVER" 2>/dev/null |
	sed -n 's/^ *Candidate: //p' | grep -v '(none)' | head -n1)"

work="$(mktemp -d "$VM_CACHE/.siw.XXXXXX")"
trap 'rm -rf "$work"' EXIT
vm_say "fetching $srcpkg${kimgver:+ $kimgver}"
(
	cd "$work"
	{ [ -n "$kimgver" ] &&
		apt_get download -q -o APT::Sandbox::User=root "$srcpkg=$kimgver" >&2; } ||
		apt_get download -q -o APT::Sandbox::User=root "$srcpkg" >&2 ||
		{ apt_get update -qq >&2 &&
			apt_get download -q -o APT::Sandbox::User=root "$srcpkg" >&2; }
) || vm_die "cannot download $srcpkg"
deb="$(ls "$work"/*.deb)"
vm_say "unpacking drivers/infiniband/sw/siw from $(basename "$deb")"
mkdir -p "$work/siw"
# The .deb holds usr/src/linux-source-X.Y.tar.xz; only the driver's folder
# is taken out of that.
dpkg-deb --fsys-tarfile "$deb" |
	tar -xO "./usr/src/$srcpkg.tar.xz" |
	tar -xJ -C "$work/siw" --strip-components=5 \
		"$srcpkg/drivers/infiniband/sw/siw" ||
	vm_die "no drivers/infiniband/sw/siw in $srcpkg"
rm -f "$deb"
[ -e "$work/siw/Makefile" ] || vm_die "no siw Makefile unpacked"
if [ "${RDMACM_VM_SIW_DRAIN:-0}" = 1 ]; then
	vm_say "test-bed variant: BUGS.md siw-accept-race and siw-listen-race closed"
	"$VM_DIR/siw-accept-drain.py" "$work/siw/siw_cm.c" ||
		vm_die "cannot apply the test-bed change to siw_cm.c"
fi

vm_say "building siw.ko against $hdr"
make -s -C "$hdr" M="$work/siw" CONFIG_RDMA_SIW=m modules >&2 ||
	vm_die "building siw.ko failed"
[ -s "$work/siw/siw.ko" ] || vm_die "the build made no siw.ko"
modinfo -F vermagic "$work/siw/siw.ko" | grep -q "^$KVER " ||
	vm_die "siw.ko's vermagic is not $KVER"

rm -rf "$out.part"
mkdir -p "$out.part"
cp "$work/siw/siw.ko" "$out.part/siw.ko"
echo "$srcpkg ${kimgver:-unknown}" >"$out.part/source"
rm -rf "$out"
mv "$out.part" "$out"
touch "$out/.done"
vm_say "built $out/siw.ko"
echo "$out/siw.ko"
