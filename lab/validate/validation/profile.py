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
from .machine import machine, utc_now


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


def measure_profile(work: str, sim: str) -> str | None:
    """Run ipi_rtt -d -g RUNS times; the profile file's text."""
    exe = os.path.join(work, 'ipi_rtt')
    subprocess.run([os.environ.get('CC', 'cc'), '-O2', '-pthread', '-o', exe,
                    os.path.join(HERE, 'ipi_rtt.c')], check=True)
    runs = []
    for i in range(RUNS):
        r = subprocess.run([exe, '-d', '-g'], capture_output=True, text=True)
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
    ]
    lines += ['%s=%s' % kv for kv in sorted(costs.items())]
    return '\n'.join(lines) + '\n'


def model_tf2(sim: str, profile: str | None) -> tuple[float, float, float] | None:
    """tlbpol-sim's tlb_flush2 on this machine's model: ns per operation
    of one thread alone and of each of two threads, and the 2T/1T
    throughput ratio (None where the simulator fails)."""
    per = {}
    for t in (1, 2):
        argv = [sim, 'dontneed', '--cpus', '2', '--nodes', '1', '--vm', '--threads', str(t),
                '--policy', 'linux', '--csv']
        if profile:
            argv += ['--cost-file', profile]
        r = subprocess.run(argv, capture_output=True, text=True)
        rows = list(csv.DictReader(io.StringIO(r.stdout))) if r.returncode == 0 else []
        if len(rows) != 1:
            return None
        per[t] = float(rows[0]['metric'])
    return per[1], per[2], 2 * per[1] / per[2]
