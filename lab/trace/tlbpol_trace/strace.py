# SPDX-License-Identifier: MIT
"""Reading strace output: its lines (with -f -ttt, from -o FILE or from
stderr), one call's name, arguments and result, and the flag words in
them."""

import re
from typing import Iterable, Iterator, List, Mapping, NamedTuple, \
    Optional, Tuple

from .uapi import CLONE, CLONE_VFORK, CLONE_VM, FUTEX_CMD_MASK, \
    FUTEX_WAIT_NAMES, FUTEX_WAIT_OPS, PROCESS_NAMES

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


class Record(NamedTuple):
    """One strace line: its pid (None when strace did not print one),
    its -ttt time in nanoseconds and the text after the time."""
    pid: Optional[int]
    ts: int
    body: str


class Call(NamedTuple):
    """'name(a, b, ...) = ret ...' split: the arguments at the top level
    and the text after the closing parenthesis."""
    name: str
    args: List[str]
    rest: str


def nanoseconds(seconds: str, fraction: str) -> int:
    """A decimal time "S.F" (any number of fraction digits) in ns."""
    return int(seconds) * 1000000000 + int(fraction[:9].ljust(9, '0'))


def logical_lines(lines: Iterable[str]) -> Iterator[str]:
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


def parse_records(lines: Iterable[str]) -> List[Record]:
    """The lines with a -ttt timestamp, in order."""
    recs = []
    for text in logical_lines(lines):
        m = LINE_RE.match(text)
        if not m:
            continue
        pid = m.group(1) or m.group(2)
        recs.append(Record(int(pid) if pid is not None else None,
                           nanoseconds(m.group(3), m.group(4)), m.group(5)))
    return recs


def has_process_events(recs: Iterable[Record]) -> bool:
    """Whether any line is a clone, fork, execve or exit call."""
    for rec in recs:
        m = NAME_RE.match(rec.body)
        if m and m.group(1) in PROCESS_NAMES:
            return True
    return False


def call_name(text: str) -> Optional[str]:
    """The name of the call a line starts, if it starts one."""
    m = CALL_RE.match(text)
    return m.group(1) if m else None


def split_call(text: str) -> Optional[Call]:
    """The call of a line, or None if its parentheses do not close."""
    m = CALL_RE.match(text)
    if not m:
        return None
    i = m.end()
    n = len(text)
    depth = 1
    start = i
    args: List[str] = []
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
                return Call(m.group(1), args, text[i + 1:])
        elif c == ',' and depth == 1:
            args.append(text[start:i].strip())
            start = i + 1
        i += 1
    return None


def call_result(rest: str) -> Tuple[bool, Optional[int]]:
    """(whether a "= ret" is there, the result if the call succeeded):
    failed, interrupted and never-returning (exit) calls give None."""
    m = RET_RE.match(rest)
    if not m:
        return False, None
    tok = m.group(1)
    if tok == '?' or tok.startswith('-'):
        return True, None
    try:
        return True, int(tok, 0)
    except ValueError:
        return True, None


def call_duration(rest: str) -> Optional[int]:
    """The time strace -T gives a call, in ns, if it gives one."""
    m = DURATION_RE.search(rest)
    return nanoseconds(m.group(1), m.group(2)) if m else None


def parse_int(text: str) -> int:
    text = COMMENT_RE.sub('', text).strip()
    if text == 'NULL':
        return 0
    return int(text, 0)


def parse_flags(text: str, table: Mapping[str, int]) -> int:
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


def futex_waits(args: List[str]) -> bool:
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
    return op in FUTEX_WAIT_NAMES


def clone_flags(name: str, text: str) -> int:
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
