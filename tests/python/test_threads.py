#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Two Python threads as two CPUs, shooting each other down through Python
callbacks: send_ipi posts to the other thread, which calls handle_ipi() for
itself; flush_local must run on the target's own thread, and every submit
must complete.  Each CPU has a soft TLB: after a downgrade's submit returns,
the other CPU may not hold the old version of the page (a stale entry).
"""

import threading
import time
import unittest

import tlbpol
from tlbpol import CpuState, EventKind, Reason

from helpers import RUA, RWUA

NCPU = 2
PAGES = 8   # page p belongs to CPU p % NCPU
STEPS = 2000
TIMEOUT = 60.0


class Machine:
    def __init__(self, rules="default"):
        self.irq = [threading.Event() for _ in range(NCPU)]
        self.thread_of = [None] * NCPU
        self.tlb = [dict() for _ in range(NCPU)]       # page -> version
        self.pte = [1] * PAGES                          # the current version
        self.flush_calls = [0] * NCPU
        self.wrong_thread = []
        self.ipis = []
        self.stale = []
        self.done = 0
        # Odd while the CPU is preempted: then it runs nothing and its TLB is
        # flushed before it runs again, so an entry it holds is not stale yet.
        self.preempt_epoch = [0] * NCPU
        self.lock = threading.Lock()
        self.eng = tlbpol.Engine(arch="x86_64", rules=rules, cpus=NCPU,
                                 flush_local=self.flush_local, send_ipi=self.send_ipi,
                                 relax=self.relax)
        self.space = self.eng.open_as(1)

    # -- callbacks ---------------------------------------------------------
    def flush_local(self, cpu, f):
        if self.thread_of[cpu] != threading.get_ident():
            self.wrong_thread.append((cpu, threading.get_ident()))
        self.flush_calls[cpu] += 1
        if f.kind == tlbpol.FlushKind.PAGES:
            for va in f.pages():
                self.tlb[cpu].pop(va >> 12, None)
        else:
            self.tlb[cpu].clear()

    def send_ipi(self, from_cpu, targets):
        self.ipis.append((from_cpu, targets))
        for c in targets:
            self.irq[c].set()

    def take_interrupts(self, cpu):
        if self.irq[cpu].is_set():
            self.irq[cpu].clear()
            self.eng.handle_ipi(cpu)

    def relax(self, cpu):
        self.take_interrupts(cpu)
        time.sleep(0)

    # -- what a CPU does ---------------------------------------------------
    def read(self, cpu, page):
        if page not in self.tlb[cpu]:
            self.tlb[cpu][page] = self.pte[page]

    def downgrade(self, cpu, page):
        self.pte[page] += 1
        d = self.eng.submit(self.space, cpu, tlbpol.Event(
            EventKind.PROTECT, old_pte=RWUA, new_pte=RUA, va=page << 12))
        other = 1 - cpu
        epoch = self.preempt_epoch[other]
        cached = self.tlb[other].get(page)
        if cached is not None and cached != self.pte[page] and \
                epoch % 2 == 0 and epoch == self.preempt_epoch[other]:
            self.stale.append((cpu, page, cached, self.pte[page]))
        return d

    def idle_until(self, cpu, cond):
        deadline = time.monotonic() + TIMEOUT
        while not cond() and time.monotonic() < deadline:
            if self.irq[cpu].wait(0.001):
                self.take_interrupts(cpu)


class TwoThreadShootdown(unittest.TestCase):
    def run_cpus(self, m, body):
        errors = []

        def cpu_main(cpu):
            try:
                m.thread_of[cpu] = threading.get_ident()
                m.eng.switch(cpu, m.space)
                body(cpu)
                with m.lock:
                    m.done += 1
                m.idle_until(cpu, lambda: m.done == NCPU)  # still a CPU for the other
                m.eng.switch(cpu, None)
            except BaseException as exc:  # reported by the main thread
                errors.append((cpu, exc))
                with m.lock:
                    m.done += 1

        threads = [threading.Thread(target=cpu_main, args=(c,), daemon=True) for c in range(NCPU)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(TIMEOUT)
            self.assertFalse(t.is_alive(), "a CPU thread hung (a shootdown never completed?)")
        self.assertEqual(errors, [])
        self.assertEqual(m.wrong_thread, [], "flush_local ran on another CPU's thread")
        self.assertEqual(m.stale, [], "a stale TLB entry survived a completed shootdown")

    def test_one_shootdown_through_an_ipi(self):
        m = Machine()
        ready = threading.Event()
        result = []

        def body(cpu):
            if cpu == 1:
                m.read(1, 0)     # cpu 1 caches page 0, then waits for interrupts
                ready.set()
                m.idle_until(1, lambda: bool(result))
            else:
                ready.wait(TIMEOUT)
                result.append(m.downgrade(0, 0))

        self.run_cpus(m, body)
        self.assertEqual(len(result), 1, "the submit did not complete")
        self.assertEqual(result[0].reason, Reason.DOWNGRADE)
        self.assertEqual(m.ipis, [(0, frozenset({1}))])
        self.assertGreaterEqual(m.flush_calls[1], 1, "flush_local was not called on the target")
        self.assertNotIn(0, m.tlb[1])
        st = m.eng.stats()
        self.assertEqual((st["ipis_sent"], st["remote_flushes"]), (1, 1))
        m.eng.close()

    def test_both_ways(self):
        for rules in ("linux", "default", "default,-vcpu-defer"):
            with self.subTest(rules=rules):
                m = Machine(rules)

                def body(cpu):
                    for i in range(STEPS):
                        m.take_interrupts(cpu)
                        m.read(cpu, (i * 3 + cpu) % PAGES)
                        if i % 4 == cpu:
                            m.downgrade(cpu, (i % (PAGES // NCPU)) * NCPU + cpu)
                        if i % 50 == 49:
                            m.eng.tick(cpu)
                        if i % 97 == 96:  # blocked for a moment: nobody waits for it
                            m.preempt_epoch[cpu] += 1
                            m.eng.cpu_state(cpu, CpuState.PREEMPTED)
                            time.sleep(0.0005)
                            if m.eng.cpu_state(cpu, CpuState.RUNNING):
                                m.tlb[cpu].clear()
                            m.preempt_epoch[cpu] += 1

                self.run_cpus(m, body)
                st = m.eng.stats()
                self.assertEqual(st["events"], 2 * (STEPS // 4))
                self.assertGreater(st["remote_flushes"], 0)
                self.assertGreater(m.flush_calls[0] + m.flush_calls[1], st["events"] // 2)
                m.eng.close()


if __name__ == "__main__":
    unittest.main()
