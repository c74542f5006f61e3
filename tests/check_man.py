#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_man.py MAPFILE MANDIR: every symbol the library exports
(lib/libtlbpol.map) has a man(3) page in MANDIR, with a NAME and a
SYNOPSIS that declares it."""
import os
import re
import sys

mapfile, mandir = sys.argv[1], sys.argv[2]
syms = sorted(set(re.findall(r"^\s+(tlbpol_\w+);", open(mapfile).read(), re.M)))
bad = []
for s in syms:
    p = os.path.join(mandir, f"{s}.3")
    if not os.path.exists(p):
        bad.append(f"{s}: no page")
        continue
    t = open(p, encoding="utf-8").read()
    if ".SH NAME" not in t or ".SH SYNOPSIS" not in t or f"{s}(" not in t:
        bad.append(f"{s}: the page has no NAME, SYNOPSIS or declaration")
for b in bad:
    print("FAIL:", b)
print(f"{len(syms) - len(bad)} of {len(syms)} exported functions have a man page")
sys.exit(1 if bad else 0)
