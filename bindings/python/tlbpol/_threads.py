# SPDX-License-Identifier: MIT
"""The calling thread's part in the grace periods of live reconfiguration
(tlbpol_thread_register() and its companions)."""

from __future__ import annotations

from . import _ffi

__all__ = ["thread_register", "thread_unregister", "quiescent", "thread_offline",
           "thread_online"]


def thread_register() -> None:
    """tlbpol_thread_register(): the calling thread takes part in the grace
    periods of live reconfiguration (Engine.set_rules() and the like)."""
    _ffi.lib().tlbpol_thread_register()


def thread_unregister() -> None:
    """tlbpol_thread_unregister(): the calling thread leaves them."""
    _ffi.lib().tlbpol_thread_unregister()


def quiescent() -> None:
    """tlbpol_quiescent(): the calling thread holds no engine configuration."""
    _ffi.lib().tlbpol_quiescent()


def thread_offline() -> None:
    """tlbpol_thread_offline(): around a long block of a registered thread."""
    _ffi.lib().tlbpol_thread_offline()


def thread_online() -> None:
    """tlbpol_thread_online(): back from thread_offline()."""
    _ffi.lib().tlbpol_thread_online()
