# SPDX-License-Identifier: MIT
"""validate.py's command line.

    validate.py measure [--update] [--only NAMES] [--sim PATH] [--work DIR] ...
    validate.py replay  [--data DIR] [--sim PATH] [--check] [--cpu-ns]
    validate.py reconvert [--data DIR] [--sim PATH] [--update]
    validate.py profile [--update] [--sim PATH]
    validate.py stamps [--sim PATH]

measure: runs the real programs of programs.py.  For each: 3 runs
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

replay: replays the traces of every machine's set in data/ (data/ and
data/machines/ID/) with tlbpol-sim (`linux` policy on the recorded
machine's CPU count, then every policy) and prints predicted against
measured, and the model's causes beside the kernel's.  With --check it
exits 1 when a row is out of bounds (and not listed in its set's
expected-out.txt, with numbers) or any policy has a violation.

measure runs each program under SCHED_RR (--no-rt: not; machine.py says
why) and records its page faults beside strace (trace version 3).

profile: measures the machine profile alone (measure does it too, after
the programs): ipi_rtt -d -g, 3 runs, into tlbpol-sim costs; --update
writes data/machine.cost.

reconvert: converts data/raw/*.strace.xz again with the current
converter, into the work directory (--update: into data/), and replays.

stamps: flush stamps on the replayed programs (stamps.py).

The converter (--converter tree, the default, or a path) must pass its
--self-test: one that fails it stops the run with its output.  Standard
library only (and strace, perf, the programs themselves).
"""

from __future__ import annotations

import argparse

from .config import DATA, Config, Sim, find_sim, log
from .converter import ConverterError
from .measure import measure, profile
from .reconvert import reconvert
from .replay import replay
from .stamps import stamps

MODES = ('measure', 'replay', 'reconvert', 'profile', 'stamps')


def converter_arg(value: str) -> str:
    """--converter: 'tree' or a path; the committed copy ('head') is gone."""
    if value == 'head':
        raise argparse.ArgumentTypeError(
            "'head' (the committed converter) is no longer offered: the converter is "
            "lab/trace/strace2trace.py with its modules, not one file git show can copy; "
            "give tree, or the path of a converter that passes its --self-test")
    return value


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description='Validate tlbpol-sim against the real kernel (lab/validate/README.md).')
    sub = ap.add_subparsers(dest='mode', required=True)
    for name in MODES:
        s = sub.add_parser(name)
        s.add_argument('--sim', help='the tlbpol-sim binary')
        s.add_argument('--build', help='a build directory holding lab/sim/tlbpol-sim')
        s.add_argument('--work', help='work directory (default: a new one under /tmp)')
        s.add_argument('--data', default=DATA, help='the data directory (default: data/)')
        s.add_argument('--converter', default='tree', type=converter_arg,
                       help="tree (lab/trace/strace2trace.py as it is) or the path of "
                            "another converter; it must pass its --self-test (default tree)")
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
            s.add_argument('--no-rt', action='store_true',
                           help='run the programs under normal scheduling, not SCHED_RR '
                                '(machine.py PROG_RT says why they are)')
    return ap


def config(ns: argparse.Namespace) -> Config:
    """The options parsed, as the Config every mode is given."""
    return Config(
        mode=ns.mode,
        sim=Sim(find_sim(ns.sim, ns.build), tuple(ns.sim_arg)),
        data=ns.data, work=ns.work, converter=ns.converter,
        update=ns.update, cpu_ns=ns.cpu_ns, check=ns.check,
        # measure and profile only
        quiet_wait=getattr(ns, 'quiet_wait', 5.0),
        # measure only
        only=getattr(ns, 'only', None),
        no_perf=getattr(ns, 'no_perf', False), no_attrib=getattr(ns, 'no_attrib', False),
        max_others=getattr(ns, 'max_others', 0.25), retries=getattr(ns, 'retries', 2),
        rt=not getattr(ns, 'no_rt', False))


def run(cfg: Config) -> bool:
    if cfg.mode == 'measure':
        return measure(cfg)
    if cfg.mode == 'stamps':
        return stamps(cfg.data, cfg.sim)
    if cfg.mode == 'profile':
        return profile(cfg)
    if cfg.mode == 'replay':
        return replay(cfg.data, cfg.sim, check=cfg.check, with_cpu_ns=cfg.cpu_ns)
    return reconvert(cfg)


def main(argv: list[str] | None = None) -> int:
    cfg = config(parser().parse_args(argv))
    try:
        ok = run(cfg)
    except ConverterError as e:
        log('validate: %s' % e)
        return 1
    return 0 if ok else 1
