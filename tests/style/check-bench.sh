#!/bin/bash
# Bench gate: the benchmark is not run in CI (tests/bench/README.md), so
# that it still builds and reports is checked here.  Each measuring program
# of tests/bench compiles as run.sh builds it (-Wall -Wextra -Werror against
# this tree's headers; compiled only, not linked: no build is needed), and
# report.py turns a small results file into the three-column table (ours,
# Debian's, the limit) and, where gnuplot is installed, the plot.
set -u

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
failed=0
pass() { echo "PASS: style/bench-$1"; }
fail() {
	echo "FAIL: style/bench-$1"
	failed=1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for src in tests/bench/*.c; do
	name=$(basename "$src" .c)
	# shellcheck disable=SC2046
	if gcc -O2 -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
		-fPIC -Iinclude $(pkg-config --cflags libibverbs 2>/dev/null) \
		-c "$src" -o "$tmp/$name.o" 2>"$tmp/$name.err"; then
		pass "cc-$name"
	else
		sed 's/^/  /' "$tmp/$name.err"
		fail "cc-$name"
	fi
done

# Two libraries and the limit for a setup step and an rsocket figure, a
# figure with no limit, and a comparison of two ways on our library.
cat >"$tmp/results.txt" <<'EOF'
ours steps.n100.connect 250 us
debian steps.n100.connect 260 us
raw steps.n100.connect 230 us
ours steps.n1000.connect 255 us
debian steps.n1000.connect 262 us
raw steps.n1000.connect 233 us
ours rsocket.throughput 0.60 Gb/s
debian rsocket.throughput 0.48 Gb/s
raw rsocket.throughput 0.69 Gb/s
ours memory.id_created 608 bytes
debian memory.id_created 613 bytes
ours rsocket.reg_64K_us 110 us
ours rsocket.copy_64K_us 50 us
EOF
plot=()
command -v gnuplot >/dev/null && plot=(--plot "$tmp/ratios.png")
if python3 tests/bench/report.py "$tmp/results.txt" "${plot[@]}" \
	>"$tmp/table.md" 2>"$tmp/report.err" &&
	grep -q '^| connect | 250 | 260 | 230 | \*\*0.96\*\* ✓ | 1.09 |$' "$tmp/table.md" &&
	grep -q '^| rsocket.throughput | Gb/s | 0.60 | 0.48 | 0.69 | 1.25 | ≥ 1.20 ✓ | 0.87 | ≥ 0.95 ✗ |$' "$tmp/table.md" &&
	grep -q '^| setup time (total of the steps) | ' "$tmp/table.md" &&
	{ [ ${#plot[@]} -eq 0 ] || [ -s "$tmp/ratios.png" ]; }; then
	pass report
else
	sed 's/^/  /' "$tmp/report.err" "$tmp/table.md"
	fail report
fi
exit $failed
