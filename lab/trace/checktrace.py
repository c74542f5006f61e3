#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check that files follow the tlbpol-trace format, v1 or v2 (FORMAT.md).

    checktrace.py FILE...
    checktrace.py --self-test

Checks every rule of FORMAT.md that can be seen in one file, and, when the
header has the "# threads:", "# address-spaces:", "# events:",
"# duration_ns:", "# block-min-ns:" and "# process-events:" lines that
strace2trace.py writes, that they agree with the records.  Prints one
line per file; exits 1 if any file breaks a rule.  Written apart from
strace2trace.py (it shares no code with it) so that it checks the
converter's output rather than repeating its assumptions.
"""

import re
import sys

KINDS_V1 = ('mmap', 'munmap', 'mprotect', 'dontneed', 'mremap')
KINDS_V2 = KINDS_V1 + ('clone', 'fork', 'exec', 'exit', 'block')
# Number of fields of each v2 process or block record.
FIELDS = {'clone': 5, 'fork': 6, 'exec': 5, 'exit': 4, 'block': 6}
REASONS = ('futex', 'poll', 'sleep', 'wait', 'read')
HEADERS = {'# tlbpol-trace v1': 1, '# tlbpol-trace v2': 2}
DEC = re.compile(r'^(0|[1-9][0-9]*)$')
HEX = re.compile(r'^[0-9a-f]+$')
PROT = re.compile(r'^[r-][w-][x-]$')
PAGE = 4096
MAX_LINE = 511                  # bytes, newline excluded (FORMAT.md)


def aligned(text):
    return bool(HEX.match(text)) and len(text) <= 16 and \
        int(text, 16) % PAGE == 0


def check_lines(path, lines):
    errors = []

    def err(lineno, msg):
        if len(errors) < 20:
            errors.append('%s:%d: %s' % (path, lineno, msg))

    version = HEADERS.get(lines[0]) if lines else None
    if version is None:
        err(1, 'first line must be "# tlbpol-trace v1" or "# tlbpol-trace v2"')
        version = 2
    kinds = KINDS_V1 if version == 1 else KINDS_V2
    last_t = 0
    n_threads = 0
    n_spaces = 0
    thread_as = {}              # thread -> its address space now (v2)
    ended = set()               # threads that have an exit record
    counts = dict.fromkeys(kinds, 0)
    header = {}
    n = 0

    def thread(lineno, text, new=False):
        """A thread id field: ids are given in order of first appearance;
        new: it must appear for the first time (a clone or fork child)."""
        nonlocal n_threads
        t = int(text)
        if t == n_threads:
            n_threads += 1
            return t, True
        if t > n_threads:
            err(lineno, 'thread %d before thread %d (ids go by first '
                'appearance)' % (t, n_threads))
            n_threads = t + 1
            return t, True
        if new:
            err(lineno, 'thread %d made again (a child must be new)' % t)
        elif t in ended:
            err(lineno, 'thread %d has a record after its exit' % t)
        return t, False

    def space(lineno, text, new=False):
        nonlocal n_spaces
        a = int(text)
        if a == n_spaces:
            n_spaces += 1
        elif a > n_spaces:
            err(lineno, 'address space %d before address space %d (ids go '
                'by first appearance)' % (a, n_spaces))
            n_spaces = a + 1
        elif new:
            err(lineno, 'address space %d made again (fork and exec make '
                'a new one)' % a)
        return a

    for lineno, line in enumerate(lines, 1):
        if len(line.encode('utf-8')) > MAX_LINE:
            err(lineno, 'line longer than %d bytes' % MAX_LINE)
        if line.startswith('#'):
            if n:
                continue        # header lines come before the records
            m = re.match(r'^# (threads|address-spaces|events|duration_ns|'
                         r'block-min-ns): (\d+)', line)
            if m:
                header[m.group(1)] = int(m.group(2))
            m = re.match(r'^# events: \d+ \((.*)\)$', line)
            if m:
                for part in m.group(1).split(', '):
                    k, _, v = part.partition(' ')
                    header['kind ' + k] = int(v) if DEC.match(v) else -1
            m = re.match(r'^# process-events: (yes|no)\b', line)
            if m:
                header['process-events'] = m.group(1)
            continue
        if not line.strip():
            continue
        f = line.split()
        if len(f) < 4:
            err(lineno, 'fewer than 4 fields')
            continue
        t, tid, asid, kind = f[:4]
        if kind not in kinds:
            err(lineno, 'unknown kind %r (v%d)' % (kind, version))
            continue
        want = FIELDS.get(kind)
        if want is None and len(f) < 6:
            err(lineno, '%s: fewer than 6 fields' % kind)
            continue
        if want is not None and len(f) != want:
            err(lineno, '%s needs %d fields, not %d' % (kind, want, len(f)))
            continue
        nums = [('time_ns', t), ('thread', tid), ('as', asid)]
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
        bad = [name for name, v in nums if not DEC.match(v)]
        if bad:
            err(lineno, '%s is not a decimal number' % bad[0])
            continue
        counts[kind] += 1
        n += 1
        if int(t) < last_t:
            err(lineno, 'time goes back (%s < %d)' % (t, last_t))
        last_t = max(last_t, int(t))
        me, first = thread(lineno, tid)
        a = space(lineno, asid)
        if version == 2:
            if not first and thread_as.get(me) != a:
                err(lineno, 'thread %d is in address space %s, not %d' %
                    (me, thread_as.get(me), a))
            thread_as[me] = a
        if kind in KINDS_V1:
            addr, pages, extra = f[4], f[5], f[6:]
            if not aligned(addr):
                err(lineno, 'addr is not a page-aligned hex address: %r' % addr)
            if int(pages) == 0 and kind != 'mremap':
                err(lineno, 'zero pages')
            if kind in ('mmap', 'mprotect'):
                if len(extra) != 1 or not PROT.match(extra[0]):
                    err(lineno, '%s needs one protection field rwx/-' % kind)
            elif kind == 'mremap':
                if len(extra) != 2 or not aligned(extra[0]) or \
                        not DEC.match(extra[1]) or int(extra[1]) == 0:
                    err(lineno, 'mremap needs new_addr (hex) new_pages (>0)')
            elif extra:
                err(lineno, '%s takes no extra field' % kind)
        elif kind in ('clone', 'fork'):
            child, _ = thread(lineno, f[4], new=True)
            if kind == 'clone':
                thread_as[child] = a
            else:
                thread_as[child] = space(lineno, f[5], new=True)
        elif kind == 'exec':
            thread_as[me] = space(lineno, f[4], new=True)
        elif kind == 'exit':
            ended.add(me)
        elif kind == 'block':
            d = int(f[4])
            if d > int(t):
                err(lineno, 'block of %d ns starts before the trace' % d)
            if d < header.get('block-min-ns', 0):
                err(lineno, 'block of %d ns, under block-min-ns %d' %
                    (d, header['block-min-ns']))
            if f[5] not in REASONS:
                err(lineno, 'block reason %r is none of %s' %
                    (f[5], ', '.join(REASONS)))
    expect = {'threads': n_threads, 'address-spaces': n_spaces,
              'events': n, 'duration_ns': last_t}
    expect.update(('kind ' + k, v) for k, v in counts.items())
    for key, value in header.items():
        if key in ('block-min-ns', 'process-events'):
            continue
        if expect.get(key) != value:
            err(0, 'header says %s %d, the records give %s' %
                (key, value, expect.get(key)))
    if header.get('process-events') == 'no':
        made = sum(counts.get(k, 0) for k in ('clone', 'fork', 'exec'))
        if made:
            err(0, 'process-events: no, but %d clone, fork or exec records'
                % made)
    summary = '%s: v%d, %d events (%s), %d threads, %d address spaces, %d ns' \
        % (path, version, n, ', '.join('%s %d' % (k, counts[k]) for k in kinds),
           n_threads, n_spaces, last_t)
    return summary, errors


def check(path):
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    if lines and lines[-1] == '':
        lines.pop()
    return check_lines(path, lines)


# Self-test: one good v2 trace, and broken copies that must each be caught.
GOOD = '''# tlbpol-trace v2
# threads: 3
# address-spaces: 3
# events: 8 (mmap 1, munmap 0, mprotect 0, dontneed 0, mremap 0, clone 1, fork 1, exec 1, exit 2, block 2)
# duration_ns: 900
# block-min-ns: 100
# process-events: yes
100 0 0 mmap 7f0000000000 2 rw-
200 0 0 clone 1
300 1 0 block 150 futex
400 0 0 fork 2 1
500 2 1 exec 2
600 2 2 exit
800 1 0 block 300 sleep
900 1 0 exit
'''

BROKEN = [   # name, (good text, broken text), what the error must say
    ('first line', ('# tlbpol-trace v2', '# tlbpol-trace v3'), 'first line'),
    ('v1 with v2 kinds', ('# tlbpol-trace v2', '# tlbpol-trace v1'),
     "unknown kind 'clone'"),
    ('clone field count', ('200 0 0 clone 1', '200 0 0 clone 1 0'),
     'clone needs 5'),
    ('fork field count', ('400 0 0 fork 2 1', '400 0 0 fork 2'),
     'fork needs 6'),
    ('exit field count', ('600 2 2 exit', '600 2 2 exit 0'), 'exit needs 4'),
    ('child not new', ('400 0 0 fork 2 1', '400 0 0 fork 1 1'),
     'thread 1 made again'),
    ('ids not by first appearance', ('200 0 0 clone 1', '200 0 0 clone 2'),
     'thread 2 before thread 1'),
    ('fork into an old address space', ('400 0 0 fork 2 1',
                                        '400 0 0 fork 2 0'),
     'address space 0 made again'),
    ('wrong address space after exec', ('600 2 2 exit', '600 2 1 exit'),
     'thread 2 is in address space 2, not 1'),
    ('record after exit', ('900 1 0 exit', '900 2 2 mmap 7f0000000000 1 r--'),
     'thread 2 has a record after its exit'),
    ('block reason', ('300 1 0 block 150 futex', '300 1 0 block 150 io'),
     "block reason 'io'"),
    ('block before the trace', ('300 1 0 block 150 futex',
                                '300 1 0 block 350 futex'),
     'starts before the trace'),
    ('block under block-min-ns', ('800 1 0 block 300 sleep',
                                  '800 1 0 block 99 sleep'),
     'under block-min-ns'),
    ('negative block', ('800 1 0 block 300 sleep', '800 1 0 block -3 sleep'),
     'duration is not a decimal'),
    ('time goes back', ('500 2 1 exec 2', '50 2 1 exec 2'), 'time goes back'),
    ('header counts', ('clone 1, fork 1', 'clone 2, fork 0'),
     'header says kind clone 2'),
    ('header duration', ('# duration_ns: 900', '# duration_ns: 800'),
     'header says duration_ns 800'),
    ('process-events: no with clone', ('# process-events: yes',
                                       '# process-events: no (inferred)'),
     'process-events: no, but 3'),
]


def self_test():
    failed = 0
    summary, errors = check_lines('good', GOOD.split('\n')[:-1])
    if errors:
        failed += 1
        print('FAIL: the good trace: ' + '; '.join(errors))
    for name, (old, new), says in BROKEN:
        assert GOOD.count(old) == 1, name
        text = GOOD.replace(old, new)
        _, errors = check_lines(name, text.split('\n')[:-1])
        hit = [e for e in errors if says in e]
        if hit:
            print('ok: %s: %s' % (name, hit[0]))
        else:
            failed += 1
            print('FAIL: %s: no error saying %r (got %r)' % (name, says, errors))
    print('%d of %d self-tests failed' % (failed, len(BROKEN) + 1) if failed
          else 'all %d self-tests passed' % (len(BROKEN) + 1))
    return 1 if failed else 0


def main(argv):
    if argv == ['--self-test']:
        return self_test()
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


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
