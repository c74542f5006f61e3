#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The package's mirrors against the C header.

- TLBPOL_LAYOUT_EXE (built from gen_layout_c.py's output by meson) prints
  the compiler's value of every constant the package defines, and the size
  of every struct and the offset and size of each of its fields: each must
  equal the Python mirror's.
- TLBPOL_HEADER (include/tlbpol/tlbpol.h), as gen/tlbpol_api.py reads it,
  gives every enumerator, object-like #define, struct (and its fields) and
  TLBPOL_API function: each must be mirrored by the package (a constant
  added to the header and not to the package fails here).

Run by meson (suite bindings); by hand:
  TLBPOL_LAYOUT_EXE=build/tests/python/py_layout TLBPOL_HEADER=include/tlbpol/tlbpol.h \\
  PYTHONPATH=bindings/python /usr/bin/python3 tests/python/test_layout.py -v
"""

import ctypes
import os
import subprocess
import sys
import unittest

from tlbpol import _constants, _ffi

from helpers import env_or_skip


def header_api(path):
    """The header as gen/tlbpol_api.py reads it (the one reader of it)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(path)), "..", "..", "gen"))
    import tlbpol_api
    return tlbpol_api.load(path)


def header_names(path):
    """(constants, structs, functions) the header declares."""
    api = header_api(path)
    return set(api.constants()), set(api.structs), set(api.functions)


class Layout(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        out = subprocess.run([env_or_skip("TLBPOL_LAYOUT_EXE")], check=True, capture_output=True, text=True).stdout
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
        cls.consts, cls.structs, cls.funcs = header_names(env_or_skip("TLBPOL_HEADER"))

    def test_header_constants_all_mirrored(self):
        missing = sorted(self.consts - set(_constants.HEADER_CONSTANTS))
        self.assertEqual(missing, [], "header constants the package does not mirror")
        self.assertGreater(len(self.consts), 100)

    def test_header_structs_all_mirrored(self):
        # The engine and address space are opaque: no layout to mirror.
        self.assertEqual(sorted(self.structs - set(_ffi.STRUCTS)), [])

    def test_header_fields_all_mirrored_in_order(self):
        api = header_api(os.environ["TLBPOL_HEADER"])
        for name, st in api.structs.items():
            with self.subTest(struct=name):
                self.assertEqual([f[0] for f in _ffi.STRUCTS[name]._fields_],
                                 [f.name for f in st.fields])

    def test_header_functions_all_bound(self):
        self.assertGreater(len(self.funcs), 40)
        self.assertEqual(sorted(self.funcs - set(_ffi.PROTOTYPES)), [],
                         "functions the package has no prototype for")
        self.assertEqual(sorted(set(_ffi.PROTOTYPES) - self.funcs), [],
                         "prototypes for functions the header does not declare")


if __name__ == "__main__":
    unittest.main()
