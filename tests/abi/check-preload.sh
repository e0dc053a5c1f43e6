#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
#
# Compare our librspreload.so with the reference's (rsocket/librspreload.so.1
# of Debian's librdmacm1 / rdma-core 65's librdmacm1t64).
#
#   check-preload.sh [BUILD_DIR]
#
# BUILD_DIR holds src/preload/.libs/librspreload.so and src/.libs/
# librdmacm.so.1 (default: the repo root).  One line per check ("PASS:
# name", "FAIL: name: reason" with indented details):
#
#   preload-exports   every function the reference's preload exports (the
#                     socket calls it stands in front of) ours exports too
#   preload-needs     every versioned rsocket call the reference's preload
#                     needs from librdmacm (rsocket@RDMACM_1.0, repoll_*@
#                     RDMACM_1.5, ...) our librdmacm.so.1 exports at that
#                     version: the reference's preload runs on our library
#   preload-env       every environment variable name and configuration
#                     file the reference's preload reads (its strings:
#                     RS_*, RDMAV_*, /etc/...) ours reads too
#
# Environment: RDMACM_REF_ROOT (an unpacked reference; default: run
# fetch-reference.sh), RDMACM_REF_TAG (65: checks named "<check>-65").

set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${1:-$top}
ours=$build/src/preload/.libs/librspreload.so
lib=$build/src/.libs/librdmacm.so.1
tag=${RDMACM_REF_TAG:-}
sfx=${tag:+-$tag}
work=$(mktemp -d "${TMPDIR:-/tmp}/abi-preload.XXXXXX")
trap 'rm -rf "$work"' EXIT
status=0

fail() {
	echo "FAIL: $1$sfx: $2"
	if [ $# -ge 3 ]; then
		sed 's/^/    /' "$3"
	fi
	status=1
}

if [ ! -f "$ours" ] || [ ! -f "$lib" ]; then
	echo "FAIL: preload$sfx: no $ours or $lib (build first)"
	exit 1
fi
if [ -n "${RDMACM_REF_ROOT:-}" ]; then
	ref_root=$RDMACM_REF_ROOT
elif ! ref_root=$("$here/fetch-reference.sh" $tag 2>"$work/fetch.log"); then
	sed 's/^/    /' "$work/fetch.log"
	echo "FAIL: preload$sfx: cannot fetch the reference"
	exit 1
fi
ref=
for f in "$ref_root"/usr/lib/*/rsocket/librspreload.so.1; do
	[ -f "$f" ] && ref=$f
done
if [ -z "$ref" ]; then
	echo "FAIL: preload$sfx: no rsocket/librspreload.so.1 under $ref_root/usr/lib"
	exit 1
fi

# Defined dynamic functions and objects, one name a line.
defined() {
	LC_ALL=C nm -D --defined-only "$1" | awk '$2 ~ /^[TWVDBi]$/ { print $3 }' |
		sed 's/@.*//' | sort -u
}

# --- preload-exports ---------------------------------------------------------
defined "$ref" >"$work/ref.exp"
defined "$ours" >"$work/ours.exp"
comm -23 "$work/ref.exp" "$work/ours.exp" >"$work/missing"
if [ -s "$work/missing" ]; then
	fail preload-exports "ours lacks what the reference exports" "$work/missing"
else
	echo "PASS: preload-exports$sfx ($(wc -l <"$work/ref.exp") calls; ours adds $(comm -13 "$work/ref.exp" "$work/ours.exp" | tr '\n' ' '))"
fi

# --- preload-needs -----------------------------------------------------------
LC_ALL=C nm -D --undefined-only "$ref" | awk '$1 == "U" && $2 ~ /@RDMACM_/ { print $2 }' |
	sort -u >"$work/needs"
LC_ALL=C nm -D --defined-only "$lib" | awk '{ print $3 }' | sed 's/@@/@/' |
	sort -u >"$work/lib.exp"
comm -23 "$work/needs" "$work/lib.exp" >"$work/unmet"
if [ ! -s "$work/needs" ]; then
	fail preload-needs "the reference's preload needs no versioned librdmacm symbol: cannot tell"
elif [ -s "$work/unmet" ]; then
	fail preload-needs "our librdmacm.so.1 lacks what the reference's preload calls" "$work/unmet"
else
	echo "PASS: preload-needs$sfx ($(wc -l <"$work/needs") versioned calls)"
fi

# --- preload-env ---------------------------------------------------------------
# The reference's names, from its strings; ours must mention each one in
# its sources and binary (a name only in a comment would not do).
LC_ALL=C strings -n 4 "$ref" | grep -E '^(RS_[A-Z_]+|RDMAV_[A-Z_]+|IBV_[A-Z_]+|RDMA_[A-Z_]+|/etc/[^ ]+)$' |
	sort -u >"$work/ref.env"
LC_ALL=C strings -n 4 "$ours" | sort -u >"$work/ours.strings"
: >"$work/unread"
while read -r name; do
	case $name in
	# a path may share its bytes with a longer log message's tail
	/*) grep -qF "$name" "$work/ours.strings" ;;
	*) grep -qxF "$name" "$work/ours.strings" ;;
	esac || echo "$name" >>"$work/unread"
done <"$work/ref.env"
if [ ! -s "$work/ref.env" ]; then
	fail preload-env "found no environment names in the reference's preload"
elif [ -s "$work/unread" ]; then
	fail preload-env "ours does not read what the reference reads" "$work/unread"
else
	echo "PASS: preload-env$sfx ($(tr '\n' ' ' <"$work/ref.env"))"
fi
exit $status
