#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Plant each mutant of lab/mutants/mutants.txt into a copy of the tree,
rebuild, run the checkers, and say which caught it.

usage: run.py [--only NAME[,NAME...]] [--checkers NAME[,NAME...]] [--list]
              [--dir DIR] [--seed S] [--events N]
       run.py --check-anchors CC INCDIR...

--check-anchors (meson test `mutant-anchors`): every mutant's text is found
exactly once in its file, and the mutated file still compiles (-fsyntax-only
with the include directories given), so that a moved or renamed line never
turns a planted bug into a build failure counted as a kill.

The copy lives in DIR (default $MUTANTS_DIR or /tmp/tlbpol-mutants) and is
configured once; each mutant is one exact text replacement, rebuilt
incrementally and reverted.  The unmutated tree runs first: every checker
must find nothing there, or the run stops.

Checkers are of two kinds.  Oracles (the stress suite, softmmu, tlbpol-sim,
the threads-as-CPUs tests, the unikernel under QEMU's TCG) report
violations: safety failures seen in the model machine (in the unikernel,
stale reads through QEMU's software TLB).  Asserts (the unit tests) report
failed expectations.  A mutant is "killed by a safety checker" when an
oracle reports a violation (a stall counts: it is the oracle's liveness
check); the table says which, with counts.  Exit status 0 when the
baseline was clean, whatever the kills.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import NamedTuple

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@dataclass
class Mutant:
    """One planted bug: in @file, the text @find replaced by @repl."""
    name: str
    why: str
    file: str = ""
    parts: dict[str, list[str]] = field(default_factory=lambda: {"find": [], "repl": []})

    @property
    def find(self) -> str:
        return "".join(self.parts["find"])

    @property
    def repl(self) -> str:
        return "".join(self.parts["repl"])


class Checker(NamedTuple):
    name: str
    kind: str           # "oracle" (reports violations) or "assert"
    cmd: list[str]      # run in the build directory
    timeout: int        # seconds


@dataclass(frozen=True)
class Result:
    result: str         # clean, caught, hang or crash
    n: int              # violations (or failures) counted
    kinds: str          # kind=count,... (or the output's tail for a crash)
    secs: float


def parse_mutants(path: str) -> list[Mutant]:
    muts: list[Mutant] = []
    cur: Mutant | None = None
    mode: str | None = None
    with open(path) as f:
        for line in f:
            if line.startswith("### "):
                name, _, why = line[4:].rstrip("\n").partition(": ")
                cur = Mutant(name, why)
                muts.append(cur)
            elif cur is None:
                if line.startswith(("@@ ", "<<<")):
                    raise SystemExit(f"{path}: {line.strip()} before the first ### heading")
            elif line.startswith("@@ "):
                cur.file = line[3:].strip()
            elif line.rstrip("\n") == "<<<":
                mode = "find"
            elif line.rstrip("\n") == "===":
                mode = "repl"
            elif line.rstrip("\n") == ">>>":
                mode = None
            elif mode:
                cur.parts[mode].append(line)
    return muts


def read(path: str) -> str:
    with open(path) as f:
        return f.read()


def write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def check_anchors(cc: str, incdirs: list[str]) -> int:
    bad = 0
    muts = parse_mutants(os.path.join(TOP, "lab", "mutants", "mutants.txt"))
    for m in muts:
        path = os.path.join(TOP, m.file)
        text = read(path) if os.path.exists(path) else ""
        n = text.count(m.find)
        if n != 1:
            print(f"FAIL: {m.name}: its text occurs {n} times in {m.file}")
            bad += 1
            continue
        # The mutated file in a copy of its directory; a header is
        # compiled through every file of that directory (whichever
        # includes it, directly or not).
        with tempfile.TemporaryDirectory() as tmp:
            d = os.path.dirname(path)
            for f in os.listdir(d):
                if f.endswith((".c", ".h")):
                    shutil.copy(os.path.join(d, f), tmp)
            base = os.path.basename(path)
            write(os.path.join(tmp, base), text.replace(m.find, m.repl))
            units = [base] if base.endswith(".c") else sorted(
                f for f in os.listdir(tmp) if f.endswith(".c"))
            for u in units:
                cmd = [cc, "-fsyntax-only", "-std=gnu11", "-Werror=implicit-function-declaration",
                       os.path.join(tmp, u)] + \
                      [a for inc in incdirs for a in ("-I", inc)]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode:
                    print(f"FAIL: {m.name}: {u} does not compile with it:\n"
                          + r.stderr[-1500:])
                    bad += 1
                    break
    print(f"{len(muts) - bad} of {len(muts)} mutants apply exactly once and compile")
    return 1 if bad else 0


def checkers(args: argparse.Namespace) -> list[Checker]:
    st = ["tests/oracle/stress", "--seed", str(args.seed), "--quiet"]
    ev = str(args.events)
    uk_run = os.path.join(args.dir, "src", "examples", "unikernel", "run.sh")
    return [Checker(*c) for c in [
        # name, kind, command (in the build directory), timeout (s)
        # Not the runner's own tests (suite mutants): mutant-anchors fails
        # on every mutated tree, the mutant's text being gone from it.
        ("unit", "assert", ["meson", "test", "--no-rebuild", "--suite", "unit",
                            "--no-suite", "concurrency", "--no-suite", "mutants", "-q"], 900),
        # Run directly, not through meson test (which puts each test in a
        # process group of its own, out of reach of the kill on a hang).
        ("threads", "oracle", ["sh", "-c", "tests/test_threads && tests/test_machinery_threads"],
         120),
        # The calls' contexts and who serves a waiting CPU (TLBPOL_CFGF_WAIT_IRQS):
        # in the concurrency suite, which "unit" leaves out.
        ("obligations", "assert", ["tests/test_obligations"], 120),
        ("stress-x86", "oracle", st + ["--cpus", "4", "--arch", "x86", "--events", ev,
                                       "--rules", "all"], 300),
        ("stress-switch", "oracle", st + ["--cpus", "4", "--arch", "x86", "--events", ev,
                                          "--rules", "all", "--retain", "--profile",
                                          "switch"], 300),
        ("stress-arm64-lazy", "oracle", st + ["--cpus", "4", "--arch", "arm64", "--events",
                                              ev, "--rules", "all", "--retain", "--profile",
                                              "lazy", "--batch", "8"], 300),
        ("stress-generic", "oracle", st + ["--cpus", "4", "--arch", "generic", "--events",
                                           ev, "--rules", "all", "--retain"], 300),
        # RISCV64: cached invalid PTEs, A and D by fault (Svade).
        ("stress-riscv64", "oracle", st + ["--cpus", "4", "--arch", "riscv64", "--events",
                                           ev, "--rules", "all", "--retain"], 300),
        ("stress-compute", "oracle", st + ["--cpus", "4", "--arch", "x86", "--events", ev,
                                           "--rules", "all", "--profile", "compute",
                                           "--ipi-delay", "20"], 300),
        # Waits served only by the interrupts relax takes (TLBPOL_CFGF_WAIT_IRQS).
        ("stress-waitirqs", "oracle", st + ["--cpus", "4", "--arch", "x86", "--events", ev,
                                            "--rules", "all", "--retain", "--wait-irqs",
                                            "--profile", "compute"], 300),
        # The whole CPU-state matrix, tables freed meanwhile (PREEMPTED -> IDLE).
        ("stress-states", "oracle", st + ["--cpus", "4", "--arch", "x86", "--events", ev,
                                          "--rules", "all", "--retain", "--profile", "states",
                                          "--wait-limit", "1024"], 300),
        # Quiet and idle CPUs, writeback mixed with free work, the tick
        # counter's wrap: deferred frees and stamps must complete in bounded
        # ticks (bounded-free).
        ("stress-quiet", "oracle", st + ["--cpus", "4", "--arch", "x86", "--events", ev,
                                         "--rules", "all", "--profile", "quiet"], 300),
        # Ticks and other waiting calls with interrupts off, with
        # TLBPOL_CFGF_WAIT_IRQS and without: a deadlock is a stall.
        ("stress-irqsoff", "oracle", st + ["--cpus", "4", "--arch", "x86", "--events", ev,
                                           "--rules", "all", "--retain", "--wait-irqs",
                                           "--irqs-off", "50"], 300),
        ("stress-irqsoff-nowait", "oracle", st + ["--cpus", "4", "--arch", "arm64", "--events",
                                                  ev, "--rules", "all", "--irqs-off", "50"],
         300),
        # Stamped unmap passes that ask for their stamp on another CPU first
        # (a migrated task): a wrong-CPU stamp 0 frees frames still cached.
        ("stress-migrate", "oracle", st + ["--cpus", "4", "--arch", "x86", "--events", ev,
                                           "--rules", "all", "--migrate", "50"], 300),
        # vCPUs held preempted until the others move on: a settle or a
        # forced lazy request that waits for one is a stall (3 s clock).
        ("stress-preempted", "oracle", st + ["--cpus", "4", "--arch", "x86", "--events", ev,
                                             "--rules", "with-vcpu-defer", "--profile",
                                             "preempted", "--stall-secs", "3"], 300),
        # Split-phase broadcasts (an issue takes effect at its issuer's
        # sync), described cheap enough to be chosen at four CPUs.
        ("stress-split", "oracle", st + ["--cpus", "4", "--arch", "x86", "--events", ev,
                                         "--rules", "all", "--retain", "--split",
                                         "--bcast-cost", "300"], 300),
        # A targeted remote action (RAR): no handler runs on its targets.
        ("stress-remote", "oracle", st + ["--cpus", "4", "--arch", "x86", "--events", ev,
                                          "--rules", "all", "--remote", "--no-broadcast"], 300),
        # Lockless walkers (GUP-fast): a table page freed under a walk is a
        # violation; with walker_sync after a split broadcast, and with long
        # preemptions (a settle that waits for a held vCPU is a stall).
        ("stress-walkers", "oracle", st + ["--cpus", "4", "--arch", "arm64", "--events", ev,
                                           "--rules", "all", "--walkers",
                                           "--bcast-cost", "300"], 300),
        ("stress-walker-sync", "oracle", st + ["--cpus", "4", "--arch", "x86", "--events", ev,
                                               "--rules", "all", "--retain", "--split",
                                               "--walkers", "--walker-sync",
                                               "--bcast-cost", "300"], 300),
        ("stress-preempted-walkers", "oracle", st + ["--cpus", "4", "--arch", "x86",
                                                     "--events", ev, "--rules",
                                                     "with-vcpu-defer", "--profile",
                                                     "preempted", "--walkers", "--walker-sync",
                                                     "--split", "--bcast-cost", "300",
                                                     "--stall-secs", "3"], 300),
        # Hardware tags from the engine's allocator: per-CPU slots with CPUs
        # switching back and forth; global generations with rollovers and
        # a split broadcast naming the one tag.
        ("stress-tags-percpu", "oracle", st + ["--cpus", "4", "--arch", "x86", "--events", ev,
                                               "--rules", "all", "--tags", "percpu", "--as",
                                               "12", "--profile", "switch", "--bcast-cost", "300"], 300),
        ("stress-tags-global", "oracle", st + ["--cpus", "4", "--arch", "arm64", "--events", ev,
                                               "--rules", "all", "--tags", "global", "--as",
                                               "12", "--split", "--bcast-cost", "300"], 300),
        # ... with stretched transition windows, in which a rollover can
        # give the address space a CPU is leaving another tag.
        ("stress-tags-global-window", "oracle",
         st + ["--cpus", "4", "--arch", "arm64", "--events", ev, "--rules", "all", "--tags",
               "global", "--as", "12", "--split", "--bcast-cost", "300", "--window", "200"], 600),
        # Per-CPU slots beside global tags for broadcasts (INVLPGB's).
        ("stress-tags-percpu-global", "oracle", st + ["--cpus", "4", "--arch", "x86", "--events",
                                                      ev, "--rules", "all", "--tags", "percpu",
                                                      "--as", "12", "--tag-global", "4",
                                                      "--tag-global-cpus", "2", "--split",
                                                      "--bcast-cost", "300"], 300),
        # ... with CPUs moved onto the global tag between switches
        # (ops->load_tag), in interrupts, ticks and their own shootdowns.
        ("stress-tags-irq-load", "oracle", st + ["--cpus", "4", "--arch", "x86", "--events",
                                                 ev, "--rules", "all", "--tags", "percpu",
                                                 "--as", "12", "--tag-global", "4",
                                                 "--tag-global-cpus", "2", "--split",
                                                 "--bcast-cost", "300", "--profile", "compute",
                                                 "--tag-irq-load"], 300),
        # Two CPUs making the same waiting call with interrupts off under
        # WAIT_IRQS; it aborts on a wait of 4 million turns (a deadlock).
        ("wait-irqs-off", "oracle", ["tests/test_wait_irqs_off"], 120),
        ("stress-planted", "oracle", st + ["--cpus", "4", "--arch", "x86", "--events", "6000",
                                           "--rules", "linux,default", "--profile",
                                           "planted"], 300),
        ("stress-8cpu-delay", "oracle", st + ["--cpus", "8", "--arch", "x86", "--events",
                                              ev, "--rules", "all", "--retain",
                                              "--ipi-delay", "50"], 300),
        ("stress-72cpu-fanout", "oracle", st + ["--cpus", "72", "--arch", "x86", "--events",
                                                ev, "--rules", "default,linux,numa_fanout",
                                                "--no-broadcast", "--ipi-delay", "20",
                                                "--profile", "compute"], 300),
        # The engine built with TLBPOL_TEST_ENTRY_CAP=4: batches past their
        # entries (widening, early completion), which no other checker reaches.
        ("stress-entries", "oracle", ["tests/oracle/stress-entries", "--seed", str(args.seed),
                                      "--quiet", "--cpus", "4", "--arch", "arm64", "--events",
                                      ev, "--rules", "all", "--retain", "--profile", "wide"],
         300),
        ("softmmu", "oracle", ["examples/softmmu/softmmu", "--seconds", "1", "--vcpus", "4"],
         120),
        # ... with guest address spaces under the engine's tags: per-CPU
        # slots (2 for 6 address spaces) and global generations (3 bits
        # for 8), a soft TLB keyed by tag whose entries know their owner.
        ("softmmu-tags", "oracle",
         ["sh", "-c", "examples/softmmu/softmmu --seconds 1 --vcpus 4 --rules linux,default "
          "--as 6 --tags percpu:2 && examples/softmmu/softmmu --seconds 1 --vcpus 4 "
          "--rules linux,default --as 8 --tags global:3"], 120),
        # The tag allocators under threads, by a model of each CPU's TLB by
        # tag: a tag reused without its flush, a running address space's
        # tag moved (a broadcast by it would miss the CPU).
        ("tags", "oracle",
         ["sh", "-c", "for a in '--kind percpu --cpus 8 --ids 40 --slots 3' "
          "'--kind global --cpus 2 --ids 12 --bits 3' '--kind global --cpus 8 --ids 40 --bits 4' "
          "'--kind global --cpus 72 --ids 300 --bits 7 --loads 3000'; do "
          f"tests/tag-stress $a --seed {args.seed} --quiet; done"], 300),
        # tlbpol-sim exits 1 for a stale-TLB violation (UNSAFE), 2 when a
        # CPU waits for acknowledgements with no interrupt pending or longer
        # than any wait of its machine (its liveness check, like the stress
        # oracle's stall).  --probe has every CPU read pages other CPUs
        # installed, so that a skipped or partial flush leaves an entry
        # the oracle sees.
        ("sim", "oracle", ["sh", "-c", "for s in reclaim dontneed lazy-unmap vcpu munmap "
                           "hypervisor; do "
                           "lab/sim/tlbpol-sim $s --cpus 16 --nodes 2 --probe >/dev/null 2>&1; "
                           "r=$?; [ $r = 1 ] && echo UNSAFE $s; [ $r = 2 ] && echo STUCK $s; "
                           "done; "
                           # Flush stamps: frames reused at once.
                           "lab/sim/tlbpol-sim lazy-unmap munmap --cpus 16 --nodes 2 --probe "
                           "--stamps >/dev/null 2>&1; r=$?; [ $r = 1 ] && echo UNSAFE stamps; "
                           "[ $r = 2 ] && echo STUCK stamps; true"], 300),
        # Tags in the simulator: a replayed build whose processes come and
        # go (address spaces closed and opened anew, their tags given back
        # and reused), per-CPU slots beside global tags with INVLPGB; the
        # hypervisor's VMIDs rolling over.
        ("sim-tags", "oracle", ["sh", "-c",
                                "lab/sim/tlbpol-sim trace ../src/lab/validate/data/ninja-build.trace "
                                "--cpus 4 --nodes 1 --backend invlpgb --tags percpu:2+2@2 "
                                "--probe >/dev/null 2>&1; r=$?; [ $r = 1 ] && echo UNSAFE trace; "
                                "[ $r = 2 ] && echo STUCK trace; "
                                "lab/sim/tlbpol-sim hypervisor --cpus 2 --nodes 1 --tags global:2 "
                                "--probe >/dev/null 2>&1; r=$?; [ $r = 1 ] && echo UNSAFE hv; "
                                "[ $r = 2 ] && echo STUCK hv; true"], 300),
        # The unikernel under QEMU's TCG (real invlpg, real IPIs, a real
        # software TLB): one boot with 2 vCPUs and one with 4, every
        # workload under naive, linux and default (about 6 s a boot).  Its
        # stamp_reuse workload is the one that sees a settle returning
        # early (S1, S2).  run.sh exits 77 without qemu-system-x86_64:
        # counted clean ("skipped").
        ("unikernel-tcg", "oracle",
         ["sh", "-c", f"for n in 2 4; do sh {uk_run} --tcg -n $n --timeout 200 "
          "--kernel examples/unikernel/kernel.elf 2>&1; echo \"run.sh exit $?\"; done"], 480),
    ]]


def run_checker(build: str, ck: Checker) -> Result:
    name, kind, cmd, tmo = ck
    t0 = time.time()
    # A session of its own, so that a hang is killed with all its children.
    p = subprocess.Popen(cmd, cwd=build, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=tmo)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return Result("hang", 0, "", time.time() - t0)
    n = 0
    kinds: dict[str, int] = {}
    if name.startswith("stress"):
        for m in re.finditer(r"^total: .* violations=(\d+)", out, re.M):
            n += int(m.group(1))
        for m in re.finditer(r"^  violations:(.*)$", out, re.M):
            for k, v in re.findall(r"([\w-]+)=(\d+)", m.group(1)):
                kinds[k] = kinds.get(k, 0) + int(v)
        if p.returncode not in (0, 1) and not n:
            return Result("crash", 0, out[-300:], time.time() - t0)
    elif name in ("softmmu", "softmmu-tags"):
        stale = re.findall(r"(\d+) stale", out)
        n = sum(int(x) for x in stale) if p.returncode else 0
        if p.returncode and not n:
            n = 1
    elif name == "unikernel-tcg":
        # "stale reads: N, anomalies: M" per boot; kinds: workload/mask of
        # the stale reads ("  stamp_reuse  default  done: 64 ops, 88 stale").
        n = sum(int(x) for x in re.findall(r"^stale reads: (\d+)", out, re.M))
        for w, m, k in re.findall(r"^  (\S+) +(\S+) +done: \d+ ops, (\d+) stale", out, re.M):
            if int(k):
                kinds[f"{w}/{m}"] = kinds.get(f"{w}/{m}", 0) + int(k)
        codes = re.findall(r"^run.sh exit (\d+)", out, re.M)
        if codes and all(c == "77" for c in codes):
            return Result("clean", 0, "skipped (no qemu)", time.time() - t0)
        if not n and any(c not in ("0", "77") for c in codes):
            return Result("crash", 0, out[-300:], time.time() - t0)
        return Result("caught" if n else "clean", n,
                      ",".join(f"{k}={v}" for k, v in sorted(kinds.items())),
                      time.time() - t0)
    elif name == "tags":
        n = sum(int(x) for x in re.findall(r"; (\d+) violations", out))
        if p.returncode and not n:
            return Result("crash", 0, out[-300:], time.time() - t0)
    elif name == "wait-irqs-off":
        # It aborts on a wait that never ends ("deadlock: cpu N waited ...").
        n = out.count("deadlock:")
        if n:
            kinds["stall"] = n
        elif p.returncode:
            n = 1
    elif name in ("sim", "sim-tags"):
        n = out.count("UNSAFE") + out.count("STUCK")
        if out.count("STUCK"):
            kinds["stuck"] = out.count("STUCK")
        if out.count("UNSAFE"):
            kinds["unsafe"] = out.count("UNSAFE")
    else:
        n = 0 if p.returncode == 0 else max(1, len(re.findall(r"\bFAIL\b", out)))
    res = "caught" if n or p.returncode else "clean"
    return Result(res, n, ",".join(f"{k}={v}" for k, v in sorted(kinds.items())),
                  time.time() - t0)


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def sh(cmd: list[str], cwd: str) -> None:
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode:
        sys.stderr.write(r.stdout[-2000:] + r.stderr[-2000:])
        raise SystemExit(f"failed: {' '.join(cmd)}")


def main() -> int:
    ap = argparse.ArgumentParser()
    if len(sys.argv) > 2 and sys.argv[1] == "--check-anchors":
        sys.exit(check_anchors(sys.argv[2], sys.argv[3:]))
    ap.add_argument("--only")
    ap.add_argument("--checkers")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--dir", default=os.environ.get("MUTANTS_DIR", "/tmp/tlbpol-mutants"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--events", type=int, default=40000)
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--markdown", help="also write the results as a markdown table here")
    args = ap.parse_args()

    muts = parse_mutants(os.path.join(TOP, "lab", "mutants", "mutants.txt"))
    if args.list:
        for m in muts:
            print(f"{m.name:34} {m.why}")
        return 0
    if args.only:
        want = args.only.split(",")
        muts = [m for m in muts if m.name in want or m.name.split("-")[0] in want]
    cks = checkers(args)
    if args.checkers:
        cks = [c for c in cks if c.name in args.checkers.split(",")]

    src, build = os.path.join(args.dir, "src"), os.path.join(args.dir, "build")
    files = subprocess.run(["git", "ls-files"], cwd=TOP, capture_output=True, text=True,
                           check=True).stdout.split()
    for rel in files:
        d = os.path.join(src, rel)
        os.makedirs(os.path.dirname(d), exist_ok=True)
        if not os.path.exists(d) or read_bytes(os.path.join(TOP, rel)) != read_bytes(d):
            shutil.copy(os.path.join(TOP, rel), d)  # a new mtime: ninja rebuilds it
    if not os.path.exists(os.path.join(build, "build.ninja")):
        sh(["meson", "setup", build, src], src)
    sh(["ninja", "-C", build], src)

    print(f"mutants: {len(muts)}, checkers: {', '.join(c.name for c in cks)}, seed {args.seed}")
    # Read by lab/results/parse.py: records made before this line existed
    # counted the anchor test as a kill of every mutant.
    print("unit checker: the unit suite without the runner's own tests (suite mutants)")
    if not args.no_baseline:
        bad = 0
        for ck in cks:
            r = run_checker(build, ck)
            print(f"  baseline {ck.name:20} {r.result:6} {r.n:6} {r.secs:6.1f}s {r.kinds}")
            bad += r.result != "clean"
        if bad:
            print("baseline not clean: stopping")
            return 1

    rows: list[tuple[Mutant, str, list[tuple[Checker, Result]]]] = []
    for m in muts:
        path = os.path.join(src, m.file)
        orig = read(path)
        if orig.count(m.find) != 1:
            rows.append((m, "stale (text not found exactly once)", []))
            print(f"{m.name}: STALE")
            continue
        write(path, orig.replace(m.find, m.repl))
        try:
            b = subprocess.run(["ninja", "-C", build], capture_output=True, text=True)
            if b.returncode:
                rows.append((m, "does not build", []))
                print(f"{m.name}: does not build")
                continue
            res = []
            for ck in cks:
                r = run_checker(build, ck)
                res.append((ck, r))
            rows.append((m, "", res))
            caught = [f"{ck.name}:{r.n if r.result == 'caught' else r.result}"
                      + (f"({r.kinds})" if r.kinds else "")
                      for ck, r in res if r.result != "clean"]
            safety = any(ck.kind == "oracle" and r.result in ("caught",) for ck, r in res)
            verdict = ("KILLED (oracle)" if safety else
                       "killed (assert/hang only)" if caught else "SURVIVED")
            print(f"{m.name}: {verdict}: {' '.join(caught)}", flush=True)
        finally:
            write(path, orig)
    subprocess.run(["ninja", "-C", build], capture_output=True)
    n = len(rows)
    k = sum(1 for m, e, res in rows
            if not e and any(ck.kind == "oracle" and r.result == "caught" for ck, r in res))
    a = sum(1 for m, e, res in rows if not e and any(r.result != "clean" for ck, r in res))
    print(f"\nkilled by a safety checker: {k} of {n}; killed by anything: {a} of {n}")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("| mutant | what it breaks | oracles that caught it: violations (kinds) "
                    "| asserts |\n|---|---|---|---|\n")
            for m, e, res in rows:
                if e:
                    f.write(f"| {m.name} | {m.why} | {e} | |\n")
                    continue
                orc = [f"{ck.name}: {r.n if r.result == 'caught' else r.result}"
                       + (f" ({r.kinds})" if r.kinds and ck.name != "stress-x86" else "")
                       for ck, r in res if ck.kind == "oracle" and r.result != "clean"]
                # One kinds list is enough per row: the first oracle's.
                for i, (ck, r) in enumerate((x for x in res if x[0].kind == "oracle"
                                              and x[1].result != "clean")):
                    if i == 0 and r.kinds:
                        orc[0] = f"{ck.name}: {r.n} ({r.kinds})"
                    elif i:
                        orc[i] = f"{ck.name}: {r.n if r.result == 'caught' else r.result}"
                ass = [f"{ck.name}: {r.result}" for ck, r in res
                       if ck.kind == "assert" and r.result != "clean"]
                f.write(f"| {m.name} | {m.why} | {'; '.join(orc) or 'none'} "
                        f"| {', '.join(ass) or '-'} |\n")
            f.write(f"\nKilled by a safety checker: {k} of {n}; by anything: {a} of {n}.\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
