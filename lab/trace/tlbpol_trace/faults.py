# SPDX-License-Identifier: MIT
"""Page faults recorded beside strace (record.sh): `perf script` output of
the tracepoints exceptions:page_fault_user and page_fault_kernel, read
into (thread, wall-clock time, address, error code).

perf stamps its samples with CLOCK_MONOTONIC (`perf record -k
CLOCK_MONOTONIC`), strace -ttt with CLOCK_REALTIME.  The file's first
line gives the difference of the two clocks, which perf took itself at the
start of the recording (its "reference time" header), so that a fault's
time is on strace's clock:

    # tlbpol-faults v1 realtime-minus-monotonic-ns 1796320083270587000

then one `perf script --ns -F tid,time,event,trace` line per fault."""

import re
from typing import Iterable, List, NamedTuple

from .strace import nanoseconds

HEADER_RE = re.compile(r'^# tlbpol-faults v1 realtime-minus-monotonic-ns '
                       r'(-?\d+)\s*$')
FAULT_RE = re.compile(
    r'^\s*(?:\S+\s+)?(\d+)(?:/(\d+))?\s+(\d+)\.(\d+):\s+'
    r'exceptions:page_fault_(user|kernel):\s+address=(0x[0-9a-f]+)\S*\s+'
    r'ip=\S+\s+error_code=(0x[0-9a-f]+)')
# The highest user address of x86-64 with 4-level page tables (a kernel
# fault on a kernel address is not the program's).
USER_END = 1 << 47


class Fault(NamedTuple):
    tid: int            # the Linux thread (strace's pid)
    ts: int             # CLOCK_REALTIME, ns
    addr: int
    error: int          # x86 error code (uapi.PF_*)


class FaultsError(Exception):
    pass


def parse_faults(lines: Iterable[str]) -> List[Fault]:
    """The faults of a faults file, ordered by time (perf writes each
    CPU's buffer in turn, so the file is not)."""
    offset = None
    out = []
    for n, line in enumerate(lines):
        if n == 0:
            m = HEADER_RE.match(line)
            if not m:
                raise FaultsError('the faults file does not start with '
                                  '"# tlbpol-faults v1 realtime-minus-'
                                  'monotonic-ns N"')
            offset = int(m.group(1))
            continue
        m = FAULT_RE.match(line)
        if not m:
            continue
        tid = int(m.group(2) or m.group(1))
        addr = int(m.group(6), 16)
        if addr >= USER_END:
            continue
        ts = nanoseconds(m.group(3), m.group(4)) + (offset or 0)
        out.append(Fault(tid, ts, addr, int(m.group(7), 16)))
    if offset is None:
        raise FaultsError('empty faults file')
    out.sort(key=lambda f: f.ts)
    return out
