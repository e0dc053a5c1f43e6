#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
#
# Fetch Debian's librdmacm1 and librdmacm-dev, the reference the ABI checks
# compare this library against, and print the directory they are unpacked
# in (it holds usr/include and usr/lib/<triplet>).
#
#   fetch-reference.sh        Debian 12's rdma-core 44 (the machine's apt)
#   fetch-reference.sh 65     Debian sid's rdma-core 65 (librdmacm1t64,
#                             librdmacm-dev, rdmacm-utils), downloaded
#                             through a sid source list kept in the cache and
#                             given to apt-get for that download only: the
#                             machine's own sources never see sid.  Only
#                             headers and symbols are read from it: its
#                             binaries need a newer glibc than Debian 12's.
#
# The reference is only ever read by the checks in this directory; it must
# never be put on the build's include or library path.
#
# Environment:
#   RDMACM_REF_CACHE    cache directory (default $HOME/.cache/rdmacm-ref,
#                       or rdmacm-ref65 for 65)
#   RDMACM_REF_VERSION  pin a Debian version, e.g. 44.0-2 (default: whatever
#                       apt's candidate is; 65.0-1.1 for 65)
#   RDMACM_REF_MIRROR   the Debian mirror for 65 (http://deb.debian.org/debian)
#
# A failed download (no network, sid moved on) exits non-zero with apt's
# messages on stderr, as for 44: the abi suite reports it as a failed check.
#
# Idempotent: the .deb files are downloaded once, and unpacked again only
# when they change.  Progress goes to stderr; stdout is just the path.

set -eu

# apt_get: apt-get that waits for the package manager's locks.
. "$(cd "$(dirname "$0")/../lib" && pwd)/apt.sh"

tag=${1:-}
case $tag in
'' | 44)
	cache=${RDMACM_REF_CACHE:-${HOME:-/root}/.cache/rdmacm-ref}
	pkgs="librdmacm1 librdmacm-dev"
	set --
	;;
65)
	cache=${RDMACM_REF_CACHE:-${HOME:-/root}/.cache/rdmacm-ref65}
	pkgs="librdmacm1t64 librdmacm-dev rdmacm-utils"
	RDMACM_REF_VERSION=${RDMACM_REF_VERSION:-65.0-1.1}
	# apt-get with a private sid source list, lists and cache.
	# shellcheck disable=SC2046 # one option a word, no spaces in them
	set -- $(apt_private_suite "$cache/apt" sid "${RDMACM_REF_MIRROR:-}")
	;;
*)
	echo "usage: fetch-reference.sh [44|65]" >&2
	exit 2
	;;
esac
apt_opts="$*"

mkdir -p "$cache/debs"
cd "$cache/debs"

have_debs() {
	for p in $pkgs; do
		if [ -n "${RDMACM_REF_VERSION:-}" ]; then
			ls "${p}_${RDMACM_REF_VERSION}"_*.deb >/dev/null 2>&1 || return 1
		else
			ls "${p}"_*.deb >/dev/null 2>&1 || return 1
		fi
	done
}

# $apt_opts has no option with a space in it (paths under $HOME/.cache).
# shellcheck disable=SC2086
download() {
	set --
	for p in $pkgs; do
		set -- "$@" "$p${RDMACM_REF_VERSION:+=$RDMACM_REF_VERSION}"
	done
	# apt-get download as root may warn that it runs unsandboxed; that is
	# harmless here.
	apt_get $apt_opts download "$@" >&2
}

if ! have_debs; then
	echo "fetch-reference: downloading $pkgs into $cache/debs" >&2
	if ! download; then
		echo "fetch-reference: download failed; running apt-get update" >&2
		# shellcheck disable=SC2086
		apt_get $apt_opts update >&2
		download
	fi
fi

# Choose one .deb per package: the pinned version, else the newest present.
debs=
for p in $pkgs; do
	if [ -n "${RDMACM_REF_VERSION:-}" ]; then
		d=$(find . -maxdepth 1 -name "${p}_${RDMACM_REF_VERSION}_*.deb" | head -n 1)
	else
		d=$(find . -maxdepth 1 -name "${p}_*.deb" | sort -V | tail -n 1)
	fi
	debs="$debs ${d#./}"
done

stamp=$(for d in $debs; do cksum "$d"; done)
root="$cache/root"
if [ ! -f "$cache/root.stamp" ] || [ "$(cat "$cache/root.stamp")" != "$stamp" ] ||
	[ ! -d "$root/usr/include/rdma" ]; then
	echo "fetch-reference: unpacking$debs" >&2
	rm -rf "$root.tmp"
	mkdir -p "$root.tmp"
	for d in $debs; do
		dpkg-deb -x "$d" "$root.tmp"
	done
	rm -rf "$root"
	mv "$root.tmp" "$root"
	printf '%s\n' "$stamp" >"$cache/root.stamp"
fi

echo "$root"
