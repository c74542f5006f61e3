#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_docs.py SOURCE_ROOT: docs/integrating.md carries the header's
obligations (from "Where each call may run." to the end of the header's
first comment) word for word, between its obligations markers."""
import re
import sys

root = sys.argv[1]
hdr = open(f"{root}/include/tlbpol/tlbpol.h", encoding="utf-8").read()
i = hdr.index(" * Where each call may run.")
j = hdr.index(" */\n#ifndef TLBPOL_TLBPOL_H")
want = [l[3:] if l.startswith(" * ") else l[2:] for l in hdr[i:j].split("\n")]
want = "\n".join(want).rstrip()

doc = open(f"{root}/docs/integrating.md", encoding="utf-8").read()
m = re.search(r"<!-- obligations: begin -->\n```\n(.*?)```\n<!-- obligations: end -->", doc, re.S)
if not m:
    print("docs/integrating.md: no obligations block")
    sys.exit(1)
got = m.group(1).rstrip()
if got != want:
    import difflib
    print("docs/integrating.md differs from the header:")
    sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                               "tlbpol.h", "integrating.md"))
    sys.exit(1)
print(f"docs/integrating.md carries the header's obligations ({len(want.splitlines())} lines)")
