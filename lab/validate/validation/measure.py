# SPDX-License-Identifier: MIT
"""The measure mode: every program measured, attributed and recorded
(measuring.py), the data written, the machine profile measured, and the
new data replayed."""

from __future__ import annotations

import dataclasses
import os
import tempfile

from .config import PROFILE, RUNS, Config, log
from .converter import converter
from .data import Row, archive_set, write_data
from .machine import loadavg, machine, machine_id, rt_usable, utc_now, wait_quiet
from .measuring import Recording, RunResult, Started, finish, quiet_run
from .perf import faults_unusable, perf_events
from .profile import measure_profile
from .programs import Program, instrument_blind, programs
from .replay import replay


def select(progs: list[Program], only: str | None) -> list[Program]:
    """The programs --only names (all without it)."""
    if not only:
        return progs
    want = only.split(',')
    unknown = set(want) - {p.name for p in progs}
    if unknown:
        raise SystemExit('validate: unknown program(s) %s; there are %s'
                         % (','.join(sorted(unknown)), ','.join(p.name for p in progs)))
    return [p for p in progs if p.name in want]


def groups_of(progs: list[Program]) -> list[list[Program]]:
    """Programs of one group (tlb_flush2 at 1 and 2 threads) together, so
    that they run in turn and their throughputs are compared under the
    same load."""
    groups: list[list[Program]] = []
    for p in progs:
        if groups and p.group and groups[-1][0].group == p.group:
            groups[-1].append(p)
        else:
            groups.append([p])
    return groups


def measure(cfg: Config) -> bool:
    work = cfg.work or tempfile.mkdtemp(prefix='tlbpol-validate.')
    os.makedirs(work, exist_ok=True)
    log('validate: work directory %s' % work)
    mach = machine()
    evs = [] if cfg.no_perf else perf_events()
    log('validate: %s, Linux %s, %s CPUs; perf: %s'
        % (mach['cpu'], mach['kernel'], mach['cpus'],
           '; '.join('%s %s' % (ev, flt) for _, ev, flt in evs) or 'not used'))
    conv = converter(cfg.converter)
    no_rt = rt_usable() if cfg.rt else 'not asked for (--no-rt)'
    if no_rt:
        cfg = dataclasses.replace(cfg, rt=False)
    log('validate: programs under %s' % ('SCHED_RR 1, perf under SCHED_FIFO 2' if cfg.rt else
                                         'normal scheduling: %s' % no_rt))
    blind = instrument_blind(work, cfg.rt)
    if blind:
        log('validate: %s.  Nothing measured; data/ holds the last machine\'s counts '
            '(--replay-only replays them).' % blind)
        return False
    no_faults = faults_unusable(work)
    log('validate: page faults %s' % ('not recorded: ' + no_faults if no_faults else
                                      'recorded beside strace (trace version 3)'))
    progs = []
    for p in select(programs(work), cfg.only):
        gone = p.missing()
        if gone:
            log('validate: %s skipped: no %s' % (p.name, gone))
        else:
            progs.append(p)
    rows: list[tuple[Row, Recording]] = []
    for group in groups_of(progs):
        runs: dict[str, list[RunResult]] = {p.name: [] for p in group}
        start = {}
        for p in group:
            if p.prepare:
                p.prepare(work)
            start[p.name] = Started(utc_now(), loadavg())
        for i in range(RUNS):
            for p in group:
                r = quiet_run(p, work, str(i), evs, cfg)
                runs[p.name].append(r)
                log('  %s run %d: TLB row %d in %.2f s (own %s, calls %s, others\' %s; '
                    'baseline %d; others used %.0f%% of the CPUs, steal %.1f%%)%s'
                    % (p.name, i, r.tlb, r.seconds, r.counts.get('own', 'na'),
                       r.counts.get('calls', 'na'), r.counts.get('own_others', 'na'),
                       r.baseline, 100 * r.others,
                       100 * r.steal, ' ops=%s' % r.ops if r.timed else ''))
        # Throughput is measured again without perf (perf record's writing
        # of every event slows tlb_flush2 by up to a third).
        plain: dict[str, list[RunResult]] = {p.name: [] for p in group if p.ops}
        for i in range(RUNS if plain else 0):
            for p in group:
                if p.ops:
                    r = quiet_run(p, work, 'plain%d' % i, [], cfg)
                    plain[p.name].append(r)
                    log('  %s plain run %d: TLB row %d, ops=%s ops/s=%s (others used %.0f%%)'
                        % (p.name, i, r.tlb, r.ops, r.ops_per_s, 100 * r.others))
        for p in group:
            rows.append(finish(p, runs[p.name], start[p.name], work, evs, cfg, conv,
                               mach, plain.get(p.name), no_faults))
    out_dir = cfg.data if cfg.update else work
    if cfg.update:
        moved = archive_set(out_dir, machine_id(mach))
        if moved:
            log('validate: the set measured on another machine moved to %s' % moved)
    write_data(out_dir, rows, merge=bool(cfg.only) and cfg.update)
    if not cfg.only or 'tlb_flush2-2t' in cfg.only.split(','):
        wait_quiet(cfg.quiet_wait)
        text = measure_profile(work, cfg.sim.path, cfg.rt)
        if text:
            with open(os.path.join(out_dir, PROFILE), 'w') as f:
                f.write(text)
    log('validate: data written to %s' % out_dir)
    return replay(out_dir, cfg.sim, check=cfg.check, with_cpu_ns=cfg.cpu_ns)


def profile(cfg: Config) -> bool:
    """The profile mode: the machine profile alone."""
    work = cfg.work or tempfile.mkdtemp(prefix='tlbpol-profile.')
    os.makedirs(work, exist_ok=True)
    if cfg.rt and rt_usable():
        cfg = dataclasses.replace(cfg, rt=False)
    wait_quiet(cfg.quiet_wait)
    text = measure_profile(work, cfg.sim.path, cfg.rt)
    if not text:
        return False
    out = os.path.join(cfg.data if cfg.update else work, PROFILE)
    with open(out, 'w') as f:
        f.write(text)
    print(text, end='')
    log('validate: machine profile written to %s' % out)
    return True
