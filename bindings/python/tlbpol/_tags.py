# SPDX-License-Identifier: MIT
"""Tag allocators (release 0.3): which hardware tag (PCID, ASID, VMID) a
CPU loads to run an address space, and what it must flush first
(tlbpol_tags_init(), tlbpol_tag_load() and the rest of the header's
"Tags" section)."""

from __future__ import annotations

import ctypes
import enum
import errno
import threading
from ctypes import byref, c_uint32, c_void_p
from typing import Any, Dict, Iterator, List, Mapping, NamedTuple, Optional, Tuple, Union

from . import _ffi
from ._constants import (TAG_FLUSH_ALL, TAG_FLUSH_NONE, TAG_FLUSH_TAG, TAGS_GLOBAL,
                         TAGS_PERCPU)
from ._enumstr import member_or_int, print_by_name
from ._errors import TlbpolError, check

__all__ = ["TagFlush", "TagId", "TagKind", "TagKindLike", "TagUse", "Tags", "TagsStats"]


class TagKind(enum.IntEnum):
    """TLBPOL_TAGS_*: how a :class:`Tags` allocator hands out tags.

    PERCPU: each CPU has ``slots`` tags of its own (first_tag ..
    first_tag + slots - 1), each remembering the address space it last
    served, reused round-robin (Linux x86's six PCIDs per CPU); a slot taken
    from another address space is flushed (TagFlush.TAG); optionally with
    global tags beside the slots (Tags(nr_global=), Tags.make_global()),
    each one address space's on every CPU, so that a broadcast by tag
    reaches them all (Linux 6.15's global ASIDs for INVLPGB).  GLOBAL: one tag
    per address space on every CPU, from a pool first_tag .. 2**tag_bits -
    1; when it runs out a rollover starts a new generation, every CPU
    flushes everything (TagFlush.ALL) before it loads a tag of the new
    one, and the tags CPUs run at that moment stay theirs (arm64 ASIDs, KVM
    VMIDs)."""
    PERCPU = TAGS_PERCPU
    GLOBAL = TAGS_GLOBAL


class TagFlush(enum.IntEnum):
    """TLBPOL_TAG_FLUSH_*: what a CPU flushes before it uses the tag a load
    gave, as part of the same switch.  NONE: nothing for the tag's sake.
    TAG: every entry of the tag (x86 CR3 without bit 63 or INVPCID type 1,
    arm64 TLBI ASIDE1, RISC-V sfence.vma with the ASID).  ALL: every
    non-global entry of every tag, after a rollover (arm64 TLBI VMALLE1,
    x86 INVPCID type 3, RISC-V sfence.vma x0, x0)."""
    NONE = TAG_FLUSH_NONE
    TAG = TAG_FLUSH_TAG
    ALL = TAG_FLUSH_ALL


print_by_name(TagKind)
print_by_name(TagFlush)

TagKindLike = Union[TagKind, int, str]

_KIND_NAMES = {"percpu": TagKind.PERCPU, "per-cpu": TagKind.PERCPU, "per_cpu": TagKind.PERCPU,
               "global": TagKind.GLOBAL}

#: The alignment tlbpol_tags_init() wants of its memory.
ALIGN = 64


def _kind(kind: Any) -> Any:
    """cfg->kind of @kind: a TagKind, an int (checked when stored, and
    handed to the library as it is: it refuses one it does not know), or a
    name ("percpu", "global"; ValueError for another)."""
    if isinstance(kind, str):
        try:
            return _KIND_NAMES[kind.strip().lower()]
        except KeyError:
            raise ValueError("unknown tag allocator kind %r (percpu, global)" % kind) from None
    return kind


def _aligned(size: int) -> Tuple[Any, int]:
    """A zeroed buffer holding @size bytes at a 64-byte boundary, and that
    address (the buffer must be kept: ctypes frees it with the object)."""
    buf = (ctypes.c_char * (size + ALIGN - 1))()
    addr = ctypes.addressof(buf)
    return buf, addr + (-addr) % ALIGN


class TagUse(NamedTuple):
    """What tlbpol_tag_load() tells a switching CPU (struct tlbpol_tag_use):
    the tag to load (CR3 PCID bits, TTBR ASID, satp ASID, VTTBR VMID) and
    what to flush before the first access under it.  A flush code of a
    later library that TagFlush lacks is kept as the int (see Decision)."""
    tag: int
    flush: Union[TagFlush, int]


class TagsStats(Mapping[str, int]):
    """Counters of struct tlbpol_tags_stats, as a read-only mapping of name
    -> value ("loads", "tag_flushes", "all_flushes", "rollovers"; also
    readable as attributes)."""

    def __init__(self, s: _ffi.TagsStatsS) -> None:
        self._d: Dict[str, int] = {n: getattr(s, n) for n in _ffi.TAGS_STATS_COUNTERS}

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
        return "TagsStats(%r)" % (self._d,)


class TagId:
    """An address space's identity to one tag allocator (struct
    tlbpol_tag_id), from :meth:`Tags.new_id`: keep it with the address
    space.  The library writes it during loads; it belongs to the
    allocator that made it (another one refuses it: ValueError).  Once
    given to :meth:`Tags.release` it is gone: loads and make_global()
    refuse it (ValueError); ``released`` says so."""

    __slots__ = ("_tags", "_c", "_released")

    def __init__(self, tags: "Tags", c: _ffi.TagIdS) -> None:
        self._tags = tags
        self._c = c
        self._released = False

    @property
    def released(self) -> bool:
        """True once :meth:`Tags.release` gave it back."""
        return self._released

    def __repr__(self) -> str:
        return "TagId(of %r%s)" % (self._tags, ", released" if self._released else "")


class Tags:
    """A tag allocator (tlbpol_tags_init(), release 0.3), in memory of its
    own (64-byte aligned, freed with the object; the library needs no call
    to release it).

    kind: "percpu", "global" or a TagKind (an int is handed to C as it
    is).  cpus: CPUs that load tags, 1 .. MAX_CPUS.  tag_bits: the hardware
    tag's width, 1 .. TAG_BITS_MAX.  first_tag: the first tag handed out
    (those below are the host's: x86 PCID 0, arm64 ASID 0).  slots: PERCPU,
    tags per CPU, 1 .. TAG_SLOTS_MAX, with first_tag + slots <= 2**tag_bits;
    GLOBAL, 0 (the pool first_tag .. 2**tag_bits - 1 must hold more tags
    than cpus).  nr_global (release 0.3): PERCPU, the last nr_global tags
    of the width are global tags beside the slots (make_global()), with
    first_tag + slots + nr_global <= 2**tag_bits; 0, none.  global_min_cpus:
    an Engine with this allocator gives an address space a global tag once
    it is loaded on this many CPUs (0 means 4), twice as many once half the
    global tags are taken, four times once three quarters are.  Both 0 for
    GLOBAL.

    Each number is checked against its uint32_t field (TypeError or
    OverflowError naming it, "tlbpol_tags_config.tag_bits") and reaches C
    as given; the library refuses a bad configuration (TlbpolError: EINVAL
    for an unknown kind, no CPU, no tag bit, or slots, nr_global or
    global_min_cpus given to GLOBAL; ERANGE for too many CPUs, bits or
    slots, no slot for PERCPU, slots and global tags past the width, or a
    GLOBAL pool no larger than cpus).

    Loads for one CPU must not run concurrently (the C rule: a CPU switches
    once at a time); a second load for a CPU while one runs on another
    thread raises TlbpolError EBUSY instead of reaching C.  Loads for
    different CPUs may run from different threads (ctypes drops the GIL
    during each C call); new_id(), tag_of(), stats(), make_global(),
    global_of() and release() may run anywhere.

    An Engine built with ``tags=`` this allocator (cfg->tags) makes the
    loads itself, in Engine.switch_tag(), and the allocator is the
    engine's alone until the engine is closed (the C rule: no other
    tlbpol_tag_load() on it): load() meanwhile, or a second engine, raises
    TlbpolError EBUSY instead of reaching C.  tag_of(), stats() and the
    global tags' calls on identities of the caller's still may run
    anywhere.
    """

    def __init__(self, kind: TagKindLike, *, cpus: int, tag_bits: int, first_tag: int = 0,
                 slots: int = 0, nr_global: int = 0, global_min_cpus: int = 0) -> None:
        cfg = _ffi.TagsConfigS()
        cfg.size = ctypes.sizeof(cfg)
        cfg.kind = _kind(kind)
        cfg.nr_cpus = cpus
        cfg.tag_bits = tag_bits
        cfg.first_tag = first_tag
        cfg.nr_slots = slots
        cfg.nr_global = nr_global
        cfg.global_min_cpus = global_min_cpus
        size = _ffi.call("tlbpol_tags_size", byref(cfg))
        out = c_void_p()
        # A configuration the library refuses has no size: ask it why, with
        # no memory to build in (it checks the configuration first).
        self._mem, addr = _aligned(size)
        check("tlbpol_tags_init",
              _ffi.call("tlbpol_tags_init", byref(out), c_void_p(addr), size, byref(cfg)))
        if not size or not out.value:
            raise TlbpolError(errno.ENOMEM, "tlbpol_tags_init")
        self._handle = out
        self.kind: Union[TagKind, int] = member_or_int(TagKind, cfg.kind)
        self.cpus: int = cfg.nr_cpus
        self.tag_bits: int = cfg.tag_bits
        self.first_tag: int = cfg.first_tag
        self.slots: int = cfg.nr_slots
        self.nr_global: int = cfg.nr_global
        self.global_min_cpus: int = cfg.global_min_cpus
        # One lock per CPU, never waited for: a concurrent load for a CPU
        # is refused (EBUSY), not made.
        self._loading: List[threading.Lock] = [threading.Lock() for _ in range(self.cpus)]
        # Set while an engine uses the allocator (_lend(), _give_back()):
        # loads are then the engine's alone.
        self._lent = False
        self._lending = threading.Lock()

    def _lend(self) -> c_void_p:
        """The allocator for an engine's cfg->tags, the engine's alone from
        now until _give_back(): TlbpolError EBUSY if an engine has it
        already.  Waits for the loads running on other threads to end
        (each is one short C call); those that start later are refused."""
        with self._lending:
            if self._lent:
                raise TlbpolError(errno.EBUSY, "tlbpol_engine_new",
                                  "the tag allocator is another engine's")
            self._lent = True
        for lock in self._loading:
            with lock:
                pass
        return self._handle

    def _give_back(self) -> None:
        """The engine that had the allocator is freed (or was never built)."""
        with self._lending:
            self._lent = False

    @property
    def in_use(self) -> bool:
        """True while an Engine uses this allocator (until it is closed)."""
        return self._lent

    def __repr__(self) -> str:
        kind = self.kind.name.lower() if isinstance(self.kind, TagKind) else str(self.kind)
        extra = ""
        if self.nr_global or self.global_min_cpus:
            extra = ", nr_global=%d, global_min_cpus=%d" % (self.nr_global,
                                                           self.global_min_cpus)
        return "Tags(%s, cpus=%d, tag_bits=%d, first_tag=%d, slots=%d%s)" % (
            kind, self.cpus, self.tag_bits, self.first_tag, self.slots, extra)

    def _id(self, tag_id: Any) -> _ffi.TagIdS:
        """The C identity of @tag_id: TypeError for anything but a TagId,
        ValueError for another allocator's."""
        if not isinstance(tag_id, TagId):
            raise TypeError("tag_id must be a tlbpol.TagId, not %s" % type(tag_id).__name__)
        if tag_id._tags is not self:
            raise ValueError("tag_id belongs to another tag allocator")
        return tag_id._c

    def _live_id(self, tag_id: Any) -> _ffi.TagIdS:
        """_id(), and ValueError for an identity release() gave back: the
        C rule is that it is gone, no CPU may load it any more (C would
        take it for a plain per-CPU identity again)."""
        c = self._id(tag_id)
        if tag_id._released:
            raise ValueError("tag_id was released (tlbpol_tag_release()): it is gone")
        return c

    def new_id(self) -> TagId:
        """tlbpol_tag_id_init(): a new identity of this allocator, for one
        address space.  When the address space goes, give it back with
        release(): a global tag it holds (make_global()) is handed out again
        only then.  Nothing else needs releasing: its slots are reused as
        they come round, a GLOBAL allocator's tag at the next rollover."""
        c = _ffi.TagIdS()
        check("tlbpol_tag_id_init", _ffi.call("tlbpol_tag_id_init", self._handle, byref(c)))
        return TagId(self, c)

    def load(self, cpu: int, tag_id: TagId) -> TagUse:
        """tlbpol_tag_load(): the tag @cpu loads to run @tag_id, and what it
        must flush first.  Call it at every switch to @tag_id on @cpu, and
        flush what TagUse.flush says before the first access under
        TagUse.tag.

        PERCPU: @tag_id's global tag if it has one (make_global(); its slot
        on @cpu given up; TagFlush.ALL if @cpu has not flushed everything
        since global tags were last recycled, its first load of a global
        tag too), else its slot on @cpu if it has one (TagFlush.NONE), else
        the next slot round-robin, flushed (TagFlush.TAG; the address space
        it served loses it).  GLOBAL: @tag_id's tag if it belongs to the
        current generation, else the same number again if no one took it, a
        free one, or a rollover; TagFlush.ALL when @cpu has not flushed
        since the last rollover (its first load too).

        TlbpolError ERANGE for @cpu past the allocator's CPUs, EBUSY while
        another load for @cpu runs or while an engine uses the allocator;
        TypeError or OverflowError for a @cpu that is not a uint32_t,
        TypeError for a @tag_id that is not a TagId, ValueError for another
        allocator's or a released one (nothing reaches C).
        """
        c = self._live_id(tag_id)
        cpu = _ffi.check_int("tlbpol_tag_load(cpu)", cpu, c_uint32)
        lock = self._loading[cpu] if cpu < len(self._loading) else None
        if lock is not None and not lock.acquire(blocking=False):
            raise TlbpolError(errno.EBUSY, "tlbpol_tag_load",
                              "another load for CPU %d is running" % cpu)
        try:
            if self._lent:
                raise TlbpolError(errno.EBUSY, "tlbpol_tag_load",
                                  "the tag allocator is an engine's (Engine(tags=...))")
            u = _ffi.TagUseS()
            check("tlbpol_tag_load",
                  _ffi.call("tlbpol_tag_load", self._handle, cpu=cpu, id=byref(c), out=byref(u)))
        finally:
            if lock is not None:
                lock.release()
        return TagUse(u.tag, member_or_int(TagFlush, u.flush))

    def tag_of(self, cpu: int, tag_id: TagId) -> Optional[int]:
        """tlbpol_tag_of(): the tag under which @cpu holds @tag_id's entries,
        for a flush of them on @cpu; None when it holds none under a tag of
        this allocator (PERCPU: no slot there, evicted or never loaded, and
        no global tag; GLOBAL: never loaded).  GLOBAL: the address space's
        tag on every CPU.  PERCPU: its slot on @cpu, else its global tag if
        it has one; exact on @cpu itself, or while no load for @cpu runs
        (its slots change only in its own loads).

        TlbpolError ERANGE for @cpu; TypeError, OverflowError and
        ValueError as for load().
        """
        c = self._id(tag_id)
        rc: int = _ffi.call("tlbpol_tag_of", self._handle, cpu=cpu, id=byref(c))
        if rc == -errno.ENOENT:
            return None
        return check("tlbpol_tag_of", rc)

    def make_global(self, tag_id: TagId) -> int:
        """tlbpol_tag_make_global() (PERCPU with nr_global): give @tag_id a
        global tag, returned.  From then on every CPU's load of @tag_id
        gives that tag (its slot there given up), so a broadcast naming it
        reaches every CPU that has loaded @tag_id since; a CPU still running
        it under its slot is reached only after its next load (an engine
        interrupts those).  A global tag given back (release()) is handed
        out again only once every CPU has flushed everything since
        (TagFlush.ALL at its next load of a global tag).

        TlbpolError, the library's errno: EEXIST if @tag_id has a global tag
        already (global_of() says which; C returns the errno, not the tag);
        ENOSPC when every global tag is taken; EINVAL for an allocator
        without global tags (every GLOBAL one).  TypeError for a @tag_id
        that is not a TagId, ValueError for another allocator's or a
        released one (nothing reaches C).
        """
        c = self._live_id(tag_id)
        return check("tlbpol_tag_make_global",
                     _ffi.call("tlbpol_tag_make_global", self._handle, id=byref(c)))

    def global_of(self, tag_id: TagId) -> Optional[int]:
        """tlbpol_tag_global_of(): @tag_id's global tag, None if it has none
        (never made global, or released; always None for a GLOBAL
        allocator, whose tags are not global tags in this sense).
        TypeError and ValueError as for tag_of()."""
        c = self._id(tag_id)
        rc: int = _ffi.call("tlbpol_tag_global_of", self._handle, id=byref(c))
        if rc == -errno.ENOENT:
            return None
        return check("tlbpol_tag_global_of", rc)

    def release(self, tag_id: TagId) -> None:
        """tlbpol_tag_release(): @tag_id's address space is gone; its global
        tag, if any, goes back to the pool, handed out again only once
        every CPU has flushed everything since (a CPU may still hold its
        entries under it).  Per-CPU slots need nothing, nor does a GLOBAL
        allocator's tag (free at the next rollover).

        The C rule: no CPU may run @tag_id or keep it loaded any more.
        Switching every CPU away first is the caller's part (the allocator
        cannot tell what a CPU runs); the package refuses later loads and
        make_global() of it (ValueError), and release() of it again does
        nothing, as in C.  An Engine releases its address spaces' itself
        when one is closed (which it refuses while a CPU has it loaded).

        TypeError for a @tag_id that is not a TagId, ValueError for another
        allocator's (nothing reaches C).
        """
        c = self._id(tag_id)
        check("tlbpol_tag_release", _ffi.call("tlbpol_tag_release", self._handle, id=byref(c)))
        tag_id._released = True

    def stats(self, cpu: Optional[int] = None) -> TagsStats:
        """tlbpol_tags_stats_read(): @cpu's counters, or the sum over CPUs
        (None, or -1 as in C: this argument is a C int).  Each counter is
        exact, the set is not a snapshot."""
        s = _ffi.TagsStatsS()
        s.size = ctypes.sizeof(s)
        check("tlbpol_tags_stats_read",
              _ffi.call("tlbpol_tags_stats_read", self._handle, cpu=-1 if cpu is None else cpu,
                        out=byref(s)))
        return TagsStats(s)
