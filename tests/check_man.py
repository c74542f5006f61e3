#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_man.py MAPFILE MANDIR: every symbol the library exports
(lib/libtlbpol.map) and every function the header declares has a man(3)
page in MANDIR, with a NAME and a SYNOPSIS that carries the header's
prototype.  The header is read by gen/tlbpol_api.py, its one reader."""
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "gen"))
from tlbpol_api import load  # noqa: E402

mapfile, mandir = sys.argv[1], sys.argv[2]
api = load()
syms = set(re.findall(r"^\s+(tlbpol_\w+);", open(mapfile).read(), re.M))
bad = []
for s in sorted(syms | set(api.functions)):
    p = os.path.join(mandir, f"{s}.3")
    if not os.path.exists(p):
        bad.append(f"{s}: no page")
        continue
    t = open(p, encoding="utf-8").read()
    if ".SH NAME" not in t or ".SH SYNOPSIS" not in t or f"{s}(" not in t:
        bad.append(f"{s}: the page has no NAME, SYNOPSIS or declaration")
    fn = api.functions.get(s)
    if fn is not None and fn.prototype.replace("\\", "\\e") not in t:
        bad.append(f"{s}: the SYNOPSIS is not the header's prototype {fn.prototype!r}")
for s in sorted(syms - set(api.functions)):
    bad.append(f"{s}: exported, but the header declares no such function")
for b in bad:
    print("FAIL:", b)
print(f"{len(syms) - len(bad)} of {len(syms)} exported functions have a man page"
      f" ({len(api.functions)} declared in the header)")
sys.exit(1 if bad else 0)
