# SPDX-License-Identifier: MIT
"""This machine, as the measurements need it: the kernel's shootdown
count (the "TLB" row of /proc/interrupts), CPU times, and what it is."""

from __future__ import annotations

import datetime
import os
import subprocess
import time


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
    model = '?'
    for line in cmd_out(['lscpu'], '').splitlines():
        if line.startswith('Model name:'):
            model = line.split(':', 1)[1].strip()
    return {
        'kernel': os.uname().release,
        'cpu': model,
        'cpus': str(ncpus()),
    }


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
