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
declaration in the header.
"""
import argparse
import os
import re
import sys

NAME_RE = re.compile(r"^((?:tlbpol_\w+\(\)\s*(?:/\s*)?)+)-\s*(.*)$")
DECL_RE = re.compile(r"TLBPOL_API\b[^;]*?\b(tlbpol_\w+)\s*\(", re.S)


def blocks(text):
    """(lines of the comment, its end offset) for each /** ... */."""
    for m in re.finditer(r"/\*\*\n(.*?)\*/", text, re.S):
        lines = []
        for line in m.group(1).split("\n"):
            line = re.sub(r"^\s*\* ?", "", line, count=1) if line.strip().startswith("*") else line.strip()
            lines.append(line.rstrip())
        yield lines, m.end()


def declarations(text):
    """name -> the declaration's text, for every TLBPOL_API function."""
    out = {}
    for m in re.finditer(r"TLBPOL_API\b[^;]*;", text, re.S):
        d = m.group(0)
        n = DECL_RE.search(d)
        if n:
            out[n.group(1)] = re.sub(r"\s+", " ", d.replace("TLBPOL_API ", "")).strip()
    return out


def parse(lines):
    """names, summary, args [(name, text)], description paragraphs,
    context, return."""
    m = NAME_RE.match(lines[0]) if lines else None
    if not m:
        return None
    names = re.findall(r"(tlbpol_\w+)\(\)", m.group(1))
    summary = [m.group(2)]
    i = 1
    while i < len(lines) and lines[i] and not lines[i].startswith("@"):
        summary.append(lines[i].strip())
        i += 1
    args, paras, sections = [], [], {"Context": [], "Return": []}
    cur = None  # the list the next continuation line goes to
    for line in lines[i:]:
        a = re.match(r"^@(\w+):\s*(.*)$", line)
        s = re.match(r"^(Context|Return):\s*(.*)$", line)
        if a:
            args.append([a.group(1), [a.group(2)]])
            cur = args[-1][1]
        elif s:
            sections[s.group(1)].append(s.group(2))
            cur = sections[s.group(1)]
        elif not line.strip():
            if cur is not None and cur is not paras:
                cur = None
            elif paras and paras[-1]:
                paras.append("")
        elif cur is not None and (line.startswith("\t") or line.startswith(" ") or cur is not paras):
            cur.append(line.strip())
        else:
            if cur is not paras:
                if paras and paras[-1]:
                    paras.append("")
                cur = paras
            paras.append(line)
    return names, " ".join(summary), args, paras, sections


def roff(text):
    text = text.replace("\\", "\\e")
    out = []
    for line in text.split("\n"):
        if line.startswith(".") or line.startswith("'"):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def page(name, version, summary, decl, args, paras, sections, others):
    w = [f'.TH {name.upper()} 3 "" "libtlbpol {version}" "libtlbpol Manual"',
         ".SH NAME", f"{name} \\- " + roff(summary),
         ".SH SYNOPSIS", ".nf", roff("#include <tlbpol/tlbpol.h>"), "", roff(decl), ".fi"]
    if args:
        w.append(".SH ARGUMENTS")
        for n, text in args:
            w += [".TP", f"\\fI{roff(n)}\\fP", roff(" ".join(text))]
    if any(p for p in paras):
        w.append(".SH DESCRIPTION")
        para = []
        for p in paras + [""]:
            if p:
                para.append(p.strip() if not p.startswith(" -") else p)
            elif para:
                w += [".PP", roff("\n".join(para))]
                para = []
    for sec, title in (("Context", "CONTEXT"), ("Return", "RETURN VALUE")):
        if sections[sec]:
            w += [f".SH {title}", roff(" ".join(sections[sec]))]
    if others:
        w += [".SH SEE ALSO", ", ".join(f"\\fB{roff(o)}\\fP(3)" for o in others)]
    return "\n".join(w) + "\n"


def pages(header):
    text = open(header, encoding="utf-8").read()
    decls = declarations(text)
    out = {}
    for lines, _ in blocks(text):
        p = parse(lines)
        if not p:
            continue
        names, summary, args, paras, sections = p
        for n in names:
            if n not in decls:
                continue  # a macro or an example, not a function
            out[n] = (summary, decls[n], args, paras, sections, [o for o in names if o != n])
    return out


def main():
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
    for n, (summary, decl, args, paras, sections, others) in got.items():
        with open(os.path.join(a.out, f"{n}.3"), "w", encoding="utf-8") as f:
            f.write(page(n, a.version, summary, decl, args, paras, sections, others))
    return 0


if __name__ == "__main__":
    sys.exit(main())
