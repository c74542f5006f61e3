#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every number the package hands to C is range-checked, never truncated.

ctypes keeps the low bits of an int that does not fit a field or an
argument: va=2**64 + 0x5000 would flush page 0x5000.  For each integer field
and argument that crosses into C, with its C width N (typed in the tables
below from the header, not from the package: the tables are the oracle),
-1 and 2**N (for a signed one -2**(N-1) - 1 and 2**(N-1)) must raise
OverflowError naming it and change nothing (no counter moves, no flush, no
callback), 2**N - 1 must reach C unchanged (accepted, or the library's own
errno as TlbpolError), and a value of the wrong type (None, a float, a str,
a bool) must raise TypeError naming it.  The explain command line too.
"""

import ctypes
import enum
import errno
import re
import subprocess
import sys
import unittest
from typing import Any, Callable, NamedTuple, Tuple

import tlbpol
from tlbpol import CpuState, Deadline, EventFlag, EventKind, Pte, Rule, _ffi

from helpers import RUA, RWUA, VA, RecordingHost, loaded

# Wrong types for an integer (but see Case.allows).
BAD_TYPES: Tuple[Any, ...] = (None, 1.5, True, False, [0], b"1", "1")
NONE, STR = type(None), str


def bounds(bits, signed=False):
    """(just below, just above, highest) of a C integer of @bits."""
    if signed:
        return -(1 << (bits - 1)) - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1
    return -1, 1 << bits, (1 << bits) - 1


def ok(result):
    """The outcome "accepted": any result."""
    return True


class Case(NamedTuple):
    """label: what the error names; bits: the C width; call(value);
    top: what the highest value gets -- an errno (TlbpolError), an exception
    class, or a predicate on the result; allows: the types of BAD_TYPES that
    mean something here (None: the default; str: a name or a spelling)."""
    label: str
    bits: int
    call: Callable[..., Any]
    top: Any
    signed: bool = False
    allows: Tuple[type, ...] = ()


def downgrade(**fields):
    """A valid event, then @fields set on it as a caller may (unchecked by
    the dataclass: the check is where it is handed to C)."""
    ev = tlbpol.Event(EventKind.PROTECT, old_pte=RWUA, new_pte=RUA, va=VA)
    for name, value in fields.items():
        setattr(ev, name, value)
    return ev


class Host(RecordingHost):
    """Two CPUs on one thread: an interrupt is served from relax()."""

    def __init__(self):
        super().__init__()
        self.frees = []
        self.engine(arch="x86_64", cpus=2)
        self.space = loaded(self.eng, 1, 0, 1)
        # Pending work that a call truncated to CPU 0 would move: a batched
        # unmap due by a free, and a deferred free waiting for it.
        self.eng.submit(self.space, 0, tlbpol.Event("unmap", old_pte=RWUA, new_pte=0,
                                                    va=VA + 0x10000))
        self.eng.defer_free(0, lambda: self.frees.append(0))

    def snapshot(self):
        """Everything a call that got through would move."""
        eng = self.eng
        lookup = _ffi.lib().tlbpol_as_lookup
        return (dict(eng.stats()), [dict(eng.stats(c)) for c in range(eng.cpus)],
                len(self.flushes), len(self.ipis), list(self.frees), int(eng.rules),
                [eng.frees_pending(c) for c in range(eng.cpus)], len(eng._frees),
                [bool(lookup(eng._h(), t)) for t in (0, 1 << 63, (1 << 64) - 1)])


def noop(*args):
    return None


def engine(**kw):
    kw.setdefault("cpus", 2)
    kw.setdefault("arch", "x86_64")
    return tlbpol.Engine(flush_local=noop, send_ipi=noop, **kw)


def open_tag(tag):
    def check(space):
        return space.tag == tag and _ffi.lib().tlbpol_as_tag(space._h()) == tag
    return check


# Engine calls: call(host, value).  Every uint32_t cpu, every other number.
METHOD_CASES = [
    Case("tlbpol_tick(cpu)", 32, lambda h, v: h.eng.tick(v), errno.ERANGE),
    Case("tlbpol_unload(cpu)", 32, lambda h, v: h.eng.unload(v), errno.ERANGE),
    Case("tlbpol_handle_ipi(cpu)", 32, lambda h, v: h.eng.handle_ipi(v), errno.ERANGE),
    Case("tlbpol_frees_pending(cpu)", 32, lambda h, v: h.eng.frees_pending(v), errno.ERANGE),
    Case("tlbpol_stamp(cpu)", 32, lambda h, v: h.eng.stamp(v), errno.ERANGE),
    Case("tlbpol_switch(cpu)", 32, lambda h, v: h.eng.switch(v, h.space), errno.ERANGE),
    Case("tlbpol_cpu_state(cpu)", 32, lambda h, v: h.eng.cpu_state(v, CpuState.IDLE),
         errno.ERANGE),
    Case("tlbpol_cpu_state(state)", 32, lambda h, v: h.eng.cpu_state(0, v), errno.EINVAL),
    Case("tlbpol_flush(cpu)", 32, lambda h, v: h.eng.flush(v, Deadline.BY_LAZY), errno.ERANGE),
    Case("tlbpol_flush(by)", 32, lambda h, v: h.eng.flush(0, v), errno.EINVAL),
    Case("tlbpol_defer_free(cpu)", 32,
         lambda h, v: h.eng.defer_free(v, lambda: h.frees.append(v)), errno.ERANGE),
    Case("tlbpol_decide(cpu)", 32, lambda h, v: h.eng.decide(h.space, v, downgrade()),
         errno.ERANGE),
    Case("tlbpol_submit(cpu)", 32, lambda h, v: h.eng.submit(h.space, v, downgrade()),
         errno.ERANGE),
    Case("tlbpol_stamp_settle(cpu)", 32, lambda h, v: h.eng.stamp_settle(v, 0), errno.ERANGE),
    Case("tlbpol_stamp_settle(stamp)", 64, lambda h, v: h.eng.stamp_settle(0, v), errno.EINVAL),
    Case("tlbpol_stamp_pending(stamp)", 64, lambda h, v: h.eng.stamp_pending(v), errno.EINVAL),
    Case("tlbpol_as_open(tag)", 64, lambda h, v: h.eng.open_as(v), open_tag((1 << 64) - 1)),
    Case("tlbpol_engine_set_rules(rules)", 64, lambda h, v: h.eng.set_rules(v), errno.EINVAL,
         allows=(STR,)),
    Case("tlbpol_engine_set_flush_ceiling(pages)", 32,
         lambda h, v: h.eng.set_flush_ceiling(v), ok),
    Case("tlbpol_engine_set_batch_pages(pages)", 32,
         lambda h, v: h.eng.set_batch_pages(v), errno.ERANGE),
    Case("tlbpol_engine_set_ipi_delay(spins)", 32, lambda h, v: h.eng.set_ipi_delay(v), ok),
    Case("tlbpol_config.cost_ipi_ns", 32, lambda h, v: h.eng.set_cost_model(ipi_ns=v), ok),
    Case("tlbpol_config.cost_ipi_target_ns", 32,
         lambda h, v: h.eng.set_cost_model(ipi_target_ns=v), ok),
    Case("tlbpol_config.cost_ipi_remote_ns", 32,
         lambda h, v: h.eng.set_cost_model(ipi_remote_ns=v), ok),
    Case("tlbpol_config.cost_broadcast_ns", 32,
         lambda h, v: h.eng.set_cost_model(broadcast_ns=v), ok),
    Case("tlbpol_config.cost_broadcast_page_ns", 32,
         lambda h, v: h.eng.set_cost_model(broadcast_page_ns=v), ok),
    Case("tlbpol_stats_read(cpu)", 32, lambda h, v: h.eng.stats(v), errno.ERANGE, signed=True,
         allows=(NONE,)),
]

class TagsHost:
    """A tag allocator (release 0.3) with an identity loaded on CPU 0."""

    def __init__(self):
        self.tags = tlbpol.Tags("percpu", cpus=2, tag_bits=12, first_tag=1, slots=6)
        self.id = self.tags.new_id()
        self.tags.load(0, self.id)

    def snapshot(self):
        """Everything a call that got through would move: each CPU's
        counters and slot of the identity."""
        t = self.tags
        return ([dict(t.stats(c)) for c in range(t.cpus)],
                [t.tag_of(c, self.id) for c in range(t.cpus)])


# Tag allocator calls: call(host, value).
TAGS_CASES = [
    Case("tlbpol_tag_load(cpu)", 32, lambda h, v: h.tags.load(v, h.id), errno.ERANGE),
    Case("tlbpol_tag_of(cpu)", 32, lambda h, v: h.tags.tag_of(v, h.id), errno.ERANGE),
    Case("tlbpol_tags_stats_read(cpu)", 32, lambda h, v: h.tags.stats(v), errno.ERANGE,
         signed=True, allows=(NONE,)),
]


class TaggedHost(RecordingHost):
    """An engine with a tag allocator (Engine(tags=), release 0.3), one
    address space switched to on both CPUs."""

    def __init__(self):
        super().__init__()
        self.tags = tlbpol.Tags("percpu", cpus=2, tag_bits=12, first_tag=1, slots=6)
        self.engine(arch="x86_64", cpus=2, tags=self.tags)
        self.space = self.eng.open_as(1)
        self.other = self.eng.open_as(2)
        for cpu in (0, 1):
            self.eng.switch_tag(cpu, self.space)

    def snapshot(self):
        """Everything a switch that got through would move: the engine's
        and the allocator's counters of each CPU."""
        eng, t = self.eng, self.tags
        return ([dict(eng.stats(c)) for c in range(eng.cpus)],
                [dict(t.stats(c)) for c in range(t.cpus)], len(self.flushes))


# Calls of an engine with tags: call(host, value).
TAGGED_CASES = [
    Case("tlbpol_switch_tag(cpu)", 32, lambda h, v: h.eng.switch_tag(v, h.other), errno.ERANGE),
]

# struct tlbpol_event: each field set on a valid event after it was made,
# then the event handed to tlbpol_submit() and tlbpol_decide().
EVENT_FIELDS = [("kind", 32, errno.EINVAL), ("flags", 32, errno.EINVAL),
                ("page_shift", 32, errno.EINVAL), ("va", 64, errno.EINVAL),
                ("nr_pages", 64, errno.ERANGE), ("old_pte", 32, errno.EINVAL),
                ("new_pte", 32, errno.EINVAL)]
for _field, _bits, _top in EVENT_FIELDS:
    for _fn in ("submit", "decide"):
        METHOD_CASES.append(Case(
            "tlbpol_event." + _field, _bits,
            lambda h, v, f=_field, fn=_fn: getattr(h.eng, fn)(h.space, 0, downgrade(**{f: v})),
            _top, allows=(STR,) if _field == "kind" else ()))

# struct tlbpol_config and tlbpol_config_init(): call(value) builds an engine.
CONFIG_CASES = [
    Case("tlbpol_config_init(cpus)", 32, lambda v: engine(cpus=v), errno.ERANGE),
    Case("tlbpol_config.max_as", 32, lambda v: engine(max_as=v), errno.ERANGE, allows=(NONE,)),
    Case("tlbpol_config.flush_ceiling", 32, lambda v: engine(flush_ceiling=v), ok,
         allows=(NONE,)),
    Case("tlbpol_config.batch_pages", 32, lambda v: engine(batch_pages=v), errno.ERANGE,
         allows=(NONE,)),
    Case("tlbpol_config.ipi_delay_spins", 32, lambda v: engine(ipi_delay_spins=v), ok,
         allows=(NONE,)),
    Case("tlbpol_config.wait_limit", 32, lambda v: engine(wait_limit=v), ok, allows=(NONE,)),
    Case("tlbpol_config.free_ticks", 32, lambda v: engine(free_ticks=v), ok, allows=(NONE,)),
    Case("tlbpol_config.flags", 32, lambda v: engine(flags=v), errno.EINVAL),
    Case("tlbpol_config.rules", 64, lambda v: engine(rules=v), errno.EINVAL, allows=(STR,)),
    Case("tlbpol_config.cpu_node[1]", 16, lambda v: engine(cpu_node=[0, v]), errno.ERANGE),
    # An arch the package does not know is refused before C, as it was.
    Case("arch", 32, lambda v: engine(arch=v), ValueError, allows=(STR,)),
]


def tags(kind="percpu", **kw):
    """A tag allocator of Linux x86's six PCIDs per CPU, but for @kw."""
    args = dict(cpus=2, tag_bits=12, first_tag=1, slots=6)
    args.update(kw)
    return tlbpol.Tags(kind, **args)


# struct tlbpol_tags_config (release 0.3): call(value) builds an allocator.
CONFIG_CASES += [
    Case("tlbpol_tags_config.kind", 32, lambda v: tags(kind=v), errno.EINVAL, allows=(STR,)),
    Case("tlbpol_tags_config.nr_cpus", 32, lambda v: tags(cpus=v), errno.ERANGE),
    Case("tlbpol_tags_config.tag_bits", 32, lambda v: tags(tag_bits=v), errno.ERANGE),
    Case("tlbpol_tags_config.first_tag", 32, lambda v: tags(first_tag=v), errno.ERANGE),
    Case("tlbpol_tags_config.nr_slots", 32, lambda v: tags(slots=v), errno.ERANGE),
    Case("tlbpol_tags_config.nr_global", 32, lambda v: tags(nr_global=v), errno.ERANGE),
    # Any threshold is accepted (the library reads it only when an engine
    # considers an address space): the highest is kept, not cut.
    Case("tlbpol_tags_config.global_min_cpus", 32, lambda v: tags(global_min_cpus=v),
         lambda t: t.global_min_cpus == (1 << 32) - 1),
]

# Functions of the module: call(value).
FUNCTION_CASES = [
    Case("tlbpol_rule_str(rule)", 64, tlbpol.rule_str, lambda r: r == "unknown"),
    Case("tlbpol_reason_str(reason)", 32, tlbpol.reason_str, lambda r: r == "unknown"),
    Case("tlbpol_action_str(action)", 32, tlbpol.action_str, lambda r: r == "unknown"),
    Case("tlbpol_deadline_str(deadline)", 32, tlbpol.deadline_str, lambda r: r == "unknown"),
    Case("tlbpol_reason_cite(reason)", 32, lambda v: tlbpol.reason_cite(v, "x86_64"),
         lambda r: r == "unknown"),
    Case("arch", 32, tlbpol.parse_arch, ValueError, allows=(STR,)),
    Case("arch", 32, lambda v: tlbpol.reason_cite(0, v), ValueError, allows=(STR,)),
    Case("PTE", 32, tlbpol.parse_pte, lambda r: r == (1 << 32) - 1, allows=(STR,)),
]


def calibrate(**fields):
    """cost_calibrate() of Dave Hansen's Haswell figures with @fields."""
    m = dict(ipi_round_trip=2000, inval_page=250, full_flush=2283, refill=250)
    m.update(fields)
    return tlbpol.cost_calibrate(tlbpol.Calibration(**m))


# struct tlbpol_calibration: each field, through cost_calibrate().  The
# highest time is accepted (the library's sums saturate, its costs are capped:
# the round trip's at 2**32 - 1, not cut to 32 bits).
CALIBRATION_FIELDS = [("refill_entries", 32), ("ipi_round_trip", 64), ("ipi_send", 64),
                      ("irq_entry_exit", 64), ("inval_page", 64), ("full_flush", 64),
                      ("refill", 64), ("bcast_issue", 64), ("bcast_sync", 64),
                      ("bcast_max_pages", 32)]
for _field, _bits in CALIBRATION_FIELDS:
    FUNCTION_CASES.append(Case(
        "tlbpol_calibration." + _field, _bits, lambda v, f=_field: calibrate(**{f: v}),
        (lambda r: r.cost_ipi_ns == (1 << 32) - 1) if _field == "ipi_round_trip" else ok))


class Checks(unittest.TestCase):
    def check(self, case, call, snapshot=lambda: None):
        """-1 / 2**N and wrong types refused and nothing moved; 2**N - 1 to C."""
        low, high, top = bounds(case.bits, case.signed)
        for bad in (low, high):
            before = snapshot()
            with self.assertRaises(OverflowError, msg="%s=%d" % (case.label, bad)) as cm:
                done = call(bad)
                getattr(done, "close", noop)()
            self.assertIn(case.label, str(cm.exception))
            self.assertIn(str(bad), str(cm.exception))
            self.assertEqual(snapshot(), before, "%s=%d moved something" % (case.label, bad))
        for bad in [b for b in BAD_TYPES if not isinstance(b, case.allows)]:
            before = snapshot()
            with self.assertRaises(TypeError, msg="%s=%r" % (case.label, bad)) as cm:
                call(bad)
            self.assertIn(case.label, str(cm.exception))
            self.assertEqual(snapshot(), before, "%s=%r moved something" % (case.label, bad))
        self.check_top(case, call, top)

    def check_top(self, case, call, top):
        """The highest value reaches C unchanged: accepted, or C's errno."""
        msg = "%s=%d" % (case.label, top)
        if isinstance(case.top, int):
            with self.assertRaises(tlbpol.TlbpolError, msg=msg) as cm:
                call(top)
            self.assertEqual(cm.exception.errno, case.top, msg)
        elif isinstance(case.top, type):
            self.assertRaises(case.top, call, top)
        else:
            result = call(top)
            self.assertTrue(case.top(result), "%s: %r" % (msg, result))
            getattr(result, "close", noop)()

    def test_engine_calls(self):
        for case in METHOD_CASES:
            with self.subTest(case.label):
                h = Host()
                try:
                    self.check(case, lambda v: case.call(h, v), h.snapshot)
                finally:
                    h.eng.close()

    def test_tags_calls(self):
        for case in TAGS_CASES:
            with self.subTest(case.label):
                h = TagsHost()
                self.check(case, lambda v: case.call(h, v), h.snapshot)

    def test_tagged_engine_calls(self):
        for case in TAGGED_CASES:
            with self.subTest(case.label):
                h = TaggedHost()
                try:
                    self.check(case, lambda v: case.call(h, v), h.snapshot)
                finally:
                    h.eng.close()

    def test_engine_config(self):
        for case in CONFIG_CASES:
            with self.subTest(case.label):
                self.check(case, case.call)

    def test_functions(self):
        for case in FUNCTION_CASES:
            with self.subTest(case.label):
                self.check(case, case.call)

    def test_event_fields_when_made(self):
        for field, bits, _ in EVENT_FIELDS:
            label = "tlbpol_event." + field
            with self.subTest(label):
                for bad in bounds(bits)[:2]:
                    with self.assertRaises(OverflowError) as cm:
                        tlbpol.Event(**{"kind": EventKind.PROTECT, field: bad})
                    self.assertIn(label, str(cm.exception))
                for bad in [b for b in BAD_TYPES if not (field == "kind" and isinstance(b, STR))]:
                    with self.assertRaises(TypeError) as cm:
                        tlbpol.Event(**{"kind": EventKind.PROTECT, field: bad})
                    self.assertIn(label, str(cm.exception))
                top = bounds(bits)[2]
                self.assertEqual(getattr(tlbpol.Event(**{"kind": 0, field: top}), field), top)


class Reported(unittest.TestCase):
    """The finding's own examples."""

    def test_va_and_nr_pages_past_64_bits_flush_nothing(self):
        h = Host()
        with h.eng:
            before = h.snapshot()
            for fields in ({"va": (1 << 64) + 0x5000}, {"nr_pages": 2 ** 64 + 1}):
                with self.subTest(**fields):
                    self.assertRaises(OverflowError, h.eng.submit, h.space, 0, downgrade(**fields))
                    self.assertEqual(h.snapshot(), before)
            top_page = (1 << 64) - 0x1000  # the highest page: flushed as given
            h.eng.submit(h.space, 0, downgrade(va=top_page))
            self.assertEqual(h.flushes[-1][1].ranges, (tlbpol.Range(top_page, 1, 12),))

    def test_cpus_past_32_bits(self):
        self.assertRaises(OverflowError, engine, cpus=2 ** 32 + 3)
        with engine(cpus=3) as eng:
            self.assertEqual(eng.cpus, 3)
            self.assertEqual(len(eng.topology()), 3)

    def test_not_an_address_space_or_event(self):
        h = Host()
        with h.eng:
            before = h.snapshot()
            for call, name in ((lambda: h.eng.submit(None, 0, downgrade()), "space"),
                               (lambda: h.eng.decide(None, 0, downgrade()), "space"),
                               (lambda: h.eng.submit(1, 0, downgrade()), "space"),
                               (lambda: h.eng.switch(0, h.space._h()), "space"),
                               (lambda: h.eng.submit(h.space, 0, None), "event"),
                               (lambda: h.eng.decide(h.space, 0, "protect"), "event"),
                               (lambda: h.eng.defer_free(0, None), "fn")):
                with self.subTest(name):
                    with self.assertRaises(TypeError) as cm:
                        call()
                    self.assertIn(name, str(cm.exception))
                    self.assertEqual(h.snapshot(), before)

    def test_other_wrong_types(self):
        cases = [(lambda: tlbpol.parse_rules(None), "tlbpol_rules_parse(spec)"),
                 (lambda: tlbpol.parse_rules(5), "tlbpol_rules_parse(spec)"),
                 (lambda: tlbpol.parse_pte(None), "PTE"),
                 (lambda: tlbpol.parse_pte(1.0), "PTE"),
                 (lambda: engine(cpu_node=3), "cpu_node"),
                 (lambda: engine(cpu_node=["0", "1"]), "tlbpol_config.cpu_node[0]")]
        for name in ("flush_local", "send_ipi", "broadcast", "relax", "vcpu_defer", "stuck"):
            cases.append((lambda n=name: engine(**{n: 5}), name))
        for call, name in cases:
            with self.subTest(name):
                with self.assertRaises(TypeError) as cm:
                    call()
                self.assertIn(name, str(cm.exception))

    def test_a_nul_would_cut_the_c_string(self):
        self.assertEqual(tlbpol.parse_rules("linux"), Rule.LINUX)
        with self.assertRaises(ValueError) as cm:
            tlbpol.parse_rules("linux\0,+batch")
        self.assertIn("NUL", str(cm.exception))

    def test_ints_enums_and_index_pass(self):
        class Cpu:
            def __index__(self):
                return 1

        class Tag(enum.IntEnum):
            A = 7

        h = Host()
        with h.eng:
            h.eng.tick(Cpu())
            self.assertEqual(h.eng.flush(0, Deadline.BY_FREE), 1)
            self.assertEqual(h.eng.open_as(Tag.A).tag, 7)
            self.assertIs(type(h.eng.lookup(7).tag), int)
            self.assertFalse(h.eng.cpu_state(1, CpuState.RUNNING))
            h.eng.set_rules(Rule.LINUX)
            ev = tlbpol.Event(EventKind.FAULT, old_pte=RWUA, new_pte=RWUA | Pte.DIRTY,
                              flags=EventFlag.WRITE, va=VA)
            self.assertEqual(h.eng.decide(h.space, Cpu(), ev).reason, tlbpol.Reason.ACCESS_FLAGS)

    def test_stats_cpu_is_a_c_int(self):
        h = Host()
        with h.eng:
            self.assertEqual(dict(h.eng.stats(-1)), dict(h.eng.stats()))  # as in C: the sum
            with self.assertRaises(tlbpol.TlbpolError) as cm:
                h.eng.stats(-2)
            self.assertEqual(cm.exception.errno, errno.ERANGE)


class Helper(unittest.TestCase):
    """_ffi.check_int, the one check: widths from the ctypes type."""

    def test_ranges_come_from_the_ctype(self):
        for ctype, low, high in ((ctypes.c_uint16, 0, 0xFFFF), (ctypes.c_uint32, 0, 2 ** 32 - 1),
                                 (ctypes.c_uint64, 0, 2 ** 64 - 1),
                                 (ctypes.c_int, -2 ** 31, 2 ** 31 - 1),
                                 (ctypes.c_int8, -128, 127)):
            with self.subTest(ctype.__name__):
                self.assertEqual(_ffi.int_range(ctype), (low, high))
                self.assertEqual(_ffi.check_int("x", low, ctype), low)
                self.assertEqual(_ffi.check_int("x", high, ctype), high)
                self.assertRaises(OverflowError, _ffi.check_int, "x", low - 1, ctype)
                self.assertRaises(OverflowError, _ffi.check_int, "x", high + 1, ctype)

    def test_types(self):
        self.assertIs(type(_ffi.check_int("x", Pte.WRITE, ctypes.c_uint32)), int)
        for bad in BAD_TYPES:
            with self.assertRaises(TypeError) as cm:
                _ffi.check_int("the.field", bad, ctypes.c_uint32)
            self.assertIn("the.field must be an int, not %s" % type(bad).__name__,
                          str(cm.exception))


class Coverage(unittest.TestCase):
    """Every integer the package can hand to C is in a table above."""

    LABELS = {c.label for c in
              METHOD_CASES + TAGS_CASES + TAGGED_CASES + CONFIG_CASES + FUNCTION_CASES}
    # Fields no caller sets: the package writes sizeof, 0 in pad (struct
    # tlbpol_calibration's too) and nr_backends (the length of backends=,
    # test_backends.py), the library the rest.
    NOT_FROM_CALLERS = {"size", "pad", "reserved", "nr_cpus", "arch", "nr_backends", "reserved2"}
    # Bound, not called by the package (the prototype test's list).
    NOT_CALLED = {"tlbpol_cpuset_test", "tlbpol_cpuset_next", "tlbpol_cpuset_set",
                  "tlbpol_cpuset_clear", "tlbpol_engine_init", "tlbpol_as_lookup",
                  "tlbpol_tlbi_range_ops"}
    # Called with the package's own values only: engine_topology(n) is
    # Engine.cpus, checked when the engine was made; tags_init(len) the
    # size tlbpol_tags_size() gave.
    OWN_VALUES = {"tlbpol_engine_topology", "tlbpol_tags_init"}

    def test_every_integer_field(self):
        for struct in (_ffi.EventS, _ffi.Config, _ffi.CalibrationS, _ffi.TagsConfigS):
            for field, ctype in _ffi.field_types(struct).items():
                if _ffi.is_int_type(ctype) and field not in self.NOT_FROM_CALLERS:
                    label = "%s.%s" % (_ffi.c_name(struct), field)
                    self.assertIn(label, self.LABELS)

    def test_every_integer_argument(self):
        import importlib
        import inspect
        import pkgutil
        # Every module that calls C: all but _ffi, which declares every
        # prototype, _constants, the header's values, and _symvers, the
        # symbol version of every function.
        modules = [m.name for m in pkgutil.iter_modules(tlbpol.__path__)
                   if m.name not in ("_ffi", "_constants", "_symvers")]
        self.assertIn("_engine", modules)
        source = "".join(inspect.getsource(importlib.import_module("tlbpol." + m))
                         for m in modules)
        covered = {re.sub(r"\(.*", "", label) for label in self.LABELS}
        for name, (_, argtypes) in _ffi.PROTOTYPES.items():
            if not any(_ffi.is_int_type(t) for t in argtypes):
                continue
            with self.subTest(name):
                if name in self.NOT_CALLED:
                    self.assertNotIn('"%s"' % name, source)
                else:
                    self.assertIn(name, covered | self.OWN_VALUES | {"tlbpol_config_init"})


def run(*args):
    return subprocess.run([sys.executable, "-m", "tlbpol"] + list(args),
                          capture_output=True, text=True, timeout=60)


class Cli(unittest.TestCase):
    """python3 -m tlbpol explain: a number that does not fit its field is a
    usage error (exit 2) that decides nothing; the highest one reaches C."""

    CASES = [("--va", "tlbpol_event.va", 64, "[Errno 22] tlbpol_decide"),
             ("--pages", "tlbpol_event.nr_pages", 64, "[Errno 34] tlbpol_decide"),
             ("--page-shift", "tlbpol_event.page_shift", 32, "[Errno 22] tlbpol_decide"),
             ("--old", "PTE", 32, "[Errno 22] tlbpol_decide"),
             ("--new", "PTE", 32, "[Errno 22] tlbpol_decide")]

    def refused(self, r, option, label):
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertIn("argument %s: %s" % (option, label), r.stderr)

    def test_each_number(self):
        for option, label, bits, top_error in self.CASES:
            low, high, top = bounds(bits)
            with self.subTest(option):
                for bad in (low, high):
                    self.refused(run("explain", "--kind", "protect", "%s=%d" % (option, bad)),
                                 option, label)
                r = run("explain", "--kind", "protect", "%s=%d" % (option, top))
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertEqual(r.stdout, "")
                self.assertIn(top_error, r.stderr)

    def test_the_reported_address(self):
        self.refused(run("explain", "--kind", "protect", "--va", "0x1_0000_0000_0000_0000"),
                     "--va", "tlbpol_event.va")
        self.refused(run("explain", "--all-kinds", "--va", "0x1_0000_0000_0000_0000"),
                     "--va", "tlbpol_event.va")
        r = run("explain", "--kind", "protect", "--va", "0xffff_ffff_ffff_f000")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("at 0xfffffffffffff000", r.stdout.splitlines()[0])
        r = run("explain", "--kind", "protect", "--va", "page")
        self.assertEqual(r.returncode, 2)
        self.assertIn("argument --va: invalid int value: 'page'", r.stderr)


if __name__ == "__main__":
    unittest.main()
