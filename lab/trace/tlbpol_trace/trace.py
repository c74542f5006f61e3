# SPDX-License-Identifier: MIT
"""The trace being written (FORMAT.md): its records, the thread and
address-space ids they give out, the --max-events cut, and the text."""

import collections
from typing import Iterable, List, NamedTuple, Optional, Sequence

from .aspace import AddressSpace, Change
from .tasks import Task
from .uapi import FORMAT_HEADER_V1, FORMAT_HEADER_V2, FORMAT_HEADER_V3, \
    KINDS_V1, KINDS_V2, KINDS_V3, PAGE_SHIFT


class Entry(NamedTuple):
    """A record to write: the task, the address space it is in, the kind,
    and the kind's own data."""
    task: Task
    aspace: AddressSpace
    kind: str
    change: Optional[Change] = None     # mmap ... mremap
    child: Optional[Task] = None        # clone, fork
    new_as: Optional[AddressSpace] = None   # exec
    duration: int = 0                   # block
    reason: str = ''                    # block; fault: read, write, cow
    page: int = 0                       # fault


def exit_entry(task: Task) -> Entry:
    return Entry(task, task.aspace, 'exit')


class Event(NamedTuple):
    """A written record: a memory one has its change, the others the text
    of their fields after the kind (None: no fields)."""
    ts: int
    tid: int
    asid: int
    kind: str
    change: Optional[Change]
    tail: Optional[str]


class Trace:
    def __init__(self, v1: bool = False, max_events: Optional[int] = None,
                 block_min_ns: int = 0, faults: bool = False) -> None:
        self.v1 = v1            # version 1: no process or block records
        self.faults = faults    # version 3: faults were recorded
        self.fault_notes: List[str] = []    # '# faults:' header lines
        self.max_events = max_events
        self.block_min_ns = block_min_ns
        self.events: List[Event] = []
        self.n_threads = 0
        self.n_as = 0
        self.thread_tasks: List[Task] = []  # by thread id
        self.out_ts = 0         # time of the last record
        self.truncated = False
        self.dropped_events = 0

    def tid_of(self, task: Task) -> int:
        if task.tid is None:
            task.tid = self.n_threads
            self.n_threads += 1
            self.thread_tasks.append(task)
        return task.tid

    def asid_of(self, aspace: AddressSpace) -> int:
        if aspace.id is None:
            aspace.id = self.n_as
            self.n_as += 1
        return aspace.id

    def commit(self, ts: int, entries: Sequence[Entry]) -> None:
        """Write the records of one system call (never split by -n)."""
        if not entries:
            return
        if self.truncated or (self.max_events is not None and
                              len(self.events) + len(entries) > self.max_events):
            self.truncated = True
            self.dropped_events += len(entries)
            return
        ts = max(ts, self.out_ts)
        self.out_ts = ts
        for e in entries:
            # Ids go by first appearance: the task's, its address
            # space's, then the child's or the new address space's.
            tid = self.tid_of(e.task)
            asid = self.asid_of(e.aspace)
            tail = None
            if e.child is not None and e.kind == 'clone':
                tail = '%d' % self.tid_of(e.child)
            elif e.child is not None:
                tail = '%d %d' % (self.tid_of(e.child),
                                  self.asid_of(e.child.aspace))
            elif e.new_as is not None:
                tail = '%d' % self.asid_of(e.new_as)
            elif e.kind == 'block':
                tail = '%d %s' % (min(e.duration, ts), e.reason)
            elif e.kind == 'fault':
                tail = '%x %s' % (e.page << PAGE_SHIFT, e.reason)
            self.events.append(Event(ts, tid, asid, e.kind, e.change, tail))

    def commit_exits(self, ts: int, entries: Iterable[Entry],
                     last: Sequence[Entry] = ()) -> None:
        """Exit records (of tasks that have a thread id), then `last`."""
        if self.v1:
            return
        self.commit(ts, [e for e in entries if e.task.tid is not None] +
                    list(last))

    def render(self, comments: Iterable[str] = (), pid_map: bool = False,
               process_events: bool = True) -> str:
        kinds = KINDS_V1 if self.v1 else KINDS_V3 if self.faults \
            else KINDS_V2
        counts = collections.Counter(e.kind for e in self.events)
        out = [FORMAT_HEADER_V1 if self.v1 else FORMAT_HEADER_V3
               if self.faults else FORMAT_HEADER_V2]
        for c in comments:
            for line in c.split('\n'):
                out.append(('# ' + line).rstrip())
        out.append('# threads: %d' % self.n_threads)
        out.append('# address-spaces: %d' % self.n_as)
        out.append('# events: %d (%s)' % (
            len(self.events),
            ', '.join('%s %d' % (k, counts[k]) for k in kinds)))
        out.append('# duration_ns: %d' %
                   (self.events[-1].ts if self.events else 0))
        if not self.v1:
            out.append('# block-min-ns: %d' % self.block_min_ns)
            out.append('# process-events: ' + (
                'yes' if process_events else
                'no (address spaces inferred from shared mappings)'))
        if self.faults:
            out.extend('# faults: ' + n for n in self.fault_notes)
        if self.truncated:
            out.append('# truncated: kept the first %d of %d events '
                       '(--max-events %s)' % (
                           len(self.events),
                           len(self.events) + self.dropped_events,
                           self.max_events))
        if pid_map:
            for tid, task in enumerate(self.thread_tasks):
                out.append('# thread %d: pid %s' % (tid, task.pid))
        out.extend(record_line(e) for e in self.events)
        return '\n'.join(out) + '\n'


def record_line(e: Event) -> str:
    """Addresses are kept as page numbers and written as byte addresses."""
    line = '%d %d %d %s' % (e.ts, e.tid, e.asid, e.kind)
    c = e.change
    if c is None:
        return line if e.tail is None else line + ' ' + e.tail
    line += ' %x %d' % (c.start << PAGE_SHIFT, c.pages)
    if isinstance(c.extra, tuple):
        line += ' %x %d' % (c.extra[0] << PAGE_SHIFT, c.extra[1])
    elif c.extra is not None:
        line += ' ' + c.extra
    return line
