//! Bad input gives the error variant the header documents for it, and
//! changes nothing.

use tlbpol::*;

#[macro_use]
mod common;

struct Quiet;
impl Host for Quiet {
    fn flush_local(&self, _: &Here<'_>, _: &Flush<'_>) {}
    fn send_ipi(&self, _: &Here<'_>, _: &CpuSet) {}
}

const RW: Pte = Pte(Pte::PRESENT.0 | Pte::WRITE.0 | Pte::USER.0 | Pte::ACCESSED.0);

fn init_err(cfg: &Config<'_>) -> Error {
    // Plenty of memory, so that the configuration is what fails.
    let mut mem = vec![0u8; 4 << 20];
    Engine::init(cfg, &Quiet, &mut mem).map(drop).unwrap_err()
}

#[test]
fn bad_configurations() {
    let x86 = || Config::new(4, Arch::X86_64);
    assert_eq!(init_err(&Config::new(0, Arch::X86_64)), Error::Range);
    assert_eq!(init_err(&Config::new(sys::TLBPOL_MAX_CPUS + 1, Arch::X86_64)), Error::Range);
    assert_eq!(init_err(&x86().max_as(0)), Error::Range);
    assert_eq!(init_err(&x86().max_as(sys::TLBPOL_MAX_AS + 1)), Error::Range);
    assert_eq!(init_err(&x86().batch_pages(0)), Error::Range);
    assert_eq!(init_err(&x86().batch_pages(sys::TLBPOL_MAX_BATCH_PAGES + 1)), Error::Range);
    assert_eq!(init_err(&x86().flush_ceiling(0)), Error::Invalid);
    assert_eq!(init_err(&x86().rules(Rules(1 << 40))), Error::Invalid);
    // A node table shorter than nr_cpus: refused before the engine reads past it.
    assert_eq!(init_err(&x86().cpu_node(&[0, 0, 1])), Error::Invalid);
    assert_eq!(Config::new(0, Arch::X86_64).engine_size(), 0);
    assert_eq!(Engine::<Quiet>::mem_size(&Config::new(0, Arch::X86_64)), 0);
}

/// A host with a split-phase broadcast, so that a descriptor is refused
/// for what it says, not for a hook the host lacks.
struct Split;
impl Host for Split {
    fn flush_local(&self, _: &Here<'_>, _: &Flush<'_>) {}
    fn send_ipi(&self, _: &Here<'_>, _: &CpuSet) {}
    const HAS_SPLIT_BROADCAST: bool = true;
}

/// A host with a remote action (RAR, an SBI remote fence).
struct Remote;
impl Host for Remote {
    fn flush_local(&self, _: &Here<'_>, _: &Flush<'_>) {}
    fn send_ipi(&self, _: &Here<'_>, _: &CpuSet) {}
    const HAS_REMOTE_ACTION: bool = true;
    fn remote_action(&self, _: &Here<'_>, _: &CpuSet, _: &Flush<'_>) {}
}

fn init_err_with<H: Host>(cfg: &Config<'_>, host: &H) -> Option<Error> {
    let mut mem = vec![0u8; 4 << 20];
    Engine::init(cfg, host, &mut mem).err()
}

#[test]
fn bad_backend_descriptors() {
    let x86 = || Config::new(4, Arch::X86_64);
    let split = Backend::new(Mechanism::Broadcast).flags(BackendFlags::SPLIT);
    let ipi = Backend::new(Mechanism::Ipi);
    assert_eq!(init_err_with(&x86().backends(&[&split, &ipi]), &Split), None);
    // Interrupts are never split nor switched off.
    let ipi_split = Backend::new(Mechanism::Ipi).flags(BackendFlags::SPLIT);
    assert_eq!(init_err_with(&x86().backends(&[&ipi_split]), &Split), Some(Error::Invalid));
    let ipi_off = Backend::new(Mechanism::Ipi).flags(BackendFlags::DISABLED);
    assert_eq!(init_err_with(&x86().backends(&[&ipi_off]), &Split), Some(Error::Invalid));
    let ipi_irq = Backend::new(Mechanism::Ipi).flags(BackendFlags::IMPLIES_IRQ);
    assert_eq!(init_err_with(&x86().backends(&[&ipi_irq]), &Split), None);
    // A flag this version does not know: passed as given, refused by C.
    let unknown = Backend::new(Mechanism::Broadcast).flags(BackendFlags::SPLIT | BackendFlags(1 << 3));
    assert_eq!(init_err_with(&x86().backends(&[&unknown]), &Split), Some(Error::Invalid));
    // A broadcast the host's hooks cannot carry out, unless it is off.
    assert_eq!(init_err(&x86().backends(&[&split])), Error::Invalid);
    let sync = Backend::new(Mechanism::Broadcast);
    assert_eq!(init_err_with(&x86().backends(&[&sync]), &Split), Some(Error::Invalid));
    let off = Backend::new(Mechanism::Broadcast).flags(BackendFlags::SPLIT | BackendFlags::DISABLED);
    assert_eq!(init_err_with(&x86().backends(&[&off]), &Quiet), None);
    // A remote action the host cannot carry out, unless it is off; never split.
    let remote = Backend::new(Mechanism::Remote);
    assert_eq!(init_err_with(&x86().backends(&[&remote]), &Remote), None);
    assert_eq!(init_err_with(&x86().backends(&[&remote]), &Split), Some(Error::Invalid));
    let remote_off = Backend::new(Mechanism::Remote).flags(BackendFlags::DISABLED);
    assert_eq!(init_err_with(&x86().backends(&[&remote_off]), &Quiet), None);
    let remote_split = Backend::new(Mechanism::Remote).flags(BackendFlags::SPLIT);
    assert_eq!(init_err_with(&x86().backends(&[&remote_split]), &Remote), Some(Error::Invalid));
    // Two of one mechanism; more than TLBPOL_MECH_MAX.
    assert_eq!(init_err_with(&x86().backends(&[&split, &split]), &Split), Some(Error::Exists));
    assert_eq!(init_err_with(&x86().backends(&[&split, &ipi, &ipi]), &Split), Some(Error::Exists));
    assert_eq!(init_err_with(&x86().backends(&[&split, &ipi, &remote, &ipi]), &Split), Some(Error::Range));
    assert_eq!(init_err_with(&x86().backends(&[]), &Split), None);
    // Sizing does not hold the descriptors against a host: init does.
    let list = [&split];
    let cfg = x86().backends(&list);
    assert!(Engine::<Quiet>::mem_size(&cfg) > 0);
    assert_eq!(Engine::<Quiet>::mem_size(&cfg), Engine::<Quiet>::mem_size(&x86()));
}

/// The cost fields and the flush ceiling, which `Config::calibrate` writes.
fn costs(c: &Config<'_>) -> [u32; 6] {
    let r = c.raw();
    [
        r.flush_ceiling,
        r.cost_ipi_ns,
        r.cost_ipi_target_ns,
        r.cost_ipi_remote_ns,
        r.cost_broadcast_ns,
        r.cost_broadcast_page_ns,
    ]
}

/// A required measurement 0 is `Error::Invalid`, and the configuration is
/// left as it was.
#[test]
fn bad_calibrations() {
    let good = Calibration::new().ipi_round_trip(2000).inval_page(250).full_flush(2283).refill(250);
    let fresh = Config::new(4, Arch::X86_64);
    let bad = [good.inval_page(0), good.ipi_round_trip(0), good.full_flush(0), good.refill(0), Calibration::new()];
    for m in bad {
        let mut cfg = fresh;
        assert_eq!(cfg.calibrate(&m), Err(Error::Invalid), "{:?}", m);
        assert_eq!(costs(&cfg), costs(&fresh), "{:?}", m);
    }
    // The optional ones may be 0, and are not checked against the others.
    let mut cfg = fresh;
    assert!(cfg.calibrate(&good.ipi_send(0).irq_entry_exit(0).refill_entries(0).bcast_issue(9)).is_ok());
    assert_eq!(cfg.raw().flush_ceiling, 36);
}

#[test]
fn too_little_memory() {
    let cfg = Config::new(4, Arch::Arm64);
    let need = Engine::<Quiet>::mem_size(&cfg);
    assert!(need > cfg.engine_size());
    let mut mem = vec![0u8; cfg.engine_size() - 1];
    assert_eq!(Engine::init(&cfg, &Quiet, &mut mem).map(drop).unwrap_err(), Error::NoMemory);
    let mut tiny = [0u8; 16];
    assert_eq!(Engine::init(&cfg, &Quiet, &mut tiny).map(drop).unwrap_err(), Error::NoMemory);
    // The exact size works whatever the buffer's alignment.
    let mut mem = vec![0u8; need + 1];
    assert!(Engine::init(&cfg, &Quiet, &mut mem[1..]).is_ok());
}

#[test]
fn const_size_matches_the_library() {
    let cfg = Config::new(4, Arch::X86_64);
    assert_eq!(
        mem_size_for(4, sys::TLBPOL_DEFAULT_MAX_AS, sys::TLBPOL_DEFAULT_BATCH_PAGES, sys::TLBPOL_DEFAULT_FLUSH_CEILING, 0),
        Engine::<Quiet>::mem_size(&cfg),
        "the header's TLBPOL_ENGINE_SIZE() and the linked library's tlbpol_engine_size() disagree: \
         is the library built from this header?"
    );
    // A static-style buffer of that size takes the engine.
    const N: usize = mem_size_for(2, 4, 64, 8, 0);
    let mut mem: Box<EngineMem<N>> = Box::new(EngineMem::new());
    let cfg = Config::new(2, Arch::Generic).max_as(4).batch_pages(64).flush_ceiling(8);
    assert!(Engine::init(&cfg, &Quiet, mem.bytes()).is_ok());
}

#[test]
fn bad_events() {
    engine!(eng = &Config::new(4, Arch::X86_64), &Quiet);
    let space = eng.open_as(1).unwrap();
    let good = Event::new(EventKind::Unmap).va(0x40_0000).old_pte(RW);
    assert!(eng.decide(&space, 0, &good).is_ok());

    let mut raw = *good.raw();
    raw.kind = sys::TLBPOL_EV_MAX;
    assert_eq!(eng.decide(&space, 0, &Event::from_raw(raw)), Err(Error::Invalid), "unknown kind");
    let mut raw = *good.raw();
    raw.size = 8;
    assert_eq!(eng.decide(&space, 0, &Event::from_raw(raw)), Err(Error::Invalid), "size too small");
    let cases: &[(&str, Event, Error)] = &[
        ("nr_pages 0", good.pages(0), Error::Invalid),
        ("page shift x86 has not", good.page_shift(13), Error::Invalid),
        ("va not aligned", good.va(0x40_0800), Error::Invalid),
        ("va not aligned to 2 MiB", good.page_shift(21).va(0x40_1000), Error::Invalid),
        ("unknown PTE bit", good.old_pte(RW | Pte(1 << 7)), Error::Invalid),
        ("unknown flag", good.flags(EventFlags(1 << 12)), Error::Invalid),
        ("stamp on a migration", Event::new(EventKind::Migrate).va(0x1000).old_pte(RW).flags(EventFlags::STAMP), Error::Invalid),
        ("range past 2^64", good.va(0xffff_ffff_ffff_f000).pages(2), Error::Range),
    ];
    for (what, ev, err) in cases {
        assert_eq!(eng.decide(&space, 0, ev), Err(*err), "{}", what);
    }
    assert_eq!(eng.decide(&space, 4, &good), Err(Error::Range), "CPU out of range");

    // submit refuses the same and counts nothing.
    let mut c0 = eng.take_cpus().unwrap().next().unwrap();
    for (what, ev, err) in cases {
        assert_eq!(c0.submit(&space, ev), Err(*err), "{}", what);
    }
    assert_eq!(eng.stats(None).unwrap().events, 0);
}

#[test]
fn address_spaces() {
    let cfg = Config::new(2, Arch::X86_64).max_as(2);
    engine!(eng = &cfg, &Quiet);
    let a = eng.open_as(10).unwrap();
    assert_eq!(a.tag(), 10);
    assert_eq!(eng.open_as(10).map(drop), Err(Error::Exists));
    let b = eng.open_as(11).unwrap();
    assert_eq!(eng.open_as(12).map(drop), Err(Error::NoMemory), "max_as open");

    let mut cpus = eng.take_cpus().unwrap();
    let mut c0 = cpus.next().unwrap();
    c0.switch(Some(&a)).unwrap();
    // Running: the close fails and hands the address space back.
    let (err, a) = a.close().unwrap_err();
    assert_eq!(err, Error::Busy);
    // Lazy still counts; unloaded does not.
    c0.switch(None).unwrap();
    let (err, a) = a.close().unwrap_err();
    assert_eq!(err, Error::Busy);
    c0.unload().unwrap();
    a.close().unwrap();
    b.close().unwrap();
    let c = eng.open_as(12).unwrap();

    // An address space of another engine is refused, not used.
    engine!(other = &cfg, &Quiet);
    let foreign = other.open_as(12).unwrap();
    let ev = Event::new(EventKind::Unmap).va(0x1000).old_pte(RW);
    assert_eq!(eng.decide(&foreign, 0, &ev), Err(Error::Invalid));
    assert_eq!(c0.submit(&foreign, &ev), Err(Error::Invalid));
    assert_eq!(c0.switch(Some(&foreign)), Err(Error::Invalid));
    assert!(eng.decide(&c, 0, &ev).is_ok());
}

#[test]
fn cpu_tokens_and_states() {
    engine!(eng = &Config::new(2, Arch::X86_64), &Quiet);
    let space = eng.open_as(1).unwrap();
    let mut cpus = eng.take_cpus().unwrap();
    assert_eq!(eng.take_cpus().map(drop).unwrap_err(), Error::Busy, "tokens are handed out once");
    let mut c0 = cpus.next().unwrap();
    let _c1 = cpus.next().unwrap();
    assert!(cpus.next().is_none());
    assert_eq!((c0.id(), _c1.id()), (0, 1));

    // unload needs a lazy CPU; switching in needs a running one.
    c0.switch(Some(&space)).unwrap();
    assert_eq!(c0.unload(), Err(Error::Busy));
    c0.switch(None).unwrap();
    c0.set_state(CpuState::Idle).unwrap();
    assert_eq!(c0.switch(Some(&space)), Err(Error::Busy));
    c0.set_state(CpuState::Running).unwrap();
    c0.switch(Some(&space)).unwrap();

    // Offline with deferred work pending is refused; after a flush it is not.
    let ev = Event::new(EventKind::Unmap).va(0x1000).old_pte(RW);
    let d = c0.submit(&space, &ev).unwrap();
    assert_eq!(d.deadline, Deadline::Free);
    assert_eq!(c0.set_state(CpuState::Offline), Err(Error::Busy));
    assert_eq!(c0.flush(Deadline::Lazy), Ok(1));
    c0.switch(None).unwrap();
    c0.unload().unwrap();
    assert_eq!(c0.set_state(CpuState::Offline), Ok(false));
    assert_eq!(c0.set_state(CpuState::Running), Ok(false));

    assert_eq!(eng.stats(Some(2)).map(drop), Err(Error::Range));
    assert_eq!(eng.frees_pending(2), Err(Error::Range));
    assert_eq!(eng.stamp_pending(Stamp(u64::MAX)), Err(Error::Invalid), "a stamp naming no CPU");
    assert_eq!(c0.stamp_settle(Stamp(u64::MAX)), Err(Error::Invalid));
    assert_eq!(eng.stamp_pending(Stamp::NONE), Ok(false));
    let mut nodes = [9u16; 4];
    assert_eq!(eng.topology(&mut nodes), Ok(1));
    assert_eq!(nodes, [0, 0, 9, 9], "min(n, nr_cpus) entries written");
}

#[test]
fn rule_names() {
    assert_eq!(Rules::parse("default,-lazy-unmap"), Ok(Rules::DEFAULT - Rules::LAZY_UNMAP));
    assert_eq!(Rules::parse("linux+receiver-merge"), Ok(Rules::LINUX | Rules::RECEIVER_MERGE));
    assert_eq!(Rules::parse("none,batch,range_flush"), Ok(Rules::BATCH | Rules::RANGE_FLUSH));
    assert_eq!(Rules::parse("0x8"), Ok(Rules::BATCH));
    for bad in ["", "default-batch", "a,,b", "0x10000000000", "nonsense", "batch\0", &"batch,".repeat(60)] {
        assert_eq!(Rules::parse(bad), Err(Error::Invalid), "{:?}", bad);
    }
    // Display writes names that parse back.
    for r in [Rules::DEFAULT, Rules::LINUX, Rules::BATCH | Rules::FLUSH_STAMP, Rules::NONE] {
        assert_eq!(Rules::parse(&r.to_string()), Ok(r), "{}", r);
    }
    assert_eq!(Rules::LAZY_UNMAP.name(), "lazy-unmap");
    assert_eq!((Rules::BATCH | Rules::FOOTPRINT).name(), "unknown");
    assert_eq!(Rules::ALL.iter().count(), 17);
}

#[test]
fn errno_mapping() {
    for e in [Error::Invalid, Error::Range, Error::NoMemory, Error::Busy, Error::Exists, Error::Other(5)] {
        assert_eq!(Error::from_errno(-e.errno()), e);
    }
    assert_eq!(Error::Invalid.errno(), 22);
    assert_eq!(Error::Range.errno(), 34);
}
