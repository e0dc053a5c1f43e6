#!/bin/bash
# Build the Debian packages (debian/) from a copy of the tree, or take a
# directory of already built .debs, unpack them with dpkg -x into a
# throw-away root and check what they deliver.  Prints PASS:/FAIL: lines and
# "N passed, N failed"; exits non-zero on any failure.
#
# Usage: tests/pkg/check-debs.sh [DIR-WITH-DEBS]
# Environment: PKG_WORK (build/unpack directory, default a fresh temporary
# one, removed afterwards unless KEEP=1), LINTIAN=0 skips the lintian check,
# PKG_NOCHECK=1 builds without the package's own test run
# (DEB_BUILD_OPTIONS=nocheck: tests/run-all.sh ran those tests already).
set -u

# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=usr/lib/$multiarch
work=${PKG_WORK:-$(mktemp -d /tmp/rdmacm-debs.XXXXXX)}
[ "${KEEP:-0}" = 1 ] || [ -n "${PKG_WORK:-}" ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"

version=$(dpkg-parsechangelog -l "$pkg_repo/debian/changelog" -S Version)
upstream=${version%-*}
packages="librdmacm1 librdmacm-dev rdmacm-utils"

if [ $# -ge 1 ]; then
	debs=$(cd "$1" && pwd)
else
	install_missing build-essential debhelper dpkg-dev fakeroot lintian \
		chrpath autoconf automake libtool pkg-config libibverbs-dev \
		libibumad-dev check groff-base binutils
	echo "pkg: building the .debs in $work/src"
	rm -rf "$work/src"
	copy_tree "$work/src"
	start=$(date +%s)
	nocheck=
	[ "${PKG_NOCHECK:-0}" = 1 ] && nocheck=nocheck
	if (cd "$work/src" && DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }$nocheck" \
		dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1; then
		pass deb-build "dpkg-buildpackage -b${nocheck:+ with DEB_BUILD_OPTIONS=nocheck} in $(($(date +%s) - start))s"
	else
		tail -40 "$work/build.log" | indent
		fail deb-build "see $work/build.log"
		KEEP=1
		trap - EXIT
		summary
		exit 1
	fi
	debs=$work
fi

# --- the package files and their relationships --------------------------------
missing=
for p in $packages; do
	f=$debs/${p}_${version}_$arch.deb
	[ -f "$f" ] || missing+=" ${f##*/}"
done
if [ -n "$missing" ]; then
	fail deb-files "missing:$missing (in $debs)"
	summary
	exit 1
fi
pass deb-files "$packages at $version"

deb() { echo "$debs/${1}_${version}_$arch.deb"; }
field() { dpkg-deb -f "$(deb "$1")" "$2"; }

# Above Debian bookworm's rdma-core 44.0-2, so it upgrades the packages of
# the same names.  Debian's rdmacm-utils pass on our library (the
# rdmacm-utils suite), so nothing Breaks them.
check deb-version-above-debian dpkg --compare-versions "$version" gt 44.0-2
check deb-upstream-version eval "grep -q '^AC_INIT(\[librdmacm\], \[$upstream\]' '$pkg_repo/configure.ac' || { echo 'changelog upstream version $upstream is not configure.ac'\''s'; false; }"
check deb-relations eval "
	! field librdmacm1 Breaks | grep -q 'rdmacm-utils' &&
	field librdmacm1 Multi-Arch | grep -qx same &&
	field librdmacm-dev Depends | grep -q 'librdmacm1 (= $version)' &&
	field rdmacm-utils Depends | grep -q 'librdmacm1 (>= ' ||
	{ for p in $packages; do echo \"\$p:\"; dpkg-deb -f \$(deb \$p) Depends Breaks Replaces Conflicts Multi-Arch; done; false; }"

# The symbols control file lists exactly what the library exports.
symbols_of_control() {
	local tmp
	tmp=$(mktemp -d)
	dpkg-deb -e "$(deb librdmacm1)" "$tmp"
	grep '^ ' "$tmp/symbols" | awk '{ print $1 }' | grep -v '^RDMACM_' | sort -u
	rm -rf "$tmp"
}
check deb-symbols-file eval 'diff <(map_symbols) <(symbols_of_control) ||
	{ echo "DEBIAN/symbols differs from src/librdmacm.map (< map, > symbols)"; false; }'

# --- contents -------------------------------------------------------------------
root=$work/root
rm -rf "$root"
mkdir -p "$root"
for p in $packages; do
	dpkg -x "$(deb "$p")" "$root"
done
check_root "$root" "$libdir" deb

# A program bound to a fork-only node (rdma_connect@RDMACM_FORK_1.0, what
# our header gives) must depend on a librdmacm1 that has the node: a stock
# librdmacm1 from a newer rdma-core satisfies any "librdmacm1 (>= 44.0.1)"
# (and no version marker sorts above all of those), so the symbols file sends those
# symbols through the "librdmacm1-fork" template that only our package
# Provides.  A program bound to RDMACM_1.0 alone must not get it.
# dpkg-shlibdeps runs on both against the built package's symbols file.
shlibdeps_of() {
	local tmp=$1 prog=$2 lib
	lib=$tmp/debian/librdmacm1/$libdir
	gcc -Wall -Werror -I"$root/usr/include" "$tmp/$prog.c" -o "$tmp/$prog" \
		-L"$root/$libdir" -lrdmacm || return 1
	(cd "$tmp" && dpkg-shlibdeps -O -l"$lib" "$prog" 2>/dev/null) |
		sed -n 's/^shlibs:Depends=//p'
}
check_fork_dependency() {
	local tmp bad=0 fork old
	tmp=$(mktemp -d)
	mkdir -p "$tmp/debian/librdmacm1/DEBIAN" "$tmp/debian/librdmacm1/$libdir"
	dpkg-deb -e "$(deb librdmacm1)" "$tmp/ctl"
	cp "$tmp/ctl/symbols" "$tmp/debian/librdmacm1/DEBIAN/symbols"
	cp -a "$root/$libdir/librdmacm.so"* "$tmp/debian/librdmacm1/$libdir/"
	printf 'Source: t\n\nPackage: librdmacm1\nArchitecture: any\n' >"$tmp/debian/control"
	printf '#include <rdma/rdma_cma.h>\nint main(void) { return rdma_connect(0, 0); }\n' >"$tmp/fork.c"
	printf '#include <rdma/rdma_cma.h>\n__asm__(".symver rdma_connect, rdma_connect@RDMACM_1.0");\nint main(void) { return rdma_connect(0, 0); }\n' >"$tmp/old.c"
	fork=$(shlibdeps_of "$tmp" fork) && old=$(shlibdeps_of "$tmp" old) || bad=1
	grep -q 'librdmacm1-fork (>= ' <<<"$fork" ||
		{ echo "fork-bound program: Depends: $fork (no librdmacm1-fork)"; bad=1; }
	if ! grep -q 'librdmacm1 (>= ' <<<"$old" || grep -q 'librdmacm1-fork' <<<"$old"; then
		echo "RDMACM_1.0-bound program: Depends: $old"
		bad=1
	fi
	field librdmacm1 Provides | grep -q "librdmacm1-fork (= $version)" ||
		{ echo "librdmacm1 Provides: $(field librdmacm1 Provides)"; bad=1; }
	field rdmacm-utils Depends | grep -q 'librdmacm1-fork (>= ' ||
		{ echo "rdmacm-utils (rping binds RDMACM_FORK_1.0) Depends: $(field rdmacm-utils Depends)"; bad=1; }
	rm -rf "$tmp"
	[ $bad -eq 0 ] && echo "fork: $fork; old: $old"
	return $bad
}
check deb-fork-node-dependency check_fork_dependency

# Which package holds what (a file in the wrong one breaks upgrades).
in_pkg() {
	dpkg-deb -c "$(deb "$1")" | awk '{ print $6 }' | grep -q "$2"
}
check deb-split eval "
	in_pkg librdmacm1 '/librdmacm\.so\.1\.3\.0\$' &&
	! in_pkg librdmacm1 '/librdmacm\.so\$' &&
	in_pkg librdmacm-dev '/librdmacm\.so\$' &&
	in_pkg librdmacm-dev 'rdma_cma\.h\$' &&
	in_pkg librdmacm-dev 'man3/rdma_connect\.3' &&
	in_pkg librdmacm-dev 'man7/rdma_cm\.7' &&
	in_pkg rdmacm-utils 'bin/rping\$' &&
	in_pkg rdmacm-utils 'man1/rping\.1' ||
	{ echo 'files are in the wrong packages'; false; }"

# --- the installed library at work, in the VM -----------------------------------
# Debian's own rping (rdmacm-utils from Debian, if installed) and the rping
# of our rdmacm-utils package, run against the librdmacm1 we packaged.  The
# guest sees the host's files except /tmp, so the root is copied into the
# build tree first.  PKG_VM=0 skips this.
if [ "${PKG_VM:-1}" != 0 ] && [ -x "$pkg_repo/tests/vm/run-guest.sh" ]; then
	vmroot=${PKG_VM_ROOT:-$pkg_repo/build/pkg-deb-root}
	rm -rf "$vmroot"
	mkdir -p "$vmroot"
	cp -a "$root/." "$vmroot/"
	out=$("$pkg_repo/tests/vm/run-guest.sh" "$pkg_repo/tests/pkg/rping-in-guest.sh" \
		"$vmroot" "$libdir" 2>&1)
	while read -r verdict name rest; do
		if [ "$verdict" = PASS ]; then pass "$name" "$rest"; else fail "$name" "$rest"; fi
	done < <(grep -E '^(PASS|FAIL): pkg/' <<<"$out" |
		sed -E 's#^(PASS|FAIL): pkg/([^ :]*):? ?#\1 \2 #')
	grep -q '^FAIL' <<<"$out" && indent <<<"$out"
	grep -q '^PASS: pkg/vm-debian-rping' <<<"$out" || fail vm-rping "the guest run did not report (see above)"
	rm -rf "$vmroot"
fi

# --- lintian --------------------------------------------------------------------
if [ "${LINTIAN:-1}" != 0 ] && command -v lintian >/dev/null; then
	changes=$(find "$debs" -maxdepth 1 -name "librdmacm-fork_${version}_*.changes" | head -1)
	target=${changes:-$(for p in $packages; do deb "$p"; done)}
	# shellcheck disable=SC2086
	out=$(lintian --allow-root $target 2>&1)
	errors=$(grep -c '^E:' <<<"$out")
	warnings=$(grep -c '^W:' <<<"$out")
	if [ "$errors" -eq 0 ]; then
		pass deb-lintian "0 errors, $warnings warnings"
	else
		grep -E '^[EW]:' <<<"$out" | indent
		fail deb-lintian "$errors errors"
	fi
	grep '^W:' <<<"$out" | indent
fi

summary
