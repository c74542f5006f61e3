#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Flush mechanisms (release 0.3) through the package: Backend descriptors
(struct tlbpol_backend), the split-phase broadcast's callbacks
(bcast_issue, bcast_sync), lockless walkers (ConfigFlag.LOCKLESS_WALKERS
and walker_sync), the remote action (remote_action, MECH_REMOTE), the
cost model from measured costs (Calibration, cost_calibrate()), and every
number of a descriptor or a calibration checked before C.

Needs PYTHONPATH=bindings/python and TLBPOL_LIBRARY=build/libtlbpol.so.0
(meson sets both: meson test -C build --suite bindings).
"""

import ctypes
import errno
import gc
import threading
import unittest

import tlbpol
from tlbpol import (BKF_DISABLED, BKF_IMPLIES_IRQ, BKF_SPLIT, DEFAULT_COST_BROADCAST_NS,
                    DEFAULT_COST_BROADCAST_PAGE_NS, DEFAULT_COST_IPI_REMOTE_NS, MECH_BROADCAST,
                    MECH_IPI, MECH_MAX, MECH_REMOTE, Action, ConfigFlag, CpuState, Deadline,
                    EventFlag, FlushKind, Rule, _ffi)

from helpers import RUA, RWUA, VA, loaded
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


class RemoteHost(Host):
    """A host with a remote action (Intel RAR, an SBI remote fence), and a
    walker_sync if asked: each call recorded with its CPU and thread."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def remote_action(self, from_cpu, targets, f):
        self.calls.append(("remote", from_cpu, threading.get_ident(), targets, f))

    def walker_sync(self, cpu, cpus):
        self.calls.append(("walker_sync", cpu, threading.get_ident(), cpus))

    def engine(self, walkers=False, **kw):
        kw.setdefault("remote_action", self.remote_action)
        if walkers:
            kw.setdefault("walker_sync", self.walker_sync)
        return super().engine(arch="x86_64", cpus=4, **kw)

    shoot = SplitHost.shoot


CHEAP_REMOTE = tlbpol.Backend(MECH_REMOTE, cost_ns=100, cost_target_ns=10)


class RemoteAction(unittest.TestCase):
    """remote_action (MECH_REMOTE), on 4 CPUs all running one address
    space (tests/test_backends.c test_remote_action)."""

    def test_the_other_cpus_flushed_with_no_interrupt(self):
        # With no descriptor a remote action costs what interrupts do, and
        # wins the tie (it spares the targets theirs); a cheap one wins.
        for backends in (None, [CHEAP_REMOTE]):
            with self.subTest(backends=backends):
                h = RemoteHost()
                with h.engine(backends=backends) as eng:
                    self.assertTrue(eng.rules & Rule.BROADCAST)
                    h.shoot(loaded(eng, 9, 0, 1, 2, 3))
                    me = threading.get_ident()
                    self.assertEqual([c[:4] for c in h.calls],
                                     [("remote", 0, me, frozenset({1, 2, 3}))])
                    f = h.calls[0][4]
                    self.assertEqual((f.as_tag, f.kind), (9, FlushKind.PAGES))
                    self.assertEqual(f.ranges, (tlbpol.Range(VA, 2, 12),))
                    self.assertEqual(h.ipis, [])
                    # The initiator flushes itself; no code of ours runs on
                    # the targets.
                    self.assertEqual({cpu for cpu, _ in h.flushes}, {0})
                    st = eng.stats()
                    self.assertEqual((st.ipis_sent, st.broadcasts), (0, 0))

    def test_described_dear_it_is_not_used(self):
        h = RemoteHost()
        with h.engine(backends=[tlbpol.Backend(MECH_REMOTE, cost_ns=2 ** 30)]) as eng:
            h.shoot(loaded(eng, 9, 0, 1, 2, 3))
            self.assertEqual(h.calls, [])
            self.assertEqual(h.ipis, [(0, frozenset({1, 2, 3}))])
            self.assertEqual({cpu for cpu, _ in h.flushes}, {0, 1, 2, 3})

    def test_disabled_is_never_used(self):
        h = RemoteHost()
        off = tlbpol.Backend(MECH_REMOTE, flags=BKF_DISABLED, cost_ns=1)
        with h.engine(backends=[off]) as eng:
            self.assertFalse(eng.rules & Rule.BROADCAST)
            h.shoot(loaded(eng, 9, 0, 1, 2, 3))
            self.assertEqual(h.calls, [])
            self.assertEqual(h.ipis, [(0, frozenset({1, 2, 3}))])

    def test_a_preempted_vcpu_is_left_out(self):
        h = RemoteHost()
        with h.engine() as eng:
            space = loaded(eng, 9, 0, 1, 2, 3)
            eng.cpu_state(3, CpuState.PREEMPTED)
            h.shoot(space)
            self.assertEqual([c[:2] + c[3:4] for c in h.calls], [("remote", 0, frozenset({1, 2}))])

    def test_tables_under_walkers_then_walker_sync(self):
        h = RemoteHost()
        with h.engine(walkers=True, flags=ConfigFlag.LOCKLESS_WALKERS) as eng:
            space = loaded(eng, 9, 0, 1, 2, 3)
            eng.cpu_state(3, CpuState.PREEMPTED)  # it may be inside a walk
            h.shoot(space, tables=True)
            me = threading.get_ident()
            everyone = frozenset({1, 2, 3})
            self.assertEqual([c[:4] for c in h.calls],
                             [("remote", 0, me, everyone), ("walker_sync", 0, me, everyone)])
            self.assertEqual(h.ipis, [])

    def test_tables_under_walkers_without_walker_sync_go_by_interrupts(self):
        h = RemoteHost()
        with h.engine(flags=ConfigFlag.LOCKLESS_WALKERS) as eng:
            h.shoot(loaded(eng, 9, 0, 1, 2, 3), tables=True)
            self.assertEqual(h.calls, [])
            self.assertEqual(h.ipis, [(0, frozenset({1, 2, 3}))])

    def test_an_exception_in_remote_action_is_reraised(self):
        h = RemoteHost()

        def remote_action(from_cpu, targets, f):
            raise RuntimeError("RAR timeout")

        with h.engine(remote_action=remote_action) as eng:
            space = loaded(eng, 9, 0, 1, 2, 3)
            eng.submit(space, 0, unmap())
            with self.assertRaises(RuntimeError):
                eng.flush(0, Deadline.BY_LAZY)
            self.assertEqual(h.ipis, [])


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
        # A remote action the callbacks cannot carry out; one never split.
        self.refused(errno.EINVAL, backends=[tlbpol.Backend(MECH_REMOTE)])
        self.refused(errno.EINVAL, backends=[tlbpol.Backend(MECH_REMOTE, flags=BKF_SPLIT)],
                     remote_action=lambda from_cpu, targets, f: None)
        self.refused(errno.EEXIST, backends=[split, split])
        self.refused(errno.EEXIST, backends=[split, ipi, ipi])
        self.refused(errno.ERANGE, backends=[split, ipi, tlbpol.Backend(MECH_REMOTE), ipi])

    def test_good_ones(self):
        for backends in ([], [tlbpol.Backend(MECH_IPI, flags=BKF_IMPLIES_IRQ)],
                         [tlbpol.Backend(MECH_BROADCAST, flags=BKF_SPLIT), tlbpol.Backend(MECH_IPI)]):
            with self.subTest(backends=backends):
                SplitHost().engine(arch="x86_64", cpus=2, backends=backends).close()
        RemoteHost().engine(backends=[tlbpol.Backend(MECH_REMOTE), CHEAP_SPLIT],
                            bcast_issue=lambda cpu, f: None, bcast_sync=lambda cpu: None).close()
        # Switched off: no callbacks needed.
        for mech in (MECH_BROADCAST, MECH_REMOTE):
            off = tlbpol.Backend(mech, flags=BKF_DISABLED)
            Host().engine(arch="x86_64", cpus=2, backends=(off,)).close()

    def test_not_backends(self):
        for bad, name in ((5, "backends"), ([{"mech": 0}], "backends[0]"),
                          ([CHEAP_SPLIT, MECH_IPI], "backends[1]")):
            with self.subTest(bad=bad):
                with self.assertRaises(TypeError) as cm:
                    SplitHost().engine(arch="x86_64", cpus=2, backends=bad)
                self.assertIn(name, str(cm.exception))
        for name in ("bcast_issue", "bcast_sync", "walker_sync", "remote_action"):
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


# Dave Hansen's Haswell figures, in cycles (INVLPG 250, a CR3 write 2283,
# 250 to refill an entry; an interrupt's round trip 2000).
HASWELL = {"ipi_round_trip": 2000, "inval_page": 250, "full_flush": 2283, "refill": 250}
REQUIRED = tuple(HASWELL)
CALIBRATION_FIELDS = (("refill_entries", 32), ("ipi_round_trip", 64), ("ipi_send", 64),
                      ("irq_entry_exit", 64), ("inval_page", 64), ("full_flush", 64),
                      ("refill", 64), ("bcast_issue", 64), ("bcast_sync", 64),
                      ("bcast_max_pages", 32))


def haswell(**fields):
    return tlbpol.Calibration(**dict(HASWELL, **fields))


class Calibrate(unittest.TestCase):
    """cost_calibrate(): the configuration's costs and flush ceiling, and
    the descriptors, from measured costs (tests/test_backends.c
    test_calibrate)."""

    def test_haswell(self):
        m = tlbpol.cost_calibrate(haswell())
        self.assertIsInstance(m, tlbpol.CostModel)
        # 36 pages (Linux's 33); the round trip; a tenth of it to send (no
        # irq_entry_exit given: the initiator's time only).
        self.assertEqual((m.flush_ceiling, m.cost_ipi_ns, m.cost_ipi_target_ns), (36, 2000, 200))
        self.assertEqual(m.cost_ipi_remote_ns, DEFAULT_COST_IPI_REMOTE_NS)
        self.assertEqual((m.cost_broadcast_ns, m.cost_broadcast_page_ns),
                         (DEFAULT_COST_BROADCAST_NS, DEFAULT_COST_BROADCAST_PAGE_NS))
        self.assertEqual(m.ipi, tlbpol.Backend(MECH_IPI, cost_ns=2000, cost_target_ns=200,
                                               cost_remote_ns=DEFAULT_COST_IPI_REMOTE_NS))
        self.assertIsNone(m.bcast)  # no broadcast measured
        self.assertEqual(m.backends, (m.ipi,))

    def test_an_engine_uses_the_ceiling_and_the_descriptors(self):
        m = tlbpol.cost_calibrate(haswell())
        h = Host()
        with h.engine(arch="x86_64", cpus=1, flush_ceiling=m.flush_ceiling,
                      backends=m.backends) as eng:
            space = loaded(eng, 7, 0)
            for pages, kind in ((36, FlushKind.PAGES), (37, FlushKind.AS)):
                with self.subTest(pages=pages):
                    h.flushes.clear()
                    eng.submit(space, 0, tlbpol.Event("protect", old_pte=RWUA, new_pte=RUA,
                                                      va=VA, nr_pages=pages))
                    self.assertEqual([f.kind for _, f in h.flushes], [kind])

    def test_a_broadcast_measured(self):
        m = tlbpol.cost_calibrate(haswell(ipi_send=100, irq_entry_exit=300, refill_entries=8,
                                          bcast_issue=50, bcast_sync=1000, bcast_max_pages=8))
        # (2283 + 8 x 250) / (250 + 250) pages.
        self.assertEqual((m.flush_ceiling, m.cost_ipi_ns, m.cost_ipi_target_ns), (8, 2000, 400))
        self.assertEqual((m.cost_broadcast_ns, m.cost_broadcast_page_ns), (1050, 50))
        self.assertEqual(m.bcast, tlbpol.Backend(MECH_BROADCAST, max_pages=8, cost_ns=1050,
                                                 cost_page_ns=50))
        self.assertEqual(m.backends, (m.ipi, m.bcast))
        # Made split, it is what the engine chooses over interrupts.
        m.bcast.flags |= BKF_SPLIT
        h = SplitHost()
        with h.engine(arch="x86_64", cpus=2, backends=m.backends) as eng:
            h.shoot(loaded(eng, 9, 0, 1))
            self.assertEqual([c[:2] for c in h.calls], [("issue", 0), ("sync", 0)])
            self.assertEqual(h.ipis, [])

    def test_a_required_measurement_zero_is_einval(self):
        for field in REQUIRED:
            with self.subTest(field=field):
                with self.assertRaises(tlbpol.TlbpolError) as cm:
                    tlbpol.cost_calibrate(haswell(**{field: 0}))
                self.assertEqual(cm.exception.errno, errno.EINVAL)
                self.assertEqual(cm.exception.function, "tlbpol_cost_calibrate")
        with self.assertRaises(tlbpol.TlbpolError) as cm:
            tlbpol.cost_calibrate(tlbpol.Calibration())
        self.assertEqual(cm.exception.errno, errno.EINVAL)

    def test_not_a_calibration(self):
        for bad in (None, HASWELL, tlbpol.Backend(MECH_IPI)):
            with self.subTest(bad=bad):
                with self.assertRaises(TypeError) as cm:
                    tlbpol.cost_calibrate(bad)
                self.assertIn("calibration", str(cm.exception))


class CalibrationNumbers(unittest.TestCase):
    """Each field fits its C type or is refused, naming it, never truncated;
    the values reach C as given."""

    def test_struct_and_sizes(self):
        self.assertEqual(ctypes.sizeof(_ffi.CalibrationS), 2 * 4 + 8 * 8 + 2 * 4)
        c = tlbpol.Calibration(*range(1, 11))._to_c()
        self.assertEqual([getattr(c, f[0]) for f in _ffi.CalibrationS._fields_],
                         [ctypes.sizeof(_ffi.CalibrationS)] + list(range(1, 11)) + [0])
        self.assertEqual([f for f, _ in CALIBRATION_FIELDS],
                         [f[0] for f in _ffi.CalibrationS._fields_][1:-1])

    def test_out_of_range_and_wrong_types(self):
        for field, bits in CALIBRATION_FIELDS:
            label = "tlbpol_calibration." + field
            for value in (-1, 2 ** bits, 2 ** 64 + 100):
                with self.subTest(field=field, value=value):
                    with self.assertRaises(OverflowError) as cm:
                        haswell(**{field: value})
                    self.assertIn(label, str(cm.exception))
            for value in (None, 1.5, True, "1"):
                with self.subTest(field=field, value=value):
                    with self.assertRaises(TypeError) as cm:
                        haswell(**{field: value})
                    self.assertIn(label, str(cm.exception))

    def test_changed_after_it_was_made(self):
        c = haswell()
        c.full_flush = 2 ** 64
        with self.assertRaises(OverflowError) as cm:
            tlbpol.cost_calibrate(c)
        self.assertIn("tlbpol_calibration.full_flush", str(cm.exception))

    def test_beyond_32_bits_reach_c(self):
        # Cut to 32 bits the round trip would be 5 and inval_page 0 (EINVAL);
        # the library caps the costs at 2**32 - 1 instead.
        rt = 2 ** 32 + 5
        m = tlbpol.cost_calibrate(tlbpol.Calibration(
            ipi_round_trip=rt, inval_page=2 ** 32, refill=2 ** 32, full_flush=2 ** 40,
            bcast_issue=2 ** 32 + 7, bcast_sync=1, bcast_max_pages=2 ** 32 - 1))
        self.assertEqual((m.cost_ipi_ns, m.cost_ipi_target_ns), (2 ** 32 - 1, rt // 10))
        # (2**40 + 64 x 2**32) / (2**32 + 2**32) pages.
        self.assertEqual(m.flush_ceiling, 160)
        self.assertEqual((m.cost_broadcast_ns, m.cost_broadcast_page_ns), (2 ** 32 - 1,) * 2)
        self.assertEqual((m.bcast.max_pages, m.bcast.cost_ns), (2 ** 32 - 1,) * 2)

    def test_the_largest_reaches_c(self):
        for field, bits in CALIBRATION_FIELDS:
            with self.subTest(field=field):
                m = tlbpol.cost_calibrate(haswell(**{field: 2 ** bits - 1}))
                self.assertTrue(1 <= m.flush_ceiling <= 4096)
        self.assertEqual(tlbpol.cost_calibrate(haswell(ipi_round_trip=2 ** 64 - 1)).cost_ipi_ns,
                         2 ** 32 - 1)
        self.assertEqual(tlbpol.cost_calibrate(haswell(refill_entries=2 ** 32 - 1)).flush_ceiling,
                         4096)

    def test_sums_at_the_top_reach_c(self):
        # The library saturates its sums (inval_page + refill of 2**64 is no
        # zero divisor): each page costs the most there is, the ceiling 1.
        top = 2 ** 64 - 1
        for page, refill in ((top, 1), (1, top), (2 ** 63, 2 ** 63), (top, top)):
            with self.subTest(inval_page=page, refill=refill):
                m = tlbpol.cost_calibrate(haswell(inval_page=page, refill=refill))
                self.assertEqual((m.flush_ceiling, m.cost_ipi_ns, m.cost_ipi_target_ns),
                                 (1, 2000, 200))
        m = tlbpol.cost_calibrate(haswell(ipi_send=top, irq_entry_exit=top, bcast_issue=top,
                                          bcast_sync=1))
        self.assertEqual((m.cost_ipi_target_ns, m.cost_broadcast_ns, m.bcast.cost_ns),
                         (2 ** 32 - 1,) * 3)


if __name__ == "__main__":
    unittest.main()
