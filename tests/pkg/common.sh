# Shared by check-debs.sh and check-rpms.sh (sourced, not run).
# shellcheck shell=bash

pkg_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../lib/apt.sh
. "$pkg_repo/tests/lib/apt.sh"
pkg_passed=0
pkg_failed=0

pass() {
	echo "PASS: pkg/$1${2:+: $2}"
	pkg_passed=$((pkg_passed + 1))
}

fail() {
	echo "FAIL: pkg/$1${2:+: $2}"
	pkg_failed=$((pkg_failed + 1))
}

# check NAME COMMAND...: PASS if the command succeeds, else FAIL with its
# output (the command should print why it failed).
check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		pass "$name"
	else
		[ -n "$out" ] && indent <<<"$out"
		fail "$name"
	fi
}

indent() { sed 's/^/    /'; }

summary() {
	echo "$pkg_passed passed, $pkg_failed failed"
	[ "$pkg_failed" -eq 0 ]
}

# install_missing PKG...: apt-get install the Debian packages not yet there.
install_missing() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "pkg: installing ${missing[*]}"
	apt_get update -qq
	apt_get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# copy_tree DEST: the working tree's tracked and unignored files (so
# uncommitted packaging changes are included, build products are not).
copy_tree() {
	local dest=$1
	mkdir -p "$dest"
	if git -C "$pkg_repo" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$pkg_repo" ls-files -z -c -o --exclude-standard |
			tar -C "$pkg_repo" --null -T - --ignore-failed-read -cf - |
			tar -C "$dest" -xf -
	else
		tar -C "$pkg_repo" --exclude='./build*' -cf - . | tar -C "$dest" -xf -
	fi
}

# The files every package set must deliver, relative to the install root.
pkg_headers="rdma/rdma_cma.h rdma/rdma_verbs.h rdma/rdma_cma_abi.h infiniband/ib.h rdma/rsocket.h"
pkg_programs="rping ucmatose udaddy mckey mckey2 cmtime rdma_server rdma_client rdma_xserver rdma_xclient p2pmesh rdma_acme rstream riostream rcopy rudping udpong"

# Man pages the tree ships in section SECTION (from Makefile.am's lists).
source_man_pages() {
	sed -n "/^dist_man$1_MANS/,/^\$/p" "$pkg_repo/Makefile.am" |
		grep -o "man/[A-Za-z0-9_]*\.$1" | sed 's|^man/||'
}

# Exported name@VERSION pairs of a shared library, sorted.
dynamic_symbols() {
	# A non-default version (name@NODE beside name@@NEWER) shows as "(NODE)".
	objdump -T "$1" | awk '$2 == "g" || $3 == "DF" || $3 == "DO" {
		v = $(NF-1); gsub(/[()]/, "", v)
		if (v ~ /^RDMACM_/ && $NF !~ /^RDMACM_/ && $4 != "*UND*") print $NF "@" v }' |
		sort -u
}

# Symbol list the version script declares, as name@VERSION, sorted.
map_symbols() {
	awk '/^RDMACM_[A-Z0-9_.]* *\{/ { node = $1 }
	     /^\t\t[a-z_]*;/ { gsub(/[\t;]/, ""); print $0 "@" node }' \
		"$pkg_repo/src/librdmacm.map" | sort -u
}

# check_root ROOT LIBDIR KIND: content checks shared by .deb and .rpm roots.
# LIBDIR is the library directory inside ROOT (e.g. usr/lib/x86_64-linux-gnu).
check_root() {
	local root=$1 libdir=$2 kind=$3 f p s missing

	check "$kind-soname" check_soname "$root/$libdir"
	check "$kind-devlink" check_devlink "$root/$libdir"
	check "$kind-exports" check_exports "$root/$libdir/librdmacm.so.1"

	missing=
	for f in $pkg_headers; do
		[ -f "$root/usr/include/$f" ] || missing+=" $f"
	done
	check "$kind-headers" eval "[ -z '$missing' ] || { echo 'missing:$missing'; false; }"
	check "$kind-headers-compile" check_headers_compile "$root"

	check "$kind-pkgconfig" check_pkgconfig "$root" "$libdir"

	missing=
	for s in 1 3 7; do
		for p in $(source_man_pages $s); do
			ls "$root/usr/share/man/man$s/$p"* >/dev/null 2>&1 ||
				missing+=" man$s/$p"
		done
	done
	check "$kind-man-pages" eval "[ -z '$missing' ] || { echo 'missing:$missing'; false; }"
	check "$kind-man-render" check_man_render "$root"

	check "$kind-programs" check_programs "$root" "$libdir"
	check "$kind-preload" check_preload "$root/$libdir/rsocket"
	check "$kind-no-static-or-la" check_no_la "$root"
}

check_soname() {
	local dir=$1 soname real
	[ -f "$dir/librdmacm.so.1.3.0" ] || { echo "no librdmacm.so.1.3.0 in $dir"; return 1; }
	[ -L "$dir/librdmacm.so.1" ] || { echo "librdmacm.so.1 is not a symlink"; return 1; }
	real=$(readlink "$dir/librdmacm.so.1")
	[ "$real" = librdmacm.so.1.3.0 ] || { echo "librdmacm.so.1 -> $real"; return 1; }
	soname=$(objdump -p "$dir/librdmacm.so.1.3.0" | awk '$1 == "SONAME" { print $2 }')
	[ "$soname" = librdmacm.so.1 ] || { echo "SONAME is '$soname'"; return 1; }
	if objdump -p "$dir/librdmacm.so.1.3.0" | grep -Eq '^ *(RPATH|RUNPATH)'; then
		echo "library has a run path"
		return 1
	fi
}

check_devlink() {
	local dir=$1
	[ -L "$dir/librdmacm.so" ] || { echo "no librdmacm.so symlink"; return 1; }
	[ -f "$dir/$(readlink "$dir/librdmacm.so")" ] ||
		{ echo "librdmacm.so -> $(readlink "$dir/librdmacm.so") dangles"; return 1; }
}

check_exports() {
	diff <(map_symbols) <(dynamic_symbols "$1") ||
		{ echo "exported symbols differ from src/librdmacm.map (< map, > library)"; return 1; }
}

# Compile and link a program against the extracted headers and library only.
check_headers_compile() {
	local root=$1 tmp rc=0 lib
	tmp=$(mktemp -d)
	cat >"$tmp/t.c" <<-'EOF'
		#include <rdma/rdma_cma.h>
		#include <rdma/rdma_verbs.h>
		#include <rdma/rdma_cma_abi.h>
		#include <infiniband/ib.h>
		int main(void)
		{
			return rdma_event_str(RDMA_CM_EVENT_ESTABLISHED) == 0;
		}
	EOF
	lib=$(dirname "$(find "$root" -name librdmacm.so -print -quit)")
	gcc -Wall -Werror -I"$root/usr/include" "$tmp/t.c" -o "$tmp/t" \
		-L"$lib" -lrdmacm || rc=1
	[ $rc -eq 0 ] && { LD_LIBRARY_PATH=$lib "$tmp/t" || { echo "test program failed"; rc=1; }; }
	rm -rf "$tmp"
	return $rc
}

check_pkgconfig() {
	local root=$1 libdir=$2 pc=$1/$2/pkgconfig/librdmacm.pc out
	[ -f "$pc" ] || { echo "no $libdir/pkgconfig/librdmacm.pc"; return 1; }
	out=$(PKG_CONFIG_PATH="$root/$libdir/pkgconfig" pkg-config --variable=libdir librdmacm)
	[ "$out" = "/$libdir" ] ||
		{ echo "librdmacm.pc libdir is $out, not /$libdir"; return 1; }
	out=$(PKG_CONFIG_PATH="$root/$libdir/pkgconfig" pkg-config --libs librdmacm) ||
		return 1
	out=${out%% } # pkgconf leaves a trailing space
	# (pkg-config adds -L for a libdir that is not this system's own.)
	[ "$out" = -lrdmacm ] || [ "$out" = "-L/$libdir -lrdmacm" ] || { echo "pkg-config --libs: '$out'"; return 1; }
	out=$(PKG_CONFIG_PATH="$root/$libdir/pkgconfig" pkg-config --modversion librdmacm)
	grep -q "^AC_INIT(\[librdmacm\], \[$out\]" "$pkg_repo/configure.ac" ||
		{ echo "pkg-config version $out is not configure.ac's"; return 1; }
}

# Every page renders without groff warnings.
check_man_render() {
	local root=$1 page bad=0 out target
	for page in "$root"/usr/share/man/man[137]/*; do
		# A ".so other-page" alias (rpm keeps them; dh_installman turns
		# them into symlinks): the target must be there.
		target=$({ case $page in *.gz) zcat "$page" ;; *) cat "$page" ;; esac; } |
			awk 'NR == 1 && $1 == ".so" { print $2 }')
		if [ -n "$target" ]; then
			ls "$root/usr/share/man/$target"* >/dev/null 2>&1 ||
				{ echo "${page#"$root"/}: .so target $target missing"; bad=1; }
			continue
		fi
		out=$( { case $page in *.gz) zcat "$page" ;; *) cat "$page" ;; esac; } |
			LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z 2>&1)
		if [ -n "$out" ]; then
			echo "${page#"$root"/}: $out"
			bad=1
		fi
	done
	return $bad
}

# Each program is an ELF executable with no run path that loads the
# extracted librdmacm.so.1 (not the system's) when pointed at it.
check_programs() {
	local root=$1 libdir=$2 p bin bad=0
	for p in $pkg_programs; do
		bin=$root/usr/bin/$p
		if [ ! -x "$bin" ]; then
			echo "missing /usr/bin/$p"
			bad=1
			continue
		fi
		if objdump -p "$bin" | grep -Eq '^ *(RPATH|RUNPATH)'; then
			echo "$p has a run path: $(objdump -p "$bin" | grep -E 'RPATH|RUNPATH')"
			bad=1
		fi
		objdump -p "$bin" | grep -q 'NEEDED *librdmacm\.so\.1$' ||
			{ echo "$p does not need librdmacm.so.1"; bad=1; }
		LD_LIBRARY_PATH=$root/$libdir ldd "$bin" |
			grep -q "librdmacm.so.1 => $root/$libdir/librdmacm.so.1 " ||
			{ echo "$p does not resolve librdmacm.so.1 into the package root"; bad=1; }
	done
	return $bad
}

# librspreload.so where rdma-core has it: the versioned file, the .so.1 and
# the .so links users preload, no run path, linked to librdmacm.so.1.
check_preload() {
	local dir=$1 f
	for f in librspreload.so librspreload.so.1 librspreload.so.1.0.0; do
		[ -e "$dir/$f" ] || { echo "no $dir/$f"; return 1; }
	done
	[ -L "$dir/librspreload.so" ] || { echo "librspreload.so is not a symlink"; return 1; }
	if objdump -p "$dir/librspreload.so.1.0.0" | grep -Eq '^ *(RPATH|RUNPATH)'; then
		echo "librspreload has a run path"
		return 1
	fi
	objdump -p "$dir/librspreload.so.1.0.0" | grep -q 'NEEDED *librdmacm\.so\.1$' ||
		{ echo "librspreload does not need librdmacm.so.1"; return 1; }
	nm -D --defined-only "$dir/librspreload.so.1.0.0" | grep -q ' T socket$' ||
		{ echo "librspreload does not define socket"; return 1; }
}

check_no_la() {
	local found
	found=$(find "$1" -name '*.la' -o -name 'librdmacm.a')
	[ -z "$found" ] || { echo "shipped: $found"; return 1; }
}
