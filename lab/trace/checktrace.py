#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check that files follow the tlbpol-trace format, v1 or v2 (FORMAT.md).

    checktrace.py FILE...
    checktrace.py --self-test

Checks every rule of FORMAT.md that can be seen in one file, and, when the
header has the "# threads:", "# address-spaces:", "# events:",
"# duration_ns:", "# block-min-ns:" and "# process-events:" lines that
strace2trace.py writes, that they agree with the records.  Prints one
line per file; exits 1 if any file breaks a rule.  The checker
(tlbpol_trace/check.py) imports none of the converter's modules, so that
it checks the converter's output rather than repeating its assumptions.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tlbpol_trace.check import main  # noqa: E402  (found through sys.path)

if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
