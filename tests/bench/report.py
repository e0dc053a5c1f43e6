#!/usr/bin/env python3
# Turns tests/bench results ("<library> <metric> <value> <unit>" lines) into
# the ratio table (ours / Debian's) and a PNG plot (gnuplot).
#
# usage: report.py RESULTS [--markdown FILE] [--plot FILE.png]
#
# Metrics: steps.n<N>.<step> (microseconds per connection),
# writes.n<N>.<step|total> (rdma_cm write calls per connection, both
# ends), instr.per_conn (librdmacm's own instructions per connection),
# memory.<what> (heap bytes per id), conn.n<N>.<heap|rss|fds>_per_conn (what
# the process grew by per established connection), and whatever the
# guest.d hooks emit;
# those without a known target are listed with their ratio only.
import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import OrderedDict

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
    ("8-process full mesh: peer2peer_mode / connect-higher-accept-lower",
     "p2p.mesh8_p2p_ms", "p2p.mesh8_lower_ms", ("<=", 1.0)),
]


def target_of(metric):
    for pat, op, t in TARGETS:
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


def ratio(d):
    if "ours" in d and "debian" in d and d["debian"]:
        return d["ours"] / d["debian"]
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


# Per-connection figures whose growth with the connection count is shown.
GROWTH = [("setup time (total of the steps)", "steps.n%d.total"),
          ("heap", "conn.n%d.heap_per_conn"),
          ("resident memory", "conn.n%d.rss_per_conn"),
          ("open fds", "conn.n%d.fds_per_conn")]


def growth(data, ns):
    """Per-connection value at the largest count over the one before it."""
    if len(ns) < 2:
        return []
    a, b = ns[-2], ns[-1]
    out = ["Growth from %d to %d connections: the per-connection value at "
           "%d over the one at %d (flat = 1.00)\n" % (a, b, b, a),
           "| figure | ours | Debian |", "|---|---|---|"]
    for what, pattern in GROWTH:
        da, db = data.get(pattern % a, {}), data.get(pattern % b, {})
        cells = []
        for lib in ("ours", "debian"):
            va, vb = da.get(lib), db.get(lib)
            cells.append(fmt(vb / va) if va and vb is not None else "—")
        out.append("| %s | %s |" % (what, " | ".join(cells)))
    out.append("")
    return out


def tables(data, units):
    ns = sorted({int(m.split(".")[1][1:]) for m in data
                 if re.match(r"^steps\.n\d+\.", m)})
    out = []
    if ns:
        out.append("Connection setup, µs per connection: ours / Debian "
                   "(ratio; target ≤ 1.0 ✓/✗)\n")
        out.append("| step | " + " | ".join("%d conn." % n for n in ns) +
                   " |")
        out.append("|---" * (len(ns) + 1) + "|")
        for step in STEPS:
            cells = []
            for n in ns:
                d = data.get("steps.n%d.%s" % (n, step), {})
                r = ratio(d)
                mark = "" if r is None else (" ✓" if r <= 1.0 else " ✗")
                cells.append("%s / %s (**%s**%s)" % (
                    fmt(d.get("ours")), fmt(d.get("debian")), fmt(r), mark))
            out.append("| %s | %s |" % (step, " | ".join(cells)))
        out.append("")
        out.extend(growth(data, ns))
    compared = {m for c in COMPARISONS for m in c[1:3]}
    rows = [m for m in data if not m.startswith("steps.") and
            not (m.startswith("writes.") and not m.endswith(".total")) and
            not (m in compared and "debian" not in data[m])]
    if rows:
        out.append("| metric | unit | ours | Debian | ratio | target |")
        out.append("|---|---|---|---|---|---|")
        for m in rows:
            d = data[m]
            r = ratio(d)
            out.append("| %s | %s | %s | %s | %s | %s |" % (
                m, units.get(m, ""), fmt(d.get("ours")),
                fmt(d.get("debian")), fmt(r), verdict(m, r)))
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
                   "by step (ours / Debian): " + ", ".join(
                       "%s %s/%s" % (m.split(".", 1)[1],
                                     fmt(data[m].get("ours")),
                                     fmt(data[m].get("debian")))
                       for m in per_step))
        out.append("")
    return "\n".join(out)


def plot(data, png):
    ns = sorted({int(m.split(".")[1][1:]) for m in data
                 if re.match(r"^steps\.n\d+\.", m)})
    others = [m for m in data if not m.startswith("steps.") and
              (not m.startswith("writes.") or m.endswith(".total")) and
              ratio(data[m]) is not None]
    with tempfile.TemporaryDirectory() as tmp:
        steps_dat = os.path.join(tmp, "steps.dat")
        with open(steps_dat, "w") as f:
            for step in STEPS:
                vals = [ratio(data.get("steps.n%d.%s" % (n, step), {}))
                        for n in ns]
                f.write("%s %s\n" % (step.replace("_", "\\\\_"), " ".join(
                    "%.4f" % v if v is not None else "NaN" for v in vals)))
        other_dat = os.path.join(tmp, "other.dat")
        with open(other_dat, "w") as f:
            for m in others:
                f.write("%s %.4f\n" % (m.replace("_", "\\\\_"),
                                       ratio(data[m])))
            for _, ma, mb, _ in COMPARISONS:
                a = data.get(ma, {}).get("ours")
                b = data.get(mb, {}).get("ours")
                if a is not None and b:
                    f.write("%s/%s %.4f\n" % (
                        ma.replace("_", "\\\\_"),
                        mb.split(".")[-1].replace("_", "\\\\_"), a / b))
        cols = " , ".join(
            "'' using %d title '%d conn.'" % (i + 2, n) if i else
            "'%s' using 2:xtic(1) title '%d conn.'" % (steps_dat, n)
            for i, n in enumerate(ns))
        script = """
set terminal png size 1400,900
set output '%s'
set multiplot layout 2,1 title 'librdmacm fork / Debian librdmacm (lower is better; 1.0 = equal)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set yrange [0:*]
set key top left
set ylabel 'time ratio'
set title 'connection setup, per step'
plot %s, 1.0 with lines lc rgb 'black' dt 2 notitle
set title 'round trips, instructions, memory, rsocket; ACM and p2p: ways compared'
set ylabel 'ratio'
set xtics rotate by -20
set rmargin 14
unset key
""" % (png, cols)
        if others:
            script += ("plot '%s' using 2:xtic(1) lc rgb '#4472c4', "
                       "1.0 with lines lc rgb 'black' dt 2, "
                       "0.7 with lines lc rgb 'red' dt 3\n" % other_dat)
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


if __name__ == "__main__":
    main()
