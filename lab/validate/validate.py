#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Validate tlbpol-sim against the real kernel (README.md): the command.
Its modes and options are in validation/cli.py, the work in the other
modules of validation/ (validation/__init__.py lists them)."""

import os
import sys

# Nothing is written into the source tree (validation/__pycache__).
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from validation.cli import main  # noqa: E402

if __name__ == '__main__':
    sys.exit(main())
