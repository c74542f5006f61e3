# SPDX-License-Identifier: MIT
"""The real programs validate.py measures, what each needs before it runs,
and whether this kernel's TLB row can count their shootdowns at all."""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Callable

from .config import HERE, ROOT, TF2_TRACE_ITERS
from .machine import PROG_RT, cmd_out, ncpus, rt_preexec, tlb_row

# A step before a program runs, given the work directory.
Prepare = Callable[[str], None]
# (operations, operations per second) from a program's output
OpsParser = Callable[[str], tuple[int | None, int | None]]


@dataclass(frozen=True)
class Program:
    """A real program: cmd is what is measured, trace_cmd what strace
    records (the same unless the full run would make a huge trace).
    prepare runs once before its runs, per_run before each (not measured);
    ops reads the operations it did from its output (tlb_flush2), of which
    its traced run does trace_ops."""
    name: str
    desc: str
    cmd: list[str]
    trace_argv: list[str] | None = None
    prepare: Prepare | None = None
    per_run: Prepare | None = None
    ops: OpsParser | None = None
    trace_ops: int | None = None
    stdout_null: bool = False
    group: str | None = None
    env: tuple[tuple[str, str], ...] = ()   # set for its runs (LD_PRELOAD=...)
    requires: tuple[tuple[str, str], ...] = ()  # (path, Debian package): skipped without

    @property
    def trace_cmd(self) -> list[str]:
        return self.trace_argv or self.cmd

    def environ(self) -> dict[str, str] | None:
        """The environment its runs get: ours with @env set (None: ours)."""
        if not self.env:
            return None
        e = dict(os.environ)
        e.update(self.env)
        return e

    def env_argv(self) -> list[str]:
        """@env as `env K=V ...`, to write a command the way it ran."""
        return ['env'] + ['%s=%s' % kv for kv in self.env] if self.env else []

    def missing(self) -> str | None:
        """None if what it needs is here; else what is not (and its package)."""
        for path, pkg in self.requires:
            if not os.path.exists(path):
                return '%s (Debian: %s)' % (path, pkg)
        return None


def text_data(work: str) -> str:
    """32 MiB of words, random.Random(42): the compressors' and sort's input."""
    path = os.path.join(work, 'text.dat')
    if os.path.exists(path):
        return path
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


def prep_tf2(work: str) -> None:
    exe = os.path.join(work, 'tlb_flush2')
    if not os.path.exists(exe):
        subprocess.run([os.environ.get('CC', 'cc'), '-O2', '-pthread', '-o', exe,
                        os.path.join(HERE, 'tlb_flush2.c')], check=True)


def prep_zero_cow(work: str) -> None:
    exe = os.path.join(work, 'zero_cow')
    if not os.path.exists(exe):
        subprocess.run([os.environ.get('CC', 'cc'), '-O2', '-pthread', '-o', exe,
                        os.path.join(HERE, 'zero_cow.c')], check=True)


def prep_java(work: str) -> None:
    d = os.path.join(work, 'java')
    if not os.path.exists(os.path.join(d, 'JavaWorkers.class')):
        os.makedirs(d, exist_ok=True)
        subprocess.run(['javac', '-d', d, os.path.join(HERE, 'JavaWorkers.java')], check=True)


def prep_build_src(work: str) -> None:
    src = os.path.join(work, 'build-src')
    if not os.path.exists(src):
        os.makedirs(src)
        archive = subprocess.run(['git', '-C', ROOT, 'archive', 'HEAD'], check=True,
                                 capture_output=True).stdout
        subprocess.run(['tar', '-x', '-C', src], input=archive, check=True)


def per_run_build(work: str) -> None:
    """A fresh build directory (meson setup, not measured) for each run."""
    b = os.path.join(work, 'build-b')
    shutil.rmtree(b, ignore_errors=True)
    subprocess.run(['meson', 'setup', b, os.path.join(work, 'build-src'), '-Dtests=false'],
                   check=True, capture_output=True)


def prep_text(work: str) -> None:
    text_data(work)


def tf2_ops(out: str) -> tuple[int | None, int | None]:
    """(operations, operations per second) as tlb_flush2 printed them: its
    own clock, from the start gate to the last join (not perf's start-up)."""
    m = re.search(r'ops=(\d+) seconds=\S+ ops_per_s=(\d+)', out)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def instrument_blind(work: str, rt: bool = False) -> str | None:
    """None if the TLB row of /proc/interrupts sees this kernel's remote
    flushes; else why not.  tlb_flush2 with 2 threads makes about one
    remote flush per operation on any kernel that knows the other thread's
    CPU may cache the address space (Linux 6.x measured 0.94-0.99 on an
    Intel KVM guest).  Where remote flushes are not interrupts -- a
    paravirtual hypercall (PVM's PVM_HC_FLUSH_TLB_MULTI, Hyper-V's
    HvFlushVirtualAddressList), AMD INVLPGB broadcasts (Linux 6.15+) --
    the row stays still, and every "measured" count would be 0.  With
    @rt under SCHED_RR (machine.py PROG_RT): on a loaded machine the two
    threads may otherwise share one CPU and never interrupt each other."""
    if ncpus() < 2:
        return 'one CPU: no remote flush at all'
    prep_tf2(work)
    before = tlb_row()
    r = subprocess.run([os.path.join(work, 'tlb_flush2'), '-t', '2', '-s', '1'],
                       capture_output=True, text=True,
                       preexec_fn=rt_preexec(PROG_RT if rt else None))
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


# jemalloc (Debian libjemalloc2), preloaded: it hands freed extents back
# with madvise(MADV_DONTNEED) (with these decay times at once, and straight
# to the forced purge) and knows they come back zero, so its calloc() of
# one does not write it: the program's first read maps the shared zero
# page and its first write copies it (do_wp_page(), a shootdown of the CPUs
# the other threads run on).
JEMALLOC = '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2'
JEMALLOC_ENV = (('LD_PRELOAD', JEMALLOC), ('MALLOC_CONF', 'dirty_decay_ms:0,muzzy_decay_ms:0'))


def programs(work: str) -> list[Program]:
    """The programs, in data/measured.txt's order, their files in @work."""
    w = work
    py = os.path.join(HERE, 'pyalloc.py')
    js = os.path.join(HERE, 'node-workers.js')
    text = os.path.join(w, 'text.dat')
    tf2 = os.path.join(w, 'tlb_flush2')
    zc = os.path.join(w, 'zero_cow')
    npt = os.path.join(HERE, 'np-tables.py')
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
        Program('zero-cow', 'zero_cow -t 2 -p 8 -n 1200 (lab/validate/zero_cow.c): 2 threads '
                'each read 8 dropped pages (the zero page), write them (copy-on-write) and '
                'madvise(MADV_DONTNEED) them, 1200 rounds',
                [zc, '-t', '2', '-p', '8', '-n', '1200'], prepare=prep_zero_cow),
        Program('numpy-jemalloc', 'CPython 3 with numpy and jemalloc preloaded (purging at '
                'once with MADV_DONTNEED): 2 threads, 150 rounds of np.zeros(32768) then += '
                '(lab/validate/np-tables.py)',
                ['/usr/bin/python3', npt, '2', '150', '32768'], env=JEMALLOC_ENV,
                requires=((JEMALLOC, 'libjemalloc2'),
                          ('/usr/lib/python3/dist-packages/numpy', 'python3-numpy'))),
    ]
