#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Validate tlbpol-sim against the real kernel (issue 13, item 4; README.md).

    validate.py measure [--update] [--only NAMES] [--sim PATH] [--work DIR] ...
    validate.py replay  [--data DIR] [--sim PATH] [--check] [--cpu-ns]
    validate.py reconvert [--data DIR] [--sim PATH] [--update]
    validate.py profile [--update] [--sim PATH]
    validate.py stamps [--sim PATH]

measure: runs the real programs of programs() below.  For each: 3 runs
without strace, counting the kernel's TLB shootdown interrupts from the
"TLB" row of /proc/interrupts (sum over CPUs, delta across the run) and,
under `perf record -a` beside it, the shootdowns its own process tree sent
(csd:csd_queue_cpu of flush_tlb_func) and its flush calls (tlb:tlb_flush
reason TLB_REMOTE_SEND_IPI); after each run an idle baseline window of
the same length; one more run under `perf record -a -g` that says where
the shootdowns came from (system call, exit, fault, kernel thread); one
run under strace, converted by lab/trace/strace2trace.py; then replays.
With --update it writes data/ (measured.txt, the traces, the raw
recordings compressed), else everything goes to the work directory.

replay: replays the traces in data/ with tlbpol-sim (`linux` policy on
the recorded machine's CPU count, then every policy) and prints predicted
against measured.  With --check it exits 1 when a row is out of bounds
(and not listed in data/expected-out.txt) or any policy has a violation.

profile: measures the machine profile alone (measure does it too, after
the programs): ipi_rtt -d -g, 3 runs, into tlbpol-sim costs; --update
writes data/machine.cost.

reconvert: converts data/raw/*.strace.xz again with the current
converter, into the work directory (--update: into data/), and replays.

Standard library only (and strace, perf, the programs themselves).
"""

import argparse
import csv
import datetime
import io
import lzma
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
DATA = os.path.join(HERE, 'data')
MAX_EVENTS = 50000
RUNS = 3


# Bounds, as issue 13 says: the linux prediction within 2x of the
# measured count; for tlb_flush2, IPIs per operation within 20%.
FACTOR = 2.0
FLOOR = 4           # counts below this are taken as this before the ratio
PER_OP_TOL = 0.20
PER_OP_FLOOR = 0.01  # IPIs per operation below this are taken as this


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- machine

def tlb_row():
    """The "TLB" row of /proc/interrupts: shootdown IPIs received, summed."""
    with open('/proc/interrupts') as f:
        lines = f.read().splitlines()
    ncpu = len(lines[0].split())
    for line in lines[1:]:
        parts = line.split()
        if parts and parts[0] == 'TLB:':
            return sum(int(x) for x in parts[1:1 + ncpu])
    raise RuntimeError('no TLB row in /proc/interrupts')


def cpu_times():
    """(busy, steal, total) jiffies over all CPUs, from /proc/stat."""
    with open('/proc/stat') as f:
        v = [int(x) for x in f.readline().split()[1:]]
    v += [0] * (8 - len(v))
    user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
    busy = user + nice + system + irq + softirq
    return busy, steal, busy + idle + iowait + steal


def ncpus():
    return os.cpu_count() or 1


def cmd_out(argv, default='?'):
    try:
        return subprocess.run(argv, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return default


def machine():
    model = '?'
    for line in cmd_out(['lscpu'], '').splitlines():
        if line.startswith('Model name:'):
            model = line.split(':', 1)[1].strip()
    return {
        'kernel': os.uname().release,
        'cpu': model,
        'cpus': str(ncpus()),
    }


def loadavg():
    with open('/proc/loadavg') as f:
        return f.read().split()[0]


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def wait_quiet(limit_s, busy_max=0.20):
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


# ---------------------------------------------------------------- perf

def tracefs_format():
    for d in ('/sys/kernel/tracing', '/sys/kernel/debug/tracing'):
        p = os.path.join(d, 'events/tlb/tlb_flush/format')
        if os.path.exists(p):
            with open(p) as f:
                return f.read()
    return None


def send_ipi_reason():
    """TLB_REMOTE_SEND_IPI's value, from the tracepoint's format (the
    kernel's enum tlb_flush_reason: 4 in Linux 6.18)."""
    fmt = tracefs_format()
    if fmt:
        m = re.search(r'\{\s*(\d+),\s*"remote IPI send"\s*\}', fmt)
        if m:
            return int(m.group(1))
    return 4


def flush_tlb_func_addr():
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


def perf_events():
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


def perf_args(evs):
    argv = []
    for _, ev, flt in evs:
        argv += ['-e', ev, '--filter', flt]
    return argv


def parse_perf_stat(path, evs):
    res = {}
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
CAUSES = [
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
]


def classify(stack):
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


def perf_attribution(data_path, launcher_pid, evs, include_root=False):
    """{key: ({cause: n} for the program's tasks, {comm:cause: n} for all
    others)} for each event key, from a `perf record -a [-g]` file; the
    program's tasks are the descendants of launcher_pid (and it, with
    include_root)."""
    text = subprocess.run(['perf', 'script', '-i', data_path, '--show-task-events',
                           '-F', 'comm,pid,tid,event,ip,sym'],
                          capture_output=True, text=True, errors='replace').stdout
    key_of = {ev: key for key, ev, _ in evs}
    own_pids = {launcher_pid}
    res = {key: ({}, {}) for key, _, _ in evs}
    cur = None          # (comm, pid, key) of the sample whose stack follows
    stack = []

    def flush():
        if cur is None or cur[2] not in res:
            return
        comm, pid, key = cur
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
            flush()
            cur, stack = None, []
            child, parent = int(m.group(1)), int(m.group(3))
            if parent in own_pids:
                own_pids.add(child)
            continue
        m = SAMPLE_RE.match(line)
        if m:
            flush()
            cur, stack = (m.group(1).strip(), int(m.group(2)), key_of.get(m.group(4))), []
            continue
        s = line.split()
        if cur is not None and len(s) >= 2 and re.fullmatch(r'[0-9a-f]+', s[0]):
            stack.append(s[1])
        elif not line.strip():
            flush()
            cur, stack = None, []
    flush()
    return res


def fmt_counts(d, top=8):
    items = sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))
    s = ','.join('%s:%d' % kv for kv in items[:top])
    if len(items) > top:
        s += ',rest:%d' % sum(v for _, v in items[top:])
    return s or 'none'


# ---------------------------------------------------------------- programs

class Program:
    """A real program: cmd is what is measured, trace_cmd what strace
    records (the same unless the full run would make a huge trace)."""

    def __init__(self, name, desc, cmd, trace_cmd=None, prepare=None, per_run=None,
                 ops=None, trace_ops=None, stdout_null=False, group=None):
        self.name, self.desc, self.cmd = name, desc, cmd
        self.group = group
        self.trace_cmd = trace_cmd or cmd
        self.prepare, self.per_run = prepare, per_run
        self.ops, self.trace_ops = ops, trace_ops
        self.stdout_null = stdout_null


def text_data(work):
    """32 MiB of words, random.Random(42): the compressors' and sort's input."""
    path = os.path.join(work, 'text.dat')
    if os.path.exists(path):
        return path
    import random
    rng = random.Random(42)
    letters = 'abcdefghijklmnopqrstuvwxyz'
    vocab = [''.join(rng.choices(letters, k=rng.randrange(3, 11))) for _ in range(5000)]
    n, size, out = 0, 32 << 20, []
    with open(path, 'w') as f:
        while n < size:
            line = ' '.join(rng.choices(vocab, k=rng.randrange(8, 16))) + '\n'
            out.append(line)
            n += len(line)
            if len(out) >= 10000:
                f.write(''.join(out))
                out = []
        f.write(''.join(out))
    return path


def prep_tf2(work):
    exe = os.path.join(work, 'tlb_flush2')
    if not os.path.exists(exe):
        subprocess.run([os.environ.get('CC', 'cc'), '-O2', '-pthread', '-o', exe,
                        os.path.join(HERE, 'tlb_flush2.c')], check=True)


def instrument_blind(work):
    """None if the TLB row of /proc/interrupts sees this kernel's remote
    flushes; else why not.  tlb_flush2 with 2 threads makes about one
    remote flush per operation on any kernel that knows the other thread's
    CPU may cache the address space (Linux 6.x measured 0.94-0.99 on an
    Intel KVM guest).  Where remote flushes are not interrupts -- a
    paravirtual hypercall (PVM's PVM_HC_FLUSH_TLB_MULTI, Hyper-V's
    HvFlushVirtualAddressList), AMD INVLPGB broadcasts (Linux 6.15+) --
    the row stays still, and every "measured" count would be 0."""
    if ncpus() < 2:
        return 'one CPU: no remote flush at all'
    prep_tf2(work)
    before = tlb_row()
    r = subprocess.run([os.path.join(work, 'tlb_flush2'), '-t', '2', '-s', '1'],
                       capture_output=True, text=True)
    seen = tlb_row() - before
    ops, _ = tf2_ops(r.stdout)
    if not ops or seen * 100 >= ops:
        return None
    how = ''
    for line in cmd_out(['dmesg'], '').splitlines():
        if 'remote tlb flush' in line.lower() or 'invlpgb' in line.lower():
            how = ' (the kernel says: %s)' % line.split(']', 1)[-1].strip()
            break
    return ('tlb_flush2 -t 2 did %d operations and the TLB row of /proc/interrupts moved '
            'by %d: this kernel flushes other CPUs\' TLBs without interrupts%s, so the '
            'row cannot count its shootdowns' % (ops, seen, how))


def prep_java(work):
    d = os.path.join(work, 'java')
    if not os.path.exists(os.path.join(d, 'JavaWorkers.class')):
        os.makedirs(d, exist_ok=True)
        subprocess.run(['javac', '-d', d, os.path.join(HERE, 'JavaWorkers.java')], check=True)


def prep_build_src(work):
    src = os.path.join(work, 'build-src')
    if not os.path.exists(src):
        os.makedirs(src)
        archive = subprocess.run(['git', '-C', ROOT, 'archive', 'HEAD'], check=True,
                                 capture_output=True).stdout
        subprocess.run(['tar', '-x', '-C', src], input=archive, check=True)


def per_run_build(work):
    """A fresh build directory (meson setup, not measured) for each run."""
    b = os.path.join(work, 'build-b')
    shutil.rmtree(b, ignore_errors=True)
    subprocess.run(['meson', 'setup', b, os.path.join(work, 'build-src'), '-Dtests=false'],
                   check=True, capture_output=True)


def prep_text(work):
    text_data(work)


def tf2_ops(out):
    """(operations, operations per second) as tlb_flush2 printed them: its
    own clock, from the start gate to the last join (not perf's start-up)."""
    m = re.search(r'ops=(\d+) seconds=\S+ ops_per_s=(\d+)', out)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


TF2_TRACE_ITERS = 2000


# ---------------------------------------------------------------------------
# The machine profile: what a shootdown costs on this machine, measured with
# ipi_rtt -d -g (lab/validate/ipi_rtt.c: one page written and
# MADV_DONTNEED'd in a loop while a thread of the process spins on the other
# CPU, timing each interruption it suffers), turned into tlbpol-sim costs
# (--cost-file).  The tlb_flush2 throughput is then modelled with those
# costs: the measurement is of a 1-page round trip alone, the prediction of
# 16-page loops on both CPUs at once.

PROFILE = 'machine.cost'


def sim_costs(sim):
    """tlbpol-sim's cost model as it prints it (--costs): name -> value."""
    r = subprocess.run([sim, '--costs'], capture_output=True, text=True)
    out = {}
    for line in r.stdout.splitlines():
        m = re.match(r'\s+([a-z_0-9]+)\s+([0-9.eE+-]+)\s', line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def profile_costs(rtt, recv, c):
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


def measure_profile(work, sim):
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
        kv = dict(x.split('=') for x in r.stdout.split())
        runs.append({k: float(v) for k, v in kv.items()})
        log('  ipi_rtt -d -g run %d: %s' % (i, r.stdout.strip()))
    med = lambda k: sorted(x[k] for x in runs)[len(runs) // 2]
    rtt, recv = med('rtt_ns'), med('recv_ns')
    costs = profile_costs(rtt, recv, sim_costs(sim))
    mach = machine()
    lines = [
        '# lab/validate/data/machine.cost: tlbpol-sim costs (--cost-file) for the',
        '# machine lab/validate measured, written by validate.py measure from',
        '# lab/validate/ipi_rtt.c -d -g, %d runs, medians (validate.py profile_costs()' % RUNS,
        '# says how each cost follows from them).',
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


def model_tf2(sim, profile):
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


def programs(work):
    w = work
    py = os.path.join(HERE, 'pyalloc.py')
    js = os.path.join(HERE, 'node-workers.js')
    text = os.path.join(w, 'text.dat')
    tf2 = os.path.join(w, 'tlb_flush2')
    return [
        Program('tlb_flush2-1t', 'tlb_flush2 pattern (lab/validate/tlb_flush2.c), 1 thread, 2 s',
                [tf2, '-t', '1', '-s', '2'], [tf2, '-t', '1', '-n', str(TF2_TRACE_ITERS)],
                prepare=prep_tf2, ops=tf2_ops, trace_ops=TF2_TRACE_ITERS,
                group='tlb_flush2'),
        Program('tlb_flush2-2t', 'tlb_flush2 pattern, 2 threads, 2 s',
                [tf2, '-t', '2', '-s', '2'], [tf2, '-t', '2', '-n', str(TF2_TRACE_ITERS)],
                prepare=prep_tf2, ops=tf2_ops, trace_ops=2 * TF2_TRACE_ITERS,
                group='tlb_flush2'),
        Program('python-threads', 'CPython 3 (/usr/bin/python3), 4 threads building and '
                'dropping lists of 200000 objects and 64 bytearrays of 64 KiB-1 MiB',
                ['/usr/bin/python3', py, '4', '20']),
        Program('java-workers', 'OpenJDK 17, a fixed pool of 4 workers, 400 allocating tasks '
                '(lab/validate/JavaWorkers.java, compiled at run time)',
                ['java', '-cp', os.path.join(w, 'java'), 'JavaWorkers', '4', '400'],
                prepare=prep_java),
        Program('node-workers', 'node, 4 worker_threads allocating objects and ArrayBuffers',
                ['node', js, '4', '20']),
        Program('ninja-build', 'ninja -j2: a from-scratch build of this repository '
                '(git archive HEAD; meson setup -Dtests=false, not measured)',
                ['ninja', '-C', os.path.join(w, 'build-b'), '-j2'],
                prepare=prep_build_src, per_run=per_run_build, stdout_null=True),
        Program('xz-T2', 'xz -T2 -1 of 32 MiB of generated words (seed 42) to /dev/null',
                ['xz', '-T2', '-1', '-c', text], prepare=prep_text, stdout_null=True),
        Program('zstd-T2', 'zstd -T2 -12 of the same 32 MiB to /dev/null',
                ['zstd', '-q', '-T2', '-12', '-c', text], prepare=prep_text, stdout_null=True),
        Program('sort-parallel', 'sort --parallel=2 -S 256M of the same 32 MiB (LC_ALL=C) '
                'to /dev/null',
                ['env', 'LC_ALL=C', 'sort', '--parallel=2', '-S', '256M', text],
                prepare=prep_text, stdout_null=True),
    ]


# ---------------------------------------------------------------- measuring

PERF_WARMUP_S = 1.0     # perf record -a: time to be recording before the program starts


class PerfSession:
    """`perf record -a` of @evs into @data while a program runs: started
    before it (and given PERF_WARMUP_S to be recording), stopped with
    SIGINT after it, so that neither perf's start-up nor its exit is in the
    program's window, and the program is not perf's child."""

    def __init__(self, evs, data, callgraph=False):
        self.evs, self.data, self.proc = evs, data, None
        if evs:
            argv = ['perf', 'record', '-q', '-a'] + (['-g'] if callgraph else []) + \
                perf_args(evs) + ['-o', data]
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(PERF_WARMUP_S)
            if self.proc.poll() is not None:
                raise RuntimeError('perf record failed: %s'
                                   % self.proc.stderr.read().decode(errors='replace'))

    def stop(self, root_pid):
        """{key: (own causes, others' causes)} for the tree under root_pid."""
        if not self.proc:
            return None
        self.proc.send_signal(signal.SIGINT)
        self.proc.communicate()
        res = perf_attribution(self.data, root_pid, self.evs, include_root=True)
        os.unlink(self.data)
        return res


def launch(argv, out_path, stdout_null):
    """Run @argv; (exit code, its rusage: it and its descendants)."""
    with open(out_path, 'w') as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL if stdout_null else out,
                                stderr=out if stdout_null else subprocess.STDOUT)
        _, status, ru = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.pid, proc.returncode, ru


def run_once(p, work, tag, evs):
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
    perf = PerfSession(evs, os.path.join(work, '%s.%s.perf.data' % (p.name, tag)))
    b0, s0, t0j = cpu_times()
    a = tlb_row()
    t0 = time.monotonic()
    pid, rc, ru = launch(list(p.cmd), out_path, p.stdout_null)
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
    res = {'tlb': b - a, 'seconds': secs, 'cpu': cpu, 'others': others, 'steal': steal}
    for key, (mine, theirs) in (counts or {}).items():
        res[key] = sum(mine.values())
        res[key + '_others'] = sum(theirs.values())
    if p.ops:
        with open(out_path) as f:
            res['ops'], res['ops_per_s'] = p.ops(f.read())
    # the idle baseline: the same length of time, nothing of ours running
    a = tlb_row()
    time.sleep(secs)
    res['baseline'] = tlb_row() - a
    return res


def attribution_run(p, work, evs):
    """One run under `perf record -a -g`: where the shootdowns came from."""
    if p.per_run:
        p.per_run(work)
    perf = PerfSession(evs, os.path.join(work, '%s.perf.data' % p.name), callgraph=True)
    a = tlb_row()
    pid, _, _ = launch(list(p.cmd), os.path.join(work, '%s.attrib.out' % p.name),
                       p.stdout_null)
    tlb = tlb_row() - a
    return perf.stop(pid), tlb


def strace_options():
    """strace's options, from the one place that says what the converter
    needs (lab/trace/strace-options, which record.sh reads too)."""
    with open(os.path.join(ROOT, 'lab', 'trace', 'strace-options')) as f:
        return shlex.split(f.read()), 'lab/trace/strace-options'


def converter(work, which='tree'):
    """The converter: 'tree' the working tree's lab/trace/strace2trace.py
    (HEAD's when that one fails its self-test: another change may be
    half-way through it), 'head' the committed one, or a path."""
    conv = os.path.join(ROOT, 'lab', 'trace', 'strace2trace.py')
    if which not in ('tree', 'head'):
        return os.path.abspath(which), which
    if which == 'tree':
        r = subprocess.run([sys.executable, conv, '--self-test'], capture_output=True)
        if r.returncode == 0:
            return conv, 'the working tree\'s'
        log('validate: the working tree strace2trace.py fails its self-test; using HEAD\'s')
    head = os.path.join(work, 'strace2trace-HEAD.py')
    src = subprocess.run(['git', '-C', ROOT, 'show', 'HEAD:lab/trace/strace2trace.py'],
                         check=True, capture_output=True).stdout
    with open(head, 'wb') as f:
        f.write(src)
    commit = cmd_out(['git', '-C', ROOT, 'log', '-1', '--format=%h',
                      'HEAD', '--', 'lab/trace/strace2trace.py'])
    return head, 'as committed in %s' % commit


def convert(conv, raw, out, comments):
    argv = [sys.executable, conv, '-n', str(MAX_EVENTS)]
    for c in comments:
        argv += ['-c', c]
    argv += ['-o', out, raw]
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError('strace2trace.py failed on %s: %s' % (raw, r.stderr.strip()))
    return r.stderr.strip()


def trace_events(path):
    with open(path) as f:
        for line in f:
            if not line.startswith('#'):
                break
            m = re.match(r'#\s*events:\s*(\d+)', line)
            if m:
                return int(m.group(1))
    n = 0
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith('#'):
                n += 1
    return n


def record_trace(p, work, conv, conv_note, mach):
    opts, opts_from = strace_options()
    raw = os.path.join(work, p.name + '.strace')
    if p.per_run:
        p.per_run(work)
    argv = ['strace'] + opts + ['-o', raw] + list(p.trace_cmd)
    when = utc_now()
    with open(os.path.join(work, '%s.strace.out' % p.name), 'w') as out:
        r = subprocess.run(argv, stdout=subprocess.DEVNULL if p.stdout_null else out,
                           stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise RuntimeError('%s under strace exited %d' % (p.name, r.returncode))
    trace = os.path.join(work, p.name + '.trace')
    cmd = ' '.join(shlex.quote(a) for a in argv)
    note = convert(conv, raw, trace, [
        'command: ' + cmd.replace(work, '$WORK').replace(ROOT, '$REPO'),
        'program: ' + p.desc,
        'recorded: %s UTC, Linux %s, %s, %s CPUs' % (when, mach['kernel'], mach['cpu'],
                                                  mach['cpus']),
        'strace options: from ' + opts_from,
        'converted: %s UTC by lab/trace/strace2trace.py (%s) -n %d'
        % (utc_now(), conv_note, MAX_EVENTS),
    ])
    return raw, trace, cmd, note


def rng(vals):
    vals = [v for v in vals if v is not None]
    return (min(vals), max(vals)) if vals else (None, None)


def csv_list(vals, fmt='%s'):
    return ','.join('na' if v is None else fmt % v for v in vals)


def quiet_run(p, work, tag, evs, args):
    """run_once() after waiting for a quiet second; a run during which
    other processes used more than --max-others of the CPUs is done again
    (--retries times at most; the last is kept)."""
    for attempt in range(1 + args.retries):
        busy = wait_quiet(args.quiet_wait)
        r = run_once(p, work, tag, evs)
        r['busy_before'] = busy
        r['retries'] = attempt
        if r['others'] <= args.max_others:
            break
        log('  %s run %s: others used %.0f%% of the CPUs%s'
            % (p.name, tag, 100 * r['others'], ', again' if attempt < args.retries else ', kept'))
    return r


def measure(args):
    work = args.work or tempfile.mkdtemp(prefix='tlbpol-validate.')
    os.makedirs(work, exist_ok=True)
    log('validate: work directory %s' % work)
    mach = machine()
    evs = [] if args.no_perf else perf_events()
    log('validate: %s, Linux %s, %s CPUs; perf: %s'
        % (mach['cpu'], mach['kernel'], mach['cpus'],
           '; '.join('%s %s' % (ev, flt) for _, ev, flt in evs) or 'not used'))
    blind = instrument_blind(work)
    if blind:
        log('validate: %s.  Nothing measured; data/ holds the last machine\'s counts '
            '(--replay-only replays them).' % blind)
        return False
    conv, conv_note = converter(work, args.converter)
    progs = programs(work)
    if args.only:
        want = args.only.split(',')
        unknown = set(want) - {p.name for p in progs}
        if unknown:
            raise SystemExit('validate: unknown program(s) %s; there are %s'
                             % (','.join(sorted(unknown)), ','.join(p.name for p in progs)))
        progs = [p for p in progs if p.name in want]
    # Programs of one group (tlb_flush2 at 1 and 2 threads) are run in
    # turn, so that their throughputs are compared under the same load.
    groups = []
    for p in progs:
        if groups and p.group and groups[-1][0].group == p.group:
            groups[-1].append(p)
        else:
            groups.append([p])
    rows = []
    for group in groups:
        runs = {p.name: [] for p in group}
        start = {}
        for p in group:
            if p.prepare:
                p.prepare(work)
            start[p.name] = (utc_now(), loadavg())
        for i in range(RUNS):
            for p in group:
                r = quiet_run(p, work, str(i), evs, args)
                runs[p.name].append(r)
                log('  %s run %d: TLB row %d in %.2f s (own %s, calls %s, others\' %s; '
                    'baseline %d; others used %.0f%% of the CPUs, steal %.1f%%)%s'
                    % (p.name, i, r['tlb'], r['seconds'], r.get('own', 'na'),
                       r.get('calls', 'na'), r.get('own_others', 'na'), r['baseline'],
                       100 * r['others'],
                       100 * r['steal'], ' ops=%s' % r['ops'] if 'ops' in r else ''))
        # Throughput is measured again without perf (perf record's writing
        # of every event slows tlb_flush2 by up to a third).
        plain = {p.name: [] for p in group if p.ops}
        for i in range(RUNS if plain else 0):
            for p in group:
                if p.ops:
                    r = quiet_run(p, work, 'plain%d' % i, [], args)
                    plain[p.name].append(r)
                    log('  %s plain run %d: TLB row %d, ops=%s ops/s=%s (others used %.0f%%)'
                        % (p.name, i, r['tlb'], r['ops'], r['ops_per_s'], 100 * r['others']))
        for p in group:
            rows.append(finish(p, runs[p.name], start[p.name], work, evs, args, conv,
                               conv_note, mach, plain.get(p.name)))
    out_dir = DATA if args.update else work
    write_data(out_dir, rows, merge=bool(args.only) and args.update)
    if not args.only or 'tlb_flush2-2t' in args.only.split(','):
        wait_quiet(args.quiet_wait)
        text = measure_profile(work, find_sim(args))
        if text:
            with open(os.path.join(out_dir, PROFILE), 'w') as f:
                f.write(text)
    log('validate: data written to %s' % out_dir)
    return replay(out_dir, find_sim(args), check=args.check, with_cpu_ns=args.cpu_ns)


def finish(p, runs, start, work, evs, args, conv, conv_note, mach, plain=None):
    """The attribution run and the strace recording of @p; its data row."""
    attrib, attrib_tlb = None, None
    if evs and not args.no_attrib:
        wait_quiet(args.quiet_wait)
        attrib, attrib_tlb = attribution_run(p, work, evs)
        for key in attrib:
            log('  %s perf record -a -g, %s: own %s; others %s (TLB row %d)'
                % (p.name, key, fmt_counts(attrib[key][0]), fmt_counts(attrib[key][1], 5),
                   attrib_tlb))
    raw, trace, tcmd, note = record_trace(p, work, conv, conv_note, mach)
    if note:
        log('  strace2trace: ' + note.replace('\n', '\n  strace2trace: '))
    lo, hi = rng([r['tlb'] for r in runs])
    row = {
        'program': p.name,
        'measured_min': str(lo), 'measured_max': str(hi),
        'runs': csv_list([r['tlb'] for r in runs]),
    }
    for key, _, _ in evs:
        row[key] = csv_list([r.get(key) for r in runs])
    if any('own_others' in r for r in runs):
        row['own_others'] = csv_list([r.get('own_others') for r in runs])
    row.update({
        'baseline': csv_list([r['baseline'] for r in runs]),
        'cpu_s': csv_list([r['cpu'] for r in runs], '%.3f'),
        'seconds': csv_list([r['seconds'] for r in runs], '%.3f'),
        'others_cpu': csv_list([100 * r['others'] for r in runs], '%.0f%%'),
        'steal': csv_list([100 * r['steal'] for r in runs], '%.1f%%'),
        'retries': csv_list([r['retries'] for r in runs]),
        'load': start[1],
    })
    if p.ops:
        row['ops'] = csv_list([r.get('ops') for r in runs])
        row['ops_per_s'] = csv_list([r.get('ops_per_s') for r in runs])
        if plain:
            row['plain_runs'] = csv_list([r['tlb'] for r in plain])
            row['plain_ops'] = csv_list([r.get('ops') for r in plain])
            row['plain_ops_per_s'] = csv_list([r.get('ops_per_s') for r in plain])
            row['plain_others_cpu'] = csv_list([100 * r['others'] for r in plain], '%.0f%%')
        row['trace_ops'] = str(p.trace_ops)
    if attrib:
        for key in attrib:
            row['attrib_' + key] = fmt_counts(attrib[key][0], 12)
            row['attrib_others_' + key] = fmt_counts(attrib[key][1], 6)
        row['attrib_tlb'] = str(attrib_tlb)
    row['trace'] = p.name + '.trace'
    row['events'] = str(trace_events(trace))
    row['date'] = start[0]
    row.update(mach)
    row['desc'] = p.desc
    row['trace_command'] = tcmd.replace(work, '$WORK').replace(ROOT, '$REPO')
    row['command'] = ' '.join(shlex.quote(a) for a in p.cmd).replace(
        work, '$WORK').replace(ROOT, '$REPO')
    return row, raw, trace


# ---------------------------------------------------------------- data

def write_row(row):
    return '\t'.join('%s=%s' % (k, str(v).replace('\t', ' ')) for k, v in row.items())


def read_rows(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if not line or line.startswith('#'):
                continue
            row = {}
            for field in line.split('\t'):
                k, _, v = field.partition('=')
                row[k] = v
            rows.append(row)
    return rows


HEADER = """\
# lab/validate/data/measured.txt: the kernel's TLB shootdowns, measured by
# lab/validate/run.sh --update; one line per program, tab-separated key=value.
# perf record -a runs beside the program (started 1 s before it, stopped after).
#   runs, measured_min, measured_max
#               the "TLB" row of /proc/interrupts (shootdown IPIs received, summed
#               over CPUs), delta across each of 3 runs without strace
#   own         in the same runs: csd:csd_queue_cpu events
#               with func flush_tlb_func in the program's process tree, i.e. the
#               TLB row increments its own tasks caused (exit-time flushes included)
#   calls       tlb:tlb_flush reason TLB_REMOTE_SEND_IPI in its tasks: one per
#               flush_tlb_multi() call, IPI or not (a lazy CPU is skipped)
#   own_others  the csd events of every other task in the same window
#   baseline    the TLB row over an idle window of the same length after each run
#   cpu_s       the program's CPU time (user + system, it and its children) per run
#   others_cpu  CPU used by other processes during each run, of all CPUs; a run
#               where it exceeded 25% was done again (retries)
#   attrib_*    perf record -a -g, one more run: own IPIs (attrib_own) and flush
#               calls (attrib_calls) by call chain; attrib_others_* other tasks'
#   plain_*     tlb_flush2 only: 3 more runs without perf, for its throughput
#   events      events in the trace (strace2trace.py -n 50000); trace_command its
#               recording; tlb_flush2 records a short run (trace_ops operations)
"""


def write_data(out_dir, rows, merge=False):
    os.makedirs(os.path.join(out_dir, 'raw'), exist_ok=True)
    path = os.path.join(out_dir, 'measured.txt')
    old = read_rows(path) if merge and os.path.exists(path) else []
    new_names = {r['program'] for r, _, _ in rows}
    keep = [r for r in old if r['program'] not in new_names]
    for row, raw, trace in rows:
        dst = os.path.join(out_dir, row['trace'])
        if os.path.abspath(trace) != os.path.abspath(dst):
            shutil.copyfile(trace, dst)
        with open(raw, 'rb') as f, lzma.open(os.path.join(out_dir, 'raw', row['program'] +
                                                          '.strace.xz'), 'wb',
                                             preset=9) as g:
            shutil.copyfileobj(f, g)
    allrows = keep + [r for r, _, _ in rows]
    order = [p.name for p in programs('/')]
    allrows.sort(key=lambda r: order.index(r['program']) if r['program'] in order else 99)
    with open(path, 'w') as f:
        f.write(HEADER)
        for r in allrows:
            f.write(write_row(r) + '\n')


def read_expected_out(data_dir):
    path = os.path.join(data_dir, 'expected-out.txt')
    out = {}
    if not os.path.exists(path):
        path = os.path.join(DATA, 'expected-out.txt')
        if not os.path.exists(path):
            return out
    with open(path) as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if line:
                name, _, why = line.partition(' ')
                out[name] = why.strip()
    return out


# ---------------------------------------------------------------- replay

def find_sim(args):
    if getattr(args, 'sim', None):
        return args.sim
    if os.environ.get('TLBPOL_SIM'):
        return os.environ['TLBPOL_SIM']
    build = getattr(args, 'build', None) or os.environ.get('TLBPOL_BUILD') or \
        os.path.join(ROOT, 'build')
    return os.path.join(build, 'lab', 'sim', 'tlbpol-sim')


SIM_EXTRA = []      # --sim-arg options, for every replay


def sim_supports(sim, option):
    r = subprocess.run([sim, '--help'], capture_output=True, text=True)
    return option in r.stdout + r.stderr


def cpu_ns(row):
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


def sim_csv(sim, trace, cpus, policy=None, extra=()):
    argv = [sim, 'trace', trace, '--cpus', str(cpus), '--nodes', '1', '--csv'] + \
        list(extra) + SIM_EXTRA
    if policy:
        argv += ['--policy', policy]
    r = subprocess.run(argv, capture_output=True, text=True)
    rows = list(csv.DictReader(io.StringIO(r.stdout))) if r.stdout.startswith('scenario') \
        else []
    return r.returncode, rows, r.stderr.strip()


def ints(s):
    return [int(x) for x in s.split(',') if x not in ('', 'na')]


def floats(s):
    return [float(x) for x in s.split(',') if x not in ('', 'na')]


def rangestr(lo, hi, fmt='%d'):
    if lo is None:
        return 'na'
    return (fmt % lo) if lo == hi else ((fmt + '-' + fmt) % (lo, hi))


def measured_counts(row):
    """The counts the bound is checked against: the program's own
    shootdowns (csd:csd_queue_cpu of flush_tlb_func in its tasks: what its
    tasks added to the TLB row) when they were recorded, else the TLB row."""
    if row.get('own', 'na') not in ('', 'na') and 'na' not in row['own'].split(','):
        return ints(row['own']), 'own'
    return ints(row['runs']), 'TLB row'


def check_row(row, pred):
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
    mid = sorted(counts)[len(counts) // 2]
    return ok, (pred / mid if mid else None), (
        'predicted %d, measured (%s) %d-%d; bound: within %gx, counts under %d taken as %d'
        % (pred, what, lo, hi, FACTOR, FLOOR, FLOOR))


def first_line(path):
    with open(path) as f:
        return f.readline().rstrip('\n')


_V1_DIR = []


def v1_trace(data_dir, row):
    """data/raw/PROGRAM.strace.xz converted with strace2trace.py --v1 into
    a temporary directory, or None if that cannot be done."""
    raw_xz = os.path.join(data_dir, 'raw', row['program'] + '.strace.xz')
    if not os.path.exists(raw_xz):
        return None
    if not _V1_DIR:
        _V1_DIR.append(tempfile.mkdtemp(prefix='tlbpol-validate-v1.'))
    work = _V1_DIR[0]
    raw = os.path.join(work, row['program'] + '.strace')
    out = os.path.join(work, row['program'] + '.v1.trace')
    with lzma.open(raw_xz, 'rb') as f, open(raw, 'wb') as g:
        shutil.copyfileobj(f, g)
    conv, _ = converter(work, 'tree')
    r = subprocess.run([sys.executable, conv, '--v1', '-n', str(MAX_EVENTS), '-o', out, raw],
                       capture_output=True, text=True)
    os.unlink(raw)
    return out if r.returncode == 0 else None


def replay(data_dir, sim, check, with_cpu_ns=False):
    rows = read_rows(os.path.join(data_dir, 'measured.txt'))
    expected = read_expected_out(data_dir)
    if not os.access(sim, os.X_OK):
        log('validate: no tlbpol-sim at %s (--sim PATH, --build DIR, TLBPOL_SIM or '
            'TLBPOL_BUILD)' % sim)
        return False
    if with_cpu_ns and not sim_supports(sim, '--trace-cpu-ns'):
        log('validate: %s has no --trace-cpu-ns; replaying without it' % sim)
        with_cpu_ns = False
    print('replay: %s trace DATA/PROGRAM.trace --cpus N --nodes 1 --csv%s%s '
          '[--policy linux]' % (sim, ' --trace-cpu-ns NS' if with_cpu_ns else '',
                                ''.join(' ' + a for a in SIM_EXTRA)))
    failures, notes, table, byname = [], [], [], {}
    for row in rows:
        name = row['program']
        trace = os.path.join(data_dir, row['trace'])
        cpus = int(row.get('cpus', '2'))
        ns = cpu_ns(row) if with_cpu_ns else None
        extra = ['--trace-cpu-ns', str(ns)] if ns else []
        rc, res, err = sim_csv(sim, trace, cpus, 'linux', extra)
        if rc != 0 and first_line(trace) != '# tlbpol-trace v1':
            # A tlbpol-sim that reads only version 1: the same recording,
            # converted again with --v1 (memory records only).
            v1 = v1_trace(data_dir, row)
            if v1:
                rc1, res1, err1 = sim_csv(sim, v1, cpus, 'linux', extra)
                if rc1 == 0:
                    notes.append('%s: this tlbpol-sim does not read %s (%s); replayed '
                                 'data/raw/%s.strace.xz converted with --v1'
                                 % (name, first_line(trace)[2:], err.splitlines()[-1]
                                    if err else 'exit %d' % rc, name))
                    trace, rc, res, err = v1, rc1, res1, err1
        ok_sim = rc == 0 and len(res) == 1
        pred = int(res[0]['ipis']) if ok_sim else None
        rc_all, res_all, err_all = sim_csv(sim, trace, cpus, None, extra)
        viol = sum(int(x['violations']) for x in res_all) if res_all else None
        e = {'name': name, 'row': row, 'pred': pred, 'viol': viol,
             'modelled_ns': int(res[0]['modelled_ns']) if ok_sim else None}
        byname[name] = e
        if pred is None:
            ok, ratio = False, None
            why = 'tlbpol-sim failed (exit %d): %s' % (rc, err.splitlines()[-1] if err else '')
        else:
            ok, ratio, why = check_row(row, pred)
        e.update(ratio=ratio, why=why, ok=ok)
        if rc_all != 0 or viol != 0:
            failures.append('%s: under every policy: %s violations, exit %d %s'
                            % (name, viol, rc_all, err_all.splitlines()[-1] if err_all else ''))
        e['status'] = 'ok' if ok else ('expected-out' if name in expected else 'OUT')
        if not ok and name not in expected:
            failures.append('%s: out of bounds: %s' % (name, why))
        if ok and name in expected:
            notes.append('%s: now within bounds; remove it from data/expected-out.txt' % name)
        table.append(e)

    # tlb_flush2: the 2-thread/1-thread throughput ratio, measured and
    # modelled.  The model is tlbpol-sim's dontneed scenario (tlb_flush2's
    # loop) on a guest of this machine priced by the measured profile: the
    # traces' times are strace's, useless for a throughput.
    tput = None
    if 'tlb_flush2-1t' in byname and 'tlb_flush2-2t' in byname:
        e1, e2 = byname['tlb_flush2-1t'], byname['tlb_flush2-2t']
        key = 'plain_ops_per_s' if 'plain_ops_per_s' in e1['row'] else 'ops_per_s'
        o1, o2 = floats(e1['row'][key]), floats(e2['row'][key])
        pair = [b / a for a, b in zip(o1, o2) if a]
        profile = os.path.join(data_dir, PROFILE)
        profile = profile if os.path.exists(profile) else None
        model = model_tf2(sim, profile)
        tput = (min(pair), max(pair), model, profile)
        name = 'tlb_flush2-throughput'
        # The bound: the modelled ratio within 20% of the measured range,
        # as for IPIs per operation.  (Issue 13 asked for "below 0.8, as on
        # the real kernel"; the kernel itself is not below 0.8 on every
        # day here, docs/results.md.)
        ok = model is not None and \
            min(pair) * (1 - PER_OP_TOL) <= model[2] <= max(pair) * (1 + PER_OP_TOL)
        if not ok and name not in expected:
            failures.append('%s: the model\'s 2T/1T throughput ratio %s is not within 20%% '
                            'of the measured %.2f-%.2f'
                            % (name, 'na' if model is None else '%.2f' % model[2],
                               min(pair), max(pair)))
        if ok and name in expected:
            notes.append('%s: now within bounds; remove it from data/expected-out.txt' % name)

    fmt = '%-15s %-12s %-12s %-14s %-11s %6s %7s %6s  %s'
    print(fmt % ('program', 'TLB row', 'own IPIs', 'flush calls', 'baseline', 'events',
                 'linux', 'ratio', 'status'))
    for e in table:
        row = e['row']
        rg = lambda k: rangestr(*rng(ints(row[k]))) if row.get(k, 'na') != 'na' else 'na'
        print(fmt % (e['name'], rg('runs'), rg('own'), rg('calls'), rg('baseline'),
                     row.get('events', '?'), 'na' if e['pred'] is None else e['pred'],
                     'na' if e['ratio'] is None else '%.2f' % e['ratio'], e['status']))
    for e in table:
        r = e['row']
        if 'trace_ops' in r:
            print('  %s: ops/s %s under perf, %s without (TLB row per op %s)'
                  % (e['name'], r['ops_per_s'], r.get('plain_ops_per_s', 'na'),
                     ','.join('%.4f' % (t / o) for t, o in zip(ints(r.get('plain_runs', '')),
                                                             ints(r.get('plain_ops', '')))
                              if o) or 'na'))
    if tput:
        m = tput[2]
        print('  tlb_flush2 2T/1T throughput (run by run): measured %.2f-%.2f; model %s%s'
              % (tput[0], tput[1], 'na' if m is None else
                 '%.2f (%.1f us per operation alone, %.1f with 2 threads; tlbpol-sim dontneed '
                 '--cpus 2 --nodes 1 --vm --threads 1|2 --policy linux%s)'
                 % (m[2], m[0] / 1000, m[1] / 1000,
                    ' --cost-file DATA/' + PROFILE if tput[3] else ', no machine profile'),
                 '' if 'tlb_flush2-throughput' not in expected else ' (expected-out: ' +
                 expected['tlb_flush2-throughput'] + ')'))
    for e in table:
        print('  %s: %s%s' % (e['name'], e['why'], ' [expected-out: %s]' % expected[e['name']]
                              if e['status'] == 'expected-out' else ''))
    print('  violations under every policy: ' +
          ' '.join('%s=%s' % (e['name'], e['viol']) for e in table))
    for n in notes:
        print('  note: ' + n)
    for f in failures:
        print('FAIL: ' + f)
    if _V1_DIR:
        shutil.rmtree(_V1_DIR.pop(), ignore_errors=True)
    return not failures if check else True


def reconvert(args):
    work = args.work or tempfile.mkdtemp(prefix='tlbpol-reconvert.')
    os.makedirs(work, exist_ok=True)
    conv, conv_note = converter(work, args.converter)
    rows = read_rows(os.path.join(args.data, 'measured.txt'))
    for row in rows:
        raw_xz = os.path.join(args.data, 'raw', row['program'] + '.strace.xz')
        raw = os.path.join(work, row['program'] + '.strace')
        with lzma.open(raw_xz, 'rb') as f, open(raw, 'wb') as g:
            shutil.copyfileobj(f, g)
        old = os.path.join(args.data, row['trace'])
        with open(old) as f:
            comments = [l[2:].rstrip('\n') for l in f if
                        re.match(r'# (command|program|recorded|strace options): ', l)]
        comments.append('converted: %s UTC by lab/trace/strace2trace.py (%s) -n %d'
                        % (utc_now(), conv_note, MAX_EVENTS))
        out = os.path.join(work, row['trace'])
        convert(conv, raw, out, comments)
        row['events'] = str(trace_events(out))
        if args.update:
            shutil.copyfile(out, old)
    dst = args.data if args.update else work
    with open(os.path.join(dst, 'measured.txt'), 'w') as f:
        f.write(HEADER)
        for r in rows:
            f.write(write_row(r) + '\n')
    if not args.update and os.path.exists(os.path.join(args.data, 'expected-out.txt')):
        shutil.copyfile(os.path.join(args.data, 'expected-out.txt'),
                        os.path.join(work, 'expected-out.txt'))
    log('validate: reconverted into %s' % dst)
    return replay(dst, find_sim(args), check=args.check, with_cpu_ns=args.cpu_ns)


def stamps(data_dir, sim):
    """Flush stamps on the replayed programs (issue 14): each trace replayed
    with --stamps under linux, default and default less flush-stamp, the
    allocator taking the frame freed last (lookahead 0, the worst case), a
    settled one of the last 64, or that and else a spare frame rather than
    settle one (64s: --stamp-spare, a kernel with free memory); interrupts
    in all and by cause, what settling cost the allocations, and at the end
    the interrupts the unmaps whose frames die caused (munmap, and the
    installs that had to complete them: install), linux against default."""
    rows = read_rows(os.path.join(data_dir, 'measured.txt'))
    causes = ['munmap', 'install', 'dontneed', 'mprotect', 'mremap', 'fault', 'reclaim',
              'exit', 'forward', 'other']
    print('stamps: %s trace DATA/PROGRAM.trace --cpus N --nodes 1 --csv --trace-cpu-ns NS '
          '--stamps --stamp-lookahead L [--stamp-spare] --rules default,-flush-stamp' % sim)
    print('%-15s %3s %-8s %6s  %s  %8s %7s %7s %8s %8s %6s %6s' % (
        'program', 'la', 'policy', 'total', ' '.join('%6s' % c[:6] for c in causes),
        'allocs', 'reuses', 'waited', 'p50 ns', 'p99 ns', 'spare', 'freepk'))
    ok = True
    summary = []
    for row in rows:
        trace = os.path.join(data_dir, row['trace'])
        cpus = int(row.get('cpus', '2'))
        ns = cpu_ns(row)
        extra = ['--trace-cpu-ns', str(ns)] if ns else []
        unmap = {}
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
                print('%-15s %3s %-8s %6s  %s  %8s %7s %7s %8s %8s %6s %6s' % (
                    row['program'], tag,
                    'no-stamp' if r['policy'] == 'custom' else r['policy'], r['ipis'],
                    ' '.join('%6s' % r['ipis_' + c] for c in causes), r['frame_allocs'],
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    sub = ap.add_subparsers(dest='mode', required=True)
    for name in ('measure', 'replay', 'reconvert', 'profile', 'stamps'):
        s = sub.add_parser(name)
        s.add_argument('--sim', help='the tlbpol-sim binary')
        s.add_argument('--build', help='a build directory holding lab/sim/tlbpol-sim')
        s.add_argument('--work', help='work directory (default: a new one under /tmp)')
        s.add_argument('--data', default=DATA, help='the data directory (default: data/)')
        s.add_argument('--converter', default='tree',
                       help="tree (lab/trace/strace2trace.py as it is), head (as "
                            "committed) or a path (default tree)")
        s.add_argument('--update', action='store_true',
                       help='write into data/ (measure: the counts, traces and raw '
                            'recordings; reconvert: the traces)')
        s.add_argument('--cpu-ns', action='store_true',
                       help='give tlbpol-sim --trace-cpu-ns: the CPU time each program '
                            'used without strace (data: cpu_s)')
        s.add_argument('--sim-arg', action='append', default=[],
                       help='one more argument for every tlbpol-sim replay (repeatable)')
        s.add_argument('--check', action='store_true',
                       help='exit 1 when a row is out of bounds or a policy has violations')
        if name in ('measure', 'profile'):
            s.add_argument('--quiet-wait', type=float, default=5.0,
                           help='seconds to wait at most before each run for a second '
                                'in which the CPUs are at most 20%% busy (default 5)')
        if name == 'measure':
            s.add_argument('--only', help='comma-separated program names')
            s.add_argument('--no-perf', action='store_true')
            s.add_argument('--no-attrib', action='store_true',
                           help='skip the perf record -a -g run')
            s.add_argument('--max-others', type=float, default=0.25,
                           help='a run during which other processes used more than this '
                                'fraction of the CPUs is done again (default 0.25)')
            s.add_argument('--retries', type=int, default=2,
                           help='how many times at most (default 2)')
    args = ap.parse_args(argv)
    SIM_EXTRA.extend(args.sim_arg)
    if args.mode == 'measure':
        ok = measure(args)
    elif args.mode == 'stamps':
        ok = stamps(args.data, find_sim(args))
    elif args.mode == 'profile':
        work = args.work or tempfile.mkdtemp(prefix='tlbpol-profile.')
        os.makedirs(work, exist_ok=True)
        wait_quiet(args.quiet_wait)
        text = measure_profile(work, find_sim(args))
        if not text:
            return 1
        out = os.path.join(args.data if args.update else work, PROFILE)
        with open(out, 'w') as f:
            f.write(text)
        sys.stdout.write(text)
        log('validate: machine profile written to %s' % out)
        ok = True
    elif args.mode == 'replay':
        ok = replay(args.data, find_sim(args), check=args.check, with_cpu_ns=args.cpu_ns)
    else:
        ok = reconvert(args)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
