#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""smoke.py - drive libtlbpol from Python through ctypes only.

Usage: smoke.py PATH/TO/libtlbpol.so [PATH/TO/tlbpol.h]

This is what a language binding does: it mirrors the public structures of
<tlbpol/tlbpol.h> with ctypes.Structure (the header promises fixed-width
types only, so that this is possible), passes Python callbacks as the
engine's ops, and calls the library.  Checked:

 - the mirrors have the C sizes (a binding's structs must match the ABI);
 - if the header is given, every constant below has the header's value;
 - a spurious x86-64 write fault needs no flush (NONE, SPURIOUS);
 - an x86-64 PROTECT that removes WRITE is a shootdown now (SHOOTDOWN,
   BY_NOW, DOWNGRADE), and submitting it on a 1-CPU engine calls flush_local
   exactly once and send_ipi never;
 - tlbpol_stats_read(eng, -1, ...) then counts 1 event and 1 local flush;
 - tlbpol_reason_str(3) is b"spurious-fault";
 - bad calls return -EINVAL (-22) and change no counter.

Exit status 0 on success, 1 on the first group of failures.
"""

import ctypes
import errno
import os
import re
import sys
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_char_p, c_int,
                    c_size_t, c_uint16, c_uint32, c_uint64, c_void_p, sizeof)

# --- constants, from include/tlbpol/tlbpol.h --------------------------------
TLBPOL_ARCH_X86_64 = 1

TLBPOL_RULE_FOOTPRINT = 1 << 6
TLBPOL_RULES_DEFAULT = (1 << 16) - 1  # every rule bit 0..15
TLBPOL_MAX_CPUS = 4096
TLBPOL_DEFAULT_MAX_AS = 64
TLBPOL_DEFAULT_FLUSH_CEILING = 33
TLBPOL_DEFAULT_BATCH_PAGES = 512

TLBPOL_FLUSH_PAGES = 0

TLBPOL_EV_FAULT = 0
TLBPOL_EV_PROTECT = 1

TLBPOL_PTE_PRESENT = 1 << 0
TLBPOL_PTE_WRITE = 1 << 1
TLBPOL_PTE_USER = 1 << 3
TLBPOL_PTE_ACCESSED = 1 << 4
TLBPOL_PTE_DIRTY = 1 << 5

TLBPOL_EVF_WRITE = 1 << 0

TLBPOL_ACT_NONE = 0
TLBPOL_ACT_SHOOTDOWN = 2

TLBPOL_BY_NOW = 0

TLBPOL_WHY_SPURIOUS = 3
TLBPOL_WHY_DOWNGRADE = 14
TLBPOL_WHY_MAX = 22

EINVAL = 22


# --- structures -------------------------------------------------------------
class Range(Structure):
    _fields_ = [("va", c_uint64), ("nr_pages", c_uint64),
                ("page_shift", c_uint32), ("pad", c_uint32)]


class Flush(Structure):
    _fields_ = [("as_tag", c_uint64), ("kind", c_uint32), ("flags", c_uint32),
                ("nr_ranges", c_uint32), ("pad", c_uint32),
                ("ranges", POINTER(Range))]


class CpuSet(Structure):
    _fields_ = [("bits", c_uint64 * (TLBPOL_MAX_CPUS // 64))]


FLUSH_LOCAL = CFUNCTYPE(None, c_void_p, c_uint32, POINTER(Flush))
SEND_IPI = CFUNCTYPE(None, c_void_p, c_uint32, POINTER(CpuSet))
BROADCAST = CFUNCTYPE(None, c_void_p, c_uint32, POINTER(Flush))
RELAX = CFUNCTYPE(None, c_void_p, c_uint32)
VCPU_DEFER = CFUNCTYPE(c_int, c_void_p, c_uint32)
STUCK = CFUNCTYPE(None, c_void_p, c_uint32, POINTER(CpuSet), c_uint64)


class Ops(Structure):
    _fields_ = [("size", c_uint32), ("pad", c_uint32),
                ("flush_local", FLUSH_LOCAL), ("send_ipi", SEND_IPI),
                ("broadcast", BROADCAST), ("relax", RELAX),
                ("vcpu_defer", VCPU_DEFER), ("stuck", STUCK)]


class Config(Structure):
    _fields_ = [("size", c_uint32), ("nr_cpus", c_uint32), ("arch", c_uint32),
                ("max_as", c_uint32), ("rules", c_uint64),
                ("flush_ceiling", c_uint32), ("batch_pages", c_uint32),
                ("cpu_node", POINTER(c_uint16)), ("ops", POINTER(Ops)),
                ("ops_ctx", c_void_p),
                ("flags", c_uint32),
                ("cost_ipi_ns", c_uint32),
                ("cost_ipi_target_ns", c_uint32),
                ("cost_ipi_remote_ns", c_uint32),
                ("cost_broadcast_ns", c_uint32),
                ("cost_broadcast_page_ns", c_uint32),
                ("ipi_delay_spins", c_uint32),
                ("reserved", c_uint32),
                ("wait_limit", c_uint32),
                ("free_ticks", c_uint32)]


class Event(Structure):
    _fields_ = [("size", c_uint32), ("kind", c_uint32), ("flags", c_uint32),
                ("page_shift", c_uint32), ("va", c_uint64), ("nr_pages", c_uint64),
                ("old_pte", c_uint32), ("new_pte", c_uint32)]


class Decision(Structure):
    _fields_ = [("action", c_uint32), ("deadline", c_uint32),
                ("reason", c_uint32), ("pad", c_uint32)]


class Stats(Structure):
    _fields_ = [(name, c_uint64) for name in (
        "events", "flushes_avoided", "local_flushes", "remote_flushes",
        "ipis_sent", "broadcasts", "pages_flushed", "full_flushes", "coalesced",
        "gen_skipped", "lazy_skipped", "deferred_frees")] + [
        ("by_reason", c_uint64 * TLBPOL_WHY_MAX),
        ("aged_flushes", c_uint64), ("ipis_resent", c_uint64), ("stuck_calls", c_uint64)]


# The LP64 layouts of the C structures (tests/headers/abi_expect.h).
EXPECTED_SIZES = {Range: 24, Flush: 32, CpuSet: 512, Ops: 56, Config: 96,
                  Event: 40, Decision: 16, Stats: (15 + TLBPOL_WHY_MAX) * 8}

failures = []


def check(cond, what):
    if cond:
        print("ok   " + what)
    else:
        print("FAIL " + what)
        failures.append(what)
    return cond


def bail_if_failed():
    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        sys.exit(1)


def header_constants(path):
    """Integer constants of the header: enumerators and simple #defines."""
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    consts = {}
    for name, val in re.findall(r"^\s*(TLBPOL_\w+)\s*=\s*(\d+)\s*,", text, re.M):
        consts[name] = int(val)
    for name, body in re.findall(r"^#define\s+(TLBPOL_\w+)\s+(.+)$", text, re.M):
        m = re.fullmatch(r"\(?\s*(\d+)[UL]*\s*<<\s*(\d+)\s*\)?", body.strip())
        if m:
            consts[name] = int(m.group(1)) << int(m.group(2))
            continue
        m = re.fullmatch(r"(0x[0-9a-fA-F]+|\d+)[UL]*", body.strip())
        if m:
            consts[name] = int(m.group(1), 0)
    return consts


def main(argv):
    if len(argv) < 2:
        print("usage: smoke.py LIBTLBPOL_SO [TLBPOL_H]", file=sys.stderr)
        return 2
    libpath = argv[1]

    check(errno.EINVAL == EINVAL, "host EINVAL is 22")
    for cls, size in EXPECTED_SIZES.items():
        check(sizeof(cls) == size,
              "sizeof(%s) == %d (is %d)" % (cls.__name__, size, sizeof(cls)))
    check(Config.ops.offset == 40 and Config.ops_ctx.offset == 48
          and Config.rules.offset == 16, "Config field offsets")
    check(Ops.flush_local.offset == 8 and Ops.relax.offset == 32, "Ops field offsets")
    check(Event.va.offset == 16 and Event.old_pte.offset == 32, "Event field offsets")
    check(Stats.by_reason.offset == 96, "Stats.by_reason offset")

    if len(argv) > 2:
        hdr = header_constants(argv[2])
        for name, value in sorted(globals().items()):
            if not name.startswith("TLBPOL_") or name == "TLBPOL_RULES_DEFAULT":
                continue
            check(hdr.get(name) == value,
                  "%s == %s as in the header (header: %s)" % (name, value, hdr.get(name)))
        rules = sum(v for k, v in hdr.items() if k.startswith("TLBPOL_RULE_"))
        check(rules == TLBPOL_RULES_DEFAULT,
              "the header's rule bits make TLBPOL_RULES_DEFAULT == %#x" % rules)
    bail_if_failed()

    lib = ctypes.CDLL(os.path.abspath(libpath))
    proto = {
        "tlbpol_version": (c_char_p, []),
        "tlbpol_reason_str": (c_char_p, [c_uint32]),
        "tlbpol_config_init": (None, [POINTER(Config), c_uint32, c_uint32]),
        "tlbpol_engine_size": (c_size_t, [POINTER(Config)]),
        "tlbpol_engine_new": (c_int, [POINTER(Config), POINTER(c_void_p)]),
        "tlbpol_engine_free": (None, [c_void_p]),
        "tlbpol_engine_rules": (c_uint64, [c_void_p]),
        "tlbpol_as_open": (c_int, [c_void_p, c_uint64, POINTER(c_void_p)]),
        "tlbpol_as_close": (c_int, [c_void_p, c_void_p]),
        "tlbpol_switch": (c_int, [c_void_p, c_uint32, c_void_p, POINTER(c_int)]),
        "tlbpol_unload": (c_int, [c_void_p, c_uint32]),
        "tlbpol_decide": (c_int, [c_void_p, c_void_p, c_uint32, POINTER(Event),
                                  POINTER(Decision)]),
        "tlbpol_submit": (c_int, [c_void_p, c_void_p, c_uint32, POINTER(Event),
                                  POINTER(Decision)]),
        "tlbpol_stats_read": (c_int, [c_void_p, c_int, POINTER(Stats)]),
    }
    for name, (restype, argtypes) in proto.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes

    version = lib.tlbpol_version()
    check(bool(version) and re.fullmatch(rb"\d+\.\d+\.\d+", version) is not None,
          "tlbpol_version() = %r" % version)

    # Callbacks: record the calls, assert outside (an exception raised inside
    # a ctypes callback is printed and swallowed).
    calls = {"flush_local": [], "send_ipi": []}

    def flush_local(ctx, cpu, f):
        fl = f.contents
        ranges = [(fl.ranges[i].va, fl.ranges[i].nr_pages, fl.ranges[i].page_shift)
                  for i in range(fl.nr_ranges)]
        calls["flush_local"].append((cpu, fl.as_tag, fl.kind, ranges))

    def send_ipi(ctx, from_cpu, targets):
        calls["send_ipi"].append((from_cpu, list(targets.contents.bits[:1])))

    # Keep the CFUNCTYPE objects alive as long as the engine.
    cb_flush = FLUSH_LOCAL(flush_local)
    cb_ipi = SEND_IPI(send_ipi)
    ops = Ops(size=sizeof(Ops), flush_local=cb_flush, send_ipi=cb_ipi)

    cfg = Config()
    lib.tlbpol_config_init(byref(cfg), 1, TLBPOL_ARCH_X86_64)
    check(cfg.size == sizeof(Config) and cfg.nr_cpus == 1
          and cfg.arch == TLBPOL_ARCH_X86_64, "tlbpol_config_init: size, nr_cpus, arch")
    check(cfg.rules == TLBPOL_RULES_DEFAULT and cfg.max_as == TLBPOL_DEFAULT_MAX_AS
          and cfg.flush_ceiling == TLBPOL_DEFAULT_FLUSH_CEILING
          and cfg.batch_pages == TLBPOL_DEFAULT_BATCH_PAGES
          and not cfg.ops and not cfg.cpu_node and not cfg.ops_ctx,
          "tlbpol_config_init: defaults")

    # No ops yet: refused.
    eng = c_void_p()
    check(lib.tlbpol_engine_new(byref(cfg), byref(eng)) == -EINVAL and not eng,
          "tlbpol_engine_new without ops -> -EINVAL")
    cfg.ops = ctypes.pointer(ops)
    check(lib.tlbpol_engine_size(byref(cfg)) > 0, "tlbpol_engine_size > 0")
    rc = lib.tlbpol_engine_new(byref(cfg), byref(eng))
    check(rc == 0 and bool(eng), "tlbpol_engine_new -> 0 (rc %d)" % rc)
    bail_if_failed()
    check((lib.tlbpol_engine_rules(eng) & TLBPOL_RULE_FOOTPRINT) != 0,
          "RULE_FOOTPRINT in force")

    as_ = c_void_p()
    rc = lib.tlbpol_as_open(eng, 7, byref(as_))
    check(rc == 0 and bool(as_), "tlbpol_as_open -> 0 (rc %d)" % rc)
    bail_if_failed()

    pwuad = (TLBPOL_PTE_PRESENT | TLBPOL_PTE_WRITE | TLBPOL_PTE_USER
             | TLBPOL_PTE_ACCESSED | TLBPOL_PTE_DIRTY)
    d = Decision()

    # 1. A spurious x86-64 write fault: the PTE already allowed the write.
    spurious = Event(size=sizeof(Event), kind=TLBPOL_EV_FAULT, flags=TLBPOL_EVF_WRITE,
                     page_shift=12, va=0x1000, nr_pages=1, old_pte=pwuad, new_pte=pwuad)
    rc = lib.tlbpol_decide(eng, as_, 0, byref(spurious), byref(d))
    check(rc == 0, "decide(spurious write fault) -> 0 (rc %d)" % rc)
    check(d.action == TLBPOL_ACT_NONE and d.reason == TLBPOL_WHY_SPURIOUS,
          "spurious write fault: action %d reason %d, want NONE(0) SPURIOUS(3)"
          % (d.action, d.reason))

    # 2. An x86-64 PROTECT that removes WRITE: every CPU must drop it, now.
    pwua = TLBPOL_PTE_PRESENT | TLBPOL_PTE_WRITE | TLBPOL_PTE_USER | TLBPOL_PTE_ACCESSED
    downgrade = Event(size=sizeof(Event), kind=TLBPOL_EV_PROTECT, flags=0,
                      page_shift=12, va=0x1000, nr_pages=1,
                      old_pte=pwua, new_pte=pwua & ~TLBPOL_PTE_WRITE)
    d = Decision()
    rc = lib.tlbpol_decide(eng, as_, 0, byref(downgrade), byref(d))
    check(rc == 0, "decide(PROTECT -WRITE) -> 0 (rc %d)" % rc)
    check(d.action == TLBPOL_ACT_SHOOTDOWN and d.deadline == TLBPOL_BY_NOW
          and d.reason == TLBPOL_WHY_DOWNGRADE,
          "PROTECT -WRITE: action %d deadline %d reason %d, want SHOOTDOWN(2) "
          "BY_NOW(0) DOWNGRADE(14)" % (d.action, d.deadline, d.reason))
    check(not calls["flush_local"] and not calls["send_ipi"],
          "tlbpol_decide called no callback")

    # 3. Submit the downgrade.  CPU 0 must run the address space first: with
    #    RULE_FOOTPRINT a CPU that never switched to it holds no entry of it,
    #    and is rightly not flushed.
    need_flush = c_int(-1)
    rc = lib.tlbpol_switch(eng, 0, as_, byref(need_flush))
    check(rc == 0 and need_flush.value == 0, "tlbpol_switch(cpu 0 -> as) -> 0, no flush needed")
    d = Decision()
    rc = lib.tlbpol_submit(eng, as_, 0, byref(downgrade), byref(d))
    check(rc == 0, "tlbpol_submit(PROTECT -WRITE) -> 0 (rc %d)" % rc)
    check(d.action == TLBPOL_ACT_SHOOTDOWN and d.reason == TLBPOL_WHY_DOWNGRADE,
          "tlbpol_submit reports the decision")
    check(len(calls["flush_local"]) == 1,
          "flush_local called once (calls: %r)" % calls["flush_local"])
    if calls["flush_local"]:
        cpu, tag, kind, ranges = calls["flush_local"][0]
        check(cpu == 0 and tag == 7 and kind == TLBPOL_FLUSH_PAGES
              and ranges == [(0x1000, 1, 12)],
              "flush_local(cpu 0, tag 7, PAGES, [0x1000 x1 4K]) (got %r)"
              % (calls["flush_local"][0],))
    check(not calls["send_ipi"], "send_ipi never called on a 1-CPU engine (calls: %r)"
          % calls["send_ipi"])

    # 4. Counters, summed over CPUs.
    st = Stats()
    rc = lib.tlbpol_stats_read(eng, -1, byref(st))
    check(rc == 0, "tlbpol_stats_read(-1) -> 0 (rc %d)" % rc)
    check(st.events == 1, "stats.events == 1 (is %d)" % st.events)
    check(st.local_flushes == 1, "stats.local_flushes == 1 (is %d)" % st.local_flushes)
    check(st.ipis_sent == 0 and st.remote_flushes == 0, "no IPI, no remote flush counted")
    check(st.by_reason[TLBPOL_WHY_DOWNGRADE] == 1, "stats.by_reason[DOWNGRADE] == 1")
    check(st.pages_flushed == 1, "stats.pages_flushed == 1 (is %d)" % st.pages_flushed)

    # 5. Names.
    name = lib.tlbpol_reason_str(TLBPOL_WHY_SPURIOUS)
    check(name == b"spurious-fault", "tlbpol_reason_str(3) == b'spurious-fault' (%r)" % name)
    check(lib.tlbpol_reason_str(10000) == b"unknown", "tlbpol_reason_str(10000) == b'unknown'")

    # 6. Bad calls: -EINVAL, and nothing changes.
    d = Decision(action=99, deadline=99, reason=99)
    rc = lib.tlbpol_decide(eng, as_, 0, None, byref(d))
    check(rc == -EINVAL, "tlbpol_decide(ev NULL) -> -EINVAL (rc %d)" % rc)
    rc = lib.tlbpol_decide(eng, as_, 0, byref(spurious), None)
    check(rc == -EINVAL, "tlbpol_decide(out NULL) -> -EINVAL (rc %d)" % rc)
    rc = lib.tlbpol_submit(eng, as_, 0, None, None)
    check(rc == -EINVAL, "tlbpol_submit(ev NULL) -> -EINVAL (rc %d)" % rc)
    bad = Event(size=sizeof(Event) - 1, kind=TLBPOL_EV_FAULT, page_shift=12,
                va=0x1000, nr_pages=1, old_pte=pwuad, new_pte=pwuad)
    rc = lib.tlbpol_submit(eng, as_, 0, byref(bad), None)
    check(rc == -EINVAL, "tlbpol_submit(ev.size too small) -> -EINVAL (rc %d)" % rc)
    rc = lib.tlbpol_stats_read(eng, -1, None)
    check(rc == -EINVAL, "tlbpol_stats_read(out NULL) -> -EINVAL (rc %d)" % rc)
    st2 = Stats()
    lib.tlbpol_stats_read(eng, -1, byref(st2))
    check(bytes(st2) == bytes(st), "failed calls moved no counter")
    check(len(calls["flush_local"]) == 1 and not calls["send_ipi"],
          "failed calls invoked no callback")

    # 7. Tear down.
    check(lib.tlbpol_switch(eng, 0, None, None) == 0, "tlbpol_switch(cpu 0 -> idle) -> 0")
    check(lib.tlbpol_as_close(eng, as_) == -16, "tlbpol_as_close while lazily loaded -> -EBUSY")
    check(lib.tlbpol_unload(eng, 0) == 0, "tlbpol_unload(cpu 0) -> 0")
    check(lib.tlbpol_as_close(eng, as_) == 0, "tlbpol_as_close -> 0")
    lib.tlbpol_engine_free(eng)
    lib.tlbpol_engine_free(None)  # NULL is ignored

    bail_if_failed()
    print("python-ctypes: all checks passed (libtlbpol %s)" % version.decode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
