#!/bin/bash
# The public-field audit, differential: tests/system/fields_audit prints
# every public field of struct rdma_cm_id and of each event at every step of
# an RC, a UD and a synchronous connection; this script runs it on Debian's
# librdmacm and on ours (same binary, LD_LIBRARY_PATH chooses) and compares
# the two outputs line by line:
#   tests/vm/run-guest.sh tests/system/fields-in-guest.sh
#
# Every field whose value differs (or that one output has and the other
# lacks) is a "FAIL fields/<af>/<step> <id>.<field>" line showing both
# values, unless ALLOW below lists it with the reason we deliberately
# differ.  Debian's run must complete (it proves the program); otherwise
# the address family is SKIPped with the reason.
#
# Environment:
#   RDMACM_BUILD_DIR   the build tree (not under /tmp when run in the VM)
#   RDMACM_REF_LIBDIR  Debian's unpacked librdmacm
#   RDMA_TEST_ADDR1, RDMA_TEST_ADDR2, RDMA_TEST_ADDR6_1, RDMA_TEST_ADDR6_2
#   RDMACM_FIELDS_AF   the address families to run (default "ipv4 ipv6")
#   VERBOSE=1          print both outputs
set -u

BUILD="${RDMACM_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
REF="${RDMACM_REF_LIBDIR:-$HOME/.cache/rdmacm-ref/root/usr/lib/x86_64-linux-gnu}"
PROG="$BUILD/tests/system/fields_audit"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/fields.XXXXXX")" || exit 1
trap 'rm -rf "$WORK"' EXIT

# Fields where we differ on purpose: "regular expression on the key|reason".
# The key is "<flow>/<step> <id>.<field>".
ALLOW=(
	'/resolve_addr-called active\.route\.addr\.src$|rdma_resolve_addr with a source address: we show that address at once, rdma-core only from ADDR_RESOLVED on; both hold the resolved source from then on'
)

. "$(dirname "$0")/verdict.sh"

# shellcheck source=transport.sh
. "$(dirname "$0")/transport.sh"
ulimit -l unlimited 2>/dev/null
if [ "$TRANSPORT" = iwarp ]; then
	skip fields "the audit's UD flow needs InfiniBand or RoCE"
	finish
fi
ourlib="$(realpath "$BUILD/src/.libs" 2>/dev/null)"
if [ ! -x "$PROG" ] || [ ! -e "$ourlib/librdmacm.so.1" ]; then
	fail fields/setup "no $PROG or no built library (make check TESTS=)"
	finish
fi
if [ ! -e "$REF/librdmacm.so.1" ]; then
	fail fields/setup "no Debian reference library in $REF (run tests/abi/fetch-reference.sh)"
	finish
fi
reflib="$(realpath "$REF")"

# lib_of DIR: the librdmacm.so.1 the program loads with DIR on the path.
lib_of() {
	local l
	l="$(LD_LIBRARY_PATH="$1" ldd "$PROG" |
		sed -n 's/^[[:space:]]*librdmacm\.so\.1 => \([^ ]*\).*/\1/p')"
	[ -n "$l" ] && dirname "$(realpath "$l")"
}

allowed() {
	local a
	for a in "${ALLOW[@]}"; do
		if [[ "$1" =~ ${a%%|*} ]]; then
			echo "${a#*|}"
			return 0
		fi
	done
	return 1
}

# compare AF: key by key; a key is everything before the first "=".
# (Temporary files, not <(...): the guest has no /dev/fd.)
compare() {
	local af=$1 key dv ov why n=0 lib
	for lib in debian ours; do
		sed 's/=/\t/' "$WORK/$af.$lib" | sort -t $'\t' -k1,1 >"$WORK/$af.$lib.kv"
	done
	join -t $'\t' -a1 -a2 -e '(absent)' -o 0,1.2,2.2 \
		"$WORK/$af.debian.kv" "$WORK/$af.ours.kv" |
		awk -F'\t' '$2 != $3' >"$WORK/$af.diff" || {
		fail "fields/$af/compare" "join failed"
		return
	}
	while IFS=$'\t' read -r key dv ov; do
		if why="$(allowed "$key")"; then
			echo "# allowed: $af/$key: debian '$dv', ours '$ov' ($why)"
			continue
		fi
		n=$((n + 1))
		fail "fields/$af/$key" "debian '$dv', ours '$ov'"
	done <"$WORK/$af.diff"
	[ $n -eq 0 ] && pass "fields/$af ($(wc -l <"$WORK/$af.ours") fields agree)"
}

for af in ${RDMACM_FIELDS_AF:-ipv4 ipv6}; do
	if [ $af = ipv4 ]; then
		a1=${RDMA_TEST_ADDR1:-192.0.2.1} a2=${RDMA_TEST_ADDR2:-$a1}
	else
		a1=${RDMA_TEST_ADDR6_1:-} a2=${RDMA_TEST_ADDR6_2:-${RDMA_TEST_ADDR6_1:-}}
		if [ -z "$a1" ]; then
			skip fields/ipv6 "no IPv6 addresses (RDMA_TEST_ADDR6_1)"
			continue
		fi
	fi
	for lib in debian ours; do
		dir=$ourlib
		[ $lib = debian ] && dir=$reflib
		if [ "$(lib_of "$dir")" != "$dir" ]; then
			fail fields/$af/setup "$PROG does not load librdmacm from $dir"
			continue 2
		fi
		LD_LIBRARY_PATH="$dir" timeout 120 "$PROG" "$a1" "$a2" \
			>"$WORK/$af.$lib.all" 2>&1
		echo "# $lib: exit status $?"
		grep -v '^PASS\|^FAIL' "$WORK/$af.$lib.all" >"$WORK/$af.$lib"
		[ "${VERBOSE:-0}" = 1 ] && sed "s/^/    $lib: /" "$WORK/$af.$lib.all"
	done
	if ! grep -q '^PASS fields_audit/complete' "$WORK/$af.debian.all"; then
		sed 's/^/    debian: /' "$WORK/$af.debian.all" | tail -20
		skip fields/$af "the audit does not complete on Debian's library"
		continue
	fi
	if ! grep -q '^PASS fields_audit/complete' "$WORK/$af.ours.all"; then
		sed 's/^/    ours: /' "$WORK/$af.ours.all" | tail -20
		fail fields/$af/complete "the audit does not complete on our library: $(grep -m1 '^FAIL' "$WORK/$af.ours.all")"
	fi
	compare $af
done
finish
