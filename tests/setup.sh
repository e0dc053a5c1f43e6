#!/bin/bash
# One-time (idempotent) set-up on a fresh Debian 12 machine: install what the
# build and the tests need, then configure and build into $BUILD_DIR.
#
# Never installs librdmacm-dev: the build must use only this tree's headers.
# Environment: BUILD_DIR (default <repo>/build), CONFIGURE_FLAGS (extra
# ./configure arguments, e.g. --enable-asan).
set -eu

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
# shellcheck source=lib/apt.sh
. "$repo/tests/lib/apt.sh"

# Build tools, the two rdma-core libraries we depend on, the Check unit-test
# framework, the rxe user-space provider the VM tests use, and the tools the
# test suite calls (man for page checks, abigail for the ABI gate, clang's
# libFuzzer for tests/fuzz, valgrind for the memcheck and bench runs, strace
# and gnuplot for tests/bench, perftest for the perftest suites,
# UCX for the ucx suite, and the programs the preload-apps suite runs over
# librspreload: iperf3, redis, memcached with its client tools, sockperf;
# and the servers the servers suite runs there with their own clients:
# nginx and Apache (apache2) with curl and ab (apache2-utils), the rsync
# daemon and client, PostgreSQL 15 with psql and pgbench, sshd with scp
# and its sftp-server, python3's http.server, lighttpd).
# Installing nginx, apache2, lighttpd, openssh-server or postgresql may
# start them as host services where no policy-rc.d forbids it; the suite
# never uses those: the guest has its own processes, network and ports,
# and the suite starts its own servers with their own configs in a temp
# dir.
packages="autoconf automake libtool pkg-config make gcc libibverbs-dev
	libibumad-dev check ibverbs-providers iproute2 kmod man-db groff-base
	abigail-tools binutils clang-format python3 qemu-system-x86 busybox-static cpio
	clang valgrind strace gnuplot-nox socat rdmacm-utils perftest libucx-dev libucx0 ucx-utils
	iperf3 redis-server redis-tools memcached libmemcached-tools sockperf
	nginx apache2 apache2-utils gunicorn uwsgi-core uwsgi-plugin-python3 curl rsync postgresql-15 postgresql-client-15 lighttpd
	openssh-server openssh-client openssh-sftp-server"

install_missing() {
	local missing=() p
	for p in $packages; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "setup: installing ${missing[*]}"
	apt_get update -qq
	apt_get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

install_missing
if dpkg-query -W -f='${Status}' librdmacm-dev 2>/dev/null |
	grep -q 'install ok installed'; then
	echo "setup: note: librdmacm-dev is installed; the build ignores it" \
		"(our include/ comes first)" >&2
fi

cd "$repo"
if [ ! -x configure ] || [ configure.ac -nt configure ] ||
	[ Makefile.am -nt Makefile.in ] ||
	[ tests/unit/local.mk -nt Makefile.in ]; then
	autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
fi
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ] || [ "$repo/configure" -nt Makefile ] ||
	[ "${CONFIGURE_FLAGS:+x}" = x ]; then
	# shellcheck disable=SC2086
	"$repo/configure" -q ${CONFIGURE_FLAGS:-}
fi
make -s -j"$(nproc)" all >/dev/null
make -s -j"$(nproc)" check TESTS= >/dev/null # build the test programs
echo "setup: built in $build"
