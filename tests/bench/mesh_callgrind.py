#!/usr/bin/env python3
# Sums the callgrind files of tests/bench/mesh-callgrind.sh per scheme
# (p2p, or lower for p2pmesh -L) over the ranks, and prints the totals,
# their ratio and the functions whose self cost differs most between the
# schemes.
#
# usage: mesh_callgrind.py DIR [TOP]
import collections
import glob
import os
import re
import subprocess
import sys

COST = re.compile(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*)$")


def scheme_and_rank(cmd):
    """p2p or lower, and the rank, from p2pmesh's command line."""
    words = cmd.split()
    scheme = "lower" if "-L" in words else "p2p"
    for i, w in enumerate(words[:-1]):
        if w.isdigit() and re.match(r"[0-9a-fA-F:.]+$", words[i + 1]) \
                and words[i - 1] not in ("-p", "-c", "-i", "-s", "-w"):
            return scheme, int(w)
    return scheme, -1


def self_costs(path):
    """Total and per-function self cost (functions merged by name)."""
    text = subprocess.run(
        ["callgrind_annotate", "--auto=no", "--threshold=100", path],
        capture_output=True, text=True, check=True).stdout
    total, costs, listing = 0, collections.Counter(), False
    for line in text.splitlines():
        m = COST.match(line)
        if not m:
            listing = listing or "file:function" in line
            continue
        n = int(m.group(1).replace(",", ""))
        if m.group(2).startswith("PROGRAM TOTALS"):
            total = n
        elif listing:
            name = re.sub(r"\s*\[.*\]$", "", m.group(2)).split(":")[-1]
            costs[name] += n
    return total, costs


def main(args):
    if not args:
        sys.exit("usage: mesh_callgrind.py DIR [TOP]")
    top = int(args[1]) if len(args) > 1 else 25
    totals = collections.Counter()
    funcs = {"p2p": collections.Counter(), "lower": collections.Counter()}
    ranks = collections.defaultdict(dict)
    for path in sorted(glob.glob(os.path.join(args[0], "cg.*"))):
        with open(path, errors="replace") as f:
            cmd = next((l[5:] for l in f if l.startswith("cmd:")), "")
        if "p2pmesh" not in cmd:
            continue
        scheme, rank = scheme_and_rank(cmd)
        total, costs = self_costs(path)
        totals[scheme] += total
        funcs[scheme].update(costs)
        ranks[scheme][rank] = total
    if not totals["p2p"] or not totals["lower"]:
        sys.exit("mesh_callgrind: no callgrind output of both schemes")
    for scheme in ("p2p", "lower"):
        print("mesh-callgrind %s ranks=%d instr=%d per_rank=%s" % (
            scheme, len(ranks[scheme]), totals[scheme],
            ",".join(str(ranks[scheme][r]) for r in sorted(ranks[scheme]))))
    print("mesh-callgrind p2p / lower instr_ratio=%.3f diff=%d" % (
        totals["p2p"] / totals["lower"], totals["p2p"] - totals["lower"]))
    names = set(funcs["p2p"]) | set(funcs["lower"])
    diff = sorted(names, key=lambda k: funcs["lower"][k] - funcs["p2p"][k])
    print("function p2p-lower p2p lower (self instructions, all ranks)")
    for k in diff[:top] + ["..."] + diff[-(top // 3):]:
        if k == "...":
            print("...")
            continue
        print("%8d %8d %8d %s" % (funcs["p2p"][k] - funcs["lower"][k],
                                  funcs["p2p"][k], funcs["lower"][k], k))


if __name__ == "__main__":
    main(sys.argv[1:])
