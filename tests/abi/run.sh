#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
#
# ABI checks against Debian's librdmacm (the drop-in target):
#
#   tests/abi/run.sh [BUILD_DIR]
#
# BUILD_DIR is where src/.libs/librdmacm.so.1 lives (default: the repo root;
# an out-of-tree build dir works too).  The headers compared are always the
# source tree's include/.  Runs check-layout.sh and check-symbols.sh, which
# print "PASS: <name>" or "FAIL: <name>: <reason>" (details indented below),
# then a closing "N passed, N failed" line; exits non-zero if any check
# failed.  The reference is fetched (apt-get download, cached) by
# fetch-reference.sh unless RDMACM_REF_ROOT names an unpacked one.

set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${1:-$top}

out=$(mktemp "${TMPDIR:-/tmp}/abi-run.XXXXXX")
trap 'rm -f "$out"' EXIT

# Fetch once here so both checks share it and a fetch problem shows once.
if [ -z "${RDMACM_REF_ROOT:-}" ]; then
	if RDMACM_REF_ROOT=$("$here/fetch-reference.sh" 2>"$out"); then
		export RDMACM_REF_ROOT
	else
		sed 's/^/    /' "$out"
		echo "FAIL: reference: cannot fetch Debian's librdmacm1/librdmacm-dev"
		echo "0 passed, 1 failed"
		exit 1
	fi
fi

rc=0
{
	"$here/check-layout.sh" "$top/include" || rc=1
	"$here/check-symbols.sh" "$build" || rc=1
	echo "rc=$rc"
} >"$out" 2>&1
grep -v '^rc=' "$out"

passed=$(grep -c '^PASS: ' "$out")
failed=$(grep -c '^FAIL: ' "$out")
skipped=$(grep -c '^SKIP: ' "$out")
# A script that died without reporting is a failure too.
if grep -q '^rc=1' "$out" && [ "$failed" -eq 0 ]; then
	echo "FAIL: abi-scripts: a check script failed without reporting a check"
	failed=1
fi
if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
