# SPDX-License-Identifier: MIT
"""The data directory: measured.txt (one line per program, tab-separated
key=value), the traces and raw recordings beside it, expected-out.txt
(the rows allowed out of bounds); and the small formats of its values."""

from __future__ import annotations

import lzma
import os
import shutil
from collections.abc import Sequence

from .config import DATA
from .programs import programs

Row = dict[str, str]


def write_row(row: Row) -> str:
    return '\t'.join('%s=%s' % (k, str(v).replace('\t', ' ')) for k, v in row.items())


def read_rows(path: str) -> list[Row]:
    rows = []
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if not line or line.startswith('#'):
                continue
            row = {}
            for field in line.split('\t'):
                k, _, v = field.partition('=')
                row[k] = v
            rows.append(row)
    return rows


HEADER = """\
# lab/validate/data/measured.txt: the kernel's TLB shootdowns, measured by
# lab/validate/run.sh --update; one line per program, tab-separated key=value.
# perf record -a runs beside the program (started 1 s before it, stopped after).
#   runs, measured_min, measured_max
#               the "TLB" row of /proc/interrupts (shootdown IPIs received, summed
#               over CPUs), delta across each of 3 runs without strace
#   own         in the same runs: csd:csd_queue_cpu events
#               with func flush_tlb_func in the program's process tree, i.e. the
#               TLB row increments its own tasks caused (exit-time flushes included)
#   calls       tlb:tlb_flush reason TLB_REMOTE_SEND_IPI in its tasks: one per
#               flush_tlb_multi() call, IPI or not (a lazy CPU is skipped)
#   own_others  the csd events of every other task in the same window
#   baseline    the TLB row over an idle window of the same length after each run
#   cpu_s       the program's CPU time (user + system, it and its children) per run
#   others_cpu  CPU used by other processes during each run, of all CPUs; a run
#               where it exceeded 25% was done again (retries)
#   attrib_*    perf record -a -g, one more run: own IPIs (attrib_own) and flush
#               calls (attrib_calls) by call chain; attrib_others_* other tasks'
#   plain_*     tlb_flush2 only: 3 more runs without perf, for its throughput
#   events      events in the trace (strace2trace.py -n 50000); trace_command its
#               recording; tlb_flush2 records a short run (trace_ops operations)
"""


def write_rows(path: str, rows: list[Row]) -> None:
    """measured.txt: its header, then @rows."""
    with open(path, 'w') as f:
        f.write(HEADER)
        for r in rows:
            f.write(write_row(r) + '\n')


def write_data(out_dir: str, rows: list[tuple[Row, str, str]], merge: bool = False) -> None:
    """@rows, (row, raw recording, trace) each, into @out_dir: the traces,
    the recordings compressed into raw/, measured.txt in the programs'
    order; with @merge, the rows of other programs already there kept."""
    os.makedirs(os.path.join(out_dir, 'raw'), exist_ok=True)
    path = os.path.join(out_dir, 'measured.txt')
    old = read_rows(path) if merge and os.path.exists(path) else []
    new_names = {r['program'] for r, _, _ in rows}
    keep = [r for r in old if r['program'] not in new_names]
    for row, raw, trace in rows:
        dst = os.path.join(out_dir, row['trace'])
        if os.path.abspath(trace) != os.path.abspath(dst):
            shutil.copyfile(trace, dst)
        with open(raw, 'rb') as f, lzma.open(os.path.join(out_dir, 'raw', row['program'] +
                                                          '.strace.xz'), 'wb',
                                             preset=9) as g:
            shutil.copyfileobj(f, g)
    allrows = keep + [r for r, _, _ in rows]
    order = [p.name for p in programs('/')]
    allrows.sort(key=lambda r: order.index(r['program']) if r['program'] in order else 99)
    write_rows(path, allrows)


def read_expected_out(data_dir: str) -> dict[str, str]:
    """expected-out.txt of @data_dir (else of data/): name -> why."""
    path = os.path.join(data_dir, 'expected-out.txt')
    out: dict[str, str] = {}
    if not os.path.exists(path):
        path = os.path.join(DATA, 'expected-out.txt')
        if not os.path.exists(path):
            return out
    with open(path) as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if line:
                name, _, why = line.partition(' ')
                out[name] = why.strip()
    return out


def rng(vals: Sequence[int | None]) -> tuple[int, int] | tuple[None, None]:
    """(min, max) of the values that are not None, or (None, None)."""
    got = [v for v in vals if v is not None]
    return (min(got), max(got)) if got else (None, None)


def csv_list(vals: Sequence[object], fmt: str = '%s') -> str:
    return ','.join('na' if v is None else fmt % v for v in vals)


def ints(s: str) -> list[int]:
    return [int(x) for x in s.split(',') if x not in ('', 'na')]


def floats(s: str) -> list[float]:
    return [float(x) for x in s.split(',') if x not in ('', 'na')]


def rangestr(lo: int | None, hi: int | None, fmt: str = '%d') -> str:
    if lo is None:
        return 'na'
    return (fmt % lo) if lo == hi else ((fmt + '-' + fmt) % (lo, hi))
