# SPDX-License-Identifier: MIT
"""The replay's report: predicted against measured, program by program,
then the explanations, notes and failures."""

from __future__ import annotations

from dataclasses import dataclass, field

from .config import PROFILE
from .data import Row, ints, rangestr, rng


@dataclass
class Entry:
    """One program's replay."""
    name: str
    row: Row
    pred: int | None            # the linux policy's shootdowns
    viol: int | None            # violations under every policy
    modelled_ns: int | None
    ratio: float | None = None  # predicted / measured (median)
    why: str = ''
    ok: bool = False
    status: str = ''            # ok, expected-out or OUT
    causes: dict[str, int] = field(default_factory=dict)  # the model's, by cause


# The kernel's causes (perf.py CAUSES, by call chain) under the model's
# (tlbpol-sim's ipis_CAUSE): brk shrinking the heap and mmap over a mapping
# are unmaps; a copy-on-write break and any fault that changed a present
# PTE are faults; exec drops the old address space as exit does.
KERNEL_TO_MODEL = {
    'munmap': 'munmap', 'brk': 'munmap', 'mmap-fixed': 'munmap',
    'madvise': 'dontneed', 'mprotect': 'mprotect', 'mremap': 'mremap',
    'cow-fault': 'fault', 'fault': 'fault',
    'exit': 'exit', 'exec-old-mm': 'exit',
    'reclaim': 'reclaim',
}
# The model's causes in the order printed; the kernel's others under other.
MODEL_CAUSES = ('munmap', 'dontneed', 'mprotect', 'mremap', 'fault', 'exit', 'install',
                'reclaim', 'forward', 'other')


def kernel_causes(attrib: str) -> tuple[dict[str, int], dict[str, int]]:
    """attrib_own ("cow-fault:1140,exit:1") under the model's causes, and
    the kernel's causes that went to other (fork, khugepaged, ...)."""
    out: dict[str, int] = {}
    rest: dict[str, int] = {}
    for item in attrib.split(','):
        k, _, v = item.rpartition(':')
        if not k or not v.isdigit():
            continue
        m = KERNEL_TO_MODEL.get(k, 'other')
        out[m] = out.get(m, 0) + int(v)
        if m == 'other':
            rest[k] = rest.get(k, 0) + int(v)
    return out, rest


def causes_line(e: Entry) -> str:
    """One line: the model's interrupts by cause beside the kernel's
    (attrib_own: the perf record -a -g run's own IPIs by call chain), as
    model/kernel for each cause either has."""
    attrib = e.row.get('attrib_own')
    kern, rest = kernel_causes(attrib) if attrib else ({}, {})
    cells = []
    for c in MODEL_CAUSES:
        m, k = e.causes.get(c, 0), kern.get(c, 0)
        if m or k:
            cells.append('%s %d/%s' % (c, m, k if attrib else 'na'))
    return '  %s causes, model/kernel: %s%s%s' % (
        e.name, ', '.join(cells) or 'none',
        ' (kernel other: %s)' % ','.join('%s:%d' % kv for kv in sorted(rest.items()))
        if rest else '',
        '' if attrib else ' (no attribution run: kernel na)')


@dataclass(frozen=True)
class Throughput:
    """tlb_flush2's 2T/1T throughput ratio, measured run by run (lo-hi),
    and modelled: (ns per operation alone, with 2 threads, the ratio) on
    the machine profile @profile."""
    lo: float
    hi: float
    model: tuple[float, float, float, float | None] | None
    profile: str | None


def row_range(row: Row, key: str) -> str:
    """@row's values of @key as a range, or na."""
    return rangestr(*rng(ints(row[key]))) if row.get(key, 'na') != 'na' else 'na'


def print_report(table: list[Entry], tput: Throughput | None, expected: dict[str, str],
                 notes: list[str], failures: list[str]) -> None:
    fmt = '%-15s %-12s %-12s %-14s %-11s %6s %7s %6s  %s'
    print(fmt % ('program', 'TLB row', 'own IPIs', 'flush calls', 'baseline', 'events',
                 'linux', 'ratio', 'status'))
    for e in table:
        row = e.row
        print(fmt % (e.name, row_range(row, 'runs'), row_range(row, 'own'),
                     row_range(row, 'calls'), row_range(row, 'baseline'),
                     row.get('events', '?'), 'na' if e.pred is None else e.pred,
                     'na' if e.ratio is None else '%.2f' % e.ratio, e.status))
    for e in table:
        print(causes_line(e))
    for e in table:
        r = e.row
        if 'trace_ops' in r:
            print('  %s: ops/s %s under perf, %s without (TLB row per op %s)'
                  % (e.name, r['ops_per_s'], r.get('plain_ops_per_s', 'na'),
                     ','.join('%.4f' % (t / o) for t, o in zip(ints(r.get('plain_runs', '')),
                                                             ints(r.get('plain_ops', '')))
                              if o) or 'na'))
    if tput:
        m = tput.model
        print('  tlb_flush2 2T/1T throughput (run by run): measured %.2f-%.2f; model %s%s'
              % (tput.lo, tput.hi, 'na' if m is None else
                 '%.2f (%.1f us per operation alone, %.1f with 2 threads; tlbpol-sim dontneed '
                 '--cpus 2 --nodes 1 --vm --threads 1|2 --policy linux%s%s)'
                 % (m[2], m[0] / 1000, m[1] / 1000,
                    ' --cost-file DATA/' + PROFILE if tput.profile else ', no machine profile',
                    '' if m[3] is None else ' --cost fault_ns=%.0f: one thread alone as '
                    'the kernel\'s' % m[3]),
                 '' if 'tlb_flush2-throughput' not in expected else ' (expected-out: ' +
                 expected['tlb_flush2-throughput'] + ')'))
    for e in table:
        print('  %s: %s%s' % (e.name, e.why, ' [expected-out: %s]' % expected[e.name]
                              if e.status == 'expected-out' else ''))
    print('  violations under every policy: ' +
          ' '.join('%s=%s' % (e.name, e.viol) for e in table))
    for n in notes:
        print('  note: ' + n)
    for f in failures:
        print('FAIL: ' + f)
