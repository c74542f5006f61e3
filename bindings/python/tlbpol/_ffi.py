# SPDX-License-Identifier: MIT
"""ctypes mirrors of the public structures, and the shared library.

The structures follow <tlbpol/tlbpol.h> field by field (fixed-width types
only, LP64).  ``tests/python/test_layout.py`` checks the size of each and
the offset and size of every field against the C compiler's view of the
header (see :data:`STRUCTS`).

The library is loaded on first use (:func:`lib`), looked for in this order:

1. ``$TLBPOL_LIBRARY``: a path to ``libtlbpol.so.0`` (or a directory holding it);
2. an in-tree build: this package at ``<src>/bindings/python/tlbpol``, and
   ``<src>/build/libtlbpol.so.0``;
3. the libdir the library was installed into with this package (written by
   meson into ``_paths.py`` at install time; a pip-installed or wheel-built
   copy has none recorded and goes on to the next);
4. ``pkg-config --variable=libdir tlbpol``, then ``ctypes.util.find_library``;
5. the plain soname ``libtlbpol.so.0`` (the dynamic loader's own search).

Each function is bound at the symbol version this package was written for
(``_symvers.py``, generated from lib/libtlbpol.map by ``gen_symvers.py``),
with dlvsym(), not at the newest one ctypes' dlsym() would give: see
:func:`_bind`.

Integers are checked before they reach C.  ctypes keeps the low bits of an
int that does not fit a field or an argument (``va=2**64 + 0x5000`` would
become 0x5000), so every mirror is a :class:`CheckedStructure`, whose integer
fields go through :func:`check_int` when they are assigned, and every call
the package makes goes through :func:`call` (or :func:`c_args`), which
passes each integer argument through it against the prototype's argtype.
The width and signedness come from the ctypes type of the field or the
argument, never from a number written here.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import shutil
import subprocess
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_int, c_size_t,
                    c_uint16, c_uint32, c_uint64, c_void_p)
from typing import (Any, Dict, Iterator, List, Mapping, Optional, Sequence,
                    Tuple, Type)

from . import _symvers
from ._constants import MAX_CPUS, WHY_MAX
# The integer and string checks, named here as they always were.
from ._ints import check_int as check_int, check_str as check_str
from ._ints import field_types as field_types, int_range as int_range
from ._ints import is_int_type as is_int_type

SONAME = "libtlbpol.so.0"
ENV_LIBRARY = "TLBPOL_LIBRARY"

def c_name(struct: Any) -> str:
    """The C name of a mirror ("tlbpol_event"), or its Python name."""
    for name, cls in STRUCTS.items():
        if cls is struct:
            return name
    return str(struct.__name__)


@functools.lru_cache(maxsize=None)
def int_fields(struct: Any) -> Dict[str, Tuple[str, Any]]:
    """Integer field -> (its name for errors, "tlbpol_event.va"; its ctypes
    type) of the Structure class @struct."""
    return {name: ("%s.%s" % (c_name(struct), name), ctype)
            for name, ctype in field_types(struct).items() if is_int_type(ctype)}


class CheckedStructure(Structure):
    """A Structure whose integer fields refuse what they cannot hold:
    every assignment (keyword arguments of the constructor included) goes
    through :func:`check_int`, named "tlbpol_event.va" and so on."""

    def __setattr__(self, name: str, value: Any) -> None:
        spec = int_fields(type(self)).get(name)
        if spec is not None:
            value = check_int(spec[0], value, spec[1])
        Structure.__setattr__(self, name, value)


class Range(CheckedStructure):
    """struct tlbpol_range."""
    _fields_ = [("va", c_uint64), ("nr_pages", c_uint64),
                ("page_shift", c_uint32), ("pad", c_uint32)]


class Flush(CheckedStructure):
    """struct tlbpol_flush."""
    _fields_ = [("as_tag", c_uint64), ("kind", c_uint32), ("flags", c_uint32),
                ("nr_ranges", c_uint32), ("pad", c_uint32),
                ("ranges", POINTER(Range))]


class TlbiOpS(CheckedStructure):
    """struct tlbpol_tlbi_op (release 0.3): one arm64 TLBI operation of
    tlbpol_tlbi_range_ops()."""
    _fields_ = [("va", c_uint64), ("pages", c_uint64), ("range", c_uint32),
                ("scale", c_uint32), ("num", c_uint32), ("pad", c_uint32)]


class CpuSet(CheckedStructure):
    """struct tlbpol_cpuset: bit c of bits[c / 64]."""
    _fields_ = [("bits", c_uint64 * (MAX_CPUS // 64))]


FLUSH_LOCAL_FN = CFUNCTYPE(None, c_void_p, c_uint32, POINTER(Flush))
SEND_IPI_FN = CFUNCTYPE(None, c_void_p, c_uint32, POINTER(CpuSet))
BROADCAST_FN = CFUNCTYPE(None, c_void_p, c_uint32, POINTER(Flush))
RELAX_FN = CFUNCTYPE(None, c_void_p, c_uint32)
VCPU_DEFER_FN = CFUNCTYPE(c_int, c_void_p, c_uint32)
STUCK_FN = CFUNCTYPE(None, c_void_p, c_uint32, POINTER(CpuSet), c_uint64)
BCAST_ISSUE_FN = CFUNCTYPE(None, c_void_p, c_uint32, POINTER(Flush))
BCAST_SYNC_FN = CFUNCTYPE(None, c_void_p, c_uint32)
WALKER_SYNC_FN = CFUNCTYPE(None, c_void_p, c_uint32, POINTER(CpuSet))
REMOTE_ACTION_FN = CFUNCTYPE(None, c_void_p, c_uint32, POINTER(CpuSet), POINTER(Flush))
LOAD_TAG_FN = CFUNCTYPE(None, c_void_p, c_uint32, c_uint32, c_uint32)
DEFER_FREE_FN = CFUNCTYPE(None, c_void_p)


class Ops(CheckedStructure):
    """struct tlbpol_ops."""
    _fields_ = [("size", c_uint32), ("pad", c_uint32),
                ("flush_local", FLUSH_LOCAL_FN), ("send_ipi", SEND_IPI_FN),
                ("broadcast", BROADCAST_FN), ("relax", RELAX_FN),
                ("vcpu_defer", VCPU_DEFER_FN), ("stuck", STUCK_FN),
                ("bcast_issue", BCAST_ISSUE_FN), ("bcast_sync", BCAST_SYNC_FN),
                ("walker_sync", WALKER_SYNC_FN), ("remote_action", REMOTE_ACTION_FN),
                ("load_tag", LOAD_TAG_FN)]


class BackendS(CheckedStructure):
    """struct tlbpol_backend (release 0.3)."""
    _fields_ = [("size", c_uint32), ("mech", c_uint32), ("flags", c_uint32),
                ("max_pages", c_uint32), ("cost_ns", c_uint32),
                ("cost_target_ns", c_uint32), ("cost_remote_ns", c_uint32),
                ("cost_page_ns", c_uint32)]


class Config(CheckedStructure):
    """struct tlbpol_config."""
    _fields_ = [("size", c_uint32), ("nr_cpus", c_uint32), ("arch", c_uint32),
                ("max_as", c_uint32), ("rules", c_uint64),
                ("flush_ceiling", c_uint32), ("batch_pages", c_uint32),
                ("cpu_node", POINTER(c_uint16)), ("ops", POINTER(Ops)),
                ("ops_ctx", c_void_p), ("flags", c_uint32),
                ("cost_ipi_ns", c_uint32), ("cost_ipi_target_ns", c_uint32),
                ("cost_ipi_remote_ns", c_uint32), ("cost_broadcast_ns", c_uint32),
                ("cost_broadcast_page_ns", c_uint32), ("ipi_delay_spins", c_uint32),
                ("reserved", c_uint32), ("wait_limit", c_uint32),
                ("free_ticks", c_uint32),
                ("backends", POINTER(POINTER(BackendS))), ("nr_backends", c_uint32),
                ("reserved2", c_uint32), ("tags", c_void_p)]


class CalibrationS(CheckedStructure):
    """struct tlbpol_calibration (release 0.3)."""
    _fields_ = [("size", c_uint32), ("refill_entries", c_uint32),
                ("ipi_round_trip", c_uint64), ("ipi_send", c_uint64),
                ("irq_entry_exit", c_uint64), ("inval_page", c_uint64),
                ("full_flush", c_uint64), ("refill", c_uint64),
                ("bcast_issue", c_uint64), ("bcast_sync", c_uint64),
                ("bcast_max_pages", c_uint32), ("pad", c_uint32)]


class EventS(CheckedStructure):
    """struct tlbpol_event."""
    _fields_ = [("size", c_uint32), ("kind", c_uint32), ("flags", c_uint32),
                ("page_shift", c_uint32), ("va", c_uint64), ("nr_pages", c_uint64),
                ("old_pte", c_uint32), ("new_pte", c_uint32)]


class DecisionS(CheckedStructure):
    """struct tlbpol_decision."""
    _fields_ = [("action", c_uint32), ("deadline", c_uint32),
                ("reason", c_uint32), ("pad", c_uint32)]


STATS_COUNTERS: Tuple[str, ...] = (
    "events", "flushes_avoided", "local_flushes", "remote_flushes", "ipis_sent",
    "broadcasts", "pages_flushed", "full_flushes", "coalesced", "gen_skipped",
    "lazy_skipped", "deferred_frees")
STATS_COUNTERS_0_2: Tuple[str, ...] = ("aged_flushes", "ipis_resent", "stuck_calls")
STATS_COUNTERS_0_3: Tuple[str, ...] = (
    "shoot_ipi", "shoot_broadcast", "shoot_remote", "bcast_syncs", "remote_actions",
    "remote_targets", "walker_syncs")


class StatsS(CheckedStructure):
    """struct tlbpol_stats."""
    _fields_ = ([(n, c_uint64) for n in STATS_COUNTERS]
                + [("by_reason", c_uint64 * WHY_MAX)]
                + [(n, c_uint64) for n in STATS_COUNTERS_0_2 + STATS_COUNTERS_0_3])


class TagsConfigS(CheckedStructure):
    """struct tlbpol_tags_config (release 0.3)."""
    _fields_ = [("size", c_uint32), ("kind", c_uint32), ("nr_cpus", c_uint32),
                ("tag_bits", c_uint32), ("first_tag", c_uint32), ("nr_slots", c_uint32),
                ("nr_global", c_uint32), ("global_min_cpus", c_uint32)]


class TagIdS(CheckedStructure):
    """struct tlbpol_tag_id (release 0.3): the allocator's word."""
    _fields_ = [("word", c_uint64)]


class TagUseS(CheckedStructure):
    """struct tlbpol_tag_use (release 0.3)."""
    _fields_ = [("tag", c_uint32), ("flush", c_uint32)]


TAGS_STATS_COUNTERS: Tuple[str, ...] = ("loads", "tag_flushes", "all_flushes", "rollovers")


class TagsStatsS(CheckedStructure):
    """struct tlbpol_tags_stats (release 0.3)."""
    _fields_ = ([("size", c_uint32), ("pad", c_uint32)]
                + [(n, c_uint64) for n in TAGS_STATS_COUNTERS])


#: C struct name -> mirror, for the layout test.
STRUCTS: Dict[str, Type[Structure]] = {
    "tlbpol_range": Range, "tlbpol_flush": Flush, "tlbpol_tlbi_op": TlbiOpS,
    "tlbpol_cpuset": CpuSet,
    "tlbpol_ops": Ops, "tlbpol_backend": BackendS, "tlbpol_config": Config,
    "tlbpol_calibration": CalibrationS, "tlbpol_event": EventS,
    "tlbpol_decision": DecisionS, "tlbpol_stats": StatsS,
    "tlbpol_tags_config": TagsConfigS, "tlbpol_tag_id": TagIdS, "tlbpol_tag_use": TagUseS,
    "tlbpol_tags_stats": TagsStatsS,
}

_eng_p = c_void_p
_as_p = c_void_p
_tags_p = c_void_p

#: name -> (restype, argtypes) of every function the header declares
#: (tests/python/test_layout.py checks that none is missing).  Those in
#: OPTIONAL may be missing from an older library; the others are required.
PROTOTYPES: Dict[str, Tuple[Any, List[Any]]] = {
    "tlbpol_version": (c_char_p, []),
    "tlbpol_rule_str": (c_char_p, [c_uint64]),
    "tlbpol_rules_parse": (c_int, [c_char_p, POINTER(c_uint64)]),
    "tlbpol_reason_str": (c_char_p, [c_uint32]),
    "tlbpol_action_str": (c_char_p, [c_uint32]),
    "tlbpol_deadline_str": (c_char_p, [c_uint32]),
    "tlbpol_reason_cite": (c_char_p, [c_uint32, c_uint32]),
    "tlbpol_cpuset_test": (c_int, [POINTER(CpuSet), c_uint32]),
    "tlbpol_cpuset_count": (c_int, [POINTER(CpuSet)]),
    "tlbpol_cpuset_next": (c_int, [POINTER(CpuSet), c_int]),
    "tlbpol_cpuset_zero": (None, [POINTER(CpuSet)]),
    "tlbpol_cpuset_set": (None, [POINTER(CpuSet), c_uint32]),
    "tlbpol_cpuset_clear": (None, [POINTER(CpuSet), c_uint32]),
    "tlbpol_tlbi_range_ops": (c_int, [POINTER(Range), POINTER(TlbiOpS), c_uint32]),
    "tlbpol_config_init": (None, [POINTER(Config), c_uint32, c_uint32]),
    "tlbpol_cost_calibrate": (c_int, [POINTER(CalibrationS), POINTER(Config),
                                      POINTER(BackendS), POINTER(BackendS)]),
    "tlbpol_engine_size": (c_size_t, [POINTER(Config)]),
    "tlbpol_engine_init": (c_int, [POINTER(_eng_p), c_void_p, c_size_t, POINTER(Config)]),
    "tlbpol_engine_new": (c_int, [POINTER(Config), POINTER(_eng_p)]),
    "tlbpol_engine_free": (None, [_eng_p]),
    "tlbpol_engine_rules": (c_uint64, [_eng_p]),
    "tlbpol_engine_topology": (c_int, [_eng_p, POINTER(c_uint16), c_uint32]),
    "tlbpol_engine_set_rules": (c_int, [_eng_p, c_uint64]),
    "tlbpol_engine_set_flush_ceiling": (c_int, [_eng_p, c_uint32]),
    "tlbpol_engine_set_batch_pages": (c_int, [_eng_p, c_uint32]),
    "tlbpol_engine_set_ipi_delay": (c_int, [_eng_p, c_uint32]),
    "tlbpol_engine_set_cost_model": (c_int, [_eng_p, POINTER(Config)]),
    "tlbpol_thread_register": (None, []),
    "tlbpol_thread_unregister": (None, []),
    "tlbpol_quiescent": (None, []),
    "tlbpol_thread_offline": (None, []),
    "tlbpol_thread_online": (None, []),
    "tlbpol_as_open": (c_int, [_eng_p, c_uint64, POINTER(_as_p)]),
    "tlbpol_as_close": (c_int, [_eng_p, _as_p]),
    "tlbpol_as_lookup": (_as_p, [_eng_p, c_uint64]),
    "tlbpol_as_tag": (c_uint64, [_as_p]),
    "tlbpol_switch": (c_int, [_eng_p, c_uint32, _as_p, POINTER(c_int)]),
    "tlbpol_switch_tag": (c_int, [_eng_p, c_uint32, _as_p, POINTER(TagUseS)]),
    "tlbpol_unload": (c_int, [_eng_p, c_uint32]),
    "tlbpol_cpu_state": (c_int, [_eng_p, c_uint32, c_uint32]),
    "tlbpol_tick": (c_int, [_eng_p, c_uint32]),
    "tlbpol_decide": (c_int, [_eng_p, _as_p, c_uint32, POINTER(EventS), POINTER(DecisionS)]),
    "tlbpol_submit": (c_int, [_eng_p, _as_p, c_uint32, POINTER(EventS), POINTER(DecisionS)]),
    "tlbpol_flush": (c_int, [_eng_p, c_uint32, c_uint32]),
    "tlbpol_defer_free": (c_int, [_eng_p, c_uint32, DEFER_FREE_FN, c_void_p]),
    "tlbpol_frees_pending": (c_int, [_eng_p, c_uint32]),
    "tlbpol_stamp": (c_int, [_eng_p, c_uint32, POINTER(c_uint64)]),
    "tlbpol_stamp_settle": (c_int, [_eng_p, c_uint32, c_uint64]),
    "tlbpol_stamp_pending": (c_int, [_eng_p, c_uint64]),
    "tlbpol_handle_ipi": (c_int, [_eng_p, c_uint32]),
    "tlbpol_stats_read": (c_int, [_eng_p, c_int, POINTER(StatsS)]),
    "tlbpol_tags_size": (c_size_t, [POINTER(TagsConfigS)]),
    "tlbpol_tags_init": (c_int, [POINTER(_tags_p), c_void_p, c_size_t, POINTER(TagsConfigS)]),
    "tlbpol_tag_id_init": (c_int, [_tags_p, POINTER(TagIdS)]),
    "tlbpol_tag_load": (c_int, [_tags_p, c_uint32, POINTER(TagIdS), POINTER(TagUseS)]),
    "tlbpol_tag_make_global": (c_int, [_tags_p, POINTER(TagIdS)]),
    "tlbpol_tag_global_of": (c_int, [_tags_p, POINTER(TagIdS)]),
    "tlbpol_tag_release": (c_int, [_tags_p, POINTER(TagIdS)]),
    "tlbpol_tag_of": (c_int, [_tags_p, c_uint32, POINTER(TagIdS)]),
    "tlbpol_tags_stats_read": (c_int, [_tags_p, c_int, POINTER(TagsStatsS)]),
}
#: Newer than the oldest library this package accepts (0.2): looked up but
#: allowed to be missing.
OPTIONAL = frozenset({"tlbpol_reason_cite"})

_lock = threading.Lock()
_lib: Optional[Library] = None
_lib_path: Optional[str] = None


def _candidates() -> Iterator[Tuple[str, str]]:
    """(where, path-or-soname) in search order, each computed only when the
    ones before it failed (pkg-config and find_library run programs)."""
    env = os.environ.get(ENV_LIBRARY)
    if env:
        yield ("$" + ENV_LIBRARY, os.path.join(env, SONAME) if os.path.isdir(env) else env)
        return  # an explicit choice is never second-guessed
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    if os.path.basename(os.path.dirname(here)) == "python" and \
            os.path.isfile(os.path.join(src, "include", "tlbpol", "tlbpol.h")):
        yield ("in-tree build", os.path.join(src, "build", SONAME))
    from . import _paths  # meson installs one that records its libdir
    if _paths.LIBDIR:
        yield ("install libdir", os.path.join(_paths.LIBDIR, SONAME))
    if shutil.which("pkg-config"):
        try:
            libdir = subprocess.run(["pkg-config", "--variable=libdir", "tlbpol"],
                                    capture_output=True, text=True, timeout=10,
                                    check=False).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            libdir = ""
        if libdir:
            yield ("pkg-config", os.path.join(libdir, SONAME))
    found = ctypes.util.find_library("tlbpol")
    if found:
        yield ("ctypes.util.find_library", found)
    yield ("soname", SONAME)


class Library:
    """The loaded libtlbpol.so.0: one attribute per function of PROTOTYPES it
    exports at the version this package binds (see :func:`_bind`), a ctypes
    function with the prototype's restype and argtypes.  ``cdll`` keeps the
    library loaded; ``functions`` maps each bound name to its function."""

    def __init__(self, cdll: ctypes.CDLL, functions: Dict[str, Any]) -> None:
        self.cdll = cdll
        self.functions = functions
        self.__dict__.update(functions)

    def __getattr__(self, name: str) -> Any:
        # Only reached for a name that is not bound: never fall back to the
        # CDLL's own lookup, which is dlsym() (the newest version).
        raise AttributeError("libtlbpol (%s) has no %s%s bound" % (
            self.cdll._name, name, "@" + _symvers.SYMBOL_VERSIONS[name]
            if name in _symvers.SYMBOL_VERSIONS else ""))


_DLVSYM_FN = CFUNCTYPE(c_void_p, c_void_p, c_char_p, c_char_p)


def _find_dlvsym() -> Optional[Any]:
    """glibc's dlvsym(handle, name, version) (dlvsym(3)): in libc.so.6
    since glibc 2.34, in libdl.so.2 before; None where the C library has
    none (musl has no dlvsym())."""
    for where in (None, "libdl.so.2"):
        try:
            return _DLVSYM_FN(("dlvsym", ctypes.CDLL(where)))
        except (OSError, AttributeError):
            continue
    return None


def _release(version: str) -> str:
    """The MAJOR.MINOR of a version string ("0.2.1" -> "0.2")."""
    return ".".join(version.split(".")[:2])


def package_release() -> str:
    """This package's MAJOR.MINOR (tlbpol.__version__, released with the
    library): the release whose ABI PROTOTYPES and the structures describe."""
    from . import __version__  # at call time: the package is imported by then
    return _release(__version__)


def _bind(cdll: ctypes.CDLL) -> Library:
    """The functions of @cdll at the symbol version this package was written
    for (_symvers.SYMBOL_VERSIONS, generated from lib/libtlbpol.map).

    ctypes' own lookup is dlsym(), which returns a versioned symbol's
    newest (default) version: against a later libtlbpol.so.0 whose
    tlbpol_config_init@@TLBPOL_0.3 fills a larger struct tlbpol_config, C
    would write past this package's Config.  A C or Rust program is bound
    to its version by the linker; dlvsym() does the same here.  A function
    the library lacks at that version (a library older than the function's
    node) is missing, as when the name is absent: AttributeError for a
    required one, unbound (has() is False) for one in OPTIONAL.
    """
    dlvsym = _find_dlvsym()
    if dlvsym is not None and not _versioned(dlvsym, cdll):
        dlvsym = None
    if dlvsym is None:
        _check_release(cdll)
    functions: Dict[str, Any] = {}
    for name, (restype, argtypes) in PROTOTYPES.items():
        version = _symvers.SYMBOL_VERSIONS[name]
        if dlvsym is not None:
            addr = dlvsym(cdll._handle, name.encode(), version.encode())
        else:
            addr = _dlsym(cdll, name)
        if not addr:
            if name in OPTIONAL:
                continue
            raise AttributeError("%s: no %s@%s (libtlbpol %s or later)"
                                 % (cdll._name, name, version, version.split("_", 1)[1]))
        functions[name] = CFUNCTYPE(restype, *argtypes)(addr)
    return Library(cdll, functions)


def _versioned(dlvsym: Any, cdll: ctypes.CDLL) -> bool:
    """Does @cdll version its symbols (was it linked with the map)?

    tlbpol_version() has been in TLBPOL_0.1 since 0.1 and never changes.
    A library without symbol versions either has no version table at all,
    and glibc's dlvsym() then accepts any version, a made-up one too; or it
    has one only for what it needs from libc, and dlvsym() then finds
    nothing at a real version that dlsym() finds.  Either way dlvsym()
    cannot tell versions apart there, and the library is checked as
    without it (_check_release)."""
    name = b"tlbpol_version"
    if dlvsym(cdll._handle, name, b"TLBPOL_NO_SUCH_VERSION"):
        return False
    want = _symvers.SYMBOL_VERSIONS["tlbpol_version"].encode()
    return bool(dlvsym(cdll._handle, name, want)) or not _dlsym(cdll, "tlbpol_version")


def _dlsym(cdll: ctypes.CDLL, name: str) -> Optional[int]:
    """The address dlsym() gives for @name (its default version), or None."""
    try:
        addr: Optional[int] = ctypes.cast(getattr(cdll, name), c_void_p).value
    except AttributeError:
        return None
    return addr


def _check_release(cdll: ctypes.CDLL) -> None:
    """Without dlvsym() (or a library without symbol versions), refuse a
    library of another release.

    dlsym() is all there is, and it gives each function's default version:
    the ABI of the library's own release.  That is the ABI this package
    describes only when the library is of the same MAJOR.MINOR (a patch
    release changes no ABI and adds no node: docs/versioning.md).  A later release's default
    tlbpol_config_init() or tlbpol_stats_read() may write past this
    package's structures, an earlier one's may read fields it lacks: both
    are refused, with OSError, rather than bound.  tlbpol_version() itself
    has had one ABI since 0.1.
    """
    addr = _dlsym(cdll, "tlbpol_version")
    if not addr:
        raise AttributeError("%s: no tlbpol_version" % cdll._name)
    got = (CFUNCTYPE(c_char_p)(addr)() or b"?").decode("ascii", "replace")
    want = package_release()
    if _release(got) != want:
        raise OSError("%s is libtlbpol %s, and without dlvsym() (or without symbol "
                      "versions in the library) nothing binds the functions of release "
                      "%s that this package (tlbpol %s.x) was written for: use a "
                      "libtlbpol %s.x" % (cdll._name, got, want, want, want))


def lib() -> Library:
    """The loaded libtlbpol, with every function bound; loads it on first use.

    Raises OSError naming every place tried when none has the library (or
    none has every required function at this package's version).
    """
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for where, path in _candidates():
            if os.sep in path and not os.path.exists(path):
                tried.append("%s: %s (not found)" % (where, path))
                continue
            try:
                loaded = _bind(ctypes.CDLL(path))
            except (OSError, AttributeError) as exc:
                tried.append("%s: %s (%s)" % (where, path, exc))
                continue
            _lib, _lib_path = loaded, path
            return loaded
        raise OSError(_not_found(tried))


def _not_found(tried: List[str]) -> str:
    """The error when no candidate loads: what was tried, and what to do."""
    from . import _paths
    return ("libtlbpol: cannot load %s; tried:\n  %s\n"
            "The install libdir is %s.  Install libtlbpol (e.g. meson install; "
            "ldconfig after an install to /usr/local), or put the directory of %s "
            "in LD_LIBRARY_PATH, or set %s=/path/to/%s (or its directory)."
            % (SONAME, "\n  ".join(tried),
               "recorded as %s" % _paths.LIBDIR if _paths.LIBDIR else
               "not recorded (this copy was not installed by meson)",
               SONAME, ENV_LIBRARY, SONAME))


@functools.lru_cache(maxsize=None)
def _arg_checks(function: str) -> Tuple[Tuple[int, Any], ...]:
    """(position, ctypes type) of each argument of @function that is checked:
    the integers and the C strings."""
    return tuple((i, ctype) for i, ctype in enumerate(PROTOTYPES[function][1])
                 if is_int_type(ctype) or ctype is c_char_p)


def c_args(function: str, args: Sequence[Any], named: Mapping[str, Any]) -> List[Any]:
    """The arguments of C @function, @args then the values of @named in
    order, each checked against its argtype in PROTOTYPES: an integer by
    :func:`check_int`, a C string by :func:`check_str`, named
    "tlbpol_tick(cpu)" after its keyword (or its position)."""
    values = list(args) + list(named.values())
    if len(values) != len(PROTOTYPES[function][1]):
        raise TypeError("%s takes %d arguments, not %d"
                        % (function, len(PROTOTYPES[function][1]), len(values)))
    names = list(named)
    for i, ctype in _arg_checks(function):
        j = i - len(args)
        label = "%s(%s)" % (function, names[j] if j >= 0 else "argument %d" % (i + 1))
        if ctype is c_char_p:
            values[i] = check_str(label, values[i])
        else:
            values[i] = check_int(label, values[i], ctype)
    return values


def call(function: str, *args: Any, **named: Any) -> Any:
    """C @function on :func:`c_args`: nothing reaches it unchecked."""
    return getattr(lib(), function)(*c_args(function, args, named))


def lib_path() -> str:
    """Where the library was loaded from (loading it if needed)."""
    lib()
    assert _lib_path is not None
    return _lib_path


def has(name: str) -> bool:
    """Does the loaded library export @name (e.g. tlbpol_reason_cite) at the
    version this package binds (_symvers.SYMBOL_VERSIONS)?"""
    return name in lib().functions
