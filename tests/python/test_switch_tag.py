#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An engine with a tag allocator (release 0.3, Engine(tags=...)) through
the package: tests/test_switch_tag.c's scenarios.  switch_tag() reports the
tag and one flush, the allocator's and the catch-up folded together; each
CPU's flush_local names its own tag of the address space, a broadcast the
address space's one global tag; per-CPU slots leave interrupts as the only
mechanism, unless global tags beside them give the broadcast a tag to name;
CPUs moved onto a global tag without a switch (Engine(load_tag=)); the
refusals.  Then what the package adds: the engine keeps the
Tags alive and has it alone until it is closed.

Needs PYTHONPATH=bindings/python and TLBPOL_LIBRARY=build/libtlbpol.so.0
(meson sets both: meson test -C build --suite python).
"""

import errno
import gc
import unittest

from helpers import RUA, RWUA, RecordingHost

import tlbpol
from tlbpol import Rule, TagFlush, Tags, TagUse, TlbpolError

NONE, TAG, ALL = TagFlush.NONE, TagFlush.TAG, TagFlush.ALL


class Host(RecordingHost):
    """RecordingHost with a broadcast that records its tag."""

    def __init__(self):
        super().__init__()
        self.bcasts = []

    def broadcast(self, from_cpu, f):
        self.bcasts.append(f.as_tag)

    def engine(self, **kw):
        # C's engine(): interrupts dear, a broadcast cheap, so the
        # broadcast wherever it is usable.
        kw.setdefault("broadcast", self.broadcast)
        kw.setdefault("rules", Rule.DEFAULT | Rule.BROADCAST)
        return super().engine(arch="x86_64", **kw)

    def last_tag_on(self, cpu):
        """The as_tag of the last flush_local on @cpu (C's last_tag_on())."""
        return next(f.as_tag for c, f in reversed(self.flushes) if c == cpu)

    def reset(self):
        self.flushes.clear()
        self.ipis.clear()
        self.bcasts.clear()


def dear_ipis(eng):
    eng.set_cost_model(ipi_ns=100000, ipi_target_ns=100000, broadcast_ns=1)


def protect():
    return tlbpol.Event("protect", va=0x1000, old_pte=RWUA, new_pte=RUA)


def percpu(cpus=2):
    return Tags("percpu", cpus=cpus, tag_bits=12, first_tag=1, slots=6)


class PerCpu(unittest.TestCase):
    """Per-CPU slots: a first use flushes the tag; a return to a slot that
    missed nothing flushes nothing; one that missed a change (the CPU was
    away, out of the footprint) flushes its tag.  Each CPU's flush names
    its own slot's tag of the address space; no broadcast even when
    cheaper."""

    def test_slots_flushes_and_tags(self):
        h = Host()
        tags = percpu()
        with h.engine(cpus=2, tags=tags) as eng:
            dear_ipis(eng)
            self.assertFalse(eng.rules & Rule.BROADCAST)
            a, b = eng.open_as(100), eng.open_as(200)
            self.assertEqual(eng.switch_tag(0, a), TagUse(1, TAG))
            self.assertEqual(eng.switch_tag(1, b).tag, 1)
            self.assertEqual(eng.switch_tag(1, a), (2, TAG))
            self.assertIs(eng.switch_tag(1, a).flush, NONE, "a TagFlush member")
            # A shootdown from CPU 0: its flush names PCID 1, CPU 1's PCID 2.
            h.reset()
            d = eng.submit(a, 0, protect())
            self.assertEqual(d.action, tlbpol.Action.SHOOTDOWN)
            self.assertEqual(h.last_tag_on(0), 1)
            self.assertEqual(h.last_tag_on(1), 2)
            self.assertEqual(h.ipis, [(0, frozenset({1}))], "interrupts, though dearer")
            self.assertEqual(h.bcasts, [])
            # CPU 1 goes to b (a stays in its slot) and back: nothing missed.
            self.assertEqual(eng.switch_tag(1, b), (1, NONE))
            self.assertEqual(eng.switch_tag(1, a), (2, NONE))
            # Away again while a changes: not interrupted, flushed at return.
            eng.switch_tag(1, b)
            h.reset()
            eng.submit(a, 0, protect())
            self.assertEqual([c for c, _ in h.flushes if c == 1], [])
            self.assertEqual(h.ipis, [])
            self.assertEqual(eng.switch_tag(1, a), (2, TAG))
            # Lazy: the tag stays loaded.
            self.assertEqual(eng.switch_tag(1, None), (2, NONE))
            self.assertEqual(eng.switch_tag(1, a), (2, NONE))
            # The allocator's counters may be read meanwhile: a load at each
            # switch to another address space, a tag flush at each slot's
            # first use only (the fourth TAG above was the engine's
            # catch-up, folded into the same answer).
            st = tags.stats()
            self.assertEqual((st.loads, st.tag_flushes, st.all_flushes), (7, 3, 0))


class Global(unittest.TestCase):
    """Global generations: one tag everywhere, which a broadcast names."""

    def test_broadcast_names_the_one_tag(self):
        h = Host()
        tags = Tags("global", cpus=4, tag_bits=8, first_tag=1)
        with h.engine(cpus=4, tags=tags) as eng:
            dear_ipis(eng)
            self.assertTrue(eng.rules & Rule.BROADCAST)
            b, a = eng.open_as(100), eng.open_as(200)
            self.assertEqual(eng.switch_tag(0, b), (1, ALL))
            for c in range(4):
                self.assertEqual(eng.switch_tag(c, a), (2, ALL if c else NONE), "CPU %d" % c)
            h.reset()
            eng.submit(a, 0, protect())
            self.assertEqual(h.bcasts, [2])
            self.assertEqual(h.ipis, [])
            self.assertEqual(eng.stats().shoot_broadcast, 1)
        st = tags.stats()
        self.assertEqual((st.loads, st.all_flushes, st.rollovers), (5, 4, 0))


class PerCpuGlobal(unittest.TestCase):
    """Per-CPU slots beside global tags (test_percpu_global_broadcast): an
    address space loaded on 2 CPUs gets a global tag at its next shootdown,
    which goes by interrupts (no CPU is on the tag yet: a broadcast would
    not spare one).  Once one has switched to it, the broadcast names it
    and the CPUs still under their slots (the initiator's own included)
    are interrupted or flushed, each flush naming its slot; once all have,
    the broadcast alone serves.  Closing the address space gives the tag
    back."""

    def test_broadcast_by_global_tag(self):
        h = Host()
        tags = Tags("percpu", cpus=4, tag_bits=4, first_tag=1, slots=3, nr_global=2,
                    global_min_cpus=2)
        with h.engine(cpus=4, tags=tags) as eng:
            dear_ipis(eng)
            self.assertTrue(eng.rules & Rule.BROADCAST, "by the global tags")
            b, a = eng.open_as(100), eng.open_as(200)
            eng.switch_tag(1, b)
            for c in range(3):
                self.assertIn(eng.switch_tag(c, a).tag, (1, 2, 3), "a slot")

            def shoot():
                h.reset()
                d = eng.submit(a, 0, protect())
                self.assertEqual(d.action, tlbpol.Action.SHOOTDOWN)
                return sorted(c for _, targets in h.ipis for c in targets)

            # Loaded on 3 CPUs: a global tag now, but nobody is on it yet.
            self.assertEqual(shoot(), [1, 2])
            self.assertEqual(h.bcasts, [])
            # CPU 1 moves to the global tag; CPU 2 stays on its slot.
            eng.switch_tag(1, b)
            self.assertEqual(eng.switch_tag(1, a).tag, 14)
            self.assertEqual(shoot(), [2], "the CPU still under its slot")
            self.assertEqual(h.bcasts, [14])
            self.assertEqual(h.last_tag_on(0), 1, "the initiator's slot")
            self.assertEqual(h.last_tag_on(2), 1, "CPU 2's slot")
            # Every CPU switches to it again: on the global tag.
            for c in range(3):
                eng.switch_tag(c, b)
                self.assertEqual(eng.switch_tag(c, a).tag, 14)
            self.assertEqual(shoot(), [])
            self.assertEqual(h.bcasts, [14])
            st = eng.stats()
            self.assertEqual((st.shoot_broadcast, st.shoot_ipi), (2, 2))
            # Closed, its global tag goes back.
            for c in range(3):
                eng.switch_tag(c, None)
                eng.unload(c)
            a.close()
            self.assertGreaterEqual(tags.stats().loads, 10)
        # 14 was given back: 15 is free, then 14 once recycled.
        x, y, z = tags.new_id(), tags.new_id(), tags.new_id()
        self.assertEqual((tags.make_global(x), tags.make_global(y)), (15, 14))
        with self.assertRaises(TlbpolError) as cm:
            tags.make_global(z)
        self.assertEqual(cm.exception.errno, errno.ENOSPC)


class LoadHost(Host):
    """Host with a load_tag that records (cpu, tag, flush), given to the
    engine unless @hook is False."""

    def __init__(self, hook=True):
        super().__init__()
        self.hook = hook
        self.loads = []

    def load_tag(self, cpu, tag, flush):
        self.loads.append((cpu, tag, flush))

    def engine(self, **kw):
        if self.hook:
            kw.setdefault("load_tag", self.load_tag)
        return super().engine(**kw)

    def loads_on(self, cpu):
        return [(tag, flush) for c, tag, flush in self.loads if c == cpu]


def global_tags():
    return Tags("percpu", cpus=4, tag_bits=4, first_tag=1, slots=3, nr_global=2,
                global_min_cpus=2)


class IrqLoad(unittest.TestCase):
    """load_tag (test_percpu_global_irq_load): CPUs move onto the global
    tag without a switch, the targets in the interrupt of the shootdown
    that gave it (by interrupts: no CPU was on it yet), the initiator at
    the end of its submit, a lazy CPU not at all (it comes back under its
    slot and is interrupted, and moves at its tick).  From then on the
    broadcast alone serves.  Without the hook nothing is called and CPUs
    move only at their switches, as before."""

    def start(self, h, eng):
        """b on CPU 1, then a on CPUs 0 to 2, each switch published by a
        tick (until then a CPU is not moved: its CR3 write may not have
        happened), CPU 2 lazy on a; then the shootdown from CPU 0 that
        gives a its global tag, by an interrupt to CPU 1 alone (the lazy
        CPU left out).  Returns a, b and the shootdown (the CPUs it
        interrupted)."""
        dear_ipis(eng)
        self.assertTrue(eng.rules & Rule.BROADCAST, "by the global tags")
        b, a = eng.open_as(100), eng.open_as(200)
        eng.switch_tag(1, b)
        for c in range(3):
            self.assertIn(eng.switch_tag(c, a).tag, (1, 2, 3), "a slot")
            eng.tick(c)
        self.assertEqual(eng.switch_tag(2, None).flush, NONE, "lazy on a")
        self.assertEqual(h.loads, [], "no global tag yet")

        def shoot():
            h.reset()
            d = eng.submit(a, 0, protect())
            self.assertEqual(d.action, tlbpol.Action.SHOOTDOWN)
            return sorted(c for _, targets in h.ipis for c in targets)

        self.assertEqual(shoot(), [1])
        self.assertEqual(h.bcasts, [])
        return a, b, shoot

    def test_load_tag_moves_cpus(self):
        h = LoadHost()
        with h.engine(cpus=4, tags=global_tags()) as eng:
            a, b, shoot = self.start(h, eng)
            # CPU 1 in its interrupt, CPU 0 at the end of its submit; not
            # the lazy CPU 2.  The first global tag a CPU loads: what was
            # under it is unknown, so everything is flushed first.
            self.assertEqual(h.loads, [(1, 14, ALL), (0, 14, ALL)])
            self.assertIs(h.loads[0][2], ALL, "a TagFlush member")
            # CPU 2 back from lazy, under its slot: the broadcast, and an
            # interrupt for CPU 2 only (its switch not yet published: it
            # does not move in it); its tick moves it.
            u = eng.switch_tag(2, a)
            self.assertIn(u.tag, (1, 2, 3), "a slot")
            self.assertEqual(shoot(), [2])
            self.assertEqual(h.bcasts, [14])
            self.assertEqual(h.last_tag_on(2), u.tag, "CPU 2's slot")
            self.assertEqual(h.loads_on(2), [])
            eng.tick(2)
            self.assertEqual(h.loads_on(2), [(14, ALL)])
            # The broadcast alone; nobody moves again; a switch back gives 14.
            self.assertEqual(shoot(), [])
            self.assertEqual(h.bcasts, [14])
            self.assertEqual(len(h.loads), 3)
            eng.switch_tag(1, b)
            self.assertEqual(eng.switch_tag(1, a).tag, 14)
            st = eng.stats()
            self.assertEqual((st.shoot_broadcast, st.shoot_ipi), (2, 2))

    def test_without_load_tag_as_before(self):
        h = LoadHost(hook=False)
        with h.engine(cpus=4, tags=global_tags()) as eng:
            a, b, shoot = self.start(h, eng)
            # Nobody on the tag, a tick or not: an interrupt again, no
            # broadcast.
            eng.tick(1)
            self.assertEqual(shoot(), [1])
            self.assertEqual(h.bcasts, [])
            # CPU 1 switches to it: the broadcast names it, CPU 2 (back,
            # under its slot) is interrupted beside it.
            eng.switch_tag(1, b)
            self.assertEqual(eng.switch_tag(1, a).tag, 14)
            eng.switch_tag(2, a)
            self.assertEqual(shoot(), [2])
            self.assertEqual(h.bcasts, [14])
            self.assertEqual(h.last_tag_on(0), 1, "the initiator's slot")
            for c in range(4):
                eng.tick(c)
        self.assertEqual(h.loads, [], "never called")

    def test_an_exception_in_load_tag_is_reraised(self):
        h = LoadHost()

        def load_tag(cpu, tag, flush):
            h.load_tag(cpu, tag, flush)
            if cpu == 2:
                raise RuntimeError("CR3 write failed")

        with h.engine(cpus=4, tags=global_tags(), load_tag=load_tag) as eng:
            a, b, shoot = self.start(h, eng)
            eng.switch_tag(2, a)
            self.assertEqual(shoot(), [2])
            with self.assertRaises(RuntimeError):
                eng.tick(2)
            # Counted on the tag all the same: the broadcast alone.
            self.assertEqual(h.loads_on(2), [(14, ALL)])
            self.assertEqual(shoot(), [])
            self.assertEqual(h.bcasts, [14])

    def test_not_callable(self):
        with self.assertRaises(TypeError) as cm:
            Host().engine(cpus=4, tags=global_tags(), load_tag=5)
        self.assertIn("load_tag", str(cm.exception))


class Refusals(unittest.TestCase):
    def test_allocator_for_fewer_cpus(self):
        h = Host()
        tags = percpu(cpus=2)
        with self.assertRaises(TlbpolError) as cm:
            h.engine(cpus=4, tags=tags)
        self.assertEqual((cm.exception.errno, cm.exception.function),
                         (errno.ERANGE, "tlbpol_engine_new"))
        # Given back: usable by an engine that fits, and loadable.
        self.assertFalse(tags.in_use)
        tags.load(0, tags.new_id())
        with h.engine(cpus=2, tags=tags) as eng:
            self.assertIs(eng.tags, tags)

    def test_switch_tag_without_tags(self):
        with Host().engine(cpus=2) as eng:
            self.assertIsNone(eng.tags)
            a = eng.open_as(1)
            for space in (a, None):
                with self.assertRaises(TlbpolError) as cm:
                    eng.switch_tag(0, space)
                self.assertEqual((cm.exception.errno, cm.exception.function),
                                 (errno.EINVAL, "tlbpol_switch_tag"))
            self.assertFalse(eng.switch(0, a), "the plain switch works")

    def test_switch_with_tags_and_switch_tag_errors(self):
        with Host().engine(cpus=2, tags=percpu()) as eng, Host().engine(cpus=2) as other:
            a = eng.open_as(1)
            for space in (a, None):
                with self.assertRaises(TlbpolError) as cm:
                    eng.switch(0, space)
                self.assertEqual((cm.exception.errno, cm.exception.function),
                                 (errno.EINVAL, "tlbpol_switch"))
            cases = [((2, a), errno.ERANGE, "no CPU 2"),
                     ((0, other.open_as(1)), errno.EINVAL, "another engine's")]
            for args, err, what in cases:
                with self.subTest(what):
                    with self.assertRaises(TlbpolError) as cm:
                        eng.switch_tag(*args)
                    self.assertEqual(cm.exception.errno, err)
            eng.cpu_state(1, tlbpol.CpuState.IDLE)
            with self.assertRaises(TlbpolError) as cm:
                eng.switch_tag(1, a)
            self.assertEqual(cm.exception.errno, errno.EBUSY, "not RUNNING")
            eng.cpu_state(1, tlbpol.CpuState.RUNNING)
            self.assertEqual(eng.switch_tag(1, a), (1, TAG))

    def test_numbers_and_types_before_c(self):
        with Host().engine(cpus=2, tags=percpu()) as eng:
            a = eng.open_as(1)
            with self.assertRaises(OverflowError) as cm:
                eng.switch_tag(2**32, a)  # not CPU 0
            self.assertIn("tlbpol_switch_tag(cpu)", str(cm.exception))
            for bad in (-1, 2**64):
                with self.assertRaises(OverflowError):
                    eng.switch_tag(bad, a)
            with self.assertRaises(TypeError):
                eng.switch_tag(True, a)
            with self.assertRaises(TypeError):
                eng.switch_tag(0, 1)
            self.assertEqual(eng.switch_tag(0, a), (1, TAG), "nothing reached C before")
        with self.assertRaises(TypeError):
            Host().engine(cpus=2, tags=object())


class Ownership(unittest.TestCase):
    """The allocator is the engine's alone while the engine lives, and the
    engine keeps it alive."""

    def test_no_other_load_or_engine_meanwhile(self):
        tags = percpu()
        mm = tags.new_id()
        eng = Host().engine(cpus=2, tags=tags)
        self.assertTrue(tags.in_use)
        with self.assertRaises(TlbpolError) as cm:
            tags.load(0, mm)
        self.assertEqual((cm.exception.errno, cm.exception.function),
                         (errno.EBUSY, "tlbpol_tag_load"))
        with self.assertRaises(TlbpolError) as cm:
            Host().engine(cpus=2, tags=tags)
        self.assertEqual(cm.exception.errno, errno.EBUSY)
        # What may run anywhere still does.
        self.assertIsNone(tags.tag_of(0, mm))
        self.assertEqual(tags.stats().loads, 0)
        eng.close()
        self.assertFalse(tags.in_use)
        self.assertEqual(tags.load(0, mm), (1, TAG))
        with Host().engine(cpus=2, tags=tags) as eng2:
            self.assertEqual(eng2.switch_tag(0, eng2.open_as(5)), (2, TAG))

    def test_engine_keeps_the_tags_alive(self):
        h = Host()
        eng = h.engine(cpus=2, tags=percpu())  # no other reference
        gc.collect()
        a = eng.open_as(7)
        for _ in range(3):
            self.assertEqual(eng.switch_tag(0, a).tag, 1)
            self.assertEqual(eng.switch_tag(1, a).tag, 1)
            eng.submit(a, 0, protect())
            eng.switch_tag(0, None)
            eng.switch_tag(1, None)
            eng.unload(0)
            eng.unload(1)
        self.assertEqual(eng.tags.stats().loads, 6)
        with self.assertRaises(AttributeError):
            eng.tags = None  # read-only: close() gives it back
        eng.close()
        self.assertFalse(eng.tags.in_use)


if __name__ == "__main__":
    unittest.main()
