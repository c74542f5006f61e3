# SPDX-License-Identifier: MIT
"""man_roff.py: kernel-doc text as man(7) roff, for gen/kdoc2man.py and
gen/man7.py (the pages are made from the header at build time).

  esc(text) -> str            text safe in a roff text line (ASCII)
  inline(text, fns) -> str    esc() plus fonts: @name italic, name() and
                              `code` bold (fns: the functions to embolden)
  prose(lines, fns) -> [str]  kernel-doc description lines (blank lines
                              between paragraphs) as .PP paragraphs, .IP
                              bullets (" - item") and .nf blocks (indented
                              tables and code)
  join(lines) -> str          lines as one string, two spaces after a
                              sentence (inline() breaks the line there)
  errors(text) -> [(errno, what)]   each -Exxx a Return: text names, with
                              the words that say when, in order
  context(api, kd) -> str     a comment's Context: text, "as tlbpol_x()"
                              followed to that function's own
  synopsis(ret, name, params) -> [str]   a prototype as .BI lines, wrapped
                              at its parameters under the "(" (liburing's
                              style)
"""
from __future__ import annotations

import re
from typing import Collection, Dict, List, Sequence, Tuple

from tlbpol_api import Api, KernelDoc, Param

#: What an errno means where the Return: text gives no words for it.
ERRNO_DEFAULT = {
    "-ENOMEM": "memory could not be allocated",
    "-EINVAL": "an argument is invalid",
    "-EBUSY": "the object is in use",
}


def esc(text: str) -> str:
    """@text for a roff text line: backslashes escaped, a leading . or '
    made harmless, and an errno's or a negative number's '-' a minus."""
    text = text.replace("\\", "\\e")
    text = re.sub(r"(?<![\w-])-(?=E[A-Z0-9]{2,}\b|\d)", r"\\-", text)
    # Not ASCII: groff's own name for it (groff reads its input as Latin-1).
    text = "".join(c if ord(c) < 128 else f"\\[u{ord(c):04X}]" for c in text)
    return "\n".join("\\&" + ln if ln.startswith((".", "'")) else ln
                     for ln in text.split("\n"))


def inline(text: str, fns: Collection[str] = ()) -> str:
    """esc(@text) with fonts: @name italic, a known function's "name()"
    bold, `code` bold; one sentence per source line (man(7)'s habit)."""
    t = esc(text)
    t = re.sub(r"`([^`]+)`", r"\\fB\1\\fP", t)
    t = re.sub(r"(?<![\w*])\*(\w[^*]*?\w)\*(?![\w*])", r"\\fI\1\\fP", t)
    t = re.sub(r"@(\w+)", r"\\fI\1\\fP", t)
    t = re.sub(r"\b(tlbpol_\w+)\(\)",
               lambda m: f"\\fB{m.group(1)}\\fP()" if m.group(1) in fns else m.group(0), t)
    t = re.sub(r"(?<=[.?!])  +(?=\S)", "\n", t)
    return "\n".join("\\&" + ln if ln.startswith((".", "'")) else ln
                     for ln in t.split("\n"))


def _blocks(lines: Sequence[str]) -> List[List[str]]:
    out: List[List[str]] = [[]]
    for ln in lines:
        if ln.strip():
            out[-1].append(ln)
        elif out[-1]:
            out.append([])
    return [b for b in out if b]


def _is_bullet(ln: str) -> bool:
    return re.match(r"^\s{0,2}- ", ln) is not None


def prose(lines: Sequence[str], fns: Collection[str] = ()) -> List[str]:
    """Description lines as roff: a paragraph per blank-line-separated
    block; in it, " - " lines are bullets (indented lines continue them),
    other indented lines a no-fill block (a table, code)."""
    w: List[str] = []
    for block in _blocks(lines):
        kind, run = "", []  # kind: "p" prose, "b" bullet, "v" verbatim
        items: List[Tuple[str, List[str]]] = []
        for ln in block:
            if _is_bullet(ln):
                kind, run = "b", [ln.strip()[2:]]
                items.append((kind, run))
            elif ln.startswith(("\t", "  ")) and kind == "b":
                run.append(ln.strip())
            elif ln.startswith(("\t", "  ")):
                if kind != "v":
                    kind, run = "v", []
                    items.append((kind, run))
                run.append(ln.rstrip())
            else:
                if kind != "p":
                    kind, run = "p", []
                    items.append((kind, run))
                run.append(ln.strip())
        for i, (k, r) in enumerate(items):
            if k == "p":
                w += [".PP" if i == 0 or items[i - 1][0] != "v" else ".PP",
                      inline(join(r), fns)]
            elif k == "b":
                w += [".IP \\(bu 2", inline(join(r), fns)]
            else:
                # Keep the block's own indentation, less what all lines share.
                cut = min(len(x) - len(x.lstrip()) for x in r)
                w += [".PP", ".RS 2", ".nf"] + [esc(x[cut:].expandtabs(8)) for x in r] \
                    + [".fi", ".RE"]
    return w


def join(lines: Sequence[str]) -> str:
    """Lines of prose as one string, two spaces after a sentence."""
    out = ""
    for ln in lines:
        if out and not re.search(r"[A-Za-z]-$", out):  # "paging-" "structure": one word
            out += "  " if out.endswith((".", "?", "!")) and not out.endswith("e.g.") else " "
        out += ln.strip()
    return out


def _clauses(text: str) -> List[str]:
    """@text split at its top-level semicolons (not inside parentheses)."""
    out, depth, cur = [], 0, ""
    for c in text:
        depth += {"(": 1, ")": -1}.get(c, 0)
        if c == ";" and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += c
    return out + [cur]


def errors(text: str) -> List[Tuple[str, str]]:
    """[(errno, when)] of a Return: text: "-EINVAL for NULL @eng or ...;
    -ERANGE for @cpu" gives ("-EINVAL", "for NULL @eng or ..."), and so
    on; an errno named twice gets both texts."""
    got: Dict[str, List[str]] = {}
    for clause in _clauses(text):
        ms = list(re.finditer(r"(?<![\w-])-E[A-Z0-9]{2,}\b", clause))
        for i, m in enumerate(ms):
            end = ms[i + 1].start() if i + 1 < len(ms) else len(clause)
            what = clause[m.end():end].strip().rstrip(".").strip()
            what = re.sub(r"(,|\bor)$", "", what).strip().rstrip(",")
            got.setdefault(m.group(0), [])
            if what:
                got[m.group(0)].append(what)
    return [(e, "; ".join(w) if w else ERRNO_DEFAULT.get(e, "")) for e, w in got.items()]


def context(api: Api, kd: KernelDoc) -> str:
    """@kd's Context: section as one text; one that says only "as
    tlbpol_x()." gets tlbpol_x()'s words, and says whose they are."""
    text = join(kd.sections["Context"])
    ref = re.match(r"^as (tlbpol_\w+)\(\)\.?$", text)
    other = api.functions.get(ref.group(1)) if ref else None
    if ref and other is not None and other.doc is not None and other.doc is not kd:
        text = join(other.doc.sections["Context"]).rstrip(".") + f" (as {ref.group(1)}())."
    return text


def _ptype(p: Param) -> Tuple[str, str]:
    """(what comes before the name, what comes after it) of a parameter."""
    fp = re.match(r"^(.*?)\(\*\)\((.*)\)$", p.ctype)
    if fp:
        return f"{fp.group(1).strip()} (*", f")({fp.group(2)})"
    return p.ctype + ("" if p.ctype.endswith("*") else " "), ""


def synopsis(ret: str, name: str, params: Sequence[Param]) -> List[str]:
    """The prototype as .BI/.B lines, one parameter per line, each under
    the first (as liburing's pages): bold types, italic names."""
    head = ret + ("" if ret.endswith("*") else " ") + name + "("
    if not params:
        return [f'.B "{esc(head)}void);"']
    out = []
    for i, p in enumerate(params):
        before, after = _ptype(p)
        lead = head if i == 0 else " " * len(head)
        tail = after + (");" if i == len(params) - 1 else ",")
        out.append(f'.BI "{esc(lead + before)}" {p.name} "{esc(tail)}"')
    return out
