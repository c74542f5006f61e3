# SPDX-License-Identifier: MIT
"""The data directory: measured.txt (one line per program, tab-separated
key=value), the traces and raw recordings beside it, expected-out.txt
(the rows allowed out of bounds); and the small formats of its values."""

from __future__ import annotations

import lzma
import os
import shutil
from collections.abc import Sequence

from typing import TYPE_CHECKING

from .config import DATA, MACHINES, PROFILE
from .machine import machine_id
from .programs import programs

if TYPE_CHECKING:
    from .measuring import Recording

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
#   faults      the page faults perf recorded beside strace (exceptions:
#               page_fault_user/kernel, as lab/trace/record-faults.sh): the trace
#               is version 3 with them (--thin-faults); faults_raw: where they are
#               kept (raw/PROGRAM.faults.xz), or why not
#   machine     the machine measured (the same in every line of one file; an
#               earlier machine's set is kept in machines/ID/)
"""


def set_machine(rows: list[Row]) -> str | None:
    """The machine a set's rows were measured on (their machine= field;
    rows from before it had one: the id of their kernel, CPU and count)."""
    for r in rows:
        if r.get('machine'):
            return r['machine']
    for r in rows:
        if r.get('kernel'):
            return machine_id(r)
    return None


def write_rows(path: str, rows: list[Row]) -> None:
    """measured.txt: its header (naming the machine), then @rows."""
    with open(path, 'w') as f:
        f.write(HEADER)
        f.write('# machine: %s\n' % (set_machine(rows) or '?'))
        for r in rows:
            f.write(write_row(r) + '\n')


def machine_sets(data_dir: str) -> list[str]:
    """The data directories of @data_dir: itself (the machine measured
    last), then each earlier machine's set kept under machines/."""
    sets = [data_dir]
    d = os.path.join(data_dir, MACHINES)
    if os.path.isdir(d):
        sets += [os.path.join(d, n) for n in sorted(os.listdir(d))
                 if os.path.exists(os.path.join(d, n, 'measured.txt'))]
    return sets


def archive_set(data_dir: str, new_machine: str) -> str | None:
    """Before a set measured on @new_machine is written into @data_dir:
    if the set there is another machine's, move it to machines/ID/ (its
    measured.txt, traces, raw recordings and profile; expected-out.txt
    copied; tcg.txt stays: QEMU's guest kernel, whatever the host); where
    it went, or None."""
    path = os.path.join(data_dir, 'measured.txt')
    if not os.path.exists(path):
        return None
    rows = read_rows(path)
    old = set_machine(rows)
    if not old or old == new_machine:
        return None
    dst = os.path.join(data_dir, MACHINES, old)
    os.makedirs(os.path.join(dst, 'raw'), exist_ok=True)
    for row in rows:
        name = row['program']
        for f in (row['trace'], os.path.join('raw', name + '.strace.xz'),
                  os.path.join('raw', name + '.faults.xz')):
            if os.path.exists(os.path.join(data_dir, f)):
                shutil.move(os.path.join(data_dir, f), os.path.join(dst, f))
        row.setdefault('machine', old)
    # The profile is that machine's (moved); the rows allowed out of
    # bounds are a starting point for the new set's (copied).
    if os.path.exists(os.path.join(data_dir, PROFILE)):
        shutil.move(os.path.join(data_dir, PROFILE), os.path.join(dst, PROFILE))
    if os.path.exists(os.path.join(data_dir, 'expected-out.txt')):
        shutil.copyfile(os.path.join(data_dir, 'expected-out.txt'),
                        os.path.join(dst, 'expected-out.txt'))
    write_rows(os.path.join(dst, 'measured.txt'), rows)
    os.unlink(path)
    return dst


# The raw page faults of a program are kept (raw/PROGRAM.faults.xz, for
# --reconvert) up to this size: an allocating program's run faults a few
# hundred thousand times (CPython's threads 774733 times, 84 MB of text,
# about 3 MB compressed), more than the tree should carry for each.
RAW_FAULTS_MAX = 8 << 20


def xz_copy(src: str, dst: str) -> None:
    with open(src, 'rb') as f, lzma.open(dst, 'wb', preset=9) as g:
        shutil.copyfileobj(f, g)


def write_data(out_dir: str, rows: list[tuple[Row, Recording]], merge: bool = False) -> None:
    """@rows, (row, recording) each, into @out_dir: the traces, the
    recordings and their page faults compressed into raw/, measured.txt in
    the programs' order; with @merge, the rows of other programs already
    there kept."""
    os.makedirs(os.path.join(out_dir, 'raw'), exist_ok=True)
    path = os.path.join(out_dir, 'measured.txt')
    old = read_rows(path) if merge and os.path.exists(path) else []
    new_names = {r['program'] for r, _ in rows}
    keep = [r for r in old if r['program'] not in new_names]
    for row, rec in rows:
        dst = os.path.join(out_dir, row['trace'])
        if os.path.abspath(rec.trace) != os.path.abspath(dst):
            shutil.copyfile(rec.trace, dst)
        xz_copy(rec.raw, os.path.join(out_dir, 'raw', row['program'] + '.strace.xz'))
        fx = os.path.join(out_dir, 'raw', row['program'] + '.faults.xz')
        if os.path.exists(fx):
            os.unlink(fx)
        if rec.faults and os.path.getsize(rec.faults) <= RAW_FAULTS_MAX:
            xz_copy(rec.faults, fx)
            row['faults_raw'] = 'raw/%s.faults.xz' % row['program']
        elif rec.faults:
            row['faults_raw'] = ('not kept: %.0f MB (perf script text), about a 25th of that '
                                 'compressed' % (os.path.getsize(rec.faults) / 1e6))
    allrows = keep + [r for r, _ in rows]
    order = [p.name for p in programs('/')]
    allrows.sort(key=lambda r: order.index(r['program']) if r['program'] in order else 99)
    write_rows(path, allrows)


def read_expected_out(data_dir: str) -> dict[str, str]:
    """expected-out.txt of @data_dir (else of data/): name -> why (each
    why must give numbers: replay.py checks it)."""
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
