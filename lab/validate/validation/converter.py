# SPDX-License-Identifier: MIT
"""lab/trace/strace2trace.py, the strace converter, run through its
command line only (it is another part of the laboratory, with its own
modules): its self-test, a conversion, and a recording converted again
as trace version 1 for a tlbpol-sim that reads nothing newer."""

from __future__ import annotations

import lzma
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from types import TracebackType

from .config import CONVERTER, MAX_EVENTS, ROOT


class ConverterError(Exception):
    """The converter cannot be used: the run stops, with this message."""


@dataclass(frozen=True)
class Converter:
    path: str   # the script, run with this Python
    note: str   # which one, as the traces' "converted:" comment says


def converter(which: str = 'tree') -> Converter:
    """The converter 'tree' (lab/trace/strace2trace.py as it is in this
    checkout) or the one at path @which, after its self-test.  One that
    fails its self-test is an error, never replaced by another: a trace
    must come from the converter the user asked for."""
    if which == 'tree':
        conv = Converter(CONVERTER, 'the working tree\'s')
    else:
        conv = Converter(os.path.abspath(which), which)
    try:
        r = subprocess.run([sys.executable, conv.path, '--self-test'],
                           capture_output=True, text=True, errors='replace')
    except OSError as e:
        raise ConverterError('cannot run %s: %s' % (conv.path, e)) from e
    if r.returncode != 0:
        out = (r.stdout + r.stderr).strip().splitlines()[-5:]
        raise ConverterError(
            '%s --self-test exited %d; no trace is converted with a converter that fails '
            'its self-test (fix it, or name one that passes with --converter PATH)%s'
            % (conv.path, r.returncode, ''.join('\n  ' + line for line in out)))
    return conv


def strace_options() -> tuple[list[str], str]:
    """strace's options, from the one place that says what the converter
    needs (lab/trace/strace-options, which record.sh reads too)."""
    with open(os.path.join(ROOT, 'lab', 'trace', 'strace-options')) as f:
        return shlex.split(f.read()), 'lab/trace/strace-options'


def convert(conv: Converter, raw: str, out: str, comments: list[str],
            faults: str | None = None) -> str:
    """Convert the strace recording @raw into the trace @out, with
    @comments in its header, and with the page faults file @faults (trace
    version 3) when there is one, thinned (--thin-faults: the hundreds of
    thousands of first writes of an allocating program would fill the
    trace's -n events long before its end); what the converter said on
    stderr."""
    argv = [sys.executable, conv.path, '-n', str(MAX_EVENTS)]
    if faults:
        argv += ['--faults', faults, '--thin-faults']
    for c in comments:
        argv += ['-c', c]
    argv += ['-o', out, raw]
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError('strace2trace.py failed on %s: %s' % (raw, r.stderr.strip()))
    return r.stderr.strip()


def trace_version(path: str) -> int | None:
    """The version a trace's first line says ("# tlbpol-trace vN")."""
    with open(path) as f:
        m = re.match(r'# tlbpol-trace v(\d+)\s*$', f.readline())
    return int(m.group(1)) if m else None


def trace_events(path: str) -> int:
    """The events of a trace: its "# events:" header, else its records."""
    with open(path) as f:
        for line in f:
            if not line.startswith('#'):
                break
            m = re.match(r'#\s*events:\s*(\d+)', line)
            if m:
                return int(m.group(1))
    n = 0
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith('#'):
                n += 1
    return n


def unpack_raw(raw_xz: str, raw: str) -> None:
    """data/raw/PROGRAM.strace.xz (or .faults.xz) into @raw."""
    with lzma.open(raw_xz, 'rb') as f, open(raw, 'wb') as g:
        shutil.copyfileobj(f, g)


class V1Traces:
    """The recordings of a data directory converted again with --v1 (memory
    records only), for a tlbpol-sim that reads only trace version 1; into a
    temporary directory made on first use and removed on exit."""

    def __init__(self, data_dir: str) -> None:
        self.data_dir = data_dir
        self.work: str | None = None
        self.conv: Converter | None = None

    def __enter__(self) -> V1Traces:
        return self

    def __exit__(self, typ: type[BaseException] | None, val: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.work:
            shutil.rmtree(self.work, ignore_errors=True)
            self.work = None

    def trace(self, program: str) -> str | None:
        """data/raw/@program.strace.xz converted with strace2trace.py
        --v1, or None if there is no recording or the conversion fails."""
        raw_xz = os.path.join(self.data_dir, 'raw', program + '.strace.xz')
        if not os.path.exists(raw_xz):
            return None
        if self.work is None:
            self.work = tempfile.mkdtemp(prefix='tlbpol-validate-v1.')
        if self.conv is None:
            self.conv = converter('tree')
        raw = os.path.join(self.work, program + '.strace')
        out = os.path.join(self.work, program + '.v1.trace')
        unpack_raw(raw_xz, raw)
        r = subprocess.run([sys.executable, self.conv.path, '--v1', '-n', str(MAX_EVENTS),
                            '-o', out, raw], capture_output=True, text=True)
        os.unlink(raw)
        return out if r.returncode == 0 else None
