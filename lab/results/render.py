#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Render docs/results.md and README.md's headline table from recorded results.

Every figure comes from a file under lab/results/data (record.py) or from
the real kernel's counts in lab/validate/data, read by parse.py, and is put
into a template (results.md.in, readme.md.in) where it stands as a
placeholder:

  {{NAME.key}}                 a figure of measurement NAME (parse.py's keys)
  {{NAME.key / NAME.key .1f}}  the ratio of two figures, in that format
  {{prov NAME}}                where NAME comes from: commit, CPU, kernel, date,
                               wall time, steal, load, and its file
  {{src NAME}}                 the same, after the exact command
  {{cmd NAME}}                 the exact command, in backquotes
  {{fail NAME}}                why NAME has no figures (its exit and last error)
  {{commit}}                   the commit the README's table shows
  {{?NAME}}LINE / {{!NAME}}LINE  the line only if NAME ran well / did not

A missing file, an unreadable output or an unknown placeholder stops the
rendering with an error; the output depends only on the files read.

    lab/results/render.py            rewrite docs/results.md and README.md's table
    lab/results/render.py --out DIR  write DIR/results.md and DIR/README.md instead
    lab/results/render.py --check    exit 1 unless both are up to date
"""

import argparse
import difflib
import os
import re
import sys
import tempfile
from typing import Dict, List, Optional, Tuple

# The test suite runs this from the source tree: leave no __pycache__ there.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

from parse import PARSERS, Values, parse  # noqa: E402
from record import MEASUREMENTS  # noqa: E402
from resultfile import (DATA, HERE, TOP, Result, ResultError, failure,  # noqa: E402
                        load, load_cited, load_kernel_counts, load_tcg, load_traces,
                        provenance, unknown_head, when)

RESULTS_MD = os.path.join(TOP, 'docs', 'results.md')
README = os.path.join(TOP, 'README.md')
BEGIN = '<!-- results:begin -->'
END = '<!-- results:end -->'
# Labels of this project's tracker and of its seed patches have no place in
# a document users read: the patches are cited by their Linux commits
# (the same pattern as tests/check_labels.py).
FORBIDDEN = re.compile(r'\bissues?\s+#?\d+|\bseed[ _-]?\d{3}\b', re.IGNORECASE)
PLACE = re.compile(r'\{\{(.*?)\}\}')
COND = re.compile(r'^\{\{([?!])([\w-]+)\}\}')


class Results:
    """Every result, loaded and parsed once."""

    def __init__(self, data: str) -> None:
        self.res: Dict[str, Result] = {}
        self.val: Dict[str, Values] = {}
        topics = {m.name: m.topic for m in MEASUREMENTS}
        optional = {m.name for m in MEASUREMENTS if not m.default}
        vdata = os.path.join(TOP, 'lab', 'validate', 'data')
        # The main job first: its figures name the patches' scenarios.
        for name in sorted(PARSERS, key=lambda n: n != 'sim-main'):
            if name == 'kernel-counts':
                r = load_kernel_counts(os.path.join(vdata, 'measured.txt'))
            elif name == 'kernel-tcg':
                r = load_tcg(os.path.join(vdata, 'tcg.txt'))
            elif name == 'traces':
                r = load_traces([os.path.join(TOP, 'lab', 'trace', 'traces'), vdata])
            elif name == 'cited':
                r = load_cited(os.path.join(HERE, 'cited.txt'))
            elif name in optional and not os.path.isfile(
                    os.path.join(data, topics[name], name + '.txt')):
                # Recorded only when named (an hour's run): say so, not fail.
                r = Result(name, '-', unknown_head(exit='-'), '',
                           'not recorded yet (scripts/results.sh record %s)' % name)
            else:
                r = load(data, topics[name], name)
            self.res[name] = r
            try:
                self.val[name] = parse(r, self.val.get('sim-main', {}))
            except ResultError:
                if r.ok:
                    raise
                self.val[name] = {}   # a failed run: {{fail NAME}} says why
            self.val[name]['when'] = when(r)
        # The README's commit: the newest of the measurements `record` runs
        # by default (an optional one, recorded later, would hide them all).
        recorded = [r for n, r in self.res.items() if n in topics and n not in optional]
        newest = max(recorded, key=lambda r: (r.head['date'], r.name))
        self.commit = newest.head['commit']

    def get(self, name: str) -> Result:
        if name not in self.res:
            raise ResultError('unknown measurement %r' % name)
        return self.res[name]

    def value(self, ref: str) -> str:
        name, _, key = ref.partition('.')
        res = self.get(name)
        vals = self.val[name]
        if key not in vals:
            raise ResultError('%s: no figure %r%s' % (
                res.path, key, '' if res.ok else ' (' + failure(res) + ')'))
        return vals[key]


def number(text: str) -> float:
    m = re.match(r'-?[\d.]+', text)
    if not m:
        raise ResultError('not a number: %r' % text)
    return float(m.group(0))


def expand(expr: str, rs: Results, used: List[str]) -> str:
    expr = expr.strip()
    word, _, arg = expr.partition(' ')
    if word in ('prov', 'src', 'cmd', 'fail'):
        used.append(arg)
        r = rs.get(arg)
        if word in ('prov', 'src'):
            return provenance(r, with_command=word == 'src')
        if word == 'cmd':
            return '`%s`' % r.head['command']
        return failure(r)
    if expr == 'commit':
        return rs.commit
    m = re.fullmatch(r'([\w-]+\.\S+) / ([\w-]+\.\S+)(?: (\.\d+f))?', expr)
    if m:
        used += [m.group(1).partition('.')[0], m.group(2).partition('.')[0]]
        a, b = number(rs.value(m.group(1))), number(rs.value(m.group(2)))
        if b == 0:
            raise ResultError('%s: division by zero' % expr)
        return format(a / b, m.group(3) or '.2f')
    if re.fullmatch(r'[\w-]+\.\S+', expr):
        used.append(expr.partition('.')[0])
        return rs.value(expr)
    raise ResultError('unknown placeholder {{%s}}' % expr)


def fill(template: str, rs: Results, only_commit: Optional[str] = None) -> Tuple[str, List[str]]:
    """The template with its placeholders filled.  With only_commit, a line
    whose figures come from another commit is left out; their names are
    returned."""
    out: List[str] = []
    skipped: List[str] = []
    for line in template.split('\n'):
        m = COND.match(line)
        if m:
            ok = rs.get(m.group(2)).ok
            if ok != (m.group(1) == '?'):
                continue
            line = line[m.end():]
        used: List[str] = []
        text = PLACE.sub(lambda mm: expand(mm.group(1), rs, used), line)
        if only_commit is not None:
            other = sorted({n for n in used if rs.get(n).head['commit'] != only_commit
                            and n not in ('kernel-counts', 'kernel-tcg', 'cited', 'traces')})
            if other:
                skipped += [n for n in other if n not in skipped]
                continue
        out.append(text)
    return '\n'.join(out), skipped


def read(path: str) -> str:
    with open(path) as f:
        return f.read()


def render(data: str) -> Tuple[str, str]:
    """(docs/results.md, README.md) as they should be."""
    rs = Results(data)
    doc, _ = fill(read(os.path.join(HERE, 'results.md.in')), rs)
    table, skipped = fill(read(os.path.join(HERE, 'readme.md.in')), rs, rs.commit)
    if skipped:
        table += ('\nNot measured at %s, so not shown here: %s (see `docs/results.md`).\n'
                  % (rs.commit, ', '.join('`%s`' % s for s in skipped)))
    readme = read(README)
    b, e = readme.find(BEGIN), readme.find(END)
    if b < 0 or e < b:
        raise ResultError('README.md: no %s ... %s markers' % (BEGIN, END))
    readme = readme[:b + len(BEGIN)] + '\n' + table.strip('\n') + '\n' + readme[e:]
    for what, text in (('docs/results.md', doc), ('README.md', table)):
        bad = FORBIDDEN.search(text)
        if bad:
            raise ResultError('%s would carry the label %r' % (what, bad.group(0)))
    return doc, readme


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--data', default=DATA, help='recorded results (default lab/results/data)')
    g = ap.add_mutually_exclusive_group()
    g.add_argument('--out', help='write results.md and README.md into this directory')
    g.add_argument('--check', action='store_true',
                   help='render into a temporary directory; exit 1 if docs/results.md '
                        'or README.md differ')
    args = ap.parse_args(argv)
    try:
        doc, readme = render(args.data)
    except ResultError as e:
        print('render.py: %s' % e, file=sys.stderr)
        return 2
    if args.check:
        stale = 0
        with tempfile.TemporaryDirectory(prefix='tlbpol-results.') as tmp:
            for name, text, path in (('results.md', doc, RESULTS_MD),
                                     ('README.md', readme, README)):
                with open(os.path.join(tmp, name), 'w') as f:
                    f.write(text)
                have = read(path)
                if have != text:
                    stale += 1
                    sys.stdout.writelines(difflib.unified_diff(
                        have.splitlines(True), text.splitlines(True),
                        os.path.relpath(path, TOP), 'rendered ' + name, n=1))
        if stale:
            print('render.py: out of date; run scripts/results.sh render', file=sys.stderr)
            return 1
        print('render.py: docs/results.md and README.md are up to date')
        return 0
    outdir = args.out
    targets = ((os.path.join(outdir, 'results.md'), doc), (os.path.join(outdir, 'README.md'),
                                                            readme)) \
        if outdir else ((RESULTS_MD, doc), (README, readme))
    if outdir:
        os.makedirs(outdir, exist_ok=True)
    for path, text in targets:
        with open(path + '.new', 'w') as f:
            f.write(text)
        os.replace(path + '.new', path)
        print('render.py: wrote %s' % path, file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
