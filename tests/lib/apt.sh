# apt-get for the test scripts, waiting for the package manager's locks
# (sourced, not run).
# shellcheck shell=sh
#
# A fresh machine often has something else installing (unattended-upgrades,
# another checkout's set-up): a plain apt-get then fails at once with "Could
# not get lock", and a later step fails with, say, "rpmbuild: command not
# found".  apt_get waits instead, for at most APT_LOCK_WAIT seconds (600):
#   - DPkg::Lock::Timeout makes apt itself wait for dpkg's lock-frontend and
#     lock (install, remove);
#   - apt-get update and download take the lists and archives locks, which
#     that option does not cover, so a run that failed on a held lock is
#     tried again every APT_LOCK_POLL seconds (5) until the deadline.
# Runs apt-get through sudo when not root, with DEBIAN_FRONTEND=noninteractive;
# stdout is apt-get's, stderr comes after each attempt.  POSIX sh, so that
# /bin/sh scripts (tests/abi/fetch-reference.sh) can source it too.

# dash has local, which is all "sh" means here.
# shellcheck disable=SC3043
apt_get() {
	local deadline left err rc sudo=
	deadline=$(($(date +%s) + ${APT_LOCK_WAIT:-600}))
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	err=$(mktemp)
	while :; do
		left=$((deadline - $(date +%s)))
		[ "$left" -gt 0 ] || left=1
		rc=0
		$sudo env DEBIAN_FRONTEND=noninteractive \
			apt-get -o DPkg::Lock::Timeout="$left" "$@" 2>"$err" || rc=$?
		if [ "$rc" -ne 0 ] && [ "$(date +%s)" -lt "$deadline" ] &&
			grep -Eq 'Could not get lock|Unable to acquire|Unable to lock' "$err"; then
			echo "apt_get: a package manager lock is held; waiting" >&2
			sleep "${APT_LOCK_POLL:-5}"
			continue
		fi
		cat "$err" >&2
		rm -f "$err"
		return "$rc"
	done
}

# apt_private_suite DIR SUITE [MIRROR]: apt-get and apt-cache options for
# Debian's SUITE (main) through a source list, package lists and cache of
# their own under DIR, so that nothing of the machine's apt configuration
# changes (the guide: never add sid to the machine's sources).  Prints the
# options as one line; DIR must hold no space.
apt_private_suite() {
	mkdir -p "$1/lists/partial" "$1/cache/archives/partial"
	printf '%s\n' "Types: deb" \
		"URIs: ${3:-http://deb.debian.org/debian}" \
		"Suites: $2" "Components: main" \
		"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" \
		>"$1/$2.sources"
	echo "-o Dir::Etc::sourcelist=$1/$2.sources -o Dir::Etc::sourceparts=-" \
		"-o Dir::State::Lists=$1/lists -o Dir::Cache=$1/cache"
}
