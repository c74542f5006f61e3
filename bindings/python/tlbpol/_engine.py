# SPDX-License-Identifier: MIT
"""The Pythonic API over the ctypes layer: Engine, AddressSpace, Event,
Decision, Stats, the names of things, and errors as OSError."""

from __future__ import annotations

import ctypes
import errno as _errno
import itertools
import os
import threading
from ctypes import byref, c_int, c_uint16, c_uint64, c_void_p, sizeof
from dataclasses import dataclass
from typing import (Any, Callable, Dict, FrozenSet, Iterator, List, Mapping,
                    NamedTuple, Optional, Sequence, Tuple, Union)

from . import _ffi
from ._constants import (Action, Arch, ConfigFlag, CpuState, Deadline,
                         EventFlag, EventKind, FlushFlag, FlushKind, Pte,
                         Reason, Rule, WHY_MAX)

__all__ = [
    "TlbpolError", "version", "rule_str", "parse_rules", "reason_str",
    "action_str", "deadline_str", "reason_cite", "has_reason_cite",
    "parse_arch", "Range", "Flush", "Event", "Decision", "Stats",
    "AddressSpace", "Engine", "thread_register", "thread_unregister",
    "quiescent", "thread_offline", "thread_online",
]

ArchLike = Union[Arch, int, str]
RulesLike = Union[Rule, int, str]


class TlbpolError(OSError):
    """A libtlbpol call failed: ``errno`` is the positive errno value the C
    function returned negated, ``function`` the C function's name (also in
    the message: ``[Errno 22] tlbpol_submit: Invalid argument``)."""

    function: str

    def __init__(self, err: int, function: str, detail: str = "") -> None:
        msg = "%s: %s" % (function, os.strerror(err))
        if detail:
            msg += " (%s)" % detail
        super().__init__(err, msg)
        self.function = function


def _check(function: str, rc: int, detail: str = "") -> int:
    if rc < 0:
        raise TlbpolError(-rc, function, detail)
    return rc


def _s(b: Optional[bytes]) -> str:
    return b.decode("utf-8", "replace") if b is not None else "unknown"


# --------------------------------------------------------------------------
# Names

def version() -> str:
    """The linked library's version, "MAJOR.MINOR.PATCH" (tlbpol_version())."""
    return _s(_ffi.lib().tlbpol_version())


def rule_str(rule: Union[Rule, int]) -> str:
    """The name of one rule bit ("lazy-unmap"); "unknown" for 0 or several bits."""
    return _s(_ffi.call("tlbpol_rule_str", rule=rule))


def parse_rules(spec: str) -> Rule:
    """A rule mask from names, as tlbpol_rules_parse() reads them:
    "default,-lazy-unmap", "linux+receiver-merge", "none", "0x1ff".

    Raises TlbpolError (EINVAL) for an empty spec or an unknown name,
    TypeError if @spec is not a str, ValueError if it holds a NUL.
    """
    out = c_uint64()
    _check("tlbpol_rules_parse", _ffi.call("tlbpol_rules_parse", spec=spec, out=byref(out)),
           repr(spec))
    return Rule(out.value)


def reason_str(reason: Union[Reason, int]) -> str:
    """The short name of a reason ("downgrade"); "unknown" out of range."""
    return _s(_ffi.call("tlbpol_reason_str", reason=reason))


def action_str(action: Union[Action, int]) -> str:
    """The name of an action ("none", "local", "shootdown")."""
    return _s(_ffi.call("tlbpol_action_str", action=action))


def deadline_str(deadline: Union[Deadline, int]) -> str:
    """The name of a deadline ("now", "writeback", "free", "lazy")."""
    return _s(_ffi.call("tlbpol_deadline_str", deadline=deadline))


def has_reason_cite() -> bool:
    """Does the linked library have tlbpol_reason_cite() (release 0.3)?"""
    return _ffi.has("tlbpol_reason_cite")


def reason_cite(reason: Union[Reason, int], arch: ArchLike) -> str:
    """The hardware rule or kernel source the decision table cites for
    @reason on @arch (tlbpol_reason_cite()); "unknown" for an unknown reason
    or arch.  Raises NotImplementedError if the library predates it."""
    if not _ffi.has("tlbpol_reason_cite"):
        raise NotImplementedError("libtlbpol %s at %s has no tlbpol_reason_cite() "
                                  "(release 0.3)" % (version(), _ffi.lib_path()))
    return _s(_ffi.call("tlbpol_reason_cite", reason=reason, arch=parse_arch(arch)))


_ARCH_NAMES = {"generic": Arch.GENERIC, "x86_64": Arch.X86_64, "x86-64": Arch.X86_64,
               "amd64": Arch.X86_64, "x86": Arch.X86_64, "arm64": Arch.ARM64,
               "aarch64": Arch.ARM64}


def parse_arch(arch: ArchLike) -> Arch:
    """An Arch from the enum, its value, or a name: "x86_64" (or "x86-64",
    "amd64"), "arm64" (or "aarch64"), "generic".  ValueError for another
    name or value; TypeError and OverflowError as for every integer."""
    if isinstance(arch, str):
        try:
            return _ARCH_NAMES[arch.strip().lower()]
        except KeyError:
            raise ValueError("unknown arch %r (x86_64, arm64, generic)" % arch) from None
    value = _ffi.check_int("arch", arch, _ffi.field_types(_ffi.Config)["arch"])
    try:
        return Arch(value)
    except ValueError:
        raise ValueError("unknown arch %d (x86_64, arm64, generic)" % value) from None


def _rules(rules: RulesLike) -> Union[Rule, int]:
    """A rule mask from a spec, or @rules itself, checked where it reaches C."""
    if isinstance(rules, str):
        return parse_rules(rules)
    return rules


def thread_register() -> None:
    """tlbpol_thread_register(): the calling thread takes part in the grace
    periods of live reconfiguration (Engine.set_rules() and the like)."""
    _ffi.lib().tlbpol_thread_register()


def thread_unregister() -> None:
    """tlbpol_thread_unregister(): the calling thread leaves them."""
    _ffi.lib().tlbpol_thread_unregister()


def quiescent() -> None:
    """tlbpol_quiescent(): the calling thread holds no engine configuration."""
    _ffi.lib().tlbpol_quiescent()


def thread_offline() -> None:
    """tlbpol_thread_offline(): around a long block of a registered thread."""
    _ffi.lib().tlbpol_thread_offline()


def thread_online() -> None:
    """tlbpol_thread_online(): back from thread_offline()."""
    _ffi.lib().tlbpol_thread_online()


# --------------------------------------------------------------------------
# Values

class Range(NamedTuple):
    """nr_pages pages of 1 << page_shift bytes from va (struct tlbpol_range)."""
    va: int
    nr_pages: int
    page_shift: int


@dataclass(frozen=True)
class Flush:
    """One flush to perform on one CPU (struct tlbpol_flush), copied out of
    the callback's arguments so that it may be kept.

    ``ranges`` is empty unless ``kind`` is FlushKind.PAGES.
    """
    as_tag: int
    kind: FlushKind
    flags: FlushFlag
    ranges: Tuple[Range, ...]

    @classmethod
    def _from_c(cls, p: Any) -> "Flush":
        f = p.contents
        n = f.nr_ranges
        ranges = tuple(Range(f.ranges[i].va, f.ranges[i].nr_pages, f.ranges[i].page_shift)
                       for i in range(n)) if n else ()
        return cls(f.as_tag, FlushKind(f.kind), FlushFlag(f.flags), ranges)

    def pages(self) -> Iterator[int]:
        """The address of every page the flush names (PAGES only)."""
        for r in self.ranges:
            for i in range(r.nr_pages):
                yield r.va + (i << r.page_shift)


def _cpuset(p: Any) -> FrozenSet[int]:
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


@dataclass(frozen=True)
class Decision:
    """What an event needs (struct tlbpol_decision): an action, by when, and why."""
    action: Action
    deadline: Deadline
    reason: Reason

    @classmethod
    def _from_c(cls, d: _ffi.DecisionS) -> "Decision":
        return cls(Action(d.action), Deadline(d.deadline), Reason(d.reason))

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


# --------------------------------------------------------------------------
# Engine

def _cpu_nodes(cpu_node: Sequence[int], cpus: int) -> Any:
    """cfg->cpu_node: an array of the field's element type (uint16_t), each
    entry checked ("tlbpol_config.cpu_node[3]"), at least @cpus of them."""
    elem = _ffi.field_types(_ffi.Config)["cpu_node"]._type_
    try:
        nodes = list(cpu_node)
    except TypeError:
        raise TypeError("cpu_node must be a sequence of ints, not %s"
                        % type(cpu_node).__name__) from None
    if len(nodes) < cpus:
        raise ValueError("cpu_node needs one entry per CPU")
    return (elem * len(nodes))(*[_ffi.check_int("tlbpol_config.cpu_node[%d]" % i, node, elem)
                                 for i, node in enumerate(nodes)])


def _space_handle(space: Any) -> c_void_p:
    """The handle of an open AddressSpace; TypeError for anything else."""
    if not isinstance(space, AddressSpace):
        raise TypeError("space must be a tlbpol.AddressSpace, not %s" % type(space).__name__)
    return space._h()


def _event_c(event: Any) -> _ffi.EventS:
    """struct tlbpol_event of an Event; TypeError for anything else."""
    if not isinstance(event, Event):
        raise TypeError("event must be a tlbpol.Event, not %s" % type(event).__name__)
    return event._to_c()


FlushLocal = Callable[[int, Flush], Any]
SendIpi = Callable[[int, FrozenSet[int]], Any]
Broadcast = Callable[[int, Flush], Any]
Relax = Callable[[int], Any]
VcpuDefer = Callable[[int], bool]
Stuck = Callable[[int, FrozenSet[int], int], Any]


class AddressSpace:
    """An address space open in an engine (tlbpol_as_open()).  Close it with
    close() or a ``with`` block once no CPU has it loaded."""

    def __init__(self, engine: "Engine", handle: c_void_p, tag: int) -> None:
        self._engine = engine
        self._handle: Optional[c_void_p] = handle
        self.tag = tag

    @property
    def closed(self) -> bool:
        """True once closed (or its engine was)."""
        return self._handle is None or self._engine.closed

    def _h(self) -> c_void_p:
        if self.closed:
            raise ValueError("address space %#x is closed" % self.tag)
        assert self._handle is not None
        return self._handle

    def close(self) -> None:
        """tlbpol_as_close(): EBUSY while flushes are pending for it or a
        CPU has it loaded.  Closing twice does nothing."""
        if self.closed:
            self._handle = None
            return
        self._engine._call("tlbpol_as_close", self._engine._h(), self._handle)
        self._engine._spaces.pop(self.tag, None)
        self._handle = None

    def __enter__(self) -> "AddressSpace":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "AddressSpace(tag=%#x%s)" % (self.tag, ", closed" if self.closed else "")


class Engine:
    """A libtlbpol engine (tlbpol_engine_new()), with Python callables as
    its callbacks.  Use it as a context manager, or close() it.

    arch: "x86_64", "arm64", "generic" or an Arch.  rules: a spec for
    tlbpol_rules_parse() ("default,-lazy-unmap", "linux", "none") or a Rule
    mask.  cpus: the number of CPUs (0 .. cpus-1).

    Callbacks (each called on the thread of the engine call that needs it,
    with the GIL; the library runs without it):

    - flush_local(cpu, flush: Flush): flush @cpu's TLB.  Required.
    - send_ipi(from_cpu, targets: frozenset[int]): interrupt each target;
      its thread then calls handle_ipi(target).  Required.
    - broadcast(from_cpu, flush), relax(cpu), vcpu_defer(cpu) -> bool,
      stuck(cpu, waiting_for: frozenset[int], turns): optional.

    An exception raised in a callback (or a deferred free) never reaches the
    C library: it is recorded, the callback returns as if it had succeeded
    (vcpu_defer as if it had returned False), and the exception is raised
    from the engine call that made the callback, on that thread, once the
    library has returned.  The engine's state then is as if the callback
    had done its job: a flush_local that raised has still been counted.
    Beware send_ipi: if it raises before it has interrupted every target,
    the engine still waits for their acknowledgements, and an initiator
    whose targets never call handle_ipi() waits for ever (give the engine
    a watchdog, wait_limit with a stuck callback, to learn of it).

    Per-CPU calls follow the C rules: calls for one CPU must not run
    concurrently; calls for different CPUs may, from different threads.
    Errors are raised as TlbpolError, an OSError with the errno and the C
    function's name.  Before that, every number is checked against its C
    type (a cpu is a uint32_t, a tag or a stamp a uint64_t...): TypeError
    for a value that is not an int (a bool neither), OverflowError naming
    the argument or field for one that does not fit; nothing is truncated.
    """

    def __init__(self, *, arch: ArchLike = Arch.X86_64, rules: RulesLike = Rule.DEFAULT,
                 cpus: int = 1, flush_local: FlushLocal, send_ipi: SendIpi,
                 broadcast: Optional[Broadcast] = None, relax: Optional[Relax] = None,
                 vcpu_defer: Optional[VcpuDefer] = None, stuck: Optional[Stuck] = None,
                 max_as: Optional[int] = None, flush_ceiling: Optional[int] = None,
                 batch_pages: Optional[int] = None, cpu_node: Optional[Sequence[int]] = None,
                 flags: Union[ConfigFlag, int] = 0, ipi_delay_spins: Optional[int] = None,
                 wait_limit: Optional[int] = None, free_ticks: Optional[int] = None) -> None:
        self._handle: Optional[c_void_p] = None
        self._tls = threading.local()
        self._spaces: Dict[int, AddressSpace] = {}
        self._frees: Dict[int, Callable[[], Any]] = {}
        self._free_ids = itertools.count(1)
        self.arch = parse_arch(arch)
        rule_mask = _rules(rules)

        self._flush_local: FlushLocal = flush_local
        self._send_ipi: SendIpi = send_ipi
        self._broadcast: Optional[Broadcast] = broadcast
        self._relax: Optional[Relax] = relax
        self._vcpu_defer: Optional[VcpuDefer] = vcpu_defer
        self._stuck: Optional[Stuck] = stuck

        # The CFUNCTYPE objects must live as long as the engine: the C side
        # holds raw pointers to their thunks until tlbpol_engine_free().
        # self._keep holds them (ctypes also records them in ops._objects).
        ops = _ffi.Ops(size=sizeof(_ffi.Ops))
        self._keep: List[Any] = []
        slots: List[Tuple[str, Any, Callable[..., Any], Optional[Callable[..., Any]]]] = [
                ("flush_local", _ffi.FLUSH_LOCAL_FN, self._cb_flush_local, flush_local),
                ("send_ipi", _ffi.SEND_IPI_FN, self._cb_send_ipi, send_ipi),
                ("broadcast", _ffi.BROADCAST_FN, self._cb_broadcast, broadcast),
                ("relax", _ffi.RELAX_FN, self._cb_relax, relax),
                ("vcpu_defer", _ffi.VCPU_DEFER_FN, self._cb_vcpu_defer, vcpu_defer),
                ("stuck", _ffi.STUCK_FN, self._cb_stuck, stuck)]
        for field, proto, method, fn in slots:
            if fn is None and field not in ("flush_local", "send_ipi"):
                continue
            if not callable(fn):
                raise TypeError("%s must be callable, not %s" % (field, type(fn).__name__))
            thunk = proto(method)
            setattr(ops, field, thunk)
            self._keep.append(thunk)
        self._free_tramp = _ffi.DEFER_FREE_FN(self._cb_free)
        self._keep.append(self._free_tramp)
        self._ops = ops

        # Every integer is checked as it is stored (_ffi.CheckedStructure,
        # _ffi.call): nothing out of range reaches the library truncated.
        cfg = _ffi.Config()
        _ffi.call("tlbpol_config_init", byref(cfg), cpus=cpus, arch=self.arch)
        cfg.rules = rule_mask
        cfg.ops = ctypes.pointer(ops)
        cfg.flags = flags
        for name, value in (("max_as", max_as), ("flush_ceiling", flush_ceiling),
                            ("batch_pages", batch_pages), ("ipi_delay_spins", ipi_delay_spins),
                            ("wait_limit", wait_limit), ("free_ticks", free_ticks)):
            if value is not None:
                setattr(cfg, name, value)
        self._cpu_node = None
        if cpu_node is not None:
            self._cpu_node = _cpu_nodes(cpu_node, cfg.nr_cpus)
            cfg.cpu_node = ctypes.cast(self._cpu_node, ctypes.POINTER(c_uint16))
        self._cfg = cfg
        eng = c_void_p()
        _check("tlbpol_engine_new", _ffi.call("tlbpol_engine_new", byref(cfg), byref(eng)))
        self._handle = eng
        self.cpus: int = cfg.nr_cpus

    # -- callbacks: never let an exception into C --------------------------
    def _record(self, exc: BaseException) -> None:
        pending = getattr(self._tls, "exc", None)
        if pending is None:
            self._tls.exc = exc
        elif pending is not exc and hasattr(pending, "add_note"):
            pending.add_note("also raised in a later callback: %r" % (exc,))

    def _cb_flush_local(self, ctx: Any, cpu: int, f: Any) -> None:
        try:
            self._flush_local(cpu, Flush._from_c(f))
        except BaseException as exc:  # noqa: B902 - recorded, re-raised later
            self._record(exc)

    def _cb_send_ipi(self, ctx: Any, cpu: int, targets: Any) -> None:
        try:
            self._send_ipi(cpu, _cpuset(targets))
        except BaseException as exc:
            self._record(exc)

    def _cb_broadcast(self, ctx: Any, cpu: int, f: Any) -> None:
        try:
            assert self._broadcast is not None
            self._broadcast(cpu, Flush._from_c(f))
        except BaseException as exc:
            self._record(exc)

    def _cb_relax(self, ctx: Any, cpu: int) -> None:
        try:
            assert self._relax is not None
            self._relax(cpu)
        except BaseException as exc:
            self._record(exc)

    def _cb_vcpu_defer(self, ctx: Any, cpu: int) -> int:
        try:
            assert self._vcpu_defer is not None
            return 1 if self._vcpu_defer(cpu) else 0
        except BaseException as exc:
            self._record(exc)
            return 0

    def _cb_stuck(self, ctx: Any, cpu: int, waiting: Any, turns: int) -> None:
        try:
            assert self._stuck is not None
            self._stuck(cpu, _cpuset(waiting), turns)
        except BaseException as exc:
            self._record(exc)

    def _cb_free(self, arg: Optional[int]) -> None:
        fn = self._frees.pop(arg or 0, None)
        if fn is None:
            return
        try:
            fn()
        except BaseException as exc:
            self._record(exc)

    # -- calls ---------------------------------------------------------------
    @property
    def closed(self) -> bool:
        """True once close() has freed the engine."""
        return self._handle is None

    def _h(self) -> c_void_p:
        if self._handle is None:
            raise ValueError("engine is closed")
        return self._handle

    def _call(self, name: str, *args: Any, **named: Any) -> int:
        """C @name on @args then @named (checked, see _ffi.c_args); raises
        what a callback raised, then TlbpolError for a negative errno."""
        return self._run(name, _ffi.c_args(name, args, named))

    def _run(self, name: str, values: List[Any]) -> int:
        rc = getattr(_ffi.lib(), name)(*values)
        exc = getattr(self._tls, "exc", None)
        if exc is not None:
            self._tls.exc = None
            raise exc
        return _check(name, rc)

    def close(self) -> None:
        """tlbpol_engine_free(): pending flushes and deferred frees are
        dropped (complete them first with flush(cpu, Deadline.BY_LAZY)).
        No other call may be running.  Closing twice does nothing."""
        if self._handle is None:
            return
        _ffi.lib().tlbpol_engine_free(self._handle)
        self._handle = None
        for space in self._spaces.values():
            space._handle = None
        self._spaces.clear()
        self._frees.clear()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def __repr__(self) -> str:
        return "Engine(arch=%s, cpus=%d, rules=%#x%s)" % (
            self.arch.name.lower(), getattr(self, "cpus", 0),
            int(self.rules) if not self.closed else 0, ", closed" if self.closed else "")

    @property
    def rules(self) -> Rule:
        """The rules in force (tlbpol_engine_rules()): the configured mask
        less what this arch or these callbacks cannot use."""
        return Rule(_ffi.lib().tlbpol_engine_rules(self._h()))

    def topology(self) -> List[int]:
        """The NUMA node of each CPU, as the engine uses it."""
        arr = (c_uint16 * self.cpus)()
        self._call("tlbpol_engine_topology", self._h(), arr, n=self.cpus)
        return list(arr)

    def set_rules(self, rules: RulesLike) -> None:
        """tlbpol_engine_set_rules(): replace the rule mask while CPUs run
        (waits for a grace period; not from a callback)."""
        self._call("tlbpol_engine_set_rules", self._h(), rules=_rules(rules))

    def set_flush_ceiling(self, pages: int) -> None:
        """tlbpol_engine_set_flush_ceiling()."""
        self._call("tlbpol_engine_set_flush_ceiling", self._h(), pages=pages)

    def set_batch_pages(self, pages: int) -> None:
        """tlbpol_engine_set_batch_pages()."""
        self._call("tlbpol_engine_set_batch_pages", self._h(), pages=pages)

    def set_ipi_delay(self, spins: int) -> None:
        """tlbpol_engine_set_ipi_delay()."""
        self._call("tlbpol_engine_set_ipi_delay", self._h(), spins=spins)

    def set_cost_model(self, *, ipi_ns: int = 0, ipi_target_ns: int = 0,
                       ipi_remote_ns: int = 0, broadcast_ns: int = 0,
                       broadcast_page_ns: int = 0) -> None:
        """tlbpol_engine_set_cost_model(): the broadcast cost model, in ns
        (0 keeps a value)."""
        cfg = _ffi.Config()
        _ffi.call("tlbpol_config_init", byref(cfg), cpus=1, arch=self.arch)
        cfg.cost_ipi_ns, cfg.cost_ipi_target_ns = ipi_ns, ipi_target_ns
        cfg.cost_ipi_remote_ns, cfg.cost_broadcast_ns = ipi_remote_ns, broadcast_ns
        cfg.cost_broadcast_page_ns = broadcast_page_ns
        self._call("tlbpol_engine_set_cost_model", self._h(), byref(cfg))

    def open_as(self, tag: int) -> AddressSpace:
        """tlbpol_as_open(): track the address space with @tag (PCID,
        ASID...).  EEXIST if one with @tag is open; ENOMEM past max_as."""
        out = c_void_p()
        self._call("tlbpol_as_open", self._h(), tag=tag, out=byref(out))
        space = AddressSpace(self, out, _ffi.lib().tlbpol_as_tag(out))
        self._spaces[space.tag] = space
        return space

    def lookup(self, tag: int) -> Optional[AddressSpace]:
        """The open address space with @tag, or None."""
        space = self._spaces.get(tag)
        return space if space is not None and not space.closed else None

    def decide(self, space: AddressSpace, cpu: int, event: Event) -> Decision:
        """tlbpol_decide(): what @event needs.  Pure: changes and counts nothing."""
        d = _ffi.DecisionS()
        ev = _event_c(event)
        self._call("tlbpol_decide", self._h(), _space_handle(space), cpu=cpu, ev=byref(ev),
                   out=byref(d))
        return Decision._from_c(d)

    def submit(self, space: AddressSpace, cpu: int, event: Event) -> Decision:
        """tlbpol_submit(): decide and act for @cpu (may call every
        callback and wait for other CPUs)."""
        d = _ffi.DecisionS()
        ev = _event_c(event)
        self._call("tlbpol_submit", self._h(), _space_handle(space), cpu=cpu, ev=byref(ev),
                   out=byref(d))
        return Decision._from_c(d)

    def flush(self, cpu: int, by: Union[Deadline, int] = Deadline.BY_LAZY) -> int:
        """tlbpol_flush(): complete @cpu's pending flushes due by @by, run
        the deferred frees that are due; returns the events completed."""
        return self._call("tlbpol_flush", self._h(), cpu=cpu, by=by)

    def tick(self, cpu: int) -> None:
        """tlbpol_tick(): @cpu's periodic work."""
        self._call("tlbpol_tick", self._h(), cpu=cpu)

    def switch(self, cpu: int, space: Optional[AddressSpace]) -> bool:
        """tlbpol_switch(): @cpu now runs @space (None: idle/lazy).
        Returns True when the CPU must flush @space whole first."""
        need = c_int(0)
        handle = None if space is None else _space_handle(space)
        self._call("tlbpol_switch", self._h(), cpu=cpu, next=handle, need_flush=byref(need))
        return bool(need.value)

    def unload(self, cpu: int) -> None:
        """tlbpol_unload(): a lazy @cpu drops the address space it keeps loaded."""
        self._call("tlbpol_unload", self._h(), cpu=cpu)

    def cpu_state(self, cpu: int, state: Union[CpuState, int]) -> bool:
        """tlbpol_cpu_state(): record what @cpu does.  True when it must
        flush its current address space before using it."""
        return bool(self._call("tlbpol_cpu_state", self._h(), cpu=cpu, state=state))

    def handle_ipi(self, cpu: int) -> int:
        """tlbpol_handle_ipi(): @cpu's shootdown interrupt handler; returns
        the requests served."""
        return self._call("tlbpol_handle_ipi", self._h(), cpu=cpu)

    def defer_free(self, cpu: int, fn: Callable[[], Any]) -> None:
        """tlbpol_defer_free(): call fn() once every flush pending on @cpu
        now has completed on every CPU it targets (at once if none is).
        @fn must not call the engine for @cpu."""
        if not callable(fn):
            raise TypeError("fn must be callable, not %s" % type(fn).__name__)
        key = next(self._free_ids)
        args = _ffi.c_args("tlbpol_defer_free", (self._h(),),
                           dict(cpu=cpu, fn=self._free_tramp, arg=c_void_p(key)))
        self._frees[key] = fn  # the library may call it at once
        try:
            self._run("tlbpol_defer_free", args)
        except TlbpolError:
            self._frees.pop(key, None)
            raise

    def frees_pending(self, cpu: int) -> int:
        """tlbpol_frees_pending(): deferred frees of @cpu not run yet."""
        return self._call("tlbpol_frees_pending", self._h(), cpu=cpu)

    def stamp(self, cpu: int) -> int:
        """tlbpol_stamp(): complete @cpu's flushes due by a free, post its
        stamped ones lazily; returns the stamp (0: nothing in flight).
        Release 0.3: ENOENT when no stamped event was submitted on @cpu
        since its previous stamp()."""
        out = c_uint64()
        self._call("tlbpol_stamp", self._h(), cpu=cpu, stamp=byref(out))
        return out.value

    def stamp_settle(self, cpu: int, stamp: int) -> bool:
        """tlbpol_stamp_settle(): make frames freed under @stamp safe to
        reuse.  True if it had to interrupt or wait."""
        return bool(self._call("tlbpol_stamp_settle", self._h(), cpu=cpu, stamp=stamp))

    def stamp_pending(self, stamp: int) -> bool:
        """tlbpol_stamp_pending(): would settling @stamp wait now?"""
        return bool(self._call("tlbpol_stamp_pending", self._h(), stamp=stamp))

    def stats(self, cpu: Optional[int] = None) -> Stats:
        """tlbpol_stats_read(): @cpu's counters, or the sum over CPUs (None,
        or -1 as in C: this argument is a C int, the others uint32_t)."""
        s = _ffi.StatsS()
        self._call("tlbpol_stats_read", self._h(), cpu=-1 if cpu is None else cpu, out=byref(s))
        return Stats(s)


del _errno
