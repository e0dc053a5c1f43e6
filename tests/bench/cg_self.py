#!/usr/bin/env python3
# Instructions (Ir) attributed to one library in a callgrind output file.
#
# usage: cg_self.py [--calls-into] CALLGRIND_OUT PATTERN
#
# Default: the library's own instructions ("self" cost of the functions in
# objects whose file name contains PATTERN), not those of the functions it
# calls in libc or libibverbs.  With --calls-into: the inclusive cost of
# every call made into such an object from outside it, i.e. all user-space
# work done on behalf of the library's API, wherever it runs.
#
# File format: "ob=" sets the object of the functions that follow, "cob="
# the object of the callee of the next "calls=" line; the cost line right
# after "calls=" is that call's inclusive cost.  Other cost lines are self
# cost.  Cost lines start with the position columns ("positions:"), then
# the events.  Names may be compressed: "(id) name" defines, "(id)" refers.
import re
import sys


def main(args):
    calls_into = args and args[0] == "--calls-into"
    if calls_into:
        args = args[1:]
    if len(args) != 2:
        sys.exit("usage: cg_self.py [--calls-into] CALLGRIND_OUT PATTERN")
    path, pattern = args
    names = {}
    npos = 1
    in_obj = callee_in_obj = False
    after_calls = False
    total = 0
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("positions:"):
                npos = len(line.split()[1:])
                continue
            m = re.match(r"^(c?ob)=(?:\((\d+)\))?\s*(.*)$", line)
            if m:
                kind, ident, name = m.groups()
                if ident and name:
                    names[ident] = name
                elif ident:
                    name = names.get(ident, "")
                if kind == "ob":
                    in_obj = pattern in name
                    callee_in_obj = in_obj
                else:
                    callee_in_obj = pattern in name
                continue
            if line.startswith("calls="):
                after_calls = True
                continue
            if not line or not (line[0].isdigit() or line[0] in "+-*"):
                continue
            parts = line.split()
            cost = int(parts[npos]) if len(parts) > npos else 0
            if after_calls:
                if calls_into and callee_in_obj and not in_obj:
                    total += cost
                after_calls = False
                callee_in_obj = in_obj  # a cob= applies to one call
            elif in_obj and not calls_into:
                total += cost
    print(total)


if __name__ == "__main__":
    main(sys.argv[1:])
