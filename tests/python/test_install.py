#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The package as each way of installing it leaves it, all in a temporary
directory (nothing is written into the source tree or the system):

SiteInstall     meson setup --prefix=/usr/local, meson install --destdir:
                the package lands at $DESTDIR + a directory on this Python's
                default sys.path (python -E -s), imports from there and
                looks for the library first where meson installed it
                (_paths.py); where a private mount namespace can be had
                (root: unshare -m), the destdir is bound onto /usr/local and
                `import tlbpol` runs with an empty environment.
PrivateInstall  meson install into a private prefix: its output names the
                PYTHONPATH, which then imports the package and loads the
                installed library with nothing else set.
PipInstall      pip install --no-build-isolation --no-deps --no-index
                --target of a copy of bindings/python: offline, every module
                installed, the library found through $TLBPOL_LIBRARY or the
                loader's search, and an error that says what to do without.
Wheel           python3 -m build --no-isolation --wheel (python3-build):
                the wheel holds the package's files and the project version.

Each is one meson test (tests/python/meson.build); run alone:
    test_install.py SiteInstall -v   (with the environment meson sets)
Exit status 77 when every test run was skipped (a tool is missing).
"""

import ast
import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

from helpers import env_or_skip

SONAME = "libtlbpol.so.0"
PY = sys.executable  # the Python meson installs for (tlbpol_py)


def package_files(pkg_dir):
    """The files a complete install of the package holds: every module of
    the source tree's tlbpol/ and py.typed."""
    return sorted(n for n in os.listdir(pkg_dir)
                  if n.endswith(".py") or n == "py.typed")


def clean_env(**extra):
    """An environment with none of the variables that could find the
    package or the library for it."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "TLBPOL_LIBRARY", "LD_LIBRARY_PATH", "DESTDIR",
                        "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "PYTHONHOME")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def run(cmd, timeout=120, **kw):
    kw.setdefault("env", clean_env())
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def read_paths(path):
    """LIBDIR and RECORDED_BY of an installed _paths.py, read without
    importing it."""
    out = {}
    with open(path) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            out[target.id] = ast.literal_eval(node.value)
    return out


class Common(unittest.TestCase):
    def setUp(self):
        self.src = env_or_skip("TLBPOL_SOURCE_ROOT")
        self.pkg_src = os.path.join(env_or_skip("PYTHONPATH").split(os.pathsep)[0], "tlbpol")
        self.built_lib = env_or_skip("TLBPOL_LIBRARY")
        self.tmp = tempfile.mkdtemp(prefix="tlbpol-pyinst.")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def need(self, *tools):
        for tool in tools:
            if not shutil.which(tool):
                self.skipTest("%s is not installed" % tool)

    def need_module(self, name, package):
        if importlib.util.find_spec(name) is None:
            self.skipTest("%s is not installed for %s (Debian: %s)" % (name, PY, package))

    def meson_install(self, prefix, destdir=None):
        """Configure, build and install the source tree: meson install's output."""
        self.need("meson", "ninja")
        build = os.path.join(self.tmp, "build")
        steps = [["meson", "setup", build, self.src, "--prefix=" + prefix, "-Dtests=false"],
                 ["meson", "compile", "-C", build],
                 ["meson", "install", "-C", build, "--no-rebuild"]
                 + (["--destdir", destdir] if destdir else [])]
        for cmd in steps:
            r = run(cmd, timeout=300)
            self.assertEqual(r.returncode, 0, "%s:\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
        return r.stdout + r.stderr

    def installed_package(self, root):
        """The one tlbpol/ directory installed under @root."""
        found = [os.path.dirname(p) for p in
                 glob.glob(os.path.join(root, "**", "tlbpol", "__init__.py"), recursive=True)]
        self.assertEqual(len(found), 1, "tlbpol/__init__.py under %s: %s" % (root, found))
        return found[0]

    def check_files(self, pkg_dir):
        self.assertEqual(package_files(pkg_dir), package_files(self.pkg_src),
                         "installed at %s vs bindings/python/tlbpol" % pkg_dir)

    def copy_source(self):
        """bindings/python copied (pip and setuptools write build/ and
        *.egg-info next to the sources)."""
        dst = os.path.join(self.tmp, "src")
        shutil.copytree(os.path.dirname(self.pkg_src), dst,
                        ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
        return dst


class SiteInstall(Common):
    def test_usr_local_is_on_sys_path(self):
        path = json.loads(run([PY, "-E", "-s", "-c",
                               "import json, sys; print(json.dumps(sys.path))"]).stdout)
        destdir = os.path.join(self.tmp, "dest")
        self.meson_install("/usr/local", destdir)
        pkg = self.installed_package(destdir)
        entry = os.path.dirname(pkg)[len(destdir):]
        self.assertIn(entry, path, "meson installed tlbpol into %s, which %s -E -s does not "
                      "read (sys.path %s)" % (entry, PY, path))
        self.check_files(pkg)
        paths = read_paths(os.path.join(pkg, "_paths.py"))
        self.assertEqual(paths["RECORDED_BY"], "meson install")
        self.assertTrue(paths["LIBDIR"].startswith("/usr/local/"), paths)
        self.assertTrue(os.path.exists(destdir + os.path.join(paths["LIBDIR"], SONAME)),
                        "_paths.LIBDIR %s: no %s installed there" % (paths["LIBDIR"], SONAME))

        # Imported from that entry (moved under the destdir), the package
        # looks first where meson installed the library.
        code = ("import sys; sys.path[sys.path.index(%r)] = %r\n"
                "import tlbpol, tlbpol._ffi as f\n"
                "print(tlbpol.__file__); print(next(f._candidates())[1])"
                % (entry, os.path.dirname(pkg)))
        r = run([PY, "-E", "-s", "-c", code], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), [os.path.join(pkg, "__init__.py"),
                                            os.path.join(paths["LIBDIR"], SONAME)])

        # The real thing where it can be had: the destdir's /usr/local in
        # place of the system's, in a private mount namespace, and
        # `import tlbpol` with an empty environment.
        probe = run(["unshare", "-m", "--propagation", "private", "true"]) \
            if shutil.which("unshare") and shutil.which("mount") else None
        if probe is None or probe.returncode != 0:
            print("no private mount namespace (%s): `import tlbpol` from %s not run"
                  % (probe.stderr.strip() if probe else "no unshare", entry))
            return
        code = "import tlbpol; print(tlbpol.__file__); print(tlbpol.lib_path())"
        r = run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                 'mount --bind "$1/usr/local" /usr/local || exit 99; cd / && '
                 'exec env -i "$2" -c "$3"', "sh", destdir, PY, code])
        if r.returncode == 99:
            print("cannot bind-mount onto /usr/local (%s): `import tlbpol` from %s not run"
                  % (r.stderr.strip(), entry))
            return
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), [os.path.join(entry, "tlbpol", "__init__.py"),
                                            os.path.join(paths["LIBDIR"], SONAME)])


class PrivateInstall(Common):
    def test_output_names_pythonpath(self):
        prefix = os.path.join(self.tmp, "prefix")
        out = self.meson_install(prefix)
        pkg = self.installed_package(prefix)
        site = os.path.dirname(pkg)
        self.assertTrue("PYTHONPATH=" + site in out, "meson install's output does not "
                        "name PYTHONPATH=%s; its end:\n%s" % (site, out[-1500:]))
        self.check_files(pkg)
        code = "import tlbpol; print(tlbpol.__file__); print(tlbpol.lib_path())"
        r = run([PY, "-s", "-c", code], cwd="/", env=clean_env(PYTHONPATH=site))
        self.assertEqual(r.returncode, 0, r.stderr)
        libdir = read_paths(os.path.join(pkg, "_paths.py"))["LIBDIR"]
        self.assertEqual(r.stdout.split(), [os.path.join(pkg, "__init__.py"),
                                            os.path.join(libdir, SONAME)])
        self.assertTrue(libdir.startswith(prefix + os.sep), libdir)


class PipInstall(Common):
    def test_pip_target(self):
        self.need_module("pip", "python3-pip")
        self.need_module("setuptools", "python3-setuptools")
        before = sorted(os.listdir(os.path.dirname(self.pkg_src)))
        src = self.copy_source()
        target = os.path.join(self.tmp, "target")
        r = run([PY, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
                 "--no-cache-dir", "--disable-pip-version-check", "--target", target, src],
                env=clean_env(PIP_CONFIG_FILE=os.devnull), cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(sorted(os.listdir(os.path.dirname(self.pkg_src))), before)
        pkg = self.installed_package(target)
        self.check_files(pkg)
        self.assertIsNone(read_paths(os.path.join(pkg, "_paths.py"))["LIBDIR"])

        code = "import tlbpol; print(tlbpol.__file__); print(tlbpol.lib_path()); print(tlbpol.version())"
        nopc = os.path.join(self.tmp, "no-pkgconfig")
        os.mkdir(nopc)
        env = clean_env(PYTHONPATH=target, PKG_CONFIG_LIBDIR=nopc, PKG_CONFIG_PATH=nopc)
        # $TLBPOL_LIBRARY: that library, nothing else.
        r = run([PY, "-s", "-c", code], cwd="/", env=dict(env, TLBPOL_LIBRARY=self.built_lib))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split()[:2], [os.path.join(pkg, "__init__.py"), self.built_lib])
        # The loader's search: LD_LIBRARY_PATH names the build.
        r = run([PY, "-s", "-c", code], cwd="/",
                env=dict(env, LD_LIBRARY_PATH=os.path.dirname(self.built_lib)))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(os.path.basename(r.stdout.split()[1]), SONAME)
        # Nowhere to find it: the error says what to do (unless this
        # system has a libtlbpol where the loader looks).
        r = run([PY, "-s", "-c", code], cwd="/", env=env)
        if r.returncode == 0:
            print("a libtlbpol is installed on this system (%s): the not-found message "
                  "is not checked" % r.stdout.split()[1])
            return
        for words in ("cannot load " + SONAME, "not recorded", "TLBPOL_LIBRARY=",
                      "LD_LIBRARY_PATH"):
            self.assertIn(words, r.stderr)


class Wheel(Common):
    def test_wheel(self):
        self.need_module("build", "python3-build")
        self.need_module("setuptools", "python3-setuptools")
        self.need_module("wheel", "python3-wheel")
        version = env_or_skip("TLBPOL_VERSION")
        src = self.copy_source()
        dist = os.path.join(self.tmp, "dist")
        r = run([PY, "-m", "build", "--no-isolation", "--wheel", "--outdir", dist, src],
                cwd=self.tmp, env=clean_env(PIP_NO_INDEX="1"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        wheels = glob.glob(os.path.join(dist, "*.whl"))
        self.assertEqual([os.path.basename(w) for w in wheels],
                         ["tlbpol-%s-py3-none-any.whl" % version])
        with zipfile.ZipFile(wheels[0]) as z:
            names = z.namelist()
            z.extractall(os.path.join(self.tmp, "wheel"))
        self.assertEqual(sorted(n[len("tlbpol/"):] for n in names if n.startswith("tlbpol/")),
                         package_files(self.pkg_src))
        self.assertEqual([n for n in names if not n.startswith(("tlbpol/", "tlbpol-"))], [])
        code = "import tlbpol; print(tlbpol.__file__); print(tlbpol.version(), tlbpol.__version__)"
        r = run([PY, "-s", "-c", code], cwd="/",
                env=clean_env(PYTHONPATH=os.path.join(self.tmp, "wheel"),
                              TLBPOL_LIBRARY=self.built_lib))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(),
                         [os.path.join(self.tmp, "wheel", "tlbpol", "__init__.py"), version, version])


if __name__ == "__main__":
    prog = unittest.main(exit=False)
    res = prog.result
    if res.testsRun and len(res.skipped) == res.testsRun:
        sys.exit(77)
    sys.exit(0 if res.wasSuccessful() else 1)
