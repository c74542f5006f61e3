# SPDX-License-Identifier: MIT
"""The replay mode: each trace of a data directory through tlbpol-sim
(the `linux` policy on the recorded machine's CPU count, then every
policy), checked against the counts the kernel gave (the bounds in
config.py); report.py prints the result."""

from __future__ import annotations

import csv
import io
import os
import re
import subprocess
from collections.abc import Sequence

from .config import FACTOR, FLOOR, PER_OP_FLOOR, PER_OP_TOL, PROFILE, Sim, log
from .converter import V1Traces, trace_version
from .data import Row, floats, ints, machine_sets, read_expected_out, read_rows, set_machine
from .profile import model_tf2
from .report import Entry, Throughput, print_report

SimRow = dict[str, str]     # one CSV row of tlbpol-sim --csv


def sim_supports(sim: Sim, option: str) -> bool:
    r = subprocess.run([sim.path, '--help'], capture_output=True, text=True)
    return option in r.stdout + r.stderr


def cpu_ns(row: Row) -> int | None:
    """The CPU time the traced run used without strace, in ns (the median
    of the measured runs; tlb_flush2's traced run is shorter, so scaled by
    its share of the operations)."""
    cpus = floats(row.get('cpu_s', ''))
    if not cpus:
        return None
    med = sorted(cpus)[len(cpus) // 2]
    if 'trace_ops' in row:
        ops = sorted(ints(row['ops']))[len(cpus) // 2]
        med *= int(row['trace_ops']) / ops
    return int(med * 1e9)


def sim_csv(sim: Sim, trace: str, cpus: int, policy: str | None = None,
            extra: Sequence[str] = ()) -> tuple[int, list[SimRow], str]:
    """tlbpol-sim trace @trace: (exit status, its CSV rows, its stderr)."""
    argv = [sim.path, 'trace', trace, '--cpus', str(cpus), '--nodes', '1', '--csv'] + \
        list(extra) + list(sim.extra)
    if policy:
        argv += ['--policy', policy]
    r = subprocess.run(argv, capture_output=True, text=True)
    rows = list(csv.DictReader(io.StringIO(r.stdout))) if r.stdout.startswith('scenario') \
        else []
    return r.returncode, rows, r.stderr.strip()


def measured_counts(row: Row) -> tuple[list[int], str]:
    """The counts the bound is checked against: the program's own
    shootdowns (csd:csd_queue_cpu of flush_tlb_func in its tasks: what its
    tasks added to the TLB row) when they were recorded, else the TLB row."""
    if row.get('own', 'na') not in ('', 'na') and 'na' not in row['own'].split(','):
        return ints(row['own']), 'own'
    return ints(row['runs']), 'TLB row'


def check_row(row: Row, pred: int) -> tuple[bool, float | None, str]:
    """(within bounds, ratio, explanation) of prediction @pred for @row."""
    counts, what = measured_counts(row)
    lo, hi = min(counts), max(counts)
    if 'trace_ops' in row:
        per = [c / o for c, o in zip(counts, ints(row['ops'])) if o]
        plo, phi = min(per), max(per)
        ppred = pred / int(row['trace_ops'])
        ok = max(plo, PER_OP_FLOOR) * (1 - PER_OP_TOL) <= max(ppred, PER_OP_FLOOR) <= \
            max(phi, PER_OP_FLOOR) * (1 + PER_OP_TOL)
        mid = sorted(per)[len(per) // 2]
        return ok, (ppred / mid if mid else None), (
            'IPIs/op predicted %.4f, measured (%s) %.4f-%.4f; bound: within %d%%, values '
            'under %g taken as %g' % (ppred, what, plo, phi, PER_OP_TOL * 100, PER_OP_FLOOR,
                                      PER_OP_FLOOR))
    ok = max(lo, FLOOR) / FACTOR <= max(pred, FLOOR) <= max(hi, FLOOR) * FACTOR
    imid = sorted(counts)[len(counts) // 2]
    return ok, (pred / imid if imid else None), (
        'predicted %d, measured (%s) %d-%d; bound: within %gx, counts under %d taken as %d'
        % (pred, what, lo, hi, FACTOR, FLOOR, FLOOR))


def first_line(path: str) -> str:
    with open(path) as f:
        return f.readline().rstrip('\n')


def last_line(err: str) -> str:
    return err.splitlines()[-1] if err else ''


def replay_one(sim: Sim, data_dir: str, row: Row, with_cpu_ns: bool, v1: V1Traces,
               notes: list[str]) -> tuple[Entry, int, str]:
    """@row's trace replayed: its entry, and the exit status and stderr of
    the replay under every policy."""
    name = row['program']
    trace = os.path.join(data_dir, row['trace'])
    cpus = int(row.get('cpus', '2'))
    ns = cpu_ns(row) if with_cpu_ns else None
    extra = ['--trace-cpu-ns', str(ns)] if ns else []
    rc, res, err = sim_csv(sim, trace, cpus, 'linux', extra)
    if rc != 0 and first_line(trace) != '# tlbpol-trace v1':
        # A tlbpol-sim that reads only version 1: the same recording,
        # converted again with --v1 (memory records only).
        v1_path = v1.trace(name)
        if v1_path:
            rc1, res1, err1 = sim_csv(sim, v1_path, cpus, 'linux', extra)
            if rc1 == 0:
                notes.append('%s: this tlbpol-sim does not read %s (%s); replayed '
                             'data/raw/%s.strace.xz converted with --v1'
                             % (name, first_line(trace)[2:], err.splitlines()[-1]
                                if err else 'exit %d' % rc, name))
                trace, rc, res, err = v1_path, rc1, res1, err1
    ok_sim = rc == 0 and len(res) == 1
    pred = int(res[0]['ipis']) if ok_sim else None
    rc_all, res_all, err_all = sim_csv(sim, trace, cpus, None, extra)
    viol = sum(int(x['violations']) for x in res_all) if res_all else None
    e = Entry(name=name, row=row, pred=pred, viol=viol,
              modelled_ns=int(res[0]['modelled_ns']) if ok_sim else None,
              causes=model_causes(res[0]) if ok_sim else {})
    if pred is None:
        e.ok, e.ratio = False, None
        e.why = 'tlbpol-sim failed (exit %d): %s' % (rc, last_line(err))
    else:
        e.ok, e.ratio, e.why = check_row(row, pred)
    return e, rc_all, err_all


def throughput(sim: Sim, data_dir: str, e1: Entry, e2: Entry) -> Throughput:
    """tlb_flush2: the 2-thread/1-thread throughput ratio, measured and
    modelled.  The model is tlbpol-sim's dontneed scenario (tlb_flush2's
    loop) on a guest of this machine priced by the measured profile, its
    page fault priced so that one thread alone takes the kernel's time
    (model_tf2()): the traces' times are strace's, useless for a
    throughput."""
    key = 'plain_ops_per_s' if 'plain_ops_per_s' in e1.row else 'ops_per_s'
    o1, o2 = floats(e1.row[key]), floats(e2.row[key])
    pair = [b / a for a, b in zip(o1, o2) if a]
    profile: str | None = os.path.join(data_dir, PROFILE)
    profile = profile if profile and os.path.exists(profile) else None
    alone = sorted(o1)[len(o1) // 2] if o1 else 0
    return Throughput(min(pair), max(pair),
                      model_tf2(sim.path, profile, 1e9 / alone if alone else None), profile)


def model_causes(res: SimRow) -> dict[str, int]:
    """The interrupts of a tlbpol-sim CSV row by cause (ipis_CAUSE)."""
    return {k[len('ipis_'):]: int(v) for k, v in res.items()
            if k.startswith('ipis_') and k != 'ipis_received' and v.isdigit()}


def unexplained(expected: dict[str, str]) -> list[str]:
    """The rows of expected-out.txt whose why gives no number: a row is
    allowed out of bounds only with the figures that explain it."""
    return ['%s: expected-out.txt gives no numbers for why it is out of bounds (%r)'
            % (name, why) for name, why in expected.items() if not re.search(r'\d', why)]


def trace_mismatch(data_dir: str, row: Row) -> str | None:
    """A row whose page faults were recorded must have a version 3 trace
    (its faults in it): None if so, or if they were not recorded."""
    if not row.get('faults', '').startswith('recorded'):
        return None
    v = trace_version(os.path.join(data_dir, row['trace']))
    if v is not None and v >= 3:
        return None
    return ('%s: its page faults were recorded (%s) but its trace is version %s, '
            'without them' % (row['program'], row['faults'], v))


def replay(data_dir: str, sim: Sim, check: bool, with_cpu_ns: bool = False) -> bool:
    """Replay each machine's set in @data_dir (machine_sets(): itself,
    then machines/*/) and print its table; with @check, False when in any
    set a row not in its expected-out.txt is out of bounds, a policy has a
    violation, or a check of the data fails."""
    if not os.access(sim.path, os.X_OK):
        log('validate: no tlbpol-sim at %s (--sim PATH, --build DIR, TLBPOL_SIM or '
            'TLBPOL_BUILD)' % sim.path)
        return False
    if with_cpu_ns and not sim_supports(sim, '--trace-cpu-ns'):
        log('validate: %s has no --trace-cpu-ns; replaying without it' % sim.path)
        with_cpu_ns = False
    print('replay: %s trace DATA/PROGRAM.trace --cpus N --nodes 1 --csv%s%s '
          '[--policy linux]' % (sim.path, ' --trace-cpu-ns NS' if with_cpu_ns else '',
                                ''.join(' ' + a for a in sim.extra)))
    ok = True
    for d in machine_sets(data_dir):
        ok = replay_set(d, sim, check, with_cpu_ns) and ok
    return ok


def replay_set(data_dir: str, sim: Sim, check: bool, with_cpu_ns: bool) -> bool:
    """One machine's set (replay())."""
    rows = read_rows(os.path.join(data_dir, 'measured.txt'))
    expected = read_expected_out(data_dir)
    print()
    print('machine %s: %s' % (set_machine(rows) or '?', os.path.relpath(data_dir)))
    failures: list[str] = unexplained(expected)
    notes: list[str] = []
    table: list[Entry] = []
    byname: dict[str, Entry] = {}
    with V1Traces(data_dir) as v1:
        for row in rows:
            e, rc_all, err_all = replay_one(sim, data_dir, row, with_cpu_ns, v1, notes)
            name = e.name
            bad = trace_mismatch(data_dir, row)
            if bad:
                failures.append(bad)
            byname[name] = e
            if rc_all != 0 or e.viol != 0:
                failures.append('%s: under every policy: %s violations, exit %d %s'
                                % (name, e.viol, rc_all, last_line(err_all)))
            e.status = 'ok' if e.ok else ('expected-out' if name in expected else 'OUT')
            if not e.ok and name not in expected:
                failures.append('%s: out of bounds: %s' % (name, e.why))
            if e.ok and name in expected:
                notes.append('%s: now within bounds; remove it from data/expected-out.txt'
                             % name)
            table.append(e)

    tput = None
    if 'tlb_flush2-1t' in byname and 'tlb_flush2-2t' in byname:
        tput = throughput(sim, data_dir, byname['tlb_flush2-1t'], byname['tlb_flush2-2t'])
        name = 'tlb_flush2-throughput'
        # The bound: the modelled ratio within 20% of the measured range,
        # as for IPIs per operation, and not a fixed figure such as "below
        # 0.8": the kernel itself is not below 0.8 on every day here
        # (docs/results.md), so the bound is the measurement's.
        ok = tput.model is not None and \
            tput.lo * (1 - PER_OP_TOL) <= tput.model[2] <= tput.hi * (1 + PER_OP_TOL)
        if not ok and name not in expected:
            failures.append('%s: the model\'s 2T/1T throughput ratio %s is not within 20%% '
                            'of the measured %.2f-%.2f'
                            % (name, 'na' if tput.model is None else '%.2f' % tput.model[2],
                               tput.lo, tput.hi))
        if ok and name in expected:
            notes.append('%s: now within bounds; remove it from data/expected-out.txt' % name)

    print_report(table, tput, expected, notes, failures)
    return not failures if check else True
