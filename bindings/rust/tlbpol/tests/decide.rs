//! The seed scenarios of examples/decide.c, decided through the safe API
//! under the naive, Linux and default rules; the expected cells are what
//! `build/examples/decide` prints for them.

use tlbpol::*;

#[macro_use]
mod common;

struct Quiet;
impl Host for Quiet {
    fn flush_local(&self, _: &Here<'_>, _: &Flush<'_>) {}
    fn send_ipi(&self, _: &Here<'_>, _: &CpuSet) {}
}

const P: Pte = Pte::PRESENT;
const W: Pte = Pte::WRITE;
const U: Pte = Pte::USER;
const A: Pte = Pte::ACCESSED;
const D: Pte = Pte::DIRTY;

fn pte(bits: &[Pte]) -> Pte {
    bits.iter().fold(Pte::EMPTY, |a, b| a | *b)
}

struct Scenario {
    what: &'static str,
    arch: Arch,
    kind: EventKind,
    flags: EventFlags,
    old: Pte,
    new: Pte,
    pages: u64,
    /// naive, linux, default
    expect: [&'static str; 3],
}

fn scenarios() -> Vec<Scenario> {
    use Arch::*;
    use EventKind::*;
    let none = EventFlags::EMPTY;
    let naive = "shootdown/now (naive)";
    vec![
        Scenario { what: "000 threads write one shared page (D set)", arch: X86_64, kind: Fault, flags: EventFlags::WRITE,
            old: pte(&[P, W, U, A]), new: pte(&[P, W, U, A, D]), pages: 1,
            expect: [naive, "none/now (access-flags)", "none/now (access-flags)"] },
        Scenario { what: "000 spurious write fault, PTE unchanged", arch: X86_64, kind: Fault, flags: EventFlags::WRITE,
            old: pte(&[P, W, U, A, D]), new: pte(&[P, W, U, A, D]), pages: 1,
            expect: [naive, "none/now (spurious-fault)", "none/now (spurious-fault)"] },
        Scenario { what: "000 COW reuse: read-only -> writable", arch: X86_64, kind: Fault, flags: EventFlags::WRITE,
            old: pte(&[P, U, A]), new: pte(&[P, W, U, A, D]), pages: 1,
            expect: [naive, "none/now (upgrade)", "none/now (upgrade)"] },
        Scenario { what: "001 munmap of 8 pages", arch: X86_64, kind: Unmap, flags: none,
            old: pte(&[P, W, U, A]), new: Pte::EMPTY, pages: 8,
            expect: [naive, "shootdown/free (unmap)", "shootdown/free (unmap)"] },
        Scenario { what: "002 retried write fault, PTE installed", arch: Arm64, kind: Fault,
            flags: EventFlags::WRITE | EventFlags::TRIED, old: pte(&[P, W, U, A]), new: pte(&[P, W, U, A, D]), pages: 1,
            expect: [naive, "none/now (retried-fault)", "none/now (retried-fault)"] },
        Scenario { what: "003 reclaim a clean page", arch: X86_64, kind: Reclaim, flags: none,
            old: pte(&[P, W, U, A]), new: Pte::EMPTY, pages: 1,
            expect: [naive, "shootdown/free (reclaim-clean)", "shootdown/free (reclaim-clean)"] },
        Scenario { what: "003 reclaim a dirty page", arch: X86_64, kind: Reclaim, flags: none,
            old: pte(&[P, W, U, A, D]), new: Pte::EMPTY, pages: 1,
            expect: [naive, "shootdown/writeback (reclaim-dirty)", "shootdown/writeback (reclaim-dirty)"] },
        Scenario { what: "004 clear accessed bit for aging", arch: X86_64, kind: ClearYoung, flags: none,
            old: pte(&[P, W, U, A]), new: pte(&[P, W, U]), pages: 1,
            expect: [naive, "none/now (aging)", "none/now (aging)"] },
        Scenario { what: "004 clear accessed bit for aging", arch: Arm64, kind: ClearYoung, flags: none,
            old: pte(&[P, W, U, A]), new: pte(&[P, W, U]), pages: 1,
            expect: [naive, "shootdown/lazy (aging)", "shootdown/lazy (aging)"] },
        Scenario { what: "mprotect read-only (downgrade)", arch: X86_64, kind: Protect, flags: none,
            old: pte(&[P, W, U, A]), new: pte(&[P, U, A]), pages: 4,
            expect: [naive, "shootdown/now (downgrade)", "shootdown/now (downgrade)"] },
        Scenario { what: "fault on a not-present PTE", arch: X86_64, kind: Fault, flags: none,
            old: Pte::EMPTY, new: pte(&[P, U, A]), pages: 1,
            expect: ["none/now (not-present)", "none/now (not-present)", "none/now (not-present)"] },
        Scenario { what: "fault on a not-present PTE", arch: Generic, kind: Fault, flags: none,
            old: Pte::EMPTY, new: pte(&[P, U, A]), pages: 1,
            expect: ["local/now (install)", "local/now (install)", "local/now (install)"] },
        Scenario { what: "MADV_DONTNEED of 16 dirty pages", arch: X86_64, kind: Unmap,
            flags: EventFlags::STAYS_MAPPED | EventFlags::PRIVATE, old: pte(&[P, W, U, A, D]), new: Pte::EMPTY, pages: 16,
            expect: [naive, "shootdown/now (discard)", "shootdown/now (discard)"] },
        Scenario { what: "huge-page split (EVF_ATTRS)", arch: X86_64, kind: Protect, flags: EventFlags::ATTRS,
            old: pte(&[P, W, U, A, D]), new: pte(&[P, W, U, A, D]), pages: 1,
            expect: [naive, "shootdown/now (attributes)", "shootdown/now (attributes)"] },
    ]
}

fn decide(arch: Arch, rules: Rules, s: &Scenario) -> Decision {
    engine!(eng = &Config::new(4, arch).rules(rules), &Quiet);
    let space = eng.open_as(1).unwrap();
    let ev = Event::new(s.kind).va(0x7f00_0000_0000).pages(s.pages).flags(s.flags).old_pte(s.old).new_pte(s.new);
    eng.decide(&space, 0, &ev).unwrap()
}

#[test]
fn seed_scenarios_decide_as_examples_decide_prints() {
    let policies = [Rules::NONE, Rules::LINUX, Rules::DEFAULT];
    let mut wrong = Vec::new();
    for s in scenarios() {
        for (p, rules) in policies.iter().enumerate() {
            let got = decide(s.arch, *rules, &s).to_string();
            if got != s.expect[p] {
                wrong.push(format!("{} ({:?}, {}): {} instead of {}", s.what, s.arch, rules, got, s.expect[p]));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn rules_by_name_decide_as_the_masks() {
    // The names the command lines use give the same decisions as the masks.
    let by_name = [Rules::parse("naive").unwrap(), Rules::parse("linux").unwrap(), Rules::parse("default").unwrap()];
    assert_eq!(by_name, [Rules::NONE, Rules::LINUX, Rules::DEFAULT]);
    // Switching one rule off changes exactly its seed: without
    // aging-noflush, x86 aging is flushed again.
    let s = &scenarios()[7];
    let d = decide(s.arch, Rules::parse("linux,-aging-noflush").unwrap(), s);
    assert_ne!(d.to_string(), s.expect[1]);
    assert_eq!(d.reason, Reason::Aging);
    assert_ne!(d.action, Action::None);
}

#[test]
fn decide_is_pure_and_submit_agrees() {
    engine!(eng = &Config::new(2, Arch::X86_64), &Quiet);
    one_cpu!(eng, space = 7, c0 = 0);
    let ev = Event::new(EventKind::Reclaim).va(0x1000).old_pte(P | W | U | A | D);
    let before = eng.stats(None).unwrap();
    let d = eng.decide(&space, 0, &ev).unwrap();
    assert_eq!(eng.stats(None).unwrap(), before, "decide counted something");
    assert_eq!(c0.submit(&space, &ev).unwrap(), d);
    let after = eng.stats(Some(0)).unwrap();
    assert_eq!(after.events, 1);
    assert_eq!(after.by_reason(Reason::ReclaimDirty), 1);
}
