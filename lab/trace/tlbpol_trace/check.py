# SPDX-License-Identifier: MIT
"""The trace checker: every rule of FORMAT.md that can be seen in one
file, and, when the header has the "# threads:", "# address-spaces:",
"# events:", "# duration_ns:", "# block-min-ns:" and "# process-events:"
lines that strace2trace.py writes, that they agree with the records.

Written apart from the converter (it imports none of its modules) so that
it checks the converter's output rather than repeating its assumptions."""

import re
import sys
from typing import Dict, List, Optional, Set, Tuple

KINDS_V1 = ('mmap', 'munmap', 'mprotect', 'dontneed', 'mremap')
KINDS_V2 = KINDS_V1 + ('clone', 'fork', 'exec', 'exit', 'block')
KINDS_V3 = KINDS_V2 + ('fault',)
# Number of fields of each v2 process or block record, and v3's fault.
FIELDS = {'clone': 5, 'fork': 6, 'exec': 5, 'exit': 4, 'block': 6,
          'fault': 6}
REASONS = ('futex', 'poll', 'sleep', 'wait', 'read')
FAULT_HOWS = ('read', 'write', 'cow')
HEADERS = {'# tlbpol-trace v1': 1, '# tlbpol-trace v2': 2,
           '# tlbpol-trace v3': 3}
DEC = re.compile(r'^(0|[1-9][0-9]*)$')
HEX = re.compile(r'^[0-9a-f]+$')
PROT = re.compile(r'^[r-][w-][x-]$')
HEADER_NUM = re.compile(r'^# (threads|address-spaces|events|duration_ns|'
                        r'block-min-ns): (\d+)')
HEADER_KINDS = re.compile(r'^# events: \d+ \((.*)\)$')
HEADER_PROCESS = re.compile(r'^# process-events: (yes|no)\b')
PAGE = 4096
MAX_LINE = 511                  # bytes, newline excluded (FORMAT.md)
MAX_ERRORS = 20                 # reported per file


def aligned(text: str) -> bool:
    return bool(HEX.match(text)) and len(text) <= 16 and \
        int(text, 16) % PAGE == 0


class TraceCheck:
    """The state of one file's check, fed its lines in order."""

    def __init__(self, path: str, first: Optional[str]) -> None:
        self.path = path
        self.errors: List[str] = []
        version = HEADERS.get(first) if first is not None else None
        if version is None:
            self.err(1, 'first line must be "# tlbpol-trace v1", '
                     '"# tlbpol-trace v2" or "# tlbpol-trace v3"')
            version = 2
        self.version = version
        self.kinds = (KINDS_V1, KINDS_V2, KINDS_V3)[version - 1]
        self.last_t = 0
        self.n_threads = 0
        self.n_spaces = 0
        self.thread_as: Dict[int, int] = {}  # thread -> its address space (v2)
        self.ended: Set[int] = set()        # threads that have an exit record
        self.counts = dict.fromkeys(self.kinds, 0)
        self.header: Dict[str, int] = {}
        self.process_events: Optional[str] = None
        self.n = 0

    def err(self, lineno: int, msg: str) -> None:
        if len(self.errors) < MAX_ERRORS:
            self.errors.append('%s:%d: %s' % (self.path, lineno, msg))

    def thread(self, lineno: int, text: str,
               new: bool = False) -> Tuple[int, bool]:
        """A thread id field: ids are given in order of first appearance;
        new: it must appear for the first time (a clone or fork child)."""
        t = int(text)
        if t == self.n_threads:
            self.n_threads += 1
            return t, True
        if t > self.n_threads:
            self.err(lineno, 'thread %d before thread %d (ids go by first '
                     'appearance)' % (t, self.n_threads))
            self.n_threads = t + 1
            return t, True
        if new:
            self.err(lineno, 'thread %d made again (a child must be new)' % t)
        elif t in self.ended:
            self.err(lineno, 'thread %d has a record after its exit' % t)
        return t, False

    def space(self, lineno: int, text: str, new: bool = False) -> int:
        a = int(text)
        if a == self.n_spaces:
            self.n_spaces += 1
        elif a > self.n_spaces:
            self.err(lineno, 'address space %d before address space %d (ids '
                     'go by first appearance)' % (a, self.n_spaces))
            self.n_spaces = a + 1
        elif new:
            self.err(lineno, 'address space %d made again (fork and exec '
                     'make a new one)' % a)
        return a

    def line(self, lineno: int, line: str) -> None:
        if len(line.encode('utf-8')) > MAX_LINE:
            self.err(lineno, 'line longer than %d bytes' % MAX_LINE)
        if line.startswith('#'):
            if not self.n:      # header lines come before the records
                self.header_line(line)
        elif line.strip():
            self.record(lineno, line.split())

    def header_line(self, line: str) -> None:
        m = HEADER_NUM.match(line)
        if m:
            self.header[m.group(1)] = int(m.group(2))
        m = HEADER_KINDS.match(line)
        if m:
            for part in m.group(1).split(', '):
                k, _, v = part.partition(' ')
                self.header['kind ' + k] = int(v) if DEC.match(v) else -1
        m = HEADER_PROCESS.match(line)
        if m:
            self.process_events = m.group(1)

    def numbers(self, f: List[str]) -> List[Tuple[str, str]]:
        """The decimal fields of a record (its kind is known)."""
        kind = f[3]
        nums = [('time_ns', f[0]), ('thread', f[1]), ('as', f[2])]
        if kind in ('clone', 'fork'):
            nums.append(('child thread', f[4]))
        if kind == 'fork':
            nums.append(('child as', f[5]))
        if kind == 'exec':
            nums.append(('new as', f[4]))
        if kind == 'block':
            nums.append(('duration', f[4]))
        if kind in KINDS_V1:
            nums.append(('pages', f[5]))
        return nums

    def record(self, lineno: int, f: List[str]) -> None:
        if len(f) < 4:
            self.err(lineno, 'fewer than 4 fields')
            return
        t, tid, asid, kind = f[:4]
        if kind not in self.kinds:
            self.err(lineno, 'unknown kind %r (v%d)' % (kind, self.version))
            return
        want = FIELDS.get(kind)
        if want is None and len(f) < 6:
            self.err(lineno, '%s: fewer than 6 fields' % kind)
            return
        if want is not None and len(f) != want:
            self.err(lineno, '%s needs %d fields, not %d' %
                     (kind, want, len(f)))
            return
        bad = [name for name, v in self.numbers(f) if not DEC.match(v)]
        if bad:
            self.err(lineno, '%s is not a decimal number' % bad[0])
            return
        self.counts[kind] += 1
        self.n += 1
        if int(t) < self.last_t:
            self.err(lineno, 'time goes back (%s < %d)' % (t, self.last_t))
        self.last_t = max(self.last_t, int(t))
        me, first = self.thread(lineno, tid)
        a = self.space(lineno, asid)
        if self.version >= 2:
            if not first and self.thread_as.get(me) != a:
                self.err(lineno, 'thread %d is in address space %s, not %d' %
                         (me, self.thread_as.get(me), a))
            self.thread_as[me] = a
        if kind in KINDS_V1:
            self.memory(lineno, kind, f[4], f[5], f[6:])
        else:
            self.process(lineno, int(t), me, a, kind, f)

    def memory(self, lineno: int, kind: str, addr: str, pages: str,
               extra: List[str]) -> None:
        if not aligned(addr):
            self.err(lineno, 'addr is not a page-aligned hex address: %r'
                     % addr)
        if int(pages) == 0 and kind != 'mremap':
            self.err(lineno, 'zero pages')
        if kind in ('mmap', 'mprotect'):
            if len(extra) != 1 or not PROT.match(extra[0]):
                self.err(lineno, '%s needs one protection field rwx/-' % kind)
        elif kind == 'mremap':
            if len(extra) != 2 or not aligned(extra[0]) or \
                    not DEC.match(extra[1]) or int(extra[1]) == 0:
                self.err(lineno, 'mremap needs new_addr (hex) new_pages (>0)')
        elif extra:
            self.err(lineno, '%s takes no extra field' % kind)

    def process(self, lineno: int, t: int, me: int, a: int, kind: str,
                f: List[str]) -> None:
        """A v2 process or block record, or a v3 fault."""
        if kind in ('clone', 'fork'):
            child, _ = self.thread(lineno, f[4], new=True)
            if kind == 'clone':
                self.thread_as[child] = a
            else:
                self.thread_as[child] = self.space(lineno, f[5], new=True)
        elif kind == 'exec':
            self.thread_as[me] = self.space(lineno, f[4], new=True)
        elif kind == 'exit':
            self.ended.add(me)
        elif kind == 'fault':
            if not aligned(f[4]):
                self.err(lineno, 'fault addr is not a page-aligned hex '
                         'address: %r' % f[4])
            if f[5] not in FAULT_HOWS:
                self.err(lineno, 'fault %r is none of %s' %
                         (f[5], ', '.join(FAULT_HOWS)))
        elif kind == 'block':
            d = int(f[4])
            if d > t:
                self.err(lineno, 'block of %d ns starts before the trace' % d)
            if d < self.header.get('block-min-ns', 0):
                self.err(lineno, 'block of %d ns, under block-min-ns %d' %
                         (d, self.header['block-min-ns']))
            if f[5] not in REASONS:
                self.err(lineno, 'block reason %r is none of %s' %
                         (f[5], ', '.join(REASONS)))

    def finish(self) -> str:
        """The header checked against the records; the summary line."""
        expect = {'threads': self.n_threads, 'address-spaces': self.n_spaces,
                  'events': self.n, 'duration_ns': self.last_t}
        expect.update(('kind ' + k, v) for k, v in self.counts.items())
        for key, value in self.header.items():
            if key == 'block-min-ns':
                continue
            if expect.get(key) != value:
                self.err(0, 'header says %s %d, the records give %s' %
                         (key, value, expect.get(key)))
        if self.process_events == 'no':
            made = sum(self.counts.get(k, 0) for k in ('clone', 'fork', 'exec'))
            if made:
                self.err(0, 'process-events: no, but %d clone, fork or exec '
                         'records' % made)
        return '%s: v%d, %d events (%s), %d threads, %d address spaces, ' \
            '%d ns' % (self.path, self.version, self.n,
                       ', '.join('%s %d' % (k, self.counts[k])
                                 for k in self.kinds),
                       self.n_threads, self.n_spaces, self.last_t)


def check_lines(path: str, lines: List[str]) -> Tuple[str, List[str]]:
    """(summary line, errors) of a file's lines (newlines removed)."""
    c = TraceCheck(path, lines[0] if lines else None)
    for lineno, line in enumerate(lines, 1):
        c.line(lineno, line)
    summary = c.finish()
    return summary, c.errors


def check(path: str) -> Tuple[str, List[str]]:
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    if lines and lines[-1] == '':
        lines.pop()
    return check_lines(path, lines)


def main(argv: List[str]) -> int:
    if argv == ['--self-test']:
        from .selftest import check_self_test
        return check_self_test()
    if not argv:
        sys.stderr.write('usage: checktrace.py FILE... | --self-test\n')
        return 2
    bad = 0
    for path in argv:
        summary, errors = check(path)
        if errors:
            bad += 1
            print('FAIL ' + summary)
            for e in errors:
                print('  ' + e)
        else:
            print('ok ' + summary)
    return 1 if bad else 0
