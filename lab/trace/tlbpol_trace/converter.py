# SPDX-License-Identifier: MIT
"""The conversion: each strace line given to its task (made at its
clone, fork or first line, gone at its exit or a sibling's execve), each
successful call turned into the trace's records."""

import collections
import sys
from typing import Callable, Deque, Dict, Iterable, List, Optional, \
    Set, Tuple, Union

from .aspace import PAGE_RO, PAGE_RW, AddressSpace, Change, Sharing, \
    in_place_range, memory_call
from .faults import Fault
from .strace import CLONE_RESULT_RE, EXIT_RE, RESUMED_RE, \
    SUPERSEDED_RE, UNFINISHED_RE, Record, call_duration, call_name, \
    call_result, clone_flags, futex_waits, has_process_events, \
    parse_records, split_call
from .tasks import Task
from .trace import Entry, Trace, exit_entry
from .uapi import BLOCK_MIN_NS, BLOCK_REASON, CLONE_NAMES, CLONE_THREAD, \
    CLONE_VM, EXEC_NAMES, PAGE_SHIFT, PF_PROT, PF_WRITE


class ConvertError(Exception):
    pass


NO_PROCESS_EVENTS = (
    'this recording has no process events (clone, fork, execve): it was '
    'not made with -e trace=process, so threads and address spaces are '
    'inferred from shared mappings (%d thread%s in %d address space%s); '
    'record with -e trace=memory,process for exact ones')

# task_for()'s `creating`: may a task be made for the line?  True for a
# call; 'exit' for an exit line (only a child whose clone has not
# returned yet); False otherwise.
Creating = Union[bool, str]


class Converter:
    def __init__(self, max_events: Optional[int] = None,
                 verbose: bool = False, v1: bool = False,
                 block_min_ns: int = BLOCK_MIN_NS,
                 infer: bool = False,
                 faults: Optional[List[Fault]] = None,
                 keep: Optional[Set[int]] = None) -> None:
        self.trace = Trace(v1, max_events, block_min_ns,
                           faults is not None and not v1)
        # The recorded page faults, by time, and the next one to merge.
        self.faults = faults if faults is not None and not v1 else []
        self.next_fault = 0
        self.fault_kept: Dict[str, int] = collections.Counter()
        self.fault_dropped: Dict[str, int] = collections.Counter()
        # Thinning (--thin-faults, thin_conversion()): the read and write
        # faults (of pages not present) to write, by index; None: all.
        # `needed` collects them in the first pass: the faults that made a
        # page present which a later record finds present (one per record
        # that changes pages; the read before each copy).
        self.keep = keep
        self.needed: Set[int] = set()
        self.verbose = verbose
        # First pass of a recording without process events: which tasks
        # share an address space.
        self.infer = infer
        self.sharing = Sharing()
        # Second pass: task seq -> its group's address space.
        self.shared: Optional[Callable[[int], AddressSpace]] = None
        self.process_events = True
        self.tasks: Dict[int, Task] = {}    # pid -> live Task
        self.unbound: Optional[Task] = None  # of unprefixed lines, pid unknown
        self.roots = 0          # tasks not created by a traced clone
        # child pid -> (line index, parent pid) of each clone returning it
        self.future: Dict[int, Deque[Tuple[int, Optional[int]]]] = {}
        # child pid -> Task made before its clone returned
        self.early: Dict[int, Task] = {}
        self.last_ts = 0        # time of the last strace line
        self.cur_ts = 0         # time of the line being read
        self.warnings = 0
        self.notes: List[str] = []  # messages for stderr, always shown

    # -- diagnostics -------------------------------------------------------
    def warn(self, idx: int, msg: str) -> None:
        self.warnings += 1
        if self.verbose:
            sys.stderr.write('strace2trace: line %d: %s\n' % (idx + 1, msg))

    # -- tasks -------------------------------------------------------------
    def spawn(self, parent: Task, pid: int, flags: int) -> Task:
        if flags & CLONE_VM:
            aspace = parent.aspace
        else:
            self.need(parent.aspace, 0, 1 << 52)
            aspace = parent.aspace.copy()
        group = parent.group if flags & CLONE_THREAD else None
        task = Task(pid, aspace, group, parent)
        aspace.members += 1
        self.tasks[pid] = task
        return task

    def created(self, parent: Task, child: Task, ts: int) -> None:
        """The clone or fork record that gives `child` its thread id."""
        if self.trace.v1:
            return
        kind = 'clone' if child.aspace is parent.aspace else 'fork'
        self.trace.commit(ts, [Entry(parent, parent.aspace, kind,
                                     child=child)])

    def root_task(self, pid: Optional[int], idx: int) -> Task:
        if self.roots and self.process_events:
            self.warn(idx, 'pid %s of unknown origin: new address space' % pid)
        seq = self.roots
        self.roots += 1
        aspace = self.shared(seq) if self.shared is not None \
            else AddressSpace()
        task = Task(pid, aspace)
        if self.infer:
            aspace.seq = self.sharing.add()
        aspace.members += 1
        if pid is None:
            self.unbound = task
        else:
            self.tasks[pid] = task
        return task

    def task_for(self, pid: Optional[int], idx: int, body: str,
                 creating: Creating) -> Optional[Task]:
        """The live task of a line, or None."""
        if pid is None:
            return self.unprefixed_task(idx, body, creating is True)
        task = self.tasks.get(pid)
        if task is not None:
            return task
        fut = self.future.get(pid)
        while fut and fut[0][0] <= idx:
            fut.popleft()
        if fut:
            # A child whose creating call has not returned yet.
            if not creating:
                return None
            return self.early_child(pid, idx, fut[0][1], creating)
        if self.unbound is not None:
            # The first pid that is nobody's child is that of the task
            # whose lines were unprefixed so far.
            task = self.unbound
            self.unbound = None
            task.pid = pid
            self.tasks[pid] = task
            return task
        if creating is not True:
            return None
        return self.root_task(pid, idx)

    def early_child(self, pid: int, idx: int, ppid: Optional[int],
                    creating: Creating) -> Optional[Task]:
        """The task of child `pid`, first seen before the clone of its
        parent `ppid` returns: made now, with its clone or fork record."""
        if ppid is not None:
            parent = self.tasks.get(ppid)
            if parent is None:
                parent = self.unbound   # the parent's pid is not known
        else:
            parent = self.cloner()
        if parent is not None and parent.pending is not None and \
                parent.pending_clone():
            task = self.spawn(parent, pid, clone_flags(*parent.pending))
            self.early[pid] = task
            self.created(parent, task, self.cur_ts)
            return task
        if creating is not True:
            return None
        return self.root_task(pid, idx)

    def cloner(self) -> Optional[Task]:
        cands = [t for t in self.live_tasks() if t.pending_clone()]
        return cands[0] if len(cands) == 1 else None

    def live_tasks(self) -> List[Task]:
        tasks = list(self.tasks.values())
        if self.unbound is not None:
            tasks.append(self.unbound)
        return tasks

    def unprefixed_task(self, idx: int, body: str,
                        creating: bool) -> Optional[Task]:
        # strace leaves lines unprefixed while it traces a single task.
        live = self.live_tasks()
        if len(live) == 1:
            return live[0]
        if not live:
            return self.root_task(None, idx) if creating else None
        if self.unbound is not None:
            return self.unbound
        m = RESUMED_RE.match(body)
        if m:
            cands = [t for t in live
                     if t.pending and t.pending[0] == m.group(1)]
            if len(cands) == 1:
                return cands[0]
        self.warn(idx, 'unprefixed line with %d live tasks: dropped' % len(live))
        return None

    def kill(self, task: Task) -> None:
        task.pending = None
        if task is self.unbound:
            self.unbound = None
        elif task.pid is not None and self.tasks.get(task.pid) is task:
            del self.tasks[task.pid]
        else:
            return
        task.aspace.members -= 1
        if task.aspace.members <= 0:
            self.need(task.aspace, 0, 1 << 52)
            task.aspace.drop_pages(0, 1 << 52)

    def end(self, task: Task, ts: int) -> None:
        """Task ended (an exit line): its exit record."""
        self.kill(task)
        entries = [exit_entry(d) for d in task.doomed]
        task.doomed = []
        entries.append(exit_entry(task))
        self.trace.commit_exits(ts, entries)

    def superseded(self, idx: int, pid: Optional[int], tid: int) -> None:
        # A non-leader thread `tid` called execve: it goes on with the
        # leader's pid (the line's own pid), and the old leader is gone;
        # its exit record comes with the execve's result.
        task = self.tasks.get(tid)
        if task is None:
            self.warn(idx, 'execve by unknown pid %d' % tid)
            return
        leader = task.group.leader
        if pid is not None and pid in self.tasks:
            leader = self.tasks[pid]
        if leader is task:
            return
        self.kill(leader)
        task.doomed.append(leader)
        del self.tasks[tid]
        task.pid = leader.pid
        task.group.leader = task
        if task.pid is None:
            self.unbound = task
        else:
            self.tasks[task.pid] = task

    # -- inferred address spaces (no process events) -------------------------
    def share(self, task: Task, s: int, e: int) -> None:
        """`task` touches [s, e): where its own address space has nothing
        mapped there (as far as the trace shows), it shares the address
        space of every other live task that has something mapped there.
        (A range mapped in both, such as a heap placed at the same hint
        address by two processes, is no sign of sharing.)"""
        mine = task.aspace
        while True:
            gaps = mine.gaps(s, e)
            if not gaps:
                return
            for other in self.live_tasks():
                theirs = other.aspace
                if theirs is not mine and theirs.members > 0 and \
                        any(theirs.mapped_runs(a, b) for a, b in gaps):
                    self.merge(mine, theirs)
                    break       # mine has grown: look at its gaps again
            else:
                return

    def merge(self, mine: AddressSpace, theirs: AddressSpace) -> None:
        for s, e in zip(theirs.starts, theirs.ends):
            mine.add(s, e)
        if mine.brk is None:
            mine.brk = theirs.brk
        for t in self.live_tasks():
            if t.aspace is theirs:
                t.aspace = mine
        mine.members += theirs.members
        theirs.members = 0
        self.sharing.union(mine.seq, theirs.seq)

    # -- calls -------------------------------------------------------------
    def syscall(self, idx: int, task: Task, ts: int, text: str,
                resumed: bool = False) -> None:
        call = split_call(text)
        if call is None:
            self.warn(idx, 'cannot parse: %s' % text[:80])
            return
        if call.name in BLOCK_REASON:
            if not self.trace.v1:
                self.block(task, ts, call.name, call.args, call.rest, resumed)
            return
        returned, ret = call_result(call.rest)
        if not returned:
            self.warn(idx, 'no return value: %s' % text[:80])
            return
        if ret is None:
            return              # failed, interrupted or no return (exit)
        try:
            self.apply(idx, task, ts, call.name, call.args, ret)
        except (IndexError, ValueError) as exc:
            self.warn(idx, 'bad arguments (%s): %s' % (exc, text[:80]))

    def block(self, task: Task, ts: int, name: str, args: List[str],
              rest: str, resumed: bool) -> None:
        """A call that may block: a block record if strace -T says it took
        at least block_min_ns, whatever it returned."""
        d = call_duration(rest)
        if d is None or d < self.trace.block_min_ns:
            return
        if name == 'futex' and not futex_waits(args):
            return
        # A one-line call's time is its entry: it ended d later.
        end = ts if resumed else ts + d
        self.trace.commit(end, [Entry(task, task.aspace, 'block',
                                      duration=d, reason=BLOCK_REASON[name])])

    def apply(self, idx: int, task: Task, ts: int, name: str,
              args: List[str], ret: int) -> None:
        if self.infer:
            r = in_place_range(name, args, ret)
            if r is not None:
                self.share(task, *r)
        if name in CLONE_NAMES:
            self.clone_returned(idx, task, ts, name, args, ret)
        elif name in EXEC_NAMES:
            if ret == 0:
                self.execed(task, ts)
        else:
            a = task.aspace
            group = memory_call(a, name, args, ret,
                                lambda msg: self.warn(idx, msg))
            if self.trace.faults:
                for c in group:
                    if c.pages > 0:
                        self.need(a, c.start, c.start + c.pages)
                    forget_pages(a, c)
            self.trace.commit(ts, [Entry(task, a, c.kind, c)
                                   for c in group
                                   if c.pages > 0 or c.kind == 'mremap'])

    def clone_returned(self, idx: int, task: Task, ts: int, name: str,
                       args: List[str], ret: int) -> None:
        if ret <= 0:
            return
        child = self.early.pop(ret, None)
        if child is not None and child.parent is task:
            return              # made, with its record, when first seen
        if self.tasks.get(ret) is not None:
            self.warn(idx, 'pid %d reused while live' % ret)
        child = self.spawn(task, ret, clone_flags(name, 'x(' + ','.join(args)))
        self.created(task, child, ts)

    def execed(self, task: Task, ts: int) -> None:
        # The other threads of the process end; the caller goes on,
        # alone, in a fresh address space.  (The first execve of the
        # traced command, by a task with no record yet, has no record:
        # its address space had none either.)
        exits = [exit_entry(d) for d in task.doomed]
        task.doomed = []
        for other in self.live_tasks():
            if other is not task and other.group is task.group:
                self.kill(other)
                exits.append(exit_entry(other))
        new = AddressSpace()
        new.members = 1
        task.aspace.members -= 1
        if task.aspace.members <= 0:
            self.need(task.aspace, 0, 1 << 52)
            task.aspace.drop_pages(0, 1 << 52)
        last = [Entry(task, task.aspace, 'exec', new_as=new)] \
            if task.tid is not None else []
        task.aspace = new
        self.trace.commit_exits(ts, exits, last)

    # -- main loop ---------------------------------------------------------
    def convert(self, lines: Iterable[str]) -> None:
        recs = parse_records(lines)
        if not recs:
            raise ConvertError('no strace lines with -ttt timestamps found')
        self.process_events = has_process_events(recs)
        if not self.process_events:
            # First pass: which tasks share an address space; the second
            # gives each group of them one address space from the start.
            first = Converter(v1=True, infer=True)
            first.process_events = False
            first.run(recs)
            groups: Dict[int, AddressSpace] = {}

            def shared(seq: int, find: Callable[[int], int]
                       = first.sharing.find) -> AddressSpace:
                return groups.setdefault(find(seq), AddressSpace())
            self.shared = shared
        self.run(recs)
        if self.trace.faults:
            self.trace.fault_notes = self.fault_notes()
        if not self.process_events:
            n_threads, n_as = self.trace.n_threads, self.trace.n_as
            self.notes.append(NO_PROCESS_EVENTS % (
                n_threads, '' if n_threads == 1 else 's',
                n_as, '' if n_as == 1 else 's'))

    def run(self, recs: List[Record]) -> None:
        for idx, rec in enumerate(recs):
            m = CLONE_RESULT_RE.match(rec.body)
            if m:
                self.future.setdefault(int(m.group(1)), collections.deque()) \
                    .append((idx, rec.pid))
        t0 = recs[0].ts
        for idx, (pid, ts, body) in enumerate(recs):
            ts -= t0
            if ts < self.last_ts:
                self.warn(idx, 'time goes back by %d ns' % (self.last_ts - ts))
                ts = self.last_ts
            self.faults_before(ts + t0, t0, idx)
            self.last_ts = ts
            self.cur_ts = ts
            self.line(idx, pid, ts, body)
        self.faults_before(None, t0, len(recs))
        # Leaders superseded by an execve whose result never came.
        for task in self.live_tasks():
            if task.doomed:
                self.trace.commit_exits(self.last_ts,
                                        [exit_entry(d) for d in task.doomed])
                task.doomed = []

    # -- page faults (FORMAT.md "Page faults") ----------------------------
    def faults_before(self, until: Optional[int], t0: int, idx: int) -> None:
        """Take the faults earlier than strace time `until` (None: all
        left).  A strace line and a fault at the same time: the line first
        (strace's microseconds are cut, not rounded)."""
        while self.next_fault < len(self.faults):
            f = self.faults[self.next_fault]
            if until is not None and f.ts >= until:
                return
            self.next_fault += 1
            if f.ts < t0:
                self.fault_dropped['before the first strace line'] += 1
                continue
            self.fault(f, max(f.ts - t0, self.last_ts), idx, self.next_fault - 1)

    def fault(self, f: Fault, ts: int, idx: int, fi: int = -1) -> None:
        task = self.tasks.get(f.tid)
        if task is None and self.unbound is None and self.future.get(f.tid):
            # A new thread's first faults (its stack), before its clone
            # returns in the parent: made now, as by its first line.
            task = self.task_for(f.tid, idx, '', 'exit')
        if task is None:
            self.fault_dropped['of no traced thread'] += 1
            return
        a = task.aspace
        page = f.addr >> PAGE_SHIFT
        if not a.mapped_runs(page, page + 1):
            # The program image, the stack, the vDSO: mapped by execve, not
            # in the trace, which has no place for them.
            self.fault_dropped['outside the mappings the trace shows'] += 1
            return
        write = bool(f.error & PF_WRITE)
        state = a.pages.get(page)
        if not f.error & PF_PROT:
            # Not present: a read maps the zero page (or a file page)
            # read-only, a write a new page of the process's own.
            a.drop_pages(page, page + 1)
            how = 'write' if write else 'read'
            a.pages[page] = PAGE_RW if write else PAGE_RO
            a.origin[page] = fi
        elif write and (state is None or state == PAGE_RO or
                        (isinstance(state, list) and state[0] > 1)):
            # Present but write-protected: do_wp_page() copies it
            # (wp_page_copy()): the zero page, a file page, a page still
            # shared by a fork, or one mapped without a fault the
            # recording saw (fault-around maps file pages around one).
            how = 'cow'
            self.need(a, page, page + 1)
            a.drop_pages(page, page + 1)
            a.pages[page] = PAGE_RW
            a.origin[page] = fi
        else:
            # A write to a page the process alone has (already its own, or
            # shared by a fork whose other side copied or dropped it): the
            # kernel reuses it, wp_can_reuse_anon_folio(): no new frame,
            # no flush.  Or a read of a present page (PROT_NONE, NUMA
            # hinting).
            if write:
                origin = a.origin.get(page, fi)
                a.drop_pages(page, page + 1)
                a.pages[page] = PAGE_RW
                a.origin[page] = origin
            self.fault_dropped['writes to a page the process alone has '
                               '(reused, not copied)' if write else
                               'reads of present pages'] += 1
            return
        if self.keep is not None and how != 'cow' and fi not in self.keep:
            self.fault_dropped['%s faults thinned (--thin-faults: no later record '
                               'needs the page present)' % how] += 1
            return
        self.fault_kept[how] += 1
        self.trace.commit(ts, [Entry(task, a, 'fault', reason=how,
                                     page=page)])

    def need(self, a: AddressSpace, s: int, e: int) -> None:
        """A record is about to change [s, e): if a page of it is present,
        the fault that made one present is needed (thinned faults keep
        every record's "some page present" as it was)."""
        f = a.present_origin(s, e)
        if f is not None:
            self.needed.add(f)

    def fault_notes(self) -> List[str]:
        kept = sum(self.fault_kept.values())
        notes = ['recorded (%d of %d page faults written: %s)' % (
            kept, len(self.faults),
            ', '.join('%s %d' % (k, self.fault_kept[k])
                      for k in ('read', 'write', 'cow')))]
        for why, n in sorted(self.fault_dropped.items()):
            notes.append('not written: %d %s' % (n, why))
        return notes

    def line(self, idx: int, pid: Optional[int], ts: int, body: str) -> None:
        if body.startswith('---'):
            return
        if body.startswith('+++'):
            m = SUPERSEDED_RE.match(body)
            if m:
                self.superseded(idx, pid, int(m.group(1)))
            elif EXIT_RE.match(body):
                task = self.task_for(pid, idx, body, 'exit')
                if task is not None:
                    self.end(task, ts)
            return
        m = RESUMED_RE.match(body)
        if m:
            self.resumed(idx, pid, ts, body, m.group(1), m.group(2))
            return
        name = call_name(body)
        if name is None:
            return
        task = self.task_for(pid, idx, body, True)
        if task is None:
            return
        u = UNFINISHED_RE.search(body)
        if u:
            if task.pending is not None:
                self.warn(idx, 'new call while %s pending' % task.pending[0])
            task.pending = (name, body[:u.start()])
            return
        self.syscall(idx, task, ts, body)

    def resumed(self, idx: int, pid: Optional[int], ts: int, body: str,
                name: str, tail: str) -> None:
        """'<... NAME resumed>TAIL': the call is the task's pending one."""
        task = self.task_for(pid, idx, body, False)
        if task is None or task.pending is None:
            self.warn(idx, 'resumed call without its start: dropped')
            return
        started, text = task.pending
        task.pending = None
        if started != name:
            self.warn(idx, '%s resumed while %s was pending' % (name, started))
            return
        self.syscall(idx, task, ts, text + tail, resumed=True)


def forget_pages(a: AddressSpace, c: Change) -> None:
    """What a memory record does to the pages faults made present."""
    if c.kind in ('munmap', 'dontneed', 'mmap'):
        a.drop_pages(c.start, c.start + c.pages)
    elif c.kind == 'mremap' and isinstance(c.extra, tuple):
        a.move_pages(c.start, c.start + c.pages, c.extra[0], c.extra[1])


def convert_lines(lines: Iterable[str], max_events: Optional[int] = None,
                  verbose: bool = False, v1: bool = False,
                  block_min_ns: int = BLOCK_MIN_NS,
                  faults: Optional[List[Fault]] = None,
                  thin: bool = False) -> Converter:
    """A finished conversion (its trace, notes and warnings); with
    `faults`, version 3 with their fault records; with `thin` only the
    read and write faults some later record needs (FORMAT.md "Thinned
    faults"): a first pass finds them."""
    keep: Optional[Set[int]] = None
    if thin and faults is not None and not v1:
        lines = list(lines)
        first = Converter(max_events=None, v1=v1, block_min_ns=block_min_ns,
                          faults=faults)
        first.convert(lines)
        keep = first.needed
    conv = Converter(max_events=max_events, verbose=verbose, v1=v1,
                     block_min_ns=block_min_ns, faults=faults, keep=keep)
    conv.convert(lines)
    return conv
