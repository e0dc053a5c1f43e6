#!/bin/bash
# README gate: README.md stays a short front page (150 lines at most), and
# every C block in it is a region of a program under examples/readme/ that
# compiles.  A C block is announced by a line "<!-- examples/readme/X.c -->"
# right before its fence; it must equal the lines of X.c between
# "/* README begin */" and "/* README end */", one leading tab removed.
# Each program is compiled here as it is in the build (-Wall -Wextra
# -Werror) against this tree's headers.
set -u

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
failed=0
pass() { echo "PASS: style/readme-$1"; }
fail() {
	echo "FAIL: style/readme-$1"
	failed=1
}

lines=$(wc -l <README.md)
if [ "$lines" -le 150 ]; then pass length; else
	echo "  README.md has $lines lines, more than 150"
	fail length
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Split the README's C blocks into files named after their programs; a C
# block without its marker line becomes "unmarked".
awk -v dir="$tmp" '
	/^<!-- examples\/readme\/[a-z0-9_]+\.c -->$/ {
		src = $2; next_fence = 1; next
	}
	inblock && /^```$/ { inblock = 0; close(out); next }
	inblock { print > out; next }
	/^```c$/ {
		if (next_fence) {
			f = src; gsub("/", "+", f); out = dir "/+" f
		} else {
			out = dir "/unmarked"
		}
		inblock = 1; next_fence = 0; next
	}
	{ next_fence = 0 }
' README.md
if [ -e "$tmp/unmarked" ]; then
	echo "  a C block in README.md has no <!-- examples/readme/X.c --> line"
	fail snippets
fi
cc=${CC:-cc}
for src in examples/readme/*.c; do
	name=${src##*/}
	block=$tmp/+examples+readme+$name
	if [ ! -f "$block" ]; then
		echo "  $src: not shown in README.md"
		fail "$name"
		continue
	fi
	sed -n '/^\t\/\* README begin \*\/$/,/^\t\/\* README end \*\/$/p' "$src" |
		sed '1d;$d;s/^\t//' >"$tmp/region"
	if ! diff -u "$block" "$tmp/region" >"$tmp/diff"; then
		echo "  README.md's block differs from $src (- README, + program):"
		sed 's/^/    /' "$tmp/diff"
		fail "$name"
	elif ! "$cc" -std=gnu11 -Wall -Wextra -Werror -I include -fsyntax-only \
		"$src" 2>"$tmp/cc"; then
		sed 's/^/    /' "$tmp/cc"
		fail "$name"
	else
		pass "$name"
	fi
	rm -f "$block"
done
for block in "$tmp"/+examples+readme+*; do
	[ -e "$block" ] || continue
	echo "  README.md shows ${block##*+}, which is not in examples/readme/"
	fail snippets
done
exit $failed
