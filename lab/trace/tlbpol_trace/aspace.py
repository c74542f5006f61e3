# SPDX-License-Identifier: MIT
"""The address-space model: what the trace has shown to be mapped, and
what each memory call (mmap, munmap, mprotect, madvise, mremap, brk)
records and changes in it.  Addresses are page numbers here."""

import bisect
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple, Union

from .strace import parse_flags, parse_int
from .uapi import MADV, MADV_DONTNEED, MADV_FREE, MAP, MAP_FIXED, \
    MAP_FIXED_NOREPLACE, MREMAP, MREMAP_DONTUNMAP, MREMAP_FIXED, PAGE, \
    PAGE_SHIFT, PROT

# What the converter knows of a page from the faults it saw (FORMAT.md
# "Page faults"): mapped read-only by a read fault (the zero page, or a
# file page), writable (a write fault or a copy made it the process's
# own), or shared by a fork (write-protected): then a list of one
# number, how many address spaces map it, the same list in each of them.
PAGE_RO, PAGE_RW = 1, 2
PageState = Union[int, List[int]]

# What follows a memory record's pages: the protection ('rwx') of an mmap
# or mprotect, the new range (page, pages) of an mremap; else nothing.
Extra = Union[str, Tuple[int, int], None]


class Change(NamedTuple):
    """One memory record: kind, first page, pages, extra fields."""
    kind: str
    start: int
    pages: int
    extra: Extra = None


def rwx(prot: int) -> str:
    return ('r' if prot & 1 else '-') + ('w' if prot & 2 else '-') + \
        ('x' if prot & 4 else '-')


def pages_of(length: int) -> int:
    return (length + PAGE - 1) >> PAGE_SHIFT


class AddressSpace:
    """What the trace has shown to be mapped in one address space, as
    disjoint, non-touching page intervals [start, end); plus the break.
    `seq` and `members` are used only when address spaces are inferred
    (a recording without process events)."""

    __slots__ = ('id', 'starts', 'ends', 'brk', 'seq', 'members', 'pages', 'origin')

    def __init__(self) -> None:
        self.id: Optional[int] = None
        self.starts: List[int] = []
        self.ends: List[int] = []
        self.brk: Optional[int] = None
        self.seq = 0            # union-find element of its first task
        self.members = 0        # live tasks in it
        # page -> PAGE_*: the pages faults showed to be present (only in a
        # conversion with faults)
        self.pages: Dict[int, PageState] = {}
        # page -> the recorded fault (its index) that made it present
        # (converter.py: thinning the faults written)
        self.origin: Dict[int, int] = {}

    def copy(self) -> 'AddressSpace':
        """The child's copy at a fork: both sides' own pages are now
        shared, write-protected (kernel/fork.c dup_mmap(): copy_page_range()
        write-protects private pages in parent and child)."""
        other = AddressSpace()
        other.starts = list(self.starts)
        other.ends = list(self.ends)
        other.brk = self.brk
        for p, st in self.pages.items():
            if st == PAGE_RW:
                self.pages[p] = [2]
            elif isinstance(st, list):
                st[0] += 1
        other.pages = dict(self.pages)
        other.origin = dict(self.origin)
        return other

    def drop_pages(self, s: int, e: int) -> None:
        """[s, e) was unmapped or zapped: no page of it is present."""
        if e - s > len(self.pages):
            gone = [p for p in self.pages if s <= p < e]
        else:
            gone = [p for p in range(s, e) if p in self.pages]
        for p in gone:
            self.origin.pop(p, None)
            st = self.pages.pop(p)
            if isinstance(st, list):
                st[0] -= 1

    def move_pages(self, s: int, e: int, to: int, n: int) -> None:
        """mremap: the PTEs of [s, e) move to [to, to + n) (those
        beyond n pages are unmapped)."""
        moved = {to + p - s: st for p, st in self.pages.items()
                 if s <= p < e and p - s < n}
        came = {p: self.origin[p - to + s] for p in moved
                if p - to + s in self.origin}
        for p in moved:
            self.pages.pop(p - to + s)
        self.drop_pages(s, e)
        self.drop_pages(to, to + n)
        self.pages.update(moved)
        self.origin.update(came)

    def present_origin(self, s: int, e: int) -> Optional[int]:
        """The fault that made some page of [s, e) present (the latest
        such), or None when no page of it is present."""
        if e - s > len(self.origin):
            got = [f for p, f in self.origin.items() if s <= p < e]
        else:
            got = [self.origin[p] for p in range(s, e) if p in self.origin]
        return max(got) if got else None

    def mapped_runs(self, s: int, e: int) -> List[Tuple[int, int]]:
        """Maximal mapped runs inside [s, e), ascending."""
        runs = []
        i = bisect.bisect_right(self.ends, s)
        while i < len(self.starts) and self.starts[i] < e:
            runs.append((max(s, self.starts[i]), min(e, self.ends[i])))
            i += 1
        return runs

    def gaps(self, s: int, e: int) -> List[Tuple[int, int]]:
        """The unmapped runs inside [s, e), ascending."""
        gaps, pos = [], s
        for a, b in self.mapped_runs(s, e):
            if a > pos:
                gaps.append((pos, a))
            pos = b
        if pos < e:
            gaps.append((pos, e))
        return gaps

    def add(self, s: int, e: int) -> None:
        if s >= e:
            return
        i = bisect.bisect_left(self.ends, s)
        j = bisect.bisect_right(self.starts, e)
        if i < j:
            s = min(s, self.starts[i])
            e = max(e, self.ends[j - 1])
        self.starts[i:j] = [s]
        self.ends[i:j] = [e]

    def remove(self, s: int, e: int) -> None:
        if s >= e:
            return
        i = bisect.bisect_right(self.ends, s)
        j = bisect.bisect_left(self.starts, e)
        if i >= j:
            return
        ns, ne = [], []
        if self.starts[i] < s:
            ns.append(self.starts[i])
            ne.append(s)
        if self.ends[j - 1] > e:
            ns.append(e)
            ne.append(self.ends[j - 1])
        self.starts[i:j] = ns
        self.ends[i:j] = ne

    def unmapped_by(self, s: int, e: int) -> List[Change]:
        """The munmap records of a mapping placed over [s, e) whatever is
        there (MAP_FIXED, MREMAP_FIXED): one per mapped run."""
        return [Change('munmap', a, b - a) for a, b in self.mapped_runs(s, e)]


class Sharing:
    """Union-find over the tasks of a recording without process events
    (numbered in order of appearance): which share an address space."""

    def __init__(self) -> None:
        self.up: List[int] = []

    def add(self) -> int:
        self.up.append(len(self.up))
        return len(self.up) - 1

    def find(self, i: int) -> int:
        while self.up[i] != i:
            self.up[i] = self.up[self.up[i]]
            i = self.up[i]
        return i

    def union(self, a: int, b: int) -> None:
        a, b = self.find(a), self.find(b)
        if a != b:
            self.up[max(a, b)] = min(a, b)


def in_place_range(name: str, args: List[str],
                   ret: int) -> Optional[Tuple[int, int]]:
    """The pages [s, e) a call changes in place, if it is one of munmap,
    mprotect, madvise, mremap (its old range) or a MAP_FIXED mmap: the
    calls that show which address space a task is in."""
    if name in ('munmap', 'mprotect', 'pkey_mprotect', 'madvise', 'mremap'):
        start = parse_int(args[0]) >> PAGE_SHIFT
    elif name in ('mmap', 'mmap2'):
        flags = parse_flags(args[3], MAP)
        if not flags & MAP_FIXED or flags & MAP_FIXED_NOREPLACE:
            return None
        start = ret >> PAGE_SHIFT
    else:
        return None
    pages = pages_of(parse_int(args[1]))
    return (start, start + pages) if pages > 0 else None


def _mmap(a: AddressSpace, args: List[str], ret: int) -> List[Change]:
    if ret & (PAGE - 1):
        raise ValueError('unaligned mmap result')
    start = ret >> PAGE_SHIFT
    pages = pages_of(parse_int(args[1]))
    prot = parse_flags(args[2], PROT)
    flags = parse_flags(args[3], MAP)
    if pages <= 0:
        return []
    group = []
    if flags & MAP_FIXED and not flags & MAP_FIXED_NOREPLACE:
        group = a.unmapped_by(start, start + pages)
    a.remove(start, start + pages)
    a.add(start, start + pages)
    return group + [Change('mmap', start, pages, rwx(prot))]


def _mremap(a: AddressSpace, args: List[str], ret: int) -> List[Change]:
    old = parse_int(args[0]) >> PAGE_SHIFT
    old_pages = pages_of(parse_int(args[1]))
    new_pages = pages_of(parse_int(args[2]))
    flags = parse_flags(args[3], MREMAP) if len(args) > 3 else 0
    new = ret >> PAGE_SHIFT
    group = []
    if flags & MREMAP_FIXED:
        group = a.unmapped_by(new, new + new_pages)
    if not flags & MREMAP_DONTUNMAP:
        a.remove(old, old + old_pages)
    a.remove(new, new + new_pages)
    a.add(new, new + new_pages)
    return group + [Change('mremap', old, old_pages, (new, new_pages))]


def _brk(a: AddressSpace, args: List[str], ret: int,
         warn: Callable[[str], None]) -> List[Change]:
    want = parse_int(args[0])
    old = a.brk
    a.brk = ret
    if want == 0 or want != ret:
        return []               # a query, or a refused change
    if old is None:
        warn('brk change with unknown old break')
        return []
    old_end = pages_of(old)
    new_end = pages_of(ret)
    if new_end > old_end:
        a.add(old_end, new_end)
        return [Change('mmap', old_end, new_end - old_end, 'rw-')]
    if new_end < old_end:
        a.remove(new_end, old_end)
        return [Change('munmap', new_end, old_end - new_end)]
    return []


def memory_call(a: AddressSpace, name: str, args: List[str], ret: int,
                warn: Callable[[str], None]) -> List[Change]:
    """The records of a successful memory call (one group, never split
    by --max-events: an mmap's munmap-before-mmap, for one), applying it
    to `a`.  Raises IndexError or ValueError on arguments it cannot
    read."""
    if name in ('mmap', 'mmap2'):
        return _mmap(a, args, ret)
    if name == 'munmap':
        start = parse_int(args[0]) >> PAGE_SHIFT
        pages = pages_of(parse_int(args[1]))
        a.remove(start, start + pages)
        return [Change('munmap', start, pages)]
    if name in ('mprotect', 'pkey_mprotect'):
        start = parse_int(args[0]) >> PAGE_SHIFT
        pages = pages_of(parse_int(args[1]))
        return [Change('mprotect', start, pages,
                       rwx(parse_flags(args[2], PROT)))]
    if name == 'madvise':
        advice = parse_flags(args[2], MADV)
        if advice not in (MADV_DONTNEED, MADV_FREE):
            return []
        start = parse_int(args[0]) >> PAGE_SHIFT
        return [Change('dontneed', start, pages_of(parse_int(args[1])))]
    if name == 'mremap':
        return _mremap(a, args, ret)
    if name == 'brk':
        return _brk(a, args, ret, warn)
    return []
