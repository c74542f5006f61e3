#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The tlbpol package's API: names, decisions, callbacks, exceptions raised
in callbacks, errors as OSError, stats, deferred frees, stamps.

Needs PYTHONPATH=bindings/python and TLBPOL_LIBRARY=build/libtlbpol.so.0
(meson sets both: meson test -C build --suite bindings).
"""

import errno
import gc
import os
import subprocess
import sys
import unittest
from collections.abc import Mapping

import tlbpol
from tlbpol import (Action, Arch, CpuState, Deadline, EventFlag, EventKind, FlushKind,
                    Pte, Reason, Rule)

from helpers import RUA, RWUA, RWUAD, VA, loaded
from helpers import RecordingHost as Host


def downgrade(pages=1):
    return tlbpol.Event(EventKind.PROTECT, old_pte=RWUA, new_pte=RUA, nr_pages=pages, va=VA)


class Names(unittest.TestCase):
    def test_version(self):
        self.assertRegex(tlbpol.version(), r"^\d+\.\d+\.\d+$")
        lib = os.environ.get("TLBPOL_LIBRARY")
        if lib:
            self.assertEqual(tlbpol.lib_path(), lib)

    def test_rule_names_round_trip(self):
        bits = [r for r in Rule.__members__.values() if r and not r & (r - 1)]
        self.assertEqual(len(bits), 17)
        for r in bits:
            name = tlbpol.rule_str(r)
            self.assertEqual(name, r.name.lower().replace("_", "-"))
            self.assertEqual(tlbpol.parse_rules(name), r)
        self.assertEqual(tlbpol.rule_str(0), "unknown")

    def test_parse_rules(self):
        self.assertEqual(tlbpol.parse_rules("default,-lazy-unmap"), Rule.DEFAULT & ~Rule.LAZY_UNMAP)
        self.assertEqual(tlbpol.parse_rules("linux+receiver-merge"), Rule.LINUX | Rule.RECEIVER_MERGE)
        self.assertEqual(tlbpol.parse_rules("naive"), Rule.NONE)
        self.assertEqual(tlbpol.parse_rules("none"), 0)
        self.assertEqual(tlbpol.parse_rules("all"), Rule.ALL)
        self.assertIsInstance(tlbpol.parse_rules("linux"), Rule)

    def test_enum_names_match_library(self):
        for a in Action:
            self.assertEqual(tlbpol.action_str(a), a.name.lower())
        for d in Deadline:
            self.assertEqual(tlbpol.deadline_str(d), d.name.lower()[3:])
        for r in Reason:
            self.assertNotEqual(tlbpol.reason_str(r), "unknown", r)
        self.assertEqual(tlbpol.reason_str(Reason.SPURIOUS), "spurious-fault")
        self.assertEqual(tlbpol.reason_str(tlbpol.WHY_MAX), "unknown")

    def test_reason_cite(self):
        self.assertTrue(tlbpol.has_reason_cite(), "libtlbpol lacks tlbpol_reason_cite()")
        for arch in Arch:
            for r in Reason:
                cite = tlbpol.reason_cite(r, arch)
                self.assertTrue(cite and cite != "unknown", (r, arch))
        self.assertIn("SDM", tlbpol.reason_cite(Reason.SPURIOUS, "x86_64"))
        self.assertEqual(tlbpol.reason_cite(tlbpol.WHY_MAX, "arm64"), "unknown")
        raw = tlbpol._ffi.lib().tlbpol_reason_cite(int(Reason.UNMAP), tlbpol.ARCH_MAX)
        self.assertEqual(raw, b"unknown")

    def test_parse_arch(self):
        self.assertIs(tlbpol.parse_arch("x86_64"), Arch.X86_64)
        self.assertIs(tlbpol.parse_arch("AArch64"), Arch.ARM64)
        self.assertIs(tlbpol.parse_arch(0), Arch.GENERIC)
        with self.assertRaises(ValueError):
            tlbpol.parse_arch("sparc")

    def test_pte_spelling(self):
        self.assertEqual(tlbpol.parse_pte("rw"), Pte.PRESENT | Pte.WRITE)
        self.assertEqual(tlbpol.parse_pte("r"), Pte.PRESENT)
        self.assertEqual(tlbpol.parse_pte("rx"), Pte.PRESENT | Pte.EXEC)
        self.assertEqual(tlbpol.parse_pte("wd"), Pte.PRESENT | Pte.WRITE | Pte.DIRTY)
        self.assertEqual(tlbpol.parse_pte("rwxuadg"), Pte.ALL)
        for none in ("0", "none", "-", ""):
            self.assertEqual(tlbpol.parse_pte(none), 0)
        self.assertEqual(tlbpol.parse_pte("present|write|user"), Pte.PRESENT | Pte.WRITE | Pte.USER)
        self.assertEqual(tlbpol.parse_pte("0x13"), 0x13)
        with self.assertRaises(ValueError):
            tlbpol.parse_pte("rwz")
        with self.assertRaises(ValueError):
            tlbpol.parse_pte("present|bogus")
        self.assertEqual(tlbpol.format_pte(RWUAD), "rwuad")
        self.assertEqual(tlbpol.format_pte(0), "none")

    def test_event_kind_by_name(self):
        self.assertIs(tlbpol.Event("clear-young").kind, EventKind.CLEAR_YOUNG)
        with self.assertRaises(ValueError):
            tlbpol.Event("frobnicate")


class Decisions(unittest.TestCase):
    def decide(self, arch, rules, ev):
        h = Host()
        with h.engine(arch=arch, rules=rules, cpus=4) as eng:
            with eng.open_as(1) as space:
                return eng.decide(space, 0, ev)

    def test_seed_cases(self):
        spurious = tlbpol.Event("fault", old_pte=RWUAD, new_pte=RWUAD, flags=EventFlag.WRITE)
        d = self.decide("x86_64", "default", spurious)
        self.assertEqual((d.action, d.reason), (Action.NONE, Reason.SPURIOUS))
        self.assertIsInstance(d.action, Action)
        self.assertIsInstance(d.deadline, Deadline)
        self.assertIsInstance(d.reason, Reason)
        self.assertEqual(d.reason_name, "spurious-fault")

        d = self.decide("x86_64", "linux", downgrade())
        self.assertEqual(d, tlbpol.Decision(Action.SHOOTDOWN, Deadline.BY_NOW, Reason.DOWNGRADE))
        self.assertEqual(str(d), "shootdown/now (downgrade)")

        reclaim = tlbpol.Event("reclaim", old_pte=RWUA, new_pte=0)
        d = self.decide("x86_64", "default", reclaim)
        self.assertEqual(d, tlbpol.Decision(Action.SHOOTDOWN, Deadline.BY_FREE, Reason.RECLAIM_CLEAN))
        reclaim.old_pte = RWUAD
        d = self.decide("x86_64", "default", reclaim)
        self.assertEqual((d.deadline, d.reason), (Deadline.BY_WRITEBACK, Reason.RECLAIM_DIRTY))

        d = self.decide("arm64", "none", downgrade())
        self.assertEqual((d.action, d.reason), (Action.SHOOTDOWN, Reason.NAIVE))
        self.assertEqual(d.cite("arm64"), tlbpol.reason_cite(Reason.NAIVE, Arch.ARM64))

    def test_rules_argument(self):
        h = Host()
        with h.engine(arch="x86_64", rules="default,-lazy-unmap", cpus=2) as eng:
            self.assertFalse(eng.rules & Rule.LAZY_UNMAP)
            self.assertTrue(eng.rules & Rule.FOOTPRINT)
        with h.engine(arch=Arch.ARM64, rules=Rule.LINUX, cpus=2) as eng:
            self.assertEqual(eng.rules & ~Rule.LINUX, 0)


class Callbacks(unittest.TestCase):
    def test_flush_local_on_one_cpu(self):
        h = Host()
        with h.engine(arch="x86_64", cpus=1) as eng:
            space = eng.open_as(7)
            self.assertFalse(eng.switch(0, space))
            d = eng.submit(space, 0, downgrade())
            self.assertEqual(d.reason, Reason.DOWNGRADE)
            self.assertEqual(len(h.flushes), 1)
            cpu, f = h.flushes[0]
            self.assertEqual((cpu, f.as_tag, f.kind), (0, 7, FlushKind.PAGES))
            self.assertEqual(f.ranges, (tlbpol.Range(VA, 1, 12),))
            self.assertEqual(list(f.pages()), [VA])
            self.assertEqual(h.ipis, [])
            st = eng.stats()
            self.assertEqual((st["events"], st.local_flushes, st.pages_flushed), (1, 1, 1))

    def test_send_ipi_and_remote_flush(self):
        h = Host()
        with h.engine(arch="x86_64", cpus=3) as eng:
            space = loaded(eng, 1, 0, 2)
            eng.submit(space, 0, downgrade())
            self.assertEqual(h.ipis, [(0, frozenset({2}))])
            self.assertEqual(sorted(cpu for cpu, _ in h.flushes), [0, 2])
            self.assertEqual(eng.stats(2)["remote_flushes"], 1)
            self.assertEqual(eng.stats(0)["ipis_sent"], 1)

    def test_broadcast(self):
        h = Host()
        casts = []
        with h.engine(arch="x86_64", cpus=8, broadcast=lambda cpu, f: casts.append((cpu, f))) as eng:
            self.assertTrue(eng.rules & Rule.BROADCAST)
            eng.set_cost_model(ipi_ns=100000, ipi_target_ns=100000, broadcast_ns=1)
            space = loaded(eng, 1, *range(8))
            eng.submit(space, 0, downgrade())
            self.assertEqual(len(casts), 1)
            self.assertEqual(casts[0][0], 0)
            self.assertEqual(casts[0][1].ranges, (tlbpol.Range(VA, 1, 12),))
            self.assertEqual(h.ipis, [])
            st = eng.stats()
            self.assertEqual((st["broadcasts"], st["shoot_broadcast"], st["shoot_ipi"]), (1, 1, 0))

    def test_vcpu_defer(self):
        h = Host()
        asked = []

        def vcpu_defer(cpu):
            asked.append(cpu)
            return True

        with h.engine(arch="x86_64", cpus=2, vcpu_defer=vcpu_defer) as eng:
            space = loaded(eng, 1, 0, 1)
            eng.submit(space, 0, downgrade())
            self.assertIn(1, asked)
            self.assertEqual(h.ipis, [])
            self.assertEqual([c for c, _ in h.flushes], [0])

    def test_stuck_watchdog(self):
        h = Host()
        reports = []

        def stuck(cpu, waiting, turns):
            reports.append((cpu, waiting, turns))
            for c in waiting:  # the host decides: here it serves the lost interrupt
                h.eng.handle_ipi(c)

        lost = []
        with h.engine(arch="x86_64", cpus=2, stuck=stuck, wait_limit=50,
                      send_ipi=lambda cpu, t: lost.append(t), relax=lambda cpu: None) as eng:
            space = loaded(eng, 1, 0, 1)
            eng.submit(space, 0, downgrade())
            self.assertEqual(len(reports), 1)
            self.assertEqual(reports[0][:2], (0, frozenset({1})))
            self.assertEqual(reports[0][2] % 50, 0)
            self.assertEqual(len(lost), 2)  # the first, and the watchdog's
            st = eng.stats()
            self.assertEqual((st["stuck_calls"], st["ipis_resent"]), (1, 1))

    def test_callback_objects_kept_alive(self):
        def make():
            calls = []
            eng = tlbpol.Engine(arch="x86_64", cpus=1,
                                flush_local=lambda cpu, f: calls.append(cpu),
                                send_ipi=lambda cpu, t: None)
            return eng, calls

        eng, calls = make()
        gc.collect()
        gc.collect()
        space = loaded(eng, 1, 0)
        for _ in range(3):
            eng.submit(space, 0, downgrade())
            gc.collect()
        self.assertEqual(calls, [0, 0, 0])
        eng.close()

    def test_cpu_state_and_unload(self):
        h = Host()
        with h.engine(arch="x86_64", cpus=2) as eng:
            space = loaded(eng, 3, 0, 1)
            self.assertFalse(eng.cpu_state(1, CpuState.PREEMPTED))
            eng.submit(space, 0, downgrade())  # vcpu-defer: cpu 1 is not interrupted
            self.assertEqual(h.ipis, [])
            self.assertTrue(eng.cpu_state(1, CpuState.RUNNING))  # it must flush first
            eng.switch(0, None)
            eng.switch(1, None)
            with self.assertRaises(OSError) as cm:
                space.close()
            self.assertEqual(cm.exception.errno, errno.EBUSY)
            eng.unload(0)
            eng.unload(1)
            space.close()
            self.assertTrue(space.closed)
            space.close()  # twice: nothing


class Exceptions(unittest.TestCase):
    def test_flush_local_exception_reraised(self):
        h = Host()
        boom = RuntimeError("boom")

        def flush_local(cpu, f):
            h.flushes.append((cpu, f))
            if len(h.flushes) == 1:
                raise boom

        with h.engine(arch="x86_64", cpus=1, flush_local=flush_local) as eng:
            space = loaded(eng, 1, 0)
            with self.assertRaises(RuntimeError) as cm:
                eng.submit(space, 0, downgrade())
            self.assertIs(cm.exception, boom)
            # the engine went on, and goes on
            eng.submit(space, 0, downgrade())
            self.assertEqual(len(h.flushes), 2)
            self.assertEqual(eng.stats()["events"], 2)

    def test_base_exception_in_send_ipi(self):
        h = Host()

        def send_ipi(cpu, targets):
            h.send_ipi(cpu, targets)
            raise KeyboardInterrupt

        with h.engine(arch="x86_64", cpus=2, send_ipi=send_ipi) as eng:
            space = loaded(eng, 1, 0, 1)
            with self.assertRaises(KeyboardInterrupt):
                eng.submit(space, 0, downgrade())
            self.assertEqual(sorted(c for c, _ in h.flushes), [0, 1])  # it completed

    def test_vcpu_defer_exception_means_no(self):
        h = Host()

        def vcpu_defer(cpu):
            raise ValueError("no steal-time area")

        with h.engine(arch="x86_64", cpus=2, vcpu_defer=vcpu_defer) as eng:
            space = loaded(eng, 1, 0, 1)
            with self.assertRaises(ValueError):
                eng.submit(space, 0, downgrade())
            self.assertEqual(h.ipis, [(0, frozenset({1}))])  # interrupted, not deferred

    def test_nested_call_from_callback_is_ebusy(self):
        h = Host()

        def flush_local(cpu, f):
            h.eng.tick(cpu)  # not allowed inside an engine call for cpu

        with h.engine(arch="x86_64", cpus=1, flush_local=flush_local) as eng:
            space = loaded(eng, 1, 0)
            with self.assertRaises(OSError) as cm:
                eng.submit(space, 0, downgrade())
            self.assertEqual(cm.exception.errno, errno.EBUSY)
            self.assertEqual(cm.exception.function, "tlbpol_tick")

    def test_defer_free_exception(self):
        h = Host()
        with h.engine(arch="x86_64", cpus=1) as eng:
            def fn():
                raise LookupError("frame")
            with self.assertRaises(LookupError):
                eng.defer_free(0, fn)  # nothing pending: runs at once


class Errors(unittest.TestCase):
    def check(self, err, function, call, *args, **kw):
        with self.assertRaises(OSError) as cm:
            call(*args, **kw)
        exc = cm.exception
        self.assertIsInstance(exc, tlbpol.TlbpolError)
        self.assertEqual(exc.errno, err)
        self.assertEqual(exc.function, function)
        self.assertIn(function, str(exc))
        self.assertIn(os.strerror(err), str(exc))
        return exc

    def test_error_mapping(self):
        h = Host()
        self.check(errno.ERANGE, "tlbpol_engine_new", h.engine, cpus=0)
        self.check(errno.ERANGE, "tlbpol_engine_new", h.engine, cpus=tlbpol.MAX_CPUS + 1)
        self.check(errno.EINVAL, "tlbpol_rules_parse", tlbpol.parse_rules, "default-batch")
        self.check(errno.EINVAL, "tlbpol_rules_parse", h.engine, rules="bogus")
        self.check(errno.EINVAL, "tlbpol_engine_new", h.engine, rules=1 << 40)
        with h.engine(arch="x86_64", cpus=2) as eng:
            space = eng.open_as(5)
            self.check(errno.EEXIST, "tlbpol_as_open", eng.open_as, 5)
            self.check(errno.ERANGE, "tlbpol_switch", eng.switch, 2, space)
            self.check(errno.ERANGE, "tlbpol_tick", eng.tick, 9)
            self.check(errno.EINVAL, "tlbpol_flush", eng.flush, 0, 7)
            self.check(errno.EINVAL, "tlbpol_cpu_state", eng.cpu_state, 0, 9)
            eng.switch(0, space)
            self.check(errno.EBUSY, "tlbpol_unload", eng.unload, 0)  # it runs space
            self.check(errno.EBUSY, "tlbpol_as_close", space.close)
            bad = [tlbpol.Event("fault", nr_pages=0),
                   tlbpol.Event("fault", page_shift=13),
                   tlbpol.Event("fault", va=VA + 1),
                   tlbpol.Event("fault", old_pte=0x80),
                   tlbpol.Event("protect", flags=EventFlag.STAMP, old_pte=RWUA, new_pte=RUA)]
            before = dict(eng.stats())
            for ev in bad:
                with self.subTest(ev=ev):
                    self.check(errno.EINVAL, "tlbpol_decide", eng.decide, space, 0, ev)
                    self.check(errno.EINVAL, "tlbpol_submit", eng.submit, space, 0, ev)
            self.assertEqual(dict(eng.stats()), before, "a failed call moved a counter")
            self.check(errno.ERANGE, "tlbpol_stats_read", eng.stats, 2)
            self.check(errno.EINVAL, "tlbpol_stamp_settle", eng.stamp_settle, 0, 1 << 62)
        self.assertTrue(eng.closed and space.closed)
        with self.assertRaises(ValueError):
            eng.tick(0)  # closed engine
        with self.assertRaises(ValueError):
            space._h()

    def test_missing_library_is_an_oserror_naming_the_places(self):
        env = dict(os.environ, TLBPOL_LIBRARY="/nonexistent/libtlbpol.so.0")
        r = subprocess.run([sys.executable, "-c", "import tlbpol; tlbpol.version()"],
                           env=env, capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("OSError", r.stderr)
        self.assertIn("TLBPOL_LIBRARY", r.stderr)
        r = subprocess.run([sys.executable, "-c", "import tlbpol; print(tlbpol.Rule.LINUX.value)"],
                           env=env, capture_output=True, text=True)
        self.assertEqual(r.stdout.strip(), str(int(Rule.LINUX)), "import must not need the library")


class StatsAndFrees(unittest.TestCase):
    def test_stats_mapping(self):
        h = Host()
        with h.engine(arch="x86_64", cpus=2) as eng:
            space = loaded(eng, 1, 0)
            eng.submit(space, 0, downgrade())
            st = eng.stats()
            self.assertIsInstance(st, Mapping)
            self.assertEqual(set(st), set(tlbpol._ffi.STATS_COUNTERS + tlbpol._ffi.STATS_COUNTERS_0_2
                                          + tlbpol._ffi.STATS_COUNTERS_0_3))
            self.assertEqual(st["events"], st.events)
            self.assertEqual(st.by_reason[Reason.DOWNGRADE], 1)
            self.assertEqual(sum(st.by_reason.values()), 1)
            self.assertEqual(eng.stats(1)["events"], 0)
            with self.assertRaises(KeyError):
                st["nope"]

    def test_defer_free_waits_for_the_flush(self):
        h = Host()
        h.relax = lambda cpu: None  # interrupts only when the test delivers them
        ran = []
        with h.engine(arch="x86_64", cpus=2, relax=lambda cpu: h.deliver()) as eng:
            space = loaded(eng, 1, 0, 1)
            unmap = tlbpol.Event("unmap", old_pte=RWUA, new_pte=0, nr_pages=4)
            d = eng.submit(space, 0, unmap)
            self.assertEqual((d.action, d.deadline), (Action.SHOOTDOWN, Deadline.BY_FREE))
            eng.defer_free(0, lambda: ran.append("a"))
            eng.defer_free(0, lambda: ran.append("b"))
            self.assertEqual(ran, [])
            self.assertEqual(eng.frees_pending(0), 2)
            self.assertEqual(h.ipis, [])
            self.assertEqual(eng.flush(0, Deadline.BY_FREE), 1)
            self.assertEqual(ran, ["a", "b"])
            self.assertEqual(h.ipis, [(0, frozenset({1}))])
            self.assertEqual(eng.frees_pending(0), 0)
            self.assertEqual(eng.stats()["deferred_frees"], 2)
            eng.flush(0)
            self.assertEqual(ran, ["a", "b"], "a free ran twice")

    def test_stamps(self):
        h = Host()
        with h.engine(arch="x86_64", cpus=2) as eng:
            self.assertTrue(eng.rules & Rule.FLUSH_STAMP)
            space = loaded(eng, 1, 0, 1)
            ev = tlbpol.Event("unmap", old_pte=RWUA, new_pte=0,
                              flags=EventFlag.PRIVATE | EventFlag.STAMP)
            eng.submit(space, 0, ev)
            stamp = eng.stamp(0)
            self.assertNotEqual(stamp, 0)
            self.assertTrue(eng.stamp_pending(stamp))
            eng.tick(1)  # cpu 1 does the posted flush, no interrupt
            self.assertEqual(h.ipis, [])
            eng.tick(0)
            self.assertFalse(eng.stamp_pending(stamp))
            self.assertFalse(eng.stamp_settle(0, stamp))
            # Nothing stamped since the last stamp: ENOENT, not stamp 0
            # (which would say "nothing to settle" on the wrong CPU).
            with self.assertRaises(OSError) as ctx:
                eng.stamp(0)
            self.assertEqual(ctx.exception.errno, errno.ENOENT)


class Docs(unittest.TestCase):
    def test_readme_example_runs(self):
        readme = os.path.join(os.path.dirname(os.path.dirname(tlbpol.__file__)), "README.md")
        if not os.path.exists(readme):
            self.skipTest("no bindings/python/README.md next to the package")
        with open(readme, encoding="utf-8") as f:
            block = f.read().split("```python\n", 1)[1].split("```", 1)[0]
        out = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("shootdown/now (downgrade) -- ", out.stdout)

    def test_all_is_the_api(self):
        # The package is several modules; what it exports is one list: each
        # name once and defined, every enum and constant of the header
        # (_constants, generated from it), and not the layout test's table.
        self.assertEqual(len(set(tlbpol.__all__)), len(tlbpol.__all__))
        for name in tlbpol.__all__:
            self.assertTrue(hasattr(tlbpol, name), name)
        header = set(tlbpol._constants.__all__) - {"HEADER_CONSTANTS"}
        self.assertEqual(header - set(tlbpol.__all__), set())
        self.assertFalse(hasattr(tlbpol, "HEADER_CONSTANTS"))

    def test_docstrings(self):
        for name in tlbpol.__all__:
            obj = getattr(tlbpol, name)
            if callable(obj):
                self.assertTrue(obj.__doc__, name)
        for cls in (tlbpol.Engine, tlbpol.AddressSpace):
            for name, member in vars(cls).items():
                if not name.startswith("_") and callable(member):
                    self.assertTrue(member.__doc__, "%s.%s" % (cls.__name__, name))


class Typing(unittest.TestCase):
    def test_py_typed_and_mypy_strict(self):
        pkg = os.path.dirname(tlbpol.__file__)
        self.assertTrue(os.path.isfile(os.path.join(pkg, "py.typed")))
        import importlib.util
        if importlib.util.find_spec("mypy") is None:
            self.skipTest("mypy is not installed (Debian: python3-mypy)")
        r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                            "--cache-dir", os.devnull, pkg],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
