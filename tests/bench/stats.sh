# shellcheck shell=bash
# Sourced by the mesh bench's host side (mesh-bench.sh) and its guest side
# (mesh-guest.sh), so that both reckon a median the same way.

stats() { # values on stdin: median min max [printf format, %.1f]
	sort -g | awk -v f="${1:-%.1f}" '{ v[NR] = $1 } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf f " " f " " f "\n", m, v[1], v[NR] }'
}
