#!/usr/bin/env python3
# Turns tests/bench results ("<library> <metric> <value> <unit>" lines) into
# the ratio table (ours / Debian's) and a PNG plot (gnuplot).
#
# usage: report.py RESULTS [--markdown FILE] [--plot FILE.png]
#        report.py cg-self|path|trace|profile|callgrind|strace ARGS...
#
# The second form runs one of the analyses of run.sh's modes (each below,
# with its own usage): the bench's one report script.
#
# Metrics: steps.n<N>.<step> (microseconds per connection),
# writes.n<N>.<step|total> (rdma_cm write calls per connection, both
# ends), instr.per_conn (librdmacm's own instructions per connection),
# memory.<what> (heap bytes per id), conn.n<N>.<heap|rss|fds>_per_conn (what
# the process grew by per established connection), and whatever the
# guest.d hooks emit;
# those without a known target are listed with their ratio only.
import argparse
import collections
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections import OrderedDict, defaultdict

STEPS = ["create_id", "resolve_addr", "resolve_route", "create_qp",
         "connect", "disconnect", "destroy", "total"]

# Targets for the ratio ours/Debian, by metric pattern: (pattern, "<=" or
# ">=", bound).
TARGETS = [
    (r"^steps\.", "<=", 1.0),
    (r"^writes\.n\d+\.total$", "<=", 0.7),
    (r"^instr\.per_conn$", "<=", 0.7),
    (r"^memory\.", "<=", 1.0),
    (r"^conn\.", "<=", 1.0),
    (r"^rsocket\.throughput$", ">=", 1.2),
    (r"^rsocket\.latency", "<=", 0.8),
    (r"^rsocket\.fds_", "<=", 1.0),
]

# Targets for the ratio ours/limit, where a metric has a limit (library
# "raw": what raw verbs do on the same device for rsockets; for setup,
# cm_bench's limit steps on the kernel's commands alone).
LIMIT_TARGETS = [
    (r"^rsocket\.throughput$", ">=", 0.95),
    (r"^rsocket\.latency", "<=", 1.2),
]

# Two ways of doing one thing, both on our library: (what, metric A,
# metric B, target for A / B as (op, bound) or None).
COMPARISONS = [
    ("ACM: cached address + route / kernel path", "acm.cached_us",
     "acm.kernel_us", ("<=", 0.02)),
    ("ACM: table, no cache / kernel path", "acm.table_us", "acm.kernel_us",
     None),
    ("ACM: id resolution with ACM's path / kernel path", "acm.acm_id_us",
     "acm.kernel_us", None),
    ("rsockets without the send copy: registering 64 KiB per call / "
     "copying it", "rsocket.reg_64K_us", "rsocket.copy_64K_us", None),
    ("8-process full mesh: peer2peer_mode / connect-higher-accept-lower",
     "p2p.mesh8_p2p_ms", "p2p.mesh8_lower_ms", ("<=", 1.0)),
]


def target_of(metric, targets=TARGETS):
    for pat, op, t in targets:
        if re.search(pat, metric):
            return op, t
    return None


def meets(r, target):
    op, t = target
    return r <= t if op == "<=" else r >= t


def show_target(r, target):
    if target is None or r is None:
        return ""
    return "%s %s %s" % (target[0].replace("<=", "≤").replace(">=", "≥"),
                         fmt(target[1]), "✓" if meets(r, target) else "✗")


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def load(path):
    """Metric -> library -> value; repeated measurements give their median."""
    data = OrderedDict()
    units = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 3 or parts[0].startswith("#"):
                continue
            lib, metric, value = parts[0], parts[1], float(parts[2])
            units[metric] = parts[3] if len(parts) > 3 else ""
            data.setdefault(metric, {}).setdefault(lib, []).append(value)
    for d in data.values():
        for lib in d:
            d[lib] = median(d[lib])
    return data, units


def ratio(d, to="debian"):
    if "ours" in d and to in d and d[to]:
        return d["ours"] / d[to]
    return None


def fmt(v):
    if v is None:
        return "—"
    if abs(v) >= 100:
        return "%.0f" % v
    if abs(v) >= 10:
        return "%.1f" % v
    return "%.2f" % v


def verdict(metric, r):
    return show_target(r, target_of(metric))


def comparisons(data, units):
    """(what, a, b, ratio, target) for the comparisons measured."""
    rows = []
    for what, ma, mb, target in COMPARISONS:
        a = data.get(ma, {}).get("ours")
        b = data.get(mb, {}).get("ours")
        if a is None or b is None:
            continue
        rows.append((what, "%s %s" % (fmt(a), units.get(ma, "")),
                     "%s %s" % (fmt(b), units.get(mb, "")),
                     a / b if b else None, target))
    return rows


# Per-connection figures whose growth with the connection count is shown,
# with their units.
GROWTH = [("setup time (total of the steps)", "steps.n%d.total", "µs"),
          ("heap", "conn.n%d.heap_per_conn", "bytes"),
          ("resident memory", "conn.n%d.rss_per_conn", "bytes"),
          ("open fds", "conn.n%d.fds_per_conn", "fds")]


def growth(data, ns):
    """Per-connection value at the largest count over the one before it,
    and the slope: its change per 1,000 more connections."""
    if len(ns) < 2:
        return []
    a, b = ns[-2], ns[-1]
    out = ["Growth from %d to %d connections: the per-connection value at "
           "%d over the one at %d (flat = 1.00), and in brackets the slope, "
           "its change per 1,000 more connections\n" % (a, b, b, a),
           "| figure | ours | Debian | limit |", "|---|---|---|---|"]
    for what, pattern, unit in GROWTH:
        da, db = data.get(pattern % a, {}), data.get(pattern % b, {})
        cells = []
        for lib in ("ours", "debian", "raw"):
            va, vb = da.get(lib), db.get(lib)
            if not va or vb is None:
                cells.append("—")
                continue
            cells.append("%s (%+.3g %s)" % (fmt(vb / va),
                                            (vb - va) * 1000.0 / (b - a),
                                            unit))
        out.append("| %s | %s |" % (what, " | ".join(cells)))
    out.append("")
    return out


def setup_tables(data, ns):
    """One table per connection count: ours, Debian's, the limit."""
    out = ["Connection setup, µs per connection: ours, Debian's, and the "
           "limit (cm_bench limit: the same steps on the kernel's commands "
           "alone, no library), with ours / Debian (target ≤ 1.0) and "
           "ours / limit\n"]
    for n in ns:
        out.append("%d connection%s:\n" % (n, "" if n == 1 else "s"))
        out.append("| step | ours | Debian | limit | ours / Debian | "
                   "ours / limit |")
        out.append("|---|---|---|---|---|---|")
        for step in STEPS:
            d = data.get("steps.n%d.%s" % (n, step), {})
            r = ratio(d)
            mark = "" if r is None else (" ✓" if r <= 1.0 else " ✗")
            out.append("| %s | %s | %s | %s | **%s**%s | %s |" % (
                step, fmt(d.get("ours")), fmt(d.get("debian")),
                fmt(d.get("raw")), fmt(r), mark, fmt(ratio(d, "raw"))))
        out.append("")
    return out


def tables(data, units):
    ns = sorted({int(m.split(".")[1][1:]) for m in data
                 if re.match(r"^steps\.n\d+\.", m)})
    out = []
    if ns:
        out.extend(setup_tables(data, ns))
        out.extend(growth(data, ns))
    compared = {m for c in COMPARISONS for m in c[1:3]}
    rows = [m for m in data if not m.startswith("steps.") and
            not (m.startswith("writes.") and not m.endswith(".total")) and
            not (m in compared and "debian" not in data[m])]
    if rows:
        # ratios to both Debian's and the limit, where one exists
        out.append("| metric | unit | ours | Debian | limit | ours / Debian "
                   "| target | ours / limit | target |")
        out.append("|---|---|---|---|---|---|---|---|---|")
        for m in rows:
            d = data[m]
            r, lr = ratio(d), ratio(d, "raw")
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                m, units.get(m, ""), fmt(d.get("ours")),
                fmt(d.get("debian")), fmt(d.get("raw")), fmt(r),
                verdict(m, r), fmt(lr),
                show_target(lr, target_of(m, LIMIT_TARGETS))))
        out.append("")
    cmp_rows = comparisons(data, units)
    if cmp_rows:
        out.append("Our library, one way against another (A / B):\n")
        out.append("| comparison | A | B | A / B | target |")
        out.append("|---|---|---|---|---|")
        for what, a, b, r, target in cmp_rows:
            out.append("| %s | %s | %s | %s | %s |" % (
                what, a, b, fmt(r), show_target(r, target)))
        out.append("")
    per_step = [m for m in data if m.startswith("writes.") and
                not m.endswith(".total")]
    if per_step:
        out.append("rdma_cm writes per connection, both ends, "
                   "by step (ours / Debian / limit): " + ", ".join(
                       "%s %s/%s/%s" % (m.split(".", 1)[1],
                                        fmt(data[m].get("ours")),
                                        fmt(data[m].get("debian")),
                                        fmt(data[m].get("raw")))
                       for m in per_step))
        out.append("")
    return "\n".join(out)


def higher_is_better(metric):
    target = target_of(metric) or target_of(metric, LIMIT_TARGETS)
    return target is not None and target[0] == ">="


def gp_label(text):
    return text.replace("_", "\\\\_")


def plot(data, png):
    """Three panels, each read one way: setup steps (ours / Debian, lower
    is better), the other figures where lower is better, and those where
    higher is better; the last two show ours / Debian and ours / limit."""
    ns = sorted({int(m.split(".")[1][1:]) for m in data
                 if re.match(r"^steps\.n\d+\.", m)})
    others = [m for m in data if not m.startswith("steps.") and
              (not m.startswith("writes.") or m.endswith(".total")) and
              ratio(data[m]) is not None]
    lower = [m for m in others if not higher_is_better(m)]
    higher = [m for m in others if higher_is_better(m)]

    def write_ratios(path, metrics, extra=()):
        with open(path, "w") as f:
            for m in metrics:
                lr = ratio(data[m], "raw")
                f.write("%s %.4f %s\n" % (gp_label(m), ratio(data[m]),
                                           "%.4f" % lr if lr else "NaN"))
            for label, value in extra:
                f.write("%s %.4f NaN\n" % (gp_label(label), value))

    ways = []
    for _, ma, mb, _ in COMPARISONS:
        a = data.get(ma, {}).get("ours")
        b = data.get(mb, {}).get("ours")
        if a is not None and b:
            ways.append(("%s/%s" % (ma, mb.split(".")[-1]), a / b))
    with tempfile.TemporaryDirectory() as tmp:
        steps_dat = os.path.join(tmp, "steps.dat")
        with open(steps_dat, "w") as f:
            for step in STEPS:
                vals = [ratio(data.get("steps.n%d.%s" % (n, step), {}))
                        for n in ns]
                f.write("%s %s\n" % (gp_label(step), " ".join(
                    "%.4f" % v if v is not None else "NaN" for v in vals)))
        lower_dat = os.path.join(tmp, "lower.dat")
        higher_dat = os.path.join(tmp, "higher.dat")
        write_ratios(lower_dat, lower, ways)
        write_ratios(higher_dat, higher)
        panels = [p for p in (ns, lower or ways, higher) if p]
        cols = " , ".join(
            "'' using %d title '%d conn.'" % (i + 2, n) if i else
            "'%s' using 2:xtic(1) title '%d conn.'" % (steps_dat, n)
            for i, n in enumerate(ns))
        pair = ("using 2:xtic(1) title 'ours / Debian' lc rgb '#4472c4', "
                "'' using 3 title 'ours / limit' lc rgb '#ed7d31', "
                "1.0 with lines lc rgb 'black' dt 2 notitle")
        script = """
set terminal png size 1400,%d
set output '%s'
set multiplot layout %d,1 title 'librdmacm fork: ratios to Debian librdmacm and to the limit (1.0 = equal)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set yrange [0:*]
set key top left opaque
set offsets 0, 0, graph 0.1, 0
set bmargin 9
set lmargin 14
set xtics rotate by 25 right
""" % (450 * len(panels), png, len(panels))
        if ns:
            script += ("set title 'connection setup, per step: ours / "
                       "Debian (lower is better)'\nset ylabel 'time "
                       "ratio'\nplot %s, 1.0 with lines lc rgb 'black' "
                       "dt 2 notitle\n" % cols)
        if lower or ways:
            script += ("set title 'lower is better: round trips, "
                       "instructions, memory, latency; ACM and p2p ways "
                       "compared'\nset ylabel 'ratio'\nplot '%s' %s\n"
                       % (lower_dat, pair))
        if higher:
            script += ("set title 'higher is better: throughput'\n"
                       "set ylabel 'ratio'\nplot '%s' %s\n"
                       % (higher_dat, pair))
        script += "unset multiplot\n"
        subprocess.run(["gnuplot"], input=script.encode(), check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--markdown")
    ap.add_argument("--plot")
    a = ap.parse_args()
    data, units = load(a.results)
    if not data:
        sys.exit("report: no results in %s" % a.results)
    text = tables(data, units)
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text + "\n")
    if a.plot:
        try:
            plot(data, a.plot)
        except (OSError, subprocess.CalledProcessError) as e:
            print("report: no plot: %s" % e, file=sys.stderr)


# --- analyses of the mesh benchmark's runs (run.sh modes) ----------


# == report.py cg-self ==
# Instructions (Ir) attributed to one library in a callgrind output file.
#
# usage: report.py cg-self [--calls-into] CALLGRIND_OUT PATTERN
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


def cg_self_main(args):
    calls_into = args and args[0] == "--calls-into"
    if calls_into:
        args = args[1:]
    if len(args) != 2:
        sys.exit("usage: report.py cg-self [--calls-into] CALLGRIND_OUT PATTERN")
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


# == report.py path ==
# The rsocket path's own work per message (tests/bench/run.sh path).
#
# usage: report.py path CALLGRIND_OUT
#
# Reads a callgrind file of the unit tests' ping-pong over the fake
# device (rsocket_stream_test.c, rs_ping_pong's span): every rsend is one
# 64-byte message and its peer's rrecv.  What rsend and rrecv run,
# inclusive, less the fake device's entry points (the provider's part on a
# real device), is the library's and the libc it calls (locks, copies);
# the functions of src/ are listed by their own cost.

FAKE_OPS = re.compile(r"^fake_(post_send|post_recv|poll_cq|req_notify_cq)$")


def annotate(path, *opts):
    """PROGRAM TOTALS and (file, function, cost) of callgrind_annotate's
    listing."""
    text = subprocess.run(
        ["callgrind_annotate", "--threshold=100", "--auto=no", *opts, path],
        capture_output=True, text=True, check=True).stdout
    total, rows, listing = 0, [], False
    for line in text.splitlines():
        m = COST.match(line)
        if not m:
            listing = listing or "file:function" in line
            continue
        cost = int(m.group(1).replace(",", ""))
        where = re.sub(r"\s*\[.*\]$", "", m.group(2))
        if where.startswith("PROGRAM TOTALS"):
            total = cost
        elif listing and ":" in where:
            file, func = where.rsplit(":", 1)
            rows.append((file, func, cost))
    return total, rows


def calls_to(path, func):
    """How many calls the callgrind file records into FUNC."""
    names, callee, n = {}, None, 0
    with open(path, errors="replace") as f:
        for line in f:
            # fn= and cfn= share one table of compressed names.
            m = re.match(r"^(c?)fn=\((\d+)\)\s*(.*)$", line.rstrip("\n"))
            if m:
                if m.group(3):
                    names[m.group(2)] = m.group(3)
                if m.group(1):
                    callee = names.get(m.group(2))
            elif line.startswith("calls=") and callee == func:
                n += int(line.split()[0][6:])
    return n


def path_main(args):
    if len(args) != 1:
        sys.exit("usage: report.py path CALLGRIND_OUT")
    path = args[0]
    msgs = calls_to(path, "rsend")
    if not msgs:
        sys.exit("report.py path: no rsend in " + path)
    incl = collections.Counter()
    # The same function appears under two file spellings: one is enough.
    for _, func, cost in annotate(path, "--inclusive=yes")[1]:
        incl[func] = max(incl[func], cost)
    device = sum(c for f, c in incl.items() if FAKE_OPS.match(f))
    total = incl["rsend"] + incl["rrecv"] - device
    own = collections.Counter()
    for file, func, cost in annotate(path, "--inclusive=no")[1]:
        if re.search(r"(^|/)src/", file):
            own[func] += cost
    lib = sum(own.values())
    print(f"# {msgs} messages of 64 bytes, each an rsend and its peer's "
          "rrecv, over the fake device (callgrind)")
    print(f"path.per_msg {total / msgs:.0f} instructions "
          "(the library and the libc it calls; the device left out)")
    print(f"path.library {lib / msgs:.0f} instructions (src/ alone)")
    print(f"path.libc {(total - lib) / msgs:.0f} instructions "
          "(locks, copies, errno)")
    print("# src/ functions by their own instructions per message:")
    for func, cost in own.most_common():
        if cost / msgs >= 1:
            print(f"#   {cost / msgs:6.1f}  {func}")


# == report.py trace ==
# Step medians of traced meshes (tests/bench/run.sh mesh-trace).
#
# Reads the output of mesh-guest.sh with MESH_TRACE=1: blocks that start
# with "=== SCHEME rep I n N", each followed by p2pmesh -T lines
# "T rank R STEP peer P at MS".  For each pair (i < j) the lower rank i
# is the end whose request forms the connection in both schemes.  Ranks
# alternate between the guest's two addresses (even, odd), so a pair of
# the same parity shares one address.
#
# When the block also has the kernel's rdma_cma cm_event_handler lines
# (after "--- kernel", on the same clock), each lower end's ADDR_RESOLVED
# is split into the kernel's part (call to the kernel reporting it) and
# the delivery (the kernel reporting it to the application reading it).


KERNEL = re.compile(r'\s([\d.]+): cm_event_handler: cm\.id=(\d+) '
                    r'src=([\d.:a-f\[\]]+):\d+ dst=([\d.:a-f\[\]]+):(\d+) '
                    r'tos=\d+ (\w+)')


def blocks(path):
    """[(scheme, {(rank, step, peer): ms}, base port, [kernel events])]."""
    found = []
    with open(path) as f:
        for line in f:
            m = re.match(r'=== (\S+) rep (\d+) n (\d+)(?: port (\d+))?',
                         line)
            if m:
                found.append((m.group(1), {}, int(m.group(4) or 0), []))
                continue
            m = re.match(r'T rank (\d+) (\S+) peer (-?\d+) at (\d+)', line)
            if found and m:
                key = (int(m.group(1)), m.group(2), int(m.group(3)))
                found[-1][1].setdefault(key, int(m.group(4)))
                continue
            m = KERNEL.search(line)
            if found and m:
                found[-1][3].append((float(m.group(1)) * 1000, m.group(2),
                                     m.group(3), m.group(4),
                                     int(m.group(5)), m.group(6)))
    return found


def kernel_split(steps, base, kernel):
    """(name, ms): each lower end's ADDR_RESOLVED, kernel and delivery."""
    # The address of each parity, from where requests went.
    addr = {}
    for _, _, _, dst, port, _ in kernel:
        addr.setdefault((port - base) % 2, dst)
    used = set()
    for i, j in pairs(steps):
        call = steps.get((i, 'resolve_addr', j))
        read = steps.get((i, 'RDMA_CM_EVENT_ADDR_RESOLVED', j))
        if call is None or read is None or i % 2 not in addr:
            continue
        seen = [k for k in kernel if k[5] == 'ADDR_RESOLVED' and
                k[2] == addr[i % 2] and k[4] == base + j and
                call - 1 <= k[0] <= read + 1 and k[1] not in used]
        if not seen:
            continue
        used.add(seen[-1][1])
        where = 'same address' if i % 2 == j % 2 else 'two addresses'
        yield 'address: kernel, ' + where, seen[-1][0] - call
        yield 'address: delivery, ' + where, read - seen[-1][0]


def pairs(steps):
    ranks = sorted({r for r, _, _ in steps})
    for i in ranks:
        for j in ranks:
            if i < j:
                yield i, j


def step_times(steps):
    """(name, milliseconds) for each lower end's steps and each pair."""
    ev = 'RDMA_CM_EVENT_'
    for i, j in pairs(steps):
        where = 'same address' if i % 2 == j % 2 else 'two addresses'
        t = {k: steps.get((i, k, j)) for k in (
            'resolve_addr', ev + 'ADDR_RESOLVED', 'resolve_route',
            ev + 'ROUTE_RESOLVED', 'connect', ev + 'ESTABLISHED')}
        est_hi = steps.get((j, ev + 'ESTABLISHED', i))
        if None not in (t['resolve_addr'], t[ev + 'ADDR_RESOLVED']):
            yield ('address resolved, ' + where,
                   t[ev + 'ADDR_RESOLVED'] - t['resolve_addr'])
        if None not in (t['resolve_route'], t[ev + 'ROUTE_RESOLVED']):
            yield ('route resolved', t[ev + 'ROUTE_RESOLVED'] -
                   t['resolve_route'])
        if None not in (t['connect'], t[ev + 'ESTABLISHED'], est_hi):
            yield ('connect to ESTABLISHED, lower end',
                   t[ev + 'ESTABLISHED'] - t['connect'])
            yield ('connect to ESTABLISHED, higher end',
                   est_hi - t['connect'])


def trace_main(args):
    if len(args) != 1:
        sys.exit("usage: report.py trace MESH_LOG")
    found = defaultdict(lambda: defaultdict(list))
    for scheme, steps, base, kernel in blocks(args[0]):
        for name, ms in step_times(steps):
            found[scheme][name].append(ms)
        for name, ms in kernel_split(steps, base, kernel):
            found[scheme][name].append(ms)
    for scheme in sorted(found):
        print(f'{scheme}:')
        for name, v in sorted(found[scheme].items()):
            v.sort()
            print(f'  {name:40s} n={len(v):4d} median={statistics.median(v):6.1f}'
                  f' p90={v[int(len(v) * 0.9)]:6.1f} ms')


# == report.py profile ==
# Where a mesh rank's CPU time goes, from perf samples (not a test).
#
#   perf script -F comm,pid,tid,time,ip,sym,dso | report.py profile window A,B
#       one rank: classifies its samples between A and B (CLOCK_MONOTONIC
#       seconds, the rank's first and last -T step) and prints
#       "profile <class> <count>" lines
#   report.py profile sum FILE
#       the guest's output (tests/bench/mesh-guest.sh with MESH_PROFILE=1):
#       per scheme, the samples of every class summed over ranks and runs,
#       the largest first, with the p2p - lower difference
#
# A sample's class says which thread (main, or svc: the library's service
# thread), kernel or user, and where: for the kernel, the system call,
# exception or interrupt it entered by (with the ucma / uverbs handler
# when there is one); for user space, the librdmacm function that was
# running or the library's file name.  Page faults also name the user
# function that touched the page.


KERNEL_ENTRIES = ('__x64_sys_', '__do_sys_', 'ksys_', 'asm_')


HANDLERS = ('ucma_', 'ib_uverbs_handler_', 'eventfd', 'do_epoll', 'do_poll',
            'rxe_')


def kernel_class(frames):
    """frames: (symbol, dso) pairs, innermost first."""
    outer = [s for s, d in reversed(frames) if 'kernel' in d]
    for i, sym in enumerate(outer):
        if sym.startswith(KERNEL_ENTRIES):
            name = sym
            inner = next((t for t in outer[i + 1:]
                          if t.startswith(HANDLERS) and t != 'ucma_write'),
                         None)
            if inner:
                name += ' > ' + inner
            if sym == 'asm_exc_page_fault':
                user = [s for s, d in frames if 'kernel' not in d]
                name += ' < ' + (user[0] if user else '?')
            return name
    return 'other ' + outer[0] if outer else None


def user_class(frames):
    for sym, dso in frames:
        if 'librdmacm' in dso:
            return 'librdmacm ' + sym
    if not frames:
        return '?'
    sym, dso = frames[0]
    dso = dso.rsplit('/', 1)[-1]
    # libc's functions by name: its system-call wrappers and allocator say
    # what the time went to, where the other libraries' names add little.
    return f'{dso} {sym}' if dso.startswith('libc.') else dso


def classify(lines, start, end):
    counts = collections.Counter()
    sample = None

    def close(s):
        if not s or not start <= s[0] <= end:
            return
        _, pid, tid, frames = s
        thread = 'main' if pid == tid else 'svc'
        k = kernel_class(frames)
        counts[f'{thread} K {k}' if k else
               f'{thread} U {user_class(frames)}'] += 1

    for line in lines:
        m = re.match(r'\s*\S+\s+(\d+)/(\d+)\s+([\d.]+):', line)
        if m:
            close(sample)
            sample = (float(m[3]), int(m[1]), int(m[2]), [])
            continue
        m = re.match(r'\s*[0-9a-f]+\s+(.*)\s+\((.*)\)\s*$', line)
        if m and sample:
            sample[3].append((re.sub(r'\+0x[0-9a-f]+$', '', m[1]), m[2]))
    close(sample)
    return counts


def summarise(path, top=40):
    per = collections.defaultdict(collections.Counter)
    for line in open(path, errors='replace'):
        m = re.match(r'profile (\S+) (.+) (\d+)$', line.strip())
        if m:
            per[m[1]][m[2]] += int(m[3])
    for scheme, counts in sorted(per.items()):
        print(f'== {scheme}: {sum(counts.values())} samples')
        for name, n in counts.most_common(top):
            print(f'{n:7} {name}')
    if 'p2p' in per and 'lower' in per:
        diff = per['p2p'].copy()
        diff.subtract(per['lower'])
        print('== p2p - lower, largest first')
        for name, n in sorted(diff.items(), key=lambda x: -abs(x[1]))[:top]:
            print(f'{n:+7} {name}')


def profile_main(args):
    if len(args) == 2 and args[0] == 'window':
        start, end = map(float, args[1].split(','))
        for name, n in classify(sys.stdin, start, end).items():
            print(f'profile {name} {n}')
    elif len(args) == 2 and args[0] == 'sum':
        summarise(args[1])
    else:
        sys.exit('usage: report.py profile window START,END < PERF_SCRIPT | sum MESH_LOG')


# == report.py callgrind ==
# Sums the callgrind files of tests/bench/run.sh mesh-callgrind per scheme
# (p2p, or lower for p2pmesh -L) over the ranks, and prints the totals,
# their ratio and the functions whose self cost differs most between the
# schemes.  With --callers FUNC: how often each caller called FUNC, per
# scheme over the ranks (who takes pthread_mutex_lock more often, say).
#
# usage: report.py callgrind DIR [TOP]
#        report.py callgrind DIR --callers FUNC [TOP]


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
    total, rows = annotate(path)
    costs = collections.Counter()
    for _, func, cost in rows:
        costs[func] += cost
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


def callgrind_main(args):
    if not args:
        sys.exit("usage: report.py callgrind DIR [TOP] | DIR --callers FUNC "
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


# == report.py strace ==
# Counts the system calls of tests/bench/run.sh mesh-strace per scheme (p2p,
# or lower for p2pmesh -L) over the ranks, within each rank's measured
# span (between its first two getrusage calls, around form_mesh): by call
# and the file behind its first descriptor, and the rdma_cm commands by
# name.  Prints both schemes and the difference, largest first.
#
# usage: report.py strace DIR


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


def strace_main(args):
    if len(args) != 1:
        sys.exit("usage: report.py strace DIR")
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


# The analyses, by the mode named first; without one, the results report.
ANALYSES = {
    "cg-self": cg_self_main,
    "path": path_main,
    "trace": trace_main,
    "profile": profile_main,
    "callgrind": callgrind_main,
    "strace": strace_main,
}

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ANALYSES:
        ANALYSES[sys.argv[1]](sys.argv[2:])
    else:
        main()
