# SPDX-License-Identifier: MIT
"""The reconvert mode: the raw recordings of data/ (and their page
faults, raw/PROGRAM.faults.xz, where recorded) converted again with the
current converter, into the work directory (--update: into data/), then
replayed.  Only the set of the machine measured last (data/ itself)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile

from .config import MAX_EVENTS, Config, log
from .converter import convert, converter, trace_events, unpack_raw
from .data import read_rows, write_rows
from .machine import utc_now
from .replay import replay

# The comments of a trace that say where its recording came from: kept.
KEPT = re.compile(r'# (command|program|recorded|machine|strace options|page faults): ')


def reconvert(cfg: Config) -> bool:
    work = cfg.work or tempfile.mkdtemp(prefix='tlbpol-reconvert.')
    os.makedirs(work, exist_ok=True)
    conv = converter(cfg.converter)
    rows = read_rows(os.path.join(cfg.data, 'measured.txt'))
    for row in rows:
        if row.get('faults', '').startswith('recorded') and \
                not row.get('faults_raw', '').startswith('raw/'):
            # Its faults were not kept: its committed trace stays.
            log('validate: %s: its page faults were %s: its trace is not converted again'
                % (row['program'], row.get('faults_raw', 'not kept')))
            if not cfg.update:
                shutil.copyfile(os.path.join(cfg.data, row['trace']),
                                os.path.join(work, row['trace']))
            continue
        raw_xz = os.path.join(cfg.data, 'raw', row['program'] + '.strace.xz')
        raw = os.path.join(work, row['program'] + '.strace')
        unpack_raw(raw_xz, raw)
        faults_xz = os.path.join(cfg.data, 'raw', row['program'] + '.faults.xz')
        faults: str | None = None
        if os.path.exists(faults_xz):
            faults = os.path.join(work, row['program'] + '.faults')
            unpack_raw(faults_xz, faults)
        old = os.path.join(cfg.data, row['trace'])
        with open(old) as f:
            comments = [line[2:].rstrip('\n') for line in f if KEPT.match(line)]
        comments.append('converted: %s UTC by lab/trace/strace2trace.py (%s) -n %d%s'
                        % (utc_now(), conv.note, MAX_EVENTS,
                           ' --faults --thin-faults' if faults else ''))
        out = os.path.join(work, row['trace'])
        convert(conv, raw, out, comments, faults)
        row['events'] = str(trace_events(out))
        if cfg.update:
            shutil.copyfile(out, old)
    dst = cfg.data if cfg.update else work
    write_rows(os.path.join(dst, 'measured.txt'), rows)
    if not cfg.update and os.path.exists(os.path.join(cfg.data, 'expected-out.txt')):
        shutil.copyfile(os.path.join(cfg.data, 'expected-out.txt'),
                        os.path.join(work, 'expected-out.txt'))
    log('validate: reconverted into %s' % dst)
    return replay(dst, cfg.sim, check=cfg.check, with_cpu_ns=cfg.cpu_ns)
