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
"""
import re
import subprocess
import sys


def read_layers(path):
    rank = {}
    depth = 0
    for line in open(path):
        line = line.split("#", 1)[0].split()
        if not line:
            continue
        for name in line:
            rank[name] = depth
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


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
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
