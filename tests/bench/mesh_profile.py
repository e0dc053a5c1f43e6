#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
"""Where a mesh rank's CPU time goes, from perf samples (not a test).

  perf script -F comm,pid,tid,time,ip,sym,dso | mesh_profile.py window A,B
      one rank: classifies its samples between A and B (CLOCK_MONOTONIC
      seconds, the rank's first and last -T step) and prints
      "profile <class> <count>" lines
  mesh_profile.py sum FILE
      the guest's output (tests/bench/mesh-guest.sh with MESH_PROFILE=1):
      per scheme, the samples of every class summed over ranks and runs,
      the largest first, with the p2p - lower difference

A sample's class says which thread (main, or svc: the library's service
thread), kernel or user, and where: for the kernel, the system call,
exception or interrupt it entered by (with the ucma / uverbs handler
when there is one); for user space, the librdmacm function that was
running or the library's file name.  Page faults also name the user
function that touched the page.
"""
import collections
import re
import sys

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


def main():
    if len(sys.argv) == 3 and sys.argv[1] == 'window':
        start, end = map(float, sys.argv[2].split(','))
        for name, n in classify(sys.stdin, start, end).items():
            print(f'profile {name} {n}')
    elif len(sys.argv) == 3 and sys.argv[1] == 'sum':
        summarise(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main()
