#!/usr/bin/env python3
# Sums the callgrind files of tests/bench/run.sh mesh-callgrind per scheme
# (p2p, or lower for p2pmesh -L) over the ranks, and prints the totals,
# their ratio and the functions whose self cost differs most between the
# schemes.  With --callers FUNC: how often each caller called FUNC, per
# scheme over the ranks (who takes pthread_mutex_lock more often, say).
#
# usage: mesh_callgrind.py DIR [TOP]
#        mesh_callgrind.py DIR --callers FUNC [TOP]
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


CALLER = re.compile(r"\s*[\d,]+\s+(?:\([^)]*\)\s+)?<\s+\S*?([^:\s]+) "
                    r"(?:\[[^]]*\] )?\((\d+)x\)")


def callers_of(path, func):
    """Calls to @func by each caller in one callgrind file."""
    text = subprocess.run(
        ["callgrind_annotate", "--tree=caller", "--inclusive=yes",
         "--threshold=100", path],
        capture_output=True, text=True, check=True).stdout
    calls = collections.Counter()
    target = re.compile(r"\*\s+\S*?[:\s]%s(@@\S+)?\s" % re.escape(func))
    for block in text.split("\n\n"):
        lines = block.splitlines()
        star = next((i for i, l in enumerate(lines) if target.search(l)),
                    None)
        if star is None:
            continue
        for line in lines[:star]:
            m = CALLER.match(line)
            if m:
                calls[m.group(1)] += int(m.group(2))
    return calls


def rank_files(path):
    """(file, scheme, rank) of each p2pmesh rank's callgrind file."""
    for f in sorted(glob.glob(os.path.join(path, "cg.*"))):
        with open(f, errors="replace") as fd:
            cmd = next((l[5:] for l in fd if l.startswith("cmd:")), "")
        if "p2pmesh" in cmd:
            yield (f,) + scheme_and_rank(cmd)


def print_callers(path, func, top):
    calls = {"p2p": collections.Counter(), "lower": collections.Counter()}
    for f, scheme, _ in rank_files(path):
        calls[scheme].update(callers_of(f, func))
    print("calls to %s: p2p %d lower %d" % (
        func, sum(calls["p2p"].values()), sum(calls["lower"].values())))
    print("caller p2p-lower p2p lower")
    names = set(calls["p2p"]) | set(calls["lower"])
    for k in sorted(names, key=lambda k: -abs(calls["p2p"][k] -
                                             calls["lower"][k]))[:top]:
        print("%6d %6d %6d %s" % (calls["p2p"][k] - calls["lower"][k],
                                  calls["p2p"][k], calls["lower"][k], k))


def main(args):
    if not args:
        sys.exit("usage: mesh_callgrind.py DIR [TOP] | DIR --callers FUNC "
                 "[TOP]")
    if len(args) > 2 and args[1] == "--callers":
        print_callers(args[0], args[2], int(args[3]) if len(args) > 3 else 25)
        return
    top = int(args[1]) if len(args) > 1 else 25
    totals = collections.Counter()
    funcs = {"p2p": collections.Counter(), "lower": collections.Counter()}
    ranks = collections.defaultdict(dict)
    for path, scheme, rank in rank_files(args[0]):
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
