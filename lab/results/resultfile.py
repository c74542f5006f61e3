# SPDX-License-Identifier: MIT
"""Read one recorded result: its header (where it came from) and its output.

Two kinds of file are read.  lab/results/data/TOPIC/NAME.txt, written by
record.py: "# key: value" header lines up to "# ---", then the command's
standard output, then "# --- stderr" and its standard error.  And the real
kernel's counts that lab/validate recorded with their own provenance
(lab/validate/data/measured.txt: one line per program with date=, kernel=,
cpu=, cpus=; tcg.txt: a first "# command, date; host: ..." line).
"""

import os
import re
from typing import Dict, List, NamedTuple, Optional

HERE = os.path.dirname(os.path.realpath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(HERE, 'data')


class ResultError(Exception):
    """A result is missing or does not read as expected: rendering stops."""


class Result(NamedTuple):
    name: str
    path: str                # relative to the top of the tree
    head: Dict[str, str]
    out: str
    err: str

    @property
    def ok(self) -> bool:
        return self.head.get('exit') == '0'

    def lines(self) -> List[str]:
        return self.out.splitlines()


def need(cond: object, res: 'Result', what: str) -> None:
    if not cond:
        raise ResultError('%s: %s' % (res.path, what))


# What every result's header says: record.py writes these keys.
HEAD_KEYS = ('commit', 'cpu', 'vcpus', 'kernel', 'date', 'steal', 'command', 'exit',
             'seconds', 'load')


def unknown_head(**known: str) -> Dict[str, str]:
    """The header of a result recorded elsewhere: '-' where it says nothing
    (it ran to completion: exit 0), and what it does say."""
    head = dict.fromkeys(HEAD_KEYS, '-')
    head['exit'] = '0'
    head.update(known)
    return head


def existing(path: str, hint: str = '', is_dir: bool = False) -> str:
    """path relative to the top of the tree; ResultError if it is missing
    (or is not a file; with is_dir, not a directory)."""
    rel = os.path.relpath(path, TOP)
    if not (os.path.isdir(path) if is_dir else os.path.isfile(path)):
        raise ResultError('%s: missing%s' % (rel, hint))
    return rel


def load(data: str, topic: str, name: str) -> Result:
    path = os.path.join(data, topic, name + '.txt')
    rel = existing(path, ' (run: scripts/results.sh record %s)' % name)
    with open(path) as f:
        text = f.read()
    head: Dict[str, str] = {}
    rest = text.split('\n')
    i = 0
    while i < len(rest) and rest[i] != '# ---':
        m = re.match(r'# ([a-z]+): (.*)$', rest[i])
        if m:
            head[m.group(1)] = m.group(2)
        i += 1
    if i == len(rest):
        raise ResultError('%s: no "# ---" line ending the header' % rel)
    body = '\n'.join(rest[i + 1:])
    out, _, err = body.partition('# --- stderr\n')
    for key in HEAD_KEYS:
        if key not in head:
            raise ResultError('%s: header has no %s' % (rel, key))
    return Result(name, rel, head, out, err)


def load_kernel_counts(path: str) -> Result:
    """lab/validate/data/measured.txt as a Result: provenance from its lines."""
    rel = existing(path)
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith('program='):
                rows.append(dict(kv.split('=', 1) for kv in line.rstrip('\n').split('\t')))
    if not rows:
        raise ResultError('%s: no program= lines' % rel)
    dates = sorted(r['date'] for r in rows)
    steals = sorted(float(s.rstrip('%')) for r in rows for s in r['steal'].split(','))
    head = unknown_head(
        commit='lab/validate/run.sh --update', command='lab/validate/run.sh --update',
        cpu=rows[0]['cpu'], vcpus=rows[0]['cpus'], kernel=rows[0]['kernel'],
        date=dates[0] if dates[0] == dates[-1] else '%s to %s' % (dates[0], dates[-1]),
        steal='%.1f%% to %.1f%% per run' % (steals[0], steals[-1]),
        load=', '.join(sorted(set(r['load'] for r in rows))))
    text = ''.join('\t'.join('%s=%s' % kv for kv in r.items()) + '\n' for r in rows)
    return Result('kernel-counts', rel, head, text, '')


def load_tcg(path: str) -> Result:
    """lab/validate/data/tcg.txt as a Result: provenance from its first line."""
    rel = existing(path)
    with open(path) as f:
        first = f.readline()
        text = f.read()
    m = re.match(r'# (.*), (\d{4}-\d\d-\d\dT[\d:]+Z); host: (.*), (\d+) CPUs, (\S+), (.*)$',
                 first.rstrip('\n'))
    if not m:
        raise ResultError('%s: first line is not "# COMMAND, DATE; host: ..."' % rel)
    head = unknown_head(command=m.group(1), date=m.group(2), cpu=m.group(3),
                        vcpus=m.group(4), kernel=m.group(5), qemu=m.group(6),
                        steal='not recorded', load='not recorded')
    return Result('kernel-tcg', rel, head, text, '')


def load_cited(path: str) -> Result:
    """lab/results/cited.txt: what the reproduced patches reported (quoted)."""
    rel = existing(path)
    with open(path) as f:
        text = ''.join(ln for ln in f if not ln.startswith('#'))
    return Result('cited', rel, unknown_head(), text, '')


def load_traces(dirs: List[str]) -> Result:
    """The headers of the traces in dirs (lab/trace/traces, lab/validate/data):
    each says when, on what and by which command it was recorded."""
    lines = []
    for d in dirs:
        existing(d, is_dir=True)
        for f in sorted(os.listdir(d)):
            if not f.endswith('.trace'):
                continue
            path = os.path.join(d, f)
            with open(path) as fh:
                for ln in fh:
                    if not ln.startswith('#'):
                        break
                    key, _, val = ln[1:].strip().partition(': ')
                    lines.append('%s\t%s\t%s' % (os.path.relpath(path, TOP), key, val))
    return Result('traces', 'trace headers', unknown_head(),
                  ''.join(ln + '\n' for ln in lines), '')


def provenance(res: Result, with_command: bool = False) -> str:
    """One line: which code, machine and time a figure comes from."""
    h = res.head
    date = h['date'].replace('T', ' ').replace('Z', ' UTC')
    parts = []
    if h['commit'] not in ('-', h['command']):
        parts.append('commit %s' % h['commit'])
    parts.append('%s, %s vCPUs, Linux %s' % (h['cpu'], h['vcpus'], h['kernel']))
    parts.append(date)
    if h['seconds'] != '-':
        parts.append('%s s' % h['seconds'])
    parts.append('steal %s' % h['steal'])
    if h['load'] != 'not recorded':
        parts.append('load %s' % h['load'].replace(' (1-minute load average)', ''))
    text = '; '.join(parts)
    if with_command:
        text = '`%s`: %s' % (h['command'], text)
    return text + ' (`%s`)' % res.path


def when(res: Result) -> str:
    """Short provenance for a table cell: machine, date, steal."""
    h = res.head
    return '%s, %s vCPUs; %s; steal %s' % (
        h['cpu'], h['vcpus'], h['date'].replace('T', ' ').replace('Z', ' UTC'), h['steal'])


def failure(res: Optional[Result]) -> str:
    if res is None:
        return 'not recorded'
    if res.head.get('exit') == '-':   # an optional measurement never recorded
        return res.err
    last = [ln for ln in res.err.splitlines() if ln.strip()]
    return 'the command failed (exit %s): %s' % (
        res.head.get('exit', '?'), last[-1] if last else 'no message')
