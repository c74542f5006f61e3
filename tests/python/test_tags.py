#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The tag allocators (release 0.3) through the package: tests/test_tags.c's
scenarios (per-CPU slots: hits, round-robin misses, eviction, each CPU's
slots its own, global tags beside them; global generations: the first load of each CPU flushes all,
a rollover keeps the tags CPUs run; each configuration error's errno; the
counters), then what the package adds: identities tied to their allocator,
names and enums, numbers refused before C, a concurrent load for one CPU
refused, and threads as CPUs checked against a model of each CPU's TLB by
tag.

Needs PYTHONPATH=bindings/python and TLBPOL_LIBRARY=build/libtlbpol.so.0
(meson sets both: meson test -C build --suite python).
"""

import ctypes
import errno
import random
import threading
import unittest
from ctypes import byref, c_void_p

import tlbpol
from tlbpol import (MAX_CPUS, TAG_BITS_MAX, TAG_SLOTS_MAX, TagFlush, TagKind, Tags, TagUse,
                    TlbpolError, _ffi)

NONE, TAG, ALL = TagFlush.NONE, TagFlush.TAG, TagFlush.ALL


def percpu(cpus=2, bits=12, first=1, slots=6):
    return Tags("percpu", cpus=cpus, tag_bits=bits, first_tag=first, slots=slots)


def global_(cpus=2, bits=3, first=1):
    return Tags("global", cpus=cpus, tag_bits=bits, first_tag=first)


class ConfigErrors(unittest.TestCase):
    # (kind, cpus, bits, first, slots), errno: test_config_errors's table.
    BAD = [((2, 2, 12, 1, 6), errno.EINVAL, "kind"),
           (("percpu", 0, 12, 1, 6), errno.EINVAL, "no CPU"),
           (("percpu", 2, 0, 1, 6), errno.EINVAL, "no bit"),
           (("global", 2, 8, 1, 6), errno.EINVAL, "slots in a pool"),
           (("percpu", MAX_CPUS + 1, 12, 1, 6), errno.ERANGE, "too many CPUs"),
           (("percpu", 2, TAG_BITS_MAX + 1, 1, 6), errno.ERANGE, "too wide"),
           (("percpu", 2, 12, 1, 0), errno.ERANGE, "no slot"),
           (("percpu", 2, 12, 1, TAG_SLOTS_MAX + 1), errno.ERANGE, "too many slots"),
           (("percpu", 2, 3, 1, 8), errno.ERANGE, "1..8 > 7"),
           (("percpu", 2, 3, 8, 1), errno.ERANGE, "first past width"),
           ((TagKind.GLOBAL, 4, 3, 4, 0), errno.ERANGE, "4 tags, 4 CPUs")]

    def test_each_error(self):
        for (kind, cpus, bits, first, slots), err, what in self.BAD:
            with self.subTest(what):
                with self.assertRaises(TlbpolError) as cm:
                    Tags(kind, cpus=cpus, tag_bits=bits, first_tag=first, slots=slots)
                self.assertEqual(cm.exception.errno, err)
                self.assertEqual(cm.exception.function, "tlbpol_tags_init")

    def test_the_smallest_global_pool(self):
        t = Tags(TagKind.GLOBAL, cpus=4, tag_bits=3, first_tag=3)  # 5 tags > 4 CPUs
        self.assertIs(t.kind, TagKind.GLOBAL)
        self.assertEqual((t.cpus, t.tag_bits, t.first_tag, t.slots), (4, 3, 3, 0))
        self.assertEqual(repr(t), "Tags(global, cpus=4, tag_bits=3, first_tag=3, slots=0)")

    def test_kind_names(self):
        for name in ("percpu", "PerCPU", " per-cpu", TagKind.PERCPU, 0):
            self.assertIs(Tags(name, cpus=1, tag_bits=4, first_tag=1, slots=2).kind,
                          TagKind.PERCPU)
        self.assertIs(Tags("Global", cpus=1, tag_bits=4).kind, TagKind.GLOBAL)
        self.assertRaises(ValueError, Tags, "asid", cpus=1, tag_bits=4)
        self.assertRaises(TypeError, Tags, None, cpus=1, tag_bits=4)

    def test_raw_sizes_and_memory(self):
        """What the safe class cannot reach, through the prototypes: the
        configuration's size (too small, larger with a nonzero tail),
        misaligned memory and too little of it."""
        lib = _ffi.lib()
        cfg = _ffi.TagsConfigS(size=ctypes.sizeof(_ffi.TagsConfigS), kind=TagKind.GLOBAL,
                               nr_cpus=4, tag_bits=3, first_tag=3, nr_slots=0)
        need = lib.tlbpol_tags_size(byref(cfg))
        self.assertGreater(need, 0)
        buf = (ctypes.c_char * 8192)()
        addr = ctypes.addressof(buf)
        addr += (-addr) % 64
        out = c_void_p()

        def init(mem, n, c):
            return lib.tlbpol_tags_init(byref(out), c_void_p(mem), n, byref(c))

        self.assertEqual(init(addr + 8, 4096, cfg), -errno.EINVAL)
        self.assertEqual(init(addr, need - 1, cfg), -errno.ENOMEM)
        self.assertIsNone(out.value)

        class Big(ctypes.Structure):
            _fields_ = [("c", _ffi.TagsConfigS), ("future", ctypes.c_uint32)]

        big = Big(cfg, 1)
        big.c.size = ctypes.sizeof(Big)
        self.assertEqual(init(addr, 4096, big.c), -errno.E2BIG)
        self.assertIsNone(out.value)
        big.future = 0
        self.assertEqual(init(addr, 4096, big.c), 0)
        self.assertEqual(out.value, addr)
        cfg.size -= 4
        self.assertEqual(lib.tlbpol_tags_size(byref(cfg)), 0)
        self.assertEqual(init(addr, 4096, cfg), -errno.EINVAL)


class PerCpu(unittest.TestCase):
    """Linux x86's six PCIDs 1..6 per CPU: hits, round-robin misses."""

    def test_slots(self):
        t = percpu()
        ids = [t.new_id() for _ in range(8)]
        for x in ids:
            self.assertIsNone(t.tag_of(0, x))
        # Six misses fill the six slots, each flushed.
        for i in range(6):
            self.assertEqual(t.load(0, ids[i]), TagUse(1 + i, TAG))
        # Hits, in any order, flush nothing.
        for i in reversed(range(6)):
            self.assertEqual(t.load(0, ids[i]), (1 + i, NONE))
            self.assertEqual(t.tag_of(0, ids[i]), 1 + i)
        # The seventh takes slot 1 (PCID 1) from ids[0], flushed: ids[0] has
        # no tag there any more, and takes the next slot, flushed.
        self.assertEqual(t.load(0, ids[6]), (1, TAG))
        self.assertIsNone(t.tag_of(0, ids[0]))
        u = t.load(0, ids[0])
        self.assertEqual(u, (2, TAG))
        self.assertIs(u.flush, TagFlush.TAG)
        self.assertIsNone(t.tag_of(0, ids[1]), "ids[1] lost PCID 2")
        # CPU 1's slots are its own.
        self.assertIsNone(t.tag_of(1, ids[0]))
        self.assertEqual(t.load(1, ids[5]), (1, TAG))
        self.assertEqual(t.tag_of(0, ids[5]), 6)
        self.assertEqual(t.tag_of(1, ids[5]), 1)
        # Refusals: a CPU the allocator does not have.
        for call in (lambda: t.load(2, ids[0]), lambda: t.tag_of(2, ids[0])):
            with self.assertRaises(TlbpolError) as cm:
                call()
            self.assertEqual(cm.exception.errno, errno.ERANGE)
        self.assertEqual(dict(t.stats(0)), {"loads": 14, "tag_flushes": 8, "all_flushes": 0,
                                            "rollovers": 0})
        self.assertEqual((t.stats().loads, t.stats().tag_flushes), (15, 9))

    def test_identities_are_never_reused(self):
        t = percpu(cpus=1, slots=1)
        a, b = t.new_id(), t.new_id()
        self.assertEqual(t.load(0, a), (1, TAG))
        self.assertEqual(t.load(0, b), (1, TAG), "b takes a's slot: flushed")
        self.assertEqual(t.load(0, a), (1, TAG))


class Global(unittest.TestCase):
    def test_rollover(self):
        """Tags 1..7 (3 bits, 0 the host's) on 2 CPUs: the first load of each
        CPU flushes all; then loads are free until the pool runs out; the
        eighth identity rolls over.  CPU 1 runs ids[1] then, so ids[1] keeps
        tag 2 in the new generation, and nobody else gets it."""
        t = global_()
        ids = [t.new_id() for _ in range(9)]
        self.assertIsNone(t.tag_of(0, ids[0]), "never loaded")
        self.assertEqual(t.load(0, ids[0]), (1, ALL))
        self.assertEqual(t.load(1, ids[1]), (2, ALL))
        # One tag on every CPU.
        self.assertEqual(t.load(1, ids[0]), (1, NONE))
        self.assertEqual((t.tag_of(0, ids[0]), t.tag_of(1, ids[0])), (1, 1))
        t.load(1, ids[1])
        for i in range(2, 7):
            self.assertEqual(t.load(0, ids[i]), (1 + i, NONE))
        self.assertEqual(t.stats()["rollovers"], 0)
        # The pool is empty: a rollover.  CPU 0 ran ids[6] (tag 7), CPU 1
        # ids[1] (tag 2): both stay taken; ids[7] gets the first free one.
        self.assertEqual(t.load(0, ids[7]), (1, ALL))
        s = t.stats()
        self.assertEqual((s.rollovers, s.all_flushes), (1, 3))
        # ids[0] had tag 1 in the old generation: now taken, another one.
        self.assertEqual(t.load(0, ids[0]), (3, NONE))
        # ids[1], reserved by CPU 1, keeps tag 2; CPU 1 flushes all first.
        self.assertEqual(t.load(1, ids[1]), (2, ALL))
        # ids[6], reserved by CPU 0, keeps 7 wherever it runs.
        self.assertEqual(t.load(1, ids[6]), (7, NONE))
        self.assertEqual(dict(t.stats(1)), {"loads": 5, "tag_flushes": 0, "all_flushes": 2,
                                            "rollovers": 0})
        self.assertEqual((t.stats(0).loads, t.stats(0).rollovers), (8, 1))


class PerCpuGlobal(unittest.TestCase):
    """Global tags beside per-CPU slots (test_percpu_global): 4-bit tags,
    slots 1..3 on each of 2 CPUs, global tags 14 and 15."""

    def test_percpu_global(self):
        with self.assertRaises(TlbpolError) as cm:
            Tags("percpu", cpus=2, tag_bits=4, first_tag=1, slots=3, nr_global=13)
        self.assertEqual(cm.exception.errno, errno.ERANGE, "3 slots + 13 > 15 tags")
        t = Tags("percpu", cpus=2, tag_bits=4, first_tag=1, slots=3, nr_global=2)
        self.assertEqual((t.nr_global, t.global_min_cpus), (2, 0))
        a, b, d = t.new_id(), t.new_id(), t.new_id()
        self.assertEqual(t.load(0, a).tag, 1)
        self.assertIsNone(t.global_of(a))
        self.assertEqual(t.make_global(a), 14)
        with self.assertRaises(TlbpolError) as cm:
            t.make_global(a)
        self.assertEqual((cm.exception.errno, cm.exception.function),
                         (errno.EEXIST, "tlbpol_tag_make_global"))
        self.assertEqual(t.global_of(a), 14)
        # CPU 0 still runs it under its slot until its next load.
        self.assertEqual(t.tag_of(0, a), 1)
        self.assertEqual(t.load(0, a), (14, ALL))
        self.assertEqual(t.tag_of(0, a), 14)
        self.assertIs(t.load(0, a).flush, NONE)
        self.assertEqual(t.load(1, a), (14, ALL))
        # The slot CPU 0 gave up is taken again with its flush.
        self.assertEqual(t.load(0, b), (2, TAG))
        self.assertEqual(t.make_global(b), 15)
        with self.assertRaises(TlbpolError) as cm:
            t.make_global(d)
        self.assertEqual(cm.exception.errno, errno.ENOSPC)
        # a goes: 14 is handed out again only after a flush of all.
        self.assertIsNone(t.release(a))
        self.assertTrue(a.released)
        self.assertIsNone(t.global_of(a))
        self.assertIsNone(t.release(a), "a second release: nothing, as in C")
        self.assertEqual(t.make_global(d), 14)
        self.assertEqual(t.load(1, d), (14, ALL))
        self.assertEqual(t.load(1, b), (15, NONE))
        self.assertIs(t.load(0, d).flush, ALL)
        # Refusals: C's NULLs are TypeErrors here (nothing reaches C).
        for call in (t.make_global, t.global_of, t.release):
            with self.assertRaises(TypeError):
                call(None)
        t = Tags("percpu", cpus=2, tag_bits=4, first_tag=1, slots=3)
        a = t.new_id()
        with self.assertRaises(TlbpolError) as cm:
            t.make_global(a)
        self.assertEqual(cm.exception.errno, errno.EINVAL, "no global tags")
        t = Tags("global", cpus=2, tag_bits=4, first_tag=1)
        a = t.new_id()
        with self.assertRaises(TlbpolError) as cm:
            t.make_global(a)
        self.assertEqual(cm.exception.errno, errno.EINVAL)
        t.release(a)
        for kw in (dict(nr_global=1), dict(global_min_cpus=2)):
            with self.assertRaises(TlbpolError) as cm:
                Tags("global", cpus=2, tag_bits=4, first_tag=1, **kw)
            self.assertEqual(cm.exception.errno, errno.EINVAL, kw)

    def test_released_identity_is_gone(self):
        """What the package adds: a released identity is never loaded or
        made global again (C would take it for a plain per-CPU identity);
        the queries still answer."""
        t = Tags("percpu", cpus=2, tag_bits=4, first_tag=1, slots=3, nr_global=2)
        a = t.new_id()
        self.assertEqual(t.load(0, a), (1, TAG))
        self.assertFalse(a.released)
        t.release(a)
        self.assertIn("released", repr(a))
        for call in (lambda: t.load(0, a), lambda: t.make_global(a)):
            with self.assertRaises(ValueError) as cm:
                call()
            self.assertIn("released", str(cm.exception))
        self.assertEqual(t.stats().loads, 1, "nothing loaded")
        self.assertEqual(t.tag_of(0, a), 1, "its entries are still under slot 1 there")
        self.assertIsNone(t.global_of(a))

    def test_another_allocators_identity(self):
        a = Tags("percpu", cpus=2, tag_bits=4, first_tag=1, slots=3, nr_global=2)
        b = Tags("percpu", cpus=2, tag_bits=4, first_tag=1, slots=3, nr_global=2)
        xa, xb = a.new_id(), b.new_id()
        # xa's word equals xb's: C alone would give xb a global tag.
        for call in (b.make_global, b.global_of, b.release):
            with self.assertRaises(ValueError):
                call(xa)
        self.assertFalse(xa.released)
        self.assertIsNone(b.global_of(xb))
        self.assertEqual(a.make_global(xa), 14)
        self.assertEqual(b.make_global(xb), 14, "b's first global tag still free")

    def test_repr(self):
        t = Tags("percpu", cpus=2, tag_bits=12, first_tag=1, slots=6, nr_global=64,
                 global_min_cpus=8)
        self.assertEqual(repr(t), "Tags(percpu, cpus=2, tag_bits=12, first_tag=1, slots=6, "
                                  "nr_global=64, global_min_cpus=8)")
        self.assertEqual(t.make_global(t.new_id()), 4096 - 64)


class Stats(unittest.TestCase):
    def test_cpu_argument(self):
        t = percpu()
        x = t.new_id()
        t.load(0, x)
        t.load(0, x)
        self.assertEqual(t.stats(0), {"loads": 2, "tag_flushes": 1, "all_flushes": 0,
                                      "rollovers": 0})
        self.assertEqual(dict(t.stats(-1)), dict(t.stats()))  # as in C: the sum
        self.assertEqual(t.stats(1).loads, 0)
        self.assertEqual(len(t.stats()), 4)
        self.assertRaises(AttributeError, getattr, t.stats(), "events")
        for cpu in (2, -2, 2 ** 31 - 1):
            with self.assertRaises(TlbpolError) as cm:
                t.stats(cpu)
            self.assertEqual(cm.exception.errno, errno.ERANGE)


class Identities(unittest.TestCase):
    def test_another_allocators_identity_is_refused(self):
        a, b = percpu(), percpu()
        xa, xb = a.new_id(), b.new_id()
        self.assertEqual(b.load(0, xb), (1, TAG))
        # xa's word equals xb's (each allocator's first identity): C alone
        # would take it for xb and hand it xb's PCID unflushed.
        for call in (lambda: b.load(0, xa), lambda: b.tag_of(0, xa)):
            with self.assertRaises(ValueError):
                call()
        self.assertEqual(b.stats().loads, 1, "nothing loaded")
        self.assertEqual(a.load(0, xa), (1, TAG))

    def test_not_an_identity(self):
        t = percpu()
        for bad in (None, 1, _ffi.TagIdS(word=1)):
            for call in (lambda: t.load(0, bad), lambda: t.tag_of(0, bad)):
                with self.assertRaises(TypeError) as cm:
                    call()
                self.assertIn("tag_id", str(cm.exception))
        self.assertEqual(t.stats().loads, 0)

    def test_enums_print_by_name(self):
        self.assertEqual(str(TagFlush.ALL), "TagFlush.ALL")
        self.assertEqual(f"{TagKind.GLOBAL}", "TagKind.GLOBAL")
        self.assertEqual(f"{TagFlush.TAG:d}", "1")
        self.assertEqual(int(TagFlush.ALL), tlbpol.TAG_FLUSH_ALL)
        self.assertEqual(int(TagKind.GLOBAL), tlbpol.TAGS_GLOBAL)


class Integers(unittest.TestCase):
    """Numbers are checked before C, never truncated: a CPU of 2**32 is not
    CPU 0, nor stats(2**32 - 1) the sum; each config field likewise."""

    def test_cpus(self):
        t = percpu()
        x = t.new_id()
        before = (dict(t.stats()), t.tag_of(0, x), t.tag_of(1, x))
        for label, call, bits, signed in (("tlbpol_tag_load(cpu)", t.load, 32, False),
                                          ("tlbpol_tag_of(cpu)", t.tag_of, 32, False),
                                          ("tlbpol_tags_stats_read(cpu)",
                                           lambda c, _: t.stats(c), 32, True)):
            low, high = (-(1 << (bits - 1)) - 1, 1 << (bits - 1)) if signed else (-1, 1 << bits)
            for bad in (low, high, high + 2 ** 32):
                with self.subTest(label, cpu=bad):
                    with self.assertRaises(OverflowError) as cm:
                        call(bad, x)
                    self.assertIn(label, str(cm.exception))
            for bad in (1.0, True, "0", b"0"):
                with self.subTest(label, cpu=bad):
                    with self.assertRaises(TypeError) as cm:
                        call(bad, x)
                    self.assertIn(label, str(cm.exception))
        self.assertEqual((dict(t.stats()), t.tag_of(0, x), t.tag_of(1, x)), before,
                         "nothing loaded")
        # The highest value reaches C, which refuses it.
        with self.assertRaises(TlbpolError) as cm:
            t.load(2 ** 32 - 1, x)
        self.assertEqual(cm.exception.errno, errno.ERANGE)

    def test_config_fields(self):
        fields = {"cpus": "nr_cpus", "tag_bits": "tag_bits", "first_tag": "first_tag",
                  "slots": "nr_slots"}
        for arg, field in fields.items():
            label = "tlbpol_tags_config." + field
            for bad in (-1, 2 ** 32, 2 ** 32 + 1):
                with self.subTest(label, value=bad):
                    kw = dict(cpus=2, tag_bits=12, first_tag=1, slots=6)
                    kw[arg] = bad
                    with self.assertRaises(OverflowError) as cm:
                        Tags("percpu", **kw)
                    self.assertIn(label, str(cm.exception))
            # 2**32 + 1 cut to 32 bits would be 1: a valid allocator.
            kw = dict(cpus=2, tag_bits=12, first_tag=1, slots=6)
            kw[arg] = 2 ** 32 - 1
            with self.assertRaises(TlbpolError) as cm:
                Tags("percpu", **kw)
            self.assertEqual(cm.exception.errno, errno.ERANGE, label)
        for bad in (-1, 2 ** 32):
            with self.assertRaises(OverflowError) as cm:
                Tags(bad, cpus=2, tag_bits=12, first_tag=1, slots=6)
            self.assertIn("tlbpol_tags_config.kind", str(cm.exception))
        with self.assertRaises(TlbpolError) as cm:
            Tags(2 ** 32 - 1, cpus=2, tag_bits=12, first_tag=1, slots=6)
        self.assertEqual(cm.exception.errno, errno.EINVAL)


class Threads(unittest.TestCase):
    """Threads as CPUs, each loading identities shared by all, checked by a
    model of each CPU's TLB by tag (as tests/tag_stress.c): after the flush
    a load asks for, the tag it gives holds no other address space's
    entries; and a second load for a CPU while one runs is refused."""

    UNKNOWN, CLEAN = -2, -1

    def stress(self, t, nids, loads=1500):
        ids = [t.new_id() for _ in range(nids)]
        violations = []
        errors = []

        def cpu(c):
            try:
                rng = random.Random(c)
                tlb = [self.UNKNOWN] * (1 << t.tag_bits)
                for _ in range(loads):
                    x = rng.randrange(nids)
                    u = t.load(c, ids[x])
                    if u.flush == ALL:
                        tlb = [self.CLEAN] * len(tlb)
                    elif u.flush == TAG:
                        tlb[u.tag] = self.CLEAN
                    if tlb[u.tag] not in (self.CLEAN, x):
                        violations.append((c, u, x, tlb[u.tag]))
                    tlb[u.tag] = x
                    if t.tag_of(c, ids[x]) != u.tag:
                        violations.append((c, u, x, "tag_of"))
            except BaseException as exc:  # reported by the test's thread
                errors.append(exc)

        threads = [threading.Thread(target=cpu, args=(c,)) for c in range(t.cpus)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.assertEqual(errors, [])
        self.assertEqual(violations, [])
        self.assertEqual(t.stats().loads, loads * t.cpus)
        return t.stats()

    def test_global(self):
        s = self.stress(global_(cpus=4, bits=4), 24)
        self.assertGreater(s.rollovers, 0)

    def test_percpu(self):
        s = self.stress(percpu(cpus=4, slots=6), 16)
        self.assertGreater(s.tag_flushes, 0)
        self.assertEqual(s.all_flushes, 0)

    def test_a_concurrent_load_for_one_cpu_is_refused(self):
        t = percpu()
        x = t.new_id()
        t._loading[1].acquire()  # as a load for CPU 1 on another thread
        try:
            with self.assertRaises(TlbpolError) as cm:
                t.load(1, x)
            self.assertEqual(cm.exception.errno, errno.EBUSY)
            self.assertEqual(t.load(0, x), (1, TAG), "other CPUs load")
        finally:
            t._loading[1].release()
        self.assertEqual(t.load(1, x), (1, TAG))
        self.assertEqual(t.stats().loads, 2)


if __name__ == "__main__":
    unittest.main()
