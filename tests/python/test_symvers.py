#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The package binds each function at the symbol version it was written
for, not at the newest one (tlbpol._ffi._bind).

- Generated: tlbpol/_symvers.py is what bindings/python/gen_symvers.py makes
  of lib/libtlbpol.map (and --check fails on a map that moved a function),
  it names every function of _ffi.PROTOTYPES, and no node is newer than
  tlbpol.__version__.
- FakeLibrary: a libtlbpol.so.0 built here with cc, as a later release would
  be: tlbpol_config_init at this package's version (TLBPOL_0.2 today)
  fills exactly this package's Config, the default one of the next release
  (tlbpol_config_init@@TLBPOL_0.3) 32 bytes more.  Loaded
  through $TLBPOL_LIBRARY and the package's own call path, the 0.2 one must
  run and the bytes after the Config stay as they were.  A function the
  library has only at a later version is missing (has() is False), one it
  has only at an earlier version is refused, and without dlvsym() (or
  without symbol versions in the library) a library of another release is
  refused while one of this release is bound.

Exit status 77 when every test run was skipped (no C compiler).
"""

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from unittest import mock

import tlbpol
from tlbpol import _ffi, _symvers

CANARY = 0xA5
GROWTH = 32  # what a later tlbpol_config_init writes past the package's Config
MARK, OTHER = 0x5A, 0x33  # what the package's tlbpol_config_init writes, and any other
MAJOR, MINOR = (int(n) for n in _ffi.package_release().split("."))
NEXT = "%d.%d" % (MAJOR, MINOR + 1)  # a later release, "0.3"
CFG_NODE = _symvers.SYMBOL_VERSIONS["tlbpol_config_init"]  # "TLBPOL_0.2"
OLDEST = _symvers.NODES[0]  # "TLBPOL_0.1"


def env_path(name):
    value = os.environ.get(name)
    if not value:
        raise unittest.SkipTest("$%s is not set (run by meson test)" % name)
    return value


class Generated(unittest.TestCase):
    def gen(self, *args):
        return subprocess.run([sys.executable, env_path("TLBPOL_SYMVERS_GEN"), "--check"]
                              + list(args), capture_output=True, text=True, timeout=60)

    def test_committed_file_matches_the_map(self):
        r = self.gen("--map", env_path("TLBPOL_SYMVERS_MAP"), "--out", _symvers.__file__)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_check_fails_when_the_map_moves_a_function(self):
        # What a release that grows struct tlbpol_config again does to the map.
        with open(env_path("TLBPOL_SYMVERS_MAP"), encoding="utf-8") as f:
            text = f.read()
        self.assertIn("\t\ttlbpol_config_init;\n", text)
        text = text.replace("\t\ttlbpol_config_init;\n", "", 1)
        text += "\nTLBPOL_%s {\n\tglobal:\n\t\ttlbpol_config_init;\n} %s;\n" % (
            NEXT, _symvers.NODES[-1])
        with tempfile.TemporaryDirectory() as tmp:
            moved = os.path.join(tmp, "libtlbpol.map")
            with open(moved, "w", encoding="utf-8") as f:
                f.write(text)
            r = self.gen("--map", moved, "--out", _symvers.__file__)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn('+    "tlbpol_config_init": "TLBPOL_%s",' % NEXT, r.stdout)
        self.assertIn("out of date", r.stderr)

    def test_every_function_has_a_version(self):
        self.assertEqual(sorted(_symvers.SYMBOL_VERSIONS), sorted(_ffi.PROTOTYPES))
        for name, node in _symvers.SYMBOL_VERSIONS.items():
            self.assertIn(node, _symvers.NODES, name)

    def test_no_node_newer_than_the_package(self):
        # A release that exports nothing new adds no node (docs/versioning.md).
        def release(text):
            return tuple(int(n) for n in text.split(".")[:2])
        self.assertEqual(_ffi.package_release(), "%d.%d" % release(tlbpol.__version__))
        for node in _symvers.NODES:
            self.assertTrue(node.startswith("TLBPOL_"), node)
            self.assertLessEqual(release(node[len("TLBPOL_"):]), release(tlbpol.__version__),
                                 node)


def fake_library(tmp, label, version, versions, link=("map",)):
    """Build <tmp>/<label>/libtlbpol.so.0: every function of the package a
    stub, tlbpol_version() returning @version; @versions maps a function to
    the versions it is exported at, oldest first, the last the default
    (default: the package's own, from _symvers).  tlbpol_config_init at
    the package's version (CFG_NODE) writes MARK over sizeof(Config) bytes,
    at any other OTHER over GROWTH bytes more.  @link: with "map", linked
    with a version script; without, every symbol is unversioned, and with
    "-nostdlib" too the library has no version table at all (it needs
    nothing versioned from libc)."""
    size = ctypes.sizeof(_ffi.Config)
    exports = {n: [v] for n, v in _symvers.SYMBOL_VERSIONS.items()}
    exports.update(versions)
    nodes = list(_symvers.NODES)
    for vers in exports.values():
        nodes += [v for v in vers if v not in nodes]
    src = []
    if "-nostdlib" not in link:  # a libc symbol: a version table for GLIBC_2.x
        src += ["#include <string.h>", "void fake_uses_libc(char *p) { memset(p, 0, 1); }"]
    script = {node: [] for node in nodes}
    for name, vers in sorted(exports.items()):
        for i, node in enumerate(vers):
            default = i == len(vers) - 1
            impl = name if default else "%s__%s" % (name, node.replace(".", "_"))
            if name == "tlbpol_version":
                src.append('const char *%s(void) { return "%s"; }' % (impl, version))
            elif name == "tlbpol_config_init":
                src.append("void %s(unsigned char *cfg, unsigned n, unsigned a) "
                           "{ (void)n; (void)a; for (int i = 0; i < %d; i++) cfg[i] = %d; }"
                           % ((impl, size, MARK) if node == CFG_NODE
                              else (impl, size + GROWTH, OTHER)))
            else:
                src.append("void %s(void) {}" % impl)
            if default:
                script[node].append(name)
            else:  # kept beside the default, as lib/hosted/compat.c does
                src.append('__asm__(".symver %s, %s@%s");' % (impl, name, node))
    text = []
    for i, node in enumerate(nodes):
        # A node left with nothing of its own (its one function moved on,
        # as 0.3's tlbpol_config_init does in the newer library) has no
        # "global:", which ld refuses empty.
        text.append("%s {\n%s%s}%s;\n" % (
            node, "\tglobal:\n" + "".join("\t\t%s;\n" % n for n in script[node])
            if script[node] else "",
            "\tlocal:\n\t\t*;\n" if i == len(nodes) - 1 else "",
            " " + nodes[i - 1] if i else ""))
    d = os.path.join(tmp, label)
    os.mkdir(d)
    with open(os.path.join(d, "fake.c"), "w") as f:
        f.write("\n".join(src) + "\n")
    with open(os.path.join(d, "fake.map"), "w") as f:
        f.write("".join(text))
    out = os.path.join(d, "libtlbpol.so.0")
    args = ["-Wl,--version-script=" + os.path.join(d, "fake.map") if a == "map" else a
            for a in link]
    r = subprocess.run(["cc", "-shared", "-fPIC", "-o", out, os.path.join(d, "fake.c")] + args,
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError("cc failed:\n" + r.stderr + "".join(text))
    return out


# Runs in a child with $TLBPOL_LIBRARY set: the package's own path, from
# the library search to _ffi.call(), as Engine uses it.
CHILD = textwrap.dedent("""\
    import ctypes, sys
    import tlbpol
    from tlbpol import _ffi
    size = ctypes.sizeof(_ffi.Config)
    buf = (ctypes.c_uint8 * (size + %d))(*([%d] * (size + %d)))
    _ffi.call("tlbpol_config_init", ctypes.cast(buf, ctypes.POINTER(_ffi.Config)),
              nr_cpus=2, arch=1)
    print(tlbpol.version(), _ffi.lib_path(), _ffi.has("tlbpol_reason_cite"))
    print(bytes(buf[:size]).hex())
    print(bytes(buf[size:]).hex())
""") % (GROWTH, CANARY, GROWTH)


class FakeLibrary(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("cc"):
            raise unittest.SkipTest("no C compiler (cc) to build the fake libtlbpol.so.0")
        cls.tmpdir = tempfile.TemporaryDirectory()
        tmp = cls.tmpdir.name
        cls.newer = fake_library(tmp, "newer", NEXT + ".0", {
            "tlbpol_config_init": [CFG_NODE, "TLBPOL_" + NEXT],
            "tlbpol_reason_cite": ["TLBPOL_" + NEXT]})
        cls.older = fake_library(tmp, "older", OLDEST[len("TLBPOL_"):] + ".4", {
            "tlbpol_config_init": [OLDEST]})
        cls.same = fake_library(tmp, "same", _ffi.package_release() + ".7", {})
        cls.unversioned = {}
        for link in ((), ("-nostdlib",)):
            for version in (NEXT + ".0", _ffi.package_release() + ".7"):
                label = "unversioned%s-%s" % ("".join(link), version)
                cls.unversioned[link, version] = fake_library(tmp, label, version, {}, link)

    @classmethod
    def tearDownClass(cls):
        cls.tmpdir.cleanup()

    def test_the_version_written_for_runs(self):
        env = dict(os.environ, TLBPOL_LIBRARY=self.newer)
        r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        (version, path, cite), config, after = [l.split() for l in r.stdout.splitlines()]
        self.assertEqual((version, path), (NEXT + ".0", self.newer))
        size = ctypes.sizeof(_ffi.Config)
        self.assertEqual(after[0], "%02x" % CANARY * GROWTH,
                         "tlbpol_config_init wrote past the package's Config")
        self.assertEqual(config[0], "%02x" % MARK * size, "not tlbpol_config_init@" + CFG_NODE)
        # Only at the next release's node here: not the function this package
        # knows, so missing, as from a library that lacks it.
        self.assertEqual(cite, "False")

    def test_bound_in_process(self):
        lib = _ffi._bind(ctypes.CDLL(self.newer))
        size = ctypes.sizeof(_ffi.Config)
        buf = (ctypes.c_uint8 * (size + GROWTH))(*([CANARY] * (size + GROWTH)))
        lib.tlbpol_config_init(ctypes.cast(buf, ctypes.POINTER(_ffi.Config)), 1, 1)
        self.assertEqual(bytes(buf), bytes([MARK]) * size + bytes([CANARY]) * GROWTH)
        self.assertFalse("tlbpol_reason_cite" in lib.functions)
        with self.assertRaisesRegex(AttributeError, "tlbpol_reason_cite@"
                                    + _symvers.SYMBOL_VERSIONS["tlbpol_reason_cite"]):
            lib.tlbpol_reason_cite

    def test_older_library_is_refused(self):
        with self.assertRaisesRegex(AttributeError, "tlbpol_config_init@" + CFG_NODE):
            _ffi._bind(ctypes.CDLL(self.older))
        env = dict(os.environ, TLBPOL_LIBRARY=self.older)
        r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                           text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("cannot load", r.stderr)
        self.assertIn("no tlbpol_config_init@" + CFG_NODE, r.stderr)

    def test_without_dlvsym_only_this_release(self):
        with mock.patch.object(_ffi, "_find_dlvsym", return_value=None):
            with self.assertRaisesRegex(OSError, "is libtlbpol %s.0, and without dlvsym" % NEXT):
                _ffi._bind(ctypes.CDLL(self.newer))
            with self.assertRaisesRegex(OSError, "is libtlbpol %s.4, and without dlvsym"
                                        % OLDEST[len("TLBPOL_"):]):
                _ffi._bind(ctypes.CDLL(self.older))
            lib = _ffi._bind(ctypes.CDLL(self.same))
        self.assertEqual(lib.tlbpol_version(), (_ffi.package_release() + ".7").encode())
        self.assertEqual(sorted(lib.functions), sorted(_ffi.PROTOTYPES))

    def test_unversioned_library_only_this_release(self):
        # dlvsym() accepts any version of an unversioned symbol: checked as
        # without dlvsym().
        for link in ((), ("-nostdlib",)):
            with self.subTest(link=link):
                with self.assertRaisesRegex(OSError, "is libtlbpol %s.0, .*without symbol "
                                            "versions" % NEXT):
                    _ffi._bind(ctypes.CDLL(self.unversioned[link, NEXT + ".0"]))
                same = self.unversioned[link, _ffi.package_release() + ".7"]
                lib = _ffi._bind(ctypes.CDLL(same))
                self.assertEqual(sorted(lib.functions), sorted(_ffi.PROTOTYPES))

    def test_dlvsym_is_found(self):
        # glibc (this test's platform): the check above is the fallback.
        try:
            glibc = os.confstr("CS_GNU_LIBC_VERSION")
        except (ValueError, OSError):
            glibc = None
        if not glibc:
            self.skipTest("not glibc")
        self.assertIsNotNone(_ffi._find_dlvsym())


if __name__ == "__main__":
    prog = unittest.main(exit=False)
    res = prog.result
    if res.testsRun and len(res.skipped) == res.testsRun:
        sys.exit(77)
    sys.exit(0 if res.wasSuccessful() else 1)
