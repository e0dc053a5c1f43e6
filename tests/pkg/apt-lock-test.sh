#!/bin/bash
# tests/lib/apt.sh's apt_get waits for a held package manager lock instead of
# failing.  Another process holds dpkg's lock-frontend (an fcntl lock, as
# apt and dpkg take it: flock(1) would not conflict with them) for
# APT_LOCK_TEST_HOLD seconds (2); meanwhile
#   - a plain apt-get install must fail on the lock (so the lock is really
#     held and the test proves something), and
#   - apt_get install of an installed package must wait, then succeed,
#     and only after the holder let go (it leaves a mark before it does).
# apt-get update's lists lock goes through apt_get's retry loop instead; it
# is not tested here, as update needs the network.
# Needs root (the locks are root's) and python3 (for the fcntl lock);
# otherwise SKIP.  Prints PASS:/FAIL:/SKIP: lines.
set -u

repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/apt.sh
. "$repo/tests/lib/apt.sh"

lock=/var/lib/dpkg/lock-frontend
hold=${APT_LOCK_TEST_HOLD:-2}
pkg=coreutils # Essential: always installed, so "install" changes nothing

if [ "$(id -u)" -ne 0 ] || ! command -v python3 >/dev/null; then
	echo "SKIP: pkg/apt-lock: needs root and python3"
	exit 0
fi

failed=0
mark=$(mktemp -u)
trap 'rm -f "$mark"' EXIT
verdict() {
	if [ "$2" = 0 ]; then echo "PASS: pkg/$1${3:+: $3}"; else
		echo "FAIL: pkg/$1${3:+: $3}"
		failed=1
	fi
}

# hold_lock SECONDS: take the lock in the background; returns once it is held.
hold_lock() {
	local ready
	rm -f "$mark"
	ready=$(mktemp -u)
	mkfifo "$ready"
	python3 - "$lock" "$1" "$mark" 3>"$ready" <<-'EOF' &
		import fcntl, os, sys, time
		fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o640)
		fcntl.lockf(fd, fcntl.LOCK_EX)  # waits if someone else has it
		os.write(3, b"held\n")
		os.close(3)
		time.sleep(float(sys.argv[2]))
		open(sys.argv[3], "w").close()  # the mark, while still holding
		os.close(fd)
	EOF
	holder=$!
	read -r _ <"$ready"
	rm -f "$ready"
}

# 1. The lock is real: apt-get without waiting fails on it.
hold_lock "$hold"
out=$(DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" 2>&1)
rc=$?
wait "$holder"
if [ $rc -ne 0 ] && grep -q 'lock' <<<"$out"; then
	verdict apt-lock-held 0 "plain apt-get fails while the lock is held"
else
	verdict apt-lock-held 1 "plain apt-get did not fail on the held lock (rc $rc): $out"
fi

# 2. apt_get waits for it, then succeeds.
hold_lock "$hold"
start=$(date +%s)
out=$(APT_LOCK_POLL=1 apt_get install -y -qq "$pkg" 2>&1)
rc=$?
still=1
[ -e "$mark" ] && still=0
wait "$holder"
if [ $rc -eq 0 ] && [ $still = 0 ]; then
	verdict apt-lock-wait 0 "apt_get waited $(($(date +%s) - start))s for the lock, then installed"
else
	verdict apt-lock-wait 1 "rc $rc, lock holder still running: $still: $out"
fi
exit $failed
