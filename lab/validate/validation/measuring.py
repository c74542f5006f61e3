# SPDX-License-Identifier: MIT
"""The runs of one program: measured without strace (the TLB row, its own
shootdowns under perf, the idle baseline after it), attributed (perf
record -a -g), recorded under strace and converted; and its data row."""

from __future__ import annotations

import os
import resource
import shlex
import subprocess
import time
from dataclasses import dataclass, field

from .config import MAX_EVENTS, ROOT, Config, log
from .converter import Converter, convert, strace_options, trace_events
from .data import Row, csv_list, rng
from .machine import (PERF_RT, PROG_RT, cpu_times, machine_id, rt_argv, rt_preexec, tlb_row,
                      utc_now, wait_quiet)
from .perf import (Attribution, PerfEvent, PerfSession, fault_args, fmt_counts,
                   record_faults_argv, write_faults)
from .programs import Program


@dataclass
class RunResult:
    """One measured run (run_once()), and how it was waited for (quiet_run())."""
    tlb: int            # the TLB row's delta across the run
    seconds: float
    cpu: float          # the program's CPU time, s (user + system, with its children)
    others: float       # CPU used by other processes, a fraction of all CPUs
    steal: float        # steal time, a fraction of the window
    counts: dict[str, int] = field(default_factory=dict)  # perf: KEY and KEY_others
    timed: bool = False         # the program counts its operations (ops, ops_per_s)
    ops: int | None = None
    ops_per_s: int | None = None
    baseline: int = 0           # the TLB row over an idle window as long
    busy_before: float = 0.0    # busy fraction of the last second before it
    retries: int = 0


@dataclass(frozen=True)
class Started:
    """When a program's runs started, and the load then."""
    date: str
    load: str


def launch(argv: list[str], out_path: str, stdout_null: bool,
           env: dict[str, str] | None = None,
           rt: bool = False) -> tuple[int, int, resource.struct_rusage]:
    """Run @argv (in @env; with @rt under SCHED_RR, machine.py PROG_RT);
    (pid, exit code, its rusage: it and its descendants)."""
    with open(out_path, 'w') as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, env=env,
                                preexec_fn=rt_preexec(PROG_RT if rt else None),
                                stdout=subprocess.DEVNULL if stdout_null else out,
                                stderr=out if stdout_null else subprocess.STDOUT)
        _, status, ru = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.pid, proc.returncode, ru


def run_once(p: Program, work: str, tag: str, evs: list[PerfEvent],
             rt: bool = False) -> RunResult:
    """One measured run without strace: TLB row delta, seconds, the
    program's CPU time, CPU used by others, steal; with perf, the program's
    own counts of each event; then the idle baseline window.

    The own counts come from `perf record -a` (no call chains) and the
    program's process tree (its fork records), not from `perf stat`'s
    inherited counters: on this kernel (6.18) those miss every shootdown
    of an exiting process's address space (do_exit() hands a task's
    inherited counts to its parent before exit_mm()): in the parallel
    build, 80 of 110."""
    if p.per_run:
        p.per_run(work)
    out_path = os.path.join(work, '%s.%s.out' % (p.name, tag))
    perf = PerfSession(evs, os.path.join(work, '%s.%s.perf.data' % (p.name, tag)), rt=rt)
    b0, s0, t0j = cpu_times()
    a = tlb_row()
    t0 = time.monotonic()
    pid, rc, ru = launch(list(p.cmd), out_path, p.stdout_null, p.environ(), rt)
    t1 = time.monotonic()
    b = tlb_row()
    b1, s1, t1j = cpu_times()
    counts = perf.stop(pid)
    if rc != 0:
        raise RuntimeError('%s exited %d (output in %s)' % (p.name, rc, out_path))
    secs = t1 - t0
    hz = os.sysconf('SC_CLK_TCK')
    cpu = ru.ru_utime + ru.ru_stime
    total_cpu = (t1j - t0j) / hz
    # perf record's own CPU in the window is counted as others'
    others = max(0.0, (b1 - b0) / hz - cpu) / max(1e-9, total_cpu)
    steal = (s1 - s0) / max(1, t1j - t0j)
    res = RunResult(tlb=b - a, seconds=secs, cpu=cpu, others=others, steal=steal)
    for key, (mine, theirs) in (counts or {}).items():
        res.counts[key] = sum(mine.values())
        res.counts[key + '_others'] = sum(theirs.values())
    if p.ops:
        with open(out_path) as f:
            res.timed = True
            res.ops, res.ops_per_s = p.ops(f.read())
    # the idle baseline: the same length of time, nothing of ours running
    a = tlb_row()
    time.sleep(secs)
    res.baseline = tlb_row() - a
    return res


def quiet_run(p: Program, work: str, tag: str, evs: list[PerfEvent],
              cfg: Config) -> RunResult:
    """run_once() after waiting for a quiet second; a run during which
    other processes used more than --max-others of the CPUs is done again
    (--retries times at most; the last is kept)."""
    for attempt in range(1 + cfg.retries):
        busy = wait_quiet(cfg.quiet_wait)
        r = run_once(p, work, tag, evs, cfg.rt)
        r.busy_before = busy
        r.retries = attempt
        if r.others <= cfg.max_others:
            break
        log('  %s run %s: others used %.0f%% of the CPUs%s'
            % (p.name, tag, 100 * r.others, ', again' if attempt < cfg.retries else ', kept'))
    return r


def attribution_run(p: Program, work: str, evs: list[PerfEvent],
                    rt: bool = False) -> tuple[Attribution | None, int]:
    """One run under `perf record -a -g`: where the shootdowns came from."""
    if p.per_run:
        p.per_run(work)
    perf = PerfSession(evs, os.path.join(work, '%s.perf.data' % p.name), callgraph=True,
                       rt=rt)
    a = tlb_row()
    pid, _, _ = launch(list(p.cmd), os.path.join(work, '%s.attrib.out' % p.name),
                       p.stdout_null, p.environ(), rt)
    tlb = tlb_row() - a
    return perf.stop(pid), tlb


@dataclass(frozen=True)
class Recording:
    """The strace recording of a program and what came of it: the raw
    strace output, its page faults file (None: not recorded), the trace,
    the strace command, what the converter said, and what perf recorded
    (or why nothing: fault_note)."""
    raw: str
    faults: str | None
    trace: str
    cmd: str
    note: str
    fault_note: str


def record_trace(p: Program, work: str, conv: Converter, mach: dict[str, str],
                 no_faults: str | None, rt: bool = False) -> Recording:
    """@p run under strace, with its page faults recorded beside it by
    perf as lab/trace/record-faults.sh does (unless @no_faults says why
    not), and converted (trace version 3 with faults, else 2)."""
    opts, opts_from = strace_options()
    raw = os.path.join(work, p.name + '.strace')
    if p.per_run:
        p.per_run(work)
    argv = ['strace'] + opts + ['-o', raw] + list(p.trace_cmd)
    perf_data = os.path.join(work, p.name + '.faults.perf')
    faults: str | None = None
    # strace and the program under SCHED_RR, perf above them (machine.py)
    run_argv = rt_argv(PROG_RT if rt else None) + argv
    if not no_faults:
        run_argv = record_faults_argv(perf_data) + run_argv
    when = utc_now()
    offset = time.clock_gettime_ns(time.CLOCK_REALTIME) - \
        time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    with open(os.path.join(work, '%s.strace.out' % p.name), 'w') as out:
        r = subprocess.run(run_argv, stdout=subprocess.DEVNULL if p.stdout_null else out,
                           stderr=subprocess.STDOUT, env=p.environ(),
                           preexec_fn=rt_preexec(PERF_RT if rt and not no_faults else None))
    if r.returncode != 0:
        raise RuntimeError('%s under strace exited %d' % (p.name, r.returncode))
    if no_faults:
        fault_note = 'not recorded: ' + no_faults
    else:
        faults = os.path.join(work, p.name + '.faults')
        n, lost = write_faults(perf_data, faults, offset)
        os.unlink(perf_data)
        fault_note = 'recorded %d%s' % (n, ', perf lost %d events' % lost if lost else '')
    trace = os.path.join(work, p.name + '.trace')
    cmd = ' '.join(shlex.quote(a) for a in p.env_argv() + argv)
    note = convert(conv, raw, trace, [
        'command: ' + cmd.replace(work, '$WORK').replace(ROOT, '$REPO'),
        'program: ' + p.desc,
        'recorded: %s UTC, Linux %s, %s, %s CPUs' % (when, mach['kernel'], mach['cpu'],
                                                  mach['cpus']),
        'machine: ' + machine_id(mach),
        'strace options: from ' + opts_from,
        'page faults: ' + (fault_note + ' (perf record %s beside strace, as '
                           'lab/trace/record-faults.sh)' % ' '.join(fault_args())
                           if faults else fault_note),
        'converted: %s UTC by lab/trace/strace2trace.py (%s) -n %d%s'
        % (utc_now(), conv.note, MAX_EVENTS, ' --faults --thin-faults' if faults else ''),
    ], faults)
    return Recording(raw, faults, trace, cmd, note, fault_note)


def finish(p: Program, runs: list[RunResult], start: Started, work: str,
           evs: list[PerfEvent], cfg: Config, conv: Converter, mach: dict[str, str],
           plain: list[RunResult] | None = None,
           no_faults: str | None = None) -> tuple[Row, Recording]:
    """The attribution run and the strace recording of @p; (its data row,
    the recording)."""
    attrib: Attribution | None = None
    attrib_tlb = None
    if evs and not cfg.no_attrib:
        wait_quiet(cfg.quiet_wait)
        attrib, attrib_tlb = attribution_run(p, work, evs, cfg.rt)
        for key, (own, others) in (attrib or {}).items():
            log('  %s perf record -a -g, %s: own %s; others %s (TLB row %d)'
                % (p.name, key, fmt_counts(own), fmt_counts(others, 5), attrib_tlb))
    rec = record_trace(p, work, conv, mach, no_faults, cfg.rt)
    if rec.note:
        log('  strace2trace: ' + rec.note.replace('\n', '\n  strace2trace: '))
    lo, hi = rng([r.tlb for r in runs])
    row = {
        'program': p.name,
        'measured_min': str(lo), 'measured_max': str(hi),
        'runs': csv_list([r.tlb for r in runs]),
    }
    for key, _, _ in evs:
        row[key] = csv_list([r.counts.get(key) for r in runs])
    if any('own_others' in r.counts for r in runs):
        row['own_others'] = csv_list([r.counts.get('own_others') for r in runs])
    row.update({
        'baseline': csv_list([r.baseline for r in runs]),
        'cpu_s': csv_list([r.cpu for r in runs], '%.3f'),
        'seconds': csv_list([r.seconds for r in runs], '%.3f'),
        'others_cpu': csv_list([100 * r.others for r in runs], '%.0f%%'),
        'steal': csv_list([100 * r.steal for r in runs], '%.1f%%'),
        'retries': csv_list([r.retries for r in runs]),
        'load': start.load,
        'sched': 'SCHED_RR 1 (perf SCHED_FIFO 2)' if cfg.rt else 'normal',
    })
    if p.ops:
        row['ops'] = csv_list([r.ops for r in runs])
        row['ops_per_s'] = csv_list([r.ops_per_s for r in runs])
        if plain:
            row['plain_runs'] = csv_list([r.tlb for r in plain])
            row['plain_ops'] = csv_list([r.ops for r in plain])
            row['plain_ops_per_s'] = csv_list([r.ops_per_s for r in plain])
            row['plain_others_cpu'] = csv_list([100 * r.others for r in plain], '%.0f%%')
        row['trace_ops'] = str(p.trace_ops)
    if attrib:
        for key, (own, others) in attrib.items():
            row['attrib_' + key] = fmt_counts(own, 12)
            row['attrib_others_' + key] = fmt_counts(others, 6)
        row['attrib_tlb'] = str(attrib_tlb)
    row['trace'] = p.name + '.trace'
    row['events'] = str(trace_events(rec.trace))
    row['faults'] = rec.fault_note
    row['date'] = start.date
    row.update(mach)
    row['machine'] = machine_id(mach)
    row['desc'] = p.desc
    row['trace_command'] = rec.cmd.replace(work, '$WORK').replace(ROOT, '$REPO')
    row['command'] = ' '.join(shlex.quote(a) for a in p.env_argv() + p.cmd).replace(
        work, '$WORK').replace(ROOT, '$REPO')
    return row, rec
