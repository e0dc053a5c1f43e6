#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
#
# ABI checks against Debian's librdmacm (the drop-in target):
#
#   tests/abi/run.sh [BUILD_DIR]
#
# BUILD_DIR is where src/.libs/librdmacm.so.1 lives (default: the repo root;
# an out-of-tree build dir works too).  The headers compared are always the
# source tree's include/.  Runs check-layout.sh, check-symbols.sh and
# check-preload.sh (librspreload.so against the reference's), which
# print "PASS: <name>" or "FAIL: <name>: <reason>" (details indented below),
# then a closing "N passed, N failed" line; exits non-zero if any check
# failed.  Two references: Debian 12's librdmacm (rdma-core 44, the drop-in
# target: the same declarations and symbols) and Debian sid's rdma-core 65
# (every declaration, value, layout and versioned symbol of it exists here;
# the checks carry a "-65" suffix).  They are fetched (apt-get download,
# cached) by fetch-reference.sh [65] unless RDMACM_REF_ROOT /
# RDMACM_REF65_ROOT name unpacked ones.

set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${1:-$top}

out=$(mktemp "${TMPDIR:-/tmp}/abi-run.XXXXXX")
trap 'rm -f "$out"' EXIT

# Fetch each reference once here so both checks share it and a fetch problem
# shows once.  A reference that cannot be fetched is one failed check; the
# other reference is still compared.
fetched=$(mktemp "${TMPDIR:-/tmp}/abi-fetch.XXXXXX")
trap 'rm -f "$out" "$fetched"' EXIT
rc=0
# check_against TAG ROOT: both check scripts against one reference.
check_against() {
	tag=$1
	root=$2
	if [ -z "$root" ]; then
		if ! root=$("$here/fetch-reference.sh" "$tag" 2>"$fetched"); then
			what="Debian 12's librdmacm1/librdmacm-dev"
			[ -z "$tag" ] || what="Debian sid's rdma-core $tag packages"
			sed 's/^/    /' "$fetched"
			echo "FAIL: reference${tag:+-$tag}: cannot fetch $what"
			rc=1
			return
		fi
	fi
	RDMACM_REF_TAG=$tag RDMACM_REF_ROOT=$root \
		"$here/check-layout.sh" "$top/include" || rc=1
	RDMACM_REF_TAG=$tag RDMACM_REF_ROOT=$root \
		"$here/check-symbols.sh" "$build" || rc=1
	RDMACM_REF_TAG=$tag RDMACM_REF_ROOT=$root \
		"$here/check-preload.sh" "$build" || rc=1
}

{
	# Debian 12 (rdma-core 44): the drop-in target, exact match
	check_against "" "${RDMACM_REF_ROOT:-}"
	# Debian sid (rdma-core 65): everything it declares and exports
	check_against 65 "${RDMACM_REF65_ROOT:-}"
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
