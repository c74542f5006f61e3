#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_layers.py NM LAYERS ARCHIVE: do the core's calls flow one way?

LAYERS lists the core's files by layer, top first (lib/core/LAYERS).  For
each object of ARCHIVE this reads its undefined symbols (`nm -u`) and the
object that defines each (`nm --defined-only`): a call from one file into
another must go to a strictly lower layer.  Fails on a call up or sideways,
and on an object LAYERS does not place (a new file must be given a layer).
Static inline helpers of internal.h are not calls between files and are not
seen: they are the shared vocabulary every layer uses.

check_layers.py --self-test: the checker run on made-up symbol tables, one
clean and one with an upward call, to show it can fail.

check_layers.py --tree ROOT: do the tree's includes and imports flow one way?
ROOT/LAYERS ranks the top-level directories (and a few subdirectories and
files), top first.  Every arrow from one of them to another must go to a
strictly lower row: a C #include (tree_arrows() says how each kind is read), a
Python import, a path a meson.build names, a shell script's `.`/source.

check_layers.py --tree-self-test: the tree checker run on a made-up tree,
clean, then with each wrong-way arrow planted, to show it fails on each.
"""
import os
import re
import subprocess
import sys


def read_layers(path):
    """A LAYERS file (lib/core/LAYERS, ROOT/LAYERS): rows of names, top
    first, "#" comments; returns each name's row.  A directory's trailing
    "/" is dropped."""
    rank = {}
    depth = 0
    for line in open(path):
        names = line.split("#", 1)[0].split()
        if not names:
            continue
        for name in names:
            rank[name.rstrip("/")] = depth
        depth += 1
    return rank


def member_name(member):
    # meson names an archive member after its source: lib_core_batch.c.o;
    # the kernel build's members are batch.o.
    m = re.search(r"([A-Za-z0-9_]+?)\.c\.o(bj)?$|([A-Za-z0-9_]+)\.o(bj)?$", member)
    name = m.group(1) or m.group(3)
    return name.rsplit("lib_core_", 1)[-1]


def nm_table(nm, archive, flag):
    out = subprocess.run([nm, "-A", flag, archive], capture_output=True, text=True,
                         check=True).stdout
    return parse_nm(out)


def parse_nm(out):
    rows = []
    for line in out.splitlines():
        # archive:member:[value] type symbol (no colon in our paths)
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        f = parts[2].split()
        if len(f) < 2:
            continue
        rows.append((member_name(parts[1]), f[-2], f[-1]))
    return rows


def check(rank, defined, undefined):
    """defined/undefined: lists of (file, type, symbol).  Returns problems."""
    bad = []
    owner = {}
    files = set()
    for f, t, s in defined:
        files.add(f)
        if t in "TDBRWV":  # global: code, data, bss, read-only, weak
            owner[s] = f
    for f, _, _ in undefined:
        files.add(f)
    for f in sorted(files):
        if f not in rank:
            bad.append(f"{f}: not placed in any layer of lib/core/LAYERS")
    seen = set()
    for f, _, s in undefined:
        d = owner.get(s)
        if d is None or d == f or f not in rank or d not in rank:
            continue
        if rank[d] <= rank[f] and (f, d, s) not in seen:
            seen.add((f, d, s))
            how = "sideways" if rank[d] == rank[f] else "up"
            bad.append(f"{f} -> {d}: {s} calls {how} (layer {rank[f]} -> {rank[d]})")
    return bad


def self_test():
    rank = {"top": 0, "mid": 1, "low": 2}
    # nm -A's own format, as GNU nm prints it for a meson archive.
    defined = parse_nm("a.a:a.a.p/lib_core_top.c.o:0000000000000000 T api\n"
                       "a.a:a.a.p/lib_core_mid.c.o:0000000000000040 T mid_fn\n"
                       "a.a:a.a.p/lib_core_mid.c.o:0000000000000000 t mid_static\n"
                       "a.a:low.o:0000000000000000 T low_fn\n")
    clean = parse_nm("a.a:a.a.p/lib_core_top.c.o:                 U mid_fn\n"
                     "a.a:a.a.p/lib_core_mid.c.o:                 U low_fn\n"
                     "a.a:a.a.p/lib_core_top.c.o:                 U low_fn\n")
    up = clean + parse_nm("a.a:low.o:                 U mid_fn\n")
    side = [("top", "U", "api2")]
    ok = not check(rank, defined, clean)
    caught = check(rank, defined, up)
    caught_new = check(rank, defined + [("stray", "T", "x")], clean)
    print("clean graph:", "passes" if ok else "FAILS")
    print("planted upward call:", caught or "NOT CAUGHT")
    print("unplaced file:", caught_new or "NOT CAUGHT")
    return 0 if ok and caught and caught_new else 1


# ---- The tree: arrows between top-level directories -------------------------

C_EXT = (".c", ".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp", ".S")
SKIP_DIRS = {".git", "__pycache__", "target", "node_modules"}


def unit_of(rank, rel):
    """The longest LAYERS name that is REL or a directory above it."""
    best = None
    for name in rank:
        if (rel == name or rel.startswith(name + "/")) and \
                (best is None or len(name) > len(best)):
            best = name
    return best


def is_build_dir(path):
    # A meson (or any ninja) build directory inside the tree is not source.
    return os.path.exists(os.path.join(path, "meson-private")) or \
        os.path.exists(os.path.join(path, "build.ninja"))


def tree_files(root):
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and
                         not is_build_dir(os.path.join(d, x)))
        for f in sorted(files):
            out.append(os.path.relpath(os.path.join(d, f), root))
    return out


def kind_of(root, rel):
    base = os.path.basename(rel)
    if base == "meson.build":
        return "meson"
    if rel.endswith(C_EXT):
        return "c"
    if rel.endswith(".py"):
        return "py"
    if rel.endswith(".sh"):
        return "sh"
    try:
        with open(os.path.join(root, rel), "rb") as f:
            first = f.readline(200)
    except OSError:
        return None
    if first.startswith(b"#!"):
        if b"python" in first:
            return "py"
        if re.search(rb"\b(ba|da|k)?sh\b", first):
            return "sh"
    return None


def inside(root, path):
    """PATH (absolute, normalised) as a path relative to ROOT, or None."""
    rel = os.path.relpath(path, root)
    if rel == "." or rel.startswith(".."):
        return None
    return rel if os.path.exists(path) else None


def c_arrows(root, rel, text):
    # #include "x" is looked up beside the including file, then in the
    # build's include roots: include/ (inc) and the source root (support_dep
    # adds it, for "support/NAME.h").  <x> only in the include roots.
    here = os.path.dirname(os.path.join(root, rel))
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r'\s*#\s*include\s*([<"])([^">]+)[">]', line)
        if not m:
            continue
        dirs = ([here] if m.group(1) == '"' else []) + \
            [os.path.join(root, "include"), root]
        for d in dirs:
            t = inside(root, os.path.normpath(os.path.join(d, m.group(2))))
            if t:
                yield n, t, "#include " + m.group(0).split("include", 1)[1].strip()
                break


def py_path_expr(node, fdir):
    """Evaluate a sys.path entry built from literals and __file__, or None."""
    import ast
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return os.path.join(fdir, node.value)
    if isinstance(node, ast.Name) and node.id == "__file__":
        return os.path.join(fdir, "__file__")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        a, b = py_path_expr(node.left, fdir), py_path_expr(node.right, fdir)
        if a and b:
            return os.path.join(a, os.path.relpath(b, fdir))
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        a = py_path_expr(node.value, fdir)
        return os.path.dirname(os.path.normpath(a)) if a else None
    if isinstance(node, ast.Call):
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        if name in ("resolve", "absolute") and isinstance(f, ast.Attribute):
            return py_path_expr(f.value, fdir)
        args = [py_path_expr(a, fdir) for a in node.args]
        if None in args or not args:
            return None
        if name in ("abspath", "realpath", "normpath", "Path", "PurePath", "str",
                    "fspath"):
            return os.path.normpath(args[0])
        if name == "dirname":
            return os.path.dirname(os.path.normpath(args[0]))
        if name == "join":
            return os.path.join(args[0], *[os.path.relpath(a, fdir) for a in args[1:]])
    return None


def py_module(root, bases, mod):
    """The in-tree file or package directory that MOD names from BASES."""
    parts = mod.split(".")
    for base in bases:
        for k in range(len(parts), 0, -1):
            p = os.path.join(base, *parts[:k])
            for cand in (p + ".py", os.path.join(p, "__init__.py"), p):
                if os.path.isfile(cand) or (cand == p and os.path.isdir(p)):
                    t = inside(root, os.path.normpath(cand))
                    if t:
                        return t
    return None


def package_roots(root, files):
    # Directories that hold a package (NAME/__init__.py): what PYTHONPATH
    # names when a test or a tool imports the package by its name.
    roots = set()
    for rel in files:
        if rel.endswith("/__init__.py"):
            pkg = os.path.dirname(rel)
            while os.path.exists(os.path.join(root, os.path.dirname(pkg), "__init__.py")):
                pkg = os.path.dirname(pkg)
            roots.add(os.path.join(root, os.path.dirname(pkg)))
    return sorted(roots)


def py_arrows(root, rel, text, pkg_roots):
    import ast
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    fdir = os.path.dirname(os.path.join(root, rel))
    added = []
    for node in ast.walk(tree):
        # sys.path.insert(i, P) / sys.path.append(P) with P computable here.
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("insert", "append") and \
                isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "path":
            p = py_path_expr(node.args[-1], fdir) if node.args else None
            if p:
                added.append(os.path.normpath(p))
                t = inside(root, os.path.normpath(p))
                if t:
                    yield node.lineno, t, "sys.path += " + os.path.relpath(p, root)
    pkg = fdir
    while os.path.exists(os.path.join(pkg, "__init__.py")):
        pkg = os.path.dirname(pkg)
    bases = [fdir] + added + [pkg, root] + pkg_roots
    for node in ast.walk(tree):
        mods = []  # (module, where to look it up, how the file says it)
        if isinstance(node, ast.Import):
            mods = [(a.name, bases, "import " + a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            base = fdir
            for _ in range(node.level - 1):
                base = os.path.dirname(base)
            dots = "." * node.level + (node.module or "")
            mods = [((node.module + "." if node.module else "") + a.name, [base],
                     f"from {dots} import {a.name}") for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mods = [(node.module + "." + a.name, bases,
                     f"from {node.module} import {a.name}") for a in node.names]
        for mod, where, how in mods:
            t = py_module(root, where, mod)
            if t:
                yield node.lineno, t, how


def meson_arrows(root, rel, text):
    # Any quoted path that leaves the directory ('../x', files('../x'),
    # include_directories('..')), or that a project_source_root() / 'x'
    # names: a source, a header root or a data file of another directory.
    here = os.path.dirname(os.path.join(root, rel))
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0]
        for m in re.finditer(r"(project_source_root\(\)\s*/\s*|global_source_root\s*/\s*)?"
                             r"'([^'\n]*)'", line):
            base = root if m.group(1) else here
            val = m.group(2)
            if not val or (not m.group(1) and rel != "meson.build" and
                           not val.startswith("..")):
                continue
            p = os.path.normpath(os.path.join(base, val))
            if p == os.path.normpath(root):
                continue  # the source root as an include root: each include is seen
            t = inside(root, p)
            if t:
                yield n, t, "'" + val + "'"


def sh_arrows(root, rel, text):
    here = os.path.dirname(os.path.join(root, rel))
    var = {}

    def subst(s):
        s = s.strip().strip('"\'')
        s = re.sub(r'\$\(\s*dirname\s+(--\s+)?"?\$0"?\s*\)|\$\{0%/\*\}', here, s)
        s = re.sub(r'\$\(\s*cd\s+"?([^"&]*)"?\s*&&\s*pwd(\s+-P)?\s*\)', r"\1", s)
        s = re.sub(r'\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?',
                   lambda m: var.get(m.group(1), m.group(0)), s)
        return s.replace('"', "")

    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r"\s*(?:readonly\s+|export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.+?)\s*$", line)
        if m:
            v = subst(m.group(2))
            if "$" not in v:
                var[m.group(1)] = os.path.normpath(os.path.join(here, v))
            continue
        m = re.match(r"\s*(?:\.|source)\s+([^;&|#]+)", line)
        if not m:
            continue
        v = subst(m.group(1).strip())
        if "$" in v:
            continue
        t = inside(root, os.path.normpath(os.path.join(here, v)))
        if t:
            yield n, t, ". " + m.group(1).strip()


def tree_arrows(root, files):
    """(file, line, target, what) for every reference out of a file."""
    pkg_roots = package_roots(root, files)
    for rel in files:
        kind = kind_of(root, rel)
        if kind is None:
            continue
        try:
            text = open(os.path.join(root, rel), encoding="utf-8", errors="replace").read()
        except OSError:
            continue
        gen = {"c": lambda: c_arrows(root, rel, text),
               "py": lambda: py_arrows(root, rel, text, pkg_roots),
               "meson": lambda: meson_arrows(root, rel, text),
               "sh": lambda: sh_arrows(root, rel, text)}[kind]()
        for n, t, what in gen:
            yield rel, kind, n, t, what


def check_tree(root, rank):
    files = tree_files(root)
    bad = []
    arrows = 0
    for rel in files:
        if kind_of(root, rel) and unit_of(rank, rel) is None and "/" in rel:
            bad.append(f"{rel}: its directory is in no row of LAYERS")
    for rel, kind, n, t, what in tree_arrows(root, files):
        src, dst = unit_of(rank, rel), unit_of(rank, t)
        if src is None or src == dst:
            continue
        if dst is None:
            if "/" in t.rstrip("/"):
                bad.append(f"{rel}:{n}: {what} -> {t}, which no row of LAYERS places")
            continue  # a top-level file (LAYERS, README.md): the whole tree's
        arrows += 1
        if rank[dst] <= rank[src]:
            how = "sideways" if rank[dst] == rank[src] else "up"
            bad.append(f"{rel}:{n}: {what} -> {t}: {src} -> {dst} goes {how}")
    return bad, arrows


def tree_main(root):
    rank = read_layers(os.path.join(root, "LAYERS"))
    bad, arrows = check_tree(root, rank)
    for line in bad:
        print("FAIL:", line)
    if not bad:
        print(f"ok: {root}: all {arrows} arrows between LAYERS' {len(rank)} units go down")
    return 1 if bad else 0


TREE_LAYERS = "scripts\nlab tests\nexamples bindings\nsupport\nlib/hosted\nlib/core\ninclude\n"
TREE = {
    "LAYERS": TREE_LAYERS,
    "include/tlbpol/tlbpol.h": "int tlbpol_x(void);\n",
    "lib/core/internal.h": '#include "tlbpol/tlbpol.h"\n',
    "lib/core/engine.c": '#include "internal.h"\n#include <tlbpol/tlbpol.h>\n',
    "lib/hosted/compat.c": '#include "../core/internal.h"\n',
    "support/stale.h": '#include "tlbpol/tlbpol.h"\n',
    "support/meson.build": "support_dep = declare_dependency("
                           "include_directories : include_directories('..'))\n",
    "examples/decide.c": '#include "support/stale.h"\n',
    "lab/sim/sim.h": '#include "support/stale.h"\n',
    "lab/trace/checktrace.py": "import os\n",
    "lab/sim/meson.build": "t = files('../trace/checktrace.py', '../../support/stale.h')\n",
    "bindings/python/tlbpol/__init__.py": "from . import _ffi\n",
    "bindings/python/tlbpol/_ffi.py": "import ctypes\n",
    "tests/python/test_api.py": "import tlbpol\n",
    "tests/meson.build": "x = meson.project_source_root() / 'lib/core/internal.h'\n",
    "scripts/test.sh": '#!/bin/sh\nhere=$(cd "$(dirname "$0")" && pwd)\n. "$here/../lab/env.sh"\n',
    "lab/env.sh": "X=1\n",
}
PLANTS = {
    "lib/core including support/stale.h":
        ("lib/core/rules.c", '#include "support/stale.h"\n'),
    "examples including lab/sim/sim.h":
        ("examples/topology.c", '#include "lab/sim/sim.h"\n'),
    "lib/core including lib/hosted":
        ("lib/core/cpu.c", '#include "../hosted/hosted.h"\n'),
    "bindings/python importing from lab/ (a package path)":
        ("bindings/python/tlbpol/_trace.py", "from lab.trace import checktrace\n"),
    "bindings/python importing from lab/ (through sys.path)":
        ("bindings/python/tlbpol/_trace.py",
         "import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname("
         "os.path.abspath(__file__)), '..', '..', '..', 'lab', 'trace'))\n"
         "import checktrace\n"),
    "tests importing lab's Python":
        ("tests/check_x.py", "import sys\nfrom pathlib import Path\n"
         "sys.path.append(str(Path(__file__).resolve().parent.parent / 'lab/trace'))\n"
         "import checktrace\n"),
    "a tests meson.build naming lab's sources":
        ("tests/meson.build", "s = files('../lab/sim/sim.h')\n"),
    "a lab shell script sourcing tests/":
        ("lab/run.sh", '#!/bin/sh\n. "$(dirname "$0")/../tests/env.sh"\n'),
    "a file in a directory LAYERS does not place":
        ("tools/x.c", '#include "tlbpol/tlbpol.h"\n'),
}


def write_tree(root, files):
    for rel, text in files.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)


def tree_self_test():
    import tempfile
    ok = True
    with tempfile.TemporaryDirectory() as d:
        write_tree(d, dict(TREE, **{"tests/env.sh": "Y=1\n", "lab/sim/sim.c": ""}))
        bad, arrows = check_tree(d, read_layers(os.path.join(d, "LAYERS")))
        print("clean tree:", f"passes ({arrows} arrows)" if not bad else bad)
        ok = not bad and arrows == 10
    for what, (rel, text) in PLANTS.items():
        with tempfile.TemporaryDirectory() as d:
            write_tree(d, dict(TREE, **{"tests/env.sh": "Y=1\n", "lab/sim/sim.c": "",
                                        "lib/hosted/hosted.h": "", rel: text}))
            bad, _ = check_tree(d, read_layers(os.path.join(d, "LAYERS")))
        print(f"planted {what}:", bad or "NOT CAUGHT")
        ok = ok and bool(bad)
    return 0 if ok else 1


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if argv[1:] == ["--tree-self-test"]:
        return tree_self_test()
    if len(argv) == 3 and argv[1] == "--tree":
        return tree_main(argv[2])
    if len(argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    nm, layers, archive = argv[1:]
    rank = read_layers(layers)
    defined = nm_table(nm, archive, "--defined-only")
    undefined = nm_table(nm, archive, "-u")
    bad = check(rank, defined, undefined)
    for line in bad:
        print("FAIL:", line)
    if not bad:
        print(f"ok: {archive}: every call between the core's {len(rank)} files goes down "
              f"its layers")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
