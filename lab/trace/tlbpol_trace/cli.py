# SPDX-License-Identifier: MIT
"""strace2trace.py's command line."""

import argparse
import difflib
import sys
from typing import List, Optional

from .converter import ConvertError, Converter, convert_lines
from .faults import Fault, FaultsError, parse_faults
from .uapi import BLOCK_MIN_NS, MAX_LINE


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog='strace2trace.py',
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
    ap.add_argument('--faults', metavar='FILE',
                    help='the page faults recorded with it (record.sh: '
                         'perf script output): write version 3 with fault '
                         'records')
    ap.add_argument('--thin-faults', action='store_true',
                    help='with --faults: write only the read and write faults '
                         'that a later record needs (FORMAT.md "Thinned '
                         'faults"); every copy-on-write fault is written')
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
                    help='run the examples in selftest/ and exit')
    return ap


def check_args(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exits (through ap.error) on options that cannot be used."""
    for c in args.comment:
        for line in c.split('\n'):
            if len(('# ' + line).encode('utf-8')) > MAX_LINE:
                ap.error('comment line longer than %d bytes' % MAX_LINE)
    if args.faults and args.v1:
        ap.error('--faults writes version 3: not with --v1')
    if args.thin_faults and not args.faults:
        ap.error('--thin-faults thins the faults of --faults: give it')
    if args.block_min_ns < 0:
        ap.error('--block-min-ns must be at least 0')


def convert_args(args: argparse.Namespace, lines: List[str]) -> Converter:
    """The conversion the options ask for (raises ConvertError)."""
    faults: Optional[List[Fault]] = None
    if args.faults:
        try:
            faults = parse_faults(read_input(args.faults))
        except FaultsError as exc:
            raise ConvertError('%s: %s' % (args.faults, exc)) from exc
    return convert_lines(lines, max_events=args.max_events,
                         verbose=args.verbose, v1=args.v1,
                         block_min_ns=args.block_min_ns, faults=faults,
                         thin=args.thin_faults)


def render_args(args: argparse.Namespace, conv: Converter) -> str:
    return conv.trace.render(args.comment, args.pid_map, conv.process_events)


def unified_diff(expected: str, got: str, a: str, b: str) -> List[str]:
    return list(difflib.unified_diff(expected.splitlines(True),
                                     got.splitlines(True), a, b))


def read_input(path: str) -> List[str]:
    if path == '-':
        return sys.stdin.readlines()
    with open(path, encoding='utf-8', errors='replace') as f:
        return f.readlines()


def main(argv: Optional[List[str]] = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if args.self_test:
        from .selftest import convert_self_test
        return convert_self_test()
    check_args(ap, args)
    lines = read_input(args.input)
    try:
        conv = convert_args(args, lines)
    except ConvertError as exc:
        sys.stderr.write('strace2trace: %s\n' % exc)
        return 2
    for note in conv.notes:
        sys.stderr.write('strace2trace: %s\n' % note)
    text = render_args(args, conv)
    if conv.warnings and not args.verbose:
        sys.stderr.write('strace2trace: %d lines dropped or doubtful '
                         '(-v lists them)\n' % conv.warnings)

    if args.expect:
        with open(args.expect, encoding='utf-8') as f:
            expected = f.read()
        if expected == text:
            sys.stdout.write('strace2trace: output matches %s\n' % args.expect)
            return 0
        sys.stdout.writelines(unified_diff(expected, text, args.expect,
                                           'converted'))
        return 1
    if args.output == '-':
        sys.stdout.write(text)
    else:
        with open(args.output, 'w', encoding='utf-8') as f:
            f.write(text)
    return 0
