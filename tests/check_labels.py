#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_labels.py ROOT: no tracker or seed labels in the tree.

Users read the comments, docs and output of this tree without the issue
tracker it was built with, or the names the seed patches had inside it: a
reference must be one they can follow (a Linux commit id and title, a manual
section, a paper).  Fails on any "issue N" / "issues N" and on any
"seed 000" ... "seed 999" / "seed000" in a file git tracks (or, outside a
checkout, in every file below ROOT but build directories).

check_labels.py --self-test: the matcher on made-up lines, to show it fails.
"""
import os
import re
import subprocess
import sys
from typing import Iterator, List, Tuple

LABEL = re.compile(r"\bissues?\s+#?\d+|\bseed[ _-]?\d{3}\b", re.IGNORECASE)
SELF = os.path.join("tests", "check_labels.py")


def tracked(root: str) -> Iterator[str]:
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                             check=True).stdout.decode()
        yield from (f for f in out.split("\0") if f)
        return
    except (OSError, subprocess.CalledProcessError):
        pass
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith((".", "build"))]
        for f in files:
            yield os.path.relpath(os.path.join(d, f), root)


def labels(text: str) -> List[Tuple[int, str]]:
    return [(n, m.group(0)) for n, line in enumerate(text.splitlines(), 1)
            for m in LABEL.finditer(line)]


def self_test() -> int:
    bad = ["see issue 13", "Issues 11 and 12", "(seed 003 v3)", "seed000", "issue #4"]
    good = ["--seed 7071", "the random seed 42", "this issue is old", "seeds", "rng_seed32(1)"]
    ok = all(labels(x) for x in bad) and not any(labels(x) for x in good)
    print("check_labels self-test:", "ok" if ok else "FAILED")
    return 0 if ok else 1


def main() -> int:
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1]
    found = 0
    for rel in tracked(root):
        if rel == SELF:
            continue
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue  # binary data, or a file deleted in the working tree
        for n, what in labels(text):
            print(f"{rel}:{n}: {what!r}: cite a source users can follow")
            found += 1
    print(f"check_labels: {found} label(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
