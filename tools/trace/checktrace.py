#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check that files follow the tlbpol-trace v1 format (FORMAT.md).

    checktrace.py FILE...

Checks every rule of FORMAT.md that can be seen in one file, and, when the
header has the "# threads:", "# address-spaces:" and "# events:" lines that
strace2trace.py writes, that they agree with the events.  Prints one line
per file; exits 1 if any file breaks a rule.  Written apart from
strace2trace.py (it shares no code with it) so that it checks the
converter's output rather than repeating its assumptions.
"""

import re
import sys

KINDS = ('mmap', 'munmap', 'mprotect', 'dontneed', 'mremap')
DEC = re.compile(r'^(0|[1-9][0-9]*)$')
HEX = re.compile(r'^[0-9a-f]+$')
PROT = re.compile(r'^[r-][w-][x-]$')
PAGE = 4096
MAX_LINE = 511                  # bytes, newline excluded (FORMAT.md)


def aligned(text):
    return bool(HEX.match(text)) and len(text) <= 16 and \
        int(text, 16) % PAGE == 0


def check(path):
    errors = []

    def err(lineno, msg):
        if len(errors) < 20:
            errors.append('%s:%d: %s' % (path, lineno, msg))

    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    if lines and lines[-1] == '':
        lines.pop()
    if not lines or lines[0] != '# tlbpol-trace v1':
        err(1, 'first line must be "# tlbpol-trace v1"')
    last_t = 0
    threads = set()
    spaces = set()
    counts = dict.fromkeys(KINDS, 0)
    header = {}
    n = 0
    for lineno, line in enumerate(lines, 1):
        if len(line.encode('utf-8')) > MAX_LINE:
            err(lineno, 'line longer than %d bytes' % MAX_LINE)
        if line.startswith('#'):
            m = re.match(r'^# (threads|address-spaces|events): (\d+)', line)
            if m and n == 0:
                header[m.group(1)] = int(m.group(2))
            m = re.match(r'^# events: \d+ \((.*)\)$', line)
            if m and n == 0:
                for part in m.group(1).split(', '):
                    k, v = part.split(' ')
                    header['kind ' + k] = int(v)
            continue
        if not line.strip():
            continue
        f = line.split()
        if len(f) < 6:
            err(lineno, 'fewer than 6 fields')
            continue
        t, tid, asid, kind, addr, pages = f[:6]
        extra = f[6:]
        for name, v in (('time_ns', t), ('thread', tid), ('as', asid),
                        ('pages', pages)):
            if not DEC.match(v):
                err(lineno, '%s is not a decimal number: %r' % (name, v))
                break
        else:
            if int(t) < last_t:
                err(lineno, 'time goes back (%s < %d)' % (t, last_t))
            last_t = max(last_t, int(t))
            threads.add(int(tid))
            spaces.add(int(asid))
        if kind not in KINDS:
            err(lineno, 'unknown kind %r' % kind)
            continue
        counts[kind] += 1
        n += 1
        if not aligned(addr):
            err(lineno, 'addr is not a page-aligned hex address: %r' % addr)
        if DEC.match(pages) and int(pages) == 0 and kind != 'mremap':
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
    if threads != set(range(len(threads))):
        err(0, 'thread ids are not dense 0..%d' % (len(threads) - 1))
    if spaces != set(range(len(spaces))):
        err(0, 'address-space ids are not dense 0..%d' % (len(spaces) - 1))
    expect = {'threads': len(threads), 'address-spaces': len(spaces),
              'events': n}
    expect.update(('kind ' + k, v) for k, v in counts.items())
    for key, value in header.items():
        if expect.get(key) != value:
            err(0, 'header says %s %d, the events give %s' %
                (key, value, expect.get(key)))
    summary = '%s: %d events (%s), %d threads, %d address spaces, %d ns' % (
        path, n, ', '.join('%s %d' % (k, counts[k]) for k in KINDS),
        len(threads), len(spaces), last_t)
    return summary, errors


def main(argv):
    if not argv:
        sys.stderr.write('usage: checktrace.py FILE...\n')
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
