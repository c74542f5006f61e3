# SPDX-License-Identifier: MIT
"""kernel_doc.py: the kernel-doc comments of include/tlbpol/tlbpol.h, for
gen/tlbpol_api.py (the one reader of the header, which re-exports these:
use them through it).

  comment_lines(body) -> [str]      a comment's lines, " * " removed
  parse_kdoc(lines) -> KernelDoc|None    one "/** name() - summary ... */"
  split_sentence(text) -> (first, rest)  the first sentence of a text

  KernelDoc: names (the functions it documents; or the enum/struct name),
      kind ("function", "enum", "struct"), summary (the first sentence),
      args [(name, text)], paras (description lines, "" between
      paragraphs; the summary's other sentences first),
      sections {"Context": [...], "Return": [...]}, lines (the raw lines)
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple


@dataclass(frozen=True)
class KernelDoc:
    names: Tuple[str, ...]
    kind: str
    summary: str
    args: Tuple[Tuple[str, str], ...]
    paras: Tuple[str, ...]
    sections: Dict[str, Tuple[str, ...]]
    lines: Tuple[str, ...]


_KDOC_FUNC = re.compile(r"^((?:tlbpol_\w+\(\)\s*(?:/\s*)?)+)-\s*(.*)$")
_KDOC_TYPE = re.compile(r"^(enum|struct)\s+(tlbpol_\w+)\s+-\s*(.*)$")


def comment_lines(body: str) -> List[str]:
    """The lines of a comment's @body, each without its leading " * "."""
    lines = []
    for line in body.split("\n"):
        if line.strip().startswith("*"):
            line = re.sub(r"^\s*\* ?", "", line, count=1)
        else:
            line = line.strip()
        lines.append(line.rstrip())
    return lines


#: "@name: text", or several names sharing one text ("@a, @b: text").
_KDOC_ARG = re.compile(r"^@(\w+(?:,\s*@\w+)*):\s*(.*)$")
#: A list of names continued on the next line ("@a, @b,").
_KDOC_ARG_LIST = re.compile(r"^@\w+(?:,\s*@\w+)*,\s*$")
_KDOC_SECTION = re.compile(r"^(Context|Return):\s*(.*)$")
#: A section that begins after a sentence, on the same line ("...  Return: ...").
_KDOC_INLINE = re.compile(r"(?<=[.?!)])\s+(?=(?:Context|Return):\s)")
#: The end of a sentence: the header puts two spaces after one (a line
#: break counts as such after [.?!]); "e.g." and "i.e." never end one.
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)[.?!](?=\s\s|$)")


def _ends_sentence(text: str) -> bool:
    t = text.rstrip()
    return t.endswith((".", "?", "!")) and not t.endswith(("e.g.", "i.e."))


def _join(lines: List[str]) -> str:
    """Lines of prose as one string, two spaces where a line ended a sentence."""
    out = ""
    for line in (ln.strip() for ln in lines):
        if out and line and not re.search(r"[A-Za-z]-$", out):  # "paging-" "structure"
            out += "  " if _ends_sentence(out) else " "
        out += line
    return out


def split_sentence(text: str) -> Tuple[str, str]:
    """(the first sentence of @text, the rest)."""
    m = _SENTENCE_END.search(text)
    if not m:
        return text.strip(), ""
    return text[:m.end()].strip(), text[m.end():].strip()


def parse_kdoc(lines: List[str]) -> Optional[KernelDoc]:
    """A /** ... */ comment's lines (leading " * " removed) as kernel-doc;
    None when its first line names no function, enum or struct.

    The summary is the first sentence after "name() - "; what follows it up
    to a blank line, an "@arg:" or a section is the description's first
    paragraph.  "Context:" and "Return:" begin a section at a line's start
    or, in a function's comment, after a sentence ("...  Context: any.
    Return: 0."; a structure's callback may say "Context:" in its
    argument's text), and a section
    runs to a blank line or the next @arg or section.  "@arg:" (also
    "@a, @b:") begins an argument; its text goes on over indented lines, and
    over unindented ones while its last sentence is unfinished.  A line
    that begins with "@name" but no colon is prose.  An argument described
    twice gets both texts."""
    if not lines:
        return None
    m = _KDOC_FUNC.match(lines[0])
    t = _KDOC_TYPE.match(lines[0])
    if m:
        names = tuple(re.findall(r"(tlbpol_\w+)\(\)", m.group(1)))
        kind, first = "function", m.group(2)
    elif t:
        names, kind, first = (t.group(2),), t.group(1), t.group(3)
    else:
        return None
    # Argument name lists continued on the next line become one line.
    merged: List[str] = []
    for line in lines[1:]:
        if merged and _KDOC_ARG_LIST.match(merged[-1]):
            merged[-1] += " " + line.strip()
        else:
            merged.append(line)
    # Sections that begin inside a line start a line of their own.
    body: List[str] = []
    for line in merged:
        if kind == "function" and not _KDOC_ARG.match(line):
            parts = _KDOC_INLINE.split(line)
            body += [parts[0]] + [p.strip() for p in parts[1:]]
        else:
            body.append(line)
    head = [first]
    i = 0
    while i < len(body) and body[i].strip() and not _KDOC_ARG.match(body[i]) \
            and not _KDOC_SECTION.match(body[i]):
        head.append(body[i])
        i += 1
    summary, rest = split_sentence(_join(head))
    argd: Dict[str, List[str]] = {}
    order: List[str] = []
    paras: List[str] = [rest] if rest else []
    sections: Dict[str, List[str]] = {"Context": [], "Return": []}
    cur: Optional[List[str]] = None  # the list the next continuation line goes to
    cur_is_arg = False
    cur_names: List[str] = []
    for line in body[i:]:
        a = _KDOC_ARG.match(line)
        s = _KDOC_SECTION.match(line)
        if a:
            for n in re.findall(r"\w+", a.group(1)):
                if n not in argd:
                    argd[n] = []
                    order.append(n)
            cur_names = re.findall(r"\w+", a.group(1))
            cur, cur_is_arg = [a.group(2)], True
            for n in cur_names:
                argd[n].append(a.group(2))
        elif s:
            sections[s.group(1)].append(s.group(2))
            cur, cur_is_arg = sections[s.group(1)], False
        elif not line.strip():
            if cur is not None and cur is not paras:
                cur = None
            elif paras and paras[-1]:
                paras.append("")
        elif cur is not None and cur is not paras and (
                not cur_is_arg or line.startswith(("\t", " "))
                or not _ends_sentence(cur[-1])):
            cur.append(line.strip())
            if cur_is_arg:
                for n in cur_names:
                    argd[n].append(line.strip())
        elif cur is paras and line.startswith(("\t", " ")) and paras and paras[-1]:
            paras.append(line)
        else:
            if cur is not paras:
                if paras and paras[-1]:
                    paras.append("")
                cur, cur_is_arg = paras, False
            paras.append(line)
    args = tuple((n, _join(argd[n])) for n in order)
    return KernelDoc(names, kind, summary, args, tuple(paras),
                     {k: tuple(v) for k, v in sections.items()}, tuple(lines))
