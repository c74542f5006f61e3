# SPDX-License-Identifier: MIT
"""What the tests of the tlbpol package share: PTE values, a host whose
callbacks record what the engine asks, and the environment meson sets.

Imported by the test scripts of this directory (run as scripts: their
directory is first on sys.path).
"""

import os
import unittest

import tlbpol
from tlbpol import Pte

RWUA = Pte.PRESENT | Pte.WRITE | Pte.USER | Pte.ACCESSED
RWUAD = RWUA | Pte.DIRTY
RUA = Pte.PRESENT | Pte.USER | Pte.ACCESSED
VA = 0x7F0000000000


class RecordingHost:
    """Callbacks that record; CPUs simulated on one thread: an interrupt is
    served by relax() (the initiator's wait loop) or by deliver()."""

    def __init__(self):
        self.flushes = []
        self.ipis = []
        self.pending = set()
        self.eng = None

    def flush_local(self, cpu, f):
        self.flushes.append((cpu, f))

    def send_ipi(self, from_cpu, targets):
        self.ipis.append((from_cpu, targets))
        self.pending |= targets

    def relax(self, cpu):
        self.deliver()

    def deliver(self):
        while self.pending:
            self.eng.handle_ipi(self.pending.pop())

    def engine(self, **kw):
        """An engine with these callbacks (unless @kw names others)."""
        kw.setdefault("flush_local", self.flush_local)
        kw.setdefault("send_ipi", self.send_ipi)
        kw.setdefault("relax", self.relax)
        self.eng = tlbpol.Engine(**kw)
        return self.eng


def loaded(eng, tag, *cpus):
    """A new address space @tag of @eng, switched to on each of @cpus."""
    space = eng.open_as(tag)
    for cpu in cpus:
        eng.switch(cpu, space)
    return space


def env_or_skip(name):
    """$@name, which meson sets; without it (run by hand) the test is skipped."""
    value = os.environ.get(name)
    if not value:
        raise unittest.SkipTest(name + " not set")
    return value
