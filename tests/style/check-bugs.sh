#!/bin/bash
# BUGS.md gate: every entry of tests/system/BUGS.md (a "###" heading, or a
# "- **" item of a section) carries an ID in brackets, no two entries share
# one, and every "BUGS.md <id>" cited in the tree names an entry.
set -u

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
bugs=tests/system/BUGS.md
failed=0
noid=$(grep -nE '^(### |- \*\*)' "$bugs" | grep -vE '\[[a-z0-9]+(-[a-z0-9]+)*\]' |
	grep -vE '^[0-9]+:- \*\*(Where|What happened|Seen|Fix)' || true)
if [ -n "$noid" ]; then
	echo "  entries without an [id]:"
	sed 's/^/    /' <<<"$noid"
	failed=1
fi
ids=$(grep -oE '\[[a-z0-9]+(-[a-z0-9]+)+\]' "$bugs" | tr -d '[]' | sort)
dups=$(uniq -d <<<"$ids")
if [ -n "$dups" ]; then
	echo "  IDs given to more than one entry:" $dups
	failed=1
fi
cited=$(grep -rhoE --exclude-dir=.git --exclude-dir='build*' \
	'BUGS\.md[ ,"(`]+[a-z0-9]+(-[a-z0-9]+)+' src tests man examples Makefile.am |
	sed -E 's/.*[ ,"(`]//' | sort -u)
for id in $cited; do
	grep -qxF "$id" <<<"$ids" || {
		echo "  cited but not in $bugs: $id"
		failed=1
	}
done
if [ $failed = 0 ]; then
	echo "PASS: style/bugs-ids"
else
	echo "FAIL: style/bugs-ids"
fi
exit $failed
