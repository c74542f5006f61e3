# SPDX-License-Identifier: MIT
"""The library's names of things: its version, rules, reasons, actions,
deadlines, citations and arches, each way between name and value."""

from __future__ import annotations

from ctypes import byref, c_uint64
from typing import Union

from . import _ffi
from ._constants import Action, Arch, Deadline, Reason, Rule
from ._errors import check, text

__all__ = [
    "ArchLike", "RulesLike", "version", "rule_str", "parse_rules", "reason_str",
    "action_str", "deadline_str", "has_reason_cite", "reason_cite", "parse_arch",
    "rule_mask",
]

ArchLike = Union[Arch, int, str]
RulesLike = Union[Rule, int, str]


def version() -> str:
    """The linked library's version, "MAJOR.MINOR.PATCH" (tlbpol_version())."""
    return text(_ffi.lib().tlbpol_version())


def rule_str(rule: Union[Rule, int]) -> str:
    """The name of one rule bit ("lazy-unmap"); "unknown" for 0 or several bits."""
    return text(_ffi.call("tlbpol_rule_str", rule=rule))


def parse_rules(spec: str) -> Rule:
    """A rule mask from names, as tlbpol_rules_parse() reads them:
    "default,-lazy-unmap", "linux+receiver-merge", "none", "0x1ff".

    Raises TlbpolError (EINVAL) for an empty spec or an unknown name,
    TypeError if @spec is not a str, ValueError if it holds a NUL.
    """
    out = c_uint64()
    check("tlbpol_rules_parse", _ffi.call("tlbpol_rules_parse", spec=spec, out=byref(out)),
          repr(spec))
    return Rule(out.value)


def reason_str(reason: Union[Reason, int]) -> str:
    """The short name of a reason ("downgrade"); "unknown" out of range."""
    return text(_ffi.call("tlbpol_reason_str", reason=reason))


def action_str(action: Union[Action, int]) -> str:
    """The name of an action ("none", "local", "shootdown")."""
    return text(_ffi.call("tlbpol_action_str", action=action))


def deadline_str(deadline: Union[Deadline, int]) -> str:
    """The name of a deadline ("now", "writeback", "free", "lazy")."""
    return text(_ffi.call("tlbpol_deadline_str", deadline=deadline))


def has_reason_cite() -> bool:
    """Does the linked library have tlbpol_reason_cite() (release 0.2)?"""
    return _ffi.has("tlbpol_reason_cite")


def reason_cite(reason: Union[Reason, int], arch: ArchLike) -> str:
    """The hardware rule or kernel source the decision table cites for
    @reason on @arch (tlbpol_reason_cite()); "unknown" for an unknown reason
    or arch.  Raises NotImplementedError if the library predates it."""
    if not _ffi.has("tlbpol_reason_cite"):
        raise NotImplementedError("libtlbpol %s at %s has no tlbpol_reason_cite() "
                                  "(release 0.2)" % (version(), _ffi.lib_path()))
    return text(_ffi.call("tlbpol_reason_cite", reason=reason, arch=parse_arch(arch)))


_ARCH_NAMES = {"generic": Arch.GENERIC, "x86_64": Arch.X86_64, "x86-64": Arch.X86_64,
               "amd64": Arch.X86_64, "x86": Arch.X86_64, "arm64": Arch.ARM64,
               "aarch64": Arch.ARM64, "riscv64": Arch.RISCV64, "riscv": Arch.RISCV64}


def parse_arch(arch: ArchLike) -> Arch:
    """An Arch from the enum, its value, or a name: "x86_64" (or "x86-64",
    "amd64"), "arm64" (or "aarch64"), "riscv64" (or "riscv"), "generic".  ValueError for another
    name or value; TypeError and OverflowError as for every integer."""
    if isinstance(arch, str):
        try:
            return _ARCH_NAMES[arch.strip().lower()]
        except KeyError:
            raise ValueError("unknown arch %r (x86_64, arm64, riscv64, generic)" % arch) from None
    value = _ffi.check_int("arch", arch, _ffi.field_types(_ffi.Config)["arch"])
    try:
        return Arch(value)
    except ValueError:
        raise ValueError("unknown arch %d (x86_64, arm64, riscv64, generic)" % value) from None


def rule_mask(rules: RulesLike) -> Union[Rule, int]:
    """A rule mask from a spec, or @rules itself, checked where it reaches C."""
    if isinstance(rules, str):
        return parse_rules(rules)
    return rules
