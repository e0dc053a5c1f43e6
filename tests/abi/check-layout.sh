#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
#
# Compare our public headers with the reference's (Debian's librdmacm-dev).
#
#   check-layout.sh [OUR_INCLUDE_DIR]     (default: <repo>/include)
#
# Two checks, one line each ("PASS: name" or "FAIL: name: reason", details
# indented below a FAIL):
#
#   header-declarations  the same structs, members, enums, constants,
#                        macros and functions are declared, with the same
#                        member types, macro bodies and prototypes; names
#                        only we declare must be listed in ours-only.txt
#   header-layout        one generated C program (abi_headers.py gen) over
#                        every name both declare, built against each set of
#                        headers (both with the system's libibverbs
#                        headers), prints identical sizes, alignments,
#                        offsets and constant values
#
# Environment: RDMACM_REF_ROOT (an unpacked reference; default: run
# fetch-reference.sh), CC, ABI_WORKDIR (keep the intermediate files there),
# RDMACM_REF_TAG (65: compare with rdma-core 65, Debian sid's librdmacm-dev,
# instead of Debian 12's 44; the checks are then named "<check>-65", and
# header-declarations-65 only asks that ours declares everything 65 does,
# the same way: names only ours has are policed by the run against 44).

set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
ours_inc=$(cd "${1:-$top/include}" && pwd)
CC=${CC:-cc}
export CC
PYTHON=${PYTHON:-python3}

if [ -n "${ABI_WORKDIR:-}" ]; then
	work=$ABI_WORKDIR
	mkdir -p "$work"
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/abi-layout.XXXXXX")
	trap 'rm -rf "$work"' EXIT
fi

fail() {
	echo "FAIL: $1: $2"
	shift 2
	for f in "$@"; do
		sed 's/^/    /' "$f"
	done
	status=1
}
status=0

tag=${RDMACM_REF_TAG:-}
sfx=${tag:+-$tag}
allow=$here/ours-only.txt
[ -z "$tag" ] || allow=-

if [ -n "${RDMACM_REF_ROOT:-}" ]; then
	ref_root=$RDMACM_REF_ROOT
elif ! ref_root=$("$here/fetch-reference.sh" "$tag" 2>"$work/fetch.log"); then
	fail "header-declarations$sfx" "cannot fetch the reference" "$work/fetch.log"
	fail "header-layout$sfx" "cannot fetch the reference"
	exit 1
fi
ref_inc=$ref_root/usr/include

# rsocket.h is compared only once ours
# has it and abi_headers.py's HEADERS lists it.
if [ -f "$ref_inc/rdma/rsocket.h" ] && [ ! -f "$ours_inc/rdma/rsocket.h" ]; then
	echo "  deferred: rdma/rsocket.h (reference only)"
fi

# --- declarations ------------------------------------------------------------
scanned=yes
for side in ours ref; do
	inc=$ours_inc
	[ $side = ours ] || inc=$ref_inc
	if ! "$PYTHON" "$here/abi_headers.py" scan "$inc" "$work/$side.json" \
		>"$work/scan-$side.log" 2>&1; then
		fail "header-declarations$sfx" "cannot read the $side headers in $inc" \
			"$work/scan-$side.log"
		scanned=no
	fi
done
if [ $scanned = no ]; then
	fail "header-layout$sfx" "headers could not be read"
	exit 1
fi

if "$PYTHON" "$here/abi_headers.py" compare "$work/ours.json" "$work/ref.json" \
	"$allow" >"$work/compare.txt" 2>&1; then
	echo "PASS: header-declarations$sfx"
else
	fail "header-declarations$sfx" "$(grep -c '^  [a-z]' "$work/compare.txt") difference(s)" \
		"$work/compare.txt"
fi

# --- layout --------------------------------------------------------------------
"$PYTHON" "$here/abi_headers.py" gen "$work/ours.json" "$work/ref.json" "$work/layout.c"
built=yes
for side in ours ref; do
	inc=$ours_inc
	[ $side = ours ] || inc=$ref_inc
	if ! $CC -std=gnu11 -Wall -I "$inc" -o "$work/layout-$side" \
		"$work/layout.c" >"$work/cc-$side.log" 2>&1; then
		fail "header-layout$sfx" "layout program does not build against the $side headers" \
			"$work/cc-$side.log"
		built=no
	elif ! "$work/layout-$side" >"$work/layout-$side.txt"; then
		fail "header-layout$sfx" "layout program failed against the $side headers"
		built=no
	fi
done
if [ $built = yes ]; then
	if diff -u "$work/layout-ref.txt" "$work/layout-ours.txt" >"$work/layout.diff"; then
		echo "PASS: header-layout$sfx ($(grep -c '^[^ ]' "$work/layout-ours.txt") types and constants," \
			"$(grep -c '^ ' "$work/layout-ours.txt") members)"
	else
		fail "header-layout$sfx" "sizes/offsets/values differ (- reference, + ours)" \
			"$work/layout.diff"
	fi
fi

# --- the fork's member in old padding ------------------------------------------------
# (once, with the Debian 12 reference)
[ -z "$tag" ] || exit $status
# peer2peer_mode must sit in the byte after srq that the reference leaves as
# padding: the struct keeps the reference's size and every other offset
# (header-layout above compares those).
cat >"$work/p2p.c" <<'EOC'
#include <stddef.h>
#include <stdio.h>
#include <rdma/rdma_cma.h>
int main(void)
{
	printf("%zu %zu %zu\n", offsetof(struct rdma_conn_param, srq),
	       offsetof(struct rdma_conn_param, peer2peer_mode),
	       offsetof(struct rdma_conn_param, qp_num));
	return 0;
}
EOC
if $CC -std=gnu11 -I "$ours_inc" -o "$work/p2p" "$work/p2p.c" >"$work/cc-p2p.log" 2>&1; then
	set -- $("$work/p2p")
	if [ "$2" -eq $(($1 + 1)) ] && [ "$3" -gt "$2" ] && [ "$2" -eq 15 ]; then
		echo "PASS: header-p2p-padding (peer2peer_mode at offset $2, between srq and qp_num)"
	else
		fail header-p2p-padding "peer2peer_mode at $2 (srq $1, qp_num $3): not the padding byte"
	fi
else
	fail header-p2p-padding "cannot build the offset probe" "$work/cc-p2p.log"
fi

exit $status
