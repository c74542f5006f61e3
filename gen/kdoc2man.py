#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""kdoc2man.py: one man(3) page per public function, from the header's
kernel-doc comments (the header is the documentation: the pages are made
from it at build time, never edited).

usage: kdoc2man.py --list HEADER            the page names, one per line
       kdoc2man.py --out DIR --version V HEADER
                                            write DIR/<function>.3

A comment "/** name() - summary ... */" documents the function(s) it
names: "a() / b() - ..." gives a page to each.  Its "@arg: text" lines are
the arguments, its "Context:" and "Return:" paragraphs those sections, the
rest the description.  The synopsis is the function's TLBPOL_API
declaration in the header.  The header is read by gen/tlbpol_api.py, the
one reader of it; this script only writes roff.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tlbpol_api import KernelDoc, load  # noqa: E402 (the one reader of the header)

# name -> (its kernel-doc, its declaration, the other names it documents)
Pages = Dict[str, Tuple[KernelDoc, str, List[str]]]


def roff(text: str) -> str:
    text = text.replace("\\", "\\e")
    out = []
    for line in text.split("\n"):
        if line.startswith(".") or line.startswith("'"):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def page(name: str, version: str, kd: KernelDoc, decl: str, others: List[str]) -> str:
    w = [f'.TH {name.upper()} 3 "" "libtlbpol {version}" "libtlbpol Manual"',
         ".SH NAME", f"{name} \\- " + roff(kd.summary),
         ".SH SYNOPSIS", ".nf", roff("#include <tlbpol/tlbpol.h>"), "", roff(decl), ".fi"]
    if kd.args:
        w.append(".SH ARGUMENTS")
        for n, text in kd.args:
            w += [".TP", f"\\fI{roff(n)}\\fP", roff(text)]
    if any(p for p in kd.paras):
        w.append(".SH DESCRIPTION")
        para: List[str] = []
        for p in list(kd.paras) + [""]:
            if p:
                para.append(p.strip() if not p.startswith(" -") else p)
            elif para:
                w += [".PP", roff("\n".join(para))]
                para = []
    for sec, title in (("Context", "CONTEXT"), ("Return", "RETURN VALUE")):
        if kd.sections[sec]:
            w += [f".SH {title}", roff(" ".join(kd.sections[sec]))]
    if others:
        w += [".SH SEE ALSO", ", ".join(f"\\fB{roff(o)}\\fP(3)" for o in others)]
    return "\n".join(w) + "\n"


def pages(header: str) -> Pages:
    """A page for each function a kernel-doc comment names and the header
    declares (a name that is a macro or an example gets none)."""
    api = load(header)
    out: Pages = {}
    for kd in api.kdocs:
        if kd.kind != "function":
            continue
        for n in kd.names:
            fn = api.functions.get(n)
            if fn is not None:
                out[n] = (kd, fn.prototype, [o for o in kd.names if o != n])
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--version", default="")
    ap.add_argument("header")
    a = ap.parse_args()
    got = pages(a.header)
    if a.list:
        for n in sorted(got):
            print(f"{n}.3")
        return 0
    if not a.out:
        ap.error("--out DIR or --list")
    os.makedirs(a.out, exist_ok=True)
    for n, (kd, decl, others) in got.items():
        with open(os.path.join(a.out, f"{n}.3"), "w", encoding="utf-8") as f:
            f.write(page(n, a.version, kd, decl, others))
    return 0


if __name__ == "__main__":
    sys.exit(main())
