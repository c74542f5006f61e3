#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Flush mechanisms (release 0.3) through the package: Backend descriptors
(struct tlbpol_backend), the split-phase broadcast's callbacks
(bcast_issue, bcast_sync), lockless walkers (ConfigFlag.LOCKLESS_WALKERS
and walker_sync), and every number of a descriptor checked before C.

Needs PYTHONPATH=bindings/python and TLBPOL_LIBRARY=build/libtlbpol.so.0
(meson sets both: meson test -C build --suite bindings).
"""

import ctypes
import errno
import gc
import threading
import unittest

import tlbpol
from tlbpol import (BKF_DISABLED, BKF_IMPLIES_IRQ, BKF_SPLIT, MECH_BROADCAST, MECH_IPI,
                    MECH_MAX, Action, ConfigFlag, Deadline, EventFlag, FlushKind, Rule, _ffi)

from helpers import RWUA, VA, loaded
from helpers import RecordingHost as Host


def unmap(tables=False, pages=2):
    return tlbpol.Event("unmap", old_pte=RWUA, new_pte=0, nr_pages=pages, va=VA,
                        flags=EventFlag.TABLES_FREED if tables else 0)


class SplitHost(Host):
    """A host with a split-phase broadcast (INVLPGB, then TLBSYNC), and a
    walker_sync if asked: each call recorded with its CPU and thread."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def bcast_issue(self, cpu, f):
        self.calls.append(("issue", cpu, threading.get_ident(), f))

    def bcast_sync(self, cpu):
        self.calls.append(("sync", cpu, threading.get_ident()))

    def walker_sync(self, cpu, cpus):
        self.calls.append(("walker_sync", cpu, threading.get_ident(), cpus))

    def engine(self, walkers=False, **kw):
        kw.setdefault("bcast_issue", self.bcast_issue)
        kw.setdefault("bcast_sync", self.bcast_sync)
        if walkers:
            kw.setdefault("walker_sync", self.walker_sync)
        return super().engine(**kw)

    def shoot(self, space, tables=False):
        """An unmap on CPU 0 and the flush that shoots it down."""
        self.flushes.clear()
        self.ipis.clear()
        self.calls.clear()
        d = self.eng.submit(space, 0, unmap(tables))
        assert d.action == Action.SHOOTDOWN, d
        assert self.eng.flush(0, Deadline.BY_LAZY) == 1


CHEAP_SPLIT = tlbpol.Backend(MECH_BROADCAST, flags=BKF_SPLIT, cost_ns=100)


class SplitBroadcast(unittest.TestCase):
    def test_issue_then_sync_on_the_initiating_cpu(self):
        h = SplitHost()
        with h.engine(arch="x86_64", cpus=2, backends=[CHEAP_SPLIT]) as eng:
            self.assertTrue(eng.rules & Rule.BROADCAST)
            space = loaded(eng, 9, 0, 1)
            h.shoot(space)
            me = threading.get_ident()
            self.assertEqual([c[:3] for c in h.calls], [("issue", 0, me), ("sync", 0, me)])
            f = h.calls[0][3]
            self.assertEqual((f.as_tag, f.kind), (9, FlushKind.PAGES))
            self.assertEqual(f.ranges, (tlbpol.Range(VA, 2, 12),))
            self.assertEqual(h.ipis, [])
            st = eng.stats()
            self.assertEqual((st.broadcasts, st.ipis_sent), (1, 0))

    def test_described_dear_it_is_not_used(self):
        h = SplitHost()
        dear = tlbpol.Backend(MECH_BROADCAST, flags=BKF_SPLIT, cost_ns=100000)
        with h.engine(arch="x86_64", cpus=2, backends=[dear]) as eng:
            h.shoot(loaded(eng, 9, 0, 1))
            self.assertEqual(h.calls, [])
            self.assertEqual(h.ipis, [(0, frozenset({1}))])

    def test_disabled_is_never_used(self):
        h = SplitHost()
        off = tlbpol.Backend(MECH_BROADCAST, flags=BKF_SPLIT | BKF_DISABLED, cost_ns=100)
        with h.engine(arch="x86_64", cpus=2, backends=[off]) as eng:
            self.assertFalse(eng.rules & Rule.BROADCAST)
            h.shoot(loaded(eng, 9, 0, 1))
            self.assertEqual(h.calls, [])

    def test_an_exception_in_bcast_sync_is_reraised(self):
        h = SplitHost()

        def bcast_sync(cpu):
            raise RuntimeError("TLBSYNC #UD")

        with h.engine(arch="x86_64", cpus=2, backends=[CHEAP_SPLIT], bcast_sync=bcast_sync) as eng:
            space = loaded(eng, 9, 0, 1)
            eng.submit(space, 0, unmap())
            with self.assertRaises(RuntimeError):
                eng.flush(0, Deadline.BY_LAZY)
            self.assertEqual(eng.stats().broadcasts, 1)

    def test_descriptors_need_not_outlive_the_call(self):
        h = SplitHost()

        def make():
            return h.engine(arch="x86_64", cpus=2, backends=[
                tlbpol.Backend(MECH_BROADCAST, flags=BKF_SPLIT, cost_ns=100),
                tlbpol.Backend(MECH_IPI, cost_ns=900)])

        eng = make()
        gc.collect()
        with eng:
            h.shoot(loaded(eng, 9, 0, 1))
            self.assertEqual([c[0] for c in h.calls], ["issue", "sync"])


class LocklessWalkers(unittest.TestCase):
    def test_walker_sync_after_the_broadcast_on_the_initiator(self):
        h = SplitHost()
        with h.engine(walkers=True, arch="x86_64", cpus=2, backends=[CHEAP_SPLIT],
                      flags=ConfigFlag.LOCKLESS_WALKERS) as eng:
            space = loaded(eng, 9, 0, 1)
            h.shoot(space, tables=True)
            me = threading.get_ident()
            self.assertEqual([c[:3] for c in h.calls],
                             [("issue", 0, me), ("sync", 0, me), ("walker_sync", 0, me)])
            self.assertEqual(h.calls[2][3], frozenset({1}))
            self.assertEqual(h.ipis, [])
            h.shoot(space, tables=False)  # no tables freed: no walker to wait for
            self.assertEqual([c[0] for c in h.calls], ["issue", "sync"])

    def test_without_walker_sync_tables_go_by_interrupts(self):
        h = SplitHost()
        with h.engine(arch="x86_64", cpus=2, backends=[CHEAP_SPLIT],
                      flags=ConfigFlag.LOCKLESS_WALKERS) as eng:
            h.shoot(loaded(eng, 9, 0, 1), tables=True)
            self.assertEqual(h.calls, [])
            self.assertEqual(h.ipis, [(0, frozenset({1}))])

    def test_a_broadcast_that_interrupts_needs_no_sync(self):
        h = SplitHost()
        irq = tlbpol.Backend(MECH_BROADCAST, flags=BKF_SPLIT | BKF_IMPLIES_IRQ, cost_ns=100)
        with h.engine(walkers=True, arch="x86_64", cpus=2, backends=[irq],
                      flags=ConfigFlag.LOCKLESS_WALKERS) as eng:
            h.shoot(loaded(eng, 9, 0, 1), tables=True)
            self.assertEqual([c[0] for c in h.calls], ["issue", "sync"])


class Errors(unittest.TestCase):
    def refused(self, err, **kw):
        with self.assertRaises(tlbpol.TlbpolError) as cm:
            SplitHost().engine(arch="x86_64", cpus=2, **kw)
        self.assertEqual(cm.exception.errno, err)
        self.assertEqual(cm.exception.function, "tlbpol_engine_new")

    def test_ipi_with_split_is_einval(self):
        self.refused(errno.EINVAL, backends=[tlbpol.Backend(MECH_IPI, flags=BKF_SPLIT)])

    def test_each_descriptor_error(self):
        split = tlbpol.Backend(MECH_BROADCAST, flags=BKF_SPLIT)
        ipi = tlbpol.Backend(MECH_IPI)
        self.refused(errno.EINVAL, backends=[tlbpol.Backend(MECH_IPI, flags=BKF_DISABLED)])
        self.refused(errno.EINVAL, backends=[tlbpol.Backend(MECH_MAX)])
        self.refused(errno.EINVAL, backends=[tlbpol.Backend(MECH_BROADCAST, flags=BKF_SPLIT | 8)])
        # A broadcast the callbacks cannot carry out.
        self.refused(errno.EINVAL, backends=[tlbpol.Backend(MECH_BROADCAST)])
        self.refused(errno.EINVAL, backends=[split], bcast_issue=None, bcast_sync=None)
        # Half a split broadcast, with or without a descriptor.
        self.refused(errno.EINVAL, bcast_sync=None)
        self.refused(errno.EEXIST, backends=[split, split])
        self.refused(errno.ERANGE, backends=[split, ipi, ipi])

    def test_good_ones(self):
        for backends in ([], [tlbpol.Backend(MECH_IPI, flags=BKF_IMPLIES_IRQ)],
                         [tlbpol.Backend(MECH_BROADCAST, flags=BKF_SPLIT), tlbpol.Backend(MECH_IPI)]):
            with self.subTest(backends=backends):
                SplitHost().engine(arch="x86_64", cpus=2, backends=backends).close()
        # Switched off: no callbacks needed.
        off = tlbpol.Backend(MECH_BROADCAST, flags=BKF_DISABLED)
        Host().engine(arch="x86_64", cpus=2, backends=(off,)).close()

    def test_not_backends(self):
        for bad, name in ((5, "backends"), ([{"mech": 0}], "backends[0]"),
                          ([CHEAP_SPLIT, MECH_IPI], "backends[1]")):
            with self.subTest(bad=bad):
                with self.assertRaises(TypeError) as cm:
                    SplitHost().engine(arch="x86_64", cpus=2, backends=bad)
                self.assertIn(name, str(cm.exception))
        for name in ("bcast_issue", "bcast_sync", "walker_sync"):
            with self.assertRaises(TypeError) as cm:
                SplitHost().engine(arch="x86_64", cpus=2, **{name: 5})
            self.assertIn(name, str(cm.exception))


FIELDS = ("mech", "flags", "max_pages", "cost_ns", "cost_target_ns", "cost_remote_ns",
          "cost_page_ns")


class Numbers(unittest.TestCase):
    """Every field is a uint32_t: refused outside it, by type or by range,
    naming it, never truncated; the largest value reaches C as it is."""

    def test_struct_and_sizes(self):
        self.assertEqual(ctypes.sizeof(_ffi.BackendS), 8 * 4)
        c = tlbpol.Backend(MECH_BROADCAST, flags=BKF_SPLIT, max_pages=8, cost_ns=1,
                           cost_target_ns=2, cost_remote_ns=3, cost_page_ns=4)._to_c()
        self.assertEqual([getattr(c, f[0]) for f in _ffi.BackendS._fields_],
                         [ctypes.sizeof(_ffi.BackendS), MECH_BROADCAST, BKF_SPLIT, 8, 1, 2, 3, 4])

    def test_out_of_range_and_wrong_types(self):
        for field in FIELDS:
            label = "tlbpol_backend." + field
            for value in (-1, 2 ** 32, 2 ** 64 + 100):
                with self.subTest(field=field, value=value):
                    with self.assertRaises(OverflowError) as cm:
                        tlbpol.Backend(**dict({"mech": MECH_IPI}, **{field: value}))
                    self.assertIn(label, str(cm.exception))
            for value in (None, 1.5, True, "1"):
                with self.subTest(field=field, value=value):
                    with self.assertRaises(TypeError) as cm:
                        tlbpol.Backend(**dict({"mech": MECH_IPI}, **{field: value}))
                    self.assertIn(label, str(cm.exception))

    def test_changed_after_it_was_made(self):
        b = tlbpol.Backend(MECH_BROADCAST, flags=BKF_SPLIT)
        b.max_pages = 2 ** 32 + 1
        with self.assertRaises(OverflowError) as cm:
            SplitHost().engine(arch="x86_64", cpus=2, backends=[b])
        self.assertIn("tlbpol_backend.max_pages", str(cm.exception))

    def test_the_largest_reaches_c(self):
        top = 2 ** 32 - 1
        for field in ("max_pages", "cost_ns", "cost_target_ns", "cost_remote_ns", "cost_page_ns"):
            with self.subTest(field=field):
                b = tlbpol.Backend(MECH_BROADCAST, flags=BKF_SPLIT, **{field: top})
                self.assertEqual(getattr(b._to_c(), field), top)
                SplitHost().engine(arch="x86_64", cpus=2, backends=[b]).close()
        for field in ("mech", "flags"):
            with self.subTest(field=field):
                b = tlbpol.Backend(**dict({"mech": MECH_BROADCAST}, **{field: top}))
                with self.assertRaises(tlbpol.TlbpolError) as cm:
                    SplitHost().engine(arch="x86_64", cpus=2, backends=[b])
                self.assertEqual(cm.exception.errno, errno.EINVAL)


if __name__ == "__main__":
    unittest.main()
