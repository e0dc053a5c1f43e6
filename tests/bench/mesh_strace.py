#!/usr/bin/env python3
# Counts the system calls of tests/bench/run.sh mesh-strace per scheme (p2p,
# or lower for p2pmesh -L) over the ranks, within each rank's measured
# span (between its first two getrusage calls, around form_mesh): by call
# and the file behind its first descriptor, and the rdma_cm commands by
# name.  Prints both schemes and the difference, largest first.
#
# usage: mesh_strace.py DIR
import collections
import glob
import re
import sys

# enum in <rdma/rdma_user_cm.h>
UCMA_CMDS = [
    "CREATE_ID", "DESTROY_ID", "BIND_IP", "RESOLVE_IP", "RESOLVE_ROUTE",
    "QUERY_ROUTE", "CONNECT", "LISTEN", "ACCEPT", "REJECT", "DISCONNECT",
    "INIT_QP_ATTR", "GET_EVENT", "GET_OPTION", "SET_OPTION", "NOTIFY",
    "JOIN_IP_MCAST", "LEAVE_MCAST", "MIGRATE_ID", "QUERY", "BIND",
    "RESOLVE_ADDR", "JOIN_MCAST",
]
CALL = re.compile(r"\d+\s+(\w+)\((.*)")
FD = re.compile(r"(\d+)<([^>]*)>")
UCMA_WRITE = re.compile(r'write\(\d+</dev/infiniband/rdma_cm>, "(.*?)"')
ESCAPES = {"n": 10, "t": 9, "r": 13, "v": 11, "f": 12, "\\": 92, '"': 34}


def first_word(text):
    """The little-endian u32 at the start of strace's quoted buffer."""
    out, i = bytearray(), 0
    while i < len(text) and len(out) < 4:
        c = text[i]
        if c != "\\":
            out.append(ord(c))
            i += 1
        elif text[i + 1] == "x":
            out.append(int(text[i + 2:i + 4], 16))
            i += 4
        elif text[i + 1] in "01234567":
            j = i + 1
            while j < len(text) and j < i + 4 and text[j] in "01234567":
                j += 1
            out.append(int(text[i + 1:j], 8))
            i = j
        else:
            out.append(ESCAPES.get(text[i + 1], ord(text[i + 1])))
            i += 2
    return int.from_bytes(bytes(out[:4]), "little")


def read_rank(path):
    """The rank's scheme (lower for p2pmesh -L, from the first line, its
    execve) and the lines between its first two getrusage calls."""
    with open(path, errors="replace") as f:
        lines = f.read().splitlines()
    lower = bool(lines) and '"-L"' in lines[0]
    marks = [i for i, line in enumerate(lines) if "getrusage(" in line]
    if len(marks) < 2:
        return lower, []
    return lower, lines[marks[0] + 1:marks[1]]


def count(spans):
    calls, cmds = collections.Counter(), collections.Counter()
    for lines in spans:
        for line in lines:
            m = CALL.match(line)
            if not m:
                continue
            name, args = m.groups()
            fd = FD.match(args)
            key = name
            if fd:
                key += " " + re.sub(r"\d+", "N", fd.group(2))
            calls[key] += 1
            w = UCMA_WRITE.match(line.split(None, 1)[1])
            if w:
                n = first_word(w.group(1))
                cmds[UCMA_CMDS[n] if n < len(UCMA_CMDS) else str(n)] += 1
    return calls, cmds


def table(title, a, b):
    print("%s: p2p-lower p2p lower" % title)
    for k in sorted(set(a) | set(b), key=lambda k: (-abs(a[k] - b[k]), k)):
        print("%8d %6d %6d  %s" % (a[k] - b[k], a[k], b[k], k))


def main(args):
    if len(args) != 1:
        sys.exit("usage: mesh_strace.py DIR")
    schemes = {"p2p": [], "lower": []}
    for path in sorted(glob.glob(args[0] + "/st.*")):
        lower, lines = read_rank(path)
        schemes["lower" if lower else "p2p"].append(lines)
    (pc, pu), (lc, lu) = count(schemes["p2p"]), count(schemes["lower"])
    print("mesh-strace p2p ranks=%d calls=%d lower ranks=%d calls=%d" %
          (len(schemes["p2p"]), sum(pc.values()), len(schemes["lower"]),
           sum(lc.values())))
    table("system calls", pc, lc)
    table("rdma_cm commands", pu, lu)


if __name__ == "__main__":
    main(sys.argv[1:])
