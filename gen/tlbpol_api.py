#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tlbpol_api.py: THE reader of include/tlbpol/tlbpol.h.

Every script that needs a fact of the public interface (a constant, an
enum, a structure's fields, a prototype, a kernel-doc comment) takes it from
here, so that the header is read one way only.  The header is regular on
purpose (one declaration per statement, kernel-doc comments, fixed-width
types): this reads that style, and fails loudly (ApiError) on anything it
does not understand rather than guess.

Interface (stable; typed, mypy --strict clean):

  load(path=None) -> Api          parse the header (default: the one of the
                                  repository this file is in)
  parse(text) -> Api              parse header text
  HEADER                          the default header's path

  Api.defines: Dict[str, Define]  object-like #defines, header order
  Api.macros: Dict[str, Macro]    function-like #defines (TLBPOL_ENGINE_SIZE)
  Api.enums: Dict[str, Enum]      "tlbpol_arch" -> Enum
  Api.structs: Dict[str, Struct]  "tlbpol_config" -> Struct (with a body)
  Api.functions: Dict[str, Function]   every TLBPOL_API declaration
  Api.kdocs: List[KernelDoc]      every /** ... */ comment, header order
  Api.preamble: str               the header's first comment, " * " removed
  Api.constants() -> Dict[str, int]    every public integer constant: the
                                  #defines that evaluate to an integer and
                                  every enumerator (not TLBPOL__* internals,
                                  include guards or TLBPOL_API)
  Api.value(name) -> int          one of them (internals too)
  Api.ctype(name) -> str          "uint32_t" or "uint64_t": the C type its
                                  value has (ULL literal or an enum)
  Api.layout(struct) -> Layout    LP64 size, alignment and field offsets,
                                  computed from the declarations (natural
                                  alignment), not from a compiler
  Api.expand(text, names) -> str  @text with those function-like macros
                                  expanded (for TLBPOL_ENGINE_SIZE()'s lists)

  Define: name, body (C text, comments removed), value (int or None),
      doc (the comment before it or on its line), hosted_only, internal
  Macro: name, params, body
  Enum: name, members (Enumerator: name, value, doc), doc (KernelDoc|None)
  Struct: name, fields (Field: name, ctype, array (C text or None),
      count (int or None), is_fnptr), doc (KernelDoc|None)
  Function: name, ret, params (Param: name, ctype), prototype (the
      declaration without TLBPOL_API, on one line), hosted_only,
      doc (KernelDoc|None)
  KernelDoc: names (functions it documents; or the enum/struct name),
      kind ("function", "enum", "struct"), summary (its first sentence),
      args [(name, text)] (every "@name:", "@a, @b:" line),
      paras (description lines, "" between paragraphs: the summary's
      further sentences first), sections {"Context": [...], "Return":
      [...]} (at a line's start, or after a sentence in a function's
      comment), lines (the raw lines); read by gen/kernel_doc.py
      (parse_kdoc(), split_sentence()), this reader's part for comments

Command line:
  tlbpol_api.py [--header H] --dump            a summary, for people
  tlbpol_api.py [--header H] --emit python|rust-sys|rust-enums|abi [--out F]
  tlbpol_api.py [--header H] --check ROOT      the committed generated
                                  files of ROOT equal what --emit makes
  tlbpol_api.py [--header H] --write ROOT      regenerate them in ROOT
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from c_expr import evaluate  # noqa: E402
# The kernel-doc comments are read by kernel_doc.py, part of this reader
# (its KernelDoc and parse_kdoc are this module's too).
from kernel_doc import KernelDoc as KernelDoc  # noqa: E402
from kernel_doc import comment_lines as _comment_lines  # noqa: E402
from kernel_doc import parse_kdoc as parse_kdoc  # noqa: E402
from kernel_doc import split_sentence as split_sentence  # noqa: E402,F401 (re-exported)

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "include", "tlbpol",
                      "tlbpol.h")

#: Names that are #defined but are not interface constants.
NOT_CONSTANTS = frozenset({"TLBPOL_TLBPOL_H", "TLBPOL_API", "TLBPOL_HOSTED_API", "TLBPOL_FREESTANDING",
                           "TLBPOL_BUILDING"})


class ApiError(Exception):
    """The header has something this reader does not understand."""


@dataclass(frozen=True)
class Define:
    name: str
    body: str
    value: Optional[int]
    doc: str
    hosted_only: bool
    internal: bool


@dataclass(frozen=True)
class Macro:
    name: str
    params: Tuple[str, ...]
    body: str


@dataclass(frozen=True)
class Enumerator:
    name: str
    value: int
    doc: str


@dataclass(frozen=True)
class Declared:
    """What every enum, structure and function of the header has: its name,
    and its kernel-doc comment if it has one."""
    name: str
    doc: Optional[KernelDoc]


@dataclass(frozen=True)
class Enum(Declared):
    members: Tuple[Enumerator, ...]


@dataclass(frozen=True)
class Param:
    """A name declared with a C type: a function's parameter, and the start
    of a structure's field."""
    name: str
    ctype: str


@dataclass(frozen=True)
class Field(Param):
    array: Optional[str]
    count: Optional[int]
    is_fnptr: bool


@dataclass(frozen=True)
class Struct(Declared):
    fields: Tuple[Field, ...]


@dataclass(frozen=True)
class Function(Declared):
    ret: str
    params: Tuple[Param, ...]
    prototype: str
    hosted_only: bool


@dataclass(frozen=True)
class Layout:
    size: int
    align: int
    offsets: Dict[str, int]
    sizes: Dict[str, int]


@dataclass
class Api:
    text: str
    preamble: str = ""
    defines: Dict[str, Define] = field(default_factory=dict)
    macros: Dict[str, Macro] = field(default_factory=dict)
    enums: Dict[str, Enum] = field(default_factory=dict)
    structs: Dict[str, Struct] = field(default_factory=dict)
    functions: Dict[str, Function] = field(default_factory=dict)
    kdocs: List[KernelDoc] = field(default_factory=list)

    def value(self, name: str) -> int:
        d = self.defines.get(name)
        if d is not None and d.value is not None:
            return d.value
        for e in self.enums.values():
            for m in e.members:
                if m.name == name:
                    return m.value
        raise ApiError(f"{name}: not an integer constant of the header")

    def constants(self) -> Dict[str, int]:
        out: Dict[str, int] = {}
        for d in self.defines.values():
            if d.value is not None and not d.internal and d.name not in NOT_CONSTANTS:
                out[d.name] = d.value
        for e in self.enums.values():
            for m in e.members:
                out[m.name] = m.value
        return out

    def ctype(self, name: str) -> str:
        d = self.defines.get(name)
        if d is None:
            self.value(name)  # an enumerator, or ApiError
            return "uint32_t"
        if re.search(r"\d+U?LL\b", d.body, re.I):
            return "uint64_t"
        refs = [r for r in re.findall(r"\bTLBPOL_\w+", d.body) if r in self.defines]
        return "uint64_t" if any(self.ctype(r) == "uint64_t" for r in refs) else "uint32_t"

    def expand(self, text: str, names: "frozenset[str] | set[str]") -> str:
        """@text with the function-like macros in @names expanded (their
        arguments substituted, ## pasted), until none is left."""
        pat = re.compile(r"\b(" + "|".join(sorted(names, key=len, reverse=True)) + r")\s*\(")
        for _ in range(100):
            m = pat.search(text)
            if not m:
                return text
            mac = self.macros[m.group(1)]
            depth, i = 1, m.end()
            while depth:
                if i >= len(text):
                    raise ApiError(f"{mac.name}: unbalanced arguments")
                depth += {"(": 1, ")": -1}.get(text[i], 0)
                i += 1
            args = _split_params(text[m.end():i - 1])
            if len(args) != len(mac.params):
                raise ApiError(f"{mac.name}: {len(args)} arguments for {len(mac.params)}")
            sub = {p: a for p, a in zip(mac.params, args)}
            body = re.sub(r"\b\w+\b", lambda t: sub.get(t.group(0), t.group(0)), mac.body)
            body = re.sub(r"\s*##\s*", "", body)
            text = text[:m.start()] + body + text[i:]
        raise ApiError("macro expansion does not end")

    def enum_of(self, member: str) -> Optional[Enum]:
        for e in self.enums.values():
            if any(m.name == member for m in e.members):
                return e
        return None

    def layout(self, struct: str) -> Layout:
        s = self.structs[struct]
        off, align = 0, 1
        offsets: Dict[str, int] = {}
        sizes: Dict[str, int] = {}
        for f in s.fields:
            size, al = self._type_size(f.ctype, f.is_fnptr)
            if f.array is not None:
                if f.count is None:
                    raise ApiError(f"{struct}.{f.name}: array size {f.array!r} not constant")
                size *= f.count
            off = (off + al - 1) // al * al
            offsets[f.name] = off
            sizes[f.name] = size
            off += size
            align = max(align, al)
        return Layout((off + align - 1) // align * align, align, offsets, sizes)

    def _type_size(self, ctype: str, is_fnptr: bool) -> Tuple[int, int]:
        if is_fnptr or "*" in ctype:
            return 8, 8
        base = ctype.replace("const ", "").strip()
        fixed = {"uint8_t": 1, "uint16_t": 2, "uint32_t": 4, "uint64_t": 8, "int": 4,
                 "size_t": 8}
        if base in fixed:
            return fixed[base], fixed[base]
        if base.startswith("struct "):
            lay = self.layout(base[len("struct "):])
            return lay.size, lay.align
        raise ApiError(f"no LP64 size for the C type {ctype!r}")


# ---------------------------------------------------------------------------
# The header

def _strip_comments(s: str) -> str:
    return re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n") + " ", s, flags=re.S)


def _split_params(p: str) -> List[str]:
    out, depth, cur = [], 0, ""
    for c in p:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def _declarator(d: str) -> Tuple[str, str, Optional[str], bool]:
    """(name, type, array, is_fnptr) of one declaration."""
    d = re.sub(r"\s+", " ", d.strip())
    fp = re.match(r"^(.*?)\(\s*\*\s*(\w+)\s*\)\s*\((.*)\)$", d)
    if fp:
        return fp.group(2), f"{fp.group(1).strip()} (*)({fp.group(3).strip()})", None, True
    arr = re.match(r"^(.*?)\[(.*)\]$", d)
    array = None
    if arr:
        d, array = arr.group(1).strip(), arr.group(2).strip()
    m = re.match(r"^(.*?)(\w+)$", d)
    if not m:
        raise ApiError(f"cannot read the declaration {d!r}")
    return m.group(2), m.group(1).strip().replace(" *", "*").replace("*", " *").strip(), array, False


def _preceding_comment(text: str, pos: int) -> str:
    """The /* */ comment that ends just before @pos (blank lines allowed
    none), as plain text; "" if there is none."""
    before = text[:pos].rstrip()
    if not before.endswith("*/"):
        return ""
    start = before.rfind("/*")
    return " ".join(l.strip() for l in _comment_lines(before[start + 2:-2].lstrip("*"))
                    if l.strip())


def parse(text: str) -> Api:
    api = Api(text=text)
    first = re.search(r"/\*\n(.*?)\*/", text, re.S)
    if first:
        api.preamble = "\n".join(_comment_lines(first.group(1))).rstrip()
    docs: Dict[str, KernelDoc] = {}
    for m in re.finditer(r"/\*\*\n(.*?)\*/", text, re.S):
        kd = parse_kdoc(_comment_lines(m.group(1)))
        if kd:
            api.kdocs.append(kd)
            for n in kd.names:
                docs.setdefault(f"{kd.kind}:{n}", kd)
    known: Dict[str, int] = {}
    _read_defines(text, api, known)
    _read_statements(text, api, docs, known)
    return api


def _read_defines(text: str, api: Api, known: Dict[str, int]) -> None:
    stack: List[bool] = []
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    i = 0
    while i < len(lines):
        line = lines[i]
        start = i
        while line.endswith("\\"):
            i += 1
            line = line[:-1] + " " + lines[i]
        i += 1
        d = re.match(r"^\s*#\s*(\w+)\s*(.*)$", line)
        if not d:
            continue
        word, rest = d.group(1), d.group(2)
        if word in ("if", "ifdef", "ifndef"):
            stack.append(word == "ifndef" and rest.strip() == "TLBPOL_FREESTANDING")
        elif word == "endif":
            stack.pop()
        elif word == "define":
            m = re.match(r"^(TLBPOL\w*)(\(([^)]*)\))?\s*(.*)$", rest)
            if not m:
                continue
            name = m.group(1)
            trailing = re.search(r"/\*(.*?)\*/\s*$", m.group(4))
            body = re.sub(r"\s+", " ", _strip_comments(m.group(4))).strip()
            if m.group(2) is not None:
                api.macros[name] = Macro(name, tuple(p.strip() for p in m.group(3).split(",")),
                                         body)
                continue
            value = evaluate(body, known) if body else None
            if value is not None:
                known[name] = value
            doc = trailing.group(1).strip() if trailing else \
                _preceding_comment(text, offsets[start])
            api.defines[name] = Define(name, body, value, doc, any(stack),
                                       name.startswith("TLBPOL__"))


def _read_statements(text: str, api: Api, docs: Dict[str, KernelDoc],
                     known: Dict[str, int]) -> None:
    stack: List[Tuple[bool, bool]] = []  # (hosted only, C++ only)
    stmt, stmt_hosted, depth = "", False, 0
    for line in _strip_comments(text).replace("\\\n", " ").split("\n"):
        t = line.strip()
        if t.startswith("#"):
            words = t[1:].split()
            if words and words[0] in ("if", "ifdef", "ifndef"):
                stack.append((words == ["ifndef", "TLBPOL_FREESTANDING"],
                              words == ["ifdef", "__cplusplus"]))
            elif words and words[0] == "endif":
                stack.pop()
            continue
        if any(s[1] for s in stack) or not t:
            continue
        if not stmt:
            stmt_hosted = any(s[0] for s in stack)
        stmt += t + " "
        depth += t.count("{") - t.count("}")
        if depth == 0 and t.endswith(";"):
            _statement(stmt.strip(), stmt_hosted, api, docs, known)
            stmt = ""
    if stmt.strip() or stack:
        raise ApiError("could not read the header to its end")


def _enum_docs(text: str, name: str, kd: Optional[KernelDoc]) -> Dict[str, str]:
    out = {n: t for n, t in kd.args} if kd else {}
    body = re.search(r"enum\s+" + name + r"\s*\{(.*?)\};", text, re.S)
    if body:
        for m in re.finditer(r"(TLBPOL_\w+)\s*=[^,\n]*,\s*/\*(.*?)\*/", body.group(1), re.S):
            out.setdefault(m.group(1), re.sub(r"\s+", " ", m.group(2)).strip())
    return out


def _statement(s: str, hosted: bool, api: Api, docs: Dict[str, KernelDoc],
               known: Dict[str, int]) -> None:
    s = re.sub(r"\s+", " ", s)
    if s.startswith("enum ") and "{" in s:
        name = s[5:s.index("{")].strip()
        kd = docs.get(f"enum:{name}")
        edocs = _enum_docs(api.text, name, kd)
        members = []
        for item in s[s.index("{") + 1:s.rindex("}")].split(","):
            if not item.strip():
                continue
            n, _, v = item.partition("=")
            value = evaluate(v, known)
            if value is None:
                raise ApiError(f"enum {name}: {item.strip()!r} has no constant value")
            known[n.strip()] = value
            members.append(Enumerator(n.strip(), value, edocs.get(n.strip(), "")))
        api.enums[name] = Enum(name, kd, members=tuple(members))
    elif s.startswith("struct ") and "{" in s:
        name = s[7:s.index("{")].strip()
        fields = []
        for decl in s[s.index("{") + 1:s.rindex("}")].split(";"):
            if decl.strip():
                n, ctype, array, fnptr = _declarator(decl)
                count = evaluate(array, known) if array is not None else None
                fields.append(Field(n, ctype, array, count, fnptr))
        api.structs[name] = Struct(name, docs.get(f"struct:{name}"), fields=tuple(fields))
    elif s.startswith(("TLBPOL_API ", "TLBPOL_HOSTED_API ")):
        # TLBPOL_HOSTED_API: the hosted build only (unavailable with
        # TLBPOL_FREESTANDING)
        hosted = hosted or s.startswith("TLBPOL_HOSTED_API ")
        decl = s.split(" ", 1)[1].rstrip(";").strip()
        open_ = decl.index("(")
        head = decl[:open_].strip()
        m = re.match(r"^(.*?)(\w+)$", head)
        if not m:
            raise ApiError(f"cannot read the prototype {s!r}")
        name, ret = m.group(2), m.group(1).strip()
        inner = decl[open_ + 1:decl.rindex(")")].strip()
        params = []
        if inner != "void":
            for p in _split_params(inner):
                pn, pt, _, _ = _declarator(p)
                params.append(Param(pn, pt))
        api.functions[name] = Function(name, docs.get(f"function:{name}"), ret=ret,
                                       params=tuple(params), prototype=decl + ";",
                                       hosted_only=hosted)
    elif s.startswith("struct ") or s.startswith("extern ") or s == "}":
        return  # a forward declaration, or extern "C"'s end
    else:
        raise ApiError(f"a statement this reader does not know: {s[:80]!r}")


def load(path: Optional[str] = None) -> Api:
    with open(path or HEADER, encoding="utf-8") as f:
        return parse(f.read())


# ---------------------------------------------------------------------------
# Command line

def _dump(api: Api) -> str:
    out = [f"{len(api.constants())} constants, {len(api.enums)} enums, "
           f"{len(api.structs)} structs, {len(api.functions)} functions, "
           f"{len(api.macros)} macros"]
    for name, value in api.constants().items():
        out.append(f"const {name} {value} {api.ctype(name)}")
    for st in api.structs.values():
        lay = api.layout(st.name)
        out.append(f"struct {st.name} size {lay.size} align {lay.align}")
        for f in st.fields:
            out.append(f"  {lay.offsets[f.name]:4} {f.name}: {f.ctype}"
                       + (f"[{f.array}]" if f.array else ""))
    for fn in api.functions.values():
        out.append(("hosted " if fn.hosted_only else "") + fn.prototype)
    return "\n".join(out) + "\n"


def main(argv: List[str]) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    ap.add_argument("--header", default=HEADER)
    ap.add_argument("--dump", action="store_true")
    ap.add_argument("--emit", choices=["python", "rust-sys", "rust-enums", "abi"])
    ap.add_argument("--out")
    ap.add_argument("--check", metavar="ROOT")
    ap.add_argument("--write", metavar="ROOT")
    a = ap.parse_args(argv)
    api = load(a.header)
    if a.dump:
        sys.stdout.write(_dump(api))
        return 0
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import api_emit  # noqa: E402 (the emitters import this module)
    if a.emit:
        text = api_emit.emit(api, a.emit, None)
        if a.out:
            with open(a.out, "w", encoding="utf-8") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
        return 0
    if a.check:
        return api_emit.check(api, a.check)
    if a.write:
        return api_emit.write(api, a.write)
    ap.error("--dump, --emit, --check or --write")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
