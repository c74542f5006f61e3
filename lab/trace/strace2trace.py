#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Convert strace output into a tlbpol-trace text trace (see FORMAT.md):
version 2 by default, version 1 with --v1.

Record with

    strace $(cat lab/trace/strace-options) -o RAW.strace COMMAND [ARGS...]

that is `strace -f -ttt -T -e trace=%memory,%process,futex,...` (output
written to stderr instead of `-o FILE`, with its `[pid N]` prefixes, is
read too), and convert with

    strace2trace.py RAW.strace > OUT.trace

Standard library only.  `--self-test` runs the embedded examples;
`--expect FILE` compares the conversion with FILE (a golden test).
"""

import argparse
import bisect
import collections
import difflib
import re
import sys

FORMAT_HEADER_V1 = '# tlbpol-trace v1'
FORMAT_HEADER_V2 = '# tlbpol-trace v2'
PAGE_SHIFT = 12
PAGE = 1 << PAGE_SHIFT
KINDS_V1 = ('mmap', 'munmap', 'mprotect', 'dontneed', 'mremap')
KINDS_V2 = KINDS_V1 + ('clone', 'fork', 'exec', 'exit', 'block')
BLOCK_MIN_NS = 50000    # default --block-min-ns
MAX_LINE = 511          # bytes per line, newline excluded (FORMAT.md)

# Flag values of the Linux UAPI (generic/x86-64), used both for strace's
# symbolic names and for the numbers it prints with -X raw / unknown bits.
PROT = {'PROT_NONE': 0, 'PROT_READ': 1, 'PROT_WRITE': 2, 'PROT_EXEC': 4}
MAP_FIXED = 0x10
MAP_FIXED_NOREPLACE = 0x100000
MAP = {'MAP_FIXED': MAP_FIXED, 'MAP_FIXED_NOREPLACE': MAP_FIXED_NOREPLACE}
MADV_DONTNEED = 4
MADV_FREE = 8
MADV = {'MADV_DONTNEED': MADV_DONTNEED, 'MADV_FREE': MADV_FREE}
MREMAP_FIXED = 2
MREMAP_DONTUNMAP = 4
MREMAP = {'MREMAP_MAYMOVE': 1, 'MREMAP_FIXED': MREMAP_FIXED,
          'MREMAP_DONTUNMAP': MREMAP_DONTUNMAP}
CLONE_VM = 0x100
CLONE_VFORK = 0x4000
CLONE_THREAD = 0x10000
CLONE = {'CLONE_VM': CLONE_VM, 'CLONE_VFORK': CLONE_VFORK,
         'CLONE_THREAD': CLONE_THREAD}
CLONE_NAMES = ('clone', 'clone3', 'fork', 'vfork')
EXEC_NAMES = ('execve', 'execveat')
# Any of these in a recording means it was made with -e trace=process.
PROCESS_NAMES = CLONE_NAMES + EXEC_NAMES + ('exit', 'exit_group')

# System calls that block, and the reason word of their block records.
BLOCK_REASON = {'futex': 'futex'}
BLOCK_REASON.update(dict.fromkeys(
    ('poll', 'ppoll', 'select', 'pselect6', 'epoll_wait', 'epoll_pwait',
     'epoll_pwait2'), 'poll'))
BLOCK_REASON.update(dict.fromkeys(
    ('nanosleep', 'clock_nanosleep', 'pause', 'rt_sigsuspend',
     'rt_sigtimedwait'), 'sleep'))
BLOCK_REASON.update(dict.fromkeys(('wait4', 'waitid'), 'wait'))
BLOCK_REASON.update(dict.fromkeys(
    ('read', 'pread64', 'readv', 'recvfrom', 'recvmsg', 'accept', 'accept4'),
    'read'))
# futex operations that wait (FUTEX_CMD_MASK'd numbers for -X raw):
# WAIT 0, LOCK_PI 6, WAIT_BITSET 9, WAIT_REQUEUE_PI 11, LOCK_PI2 13.
FUTEX_WAIT_OPS = {0, 6, 9, 11, 13}
FUTEX_CMD_MASK = 0x7f

# One strace line: optional "[pid N] " (stderr output once several tasks are
# traced) or "N " (-o FILE with -f), then the -ttt timestamp, then the text.
LINE_RE = re.compile(r'^(?:\[pid\s+(\d+)\]\s+|(\d+)\s+(?=\d+\.\d+\s))?'
                     r'(\d+)\.(\d+)\s+(.*?)\s*$')
# strace's own messages share stderr with the trace and may split a line.
STRACE_MSG_RE = re.compile(r'strace: Process \d+ (?:attached|detached)'
                           r'(?: \(waiting for parent\))?\s*$')
UNFINISHED_RE = re.compile(r'\s*<(?:unfinished|pid changed to \d+) \.\.\.>\s*$')
RESUMED_RE = re.compile(r'^<\.\.\. (\w+) resumed>(.*)$')
CALL_RE = re.compile(r'^(\w+)\(')
RET_RE = re.compile(r'^\s*=\s*(\S+)')
COMMENT_RE = re.compile(r'/\*.*?\*/')
CLONE_RESULT_RE = re.compile(r'^(?:<\.\.\. )?(?:clone3?|v?fork)\b.*\)\s*=\s*(\d+)')
FLAGS_RE = re.compile(r'\bflags=([\w|]+)')
EXIT_RE = re.compile(r'^\+\+\+ (?:exited with|killed by) ')
SUPERSEDED_RE = re.compile(r'^\+\+\+ superseded by execve in pid (\d+) \+\+\+')
# strace -T: the time spent in the call, "<0.000123>", at the end.
DURATION_RE = re.compile(r'<(\d+)\.(\d+)>\s*$')
NAME_RE = re.compile(r'^(?:<\.\.\. )?(\w+)[( ]')


class ConvertError(Exception):
    pass


def parse_int(text):
    text = COMMENT_RE.sub('', text).strip()
    if text == 'NULL':
        return 0
    return int(text, 0)


def parse_flags(text, table):
    value = 0
    for tok in COMMENT_RE.sub('', text).split('|'):
        tok = tok.strip()
        if tok in table:
            value |= table[tok]
        else:
            try:
                value |= int(tok, 0)
            except ValueError:
                pass            # a name that does not matter here
    return value


def rwx(prot):
    return ('r' if prot & 1 else '-') + ('w' if prot & 2 else '-') + \
        ('x' if prot & 4 else '-')


def pages_of(length):
    return (length + PAGE - 1) >> PAGE_SHIFT


def split_call(text):
    """'name(a, b, ...) = ret ...' -> (name, [args], text after ')')."""
    m = CALL_RE.match(text)
    if not m:
        return None
    i = m.end()
    n = len(text)
    depth = 1
    start = i
    args = []
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == '\\' else 1
        elif c == '/' and text.startswith('/*', i):
            j = text.find('*/', i + 2)
            i = n if j < 0 else j + 1
        elif c in '([{':
            depth += 1
        elif c in ')]}':
            depth -= 1
            if depth == 0:
                last = text[start:i].strip()
                if last or args:
                    args.append(last)
                return m.group(1), args, text[i + 1:]
        elif c == ',' and depth == 1:
            args.append(text[start:i].strip())
            start = i + 1
        i += 1
    return None


class AddressSpace:
    """What the trace has shown to be mapped in one address space, as
    disjoint, non-touching page intervals [start, end); plus the break.
    `seq` and `members` are used only when address spaces are inferred
    (a recording without process events)."""

    __slots__ = ('id', 'starts', 'ends', 'brk', 'seq', 'members')

    def __init__(self):
        self.id = None
        self.starts = []
        self.ends = []
        self.brk = None
        self.seq = None         # union-find element of its first task
        self.members = 0        # live tasks in it

    def copy(self):
        other = AddressSpace()
        other.starts = list(self.starts)
        other.ends = list(self.ends)
        other.brk = self.brk
        return other

    def mapped_runs(self, s, e):
        """Maximal mapped runs inside [s, e), ascending."""
        runs = []
        i = bisect.bisect_right(self.ends, s)
        while i < len(self.starts) and self.starts[i] < e:
            runs.append((max(s, self.starts[i]), min(e, self.ends[i])))
            i += 1
        return runs

    def add(self, s, e):
        if s >= e:
            return
        i = bisect.bisect_left(self.ends, s)
        j = bisect.bisect_right(self.starts, e)
        if i < j:
            s = min(s, self.starts[i])
            e = max(e, self.ends[j - 1])
        self.starts[i:j] = [s]
        self.ends[i:j] = [e]

    def remove(self, s, e):
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


class Sharing:
    """Union-find over the tasks of a recording without process events
    (by their order of appearance, Task.seq): which share an address
    space."""

    def __init__(self):
        self.up = []

    def add(self):
        self.up.append(len(self.up))
        return len(self.up) - 1

    def find(self, i):
        while self.up[i] != i:
            self.up[i] = self.up[self.up[i]]
            i = self.up[i]
        return i

    def union(self, a, b):
        a, b = self.find(a), self.find(b)
        if a != b:
            self.up[max(a, b)] = min(a, b)


class Group:
    """A thread group (a process); its leader is the task holding its pid."""

    __slots__ = ('leader',)

    def __init__(self, leader):
        self.leader = leader


class Task:
    """One traced thread (a Linux task)."""

    __slots__ = ('pid', 'tid', 'group', 'aspace', 'pending', 'parent',
                 'seq', 'doomed')

    def __init__(self, pid, aspace, group=None, parent=None):
        self.pid = pid          # None: not known yet (unprefixed lines)
        self.tid = None         # trace thread id, given at its first record
        self.group = group if group is not None else Group(self)
        self.aspace = aspace
        self.pending = None     # (name, entry text) of an unfinished call
        self.parent = parent
        self.seq = None         # order among tasks of unknown origin
        self.doomed = []        # leaders superseded by this task's execve


def has_process_events(recs):
    """Whether any line is a clone, fork, execve or exit call."""
    for _pid, _ts, body in recs:
        m = NAME_RE.match(body)
        if m and m.group(1) in PROCESS_NAMES:
            return True
    return False


def futex_waits(args):
    """Whether a futex call's operation waits (FUTEX_WAIT..., LOCK_PI)."""
    if len(args) < 2:
        return True
    op = COMMENT_RE.sub('', args[1]).split('|')[0].strip()
    try:
        return int(op, 0) & FUTEX_CMD_MASK in FUTEX_WAIT_OPS
    except ValueError:
        pass
    if op.endswith('_PRIVATE'):
        op = op[:-len('_PRIVATE')]
    return op in ('FUTEX_WAIT', 'FUTEX_WAIT_BITSET', 'FUTEX_LOCK_PI',
                  'FUTEX_LOCK_PI2', 'FUTEX_WAIT_REQUEUE_PI')


NO_PROCESS_EVENTS = (
    'this recording has no process events (clone, fork, execve): it was '
    'not made with -e trace=process, so threads and address spaces are '
    'inferred from shared mappings (%d thread%s in %d address space%s); '
    'record with -e trace=memory,process for exact ones')


class Converter:
    def __init__(self, max_events=None, verbose=False, v1=False,
                 block_min_ns=BLOCK_MIN_NS, infer=False):
        self.max_events = max_events
        self.verbose = verbose
        self.v1 = v1            # write v1: no process or block records
        self.block_min_ns = block_min_ns
        self.infer = infer      # first pass of a recording without
        self.sharing = Sharing() if infer else None  # process events
        self.shared = None      # second pass: task seq -> AddressSpace
        self.process_events = None
        self.tasks = {}         # pid -> live Task
        self.unbound = None     # live task of unprefixed lines, pid unknown
        self.roots = 0          # tasks not created by a traced clone
        self.future = {}        # child pid -> deque of (line index, parent pid)
        self.early = {}         # child pid -> Task made before its clone returned
        self.events = []
        self.n_threads = 0
        self.n_as = 0
        self.t0 = None
        self.last_ts = 0        # time of the last strace line
        self.out_ts = 0         # time of the last record
        self.cur_ts = 0         # time of the line being read
        self.truncated = False
        self.dropped_events = 0
        self.warnings = 0
        self.notes = []         # messages for stderr, always shown
        self.thread_tasks = []  # by thread id

    # -- diagnostics -------------------------------------------------------
    def warn(self, idx, msg):
        self.warnings += 1
        if self.verbose:
            sys.stderr.write('strace2trace: line %d: %s\n' % (idx + 1, msg))

    # -- input -------------------------------------------------------------
    @staticmethod
    def logical_lines(lines):
        """Undo the splitting of lines by strace's own stderr messages."""
        carry = ''
        for raw in lines:
            line = raw.rstrip('\n')
            m = STRACE_MSG_RE.search(line)
            if m:
                carry += line[:m.start()]
                continue
            if line.startswith('strace: '):
                continue
            yield carry + line
            carry = ''
        if carry:
            yield carry

    def parse(self, lines):
        recs = []
        for text in self.logical_lines(lines):
            m = LINE_RE.match(text)
            if not m:
                continue
            pid = m.group(1) or m.group(2)
            pid = int(pid) if pid is not None else None
            frac = m.group(4)[:9].ljust(9, '0')
            ts = int(m.group(3)) * 1000000000 + int(frac)
            recs.append((pid, ts, m.group(5)))
        return recs

    # -- tasks -------------------------------------------------------------
    def spawn(self, parent, pid, flags):
        if flags & CLONE_VM:
            aspace = parent.aspace
        else:
            aspace = parent.aspace.copy()
        group = parent.group if flags & CLONE_THREAD else None
        task = Task(pid, aspace, group, parent)
        aspace.members += 1
        self.tasks[pid] = task
        return task

    def created(self, parent, child, ts):
        """The clone or fork record that gives `child` its thread id."""
        if self.v1:
            return
        kind = 'clone' if child.aspace is parent.aspace else 'fork'
        self.commit(ts, [(parent, parent.aspace, kind, child)])

    def root_task(self, pid, idx):
        if self.roots and self.process_events:
            self.warn(idx, 'pid %s of unknown origin: new address space' % pid)
        seq = self.roots
        self.roots += 1
        if self.shared is not None:
            aspace = self.shared(seq)
        else:
            aspace = AddressSpace()
        task = Task(pid, aspace)
        task.seq = seq
        if self.infer:
            aspace.seq = self.sharing.add()
        aspace.members += 1
        if pid is None:
            self.unbound = task
        else:
            self.tasks[pid] = task
        return task

    def task_for(self, pid, idx, body, creating):
        """The live task of a line.  `creating`: True for a call (a task
        may be made for it), 'exit' for an exit line (only a child whose
        clone has not returned yet may be made), False otherwise."""
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
            ppid = fut[0][1]
            if ppid is not None:
                parent = self.tasks.get(ppid)
                if parent is None:
                    parent = self.unbound   # the parent's pid is not known
            else:
                parent = self.cloner()
            if parent is not None and parent.pending and \
                    parent.pending[0] in CLONE_NAMES:
                task = self.spawn(parent, pid,
                                  clone_flags(*parent.pending))
                self.early[pid] = task
                self.created(parent, task, self.cur_ts)
                return task
            if creating is not True:
                return None
            return self.root_task(pid, idx)
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

    def cloner(self):
        cands = [t for t in self.live_tasks()
                 if t.pending and t.pending[0] in CLONE_NAMES]
        return cands[0] if len(cands) == 1 else None

    def live_tasks(self):
        tasks = list(self.tasks.values())
        if self.unbound is not None:
            tasks.append(self.unbound)
        return tasks

    def unprefixed_task(self, idx, body, creating):
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
            cands = [t for t in live if t.pending and t.pending[0] == m.group(1)]
            if len(cands) == 1:
                return cands[0]
        self.warn(idx, 'unprefixed line with %d live tasks: dropped' % len(live))
        return None

    def kill(self, task):
        task.pending = None
        if task is self.unbound:
            self.unbound = None
        elif self.tasks.get(task.pid) is task:
            del self.tasks[task.pid]
        else:
            return
        task.aspace.members -= 1

    def end(self, task, ts):
        """Task ended (an exit line): its exit record."""
        self.kill(task)
        entries = [(d, d.aspace, 'exit') for d in task.doomed]
        task.doomed = []
        entries.append((task, task.aspace, 'exit'))
        self.commit_exits(ts, entries)

    def commit_exits(self, ts, entries, last=()):
        """Exit records (of tasks that have a thread id), then `last`."""
        if self.v1:
            return
        self.commit(ts, [e for e in entries if e[0].tid is not None] +
                    list(last))

    # -- inferred address spaces (no process events) -------------------------
    def share(self, task, s, e):
        """`task` touches [s, e): where its own address space has nothing
        mapped there (as far as the trace shows), it shares the address
        space of every other live task that has something mapped there.
        (A range mapped in both, such as a heap placed at the same hint
        address by two processes, is no sign of sharing.)"""
        mine = task.aspace
        while True:
            gaps, pos = [], s
            for a, b in mine.mapped_runs(s, e):
                if a > pos:
                    gaps.append((pos, a))
                pos = b
            if pos < e:
                gaps.append((pos, e))
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

    def infer_sharing(self, task, name, args, ret):
        """The calls that change a range in place: munmap, mprotect,
        madvise, mremap (its old range) and a MAP_FIXED mmap."""
        if name in ('munmap', 'mprotect', 'pkey_mprotect', 'madvise',
                    'mremap'):
            start = parse_int(args[0]) >> PAGE_SHIFT
        elif name in ('mmap', 'mmap2'):
            flags = parse_flags(args[3], MAP)
            if not flags & MAP_FIXED or flags & MAP_FIXED_NOREPLACE:
                return
            start = ret >> PAGE_SHIFT
        else:
            return
        pages = pages_of(parse_int(args[1]))
        if pages > 0:
            self.share(task, start, start + pages)

    def merge(self, mine, theirs):
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

    # -- records -----------------------------------------------------------
    def tid_of(self, task):
        if task.tid is None:
            task.tid = self.n_threads
            self.n_threads += 1
            self.thread_tasks.append(task)
        return task.tid

    def asid_of(self, aspace):
        if aspace.id is None:
            aspace.id = self.n_as
            self.n_as += 1
        return aspace.id

    def commit(self, ts, entries):
        """Write the records of one system call (never split by -n): each
        entry is (task, its address space, kind, kind's arguments...)."""
        if not entries:
            return
        if self.truncated or (self.max_events is not None and
                              len(self.events) + len(entries) > self.max_events):
            self.truncated = True
            self.dropped_events += len(entries)
            return
        ts = max(ts, self.out_ts)
        self.out_ts = ts
        for entry in entries:
            task, aspace, kind = entry[:3]
            tid = self.tid_of(task)
            asid = self.asid_of(aspace)
            if kind in KINDS_V1:
                addr, pages, extra = entry[3:]
                self.events.append((ts, tid, asid, kind, addr, pages, extra))
                continue
            if kind == 'clone':
                tail = '%d' % self.tid_of(entry[3])
            elif kind == 'fork':
                child = entry[3]
                tail = '%d %d' % (self.tid_of(child), self.asid_of(child.aspace))
            elif kind == 'exec':
                tail = '%d' % self.asid_of(entry[3])
            elif kind == 'block':
                tail = '%d %s' % (min(entry[3], ts), entry[4])
            else:
                tail = None     # exit
            self.events.append((ts, tid, asid, kind, None, None, tail))

    def syscall(self, idx, task, ts, text, resumed=False):
        call = split_call(text)
        if call is None:
            self.warn(idx, 'cannot parse: %s' % text[:80])
            return
        name, args, rest = call
        if name in BLOCK_REASON:
            if not self.v1:
                self.block(task, ts, name, args, rest, resumed)
            return
        m = RET_RE.match(rest)
        if not m:
            self.warn(idx, 'no return value: %s' % text[:80])
            return
        ret_tok = m.group(1)
        if ret_tok == '?' or ret_tok.startswith('-'):
            return              # failed, interrupted or no return (exit)
        try:
            ret = int(ret_tok, 0)
        except ValueError:
            return
        try:
            self.apply(idx, task, ts, name, args, ret)
        except (IndexError, ValueError) as exc:
            self.warn(idx, 'bad arguments (%s): %s' % (exc, text[:80]))

    def block(self, task, ts, name, args, rest, resumed):
        """A call that may block: a block record if strace -T says it took
        at least block_min_ns, whatever it returned."""
        m = DURATION_RE.search(rest)
        if not m:
            return
        d = int(m.group(1)) * 1000000000 + int(m.group(2)[:9].ljust(9, '0'))
        if d < self.block_min_ns:
            return
        if name == 'futex' and not futex_waits(args):
            return
        # A one-line call's time is its entry: it ended d later.
        end = ts if resumed else ts + d
        self.commit(end, [(task, task.aspace, 'block', d, BLOCK_REASON[name])])

    def apply(self, idx, task, ts, name, args, ret):
        if self.infer:
            self.infer_sharing(task, name, args, ret)
        a = task.aspace
        group = []
        if name in ('mmap', 'mmap2'):
            if ret & (PAGE - 1):
                raise ValueError('unaligned mmap result')
            start = ret >> PAGE_SHIFT
            pages = pages_of(parse_int(args[1]))
            prot = parse_flags(args[2], PROT)
            flags = parse_flags(args[3], MAP)
            if pages <= 0:
                return
            end = start + pages
            if flags & MAP_FIXED and not flags & MAP_FIXED_NOREPLACE:
                for s, e in a.mapped_runs(start, end):
                    group.append(('munmap', s, e - s, None))
            a.remove(start, end)
            a.add(start, end)
            group.append(('mmap', start, pages, rwx(prot)))
        elif name == 'munmap':
            start = parse_int(args[0]) >> PAGE_SHIFT
            pages = pages_of(parse_int(args[1]))
            a.remove(start, start + pages)
            group.append(('munmap', start, pages, None))
        elif name in ('mprotect', 'pkey_mprotect'):
            start = parse_int(args[0]) >> PAGE_SHIFT
            pages = pages_of(parse_int(args[1]))
            group.append(('mprotect', start, pages,
                          rwx(parse_flags(args[2], PROT))))
        elif name == 'madvise':
            advice = parse_flags(args[2], MADV)
            if advice not in (MADV_DONTNEED, MADV_FREE):
                return
            start = parse_int(args[0]) >> PAGE_SHIFT
            group.append(('dontneed', start, pages_of(parse_int(args[1])),
                          None))
        elif name == 'mremap':
            old = parse_int(args[0]) >> PAGE_SHIFT
            old_pages = pages_of(parse_int(args[1]))
            new_pages = pages_of(parse_int(args[2]))
            flags = parse_flags(args[3], MREMAP) if len(args) > 3 else 0
            new = ret >> PAGE_SHIFT
            if flags & MREMAP_FIXED:
                for s, e in a.mapped_runs(new, new + new_pages):
                    group.append(('munmap', s, e - s, None))
            if not flags & MREMAP_DONTUNMAP:
                a.remove(old, old + old_pages)
            a.remove(new, new + new_pages)
            a.add(new, new + new_pages)
            group.append(('mremap', old, old_pages, (new, new_pages)))
        elif name == 'brk':
            want = parse_int(args[0])
            old = a.brk
            a.brk = ret
            if want == 0 or want != ret:
                return          # a query, or a refused change
            if old is None:
                self.warn(idx, 'brk change with unknown old break')
                return
            old_end = pages_of(old)
            new_end = pages_of(ret)
            if new_end > old_end:
                a.add(old_end, new_end)
                group.append(('mmap', old_end, new_end - old_end, 'rw-'))
            elif new_end < old_end:
                a.remove(new_end, old_end)
                group.append(('munmap', new_end, old_end - new_end, None))
        elif name in CLONE_NAMES:
            if ret <= 0:
                return
            child = self.early.pop(ret, None)
            if child is not None and child.parent is task:
                return          # made, with its record, when first seen
            if self.tasks.get(ret) is not None:
                self.warn(idx, 'pid %d reused while live' % ret)
            child = self.spawn(task, ret,
                               clone_flags(name, 'x(' + ','.join(args)))
            self.created(task, child, ts)
            return
        elif name in EXEC_NAMES:
            if ret != 0:
                return
            # The other threads of the process end; the caller goes on,
            # alone, in a fresh address space.  (The first execve of the
            # traced command, by a task with no record yet, has no record:
            # its address space had none either.)
            exits = [(d, d.aspace, 'exit') for d in task.doomed]
            task.doomed = []
            for other in self.live_tasks():
                if other is not task and other.group is task.group:
                    self.kill(other)
                    exits.append((other, other.aspace, 'exit'))
            new = AddressSpace()
            new.members = 1
            task.aspace.members -= 1
            last = [(task, task.aspace, 'exec', new)] \
                if task.tid is not None else []
            task.aspace = new
            self.commit_exits(ts, exits, last)
            return
        # mmap's munmap-before-mmap etc. are one group: never split by -n.
        self.commit(ts, [(task, a, k, s, p, x) for k, s, p, x in group
                         if p > 0 or k == 'mremap'])

    # -- main loop ---------------------------------------------------------
    def convert(self, lines):
        recs = self.parse(lines)
        if not recs:
            raise ConvertError('no strace lines with -ttt timestamps found')
        self.process_events = has_process_events(recs)
        if not self.process_events:
            # First pass: which tasks share an address space; the second
            # gives each group of them one address space from the start.
            first = Converter(v1=True, infer=True)
            first.process_events = False
            first.run(recs)
            groups = {}

            def shared(seq, find=first.sharing.find):
                return groups.setdefault(find(seq), AddressSpace())
            self.shared = shared
        self.run(recs)
        if not self.process_events:
            self.notes.append(NO_PROCESS_EVENTS % (
                self.n_threads, '' if self.n_threads == 1 else 's',
                self.n_as, '' if self.n_as == 1 else 's'))
        return self.events

    def run(self, recs):
        for idx, (pid, ts, body) in enumerate(recs):
            m = CLONE_RESULT_RE.match(body)
            if m:
                self.future.setdefault(int(m.group(1)), collections.deque()) \
                    .append((idx, pid))
        self.t0 = recs[0][1]
        for idx, (pid, ts, body) in enumerate(recs):
            ts -= self.t0
            if ts < self.last_ts:
                self.warn(idx, 'time goes back by %d ns' % (self.last_ts - ts))
                ts = self.last_ts
            self.last_ts = ts
            self.cur_ts = ts
            self.line(idx, pid, ts, body)
        # Leaders superseded by an execve whose result never came.
        for task in self.live_tasks():
            if task.doomed:
                self.commit_exits(self.last_ts, [(d, d.aspace, 'exit')
                                                 for d in task.doomed])
                task.doomed = []

    def line(self, idx, pid, ts, body):
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
            task = self.task_for(pid, idx, body, False)
            if task is None or task.pending is None:
                self.warn(idx, 'resumed call without its start: dropped')
                return
            name, text = task.pending
            task.pending = None
            if name != m.group(1):
                self.warn(idx, '%s resumed while %s was pending' %
                          (m.group(1), name))
                return
            self.syscall(idx, task, ts, text + m.group(2), resumed=True)
            return
        if not CALL_RE.match(body):
            return
        task = self.task_for(pid, idx, body, True)
        if task is None:
            return
        u = UNFINISHED_RE.search(body)
        if u:
            if task.pending is not None:
                self.warn(idx, 'new call while %s pending' % task.pending[0])
            task.pending = (CALL_RE.match(body).group(1), body[:u.start()])
            return
        self.syscall(idx, task, ts, body)

    def superseded(self, idx, pid, tid):
        # A non-leader thread `tid` called execve: it goes on with the
        # leader's pid (the line's own pid), and the old leader is gone;
        # its exit record comes with the execve's result.
        task = self.tasks.get(tid)
        if task is None:
            self.warn(idx, 'execve by unknown pid %d' % tid)
            return
        leader = task.group.leader
        if pid is not None and self.tasks.get(pid) is not None:
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

    # -- output ------------------------------------------------------------
    def render(self, comments=(), pid_map=False):
        kinds = KINDS_V1 if self.v1 else KINDS_V2
        counts = collections.Counter(e[3] for e in self.events)
        out = [FORMAT_HEADER_V1 if self.v1 else FORMAT_HEADER_V2]
        for c in comments:
            for line in c.split('\n'):
                out.append(('# ' + line).rstrip())
        out.append('# threads: %d' % self.n_threads)
        out.append('# address-spaces: %d' % self.n_as)
        out.append('# events: %d (%s)' % (
            len(self.events),
            ', '.join('%s %d' % (k, counts[k]) for k in kinds)))
        out.append('# duration_ns: %d' %
                   (self.events[-1][0] if self.events else 0))
        if not self.v1:
            out.append('# block-min-ns: %d' % self.block_min_ns)
            out.append('# process-events: ' + (
                'yes' if self.process_events else
                'no (address spaces inferred from shared mappings)'))
        if self.truncated:
            out.append('# truncated: kept the first %d of %d events '
                       '(--max-events %d)' % (
                           len(self.events),
                           len(self.events) + self.dropped_events,
                           self.max_events))
        if pid_map:
            for tid, task in enumerate(self.thread_tasks):
                out.append('# thread %d: pid %s' % (tid, task.pid))
        # Addresses are kept as page numbers and written as byte addresses.
        for ts, tid, asid, kind, addr, pages, extra in self.events:
            if addr is None:
                line = '%d %d %d %s' % (ts, tid, asid, kind)
                if extra is not None:
                    line += ' ' + extra
                out.append(line)
                continue
            line = '%d %d %d %s %x %d' % (ts, tid, asid, kind,
                                          addr << PAGE_SHIFT, pages)
            if isinstance(extra, tuple):
                line += ' %x %d' % (extra[0] << PAGE_SHIFT, extra[1])
            elif extra is not None:
                line += ' ' + extra
            out.append(line)
        return '\n'.join(out) + '\n'


def clone_flags(name, text):
    """CLONE_* flags of a clone-family call, from its (entry) text."""
    if name == 'fork':
        return 0
    if name == 'vfork':
        return CLONE_VM | CLONE_VFORK
    m = FLAGS_RE.search(text)
    if m:
        return parse_flags(m.group(1), CLONE)
    if name == 'clone':         # -X raw: flags are the first argument
        first = text[text.find('(') + 1:].split(',')[0]
        try:
            return parse_int(first)
        except ValueError:
            pass
    return 0


def convert_text(text, pid_map=False, notes=None, **kw):
    conv = Converter(**kw)
    conv.convert(text.splitlines(True))
    if notes is not None:
        notes.extend(conv.notes)
    return conv.render(pid_map=pid_map)


# ---------------------------------------------------------------------------
# Self-test: strace snippets and their exact expected conversions.

# Each entry: name, converter options, strace text, exact expected trace.
# The expectations were worked out by hand from FORMAT.md, not copied
# from a run.

MEMORY_CALLS = r'''
100 1700000000.000000 execve("/bin/prog", ["prog"], 0x7ffc /* 3 vars */) = 0
100 1700000000.000010 brk(NULL)               = 0x555555559000
100 1700000000.000020 brk(0x55555557a000)     = 0x55555557a000
100 1700000000.000030 brk(0x55555557b800)     = 0x55555557b800
100 1700000000.000040 brk(0x555555560000)     = 0x555555560000
100 1700000000.000050 brk(0x555555000000)     = 0x555555560000
100 1700000000.000060 mmap(NULL, 1974096, PROT_READ, MAP_PRIVATE|MAP_DENYWRITE, 3, 0) = 0x7f0000000000
100 1700000000.000070 mmap(0x7f0000026000, 1400832, PROT_READ|PROT_EXEC, MAP_PRIVATE|MAP_FIXED|MAP_DENYWRITE, 3, 0x26000) = 0x7f0000026000
100 1700000000.000080 mmap(0x7f00001e0000, 53072, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0 <unfinished ...>
100 1700000000.000095 <... mmap resumed>) = 0x7f00001e0000
100 1700000000.000100 mmap(NULL, 1099511627776, PROT_READ, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = -1 ENOMEM (Cannot allocate memory)
100 1700000000.000110 mprotect(0x7f00001e0000, 16384, PROT_READ) = 0
100 1700000000.000120 mprotect(0x7f1000000000, 4096, PROT_NONE) = -1 ENOMEM (Cannot allocate memory)
100 1700000000.000130 madvise(0x7f00001e0000, 8192, MADV_DONTNEED) = 0
100 1700000000.000140 madvise(0x7f00001e0000, 8192, MADV_WILLNEED) = 0
100 1700000000.000150 madvise(0x7f00001e2000, 4096, MADV_FREE) = 0
100 1700000000.000160 mremap(0x7f00001e0000, 16384, 32768, MREMAP_MAYMOVE) = 0x7f0000400000
100 1700000000.000170 munmap(0x7f0000000000, 42547) = 0
100 1700000000.000180 mmap(0x7f0000400000, 4096, PROT_READ|PROT_WRITE|PROT_EXEC, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x7f0000400000
100 1700000000.000190 mmap(0x7f0000500000, 4096, PROT_WRITE, MAP_PRIVATE|MAP_FIXED_NOREPLACE|MAP_ANONYMOUS, -1, 0) = 0x7f0000500000
100 1700000000.000200 exit_group(0)           = ?
100 1700000000.000210 +++ exited with 0 +++
'''

PROCESSES = r'''
200 1700000001.000000 execve("/usr/bin/app", ["app"], 0x7ffd /* 5 vars */) = 0
200 1700000001.000100 mmap(NULL, 8392704, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_STACK, -1, 0) = 0x7f1000000000
200 1700000001.000200 mprotect(0x7f1000001000, 8388608, PROT_READ|PROT_WRITE) = 0
200 1700000001.000300 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID, child_tid=0x7f1000800910, parent_tid=0x7f1000800910, exit_signal=0, stack=0x7f1000000000, stack_size=0x7fff00, tls=0x7f1000800640} <unfinished ...>
201 1700000001.000400 mmap(NULL, 134217728, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0 <unfinished ...>
200 1700000001.000500 <... clone3 resumed> => {parent_tid=[201]}, 88) = 201
201 1700000001.000600 <... mmap resumed>) = 0x7f0800000000
200 1700000001.000700 munmap(0x7f1000000000, 4096 <unfinished ...>
201 1700000001.000800 mprotect(0x7f0800000000, 135168, PROT_READ|PROT_WRITE) = 0
200 1700000001.000900 <... munmap resumed>) = 0
200 1700000001.001000 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f1000800910) = 202
202 1700000001.001100 mmap(0x7f0800000000, 4096, PROT_READ, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x7f0800000000
202 1700000001.001200 exit_group(0)           = ?
202 1700000001.001300 +++ exited with 0 +++
200 1700000001.001400 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=202, si_uid=0, si_status=0, si_utime=0, si_stime=0} ---
201 1700000001.001500 vfork( <unfinished ...>
203 1700000001.001600 execve("/nonexistent/tool", ["tool"], 0x7ffd /* 5 vars */) = -1 ENOENT (No such file or directory)
203 1700000001.001700 mmap(0x7f0800001000, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x7f0800001000
203 1700000001.001800 execve("/usr/bin/tool", ["tool"], 0x7ffd /* 5 vars */ <unfinished ...>
201 1700000001.001900 <... vfork resumed>) = 203
203 1700000001.002000 <... execve resumed>) = 0
203 1700000001.002100 brk(NULL)               = 0x5600000000
203 1700000001.002200 brk(0x5600021000)       = 0x5600021000
203 1700000001.002300 +++ exited with 0 +++
201 1700000001.002400 munmap(0x7f0800000000, 135168) = 0
201 1700000001.002500 exit(0)                 = ?
201 1700000001.002600 +++ exited with 0 +++
200 1700000001.002700 fork()                  = 201
201 1700000001.002800 munmap(0x7f1000001000, 8192) = 0
200 1700000001.002900 exit_group(0)           = ?
201 1700000001.003000 +++ exited with 0 +++
200 1700000001.003100 +++ exited with 0 +++
'''

STDERR_EXEC = r'''
1700000002.000000 execve("/usr/bin/mt", ["mt"], 0x7ffe /* 2 vars */) = 0
1700000002.000010 brk(NULL)             = 0x560000000000
1700000002.000020 mmap(NULL, 8392704, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_STACK, -1, 0) = 0x7f2000000000
1700000002.000030 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID, child_tid=0x7f2000800910, parent_tid=0x7f2000800910, exit_signal=0, stack=0x7f2000000000, stack_size=0x7fff00, tls=0x7f2000800640}strace: Process 301 attached
 => {parent_tid=[301]}, 88) = 301
[pid   300] 1700000002.000040 mprotect(0x7f2000000000, 4096, PROT_NONE <unfinished ...>
[pid   301] 1700000002.000050 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f3000000000
[pid   300] 1700000002.000060 <... mprotect resumed>) = 0
[pid   301] 1700000002.000070 execve("/usr/bin/true", ["true"], 0x7ffe /* 2 vars */ <unfinished ...>
[pid   300] 1700000002.000080 munmap(0x7f3000000000, 4096) = 0
1700000002.000090 +++ superseded by execve in pid 301 +++
1700000002.000100 <... execve resumed>) = 0
1700000002.000110 brk(NULL)             = 0x561000000000
1700000002.000120 brk(0x561000001000)   = 0x561000001000
1700000002.000130 exit_group(0)         = ?
1700000002.000140 +++ exited with 0 +++
'''

O_EXEC = r'''
400 1700000003.000000 execve("./mt", ["./mt"], 0x7ffc /* 2 vars */) = 0
400 1700000003.000010 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID, child_tid=0x7f2000800910, parent_tid=0x7f2000800910, exit_signal=0, stack=0x7f2000000000, stack_size=0x7fff00, tls=0x7f2000800640} => {parent_tid=[401]}, 88) = 401
400 1700000003.000020 mmap(NULL, 4096, PROT_READ, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f4000000000
401 1700000003.000030 munmap(0x7f4000000000, 4096) = 0
401 1700000003.000040 execve("/bin/true", ["true"], 0x7ffc /* 2 vars */ <pid changed to 400 ...>
400 1700000003.000050 +++ superseded by execve in pid 401 +++
400 1700000003.000060 <... execve resumed>) = 0
400 1700000003.000070 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f5000000000
400 1700000003.000080 +++ exited with 0 +++
'''

EARLY_EXIT = r'''
1700000004.000000 execve("./a", ["./a"], 0x7ffc /* 2 vars */) = 0
1700000004.000010 mmap(NULL, 4096, PROT_READ, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f6000000000
1700000004.000020 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f6000000a10 <unfinished ...>
[pid   501] 1700000004.000030 +++ exited with 0 +++
[pid   500] 1700000004.000040 <... clone resumed>) = 501
[pid   500] 1700000004.000050 munmap(0x7f6000000000, 4096) = 0
'''

SELF_TESTS = [
    # brk: grow 33 pages, grow to a partial page (rounded up), shrink,
    # refused shrink (returns the old break).  MAP_FIXED inside a mapping,
    # and one straddling a mapping's end (only the mapped part is
    # unmapped), joined unfinished/resumed mmap (resumed line's time),
    # failed calls, madvise advice, mremap, MAP_FIXED over the mremap
    # target, MAP_FIXED_NOREPLACE (never over a mapping).
    ('v1: memory calls, brk, MAP_FIXED, failures, unfinished/resumed', {'v1': True},
     MEMORY_CALLS,
     '''# tlbpol-trace v1
# threads: 1
# address-spaces: 1
# events: 16 (mmap 7, munmap 5, mprotect 1, dontneed 2, mremap 1)
# duration_ns: 190000
20000 0 0 mmap 555555559000 33 rw-
30000 0 0 mmap 55555557a000 2 rw-
40000 0 0 munmap 555555560000 28
60000 0 0 mmap 7f0000000000 482 r--
70000 0 0 munmap 7f0000026000 342
70000 0 0 mmap 7f0000026000 342 r-x
95000 0 0 munmap 7f00001e0000 2
95000 0 0 mmap 7f00001e0000 13 rw-
110000 0 0 mprotect 7f00001e0000 4 r--
130000 0 0 dontneed 7f00001e0000 2
150000 0 0 dontneed 7f00001e2000 1
160000 0 0 mremap 7f00001e0000 4 7f0000400000 8
170000 0 0 munmap 7f0000000000 11
180000 0 0 munmap 7f0000400000 1
180000 0 0 mmap 7f0000400000 1 rwx
190000 0 0 mmap 7f0000500000 1 -w-
'''),

    # The same, cut after 5 events: the munmap+mmap pair of the MAP_FIXED
    # call at 70000 is not split, so 4 are kept.
    ('v1: --max-events keeps whole syscalls', {'max_events': 5, 'v1': True},
     MEMORY_CALLS,
     '''# tlbpol-trace v1
# threads: 1
# address-spaces: 1
# events: 4 (mmap 3, munmap 1, mprotect 0, dontneed 0, mremap 0)
# duration_ns: 60000
# truncated: kept the first 4 of 16 events (--max-events 5)
20000 0 0 mmap 555555559000 33 rw-
30000 0 0 mmap 55555557a000 2 rw-
40000 0 0 munmap 555555560000 28
60000 0 0 mmap 7f0000000000 482 r--
'''),

    # strace -o FILE: every line starts with the pid.  200 starts thread
    # 201 (clone3, CLONE_VM|CLONE_THREAD: same address space); 201's first
    # call is resumed after the clone returns.  200 forks 202 (clone
    # without CLONE_VM): a copy of 200's address space, so its MAP_FIXED
    # over an inherited mapping unmaps it first.  201 vforks 203, which
    # shows up before vfork returns: it shares the address space until
    # its (second, successful) execve.  Pid 201 is reused after it exited:
    # a new thread, forked, new address space.  Signals and exit lines
    # make no events.  Thread ids go by first event.
    ('v1: processes: clone3 thread, clone fork, vfork+execve, pid reuse', {'v1': True},
     PROCESSES,
     '''# tlbpol-trace v1
# threads: 5
# address-spaces: 4
# events: 12 (mmap 5, munmap 5, mprotect 2, dontneed 0, mremap 0)
# duration_ns: 2800000
100000 0 0 mmap 7f1000000000 2049 ---
200000 0 0 mprotect 7f1000001000 2048 rw-
600000 1 0 mmap 7f0800000000 32768 ---
800000 1 0 mprotect 7f0800000000 33 rw-
900000 0 0 munmap 7f1000000000 1
1100000 2 1 munmap 7f0800000000 1
1100000 2 1 mmap 7f0800000000 1 r--
1700000 3 0 munmap 7f0800001000 1
1700000 3 0 mmap 7f0800001000 1 rw-
2200000 3 2 mmap 5600000000 33 rw-
2400000 1 0 munmap 7f0800000000 33
2800000 4 3 munmap 7f1000001000 2
'''),

    # strace writing to stderr: no prefix while one task is traced, then
    # "[pid N]"; strace's "Process N attached" message splits the clone3
    # line.  Thread 301 calls execve: the leader (300) is superseded and
    # 301 goes on alone, unprefixed again, in a new address space.
    ('v1: stderr output: [pid N], split line, execve by a non-leader thread', {'v1': True},
     STDERR_EXEC,
     '''# tlbpol-trace v1
# threads: 2
# address-spaces: 2
# events: 5 (mmap 3, munmap 1, mprotect 1, dontneed 0, mremap 0)
# duration_ns: 120000
20000 0 0 mmap 7f2000000000 2049 ---
50000 1 0 mmap 7f3000000000 1 rw-
60000 0 0 mprotect 7f2000000000 1 ---
80000 0 0 munmap 7f3000000000 1
120000 1 1 mmap 561000000000 1 rw-
'''),

    # strace -o FILE, execve by a non-leader thread: its entry line ends in
    # "<pid changed to N ...>" and the result is printed under the
    # leader's pid.
    ('v1: -o output: execve by a non-leader thread', {'v1': True},
     O_EXEC,
     '''# tlbpol-trace v1
# threads: 2
# address-spaces: 2
# events: 3 (mmap 2, munmap 1, mprotect 0, dontneed 0, mremap 0)
# duration_ns: 70000
20000 0 0 mmap 7f4000000000 1 r--
30000 1 0 munmap 7f4000000000 1
70000 1 1 mmap 7f5000000000 2 rw-
'''),

    # A child that exits before its parent's clone has returned, while the
    # parent's pid is not known yet: the child's exit line must not be
    # taken for the parent.  (--pid-map shows the pid found later.)
    ('v1: child exits before clone returns, parent unprefixed', {'pid_map': True, 'v1': True},
     EARLY_EXIT,
     '''# tlbpol-trace v1
# threads: 1
# address-spaces: 1
# events: 2 (mmap 1, munmap 1, mprotect 0, dontneed 0, mremap 0)
# duration_ns: 50000
# thread 0: pid 500
10000 0 0 mmap 7f6000000000 1 r--
50000 0 0 munmap 7f6000000000 1
'''),
]

BLOCKING = r'''
700 1700000005.000000 execve("./blk", ["./blk"], 0x7ffc /* 2 vars */) = 0 <0.000300>
700 1700000005.000400 mmap(NULL, 8392704, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_STACK, -1, 0) = 0x7f7000000000 <0.000012>
700 1700000005.000500 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID, child_tid=0x7f7000800910, parent_tid=0x7f7000800910, exit_signal=0, stack=0x7f7000000000, stack_size=0x7fff00, tls=0x7f7000800640} => {parent_tid=[701]}, 88) = 701 <0.000050>
700 1700000005.000600 futex(0x7f7000800910, FUTEX_WAIT_BITSET|FUTEX_CLOCK_REALTIME, 701, NULL, FUTEX_BITSET_MATCH_ANY <unfinished ...>
701 1700000005.000700 clock_nanosleep(CLOCK_MONOTONIC, 0, {tv_sec=0, tv_nsec=2000000}, NULL) = 0 <0.002050>
701 1700000005.002800 read(3, "x", 1)      = 1 <0.000049>
701 1700000005.002900 read(3,  <unfinished ...>
700 1700000005.003000 <... futex resumed>) = -1 EAGAIN (Resource temporarily unavailable) <0.002400>
700 1700000005.003100 futex(0x6000, FUTEX_WAKE_PRIVATE, 1) = 0 <0.000090>
700 1700000005.003200 epoll_wait(4, [], 8, 10) = 0 <0.010100>
701 1700000005.013400 <... read resumed>"y", 1) = 1 <0.010500>
701 1700000005.013500 wait4(-1, 0x7ffc00000000, 0, NULL) = -1 ECHILD (No child processes) <0.000010>
701 1700000005.013600 pselect6(0, NULL, NULL, NULL, {tv_sec=0, tv_nsec=60000}, NULL) = 0 (Timeout) <0.000060>
700 1700000005.013700 rt_sigtimedwait([USR1], NULL, NULL, 8 <unfinished ...>
701 1700000005.013800 munmap(0x7f7000000000, 4096) = 0 <0.000020>
700 1700000005.020000 <... rt_sigtimedwait resumed>) = ? ERESTARTSYS (To be restarted if SA_RESTART is set) <0.006300>
700 1700000005.020100 --- SIGTERM {si_signo=SIGTERM, si_code=SI_USER, si_pid=1, si_uid=0} ---
701 1700000005.020200 +++ killed by SIGTERM +++
700 1700000005.020300 +++ killed by SIGTERM +++
'''

NO_PROCESS = r'''
900 1700000007.000000 brk(NULL)               = 0x55000000 <0.000005>
900 1700000007.000010 mmap(NULL, 8392704, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_STACK, -1, 0) = 0x7f8000000000 <0.000010>
900 1700000007.000020 mprotect(0x7f8000001000, 8388608, PROT_READ|PROT_WRITE) = 0 <0.000010>
901 1700000007.000030 mmap(NULL, 134217728, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0) = 0x7f7000000000 <0.000010>
901 1700000007.000040 mprotect(0x7f7000000000, 135168, PROT_READ|PROT_WRITE) = 0 <0.000010>
903 1700000007.000050 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f9000000000 <0.000010>
903 1700000007.000060 +++ exited with 0 +++
902 1700000007.000070 mmap(NULL, 8192, PROT_READ, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f9000000000 <0.000010>
904 1700000007.000072 mmap(0x80000000, 65536, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x80000000 <0.000010>
902 1700000007.000074 mmap(0x80000000, 65536, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x80000000 <0.000010>
902 1700000007.000076 madvise(0x80000000, 65536, MADV_DONTNEED) = 0 <0.000010>
902 1700000007.000080 munmap(0x7f9000000000, 8192) = 0 <0.000010>
901 1700000007.000090 madvise(0x7f8000001000, 8368128, MADV_DONTNEED) = 0 <0.000010>
900 1700000007.000100 munmap(0x7f7000000000, 4096) = 0 <0.000010>
900 1700000007.000110 futex(0x7f8000800910, FUTEX_WAIT_BITSET|FUTEX_CLOCK_REALTIME, 901, NULL, FUTEX_BITSET_MATCH_ANY) = 0 <0.000200>
901 1700000007.000320 +++ exited with 0 +++
900 1700000007.000330 +++ exited with 0 +++
902 1700000007.000340 +++ exited with 0 +++
904 1700000007.000350 +++ exited with 0 +++
'''

NO_PROCESS_NOTE = ('this recording has no process events (clone, fork, '
                   'execve): it was not made with -e trace=process, so '
                   'threads and address spaces are inferred from shared '
                   'mappings (5 threads in 4 address spaces); record with '
                   '-e trace=memory,process for exact ones')

# Version 2: the same recordings, with their process records (clone,
# fork, exec, exit) and block records.
SELF_TESTS += [
    # One thread: its memory records as in v1, and its exit at the end.
    ('memory calls (v2: exit record)', {},
     MEMORY_CALLS,
     '''# tlbpol-trace v2
# threads: 1
# address-spaces: 1
# events: 17 (mmap 7, munmap 5, mprotect 1, dontneed 2, mremap 1, clone 0, fork 0, exec 0, exit 1, block 0)
# duration_ns: 210000
# block-min-ns: 50000
# process-events: yes
20000 0 0 mmap 555555559000 33 rw-
30000 0 0 mmap 55555557a000 2 rw-
40000 0 0 munmap 555555560000 28
60000 0 0 mmap 7f0000000000 482 r--
70000 0 0 munmap 7f0000026000 342
70000 0 0 mmap 7f0000026000 342 r-x
95000 0 0 munmap 7f00001e0000 2
95000 0 0 mmap 7f00001e0000 13 rw-
110000 0 0 mprotect 7f00001e0000 4 r--
130000 0 0 dontneed 7f00001e0000 2
150000 0 0 dontneed 7f00001e2000 1
160000 0 0 mremap 7f00001e0000 4 7f0000400000 8
170000 0 0 munmap 7f0000000000 11
180000 0 0 munmap 7f0000400000 1
180000 0 0 mmap 7f0000400000 1 rwx
190000 0 0 mmap 7f0000500000 1 -w-
210000 0 0 exit
'''),

    # The records counted by --max-events include the exit.
    ('--max-events (v2)', {'max_events': 5},
     MEMORY_CALLS,
     '''# tlbpol-trace v2
# threads: 1
# address-spaces: 1
# events: 4 (mmap 3, munmap 1, mprotect 0, dontneed 0, mremap 0, clone 0, fork 0, exec 0, exit 0, block 0)
# duration_ns: 60000
# block-min-ns: 50000
# process-events: yes
# truncated: kept the first 4 of 17 events (--max-events 5)
20000 0 0 mmap 555555559000 33 rw-
30000 0 0 mmap 55555557a000 2 rw-
40000 0 0 munmap 555555560000 28
60000 0 0 mmap 7f0000000000 482 r--
'''),

    # 201 first appears (400000) before 200's clone3 returns: its clone
    # record has that time.  The command's own first execve has no record;
    # 203's (vfork child) has.  The fork at 2700000 makes a new thread 4
    # for the reused pid 201.  Every exit line gives an exit record.
    ('processes (v2): clone, fork, vfork+exec, exit, pid reuse', {},
     PROCESSES,
     '''# tlbpol-trace v2
# threads: 5
# address-spaces: 4
# events: 22 (mmap 5, munmap 5, mprotect 2, dontneed 0, mremap 0, clone 2, fork 2, exec 1, exit 5, block 0)
# duration_ns: 3100000
# block-min-ns: 50000
# process-events: yes
100000 0 0 mmap 7f1000000000 2049 ---
200000 0 0 mprotect 7f1000001000 2048 rw-
400000 0 0 clone 1
600000 1 0 mmap 7f0800000000 32768 ---
800000 1 0 mprotect 7f0800000000 33 rw-
900000 0 0 munmap 7f1000000000 1
1000000 0 0 fork 2 1
1100000 2 1 munmap 7f0800000000 1
1100000 2 1 mmap 7f0800000000 1 r--
1300000 2 1 exit
1600000 1 0 clone 3
1700000 3 0 munmap 7f0800001000 1
1700000 3 0 mmap 7f0800001000 1 rw-
2000000 3 0 exec 2
2200000 3 2 mmap 5600000000 33 rw-
2300000 3 2 exit
2400000 1 0 munmap 7f0800000000 33
2600000 1 0 exit
2700000 0 0 fork 4 3
2800000 4 3 munmap 7f1000001000 2
3000000 4 3 exit
3100000 0 0 exit
'''),

    # Thread 1 calls execve: the superseded leader's exit record comes with
    # the execve's result, just before the exec record.
    ('stderr output (v2): execve by a non-leader thread', {},
     STDERR_EXEC,
     '''# tlbpol-trace v2
# threads: 2
# address-spaces: 2
# events: 9 (mmap 3, munmap 1, mprotect 1, dontneed 0, mremap 0, clone 1, fork 0, exec 1, exit 2, block 0)
# duration_ns: 140000
# block-min-ns: 50000
# process-events: yes
20000 0 0 mmap 7f2000000000 2049 ---
30000 0 0 clone 1
50000 1 0 mmap 7f3000000000 1 rw-
60000 0 0 mprotect 7f2000000000 1 ---
80000 0 0 munmap 7f3000000000 1
100000 0 0 exit
100000 1 0 exec 1
120000 1 1 mmap 561000000000 1 rw-
140000 1 1 exit
'''),

    ('-o output (v2): execve by a non-leader thread', {},
     O_EXEC,
     '''# tlbpol-trace v2
# threads: 2
# address-spaces: 2
# events: 7 (mmap 2, munmap 1, mprotect 0, dontneed 0, mremap 0, clone 1, fork 0, exec 1, exit 2, block 0)
# duration_ns: 80000
# block-min-ns: 50000
# process-events: yes
10000 0 0 clone 1
20000 0 0 mmap 7f4000000000 1 r--
30000 1 0 munmap 7f4000000000 1
60000 0 0 exit
60000 1 0 exec 1
70000 1 1 mmap 7f5000000000 2 rw-
80000 1 1 exit
'''),

    # The child's exit line, before its parent's clone returns, is its
    # first: the fork record then, at that time, then its exit.  Pid 500
    # never exits in the recording: no exit record for it.
    ('child exits before clone returns (v2)', {'pid_map': True},
     EARLY_EXIT,
     '''# tlbpol-trace v2
# threads: 2
# address-spaces: 2
# events: 4 (mmap 1, munmap 1, mprotect 0, dontneed 0, mremap 0, clone 0, fork 1, exec 0, exit 1, block 0)
# duration_ns: 50000
# block-min-ns: 50000
# process-events: yes
# thread 0: pid 500
# thread 1: pid 501
10000 0 0 mmap 7f6000000000 1 r--
30000 0 0 fork 1 1
30000 1 1 exit
50000 0 0 munmap 7f6000000000 1
'''),

    # strace -T.  A resumed call's block ends at the resumed line; a
    # one-line call's line is its entry, so its block ends D later
    # (2750000 = 700000 + 2050000; 13300000; 13660000).  Dropped: the
    # 49 us read and the 10 us wait4 (under 50 us), the FUTEX_WAKE (not a
    # wait).  Kept whatever they returned: EAGAIN, ERESTARTSYS.
    ('block records from strace -T', {},
     BLOCKING,
     '''# tlbpol-trace v2
# threads: 2
# address-spaces: 1
# events: 11 (mmap 1, munmap 1, mprotect 0, dontneed 0, mremap 0, clone 1, fork 0, exec 0, exit 2, block 6)
# duration_ns: 20300000
# block-min-ns: 50000
# process-events: yes
400000 0 0 mmap 7f7000000000 2049 ---
500000 0 0 clone 1
2750000 1 0 block 2050000 sleep
3000000 0 0 block 2400000 futex
13300000 0 0 block 10100000 poll
13400000 1 0 block 10500000 read
13660000 1 0 block 60000 poll
13800000 1 0 munmap 7f7000000000 1
20000000 0 0 block 6300000 sleep
20200000 1 0 exit
20300000 0 0 exit
'''),

    # --block-min-ns 0 keeps the 1 us nanosleep (ending at 201000), still
    # not the FUTEX_WAKE, nor the read without a -T time.  A block that
    # would start before the trace (103 us ending at 100 us) is cut to
    # start at 0.  Pid 801 (of unknown origin) has no record, so no exit
    # record either.
    ('--block-min-ns 0, a block cut at the start', {'block_min_ns': 0},
     r'''
800 1700000006.000000 futex(0x7000, FUTEX_WAIT_PRIVATE, 0, NULL <unfinished ...>
801 1700000006.000050 exit(0)                 = ?
801 1700000006.000060 +++ exited with 0 +++
800 1700000006.000100 <... futex resumed>) = 0 <0.000103>
800 1700000006.000200 nanosleep({tv_sec=0, tv_nsec=1000}, NULL) = 0 <0.000001>
800 1700000006.000300 futex(0x7000, FUTEX_WAKE_PRIVATE, 1) = 0 <0.000002>
800 1700000006.000400 read(0, "", 1)         = 0
800 1700000006.000500 exit_group(0)           = ?
800 1700000006.000510 +++ exited with 0 +++
''',
     '''# tlbpol-trace v2
# threads: 1
# address-spaces: 1
# events: 3 (mmap 0, munmap 0, mprotect 0, dontneed 0, mremap 0, clone 0, fork 0, exec 0, exit 1, block 2)
# duration_ns: 510000
# block-min-ns: 0
# process-events: yes
100000 0 0 block 100000 futex
201000 0 0 block 1000 sleep
510000 0 0 exit
'''),

    # strace -e trace=memory: no clone, fork or execve anywhere.  901
    # madvises (at 90000) the stack 900 mapped: one address space for
    # both, from their first records on.  902 unmaps what 903 had mapped
    # at the same address, but 903 has exited; 902 and 904 both map
    # 0x80000000, and 902's madvise there is of its own mapping: 902, 903
    # and 904 are processes of their own.  The stderr message says so.
    ('no process events: address spaces inferred', {},
     NO_PROCESS,
     '''# tlbpol-trace v2
# threads: 5
# address-spaces: 4
# events: 18 (mmap 6, munmap 2, mprotect 2, dontneed 2, mremap 0, clone 0, fork 0, exec 0, exit 5, block 1)
# duration_ns: 350000
# block-min-ns: 50000
# process-events: no (address spaces inferred from shared mappings)
10000 0 0 mmap 7f8000000000 2049 ---
20000 0 0 mprotect 7f8000001000 2048 rw-
30000 1 0 mmap 7f7000000000 32768 ---
40000 1 0 mprotect 7f7000000000 33 rw-
50000 2 1 mmap 7f9000000000 2 rw-
60000 2 1 exit
70000 3 2 mmap 7f9000000000 2 r--
72000 4 3 mmap 80000000 16 rw-
74000 3 2 mmap 80000000 16 rw-
76000 3 2 dontneed 80000000 16
80000 3 2 munmap 7f9000000000 2
90000 1 0 dontneed 7f8000001000 2043
100000 0 0 munmap 7f7000000000 1
310000 0 0 block 200000 futex
320000 1 0 exit
330000 0 0 exit
340000 3 2 exit
350000 4 3 exit
''', [NO_PROCESS_NOTE]),

    # --v1 infers the address spaces too (and says so on stderr).
    ('no process events, --v1', {'v1': True},
     NO_PROCESS,
     '''# tlbpol-trace v1
# threads: 5
# address-spaces: 4
# events: 12 (mmap 6, munmap 2, mprotect 2, dontneed 2, mremap 0)
# duration_ns: 100000
10000 0 0 mmap 7f8000000000 2049 ---
20000 0 0 mprotect 7f8000001000 2048 rw-
30000 1 0 mmap 7f7000000000 32768 ---
40000 1 0 mprotect 7f7000000000 33 rw-
50000 2 1 mmap 7f9000000000 2 rw-
70000 3 2 mmap 7f9000000000 2 r--
72000 4 3 mmap 80000000 16 rw-
74000 3 2 mmap 80000000 16 rw-
76000 3 2 dontneed 80000000 16
80000 3 2 munmap 7f9000000000 2
90000 1 0 dontneed 7f8000001000 2043
100000 0 0 munmap 7f7000000000 1
''', [NO_PROCESS_NOTE]),
]


def self_test():
    failed = 0
    for test in SELF_TESTS:
        name, opts, text, expected = test[:4]
        want_notes = test[4] if len(test) > 4 else []
        notes = []
        got = convert_text(text.lstrip('\n'), notes=notes, **opts)
        bad_notes = len(notes) != len(want_notes) or \
            any(w not in n for w, n in zip(want_notes, notes))
        if got != expected or bad_notes:
            failed += 1
            sys.stdout.write('FAIL: %s\n' % name)
            sys.stdout.writelines(difflib.unified_diff(
                expected.splitlines(True), got.splitlines(True),
                'expected', 'got'))
            if bad_notes:
                sys.stdout.write('stderr notes: expected %r, got %r\n' %
                                 (want_notes, notes))
        else:
            sys.stdout.write('ok: %s\n' % name)
    sys.stdout.write('%d of %d self-tests failed\n' % (failed, len(SELF_TESTS))
                     if failed else 'all %d self-tests passed\n' % len(SELF_TESTS))
    return 1 if failed else 0


def main(argv=None):
    ap = argparse.ArgumentParser(
        description='Convert `strace $(cat lab/trace/strace-options)` output '
                    'into a tlbpol-trace v2 (or v1) text trace (see FORMAT.md).')
    ap.add_argument('input', nargs='?', default='-',
                    help='strace output file (default: standard input)')
    ap.add_argument('-o', '--output', default='-',
                    help='trace file to write (default: standard output)')
    ap.add_argument('-c', '--comment', action='append', default=[],
                    help='header comment line (repeatable)')
    ap.add_argument('-n', '--max-events', type=int, default=None,
                    help='keep only the first N events (never splitting the '
                         'events of one syscall)')
    ap.add_argument('--v1', action='store_true',
                    help='write version 1 of the format (memory records only)')
    ap.add_argument('--block-min-ns', type=int, default=BLOCK_MIN_NS,
                    metavar='NS',
                    help='write a block record only for a call that blocked '
                         'at least NS nanoseconds (default %(default)s)')
    ap.add_argument('--pid-map', action='store_true',
                    help='add a "# thread T: pid P" comment per thread')
    ap.add_argument('--expect', metavar='FILE',
                    help='compare the output with FILE instead of writing it; '
                         'exit 1 on a difference')
    ap.add_argument('-v', '--verbose', action='store_true',
                    help='report each dropped or doubtful line on stderr')
    ap.add_argument('--self-test', action='store_true',
                    help='run the embedded examples and exit')
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    for c in args.comment:
        for line in c.split('\n'):
            if len(('# ' + line).encode('utf-8')) > MAX_LINE:
                ap.error('comment line longer than %d bytes' % MAX_LINE)

    if args.input == '-':
        lines = sys.stdin.readlines()
    else:
        with open(args.input, encoding='utf-8', errors='replace') as f:
            lines = f.readlines()
    if args.block_min_ns < 0:
        ap.error('--block-min-ns must be at least 0')
    conv = Converter(max_events=args.max_events, verbose=args.verbose,
                     v1=args.v1, block_min_ns=args.block_min_ns)
    try:
        conv.convert(lines)
    except ConvertError as exc:
        sys.stderr.write('strace2trace: %s\n' % exc)
        return 2
    for note in conv.notes:
        sys.stderr.write('strace2trace: %s\n' % note)
    text = conv.render(args.comment, args.pid_map)
    if conv.warnings and not args.verbose:
        sys.stderr.write('strace2trace: %d lines dropped or doubtful '
                         '(-v lists them)\n' % conv.warnings)

    if args.expect:
        with open(args.expect, encoding='utf-8') as f:
            expected = f.read()
        if expected == text:
            sys.stdout.write('strace2trace: output matches %s\n' % args.expect)
            return 0
        sys.stdout.writelines(difflib.unified_diff(
            expected.splitlines(True), text.splitlines(True),
            args.expect, 'converted'))
        return 1
    if args.output == '-':
        sys.stdout.write(text)
    else:
        with open(args.output, 'w', encoding='utf-8') as f:
            f.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
