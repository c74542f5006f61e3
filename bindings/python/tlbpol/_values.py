# SPDX-License-Identifier: MIT
"""The values that cross between Python and C: the flush a callback is
asked to perform, the event handed to the engine, the decision and the
counters it returns."""

from __future__ import annotations

from ctypes import sizeof
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, Iterator, Mapping, NamedTuple, Optional, Tuple, Union

from . import _ffi
from ._enumstr import member_or_int
from ._constants import (Action, Deadline, EventFlag, EventKind, FlushFlag, FlushKind, Pte,
                         Reason, WHY_MAX)
from ._names import ArchLike, action_str, deadline_str, reason_cite, reason_str

__all__ = ["Range", "Flush", "Event", "Backend", "Calibration", "CostModel", "Decision", "Stats",
           "cpuset"]


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

    mech: MECH_IPI (interrupts), MECH_BROADCAST (one invalidation that
    reaches every CPU with no interrupt: the bcast_issue and bcast_sync
    callbacks with BKF_SPLIT, else broadcast) or MECH_REMOTE (a targeted
    flush that runs no code on its targets: the remote_action callback;
    never BKF_SPLIT).  flags: BKF_* bits (IMPLIES_IRQ, SPLIT, DISABLED).
    max_pages: pages one instruction (REMOTE: one payload) names at most
    (0 means 1).  cost_ns: IPI and REMOTE, the first target; BROADCAST, one
    request, issue and sync.  cost_target_ns: IPI and REMOTE, each further
    target.  cost_remote_ns: IPI, more for each target on another node.
    cost_page_ns: BROADCAST, each instruction; REMOTE, each payload.  A
    zero cost takes the configuration's (REMOTE: what interrupts cost, a
    tie going to the remote action, and 0 per payload).
    The ``size`` C reads is always sizeof(struct tlbpol_backend).

    Each number must fit its uint32_t field: TypeError or OverflowError
    naming the field ("tlbpol_backend.max_pages") when the descriptor is
    made, and again when it is handed to C (after a field was changed).
    The engine checks the rest (TlbpolError: EINVAL for a flag the mechanism
    cannot have, an unknown mechanism or flag, or a broadcast or remote
    action whose callbacks are missing; EEXIST for two of one mechanism;
    ERANGE for more than MECH_MAX).
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

    @classmethod
    def _from_c(cls, b: _ffi.BackendS) -> "Backend":
        """A descriptor the library filled (tlbpol_cost_calibrate())."""
        return cls(mech=b.mech, flags=b.flags, max_pages=b.max_pages, cost_ns=b.cost_ns,
                   cost_target_ns=b.cost_target_ns, cost_remote_ns=b.cost_remote_ns,
                   cost_page_ns=b.cost_page_ns)


@dataclass
class Calibration:
    """The primitives' costs, as the host timed them at boot (struct
    tlbpol_calibration, release 0.3), for :func:`cost_calibrate`.  Every
    time is in one unit, the same for all (nanoseconds, or TSC cycles where
    the TSC rate is unknown): the cost model only compares them.  Give them
    by keyword.

    Required (nonzero; TlbpolError EINVAL from cost_calibrate() otherwise):
    ipi_round_trip, one interrupt to one other CPU, from the send to seeing
    its handler's acknowledgement; inval_page, invalidating one page
    locally (INVLPG, TLBI VAE1 with its DSB, SFENCE.VMA va); full_flush, a
    whole local flush (a CR3 write, TLBI ASIDE1); refill, refilling one
    entry a flush removed (a TLB miss's walk from cached page tables).

    Optional: refill_entries, the TLB entries a CPU uses again soon after a
    whole flush (0 takes 64); ipi_send, the sender's part for each further
    target (0 takes a tenth of ipi_round_trip); irq_entry_exit, what a
    target spends taking the interrupt, added to each further target's
    cost where the host weighs its targets' time as well as the
    initiator's (0: the initiator's time only); bcast_issue, one broadcast invalidation instruction
    issued (INVLPGB, TLBI ...IS), 0 when the machine has none; bcast_sync,
    waiting for the broadcasts issued to complete (TLBSYNC, DSB ISH), or
    the whole of a synchronous broadcast, 0 for no broadcast;
    bcast_max_pages, pages one broadcast instruction names (0 for 1).

    The ``size`` C reads is always sizeof(struct tlbpol_calibration), and
    ``pad`` 0.  Each number must fit its C field (uint32_t refill_entries
    and bcast_max_pages, uint64_t the times): TypeError or OverflowError
    naming the field ("tlbpol_calibration.inval_page") when the
    calibration is made, and again when it is handed to C (after a field
    was changed); never truncated.
    """
    refill_entries: int = 0
    ipi_round_trip: int = 0
    ipi_send: int = 0
    irq_entry_exit: int = 0
    inval_page: int = 0
    full_flush: int = 0
    refill: int = 0
    bcast_issue: int = 0
    bcast_sync: int = 0
    bcast_max_pages: int = 0

    def __post_init__(self) -> None:
        self._to_c()  # every field checked now, not first at the call

    def _to_c(self) -> _ffi.CalibrationS:
        """struct tlbpol_calibration: each field checked as it is stored."""
        return _ffi.CalibrationS(
            size=sizeof(_ffi.CalibrationS), refill_entries=self.refill_entries,
            ipi_round_trip=self.ipi_round_trip, ipi_send=self.ipi_send,
            irq_entry_exit=self.irq_entry_exit, inval_page=self.inval_page,
            full_flush=self.full_flush, refill=self.refill, bcast_issue=self.bcast_issue,
            bcast_sync=self.bcast_sync, bcast_max_pages=self.bcast_max_pages, pad=0)


@dataclass(frozen=True)
class CostModel:
    """What :func:`cost_calibrate` derives from a :class:`Calibration`
    (tlbpol_cost_calibrate()): the configuration's flush ceiling and
    cost_* fields, and the descriptors of the flush mechanisms they give.

    ipi: the MECH_IPI Backend (cost_ns the first target, cost_target_ns
    each further one, cost_remote_ns the default).  bcast: the
    MECH_BROADCAST Backend when the calibration has a broadcast
    (bcast_sync > 0), its flags 0 (add BKF_SPLIT where the host splits
    it: the bcast_issue and bcast_sync callbacks), else None.

    An engine that uses them: ``Engine(flush_ceiling=m.flush_ceiling,
    backends=m.backends, ...)`` (the descriptors carry the costs), or on a
    running one set_flush_ceiling() and set_cost_model().
    """
    flush_ceiling: int
    cost_ipi_ns: int
    cost_ipi_target_ns: int
    cost_ipi_remote_ns: int
    cost_broadcast_ns: int
    cost_broadcast_page_ns: int
    ipi: Backend
    bcast: Optional[Backend]

    @property
    def backends(self) -> Tuple[Backend, ...]:
        """ipi, and bcast if there is one: for ``Engine(backends=...)``."""
        return (self.ipi,) if self.bcast is None else (self.ipi, self.bcast)


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
                                   _ffi.STATS_COUNTERS + _ffi.STATS_COUNTERS_0_2
                                   + _ffi.STATS_COUNTERS_0_3}
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
