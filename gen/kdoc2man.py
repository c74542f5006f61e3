#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""kdoc2man.py: libtlbpol's man pages, from the header's kernel-doc
comments (the header is the documentation: the pages are made from it at
build time, never edited).

usage: kdoc2man.py --list [--section 3|7] HEADER   the page files, one a line
       kdoc2man.py --out DIR [--section 3|7] [--version V] [--readme README]
                   HEADER                          write them into DIR

Section 3: a page NAME.3 per public function (a comment "/** a() / b() -
summary ... */" documents each function it names), and a page NAME.3type
per public structure and enum ("/** struct NAME - ... */", "/** enum NAME -
... */": man-db reads man3/NAME.3type as section 3type).  Section 7:
tlbpol.7, the overview (gen/man7.py; README's api-example block is its
example, read at build time).

A function's page: NAME ("name \\- " and the comment's first sentence),
SYNOPSIS (the declaration, wrapped at its parameters), DESCRIPTION (the
rest of the summary and the prose), ARGUMENTS ("@arg:" lines), CONTEXT and
RETURN VALUE (the "Context:" and "Return:" sections; a void function
returns no value), ERRORS (each -Exxx of "Return:"; "the errors of f()"
brings f()'s), SEE ALSO.  The header is read by gen/tlbpol_api.py, the one
reader of it; this script only writes roff.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tlbpol_api import Api, Function, KernelDoc, load  # noqa: E402 (the one reader)
from man_roff import context, errors, esc, inline, join, prose, synopsis  # noqa: E402

INCLUDE = "#include <tlbpol/tlbpol.h>"
HOSTED = ("Hosted build only: declared TLBPOL_HOSTED_API, it is in libtlbpol.so and "
          "libtlbpol.a but not in the freestanding core libtlbpol-core.a; compiled "
          "with TLBPOL_FREESTANDING defined, a call to it is an error.")


@dataclass(frozen=True)
class FnPage:
    name: str
    fn: Function
    kd: KernelDoc
    group: Tuple[Function, ...]  # the functions the comment documents, this one first


def fn_pages(api: Api) -> Dict[str, FnPage]:
    """A page for each function a kernel-doc comment names and the header
    declares (a name that is a macro or an example gets none)."""
    out: Dict[str, FnPage] = {}
    for kd in api.kdocs:
        if kd.kind != "function":
            continue
        fns = [api.functions[n] for n in kd.names if n in api.functions]
        for fn in fns:
            out[fn.name] = FnPage(fn.name, fn, kd, tuple([fn] + [f for f in fns if f is not fn]))
    return out


def type_docs(api: Api) -> Dict[str, Tuple[str, KernelDoc]]:
    """name -> (kind, kernel-doc) of each documented public struct and enum."""
    out: Dict[str, Tuple[str, KernelDoc]] = {}
    for s in api.structs.values():
        if s.doc is not None:
            out[s.name] = ("struct", s.doc)
    for e in api.enums.values():
        if e.doc is not None:
            out[e.name] = ("enum", e.doc)
    return out


def page_files(api: Api, section: str) -> List[str]:
    if section == "7":
        return ["tlbpol.7"]
    return sorted([f"{n}.3" for n in fn_pages(api)] + [f"{n}.3type" for n in type_docs(api)])


def name_line(name: str, summary: str) -> str:
    """The NAME line mandb's whatis reads: "name \\- summary"."""
    return f"{name} \\- " + esc(re.sub(r"@(\w+)", r"\1", summary).rstrip(".").strip())


def cap(text: str) -> str:
    """@text with its first word capitalised, unless that is a name
    (@arg, a C identifier, an expression)."""
    m = re.match(r"^([a-z]+)\b(?![_(>\-])", text)
    if m and m.group(1) in ("enum", "struct", "sizeof"):
        return text
    return text[0].upper() + text[1:] if m else text


def errno_text(e: str, what: str) -> str:
    """The words for one errno: the Return: text's; "-ERANGE for @cpu" is
    the header's convention for "@cpu is out of range"."""
    one = re.match(r"^for @(\w+)$", what)
    if e == "-ERANGE" and one:
        return f"@{one.group(1)} is out of range."
    return cap(what) + "." if what else ""


def th(name: str, section: str, version: str) -> str:
    return f'.TH {name.upper()} {section} "" "libtlbpol {version}" "libtlbpol Manual"'


def return_text(api: Api, kd: KernelDoc) -> str:
    return join(kd.sections["Return"])


def all_errors(api: Api, kd: KernelDoc, seen: Optional[List[str]] = None) -> List[Tuple[str, str]]:
    """The errors a Return: text names, then those of each function it
    refers to ("the errors of tlbpol_decide()"), once each."""
    text = return_text(api, kd)
    got = errors(text)
    have = {e for e, _ in got}
    seen = (seen or []) + list(kd.names)
    for ref in re.findall(r"errors of (tlbpol_\w+)\(\)", text):
        other = api.functions.get(ref)
        if other is None or other.doc is None or ref in seen:
            continue
        for e, what in all_errors(api, other.doc, seen):
            if e not in have:
                got.append((e, f"as for {ref}(): {what}"))
                have.add(e)
    return got


def related(api: Api, kd: KernelDoc, own: List[str],
            extra: str = "") -> Tuple[List[str], List[str]]:
    """(functions, types) a comment, its declarations or @extra refer to."""
    text = "\n".join(kd.lines) + "\n" + extra
    for n in own:
        fn = api.functions.get(n)
        if fn is not None:
            text += "\n" + fn.prototype
    fns = sorted({m for m in re.findall(r"\b(tlbpol_\w+)\(", text)
                  if m in api.functions and m not in own})
    types = {m for m in re.findall(r"\b(?:struct|enum) (tlbpol_\w+)", text)
             if m in type_docs(api)}
    # An enumerator named ("TLBPOL_BY_FREE") refers to its enum.
    words = set(re.findall(r"\bTLBPOL_\w+", text))
    types |= {e.name for e in api.enums.values()
              if e.doc is not None and any(m.name in words for m in e.members)}
    return fns, sorted(types)


def see_also(fns: List[str], types: List[str]) -> List[str]:
    refs = [("tlbpol", "7")] + [(f, "3") for f in fns] + [(t, "3type") for t in types]
    return [".SH SEE ALSO"] + [f".BR {n} ({s})" + ("," if i < len(refs) - 1 else "")
                               for i, (n, s) in enumerate(refs)]


def fn_page(api: Api, p: FnPage, version: str) -> str:
    kd, fns = p.kd, set(api.functions)
    w = [th(p.name, "3", version), ".SH NAME", name_line(p.name, kd.summary),
         ".SH SYNOPSIS", ".nf", f".B {esc(INCLUDE)}"]
    for f in p.group:
        w.append(".PP")
        w += synopsis(f.ret, f.name, f.params)
    w.append(".fi")
    w.append(".SH DESCRIPTION")
    body = prose(kd.paras, fns)
    w += body if body else [".PP", inline(cap(kd.summary), fns)]
    if p.fn.hosted_only:
        w += [".PP", esc(HOSTED)]
    params: List[str] = []
    for f in p.group:
        params += [q.name for q in f.params if q.name not in params]
    if params:
        docs = dict(kd.args)
        w.append(".SH ARGUMENTS")
        for n in params:
            w += [".TP", f".I {n}", inline(cap(docs.get(n, "")), fns)]
    if kd.sections["Context"]:
        w += [".SH CONTEXT", inline(cap(context(api, kd)), fns)]
    w.append(".SH RETURN VALUE")
    if kd.sections["Return"]:
        w.append(inline(cap(return_text(api, kd)), fns))
    elif all(f.ret == "void" for f in p.group):
        w.append(f"\\fB{p.name}\\fP() returns no value." if len(p.group) == 1
                 else "These functions return no value.")
    errs = all_errors(api, kd)
    if errs:
        w.append(".SH ERRORS")
        for e, what in errs:
            w += [".TP", f".B {esc(e)}", inline(errno_text(e, what), fns)]
    rel, types = related(api, kd, list(kd.names))
    w += see_also([f.name for f in p.group[1:]] + [r for r in rel if r not in kd.names], types)
    return "\n".join(x for x in w if x != "") + "\n"


def definition(api: Api, kind: str, name: str) -> str:
    """The struct's or enum's definition as the header has it."""
    m = re.search(rf"^{kind} {name} \{{.*?^\}};", api.text, re.S | re.M)
    if not m:
        raise SystemExit(f"kdoc2man: no definition of {kind} {name} in the header")
    return m.group(0)


def constants_for(api: Api, text: str) -> List[List[Tuple[str, str]]]:
    """The #defines each "TLBPOL_EVF_*"-style reference in @text names,
    with their comments (on their line, or before them), a list per
    reference."""
    out: List[List[Tuple[str, str]]] = []
    for prefix in dict.fromkeys(re.findall(r"\b(TLBPOL_[A-Z]+_)\*", text)):
        out.append([(d.name, d.doc) for d in api.defines.values()
                    if d.name.startswith(prefix) and not d.internal and d.value is not None])
    return [g for g in out if g]


def type_page(api: Api, name: str, kind: str, kd: KernelDoc, version: str) -> str:
    fns = set(api.functions)
    w = [th(name, "3type", version), ".SH NAME", name_line(name, kd.summary),
         ".SH SYNOPSIS", ".nf", f".B {esc(INCLUDE)}", ".PP"]
    w += [esc(ln.expandtabs(8)) for ln in definition(api, kind, name).split("\n")]
    w += [".fi", ".SH DESCRIPTION"]
    w += prose(kd.paras, fns) or [".PP", inline(cap(kd.summary), fns)]
    docs = dict(kd.args)
    if kind == "struct":
        w.append(".SH FIELDS")
        for f in api.structs[name].fields:
            w += [".TP", f".I {f.name}", inline(cap(docs.get(f.name, "")), fns)]
    else:
        w.append(".SH VALUES")
        for m in api.enums[name].members:
            w += [".TP", f".BR {m.name} \" ({m.value})\"", inline(cap(m.doc), fns)]
    groups = constants_for(api, " ".join(t for _, t in kd.args))
    if groups:
        w.append(".SH CONSTANTS")
    for consts in groups:
        docs_ = [d for _, d in consts]
        if len(consts) > 1 and docs_[0] and not any(docs_[1:]):
            # The comment before the first is the group's ("Portable PTE bits").
            w += [".PP", inline(docs_[0], fns)]
            consts = [(n, "") for n, _ in consts]
        for n, doc in consts:
            w += [".TP", f'.BR {n} " ({api.value(n):#x})"', inline(cap(doc), fns)]
    # Who uses it: a function that declares or names it (or, for an enum,
    # names one of its values), and the functions its own comment names.
    pat = rf"\b{kind} {name}\b"
    if kind == "enum":
        pat += "|" + "|".join(rf"\b{m.name}\b" for m in api.enums[name].members)
    using = {f.name for f in api.functions.values()
             if re.search(pat, f.prototype)
             or (f.doc is not None and re.search(pat, "\n".join(f.doc.lines)))}
    mentioned, types = related(api, kd, [], definition(api, kind, name))
    users = sorted(using | set(mentioned))
    for other, (k, okd) in type_docs(api).items():
        if other != name and (re.search(rf"\b{kind} {name}\b", "\n".join(okd.lines))
                              or (k == "struct" and re.search(rf"\b{kind} {name}\b",
                                                              definition(api, k, other)))):
            types.append(other)
    w += see_also(users, sorted(t for t in set(types) if t != name))
    return "\n".join(x for x in w if x != "") + "\n"


def write(api: Api, section: str, out: str, version: str, readme: Optional[str]) -> None:
    os.makedirs(out, exist_ok=True)
    pages: Dict[str, str] = {}
    if section == "7":
        import man7  # noqa: E402 (the overview, in its own file)
        pages["tlbpol.7"] = man7.page(api, version, readme, page_files(api, "3"))
    else:
        for n, p in fn_pages(api).items():
            pages[f"{n}.3"] = fn_page(api, p, version)
        for n, (kind, kd) in type_docs(api).items():
            pages[f"{n}.3type"] = type_page(api, n, kind, kd, version)
    for fname, text in pages.items():
        with open(os.path.join(out, fname), "w", encoding="utf-8") as f:
            f.write(text)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--section", choices=["3", "7"], default="3")
    ap.add_argument("--version", default="")
    ap.add_argument("--readme", help="README.md, whose api-example block is tlbpol(7)'s example")
    ap.add_argument("header")
    a = ap.parse_args()
    api = load(a.header)
    if a.list:
        print("\n".join(page_files(api, a.section)))
        return 0
    if not a.out:
        ap.error("--out DIR or --list")
    write(api, a.section, a.out, a.version, a.readme)
    return 0


if __name__ == "__main__":
    sys.exit(main())
