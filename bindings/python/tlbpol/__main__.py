# SPDX-License-Identifier: MIT
"""python3 -m tlbpol: explain what libtlbpol decides for a page-table change.

    python3 -m tlbpol explain --arch arm64 --kind protect --old rw --new r
    python3 -m tlbpol explain --arch x86_64 --all-kinds
    python3 -m tlbpol rules
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import _ffi
from ._constants import Arch, EventFlag, EventKind, Pte, Reason, Rule
from ._engine import AddressSpace, Engine
from ._errors import TlbpolError
from ._names import (has_reason_cite, parse_arch, parse_rules, reason_cite, reason_str,
                     rule_str, version)
from ._pte import format_pte, parse_pte
from ._values import Decision, Event

STANDARD_RULES: Tuple[Tuple[str, str], ...] = (("naive", "none"), ("linux", "linux"),
                                                ("default", "default"))

# --old / --new when not given: a representative change of each kind.
KIND_DEFAULTS: Dict[EventKind, Tuple[str, str]] = {
    EventKind.FAULT: ("none", "rua"),
    EventKind.PROTECT: ("rwua", "rua"),
    EventKind.UNMAP: ("rwua", "none"),
    EventKind.RECLAIM: ("rwua", "none"),
    EventKind.MIGRATE: ("rwua", "none"),
    EventKind.CLEAR_YOUNG: ("rwua", "rwu"),
    EventKind.CLEAR_DIRTY: ("rwuad", "rwua"),
    EventKind.REMAP: ("rwua", "none"),
}

FLAG_OPTIONS: Tuple[Tuple[str, EventFlag, str], ...] = (
    ("--write", EventFlag.WRITE, "fault: the access was a write (EVF_WRITE)"),
    ("--exec", EventFlag.EXEC, "fault: the access was an instruction fetch (EVF_EXEC)"),
    ("--tried", EventFlag.TRIED, "fault: a retried fault, FAULT_FLAG_TRIED (EVF_TRIED)"),
    ("--pfn-changed", EventFlag.PFN_CHANGED, "the PTE now points to another frame (EVF_PFN_CHANGED)"),
    ("--tables-freed", EventFlag.TABLES_FREED, "page-table pages under the range were freed (EVF_TABLES_FREED)"),
    ("--lazy-ok", EventFlag.LAZY_OK, "frames/addresses not reused before a deferred free runs (EVF_LAZY_OK)"),
    ("--private", EventFlag.PRIVATE, "unmap: private anonymous frame, contents die with it (EVF_PRIVATE)"),
    ("--stays-mapped", EventFlag.STAYS_MAPPED, "unmap: the range stays mapped, MADV_DONTNEED (EVF_STAYS_MAPPED)"),
    ("--attrs", EventFlag.ATTRS, "size, memory type, key or shadow stack changed (EVF_ATTRS)"),
    ("--stamp", EventFlag.STAMP, "unmap/reclaim: frames go back at once with a flush stamp (EVF_STAMP)"),
)


class Scenario(NamedTuple):
    what: str
    kind: EventKind
    old: str
    new: str
    flags: EventFlag = EventFlag(0)
    pages: int = 1


# --all-kinds: every kind, with the representative changes of examples/decide.
SCENARIOS: Tuple[Scenario, ...] = (
    Scenario("fault on a not-present PTE (install)", EventKind.FAULT, "none", "rua"),
    Scenario("threads write one shared page (D set)", EventKind.FAULT, "rwua", "rwuad", EventFlag.WRITE),
    Scenario("spurious write fault, PTE unchanged", EventKind.FAULT, "rwuad", "rwuad", EventFlag.WRITE),
    Scenario("COW reuse: read-only -> writable", EventKind.FAULT, "rua", "rwuad", EventFlag.WRITE),
    Scenario("retried write fault, PTE installed", EventKind.FAULT, "rwua", "rwuad",
             EventFlag.WRITE | EventFlag.TRIED),
    Scenario("mprotect read-only (downgrade)", EventKind.PROTECT, "rwua", "rua", pages=4),
    Scenario("mprotect writable (upgrade)", EventKind.PROTECT, "rua", "rwua", pages=4),
    Scenario("huge-page split (EVF_ATTRS)", EventKind.PROTECT, "rwuad", "rwuad", EventFlag.ATTRS),
    Scenario("munmap of 8 clean pages", EventKind.UNMAP, "rwua", "none", pages=8),
    Scenario("munmap of a dirty shared page", EventKind.UNMAP, "rwuad", "none"),
    Scenario("munmap, page tables freed", EventKind.UNMAP, "rwua", "none", EventFlag.TABLES_FREED),
    Scenario("MADV_DONTNEED of 16 dirty pages", EventKind.UNMAP, "rwuad", "none",
             EventFlag.STAYS_MAPPED | EventFlag.PRIVATE, 16),
    Scenario("reclaim a clean page", EventKind.RECLAIM, "rwua", "none"),
    Scenario("reclaim a dirty page", EventKind.RECLAIM, "rwuad", "none"),
    Scenario("migrate a clean page", EventKind.MIGRATE, "rwua", "none"),
    Scenario("migrate a dirty page", EventKind.MIGRATE, "rwuad", "none"),
    Scenario("clear accessed bit for aging", EventKind.CLEAR_YOUNG, "rwua", "rwu"),
    Scenario("clear dirty bit (writeback)", EventKind.CLEAR_DIRTY, "rwuad", "rwua"),
    Scenario("mremap: PTEs moved away", EventKind.REMAP, "rwua", "none"),
)


def _noop(*_args: object) -> None:
    return None


class _Decider:
    """One engine per rule set, kept for every event decided under it."""

    def __init__(self, arch: Arch, cpus: int = 4) -> None:
        self.arch = arch
        self.cpus = cpus
        self._engines: Dict[int, Tuple[Engine, AddressSpace]] = {}

    def decide(self, rules: Rule, ev: Event) -> Decision:
        if int(rules) not in self._engines:
            eng = Engine(arch=self.arch, rules=rules, cpus=self.cpus,
                         flush_local=_noop, send_ipi=_noop)
            self._engines[int(rules)] = (eng, eng.open_as(1))
        eng, space = self._engines[int(rules)]
        return eng.decide(space, 0, ev)

    def close(self) -> None:
        for eng, _ in self._engines.values():
            eng.close()


def _cite(reason: Union[Reason, int], arch: Arch) -> str:
    if not has_reason_cite():
        return "(no citation: libtlbpol %s has no tlbpol_reason_cite())" % version()
    return reason_cite(reason, arch)


def _flag_names(flags: int) -> str:
    names = [opt for opt, bit, _ in FLAG_OPTIONS if flags & bit]
    return " ".join(names) if names else "none"


def _rule_sets(args: argparse.Namespace) -> List[Tuple[str, Rule]]:
    sets: List[Tuple[str, Rule]] = []
    if not args.rules_only:
        sets = [(label, parse_rules(spec)) for label, spec in STANDARD_RULES]
    for spec in args.rules or []:
        mask = parse_rules(spec)
        label = spec
        for i, (old_label, _) in enumerate(sets):
            if old_label == spec:  # --rules linux: replaces the linux row
                sets[i] = (label, mask)
                break
        else:
            sets.append((label, mask))
    if not sets:
        raise SystemExit("tlbpol explain: error: --rules-only needs at least one --rules")
    return sets


def _page_size(shift: int) -> str:
    size = 1 << shift
    for unit, n in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << n and size % (1 << n) == 0:
            return "%d %s" % (size >> n, unit)
    return "%d B" % size


def _explain_one(args: argparse.Namespace, arch: Arch, out: List[str]) -> None:
    kind = EventKind[args.kind.upper().replace("-", "_")]
    old_default, new_default = KIND_DEFAULTS[kind]
    old = parse_pte(args.old if args.old is not None else old_default)
    new = parse_pte(args.new if args.new is not None else new_default)
    flags = EventFlag(0)
    for opt, bit, _ in FLAG_OPTIONS:
        if getattr(args, opt[2:].replace("-", "_")):
            flags |= bit
    ev = Event(kind, old_pte=old, new_pte=new, flags=flags, va=args.va,
               nr_pages=args.pages, page_shift=args.page_shift)
    rule_sets = _rule_sets(args)
    decider = _Decider(arch)
    try:
        decisions = [(label, mask, decider.decide(mask, ev)) for label, mask in rule_sets]
    finally:
        decider.close()

    out.append("libtlbpol %s: %s, %s of %d page%s of %s at %#x" % (
        version(), arch.name.lower(), kind.name.lower(), args.pages,
        "" if args.pages == 1 else "s", _page_size(args.page_shift), args.va))
    out.append("old PTE %s (%s) -> new PTE %s (%s); flags: %s" % (
        format_pte(old), _bits(old), format_pte(new), _bits(new), _flag_names(flags)))
    out.append("")
    width = max(8, max(len(label) for label, _ in rule_sets))
    out.append("%-*s  %-9s  %-9s  %s" % (width, "rules", "action", "deadline", "reason"))
    for label, mask, d in decisions:
        out.append("%-*s  %-9s  %-9s  %s" % (width, label, d.action_name, d.deadline_name,
                                              d.reason_name))
        if args.verbose:
            out.append("%-*s  rules %#x" % (width, "", int(mask)))
        cite = _cite(d.reason, arch)
        out.extend(textwrap.wrap(cite, width=100, initial_indent=" " * (width + 2) + "cite: ",
                                 subsequent_indent=" " * (width + 8)))


def _bits(v: int) -> str:
    if not v:
        return "not present"
    return "|".join(name.lower() for name, m in Pte.__members__.items()
                    if m is not Pte.ALL and v & m)


def _explain_all(args: argparse.Namespace, arch: Arch, out: List[str]) -> None:
    rule_sets = _rule_sets(args)
    decider = _Decider(arch)
    reasons: List[Union[Reason, int]] = []
    rows = []
    try:
        for s in SCENARIOS:
            ev = Event(s.kind, old_pte=parse_pte(s.old), new_pte=parse_pte(s.new), flags=s.flags,
                       va=args.va, nr_pages=s.pages, page_shift=args.page_shift)
            cells = []
            for _, mask in rule_sets:
                d = decider.decide(mask, ev)
                cells.append(str(d))
                if d.reason not in reasons:
                    reasons.append(d.reason)
            rows.append((s, cells))
    finally:
        decider.close()
    out.append("libtlbpol %s: decisions for every event kind on %s" % (version(), arch.name.lower()))
    out.append("")
    cw = max([len(c) for _, cells in rows for c in cells] + [len(l) for l, _ in rule_sets])
    header = "%-12s %-38s %-14s" % ("kind", "scenario", "old -> new")
    for label, _ in rule_sets:
        header += " | %-*s" % (cw, label)
    out.append(header.rstrip())
    for s, cells in rows:
        line = "%-12s %-38s %-14s" % (s.kind.name.lower(), s.what, "%s -> %s" % (
            format_pte(parse_pte(s.old)), format_pte(parse_pte(s.new))))
        for cell in cells:
            line += " | %-*s" % (cw, cell)
        out.append(line.rstrip())
    out.append("")
    out.append("action/deadline (reason): none = no flush anywhere, local = this CPU only,")
    out.append("shootdown = every CPU that may hold the entry; now / writeback / free / lazy.")
    out.append("")
    out.append("citations (%s):" % arch.name.lower())
    width = max(len(reason_str(r)) for r in reasons)
    for r in sorted(reasons):
        name = reason_str(r)
        out.extend(textwrap.wrap(_cite(r, arch), width=100,
                                 initial_indent="  %-*s  " % (width, name),
                                 subsequent_indent=" " * (width + 4)))


def _cmd_explain(args: argparse.Namespace) -> int:
    arch = parse_arch(args.arch)
    if not args.all_kinds and not args.kind:
        args.parser.error("give --kind KIND (and --old/--new), or --all-kinds")
    if args.all_kinds and (args.old is not None or args.new is not None or args.pages != 1
                           or any(getattr(args, o[2:].replace("-", "_")) for o, _, _ in FLAG_OPTIONS)):
        args.parser.error("--all-kinds uses its own PTEs, pages and flags: "
                          "--old, --new, --pages and the event flags go with --kind")
    out: List[str] = []
    try:
        if args.all_kinds:
            _explain_all(args, arch, out)
        else:
            _explain_one(args, arch, out)
    except TlbpolError as exc:
        if exc.function == "tlbpol_rules_parse":
            print("python3 -m tlbpol explain: error: %s: not a rule set "
                  "(see python3 -m tlbpol rules)" % exc, file=sys.stderr)
            return 2
        print("python3 -m tlbpol explain: error: %s: the library refused the event "
              "(a page size the arch lacks, an unaligned --va, a flag the kind does "
              "not take?)" % exc, file=sys.stderr)
        return 1
    print("\n".join(out))
    return 0


def _cmd_rules(args: argparse.Namespace) -> int:
    linux, default = parse_rules("linux"), parse_rules("default")
    print("%-18s %-8s %-6s %s" % ("rule", "bit", "linux", "default"))
    for bit in range(64):
        r = 1 << bit
        if not int(Rule.ALL) & r:
            continue
        print("%-18s %-8s %-6s %s" % (rule_str(r), "1<<%d" % bit, "yes" if linux & r else "-",
                                      "yes" if default & r else "-"))
    print("\nsets: none (naive), linux, default, all; combine as in "
          "\"default,-lazy-unmap\" or \"linux+receiver-merge\".")
    return 0


def _cmd_version(args: argparse.Namespace) -> int:
    from ._ffi import lib_path
    print("libtlbpol %s (%s)" % (version(), lib_path()))
    return 0


def _event_field(field: str, base: int) -> Callable[[str], int]:
    """An argparse type for struct tlbpol_event's @field: a number that must
    fit the field (argparse reports the OverflowError as the option's)."""
    ctype = _ffi.field_types(_ffi.EventS)[field]

    def parse(text: str) -> int:
        try:
            return _ffi.check_int("tlbpol_event." + field, int(text, base), ctype)
        except OverflowError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    parse.__name__ = "int"  # argparse: "invalid int value: 'x'"
    return parse


def _pte_arg(text: str) -> Pte:
    """An argparse type for --old / --new: parse_pte(), errors as the option's."""
    try:
        return parse_pte(text)
    except (ValueError, OverflowError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _kind_arg(text: str) -> str:
    """An argparse type for --kind: the kind's name as the choices spell it,
    lower case with '-' ("clear_young" -> "clear-young")."""
    return text.strip().lower().replace("_", "-")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python3 -m tlbpol",
        description="Ask libtlbpol what a page-table change needs: no flush, a local "
                    "flush or a shootdown, by when, why, and on what hardware rule "
                    "or kernel source that rests.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    kinds = ", ".join(k.name.lower().replace("_", "-") for k in EventKind)
    ex = sub.add_parser(
        "explain", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="the decision for one event (or every kind) under naive, linux and default rules",
        description=textwrap.fill(
            "Print, for the naive, linux and default rules (and each --rules SPEC), "
            "the action, the deadline and the reason libtlbpol decides for one "
            "page-table change, with the citation the decision table gives for "
            "that reason on that arch (tlbpol_reason_cite()).", width=78),
        epilog=textwrap.dedent("""\
            PTE spelling (--old, --new): letters, any of which makes the PTE present:
              r present/readable, w writable, x executable (x86: NX clear; Arm: XN clear),
              u user, a accessed, d dirty, g global, p present;
              0, none or - for not present; or names joined by '|' (present|write),
              or a number (0x13).  Defaults: a representative change of the kind.

            examples:
              python3 -m tlbpol explain --arch arm64 --kind protect --old rw --new r
              python3 -m tlbpol explain --arch x86_64 --kind fault --old rwua --new rwuad --write
              python3 -m tlbpol explain --kind unmap --old rwuad --new 0 --stays-mapped --pages 16
              python3 -m tlbpol explain --kind reclaim --rules "default,-batch"
              python3 -m tlbpol explain --arch generic --all-kinds
            """))
    ex.set_defaults(func=_cmd_explain, parser=ex)
    ex.add_argument("--arch", default="x86_64",
                    help="x86_64 (default), arm64, riscv64 or generic")
    what = ex.add_mutually_exclusive_group()
    # One spelling per kind in the choices (usage errors list them):
    # "clear_young" and "CLEAR-YOUNG" become "clear-young" before the check.
    what.add_argument("--kind", metavar="KIND", type=_kind_arg,
                      choices=[_kind_arg(k.name) for k in EventKind],
                      help="the event: " + kinds)
    what.add_argument("--all-kinds", action="store_true",
                      help="the whole table for --arch: every kind, representative PTEs")
    ex.add_argument("--old", metavar="PTE", type=_pte_arg,
                    help="the PTE before the change (e.g. rwua)")
    ex.add_argument("--new", metavar="PTE", type=_pte_arg,
                    help="the PTE after it (e.g. rua, or 0)")
    ex.add_argument("--rules", metavar="SPEC", action="append",
                    help="a further rule set, as tlbpol_rules_parse() reads it "
                         "(\"default,-lazy-unmap\", \"linux+receiver-merge\", \"0x1ff\"); "
                         "repeatable; naming naive/linux/default replaces that row")
    ex.add_argument("--rules-only", action="store_true",
                    help="show only the --rules sets, not naive, linux and default")
    # Each number must fit its field of struct tlbpol_event (exit 2 if not).
    ex.add_argument("--pages", type=_event_field("nr_pages", 10), default=1, metavar="N",
                    help="pages in the range (default 1)")
    ex.add_argument("--page-shift", type=_event_field("page_shift", 10), default=12,
                    metavar="S", help="log2 of the page size: 12, 21, 30 ... (default 12)")
    ex.add_argument("--va", type=_event_field("va", 0), default=0x7F0000000000,
                    help="first address (default 0x7f0000000000)")
    flags = ex.add_argument_group("event flags (TLBPOL_EVF_*)")
    for opt, _, help_text in FLAG_OPTIONS:
        flags.add_argument(opt, action="store_true", help=help_text)
    ex.add_argument("-v", "--verbose", action="store_true", help="also print each rule mask")

    ru = sub.add_parser("rules", help="list the rule names and the sets they belong to")
    ru.set_defaults(func=_cmd_rules)
    ve = sub.add_parser("version", help="the library's version and where it was loaded from")
    ve.set_defaults(func=_cmd_version)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (ValueError, OverflowError) as exc:  # a PTE spelling, an arch name, a number
        parser.exit(2, "python3 -m tlbpol: error: %s\n" % exc)
    except OSError as exc:  # rules parse, or the library cannot be loaded
        parser.exit(2 if isinstance(exc, TlbpolError) else 1,
                    "python3 -m tlbpol: error: %s\n" % exc)
    return 1


if __name__ == "__main__":
    sys.exit(main())
