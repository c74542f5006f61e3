# SPDX-License-Identifier: MIT
"""Run by `meson install` (meson.add_install_script in meson.build): say
where the Python package tlbpol went and, for a private prefix, which
PYTHONPATH makes `import tlbpol` find it.

Usage: install_note.py PYTHONPATH=DIR|site=DIR PYTHON

The first argument is also what meson 1.0 shows of the script
("Running custom install script '... PYTHONPATH=DIR ...'"): it does not
show the script's output.
"""

import os
import sys


def main() -> int:
    where, python = sys.argv[1:3]
    key, _, site = where.partition("=")
    destdir = os.environ.get("DESTDIR", "")
    under = " (under DESTDIR %s)" % destdir if destdir else ""
    if key == "PYTHONPATH":
        print("tlbpol: the Python package is in %s%s, which %s does not read by default:\n"
              "tlbpol:   export PYTHONPATH=%s" % (site, under, python, site))
    else:
        print("tlbpol: the Python package is in %s%s, on %s's default sys.path"
              % (site, under, python))
    return 0


if __name__ == "__main__":
    sys.exit(main())
