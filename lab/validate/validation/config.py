# SPDX-License-Identifier: MIT
"""Where things are, the bounds a replay is checked against, and the
options of one run of validate.py (built once by cli.py, then passed
down: nothing here changes after start-up)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # lab/validate
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
DATA = os.path.join(HERE, 'data')
CONVERTER = os.path.join(ROOT, 'lab', 'trace', 'strace2trace.py')
MAX_EVENTS = 50000      # strace2trace.py -n: events kept in a trace
RUNS = 3                # measured runs of each program, and of ipi_rtt

# The bounds: the linux prediction within 2x of the measured count; for
# tlb_flush2, IPIs per operation (and the 2T/1T throughput ratio) within
# 20%.
FACTOR = 2.0
FLOOR = 4           # counts below this are taken as this before the ratio
PER_OP_TOL = 0.20
PER_OP_FLOOR = 0.01  # IPIs per operation below this are taken as this

PROFILE = 'machine.cost'    # the machine profile, in the data directory
MACHINES = 'machines'       # earlier machines' sets: data/machines/ID/
TF2_TRACE_ITERS = 2000      # tlb_flush2 operations per thread under strace
PERF_WARMUP_S = 1.0         # perf record -a: time to be recording before the program starts


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Sim:
    """The tlbpol-sim binary, and the arguments (--sim-arg) every trace
    replay is given."""
    path: str
    extra: tuple[str, ...] = ()


@dataclass(frozen=True)
class Config:
    """The options of one run of validate.py (cli.py says what each is)."""
    mode: str
    sim: Sim
    data: str = DATA
    work: str | None = None
    converter: str = 'tree'
    update: bool = False
    cpu_ns: bool = False
    check: bool = False
    quiet_wait: float = 5.0
    only: str | None = None
    no_perf: bool = False
    no_attrib: bool = False
    max_others: float = 0.25
    retries: int = 2
    rt: bool = True


def find_sim(sim: str | None, build: str | None) -> str:
    """--sim, else $TLBPOL_SIM, else lab/sim/tlbpol-sim in --build,
    $TLBPOL_BUILD or build/."""
    if sim:
        return sim
    if os.environ.get('TLBPOL_SIM'):
        return os.environ['TLBPOL_SIM']
    build = build or os.environ.get('TLBPOL_BUILD') or os.path.join(ROOT, 'build')
    return os.path.join(build, 'lab', 'sim', 'tlbpol-sim')
