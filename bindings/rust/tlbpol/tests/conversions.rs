//! C is never passed a value other than the caller's: a value the C type
//! cannot hold is refused here (`Error::Range`) and changes nothing, the
//! largest one it can hold reaches C as is, and a structure's `size` never
//! claims bytes the structure does not have (`Error::Invalid`).
//!
//! (The conversions no public call can reach on this target -- a buffer of
//! 2^32 entries, an engine size past `usize` -- are tested in the crate's
//! unit tests, `src/engine.rs`, `src/mem.rs` and `src/types.rs`.)

use std::sync::atomic::{AtomicU32, Ordering::SeqCst};

use tlbpol::*;

#[macro_use]
mod common;

const RW: Pte = Pte(Pte::PRESENT.0 | Pte::WRITE.0 | Pte::USER.0 | Pte::ACCESSED.0);

#[derive(Default)]
struct Counting {
    calls: AtomicU32,
}
impl Host for Counting {
    fn flush_local(&self, _: &Here<'_>, _: &Flush<'_>) {
        self.calls.fetch_add(1, SeqCst);
    }
    fn send_ipi(&self, _: &Here<'_>, _: &CpuSet) {
        self.calls.fetch_add(1, SeqCst);
    }
}

/// The counters of every CPU and of each one: what must not move.
fn all_stats<H: Host>(eng: &Engine<'_, H>) -> Vec<Stats> {
    let mut v = vec![eng.stats(None).unwrap()];
    for c in 0..eng.nr_cpus() {
        v.push(eng.stats(Some(c)).unwrap());
    }
    v
}

#[test]
fn a_cpu_past_int_is_refused_not_wrapped_to_every_cpu() {
    let host = Counting::default();
    engine!(eng = &Config::new(2, Arch::X86_64), &host);
    one_cpu!(eng, space = 1, c1 = 1);
    c1.submit(&space, &Event::new(EventKind::Protect).va(0x1000).old_pte(RW).new_pte(Pte::PRESENT)).unwrap();
    let before = all_stats(&eng);
    assert_eq!(before[0].events, 1, "every CPU");
    assert_eq!(eng.stats(Some(0)).unwrap().events, 0, "CPU 0 made none");

    // tlbpol_stats_read() takes an int, where -1 is "every CPU".  u32::MAX
    // wrapped to int is -1: it must not read as the sum (events 1), nor
    // i32::MAX + 1 as i32::MIN.  Refused before C, with nothing changed.
    let one_past = u32::try_from(i32::MAX).unwrap() + 1;
    for cpu in [u32::MAX, one_past, u32::MAX - 1] {
        assert_eq!(eng.stats(Some(cpu)).map(|s| s.events), Err(Error::Range), "cpu {:#x}", cpu);
    }
    // The largest int reaches C, which has no such CPU either: its own
    // -ERANGE.  The largest CPU the engine has is read.
    assert_eq!(eng.stats(Some(u32::try_from(i32::MAX).unwrap())).map(drop), Err(Error::Range));
    assert_eq!(eng.stats(Some(1)).unwrap().events, 1);
    assert_eq!(all_stats(&eng), before, "nothing moved");
}

#[test]
fn an_event_whose_size_claims_more_than_it_has_is_refused() {
    let host = Counting::default();
    engine!(eng = &Config::new(2, Arch::X86_64), &host);
    one_cpu!(eng, space = 1, c0 = 0);
    let good = Event::new(EventKind::Unmap).va(0x4000).old_pte(RW);
    let exact = good.raw().size;
    assert_eq!(usize::try_from(exact).unwrap(), std::mem::size_of::<sys::tlbpol_event>());

    // One byte past the structure (and the largest u32): C would read
    // bytes that are not the event's (the library checks that bytes past
    // what it knows are zero).  Refused here; nothing counted, nothing
    // flushed, nothing pending.
    let before = all_stats(&eng);
    for size in [exact + 1, exact + 8, 4096, u32::MAX] {
        let mut raw = *good.raw();
        raw.size = size;
        let ev = Event::from_raw(raw);
        assert_eq!(eng.decide(&space, 0, &ev), Err(Error::Invalid), "decide, size {}", size);
        assert_eq!(c0.submit(&space, &ev), Err(Error::Invalid), "submit, size {}", size);
    }
    assert_eq!(all_stats(&eng), before, "nothing counted");
    assert_eq!(host.calls.load(SeqCst), 0, "no callback");
    assert_eq!(c0.flush(Deadline::Lazy), Ok(0), "nothing pending");

    // The structure's own size reaches C and is decided; a smaller one is
    // passed on, for C to refuse.
    let d = eng.decide(&space, 0, &good).unwrap();
    assert_eq!(c0.submit(&space, &good), Ok(d));
    assert_eq!(eng.stats(None).unwrap().events, 1);
    let mut raw = *good.raw();
    raw.size = exact - 1;
    assert_eq!(eng.decide(&space, 0, &Event::from_raw(raw)), Err(Error::Invalid), "C's own -EINVAL");
}

#[test]
fn a_node_table_of_exactly_nr_cpus_entries_is_enough() {
    let host = Counting::default();
    let nodes = [0u16, 1, 1];
    for (n, ok) in [(3, true), (4, false)] {
        let cfg = Config::new(n, Arch::X86_64).cpu_node(&nodes);
        let mut mem = vec![0u8; 4 << 20];
        let made = Engine::init(&cfg, &host, &mut mem);
        match made {
            Ok(eng) => {
                assert!(ok, "{} CPUs, 3 nodes accepted", n);
                let mut out = [9u16; 5];
                // A buffer longer than nr_cpus: C is told its length and
                // fills nr_cpus entries, the rest stays.
                assert_eq!(eng.topology(&mut out), Ok(2));
                assert_eq!(out, [0, 1, 1, 9, 9]);
                let mut short = [9u16; 2];
                assert_eq!(eng.topology(&mut short), Ok(2));
                assert_eq!(short, [0, 1]);
                assert_eq!(eng.topology(&mut []), Ok(2), "an empty buffer: nothing written");
            }
            Err(e) => {
                assert!(!ok, "{} CPUs: {:?}", n, e);
                assert_eq!(e, Error::Invalid, "shorter than nr_cpus");
            }
        }
    }
}

/// tlbpol_tags_stats_read() takes an int, where -1 is "every CPU": a CPU
/// past i32::MAX is refused before C, never wrapped to -1 or negative.
#[test]
fn tags_stats_cpu_past_int_is_refused_not_wrapped_to_every_cpu() {
    let cfg = TagsConfig::per_cpu(2, 12, 1, 6);
    let mut mem = vec![0u8; Tags::mem_size(&cfg)];
    let mut t = Tags::init(&cfg, &mut mem).unwrap();
    let id = t.new_id().unwrap();
    t.load(1, &id).unwrap();
    assert_eq!(t.stats(None).unwrap().loads, 1);
    let one_past = u32::try_from(i32::MAX).unwrap() + 1;
    for cpu in [u32::MAX, one_past, u32::MAX - 1] {
        assert_eq!(t.stats(Some(cpu)).map(drop), Err(Error::Range), "cpu {:#x}", cpu);
    }
    // The largest int reaches C, which has no such CPU: its own -ERANGE.
    assert_eq!(t.stats(Some(u32::try_from(i32::MAX).unwrap())).map(drop), Err(Error::Range));
    assert_eq!(t.stats(Some(1)).unwrap().loads, 1);
}

/// Every value of the configuration reaches C as given (u32 fields: no
/// conversion), the largest u32 too; a size past the structure does not.
#[test]
fn tags_configuration_values_reach_c_as_given() {
    let c = TagsConfig::per_cpu(u32::MAX, u32::MAX, u32::MAX, u32::MAX).global_tags(u32::MAX).global_min_cpus(u32::MAX);
    let r = *c.raw();
    assert_eq!((r.nr_cpus, r.tag_bits, r.first_tag, r.nr_slots), (u32::MAX, u32::MAX, u32::MAX, u32::MAX));
    assert_eq!((r.nr_global, r.global_min_cpus), (u32::MAX, u32::MAX));
    let mut mem = vec![0u8; 4096];
    assert_eq!(Tags::init(&c, &mut mem).map(drop), Err(Error::Range), "the library's answer");
    for size in [r.size + 1, r.size + 4, u32::MAX] {
        let mut raw = *TagsConfig::global(4, 3, 3).raw();
        raw.size = size;
        let cfg = TagsConfig::from_raw(raw);
        #[cfg(feature = "std")]
        assert_eq!(Tags::new(&cfg).map(drop), Err(Error::Invalid), "size {}", size);
        assert_eq!(Tags::init(&cfg, &mut mem).map(drop), Err(Error::Invalid), "size {}", size);
    }
}
