#!/bin/bash
# Man-page gate: every exported function and every installed example program
# has a page, and every page renders without a warning.
set -u

repo=$(cd "$(dirname "$0")/../.." && pwd)
failed=0
pass() { echo "PASS: man/$1"; }
fail() {
	echo "FAIL: man/$1"
	failed=1
}

# Symbols come from the version script, inline helpers from the headers.
symbols=$(sed -n 's/^[[:space:]]*\([a-z_][a-z0-9_]*\);.*/\1/p' \
	"$repo/src/librdmacm.map" | sort -u)
inlines=$(sed -n 's/^static inline [^(]*[ *]\(rdma_[a-z_]*\)(.*/\1/p' \
	"$repo/include/rdma/rdma_cma.h" "$repo/include/rdma/rdma_verbs.h" |
	sort -u)
missing=
for sym in $symbols $inlines; do
	[ -f "$repo/man/$sym.3" ] || missing="$missing $sym"
done
if [ -z "$missing" ]; then pass "every-function-has-a-page"; else
	echo "  no page for:$missing"
	fail "every-function-has-a-page"
fi

missing=
for src in "$repo"/examples/*.c; do
	prog=$(basename "$src" .c)
	[ "$prog" = common ] && continue
	# Shared code (stream_common.c, rcopy_proto.c) is not a program.
	grep -q '^int main(' "$src" || continue
	[ -f "$repo/man/$prog.1" ] || missing="$missing $prog"
done
if [ -z "$missing" ]; then pass "every-example-has-a-page"; else
	echo "  no page for:$missing"
	fail "every-example-has-a-page"
fi
[ -f "$repo/man/rdma_cm.7" ] && pass "rdma_cm.7-exists" || fail "rdma_cm.7-exists"

# man --warnings reports groff's complaints on stderr.  Pages are laid out
# as an installed tree (man3/...) so that ".so man3/x.3" links resolve.
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
for page in "$repo"/man/*.[1-8]; do
	sec=${page##*.}
	mkdir -p "$tree/man$sec"
	ln -s "$page" "$tree/man$sec/"
done
bad=
for page in "$tree"/man*/*; do
	rel=${page#"$tree"/}
	err=$(cd "$tree" && LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l \
		"$rel" 2>&1 >/dev/null)
	[ -z "$err" ] || { bad="$bad $rel"; echo "  $rel: $err"; }
done
if [ -z "$bad" ]; then pass "pages-render-cleanly"; else fail "pages-render-cleanly"; fi
exit $failed
