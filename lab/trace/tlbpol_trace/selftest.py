# SPDX-License-Identifier: MIT
"""The self-tests of strace2trace.py and checktrace.py: the cases of
../selftest/convert.cases and ../selftest/check.cases (their format is
described at the top of each)."""

import os
import shlex
import sys
from typing import Dict, List, Optional

from .check import check_lines
from .cli import convert_args, parser, read_input, render_args, \
    unified_diff

SELFTEST_DIR = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'selftest')

Case = Dict[str, List[str]]


def read_text(name: str) -> str:
    with open(os.path.join(SELFTEST_DIR, name), encoding='utf-8') as f:
        return f.read()


def read_cases(name: str) -> List[Case]:
    """The blocks of "key: value" lines of a .cases file, in order; each
    key maps to its values (most keys have one)."""
    cases: List[Case] = []
    case: Optional[Case] = None
    for lineno, line in enumerate(read_text(name).split('\n'), 1):
        if line.startswith('#'):
            continue
        if not line.strip():
            case = None
            continue
        key, sep, value = line.partition(': ')
        if not sep:
            raise ValueError('%s:%d: not "key: value"' % (name, lineno))
        if case is None:
            case = {}
            cases.append(case)
        case.setdefault(key, []).append(value)
    return cases


def one(case: Case, key: str) -> str:
    """The value of a key a case must have once (its first, else '')."""
    return case.get(key, [''])[0]


def summary(failed: int, total: int) -> str:
    return ('%d of %d self-tests failed' % (failed, total) if failed
            else 'all %d self-tests passed' % total)


def convert_self_test() -> int:
    """Each case converted as strace2trace.py would with its options."""
    ap = parser()
    cases = read_cases('convert.cases')
    failed = 0
    for case in cases:
        name = one(case, 'case')
        args = ap.parse_args(shlex.split(one(case, 'options')) +
                             [os.path.join(SELFTEST_DIR, one(case, 'input'))])
        if args.faults:
            args.faults = os.path.join(SELFTEST_DIR, args.faults)
        expected = read_text(one(case, 'expect'))
        want_notes = case.get('note', [])
        conv = convert_args(args, read_input(args.input))
        got = render_args(args, conv)
        notes = conv.notes
        bad_notes = len(notes) != len(want_notes) or \
            any(w not in n for w, n in zip(want_notes, notes))
        if got != expected or bad_notes:
            failed += 1
            sys.stdout.write('FAIL: %s\n' % name)
            sys.stdout.writelines(unified_diff(expected, got,
                                               'expected', 'got'))
            if bad_notes:
                sys.stdout.write('stderr notes: expected %r, got %r\n' %
                                 (want_notes, notes))
        else:
            sys.stdout.write('ok: %s\n' % name)
    sys.stdout.write(summary(failed, len(cases)) + '\n')
    return 1 if failed else 0


def check_self_test() -> int:
    """The good trace passes; each broken copy gets the error it must."""
    good = read_text('check-good.trace')
    cases = read_cases('check.cases')
    failed = 0
    _, errors = check_lines('good', good.split('\n')[:-1])
    if errors:
        failed += 1
        print('FAIL: the good trace: ' + '; '.join(errors))
    for case in cases:
        name, old, new, says = (one(case, k) for k in
                                ('case', 'old', 'new', 'says'))
        # `good`: another good trace to break (a v3 one: its faults).
        base = read_text(one(case, 'good')) if 'good' in case else good
        if base.count(old) != 1:
            failed += 1
            print('FAIL: %s: %r is not in the good trace once' % (name, old))
            continue
        text = base.replace(old, new)
        _, errors = check_lines(name, text.split('\n')[:-1])
        hit = [e for e in errors if says in e]
        if hit:
            print('ok: %s: %s' % (name, hit[0]))
        else:
            failed += 1
            print('FAIL: %s: no error saying %r (got %r)' % (name, says, errors))
    print(summary(failed, len(cases) + 1))
    return 1 if failed else 0
