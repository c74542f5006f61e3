#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The package's mirrors against the C header.

- TLBPOL_LAYOUT_EXE (built from gen_layout_c.py's output by meson) prints
  the compiler's value of every constant the package defines, and the size
  of every struct and the offset and size of each of its fields: each must
  equal the Python mirror's.
- TLBPOL_HEADER (include/tlbpol/tlbpol.h) is scanned for every enumerator,
  object-like #define, struct and TLBPOL_API function: each must be
  mirrored by the package (a constant added to the header and not to the
  package fails here).

Run by meson (suite bindings); by hand:
  TLBPOL_LAYOUT_EXE=build/tests/python/py_layout TLBPOL_HEADER=include/tlbpol/tlbpol.h \\
  PYTHONPATH=bindings/python /usr/bin/python3 tests/python/test_layout.py -v
"""

import ctypes
import os
import re
import subprocess
import unittest

from tlbpol import _constants, _ffi

# Names in the header that are not interface constants.
NOT_CONSTANTS = {"TLBPOL_TLBPOL_H", "TLBPOL_API", "TLBPOL_FREESTANDING", "TLBPOL_BUILDING"}


def header_names(path):
    """(constants, structs, functions) the header declares."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    consts = set(re.findall(r"^\s*(TLBPOL_\w+)\s*=", text, re.M))
    consts |= set(re.findall(r"^\s*#\s*define\s+(TLBPOL_\w+)(?=\s|$)", text, re.M))
    consts = {c for c in consts if not c.startswith("TLBPOL__") and c not in NOT_CONSTANTS}
    structs = set(re.findall(r"\bstruct\s+(tlbpol_\w+)\s*\{", text))
    funcs = set(re.findall(r"TLBPOL_API\s+[^;{]*?\b(tlbpol_\w+)\s*\(", text, re.S))
    return consts, structs, funcs


class Layout(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        exe = os.environ.get("TLBPOL_LAYOUT_EXE")
        if not exe:
            raise unittest.SkipTest("TLBPOL_LAYOUT_EXE not set")
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
        cls.consts, cls.sizes, cls.aligns, cls.fields = {}, {}, {}, {}
        for line in out.splitlines():
            words = line.split()
            if words[0] == "const":
                cls.consts[words[1]] = int(words[2])
            elif words[0] == "sizeof":
                cls.sizes[words[1]] = int(words[2])
            elif words[0] == "alignof":
                cls.aligns[words[1]] = int(words[2])
            elif words[0] == "field":
                cls.fields[(words[1], words[2])] = (int(words[3]), int(words[4]))

    def test_every_constant_has_the_header_value(self):
        self.assertEqual(set(self.consts), set(_constants.HEADER_CONSTANTS))
        for name, value in sorted(_constants.HEADER_CONSTANTS.items()):
            with self.subTest(name=name):
                self.assertEqual(value, self.consts[name], name)
        self.assertGreater(len(self.consts), 100)

    def test_every_struct_and_field(self):
        self.assertEqual(set(self.sizes), set(_ffi.STRUCTS))
        for cname, cls in sorted(_ffi.STRUCTS.items()):
            with self.subTest(struct=cname):
                self.assertEqual(ctypes.sizeof(cls), self.sizes[cname], "sizeof " + cname)
                self.assertEqual(ctypes.alignment(cls), self.aligns[cname], "alignof " + cname)
                for fname, ftype in [(f[0], f[1]) for f in cls._fields_]:
                    off, size = self.fields[(cname, fname)]
                    self.assertEqual(getattr(cls, fname).offset, off, "%s.%s offset" % (cname, fname))
                    self.assertEqual(ctypes.sizeof(ftype), size, "%s.%s size" % (cname, fname))

    def test_enum_classes_hold_exactly_their_header_names(self):
        # IntEnum/IntFlag members each map to one header name; no stray member.
        for cls, prefix in _constants._PREFIXES:
            for name in cls.__members__:
                self.assertIn(prefix + name, self.consts)


class HeaderCoverage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        path = os.environ.get("TLBPOL_HEADER")
        if not path:
            raise unittest.SkipTest("TLBPOL_HEADER not set")
        cls.consts, cls.structs, cls.funcs = header_names(path)

    def test_header_constants_all_mirrored(self):
        missing = sorted(self.consts - set(_constants.HEADER_CONSTANTS))
        self.assertEqual(missing, [], "header constants the package does not mirror")
        self.assertGreater(len(self.consts), 100)

    def test_header_structs_all_mirrored(self):
        # The engine and address space are opaque: no layout to mirror.
        self.assertEqual(sorted(self.structs - set(_ffi.STRUCTS)), [])

    def test_header_functions_all_bound(self):
        self.assertGreater(len(self.funcs), 40)
        self.assertEqual(sorted(self.funcs - set(_ffi.PROTOTYPES)), [],
                         "functions the package has no prototype for")
        self.assertEqual(sorted(set(_ffi.PROTOTYPES) - self.funcs), [],
                         "prototypes for functions the header does not declare")


if __name__ == "__main__":
    unittest.main()
