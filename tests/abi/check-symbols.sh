#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
#
# Compare the dynamic symbols of our librdmacm.so.1 with the reference's
# (Debian's librdmacm1).
#
#   check-symbols.sh [BUILD_DIR | path/to/librdmacm.so.1]
#
# BUILD_DIR is where src/.libs/librdmacm.so.1 lives (default: the repo root).
# One line per check ("PASS: name", "FAIL: name: reason" with indented
# details, or "SKIP: name: reason"):
#
#   soname             the DT_SONAME is librdmacm.so.1
#   symbols-reference  every symbol the reference exports is exported by ours
#                      with the same version node (name@@NODE or name@NODE)
#                      and symbol type.  A call whose
#                      default moved to a fork node ("default name@@NODE" in
#                      ours-only.txt) must keep the reference's node as a
#                      non-default version (name@OLD beside name@@NODE)
#   symbols-no-leaks   everything ours exports is versioned, in a node that
#                      src/librdmacm.map declares and that is named
#                      RDMACM_*; in rdma-core's RDMACM_<n>.<m> namespace only
#                      what the reference or upstream-newer.txt has
#   version-nodes      the reference's version nodes exist in ours with the
#                      same predecessor (RDMACM_1.1 after RDMACM_1.0, ...)
#   abidiff            abidiff (abigail-tools) finds no removed symbols
#                      (SKIP without it)
#   exports-marked     the core's objects (src/.libs/libcma_core.a beside the
#                      library) give default visibility (CMA_EXPORT) to
#                      exactly the names the library exports, besides the
#                      implementations src/*/*.c binds with .symver
#   test-hooks         no function src/cm/test_hooks.h declares is in the
#                      library, not even as a local symbol (--gc-sections)
#                      (both only against the first reference: they do not
#                      depend on it; SKIP without the objects or symbols)
#
# Environment: RDMACM_REF_ROOT (an unpacked reference; default: run
# fetch-reference.sh), RDMACM_REF_TAG (65: compare with rdma-core 65, Debian
# sid's librdmacm1t64; the checks are then named "<check>-65", soname is not
# repeated, and symbols-no-leaks-65 allows in RDMACM_<n>.<m> only what 65
# exports there: upstream-newer.txt is for the older reference).

set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
arg=${1:-$top}
if [ -f "$arg" ]; then
	ours=$arg
else
	ours=$arg/src/.libs/librdmacm.so.1
fi
map=$top/src/librdmacm.map

work=$(mktemp -d "${TMPDIR:-/tmp}/abi-symbols.XXXXXX")
trap 'rm -rf "$work"' EXIT
status=0
tag=${RDMACM_REF_TAG:-}
sfx=${tag:+-$tag}
newer=$here/upstream-newer.txt
[ -z "$tag" ] || newer=/dev/null

fail() {
	echo "FAIL: $1$sfx: $2"
	if [ $# -ge 3 ]; then
		sed 's/^/    /' "$3"
	fi
	status=1
}

# Nothing to compare: one failure stands for all five checks.
fail_all() {
	echo "FAIL: symbols$sfx: $1"
	exit 1
}

if [ ! -f "$ours" ]; then
	fail_all "no library at $ours (build first)"
fi
if [ -n "${RDMACM_REF_ROOT:-}" ]; then
	ref_root=$RDMACM_REF_ROOT
elif ! ref_root=$("$here/fetch-reference.sh" "$tag" 2>"$work/fetch.log"); then
	sed 's/^/    /' "$work/fetch.log"
	fail_all "cannot fetch the reference"
fi
ref=
for f in "$ref_root"/usr/lib/*/librdmacm.so.1 "$ref_root"/usr/lib/librdmacm.so.1; do
	if [ -f "$f" ]; then
		ref=$f
		break
	fi
done
if [ -z "$ref" ]; then
	fail_all "no librdmacm.so.1 under $ref_root/usr/lib"
fi

# "NODE" and "NODE < PREDECESSOR" for each version the library defines.
version_nodes() {
	LC_ALL=C objdump -p "$1" | awk '
		/^Version definitions:/ { on = 1; next }
		on && /^[^0-9\t ]/ { on = 0 }
		on && /^[0-9]+ / {
			base = ($2 == "0x01")	# the soname entry
			node = $4
			if (!base)
				print node
			next
		}
		on && /^[\t ]+[^ \t]/ && !base { print node " < " $1 }' | sort -u
}

# "name@@NODE TYPE" (or name@NODE, or a bare name when unversioned) for
# every symbol the library defines and exports, less the node symbols.
exports() {
	nodes=$(version_nodes "$1" | grep -v '<' | tr '\n' ' ')
	LC_ALL=C readelf --dyn-syms -W "$1" | awk -v nodes=" $nodes " '
		$1 ~ /^[0-9]+:$/ && $7 != "UND" &&
		($5 == "GLOBAL" || $5 == "WEAK" || $5 == "UNIQUE") {
			name = $8
			if ($7 == "ABS") {
				# A version node itself: "NODE" or "NODE@@NODE".
				split(name, p, "@+")
				if ((p[2] == "" || p[1] == p[2]) && index(nodes, " " p[1] " "))
					next
			}
			print name, $4
		}' | sort -u
}

# --- soname ----------------------------------------------------------------------
soname=$(LC_ALL=C readelf -d -W "$ours" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
if [ -n "$tag" ]; then
	: # checked once, in the run against the Debian 12 reference
elif [ "$soname" = librdmacm.so.1 ]; then
	echo "PASS: soname"
else
	fail soname "DT_SONAME is '${soname:-none}', expected librdmacm.so.1"
fi

exports "$ours" >"$work/ours.syms"
exports "$ref" >"$work/ref.syms"

# --- every reference symbol, same node ---------------------------------------------
: >"$work/missing"
: >"$work/moved"
# "default name@@NODE" lines of ours-only.txt: defaults this fork moved.
sed -n 's/^default[ \t]*\([^ \t#]*\).*/\1/p' "$here/ours-only.txt" >"$work/defaults"
# The reference's name@@OLD is kept when ours has name@OLD and the moved
# default name@@NODE, both of the same type.
moved_default() {
	local sym=$1 type=$2 name=${1%%@*} node=${1##*@} new
	new=$(grep "^$name@@" "$work/defaults") || return 1
	grep -qxF "$name@$node $type" "$work/ours.syms" &&
		grep -qxF "$new $type" "$work/ours.syms"
}
while read -r sym type; do
	if grep -qxF "$sym $type" "$work/ours.syms"; then
		continue
	fi
	name=${sym%%@*}
	if moved_default "$sym" "$type"; then
		echo "$name" >>"$work/moved"
		continue
	fi
	have=$(awk -v n="$name" '{ s = $1; sub(/@.*/, "", s) } s == n { printf "%s%s (%s)", sep, $1, $2; sep = ", " }' \
		"$work/ours.syms")
	echo "$sym ($type): ${have:+ours has }${have:-not exported by ours}" >>"$work/missing"
done <"$work/ref.syms"
nref=$(wc -l <"$work/ref.syms")
if [ -s "$work/missing" ]; then
	fail symbols-reference "$(wc -l <"$work/missing") of the reference's $nref symbols missing or different" \
		"$work/missing"
else
	echo "PASS: symbols-reference$sfx ($nref reference symbols," \
		"$(wc -l <"$work/moved") with a fork default:" \
		"$(tr '\n' ' ' <"$work/moved" | sed 's/ $//'))"
fi

# --- nothing else leaks ----------------------------------------------------------------
map_nodes=$(sed -n 's/^[ \t]*\([A-Za-z_][A-Za-z0-9_.]*\)[ \t]*{.*/\1/p' "$map" 2>/dev/null || true)
: >"$work/leaks"
while read -r sym type; do
	name=${sym%%@*}
	case $sym in
	*@*) node=${sym##*@} ;;
	*)
		echo "$name: exported without a version node" >>"$work/leaks"
		continue
		;;
	esac
	case $node in
	RDMACM_*) ;;
	*)
		echo "$sym: node $node is not an RDMACM_* node" >>"$work/leaks"
		continue
		;;
	esac
	if ! printf '%s\n' "$map_nodes" | grep -qxF "$node"; then
		echo "$sym: node $node is not declared in src/librdmacm.map" >>"$work/leaks"
		continue
	fi
	if expr "$node" : 'RDMACM_[0-9][0-9]*\.[0-9][0-9]*$' >/dev/null; then
		if ! grep -q "^$name@@*$node " "$work/ref.syms" &&
			! grep -qx "$node $name" "$newer"; then
			echo "$sym: rdma-core's $node has no $name (neither the reference" \
				"nor upstream-newer.txt); use an RDMACM_FORK_* node" >>"$work/leaks"
		fi
	fi
done <"$work/ours.syms"
if [ -s "$work/leaks" ]; then
	fail symbols-no-leaks "$(wc -l <"$work/leaks") unexpected export(s)" "$work/leaks"
else
	echo "PASS: symbols-no-leaks$sfx ($(wc -l <"$work/ours.syms") exports)"
fi

# --- version nodes -----------------------------------------------------------------------
version_nodes "$ours" >"$work/ours.nodes"
version_nodes "$ref" >"$work/ref.nodes"
comm -23 "$work/ref.nodes" "$work/ours.nodes" >"$work/nodes.missing"
if [ -s "$work/nodes.missing" ]; then
	{
		echo "reference has, ours lacks:"
		sed 's/^/  /' "$work/nodes.missing"
		echo "ours:"
		sed "s/^/  /" "$work/ours.nodes"
		[ -s "$work/ours.nodes" ] || echo "  (none)"
	} >"$work/nodes.report"
	fail version-nodes "version definitions differ" "$work/nodes.report"
else
	echo "PASS: version-nodes$sfx ($(grep -vc '<' "$work/ours.nodes") nodes:" \
		"$(grep -v '<' "$work/ours.nodes" | tr '\n' ' ' | sed 's/ $//'))"
fi

# --- what CMA_EXPORT marks is what the library exports ---------------------------------
core=$(dirname "$ours")/libcma_core.a
if [ -n "$tag" ]; then
	:
elif [ ! -f "$core" ]; then
	echo "SKIP: exports-marked: no $core (pass the build directory)"
else
	# Defined symbols of default visibility; "name@NODE" aliases count as name.
	readelf -sW "$core" | awk '$5 == "GLOBAL" && $6 == "DEFAULT" && $7 != "UND" &&
		($4 == "FUNC" || $4 == "OBJECT") { s = $8; sub(/@.*/, "", s); print s }' |
		sort -u >"$work/marked.all"
	sed -n 's/.*\.symver[ \t]*\([A-Za-z0-9_]*\)[ \t]*,.*/\1/p' "$top"/src/*/*.c \
		"$top"/src/rsocket/*.c | sort -u >"$work/symver.impl"
	comm -23 "$work/marked.all" "$work/symver.impl" >"$work/marked"
	sed 's/@.*//' "$work/ours.syms" | cut -d' ' -f1 | sort -u >"$work/exported"
	{
		comm -23 "$work/marked" "$work/exported" | sed 's/^/marked, not exported: /'
		comm -13 "$work/marked" "$work/exported" | sed 's/^/exported, not marked: /'
	} >"$work/marked.diff"
	if [ -s "$work/marked.diff" ]; then
		fail exports-marked "CMA_EXPORT and the exports differ" "$work/marked.diff"
	else
		echo "PASS: exports-marked ($(wc -l <"$work/marked") names," \
			"$(wc -l <"$work/symver.impl") .symver implementations)"
	fi
fi

# --- the test hooks are not in the shipped library ---------------------------------------
hooks=$top/src/cm/test_hooks.h
if [ -n "$tag" ]; then
	:
elif [ ! -f "$hooks" ] || ! nm "$ours" >"$work/all.syms" 2>/dev/null ||
	[ ! -s "$work/all.syms" ]; then
	echo "SKIP: test-hooks: no src/cm/test_hooks.h or no symbol table in $ours"
else
	# The name before the first "(" of each declaration line.
	sed -n 's/^[a-z][^(]*[ *]\([a-z_][a-z0-9_]*\)(.*/\1/p' "$hooks" |
		sort -u >"$work/hooks"
	awk '{ print $NF }' "$work/all.syms" | sort -u >"$work/all.names"
	comm -12 "$work/hooks" "$work/all.names" >"$work/hooks.found"
	if [ ! -s "$work/hooks" ]; then
		fail test-hooks "no declaration found in $hooks"
	elif [ -s "$work/hooks.found" ]; then
		fail test-hooks "test-only functions in the shipped library" \
			"$work/hooks.found"
	else
		echo "PASS: test-hooks ($(wc -l <"$work/hooks") hooks absent)"
	fi
fi

# --- abidiff -----------------------------------------------------------------------------
if ! command -v abidiff >/dev/null 2>&1; then
	echo "SKIP: abidiff$sfx: abidiff not installed (apt-get install abigail-tools)"
else
	rc=0
	abidiff --no-show-locs "$ref" "$ours" >"$work/abidiff.txt" 2>&1 || rc=$?
	# Bit 1: abidiff itself failed; bit 2: usage error.
	if [ $((rc & 3)) -ne 0 ]; then
		fail abidiff "abidiff exited with $rc" "$work/abidiff.txt"
	else
		# Removed symbols are listed as "  [D] name@@NODE" (with or without
		# debug info) or "  [D] 'function ... name(...)'" (with it).
		awk '
			/Removed .*(function|variable)/ { on = 1; next }
			/^[^ \t]/ || /Added|Changed/ { on = 0 }
			on && /\[D\]/ { print }' "$work/abidiff.txt" >"$work/abidiff.removed"
		cp "$work/abidiff.removed" "$work/abidiff.unexpected"
		summary=$(sed -n -e 's/^Functions changes summary: /functions: /p' \
			-e 's/^Function symbols changes summary: \(.*\) function symbols not referenced by debug info/symbols without debug info: \1/p' \
			"$work/abidiff.txt" | tr '\n' ';' | sed 's/;$//; s/;/; /g')
		if [ -s "$work/abidiff.unexpected" ]; then
			fail abidiff "removed symbols (exit $rc)" \
				"$work/abidiff.unexpected"
		else
			echo "PASS: abidiff$sfx (exit $rc; ${summary:-no changes})"
		fi
	fi
fi

exit $status
