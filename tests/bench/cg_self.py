#!/usr/bin/env python3
# Prints the instructions (Ir) executed inside objects whose file name
# contains PATTERN -- their own instructions only, not the functions they
# call elsewhere -- from a callgrind output file.
#
# usage: cg_self.py CALLGRIND_OUT PATTERN
#
# In the file, "ob=" sets the object of the functions that follow ("fn=");
# cost lines give a position and then the costs; the cost line right after
# a "calls=" line is the inclusive cost of that call and belongs to the
# callee, so it is skipped.  Names may be compressed: "(id) name" defines
# an id, "(id)" refers to it.
import re
import sys


def main(path, pattern):
    names = {}
    npos = 1
    in_obj = False
    skip_next = False
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
                continue
            if line.startswith("calls="):
                skip_next = True
                continue
            if line and (line[0].isdigit() or line[0] in "+-*"):
                if skip_next:
                    skip_next = False
                    continue
                if in_obj:
                    parts = line.split()
                    if len(parts) > npos:
                        total += int(parts[npos])
                continue
    print(total)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: cg_self.py CALLGRIND_OUT PATTERN")
    main(sys.argv[1], sys.argv[2])
