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

from . import _constants
# Print the enums by name (Python 3.11 prints an IntEnum as its number).
from . import _enumstr  # noqa: F401
# Every enum and constant of the header, as _constants.__all__ names them.
from ._constants import *  # noqa: F401,F403
from ._engine import AddressSpace, Engine, cost_calibrate
from ._errors import TlbpolError
from ._ffi import lib_path
from ._names import (action_str, deadline_str, has_reason_cite, parse_arch, parse_rules,
                     reason_cite, reason_str, rule_str, version)
from ._pte import format_pte, parse_pte
from ._tags import TagFlush, TagId, TagKind, Tags, TagsStats, TagUse
from ._threads import (quiescent, thread_offline, thread_online, thread_register,
                       thread_unregister)
from ._values import Backend, Calibration, CostModel, Decision, Event, Flush, Range, Stats

# The layout test's table of C names (read as tlbpol._constants.HEADER_CONSTANTS),
# not part of the API.
del HEADER_CONSTANTS  # noqa: F821

__all__ = [
    "AddressSpace", "Backend", "Calibration", "CostModel", "Decision", "Engine", "Event",
    "Flush", "Range", "Stats", "TagFlush", "TagId", "TagKind", "TagUse", "Tags", "TagsStats",
    "TlbpolError", "action_str", "cost_calibrate", "deadline_str",
    "format_pte",
    "has_reason_cite", "lib_path", "parse_arch", "parse_pte", "parse_rules",
    "reason_cite", "reason_str", "rule_str", "version", "thread_register",
    "thread_unregister", "quiescent", "thread_offline", "thread_online",
]
__all__ += [name for name in _constants.__all__ if name != "HEADER_CONSTANTS"]
__version__ = "0.3.0"
