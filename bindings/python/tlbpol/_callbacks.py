# SPDX-License-Identifier: MIT
"""The bridge from the C library's callbacks (struct tlbpol_ops, deferred
frees) to the host's Python callables: no exception may unwind through C
frames, so each is recorded on its thread and raised again once the engine
call that made the callback has returned."""

from __future__ import annotations

import itertools
import threading
from ctypes import sizeof
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple, Union

from . import _ffi
from ._enumstr import member_or_int
from ._tags import TagFlush
from ._values import Flush, cpuset

__all__ = ["FlushLocal", "SendIpi", "Broadcast", "Relax", "VcpuDefer", "Stuck", "BcastIssue",
           "BcastSync", "WalkerSync", "RemoteAction", "LoadTag", "Callbacks"]

FlushLocal = Callable[[int, Flush], Any]
SendIpi = Callable[[int, FrozenSet[int]], Any]
Broadcast = Callable[[int, Flush], Any]
Relax = Callable[[int], Any]
VcpuDefer = Callable[[int], bool]
Stuck = Callable[[int, FrozenSet[int], int], Any]
BcastIssue = Callable[[int, Flush], Any]
BcastSync = Callable[[int], Any]
WalkerSync = Callable[[int, FrozenSet[int]], Any]
RemoteAction = Callable[[int, FrozenSet[int], Flush], Any]
LoadTag = Callable[[int, int, Union[TagFlush, int]], Any]


class Callbacks:
    """The host's callables as struct tlbpol_ops (``ops``) and the deferred
    free trampoline (``free_tramp``), with what they raised, per thread.

    TypeError if a required callable (flush_local, send_ipi) or a given
    optional one is not callable.
    """

    def __init__(self, flush_local: FlushLocal, send_ipi: SendIpi,
                 broadcast: Optional[Broadcast], relax: Optional[Relax],
                 vcpu_defer: Optional[VcpuDefer], stuck: Optional[Stuck],
                 bcast_issue: Optional[BcastIssue] = None,
                 bcast_sync: Optional[BcastSync] = None,
                 walker_sync: Optional[WalkerSync] = None,
                 remote_action: Optional[RemoteAction] = None,
                 load_tag: Optional[LoadTag] = None) -> None:
        self._tls = threading.local()
        self.frees: Dict[int, Callable[[], Any]] = {}
        self._free_ids = itertools.count(1)
        self._flush_local: FlushLocal = flush_local
        self._send_ipi: SendIpi = send_ipi
        self._broadcast: Optional[Broadcast] = broadcast
        self._relax: Optional[Relax] = relax
        self._vcpu_defer: Optional[VcpuDefer] = vcpu_defer
        self._stuck: Optional[Stuck] = stuck
        self._bcast_issue: Optional[BcastIssue] = bcast_issue
        self._bcast_sync: Optional[BcastSync] = bcast_sync
        self._walker_sync: Optional[WalkerSync] = walker_sync
        self._remote_action: Optional[RemoteAction] = remote_action
        self._load_tag: Optional[LoadTag] = load_tag

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
                ("stuck", _ffi.STUCK_FN, self._cb_stuck, stuck),
                ("bcast_issue", _ffi.BCAST_ISSUE_FN, self._cb_bcast_issue, bcast_issue),
                ("bcast_sync", _ffi.BCAST_SYNC_FN, self._cb_bcast_sync, bcast_sync),
                ("walker_sync", _ffi.WALKER_SYNC_FN, self._cb_walker_sync, walker_sync),
                ("remote_action", _ffi.REMOTE_ACTION_FN, self._cb_remote_action, remote_action),
                ("load_tag", _ffi.LOAD_TAG_FN, self._cb_load_tag, load_tag)]
        for field, proto, method, fn in slots:
            if fn is None and field not in ("flush_local", "send_ipi"):
                continue
            if not callable(fn):
                raise TypeError("%s must be callable, not %s" % (field, type(fn).__name__))
            thunk = proto(method)
            setattr(ops, field, thunk)
            self._keep.append(thunk)
        self.free_tramp = _ffi.DEFER_FREE_FN(self._cb_free)
        self._keep.append(self.free_tramp)
        self.ops = ops

    # -- what a callback raised ------------------------------------------------
    def _record(self, exc: BaseException) -> None:
        pending = getattr(self._tls, "exc", None)
        if pending is None:
            self._tls.exc = exc
        elif pending is not exc and hasattr(pending, "add_note"):
            pending.add_note("also raised in a later callback: %r" % (exc,))

    def raise_pending(self) -> None:
        """Raise what a callback raised on this thread since the last call."""
        exc = getattr(self._tls, "exc", None)
        if exc is not None:
            self._tls.exc = None
            raise exc

    # -- deferred frees ----------------------------------------------------------
    def free_key(self) -> int:
        """A new key for frees: the C void *arg with which the library calls
        free_tramp, which then calls (and drops) frees[key]."""
        return next(self._free_ids)

    # -- the thunks: never let an exception into C -------------------------------
    def _cb_flush_local(self, ctx: Any, cpu: int, f: Any) -> None:
        try:
            self._flush_local(cpu, Flush._from_c(f))
        except BaseException as exc:  # noqa: B902 - recorded, re-raised later
            self._record(exc)

    def _cb_send_ipi(self, ctx: Any, cpu: int, targets: Any) -> None:
        try:
            self._send_ipi(cpu, cpuset(targets))
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
            self._stuck(cpu, cpuset(waiting), turns)
        except BaseException as exc:
            self._record(exc)

    def _cb_bcast_issue(self, ctx: Any, cpu: int, f: Any) -> None:
        try:
            assert self._bcast_issue is not None
            self._bcast_issue(cpu, Flush._from_c(f))
        except BaseException as exc:
            self._record(exc)

    def _cb_bcast_sync(self, ctx: Any, cpu: int) -> None:
        try:
            assert self._bcast_sync is not None
            self._bcast_sync(cpu)
        except BaseException as exc:
            self._record(exc)

    def _cb_walker_sync(self, ctx: Any, cpu: int, cpus: Any) -> None:
        try:
            assert self._walker_sync is not None
            self._walker_sync(cpu, cpuset(cpus))
        except BaseException as exc:
            self._record(exc)

    def _cb_remote_action(self, ctx: Any, cpu: int, targets: Any, f: Any) -> None:
        try:
            assert self._remote_action is not None
            self._remote_action(cpu, cpuset(targets), Flush._from_c(f))
        except BaseException as exc:
            self._record(exc)

    def _cb_load_tag(self, ctx: Any, cpu: int, tag: int, flush: int) -> None:
        try:
            assert self._load_tag is not None
            self._load_tag(cpu, tag, member_or_int(TagFlush, flush))
        except BaseException as exc:
            self._record(exc)

    def _cb_free(self, arg: Optional[int]) -> None:
        fn = self.frees.pop(arg or 0, None)
        if fn is None:
            return
        try:
            fn()
        except BaseException as exc:
            self._record(exc)
