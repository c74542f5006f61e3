# SPDX-License-Identifier: MIT
"""The engine handle and its calls: Engine (tlbpol_engine_new() and every
per-CPU call) and AddressSpace (tlbpol_as_open()), with Python callables
as the host's callbacks (see _callbacks)."""

from __future__ import annotations

import ctypes
from ctypes import byref, c_int, c_uint16, c_uint64, c_void_p
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import _ffi
from ._callbacks import (BcastIssue, BcastSync, Broadcast, Callbacks, FlushLocal, LoadTag,
                         Relax, RemoteAction, SendIpi, Stuck, VcpuDefer, WalkerSync)
from ._constants import Arch, ConfigFlag, CpuState, Deadline, Rule
from ._errors import TlbpolError, check
from ._enumstr import member_or_int
from ._names import ArchLike, RulesLike, parse_arch, rule_mask
from ._tags import TagFlush, Tags, TagUse
from ._values import Backend, Calibration, CostModel, Decision, Event, Stats

__all__ = ["AddressSpace", "Engine", "cost_calibrate"]


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


def _backend_array(backends: Sequence[Backend]) -> Tuple[Any, List[_ffi.BackendS]]:
    """cfg->backends: an array of pointers to struct tlbpol_backend (each
    field checked, "tlbpol_backend.max_pages"), and the structures it
    points to, which must outlive its use; None for no descriptor."""
    try:
        items = list(backends)
    except TypeError:
        raise TypeError("backends must be a sequence of tlbpol.Backend, not %s"
                        % type(backends).__name__) from None
    structs = []
    for i, b in enumerate(items):
        if not isinstance(b, Backend):
            raise TypeError("backends[%d] must be a tlbpol.Backend, not %s"
                            % (i, type(b).__name__))
        structs.append(b._to_c())
    if not structs:
        return None, structs
    ptr = ctypes.POINTER(_ffi.BackendS)
    return (ptr * len(structs))(*[ctypes.pointer(b) for b in structs]), structs


def cost_calibrate(calibration: Calibration) -> CostModel:
    """tlbpol_cost_calibrate() (release 0.3): the cost model and the flush
    ceiling from what the host measured (a :class:`Calibration`), as a
    :class:`CostModel`: the flush ceiling, the cost_* fields of a
    configuration (tlbpol_config_init()'s defaults for those the
    calibration does not give) and the IPI and broadcast Backend
    descriptors.

    The derivations: the first interrupt target costs ipi_round_trip, each
    further one ipi_send (plus irq_entry_exit if given); a broadcast
    bcast_issue + bcast_sync fixed and bcast_issue per instruction of
    bcast_max_pages pages; the flush ceiling is the most pages N with N x
    (inval_page + refill) <= full_flush + refill x refill_entries, 1 ..
    4096.  The measurements reach the library as given: its sums and
    products saturate at 2**64 - 1, and costs above 2**32 - 1 are capped
    there (the configuration's fields are 32-bit).

    TlbpolError EINVAL for a required measurement 0 (ipi_round_trip,
    inval_page, full_flush, refill); TypeError for anything but a
    Calibration, and TypeError or OverflowError naming the field for a
    number that does not fit it.
    """
    if not isinstance(calibration, Calibration):
        raise TypeError("calibration must be a tlbpol.Calibration, not %s"
                        % type(calibration).__name__)
    m = calibration._to_c()
    cfg = _ffi.Config()
    _ffi.call("tlbpol_config_init", byref(cfg), cpus=1, arch=Arch.GENERIC)
    ipi, bcast = _ffi.BackendS(), _ffi.BackendS()
    check("tlbpol_cost_calibrate",
          _ffi.call("tlbpol_cost_calibrate", byref(m), byref(cfg), byref(ipi), byref(bcast)))
    return CostModel(flush_ceiling=cfg.flush_ceiling, cost_ipi_ns=cfg.cost_ipi_ns,
                     cost_ipi_target_ns=cfg.cost_ipi_target_ns,
                     cost_ipi_remote_ns=cfg.cost_ipi_remote_ns,
                     cost_broadcast_ns=cfg.cost_broadcast_ns,
                     cost_broadcast_page_ns=cfg.cost_broadcast_page_ns,
                     ipi=Backend._from_c(ipi),
                     bcast=Backend._from_c(bcast) if bcast.size else None)


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
    - bcast_issue(cpu, flush) and bcast_sync(cpu): optional, both or
      neither (release 0.3), a split-phase broadcast (INVLPGB, then
      TLBSYNC): bcast_issue starts invalidating @flush on every CPU it
      reaches and returns without waiting (several may come before one
      sync); bcast_sync returns when every invalidation @cpu issued has
      completed everywhere.  The engine calls bcast_sync on the CPU that
      issued, inside the same engine call, before it counts any done.
      Preferred over broadcast when both are given, unless a Backend says
      otherwise.
    - walker_sync(cpu, cpus: frozenset[int]): optional (release 0.3), with
      flags=ConfigFlag.LOCKLESS_WALKERS: page tables were freed and
      invalidated by a broadcast that interrupts nobody; return only when
      none of @cpus is still inside a lockless walk begun before the call.
      Runs on @cpu, the initiator, inside the engine call.  Without it such
      a request goes by interrupts.
    - remote_action(from_cpu, targets: frozenset[int], flush: Flush):
      optional (release 0.3), a targeted flush that runs no code on its
      targets and is complete on return (Intel RAR, an SBI remote fence,
      MECH_REMOTE): perform @flush on every CPU in @targets (never
      @from_cpu, which the engine flushes with flush_local), whatever they
      run.  Used under Rule.BROADCAST when the cost model prefers it
      (with no Backend for it, it costs what interrupts do and wins the
      tie).  A CPU left out (idle, lazy, preempted, up to date) catches up
      by itself; a target may flush once more at its next switch.  Under
      LOCKLESS_WALKERS it counts as interrupting nobody (walker_sync
      follows it where tables were freed).  Runs on @from_cpu, inside the
      engine call, as send_ipi does.
    - load_tag(cpu, tag, flush: TagFlush): optional (release 0.3), with
      tags= of per-CPU slots and global tags (Tags(nr_global=)): load
      @tag for the address space @cpu runs, now, with the same page
      tables, after the flush @flush asks for (TagFlush.NONE or ALL, as
      switch_tag() says them): x86 a CR3 write of the same tables with
      PCID @tag and bit 63 set.  The engine calls it when the address
      space has been given a global tag since @cpu loaded it under a slot:
      from handle_ipi() outside @cpu's engine calls, from tick(), and at
      the end of a submit() that shot down or of a flush() (never from
      switch_tag() or cpu_state()), so that @cpu moves onto the global tag
      before its next switch and broadcasts by it reach it from then on
      instead of interrupts (Linux's flush_tlb_func() does the same).  The
      entries under the slot become unreachable; those under @tag are
      current.  The engine counts @cpu on @tag once it returns: it must
      not return before @cpu runs under @tag, and @cpu touches no user
      address in between.  Without it a CPU moves at its next switch.
      Runs on @cpu's thread, inside the engine call named above.  A flush
      code of a later library that TagFlush lacks is kept as the int.

    backends: a sequence of Backend descriptors of the host's flush
    mechanisms (struct tlbpol_backend, release 0.3; copied by the engine),
    at most one per mechanism; they feed the cost model.  flags:
    ConfigFlag bits (RETAIN_AS, WAIT_IRQS, LOCKLESS_WALKERS).

    tags: a Tags allocator (cfg->tags, release 0.3) for at least @cpus
    CPUs, from which the engine chooses the address spaces' hardware tags:
    CPUs then switch with switch_tag(), which says which tag to load and
    what to flush (switch() is refused, EINVAL), entries stay under their
    tags (RETAIN_AS is implied), and every Flush names the tag of the CPU
    it reaches (flush_local: that CPU's; broadcast and remote_action: the
    address space's one tag, GLOBAL only: with PERCPU tags an address
    space has a tag per CPU, so the engine uses interrupts only).  The
    engine keeps the Tags alive (Engine.tags) and it is the engine's alone
    until close(): Tags.load() or a second engine meanwhile raises
    TlbpolError EBUSY.  TlbpolError ERANGE for an allocator of fewer
    CPUs; TypeError for anything but a Tags.

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
                 wait_limit: Optional[int] = None, free_ticks: Optional[int] = None,
                 bcast_issue: Optional[BcastIssue] = None, bcast_sync: Optional[BcastSync] = None,
                 walker_sync: Optional[WalkerSync] = None,
                 backends: Optional[Sequence[Backend]] = None,
                 remote_action: Optional[RemoteAction] = None,
                 tags: Optional[Tags] = None,
                 load_tag: Optional[LoadTag] = None) -> None:
        self._handle: Optional[c_void_p] = None
        self._spaces: Dict[int, AddressSpace] = {}
        self._tags: Optional[Tags] = None
        if tags is not None and not isinstance(tags, Tags):
            raise TypeError("tags must be a tlbpol.Tags, not %s" % type(tags).__name__)
        self.arch = parse_arch(arch)
        mask = rule_mask(rules)
        # The engine holds the callbacks (and so their thunks) until
        # close(): C may call them until tlbpol_engine_free() returns.
        self._callbacks = Callbacks(flush_local, send_ipi, broadcast, relax, vcpu_defer, stuck,
                                    bcast_issue, bcast_sync, walker_sync, remote_action,
                                    load_tag)
        self._frees = self._callbacks.frees
        ops = self._callbacks.ops

        # Every integer is checked as it is stored (_ffi.CheckedStructure,
        # _ffi.call): nothing out of range reaches the library truncated.
        cfg = _ffi.Config()
        _ffi.call("tlbpol_config_init", byref(cfg), cpus=cpus, arch=self.arch)
        cfg.rules = mask
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
        # The descriptors and the array of pointers to them: kept with the
        # engine (C copies them at creation; they must live until then).
        self._backends: Optional[Tuple[Any, List[_ffi.BackendS]]] = None
        if backends is not None:
            self._backends = _backend_array(backends)
            array, structs = self._backends
            if array is not None:
                cfg.backends = ctypes.cast(array, ctypes.POINTER(ctypes.POINTER(_ffi.BackendS)))
            cfg.nr_backends = len(structs)
        self._cfg = cfg
        eng = c_void_p()
        if tags is not None:
            # The engine's alone from here (EBUSY if another engine has it),
            # given back if the engine is not built, else by close().
            lent = tags._lend()
            self._tags = tags
        try:
            if tags is not None:
                cfg.tags = lent.value
            check("tlbpol_engine_new", _ffi.call("tlbpol_engine_new", byref(cfg), byref(eng)))
        except BaseException:
            if tags is not None:
                self._tags = None
                tags._give_back()
            raise
        self._handle = eng
        self.cpus: int = cfg.nr_cpus

    # -- calls ---------------------------------------------------------------
    @property
    def tags(self) -> Optional[Tags]:
        """The tag allocator the engine uses (tags=), or None; kept alive
        with the engine, and the engine's alone until close()."""
        return self._tags

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
        self._callbacks.raise_pending()
        return check(name, rc)

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
        if self._tags is not None:
            self._tags._give_back()  # still referenced: its memory stays valid

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
        self._call("tlbpol_engine_set_rules", self._h(), rules=rule_mask(rules))

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
        Returns True when the CPU must flush @space whole first.  An
        engine with tags= refuses it (TlbpolError EINVAL): switch_tag()."""
        need = c_int(0)
        handle = None if space is None else _space_handle(space)
        self._call("tlbpol_switch", self._h(), cpu=cpu, next=handle, need_flush=byref(need))
        return bool(need.value)

    def switch_tag(self, cpu: int, space: Optional[AddressSpace]) -> TagUse:
        """tlbpol_switch_tag() (release 0.3): switch() for an engine with
        tags=: @cpu now runs @space (None: lazily, the previous address
        space stays loaded) under TagUse.tag, after the flush TagUse.flush
        says, as part of the switch, before any access under the tag and
        before any other call for @cpu.

        One answer folds the allocator's decision (a slot taken from
        another address space, a rollover) and the engine's (flushes @cpu
        skipped while away from @space, which switch() reports as its
        bool): TagFlush.TAG flushes every entry of the tag (x86: CR3
        without bit 63; arm64: TLBI ASIDE1), TagFlush.ALL every non-global
        entry.  For None the tag is the one still loaded (0 if none) and
        the flush TagFlush.NONE.  A flush code of a later library that
        TagFlush lacks is kept as the int.

        TlbpolError EINVAL for an engine without tags or a closed
        address space, ERANGE for @cpu, EBUSY as for switch()."""
        u = _ffi.TagUseS()
        handle = None if space is None else _space_handle(space)
        self._call("tlbpol_switch_tag", self._h(), cpu=cpu, next=handle, out=byref(u))
        return TagUse(u.tag, member_or_int(TagFlush, u.flush))

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
        key = self._callbacks.free_key()
        args = _ffi.c_args("tlbpol_defer_free", (self._h(),),
                           dict(cpu=cpu, fn=self._callbacks.free_tramp, arg=c_void_p(key)))
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

