#!/bin/bash
# Style gate: the C sources follow the repository's .clang-format (kernel
# style).  Fix a failure with: clang-format -i <file>.
set -u

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
# The sibling gates need no tools but the C compiler; their failure fails
# the suite.
gates=0
tests/style/check-env.sh || gates=1
tests/style/check-layout.sh || gates=1
tests/style/check-readme.sh || gates=1
tests/style/check-bugs.sh || gates=1
tests/style/check-bench.sh || gates=1
if ! command -v clang-format >/dev/null; then
	echo "SKIP: style/clang-format: clang-format is not installed"
	exit $gates
fi
bad=
shopt -s nullglob
for f in src/*.[ch] src/*/*.[ch] include/rdma/*.h include/infiniband/*.h examples/*.[ch] examples/*/*.c \
	tests/unit/*.[ch] tests/system/*.c tests/fuzz/*.c tests/bench/*.c; do
	clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad="$bad $f"
done
if [ -z "$bad" ]; then
	echo "PASS: style/clang-format"
	exit $gates
else
	echo "  not formatted:$bad"
	echo "FAIL: style/clang-format"
	exit 1
fi
