//! The callbacks' typed values, the optional hooks, stamps, names, owned
//! engines and closures, and panics in callbacks.

use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::Mutex;

use tlbpol::*;

#[macro_use]
mod common;

const RW: Pte = Pte(Pte::PRESENT.0 | Pte::WRITE.0 | Pte::USER.0 | Pte::ACCESSED.0);

#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Flush { cpu: u32, tag: u64, kind: FlushKind, ranges: Vec<(u64, u64)> },
    Ipi { from: u32, targets: Vec<u32> },
    Broadcast { from: u32, kind: FlushKind },
    Issue { cpu: u32, kind: FlushKind, ranges: Vec<(u64, u64)> },
    Sync { cpu: u32 },
    WalkerSync { cpu: u32, cpus: Vec<u32> },
    Remote { from: u32, targets: Vec<u32>, kind: FlushKind, ranges: Vec<(u64, u64)> },
}

#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<Seen>>,
    pending: [AtomicBool; 4],
}

impl Recorder {
    fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
    fn flush(&self, cpu: u32, f: &Flush<'_>) {
        let ranges = f.ranges().iter().map(|r| (r.va(), r.nr_pages())).collect();
        self.seen.lock().unwrap().push(Seen::Flush { cpu, tag: f.as_tag(), kind: f.kind(), ranges });
    }
    fn ipi(&self, from: u32, targets: &CpuSet) {
        self.seen.lock().unwrap().push(Seen::Ipi { from, targets: targets.iter().collect() });
        for c in targets {
            self.pending[c as usize].store(true, SeqCst);
        }
    }
}

/// `flush_local` and `send_ipi` of a host: recorded by its `Recorder`
/// (`self`, or the field named).
macro_rules! recorded_by {
    ($($field:tt)?) => {
        fn flush_local(&self, cpu: &Here<'_>, f: &Flush<'_>) {
            self$(.$field)?.flush(cpu.cpu(), f)
        }
        fn send_ipi(&self, from: &Here<'_>, targets: &CpuSet) {
            self$(.$field)?.ipi(from.cpu(), targets)
        }
    };
}

impl Host for Recorder {
    recorded_by!();
}

/// The same, with a broadcast.
#[derive(Default)]
struct Broadcaster(Recorder);

impl Host for Broadcaster {
    recorded_by!(0);
    const HAS_BROADCAST: bool = true;
    fn broadcast(&self, from: &Here<'_>, f: &Flush<'_>) {
        self.0.seen.lock().unwrap().push(Seen::Broadcast { from: from.cpu(), kind: f.kind() });
    }
}

/// CPU 1 on its own thread, taking interrupts until `stop`.
fn serve<'e>(pending: &AtomicBool, stop: &AtomicBool, mut cpu: Cpu<'e>) -> Cpu<'e> {
    while !stop.load(SeqCst) {
        if pending.swap(false, SeqCst) {
            cpu.handle_ipi().unwrap();
        }
        std::thread::yield_now();
    }
    cpu
}

#[test]
fn a_shootdown_reaches_the_callbacks_typed() {
    let host = Recorder::default();
    engine!(eng = &Config::new(2, Arch::X86_64), &host);
    two_cpus!(eng, space = 0x42, c0, c1);
    host.take();
    let ceiling = sys::TLBPOL_DEFAULT_FLUSH_CEILING as u64;

    // mprotect of 4 pages read-only: a shootdown before submit returns.
    let stop = AtomicBool::new(false);
    let ev = Event::new(EventKind::Protect).va(0x20_0000).pages(4).old_pte(RW).new_pte(Pte::PRESENT | Pte::USER);
    let (d, c1) = std::thread::scope(|s| {
        let t = s.spawn(|| serve(&host.pending[1], &stop, c1));
        let d = c0.submit(&space, &ev).unwrap();
        stop.store(true, SeqCst);
        (d, t.join().unwrap())
    });
    assert_eq!((d.action, d.deadline, d.reason), (Action::Shootdown, Deadline::Now, Reason::Downgrade));
    let mut seen = host.take();
    seen.sort_by_key(|s| format!("{:?}", s));
    let flush = |cpu| Seen::Flush { cpu, tag: 0x42, kind: FlushKind::Pages, ranges: vec![(0x20_0000, 4)] };
    assert_eq!(seen, vec![flush(0), flush(1), Seen::Ipi { from: 0, targets: vec![1] }]);

    // Past the flush ceiling: one whole-AS flush instead of the pages.
    let ev = ev.pages(ceiling + 1);
    std::thread::scope(|s| {
        stop.store(false, SeqCst);
        let t = s.spawn(|| serve(&host.pending[1], &stop, c1));
        c0.submit(&space, &ev).unwrap();
        stop.store(true, SeqCst);
        t.join().unwrap();
    });
    let seen = host.take();
    assert!(seen.contains(&Seen::Flush { cpu: 1, tag: 0x42, kind: FlushKind::As, ranges: vec![] }), "{:?}", seen);
    let st = eng.stats(None).unwrap();
    assert_eq!(st.events, 2);
    assert_eq!(st.ipis_sent, 2);
    assert_eq!(st.by_reason(Reason::Downgrade), 2);
}

#[test]
fn broadcast_is_registered_only_when_the_host_has_it() {
    let cfg = Config::new(2, Arch::Arm64).ipi_cost(100_000, 100_000, 0).broadcast_cost(1, 1);
    let plain = Recorder::default();
    engine!(eng = &cfg, &plain);
    assert!(!eng.rules().contains(Rules::BROADCAST), "broadcast rule without a broadcast hook");

    let host = Broadcaster::default();
    engine!(eng = &cfg, &host);
    assert!(eng.rules().contains(Rules::BROADCAST));
    two_cpus!(eng, space = 5, c0, c1);
    let ev = Event::new(EventKind::Protect).va(0x1000).old_pte(RW).new_pte(Pte::PRESENT | Pte::USER);
    c0.submit(&space, &ev).unwrap();
    let seen = host.0.take();
    assert!(seen.iter().any(|s| matches!(s, Seen::Broadcast { from: 0, .. })), "{:?}", seen);
    assert!(!seen.iter().any(|s| matches!(s, Seen::Ipi { .. })), "{:?}", seen);
    let st = eng.stats(None).unwrap();
    assert_eq!((st.broadcasts, st.shoot_broadcast, st.shoot_ipi), (1, 1, 0));
}

#[test]
fn stamps_settle_after_the_other_cpu_ticks() {
    let host = Recorder::default();
    engine!(eng = &Config::new(2, Arch::X86_64), &host);
    two_cpus!(eng, space = 1, c0, c1);

    let ev = Event::new(EventKind::Unmap).va(0x5000).old_pte(RW).flags(EventFlags::PRIVATE | EventFlags::STAMP);
    let d = c0.submit(&space, &ev).unwrap();
    assert_eq!(d.deadline, Deadline::Lazy);
    let (n, stamp) = c0.stamp().unwrap();
    assert_eq!(n, 1);
    assert!(!stamp.is_none());
    // Posted to CPU 1 without an interrupt: pending until it ticks.
    assert_eq!(eng.stamp_pending(stamp), Ok(true));
    assert!(!host.take().iter().any(|s| matches!(s, Seen::Ipi { .. })));
    c1.tick().unwrap();
    assert_eq!(eng.stamp_pending(stamp), Ok(false));
    assert_eq!(c0.stamp_settle(stamp), Ok(false), "nothing left to wait for");
    assert!(host.take().contains(&Seen::Flush { cpu: 1, tag: 1, kind: FlushKind::Pages, ranges: vec![(0x5000, 1)] }));
}

#[test]
fn names_and_versions() {
    assert_eq!(version(), sys::TLBPOL_VERSION_STRING);
    assert_eq!(Reason::ALL.len(), sys::TLBPOL_WHY_MAX as usize);
    for r in Reason::ALL {
        assert_ne!(r.name(), "unknown", "{:?}", r);
        assert_eq!(Reason::from_raw(r.raw()), Some(*r));
        // Some(citation) exactly when the header declares the function.
        let cite = r.cite(Arch::X86_64);
        assert_eq!(cite.is_some(), sys::TLBPOL_HAVE_REASON_CITE, "{:?}", r);
        assert!(cite.map_or(true, |c| !c.is_empty()), "{:?}", r);
    }
    assert_eq!(Reason::from_raw(sys::TLBPOL_WHY_MAX), None);
    assert_eq!(Reason::ReclaimClean.name(), "reclaim-clean");
    assert_eq!(Action::Shootdown.name(), "shootdown");
    assert_eq!(Deadline::Writeback.name(), "writeback");
    assert_eq!(EventKind::ALL.len(), sys::TLBPOL_EV_MAX as usize);
    assert_eq!(Arch::ALL.len(), sys::TLBPOL_ARCH_MAX as usize);
}

#[test]
fn cpu_sets() {
    let mut s = CpuSet::new();
    assert!(s.is_empty());
    for c in [0, 63, 64, 4095, 4096] {
        s.insert(c);
    }
    assert_eq!(s.len(), 4, "4096 is out of range and ignored");
    assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 63, 64, 4095]);
    assert!(s.contains(64) && !s.contains(65) && !s.contains(4096));
    s.remove(63);
    assert_eq!(format!("{:?}", s), "{0, 64, 4095}");
    s.clear();
    assert!(s.is_empty());
}

#[test]
fn a_panicking_callback_aborts_instead_of_unwinding_into_c() {
    if std::env::var_os("TLBPOL_PANIC_CHILD").is_some() {
        struct Panics;
        impl Host for Panics {
            fn flush_local(&self, _: &Here<'_>, _: &Flush<'_>) {
                panic!("flush_local panics");
            }
            fn send_ipi(&self, _: &Here<'_>, _: &CpuSet) {}
        }
        engine!(eng = &Config::new(1, Arch::X86_64), &Panics);
        one_cpu!(eng, space = 1, c0 = 0);
        let ev = Event::new(EventKind::Protect).va(0x1000).old_pte(RW).new_pte(Pte::PRESENT);
        let _ = c0.submit(&space, &ev);
        // Reached only if the panic was swallowed: exit "successfully" so
        // the parent sees the wrong outcome.
        std::process::exit(0);
    }
    use std::os::unix::process::ExitStatusExt;
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "a_panicking_callback_aborts_instead_of_unwinding_into_c", "--test-threads=1", "--nocapture"])
        .env("TLBPOL_PANIC_CHILD", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(6), "expected SIGABRT: {:?}\n{}", out.status, stderr);
    assert!(stderr.contains("flush_local panics"), "{}", stderr);
}

#[cfg(feature = "std")]
#[test]
fn owned_engine_closures_and_reconfiguration() {
    use std::sync::atomic::AtomicU32;
    let cfg = Config::new(1, Arch::X86_64).rules(Rules::LINUX);
    let mut eng = Engine::new(&cfg, Recorder::default()).unwrap();
    assert_eq!(eng.rules(), Rules::LINUX);
    eng.set_rules(Rules::NONE).unwrap();
    assert_eq!(eng.rules(), Rules::NONE);
    assert_eq!(eng.set_rules(Rules(1 << 50)), Err(Error::Invalid));
    assert_eq!(eng.set_flush_ceiling(0), Err(Error::Invalid));
    assert_eq!(eng.set_batch_pages(1 << 20), Err(Error::Range));
    eng.set_rules(Rules::DEFAULT).unwrap();
    eng.set_ipi_delay(10).unwrap();
    eng.set_cost_model(&Config::new(1, Arch::X86_64).ipi_cost(900, 0, 0)).unwrap();

    let runs = AtomicU32::new(0);
    {
        let space = eng.open_as(3).unwrap();
        let found = eng.lookup(3).expect("tag 3 is open");
        assert_eq!((found.tag(), found.raw()), (3, space.raw()));
        assert!(eng.lookup(4).is_none());
        let mut c0 = eng.take_cpus().unwrap().next().unwrap();
        c0.switch(Some(&space)).unwrap();
        c0.submit(&space, &Event::new(EventKind::Unmap).va(0x9000).old_pte(RW)).unwrap();
        c0.defer_free(|| {
            runs.fetch_add(1, SeqCst);
        })
        .unwrap();
        assert_eq!(c0.frees_pending(), Ok(1));
        assert_eq!(runs.load(SeqCst), 0, "ran before the flush");
        assert_eq!(c0.flush(Deadline::Free), Ok(1));
        assert_eq!(runs.load(SeqCst), 1);
        // Nothing pending: runs at once.
        c0.defer_free(|| {
            runs.fetch_add(10, SeqCst);
        })
        .unwrap();
        assert_eq!(runs.load(SeqCst), 11);
    }
    drop(eng);
}

/// A guest's host: vCPU 1 is preempted and the hypervisor flushes it.
#[derive(Default)]
struct Guest {
    rec: Recorder,
    stuck: Mutex<Vec<(u32, Vec<u32>, u64)>>,
    /// A wait that should not happen: fail (abort) rather than hang.
    abort_if_stuck: bool,
}

impl Host for Guest {
    recorded_by!(rec);
    const HAS_VCPU_DEFER: bool = true;
    fn vcpu_defer(&self, cpu: u32) -> bool {
        cpu == 1
    }
    const HAS_STUCK: bool = true;
    fn stuck(&self, cpu: &Here<'_>, waiting_for: &CpuSet, turns: u64) {
        assert!(!self.abort_if_stuck, "CPU {} waits for {:?}", cpu.cpu(), waiting_for);
        self.stuck.lock().unwrap().push((cpu.cpu(), waiting_for.iter().collect(), turns));
    }
}

#[test]
fn vcpu_defer_spares_a_preempted_vcpu() {
    // The watchdog turns a wait for vCPU 1, which never serves here, into
    // an abort instead of a silent hang.
    let host = Guest { abort_if_stuck: true, ..Guest::default() };
    engine!(eng = &Config::new(2, Arch::X86_64).wait_limit(100_000), &host);
    assert!(eng.rules().contains(Rules::VCPU_DEFER));
    two_cpus!(eng, space = 1, c0, c1);
    let ev = Event::new(EventKind::Protect).va(0x1000).old_pte(RW).new_pte(Pte::PRESENT | Pte::USER);
    let d = c0.submit(&space, &ev).unwrap();
    assert_eq!((d.action, d.deadline), (Action::Shootdown, Deadline::Now));
    let seen = host.rec.take();
    assert!(!seen.iter().any(|s| matches!(s, Seen::Ipi { .. })), "vCPU 1 interrupted: {:?}", seen);
}

#[test]
fn the_watchdog_reports_a_cpu_that_does_not_serve() {
    let host = Guest::default();
    engine!(eng = &Config::new(2, Arch::X86_64).rules(Rules::DEFAULT - Rules::VCPU_DEFER).wait_limit(50), &host);
    two_cpus!(eng, space = 1, c0, c1);
    let stop = AtomicBool::new(false);
    let ev = Event::new(EventKind::Protect).va(0x1000).old_pte(RW).new_pte(Pte::PRESENT | Pte::USER);
    std::thread::scope(|s| {
        // CPU 1 takes its interrupts only once the watchdog has spoken.
        let t = s.spawn(|| {
            while host.stuck.lock().unwrap().is_empty() {
                std::thread::yield_now();
            }
            serve(&host.rec.pending[1], &stop, c1)
        });
        c0.submit(&space, &ev).unwrap();
        stop.store(true, SeqCst);
        t.join().unwrap();
    });
    let stuck = host.stuck.lock().unwrap().clone();
    let (cpu, waiting, turns) = stuck[0].clone();
    assert_eq!((cpu, waiting), (0, vec![1]));
    assert_eq!(turns % 50, 0);
    let st = eng.stats(Some(0)).unwrap();
    assert!(st.stuck_calls >= 1 && st.ipis_resent >= 1, "{:?}", *st);
}

/// A kernel's interrupt handler has no `&mut Cpu` (the code it interrupted
/// may hold it): `Engine::handle_ipi_on` serves the shootdown without it,
/// here on a thread that stands for CPU 1's interrupt, while CPU 1's token
/// stays with its owner.
#[test]
fn the_interrupt_handler_needs_no_token() {
    let host = Recorder::default();
    engine!(eng = &Config::new(2, Arch::X86_64), &host);
    two_cpus!(eng, space = 7, c0, c1);
    host.take();
    let stop = AtomicBool::new(false);
    let ev = Event::new(EventKind::Protect).va(0x40_0000).old_pte(RW).new_pte(Pte::PRESENT | Pte::USER);
    let d = std::thread::scope(|s| {
        let irq = s.spawn(|| {
            let mut served = 0;
            while !stop.load(SeqCst) {
                if host.pending[1].swap(false, SeqCst) {
                    // SAFETY: this thread is CPU 1's interrupt; no other
                    // thread makes calls for CPU 1 meanwhile.
                    served += unsafe { eng.handle_ipi_on(1) }.unwrap();
                }
                std::thread::yield_now();
            }
            served
        });
        let d = c0.submit(&space, &ev).unwrap();
        stop.store(true, SeqCst);
        assert_eq!(irq.join().unwrap(), 1);
        d
    });
    assert_eq!((d.action, d.deadline), (Action::Shootdown, Deadline::Now));
    let seen = host.take();
    assert!(seen.contains(&Seen::Flush { cpu: 1, tag: 7, kind: FlushKind::Pages, ranges: vec![(0x40_0000, 1)] }),
            "{:?}", seen);
    c1.switch(None).unwrap(); // the token is still CPU 1's, and usable
}

/// A host whose `relax` takes its CPU's interrupts, as a kernel waiting
/// with interrupts on does.
#[derive(Default)]
struct IrqsInRelax(Recorder);

impl Host for IrqsInRelax {
    recorded_by!(0);
    fn relax(&self, cpu: &Here<'_>) {
        if self.0.pending[cpu.cpu() as usize].swap(false, SeqCst) {
            cpu.handle_ipi().unwrap();
        }
        std::thread::yield_now();
    }
}

/// `Config::wait_irqs`: with the promise kept (`relax` takes the
/// interrupts), two CPUs that shoot each other down both finish, every
/// request served by an interrupt.
#[test]
fn wait_irqs_mutual_shootdowns_finish_when_relax_takes_interrupts() {
    let host = IrqsInRelax::default();
    engine!(eng = &Config::new(2, Arch::X86_64).rules(Rules::DEFAULT - Rules::POLLING_CPUS).wait_irqs(true), &host);
    two_cpus!(eng, space = 3, c0, c1);
    let done = std::sync::atomic::AtomicU32::new(0);
    let run = |cpu: &mut Cpu<'_>, n: u32| {
        for i in 0..200u64 {
            let va = (u64::from(n) << 20) + (i % 32) * 0x1000;
            let ev = Event::new(EventKind::Protect).va(va).old_pte(RW).new_pte(Pte::PRESENT | Pte::USER);
            cpu.submit(&space, &ev).unwrap();
        }
        done.fetch_add(1, SeqCst);
        // Interrupts still on: the other CPU may be waiting for this one.
        while done.load(SeqCst) < 2 {
            if host.0.pending[n as usize].swap(false, SeqCst) {
                cpu.handle_ipi().unwrap();
            }
            std::thread::yield_now();
        }
    };
    std::thread::scope(|s| {
        s.spawn(|| run(&mut c1, 1));
        run(&mut c0, 0);
    });
    let st = eng.stats(None).unwrap();
    assert_eq!(st.events, 400);
    assert_eq!(st.stuck_calls, 0);
}

/// A split-phase broadcast (INVLPGB and TLBSYNC), and, if `WALKERS`,
/// `walker_sync`; each call recorded with the thread it ran on.
#[derive(Default)]
struct SplitCaster<const WALKERS: bool> {
    rec: Recorder,
    calls: Mutex<Vec<(Seen, std::thread::ThreadId)>>,
}

impl<const WALKERS: bool> SplitCaster<WALKERS> {
    fn note(&self, s: Seen) {
        self.calls.lock().unwrap().push((s, std::thread::current().id()));
    }
    fn take(&self) -> Vec<(Seen, std::thread::ThreadId)> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }
}

impl<const WALKERS: bool> Host for SplitCaster<WALKERS> {
    recorded_by!(rec);
    const HAS_SPLIT_BROADCAST: bool = true;
    fn bcast_issue(&self, here: &Here<'_>, f: &Flush<'_>) {
        let ranges = f.ranges().iter().map(|r| (r.va(), r.nr_pages())).collect();
        self.note(Seen::Issue { cpu: here.cpu(), kind: f.kind(), ranges });
    }
    fn bcast_sync(&self, here: &Here<'_>) {
        self.note(Seen::Sync { cpu: here.cpu() });
    }
    const HAS_WALKER_SYNC: bool = WALKERS;
    fn walker_sync(&self, here: &Here<'_>, cpus: &CpuSet) {
        self.note(Seen::WalkerSync { cpu: here.cpu(), cpus: cpus.iter().collect() });
    }
}

/// An unmap of 2 pages on CPU 0 (its page tables freed if `tables`), and
/// the flush that shoots it down, with CPU 1 taking its interrupts on
/// another thread meanwhile.  Returns the thread of CPU 0's calls.
fn unmap_and_flush(
    host: &Recorder,
    space: &AddressSpace<'_>,
    c0: &mut Cpu<'_>,
    c1: Cpu<'_>,
    tables: bool,
) -> std::thread::ThreadId {
    let flags = if tables { EventFlags::TABLES_FREED } else { EventFlags::EMPTY };
    let ev = Event::new(EventKind::Unmap).va(0x10_0000).pages(2).old_pte(RW).flags(flags);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let t = s.spawn(|| serve(&host.pending[1], &stop, c1));
        let d = c0.submit(space, &ev).unwrap();
        assert_eq!(d.action, Action::Shootdown);
        assert_eq!(c0.flush(Deadline::Lazy), Ok(1));
        stop.store(true, SeqCst);
        t.join().unwrap();
    });
    std::thread::current().id()
}

/// Described as cheap (100 ns), the split broadcast serves the shootdown:
/// issued, then synced once, both on the initiating CPU and its thread,
/// inside its engine call, with no interrupt.
#[test]
fn split_broadcast_issues_and_syncs_on_the_initiating_cpu() {
    let host = SplitCaster::<false>::default();
    let bc = Backend::new(Mechanism::Broadcast).flags(BackendFlags::SPLIT).cost_ns(100);
    let list = [&bc];
    engine!(eng = &Config::new(2, Arch::X86_64).backends(&list), &host);
    assert!(eng.rules().contains(Rules::BROADCAST));
    two_cpus!(eng, space = 9, c0, c1);
    host.rec.take();
    let me = unmap_and_flush(&host.rec, &space, &mut c0, c1, false);
    let calls = host.take();
    let issue = Seen::Issue { cpu: 0, kind: FlushKind::Pages, ranges: vec![(0x10_0000, 2)] };
    assert_eq!(calls, vec![(issue, me), (Seen::Sync { cpu: 0 }, me)]);
    assert!(!host.rec.take().iter().any(|s| matches!(s, Seen::Ipi { .. })));
    let st = eng.stats(None).unwrap();
    assert_eq!((st.broadcasts, st.ipis_sent), (1, 0));
}

/// `Config::lockless_walkers`: freed page tables go by the broadcast and
/// then `walker_sync` on the initiator, naming the other CPU, where the
/// host has it; by interrupts where it has not.
#[test]
fn lockless_walkers_wait_for_walker_sync_or_take_interrupts() {
    let bc = Backend::new(Mechanism::Broadcast).flags(BackendFlags::SPLIT).cost_ns(100);
    let list = [&bc];
    let cfg = Config::new(2, Arch::X86_64).backends(&list).lockless_walkers(true);

    let host = SplitCaster::<true>::default();
    engine!(eng = &cfg, &host);
    two_cpus!(eng, space = 9, c0, c1);
    let me = unmap_and_flush(&host.rec, &space, &mut c0, c1, true);
    let (seen, threads): (Vec<Seen>, Vec<_>) = host.take().into_iter().unzip();
    assert_eq!(threads, vec![me; seen.len()], "all on the initiator's thread");
    assert_eq!(seen.len(), 3, "{:?}", seen);
    assert!(matches!(seen[0], Seen::Issue { cpu: 0, .. }), "{:?}", seen);
    assert_eq!(seen[1..], [Seen::Sync { cpu: 0 }, Seen::WalkerSync { cpu: 0, cpus: vec![1] }]);
    assert_eq!(eng.stats(None).unwrap().ipis_sent, 0);

    let host = SplitCaster::<false>::default();
    engine!(eng = &cfg, &host);
    two_cpus!(eng, space = 9, c0, c1);
    host.rec.take();
    unmap_and_flush(&host.rec, &space, &mut c0, c1, true);
    assert_eq!(host.take(), vec![], "a broadcast with nothing to sync the walkers");
    assert!(host.rec.take().contains(&Seen::Ipi { from: 0, targets: vec![1] }));
}

/// Dave Hansen's Haswell figures, in cycles (INVLPG 250, a CR3 write 2283,
/// 250 to refill an entry; an interrupt's round trip 2000).
fn haswell() -> Calibration {
    Calibration::new().ipi_round_trip(2000).inval_page(250).full_flush(2283).refill(250)
}

/// `Config::calibrate`: a flush ceiling of 36 pages (near Linux's 33), the
/// first target the round trip, each further one a tenth of it to send (no
/// `irq_entry_exit` given: the initiator's time only); the engine built
/// from the calibrated configuration flushes 36 pages one by one and 37
/// whole.
#[test]
fn calibrated_from_haswell_figures() {
    let mut cfg = Config::new(1, Arch::X86_64);
    let (ipi, bcast) = cfg.calibrate(&haswell()).unwrap();
    let raw = cfg.raw();
    assert_eq!((raw.flush_ceiling, raw.cost_ipi_ns, raw.cost_ipi_target_ns), (36, 2000, 200));
    assert_eq!(raw.cost_ipi_remote_ns, sys::TLBPOL_DEFAULT_COST_IPI_REMOTE_NS);
    assert_eq!(raw.cost_broadcast_ns, sys::TLBPOL_DEFAULT_COST_BROADCAST_NS, "no broadcast measured");
    let want = Backend::new(Mechanism::Ipi)
        .cost_ns(2000)
        .cost_target_ns(200)
        .cost_remote_ns(sys::TLBPOL_DEFAULT_COST_IPI_REMOTE_NS);
    assert_eq!((ipi, bcast), (want, None));

    let host = Recorder::default();
    let list = [&ipi];
    engine!(eng = &cfg.backends(&list), &host);
    one_cpu!(eng, space = 7, cpu = 0);
    host.take();
    for (pages, kind) in [(36, FlushKind::Pages), (37, FlushKind::As)] {
        let ev =
            Event::new(EventKind::Protect).va(0x40_0000).pages(pages).old_pte(RW).new_pte(Pte::PRESENT | Pte::USER);
        cpu.submit(&space, &ev).unwrap();
        let seen = host.take();
        assert!(matches!(&seen[..], [Seen::Flush { kind: k, .. }] if *k == kind), "{} pages: {:?}", pages, seen);
    }
}

/// With a broadcast measured (50 to issue an instruction of 8 pages, 1000
/// to sync), its descriptor too; made split, it is what the engine built
/// from both chooses over the interrupt's 2000.
#[test]
fn calibrated_broadcast_is_chosen_when_cheaper() {
    let m = haswell()
        .ipi_send(100)
        .irq_entry_exit(300)
        .refill_entries(8)
        .bcast_issue(50)
        .bcast_sync(1000)
        .bcast_max_pages(8);
    let mut cfg = Config::new(2, Arch::X86_64);
    let (ipi, bcast) = cfg.calibrate(&m).unwrap();
    let raw = cfg.raw();
    // (2283 + 8 x 250) / (250 + 250) pages.
    assert_eq!((raw.flush_ceiling, raw.cost_ipi_ns, raw.cost_ipi_target_ns), (8, 2000, 400));
    assert_eq!((raw.cost_broadcast_ns, raw.cost_broadcast_page_ns), (1050, 50));
    assert_eq!((ipi.raw().cost_ns, ipi.raw().cost_target_ns), (2000, 400));
    let want = Backend::new(Mechanism::Broadcast).max_pages(8).cost_ns(1050).cost_page_ns(50);
    assert_eq!(bcast, Some(want));

    let host = SplitCaster::<false>::default();
    let bc = bcast.unwrap().flags(BackendFlags::SPLIT);
    let list = [&ipi, &bc];
    engine!(eng = &cfg.backends(&list), &host);
    two_cpus!(eng, space = 9, c0, c1);
    host.rec.take();
    let me = unmap_and_flush(&host.rec, &space, &mut c0, c1, false);
    let issue = Seen::Issue { cpu: 0, kind: FlushKind::Pages, ranges: vec![(0x10_0000, 2)] };
    assert_eq!(host.take(), vec![(issue, me), (Seen::Sync { cpu: 0 }, me)]);
    let st = eng.stats(None).unwrap();
    assert_eq!((st.broadcasts, st.ipis_sent), (1, 0));
}

/// A remote action (Intel RAR, an SBI remote fence); each call recorded
/// with the thread it ran on.
#[derive(Default)]
struct RemoteActor {
    rec: Recorder,
    calls: Mutex<Vec<(Seen, std::thread::ThreadId)>>,
}

impl Host for RemoteActor {
    recorded_by!(rec);
    const HAS_REMOTE_ACTION: bool = true;
    fn remote_action(&self, from: &Here<'_>, targets: &CpuSet, f: &Flush<'_>) {
        let ranges = f.ranges().iter().map(|r| (r.va(), r.nr_pages())).collect();
        let seen = Seen::Remote { from: from.cpu(), targets: targets.iter().collect(), kind: f.kind(), ranges };
        self.calls.lock().unwrap().push((seen, std::thread::current().id()));
    }
}

/// An unmap of 2 pages on CPU 0 of 4, all running address space 9, and the
/// flush that shoots it down, CPUs 1 to 3 taking their interrupts (if they
/// get any) on threads of their own meanwhile.  Returns the thread of CPU
/// 0's calls and the engine's statistics.
fn shoot_on_four(host: &RemoteActor, cfg: &Config<'_>) -> (std::thread::ThreadId, Stats) {
    engine!(eng = cfg, host);
    assert!(eng.rules().contains(Rules::BROADCAST), "the remote action is under the broadcast rule");
    let space = eng.open_as(9).unwrap();
    let mut cpus: Vec<Cpu<'_>> = eng.take_cpus().unwrap().collect();
    for cpu in &mut cpus {
        cpu.switch(Some(&space)).unwrap();
    }
    host.rec.take();
    let mut c0 = cpus.remove(0);
    let ev = Event::new(EventKind::Unmap).va(0x10_0000).pages(2).old_pte(RW);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let (pending, stop) = (&host.rec.pending, &stop);
        let others: Vec<_> =
            cpus.into_iter().zip(1..).map(|(cpu, n)| s.spawn(move || serve(&pending[n], stop, cpu))).collect();
        let d = c0.submit(&space, &ev).unwrap();
        assert_eq!(d.action, Action::Shootdown);
        assert_eq!(c0.flush(Deadline::Lazy), Ok(1));
        stop.store(true, SeqCst);
        for t in others {
            t.join().unwrap();
        }
    });
    (std::thread::current().id(), eng.stats(None).unwrap())
}

/// `Host::remote_action`: with no descriptor (a remote action then costs
/// what interrupts do, and wins the tie) or a cheap one, the shootdown of
/// 4 CPUs running one address space is one remote action from CPU 0, on
/// its thread, naming the other three, which take no interrupt and run
/// no flush of their own; CPU 0 flushes itself.  Described dearer than
/// interrupts, it is not used.
#[test]
fn remote_action_flushes_the_other_cpus_with_no_interrupt() {
    let cheap = Backend::new(Mechanism::Remote).cost_ns(100).cost_target_ns(10);
    let list = [&cheap];
    let flush = |cpu| Seen::Flush { cpu, tag: 9, kind: FlushKind::Pages, ranges: vec![(0x10_0000, 2)] };
    for cfg in [Config::new(4, Arch::X86_64), Config::new(4, Arch::X86_64).backends(&list)] {
        let host = RemoteActor::default();
        let (me, st) = shoot_on_four(&host, &cfg);
        let remote = Seen::Remote { from: 0, targets: vec![1, 2, 3], kind: FlushKind::Pages, ranges: vec![(0x10_0000, 2)] };
        assert_eq!(std::mem::take(&mut *host.calls.lock().unwrap()), vec![(remote, me)], "{:?}", cfg);
        assert_eq!(host.rec.take(), vec![flush(0)], "{:?}: no interrupt, no flush of the targets' own", cfg);
        assert_eq!((st.ipis_sent, st.broadcasts), (0, 0));
    }

    let dear = Backend::new(Mechanism::Remote).cost_ns(1 << 30);
    let list = [&dear];
    let host = RemoteActor::default();
    let (_, st) = shoot_on_four(&host, &Config::new(4, Arch::X86_64).backends(&list));
    assert!(host.calls.lock().unwrap().is_empty());
    let seen = host.rec.take();
    assert!(seen.contains(&Seen::Ipi { from: 0, targets: vec![1, 2, 3] }), "{:?}", seen);
    assert!((1..4).all(|cpu| seen.contains(&flush(cpu))), "{:?}", seen);
    assert!(st.ipis_sent > 0);
}
