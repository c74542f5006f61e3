# SPDX-License-Identifier: MIT
"""The values that cross between Python and C: the flush a callback is
asked to perform, the event handed to the engine, the decision and the
counters it returns."""

from __future__ import annotations

from ctypes import sizeof
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, Iterator, Mapping, NamedTuple, Tuple, Union

from . import _ffi
from ._enumstr import member_or_int
from ._constants import (Action, Deadline, EventFlag, EventKind, FlushFlag, FlushKind, Pte,
                         Reason, WHY_MAX)
from ._names import ArchLike, action_str, deadline_str, reason_cite, reason_str

__all__ = ["Range", "Flush", "Event", "Backend", "Decision", "Stats", "cpuset"]


class Range(NamedTuple):
    """nr_pages pages of 1 << page_shift bytes from va (struct tlbpol_range)."""
    va: int
    nr_pages: int
    page_shift: int


@dataclass(frozen=True)
class Flush:
    """One flush to perform on one CPU (struct tlbpol_flush), copied out of
    the callback's arguments so that it may be kept.

    ``ranges`` is empty unless ``kind`` is FlushKind.PAGES.  A kind this
    package does not know (which docs/versioning.md keeps for a major
    release) is kept as an int (see Decision).
    """
    as_tag: int
    kind: Union[FlushKind, int]
    flags: FlushFlag
    ranges: Tuple[Range, ...]

    @classmethod
    def _from_c(cls, p: Any) -> "Flush":
        f = p.contents
        n = f.nr_ranges
        ranges = tuple(Range(f.ranges[i].va, f.ranges[i].nr_pages, f.ranges[i].page_shift)
                       for i in range(n)) if n else ()
        return cls(f.as_tag, member_or_int(FlushKind, f.kind), FlushFlag(f.flags), ranges)

    def pages(self) -> Iterator[int]:
        """The address of every page the flush names (PAGES only)."""
        for r in self.ranges:
            for i in range(r.nr_pages):
                yield r.va + (i << r.page_shift)


def cpuset(p: Any) -> FrozenSet[int]:
    """The CPUs of a struct tlbpol_cpuset * (a callback's argument)."""
    bits = p.contents.bits
    out = []
    for w in range(len(bits)):
        word = bits[w]
        while word:
            low = word & -word
            out.append(w * 64 + low.bit_length() - 1)
            word ^= low
    return frozenset(out)


def _event_kind(kind: Union[EventKind, int, str]) -> Union[EventKind, int]:
    """An EventKind from its name ("clear-young"); any other value as it is."""
    if not isinstance(kind, str):
        return kind
    try:
        return EventKind[kind.strip().upper().replace("-", "_")]
    except KeyError:
        raise ValueError("unknown event kind %r (%s)" % (
            kind, ", ".join(k.name.lower() for k in EventKind))) from None


@dataclass
class Event:
    """One page-table change (struct tlbpol_event).

    kind: an EventKind (or its name, "protect"); old_pte / new_pte: Pte bits
    before and after; flags: EventFlag bits; va aligned to 1 << page_shift;
    nr_pages >= 1.  Each number must fit its C field (uint64_t va and
    nr_pages, uint32_t the rest): TypeError or OverflowError naming the field
    ("tlbpol_event.va") when the event is made, and again when it is handed
    to C (after a field was changed).
    """
    kind: Union[EventKind, int, str]
    old_pte: Union[Pte, int] = 0
    new_pte: Union[Pte, int] = 0
    flags: Union[EventFlag, int] = 0
    va: int = 0x7F0000000000
    nr_pages: int = 1
    page_shift: int = 12

    def __post_init__(self) -> None:
        self.kind = _event_kind(self.kind)
        self._to_c()  # every field checked now, not first at the engine call

    def _to_c(self) -> _ffi.EventS:
        """struct tlbpol_event: each field checked as it is stored."""
        return _ffi.EventS(size=sizeof(_ffi.EventS), kind=_event_kind(self.kind),
                           flags=self.flags, page_shift=self.page_shift, va=self.va,
                           nr_pages=self.nr_pages, old_pte=self.old_pte, new_pte=self.new_pte)


@dataclass
class Backend:
    """One flush mechanism the host has, and what it costs (struct
    tlbpol_backend, release 0.3), for ``Engine(backends=[...])``.

    mech: MECH_IPI (interrupts) or MECH_BROADCAST (one invalidation that
    reaches every CPU with no interrupt: the bcast_issue and bcast_sync
    callbacks with BKF_SPLIT, else broadcast).  flags: BKF_* bits
    (IMPLIES_IRQ, SPLIT, DISABLED).  max_pages: pages one instruction names
    at most (0 means 1).  cost_ns: IPI, the first target; BROADCAST, one
    request, issue and sync.  cost_target_ns, cost_remote_ns: IPI, each
    further target, more for each on another node.  cost_page_ns:
    BROADCAST, each instruction.  A zero cost takes the configuration's.
    The ``size`` C reads is always sizeof(struct tlbpol_backend).

    Each number must fit its uint32_t field: TypeError or OverflowError
    naming the field ("tlbpol_backend.max_pages") when the descriptor is
    made, and again when it is handed to C (after a field was changed).
    The engine checks the rest (TlbpolError: EINVAL for a flag the mechanism
    cannot have, an unknown mechanism or flag, or a broadcast whose
    callbacks are missing; EEXIST for two of one mechanism; ERANGE for more
    than MECH_MAX).
    """
    mech: int
    flags: int = 0
    max_pages: int = 0
    cost_ns: int = 0
    cost_target_ns: int = 0
    cost_remote_ns: int = 0
    cost_page_ns: int = 0

    def __post_init__(self) -> None:
        self._to_c()  # every field checked now, not first at the engine call

    def _to_c(self) -> _ffi.BackendS:
        """struct tlbpol_backend: each field checked as it is stored."""
        return _ffi.BackendS(size=sizeof(_ffi.BackendS), mech=self.mech, flags=self.flags,
                             max_pages=self.max_pages, cost_ns=self.cost_ns,
                             cost_target_ns=self.cost_target_ns,
                             cost_remote_ns=self.cost_remote_ns, cost_page_ns=self.cost_page_ns)


@dataclass(frozen=True)
class Decision:
    """What an event needs (struct tlbpol_decision): an action, by when, and why.

    A later library may return a value this package's enums do not have (a
    new reason code, as each minor release may add: docs/versioning.md):
    the field is then that int, printed ``Reason(23)`` (an
    ``_enumstr.UnknownValue``), and the ``*_name`` properties and cite() ask
    the library, which knows it.  Test with ``isinstance(d.reason, Reason)``.
    """
    action: Union[Action, int]
    deadline: Union[Deadline, int]
    reason: Union[Reason, int]

    @classmethod
    def _from_c(cls, d: _ffi.DecisionS) -> "Decision":
        return cls(member_or_int(Action, d.action), member_or_int(Deadline, d.deadline),
                   member_or_int(Reason, d.reason))

    @property
    def action_name(self) -> str:
        """The library's name of the action ("shootdown")."""
        return action_str(self.action)

    @property
    def deadline_name(self) -> str:
        """The library's name of the deadline ("now")."""
        return deadline_str(self.deadline)

    @property
    def reason_name(self) -> str:
        """The library's name of the reason ("downgrade")."""
        return reason_str(self.reason)

    def cite(self, arch: ArchLike) -> str:
        """The citation of this decision's reason on @arch (reason_cite())."""
        return reason_cite(self.reason, arch)

    def __str__(self) -> str:
        return "%s/%s (%s)" % (self.action_name, self.deadline_name, self.reason_name)


class Stats(Mapping[str, int]):
    """Counters of struct tlbpol_stats, as a read-only mapping of name ->
    value ("events", "ipis_sent", ...; also readable as attributes), with
    ``by_reason``: events per Reason."""

    def __init__(self, s: _ffi.StatsS) -> None:
        self._d: Dict[str, int] = {n: getattr(s, n) for n in
                                   _ffi.STATS_COUNTERS + _ffi.STATS_COUNTERS_0_2}
        self.by_reason: Dict[Reason, int] = {Reason(i): s.by_reason[i] for i in range(WHY_MAX)}

    def __getitem__(self, key: str) -> int:
        return self._d[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __getattr__(self, name: str) -> int:
        try:
            return int(self.__dict__["_d"][name])
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        return "Stats(%r)" % (self._d,)
