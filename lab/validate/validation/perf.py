# SPDX-License-Identifier: MIT
"""perf: the events that count the shootdowns a program's own tasks sent,
and where each came from (the kernel functions on its call chain)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from .config import PERF_WARMUP_S
from .machine import PERF_RT, rt_preexec

# (key in data/measured.txt, perf event, perf filter)
PerfEvent = tuple[str, str, str]
# {cause: count} for the program's tasks, {comm:cause: count} for all others
Causes = tuple[dict[str, int], dict[str, int]]
# the causes of each event, by its key
Attribution = dict[str, Causes]


def tracefs_format() -> str | None:
    for d in ('/sys/kernel/tracing', '/sys/kernel/debug/tracing'):
        p = os.path.join(d, 'events/tlb/tlb_flush/format')
        if os.path.exists(p):
            with open(p) as f:
                return f.read()
    return None


def send_ipi_reason() -> int:
    """TLB_REMOTE_SEND_IPI's value, from the tracepoint's format (the
    kernel's enum tlb_flush_reason: 4 in Linux 6.18)."""
    fmt = tracefs_format()
    if fmt:
        m = re.search(r'\{\s*(\d+),\s*"remote IPI send"\s*\}', fmt)
        if m:
            return int(m.group(1))
    return 4


def flush_tlb_func_addr() -> int | None:
    """flush_tlb_func's address, from /proc/kallsyms (root), or None."""
    try:
        with open('/proc/kallsyms') as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2] == 'flush_tlb_func':
                    addr = int(parts[0], 16)
                    return addr or None
    except OSError:
        pass
    return None


def perf_events() -> list[PerfEvent]:
    """The perf events that work here, as (key, event, filter):
    calls: tlb:tlb_flush reason TLB_REMOTE_SEND_IPI, once per
           flush_tlb_multi() call by the task, whether an IPI follows or not;
    own:   csd:csd_queue_cpu with func flush_tlb_func, once per remote CPU
           the task asks to run flush_tlb_func: one per increment of the
           target's TLB row, so the shootdowns this program's tasks sent."""
    if not shutil.which('perf') or tracefs_format() is None:
        return []
    evs = [('calls', 'tlb:tlb_flush', 'reason == %d' % send_ipi_reason())]
    fn = flush_tlb_func_addr()
    if fn:
        evs.append(('own', 'csd:csd_queue_cpu', 'func == 0x%x' % fn))
    ok = []
    for ev in evs:
        with tempfile.NamedTemporaryFile('r', suffix='.perf') as out:
            r = subprocess.run(['perf', 'stat', '-x,'] + perf_args([ev]) +
                               ['-o', out.name, '--', 'true'], capture_output=True)
            if r.returncode == 0 and parse_perf_stat(out.name, [ev]).get(ev[0]) is not None:
                ok.append(ev)
    return ok


def perf_args(evs: list[PerfEvent]) -> list[str]:
    argv = []
    for _, ev, flt in evs:
        argv += ['-e', ev, '--filter', flt]
    return argv


def parse_perf_stat(path: str, evs: list[PerfEvent]) -> dict[str, int | None]:
    res: dict[str, int | None] = {}
    with open(path) as f:
        for line in f:
            parts = line.strip().split(',')
            for key, ev, _ in evs:
                if len(parts) > 2 and parts[2] == ev:
                    res[key] = int(parts[0]) if parts[0].isdigit() else None
    return res


# Where a shootdown came from, by the kernel functions on its call chain
# (perf record -g of the events above).  The first
# rule whose function is on the chain wins.
CAUSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ('khugepaged', ('khugepaged', 'collapse_huge_page', 'hpage_collapse_scan_pmd')),
    ('numa-migrate', ('do_numa_page', 'migrate_misplaced_folio', 'migrate_misplaced_page')),
    ('numa-scan', ('task_numa_work', 'change_prot_numa')),
    ('compaction', ('kcompactd', 'compact_zone')),
    ('migrate', ('migrate_pages', 'move_pages', 'migrate_folio')),
    ('reclaim', ('shrink_folio_list', 'try_to_unmap_flush', 'try_to_unmap_flush_dirty',
                 'kswapd', 'damon_pa_pageout', 'reclaim_pages')),
    ('ksm', ('ksm_do_scan', 'ksm_scan_thread')),
    ('exec-old-mm', ('begin_new_exec', 'exec_mmap')),
    ('exit', ('do_exit', 'do_group_exit', 'mmput', '__mmput', 'exit_mmap')),
    ('fork', ('dup_mmap', 'copy_process')),
    ('munmap', ('__x64_sys_munmap', '__do_sys_munmap', '__vm_munmap')),
    ('madvise', ('__x64_sys_madvise', '__do_sys_madvise', 'do_madvise')),
    ('mprotect', ('__x64_sys_mprotect', '__do_sys_mprotect', '__x64_sys_pkey_mprotect',
                  '__do_sys_pkey_mprotect', 'do_mprotect_pkey')),
    ('mremap', ('__x64_sys_mremap', '__do_sys_mremap', 'do_mremap', 'move_vma')),
    ('brk', ('__x64_sys_brk', '__do_sys_brk')),
    ('mmap-fixed', ('__x64_sys_mmap', '__do_sys_mmap', 'ksys_mmap_pgoff', 'vm_mmap_pgoff')),
    ('cow-fault', ('do_wp_page', 'wp_page_copy')),
    ('fault', ('handle_mm_fault', 'exc_page_fault')),
    ('shmem/file', ('unmap_mapping_range', 'truncate_pagecache', 'invalidate_mapping_pages')),
)


def classify(stack: list[str]) -> str:
    funcs = set()
    for f in stack:
        funcs.add(f.split('+')[0].split('.')[0])
    for name, keys in CAUSES:
        if any(k in funcs for k in keys):
            return name
    for f in stack:
        for pre in ('__x64_sys_', '__do_sys_'):
            if f.startswith(pre):
                return f[len(pre):]
    return 'other:' + (stack[2] if len(stack) > 2 else '?')


FORK_RE = re.compile(r'PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)')
SAMPLE_RE = re.compile(r'^\s*(\S.*?)\s+(\d+)/(\d+)\s+([a-z_]+:[a-z_]+):')

# (comm, pid, event key) of a sample; its call chain follows it
Sample = tuple[str, int, str | None]


def perf_attribution(data_path: str, launcher_pid: int, evs: list[PerfEvent],
                     include_root: bool = False) -> Attribution:
    """{key: ({cause: n} for the program's tasks, {comm:cause: n} for all
    others)} for each event key, from a `perf record -a [-g]` file; the
    program's tasks are the descendants of launcher_pid (and it, with
    include_root)."""
    text = subprocess.run(['perf', 'script', '-i', data_path, '--show-task-events',
                           '-F', 'comm,pid,tid,event,ip,sym'],
                          capture_output=True, text=True, errors='replace').stdout
    key_of = {ev: key for key, ev, _ in evs}
    own_pids = {launcher_pid}
    res: Attribution = {key: ({}, {}) for key, _, _ in evs}
    cur: Sample | None = None   # the sample whose stack follows
    stack: list[str] = []

    def flush(cur: Sample | None, stack: list[str]) -> None:
        if cur is None or cur[2] is None or cur[2] not in res:
            return
        comm, pid, key = cur[0], cur[1], cur[2]
        own, others = res[key]
        cause = classify(stack)
        if pid in own_pids and (include_root or pid != launcher_pid) and \
                comm != 'perf-exec':
            own[cause] = own.get(cause, 0) + 1
        else:
            k = re.sub(r'[/:]\d.*$', '', comm) + ':' + cause
            others[k] = others.get(k, 0) + 1

    for line in text.splitlines():
        m = FORK_RE.search(line)
        if m:
            flush(cur, stack)
            cur, stack = None, []
            child, parent = int(m.group(1)), int(m.group(3))
            if parent in own_pids:
                own_pids.add(child)
            continue
        m = SAMPLE_RE.match(line)
        if m:
            flush(cur, stack)
            cur, stack = (m.group(1).strip(), int(m.group(2)), key_of.get(m.group(4))), []
            continue
        s = line.split()
        if cur is not None and len(s) >= 2 and re.fullmatch(r'[0-9a-f]+', s[0]):
            stack.append(s[1])
        elif not line.strip():
            flush(cur, stack)
            cur, stack = None, []
    flush(cur, stack)
    return res


def fmt_counts(d: dict[str, int], top: int = 8) -> str:
    items = sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))
    s = ','.join('%s:%d' % kv for kv in items[:top])
    if len(items) > top:
        s += ',rest:%d' % sum(v for _, v in items[top:])
    return s or 'none'


class PerfSession:
    """`perf record -a` of @evs into @data while a program runs: started
    before it (and given PERF_WARMUP_S to be recording), stopped with
    SIGINT after it, so that neither perf's start-up nor its exit is in the
    program's window, and the program is not perf's child."""

    def __init__(self, evs: list[PerfEvent], data: str, callgraph: bool = False,
                 rt: bool = False) -> None:
        self.evs, self.data = evs, data
        self.proc: subprocess.Popen[bytes] | None = None
        if evs:
            argv = ['perf', 'record', '-q', '-a'] + (['-g'] if callgraph else []) + \
                perf_args(evs) + ['-o', data]
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         preexec_fn=rt_preexec(PERF_RT if rt else None))
            time.sleep(PERF_WARMUP_S)
            if self.proc.poll() is not None:
                err = self.proc.stderr.read() if self.proc.stderr else b''
                raise RuntimeError('perf record failed: %s' % err.decode(errors='replace'))

    def stop(self, root_pid: int) -> Attribution | None:
        """{key: (own causes, others' causes)} for the tree under root_pid."""
        if not self.proc:
            return None
        self.proc.send_signal(signal.SIGINT)
        self.proc.communicate()
        res = perf_attribution(self.data, root_pid, self.evs, include_root=True)
        os.unlink(self.data)
        return res


# Page faults beside strace, as lab/trace/record-faults.sh records them
# (lab/trace/FORMAT.md "Page faults"): perf stamps with CLOCK_MONOTONIC
# (the perf here refuses `-k CLOCK_REALTIME`), strace -ttt with
# CLOCK_REALTIME, and the faults file's first line gives the difference of
# the two clocks, from perf's own "reference time" header when it has one.
FAULT_EVENTS = ('exceptions:page_fault_user', 'exceptions:page_fault_kernel')
REF_RE = re.compile(r'= (\d+)\.(\d+) \(TOD\) = (\d+)\.(\d+) \(monotonic\)')


def fault_args() -> list[str]:
    argv = ['-k', 'CLOCK_MONOTONIC']
    for ev in FAULT_EVENTS:
        argv += ['-e', ev]
    return argv


def faults_unusable(work: str) -> str | None:
    """None if perf can record the page-fault tracepoints here; else why not."""
    if not shutil.which('perf'):
        return 'perf is not installed (Debian: linux-perf)'
    out = os.path.join(work, 'faults-probe.perf')
    r = subprocess.run(['perf', 'record', '-q'] + fault_args() + ['-o', out, '--', 'true'],
                       capture_output=True, text=True, errors='replace')
    for p in (out, out + '.old'):
        if os.path.exists(p):
            os.unlink(p)
    if r.returncode != 0:
        return 'perf cannot record %s here: %s' % (FAULT_EVENTS[0],
                                                    (r.stderr.strip().splitlines() or ['?'])[0])
    return None


def record_faults_argv(perf_data: str) -> list[str]:
    """The perf command to put before strace: the faults of it and its
    tracees (the converter keeps the traced threads' only)."""
    return ['perf', 'record', '-q', '-m', '16M'] + fault_args() + ['-o', perf_data, '--']


def ns_of(sec: str, frac: str) -> int:
    return int(sec) * 10**9 + int(frac[:9].ljust(9, '0'))


def write_faults(perf_data: str, out: str, offset_ns: int) -> tuple[int, int]:
    """perf_data as a faults file (the tlbpol-faults v1 header, then `perf
    script --ns -F tid,time,event,trace`); (faults written, events perf
    lost).  @offset_ns is the clocks' difference read just before the
    recording, used when perf's header has no reference time."""
    hdr = subprocess.run(['perf', 'report', '-i', perf_data, '--header-only'],
                         capture_output=True, text=True, errors='replace').stdout
    for line in hdr.splitlines():
        m = REF_RE.search(line) if line.startswith('# reference time:') else None
        if m:
            offset_ns = ns_of(m.group(1), m.group(2)) - ns_of(m.group(3), m.group(4))
    text = subprocess.run(['perf', 'script', '-i', perf_data, '--ns', '-F',
                           'tid,time,event,trace'],
                          capture_output=True, text=True, errors='replace').stdout
    with open(out, 'w') as f:
        f.write('# tlbpol-faults v1 realtime-minus-monotonic-ns %d\n' % offset_ns)
        f.write(text)
    stats = subprocess.run(['perf', 'report', '-i', perf_data, '--stats'],
                           capture_output=True, text=True, errors='replace').stdout
    lost = sum(int(line.split()[-1]) for line in stats.splitlines()
               if 'LOST' in line and line.split()[-1].isdigit())
    return sum(1 for line in text.splitlines() if 'page_fault' in line), lost
