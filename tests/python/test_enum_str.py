#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The header's enums print by name on every Python (3.11 made str() of
an IntEnum its number) and are the same numbers as before, for Python and
for C: str(), f-strings, numeric format specs, repr(), and what the
library is handed."""

import ctypes
import enum
import operator
import unittest

import tlbpol
# Only what `import tlbpol` sets up: tlbpol._enumstr, which makes the enums
# print by name, is not imported here (that would hide a package that
# forgets to).
from tlbpol import (Action, Arch, Deadline, EventFlag, EventKind, Pte, Reason, Rule,
                    _constants, _ffi)


def header_enums():
    """Every enum and flag class of the generated tlbpol._constants."""
    return [c for c in vars(_constants).values()
            if isinstance(c, type) and issubclass(c, enum.Enum)]


class EnumStr(unittest.TestCase):
    def test_every_class_is_covered(self):
        self.assertGreaterEqual(len(header_enums()), 12)
        for cls in header_enums():
            self.assertIsNot(cls.__str__, int.__str__, cls)
            self.assertIsNot(cls.__format__, int.__format__, cls)

    def test_members_print_by_name(self):
        for cls in header_enums():
            for name, m in cls.__members__.items():
                want = "%s.%s" % (cls.__name__, name)
                if issubclass(cls, enum.Flag) and m.name != name:  # an alias (Rule.ALL)
                    want = "%s.%s" % (cls.__name__, m.name)
                self.assertEqual(str(m), want)
                self.assertEqual(f"{m}", want)
                self.assertEqual("%s" % m, want)
                self.assertEqual(format(m, ""), want)
                self.assertEqual(f"{m:>40}", want.rjust(40))

    def test_examples(self):
        self.assertEqual(str(EventKind.RECLAIM), "EventKind.RECLAIM")
        self.assertEqual(f"{Reason.DOWNGRADE}", "Reason.DOWNGRADE")
        self.assertEqual(f"{Action.NONE} {Rule.NONE}", "Action.NONE Rule.NONE")
        self.assertEqual(str(Deadline.BY_NOW), "Deadline.BY_NOW")
        both = Pte.PRESENT | Pte.WRITE
        self.assertTrue(str(both).startswith("Pte."), str(both))
        self.assertEqual(set(str(both)[4:].split("|")), {"PRESENT", "WRITE"})
        self.assertEqual(f"{both}", str(both))
        self.assertEqual(str(EventFlag(0)), "EventFlag(0)")

    def test_numbers_unchanged(self):
        for cls in header_enums():
            for m in cls:
                value = m.value
                self.assertIs(type(value), int)
                self.assertEqual(int(m), value)
                self.assertEqual(operator.index(m), value)
                self.assertEqual(m, value)
                self.assertEqual(f"{m:d}", str(value))
                self.assertEqual(f"{m:#x}", hex(value))
                self.assertEqual("%d" % m, str(value))
                self.assertEqual(repr(m), "<%s.%s: %d>" % (cls.__name__, m.name, value))
                self.assertIn(m.name, repr(m))

    def test_c_gets_the_value(self):
        # Through the checked ctypes fields and arguments, and back.
        for kind in EventKind:
            s = _ffi.EventS(kind=kind)
            self.assertEqual(s.kind, int(kind))
            self.assertIs(type(s.kind), int)
        self.assertEqual(ctypes.c_uint32(_ffi.check_int("x", Reason.INSTALL, ctypes.c_uint32)).value,
                         int(Reason.INSTALL))
        # The library's own names come back for each value.
        self.assertEqual(tlbpol.rule_str(Rule.BATCH), "batch")
        self.assertEqual(tlbpol.deadline_str(Deadline.BY_WRITEBACK), "writeback")
        self.assertEqual(tlbpol.reason_str(Reason.DOWNGRADE), "downgrade")
        self.assertEqual(tlbpol.action_str(Action.SHOOTDOWN), "shootdown")
        self.assertEqual(tlbpol.parse_rules("linux"), Rule.LINUX)
        eng = tlbpol.Engine(arch=Arch.ARM64, rules=Rule.LINUX, cpus=2,
                            flush_local=lambda *a: None, send_ipi=lambda *a: None)
        try:
            self.assertEqual(eng.arch, Arch.ARM64)
            self.assertEqual(int(eng.rules) & ~int(Rule.LINUX), 0)
            self.assertIn("arm64", repr(eng))
        finally:
            eng.close()

    def test_decision_prints(self):
        d = tlbpol.Decision(Action.SHOOTDOWN, Deadline.BY_NOW, Reason.DOWNGRADE)
        self.assertEqual(str(d), "shootdown/now (downgrade)")
        self.assertIn("Action.SHOOTDOWN", repr(d))


class UnknownValues(unittest.TestCase):
    """A value a later library returns that the package's enum lacks (a new
    reason code: docs/versioning.md says a program must accept one) stays
    usable: the int itself, printed Reason(23), named by the library."""

    def decision(self, action, deadline, reason):
        c = _ffi.DecisionS(action=action, deadline=deadline, reason=reason)
        return tlbpol.Decision._from_c(c)

    def test_unknown_reason(self):
        d = self.decision(Action.SHOOTDOWN, Deadline.BY_NOW, tlbpol.WHY_MAX + 1)
        self.assertIs(d.action, Action.SHOOTDOWN)
        self.assertNotIsInstance(d.reason, Reason)
        self.assertEqual(d.reason, tlbpol.WHY_MAX + 1)
        self.assertEqual(hash(d.reason), hash(tlbpol.WHY_MAX + 1))
        want = "Reason(%d)" % (tlbpol.WHY_MAX + 1)
        self.assertEqual((str(d.reason), repr(d.reason), f"{d.reason}"), (want, want, want))
        self.assertEqual(f"{d.reason:>12}", want.rjust(12))
        self.assertEqual(f"{d.reason:d}", str(tlbpol.WHY_MAX + 1))
        self.assertIn("reason=" + want, repr(d))
        # The library names it: this one is older than the reason, too.
        self.assertEqual(d.reason_name, "unknown")
        self.assertEqual(str(d), "shootdown/now (unknown)")
        self.assertEqual(d.cite("x86_64"), "unknown")
        self.assertEqual(d, self.decision(2, 0, tlbpol.WHY_MAX + 1))
        import pickle
        self.assertEqual(str(pickle.loads(pickle.dumps(d)).reason), want)

    def test_unknown_action_and_deadline(self):
        d = self.decision(7, 9, Reason.DOWNGRADE)
        self.assertEqual((str(d.action), str(d.deadline)), ("Action(7)", "Deadline(9)"))
        self.assertIs(d.reason, Reason.DOWNGRADE)
        self.assertEqual(str(d), "unknown/unknown (downgrade)")

    def test_c_gets_the_same_number(self):
        high = (1 << 32) - 1
        d = self.decision(high, high, high)
        for v in (d.action, d.deadline, d.reason):
            self.assertEqual(v, high)
            out = _ffi.c_args("tlbpol_reason_str", [v], {})
            self.assertEqual(out, [high])
            self.assertIs(type(out[0]), int)
            self.assertEqual(_ffi.DecisionS(reason=v).reason, high)

    def test_unknown_flush_kind(self):
        c = _ffi.Flush(as_tag=5, kind=77, flags=0, nr_ranges=0)
        f = tlbpol.Flush._from_c(ctypes.pointer(c))
        self.assertEqual((f.kind, str(f.kind)), (77, "FlushKind(77)"))


if __name__ == "__main__":
    unittest.main()
