# SPDX-License-Identifier: MIT
"""The replay's report: predicted against measured, program by program,
then the explanations, notes and failures."""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class Throughput:
    """tlb_flush2's 2T/1T throughput ratio, measured run by run (lo-hi),
    and modelled: (ns per operation alone, with 2 threads, the ratio) on
    the machine profile @profile."""
    lo: float
    hi: float
    model: tuple[float, float, float] | None
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
                 '--cpus 2 --nodes 1 --vm --threads 1|2 --policy linux%s)'
                 % (m[2], m[0] / 1000, m[1] / 1000,
                    ' --cost-file DATA/' + PROFILE if tput.profile else ', no machine profile'),
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
