#!/bin/bash
# Privileged-program gate: the library and the preload read the environment
# only through cma_env() (src/util/env.h, secure_getenv), so a setuid program's
# invoker cannot choose their files or settings.  A plain getenv() call in
# src/ fails this check.
set -u

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
hits=$(grep -rnE '(^|[^_[:alnum:]])getenv[[:space:]]*\(' \
	--include='*.c' --include='*.h' src/)
if [ -z "$hits" ]; then
	echo "PASS: style/secure-getenv"
else
	echo "$hits" | sed 's/^/  plain getenv: /'
	echo "FAIL: style/secure-getenv"
	exit 1
fi
