#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Convert strace output into a tlbpol-trace text trace (see FORMAT.md):
version 2 by default, version 1 with --v1.

Record with

    strace $(cat lab/trace/strace-options) -o RAW.strace COMMAND [ARGS...]

that is `strace -f -ttt -T -e trace=%memory,%process,futex,...` (output
written to stderr instead of `-o FILE`, with its `[pid N]` prefixes, is
read too), and convert with

    strace2trace.py RAW.strace > OUT.trace

Standard library only.  `--self-test` runs the examples of selftest/;
`--expect FILE` compares the conversion with FILE (a golden test).  The
code is the package tlbpol_trace/ beside this script: copy lab/trace/
whole to run it elsewhere.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tlbpol_trace.cli import main  # noqa: E402  (found through sys.path)

if __name__ == '__main__':
    sys.exit(main())
