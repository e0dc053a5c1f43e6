#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
"""Step medians of traced meshes (tests/bench/run.sh mesh-trace).

Reads the output of mesh-guest.sh with MESH_TRACE=1: blocks that start
with "=== SCHEME rep I n N", each followed by p2pmesh -T lines
"T rank R STEP peer P at MS".  For each pair (i < j) the lower rank i
is the end whose request forms the connection in both schemes.  Ranks
alternate between the guest's two addresses (even, odd), so a pair of
the same parity shares one address.

When the block also has the kernel's rdma_cma cm_event_handler lines
(after "--- kernel", on the same clock), each lower end's ADDR_RESOLVED
is split into the kernel's part (call to the kernel reporting it) and
the delivery (the kernel reporting it to the application reading it).
"""
import re
import statistics
import sys
from collections import defaultdict


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


def main():
    found = defaultdict(lambda: defaultdict(list))
    for scheme, steps, base, kernel in blocks(sys.argv[1]):
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


if __name__ == '__main__':
    main()
