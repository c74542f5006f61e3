//! An engine with a tag allocator (release 0.3, `cfg->tags`) through the
//! safe API: tests/test_switch_tag.c's scenarios.  `Cpu::switch_tag` reports
//! the tag and one flush, the allocator's and the catch-up folded together;
//! each CPU's `flush_local` names its own tag of the address space, a
//! broadcast the address space's one global tag; per-CPU slots leave
//! interrupts as the only mechanism, unless global tags beside them give
//! the broadcast a tag to name; CPUs moved onto a global tag without a
//! switch (`Host::load_tag`); the refusals.  Then what the bindings
//! add: the engine borrows (or owns) the allocator for its whole life and
//! gives it back after.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Mutex;

use tlbpol::*;

const RW: Pte = Pte(Pte::PRESENT.0 | Pte::WRITE.0 | Pte::USER.0 | Pte::ACCESSED.0);

/// A host that records each `flush_local` (CPU, tag), each interrupt and
/// each broadcast's tag; CPUs served by [`served`] take the interrupts.
#[derive(Default)]
struct Tlb {
    flushes: Mutex<Vec<(u32, u64)>>,
    ipis: Mutex<Vec<(u32, Vec<u32>)>>,
    broadcasts: Mutex<Vec<u64>>,
    pending: [AtomicBool; 4],
}

impl Tlb {
    /// Forget what was recorded.
    fn reset(&self) {
        self.flushes.lock().unwrap().clear();
        self.ipis.lock().unwrap().clear();
        self.broadcasts.lock().unwrap().clear();
    }
    /// The tag of the last `flush_local` on `cpu` (C's last_tag_on()).
    fn last_tag_on(&self, cpu: u32) -> Option<u64> {
        self.flushes.lock().unwrap().iter().rev().find(|f| f.0 == cpu).map(|f| f.1)
    }
    fn flushes_on(&self, cpu: u32) -> usize {
        self.flushes.lock().unwrap().iter().filter(|f| f.0 == cpu).count()
    }
}

impl Host for Tlb {
    fn flush_local(&self, cpu: &Here<'_>, f: &Flush<'_>) {
        self.flushes.lock().unwrap().push((cpu.cpu(), f.as_tag()));
    }
    fn send_ipi(&self, from: &Here<'_>, targets: &CpuSet) {
        self.ipis.lock().unwrap().push((from.cpu(), targets.iter().collect()));
        for c in targets {
            self.pending[c as usize].store(true, SeqCst);
        }
    }
    const HAS_BROADCAST: bool = true;
    fn broadcast(&self, _from: &Here<'_>, f: &Flush<'_>) {
        self.broadcasts.lock().unwrap().push(f.as_tag());
    }
}

/// C's engine(): interrupts dear, a broadcast cheap, so the broadcast
/// wherever it is usable.
fn config(cpus: u32) -> Config<'static> {
    Config::new(cpus, Arch::X86_64)
        .rules(Rules::DEFAULT | Rules::BROADCAST)
        .ipi_cost(100_000, 100_000, 0)
        .broadcast_cost(1, 0)
}

/// An allocator of `cfg` in leaked caller memory (a kernel's static), so
/// that it builds without `std` too.
fn make(cfg: TagsConfig) -> Tags<'static> {
    Tags::init(&cfg, Vec::leak(vec![0u8; Tags::mem_size(&cfg)])).unwrap()
}

fn use_(tag: u32, flush: TagFlush) -> Result<TagUse> {
    Ok(TagUse { tag, flush })
}

/// A shootdown-causing mprotect of one page at 0x1000 (C's h_event()).
fn protect() -> Event {
    Event::new(EventKind::Protect).va(0x1000).old_pte(RW).new_pte(Pte::PRESENT | Pte::USER | Pte::ACCESSED)
}

/// Runs `f` while every CPU of `others` takes its interrupts on a thread
/// of its own (as C's harness delivers them), and gives the tokens back.
fn served<'e, R>(host: &Tlb, others: Vec<Cpu<'e>>, f: impl FnOnce() -> R) -> (R, Vec<Cpu<'e>>) {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        // Collected: every server must be running before f() runs (older
        // clippy would have them spawned lazily, after it).
        #[allow(clippy::needless_collect)]
        let threads: Vec<_> = others
            .into_iter()
            .map(|mut cpu| {
                let (pending, stop) = (&host.pending[cpu.id() as usize], &stop);
                s.spawn(move || {
                    while !stop.load(SeqCst) {
                        if pending.swap(false, SeqCst) {
                            cpu.handle_ipi().unwrap();
                        }
                        std::thread::yield_now();
                    }
                    cpu
                })
            })
            .collect();
        let r = f();
        stop.store(true, SeqCst);
        (r, threads.into_iter().map(|t| t.join().unwrap()).collect())
    })
}

/// Per-CPU slots: a first use flushes the tag; a return to a slot that
/// missed nothing flushes nothing; one that missed a change (the CPU was
/// away, out of the footprint) flushes its tag.  Each CPU's flush names its
/// own slot's tag of the address space; no broadcast even when cheaper.
#[test]
fn percpu_slots() {
    let host = Tlb::default();
    let mut tags = make(TagsConfig::per_cpu(2, 12, 1, 6));
    let cfg = config(2);
    let mut mem = vec![0u8; Engine::<Tlb>::mem_size(&cfg)];
    {
        let eng = Engine::init_with_tags(&cfg, &host, &mut mem, &mut tags).unwrap();
        assert!(!eng.rules().contains(Rules::BROADCAST), "no one tag names an address space everywhere");
        let a = eng.open_as(100).unwrap();
        let b = eng.open_as(200).unwrap();
        let mut cpus = eng.take_cpus().unwrap();
        let (mut c0, mut c1) = (cpus.next().unwrap(), cpus.next().unwrap());
        assert_eq!(c0.switch_tag(Some(&a)), use_(1, TagFlush::Tag));
        assert_eq!(c1.switch_tag(Some(&b)).unwrap().tag, 1);
        assert_eq!(c1.switch_tag(Some(&a)), use_(2, TagFlush::Tag));

        // A shootdown from CPU 0: its flush names PCID 1, CPU 1's PCID 2.
        host.reset();
        let (d, back) = served(&host, vec![c1], || c0.submit(&a, &protect()).unwrap());
        c1 = back.into_iter().next().unwrap();
        assert_eq!(d.action, Action::Shootdown);
        assert_eq!(host.last_tag_on(0), Some(1));
        assert_eq!(host.last_tag_on(1), Some(2));
        assert_eq!(*host.ipis.lock().unwrap(), vec![(0, vec![1])], "interrupts, though dearer");
        assert!(host.broadcasts.lock().unwrap().is_empty());

        // CPU 1 goes to b (a stays in its slot) and back: nothing missed.
        assert_eq!(c1.switch_tag(Some(&b)), use_(1, TagFlush::None));
        assert_eq!(c1.switch_tag(Some(&a)), use_(2, TagFlush::None));

        // Away again while a changes: not interrupted, flushed at return.
        c1.switch_tag(Some(&b)).unwrap();
        host.reset();
        let (d, back) = served(&host, vec![c1], || c0.submit(&a, &protect()).unwrap());
        c1 = back.into_iter().next().unwrap();
        assert_eq!(d.action, Action::Shootdown);
        assert_eq!(host.flushes_on(1), 0);
        assert!(host.ipis.lock().unwrap().is_empty());
        assert_eq!(c1.switch_tag(Some(&a)), use_(2, TagFlush::Tag));

        // Lazy: the tag stays loaded.
        assert_eq!(c1.switch_tag(None), use_(2, TagFlush::None));
        assert_eq!(c1.switch_tag(Some(&a)), use_(2, TagFlush::None));
    }
    // The engine is gone: the allocator is the caller's again.  It made
    // a load at each switch to another address space (7), and flushed a
    // slot's tag for its first use only (3): the fourth TagFlush::Tag
    // above was the engine's catch-up, folded into the same answer.
    let st = tags.stats(None).unwrap();
    assert_eq!((st.loads, st.tag_flushes, st.all_flushes), (7, 3, 0));
    assert_eq!(tags.take_cpus().unwrap().count(), 2);
}

/// Global generations: one tag everywhere, which a broadcast names.
/// `host` is what `eng`'s host records into.
fn global_broadcast_on<H: Host>(eng: &Engine<'_, H>, host: &Tlb) {
    assert!(eng.rules().contains(Rules::BROADCAST));
    let b = eng.open_as(100).unwrap();
    let a = eng.open_as(200).unwrap();
    let mut cpus: Vec<Cpu<'_>> = eng.take_cpus().unwrap().collect();
    assert_eq!(cpus[0].switch_tag(Some(&b)), use_(1, TagFlush::All));
    for (c, cpu) in cpus.iter_mut().enumerate() {
        let flush = if c == 0 { TagFlush::None } else { TagFlush::All };
        assert_eq!(cpu.switch_tag(Some(&a)), use_(2, flush), "CPU {}", c);
    }
    host.reset();
    let others = cpus.split_off(1);
    let c0 = &mut cpus[0];
    let (d, _) = served(host, others, || c0.submit(&a, &protect()).unwrap());
    assert_eq!(d.action, Action::Shootdown);
    assert_eq!(*host.broadcasts.lock().unwrap(), vec![2], "one broadcast, naming a's one tag");
    assert!(host.ipis.lock().unwrap().is_empty());
    let st = eng.stats(None).unwrap();
    assert_eq!((st.shoot_broadcast, st.shoot_ipi), (1, 0));
}

#[test]
fn global_broadcast_in_caller_memory() {
    let host = Tlb::default();
    let mut tags = make(TagsConfig::global(4, 8, 1));
    let cfg = config(4);
    let mut mem = vec![0u8; Engine::<Tlb>::mem_size(&cfg)];
    let eng = Engine::init_with_tags(&cfg, &host, &mut mem, &mut tags).unwrap();
    global_broadcast_on(&eng, &host);
    drop(eng);
    let st = tags.stats(None).unwrap();
    // Five loads (b on CPU 0, a on each), every CPU's first flushing all.
    assert_eq!((st.loads, st.all_flushes, st.rollovers), (5, 4, 0));
}

/// A [`Tlb`] an owning engine's host shares with the test.
#[cfg(feature = "std")]
struct Shared(std::sync::Arc<Tlb>);

#[cfg(feature = "std")]
impl Host for Shared {
    fn flush_local(&self, cpu: &Here<'_>, f: &Flush<'_>) {
        self.0.flush_local(cpu, f)
    }
    fn send_ipi(&self, from: &Here<'_>, targets: &CpuSet) {
        self.0.send_ipi(from, targets)
    }
    const HAS_BROADCAST: bool = true;
    fn broadcast(&self, from: &Here<'_>, f: &Flush<'_>) {
        self.0.broadcast(from, f)
    }
}

/// `Engine::new_with_tags` owns the allocator, and `into_tags` gives it
/// back once the engine is freed.
#[cfg(feature = "std")]
#[test]
fn global_broadcast_owned() {
    let host = std::sync::Arc::new(Tlb::default());
    let tags = Tags::new(&TagsConfig::global(4, 8, 1)).unwrap();
    let eng = Engine::new_with_tags(&config(4), Shared(host.clone()), tags).unwrap();
    global_broadcast_on(&eng, &host);
    let tags = eng.into_tags().expect("the allocator it owned");
    let st = tags.stats(None).unwrap();
    assert_eq!((st.loads, st.all_flushes, st.rollovers), (5, 4, 0));
    // An engine without one has none to give back.
    assert!(Engine::new(&config(1), Tlb::default()).unwrap().into_tags().is_none());
}

/// Per-CPU slots beside global tags (tests/test_switch_tag.c's
/// test_percpu_global_broadcast): an address space loaded on 2 CPUs gets a
/// global tag at its next shootdown, which goes by interrupts (no CPU is on
/// the tag yet: a broadcast would not spare one).  Once one has switched to
/// it, the broadcast names it and the CPUs still under their slots (the
/// initiator's own included) are interrupted or flushed, each flush naming
/// its slot; once all have, the broadcast alone serves.  Closing the
/// address space gives the tag back.
#[test]
fn percpu_global_broadcast() {
    let host = Tlb::default();
    let mut tags = make(TagsConfig::per_cpu(4, 4, 1, 3).global_tags(2).global_min_cpus(2));
    let cfg = config(4);
    let mut mem = vec![0u8; Engine::<Tlb>::mem_size(&cfg)];
    {
        let eng = Engine::init_with_tags(&cfg, &host, &mut mem, &mut tags).unwrap();
        assert!(eng.rules().contains(Rules::BROADCAST), "by the global tags");
        let b = eng.open_as(100).unwrap();
        let a = eng.open_as(200).unwrap();
        let mut cpus: Vec<Cpu<'_>> = eng.take_cpus().unwrap().collect();
        cpus[1].switch_tag(Some(&b)).unwrap();
        for cpu in &mut cpus[..3] {
            let u = cpu.switch_tag(Some(&a)).unwrap();
            assert!((1..=3).contains(&u.tag), "a slot: {:?}", u);
        }
        // From CPU 0, with the other CPUs taking their interrupts.
        let shoot = |cpus: &mut Vec<Cpu<'_>>| {
            host.reset();
            let others = cpus.split_off(1);
            let c0 = &mut cpus[0];
            let (d, back) = served(&host, others, || c0.submit(&a, &protect()).unwrap());
            cpus.extend(back);
            assert_eq!(d.action, Action::Shootdown);
            let ipis = host.ipis.lock().unwrap();
            ipis.iter().flat_map(|i| i.1.iter().copied()).collect::<Vec<u32>>()
        };
        // Loaded on 3 CPUs: a global tag now, but nobody is on it yet.
        assert_eq!(shoot(&mut cpus), [1, 2]);
        assert!(host.broadcasts.lock().unwrap().is_empty());

        // CPU 1 moves to the global tag; CPU 2 stays on its slot.
        cpus[1].switch_tag(Some(&b)).unwrap();
        assert_eq!(cpus[1].switch_tag(Some(&a)).unwrap().tag, 14);
        assert_eq!(shoot(&mut cpus), [2], "the CPU still under its slot");
        assert_eq!(*host.broadcasts.lock().unwrap(), vec![14]);
        assert_eq!(host.last_tag_on(0), Some(1), "the initiator's slot");
        assert_eq!(host.last_tag_on(2), Some(1), "CPU 2's slot");

        // Every CPU switches to it again: on the global tag.
        for cpu in &mut cpus[..3] {
            cpu.switch_tag(Some(&b)).unwrap();
            assert_eq!(cpu.switch_tag(Some(&a)).unwrap().tag, 14);
        }
        assert_eq!(shoot(&mut cpus), []);
        assert_eq!(*host.broadcasts.lock().unwrap(), vec![14]);
        let st = eng.stats(None).unwrap();
        assert_eq!((st.shoot_broadcast, st.shoot_ipi), (2, 2));

        // Closed, its global tag goes back.
        for cpu in &mut cpus[..3] {
            cpu.switch_tag(None).unwrap();
            cpu.unload().unwrap();
        }
        a.close().map_err(|e| e.0).unwrap();
    }
    let st = tags.stats(None).unwrap();
    assert!(st.loads >= 10, "{:?}", *st);
    // The engine gave 14 back on close: 15 is free, then 14 once recycled.
    let (x, y, z) = (tags.new_id().unwrap(), tags.new_id().unwrap(), tags.new_id().unwrap());
    assert_eq!(tags.make_global(&x), Ok(15));
    assert_eq!(tags.make_global(&y), Ok(14));
    assert_eq!(tags.make_global(&z), Err(Error::Other(sys::errno::ENOSPC)));
}

/// A [`Tlb`] whose host also records each `load_tag` (CPU, tag, flush,
/// whether on the test's own thread), registered only if `ON`
/// (`HAS_LOAD_TAG`).
struct Loading<const ON: bool> {
    tlb: Tlb,
    main: std::thread::ThreadId,
    loads: Mutex<Vec<(u32, u32, TagFlush, bool)>>,
}

impl<const ON: bool> Loading<ON> {
    fn new() -> Self {
        Loading { tlb: Tlb::default(), main: std::thread::current().id(), loads: Mutex::new(Vec::new()) }
    }
    /// The loads on `cpu` so far: (tag, flush, on the test's thread).
    fn loads_on(&self, cpu: u32) -> Vec<(u32, TagFlush, bool)> {
        self.loads.lock().unwrap().iter().filter(|l| l.0 == cpu).map(|l| (l.1, l.2, l.3)).collect()
    }
}

impl<const ON: bool> Host for Loading<ON> {
    fn flush_local(&self, cpu: &Here<'_>, f: &Flush<'_>) {
        self.tlb.flush_local(cpu, f)
    }
    fn send_ipi(&self, from: &Here<'_>, targets: &CpuSet) {
        self.tlb.send_ipi(from, targets)
    }
    const HAS_BROADCAST: bool = true;
    fn broadcast(&self, from: &Here<'_>, f: &Flush<'_>) {
        self.tlb.broadcast(from, f)
    }
    const HAS_LOAD_TAG: bool = ON;
    fn load_tag(&self, here: &Here<'_>, tag: u32, flush: TagFlush) {
        let main = std::thread::current().id() == self.main;
        self.loads.lock().unwrap().push((here.cpu(), tag, flush, main));
    }
}

/// From CPU 0, the other CPUs taking their interrupts on threads of their
/// own: the CPUs interrupted, each once.
fn shoot_from_0<const ON: bool>(host: &Loading<ON>, a: &AddressSpace<'_>, cpus: &mut Vec<Cpu<'_>>) -> Vec<u32> {
    host.tlb.reset();
    let others = cpus.split_off(1);
    let c0 = &mut cpus[0];
    let (d, back) = served(&host.tlb, others, || c0.submit(a, &protect()).unwrap());
    cpus.extend(back);
    assert_eq!(d.action, Action::Shootdown);
    let ipis = host.tlb.ipis.lock().unwrap();
    let mut targets: Vec<u32> = ipis.iter().flat_map(|i| i.1.iter().copied()).collect();
    targets.sort_unstable();
    targets
}

/// C's test_percpu_global_irq_load up to its first shootdown: 4 CPUs,
/// 3 per-CPU slots and 2 global tags at 2 CPUs; b on CPU 1, then a on
/// CPUs 0 to 2, each switch published by a tick (until then a CPU is not
/// moved: its CR3 write may not have happened), CPU 2 lazy on a; then
/// the shootdown from CPU 0 that gives a its global tag, by an interrupt
/// to CPU 1 alone (no CPU is on the tag yet; the lazy CPU is left out).
fn irq_load_start<'e, const ON: bool>(
    eng: &'e Engine<'_, Loading<ON>>,
    host: &Loading<ON>,
) -> (AddressSpace<'e>, AddressSpace<'e>, Vec<Cpu<'e>>) {
    assert!(eng.rules().contains(Rules::BROADCAST), "by the global tags");
    let b = eng.open_as(100).unwrap();
    let a = eng.open_as(200).unwrap();
    let mut cpus: Vec<Cpu<'_>> = eng.take_cpus().unwrap().collect();
    cpus[1].switch_tag(Some(&b)).unwrap();
    for cpu in &mut cpus[..3] {
        let u = cpu.switch_tag(Some(&a)).unwrap();
        assert!((1..=3).contains(&u.tag), "a slot: {:?}", u);
        cpu.tick().unwrap();
    }
    assert_eq!(cpus[2].switch_tag(None).unwrap().flush, TagFlush::None, "lazy on a");
    assert!(host.loads.lock().unwrap().is_empty(), "no global tag yet");
    assert_eq!(shoot_from_0(host, &a, &mut cpus), [1]);
    assert!(host.tlb.broadcasts.lock().unwrap().is_empty());
    (a, b, cpus)
}

/// `Host::load_tag` (tests/test_switch_tag.c's test_percpu_global_irq_load):
/// CPUs move onto the global tag without a switch, the targets in the
/// interrupt of the shootdown that gave it (on their own threads), the
/// initiator at the end of its submit, a lazy CPU not at all (it comes
/// back under its slot and is interrupted, and moves at its tick).  From
/// then on the broadcast alone serves.
#[test]
fn percpu_global_irq_load() {
    let host = Loading::<true>::new();
    let mut tags = make(TagsConfig::per_cpu(4, 4, 1, 3).global_tags(2).global_min_cpus(2));
    let cfg = config(4);
    let mut mem = vec![0u8; Engine::<Loading<true>>::mem_size(&cfg)];
    let eng = Engine::init_with_tags(&cfg, &host, &mut mem, &mut tags).unwrap();
    let (a, b, mut cpus) = irq_load_start(&eng, &host);
    // CPU 1 in its interrupt, CPU 0 at the end of its submit; not the lazy
    // CPU 2.  The first global tag a CPU loads: what was under it is
    // unknown, so everything is flushed first.
    assert_eq!(host.loads_on(1), [(14, TagFlush::All, false)], "CPU 1, on its own thread");
    assert_eq!(host.loads_on(0), [(14, TagFlush::All, true)], "CPU 0, on the caller's thread");
    assert_eq!(host.loads_on(2), []);
    assert_eq!(host.loads_on(3), []);

    // CPU 2 back from lazy, under its slot: the broadcast, and an
    // interrupt for CPU 2 only (its switch not yet published: it does not
    // move in it); its tick moves it.
    let u = cpus[2].switch_tag(Some(&a)).unwrap();
    assert!((1..=3).contains(&u.tag), "a slot: {:?}", u);
    assert_eq!(shoot_from_0(&host, &a, &mut cpus), [2]);
    assert_eq!(*host.tlb.broadcasts.lock().unwrap(), vec![14]);
    assert_eq!(host.tlb.last_tag_on(2), Some(u64::from(u.tag)), "CPU 2's slot");
    assert_eq!(host.loads_on(2), []);
    cpus[2].tick().unwrap();
    assert_eq!(host.loads_on(2), [(14, TagFlush::All, true)]);

    // The broadcast alone; nobody moves again; a switch back gives 14.
    assert_eq!(shoot_from_0(&host, &a, &mut cpus), []);
    assert_eq!(*host.tlb.broadcasts.lock().unwrap(), vec![14]);
    assert_eq!(host.loads.lock().unwrap().len(), 3);
    cpus[1].switch_tag(Some(&b)).unwrap();
    assert_eq!(cpus[1].switch_tag(Some(&a)).unwrap().tag, 14);
    let st = eng.stats(None).unwrap();
    assert_eq!((st.shoot_broadcast, st.shoot_ipi), (2, 2), "the second with CPU 2's interrupt");
}

/// The same without `HAS_LOAD_TAG` (the host has a `load_tag` it did not
/// declare): it is never called, and CPUs move only at their switches, as
/// before the hook: CPUs still under their slots keep taking interrupts
/// beside the broadcast.
#[test]
fn percpu_global_without_load_tag() {
    let host = Loading::<false>::new();
    let mut tags = make(TagsConfig::per_cpu(4, 4, 1, 3).global_tags(2).global_min_cpus(2));
    let cfg = config(4);
    let mut mem = vec![0u8; Engine::<Loading<false>>::mem_size(&cfg)];
    let eng = Engine::init_with_tags(&cfg, &host, &mut mem, &mut tags).unwrap();
    let (a, b, mut cpus) = irq_load_start(&eng, &host);
    assert!(host.loads.lock().unwrap().is_empty());
    // Nobody on the tag, a tick or not: an interrupt again, no broadcast.
    cpus[1].tick().unwrap();
    assert_eq!(shoot_from_0(&host, &a, &mut cpus), [1]);
    assert!(host.tlb.broadcasts.lock().unwrap().is_empty());
    // CPU 1 switches to it: the broadcast names it, CPU 2 (back, under its
    // slot) is interrupted beside it.
    cpus[1].switch_tag(Some(&b)).unwrap();
    assert_eq!(cpus[1].switch_tag(Some(&a)).unwrap().tag, 14);
    cpus[2].switch_tag(Some(&a)).unwrap();
    assert_eq!(shoot_from_0(&host, &a, &mut cpus), [2]);
    assert_eq!(*host.tlb.broadcasts.lock().unwrap(), vec![14]);
    assert_eq!(host.tlb.last_tag_on(0), Some(1), "the initiator's slot");
    for cpu in &mut cpus {
        cpu.tick().unwrap();
    }
    assert!(host.loads.lock().unwrap().is_empty(), "never called");
}

#[test]
fn refusals() {
    let host = Tlb::default();
    // An allocator for 2 CPUs of 4: the library's -ERANGE.
    let cfg = config(4);
    let mut mem = vec![0u8; Engine::<Tlb>::mem_size(&cfg)];
    let mut small = make(TagsConfig::per_cpu(2, 12, 1, 6));
    assert_eq!(Engine::init_with_tags(&cfg, &host, &mut mem, &mut small).map(drop), Err(Error::Range));
    #[cfg(feature = "std")]
    assert_eq!(Engine::new_with_tags(&cfg, Tlb::default(), small).map(drop), Err(Error::Range));

    // Without tags: switch_tag refused (-EINVAL), whatever the CPU.
    let cfg = config(2);
    let mut mem = vec![0u8; Engine::<Tlb>::mem_size(&cfg)];
    {
        let eng = Engine::init(&cfg, &host, &mut mem).unwrap();
        let a = eng.open_as(1).unwrap();
        let mut c0 = eng.take_cpus().unwrap().next().unwrap();
        assert_eq!(c0.switch_tag(Some(&a)), Err(Error::Invalid));
        assert_eq!(c0.switch_tag(None), Err(Error::Invalid));
        // SAFETY: the engine has no CPU 2, so no other token for it.
        assert_eq!(unsafe { eng.cpu_unchecked(2) }.switch_tag(Some(&a)), Err(Error::Invalid));
        assert_eq!(c0.switch(Some(&a)), Ok(false), "the plain switch works");
    }

    // With tags: switch refused (-EINVAL); switch_tag's own errors.
    let mut tags = make(TagsConfig::per_cpu(2, 12, 1, 6));
    let mut other_mem = vec![0u8; Engine::<Tlb>::mem_size(&cfg)];
    let other = Engine::init(&cfg, &host, &mut other_mem).unwrap();
    let foreign = other.open_as(1).unwrap();
    let eng = Engine::init_with_tags(&cfg, &host, &mut mem, &mut tags).unwrap();
    let a = eng.open_as(1).unwrap();
    let mut cpus = eng.take_cpus().unwrap();
    let (mut c0, mut c1) = (cpus.next().unwrap(), cpus.next().unwrap());
    assert_eq!(c0.switch(Some(&a)), Err(Error::Invalid));
    assert_eq!(c0.switch(None), Err(Error::Invalid));
    // SAFETY: the engine has no CPU 2, so no other token for it.
    assert_eq!(unsafe { eng.cpu_unchecked(2) }.switch_tag(Some(&a)), Err(Error::Range));
    assert_eq!(c0.switch_tag(Some(&foreign)), Err(Error::Invalid));
    assert_eq!(c1.set_state(CpuState::Idle), Ok(false));
    assert_eq!(c1.switch_tag(Some(&a)), Err(Error::Busy), "not RUNNING");
    assert_eq!(c1.set_state(CpuState::Running), Ok(false));
    assert_eq!(c1.switch_tag(Some(&a)), use_(1, TagFlush::Tag));
    assert_eq!(c0.switch_tag(Some(&a)), use_(1, TagFlush::Tag));
    // Closing needs every CPU off it: lazy is not enough, unload is.
    for c in [&mut c0, &mut c1] {
        assert_eq!(c.switch_tag(None), use_(1, TagFlush::None));
        c.unload().unwrap();
    }
    a.close().map_err(|e| e.0).unwrap();
}
