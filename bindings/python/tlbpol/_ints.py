# SPDX-License-Identifier: MIT
"""The checks every value passes before it reaches C (see :mod:`._ffi`):
an integer against the ctypes type of its field or argument, never
truncated; a string as a C string.  The width and signedness come from
the ctypes type, never from a number written here."""

from __future__ import annotations

import ctypes
import functools
import operator
from typing import Any, Dict, Tuple

# ctypes type codes of the C integer types (c_int8 .. c_uint64, c_size_t).
_INT_CODES = "bBhHiIlLqQ"


def is_int_type(ctype: Any) -> bool:
    """Is @ctype a ctypes integer type (c_uint32, c_int, c_size_t...)?"""
    return (isinstance(ctype, type) and issubclass(ctype, ctypes._SimpleCData)
            and getattr(ctype, "_type_", "") in _INT_CODES)


@functools.lru_cache(maxsize=None)
def int_range(ctype: Any) -> Tuple[int, int]:
    """(lowest, highest) value the ctypes integer type @ctype holds: from
    its size (ctypes.sizeof) and signedness."""
    bits = 8 * ctypes.sizeof(ctype)
    if ctype(-1).value < 0:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def check_int(name: str, value: Any, ctype: Any) -> int:
    """@value as a plain int, checked to fit the C integer type @ctype.

    Accepted: an int, or any object with ``__index__`` (IntEnum and
    IntFlag members, numpy integers).  bool is refused: a truth value where
    a CPU, an address or a count is wanted is a mistake, not a 0 or 1.
    Raises TypeError for anything else and OverflowError for a value
    outside @ctype's range, each naming @name; never truncates.
    """
    if type(value) is int:
        number = value
    elif isinstance(value, bool):
        raise TypeError("%s must be an int, not bool" % name)
    else:
        try:
            number = operator.index(value)
        except TypeError:
            raise TypeError("%s must be an int, not %s"
                            % (name, type(value).__name__)) from None
    low, high = int_range(ctype)
    if not low <= number <= high:
        raise OverflowError("%s: %d does not fit in %sint%d_t (%d .. %d)" % (
            name, number, "" if low < 0 else "u", 8 * ctypes.sizeof(ctype), low, high))
    return number


def check_str(name: str, value: Any) -> bytes:
    """@value (str, UTF-8 encoded, or bytes) as a C string: TypeError for
    anything else, ValueError for a NUL, which would end the C string early."""
    if isinstance(value, str):
        value = value.encode("utf-8")
    if not isinstance(value, bytes):
        raise TypeError("%s must be a str, not %s" % (name, type(value).__name__))
    if b"\0" in value:
        raise ValueError("%s: embedded NUL character" % name)
    return value


@functools.lru_cache(maxsize=None)
def field_types(struct: Any) -> Dict[str, Any]:
    """Field name -> ctypes type of the Structure class @struct."""
    return {f[0]: f[1] for f in struct._fields_}
