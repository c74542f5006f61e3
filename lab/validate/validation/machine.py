# SPDX-License-Identifier: MIT
"""This machine, as the measurements need it: the kernel's shootdown
count (the "TLB" row of /proc/interrupts), CPU times, and what it is."""

from __future__ import annotations

import datetime
import os
import re
import subprocess
import time
from typing import Callable


def tlb_row() -> int:
    """The "TLB" row of /proc/interrupts: shootdown IPIs received, summed."""
    with open('/proc/interrupts') as f:
        lines = f.read().splitlines()
    ncpu = len(lines[0].split())
    for line in lines[1:]:
        parts = line.split()
        if parts and parts[0] == 'TLB:':
            return sum(int(x) for x in parts[1:1 + ncpu])
    raise RuntimeError('no TLB row in /proc/interrupts')


def cpu_times() -> tuple[int, int, int]:
    """(busy, steal, total) jiffies over all CPUs, from /proc/stat."""
    with open('/proc/stat') as f:
        v = [int(x) for x in f.readline().split()[1:]]
    v += [0] * (8 - len(v))
    user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
    busy = user + nice + system + irq + softirq
    return busy, steal, busy + idle + iowait + steal


def ncpus() -> int:
    return os.cpu_count() or 1


def cmd_out(argv: list[str], default: str = '?') -> str:
    """The output of @argv, stripped; @default if it cannot be run or fails."""
    try:
        return subprocess.run(argv, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return default


def machine() -> dict[str, str]:
    """The kernel release, CPU model and CPU count, as data/ records them."""
    model, hyp = '?', ''
    for line in cmd_out(['lscpu'], '').splitlines():
        if line.startswith('Model name:'):
            model = line.split(':', 1)[1].strip()
        if line.startswith('Hypervisor vendor:'):
            hyp = line.split(':', 1)[1].strip()
    return {
        'kernel': os.uname().release,
        'cpu': model,
        'cpus': str(ncpus()),
        'hypervisor': hyp or 'none',
    }


def machine_id(mach: dict[str, str]) -> str:
    """A name for the machine a data set was measured on, from what
    machine() says: CPU model, hypervisor, CPU count, kernel release
    ("xeon-kvm-2cpu-6.18.44-fc-v1147").  The kernel is in it because the
    counts are the kernel's: another build of it is another machine here."""
    words = re.sub(r'\((R|TM)\)|\bCPU\b|\bProcessor\b|@.*$', ' ', mach.get('cpu', '?'))
    words = re.sub(r'\b(Intel|AMD|Core|Genuine)\b', ' ', words, flags=re.I)
    cpu = '-'.join(w.lower() for w in re.findall(r'[A-Za-z0-9]+', words)) or 'cpu'
    hyp = mach.get('hypervisor', 'none').lower()
    return '%s%s-%scpu-%s' % (cpu, '' if hyp in ('', 'none') else '-' + hyp,
                              mach.get('cpus', '?'), mach.get('kernel', '?'))


def loadavg() -> str:
    with open('/proc/loadavg') as f:
        return f.read().split()[0]


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def wait_quiet(limit_s: float, busy_max: float = 0.20) -> float:
    """Wait (at most limit_s) for a second in which the CPUs are at most
    busy_max busy; return the busy fraction of the last second seen."""
    t_end = time.monotonic() + limit_s
    while True:
        b0, _, t0 = cpu_times()
        time.sleep(1.0)
        b1, _, t1 = cpu_times()
        frac = (b1 - b0) / max(1, t1 - t0)
        if frac <= busy_max or time.monotonic() >= t_end:
            return frac


# Real-time scheduling of what is measured (measure --rt, the default as
# root): the machine may be loaded by others, and whether a remote flush
# interrupts depends on whether the program's other thread is running on
# the other CPU at that moment (flush_tlb_multi() skips a CPU that is not
# in the mm, and a KVM guest's PV flush a preempted vCPU).  Under normal
# scheduling a loaded machine time-slices the threads on one CPU and the
# counts fall (zero_cow: 3-2008 IPIs in three runs while others used
# 71-83% of the CPUs); SCHED_RR places each woken thread on a CPU running
# only normal tasks, so its threads overlap as on an idle machine.  perf
# runs above it (SCHED_FIFO) so that its buffers are drained.  Linux's RT
# throttling (sched_rt_runtime_us) still leaves others 5%.
PROG_RT = ('rr', 1)
PERF_RT = ('fifo', 2)


def rt_preexec(which: tuple[str, int] | None) -> Callable[[], None] | None:
    """A preexec_fn that puts the child under SCHED_RR/FIFO at @which."""
    if which is None:
        return None
    pol = os.SCHED_RR if which[0] == 'rr' else os.SCHED_FIFO
    prio = which[1]

    def set_rt() -> None:
        os.sched_setscheduler(0, pol, os.sched_param(prio))
    return set_rt


def rt_argv(which: tuple[str, int] | None) -> list[str]:
    """chrt's words for @which, to put before a command (none for None)."""
    return [] if which is None else ['chrt', '--' + which[0], str(which[1])]


def rt_usable() -> str | None:
    """None if this process may use real-time scheduling; else why not."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except (OSError, AttributeError) as e:
        return str(e)
    return None
