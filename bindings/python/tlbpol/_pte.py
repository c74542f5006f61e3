# SPDX-License-Identifier: MIT
"""Friendly PTE spelling: "rw", "rxu", "rwuad", "0" / "none" / "-"."""

from __future__ import annotations

from typing import Any, Dict, Union

from . import _ffi
from ._constants import Pte

__all__ = ["PTE_LETTERS", "parse_pte", "format_pte"]

#: One letter per portable PTE bit.  Any letter makes the PTE present.
PTE_LETTERS: Dict[str, Pte] = {
    "p": Pte.PRESENT,   # present (and readable): what "r" also says
    "r": Pte.PRESENT,
    "w": Pte.WRITE,
    "x": Pte.EXEC,      # executable: x86 NX clear, Arm UXN/PXN clear
    "u": Pte.USER,
    "a": Pte.ACCESSED,
    "d": Pte.DIRTY,
    "g": Pte.GLOBAL,
}
_NAMES = {name.lower(): m for name, m in Pte.__members__.items() if m is not Pte.ALL}


def parse_pte(spec: Union[str, int, Pte]) -> Pte:
    """PTE bits from a friendly spelling.

    - letters: r (present, readable), w, x (executable), u (user), a
      (accessed), d (dirty), g (global), p (present); any letter implies
      present: "rw" is PRESENT|WRITE, "wd" is PRESENT|WRITE|DIRTY;
    - "0", "none", "-" or "": not present;
    - names joined by "|", "," or "+": "present|write|user";
    - a number: "0x13", "19" (or an int), which must fit the uint32_t of
      old_pte / new_pte: OverflowError otherwise (Pte(-1) would be ALL).

    ValueError for anything else; TypeError for neither a str nor an int.
    """
    if not isinstance(spec, str):
        return _pte_number(spec, spec)
    s = spec.strip().lower()
    if s in ("", "0", "-", "none", "np", "not-present"):
        return Pte(0)
    try:
        number = int(s, 0)
    except ValueError:
        pass
    else:
        return _pte_number(spec, number)
    for sep in ("|", ",", "+"):
        if sep in s or s in _NAMES:
            bits = Pte(0)
            for part in filter(None, (p.strip() for p in s.split(sep))):
                if part not in _NAMES:
                    raise ValueError("unknown PTE bit %r (%s)" % (part, ", ".join(_NAMES)))
                bits |= _NAMES[part]
            return bits
    bits = Pte.PRESENT
    for ch in s:
        if ch not in PTE_LETTERS:
            raise ValueError("unknown PTE letter %r in %r: use %s, or 0/none for not present"
                             % (ch, spec, "".join(PTE_LETTERS)))
        bits |= PTE_LETTERS[ch]
    return bits


def _pte_number(spec: Any, number: Any) -> Pte:
    """Pte(@number), checked to fit struct tlbpol_event's old_pte first."""
    ctype = _ffi.field_types(_ffi.EventS)["old_pte"]
    return Pte(_ffi.check_int("PTE %r" % (spec,), number, ctype))


def format_pte(bits: Union[int, Pte]) -> str:
    """The letters of @bits ("rwuad"); "none" when not present and empty."""
    bits = int(bits)
    if not bits:
        return "none"
    out = "r" if bits & Pte.PRESENT else "(not present)"
    for ch in "wxuadg":
        if bits & PTE_LETTERS[ch]:
            out += ch
    return out
