#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Run the laboratory's measurements and keep their raw output.

Each measurement below is one command.  record.py runs it from the top of
the source tree and writes what it printed, untouched, into
lab/results/data/TOPIC/NAME.txt under a header that says where it came
from: the commit of this tree ("-dirty" when it had uncommitted changes),
the CPU model, vCPU count, kernel, the UTC date, the wall time, the steal
time and the load average over the run, and the exact command.  render.py
reads only these files: a figure in docs/results.md or in README.md's
headline table is always one of them, parsed.

    lab/results/record.py [--build DIR] [--data DIR] [NAME|TOPIC...]
    lab/results/record.py --list
"""

import argparse
import os
import shlex
import subprocess
import sys
import time
from typing import Dict, List, NamedTuple, Optional, Tuple

HERE = os.path.dirname(os.path.realpath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(HERE, 'data')
HEADER_END = '# ---'
STDERR_MARK = '# --- stderr'


class Measurement(NamedTuple):
    name: str
    topic: str
    argv: Tuple[str, ...]   # {build} is replaced by the build directory
    env: Tuple[Tuple[str, str], ...]
    timeout: int             # seconds
    what: str
    default: bool            # recorded by `record` with no name


def _m(name: str, topic: str, cmd: str, timeout: int, what: str,
       env: Tuple[Tuple[str, str], ...] = (), default: bool = True) -> Measurement:
    return Measurement(name, topic, tuple(shlex.split(cmd)), env, timeout, what, default)


SIM = '{build}/lab/sim/tlbpol-sim'

# Roughly in the order of docs/results.md.  Times are for a 2-vCPU guest.
MEASUREMENTS: List[Measurement] = [
    _m('sim-main', 'sim', SIM, 300,
       'the main job: every scenario on the default modelled machine, every policy (~25 s)'),
    _m('sim-scale-reclaim', 'sim', SIM + ' --scale reclaim --events 4096', 600,
       'reclaim from 2 to 1024 modelled CPUs (~45 s)'),
    # Each flush mechanism of the modelled machine: the engine's choice by
    # its cost model beside interrupts only and the mechanism always.
    _m('sim-backends-reclaim', 'sim', 'sh -c "for b in invlpgb tlbi hypercall rar sbi; do '
       + SIM + ' --scale reclaim --backend $b --nodes 2 || exit 1; done"', 600,
       'reclaim, 2 to 1024 CPUs, per flush mechanism (~20 s)'),
    _m('sim-backends-dontneed', 'sim', 'sh -c "for b in invlpgb tlbi hypercall rar sbi; do '
       + SIM + ' --scale dontneed --backend $b --nodes 2 || exit 1; done"', 600,
       'tlb_flush2-like dontneed, 2 to 1024 CPUs, per flush mechanism (~70 s)'),
    # Tags from the library's allocators (--tags): Linux 6.15's x86 with
    # INVLPGB (6 PCIDs per CPU, global ASIDs for address spaces on 4 CPUs)
    # under every policy; and tags scarce: the hypervisor's VMIDs and a
    # replayed build's processes in 3 ASIDs, rolling over.
    _m('sim-tags-invlpgb', 'sim', SIM + ' --backend invlpgb --tags percpu:6+64', 600,
       'every scenario with PCIDs and global ASIDs for INVLPGB, every policy (~30 s)'),
    _m('sim-tags-scarce', 'sim', 'sh -c "' + SIM + ' hypervisor --cpus 2 --nodes 1'
       ' --tags global:2 && ' + SIM + ' trace lab/trace/traces/build-ninja.trace --cpus 2'
       ' --nodes 1 --tags global:2"', 120,
       'VMIDs and ASIDs of 2 bits: generations rolling over (seconds)'),
    _m('sim-1024', 'sim', SIM + ' reclaim --cpus 1024 --nodes 16 --events 1000000'
       ' --policy default', 600, 'one large run: 1024 CPUs on 16 nodes (~45 s)'),
    _m('sim-dontneed-vm2', 'sim', SIM + ' dontneed --cpus 2 --nodes 1 --vm', 120,
       'tlb_flush2 in a 2-vCPU guest (seconds)'),
    _m('sim-lazy-stamps', 'sim', SIM + ' lazy-unmap --stamps --stamp-lookahead 64'
       ' --stamp-spare', 120, 'LATR-style munmaps with flush stamps (seconds)'),
    _m('replay', 'programs', 'lab/validate/run.sh --replay-only --cpu-ns --build {build}',
       300, 'real programs\' traces replayed, against the kernel\'s counts (~5 s)'),
    _m('stamps', 'programs', 'python3 lab/validate/validate.py stamps --build {build}',
       300, 'the same traces with flush stamps and three allocators (~15 s)'),
    _m('stress', 'safety', 'scripts/stress.sh 10000000 1', 1800,
       'the stress oracle over every rule mask (~1 min)',
       env=(('STRESS_BUILDDIR', '{build}'),)),
    _m('softmmu', 'safety', '{build}/examples/softmmu/softmmu --seconds 5', 120,
       'soft MMU, real threads and cross-thread shootdowns (~20 s)'),
    _m('unikernel-tcg', 'safety', 'examples/unikernel/run.sh --tcg -n 2'
       ' --kernel {build}/examples/unikernel/kernel.elf', 600,
       'the test kernel under QEMU TCG, the stale-read oracle (~1 min)'),
    _m('unikernel-kvm', 'kernel', 'examples/unikernel/run.sh --kvm -n 2'
       ' --kernel {build}/examples/unikernel/kernel.elf', 900,
       'the test kernel under KVM, real invlpg and IPIs (~1 min)'),
    # The worst case of flush stamps: an allocator that hands out the frame
    # freed last (stamplook=0), every reuse settling its stamp at once.
    _m('unikernel-kvm-reuse-now', 'kernel', 'examples/unikernel/run.sh --kvm -n 2'
       ' --kernel {build}/examples/unikernel/kernel.elf -- rounds=10 iters=32 stamplook=0', 900,
       'the test kernel under KVM, each stamped frame reused at once (~1 min)'),
    # default against linux everywhere: versus.py prints a verdict per row.
    _m('versus', 'sim', 'python3 lab/results/versus.py sim --build {build}', 1200,
       'default against linux: every scenario at 2 to 1024 CPUs and every replayed '
       'program, seeds 1 to 10 (~3 min)'),
    _m('versus-kernel', 'kernel', 'python3 lab/results/versus.py kernel --boots 6'
       ' --kernel {build}/examples/unikernel/kernel.elf', 3600,
       'default against linux in the test kernel: 6 boots under KVM, 6 under TCG, every '
       'second one with default run first (~5 min)'),
    # Where /dev/kvm emulates the guest's instructions (kvm-pvm), the
    # cycles above measure the emulator: how much of it there was.
    _m('kvm-emulation', 'kernel', 'lab/results/kvm_emulation.sh'
       ' {build}/examples/unikernel/kernel.elf', 900,
       'instructions KVM emulated in one boot of linux and one of default (~2 min)'),
    _m('bench', 'overhead', '{build}/lab/bench/tlbpol-bench', 600,
       'hot paths against an empty call (~1 min)'),
    _m('engine-memory', 'overhead', '{build}/tests/test_layout', 120,
       'tlbpol_engine_size() at default settings (seconds)'),
    # An hour: recorded only when named (`record mutants`).  It builds its
    # own copies of the tree (git-tracked files only) and a baseline first.
    _m('mutants', 'safety', 'python3 lab/mutants/run.py --seed 1', 3 * 3600,
       'every planted bug against every checker (~1 h; only when named)', default=False),
]


def find(names: List[str]) -> List[Measurement]:
    if not names:
        return [m for m in MEASUREMENTS if m.default]
    out: List[Measurement] = []
    for n in names:
        hit = [m for m in MEASUREMENTS if n in (m.name, m.topic)]
        if not hit:
            raise SystemExit('record.py: no measurement or topic %r (--list)' % n)
        out.extend(m for m in hit if m not in out)
    return out


def run_text(argv: List[str], default: str = '?') -> str:
    try:
        return subprocess.run(argv, cwd=TOP, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return default


def commit() -> str:
    # Not the results themselves: a record over an uncommitted earlier one
    # measures the same code.
    head = run_text(['git', 'rev-parse', '--short', 'HEAD'])
    dirty = run_text(['git', 'status', '--porcelain', '--untracked-files=no', '--', '.',
                      ':(exclude)lab/results/data'], '')
    return head + ('-dirty' if dirty else '')


def cpu_model() -> str:
    for line in run_text(['lscpu'], '').splitlines():
        key, _, val = line.partition(':')
        if key.strip() == 'Model name':
            return val.strip()
    return '?'


def cpu_times() -> Tuple[int, int]:
    """(all jiffies, steal jiffies) from /proc/stat's first line."""
    with open('/proc/stat') as f:
        fields = f.readline().split()
    vals = [int(v) for v in fields[1:9]]   # user .. steal; guest is in user
    return sum(vals), vals[7]


def loadavg() -> str:
    with open('/proc/loadavg') as f:
        return f.read().split()[0]


def record(m: Measurement, build: str, data: str, rev: str) -> int:
    argv = [a.replace('{build}', build) for a in m.argv]
    env = dict(os.environ)
    extra = [(k, v.replace('{build}', build)) for k, v in m.env]
    env.update(extra)
    cmd = ' '.join(['%s=%s' % (k, shlex.quote(v)) for k, v in extra] +
                   [shlex.quote(a) for a in argv])
    print('record: %s: %s' % (m.name, cmd), file=sys.stderr, flush=True)
    head: Dict[str, str] = {
        'measurement': m.name,
        'what': m.what,
        'commit': rev,
        'cpu': cpu_model(),
        'vcpus': str(os.cpu_count() or 0),
        'kernel': os.uname().release,
        'date': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
        'command': cmd,
    }
    load0 = loadavg()
    tot0, steal0 = cpu_times()
    t0 = time.monotonic()
    status: Optional[int]
    try:
        p = subprocess.run(argv, cwd=TOP, env=env, capture_output=True, text=True,
                           timeout=m.timeout, stdin=subprocess.DEVNULL)
        out, err, status = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors='replace') if isinstance(e.stdout, bytes) else ''
        err = e.stderr.decode(errors='replace') if isinstance(e.stderr, bytes) else ''
        err += '\nrecord.py: timed out after %d s\n' % m.timeout
        status = None
    except OSError as e:
        out, err, status = '', 'record.py: cannot run: %s\n' % e, 127
    secs = time.monotonic() - t0
    tot1, steal1 = cpu_times()
    dt = max(tot1 - tot0, 1)
    head['seconds'] = '%.1f' % secs
    head['steal'] = '%.1f%%' % (100.0 * (steal1 - steal0) / dt)
    head['load'] = '%s before, %s after (1-minute load average)' % (load0, loadavg())
    head['exit'] = 'timeout' if status is None else str(status)
    path = os.path.join(data, m.topic, m.name + '.txt')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + '.new', 'w') as f:
        f.write('# tlbpol lab result (lab/results/record.py)\n')
        for k, v in head.items():
            f.write('# %s: %s\n' % (k, v))
        f.write(HEADER_END + '\n')
        f.write(out)
        if out and not out.endswith('\n'):
            f.write('\n')
        if err:
            f.write(STDERR_MARK + '\n' + err)
            if not err.endswith('\n'):
                f.write('\n')
    os.replace(path + '.new', path)
    print('record: %s: exit %s, %.1f s, steal %s -> %s' % (
        m.name, head['exit'], secs, head['steal'], os.path.relpath(path, TOP)),
        file=sys.stderr, flush=True)
    return 0 if status == 0 else 1


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('names', nargs='*', help='measurements or topics (default: all)')
    ap.add_argument('--build', default=os.environ.get('TLBPOL_BUILD', 'build'),
                    help='build directory ($TLBPOL_BUILD, default build/)')
    ap.add_argument('--data', default=DATA, help='where to write (default lab/results/data)')
    ap.add_argument('--list', action='store_true', help='list the measurements')
    args = ap.parse_args(argv)
    if args.list:
        for m in MEASUREMENTS:
            print('%-18s %-9s %s\n%18s %9s %s' % (
                m.name, m.topic, m.what, '', '',
                ' '.join(m.argv).replace('{build}', args.build)))
        return 0
    build = os.path.abspath(os.path.join(TOP, args.build))
    if not os.path.isfile(os.path.join(build, 'build.ninja')):
        print('record.py: %s is not a configured build directory' % build, file=sys.stderr)
        return 2
    # Inside the tree, the command is recorded as run: relative to its top.
    if build.startswith(TOP + os.sep):
        build = os.path.relpath(build, TOP)
    # One commit for the whole run: the binaries were built from the tree as
    # it was when it started (scripts/results.sh builds first).
    rev = commit()
    failed = 0
    for m in find(args.names):
        failed += record(m, build, os.path.abspath(args.data), rev)
    if failed:
        print('record.py: %d measurement(s) exited non-zero (recorded as such)' % failed,
              file=sys.stderr)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
