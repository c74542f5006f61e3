# SPDX-License-Identifier: MIT
"""Errors of the C library as Python exceptions: TlbpolError, an OSError."""

from __future__ import annotations

import os
from typing import Optional

__all__ = ["TlbpolError", "check", "text"]


class TlbpolError(OSError):
    """A libtlbpol call failed: ``errno`` is the positive errno value the C
    function returned negated, ``function`` the C function's name (also in
    the message: ``[Errno 22] tlbpol_submit: Invalid argument``)."""

    function: str

    def __init__(self, err: int, function: str, detail: str = "") -> None:
        msg = "%s: %s" % (function, os.strerror(err))
        if detail:
            msg += " (%s)" % detail
        super().__init__(err, msg)
        self.function = function


def check(function: str, rc: int, detail: str = "") -> int:
    """@rc, the return value of C @function, if it is not a negative errno."""
    if rc < 0:
        raise TlbpolError(-rc, function, detail)
    return rc


def text(b: Optional[bytes]) -> str:
    """A name the library returned (a const char *; NULL: "unknown")."""
    return b.decode("utf-8", "replace") if b is not None else "unknown"
