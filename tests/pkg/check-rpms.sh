#!/bin/bash
# Build the RPMs from redhat/librdmacm.spec and `make dist`'s tarball (made
# from a copy of the tree), or take a directory of already built .rpms,
# unpack them with rpm2cpio into a throw-away root and check what they
# deliver.  Prints PASS:/FAIL: lines and "N passed, N failed".
#
# On Debian, rpmbuild cannot see the BuildRequires (there is no rpm
# database of the Debian packages), so the build uses --nodeps; the build
# dependencies come from apt instead.
#
# Usage: tests/pkg/check-rpms.sh [DIR-WITH-RPMS]
# Environment: PKG_WORK (build/unpack directory, default a fresh temporary
# one, removed afterwards unless KEEP=1), PKG_NOCHECK=1 builds without the
# spec's %check (tests/run-all.sh ran those tests already).
set -u

# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

spec=$pkg_repo/redhat/librdmacm.spec
work=${PKG_WORK:-$(mktemp -d /tmp/rdmacm-rpms.XXXXXX)}
[ "${KEEP:-0}" = 1 ] || [ -n "${PKG_WORK:-}" ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"

version=$(awk '$1 == "Version:" { print $2 }' "$spec")
packages="librdmacm librdmacm-devel librdmacm-utils"

if [ $# -ge 1 ]; then
	rpms=$(cd "$1" && pwd)
else
	install_missing rpm rpm2cpio cpio chrpath build-essential autoconf \
		automake libtool pkg-config libibverbs-dev libibumad-dev check \
		groff-base binutils xz-utils
	echo "pkg: make dist and rpmbuild in $work"
	rm -rf "$work/tree" "$work/top"
	copy_tree "$work/tree"
	start=$(date +%s)
	if ! (cd "$work/tree" && autoreconf -fi && ./configure -q &&
		make -s dist) >"$work/dist.log" 2>&1; then
		tail -30 "$work/dist.log" | indent
		fail rpm-dist "see $work/dist.log"
		trap - EXIT
		summary
		exit 1
	fi
	mkdir -p "$work/top/SOURCES"
	cp "$work/tree/librdmacm-$version.tar.xz" "$work/top/SOURCES/" || {
		fail rpm-dist "make dist made no librdmacm-$version.tar.xz (spec Version vs configure.ac?)"
		trap - EXIT
		summary
		exit 1
	}
	nocheck=()
	[ "${PKG_NOCHECK:-0}" = 1 ] && nocheck=(--nocheck)
	if rpmbuild -bb --nodeps "${nocheck[@]}" --define "_topdir $work/top" "$spec" \
		>"$work/rpmbuild.log" 2>&1; then
		pass rpm-build "make dist + rpmbuild -bb${nocheck[0]:+ --nocheck} in $(($(date +%s) - start))s"
	else
		tail -40 "$work/rpmbuild.log" | indent
		fail rpm-build "see $work/rpmbuild.log"
		trap - EXIT
		summary
		exit 1
	fi
	rpms=$work/top/RPMS
fi

# --- the package files and their metadata ---------------------------------------
declare -A rpm_of
missing=
for p in $packages; do
	f=$(find "$rpms" -name "$p-$version-*.rpm" ! -name '*.src.rpm' |
		grep -E "/$p-$version-[^-]+\.[^.]+\.rpm\$" | head -1)
	if [ -z "$f" ]; then
		missing+=" $p"
	else
		rpm_of[$p]=$f
	fi
done
if [ -n "$missing" ]; then
	fail rpm-files "missing:$missing (in $rpms)"
	summary
	exit 1
fi
pass rpm-files "$packages at $version"

q() { rpm -qp --nosignature "$@" 2>/dev/null; }
check rpm-version eval "grep -q '^AC_INIT(\[librdmacm\], \[$version\]' '$pkg_repo/configure.ac' ||
	{ echo 'spec Version $version is not configure.ac'\''s'; false; }"

evr=$(q --qf '%{VERSION}-%{RELEASE}' "${rpm_of[librdmacm]}")
check_rpm_relations() {
	local node bad=0
	for node in RDMACM_1.0 RDMACM_1.1 RDMACM_1.2 RDMACM_1.3 RDMACM_1.4 \
		RDMACM_1.5 RDMACM_FORK_1.0; do
		q --provides "${rpm_of[librdmacm]}" | grep -q "^librdmacm\.so\.1($node)" ||
			{ echo "librdmacm does not provide librdmacm.so.1($node)"; bad=1; }
	done
	# rpm's own answer to what the .deb symbols file does by hand: a program
	# bound to a fork-only node (rping: rdma_connect@RDMACM_FORK_1.0)
	# requires the node by name, which no stock librdmacm provides.
	q --requires "${rpm_of[librdmacm-utils]}" |
		grep -q '^librdmacm\.so\.1(RDMACM_FORK_1\.0)' ||
		{ echo "librdmacm-utils does not require librdmacm.so.1(RDMACM_FORK_1.0)"; bad=1; }
	q --requires "${rpm_of[librdmacm-devel]}" | grep -q "^librdmacm(.*) = $evr\$" ||
		{ echo "librdmacm-devel does not require librdmacm%{_isa} = $evr"; bad=1; }
	q --requires "${rpm_of[librdmacm-devel]}" | grep -q '^pkgconfig(libibverbs)' ||
		{ echo "librdmacm-devel does not require pkgconfig(libibverbs)"; bad=1; }
	q --provides "${rpm_of[librdmacm-devel]}" | grep -q "^pkgconfig(librdmacm) = $version" ||
		{ echo "librdmacm-devel does not provide pkgconfig(librdmacm) = $version"; bad=1; }
	q --requires "${rpm_of[librdmacm-utils]}" | grep -q "^librdmacm(.*) = $evr\$" ||
		{ echo "librdmacm-utils does not require librdmacm%{_isa} = $evr"; bad=1; }
	q --conflicts "${rpm_of[librdmacm]}" | grep -q '^librdmacm-utils <' ||
		{ echo "librdmacm does not conflict with other librdmacm-utils"; bad=1; }
	return $bad
}
check rpm-relations check_rpm_relations

# --- contents -------------------------------------------------------------------
root=$work/root
rm -rf "$root"
mkdir -p "$root"
for p in $packages; do
	(cd "$root" && rpm2cpio "${rpm_of[$p]}" | cpio -idm --quiet) ||
		fail rpm-unpack "$p"
done

# rpm -qlp agrees with what the payload unpacked to.
check_listing() {
	local p f bad=0
	for p in $packages; do
		while read -r f; do
			[ -e "$root$f" ] || [ -L "$root$f" ] ||
				{ echo "$p lists $f but the payload lacks it"; bad=1; }
		done < <(q -l "${rpm_of[$p]}")
	done
	return $bad
}
check rpm-listing check_listing

lib=$(q -l "${rpm_of[librdmacm]}" | grep '/librdmacm\.so\.1$')
libdir=${lib%/librdmacm.so.1}
libdir=${libdir#/}
check_root "$root" "$libdir" rpm

summary
