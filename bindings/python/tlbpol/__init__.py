# SPDX-License-Identifier: MIT
"""tlbpol: Python binding of libtlbpol, which decides when TLBs must be
flushed and drives the shootdowns through your callbacks.

    import tlbpol

    flushed = []
    with tlbpol.Engine(arch="x86_64", rules="default,-lazy-unmap", cpus=2,
                       flush_local=lambda cpu, f: flushed.append((cpu, f)),
                       send_ipi=lambda cpu, targets: None) as eng:
        space = eng.open_as(1)
        eng.switch(0, space)
        ev = tlbpol.Event("protect", old_pte=tlbpol.parse_pte("rwua"),
                          new_pte=tlbpol.parse_pte("rua"))
        d = eng.submit(space, 0, ev)      # Decision(SHOOTDOWN, BY_NOW, DOWNGRADE)
        print(d, d.cite("x86_64"))

From the command line: ``python3 -m tlbpol explain --arch arm64 --kind
protect --old rw --new r``.

The library (libtlbpol.so.0) is loaded on first use: $TLBPOL_LIBRARY, an
in-tree build, the installed libdir, pkg-config, then the dynamic loader
(see :mod:`tlbpol._ffi`).  Every C failure is a :class:`TlbpolError`, an
OSError carrying the errno and the C function's name.
"""

from __future__ import annotations

from ._constants import (ARCH_MAX, CONFIG_SIZE_0_1, DEFAULT_BATCH_PAGES,
                         DEFAULT_COST_BROADCAST_NS,
                         DEFAULT_COST_BROADCAST_PAGE_NS, DEFAULT_COST_IPI_NS,
                         DEFAULT_COST_IPI_REMOTE_NS,
                         DEFAULT_COST_IPI_TARGET_NS, DEFAULT_FLUSH_CEILING,
                         DEFAULT_FREE_TICKS, DEFAULT_MAX_AS, EV_MAX,
                         FREE_TICKS_NEVER, MAX_AS, MAX_BATCH_PAGES, MAX_CPUS,
                         OPS_SIZE_0_1, WAIT_IRQS_FALLBACK_TURNS, WHY_MAX,
                         Action, Arch, ConfigFlag,
                         CpuState, Deadline, EventFlag, EventKind, FlushFlag,
                         FlushKind, Pte, Reason, Rule)
from ._engine import (AddressSpace, Decision, Engine, Event, Flush, Range,
                      Stats, TlbpolError, action_str, deadline_str,
                      has_reason_cite, parse_arch, parse_rules, reason_cite,
                      quiescent, reason_str, rule_str, thread_offline,
                      thread_online, thread_register, thread_unregister,
                      version)
from ._ffi import lib_path
from ._pte import format_pte, parse_pte

__all__ = [
    "Action", "AddressSpace", "Arch", "ConfigFlag", "CpuState", "Deadline",
    "Decision", "Engine", "Event", "EventFlag", "EventKind", "Flush",
    "FlushFlag", "FlushKind", "Pte", "Range", "Reason", "Rule", "Stats",
    "TlbpolError", "action_str", "deadline_str", "format_pte",
    "has_reason_cite", "lib_path", "parse_arch", "parse_pte", "parse_rules",
    "reason_cite", "reason_str", "rule_str", "version", "thread_register",
    "thread_unregister", "quiescent", "thread_offline", "thread_online",
    "ARCH_MAX", "CONFIG_SIZE_0_1", "DEFAULT_BATCH_PAGES",
    "DEFAULT_COST_BROADCAST_NS", "DEFAULT_COST_BROADCAST_PAGE_NS",
    "DEFAULT_COST_IPI_NS", "DEFAULT_COST_IPI_REMOTE_NS",
    "DEFAULT_COST_IPI_TARGET_NS", "DEFAULT_FLUSH_CEILING",
    "DEFAULT_FREE_TICKS", "DEFAULT_MAX_AS", "EV_MAX", "FREE_TICKS_NEVER",
    "MAX_AS", "MAX_BATCH_PAGES", "MAX_CPUS", "OPS_SIZE_0_1",
    "WAIT_IRQS_FALLBACK_TURNS", "WHY_MAX",
]
__version__ = "0.2.0"
