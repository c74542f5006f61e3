#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_man.py: libtlbpol's man pages (gen/kdoc2man.py) say what the header
says, render cleanly, and are found by man-db.

  check_man.py [--header H] MAPFILE MANDIR
      The three checks below, one after the other (tests/meson.build's
      'man-pages'); --render's and --apropos's are left out, with a SKIP
      line, where groff or man-db is not installed.
  check_man.py [--header H] --structure MAPFILE MANDIR
      Every symbol the library exports (lib/libtlbpol.map) and every function
      the header declares has a page MANDIR/NAME.3; every documented struct
      and enum a page NAME.3type; tlbpol.7 exists and lists them all.  A
      function's page has: a NAME line "name \\- summary" of one sentence
      (no "Context:"/"Return:" in it, at most 80 characters); SYNOPSIS with
      the #include and the header's prototype; DESCRIPTION; ARGUMENTS with a
      text for every parameter; CONTEXT where the kernel-doc has one; RETURN
      VALUE; ERRORS with an entry for each -Exxx its Return: text names; SEE
      ALSO with tlbpol(7); "Hosted build only" for a TLBPOL_HOSTED_API one.
      A type's page: its definition, and a text for every field/enumerator.
  check_man.py [--header H] --render MANDIR
      Every page renders with `groff -man -ww -z` without a warning (exit 77
      without groff).
  check_man.py [--header H] --apropos MANDIR
      The pages installed into a temporary man tree and indexed by mandb
      (a private, empty config: nothing of the system's is read or written)
      are found: `whatis -M` and `apropos -M` find tlbpol(7),
      tlbpol_submit(3) and tlbpol_event(3type), `man -M .. 7 tlbpol` and
      `man -M .. 3type tlbpol_event` open them (exit 77 without man-db).

The header is read by gen/tlbpol_api.py, its one reader; the page set is
gen/kdoc2man.py's (--list), so the checks compare the pages with the header,
not with the generator's idea of them."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "gen"))
from tlbpol_api import load  # noqa: E402
import kdoc2man  # noqa: E402

SKIP = 77
NAME_MAX = 80


def plain(roff):
    """Text of roff source: fonts and escapes removed, .B/.BI/.BR quoting
    undone (the words of a synopsis line, as man shows them)."""
    out = []
    for ln in roff.split("\n"):
        m = re.match(r"^\.(B|I|BI|BR|IR|RB)\s+(.*)$", ln)
        if m:
            # .B and .I join their words with spaces, the others alternate fonts
            sep = " " if len(m.group(1)) == 1 else ""
            ln = sep.join(a or b for a, b in re.findall(r'"([^"]*)"|(\S+)', m.group(2)))
        elif ln.startswith("."):
            continue
        ln = re.sub(r"\\f[BIPR]", "", ln)
        ln = ln.replace("\\-", "-").replace("\\&", "").replace("\\e", "\\").replace("\\(bu", "*")
        out.append(ln)
    return "\n".join(out)


def sections(text):
    """{title: roff lines} of a page."""
    out, cur = {}, None
    for ln in text.split("\n"):
        m = re.match(r'^\.SH\s+"?([^"]*)"?$', ln)
        if m:
            cur = m.group(1)
            out[cur] = []
        elif cur is not None:
            out[cur].append(ln)
    return out


def tagged(lines):
    """{tag: text} of the .TP entries of a section (tag: the entry's first
    line, plain; text: the rest, plain)."""
    out, i = {}, 0
    while i < len(lines):
        if lines[i] == ".TP" and i + 1 < len(lines):
            tag = plain(lines[i + 1]).split()[0] if plain(lines[i + 1]).split() else ""
            j, body = i + 2, []
            while j < len(lines) and lines[j] not in (".TP", ".PP") and not lines[j].startswith(".SH"):
                body.append(lines[j])
                j += 1
            out[tag] = plain("\n".join(body)).strip()
            i = j
        else:
            i += 1
    return out


def squash(s):
    return re.sub(r"\s+", "", s)


def check_name(bad, page, name, sec):
    lines = [ln for ln in sec.get("NAME", []) if ln.strip()]
    if len(lines) != 1:
        bad.append(f"{page}: NAME has {len(lines)} lines, not one")
        return
    m = re.match(rf"^{re.escape(name)} \\- (.+)$", lines[0])
    if not m:
        bad.append(f"{page}: NAME is not \"{name} \\- summary\": {lines[0]!r}")
        return
    summary = plain(m.group(1))
    if re.search(r"[.?!]\s+\S", summary) or re.search(r"\b(Context|Return):", summary):
        bad.append(f"{page}: NAME's summary is more than one sentence: {summary!r}")
    if len(summary) > NAME_MAX:
        bad.append(f"{page}: NAME's summary is {len(summary)} characters (> {NAME_MAX})")


def check_function(bad, api, mandir, fn):
    page = f"{fn.name}.3"
    t = open(os.path.join(mandir, page), encoding="utf-8").read()
    sec = sections(t)
    check_name(bad, page, fn.name, sec)
    kd = fn.doc
    need = ["NAME", "SYNOPSIS", "DESCRIPTION", "RETURN VALUE", "SEE ALSO"]
    if fn.params:
        need.append("ARGUMENTS")
    if kd is not None and kd.sections["Context"]:
        need.append("CONTEXT")
    rtext = " ".join(kd.sections["Return"]) if kd is not None else ""
    errnos = sorted(set(re.findall(r"(?<![\w-])-E[A-Z0-9]{2,}\b", rtext)))
    if errnos:
        need.append("ERRORS")
    for s in need:
        if s not in sec or not plain("\n".join(sec[s])).strip():
            bad.append(f"{page}: no {s} section (or an empty one)")
    syn = plain("\n".join(sec.get("SYNOPSIS", [])))
    if "#include <tlbpol/tlbpol.h>" not in syn:
        bad.append(f"{page}: SYNOPSIS has no #include <tlbpol/tlbpol.h>")
    if squash(fn.prototype) not in squash(syn):
        bad.append(f"{page}: SYNOPSIS does not carry the header's prototype {fn.prototype!r}")
    args = tagged(sec.get("ARGUMENTS", []))
    for p in fn.params:
        if not args.get(p.name):
            bad.append(f"{page}: parameter {p.name} is not described in ARGUMENTS")
    errs = tagged(sec.get("ERRORS", []))
    for e in errnos:
        if e not in errs:
            bad.append(f"{page}: {e} (in the Return: text) is not in ERRORS")
    if "tlbpol(7)" not in squash(plain("\n".join(sec.get("SEE ALSO", [])))):
        bad.append(f"{page}: SEE ALSO does not name tlbpol(7)")
    if fn.hosted_only and "Hosted build only" not in plain(t):
        bad.append(f"{page}: a TLBPOL_HOSTED_API function, and the page does not say so")


def check_type(bad, api, mandir, name, kind):
    page = f"{name}.3type"
    p = os.path.join(mandir, page)
    if not os.path.exists(p):
        bad.append(f"{kind} {name}: no page {page}")
        return
    sec = sections(open(p, encoding="utf-8").read())
    check_name(bad, page, name, sec)
    if f"{kind} {name} {{" not in plain("\n".join(sec.get("SYNOPSIS", []))):
        bad.append(f"{page}: SYNOPSIS has no definition of {kind} {name}")
    if kind == "struct":
        members = [f.name for f in api.structs[name].fields]
        got = tagged(sec.get("FIELDS", []))
    else:
        members = [m.name for m in api.enums[name].members]
        got = tagged(sec.get("VALUES", []))
    for m in members:
        if not got.get(m):
            bad.append(f"{page}: {m} is not described")


def structure(a):
    api = load(a.header)
    mandir = a.args[1]
    syms = set(re.findall(r"^\s+(tlbpol_\w+);", open(a.args[0]).read(), re.M))
    bad = []
    for s in sorted(syms | set(api.functions)):
        if not os.path.exists(os.path.join(mandir, f"{s}.3")):
            bad.append(f"{s}: no page")
        elif s in api.functions:
            check_function(bad, api, mandir, api.functions[s])
    for s in sorted(syms - set(api.functions)):
        bad.append(f"{s}: exported, but the header declares no such function")
    types = kdoc2man.type_docs(api)
    for s in api.structs.values():
        if s.name not in types:
            bad.append(f"struct {s.name}: no kernel-doc comment, so no page")
    for e in api.enums.values():
        if e.name not in types:
            bad.append(f"enum {e.name}: no kernel-doc comment, so no page")
    for n, (kind, _) in sorted(types.items()):
        check_type(bad, api, mandir, n, kind)
    p7 = os.path.join(mandir, "tlbpol.7")
    if not os.path.exists(p7):
        bad.append("tlbpol.7: no page")
    else:
        t = open(p7, encoding="utf-8").read()
        sec = sections(t)
        check_name(bad, "tlbpol.7", "tlbpol", sec)
        see = squash(plain("\n".join(sec.get("SEE ALSO", []))))
        for f in kdoc2man.page_files(api, "3"):
            n, s = f.rsplit(".", 1)
            if f"{n}({s})" not in see:
                bad.append(f"tlbpol.7: SEE ALSO does not list {n}({s})")
        table = plain("\n".join(sec.get("WHERE EACH CALL MAY RUN", [])))
        for fn in api.functions:
            if f"{fn}(3)" not in table:
                bad.append(f"tlbpol.7: {fn} is not in the context table")
    for b in bad:
        print("FAIL:", b)
    print(f"{len(api.functions)} function pages, {len(types)} type pages, tlbpol.7: "
          f"{len(bad)} problems ({len(syms)} exported functions)")
    return 1 if bad else 0


def expected(api, mandir):
    files = kdoc2man.page_files(api, "3") + kdoc2man.page_files(api, "7")
    missing = [f for f in files if not os.path.exists(os.path.join(mandir, f))]
    return files, missing


def render(a):
    groff = shutil.which("groff")
    if not groff:
        print("SKIP: no groff (apt-get install groff-base)")
        return SKIP
    api = load(a.header)
    files, missing = expected(api, a.args[0])
    bad = [f"{f}: no page" for f in missing]
    for f in files:
        if f in missing:
            continue
        # groff's default device: -Tutf8 does not warn of an unknown font
        r = subprocess.run([groff, "-man", "-ww", "-z", os.path.join(a.args[0], f)],
                           capture_output=True, text=True)
        for ln in (r.stderr.strip().split("\n") if r.stderr.strip() else []):
            bad.append(f"{f}: {ln}")
        if r.returncode:
            bad.append(f"{f}: groff exited with {r.returncode}")
    for b in bad:
        print("FAIL:", b)
    print(f"{len(files)} pages rendered with groff -man -ww: {len(bad)} warnings or errors")
    return 1 if bad else 0


def apropos(a):
    tools = {t: shutil.which(t) for t in ("mandb", "apropos", "whatis", "man")}
    if not all(tools.values()):
        print("SKIP: man-db is not installed (" +
              ", ".join(t for t, p in tools.items() if not p) + " missing)")
        return SKIP
    api = load(a.header)
    files, missing = expected(api, a.args[0])
    if missing:
        print("FAIL: pages missing:", " ".join(missing))
        return 1
    bad = []
    with tempfile.TemporaryDirectory(prefix="tlbpol-man-") as tmp:
        tree = os.path.join(tmp, "man")
        for f in files:
            sub = os.path.join(tree, "man" + f.rsplit(".", 1)[1][:1])  # 3type -> man3
            os.makedirs(sub, exist_ok=True)
            shutil.copy(os.path.join(a.args[0], f), sub)
        conf = os.path.join(tmp, "man_db.conf")  # empty: no system paths, no system cache
        open(conf, "w").close()
        env = dict(os.environ, MANPATH=tree, LC_ALL="C.UTF-8", MANWIDTH="80")
        env.pop("MANOPT", None)

        def run(*cmd):
            r = subprocess.run(list(cmd), capture_output=True, text=True, env=env, timeout=60)
            return r.returncode, r.stdout + r.stderr

        rc, out = run(tools["mandb"], "-C", conf, "-q", "-c", tree)
        if rc:
            bad.append(f"mandb -c failed ({rc}): {out.strip()}")
        rc, out = run(tools["whatis"], "-C", conf, "-M", tree, "tlbpol", "tlbpol_submit",
                      "tlbpol_event")
        # mandb indexes a page whose NAME it cannot parse as "(unknown subject)"
        for want in ("tlbpol (7)", "tlbpol_submit (3)", "tlbpol_event (3type)"):
            if not re.search(rf"^{re.escape(want)}\s+- (?!\(unknown subject\))\S", out, re.M):
                bad.append(f"whatis does not find {want}: {out.strip()!r}")
        rc, out = run(tools["apropos"], "-C", conf, "-M", tree, "tlbpol")
        found = set(re.findall(r"^(\S+) \((\w+)\)\s+- (?!\(unknown subject\))", out, re.M))
        for f in files:
            n, s = f.rsplit(".", 1)
            if (n, s) not in found:
                bad.append(f"apropos tlbpol does not list {n} ({s})")
        rc, out = run(tools["apropos"], "-C", conf, "-M", tree, "page-table change")
        if "tlbpol_event (3type)" not in out:
            bad.append(f"apropos 'page-table change' does not find tlbpol_event(3type): {out!r}")
        for sec, name, text in (("7", "tlbpol", "THE HOST'S OBLIGATIONS"),
                                ("3", "tlbpol_submit", "RETURN VALUE"),
                                ("3type", "tlbpol_event", "FIELDS")):
            rc, out = run(tools["man"], "-C", conf, "-M", tree, "-P", "cat", sec, name)
            if rc or text not in out:
                bad.append(f"man -M {tree} {sec} {name} does not show its page ({rc})")
    for b in bad:
        print("FAIL:", b)
    print(f"{len(files)} pages indexed by mandb in a temporary tree: {len(bad)} problems")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--header", default=None)
    ap.add_argument("--structure", action="store_true")
    ap.add_argument("--render", action="store_true")
    ap.add_argument("--apropos", action="store_true")
    ap.add_argument("args", nargs="+")
    a = ap.parse_args()
    if a.render:
        return render(a)
    if a.apropos:
        return apropos(a)
    if len(a.args) != 2:
        ap.error("MAPFILE MANDIR")
    if a.structure:
        return structure(a)
    rc = [structure(a)]
    a.args = a.args[1:]
    rc += [render(a), apropos(a)]
    return 1 if 1 in rc else 0


if __name__ == "__main__":
    sys.exit(main())
