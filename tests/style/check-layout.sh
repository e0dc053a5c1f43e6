#!/bin/bash
# Layout gate: the "Layout" table of docs/architecture.md is the one map of
# the tree, so every file under src/ must be named in the first cell of one
# of its rows.  A cell's first name sets the directory
# (`src/rsocket/stream.c` or `src/rsocket/`); the names after it are in that
# directory, and `x.[ch]` stands for x.c and x.h.  A new file that fails
# this gets its mention in that table, not a map in a header.
set -u

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
map=docs/architecture.md
named=$(sed -n '/^## Layout$/,/^## /p' "$map" | awk -F'|' '
	/^\| *`/ {
		cell = $2; dir = ""
		while (match(cell, /`[^`]*`/)) {
			tok = substr(cell, RSTART + 1, RLENGTH - 2)
			cell = substr(cell, RSTART + RLENGTH)
			if (index(tok, "/")) {
				dir = tok; sub(/[^\/]*$/, "", dir)
				path = tok
			} else {
				path = dir tok
			}
			if (path ~ /\.\[ch\]$/) {
				sub(/\.\[ch\]$/, "", path)
				print path ".c"; print path ".h"
			} else {
				print path
			}
		}
	}')
if [ -z "$named" ]; then
	echo "FAIL: style/layout: $map has no \"## Layout\" table"
	exit 1
fi
missing=
# The sources, not build products (an in-tree build leaves .o, .lo, .libs).
for f in $(find src -name '.*' -prune -o -type f \( -name '*.[ch]' -o \
	-name '*.map' \) -print | sort); do
	grep -qxF "$f" <<<"$named" || missing="$missing $f"
done
# Examples and system tests are written as an outside program is: they see
# the installed headers only (the build puts src/ on every include path).
# The stand-in ibacm service is the one exception: it speaks the library's
# ACM protocol from the other end.
private=$(grep -l '^#include "\(cm\|p2p\|acm\|mcast\|addrinfo\|rsocket\|preload\|util\)/' \
	examples/*.[ch] examples/*/*.c tests/system/*.[ch] |
	grep -vx tests/system/acm_fake_service.c)
if [ -n "$private" ]; then
	echo "  include a header of src/:" $private
fi
if [ -z "$missing$private" ]; then
	echo "PASS: style/layout"
else
	[ -z "$missing" ] || echo "  not in $map's Layout table:$missing"
	echo "FAIL: style/layout"
	exit 1
fi
