# SPDX-License-Identifier: MIT
"""The stamps mode: flush stamps (frames of private unmaps handed back at
once, flushed for only if reused too soon) on the replayed programs."""

from __future__ import annotations

import os

from .config import Sim
from .data import read_rows
from .replay import cpu_ns, sim_csv

CAUSES = ('munmap', 'install', 'dontneed', 'mprotect', 'mremap', 'fault', 'reclaim',
          'exit', 'forward', 'other')
ROW_FMT = '%-15s %3s %-8s %6s  %s  %8s %7s %7s %8s %8s %6s %6s'

# (allocator tag, policy) -> (unmap-caused interrupts, all interrupts)
Unmap = dict[tuple[str, str], tuple[int, int]]


def stamps(data_dir: str, sim: Sim) -> bool:
    """Each trace replayed with --stamps under linux, default and default
    less flush-stamp, the allocator taking the frame freed last (lookahead
    0, the worst case), a settled one of the last 64, or that and else a
    spare frame rather than settle one (64s: --stamp-spare, a kernel with
    free memory); interrupts in all and by cause, what settling cost the
    allocations, and at the end the interrupts the unmaps whose frames die
    caused (munmap, and the installs that had to complete them: install),
    linux against default.  False if a replay failed or had a violation."""
    rows = read_rows(os.path.join(data_dir, 'measured.txt'))
    print('stamps: %s trace DATA/PROGRAM.trace --cpus N --nodes 1 --csv --trace-cpu-ns NS '
          '--stamps --stamp-lookahead L [--stamp-spare] --rules default,-flush-stamp'
          % sim.path)
    print(ROW_FMT % (
        'program', 'la', 'policy', 'total', ' '.join('%6s' % c[:6] for c in CAUSES),
        'allocs', 'reuses', 'waited', 'p50 ns', 'p99 ns', 'spare', 'freepk'))
    ok = True
    summary: list[tuple[str, Unmap]] = []
    for row in rows:
        trace = os.path.join(data_dir, row['trace'])
        cpus = int(row.get('cpus', '2'))
        ns = cpu_ns(row)
        extra = ['--trace-cpu-ns', str(ns)] if ns else []
        unmap: Unmap = {}
        for la, spare in ((0, False), (64, False), (64, True)):
            tag = '%d%s' % (la, 's' if spare else '')
            rc, res, err = sim_csv(sim, trace, cpus, None, extra + [
                '--stamps', '--stamp-lookahead', str(la), '--rules', 'default,-flush-stamp'] +
                (['--stamp-spare'] if spare else []))
            if rc != 0:
                print('%-15s %3s tlbpol-sim failed (exit %d): %s' % (row['program'], tag, rc,
                                                                     err.splitlines()[-1:]))
                ok = False
                continue
            for r in res:
                if r['policy'] not in ('linux', 'default', 'custom'):
                    continue
                if int(r['violations']):
                    ok = False
                print(ROW_FMT % (
                    row['program'], tag,
                    'no-stamp' if r['policy'] == 'custom' else r['policy'], r['ipis'],
                    ' '.join('%6s' % r['ipis_' + c] for c in CAUSES), r['frame_allocs'],
                    r['stamped_reuses'], r['settle_waits'], r['settle_p50_ns'],
                    r['settle_p99_ns'], r.get('spare_allocs', '-'),
                    r.get('free_frames_peak', '-')))
                unmap[(tag, r['policy'])] = (int(r['ipis_munmap']) + int(r['ipis_install']),
                                             int(r['ipis']))
        summary.append((row['program'], unmap))
    print('("no-stamp": default less flush-stamp, the same host code; "la": the '
          'allocator\'s lookahead, "s" with --stamp-spare; "spare": frames it took rather '
          'than settle one; "freepk": the most frames its free lists held)')
    print()
    print('unmap-caused interrupts (munmap + install), linux -> default, by allocator; and in all')
    for prog, u in summary:
        if ('0', 'linux') not in u:
            continue
        lin, lin_all = u[('0', 'linux')]
        cells = []
        for tag in ('0', '64', '64s'):
            if (tag, 'default') in u:
                d, d_all = u[(tag, 'default')]
                cells.append('%3s: %4d -> %4d (%s), all %5d -> %5d' % (
                    tag, lin, d, '%.1fx' % (lin / d) if d else 'all gone' if lin else '-',
                    lin_all, d_all))
        print('  %-15s %s' % (prog, ';  '.join(cells)))
    return ok
