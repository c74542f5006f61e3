# SPDX-License-Identifier: MIT
"""man7.py: tlbpol(7), the overview, for gen/kdoc2man.py --section 7.

The prose is gen/tlbpol.7.in; what can drift is generated into it:
  @TH@, @NAME@     the header's first line ("libtlbpol: what it does.")
  @CONVENTIONS@    the header's "Conventions" list (its first comment)
  @CONTEXT_TABLE@  each function's "Context:" section, grouped by where
                   the call may run: the table cannot drift from them
  @OBLIGATIONS@    the header's "What the host owes the engine" list
  @EXAMPLE@        README.md's api-example block (tests/check_docs.py
                   compiles it): one copy of the minimal host
  @PAGES@          every page kdoc2man.py writes
"""
from __future__ import annotations

import os
import re
from typing import Dict, List, Optional, Tuple

from tlbpol_api import Api, ApiError
from man_roff import context, esc, inline

TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tlbpol.7.in")
#: The heading of the header's obligations, as tests/check_docs.py names it.
OWES = "What the host owes the engine"

#: Where a call may run, by how its Context: section begins: (title,
#: pattern), first match wins.
GROUPS: List[Tuple[str, str]] = [
    ("For one CPU, on that CPU", r"^(for|on) @cpu\b"),
    ("Anywhere", r"^any\b"),
    ("Hosted, in process context", r"^(process context|the thread itself|as tlbpol_engine_set_)"),
    ("With the engine otherwise unused", r""),
]


def _preamble_block(api: Api, start: str) -> str:
    """The paragraph of the header's first comment that begins with @start
    (up to its next blank line)."""
    pre = api.preamble
    i = pre.find(start)
    if i < 0:
        raise ApiError(f"the header's first comment has no {start!r}")
    return pre[i:].split("\n\n")[0]


def _items(block: str, bullet: str) -> List[str]:
    """The items of a list in @block, each item's lines joined."""
    out: List[str] = []
    for ln in block.split("\n")[1:]:
        if re.match(bullet, ln):
            out.append(re.sub(bullet, "", ln, count=1).strip())
        elif out:
            out[-1] += " " + ln.strip()
    return out


def conventions(api: Api) -> List[str]:
    w: List[str] = []
    for item in _items(_preamble_block(api, "Conventions"), r"^\s*-\s+"):
        w += [".IP \\(bu 2", inline(_unquote(item), api.functions)]
    return w


def obligations(api: Api) -> List[str]:
    w: List[str] = []
    block = _preamble_block(api, OWES)
    for m in re.finditer(r"^\s*(\d+)\.\s+(.+?)\.\s(.*?)(?=^\s*\d+\.\s|\Z)", block, re.S | re.M):
        body = " ".join(x.strip() for x in m.group(3).split("\n"))
        w += [f".IP {m.group(1)}. 4", f"\\fB{esc(m.group(2))}.\\fP",
              inline(_unquote(body), api.functions)]
    if not w:
        raise ApiError(f"no numbered items under {OWES!r} in the header's first comment")
    return w


def _unquote(text: str) -> str:
    """The header's *emphasis* and `code` as plain words (inline() bolds
    `code`)."""
    return re.sub(r"(?<![\w*])\*(\w[^*]*?)\*(?![\w*])", r"\1", text)


def context_table(api: Api) -> List[str]:
    """Each function with its Context: text (man_roff.context()), grouped
    as GROUPS says."""
    groups: Dict[str, List[Tuple[str, str]]] = {t: [] for t, _ in GROUPS}
    for fn in sorted(api.functions.values(), key=lambda f: f.name):
        if fn.doc is None or not fn.doc.sections["Context"]:
            raise ApiError(f"{fn.name}(): its kernel-doc has no Context: section")
        text = context(api, fn.doc)
        for title, pat in GROUPS:
            if re.match(pat, text):
                groups[title].append((fn.name, text))
                break
    w: List[str] = []
    for title, rows in groups.items():
        if not rows:
            continue
        w += [".SS " + esc(title)]
        for name, text in rows:
            hosted = " (hosted build only)" if api.functions[name].hosted_only else ""
            w += [".TP", f"\\fB{name}\\fP(3){hosted}", inline(text[:1].upper() + text[1:],
                                                                 api.functions)]
    return w


def example(readme: Optional[str]) -> List[str]:
    if readme is None:
        return [".PP", "See the README of the source."]
    with open(readme, encoding="utf-8") as f:
        m = re.search(r"<!-- api-example: begin -->\s*```c\n(.*?)```\s*<!-- api-example: end -->",
                      f.read(), re.S)
    if not m:
        raise ApiError(f"{readme}: no api-example block (```c between its markers)")
    return [".PP", ".RS 2", ".nf"] + [esc(ln.expandtabs(8)) for ln in m.group(1).rstrip().split("\n")] \
        + [".fi", ".RE"]


def page(api: Api, version: str, readme: Optional[str], files: List[str]) -> str:
    first = api.preamble.split("\n")[0]
    m = re.match(r"^libtlbpol:\s*(.*?)\.?$", first)
    if not m:
        raise ApiError("the header's first comment does not begin with \"libtlbpol: ...\"")
    refs = [(f.rsplit(".", 1)[0], f.rsplit(".", 1)[1]) for f in files]
    pages = [f".BR {n} ({s})" + ("," if i < len(refs) - 1 else "")
             for i, (n, s) in enumerate(refs)]
    fill = {
        "@TH@": [f'.TH TLBPOL 7 "" "libtlbpol {version}" "libtlbpol Manual"'],
        "@NAME@": ["tlbpol \\- " + esc(m.group(1))],
        "@CONVENTIONS@": conventions(api),
        "@CONTEXT_TABLE@": context_table(api),
        "@OBLIGATIONS@": obligations(api),
        "@EXAMPLE@": example(readme),
        "@PAGES@": pages,
    }
    with open(TEMPLATE, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out: List[str] = []
    for ln in lines:
        out += fill.get(ln.strip(), [ln])
    return "\n".join(out).rstrip("\n") + "\n"
