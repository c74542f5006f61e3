# SPDX-License-Identifier: MIT
"""c_expr.py: the C integer constant expressions of the header's macros,
for gen/tlbpol_api.py (their values) and gen/api_emit.py (in Rust).

  evaluate(expr, known) -> int or None   the value over @known names; None
                                         when it is not an integer constant
  to_rust(expr, params, widen) -> str    the same arithmetic in Rust u64
"""
from __future__ import annotations

import ast
import re
from typing import Callable, Dict, List, Optional, Tuple

_SUFFIX = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)(?:[uU][lL]{0,2}|[lL]{1,2}[uU]?)\b")


def evaluate(expr: str, known: Dict[str, int]) -> Optional[int]:
    """The value of a C integer constant expression over @known names, or
    None when it is not one (a string, an unknown name)."""
    e = _SUFFIX.sub(r"\1", expr.strip())
    if not e or '"' in e:
        return None
    e = re.sub(r"\bTLBPOL_\w+\b", lambda m: str(known[m.group(0)]) if m.group(0) in known
               else m.group(0), e)
    e = e.replace("/", "//")
    try:
        tree = ast.parse(e, mode="eval")
    except SyntaxError:
        return None
    return _eval_node(tree.body)


def _eval_node(n: ast.AST) -> Optional[int]:
    if isinstance(n, ast.Constant) and isinstance(n.value, int):
        return n.value
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.Invert, ast.USub, ast.UAdd)):
        v = _eval_node(n.operand)
        if v is None:
            return None
        return ~v if isinstance(n.op, ast.Invert) else -v if isinstance(n.op, ast.USub) else v
    if isinstance(n, ast.BinOp):
        a, b = _eval_node(n.left), _eval_node(n.right)
        if a is None or b is None:
            return None
        return _binop(n.op, a, b)
    return None


def _binop(op: ast.operator, a: int, b: int) -> Optional[int]:
    if isinstance(op, ast.BitOr):
        return a | b
    if isinstance(op, ast.BitAnd):
        return a & b
    if isinstance(op, ast.LShift):
        return a << b
    if isinstance(op, ast.RShift):
        return a >> b
    if isinstance(op, ast.Add):
        return a + b
    if isinstance(op, ast.Sub):
        return a - b
    if isinstance(op, ast.Mult):
        return a * b
    if isinstance(op, ast.FloorDiv):
        return a // b
    return None


_TOKEN = re.compile(r"\s*(0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|\w+|<<|>>|<=|>=|==|!=|\S)")
_BINARY = {"?": 1, "==": 3, "!=": 3, "<": 4, ">": 4, "<=": 4, ">=": 4, "+": 6, "-": 6,
           "*": 7, "/": 7, "%": 7}
RUST_KEYWORDS = {"as": "as_", "type": "type_", "fn": "fn_"}


class _RustExpr:
    """A C integer expression of the header's size macros, as Rust u64
    arithmetic: casts to unsigned long long dropped (every value is u64
    already), `c ? a : b` as `if`, u32 constants widened."""

    def __init__(self, text: str, params: Tuple[str, ...], widen: Callable[[str], bool]):
        self.params, self.widen = params, widen
        self.toks: List[str] = [str(t) for t in _TOKEN.findall(text) if t]
        self.i = 0

    def peek(self) -> str:
        return self.toks[self.i] if self.i < len(self.toks) else ""

    def take(self, want: Optional[str] = None) -> str:
        t = self.peek()
        if want is not None and t != want:
            raise ValueError(f"expected {want!r}, got {t!r} in {' '.join(self.toks)}")
        self.i += 1
        return t

    def parse(self, prec: int = 0) -> Tuple[str, int]:
        """(Rust text, the precedence of its top operator: 100 for an
        operand, 0 for an `if`)."""
        left, lp = self.unary()
        while self.peek() in _BINARY and _BINARY[self.peek()] > prec:
            op = self.take()
            if op == "?":
                a, _ = self.parse(0)
                self.take(":")
                b, _ = self.parse(0)
                cond = left if lp in (3, 4) else f"{_paren(left, lp, 5)} != 0"
                left, lp = f"if {cond} {{ {a} }} else {{ {b} }}", 0
                continue
            p = _BINARY[op]
            right, rp = self.parse(p)
            left, lp = f"{_paren(left, lp, p)} {op} {_paren(right, rp, p + 1)}", p
        return left, lp

    def unary(self) -> Tuple[str, int]:
        t = self.take()
        if t == "(":
            if self.peek() == "unsigned":
                while self.take() != ")":
                    pass
                return self.unary()
            inner, p = self.parse(0)
            self.take(")")
            return inner, p
        if re.match(r"\d", t):
            return str(int(re.sub(r"[uUlL]+$", "", t), 0)), 100
        if not re.match(r"\w+$", t):
            raise ValueError(f"cannot translate {t!r} in {' '.join(self.toks)}")
        if self.peek() == "(":
            self.take()
            args = []
            while self.peek() != ")":
                args.append(self.parse(0)[0])
                if self.peek() == ",":
                    self.take()
            self.take(")")
            return f"{t}({', '.join(args)})", 100
        if t in self.params:
            return RUST_KEYWORDS.get(t, t), 100
        if self.widen(t):
            return f"({t} as u64)", 100
        return t, 100


def _paren(text: str, prec: int, need: int) -> str:
    return f"({text})" if prec < need else text


def to_rust(text: str, params: Tuple[str, ...], widen: Callable[[str], bool]) -> str:
    """C integer expression @text as Rust u64 arithmetic: @params are the
    macro's parameters (renamed where Rust reserves the word), and a name
    for which @widen is true is a u32 constant, widened."""
    e = _RustExpr(text, params, widen)
    out, _ = e.parse(0)
    if e.peek():
        raise ValueError(f"trailing {e.peek()!r} in {text!r}")
    return out
