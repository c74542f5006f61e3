# SPDX-License-Identifier: MIT
"""The machine profile: what a shootdown costs on this machine, measured
with ipi_rtt -d -g (lab/validate/ipi_rtt.c: one page written and
MADV_DONTNEED'd in a loop while a thread of the process spins on the other
CPU, timing each interruption it suffers), turned into tlbpol-sim costs
(--cost-file).  The tlb_flush2 throughput is then modelled with those
costs: the measurement is of a 1-page round trip alone, the prediction of
16-page loops on both CPUs at once."""

from __future__ import annotations

import csv
import io
import os
import re
import subprocess

from .config import HERE, RUNS, log
from .machine import PROG_RT, machine, rt_preexec, utc_now


def sim_costs(sim: str) -> dict[str, float]:
    """tlbpol-sim's cost model as it prints it (--costs): name -> value."""
    r = subprocess.run([sim, '--costs'], capture_output=True, text=True)
    out = {}
    for line in r.stdout.splitlines():
        m = re.match(r'\s+([a-z_0-9]+)\s+([0-9.eE+-]+)\s', line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def profile_costs(rtt: float, recv: float, c: dict[str, float]) -> dict[str, float]:
    """tlbpol-sim costs from a guest's measured round trip @rtt and the
    receiver's loss @recv (ns), over the defaults @c.  The receiver's loss
    is its native entry/exit and the handler's one-page flush plus the
    exits (vm_irq_exit_ns); the rest of the round trip, less the
    acknowledgement, is the sender's ICR write and the delivery, which the
    model prices as (ipi_first_ns + ipi_latency_ns) * vm_ipi_factor."""
    native = (c['irq_entry_exit_cycles'] + c['invlpg_first_cycles']) / c['cpu_ghz']
    exit_ns = max(0.0, recv - native)
    factor = max(1.0, (rtt - recv - c['ack_latency_ns']) /
                 (c['ipi_first_ns'] + c['ipi_latency_ns']))
    return {'vm_irq_exit_ns': round(exit_ns), 'vm_ipi_factor': round(factor, 2)}


def measure_profile(work: str, sim: str, rt: bool = False) -> str | None:
    """Run ipi_rtt -d -g RUNS times (with @rt under SCHED_RR: on a loaded
    machine its spinner is otherwise often off its CPU, the calls then
    interrupt nobody, and the round trip is that of a local flush); the
    profile file's text."""
    exe = os.path.join(work, 'ipi_rtt')
    subprocess.run([os.environ.get('CC', 'cc'), '-O2', '-pthread', '-o', exe,
                    os.path.join(HERE, 'ipi_rtt.c')], check=True)
    runs = []
    for i in range(RUNS):
        r = subprocess.run([exe, '-d', '-g'], capture_output=True, text=True,
                           preexec_fn=rt_preexec(PROG_RT if rt else None))
        if r.returncode != 0:
            log('validate: ipi_rtt -d -g exited %d: %s' % (r.returncode, r.stderr.strip()))
            return None
        run = {}
        for field in r.stdout.split():
            k, _, v = field.partition('=')
            run[k] = float(v)
        runs.append(run)
        log('  ipi_rtt -d -g run %d: %s' % (i, r.stdout.strip()))

    def med(k: str) -> float:
        return sorted(x[k] for x in runs)[len(runs) // 2]
    rtt, recv = med('rtt_ns'), med('recv_ns')
    costs = profile_costs(rtt, recv, sim_costs(sim))
    mach = machine()
    lines = [
        '# lab/validate/data/machine.cost: tlbpol-sim costs (--cost-file) for the',
        '# machine lab/validate measured, written by validate.py measure from',
        '# lab/validate/ipi_rtt.c -d -g, %d runs, medians (profile_costs() in' % RUNS,
        '# lab/validate/validation/profile.py says how each cost follows from them).',
        '# date=%s kernel=%s cpu=%s cpus=%s' % (utc_now(), mach['kernel'], mach['cpu'],
                                               mach['cpus']),
        '# rtt_ns=%s' % ','.join('%.0f' % x['rtt_ns'] for x in runs),
        '# recv_ns=%s' % ','.join('%.0f' % x['recv_ns'] for x in runs),
        '# alone_ns=%s' % ','.join('%.0f' % x['alone_ns'] for x in runs),
        '# gaps=%s calls=%s' % (','.join('%.0f' % x['gaps'] for x in runs),
                                ','.join('%.0f' % x['calls'] for x in runs)),
        '# sched=%s' % ('SCHED_RR 1' if rt else 'normal'),
    ]
    lines += ['%s=%s' % kv for kv in sorted(costs.items())]
    return '\n'.join(lines) + '\n'


def model_tf2_at(sim: str, profile: str | None,
                 fault_ns: float | None) -> tuple[float, float] | None:
    """tlbpol-sim's tlb_flush2 (its dontneed scenario) on this machine's
    model: ns per operation of one thread alone and of each of two
    threads, the page fault priced at @fault_ns (None: the default)."""
    per = {}
    for t in (1, 2):
        argv = [sim, 'dontneed', '--cpus', '2', '--nodes', '1', '--vm', '--threads', str(t),
                '--policy', 'linux', '--csv']
        if profile:
            argv += ['--cost-file', profile]
        if fault_ns is not None:
            argv += ['--cost', 'fault_ns=%.0f' % fault_ns]
        r = subprocess.run(argv, capture_output=True, text=True)
        rows = list(csv.DictReader(io.StringIO(r.stdout))) if r.returncode == 0 else []
        if len(rows) != 1:
            return None
        per[t] = float(rows[0]['metric'])
    return per[1], per[2]


# The two fault prices the fit below solves between (ns).
FIT_AT = (500.0, 1500.0)


def model_tf2(sim: str, profile: str | None, alone_ns: float | None = None
              ) -> tuple[float, float, float, float | None] | None:
    """tlbpol-sim's tlb_flush2 on this machine's model: ns per operation
    of one thread alone and of each of two threads, the 2T/1T throughput
    ratio, and the fault price used (None where the simulator fails).

    With @alone_ns (the kernel's time per operation of one thread alone,
    measured), the page fault's price is fitted so that the model's one
    thread takes as long: an operation is 16 faults and a MADV_DONTNEED,
    and the default fault_ns (1500) is another machine's; so the ratio
    compares what a second thread adds, the shootdowns, and not the
    machines' fault handlers (2026-12-04: 15.0 us alone here, 30.5 in the
    model at the default).  The model's time is linear in fault_ns, so two
    runs give it."""
    fault_ns: float | None = None
    if alone_ns:
        lo, hi = model_tf2_at(sim, profile, FIT_AT[0]), model_tf2_at(sim, profile, FIT_AT[1])
        if lo is None or hi is None or hi[0] <= lo[0]:
            return None
        slope = (hi[0] - lo[0]) / (FIT_AT[1] - FIT_AT[0])
        fault_ns = max(0.0, FIT_AT[0] + (alone_ns - lo[0]) / slope)
    got = model_tf2_at(sim, profile, fault_ns)
    if got is None:
        return None
    return got[0], got[1], 2 * got[0] / got[1], fault_ns
