#!/bin/bash
# Unmodified servers in their default configurations over librspreload,
# run inside the Soft-RoCE guest:
#   tests/vm/run-guest.sh tests/system/servers-in-guest.sh
#
# Each server runs twice with the same work in the same guest, once with
# this tree's librspreload.so in LD_PRELOAD on both ends (the server and
# its own clients) and once on plain TCP as the control:
#   nginx           nginx's default process model: a master that listens,
#                   then forks `worker_processes 2;` workers that accept
#                   (its own config file in a temp dir, in the foreground,
#                   as root: the workers run as nobody); curl fetches a
#                   random 1 MiB file (cmp), then ab makes 500 requests
#                   for a random 16 KiB one (ab checks every length; the
#                   access log must have all 500 answered whole)
#   nginx-forksafe  the same with RDMAV_FORK_SAFE=1 on both ends
#   apache          Apache 2.4 with Debian's default MPM, event, and its
#                   compiled-in defaults (a master that listens as root,
#                   children that become nobody and accept, threads in
#                   each), its own config file, in the foreground; the
#                   same curl and ab work as nginx
#   apache-prefork  the same with the prefork MPM (one process per
#                   connection at a time, no threads)
#   apache-forksafe  apache with RDMAV_FORK_SAFE=1 on both ends
#   gunicorn        gunicorn --workers 2 (sync workers: a master that
#                   listens, processes that accept) with a WSGI app that
#                   serves the files (wsgi_files.py); curl and ab as nginx
#   uwsgi           uWSGI --master --processes 2 with the same app, the
#                   workers switching to nobody; curl and ab as nginx
#   rsync           rsync --daemon --no-detach as root (a child forked per
#                   connection, which switches to the module's user,
#                   nobody by default) with one writable module and `use
#                   chroot = no`; the rsync client pushes a tree of 71
#                   random files and pulls it back, each compared (diff -r)
#   rsync-forksafe  the same with RDMAV_FORK_SAFE=1 on both ends
#   rsync-forksafe-user  the same with the daemon run as nobody (no
#                   switch of ids in its children)
#   postgres        PostgreSQL 15: a cluster made by initdb as the postgres
#                   user, listening on RDMA_TEST_ADDR1 (log_connections
#                   and log_disconnections on; the postmaster
#                   accepts and forks a backend per connection); psql
#                   SELECT 6 * 7, pgbench -i, pgbench -c 4 -t 50 (all 200
#                   transactions, then TPC-B's balances agree across
#                   accounts, branches, tellers and history), and a psql
#                   query of 40,000 rows compared with the same rows made
#                   here
#   postgres-forksafe  the same with RDMAV_FORK_SAFE=1 on both ends
#   sshd            /usr/sbin/sshd -D with its own config, host key and a
#                   key for root (a child per connection that re-executes
#                   sshd); scp copies a random 1 MiB file up and back
#                   (SFTP), both compared
#   sshd-forksafe   the same with RDMAV_FORK_SAFE=1 on both ends
#   http-server     /usr/bin/python3 -m http.server (a thread per
#                   connection, no fork); curl fetches a random 1 MiB file
#   lighttpd        lighttpd -D with its own config: one process that
#                   listens as root, then becomes nobody (server.username)
#                   and serves (epoll, no fork); curl fetches a random
#                   1 MiB file (cmp)
# A server passes when its data are verified and the RDMA device's packet
# counter shows the bytes went over RDMA: at least one packet per 4 KiB
# checked under the preload, next to none in the TCP run (check in
# preload-lib.sh).  The speed of the RDMA run against the TCP one is
# printed as a ratio, without a threshold.
#
# Each FAIL line says "cause: ..." when the logs show a known signature.
# Every client is bounded, so that a hang fails its run: the first
# contact of each run by FIRST (30 s), the rest by T (40 s).
# Prints PASS/FAIL lines and "N passed, N failed".
# Environment: RDMACM_BUILD_DIR, RDMA_TEST_ADDR1, RDMA_TEST_DEV,
# RDMACM_SYS_ONLY (regex on test names), VERBOSE=1 (the preload's log),
# RDMACM_SERVERS_KEEP=DIR (every run's logs are copied there at the end;
# in the guest, a directory under RDMACM_VM_OUT).
set -u

BUILD="${RDMACM_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
A1="${RDMA_TEST_ADDR1:-192.0.2.1}"
ONLY="${RDMACM_SYS_ONLY:-}"
PRELOAD="$BUILD/src/preload/.libs/librspreload.so"
# shellcheck source=verdict.sh
. "$(dirname "$0")/verdict.sh"
# shellcheck source=preload-lib.sh
. "$(dirname "$0")/preload-lib.sh"
W="$(mktemp -d "${TMPDIR:-/tmp}/servers.XXXXXX")"
# The servers' own users (postgres, nginx's and rsync's nobody) read the
# files and write the preload's log here.
chmod 755 "$W"
cleanup() {
	local f
	# servers that left children behind (nginx workers, backends)
	for f in "$W"/*/nginx.pid "$W"/*/httpd.pid "$W"/pg/data/postmaster.pid; do
		[ -f "$f" ] && kill -KILL "$(head -1 "$f")" 2>/dev/null
	done
	# shellcheck disable=SC2046 # one pid a word
	kill $(jobs -p) 2>/dev/null
	wait 2>/dev/null
	if [ -n "${RDMACM_SERVERS_KEEP:-}" ] && mkdir -p "$RDMACM_SERVERS_KEEP"; then
		# every run's logs, without the data
		(cd "$W" && find . -path ./html -prune -o -path ./tree -prune -o \
			-path ./pg -prune -o -path '*/mod' -prune -o -path '*/pulled' -prune -o \
			-type f -size -2M ! -name '*.bin' ! -name '*.got' -print |
			cpio -pdm --quiet "$RDMACM_SERVERS_KEEP")
	fi
	rm -rf "$W"
}
trap cleanup EXIT
ulimit -l unlimited 2>/dev/null
ulimit -n 4096 2>/dev/null
port=7900
T=40
FIRST=30
PGBIN=/usr/lib/postgresql/15/bin
PGUSER_OS=postgres

# The files the servers serve, made once: 1 MiB and 16 KiB of random
# bytes, and a tree of random files for rsync.
mkfiles() {
	local i
	mkdir -p "$W/html" "$W/tree/a/b" "$W/tree/c"
	head -c 1048576 /dev/urandom >"$W/html/1m.bin"
	head -c 16384 /dev/urandom >"$W/html/16k.bin"
	for i in $(seq 1 30); do
		head -c $((RANDOM * 5 + i)) /dev/urandom >"$W/tree/f$i"
		head -c $((RANDOM + i)) /dev/urandom >"$W/tree/a/g$i"
	done
	for i in $(seq 1 10); do
		head -c $((RANDOM / 4 + i)) /dev/urandom >"$W/tree/a/b/h$i"
	done
	: >"$W/tree/c/empty"
	chmod -R a+rX "$W/html" "$W/tree"
}
tree_bytes() { du -sb --apparent-size "$W/tree" | cut -f1; }

# The preload's lines that tell how the connections went (rdma runs; the
# tcp run has no log of its own).
rsp_summary() {
	local f=$W/rsp.log why
	[ "$1" = rdma ] || return 0
	[ -s "$f" ] || {
		echo "; no preload log"
		return
	}
	printf '; preload log: %s listening, %s accepted, %s connected, %s moved after fork-safe set-up, %s stayed on TCP, %s left to the parent' \
		"$(grep -c ': listening on rsocket' "$f")" \
		"$(grep -c ': accepted rsocket' "$f")" \
		"$(grep -c ': connect\(ed\|ing\) over rsocket' "$f")" \
		"$(grep -c 'after fork-safe TCP set-up' "$f")" \
		"$(grep -c ': stays on TCP' "$f")" \
		"$(grep -c "the parent's, left alone" "$f")"
	why=$(sed -n 's/.*: stays on TCP (\(.*\))$/\1/p' "$f" | sort | uniq -c | sort -rn | head -3 | sed 's/^ *//' | tr '\n' ';')
	[ -z "$why" ] || printf ' (%s)' "${why%;}"
}

# stop PID [SIGNAL]: ends a server (its timeout wrapper passes the signal
# on) and waits for it.
stop() {
	kill "-${2:-TERM}" "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# listening KEY PORT WHAT LOG...: the server start_with just started
# listens on PORT (verdict.sh's wait_bound: an RDMA CM id or a TCP
# listener, not the preload's log, which sshd closes with every descriptor
# it did not open); else res[KEY.why] says WHAT did not start, with the
# ends of its LOGs, the server is stopped, and the status is 1.
listening() {
	local key=$1 p=$2 what=$3 f out=
	shift 3
	wait_bound "$p" "$started" && return 0
	for f; do
		out="$out $(tail -c 300 "$f")"
	done
	res[$key.why]="$what did not start:$out"
	stop "$started"
	return 1
}

# Kernel reports of crashed programs since mark_crashes.
mark_crashes() { crashes0=$(dmesg 2>/dev/null | grep -c 'segfault at'); }
crashes0=0
new_crashes() {
	dmesg 2>/dev/null | grep 'segfault at' | tail -n +$((crashes0 + 1)) |
		sed 's/^\[[ 0-9.]*\] //' | head -3 | tr '\n' ' '
}

# cause FILE...: what the known signatures in a failed run's logs (and
# the kernel's) say about it; nothing when none matches.
cause() {
	local c
	c=$(new_crashes)
	[ -z "$c" ] || printf 'cause: a process crashed: %s' "$c"
	if grep -qs 'accept4() failed (22: Invalid argument)' "$@"; then
		printf 'cause: the workers cannot accept on the listener the master made before fork() (accept4: EINVAL): the listener was not shared with them (rsocket(7), Listeners and fork). '
	fi
	if grep -qs 'Transport endpoint is not connected' "$@"; then
		printf 'cause: like BUGS.md preload-split-connection (fixed): a forked child uses the connection its parent accepted over RDMA; in the child it is the plain, unconnected kernel socket (ENOTCONN). '
	elif grep -qs 'this process has only its kernel socket' "$W/rsp.log"; then
		printf 'cause: like BUGS.md preload-split-connection (fixed): a process used a connection another process moved to RDMA; it has only the kernel socket, shut down by the move (%s). ' \
			"$(grep -m1 'this process has only its kernel socket' "$W/rsp.log")"
	fi
	# PostgreSQL with log_connections: a backend that logged its
	# connection and nothing else, and is gone, never got its client's
	# startup packet (authentication_timeout ends it without a word)
	local f pid
	for f in "$@"; do
		grep -qs 'connection received' "$f" || continue
		for pid in $(sed -n 's/.*\[\([0-9]*\)\] LOG:  connection received.*/\1/p' "$f"); do
			[ "$(grep -c "\[$pid\]" "$f")" = 1 ] || continue
			kill -0 "$pid" 2>/dev/null && continue
			printf 'cause: like BUGS.md preload-forksafe-eof (fixed): backend %s logged its connection, then exited without a word: it never got its client'"'"'s startup packet (preload log: %s). ' \
				"$pid" "$(grep "^rspreload\[$pid\]" "$W/rsp.log" | tr '\n' ' ')"
		done
	done
	if grep -qsE 'Operation timed out after [0-9]+ milliseconds with [1-9][0-9]* out of [0-9]+ bytes received' "$@"; then
		printf 'cause: like BUGS.md apache-event-stall (fixed): the response stopped short of its end and never came whole. '
	fi
	if grep -qs 'the new image gets the placeholder' "$W/rsp.log"; then
		printf "cause: like BUGS.md preload-exec-inherited (fixed): a connection crossed an exec without its relay: %s. " \
			"$(grep -m1 'the new image gets the placeholder' "$W/rsp.log")"
	fi
}

# The known failures each scenario may show, as BUGS.md ids: a failed run
# under the preload whose causes are all among them (and which the TCP
# control passed) is an XFAIL naming them; any other failure is a FAIL.
declare -A known=()

# verdict NAME UNIT BETTER: XFAIL for a known failure (above), else check.
verdict() {
	local name=$1 why=${res[$1.rdma.why]:-} ids id
	if [ "${res[$name.rdma.ok]:-0}" != 1 ] && [ "${res[$name.tcp.ok]:-0}" = 1 ] &&
		[ -n "${known[$name]:-}" ] && ! grep -q 'a process crashed' <<<"$why"; then
		ids=$(grep -o 'BUGS.md [a-z0-9-]*' <<<"$why" | sort -u | cut -d' ' -f2)
		for id in $ids; do
			[[ " ${known[$name]} " == *" $id "* ]] || ids=
		done
		if [ -n "$ids" ]; then
			xfail "$name" "BUGS.md $(head -1 <<<"$ids"): under the preload: $why"
			return
		fi
	fi
	check "$@"
}

# --- web servers: nginx, Apache ------------------------------------------
# serve_web NAME MODE PORT DIR WHAT [ENV...]: the web server WHAT that
# start_with just started (its logs DIR/out, DIR/error.log and
# DIR/access.log, the common log format) listens on PORT; curl fetches
# html/1m.bin (compared), ab makes 500 requests for html/16k.bin, each
# answered whole by the access log; the server is stopped.
serve_web() {
	local name=$1 mode=$2 p=$3 d=$4 what=$5 before after s c rps whole
	shift 5
	s=$started
	listening "$name.$mode" $p "$what" "$d/out" "$d/error.log" || return
	before=$(pkts)
	# the first contact: bounded tighter, a failure here is quick
	with "$mode" env "$@" timeout -k 5 $FIRST curl -sS --max-time $((FIRST - 5)) \
		-o "$d/1m.got" "http://$A1:$p/1m.bin" >"$d/curl" 2>&1
	c=$?
	if [ $c != 0 ] || ! cmp -s "$W/html/1m.bin" "$d/1m.got"; then
		res[$name.$mode.why]="curl exit $c, $(stat -c %s "$d/1m.got" 2>/dev/null || echo no) bytes: $(tail -c 200 "$d/curl"); $(cause "$d/error.log" "$d/curl")$what: $(tail -c 300 "$d/error.log")$(rsp_summary "$mode") (ab not run)"
		stop $s
		return
	fi
	with "$mode" env "$@" timeout -k 5 $T ab -q -n 500 -c 4 -s $((T - 5)) \
		"http://$A1:$p/16k.bin" >"$d/ab" 2>&1
	c=$?
	stop $s
	after=$(pkts)
	rps=$(sed -n 's/^Requests per second: *\([0-9]*\).*/\1/p' "$d/ab")
	if [ $c != 0 ] || ! grep -q '^Complete requests: *500$' "$d/ab" ||
		! grep -q '^Failed requests: *0$' "$d/ab" ||
		! grep -q '^Document Length: *16384 bytes' "$d/ab" ||
		grep -q '^Non-2xx' "$d/ab" || [ -z "$rps" ]; then
		res[$name.$mode.why]="ab exit $c: $(grep -E '^(Complete|Failed|Non-2xx|Document Length)' "$d/ab" | tr '\n' ' ') $(tail -c 300 "$d/ab") $(cause "$d/error.log")$(rsp_summary "$mode")"
		return
	fi
	# every request reached the server and was answered whole
	# (the size ends the common format's line, a space nginx's)
	whole=$(grep -cE '"GET /16k.bin HTTP/1.0" 200 16384( |$)' "$d/access.log")
	if [ "$whole" != 500 ]; then
		res[$name.$mode.why]="the access log has $whole of 500 requests answered whole"
		return
	fi
	echo "# $name $mode: curl 1 MiB compared; ab 500 x 16 KiB: $rps requests/s$(rsp_summary "$mode")"
	res[$name.$mode.ok]=1
	res[$name.$mode.bytes]=$((1048576 + 500 * 16384))
	res[$name.$mode.metric]=$rps
	res[$name.$mode.pkts]=$((after - before))
}

# nginx_on NAME MODE [ENV...]
nginx_on() {
	local name=$1 mode=$2 p=$((port += 1)) d
	shift 2
	d="$W/$name.$mode"
	mkdir -p "$d"
	# The compiled-in defaults but for the paths (no `user`: workers run
	# as nobody), two workers, and the foreground.
	cat >"$d/nginx.conf" <<EOF
worker_processes 2;
daemon off;
pid $d/nginx.pid;
error_log $d/error.log;
events { }
http {
	access_log $d/access.log;
	client_body_temp_path $d/body;
	proxy_temp_path $d/proxy;
	fastcgi_temp_path $d/fastcgi;
	uwsgi_temp_path $d/uwsgi;
	scgi_temp_path $d/scgi;
	server {
		listen $A1:$p;
		root $W/html;
	}
}
EOF
	start_with "$mode" env "$@" timeout -k 5 $((4 * T)) nginx -p "$d" -e "$d/error.log" \
		-c "$d/nginx.conf" >"$d/out" 2>&1
	serve_web "$name" "$mode" $p "$d" nginx "$@"
}
nginx_run() { nginx_on nginx "$1"; }
nginx-forksafe_run() { nginx_on nginx-forksafe "$1" RDMAV_FORK_SAFE=1; }

# apache_on NAME MODE MPM [ENV...]: Apache 2.4 with the MPM's compiled-in
# defaults (a master that listens as root, then forks children that become
# nobody and accept; event and worker: threads in each child), its own
# config file, in the foreground.
apache_on() {
	local name=$1 mode=$2 mpm=$3 p=$((port += 1)) d m=/usr/lib/apache2/modules
	shift 3
	d="$W/$name.$mode"
	mkdir -p "$d"
	cat >"$d/httpd.conf" <<EOF
ServerRoot $d
ServerName localhost
Listen $A1:$p
PidFile $d/httpd.pid
ErrorLog $d/error.log
LoadModule mpm_${mpm}_module $m/mod_mpm_${mpm}.so
LoadModule authz_core_module $m/mod_authz_core.so
LoadModule mime_module $m/mod_mime.so
TypesConfig /etc/mime.types
User nobody
Group nogroup
DocumentRoot $W/html
<Directory $W/html>
	Require all granted
</Directory>
LogFormat "%h %l %u %t \"%r\" %>s %b" common
CustomLog $d/access.log common
EOF
	start_with "$mode" env "$@" timeout -k 5 $((4 * T)) apache2 -f "$d/httpd.conf" \
		-DFOREGROUND >"$d/out" 2>&1
	serve_web "$name" "$mode" $p "$d" apache2 "$@"
}
apache_run() { apache_on apache "$1" event; }
apache-prefork_run() { apache_on apache-prefork "$1" prefork; }
apache-forksafe_run() { apache_on apache-forksafe "$1" event RDMAV_FORK_SAFE=1; }

# --- Python WSGI servers: gunicorn, uWSGI ---------------------------------
# Both serve html/ through wsgi_files.py (beside this script) and take
# serve_web's checks; their access logs in the common format.
gunicorn_run() {
	local p=$((port += 1)) d="$W/gunicorn.$1"
	mkdir -p "$d"
	# gunicorn's default sync workers (a process per connection at a
	# time), two of them: a master that listens, workers that accept.
	start_with "$1" env WSGI_ROOT="$W/html" timeout -k 5 $((4 * T)) \
		gunicorn --workers 2 --bind "$A1:$p" --chdir "$(dirname "$0")" \
		--access-logfile "$d/access.log" --error-logfile "$d/error.log" \
		wsgi_files:app >"$d/out" 2>&1
	serve_web gunicorn "$1" $p "$d" gunicorn
}

# uWSGI's master as root, two worker processes that become nobody; its
# SIGTERM reloads unless --die-on-term.
uwsgi_run() {
	local p=$((port += 1)) d="$W/uwsgi.$1"
	mkdir -p "$d"
	chmod 777 "$d"
	: >"$d/error.log"
	start_with "$1" env WSGI_ROOT="$W/html" timeout -k 5 $((4 * T)) \
		uwsgi --plugin python3 --http-socket "$A1:$p" --master \
		--processes 2 --uid nobody --gid nogroup --die-on-term \
		--wsgi-file "$(dirname "$0")/wsgi_files.py" --callable app \
		--logto "$d/access.log" \
		--logformat '%(addr) - - [%(ltime)] "%(method) %(uri) %(proto)" %(status) %(rsize)' \
		>"$d/out" 2>&1
	serve_web uwsgi "$1" $p "$d" uwsgi
}

# --- rsync ---------------------------------------------------------------
# rsync_on NAME MODE USER [ENV...]: the daemon as USER: root (its module
# user is then nobody, the default: each connection's child switches to
# it) or nobody (no switch).
rsync_on() {
	local name=$1 mode=$2 user=$3 p=$((port += 1)) before after s d c t0 t1 b
	shift 3
	local -a as=()
	[ "$user" = root ] || as=(setpriv --reuid="$user" --regid=nogroup --clear-groups)
	d="$W/$name.$mode"
	mkdir -p "$d/mod" "$d/pulled"
	: >"$d/diff"
	chmod 777 "$d" "$d/mod"
	cat >"$d/rsyncd.conf" <<EOF
pid file = $d/rsyncd.pid
log file = $d/rsyncd.log
use chroot = no
[mod]
	path = $d/mod
	read only = no
EOF
	before=$(pkts)
	start_with "$mode" env "$@" timeout -k 5 $((4 * T)) "${as[@]}" rsync --daemon --no-detach \
		--config="$d/rsyncd.conf" --address="$A1" --port=$p >"$d/out" 2>&1
	s=$started
	listening "$name.$mode" $p "rsync --daemon" "$d/out" "$d/rsyncd.log" || return
	t0=$(now_ms)
	# (--timeout: rsync's own bound on a silent peer)
	with "$mode" env "$@" timeout -k 5 $FIRST rsync -a --timeout=$((FIRST - 10)) "$W/tree/" \
		"rsync://$A1:$p/mod/tree/" >"$d/push" 2>&1
	c=$?
	if [ $c != 0 ] || ! diff -r "$W/tree" "$d/mod/tree" >"$d/diff" 2>&1; then
		res[$name.$mode.why]="push: rsync exit $c: $(tail -c 300 "$d/push") $(head -c 200 "$d/diff"); $(cause "$d/rsyncd.log" "$d/push")daemon: $(grep -v 'connect from\|rsync on\|building file list' "$d/rsyncd.log" | tail -c 400)$(rsp_summary "$mode")"
		stop $s
		return
	fi
	with "$mode" env "$@" timeout -k 5 $T rsync -a --timeout=$((FIRST - 10)) \
		"rsync://$A1:$p/mod/tree/" "$d/pulled/" >"$d/pull" 2>&1
	c=$?
	t1=$(now_ms)
	stop $s
	after=$(pkts)
	if [ $c != 0 ] || ! diff -r "$W/tree" "$d/pulled" >"$d/diff" 2>&1; then
		res[$name.$mode.why]="pull: rsync exit $c: $(tail -c 300 "$d/pull") $(head -c 200 "$d/diff"); $(cause "$d/rsyncd.log" "$d/pull")daemon: $(grep -v 'connect from\|rsync on\|building file list' "$d/rsyncd.log" | tail -c 400)$(rsp_summary "$mode")"
		return
	fi
	b=$(tree_bytes)
	echo "# $name $mode: pushed and pulled $b bytes, compared$(rsp_summary "$mode")"
	if [ "$mode" = rdma ] && grep -qs ': back on TCP' "$W/rsp.log"; then
		res[$name.$mode.why]="pushed and pulled $b bytes, compared, but over TCP after the greeting: $(grep -m1 ': back on TCP' "$W/rsp.log"). "
		return
	fi
	res[$name.$mode.ok]=1
	res[$name.$mode.bytes]=$((2 * b))
	res[$name.$mode.metric]=$((t1 - t0))
	res[$name.$mode.pkts]=$((after - before))
}
rsync_run() { rsync_on rsync "$1" root; }
rsync-forksafe_run() { rsync_on rsync-forksafe "$1" root RDMAV_FORK_SAFE=1; }
rsync-forksafe-user_run() { rsync_on rsync-forksafe-user "$1" nobody RDMAV_FORK_SAFE=1; }

# --- PostgreSQL ----------------------------------------------------------
# One cluster for every run (initdb is slow under TCG): made by the
# postgres user in $W/pg/data, trusting connections from the host's own
# addresses (`samehost`) besides initdb's defaults.
pg_init() {
	[ -d "$W/pg/data" ] && return 0
	mkdir -p "$W/pg/sock"
	chown -R "$PGUSER_OS:" "$W/pg"
	if ! setpriv --reuid="$PGUSER_OS" --regid="$PGUSER_OS" --clear-groups \
		timeout 120 "$PGBIN/initdb" -D "$W/pg/data" -U postgres -A trust \
		>"$W/pg/initdb.out" 2>&1; then
		pg_init_why="initdb failed: $(tail -c 400 "$W/pg/initdb.out")"
		return 1
	fi
	echo "host all all samehost trust" >>"$W/pg/data/pg_hba.conf"
}
pg_init_why=
# The rows the query returns, made here: "i|md5(i)" for 1..40000.
pg_expect() {
	/usr/bin/python3 -c '
import hashlib
for i in range(1, 40001):
    print("%d|%s" % (i, hashlib.md5(str(i).encode()).hexdigest()))'
}
# postgres_on NAME MODE [ENV...]
postgres_on() {
	local name=$1 mode=$2 p=$((port += 1)) before after s d c tps q bal
	shift 2
	d="$W/$name.$mode"
	mkdir -p "$d"
	if ! pg_init; then
		res[$name.$mode.why]=$pg_init_why
		return
	fi
	local -a cl=(-h "$A1" -p "$p" -U postgres)
	before=$(pkts)
	# the postmaster forks a backend per connection, each of which
	# reads and writes the connection itself
	start_with "$mode" env "$@" timeout -k 5 $((6 * T)) setpriv --reuid="$PGUSER_OS" \
		--regid="$PGUSER_OS" --clear-groups "$PGBIN/postgres" -D "$W/pg/data" \
		-c listen_addresses="$A1" -c log_connections=on -c log_disconnections=on \
		-p $p -k "$W/pg/sock" >"$d/log" 2>&1
	s=$started
	if ! wait_output "$d/log" "database system is ready to accept connections" 60 $s; then
		res[$name.$mode.why]="postgres did not start: $(tail -c 400 "$d/log")"
		stop $s INT
		return
	fi
	# the first contact: bounded tighter, a failure here is quick
	q=$(with "$mode" env "$@" timeout -k 5 $FIRST "$PGBIN/psql" "${cl[@]}" -XAt \
		-c "SELECT 6 * 7" postgres 2>&1)
	if [ "$q" != 42 ]; then
		res[$name.$mode.why]="psql SELECT 6 * 7: '$(head -c 200 <<<"$q")'; $(cause "$d/log")server: $(grep -v '^\s*$' "$d/log" | tail -c 300)$(rsp_summary "$mode") (pgbench not run)"
		stop $s INT
		return
	fi
	with "$mode" env "$@" timeout -k 5 $((2 * T + 10)) "$PGBIN/pgbench" -i "${cl[@]}" postgres \
		>"$d/init" 2>&1
	c=$?
	if [ $c != 0 ]; then
		res[$name.$mode.why]="pgbench -i exit $c: $(tail -c 300 "$d/init"); $(cause "$d/log")server: $(grep -v '^\s*$' "$d/log" | tail -c 400)$(rsp_summary "$mode")"
		stop $s INT
		return
	fi
	with "$mode" env "$@" timeout -k 5 $((2 * T + 10)) "$PGBIN/pgbench" -c 4 -t 50 "${cl[@]}" \
		postgres >"$d/bench" 2>&1
	c=$?
	tps=$(sed -n 's/^tps = \([0-9]*\).*without initial connection time.*/\1/p' "$d/bench")
	if [ $c != 0 ] || ! grep -q 'number of transactions actually processed: 200/200' "$d/bench" ||
		[ -z "$tps" ]; then
		res[$name.$mode.why]="pgbench exit $c: $(tail -c 400 "$d/bench"); $(cause "$d/log")server: $(tail -c 300 "$d/log")$(rsp_summary "$mode")"
		stop $s INT
		return
	fi
	# TPC-B's invariant: every transaction added its delta to an account,
	# a teller and a branch, and logged it in the history
	bal=$(with "$mode" env "$@" timeout -k 5 $T "$PGBIN/psql" "${cl[@]}" -XAt -c \
		"SELECT (SELECT count(*) FROM pgbench_history), (SELECT count(*) FROM pgbench_accounts), (SELECT sum(abalance) FROM pgbench_accounts) = (SELECT sum(delta) FROM pgbench_history) AND (SELECT sum(bbalance) FROM pgbench_branches) = (SELECT sum(delta) FROM pgbench_history) AND (SELECT sum(tbalance) FROM pgbench_tellers) = (SELECT sum(delta) FROM pgbench_history)" \
		postgres 2>&1)
	with "$mode" env "$@" timeout -k 5 $T "$PGBIN/psql" "${cl[@]}" -XAt -c \
		"SELECT i, md5(i::text) FROM generate_series(1, 40000) i" postgres \
		>"$d/q" 2>"$d/q.err"
	c=$?
	stop $s INT
	after=$(pkts)
	if [ "$bal" != "200|100000|t" ]; then
		res[$name.$mode.why]="history, accounts, balances agree: '$(head -c 200 <<<"$bal")', not 200|100000|t"
		return
	fi
	pg_expect >"$d/q.want"
	if [ $c != 0 ] || ! cmp -s "$d/q.want" "$d/q"; then
		res[$name.$mode.why]="psql exit $c: $(stat -c %s "$d/q") bytes, not the $(stat -c %s "$d/q.want") expected: $(tail -c 200 "$d/q.err")"
		return
	fi
	q=$(stat -c %s "$d/q")
	echo "# $name $mode: pgbench -i, 200 transactions at $tps tps, balances agree, $q bytes of rows compared$(rsp_summary "$mode")"
	res[$name.$mode.ok]=1
	# only what was compared: the query's rows
	res[$name.$mode.bytes]=$q
	res[$name.$mode.metric]=$tps
	res[$name.$mode.pkts]=$((after - before))
}
postgres_run() { postgres_on postgres "$1"; }
postgres-forksafe_run() { postgres_on postgres-forksafe "$1" RDMAV_FORK_SAFE=1; }

# --- sshd ----------------------------------------------------------------
# One host key and one key for root, made once.
ssh_init() {
	[ -f "$W/ssh/id" ] && return 0
	mkdir -p "$W/ssh"
	ssh-keygen -q -t ed25519 -N '' -f "$W/ssh/host" &&
		ssh-keygen -q -t ed25519 -N '' -f "$W/ssh/id" &&
		cp "$W/ssh/id.pub" "$W/ssh/authorized_keys"
}
# sshd_on NAME MODE [ENV...]
sshd_on() {
	local name=$1 mode=$2 p=$((port += 1)) before after s d c t0 t1
	shift 2
	d="$W/$name.$mode"
	mkdir -p "$d"
	if ! ssh_init >"$d/keygen" 2>&1; then
		res[$name.$mode.why]="ssh-keygen: $(tail -c 300 "$d/keygen")"
		return
	fi
	# privilege separation's empty directory (tmpfs in the guest)
	mkdir -p /run/sshd
	cat >"$d/sshd_config" <<EOF
ListenAddress $A1
HostKey $W/ssh/host
PidFile $d/sshd.pid
AuthorizedKeysFile $W/ssh/authorized_keys
StrictModes no
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
	local -a so=(-F /dev/null -i "$W/ssh/id" -o BatchMode=yes
		-o StrictHostKeyChecking=no -o UserKnownHostsFile="$d/known_hosts"
		-o ConnectTimeout=$((FIRST - 10)) -P "$p")
	before=$(pkts)
	start_with "$mode" env "$@" timeout -k 5 $((4 * T)) /usr/sbin/sshd -D -e \
		-f "$d/sshd_config" -p $p >"$d/log" 2>&1
	s=$started
	listening "$name.$mode" $p sshd "$d/log" || return
	t0=$(now_ms)
	# the first contact: bounded tighter, a failure here is quick
	with "$mode" env "$@" timeout -k 5 $FIRST scp -q "${so[@]}" "$W/html/1m.bin" \
		"root@$A1:$d/up.bin" >"$d/up" 2>&1
	c=$?
	if [ $c != 0 ] || ! cmp -s "$W/html/1m.bin" "$d/up.bin"; then
		res[$name.$mode.why]="scp up: exit $c: $(tail -c 300 "$d/up"); $(cause "$d/log" "$d/up")sshd: $(tail -c 400 "$d/log")$(rsp_summary "$mode")"
		stop $s
		return
	fi
	with "$mode" env "$@" timeout -k 5 $T scp -q "${so[@]}" "root@$A1:$d/up.bin" \
		"$d/down.bin" >"$d/down" 2>&1
	c=$?
	t1=$(now_ms)
	stop $s
	after=$(pkts)
	if [ $c != 0 ] || ! cmp -s "$W/html/1m.bin" "$d/down.bin"; then
		res[$name.$mode.why]="scp back: exit $c: $(tail -c 300 "$d/down"); $(cause "$d/log" "$d/down")sshd: $(tail -c 400 "$d/log")$(rsp_summary "$mode")"
		return
	fi
	echo "# $name $mode: 1 MiB up and back, compared$(rsp_summary "$mode")"
	# sshd knows its client by its address, as on TCP (it crossed sshd's
	# re-execution with the relayed connection)
	if [ "$(grep -c "Accepted publickey for root from $A1 port" "$d/log")" != 2 ]; then
		res[$name.$mode.why]="1 MiB up and back, compared, but sshd did not log two logins from $A1: $(grep -m2 'Accepted\|Connection from' "$d/log" | tr '\n' '|')"
		return
	fi
	# sshd closes the preload's log: the client's lines tell
	if [ "$mode" = rdma ] && [[ " $* " == *" RDMAV_FORK_SAFE=1 "* ]] &&
		grep -qs ': stays on TCP' "$W/rsp.log"; then
		res[$name.$mode.why]="1 MiB up and back, compared, over TCP: cause: like BUGS.md preload-fork-dup (fixed): the connection, on two descriptors across sshd's re-execution, stayed on TCP ($(grep -m1 ': stays on TCP' "$W/rsp.log")). "
		return
	fi
	res[$name.$mode.ok]=1
	res[$name.$mode.bytes]=$((2 * 1048576))
	res[$name.$mode.metric]=$((t1 - t0))
	res[$name.$mode.pkts]=$((after - before))
}
sshd_run() { sshd_on sshd "$1"; }
sshd-forksafe_run() { sshd_on sshd-forksafe "$1" RDMAV_FORK_SAFE=1; }

# serve_1m NAME MODE PORT WHAT COMMAND...: run the HTTP server COMMAND
# (WHAT in messages, its output in $W/NAME.MODE/log) listening on PORT;
# curl fetches html/1m.bin from it, compared; the server is stopped.
serve_1m() {
	local name=$1 mode=$2 p=$3 what=$4 d="$W/$1.$2" before after s c t0 t1
	shift 4
	mkdir -p "$d"
	before=$(pkts)
	start_with "$mode" timeout -k 5 $((2 * T)) "$@" >"$d/log" 2>&1
	s=$started
	listening "$name.$mode" $p "$what" "$d/log" || return
	t0=$(now_ms)
	with "$mode" timeout -k 5 $T curl -sS --max-time $((T - 5)) -o "$d/1m.got" \
		"http://$A1:$p/1m.bin" >"$d/curl" 2>&1
	c=$?
	t1=$(now_ms)
	stop $s
	after=$(pkts)
	if [ $c != 0 ] || ! cmp -s "$W/html/1m.bin" "$d/1m.got"; then
		res[$name.$mode.why]="curl exit $c: $(tail -c 200 "$d/curl"); $(cause "$d/log")server: $(tail -c 300 "$d/log")$(rsp_summary "$mode")"
		return
	fi
	echo "# $name $mode: 1 MiB compared$(rsp_summary "$mode")"
	res[$name.$mode.ok]=1
	res[$name.$mode.bytes]=1048576
	res[$name.$mode.metric]=$((t1 - t0))
	res[$name.$mode.pkts]=$((after - before))
}

# --- python3 -m http.server ----------------------------------------------
http-server_run() {
	local p=$((port += 1))
	serve_1m http-server "$1" $p http.server /usr/bin/python3 -m http.server \
		$p --bind "$A1" --directory "$W/html"
}

# --- lighttpd --------------------------------------------------------------
# lighttpd binds as root and only then becomes its server.username: the
# rsocket listener must follow the change (rsocket(7), Listeners and
# credential changes).
lighttpd_run() {
	local p=$((port += 1)) d="$W/lighttpd.$1"
	mkdir -p "$d"
	cat >"$d/lighttpd.conf" <<EOF
server.document-root = "$W/html"
server.bind = "$A1"
server.port = $p
server.username = "nobody"
server.groupname = "nogroup"
EOF
	serve_1m lighttpd "$1" $p lighttpd lighttpd -D -f "$d/lighttpd.conf"
}

if [ ! -e "$PRELOAD" ]; then
	fail setup "no $PRELOAD"
	finish
fi
if [ -z "$(pkts)" ]; then
	fail setup "cannot read ${RDMA_TEST_DEV:-rxe0}'s counters (rdma statistic)"
	finish
fi
mkfiles

# name:programs it needs (comma-separated):better:unit
for srv in \
	nginx:nginx,curl,ab:higher:requests/s \
	nginx-forksafe:nginx,curl,ab:higher:requests/s \
	apache:apache2,curl,ab:higher:requests/s \
	apache-prefork:apache2,curl,ab:higher:requests/s \
	apache-forksafe:apache2,curl,ab:higher:requests/s \
	gunicorn:gunicorn,curl,ab:higher:requests/s \
	uwsgi:uwsgi,curl,ab:higher:requests/s \
	rsync:rsync:lower:ms \
	rsync-forksafe:rsync:lower:ms \
	rsync-forksafe-user:rsync,setpriv:lower:ms \
	postgres:$PGBIN/postgres,$PGBIN/initdb,$PGBIN/pgbench,$PGBIN/psql,setpriv:higher:tps \
	postgres-forksafe:$PGBIN/postgres,$PGBIN/initdb,$PGBIN/pgbench,$PGBIN/psql,setpriv:higher:tps \
	sshd:/usr/sbin/sshd,scp,ssh,ssh-keygen:lower:ms \
	sshd-forksafe:/usr/sbin/sshd,scp,ssh,ssh-keygen:lower:ms \
	http-server:/usr/bin/python3,curl:lower:ms \
	lighttpd:lighttpd,curl:lower:ms; do
	IFS=: read -r name progs better unit <<<"$srv"
	wanted "$name" || continue
	missing=
	for prog in ${progs//,/ }; do
		command -v "$prog" >/dev/null || missing="$missing $prog"
	done
	if [ -n "$missing" ]; then
		fail "$name" "not installed:$missing (tests/setup.sh installs them)"
		continue
	fi
	t0=$(now_ms)
	: >"$W/rsp.log"
	chmod 666 "$W/rsp.log"
	mark_crashes
	"${name}_run" rdma
	[ "${VERBOSE:-0}" = 1 ] && show "$W/rsp.log"
	t1=$(now_ms)
	mark_crashes
	"${name}_run" tcp
	t2=$(now_ms)
	echo "# $name: rdma run $(((t1 - t0) / 1000)) s, tcp run $(((t2 - t1) / 1000)) s; packets: rdma ${res[$name.rdma.pkts]:-?}, tcp ${res[$name.tcp.pkts]:-?}"
	verdict "$name" "$unit" "$better"
done
finish
