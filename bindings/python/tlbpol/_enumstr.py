# SPDX-License-Identifier: MIT
"""How the header's enums print: by name, on every Python.

Python 3.11 made ``str()`` and ``format()`` of an IntEnum or IntFlag member
the bare number (``str(EventKind.RECLAIM) == "3"``: "Changed in version
3.11: __str__() is now int.__str__()", Python documentation, enum module,
IntEnum), where 3.10 and earlier printed ``EventKind.RECLAIM`` for ``str()``
and plain Enum still does.  A "3" in a log line or an f-string says nothing,
so every enum class of :mod:`tlbpol._constants` (generated from the header:
not edited by hand) gets back the Enum spelling here, on import of the
package, before anything can print one:

- ``str(m)`` and ``f"{m}"``: ``EventKind.RECLAIM``, ``Pte.PRESENT|WRITE``
  (the class keeps members apart that share a name: Action.NONE and
  Rule.NONE, Reason.UNMAP and EventKind.UNMAP; and it is how the member is
  written in Python code).  The library's own lower-case names ("now",
  "downgrade") stay what :func:`tlbpol.deadline_str` and friends return.
- a numeric format spec (``f"{m:d}"``, ``f"{m:#x}"``, ``"%d" % m``) still
  formats the number, and a spec of only fill, alignment and width
  (``f"{m:<20}"``) pads the name;
- ``repr()`` is the Enum one, ``<EventKind.RECLAIM: 3>``: name and value.

Only printing changes: members are the same ints (``int(m)``, ``m == 3``,
``operator.index(m)``), and what reaches C is that number unchanged.

A value the library returns that this package's enum does not have -- a
reason code of a later release, which docs/versioning.md says a program
must accept -- is an :class:`UnknownValue` (:func:`member_or_int`): the int
itself, printed ``Reason(23)``, which the library's own functions
(tlbpol_reason_str(), tlbpol_reason_cite()) still name.
"""

from __future__ import annotations

import enum
from typing import Any, Callable, Tuple, Type, TypeVar, Union

from . import _constants

__all__ = ["ENUM_CLASSES", "UnknownValue", "member_or_int", "print_by_name"]

#: The enum and flag classes of the header, each printed by name.
ENUM_CLASSES: Tuple[Type[enum.Enum], ...] = tuple(
    c for c in vars(_constants).values()
    if isinstance(c, type) and issubclass(c, (enum.IntEnum, enum.IntFlag))
    and c.__module__ == _constants.__name__)

# The presentation types of the format mini-language that format a number
# (Python documentation, "Format Specification Mini-Language").
_NUMERIC_TYPES = frozenset("bcdoxXneEfFgG%")


def _enum_str(self: enum.Enum) -> str:
    return "%s.%s" % (type(self).__name__, self.name)


def _flag_str(self: enum.Flag) -> str:
    # Flag's own str names the bits ("Pte.PRESENT|WRITE"), "Pte(0)" for none.
    return enum.Flag.__str__(self)


def _format(self: int, spec: str) -> str:
    if spec and spec[-1] in _NUMERIC_TYPES:
        return int.__format__(int(self), spec)
    return str.__format__(str(self), spec)


def print_by_name(cls: Type[enum.Enum]) -> None:
    """Give the enum or flag class @cls the printing described above (for
    the package's own enums besides the header's, such as TagFlush)."""
    setattr(cls, "__str__", _flag_str if issubclass(cls, enum.Flag) else _enum_str)
    setattr(cls, "__format__", _format)


for _cls in ENUM_CLASSES:
    print_by_name(_cls)
del _cls


class UnknownValue(int):
    """A value of the enum @enum_class that the class has no member for,
    kept as the int (the same number goes back to C): equal to and hashed as
    that int, printed ``Reason(23)`` by str(), repr() and a non-numeric
    format spec (a numeric one formats the number)."""

    enum_class: Type[enum.Enum]

    def __new__(cls, enum_class: Type[enum.Enum], value: int) -> "UnknownValue":
        self = super().__new__(cls, value)
        self.enum_class = enum_class
        return self

    def __str__(self) -> str:
        return "%s(%d)" % (self.enum_class.__name__, int(self))

    __repr__ = __str__
    __format__ = _format

    def __reduce__(self) -> Tuple[Callable[..., Any], Tuple[Any, ...]]:
        return (UnknownValue, (self.enum_class, int(self)))


E = TypeVar("E", bound=enum.IntEnum)


def member_or_int(cls: Type[E], value: int) -> Union[E, int]:
    """The member of @cls that is @value, or (a value of a later release of
    the library) @value as an :class:`UnknownValue` of @cls: never ValueError."""
    try:
        return cls(value)
    except ValueError:
        return UnknownValue(cls, value)
