#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""python3 -m tlbpol explain, run as a subprocess: its rows against the
library's decisions, its citations against tlbpol_reason_cite(), its
--all-kinds table against examples/decide (TLBPOL_DECIDE), its errors."""

import re
import subprocess
import sys
import unittest

import tlbpol
from tlbpol import Arch, EventFlag, EventKind

from helpers import env_or_skip

ROW = re.compile(r"^(\S+)\s+(none|local|shootdown)\s+(now|writeback|free|lazy)\s+(\S+)$")


def run(*args):
    return subprocess.run([sys.executable, "-m", "tlbpol"] + list(args),
                          capture_output=True, text=True, timeout=60)


def parse_explain(out):
    """[(label, action, deadline, reason, cite)] from explain's output."""
    rows, cur = [], None
    for line in out.splitlines():
        m = ROW.match(line)
        if m:
            cur = list(m.groups()) + [""]
            rows.append(cur)
        elif cur is not None and line.strip().startswith("cite: "):
            cur[4] = line.strip()[len("cite: "):]
        elif cur is not None and line.startswith(" ") and cur[4]:
            cur[4] += " " + line.strip()
    return [tuple(r) for r in rows]


def expected(arch, rules, ev):
    with tlbpol.Engine(arch=arch, rules=rules, cpus=4, flush_local=lambda *a: None,
                       send_ipi=lambda *a: None) as eng:
        with eng.open_as(1) as space:
            return eng.decide(space, 0, ev)


def flat(s):
    return " ".join(s.split())


class Explain(unittest.TestCase):
    def explain(self, *args):
        r = run("explain", *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        return r.stdout, parse_explain(r.stdout)

    def check_rows(self, rows, arch, ev, labels_rules):
        self.assertEqual([r[0] for r in rows], [l for l, _ in labels_rules])
        for (label, action, deadline, reason, cite), (_, rules) in zip(rows, labels_rules):
            d = expected(arch, rules, ev)
            self.assertEqual((action, deadline, reason),
                             (d.action_name, d.deadline_name, d.reason_name), label)
            self.assertEqual(cite, flat(tlbpol.reason_cite(d.reason, arch)), label)
            self.assertNotIn(cite, ("", "unknown"))

    def test_an_arm64_downgrade(self):
        out, rows = self.explain("--arch", "arm64", "--kind", "protect", "--old", "rw", "--new", "r")
        self.assertIn("arm64", out.splitlines()[0])
        ev = tlbpol.Event(EventKind.PROTECT, old_pte=tlbpol.parse_pte("rw"),
                          new_pte=tlbpol.parse_pte("r"))
        self.check_rows(rows, Arch.ARM64, ev, [("naive", "none"), ("linux", "linux"),
                                               ("default", "default")])
        self.assertEqual([r[1:4] for r in rows],
                         [("shootdown", "now", "naive"), ("shootdown", "now", "downgrade"),
                          ("shootdown", "now", "downgrade")])

    def test_flags_and_pages(self):
        out, rows = self.explain("--kind", "fault", "--old", "rwua", "--new", "rwuad", "--write")
        self.assertEqual(rows[1][1:4], ("none", "now", "access-flags"))
        self.assertIn("flags: --write", out)
        out, rows = self.explain("--arch", "x86_64", "--kind", "unmap", "--old", "rwuad",
                                 "--new", "0", "--stays-mapped", "--private", "--pages", "16")
        ev = tlbpol.Event("unmap", old_pte=tlbpol.parse_pte("rwuad"), new_pte=0, nr_pages=16,
                          flags=EventFlag.STAYS_MAPPED | EventFlag.PRIVATE)
        self.check_rows(rows, Arch.X86_64, ev, [("naive", "none"), ("linux", "linux"),
                                                ("default", "default")])
        self.assertEqual(rows[2][3], "discard")
        self.assertIn("16 pages", out)

    def test_rules_option(self):
        args = ["--arch", "x86_64", "--kind", "reclaim", "--old", "rwua", "--new", "none"]
        ev = tlbpol.Event("reclaim", old_pte=tlbpol.parse_pte("rwua"), new_pte=0)
        _, rows = self.explain(*args, "--rules", "default,-batch")
        self.check_rows(rows, Arch.X86_64, ev, [("naive", "none"), ("linux", "linux"),
                                                ("default", "default"),
                                                ("default,-batch", "default,-batch")])
        self.assertEqual(rows[2][2], "free")    # batched: before the frames are freed
        self.assertEqual(rows[3][2], "now")     # without the batch rule: now
        _, rows = self.explain(*args, "--rules", "linux+lazy-unmap", "--rules-only")
        self.assertEqual([r[0] for r in rows], ["linux+lazy-unmap"])
        _, rows = self.explain(*args, "--rules", "linux")
        self.assertEqual([r[0] for r in rows], ["naive", "linux", "default"])

    def test_default_ptes_per_kind(self):
        for kind in EventKind:
            with self.subTest(kind=kind):
                _, rows = self.explain("--kind", kind.name.lower().replace("_", "-"))
                self.assertEqual(len(rows), 3)

    def test_all_kinds(self):
        for arch in ("x86_64", "arm64", "riscv64", "generic"):
            with self.subTest(arch=arch):
                r = run("explain", "--arch", arch, "--all-kinds")
                self.assertEqual(r.returncode, 0, r.stderr)
                lines = r.stdout.splitlines()
                self.assertIn(arch, lines[0])
                table = [l for l in lines if " | " in l]
                self.assertEqual(table[0].split(" | ")[1].strip(), "naive")
                kinds = {l.split()[0] for l in table[1:]}
                self.assertEqual(kinds, {k.name.lower() for k in EventKind})
                cites = r.stdout.split("citations (%s):" % arch)[1]
                reasons = {re.search(r"\((\S+)\)", c).group(1)
                           for l in table[1:] for c in l.split(" | ")[1:]}
                for name in reasons:
                    self.assertRegex(cites, r"(?m)^  %s\s+\S" % re.escape(name))

    def test_all_kinds_agrees_with_examples_decide(self):
        d_out = subprocess.run([env_or_skip("TLBPOL_DECIDE")], capture_output=True, text=True, check=True).stdout
        ours = {}
        for arch in ("x86_64", "arm64", "riscv64", "generic"):
            for line in run("explain", "--arch", arch, "--all-kinds").stdout.splitlines():
                parts = [p.strip() for p in line.split(" | ")]
                if len(parts) == 4:
                    what = re.sub(r"\s{2,}.*", "", parts[0].split(None, 1)[1])
                    ours[(what, arch)] = parts[1:]
        compared = 0
        for line in d_out.splitlines():
            parts = [p.strip() for p in line.split(" | ")]
            if len(parts) != 4 or parts[0].startswith("seed"):
                continue
            head = parts[0]
            arch = head.split()[-1]
            what = head[len(head.split()[0]):].strip()[:-len(arch)].strip()
            if (what, arch) in ours:
                self.assertEqual(ours[(what, arch)], parts[1:], what)
                compared += 1
        self.assertGreaterEqual(compared, 8, "too few of examples/decide's rows compared")

    def test_help(self):
        r = run("explain", "--help")
        self.assertEqual(r.returncode, 0)
        for word in ("--all-kinds", "--rules", "--old", "--stays-mapped", "PTE spelling",
                     "x executable", "examples:"):
            self.assertIn(word, r.stdout)
        r = run("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("explain", r.stdout)

    def test_kind_choices_listed_once(self):
        kinds = [k.name.lower().replace("_", "-") for k in EventKind]
        r = run("explain", "--kind", "frob")
        self.assertEqual(r.returncode, 2)
        listed = re.search(r"invalid choice: 'frob' \(choose from (.*)\)", r.stderr)
        self.assertIsNotNone(listed, r.stderr)
        self.assertEqual(re.findall(r"'([^']*)'", listed.group(1)), kinds)
        # --help: the --kind line names each kind once (argparse may wrap
        # "clear-young" after its hyphen).
        r = run("explain", "--help")
        text = re.sub(r"-\n\s*", "-", r.stdout)
        line = re.search(r"--kind KIND\s+the event: ([^\n]*(?:\n {10,}[^\n-][^\n]*)*)", text)
        self.assertIsNotNone(line, r.stdout)
        self.assertEqual(flat(line.group(1)).split(", "), kinds)
        # Either spelling, any case, still works.
        for spelling in ("clear_young", "CLEAR-YOUNG", "clear-young"):
            out, rows = self.explain("--kind", spelling)
            self.assertIn(", clear_young of 1 page", out)
            self.assertEqual(len(rows), 3)

    def test_errors(self):
        r = run("explain", "--kind", "protect", "--old", "rwz")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown PTE letter 'z'", r.stderr)
        r = run("explain", "--kind", "protect", "--rules", "default-batch")
        self.assertEqual(r.returncode, 2)
        self.assertIn("tlbpol_rules_parse", r.stderr)
        r = run("explain", "--kind", "frob")
        self.assertEqual(r.returncode, 2)
        r = run("explain")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--all-kinds", r.stderr)
        r = run("explain", "--kind", "fault", "--page-shift", "13")
        self.assertEqual(r.returncode, 1)
        self.assertIn("[Errno 22] tlbpol_decide", r.stderr)
        r = run("explain", "--arch", "sparc", "--kind", "fault")
        self.assertEqual(r.returncode, 2)
        r = run("explain", "--all-kinds", "--old", "rw")
        self.assertEqual(r.returncode, 2)
        self.assertIn("go with --kind", r.stderr)

    def test_other_commands(self):
        r = run("rules")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"(?m)^lazy-unmap\s+1<<12\s+-\s+yes$")
        self.assertRegex(r.stdout, r"(?m)^batch\s+1<<3\s+yes\s+yes$")
        r = run("version")
        self.assertEqual(r.returncode, 0)
        self.assertIn(tlbpol.version(), r.stdout)


if __name__ == "__main__":
    unittest.main()
